/* The cudnn engine's own small kernels, where cuDNN is slow or has nothing: the bias of a
   convolution, and conversions between fp32 and fp16. Launch only (capture-safe). */
#ifndef TTP_CUDNN_KERNELS_H
#define TTP_CUDNN_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "../error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x (n, channels, plane) NCHW, in place: x += bias[channel]. half: x and bias are fp16 (the sum
   is taken in fp32 and rounded to nearest), else fp32. */
ttp_status gpu_bias_add(void* x, const void* bias, size_t n, int channels, int plane, int half,
                        cudaStream_t stream, ttp_err* e);

/* out[i] = in[i] rounded to nearest fp16 (to_half) or widened to fp32 (to_float). */
ttp_status gpu_to_half(const float* in, void* out, size_t count, cudaStream_t stream, ttp_err* e);
ttp_status gpu_to_float(const void* in, float* out, size_t count, cudaStream_t stream, ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
