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

/* Convolution as cross-correlation (no filter flip), zero padding.
   in (C,H,W), weights (K,C,R,S), bias (K) or NULL -> out (K,P,Q),
   P = (H + 2 pad - R) / stride + 1, Q = (W + 2 pad - S) / stride + 1.
   acc: P x Q doubles of scratch, so that a forward pass allocates nothing. */
void cpu_conv2d(const float* in, int C, int H, int W, const float* weights, const float* bias,
                int K, int R, int S, int stride, int pad, double* acc, float* out);

/* Max pooling. in (C,H,W) -> out (C,P,Q), P = (H + 2 pad - R) / stride + 1; the padding is
   never chosen (pad < R, S: every window holds an input position). NaN propagates, as in
   cuDNN's CUDNN_PROPAGATE_NAN. */
void cpu_maxpool(const float* in, int C, int H, int W, int R, int S, int stride, int pad,
                 float* out);

/* Average pooling, shapes as cpu_maxpool. The padding is zeros; the divisor is R x S when
   count_pad (ONNX's count_include_pad, PyTorch's default), else the number of the window's
   positions inside the input. */
void cpu_avgpool(const float* in, int C, int H, int W, int R, int S, int stride, int pad,
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

#endif
