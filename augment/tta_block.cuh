// Test-time augmentation by one thread block, for the kernels that make copies: the
// augmentation kernel (tta_kernel.cu: copies to device memory) and the fused engine's first
// stage (pipeline/fused/: copies to shared memory). tta_core.h's arithmetic, so a file that
// includes this must be compiled with -fmad=false for the copies to equal the CPU's bits.
#ifndef TTP_AUGMENT_TTA_BLOCK_CUH
#define TTP_AUGMENT_TTA_BLOCK_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "tta_core.h"

template <typename T>
__device__ __forceinline__ T aug_to(float v);
template <>
__device__ __forceinline__ float aug_to<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half aug_to<__half>(float v) { return __float2half_rn(v); }

// The sum of v over the block's THREADS threads (a multiple of 32), returned to every thread.
template <int THREADS>
__device__ uint64_t aug_block_sum(uint64_t v) {
  __shared__ uint64_t warp_sums[THREADS / 32];
  __shared__ uint64_t total;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < THREADS / 32 ? warp_sums[lane] : 0;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}

// Loads an image of n bytes into image (shared) and returns its key to every thread; image is
// complete on return.
template <int THREADS>
__device__ uint64_t aug_block_load(const uint8_t* __restrict__ src, int n, uint8_t* image) {
  uint64_t sum = 0;
  for (int i = threadIdx.x; i < n; i += THREADS) {
    const uint8_t v = src[i];
    image[i] = v;
    sum += aug_key_term((uint32_t)i, v);
  }
  return aug_key_finish(aug_block_sum<THREADS>(sum));  // synchronises
}

// Copy c of the image (shared, rows x cols bytes) into dst: pixel (y, x) at dst[y pitch + x].
// Each thread makes four consecutive pixels at a time (one Philox call gives their noise).
template <int THREADS, typename T>
__device__ void aug_block_copy(const aug_spec& spec, uint64_t key, int c, const uint8_t* image,
                               int rows, int cols, T* dst, int pitch) {
  const int n = rows * cols, groups = (n + 3) / 4;
  const aug_params p = aug_copy_params(&spec, key, (uint32_t)c);
  for (int g = threadIdx.x; g < groups; g += THREADS) {
    float noise[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (!p.identity) aug_noise4(&spec, key, (uint32_t)c, (uint32_t)g, noise);
    for (int j = 0; j < 4 && 4 * g + j < n; j++) {
      const int i = 4 * g + j, y = i / cols, x = i % cols;
      const int s = aug_source_index(&p, y, x, rows, cols);
      const float v = s < 0 ? 0.0f : (float)image[s] / 255.0f;
      dst[y * pitch + x] = aug_to<T>(aug_pixel(&spec, &p, v, noise[j]));
    }
  }
}

#endif
