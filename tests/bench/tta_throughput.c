/* Throughput of the cudnn engine through the public API, TTA N = 5, random images:
     batch 1:    one image per ttp_classify call (the latency of a call), 2000 calls;
     batch B:    max_batch = B, each call classifies 16 B images (at least 40,000), so the ring
                 of slots overlaps the copies with the compute; 5 timed calls after a warm-up.
   fp32 and fp16, CUDA Graphs replayed and eager. Prints median and best images/s.
   Usage: tta_throughput MODEL_DIR [--quick]   (--quick: one small point per row, for ctest)
   Skipped (77) without a GPU. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/common/check.h"
#include "ttapipe.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static ttp_pipeline* open_pipeline(const char* model, ttp_precision precision, int batch,
                                   int no_graph) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = model;
  o.engine = TTP_ENGINE_CUDNN;
  o.precision = precision;
  o.max_batch = batch;
  o.no_graph = no_graph;
  o.tta = &tta;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  return p;
}

/* images/s of `calls` timed calls of `per_call` images: median and best. */
static void measure(ttp_pipeline* p, const uint8_t* images, size_t per_call, int calls,
                    ttp_result* results, double* median, double* best) {
  double* t = malloc((size_t)calls * sizeof *t);
  CHECK(ttp_classify(p, images, per_call, results, NULL) == TTP_OK, "%s", ttp_last_error(p));
  for (int i = 0; i < calls; i++) {
    double start = now();
    CHECK(ttp_classify(p, images, per_call, results, NULL) == TTP_OK, "%s", ttp_last_error(p));
    t[i] = now() - start;
  }
  qsort(t, (size_t)calls, sizeof *t, by_value);
  *median = per_call / t[calls / 2];
  *best = per_call / t[0];
  free(t);
}

int main(int argc, char** argv) {
  CHECK(argc >= 2, "usage: %s MODEL_DIR [--quick]", argv[0]);
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  struct stat st;
  if (stat(argv[1], &st) != 0) {
    printf("skipped: no model at %s\n", argv[1]);
    return TEST_SKIP;
  }
  int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
  static const int full[] = {1, 64, 256, 1024, 4096, 8192};
  static const int short_list[] = {1, 64};
  const int* batches = quick ? short_list : full;
  int batch_count = quick ? 2 : (int)(sizeof full / sizeof *full);
  size_t most = quick ? 1024 : 16 * 8192;
  uint8_t* images = malloc(most * 784);
  test_rng rng = {1};
  for (size_t i = 0; i < most * 784; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  ttp_result* results = malloc(most * sizeof *results);

  printf("%-6s %-6s %7s %12s %12s %12s %10s\n", "prec", "graph", "batch", "images/call",
         "median im/s", "best im/s", "TFLOP/s");
  for (int precision = 0; precision < 2; precision++)
    for (int no_graph = 0; no_graph < 2; no_graph++)
      for (int b = 0; b < batch_count; b++) {
        int batch = batches[b];
        ttp_pipeline* p = open_pipeline(argv[1], (ttp_precision)precision, batch, no_graph);
        size_t per_call = batch == 1 ? 1 : (size_t)batch * 16;
        if (per_call < 40000 && batch > 1) per_call = 40000;
        if (per_call > most) per_call = most;
        int calls = batch == 1 ? (quick ? 50 : 2000) : (quick ? 2 : 5);
        double median, best;
        measure(p, images, per_call, calls, results, &median, &best);
        double flops = ttp_model(p)->flops * 5;
        printf("%-6s %-6s %7d %12zu %12.0f %12.0f %10.2f\n", precision ? "fp16" : "fp32",
               no_graph ? "eager" : "replay", batch, per_call, median, best, median * flops * 1e-12);
        ttp_close(p);
      }
  free(images);
  free(results);
  return 0;
}
