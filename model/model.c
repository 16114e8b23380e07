/* The model's layer list: construction, the table of layer kinds (shape rules, weight sizes,
   descriptions) and the checks that let engines trust what they are given. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep every size computation far from overflow and refuse absurd layers. */
enum { MAX_DIM = 1 << 14, MAX_CHANNELS = 1 << 16, MAX_FILTER = 128, MAX_STRIDE = 64, MAX_PAD = 64 };
#define MAX_TENSOR ((long long)1 << 26) /* floats in one image's activation */

static int in_range(long long v, long long lo, long long hi) { return v >= lo && v <= hi; }

static ttp_status check_tensor(const model_layer* l, model_shape s, ttp_err* e) {
  long long n = (long long)s.c * s.h * s.w;
  if (s.c < 1 || s.h < 1 || s.w < 1 || n > MAX_TENSOR)
    return ERR(e, TTP_ERR_MODEL, "layer %s: output %dx%dx%d is empty or too large", l->name, s.c,
               s.h, s.w);
  return TTP_OK;
}

/* ---- the kinds: each infers the output shape from l->in and sets the weight sizes ---------- */

/* A window's output size along one axis of n input positions: positions f apart over the
   input padded by lo and hi, every stride-th; rounded up (ceil), a last window that starts in
   the input or its leading padding counts. 0 when even the first does not fit. */
static int window_out(int n, int f, int dil, int stride, int lo, int hi, int ceil) {
  const long long span = (long long)dil * (f - 1) + 1, padded = (long long)n + lo + hi;
  if (span > padded) return 0;
  long long out = (padded - span + (ceil ? stride - 1 : 0)) / stride + 1;
  if (ceil && (out - 1) * stride >= (long long)n + lo) out--; /* a window in the padding alone */
  return (int)out;
}

/* The window's ranges, and its output shape of c channels into *out. */
static ttp_status window_infer(const model_layer* l, const model_window* w, int c, int ceil,
                               int pooling, model_shape* out, ttp_err* e) {
  if (!in_range(w->r, 1, MAX_FILTER) || !in_range(w->s, 1, MAX_FILTER) ||
      !in_range(w->stride_h, 1, MAX_STRIDE) || !in_range(w->stride_w, 1, MAX_STRIDE) ||
      !in_range(w->pad_t, 0, MAX_PAD) || !in_range(w->pad_l, 0, MAX_PAD) ||
      !in_range(w->pad_b, 0, MAX_PAD) || !in_range(w->pad_r, 0, MAX_PAD) ||
      !in_range(w->dil_h, 1, MAX_FILTER) || !in_range(w->dil_w, 1, MAX_FILTER))
    return ERR(e, TTP_ERR_MODEL, "layer %s: bad window %dx%d stride %dx%d pads %d,%d,%d,%d "
               "dilation %dx%d", l->name, w->r, w->s, w->stride_h, w->stride_w, w->pad_t,
               w->pad_l, w->pad_b, w->pad_r, w->dil_h, w->dil_w);
  /* Pooling: padding smaller than the window, so that every window holds an input position. */
  if (pooling && (w->pad_t >= w->r || w->pad_b >= w->r || w->pad_l >= w->s || w->pad_r >= w->s ||
                  w->dil_h != 1 || w->dil_w != 1))
    return ERR(e, TTP_ERR_MODEL, "layer %s: pooling padding %d,%d,%d,%d not below its %dx%d "
               "window, or dilated", l->name, w->pad_t, w->pad_l, w->pad_b, w->pad_r, w->r, w->s);
  const int h = window_out(l->in.h, w->r, w->dil_h, w->stride_h, w->pad_t, w->pad_b, ceil);
  const int wd = window_out(l->in.w, w->s, w->dil_w, w->stride_w, w->pad_l, w->pad_r, ceil);
  if (h < 1 || wd < 1)
    return ERR(e, TTP_ERR_MODEL, "layer %s: %dx%d %s larger than its padded %dx%d input",
               l->name, w->r, w->s, pooling ? "window" : "filter",
               l->in.h + w->pad_t + w->pad_b, l->in.w + w->pad_l + w->pad_r);
  *out = (model_shape){c, h, wd};
  return TTP_OK;
}

static ttp_status conv_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  const int k = l->p.conv.k, g = l->p.conv.groups ? l->p.conv.groups : 1;
  const model_window* w = &l->p.conv.w;
  if (!in_range(k, 1, MAX_CHANNELS) || !in_range(g, 1, MAX_CHANNELS) || k % g || l->in.c % g)
    return ERR(e, TTP_ERR_MODEL, "layer %s: bad convolution of %d outputs in %d groups over %d "
               "channels", l->name, k, g, l->in.c);
  TRY(window_infer(l, w, k, 0, 0, &l->out, e));
  l->weight_count = (size_t)k * (l->in.c / g) * w->r * w->s;
  l->bias_count = (size_t)k;
  l->macs = (double)model_shape_size(l->out) * (l->in.c / g) * w->r * w->s;
  return TTP_OK;
}

static ttp_status pool_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  return window_infer(l, &l->p.pool.w, l->in.c, l->p.pool.ceil, 1, &l->out, e);
}

static ttp_status clip_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  if (!(l->p.clip.lo <= l->p.clip.hi))
    return ERR(e, TTP_ERR_MODEL, "layer %s: clip to %g..%g", l->name, l->p.clip.lo, l->p.clip.hi);
  l->out = l->in;
  return TTP_OK;
}

static ttp_status leaky_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  if (!isfinite(l->p.leaky.alpha))
    return ERR(e, TTP_ERR_MODEL, "layer %s: leaky ReLU slope %g", l->name, l->p.leaky.alpha);
  l->out = l->in;
  return TTP_OK;
}

static ttp_status same_shape_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins, (void)e;
  l->out = l->in;
  return TTP_OK;
}

static ttp_status fc_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  if (!in_range(l->p.fc.out, 1, MAX_TENSOR))
    return ERR(e, TTP_ERR_MODEL, "layer %s: bad output size %d", l->name, l->p.fc.out);
  size_t in = model_shape_size(l->in);
  l->out = (model_shape){l->p.fc.out, 1, 1};
  l->weight_count = (size_t)l->p.fc.out * in;
  l->bias_count = (size_t)l->p.fc.out;
  l->macs = (double)l->p.fc.out * (double)in;
  return TTP_OK;
}

/* cuDNN's own limits (CUDNN_LRN_MIN_N .. MAX_N, MIN_K, MIN_BETA), so every engine accepts the
   same models. */
static ttp_status lrn_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  if (!in_range(l->p.lrn.n, 1, 16) || !(l->p.lrn.k >= 1e-5) || !(l->p.lrn.beta >= 0.01) ||
      !(l->p.lrn.alpha >= 0.0))
    return ERR(e, TTP_ERR_MODEL, "layer %s: bad LRN n=%d alpha=%g beta=%g k=%g", l->name,
               l->p.lrn.n, l->p.lrn.alpha, l->p.lrn.beta, l->p.lrn.k);
  l->out = l->in;
  return TTP_OK;
}

static int same(model_shape a, model_shape b) { return a.c == b.c && a.h == b.h && a.w == b.w; }

/* The inputs of an elementwise Add, Sub, Mul or Div: the first's shape, each other input the
   same, or broadcast from C x 1 x 1 (squeeze-and-excitation's gate) or 1 x 1 x 1. */
static ttp_status binary_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  const int many = l->op == MODEL_ADD;
  if (l->input_count < 2 || (!many && l->input_count != 2))
    return ERR(e, TTP_ERR_MODEL, "layer %s: %s of %d inputs", l->name, model_op_name(l->op),
               l->input_count);
  for (int k = 1; k < l->input_count; k++) {
    const model_shape b = ins[k];
    if (!same(b, ins[0]) && !(b.h == 1 && b.w == 1 && (b.c == ins[0].c || b.c == 1)))
      return ERR(e, TTP_ERR_MODEL, "layer %s: %s of %dx%dx%d and %dx%dx%d (a shape mismatch: "
                 "the same shape, or C x 1 x 1 or 1 x 1 x 1 broadcast)", l->name,
                 model_op_name(l->op), ins[0].c, ins[0].h, ins[0].w, b.c, b.h, b.w);
  }
  l->out = ins[0];
  return TTP_OK;
}

/* Per-channel weights of C entries, or 1 for every channel (affine: scale and shift; prelu:
   slopes). */
static ttp_status per_channel_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  const size_t n = l->weight_count ? l->weight_count : (size_t)l->in.c;
  if (n != 1 && n != (size_t)l->in.c)
    return ERR(e, TTP_ERR_MODEL, "layer %s: %zu per-channel values for %d channels", l->name, n,
               l->in.c);
  l->out = l->in;
  l->weight_count = n;
  l->bias_count = l->op == MODEL_AFFINE ? n : 0;
  return TTP_OK;
}

static ttp_status concat_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  long long c = 0;
  for (int k = 0; k < l->input_count; k++) {
    if (ins[k].h != ins[0].h || ins[k].w != ins[0].w)
      return ERR(e, TTP_ERR_MODEL, "layer %s: concatenation of %dx%d and %dx%d maps (a shape "
                 "mismatch)", l->name, ins[0].h, ins[0].w, ins[k].h, ins[k].w);
    c += ins[k].c;
  }
  if (c > MAX_CHANNELS) return ERR(e, TTP_ERR_MODEL, "layer %s: %lld channels", l->name, c);
  l->out = (model_shape){(int)c, ins[0].h, ins[0].w};
  return TTP_OK;
}

static ttp_status slice_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  const int c0 = l->p.slice.c0, c1 = l->p.slice.c1, h0 = l->p.slice.h0, h1 = l->p.slice.h1;
  const int w0 = l->p.slice.w0, w1 = l->p.slice.w1, sh = l->p.slice.step_h, sw = l->p.slice.step_w;
  if (!(0 <= c0 && c0 < c1 && c1 <= l->in.c) || !(0 <= h0 && h0 < h1 && h1 <= l->in.h) ||
      !(0 <= w0 && w0 < w1 && w1 <= l->in.w) || !in_range(sh, 1, MAX_DIM) ||
      !in_range(sw, 1, MAX_DIM))
    return ERR(e, TTP_ERR_MODEL, "layer %s: slice of channels %d..%d, rows %d..%d step %d, "
               "columns %d..%d step %d of %dx%dx%d", l->name, c0, c1, h0, h1, sh, w0, w1, sw,
               l->in.c, l->in.h, l->in.w);
  l->out = (model_shape){c1 - c0, (h1 - h0 + sh - 1) / sh, (w1 - w0 + sw - 1) / sw};
  return TTP_OK;
}

static ttp_status reshape_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  const model_shape o = l->p.reshape;
  if (o.c < 1 || o.h < 1 || o.w < 1 || model_shape_size(o) != model_shape_size(l->in))
    return ERR(e, TTP_ERR_MODEL, "layer %s: %dx%dx%d read as %dx%dx%d", l->name, l->in.c,
               l->in.h, l->in.w, o.c, o.h, o.w);
  l->out = o;
  return TTP_OK;
}

static ttp_status pad_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  const int v[6] = {l->p.pad.c0, l->p.pad.c1, l->p.pad.h0, l->p.pad.h1, l->p.pad.w0, l->p.pad.w1};
  for (int k = 0; k < 6; k++)
    if (!in_range(v[k], 0, k < 2 ? MAX_CHANNELS : MAX_PAD) || !isfinite(l->p.pad.value))
      return ERR(e, TTP_ERR_MODEL, "layer %s: padding %d,%d %d,%d %d,%d of %g", l->name, v[0],
                 v[1], v[2], v[3], v[4], v[5], l->p.pad.value);
  l->out = (model_shape){l->in.c + v[0] + v[1], l->in.h + v[2] + v[3], l->in.w + v[4] + v[5]};
  return TTP_OK;
}

static ttp_status shuffle_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  const int g = l->p.shuffle.groups;
  if (!in_range(g, 1, l->in.c) || l->in.c % g)
    return ERR(e, TTP_ERR_MODEL, "layer %s: a shuffle of %d groups of %d channels", l->name, g,
               l->in.c);
  l->out = l->in;
  return TTP_OK;
}

static ttp_status hard_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  if (!isfinite(l->p.hard.alpha) || !isfinite(l->p.hard.beta))
    return ERR(e, TTP_ERR_MODEL, "layer %s: hard sigmoid %g x + %g", l->name, l->p.hard.alpha,
               l->p.hard.beta);
  l->out = l->in;
  return TTP_OK;
}

static ttp_status elu_infer(model_layer* l, const model_shape* ins, ttp_err* e) {
  (void)ins;
  if (!isfinite(l->p.elu.alpha))
    return ERR(e, TTP_ERR_MODEL, "layer %s: ELU alpha %g", l->name, l->p.elu.alpha);
  l->out = l->in;
  return TTP_OK;
}

static void slice_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "channels %d..%d, rows %d..%d step %d, columns %d..%d step %d",
           l->p.slice.c0, l->p.slice.c1 - 1, l->p.slice.h0, l->p.slice.h1 - 1, l->p.slice.step_h,
           l->p.slice.w0, l->p.slice.w1 - 1, l->p.slice.step_w);
}
static void pad_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "channels %d,%d rows %d,%d columns %d,%d of %g", l->p.pad.c0, l->p.pad.c1,
           l->p.pad.h0, l->p.pad.h1, l->p.pad.w0, l->p.pad.w1, l->p.pad.value);
}
static void shuffle_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "%d groups", l->p.shuffle.groups);
}
static void reshape_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "as %dx%dx%d", l->p.reshape.c, l->p.reshape.h, l->p.reshape.w);
}
static void hard_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "min(max(%g x + %g, 0), 1)", l->p.hard.alpha, l->p.hard.beta);
}
static void elu_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "alpha=%g", l->p.elu.alpha);
}
static void inputs_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "%d inputs", l->input_count);
}
static void channels_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "%s", l->weight_count == 1 ? "every channel" : "per channel");
}

/* A window in words: "5x5 stride 1 pad 0", its other parts where they are not the plain ones. */
static int window_describe(const model_window* w, char* buf, size_t n) {
  int at = snprintf(buf, n, "%dx%d stride %d", w->r, w->s, w->stride_h);
  if (w->stride_w != w->stride_h) at += snprintf(buf + at, n > (size_t)at ? n - at : 0, "x%d", w->stride_w);
  if (w->pad_t == w->pad_l && w->pad_t == w->pad_b && w->pad_t == w->pad_r)
    at += snprintf(buf + at, n > (size_t)at ? n - at : 0, " pad %d", w->pad_t);
  else
    at += snprintf(buf + at, n > (size_t)at ? n - at : 0, " pads %d,%d,%d,%d", w->pad_t, w->pad_l,
                   w->pad_b, w->pad_r);
  if (w->dil_h != 1 || w->dil_w != 1)
    at += snprintf(buf + at, n > (size_t)at ? n - at : 0, " dilation %dx%d", w->dil_h, w->dil_w);
  return at;
}

static void conv_describe(const model_layer* l, char* buf, size_t n) {
  const int g = l->p.conv.groups ? l->p.conv.groups : 1;
  int at = snprintf(buf, n, "%dx%dx", l->p.conv.k, l->in.c / g);
  at += window_describe(&l->p.conv.w, buf + at, n > (size_t)at ? n - at : 0);
  if (g != 1) snprintf(buf + at, n > (size_t)at ? n - at : 0, " groups %d", g);
}
static void pool_describe(const model_layer* l, char* buf, size_t n) {
  const model_window* w = &l->p.pool.w;
  int at = window_describe(w, buf, n);
  const int padded = w->pad_t || w->pad_l || w->pad_b || w->pad_r;
  at += snprintf(buf + at, n > (size_t)at ? n - at : 0, "%s",
                 l->op == MODEL_AVGPOOL && padded ? l->p.pool.count_pad ? " (counted)"
                                                                        : " (not counted)"
                                                  : "");
  if (l->p.pool.ceil) snprintf(buf + at, n > (size_t)at ? n - at : 0, " ceil");
}
static void leaky_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "alpha=%g", l->p.leaky.alpha);
}
static void clip_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "%g..%g", l->p.clip.lo, l->p.clip.hi);
}
static void fc_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "%dx%zu", l->p.fc.out, model_shape_size(l->in));
}
static void lrn_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "n=%d alpha=%g beta=%g k=%g", l->p.lrn.n, l->p.lrn.alpha, l->p.lrn.beta,
           l->p.lrn.k);
}
static void no_describe(const model_layer* l, char* buf, size_t n) {
  (void)l;
  if (n) buf[0] = '\0';
}

typedef struct layer_kind {
  const char* name;
  /* ins: the shapes of the layer's inputs (l->in is ins[0]) */
  ttp_status (*infer)(model_layer* l, const model_shape* ins, ttp_err* e);
  void (*describe)(const model_layer* l, char* buf, size_t n);
} layer_kind;

static const layer_kind kinds[MODEL_OP_COUNT] = {
    [MODEL_CONV] = {"conv", conv_infer, conv_describe},
    [MODEL_MAXPOOL] = {"maxpool", pool_infer, pool_describe},
    [MODEL_RELU] = {"relu", same_shape_infer, no_describe},
    [MODEL_FC] = {"fc", fc_infer, fc_describe},
    [MODEL_LRN] = {"lrn", lrn_infer, lrn_describe},
    [MODEL_SOFTMAX] = {"softmax", same_shape_infer, no_describe},
    [MODEL_AVGPOOL] = {"avgpool", pool_infer, pool_describe},
    [MODEL_LEAKY_RELU] = {"leakyrelu", leaky_infer, leaky_describe},
    [MODEL_SIGMOID] = {"sigmoid", same_shape_infer, no_describe},
    [MODEL_TANH] = {"tanh", same_shape_infer, no_describe},
    [MODEL_CLIP] = {"clip", clip_infer, clip_describe},
    [MODEL_ADD] = {"add", binary_infer, inputs_describe},
    [MODEL_SUB] = {"sub", binary_infer, inputs_describe},
    [MODEL_MUL] = {"mul", binary_infer, inputs_describe},
    [MODEL_DIV] = {"div", binary_infer, inputs_describe},
    [MODEL_AFFINE] = {"affine", per_channel_infer, channels_describe},
    [MODEL_CONCAT] = {"concat", concat_infer, inputs_describe},
    [MODEL_SLICE] = {"slice", slice_infer, slice_describe},
    [MODEL_PAD] = {"pad", pad_infer, pad_describe},
    [MODEL_SHUFFLE] = {"shuffle", shuffle_infer, shuffle_describe},
    [MODEL_HARDSWISH] = {"hardswish", same_shape_infer, no_describe},
    [MODEL_HARDSIGMOID] = {"hardsigmoid", hard_infer, hard_describe},
    [MODEL_GELU] = {"gelu", same_shape_infer, no_describe},
    [MODEL_ERF] = {"erf", same_shape_infer, no_describe},
    [MODEL_ELU] = {"elu", elu_infer, elu_describe},
    [MODEL_PRELU] = {"prelu", per_channel_infer, channels_describe},
    [MODEL_SOFTPLUS] = {"softplus", same_shape_infer, no_describe},
    [MODEL_MISH] = {"mish", same_shape_infer, no_describe},
    [MODEL_RESHAPE] = {"reshape", reshape_infer, reshape_describe},
};

const char* model_op_name(model_op op) {
  return (unsigned)op < MODEL_OP_COUNT ? kinds[op].name : "unknown";
}

void model_describe(const model_layer* l, char* buf, size_t n) { kinds[l->op].describe(l, buf, n); }

/* ---- lifecycle ----------------------------------------------------------------------------- */

model* model_new(model_shape input, ttp_err* e) {
  model* m = calloc(1, sizeof *m);
  if (!m) {
    ERR_NOMEM(e, sizeof *m);
    return NULL;
  }
  m->input = input;
  for (int c = 0; c < 3; c++) m->scaling.mean[c] = 0.0f, m->scaling.std[c] = 1.0f;
  return m;
}

void model_free(model* m) {
  if (!m) return;
  for (int i = 0; i < m->layer_count; i++) {
    free(m->layers[i].weights);
    free(m->layers[i].bias);
  }
  free(m->layers);
  if (m->labels)
    for (int i = 0; i < m->label_count; i++) free(m->labels[i]);
  free(m->labels);
  free(m);
}

model_layer* model_add(model* m, model_op op, const char* name, ttp_err* e) {
  if (m->layer_count == m->layer_capacity) {
    int cap = m->layer_capacity ? 2 * m->layer_capacity : 8;
    model_layer* grown = realloc(m->layers, (size_t)cap * sizeof *grown);
    if (!grown) {
      ERR_NOMEM(e, (size_t)cap * sizeof *grown);
      return NULL;
    }
    m->layers = grown;
    m->layer_capacity = cap;
  }
  model_layer* l = &m->layers[m->layer_count];
  memset(l, 0, sizeof *l);
  l->op = op;
  l->inputs[0] = m->layer_count++; /* the value before it: a chain */
  l->input_count = 1;
  snprintf(l->name, sizeof l->name, "%s", name);
  return l;
}

/* ---- checks -------------------------------------------------------------------------------- */

ttp_status model_infer_layer(model* m, int i, ttp_err* e) {
  const model_shape s = m->input;
  if (s.c < 1 || s.h < 1 || s.w < 1 || s.c > MAX_CHANNELS || s.h > MAX_DIM || s.w > MAX_DIM)
    return ERR(e, TTP_ERR_MODEL, "bad input shape %dx%dx%d", s.c, s.h, s.w);
  model_shape ins[MODEL_MAX_INPUTS];
  model_layer* l = &m->layers[i];
  if ((unsigned)l->op >= MODEL_OP_COUNT)
    return ERR(e, TTP_ERR_MODEL, "layer %s: unknown operation %d", l->name, (int)l->op);
  if (l->input_count < 1 || l->input_count > MODEL_MAX_INPUTS)
    return ERR(e, TTP_ERR_MODEL, "layer %s: %d inputs", l->name, l->input_count);
  for (int k = 0; k < l->input_count; k++) {
    if (l->inputs[k] < 0 || l->inputs[k] > i) /* an earlier value: no cycle */
      return ERR(e, TTP_ERR_MODEL, "layer %s: input %d is value %d, not one made before it",
                 l->name, k, l->inputs[k]);
    ins[k] = model_value_shape(m, l->inputs[k]);
  }
  l->in = ins[0];
  const size_t given = l->weight_count; /* per-channel layers say how many they hold */
  l->weight_count = l->op == MODEL_AFFINE || l->op == MODEL_PRELU ? given : 0;
  l->bias_count = 0;
  l->macs = 0;
  TRY(kinds[l->op].infer(l, ins, e));
  return check_tensor(l, l->out, e);
}

ttp_status model_infer_shapes(model* m, ttp_err* e) {
  if (m->layer_count == 0) return ERR(e, TTP_ERR_MODEL, "the model has no layers");
  for (int i = 0; i < m->layer_count; i++) TRY(model_infer_layer(m, i, e));
  const model_layer* last = &m->layers[m->layer_count - 1];
  if (last->op != MODEL_SOFTMAX)
    return ERR(e, TTP_ERR_MODEL, "the last layer (%s) is %s, not softmax", last->name,
               model_op_name(last->op));
  m->classes = (int)model_shape_size(last->out);
  return TTP_OK;
}

ttp_status model_prune(model* m, int root, ttp_err* e) {
  if (root < 0 || root >= m->layer_count)
    return ERR(e, TTP_ERR_INTERNAL, "pruning to layer %d of %d", root, m->layer_count);
  const int n = m->layer_count;
  /* to[i]: first whether layer i is root or read by a layer kept, then the value it becomes. */
  int* to = calloc((size_t)n, sizeof *to);
  if (!to) return ERR_NOMEM(e, (size_t)n * sizeof *to);
  to[root] = 1;
  for (int i = n - 1; i >= 0; i--)
    if (to[i])
      for (int k = 0; k < m->layers[i].input_count; k++)
        if (m->layers[i].inputs[k] > 0) to[m->layers[i].inputs[k] - 1] = 1;
  int kept = 0;
  for (int i = 0; i < n; i++) {
    model_layer* l = &m->layers[i];
    if (!to[i]) {
      free(l->weights);
      free(l->bias);
      continue;
    }
    for (int k = 0; k < l->input_count; k++)
      if (l->inputs[k] > 0) l->inputs[k] = to[l->inputs[k] - 1];
    m->layers[kept] = *l;
    to[i] = ++kept; /* value i + 1 is now value kept */
  }
  m->layer_count = kept;
  free(to);
  return TTP_OK;
}

model_shape model_value_shape(const model* m, int v) {
  return v == 0 ? m->input : m->layers[v - 1].out;
}

int model_is_chain(const model* m, int* at) {
  for (int i = 0; i < m->layer_count; i++)
    if (m->layers[i].input_count != 1 || m->layers[i].inputs[0] != i) {
      *at = i;
      return 0;
    }
  return 1;
}

ttp_status model_check(model* m, ttp_err* e) {
  TRY(model_infer_shapes(m, e));
  if (m->labels && m->label_count != m->classes)
    return ERR(e, TTP_ERR_MODEL, "%d labels for %d classes", m->label_count, m->classes);
  for (int i = 0; i < m->layer_count; i++) {
    const model_layer* l = &m->layers[i];
    if (l->weight_count && !l->weights)
      return ERR(e, TTP_ERR_MODEL, "layer %s: weights missing", l->name);
  }
  return TTP_OK;
}

size_t model_max_activation(const model* m) {
  size_t most = model_shape_size(m->input);
  for (int i = 0; i < m->layer_count; i++) {
    size_t n = model_shape_size(m->layers[i].out);
    if (n > most) most = n;
  }
  return most;
}

long long model_parameter_count(const model* m) {
  long long n = 0;
  for (int i = 0; i < m->layer_count; i++) {
    n += (long long)m->layers[i].weight_count;
    if (m->layers[i].bias) n += (long long)m->layers[i].bias_count;
  }
  return n;
}
