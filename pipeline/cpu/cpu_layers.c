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
                int K, int groups, const model_window* w, int P, int Q, double* acc, float* out) {
  const int R = w->r, S = w->s, Cg = C / groups, Kg = K / groups;
  const int sh = w->stride_h, sw = w->stride_w, dh = w->dil_h, dw = w->dil_w;
  const int top = w->pad_t, left = w->pad_l;
  /* One output plane at a time in double; for each filter tap, the whole plane gets its
     product, so each output sums bias, then c, r, s in order, like the textbook loop. */
  for (int k = 0; k < K; k++) {
    const int c_first = k / Kg * Cg;
    for (int i = 0; i < P * Q; i++) acc[i] = bias ? bias[k] : 0.0;
    for (int c = 0; c < Cg; c++) {
      const float* plane = in + (size_t)(c_first + c) * H * W;
      for (int r = 0; r < R; r++) {
        int p_lo, p_hi;
        const int row0 = r * dh - top;
        valid_range(P, H, sh, row0, &p_lo, &p_hi);
        for (int s = 0; s < S; s++) {
          int q_lo, q_hi;
          const int col0 = s * dw - left;
          valid_range(Q, W, sw, col0, &q_lo, &q_hi);
          const double wt = weights[(((size_t)k * Cg + c) * R + r) * S + s];
          for (int p = p_lo; p < p_hi; p++) {
            const float* row = plane + (size_t)(p * sh + row0) * W + col0;
            double* acc_row = acc + (size_t)p * Q;
            if (sw == 1) /* the common case, written so that it vectorises */
              for (int q = q_lo; q < q_hi; q++) acc_row[q] += wt * row[q];
            else
              for (int q = q_lo; q < q_hi; q++) acc_row[q] += wt * row[q * sw];
          }
        }
      }
    }
    for (int i = 0; i < P * Q; i++) out[(size_t)k * P * Q + i] = (float)acc[i];
  }
}

/* The window of output (p, q) clipped to the input: rows [*r0, *r1), columns [*s0, *s1); and
   the number of its positions inside the padded input, into *padded. */
static void window(int p, int q, int H, int W, const model_window* w, int* r0, int* r1, int* s0,
                   int* s1, int* padded) {
  const int top = p * w->stride_h - w->pad_t, left = q * w->stride_w - w->pad_l;
  *r0 = top < 0 ? 0 : top, *r1 = top + w->r > H ? H : top + w->r;
  *s0 = left < 0 ? 0 : left, *s1 = left + w->s > W ? W : left + w->s;
  const int rows = (top + w->r > H + w->pad_b ? H + w->pad_b : top + w->r) - top;
  const int cols = (left + w->s > W + w->pad_r ? W + w->pad_r : left + w->s) - left;
  *padded = rows * cols;
}

void cpu_maxpool(const float* in, int C, int H, int W, const model_window* w, int P, int Q,
                 float* out) {
  for (int c = 0; c < C; c++)
    for (int p = 0; p < P; p++)
      for (int q = 0; q < Q; q++) {
        int r0, r1, s0, s1, padded;
        window(p, q, H, W, w, &r0, &r1, &s0, &s1, &padded);
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

void cpu_avgpool(const float* in, int C, int H, int W, const model_window* w, int P, int Q,
                 int count_pad, float* out) {
  for (int c = 0; c < C; c++)
    for (int p = 0; p < P; p++)
      for (int q = 0; q < Q; q++) {
        int r0, r1, s0, s1, padded;
        window(p, q, H, W, w, &r0, &r1, &s0, &s1, &padded);
        const float* plane = in + (size_t)c * H * W;
        double sum = 0.0;
        for (int r = r0; r < r1; r++)
          for (int s = s0; s < s1; s++) sum += plane[(size_t)r * W + s];
        int count = count_pad ? padded : (r1 - r0) * (s1 - s0);
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

/* Input k's value at flat position i of the output's shape s, as broadcast. */
static double broadcast_at(const float* x, model_shape xs, model_shape s, size_t i) {
  if (xs.h == s.h && xs.w == s.w && xs.c == s.c) return x[i];
  if (xs.c == 1) return x[0];
  return x[i / ((size_t)s.h * s.w)]; /* C x 1 x 1 */
}

void cpu_elementwise(model_op op, const float* const* in, const model_shape* shapes, int n,
                     model_shape s, float* out) {
  const size_t count = model_shape_size(s);
  for (size_t i = 0; i < count; i++) {
    double v = in[0][i];
    for (int k = 1; k < n; k++) {
      const double x = broadcast_at(in[k], shapes[k], s, i);
      v = op == MODEL_ADD ? v + x : op == MODEL_SUB ? v - x : op == MODEL_MUL ? v * x : v / x;
    }
    out[i] = (float)v;
  }
}

void cpu_affine(const float* in, model_shape s, const float* scale, const float* shift,
                int channels, float* out) {
  const size_t plane = (size_t)s.h * s.w;
  for (int c = 0; c < s.c; c++) {
    const int j = channels == 1 ? 0 : c;
    const double a = scale[j], b = shift ? shift[j] : 0.0;
    for (size_t i = 0; i < plane; i++) out[c * plane + i] = (float)(in[c * plane + i] * a + b);
  }
}

void cpu_prelu(const float* in, model_shape s, const float* slope, int slopes, float* out) {
  const size_t plane = (size_t)s.h * s.w;
  for (int c = 0; c < s.c; c++) {
    const double a = slope[slopes == 1 ? 0 : c];
    for (size_t i = 0; i < plane; i++) {
      const float x = in[c * plane + i];
      out[c * plane + i] = x < 0.0f ? (float)(a * x) : x;
    }
  }
}

void cpu_concat(const float* const* in, const model_shape* shapes, int n, float* out) {
  for (int k = 0; k < n; k++) {
    const size_t count = model_shape_size(shapes[k]);
    for (size_t i = 0; i < count; i++) out[i] = in[k][i];
    out += count;
  }
}

void cpu_slice(const float* in, model_shape s, int c0, int h0, int w0, int step_h, int step_w,
               model_shape o, float* out) {
  for (int c = 0; c < o.c; c++)
    for (int y = 0; y < o.h; y++)
      for (int x = 0; x < o.w; x++)
        out[((size_t)c * o.h + y) * o.w + x] =
            in[((size_t)(c0 + c) * s.h + h0 + y * step_h) * s.w + w0 + x * step_w];
}

void cpu_pad(const float* in, model_shape s, int c0, int h0, int w0, float value, model_shape o,
             float* out) {
  for (int c = 0; c < o.c; c++)
    for (int y = 0; y < o.h; y++)
      for (int x = 0; x < o.w; x++) {
        const int ci = c - c0, yi = y - h0, xi = x - w0;
        const int inside = ci >= 0 && ci < s.c && yi >= 0 && yi < s.h && xi >= 0 && xi < s.w;
        out[((size_t)c * o.h + y) * o.w + x] =
            inside ? in[((size_t)ci * s.h + yi) * s.w + xi] : value;
      }
}

void cpu_shuffle(const float* in, model_shape s, int g, float* out) {
  const size_t plane = (size_t)s.h * s.w;
  const int per = s.c / g;
  for (int i = 0; i < g; i++)
    for (int j = 0; j < per; j++)
      for (size_t k = 0; k < plane; k++) out[((size_t)j * g + i) * plane + k] = in[((size_t)i * per + j) * plane + k];
}

static double softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

void cpu_activation(model_op op, const float* in, size_t n, double a, double b, float* out) {
  for (size_t i = 0; i < n; i++) {
    const double x = in[i];
    double y;
    switch (op) {
      case MODEL_HARDSWISH: y = x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0; break;
      case MODEL_HARDSIGMOID: y = fmin(fmax(a * x + b, 0.0), 1.0); break;
      case MODEL_GELU: y = 0.5 * x * (1.0 + erf(x / sqrt(2.0))); break;
      case MODEL_ERF: y = erf(x); break;
      case MODEL_ELU: y = x > 0 ? x : a * expm1(x); break;
      case MODEL_SOFTPLUS: y = softplus(x); break;
      case MODEL_MISH: y = x * tanh(softplus(x)); break;
      default: y = NAN; break;
    }
    out[i] = isnan(x) ? (float)x : (float)y;
  }
}
