/* Checking CUDA runtime calls in library code: CUDA_TRY evaluates the call and, on failure,
   records "file:line: call: CUDA's message" and returns the status from the enclosing function
   (which returns ttp_status; the first argument is its ttp_err*). cudnn/cudnn_check.h does the
   same for cuDNN. */
#ifndef TTP_CUDA_CHECK_H
#define TTP_CUDA_CHECK_H

#include <cuda_runtime_api.h>

#include "error.h"

#define CUDA_TRY(e, call)                                                                    \
  do {                                                                                       \
    cudaError_t cuda_status_ = (call);                                                       \
    if (cuda_status_ != cudaSuccess)                                                         \
      return ERR((e), cuda_status_ == cudaErrorMemoryAllocation ? TTP_ERR_OUT_OF_MEMORY      \
                                                                : TTP_ERR_CUDA,              \
                 "%s: %s", #call, cudaGetErrorString(cuda_status_));                         \
  } while (0)

#ifdef __cplusplus
extern "C" {
#endif

/* cudaMalloc for what the engines hold from open to close. Out of device memory, the record
   names what it was for and the sizes: "not enough device memory on GPU 0 for the activations of
   8192-image batches (40960 copies): 450 MiB wanted, 262 MiB free of 79 GiB"
   (TTP_ERR_OUT_OF_MEMORY; the device stays usable); any other failure CUDA's message
   (TTP_ERR_CUDA). *p is NULL on failure. */
ttp_status gpu_alloc(void** p, size_t bytes, const char* what, ttp_err* e);

/* cudaMallocHost (pinned host memory) likewise. */
ttp_status gpu_alloc_pinned(void** p, size_t bytes, const char* what, ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
