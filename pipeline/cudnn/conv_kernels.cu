// ttapipe's NHWC fp16 convolution with its epilogue (see conv_kernels.h).
//
// An implicit GEMM on the tensor cores: M = output pixels, N = output channels, K = taps x input
// channels. A block takes one row (image) and a tile of 8 output rows x 16 output columns, and
// KT output channels (64, 32 or 16, whichever divides k). It loads the input window that tile
// reads (zeros outside the image) into shared memory once; then each of its 4 warps takes two
// output rows, and for every tap and 16 input channels multiplies a 16-pixel A fragment read
// straight from that window (16 output columns are 16 input pixels stride_w apart: one ldm) by
// the tap's weights, B fragments read from global memory (r x s x c x k: a network's weights
// stay in the L2). The accumulators then go through shared memory to the epilogue: + bias, + z,
// ReLU, rounded to fp16, 8 channels (16 bytes) a store. Maps narrower than 16 columns leave
// part of each fragment unused: compute is not what limits these layers.
#include <cuda_fp16.h>
#include <mma.h>

#include "conv_epilogue.cuh"
#include "conv_kernels.h"

namespace {

using namespace nvcuda;

constexpr int kThreads = 128;
constexpr int kRows = 8;     // output rows a block: two 16-pixel fragments a warp
constexpr int kCols = 16;    // output columns a block: one fragment's pixels
constexpr int kMaxChannels = 128;
constexpr size_t kMaxShared = 200 << 10;

// The input window a tile reads: rows x columns of (c + 16) halves a pixel (a multiple of 16,
// so that every fragment starts 32-byte aligned, as WMMA wants).
struct window {
  int rows, cols, pitch;
};

__host__ __device__ window window_of(const gpu_conv_shape& s) {
  return {(kRows - 1) * s.stride_h + (s.r - 1) * s.dil_h + 1,
          (kCols - 1) * s.stride_w + (s.s - 1) * s.dil_w + 1, s.c + 16};
}

// Shared memory: the window, reused after the taps by the epilogue's kRows x kCols x (KT + 4)
// floats.
__host__ __device__ size_t shared_bytes(const gpu_conv_shape& s, int kt) {
  const window w = window_of(s);
  const size_t in = (size_t)w.rows * w.cols * w.pitch * sizeof(__half);
  const size_t out = (size_t)kRows * kCols * (kt + 4) * sizeof(float);
  return in > out ? in : out;
}

template <int KT>
__global__ void __launch_bounds__(kThreads) conv_nhwc_kernel(
    const __half* __restrict__ x, const __half* __restrict__ w, const float* __restrict__ bias,
    const __half* __restrict__ z, __half* __restrict__ y, gpu_conv_shape s, int relu) {
  extern __shared__ __align__(128) unsigned char smem[];
  __half* in = reinterpret_cast<__half*>(smem);
  float* out = reinterpret_cast<float*>(smem);
  const window win = window_of(s);
  const int image = blockIdx.x;
  const int p0 = blockIdx.y * kRows;
  const int k_tiles = s.k / KT;
  const int q0 = blockIdx.z / k_tiles * kCols, k0 = blockIdx.z % k_tiles * KT;
  const int warp = threadIdx.x / 32;

  // The window: input rows p0 stride_h - pad_t on, columns q0 stride_w - pad_l on.
  const int top = p0 * s.stride_h - s.pad_t, left = q0 * s.stride_w - s.pad_l;
  const int vectors = s.c / 8;  // 16 bytes each
  const __half* plane = x + (long long)image * s.h * s.w * s.c;
  for (int v = threadIdx.x; v < win.rows * win.cols * vectors; v += kThreads) {
    const int part = v % vectors, pixel = v / vectors;
    const int row = top + pixel / win.cols, col = left + pixel % win.cols;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (row >= 0 && row < s.h && col >= 0 && col < s.w)
      value = __ldg(reinterpret_cast<const uint4*>(plane + ((long long)row * s.w + col) * s.c) +
                    part);
    *reinterpret_cast<uint4*>(in + pixel * win.pitch + part * 8) = value;
  }
  __syncthreads();

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][KT / 16];
#pragma unroll
  for (int f = 0; f < 2; f++)
#pragma unroll
    for (int j = 0; j < KT / 16; j++) wmma::fill_fragment(acc[f][j], 0.0f);
  const int ldm = s.stride_w * win.pitch;
  for (int r = 0; r < s.r; r++)
    for (int t = 0; t < s.s; t++) {
      const __half* weights = w + ((long long)(r * s.s + t) * s.c) * s.k + k0;
      const __half* a0 = in + ((2 * warp * s.stride_h + r * s.dil_h) * win.cols + t * s.dil_w) *
                                  win.pitch;
      for (int c0 = 0; c0 < s.c; c0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[2];
#pragma unroll
        for (int f = 0; f < 2; f++)
          wmma::load_matrix_sync(a[f], a0 + f * s.stride_h * win.cols * win.pitch + c0, ldm);
#pragma unroll
        for (int j = 0; j < KT / 16; j++) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
          wmma::load_matrix_sync(b, weights + (long long)c0 * s.k + j * 16, s.k);
#pragma unroll
          for (int f = 0; f < 2; f++) wmma::mma_sync(acc[f][j], a[f], b, acc[f][j]);
        }
      }
    }

  __syncthreads();  // every warp is done with the window: its room becomes the output's
  const int op = KT + 4;
#pragma unroll
  for (int f = 0; f < 2; f++)
#pragma unroll
    for (int j = 0; j < KT / 16; j++)
      wmma::store_matrix_sync(out + ((2 * warp + f) * kCols) * op + j * 16, acc[f][j], op,
                              wmma::mem_row_major);
  __syncthreads();
  for (int v = threadIdx.x; v < kRows * kCols * KT / 8; v += kThreads) {
    const int i = v / (KT / 8), kk = v % (KT / 8) * 8;
    const int p = p0 + i / kCols, q = q0 + i % kCols;
    if (p >= s.p || q >= s.q) continue;
    float sum[8];
#pragma unroll
    for (int u = 0; u < 8; u++) sum[u] = out[i * op + kk + u] + (bias ? bias[k0 + kk + u] : 0.0f);
    const long long at = (((long long)image * s.p + p) * s.q + q) * s.k + k0 + kk;
    conv_epilogue8(sum, z, y, at, relu);
  }
}

template <int KT>
cudaError_t launch(const void* x, const void* w, const float* bias, const void* z, void* y,
                   const gpu_conv_shape& s, int relu, cudaStream_t stream) {
  const size_t bytes = shared_bytes(s, KT);
  if (bytes > (48 << 10)) {
    const cudaError_t err = cudaFuncSetAttribute(
        conv_nhwc_kernel<KT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (err != cudaSuccess) return err;
  }
  const dim3 grid((unsigned)s.n, (unsigned)((s.p + kRows - 1) / kRows),
                  (unsigned)((s.q + kCols - 1) / kCols * (s.k / KT)));
  conv_nhwc_kernel<KT><<<grid, kThreads, bytes, stream>>>(
      static_cast<const __half*>(x), static_cast<const __half*>(w), bias,
      static_cast<const __half*>(z), static_cast<__half*>(y), s, relu);
  return cudaGetLastError();
}

}  // namespace

extern "C" int gpu_conv_nhwc_takes(const gpu_conv_shape* s) {
  return s->c % 16 == 0 && s->k % 16 == 0 && s->c >= 16 && s->c <= kMaxChannels && s->k >= 16 &&
         s->n <= 0x7fffffff && (s->p + kRows - 1) / kRows <= 65535 &&
         shared_bytes(*s, 16) <= kMaxShared && shared_bytes(*s, 64) <= kMaxShared;
}

extern "C" ttp_status gpu_conv_nhwc(const void* x, const void* weights, const float* bias,
                                    const void* z, void* y, const gpu_conv_shape* s, int relu,
                                    cudaStream_t stream, ttp_err* e) {
  if (!gpu_conv_nhwc_takes(s))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_conv_nhwc: %d to %d channels (multiples of 16, "
               "at most %d in)", s->c, s->k, kMaxChannels);
  const cudaError_t err = s->k % 64 == 0   ? launch<64>(x, weights, bias, z, y, *s, relu, stream)
                          : s->k % 32 == 0 ? launch<32>(x, weights, bias, z, y, *s, relu, stream)
                                           : launch<16>(x, weights, bias, z, y, *s, relu, stream);
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "conv_nhwc_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}

extern "C" void gpu_conv_weights(const float* kcrs, int k, int c, int r, int s, int cp,
                                 float* rsck) {
  for (size_t i = 0; i < (size_t)r * s * cp * k; i++) rsck[i] = 0.0f;
  for (int o = 0; o < k; o++)
    for (int i = 0; i < c; i++)
      for (int a = 0; a < r; a++)
        for (int b = 0; b < s; b++)
          rsck[(((size_t)a * s + b) * cp + i) * k + o] =
              kcrs[(((size_t)o * c + i) * r + a) * s + b];
}
