// The element types of the GPU kernels (the cudnn engine's, the augmentation's copies), fp16
// (__half) and fp32: a value widened to fp32 for the arithmetic, and an fp32 result rounded once
// to the element (to nearest, ties to even).
#ifndef TTP_ELEMENT_CUH
#define TTP_ELEMENT_CUH

#include <cuda_fp16.h>

__device__ __forceinline__ float gpu_wide(float v) { return v; }
__device__ __forceinline__ float gpu_wide(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T gpu_narrow(float v);
template <>
__device__ __forceinline__ float gpu_narrow<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half gpu_narrow<__half>(float v) { return __float2half_rn(v); }

#endif
