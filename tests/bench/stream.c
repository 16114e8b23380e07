/* The streaming core fed from one thread (BENCHMARKS.md): the same images classified
     one call  stream_run over all of them (what ttp_classify does with a large array);
     streamed  one batch of --batch images at a time: acquire the next slot (collecting the
               oldest batch first when every slot is busy), copy the batch in, submit; the
               results collected as slots are needed (what a producer of batches does);
     per call  stream_run once per batch, which waits for each (ttp_classify called batch by
               batch, for contrast);
   images/s, median of --runs, for each precision asked.
   Usage: bench_stream --model DIR [--precision fp32,fp16] [--tta N] [--batch B] [--batches K]
                       [--slots S] [--runs R] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment/tta.h"
#include "io/model_mnistcudnn.h"
#include "pipeline/clock.h"
#include "pipeline/engine.h"
#include "tests/common/args.h"
#include "tests/common/check.h"

enum { MAX_RUNS = 64 };

/* One batch at a time into the next free slot; returns the seconds taken. */
static double streamed(batch_stream* s, const uint8_t* images, size_t count, size_t batch,
                       ttp_result* results) {
  ttp_err e = {0};
  double start = clock_seconds();
  size_t sent = 0, done = 0, n;
  while (done < count) {
    uint8_t* slot = sent < count ? stream_acquire(s) : NULL;
    if (slot) {
      n = count - sent < batch ? count - sent : batch;
      memcpy(slot, images + sent * s->pixels, n * s->pixels);
      CHECK(stream_submit(s, n, &e) == TTP_OK, "%s", e.message);
      sent += n;
    } else {
      CHECK(stream_collect(s, results + done, NULL, &n, &e) == TTP_OK, "%s", e.message);
      done += n;
    }
  }
  return clock_seconds() - start;
}

int main(int argc, char** argv) {
  const char* dir = bench_arg(argc, argv, "--model", NULL);
  CHECK(dir, "usage: %s --model DIR [--precision fp32,fp16] [--tta N] [--batch B] [--batches K] "
        "[--slots S] [--runs R]", argv[0]);
  int copies = atoi(bench_arg(argc, argv, "--tta", "5")), batch = atoi(bench_arg(argc, argv, "--batch", "1024"));
  int batches = atoi(bench_arg(argc, argv, "--batches", "100")), slots = atoi(bench_arg(argc, argv, "--slots", "3"));
  int runs = atoi(bench_arg(argc, argv, "--runs", "5"));
  CHECK(runs >= 1 && runs <= MAX_RUNS && batch >= 1 && batches >= 1, "bad arguments");
  ttp_err e = {0};
  model* m = NULL;
  CHECK(io_load_mnistcudnn(dir, &m, &e) == TTP_OK, "%s", e.message);
  size_t count = (size_t)batch * batches;
  uint8_t* images = malloc(count * 784);
  ttp_result* results = malloc(count * sizeof *results);
  CHECK(images && results, "out of memory");
  test_rng rng = {77};
  for (size_t i = 0; i < count * 784; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  char list[64];
  snprintf(list, sizeof list, "%s", bench_arg(argc, argv, "--precision", "fp32,fp16"));
  printf("%zu images, batches of %d, %d slots, N = %d, median of %d runs (images/s)\n", count,
         batch, slots, copies, runs);
  printf("%-6s %12s %12s %12s %10s\n", "prec", "one call", "streamed", "per call", "streamed/one");
  for (char* prec = strtok(list, ","); prec; prec = strtok(NULL, ",")) {
    ttp_tta tta;
    ttp_tta_init(&tta);
    tta.copies = copies;
    engine_config c = {.device = 0, .max_batch = batch, .slots = slots, .use_graph = 1,
                       .precision = strcmp(prec, "fp16") == 0 ? TTP_PRECISION_FP16
                                                              : TTP_PRECISION_FP32};
    CHECK(aug_spec_from(&tta, &c.spec, &c.merge, &e) == TTP_OK, "%s", e.message);
    batch_stream s = {0};
    CHECK(engine_open_stream(engine_find(TTP_ENGINE_CUDNN), m, &c, &s, &e) == TTP_OK, "%s",
          e.message);
    CHECK(stream_run(&s, images, count, results, NULL, &e) == TTP_OK, "%s", e.message); /* warm */
    double one[MAX_RUNS], fed[MAX_RUNS], each[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
      double t0 = clock_seconds();
      CHECK(stream_run(&s, images, count, results, NULL, &e) == TTP_OK, "%s", e.message);
      one[r] = count / (clock_seconds() - t0);
      fed[r] = count / streamed(&s, images, count, (size_t)batch, results);
      t0 = clock_seconds();
      for (size_t first = 0; first < count; first += (size_t)batch)
        CHECK(stream_run(&s, images + first * 784, (size_t)batch, results + first, NULL, &e) ==
                  TTP_OK, "%s", e.message);
      each[r] = count / (clock_seconds() - t0);
    }
    double m_one = test_quantile(one, (size_t)runs, 0.5), m_fed = test_quantile(fed, (size_t)runs, 0.5);
    double m_each = test_quantile(each, (size_t)runs, 0.5);
    printf("%-6s %12.0f %12.0f %12.0f %9.1f%%\n", prec, m_one, m_fed, m_each, 100 * m_fed / m_one);
    stream_close(&s);
  }
  model_free(m);
  free(images), free(results);
  return 0;
}
