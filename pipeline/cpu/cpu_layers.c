/* The CPU reference layers; the contract of each is in cpu_layers.h. */
#include "cpu_layers.h"

#include <math.h>

/* The output indices t in [0, n_out) whose input index t * stride + offset lies in [0, n_in):
   [*lo, *hi). Lets the convolution skip the zero padding without a test in its inner loop. */
static void valid_range(int n_out, int n_in, int stride, int offset, int* lo, int* hi) {
  int first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int last = n_in - 1 - offset < 0 ? -1 : (n_in - 1 - offset) / stride; /* inclusive */
  *lo = first < n_out ? first : n_out;
  *hi = last + 1 < n_out ? last + 1 : n_out;
  if (*hi < *lo) *hi = *lo;
}

void cpu_conv2d(const float* in, int C, int H, int W, const float* weights, const float* bias,
                int K, int R, int S, int stride, int pad, double* acc, float* out) {
  int P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  /* One output plane at a time in double; for each filter tap, the whole plane gets its
     product, so each output sums bias, then c, r, s in order, like the textbook loop. */
  for (int k = 0; k < K; k++) {
    for (int i = 0; i < P * Q; i++) acc[i] = bias ? bias[k] : 0.0;
    for (int c = 0; c < C; c++) {
      const float* plane = in + (size_t)c * H * W;
      for (int r = 0; r < R; r++) {
        int p_lo, p_hi;
        valid_range(P, H, stride, r - pad, &p_lo, &p_hi);
        for (int s = 0; s < S; s++) {
          int q_lo, q_hi;
          valid_range(Q, W, stride, s - pad, &q_lo, &q_hi);
          double w = weights[(((size_t)k * C + c) * R + r) * S + s];
          for (int p = p_lo; p < p_hi; p++) {
            const float* row = plane + (size_t)(p * stride + r - pad) * W + (s - pad);
            double* acc_row = acc + (size_t)p * Q;
            if (stride == 1) /* the common case, written so that it vectorises */
              for (int q = q_lo; q < q_hi; q++) acc_row[q] += w * row[q];
            else
              for (int q = q_lo; q < q_hi; q++) acc_row[q] += w * row[q * stride];
          }
        }
      }
    }
    for (int i = 0; i < P * Q; i++) out[(size_t)k * P * Q + i] = (float)acc[i];
  }
}

/* The window of output (p, q) clipped to the input: rows [*r0, *r1), columns [*s0, *s1). */
static void window(int p, int q, int H, int W, int R, int S, int stride, int pad, int* r0, int* r1,
                   int* s0, int* s1) {
  int top = p * stride - pad, left = q * stride - pad;
  *r0 = top < 0 ? 0 : top, *r1 = top + R > H ? H : top + R;
  *s0 = left < 0 ? 0 : left, *s1 = left + S > W ? W : left + S;
}

void cpu_maxpool(const float* in, int C, int H, int W, int R, int S, int stride, int pad,
                 float* out) {
  int P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  for (int c = 0; c < C; c++)
    for (int p = 0; p < P; p++)
      for (int q = 0; q < Q; q++) {
        int r0, r1, s0, s1;
        window(p, q, H, W, R, S, stride, pad, &r0, &r1, &s0, &s1);
        const float* plane = in + (size_t)c * H * W;
        float m = plane[(size_t)r0 * W + s0];
        for (int r = r0; r < r1 && !isnan(m); r++)
          for (int s = s0; s < s1; s++) {
            float v = plane[(size_t)r * W + s];
            if (v > m || isnan(v)) m = v;
            if (isnan(m)) break;
          }
        out[((size_t)c * P + p) * Q + q] = m;
      }
}

void cpu_avgpool(const float* in, int C, int H, int W, int R, int S, int stride, int pad,
                 int count_pad, float* out) {
  int P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  for (int c = 0; c < C; c++)
    for (int p = 0; p < P; p++)
      for (int q = 0; q < Q; q++) {
        int r0, r1, s0, s1;
        window(p, q, H, W, R, S, stride, pad, &r0, &r1, &s0, &s1);
        const float* plane = in + (size_t)c * H * W;
        double sum = 0.0;
        for (int r = r0; r < r1; r++)
          for (int s = s0; s < s1; s++) sum += plane[(size_t)r * W + s];
        int count = count_pad ? R * S : (r1 - r0) * (s1 - s0);
        out[((size_t)c * P + p) * Q + q] = (float)(sum / count);
      }
}

void cpu_relu(const float* in, size_t n, float* out) {
  for (size_t i = 0; i < n; i++) out[i] = in[i] < 0.0f ? 0.0f : in[i];
}

void cpu_leaky_relu(const float* in, size_t n, float alpha, float* out) {
  for (size_t i = 0; i < n; i++) out[i] = in[i] < 0.0f ? (float)((double)alpha * in[i]) : in[i];
}

void cpu_sigmoid(const float* in, size_t n, float* out) {
  for (size_t i = 0; i < n; i++) out[i] = (float)(1.0 / (1.0 + exp(-(double)in[i])));
}

void cpu_tanh(const float* in, size_t n, float* out) {
  for (size_t i = 0; i < n; i++) out[i] = (float)tanh((double)in[i]);
}

void cpu_clip(const float* in, size_t n, float lo, float hi, float* out) {
  for (size_t i = 0; i < n; i++) out[i] = in[i] < lo ? lo : in[i] > hi ? hi : in[i];
}

void cpu_fc(const float* in, int n_in, const float* weights, const float* bias, int n_out,
            float* out) {
  for (int o = 0; o < n_out; o++) {
    const float* w = weights + (size_t)o * n_in;
    /* Four partial sums, so that each addition need not wait for the one before (the forward
       pass went from 1.02 to 0.80 ms per image on one core); summed in double, the other order
       moves the float result by one ulp at most, and rarely. */
    double part[4] = {0, 0, 0, 0};
    int i = 0;
    for (; i + 4 <= n_in; i += 4)
      for (int j = 0; j < 4; j++) part[j] += (double)w[i + j] * in[i + j];
    for (; i < n_in; i++) part[0] += (double)w[i] * in[i];
    out[o] = (float)((bias ? bias[o] : 0.0) + ((part[0] + part[1]) + (part[2] + part[3])));
  }
}

void cpu_lrn(const float* in, int C, int H, int W, int n, double alpha, double beta, double k,
             float* out) {
  int before = (n - 1) / 2, after = n - 1 - before;
  size_t plane = (size_t)H * W;
  for (size_t i = 0; i < plane; i++)
    for (int c = 0; c < C; c++) {
      int lo = c - before < 0 ? 0 : c - before;
      int hi = c + after > C - 1 ? C - 1 : c + after;
      double sum = 0.0;
      for (int j = lo; j <= hi; j++) {
        double x = in[(size_t)j * plane + i];
        sum += x * x;
      }
      out[(size_t)c * plane + i] =
          (float)(in[(size_t)c * plane + i] / pow(k + alpha / n * sum, beta));
    }
}

void cpu_softmax(const float* in, size_t n, float* out) {
  double m = in[0];
  for (size_t i = 1; i < n; i++)
    if (in[i] > m || isnan(in[i])) m = in[i];
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) sum += exp(in[i] - m);
  for (size_t i = 0; i < n; i++) out[i] = (float)(exp(in[i] - m) / sum);
}
