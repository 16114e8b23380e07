/* Preprocessing against direct computations: grey by BT.601 luma and alpha over white; the
   border test of auto inversion; resampling (area averages when shrinking, bilinear when
   enlarging) against a double-precision reference written here; MNIST centring (the ink's
   longer side 20 pixels, its centre of mass at the centre). */
#include <math.h>
#include <string.h>

#include "io/preprocess.h"
#include "tests/common/check.h"

/* The reference resampling of one line: output j averages the source over
   [j s, (j + 1) s) (s = n_src / n_dst) when shrinking; when enlarging it interpolates linearly
   at source position (j + 0.5) s - 0.5, clamped to the first and last pixels. */
static void ref_line(const double* src, int n, double* dst, int m) {
  double s = (double)n / m;
  for (int j = 0; j < m; j++) {
    if (m < n) {
      double sum = 0;
      for (int i = 0; i < n; i++) {
        double overlap = fmin(i + 1.0, (j + 1) * s) - fmax((double)i, j * s);
        if (overlap > 0) sum += overlap * src[i];
      }
      dst[j] = sum / s;
    } else if (m == n) {
      dst[j] = src[j];
    } else {
      double x = fmin(fmax((j + 0.5) * s - 0.5, 0.0), n - 1.0);
      int i = (int)floor(x);
      double t = x - i;
      dst[j] = i + 1 < n ? (1 - t) * src[i] + t * src[i + 1] : src[i];
    }
  }
}

static size_t check_resample(test_rng* rng, int sw, int sh, int dw, int dh) {
  float* src = malloc(sizeof(float) * sw * sh);
  float* dst = malloc(sizeof(float) * dw * dh);
  float* scratch = malloc(sizeof(float) * dw * sh);
  double* tmp = malloc(sizeof(double) * dw * sh);
  double* want = malloc(sizeof(double) * dw * dh);
  double line_in[512], line_out[512];
  test_fill_uniform(rng, src, (size_t)sw * sh, 0, 1);
  test_poison(dst, (size_t)dw * dh);
  io_resample(src, sw, sh, dst, dw, dh, scratch);
  for (int y = 0; y < sh; y++) {
    for (int x = 0; x < sw; x++) line_in[x] = src[y * sw + x];
    ref_line(line_in, sw, line_out, dw);
    for (int x = 0; x < dw; x++) tmp[y * dw + x] = line_out[x];
  }
  for (int x = 0; x < dw; x++) {
    for (int y = 0; y < sh; y++) line_in[y] = tmp[y * dw + x];
    ref_line(line_in, sh, line_out, dh);
    for (int y = 0; y < dh; y++) want[y * dw + x] = line_out[y];
  }
  char what[64];
  snprintf(what, sizeof what, "resample %dx%d -> %dx%d", sw, sh, dw, dh);
  size_t bad = test_compare(what, dst, want, (size_t)dw * dh, 1e-5, 1e-5);
  free(src), free(dst), free(scratch), free(tmp), free(want);
  return bad;
}

static void test_resample(test_rng* rng) {
  size_t bad = check_resample(rng, 28, 28, 28, 28) + check_resample(rng, 56, 84, 28, 28) +
               check_resample(rng, 97, 31, 28, 28) + check_resample(rng, 13, 7, 28, 28) +
               check_resample(rng, 3, 200, 28, 28) + check_resample(rng, 1, 1, 28, 28) +
               check_resample(rng, 400, 300, 20, 13);
  for (int t = 0; t < 20; t++)
    bad += check_resample(rng, test_int(rng, 1, 300), test_int(rng, 1, 300), test_int(rng, 1, 40),
                          test_int(rng, 1, 40));
  CHECK(bad == 0, "%zu resampled values wrong", bad);
  /* Worked by hand: 3 -> 2 averages (a + b/2) / 1.5 and (b/2 + c) / 1.5; 2 -> 4 is a, 3a/4 + b/4,
     a/4 + 3b/4, b. */
  float s3[3] = {0.3f, 0.6f, 0.9f}, d2[2], scratch[8];
  io_resample(s3, 3, 1, d2, 2, 1, scratch);
  CHECK(fabsf(d2[0] - 0.4f) < 1e-6 && fabsf(d2[1] - 0.8f) < 1e-6, "3 -> 2: %g %g", d2[0], d2[1]);
  float s2[2] = {0.2f, 1.0f}, d4[4];
  io_resample(s2, 2, 1, d4, 4, 1, scratch);
  CHECK(fabsf(d4[0] - 0.2f) < 1e-6 && fabsf(d4[1] - 0.4f) < 1e-6 && fabsf(d4[2] - 0.8f) < 1e-6 &&
            fabsf(d4[3] - 1.0f) < 1e-6,
        "2 -> 4: %g %g %g %g", d4[0], d4[1], d4[2], d4[3]);
}

static void test_grey(void) {
  uint8_t px[4 * 4] = {255, 0, 0, 255, 0, 255, 0, 128, 0, 0, 255, 0, 10, 20, 30, 255};
  io_raster r = {.width = 4, .height = 1, .channels = 4, .data = px};
  io_grey g;
  ttp_err e = {0};
  CHECK(io_to_grey(&r, &g, &e) == TTP_OK, "%s", e.message);
  double a = 128 / 255.0;
  double want[4] = {0.299, a * 0.587 + (1 - a), 1.0, (0.299 * 10 + 0.587 * 20 + 0.114 * 30) / 255};
  CHECK(test_compare("grey", g.v, want, 4, 1e-6, 0) == 0, "RGBA to grey");
  io_grey_free(&g);
  uint8_t ga[4] = {100, 255, 100, 0}; /* grey + alpha: opaque, then fully transparent */
  io_raster r2 = {.width = 2, .height = 1, .channels = 2, .data = ga};
  CHECK(io_to_grey(&r2, &g, &e) == TTP_OK, "%s", e.message);
  double want2[2] = {100 / 255.0, 1.0};
  CHECK(test_compare("grey+alpha", g.v, want2, 2, 1e-6, 0) == 0, "GA to grey");
  io_grey_free(&g);
  /* The border decides inversion: a light ring around a dark middle, and the reverse. */
  float v[25];
  for (int i = 0; i < 25; i++) v[i] = (i / 5 == 0 || i / 5 == 4 || i % 5 == 0 || i % 5 == 4) ? 0.9f : 0.0f;
  io_grey light = {5, 5, v};
  CHECK(io_border_is_light(&light), "a light border was not seen");
  for (int i = 0; i < 25; i++) v[i] = 0.9f - v[i];
  CHECK(!io_border_is_light(&light), "a dark border was seen as light");
}

/* A filled 30 x 50 rectangle off-centre in a 100 x 60 field: centred, it is 20 tall, 12 wide,
   with its centre of mass at (14, 14). */
static void test_center(void) {
  enum { W = 100, H = 60 };
  float v[W * H] = {0};
  for (int y = 5; y < 55; y++)
    for (int x = 60; x < 90; x++) v[y * W + x] = 1.0f;
  v[2 * W + 3] = 0.2f; /* faint dirt, below the ink level: outside the box */
  io_grey g = {W, H, v};
  float out[28 * 28];
  ttp_err e = {0};
  test_poison(out, 28 * 28);
  CHECK(io_center_mnist(&g, 28, 28, out, &e) == TTP_OK, "%s", e.message);
  int x0 = 28, x1 = -1, y0 = 28, y1 = -1;
  double mass = 0, mx = 0, my = 0;
  for (int y = 0; y < 28; y++)
    for (int x = 0; x < 28; x++) {
      float p = out[y * 28 + x];
      CHECK(!isnan(p), "pixel (%d,%d) unwritten", y, x);
      if (p >= 0.5f) {
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
      mass += p, mx += p * (x + 0.5), my += p * (y + 0.5);
    }
  CHECK(y1 - y0 + 1 == 20 && x1 - x0 + 1 == 12, "ink box %dx%d, want 12x20", x1 - x0 + 1, y1 - y0 + 1);
  CHECK(fabs(mx / mass - 14) <= 0.5 && fabs(my / mass - 14) <= 0.5, "centre of mass (%.2f, %.2f)",
        mx / mass, my / mass);
  /* No ink at all: the whole image, resized. */
  float blank[W * H];
  for (int i = 0; i < W * H; i++) blank[i] = 0.1f;
  io_grey b = {W, H, blank};
  CHECK(io_center_mnist(&b, 28, 28, out, &e) == TTP_OK, "%s", e.message);
  for (int i = 0; i < 28 * 28; i++) CHECK(fabsf(out[i] - 0.1f) < 1e-6, "blank pixel %d: %g", i, out[i]);
}

/* Dark strokes on white come out light on black with TTP_INVERT_AUTO, and not with NO. */
static void test_polarity(void) {
  enum { W = 40, H = 30 };
  uint8_t px[W * H];
  for (int i = 0; i < W * H; i++) px[i] = (i % W > 15 && i % W < 20) ? 10 : 245;
  io_raster r = {.width = W, .height = H, .channels = 1, .data = px};
  ttp_image_options o;
  ttp_image_options_init(&o);
  uint8_t out[28 * 28];
  ttp_err e = {0};
  CHECK(io_preprocess(&r, &o, 28, 28, out, &e) == TTP_OK, "%s", e.message);
  CHECK(out[0] < 20 && out[14 * 28 + 12] > 200, "auto: corner %d, stroke %d", out[0], out[14 * 28 + 12]);
  o.invert = TTP_INVERT_NO;
  CHECK(io_preprocess(&r, &o, 28, 28, out, &e) == TTP_OK, "%s", e.message);
  CHECK(out[0] > 200, "no inversion: corner %d", out[0]);
}

int main(void) {
  test_rng rng = {77};
  test_resample(&rng);
  test_grey();
  test_center();
  test_polarity();
  printf("preprocess: grey, polarity, resampling and centring as specified\n");
  return 0;
}
