/* The augmentation kernel against the CPU reference: every copy of every image bit for bit in
   float, and in half equal to the CPU's float rounded to nearest; then the kernel captured once
   in a CUDA Graph and replayed on new batches copied into the same input buffer. Odd batch
   sizes, an image size that is not a multiple of four, uniform and Gaussian noise, with and
   without the original kept and the clamp, the geometric views with each edge mode, and a list
   of views, crops among them. Skipped (77) without a GPU. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#include "augment/tta_kernel.h"
#include "tests/common/check.h"

#define CUDA_OK(call)                                                                      \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    CHECK(err_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(err_));                 \
  } while (0)

/* IEEE binary16 of f, rounded to nearest even (subnormals included). */
static uint16_t half_of(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0);
  if (a >= 0x477ff000u) return sign | 0x7c00; /* rounds beyond 65504 */
  if (a < 0x38800000u) {                      /* below 2^-14: a multiple of 2^-24 */
    float v;
    memcpy(&v, &a, 4);
    return sign | (uint16_t)rintf(v * 16777216.0f);
  }
  uint32_t h = ((a >> 23) - 112) << 10 | (a & 0x7fffffu) >> 13, rest = a & 0x1fffu;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

typedef struct tta_case {
  int channels, rows, cols, count;
  int scaled; /* a model's input scaling (per-channel mean and std) */
  ttp_tta tta;
} tta_case;

/* The CPU reference's copies of a batch: count x N x channels x rows x cols. */
static void reference(const aug_spec* s, const uint8_t* images, const tta_case* tc, float* out) {
  size_t n = (size_t)tc->channels * tc->rows * tc->cols;
  for (int i = 0; i < tc->count; i++) {
    uint64_t key = aug_image_key(images + i * n, n);
    for (int c = 0; c < s->copies; c++)
      aug_make_copy(s, key, c, images + i * n, tc->channels, tc->rows, tc->cols,
                    out + ((size_t)i * s->copies + c) * n);
  }
}

static size_t compare_float(const char* what, const float* got, const float* want, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&got[i], &want[i], 4) != 0 && bad++ < 5)
      fprintf(stderr, "  %s[%zu]: gpu %.9g, cpu %.9g\n", what, i, got[i], want[i]);
  return bad;
}

static void fill(test_rng* r, uint8_t* images, size_t n) {
  for (size_t i = 0; i < n; i++) images[i] = (uint8_t)test_int(r, 0, 255);
}

static size_t run_case(const tta_case* tc, test_rng* rng) {
  aug_spec s;
  ttp_merge merge;
  ttp_err e = {0};
  CHECK(aug_spec_from(&tc->tta, &s, &merge, NULL, &e) == TTP_OK, "%s", e.message);
  if (tc->scaled) {
    const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, std[3] = {0.2470f, 0.2435f, 0.2616f};
    s.scaled = 1;
    memcpy(s.mean, mean, sizeof mean), memcpy(s.std, std, sizeof std);
  }
  size_t n = (size_t)tc->channels * tc->rows * tc->cols, in_bytes = tc->count * n;
  size_t values = in_bytes * s.copies;
  uint8_t* images = malloc(in_bytes);
  float *want = malloc(values * 4), *got = malloc(values * 4);
  uint16_t* got_half = malloc(values * 2);
  fill(rng, images, in_bytes);
  reference(&s, images, tc, want);

  uint8_t* d_images;
  void* d_out;
  CUDA_OK(cudaMalloc((void**)&d_images, in_bytes));
  CUDA_OK(cudaMalloc(&d_out, values * 4));
  CUDA_OK(cudaMemcpy(d_images, images, in_bytes, cudaMemcpyHostToDevice));

  /* float, eager */
  CUDA_OK(cudaMemset(d_out, 0xff, values * 4)); /* NaN */
  CHECK(aug_launch(&s, d_images, tc->count, tc->channels, tc->rows, tc->cols, AUG_OUT_FLOAT, d_out, 0, &e) ==
            TTP_OK, "%s", e.message);
  CUDA_OK(cudaMemcpy(got, d_out, values * 4, cudaMemcpyDeviceToHost));
  char name[96], what[128];
  snprintf(name, sizeof name, "%d images of %dx%dx%d, %d copies, %s noise%s", tc->count,
           tc->channels, tc->rows, tc->cols, s.copies, s.gaussian ? "gaussian" : "uniform",
           tc->scaled ? ", scaled" : "");
  snprintf(what, sizeof what, "%s, float", name);
  size_t bad = compare_float(what, got, want, values);

  /* half, eager */
  CUDA_OK(cudaMemset(d_out, 0xff, values * 2));
  CHECK(aug_launch(&s, d_images, tc->count, tc->channels, tc->rows, tc->cols, AUG_OUT_HALF, d_out, 0, &e) ==
            TTP_OK, "%s", e.message);
  CUDA_OK(cudaMemcpy(got_half, d_out, values * 2, cudaMemcpyDeviceToHost));
  size_t bad_half = 0;
  for (size_t i = 0; i < values; i++)
    if (got_half[i] != half_of(want[i]) && bad_half++ < 5)
      fprintf(stderr, "  half[%zu]: gpu 0x%04x, cpu %.9g -> 0x%04x\n", i, got_half[i], want[i],
              half_of(want[i]));
  bad += bad_half;

  /* float, captured once, replayed on three new batches in the same input buffer */
  cudaStream_t stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  CHECK(aug_launch(&s, d_images, tc->count, tc->channels, tc->rows, tc->cols, AUG_OUT_FLOAT, d_out, stream,
                   &e) == TTP_OK, "%s", e.message);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int round = 0; round < 3; round++) {
    fill(rng, images, in_bytes);
    reference(&s, images, tc, want);
    CUDA_OK(cudaMemcpyAsync(d_images, images, in_bytes, cudaMemcpyHostToDevice, stream));
    CUDA_OK(cudaMemsetAsync(d_out, 0xff, values * 4, stream));
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaMemcpyAsync(got, d_out, values * 4, cudaMemcpyDeviceToHost, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    snprintf(what, sizeof what, "%s, graph replay %d", name, round);
    bad += compare_float(what, got, want, values);
  }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(d_images));
  CUDA_OK(cudaFree(d_out));
  printf("%-48s %8zu values x 5 runs: %zu differ\n", name, values, bad);
  free(images), free(want), free(got), free(got_half);
  return bad;
}

int main(void) {
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  test_rng rng = {777};
  enum { CASES = 11 };
  tta_case cases[CASES] = {{0}};
  for (int i = 0; i < CASES; i++) ttp_tta_init(&cases[i].tta), cases[i].channels = 1;
  cases[0].rows = 28, cases[0].cols = 28, cases[0].count = 37, cases[0].tta.copies = 7;
  cases[1].rows = 13, cases[1].cols = 11, cases[1].count = 5, cases[1].tta.copies = 64;
  cases[1].tta.noise_kind = TTP_NOISE_GAUSSIAN, cases[1].tta.noise = 0.3f;
  cases[1].tta.keep_original = 0, cases[1].tta.clamp = 0, cases[1].tta.shift = 5;
  cases[1].tta.seed = 0xfedcba9876543210ull;
  cases[2].rows = 28, cases[2].cols = 28, cases[2].count = 1, cases[2].tta.copies = 1;
  cases[3].rows = 28, cases[3].cols = 28, cases[3].count = 513, cases[3].tta.copies = 5;
  cases[3].tta.noise_kind = TTP_NOISE_GAUSSIAN, cases[3].tta.contrast_min = 0.5f;
  cases[3].tta.contrast_max = 1.9f, cases[3].tta.brightness_min = -0.3f;
  /* RGB: three planes moved alike, noise drawn per channel, the model's scaling last; one of
     odd sizes whose planes are not a multiple of four values. */
  cases[4].channels = 3, cases[4].rows = 32, cases[4].cols = 32, cases[4].count = 19;
  cases[4].tta.copies = 5, cases[4].scaled = 1;
  cases[5].channels = 3, cases[5].rows = 9, cases[5].cols = 11, cases[5].count = 3;
  cases[5].tta.copies = 3, cases[5].tta.noise_kind = TTP_NOISE_GAUSSIAN, cases[5].scaled = 1;
  cases[5].tta.keep_original = 0, cases[5].tta.shift = 4;
  /* The geometric views (mirrors, rotation, scale, sub-pixel translation), each edge mode, one
     and three channels at odd sizes, with the noise and the scaling. */
  for (int i = 6; i < 9; i++) {
    ttp_tta* t = &cases[i].tta;
    t->copies = 6, t->flip_h = 0.5f, t->flip_v = 0.3f, t->rotate = 25;
    t->scale_min = 0.85f, t->scale_max = 1.2f, t->translate = 1.25f;
    t->edge = (ttp_edge)(i - 6);
  }
  cases[6].rows = 28, cases[6].cols = 28, cases[6].count = 41;
  cases[7].channels = 3, cases[7].rows = 13, cases[7].cols = 10, cases[7].count = 7;
  cases[7].scaled = 1, cases[7].tta.noise_kind = TTP_NOISE_GAUSSIAN;
  cases[8].rows = 9, cases[8].cols = 31, cases[8].count = 5, cases[8].tta.keep_original = 0;
  /* a list of views: airbench's six, and turns, zooms and fractional shifts */
  cases[9].tta = cases[0].tta, cases[9].rows = 28, cases[9].cols = 28, cases[9].count = 23;
  cases[9].tta.edge = TTP_EDGE_REFLECT;
  char error[256];
  CHECK(ttp_tta_set_views(&cases[9].tta, "none; flip_h; shift 1 0; flip_h shift 1 0; shift -1 0; "
                          "flip_h shift -1 0; rotate 13.5 scale 1.1; flip_v rotate -90 shift 0.5 "
                          "0.25; scale 0.7 shift -2 3", error, sizeof error) == TTP_OK,
        "%s", error);
  /* ttach's five crops and two mirrored ones, 3 channels of an odd size */
  cases[10].channels = 3, cases[10].rows = 15, cases[10].cols = 22, cases[10].count = 9;
  cases[10].scaled = 1, cases[10].tta.keep_original = 0;
  CHECK(ttp_tta_set_views(&cases[10].tta, "crop tl 0.875; crop tr 0.875; crop bl 0.875; crop br "
                          "0.875; crop c 0.875; flip_h crop tl 0.6; flip_v crop br 0.7 shift 1 -2",
                          error, sizeof error) == TTP_OK, "%s", error);
  size_t bad = 0;
  for (int i = 0; i < CASES; i++) bad += run_case(&cases[i], &rng);
  CHECK(bad == 0, "%zu values differ between the GPU and the CPU reference", bad);
  printf("tta gpu: kernel copies equal the CPU reference bit for bit (float), and as rounded "
         "(half), eager and replayed\n");
  return 0;
}
