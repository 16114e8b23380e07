/* A labelled IDX set: see labelled.h. */
#include "labelled.h"

int cli_load_labelled(const cli_args* a, const ttp_model_info* m, cli_labelled* d) {
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

void cli_labelled_free(cli_labelled* d) {
  ttp_free(d->images.pixels);
  ttp_free(d->labels);
  *d = (cli_labelled){0};
}
