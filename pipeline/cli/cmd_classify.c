/* ttapipe classify: image files and directories to one result row per file, in a deterministic
   order (sorted paths within each directory, the given order otherwise). A file that cannot be
   read or decoded is an error row; every other file goes on. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "job.h"
#include "report.h"
#include "rows.h"
#include "stop.h"

static const cli_option classify_options[] = {
    CLI_PIPELINE_OPTIONS,
    {"files-from", "FILE", "also classify the paths listed in FILE, one a line ('-': stdin)"},
    {"null", NULL, "with --files-from: the paths are separated by NUL bytes"},
    {"ext", "LIST", "extensions a directory walk takes (default png,jpg,jpeg,bmp,pgm,ppm,pnm)"},
    {"hidden", NULL, "also walk into and take names beginning with '.'"},
    {"format", "F", "csv|jsonl (default csv)"},
    {"output", "FILE", "write the results to FILE instead of standard output"},
    {"topk", "K", "also write the K-1 next most probable classes (default 1)"},
    {"probs", NULL, "also write the TTA spread and every class's probability"},
    {"uncertainty", NULL, "also write each file's entropy, the mutual information between its "
                          "copies and the class, and the copies' agreement with the answer"},
    {"csv-formulas", NULL, "leave CSV cells that begin with = + - @ as they are (by default "
                           "they get a leading ' that keeps spreadsheets from running them)"},
    CLI_IMAGE_OPTIONS,
    {"quiet", NULL, "no progress line and no summary on stderr"},
    {"shard", "I/N", "classify files I, I+N, I+2N, ... of the list alone (0 <= I < N; default: "
                     "Slurm's job array task, when set); ttapipe merge joins the N outputs"},
    {"no-slurm-shard", NULL, "classify every file also inside a Slurm job array"},
    {"resume", NULL, "with -o FILE: keep FILE's whole rows, skip their files, append the rest"},
    {"report", "FILE", "also write an HTML report to FILE: files per class and status, the "
                       "failed files, the least certain images"},
    {NULL, NULL, NULL},
};

static const char* const classify_aliases[] = {"-o", "output", "-0", "null", NULL};

/* Where a job's rows go: the output file (cut to its whole rows and appended to by --resume),
   an MPI rank's rows in memory, or standard output. */
typedef struct rows_target {
  const char* path; /* NULL: standard output, or memory */
  int append, header_written, in_memory;
  ttp_format format;
  int topk, columns;
  FILE* file; /* once opened */
  char** mem; /* in_memory: open_memstream's */
  size_t* mem_n;
} rows_target;

/* The rows of the files done, on their way out: the writer behind a lock that the stop thread
   (stop.h) takes too, to flush them every tick and at a signal, and to end the process between
   two rows at a second request. */
typedef struct progress {
  pthread_mutex_t lock; /* guards the writer and the counts */
  ttp_writer* writer;
  files_report* report; /* --report: gathered row by row, or NULL */
  size_t total, done, failed;
  int show;           /* a progress line: stderr is a terminal and not --quiet */
  int write_failed;
  double start, shown;
  double first_row; /* cli_now() at the first row (0: none yet), for --verbose */
  ttp_pipeline* p;    /* the files' ttp_file_uncertainty; what a stop request cancels (NULL
                         before the pipeline opens and after it closes) */
  enum { BEFORE_FILES, WITH_FILES } phase; /* whether the files have begun: the pipeline is
                                              open (its engine opening behind: the first row) */
  int behind;          /* the engine opens behind ttp_open (ttp_options.open_behind) */
  const char* rows_at; /* the file the rows go to, printable (NULL: standard output) */
  int on_gpu;          /* the pipeline ran on a GPU engine */
  rows_target target;  /* where the rows go, opened with the first of them */
  int target_failed;   /* the exit code of a target that could not be opened (0: none) */
} progress;

/* The rows' destination and writer, opened when the first row is ready (or at the end of a run
   that had none), so that a run that fails before it, an engine that cannot open included,
   leaves an existing output as it was. The lock taken. */
static int open_rows(progress* pr) {
  rows_target* t = &pr->target;
  char error[TTP_ERROR_SIZE];
  if (t->in_memory && !(t->file = open_memstream(t->mem, t->mem_n)))
    return cli_fail("out of memory");
  if (!t->in_memory && t->path && !(t->file = fopen(t->path, t->append ? "a" : "w")))
    return cli_fail("%s: cannot create: %s", t->path, strerror(errno));
  if (!t->file) t->file = stdout;
  /* Unbuffered: each flush of the writer is one write(2) of whole rows. */
  if (!t->in_memory) setvbuf(t->file, NULL, _IONBF, 0);
  if ((t->header_written ? ttp_writer_open_append : ttp_writer_open)(
          pr->p, t->file, t->format, t->topk, t->columns, &pr->writer, error, sizeof error) !=
      TTP_OK)
    return cli_fail("%s", error);
  return CLI_EXIT_OK;
}

static void on_file(void* user, size_t index, const char* path, const ttp_result* result,
                    const float* probabilities, const char* error) {
  (void)index;
  progress* pr = user;
  pthread_mutex_lock(&pr->lock);
  if (pr->first_row == 0) {
    pr->first_row = cli_now();
    pr->phase = WITH_FILES;
    if ((pr->target_failed = open_rows(pr)) != CLI_EXIT_OK) ttp_cancel(pr->p);
  }
  if (pr->target_failed) {
    pthread_mutex_unlock(&pr->lock);
    return;
  }
  if (ttp_writer_write_uncertainty(pr->writer, path, result, probabilities,
                                   ttp_file_uncertainty(pr->p), error) != TTP_OK)
    pr->write_failed = 1;
  if (pr->report) files_report_add(pr->report, path, result, error);
  pr->done++;
  pr->failed += error != NULL;
  double t = cli_now();
  if (pr->show && (t - pr->shown > 0.1 || pr->done == pr->total)) {
    double rate = pr->done / (t - pr->start + 1e-9);
    if (pr->total) /* a list: how far, and how long still */
      fprintf(stderr, "\r%zu/%zu files, %.0f files/s, %zu failed, ETA %.0f s   ", pr->done,
              pr->total, rate, pr->failed, (pr->total - pr->done) / (rate + 1e-9));
    else /* a walk still going on: how far */
      fprintf(stderr, "\r%zu files, %.0f files/s, %zu failed   ", pr->done, rate, pr->failed);
    pr->shown = t;
  }
  pthread_mutex_unlock(&pr->lock);
}

/* The rows written so far, to the file (the lock taken). */
static void flush_rows(progress* pr) {
  pthread_mutex_lock(&pr->lock);
  if (pr->writer && ttp_writer_flush(pr->writer) != TTP_OK) pr->write_failed = 1;
  pthread_mutex_unlock(&pr->lock);
}

/* The stop thread's hooks (stop.h). A first signal: the run stops after the files in flight
   (the CPU engines give their batch up between images), the rows so far flushed at once (a
   scheduler's SIGKILL may follow within a second); before the pipeline is open (a GPU's start
   takes longer than the files of many a job), the process ends at once. */
static void on_stop_request(void* user, int sig) {
  progress* pr = user;
  pthread_mutex_lock(&pr->lock);
  if (pr->phase == BEFORE_FILES) { /* the model still loading: nothing done, nothing to keep */
    fprintf(stderr, "ttapipe: interrupted by %s before the first file: none done\n",
            cli_signal_name(sig));
    _exit(128 + sig);
  }
  if (pr->p) ttp_cancel(pr->p);
  if (pr->writer && ttp_writer_flush(pr->writer) != TTP_OK) pr->write_failed = 1;
  pthread_mutex_unlock(&pr->lock);
}

static void on_stop_tick(void* user) { flush_rows(user); }

/* A second request: after the row being written (the lock), the rows flushed, what was done
   said, and the process ended; the lock is never given back, so no row follows. Before the
   first file and after the last row, the counts say so. */
static void on_stop_halt(void* user, int sig, int first) {
  progress* pr = user;
  pthread_mutex_lock(&pr->lock);
  if (pr->writer) ttp_writer_flush(pr->writer);
  fprintf(stderr,
          "%sttapipe: stopped by %s after %s: %zu files done (%zu classified, %zu failed), their "
          "rows in %s; the rest not done\n",
          pr->show ? "\n" : "", cli_signal_name(sig), cli_signal_name(first),
          pr->done, pr->done - pr->failed, pr->failed,
          pr->rows_at ? pr->rows_at : "standard output");
  _exit(128 + sig);
}

/* The paths to classify: with --files-from, --shard or --resume (whole: listed first), the
   arguments (directories walked) then the list, into *list; else the walk is left to
   ttp_classify_paths. */
static int gather(const cli_args* a, int whole, ttp_list_options* lo, ttp_file_list* list) {
  ttp_list_options_init(lo);
  lo->hidden = cli_flag(a, "hidden");
  if (cli_get(a, "ext")) lo->extensions = cli_get(a, "ext");
  const char* from = cli_get(a, "files-from");
  if (a->positional_count == 0 && !from)
    return cli_usage_error(a->command, "no image files or directories given");
  char error[TTP_ERROR_SIZE];
  if ((from || whole) &&
      ttp_list_files((const char* const*)a->positional, (size_t)a->positional_count, lo, list,
                     error, sizeof error) != TTP_OK)
    return cli_fail("%s", error);
  if (from && ttp_read_file_list(from, cli_flag(a, "null"), list, error, sizeof error) != TTP_OK)
    return cli_fail("%s", error);
  return CLI_EXIT_OK;
}

/* --shard I/N, or Slurm's job array task (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of
   SLURM_ARRAY_TASK_COUNT) unless --no-slurm-shard, announced on stderr; *of = 0: no shard. */
static int shard_of(const cli_args* a, long* index, long* of) {
  *index = 0, *of = 0;
  const char* text = cli_get(a, "shard");
  if (text) {
    char tail;
    if (sscanf(text, "%ld/%ld%c", index, of, &tail) != 2 || *of < 1 || *of > 1000000 ||
        *index < 0 || *index >= *of)
      return cli_usage_error(a->command, "--shard must be I/N with 0 <= I < N <= 1000000, not "
                             "'%s'", text);
    return CLI_EXIT_OK;
  }
  const char *id = getenv("SLURM_ARRAY_TASK_ID"), *count = getenv("SLURM_ARRAY_TASK_COUNT");
  const char* min = getenv("SLURM_ARRAY_TASK_MIN");
  if (!id || !count || cli_flag(a, "no-slurm-shard")) return CLI_EXIT_OK;
  long i = strtol(id, NULL, 10) - (min ? strtol(min, NULL, 10) : 0), n = strtol(count, NULL, 10);
  if (n < 1 || i < 0 || i >= n)
    return cli_fail("Slurm's job array (SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_COUNT=%s, "
                    "SLURM_ARRAY_TASK_MIN=%s) is not a shard: give --shard or --no-slurm-shard",
                    id, count, min ? min : "unset");
  *index = i, *of = n;
  fprintf(stderr, "ttapipe: shard %ld/%ld from Slurm's job array (SLURM_ARRAY_TASK_ID=%s); "
                  "--no-slurm-shard classifies every file\n", i, n, id);
  return CLI_EXIT_OK;
}

/* This run's writer on a memory stream, to hold an existing output against: its header, then,
   one path at a time, the error row the writer gives that path (the stream rewound each time:
   one writer for every row). */
typedef struct rows_like {
  FILE* f;
  char* text; /* the stream's buffer: the last thing written, `len` bytes */
  size_t size, len;
  ttp_writer* w;
} rows_like;

/* Opens it; x->text then holds the header (nothing for JSON Lines). 0 on success. */
static int rows_like_open(rows_like* x, ttp_pipeline* p, ttp_format format, int topk,
                          int columns) {
  *x = (rows_like){0};
  if (!(x->f = open_memstream(&x->text, &x->size)) ||
      ttp_writer_open(p, x->f, format, topk, columns, &x->w, NULL, 0) != TTP_OK ||
      ttp_writer_flush(x->w) != TTP_OK)
    return -1;
  x->len = (size_t)ftell(x->f);
  return 0;
}

/* The error row of path, into x->text (x->len bytes). 0 on success. */
static int rows_like_row(rows_like* x, const char* path) {
  rewind(x->f);
  if (ttp_writer_write(x->w, path, NULL, NULL, "x") != TTP_OK || ttp_writer_flush(x->w) != TTP_OK)
    return -1;
  x->len = (size_t)ftell(x->f);
  return 0;
}

static void rows_like_close(rows_like* x) {
  ttp_writer_close(x->w);
  if (x->f) fclose(x->f);
  free(x->text);
}

/* --resume: FILE's whole rows stay (a torn last row, from a run that was killed, is cut off),
   FILE is cut to them, and *done receives the number of entries of `paths` they finish, after
   checking that they are the rows of the list's first entries (the same list, the same
   options). A file's entry is its row; a tar archive's is the rows of its members (paths
   ARCHIVE/MEMBER) or its error row: an archive is finished once a later entry's row follows,
   so the rows of the last archive in FILE are cut off too and that archive classified again.
   A FILE that does not exist or is empty: nothing done. */
static int resume_from(const char* output, ttp_pipeline* p, ttp_format format, int topk,
                       int columns, const char* const* paths, size_t count, size_t* done,
                       int* header_written) {
  *done = 0, *header_written = 0;
  char* text;
  size_t n;
  if (cli_read_whole(output, &text, &n) != 0)
    return errno == ENOENT ? CLI_EXIT_OK : cli_fail("%s: cannot read: %s", output, strerror(errno));
  const int csv = format == TTP_FORMAT_CSV;
  rows_like like;
  int rc = rows_like_open(&like, p, format, topk, columns) == 0 ? CLI_EXIT_OK
                                                              : cli_fail("out of memory");
  size_t at = 0;
  if (rc == CLI_EXIT_OK && csv && n > 0) { /* this run's header (a torn one: written again) */
    const size_t len = like.len;
    const int torn = n < len && memcmp(text, like.text, n) == 0;
    if (!torn && (n < len || memcmp(text, like.text, len) != 0))
      rc = cli_fail("%s: its header is not this run's (other --topk, --probs, --uncertainty or "
                    "model?)", output);
    at = torn ? 0 : len;
    *header_written = !torn;
  }
  /* The part of an error row after its path, the same for every path. */
  if (rc == CLI_EXIT_OK && rows_like_row(&like, "") != 0) rc = cli_fail("out of memory");
  const size_t suffix = like.len - (csv ? 0 : strlen("{\"path\":\"\""));
  size_t archive_at = 0, row = 0; /* where the rows of the archive being matched begin */
  int in_archive = 0;
  while (rc == CLI_EXIT_OK && at < n) {
    const size_t end = cli_row_end(text, n, at, csv);
    if (!end) break; /* torn: cut off */
    const int made = *done < count && rows_like_row(&like, paths[*done]) == 0;
    const size_t prefix = made ? like.len - suffix : 0, left = end - at;
    const int archive =
        made && cli_archive_key(paths[*done], strlen(paths[*done])) == strlen(paths[*done]);
    int mine = made && left >= prefix && memcmp(text + at, like.text, prefix) == 0;
    if (archive) {
      /* The archive's error row (its path, then the row's next field), or a member's row (its
         path, a slash, the member's name). The path's text is compared without what opens it
         ({"path":" in JSON; a CSV cell's quote, which a member's cell may have where the
         archive's has not: a comma in the member's name). */
      const int quoted = prefix > 0 && like.text[prefix - 1] == '"';
      const size_t open = csv ? (size_t)quoted : strlen("{\"path\":\""), close = quoted;
      const size_t row_open = csv ? (size_t)(left > 0 && text[at] == '"') : open;
      const size_t name = prefix - open - close; /* the archive's path as written */
      mine = (mine && (quoted || (left > prefix && text[at + prefix] == ','))) ||
             (made && left > row_open + name && memcmp(text + at, like.text, open) == 0 &&
              memcmp(text + at + row_open, like.text + open, name) == 0 &&
              text[at + row_open + name] == '/');
      if (!mine) { /* a later entry's row: the archive is finished */
        ++*done, in_archive = 0;
        continue;
      }
      if (!in_archive) archive_at = at, in_archive = 1;
      at = end, row++;
      continue;
    }
    if (!mine)
      rc = cli_fail("%s: row %zu is not that of entry %zu of this list (%s): resume with the "
                    "same paths and options (--format, --csv-formulas too)", output, row + 1,
                    *done + 1, *done < count ? paths[*done] : "the list is shorter");
    if (rc == CLI_EXIT_OK) ++*done, at = end, row++;
  }
  if (rc == CLI_EXIT_OK && in_archive) at = archive_at; /* it may not be finished: again */
  rows_like_close(&like);
  free(text);
  if (rc == CLI_EXIT_OK && truncate(output, (off_t)at) != 0)
    rc = cli_fail("%s: cannot cut off its torn row: %s", output, strerror(errno));
  return rc;
}

/* The files path shares the slots between the decode workers and the batches in flight: with 3,
   the workers often have one slot to fill; with 8 they have several (bench_files on the H100,
   2026-11-23, results dropped: 100 to 102% of the decode pool's own rate instead of 94 to 98%),
   for 8 pinned slots of max_batch images (6.3 MB at 1024). */
enum { CLASSIFY_SLOTS = 8 };

/* A job's files where their number is known before the pipeline opens (a list, or files named
   one by one, not directories or tar archives): a job of fewer than a batch of the library's
   default size gets one batch of its size and the ring's least slots, so that the GPU engine
   allocates and captures the graphs of that alone, not 8 slots of 1024 images and every bucket
   up to 1024 (--batch and --slots still decide when given). 0: not known before the walk. */
static size_t known_files(const cli_args* a, int listed, size_t listed_count) {
  if (listed) return listed_count;
  for (int i = 0; i < a->positional_count; i++) {
    struct stat st;
    const char* path = a->positional[i];
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        cli_archive_key(path, strlen(path)) == strlen(path))
      return 0;
  }
  return (size_t)a->positional_count;
}

static void summary(const ttp_bulk_stats* s) {
  fprintf(stderr,
          "ttapipe: %zu of %zu files classified, %zu failed, in %.2f s (%.0f files/s)\n"
          "ttapipe: time: reading %.2f s, decoding %.2f s, preprocessing %.2f s (summed over %d "
          "thread%s); classifying %.2f s, waiting for decoded images %.2f s, writing %.2f s\n",
          s->classified, s->files, s->failed, s->wall_seconds,
          (s->classified + s->failed) / (s->wall_seconds + 1e-9), s->read_seconds, s->decode_seconds,
          s->preprocess_seconds, s->threads, s->threads == 1 ? "" : "s", s->classify_seconds,
          s->waiting_seconds, s->callback_seconds);
}

/* Under MPI with -o FILE, rank r's rows go to FILE.part-r-of-N as they are done (flushed as a
   single process's are), so that a killed job keeps them and --resume under as many ranks
   takes them up; the parts become FILE at the end. malloc'd. */
static char* part_name(const char* output, const cli_job* job) {
  const size_t n = strlen(output) + 48;
  char* name = malloc(n);
  if (name) snprintf(name, n, "%s.part-%d-of-%d", output, job->rank, job->size);
  return name;
}

/* The rows every rank wrote (its part file, or memory: mem, mem_n), dealt back by rank 0 into
   the output (job.h; a file is written under a temporary name and renamed, then the parts are
   removed), and the summary summed over the ranks. A collective: every rank comes here, failed
   or not. stopped: this rank was stopped by a signal (rc is 128 + it): nothing is dealt, the
   parts stay for --resume. */
static int finish_job(const cli_args* a, const cli_job* job, int rc, int stopped, char* mem,
                      size_t mem_n, const char* part, ttp_bulk_stats* stats) {
  const char* output = cli_get(a, "output");
  char* text = NULL; /* this rank's part, read back */
  size_t text_n = 0;
  if (part && rc == CLI_EXIT_OK && cli_read_whole(part, &text, &text_n) != 0)
    rc = cli_fail("%s: cannot read this rank's rows back: %s", part, strerror(errno));
  const int none_stopped = cli_job_all_ok(job, !stopped);
  const int all_ok = cli_job_all_ok(job, rc == CLI_EXIT_OK);
  char shown[1024]; /* the output's name on stderr (ttp_printable) */
  ttp_printable(output, shown, sizeof shown);
  if (!none_stopped && job->rank == 0 && part)
    fprintf(stderr, "ttapipe: interrupted: the ranks' rows are in %s.part-R-of-%d; the same "
            "command with --resume under %d ranks completes them\n", shown, job->size,
            job->size);
  if (!all_ok && rc == CLI_EXIT_OK)
    rc = job->rank == 0 && none_stopped
             ? cli_fail("another rank failed (its message above): no output written")
             : CLI_EXIT_FATAL;
  char* merging = NULL; /* rank 0: the output under its temporary name */
  FILE* out = stdout;
  if (all_ok && job->rank == 0 && output) {
    const size_t n = strlen(output) + 16;
    if ((merging = malloc(n))) snprintf(merging, n, "%s.merging", output);
    if (!merging || !(out = fopen(merging, "w")))
      rc = cli_fail("%s: cannot create: %s", merging ? merging : output, strerror(errno)), out = NULL;
  }
  int dealt = 0;
  if (all_ok && cli_job_all_ok(job, out != NULL || job->rank != 0)) {
    const int r = cli_job_gather_rows(job, part ? text : mem, part ? text_n : mem_n, out,
                                      output ? output : "standard output");
    if (job->rank == 0 && r != CLI_EXIT_OK) rc = r;
    dealt = 1;
  }
  if (out && out != stdout && fclose(out) != 0 && rc == CLI_EXIT_OK)
    rc = cli_fail("%s: writing the results failed: %s", merging, strerror(errno));
  if (merging && rc == CLI_EXIT_OK && rename(merging, output) != 0)
    rc = cli_fail("%s: cannot rename it to %s: %s", merging, output, strerror(errno));
  if (merging && rc != CLI_EXIT_OK) remove(merging);
  free(merging);
  /* The parts go once the output holds their rows. */
  if (dealt && cli_job_all_ok(job, rc == CLI_EXIT_OK) && part) remove(part);
  free(text);
  double sums[9] = {(double)stats->files, (double)stats->classified, (double)stats->failed,
                    stats->read_seconds, stats->decode_seconds, stats->preprocess_seconds,
                    stats->classify_seconds, stats->waiting_seconds, stats->callback_seconds};
  double* walls = calloc((size_t)job->size, sizeof *walls);
  cli_job_sum(job, sums, 9);
  if (walls) cli_job_gather_double(job, stats->wall_seconds, walls);
  const int none_failed = cli_job_all_ok(job, stats->failed == 0);
  if (job->rank == 0 && rc == CLI_EXIT_OK && !cli_flag(a, "quiet")) {
    ttp_bulk_stats total = *stats;
    total.files = (size_t)sums[0], total.classified = (size_t)sums[1], total.failed = (size_t)sums[2];
    total.read_seconds = sums[3], total.decode_seconds = sums[4], total.preprocess_seconds = sums[5];
    total.classify_seconds = sums[6], total.waiting_seconds = sums[7], total.callback_seconds = sums[8];
    for (int r = 0; walls && r < job->size; r++)
      if (walls[r] > total.wall_seconds) total.wall_seconds = walls[r];
    summary(&total);
    fprintf(stderr, "ttapipe: %d ranks (MPI); each rank's time:", job->size);
    for (int r = 0; walls && r < job->size; r++) fprintf(stderr, " %.2f s", walls[r]);
    fprintf(stderr, " (summed times above over the ranks)\n");
  }
  free(walls);
  if (rc == CLI_EXIT_OK && !none_failed) rc = CLI_EXIT_SOME_FAILED;
  return rc;
}

/* The job, its rows through pr (progress: set up by run_classify, with the stop hooks). *stopped:
   a stop signal ended the run (its files done have their rows and a summary). */
static int classify_job(const cli_args* a, const cli_job* job, progress* pr, int* stopped) {
  static const char* const formats[] = {"csv", "jsonl", NULL};
  int format = 0, rc;
  long topk = 1, threads = 0;
  ttp_image_options io;
  long shard = job->rank, shards = job->size > 1 ? job->size : 0;
  const int resume = cli_flag(a, "resume");
  if (job->size > 1 && cli_get(a, "shard"))
    return cli_usage_error(a->command, "under mpirun or srun the ranks are the shards: no --shard");
  if ((rc = cli_get_choice(a, "format", formats, &format)) ||
      (rc = cli_get_long(a, "topk", 1, 1000000, &topk)) ||
      (rc = cli_get_long(a, "threads", 1, 256, &threads)) || (rc = cli_image_options(a, &io)) ||
      (job->size == 1 && (rc = shard_of(a, &shard, &shards))))
    return rc;
  if (resume && !cli_get(a, "output"))
    return cli_usage_error(a->command, "--resume needs -o FILE: the output it resumes");
  if (job->size > 1 && cli_get(a, "report"))
    return cli_usage_error(a->command, "--report is for one process: under mpirun each rank "
                           "sees its own files only");
  const int listed = cli_get(a, "files-from") || shards || resume;
  ttp_file_list list = {0};
  ttp_list_options lo;
  if ((rc = gather(a, listed, &lo, &list))) {
    ttp_file_list_free(&list);
    return rc;
  }
  /* This process's files: shard I of N takes files I, I + N, ... (the pointers, not copies). */
  size_t count = 0;
  const char** paths = listed ? malloc((list.count ? list.count : 1) * sizeof *paths) : NULL;
  if (listed && !paths) {
    ttp_file_list_free(&list);
    return cli_fail("out of memory");
  }
  /* Tar archives are listed whole: an archive is one unit of a shard, and its rows are its
     members' (cli_archive_key). */
  int archives = 0;
  for (size_t i = 0; listed && i < list.count && rc == CLI_EXIT_OK; i++) {
    const size_t key = cli_archive_key(list.paths[i], strlen(list.paths[i]));
    archives |= key == strlen(list.paths[i]);
    if (key && key < strlen(list.paths[i]) && (shards || resume))
      rc = cli_fail("%s: a file under a directory named like a tar archive: its rows would be "
                    "taken for the archive's when shards are merged; rename the directory",
                    list.paths[i]);
    if (!shards || (long)(i % (size_t)shards) == shard) paths[count++] = list.paths[i];
  }
  if (rc != CLI_EXIT_OK) {
    free(paths);
    ttp_file_list_free(&list);
    return rc;
  }
  ttp_pipeline* p = NULL;
  ttp_tta tta;
  const char* output = cli_get(a, "output");
  /* Where this process's rows go: the output, or under MPI this rank's part of it. */
  char* part = job->size > 1 && output ? part_name(output, job) : NULL;
  const char* rows_at = part ? part : output;
  if (job->size > 1 && output && !part) rc = cli_fail("out of memory");
  /* The ranks of an MPI job choose the cudnn engine's algorithms by a fixed rule (cuDNN's
     heuristic, nothing timed), so that every rank computes the same bits; --plan overrides.
     Each rank of a machine takes its own GPU in turn, unless --device or --devices says. */
  /* A CPU engine's ranks never start CUDA. */
  const int on_host = cli_engine_on_host(cli_get(a, "engine"));
  const int gpus = job->size > 1 && !on_host ? ttp_gpu_count() : 0;
  const size_t known = archives ? 0 : known_files(a, listed, count);
  ttp_options library;
  ttp_options_init(&library); /* its default batch: what a small job is smaller than */
  const int small = known > 0 && known < (size_t)library.max_batch;
  /* A GPU engine (or auto where the NVIDIA driver is there) opens behind ttp_open: the walk and
     the decoding of the first files go on while CUDA starts (ttp_options.open_behind). auto on
     a machine without the driver opens a CPU engine at once, whose batches keep their size. */
  const char* engine = cli_get(a, "engine");
  const int behind = !on_host && ((engine && strcmp(engine, "auto") != 0) ||
                                  access("/dev/nvidiactl", F_OK) == 0);
  const double opening = cli_now();
  if (rc == CLI_EXIT_OK)
    rc = cli_open_pipeline(a,
                           (cli_pipeline_defaults){
                               .slots = small ? 2 : CLASSIFY_SLOTS,
                               .batch = small ? (int)known : 0,
                               .plan = job->size > 1 ? TTP_PLAN_HEURISTIC : TTP_PLAN_MEASURE,
                               .device = gpus ? job->local_rank % gpus : 0,
                               /* a directory's files are not counted before it opens: the
                                  graphs of the buckets its batches use, on their first batch */
                               .lazy_graphs = 1,
                               .behind = behind},
                           &p, &tta);
  pthread_mutex_lock(&pr->lock);
  pr->p = p, pr->behind = behind;
  if (!pr->behind) pr->phase = WITH_FILES; /* else at the first row */
  pthread_mutex_unlock(&pr->lock);
  if (rc == CLI_EXIT_OK && topk > ttp_model(p)->classes)
    rc = cli_usage_error(a->command, "--topk must be at most %d, the model's classes",
                         ttp_model(p)->classes);
  const ttp_format fmt = format ? TTP_FORMAT_JSONL : TTP_FORMAT_CSV;
  const int columns = (cli_flag(a, "probs") ? TTP_WRITE_PROBABILITIES : 0) |
                      (cli_flag(a, "uncertainty") ? TTP_WRITE_UNCERTAINTY : 0) |
                      (cli_flag(a, "csv-formulas") ? TTP_WRITE_CSV_FORMULAS : 0);
  size_t done = 0; /* --resume: the files whose rows the output holds already */
  int header_written = 0;
  if (rc == CLI_EXIT_OK && resume)
    rc = resume_from(rows_at, p, fmt, (int)topk, columns, paths, count, &done, &header_written);
  char* mem = NULL; /* a rank's rows without -o: in memory until rank 0 deals them out (job.h) */
  size_t mem_n = 0;
  const int in_memory = job->size > 1 && !rows_at;
  pr->target = (rows_target){.path = rows_at, .append = resume, .header_written = header_written,
                             .in_memory = in_memory, .format = fmt, .topk = (int)topk,
                             .columns = columns, .mem = &mem, .mem_n = &mem_n};
  char rows_shown[1024]; /* rows_at on stderr (ttp_printable) */
  ttp_printable(rows_at, rows_shown, sizeof rows_shown);
  if (rc == CLI_EXIT_OK && resume && !cli_flag(a, "quiet"))
    fprintf(stderr, "ttapipe: %s holds the rows of %zu of %zu %s: classifying the other %zu\n",
            rows_shown, done, count, archives ? "entries (a tar archive is one)" : "files",
            count - done);
  ttp_bulk_stats stats = {.struct_size = sizeof stats};
  int quiet = cli_flag(a, "quiet");
  const char* report_path = cli_get(a, "report");
  files_report* report = NULL;
  if (rc == CLI_EXIT_OK && report_path && !(report = files_report_new(ttp_model(p)->classes)))
    rc = cli_fail("out of memory");
  if (rc == CLI_EXIT_OK) {
    pthread_mutex_lock(&pr->lock);
    pr->report = report, pr->total = archives ? 0 : count - done;
    pr->show = isatty(2) && !quiet && job->rank == 0, pr->start = cli_now();
    pr->rows_at = rows_at ? rows_shown : NULL;
    pthread_mutex_unlock(&pr->lock);
    if (cli_stop_signal()) ttp_cancel(p); /* one came before: the run stops at once */
    /* A list: the job's; directories alone otherwise, walked while their first files are
       decoded and classified. */
    ttp_status s = listed ? ttp_classify_files(p, paths + done, count - done, &io, (int)threads,
                                               on_file, pr, &stats)
                          : ttp_classify_paths(p, (const char* const*)a->positional,
                                               (size_t)a->positional_count, &lo, &io,
                                               (int)threads, on_file, pr, &stats);
    const int sig = cli_stop_signal();
    pthread_mutex_lock(&pr->lock);
    const int show = pr->show;
    pr->show = 0;
    if (show) fprintf(stderr, "\n");
    /* A run without a row (no file, or stopped before the first): its output all the same */
    if (!pr->writer && !pr->target_failed && (s == TTP_OK || (s == TTP_ERR_CANCELLED && sig)))
      pr->target_failed = open_rows(pr);
    if (pr->target_failed) {
      rc = pr->target_failed; /* said when it failed; the run was cancelled for it */
    } else if (s == TTP_ERR_CANCELLED && sig) {
      fprintf(stderr,
              "ttapipe: interrupted by %s: %zu of %zu files done (%zu classified, %zu failed), "
              "%zu not done\n",
              cli_signal_name(sig), stats.classified + stats.failed, stats.files,
              stats.classified, stats.failed, stats.files - stats.classified - stats.failed);
      rc = 128 + sig;
      *stopped = 1;
    } else if (s != TTP_OK) {
      /* settings the engine refused as it opened behind: the user's to fix, as ttp_open's */
      char why[TTP_ERROR_SIZE];
      snprintf(why, sizeof why, "%s", ttp_last_error(p));
      rc = s == TTP_ERR_INVALID_ARGUMENT && ttp_wait_open(p) == s
               ? cli_usage_error(a->command, "%s", why)
               : cli_fail("%s", why);
    }
    if (pr->writer && (ttp_writer_close(pr->writer) != TTP_OK || pr->write_failed))
      rc = cli_fail("%s: writing the results failed", rows_at ? rows_shown : "standard output");
    pr->writer = NULL;
    pthread_mutex_unlock(&pr->lock);
  }
  FILE* out = pr->target.file;
  if (out && out != stdout && fclose(out) != 0 && !in_memory && rc == CLI_EXIT_OK)
    rc = cli_fail("%s: writing the results failed: %s", rows_at, strerror(errno));
  if (report && (rc == CLI_EXIT_OK || *stopped)) { /* what was classified, these inputs named */
    char inputs[1024] = "";
    size_t n = 0;
    for (int i = 0; i < a->positional_count && n < sizeof inputs; i++)
      n += (size_t)snprintf(inputs + n, sizeof inputs - n, "%s%s", i ? " " : "", a->positional[i]);
    if (cli_get(a, "files-from") && n < sizeof inputs)
      snprintf(inputs + n, sizeof inputs - n, "%sthe files listed in %s", n ? ", " : "",
               cli_get(a, "files-from"));
    const int written = files_report_write(report, report_path, p, &io, &stats, inputs);
    if (written != CLI_EXIT_OK && rc == CLI_EXIT_OK) rc = written;
  }
  files_report_free(report);
  if (job->size > 1) {
    rc = finish_job(a, job, rc, *stopped, mem, mem_n, part, &stats);
  } else {
    if ((rc == CLI_EXIT_OK || *stopped) && !quiet) summary(&stats);
    if (rc == CLI_EXIT_OK && stats.failed) rc = CLI_EXIT_SOME_FAILED;
  }
  free(mem);
  free(part);
  pthread_mutex_lock(&pr->lock);
  pr->p = NULL;
  pthread_mutex_unlock(&pr->lock);
  /* A run stopped by a signal ends the process at once (run_classify): the driver frees a GPU's
     memory at the exit sooner than ttp_close and CUDA's teardown would. */
  const double finished = cli_now();
  pr->on_gpu = cli_pipeline_on_gpu(p);
  /* Opened behind: when it was open, said now rather than waited for before the files */
  ttp_startup t = {.struct_size = sizeof t};
  const double opened =
      p && ttp_get_startup(p, &t) == TTP_OK ? opening + t.model_s + t.engine_s : opening;
  if (p && pr->behind && cli_flag(a, "verbose")) cli_print_opening(p);
  if (!*stopped) ttp_close(p);
  if (cli_flag(a, "verbose") && rc != CLI_EXIT_USAGE && pr->first_row > 0) {
    const double closed = cli_now(), at = cli_started;
    fprintf(stderr, "ttapipe: wall %.1f ms from the command's start: opened at %.1f ms, the first "
            "row at %.1f ms, the last at %.1f ms, closed at %.1f ms\n", 1e3 * (closed - at),
            1e3 * (opened - at), 1e3 * (pr->first_row - at), 1e3 * (finished - at),
            1e3 * (closed - at));
    if (stats.opening_seconds > 0)
      fprintf(stderr, "ttapipe: %zu files decoded while the engine opened; the files call "
              "waited %.1f ms for it\n", stats.opening_files, 1e3 * stats.opening_seconds);
  }
  free(paths);
  ttp_file_list_free(&list);
  return rc;
}

/* The stop thread first (stop.h): every thread made after it, MPI's included, leaves the
   signals to it; its hooks hold from the start (a second request while the model loads ends the
   process) to the end. A run stopped by a signal exits without tearing the engine down: its
   rows and summary are out, and every moment counts under a scheduler's grace period. */
static int run_classify(const cli_args* a) {
  cli_stop_start();
  progress pr = {0};
  pthread_mutex_init(&pr.lock, NULL);
  const cli_stop_hooks hooks = {on_stop_request, on_stop_halt, on_stop_tick, &pr};
  cli_stop_hooks_set(&hooks);
  cli_job job;
  cli_job_start(&job);
  int stopped = 0;
  const int rc = classify_job(a, &job, &pr, &stopped);
  cli_job_end(&job);
  /* Every row, report and summary is out and the pipeline closed: what is left is CUDA's own
     teardown at exit (the context and its modules), which the driver does sooner when the
     process just ends. A stopped run ends so too. */
  if (stopped || pr.on_gpu) {
    fflush(NULL);
    _exit(rc);
  }
  cli_stop_hooks_set(NULL);
  cli_stop_end();
  pthread_mutex_destroy(&pr.lock);
  return rc;
}

const cli_command cli_classify = {
    .name = "classify",
    .usage = "--model PATH [options] PATH...",
    .summary = "Classify image files (PNG, JPEG, BMP, PGM/PPM), directories walked recursively.",
    .details = "One row per file, in order: sorted paths within each directory, the given order\n"
               "otherwise. CSV columns: path,status,class,label,probability (+ top-k, + spread and\n"
               "probabilities with --probs, + entropy,mutual_information,agreement with\n"
               "--uncertainty); status is 'ok' or that file's error, and the other\n"
               "files go on. Text that could drive a terminal is written \\xHH (control bytes,\n"
               "bytes that are not UTF-8; in CSV paths and labels backslashes too), and a CSV\n"
               "cell that begins with = + - @ or ' gets a leading ' (not with --csv-formulas).\n"
               "--threads sets the decoding threads too (default: one per core).\n"
               "Exit status: 0 all classified, 1 fatal error, 2 usage error, 3 some files failed;\n"
               "SIGINT, SIGTERM or SIGHUP stop it within a second, the rows of the files done\n"
               "written whole, with 130, 143 or 129; the same signal again within a second is\n"
               "the same request, another one ends it at the next row. Rows reach the file\n"
               "at least every second.",
    .options = classify_options,
    .max_positional = -1,
    .run = run_classify,
    .aliases = classify_aliases,
};
