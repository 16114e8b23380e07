/* Graph models built by hand: see graphs.h. */
#include "graphs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- building blocks ------------------------------------------------------------------------ */

model_layer* graphs_add(model* m, model_op op, const char* name, int input) {
  ttp_err e = {0};
  model_layer* l = model_add(m, op, name, &e);
  CHECK(l, "%s", e.message);
  l->inputs[0] = input;
  return l;
}

int graphs_value(const model* m, const model_layer* l) { return (int)(l - m->layers) + 1; }

model_layer* graphs_conv(model* m, const char* name, int input, int k, int groups,
                         model_window w) {
  model_layer* l = graphs_add(m, MODEL_CONV, name, input);
  l->p.conv.k = k, l->p.conv.groups = groups, l->p.conv.w = w;
  return l;
}

model_layer* graphs_join(model* m, model_op op, const char* name, int n, const int* inputs) {
  model_layer* l = graphs_add(m, op, name, inputs[0]);
  for (int k = 0; k < n; k++) l->inputs[k] = inputs[k];
  l->input_count = n;
  return l;
}

model_window graphs_window(int r, int s, int sh, int sw, int pt, int pl, int pb, int pr, int dh,
                           int dw) {
  return (model_window){r, s, sh, sw, pt, pl, pb, pr, dh, dw};
}

void graphs_finish(model* m, test_rng* rng) {
  ttp_err e = {0};
  CHECK(model_infer_shapes(m, &e) == TTP_OK, "%s", e.message);
  for (int i = 0; i < m->layer_count; i++) {
    model_layer* l = &m->layers[i];
    if (l->weight_count) {
      l->weights = malloc(l->weight_count * sizeof(float));
      CHECK(l->weights, "out of memory");
      const double fan = l->op == MODEL_FC ? (double)model_shape_size(l->in)
                         : l->op == MODEL_CONV ? (double)l->weight_count / l->p.conv.k
                                               : 1.0;
      const double lo = l->op == MODEL_AFFINE ? 0.5 : -1.5 / sqrt(fan);
      const double hi = l->op == MODEL_AFFINE ? 1.5 : l->op == MODEL_PRELU ? 0.4 : 1.5 / sqrt(fan);
      test_fill_uniform(rng, l->weights, l->weight_count, lo, hi);
    }
    if (l->bias_count) {
      l->bias = malloc(l->bias_count * sizeof(float));
      CHECK(l->bias, "out of memory");
      test_fill_uniform(rng, l->bias, l->bias_count, -0.3, 0.3);
    }
  }
  CHECK(model_check(m, &e) == TTP_OK, "%s", e.message);
}

/* ---- the networks --------------------------------------------------------------------------- */

/* What every builder ends with: an fc of `classes` outputs over the last layer's, a softmax,
   then graphs_finish. */
static void graphs_head(model* m, int classes, test_rng* rng) {
  ttp_err e = {0};
  model_layer* fc = model_add(m, MODEL_FC, "fc", &e);
  CHECK(fc, "%s", e.message);
  fc->p.fc.out = classes;
  CHECK(model_add(m, MODEL_SOFTMAX, "softmax", &e), "%s", e.message);
  graphs_finish(m, rng);
}

model* graphs_resnet(int blocks, test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 17, 15}, &e);
  CHECK(m, "%s", e.message);
  int v = graphs_value(m, graphs_conv(m, "stem", 0, 8, 1, model_window_of(3, 3, 1, 1)));
  v = graphs_value(m, graphs_add(m, MODEL_RELU, "stem_relu", v));
  int width = 8;
  for (int stage = 0; stage < 3; stage++)
    for (int b = 0; b < blocks; b++) {
      const int stride = stage > 0 && b == 0 ? 2 : 1, out = 8 << stage;
      char name[32];
      snprintf(name, sizeof name, "s%db%d_conv1", stage, b);
      int y = graphs_value(m, graphs_conv(m, name, v, out, 1, model_window_of(3, 3, stride, 1)));
      model_layer* bn = graphs_add(m, MODEL_AFFINE, "bn1", y);
      bn->weight_count = (size_t)out;
      y = graphs_value(m, graphs_add(m, MODEL_RELU, "relu1", graphs_value(m, bn)));
      y = graphs_value(m, graphs_conv(m, "conv2", y, out, 1, model_window_of(3, 3, 1, 1)));
      bn = graphs_add(m, MODEL_AFFINE, "bn2", y);
      bn->weight_count = 1; /* one scale for every channel */
      y = graphs_value(m, bn);
      const int shortcut =
          out == width ? v
                       : graphs_value(m, graphs_conv(m, "proj", v, out, 1,
                                                     model_window_of(1, 1, stride, 0)));
      const int pair[2] = {y, shortcut};
      v = graphs_value(m, graphs_add(m, MODEL_RELU, "relu2",
                                     graphs_value(m, graphs_join(m, MODEL_ADD, "add", 2, pair))));
      width = out;
    }
  model_layer* pool = graphs_add(m, MODEL_AVGPOOL, "gap", v);
  pool->p.pool.w = model_window_of(5, 4, 1, 0); /* the whole 5 x 4 map */
  graphs_head(m, 10, rng);
  return m;
}

model* graphs_blocks(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 32, 32}, &e);
  CHECK(m, "%s", e.message);
  const model_window same = model_window_of(3, 3, 1, 1);
  int v = graphs_value(m, graphs_conv(m, "stem", 0, 16, 1, same));
  v = graphs_value(m, graphs_add(m, MODEL_RELU, "stem_relu", v));
  for (int width = 16; width <= 32; width *= 2) {
    if (width == 32) {
      v = graphs_value(m, graphs_conv(m, "down", v, 32, 1, model_window_of(3, 3, 2, 1)));
      v = graphs_value(m, graphs_add(m, MODEL_RELU, "down_relu", v));
    }
    for (int b = 0; b < 2; b++) {
      int y = graphs_value(m, graphs_conv(m, "conv1", v, width, 1, same));
      y = graphs_value(m, graphs_add(m, MODEL_RELU, "relu1", y));
      y = graphs_value(m, graphs_conv(m, "conv2", y, width, 1, same));
      const int pair[2] = {y, v};
      v = graphs_value(m, graphs_add(m, MODEL_RELU, "relu2",
                                     graphs_value(m, graphs_join(m, MODEL_ADD, "add", 2, pair))));
    }
    v = graphs_value(m, graphs_conv(m, "plain1", v, width, 1, same));
    v = graphs_value(m, graphs_add(m, MODEL_RELU, "relu6", v));
    model_layer* clip = graphs_add(m, MODEL_CLIP, "clip6", v);
    clip->p.clip.lo = 0, clip->p.clip.hi = 6;
    v = graphs_value(m, graphs_conv(m, "plain2", graphs_value(m, clip), width, 1, same));
  }
  model_layer* pool = graphs_add(m, MODEL_AVGPOOL, "gap", v);
  pool->p.pool.w = model_window_of(16, 16, 1, 0); /* the whole 16 x 16 map */
  graphs_head(m, 10, rng);
  return m;
}

/* An inverted residual block from value v of cin channels: 1x1 expansion to 4 x cin, its
   activation (a ReLU then a Clip to 6, or a Clip to [-1, 2] alone), 3x3 depthwise of the stride
   with a ReLU and a Clip to 6, 1x1 projection to cout, + v where residual. */
static int inverted_block(model* m, int v, int cin, int cout, int stride, int relu6,
                          int residual) {
  const model_window one = model_window_of(1, 1, 1, 0);
  const int mid = 4 * cin;
  int y = graphs_value(m, graphs_conv(m, "expand", v, mid, 1, one));
  if (relu6) y = graphs_value(m, graphs_add(m, MODEL_RELU, "expand_relu", y));
  model_layer* clip = graphs_add(m, MODEL_CLIP, "expand_clip", y);
  clip->p.clip.lo = relu6 ? 0 : -1, clip->p.clip.hi = relu6 ? 6 : 2;
  y = graphs_value(m, graphs_conv(m, "depthwise", graphs_value(m, clip), mid, mid,
                                  model_window_of(3, 3, stride, 1)));
  y = graphs_value(m, graphs_add(m, MODEL_RELU, "depthwise_relu", y));
  clip = graphs_add(m, MODEL_CLIP, "depthwise_clip", y);
  clip->p.clip.lo = 0, clip->p.clip.hi = 6;
  y = graphs_value(m, graphs_conv(m, "project", graphs_value(m, clip), cout, 1, one));
  if (!residual) return y;
  const int pair[2] = {y, v};
  return graphs_value(m, graphs_join(m, MODEL_ADD, "add", 2, pair));
}

model* graphs_inverted(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 32, 32}, &e);
  CHECK(m, "%s", e.message);
  int v = graphs_value(m, graphs_conv(m, "stem", 0, 16, 1, model_window_of(3, 3, 1, 1)));
  v = graphs_value(m, graphs_add(m, MODEL_RELU, "stem_relu", v));
  v = inverted_block(m, v, 16, 16, 1, 1, 1);
  v = inverted_block(m, v, 16, 16, 1, 0, 0);
  v = inverted_block(m, v, 16, 24, 2, 1, 0); /* to 16x16 */
  v = graphs_value(m, graphs_conv(m, "down", v, 32, 1, model_window_of(3, 3, 2, 1)));
  v = graphs_value(m, graphs_add(m, MODEL_RELU, "down_relu", v)); /* to 8x8 */
  v = inverted_block(m, v, 32, 32, 1, 1, 1);
  model_layer* pool = graphs_add(m, MODEL_AVGPOOL, "gap", v);
  pool->p.pool.w = model_window_of(8, 8, 1, 0); /* the whole 8 x 8 map */
  graphs_head(m, 10, rng);
  return m;
}

model* graphs_mobilenet(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 16, 14}, &e);
  CHECK(m, "%s", e.message);
  const int in = graphs_value(m, graphs_conv(m, "first", 0, 6, 1, model_window_of(1, 1, 1, 0)));
  int v = graphs_value(m, graphs_conv(m, "expand", in, 18, 1, model_window_of(1, 1, 1, 0)));
  model_layer* l = graphs_add(m, MODEL_CLIP, "relu6", v);
  l->p.clip.lo = 0, l->p.clip.hi = 6;
  v = graphs_value(m, graphs_conv(m, "depthwise", graphs_value(m, l), 18, 18,
                                  model_window_of(3, 3, 1, 1)));
  const int dw = graphs_value(m, graphs_add(m, MODEL_HARDSWISH, "hswish", v));
  l = graphs_add(m, MODEL_AVGPOOL, "squeeze", dw);
  l->p.pool.w = model_window_of(16, 14, 1, 0);
  v = graphs_value(m, graphs_conv(m, "se_reduce", graphs_value(m, l), 4, 1,
                                  model_window_of(1, 1, 1, 0)));
  v = graphs_value(m, graphs_add(m, MODEL_RELU, "se_relu", v));
  v = graphs_value(m, graphs_conv(m, "se_expand", v, 18, 1, model_window_of(1, 1, 1, 0)));
  l = graphs_add(m, MODEL_HARDSIGMOID, "se_gate", v);
  l->p.hard.alpha = 1.0f / 6, l->p.hard.beta = 0.5f;
  const int gate[2] = {dw, graphs_value(m, l)};
  v = graphs_value(m, graphs_join(m, MODEL_MUL, "excite", 2, gate));
  v = graphs_value(m, graphs_conv(m, "project", v, 6, 1, model_window_of(1, 1, 1, 0)));
  l = graphs_add(m, MODEL_AVGPOOL, "scalar", 0); /* 1 x 1 x 1: the input's mean, a scalar to add */
  l->p.pool.w = model_window_of(16, 14, 1, 0);
  l = graphs_add(m, MODEL_CONV, "to_one", graphs_value(m, l));
  l->p.conv.k = 1, l->p.conv.groups = 1, l->p.conv.w = model_window_of(1, 1, 1, 0);
  const int three[3] = {v, in, graphs_value(m, l)};
  v = graphs_value(m, graphs_join(m, MODEL_ADD, "residual", 3, three));
  l = graphs_add(m, MODEL_AVGPOOL, "mean", v);
  l->p.pool.w = model_window_of(16, 14, 1, 0);
  graphs_head(m, 7, rng);
  return m;
}

model* graphs_depthwise(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 17, 15}, &e);
  CHECK(m, "%s", e.message);
  int v = graphs_value(m, graphs_conv(m, "stem", 0, 16, 1, model_window_of(3, 3, 1, 1)));
  const int stem = graphs_value(m, graphs_add(m, MODEL_RELU, "stem_relu", v));
  v = graphs_value(m, graphs_conv(m, "expand", stem, 32, 1, model_window_of(1, 1, 1, 0)));
  model_layer* l = graphs_add(m, MODEL_CLIP, "relu6", v);
  l->p.clip.lo = 0, l->p.clip.hi = 6;
  v = graphs_value(m, graphs_conv(m, "depthwise", graphs_value(m, l), 32, 32,
                                  model_window_of(3, 3, 1, 1)));
  v = graphs_value(m, graphs_add(m, MODEL_RELU, "dw_relu", v));
  l = graphs_add(m, MODEL_CLIP, "dw_clip", v); /* a ReLU and a Clip: PyTorch's ReLU6 exported */
  l->p.clip.lo = -1, l->p.clip.hi = 0.75f;
  v = graphs_value(m, graphs_conv(m, "project", graphs_value(m, l), 16, 1,
                                  model_window_of(1, 1, 1, 0)));
  const int block[2] = {v, stem};
  const int x = graphs_value(m, graphs_join(m, MODEL_ADD, "residual", 2, block)); /* 16x17x15 */
  /* two depthwise convolutions of stride 2 to 16 x 8 x 7: uneven padding, and dilation */
  const int a = graphs_value(m, graphs_conv(m, "dw_uneven", x, 16, 16,
                                            graphs_window(3, 3, 2, 2, 0, 1, 1, 0, 1, 1)));
  const int b = graphs_value(m, graphs_conv(m, "dw_dilated", x, 16, 16,
                                            graphs_window(3, 3, 2, 2, 1, 1, 1, 1, 2, 2)));
  const int pair[2] = {a, b};
  v = graphs_value(m, graphs_add(m, MODEL_RELU, "relu",
                                 graphs_value(m, graphs_join(m, MODEL_ADD, "add", 2, pair))));
  l = graphs_add(m, MODEL_AVGPOOL, "gap", v);
  l->p.pool.w = model_window_of(8, 7, 1, 0);
  graphs_head(m, 9, rng);
  return m;
}

model* graphs_densenet(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){1, 13, 11}, &e);
  CHECK(m, "%s", e.message);
  /* conv0's uneven padding: 13 + 1 + 0 - 3 + 1 = 12 rows, 11 + 1 + 2 - 3 + 1 = 12 columns. */
  int v = graphs_value(m, graphs_conv(m, "conv0", 0, 4, 1,
                                      graphs_window(3, 3, 1, 1, 1, 1, 0, 2, 1, 1)));
  const int c0 = graphs_value(m, graphs_add(m, MODEL_GELU, "gelu", v));
  /* The input cropped to 12 rows and widened to 12 columns, to join conv0's maps. */
  model_layer* l = graphs_add(m, MODEL_SLICE, "crop", 0);
  l->p.slice.c0 = 0, l->p.slice.c1 = 1, l->p.slice.h0 = 1, l->p.slice.h1 = 13;
  l->p.slice.w0 = 0, l->p.slice.w1 = 11, l->p.slice.step_h = l->p.slice.step_w = 1;
  l = graphs_add(m, MODEL_PAD, "widen", graphs_value(m, l));
  l->p.pad.w1 = 1, l->p.pad.value = 0.125f;
  const int first[2] = {c0, graphs_value(m, l)};
  const int cat1 = graphs_value(m, graphs_join(m, MODEL_CONCAT, "cat1", 2, first));
  l = graphs_add(m, MODEL_AFFINE, "bn", cat1);
  l->weight_count = 5;
  l = graphs_add(m, MODEL_ELU, "elu", graphs_value(m, l));
  l->p.elu.alpha = 0.7f;
  v = graphs_value(m, graphs_conv(m, "dilated", graphs_value(m, l), 4, 1,
                                  graphs_window(3, 3, 1, 1, 2, 2, 2, 2, 2, 2)));
  const int both[2] = {cat1, graphs_value(m, graphs_add(m, MODEL_MISH, "mish", v))};
  v = graphs_value(m, graphs_join(m, MODEL_CONCAT, "cat2", 2, both)); /* 9 x 12 x 12 */
  l = graphs_add(m, MODEL_MAXPOOL, "pool_ceil", v);                   /* 9 x 6 x 6 */
  l->p.pool.w = model_window_of(3, 3, 2, 0), l->p.pool.ceil = 1;
  l = graphs_add(m, MODEL_AVGPOOL, "pool_uneven", graphs_value(m, l)); /* 9 x 3 x 6 */
  l->p.pool.w = graphs_window(2, 2, 2, 1, 0, 1, 1, 0, 1, 1), l->p.pool.count_pad = 0;
  l->p.pool.ceil = 1;
  l = graphs_add(m, MODEL_PRELU, "prelu", graphs_value(m, l));
  l->weight_count = 9;
  const int sp = graphs_value(m, graphs_add(m, MODEL_SOFTPLUS, "softplus", graphs_value(m, l)));
  v = graphs_value(m, graphs_add(m, MODEL_ERF, "erf", sp));
  l = graphs_add(m, MODEL_SHUFFLE, "shuffle", v);
  l->p.shuffle.groups = 3;
  l = graphs_add(m, MODEL_SLICE, "split", graphs_value(m, l)); /* channels 3..8: 6 x 3 x 6 */
  l->p.slice.c0 = 3, l->p.slice.c1 = 9, l->p.slice.h1 = 3, l->p.slice.w1 = 6;
  l->p.slice.step_h = l->p.slice.step_w = 1;
  l = graphs_add(m, MODEL_PAD, "pad", graphs_value(m, l)); /* 9 x 4 x 6 */
  l->p.pad.c0 = 1, l->p.pad.c1 = 2, l->p.pad.h0 = 1, l->p.pad.value = -0.25f;
  const int padded = graphs_value(m, l);
  l = graphs_add(m, MODEL_PAD, "softplus_pad", sp); /* 9 x 4 x 6 */
  l->p.pad.h1 = 1, l->p.pad.value = 0.5f;
  const int diff[2] = {padded, graphs_value(m, l)};
  v = graphs_value(m, graphs_join(m, MODEL_SUB, "sub", 2, diff));
  const int ratio[2] = {v, graphs_value(m, graphs_add(m, MODEL_SIGMOID, "positive", v))};
  graphs_join(m, MODEL_DIV, "div", 2, ratio);
  l = model_add(m, MODEL_RESHAPE, "reshape", &e); /* 9 x 4 x 6 read as 24 x 9 x 1 */
  l->p.reshape = (model_shape){24, 9, 1};
  model_add(m, MODEL_AFFINE, "per_row", &e)->weight_count = 24;
  graphs_head(m, 5, rng);
  return m;
}

model* graphs_option_a(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 15, 16}, &e);
  CHECK(m, "%s", e.message);
  int x = graphs_value(m, graphs_conv(m, "stem", 0, 4, 1, model_window_of(3, 3, 1, 1)));
  x = graphs_value(m, graphs_add(m, MODEL_RELU, "relu", x));
  int y = graphs_value(m, graphs_conv(m, "down", x, 8, 1, model_window_of(3, 3, 2, 1)));
  model_layer* l = graphs_add(m, MODEL_SLICE, "every_other", x);
  l->p.slice.c0 = 0, l->p.slice.c1 = 4, l->p.slice.h1 = 15, l->p.slice.w1 = 16;
  l->p.slice.step_h = l->p.slice.step_w = 2;
  l = graphs_add(m, MODEL_PAD, "zero_channels", graphs_value(m, l));
  l->p.pad.c0 = l->p.pad.c1 = 2;
  const int pair[2] = {y, graphs_value(m, l)};
  y = graphs_value(m, graphs_join(m, MODEL_ADD, "add", 2, pair));
  graphs_add(m, MODEL_RELU, "relu2", y);
  graphs_head(m, 10, rng);
  return m;
}

/* A pooling layer of window w reading `input`. */
static model_layer* pool(model* m, model_op op, const char* name, int input, model_window w,
                         int count_pad, int ceil) {
  model_layer* l = graphs_add(m, op, name, input);
  l->p.pool.w = w, l->p.pool.count_pad = count_pad, l->p.pool.ceil = ceil;
  return l;
}

static model_layer* slice(model* m, const char* name, int input, int c0, int c1, int h0, int h1,
                          int step_h, int w0, int w1, int step_w) {
  model_layer* l = graphs_add(m, MODEL_SLICE, name, input);
  l->p.slice.c0 = c0, l->p.slice.c1 = c1, l->p.slice.h0 = h0, l->p.slice.h1 = h1;
  l->p.slice.step_h = step_h, l->p.slice.w0 = w0, l->p.slice.w1 = w1, l->p.slice.step_w = step_w;
  return l;
}

model* graphs_zoo(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 19, 17}, &e);
  CHECK(m, "%s", e.message);
  /* 6 x 18 x 9: groups of one channel, dilated rows, strided columns, uneven padding */
  int v = graphs_value(m, graphs_conv(m, "grouped_dilated", 0, 6, 3,
                                      graphs_window(3, 3, 1, 2, 2, 1, 1, 2, 2, 1)));
  model_layer* l = graphs_add(m, MODEL_LEAKY_RELU, "leaky", v);
  l->p.leaky.alpha = 0.1f;
  /* a convolution whose output two layers read: nothing fuses into it */
  const int two = graphs_value(m, graphs_conv(m, "two_readers", graphs_value(m, l), 8, 1,
                                              model_window_of(1, 1, 1, 0)));
  const int gates[2] = {graphs_value(m, graphs_add(m, MODEL_SIGMOID, "sigmoid", two)),
                        graphs_value(m, graphs_add(m, MODEL_TANH, "tanh", two))};
  const int gated = graphs_value(m, graphs_join(m, MODEL_MUL, "gated", 2, gates)); /* 8x18x9 */
  /* depthwise, its BatchNorm and activation; a 3x3 convolution and the residual Add of `gated`
     (made before it, read last here), then ReLU: what an engine fuses into one convolution */
  v = graphs_value(m, graphs_conv(m, "depthwise", gated, 8, 8, model_window_of(3, 3, 1, 1)));
  l = graphs_add(m, MODEL_AFFINE, "bn", v);
  l->weight_count = 8;
  v = graphs_value(m, graphs_add(m, MODEL_HARDSWISH, "hswish", graphs_value(m, l)));
  v = graphs_value(m, graphs_conv(m, "conv", v, 8, 1, model_window_of(3, 3, 1, 1)));
  const int residual[2] = {v, gated};
  v = graphs_value(m, graphs_join(m, MODEL_ADD, "residual", 2, residual));
  const int block = graphs_value(m, graphs_add(m, MODEL_RELU, "relu", v)); /* 8 x 18 x 9 */
  /* 8 x 10 x 5: padding counted, a last window past it (ceil) */
  const int counted = graphs_value(m, pool(m, MODEL_AVGPOOL, "avg_counted_ceil", block,
                                           model_window_of(3, 3, 2, 1), 1, 1));
  /* 8 x 9 x 5 */
  const int maxed = graphs_value(m, pool(m, MODEL_MAXPOOL, "max_ceil", block,
                                         model_window_of(2, 2, 2, 0), 0, 1));
  /* 8 x 9 x 5: uneven padding not counted */
  v = graphs_value(m, pool(m, MODEL_AVGPOOL, "avg_uneven", maxed,
                           graphs_window(2, 3, 1, 1, 0, 1, 1, 1, 1, 1), 0, 0));
  const int relu = graphs_value(m, graphs_add(m, MODEL_RELU, "relu_alone", v));
  /* a gate of C x 1 x 1 from the whole map, and a scalar from the input's */
  const int squeezed = graphs_value(m, pool(m, MODEL_AVGPOOL, "gap", block,
                                            model_window_of(18, 9, 1, 0), 1, 0));
  v = graphs_value(m, graphs_conv(m, "squeeze", squeezed, 8, 1, model_window_of(1, 1, 1, 0)));
  l = graphs_add(m, MODEL_CLIP, "clip", v);
  l->p.clip.lo = -0.5f, l->p.clip.hi = 0.5f;
  const int minus[2] = {relu, graphs_value(m, l)};
  const int diff = graphs_value(m, graphs_join(m, MODEL_SUB, "sub_channels", 2, minus));
  v = graphs_value(m, pool(m, MODEL_AVGPOOL, "input_mean", 0, model_window_of(19, 17, 1, 0), 0,
                           0));
  const int scalar = graphs_value(m, graphs_conv(m, "to_one", v, 1, 1,
                                                 model_window_of(1, 1, 1, 0)));
  const int times[2] = {diff, scalar};
  v = graphs_value(m, graphs_join(m, MODEL_MUL, "mul_scalar", 2, times));
  l = graphs_add(m, MODEL_ELU, "elu", v);
  l->p.elu.alpha = 0.8f;
  const int elu = graphs_value(m, l);
  l = graphs_add(m, MODEL_HARDSIGMOID, "hardsigmoid", maxed); /* 0.5 .. 1: maxed >= 0 */
  l->p.hard.alpha = 0.2f, l->p.hard.beta = 0.5f;
  const int over[2] = {elu, graphs_value(m, l)};
  v = graphs_value(m, graphs_join(m, MODEL_DIV, "div", 2, over));
  const int positive = graphs_value(m, graphs_add(m, MODEL_SOFTPLUS, "softplus", squeezed));
  const int over_channels[2] = {v, positive};
  v = graphs_value(m, graphs_join(m, MODEL_DIV, "div_channels", 2, over_channels));
  const int four[4] = {v, maxed, diff, scalar};
  v = graphs_value(m, graphs_join(m, MODEL_ADD, "add_four", 4, four)); /* 8 x 9 x 5 */
  v = graphs_value(m, graphs_add(m, MODEL_GELU, "gelu", v));
  v = graphs_value(m, graphs_add(m, MODEL_ERF, "erf", v));
  v = graphs_value(m, graphs_add(m, MODEL_MISH, "mish", v));
  l = graphs_add(m, MODEL_PRELU, "prelu_channels", v);
  l->weight_count = 8;
  const int prelu = graphs_value(m, l);
  /* 6 x 9 x 5 every other row and column, padded to 8 channels */
  v = graphs_value(m, slice(m, "steps", block, 2, 8, 0, 18, 2, 0, 9, 2));
  l = graphs_add(m, MODEL_PAD, "pad_channels", v);
  l->p.pad.c0 = 1, l->p.pad.c1 = 1, l->p.pad.value = 0.25f;
  const int cat[3] = {prelu, graphs_value(m, l),
                      graphs_value(m, slice(m, "rows", counted, 0, 8, 1, 10, 1, 0, 5, 1))};
  v = graphs_value(m, graphs_join(m, MODEL_CONCAT, "concat", 3, cat)); /* 24 x 9 x 5 */
  l = graphs_add(m, MODEL_SHUFFLE, "shuffle", v);
  l->p.shuffle.groups = 3;
  l = graphs_add(m, MODEL_AFFINE, "scale_all", graphs_value(m, l));
  l->weight_count = 1;
  l = graphs_add(m, MODEL_LRN, "lrn", graphs_value(m, l));
  l->p.lrn.n = 3, l->p.lrn.alpha = 1e-2, l->p.lrn.beta = 0.75, l->p.lrn.k = 2;
  v = graphs_value(m, graphs_conv(m, "mixer", graphs_value(m, l), 12, 1,
                                  model_window_of(3, 3, 1, 1)));
  l = graphs_add(m, MODEL_PRELU, "prelu_one", v);
  l->weight_count = 1;
  l = graphs_add(m, MODEL_PAD, "pad_rows", graphs_value(m, l)); /* 12 x 10 x 6 */
  l->p.pad.h0 = 1, l->p.pad.w1 = 1, l->p.pad.value = -0.5f;
  l = model_add(m, MODEL_RESHAPE, "reshape", &e); /* read as 20 x 9 x 4 */
  l->p.reshape = (model_shape){20, 9, 4};
  model_add(m, MODEL_AFFINE, "per_channel", &e)->weight_count = 20;
  graphs_head(m, 9, rng);
  return m;
}

void graphs_every(int blocks, test_rng* rng, model* models[GRAPHS_COUNT],
                  char names[GRAPHS_COUNT][48]) {
  snprintf(names[0], 48, "resnet, %d blocks a stage", blocks);
  snprintf(names[1], 48, "mobilenet-like");
  snprintf(names[2], 48, "densenet-like");
  snprintf(names[3], 48, "option-A shortcut");
  snprintf(names[4], 48, "every layer kind");
  snprintf(names[5], 48, "depthwise, NHWC widths");
  models[0] = graphs_resnet(blocks, rng);
  models[1] = graphs_mobilenet(rng);
  models[2] = graphs_densenet(rng);
  models[3] = graphs_option_a(rng);
  models[4] = graphs_zoo(rng);
  models[5] = graphs_depthwise(rng);
}
