/* Reads a model directory in the mnistCUDNN layout into a model (model.h).
   The network is the sample's, not described by the files: they hold weights only. */
#include "mnistcudnn.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/file.h"
#include "labels.h"

enum { LABELS_MAX_BYTES = 1 << 20 };

/* The sample's network on a 1 x 28 x 28 input. No activation after the convolutions; LRN over
   the 500 channels of ip1 after its ReLU. Weights come from <name>.bin and <name>.bias.bin. */
static const model_layer network[] = {
    {.op = MODEL_CONV, .name = "conv1", .p.conv = {.k = 20, .groups = 1, .w = {5, 5, 1, 1, 0, 0, 0, 0, 1, 1}}},
    {.op = MODEL_MAXPOOL, .name = "pool1", .p.pool = {.w = {2, 2, 2, 2, 0, 0, 0, 0, 1, 1}}},
    {.op = MODEL_CONV, .name = "conv2", .p.conv = {.k = 50, .groups = 1, .w = {5, 5, 1, 1, 0, 0, 0, 0, 1, 1}}},
    {.op = MODEL_MAXPOOL, .name = "pool2", .p.pool = {.w = {2, 2, 2, 2, 0, 0, 0, 0, 1, 1}}},
    {.op = MODEL_FC, .name = "ip1", .p.fc = {.out = 500}},
    {.op = MODEL_RELU, .name = "relu1"},
    {.op = MODEL_LRN, .name = "norm1", .p.lrn = {.n = 5, .alpha = 1e-4, .beta = 0.75, .k = 1.0}},
    {.op = MODEL_FC, .name = "ip2", .p.fc = {.out = 10}},
    {.op = MODEL_SOFTMAX, .name = "softmax"},
};

static ttp_status build_network(model* m, ttp_err* e) {
  for (size_t i = 0; i < sizeof network / sizeof network[0]; i++) {
    model_layer* l = model_add(m, network[i].op, network[i].name, e);
    if (!l) return e->status;
    l->p = network[i].p;
  }
  return model_infer_shapes(m, e);
}

/* Reads exactly count little-endian float32 values from dir/name into a new array, refusing
   any other file size and any value that is not finite. */
static ttp_status read_floats(const char* dir, const char* name, size_t count, float** out,
                              ttp_err* e) {
  char path[PATH_MAX];
  TRY(io_join(path, sizeof path, dir, name, e));
  int fd;
  size_t size, expected = count * 4;
  TRY(io_open_regular(path, &fd, &size, e));
  if (size != expected) {
    close(fd);
    return ERR(e, TTP_ERR_FORMAT, "%s: expected %zu bytes (%zu float32), found %zu", path,
               expected, count, size);
  }
  uint8_t* raw = malloc(expected);
  float* values = malloc(count * sizeof *values);
  ttp_status s = raw && values ? io_read_exact(fd, path, raw, expected, e)
                               : ERR_NOMEM(e, expected + count * sizeof *values);
  close(fd);
  for (size_t i = 0; s == TTP_OK && i < count; i++) {
    values[i] = io_float_le(raw + 4 * i);
    if (!isfinite(values[i]))
      s = ERR(e, TTP_ERR_FORMAT, "%s: value %zu is %s", path, i,
              isnan(values[i]) ? "NaN" : "infinite");
  }
  free(raw);
  if (s != TTP_OK) {
    free(values);
    return s;
  }
  *out = values;
  return TTP_OK;
}

static ttp_status read_weights(const char* dir, model* m, ttp_err* e) {
  for (int i = 0; i < m->layer_count; i++) {
    model_layer* l = &m->layers[i];
    if (!l->weight_count) continue;
    char name[64];
    snprintf(name, sizeof name, "%s.bin", l->name);
    TRY(read_floats(dir, name, l->weight_count, &l->weights, e));
    snprintf(name, sizeof name, "%s.bias.bin", l->name);
    TRY(read_floats(dir, name, l->bias_count, &l->bias, e));
  }
  return TTP_OK;
}

/* labels.txt, optional: labels.h's text, one name a line. */
static ttp_status read_labels(const char* dir, model* m, ttp_err* e) {
  char path[PATH_MAX];
  TRY(io_join(path, sizeof path, dir, "labels.txt", e));
  if (access(path, F_OK) != 0 && errno == ENOENT) return TTP_OK; /* optional */
  uint8_t* text;
  size_t size;
  TRY(io_read_file(path, LABELS_MAX_BYTES, &text, &size, e));
  const ttp_status s = io_parse_labels(path, (const char*)text, size, m, e);
  free(text);
  return s;
}

ttp_status io_load_mnistcudnn(const char* dir, model** out, ttp_err* e) {
  *out = NULL;
  model* m = model_new((model_shape){1, 28, 28}, e);
  if (!m) return e->status;
  ttp_status s = build_network(m, e);
  if (s == TTP_OK) s = read_weights(dir, m, e);
  if (s == TTP_OK) s = read_labels(dir, m, e);
  if (s == TTP_OK) s = model_check(m, e);
  if (s != TTP_OK) {
    model_free(m);
    return s;
  }
  *out = m;
  return TTP_OK;
}
