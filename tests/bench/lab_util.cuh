// What the kernel labs (conv_lab.cu, depthwise_lab.cu) share: uniform random numbers from a seed,
// fp16 tensors with their values as floats and a device copy, cuDNN's status check, and the
// median time of a launch over CUDA events.
#ifndef TTP_LAB_UTIL_CUH
#define TTP_LAB_UTIL_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <vector>

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
