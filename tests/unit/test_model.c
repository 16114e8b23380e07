/* The model's layer list: shapes worked out from the input, weight sizes, FLOPs, and the
   refusal of layers that do not fit. */
#include <string.h>

#include "../common/check.h"
#include "model/model.h"

static model* lenet(void) {
  ttp_err e = {0};
  model* m = model_new((model_shape){1, 28, 28}, &e);
  CHECK(m, "%s", e.message);
  model_layer* l = model_add(m, MODEL_CONV, "conv1", &e);
  l->p.conv.k = 20, l->p.conv.w = model_window_of(5, 5, 1, 0);
  l = model_add(m, MODEL_MAXPOOL, "pool1", &e);
  l->p.pool.w = model_window_of(2, 2, 2, 0);
  l = model_add(m, MODEL_CONV, "conv2", &e);
  l->p.conv.k = 50, l->p.conv.w = model_window_of(5, 5, 1, 0);
  l = model_add(m, MODEL_MAXPOOL, "pool2", &e);
  l->p.pool.w = model_window_of(2, 2, 2, 0);
  model_add(m, MODEL_FC, "ip1", &e)->p.fc.out = 500;
  model_add(m, MODEL_RELU, "relu1", &e);
  l = model_add(m, MODEL_LRN, "norm1", &e);
  l->p.lrn.n = 5, l->p.lrn.alpha = 1e-4, l->p.lrn.beta = 0.75, l->p.lrn.k = 1;
  model_add(m, MODEL_FC, "ip2", &e)->p.fc.out = 10;
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  CHECK(e.status == TTP_OK, "%s", e.message);
  return m;
}

static void expect_refused(model* m, const char* fragment) {
  ttp_err e = {0};
  CHECK(model_infer_shapes(m, &e) == TTP_ERR_MODEL, "a bad model was accepted (%s)", fragment);
  EXPECT_MESSAGE(e.message, fragment);
  model_free(m);
}

int main(void) {
  ttp_err e = {0};
  model* m = lenet();
  CHECK(model_infer_shapes(m, &e) == TTP_OK, "%s", e.message);
  static const model_shape outs[] = {{20, 24, 24}, {20, 12, 12}, {50, 8, 8}, {50, 4, 4}, {500, 1, 1},
                                     {500, 1, 1},  {500, 1, 1},  {10, 1, 1}, {10, 1, 1}};
  for (int i = 0; i < 9; i++) {
    model_shape s = m->layers[i].out;
    CHECK(s.c == outs[i].c && s.h == outs[i].h && s.w == outs[i].w, "layer %d is %dx%dx%d", i,
          s.c, s.h, s.w);
  }
  CHECK(m->classes == 10, "classes %d", m->classes);
  CHECK(m->layers[2].weight_count == 25000 && m->layers[2].bias_count == 50, "conv2 sizes");
  CHECK(m->layers[4].weight_count == 400000, "ip1 size %zu", m->layers[4].weight_count);
  double macs = 0;
  for (int i = 0; i < m->layer_count; i++) macs += m->layers[i].macs;
  CHECK(macs == 288000 + 1600000 + 400000 + 5000, "multiply-adds %.0f", macs); /* DESIGN.md */
  CHECK(model_max_activation(m) == 20 * 24 * 24, "max activation %zu", model_max_activation(m));
  /* Without weights the shapes are fine, but the model is not ready to run. */
  CHECK(model_check(m, &e) == TTP_ERR_MODEL, "a model without weights passed model_check");
  EXPECT_MESSAGE(e.message, "conv1", "weights missing");
  model_free(m);

  m = lenet();
  m->layers[2].p.conv.w.r = 13; /* larger than conv2's 12x12 input */
  expect_refused(m, "conv2: 13x5 filter larger");
  m = lenet();
  m->layers[2].p.conv.w.s = 13; /* only the width is too large; with stride 2, (12 - 13) / 2 + 1
                                 would pass for one column in C's integer division */
  m->layers[2].p.conv.w.stride_h = m->layers[2].p.conv.w.stride_w = 2;
  expect_refused(m, "conv2: 5x13 filter larger than its padded 12x12 input");
  m = lenet();
  m->layers[0].p.conv.w.stride_h = 0;
  expect_refused(m, "conv1");
  m = lenet();
  m->layers[3].p.pool.w.r = m->layers[3].p.pool.w.s = 5; /* pool2's input is 8x8; a 5x5 window fits... */
  m->layers[3].p.pool.w.stride_h = m->layers[3].p.pool.w.stride_w = 4;
  ttp_err ok = {0};
  CHECK(model_infer_shapes(m, &ok) == TTP_OK, "%s", ok.message);
  CHECK(m->layers[3].out.h == 1 && m->layers[4].in.c == 50, "strided pool shape");
  model_free(m);
  m = lenet();
  m->layers[3].p.pool.w.r = 9; /* ... a 9x9 one does not */
  expect_refused(m, "pool2");
  m = lenet();
  m->layers[6].p.lrn.n = 17; /* cuDNN allows 1..16 */
  expect_refused(m, "norm1");
  m = lenet();
  m->layers[7].p.fc.out = 0;
  expect_refused(m, "ip2");
  m = lenet();
  m->layer_count = 8; /* the last layer must be the softmax */
  expect_refused(m, "softmax");
  m = model_new((model_shape){1, 28, 28}, &e);
  expect_refused(m, "no layers");
  m = model_new((model_shape){0, 28, 28}, &e);
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "input");
  m = lenet();
  m->layers[0].p.conv.k = 1 << 20; /* absurd */
  expect_refused(m, "conv1");

  printf("model: shapes, sizes and refusals as expected\n");
  return 0;
}
