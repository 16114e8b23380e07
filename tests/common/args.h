/* The benchmarks' options: `--name value` pairs anywhere on the command line. */
#ifndef TTP_TESTS_ARGS_H
#define TTP_TESTS_ARGS_H

#include <string.h>

/* The argument after the first one equal to name, else fallback. */
static inline const char* bench_arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

#endif
