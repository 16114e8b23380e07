// ttapipe's fully connected layer (see fc_kernel.h), in fp16 or fp32: two kernels that give the
// same bits.
//
// fc_threads (few rows): a thread computes one output of one row, reading its weights down their
// column (consecutive threads, consecutive outputs: coalesced) and the row's inputs (one value
// for the whole warp), kAhead of each in flight before their multiply-adds.
//
// fc_tiles (many rows): a block computes kTile outputs x kTile rows, a thread 4 x 4 of them; kStep
// inputs at a time, the block stages the weights' and the rows' slices in shared memory (padded,
// by one column and by two, so that neither the stores nor the reads collide in a bank: a warp
// stores 16 inputs of two rows into xs), then each thread adds their products to its sixteen
// sums, one input after the other.
#include <cuda_fp16.h>

#include "../element.cuh"
#include "fc_kernel.h"

namespace {

constexpr int kThreads = 256;
constexpr int kAhead = 16;            // fc_threads: inputs in flight a thread
constexpr int kTile = 64, kStep = 16;  // fc_tiles: a block's outputs and rows; inputs a step
constexpr int kPer = kTile / 16;       // fc_tiles: a thread's outputs and rows (16 x 16 threads)
constexpr int kTilesFrom = 1024;       // gpu_fc's choice: the tiles from this many rows

// The epilogue both kernels share: sum + bias + z, the clamp, one rounding.
template <typename T>
__device__ __forceinline__ void store(float sum, const float* __restrict__ bias,
                                      const T* __restrict__ z, T* __restrict__ y, int row, int o,
                                      int out, gpu_clamp clamp) {
  const size_t at = (size_t)row * out + o;
  float v = sum + (bias ? bias[o] : 0.0f);
  if (z) v += gpu_wide(z[at]);
  y[at] = gpu_narrow<T>(gpu_clamped(v, clamp));
}

template <typename T>
__global__ void __launch_bounds__(kThreads) fc_threads(
    const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
    const T* __restrict__ z, T* __restrict__ y, int in, int out, gpu_clamp clamp) {
  const int o = blockIdx.x * kThreads + threadIdx.x, row = blockIdx.y;
  if (o >= out) return;
  const T* xr = x + (size_t)row * in;
  const T* wc = w + o;
  float sum = 0.0f;
  int i = 0;
  for (; i + kAhead <= in; i += kAhead) {
    float wv[kAhead], xv[kAhead];
#pragma unroll
    for (int a = 0; a < kAhead; a++) {
      wv[a] = gpu_wide(__ldg(wc + (size_t)(i + a) * out));
      xv[a] = gpu_wide(__ldg(xr + i + a));
    }
#pragma unroll
    for (int a = 0; a < kAhead; a++) sum = fmaf(wv[a], xv[a], sum);
  }
  for (; i < in; i++)
    sum = fmaf(gpu_wide(__ldg(wc + (size_t)i * out)), gpu_wide(__ldg(xr + i)), sum);
  store(sum, bias, z, y, row, o, out, clamp);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) fc_tiles(
    const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
    const T* __restrict__ z, T* __restrict__ y, int n, int in, int out, gpu_clamp clamp) {
  __shared__ float ws[kStep][kTile + 1];  // [input][output]
  __shared__ float xs[kStep][kTile + 2];  // [input][row]
  const int t = threadIdx.x, to = t % 16, tr = t / 16;
  const int o0 = blockIdx.y * kTile, r0 = blockIdx.x * kTile;
  float sum[kPer][kPer];
#pragma unroll
  for (int u = 0; u < kPer; u++)
#pragma unroll
    for (int r = 0; r < kPer; r++) sum[u][r] = 0.0f;
  for (int i0 = 0; i0 < in; i0 += kStep) {
    // The weights' slice: kStep rows of kTile consecutive outputs (coalesced); the rows' slice:
    // kTile rows of kStep consecutive inputs. Past the edges: zeros, never added (steps below).
#pragma unroll
    for (int e = t; e < kStep * kTile; e += kThreads) {
      const int i = e / kTile, o = e % kTile;
      ws[i][o] = i0 + i < in && o0 + o < out ? gpu_wide(__ldg(w + (size_t)(i0 + i) * out + o0 + o))
                                             : 0.0f;
      const int r = e / kStep, k = e % kStep;
      xs[k][r] = i0 + k < in && r0 + r < n ? gpu_wide(__ldg(x + (size_t)(r0 + r) * in + i0 + k))
                                           : 0.0f;
    }
    __syncthreads();
    const int steps = min(kStep, in - i0);  // the last step's inputs stop at `in`
#pragma unroll
    for (int k = 0; k < kStep; k++) {
      if (k >= steps) break;
      float wv[kPer], xv[kPer];
#pragma unroll
      for (int u = 0; u < kPer; u++) wv[u] = ws[k][to + 16 * u];
#pragma unroll
      for (int r = 0; r < kPer; r++) xv[r] = xs[k][tr + 16 * r];
#pragma unroll
      for (int u = 0; u < kPer; u++)
#pragma unroll
        for (int r = 0; r < kPer; r++) sum[u][r] = fmaf(wv[u], xv[r], sum[u][r]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kPer; r++)
#pragma unroll
    for (int u = 0; u < kPer; u++) {
      const int o = o0 + to + 16 * u, row = r0 + tr + 16 * r;
      if (o < out && row < n) store(sum[u][r], bias, z, y, row, o, out, clamp);
    }
}

template <typename T>
void launch(const void* x, const void* weights, const float* bias, const void* z, void* y, int n,
            int in, int out, gpu_clamp clamp, bool tiles, cudaStream_t stream) {
  const T *xt = static_cast<const T*>(x), *wt = static_cast<const T*>(weights);
  const T* zt = static_cast<const T*>(z);
  T* yt = static_cast<T*>(y);
  if (tiles) {
    const dim3 grid((unsigned)((n + kTile - 1) / kTile), (unsigned)((out + kTile - 1) / kTile));
    fc_tiles<T><<<grid, kThreads, 0, stream>>>(xt, wt, bias, zt, yt, n, in, out, clamp);
  } else {
    const dim3 grid((unsigned)((out + kThreads - 1) / kThreads), (unsigned)n);
    fc_threads<T><<<grid, kThreads, 0, stream>>>(xt, wt, bias, zt, yt, in, out, clamp);
  }
}

}  // namespace

extern "C" ttp_status gpu_fc(const void* x, const void* weights, const float* bias, const void* z,
                             void* y, int n, int in, int out, gpu_clamp clamp, int half,
                             gpu_fc_kernel kernel, cudaStream_t stream, ttp_err* e) {
  if (n < 1 || n > 65535 * kTile || in < 1 || out < 1 || out > 65535 * kTile)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_fc: %d rows of %d to %d values", n, in, out);
  // Tiles from kTilesFrom rows (bench_fc_lab: a thread an output was the faster at 320 rows, the
  // tiles at 5120, on LeNet's ip1), so never a thread an output past 65535 rows of blocks.
  const bool tiles = kernel == GPU_FC_TILES || (kernel == GPU_FC_ANY && n >= kTilesFrom);
  if (!tiles && n > 65535)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_fc: %d rows for a thread an output", n);
  if (half) launch<__half>(x, weights, bias, z, y, n, in, out, clamp, tiles, stream);
  else launch<float>(x, weights, bias, z, y, n, in, out, clamp, tiles, stream);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "fc kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}

extern "C" void gpu_fc_weights(const float* out_in, int in, int out, float* in_out) {
  for (int o = 0; o < out; o++)
    for (int i = 0; i < in; i++) in_out[(size_t)i * out + o] = out_in[(size_t)o * in + i];
}
