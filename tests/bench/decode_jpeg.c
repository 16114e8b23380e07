/* JPEG decoders side by side: why io/jpeg.c decodes with libjpeg-turbo.
     stb      Debian's stb_image v2.27 (libstb-dev), which decoded ttapipe's JPEG files before:
              compiled here alone, static, for this comparison
     libjpeg  Debian's libjpeg-turbo through io/jpeg.c (io_jpeg_decode), what ships
   Inputs, written here with libjpeg-turbo's encoder: a 28 x 28 grey digit (the MNIST case), the
   same in colour (4:2:0), a 64 x 48 colour drawing, and 640 x 480 colour "photographs",
   baseline and progressive. Every variant decodes every input before anything is timed; the
   table gives each decoder's median and fastest time per file over repeated decodes, and how
   far apart their pixels are (two correct decoders may round differently).
   Usage: bench_decode_jpeg [--validate] [--seconds S]   (--validate: decode and compare only) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/image.h"
#include "pipeline/clock.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"

typedef struct input {
  const char* name;
  int w, h, components, subsample, progressive;
  uint8_t* jpeg;
  size_t size;
} input;

/* A drawing with smooth shading and some grain, so that the DCT has work at every frequency. */
static void encode(input* in) {
  uint8_t* px = malloc((size_t)in->w * in->h * in->components);
  CHECK(px, "out of memory");
  test_rng r = {(uint64_t)in->w * 31 + (uint64_t)in->h};
  for (int y = 0; y < in->h; y++)
    for (int x = 0; x < in->w; x++) {
      double cx = x - in->w * 0.45, cy = y - in->h * 0.5, d = sqrt(cx * cx + cy * cy);
      double ring = fabs(d - in->h * 0.28) < in->h * 0.07 ? 200 : 30;
      for (int k = 0; k < in->components; k++)
        px[((size_t)y * in->w + x) * in->components + k] =
            (uint8_t)fmin(255, ring + 20 * k + 10 * sin(x * 0.3 + k) + test_int(&r, 0, 12));
    }
  int sampling = in->components == 3 ? (in->subsample ? 2 : 1) : 0;
  fixture_jpeg_spec s = {in->w, in->h, in->components, 0, sampling, sampling, in->progressive,
                         0, 0, 0, 90, NULL, 0};
  in->size = fixture_jpeg_bytes(&s, px, &in->jpeg);
  free(px);
}

typedef struct decoded {
  int w, h, channels;
  uint8_t* px;
} decoded;

/* stb_jpeg.c */
uint8_t* bench_stb_jpeg(const uint8_t* bytes, int size, int* w, int* h, int* channels);

static decoded decode_stb(const input* in) {
  decoded d = {0};
  d.px = bench_stb_jpeg(in->jpeg, (int)in->size, &d.w, &d.h, &d.channels);
  CHECK(d.px, "stb cannot decode %s", in->name);
  return d;
}

static decoded decode_libjpeg(const input* in) {
  io_raster r;
  ttp_err e = {0};
  const io_limits full = io_limits_full(8192, 8192);
  CHECK(io_jpeg_decode(in->jpeg, in->size, in->name, &full, &r, &e) == TTP_OK, "%s", e.message);
  return (decoded){r.width, r.height, r.channels, r.data};
}

static const struct {
  const char* name;
  decoded (*decode)(const input*);
} variants[] = {{"stb", decode_stb}, {"libjpeg", decode_libjpeg}};
enum { VARIANTS = sizeof variants / sizeof variants[0] };

int main(int argc, char** argv) {
  int validate = 0;
  double seconds = 0.5;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--validate") == 0) validate = 1;
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
    else CHECK(0, "usage: %s [--validate] [--seconds S]", argv[0]);
  }
  input inputs[] = {{"28x28 grey", 28, 28, 1, 0, 0, NULL, 0},
                    {"28x28 colour 4:2:0", 28, 28, 3, 1, 0, NULL, 0},
                    {"64x48 colour 4:2:0", 64, 48, 3, 1, 0, NULL, 0},
                    {"640x480 colour 4:2:0", 640, 480, 3, 1, 0, NULL, 0},
                    {"640x480 progressive", 640, 480, 3, 1, 1, NULL, 0}};
  enum { INPUTS = sizeof inputs / sizeof inputs[0] };
  printf("%-22s %8s", "input", "bytes");
  for (int v = 0; v < VARIANTS; v++) printf(" %11s p50 %6s min", variants[v].name, "");
  printf("  pixels apart: max, mean\n");
  for (int i = 0; i < INPUTS; i++) {
    input* in = &inputs[i];
    encode(in);
    decoded d[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) {
      d[v] = variants[v].decode(in);
      CHECK(d[v].w == in->w && d[v].h == in->h && d[v].channels == in->components,
            "%s on %s: %dx%dx%d", variants[v].name, in->name, d[v].w, d[v].h, d[v].channels);
    }
    size_t n = (size_t)in->w * in->h * in->components;
    int most = 0;
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
      int diff = abs(d[0].px[k] - d[1].px[k]);
      most = diff > most ? diff : most, sum += diff;
    }
    /* Two decoders of one file: a few levels apart at most (rounding of the IDCT and of the
       colour conversion), never a different picture. */
    CHECK(most <= 8 && sum / n < 1.5, "%s: decoders %d levels apart (mean %.2f)", in->name, most,
          sum / n);
    printf("%-22s %8zu", in->name, in->size);
    for (int v = 0; v < VARIANTS; v++) {
      free(d[v].px);
      if (validate) {
        printf(" %24s", "-");
        continue;
      }
      enum { SAMPLES = 31 };
      double per_file[SAMPLES];
      int reps = 1;
      for (;;) { /* enough decodes per sample to fill seconds / SAMPLES */
        double t0 = clock_seconds();
        for (int k = 0; k < reps; k++) free(variants[v].decode(in).px);
        if (clock_seconds() - t0 > seconds / SAMPLES || reps > 1 << 20) break;
        reps *= 2;
      }
      for (int s = 0; s < SAMPLES; s++) {
        double t0 = clock_seconds();
        for (int k = 0; k < reps; k++) free(variants[v].decode(in).px);
        per_file[s] = (clock_seconds() - t0) / reps;
      }
      double p50 = test_quantile(per_file, SAMPLES, 0.5);
      printf(" %10.2f us %10.2f us", p50 * 1e6, per_file[0] * 1e6);
    }
    printf("  %d, %.3f\n", most, sum / n);
    free(in->jpeg);
  }
  return 0;
}
