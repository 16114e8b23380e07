/* The files path, stage by stage, on the same files and threads (BENCHMARKS.md, "Bulk
   classification of image files"): each run, in one process,
     walk      ttp_list_files over the arguments (sorted, as `ttapipe classify` does);
     pool      the decode pool alone: every file read, decoded and preprocessed into memory,
               chunk after chunk of 1024 in a ring of 3 buffers, no engine, no writer;
     classify  ttp_classify_files, the engine behind the streaming core, results dropped;
     +writer   the same, each row written as CSV to /dev/null;
     paths     ttp_classify_paths with the writer: the walk on its own thread, overlapped with
               decoding (what `ttapipe classify DIR -o FILE` does);
   and files per second for walk + each (the walk is part of every command). Medians of --runs.
   Usage: bench_files --model DIR [--engine cpu|cudnn] [--precision fp32|fp16] [--tta N]
                      [--batch B] [--threads T] [--runs R] PATH... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/decode_pool.h"
#include "pipeline/clock.h"
#include "tests/common/check.h"
#include "ttapipe.h"

enum { MAX_RUNS = 64 };

static void drop(void* user, size_t index, const char* path, const ttp_result* r,
                 const float* probs, const char* error) {
  (void)user, (void)index, (void)path, (void)r, (void)probs, (void)error;
}

static void write_row(void* user, size_t index, const char* path, const ttp_result* r,
                      const float* probs, const char* error) {
  (void)index;
  CHECK(ttp_writer_write(user, path, r, probs, error) == TTP_OK, "writing failed");
}

static double pool_alone(const ttp_file_list* list, int threads) {
  enum { CHUNK = 1024, WINDOW = 3 };
  uint8_t* buffers[WINDOW];
  for (int w = 0; w < WINDOW; w++) CHECK((buffers[w] = malloc(CHUNK * 784)), "out of memory");
  double start = clock_seconds();
  io_pool* pool;
  ttp_err e = {0};
  CHECK(io_pool_open((const char* const*)list->paths, list->count, 1, NULL, 28, 28, threads,
                     CHUNK, WINDOW, &pool, &e) == TTP_OK, "%s", e.message);
  size_t chunks = (list->count + CHUNK - 1) / CHUNK, provided = 0;
  for (size_t k = 0; k < chunks; k++) {
    while (provided < chunks && provided < k + WINDOW)
      io_pool_provide(pool, provided, buffers[provided % WINDOW]), provided++;
    const io_outcome* outcomes;
    const char* const* paths;
    size_t n;
    io_pool_wait(pool, k, &outcomes, &paths, &n);
    io_pool_release(pool, k);
  }
  io_pool_close(pool, NULL);
  double t = clock_seconds() - start;
  for (int w = 0; w < WINDOW; w++) free(buffers[w]);
  return t;
}

int main(int argc, char** argv) {
  const char *model = NULL, *engine = "cudnn", *precision = "fp32";
  int tta = 1, batch = 1024, threads = 0, runs = 5, first_path = argc;
  for (int i = 1; i < argc; i++) {
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--model") == 0 && v) model = v, i++;
    else if (strcmp(argv[i], "--engine") == 0 && v) engine = v, i++;
    else if (strcmp(argv[i], "--precision") == 0 && v) precision = v, i++;
    else if (strcmp(argv[i], "--tta") == 0 && v) tta = atoi(v), i++;
    else if (strcmp(argv[i], "--batch") == 0 && v) batch = atoi(v), i++;
    else if (strcmp(argv[i], "--threads") == 0 && v) threads = atoi(v), i++;
    else if (strcmp(argv[i], "--runs") == 0 && v) runs = atoi(v), i++;
    else {
      first_path = i;
      break;
    }
  }
  CHECK(model && first_path < argc && runs >= 1 && runs <= MAX_RUNS,
        "usage: %s --model DIR [--engine cpu|cudnn] [--precision fp32|fp16] [--tta N] "
        "[--batch B] [--threads T] [--runs R] PATH...", argv[0]);
  ttp_tta t;
  ttp_tta_init(&t);
  t.copies = tta;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = model;
  o.engine = strcmp(engine, "cpu") == 0 ? TTP_ENGINE_CPU : TTP_ENGINE_CUDNN;
  o.precision = strcmp(precision, "fp16") == 0 ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32;
  o.max_batch = batch;
  o.tta = &t;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  FILE* null = fopen("/dev/null", "w");
  CHECK(null, "cannot open /dev/null");
  printf("# %s\n", ttp_engine_description(p));

  double walk[MAX_RUNS], pool[MAX_RUNS], classify[MAX_RUNS], writer[MAX_RUNS], streamed[MAX_RUNS];
  size_t files = 0;
  for (int r = 0; r < runs; r++) {
    ttp_file_list list = {0};
    char error[TTP_ERROR_SIZE];
    double t0 = clock_seconds();
    CHECK(ttp_list_files((const char* const*)argv + first_path, (size_t)(argc - first_path), NULL,
                         &list, error, sizeof error) == TTP_OK, "%s", error);
    walk[r] = clock_seconds() - t0;
    files = list.count;
    pool[r] = pool_alone(&list, threads ? threads : 16);
    ttp_bulk_stats st = {.struct_size = sizeof st};
    t0 = clock_seconds();
    CHECK(ttp_classify_files(p, (const char* const*)list.paths, list.count, NULL, threads, drop,
                             NULL, &st) == TTP_OK, "%s", ttp_last_error(p));
    classify[r] = clock_seconds() - t0;
    ttp_writer* w;
    CHECK(ttp_writer_open(p, null, TTP_FORMAT_CSV, 1, 0, &w, error, sizeof error) == TTP_OK, "%s",
          error);
    t0 = clock_seconds();
    CHECK(ttp_classify_files(p, (const char* const*)list.paths, list.count, NULL, threads,
                             write_row, w, &st) == TTP_OK, "%s", ttp_last_error(p));
    writer[r] = clock_seconds() - t0;
    CHECK(ttp_writer_close(w) == TTP_OK, "writing failed");
    ttp_file_list_free(&list);
    CHECK(ttp_writer_open(p, null, TTP_FORMAT_CSV, 1, 0, &w, error, sizeof error) == TTP_OK, "%s",
          error);
    t0 = clock_seconds();
    CHECK(ttp_classify_paths(p, (const char* const*)argv + first_path, (size_t)(argc - first_path),
                             NULL, NULL, threads, write_row, w, &st) == TTP_OK, "%s",
          ttp_last_error(p));
    streamed[r] = clock_seconds() - t0;
    CHECK(ttp_writer_close(w) == TTP_OK && st.files == files, "writing failed, or %zu files",
          st.files);
  }
  size_t n = (size_t)runs;
  double wk = test_quantile(walk, n, 0.5), pl = test_quantile(pool, n, 0.5);
  double cl = test_quantile(classify, n, 0.5), wr = test_quantile(writer, n, 0.5);
  double st = test_quantile(streamed, n, 0.5);
  printf("%zu files, %d threads, median of %d runs:\n", files, threads, runs);
  printf("  walk            %8.4f s\n", wk);
  printf("  pool alone      %8.4f s  %9.0f files/s   walk + pool     %9.0f files/s\n", pl,
         files / pl, files / (wk + pl));
  printf("  classify        %8.4f s  %9.0f files/s   walk + classify %9.0f files/s  (%.1f%% of "
         "walk + pool)\n", cl, files / cl, files / (wk + cl), 100 * (wk + pl) / (wk + cl));
  printf("  classify+writer %8.4f s  %9.0f files/s   walk + all      %9.0f files/s  (%.1f%% of "
         "walk + pool)\n", wr, files / wr, files / (wk + wr), 100 * (wk + pl) / (wk + wr));
  printf("  paths+writer    %8.4f s  (the walk overlapped: ttp_classify_paths, what `ttapipe "
         "classify DIR` does) %9.0f files/s  (%.1f%% of walk + pool)\n", st, files / st,
         100 * (wk + pl) / st);
  fclose(null);
  ttp_close(p);
  return 0;
}
