/* Reduced decoding (io/shrink.h) against its definition: each box of factor x factor pixels
   averaged (rounded to the nearest), alpha-weighted where there is alpha, a box at an edge
   averaging the pixels it holds.
   - io_shrink itself, on random images of odd sizes, 1 to 4 channels, factors 1 to 7, rows
     given in a random order and as Adam7's passes (every 2nd, 4th, 8th column), and sparse
     images whose missing pixels take a background;
   - every decoder that reduces (PNG, BMP, PNM) on every seed of the fuzz corpus of its format
     (every colour type, bit depth, palette, tRNS, Adam7, row filter; every BMP header, depth,
     compression, RLE): decoded at a reduced size, the raster equals the box averages of the
     same file decoded whole, byte for byte;
   - JPEG at a DCT scale: the size n/8 of the image's, the smallest n that keeps what io_limits
     asks.
   Usage: test_shrink CORPUS_DIR (the fuzz corpus: png/, bmp/, pnm/, jpeg/) */
#include <dirent.h>
#include <string.h>

#include "io/file.h"
#include "io/image.h"
#include "io/shrink.h"
#include "tests/common/check.h"

/* The box averages of a full raster, as shrink.h defines them; missing: NULL, or 1 where a
   pixel never came (it then counts as background). */
static uint8_t* reference(const uint8_t* px, int w, int h, int c, int f, const uint8_t* missing,
                          const uint8_t* background, int opaque_if_clear) {
  const int ow = (w + f - 1) / f, oh = (h + f - 1) / f, alpha = c == 2 || c == 4;
  uint8_t* out = malloc((size_t)ow * oh * c);
  int clear = alpha && opaque_if_clear;
  for (size_t i = 0; alpha && i < (size_t)w * h; i++) clear &= px[i * c + c - 1] == 0;
  for (int by = 0; by < oh; by++)
    for (int bx = 0; bx < ow; bx++) {
      uint64_t sum[4] = {0}, n = 0;
      for (int y = by * f; y < h && y < (by + 1) * f; y++)
        for (int x = bx * f; x < w && x < (bx + 1) * f; x++) {
          const uint8_t* p = missing && missing[(size_t)y * w + x] ? background
                                                                  : px + ((size_t)y * w + x) * c;
          const uint64_t a = alpha && !clear ? p[c - 1] : 1;
          for (int k = 0; k < c - alpha; k++) sum[k] += p[k] * a;
          if (alpha) sum[c - 1] += clear ? 255 : p[c - 1];
          n++;
        }
      uint8_t* o = out + ((size_t)by * ow + bx) * c;
      const uint64_t weight = alpha && !clear ? sum[c - 1] : n;
      for (int k = 0; k < c - alpha; k++) o[k] = weight ? (uint8_t)((2 * sum[k] + weight) / (2 * weight)) : 0;
      if (alpha) o[c - 1] = (uint8_t)((2 * sum[c - 1] + n) / (2 * n));
    }
  return out;
}

static void check_same(const char* what, const uint8_t* got, const uint8_t* want, size_t n) {
  for (size_t i = 0; i < n; i++)
    CHECK(got[i] == want[i], "%s: byte %zu is %d, want %d", what, i, got[i], want[i]);
}

static void test_shrink_alone(test_rng* rng) {
  for (int trial = 0; trial < 120; trial++) {
    const int w = test_int(rng, 1, 41) | 1, h = test_int(rng, 1, 29) | 1;
    const int c = 1 + trial % 4, f = 1 + test_int(rng, 0, 6), sparse = trial % 5 == 4;
    const int clear = c % 2 == 0 && trial % 7 == 3; /* alpha 0 everywhere */
    uint8_t* px = malloc((size_t)w * h * c);
    uint8_t* missing = sparse ? calloc((size_t)w * h, 1) : NULL;
    for (size_t i = 0; i < (size_t)w * h * c; i++) px[i] = (uint8_t)test_int(rng, 0, 255);
    if (clear)
      for (size_t i = 0; i < (size_t)w * h; i++) px[i * c + c - 1] = 0;
    for (size_t i = 0; sparse && i < (size_t)w * h; i++) missing[i] = test_int(rng, 0, 3) == 0;
    const uint8_t background[4] = {17, 200, 90, 255};
    io_shrink s;
    ttp_err e = {0};
    CHECK(io_shrink_open(&s, w, h, c, f, 1, sparse, &e) == TTP_OK, "%s", e.message);
    /* The rows in a random order; odd trials as Adam7's passes would give them. */
    int* order = malloc((size_t)h * sizeof *order);
    for (int y = 0; y < h; y++) order[y] = y;
    for (int y = h - 1; y > 0; y--) {
      int k = test_int(rng, 0, y), t = order[y];
      order[y] = order[k], order[k] = t;
    }
    uint8_t* row = malloc((size_t)w * c);
    for (int i = 0; i < h; i++) {
      const int y = order[i];
      const int dx = trial % 2 ? 1 << test_int(rng, 1, 3) : 1;
      for (int x0 = 0; x0 < dx && x0 < w; x0++) {
        int n = 0;
        for (int x = x0; x < w; x += dx) {
          if (missing && missing[(size_t)y * w + x]) continue;
          memcpy(row + (size_t)n * c, px + ((size_t)y * w + x) * c, (size_t)c);
          io_shrink_row(&s, y, x, 1, row + (size_t)n * c, 1);
          n++;
        }
        (void)n;
      }
    }
    io_raster r = {0};
    CHECK(io_shrink_finish(&s, sparse ? background : NULL, &r, &e) == TTP_OK, "%s", e.message);
    uint8_t* want = reference(px, w, h, c, f, missing, background, 1);
    char what[96];
    snprintf(what, sizeof what, "shrink %dx%dx%d by %d%s%s", w, h, c, f, sparse ? ", sparse" : "",
             clear ? ", alpha 0" : "");
    CHECK(r.width == (w + f - 1) / f && r.height == (h + f - 1) / f && r.channels == c,
          "%s: %dx%dx%d", what, r.width, r.height, r.channels);
    check_same(what, r.data, want, (size_t)r.width * r.height * c);
    free(want), free(row), free(order), free(px), free(missing);
    io_raster_free(&r);
  }
  /* A row given with a stride: the same as its pixels one at a time. */
  io_shrink a, b;
  ttp_err e = {0};
  uint8_t line[3 * 40];
  for (int i = 0; i < 3 * 40; i++) line[i] = (uint8_t)test_int(rng, 0, 255);
  CHECK(io_shrink_open(&a, 160, 1, 3, 3, 0, 0, &e) == TTP_OK && io_shrink_open(&b, 160, 1, 3, 3, 0, 0, &e) == TTP_OK,
        "%s", e.message);
  io_shrink_row(&a, 0, 5, 4, line, 40);
  for (int i = 0; i < 40; i++) io_shrink_row(&b, 0, 5 + 4 * i, 1, line + 3 * i, 1);
  CHECK(memcmp(a.sums, b.sums, (size_t)a.out_w * 3 * sizeof *a.sums) == 0, "strided row differs");
  io_shrink_free(&a), io_shrink_free(&b);
}

/* Every file of dir decoded whole and reduced by factors 2, 3 and 5 (min sizes that ask for
   them); counts the comparisons. jpeg: the DCT scale's size instead. */
static int test_corpus(const char* dir, int jpeg) {
  DIR* d = opendir(dir);
  const size_t dir_len = strlen(dir);
  CHECK(dir_len < 4000, "%s: a path too long", dir);
  CHECK(d, "%s: cannot open", dir);
  struct dirent* ent;
  int compared = 0;
  while ((ent = readdir(d))) {
    if (ent->d_name[0] == '.') continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    uint8_t* bytes;
    size_t size;
    ttp_err e = {0};
    if (io_read_file(path, 1 << 24, &bytes, &size, &e) != TTP_OK) continue;
    io_limits l = io_limits_full(8192, 8192);
    io_raster full;
    if (io_decode(bytes, size, path, &l, &full, &e) != TTP_OK) { /* a broken seed */
      free(bytes);
      continue;
    }
    for (int f = 2; f <= 5; f += f == 2 ? 1 : 2) {
      if (full.width < f || full.height < f) continue;
      l.min_w = full.width / f, l.min_h = full.height / f;
      const int factor = io_reduction(&l, (uint64_t)full.width, (uint64_t)full.height);
      io_raster small;
      CHECK(io_decode(bytes, size, path, &l, &small, &e) == TTP_OK, "%s reduced: %s", path,
            e.message);
      char what[4500];
      snprintf(what, sizeof what, "%s reduced by %d", path, factor);
      if (jpeg) { /* n/8 of the size, the smallest n that keeps min */
        int n = 1;
        while (((full.width * n + 7) / 8 < l.min_w || (full.height * n + 7) / 8 < l.min_h)) n++;
        CHECK(small.width == (full.width * n + 7) / 8 && small.height == (full.height * n + 7) / 8,
              "%s: %dx%d at scale %d/8 of %dx%d", what, small.width, small.height, n,
              full.width, full.height);
      } else {
        /* (A BMP's alpha of zeros is made opaque by the whole decoding already.) */
        uint8_t* want = reference(full.data, full.width, full.height, full.channels, factor, NULL,
                                  NULL, 0);
        CHECK(small.width == (full.width + factor - 1) / factor && small.channels == full.channels,
              "%s: %dx%dx%d", what, small.width, small.height, small.channels);
        check_same(what, small.data, want, (size_t)small.width * small.height * small.channels);
        free(want);
      }
      io_raster_free(&small);
      compared++;
    }
    io_raster_free(&full);
    free(bytes);
  }
  closedir(d);
  return compared;
}

int main(int argc, char** argv) {
  CHECK(argc == 2, "usage: %s CORPUS_DIR", argv[0]);
  test_rng rng = {39};
  test_shrink_alone(&rng);
  static const char* const formats[] = {"png", "bmp", "pnm", "jpeg"};
  for (int k = 0; k < 4; k++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%.4000s/%s", argv[1], formats[k]);
    const int n = test_corpus(dir, k == 3);
    CHECK(n >= 10, "%s: only %d reduced decodings compared", dir, n);
    printf("%s: %d reduced decodings equal the box averages of the whole image\n", formats[k], n);
  }
  printf("shrink: box averages as defined, every decoder reducing as it decodes\n");
  return 0;
}
