// Device helpers of the fused engine's kernels (fused_kernels.cu) that its kernel lab's retired
// variants (tests/bench/conv2_lab.cu) share: the NaN-propagating max of the CPU's pooling, the
// optional ReLU, and the 6x6 input patch under one pooled output of a 5x5 convolution.
#ifndef TTP_FUSED_DEVICE_CUH
#define TTP_FUSED_DEVICE_CUH

#include "fused_kernels.h"

constexpr int kFusedWindow = FUSED_CONV + FUSED_POOL - 1;  // input rows/columns under one pooled output

// max() that propagates NaN, as cpu_maxpool does.
__device__ __forceinline__ float nan_max(float a, float b) { return b > a || isnan(b) ? b : a; }

__device__ __forceinline__ float relu_if(int relu, float v) { return relu && v < 0.0f ? 0.0f : v; }

__device__ __forceinline__ void load_patch(float (&patch)[kFusedWindow][kFusedWindow],
                                           const float* x, int pitch) {
#pragma unroll
  for (int r = 0; r < kFusedWindow; r++)
#pragma unroll
    for (int s = 0; s < kFusedWindow; s++) patch[r][s] = x[r * pitch + s];
}

#endif
