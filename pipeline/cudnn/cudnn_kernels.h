/* The cudnn engine's own small kernels, where cuDNN is slow or has nothing: the bias of a
   convolution, the pointwise activations, the elementwise layers of graphs (Add, Mul, ...,
   with broadcasts), per-channel affines, pooling of any window, the copies that move values
   about (slice, pad, shuffle), conversions between fp32 and fp16, and two the plan checks a
   convolution's bits with (a hashed fill, a byte count). Tensors are NCHW over
   `rows` rows (images x copies); "half": fp16 values (computed in fp32, rounded to nearest once),
   else fp32. Each follows its CPU reference in pipeline/cpu/cpu_layers.h. Launch only
   (capture-safe). */
#ifndef TTP_CUDNN_KERNELS_H
#define TTP_CUDNN_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "../error.h"
#include "conv_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor's shape in one row, and its layout: NCHW (nhwc 0) or NHWC. */
typedef struct gpu_dims {
  int c, h, w, nhwc;
} gpu_dims;

/* x (rows x d), in place: x = clamped(x + bias[channel] (+ z, of x's shape)). bias:
   NULL or d.c values, z: NULL or like x, both of x's type; the sum in fp32, rounded once. What
   follows a convolution that does not apply them itself. */
ttp_status gpu_epilogue(void* x, const void* bias, const void* z, gpu_clamp clamp, size_t rows,
                        gpu_dims d, int half, cudaStream_t stream, ttp_err* e);

/* The pointwise activations, computed in fp32 (fp16 values widened, the result rounded to
   nearest); NaN propagates where the reference's does. in may equal out. */
typedef enum gpu_pointwise_op {
  GPU_RELU,
  GPU_LEAKY_RELU,  /* x < 0 ? a x : x */
  GPU_SIGMOID,     /* 1 / (1 + exp(-x)) */
  GPU_TANH,
  GPU_CLIP,        /* min(max(x, a), b) */
  GPU_HARDSWISH,   /* x min(max(x + 3, 0), 6) / 6 */
  GPU_HARDSIGMOID, /* min(max(a x + b, 0), 1) */
  GPU_GELU,        /* x (1 + erf(x / sqrt 2)) / 2 */
  GPU_ERF,
  GPU_ELU,         /* x > 0 ? x : a (exp(x) - 1) */
  GPU_SOFTPLUS,    /* log(1 + exp(x)), x itself above 30 */
  GPU_MISH         /* x tanh(softplus(x)) */
} gpu_pointwise_op;
ttp_status gpu_pointwise(gpu_pointwise_op op, float a, float b, const void* in, void* out,
                         size_t count, int half, cudaStream_t stream, ttp_err* e);

/* The elementwise layers: out = in[0] op in[1] (op ... in[count - 1] for GPU_ADD), over rows x
   d values; an input after the first may hold one value a channel of each row (per
   GPU_PER_CHANNEL) or one a row (GPU_PER_ROW), broadcast. */
enum { GPU_MAX_OPERANDS = 32 };
typedef enum gpu_binary_op { GPU_ADD, GPU_SUB, GPU_MUL, GPU_DIV } gpu_binary_op;
typedef enum gpu_spread { GPU_EVERY, GPU_PER_CHANNEL, GPU_PER_ROW } gpu_spread;
typedef struct gpu_operands {
  const void* in[GPU_MAX_OPERANDS];
  unsigned char spread[GPU_MAX_OPERANDS]; /* gpu_spread */
  int count;
} gpu_operands;
ttp_status gpu_elementwise(gpu_binary_op op, const gpu_operands* x, void* out, size_t rows,
                           gpu_dims d, int half, cudaStream_t stream, ttp_err* e);

/* Per channel c: out = in x scale[c] + shift[c] (affine), or out = in >= 0 ? in : scale[c] in
   (prelu; shift unused). scale and shift are fp32, `params` values each (1: the same for every
   channel; shift NULL: 0). in may equal out. */
ttp_status gpu_channel_op(int prelu, const void* in, void* out, const float* scale,
                          const float* shift, int params, size_t rows, gpu_dims d, int half,
                          cudaStream_t stream, ttp_err* e);

/* A window over a tensor (cpu_maxpool's contract). */
typedef struct gpu_window {
  int r, s, stride_h, stride_w, pad_t, pad_l, pad_b, pad_r;
} gpu_window;

/* out (rows x o) from in (rows x i): out[c][y][x] = in[c + c_at][y step_h + y_at][x step_w +
   x_at], `value` where that lies outside in: a slice (offsets >= 0, steps) or a pad (offsets
   <= 0, steps 1). i and o in the same layout. */
ttp_status gpu_window_copy(const void* in, gpu_dims i, void* out, gpu_dims o, size_t rows,
                           int c_at, int y_at, int x_at, int step_h, int step_w, float value,
                           int half, cudaStream_t stream, ttp_err* e);

/* Channel shuffle of `groups` groups (cpu_shuffle). */
ttp_status gpu_shuffle(const void* in, void* out, size_t rows, gpu_dims d, int groups, int half,
                       cudaStream_t stream, ttp_err* e);

/* out (rows x o) = in (rows x i) value for value in CHW order (i and o hold as many): a
   transpose between layouts (the same shape), a Reshape in NHWC (another shape), or both. */
ttp_status gpu_reorder(const void* in, gpu_dims i, void* out, gpu_dims o, size_t rows, int half,
                       cudaStream_t stream, ttp_err* e);

/* rows of c x h x w (NCHW) into h x w x cp (NHWC), the channels past c zeros: the
   augmentation's copies into a network's padded NHWC input. cp: a multiple of 8, at least c. */
ttp_status gpu_to_nhwc_padded(const void* in, int c, int h, int w, void* out, int cp,
                              size_t rows, int half, cudaStream_t stream, ttp_err* e);

/* Max (max) or average pooling of in (rows x i) over w into out (rows x o): cpu_maxpool's and
   cpu_avgpool's contracts, the sum in fp32. i and o in the same layout. */
ttp_status gpu_pool(int max, int count_pad, const void* in, gpu_dims i, void* out, gpu_dims o,
                    size_t rows, gpu_window w, int half, cudaStream_t stream, ttp_err* e);

/* out[i] = in[i] rounded to nearest fp16 (to_half) or widened to fp32 (to_float). */
ttp_status gpu_to_half(const float* in, void* out, size_t count, cudaStream_t stream, ttp_err* e);
ttp_status gpu_to_float(const void* in, float* out, size_t count, cudaStream_t stream, ttp_err* e);

/* out[i] (count values of the engine's type) = a value in [-1, 1) hashed from (seed, i): the
   same inputs on every run, made on the device. */
ttp_status gpu_fill_hashed(void* out, size_t count, int half, unsigned long long seed,
                           cudaStream_t stream, ttp_err* e);

/* Adds to *count (device memory) how many of the bytes of a and b differ. */
ttp_status gpu_count_differing(const void* a, const void* b, size_t bytes, unsigned* count,
                               cudaStream_t stream, ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
