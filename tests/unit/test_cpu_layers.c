/* Every CPU reference layer against a straightforward double-precision computation written here
   (textbook loops, bounds tested per element), on random data of odd sizes. The layers round
   once from double to float, so they must agree to about one float ulp; an indexing mistake
   shows up as an error of order one. */
#include <math.h>
#include <string.h>

#include "../common/check.h"
#include "pipeline/cpu/cpu_layers.h"

static const double ATOL = 1e-6, RTOL = 1e-6;

static float* new_floats(size_t n) {
  float* x = malloc((n ? n : 1) * sizeof *x);
  CHECK(x, "out of memory");
  return x;
}
static double* new_doubles(size_t n) {
  double* x = malloc((n ? n : 1) * sizeof *x);
  CHECK(x, "out of memory");
  return x;
}

/* ---- convolution ---------------------------------------------------------------------------- */

static void ref_conv(const float* in, int C, int H, int W, const float* w, const float* b, int K,
                     int R, int S, int stride, int pad, double* out) {
  int P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  for (int k = 0; k < K; k++)
    for (int p = 0; p < P; p++)
      for (int q = 0; q < Q; q++) {
        double sum = 0;
        for (int c = 0; c < C; c++)
          for (int r = 0; r < R; r++)
            for (int s = 0; s < S; s++) {
              int y = p * stride + r - pad, x = q * stride + s - pad;
              if (y < 0 || y >= H || x < 0 || x >= W) continue;
              sum += (double)w[((k * C + c) * R + r) * S + s] * in[(c * H + y) * W + x];
            }
        out[(k * P + p) * Q + q] = sum + (b ? b[k] : 0.0);
      }
}

static size_t check_conv(test_rng* rng, int C, int H, int W, int K, int R, int S, int stride,
                         int pad, int with_bias) {
  int P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  size_t nin = (size_t)C * H * W, nw = (size_t)K * C * R * S, nout = (size_t)K * P * Q;
  float *in = new_floats(nin), *w = new_floats(nw), *b = new_floats(K), *out = new_floats(nout);
  double *want = new_doubles(nout), *acc = new_doubles((size_t)P * Q);
  test_fill_uniform(rng, in, nin, -1, 1);
  test_fill_uniform(rng, w, nw, -0.5, 0.5);
  test_fill_uniform(rng, b, K, -2, 2);
  test_poison(out, nout);
  const model_window win = model_window_of(R, S, stride, pad);
  cpu_conv2d(in, C, H, W, w, with_bias ? b : NULL, K, 1, &win, P, Q, acc, out);
  ref_conv(in, C, H, W, w, with_bias ? b : NULL, K, R, S, stride, pad, want);
  char what[128];
  snprintf(what, sizeof what, "conv C%d H%d W%d K%d R%d S%d stride%d pad%d bias%d", C, H, W, K, R,
           S, stride, pad, with_bias);
  size_t bad = test_compare(what, out, want, nout, ATOL, RTOL);
  free(in), free(w), free(b), free(out), free(want), free(acc);
  return bad;
}

static size_t test_conv(test_rng* rng) {
  size_t bad = 0;
  /* The shapes of the shipped network, then odd ones: non-square filters and inputs, strides
     that leave columns over, padding wider than the filter's reach, a 1x1 filter. */
  bad += check_conv(rng, 1, 28, 28, 20, 5, 5, 1, 0, 1);
  bad += check_conv(rng, 20, 12, 12, 50, 5, 5, 1, 0, 1);
  bad += check_conv(rng, 3, 13, 11, 7, 3, 5, 1, 1, 1);
  bad += check_conv(rng, 5, 17, 9, 3, 4, 2, 2, 2, 0);
  bad += check_conv(rng, 2, 7, 19, 5, 3, 3, 3, 1, 1);
  bad += check_conv(rng, 7, 5, 5, 2, 5, 5, 1, 4, 1);
  bad += check_conv(rng, 3, 9, 7, 4, 1, 1, 2, 0, 1);
  bad += check_conv(rng, 1, 1, 1, 1, 1, 1, 1, 0, 1);
  for (int t = 0; t < 20; t++) {
    int R = test_int(rng, 1, 6), S = test_int(rng, 1, 6), pad = test_int(rng, 0, 3);
    int stride = test_int(rng, 1, 3);
    int H = test_int(rng, R > 2 * pad ? R - 2 * pad : 1, 21);
    int W = test_int(rng, S > 2 * pad ? S - 2 * pad : 1, 21);
    bad += check_conv(rng, test_int(rng, 1, 9), H, W, test_int(rng, 1, 9), R, S, stride, pad,
                      test_int(rng, 0, 1));
  }
  return bad;
}

/* ---- pooling ------------------------------------------------------------------------------- */

/* Max and average pooling with padding against textbook loops that test each window position:
   the max over the positions inside the input, the average over the window with zeros counted
   (count_pad) or over the positions inside. */
static size_t check_pool(test_rng* rng, int C, int H, int W, int R, int S, int stride, int pad) {
  int P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  size_t nin = (size_t)C * H * W, nout = (size_t)C * P * Q;
  float *in = new_floats(nin), *out = new_floats(nout);
  double* want = new_doubles(nout);
  test_fill_uniform(rng, in, nin, -3, 3);
  size_t bad = 0;
  for (int kind = 0; kind < 3; kind++) { /* max, average counting the padding, not counting it */
    test_poison(out, nout);
    const model_window win = model_window_of(R, S, stride, pad);
    if (kind == 0)
      cpu_maxpool(in, C, H, W, &win, P, Q, out);
    else
      cpu_avgpool(in, C, H, W, &win, P, Q, kind == 1, out);
    for (int c = 0; c < C; c++)
      for (int p = 0; p < P; p++)
        for (int q = 0; q < Q; q++) {
          double m = -INFINITY, sum = 0;
          int inside = 0;
          for (int r = 0; r < R; r++)
            for (int s = 0; s < S; s++) {
              int y = p * stride + r - pad, x = q * stride + s - pad;
              if (y < 0 || y >= H || x < 0 || x >= W) continue;
              m = fmax(m, in[(c * H + y) * W + x]);
              sum += in[(c * H + y) * W + x];
              inside++;
            }
          want[(c * P + p) * Q + q] = kind == 0 ? m : sum / (kind == 1 ? R * S : inside);
        }
    char what[128];
    snprintf(what, sizeof what, "%s C%d H%d W%d R%d S%d stride%d pad%d",
             kind == 0 ? "maxpool" : kind == 1 ? "avgpool (padding counted)" : "avgpool", C, H, W,
             R, S, stride, pad);
    bad += test_compare(what, out, want, nout, kind ? ATOL : 0, kind ? RTOL : 0); /* max: exact */
  }
  free(in), free(out), free(want);
  return bad;
}

static size_t test_pool(test_rng* rng) {
  size_t bad = check_pool(rng, 20, 24, 24, 2, 2, 2, 0) + check_pool(rng, 3, 9, 7, 2, 2, 2, 0) +
               check_pool(rng, 5, 11, 13, 3, 3, 2, 0) + check_pool(rng, 2, 8, 5, 3, 2, 1, 0) +
               check_pool(rng, 1, 1, 1, 1, 1, 1, 0) + check_pool(rng, 4, 10, 10, 4, 3, 3, 0) +
               check_pool(rng, 3, 7, 9, 3, 3, 2, 1) + check_pool(rng, 5, 16, 16, 3, 3, 2, 1) +
               check_pool(rng, 2, 5, 11, 4, 5, 3, 2) + check_pool(rng, 1, 2, 3, 3, 2, 1, 1);
  /* NaN anywhere in a window makes that output NaN, first position or last; the other windows
     keep their maxima. */
  float in[2 * 4 * 4], out[2 * 2 * 2];
  test_fill_uniform(rng, in, 32, -1, 1);
  in[0] = NAN;       /* channel 0, window (0,0), its first element */
  in[16 + 15] = NAN; /* channel 1, window (1,1), its last element */
  for (int i = 0; i < 8; i++) out[i] = 1234.5f; /* not NaN, and no input reaches it */
  const model_window win = model_window_of(2, 2, 2, 0);
  cpu_maxpool(in, 2, 4, 4, &win, 2, 2, out);
  CHECK(isnan(out[0]) && isnan(out[7]), "NaN did not propagate: %g %g", out[0], out[7]);
  for (int i = 1; i < 7; i++) {
    int c = i / 4, p = i % 4 / 2, q = i % 2;
    const float* win = in + c * 16 + p * 8 + q * 2;
    float m = fmaxf(fmaxf(win[0], win[1]), fmaxf(win[4], win[5]));
    CHECK(out[i] == m, "maxpool with NaN elsewhere: output %d is %g, want %g", i, out[i], m);
  }
  return bad;
}

/* ---- ReLU, fully connected ---------------------------------------------------------------- */

static size_t test_relu(test_rng* rng) {
  enum { N = 1001 };
  float in[N], out[N];
  double want[N];
  test_fill_uniform(rng, in, N, -5, 5);
  in[3] = NAN;
  test_poison(out, N);
  cpu_relu(in, N, out);
  CHECK(isnan(out[3]), "relu(NaN) is %g", out[3]);
  out[3] = 0, in[3] = 0;
  for (int i = 0; i < N; i++) want[i] = in[i] > 0 ? in[i] : 0.0;
  size_t bad = test_compare("relu", out, want, N, 0, 0);
  cpu_relu(in, N, in); /* in place */
  return bad + test_compare("relu in place", in, want, N, 0, 0);
}

/* Leaky ReLU, sigmoid, tanh and clip against libm in double, NaN propagating, in place too. */
static size_t test_pointwise(test_rng* rng) {
  enum { N = 997 };
  float in[N], out[N];
  double want[N];
  size_t bad = 0;
  for (int kind = 0; kind < 4; kind++) {
    test_fill_uniform(rng, in, N, -9, 9);
    in[5] = NAN;
    test_poison(out, N);
    const float alpha = 0.1f, lo = -1.5f, hi = 2.25f;
    const char* name = kind == 0 ? "leaky relu" : kind == 1 ? "sigmoid" : kind == 2 ? "tanh" : "clip";
    for (int pass = 0; pass < 2; pass++) { /* out of place, then in place */
      float* y = pass ? in : out;
      float keep[N];
      memcpy(keep, in, sizeof keep);
      if (kind == 0) cpu_leaky_relu(in, N, alpha, y);
      if (kind == 1) cpu_sigmoid(in, N, y);
      if (kind == 2) cpu_tanh(in, N, y);
      if (kind == 3) cpu_clip(in, N, lo, hi, y);
      CHECK(isnan(y[5]), "%s(NaN) is %g", name, y[5]);
      for (int i = 0; i < N; i++) {
        double x = keep[i];
        want[i] = kind == 0 ? (x < 0 ? (double)alpha * x : x)
                  : kind == 1 ? 1 / (1 + exp(-x))
                  : kind == 2 ? tanh(x)
                              : fmin(fmax(x, lo), hi);
      }
      y[5] = 0, want[5] = 0;
      bad += test_compare(name, y, want, N, ATOL, RTOL);
      memcpy(in, keep, sizeof keep);
    }
  }
  return bad;
}

static size_t check_fc(test_rng* rng, int n_in, int n_out, int with_bias) {
  float *in = new_floats(n_in), *w = new_floats((size_t)n_in * n_out), *b = new_floats(n_out);
  float* out = new_floats(n_out);
  double* want = new_doubles(n_out);
  test_fill_uniform(rng, in, n_in, -1, 1);
  test_fill_uniform(rng, w, (size_t)n_in * n_out, -1, 1);
  test_fill_uniform(rng, b, n_out, -1, 1);
  test_poison(out, n_out);
  cpu_fc(in, n_in, w, with_bias ? b : NULL, n_out, out);
  for (int o = 0; o < n_out; o++) {
    double sum = with_bias ? b[o] : 0;
    for (int i = 0; i < n_in; i++) sum += (double)w[o * n_in + i] * in[i];
    want[o] = sum;
  }
  char what[64];
  snprintf(what, sizeof what, "fc %d->%d bias%d", n_in, n_out, with_bias);
  size_t bad = test_compare(what, out, want, n_out, ATOL, RTOL);
  free(in), free(w), free(b), free(out), free(want);
  return bad;
}

static size_t test_fc(test_rng* rng) {
  return check_fc(rng, 800, 500, 1) + check_fc(rng, 500, 10, 1) + check_fc(rng, 37, 13, 0) +
         check_fc(rng, 1, 1, 1) + check_fc(rng, 1023, 3, 1);
}

/* ---- LRN ------------------------------------------------------------------------------------ */

static size_t check_lrn(test_rng* rng, int C, int H, int W, int n, double alpha, double beta,
                        double k, double magnitude) {
  size_t total = (size_t)C * H * W;
  float *in = new_floats(total), *out = new_floats(total);
  double* want = new_doubles(total);
  test_fill_uniform(rng, in, total, -magnitude, magnitude);
  test_poison(out, total);
  cpu_lrn(in, C, H, W, n, alpha, beta, k, out);
  /* The window as cuDNN documents it: floor((n-1)/2) channels before, the rest after. */
  int lo = (n - 1) / 2, hi = n - 1 - lo;
  for (int c = 0; c < C; c++)
    for (int i = 0; i < H * W; i++) {
      double sum = 0;
      for (int j = c - lo; j <= c + hi; j++)
        if (j >= 0 && j < C) sum += (double)in[j * H * W + i] * in[j * H * W + i];
      want[c * H * W + i] = in[c * H * W + i] / pow(k + alpha / n * sum, beta);
    }
  char what[96];
  snprintf(what, sizeof what, "lrn C%d H%d W%d n%d alpha%g beta%g k%g mag%g", C, H, W, n, alpha,
           beta, k, magnitude);
  size_t bad = test_compare(what, out, want, total, ATOL, RTOL);
  free(in), free(out), free(want);
  return bad;
}

static size_t test_lrn(test_rng* rng) {
  size_t bad = 0;
  bad += check_lrn(rng, 500, 1, 1, 5, 1e-4, 0.75, 1.0, 3);    /* the shipped layer */
  bad += check_lrn(rng, 3, 1, 1, 5, 1e-4, 0.75, 1.0, 3);      /* fewer channels than the window */
  bad += check_lrn(rng, 1, 3, 5, 5, 0.1, 0.75, 2.0, 3);       /* one channel */
  bad += check_lrn(rng, 7, 3, 5, 4, 0.5, 0.6, 1.0, 2);        /* even n: 1 before, 2 after */
  bad += check_lrn(rng, 9, 2, 3, 1, 0.5, 1.5, 0.5, 2);        /* n = 1: itself */
  bad += check_lrn(rng, 11, 1, 1, 16, 1e-3, 0.75, 1e-5, 1);   /* widest window, tiny k */
  bad += check_lrn(rng, 13, 2, 2, 5, 1e-4, 0.75, 1.0, 1e4);   /* large: the denominator matters */
  bad += check_lrn(rng, 13, 2, 2, 5, 1.0, 0.75, 1.0, 3e15);   /* squares near 1e31 */
  /* At the borders the window is clipped: channel 0 sums channels 0..2 only. */
  float x[5] = {1, 2, 3, 4, 5}, y[5];
  test_poison(y, 5);
  cpu_lrn(x, 5, 1, 1, 5, 5.0, 1.0, 1.0, y); /* alpha/n = 1, beta = 1: y = x / (1 + sum) */
  double want[5] = {1.0 / 15, 2.0 / 31, 3.0 / 56, 4.0 / 55, 5.0 / 51};
  bad += test_compare("lrn border", y, want, 5, 0, 1e-7);
  return bad;
}

/* ---- softmax -------------------------------------------------------------------------------- */

static size_t check_softmax(const float* in, size_t n, const char* what) {
  float* out = new_floats(n);
  double* want = new_doubles(n);
  test_poison(out, n);
  cpu_softmax(in, n, out);
  double m = -INFINITY, sum = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, in[i]);
  for (size_t i = 0; i < n; i++) sum += exp((double)in[i] - m);
  for (size_t i = 0; i < n; i++) want[i] = exp((double)in[i] - m) / sum;
  size_t bad = test_compare(what, out, want, n, 1e-7, 1e-6);
  double total = 0;
  for (size_t i = 0; i < n; i++) total += out[i];
  if (fabs(total - 1.0) > 1e-5) {
    fprintf(stderr, "  %s: sums to %.9f\n", what, total);
    bad++;
  }
  free(out), free(want);
  return bad;
}

static size_t test_softmax(test_rng* rng) {
  float x[37];
  size_t bad = 0;
  test_fill_uniform(rng, x, 37, -4, 4);
  bad += check_softmax(x, 37, "softmax small");
  test_fill_uniform(rng, x, 10, -1e4, 1e4); /* exp would overflow without the max shift */
  bad += check_softmax(x, 10, "softmax large");
  test_fill_uniform(rng, x, 11, 3e38, 3.3e38); /* near FLT_MAX */
  bad += check_softmax(x, 11, "softmax near FLT_MAX");
  float y[3] = {1000.0f, 1000.0f, -1000.0f};
  bad += check_softmax(y, 3, "softmax tie");
  bad += check_softmax(x, 1, "softmax one value");
  return bad;
}

int main(void) {
  test_rng rng = {20261122};
  size_t bad = test_conv(&rng) + test_pool(&rng) + test_relu(&rng) + test_pointwise(&rng) +
               test_fc(&rng) + test_lrn(&rng) + test_softmax(&rng);
  CHECK(bad == 0, "%zu values out of tolerance", bad);
  printf("cpu layers: all match the double-precision reference\n");
  return 0;
}
