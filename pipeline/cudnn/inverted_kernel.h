/* ttapipe's inverted residual block in one kernel (MobileNetV2's): a 1x1 expansion, a 3x3
   depthwise convolution (stride 1 or 2, padded by 1) and a 1x1 projection, with their biases
   and clamps and (stride 1) the block's input added to its output, fp16 NHWC. The expanded maps (4 or 6 times the block's
   channels) stay in shared memory, so that only the block's input is read and its output
   written: layer by layer, the expansion's output is written and read back twice over. The
   bits are those of the three layers run apart (gpu_conv_nhwc, gpu_depthwise_nhwc,
   gpu_conv_nhwc with the input as z): the same fp32 sums in the same order, each layer's output
   rounded to fp16. Launch only (capture-safe). tests/bench/inverted_lab.cu checks that bit for
   bit and times the kernel beside the three. */
#ifndef TTP_INVERTED_KERNEL_H
#define TTP_INVERTED_KERNEL_H

#include "conv_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The block's shape: n rows of h x w x cin in, mid channels expanded, the depthwise layer's
   stride, h / stride x w / stride x cout out. */
typedef struct gpu_inverted_shape {
  int n, h, w, cin, mid, cout, stride;
} gpu_inverted_shape;

/* Its layers' parameters: the expansion's and projection's weights in gpu_conv_weights' layout
   (1x1 windows; cp = cin and mid; the projection's outputs padded to a multiple of 16 as
   gpu_conv_weights pads them), the depthwise one's in gpu_depthwise_weights' (3 x 3 x mid),
   all fp16; the biases fp32 or NULL; each layer's clamp; residual: + the block's input (cin ==
   cout, stride 1). */
typedef struct gpu_inverted_block {
  const void *expand, *depthwise, *project;
  const float *expand_bias, *depthwise_bias, *project_bias;
  gpu_clamp expand_clamp, depthwise_clamp, project_clamp;
  int residual;
} gpu_inverted_block;

/* Whether the kernel is built for the shape and the current device runs it (sm_80 or later with
   the shared memory it needs): 16 -> 64 -> 16 over 32x32 and 32 -> 128 -> 32 over 8x8 at stride
   1, 16 -> 64 -> 24 over 32x32 at stride 2 (the MobileNetV2-style test net's first, last and
   second blocks), fp16 (half). */
int gpu_inverted_nhwc_takes(const gpu_inverted_shape* s, int half);

/* y (n x h / stride x w / stride x cout) = the block of x (n x h x w x cin); y not overlapping
   x. */
ttp_status gpu_inverted_nhwc(const void* x, void* y, const gpu_inverted_shape* s,
                             const gpu_inverted_block* b, cudaStream_t stream, ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
