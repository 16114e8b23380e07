/* ttp_fuzz_corpus DIR: writes the seed corpus of the image fuzz targets, made here rather than
   committed: DIR/png, DIR/jpeg, DIR/bmp and DIR/pnm, small files that reach the corners of each
   decoder.
     PNG  grey of 1, 2, 4, 8 and 16 bits; grey + alpha, RGB, RGBA of 8 and 16; palettes of 1 to
          8 bits; tRNS transparency; Adam7 interlacing; every row filter; several IDAT chunks
          and ancillary chunks. Written here with zlib, from the PNG specification.
     JPEG baseline and progressive; grey, YCbCr 4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1, RGB, CMYK,
          YCCK; restart intervals; optimised Huffman tables; arithmetic coding. Written with
          Debian's libjpeg-turbo (jpeglib.h).
     BMP  1, 4 and 8-bit palettes (RLE4 and RLE8 too), 16 bits (5-5-5, 5-6-5, 1-5-5-5), 24,
          32 (8-8-8 with alpha, 10-10-10-2; bit fields with and without alpha); OS/2 core,
          info, V2, V3, V4 and V5 headers; bottom-up and top-down rows. Written by
          tests/common/bmp_writer.c.
     PNM  P5 and P6, 8 and 16-bit samples, comments in the header.
   Every file ends with 4 more bytes, after the image, that the targets read as the
   preprocessing options (tests/fuzz/fuzz_image.c); the decoders ignore them. */
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <zlib.h>

#include "../common/check.h"
#include "../common/fixtures.h"

typedef test_bytes buf;
#define put test_put
#define put8 test_put8

static void put16be(buf* b, unsigned v) { put8(b, v >> 8 & 255), put8(b, v & 255); }
static void put32be(buf* b, uint32_t v) { put16be(b, v >> 16), put16be(b, v & 0xffff); }

static const char* out_dir;
static unsigned seeds;

/* Writes b, then the 4 option bytes, as DIR/format/name; empties b. */
static void save(const char* format, const char* name, buf* b) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", out_dir, format);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%s/%s", out_dir, format, name);
  /* invert yes/no/auto, centring on or off, and output sizes, varied over the seeds */
  uint8_t options[4] = {(uint8_t)(seeds % 3), (uint8_t)(seeds / 3 % 2), (uint8_t)(27 + seeds % 5),
                        (uint8_t)(27 + seeds * 7 % 11)};
  put(b, options, 4);
  test_write_file(path, b->p, b->n);
  b->n = 0;
  seeds++;
}

/* A drawing (a ring and a bar on a ground with a gradient) of w x h, channel c, in 0..maxval. */
static unsigned sample(int x, int y, int c, int w, int h, unsigned maxval) {
  double cx = w * 0.45, cy = h * 0.5, r = (w < h ? w : h) * 0.3 + 0.5;
  double d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
  int ink = (d2 < r * r && d2 > r * r * 0.4) || (x > w * 0.7 && x < w * 0.8 && y > h / 5);
  double v = ink ? 0.85 : 0.1 + 0.1 * x / (w + 1) + 0.05 * c;
  v += 0.03 * ((x * 7 + y * 13 + c * 5) % 5);
  return (unsigned)(v * maxval + 0.5) > maxval ? maxval : (unsigned)(v * maxval + 0.5);
}

/* ---- PNG ------------------------------------------------------------------------------------- */

static void png_chunk(buf* b, const char* type, const uint8_t* data, size_t n) {
  put32be(b, (uint32_t)n);
  size_t at = b->n;
  put(b, type, 4);
  if (n) put(b, data, n);
  put32be(b, (uint32_t)crc32(crc32(0, NULL, 0), b->p + at, (uInt)(n + 4)));
}

static int paeth(int a, int b, int c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* color: 0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGBA. trns: add a tRNS chunk. */
static void png(const char* name, int w, int h, int depth, int color, int interlace, int trns,
                int idat_parts) {
  static const int pass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                 {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  int channels = color == 2 ? 3 : color == 4 ? 2 : color == 6 ? 4 : 1;
  unsigned maxval = (1u << depth) - 1;
  int bpp = channels * depth / 8 < 1 ? 1 : channels * depth / 8;
  buf raw = {0};
  for (int p = 0; p < (interlace ? 7 : 1); p++) {
    int x0 = interlace ? pass[p][0] : 0, y0 = interlace ? pass[p][1] : 0;
    int dx = interlace ? pass[p][2] : 1, dy = interlace ? pass[p][3] : 1;
    int pw = (w - x0 + dx - 1) / dx, ph = (h - y0 + dy - 1) / dy;
    if (pw <= 0 || ph <= 0) continue;
    size_t row_bytes = ((size_t)pw * channels * depth + 7) / 8;
    uint8_t* prior = calloc(row_bytes, 1);
    uint8_t* row = calloc(row_bytes, 1);
    CHECK(prior && row, "out of memory");
    for (int j = 0; j < ph; j++) {
      memset(row, 0, row_bytes);
      for (int i = 0; i < pw; i++)
        for (int c = 0; c < channels; c++) {
          int x = x0 + i * dx, y = y0 + j * dy;
          unsigned v = color == 3 ? (unsigned)(x + 3 * y) % (1u << depth)
                                  : sample(x, y, c, w, h, maxval);
          size_t bit = ((size_t)i * channels + c) * depth;
          if (depth == 16) {
            row[bit / 8] = (uint8_t)(v >> 8), row[bit / 8 + 1] = (uint8_t)v;
          } else {
            row[bit / 8] |= (uint8_t)(v << (8 - depth - bit % 8));
          }
        }
      int filter = (j + p) % 5;
      put8(&raw, (unsigned)filter);
      for (size_t k = 0; k < row_bytes; k++) {
        int a = k >= (size_t)bpp ? row[k - bpp] : 0, b = prior[k];
        int c = k >= (size_t)bpp ? prior[k - bpp] : 0;
        int predict = filter == 1 ? a : filter == 2 ? b : filter == 3 ? (a + b) / 2
                      : filter == 4 ? paeth(a, b, c) : 0;
        put8(&raw, (unsigned)(row[k] - predict) & 255);
      }
      memcpy(prior, row, row_bytes);
    }
    free(prior), free(row);
  }
  uLongf packed_size = compressBound((uLong)raw.n);
  uint8_t* packed = malloc(packed_size);
  CHECK(packed && compress2(packed, &packed_size, raw.p, (uLong)raw.n, 9) == Z_OK, "zlib");

  buf b = {0};
  put(&b, "\x89PNG\r\n\x1a\n", 8);
  buf ihdr = {0};
  put32be(&ihdr, (uint32_t)w), put32be(&ihdr, (uint32_t)h);
  put8(&ihdr, (unsigned)depth), put8(&ihdr, (unsigned)color), put8(&ihdr, 0), put8(&ihdr, 0);
  put8(&ihdr, (unsigned)interlace);
  png_chunk(&b, "IHDR", ihdr.p, ihdr.n);
  png_chunk(&b, "gAMA", (const uint8_t*)"\x00\x00\xb1\x8f", 4);
  png_chunk(&b, "tEXt", (const uint8_t*)"Comment\0ttapipe seed", 20);
  if (color == 3) {
    buf plte = {0};
    for (unsigned i = 0; i < (1u << depth); i++)
      put8(&plte, i * 37 % 256), put8(&plte, i * 91 % 256), put8(&plte, 255 - i * 13 % 256);
    png_chunk(&b, "PLTE", plte.p, plte.n);
    free(plte.p);
  }
  if (trns) {
    buf t = {0};
    if (color == 3)
      for (unsigned i = 0; i < (1u << depth) && i < 7; i++) put8(&t, i * 40);
    else
      for (int c = 0; c < channels; c++) put16be(&t, maxval / 2);
    png_chunk(&b, "tRNS", t.p, t.n);
    free(t.p);
  }
  size_t at = 0, part = packed_size / (size_t)idat_parts + 1;
  while (at < packed_size) {
    size_t n = packed_size - at < part ? packed_size - at : part;
    png_chunk(&b, "IDAT", packed + at, n);
    at += n;
  }
  png_chunk(&b, "IEND", NULL, 0);
  save("png", name, &b);
  free(b.p), free(ihdr.p), free(raw.p), free(packed);
}

static void png_seeds(void) {
  static const struct {
    int color, depths[5];
  } kinds[] = {{0, {1, 2, 4, 8, 16}}, {2, {8, 16}}, {3, {1, 2, 4, 8}}, {4, {8, 16}}, {6, {8, 16}}};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (int d = 0; d < 5 && kinds[k].depths[d]; d++) {
      int depth = kinds[k].depths[d], color = kinds[k].color;
      char name[64];
      snprintf(name, sizeof name, "c%d_%dbit.png", color, depth);
      png(name, 29 + (int)k, 23 + d, depth, color, 0, 0, 1);
      snprintf(name, sizeof name, "c%d_%dbit_adam7.png", color, depth);
      png(name, 13 + d, 11 + (int)k, depth, color, 1, 0, 2);
      if (color == 0 || color == 2 || color == 3) {
        snprintf(name, sizeof name, "c%d_%dbit_trns.png", color, depth);
        png(name, 9, 7, depth, color, d % 2, 1, 1);
      }
    }
  png("1x1.png", 1, 1, 8, 0, 0, 0, 1);
  png("1x1_adam7.png", 1, 1, 8, 6, 1, 0, 1);
  png("tall_many_idat.png", 3, 64, 8, 2, 0, 0, 5);
}

/* ---- JPEG ------------------------------------------------------------------------------------ */

typedef struct jpeg_seed {
  const char* name;
  fixture_jpeg_spec spec;
} jpeg_seed;

static void jpeg_seeds(void) {
  enum { G = JCS_GRAYSCALE, Y = JCS_YCbCr, R = JCS_RGB, C = JCS_CMYK, K = JCS_YCCK };
  /* w, h, components, stored as, sampling of the first component, progressive, restart
     interval, optimised tables, arithmetic coding, quality */
  static const jpeg_seed seeds_[] = {
      {"grey.jpg", {28, 28, 1, G, 1, 1, 0, 0, 0, 0, 90, NULL, 0}},
      {"grey_progressive.jpg", {37, 21, 1, G, 1, 1, 1, 0, 0, 0, 75, NULL, 0}},
      {"grey_restart.jpg", {33, 17, 1, G, 1, 1, 0, 1, 1, 0, 95, NULL, 0}},
      {"ycc444.jpg", {19, 23, 3, Y, 1, 1, 0, 0, 0, 0, 90, NULL, 0}},
      {"ycc422_progressive.jpg", {41, 18, 3, Y, 2, 1, 1, 0, 0, 0, 85, NULL, 0}},
      {"ycc420_restart.jpg", {35, 35, 3, Y, 2, 2, 0, 2, 0, 0, 80, NULL, 0}},
      {"ycc420_progressive_restart.jpg", {50, 30, 3, Y, 2, 2, 1, 3, 0, 0, 70, NULL, 0}},
      {"ycc440.jpg", {16, 31, 3, Y, 1, 2, 0, 0, 1, 0, 90, NULL, 0}},
      {"ycc411.jpg", {45, 9, 3, Y, 4, 1, 0, 0, 0, 0, 90, NULL, 0}},
      {"rgb.jpg", {13, 14, 3, R, 1, 1, 0, 0, 0, 0, 92, NULL, 0}},
      {"cmyk.jpg", {12, 10, 4, C, 1, 1, 0, 0, 0, 0, 90, NULL, 0}},
      {"ycck_progressive.jpg", {17, 15, 4, K, 2, 2, 1, 0, 0, 0, 90, NULL, 0}},
      {"arithmetic.jpg", {20, 20, 3, Y, 2, 2, 0, 0, 0, 1, 90, NULL, 0}},
      {"arithmetic_progressive.jpg", {20, 12, 1, G, 1, 1, 1, 0, 0, 1, 90, NULL, 0}},
      {"1x1.jpg", {1, 1, 3, Y, 2, 2, 0, 0, 0, 0, 90, NULL, 0}},
      {"8x8_q100.jpg", {8, 8, 1, G, 1, 1, 0, 0, 0, 0, 100, NULL, 0}},
  };
  for (size_t i = 0; i < sizeof seeds_ / sizeof seeds_[0]; i++) {
    const fixture_jpeg_spec* s = &seeds_[i].spec;
    uint8_t* pixels = malloc((size_t)s->w * s->h * s->components);
    CHECK(pixels, "out of memory");
    for (int y = 0; y < s->h; y++)
      for (int x = 0; x < s->w; x++)
        for (int k = 0; k < s->components; k++)
          pixels[((size_t)y * s->w + x) * s->components + k] = (uint8_t)sample(x, y, k, s->w, s->h, 255);
    buf b = {0};
    b.n = b.cap = fixture_jpeg_bytes(s, pixels, &b.p);
    save("jpeg", seeds_[i].name, &b);
    free(b.p), free(pixels);
  }
}

/* ---- BMP ------------------------------------------------------------------------------------- */

/* A BMP of the drawing: palette indices that change every third pixel (so that RLE has runs
   and literals), or the drawing's colours with an alpha that grows left to right. */
static void bmp(const char* name, int w, int h, int bits, int header, int compression,
                int top_down, const uint32_t masks[4]) {
  fixture_bmp_spec spec = {w, h, bits, header, compression, top_down, 0, {0}};
  memcpy(spec.masks, masks, sizeof spec.masks);
  uint8_t* pixels = malloc((size_t)w * h * 4);
  CHECK(pixels, "out of memory");
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      if (bits <= 8) {
        pixels[(size_t)y * w + x] = (uint8_t)((x / 3 + y) % (1 << bits));
      } else {
        uint8_t* p = pixels + ((size_t)y * w + x) * 4;
        for (int c = 0; c < 3; c++) p[c] = (uint8_t)sample(x, y, c, w, h, 255);
        p[3] = (uint8_t)(x * 255 / (w > 1 ? w - 1 : 1));
      }
    }
  buf b = {0};
  b.n = b.cap = fixture_bmp_bytes(&spec, pixels, &b.p);
  save("bmp", name, &b);
  free(b.p), free(pixels);
}

static void bmp_seeds(void) {
  static const uint32_t none[4] = {0}, m555[4] = {0x7c00, 0x03e0, 0x001f, 0},
                        m565[4] = {0xf800, 0x07e0, 0x001f, 0},
                        m1555[4] = {0x7c00, 0x03e0, 0x001f, 0x8000},
                        argb[4] = {0x00ff0000, 0x0000ff00, 0x000000ff, 0xff000000},
                        rgbx[4] = {0x00ff0000, 0x0000ff00, 0x000000ff, 0},
                        r10[4] = {0x3ff00000, 0x000ffc00, 0x000003ff, 0xc0000000};
  bmp("1bit.bmp", 29, 13, 1, 40, 0, 0, none);
  bmp("4bit.bmp", 21, 17, 4, 40, 0, 1, none);
  bmp("8bit.bmp", 28, 28, 8, 40, 0, 0, none);
  bmp("8bit_core.bmp", 15, 9, 8, 12, 0, 0, none);
  bmp("24bit_core.bmp", 11, 6, 24, 12, 0, 0, none);
  bmp("rle8.bmp", 23, 11, 8, 40, 1, 0, none);
  bmp("rle4.bmp", 19, 10, 4, 40, 2, 0, none);
  bmp("16bit_555.bmp", 13, 9, 16, 40, 0, 0, m555);
  bmp("16bit_565.bmp", 17, 8, 16, 40, 3, 1, m565);
  bmp("16bit_1555_v3.bmp", 9, 9, 16, 56, 3, 0, m1555);
  bmp("24bit.bmp", 27, 21, 24, 40, 0, 0, none);
  bmp("24bit_top_down.bmp", 9, 30, 24, 40, 0, 1, none);
  bmp("32bit.bmp", 14, 12, 32, 40, 0, 0, argb);
  bmp("32bit_fields.bmp", 10, 10, 32, 40, 3, 0, rgbx);
  bmp("32bit_alpha_fields.bmp", 11, 5, 32, 40, 6, 0, argb);
  bmp("32bit_10bit_v2.bmp", 6, 7, 32, 52, 3, 1, r10);
  bmp("32bit_v4_alpha.bmp", 12, 7, 32, 108, 3, 0, argb);
  bmp("32bit_v5_alpha.bmp", 7, 12, 32, 124, 3, 1, argb);
  bmp("8bit_v5.bmp", 6, 5, 8, 124, 0, 0, none);
  bmp("1x1.bmp", 1, 1, 24, 40, 0, 0, none);
}

/* ---- PNM ------------------------------------------------------------------------------------- */

static void pnm(const char* name, int kind, int w, int h, unsigned maxval, const char* comment) {
  buf b = {0};
  char header[256];
  int n = snprintf(header, sizeof header, "P%d\n%s%d %d\n%u\n", kind, comment, w, h, maxval);
  put(&b, header, (size_t)n);
  int channels = kind == 5 ? 1 : 3;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < channels; c++) {
        unsigned v = sample(x, y, c, w, h, maxval);
        if (maxval > 255) put16be(&b, v);
        else put8(&b, v);
      }
  save("pnm", name, &b);
  free(b.p);
}

static void pnm_seeds(void) {
  pnm("grey.pgm", 5, 28, 28, 255, "");
  pnm("grey_comment.pgm", 5, 17, 9, 200, "# a comment\n");
  pnm("grey16.pgm", 5, 13, 11, 1000, "");
  pnm("grey_maxval1.pgm", 5, 8, 8, 1, "#\n# two\n");
  pnm("rgb.ppm", 6, 21, 19, 255, "");
  pnm("rgb16.ppm", 6, 9, 7, 65535, "# sixteen bits\n");
  pnm("1x1.ppm", 6, 1, 1, 255, "");
}

int main(int argc, char** argv) {
  CHECK(argc == 2, "usage: %s DIR", argv[0]);
  out_dir = argv[1];
  mkdir(out_dir, 0755);
  png_seeds();
  jpeg_seeds();
  bmp_seeds();
  pnm_seeds();
  printf("%u seeds in %s\n", seeds, out_dir);
  return 0;
}
