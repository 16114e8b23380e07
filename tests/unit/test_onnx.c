/* ONNX models (model/onnx.c). A model written as ONNX (tests/common/onnx_writer.c) in the
   variants an exporter may write (raw or typed initializers, Gemm's weights either way round,
   Flatten/Dropout/Identity nodes, logits without a softmax) reads back as the same layers and
   weights, bit for bit, and classifies on the CPU engine as its mnistCUDNN directory does (the
   LRN's constants pass through float32 in ONNX: within 1e-6). Breakages are refused in one line
   naming the file and, where one is to blame, the node and its operator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/mnistcudnn.h"
#include "model/onnx.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { IMAGES = 37 };

static void same_layers(const model* a, const model* b, unsigned variant) {
  CHECK(a->layer_count == b->layer_count, "variant %u: %d layers, not %d", variant,
        b->layer_count, a->layer_count);
  for (int i = 0; i < a->layer_count; i++) {
    const model_layer *x = &a->layers[i], *y = &b->layers[i];
    CHECK(x->op == y->op, "variant %u: layer %d is %s, not %s", variant, i, model_op_name(y->op),
          model_op_name(x->op));
    CHECK(x->weight_count == y->weight_count && x->bias_count == y->bias_count,
          "variant %u: layer %d's sizes", variant, i);
    if (x->weight_count)
      CHECK(memcmp(x->weights, y->weights, x->weight_count * sizeof *x->weights) == 0 &&
                memcmp(x->bias, y->bias, x->bias_count * sizeof *x->bias) == 0,
            "variant %u: layer %s's weights differ", variant, x->name);
    if (x->op == MODEL_CONV)
      CHECK(memcmp(&x->p.conv, &y->p.conv, sizeof x->p.conv) == 0, "variant %u: conv %s", variant,
            x->name);
    if (x->op == MODEL_MAXPOOL)
      CHECK(memcmp(&x->p.pool, &y->p.pool, sizeof x->p.pool) == 0, "variant %u: pool %s", variant,
            x->name);
    if (x->op == MODEL_FC) CHECK(x->p.fc.out == y->p.fc.out, "variant %u: fc %s", variant, x->name);
    if (x->op == MODEL_LRN)
      CHECK(x->p.lrn.n == y->p.lrn.n && y->p.lrn.alpha == (float)x->p.lrn.alpha &&
                y->p.lrn.beta == (float)x->p.lrn.beta && y->p.lrn.k == (float)x->p.lrn.k,
            "variant %u: lrn %s's parameters", variant, x->name);
  }
}

static void classify(const char* model_path, const uint8_t* images, ttp_result* results,
                     float* probs) {
  ttp_pipeline* p = fixture_open(model_path, TTP_ENGINE_CPU, NULL);
  memset(results, 0xa5, IMAGES * sizeof *results);
  CHECK(ttp_classify(p, images, IMAGES, results, probs) == TTP_OK, "%s", ttp_last_error(p));
  ttp_close(p);
}

static void refused(const char* path, const char* what, const char* f1, const char* f2) {
  model* m = (model*)1;
  ttp_err e = {0};
  CHECK(io_load_onnx(path, &m, &e) != TTP_OK, "%s: accepted", what);
  CHECK(m == NULL, "%s: a model returned with the failure", what);
  CHECK(!strchr(e.message, '\n'), "%s: more than one line", what);
  const char* name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  EXPECT_MESSAGE(e.message, name, f1, f2);
  printf("  %s: %s\n", what, e.message);
}

int main(void) {
  char* dir = strdup(test_make_dir());
  fixture_model_dir(dir, 21);
  ttp_err e = {0};
  model* ref = NULL;
  CHECK(io_load_mnistcudnn(dir, &ref, &e) == TTP_OK, "%s", e.message);
  uint8_t* images = malloc((size_t)IMAGES * 784);
  CHECK(images, "out of memory");
  test_rng rng = {21};
  for (size_t i = 0; i < (size_t)IMAGES * 784; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  ttp_result want[IMAGES], got[IMAGES];
  static float want_p[IMAGES * 10], got_p[IMAGES * 10];
  classify(dir, images, want, want_p);

  const unsigned variants[] = {0, FIXTURE_ONNX_TYPED, FIXTURE_ONNX_TRANSB0 | FIXTURE_ONNX_EXTRAS,
                               FIXTURE_ONNX_NO_SOFTMAX};
  for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
    char name[64];
    snprintf(name, sizeof name, "variant%u.onnx", variants[v]);
    const char* path = test_path(dir, name);
    fixture_onnx(ref, path, variants[v]);
    model* m = NULL;
    CHECK(io_load_onnx(path, &m, &e) == TTP_OK, "variant %u: %s", variants[v], e.message);
    same_layers(ref, m, variants[v]);
    if (variants[v] & FIXTURE_ONNX_NO_SOFTMAX)
      CHECK(strcmp(m->layers[m->layer_count - 1].name, "softmax (added)") == 0,
            "logits: the softmax not added");
    model_free(m);
    classify(path, images, got, got_p);
    double worst = 0;
    for (int i = 0; i < IMAGES; i++) {
      CHECK(got[i].class_index == want[i].class_index, "variant %u, image %d: class %d, not %d",
            variants[v], i, got[i].class_index, want[i].class_index);
      for (int k = 0; k < 10; k++) {
        const double d = got_p[i * 10 + k] - want_p[i * 10 + k];
        if (d > worst) worst = d;
        if (-d > worst) worst = -d;
      }
    }
    CHECK(worst <= 1e-6, "variant %u: probabilities differ by %g", variants[v], worst);
    printf("variant %u: the same layers and weights; probabilities within %.2g of the directory's\n",
           variants[v], worst);
  }

  /* BatchNormalization after conv1 and ip1, folded at load: each output channel's weights times
     s = scale / sqrt(var + 1e-5), its bias (bias - mean) s + B. */
  {
    const char* path = test_path(dir, "norm.onnx");
    fixture_onnx(ref, path, FIXTURE_ONNX_NORM);
    model* m = NULL;
    CHECK(io_load_onnx(path, &m, &e) == TTP_OK, "batch norm: %s", e.message);
    model* folded = NULL;
    CHECK(io_load_mnistcudnn(dir, &folded, &e) == TTP_OK, "%s", e.message);
    int done[2] = {0, 0}; /* the first conv, the first fc */
    double worst = 0;
    for (int i = 0; i < folded->layer_count; i++) {
      model_layer* l = &folded->layers[i];
      const int which = l->op == MODEL_CONV ? 0 : l->op == MODEL_FC ? 1 : -1;
      if (which < 0 || done[which]++) continue;
      const size_t outs = l->bias_count, per = l->weight_count / outs;
      for (size_t o = 0; o < outs; o++) {
        float v[4];
        fixture_onnx_norm((int)o, v);
        const double scale = v[0] / sqrt((double)v[3] + 1e-5);
        for (size_t k = 0; k < per; k++) l->weights[o * per + k] = (float)(l->weights[o * per + k] * scale);
        l->bias[o] = (float)(((double)l->bias[o] - v[2]) * scale + v[1]);
      }
    }
    CHECK(m->layer_count == folded->layer_count, "batch norm: %d layers", m->layer_count);
    for (int i = 0; i < m->layer_count; i++) {
      const model_layer *x = &folded->layers[i], *y = &m->layers[i];
      CHECK(x->weight_count == y->weight_count, "batch norm: layer %d", i);
      for (size_t k = 0; k < x->weight_count; k++) {
        const double d = fabs((double)x->weights[k] - y->weights[k]) / (fabs(x->weights[k]) + 1e-6);
        if (d > worst) worst = d;
      }
      for (size_t k = 0; k < x->bias_count; k++) {
        const double d = fabs((double)x->bias[k] - y->bias[k]) / (fabs(x->bias[k]) + 1e-6);
        if (d > worst) worst = d;
      }
    }
    CHECK(worst <= 1e-6, "batch norm: folded weights off by %g (relative)", worst);
    const char* plain = test_path(dir, "folded.onnx");
    fixture_onnx(folded, plain, 0);
    classify(plain, images, want, want_p);
    classify(path, images, got, got_p);
    for (int i = 0; i < IMAGES * 10; i++)
      CHECK(fabs(got_p[i] - want_p[i]) <= 1e-5, "batch norm: probability %d differs", i);
    printf("batch norm after conv1 and ip1: folded within %.2g of the formula; classifies as the "
           "folded model\n", worst);
    model_free(m);
    model_free(folded);
  }

  /* Class names from the metadata. */
  {
    const char* path = test_path(dir, "labels.onnx");
    fixture_onnx(ref, path, FIXTURE_ONNX_LABELS);
    model* m = NULL;
    CHECK(io_load_onnx(path, &m, &e) == TTP_OK, "labels: %s", e.message);
    CHECK(m->label_count == m->classes && strcmp(m->labels[0], "c0") == 0 &&
              strcmp(m->labels[m->classes - 1], "c9") == 0,
          "labels: %d names", m->label_count);
    model_free(m);
    printf("labels from the metadata: c0 .. c9\n");
  }

  printf("refused:\n");
  static const struct {
    unsigned variant;
    const char *what, *f1, *f2;
  } broken[] = {
      {FIXTURE_ONNX_MISSING, "weights missing", "'nowhere'", "made by no node"},
      {FIXTURE_ONNX_BAD_OP, "an unsupported operator", "'squash' (Softsign)", "not supported"},
      {FIXTURE_ONNX_NOT_CHAIN, "conv2 fed the image", "'conv2' (Conv)", "over 1 channels"},
      {FIXTURE_ONNX_DYNAMIC, "dynamic rows", "dynamic rows", "'rows'"},
      {FIXTURE_ONNX_BIG, "a 200-row input", "1x200x28", "8x8 to 128x128"},
      {FIXTURE_ONNX_OPSET99, "opset 99", "opset 99", "7 to 21"},
      {FIXTURE_ONNX_EXTERNAL, "external data", "conv1.weight", "outside the file"},
      {FIXTURE_ONNX_BAD_LABELS, "a name short", "metadata 'labels'", "9 names for the model's 10"},
  };
  for (size_t i = 0; i < sizeof broken / sizeof *broken; i++) {
    char name[64];
    snprintf(name, sizeof name, "broken%u.onnx", broken[i].variant);
    const char* path = test_path(dir, name);
    fixture_onnx(ref, path, broken[i].variant);
    refused(path, broken[i].what, broken[i].f1, broken[i].f2);
  }
  /* Files that are not models at all: empty, random bytes, a good file cut in half. */
  const char* empty = test_path(dir, "empty.onnx");
  test_write_file(empty, "", 0);
  refused(empty, "an empty file", "empty file", NULL);
  uint8_t noise[300];
  for (size_t i = 0; i < sizeof noise; i++) noise[i] = (uint8_t)test_int(&rng, 0, 255);
  const char* garbage = test_path(dir, "garbage.onnx");
  test_write_file(garbage, noise, sizeof noise);
  refused(garbage, "random bytes", "not an ONNX model", NULL);
  const char* whole = test_path(dir, "variant0.onnx");
  uint8_t* bytes = NULL;
  size_t size = 0;
  FILE* f = fopen(whole, "rb");
  CHECK(f, "%s", whole);
  fseek(f, 0, SEEK_END);
  size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  bytes = malloc(size);
  CHECK(bytes && fread(bytes, 1, size, f) == size, "reading %s", whole);
  fclose(f);
  const char* cut = test_path(dir, "cut.onnx");
  test_write_file(cut, bytes, size / 2);
  free(bytes);
  refused(cut, "a file cut in half", "not an ONNX model", NULL);
  refused(test_path(dir, "absent.onnx"), "a missing file", "absent.onnx", NULL);

  /* Through ttp_open: an .onnx path is an ONNX model. */
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = test_path(dir, "broken32.onnx");
  o.engine = TTP_ENGINE_CPU;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_ERR_MODEL, "ttp_open accepted an unsupported operator");
  EXPECT_MESSAGE(ttp_last_error(p), "'squash' (Softsign)");
  ttp_close(p);

  model_free(ref);
  free(images);
  test_remove_tree(dir);
  free(dir);
  printf("onnx: 4 variants read as their directory, batch norms folded, labels read, 12 "
         "breakages refused\n");
  return 0;
}
