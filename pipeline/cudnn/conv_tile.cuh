// What ttapipe's two NHWC convolution kernels share, conv_kernels.cu (one convolution) and
// conv_block_kernel.cu (two in a row): the element types' mma.sync and pairs of values, cp.async
// into shared memory, and the sums' start. Both multiply 16-pixel tiles of output (M) by all or a
// slice of the output channels (N), K = taps x input channels, with fp32 accumulation, A from
// a window of the input in shared memory by ldmatrix, B from the weights in shared memory as
// gpu_conv_weights lays them out (the fragments in register order), in conv_kernels.h's sum
// order.
#ifndef TTP_CONV_TILE_CUH
#define TTP_CONV_TILE_CUH

#include <cuda_fp16.h>

#include "conv_kernels.h"

namespace {

// What differs between the element types: the residual's pairs of values, their store, the
// mma. TF32's mma reads the top 19 bits of each fp32 word (the weights were rounded to them on
// upload; the activations are truncated).
template <typename T>
struct element;
template <>
struct element<__half> {
  using pair = __half2;
  static __device__ __forceinline__ pair load(const __half* p) {
    return __ldg(reinterpret_cast<const __half2*>(p));
  }
  static __device__ __forceinline__ pair none() { return __floats2half2_rn(0.0f, 0.0f); }
  static __device__ __forceinline__ float2 wide(pair v) { return __half22float2(v); }
  static __device__ __forceinline__ void store(__half* p, float a, float b) {
    *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
  }
  static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                             unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <>
struct element<float> {
  using pair = float2;
  static __device__ __forceinline__ pair load(const float* p) {
    return __ldg(reinterpret_cast<const float2*>(p));
  }
  static __device__ __forceinline__ pair none() { return make_float2(0.0f, 0.0f); }
  static __device__ __forceinline__ float2 wide(pair v) { return v; }
  static __device__ __forceinline__ void store(float* p, float a, float b) {
    *reinterpret_cast<float2*>(p) = make_float2(a, b);
  }
  static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                             unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// 16 bytes from global to shared memory, or 16 zeros where !valid.
__device__ __forceinline__ void copy16(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copies_wait_all_but_one() {
  asm volatile("cp.async.wait_group 1;\n" ::);
}
__device__ __forceinline__ void copies_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

// Whether the current device is of compute capability `major` or later and gives a block
// `shared` bytes of shared memory.
inline bool device_runs(int major, int shared) {
  int device = 0, have = 0, optin = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&have, cudaDevAttrComputeCapabilityMajor, device) ==
             cudaSuccess &&
         cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
             cudaSuccess &&
         have >= major && optin >= shared;
}

// The output channels a layer of k computes: k up to a multiple of 16 (a pair of n-tiles; the
// weights past k zeros, as gpu_conv_weights lays them out), those past k neither read nor stored.
__host__ __device__ constexpr int padded_k(int k) { return (k + 15) / 16 * 16; }

// acc[f][j] = bias of this lane's channels (k0 + j * 8 + t4 * 2, + 1), or 0 (no bias, or a
// channel at or past k: the padding of a layer of k channels, a multiple of 8, computed as a
// multiple of 16). A bias of -0 starts as +0 (+ 0.0f), so that a sum never holds -0 and adding a
// product of zeros leaves it as it is: a kernel may then skip the taps it knows to read zeros and
// keep the bits.
template <int KT, int Tiles>
__device__ __forceinline__ void start_sums(float (&acc)[Tiles][KT / 8][4],
                                           const float* __restrict__ bias, int k0, int t4,
                                           int k = KT) {
#pragma unroll
  for (int j = 0; j < KT / 8; j++) {
    const bool real = bias && k0 + j * 8 < k;
    const float b0 = real ? bias[k0 + j * 8 + t4 * 2] + 0.0f : 0.0f;
    const float b1 = real ? bias[k0 + j * 8 + t4 * 2 + 1] + 0.0f : 0.0f;
#pragma unroll
    for (int f = 0; f < Tiles; f++)
      acc[f][j][0] = b0, acc[f][j][1] = b1, acc[f][j][2] = b0, acc[f][j][3] = b1;
  }
}

}  // namespace

#endif
