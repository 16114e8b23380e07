// Device helpers of the fused engine's kernels (fused_kernels.cu), some shared with its kernel
// lab's retired variants (tests/bench/conv2_lab.cu): the NaN-propagating max of the CPU's
// pooling, the optional ReLU, the 6x6 input patch under one pooled output of a 5x5 convolution,
// the block's copies from global into shared memory (loads in flight, cp.async, Hopper's bulk
// copies), and conv2's zero-padded input tile.
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

// store(i, load(i)) for i < n over the block's threads, kBatch loads in flight a thread: a plain
// loop waits on each load before it issues the next, an L2 round trip (~0.5 us) an iteration,
// which at batch 1 made most of each stage's time (tests/bench/NOTES.md).
template <int kBatch, typename T, typename Load, typename Store>
__device__ __forceinline__ void block_batched(int n, Load load, Store store) {
  for (int base = threadIdx.x; base < n; base += kBatch * blockDim.x) {
    T v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; j++) {
      const int i = base + j * blockDim.x;
      if (i < n) v[j] = load(i);
    }
#pragma unroll
    for (int j = 0; j < kBatch; j++) {
      const int i = base + j * blockDim.x;
      if (i < n) store(i, v[j]);
    }
  }
}

// 16 bytes from global to shared memory without a trip through registers (cp.async, sm_80 on;
// through L2, so it sees what other blocks of the same launch wrote): a thread's copies are all
// in flight at once, each complete after copy_wait() in that thread.
__device__ __forceinline__ void copy16_async(void* to, const void* from) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                   (unsigned)__cvta_generic_to_shared(to)),
               "l"(from)
               : "memory");
}

__device__ __forceinline__ void copy_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// A contiguous copy of `bytes` (a multiple of 16, both ends 16-byte aligned) from global to
// shared memory, complete once bulk_wait(bar) returns, bar an mbarrier that bulk_init set up
// after the block's last use of that shared memory (and a barrier since). Hopper: one thread
// hands the whole copy to the TMA unit (cp.async.bulk), where 16-byte cp.async took every
// thread ~14 instructions a copy (a batch of one's fc1 items spent ~40% of their time issuing
// them); before Hopper, the block's 16-byte cp.async, in the caller's current commit group.
__device__ __forceinline__ void bulk_init(unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  if (threadIdx.x != 0) return;
  const unsigned a = (unsigned)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(a) : "memory");
  // The barrier's initialisation, and the block's earlier writes to the shared memory the copy
  // overwrites, ordered before the copy engine's accesses.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void bulk_copy(void* to, const void* from, int bytes,
                                          unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(bar);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(a), "r"(bytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
            (unsigned)__cvta_generic_to_shared(to)),
        "l"(from), "r"(bytes), "r"(a)
        : "memory");
  }
#else
  for (int i = threadIdx.x; i < bytes / 16; i += blockDim.x)
    copy16_async(static_cast<char*>(to) + 16 * i, static_cast<const char*>(from) + 16 * i);
#endif
}

// Waits for bulk_copy's copy into bar's memory (a thread's own cp.async before Hopper: the
// caller's barrier then shows everyone's).
__device__ __forceinline__ void bulk_wait(unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  const unsigned a = (unsigned)__cvta_generic_to_shared(bar);
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a)
        : "memory");
#endif
}

// Ends bar's use (after a barrier: nobody waits on it any more).
__device__ __forceinline__ void bulk_done(unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0)
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"((unsigned)__cvta_generic_to_shared(bar))
                 : "memory");
#endif
}

// Copies n floats from global memory into shared memory over the block's threads, complete
// after copy_wait() and a barrier: cp.async where both ends are 16-byte aligned, else 16-byte
// loads where `from` is (stores of four floats), else one float at a time, a thread's loads in
// flight before its stores. (A plain loop waited on each L2 round trip in turn.)
__device__ __forceinline__ void block_copy_async(const float* from, float* to, int n) {
  const bool from16 = reinterpret_cast<uintptr_t>(from) % 16 == 0;
  if (from16 && reinterpret_cast<uintptr_t>(to) % 16 == 0) {
    for (int i = threadIdx.x; i < n / 4; i += blockDim.x) copy16_async(to + 4 * i, from + 4 * i);
  } else if (from16) {
    const float4* from4 = reinterpret_cast<const float4*>(from);
    block_batched<8, float4>(n / 4, [&](int i) { return from4[i]; }, [&](int i, float4 v) {
      to[4 * i] = v.x, to[4 * i + 1] = v.y, to[4 * i + 2] = v.z, to[4 * i + 3] = v.w;
    });
  } else {
    block_batched<8, float>(n, [&](int i) { return from[i]; }, [&](int i, float v) { to[i] = v; });
    return;
  }
  for (int i = n / 4 * 4 + threadIdx.x; i < n; i += blockDim.x) to[i] = from[i];
}

// Copies n rows of act1 (fp32 CHW, row0 first) into shared memory zero-padded by pad2 for conv2:
// channel cc of copy c at tile + c stride + cc plane, plane = (P1 + 2 pad2) (Q1 + 2 pad2). The
// whole block takes part; the caller waits (copy_wait) and synchronises before use. Unpadded
// (LeNet), a copy is one contiguous block_copy_async; padded, each element's place takes
// run-time divisions (~100 instructions an element, most of a batch of one's stage 2 when every
// element paid them).
__device__ __forceinline__ void load_padded_act1(const fused_shape& s, const float* act1,
                                                 int row0, int n, int stride, float* tile) {
  const int pitch = s.p1_w + 2 * s.pad2, plane = (s.p1_h + 2 * s.pad2) * pitch;
  const int copy_plane = s.k1 * plane, in_plane = s.p1_h * s.p1_w;
  for (int c = 0; c < n; c++) {
    const float* from = act1 + (size_t)(row0 + c) * s.k1 * in_plane;
    if (s.pad2 == 0) {
      block_copy_async(from, tile + c * stride, copy_plane);
      continue;
    }
    block_batched<8, float>(
        copy_plane,
        [&](int i) {
          const int y = i % plane / pitch - s.pad2, x = i % pitch - s.pad2, cc = i / plane;
          return y >= 0 && y < s.p1_h && x >= 0 && x < s.p1_w ? from[cc * in_plane + y * s.p1_w + x]
                                                              : 0.0f;
        },
        [&](int i, float v) { tile[c * stride + i] = v; });
  }
}

#endif
