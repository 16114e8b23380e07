// Test-time augmentation by one thread block, for the kernels that make copies: the
// augmentation kernel (tta_kernel.cu: copies to device memory) and the fused engine's first
// stage (pipeline/fused/: copies to shared memory). tta_core.h's arithmetic, so a file that
// includes this must be compiled with -fmad=false for the copies to equal the CPU's bits.
#ifndef TTP_AUGMENT_TTA_BLOCK_CUH
#define TTP_AUGMENT_TTA_BLOCK_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "../pipeline/element.cuh"
#include "tta_core.h"

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

// A pixel's value in [0, 1] as the CPU has it, (float)byte / 255, and the image kept in shared
// memory either as its bytes (converted at each use) or as these values (converted once: the
// fused engine's stage 1, which reads each pixel N times).
__device__ __forceinline__ float aug_value(uint8_t v) { return (float)v / 255.0f; }
__device__ __forceinline__ void aug_keep(uint8_t* image, int i, uint8_t v) { image[i] = v; }
__device__ __forceinline__ void aug_keep(float* image, int i, uint8_t v) { image[i] = aug_value(v); }
__device__ __forceinline__ float aug_pixel_at(const uint8_t* image, int i) { return aug_value(image[i]); }
__device__ __forceinline__ float aug_pixel_at(const float* image, int i) { return image[i]; }

// Loads an image of n bytes into image (shared: bytes or values) and returns its key to every
// thread; image is complete on return. A thread's loads are issued four at a time before any is
// used (one at a time, each waited for, cost a small batch an L2 round trip per pixel a thread),
// four bytes a load where src and n allow: a warp's 128 bytes then go as one request, where its
// byte loads went as 32-byte ones (the small batches' kernel reads the images from mapped host
// memory, across PCIe). The key is a sum of integers, the same in any order.
template <int THREADS, typename Image>
__device__ uint64_t aug_block_load(const uint8_t* __restrict__ src, int n, Image* image) {
  uint64_t sum = 0;
  auto take = [&](int i, uint8_t v) {  // pixel i's value kept, its key term added
    aug_keep(image, i, v);
    sum += aug_key_term((uint32_t)i, v);
  };
  if (n % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 4 == 0) {
    const uint32_t* __restrict__ words = reinterpret_cast<const uint32_t*>(src);
    for (int base = threadIdx.x; base < n / 4; base += 4 * THREADS) {
      uint32_t w[4];
#pragma unroll
      for (int j = 0; j < 4; j++) w[j] = base + j * THREADS < n / 4 ? words[base + j * THREADS] : 0;
#pragma unroll
      for (int j = 0; j < 4; j++)
        if (base + j * THREADS < n / 4)
#pragma unroll
          for (int b = 0; b < 4; b++) take(4 * (base + j * THREADS) + b, (uint8_t)(w[j] >> 8 * b));
    }
  } else {
    for (int base = threadIdx.x; base < n; base += 4 * THREADS) {
      uint8_t v[4];
#pragma unroll
      for (int j = 0; j < 4; j++) v[j] = base + j * THREADS < n ? src[base + j * THREADS] : 0;
#pragma unroll
      for (int j = 0; j < 4; j++)
        if (base + j * THREADS < n) take(base + j * THREADS, v[j]);
    }
  }
  return aug_key_finish(aug_block_sum<THREADS>(sum));  // synchronises
}

// The parameters of copies first .. first + n - 1 into params (shared), a thread each: computed
// once a copy, not by every thread that makes its pixels. The caller synchronises before use.
template <int THREADS>
__device__ void aug_block_params(const aug_spec& spec, uint64_t key, int first, int n,
                                 aug_params* params) {
  for (int c = threadIdx.x; c < n; c += THREADS)
    params[c] = aug_copy_params(&spec, key, (uint32_t)(first + c));
}

// Copy c of the image (shared, channels x rows x cols) with parameters p into dst: pixel (y, x)
// of channel ch at dst[(ch rows + y) pitch + x]; a geometric copy's pixel the bilinear value of
// four (aug_source_taps). Each thread makes four consecutive pixels at a
// time (one Philox call gives their noise; one division finds the first one's place).
template <int THREADS, typename T, typename Image>
__device__ void aug_block_copy(const aug_spec& spec, const aug_params& p, uint64_t key, int c,
                               const Image* image, int channels, int rows, int cols, T* dst,
                               int pitch) {
  const int plane = rows * cols, n = channels * plane, groups = (n + 3) / 4;
  for (int g = threadIdx.x; g < groups; g += THREADS) {
    float noise[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (!p.identity) aug_noise4(&spec, key, (uint32_t)c, (uint32_t)g, noise);
    int ch = 4 * g / plane, y = (4 * g - ch * plane) / cols, x = 4 * g - ch * plane - y * cols;
    for (int j = 0; j < 4 && 4 * g + j < n; j++) {
      float v;
      if (p.geometric) {
        int taps[4];
        float t[4], wx, wy;
        aug_source_taps(&spec, &p, y, x, rows, cols, taps, &wx, &wy);
#pragma unroll
        for (int k = 0; k < 4; k++)
          t[k] = taps[k] < 0 ? 0.0f : aug_pixel_at(image, ch * plane + taps[k]);
        v = aug_bilinear(t, wx, wy);
      } else {
        const int s = aug_source_index(&p, y, x, rows, cols);
        v = s < 0 ? 0.0f : aug_pixel_at(image, ch * plane + s);
      }
      dst[(ch * rows + y) * pitch + x] = gpu_narrow<T>(aug_pixel(&spec, &p, ch, v, noise[j]));
      if (++x == cols) {
        x = 0;
        if (++y == rows) y = 0, ch++;
      }
    }
  }
}

#endif
