/* Nodes whose inputs are all known at load (initializers, Constant nodes, shapes of the
   network's tensors) are computed here, once, in double (int64 for integer types): PyTorch's
   view(x.size(0), -1) writes Shape, Gather, Unsqueeze and Concat before its Reshape; option-A
   shortcuts write ConstantOfShape, Slice and Concat of pads; exporters write Identity of
   initializers and arithmetic on constants. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

typedef enum { UN_NEG, UN_ABS, UN_SQRT, UN_RECIPROCAL, UN_EXP, UN_LOG, UN_FLOOR, UN_CEIL, UN_RELU,
               UN_SIGMOID, UN_TANH, UN_ERF, UN_SIGN, UN_NOT, UN_IDENTITY } unary_op;
typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW, BIN_MIN, BIN_MAX, BIN_EQUAL, BIN_LESS,
               BIN_LESS_EQUAL, BIN_GREATER, BIN_GREATER_EQUAL, BIN_AND, BIN_OR, BIN_MOD } binary_op;

static const struct { const char* name; int op; } unaries[] = {
    {"Neg", UN_NEG}, {"Abs", UN_ABS}, {"Sqrt", UN_SQRT}, {"Reciprocal", UN_RECIPROCAL},
    {"Exp", UN_EXP}, {"Log", UN_LOG}, {"Floor", UN_FLOOR}, {"Ceil", UN_CEIL}, {"Relu", UN_RELU},
    {"Sigmoid", UN_SIGMOID}, {"Tanh", UN_TANH}, {"Erf", UN_ERF}, {"Sign", UN_SIGN},
    {"Not", UN_NOT}, {"Identity", UN_IDENTITY}, {"Dropout", UN_IDENTITY}};
static const struct { const char* name; int op; } binaries[] = {
    {"Add", BIN_ADD}, {"Sub", BIN_SUB}, {"Mul", BIN_MUL}, {"Div", BIN_DIV}, {"Pow", BIN_POW},
    {"Min", BIN_MIN}, {"Max", BIN_MAX}, {"Equal", BIN_EQUAL}, {"Less", BIN_LESS},
    {"LessOrEqual", BIN_LESS_EQUAL}, {"Greater", BIN_GREATER},
    {"GreaterOrEqual", BIN_GREATER_EQUAL}, {"And", BIN_AND}, {"Or", BIN_OR}, {"Mod", BIN_MOD}};
static const char* const others[] = {
    "Constant", "Cast", "CastLike", "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape",
    "Flatten", "Slice", "Transpose", "ConstantOfShape", "Range", "Expand", "Where", "Split"};

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

static int find_op(const char* op, int unary) {
  if (unary) {
    for (size_t i = 0; i < COUNT(unaries); i++)
      if (strcmp(unaries[i].name, op) == 0) return unaries[i].op;
  } else {
    for (size_t i = 0; i < COUNT(binaries); i++)
      if (strcmp(binaries[i].name, op) == 0) return binaries[i].op;
  }
  return -1;
}

int onnx_foldable(const char* op) {
  if (find_op(op, 1) >= 0 || find_op(op, 0) >= 0) return 1;
  for (size_t i = 0; i < COUNT(others); i++)
    if (strcmp(others[i], op) == 0) return 1;
  return 0;
}

int onnx_broadcast(const int64_t* a, int ra, const int64_t* b, int rb, int64_t* out,
                   int* out_rank) {
  const int r = ra > rb ? ra : rb;
  for (int i = 0; i < r; i++) {
    const int64_t x = i - (r - ra) >= 0 ? a[i - (r - ra)] : 1;
    const int64_t y = i - (r - rb) >= 0 ? b[i - (r - rb)] : 1;
    if (x != y && x != 1 && y != 1) return 0;
    out[i] = x == 1 ? y : x;
  }
  *out_rank = r;
  return 1;
}

/* Row-major strides of dims; those of a dimension broadcast (size 1 against a larger one in
   `to`, aligned at the right) are 0. */
static void strides_into(const int64_t* dims, int rank, const int64_t* to, int to_rank,
                         size_t* st) {
  size_t s = 1;
  for (int i = to_rank - 1; i >= 0; i--) {
    const int j = i - (to_rank - rank);
    if (j < 0) {
      st[i] = 0;
      continue;
    }
    st[i] = dims[j] == 1 && to[i] != 1 ? 0 : s;
    s *= (size_t)dims[j];
  }
}

/* The flat offset, under strides st, of the flat index i of a tensor of dims (rank). */
static size_t offset_of(size_t i, const int64_t* dims, int rank, const size_t* st) {
  size_t off = 0;
  for (int d = rank - 1; d >= 0; d--) {
    const size_t n = (size_t)dims[d];
    off += (n ? i % n : 0) * st[d];
    i = n ? i / n : 0;
  }
  return off;
}

static int64_t normalize_axis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

/* Node k's output i as an empty constant for the caller to fill (NULL when absent). */
static onnx_const* output(onnx_reader* r, size_t k, size_t i) {
  const int s = r->node_outputs[k][i];
  if (s < 0) return NULL;
  r->slots[s].kind = SLOT_CONST;
  memset(&r->slots[s].c, 0, sizeof r->slots[s].c);
  return &r->slots[s].c;
}

/* Output constant o of rank dims, its values allocated (integers or floats). */
static ttp_status shaped(const onnx_reader* r, onnx_const* o, int rank, const int64_t* dims,
                         int integer) {
  o->rank = rank;
  memcpy(o->dims, dims, (size_t)rank * sizeof *dims);
  return onnx_const_alloc(r, o, integer);
}

static ttp_status copy_const(const onnx_reader* r, const onnx_const* in, onnx_const* out,
                             int rank, const int64_t* dims) {
  TRY(shaped(r, out, rank, dims, in->integer));
  if (out->count != in->count) return ERR(r->e, TTP_ERR_INTERNAL, "copy of unequal sizes");
  if (in->integer) memcpy(out->i, in->i, in->count * sizeof *in->i);
  else memcpy(out->f, in->f, in->count * sizeof *in->f);
  return TTP_OK;
}

static double unary(int op, double x) {
  switch (op) {
    case UN_NEG: return -x;
    case UN_ABS: return fabs(x);
    case UN_SQRT: return sqrt(x);
    case UN_RECIPROCAL: return 1.0 / x;
    case UN_EXP: return exp(x);
    case UN_LOG: return log(x);
    case UN_FLOOR: return floor(x);
    case UN_CEIL: return ceil(x);
    case UN_RELU: return x > 0 ? x : 0;
    case UN_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case UN_TANH: return tanh(x);
    case UN_ERF: return erf(x);
    case UN_SIGN: return (x > 0) - (x < 0);
    case UN_NOT: return x == 0;
    default: return x;
  }
}

static double binary_f(int op, double x, double y) {
  switch (op) {
    case BIN_ADD: return x + y;
    case BIN_SUB: return x - y;
    case BIN_MUL: return x * y;
    case BIN_DIV: return x / y;
    case BIN_POW: return pow(x, y);
    case BIN_MIN: return x < y ? x : y;
    case BIN_MAX: return x > y ? x : y;
    case BIN_EQUAL: return x == y;
    case BIN_LESS: return x < y;
    case BIN_LESS_EQUAL: return x <= y;
    case BIN_GREATER: return x > y;
    case BIN_GREATER_EQUAL: return x >= y;
    case BIN_AND: return x != 0 && y != 0;
    case BIN_OR: return x != 0 || y != 0;
    default: return fmod(x, y);
  }
}

/* Integer arithmetic where both inputs are integers (Div truncates, as ONNX's does). */
static int binary_i(int op, int64_t x, int64_t y, int64_t* v) {
  switch (op) {
    case BIN_ADD: return !__builtin_add_overflow(x, y, v);
    case BIN_SUB: return !__builtin_sub_overflow(x, y, v);
    case BIN_MUL: return !__builtin_mul_overflow(x, y, v);
    case BIN_DIV: case BIN_MOD:
      if (y == 0 || (x == INT64_MIN && y == -1)) return 0;
      *v = op == BIN_DIV ? x / y : x % y;
      return 1;
    case BIN_POW: {
      if (y < 0 || y > 62) return 0;
      int64_t p = 1;
      for (int64_t i = 0; i < y; i++)
        if (__builtin_mul_overflow(p, x, &p)) return 0;
      *v = p;
      return 1;
    }
    default: *v = (int64_t)binary_f(op, (double)x, (double)y); return 1;
  }
}

static int compares(int op) { return op >= BIN_EQUAL; }

static ttp_status fold_binary(onnx_reader* r, size_t k, int op) {
  const size_t n_in = r->g->node[k]->n_input;
  if (n_in != 2 && !((op == BIN_MIN || op == BIN_MAX) && n_in >= 1))
    return onnx_node_error(r, k, "%zu inputs", n_in);
  const onnx_const* a = onnx_const_input(r, k, 0, "first input");
  if (!a) return r->e->status;
  const onnx_const* b = n_in > 1 ? onnx_const_input(r, k, 1, "second input") : a;
  if (!b) return r->e->status;
  if (n_in > 2) return onnx_node_error(r, k, "more than two constant inputs");
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  if (!onnx_broadcast(a->dims, a->rank, b->dims, b->rank, o->dims, &o->rank))
    return onnx_node_error(r, k, "inputs of shapes that do not broadcast");
  const int integer = a->integer && b->integer;
  TRY(onnx_const_alloc(r, o, integer || compares(op)));
  size_t sa[ONNX_MAX_RANK], sb[ONNX_MAX_RANK];
  strides_into(a->dims, a->rank, o->dims, o->rank, sa);
  strides_into(b->dims, b->rank, o->dims, o->rank, sb);
  for (size_t i = 0; i < o->count; i++) {
    const size_t ia = offset_of(i, o->dims, o->rank, sa), ib = offset_of(i, o->dims, o->rank, sb);
    if (integer && !compares(op)) {
      if (!binary_i(op, a->i[ia], b->i[ib], &o->i[i]))
        return onnx_node_error(r, k, "integer overflow or division by zero at %zu", i);
    } else if (compares(op)) {
      o->i[i] = (int64_t)binary_f(op, onnx_const_f(a, ia), onnx_const_f(b, ib));
    } else {
      o->f[i] = binary_f(op, onnx_const_f(a, ia), onnx_const_f(b, ib));
    }
  }
  return TTP_OK;
}

static ttp_status fold_unary(onnx_reader* r, size_t k, int op) {
  const onnx_const* a = onnx_const_input(r, k, 0, "input");
  if (!a) return r->e->status;
  for (size_t o_i = 0; o_i < r->g->node[k]->n_output; o_i++) {
    onnx_const* o = output(r, k, o_i);
    if (!o || (op == UN_IDENTITY && o_i > 0)) continue; /* Dropout's mask: never read here */
    const int integer = op == UN_NOT || (a->integer && (op == UN_NEG || op == UN_ABS ||
                                                        op == UN_RELU || op == UN_SIGN ||
                                                        op == UN_IDENTITY || op == UN_FLOOR ||
                                                        op == UN_CEIL));
    TRY(shaped(r, o, a->rank, a->dims, integer));
    for (size_t i = 0; i < a->count; i++) {
      if (integer && a->integer && op != UN_NOT) {
        const int64_t x = a->i[i];
        o->i[i] = op == UN_NEG ? -x : op == UN_ABS ? (x < 0 ? -x : x)
                : op == UN_RELU ? (x > 0 ? x : 0) : op == UN_SIGN ? (x > 0) - (x < 0) : x;
      } else if (integer) {
        o->i[i] = (int64_t)unary(op, onnx_const_f(a, i));
      } else {
        o->f[i] = unary(op, onnx_const_f(a, i));
      }
    }
  }
  return TTP_OK;
}

/* Constant: its value attribute (a tensor, or value_float(s), value_int(s)). */
static ttp_status fold_constant(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  const Onnx__AttributeProto* a;
  if ((a = onnx_attr(n, "value")) && a->t) return onnx_read_const(r, a->t, o);
  if ((a = onnx_attr(n, "value_float")) && a->has_f) {
    TRY(onnx_const_alloc(r, o, 0));
    o->f[0] = a->f;
    return TTP_OK;
  }
  if ((a = onnx_attr(n, "value_int")) && a->has_i) {
    TRY(onnx_const_alloc(r, o, 1));
    o->i[0] = a->i;
    return TTP_OK;
  }
  if ((a = onnx_attr(n, "value_floats"))) {
    o->rank = 1, o->dims[0] = (int64_t)a->n_floats;
    TRY(onnx_const_alloc(r, o, 0));
    for (size_t i = 0; i < a->n_floats; i++) o->f[i] = a->floats[i];
    return TTP_OK;
  }
  if ((a = onnx_attr(n, "value_ints"))) {
    o->rank = 1, o->dims[0] = (int64_t)a->n_ints;
    TRY(onnx_const_alloc(r, o, 1));
    for (size_t i = 0; i < a->n_ints; i++) o->i[i] = a->ints[i];
    return TTP_OK;
  }
  return onnx_node_error(r, k, "no value ttapipe reads (a tensor, value_float(s) or "
                         "value_int(s))");
}

static int type_is_integer(int64_t to) {
  return to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && to != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE &&
         to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
         to != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

/* Cast to its `to` type; CastLike to the type of input 1 (integer or float64: what a constant
   keeps of its type). */
static ttp_status fold_cast(onnx_reader* r, size_t k) {
  const onnx_const* a = onnx_const_input(r, k, 0, "input");
  if (!a) return r->e->status;
  int64_t to = onnx_int_attr(r->g->node[k], "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
  const int like_slot = onnx_input(r, k, 1);
  if (strcmp(r->g->node[k]->op_type, "CastLike") == 0 && like_slot >= 0 &&
      r->slots[like_slot].kind == SLOT_TENSOR) { /* like the image's tensors: a float */
    to = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
  } else if (strcmp(r->g->node[k]->op_type, "CastLike") == 0) {
    const onnx_const* like = onnx_const_input(r, k, 1, "target");
    if (!like) return r->e->status;
    to = like->integer ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
  }
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  const int integer = type_is_integer(to);
  TRY(shaped(r, o, a->rank, a->dims, integer));
  for (size_t i = 0; i < a->count; i++) {
    if (!integer) {
      const double v = onnx_const_f(a, i);
      o->f[i] = to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ? (double)(float)v : v;
    } else if (to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
      o->i[i] = onnx_const_f(a, i) != 0;
    } else {
      const double v = onnx_const_f(a, i);
      if (!a->integer && !(fabs(v) < 9.2e18))
        return onnx_node_error(r, k, "value %g does not fit an integer", v);
      o->i[i] = onnx_const_i(a, i);
    }
  }
  return TTP_OK;
}

/* Shape's dims of a constant or a tensor (rank, dims), from start to end (opset 15). */
ttp_status onnx_fold_shape(onnx_reader* r, size_t k, int rank, const int64_t* dims) {
  const Onnx__NodeProto* n = r->g->node[k];
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  if (strcmp(n->op_type, "Size") == 0) {
    TRY(onnx_const_alloc(r, o, 1));
    int ok;
    o->i[0] = (int64_t)onnx_dims_count(dims, rank, &ok);
    return ok ? TTP_OK : onnx_node_error(r, k, "a size past %d", ONNX_CONST_MAX);
  }
  int64_t start = onnx_int_attr(n, "start", 0), end = onnx_int_attr(n, "end", rank);
  start = normalize_axis(start, rank), end = normalize_axis(end, rank);
  start = start < 0 ? 0 : start > rank ? rank : start;
  end = end < 0 ? 0 : end > rank ? rank : end;
  o->rank = 1, o->dims[0] = end > start ? end - start : 0;
  TRY(onnx_const_alloc(r, o, 1));
  for (int64_t i = start; i < end; i++) o->i[i - start] = dims[i];
  return TTP_OK;
}

static ttp_status fold_gather(onnx_reader* r, size_t k) {
  const onnx_const* d = onnx_const_input(r, k, 0, "data");
  const onnx_const* ix = d ? onnx_const_input(r, k, 1, "indices") : NULL;
  if (!ix) return r->e->status;
  if (!ix->integer) return onnx_node_error(r, k, "indices that are not integers");
  const int64_t axis = normalize_axis(onnx_int_attr(r->g->node[k], "axis", 0), d->rank);
  if (axis < 0 || axis >= d->rank || d->rank + ix->rank - 1 > ONNX_MAX_RANK)
    return onnx_node_error(r, k, "axis %lld of a rank-%d tensor", (long long)axis, d->rank);
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  for (int i = 0; i < axis; i++) o->dims[o->rank++] = d->dims[i];
  for (int i = 0; i < ix->rank; i++) o->dims[o->rank++] = ix->dims[i];
  for (int i = (int)axis + 1; i < d->rank; i++) o->dims[o->rank++] = d->dims[i];
  TRY(onnx_const_alloc(r, o, d->integer));
  size_t outer = 1, inner = 1;
  for (int i = 0; i < axis; i++) outer *= (size_t)d->dims[i];
  for (int i = (int)axis + 1; i < d->rank; i++) inner *= (size_t)d->dims[i];
  const int64_t n = d->dims[axis];
  size_t at = 0;
  for (size_t a = 0; a < outer; a++)
    for (size_t j = 0; j < ix->count; j++) {
      int64_t idx = ix->i[j];
      if (idx < 0) idx += n;
      if (idx < 0 || idx >= n)
        return onnx_node_error(r, k, "index %lld outside 0..%lld", (long long)ix->i[j],
                               (long long)n - 1);
      const size_t from = (a * (size_t)n + (size_t)idx) * inner;
      for (size_t b = 0; b < inner; b++, at++) {
        if (d->integer) o->i[at] = d->i[from + b];
        else o->f[at] = d->f[from + b];
      }
    }
  return TTP_OK;
}

/* The axes of Unsqueeze, Squeeze or a reduction: an attribute (opsets before 13) or input 1. */
ttp_status onnx_axes(onnx_reader* r, size_t k, int64_t* axes, size_t* n, int from_input) {
  if (from_input) return onnx_ints_input(r, k, 1, "axes", axes, ONNX_MAX_RANK, n);
  if (onnx_ints_attr(r->g->node[k], "axes", axes, ONNX_MAX_RANK, n) < 0)
    return onnx_node_error(r, k, "more than %d axes", ONNX_MAX_RANK);
  return TTP_OK;
}

ttp_status onnx_squeeze_dims(onnx_reader* r, size_t k, int rank, const int64_t* dims,
                             int* out_rank, int64_t* out) {
  const Onnx__NodeProto* n = r->g->node[k];
  const int un = strcmp(n->op_type, "Unsqueeze") == 0;
  int64_t axes[ONNX_MAX_RANK];
  size_t count;
  TRY(onnx_axes(r, k, axes, &count, r->opset >= 13));
  const int new_rank = un ? rank + (int)count : rank;
  if (new_rank > ONNX_MAX_RANK) return onnx_node_error(r, k, "a rank past %d", ONNX_MAX_RANK);
  int marked[ONNX_MAX_RANK] = {0};
  for (size_t i = 0; i < count; i++) {
    const int64_t a = normalize_axis(axes[i], new_rank);
    if (a < 0 || a >= new_rank || marked[a])
      return onnx_node_error(r, k, "axis %lld", (long long)axes[i]);
    marked[a] = 1;
  }
  *out_rank = 0;
  if (un) {
    for (int i = 0, j = 0; i < new_rank; i++) out[(*out_rank)++] = marked[i] ? 1 : dims[j++];
    return TTP_OK;
  }
  for (int i = 0; i < rank; i++) {
    if (count == 0 ? dims[i] == 1 : marked[i]) {
      if (dims[i] != 1)
        return onnx_node_error(r, k, "squeezes axis %d of size %lld", i, (long long)dims[i]);
      continue;
    }
    out[(*out_rank)++] = dims[i];
  }
  return TTP_OK;
}

ttp_status onnx_reshape_dims(onnx_reader* r, size_t k, int rank, const int64_t* dims,
                             int* out_rank, int64_t* out) {
  const Onnx__NodeProto* n = r->g->node[k];
  int ok;
  const size_t total = onnx_dims_count(dims, rank, &ok);
  if (strcmp(n->op_type, "Flatten") == 0) {
    const int64_t axis = normalize_axis(onnx_int_attr(n, "axis", 1), rank);
    if (axis < 0 || axis > rank) return onnx_node_error(r, k, "axis %lld", (long long)axis);
    int64_t outer = 1;
    for (int i = 0; i < axis; i++) outer *= dims[i];
    *out_rank = 2, out[0] = outer, out[1] = outer ? (int64_t)total / outer : 0;
    return TTP_OK;
  }
  int64_t shape[ONNX_MAX_RANK];
  size_t count;
  TRY(onnx_ints_input(r, k, 1, "shape", shape, ONNX_MAX_RANK, &count));
  if (onnx_input(r, k, 1) < 0) return onnx_node_error(r, k, "no shape");
  const int allowzero = (int)onnx_int_attr(n, "allowzero", 0);
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < count; i++) {
    int64_t v = shape[i];
    if (v == 0 && !allowzero) {
      if ((int)i >= rank) return onnx_node_error(r, k, "a 0 past the input's dimensions");
      v = dims[i];
    }
    if (v == -1) {
      if (infer >= 0) return onnx_node_error(r, k, "two -1 in the shape");
      infer = (int)i;
      v = 1;
    } else if (v < 0) {
      return onnx_node_error(r, k, "dimension %lld", (long long)v);
    }
    out[i] = v;
    if (v > (int64_t)total + 1 || __builtin_mul_overflow(known, v, &known) ||
        (known > ONNX_CONST_MAX && (size_t)known > total))
      return onnx_node_error(r, k, "a shape larger than its input");
  }
  if (infer >= 0) {
    if (known == 0 || total % (size_t)known)
      return onnx_node_error(r, k, "%zu values do not fill the shape", total);
    out[infer] = (int64_t)total / known;
    known *= out[infer];
  }
  if ((size_t)known != total)
    return onnx_node_error(r, k, "%zu values into a shape of %lld", total, (long long)known);
  *out_rank = (int)count;
  return TTP_OK;
}

/* Unsqueeze, Squeeze, Reshape, Flatten of a constant: the same values, other dimensions. */
static ttp_status fold_view(onnx_reader* r, size_t k) {
  const onnx_const* a = onnx_const_input(r, k, 0, "input");
  if (!a) return r->e->status;
  const char* op = r->g->node[k]->op_type;
  int rank;
  int64_t dims[ONNX_MAX_RANK];
  if (strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0)
    TRY(onnx_reshape_dims(r, k, a->rank, a->dims, &rank, dims));
  else
    TRY(onnx_squeeze_dims(r, k, a->rank, a->dims, &rank, dims));
  onnx_const* o = output(r, k, 0);
  return o ? copy_const(r, a, o, rank, dims) : TTP_OK;
}

static ttp_status fold_concat(onnx_reader* r, size_t k) {
  const size_t n_in = r->g->node[k]->n_input;
  if (n_in == 0) return onnx_node_error(r, k, "no inputs");
  const onnx_const* first = onnx_const_input(r, k, 0, "input");
  if (!first) return r->e->status;
  const int64_t axis = normalize_axis(onnx_int_attr(r->g->node[k], "axis", 0), first->rank);
  if (axis < 0 || axis >= first->rank) return onnx_node_error(r, k, "axis out of range");
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  int64_t dims[ONNX_MAX_RANK];
  memcpy(dims, first->dims, sizeof dims);
  dims[axis] = 0;
  int integer = 1;
  for (size_t i = 0; i < n_in; i++) {
    const onnx_const* c = onnx_const_input(r, k, i, "input");
    if (!c) return r->e->status;
    if (c->rank != first->rank) return onnx_node_error(r, k, "inputs of different ranks");
    for (int d = 0; d < c->rank; d++)
      if (d != axis && c->dims[d] != first->dims[d])
        return onnx_node_error(r, k, "inputs of different shapes");
    dims[axis] += c->dims[axis];
    integer &= c->integer;
  }
  TRY(shaped(r, o, first->rank, dims, integer));
  size_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++) outer *= (size_t)dims[d];
  for (int d = (int)axis + 1; d < o->rank; d++) inner *= (size_t)dims[d];
  size_t at = 0;
  for (size_t a = 0; a < outer; a++)
    for (size_t i = 0; i < n_in; i++) {
      const onnx_const* c = &r->slots[onnx_input(r, k, i)].c;
      const size_t run = (size_t)c->dims[axis] * inner;
      for (size_t b = 0; b < run; b++, at++) {
        if (integer) o->i[at] = c->i[a * run + b];
        else o->f[at] = onnx_const_f(c, a * run + b);
      }
    }
  return TTP_OK;
}

ttp_status onnx_slice_params(onnx_reader* r, size_t k, int rank, const int64_t* dims,
                             int64_t* start, int64_t* step, int64_t* count, int64_t* raw_end0) {
  const Onnx__NodeProto* n = r->g->node[k];
  int64_t starts[ONNX_MAX_RANK], ends[ONNX_MAX_RANK], axes[ONNX_MAX_RANK], steps[ONNX_MAX_RANK];
  size_t ns, ne, na, nst;
  if (r->opset < 10) {
    if (onnx_ints_attr(n, "starts", starts, ONNX_MAX_RANK, &ns) < 0 ||
        onnx_ints_attr(n, "ends", ends, ONNX_MAX_RANK, &ne) < 0 ||
        onnx_ints_attr(n, "axes", axes, ONNX_MAX_RANK, &na) < 0)
      return onnx_node_error(r, k, "more than %d axes", ONNX_MAX_RANK);
    nst = 0;
  } else {
    TRY(onnx_ints_input(r, k, 1, "starts", starts, ONNX_MAX_RANK, &ns));
    TRY(onnx_ints_input(r, k, 2, "ends", ends, ONNX_MAX_RANK, &ne));
    TRY(onnx_ints_input(r, k, 3, "axes", axes, ONNX_MAX_RANK, &na));
    TRY(onnx_ints_input(r, k, 4, "steps", steps, ONNX_MAX_RANK, &nst));
  }
  if (ns != ne || (na && na != ns) || (nst && nst != ns))
    return onnx_node_error(r, k, "starts, ends, axes and steps of different lengths");
  for (int d = 0; d < rank; d++) start[d] = 0, step[d] = 1, count[d] = dims[d];
  int seen[ONNX_MAX_RANK] = {0};
  *raw_end0 = INT64_MAX;
  for (size_t i = 0; i < ns; i++) {
    const int64_t a = normalize_axis(na ? axes[i] : (int64_t)i, rank);
    if (a < 0 || a >= rank || seen[a]) return onnx_node_error(r, k, "axis %lld", (long long)a);
    seen[a] = 1;
    if (a == 0) *raw_end0 = ends[i];
    const int64_t s = nst ? steps[i] : 1, dim = dims[a];
    if (s == 0 || s == INT64_MIN) return onnx_node_error(r, k, "a step of %lld", (long long)s);
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b = b < -dim ? 0 : b + dim;
    if (e < 0) e = e < -dim ? -1 : e + dim; /* below everything for a negative step */
    if (s > 0) {
      b = b > dim ? dim : b;
      e = e > dim ? dim : e < 0 ? 0 : e;
      count[a] = e > b ? (e - b - 1) / s + 1 : 0;
    } else {
      b = b > dim - 1 ? dim - 1 : b;
      e = e > dim - 1 ? dim - 1 : e;
      count[a] = b > e ? (b - e - 1) / -s + 1 : 0;
    }
    start[a] = b, step[a] = s;
  }
  return TTP_OK;
}

static ttp_status fold_slice(onnx_reader* r, size_t k) {
  const onnx_const* a = onnx_const_input(r, k, 0, "data");
  if (!a) return r->e->status;
  int64_t start[ONNX_MAX_RANK], step[ONNX_MAX_RANK], count[ONNX_MAX_RANK], raw_end0;
  TRY(onnx_slice_params(r, k, a->rank, a->dims, start, step, count, &raw_end0));
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  TRY(shaped(r, o, a->rank, count, a->integer));
  size_t st[ONNX_MAX_RANK];
  strides_into(a->dims, a->rank, a->dims, a->rank, st);
  for (size_t i = 0; i < o->count; i++) {
    size_t rest = i, off = 0;
    for (int d = o->rank - 1; d >= 0; d--) {
      const size_t j = rest % (size_t)count[d];
      rest /= (size_t)count[d];
      off += (size_t)(start[d] + (int64_t)j * step[d]) * st[d];
    }
    if (a->integer) o->i[i] = a->i[off];
    else o->f[i] = a->f[off];
  }
  return TTP_OK;
}

ttp_status onnx_perm(onnx_reader* r, size_t k, int rank, int64_t* perm) {
  size_t n;
  if (onnx_ints_attr(r->g->node[k], "perm", perm, ONNX_MAX_RANK, &n) < 0)
    return onnx_node_error(r, k, "a perm of more than %d axes", ONNX_MAX_RANK);
  if (n == 0) {
    for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
    return TTP_OK;
  }
  int seen[ONNX_MAX_RANK] = {0};
  if ((int)n != rank) return onnx_node_error(r, k, "a perm of %zu axes for rank %d", n, rank);
  for (int i = 0; i < rank; i++) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
      return onnx_node_error(r, k, "perm is not a permutation");
    seen[perm[i]] = 1;
  }
  return TTP_OK;
}

static ttp_status fold_transpose(onnx_reader* r, size_t k) {
  const onnx_const* a = onnx_const_input(r, k, 0, "data");
  if (!a) return r->e->status;
  int64_t perm[ONNX_MAX_RANK], dims[ONNX_MAX_RANK];
  TRY(onnx_perm(r, k, a->rank, perm));
  for (int d = 0; d < a->rank; d++) dims[d] = a->dims[perm[d]];
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  TRY(shaped(r, o, a->rank, dims, a->integer));
  size_t st[ONNX_MAX_RANK], pst[ONNX_MAX_RANK];
  strides_into(a->dims, a->rank, a->dims, a->rank, st);
  for (int d = 0; d < a->rank; d++) pst[d] = st[perm[d]];
  for (size_t i = 0; i < o->count; i++) {
    const size_t off = offset_of(i, dims, o->rank, pst);
    if (a->integer) o->i[i] = a->i[off];
    else o->f[i] = a->f[off];
  }
  return TTP_OK;
}

/* ConstantOfShape and Expand: a shape from input (0 or 1) filled with a value or broadcast. */
static ttp_status fold_fill(onnx_reader* r, size_t k, int expand) {
  int64_t shape[ONNX_MAX_RANK];
  size_t n;
  TRY(onnx_ints_input(r, k, expand ? 1 : 0, "shape", shape, ONNX_MAX_RANK, &n));
  const onnx_const* v = NULL;
  onnx_const value = {0};
  if (expand) {
    if (!(v = onnx_const_input(r, k, 0, "input"))) return r->e->status;
  } else {
    const Onnx__AttributeProto* a = onnx_attr(r->g->node[k], "value");
    if (a && a->t) TRY(onnx_read_const(r, a->t, &value));
    else value.count = 1, value.integer = 0, value.f = calloc(1, sizeof *value.f);
    if (!value.f && !value.i) return ERR_NOMEM(r->e, 8);
    if (value.count != 1) {
      onnx_const_free(&value);
      return onnx_node_error(r, k, "a value of %zu elements", value.count);
    }
    v = &value;
  }
  onnx_const* o = output(r, k, 0);
  ttp_status s = TTP_OK;
  if (o) {
    int64_t base[1] = {1};
    if (!onnx_broadcast(v->rank ? v->dims : base, v->rank ? v->rank : 1, shape, (int)n, o->dims,
                        &o->rank) || o->rank > ONNX_MAX_RANK)
      s = onnx_node_error(r, k, "a shape that does not broadcast");
    if (!expand) { /* ConstantOfShape: exactly the shape */
      o->rank = (int)n;
      memcpy(o->dims, shape, n * sizeof *shape);
    }
    if (s == TTP_OK) s = onnx_const_alloc(r, o, v->integer);
    if (s == TTP_OK) {
      size_t st[ONNX_MAX_RANK];
      strides_into(v->dims, v->rank, o->dims, o->rank, st);
      for (size_t i = 0; i < o->count; i++) {
        const size_t off = v->count == 1 ? 0 : offset_of(i, o->dims, o->rank, st);
        if (v->integer) o->i[i] = v->i[off];
        else o->f[i] = v->f[off];
      }
    }
  }
  onnx_const_free(&value);
  return s;
}

static ttp_status fold_range(onnx_reader* r, size_t k) {
  const onnx_const* c[3];
  static const char* const what[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; i++)
    if (!(c[i] = onnx_const_input(r, k, (size_t)i, what[i]))) return r->e->status;
  const double start = onnx_const_f(c[0], 0), limit = onnx_const_f(c[1], 0),
               delta = onnx_const_f(c[2], 0);
  if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
    return onnx_node_error(r, k, "range %g to %g by %g", start, limit, delta);
  const double steps = ceil((limit - start) / delta);
  if (steps > ONNX_CONST_MAX) return onnx_node_error(r, k, "a range past %d values", ONNX_CONST_MAX);
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  o->rank = 1, o->dims[0] = steps > 0 ? (int64_t)steps : 0;
  const int integer = c[0]->integer && c[1]->integer && c[2]->integer;
  TRY(onnx_const_alloc(r, o, integer));
  for (size_t i = 0; i < o->count; i++) {
    if (integer) o->i[i] = c[0]->i[0] + (int64_t)i * c[2]->i[0];
    else o->f[i] = start + (double)i * delta;
  }
  return TTP_OK;
}

static ttp_status fold_where(onnx_reader* r, size_t k) {
  const onnx_const* c = onnx_const_input(r, k, 0, "condition");
  const onnx_const* x = c ? onnx_const_input(r, k, 1, "X") : NULL;
  const onnx_const* y = x ? onnx_const_input(r, k, 2, "Y") : NULL;
  if (!y) return r->e->status;
  onnx_const* o = output(r, k, 0);
  if (!o) return TTP_OK;
  int64_t d1[ONNX_MAX_RANK];
  int r1;
  if (!onnx_broadcast(c->dims, c->rank, x->dims, x->rank, d1, &r1) ||
      !onnx_broadcast(d1, r1, y->dims, y->rank, o->dims, &o->rank))
    return onnx_node_error(r, k, "inputs of shapes that do not broadcast");
  const int integer = x->integer && y->integer;
  TRY(onnx_const_alloc(r, o, integer));
  size_t sc[ONNX_MAX_RANK], sx[ONNX_MAX_RANK], sy[ONNX_MAX_RANK];
  strides_into(c->dims, c->rank, o->dims, o->rank, sc);
  strides_into(x->dims, x->rank, o->dims, o->rank, sx);
  strides_into(y->dims, y->rank, o->dims, o->rank, sy);
  for (size_t i = 0; i < o->count; i++) {
    const int take_x = onnx_const_f(c, offset_of(i, o->dims, o->rank, sc)) != 0;
    const onnx_const* from = take_x ? x : y;
    const size_t off = offset_of(i, o->dims, o->rank, take_x ? sx : sy);
    if (integer) o->i[i] = from->i[off];
    else o->f[i] = onnx_const_f(from, off);
  }
  return TTP_OK;
}

/* Split of a constant: the sizes from the split attribute (before 13) or input, or equal parts
   (num_outputs from 18). */
ttp_status onnx_split_sizes(onnx_reader* r, size_t k, int64_t dim, int64_t* sizes, size_t parts) {
  const Onnx__NodeProto* n = r->g->node[k];
  size_t count = 0;
  if (r->opset < 13) {
    if (onnx_ints_attr(n, "split", sizes, parts, &count) < 0)
      return onnx_node_error(r, k, "more split sizes than outputs");
  } else {
    TRY(onnx_ints_input(r, k, 1, "split", sizes, parts, &count));
  }
  if (count == 0) { /* equal parts, the last smaller (ceil) */
    const int64_t each = (dim + (int64_t)parts - 1) / (int64_t)parts;
    for (size_t i = 0; i < parts; i++) {
      const int64_t left = dim - each * (int64_t)i;
      sizes[i] = left < each ? (left > 0 ? left : 0) : each;
    }
    count = parts;
  }
  int64_t sum = 0;
  for (size_t i = 0; i < count; i++) {
    if (sizes[i] < 0) return onnx_node_error(r, k, "a split of %lld", (long long)sizes[i]);
    sum += sizes[i];
  }
  if (count != parts || sum != dim)
    return onnx_node_error(r, k, "splits of %lld values in all for a dimension of %lld",
                           (long long)sum, (long long)dim);
  return TTP_OK;
}

static ttp_status fold_split(onnx_reader* r, size_t k) {
  const onnx_const* a = onnx_const_input(r, k, 0, "input");
  if (!a) return r->e->status;
  const size_t parts = r->g->node[k]->n_output;
  const int64_t axis = normalize_axis(onnx_int_attr(r->g->node[k], "axis", 0), a->rank);
  if (axis < 0 || axis >= a->rank || parts == 0 || parts > 1024)
    return onnx_node_error(r, k, "axis or outputs out of range");
  int64_t* sizes = malloc(parts * sizeof *sizes);
  if (!sizes) return ERR_NOMEM(r->e, parts * sizeof *sizes);
  ttp_status s = onnx_split_sizes(r, k, a->dims[axis], sizes, parts);
  size_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++) outer *= (size_t)a->dims[d];
  for (int d = (int)axis + 1; d < a->rank; d++) inner *= (size_t)a->dims[d];
  int64_t begin = 0;
  for (size_t p = 0; s == TTP_OK && p < parts; begin += sizes[p], p++) {
    onnx_const* o = output(r, k, p);
    if (!o) continue;
    int64_t dims[ONNX_MAX_RANK];
    memcpy(dims, a->dims, sizeof dims);
    dims[axis] = sizes[p];
    if ((s = shaped(r, o, a->rank, dims, a->integer)) != TTP_OK) break;
    size_t at = 0;
    for (size_t x = 0; x < outer; x++)
      for (size_t j = 0; j < (size_t)sizes[p] * inner; j++, at++) {
        const size_t from = (x * (size_t)a->dims[axis] + (size_t)begin) * inner + j;
        if (a->integer) o->i[at] = a->i[from];
        else o->f[at] = a->f[from];
      }
  }
  free(sizes);
  return s;
}

ttp_status onnx_fold(onnx_reader* r, size_t k) {
  const char* op = r->g->node[k]->op_type;
  int code;
  if ((code = find_op(op, 1)) >= 0) return fold_unary(r, k, code);
  if ((code = find_op(op, 0)) >= 0) return fold_binary(r, k, code);
  if (strcmp(op, "Constant") == 0) return fold_constant(r, k);
  if (strcmp(op, "Cast") == 0 || strcmp(op, "CastLike") == 0) return fold_cast(r, k);
  if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) {
    const onnx_const* a = onnx_const_input(r, k, 0, "input");
    return a ? onnx_fold_shape(r, k, a->rank, a->dims) : r->e->status;
  }
  if (strcmp(op, "Gather") == 0) return fold_gather(r, k);
  if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0 || strcmp(op, "Reshape") == 0 ||
      strcmp(op, "Flatten") == 0)
    return fold_view(r, k);
  if (strcmp(op, "Concat") == 0) return fold_concat(r, k);
  if (strcmp(op, "Slice") == 0) return fold_slice(r, k);
  if (strcmp(op, "Transpose") == 0) return fold_transpose(r, k);
  if (strcmp(op, "ConstantOfShape") == 0) return fold_fill(r, k, 0);
  if (strcmp(op, "Expand") == 0) return fold_fill(r, k, 1);
  if (strcmp(op, "Range") == 0) return fold_range(r, k);
  if (strcmp(op, "Where") == 0) return fold_where(r, k);
  if (strcmp(op, "Split") == 0) return fold_split(r, k);
  return onnx_node_error(r, k, "computes constants, which ttapipe does not do for this "
                         "operator");
}
