/* Large images for the memory and time tests of decoding (tests/e2e/large_images.sh) and the
   measure of reduced decoding (tests/bench/large_decode.c): see large_images.h. */
#include "large_images.h"

#include <math.h>
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <zlib.h>

#include "check.h"
#include "fixtures.h"

/* ---- a synthetic photograph ------------------------------------------------------------------- */

/* Pixel (x, y) of a w x h scene, RGB: a sky-to-ground gradient, soft blobs of colour, a few
   hard-edged shapes, a fine texture and noise; the same function of (x, y, seed) at any size,
   so that rows can be made one at a time. */
void large_photo_row(int w, int h, int y, uint64_t seed, uint8_t* rgb) {
  const double v = (double)y / h;
  for (int x = 0; x < w; x++) {
    const double u = (double)x / w;
    double r = 90 + 120 * v, g = 140 + 60 * (1 - v), b = 200 - 130 * v;
    for (int k = 0; k < 5; k++) { /* blobs */
      const double cx = 0.15 + 0.17 * k, cy = 0.3 + 0.1 * ((k * 7 + (int)(seed % 5)) % 5);
      const double d2 = ((u - cx) * (u - cx) + (v - cy) * (v - cy)) / 0.01;
      const double a = exp(-d2);
      r += a * (k % 3 == 0 ? 100 : -40), g += a * (k % 3 == 1 ? 90 : -30), b += a * (k % 3 == 2 ? 80 : -50);
    }
    if (fabs(u - 0.62) < 0.08 && v > 0.55) r = 40, g = 30, b = 25;           /* a dark post */
    if ((u - 0.3) * (u - 0.3) + (v - 0.75) * (v - 0.75) < 0.004) r = 240, g = 220, b = 60; /* a disc */
    const double texture = 12 * sin(u * w * 0.9) * sin(v * h * 0.7);
    uint64_t z = seed ^ ((uint64_t)y << 32) ^ (uint64_t)x; /* splitmix64 of the position */
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double noise = (double)(z % 17) - 8;
    const double c[3] = {r + texture + noise, g + texture + noise, b + texture + noise};
    for (int k = 0; k < 3; k++) rgb[3 * x + k] = (uint8_t)(c[k] < 0 ? 0 : c[k] > 255 ? 255 : c[k]);
  }
}

/* ---- PNG, written row by row ------------------------------------------------------------------ */

static void put32(FILE* f, uint32_t v) {
  const uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  CHECK(fwrite(b, 1, 4, f) == 4, "write");
}

static void chunk(FILE* f, const char* type, const uint8_t* data, uint32_t n) {
  put32(f, n);
  CHECK(fwrite(type, 1, 4, f) == 4 && (n == 0 || fwrite(data, 1, n, f) == n), "write");
  uLong crc = crc32(crc32(0, Z_NULL, 0), (const Bytef*)type, 4);
  put32(f, (uint32_t)(n ? crc32(crc, data, n) : crc));
}

void large_png(const char* path, int w, int h, int colour, int depth, large_row_fn row,
               uint64_t seed) {
  static const int samples[7] = {1, 0, 3, 1, 2, 0, 4};
  const size_t line = (size_t)w * samples[colour] * depth / 8;
  FILE* f = fopen(path, "wb");
  CHECK(f, "%s: cannot create", path);
  CHECK(fwrite("\x89PNG\r\n\x1a\n", 1, 8, f) == 8, "write");
  uint8_t ihdr[13] = {(uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                      (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                      (uint8_t)depth, (uint8_t)colour, 0, 0, 0};
  chunk(f, "IHDR", ihdr, 13);
  z_stream z = {0};
  CHECK(deflateInit(&z, 6) == Z_OK, "deflateInit");
  uint8_t* raw = calloc(line + 1, 1);
  enum { OUT = 1 << 16 };
  uint8_t* out = malloc(OUT);
  CHECK(raw && out, "out of memory");
  for (int y = 0; y <= h; y++) {
    if (y < h) {
      raw[0] = 0; /* filter None */
      row(w, h, y, seed, raw + 1);
      z.next_in = raw, z.avail_in = (uInt)(line + 1);
    }
    int r;
    do {
      z.next_out = out, z.avail_out = OUT;
      r = deflate(&z, y == h ? Z_FINISH : Z_NO_FLUSH);
      CHECK(r != Z_STREAM_ERROR, "deflate");
      if (OUT - z.avail_out) chunk(f, "IDAT", out, OUT - z.avail_out);
    } while (z.avail_out == 0 || (y == h && r != Z_STREAM_END));
  }
  deflateEnd(&z);
  chunk(f, "IEND", NULL, 0);
  CHECK(fclose(f) == 0, "%s: write", path);
  free(raw), free(out);
}

/* ---- JPEG ---------------------------------------------------------------------------------------- */

void large_jpeg(const char* path, int w, int h, int components, int quality, int scans,
                large_row_fn row, uint64_t seed) {
  const int progression = scans < 0; /* libjpeg's own */
  uint8_t* px = malloc((size_t)w * h * 3);
  CHECK(px, "out of memory");
  for (int y = 0; y < h; y++) row(w, h, y, seed, px + (size_t)y * w * 3);
  if (components == 1)
    for (size_t i = 0; i < (size_t)w * h; i++)
      px[i] = (uint8_t)((px[3 * i] * 77 + px[3 * i + 1] * 150 + px[3 * i + 2] * 29) >> 8);
  /* scans > 1: a progressive file of that many scans: the DC of every component, then each AC
     coefficient of each component alone, sent one bit at a time (successive approximation from
     bit 10, libjpeg's most for 8-bit samples, down), as many as the count asks. */
  jpeg_scan_info* script = NULL;
  int n = 0;
  if (scans > 1) {
    CHECK(scans <= 1 + components * 63 * 11, "a scan script of %d scans", scans);
    script = calloc((size_t)scans, sizeof *script);
    script[n++] = (jpeg_scan_info){components, {0, 1, 2, 3}, 0, 0, 0, 0};
    for (int ci = 0; ci < components && n < scans; ci++)
      for (int k = 1; k <= 63 && n < scans; k++)
        for (int al = 10; al >= 0 && n < scans; al--)
          script[n++] = (jpeg_scan_info){1, {ci}, k, k, al == 10 ? 0 : al + 1, al};
  }
  fixture_jpeg_spec spec = {w, h, components, 0, 0, 0, progression, 0, 0, 0, quality, script, n};
  uint8_t* file;
  size_t size = fixture_jpeg_bytes(&spec, px, &file);
  test_write_file(path, file, size);
  free(file), free(px), free(script);
}

/* ---- the hostile files -------------------------------------------------------------------------- */

/* A 16-bit RGBA row of zeros but for a bar: half a kilobyte of file a megabyte of pixels. */
static void bar_row(int w, int h, int y, uint64_t seed, uint8_t* px) {
  (void)seed;
  memset(px, 0, (size_t)w * 8);
  if (y > h / 3 && y < h / 2)
    for (int x = w / 4; x < w / 2; x++) memset(px + 8 * x, 0xff, 8);
}

/* An RLE8 BMP of w x h pixels in about a kilobyte: a palette, a few runs, the end. */
static void rle_bmp(const char* path, int w, int h) {
  test_bytes b = {0};
  const uint32_t offset = 14 + 40 + 256 * 4;
  test_put(&b, "BM", 2);
  test_put32le(&b, 0); /* the file's size: filled below */
  test_put32le(&b, 0);
  test_put32le(&b, offset);
  test_put32le(&b, 40);
  test_put32le(&b, (uint32_t)w), test_put32le(&b, (uint32_t)h);
  test_put16le(&b, 1), test_put16le(&b, 8);
  test_put32le(&b, 1); /* BI_RLE8 */
  for (int i = 0; i < 5; i++) test_put32le(&b, 0);
  for (int i = 0; i < 256; i++) test_put32le(&b, (uint32_t)(i * 0x010101));
  for (int k = 0; k < 12; k++) test_put8(&b, 255), test_put8(&b, (unsigned)(20 * k));
  test_put8(&b, 0), test_put8(&b, 1); /* the end of the bitmap */
  b.p[2] = (uint8_t)b.n, b.p[3] = (uint8_t)(b.n >> 8);
  test_write_file(path, b.p, b.n);
  free(b.p);
}

void large_hostile(const char* dir, int side, int progressive) {
  char path[4096];
  snprintf(path, sizeof path, "%s/png16-rgba-%d.png", dir, side);
  large_png(path, side, side, 6, 16, bar_row, 0);
  snprintf(path, sizeof path, "%s/rle8-%d.bmp", dir, side);
  rle_bmp(path, side, side);
  if (!progressive) return;
  snprintf(path, sizeof path, "%s/progressive-499-scans-%d.jpg", dir, side);
  large_jpeg(path, side, side, 1, 75, 499, large_photo_row, 1);
  snprintf(path, sizeof path, "%s/progressive-883-scans-%d.jpg", dir, side);
  large_jpeg(path, side, side, 3, 75, 883, large_photo_row, 2);
}

void large_big(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/photo-6000x4000.jpg", dir);
  large_jpeg(path, 6000, 4000, 3, 90, 1, large_photo_row, 3);
  snprintf(path, sizeof path, "%s/photo-4096x4096.png", dir);
  large_png(path, 4096, 4096, 2, 8, large_photo_row, 4);
  snprintf(path, sizeof path, "%s/progressive-6000x4000.jpg", dir);
  large_jpeg(path, 6000, 4000, 3, 90, -1, large_photo_row, 5);
}
