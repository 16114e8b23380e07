/* ttapipe's NHWC depthwise convolution in fp16 or fp32 (one filter a channel: groups = channels
   in = out, as MobileNets' 3x3 layers have), which cuDNN runs only in NCHW: with it a MobileNet's
   activations stay NHWC for the tensor cores' 1x1 convolutions around it. The same epilogue as
   conv_kernels.h's: + bias, + a residual z, the clamp (ReLU, ReLU6), rounded once to the
   element type. Memory-bound: each output reads its window's inputs (from L1 after the first)
   and is written once. Launch only (capture-safe). tests/bench/depthwise_lab.cu checks it against a CPU reference and times it
   beside cuDNN's grouped convolution. */
#ifndef TTP_DEPTHWISE_KERNEL_H
#define TTP_DEPTHWISE_KERNEL_H

#include "conv_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether gpu_depthwise_nhwc takes the shape: c == k, a multiple of 8 (16-byte vectors). */
int gpu_depthwise_nhwc_takes(const gpu_conv_shape* s);

/* y = clamped(depthwise(x, weights) + bias + z), fp16 (half) or fp32 values, fp32 sums, each
   from the bias (a bias of -0 as +0, so that a sum never holds -0: adding the products of the
   padding's zeros would then leave it as it is, and a kernel that adds them, as the inverted
   residual block's does, keeps the bits given finite weights) and the taps row by row, each row
   column by column.
   x: n x h x w x c; weights: r x s x c (gpu_depthwise_weights' layout); bias: c floats, or NULL;
   z: like y, or NULL; y: n x p x q x c, not overlapping x or z. Padding above and left as s
   gives it (below and right: what the output size leaves). */
ttp_status gpu_depthwise_nhwc(const void* x, const void* weights, const float* bias,
                              const void* z, void* y, const gpu_conv_shape* s, gpu_clamp clamp,
                              int half, cudaStream_t stream, ttp_err* e);

/* The model's weights c x 1 x r x s (floats) into r x s x c, the layout gpu_depthwise_nhwc reads
   (host to host; the caller converts to fp16 where it runs so). */
void gpu_depthwise_weights(const float* c1rs, int c, int r, int s, float* rsc);

#ifdef __cplusplus
}
#endif

#endif
