/* ttapipe classify: image files and directories to one result row per file, in a deterministic
   order (sorted paths within each directory, the given order otherwise). A file that cannot be
   read or decoded is an error row; every other file goes on. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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
    {"invert", "MODE", "auto|yes|no: make strokes light on black (default auto: invert "
                       "when the border is light)"},
    {"center", "MODE", "none|mnist: resize the whole image, or crop to the ink, fit 20x20 and "
                       "centre its mass, as MNIST was made (default none)"},
    {"max-size", "WxH", "refuse images larger than this, up to 8192x8192 (the default)"},
    {"quiet", NULL, "no progress line and no summary on stderr"},
    {NULL, NULL, NULL},
};

static const char* const classify_aliases[] = {"-o", "output", "-0", "null", NULL};

typedef struct progress {
  ttp_writer* writer;
  size_t total, done, failed;
  int show;           /* a progress line: stderr is a terminal and not --quiet */
  int write_failed;
  double start, shown;
} progress;

static void on_file(void* user, size_t index, const char* path, const ttp_result* result,
                    const float* probabilities, const char* error) {
  (void)index;
  progress* pr = user;
  if (ttp_writer_write(pr->writer, path, result, probabilities, error) != TTP_OK)
    pr->write_failed = 1;
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
}

/* The paths to classify: with --files-from, the arguments (directories walked) then the list,
   into *list; without, the walk is left to ttp_classify_paths. */
static int gather(const cli_args* a, ttp_list_options* lo, ttp_file_list* list) {
  ttp_list_options_init(lo);
  lo->hidden = cli_flag(a, "hidden");
  if (cli_get(a, "ext")) lo->extensions = cli_get(a, "ext");
  const char* from = cli_get(a, "files-from");
  if (a->positional_count == 0 && !from)
    return cli_usage_error(a->command, "no image files or directories given");
  char error[TTP_ERROR_SIZE];
  if (from && (ttp_list_files((const char* const*)a->positional, (size_t)a->positional_count, lo,
                              list, error, sizeof error) != TTP_OK ||
               ttp_read_file_list(from, cli_flag(a, "null"), list, error, sizeof error) != TTP_OK))
    return cli_fail("%s", error);
  return CLI_EXIT_OK;
}

static int image_options(const cli_args* a, ttp_image_options* o) {
  static const char* const inverts[] = {"auto", "yes", "no", NULL};
  static const char* const centers[] = {"none", "mnist", NULL};
  static const ttp_invert invert_ids[] = {TTP_INVERT_AUTO, TTP_INVERT_YES, TTP_INVERT_NO};
  static const ttp_center center_ids[] = {TTP_CENTER_NONE, TTP_CENTER_MNIST};
  int invert = 0, center = 0, rc;
  ttp_image_options_init(o);
  if ((rc = cli_get_choice(a, "invert", inverts, &invert)) ||
      (rc = cli_get_choice(a, "center", centers, &center)))
    return rc;
  o->invert = invert_ids[invert];
  o->center = center_ids[center];
  const char* size = cli_get(a, "max-size");
  if (size) {
    char tail;
    if (sscanf(size, "%dx%d%c", &o->max_width, &o->max_height, &tail) != 2 || o->max_width < 1 ||
        o->max_height < 1 || o->max_width > 8192 || o->max_height > 8192)
      return cli_usage_error(a->command, "--max-size must be WxH, each 1..8192, not '%s'", size);
  }
  return CLI_EXIT_OK;
}

/* The files path shares the slots between the decode workers and the batches in flight: with 3,
   the workers often have one slot to fill; with 8 they have several (bench_files on the H100,
   2026-11-23, results dropped: 100 to 102% of the decode pool's own rate instead of 94 to 98%),
   for 8 pinned slots of max_batch images (6.3 MB at 1024). */
enum { CLASSIFY_SLOTS = 8 };

static void summary(const ttp_bulk_stats* s) {
  fprintf(stderr,
          "ttapipe: %zu of %zu files classified, %zu failed, in %.2f s (%.0f files/s)\n"
          "ttapipe: time: reading %.2f s, decoding %.2f s, preprocessing %.2f s (summed over %d "
          "thread%s); classifying %.2f s, waiting for decoded images %.2f s, writing %.2f s\n",
          s->classified, s->files, s->failed, s->wall_seconds,
          s->files / (s->wall_seconds + 1e-9), s->read_seconds, s->decode_seconds,
          s->preprocess_seconds, s->threads, s->threads == 1 ? "" : "s", s->classify_seconds,
          s->waiting_seconds, s->callback_seconds);
}

/* SIGINT, SIGTERM and SIGHUP while the files are classified: the first asks the pipeline to
   stop after the batches in flight (ttp_cancel: async-signal-safe) and puts the signal back to
   its default (SA_RESETHAND), so that a second one ends the process at once. The rows of the files done are
   written whole, the summary says what was not done, and the exit status is 128 + the signal. */
static ttp_pipeline* volatile cancel_target;
static volatile sig_atomic_t caught_signal;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { STOP_SIGNALS = sizeof stop_signals / sizeof stop_signals[0] };

static void on_stop_signal(int sig) {
  if (!caught_signal) caught_signal = sig;
  ttp_pipeline* p = cancel_target;
  if (p) ttp_cancel(p);
}

/* Installs the handler (p) or puts back what was there before (NULL). A signal ignored when
   the command started stays ignored (nohup's SIGHUP, a background job's SIGINT). */
static void catch_stop_signals(ttp_pipeline* p) {
  static struct sigaction before[STOP_SIGNALS];
  cancel_target = p;
  for (int i = 0; i < STOP_SIGNALS; i++) {
    if (!p) {
      sigaction(stop_signals[i], &before[i], NULL);
      continue;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND;
    sigaction(stop_signals[i], NULL, &before[i]);
    if (before[i].sa_handler != SIG_IGN) sigaction(stop_signals[i], &sa, NULL);
  }
}

static const char* signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

static int run_classify(const cli_args* a) {
  static const char* const formats[] = {"csv", "jsonl", NULL};
  int format = 0, rc;
  long topk = 1, threads = 0;
  ttp_image_options io;
  if ((rc = cli_get_choice(a, "format", formats, &format)) ||
      (rc = cli_get_long(a, "topk", 1, 1000000, &topk)) ||
      (rc = cli_get_long(a, "threads", 1, 256, &threads)) || (rc = image_options(a, &io)))
    return rc;
  ttp_file_list list = {0};
  ttp_list_options lo;
  if ((rc = gather(a, &lo, &list))) {
    ttp_file_list_free(&list);
    return rc;
  }
  ttp_pipeline* p = NULL;
  ttp_tta tta;
  FILE* out = stdout;
  ttp_writer* writer = NULL;
  char error[TTP_ERROR_SIZE];
  const char* output = cli_get(a, "output");
  rc = cli_open_pipeline(a, CLASSIFY_SLOTS, &p, &tta);
  if (rc == CLI_EXIT_OK && topk > ttp_model(p)->classes)
    rc = cli_usage_error(a->command, "--topk must be at most %d, the model's classes",
                         ttp_model(p)->classes);
  if (rc == CLI_EXIT_OK && output && !(out = fopen(output, "w")))
    rc = cli_fail("%s: cannot create: %s", output, strerror(errno));
  if (rc == CLI_EXIT_OK &&
      ttp_writer_open(p, out, format ? TTP_FORMAT_JSONL : TTP_FORMAT_CSV, (int)topk,
                      cli_flag(a, "probs"), &writer, error, sizeof error) != TTP_OK)
    rc = cli_fail("%s", error);
  ttp_bulk_stats stats = {.struct_size = sizeof stats};
  int quiet = cli_flag(a, "quiet");
  if (rc == CLI_EXIT_OK) {
    progress pr = {writer, list.count, 0, 0, isatty(2) && !quiet, 0, cli_now(), 0};
    caught_signal = 0;
    catch_stop_signals(p);
    /* Directories alone: walked while their first files are classified. */
    ttp_status s = cli_get(a, "files-from")
        ? ttp_classify_files(p, (const char* const*)list.paths, list.count, &io, (int)threads,
                             on_file, &pr, &stats)
        : ttp_classify_paths(p, (const char* const*)a->positional, (size_t)a->positional_count,
                             &lo, &io, (int)threads, on_file, &pr, &stats);
    catch_stop_signals(NULL);
    if (s == TTP_ERR_CANCELLED && caught_signal) {
      if (pr.show) fprintf(stderr, "\n");
      pr.show = 0;
      fprintf(stderr,
              "ttapipe: interrupted by %s: %zu of %zu files done (%zu classified, %zu failed), "
              "%zu not done\n",
              signal_name(caught_signal), stats.classified + stats.failed, stats.files,
              stats.classified, stats.failed, stats.files - stats.classified - stats.failed);
      rc = 128 + caught_signal;
    } else if (s != TTP_OK) {
      rc = cli_fail("%s", ttp_last_error(p));
    }
    if (pr.show) fprintf(stderr, "\n");
    if (ttp_writer_close(writer) != TTP_OK || pr.write_failed)
      rc = cli_fail("%s: writing the results failed", output ? output : "standard output");
    writer = NULL;
  }
  ttp_writer_close(writer);
  if (out != stdout && out && fclose(out) != 0 && rc == CLI_EXIT_OK)
    rc = cli_fail("%s: writing the results failed: %s", output, strerror(errno));
  const int stopped = caught_signal && rc == 128 + caught_signal; /* the files done: a summary too */
  if ((rc == CLI_EXIT_OK || stopped) && !quiet) summary(&stats);
  if (rc == CLI_EXIT_OK && stats.failed) rc = CLI_EXIT_SOME_FAILED;
  ttp_close(p);
  ttp_file_list_free(&list);
  return rc;
}

const cli_command cli_classify = {
    .name = "classify",
    .usage = "--model PATH [options] PATH...",
    .summary = "Classify image files (PNG, JPEG, BMP, PGM/PPM), directories walked recursively.",
    .details = "One row per file, in order: sorted paths within each directory, the given order\n"
               "otherwise. CSV columns: path,status,class,label,probability (+ top-k, + spread and\n"
               "probabilities with --probs); status is 'ok' or that file's error, and the other\n"
               "files go on. --threads sets the decoding threads too (default: one per core).\n"
               "Exit status: 0 all classified, 1 fatal error, 2 usage error, 3 some files failed;\n"
               "SIGINT, SIGTERM or SIGHUP stop it after the batches in flight, the rows of the\n"
               "files done written whole, with 130, 143 or 129 (a second signal ends it at once).",
    .options = classify_options,
    .max_positional = -1,
    .run = run_classify,
    .aliases = classify_aliases,
};
