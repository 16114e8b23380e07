// The CUDA kernel of test-time augmentation (see tta_kernel.h). Compiled with -fmad=false.
//
// One block per image (tta_block.cuh): the block loads the image into shared memory while summing
// its key terms, reduces the 64-bit sum (integer addition: the order does not matter, so the key
// equals the CPU's), then writes the N copies, each thread four consecutive output pixels at a
// time (one Philox call gives the noise of four pixels).
#include "tta_block.cuh"
#include "tta_kernel.h"

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    aug_kernel(aug_spec spec, const uint8_t* __restrict__ images, int channels, int rows,
               int cols, T* __restrict__ out) {
  __shared__ aug_params params[AUG_MAX_COPIES];
  extern __shared__ uint8_t image[];
  const int n = channels * rows * cols;
  const uint64_t key = aug_block_load<kThreads>(images + (size_t)blockIdx.x * n, n, image);
  aug_block_params<kThreads>(spec, key, 0, spec.copies, params);
  __syncthreads();
  for (int c = 0; c < spec.copies; c++)
    aug_block_copy<kThreads>(spec, params[c], key, c, image, channels, rows, cols,
                             out + ((size_t)blockIdx.x * spec.copies + c) * n, cols);
}

}  // namespace

extern "C" ttp_status aug_launch(const aug_spec* spec, const uint8_t* images, int count,
                                 int channels, int rows, int cols, aug_out_type type, void* out,
                                 cudaStream_t stream, ttp_err* e) {
  if (count < 1 || channels < 1 || channels > 3 || rows < 1 || cols < 1 ||
      channels * rows * cols > AUG_MAX_PIXELS)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "aug_launch: %d images of %dx%dx%d", count, channels,
               rows, cols);
  const size_t shared = (size_t)channels * rows * cols;
  /* Past the 48 KB a launch may take unasked (3 x 128 x 128 images), the kernel must be allowed
     more (Hopper gives a block up to 227 KB). */
  if (shared > 32768) {
    const cudaError_t allowed =
        type == AUG_OUT_HALF
            ? cudaFuncSetAttribute(aug_kernel<__half>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)shared)
            : cudaFuncSetAttribute(aug_kernel<float>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)shared);
    if (allowed != cudaSuccess)
      return ERR(e, TTP_ERR_CUDA, "aug_kernel: %zu bytes of shared memory: %s", shared,
                 cudaGetErrorString(allowed));
  }
  if (type == AUG_OUT_HALF)
    aug_kernel<__half><<<count, kThreads, shared, stream>>>(*spec, images, channels, rows, cols,
                                                            static_cast<__half*>(out));
  else
    aug_kernel<float><<<count, kThreads, shared, stream>>>(*spec, images, channels, rows, cols,
                                                           static_cast<float*>(out));
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "aug_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}
