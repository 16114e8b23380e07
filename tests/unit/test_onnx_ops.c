/* The ONNX reader on what PyTorch really writes (tests/onnx/, models/lenet-mnist/model.onnx),
   each file changed in one place by editing its protobuf. Refused, in one line naming the file,
   the node and its operator: a Pad that reflects, Clip's bounds out of order, a Softmax over the
   batch's axis, a cycle, a Squeeze of a channel axis, an Unsqueeze without axes, an operator
   ttapipe does not have, an Add or a Concat of tensors whose shapes do not fit, a second graph
   input or output. Read as what they mean: a Pad before a MaxPool (a Pad layer, then the
   pooling), uneven zero padding before an AveragePool (the pooling's own padding), an Add of a
   constant after a Gemm (its bias), an Identity of an initializer (the initializer itself).
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

/* Loads mp (saved as name) and returns the model; NULL and the message printed if refused. */
static model* accepted(Onnx__ModelProto* mp, const char* name) {
  const char* path = save_proto(mp, name);
  onnx__model_proto__free_unpacked(mp, NULL);
  model* m = NULL;
  ttp_err e = {0};
  CHECK(io_load_onnx(path, &m, &e) == TTP_OK, "%s: %s", name, e.message);
  return m;
}

/* The first layer of op at or after layer `from`, or -1. */
static int layer_of(const model* m, model_op op, int from) {
  for (int i = from; i < m->layer_count; i++)
    if (m->layers[i].op == op) return i;
  return -1;
}

/* Node n's input list grown by one (name). */
static void add_input(Onnx__NodeProto* n, const char* name) {
  char** grown = realloc(n->input, (n->n_input + 1) * sizeof *grown);
  CHECK(grown, "out of memory");
  n->input = grown;
  n->input[n->n_input++] = strdup(name);
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

  /* A Pad that reflects. */
  Onnx__ModelProto* mp = load_proto(bn_avg);
  Onnx__NodeProto* pad = find(mp, "Pad", 0);
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

  /* A Softmax over the batch's axis. */
  mp = load_proto(mlp);
  Onnx__NodeProto* softmax = find(mp, "Softmax", 0);
  CHECK(softmax->n_attribute == 1 && softmax->attribute[0]->has_i, "Softmax's axis");
  softmax->attribute[0]->i = 0;
  refused(mp, "softmax-axis.onnx", "(Softmax)", "axis 0");

  /* A cycle: the first node takes the last one's output. */
  mp = load_proto(mlp);
  set_text(&mp->graph->node[0]->input[0], mp->graph->output[0]->name);
  refused(mp, "cycle.onnx", "a cycle", "needs its own output");

  /* A Squeeze of the channels' axis. */
  mp = load_proto(lenet);
  set_int64(constant_value(mp, find(mp, "Squeeze", 0)->input[1]), 0, 1);
  refused(mp, "squeeze-axis.onnx", "(Squeeze)", "squeezes axis 1 of size 500");

  /* An Unsqueeze without axes. */
  mp = load_proto(lenet);
  Onnx__NodeProto* flatten = find(mp, "Flatten", 0);
  set_text(&flatten->op_type, "Unsqueeze");
  onnx__attribute_proto__free_unpacked(flatten->attribute[0], NULL); /* its axis */
  flatten->n_attribute = 0;
  refused(mp, "unsqueeze-axes.onnx", "(Unsqueeze)", "no axes");

  /* An operator ttapipe does not have. */
  mp = load_proto(mlp);
  set_text(&find(mp, "Sigmoid", 0)->op_type, "Softsign");
  refused(mp, "softsign.onnx", "(Softsign)", "operator not supported");

  /* An Add of 20 x 24 x 24 maps and the 1 x 28 x 28 image. */
  mp = load_proto(bn_avg);
  Onnx__NodeProto* relu = find(mp, "Relu", 0);
  set_text(&relu->op_type, "Add");
  add_input(relu, "input");
  refused(mp, "add-mismatch.onnx", "(Add)", "a shape mismatch");

  /* A Concat of them (the channels add up; the rows and columns differ). */
  mp = load_proto(bn_avg);
  relu = find(mp, "Relu", 0);
  set_text(&relu->op_type, "Concat");
  add_input(relu, "input");
  refused(mp, "concat-mismatch.onnx", "(Concat)", "a shape mismatch");

  /* A second graph input, and a second output. */
  mp = load_proto(mlp);
  Onnx__GraphProto* g = mp->graph;
  Onnx__ValueInfoProto** inputs = realloc(g->input, (g->n_input + 1) * sizeof *inputs);
  CHECK(inputs, "out of memory");
  g->input = inputs;
  g->input[g->n_input] = malloc(sizeof **inputs);
  CHECK(g->input[g->n_input], "out of memory");
  onnx__value_info_proto__init(g->input[g->n_input]);
  g->input[g->n_input++]->name = strdup("mask");
  refused(mp, "two-inputs.onnx", "two graph inputs", "one image tensor");
  mp = load_proto(mlp);
  g = mp->graph;
  Onnx__ValueInfoProto** outputs = realloc(g->output, (g->n_output + 1) * sizeof *outputs);
  CHECK(outputs, "out of memory");
  g->output = outputs;
  g->output[g->n_output] = malloc(sizeof **outputs);
  CHECK(g->output[g->n_output], "out of memory");
  onnx__value_info_proto__init(g->output[g->n_output]);
  g->output[g->n_output++]->name = strdup("/Flatten_output_0");
  refused(mp, "two-outputs.onnx", "2 graph outputs", "takes one");

  printf("accepted:\n");
  /* A Pad's zeros before a MaxPool (whose padding is never chosen): a Pad layer. */
  mp = load_proto(bn_avg);
  pad = find(mp, "Pad", 5);
  set_text(&find(mp, "AveragePool", index_of(mp, pad))->op_type, "MaxPool");
  model* m = accepted(mp, "pad-maxpool.onnx");
  const int pad_layer = layer_of(m, MODEL_PAD, 0);
  CHECK(pad_layer >= 0 && pad_layer + 1 < m->layer_count &&
            m->layers[pad_layer + 1].op == MODEL_MAXPOOL &&
            m->layers[pad_layer + 1].inputs[0] == pad_layer + 1,
        "pad-maxpool.onnx: no Pad layer read by the max pooling");
  printf("  pad-maxpool.onnx: a Pad layer, then the max pooling\n");
  model_free(m);

  /* Padding of 1 above and below, none left and 2 right before an AveragePool (the same
     size): the pooling's own. */
  mp = load_proto(bn_avg);
  pad = find(mp, "Pad", 5);
  set_int64(constant_value(mp, pad->input[1]), 3, 0);
  set_int64(constant_value(mp, pad->input[1]), 7, 2);
  m = accepted(mp, "pad-uneven.onnx");
  const int avg = layer_of(m, MODEL_AVGPOOL, layer_of(m, MODEL_AVGPOOL, 0) + 1);
  CHECK(avg >= 0 && layer_of(m, MODEL_PAD, 0) < 0, "pad-uneven.onnx: a Pad layer left");
  const model_window* w = &m->layers[avg].p.pool.w;
  CHECK(w->pad_t == 1 && w->pad_l == 0 && w->pad_b == 1 && w->pad_r == 2 &&
            m->layers[avg].p.pool.count_pad,
        "pad-uneven.onnx: the pooling's padding %d,%d,%d,%d (count %d)", w->pad_t, w->pad_l,
        w->pad_b, w->pad_r, m->layers[avg].p.pool.count_pad);
  printf("  pad-uneven.onnx: the average pooling pads 1, 0, 1, 2 and counts them\n");
  model_free(m);

  /* An Add of a constant after a Gemm: its bias. */
  model* plain = NULL;
  ttp_err e0 = {0};
  CHECK(io_load_onnx(mlp, &plain, &e0) == TTP_OK, "%s", e0.message);
  mp = load_proto(mlp);
  set_text(&find(mp, "MatMul", 0)->op_type, "Gemm");
  m = accepted(mp, "add-gemm.onnx");
  CHECK(m->layer_count == plain->layer_count && m->layers[2].op == MODEL_FC,
        "add-gemm.onnx: %d layers, not %d", m->layer_count, plain->layer_count);
  CHECK(memcmp(m->layers[2].bias, plain->layers[2].bias, m->layers[2].bias_count * 4) == 0,
        "add-gemm.onnx: the Add is not the Gemm's bias");
  printf("  add-gemm.onnx: the Add is the Gemm's bias\n");
  model_free(m);
  model_free(plain);

  /* An Identity of an initializer reads as the initializer. */
  printf("accepted:\n");
  mp = load_proto(bn_avg);
  Onnx__NodeProto* norm = find(mp, "BatchNormalization", 0);
  g = mp->graph;
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
  printf("onnx ops: 11 changed files refused, 4 read as what they mean\n");
  return 0;
}
