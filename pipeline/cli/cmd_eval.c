/* ttapipe eval: accuracy of a model on an IDX test set, per class, and the confusion matrix. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_option eval_options[] = {
    CLI_PIPELINE_OPTIONS,
    {"images", "FILE", "IDX image file, plain or .gz (required)"},
    {"labels", "FILE", "IDX label file, plain or .gz (required)"},
    {"offset", "N", "skip the first N images (default 0)"},
    {"limit", "N", "evaluate at most N images (default: all)"},
    {NULL, NULL, NULL},
};

typedef struct eval_data {
  ttp_images images;
  uint8_t* labels;
  size_t first, count; /* the slice evaluated */
} eval_data;

/* Reads both files and checks them against each other and the model. */
static int load(const cli_args* a, const ttp_model_info* m, eval_data* d) {
  const char *images, *labels;
  long offset = 0, limit = -1;
  int rc;
  if ((rc = cli_require(a, "images", &images)) || (rc = cli_require(a, "labels", &labels)) ||
      (rc = cli_get_long(a, "offset", 0, 2147483647L, &offset)) ||
      (rc = cli_get_long(a, "limit", 1, 2147483647L, &limit)))
    return rc;
  char error[TTP_ERROR_SIZE];
  size_t label_count;
  if (ttp_read_idx_images(images, &d->images, error, sizeof error) != TTP_OK ||
      ttp_read_idx_labels(labels, &d->labels, &label_count, error, sizeof error) != TTP_OK)
    return cli_fail("%s", error);
  if (d->images.channels != m->input_channels || d->images.rows != m->input_rows ||
      d->images.cols != m->input_cols)
    return cli_fail("%s: images are %dx%dx%d, the model needs %dx%dx%d (channels x rows x "
                    "columns; IDX with 4 dimensions for 3 channels)", images, d->images.channels,
                    d->images.rows, d->images.cols, m->input_channels, m->input_rows,
                    m->input_cols);
  if (label_count != d->images.count)
    return cli_fail("%s has %zu labels for the %zu images of %s", labels, label_count,
                    d->images.count, images);
  for (size_t i = 0; i < label_count; i++)
    if (d->labels[i] >= m->classes)
      return cli_fail("%s: label %zu is %d, but the model has %d classes", labels, i,
                      d->labels[i], m->classes);
  if ((size_t)offset >= d->images.count)
    return cli_fail("--offset %ld is past the %zu images of %s", offset, d->images.count, images);
  d->first = (size_t)offset;
  d->count = d->images.count - d->first;
  if (limit > 0 && (size_t)limit < d->count) d->count = (size_t)limit;
  return CLI_EXIT_OK;
}

static void report(const cli_args* a, ttp_pipeline* p, const ttp_tta* tta, const eval_data* d,
                   const ttp_result* results, double seconds) {
  const ttp_model_info* m = ttp_model(p);
  int classes = m->classes;
  size_t* confusion = calloc((size_t)classes * classes, sizeof *confusion);
  if (!confusion) {
    cli_fail("out of memory");
    return;
  }
  size_t correct = 0;
  for (size_t i = 0; i < d->count; i++) {
    int truth = d->labels[d->first + i], guess = results[i].class_index;
    confusion[(size_t)truth * classes + guess]++;
    correct += truth == guess;
  }
  printf("model     %s (%d layers, %lld parameters, %.2f MFLOP per image)\n", cli_get(a, "model"),
         m->layers, m->parameters, m->flops * 1e-6);
  printf("images    %s: %zu to %zu of %zu\n", cli_get(a, "images"), d->first,
         d->first + d->count - 1, d->images.count);
  char augmentation[256];
  cli_describe_tta(tta, augmentation, sizeof augmentation);
  printf("tta       %s\n", augmentation);
  printf("accuracy  %.2f%% (%zu of %zu)\n", 100.0 * correct / d->count, correct, d->count);
  printf("time      %.3f s, %.0f images/s, %.1f us per image (%d cop%s each)\n\n", seconds,
         d->count / seconds, 1e6 * seconds / d->count, tta->copies, tta->copies == 1 ? "y" : "ies");

  printf("%-6s %-16s %8s %8s %9s\n", "class", "label", "images", "correct", "accuracy");
  for (int k = 0; k < classes; k++) {
    size_t n = 0;
    for (int j = 0; j < classes; j++) n += confusion[(size_t)k * classes + j];
    size_t ok = confusion[(size_t)k * classes + k];
    printf("%-6d %-16.16s %8zu %8zu ", k, ttp_class_label(p, k), n, ok);
    if (n) printf("%8.2f%%\n", 100.0 * ok / n);
    else printf("%9s\n", "-");
  }

  printf("\nconfusion matrix (rows: true class, columns: predicted class)\n%6s", "");
  for (int j = 0; j < classes; j++) printf(" %5d", j);
  printf("\n");
  for (int k = 0; k < classes; k++) {
    printf("%6d", k);
    for (int j = 0; j < classes; j++) printf(" %5zu", confusion[(size_t)k * classes + j]);
    printf("\n");
  }
  free(confusion);
}

static int run_eval(const cli_args* a) {
  ttp_pipeline* p = NULL;
  ttp_tta tta;
  eval_data d = {0};
  ttp_result* results = NULL;
  int rc = cli_open_pipeline(a, 0, TTP_PLAN_MEASURE, 0, &p, &tta);
  if (rc == CLI_EXIT_OK) rc = load(a, ttp_model(p), &d);
  if (rc == CLI_EXIT_OK && !(results = malloc(d.count * sizeof *results)))
    rc = cli_fail("out of memory for %zu results", d.count);
  if (rc == CLI_EXIT_OK) {
    size_t pixels = (size_t)d.images.channels * d.images.rows * d.images.cols;
    double start = cli_now();
    if (ttp_classify(p, d.images.pixels + d.first * pixels, d.count, results, NULL) != TTP_OK)
      rc = cli_fail("%s", ttp_last_error(p));
    else
      report(a, p, &tta, &d, results, cli_now() - start);
  }
  free(results);
  ttp_free(d.images.pixels);
  ttp_free(d.labels);
  ttp_close(p);
  return rc;
}

const cli_command cli_eval = {
    .name = "eval",
    .usage = "--model PATH --images FILE --labels FILE [options]",
    .summary = "Classify an IDX test set and report accuracy, per-class accuracy and the "
               "confusion matrix.",
    .options = eval_options,
    .max_positional = 0,
    .run = run_eval,
};
