/* Models that are graphs, not chains (model/model.h): the layers of residual, depthwise,
   squeeze-and-excitation, dense, shuffled and option-A networks, built here with random weights
   on odd input sizes, run by the CPU engine (the whole augmented pass, one copy) against this
   file's own textbook forward pass in double: every class probability within 1e-5. The
   windows' every variant (groups, dilation, uneven padding, two strides, ceil mode, padding
   counted or not) against PyTorch's rules for their output sizes; the values' arena
   (model/plan.h): no two values alive at once share a float, and a ResNet-like graph's arena is
   at most a quarter of its values' sum; refusals: a shape mismatch at an Add or a Concat, an
   input that is not an earlier value; the engines that run chains alone refuse a graph with one
   line naming the layer. */
#include <math.h>
#include <string.h>

#include "augment/tta.h"
#include "model/model.h"
#include "model/plan.h"
#include "pipeline/engine.h"
#include "tests/common/check.h"

#define ATOL 1e-5
#define RTOL 1e-5

/* ---- building ------------------------------------------------------------------------------ */

static model_layer* add(model* m, model_op op, const char* name, int input) {
  ttp_err e = {0};
  model_layer* l = model_add(m, op, name, &e);
  CHECK(l, "%s", e.message);
  l->inputs[0] = input;
  return l;
}

/* The value this layer makes. */
static int value_of(const model* m, const model_layer* l) { return (int)(l - m->layers) + 1; }

static model_layer* conv(model* m, const char* name, int input, int k, int groups, model_window w) {
  model_layer* l = add(m, MODEL_CONV, name, input);
  l->p.conv.k = k, l->p.conv.groups = groups, l->p.conv.w = w;
  return l;
}

static model_layer* join(model* m, model_op op, const char* name, int n, const int* inputs) {
  model_layer* l = add(m, op, name, inputs[0]);
  for (int k = 0; k < n; k++) l->inputs[k] = inputs[k];
  l->input_count = n;
  return l;
}

static model_window win(int r, int s, int sh, int sw, int pt, int pl, int pb, int pr, int dh,
                        int dw) {
  return (model_window){r, s, sh, sw, pt, pl, pb, pr, dh, dw};
}

/* Shapes, then random weights for every layer that has them. */
static void finish(model* m, test_rng* rng) {
  ttp_err e = {0};
  CHECK(model_infer_shapes(m, &e) == TTP_OK, "%s", e.message);
  for (int i = 0; i < m->layer_count; i++) {
    model_layer* l = &m->layers[i];
    if (l->weight_count) {
      l->weights = malloc(l->weight_count * sizeof(float));
      const double fan = l->op == MODEL_FC ? (double)model_shape_size(l->in)
                         : l->op == MODEL_CONV ? (double)l->weight_count / l->p.conv.k
                                               : 1.0;
      const double lo = l->op == MODEL_AFFINE ? 0.5 : -1.5 / sqrt(fan);
      const double hi = l->op == MODEL_AFFINE ? 1.5 : l->op == MODEL_PRELU ? 0.4 : 1.5 / sqrt(fan);
      test_fill_uniform(rng, l->weights, l->weight_count, lo, hi);
    }
    if (l->bias_count) {
      l->bias = malloc(l->bias_count * sizeof(float));
      test_fill_uniform(rng, l->bias, l->bias_count, -0.3, 0.3);
    }
  }
  CHECK(model_check(m, &e) == TTP_OK, "%s", e.message);
}

/* ---- the textbook forward pass in double ---------------------------------------------------- */

static double at(const double* x, model_shape s, int c, int y, int xx) {
  return x[((size_t)c * s.h + y) * s.w + xx];
}

static void ref_layer(const model* m, const model_layer* l, double* const* v, double* out) {
  const double* x = v[l->inputs[0]];
  const model_shape s = l->in, o = l->out;
  const size_t n = model_shape_size(o);
  switch (l->op) {
    case MODEL_CONV: {
      const model_window* w = &l->p.conv.w;
      const int g = l->p.conv.groups ? l->p.conv.groups : 1, cg = s.c / g, kg = l->p.conv.k / g;
      for (int k = 0; k < o.c; k++)
        for (int p = 0; p < o.h; p++)
          for (int q = 0; q < o.w; q++) {
            double sum = l->bias ? l->bias[k] : 0;
            for (int c = 0; c < cg; c++)
              for (int r = 0; r < w->r; r++)
                for (int t = 0; t < w->s; t++) {
                  const int y = p * w->stride_h + r * w->dil_h - w->pad_t;
                  const int xx = q * w->stride_w + t * w->dil_w - w->pad_l;
                  if (y < 0 || y >= s.h || xx < 0 || xx >= s.w) continue;
                  sum += l->weights[(((size_t)k * cg + c) * w->r + r) * w->s + t] *
                         at(x, s, k / kg * cg + c, y, xx);
                }
            out[((size_t)k * o.h + p) * o.w + q] = sum;
          }
      return;
    }
    case MODEL_MAXPOOL:
    case MODEL_AVGPOOL: {
      const model_window* w = &l->p.pool.w;
      for (int c = 0; c < o.c; c++)
        for (int p = 0; p < o.h; p++)
          for (int q = 0; q < o.w; q++) {
            double best = -INFINITY, sum = 0;
            int inside = 0, padded = 0;
            for (int r = 0; r < w->r; r++)
              for (int t = 0; t < w->s; t++) {
                const int y = p * w->stride_h + r - w->pad_t, xx = q * w->stride_w + t - w->pad_l;
                padded += y < s.h + w->pad_b && xx < s.w + w->pad_r; /* PyTorch's divisor */
                if (y < 0 || y >= s.h || xx < 0 || xx >= s.w) continue;
                const double val = at(x, s, c, y, xx);
                best = val > best ? val : best, sum += val, inside++;
              }
            out[((size_t)c * o.h + p) * o.w + q] =
                l->op == MODEL_MAXPOOL ? best : sum / (l->p.pool.count_pad ? padded : inside);
          }
      return;
    }
    case MODEL_FC:
      for (int k = 0; k < o.c; k++) {
        double sum = l->bias ? l->bias[k] : 0;
        for (size_t i = 0; i < model_shape_size(s); i++)
          sum += l->weights[(size_t)k * model_shape_size(s) + i] * x[i];
        out[k] = sum;
      }
      return;
    case MODEL_SOFTMAX: {
      double most = -INFINITY, sum = 0;
      for (size_t i = 0; i < n; i++) most = x[i] > most ? x[i] : most;
      for (size_t i = 0; i < n; i++) sum += out[i] = exp(x[i] - most);
      for (size_t i = 0; i < n; i++) out[i] /= sum;
      return;
    }
    case MODEL_ADD:
    case MODEL_SUB:
    case MODEL_MUL:
    case MODEL_DIV:
      for (size_t i = 0; i < n; i++) {
        double acc = x[i];
        for (int k = 1; k < l->input_count; k++) {
          const model_shape b = model_value_shape(m, l->inputs[k]);
          const double y = b.h == o.h && b.w == o.w && b.c == o.c ? v[l->inputs[k]][i]
                           : b.c == 1 ? v[l->inputs[k]][0]
                                      : v[l->inputs[k]][i / ((size_t)o.h * o.w)];
          acc = l->op == MODEL_ADD ? acc + y : l->op == MODEL_SUB ? acc - y
                : l->op == MODEL_MUL ? acc * y : acc / y;
        }
        out[i] = acc;
      }
      return;
    case MODEL_CONCAT: {
      size_t o_at = 0;
      for (int k = 0; k < l->input_count; k++) {
        const size_t len = model_shape_size(model_value_shape(m, l->inputs[k]));
        memcpy(out + o_at, v[l->inputs[k]], len * sizeof *out);
        o_at += len;
      }
      return;
    }
    case MODEL_SLICE:
      for (int c = 0; c < o.c; c++)
        for (int y = 0; y < o.h; y++)
          for (int xx = 0; xx < o.w; xx++)
            out[((size_t)c * o.h + y) * o.w + xx] =
                at(x, s, l->p.slice.c0 + c, l->p.slice.h0 + y * l->p.slice.step_h,
                   l->p.slice.w0 + xx * l->p.slice.step_w);
      return;
    case MODEL_PAD:
      for (int c = 0; c < o.c; c++)
        for (int y = 0; y < o.h; y++)
          for (int xx = 0; xx < o.w; xx++) {
            const int ci = c - l->p.pad.c0, yi = y - l->p.pad.h0, xi = xx - l->p.pad.w0;
            out[((size_t)c * o.h + y) * o.w + xx] =
                ci < 0 || ci >= s.c || yi < 0 || yi >= s.h || xi < 0 || xi >= s.w
                    ? l->p.pad.value : at(x, s, ci, yi, xi);
          }
      return;
    case MODEL_RESHAPE:
      memcpy(out, x, n * sizeof *out);
      return;
    case MODEL_SHUFFLE: { /* a reshape to (g, C/g), a transpose, a reshape back */
      const int g = l->p.shuffle.groups, per = s.c / g;
      for (int c = 0; c < s.c; c++)
        for (int i = 0; i < s.h * s.w; i++)
          out[(size_t)((c % per) * g + c / per) * s.h * s.w + i] = x[(size_t)c * s.h * s.w + i];
      return;
    }
    default:
      break;
  }
  const size_t plane = (size_t)s.h * s.w;
  for (size_t i = 0; i < n; i++) {
    const double t = x[i];
    const int c = (int)(i / plane);
    double y;
    switch (l->op) {
      case MODEL_RELU: y = t > 0 ? t : 0; break;
      case MODEL_CLIP: y = t < l->p.clip.lo ? l->p.clip.lo : t > l->p.clip.hi ? l->p.clip.hi : t; break;
      case MODEL_SIGMOID: y = 1 / (1 + exp(-t)); break;
      case MODEL_TANH: y = tanh(t); break;
      case MODEL_LEAKY_RELU: y = t >= 0 ? t : l->p.leaky.alpha * t; break;
      case MODEL_AFFINE: {
        const int j = l->weight_count == 1 ? 0 : c;
        y = t * l->weights[j] + (l->bias ? l->bias[j] : 0);
        break;
      }
      case MODEL_PRELU: y = t >= 0 ? t : l->weights[l->weight_count == 1 ? 0 : c] * t; break;
      case MODEL_HARDSWISH: y = t * fmin(fmax(t + 3, 0), 6) / 6; break;
      case MODEL_HARDSIGMOID: y = fmin(fmax(l->p.hard.alpha * t + l->p.hard.beta, 0), 1); break;
      case MODEL_GELU: y = t * (1 + erf(t / sqrt(2))) / 2; break;
      case MODEL_ERF: y = erf(t); break;
      case MODEL_ELU: y = t > 0 ? t : l->p.elu.alpha * (exp(t) - 1); break;
      case MODEL_SOFTPLUS: y = log(1 + exp(t)); break;
      case MODEL_MISH: y = t * tanh(log(1 + exp(t))); break;
      default: CHECK(0, "layer %s: no reference for %s", l->name, model_op_name(l->op));
    }
    out[i] = y;
  }
}

/* The model on image (pixels / 255, one channel after another) into probs. */
static void ref_forward(const model* m, const uint8_t* image, double* probs) {
  double** v = calloc((size_t)m->layer_count + 1, sizeof *v);
  v[0] = malloc(model_shape_size(m->input) * sizeof **v);
  for (size_t i = 0; i < model_shape_size(m->input); i++) v[0][i] = image[i] / 255.0;
  for (int i = 0; i < m->layer_count; i++) {
    v[i + 1] = malloc(model_shape_size(m->layers[i].out) * sizeof **v);
    ref_layer(m, &m->layers[i], v, v[i + 1]);
  }
  memcpy(probs, v[m->layer_count], (size_t)m->classes * sizeof *probs);
  for (int i = 0; i <= m->layer_count; i++) free(v[i]);
  free(v);
}

/* ---- the checks ------------------------------------------------------------------------------ */

/* The CPU engine on `images` random images of m against ref_forward; the plan's arena. */
static void check_model(const char* what, model* m, test_rng* rng, int images) {
  const engine_entry* cpu = engine_find(TTP_ENGINE_CPU);
  ttp_tta tta;
  ttp_tta_init(&tta);
  engine_config c = {.threads = 2, .max_batch = images};
  float temperature;
  ttp_err e = {0};
  CHECK(aug_spec_from(&tta, &c.spec, &c.merge, &temperature, &e) == TTP_OK, "%s", e.message);
  void* state;
  CHECK(cpu->host->open(m, &c, &state, &e) == TTP_OK, "%s: %s", what, e.message);
  const size_t pixels = model_shape_size(m->input), classes = (size_t)m->classes;
  uint8_t* x = malloc((size_t)images * pixels);
  for (size_t i = 0; i < (size_t)images * pixels; i++) x[i] = (uint8_t)test_int(rng, 0, 255);
  ttp_result* results = calloc((size_t)images, sizeof *results);
  float* got = malloc((size_t)images * classes * sizeof *got);
  test_poison(got, (size_t)images * classes);
  CHECK(cpu->host->run(state, x, (size_t)images, results, got, NULL, &e) == TTP_OK, "%s: %s",
        what, e.message);
  double* want = malloc((size_t)images * classes * sizeof *want);
  for (int i = 0; i < images; i++) ref_forward(m, x + (size_t)i * pixels, want + (size_t)i * classes);
  const size_t bad = test_compare(what, got, want, (size_t)images * classes, ATOL, RTOL);
  CHECK(bad == 0, "%s: %zu probabilities off the reference", what, bad);
  double spread = 0; /* the probabilities must vary, or the comparison says little */
  for (size_t i = 0; i < (size_t)images * classes; i++) spread = fmax(spread, fabs(want[i] - want[0]));
  CHECK(spread > 0.01, "%s: every probability alike (%g)", what, spread);
  cpu->host->close(state);

  model_plan plan;
  CHECK(model_plan_values(m, &plan, &e) == TTP_OK, "%s", e.message);
  /* Values alive at once never share a float: v is alive from its making to its last reader. */
  const int values = m->layer_count + 1;
  for (int a = 0; a < values; a++)
    for (int b = a + 1; b < values; b++) {
      int last_a = a == 0 ? m->layer_count : a - 1;
      for (int i = 0; i < m->layer_count; i++)
        for (int k = 0; k < m->layers[i].input_count; k++)
          if (m->layers[i].inputs[k] == a && i > last_a) last_a = i;
      if (a == 0) last_a = m->layer_count;
      if (last_a < b - 1) continue; /* a is dead before b is made */
      const size_t a0 = plan.offsets[a], a1 = a0 + model_shape_size(model_value_shape(m, a));
      const size_t b0 = plan.offsets[b], b1 = b0 + model_shape_size(model_value_shape(m, b));
      CHECK(a1 <= b0 || b1 <= a0, "%s: values %d and %d overlap in the arena", what, a, b);
      CHECK(a1 <= plan.arena && b1 <= plan.arena, "%s: a value past the arena", what);
    }
  printf("%s: %d layers, %d images within %g of the reference; arena %zu of %zu floats\n", what,
         m->layer_count, images, ATOL, plan.arena, plan.sum);
  model_plan_free(&plan);
  free(x), free(results), free(got), free(want);
}

/* A CIFAR-like residual network: stem, basic blocks (conv, BatchNorm kept as an affine, ReLU,
   conv, affine, the shortcut's Add), a strided block with a 1x1 projection, global average
   pooling as a window of the whole map, fc, softmax. blocks: per stage. */
static model* resnet(int blocks, test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 17, 15}, &e);
  int v = value_of(m, conv(m, "stem", 0, 8, 1, model_window_of(3, 3, 1, 1)));
  v = value_of(m, add(m, MODEL_RELU, "stem_relu", v));
  int width = 8;
  for (int stage = 0; stage < 3; stage++)
    for (int b = 0; b < blocks; b++) {
      const int stride = stage > 0 && b == 0 ? 2 : 1, out = 8 << stage;
      char name[32];
      snprintf(name, sizeof name, "s%db%d_conv1", stage, b);
      int y = value_of(m, conv(m, name, v, out, 1, model_window_of(3, 3, stride, 1)));
      model_layer* bn = add(m, MODEL_AFFINE, "bn1", y);
      bn->weight_count = (size_t)out;
      y = value_of(m, add(m, MODEL_RELU, "relu1", value_of(m, bn)));
      y = value_of(m, conv(m, "conv2", y, out, 1, model_window_of(3, 3, 1, 1)));
      bn = add(m, MODEL_AFFINE, "bn2", y);
      bn->weight_count = 1; /* one scale for every channel */
      y = value_of(m, bn);
      const int shortcut = out == width ? v : value_of(m, conv(m, "proj", v, out, 1,
                                                                 model_window_of(1, 1, stride, 0)));
      const int pair[2] = {y, shortcut};
      v = value_of(m, add(m, MODEL_RELU, "relu2", value_of(m, join(m, MODEL_ADD, "add", 2, pair))));
      width = out;
    }
  model_layer* pool = add(m, MODEL_AVGPOOL, "gap", v);
  pool->p.pool.w = model_window_of(5, 4, 1, 0); /* the whole 5 x 4 map */
  model_add(m, MODEL_FC, "fc", &e)->p.fc.out = 10;
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  finish(m, rng);
  return m;
}

/* MobileNetV2-like: a 1x1 projection, an inverted residual (1x1 expand, ReLU6, 3x3 depthwise,
   HardSwish, squeeze-and-excitation: global pooling, 1x1 convs, HardSigmoid, the gate's Mul),
   1x1 project, the residual Add with a third, scalar input; ReduceMean as a global pooling. */
static model* mobilenet(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 16, 14}, &e);
  const int in = value_of(m, conv(m, "first", 0, 6, 1, model_window_of(1, 1, 1, 0)));
  int v = value_of(m, conv(m, "expand", in, 18, 1, model_window_of(1, 1, 1, 0)));
  model_layer* l = add(m, MODEL_CLIP, "relu6", v);
  l->p.clip.lo = 0, l->p.clip.hi = 6;
  v = value_of(m, conv(m, "depthwise", value_of(m, l), 18, 18, model_window_of(3, 3, 1, 1)));
  const int dw = value_of(m, add(m, MODEL_HARDSWISH, "hswish", v));
  l = add(m, MODEL_AVGPOOL, "squeeze", dw);
  l->p.pool.w = model_window_of(16, 14, 1, 0);
  v = value_of(m, conv(m, "se_reduce", value_of(m, l), 4, 1, model_window_of(1, 1, 1, 0)));
  v = value_of(m, add(m, MODEL_RELU, "se_relu", v));
  v = value_of(m, conv(m, "se_expand", v, 18, 1, model_window_of(1, 1, 1, 0)));
  l = add(m, MODEL_HARDSIGMOID, "se_gate", v);
  l->p.hard.alpha = 1.0f / 6, l->p.hard.beta = 0.5f;
  const int gate[2] = {dw, value_of(m, l)};
  v = value_of(m, join(m, MODEL_MUL, "excite", 2, gate));
  v = value_of(m, conv(m, "project", v, 6, 1, model_window_of(1, 1, 1, 0)));
  l = add(m, MODEL_AVGPOOL, "scalar", 0); /* 1 x 1 x 1: the input's mean, a scalar to add */
  l->p.pool.w = model_window_of(16, 14, 1, 0);
  l = add(m, MODEL_CONV, "to_one", value_of(m, l));
  l->p.conv.k = 1, l->p.conv.groups = 1, l->p.conv.w = model_window_of(1, 1, 1, 0);
  const int three[3] = {v, in, value_of(m, l)};
  v = value_of(m, join(m, MODEL_ADD, "residual", 3, three));
  l = add(m, MODEL_AVGPOOL, "mean", v);
  l->p.pool.w = model_window_of(16, 14, 1, 0);
  model_add(m, MODEL_FC, "fc", &e)->p.fc.out = 7;
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  finish(m, rng);
  return m;
}

/* DenseNet-like and the other layers: uneven padding, dilation, GELU, Concat of feature maps,
   an affine after the Concat, ELU, Mish, max pooling in ceil mode, average pooling of uneven
   padding not counted, PReLU, Softplus, Erf, a shuffle, a Split's slice, a channel and row Pad,
   the Sub and Div of two values, a reshape and an affine over its new channels, fc, softmax. */
static model* densenet(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){1, 13, 11}, &e);
  /* conv0's uneven padding: 13 + 1 + 0 - 3 + 1 = 12 rows, 11 + 1 + 2 - 3 + 1 = 12 columns. */
  int v = value_of(m, conv(m, "conv0", 0, 4, 1, win(3, 3, 1, 1, 1, 1, 0, 2, 1, 1)));
  const int c0 = value_of(m, add(m, MODEL_GELU, "gelu", v));
  /* The input cropped to 12 rows and widened to 12 columns, to join conv0's maps. */
  model_layer* l = add(m, MODEL_SLICE, "crop", 0);
  l->p.slice.c0 = 0, l->p.slice.c1 = 1, l->p.slice.h0 = 1, l->p.slice.h1 = 13;
  l->p.slice.w0 = 0, l->p.slice.w1 = 11, l->p.slice.step_h = l->p.slice.step_w = 1;
  l = add(m, MODEL_PAD, "widen", value_of(m, l));
  l->p.pad.w1 = 1, l->p.pad.value = 0.125f;
  const int first[2] = {c0, value_of(m, l)};
  const int cat1 = value_of(m, join(m, MODEL_CONCAT, "cat1", 2, first));
  l = add(m, MODEL_AFFINE, "bn", cat1);
  l->weight_count = 5;
  l = add(m, MODEL_ELU, "elu", value_of(m, l));
  l->p.elu.alpha = 0.7f;
  v = value_of(m, conv(m, "dilated", value_of(m, l), 4, 1, win(3, 3, 1, 1, 2, 2, 2, 2, 2, 2)));
  const int both[2] = {cat1, value_of(m, add(m, MODEL_MISH, "mish", v))};
  v = value_of(m, join(m, MODEL_CONCAT, "cat2", 2, both)); /* 9 x 12 x 12 */
  l = add(m, MODEL_MAXPOOL, "pool_ceil", v);               /* 9 x 6 x 6 */
  l->p.pool.w = model_window_of(3, 3, 2, 0), l->p.pool.ceil = 1;
  l = add(m, MODEL_AVGPOOL, "pool_uneven", value_of(m, l)); /* 9 x 3 x 6 */
  l->p.pool.w = win(2, 2, 2, 1, 0, 1, 1, 0, 1, 1), l->p.pool.count_pad = 0, l->p.pool.ceil = 1;
  l = add(m, MODEL_PRELU, "prelu", value_of(m, l));
  l->weight_count = 9;
  const int sp = value_of(m, add(m, MODEL_SOFTPLUS, "softplus", value_of(m, l)));
  v = value_of(m, add(m, MODEL_ERF, "erf", sp));
  l = add(m, MODEL_SHUFFLE, "shuffle", v);
  l->p.shuffle.groups = 3;
  l = add(m, MODEL_SLICE, "split", value_of(m, l)); /* channels 3..8: 6 x 3 x 6 */
  l->p.slice.c0 = 3, l->p.slice.c1 = 9, l->p.slice.h1 = 3, l->p.slice.w1 = 6;
  l->p.slice.step_h = l->p.slice.step_w = 1;
  l = add(m, MODEL_PAD, "pad", value_of(m, l)); /* 9 x 4 x 6 */
  l->p.pad.c0 = 1, l->p.pad.c1 = 2, l->p.pad.h0 = 1, l->p.pad.value = -0.25f;
  const int padded = value_of(m, l);
  l = add(m, MODEL_PAD, "softplus_pad", sp); /* 9 x 4 x 6 */
  l->p.pad.h1 = 1, l->p.pad.value = 0.5f;
  const int diff[2] = {padded, value_of(m, l)};
  v = value_of(m, join(m, MODEL_SUB, "sub", 2, diff));
  const int ratio[2] = {v, value_of(m, add(m, MODEL_SIGMOID, "positive", v))};
  join(m, MODEL_DIV, "div", 2, ratio);
  l = model_add(m, MODEL_RESHAPE, "reshape", &e); /* 9 x 4 x 6 read as 24 x 9 x 1 */
  l->p.reshape = (model_shape){24, 9, 1};
  model_add(m, MODEL_AFFINE, "per_row", &e)->weight_count = 24;
  model_add(m, MODEL_FC, "fc", &e)->p.fc.out = 5;
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  finish(m, rng);
  return m;
}

/* ResNet's option-A shortcut: x[:, :, ::2, ::2] padded with zero channels, added to a strided
   block's output. */
static model* option_a(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 15, 16}, &e);
  int x = value_of(m, conv(m, "stem", 0, 4, 1, model_window_of(3, 3, 1, 1)));
  x = value_of(m, add(m, MODEL_RELU, "relu", x));
  int y = value_of(m, conv(m, "down", x, 8, 1, model_window_of(3, 3, 2, 1)));
  model_layer* l = add(m, MODEL_SLICE, "every_other", x);
  l->p.slice.c0 = 0, l->p.slice.c1 = 4, l->p.slice.h1 = 15, l->p.slice.w1 = 16;
  l->p.slice.step_h = l->p.slice.step_w = 2;
  l = add(m, MODEL_PAD, "zero_channels", value_of(m, l));
  l->p.pad.c0 = l->p.pad.c1 = 2;
  const int pair[2] = {y, value_of(m, l)};
  y = value_of(m, join(m, MODEL_ADD, "add", 2, pair));
  add(m, MODEL_RELU, "relu2", y);
  model_add(m, MODEL_FC, "fc", &e)->p.fc.out = 10;
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  finish(m, rng);
  return m;
}

/* Output sizes against PyTorch's rules, computed here: floor or ceil of (n + pads - span) /
   stride, + 1; in ceil mode a last window that would start in the trailing padding is dropped. */
static void check_windows(void) {
  static const struct {
    int n, f, stride, lo, hi, dil, ceil, want;
  } cases[] = {
      {7, 2, 2, 0, 0, 1, 0, 3}, {7, 2, 2, 0, 0, 1, 1, 4}, {6, 3, 2, 1, 1, 1, 1, 4},
      {5, 3, 2, 1, 1, 1, 1, 3}, {8, 3, 1, 2, 2, 2, 0, 8}, {4, 2, 3, 1, 0, 1, 1, 2},
      {13, 3, 2, 0, 0, 1, 1, 6}, {10, 5, 1, 0, 1, 1, 0, 7},
  };
  ttp_err e = {0};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    model* m = model_new((model_shape){2, cases[i].n, 9}, &e);
    model_layer* l = model_add(m, MODEL_MAXPOOL, "pool", &e);
    l->p.pool.w = win(cases[i].f, 1, cases[i].stride, 1, cases[i].lo, 0, cases[i].hi, 0, 1, 1);
    l->p.pool.ceil = cases[i].ceil;
    if (cases[i].dil > 1) { /* dilation: a convolution's */
      l->op = MODEL_CONV, l->p.conv.k = 2, l->p.conv.groups = 1;
      l->p.conv.w = win(cases[i].f, 1, cases[i].stride, 1, cases[i].lo, 0, cases[i].hi, 0,
                        cases[i].dil, 1);
    }
    model_add(m, MODEL_SOFTMAX, "softmax", &e);
    CHECK(model_infer_shapes(m, &e) == TTP_OK, "case %zu: %s", i, e.message);
    CHECK(m->layers[0].out.h == cases[i].want, "case %zu: %d rows, PyTorch gives %d", i,
          m->layers[0].out.h, cases[i].want);
    model_free(m);
  }
}

static void expect_refused(model* m, const char* fragment) {
  ttp_err e = {0};
  CHECK(model_infer_shapes(m, &e) == TTP_ERR_MODEL, "accepted, wanted \"%s\"", fragment);
  EXPECT_MESSAGE(e.message, fragment);
  model_free(m);
}

static void check_refusals(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 8, 8}, &e);
  int a = value_of(m, conv(m, "a", 0, 4, 1, model_window_of(3, 3, 1, 1)));
  int b = value_of(m, conv(m, "b", 0, 4, 1, model_window_of(3, 3, 2, 1)));
  int pair[2] = {a, b};
  join(m, MODEL_ADD, "sum", 2, pair);
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "layer sum: add of 4x8x8 and 4x4x4 (a shape mismatch");
  m = model_new((model_shape){3, 8, 8}, &e);
  a = value_of(m, conv(m, "a", 0, 4, 1, model_window_of(3, 3, 1, 1)));
  b = value_of(m, conv(m, "b", 0, 4, 1, model_window_of(3, 3, 2, 1)));
  pair[0] = a, pair[1] = b;
  join(m, MODEL_CONCAT, "cat", 2, pair);
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "layer cat: concatenation of 8x8 and 4x4 maps (a shape mismatch)");
  m = model_new((model_shape){3, 8, 8}, &e);
  add(m, MODEL_RELU, "ahead", 2); /* reads a later value: a cycle in any file's graph */
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "layer ahead: input 0 is value 2, not one made before it");
  m = model_new((model_shape){4, 8, 8}, &e);
  conv(m, "grouped", 0, 6, 4, model_window_of(3, 3, 1, 1));
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "layer grouped: bad convolution of 6 outputs in 4 groups over 4 channels");

  /* An engine that runs chains alone refuses a graph, naming the layer. */
  m = option_a(rng);
  engine_config c = {.threads = 1};
  const engine_entry* onednn = engine_find(TTP_ENGINE_ONEDNN);
  if (onednn->supports) {
    CHECK(engine_check_model(onednn, m, &c, &e) == TTP_ERR_MODEL, "onednn took a graph");
    EXPECT_MESSAGE(e.message, "engine onednn runs chains of layers alone", "layer every_other");
  }
  e = (ttp_err){0};
  CHECK(engine_check_model(engine_find(TTP_ENGINE_CPU), m, &c, &e) == TTP_OK, "%s", e.message);
  model_free(m);
}

int main(void) {
  test_rng rng = {40};
  check_windows();
  check_refusals(&rng);
  model* m = resnet(3, &rng); /* ResNet-20's layout, narrower */
  check_model("resnet, 3 blocks a stage", m, &rng, 5);
  model_plan plan;
  ttp_err e = {0};
  CHECK(model_plan_values(m, &plan, &e) == TTP_OK, "%s", e.message);
  CHECK(plan.arena * 4 <= plan.sum, "resnet: an arena of %zu floats, more than a quarter of the "
        "values' %zu", plan.arena, plan.sum);
  model_plan_free(&plan);
  model_free(m);
  m = mobilenet(&rng);
  check_model("mobilenet-like", m, &rng, 4);
  model_free(m);
  m = densenet(&rng);
  check_model("densenet-like and the other layers", m, &rng, 6);
  model_free(m);
  m = option_a(&rng);
  check_model("option-A shortcut", m, &rng, 3);
  model_free(m);
  printf("graph: every layer kind against the reference, arenas and refusals as expected\n");
  return 0;
}
