/* ONNX files for the tests, written with the library's own protoc-c code (the generated
   onnx.pb-c.h): a ttapipe model as the graph an exporter writes for it, in variants that a reader
   must accept alike and breakages it must refuse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"

/* Every allocation of one file, freed together. */
typedef struct arena {
  void* blocks[4096];
  int count;
} arena;

static void* take(arena* a, size_t bytes) {
  CHECK(a->count < (int)(sizeof a->blocks / sizeof *a->blocks), "onnx writer: arena full");
  void* p = calloc(1, bytes ? bytes : 1);
  CHECK(p, "out of memory");
  return a->blocks[a->count++] = p;
}

static char* text(arena* a, const char* s) {
  char* t = take(a, strlen(s) + 1);
  memcpy(t, s, strlen(s) + 1);
  return t;
}

static Onnx__AttributeProto* new_attr(arena* a, const char* name,
                                      Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto* at = take(a, sizeof *at);
  onnx__attribute_proto__init(at);
  at->name = text(a, name);
  at->has_type = 1, at->type = type;
  return at;
}

static Onnx__AttributeProto* int_attr(arena* a, const char* name, int64_t v) {
  Onnx__AttributeProto* at = new_attr(a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  at->has_i = 1, at->i = v;
  return at;
}

static Onnx__AttributeProto* float_attr(arena* a, const char* name, float v) {
  Onnx__AttributeProto* at = new_attr(a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  at->has_f = 1, at->f = v;
  return at;
}

static Onnx__AttributeProto* ints_attr(arena* a, const char* name, int n, const int64_t* v) {
  Onnx__AttributeProto* at = new_attr(a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  at->n_ints = (size_t)n;
  at->ints = take(a, (size_t)n * sizeof *at->ints);
  memcpy(at->ints, v, (size_t)n * sizeof *v);
  return at;
}

typedef struct graph_build {
  arena* a;
  unsigned variant;
  Onnx__NodeProto* nodes[64];
  int n_nodes;
  Onnx__TensorProto* inits[64];
  int n_inits;
  char current[64]; /* the chain's last output */
} graph_build;

static Onnx__NodeProto* node(graph_build* b, const char* op, const char* name) {
  Onnx__NodeProto* n = take(b->a, sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = text(b->a, op);
  n->name = text(b->a, name);
  n->n_input = 1;
  n->input = take(b->a, 5 * sizeof *n->input);
  n->input[0] = text(b->a, b->current);
  n->n_output = 1;
  n->output = take(b->a, sizeof *n->output);
  char out[64];
  snprintf(out, sizeof out, "%s_out", name);
  n->output[0] = text(b->a, out);
  snprintf(b->current, sizeof b->current, "%s", out);
  n->attribute = take(b->a, 8 * sizeof *n->attribute);
  CHECK(b->n_nodes < 64, "onnx writer: too many nodes");
  b->nodes[b->n_nodes++] = n;
  return n;
}

static void add_input(graph_build* b, Onnx__NodeProto* n, const char* name) {
  n->input[n->n_input++] = text(b->a, name);
}

/* A float32 initializer: raw little-endian bytes, or float_data with FIXTURE_ONNX_TYPED. */
static void init_floats(graph_build* b, const char* name, int ndims, const int64_t* dims,
                        const float* v, size_t count) {
  Onnx__TensorProto* t = take(b->a, sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = text(b->a, name);
  t->n_dims = (size_t)ndims;
  t->dims = take(b->a, (size_t)ndims * sizeof *t->dims);
  memcpy(t->dims, dims, (size_t)ndims * sizeof *dims);
  t->has_data_type = 1, t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  if (b->variant & FIXTURE_ONNX_TYPED) {
    t->n_float_data = count;
    t->float_data = take(b->a, count * sizeof *v);
    memcpy(t->float_data, v, count * sizeof *v);
  } else {
    t->has_raw_data = 1;
    t->raw_data.len = 4 * count;
    t->raw_data.data = take(b->a, 4 * count);
    for (size_t i = 0; i < count; i++) {
      uint32_t bits;
      memcpy(&bits, &v[i], sizeof bits);
      for (int k = 0; k < 4; k++) t->raw_data.data[4 * i + k] = (uint8_t)(bits >> 8 * k);
    }
  }
  if (b->variant & FIXTURE_ONNX_EXTERNAL) {
    t->has_data_location = 1, t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  }
  CHECK(b->n_inits < 64, "onnx writer: too many initializers");
  b->inits[b->n_inits++] = t;
}

void fixture_onnx_norm(int c, float v[4]) {
  v[0] = 1.0f + 0.1f * (float)(c % 7), v[1] = 0.01f * (float)(c % 5);
  v[2] = 0.02f * (float)(c % 9) - 0.1f, v[3] = 0.5f + 0.05f * (float)(c % 11);
}

/* A BatchNormalization node after the chain's last, over `channels`. */
static void norm(graph_build* b, const char* layer, int channels) {
  char name[64];
  snprintf(name, sizeof name, "%s.bn", layer);
  Onnx__NodeProto* n = node(b, "BatchNormalization", name);
  n->attribute[n->n_attribute++] = float_attr(b->a, "epsilon", 1e-5f);
  static const char* const parts[4] = {"scale", "B", "mean", "var"};
  float* v = malloc((size_t)channels * 4 * sizeof *v);
  CHECK(v, "out of memory");
  for (int c = 0; c < channels; c++) fixture_onnx_norm(c, v + 4 * c);
  for (int i = 0; i < 4; i++) {
    char part[80];
    snprintf(part, sizeof part, "%s.%s", name, parts[i]);
    add_input(b, n, part);
    float* column = malloc((size_t)channels * sizeof *column);
    CHECK(column, "out of memory");
    for (int c = 0; c < channels; c++) column[c] = v[4 * c + i];
    const int64_t dims[1] = {channels};
    init_floats(b, part, 1, dims, column, (size_t)channels);
    free(column);
  }
  free(v);
}

void fixture_onnx(const model* m, const char* path, unsigned variant) {
  arena* a = calloc(1, sizeof *a);
  CHECK(a, "out of memory");
  graph_build b = {.a = a, .variant = variant};
  snprintf(b.current, sizeof b.current, "image");
  int fcs = 0;
  for (int i = 0; i < m->layer_count; i++) {
    const model_layer* l = &m->layers[i];
    char wname[64], bname[64];
    snprintf(wname, sizeof wname, "%s.weight", l->name);
    snprintf(bname, sizeof bname, "%s.bias", l->name);
    if ((variant & FIXTURE_ONNX_MISSING) && i == 0) snprintf(wname, sizeof wname, "nowhere");
    if (l->op == MODEL_CONV) {
      Onnx__NodeProto* n = node(&b, "Conv", l->name);
      add_input(&b, n, wname), add_input(&b, n, bname);
      const model_window* w = &l->p.conv.w;
      const int64_t k[2] = {w->r, w->s}, st[2] = {w->stride_h, w->stride_h};
      const int64_t pads[4] = {l->p.conv.w.pad_t, l->p.conv.w.pad_t, l->p.conv.w.pad_t, l->p.conv.w.pad_t};
      n->attribute[n->n_attribute++] = ints_attr(a, "kernel_shape", 2, k);
      n->attribute[n->n_attribute++] = ints_attr(a, "strides", 2, st);
      n->attribute[n->n_attribute++] = ints_attr(a, "pads", 4, pads);
      const int64_t wd[4] = {l->p.conv.k, l->in.c, l->p.conv.w.r, l->p.conv.w.s}, bd[1] = {l->p.conv.k};
      if (!((variant & FIXTURE_ONNX_MISSING) && i == 0))
        init_floats(&b, wname, 4, wd, l->weights, l->weight_count);
      init_floats(&b, bname, 1, bd, l->bias, l->bias_count);
      if ((variant & FIXTURE_ONNX_NORM) && i == 0) norm(&b, l->name, l->p.conv.k);
      if ((variant & FIXTURE_ONNX_BAD_OP) && i == 0) node(&b, "Softsign", "squash");
      if ((variant & FIXTURE_ONNX_NOT_CHAIN) && i == 0) {
        Onnx__NodeProto* r = node(&b, "Relu", "astray");
        r->input[0] = text(a, "image");
      }
    } else if (l->op == MODEL_MAXPOOL) {
      Onnx__NodeProto* n = node(&b, "MaxPool", l->name);
      const int64_t k[2] = {l->p.pool.w.r, l->p.pool.w.s}, st[2] = {l->p.pool.w.stride_h, l->p.pool.w.stride_h};
      n->attribute[n->n_attribute++] = ints_attr(a, "kernel_shape", 2, k);
      n->attribute[n->n_attribute++] = ints_attr(a, "strides", 2, st);
    } else if (l->op == MODEL_FC) {
      const int in = l->in.c * l->in.h * l->in.w, out = l->p.fc.out;
      if (fcs++ == 0) node(&b, "Flatten", "flatten"); /* Gemm takes [N, K] */
      Onnx__NodeProto* n = node(&b, "Gemm", l->name);
      add_input(&b, n, wname), add_input(&b, n, bname);
      const int transposed = (variant & FIXTURE_ONNX_TRANSB0) != 0;
      n->attribute[n->n_attribute++] = int_attr(a, "transB", transposed ? 0 : 1);
      if (variant & FIXTURE_ONNX_EXTRAS) n->attribute[n->n_attribute++] = float_attr(a, "alpha", 1.0f);
      float* w = malloc(l->weight_count * sizeof *w);
      CHECK(w, "out of memory");
      for (int o = 0; o < out; o++)
        for (int k = 0; k < in; k++)
          w[transposed ? (size_t)k * out + o : (size_t)o * in + k] = l->weights[(size_t)o * in + k];
      const int64_t wd[2] = {transposed ? in : out, transposed ? out : in}, bd[1] = {out};
      init_floats(&b, wname, 2, wd, w, l->weight_count);
      free(w);
      init_floats(&b, bname, 1, bd, l->bias, l->bias_count);
      if ((variant & FIXTURE_ONNX_NORM) && fcs == 1) norm(&b, l->name, out);
    } else if (l->op == MODEL_RELU) {
      node(&b, "Relu", l->name);
      if (variant & FIXTURE_ONNX_EXTRAS) node(&b, "Dropout", "dropout");
    } else if (l->op == MODEL_LRN) {
      Onnx__NodeProto* n = node(&b, "LRN", l->name);
      n->attribute[n->n_attribute++] = int_attr(a, "size", l->p.lrn.n);
      n->attribute[n->n_attribute++] = float_attr(a, "alpha", (float)l->p.lrn.alpha);
      n->attribute[n->n_attribute++] = float_attr(a, "beta", (float)l->p.lrn.beta);
      n->attribute[n->n_attribute++] = float_attr(a, "bias", (float)l->p.lrn.k);
    } else if (l->op == MODEL_SOFTMAX && !(variant & FIXTURE_ONNX_NO_SOFTMAX)) {
      if (variant & FIXTURE_ONNX_EXTRAS) node(&b, "Identity", "identity");
      Onnx__NodeProto* n = node(&b, "Softmax", l->name);
      n->attribute[n->n_attribute++] = int_attr(a, "axis", 1);
    }
  }

  /* The graph's input [N, C, H, W] (N named, C H W fixed unless FIXTURE_ONNX_DYNAMIC) and output. */
  Onnx__TensorShapeProto* shape = take(a, sizeof *shape);
  onnx__tensor_shape_proto__init(shape);
  shape->n_dim = 4;
  shape->dim = take(a, 4 * sizeof *shape->dim);
  const int64_t dims[4] = {0, m->input.c, (variant & FIXTURE_ONNX_BIG) ? 200 : m->input.h, m->input.w};
  for (int i = 0; i < 4; i++) {
    Onnx__TensorShapeProto__Dimension* d = take(a, sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    if (i == 0 || (i == 2 && (variant & FIXTURE_ONNX_DYNAMIC))) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = text(a, i == 0 ? "N" : "rows");
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = dims[i];
    }
    shape->dim[i] = d;
  }
  Onnx__TypeProto__Tensor* tt = take(a, sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1, tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, tt->shape = shape;
  Onnx__TypeProto* type = take(a, sizeof *type);
  onnx__type_proto__init(type);
  type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, type->tensor_type = tt;
  Onnx__ValueInfoProto* input = take(a, sizeof *input);
  onnx__value_info_proto__init(input);
  input->name = text(a, "image"), input->type = type;
  Onnx__ValueInfoProto* output = take(a, sizeof *output);
  onnx__value_info_proto__init(output);
  output->name = text(a, b.current);

  Onnx__GraphProto* g = take(a, sizeof *g);
  onnx__graph_proto__init(g);
  g->name = text(a, "fixture");
  g->n_node = (size_t)b.n_nodes, g->node = b.nodes;
  g->n_initializer = (size_t)b.n_inits, g->initializer = b.inits;
  g->n_input = 1, g->input = take(a, sizeof *g->input), g->input[0] = input;
  g->n_output = 1, g->output = take(a, sizeof *g->output), g->output[0] = output;
  Onnx__OperatorSetIdProto* opset = take(a, sizeof *opset);
  onnx__operator_set_id_proto__init(opset);
  opset->domain = text(a, "");
  opset->has_version = 1, opset->version = (variant & FIXTURE_ONNX_OPSET99) ? 99 : 13;
  Onnx__ModelProto mp;
  onnx__model_proto__init(&mp);
  mp.has_ir_version = 1, mp.ir_version = 7;
  mp.producer_name = text(a, "ttapipe tests");
  mp.n_opset_import = 1, mp.opset_import = take(a, sizeof *mp.opset_import);
  mp.opset_import[0] = opset;
  mp.graph = g;
  if (variant & (FIXTURE_ONNX_LABELS | FIXTURE_ONNX_BAD_LABELS)) {
    const int names = m->classes - ((variant & FIXTURE_ONNX_BAD_LABELS) ? 1 : 0);
    char* value = take(a, (size_t)names * 8 + 1);
    for (int k = 0; k < names; k++) sprintf(value + strlen(value), "c%d\n", k);
    Onnx__StringStringEntryProto* kv = take(a, sizeof *kv);
    onnx__string_string_entry_proto__init(kv);
    kv->key = text(a, "labels"), kv->value = value;
    mp.n_metadata_props = 1, mp.metadata_props = take(a, sizeof *mp.metadata_props);
    mp.metadata_props[0] = kv;
  }
  const size_t size = onnx__model_proto__get_packed_size(&mp);
  uint8_t* bytes = malloc(size);
  CHECK(bytes, "out of memory");
  CHECK(onnx__model_proto__pack(&mp, bytes) == size, "onnx writer: pack");
  test_write_file(path, bytes, size);
  free(bytes);
  for (int i = 0; i < a->count; i++) free(a->blocks[i]);
  free(a);
}
