/* ttapipe's own convolution for the narrow networks people train on small images (a CIFAR
   ResNet's 16 to 64 channels), where cuDNN's kernels leave most of the memory bandwidth unused:
   NHWC activations, fp16 (or fp32 read by TF32 tensor cores: the tf32 precision), an implicit
   GEMM on the tensor cores (mma.sync, fp32 accumulation) over whole images held in shared
   memory, and the layers that follow a convolution in its epilogue: the bias (a folded
   BatchNorm's shift), a residual Add and a ReLU, so that the convolution's output is written
   once. Launch only (capture-safe). tests/bench/conv_lab.cu checks it against a CPU reference
   and times it beside cuDNN's fused convolution. */
#ifndef TTP_CONV_KERNELS_H
#define TTP_CONV_KERNELS_H

#include <cuda_runtime_api.h>

#include "../error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A convolution over n rows: input h x w x c, output p x q x k (NHWC), an r x s window with
   strides, padding above and left (the output size says the rest) and dilation. */
typedef struct gpu_conv_shape {
  int n, h, w, c, p, q, k, r, s, stride_h, stride_w, pad_t, pad_l, dil_h, dil_w;
} gpu_conv_shape;

/* The activation a convolution's epilogue applies last: v < lo ? lo : v > hi ? hi : v (NaN stays
   NaN, as the CPU engine's ReLU and Clip leave it). None: -inf, +inf; ReLU: 0, +inf; ReLU6, a
   ReLU and a Clip to 6 or a Clip alone: 0, 6. */
typedef struct gpu_clamp {
  float lo, hi;
} gpu_clamp;
#ifdef __CUDACC__
static __device__ __forceinline__ float gpu_clamped(float v, gpu_clamp c) {
  return v < c.lo ? c.lo : v > c.hi ? c.hi : v;
}
#endif

/* Whether gpu_conv_nhwc takes the shape in fp16 (half) or fp32: c and k multiples of 8 (k
   computed as a multiple of 16, the weights padded so by gpu_conv_weights), and a slice of the
   weights (16 to 64 output channels) with two input windows of at least one output row each
   within a block's shared memory. */
int gpu_conv_nhwc_takes(const gpu_conv_shape* s, int half);

/* The input channels gpu_conv_nhwc's weights are laid out for (gpu_conv_weights' cp) on an input
   of c channels: c up to a whole k-step (16 in fp16, 8 in fp32), the window's pixels in shared
   memory padded with zeros to that, so that a MobileNet's 24 channels run as 32. */
int gpu_conv_nhwc_window_channels(int c, int half);

/* y = clamped(conv(x, weights) + bias + z), fp32 sums rounded once at the end. Each output's sum
   starts from the bias and adds the tensor cores' partial sums (16 input channels in fp16, 8 in
   TF32) in one order, window column by column, then k-step by k-step, then row by row, so that
   every kernel here gives a convolution the same bits. half: fp16 values;
   else fp32 values whose products the tensor cores take in TF32 (the weights as
   gpu_conv_weights rounded them, the inputs' mantissas cut to 10 bits). x: n x h x w x c;
   weights: gpu_conv_weights' layout; bias: k floats, or NULL; z: like y, or NULL; y: n x p x q x
   k, not overlapping x or z. */
ttp_status gpu_conv_nhwc(const void* x, const void* weights, const float* bias, const void* z,
                         void* y, const gpu_conv_shape* s, gpu_clamp clamp, int half,
                         cudaStream_t stream, ttp_err* e);

/* Whether gpu_conv_block_nhwc takes two convolutions of shape s in a row: fp16 (half), c = k
   channels, a 3x3 window of stride 1 padded by 1, maps it is built for (16 channels over 32x32
   or 16x16, 32 over 16x16: a CIFAR ResNet's first two stages), on a current device of sm_90 or
   later with the shared memory it needs. */
int gpu_conv_block_nhwc_takes(const gpu_conv_shape* s, int half);

/* y = clamp2(conv(m, weights2) + bias2 [+ x]), m = clamp1(conv(x, weights1) + bias1) rounded to
   fp16, both convolutions of shape s, in one kernel: a residual network's basic block (residual:
   + x) or two convolutions in a row (no residual). m stays in shared memory, so that x is read
   and y written once. The bits are gpu_conv_nhwc's for the same two convolutions run one after
   the other (given finite weights: the taps it skips, on the rows above and below the image,
   would add 0 x w, NaN where w is not finite). fp16 values; weights and biases as
   gpu_conv_nhwc's (NULL bias: none); y not overlapping x. Launch only (capture-safe). */
ttp_status gpu_conv_block_nhwc(const void* x, const void* weights1, const float* bias1,
                               gpu_clamp clamp1, const void* weights2, const float* bias2,
                               gpu_clamp clamp2, int residual, void* y, const gpu_conv_shape* s,
                               cudaStream_t stream, ttp_err* e);

/* The model's weights k x c x r x s (floats) into the order gpu_conv_nhwc reads them for an input
   of cp >= c channels (gpu_conv_nhwc_window_channels; those past c zeros), in fp16 (half) or
   TF32: for each window column, k-step of 32 bytes of input channels (16 in fp16, 8 in TF32),
   window row (the sum order) and pair of 8-channel n-tiles,
   the tensor cores' B fragments in the order the 32 lanes hold them (kp x cp x r x s values in
   all, kp = k rounded up to a multiple of 16, the outputs past k zeros; host to host, the caller
   converts to fp16; in TF32 the values come rounded to it). */
void gpu_conv_weights(const float* kcrs, int k, int c, int r, int s, int cp, int half,
                      float* out);

/* The values gpu_conv_weights writes for k outputs, cp input channels and an r x s window. */
size_t gpu_conv_weights_count(int k, int cp, int r, int s);

#ifdef __cplusplus
}
#endif

#endif
