/* The ONNX reader's access to what a node names: its attributes, the slots of its inputs, and
   the constants (initializers, Constant nodes, what folding computed) read into onnx_const. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/file.h"
#include "onnx_internal.h"

ttp_status onnx_node_error(const onnx_reader* r, size_t k, const char* fmt, ...) {
  const Onnx__NodeProto* n = r->g->node[k];
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return ERR(r->e, TTP_ERR_MODEL, "%s: node %zu '%s' (%s): %s", r->path, k,
             n->name ? n->name : "", n->op_type ? n->op_type : "?", why);
}

ttp_status onnx_node_prefix(const onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  err_prefix(r->e, "%s: node %zu '%s' (%s): ", r->path, k, n->name ? n->name : "",
             n->op_type ? n->op_type : "?");
  return r->e->status;
}

const Onnx__AttributeProto* onnx_attr(const Onnx__NodeProto* n, const char* name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}

int64_t onnx_int_attr(const Onnx__NodeProto* n, const char* name, int64_t fallback) {
  const Onnx__AttributeProto* a = onnx_attr(n, name);
  return a && a->has_i ? a->i : fallback;
}

float onnx_float_attr(const Onnx__NodeProto* n, const char* name, float fallback) {
  const Onnx__AttributeProto* a = onnx_attr(n, name);
  return a && a->has_f ? a->f : fallback;
}

int onnx_string_attr_is(const Onnx__NodeProto* n, const char* name, const char* s, int fallback) {
  const Onnx__AttributeProto* a = onnx_attr(n, name);
  if (!a || !a->has_s) return fallback;
  return a->s.len == strlen(s) && memcmp(a->s.data, s, a->s.len) == 0;
}

int onnx_ints_attr(const Onnx__NodeProto* n, const char* name, int64_t* v, size_t max,
                   size_t* count) {
  const Onnx__AttributeProto* a = onnx_attr(n, name);
  *count = 0;
  if (!a) return 0;
  if (a->n_ints > max) return -1;
  for (size_t i = 0; i < a->n_ints; i++) v[i] = a->ints[i];
  *count = a->n_ints;
  return 1;
}

int onnx_slot_of(const onnx_reader* r, const char* name) {
  if (!name || !name[0]) return -1;
  size_t lo = 0, hi = r->n_slots;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const int c = strcmp(r->slots[mid].name, name);
    if (c == 0) return (int)mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

int onnx_input(const onnx_reader* r, size_t k, size_t i) {
  return i < r->g->node[k]->n_input ? r->node_inputs[k][i] : -1;
}

/* ---- constants ------------------------------------------------------------------------------ */

size_t onnx_dims_count(const int64_t* dims, int rank, int* ok) {
  size_t n = 1;
  *ok = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0 || dims[i] > ONNX_CONST_MAX) return *ok = 0, 0;
    n *= (size_t)dims[i];
    if (n > ONNX_CONST_MAX) return *ok = 0, 0;
  }
  return n;
}

ttp_status onnx_const_alloc(const onnx_reader* r, onnx_const* c, int integer) {
  int ok;
  c->count = onnx_dims_count(c->dims, c->rank, &ok);
  if (!ok)
    return ERR(r->e, TTP_ERR_MODEL, "%s: node %zu: a constant of more than %d values", r->path,
               r->at, ONNX_CONST_MAX);
  c->integer = integer;
  c->i = NULL, c->f = NULL;
  const size_t n = c->count ? c->count : 1;
  if (integer) c->i = calloc(n, sizeof *c->i);
  else c->f = calloc(n, sizeof *c->f);
  if (integer ? !c->i : !c->f) return ERR_NOMEM(r->e, n * 8);
  return TTP_OK;
}

void onnx_const_free(onnx_const* c) {
  free(c->i);
  free(c->f);
  c->i = NULL, c->f = NULL;
}

double onnx_const_f(const onnx_const* c, size_t i) { return c->integer ? (double)c->i[i] : c->f[i]; }

int64_t onnx_const_i(const onnx_const* c, size_t i) {
  if (c->integer) return c->i[i];
  const double v = c->f[i];
  return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
}

static double half_to_double(uint32_t h) {
  const uint32_t exp = h >> 10 & 31, man = h & 1023;
  const double sign = h >> 15 ? -1.0 : 1.0;
  if (exp == 31) return man ? NAN : sign * INFINITY;
  if (exp == 0) return sign * ldexp((double)man, -24);
  return sign * ldexp((double)(man | 1024), (int)exp - 25);
}

static uint64_t le_bytes(const uint8_t* b, int n) {
  uint64_t u = 0;
  for (int k = n - 1; k >= 0; k--) u = u << 8 | b[k];
  return u;
}

ttp_status onnx_read_const(const onnx_reader* r, const Onnx__TensorProto* t, onnx_const* c) {
  const char* name = t->name ? t->name : "";
  memset(c, 0, sizeof *c);
  if (t->n_external_data || (t->has_data_location &&
                             t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
    return ERR(r->e, TTP_ERR_MODEL, "%s: tensor '%s' is stored outside the file", r->path, name);
  if (t->n_dims > ONNX_MAX_RANK)
    return ERR(r->e, TTP_ERR_MODEL, "%s: tensor '%s' has %zu dimensions", r->path, name,
               t->n_dims);
  c->rank = (int)t->n_dims;
  for (size_t i = 0; i < t->n_dims; i++) c->dims[i] = t->dims[i];
  /* Element size in raw data, and whether the type holds integers (bool included). */
  int size, integer;
  switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: size = 4, integer = 0; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: size = 8, integer = 0; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: size = 2, integer = 0; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: size = 2, integer = 0; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: size = 8, integer = 1; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: size = 8, integer = 1; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: size = 4, integer = 1; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: size = 4, integer = 1; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: size = 2, integer = 1; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: size = 2, integer = 1; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: size = 1, integer = 1; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: size = 1, integer = 1; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: size = 1, integer = 1; break;
    default:
      return ERR(r->e, TTP_ERR_MODEL, "%s: tensor '%s' is of data type %d, which ttapipe does "
                 "not read", r->path, name, t->data_type);
  }
  TRY(onnx_const_alloc(r, c, integer));
  const int raw = t->has_raw_data && t->raw_data.len > 0;
  const int type = t->data_type;
  size_t have;
  if (raw) have = t->raw_data.len % (size_t)size ? (size_t)-1 : t->raw_data.len / (size_t)size;
  else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) have = t->n_float_data;
  else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) have = t->n_double_data;
  else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) have = t->n_int64_data;
  else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64 ||
           type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32) have = t->n_uint64_data;
  else have = t->n_int32_data; /* int32, the 16- and 8-bit types, bool, float16, bfloat16 */
  if (have != c->count) {
    onnx_const_free(c);
    return ERR(r->e, TTP_ERR_MODEL, "%s: tensor '%s' stores %zu values for its %zu", r->path,
               name, have == (size_t)-1 ? 0 : have, c->count);
  }
  for (size_t i = 0; i < c->count; i++) {
    const uint8_t* b = raw ? t->raw_data.data + i * (size_t)size : NULL;
    if (integer) {
      int64_t v;
      if (b) {
        const uint64_t u = le_bytes(b, size);
        const int is_signed = type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
                              type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
                              type == ONNX__TENSOR_PROTO__DATA_TYPE__INT16 ||
                              type == ONNX__TENSOR_PROTO__DATA_TYPE__INT8;
        const int bits = 8 * size;
        if (is_signed && bits < 64 && (u >> (bits - 1) & 1)) v = (int64_t)(u | ~0ull << bits);
        else memcpy(&v, &u, sizeof v);
      } else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        v = t->int64_data[i];
      } else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64 ||
                 type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32) {
        v = (int64_t)t->uint64_data[i];
      } else {
        v = t->int32_data[i];
      }
      c->i[i] = type == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ? v != 0 : v;
    } else {
      double v;
      if (type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        v = b ? (double)io_float_le(b) : (double)t->float_data[i];
      } else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
        if (b) {
          const uint64_t u = le_bytes(b, 8);
          memcpy(&v, &u, sizeof v);
        } else {
          v = t->double_data[i];
        }
      } else {
        const uint32_t h = b ? (uint32_t)le_bytes(b, 2) : (uint32_t)t->int32_data[i] & 0xffffu;
        if (type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16) {
          v = half_to_double(h);
        } else { /* bfloat16: the top half of a float32 */
          const uint32_t bits = h << 16;
          float f;
          memcpy(&f, &bits, sizeof f);
          v = f;
        }
      }
      c->f[i] = v;
    }
  }
  return TTP_OK;
}

const onnx_const* onnx_const_of(onnx_reader* r, size_t k, int s) {
  if (s < 0) return NULL;
  onnx_slot* slot = &r->slots[s];
  if (slot->kind == SLOT_INIT) {
    onnx_const c;
    if (onnx_read_const(r, slot->proto, &c) != TTP_OK) return NULL;
    slot->c = c;
    slot->kind = SLOT_CONST;
  }
  if (slot->kind != SLOT_CONST) {
    onnx_node_error(r, k, "'%s' is not a constant", slot->name);
    return NULL;
  }
  return &slot->c;
}

const onnx_const* onnx_const_input(onnx_reader* r, size_t k, size_t i, const char* what) {
  const int s = onnx_input(r, k, i);
  if (s < 0) {
    onnx_node_error(r, k, "no %s (input %zu)", what, i);
    return NULL;
  }
  if (r->slots[s].kind == SLOT_TENSOR) {
    onnx_node_error(r, k, "its %s '%s' is computed from the image, not a constant", what,
                    r->slots[s].name);
    return NULL;
  }
  return onnx_const_of(r, k, s);
}

ttp_status onnx_ints_input(onnx_reader* r, size_t k, size_t i, const char* what, int64_t* v,
                           size_t max, size_t* n) {
  *n = 0;
  if (onnx_input(r, k, i) < 0) return TTP_OK;
  const onnx_const* c = onnx_const_input(r, k, i, what);
  if (!c) return r->e->status;
  if (!c->integer || c->rank > 1 || c->count > max)
    return onnx_node_error(r, k, "its %s: not a list of at most %zu integers", what, max);
  for (size_t j = 0; j < c->count; j++) v[j] = c->i[j];
  *n = c->count;
  return TTP_OK;
}

ttp_status onnx_tensor_floats(const onnx_reader* r, const onnx_const* c, const char* name,
                              size_t count, int transpose, size_t rows, float** out) {
  *out = NULL;
  if (c->count != count)
    return ERR(r->e, TTP_ERR_MODEL, "%s: node %zu: '%s' holds %zu values where %zu are needed",
               r->path, r->at, name, c->count, count);
  float* v = malloc((count ? count : 1) * sizeof *v);
  if (!v) return ERR_NOMEM(r->e, count * sizeof *v);
  const size_t cols = rows ? count / rows : 0; /* [rows][cols] read as [cols][rows] */
  for (size_t i = 0; i < count; i++) {
    const double d = onnx_const_f(c, i);
    const float f = (float)d;
    if (!isfinite(f)) {
      free(v);
      return ERR(r->e, TTP_ERR_MODEL, "%s: node %zu: '%s': value %zu (%g) is not a finite "
                 "float32", r->path, r->at, name, i, d);
    }
    v[transpose ? i % cols * rows + i / cols : i] = f;
  }
  *out = v;
  return TTP_OK;
}
