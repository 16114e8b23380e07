// The CUDA kernel of test-time augmentation (see tta_kernel.h). Compiled with -fmad=false.
//
// One block per image: the block loads the image into shared memory while summing its key terms,
// reduces the 64-bit sum (integer addition: the order does not matter, so the key equals the
// CPU's), then writes the N copies, each thread four consecutive output pixels at a time (one
// Philox call gives the noise of four pixels).
#include <cuda_fp16.h>

#include "tta_kernel.h"

namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ T to_output(float v);
template <>
__device__ __forceinline__ float to_output<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half to_output<__half>(float v) { return __float2half_rn(v); }

__device__ uint64_t block_sum(uint64_t v) {
  __shared__ uint64_t warp_sums[kThreads / 32];
  __shared__ uint64_t total;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? warp_sums[lane] : 0;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    aug_kernel(aug_spec spec, const uint8_t* __restrict__ images, int rows, int cols,
               T* __restrict__ out) {
  extern __shared__ uint8_t image[];
  const int n = rows * cols;
  const uint8_t* src = images + (size_t)blockIdx.x * n;
  uint64_t sum = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    uint8_t v = src[i];
    image[i] = v;
    sum += aug_key_term((uint32_t)i, v);
  }
  const uint64_t key = aug_key_finish(block_sum(sum));  // block_sum synchronises: image[] is ready

  const int groups = (n + 3) / 4;
  for (int c = 0; c < spec.copies; c++) {
    const aug_params p = aug_copy_params(&spec, key, (uint32_t)c);
    T* dst = out + ((size_t)blockIdx.x * spec.copies + c) * n;
    for (int g = threadIdx.x; g < groups; g += kThreads) {
      float noise[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (!p.identity) aug_noise4(&spec, key, (uint32_t)c, (uint32_t)g, noise);
      for (int j = 0; j < 4 && 4 * g + j < n; j++) {
        const int i = 4 * g + j;
        const int s = aug_source_index(&p, i / cols, i % cols, rows, cols);
        const float x = s < 0 ? 0.0f : (float)image[s] / 255.0f;
        dst[i] = to_output<T>(aug_pixel(&spec, &p, x, noise[j]));
      }
    }
  }
}

}  // namespace

extern "C" ttp_status aug_launch(const aug_spec* spec, const uint8_t* images, int count, int rows,
                                 int cols, aug_out_type type, void* out, cudaStream_t stream,
                                 ttp_err* e) {
  if (count < 1 || rows < 1 || cols < 1 || rows * cols > AUG_MAX_PIXELS)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "aug_launch: %d images of %dx%d", count, rows, cols);
  const size_t shared = (size_t)rows * cols;
  if (type == AUG_OUT_HALF)
    aug_kernel<__half><<<count, kThreads, shared, stream>>>(*spec, images, rows, cols,
                                                            static_cast<__half*>(out));
  else
    aug_kernel<float><<<count, kThreads, shared, stream>>>(*spec, images, rows, cols,
                                                           static_cast<float*>(out));
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "aug_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}
