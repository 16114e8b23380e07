/* The CPU reference layers. Plain C11 loops written to be read: every layer accumulates in double
   and rounds once to float, so that the only difference from an exact computation is that final
   rounding (and, for LRN and softmax, the libm functions). The other engines are tested against
   these.

   Tensors are one image, CHW, float: C channels, H rows, W columns. Letters as everywhere in
   ttapipe: K output channels, R x S filter or window, P x Q output rows and columns.
   Outputs never alias inputs, except the pointwise ones (cpu_relu, ...), which may run in place. */
#ifndef TTP_CPU_LAYERS_H
#define TTP_CPU_LAYERS_H

#include <stddef.h>

#include "../../model/model.h"

/* Convolution as cross-correlation (no filter flip), zero padding, in groups.
   in (C,H,W), weights (K, C/groups, R, S), bias (K) or NULL -> out (K,P,Q): output channel k
   reads input channels g C/groups .. (g + 1) C/groups - 1, g = k / (K/groups); output (p, q)
   reads rows p stride_h + r dil_h - pad_t and columns q stride_w + s dil_w - pad_l, those
   outside the input zeros. P x Q: the layer's output (model.h's shape rules).
   acc: P x Q doubles of scratch, so that a forward pass allocates nothing. */
void cpu_conv2d(const float* in, int C, int H, int W, const float* weights, const float* bias,
                int K, int groups, const model_window* w, int P, int Q, double* acc, float* out);

/* Max pooling. in (C,H,W) -> out (C,P,Q) over the window w (P x Q: the layer's output); the
   padding is never chosen (every window holds an input position). NaN propagates, as in
   cuDNN's CUDNN_PROPAGATE_NAN. */
void cpu_maxpool(const float* in, int C, int H, int W, const model_window* w, int P, int Q,
                 float* out);

/* Average pooling, shapes as cpu_maxpool. The padding is zeros; the divisor is the number of
   the window's positions inside the padded input when count_pad (ONNX's count_include_pad,
   PyTorch's default; R x S but where a ceil-mode window passes the padding), else inside the
   input. */
void cpu_avgpool(const float* in, int C, int H, int W, const model_window* w, int P, int Q,
                 int count_pad, float* out);

/* y = max(x, 0) over n values; NaN propagates. in may equal out. */
void cpu_relu(const float* in, size_t n, float* out);

/* Pointwise activations over n values, each computed in double and rounded once; NaN
   propagates. in may equal out. */
void cpu_leaky_relu(const float* in, size_t n, float alpha, float* out); /* alpha x below 0 */
void cpu_sigmoid(const float* in, size_t n, float* out);                 /* 1 / (1 + e^-x) */
void cpu_tanh(const float* in, size_t n, float* out);
void cpu_clip(const float* in, size_t n, float lo, float hi, float* out); /* lo <= hi */

/* Fully connected: out[o] = bias[o] + sum_i weights[o * n_in + i] * in[i], o < n_out.
   bias may be NULL. */
void cpu_fc(const float* in, int n_in, const float* weights, const float* bias, int n_out,
            float* out);

/* Local response normalisation across channels, cuDNN's definition:
   y[c] = x[c] / (k + alpha / n * sum x[j]^2) ^ beta, the sum over the channels j from
   c - floor((n-1)/2) to c + (n-1 - floor((n-1)/2)), clipped to 0 .. C-1, at each (h, w). */
void cpu_lrn(const float* in, int C, int H, int W, int n, double alpha, double beta, double k,
             float* out);

/* Softmax over n values: y[i] = exp(x[i] - max) / sum_j exp(x[j] - max). */
void cpu_softmax(const float* in, size_t n, float* out);

/* The elementwise sum (op MODEL_ADD), difference, product or quotient of n inputs of shape s
   (MODEL_SUB, MODEL_MUL, MODEL_DIV: two), each input after the first of shape s, C x 1 x 1 or
   1 x 1 x 1 (broadcast; shapes[k] says which), in double, rounded once. */
void cpu_elementwise(model_op op, const float* const* in, const model_shape* shapes, int n,
                     model_shape s, float* out);

/* Per channel: y = x scale[c] + shift[c] (channels: C values each, or 1 for all; shift may be
   NULL). in may equal out. */
void cpu_affine(const float* in, model_shape s, const float* scale, const float* shift,
                int channels, float* out);

/* y = x for x >= 0, slope[c] x below (slopes: C, or 1 for all). in may equal out. */
void cpu_prelu(const float* in, model_shape s, const float* slope, int slopes, float* out);

/* The channels of n inputs, one after the other (each of shapes[k], the same H x W). */
void cpu_concat(const float* const* in, const model_shape* shapes, int n, float* out);

/* Channels c0 .. c1 - 1, rows h0, h0 + step_h, ..., columns likewise, of in (shape s) -> out
   (shape o). */
void cpu_slice(const float* in, model_shape s, int c0, int h0, int w0, int step_h, int step_w,
               model_shape o, float* out);

/* in (shape s) inside value-filled borders: c0 channels before, h0 rows above, w0 columns left
   (out of shape o). */
void cpu_pad(const float* in, model_shape s, int c0, int h0, int w0, float value, model_shape o,
             float* out);

/* Channel shuffle of g groups: input channel i (C/g) + j becomes output channel j g + i. */
void cpu_shuffle(const float* in, model_shape s, int g, float* out);

/* The pointwise activations of model.h (MODEL_HARDSWISH, MODEL_HARDSIGMOID with a and b,
   MODEL_GELU, MODEL_ERF, MODEL_ELU with a, MODEL_SOFTPLUS, MODEL_MISH) over n values, each in
   double, rounded once; NaN propagates. in may equal out. */
void cpu_activation(model_op op, const float* in, size_t n, double a, double b, float* out);

#endif
