/* GPU faults, for each GPU engine: out of device memory at open is refused with the sizes and
   leaves the device usable; a batch that fails to launch in the middle of a call gives an error
   naming the batch and the call's images, never a wrong result, and the pipeline works on; a
   fault CUDA cannot recover from (a kernel that traps, through the runner's test hook) gives
   TTP_ERR_GPU_LOST, never a wrong result, and every later call is refused with that status. The
   files path likewise: the rows reported before a refused batch are a whole run's prefix.
   The unrecoverable fault comes last: it leaves the process's CUDA context unusable.
   Usage: test_gpu_faults. Skipped (77) without a GPU. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/runner.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { IMAGES = 300, BATCH = 64 }; /* five batches a call: 4 x 64 + 44 */

static const char* name_of(ttp_engine engine) {
  return engine == TTP_ENGINE_FUSED ? "fused" : "cudnn";
}

static ttp_status open_engine(const char* dir, ttp_engine engine, int max_batch, ttp_pipeline** p) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir;
  o.engine = engine;
  o.max_batch = max_batch;
  o.tta = &tta;
  o.plan = TTP_PLAN_HEURISTIC;
  return ttp_open(&o, p);
}

static void poison(ttp_result* r, size_t n) { memset(r, 0xa5, n * sizeof *r); }

/* Every result either the reference's, bit for bit, or untouched (still poison). */
static void check_rows(const ttp_result* got, const ttp_result* ref, size_t n, size_t* kept) {
  ttp_result poisoned;
  poison(&poisoned, 1);
  *kept = 0;
  for (size_t i = 0; i < n; i++) {
    const int same = memcmp(&got[i], &ref[i], sizeof *got) == 0;
    CHECK(same || memcmp(&got[i], &poisoned, sizeof *got) == 0, "result %zu is wrong", i);
    *kept += same;
  }
}

static void out_of_memory(const char* dir, ttp_engine engine, const uint8_t* images) {
  size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess, "cudaMemGetInfo");
  /* All but ~256 MiB of what is free: enough for a context's handles, not for the activations
     of 8192-image batches (0.5 GiB in the fused engine, 1.9 GiB in cudnn's). */
  size_t hog_bytes = free_bytes > ((size_t)1 << 30) ? free_bytes - ((size_t)256 << 20) : 0;
  void* hog = NULL;
  while (hog_bytes > ((size_t)1 << 30) && cudaMalloc(&hog, hog_bytes) != cudaSuccess) {
    cudaGetLastError();
    hog = NULL, hog_bytes -= (size_t)64 << 20;
  }
  CHECK(hog, "could not take the device's free memory (%zu bytes free)", free_bytes);
  ttp_pipeline* p = NULL;
  const ttp_status st = open_engine(dir, engine, 8192, &p);
  CHECK(st == TTP_ERR_OUT_OF_MEMORY, "%s opened (%s) with ~256 MiB free: %s", name_of(engine),
        ttp_status_string(st), ttp_last_error(p));
  EXPECT_MESSAGE(ttp_last_error(p), "not enough device memory on GPU", "wanted", "free of");
  printf("%s, 8192-image batches, the rest of the GPU taken: %s\n", name_of(engine),
         ttp_last_error(p));
  ttp_close(p);
  CHECK(cudaFree(hog) == cudaSuccess, "cudaFree");
  /* The device is still usable. */
  ttp_result r[3];
  CHECK(open_engine(dir, engine, BATCH, &p) == TTP_OK, "%s", ttp_last_error(p));
  CHECK(ttp_classify(p, images, 3, r, NULL) == TTP_OK, "%s", ttp_last_error(p));
  ttp_close(p);
}

/* A pipeline of BATCH-image batches, the reference results of a whole call through it, and room
   for another call's. */
static ttp_pipeline* open_with_reference(const char* dir, ttp_engine engine, const uint8_t* images,
                                         ttp_result** ref, ttp_result** got) {
  *ref = malloc(IMAGES * sizeof **ref), *got = malloc(IMAGES * sizeof **got);
  CHECK(*ref && *got, "out of memory");
  ttp_pipeline* p = NULL;
  CHECK(open_engine(dir, engine, BATCH, &p) == TTP_OK, "%s", ttp_last_error(p));
  CHECK(ttp_classify(p, images, IMAGES, *ref, NULL) == TTP_OK, "%s", ttp_last_error(p));
  return p;
}

static void refused_batch(const char* dir, ttp_engine engine, const uint8_t* images) {
  ttp_result *ref, *got;
  ttp_pipeline* p = open_with_reference(dir, engine, images, &ref, &got);
  gpu_refuse_batch = 2; /* the call's third batch: images 128..191 */
  poison(got, IMAGES);
  const ttp_status st = ttp_classify(p, images, IMAGES, got, NULL);
  CHECK(gpu_refuse_batch == -1, "the hook did not strike");
  CHECK(st == TTP_ERR_CUDA, "%s: %s", ttp_status_string(st), ttp_last_error(p));
  EXPECT_MESSAGE(ttp_last_error(p), "images 128..191 of this call", "of this pipeline (64 images)");
  size_t kept;
  check_rows(got, ref, IMAGES, &kept);
  printf("%s, a batch refused: %s (%zu results kept, the rest untouched)\n", name_of(engine),
         ttp_last_error(p), kept);
  /* The pipeline works on: the same bits as before. */
  poison(got, IMAGES);
  CHECK(ttp_classify(p, images, IMAGES, got, NULL) == TTP_OK, "%s", ttp_last_error(p));
  CHECK(memcmp(got, ref, IMAGES * sizeof *got) == 0, "results differ after a refused batch");
  ttp_close(p);
  free(ref), free(got);
}

/* ttp_classify_files' rows: each file's result in order. */
typedef struct rows {
  size_t next;
  ttp_result results[IMAGES];
} rows;

static void on_file(void* user, size_t index, const char* path, const ttp_result* r,
                    const float* probs, const char* error) {
  rows* w = user;
  (void)probs;
  CHECK(index == w->next && r && !error, "file %zu (%s): out of order or failed: %s", index, path,
        error ? error : "");
  w->results[w->next++] = *r;
}

/* The files path: a batch refused mid-run stops it with an error naming the batch; the rows
   reported before are a prefix of a whole run's, bit for bit. */
static void refused_files(const char* dir, ttp_engine engine, char** paths) {
  static rows ref, got;
  ttp_pipeline* p = NULL;
  CHECK(open_engine(dir, engine, BATCH, &p) == TTP_OK, "%s", ttp_last_error(p));
  ref.next = 0;
  CHECK(ttp_classify_files(p, (const char* const*)paths, IMAGES, NULL, 2, on_file, &ref, NULL) ==
            TTP_OK, "%s", ttp_last_error(p));
  CHECK(ref.next == IMAGES, "%zu rows of %d", ref.next, IMAGES);
  gpu_refuse_batch = 2;
  got.next = 0;
  const ttp_status st =
      ttp_classify_files(p, (const char* const*)paths, IMAGES, NULL, 2, on_file, &got, NULL);
  CHECK(gpu_refuse_batch == -1, "the hook did not strike");
  CHECK(st == TTP_ERR_CUDA, "%s: %s", ttp_status_string(st), ttp_last_error(p));
  EXPECT_MESSAGE(ttp_last_error(p), "classifying files, ", "of this pipeline (64 images)");
  CHECK(got.next <= 2 * BATCH, "%zu rows: more than the batches before the refused one", got.next);
  CHECK(memcmp(got.results, ref.results, got.next * sizeof *got.results) == 0,
        "the rows before the refused batch differ from a whole run's");
  printf("%s, files, a batch refused: %s (%zu rows, a prefix of a whole run's)\n",
         name_of(engine), ttp_last_error(p), got.next);
  ttp_close(p);
}

static void lost_gpu(const char* dir, ttp_engine engine, const uint8_t* images) {
  ttp_result *ref, *got;
  ttp_pipeline* p = open_with_reference(dir, engine, images, &ref, &got);
  gpu_fault_batch = 2;
  poison(got, IMAGES);
  ttp_status st = ttp_classify(p, images, IMAGES, got, NULL);
  CHECK(gpu_fault_batch == -1, "the hook did not strike");
  CHECK(st == TTP_ERR_GPU_LOST, "%s: %s", ttp_status_string(st), ttp_last_error(p));
  EXPECT_MESSAGE(ttp_last_error(p), "of this call", "of this pipeline", "cannot recover");
  size_t kept;
  check_rows(got, ref, IMAGES, &kept);
  CHECK(kept <= 2 * BATCH, "%zu results kept: more than the batches before the fault", kept);
  printf("%s, a kernel's fault: %s (%zu results kept, the rest untouched)\n", name_of(engine),
         ttp_last_error(p), kept);
  poison(got, IMAGES);
  st = ttp_classify(p, images, 5, got, NULL);
  CHECK(st == TTP_ERR_GPU_LOST, "a call after the fault: %s: %s", ttp_status_string(st),
        ttp_last_error(p));
  EXPECT_MESSAGE(ttp_last_error(p), "failed earlier", "takes no more work");
  check_rows(got, ref, 5, &kept);
  CHECK(kept == 0, "a refused call wrote results");
  printf("%s, the next call: %s\n", name_of(engine), ttp_last_error(p));
  ttp_close(p); /* must neither crash nor hang */
  free(ref), free(got);
}

int main(void) {
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  char* dir = strdup(test_make_dir());
  fixture_model_dir(dir, 16);
  uint8_t* images = malloc((size_t)IMAGES * 784);
  CHECK(images, "out of memory");
  test_rng rng = {16};
  for (size_t i = 0; i < (size_t)IMAGES * 784; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  char** paths = malloc(IMAGES * sizeof *paths);
  CHECK(paths, "out of memory");
  for (int i = 0; i < IMAGES; i++) {
    char name[32];
    snprintf(name, sizeof name, "f%03d.png", i);
    paths[i] = strdup(test_path(dir, name));
    fixture_png(paths[i], 28, 28, 1, images + (size_t)i * 784);
  }
  const ttp_engine engines[] = {TTP_ENGINE_CUDNN, TTP_ENGINE_FUSED};
  for (int k = 0; k < 2; k++) {
    out_of_memory(dir, engines[k], images);
    refused_batch(dir, engines[k], images);
    refused_files(dir, engines[k], paths);
  }
  for (int i = 0; i < IMAGES; i++) free(paths[i]);
  free(paths);
  lost_gpu(dir, TTP_ENGINE_FUSED, images); /* last: the context is unusable after it */
  test_remove_tree(dir);
  free(dir);
  free(images);
  printf("gpu faults: refused with sizes, batches named, no wrong results, a lost GPU refused\n");
  return 0;
}
