/* The public streaming calls (ttp_submit, ttp_collect, ...): batches of odd sizes submitted with
   up to every slot in flight, collected in order, give the same bits as one ttp_classify of the
   whole array (results and probabilities); the caller's buffer may be overwritten as soon as
   ttp_submit returns; a submit with every slot busy, a batch too large or empty, a collect with
   nothing in flight, and ttp_classify or ttp_classify_files while batches are in flight are
   refused in one line, and nothing is lost: the batches in flight are still collected right.
   Usage: test_stream_api cpu|cudnn|fused   (the GPU engines exit 77 without a GPU) */
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { PIXELS = 784, CLASSES = 10 };
/* Batches of 1..64 images (the first of capacity where the images allow): dozens of them, a
   few under the sanitizers (the same properties). */
#define IMAGES ((size_t)TEST_SIZE(1013, 97))

static void refused(ttp_status s, ttp_pipeline* p, const char* what, const char* fragment) {
  CHECK(s == TTP_ERR_INVALID_ARGUMENT, "%s: %s, not refused", what, ttp_status_string(s));
  CHECK(!strchr(ttp_last_error(p), '\n'), "%s: more than one line", what);
  EXPECT_MESSAGE(ttp_last_error(p), fragment);
  printf("  %s: %s\n", what, ttp_last_error(p));
}

static void ignore(void* user, size_t index, const char* path, const ttp_result* result,
                   const float* probabilities, const char* error) {
  (void)user, (void)index, (void)path, (void)result, (void)probabilities, (void)error;
}

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "cpu";
  const ttp_engine engine = strcmp(name, "cudnn") == 0   ? TTP_ENGINE_CUDNN
                            : strcmp(name, "fused") == 0 ? TTP_ENGINE_FUSED
                                                         : TTP_ENGINE_CPU;
  if (engine != TTP_ENGINE_CPU && ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  const char* dir = test_make_dir();
  fixture_model_dir(dir, 31);
  test_rng rng = {31};
  uint8_t* images = malloc((size_t)IMAGES * PIXELS);
  CHECK(images, "out of memory");
  for (size_t i = 0; i < (size_t)IMAGES * PIXELS; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);

  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 3;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir, o.engine = engine, o.tta = &tta, o.max_batch = 64, o.slots = 3;
  o.threads = 2, o.plan = TTP_PLAN_HEURISTIC;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));

  /* The reference: one call for the whole array. */
  ttp_result* want = malloc(IMAGES * sizeof *want);
  float* want_probs = malloc((size_t)IMAGES * CLASSES * sizeof *want_probs);
  CHECK(want && want_probs, "out of memory");
  CHECK(ttp_classify(p, images, IMAGES, want, want_probs) == TTP_OK, "%s", ttp_last_error(p));

  const size_t capacity = ttp_batch_capacity(p);
  const int depth = ttp_batches_max(p);
  CHECK(capacity >= 1 && depth >= 2 && ttp_batches_in_flight(p) == 0, "capacity %zu, depth %d",
        capacity, depth);
  ttp_result* got = malloc(IMAGES * sizeof *got);
  float* probs = malloc((size_t)IMAGES * CLASSES * sizeof *probs);
  uint8_t* buffer = malloc(capacity * PIXELS);
  CHECK(got && probs && buffer, "out of memory");
  memset(got, 0xa5, IMAGES * sizeof *got);
  test_poison(probs, (size_t)IMAGES * CLASSES);

  /* Batches of odd sizes, 1 to capacity, from a buffer overwritten right after each submit. */
  size_t sent = 0, done = 0, n;
  int batches = 0, max_seen = 0;
  printf("refused:\n");
  while (done < IMAGES) {
    if (sent < IMAGES && ttp_batches_in_flight(p) < depth) {
      size_t count = batches == 0 && capacity <= IMAGES
                         ? capacity : (size_t)test_int(&rng, 1, capacity < 64 ? (int)capacity : 64);
      if (count > IMAGES - sent) count = IMAGES - sent;
      memcpy(buffer, images + sent * PIXELS, count * PIXELS);
      CHECK(ttp_submit(p, buffer, count) == TTP_OK, "%s", ttp_last_error(p));
      memset(buffer, 0, count * PIXELS); /* the pipeline took its copy */
      sent += count, batches++;
      if (ttp_batches_in_flight(p) > max_seen) max_seen = ttp_batches_in_flight(p);
      if (ttp_batches_in_flight(p) == depth && batches == depth) {
        /* Full: a fourth batch is refused, and so are the calls that run the stream. */
        refused(ttp_submit(p, buffer, 1), p, "submit with every slot busy", "collect the oldest");
        ttp_result r;
        refused(ttp_classify(p, images, 1, &r, NULL), p, "classify while batches are in flight",
                "collect them first");
        const char* path = dir;
        refused(ttp_classify_files(p, &path, 1, NULL, 1, ignore, NULL, NULL), p,
                "files while batches are in flight", "collect them first");
      }
    } else {
      CHECK(ttp_collect(p, got + done, probs + done * CLASSES, &n) == TTP_OK, "%s",
            ttp_last_error(p));
      CHECK(n >= 1 && done + n <= IMAGES, "collected %zu after %zu", n, done);
      done += n;
    }
  }
  CHECK(sent == IMAGES && ttp_batches_in_flight(p) == 0 && max_seen == depth,
        "sent %zu, %d in flight, at most %d", sent, ttp_batches_in_flight(p), max_seen);
  CHECK(memcmp(got, want, IMAGES * sizeof *got) == 0, "results differ from ttp_classify's");
  CHECK(memcmp(probs, want_probs, (size_t)IMAGES * CLASSES * sizeof *probs) == 0,
        "probabilities differ from ttp_classify's");

  refused(ttp_collect(p, got, NULL, &n), p, "collect with nothing in flight", "no batch");
  refused(ttp_submit(p, images, capacity + 1), p, "a batch over capacity", "1..");
  refused(ttp_submit(p, images, 0), p, "an empty batch", "1..");
  CHECK(ttp_batch_ready(p) == 0, "ready with nothing in flight");
  /* A batch polled until ready, then collected without waiting. */
  CHECK(ttp_submit(p, images, 5) == TTP_OK, "%s", ttp_last_error(p));
  while (!ttp_batch_ready(p)) {
  }
  CHECK(ttp_collect(p, got, NULL, &n) == TTP_OK && n == 5, "%s", ttp_last_error(p));
  CHECK(memcmp(got, want, 5 * sizeof *got) == 0, "the polled batch differs");
  ttp_close(p);
  printf("stream api (%s): %d batches (the first of %zu images, then 1..64), up to %d in "
         "flight, the same bits as ttp_classify\n", name, batches, capacity, depth);
  free(images), free(want), free(want_probs), free(got), free(probs), free(buffer);
  return 0;
}
