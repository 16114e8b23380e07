/* Helpers the subcommands share: opening the pipeline from options, errors, time, CSV. */
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "cli.h"

int cli_fail(const char* fmt, ...) {
  fprintf(stderr, "ttapipe: ");
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_EXIT_FATAL;
}

int cli_open_pipeline(const cli_args* a, ttp_pipeline** p) {
  ttp_options o;
  ttp_options_init(&o);
  static const char* const engines[] = {"auto", "cpu", NULL};
  int engine = 0;
  long threads = 0;
  int rc;
  if ((rc = cli_require(a, "model", &o.model_dir)) || (rc = cli_get_choice(a, "engine", engines, &engine)) ||
      (rc = cli_get_long(a, "threads", 1, 256, &threads)))
    return rc;
  o.engine = engine == 1 ? TTP_ENGINE_CPU : TTP_ENGINE_AUTO;
  o.threads = (int)threads;
  if (ttp_open(&o, p) != TTP_OK) {
    rc = cli_fail("%s", ttp_last_error(*p));
    ttp_close(*p);
    *p = NULL;
    return rc;
  }
  return CLI_EXIT_OK;
}

double cli_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void cli_csv_field(FILE* f, const char* s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}
