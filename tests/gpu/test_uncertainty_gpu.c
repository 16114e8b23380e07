/* ttp_classify_uncertainty on the GPU engines (fused fp32 and fp16, cudnn fp32) against the CPU
   reference, for 1, 13 and 211 random images (the fused engine's one launch and its stages), 5
   copies and a temperature of 1.6, outputs poisoned first: the entropy and the mutual
   information within what the engine's probability tolerance (1e-4 fp32, 1e-2 fp16) moves an
   entropy (classes x tol x (ln(1/tol) + 1)); the agreement the same wherever no copy of the
   CPU's has its top two within the tolerance; and ttp_classify_files' ttp_file_uncertainty
   the same bits as ttp_classify_uncertainty on the GPU too. Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { PIXELS = 784, CLASSES = 10, MOST = 211, COPIES = 5 };

static ttp_pipeline* open_tempered(const char* dir, ttp_engine engine, ttp_precision precision) {
  ttp_tta tta; /* fixture_open_gpu's options, with a temperature */
  ttp_tta_init(&tta);
  tta.copies = COPIES, tta.temperature = 1.6f;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir, o.engine = engine, o.precision = precision, o.tta = &tta, o.threads = 2;
  o.max_batch = 256, o.plan = TTP_PLAN_HEURISTIC;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  return p;
}

static const ttp_pipeline* files_p;
static ttp_uncertainty files_u[MOST];
static void on_file(void* user, size_t index, const char* path, const ttp_result* result,
                    const float* probabilities, const char* error) {
  (void)user, (void)path, (void)result, (void)probabilities;
  CHECK(!error && ttp_file_uncertainty(files_p), "file %zu: %s", index, error ? error : "none");
  files_u[index] = *ttp_file_uncertainty(files_p);
}

int main(void) {
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  const char* dir = test_make_dir();
  fixture_model_dir(dir, 61);
  test_rng rng = {61};
  uint8_t* images = malloc((size_t)MOST * PIXELS);
  for (size_t i = 0; i < (size_t)MOST * PIXELS; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  ttp_pipeline* cpu = open_tempered(dir, TTP_ENGINE_CPU, TTP_PRECISION_FP32);
  static ttp_result want_r[MOST], got_r[MOST];
  static ttp_uncertainty want[MOST], got[MOST];
  static int close_call[MOST]; /* a CPU copy's top two within tol (per precision) */
  CHECK(ttp_classify_uncertainty(cpu, images, MOST, want_r, NULL, want) == TTP_OK, "%s",
        ttp_last_error(cpu));
  static float copies[MOST][COPIES * CLASSES];
  for (int i = 0; i < MOST; i++)
    CHECK(ttp_inspect_copies(cpu, images + (size_t)i * PIXELS, NULL, copies[i]) == TTP_OK, "%s",
          ttp_last_error(cpu));
  ttp_close(cpu);
  static const struct { ttp_engine engine; ttp_precision precision; const char* name; } runs[] = {
      {TTP_ENGINE_FUSED, TTP_PRECISION_FP32, "fused fp32"},
      {TTP_ENGINE_FUSED, TTP_PRECISION_FP16, "fused fp16"},
      {TTP_ENGINE_CUDNN, TTP_PRECISION_FP32, "cudnn fp32"},
  };
  static const size_t counts[] = {1, 13, MOST};
  for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
    const double tol = runs[r].precision == TTP_PRECISION_FP16 ? 1e-2 : 1e-4;
    const double h_tol = CLASSES * tol * (log(1 / tol) + 1);
    for (int i = 0; i < MOST; i++) {
      close_call[i] = 0;
      for (int c = 0; c < COPIES; c++) {
        const float* q = copies[i] + c * CLASSES;
        int top = 0;
        for (int k = 1; k < CLASSES; k++) top = q[k] > q[top] ? k : top;
        for (int k = 0; k < CLASSES; k++) close_call[i] |= k != top && q[top] - q[k] <= tol;
      }
    }
    ttp_pipeline* p = open_tempered(dir, runs[r].engine, runs[r].precision);
    double worst_h = 0, worst_mi = 0;
    size_t agreements = 0;
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
      const size_t n = counts[c];
      memset(got_r, 0xff, sizeof got_r);
      test_poison(&got[0].entropy, 3 * MOST);
      CHECK(ttp_classify_uncertainty(p, images, n, got_r, NULL, got) == TTP_OK, "%s, %zu: %s",
            runs[r].name, n, ttp_last_error(p));
      for (size_t i = 0; i < n; i++) {
        const double dh = fabs((double)got[i].entropy - want[i].entropy);
        const double dmi = fabs((double)got[i].mutual_information - want[i].mutual_information);
        worst_h = !(dh <= worst_h) ? dh : worst_h; /* NaN sticks */
        worst_mi = !(dmi <= worst_mi) ? dmi : worst_mi;
        agreements += !close_call[i] && got[i].agreement != want[i].agreement;
      }
    }
    printf("%s: entropy max diff %.3g, mutual information %.3g (tolerance %.3g), %zu "
           "agreements differ\n", runs[r].name, worst_h, worst_mi, h_tol, agreements);
    CHECK(worst_h <= h_tol && worst_mi <= h_tol && agreements == 0, "%s disagrees with the CPU",
          runs[r].name);
    /* The files path: the same bits as the array path on this engine. */
    if (r == 0) {
      char* paths[MOST];
      for (int i = 0; i < MOST; i++) {
        char name[32];
        snprintf(name, sizeof name, "g%03d.png", i);
        paths[i] = strdup(test_path(dir, name));
        fixture_png(paths[i], 28, 28, 1, images + (size_t)i * PIXELS);
      }
      ttp_image_options io;
      ttp_image_options_init(&io);
      io.invert = TTP_INVERT_NO;
      files_p = p;
      test_poison(&files_u[0].entropy, 3 * MOST);
      CHECK(ttp_classify_files(p, (const char* const*)paths, MOST, &io, 4, on_file, NULL, NULL) ==
            TTP_OK, "%s", ttp_last_error(p));
      CHECK(ttp_classify_uncertainty(p, images, MOST, got_r, NULL, got) == TTP_OK, "%s",
            ttp_last_error(p));
      CHECK(memcmp(files_u, got, sizeof got) == 0, "the files path's uncertainty differs");
      printf("%s: ttp_file_uncertainty of %d PNG files: the array path's bits\n", runs[r].name,
             MOST);
      for (int i = 0; i < MOST; i++) free(paths[i]);
    }
    ttp_close(p);
  }
  free(images);
  test_remove_tree(dir);
  printf("test_uncertainty_gpu: every GPU engine's measures agree with the CPU's\n");
  return 0;
}
