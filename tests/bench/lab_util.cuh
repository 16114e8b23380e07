// What the kernel labs (conv_lab.cu, depthwise_lab.cu) share: their command line, uniform random
// numbers from a seed, fp16 or fp32 tensors with their values as floats and a device copy, uploads,
// cuDNN's status check, the check against a CPU reference, and the median time of a launch over
// CUDA events.
#ifndef TTP_LAB_UTIL_CUH
#define TTP_LAB_UTIL_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "pipeline/cudnn/conv_kernels.h"
#include "tests/common/check_cuda.h"

inline unsigned lab_rng_state = 1u;
inline void lab_seed(unsigned seed) { lab_rng_state = seed; }
inline float uniform(float lo, float hi) {
  lab_rng_state = lab_rng_state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(lab_rng_state >> 8) / 16777216.0f;
}

// Host arrays in fp16 (and their values as floats) or in fp32, and their device copies.
struct tensor {
  std::vector<float> value;
  std::vector<__half> half;  // fp16 tensors only
  void* dev = nullptr;
  void fill(size_t n, float lo, float hi, bool in_half = true) {
    value.resize(n), half.resize(in_half ? n : 0);
    for (size_t i = 0; i < n; i++) {
      value[i] = uniform(lo, hi);
      if (in_half) half[i] = __float2half_rn(value[i]), value[i] = __half2float(half[i]);
    }
    const size_t bytes = n * (in_half ? sizeof(__half) : sizeof(float));
    CHECK_CUDA(cudaMalloc(&dev, bytes));
    CHECK_CUDA(cudaMemcpy(dev, in_half ? (const void*)half.data() : (const void*)value.data(),
                          bytes, cudaMemcpyHostToDevice));
  }
  ~tensor() { cudaFree(dev); }
};

// A lab's command line: --validate (check only), --rows N, --runs R; `program` names it in the
// usage line.
struct lab_options {
  int validate_only = 0, rows = 5120, runs = 20;
};
inline lab_options lab_options_of(int argc, char** argv, const char* program) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // each line out as it comes, though a timeout kills us
  lab_options o;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--validate") == 0) o.validate_only = 1;
    else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) o.rows = atoi(argv[++i]);
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) o.runs = atoi(argv[++i]);
    else CHECK(0, "usage: %s [--validate] [--rows N] [--runs R]", program);
  }
  return o;
}

// Whether there is a GPU; where there is none, says so (the lab then exits 77: skipped).
inline bool lab_have_gpu() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return true;
  printf("skipped: no GPU\n");
  return false;
}

// What a lab's timing part starts with: device 0's properties (its name for the tables) and a
// stream of its own.
struct lab_device {
  cudaDeviceProp prop;
  cudaStream_t stream;
  lab_device() {
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    CHECK_CUDA(cudaStreamCreate(&stream));
  }
};

// A new device buffer holding `bytes` from host memory.
inline void* lab_upload(const void* host, size_t bytes) {
  void* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, bytes));
  CHECK_CUDA(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
  return dev;
}

// Host floats, rounded to fp16 where in_half, in a new device buffer.
inline void* lab_upload_values(const std::vector<float>& values, bool in_half) {
  if (!in_half) return lab_upload(values.data(), values.size() * sizeof(float));
  std::vector<__half> half(values.size());
  for (size_t i = 0; i < values.size(); i++) half[i] = __float2half_rn(values[i]);
  return lab_upload(half.data(), half.size() * sizeof(__half));
}

#define CHECK_DNN(call)                                                                      \
  do {                                                                                       \
    const cudnnStatus_t st_ = (call);                                                        \
    CHECK(st_ == CUDNN_STATUS_SUCCESS, "%s: %s", #call, cudnnGetErrorString(st_));           \
  } while (0)

// What an output should be (the reference, in double) and how far from it the kernel may lie.
struct lab_want {
  double value, bound;
};

// Poisons y (n x p x q x k values, fp16 where in_half, else fp32: NaN either way), runs run() on
// the default stream, and checks every output against reference(image, p, q, k), a lab_want
// (every 61st image of large runs). Prints the largest difference on a line named `name`.
template <typename Run, typename Ref>
void lab_validate(const char* name, const gpu_conv_shape& s, void* y, bool in_half, Run run,
                  Ref reference) {
  const size_t count = (size_t)s.n * s.p * s.q * s.k;
  const size_t elem = in_half ? sizeof(__half) : sizeof(float);
  CHECK_CUDA(cudaMemset(y, 0xff, count * elem));
  run();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> got(count * elem);
  CHECK_CUDA(cudaMemcpy(got.data(), y, count * elem, cudaMemcpyDeviceToHost));
  double worst = 0;
  const int step = s.n > 64 ? 61 : 1;
  for (int image = 0; image < s.n; image += step)
    for (int p = 0; p < s.p; p++)
      for (int q = 0; q < s.q; q++)
        for (int k = 0; k < s.k; k++) {
          const lab_want want = reference(image, p, q, k);
          const size_t at = (((size_t)image * s.p + p) * s.q + q) * s.k + k;
          const double g = in_half ? __half2float(reinterpret_cast<const __half*>(got.data())[at])
                                   : reinterpret_cast<const float*>(got.data())[at];
          const double d = fabs(g - want.value);
          CHECK(d <= want.bound, "%s (%s): image %d (%d, %d) channel %d: %.7g, the reference %.7g",
                name, in_half ? "fp16" : "fp32", image, p, q, k, g, want.value);
          worst = std::max(worst, d);
        }
  printf("  %-7s %s %dx%dx%d -> %dx%dx%d: max |diff| %.3g\n", name, in_half ? "fp16" : "fp32",
         s.h, s.w, s.c, s.p, s.q, s.k, worst);
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
