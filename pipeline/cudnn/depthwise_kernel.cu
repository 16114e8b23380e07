// ttapipe's NHWC fp16 depthwise convolution with its epilogue (see depthwise_kernel.h).
//
// A thread computes 8 channels (one 16-byte vector) of one output pixel: for each tap of the
// window, one 16-byte load of the input pixel's 8 channels and one of the tap's 8 weights, 8
// fp32 multiply-adds. Consecutive threads take consecutive vectors of a pixel, then the next
// pixels of the row, so a warp's loads and stores are contiguous. A block's threads lie in one
// image (blockIdx.x): 32-bit indices inside it. The 3x3 window, MobileNets' own, is unrolled
// at compile time so that its nine loads are in flight together; other windows loop.
#include <cuda_fp16.h>

#include "conv_epilogue.cuh"
#include "depthwise_kernel.h"

namespace {

constexpr int kThreads = 256;

template <int R, int S>
__global__ void __launch_bounds__(kThreads) depthwise_nhwc_kernel(
    const __half* __restrict__ x, const __half* __restrict__ w, const float* __restrict__ bias,
    const __half* __restrict__ z, __half* __restrict__ y, gpu_conv_shape s, int relu) {
  const int vectors = s.c / 8;
  const int i = blockIdx.y * kThreads + threadIdx.x;  // (p, q, vector) inside the image
  if (i >= s.p * s.q * vectors) return;
  const int v = i % vectors, pixel = i / vectors;
  const int p = pixel / s.q, q = pixel % s.q;
  const int r_count = R ? R : s.r, s_count = S ? S : s.s;
  const long long image = blockIdx.x;
  const __half* plane = x + image * s.h * s.w * s.c + v * 8;
  const __half* taps = w + v * 8;
  float sum[8];
#pragma unroll
  for (int u = 0; u < 8; u++) sum[u] = bias ? bias[v * 8 + u] : 0.0f;
#pragma unroll
  for (int r = 0; r < r_count; r++) {
    const int row = p * s.stride_h - s.pad_t + r * s.dil_h;
#pragma unroll
    for (int t = 0; t < s_count; t++) {
      const int col = q * s.stride_w - s.pad_l + t * s.dil_w;
      if (row < 0 || row >= s.h || col < 0 || col >= s.w) continue;
      const uint4 xv = __ldg(reinterpret_cast<const uint4*>(plane + (row * s.w + col) * s.c));
      const uint4 wv = __ldg(reinterpret_cast<const uint4*>(taps + (r * s_count + t) * s.c));
      const __half2* xh = reinterpret_cast<const __half2*>(&xv);
      const __half2* wh = reinterpret_cast<const __half2*>(&wv);
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const float2 a = __half22float2(xh[u]), b = __half22float2(wh[u]);
        sum[2 * u] = fmaf(a.x, b.x, sum[2 * u]);
        sum[2 * u + 1] = fmaf(a.y, b.y, sum[2 * u + 1]);
      }
    }
  }
  conv_epilogue8(sum, z, y, (image * s.p * s.q + pixel) * s.c + v * 8, relu);
}

}  // namespace

extern "C" int gpu_depthwise_nhwc_takes(const gpu_conv_shape* s) {
  return s->c == s->k && s->c % 8 == 0 && s->c > 0 && s->n <= 0x7fffffff &&
         (long long)s->p * s->q * (s->c / 8) <= 65535LL * kThreads;
}

extern "C" ttp_status gpu_depthwise_nhwc(const void* x, const void* weights, const float* bias,
                                         const void* z, void* y, const gpu_conv_shape* s,
                                         int relu, cudaStream_t stream, ttp_err* e) {
  if (!gpu_depthwise_nhwc_takes(s))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_depthwise_nhwc: %d to %d channels (equal, a "
               "multiple of 8)", s->c, s->k);
  const int per_image = s->p * s->q * (s->c / 8);
  const dim3 grid((unsigned)s->n, (unsigned)((per_image + kThreads - 1) / kThreads));
  const __half *xh = static_cast<const __half*>(x), *wh = static_cast<const __half*>(weights);
  const __half* zh = static_cast<const __half*>(z);
  __half* yh = static_cast<__half*>(y);
  if (s->r == 3 && s->s == 3)
    depthwise_nhwc_kernel<3, 3><<<grid, kThreads, 0, stream>>>(xh, wh, bias, zh, yh, *s, relu);
  else
    depthwise_nhwc_kernel<0, 0><<<grid, kThreads, 0, stream>>>(xh, wh, bias, zh, yh, *s, relu);
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
