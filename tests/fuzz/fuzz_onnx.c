/* Fuzz target: the ONNX reader (io_load_onnx) on the input as a file (model.onnx).

   Checks: a refusal is one line naming the file, status TTP_ERR_MODEL or TTP_ERR_FORMAT (or
   TTP_ERR_IO, TTP_ERR_OUT_OF_MEMORY), and returns no model; an accepted model passed model_check
   (its shapes fit, its classes are its last layer's outputs), ends in a softmax, its weights
   are finite, and its labels (from the metadata) are one a class, none empty, no control
   characters. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "io/model_onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* path = fuzz_temp_path("model.onnx");
  fuzz_write(path, data, size);
  model* m = (model*)&path; /* anything but NULL: a refusal must clear it */
  ttp_err e = {0};
  const ttp_status s = io_load_onnx(path, &m, &e);
  if (s != TTP_OK) {
    FUZZ_ASSERT(m == NULL, "a refusal returned a model");
    FUZZ_ASSERT_REFUSAL(e, s);
    FUZZ_ASSERT(s == TTP_ERR_MODEL || s == TTP_ERR_FORMAT || s == TTP_ERR_IO ||
                    s == TTP_ERR_OUT_OF_MEMORY,
                "status %d for a bad file: %s", (int)s, e.message);
    FUZZ_ASSERT(strstr(e.message, path), "the message does not name the file: %s", e.message);
    return 0;
  }
  FUZZ_ASSERT(m && m->layer_count > 0 && m->classes > 0, "an empty model accepted");
  FUZZ_ASSERT(m->layers[m->layer_count - 1].op == MODEL_SOFTMAX, "no softmax at the end");
  FUZZ_ASSERT(m->label_count == 0 || m->label_count == m->classes, "%d labels for %d classes",
              m->label_count, m->classes);
  for (int k = 0; k < m->label_count; k++) {
    FUZZ_ASSERT(m->labels[k][0], "label %d is empty", k);
    for (const char* c = m->labels[k]; *c; c++)
      FUZZ_ASSERT((unsigned char)*c >= 0x20 && *c != 0x7f, "label %d holds 0x%02x", k,
                  (unsigned char)*c);
  }
  for (int l = 0; l < m->layer_count; l++) {
    const model_layer* y = &m->layers[l];
    for (size_t k = 0; k < y->weight_count; k++)
      FUZZ_ASSERT(isfinite(y->weights[k]), "layer %d weight %zu not finite", l, k);
    for (size_t k = 0; k < y->bias_count; k++)
      FUZZ_ASSERT(isfinite(y->bias[k]), "layer %d bias %zu not finite", l, k);
  }
  model_free(m);
  return 0;
}
