/* Where the small batches' one launch (fused_small, pipeline/fused/fused_kernels.cu) spends its
   time: the launch traced item by item (device timestamps in ns), per stage the items, when the
   first began and the last ended (from the launch's first item taken), the mean item's time and
   the mean wait for the stage before it, the SM clock it ran at (cycles / ns). The third of three launches one after another (warm).

     bench_small_trace MODEL_DIR [fp32|fp16 [IMAGES...]]   (default: both, 1 8 64) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment/merge_kernel.h"
#include "augment/tta.h"
#include "model/mnistcudnn.h"
#include "pipeline/engine.h"
#include "pipeline/fused/fused_engine.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { MOST = 4096 }; /* items: more than the stages of a 64-image batch of 5 copies take */

static void trace_one(const model* m, ttp_precision precision, int images, test_rng* rng) {
  ttp_err e = {0};
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  engine_config c = {.device = 0, .precision = precision};
  CHECK(aug_spec_from(&tta, &c.spec, &c.merge, NULL, &e) == TTP_OK, "%s", e.message);
  const size_t pixels = model_shape_size(m->input);
  uint8_t* px = malloc(images * pixels);
  unsigned char* out = malloc(images * aug_merge_record_size(m->classes));
  unsigned long long* trace = calloc(4 * MOST, sizeof *trace);
  CHECK(px && out && trace, "out of memory");
  for (size_t i = 0; i < images * pixels; i++) px[i] = (uint8_t)test_int(rng, 0, 255);
  double staged_ms = 0, small_ms = 0;
  CHECK(fused_run_pass(m, &c, images, 0, px, out, NULL, &staged_ms, &e) == TTP_OK, "%s", e.message);
  CHECK(fused_run_pass(m, &c, images, 1, px, out, NULL, &small_ms, &e) == TTP_OK, "%s", e.message);
#ifdef FUSED_PHASES
  void fused_phases_reset(void), fused_phases_print(void);
  fused_phases_reset();
#endif
  CHECK(fused_run_pass(m, &c, images, 1, px, out, trace, NULL, &e) == TTP_OK, "%s", e.message);
  unsigned long long t0 = ~0ull, end = 0;
  int total = 0;
  while (total < MOST && trace[4 * total + 2]) total++;
  for (int i = 0; i < total; i++) {
    if (trace[4 * i] < t0) t0 = trace[4 * i];
    if (trace[4 * i + 2] > end) end = trace[4 * i + 2];
  }
  printf("%s, %d image%s: GPU time of the pass %.2f us in one launch, %.2f us in the stages' "
         "launches; traced: %d items, %.2f us from the first item taken to the last done:\n",
         precision == TTP_PRECISION_FP16 ? "fp16" : "fp32", images, images == 1 ? "" : "s",
         small_ms * 1e3, staged_ms * 1e3, total, (end - t0) / 1e3);
  printf("  %-10s %6s %10s %10s %10s %10s %10s\n", "stage", "items", "first us", "last us",
         "item us", "wait us", "SM MHz");
  static const char* const names[FUSED_SMALL_STAGES] = {"1 conv1", "2 conv2", "3a fc1", "3b rest"};
  for (int k = 0; k < FUSED_SMALL_STAGES; k++) {
    unsigned long long lo = ~0ull, hi = 0;
    double work = 0, wait = 0, cycles = 0;
    int n = 0;
    for (int i = 0; i < total; i++) {
      const unsigned long long* t = trace + 4 * i;
      if ((int)(t[3] & 15) != k) continue;
      cycles += (double)(t[3] >> 4);
      if (t[1] < lo) lo = t[1];
      if (t[2] > hi) hi = t[2];
      work += (double)(t[2] - t[1]), wait += (double)(t[1] - t[0]), n++;
    }
    CHECK(n > 0, "stage %d has no items in the trace", k);
    printf("  %-10s %6d %10.2f %10.2f %10.2f %10.2f %10.0f\n", names[k], n, (lo - t0) / 1e3,
           (hi - t0) / 1e3, work / n / 1e3, wait / n / 1e3, cycles / work * 1e3);
  }
#ifdef FUSED_PHASES
  fused_phases_print();
#endif
  free(px), free(out), free(trace);
}

int main(int argc, char** argv) {
  CHECK(argc >= 2, "usage: %s MODEL_DIR [fp32|fp16 [IMAGES...]]", argv[0]);
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  ttp_err e = {0};
  model* m = NULL;
  CHECK(io_load_mnistcudnn(argv[1], &m, &e) == TTP_OK, "%s", e.message);
  test_rng rng = {777};
  const int both = argc < 3;
  const int half_only = !both && strcmp(argv[2], "fp16") == 0;
  int counts[16] = {1, 8, 64}, n = 3;
  if (argc > 3)
    for (n = 0; n < argc - 3 && n < 16; n++) counts[n] = atoi(argv[n + 3]);
  for (int half = both ? 0 : half_only; half <= (both ? 1 : half_only); half++)
    for (int k = 0; k < n; k++)
      trace_one(m, half ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32, counts[k], &rng);
  model_free(m);
  return 0;
}
