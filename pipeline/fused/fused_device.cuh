// Device helpers of the fused engine's kernels (fused_kernels.cu) that its kernel lab's retired
// variants (tests/bench/conv2_lab.cu) share: the NaN-propagating max of the CPU's pooling, the
// optional ReLU, the 6x6 input patch under one pooled output of a 5x5 convolution, and conv2's
// zero-padded input tile.
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

// Copies n rows of act1 (fp32 CHW, row0 first) into shared memory zero-padded by pad2 for conv2:
// channel cc of copy c at tile + c stride + cc plane, plane = (P1 + 2 pad2) (Q1 + 2 pad2). The
// whole block takes part; the caller synchronises before use.
__device__ __forceinline__ void load_padded_act1(const fused_shape& s, const float* act1,
                                                 int row0, int n, int stride, float* tile) {
  const int pitch = s.p1_w + 2 * s.pad2, plane = (s.p1_h + 2 * s.pad2) * pitch;
  const int copy_plane = s.k1 * plane, in_plane = s.p1_h * s.p1_w;
  for (int i = threadIdx.x; i < n * copy_plane; i += blockDim.x) {
    const int y = i % plane / pitch - s.pad2, x = i % pitch - s.pad2, cc = i / plane;
    tile[i / copy_plane * stride + i % copy_plane] =
        y >= 0 && y < s.p1_h && x >= 0 && x < s.p1_w
            ? act1[((size_t)row0 * s.k1 + cc) * in_plane + y * s.p1_w + x]
            : 0.0f;
  }
}

#endif
