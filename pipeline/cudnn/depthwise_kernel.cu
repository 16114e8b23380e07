// ttapipe's NHWC depthwise convolution with its epilogue (see depthwise_kernel.h), in fp16 or
// fp32.
//
// A thread computes one 16-byte vector of channels (8 in fp16, 4 in fp32) of one output pixel:
// for each tap of the window, one 16-byte load of the input pixel's channels and one of the
// tap's weights, fp32 multiply-adds. Consecutive threads take consecutive vectors of a pixel,
// then the next pixels of the row, so a warp's loads and stores are contiguous. A block's
// threads lie in one image (blockIdx.x over the blocks an image): 32-bit indices inside it. The
// 3x3 window, MobileNets' own, is unrolled at compile time so that its nine loads are in flight
// together; other windows loop.
#include <cuda_fp16.h>

#include "../element.cuh"
#include "depthwise_kernel.h"

namespace {

constexpr int kThreads = 256;

// Blocks an image takes at `vector` channels a thread.
__host__ __device__ inline long long blocks_an_image(const gpu_conv_shape& s, int vector) {
  return ((long long)s.p * s.q * (s.c / vector) + kThreads - 1) / kThreads;
}

template <typename T, int R, int S>
__global__ void __launch_bounds__(kThreads) depthwise_nhwc_kernel(
    const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
    const T* __restrict__ z, T* __restrict__ y, gpu_conv_shape s, gpu_clamp clamp) {
  constexpr int kVector = 16 / sizeof(T);  // channels a thread
  const int vectors = s.c / kVector;
  // Blocks walk one image's rows before the next image's, so that the rows a block reads above
  // and below its own are in the L2 from its neighbours (a grid of image-major blocks read each
  // input about three times from memory).
  const int per_image = (int)blocks_an_image(s, kVector);
  const long long image = blockIdx.x / per_image;
  const int i = (int)(blockIdx.x - image * per_image) * kThreads + threadIdx.x;  // (p, q, vector)
  if (i >= s.p * s.q * vectors) return;
  const int v = i % vectors, pixel = i / vectors;
  const int p = pixel / s.q, q = pixel % s.q;
  const int r_count = R ? R : s.r, s_count = S ? S : s.s;
  const T* plane = x + image * s.h * s.w * s.c + v * kVector;
  const T* taps = w + v * kVector;
  float sum[kVector];
#pragma unroll
  for (int u = 0; u < kVector; u++) sum[u] = bias ? bias[v * kVector + u] + 0.0f : 0.0f;
#pragma unroll
  for (int r = 0; r < r_count; r++) {
    const int row = p * s.stride_h - s.pad_t + r * s.dil_h;
#pragma unroll
    for (int t = 0; t < s_count; t++) {
      const int col = q * s.stride_w - s.pad_l + t * s.dil_w;
      if (row < 0 || row >= s.h || col < 0 || col >= s.w) continue;
      const uint4 xv = __ldg(reinterpret_cast<const uint4*>(plane + (row * s.w + col) * s.c));
      const uint4 wv = __ldg(reinterpret_cast<const uint4*>(taps + (r * s_count + t) * s.c));
      const T* xs = reinterpret_cast<const T*>(&xv);
      const T* ws = reinterpret_cast<const T*>(&wv);
#pragma unroll
      for (int u = 0; u < kVector; u++) sum[u] = fmaf(gpu_wide(xs[u]), gpu_wide(ws[u]), sum[u]);
    }
  }
  // The epilogue: + the residual's values, the clamp, each rounded once, one 16-byte store.
  const long long at = (image * s.p * s.q + pixel) * s.c + v * kVector;
  if (z) {
    const uint4 zv = __ldg(reinterpret_cast<const uint4*>(z + at));
    const T* zs = reinterpret_cast<const T*>(&zv);
#pragma unroll
    for (int u = 0; u < kVector; u++) sum[u] += gpu_wide(zs[u]);
  }
  uint4 result;
  T* out = reinterpret_cast<T*>(&result);
#pragma unroll
  for (int u = 0; u < kVector; u++) out[u] = gpu_narrow<T>(gpu_clamped(sum[u], clamp));
  *reinterpret_cast<uint4*>(y + at) = result;
}

template <typename T>
void launch(const void* x, const void* weights, const float* bias, const void* z, void* y,
            const gpu_conv_shape& s, gpu_clamp clamp, cudaStream_t stream) {
  const unsigned grid = (unsigned)(s.n * blocks_an_image(s, 16 / (int)sizeof(T)));
  const T *xt = static_cast<const T*>(x), *wt = static_cast<const T*>(weights);
  const T* zt = static_cast<const T*>(z);
  T* yt = static_cast<T*>(y);
  if (s.r == 3 && s.s == 3)
    depthwise_nhwc_kernel<T, 3, 3><<<grid, kThreads, 0, stream>>>(xt, wt, bias, zt, yt, s, clamp);
  else
    depthwise_nhwc_kernel<T, 0, 0><<<grid, kThreads, 0, stream>>>(xt, wt, bias, zt, yt, s, clamp);
}

}  // namespace

extern "C" int gpu_depthwise_nhwc_takes(const gpu_conv_shape* s) {
  const long long per_image = blocks_an_image(*s, 4); /* fp32's, the most */
  return s->c == s->k && s->c % 8 == 0 && s->c > 0 && s->n >= 1 &&
         (long long)s->h * s->w * s->c <= 0x7fffffff &&  /* 32-bit indices inside an image */
         (long long)s->p * s->q * s->c <= 0x7fffffff && (long long)s->n * per_image <= 0x7fffffff;
}

extern "C" ttp_status gpu_depthwise_nhwc(const void* x, const void* weights, const float* bias,
                                         const void* z, void* y, const gpu_conv_shape* s,
                                         gpu_clamp clamp, int half, cudaStream_t stream,
                                         ttp_err* e) {
  if (!gpu_depthwise_nhwc_takes(s))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_depthwise_nhwc: %d to %d channels (equal, a "
               "multiple of 8)", s->c, s->k);
  if (half) launch<__half>(x, weights, bias, z, y, *s, clamp, stream);
  else launch<float>(x, weights, bias, z, y, *s, clamp, stream);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "depthwise_nhwc_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}

extern "C" void gpu_depthwise_weights(const float* c1rs, int c, int r, int s, float* rsc) {
  for (int ch = 0; ch < c; ch++)
    for (int a = 0; a < r; a++)
      for (int b = 0; b < s; b++) rsc[((size_t)a * s + b) * c + ch] = c1rs[((size_t)ch * r + a) * s + b];
}
