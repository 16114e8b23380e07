/* ttp_classify_files on 601 files (three chunks of the CPU engine's 256; 263, two chunks, in
   the sanitized build) mixing good images of several formats and sizes with bad files: the
   callback sees every file once, in order; a good file's result and probabilities equal
   ttp_load_image + ttp_classify of that file alone, bit for bit; a bad file gets its error; one
   decoding thread or seven give the same; the stats count right; ttp_cancel, before a call and
   during one (from the callback, as a signal handler would), stops it with the files reported
   a prefix of a whole run's. With ttp_options.open_behind the files decoded while the engine
   opens give the same rows, listed or walked, the batch holds max_batch images (past the CPU
   engines' 256), and an engine that cannot open fails the first call that needs it with
   ttp_open's message, no file reported. */
#include <stddef.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { FILES = TEST_SIZE(601, 263), CLASSES = 10 };

typedef struct seen {
  size_t calls, next;
  ttp_result results[FILES];
  float probs[FILES][CLASSES];
  int failed[FILES];
  char first_error[TTP_ERROR_SIZE];
} seen;

/* A pipeline whose engine opens behind ttp_open (open_behind): 3 copies, batches of max_batch;
   engine and device as given. ttp_open's status into *status. */
static ttp_pipeline* open_behind(const char* dir, ttp_engine engine, int device, int max_batch,
                                 ttp_status* status) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 3;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir, o.engine = engine, o.device = device, o.tta = &tta;
  o.max_batch = max_batch, o.open_behind = 1, o.plan = TTP_PLAN_HEURISTIC, o.plan_cache = "";
  ttp_pipeline* p = NULL;
  *status = ttp_open(&o, &p);
  return p;
}

static ttp_pipeline* cancel_p;   /* on_file_then_cancel: the pipeline to stop */
static size_t cancel_at;          /* ... after this file is reported */

static void on_file(void* user, size_t index, const char* path, const ttp_result* r,
                    const float* probs, const char* error) {
  seen* s = user;
  CHECK(index == s->next, "file %zu reported when %zu was due (%s)", index, s->next, path);
  s->next++, s->calls++;
  CHECK((r && probs && !error) || (!r && !probs && error), "file %zu: mixed outcome", index);
  if (error) {
    s->failed[index] = 1;
    if (!s->first_error[0]) snprintf(s->first_error, sizeof s->first_error, "%s", error);
    CHECK(strstr(error, path), "error \"%s\" does not name %s", error, path);
  } else {
    s->results[index] = *r;
    memcpy(s->probs[index], probs, sizeof s->probs[index]);
  }
}

/* on_file, and a cancel request (as a signal handler would make) once file cancel_at is in. */
static void on_file_then_cancel(void* user, size_t index, const char* path, const ttp_result* r,
                                const float* probs, const char* error) {
  on_file(user, index, path, r, probs, error);
  if (index == cancel_at) ttp_cancel(cancel_p);
}

int main(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  fixture_model_dir(dir, 4);
  char** paths = malloc(FILES * sizeof *paths);
  int bad[FILES] = {0};
  uint8_t px[64 * 48 * 4];
  for (int i = 0; i < FILES; i++) {
    char name[64];
    int kind = i % 7;
    snprintf(name, sizeof name, "f%03d.%s", i, kind == 3 ? "jpg" : kind == 4 ? "bmp" : kind == 5 ? "pgm" : "png");
    paths[i] = strdup(test_path(dir, name));
    int w = 20 + i % 45, h = 28 + i % 20, channels = 1 + i % 4;
    fixture_drawing(px, w, h, channels, i % 2, (uint64_t)i);
    if (kind == 6 && i % 3 == 0) { /* bad: random bytes, or nothing at all */
      test_write_file(paths[i], px, (size_t)(i % 2) * 100);
      bad[i] = 1;
    } else if (kind == 3) {
      fixture_jpg(paths[i], w, h, channels == 2 ? 1 : channels == 4 ? 3 : channels, px);
    } else if (kind == 4) {
      fixture_bmp(paths[i], w, h, channels == 2 ? 1 : channels, px);
    } else if (kind == 5) {
      fixture_drawing(px, w, h, 1, i % 2, (uint64_t)i);
      fixture_pgm(paths[i], h, w, 255, px);
    } else {
      fixture_png(paths[i], w, h, channels, px);
    }
  }
  free(paths[FILES - 1]); /* the last one does not exist */
  paths[FILES - 1] = strdup(test_path(dir, "missing.png"));
  bad[FILES - 1] = 1;

  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 3;
  ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, &tta);
  ttp_image_options io;
  ttp_image_options_init(&io);
  io.center = TTP_CENTER_MNIST;

  static seen one, seven;
  ttp_bulk_stats st = {.struct_size = sizeof st};
  CHECK(ttp_classify_files(p, (const char* const*)paths, FILES, &io, 1, on_file, &one, &st) == TTP_OK,
        "%s", ttp_last_error(p));
  size_t want_bad = 0;
  for (int i = 0; i < FILES; i++) want_bad += bad[i];
  CHECK(one.calls == FILES && st.files == FILES && st.failed == want_bad &&
            st.classified == FILES - want_bad && st.threads == 1,
        "stats: %zu calls, %zu files, %zu classified, %zu failed (want %zu failed)", one.calls,
        st.files, st.classified, st.failed, want_bad);
  CHECK(st.read_seconds > 0 && st.decode_seconds > 0 && st.classify_seconds > 0 &&
            st.wall_seconds > 0, "times not measured");
  for (int i = 0; i < FILES; i++) CHECK(one.failed[i] == bad[i], "file %d: failed %d, want %d", i, one.failed[i], bad[i]);

  CHECK(ttp_classify_files(p, (const char* const*)paths, FILES, &io, 7, on_file, &seven, NULL) ==
            TTP_OK, "%s", ttp_last_error(p));
  CHECK(memcmp(one.results, seven.results, sizeof one.results) == 0 &&
            memcmp(one.probs, seven.probs, sizeof one.probs) == 0, "1 and 7 threads differ");

  /* Each good file alone, through the single-image calls. */
  for (int i = 0; i < FILES; i += 13) {
    if (bad[i]) continue;
    uint8_t image[784];
    char error[TTP_ERROR_SIZE];
    ttp_result r;
    float probs[CLASSES];
    CHECK(ttp_load_image(paths[i], &io, 28, 28, image, error, sizeof error) == TTP_OK, "%s", error);
    CHECK(ttp_classify(p, image, 1, &r, probs) == TTP_OK, "%s", ttp_last_error(p));
    CHECK(memcmp(&r, &one.results[i], sizeof r) == 0 && memcmp(probs, one.probs[i], sizeof probs) == 0,
          "file %d alone differs from its bulk result", i);
  }
  /* ttp_cancel: asked before the call, it stops it before its first batch, and lasts one call;
     asked during the call, it returns TTP_ERR_CANCELLED with the files reported a prefix of a
     whole run's (how many depends on the batches already in flight: all of them, at times). */
  static seen before, after, stopped;
  ttp_bulk_stats cs = {.struct_size = sizeof cs};
  ttp_cancel(p);
  CHECK(ttp_classify_files(p, (const char* const*)paths, FILES, &io, 2, on_file, &before, &cs) ==
            TTP_ERR_CANCELLED && before.calls == 0 && cs.classified + cs.failed == 0 &&
            strstr(ttp_last_error(p), "cancelled"),
        "a cancel before the call: %zu files reported, \"%s\"", before.calls, ttp_last_error(p));
  CHECK(ttp_classify_files(p, (const char* const*)paths, 5, &io, 2, on_file, &after, NULL) ==
            TTP_OK && after.calls == 5, "the call after a cancelled one: %s", ttp_last_error(p));
  cancel_p = p, cancel_at = 17;
  CHECK(ttp_classify_files(p, (const char* const*)paths, FILES, &io, 2, on_file_then_cancel,
                           &stopped, &cs) == TTP_ERR_CANCELLED,
        "a cancel during the call: %s", ttp_last_error(p));
  CHECK(stopped.calls > cancel_at && stopped.calls <= FILES &&
            cs.classified + cs.failed == stopped.calls && cs.files == FILES,
        "cancelled: %zu files reported, stats %zu + %zu of %zu", stopped.calls, cs.classified,
        cs.failed, cs.files);
  CHECK(memcmp(stopped.results, one.results, stopped.calls * sizeof *one.results) == 0 &&
            memcmp(stopped.failed, one.failed, stopped.calls * sizeof *one.failed) == 0,
        "the files reported before the cancel differ from a whole run's");

  /* Decoded while the engine opens: a list in chunks of 300 (more than the CPU engines' 256:
     the batch holds max_batch) and 7 threads, and the directory walked in chunks of 100 (its
     sorted files are the list's, but for the last: the file written as f600, listed as a
     missing one). */
  static seen listed, walked;
  ttp_status opened;
  ttp_pipeline* b = open_behind(dir, TTP_ENGINE_CPU, 0, 300, &opened);
  CHECK(opened == TTP_OK, "open_behind: %s", ttp_last_error(b));
  ttp_bulk_stats bs = {.struct_size = sizeof bs};
  enum { LISTED = TEST_SIZE(FILES, 90) }; /* the sanitized build: a part, for the time */
  CHECK(ttp_classify_files(b, (const char* const*)paths, LISTED, &io, 7, on_file, &listed, &bs) ==
            TTP_OK && listed.calls == LISTED, "open_behind, listed: %s", ttp_last_error(b));
  CHECK(bs.opening_seconds > 0 && bs.opening_files <= LISTED && bs.files == LISTED,
        "open_behind's stats: waited %g s, %zu files decoded meanwhile", bs.opening_seconds,
        bs.opening_files);
  CHECK(ttp_batch_capacity(b) == 300, "open_behind: batches of %zu, not max_batch's 300",
        ttp_batch_capacity(b));
  CHECK(memcmp(one.results, listed.results, LISTED * sizeof *one.results) == 0 &&
            memcmp(one.probs, listed.probs, LISTED * sizeof *one.probs) == 0 &&
            memcmp(one.failed, listed.failed, LISTED * sizeof *one.failed) == 0,
        "open_behind, listed: the rows differ from the engine opened first");
  ttp_close(b);
  b = open_behind(dir, TTP_ENGINE_CPU, 0, 100, &opened);
  CHECK(opened == TTP_OK, "open_behind: %s", ttp_last_error(b));
  ttp_list_options lo;
  ttp_list_options_init(&lo);
  const char* const walk[] = {dir};
  /* stats of the first version's size (a caller built with an older header): filled so far */
  ttp_bulk_stats old = {.struct_size = offsetof(ttp_bulk_stats, opening_seconds)};
  CHECK(ttp_classify_paths(b, walk, 1, &lo, &io, 3, on_file, &walked, &old) == TTP_OK &&
            old.struct_size == offsetof(ttp_bulk_stats, opening_seconds) && old.files == FILES &&
            walked.calls == FILES, "open_behind, walked: %zu files, %s", walked.calls,
        ttp_last_error(b));
  CHECK(memcmp(one.results, walked.results, (FILES - 1) * sizeof *one.results) == 0 &&
            memcmp(one.probs, walked.probs, (FILES - 1) * sizeof *one.probs) == 0 &&
            memcmp(one.failed, walked.failed, (FILES - 1) * sizeof *one.failed) == 0,
        "open_behind, walked: the rows differ from the list's");
  ttp_close(b);
  /* An engine that cannot open (cudnn on device 1023: no such GPU, or no GPU at all): ttp_open
     returns at once, the first call that needs the engine fails with its message, before any
     file is reported, and so does every later one. */
  static seen never;
  b = open_behind(dir, TTP_ENGINE_CUDNN, 1023, 64, &opened);
  CHECK(opened == TTP_OK, "open_behind returned the engine's failure: %s", ttp_last_error(b));
  const ttp_status failed =
      ttp_classify_files(b, (const char* const*)paths, FILES, &io, 2, on_file, &never, NULL);
  char message[TTP_ERROR_SIZE];
  snprintf(message, sizeof message, "%s", ttp_last_error(b));
  CHECK(failed != TTP_OK && failed != TTP_ERR_INTERNAL && never.calls == 0 && message[0],
        "an engine that cannot open: status %d, %zu files reported, \"%s\"", (int)failed,
        never.calls, message);
  CHECK(ttp_wait_open(b) == failed && strcmp(ttp_last_error(b), message) == 0,
        "ttp_wait_open: \"%s\", not the files call's \"%s\"", ttp_last_error(b), message);
  uint8_t blank[784] = {1};
  ttp_result r1;
  CHECK(ttp_classify(b, blank, 1, &r1, NULL) == failed && strcmp(ttp_last_error(b), message) == 0,
        "ttp_classify after a failed opening: \"%s\"", ttp_last_error(b));
  CHECK(ttp_batch_capacity(b) == 0, "a pipeline whose engine failed has a batch");
  ttp_close(b);
  /* The same engine opened in ttp_open gives the same status and message. */
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir, o.engine = TTP_ENGINE_CUDNN, o.device = 1023, o.max_batch = 64;
  o.plan = TTP_PLAN_HEURISTIC, o.plan_cache = "";
  ttp_tta three;
  ttp_tta_init(&three);
  three.copies = 3;
  o.tta = &three;
  CHECK(ttp_open(&o, &b) == failed && strcmp(ttp_last_error(b), message) == 0,
        "ttp_open of the same engine: \"%s\", behind: \"%s\"", ttp_last_error(b), message);
  ttp_close(b);

  static seen none;
  CHECK(ttp_classify_files(p, NULL, 0, NULL, 0, on_file, &none, NULL) == TTP_OK && none.calls == 0,
        "no files");
  CHECK(ttp_classify_files(p, (const char* const*)paths, 1, NULL, 0, NULL, NULL, NULL) ==
            TTP_ERR_INVALID_ARGUMENT, "no callback accepted");
  ttp_close(p);
  for (int i = 0; i < FILES; i++) free(paths[i]);
  free(paths);
  test_remove_tree(dir);
  printf("bulk: %d files in order, results as alone, errors where due\n", FILES);
  return 0;
}
