// The cudnn engine's own kernels (see cudnn_kernels.h): grid-stride loops, one element a thread.
#include <cuda_fp16.h>

#include "cudnn_kernels.h"

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(size_t count) {
  size_t b = (count + kThreads - 1) / kThreads;
  return (unsigned)(b < 65536 ? (b ? b : 1) : 65536);
}

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }

template <typename T>
__global__ void bias_kernel(T* __restrict__ x, const T* __restrict__ bias, size_t total,
                            int channels, int plane) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x)
    store(&x[i], widen(x[i]) + widen(bias[(i / plane) % channels]));
}

template <typename From, typename To>
__global__ void convert_kernel(const From* __restrict__ in, To* __restrict__ out, size_t count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x)
    store(&out[i], widen(in[i]));
}

template <typename T>
__global__ void pointwise_kernel(gpu_pointwise_op op, float a, float b, const T* in, T* out,
                                 size_t count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x) {
    const float x = widen(in[i]);
    float y;
    switch (op) {  // comparisons false for NaN: it passes through
      case GPU_LEAKY_RELU: y = x < 0.0f ? a * x : x; break;
      case GPU_SIGMOID: y = 1.0f / (1.0f + expf(-x)); break;
      case GPU_TANH: y = tanhf(x); break;
      default: y = x < a ? a : x > b ? b : x; break;
    }
    store(&out[i], y);
  }
}

ttp_status launched(const char* what, ttp_err* e) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ERR(e, TTP_ERR_CUDA, "%s launch: %s", what, cudaGetErrorString(err));
  return TTP_OK;
}

}  // namespace

extern "C" ttp_status gpu_bias_add(void* x, const void* bias, size_t n, int channels, int plane,
                                   int half, cudaStream_t stream, ttp_err* e) {
  size_t total = n * channels * plane;
  if (half)
    bias_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<__half*>(x), static_cast<const __half*>(bias), total, channels, plane);
  else
    bias_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<float*>(x), static_cast<const float*>(bias), total, channels, plane);
  return launched("bias_kernel", e);
}

extern "C" ttp_status gpu_pointwise(gpu_pointwise_op op, float a, float b, const void* in,
                                    void* out, size_t count, int half, cudaStream_t stream,
                                    ttp_err* e) {
  if (half)
    pointwise_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        op, a, b, static_cast<const __half*>(in), static_cast<__half*>(out), count);
  else
    pointwise_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        op, a, b, static_cast<const float*>(in), static_cast<float*>(out), count);
  return launched("pointwise_kernel", e);
}

extern "C" ttp_status gpu_to_half(const float* in, void* out, size_t count, cudaStream_t stream,
                                  ttp_err* e) {
  convert_kernel<<<blocks_for(count), kThreads, 0, stream>>>(in, static_cast<__half*>(out), count);
  return launched("convert_kernel", e);
}

extern "C" ttp_status gpu_to_float(const void* in, float* out, size_t count, cudaStream_t stream,
                                   ttp_err* e) {
  convert_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const __half*>(in), out,
                                                             count);
  return launched("convert_kernel", e);
}
