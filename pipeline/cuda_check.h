/* Checking CUDA runtime calls in library code: CUDA_TRY evaluates the call and, on failure,
   records "file:line: call: CUDA's message" and returns the status from the enclosing function
   (which returns ttp_status; the first argument is its ttp_err*). cudnn/cudnn_check.h does the
   same for cuDNN and cuBLAS. */
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

#endif
