/* ttp_classify_files on 601 files (three chunks of the CPU engine's 256; 263, two chunks, in
   the sanitized build) mixing good images of several formats and sizes with bad files: the
   callback sees every file once, in order; a good file's result and probabilities equal
   ttp_load_image + ttp_classify of that file alone, bit for bit; a bad file gets its error; one
   decoding thread or seven give the same; the stats count right; ttp_cancel, before a call and
   during one (from the callback, as a signal handler would), stops it with the files reported
   a prefix of a whole run's. */
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
