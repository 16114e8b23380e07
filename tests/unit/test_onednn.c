/* The onednn engine against the reference (the cpu engine), whole networks:
   - NVIDIA's mnistCUDNN LeNet on the MNIST test images (the first 5,000 in the optimised build,
     the first 300 in the sanitized one) with `--tta 5`: every merged probability within 1e-5 of the
     reference's, and the same class wherever the reference's top two differ by more than that;
     the uncertainty measures (ttp_classify_uncertainty) close and the copies' agreement equal;
   - the shipped models and tests/onnx's PyTorch exports (average pooling, batch norm folded into
     convolutions, sigmoid, leaky ReLU, three channels, strides) on 37 drawings and random images,
     with 7 copies and the max and geometric-mean merges: the same bounds;
   - an image's result is the same bits alone, in a batch at any position, with 1, 2 or 3
     threads, and with one copy (where the engine plans 2 rows for one image).
   Every output is poisoned (NaN) before each run.
   Usage: test_onednn SHARED_DATASETS_DIR MODELS_DIR ONNX_DIR; exits 77 in a build without the
   onednn engine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

static const double TOLERANCE = 1e-5;

static ttp_pipeline* open_engine(const char* model, ttp_engine engine, int threads,
                                 const ttp_tta* tta) {
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = model;
  o.engine = engine;
  o.threads = threads;
  o.tta = tta;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s: %s", model, ttp_last_error(p));
  return p;
}

/* ttp_classify, or (u not NULL) ttp_classify_uncertainty, into poisoned outputs. */
static void classify_u(ttp_pipeline* p, const uint8_t* images, size_t count, ttp_result* results,
                       float* probs, ttp_uncertainty* u) {
  const int classes = ttp_model(p)->classes;
  test_poison(probs, count * (size_t)classes);
  for (size_t i = 0; i < count; i++) results[i] = (ttp_result){-7, NAN, NAN};
  if (u) test_poison((float*)u, count * sizeof *u / sizeof(float));
  CHECK((u ? ttp_classify_uncertainty(p, images, count, results, probs, u)
           : ttp_classify(p, images, count, results, probs)) == TTP_OK,
        "%s", ttp_last_error(p));
}

static void classify(ttp_pipeline* p, const uint8_t* images, size_t count, ttp_result* results,
                     float* probs) {
  classify_u(p, images, count, results, probs, NULL);
}

/* The onednn engine's results against the reference's on the same images and policy: returns
   the largest difference of a probability; fails beyond TOLERANCE or on a class that differs
   where the reference's top two are further apart than TOLERANCE. */
static double against_reference(const char* what, const char* model, const ttp_tta* tta,
                                const uint8_t* images, size_t count) {
  ttp_pipeline* ref = open_engine(model, TTP_ENGINE_CPU, 0, tta);
  ttp_pipeline* fast = open_engine(model, TTP_ENGINE_ONEDNN, 0, tta);
  CHECK(strncmp(ttp_engine_description(fast), "onednn", 6) == 0, "%s",
        ttp_engine_description(fast));
  const int classes = ttp_model(ref)->classes;
  float* want = malloc(count * (size_t)classes * sizeof *want);
  float* got = malloc(count * (size_t)classes * sizeof *got);
  ttp_result* rw = malloc(count * sizeof *rw);
  ttp_result* rg = malloc(count * sizeof *rg);
  ttp_uncertainty* uw = malloc(count * sizeof *uw);
  ttp_uncertainty* ug = malloc(count * sizeof *ug);
  CHECK(want && got && rw && rg && uw && ug, "out of memory");
  classify_u(ref, images, count, rw, want, uw);
  classify_u(fast, images, count, rg, got, ug);
  double worst = 0, worst_u = 0;
  size_t differ = 0, close = 0;
  for (size_t i = 0; i < count; i++) {
    const float* w = want + i * classes;
    const float* g = got + i * classes;
    float first = -1, second = -1;
    for (int k = 0; k < classes; k++) {
      CHECK(!isnan(g[k]), "%s: image %zu class %d not written", what, i, k);
      double d = fabs((double)g[k] - w[k]);
      if (d > worst) worst = d;
      CHECK(d <= TOLERANCE, "%s: image %zu class %d: %.9g, the reference %.9g", what, i, k, g[k],
            w[k]);
      if (w[k] > first) second = first, first = w[k];
      else if (w[k] > second) second = w[k];
    }
    if (rg[i].class_index != rw[i].class_index) {
      differ++;
      CHECK(first - second <= TOLERANCE, "%s: image %zu: class %d, the reference %d (%.9g vs "
            "%.9g)", what, i, rg[i].class_index, rw[i].class_index, first, second);
    }
    close += first - second <= TOLERANCE;
    CHECK(fabs((double)rg[i].spread - rw[i].spread) <= 2 * TOLERANCE, "%s: image %zu: spread "
          "%.9g, the reference %.9g", what, i, rg[i].spread, rw[i].spread);
    /* The uncertainty: entropies of vectors within TOLERANCE (a term's slope is ln p, at most
       ~40 in float); the copies' classes the same */
    double du = fmax(fabs((double)ug[i].entropy - uw[i].entropy),
                     fabs((double)ug[i].mutual_information - uw[i].mutual_information));
    if (du > worst_u) worst_u = du;
    CHECK(du <= 40 * TOLERANCE && ug[i].agreement == uw[i].agreement, "%s: image %zu: entropy "
          "%.9g, MI %.9g, agreement %g; the reference %.9g, %.9g, %g", what, i, ug[i].entropy,
          ug[i].mutual_information, ug[i].agreement, uw[i].entropy, uw[i].mutual_information,
          uw[i].agreement);
  }
  printf("%-44s %6zu images, %d copies: max |dp| %.3g; classes differ %zu (of %zu within "
         "%.0e); entropy and MI within %.3g\n", what, count, tta ? tta->copies : 1, worst, differ,
         close, TOLERANCE, worst_u);
  free(want), free(got), free(rw), free(rg), free(uw), free(ug);
  ttp_close(ref);
  ttp_close(fast);
  return worst;
}

/* 37 images for a model: drawings of both grounds and, every fifth, random bytes. */
static uint8_t* some_images(const char* model, size_t count, uint64_t seed) {
  ttp_pipeline* p = open_engine(model, TTP_ENGINE_CPU, 1, NULL);
  const ttp_model_info* m = ttp_model(p);
  const size_t size = (size_t)m->input_channels * m->input_rows * m->input_cols;
  uint8_t* images = malloc(count * size);
  uint8_t* hwc = malloc(size);
  CHECK(images && hwc, "out of memory");
  test_rng rng = {seed};
  for (size_t i = 0; i < count; i++) {
    uint8_t* image = images + i * size;
    if (i % 5 == 4) {
      for (size_t k = 0; k < size; k++) image[k] = (uint8_t)test_int(&rng, 0, 255);
      continue;
    }
    /* fixture_drawing writes interleaved channels; the pipeline takes planes */
    fixture_drawing(hwc, m->input_cols, m->input_rows, m->input_channels, (int)(i % 2), seed + i);
    size_t plane = (size_t)m->input_rows * m->input_cols;
    for (size_t k = 0; k < plane; k++)
      for (int c = 0; c < m->input_channels; c++)
        image[c * plane + k] = hwc[k * m->input_channels + c];
  }
  free(hwc);
  ttp_close(p);
  return images;
}

/* Same bits for an image whatever the batch, its position, the threads and the calls. */
static void same_bits(const char* model) {
  const size_t count = 37;
  uint8_t* images = some_images(model, count, 77);
  ttp_tta tta;
  ttp_tta_init(&tta);
  for (int copies = 1; copies <= 5; copies += 4) {
    tta.copies = copies;
    ttp_pipeline* one = open_engine(model, TTP_ENGINE_ONEDNN, 1, &tta);
    const ttp_model_info* m = ttp_model(one);
    const size_t classes = (size_t)m->classes;
    const size_t size = (size_t)m->input_channels * m->input_rows * m->input_cols;
    float* batch = malloc(count * classes * sizeof *batch);
    float* other = malloc(count * classes * sizeof *other);
    ttp_result* rb = malloc(count * sizeof *rb);
    ttp_result* ro = malloc(count * sizeof *ro);
    CHECK(batch && other && rb && ro, "out of memory");
    classify(one, images, count, rb, batch);
    /* each image alone, on the same pipeline */
    for (size_t i = 0; i < count; i++)
      classify(one, images + i * size, 1, ro + i, other + i * classes);
    CHECK(memcmp(batch, other, count * classes * sizeof *batch) == 0 &&
              memcmp(rb, ro, count * sizeof *rb) == 0,
          "%s, %d copies: one image at a time differs from the batch", model, copies);
    /* 2 and 3 threads, the batch in two calls split at an odd place (positions shift) */
    for (int threads = 2; threads <= 3; threads++) {
      ttp_pipeline* p = open_engine(model, TTP_ENGINE_ONEDNN, threads, &tta);
      classify(p, images + 11 * size, count - 11, ro + 11, other + 11 * classes);
      classify(p, images, 11, ro, other);
      CHECK(memcmp(batch, other, count * classes * sizeof *batch) == 0 &&
                memcmp(rb, ro, count * sizeof *rb) == 0,
            "%s, %d copies: %d threads differ from 1", model, copies, threads);
      ttp_close(p);
    }
    printf("%-44s %zu images, %d cop%s: the same bits alone, in batches, on 1-3 threads\n",
           model, count, copies, copies == 1 ? "y" : "ies");
    free(batch), free(other), free(rb), free(ro);
    ttp_close(one);
  }
  free(images);
}

int main(int argc, char** argv) {
  CHECK(argc == 4, "usage: test_onednn SHARED_DATASETS_DIR MODELS_DIR ONNX_DIR");
  if (!strstr(ttp_build_string(), "oneDNN")) {
    printf("skipped: this build has no onednn engine\n");
    return TEST_SKIP;
  }
  const char* shared = argv[1];
  const char* models = argv[2];
  const char* onnx = argv[3];
  char nvidia[4096], mnist[4096], path[4096];
  snprintf(nvidia, sizeof nvidia, "%s/mnistcudnn", shared);
  snprintf(mnist, sizeof mnist, "%s/mnist/t10k-images-idx3-ubyte.gz", shared);

  /* The acceptance run: --tta 5's policy on the MNIST test images. */
  struct stat st;
  if (stat(nvidia, &st) == 0 && stat(mnist, &st) == 0) {
    ttp_images im;
    char error[512];
    CHECK(ttp_read_idx_images(mnist, &im, error, sizeof error) == TTP_OK, "%s", error);
    /* 5,000: the whole set through the reference takes most of a test's time budget on a
       2-core machine (tests/README.md) */
    size_t count = TEST_SIZE(im.count < 5000 ? im.count : 5000, 300);
    ttp_tta tta;
    ttp_tta_init(&tta);
    tta.copies = 5;
    against_reference("mnistCUDNN LeNet, MNIST test images", nvidia, &tta, im.pixels, count);
    ttp_free(im.pixels);
  } else {
    printf("mnistCUDNN or MNIST absent under %s: its run skipped\n", shared);
  }

  /* Every other model the project ships or tests, other policies. */
  const char* others[] = {"lenet-mnist", "lenet-fashion", "lenet-bn-avg.onnx", "mlp-sigmoid.onnx",
                          "rgb-stride.onnx"};
  for (size_t k = 0; k < sizeof others / sizeof *others; k++) {
    snprintf(path, sizeof path, "%s/%s", strstr(others[k], ".onnx") ? onnx : models, others[k]);
    uint8_t* images = some_images(path, 37, 1000 + k);
    ttp_tta tta;
    ttp_tta_init(&tta);
    tta.copies = 7;
    tta.shift = 3;
    tta.noise = 0.08f;
    tta.noise_kind = k % 2 ? TTP_NOISE_GAUSSIAN : TTP_NOISE_UNIFORM;
    tta.merge = k % 2 ? TTP_MERGE_GMEAN : TTP_MERGE_MAX;
    tta.seed = 5 + k;
    char what[128];
    snprintf(what, sizeof what, "%s, %s merge", others[k], k % 2 ? "gmean" : "max");
    against_reference(what, path, &tta, images, 37);
    free(images);
  }

  snprintf(path, sizeof path, "%s/lenet-mnist", models);
  same_bits(path);
  snprintf(path, sizeof path, "%s/rgb-stride.onnx", onnx);
  same_bits(path);
  printf("onednn: within %.0e of the reference everywhere\n", TOLERANCE);
  return 0;
}
