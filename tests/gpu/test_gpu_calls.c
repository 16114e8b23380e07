/* What the GPU engines (cudnn, fused) ask of the CUDA driver between batches. CUPTI's driver-API callbacks
   count every driver call the process makes (ours, cuDNN's and cuBLAS's alike) while the
   pipeline classifies, after ttp_open and a first call. Between batches there must be no memory
   allocated or freed (device or pinned), no device or stream synchronisation, no synchronous
   copy, no capture or instantiation: the host waits on the GPU only through cuEventSynchronize,
   to recycle a slot, at most once per batch. For each engine and precision it runs, graphs on
   and off.
   Usage: test_gpu_calls MODEL_DIR_OR_EMPTY. Skipped (77) without a GPU. */
#include <cupti.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { MAX_NAMES = 128 };

typedef struct call_count {
  char name[64];
  long calls;
} call_count;

static call_count counts[MAX_NAMES];
static int names;

static void CUPTIAPI on_call(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const void* data) {
  (void)user, (void)domain, (void)id;
  const CUpti_CallbackData* info = data;
  if (info->callbackSite != CUPTI_API_ENTER) return;
  for (int i = 0; i < names; i++)
    if (strcmp(counts[i].name, info->functionName) == 0) {
      counts[i].calls++;
      return;
    }
  if (names < MAX_NAMES) {
    snprintf(counts[names].name, sizeof counts[names].name, "%s", info->functionName);
    counts[names++].calls = 1;
  }
}

static int starts_with(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A driver call that must not happen between batches. */
static int forbidden(const char* name) {
  static const char* const prefixes[] = {
      "cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemHostRegister", "cuMemHostUnregister",
      "cuMemCreate", "cuMemMap", "cuMemRelease", "cuCtxSynchronize", "cuStreamSynchronize",
      "cuDeviceSynchronize", "cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphInstantiate",
      "cuGraphUpload", "cuModuleLoad", "cuLibraryLoad", "cuStreamCreate", "cuEventCreate"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (starts_with(name, prefixes[i])) return 1;
  /* Synchronous copies and sets: cuMemcpy*, cuMemset* without "Async". */
  if ((starts_with(name, "cuMemcpy") || starts_with(name, "cuMemset")) && !strstr(name, "Async"))
    return 1;
  return 0;
}

static void check_run(const char* model_dir, ttp_engine engine, ttp_precision precision,
                      int no_graph, const uint8_t* images, size_t count) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = model_dir;
  o.engine = engine;
  o.precision = precision;
  o.max_batch = 512;
  o.slots = 3;
  o.no_graph = no_graph;
  o.tta = &tta;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  ttp_result* results = malloc(count * sizeof *results);
  float* probs = malloc(count * 10 * sizeof *probs);
  CHECK(ttp_classify(p, images, 100, results, probs) == TTP_OK, "%s", ttp_last_error(p));

  names = 0;
  CUpti_SubscriberHandle subscriber;
  CHECK(cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_call, NULL) == CUPTI_SUCCESS,
        "cuptiSubscribe");
  CHECK(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS,
        "cuptiEnableDomain");
  size_t batches = 0;
  for (int round = 0; round < 3; round++) { /* full batches, a partial one, a single image */
    size_t n = round == 0 ? count : round == 1 ? 700 : 1;
    CHECK(ttp_classify(p, images, n, results, probs) == TTP_OK, "%s", ttp_last_error(p));
    batches += (n + 511) / 512;
  }
  cuptiUnsubscribe(subscriber);
  ttp_close(p);

  printf("%s, %s, %s: %zu batches; driver calls:", engine == TTP_ENGINE_FUSED ? "fused" : "cudnn",
         precision ? "fp16" : "fp32",
         no_graph ? "eager" : "graphs", batches);
  long bad = 0, waits = 0;
  for (int i = 0; i < names; i++) {
    printf(" %s %ld%s", counts[i].name, counts[i].calls, forbidden(counts[i].name) ? " (!)" : "");
    if (forbidden(counts[i].name)) bad += counts[i].calls;
    if (starts_with(counts[i].name, "cuEventSynchronize")) waits += counts[i].calls;
  }
  printf("\n");
  CHECK(names > 0, "CUPTI saw no driver calls: the counting does not work");
  CHECK(bad == 0, "%ld forbidden driver calls between batches", bad);
  CHECK(waits <= (long)batches, "%ld waits for %zu batches", waits, batches);
  free(results);
  free(probs);
}

int main(int argc, char** argv) {
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  (void)argc, (void)argv;
  char* dir = strdup(test_make_dir());
  fixture_model_dir(dir, 9);
  size_t count = 5 * 512 + 77;
  uint8_t* images = malloc(count * 784);
  test_rng rng = {8};
  for (size_t i = 0; i < count * 784; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  for (int precision = 0; precision < 2; precision++)
    for (int no_graph = 0; no_graph < 2; no_graph++)
      check_run(dir, TTP_ENGINE_CUDNN, (ttp_precision)precision, no_graph, images, count);
  for (int no_graph = 0; no_graph < 2; no_graph++) /* the fused engine: fp32 */
    check_run(dir, TTP_ENGINE_FUSED, TTP_PRECISION_FP32, no_graph, images, count);
  test_remove_tree(dir);
  free(dir);
  free(images);
  printf("gpu calls: no allocation, free or synchronisation between batches\n");
  return 0;
}
