/* Several host threads, each with its own pipeline on the same GPU, each classifying one image
   per call (ttp_classify, the fused engine, N = 5): the latency path under concurrency
   (BENCHMARKS.md). For each thread count, every thread opens its pipeline, makes --warmup calls,
   then all start together and call for --seconds; printed: the images/s of all threads
   together, its ratio to one thread's, and the per-call latency percentiles over all calls.
   Usage: bench_threads --model DIR [--precision fp32|fp16] [--threads 1,2,4,8] [--seconds S]
                        [--warmup N] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/clock.h"
#include "tests/common/args.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { MOST_THREADS = 64, MOST_CALLS = 1 << 21 };

typedef struct worker {
  const char* model;
  ttp_precision precision;
  int warmup;
  double seconds;
  atomic_int* ready; /* threads opened and warm */
  atomic_int* go;
  double* latency; /* seconds per call */
  size_t calls;
} worker;

static void* run(void* arg) {
  worker* w = arg;
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = w->model;
  o.engine = TTP_ENGINE_FUSED;
  o.precision = w->precision;
  o.max_batch = 64;
  o.tta = &tta;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  uint8_t image[784];
  test_rng rng = {(uint64_t)(uintptr_t)w};
  ttp_result r;
  for (int i = 0; i < w->warmup; i++) {
    for (int k = 0; k < 784; k++) image[k] = (uint8_t)test_int(&rng, 0, 255);
    CHECK(ttp_classify(p, image, 1, &r, NULL) == TTP_OK, "%s", ttp_last_error(p));
  }
  atomic_fetch_add(w->ready, 1);
  while (!atomic_load(w->go)) {
  }
  const double start = clock_seconds();
  double now = start;
  while (now - start < w->seconds && w->calls < MOST_CALLS) {
    image[w->calls % 784] ^= 0x5a; /* a different image every call */
    CHECK(ttp_classify(p, image, 1, &r, NULL) == TTP_OK, "%s", ttp_last_error(p));
    const double t = clock_seconds();
    w->latency[w->calls++] = t - now;
    now = t;
  }
  ttp_close(p);
  return NULL;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const char* model = bench_arg(argc, argv, "--model", NULL);
  CHECK(model, "usage: %s --model DIR [--precision fp32|fp16] [--threads 1,2,4,8] "
        "[--seconds S] [--warmup N]", argv[0]);
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  const ttp_precision precision = strcmp(bench_arg(argc, argv, "--precision", "fp32"), "fp16") == 0
                                      ? TTP_PRECISION_FP16
                                      : TTP_PRECISION_FP32;
  const double seconds = atof(bench_arg(argc, argv, "--seconds", "2"));
  const int warmup = atoi(bench_arg(argc, argv, "--warmup", "2000"));
  char list[256];
  snprintf(list, sizeof list, "%s", bench_arg(argc, argv, "--threads", "1,2,4,8"));
  printf("| threads | images/s | vs one thread | p50 us | p99 us | p99.9 us |\n");
  printf("| --- | --- | --- | --- | --- | --- |\n");
  double one = 0;
  for (char* t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    const int n = atoi(t);
    CHECK(n >= 1 && n <= MOST_THREADS, "threads: 1..%d", MOST_THREADS);
    atomic_int ready = 0, go = 0;
    worker w[MOST_THREADS];
    pthread_t th[MOST_THREADS];
    for (int i = 0; i < n; i++) {
      w[i] = (worker){model, precision, warmup, seconds, &ready, &go,
                      malloc(MOST_CALLS * sizeof(double)), 0};
      CHECK(w[i].latency, "out of memory");
      CHECK(pthread_create(&th[i], NULL, run, &w[i]) == 0, "pthread_create");
    }
    while (atomic_load(&ready) < n) {
    }
    atomic_store(&go, 1);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
      pthread_join(th[i], NULL);
      total += w[i].calls;
    }
    double* all = malloc(total * sizeof(double));
    CHECK(all, "out of memory");
    size_t k = 0;
    for (int i = 0; i < n; i++) {
      memcpy(all + k, w[i].latency, w[i].calls * sizeof(double));
      k += w[i].calls;
      free(w[i].latency);
    }
    qsort(all, total, sizeof(double), by_value);
    const double rate = total / seconds;
    if (n == 1) one = rate;
    printf("| %d | %.0f | %.2fx | %.1f | %.1f | %.1f |\n", n, rate, one > 0 ? rate / one : 0,
           all[total / 2] * 1e6, all[(size_t)(total * 0.99)] * 1e6,
           all[(size_t)(total * 0.999)] * 1e6);
    fflush(stdout);
    free(all);
  }
  return 0;
}
