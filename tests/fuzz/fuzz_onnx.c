/* Fuzz target: the ONNX reader (io_load_onnx) on the input as a file (model.onnx).

   Checks: a refusal is one line naming the file, status TTP_ERR_MODEL or TTP_ERR_FORMAT (or
   TTP_ERR_IO, TTP_ERR_OUT_OF_MEMORY), and returns no model; an accepted model passed model_check
   (its shapes fit, its classes are its last layer's outputs), ends in a softmax, its weights
   are finite, its labels (from the metadata) are one a class, none empty, no control
   characters, its input is 1 or 3 channels of 8..128 a side and its scaling finite with std > 0;
   and a small accepted model runs one image through the CPU reference: a chain layer by layer
   (each output poisoned first, every value written), a graph whole (its probabilities poisoned
   first, every one written, in 0..1), so that odd windows, paddings, strides and the graph's
   joins meet the layers under the sanitizers. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "augment/tta.h"
#include "model/onnx.h"
#include "pipeline/cpu/cpu_engine.h"

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
  const model_shape in = m->input;
  FUZZ_ASSERT((in.c == 1 || in.c == 3) && in.h >= TTP_MIN_SIDE && in.h <= TTP_MAX_SIDE &&
                  in.w >= TTP_MIN_SIDE && in.w <= TTP_MAX_SIDE,
              "input %dx%dx%d accepted", in.c, in.h, in.w);
  for (int c = 0; c < 3; c++)
    FUZZ_ASSERT(isfinite(m->scaling.mean[c]) && m->scaling.std[c] > 0 &&
                    isfinite(m->scaling.std[c]), "scaling %g / %g", m->scaling.mean[c],
                m->scaling.std[c]);
  double macs = 0;
  for (int l = 0; l < m->layer_count; l++) macs += m->layers[l].macs;
  const size_t most = model_max_activation(m);
  int at;
  const int chain = model_is_chain(m, &at);
  if (macs < 2e6 && most <= 1 << 16 && !chain) { /* a graph: one copy of one image, whole */
    static uint8_t image[3 * TTP_MAX_SIDE * TTP_MAX_SIDE];
    static float probs[1 << 16];
    for (size_t i = 0; i < model_shape_size(in); i++) image[i] = (uint8_t)(i * 37 % 251);
    ttp_tta t;
    ttp_tta_init(&t);
    engine_config c = {.threads = 1};
    FUZZ_ASSERT(aug_spec_from(&t, &c.spec, &c.merge, &(float){1}, &e) == TTP_OK, "%s", e.message);
    const uint32_t poison = 0x7fa5a5a5u;
    for (int k = 0; k < m->classes; k++) memcpy(&probs[k], &poison, 4);
    FUZZ_ASSERT(cpu_engine_copies(m, &c, image, NULL, probs, &e) == TTP_OK, "%s", e.message);
    for (int k = 0; k < m->classes; k++)
      FUZZ_ASSERT(memcmp(&probs[k], &poison, 4) != 0 && (isnan(probs[k]) || (probs[k] >= 0 &&
                                                                            probs[k] <= 1)),
                  "class %d: probability %g", k, probs[k]);
  }
  if (macs < 2e6 && most <= 1 << 16 && chain) {
    static float a[1 << 16], b[1 << 16];
    for (size_t i = 0; i < model_shape_size(in); i++) a[i] = (float)(i % 7) * 0.25f - 0.5f;
    engine_config c = {.threads = 1};
    const uint32_t poison = 0x7fa5a5a5u; /* a NaN no arithmetic makes */
    float *x = a, *y = b;
    for (int l = 0; l < m->layer_count; l++) {
      const model_layer* layer = &m->layers[l];
      const size_t n = model_shape_size(layer->out);
      for (size_t i = 0; i < n; i++) memcpy(&y[i], &poison, 4);
      FUZZ_ASSERT(cpu_engine_run_layer(layer, 1, &c, 0, x, y, 0, &e) == TTP_OK, "%s", e.message);
      for (size_t i = 0; i < n; i++)
        FUZZ_ASSERT(memcmp(&y[i], &poison, 4) != 0, "layer %d (%s) left output %zu unwritten",
                    l, model_op_name(layer->op), i);
      float* t = x;
      x = y, y = t;
    }
  }
  model_free(m);
  return 0;
}
