/* Reads an ONNX model (a chain of supported operators) into a model: see onnx.h. The
   protobuf parser is protoc-c's, generated at build time from Debian's onnx.proto. */
#include "onnx.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "../io/file.h"
#include "labels.h"
#include "onnx.pb-c.h"

enum { OPSET_LOW = 7, OPSET_HIGH = 21, INPUT_LOW = TTP_MIN_SIDE, INPUT_HIGH = TTP_MAX_SIDE };

/* What a node of the chain became: the layer it added (none for those dropped or folded) and the
   initializers its weights and bias come from. */
typedef struct planned {
  int layer; /* its index in the model (model_add may move the layers), or -1 */
  const Onnx__TensorProto *weights, *bias;
  int transpose; /* Gemm with transB = 0: B is [in][out] */
  /* A BatchNormalization folded into this Conv or Gemm: scale, B, mean, var; epsilon. */
  const Onnx__TensorProto* norm[4];
  float epsilon;
} planned;

/* A name the graph gives a value: initializer i, or the output of node k; `order` (initializers
   first, then the nodes) says which comes first where several give the same name. */
typedef struct named {
  const char* name;
  size_t order;
  const Onnx__TensorProto* t; /* the initializer, or NULL */
  const Onnx__NodeProto* n;   /* the node, or NULL */
} named;

typedef struct reader {
  const char* path;
  const Onnx__GraphProto* g;
  named* names; /* every initializer and node output 0, sorted by name then order */
  size_t n_names;
  int64_t opset;
  model* m;
  planned* plan;
  int weighted; /* the node whose Conv, Gemm or MatMul layer is the model's last, or -1 */
  int pad;      /* a Pad waiting for the Conv or AveragePool it folds into: its padding */
  size_t pad_node;
  ttp_err* e;
} reader;

/* A constant tensor by name: an initializer, the value of a Constant node (PyTorch writes those
   for a Pad's pads, a Clip's bounds, an Unsqueeze's axes), or an Identity of a constant (PyTorch
   writes those where two initializers hold the same values), followed at most `depth` Identity
   nodes deep. */
static int by_name(const void* a, const void* b) {
  const named *x = a, *y = b;
  const int c = strcmp(x->name, y->name);
  return c ? c : x->order < y->order ? -1 : x->order > y->order;
}

/* The names index, so that looking a name up costs a binary search, not a walk of the graph (a
   file of many Constant nodes took time quadratic in their number). */
static ttp_status index_names(reader* r) {
  const Onnx__GraphProto* g = r->g;
  r->names = malloc((g->n_initializer + g->n_node + 1) * sizeof *r->names);
  if (!r->names) return ERR_NOMEM(r->e, (g->n_initializer + g->n_node) * sizeof *r->names);
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name)
      r->names[r->n_names++] = (named){g->initializer[i]->name, i, g->initializer[i], NULL};
  for (size_t k = 0; k < g->n_node; k++) {
    const Onnx__NodeProto* n = g->node[k];
    if (n->op_type && n->n_output >= 1 && n->output[0])
      r->names[r->n_names++] = (named){n->output[0], g->n_initializer + k, NULL, n};
  }
  qsort(r->names, r->n_names, sizeof *r->names, by_name);
  return TTP_OK;
}

static const Onnx__TensorProto* constant(const reader* r, const char* name, int depth) {
  if (!name || !r->names) return NULL;
  const named key = {name, 0, NULL, NULL}; /* order 0: the first of that name */
  size_t lo = 0, hi = r->n_names;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (by_name(&r->names[mid], &key) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo == r->n_names || strcmp(r->names[lo].name, name) != 0) return NULL;
  if (r->names[lo].t) return r->names[lo].t;
  const Onnx__NodeProto* n = r->names[lo].n;
  if (strcmp(n->op_type, "Identity") == 0)
    return depth > 0 && n->n_input == 1 ? constant(r, n->input[0], depth - 1) : NULL;
  if (strcmp(n->op_type, "Constant") != 0) return NULL;
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, "value") == 0)
      return n->attribute[i]->t;
  return NULL;
}

static const Onnx__TensorProto* initializer(const reader* r, const char* name) {
  return constant(r, name, 4);
}

/* A constant's int64 values (typed or raw little-endian, as PyTorch writes them): at most max
   into v, their number into *n; 0 when it is not such a tensor or holds more. */
static int int64_values(const Onnx__TensorProto* t, int64_t* v, size_t max, size_t* n) {
  if (!t || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64) return 0;
  if (t->has_raw_data && t->raw_data.len > 0) {
    if (t->raw_data.len % 8 || t->raw_data.len / 8 > max) return 0;
    *n = t->raw_data.len / 8;
    for (size_t i = 0; i < *n; i++) {
      uint64_t u = 0;
      for (int b = 7; b >= 0; b--) u = u << 8 | t->raw_data.data[8 * i + b];
      memcpy(&v[i], &u, sizeof u);
    }
    return 1;
  }
  if (t->n_int64_data > max) return 0;
  *n = t->n_int64_data;
  for (size_t i = 0; i < *n; i++) v[i] = t->int64_data[i];
  return 1;
}

/* A constant holding one float32 value (typed or raw). */
static int float_value(const Onnx__TensorProto* t, float* v) {
  if (!t || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) return 0;
  if (t->has_raw_data && t->raw_data.len > 0) {
    if (t->raw_data.len != 4) return 0;
    *v = io_float_le(t->raw_data.data);
    return 1;
  }
  if (t->n_float_data != 1) return 0;
  *v = t->float_data[0];
  return 1;
}

static const Onnx__AttributeProto* attribute(const Onnx__NodeProto* n, const char* name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}

static int64_t int_attr(const Onnx__NodeProto* n, const char* name, int64_t fallback) {
  const Onnx__AttributeProto* a = attribute(n, name);
  return a && a->has_i ? a->i : fallback;
}

static float float_attr(const Onnx__NodeProto* n, const char* name, float fallback) {
  const Onnx__AttributeProto* a = attribute(n, name);
  return a && a->has_f ? a->f : fallback;
}

/* Node k's error: "FILE: node k 'NAME' (OP): why". */
static ttp_status node_error(const reader* r, size_t k, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static ttp_status node_error(const reader* r, size_t k, const char* fmt, ...) {
  const Onnx__NodeProto* n = r->g->node[k];
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return ERR(r->e, TTP_ERR_MODEL, "%s: node %zu '%s' (%s): %s", r->path, k,
             n->name ? n->name : "", n->op_type ? n->op_type : "?", why);
}

/* An INTS attribute whose values must all be `want` (absent: fine). */
static int all_ints(const Onnx__NodeProto* n, const char* name, int64_t want) {
  const Onnx__AttributeProto* a = attribute(n, name);
  for (size_t i = 0; a && i < a->n_ints; i++)
    if (a->ints[i] != want) return 0;
  return 1;
}

/* The two values of a 2-D INTS attribute (strides, kernel_shape): both given, or fallback. */
static int pair_attr(const Onnx__NodeProto* n, const char* name, int64_t fallback, int64_t v[2]) {
  const Onnx__AttributeProto* a = attribute(n, name);
  if (!a) return v[0] = v[1] = fallback, 1;
  if (a->n_ints != 2) return 0;
  return v[0] = a->ints[0], v[1] = a->ints[1], 1;
}

static model_layer* add(reader* r, size_t k, model_op op) {
  const Onnx__NodeProto* n = r->g->node[k];
  char name[32];
  if (n->name && n->name[0])
    snprintf(name, sizeof name, "%s", n->name);
  else
    snprintf(name, sizeof name, "%s%zu", model_op_name(op), k);
  model_layer* l = model_add(r->m, op, name, r->e);
  r->plan[k].layer = l ? r->m->layer_count - 1 : -1;
  r->weighted = op == MODEL_CONV || op == MODEL_FC ? (int)k : -1;
  return l;
}

/* The padding of a Pad node before this Conv or AveragePool (0 when there is none), taken. */
static int take_pad(reader* r) {
  int pad = r->pad;
  r->pad = 0;
  return pad;
}

static int small_int(int64_t v, int lo, int hi) { return v >= lo && v <= hi; }

/* A Conv's or Gemm's weights (input 1) and optional bias (input 2, absent or named ""): both
   initializers. */
static ttp_status weight_inputs(const reader* r, size_t k, const Onnx__TensorProto** w,
                                const Onnx__TensorProto** b) {
  const Onnx__NodeProto* n = r->g->node[k];
  if (n->n_input < 2) return node_error(r, k, "no weights");
  if (!(*w = initializer(r, n->input[1])))
    return node_error(r, k, "its weights '%s' are not an initializer", n->input[1]);
  *b = NULL;
  if (n->n_input > 2 && n->input[2][0] && !(*b = initializer(r, n->input[2])))
    return node_error(r, k, "its bias '%s' is not an initializer", n->input[2]);
  return TTP_OK;
}

static ttp_status conv_node(reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  const Onnx__TensorProto *w = NULL, *b = NULL;
  TRY(weight_inputs(r, k, &w, &b));
  if (w->n_dims != 4 || !small_int(w->dims[0], 1, 4096) || !small_int(w->dims[2], 1, 64) ||
      !small_int(w->dims[3], 1, 64))
    return node_error(r, k, "weights of %zu dimensions, or of sizes out of range (K 1..4096, "
                      "R and S 1..64)", w->n_dims);
  if (int_attr(n, "group", 1) != 1) return node_error(r, k, "groups other than 1");
  if (!all_ints(n, "dilations", 1)) return node_error(r, k, "dilations other than 1");
  const Onnx__AttributeProto* ap = attribute(n, "auto_pad");
  if (ap && ap->has_s && !(ap->s.len == 6 && memcmp(ap->s.data, "NOTSET", 6) == 0))
    return node_error(r, k, "auto_pad: give the pads");
  int64_t stride[2], kernel[2] = {w->dims[2], w->dims[3]};
  if (!pair_attr(n, "strides", 1, stride) || stride[0] != stride[1] || !small_int(stride[0], 1, 8))
    return node_error(r, k, "strides: equal in both directions, 1..8");
  int64_t given[2];
  if (attribute(n, "kernel_shape") && (!pair_attr(n, "kernel_shape", 0, given) ||
                                       given[0] != kernel[0] || given[1] != kernel[1]))
    return node_error(r, k, "kernel_shape differs from the weights' %lldx%lld",
                      (long long)kernel[0], (long long)kernel[1]);
  const Onnx__AttributeProto* pads = attribute(n, "pads");
  int64_t pad = 0;
  if (pads) {
    if (pads->n_ints != 4) return node_error(r, k, "pads of %zu values, not 4", pads->n_ints);
    pad = pads->ints[0];
    for (int i = 1; i < 4; i++)
      if (pads->ints[i] != pad) return node_error(r, k, "pads other than equal on every side");
    if (!small_int(pad, 0, 8)) return node_error(r, k, "padding %lld: 0..8", (long long)pad);
  }
  pad += take_pad(r);
  model_layer* l = add(r, k, MODEL_CONV);
  if (!l) return r->e->status;
  l->p.conv.k = (int)w->dims[0], l->p.conv.groups = 1;
  l->p.conv.w = model_window_of((int)kernel[0], (int)kernel[1], (int)stride[0], (int)pad);
  r->plan[k].weights = w, r->plan[k].bias = b;
  return TTP_OK;
}

/* The padding of a node's pads attribute: equal on every side, 0..limit (absent: 0). */
static ttp_status pads_attr(const reader* r, size_t k, int64_t limit, int64_t* pad) {
  const Onnx__AttributeProto* pads = attribute(r->g->node[k], "pads");
  *pad = 0;
  if (!pads) return TTP_OK;
  if (pads->n_ints != 4) return node_error(r, k, "pads of %zu values, not 4", pads->n_ints);
  *pad = pads->ints[0];
  for (int i = 1; i < 4; i++)
    if (pads->ints[i] != *pad) return node_error(r, k, "pads other than equal on every side");
  if (!small_int(*pad, 0, limit))
    return node_error(r, k, "padding %lld: 0..%lld", (long long)*pad, (long long)limit);
  return TTP_OK;
}

/* MaxPool or AveragePool (op): a 2-D window, equal strides, equal padding on every side smaller
   than the window. An AveragePool after a Pad takes its zeros as counted padding. */
static ttp_status pool_node(reader* r, size_t k, model_op op) {
  const Onnx__NodeProto* n = r->g->node[k];
  int64_t kernel[2], stride[2], pad;
  if (!attribute(n, "kernel_shape") || !pair_attr(n, "kernel_shape", 1, kernel) ||
      !small_int(kernel[0], 1, 16) || !small_int(kernel[1], 1, 16))
    return node_error(r, k, "kernel_shape: two sizes of 1..16");
  if (!pair_attr(n, "strides", 1, stride) || stride[0] != stride[1] || !small_int(stride[0], 1, 16))
    return node_error(r, k, "strides: equal in both directions, 1..16");
  const Onnx__AttributeProto* ap = attribute(n, "auto_pad");
  if (ap && ap->has_s && !(ap->s.len == 6 && memcmp(ap->s.data, "NOTSET", 6) == 0))
    return node_error(r, k, "auto_pad: give the pads");
  TRY(pads_attr(r, k, 15, &pad));
  if (!all_ints(n, "dilations", 1)) return node_error(r, k, "dilations other than 1");
  if (int_attr(n, "ceil_mode", 0) != 0) return node_error(r, k, "ceil_mode");
  if (n->n_output > 1) return node_error(r, k, "the indices output");
  int count_pad = op == MODEL_AVGPOOL && int_attr(n, "count_include_pad", 0) != 0;
  if (r->pad) { /* an AveragePool (node_layer refuses anything else after a Pad) */
    if (pad && !count_pad)
      return node_error(r, k, "padding of its own, not counted, after a Pad's counted zeros");
    pad += take_pad(r), count_pad = 1;
  }
  if (pad >= kernel[0] || pad >= kernel[1])
    return node_error(r, k, "padding %lld not smaller than the %lldx%lld window", (long long)pad,
                      (long long)kernel[0], (long long)kernel[1]);
  model_layer* l = add(r, k, op);
  if (!l) return r->e->status;
  l->p.pool.w = model_window_of((int)kernel[0], (int)kernel[1], (int)stride[0], (int)pad);
  l->p.pool.count_pad = count_pad;
  return TTP_OK;
}

/* Pad in constant mode with zeros, equal on the four sides of H and W and none on N and C:
   folded into the Conv or AveragePool that must come next. The pads and the value are an
   attribute (opsets before 11) or constant inputs. */
static ttp_status pad_node(reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  const Onnx__AttributeProto* mode = attribute(n, "mode");
  if (mode && mode->has_s && !(mode->s.len == 8 && memcmp(mode->s.data, "constant", 8) == 0))
    return node_error(r, k, "a mode other than constant");
  int64_t pads[8];
  size_t count = 0;
  float value = 0.0f;
  if (r->opset < 11) {
    const Onnx__AttributeProto* a = attribute(n, "pads");
    if (!a || a->n_ints != 8) return node_error(r, k, "pads: 8 values (N, C, H, W; begins, ends)");
    for (int i = 0; i < 8; i++) pads[i] = a->ints[i];
    count = 8;
    value = float_attr(n, "value", 0.0f);
  } else {
    if (n->n_input < 2 || !int64_values(initializer(r, n->input[1]), pads, 8, &count) ||
        count != 8)
      return node_error(r, k, "pads that are not a constant of 8 int64 values (N, C, H, W)");
    if (n->n_input > 2 && n->input[2][0] &&
        !float_value(initializer(r, n->input[2]), &value))
      return node_error(r, k, "a constant_value that is not one float32 constant");
    if (n->n_input > 3 && n->input[3][0]) return node_error(r, k, "axes");
  }
  if (value != 0.0f) return node_error(r, k, "padding with %g, not zeros", (double)value);
  if (pads[0] || pads[1] || pads[4] || pads[5] || pads[3] != pads[2] || pads[6] != pads[2] ||
      pads[7] != pads[2] || !small_int(pads[2], 0, 8))
    return node_error(r, k, "padding other than 0..8 equal on the four sides of the image");
  if (r->pad) return node_error(r, k, "a Pad after a Pad");
  r->pad = (int)pads[2], r->pad_node = k;
  return TTP_OK;
}

/* Clip: bounds as attributes (opsets before 11) or optional float32 constant inputs. */
static ttp_status clip_node(reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  float lo = -FLT_MAX, hi = FLT_MAX;
  if (r->opset < 11) {
    lo = float_attr(n, "min", lo), hi = float_attr(n, "max", hi);
  } else {
    for (int i = 1; i <= 2; i++)
      if (n->n_input > (size_t)i && n->input[i][0] &&
          !float_value(initializer(r, n->input[i]), i == 1 ? &lo : &hi))
        return node_error(r, k, "its %s is not one float32 constant", i == 1 ? "min" : "max");
  }
  if (!(lo <= hi)) return node_error(r, k, "min %g above max %g", (double)lo, (double)hi);
  model_layer* l = add(r, k, MODEL_CLIP);
  if (!l) return r->e->status;
  l->p.clip.lo = lo, l->p.clip.hi = hi;
  return TTP_OK;
}

static ttp_status gemm_node(reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  const Onnx__TensorProto *w = NULL, *b = NULL;
  TRY(weight_inputs(r, k, &w, &b));
  if (int_attr(n, "transA", 0) != 0) return node_error(r, k, "transA");
  if (float_attr(n, "alpha", 1.0f) != 1.0f || float_attr(n, "beta", 1.0f) != 1.0f)
    return node_error(r, k, "alpha or beta other than 1");
  const int transpose = int_attr(n, "transB", 0) == 0;
  if (w->n_dims != 2 || !small_int(w->dims[0], 1, 1 << 20) || !small_int(w->dims[1], 1, 1 << 20))
    return node_error(r, k, "weights of %zu dimensions, or of sizes out of range", w->n_dims);
  model_layer* l = add(r, k, MODEL_FC);
  if (!l) return r->e->status;
  l->p.fc.out = (int)w->dims[transpose ? 1 : 0];
  r->plan[k].weights = w, r->plan[k].bias = b, r->plan[k].transpose = transpose;
  return TTP_OK;
}

/* MatMul by a constant [in][out] matrix: a fully connected layer without bias, which an Add of a
   constant vector right after gives (add_node). */
static ttp_status matmul_node(reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  const Onnx__TensorProto* w = n->n_input == 2 ? initializer(r, n->input[1]) : NULL;
  if (!w) return node_error(r, k, "its second input is not a constant matrix");
  if (w->n_dims != 2 || !small_int(w->dims[0], 1, 1 << 20) || !small_int(w->dims[1], 1, 1 << 20))
    return node_error(r, k, "a matrix of %zu dimensions, or of sizes out of range", w->n_dims);
  model_layer* l = add(r, k, MODEL_FC);
  if (!l) return r->e->status;
  l->p.fc.out = (int)w->dims[1];
  r->plan[k].weights = w, r->plan[k].transpose = 1;
  return TTP_OK;
}

/* Add of a constant vector (the data in either input) right after a MatMul: its bias. */
static ttp_status add_node(reader* r, size_t k, const char* data) {
  const Onnx__NodeProto* n = r->g->node[k];
  planned* mm = r->weighted >= 0 ? &r->plan[r->weighted] : NULL;
  const char* other = n->n_input == 2 ? n->input[strcmp(n->input[0], data) == 0 ? 1 : 0] : NULL;
  const Onnx__TensorProto* b = other ? initializer(r, other) : NULL;
  if (!mm || !mm->transpose || mm->bias || mm->norm[0] ||
      strcmp(r->g->node[r->weighted]->op_type, "MatMul") != 0 ||
      mm->layer != r->m->layer_count - 1)
    return node_error(r, k, "not right after a MatMul (only there is an Add its bias)");
  if (!b) return node_error(r, k, "its other input is not a constant");
  mm->bias = b;
  return TTP_OK;
}

/* Unsqueeze or Squeeze of one row an image (after a Gemm or Flatten: [N, K] and [N, K, 1, 1]
   hold the same values in a CHW model) on axes 2 and up; axes as an attribute (opsets before 13)
   or a constant input. */
static ttp_status squeeze_node(reader* r, size_t k, int flat) {
  const Onnx__NodeProto* n = r->g->node[k];
  if (!flat) return node_error(r, k, "on a tensor that is not one row an image");
  int64_t axes[8];
  size_t count = 0;
  const Onnx__AttributeProto* a = attribute(n, "axes");
  if (a) {
    if (a->n_ints > 8) return node_error(r, k, "%zu axes", a->n_ints);
    count = a->n_ints;
    for (size_t i = 0; i < count; i++) axes[i] = a->ints[i];
  } else if (n->n_input < 2 || !int64_values(initializer(r, n->input[1]), axes, 8, &count)) {
    return node_error(r, k, "axes that are not given as constants");
  }
  if (count == 0) return node_error(r, k, "no axes (which would take the batch's too)");
  for (size_t i = 0; i < count; i++)
    if (!small_int(axes[i], 2, 5)) return node_error(r, k, "axis %lld: 2..5", (long long)axes[i]);
  return TTP_OK;
}

/* model_infer_shapes, its refusal naming the file ("FILE: layer lrn: bad LRN ..."). */
static ttp_status shapes(reader* r) {
  if (model_infer_shapes(r->m, r->e) != TTP_OK) err_prefix(r->e, "%s: ", r->path);
  return r->e->status;
}

/* Reshape to one row an image ([N, -1], [1, C*H*W], ...): nothing to do in a CHW model. The
   shape an initializer of two int64 (typed or raw, as PyTorch writes it). */
static ttp_status reshape_node(reader* r, size_t k, int flat_size) {
  const Onnx__NodeProto* n = r->g->node[k];
  const Onnx__TensorProto* shape = n->n_input > 1 ? initializer(r, n->input[1]) : NULL;
  int64_t v[2];
  if (shape && shape->n_int64_data == 2) {
    v[0] = shape->int64_data[0], v[1] = shape->int64_data[1];
  } else if (shape && shape->has_raw_data && shape->raw_data.len == 16 &&
             shape->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
    for (int i = 0; i < 2; i++) {
      uint64_t u = 0;
      for (int b = 7; b >= 0; b--) u = u << 8 | shape->raw_data.data[8 * i + b];
      memcpy(&v[i], &u, sizeof u);
    }
  } else {
    return node_error(r, k, "a shape that is not a static initializer of two int64 values");
  }
  if (!(v[0] == 1 || v[0] == -1 || v[0] == 0) || !(v[1] == -1 || v[1] == flat_size))
    return node_error(r, k, "a shape other than one row of %d values an image", flat_size);
  return TTP_OK;
}

/* BatchNormalization right after a Conv, Gemm or MatMul (and its Add): folded into its weights
   and bias once they are read (fold_norm). */
static ttp_status norm_node(reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  planned* before = r->weighted >= 0 ? &r->plan[r->weighted] : NULL;
  if (!before || before->layer != r->m->layer_count - 1 || before->norm[0])
    return node_error(r, k, "not right after a Conv, Gemm or MatMul (only there can it be "
                      "folded)");
  if (n->n_input != 5) return node_error(r, k, "%zu inputs, not 5", n->n_input);
  if (int_attr(n, "training_mode", 0) != 0) return node_error(r, k, "training mode");
  for (size_t i = 1; i < n->n_output; i++)
    if (n->output[i] && n->output[i][0]) return node_error(r, k, "training outputs");
  for (int i = 0; i < 4; i++)
    if (!(before->norm[i] = initializer(r, n->input[1 + i])))
      return node_error(r, k, "its input '%s' is not an initializer", n->input[1 + i]);
  before->epsilon = float_attr(n, "epsilon", 1e-5f);
  if (!(before->epsilon >= 0 && before->epsilon < 1))
    return node_error(r, k, "epsilon %g", (double)before->epsilon);
  return TTP_OK;
}

static const char supported[] =
    "Conv, MaxPool, AveragePool, Relu, LeakyRelu, Sigmoid, Tanh, Clip, Gemm, MatMul + Add, "
    "Flatten, Reshape, Unsqueeze, Squeeze, LRN, Softmax, BatchNormalization, Pad, Constant, "
    "Dropout, Identity";

/* One node of the chain, whose data input is `data`; *flat: whether the tensor is one row an
   image (after Gemm or Flatten). */
static ttp_status node_layer(reader* r, size_t k, const char* data, int* flat) {
  const Onnx__NodeProto* n = r->g->node[k];
  const char* op = n->op_type ? n->op_type : "";
  if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
    return node_error(r, k, "operator domain '%s'", n->domain);
  if (r->pad && strcmp(op, "Conv") != 0 && strcmp(op, "AveragePool") != 0)
    return node_error(r, r->pad_node, "not followed by a Conv or an AveragePool (only those take "
                      "its zeros)");
  if (strcmp(op, "Conv") == 0) return conv_node(r, k);
  if (strcmp(op, "MaxPool") == 0) return pool_node(r, k, MODEL_MAXPOOL);
  if (strcmp(op, "AveragePool") == 0) return pool_node(r, k, MODEL_AVGPOOL);
  if (strcmp(op, "Pad") == 0) return pad_node(r, k);
  if (strcmp(op, "Relu") == 0) return add(r, k, MODEL_RELU) ? TTP_OK : r->e->status;
  if (strcmp(op, "Sigmoid") == 0) return add(r, k, MODEL_SIGMOID) ? TTP_OK : r->e->status;
  if (strcmp(op, "Tanh") == 0) return add(r, k, MODEL_TANH) ? TTP_OK : r->e->status;
  if (strcmp(op, "LeakyRelu") == 0) {
    const float alpha = float_attr(n, "alpha", 0.01f);
    if (!isfinite(alpha)) return node_error(r, k, "alpha %g", (double)alpha);
    model_layer* l = add(r, k, MODEL_LEAKY_RELU);
    if (!l) return r->e->status;
    l->p.leaky.alpha = alpha;
    return TTP_OK;
  }
  if (strcmp(op, "Clip") == 0) return clip_node(r, k);
  if (strcmp(op, "Gemm") == 0) {
    *flat = 1;
    return gemm_node(r, k);
  }
  if (strcmp(op, "MatMul") == 0) {
    if (!*flat) return node_error(r, k, "on a tensor that is not one row an image");
    return matmul_node(r, k);
  }
  if (strcmp(op, "Add") == 0) return add_node(r, k, data);
  if (strcmp(op, "LRN") == 0) {
    const int64_t size = int_attr(n, "size", 0);
    if (!small_int(size, 1, 15)) return node_error(r, k, "size %lld: 1..15", (long long)size);
    model_layer* l = add(r, k, MODEL_LRN);
    if (!l) return r->e->status;
    l->p.lrn.n = (int)size, l->p.lrn.alpha = float_attr(n, "alpha", 1e-4f);
    l->p.lrn.beta = float_attr(n, "beta", 0.75f), l->p.lrn.k = float_attr(n, "bias", 1.0f);
    return TTP_OK;
  }
  if (strcmp(op, "Softmax") == 0) {
    if (!*flat) return node_error(r, k, "softmax over a tensor that is not one row an image");
    const int64_t axis = int_attr(n, "axis", r->opset < 13 ? 1 : -1);
    if (axis != 1 && axis != -1) return node_error(r, k, "axis %lld", (long long)axis);
    return add(r, k, MODEL_SOFTMAX) ? TTP_OK : r->e->status;
  }
  if (strcmp(op, "Flatten") == 0) {
    if (int_attr(n, "axis", 1) != 1) return node_error(r, k, "an axis other than 1");
    *flat = 1;
    return TTP_OK;
  }
  if (strcmp(op, "Reshape") == 0) {
    TRY(shapes(r)); /* the size flattened so far */
    const model_shape sh = r->m->layer_count ? r->m->layers[r->m->layer_count - 1].out
                                             : r->m->input;
    *flat = 1;
    return reshape_node(r, k, (int)model_shape_size(sh));
  }
  if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0)
    return squeeze_node(r, k, *flat);
  if (strcmp(op, "BatchNormalization") == 0) return norm_node(r, k);
  if (strcmp(op, "Dropout") == 0 || strcmp(op, "Identity") == 0) return TTP_OK;
  return node_error(r, k, "operator not supported (ttapipe's: %s)", supported);
}

/* The single graph input that is not an initializer, as C x H x W. */
static ttp_status input_shape(const reader* r, model_shape* s, const char** name) {
  const Onnx__ValueInfoProto* in = NULL;
  for (size_t i = 0; i < r->g->n_input; i++) {
    if (r->g->input[i]->name && initializer(r, r->g->input[i]->name)) continue;
    if (in) return ERR(r->e, TTP_ERR_MODEL, "%s: more than one graph input", r->path);
    in = r->g->input[i];
  }
  if (!in || !in->name) return ERR(r->e, TTP_ERR_MODEL, "%s: no graph input", r->path);
  const Onnx__TypeProto* t = in->type;
  if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
      t->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || !t->tensor_type->shape)
    return ERR(r->e, TTP_ERR_MODEL, "%s: input '%s' is not a float32 tensor of known rank",
               r->path, in->name);
  const Onnx__TensorShapeProto* sh = t->tensor_type->shape;
  if (sh->n_dim != 3 && sh->n_dim != 4)
    return ERR(r->e, TTP_ERR_MODEL, "%s: input '%s' has %zu dimensions, not [N,] C, H, W",
               r->path, in->name, sh->n_dim);
  int64_t v[3];
  for (int i = 0; i < 3; i++) {
    const Onnx__TensorShapeProto__Dimension* d = sh->dim[sh->n_dim - 3 + i];
    if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
      return ERR(r->e, TTP_ERR_MODEL, "%s: input '%s' has a dynamic shape ('%s'): export it "
                 "with fixed channels, rows and columns", r->path, in->name,
                 d->dim_param ? d->dim_param : "?");
    v[i] = d->dim_value;
  }
  if (!(v[0] == 1 || v[0] == 3) || !small_int(v[1], INPUT_LOW, INPUT_HIGH) ||
      !small_int(v[2], INPUT_LOW, INPUT_HIGH))
    return ERR(r->e, TTP_ERR_MODEL, "%s: input %lldx%lldx%lld: ttapipe takes 1 or 3 channels of "
               "%dx%d to %dx%d", r->path, (long long)v[0], (long long)v[1], (long long)v[2],
               INPUT_LOW, INPUT_LOW, INPUT_HIGH, INPUT_HIGH);
  *s = (model_shape){(int)v[0], (int)v[1], (int)v[2]};
  *name = in->name;
  return TTP_OK;
}

/* An initializer's count values as floats (float32 or float16; raw or typed), checked finite. */
static ttp_status tensor_floats(const reader* r, const Onnx__TensorProto* t, size_t count,
                                int transpose, int rows, float** out) {
  const char* name = t->name ? t->name : "";
  if (t->n_external_data || (t->has_data_location &&
                             t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
    return ERR(r->e, TTP_ERR_MODEL, "%s: initializer '%s' is stored outside the file", r->path,
               name);
  size_t n = 1;
  for (size_t i = 0; i < t->n_dims; i++) n *= t->dims[i] > 0 ? (size_t)t->dims[i] : 0;
  if (n != count)
    return ERR(r->e, TTP_ERR_MODEL, "%s: initializer '%s' holds %zu values where its layer needs "
               "%zu", r->path, name, n, count);
  const int half = t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
  if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && !half)
    return ERR(r->e, TTP_ERR_MODEL, "%s: initializer '%s' is of data type %d, not float32 or "
               "float16", r->path, name, t->data_type);
  const size_t elem = half ? 2 : 4;
  const int raw = t->has_raw_data && t->raw_data.len > 0;
  const size_t have = raw ? t->raw_data.len / elem : half ? t->n_int32_data : t->n_float_data;
  if (have != count || (raw && t->raw_data.len % elem))
    return ERR(r->e, TTP_ERR_MODEL, "%s: initializer '%s' stores %zu values for %zu", r->path,
               name, have, count);
  float* v = malloc(count * sizeof *v);
  if (!v) return ERR_NOMEM(r->e, count * sizeof *v);
  const size_t cols = count / (size_t)rows; /* Gemm's B as [in][out] (transpose: rows = in) */
  for (size_t i = 0; i < count; i++) {
    float f;
    if (half) {
      const uint8_t* b = raw ? t->raw_data.data + 2 * i : NULL;
      const uint32_t h = b ? (uint32_t)b[0] | (uint32_t)b[1] << 8
                           : (uint32_t)t->int32_data[i] & 0xffffu;
      const uint32_t sign = (h >> 15) << 31, exp = h >> 10 & 31, man = h & 1023;
      if (exp == 31) {
        f = NAN;
      } else if (exp == 0) {
        f = ldexpf((float)man, -24);
        if (sign) f = -f;
      } else {
        const uint32_t bits = sign | (exp + 112) << 23 | man << 13;
        memcpy(&f, &bits, sizeof f);
      }
    } else if (raw) {
      f = io_float_le(t->raw_data.data + 4 * i);
    } else {
      f = t->float_data[i];
    }
    if (!isfinite(f)) {
      free(v);
      return ERR(r->e, TTP_ERR_MODEL, "%s: initializer '%s': value %zu is not finite", r->path,
                 name, i);
    }
    v[transpose ? i % cols * (size_t)rows + i / cols : i] = f; /* ours is [out][in] */
  }
  *out = v;
  return TTP_OK;
}

/* Output channel o of a Conv or Gemm times s = scale / sqrt(var + epsilon), its bias
   (bias - mean) s + B: the layer then computes what it and the normalisation did (in double,
   rounded once). */
static ttp_status fold_norm(const reader* r, const planned* p, model_layer* l) {
  const size_t outs = l->bias_count, per = l->weight_count / outs;
  float* v[4] = {NULL, NULL, NULL, NULL};
  ttp_status s = TTP_OK;
  for (int i = 0; i < 4 && s == TTP_OK; i++) s = tensor_floats(r, p->norm[i], outs, 0, 1, &v[i]);
  for (size_t o = 0; s == TTP_OK && o < outs; o++) {
    const double var = (double)v[3][o] + p->epsilon;
    if (!(var > 0)) {
      s = ERR(r->e, TTP_ERR_MODEL, "%s: initializer '%s': variance %zu plus epsilon is not "
              "positive", r->path, p->norm[3]->name ? p->norm[3]->name : "", o);
      break;
    }
    const double scale = v[0][o] / sqrt(var);
    int finite = 1;
    for (size_t i = 0; i < per; i++) {
      l->weights[o * per + i] = (float)(l->weights[o * per + i] * scale);
      finite &= isfinite(l->weights[o * per + i]) != 0;
    }
    l->bias[o] = (float)(((double)l->bias[o] - v[2][o]) * scale + v[1][o]);
    if (!finite || !isfinite(l->bias[o]))
      s = ERR(r->e, TTP_ERR_MODEL, "%s: the normalisation folded into %s overflows float32 "
              "(output channel %zu)", r->path, l->name, o);
  }
  for (int i = 0; i < 4; i++) free(v[i]);
  return s;
}

static ttp_status read_graph(reader* r) {
  const Onnx__GraphProto* g = r->g;
  model_shape input;
  const char* current = "";
  TRY(index_names(r));
  TRY(input_shape(r, &input, &current));
  r->m = model_new(input, r->e);
  if (!r->m) return r->e->status;
  r->plan = calloc(g->n_node ? g->n_node : 1, sizeof *r->plan);
  if (!r->plan) return ERR_NOMEM(r->e, g->n_node * sizeof *r->plan);
  for (size_t k = 0; k < g->n_node; k++) r->plan[k].layer = -1;
  int flat = 0;
  r->weighted = -1;
  for (size_t k = 0; k < g->n_node; k++) {
    const Onnx__NodeProto* n = g->node[k];
    const int is_constant = n->op_type && strcmp(n->op_type, "Constant") == 0;
    const int is_identity = n->op_type && strcmp(n->op_type, "Identity") == 0 &&
                            n->n_input == 1 && n->input[0] && strcmp(n->input[0], current) != 0;
    if (is_constant || is_identity) { /* a value, read where used */
      if (n->n_output != 1 || !n->output[0] || !initializer(r, n->output[0]))
        return node_error(r, k, is_constant ? "not one tensor value"
                                            : "not a chain: it does not take '%s', the previous "
                                              "node's output, nor a constant", current);
      continue;
    }
    /* The chain's tensor is the node's first input (an Add's first or second). */
    const int is_add = n->op_type && strcmp(n->op_type, "Add") == 0;
    const int takes = n->n_input >= 1 && n->input[0] && strcmp(n->input[0], current) == 0;
    const int takes_second =
        is_add && n->n_input == 2 && n->input[1] && strcmp(n->input[1], current) == 0;
    if (!takes && !takes_second)
      return node_error(r, k, "not a chain: it does not take '%s', the previous node's output",
                        current);
    if (n->n_output < 1 || !n->output[0] || !n->output[0][0])
      return node_error(r, k, "no output");
    TRY(node_layer(r, k, current, &flat));
    current = n->output[0];
  }
  if (r->pad) return node_error(r, r->pad_node, "the graph's last operator");
  if (g->n_output != 1 || !g->output[0]->name || strcmp(g->output[0]->name, current) != 0)
    return ERR(r->e, TTP_ERR_MODEL, "%s: the graph's output is not its last node's ('%s')",
               r->path, current);
  if (r->m->layer_count == 0 || r->m->layers[r->m->layer_count - 1].op != MODEL_SOFTMAX) {
    if (!flat)
      return ERR(r->e, TTP_ERR_MODEL, "%s: the graph does not end in one row an image", r->path);
    if (!model_add(r->m, MODEL_SOFTMAX, "softmax (added)", r->e)) return r->e->status;
    r->m->softmax_added = 1;
  }
  TRY(shapes(r));
  for (size_t k = 0; k < g->n_node; k++) {
    if (r->plan[k].layer < 0 || !r->plan[k].weights) continue;
    model_layer* l = &r->m->layers[r->plan[k].layer];
    TRY(tensor_floats(r, r->plan[k].weights, l->weight_count, r->plan[k].transpose,
                      l->op == MODEL_FC ? l->in.c * l->in.h * l->in.w : 1, &l->weights));
    if (r->plan[k].bias) {
      TRY(tensor_floats(r, r->plan[k].bias, l->bias_count, 0, 1, &l->bias));
    } else { /* no bias: zeros */
      l->bias = calloc(l->bias_count ? l->bias_count : 1, sizeof *l->bias);
      if (!l->bias) return ERR_NOMEM(r->e, l->bias_count * sizeof *l->bias);
    }
    if (r->plan[k].norm[0]) TRY(fold_norm(r, &r->plan[k], l));
  }
  if (model_check(r->m, r->e) != TTP_OK) err_prefix(r->e, "%s: ", r->path);
  return r->e->status;
}

static ttp_status check_opset(reader* r, const Onnx__ModelProto* mp) {
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto* o = mp->opset_import[i];
    if (o->domain && o->domain[0] && strcmp(o->domain, "ai.onnx") != 0) continue;
    if (!o->has_version || o->version < OPSET_LOW || o->version > OPSET_HIGH)
      return ERR(r->e, TTP_ERR_MODEL, "%s: opset %lld of the default domain: ttapipe reads %d "
                 "to %d", r->path, (long long)o->version, OPSET_LOW, OPSET_HIGH);
    r->opset = o->version;
    return TTP_OK;
  }
  return ERR(r->e, TTP_ERR_MODEL, "%s: no opset of the default domain", r->path);
}

/* metadata_props "mean" or "std" (key): one number, or one a channel, separated by commas (and
   spaces); a std must be positive. */
static ttp_status scaling(reader* r, const char* key, const char* text) {
  const int is_std = strcmp(key, "std") == 0, channels = r->m->input.c;
  float v[3];
  int count = 0;
  const char* at = text;
  for (;;) {
    char* end;
    const double x = strtod(at, &end);
    if (end == at || count == 3 || !(is_std ? model_std_ok(x) : model_mean_ok(x)))
      return ERR(r->e, TTP_ERR_MODEL, "%s: metadata '%s' is '%.60s': one number%s, or one a "
                 "channel, separated by commas (%s)", r->path, key, text,
                 channels > 1 ? " for all channels" : "",
                 is_std ? "each 1e-6..1e6" : "each -16..16");
    v[count++] = (float)x;
    while (*end == ' ') end++;
    if (*end == '\0') break;
    if (*end != ',') count = 3; /* refused on the next turn */
    at = end + 1;
  }
  if (count != 1 && count != channels)
    return ERR(r->e, TTP_ERR_MODEL, "%s: metadata '%s' gives %d values for %d channel%s", r->path,
               key, count, channels, channels == 1 ? "" : "s");
  for (int c = 0; c < 3; c++) (is_std ? r->m->scaling.std : r->m->scaling.mean)[c] = v[c < count ? c : 0];
  return TTP_OK;
}

ttp_status io_load_onnx(const char* path, model** out, ttp_err* e) {
  *out = NULL;
  uint8_t* data;
  size_t size;
  TRY(io_read_file(path, ONNX_MAX_BYTES, &data, &size, e));
  if (size == 0) {
    free(data);
    return ERR(e, TTP_ERR_FORMAT, "%s: empty file", path);
  }
  Onnx__ModelProto* mp = onnx__model_proto__unpack(NULL, size, data);
  free(data);
  if (!mp)
    return ERR(e, TTP_ERR_FORMAT, "%s: not an ONNX model (the protobuf does not parse)", path);
  reader r = {.path = path, .g = mp->graph, .e = e};
  ttp_status s = mp->graph ? check_opset(&r, mp)
                           : ERR(e, TTP_ERR_FORMAT, "%s: not an ONNX model (no graph)", path);
  if (s == TTP_OK) s = read_graph(&r);
  for (size_t i = 0; s == TTP_OK && i < mp->n_metadata_props; i++) {
    const Onnx__StringStringEntryProto* kv = mp->metadata_props[i];
    if (!kv->key || !kv->value) continue;
    if (strcmp(kv->key, "labels") == 0) {
      char where[1100];
      snprintf(where, sizeof where, "%s (metadata 'labels')", path);
      s = io_parse_labels(where, kv->value, strlen(kv->value), r.m, e);
    } else if (strcmp(kv->key, "mean") == 0 || strcmp(kv->key, "std") == 0) {
      s = scaling(&r, kv->key, kv->value);
    }
  }
  free(r.plan);
  free(r.names);
  onnx__model_proto__free_unpacked(mp, NULL);
  if (s != TTP_OK) {
    model_free(r.m);
    return s;
  }
  *out = r.m;
  return TTP_OK;
}
