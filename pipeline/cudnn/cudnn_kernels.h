/* The cudnn engine's own small kernels, where cuDNN is slow or has nothing: the bias of a
   convolution, the pointwise activations cuDNN's legacy API lacks, and conversions between fp32
   and fp16. Launch only (capture-safe). */
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

/* The pointwise activations, computed in fp32 (fp16 values widened, the result rounded to
   nearest); NaN propagates. in may equal out. */
typedef enum gpu_pointwise_op {
  GPU_LEAKY_RELU, /* x < 0 ? a x : x */
  GPU_SIGMOID,    /* 1 / (1 + exp(-x)) */
  GPU_TANH,
  GPU_CLIP        /* min(max(x, a), b) */
} gpu_pointwise_op;
ttp_status gpu_pointwise(gpu_pointwise_op op, float a, float b, const void* in, void* out,
                         size_t count, int half, cudaStream_t stream, ttp_err* e);

/* out[i] = in[i] rounded to nearest fp16 (to_half) or widened to fp32 (to_float). */
ttp_status gpu_to_half(const float* in, void* out, size_t count, cudaStream_t stream, ttp_err* e);
ttp_status gpu_to_float(const void* in, float* out, size_t count, cudaStream_t stream, ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
