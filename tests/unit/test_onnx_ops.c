/* The ONNX reader on what PyTorch really writes (tests/onnx/, models/lenet-mnist/model.onnx),
   each file changed in one place by editing its protobuf: the foldings and chain rules of the
   reader (Pad only before a Conv or AveragePool, zeros equal on four sides; Clip's bounds in
   order; an Add only as a MatMul's bias; Squeeze and Unsqueeze only on image axes; a Softmax
   over the classes; a chain, never a cycle) refuse the changed file in one line naming the file,
   the node and its operator; and an Identity of an initializer (PyTorch writes those where two
   initializers hold the same values) reads as the initializer itself.
   Usage: test_onnx_ops ONNX_DIR MODELS_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/onnx.h"
#include "onnx.pb-c.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"

static char* dir;

static Onnx__ModelProto* load_proto(const char* path) {
  FILE* f = fopen(path, "rb");
  CHECK(f, "cannot open %s", path);
  static uint8_t buf[4 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  Onnx__ModelProto* mp = onnx__model_proto__unpack(NULL, n, buf);
  CHECK(mp && mp->graph, "%s does not parse", path);
  return mp;
}

/* Writes mp to a file of the test directory and returns its path. */
static const char* save_proto(const Onnx__ModelProto* mp, const char* name) {
  size_t n = onnx__model_proto__get_packed_size(mp);
  uint8_t* buf = malloc(n);
  CHECK(buf, "out of memory");
  onnx__model_proto__pack(mp, buf);
  const char* path = test_path(dir, name);
  test_write_file(path, buf, n);
  free(buf);
  return path;
}

/* The graph's first node of operator op at or after node `from`. */
static Onnx__NodeProto* find(Onnx__ModelProto* mp, const char* op, size_t from) {
  for (size_t k = from; k < mp->graph->n_node; k++)
    if (strcmp(mp->graph->node[k]->op_type, op) == 0) return mp->graph->node[k];
  CHECK(0, "no %s node after node %zu", op, from);
  return NULL;
}

static size_t index_of(Onnx__ModelProto* mp, const Onnx__NodeProto* n) {
  for (size_t k = 0; k < mp->graph->n_node; k++)
    if (mp->graph->node[k] == n) return k;
  return (size_t)-1;
}

/* A string field replaced (protobuf-c's unpacked strings are malloc'd: freed with it). */
static void set_text(char** field, const char* s) {
  free(*field);
  *field = strdup(s);
  CHECK(*field, "out of memory");
}

/* The Constant node that makes `name`, its value tensor. */
static Onnx__TensorProto* constant_value(Onnx__ModelProto* mp, const char* name) {
  for (size_t k = 0; k < mp->graph->n_node; k++) {
    Onnx__NodeProto* n = mp->graph->node[k];
    if (strcmp(n->op_type, "Constant") == 0 && strcmp(n->output[0], name) == 0)
      return n->attribute[0]->t;
  }
  CHECK(0, "no Constant makes %s", name);
  return NULL;
}

static void set_int64(Onnx__TensorProto* t, size_t i, int64_t v) {
  CHECK(t->has_raw_data && t->raw_data.len >= 8 * (i + 1), "an int64 constant of raw data");
  for (int b = 0; b < 8; b++) t->raw_data.data[8 * i + b] = (uint8_t)((uint64_t)v >> 8 * b);
}

static void set_float(Onnx__TensorProto* t, float v) {
  CHECK(t->has_raw_data && t->raw_data.len == 4, "a float32 scalar of raw data");
  memcpy(t->raw_data.data, &v, 4); /* little-endian machine, as the file's */
}

static void refused(Onnx__ModelProto* mp, const char* name, const char* f1, const char* f2) {
  const char* path = save_proto(mp, name);
  model* m = (model*)1;
  ttp_err e = {0};
  CHECK(io_load_onnx(path, &m, &e) != TTP_OK, "%s: accepted", name);
  CHECK(m == NULL && !strchr(e.message, '\n'), "%s: a model left, or more than one line", name);
  EXPECT_MESSAGE(e.message, name, f1, f2);
  printf("  %s\n", e.message);
  onnx__model_proto__free_unpacked(mp, NULL);
}

int main(int argc, char** argv) {
  CHECK(argc == 3, "usage: test_onnx_ops ONNX_DIR MODELS_DIR");
  dir = strdup(test_make_dir());
  char bn_avg[2048], rgb[2048], mlp[2048], lenet[2048];
  snprintf(bn_avg, sizeof bn_avg, "%s/lenet-bn-avg.onnx", argv[1]);
  snprintf(rgb, sizeof rgb, "%s/rgb-stride.onnx", argv[1]);
  snprintf(mlp, sizeof mlp, "%s/mlp-sigmoid.onnx", argv[1]);
  snprintf(lenet, sizeof lenet, "%s/lenet-mnist/model.onnx", argv[2]);
  printf("refused:\n");

  /* A Pad's zeros before a MaxPool (whose padding is never chosen) cannot fold. */
  Onnx__ModelProto* mp = load_proto(bn_avg);
  Onnx__NodeProto* pad = find(mp, "Pad", 5);
  set_text(&find(mp, "AveragePool", index_of(mp, pad))->op_type, "MaxPool");
  refused(mp, "pad-maxpool.onnx", "(Pad)", "not followed by a Conv or an AveragePool");

  /* Padding of 1, 1, 1 and 2 on the four sides. */
  mp = load_proto(bn_avg);
  pad = find(mp, "Pad", 5);
  set_int64(constant_value(mp, pad->input[1]), 7, 2);
  refused(mp, "pad-uneven.onnx", "(Pad)", "equal on the four sides");

  /* A Pad that reflects. */
  mp = load_proto(bn_avg);
  pad = find(mp, "Pad", 0);
  for (size_t i = 0; i < pad->n_attribute; i++)
    if (strcmp(pad->attribute[i]->name, "mode") == 0) {
      free(pad->attribute[i]->s.data);
      pad->attribute[i]->s.data = (uint8_t*)strdup("reflect");
      pad->attribute[i]->s.len = 7;
    }
  refused(mp, "pad-reflect.onnx", "(Pad)", "mode other than constant");

  /* ReLU6's Clip with its max below its min. */
  mp = load_proto(rgb);
  Onnx__NodeProto* clip = find(mp, "Clip", 0);
  set_float(constant_value(mp, clip->input[2]), -1.0f);
  refused(mp, "clip-order.onnx", "(Clip)", "min 0 above max -1");

  /* An Add after a Gemm: only a MatMul's bias is an Add. */
  mp = load_proto(mlp);
  set_text(&find(mp, "MatMul", 0)->op_type, "Gemm");
  refused(mp, "add-gemm.onnx", "(Add)", "not right after a MatMul");

  /* A Softmax over the batch's axis. */
  mp = load_proto(mlp);
  Onnx__NodeProto* softmax = find(mp, "Softmax", 0);
  CHECK(softmax->n_attribute == 1 && softmax->attribute[0]->has_i, "Softmax's axis");
  softmax->attribute[0]->i = 0;
  refused(mp, "softmax-axis.onnx", "(Softmax)", "axis 0");

  /* A cycle: the first node takes the last one's output. */
  mp = load_proto(mlp);
  set_text(&mp->graph->node[0]->input[0], mp->graph->output[0]->name);
  refused(mp, "cycle.onnx", "node 0", "not a chain");

  /* A Squeeze of the channels' axis. */
  mp = load_proto(lenet);
  set_int64(constant_value(mp, find(mp, "Squeeze", 0)->input[1]), 0, 1);
  refused(mp, "squeeze-axis.onnx", "(Squeeze)", "axis 1: 2..5");

  /* An Unsqueeze before the image is one row. */
  mp = load_proto(lenet);
  Onnx__NodeProto* flatten = find(mp, "Flatten", 0);
  set_text(&flatten->op_type, "Unsqueeze");
  onnx__attribute_proto__free_unpacked(flatten->attribute[0], NULL); /* its axis */
  flatten->n_attribute = 0;
  refused(mp, "unsqueeze-image.onnx", "(Unsqueeze)", "not one row an image");

  /* An Identity of an initializer reads as the initializer. */
  printf("accepted:\n");
  mp = load_proto(bn_avg);
  Onnx__NodeProto* norm = find(mp, "BatchNormalization", 0);
  Onnx__GraphProto* g = mp->graph;
  Onnx__NodeProto** nodes = realloc(g->node, (g->n_node + 1) * sizeof *nodes);
  CHECK(nodes, "out of memory");
  g->node = nodes;
  Onnx__NodeProto* alias = malloc(sizeof *alias);
  CHECK(alias, "out of memory");
  onnx__node_proto__init(alias);
  alias->op_type = strdup("Identity");
  alias->name = strdup("alias");
  alias->n_input = alias->n_output = 1;
  alias->input = malloc(sizeof *alias->input);
  alias->output = malloc(sizeof *alias->output);
  CHECK(alias->op_type && alias->name && alias->input && alias->output, "out of memory");
  alias->input[0] = strdup(norm->input[4]);
  alias->output[0] = strdup("running_var_alias");
  memmove(g->node + 1, g->node, g->n_node * sizeof *g->node); /* first, before the chain */
  g->node[0] = alias;
  g->n_node++;
  set_text(&norm->input[4], "running_var_alias");
  const char* path = save_proto(mp, "identity.onnx");
  onnx__model_proto__free_unpacked(mp, NULL);
  model *a = NULL, *b = NULL;
  ttp_err e = {0};
  CHECK(io_load_onnx(bn_avg, &a, &e) == TTP_OK, "%s", e.message);
  CHECK(io_load_onnx(path, &b, &e) == TTP_OK, "identity.onnx: %s", e.message);
  CHECK(a->layer_count == b->layer_count, "identity.onnx: %d layers, not %d", b->layer_count,
        a->layer_count);
  for (int i = 0; i < a->layer_count; i++)
    CHECK(a->layers[i].weight_count == b->layers[i].weight_count &&
              (!a->layers[i].weight_count ||
               (memcmp(a->layers[i].weights, b->layers[i].weights,
                       a->layers[i].weight_count * sizeof(float)) == 0 &&
                memcmp(a->layers[i].bias, b->layers[i].bias,
                       a->layers[i].bias_count * sizeof(float)) == 0)),
          "identity.onnx: layer %d differs", i);
  printf("  identity.onnx: a batch norm's variance through an Identity: the same %d layers and "
         "weights\n", a->layer_count);
  model_free(a);
  model_free(b);
  printf("onnx ops: 9 changed files refused, an Identity of an initializer read through\n");
  return 0;
}
