// What the kernel labs (conv_lab.cu, depthwise_lab.cu) share: uniform random numbers from a seed,
// fp16 tensors with their values as floats and a device copy, cuDNN's status check, and the
// median time of a launch over CUDA events.
#ifndef TTP_LAB_UTIL_CUH
#define TTP_LAB_UTIL_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <vector>

#include "pipeline/cudnn/conv_kernels.h"
#include "tests/common/check_cuda.h"

inline unsigned lab_rng_state = 1u;
inline void lab_seed(unsigned seed) { lab_rng_state = seed; }
inline float uniform(float lo, float hi) {
  lab_rng_state = lab_rng_state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(lab_rng_state >> 8) / 16777216.0f;
}

// Host arrays in fp16 (and their values as floats) and their device copies.
struct tensor {
  std::vector<float> value;
  std::vector<__half> half;
  void* dev = nullptr;
  void fill(size_t n, float lo, float hi) {
    value.resize(n), half.resize(n);
    for (size_t i = 0; i < n; i++) {
      half[i] = __float2half_rn(uniform(lo, hi));
      value[i] = __half2float(half[i]);
    }
    CHECK_CUDA(cudaMalloc(&dev, n * sizeof(__half)));
    CHECK_CUDA(cudaMemcpy(dev, half.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
  }
  ~tensor() { cudaFree(dev); }
};

#define CHECK_DNN(call)                                                                      \
  do {                                                                                       \
    const cudnnStatus_t st_ = (call);                                                        \
    CHECK(st_ == CUDNN_STATUS_SUCCESS, "%s: %s", #call, cudnnGetErrorString(st_));           \
  } while (0)

// Poisons y (n x p x q x k fp16 values, NaN), runs run() on the default stream, and checks
// every output against reference(image, p, q, k) (every 7th image of large runs):
// |got - want| <= 2^-10 |want| + 1e-3. Prints the largest difference on a line named `name`.
template <typename Run, typename Ref>
void lab_validate(const char* name, const gpu_conv_shape& s, void* y, Run run, Ref reference) {
  const size_t count = (size_t)s.n * s.p * s.q * s.k;
  CHECK_CUDA(cudaMemset(y, 0xff, count * sizeof(__half)));  // NaN in fp16
  run();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<__half> got(count);
  CHECK_CUDA(cudaMemcpy(got.data(), y, count * sizeof(__half), cudaMemcpyDeviceToHost));
  double worst = 0;
  const int step = s.n > 64 ? 7 : 1;
  for (int image = 0; image < s.n; image += step)
    for (int p = 0; p < s.p; p++)
      for (int q = 0; q < s.q; q++)
        for (int k = 0; k < s.k; k++) {
          const double want = reference(image, p, q, k);
          const double g = __half2float(got[(((size_t)image * s.p + p) * s.q + q) * s.k + k]);
          const double d = fabs(g - want);
          CHECK(d <= 0x1p-10 * fabs(want) + 1e-3, "%s: image %d (%d, %d) channel %d: %.6g, "
                "the reference %.6g", name, image, p, q, k, g, want);
          worst = std::max(worst, d);
        }
  printf("  %-7s %dx%dx%d -> %dx%dx%d: max |diff| %.3g\n", name, s.h, s.w, s.c, s.p, s.q, s.k,
         worst);
}

// The median of `runs` timed launches of run(stream), after three untimed ones.
template <typename F>
float median_ms(F run, int runs, cudaStream_t stream) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; i++) run(stream);
  std::vector<float> ms;
  for (int i = 0; i < runs; i++) {
    CHECK_CUDA(cudaEventRecord(a, stream));
    run(stream);
    CHECK_CUDA(cudaEventRecord(b, stream));
    CHECK_CUDA(cudaEventSynchronize(b));
    float t;
    CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(a), cudaEventDestroy(b);
  return ms[ms.size() / 2];
}

#endif
