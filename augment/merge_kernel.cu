// The merge kernel (see merge_kernel.h): one thread per image.
#include "merge_core.h"
#include "merge_kernel.h"

namespace {

// The copies' weights, a launch parameter (captured with a graph as they are).
struct merge_weights {
  float w[MERGE_MAX_COPIES];
  int on;
};

__global__ void merge_kernel(ttp_merge mode, merge_weights weights,
                             const float* __restrict__ probs, int count, int copies, int classes,
                             size_t record_size, unsigned char* __restrict__ records) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  unsigned char* record = records + (size_t)i * record_size;
  ttp_result result;
  float* merged = reinterpret_cast<float*>(record + sizeof(ttp_result));
  merge_image(mode, probs + (size_t)i * copies * classes, copies, classes, merged, &result,
              merged + classes, weights.on ? weights.w : nullptr);
  *reinterpret_cast<ttp_result*>(record) = result;
}

}  // namespace

extern "C" ttp_status aug_merge_launch(ttp_merge mode, const float* weights, const float* probs,
                                       int count, int copies, int classes, void* records,
                                       cudaStream_t stream, ttp_err* e) {
  if (copies < 1 || copies > MERGE_MAX_COPIES || count < 1 || classes < 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "aug_merge_launch: %d images, %d copies, %d classes",
               count, copies, classes);
  merge_weights w = {};
  w.on = weights != nullptr;
  for (int c = 0; c < copies && weights; c++) w.w[c] = weights[c];
  const int threads = 128;
  merge_kernel<<<(count + threads - 1) / threads, threads, 0, stream>>>(
      mode, w, probs, count, copies, classes, aug_merge_record_size(classes),
      static_cast<unsigned char*>(records));
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "merge_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}
