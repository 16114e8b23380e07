/* Several GPUs behind one pipeline (ttp_options.devices, graph/devices.c). On a machine of two
   or more GPUs the first two; on one GPU, device 0 twice (two runners sharing it: the dealing,
   ordering and shared choices are the same code). For the fused and cudnn engines, fp32 and
   fp16 (cudnn with its timed search, whose choice the second GPU must take from the first):
   - ttp_classify of 3,001 random images (12 batches of max_batch 256, dealt to both GPUs, the
     last one partial) equals a one-device pipeline's results and probabilities bit for bit,
     outputs poisoned first; twice in a row (slots released between calls);
   - the streaming calls (ttp_submit of batches of odd sizes, collected in order, with
     ttp_batch_ready) give the one-device pipeline's rows for the same sizes, and ttp_classify's
     rows but for cudnn in fp16 (see below); ttp_batches_max is the GPUs' slots together;
   - ttp_classify_files over 301 PNG files (several chunks, slots acquired for chunks that never
     come released at the end) equals the one-device pipeline's rows, called twice;
   - ttp_bench_device splits 2 x 256 images among the GPUs and times every replay;
     ttp_classify_device is refused in one line; bad device lists are refused.
   Exits 77 without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { PIXELS = 784, CLASSES = 10, COUNT = 3001, FILES = 301 };

static ttp_pipeline* open_on(const char* dir, ttp_engine engine, ttp_precision precision,
                             const int* devices, int count) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir, o.engine = engine, o.precision = precision, o.tta = &tta;
  o.max_batch = 256, o.slots = 3;
  o.devices = devices, o.device_count = count;
  if (count < 2) o.device = devices[0];
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  return p;
}

typedef struct rows {
  size_t n;
  ttp_result results[FILES];
  float probs[FILES][CLASSES];
  int failed[FILES];
} rows;

static void on_file(void* user, size_t index, const char* path, const ttp_result* result,
                    const float* probabilities, const char* error) {
  (void)path, (void)error;
  rows* r = user;
  CHECK(index == r->n && index < FILES, "file %zu reported as %zu", r->n, index);
  r->failed[index] = !result;
  if (result) r->results[index] = *result, memcpy(r->probs[index], probabilities, sizeof r->probs[0]);
  r->n++;
}

static const char* run_name = ""; /* the engine and precision being checked */

/* images through p as count batches of the given sizes (ttp_submit, ttp_collect in order), the
   outputs poisoned first. */
static void stream_batches(ttp_pipeline* p, const uint8_t* images, const size_t* sizes,
                           size_t count, ttp_result* got, float* got_p) {
  size_t total = 0;
  for (size_t b = 0; b < count; b++) total += sizes[b];
  memset(got, 0xff, total * sizeof *got);
  test_poison(got_p, total * CLASSES);
  size_t sent = 0, batch = 0, done = 0;
  while (done < total) {
    if (batch < count && ttp_batches_in_flight(p) < ttp_batches_max(p)) {
      CHECK(ttp_submit(p, images + sent * PIXELS, sizes[batch]) == TTP_OK, "%s",
            ttp_last_error(p));
      sent += sizes[batch++];
    } else {
      size_t n = 0;
      ttp_batch_ready(p);
      CHECK(ttp_collect(p, got + done, got_p + done * CLASSES, &n) == TTP_OK, "%s",
            ttp_last_error(p));
      done += n;
    }
  }
}

static void same(const char* what, const void* got, const void* want, size_t n) {
  CHECK(memcmp(got, want, n) == 0, "%s, %s: not the one-device pipeline's bits", run_name, what);
}

int main(void) {
  const int gpus = ttp_gpu_count();
  if (gpus == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  const int pair[2] = {0, gpus > 1 ? 1 : 0};
  printf("devices %d and %d (%d GPU%s)\n", pair[0], pair[1], gpus, gpus == 1 ? "" : "s");
  const char* dir = test_make_dir();
  fixture_model_dir(dir, 43);
  test_rng rng = {43};
  uint8_t* images = malloc((size_t)COUNT * PIXELS);
  for (size_t i = 0; i < (size_t)COUNT * PIXELS; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  const char* files[FILES];
  char* names = malloc((size_t)FILES * 64);
  for (int f = 0; f < FILES; f++) {
    snprintf(names + f * 64, 64, "%s/img%03d.png", dir, f);
    files[f] = names + f * 64;
    fixture_png(files[f], 28 + f % 3, 28, 1, images + (size_t)f * PIXELS);
  }
  ttp_result *want = malloc(COUNT * sizeof *want), *got = malloc(COUNT * sizeof *got);
  ttp_result* want_s = malloc(COUNT * sizeof *want_s);
  float *want_p = malloc((size_t)COUNT * CLASSES * 4), *got_p = malloc((size_t)COUNT * CLASSES * 4);
  float* want_sp = malloc((size_t)COUNT * CLASSES * 4);
  rows *want_rows = calloc(1, sizeof *want_rows), *got_rows = calloc(1, sizeof *got_rows);
  CHECK(want && got && want_s && want_p && got_p && want_sp && want_rows && got_rows,
        "out of memory");

  const ttp_engine engines[2] = {TTP_ENGINE_FUSED, TTP_ENGINE_CUDNN};
  for (int k = 0; k < 2; k++)
    for (int half = 0; half < 2; half++) {
      const ttp_precision prec = half ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32;
      const char* name = k ? "cudnn" : "fused";
      char run[32];
      snprintf(run, sizeof run, "%s %s", name, ttp_precision_name(prec));
      run_name = run;
      ttp_pipeline* one = open_on(dir, engines[k], prec, pair, 1);
      ttp_pipeline* two = open_on(dir, engines[k], prec, pair, 2);
      CHECK(ttp_batches_max(two) == 6, "%s: %d slots, not 2 x 3", name, ttp_batches_max(two));
      CHECK(ttp_batch_capacity(two) == 256, "capacity %zu", ttp_batch_capacity(two));
      CHECK(strstr(ttp_engine_description(two), "2 GPUs"), "%s", ttp_engine_description(two));
      CHECK(ttp_classify(one, images, COUNT, want, want_p) == TTP_OK, "%s", ttp_last_error(one));
      for (int call = 0; call < 2; call++) {
        memset(got, 0xff, COUNT * sizeof *got);
        test_poison(got_p, (size_t)COUNT * CLASSES);
        CHECK(ttp_classify(two, images, COUNT, got, got_p) == TTP_OK, "%s", ttp_last_error(two));
        same("results", got, want, COUNT * sizeof *got);
        same("probabilities", got_p, want_p, (size_t)COUNT * CLASSES * 4);
      }
      /* Streaming: batches of odd sizes, collected in order; the one-device pipeline streams
         the same sizes. Their rows equal ttp_classify's too where the engine keeps a row's bits
         in every bucket: not cudnn in fp16, where cuDNN's tensor-core kernels for another row
         count may round a sum differently (the engine's details name those layers). */
      size_t sizes[COUNT], batches = 0;
      for (size_t sent = 0; sent < COUNT; sent += sizes[batches++]) {
        sizes[batches] = 1 + (size_t)test_int(&rng, 0, 255);
        if (sizes[batches] > COUNT - sent) sizes[batches] = COUNT - sent;
      }
      stream_batches(one, images, sizes, batches, want_s, want_sp);
      stream_batches(two, images, sizes, batches, got, got_p);
      same("streamed results", got, want_s, COUNT * sizeof *got);
      same("streamed probabilities", got_p, want_sp, (size_t)COUNT * CLASSES * 4);
      if (!(k && half)) {
        same("streamed results against whole batches", got, want, COUNT * sizeof *got);
        same("streamed probabilities against whole batches", got_p, want_p,
             (size_t)COUNT * CLASSES * 4);
      }
      /* Files: the decode pool feeding both GPUs. */
      memset(want_rows, 0, sizeof *want_rows);
      CHECK(ttp_classify_files(one, files, FILES, NULL, 2, on_file, want_rows, NULL) == TTP_OK,
            "%s", ttp_last_error(one));
      for (int call = 0; call < 2; call++) {
        memset(got_rows, 0xff, sizeof *got_rows);
        got_rows->n = 0;
        CHECK(ttp_classify_files(two, files, FILES, NULL, 2, on_file, got_rows, NULL) == TTP_OK,
              "%s", ttp_last_error(two));
        CHECK(got_rows->n == FILES, "%zu files reported", got_rows->n);
        same("files' rows", got_rows, want_rows, sizeof *got_rows);
      }
      double ms[7];
      for (int r = 0; r < 7; r++) ms[r] = -1;
      CHECK(ttp_bench_device(two, images, 512, 7, ms) == TTP_OK, "%s", ttp_last_error(two));
      for (int r = 0; r < 7; r++) CHECK(ms[r] > 0 && ms[r] < 1e4, "replay %d: %g ms", r, ms[r]);
      CHECK(ttp_bench_device(two, images, 513, 1, ms) == TTP_ERR_INVALID_ARGUMENT, "513 images");
      CHECK(ttp_classify_device(two, images, 1, got, NULL, NULL) == TTP_ERR_INVALID_ARGUMENT,
            "ttp_classify_device on two devices");
      EXPECT_MESSAGE(ttp_last_error(two), "one device");
      printf("%s %s: two devices give the one device's bits (arrays, streaming, files); "
             "device mode %.3f ms for 2 x 256\n", name, half ? "fp16" : "fp32", ms[0]);
      ttp_close(two);
      ttp_close(one);
    }

  /* Refused lists. */
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir;
  const int many[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, negative[2] = {0, -1};
  ttp_pipeline* p = NULL;
  o.devices = many, o.device_count = 9;
  CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "9 devices");
  ttp_close(p);
  o.devices = negative, o.device_count = 2;
  CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "a negative device");
  ttp_close(p);
  o.devices = NULL, o.device_count = 2;
  CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "no array");
  EXPECT_MESSAGE(ttp_last_error(p), "no array");
  ttp_close(p);
  const int beyond[2] = {0, gpus};
  o.devices = beyond, o.engine = TTP_ENGINE_CUDNN;
  CHECK(ttp_open(&o, &p) != TTP_OK, "device %d of %d", gpus, gpus);
  printf("refused: 9 devices, a negative one, no array, one past the last: %s\n",
         ttp_last_error(p));
  ttp_close(p);
  test_remove_tree(dir);
  free(images), free(names), free(want), free(got), free(want_s), free(want_p), free(got_p);
  free(want_sp);
  free(want_rows), free(got_rows);
  printf("test_devices: all checks passed\n");
  return 0;
}
