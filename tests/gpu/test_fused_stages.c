/* The fused engine's three stages, each by itself (fused_run_stage), against the CPU reference's
   layers on the same input:
     stage 1  augment + conv1 + bias + [ReLU] + pool   from the images' bytes (the copies made
              by the CPU's aug_make_copy)
     stage 2  conv2 + bias + [ReLU] + pool             from the CPU's stage-1 output
     stage 3  fc1 + ReLU + [LRN] + fc2 + softmax + merge, from the CPU's stage-2 output: the
              merged probabilities and the record's class, probability and spread
   Outputs are poisoned (NaN) before each stage, so an element not written fails.
   Two models: NVIDIA's mnistCUDNN LeNet (or, without SHARED_DATASETS_DIR, one generated in its
   shape) with N = 5 and the default augmentation, and a made-up one of odd sizes (20x23 input,
   padding 2 and 1, 7 and 9 channels, ReLUs after the convolutions, no LRN, 13 classes) with
   N = 3 weighted in the merge, Gaussian noise and the geometric views (mirrors, rotation, zoom,
   sub-pixel translation, the reflect edge). Each in fp32 (tolerance 1e-5 relative) and fp16 (act1 and act2 in
   fp16, conv2 and fc1 on the tensor cores: 1e-3 for stage 1's rounding to fp16, 1e-2 from there
   on). fp32 runs stages 2 and 3 twice, with the batch-wide kernels (register-tiled conv2, fc1 a
   GEMM of its own) and with the others, whatever the batch: both against the CPU, and the two
   with the same bits. Then the whole pass from random images, the small batches' one launch
   against the stages' launches: the same bits (1, 8, 13, 20, 37 and 64 images). Usage:
   test_fused_stages SHARED_DATASETS_DIR. Skipped (77) without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "augment/merge.h"
#include "augment/tta.h"
#include "augment/merge_kernel.h"
#include "model/mnistcudnn.h"
#include "pipeline/cpu/cpu_layers.h"
#include "pipeline/engine.h"
#include "pipeline/fused/fused_engine.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

/* Layers [first, last) of m on one row, in place through two buffers; returns the output. */
static const float* cpu_layers(const model* m, int first, int last, const float* in, float* a,
                               float* b, double* acc) {
  const float* x = in;
  float* bufs[2] = {a, b};
  for (int i = first; i < last; i++) {
    const model_layer* l = &m->layers[i];
    float* y = bufs[(i - first) % 2];
    switch (l->op) {
      case MODEL_CONV:
        cpu_conv2d(x, l->in.c, l->in.h, l->in.w, l->weights, l->bias, l->p.conv.k, 1,
                   &l->p.conv.w, l->out.h, l->out.w, acc, y);
        break;
      case MODEL_MAXPOOL:
        cpu_maxpool(x, l->in.c, l->in.h, l->in.w, &l->p.pool.w, l->out.h, l->out.w, y);
        break;
      case MODEL_RELU: cpu_relu(x, model_shape_size(l->in), y); break;
      case MODEL_FC:
        cpu_fc(x, (int)model_shape_size(l->in), l->weights, l->bias, l->p.fc.out, y);
        break;
      case MODEL_LRN:
        cpu_lrn(x, l->in.c, l->in.h, l->in.w, l->p.lrn.n, l->p.lrn.alpha, l->p.lrn.beta,
                l->p.lrn.k, y);
        break;
      case MODEL_SOFTMAX: cpu_softmax(x, model_shape_size(l->in), y); break;
      default: CHECK(0, "layer kind %d", (int)l->op);
    }
    x = y;
  }
  return x;
}

/* The layer after the n-th max-pool and the ReLUs right after it. */
static int after_pool(const model* m, int n) {
  int i = 0;
  for (int seen = 0; i < m->layer_count && seen < n; i++) seen += m->layers[i].op == MODEL_MAXPOOL;
  while (i < m->layer_count && m->layers[i].op == MODEL_RELU) i++;
  return i;
}

/* Mismatches of got against want: |d| <= tol (1 + |want|); NaN where a number is wanted fails. */
static size_t compare(const char* what, const float* got, const float* want, size_t n, double tol) {
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]);
    int ok = d <= tol * (1 + fabs(want[i]));
    if (d > worst || isnan(d)) worst = d;
    if (!ok && bad++ < 5)
      fprintf(stderr, "  %s[%zu]: got %.9g, want %.9g\n", what, i, got[i], want[i]);
  }
  printf("  %-52s %zu values, max diff %.3g%s\n", what, n, worst, bad ? "  FAILED" : "");
  return bad;
}

static void run_model(const char* name, const model* m, const ttp_tta* tta, int images,
                      ttp_precision precision, test_rng* rng) {
  const int half = precision == TTP_PRECISION_FP16;
  const double tol1 = half ? 1e-3 : 1e-5, tol = half ? 1e-2 : 1e-5;
  printf("%s, %s, %d images, %d copies:\n", name, half ? "fp16" : "fp32", images, tta->copies);
  ttp_err e = {0};
  engine_config c = {.device = 0, .precision = precision};
  CHECK(aug_spec_from(tta, &c.spec, &c.merge, NULL, &e) == TTP_OK, "%s", e.message);
  char why[320];
  CHECK(fused_supports_model(m, &c, why, sizeof why), "%s: not the fused engine's shape: %s", name,
        why);
  const int copies = c.spec.copies, rows = images * copies, classes = m->classes;
  const int s1 = after_pool(m, 1), s2 = after_pool(m, 2);
  const size_t pixels = model_shape_size(m->input);
  const size_t n1 = model_shape_size(m->layers[s1 - 1].out);
  const size_t n2 = model_shape_size(m->layers[s2 - 1].out);
  const size_t record = aug_merge_record_size(classes);

  uint8_t* px = malloc((size_t)images * pixels);
  for (size_t i = 0; i < (size_t)images * pixels; i++) px[i] = (uint8_t)test_int(rng, 0, 255);
  size_t big = model_max_activation(m);
  float *a = malloc(big * sizeof(float)), *b = malloc(big * sizeof(float));
  float* copy = malloc(pixels * sizeof(float));
  double* acc = malloc(big * sizeof(double));
  float *want1 = malloc(rows * n1 * sizeof(float)), *got1 = malloc(rows * n1 * sizeof(float));
  float *want2 = malloc(rows * n2 * sizeof(float)), *got2 = malloc(rows * n2 * sizeof(float));
  float* probs = malloc((size_t)rows * classes * sizeof(float));
  float* want3 = malloc((size_t)images * classes * sizeof(float));
  ttp_result* want_r = malloc(images * sizeof(ttp_result));
  float* want_x = malloc((size_t)images * MERGE_EXTRAS * sizeof(float));
  unsigned char* got3 = malloc(images * record);
  CHECK(px && a && b && copy && acc && want1 && got1 && want2 && got2 && probs && want3 &&
            want_r && want_x && got3, "out of memory");

  /* The CPU, stage by stage, each stage from the one before. */
  for (int i = 0; i < images; i++) {
    uint64_t key = aug_image_key(px + i * pixels, pixels);
    for (int k = 0; k < copies; k++) {
      size_t row = (size_t)i * copies + k;
      aug_make_copy(&c.spec, key, k, px + i * pixels, m->input.c, m->input.h, m->input.w, copy);
      memcpy(want1 + row * n1, cpu_layers(m, 0, s1, copy, a, b, acc), n1 * sizeof(float));
      memcpy(want2 + row * n2, cpu_layers(m, s1, s2, want1 + row * n1, a, b, acc),
             n2 * sizeof(float));
      memcpy(probs + row * classes, cpu_layers(m, s2, m->layer_count, want2 + row * n2, a, b, acc),
             classes * sizeof(float));
    }
    aug_merge(c.merge, probs + (size_t)i * copies * classes, copies, classes,
              want3 + (size_t)i * classes, &want_r[i], want_x + (size_t)i * MERGE_EXTRAS,
              aug_spec_weights(&c.spec));
  }

  test_poison(got1, rows * n1);
  CHECK(fused_run_stage(m, &c, 1, images, 0, px, got1, &e) == TTP_OK, "%s", e.message);
  size_t bad = compare("stage 1: augment + conv1 + pool1", got1, want1, rows * n1, tol1);
  float* merged = malloc((size_t)images * classes * sizeof(float));
  ttp_result* got_r = malloc(images * sizeof(ttp_result));
  float* first2 = malloc(rows * n2 * sizeof(float));
  unsigned char* first3 = malloc(images * record);
  CHECK(merged && got_r && first2 && first3, "out of memory");
  /* fp32 twice: the batch-wide kernels and the others, each against the CPU and the two the same
     bits (the engine picks by batch size). fp16 has one set. */
  const int wides[2] = {-1, 1}, runs = half ? 1 : 2;
  for (int run = 0; run < runs; run++) {
    const int wide = half ? 0 : wides[run];
    if (!half) printf("  %s kernels:\n", wide > 0 ? "batch-wide" : "per-position");
    test_poison(got2, rows * n2);
    CHECK(fused_run_stage(m, &c, 2, images, wide, want1, got2, &e) == TTP_OK, "%s", e.message);
    bad += compare("stage 2: conv2 + pool2", got2, want2, rows * n2, tol);
    memset(got3, 0xff, images * record);
    CHECK(fused_run_stage(m, &c, 3, images, wide, want2, got3, &e) == TTP_OK, "%s", e.message);
    size_t wrong_class = 0;
    double worst_fields = 0;
    for (int i = 0; i < images; i++) {
      memcpy(&got_r[i], got3 + i * record, sizeof(ttp_result));
      memcpy(merged + (size_t)i * classes, got3 + i * record + sizeof(ttp_result),
             classes * sizeof(float));
      double dp = fabs((double)got_r[i].probability - want_r[i].probability);
      double ds = fabs((double)got_r[i].spread - want_r[i].spread);
      if (!(dp <= worst_fields)) worst_fields = dp; /* NaN makes it NaN */
      if (!(ds <= worst_fields)) worst_fields = ds;
      /* The class may differ only where the CPU's top two are within the tolerance. */
      const float* w = want3 + (size_t)i * classes;
      int second = want_r[i].class_index == 0 ? 1 : 0;
      for (int k = 0; k < classes; k++)
        if (k != want_r[i].class_index && w[k] > w[second]) second = k;
      if (got_r[i].class_index != want_r[i].class_index &&
          w[want_r[i].class_index] - w[second] > tol && wrong_class++ < 3)
        fprintf(stderr, "  image %d: class %d, the CPU's %d\n", i, got_r[i].class_index,
                want_r[i].class_index);
    }
    bad += compare("stage 3: fc1 .. softmax + merge (merged vector)", merged, want3,
                   (size_t)images * classes, tol);
    /* The extras: the mutual information within what the probabilities' tolerance moves an
       entropy (sum over classes of tol x (|ln p| + 1), p >= tol: classes x tol x (ln(1/tol) +
       1)); the agreement the same wherever no copy of the CPU has its top two within tol. */
    size_t extras_off = 0;
    double worst_mi = 0;
    for (int i = 0; i < images; i++) {
      float x[MERGE_EXTRAS];
      memcpy(x, got3 + i * record + sizeof(ttp_result) + classes * sizeof(float), sizeof x);
      const float* w = want_x + (size_t)i * MERGE_EXTRAS;
      const double dmi = fabs((double)x[MERGE_EXTRA_MUTUAL] - w[MERGE_EXTRA_MUTUAL]);
      if (!(dmi <= worst_mi)) worst_mi = dmi;
      int close = 0;
      for (int k = 0; k < copies; k++) {
        const float* q = probs + ((size_t)i * copies + k) * classes;
        const int top = merge_argmax(q, classes);
        for (int j = 0; j < classes; j++) close |= j != top && q[top] - q[j] <= tol;
      }
      extras_off += !close && x[MERGE_EXTRA_AGREEMENT] != w[MERGE_EXTRA_AGREEMENT];
    }
    const double mi_tol = classes * tol * (log(1 / tol) + 1);
    printf("  %-52s max diff %.3g (tolerance %.3g); %zu agreements differ\n",
           "stage 3: mutual information, agreement", worst_mi, mi_tol, extras_off);
    bad += extras_off + !(worst_mi <= mi_tol);
    printf("  %-52s max diff %.3g; %zu classes differ\n", "stage 3: probability and spread",
           worst_fields, wrong_class);
    bad += wrong_class + !(worst_fields <= tol);
    if (run == 0) {
      memcpy(first2, got2, rows * n2 * sizeof(float));
      memcpy(first3, got3, images * record);
    } else {
      const int same2 = memcmp(first2, got2, rows * n2 * sizeof(float)) == 0;
      const int same3 = memcmp(first3, got3, images * record) == 0;
      printf("  %-52s %s, %s\n", "the two sets' bits (stage 2, stage 3)",
             same2 ? "same" : "DIFFER", same3 ? "same" : "DIFFER");
      bad += !same2 + !same3;
    }
  }
  CHECK(bad == 0, "%s: the fused stages disagree with the CPU", name);

  free(px), free(a), free(b), free(copy), free(acc), free(want1), free(got1), free(want2);
  free(got2), free(probs), free(want3), free(want_r), free(want_x), free(got3), free(merged), free(got_r);
  free(first2), free(first3);
}

/* The small batches' one launch (fused_small) against the stages' launches, the whole pass from
   random images: the same bits, for batches of 1, 8, 13, 20, 37 and FUSED_SMALL_MAX images (at
   5 copies on 132 SMs, fp16: stage 2 one copy an item of 1, 4, 4 and 8 n tiles (1, 4, 4, 4 a
   warp), then two and three copies an item; fc1 staged, one row tile an item, then two). */
static void run_small(const char* name, const model* m, const ttp_tta* tta,
                      ttp_precision precision, test_rng* rng) {
  ttp_err e = {0};
  engine_config c = {.device = 0, .precision = precision};
  CHECK(aug_spec_from(tta, &c.spec, &c.merge, NULL, &e) == TTP_OK, "%s", e.message);
  const size_t pixels = model_shape_size(m->input), record = aug_merge_record_size(m->classes);
  const int counts[] = {1, 8, 13, 20, 37, FUSED_SMALL_MAX};
  size_t bad = 0;
  for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
    const int images = counts[k];
    uint8_t* px = malloc((size_t)images * pixels);
    unsigned char *staged = malloc(images * record), *small = malloc(images * record);
    CHECK(px && staged && small, "out of memory");
    for (size_t i = 0; i < (size_t)images * pixels; i++) px[i] = (uint8_t)test_int(rng, 0, 255);
    memset(staged, 0xff, images * record);
    memset(small, 0xff, images * record);
    CHECK(fused_run_pass(m, &c, images, 0, px, staged, NULL, NULL, &e) == TTP_OK, "%s", e.message);
    CHECK(fused_run_pass(m, &c, images, 1, px, small, NULL, NULL, &e) == TTP_OK, "%s", e.message);
    int differ = -1;
    for (int i = 0; i < images && differ < 0; i++)
      if (memcmp(staged + i * record, small + i * record, record)) differ = i;
    printf("  %s, %s, %2d images: one launch vs the stages' launches: %s", name,
           precision == TTP_PRECISION_FP16 ? "fp16" : "fp32", images,
           differ < 0 ? "same bits\n" : "DIFFER");
    if (differ >= 0) {
      ttp_result a, b;
      memcpy(&a, staged + differ * record, sizeof a);
      memcpy(&b, small + differ * record, sizeof b);
      printf(" from image %d (class %d p %.9g, one launch class %d p %.9g)\n", differ,
             a.class_index, a.probability, b.class_index, b.probability);
      bad++;
    }
    free(px), free(staged), free(small);
  }
  CHECK(bad == 0, "%s: the small batches' kernel differs from the stages", name);
}

/* A layer of m with random weights of size 1/sqrt(fan-in). */
static model_layer* add(model* m, model_op op, const char* name) {
  ttp_err e = {0};
  model_layer* l = model_add(m, op, name, &e);
  CHECK(l, "%s", e.message);
  return l;
}

static model* odd_model(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){1, 20, 23}, &e);
  CHECK(m, "%s", e.message);
  model_layer* l = add(m, MODEL_CONV, "conv1");
  l->p.conv.k = 7, l->p.conv.w = model_window_of(5, 5, 1, 2);
  add(m, MODEL_RELU, "relu1");
  l = add(m, MODEL_MAXPOOL, "pool1");
  l->p.pool.w = model_window_of(2, 2, 2, 0);
  l = add(m, MODEL_CONV, "conv2");
  l->p.conv.k = 9, l->p.conv.w = model_window_of(5, 5, 1, 1);
  l = add(m, MODEL_MAXPOOL, "pool2");
  l->p.pool.w = model_window_of(2, 2, 2, 0);
  add(m, MODEL_RELU, "relu2");
  add(m, MODEL_FC, "fc1")->p.fc.out = 37;
  add(m, MODEL_RELU, "relu3");
  add(m, MODEL_FC, "fc2")->p.fc.out = 13;
  add(m, MODEL_SOFTMAX, "softmax");
  CHECK(model_infer_shapes(m, &e) == TTP_OK, "%s", e.message);
  for (int i = 0; i < m->layer_count; i++) {
    l = &m->layers[i];
    if (!l->weight_count) continue;
    double bound = 1 / sqrt((double)l->weight_count / l->bias_count);
    l->weights = malloc(l->weight_count * sizeof(float));
    l->bias = malloc(l->bias_count * sizeof(float));
    CHECK(l->weights && l->bias, "out of memory");
    test_fill_uniform(rng, l->weights, l->weight_count, -bound, bound);
    test_fill_uniform(rng, l->bias, l->bias_count, -0.5, 0.5);
  }
  CHECK(model_check(m, &e) == TTP_OK, "%s", e.message);
  return m;
}

int main(int argc, char** argv) {
  CHECK(argc == 2, "usage: %s SHARED_DATASETS_DIR", argv[0]);
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  test_rng rng = {20261123};
  ttp_err e = {0};
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/mnistcudnn", argv[1]);
  struct stat st;
  char* made = NULL;
  if (stat(dir, &st) != 0) {
    made = strdup(test_make_dir());
    fixture_model_dir(made, 5);
    snprintf(dir, sizeof dir, "%s", made);
  }
  model* lenet = NULL;
  CHECK(io_load_mnistcudnn(dir, &lenet, &e) == TTP_OK, "%s", e.message);
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  for (int half = 0; half < 2; half++) {
    const ttp_precision precision = half ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32;
    run_model(made ? "a generated LeNet" : "NVIDIA's mnistCUDNN LeNet", lenet, &tta, 37, precision,
              &rng);
    run_small("LeNet", lenet, &tta, precision, &rng);
  }
  model_free(lenet);

  model* odd = odd_model(&rng);
  ttp_tta_init(&tta);
  tta.copies = 3;
  tta.noise_kind = TTP_NOISE_GAUSSIAN;
  tta.flip_h = 0.5f, tta.rotate = 15, tta.scale_min = 0.9f, tta.scale_max = 1.1f;
  tta.translate = 0.5f, tta.edge = TTP_EDGE_REFLECT; /* the geometric views in stage 1 */
  tta.weights[0] = 2.0f, tta.weights[1] = 0.5f, tta.weights[2] = 1.0f; /* a weighted merge */
  for (int half = 0; half < 2; half++) {
    const ttp_precision precision = half ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32;
    run_model("an odd-sized model", odd, &tta, 29, precision, &rng);
    run_small("odd-sized", odd, &tta, precision, &rng);
  }
  model_free(odd);
  if (made) {
    test_remove_tree(made);
    free(made);
  }
  printf("fused stages: each agrees with the CPU's layers\n");
  return 0;
}
