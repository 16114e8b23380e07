/* Fuzz target: the model-directory reader (io_load_mnistcudnn: eight raw float32 files and an
   optional labels.txt). A directory of valid files is made once a process; the input's first
   byte chooses one file to replace (0..7 the weight files, 8 labels.txt, 9 labels.txt absent)
   and the rest becomes its content; the directory is restored after each input.

   Checks: a refusal is one line naming a file of the directory, status TTP_ERR_FORMAT (or
   TTP_ERR_IO, TTP_ERR_OUT_OF_MEMORY); an accepted model has the sample's 10 classes, finite
   weights where the input replaced them, and either no labels or 10 non-empty ones without
   control characters. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "model/mnistcudnn.h"

static const struct {
  const char* name;
  size_t floats;
} files[] = {{"conv1.bin", 500},      {"conv1.bias.bin", 20}, {"conv2.bin", 25000},
             {"conv2.bias.bin", 50},  {"ip1.bin", 400000},    {"ip1.bias.bin", 500},
             {"ip2.bin", 5000},       {"ip2.bias.bin", 10}};
enum { FILES = sizeof files / sizeof files[0] };
static const char labels[] = "zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n";

/* The valid content of file i (small finite values), or labels.txt for i == FILES. */
static void restore(int i) {
  const char* name = i < FILES ? files[i].name : "labels.txt";
  const char* path = fuzz_temp_path(name);
  if (i == FILES) {
    fuzz_write(path, (const uint8_t*)labels, sizeof labels - 1);
    return;
  }
  size_t n = files[i].floats;
  float* v = malloc(n * sizeof *v);
  FUZZ_ASSERT(v, "out of memory");
  for (size_t k = 0; k < n; k++) v[k] = (float)((k * 37 + (size_t)i * 11) % 101) / 1000.0f - 0.05f;
  fuzz_write(path, (const uint8_t*)v, n * sizeof *v); /* little-endian machines only, as the files */
  free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int ready;
  if (!ready) {
    for (int i = 0; i <= FILES; i++) restore(i);
    ready = 1;
  }
  if (size < 1) return 0;
  const int which = data[0] % (FILES + 2);
  const char* labels_path = fuzz_temp_path("labels.txt");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", labels_path);
  *strrchr(dir, '/') = '\0';
  if (which == FILES + 1)
    unlink(labels_path);
  else
    fuzz_write(fuzz_temp_path(which < FILES ? files[which].name : "labels.txt"), data + 1,
               size - 1);

  model* m = NULL;
  ttp_err e = {0};
  ttp_status s = io_load_mnistcudnn(dir, &m, &e);
  if (s != TTP_OK) {
    FUZZ_ASSERT(m == NULL, "a refusal returned a model");
    FUZZ_ASSERT_REFUSAL(e, s);
    FUZZ_ASSERT(s == TTP_ERR_FORMAT || s == TTP_ERR_IO || s == TTP_ERR_OUT_OF_MEMORY,
                "status %d for a bad directory: %s", (int)s, e.message);
    FUZZ_ASSERT(strstr(e.message, dir), "the message names no file of the directory: %s",
                e.message);
  } else {
    FUZZ_ASSERT(m && m->classes == 10, "a model of %d classes", m ? m->classes : -1);
    FUZZ_ASSERT(m->label_count == 0 || m->label_count == 10, "%d labels", m->label_count);
    for (int k = 0; k < m->label_count; k++) {
      FUZZ_ASSERT(m->labels[k][0], "label %d is empty", k);
      for (const char* c = m->labels[k]; *c; c++)
        FUZZ_ASSERT((unsigned char)*c >= 0x20 && *c != 0x7f, "label %d holds 0x%02x", k,
                    (unsigned char)*c);
    }
    for (int l = 0; l < m->layer_count; l++)
      for (size_t k = 0; k < m->layers[l].weight_count; k++)
        FUZZ_ASSERT(isfinite(m->layers[l].weights[k]), "layer %d weight %zu not finite", l, k);
    model_free(m);
  }
  restore(which < FILES ? which : FILES);
  return 0;
}
