/* A labelled set, IDX or a directory: see labelled.h. */
#include "labelled.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rows.h"

/* --offset and --limit (limit -1: all): the slice of total images; CLI_EXIT_OK or the exit
   code. */
static int slice(long offset, long limit, size_t total, const char* what, cli_labelled* d) {
  if ((size_t)offset >= total)
    return cli_fail("--offset %ld is past the %zu %s of %s", offset, total, what, d->source);
  d->first = (size_t)offset;
  d->total = total;
  d->count = total - d->first;
  if (limit > 0 && (size_t)limit < d->count) d->count = (size_t)limit;
  return CLI_EXIT_OK;
}

static int load_idx(const cli_args* a, const ttp_model_info* m, long offset, long limit,
                    cli_labelled* d) {
  const char *images = d->source, *labels;
  int rc;
  if ((rc = cli_require(a, "labels", &labels))) return rc;
  /* IDX images are the model's input already: nothing to decode, invert or centre. */
  if (cli_get(a, "invert") || cli_get(a, "center") || cli_get(a, "max-size"))
    return cli_usage_error(a->command, "--invert, --center and --max-size are for a directory "
                           "of images: %s is an IDX file, read as it is", images);
  char error[TTP_ERROR_SIZE];
  size_t label_count;
  if (ttp_read_idx_images(images, &d->idx, error, sizeof error) != TTP_OK ||
      ttp_read_idx_labels(labels, &d->idx_labels, &label_count, error, sizeof error) != TTP_OK)
    return cli_fail("%s", error);
  if (d->idx.channels != m->input_channels || d->idx.rows != m->input_rows ||
      d->idx.cols != m->input_cols)
    return cli_fail("%s: images are %dx%dx%d, the model needs %dx%dx%d (channels x rows x "
                    "columns; IDX with 4 dimensions for 3 channels)", images, d->idx.channels,
                    d->idx.rows, d->idx.cols, m->input_channels, m->input_rows, m->input_cols);
  if (label_count != d->idx.count)
    return cli_fail("%s has %zu labels for the %zu images of %s", labels, label_count,
                    d->idx.count, images);
  for (size_t i = 0; i < label_count; i++)
    if (d->idx_labels[i] >= m->classes)
      return cli_fail("%s: label %zu is %d, but the model has %d classes", labels, i,
                      d->idx_labels[i], m->classes);
  if ((rc = slice(offset, limit, d->idx.count, "images", d))) return rc;
  const size_t pixels = (size_t)m->input_channels * m->input_rows * m->input_cols;
  d->pixels = d->idx.pixels + d->first * pixels;
  d->labels = d->idx_labels + d->first;
  return CLI_EXIT_OK;
}

/* The label in a file's name: the decimal number after the last "_label" of its base name, up
   to its extension; -1 when there is none. Values above 999999 read as 999999: out of range. */
static long label_of(const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char* at = NULL;
  for (const char* s = base; (s = strstr(s, "_label")); s++) at = s + strlen("_label");
  if (!at) return -1;
  const char* dot = strrchr(at, '.');
  const char* end = dot ? dot : at + strlen(at);
  if (end == at) return -1;
  long v = 0;
  for (const char* c = at; c < end; c++) {
    if (*c < '0' || *c > '9') return -1;
    v = v < 100000 ? v * 10 + (*c - '0') : 999999;
  }
  return v;
}

/* The slice's files decoded on several threads, each taking the next file in turn. The failure
   reported is the first in the list's order, whatever the threads' timing: a file after one
   that failed is not begun, and every file before it is finished. */
typedef struct decoding {
  char* const* paths;
  size_t count, pixels;
  const ttp_image_options* options;
  int rows, cols;
  uint8_t* out;
  pthread_mutex_t lock; /* guards next, failed and error */
  size_t next, failed;  /* failed: the first file that failed, count while none */
  char error[TTP_ERROR_SIZE];
} decoding;

static void* decode_files(void* arg) {
  decoding* j = arg;
  char error[TTP_ERROR_SIZE];
  for (;;) {
    pthread_mutex_lock(&j->lock);
    const size_t i = j->next++;
    const int stop = i >= j->count || i > j->failed;
    pthread_mutex_unlock(&j->lock);
    if (stop) return NULL;
    if (ttp_load_image(j->paths[i], j->options, j->rows, j->cols, j->out + i * j->pixels, error,
                       sizeof error) == TTP_OK)
      continue;
    pthread_mutex_lock(&j->lock);
    if (i < j->failed) j->failed = i, memcpy(j->error, error, sizeof error);
    pthread_mutex_unlock(&j->lock);
  }
}

enum { DECODE_MAX_THREADS = 256 };

static int load_directory(const cli_args* a, const ttp_model_info* m, long offset, long limit,
                          cli_labelled* d) {
  const char* dir = d->source;
  long threads = 0;
  ttp_image_options io;
  int rc;
  if ((rc = cli_get_long(a, "threads", 1, DECODE_MAX_THREADS, &threads)) ||
      (rc = cli_image_options(a, &io)))
    return rc;
  if (cli_get(a, "labels"))
    return cli_fail("%s is a directory: its files' names hold their labels "
                    "(NNNNN_label<L>.png); --labels FILE is for IDX images", dir);
  /* As classify DIR lists it, so that a row of one is a file of the other. */
  ttp_list_options lo;
  ttp_list_options_init(&lo);
  char error[TTP_ERROR_SIZE];
  if (ttp_list_files(&dir, 1, &lo, &d->files, error, sizeof error) != TTP_OK)
    return cli_fail("%s", error);
  if (d->files.count == 0)
    return cli_fail("%s: no image files in it (PNG, JPEG, BMP, PGM/PPM)", dir);
  /* Every name is checked, the slice's files alone decoded. */
  for (size_t i = 0; i < d->files.count; i++) {
    const char* path = d->files.paths[i];
    const long label = label_of(path);
    if (cli_archive_key(path, strlen(path)) == strlen(path))
      return cli_fail("%s: a tar archive: eval and tune read a directory's image files, not "
                      "archives", path);
    if (label < 0)
      return cli_fail("%s: no label in its name: a labelled directory's files are named "
                      "NAME_label<L>.EXT, L the class", path);
    if (label >= m->classes)
      return cli_fail("%s: label %ld, but the model has %d classes", path, label, m->classes);
    if (label > 255) /* as IDX labels: a byte each */
      return cli_fail("%s: label %ld, more than 255, the largest a labelled set holds", path,
                      label);
  }
  if ((rc = slice(offset, limit, d->files.count, "image files", d))) return rc;
  const size_t pixels = (size_t)m->input_channels * m->input_rows * m->input_cols;
  if (!(d->decoded = malloc(d->count * pixels)) || !(d->named = malloc(d->count)))
    return cli_fail("out of memory for %zu images", d->count);
  d->paths = d->files.paths + d->first;
  for (size_t i = 0; i < d->count; i++) d->named[i] = (uint8_t)label_of(d->paths[i]);
  io.channels = m->input_channels; /* as ttp_classify_files reads them for this model */
  decoding j = {.paths = d->paths, .count = d->count, .pixels = pixels, .options = &io,
                .rows = m->input_rows, .cols = m->input_cols, .out = d->decoded,
                .failed = d->count};
  if (!threads) threads = sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  if ((size_t)threads > d->count) threads = (long)d->count;
  pthread_t ids[DECODE_MAX_THREADS];
  int started[DECODE_MAX_THREADS] = {0};
  pthread_mutex_init(&j.lock, NULL);
  for (long t = 1; t < threads; t++) /* one that does not start: fewer threads, same result */
    started[t] = pthread_create(&ids[t], NULL, decode_files, &j) == 0;
  decode_files(&j);
  for (long t = 1; t < threads; t++)
    if (started[t]) pthread_join(ids[t], NULL);
  pthread_mutex_destroy(&j.lock);
  if (j.failed < d->count) {
    /* Reading errors name the file already; decoding errors do not. */
    const char* path = d->paths[j.failed];
    const size_t n = strlen(path);
    if (strncmp(j.error, path, n) == 0 && j.error[n] == ':') return cli_fail("%s", j.error);
    return cli_fail("%s: %s", path, j.error);
  }
  d->pixels = d->decoded;
  d->labels = d->named;
  return CLI_EXIT_OK;
}

int cli_load_labelled(const cli_args* a, const ttp_model_info* m, cli_labelled* d) {
  long offset = 0, limit = -1;
  int rc;
  if ((rc = cli_require(a, "images", &d->source)) ||
      (rc = cli_get_long(a, "offset", 0, 2147483647L, &offset)) ||
      (rc = cli_get_long(a, "limit", 1, 2147483647L, &limit)))
    return rc;
  struct stat st;
  return stat(d->source, &st) == 0 && S_ISDIR(st.st_mode) ? load_directory(a, m, offset, limit, d)
                                                          : load_idx(a, m, offset, limit, d);
}

void cli_labelled_free(cli_labelled* d) {
  ttp_free(d->idx.pixels);
  ttp_free(d->idx_labels);
  ttp_file_list_free(&d->files);
  free(d->decoded);
  free(d->named);
  *d = (cli_labelled){0};
}

void cli_labelled_describe(const cli_labelled* d, char* buf, size_t size) {
  if (d->paths)
    snprintf(buf, size, "%s: files %zu to %zu of %zu (sorted paths), labels from their names",
             d->source, d->first, d->first + d->count - 1, d->total);
  else
    snprintf(buf, size, "%s: %zu to %zu of %zu", d->source, d->first, d->first + d->count - 1,
             d->total);
}

const char* cli_labelled_name(const cli_labelled* d, size_t i, char* buf, size_t size) {
  if (d->paths) return d->paths[i];
  snprintf(buf, size, "#%zu", d->first + i);
  return buf;
}
