/* ttp_cancel reaches the CPU engines inside a batch: a call stops between images (cpu) or tiles
   (onednn, where the build has it), not after the batch. Each engine, 64 copies an image so
   that one batch takes seconds: ttp_classify of 1,000 images and ttp_classify_files of 300 PNG
   files, cancelled from another thread at random moments (the delays printed), return
   TTP_ERR_CANCELLED within STOP_BOUND seconds of the request; the files reported are the
   first ones, in order; the request is spent (the next call runs whole, and its results equal
   those of a call that was never cancelled). */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { IMAGES = 1000, FILES = 300, COPIES = 64, SIDE = 28, AFTER = TEST_SIZE(100, 6) };
#define STOP_BOUND TEST_SIZE(0.25, 2.0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct canceller {
  ttp_pipeline* p;
  double delay, at; /* seconds after the start; when ttp_cancel was called */
} canceller;

static void* cancel_later(void* arg) {
  canceller* c = arg;
  const struct timespec wait = {(time_t)c->delay, (long)((c->delay - (time_t)c->delay) * 1e9)};
  nanosleep(&wait, NULL);
  c->at = now();
  ttp_cancel(c->p);
  return NULL;
}

typedef struct seen {
  size_t next;
} seen;

static void on_file(void* user, size_t index, const char* path, const ttp_result* r,
                    const float* probs, const char* error) {
  (void)r, (void)probs;
  seen* s = user;
  CHECK(index == s->next, "file %zu (%s) reported when %zu was due", index, path, s->next);
  CHECK(!error, "%s: %s", path, error);
  s->next++;
}

/* A call cancelled after `delay` s: its status, and how long after the request it returned. */
static ttp_status cancelled_call(ttp_pipeline* p, double delay, int files, const char* const* paths,
                                 const uint8_t* images, ttp_result* results, double* took,
                                 seen* s) {
  canceller c = {p, delay, 0};
  pthread_t id;
  CHECK(pthread_create(&id, NULL, cancel_later, &c) == 0, "thread");
  ttp_status st;
  if (files) {
    ttp_image_options o;
    ttp_image_options_init(&o);
    st = ttp_classify_files(p, paths, FILES, &o, 1, on_file, s, NULL);
  } else {
    st = ttp_classify(p, images, IMAGES, results, NULL);
  }
  const double end = now();
  pthread_join(id, NULL);
  *took = end - c.at;
  return st;
}

static void check_engine(const char* dir, ttp_engine engine, const char* name,
                         const char* const* paths, const uint8_t* images, test_rng* rng) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = COPIES;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir;
  o.engine = engine;
  o.threads = 2;
  o.tta = &tta;
  ttp_pipeline* p = NULL;
  ttp_status st = ttp_open(&o, &p);
  if (engine == TTP_ENGINE_ONEDNN && st != TTP_OK) {
    printf("%s: not in this build (%s)\n", name, ttp_last_error(p));
    ttp_close(p);
    return;
  }
  CHECK(st == TTP_OK, "%s: %s", name, ttp_last_error(p));
  ttp_result* got = malloc(IMAGES * sizeof *got);
  ttp_result* want = malloc(IMAGES * sizeof *want);
  double slowest = 0;
  for (int k = 0; k < 6; k++) {
    const int files = k % 2;
    const double delay = test_uniform(rng, 0.01, 0.3);
    double took;
    seen s = {0};
    st = cancelled_call(p, delay, files, paths, images, got, &took, &s);
    printf("%s: %s cancelled after %.3f s: returned %.3f s later (%s), %zu files reported\n",
           name, files ? "ttp_classify_files" : "ttp_classify", delay, took,
           ttp_status_string(st), s.next);
    CHECK(st == TTP_ERR_CANCELLED, "%s: a cancelled call returned %s", name, ttp_status_string(st));
    CHECK(took <= STOP_BOUND, "%s: a call took %.3f s after its cancel, more than %.2f s", name,
          took, STOP_BOUND);
    if (took > slowest) slowest = took;
  }
  /* The request is spent: the next call runs whole, and gives what a call never cancelled gives
     (the second pipeline). */
  for (int i = 0; i < IMAGES; i++) got[i] = (ttp_result){-1, -1.0f, -1.0f};
  CHECK(ttp_classify(p, images, AFTER, got, NULL) == TTP_OK, "%s: after the cancels: %s",
        name, ttp_last_error(p));
  ttp_pipeline* fresh = NULL;
  CHECK(ttp_open(&o, &fresh) == TTP_OK, "%s: %s", name, ttp_last_error(fresh));
  CHECK(ttp_classify(fresh, images, AFTER, want, NULL) == TTP_OK, "%s", ttp_last_error(fresh));
  CHECK(memcmp(got, want, AFTER * sizeof *got) == 0,
        "%s: results after the cancels differ from a fresh pipeline's", name);
  printf("%s: 6 cancels, the slowest returned %.3f s after its request\n", name, slowest);
  ttp_close(fresh);
  ttp_close(p);
  free(got);
  free(want);
}

int main(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  fixture_model_dir(dir, 5);
  test_rng rng = {2026};
  uint8_t* images = malloc((size_t)IMAGES * SIDE * SIDE);
  for (size_t i = 0; i < (size_t)IMAGES * SIDE * SIDE; i++)
    images[i] = (uint8_t)test_int(&rng, 0, 255);
  char** paths = malloc(FILES * sizeof *paths);
  for (int i = 0; i < FILES; i++) {
    char name[32];
    snprintf(name, sizeof name, "f%03d.png", i);
    paths[i] = strdup(test_path(dir, name));
    fixture_png(paths[i], SIDE, SIDE, 1, images + (size_t)i * SIDE * SIDE);
  }
  check_engine(dir, TTP_ENGINE_CPU, "cpu", (const char* const*)paths, images, &rng);
  check_engine(dir, TTP_ENGINE_ONEDNN, "onednn", (const char* const*)paths, images, &rng);
  for (int i = 0; i < FILES; i++) free(paths[i]);
  free(paths);
  free(images);
  test_remove_tree(dir);
  printf("cancel: every call stopped within %.2f s of its request\n", STOP_BOUND);
  return 0;
}
