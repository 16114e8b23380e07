// The GPU toolchain on this machine: a kernel built for the configured architectures runs, and
// cuDNN and cuBLAS load and compute. A 37 x 53 x 29 SGEMM through cuBLAS and a kernel that
// scales random bytes by 1/255 are compared with the host. Skipped (77) without a GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ttapipe.h"

#define DIE_IF(cond, ...)                                      \
  do {                                                         \
    if (cond) {                                                \
      std::fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);     \
      std::fprintf(stderr, __VA_ARGS__);                       \
      std::fputc('\n', stderr);                                \
      std::exit(1);                                            \
    }                                                          \
  } while (0)
#define CUDA(call)                                                                      \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    DIE_IF(e_ != cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
  } while (0)

__global__ void scale_kernel(const unsigned char* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)in[i] / 255.0f;
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  DIE_IF(ttp_gpu_count() != devices, "ttp_gpu_count says %d, CUDA %d", ttp_gpu_count(), devices);
  cudaDeviceProp prop;
  CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device 0: %s, sm_%d%d; %s\n", prop.name, prop.major, prop.minor, ttp_build_string());

  // A kernel of our own.
  const int n = 1001;
  std::vector<unsigned char> bytes(n);
  for (int i = 0; i < n; i++) bytes[i] = (unsigned char)((i * 2654435761u) >> 24);
  unsigned char* d_in;
  float* d_out;
  CUDA(cudaMalloc(&d_in, n));
  CUDA(cudaMalloc(&d_out, n * sizeof(float)));
  CUDA(cudaMemcpy(d_in, bytes.data(), n, cudaMemcpyHostToDevice));
  CUDA(cudaMemset(d_out, 0xff, n * sizeof(float)));  // NaN
  scale_kernel<<<(n + 127) / 128, 128>>>(d_in, d_out, n);
  CUDA(cudaGetLastError());
  std::vector<float> scaled(n);
  CUDA(cudaMemcpy(scaled.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++)
    DIE_IF(scaled[i] != (float)bytes[i] / 255.0f, "scale[%d] = %g", i, scaled[i]);

  // cuDNN loads.
  cudnnHandle_t dnn;
  DIE_IF(cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS, "cudnnCreate failed");
  std::printf("cuDNN %zu (built against %d)\n", cudnnGetVersion(), CUDNN_VERSION);
  cudnnDestroy(dnn);

  // cuBLAS computes: C (m x n) = A (m x k) B (k x n), column-major, random odd sizes.
  const int M = 37, N = 53, K = 29;
  std::vector<float> A(M * K), B(K * N), C(M * N);
  for (int i = 0; i < M * K; i++) A[i] = std::sin(0.7f * i);
  for (int i = 0; i < K * N; i++) B[i] = std::cos(0.3f * i);
  float *dA, *dB, *dC;
  CUDA(cudaMalloc(&dA, A.size() * 4));
  CUDA(cudaMalloc(&dB, B.size() * 4));
  CUDA(cudaMalloc(&dC, C.size() * 4));
  CUDA(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice));
  CUDA(cudaMemset(dC, 0xff, C.size() * 4));
  cublasHandle_t blas;
  DIE_IF(cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
  DIE_IF(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS, "math mode");
  const float one = 1.0f, zero = 0.0f;
  DIE_IF(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, dA, M, dB, K, &zero, dC, M) !=
             CUBLAS_STATUS_SUCCESS,
         "cublasSgemm failed");
  CUDA(cudaMemcpy(C.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int j = 0; j < N; j++)
    for (int i = 0; i < M; i++) {
      double want = 0;
      for (int k = 0; k < K; k++) want += (double)A[i + k * M] * B[k + j * K];
      if (!(std::fabs(C[i + j * M] - want) <= 1e-5 + 1e-5 * std::fabs(want)) && bad++ < 5)
        std::fprintf(stderr, "C[%d,%d] = %.7g, want %.7g\n", i, j, C[i + j * M], want);
    }
  DIE_IF(bad, "%d SGEMM values out of tolerance", bad);
  cublasDestroy(blas);
  CUDA(cudaFree(d_in));
  CUDA(cudaFree(d_out));
  CUDA(cudaFree(dA));
  CUDA(cudaFree(dB));
  CUDA(cudaFree(dC));
  std::printf("gpu toolchain: kernel, cuDNN and cuBLAS work\n");
  return 0;
}
