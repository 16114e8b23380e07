/* The model's layer list: construction, the table of layer kinds (shape rules, weight sizes,
   descriptions) and the checks that let engines trust what they are given. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep every size computation far from overflow and refuse absurd layers. */
enum { MAX_DIM = 1 << 14, MAX_CHANNELS = 1 << 16, MAX_FILTER = 64, MAX_STRIDE = 64, MAX_PAD = 64 };
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

static ttp_status conv_infer(model_layer* l, ttp_err* e) {
  int k = l->p.conv.k, r = l->p.conv.r, s = l->p.conv.s;
  int stride = l->p.conv.stride, pad = l->p.conv.pad;
  if (!in_range(k, 1, MAX_CHANNELS) || !in_range(r, 1, MAX_FILTER) || !in_range(s, 1, MAX_FILTER) ||
      !in_range(stride, 1, MAX_STRIDE) || !in_range(pad, 0, MAX_PAD))
    return ERR(e, TTP_ERR_MODEL, "layer %s: bad convolution %dx%dx%d stride %d pad %d", l->name, k,
               r, s, stride, pad);
  int hp = l->in.h + 2 * pad, wp = l->in.w + 2 * pad;
  if (r > hp || s > wp)
    return ERR(e, TTP_ERR_MODEL, "layer %s: %dx%d filter larger than its padded %dx%d input",
               l->name, r, s, hp, wp);
  l->out = (model_shape){k, (hp - r) / stride + 1, (wp - s) / stride + 1};
  l->weight_count = (size_t)k * l->in.c * r * s;
  l->bias_count = (size_t)k;
  l->macs = (double)model_shape_size(l->out) * l->in.c * r * s;
  return TTP_OK;
}

/* Padding smaller than the window, so that every window holds a position of the input. */
static ttp_status pool_infer(model_layer* l, ttp_err* e) {
  int r = l->p.pool.r, s = l->p.pool.s, stride = l->p.pool.stride, pad = l->p.pool.pad;
  if (!in_range(r, 1, MAX_FILTER) || !in_range(s, 1, MAX_FILTER) ||
      !in_range(stride, 1, MAX_STRIDE) || !in_range(pad, 0, (r < s ? r : s) - 1))
    return ERR(e, TTP_ERR_MODEL, "layer %s: bad pooling window %dx%d stride %d pad %d", l->name,
               r, s, stride, pad);
  int hp = l->in.h + 2 * pad, wp = l->in.w + 2 * pad;
  if (r > hp || s > wp)
    return ERR(e, TTP_ERR_MODEL, "layer %s: %dx%d window larger than its padded %dx%d input",
               l->name, r, s, hp, wp);
  l->out = (model_shape){l->in.c, (hp - r) / stride + 1, (wp - s) / stride + 1};
  return TTP_OK;
}

static ttp_status clip_infer(model_layer* l, ttp_err* e) {
  if (!(l->p.clip.lo <= l->p.clip.hi))
    return ERR(e, TTP_ERR_MODEL, "layer %s: clip to %g..%g", l->name, l->p.clip.lo, l->p.clip.hi);
  l->out = l->in;
  return TTP_OK;
}

static ttp_status leaky_infer(model_layer* l, ttp_err* e) {
  if (!isfinite(l->p.leaky.alpha))
    return ERR(e, TTP_ERR_MODEL, "layer %s: leaky ReLU slope %g", l->name, l->p.leaky.alpha);
  l->out = l->in;
  return TTP_OK;
}

static ttp_status same_shape_infer(model_layer* l, ttp_err* e) {
  (void)e;
  l->out = l->in;
  return TTP_OK;
}

static ttp_status fc_infer(model_layer* l, ttp_err* e) {
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
static ttp_status lrn_infer(model_layer* l, ttp_err* e) {
  if (!in_range(l->p.lrn.n, 1, 16) || !(l->p.lrn.k >= 1e-5) || !(l->p.lrn.beta >= 0.01) ||
      !(l->p.lrn.alpha >= 0.0))
    return ERR(e, TTP_ERR_MODEL, "layer %s: bad LRN n=%d alpha=%g beta=%g k=%g", l->name,
               l->p.lrn.n, l->p.lrn.alpha, l->p.lrn.beta, l->p.lrn.k);
  l->out = l->in;
  return TTP_OK;
}

static void conv_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "%dx%dx%dx%d stride %d pad %d", l->p.conv.k, l->in.c, l->p.conv.r, l->p.conv.s,
           l->p.conv.stride, l->p.conv.pad);
}
static void pool_describe(const model_layer* l, char* buf, size_t n) {
  snprintf(buf, n, "%dx%d stride %d pad %d%s", l->p.pool.r, l->p.pool.s, l->p.pool.stride,
           l->p.pool.pad,
           l->op == MODEL_AVGPOOL && l->p.pool.pad ? l->p.pool.count_pad ? " (counted)"
                                                                          : " (not counted)"
                                                   : "");
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
  ttp_status (*infer)(model_layer* l, ttp_err* e);
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
  model_layer* l = &m->layers[m->layer_count++];
  memset(l, 0, sizeof *l);
  l->op = op;
  snprintf(l->name, sizeof l->name, "%s", name);
  return l;
}

/* ---- checks -------------------------------------------------------------------------------- */

ttp_status model_infer_shapes(model* m, ttp_err* e) {
  if (m->layer_count == 0) return ERR(e, TTP_ERR_MODEL, "the model has no layers");
  model_shape s = m->input;
  if (s.c < 1 || s.h < 1 || s.w < 1 || s.c > MAX_CHANNELS || s.h > MAX_DIM || s.w > MAX_DIM)
    return ERR(e, TTP_ERR_MODEL, "bad input shape %dx%dx%d", s.c, s.h, s.w);
  for (int i = 0; i < m->layer_count; i++) {
    model_layer* l = &m->layers[i];
    if ((unsigned)l->op >= MODEL_OP_COUNT)
      return ERR(e, TTP_ERR_MODEL, "layer %s: unknown operation %d", l->name, (int)l->op);
    l->in = s;
    l->weight_count = l->bias_count = 0;
    l->macs = 0;
    TRY(kinds[l->op].infer(l, e));
    TRY(check_tensor(l, l->out, e));
    s = l->out;
  }
  const model_layer* last = &m->layers[m->layer_count - 1];
  if (last->op != MODEL_SOFTMAX)
    return ERR(e, TTP_ERR_MODEL, "the last layer (%s) is %s, not softmax", last->name,
               model_op_name(last->op));
  m->classes = (int)model_shape_size(last->out);
  return TTP_OK;
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
