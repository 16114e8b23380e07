/* The public streaming calls against one large call, from one thread (BENCHMARKS.md; issue 18's
   measure): the same images classified
     one call  ttp_classify over all of them (what `ttapipe bench` measures: many batches a call);
     streamed  ttp_submit one batch of --batch images at a time from the caller's buffer,
               ttp_collect the oldest when every slot is busy (a producer of batches);
     per call  ttp_classify once per batch, which waits for each (for contrast);
   images/s, median of --runs, for each engine and precision asked; the results of the three
   ways are checked equal. With --min-share P it fails unless streamed reaches P% of one call
   in every row (ctest: test_stream_throughput, P = 95).
   Usage: bench_stream --model PATH [--engine cudnn,fused] [--precision fp32,fp16] [--tta N]
                       [--batch B] [--batches K] [--slots S] [--runs R] [--min-share P] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/clock.h"
#include "tests/common/args.h"
#include "tests/common/check.h"
#include "ttapipe.h"

enum { MAX_RUNS = 64 };

/* One batch at a time through ttp_submit; returns the seconds taken. */
static double streamed(ttp_pipeline* p, const uint8_t* images, size_t pixels, size_t count,
                       size_t batch, ttp_result* results) {
  double start = clock_seconds();
  size_t sent = 0, done = 0, n;
  while (done < count) {
    if (sent < count && ttp_batches_in_flight(p) < ttp_batches_max(p)) {
      n = count - sent < batch ? count - sent : batch;
      CHECK(ttp_submit(p, images + sent * pixels, n) == TTP_OK, "%s", ttp_last_error(p));
      sent += n;
    } else {
      CHECK(ttp_collect(p, results + done, NULL, &n) == TTP_OK, "%s", ttp_last_error(p));
      done += n;
    }
  }
  return clock_seconds() - start;
}

int main(int argc, char** argv) {
  const char* dir = bench_arg(argc, argv, "--model", NULL);
  CHECK(dir, "usage: %s --model PATH [--engine cudnn,fused] [--precision fp32,fp16] [--tta N] "
        "[--batch B] [--batches K] [--slots S] [--runs R]", argv[0]);
  int copies = atoi(bench_arg(argc, argv, "--tta", "5")), batch = atoi(bench_arg(argc, argv, "--batch", "1024"));
  int batches = atoi(bench_arg(argc, argv, "--batches", "100")), slots = atoi(bench_arg(argc, argv, "--slots", "3"));
  int runs = atoi(bench_arg(argc, argv, "--runs", "5"));
  const double min_share = atof(bench_arg(argc, argv, "--min-share", "0"));
  int short_rows = 0;
  CHECK(runs >= 1 && runs <= MAX_RUNS && batch >= 1 && batches >= 1, "bad arguments");
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  size_t count = (size_t)batch * batches, pixels = 0;
  uint8_t* images = NULL;
  ttp_result* results[3];
  for (int k = 0; k < 3; k++) CHECK((results[k] = malloc(count * sizeof *results[k])), "out of memory");
  char engines[64], precisions[64];
  snprintf(engines, sizeof engines, "%s", bench_arg(argc, argv, "--engine", "cudnn,fused"));
  snprintf(precisions, sizeof precisions, "%s", bench_arg(argc, argv, "--precision", "fp32,fp16"));
  printf("%zu images, batches of %d, %d slots, N = %d, median of %d runs (images/s)\n", count,
         batch, slots, copies, runs);
  printf("%-6s %-6s %12s %12s %12s %13s\n", "engine", "prec", "one call", "streamed", "per call",
         "streamed/one");
  char* engine_state = NULL;
  for (char* engine = strtok_r(engines, ",", &engine_state); engine;
       engine = strtok_r(NULL, ",", &engine_state)) {
    char list[64];
    snprintf(list, sizeof list, "%s", precisions);
    char* prec_state = NULL;
    for (char* prec = strtok_r(list, ",", &prec_state); prec; prec = strtok_r(NULL, ",", &prec_state)) {
      ttp_tta tta;
      ttp_tta_init(&tta);
      tta.copies = copies;
      ttp_options o;
      ttp_options_init(&o);
      o.model_dir = dir, o.tta = &tta, o.max_batch = batch, o.slots = slots;
      o.engine = strcmp(engine, "fused") == 0 ? TTP_ENGINE_FUSED : TTP_ENGINE_CUDNN;
      o.precision = strcmp(prec, "fp16") == 0 ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32;
      ttp_pipeline* p = NULL;
      CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
      if (!images) { /* the model's image size, known once a pipeline is open */
        const ttp_model_info* m = ttp_model(p);
        pixels = (size_t)m->input_channels * m->input_rows * m->input_cols;
        CHECK((images = malloc(count * pixels)), "out of memory");
        test_rng rng = {77};
        for (size_t i = 0; i < count * pixels; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
      }
      CHECK(ttp_classify(p, images, count, results[0], NULL) == TTP_OK, "%s", ttp_last_error(p));
      double one[MAX_RUNS], fed[MAX_RUNS], each[MAX_RUNS];
      for (int r = 0; r < runs; r++) {
        double t0 = clock_seconds();
        CHECK(ttp_classify(p, images, count, results[0], NULL) == TTP_OK, "%s", ttp_last_error(p));
        one[r] = count / (clock_seconds() - t0);
        fed[r] = count / streamed(p, images, pixels, count, (size_t)batch, results[1]);
        t0 = clock_seconds();
        for (size_t first = 0; first < count; first += (size_t)batch)
          CHECK(ttp_classify(p, images + first * pixels, (size_t)batch, results[2] + first, NULL) ==
                    TTP_OK, "%s", ttp_last_error(p));
        each[r] = count / (clock_seconds() - t0);
      }
      CHECK(memcmp(results[0], results[1], count * sizeof *results[0]) == 0 &&
                memcmp(results[0], results[2], count * sizeof *results[0]) == 0,
            "%s %s: the three ways give different results", engine, prec);
      double m_one = test_quantile(one, (size_t)runs, 0.5), m_fed = test_quantile(fed, (size_t)runs, 0.5);
      double m_each = test_quantile(each, (size_t)runs, 0.5);
      printf("%-6s %-6s %12.0f %12.0f %12.0f %12.1f%%\n", engine, prec, m_one, m_fed, m_each,
             100 * m_fed / m_one);
      short_rows += 100 * m_fed < min_share * m_one;
      fflush(stdout);
      ttp_close(p);
    }
  }
  free(images);
  for (int k = 0; k < 3; k++) free(results[k]);
  CHECK(short_rows == 0, "%d rows where streaming stays under %g%% of one call", short_rows,
        min_share);
  return 0;
}
