/* ttp_variants: the shift benchmark's images. From a range of an IDX set, writes six
   directories of 28x28 PNG files named NNNNN_label<L>.png, each a deterministic variant of the
   same images, imitating what people draw or scan:
     plain   the images as they are;
     shift   moved 3 or 4 pixels in a direction drawn per image (black comes in);
     thick   strokes thickened: each pixel the maximum of itself and its four neighbours;
     thin    strokes thinned: each pixel the mean of itself and the minimum of its cross;
     scale   scaled about the centre by a factor drawn per image in 0.8 .. 1.2 (bilinear);
     paper   inverted onto a light, noisy background (0.8 .. 0.95, noise +-0.05), as a scan.
   Usage: ttp_variants IMAGES LABELS OUT [--offset N] [--limit N]
   The draws come from a fixed generator seeded by the image's index: the same command writes
   the same files. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stb/stb_image_write.h>

#include "ttapipe.h"

enum { N = 28 };

/* SplitMix64: a small deterministic generator. */
static uint64_t next(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double uniform(uint64_t* s) { return (double)(next(s) >> 11) / 9007199254740992.0; }

static double at(const double* v, int y, int x) {
  return y < 0 || y >= N || x < 0 || x >= N ? 0.0 : v[y * N + x];
}

/* Bilinear sample at (y, x), black outside. */
static double sample(const double* v, double y, double x) {
  int y0 = (int)floor(y), x0 = (int)floor(x);
  double ty = y - y0, tx = x - x0;
  return (1 - ty) * ((1 - tx) * at(v, y0, x0) + tx * at(v, y0, x0 + 1)) +
         ty * ((1 - tx) * at(v, y0 + 1, x0) + tx * at(v, y0 + 1, x0 + 1));
}

static void variant(const char* name, const double* in, double* out, uint64_t* rng) {
  if (strcmp(name, "shift") == 0) {
    double angle = 6.283185307179586 * uniform(rng), r = 3 + (double)(next(rng) & 1);
    int dx = (int)lround(r * cos(angle)), dy = (int)lround(r * sin(angle));
    for (int y = 0; y < N; y++)
      for (int x = 0; x < N; x++) out[y * N + x] = at(in, y - dy, x - dx);
  } else if (strcmp(name, "thick") == 0 || strcmp(name, "thin") == 0) {
    int thick = strcmp(name, "thick") == 0;
    for (int y = 0; y < N; y++)
      for (int x = 0; x < N; x++) {
        double c = at(in, y, x), m = c;
        double cross[4] = {at(in, y - 1, x), at(in, y + 1, x), at(in, y, x - 1), at(in, y, x + 1)};
        for (int k = 0; k < 4; k++) m = thick ? fmax(m, cross[k]) : fmin(m, cross[k]);
        out[y * N + x] = thick ? m : 0.5 * (c + m);
      }
  } else if (strcmp(name, "scale") == 0) {
    double f = 0.8 + 0.4 * uniform(rng), c = (N - 1) / 2.0;
    for (int y = 0; y < N; y++)
      for (int x = 0; x < N; x++) out[y * N + x] = sample(in, c + (y - c) / f, c + (x - c) / f);
  } else if (strcmp(name, "paper") == 0) {
    double ground = 0.8 + 0.15 * uniform(rng);
    for (int i = 0; i < N * N; i++) {
      double v = ground + 0.1 * (uniform(rng) - 0.5);
      out[i] = v - in[i] * (v - 0.05);
    }
  } else {
    memcpy(out, in, sizeof(double) * N * N);
  }
}

int main(int argc, char** argv) {
  static const char* const names[] = {"plain", "shift", "thick", "thin", "scale", "paper"};
  if (argc < 4) {
    fprintf(stderr, "usage: ttp_variants IMAGES LABELS OUT [--offset N] [--limit N]\n");
    return 2;
  }
  long offset = 0, limit = -1;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--offset") == 0) offset = strtol(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--limit") == 0) limit = strtol(argv[i + 1], NULL, 10);
  }
  char error[TTP_ERROR_SIZE];
  ttp_images im;
  uint8_t* labels;
  size_t count;
  if (ttp_read_idx_images(argv[1], &im, error, sizeof error) != TTP_OK ||
      ttp_read_idx_labels(argv[2], &labels, &count, error, sizeof error) != TTP_OK) {
    fprintf(stderr, "ttp_variants: %s\n", error);
    return 1;
  }
  if (im.rows != N || im.cols != N || count != im.count || offset < 0 ||
      (size_t)offset >= im.count) {
    fprintf(stderr, "ttp_variants: need 28x28 images with as many labels, and an offset inside\n");
    return 1;
  }
  size_t end = limit < 0 || (size_t)(offset + limit) > im.count ? im.count : (size_t)(offset + limit);
  mkdir(argv[3], 0755);
  for (size_t v = 0; v < sizeof names / sizeof *names; v++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", argv[3], names[v]);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "ttp_variants: %s: %s\n", dir, strerror(errno));
      return 1;
    }
    for (size_t i = (size_t)offset; i < end; i++) {
      double in[N * N], out[N * N];
      uint8_t px[N * N];
      for (int j = 0; j < N * N; j++) in[j] = im.pixels[i * N * N + j] / 255.0;
      uint64_t rng = 0x5eed0000u + i * 7919u + v;
      variant(names[v], in, out, &rng);
      for (int j = 0; j < N * N; j++) px[j] = (uint8_t)lround(255 * fmin(1.0, fmax(0.0, out[j])));
      char path[4200];
      snprintf(path, sizeof path, "%s/%05zu_label%d.png", dir, i, labels[i]);
      if (!stbi_write_png(path, N, N, 1, px, N)) {
        fprintf(stderr, "ttp_variants: %s: cannot write\n", path);
        return 1;
      }
    }
  }
  printf("ttp_variants: %zu images x %zu variants written to %s\n", end - (size_t)offset,
         sizeof names / sizeof *names, argv[3]);
  ttp_free(im.pixels);
  ttp_free(labels);
  return 0;
}
