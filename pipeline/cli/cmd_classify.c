/* ttapipe classify: one CSV row per image file, in the order given; a file that cannot be read
   is an error row and the others go on. */
#include <stdlib.h>

#include "cli.h"

static const cli_option classify_options[] = {
    CLI_PIPELINE_OPTIONS,
    {NULL, NULL, NULL},
};

static int run_classify(const cli_args* a) {
  if (a->positional_count == 0) return cli_usage_error(a->command, "no image files given");
  ttp_pipeline* p = NULL;
  ttp_tta tta;
  int rc = cli_open_pipeline(a, &p, &tta);
  if (rc != CLI_EXIT_OK) return rc;
  const ttp_model_info* m = ttp_model(p);
  uint8_t* pixels = malloc((size_t)m->input_rows * m->input_cols);
  if (!pixels) {
    ttp_close(p);
    return cli_fail("out of memory");
  }
  size_t failed = 0;
  printf("path,status,class,label,probability\n");
  for (int i = 0; i < a->positional_count; i++) {
    const char* path = a->positional[i];
    char error[TTP_ERROR_SIZE] = "";
    ttp_result r;
    cli_csv_field(stdout, path);
    if (ttp_read_image(path, m->input_rows, m->input_cols, pixels, error, sizeof error) != TTP_OK ||
        ttp_classify(p, pixels, 1, &r, NULL) != TTP_OK) {
      if (!error[0]) snprintf(error, sizeof error, "%s", ttp_last_error(p));
      fputc(',', stdout);
      cli_csv_field(stdout, error);
      printf(",,,\n");
      failed++;
      continue;
    }
    printf(",ok,%d,", r.class_index);
    cli_csv_field(stdout, ttp_class_label(p, r.class_index));
    printf(",%.7f\n", r.probability);
  }
  free(pixels);
  ttp_close(p);
  if (failed) fprintf(stderr, "ttapipe: %zu of %d files failed\n", failed, a->positional_count);
  return failed ? CLI_EXIT_SOME_FAILED : CLI_EXIT_OK;
}

const cli_command cli_classify = {
    .name = "classify",
    .usage = "--model DIR [options] FILE...",
    .summary = "Classify image files (today: 8-bit binary PGM of the model's size, 28x28).",
    .details = "Writes CSV to stdout: path,status,class,label,probability. status is 'ok' or the\n"
               "error that file met; the other files go on. Exit status: 0 all classified,\n"
               "1 fatal error, 2 usage error, 3 some files failed.",
    .options = classify_options,
    .max_positional = -1,
    .run = run_classify,
};
