/* The files path, stage by stage, on the same files and threads (BENCHMARKS.md, "Bulk
   classification of image files"): each run, in one process,
     walk          ttp_list_files over the arguments (sorted, as `ttapipe classify` does);
     pool          the decode pool alone after the walk: every file read, decoded and
                   preprocessed into memory, chunk after chunk of 1024 in a ring of 3 buffers,
                   no engine, no writer;
     pool+walk     the same with the walk on its own thread, feeding the pool as it goes (what
                   ttp_classify_paths does): the decode pool's own rate, the files path's ceiling;
     classify      ttp_classify_files over the walk's list, the engine behind the streaming core,
                   results dropped;
     +writer       the same, each row written as CSV to /dev/null;
     paths         ttp_classify_paths, results dropped;
     paths+writer  ttp_classify_paths with the writer: what `ttapipe classify DIR -o FILE` does;
   files per second (walk + each where the walk is not inside), and each as a share of
   pool+walk's rate; beside each, the CPU time of the whole process over the stage's wall time
   (cores kept busy), the calling thread's own CPU time per file (getrusage) and the share of
   rows the callback received in the stage's last tenth (a tail of rows that waited shows
   there). Medians of --runs.
   Usage: bench_files --model DIR [--engine cpu|cudnn] [--precision fp32|fp16] [--tta N]
                      [--batch B] [--slots K] [--threads T] [--runs R] PATH... */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "io/archive.h"
#include "io/decode_pool.h"
#include "io/files.h"
#include "pipeline/clock.h"
#include "tests/common/check.h"
#include "ttapipe.h"

enum { MAX_RUNS = 64 };

/* CPU seconds (user + system) of the process or of the calling thread. */
static double cpu_seconds(int who) {
  struct rusage u;
  if (getrusage(who, &u) != 0) return 0;
  return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

typedef struct stage_clock {
  double wall, process, caller;
} stage_clock;

static stage_clock stage_start(void) {
  return (stage_clock){clock_seconds(), cpu_seconds(RUSAGE_SELF), cpu_seconds(RUSAGE_THREAD)};
}

/* The stage's wall seconds; cores[r] and caller[r] get the process's CPU over the wall time and
   the calling thread's CPU seconds. */
static double stage_stop(stage_clock c, double* cores, double* caller) {
  double wall = clock_seconds() - c.wall;
  *cores = (cpu_seconds(RUSAGE_SELF) - c.process) / wall;
  *caller = cpu_seconds(RUSAGE_THREAD) - c.caller;
  return wall;
}

/* When each row was handed to the callback (clock_seconds), for the rows' timeline. */
static double* row_times;
static size_t row_count;

static void drop(void* user, size_t index, const char* path, const ttp_result* r,
                 const float* probs, const char* error) {
  (void)user, (void)path, (void)r, (void)probs, (void)error;
  if (index < row_count) row_times[index] = clock_seconds();
}

static void write_row(void* user, size_t index, const char* path, const ttp_result* r,
                      const float* probs, const char* error) {
  CHECK(ttp_writer_write(user, path, r, probs, error) == TTP_OK, "writing failed");
  if (index < row_count) row_times[index] = clock_seconds();
}

/* The share of rows handed out in the last tenth of a stage that ran from start to end. */
static double late_rows(double start, double end) {
  size_t late = 0;
  for (size_t i = 0; i < row_count; i++) late += row_times[i] > end - 0.1 * (end - start);
  return row_count ? (double)late / (double)row_count : 0;
}

/* The decode pool alone: the list's files, or (list NULL) the files of a walk over paths; a
   list holding tar archives is fed by the walk's thread, without walking, as ttp_classify_files
   does. *files: the files the pool saw (an archive's members, not the archive). */
static double pool_alone(const ttp_file_list* list, const char* const* paths, size_t count,
                         int threads, size_t* files) {
  enum { CHUNK = 1024, WINDOW = 3 };
  uint8_t* buffers[WINDOW];
  for (int w = 0; w < WINDOW; w++) CHECK((buffers[w] = malloc(CHUNK * 784)), "out of memory");
  double start = clock_seconds();
  io_pool* pool;
  io_pool_walk* walk = NULL;
  ttp_err e = {0};
  int archives = 0;
  for (size_t i = 0; list && i < list->count; i++) archives |= io_is_archive(list->paths[i]);
  const int final = list && !archives;
  CHECK(io_pool_open(final ? (const char* const*)list->paths : NULL, final ? list->count : 0,
                     final, NULL, 1, 28, 28, threads, CHUNK, WINDOW, &pool, &e) == TTP_OK,
        "%s", e.message);
  if (archives)
    CHECK(io_pool_walk_start(pool, (const char* const*)list->paths, list->count, NULL, &walk,
                             &e) == TTP_OK, "%s", e.message);
  if (!list) {
    ttp_list_options o;
    CHECK(io_list_options(NULL, &o, &e) == TTP_OK, "%s", e.message);
    CHECK(io_pool_walk_start(pool, paths, count, &o, &walk, &e) == TTP_OK, "%s", e.message);
  }
  size_t provided = 0, n = CHUNK;
  for (size_t k = 0; n == CHUNK; k++) { /* to the first chunk that is not full */
    while (provided < k + WINDOW)
      io_pool_provide(pool, provided, buffers[provided % WINDOW]), provided++;
    const io_outcome* outcomes;
    const char* const* chunk_paths;
    io_pool_wait(pool, k, &outcomes, &chunk_paths, &n);
    io_pool_release(pool, k);
  }
  CHECK(io_pool_walk_join(walk, &e) == TTP_OK, "%s", e.message);
  int over;
  *files = io_pool_known(pool, &over);
  io_pool_close(pool, NULL);
  double t = clock_seconds() - start;
  for (int w = 0; w < WINDOW; w++) free(buffers[w]);
  return t;
}

int main(int argc, char** argv) {
  const char *model = NULL, *engine = "cudnn", *precision = "fp32";
  int tta = 1, batch = 1024, slots = 0, threads = 0, runs = 5, first_path = argc;
  for (int i = 1; i < argc; i++) {
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--model") == 0 && v) model = v, i++;
    else if (strcmp(argv[i], "--engine") == 0 && v) engine = v, i++;
    else if (strcmp(argv[i], "--precision") == 0 && v) precision = v, i++;
    else if (strcmp(argv[i], "--tta") == 0 && v) tta = atoi(v), i++;
    else if (strcmp(argv[i], "--batch") == 0 && v) batch = atoi(v), i++;
    else if (strcmp(argv[i], "--slots") == 0 && v) slots = atoi(v), i++;
    else if (strcmp(argv[i], "--threads") == 0 && v) threads = atoi(v), i++;
    else if (strcmp(argv[i], "--runs") == 0 && v) runs = atoi(v), i++;
    else {
      first_path = i;
      break;
    }
  }
  CHECK(model && first_path < argc && runs >= 1 && runs <= MAX_RUNS,
        "usage: %s --model DIR [--engine cpu|cudnn] [--precision fp32|fp16] [--tta N] "
        "[--batch B] [--slots K] [--threads T] [--runs R] PATH...", argv[0]);
  ttp_tta t;
  ttp_tta_init(&t);
  t.copies = tta;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = model;
  o.engine = strcmp(engine, "cpu") == 0 ? TTP_ENGINE_CPU : TTP_ENGINE_CUDNN;
  o.precision = strcmp(precision, "fp16") == 0 ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32;
  o.max_batch = batch;
  if (slots) o.slots = slots;
  o.tta = &t;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  FILE* null = fopen("/dev/null", "w");
  CHECK(null, "cannot open /dev/null");
  printf("# %s\n", ttp_engine_description(p));

  enum { WALK, POOL, POOL_WALK, CLASSIFY, CLASSIFY_WRITER, PATHS, PATHS_WRITER, STAGES };
  static const char* const names[STAGES] = {"walk", "pool", "pool+walk", "classify",
                                            "classify+writer", "paths", "paths+writer"};
  const int walk_inside[STAGES] = {1, 0, 1, 0, 0, 1, 1}; /* else the walk's time is added */
  const char* const* roots = (const char* const*)argv + first_path;
  size_t root_count = (size_t)(argc - first_path), files = 0;
  double seconds[STAGES][MAX_RUNS], cores[STAGES][MAX_RUNS], caller[STAGES][MAX_RUNS];
  double late[STAGES][MAX_RUNS] = {{0}};
  for (int r = 0; r < runs; r++) {
    ttp_file_list list = {0};
    char error[TTP_ERROR_SIZE];
    stage_clock c = stage_start();
    CHECK(ttp_list_files(roots, root_count, NULL, &list, error, sizeof error) == TTP_OK, "%s",
          error);
    seconds[WALK][r] = stage_stop(c, &cores[WALK][r], &caller[WALK][r]);
    c = stage_start();
    pool_alone(&list, NULL, 0, threads ? threads : 16, &files);
    seconds[POOL][r] = stage_stop(c, &cores[POOL][r], &caller[POOL][r]);
    c = stage_start();
    pool_alone(NULL, roots, root_count, threads ? threads : 16, &files);
    seconds[POOL_WALK][r] = stage_stop(c, &cores[POOL_WALK][r], &caller[POOL_WALK][r]);
    for (int stage = CLASSIFY; stage < STAGES; stage++) {
      int writing = stage == CLASSIFY_WRITER || stage == PATHS_WRITER;
      ttp_writer* w = NULL;
      if (writing)
        CHECK(ttp_writer_open(p, null, TTP_FORMAT_CSV, 1, 0, &w, error, sizeof error) == TTP_OK,
              "%s", error);
      ttp_bulk_stats st = {.struct_size = sizeof st};
      row_count = files, row_times = realloc(row_times, files * sizeof *row_times);
      CHECK(row_times, "out of memory");
      c = stage_start();
      ttp_status s = stage <= CLASSIFY_WRITER
          ? ttp_classify_files(p, (const char* const*)list.paths, list.count, NULL, threads,
                               writing ? write_row : drop, w, &st)
          : ttp_classify_paths(p, roots, root_count, NULL, NULL, threads,
                               writing ? write_row : drop, w, &st);
      seconds[stage][r] = stage_stop(c, &cores[stage][r], &caller[stage][r]);
      late[stage][r] = late_rows(c.wall, c.wall + seconds[stage][r]);
      CHECK(s == TTP_OK && st.files == files, "%s (%zu files)", ttp_last_error(p), st.files);
      CHECK(ttp_writer_close(w) == TTP_OK, "writing failed");
    }
    ttp_file_list_free(&list);
  }
  double median[STAGES], median_cores[STAGES], median_caller[STAGES], median_late[STAGES];
  for (int stage = 0; stage < STAGES; stage++) {
    median_late[stage] = test_quantile(late[stage], (size_t)runs, 0.5);
    median[stage] = test_quantile(seconds[stage], (size_t)runs, 0.5);
    median_cores[stage] = test_quantile(cores[stage], (size_t)runs, 0.5);
    median_caller[stage] = test_quantile(caller[stage], (size_t)runs, 0.5);
  }
  double ceiling = (double)files / median[POOL_WALK];
  printf("%zu files, %d threads, median of %d runs (files/s with the walk; %% of pool+walk's; "
         "cores busy; the calling thread's CPU per file; rows handed out in the stage's last "
         "tenth):\n", files, threads, runs);
  for (int stage = 0; stage < STAGES; stage++) {
    double t = median[stage] + (walk_inside[stage] ? 0 : median[WALK]);
    printf("  %-16s %8.4f s  %9.0f files/s  %5.1f%%  %5.2f cores  %6.3f us  %5.1f%%%s\n",
           names[stage], median[stage], files / t, 100 * files / t / ceiling, median_cores[stage],
           1e6 * median_caller[stage] / (double)files, 100 * median_late[stage],
           walk_inside[stage] ? "" : "  (after the walk)");
  }
  fclose(null);
  free(row_times);
  ttp_close(p);
  return 0;
}
