/* Nodes that compute on the image's tensors become the model's layers here, or views of a
   tensor (Reshape, Flatten, Squeeze, Unsqueeze, Identity, a Transpose that moves no value), or
   changes of a layer already made (a BatchNormalization or a constant's Add, Sub, Mul or Div
   folded into the Conv, Gemm or affine layer before it, when nothing else reads that layer). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

static int64_t normalize_axis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

int onnx_canonical(const onnx_tensor* t, model_shape* s) {
  if (t->rank < 2 || t->rank > 4) return 0;
  const int64_t c = t->dims[1], h = t->rank > 2 ? t->dims[2] : 1, w = t->rank > 3 ? t->dims[3] : 1;
  if (c < 1 || h < 1 || w < 1 || c > INT32_MAX || h > INT32_MAX || w > INT32_MAX) return 0;
  *s = (model_shape){(int)c, (int)h, (int)w};
  return 1;
}

static int same_shape(model_shape a, model_shape b) { return a.c == b.c && a.h == b.h && a.w == b.w; }

/* Node k's input i as a tensor of the network (NULL when it is a constant or absent). */
static onnx_tensor* tensor_in(onnx_reader* r, size_t k, size_t i) {
  const int s = onnx_input(r, k, i);
  return s >= 0 && r->slots[s].kind == SLOT_TENSOR ? &r->slots[s].t : NULL;
}

/* A new layer for node k (named after it: its name's end, which says most). */
static model_layer* new_layer(onnx_reader* r, size_t k, model_op op) {
  const Onnx__NodeProto* n = r->g->node[k];
  char name[32];
  const char* given = n->name && n->name[0] ? n->name : NULL;
  if (given) {
    const size_t len = strlen(given);
    snprintf(name, sizeof name, "%s", len > 31 ? given + len - 31 : given);
  } else {
    snprintf(name, sizeof name, "%s%zu", model_op_name(op), k);
  }
  return model_add(r->m, op, name, r->e);
}

/* Shapes of the layer just added, the file named in a refusal. */
static ttp_status infer_last(onnx_reader* r, size_t k) {
  if (model_infer_layer(r->m, r->m->layer_count - 1, r->e) != TTP_OK)
    return onnx_node_prefix(r, k);
  return TTP_OK;
}

/* Output i of node k is now the tensor t (a new layer's value, or a view of an input). */
static void set_output(onnx_reader* r, size_t k, size_t i, const onnx_tensor* t, int from_sole) {
  const int s = r->node_outputs[k][i];
  if (s < 0) return;
  onnx_slot* slot = &r->slots[s];
  slot->kind = SLOT_TENSOR;
  slot->t = *t;
  slot->sole = from_sole && slot->uses == 1 && !slot->is_output;
}

/* Output 0 of node k: the value of the layer just added, of `rank` dimensions (batch
   included); the layer's output C x H x W fills them (those past the rank must be 1). */
static ttp_status set_layer_output(onnx_reader* r, size_t k, int rank) {
  TRY(infer_last(r, k));
  const model_layer* l = &r->m->layers[r->m->layer_count - 1];
  onnx_tensor t = {.value = r->m->layer_count, .rank = rank};
  const int64_t cw[3] = {l->out.c, l->out.h, l->out.w};
  t.dims[0] = 1;
  for (int d = 1; d < rank && d < ONNX_MAX_RANK; d++) t.dims[d] = d <= 3 ? cw[d - 1] : 1;
  for (int d = rank; d <= 3; d++)
    if (d >= 1 && cw[d - 1] != 1)
      return onnx_node_error(r, k, "an output of %dx%dx%d as %d dimensions", l->out.c, l->out.h,
                             l->out.w, rank);
  set_output(r, k, 0, &t, 1);
  return TTP_OK;
}

/* The value of a tensor once its pending padding (a Pad read by a layer that does not take it
   as its own) is a layer. */
static ttp_status value_plain(onnx_reader* r, size_t k, onnx_tensor* t, int* v) {
  if (t->pad.on) {
    model_shape padded, before;
    if (!onnx_canonical(t, &padded)) return onnx_node_error(r, k, "padding of a rank-%d tensor", t->rank);
    const onnx_pending_pad* p = &t->pad;
    before = (model_shape){padded.c - p->c0 - p->c1, padded.h - p->h0 - p->h1,
                           padded.w - p->w0 - p->w1};
    int from = t->value;
    if (!same_shape(model_value_shape(r->m, from), before)) {
      model_layer* re = new_layer(r, k, MODEL_RESHAPE);
      if (!re) return r->e->status;
      re->inputs[0] = from, re->p.reshape = before;
      TRY(infer_last(r, k));
      from = r->m->layer_count;
    }
    model_layer* l = new_layer(r, k, MODEL_PAD);
    if (!l) return r->e->status;
    l->inputs[0] = from;
    l->p.pad.c0 = p->c0, l->p.pad.c1 = p->c1, l->p.pad.h0 = p->h0, l->p.pad.h1 = p->h1;
    l->p.pad.w0 = p->w0, l->p.pad.w1 = p->w1, l->p.pad.value = p->value;
    TRY(infer_last(r, k));
    t->value = r->m->layer_count;
    t->pad.on = 0;
  }
  *v = t->value;
  return TTP_OK;
}

/* The value of tensor t read as `want` (a Reshape layer where its value has another shape). */
static ttp_status value_as(onnx_reader* r, size_t k, onnx_tensor* t, model_shape want, int* v) {
  TRY(value_plain(r, k, t, v));
  const model_shape have = model_value_shape(r->m, *v);
  if (same_shape(have, want)) return TTP_OK;
  if (model_shape_size(have) != model_shape_size(want))
    return onnx_node_error(r, k, "a tensor of %zu values read as %dx%dx%d", model_shape_size(have),
                           want.c, want.h, want.w);
  model_layer* l = new_layer(r, k, MODEL_RESHAPE);
  if (!l) return r->e->status;
  l->inputs[0] = *v, l->p.reshape = want;
  TRY(infer_last(r, k));
  *v = r->m->layer_count;
  return TTP_OK;
}

/* The value of t as its canonical C x H x W (rank 2 to 4). */
static ttp_status value_of(onnx_reader* r, size_t k, onnx_tensor* t, int* v) {
  model_shape want;
  if (!onnx_canonical(t, &want))
    return onnx_node_error(r, k, "a tensor of %d dimensions (ttapipe's layers take [N,] C, H, W)",
                           t->rank);
  return value_as(r, k, t, want, v);
}

/* The data input (input 0) must be a tensor of rank lo..hi. */
static ttp_status data_in(onnx_reader* r, size_t k, int lo, int hi, onnx_tensor** t) {
  *t = tensor_in(r, k, 0);
  if (!*t) return onnx_node_error(r, k, "its first input is not computed from the image");
  if ((*t)->rank < lo || (*t)->rank > hi)
    return onnx_node_error(r, k, "an input of %d dimensions, not %d to %d (batch included)",
                           (*t)->rank, lo, hi);
  return TTP_OK;
}

/* ---- per channel: affine layers and what folds into the layer before ------------------------ */

/* Per-channel values of constant c applied to tensor t (broadcast from [C] per channel of axis 1,
   or a scalar): into v (C values, or 1) and *n. */
static ttp_status per_channel(onnx_reader* r, size_t k, const onnx_const* c, const onnx_tensor* t,
                              double** v, size_t* n) {
  *v = NULL;
  if (c->rank > t->rank) {
    for (int d = 0; d < c->rank - t->rank; d++)
      if (c->dims[d] != 1) return onnx_node_error(r, k, "a constant of more dimensions than its tensor");
  }
  int channel_axis = -1;
  for (int d = 0; d < c->rank; d++) {
    const int td = d - (c->rank - t->rank); /* t's axis it aligns with */
    if (c->dims[d] == 1 || td < 0) continue;
    if (td != 1 || c->dims[d] != t->dims[1] || t->rank < 2 || t->rank > 4)
      return onnx_node_error(r, k, "a constant that varies along another axis than the "
                             "channels' (ttapipe applies constants per channel or whole)");
    channel_axis = td;
  }
  *n = channel_axis < 0 ? 1 : (size_t)t->dims[1];
  *v = malloc(*n * sizeof **v);
  if (!*v) return ERR_NOMEM(r->e, *n * sizeof **v);
  for (size_t i = 0; i < *n; i++) (*v)[i] = onnx_const_f(c, *n == 1 ? 0 : i);
  return TTP_OK;
}

static int finite_floats(const double* v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite((float)v[i])) return 0;
  return 1;
}

/* y = x scale + shift per channel (n values each, 1 or C) on the tensor of input slot `in`,
   into node k's output 0: folded into the Conv, FC or affine layer that made the tensor when
   nothing else reads it, else an affine layer. */
static ttp_status affine(onnx_reader* r, size_t k, int in, const double* scale, const double* shift,
                         size_t n) {
  onnx_slot* src = &r->slots[in];
  onnx_tensor* t = &src->t;
  model_shape cs;
  if (!onnx_canonical(t, &cs)) return onnx_node_error(r, k, "a tensor of %d dimensions", t->rank);
  if (!finite_floats(scale, n) || !finite_floats(shift, n))
    return onnx_node_error(r, k, "a scale or shift that is not a finite float32");
  model_layer* p = t->value > 0 ? &r->m->layers[t->value - 1] : NULL;
  if (src->sole && p && !t->pad.on && same_shape(p->out, cs) &&
      (p->op == MODEL_CONV || p->op == MODEL_FC || p->op == MODEL_AFFINE)) {
    const size_t outs = p->op == MODEL_AFFINE ? p->weight_count : (size_t)p->out.c;
    if (p->op == MODEL_AFFINE && outs < n) { /* one scale for every channel becomes C */
      float* w = malloc(n * sizeof *w);
      float* b = malloc(n * sizeof *b);
      if (!w || !b) {
        free(w), free(b);
        return ERR_NOMEM(r->e, 2 * n * sizeof *w);
      }
      for (size_t i = 0; i < n; i++) w[i] = p->weights[0], b[i] = p->bias[0];
      free(p->weights), free(p->bias);
      p->weights = w, p->bias = b, p->weight_count = n;
      if (model_infer_layer(r->m, t->value - 1, r->e) != TTP_OK) return onnx_node_prefix(r, k);
    }
    const size_t count = p->op == MODEL_AFFINE ? p->weight_count : (size_t)p->out.c;
    const size_t per = p->op == MODEL_AFFINE ? 1 : p->weight_count / count;
    for (size_t o = 0; o < count; o++) {
      const double s = scale[n == 1 ? 0 : o], b = shift[n == 1 ? 0 : o];
      for (size_t i = 0; i < per; i++) {
        float* w = &p->weights[o * per + i];
        *w = (float)((double)*w * s);
        if (!isfinite(*w)) return onnx_node_error(r, k, "folded into %s, overflows float32", p->name);
      }
      p->bias[o] = (float)((double)p->bias[o] * s + b);
      if (!isfinite(p->bias[o])) return onnx_node_error(r, k, "folded into %s, overflows float32", p->name);
    }
    set_output(r, k, 0, t, 1);
    return TTP_OK;
  }
  int v;
  TRY(value_of(r, k, t, &v));
  model_layer* l = new_layer(r, k, MODEL_AFFINE);
  if (!l) return r->e->status;
  l->inputs[0] = v;
  l->weights = malloc(n * sizeof *l->weights);
  l->bias = malloc(n * sizeof *l->bias);
  if (!l->weights || !l->bias) return ERR_NOMEM(r->e, 2 * n * sizeof *l->weights);
  for (size_t i = 0; i < n; i++) l->weights[i] = (float)scale[i], l->bias[i] = (float)shift[i];
  l->weight_count = n;
  return set_layer_output(r, k, t->rank);
}

static ttp_status batch_norm(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* t;
  TRY(data_in(r, k, 2, 4, &t));
  if (n->n_input != 5) return onnx_node_error(r, k, "%zu inputs, not 5", n->n_input);
  if (onnx_int_attr(n, "training_mode", 0) != 0) return onnx_node_error(r, k, "training mode");
  if (r->opset < 9 && onnx_int_attr(n, "spatial", 1) != 1)
    return onnx_node_error(r, k, "spatial = 0");
  for (size_t i = 1; i < n->n_output; i++)
    if (r->node_outputs[k][i] >= 0 && r->slots[r->node_outputs[k][i]].uses > 0)
      return onnx_node_error(r, k, "its training outputs are read");
  const double eps = onnx_float_attr(n, "epsilon", 1e-5f);
  if (!(eps >= 0 && eps < 1)) return onnx_node_error(r, k, "epsilon %g", eps);
  const size_t channels = (size_t)t->dims[1];
  const onnx_const* c[4];
  static const char* const what[4] = {"scale", "B", "mean", "var"};
  for (int i = 0; i < 4; i++) {
    if (!(c[i] = onnx_const_input(r, k, (size_t)i + 1, what[i]))) return r->e->status;
    if (c[i]->count != channels)
      return onnx_node_error(r, k, "its %s holds %zu values for %zu channels", what[i],
                             c[i]->count, channels);
  }
  double* scale = malloc(2 * channels * sizeof *scale);
  if (!scale) return ERR_NOMEM(r->e, 2 * channels * sizeof *scale);
  double* shift = scale + channels;
  for (size_t o = 0; o < channels; o++) {
    const double var = onnx_const_f(c[3], o) + eps;
    if (!(var > 0)) {
      free(scale);
      return onnx_node_error(r, k, "variance %zu plus epsilon is not positive", o);
    }
    scale[o] = onnx_const_f(c[0], o) / sqrt(var);
    shift[o] = onnx_const_f(c[1], o) - onnx_const_f(c[2], o) * scale[o];
  }
  const ttp_status s = affine(r, k, onnx_input(r, k, 0), scale, shift, channels);
  free(scale);
  return s;
}

/* ---- elementwise of two inputs ------------------------------------------------------------- */

static ttp_status with_constant(onnx_reader* r, size_t k, const char* op, int tensor_first) {
  const int ts = onnx_input(r, k, tensor_first ? 0 : 1);
  const onnx_const* c = onnx_const_input(r, k, tensor_first ? 1 : 0, "constant");
  if (!c) return r->e->status;
  onnx_tensor* t = &r->slots[ts].t;
  double* v;
  size_t n;
  TRY(per_channel(r, k, c, t, &v, &n));
  double* scale = malloc(2 * n * sizeof *scale);
  if (!scale) {
    free(v);
    return ERR_NOMEM(r->e, 2 * n * sizeof *scale);
  }
  double* shift = scale + n;
  ttp_status s = TTP_OK;
  for (size_t i = 0; i < n; i++) {
    scale[i] = 1, shift[i] = 0;
    if (strcmp(op, "Add") == 0) shift[i] = v[i];
    else if (strcmp(op, "Sub") == 0 && tensor_first) shift[i] = -v[i];
    else if (strcmp(op, "Sub") == 0) scale[i] = -1, shift[i] = v[i];
    else if (strcmp(op, "Mul") == 0) scale[i] = v[i];
    else if (tensor_first) scale[i] = 1.0 / v[i]; /* Div */
    else s = onnx_node_error(r, k, "a constant divided by the image's tensor");
  }
  if (s == TTP_OK) s = affine(r, k, ts, scale, shift, n);
  free(scale);
  free(v);
  return s;
}

/* Add, Sub, Mul, Div, Sum of tensors: the same dimensions, or one broadcast from [N,] C, 1, 1
   (or a single value an image). */
static ttp_status elementwise(onnx_reader* r, size_t k, model_op op) {
  const Onnx__NodeProto* n = r->g->node[k];
  const size_t count = n->n_input;
  const int many = op == MODEL_ADD;
  if (count < (many ? 1u : 2u) || (!many && count != 2) || count > MODEL_MAX_INPUTS)
    return onnx_node_error(r, k, "%zu inputs", count);
  if (count == 1) {
    onnx_tensor* t;
    TRY(data_in(r, k, 1, ONNX_MAX_RANK, &t));
    set_output(r, k, 0, t, r->slots[onnx_input(r, k, 0)].sole);
    return TTP_OK;
  }
  int constants = 0, tensors = 0;
  for (size_t i = 0; i < count; i++) {
    if (onnx_input(r, k, i) < 0) return onnx_node_error(r, k, "input %zu absent", i);
    if (tensor_in(r, k, i)) tensors++;
    else constants++;
  }
  if (constants) {
    if (count != 2) return onnx_node_error(r, k, "constants among more than two inputs");
    return with_constant(r, k, n->op_type, tensor_in(r, k, 0) != NULL);
  }
  /* The largest input first (Add and Mul commute; Sub and Div must broadcast the second). */
  onnx_tensor* in[MODEL_MAX_INPUTS] = {0};
  for (size_t i = 0; i < count; i++)
    if (!(in[i] = tensor_in(r, k, i))) return onnx_node_error(r, k, "input %zu absent", i);
  if (!in[0]) return onnx_node_error(r, k, "no inputs");
  int64_t dims[ONNX_MAX_RANK];
  int rank = in[0]->rank;
  memcpy(dims, in[0]->dims, sizeof dims);
  size_t big = 0;
  for (size_t i = 1; i < count; i++) {
    int64_t out[ONNX_MAX_RANK];
    int out_rank;
    if (!onnx_broadcast(dims, rank, in[i]->dims, in[i]->rank, out, &out_rank)) {
      char a[64], b[64];
      int at = 0;
      for (int d = 0; d < rank; d++) at += snprintf(a + at, sizeof a - (size_t)at, d ? "x%lld" : "%lld", (long long)dims[d]);
      at = 0;
      for (int d = 0; d < in[i]->rank; d++)
        at += snprintf(b + at, sizeof b - (size_t)at, d ? "x%lld" : "%lld", (long long)in[i]->dims[d]);
      return onnx_node_error(r, k, "inputs of shapes %s and %s, which do not broadcast (a "
                             "shape mismatch)", a, b);
    }
    memcpy(dims, out, sizeof dims);
    rank = out_rank;
  }
  for (size_t i = 0; i < count; i++) {
    int full = in[i]->rank == rank;
    for (int d = 0; full && d < rank; d++) full = in[i]->dims[d] == dims[d];
    if (full) {
      big = i;
      break;
    }
    if (i == count - 1) return onnx_node_error(r, k, "no input has the output's shape");
  }
  if (big != 0) {
    if (!many && op != MODEL_MUL) return onnx_node_error(r, k, "its first input is broadcast");
    onnx_tensor* x = in[0];
    in[0] = in[big], in[big] = x;
  }
  int values[MODEL_MAX_INPUTS];
  int canonical = 1; /* every input the output's shape: any layout of the same values works */
  for (size_t i = 1; i < count; i++) {
    int full = in[i]->rank == rank;
    for (int d = 0; full && d < rank; d++) full = in[i]->dims[d] == dims[d];
    if (!full) canonical = 0;
  }
  if (canonical) {
    TRY(value_plain(r, k, in[0], &values[0]));
    const model_shape want = model_value_shape(r->m, values[0]);
    for (size_t i = 1; i < count; i++) TRY(value_as(r, k, in[i], want, &values[i]));
  } else {
    model_shape want;
    if (!onnx_canonical(in[0], &want))
      return onnx_node_error(r, k, "a broadcast over %d dimensions", rank);
    TRY(value_as(r, k, in[0], want, &values[0]));
    for (size_t i = 1; i < count; i++) {
      /* A broadcast input: [1, C or 1, 1 ...] aligned at the right. */
      const onnx_tensor* b = in[i];
      int ok = 1;
      int64_t ch = 1;
      for (int d = 0; d < b->rank; d++) {
        const int od = d + (rank - b->rank);
        if (od == 1) ch = b->dims[d];
        else if (b->dims[d] != 1) ok = 0;
      }
      if (!ok || (ch != 1 && ch != want.c))
        return onnx_node_error(r, k, "an input broadcast along rows or columns (ttapipe "
                               "broadcasts [N,] C, 1, 1 or one value an image): a shape "
                               "mismatch");
      TRY(value_as(r, k, in[i], (model_shape){(int)ch, 1, 1}, &values[i]));
    }
  }
  model_layer* l = new_layer(r, k, op);
  if (!l) return r->e->status;
  for (size_t i = 0; i < count; i++) l->inputs[i] = values[i];
  l->input_count = (int)count;
  TRY(infer_last(r, k));
  onnx_tensor t = *in[0];
  t.value = r->m->layer_count;
  t.pad.on = 0;
  set_output(r, k, 0, &t, 1);
  return TTP_OK;
}

/* ---- windows -------------------------------------------------------------------------------- */

/* strides, dilations (absent: 1) and pads [t, l, b, r] of a 2-D window of r x s over an input of
   h x w; auto_pad SAME_UPPER, SAME_LOWER and VALID as ONNX defines them. */
static ttp_status window_attrs(onnx_reader* r, size_t k, int rs, int ss, int64_t h, int64_t w,
                               model_window* win) {
  const Onnx__NodeProto* n = r->g->node[k];
  int64_t st[ONNX_MAX_RANK], dil[ONNX_MAX_RANK], pads[ONNX_MAX_RANK];
  size_t nst, ndil, npads;
  if (onnx_ints_attr(n, "strides", st, ONNX_MAX_RANK, &nst) < 0 ||
      onnx_ints_attr(n, "dilations", dil, ONNX_MAX_RANK, &ndil) < 0 ||
      onnx_ints_attr(n, "pads", pads, ONNX_MAX_RANK, &npads) < 0)
    return onnx_node_error(r, k, "too many strides, dilations or pads");
  if ((nst && nst != 2) || (ndil && ndil != 2) || (npads && npads != 4))
    return onnx_node_error(r, k, "strides, dilations or pads not of a 2-D window");
  if (!nst) st[0] = st[1] = 1;
  if (!ndil) dil[0] = dil[1] = 1;
  if (!npads) pads[0] = pads[1] = pads[2] = pads[3] = 0;
  for (int i = 0; i < 2; i++)
    if (st[i] < 1 || st[i] > 64 || dil[i] < 1 || dil[i] > 64)
      return onnx_node_error(r, k, "stride %lld or dilation %lld: 1..64", (long long)st[i],
                             (long long)dil[i]);
  for (int i = 0; i < 4; i++)
    if (pads[i] < 0 || pads[i] > 64) return onnx_node_error(r, k, "padding %lld: 0..64", (long long)pads[i]);
  const int upper = onnx_string_attr_is(n, "auto_pad", "SAME_UPPER", 0);
  const int lower = onnx_string_attr_is(n, "auto_pad", "SAME_LOWER", 0);
  const int valid = onnx_string_attr_is(n, "auto_pad", "VALID", 0);
  if (!upper && !lower && !valid && !onnx_string_attr_is(n, "auto_pad", "NOTSET", 1))
    return onnx_node_error(r, k, "an auto_pad ttapipe does not know");
  if (valid) pads[0] = pads[1] = pads[2] = pads[3] = 0;
  if (upper || lower) {
    const int64_t size[2] = {h, w}, f[2] = {rs, ss};
    for (int i = 0; i < 2; i++) {
      const int64_t out = (size[i] + st[i] - 1) / st[i];
      int64_t total = (out - 1) * st[i] + (f[i] - 1) * dil[i] + 1 - size[i];
      if (total < 0) total = 0;
      if (total > 128) return onnx_node_error(r, k, "padding of %lld", (long long)total);
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[i + 2] = total - pads[i];
    }
  }
  *win = (model_window){rs, ss, (int)st[0], (int)st[1], (int)pads[0], (int)pads[1], (int)pads[2],
                        (int)pads[3], (int)dil[0], (int)dil[1]};
  return TTP_OK;
}

/* A pending zero padding of H and W alone that a Conv or AveragePool can take as its own. */
static int takes_pad(const onnx_tensor* t) {
  return t->pad.on && t->pad.c0 == 0 && t->pad.c1 == 0 && t->pad.value == 0.0f;
}

/* The value under a pending pad: the tensor before its Pad, read as its canonical shape. */
static ttp_status unpadded_value(onnx_reader* r, size_t k, onnx_tensor* t, int* v) {
  model_shape s;
  onnx_canonical(t, &s);
  s.h -= t->pad.h0 + t->pad.h1, s.w -= t->pad.w0 + t->pad.w1;
  onnx_tensor before = *t;
  before.pad.on = 0;
  TRY(value_as(r, k, &before, s, v));
  t->value = before.value; /* a Reshape made for it serves the next reader too */
  return TTP_OK;
}

static ttp_status conv(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* t;
  TRY(data_in(r, k, 4, 4, &t));
  const onnx_const* w = onnx_const_input(r, k, 1, "weights");
  if (!w) return r->e->status;
  if (w->rank != 4) return onnx_node_error(r, k, "weights of %d dimensions, not 4", w->rank);
  const int64_t group = onnx_int_attr(n, "group", 1);
  if (group < 1 || group > t->dims[1] || t->dims[1] % group || w->dims[0] % group ||
      w->dims[1] * group != t->dims[1] || w->dims[2] < 1 || w->dims[2] > 64 || w->dims[3] < 1 ||
      w->dims[3] > 64)
    return onnx_node_error(r, k, "weights %lldx%lldx%lldx%lld in %lld groups over %lld channels",
                           (long long)w->dims[0], (long long)w->dims[1], (long long)w->dims[2],
                           (long long)w->dims[3], (long long)group, (long long)t->dims[1]);
  int64_t ks[ONNX_MAX_RANK];
  size_t nks;
  if (onnx_ints_attr(n, "kernel_shape", ks, ONNX_MAX_RANK, &nks) > 0 &&
      (nks != 2 || ks[0] != w->dims[2] || ks[1] != w->dims[3]))
    return onnx_node_error(r, k, "kernel_shape differs from the weights'");
  model_window win;
  TRY(window_attrs(r, k, (int)w->dims[2], (int)w->dims[3], t->dims[2], t->dims[3], &win));
  int v;
  if (takes_pad(t)) {
    win.pad_t += t->pad.h0, win.pad_b += t->pad.h1, win.pad_l += t->pad.w0, win.pad_r += t->pad.w1;
    TRY(unpadded_value(r, k, t, &v));
  } else {
    TRY(value_of(r, k, t, &v));
  }
  const onnx_const* b = NULL;
  if (onnx_input(r, k, 2) >= 0) {
    if (!(b = onnx_const_input(r, k, 2, "bias"))) return r->e->status;
    if (b->count != (size_t)w->dims[0])
      return onnx_node_error(r, k, "a bias of %zu values for %lld outputs", b->count,
                             (long long)w->dims[0]);
  }
  model_layer* l = new_layer(r, k, MODEL_CONV);
  if (!l) return r->e->status;
  l->inputs[0] = v;
  l->p.conv.k = (int)w->dims[0], l->p.conv.groups = (int)group, l->p.conv.w = win;
  TRY(onnx_tensor_floats(r, w, r->slots[onnx_input(r, k, 1)].name, w->count, 0, 0, &l->weights));
  if (b) {
    TRY(onnx_tensor_floats(r, b, r->slots[onnx_input(r, k, 2)].name, b->count, 0, 0, &l->bias));
  } else {
    l->bias = calloc((size_t)w->dims[0], sizeof *l->bias);
    if (!l->bias) return ERR_NOMEM(r->e, (size_t)w->dims[0] * sizeof *l->bias);
  }
  return set_layer_output(r, k, 4);
}

static ttp_status pool(onnx_reader* r, size_t k, model_op op, int global) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* t;
  TRY(data_in(r, k, 4, 4, &t));
  if (n->n_output > 1 && r->node_outputs[k][1] >= 0 && r->slots[r->node_outputs[k][1]].uses > 0)
    return onnx_node_error(r, k, "its indices are read");
  model_window win;
  int count_pad = 0, ceil_mode = 0;
  if (global) {
    if (t->dims[2] > TTP_MAX_SIDE || t->dims[3] > TTP_MAX_SIDE)
      return onnx_node_error(r, k, "a global window of %lldx%lld (the input's largest at most)",
                             (long long)t->dims[2], (long long)t->dims[3]);
    win = model_window_of((int)t->dims[2], (int)t->dims[3], 1, 0);
  } else {
    int64_t ks[ONNX_MAX_RANK];
    size_t nks;
    if (onnx_ints_attr(n, "kernel_shape", ks, ONNX_MAX_RANK, &nks) <= 0 || nks != 2 ||
        ks[0] < 1 || ks[0] > TTP_MAX_SIDE || ks[1] < 1 || ks[1] > TTP_MAX_SIDE)
      return onnx_node_error(r, k, "kernel_shape: two sizes of 1..%d", TTP_MAX_SIDE);
    TRY(window_attrs(r, k, (int)ks[0], (int)ks[1], t->dims[2], t->dims[3], &win));
    if (win.dil_h != 1 || win.dil_w != 1) return onnx_node_error(r, k, "dilations other than 1");
    ceil_mode = onnx_int_attr(n, "ceil_mode", 0) != 0;
    count_pad = op == MODEL_AVGPOOL && onnx_int_attr(n, "count_include_pad", 0) != 0;
  }
  const int own = win.pad_t || win.pad_l || win.pad_b || win.pad_r;
  int v;
  if (op == MODEL_AVGPOOL && !global && takes_pad(t) && (count_pad || !own) &&
      win.pad_t + t->pad.h0 < win.r && win.pad_b + t->pad.h1 < win.r &&
      win.pad_l + t->pad.w0 < win.s && win.pad_r + t->pad.w1 < win.s) {
    win.pad_t += t->pad.h0, win.pad_b += t->pad.h1, win.pad_l += t->pad.w0, win.pad_r += t->pad.w1;
    count_pad = 1; /* the Pad's zeros are values to average */
    TRY(unpadded_value(r, k, t, &v));
  } else {
    TRY(value_of(r, k, t, &v));
  }
  model_layer* l = new_layer(r, k, op);
  if (!l) return r->e->status;
  l->inputs[0] = v;
  l->p.pool.w = win, l->p.pool.count_pad = count_pad, l->p.pool.ceil = ceil_mode;
  return set_layer_output(r, k, 4);
}

/* ReduceMean, ReduceMax or ReduceSum over the rows and columns: a global pooling (ReduceSum: and
   a scale by their number). */
static ttp_status reduce(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  const char* op = n->op_type;
  onnx_tensor* t;
  TRY(data_in(r, k, 4, 4, &t));
  const int sum = strcmp(op, "ReduceSum") == 0;
  const int from_input = sum ? r->opset >= 13 : r->opset >= 18;
  int64_t axes[ONNX_MAX_RANK];
  size_t count;
  if (from_input) TRY(onnx_ints_input(r, k, 1, "axes", axes, ONNX_MAX_RANK, &count));
  else if (onnx_ints_attr(n, "axes", axes, ONNX_MAX_RANK, &count) < 0)
    return onnx_node_error(r, k, "too many axes");
  int marked[4] = {0};
  for (size_t i = 0; i < count; i++) {
    const int64_t a = normalize_axis(axes[i], 4);
    if (a < 0 || a > 3) return onnx_node_error(r, k, "axis %lld", (long long)axes[i]);
    marked[a] = 1;
  }
  if (count == 0 && onnx_int_attr(n, "noop_with_empty_axes", 0)) {
    set_output(r, k, 0, t, r->slots[onnx_input(r, k, 0)].sole);
    return TTP_OK;
  }
  if (marked[0] || marked[1] || !marked[2] || !marked[3] || count == 0)
    return onnx_node_error(r, k, "a reduction over other axes than the rows and columns "
                           "together");
  const int keep = onnx_int_attr(n, "keepdims", 1) != 0;
  if (t->dims[2] > TTP_MAX_SIDE || t->dims[3] > TTP_MAX_SIDE)
    return onnx_node_error(r, k, "a window of %lldx%lld (the input's largest at most)", (long long)t->dims[2],
                           (long long)t->dims[3]);
  int v;
  TRY(value_of(r, k, t, &v));
  model_layer* l = new_layer(r, k, strcmp(op, "ReduceMax") == 0 ? MODEL_MAXPOOL : MODEL_AVGPOOL);
  if (!l) return r->e->status;
  l->inputs[0] = v;
  l->p.pool.w = model_window_of((int)t->dims[2], (int)t->dims[3], 1, 0);
  TRY(set_layer_output(r, k, keep ? 4 : 2));
  if (!sum) return TTP_OK;
  const double scale = (double)t->dims[2] * (double)t->dims[3], shift = 0;
  return affine(r, k, r->node_outputs[k][0], &scale, &shift, 1);
}

/* ---- fully connected ------------------------------------------------------------------------ */

/* A fully connected layer over tensor t (one row of K values an image) with weights w read as
   [out][K] (transposed from [K][out] when transpose), scaled by alpha; bias from c (scalar or
   out values) times beta, or zeros. */
static ttp_status fully_connected(onnx_reader* r, size_t k, onnx_tensor* t, int w_slot,
                                  int transpose, double alpha, int c_slot, double beta) {
  const onnx_const* w = &r->slots[w_slot].c;
  if (w->rank != 2 || w->dims[0] < 1 || w->dims[1] < 1)
    return onnx_node_error(r, k, "weights of %d dimensions, not 2", w->rank);
  const int64_t in = transpose ? w->dims[0] : w->dims[1], out = transpose ? w->dims[1] : w->dims[0];
  int64_t rows = 1;
  for (int d = 0; d < t->rank - 1; d++) rows *= t->dims[d];
  if (rows != 1 || t->dims[t->rank - 1] != in)
    return onnx_node_error(r, k, "an input of %lld values an image for weights of %lld inputs "
                           "(a shape mismatch)", (long long)t->dims[t->rank - 1], (long long)in);
  int v;
  TRY(value_plain(r, k, t, &v));
  model_layer* l = new_layer(r, k, MODEL_FC);
  if (!l) return r->e->status;
  l->inputs[0] = v;
  l->p.fc.out = (int)out;
  TRY(onnx_tensor_floats(r, w, r->slots[w_slot].name, w->count, transpose,
                         transpose ? (size_t)in : 0, &l->weights));
  l->bias = calloc((size_t)out, sizeof *l->bias);
  if (!l->bias) return ERR_NOMEM(r->e, (size_t)out * sizeof *l->bias);
  for (size_t i = 0; alpha != 1.0 && i < w->count; i++) {
    l->weights[i] = (float)(l->weights[i] * alpha);
    if (!isfinite(l->weights[i]))
      return onnx_node_error(r, k, "alpha %g times weight %zu overflows float32", alpha, i);
  }
  if (c_slot >= 0) {
    const onnx_const* c = &r->slots[c_slot].c;
    if (c->count != 1 && c->count != (size_t)out)
      return onnx_node_error(r, k, "a C of %zu values for %lld outputs", c->count, (long long)out);
    for (int64_t o = 0; o < out; o++) {
      l->bias[o] = (float)(onnx_const_f(c, c->count == 1 ? 0 : (size_t)o) * beta);
      if (!isfinite(l->bias[o])) return onnx_node_error(r, k, "a bias that is not finite");
    }
  }
  return set_layer_output(r, k, 2);
}

static ttp_status gemm(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* t;
  TRY(data_in(r, k, 2, 2, &t));
  if (onnx_int_attr(n, "transA", 0) != 0) return onnx_node_error(r, k, "transA");
  if (!onnx_const_input(r, k, 1, "B")) return r->e->status;
  if (onnx_input(r, k, 2) >= 0 && !onnx_const_input(r, k, 2, "C")) return r->e->status;
  return fully_connected(r, k, t, onnx_input(r, k, 1), onnx_int_attr(n, "transB", 0) == 0,
                         onnx_float_attr(n, "alpha", 1.0f), onnx_input(r, k, 2),
                         onnx_float_attr(n, "beta", 1.0f));
}

static ttp_status matmul(onnx_reader* r, size_t k) {
  onnx_tensor* t;
  TRY(data_in(r, k, 2, ONNX_MAX_RANK, &t));
  if (!onnx_const_input(r, k, 1, "matrix")) return r->e->status;
  return fully_connected(r, k, t, onnx_input(r, k, 1), 1, 1.0, -1, 1.0);
}

/* ---- channels, rows and columns ------------------------------------------------------------- */

/* The canonical axis (0 channels, 1 rows, 2 columns) of ONNX axis a (1..rank-1) of a tensor of
   rank 2 to 4; -1 for others. */
static int canon_axis(int64_t a, int rank) { return rank >= 2 && rank <= 4 && a >= 1 && a < rank ? (int)a - 1 : -1; }

static ttp_status concat(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* first = NULL;
  for (size_t i = 0; i < n->n_input && !first; i++) first = tensor_in(r, k, i);
  if (!first) return onnx_node_error(r, k, "no input computed from the image");
  const int64_t axis = normalize_axis(onnx_int_attr(n, "axis", 1), first->rank);
  if (axis != 1 || first->rank < 2 || first->rank > 4)
    return onnx_node_error(r, k, "along axis %lld of a rank-%d tensor (ttapipe concatenates "
                           "channels)", (long long)axis, first->rank);
  int values[MODEL_MAX_INPUTS] = {0}, count = 0, lead = 0, trail = 0;
  double fill = 0;
  int filled = 0;
  int64_t channels = 0;
  for (size_t i = 0; i < n->n_input; i++) {
    onnx_tensor* t = tensor_in(r, k, i);
    if (!t) { /* a constant of one value: channels of padding before or after */
      const onnx_const* c = onnx_const_input(r, k, i, "input");
      if (!c) return r->e->status;
      if (c->rank != first->rank) return onnx_node_error(r, k, "inputs of different ranks");
      for (size_t j = 0; j < c->count; j++)
        if (onnx_const_f(c, j) != onnx_const_f(c, 0) || (filled && onnx_const_f(c, 0) != fill))
          return onnx_node_error(r, k, "a constant input of several values");
      if (c->count) fill = onnx_const_f(c, 0), filled = 1;
      if (count == 0) lead += (int)c->dims[1];
      else trail += (int)c->dims[1];
      channels += c->dims[1];
      continue;
    }
    if (trail) return onnx_node_error(r, k, "a constant between the image's tensors");
    if (t->rank != first->rank) return onnx_node_error(r, k, "inputs of different ranks");
    for (int d = 2; d < t->rank; d++)
      if (t->dims[d] != first->dims[d])
        return onnx_node_error(r, k, "inputs of %lldx%lld and %lldx%lld rows and columns (a "
                               "shape mismatch)", (long long)first->dims[2],
                               (long long)(first->rank > 3 ? first->dims[3] : 1),
                               (long long)t->dims[2], (long long)(t->rank > 3 ? t->dims[3] : 1));
    if (count == MODEL_MAX_INPUTS) return onnx_node_error(r, k, "more than %d inputs", MODEL_MAX_INPUTS);
    TRY(value_of(r, k, t, &values[count]));
    count++;
    channels += t->dims[1];
  }
  int v = values[0];
  if (count > 1) {
    model_layer* l = new_layer(r, k, MODEL_CONCAT);
    if (!l) return r->e->status;
    memcpy(l->inputs, values, (size_t)count * sizeof *values);
    l->input_count = count;
    TRY(infer_last(r, k));
    v = r->m->layer_count;
  }
  if (lead || trail) {
    model_layer* l = new_layer(r, k, MODEL_PAD);
    if (!l) return r->e->status;
    l->inputs[0] = v;
    l->p.pad.c0 = lead, l->p.pad.c1 = trail, l->p.pad.value = (float)fill;
    TRY(infer_last(r, k));
    v = r->m->layer_count;
  }
  onnx_tensor out = *first;
  out.value = v, out.pad.on = 0, out.dims[1] = channels;
  set_output(r, k, 0, &out, count > 1 || lead || trail);
  return TTP_OK;
}

/* A slice layer of t's canonical shape: start, step and count per canonical axis. */
static ttp_status slice_layer(onnx_reader* r, size_t k, onnx_tensor* t, const int64_t* start,
                              const int64_t* step, const int64_t* count, size_t out_i) {
  int v;
  TRY(value_of(r, k, t, &v));
  model_layer* l = new_layer(r, k, MODEL_SLICE);
  if (!l) return r->e->status;
  l->inputs[0] = v;
  int64_t end[3];
  for (int a = 0; a < 3; a++) end[a] = start[a] + (count[a] - 1) * step[a] + 1;
  l->p.slice.c0 = (int)start[0], l->p.slice.c1 = (int)end[0];
  l->p.slice.h0 = (int)start[1], l->p.slice.h1 = (int)end[1];
  l->p.slice.w0 = (int)start[2], l->p.slice.w1 = (int)end[2];
  l->p.slice.step_h = (int)step[1], l->p.slice.step_w = (int)step[2];
  TRY(infer_last(r, k));
  onnx_tensor out = *t;
  out.value = r->m->layer_count, out.pad.on = 0;
  for (int a = 0; a < 3 && a + 1 < t->rank; a++) out.dims[a + 1] = count[a];
  set_output(r, k, out_i, &out, 1);
  return TTP_OK;
}

static ttp_status slice(onnx_reader* r, size_t k) {
  onnx_tensor* t;
  TRY(data_in(r, k, 2, 4, &t));
  int64_t start[ONNX_MAX_RANK], step[ONNX_MAX_RANK], count[ONNX_MAX_RANK], raw_end0;
  TRY(onnx_slice_params(r, k, t->rank, t->dims, start, step, count, &raw_end0));
  if (start[0] != 0 || step[0] != 1 || raw_end0 < INT32_MAX)
    return onnx_node_error(r, k, "a slice of the batch's axis");
  int64_t s3[3] = {0, 0, 0}, st3[3] = {1, 1, 1}, n3[3] = {1, 1, 1};
  for (int d = 1; d < t->rank; d++) {
    if (count[d] == 0) return onnx_node_error(r, k, "an empty slice");
    if (step[d] < 0) return onnx_node_error(r, k, "a negative step on the image's tensor");
    if (d == 1 && step[d] != 1) return onnx_node_error(r, k, "a step over channels");
    s3[d - 1] = start[d], st3[d - 1] = step[d], n3[d - 1] = count[d];
  }
  return slice_layer(r, k, t, s3, st3, n3, 0);
}

static ttp_status split(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* t;
  TRY(data_in(r, k, 2, 4, &t));
  const int64_t axis = normalize_axis(onnx_int_attr(n, "axis", 0), t->rank);
  const int ca = canon_axis(axis, t->rank);
  if (ca < 0) return onnx_node_error(r, k, "a split along axis %lld", (long long)axis);
  const size_t parts = n->n_output;
  if (parts == 0 || parts > 1024) return onnx_node_error(r, k, "%zu outputs", parts);
  int64_t* sizes = malloc(parts * sizeof *sizes);
  if (!sizes) return ERR_NOMEM(r->e, parts * sizeof *sizes);
  ttp_status s = onnx_split_sizes(r, k, t->dims[axis], sizes, parts);
  int64_t begin = 0;
  for (size_t p = 0; s == TTP_OK && p < parts; begin += sizes[p], p++) {
    const int o = r->node_outputs[k][p];
    if (o < 0 || r->slots[o].uses == 0) continue;
    if (sizes[p] == 0) {
      s = onnx_node_error(r, k, "an empty part is read");
      break;
    }
    int64_t s3[3] = {0, 0, 0}, st3[3] = {1, 1, 1}, n3[3];
    for (int d = 0; d < 3; d++) n3[d] = d + 1 < t->rank ? t->dims[d + 1] : 1;
    s3[ca] = begin, n3[ca] = sizes[p];
    s = slice_layer(r, k, t, s3, st3, n3, p);
  }
  free(sizes);
  return s;
}

static ttp_status pad(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* t;
  TRY(data_in(r, k, 2, 4, &t));
  if (!onnx_string_attr_is(n, "mode", "constant", 1))
    return onnx_node_error(r, k, "a mode other than constant");
  int64_t pads[2 * ONNX_MAX_RANK], axes[ONNX_MAX_RANK];
  size_t count = 0, naxes = 0;
  double value = 0;
  if (r->opset < 11) {
    if (onnx_ints_attr(n, "pads", pads, 2 * ONNX_MAX_RANK, &count) < 0)
      return onnx_node_error(r, k, "too many pads");
    value = onnx_float_attr(n, "value", 0.0f);
  } else {
    TRY(onnx_ints_input(r, k, 1, "pads", pads, 2 * ONNX_MAX_RANK, &count));
    if (onnx_input(r, k, 2) >= 0) {
      const onnx_const* c = onnx_const_input(r, k, 2, "constant_value");
      if (!c) return r->e->status;
      if (c->count != 1) return onnx_node_error(r, k, "a constant_value of %zu values", c->count);
      value = onnx_const_f(c, 0);
    }
    if (r->opset >= 18) TRY(onnx_ints_input(r, k, 3, "axes", axes, ONNX_MAX_RANK, &naxes));
  }
  if (!naxes) {
    naxes = (size_t)t->rank;
    for (int d = 0; d < t->rank; d++) axes[d] = d;
  }
  if (count != 2 * naxes) return onnx_node_error(r, k, "%zu pads for %zu axes", count, naxes);
  int64_t before[4] = {0}, after[4] = {0};
  for (size_t i = 0; i < naxes; i++) {
    const int64_t a = normalize_axis(axes[i], t->rank);
    if (a < 0 || a >= t->rank) return onnx_node_error(r, k, "axis %lld", (long long)axes[i]);
    const int64_t b = pads[i], e = pads[i + naxes];
    if (b < 0 || e < 0) return onnx_node_error(r, k, "a negative pad (a crop)");
    if (a == 0 && (b || e)) return onnx_node_error(r, k, "padding of the batch's axis");
    if (b > 64 || e > 64) return onnx_node_error(r, k, "padding of %lld (64 at most)", (long long)(b > e ? b : e));
    before[a] = b, after[a] = e;
  }
  if (!isfinite((float)value)) return onnx_node_error(r, k, "padding with %g", value);
  int v;
  TRY(value_of(r, k, t, &v)); /* any padding pending before it is a layer now */
  onnx_tensor out = *t;
  out.value = v;
  out.pad = (onnx_pending_pad){1, (int)before[1], (int)after[1], (int)before[2], (int)after[2],
                               (int)before[3], (int)after[3], (float)value};
  for (int d = 1; d < t->rank; d++) out.dims[d] += before[d] + after[d];
  set_output(r, k, 0, &out, 0);
  return TTP_OK;
}

/* Reshape, Flatten, Squeeze and Unsqueeze of a tensor: the same values, other dimensions (the
   batch's first and kept). */
static ttp_status view(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* t;
  TRY(data_in(r, k, 1, ONNX_MAX_RANK, &t));
  int rank;
  int64_t dims[ONNX_MAX_RANK];
  const char* op = n->op_type;
  if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) {
    int64_t axes[ONNX_MAX_RANK];
    size_t count;
    TRY(onnx_axes(r, k, axes, &count, r->opset >= 13));
    const int un = op[0] == 'U';
    if (count == 0)
      return onnx_node_error(r, k, un ? "no axes" : "no axes (the batch's would go too)");
    for (size_t i = 0; i < count; i++)
      if (normalize_axis(axes[i], un ? t->rank + (int)count : t->rank) == 0)
        return onnx_node_error(r, k, "the batch's axis");
    TRY(onnx_squeeze_dims(r, k, t->rank, t->dims, &rank, dims));
  } else {
    if (op[0] == 'F' && normalize_axis(onnx_int_attr(n, "axis", 1), t->rank) != 1)
      return onnx_node_error(r, k, "an axis other than 1 (the batch's stays apart)");
    TRY(onnx_reshape_dims(r, k, t->rank, t->dims, &rank, dims));
  }
  if (rank < 1 || dims[0] != 1)
    return onnx_node_error(r, k, "a shape that moves the batch's axis");
  int v;
  TRY(value_plain(r, k, t, &v)); /* padding pending is made before the values move */
  onnx_tensor out = *t;
  out.value = v, out.rank = rank;
  memcpy(out.dims, dims, sizeof dims);
  set_output(r, k, 0, &out, r->slots[onnx_input(r, k, 0)].sole);
  return TTP_OK;
}

/* Transpose of a tensor: a view when it moves only axes of size 1, a channel shuffle for
   ShuffleNet's [N, g, C/g, H, W] with perm 0, 2, 1, 3, 4. */
static ttp_status transpose(onnx_reader* r, size_t k) {
  onnx_tensor* t;
  TRY(data_in(r, k, 1, ONNX_MAX_RANK, &t));
  int64_t perm[ONNX_MAX_RANK];
  TRY(onnx_perm(r, k, t->rank, perm));
  onnx_tensor out = *t;
  for (int d = 0; d < t->rank; d++) out.dims[d] = t->dims[perm[d]];
  int64_t last = -1, moves = 0;
  for (int d = 0; d < t->rank; d++) {
    if (t->dims[perm[d]] == 1) continue;
    if (perm[d] < last) moves = 1;
    last = perm[d];
  }
  int v;
  TRY(value_plain(r, k, t, &v));
  out.value = v, out.pad.on = 0;
  if (!moves) {
    set_output(r, k, 0, &out, r->slots[onnx_input(r, k, 0)].sole);
    return TTP_OK;
  }
  static const int64_t shuffle[5] = {0, 2, 1, 3, 4};
  if (t->rank != 5 || memcmp(perm, shuffle, sizeof shuffle) != 0 || perm[0] != 0)
    return onnx_node_error(r, k, "a transpose that moves values (ttapipe takes a channel "
                           "shuffle: [N, g, C/g, H, W] with perm 0, 2, 1, 3, 4)");
  const int64_t c = t->dims[1] * t->dims[2];
  if (c > INT32_MAX || t->dims[3] > INT32_MAX || t->dims[4] > INT32_MAX)
    return onnx_node_error(r, k, "dimensions out of range");
  TRY(value_as(r, k, t, (model_shape){(int)c, (int)t->dims[3], (int)t->dims[4]}, &v));
  model_layer* l = new_layer(r, k, MODEL_SHUFFLE);
  if (!l) return r->e->status;
  l->inputs[0] = v;
  l->p.shuffle.groups = (int)t->dims[1];
  TRY(infer_last(r, k));
  out.value = r->m->layer_count;
  set_output(r, k, 0, &out, 1);
  return TTP_OK;
}

/* ---- one input, one output, the same shape --------------------------------------------------- */

static ttp_status pointwise(onnx_reader* r, size_t k, model_op op, model_layer** made) {
  onnx_tensor* t;
  TRY(data_in(r, k, 1, ONNX_MAX_RANK, &t));
  int v;
  TRY(value_plain(r, k, t, &v));
  model_layer* l = new_layer(r, k, op);
  if (!l) return r->e->status;
  l->inputs[0] = v;
  *made = l;
  return TTP_OK;
}

/* The pointwise layer's output: the input's dimensions, the new value. */
static ttp_status pointwise_done(onnx_reader* r, size_t k) {
  TRY(infer_last(r, k));
  onnx_tensor out = *tensor_in(r, k, 0);
  out.value = r->m->layer_count, out.pad.on = 0;
  set_output(r, k, 0, &out, 1);
  return TTP_OK;
}

static ttp_status scalar_input(onnx_reader* r, size_t k, size_t i, const char* what, float* v) {
  if (onnx_input(r, k, i) < 0) return TTP_OK;
  const onnx_const* c = onnx_const_input(r, k, i, what);
  if (!c) return r->e->status;
  if (c->count != 1) return onnx_node_error(r, k, "its %s is not one value", what);
  *v = (float)onnx_const_f(c, 0);
  return TTP_OK;
}

static ttp_status activation(onnx_reader* r, size_t k, const char* op) {
  const Onnx__NodeProto* n = r->g->node[k];
  static const struct { const char* name; model_op op; } simple[] = {
      {"Relu", MODEL_RELU}, {"Sigmoid", MODEL_SIGMOID}, {"Tanh", MODEL_TANH},
      {"HardSwish", MODEL_HARDSWISH}, {"Erf", MODEL_ERF}, {"Softplus", MODEL_SOFTPLUS},
      {"Mish", MODEL_MISH}};
  model_layer* l;
  for (size_t i = 0; i < sizeof simple / sizeof *simple; i++)
    if (strcmp(op, simple[i].name) == 0) {
      TRY(pointwise(r, k, simple[i].op, &l));
      return pointwise_done(r, k);
    }
  if (strcmp(op, "LeakyRelu") == 0) {
    TRY(pointwise(r, k, MODEL_LEAKY_RELU, &l));
    l->p.leaky.alpha = onnx_float_attr(n, "alpha", 0.01f);
  } else if (strcmp(op, "Elu") == 0) {
    TRY(pointwise(r, k, MODEL_ELU, &l));
    l->p.elu.alpha = onnx_float_attr(n, "alpha", 1.0f);
  } else if (strcmp(op, "HardSigmoid") == 0) {
    TRY(pointwise(r, k, MODEL_HARDSIGMOID, &l));
    l->p.hard.alpha = onnx_float_attr(n, "alpha", 0.2f);
    l->p.hard.beta = onnx_float_attr(n, "beta", 0.5f);
  } else if (strcmp(op, "Gelu") == 0) {
    if (!onnx_string_attr_is(n, "approximate", "none", 1))
      return onnx_node_error(r, k, "the tanh approximation (ttapipe computes GELU with erf)");
    TRY(pointwise(r, k, MODEL_GELU, &l));
  } else if (strcmp(op, "Clip") == 0) {
    float lo = -FLT_MAX, hi = FLT_MAX;
    if (r->opset < 11) {
      lo = onnx_float_attr(n, "min", lo), hi = onnx_float_attr(n, "max", hi);
    } else {
      TRY(scalar_input(r, k, 1, "min", &lo));
      TRY(scalar_input(r, k, 2, "max", &hi));
    }
    if (!(lo <= hi)) return onnx_node_error(r, k, "min %g above max %g", (double)lo, (double)hi);
    TRY(pointwise(r, k, MODEL_CLIP, &l));
    l->p.clip.lo = lo, l->p.clip.hi = hi;
  } else if (strcmp(op, "PRelu") == 0) {
    onnx_tensor* t;
    TRY(data_in(r, k, 1, 4, &t));
    const onnx_const* c = onnx_const_input(r, k, 1, "slope");
    if (!c) return r->e->status;
    double* v;
    size_t count;
    TRY(per_channel(r, k, c, t, &v, &count));
    if (!finite_floats(v, count)) {
      free(v);
      return onnx_node_error(r, k, "a slope that is not a finite float32");
    }
    if (pointwise(r, k, MODEL_PRELU, &l) != TTP_OK) {
      free(v);
      return r->e->status;
    }
    l->weights = malloc(count * sizeof *l->weights);
    if (!l->weights) {
      free(v);
      return ERR_NOMEM(r->e, count * sizeof *l->weights);
    }
    for (size_t i = 0; i < count; i++) l->weights[i] = (float)v[i];
    l->weight_count = count;
    free(v);
  } else if (strcmp(op, "LRN") == 0) {
    const int64_t size = onnx_int_attr(n, "size", 0);
    if (size < 1 || size > 15) return onnx_node_error(r, k, "size %lld: 1..15", (long long)size);
    onnx_tensor* t;
    TRY(data_in(r, k, 2, 4, &t));
    int v;
    TRY(value_of(r, k, t, &v));
    if (!(l = new_layer(r, k, MODEL_LRN))) return r->e->status;
    l->inputs[0] = v;
    l->p.lrn.n = (int)size, l->p.lrn.alpha = onnx_float_attr(n, "alpha", 1e-4f);
    l->p.lrn.beta = onnx_float_attr(n, "beta", 0.75f), l->p.lrn.k = onnx_float_attr(n, "bias", 1.0f);
  } else {
    return onnx_node_error(r, k, "operator not supported");
  }
  return pointwise_done(r, k);
}

/* A Softmax's or LogSoftmax's axis: over the whole vector of an image (every other axis but the
   batch's of size 1, or opsets before 13 that flatten from the axis). */
static ttp_status softmax_axis(onnx_reader* r, size_t k, onnx_tensor** t) {
  TRY(data_in(r, k, 2, ONNX_MAX_RANK, t));
  const int rank = (*t)->rank;
  const int64_t axis =
      normalize_axis(onnx_int_attr(r->g->node[k], "axis", r->opset < 13 ? 1 : -1), rank);
  int whole = axis >= 1 && axis < rank && (r->opset >= 13 || axis == 1);
  for (int d = 1; whole && d < rank && r->opset >= 13; d++)
    if (d != axis && (*t)->dims[d] != 1) whole = 0;
  if (!whole)
    return onnx_node_error(r, k, "a softmax over axis %lld of a %d-dimension tensor (ttapipe's "
                           "is over every value of an image)", (long long)axis, rank);
  return TTP_OK;
}

static ttp_status softmax(onnx_reader* r, size_t k) {
  onnx_tensor* t;
  TRY(softmax_axis(r, k, &t));
  model_layer* l;
  TRY(pointwise(r, k, MODEL_SOFTMAX, &l));
  return pointwise_done(r, k);
}

/* Identity, Dropout and Cast to a float type: the same tensor. */
static ttp_status alias(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_tensor* t;
  TRY(data_in(r, k, 1, ONNX_MAX_RANK, &t));
  if (strcmp(n->op_type, "CastLike") == 0) { /* to the type of input 1: a float type */
    const int like = onnx_input(r, k, 1);
    const onnx_const* c = like >= 0 && r->slots[like].kind != SLOT_TENSOR ? onnx_const_of(r, k, like) : NULL;
    if (like < 0 || (r->slots[like].kind != SLOT_TENSOR && (!c || c->integer)))
      return onnx_node_error(r, k, "a cast of the image's tensor to a type that is not a float "
                             "type");
  }
  if (strcmp(n->op_type, "Cast") == 0) {
    const int64_t to = onnx_int_attr(n, "to", 0);
    if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
        to != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE && to != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16)
      return onnx_node_error(r, k, "a cast of the image's tensor to type %lld, not a float type",
                             (long long)to);
  }
  if (strcmp(n->op_type, "Dropout") == 0 && n->n_output > 1 && r->node_outputs[k][1] >= 0 &&
      r->slots[r->node_outputs[k][1]].uses > 0)
    return onnx_node_error(r, k, "its mask is read");
  set_output(r, k, 0, t, r->slots[onnx_input(r, k, 0)].sole);
  return TTP_OK;
}

const char onnx_supported[] =
    "Conv, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, ReduceMean, ReduceMax, "
    "ReduceSum, Gemm, MatMul, BatchNormalization, Add, Sub, Mul, Div, Sum, Neg, Concat, Split, "
    "Slice, Pad, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Relu, LeakyRelu, Sigmoid, Tanh, "
    "Clip, HardSwish, HardSigmoid, Gelu, Erf, Elu, PRelu, Softplus, Mish, LRN, Softmax, "
    "LogSoftmax (as the output), "
    "Identity, Dropout, Cast, CastLike, Shape, Size and operators on constants";

ttp_status onnx_layers(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  const char* op = n->op_type;
  if (strcmp(op, "Conv") == 0) return conv(r, k);
  if (strcmp(op, "MaxPool") == 0) return pool(r, k, MODEL_MAXPOOL, 0);
  if (strcmp(op, "AveragePool") == 0) return pool(r, k, MODEL_AVGPOOL, 0);
  if (strcmp(op, "GlobalAveragePool") == 0) return pool(r, k, MODEL_AVGPOOL, 1);
  if (strcmp(op, "GlobalMaxPool") == 0) return pool(r, k, MODEL_MAXPOOL, 1);
  if (strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceMax") == 0 || strcmp(op, "ReduceSum") == 0)
    return reduce(r, k);
  if (strcmp(op, "Gemm") == 0) return gemm(r, k);
  if (strcmp(op, "MatMul") == 0) return matmul(r, k);
  if (strcmp(op, "BatchNormalization") == 0) return batch_norm(r, k);
  if (strcmp(op, "Add") == 0 || strcmp(op, "Sum") == 0) return elementwise(r, k, MODEL_ADD);
  if (strcmp(op, "Sub") == 0) return elementwise(r, k, MODEL_SUB);
  if (strcmp(op, "Mul") == 0) return elementwise(r, k, MODEL_MUL);
  if (strcmp(op, "Div") == 0) return elementwise(r, k, MODEL_DIV);
  if (strcmp(op, "Neg") == 0) {
    onnx_tensor* t;
    TRY(data_in(r, k, 1, 4, &t));
    const double scale = -1, shift = 0;
    return affine(r, k, onnx_input(r, k, 0), &scale, &shift, 1);
  }
  if (strcmp(op, "Concat") == 0) return concat(r, k);
  if (strcmp(op, "Split") == 0) return split(r, k);
  if (strcmp(op, "Slice") == 0) return slice(r, k);
  if (strcmp(op, "Pad") == 0) return pad(r, k);
  if (strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0 || strcmp(op, "Squeeze") == 0 ||
      strcmp(op, "Unsqueeze") == 0)
    return view(r, k);
  if (strcmp(op, "Transpose") == 0) return transpose(r, k);
  if (strcmp(op, "Softmax") == 0) return softmax(r, k);
  if (strcmp(op, "LogSoftmax") == 0) { /* the graph's output: logits to the softmax added after */
    const int out = r->node_outputs[k][0];
    if (out < 0 || !r->slots[out].is_output || r->slots[out].uses != 1)
      return onnx_node_error(r, k, "a LogSoftmax that is not the graph's output");
    onnx_tensor* t;
    TRY(softmax_axis(r, k, &t));
    set_output(r, k, 0, t, 0);
    return TTP_OK;
  }
  if (strcmp(op, "CastLike") == 0 && !tensor_in(r, k, 0))
    return onnx_fold(r, k); /* a constant cast like the image's tensor */
  if (strcmp(op, "Identity") == 0 || strcmp(op, "Dropout") == 0 || strcmp(op, "Cast") == 0 ||
      strcmp(op, "CastLike") == 0)
    return alias(r, k);
  if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) {
    onnx_tensor* t;
    TRY(data_in(r, k, 1, ONNX_MAX_RANK, &t));
    return onnx_fold_shape(r, k, t->rank, t->dims);
  }
  static const char* const activations[] = {"Relu", "Sigmoid", "Tanh", "HardSwish", "Erf",
                                            "Softplus", "Mish", "LeakyRelu", "Elu", "HardSigmoid",
                                            "Gelu", "Clip", "PRelu", "LRN"};
  for (size_t i = 0; i < sizeof activations / sizeof *activations; i++)
    if (strcmp(op, activations[i]) == 0) return activation(r, k, op);
  return onnx_node_error(r, k, "operator not supported on the image's tensors (ttapipe's: %s)",
                         onnx_supported);
}
