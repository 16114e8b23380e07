/* ttapipe's fully connected layer in fp16 or fp32: y = clamped(W x + bias + z) for each of n
   rows, with fp32 multiply-adds on the CUDA cores. The cudnn engine runs every fc with it rather
   than with cuBLASLt, whose first use in a process costs more initialisation than the rest of
   the engine's plan (the figures: BENCHMARKS.md, "Time to result, steps 3 and 4").

   Each output is one chain of fused multiply-adds over its inputs in ascending order, from zero,
   then + bias, + z, the clamp and one rounding: the same bits whatever n, the kernel (a thread an
   output for few rows; tiles through shared memory for many) and its tiling, so a row's bits do
   not depend on its batch. Launch only (capture-safe). */
#ifndef TTP_FC_KERNEL_H
#define TTP_FC_KERNEL_H

#include "conv_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which of its kernels gpu_fc runs: chosen by the rows' count (GPU_FC_ANY), or one of them
   (the lab compares them). */
typedef enum gpu_fc_kernel { GPU_FC_ANY = 0, GPU_FC_THREADS = 1, GPU_FC_TILES = 2 } gpu_fc_kernel;

/* y = clamped(weights x + bias + z) over n rows, fp16 (half) or fp32 values, fp32 sums rounded
   once. x: n x in; weights: in x out (gpu_fc_weights' layout: the model's transposed); bias: out
   floats, or NULL; z: like y, or NULL; y: n x out, not overlapping x or z. */
ttp_status gpu_fc(const void* x, const void* weights, const float* bias, const void* z, void* y,
                  int n, int in, int out, gpu_clamp clamp, int half, gpu_fc_kernel kernel,
                  cudaStream_t stream, ttp_err* e);

/* The model's weights out x in (floats) into in x out, the layout gpu_fc reads (host to host;
   the caller converts to fp16 where it runs so). */
void gpu_fc_weights(const float* out_in, int in, int out, float* in_out);

#ifdef __cplusplus
}
#endif

#endif
