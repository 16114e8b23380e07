/* CHECK_CUDA(call): CHECK (check.h) that a CUDA runtime call succeeded, naming the call and the
   error. For the tests and benchmarks that call the runtime themselves, in C and CUDA alike. */
#ifndef TTP_TESTS_CHECK_CUDA_H
#define TTP_TESTS_CHECK_CUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "check.h"
#ifdef __cplusplus
}
#endif

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    const cudaError_t err_ = (call);                                           \
    CHECK(err_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(err_));     \
  } while (0)

#endif
