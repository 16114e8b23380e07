/* ttp_fuzz_corpus DIR: writes the seed corpus of the fuzz targets, made here rather than
   committed: DIR/png, DIR/jpeg, DIR/bmp and DIR/pnm, small files that reach the corners of each
   decoder; DIR/idx, DIR/file_list, DIR/model and DIR/args for ttapipe's own readers (their
   first byte the target's selector, below); DIR/tar, tar archives of those PNG files (plain,
   gzip'd, truncated; directories, links, hidden and non-image members, a pax long name);
   DIR/policy, TTA policy files; DIR/plan_cache, plan cache files.
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
#include "pipeline/plan_cache.h"

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

/* ---- ttapipe's own readers: no option bytes; the first byte is the target's selector ---- */

/* Writes the selector byte and b as DIR/target/name; empties b. */
static void save_raw(const char* target, const char* name, uint8_t selector, const void* p,
                     size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", out_dir, target);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%s/%s", out_dir, target, name);
  buf b = {0};
  put8(&b, selector);
  put(&b, p, n);
  test_write_file(path, b.p, b.n);
  free(b.p);
  seeds++;
}

/* b as a gzip stream. */
static buf gzipped(const buf* b) {
  buf out = {0};
  z_stream z = {0};
  CHECK(deflateInit2(&z, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
  uint8_t chunk[4096];
  z.next_in = b->p, z.avail_in = (uInt)b->n;
  int r;
  do {
    z.next_out = chunk, z.avail_out = sizeof chunk;
    r = deflate(&z, Z_FINISH);
    put(&out, chunk, sizeof chunk - z.avail_out);
  } while (r == Z_OK);
  CHECK(r == Z_STREAM_END, "deflate: %d", r);
  deflateEnd(&z);
  return out;
}

/* ---- tar (fuzz_tar) ---------------------------------------------------------------------------- *
   Archives assembled here from POSIX's ustar header (the reader under test is libarchive's). */

/* One member: a 512-byte ustar header (type '0' file, '5' directory, '2' symbolic link, 'x' a
   pax extended header), then the data padded to 512 bytes. */
static void tar_member(buf* b, const char* name, char type, const void* data, size_t n) {
  uint8_t h[512] = {0};
  snprintf((char*)h, 100, "%s", name);
  snprintf((char*)h + 100, 8, "%07o", 0644);
  snprintf((char*)h + 108, 8, "%07o", 1000);
  snprintf((char*)h + 116, 8, "%07o", 1000);
  snprintf((char*)h + 124, 12, "%011zo", n);
  snprintf((char*)h + 136, 12, "%011o", 1700000000u);
  h[156] = (uint8_t)type;
  if (type == '2') snprintf((char*)h + 157, 100, "%s", "target.png");
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  snprintf((char*)h + 148, 8, "%06o", sum);
  put(b, h, 512);
  put(b, data, n);
  static const uint8_t zeros[512];
  if (n % 512) put(b, zeros, 512 - n % 512);
}

static void tar_end(buf* b) {
  static const uint8_t zeros[1024];
  put(b, zeros, sizeof zeros);
}

/* A file the png seeds wrote, whole (its 4 option bytes after the image are ignored). */
static buf read_seed(const char* format, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s/%s", out_dir, format, name);
  buf b = {0};
  FILE* f = fopen(path, "rb");
  CHECK(f, "%s: cannot open", path);
  uint8_t chunk[4096];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) put(&b, chunk, got);
  fclose(f);
  return b;
}

static void tar_seeds(void) {
  buf grey = read_seed("png", "c0_8bit.png"), rgb = read_seed("png", "c2_8bit.png"), t = {0};
  tar_member(&t, "./", '5', NULL, 0);
  tar_member(&t, "./000001.png", '0', grey.p, grey.n);
  tar_member(&t, "./000001.cls", '0', "7\n", 2);
  tar_member(&t, "dir/000002.png", '0', rgb.p, rgb.n);
  tar_member(&t, "._000002.png", '0', grey.p, 40); /* hidden: skipped */
  tar_member(&t, "link.png", '2', NULL, 0);
  tar_member(&t, "inner.tar", '0', grey.p, 100); /* an archive in the archive: not opened */
  tar_member(&t, "bad.png", '0', grey.p, grey.n / 2);
  static const char pax[] = "51 path=a/very/long/name/through/pax/headers/3.png\n";
  tar_member(&t, "PaxHeader", 'x', pax, sizeof pax - 1);
  tar_member(&t, "short.png", '0', rgb.p, rgb.n);
  tar_end(&t);
  save_raw("tar", "members.tar", 0, t.p, t.n);
  save_raw("tar", "members_block.tar", 4, t.p, t.n);
  buf z = gzipped(&t);
  save_raw("tar", "members.tar.gz", 0, z.p, z.n);
  save_raw("tar", "truncated.tar", 4, t.p, t.n - 1500);
  save_raw("tar", "truncated.tar.gz", 0, z.p, z.n / 2);
  free(z.p);
  t.n = 0;
  tar_end(&t);
  save_raw("tar", "empty.tar", 0, t.p, t.n);
  free(t.p), free(grey.p), free(rgb.p);
}

/* IDX: selector bit 0 images (3 dimensions) or labels (1), bit 1 the small limit. */
static void idx_seeds(void) {
  static const uint32_t shapes[][4] = {{1, 7, 0, 0}, {3, 3, 4, 5}, {3, 2, 28, 28}, {1, 1, 0, 0}};
  static const uint8_t selectors[] = {0, 1, 3, 2};
  for (int k = 0; k < 4; k++) {
    buf b = {0};
    const uint32_t* d = shapes[k];
    put8(&b, 0), put8(&b, 0), put8(&b, 8), put8(&b, (uint8_t)d[0]);
    size_t total = 1;
    for (uint32_t i = 1; i <= d[0]; i++) put32be(&b, d[i]), total *= d[i];
    for (size_t i = 0; i < total; i++) put8(&b, (uint8_t)(i * 29 % 256));
    char name[64];
    snprintf(name, sizeof name, "shape%d.idx", k);
    save_raw("idx", name, selectors[k], b.p, b.n);
    buf z = gzipped(&b);
    snprintf(name, sizeof name, "shape%d.idx.gz", k);
    save_raw("idx", name, selectors[k], z.p, z.n);
    if (k == 1) { /* cut short, and with a byte too many */
      save_raw("idx", "truncated.idx", 1, b.p, b.n - 3);
      put8(&b, 7);
      save_raw("idx", "extra_byte.idx", 1, b.p, b.n);
    }
    free(b.p), free(z.p);
  }
}

static void file_list_seeds(void) {
  static const char lines[] = "a.png\nsub/b.jpg\r\n\n  spaced name.bmp\nlast-without-newline.pnm";
  save_raw("file_list", "lines.txt", 0, lines, sizeof lines - 1);
  static const char nuls[] = "a.png\0sub/b.jpg\0\0with\nnewline.png\0";
  save_raw("file_list", "nul.txt", 1, nuls, sizeof nuls - 1);
  save_raw("file_list", "nul_read_as_lines.txt", 0, nuls, sizeof nuls - 1);
  save_raw("file_list", "empty.txt", 0, "", 0);
}

/* TTA policies (fuzz_policy: no selector byte, the input is the file). */
static void policy_seeds(void) {
  static const char* const policies[][2] = {
      {"full.policy", "# tuned\ncopies = 7\nkeep_original = no\nshift = 3\ncontrast = 0.5, 1.5\n"
                      "brightness = -0.25, 0.125\nnoise = 0.0625\nnoise_kind = gaussian\n"
                      "clamp = no\nseed = 18446744073709551615\nmerge = gmean\n"},
      {"some.policy", "copies = 3   # three\r\n\r\n\tmerge=vote\r\n"},
      {"bad.policy", "copies = 65\ncontrast = 2, 1\nwobble = 1\n"},
  };
  char path[4096];
  snprintf(path, sizeof path, "%s/policy", out_dir);
  mkdir(path, 0755);
  for (size_t k = 0; k < sizeof policies / sizeof policies[0]; k++) {
    snprintf(path, sizeof path, "%s/policy/%s", out_dir, policies[k][0]);
    test_write_file(path, policies[k][1], strlen(policies[k][1]));
    seeds++;
  }
}

/* Plan cache files (fuzz_plan_cache: the input is the file, read for "fuzz GPU"): three
   entries, none, another identity's, one cut short. */
static void plan_cache_seeds(void) {
  char path[4096], note[256];
  snprintf(path, sizeof path, "%s/plan_cache", out_dir);
  mkdir(path, 0755);
  plan_entry e[3] = {{{0, 1, 1024, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0}, 1, 1, 0.142f},
                     {{1, 2, 5120, 32, 16, 16, 64, 1, 1, 2, 2, 0, 0, 1, 1, 1, 1}, 0, 2, -1.0f},
                     {{0, 0, 1, 1, 28, 28, 20, 5, 5, 1, 1, 0, 0, 1, 1, 1, 0}, 1, 0, 0.0125f}};
  const char* names[] = {"three", "none", "foreign"};
  for (int k = 0; k < 3; k++) {
    snprintf(path, sizeof path, "%s/plan_cache/%s", out_dir, names[k]);
    CHECK(plan_cache_write(path, k == 2 ? "another GPU" : "fuzz GPU", e, k == 1 ? 0 : 3, note,
                           sizeof note) == 0, "%s", note);
    seeds++;
  }
  snprintf(path, sizeof path, "%s/plan_cache/three", out_dir);
  FILE* f = fopen(path, "rb");
  CHECK(f, "%s", path);
  char text[2048];
  const size_t n = fread(text, 1, sizeof text, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/plan_cache/cut", out_dir);
  test_write_file(path, text, n / 2);
  seeds++;
}

/* The model directory: selector 0..7 a weight file (conv1, conv1.bias, conv2, conv2.bias, ip1,
   ip1.bias, ip2, ip2.bias), 8 labels.txt, 9 labels.txt absent; the small files at their size. */
static void model_seeds(void) {
  static const char labels[] = "zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n";
  save_raw("model", "labels.txt", 8, labels, sizeof labels - 1);
  static const char crlf[] = "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh\r\ni\r\nj";
  save_raw("model", "labels_crlf.txt", 8, crlf, sizeof crlf - 1);
  save_raw("model", "no_labels", 9, "", 0);
  static const struct {
    uint8_t selector;
    int floats;
    const char* name;
  } small[] = {{1, 20, "conv1.bias.bin"}, {3, 50, "conv2.bias.bin"}, {7, 10, "ip2.bias.bin"},
               {0, 500, "conv1.bin"}};
  for (int k = 0; k < 4; k++) {
    buf b = {0};
    for (int i = 0; i < small[k].floats; i++) {
      float v = (float)(i % 13) / 50.0f - 0.1f;
      uint32_t bits;
      memcpy(&bits, &v, 4);
      put8(&b, bits & 255), put8(&b, bits >> 8 & 255), put8(&b, bits >> 16 & 255),
          put8(&b, bits >> 24);
    }
    save_raw("model", small[k].name, small[k].selector, b.p, b.n);
    if (k == 0) { /* a NaN in the middle */
      b.p[40] = 0x00, b.p[41] = 0x00, b.p[42] = 0xc0, b.p[43] = 0x7f;
      save_raw("model", "conv1.bias_nan.bin", 1, b.p, b.n);
    }
    free(b.p);
  }
}

/* The command's arguments: selector 0 classify, 1 eval, 2 info, 3 bench; NUL between them. */
static void args_seeds(void) {
  static const struct {
    uint8_t selector;
    const char* name;
    const char args[200];
    size_t n;
  } seeds_[] = {
#define ARGS(s, name, text) {s, name, text, sizeof text - 1}
      ARGS(0, "classify", "--model\0m\0-o\0out.csv\0--tta\0005\0--tta-contrast\0000.9,1.1\0dir"),
      ARGS(0, "classify_files_from", "--model=m\0--files-from\0-\0--null\0--\0-x.png"),
      ARGS(0, "classify_csv_formulas", "--model\0m\0--csv-formulas\0--resume\0-o\0o.csv\0"
                                       "=cmd|calc.png\0\x1b[2J.png"),
      ARGS(1, "eval", "--model\0m\0--images\0x\0--labels\0y\0--batch\00064\0--seed\0"
                      "18446744073709551615"),
      ARGS(2, "info", "--model\0m"),
      ARGS(3, "bench", "--model\0m\0--batch\0001,64\0--precision\0fp32,fp16\0--seconds\0000.5"),
      ARGS(3, "help", "--help"),
#undef ARGS
  };
  for (size_t k = 0; k < sizeof seeds_ / sizeof seeds_[0]; k++)
    save_raw("args", seeds_[k].name, seeds_[k].selector, seeds_[k].args, seeds_[k].n);
}

/* ONNX files (no selector byte: the input is the file): a small chain (conv 3x1x5x5 stride 2
   pad 1, max-pool, ReLU, fc 10, LRN, softmax) in the writer's variants and breakages. */
static void onnx_seeds(void) {
  ttp_err e = {0};
  model* m = model_new((model_shape){1, 28, 28}, &e);
  CHECK(m, "%s", e.message);
  model_layer* l = model_add(m, MODEL_CONV, "conv", &e);
  CHECK(l, "%s", e.message);
  l->p.conv.k = 3, l->p.conv.w = model_window_of(5, 5, 2, 1);
  CHECK((l = model_add(m, MODEL_MAXPOOL, "pool", &e)), "%s", e.message);
  l->p.pool.w = model_window_of(2, 2, 2, 0);
  CHECK(model_add(m, MODEL_RELU, "relu", &e), "%s", e.message);
  CHECK((l = model_add(m, MODEL_FC, "fc", &e)), "%s", e.message);
  l->p.fc.out = 10;
  CHECK((l = model_add(m, MODEL_LRN, "lrn", &e)), "%s", e.message);
  l->p.lrn.n = 3, l->p.lrn.alpha = 1e-4, l->p.lrn.beta = 0.75, l->p.lrn.k = 1;
  CHECK(model_add(m, MODEL_SOFTMAX, "softmax", &e), "%s", e.message);
  CHECK(model_infer_shapes(m, &e) == TTP_OK, "%s", e.message);
  for (int i = 0; i < m->layer_count; i++) {
    model_layer* y = &m->layers[i];
    if (!y->weight_count) continue;
    y->weights = malloc(y->weight_count * sizeof *y->weights);
    y->bias = malloc(y->bias_count * sizeof *y->bias);
    CHECK(y->weights && y->bias, "out of memory");
    for (size_t k = 0; k < y->weight_count; k++) y->weights[k] = (float)((k * 37 + 11) % 97) / 970.0f - 0.05f;
    for (size_t k = 0; k < y->bias_count; k++) y->bias[k] = 0.01f * (float)k;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/onnx", out_dir);
  mkdir(path, 0755);
  static const unsigned variants[] = {0, FIXTURE_ONNX_TYPED, FIXTURE_ONNX_TRANSB0 | FIXTURE_ONNX_EXTRAS,
                                      FIXTURE_ONNX_NO_SOFTMAX, FIXTURE_ONNX_MISSING,
                                      FIXTURE_ONNX_BAD_OP, FIXTURE_ONNX_NOT_CHAIN,
                                      FIXTURE_ONNX_DYNAMIC, FIXTURE_ONNX_OPSET99,
                                      FIXTURE_ONNX_NORM, FIXTURE_ONNX_LABELS};
  for (size_t k = 0; k < sizeof variants / sizeof *variants; k++) {
    snprintf(path, sizeof path, "%s/onnx/variant%u.onnx", out_dir, variants[k]);
    fixture_onnx(m, path, variants[k]);
    seeds++;
  }
  model_free(m);
}

/* PyTorch's own exports (tests/onnx/: Pad and Constant nodes, AveragePool, BatchNormalization,
   Clip, LeakyRelu, Sigmoid, Tanh, MatMul + Add, an RGB input with its scaling metadata; the
   graph networks: residual Adds, shape arithmetic, depthwise convolutions, Concat, GELU as Erf,
   shuffles, and PyTorch 2's torch.export-based exporter's graphs). */
static void torch_seeds(const char* onnx_dir) {
  static const char* const names[] = {
      "lenet-bn-avg.onnx", "rgb-stride.onnx", "mlp-sigmoid.onnx", "resnet20.onnx",
      "resnet-option-a.onnx", "mobilenetv2.onnx", "densenet.onnx", "zoo.onnx",
      "torch2-dynamo/densenet.onnx", "torch2-dynamo/mobilenetv2.onnx"};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%s/%s", onnx_dir, names[k]);
    snprintf(to, sizeof to, "%s/onnx/torch-%s", out_dir, names[k]);
    for (char* c = to + strlen(out_dir) + 6; *c; c++) /* torch2-dynamo/x: one file name */
      if (*c == '/') *c = '-';
    static uint8_t bytes[2 << 20];
    FILE* f = fopen(from, "rb");
    CHECK(f, "cannot open %s", from);
    const size_t size = fread(bytes, 1, sizeof bytes, f);
    CHECK(size > 0 && size < sizeof bytes && !ferror(f), "%s: %zu bytes", from, size);
    fclose(f);
    test_write_file(to, bytes, size);
    seeds++;
  }
}

int main(int argc, char** argv) {
  CHECK(argc == 3, "usage: %s DIR ONNX_DIR", argv[0]);
  out_dir = argv[1];
  mkdir(out_dir, 0755);
  png_seeds();
  jpeg_seeds();
  bmp_seeds();
  pnm_seeds();
  idx_seeds();
  file_list_seeds();
  model_seeds();
  onnx_seeds();
  torch_seeds(argv[2]);
  args_seeds();
  tar_seeds();
  policy_seeds();
  plan_cache_seeds();
  printf("%u seeds in %s\n", seeds, out_dir);
  return 0;
}
