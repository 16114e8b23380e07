// The epilogue of ttapipe's own convolutions (conv_kernels.cu, depthwise_kernel.cu): eight
// channels' fp32 sums (the bias already in them), + the residual z's eight values where z is not
// NULL, ReLU where asked, each rounded once to fp16, one 16-byte store to y + at (at: a multiple
// of 8 elements).
#ifndef TTP_CONV_EPILOGUE_CUH
#define TTP_CONV_EPILOGUE_CUH

#include <cuda_fp16.h>

__device__ __forceinline__ void conv_epilogue8(float (&sum)[8], const __half* __restrict__ z,
                                               __half* __restrict__ y, long long at, int relu) {
  if (z) {
    const uint4 zv = __ldg(reinterpret_cast<const uint4*>(z + at));
    const __half* zh = reinterpret_cast<const __half*>(&zv);
#pragma unroll
    for (int u = 0; u < 8; u++) sum[u] += __half2float(zh[u]);
  }
  uint4 result;
  __half* rh = reinterpret_cast<__half*>(&result);
#pragma unroll
  for (int u = 0; u < 8; u++) rh[u] = __float2half_rn(relu && sum[u] < 0.0f ? 0.0f : sum[u]);
  *reinterpret_cast<uint4*>(y + at) = result;
}

#endif
