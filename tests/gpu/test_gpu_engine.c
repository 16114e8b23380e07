/* A GPU engine (cudnn or fused) against the CPU reference, with test-time augmentation (N = 5):
     - merged probabilities within 1e-4 (fp32) and 1e-2 (fp16) of the CPU engine's, and the same
       class wherever the CPU's top-two margin exceeds that tolerance;
     - graph replay and eager launches give the same bits, and graphs captured on each (slot,
       bucket)'s first batch (lazy_graphs) the same as those captured at open;
     - the results do not change with the batch size, the bucket, the number of slots or the way
       calls wait (the same bits whether an image goes through in a batch of 1024, of 37 or
       alone);
     - every merge mode agrees with the CPU's;
     - pipelines of two different models opened in turn each run their own weights.
   On NVIDIA's model and the 10,000 MNIST test images when SHARED_DATASETS_DIR has them, else on a
   generated model and 3001 random images. fp32 and fp16 for both engines, and auto in fp16
   takes the fused engine. Usage: test_gpu_engine SHARED_DATASETS_DIR
   cudnn|fused. Skipped (77) without a GPU. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

typedef struct run_spec {
  ttp_engine engine;
  ttp_precision precision;
  int max_batch, slots, no_graph;
  ttp_merge merge;
  ttp_wait wait;
  int lazy; /* lazy_graphs: each (slot, bucket)'s graph captured on its first batch */
  int weighted; /* the copies weighted 3, 1, 0.5, 0, 2 in the merge */
} run_spec;

static const float copy_weights[5] = {3.0f, 1.0f, 0.5f, 0.0f, 2.0f};

typedef struct outputs {
  ttp_result* results;
  float* probs;
} outputs;

static const char* model_dir;
static const uint8_t* images;
static size_t count;
static int classes;

/* Classifies images [0, n) with the spec, in calls of `per_call` images (0: one call). */
static outputs classify(run_spec r, size_t n, size_t per_call) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  tta.merge = r.merge;
  for (int c = 0; c < 5 && r.weighted; c++) tta.weights[c] = copy_weights[c];
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = model_dir;
  o.engine = r.engine;
  o.precision = r.precision;
  o.max_batch = r.max_batch;
  o.slots = r.slots;
  o.no_graph = r.no_graph;
  o.wait = r.wait;
  o.lazy_graphs = r.lazy;
  o.tta = &tta;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  /* The opening's parts: a GPU engine's CUDA start, buffers and graphs (when on) took time, and
     they fit inside the engine's opening; the CPU engine's opening has none of them. */
  ttp_startup t = {.struct_size = sizeof t};
  CHECK(ttp_get_startup(p, &t) == TTP_OK, "ttp_get_startup");
  const int on_gpu = r.engine != TTP_ENGINE_CPU;
  CHECK(t.model_s > 0 && (on_gpu ? t.cuda_s > 0 && t.buffers_s > 0 && (r.no_graph || t.graphs_s > 0)
                                 : t.cuda_s == 0 && t.buffers_s == 0 && t.graphs_s == 0) &&
            t.plan_s > 0 &&
            t.cuda_s + t.buffers_s + t.graphs_s + t.plan_s <= t.engine_s * 1.000001 + 1e-9,
        "startup (%s): model %g, engine %g = cuda %g + plan %g + buffers %g + graphs %g s",
        on_gpu ? "GPU" : "CPU", t.model_s, t.engine_s, t.cuda_s, t.plan_s, t.buffers_s,
        t.graphs_s);
  outputs out = {malloc(n * sizeof(ttp_result)), malloc(n * classes * sizeof(float))};
  memset(out.results, 0xff, n * sizeof(ttp_result));
  test_poison(out.probs, n * classes);
  if (!per_call) per_call = n;
  for (size_t first = 0; first < n; first += per_call) {
    size_t k = n - first < per_call ? n - first : per_call;
    CHECK(ttp_classify(p, images + first * 784, k, out.results + first, out.probs + first * classes) ==
              TTP_OK, "%s", ttp_last_error(p));
  }
  printf("  ran: %s\n", ttp_engine_description(p));
  ttp_close(p);
  return out;
}

static void release(outputs o) {
  free(o.results);
  free(o.probs);
}

/* Same bits, results and probabilities. */
static void expect_identical(const char* what, outputs a, outputs b, size_t n) {
  size_t differ = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a.results[i], &b.results[i], sizeof(ttp_result)) ||
        memcmp(a.probs + i * classes, b.probs + i * classes, classes * sizeof(float)))
      if (differ++ < 3)
        fprintf(stderr, "  %s: image %zu: class %d p %.9g vs class %d p %.9g\n", what, i,
                a.results[i].class_index, a.results[i].probability, b.results[i].class_index,
                b.results[i].probability);
  printf("%-58s %zu of %zu images differ in any bit\n", what, differ, n);
  CHECK(differ == 0, "%s: results differ", what);
}

/* Within tol of the CPU; same class wherever the CPU's top-two margin exceeds tol. */
static void expect_close(const char* what, outputs gpu, outputs cpu, size_t n, double tol) {
  double worst = 0;
  size_t out_of_tol = 0, wrong_class = 0, close_calls = 0;
  for (size_t i = 0; i < n; i++) {
    const float* g = gpu.probs + i * classes;
    const float* c = cpu.probs + i * classes;
    double first = -1, second = -1;
    for (int k = 0; k < classes; k++) {
      double d = fabs((double)g[k] - c[k]);
      if (!(d <= worst)) worst = d; /* NaN makes worst NaN */
      if (!(d <= tol) && out_of_tol++ < 3)
        fprintf(stderr, "  %s: image %zu class %d: gpu %.9g cpu %.9g\n", what, i, k, g[k], c[k]);
      if (c[k] > first) second = first, first = c[k];
      else if (c[k] > second) second = c[k];
    }
    if (first - second > tol) {
      if (gpu.results[i].class_index != cpu.results[i].class_index && wrong_class++ < 3)
        fprintf(stderr, "  %s: image %zu: gpu class %d, cpu class %d (margin %.3g)\n", what, i,
                gpu.results[i].class_index, cpu.results[i].class_index, first - second);
    } else {
      close_calls++;
    }
  }
  printf("%-58s max |gpu - cpu| %.3g (tolerance %.0e); %zu over; %zu classes differ; %zu images "
         "within the margin\n", what, worst, tol, out_of_tol, wrong_class, close_calls);
  CHECK(out_of_tol == 0 && wrong_class == 0 && !isnan(worst), "%s: GPU and CPU disagree", what);
}

/* Two generated models in turn, fp16 and fp32, 16 pipelines: a pipeline opened after another
   closed must run its own weights. The first of each (model, precision) against the CPU; every
   later one the same bits as that first (within fp16's tolerance of the CPU, these random
   models' near-uniform probabilities would hardly tell one model's weights from the other's).
   (The fused engine's fp16 packing once read its weights' buffer before their copy had landed; a
   buffer that still held the last pipeline's weights, the same model's everywhere else in this
   test, hid it.) */
static void alternating_models(ttp_engine engine) {
  const char* keep = model_dir;
  char* dirs[2];
  outputs want[2];
  for (int k = 0; k < 2; k++) {
    dirs[k] = strdup(test_make_dir());
    CHECK(dirs[k], "out of memory");
    fixture_model_dir(dirs[k], 100 + (uint64_t)k);
    model_dir = dirs[k];
    run_spec cpu = {TTP_ENGINE_CPU, TTP_PRECISION_FP32, 1024, 3, 0,
                    TTP_MERGE_MEAN, TTP_WAIT_AUTO, 0, 0};
    want[k] = classify(cpu, 64, 0);
  }
  outputs first[4];
  for (int round = 0; round < 16; round++) {
    model_dir = dirs[round % 2];
    const ttp_precision precision = round / 2 % 2 ? TTP_PRECISION_FP32 : TTP_PRECISION_FP16;
    run_spec r = {engine, precision, 1024, 3, 0, TTP_MERGE_MEAN, TTP_WAIT_AUTO, 0, 0};
    outputs got = classify(r, 64, 0);
    char what[96];
    snprintf(what, sizeof what, "models in turn, round %d (model %c, %s), vs %s", round,
             'A' + round % 2, precision == TTP_PRECISION_FP16 ? "fp16" : "fp32",
             round < 4 ? "the CPU" : "its first round");
    if (round < 4) {
      expect_close(what, got, want[round % 2], 64, precision == TTP_PRECISION_FP16 ? 1e-2 : 1e-4);
      first[round] = got;
    } else {
      expect_identical(what, got, first[round % 4], 64);
      release(got);
    }
  }
  for (int k = 0; k < 4; k++) release(first[k]);
  for (int k = 0; k < 2; k++) {
    release(want[k]);
    test_remove_tree(dirs[k]);
    free(dirs[k]);
  }
  model_dir = keep;
}

int main(int argc, char** argv) {
  CHECK(argc == 3 && (!strcmp(argv[2], "cudnn") || !strcmp(argv[2], "fused")),
        "usage: %s SHARED_DATASETS_DIR cudnn|fused", argv[0]);
  const ttp_engine engine = strcmp(argv[2], "fused") ? TTP_ENGINE_CUDNN : TTP_ENGINE_FUSED;
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  char dir[4096], path[4200], error[TTP_ERROR_SIZE];
  ttp_images mnist = {0};
  snprintf(path, sizeof path, "%s/mnist/t10k-images-idx3-ubyte.gz", argv[1]);
  snprintf(dir, sizeof dir, "%s/mnistcudnn", argv[1]);
  struct stat st;
  char* made = NULL;
  if (stat(dir, &st) == 0 && ttp_read_idx_images(path, &mnist, error, sizeof error) == TTP_OK) {
    model_dir = dir;
    images = mnist.pixels;
    count = mnist.count;
    printf("NVIDIA's model on the %zu MNIST test images\n", count);
  } else {
    made = strdup(test_make_dir());
    fixture_model_dir(made, 5);
    model_dir = made;
    count = 3001;
    uint8_t* px = malloc(count * 784);
    test_rng rng = {4242};
    for (size_t i = 0; i < count * 784; i++) px[i] = (uint8_t)test_int(&rng, 0, 255);
    images = px;
    printf("a generated model on %zu random images\n", count);
  }
  classes = 10;

  run_spec cpu = {TTP_ENGINE_CPU, TTP_PRECISION_FP32, 1024, 3, 0, TTP_MERGE_MEAN, TTP_WAIT_AUTO, 0, 0};
  run_spec fp32 = {engine, TTP_PRECISION_FP32, 1024, 3, 0, TTP_MERGE_MEAN, TTP_WAIT_AUTO, 0, 0};
  run_spec fp16 = fp32;
  fp16.precision = TTP_PRECISION_FP16;
  outputs ref = classify(cpu, count, 0);

  for (int half = 0; half < 2; half++) {
    run_spec base = half ? fp16 : fp32;
    const char* name = half ? "fp16" : "fp32";
    char what[96];
    outputs graph = classify(base, count, 0);
    snprintf(what, sizeof what, "%s, graphs, batch 1024, 3 slots, vs the CPU", name);
    expect_close(what, graph, ref, count, half ? 1e-2 : 1e-4);

    run_spec eager = base;
    eager.no_graph = 1;
    outputs e = classify(eager, count, 0);
    snprintf(what, sizeof what, "%s, eager vs graphs", name);
    expect_identical(what, e, graph, count);
    release(e);

    run_spec small = base;
    small.max_batch = 37, small.slots = 2;
    outputs s = classify(small, count, 0);
    snprintf(what, sizeof what, "%s, batch 37 (buckets 1/8/37), 2 slots, vs batch 1024", name);
    expect_identical(what, s, graph, count);
    release(s);

    run_spec ring = base;
    ring.max_batch = 64, ring.slots = 7;
    outputs one = classify(ring, 200, 1); /* 200 calls of one image: bucket 1 */
    snprintf(what, sizeof what, "%s, one image per call, 7 slots, vs batch 1024", name);
    expect_identical(what, one, graph, 200);
    release(one);
    outputs odd = classify(ring, 1000, 333); /* calls of 333: batches of 64 and a partial 13 */
    snprintf(what, sizeof what, "%s, calls of 333 in batches of 64, vs batch 1024", name);
    expect_identical(what, odd, graph, 1000);
    release(odd);
    run_spec lazy = ring; /* each (slot, bucket) captured on its first batch, mid-run */
    lazy.lazy = 1;
    outputs late = classify(lazy, 1000, 333);
    snprintf(what, sizeof what, "%s, graphs captured on first use, calls of 333, vs batch 1024",
             name);
    expect_identical(what, late, graph, 1000);
    release(late);
    /* Every way of waiting: one image per call (the latency path; spin with eager launches, so
       that a poll's "not ready" left behind would fail the next launch's check) and calls of
       1500 images (batches of 1024 and 476 through the copy streams). */
    static const ttp_wait waits[3] = {TTP_WAIT_SPIN, TTP_WAIT_YIELD, TTP_WAIT_BLOCK};
    static const char* const wait_names[3] = {"spin", "yield", "block"};
    for (int w = 0; w < 3; w++) {
      run_spec ws = ring;
      ws.wait = waits[w], ws.no_graph = w == 0;
      outputs single = classify(ws, 100, 1);
      snprintf(what, sizeof what, "%s, wait %s, one image per call, vs batch 1024", name,
               wait_names[w]);
      expect_identical(what, single, graph, 100);
      release(single);
      run_spec wb = base;
      wb.wait = waits[w];
      outputs whole = classify(wb, 1500, 1500);
      snprintf(what, sizeof what, "%s, wait %s, calls of 1500, vs batch 1024", name,
               wait_names[w]);
      expect_identical(what, whole, graph, 1500);
      release(whole);
    }
    release(graph);
  }

  /* The other merge modes, on the first 2000 images. */
  static const ttp_merge modes[] = {TTP_MERGE_VOTE, TTP_MERGE_MAX, TTP_MERGE_GMEAN};
  static const char* const mode_names[] = {"vote", "max", "gmean"};
  size_t n = count < 2000 ? count : 2000;
  for (int m = 0; m < 3; m++) {
    run_spec c = cpu, g = fp32;
    c.merge = g.merge = modes[m];
    outputs a = classify(c, n, 0), b = classify(g, n, 0);
    char what[96];
    snprintf(what, sizeof what, "fp32, merge %s, vs the CPU", mode_names[m]);
    expect_close(what, b, a, n, 1e-4);
    release(a);
    release(b);
  }
  /* Weighted copies (one of weight 0): the engine's merge against the CPU's, in every mode, on
     the first 500 images (the CPU engine's time: the test's budget). */
  const size_t nw = n < 500 ? n : 500;
  for (int m = -1; m < 3; m++) {
    run_spec c = cpu, g = fp32;
    c.weighted = g.weighted = 1;
    c.merge = g.merge = m < 0 ? TTP_MERGE_MEAN : modes[m];
    outputs a = classify(c, nw, 0), b = classify(g, nw, 0);
    char what[96];
    snprintf(what, sizeof what, "fp32, weighted, merge %s, vs the CPU",
             m < 0 ? "mean" : mode_names[m]);
    expect_close(what, b, a, nw, 1e-4);
    if (m < 0) { /* the weights reach the merge: most images' vectors move */
      outputs u = classify(cpu, nw, 0);
      size_t differ = 0;
      for (size_t i = 0; i < nw; i++)
        differ += memcmp(a.probs + i * classes, u.probs + i * classes,
                         (size_t)classes * sizeof(float)) != 0;
      CHECK(differ > nw / 2, "weighted copies: %zu of %zu images' vectors moved", differ, nw);
      release(u);
    }
    release(a);
    release(b);
  }
  release(ref);
  alternating_models(engine);
  { /* auto in fp16 takes the fused engine, where it runs the model */
    ttp_options o;
    ttp_options_init(&o);
    o.model_dir = model_dir;
    o.precision = TTP_PRECISION_FP16;
    ttp_pipeline* p = NULL;
    CHECK(ttp_open(&o, &p) == TTP_OK, "auto in fp16: %s", ttp_last_error(p));
    printf("%-58s %s\n", "auto in fp16:", ttp_engine_description(p));
    CHECK(strstr(ttp_engine_description(p), "fused"), "auto in fp16 is not the fused engine");
    ttp_close(p);
  }
  if (made) {
    test_remove_tree(made);
    free(made);
    free((void*)images);
  } else {
    ttp_free(mnist.pixels);
  }
  printf("%s engine: agrees with the CPU; graph, eager, buckets and slots give the same bits\n",
         argv[2]);
  return 0;
}
