/* The image decoders one by one, beyond what test_images checks through ttp_load_image:
   - BMP (io/bmp.c): every header, bit depth and compression gives back the pixels written, bit
     masks widened as stb_image widened them (a 5-bit channel repeats its top bits), alpha
     where a mask says so (32-bit BI_RGB: blue, green, red, the fourth byte unused unless a V4
     or V5 header gives an alpha mask), an alpha channel of zeros taken as opaque; and broken
     files refused with their reason: an index beyond the palette, cut pixel data, an offset
     inside the headers, masks that are not one run of bits, RLE stored top-down or past the
     image (pixels, ends of line after the last row's, moves), where an end of line after the
     last row and a move inside the image are read;
   - JPEG (io/jpeg.c, libjpeg-turbo): CMYK to RGB, progressive and arithmetic files near their
     source, bytes after the end ignored, a cut file refused, a file of 100 scans read and one
     of 101 refused from its markers, before any scan is decoded;
   - PNG (io/png.c): image data shorter than its header, a chunk longer than the file, an IHDR
     of a colour type and bit depth that do not go together, and a wrong CRC on any chunk the
     reader reads refused (an ancillary chunk's is not read); image data longer than its header,
     and bytes after IEND, ignored; a chunk type's unprintable bytes written as \xHH;
   - PNM (io/pnm.c): a header number written with a sign refused as such;
   - preprocessing's shortcut for a grey image already of the model's size gives the bytes of
     the general path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <zlib.h>

#include "io/image.h"
#include "io/preprocess.h"
#include "tests/common/check.h"
#include "tests/common/fixtures.h"

static const io_limits full = {8192, 8192, (uint64_t)8192 * 8192, 0, 0, NULL};

static io_raster decode(const uint8_t* bytes, size_t size, const char* what) {
  io_raster r;
  ttp_err e = {0};
  CHECK(io_decode(bytes, size, what, &full, &r, &e) == TTP_OK, "%s: %s", what, e.message);
  return r;
}

static void expect_refused(const uint8_t* bytes, size_t size, const char* what,
                           const char* fragment) {
  io_raster r;
  ttp_err e = {0};
  CHECK(io_decode(bytes, size, what, &full, &r, &e) == TTP_ERR_FORMAT, "%s: accepted", what);
  EXPECT_MESSAGE(e.message, what, fragment);
  CHECK(!r.data, "%s: pixels left behind", what);
}

/* ---- BMP ------------------------------------------------------------------------------------- */

/* An n-bit value widened to 8 bits as stb_image did: multiplied by a pattern of repeated ones,
   then shifted (0b00100001 >> 2 for 5 bits: abcde -> abcdeabc). */
static uint8_t widen(uint32_t v, int n) {
  static const unsigned mul[9] = {0, 0xff, 0x55, 0x49, 0x11, 0x21, 0x41, 0x81, 0x01};
  static const unsigned shift[9] = {0, 0, 0, 1, 0, 2, 4, 6, 0};
  return (uint8_t)(v * mul[n] >> shift[n]);
}

static int mask_bits(uint32_t m, int* low) {
  int n = 0;
  *low = 0;
  if (!m) return 0;
  while (!(m >> *low & 1)) ++*low;
  while (*low + n < 32 && (m >> (*low + n) & 1)) n++;
  return n;
}

static void check_bmp(const char* what, fixture_bmp_spec s, test_rng* rng, int zero_alpha) {
  int palette = s.bits <= 8 ? (s.colours ? s.colours : 1 << s.bits) : 0;
  size_t n = (size_t)s.w * s.h;
  uint8_t* pixels = malloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    if (palette) {
      /* runs of equal indices now and then, for RLE */
      pixels[i] = (uint8_t)(i % 5 < 2 && i ? pixels[i - 1] : test_int(rng, 0, palette - 1));
    } else {
      for (int c = 0; c < 4; c++) pixels[4 * i + c] = (uint8_t)test_int(rng, 0, 255);
      if (zero_alpha) pixels[4 * i + 3] = 0;
    }
  }
  uint8_t* file;
  size_t size = fixture_bmp_bytes(&s, pixels, &file);
  io_raster r = decode(file, size, what);
  /* An alpha channel only where the file carries an alpha mask: bit fields (BI_ALPHABITFIELDS,
     or a V3 header and longer), or 32-bit BI_RGB with a V4 or V5 header (its own mask field);
     BI_RGB's fourth byte is otherwise unused. */
  int carries_alpha = s.masks[3] && (s.compression == 6 || s.header >= 56);
  int rgb_alpha = s.bits == 32 && s.masks[3] && s.header >= 108;
  int alpha = s.bits == 16 || s.bits == 32 ? (s.compression == 0 ? rgb_alpha : carries_alpha) : 0;
  CHECK(r.width == s.w && r.height == s.h && r.channels == 3 + alpha, "%s: %dx%dx%d", what,
        r.width, r.height, r.channels);
  uint32_t masks[4] = {s.masks[0], s.masks[1], s.masks[2], s.masks[3]};
  if (s.compression == 0 && s.bits == 16) masks[0] = 0x7c00, masks[1] = 0x3e0, masks[2] = 0x1f;
  if (s.compression == 0 && s.bits == 32)
    masks[0] = 0xff0000, masks[1] = 0xff00, masks[2] = 0xff, masks[3] = rgb_alpha ? s.masks[3] : 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t want[4];
    if (palette) {
      fixture_bmp_palette(pixels[i], want);
    } else {
      for (int c = 0; c < 3 + alpha; c++) {
        int low, bits = s.bits == 24 ? 8 : mask_bits(masks[c], &low);
        uint8_t v = pixels[4 * i + c];
        want[c] = bits >= 8 ? v : widen(v >> (8 - bits), bits);
      }
      if (alpha && zero_alpha) want[3] = 255; /* an unused alpha channel: opaque */
    }
    for (int c = 0; c < r.channels; c++)
      CHECK(r.data[i * r.channels + c] == want[c], "%s: pixel %zu channel %d is %d, want %d",
            what, i, c, r.data[i * r.channels + c], want[c]);
  }
  io_raster_free(&r);
  free(file), free(pixels);
}

static void test_bmp(test_rng* rng) {
  static const struct {
    const char* what;
    fixture_bmp_spec s;
    int zero_alpha;
  } cases[] = {
      {"1-bit", {29, 13, 1, 40, 0, 0, 0, {0}}, 0},
      {"4-bit, top-down, 11 colours", {21, 17, 4, 40, 0, 1, 11, {0}}, 0},
      {"8-bit, 200 colours", {37, 9, 8, 40, 0, 0, 200, {0}}, 0},
      {"8-bit, core header", {15, 9, 8, 12, 0, 0, 0, {0}}, 0},
      {"8-bit, V5 header", {6, 5, 8, 124, 0, 0, 0, {0}}, 0},
      {"RLE8", {23, 11, 8, 40, 1, 0, 0, {0}}, 0},
      {"RLE4, 9 colours", {19, 10, 4, 40, 2, 0, 9, {0}}, 0},
      {"16-bit 5-5-5", {13, 9, 16, 40, 0, 0, 0, {0x7c00, 0x03e0, 0x001f, 0}}, 0},
      {"16-bit 5-6-5, top-down", {17, 8, 16, 40, 3, 1, 0, {0xf800, 0x07e0, 0x001f, 0}}, 0},
      {"16-bit 1-5-5-5, V3 header", {9, 9, 16, 56, 3, 0, 0, {0x7c00, 0x03e0, 0x001f, 0x8000}}, 0},
      {"16-bit 4-4-4-4, alpha bit fields", {7, 11, 16, 40, 6, 0, 0, {0x0f00, 0x00f0, 0x000f, 0xf000}}, 0},
      {"16-bit 3-3-2 in the low byte", {5, 3, 16, 40, 3, 0, 0, {0xe0, 0x1c, 0x03, 0}}, 0},
      {"24-bit", {27, 21, 24, 40, 0, 0, 0, {0}}, 0},
      {"24-bit, core header", {11, 6, 24, 12, 0, 0, 0, {0}}, 0},
      {"24-bit, top-down", {9, 30, 24, 40, 0, 1, 0, {0}}, 0},
      {"32-bit, fourth byte unused", {14, 12, 32, 40, 0, 0, 0, {0xff0000, 0xff00, 0xff, 0xff000000}}, 0},
      {"32-bit, V5 header, alpha", {11, 6, 32, 124, 0, 0, 0, {0xff0000, 0xff00, 0xff, 0xff000000}}, 0},
      {"32-bit, alpha bit fields", {13, 7, 32, 40, 6, 0, 0, {0xff0000, 0xff00, 0xff, 0xff000000}}, 0},
      {"32-bit, alpha bit fields all 0", {14, 12, 32, 40, 6, 0, 0, {0xff0000, 0xff00, 0xff, 0xff000000}}, 1},
      {"32-bit bit fields, blue high", {10, 10, 32, 40, 3, 0, 0, {0xff, 0xff00, 0xff0000, 0}}, 0},
      {"32-bit 10-10-10-2, V2 header",
       {6, 7, 32, 52, 3, 1, 0, {0x3ff00000, 0x000ffc00, 0x000003ff, 0xc0000000}}, 0},
      {"32-bit, V4 header, alpha", {12, 7, 32, 108, 3, 0, 0, {0xff0000, 0xff00, 0xff, 0xff000000}}, 0},
      {"32-bit, V5 header, alpha all 0",
       {7, 12, 32, 124, 3, 1, 0, {0xff0000, 0xff00, 0xff, 0xff000000}}, 1},
      {"1x1", {1, 1, 24, 40, 0, 0, 0, {0}}, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_bmp(cases[i].what, cases[i].s, rng, cases[i].zero_alpha);

  /* Broken files: a good 8-bit one, spoiled one way at a time. */
  fixture_bmp_spec s = {13, 7, 8, 40, 0, 0, 4, {0}};
  uint8_t idx[13 * 7];
  for (int i = 0; i < 13 * 7; i++) idx[i] = (uint8_t)(i % 4);
  uint8_t* good;
  size_t size = fixture_bmp_bytes(&s, idx, &good);
  uint8_t* bad = malloc(size);
  io_raster r = decode(good, size, "good.bmp");
  io_raster_free(&r);
  idx[40] = 4; /* one index past the 4 colours */
  uint8_t* past;
  size_t past_size = fixture_bmp_bytes(&s, idx, &past);
  expect_refused(past, past_size, "past.bmp", "corrupt image (BMP pixel index 4 beyond the 4-colour palette)");
  free(past);
  expect_refused(good, size - 1, "cut.bmp", "corrupt image (truncated BMP");
  memcpy(bad, good, size);
  bad[10] = 30; /* pixel offset inside the headers */
  expect_refused(bad, size, "offset.bmp", "unreadable image header (BMP without a palette");
  memcpy(bad, good, size);
  bad[28] = 2; /* 2 bits per pixel: no such BMP */
  expect_refused(bad, size, "2bit.bmp", "unreadable image header (BMP of 2 bits per pixel");
  memcpy(bad, good, size);
  bad[14] = 64; /* OS/2 2.x header */
  expect_refused(bad, size, "os2.bmp", "unreadable image header (BMP header of 64 bytes)");
  memcpy(bad, good, size);
  memcpy(bad + 18, "\x00\x00\x01\x00", 4); /* 65536 wide */
  expect_refused(bad, size, "wide.bmp", "image is 65536x7, larger than the 8192x8192 allowed");
  expect_refused(good, 20, "header.bmp", "unreadable image header (truncated BMP)");
  free(good), free(bad);

  fixture_bmp_spec holes = {6, 4, 16, 40, 3, 0, 0, {0xf00f, 0x00f0, 0x0f00, 0}};
  uint8_t rgba[6 * 4 * 4] = {0};
  size = fixture_bmp_bytes(&holes, rgba, &good);
  expect_refused(good, size, "holes.bmp", "bit mask 0x0000f00f is not one run of bits");
  free(good);

  fixture_bmp_spec rle = {8, 3, 8, 40, 1, 0, 0, {0}};
  uint8_t runs[8 * 3] = {0};
  size = fixture_bmp_bytes(&rle, runs, &good);
  memcpy((bad = malloc(size)), good, size);
  memcpy(bad + 22, "\xfd\xff\xff\xff", 4); /* a height of -3: top-down RLE */
  expect_refused(bad, size, "rle_top_down.bmp", "RLE rows stored top-down");
  size_t at = 14 + 40 + 256 * 4;
  memcpy(bad, good, size);
  bad[at] = 12; /* a first run of 12 pixels in rows of 8 */
  expect_refused(bad, size, "rle_long.bmp", "RLE pixels beyond the image");
  expect_refused(good, size - 2, "rle_cut.bmp", "RLE data ends before its end marker");
  free(good), free(bad);
}

/* 32-bit BI_RGB: blue, green, red and a fourth byte that is unused (here random and never 0),
   unless a V4 or V5 header's alpha mask field says it is alpha; the mask field of a V3 header
   is not read with BI_RGB, nor a V5 one that is 0. */
static void test_bmp_32bit_rgb(test_rng* rng) {
  enum { W = 13, H = 7 };
  uint8_t rgba[W * H * 4];
  for (int i = 0; i < W * H * 4; i++) rgba[i] = (uint8_t)test_int(rng, i % 4 == 3 ? 1 : 0, 255);
  static const struct {
    int header, zero_mask_field, alpha;
  } cases[] = {{40, 0, 0}, {56, 0, 0}, {108, 0, 1}, {124, 0, 1}, {124, 1, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    fixture_bmp_spec s = {W, H, 32, cases[k].header, 0, 0, 0, {0xff0000, 0xff00, 0xff, 0xff000000}};
    uint8_t* file;
    size_t size = fixture_bmp_bytes(&s, rgba, &file);
    if (cases[k].zero_mask_field) memset(file + 14 + 52, 0, 4); /* the header's alpha mask */
    char what[64];
    snprintf(what, sizeof what, "32-bit BI_RGB, %d-byte header%s", cases[k].header,
             cases[k].zero_mask_field ? ", alpha mask 0" : "");
    io_raster r = decode(file, size, what);
    CHECK(r.width == W && r.height == H && r.channels == 3 + cases[k].alpha, "%s: %dx%dx%d", what,
          r.width, r.height, r.channels);
    for (int i = 0; i < W * H; i++)
      for (int c = 0; c < r.channels; c++)
        CHECK(r.data[i * r.channels + c] == rgba[4 * i + c], "%s: pixel %d channel %d is %d, want %d",
              what, i, c, r.data[i * r.channels + c], rgba[4 * i + c]);
    io_raster_free(&r);
    free(file);
  }
}

/* A copy of file's first keep bytes followed by stream (n bytes); *out is malloc'd. */
static size_t bmp_with_stream(const uint8_t* file, size_t keep, const void* stream, size_t n,
                              uint8_t** out) {
  *out = malloc(keep + n);
  memcpy(*out, file, keep);
  memcpy(*out + keep, stream, n);
  return keep + n;
}

/* RLE8 streams against the image's bounds: an end of line after the last row, then the end of
   the bitmap, is what common writers do and is read; a move inside the image is read; 100,000
   ends of line past the image, or a move past its width or its rows, are refused. */
static void test_bmp_rle_bounds(test_rng* rng) {
  enum { W = 13, H = 7, COLOURS = 9 };
  uint8_t idx[W * H];
  for (int i = 0; i < W * H; i++) idx[i] = (uint8_t)(i % 4 == 1 ? idx[i - 1] : test_int(rng, 1, COLOURS - 1));
  fixture_bmp_spec s = {W, H, 8, 40, 1, 0, COLOURS, {0}};
  uint8_t* good;
  size_t size = fixture_bmp_bytes(&s, idx, &good);
  CHECK(good[size - 2] == 0 && good[size - 1] == 1, "the RLE8 writer no longer ends with end of bitmap");
  size_t last = size - 2;                            /* the stream up to its end of bitmap */
  size_t offset = good[10] | (size_t)good[11] << 8; /* the pixels' offset (under 64 KiB here) */

  uint8_t* file;
  size_t n = bmp_with_stream(good, last, "\0\0\0\1", 4, &file);
  io_raster r = decode(file, n, "rle_eol_eob.bmp");
  CHECK(r.width == W && r.height == H && r.channels == 3, "EOL, EOB: %dx%dx%d", r.width, r.height,
        r.channels);
  for (int i = 0; i < W * H; i++) {
    uint8_t want[3];
    fixture_bmp_palette(idx[i], want);
    CHECK(memcmp(r.data + 3 * i, want, 3) == 0, "EOL, EOB: pixel %d differs", i);
  }
  io_raster_free(&r);
  free(file);

  /* From the bottom row up: move 5 right and 3 up, 3 pixels of colour 2, end of bitmap. */
  n = bmp_with_stream(good, offset, "\0\2\5\3\3\2\0\1", 8, &file);
  r = decode(file, n, "rle_move.bmp");
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      uint8_t want[3];
      fixture_bmp_palette(y == H - 1 - 3 && x >= 5 && x < 8 ? 2 : 0, want);
      CHECK(memcmp(r.data + 3 * (y * W + x), want, 3) == 0, "RLE move: pixel (%d, %d) differs", x, y);
    }
  io_raster_free(&r);
  free(file);

  enum { EOLS = 100000 };
  uint8_t* eols = calloc(2 * EOLS + 2, 1);
  eols[2 * EOLS + 1] = 1;
  n = bmp_with_stream(good, last, eols, 2 * EOLS + 2, &file);
  expect_refused(file, n, "rle_eols.bmp", "corrupt image (BMP RLE end of line beyond the image's 7 rows)");
  free(file), free(eols);
  /* After the last row: 5 rows up, or 255 columns right. */
  n = bmp_with_stream(good, last, "\0\2\0\5\0\1", 6, &file);
  expect_refused(file, n, "rle_up.bmp", "corrupt image (BMP RLE move to column 13, row 11, beyond the 13 x 7 image)");
  free(file);
  n = bmp_with_stream(good, last, "\0\2\377\0\0\1", 6, &file);
  expect_refused(file, n, "rle_right.bmp", "corrupt image (BMP RLE move to column 268, row 6, beyond");
  free(file), free(good);
}

/* ---- JPEG ------------------------------------------------------------------------------------ */

/* A JPEG of pixels, w x h x components (1 grey, 3 RGB, 4 CMYK). */
static size_t jpeg_file(int w, int h, int components, const uint8_t* pixels, int quality,
                        int progressive, int arithmetic, const jpeg_scan_info* scans, int nscans,
                        uint8_t** out) {
  fixture_jpeg_spec s = {w, h, components, 0, 0, 0, progressive, 0, 0, arithmetic, quality,
                         scans, nscans};
  return fixture_jpeg_bytes(&s, pixels, out);
}

static void test_jpeg(test_rng* rng) {
  enum { W = 29, H = 23 };
  uint8_t drawing[W * H], cmyk[W * H * 4];
  fixture_drawing(drawing, W, H, 1, 0, 3);
  /* A flat CMYK colour: Adobe's files store ink inverted; RGB = C K / 255 and so on. */
  static const uint8_t ink[4] = {200, 120, 40, 180};
  for (int i = 0; i < W * H; i++) memcpy(cmyk + 4 * i, ink, 4);
  uint8_t* file;
  size_t size = jpeg_file(W, H, 4, cmyk, 100, 0, 0, NULL, 0, &file);
  io_raster r = decode(file, size, "cmyk.jpg");
  CHECK(r.channels == 3 && r.width == W && r.height == H, "CMYK: %d channels", r.channels);
  for (int i = 0; i < W * H; i++)
    for (int c = 0; c < 3; c++) {
      double want = ink[c] * ink[3] / 255.0;
      CHECK(fabs(r.data[3 * i + c] - want) <= 3, "CMYK pixel %d channel %d: %d, want %.1f", i, c,
            r.data[3 * i + c], want);
    }
  io_raster_free(&r);
  free(file);

  /* Progressive and arithmetic-coded: close to the drawing; bytes after the end ignored. */
  for (int kind = 0; kind < 3; kind++) {
    size = jpeg_file(W, H, 1, drawing, 95, kind != 1, kind != 0, NULL, 0, &file);
    io_raster a = decode(file, size, "drawing.jpg");
    CHECK(a.channels == 1 && a.width == W && a.height == H, "grey JPEG: %d channels", a.channels);
    double diff = 0;
    for (int i = 0; i < W * H; i++) diff += fabs((double)a.data[i] - drawing[i]);
    CHECK(diff / (W * H) < 4, "JPEG kind %d differs by %.2f levels on average", kind, diff / (W * H));
    uint8_t* longer = malloc(size + 7);
    memcpy(longer, file, size);
    memcpy(longer + size, "trailer", 7);
    io_raster b = decode(longer, size + 7, "trailer.jpg");
    CHECK(memcmp(a.data, b.data, (size_t)W * H) == 0, "bytes after the end changed the pixels");
    io_raster_free(&a), io_raster_free(&b);
    free(longer);
    if (kind < 2) expect_refused(file, size * 2 / 3, "cut.jpg", "corrupt image (JPEG: ");
    free(file);
  }

  /* Scans counted before anything is decoded: a file of 100 scans is read (the DC, each AC
     coefficient's first bit alone, then the last bit of the first 36), the same with one more
     refused for its count; and with the fifth scan's header broken (an empty band, Ss > Se:
     what libjpeg refuses once it reaches that scan), still refused for its count. */
  static jpeg_scan_info scans[1 + 63 + 37];
  int n = 0;
  scans[n++] = (jpeg_scan_info){1, {0}, 0, 0, 0, 0};
  for (int k = 1; k <= 63; k++) scans[n++] = (jpeg_scan_info){1, {0}, k, k, 0, 1};
  for (int k = 1; k <= 37; k++) scans[n++] = (jpeg_scan_info){1, {0}, k, k, 1, 0};
  size = jpeg_file(W, H, 1, drawing, 90, 0, 0, scans, n - 1, &file);
  io_raster hundred = decode(file, size, "100scans.jpg");
  double diff = 0;
  for (int i = 0; i < W * H; i++) diff += fabs((double)hundred.data[i] - drawing[i]);
  CHECK(diff / (W * H) < 8, "100 scans: %.2f levels from the drawing on average", diff / (W * H));
  io_raster_free(&hundred);
  free(file);
  size = jpeg_file(W, H, 1, drawing, 90, 0, 0, scans, n, &file);
  expect_refused(file, size, "101scans.jpg", "corrupt image (JPEG of more than 100 scans)");
  int seen = 0;
  for (size_t at = 0; at + 10 < size; at++)
    if (file[at] == 0xff && file[at + 1] == 0xda && ++seen == 5) { /* Ns 1: Cs Tda Ss Se AhAl */
      file[at + 7] = 63, file[at + 8] = 1;
      break;
    }
  CHECK(seen == 5, "the file has %d scans", seen);
  expect_refused(file, size, "101broken.jpg", "corrupt image (JPEG of more than 100 scans)");
  free(file);
  (void)rng;
}

/* ---- PNG ------------------------------------------------------------------------------------- */

typedef struct png_chunk {
  const char* type; /* 4 bytes, any */
  const uint8_t* data;
  size_t n;
} png_chunk;

/* A PNG of the signature and these chunks, each with its right CRC. Returns its size. */
static size_t png_chunks(const png_chunk* chunks, int count, uint8_t* out) {
  static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  size_t at = 0;
  memcpy(out, signature, 8), at += 8;
  for (int c = 0; c < count; c++) {
    size_t len = chunks[c].n;
    uint8_t head[8] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
    memcpy(head + 4, chunks[c].type, 4);
    memcpy(out + at, head, 8), at += 8;
    if (len) memcpy(out + at, chunks[c].data, len), at += len;
    uint32_t crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), out + at - len - 4, (uInt)(len + 4));
    uint8_t tail[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
    memcpy(out + at, tail, 4), at += 4;
  }
  return at;
}

/* IHDR's 13 bytes: w x h, bit depth, colour type, the methods 0 and no interlacing. */
static void png_ihdr(uint32_t w, uint32_t h, int depth, int colour, uint8_t ihdr[13]) {
  const uint8_t v[13] = {(uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                         (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                         (uint8_t)depth, (uint8_t)colour, 0, 0, 0};
  memcpy(ihdr, v, 13);
}

/* A PNG of an IHDR and one IDAT of data. */
static size_t png_file(uint32_t w, uint32_t h, int depth, int colour, const uint8_t* data,
                       size_t n, uint8_t* out) {
  uint8_t ihdr[13];
  png_ihdr(w, h, depth, colour, ihdr);
  const png_chunk chunks[] = {{"IHDR", ihdr, 13}, {"IDAT", data, n}, {"IEND", NULL, 0}};
  return png_chunks(chunks, 3, out);
}

static void test_png(test_rng* rng) {
  enum { W = 19, H = 11 };
  static uint8_t raw[64 << 10], packed[64 << 10], file[80 << 10];
  for (int y = 0; y < H; y++) {
    raw[y * (W + 1)] = 0; /* filter: none */
    for (int x = 0; x < W; x++) raw[y * (W + 1) + 1 + x] = (uint8_t)test_int(rng, 1, 255);
  }
  uLongf n = sizeof packed;
  CHECK(compress2(packed, &n, raw, (uLong)(H * (W + 1)), 9) == Z_OK, "zlib");
  size_t size = png_file(W, H, 8, 0, packed, n, file);
  io_raster r = decode(file, size, "good.png");
  for (int y = 0; y < H; y++)
    CHECK(memcmp(r.data + y * W, raw + y * (W + 1) + 1, W) == 0, "PNG row %d differs", y);
  memcpy(file + size, "after IEND", 10);
  io_raster after = decode(file, size + 10, "after.png");
  CHECK(memcmp(after.data, r.data, (size_t)W * H) == 0, "bytes after IEND changed the pixels");
  io_raster_free(&r), io_raster_free(&after);

  /* One row too many: what the header does not ask for is not even inflated, and the image is
     the same; one row too few: refused. */
  n = sizeof packed;
  CHECK(compress2(packed, &n, raw, (uLong)((H + 1) * (W + 1)), 9) == Z_OK, "zlib");
  size = png_file(W, H, 8, 0, packed, n, file);
  io_raster longer = decode(file, size, "longer.png");
  for (int y = 0; y < H; y++)
    CHECK(memcmp(longer.data + y * W, raw + y * (W + 1) + 1, W) == 0, "longer PNG: row %d", y);
  io_raster_free(&longer);
  n = sizeof packed;
  CHECK(compress2(packed, &n, raw, (uLong)((H - 1) * (W + 1)), 9) == Z_OK, "zlib");
  size = png_file(W, H, 8, 0, packed, n, file);
  expect_refused(file, size, "shorter.png", "PNG image data ends after 200 of 220 bytes");
  n = sizeof packed;
  CHECK(compress2(packed, &n, raw, (uLong)((H + 1) * (W + 1)), 9) == Z_OK, "zlib");
  /* A chunk longer than the file; a colour type with a bit depth it does not allow. */
  size = png_file(W, H, 8, 0, packed, n, file);
  file[8 + 25 + 3] = 0xff; /* IDAT's length, low byte */
  file[8 + 25 + 2] = 0xff;
  expect_refused(file, size, "long.png", "corrupt image (truncated PNG: chunk IDAT of");
  size = png_file(W, H, 4, 2, packed, n, file);
  expect_refused(file, size, "depth.png", "unreadable image header (PNG colour type 2, bit depth 4");
  size = png_file(W, H, 8, 0, packed, 0, file);
  expect_refused(file, size, "empty.png", "corrupt image (PNG");
  /* A header of 60000 x 60000 (3.6 GB of grey, 14 GB RGBA): its size against the side limit,
     not only "too many bytes". */
  size = png_file(60000, 60000, 8, 0, packed, n, file);
  expect_refused(file, size, "huge.png", "image is 60000x60000, larger than the 8192x8192 allowed");
  size = png_file(60000, 60000, 8, 6, packed, n, file);
  expect_refused(file, size, "huge_rgba.png", "image is 60000x60000, larger than the 8192x8192");
}

/* CRCs: a 13 x 7 palette image with tRNS, its data in two IDAT chunks and a tEXt chunk among
   them, decodes; one byte of the CRC of any chunk the reader reads (IHDR, PLTE, tRNS, either
   IDAT, IEND) flipped, it is refused naming that chunk and both CRCs; the tEXt chunk's CRC is
   not read. A chunk type of bytes outside printable ASCII is written as \xHH in a message. */
static void test_png_crc(test_rng* rng) {
  enum { W = 13, H = 7, COLOURS = 5 };
  static uint8_t raw[H * (W + 1)], packed[1024], file[4096];
  uint8_t ihdr[13], plte[3 * COLOURS], trns[COLOURS];
  png_ihdr(W, H, 8, 3, ihdr);
  for (int i = 0; i < 3 * COLOURS; i++) plte[i] = (uint8_t)test_int(rng, 0, 255);
  for (int i = 0; i < COLOURS; i++) trns[i] = (uint8_t)test_int(rng, 1, 254);
  for (int y = 0; y < H; y++) {
    raw[y * (W + 1)] = 0;
    for (int x = 0; x < W; x++) raw[y * (W + 1) + 1 + x] = (uint8_t)test_int(rng, 1, COLOURS - 1);
  }
  uLongf n = sizeof packed;
  CHECK(compress2(packed, &n, raw, sizeof raw, 9) == Z_OK, "zlib");
  const png_chunk chunks[] = {{"IHDR", ihdr, 13},
                              {"PLTE", plte, sizeof plte},
                              {"tRNS", trns, sizeof trns},
                              {"IDAT", packed, n / 2},
                              {"tEXt", (const uint8_t*)"Comment\0crc", 11},
                              {"IDAT", packed + n / 2, n - n / 2},
                              {"IEND", NULL, 0}};
  enum { CHUNKS = sizeof chunks / sizeof chunks[0] };
  size_t size = png_chunks(chunks, CHUNKS, file);
  io_raster r = decode(file, size, "crc.png");
  CHECK(r.width == W && r.height == H && r.channels == 4, "crc.png: %dx%dx%d", r.width, r.height,
        r.channels);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      int k = raw[y * (W + 1) + 1 + x];
      const uint8_t want[4] = {plte[3 * k], plte[3 * k + 1], plte[3 * k + 2], trns[k]};
      CHECK(memcmp(r.data + 4 * (y * W + x), want, 4) == 0, "crc.png: pixel (%d, %d) differs", x, y);
    }
  size_t at = 8;
  for (int c = 0; c < CHUNKS; c++) {
    size_t crc_at = at + 8 + chunks[c].n;
    at = crc_at + 4;
    static uint8_t bad[4096];
    memcpy(bad, file, size);
    bad[crc_at + (size_t)c % 4] ^= 0x10;
    char what[32];
    snprintf(what, sizeof what, "crc_%d_%.4s.png", c, chunks[c].type);
    if (memcmp(chunks[c].type, "tEXt", 4) == 0) { /* skipped unread */
      io_raster t = decode(bad, size, what);
      CHECK(memcmp(t.data, r.data, (size_t)W * H * 4) == 0, "%s: the pixels differ", what);
      io_raster_free(&t);
      continue;
    }
    uint32_t stored = (uint32_t)bad[crc_at] << 24 | (uint32_t)bad[crc_at + 1] << 16 |
                      (uint32_t)bad[crc_at + 2] << 8 | bad[crc_at + 3];
    uint32_t right = stored ^ (0x10u << (8 * (3 - c % 4)));
    char fragment[160];
    snprintf(fragment, sizeof fragment, "%s (PNG chunk %.4s: CRC 0x%08x where the data gives 0x%08x)",
             c == 0 ? "unreadable image header" : "corrupt image", chunks[c].type, stored, right);
    expect_refused(bad, size, what, fragment);
  }
  io_raster_free(&r);

  /* An unknown critical chunk whose type holds ESC; a chunk of type 0 0 0 0 longer than the
     file. */
  const png_chunk esc[] = {{"IHDR", ihdr, 13}, {"\x1bXYZ", plte, 3}, {"IEND", NULL, 0}};
  size = png_chunks(esc, 3, file);
  const png_chunk nul[] = {{"IHDR", ihdr, 13}, {"\0\0\0\0", plte, sizeof plte}};
  size_t nul_size = png_chunks(nul, 2, file + size) - 1;
  const struct {
    const uint8_t* bytes;
    size_t size;
    const char* fragment;
  } odd[] = {{file, size, "corrupt image (PNG chunk \\x1bXYZ unknown)"},
             {file + size, nul_size, "corrupt image (truncated PNG: chunk \\x00\\x00\\x00\\x00 of 15 bytes"}};
  for (int k = 0; k < 2; k++) {
    io_raster t;
    ttp_err e = {0};
    CHECK(io_decode(odd[k].bytes, odd[k].size, "odd.png", &full, &t, &e) == TTP_ERR_FORMAT,
          "odd chunk type %d: accepted", k);
    EXPECT_MESSAGE(e.message, "odd.png", odd[k].fragment);
    for (const char* m = e.message; *m; m++)
      CHECK((unsigned char)*m >= 0x20, "odd chunk type %d: byte 0x%02x in the message", k,
            (unsigned char)*m);
  }
}

/* ---- PNM ------------------------------------------------------------------------------------- */

/* A width, height or maxval written with a sign is refused as what it is, not as missing. */
static void test_pnm_sign(test_rng* rng) {
  static const struct {
    const char* header;
    const char* fragment;
  } cases[] = {
      {"P5\n-28 28\n255\n", "PNM header: width -28 is not a positive number"},
      {"P5\n13 -7\n255\n", "PNM header: height -7 is not a positive number"},
      {"P6 13 7 +255\n", "PNM header: maxval +255 has a sign"},
      {"P5\n-12345678901234 7\n255\n", "PNM header: width -1234567890... is not a positive number"},
      {"P5\n13 - 7\n255\n", "PNM header: height is not a number"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    uint8_t file[64 + 28 * 28 * 3];
    size_t n = strlen(cases[k].header);
    memcpy(file, cases[k].header, n);
    for (int i = 0; i < 28 * 28 * 3; i++) file[n + i] = (uint8_t)test_int(rng, 1, 255);
    io_raster r;
    ttp_err e = {0};
    CHECK(io_decode(file, n + 28 * 28 * 3, "signed.pnm", &full, &r, &e) == TTP_ERR_FORMAT,
          "%s: accepted", cases[k].header);
    EXPECT_MESSAGE(e.message, "signed.pnm", cases[k].fragment);
    CHECK(!strstr(e.message, "missing"), "%s", e.message);
  }
}

/* ---- preprocessing: the grey image that is already the right size ----------------------------- */

/* io_preprocess's shortcut for a grey image of the model's size against its general path: the
   same image with an opaque alpha channel goes the general way and must give the same bytes. */
static void test_exact_size(test_rng* rng) {
  enum { R = 28, C = 28 };
  /* Borders on either side of the "light" threshold (a mean of 0.5: 127.5 of 255). */
  static const int border[4] = {100, 127, 128, 160};
  for (int t = 0; t < 12; t++) {
    uint8_t grey[R * C], ga[R * C * 2], fast[R * C], general[R * C];
    for (int i = 0; i < R * C; i++) {
      int y = i / C, x = i % C;
      int v = y == 0 || y == R - 1 || x == 0 || x == C - 1 ? border[t % 4] : test_int(rng, 0, 255);
      grey[i] = (uint8_t)v, ga[2 * i] = (uint8_t)v, ga[2 * i + 1] = 255;
    }
    ttp_image_options o;
    ttp_image_options_init(&o);
    o.invert = (ttp_invert)(t % 3);
    io_raster a = {.width = C, .height = R, .channels = 1, .data = grey};
    io_raster b = {.width = C, .height = R, .channels = 2, .data = ga};
    ttp_err e = {0};
    memset(fast, 0x5a, sizeof fast), memset(general, 0xa5, sizeof general);
    CHECK(io_preprocess(&a, &o, R, C, fast, &e) == TTP_OK &&
              io_preprocess(&b, &o, R, C, general, &e) == TTP_OK, "%s", e.message);
    CHECK(memcmp(fast, general, sizeof fast) == 0, "case %d (invert %d): the shortcut differs", t,
          (int)o.invert);
  }
}

int main(void) {
  test_rng rng = {1234};
  test_exact_size(&rng);
  test_bmp(&rng);
  test_bmp_32bit_rgb(&rng);
  test_bmp_rle_bounds(&rng);
  test_jpeg(&rng);
  test_png(&rng);
  test_png_crc(&rng);
  test_pnm_sign(&rng);
  printf("decoders: BMP variants exact, JPEG, PNG and PNM guards hold\n");
  return 0;
}
