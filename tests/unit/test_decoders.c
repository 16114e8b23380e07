/* The image decoders one by one, beyond what test_images checks through ttp_load_image:
   - BMP (io/bmp.c): every header, bit depth and compression gives back the pixels written, bit
     masks widened as stb_image widened them (a 5-bit channel repeats its top bits), alpha
     where a mask says so, an alpha channel of zeros taken as opaque; and broken files refused
     with their reason: an index beyond the palette, cut pixel data, an offset inside the
     headers, masks that are not one run of bits, RLE past the image or stored top-down;
   - JPEG (io/jpeg.c, libjpeg-turbo): CMYK to RGB, progressive and arithmetic files near their
     source, bytes after the end ignored, a cut file and a file of more than 500 scans refused;
   - PNG (io/png.c): image data shorter than its header, a chunk longer than the file and an
     IHDR of a colour type and bit depth that do not go together refused; image data longer
     than its header, and bytes after IEND, ignored;
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

static io_raster decode(const uint8_t* bytes, size_t size, const char* what) {
  io_raster r;
  ttp_err e = {0};
  CHECK(io_decode(bytes, size, what, 8192, 8192, &r, &e) == TTP_OK, "%s: %s", what, e.message);
  return r;
}

static void expect_refused(const uint8_t* bytes, size_t size, const char* what,
                           const char* fragment) {
  io_raster r;
  ttp_err e = {0};
  CHECK(io_decode(bytes, size, what, 8192, 8192, &r, &e) == TTP_ERR_FORMAT, "%s: accepted", what);
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
  /* An alpha channel: 32-bit pixels without masks (the top byte), or an alpha mask that the
     file carries (BI_ALPHABITFIELDS, or a V3 header and longer). */
  int carries_alpha = s.masks[3] && (s.compression == 6 || s.header >= 56);
  int alpha = s.bits == 16 || s.bits == 32 ? (s.compression == 0 ? s.bits == 32 : carries_alpha) : 0;
  CHECK(r.width == s.w && r.height == s.h && r.channels == 3 + alpha, "%s: %dx%dx%d", what,
        r.width, r.height, r.channels);
  uint32_t masks[4] = {s.masks[0], s.masks[1], s.masks[2], s.masks[3]};
  if (s.compression == 0 && s.bits == 16) masks[0] = 0x7c00, masks[1] = 0x3e0, masks[2] = 0x1f;
  if (s.compression == 0 && s.bits == 32)
    masks[0] = 0xff0000, masks[1] = 0xff00, masks[2] = 0xff, masks[3] = 0xff000000;
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
      {"32-bit with alpha", {14, 12, 32, 40, 0, 0, 0, {0xff0000, 0xff00, 0xff, 0xff000000}}, 0},
      {"32-bit, alpha all 0", {14, 12, 32, 40, 0, 0, 0, {0xff0000, 0xff00, 0xff, 0xff000000}}, 1},
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

  /* 630 scans: each AC coefficient alone, sent one bit at a time in 10 passes (a valid file). */
  static jpeg_scan_info scans[1 + 63 * 10];
  int n = 0;
  scans[n++] = (jpeg_scan_info){1, {0}, 0, 0, 0, 0};
  for (int k = 1; k <= 63; k++)
    for (int al = 9; al >= 0; al--)
      scans[n++] = (jpeg_scan_info){1, {0}, k, k, al == 9 ? 0 : al + 1, al};
  size = jpeg_file(W, H, 1, drawing, 90, 0, 0, scans, n, &file);
  expect_refused(file, size, "scans.jpg", "more than 500 progressive scans");
  free(file);
  (void)rng;
}

/* ---- PNG ------------------------------------------------------------------------------------- */

/* A PNG of an IHDR and one IDAT of data (CRCs left 0: neither ttapipe nor stb reads them). */
static size_t png_file(uint32_t w, uint32_t h, int depth, int colour, const uint8_t* data,
                       size_t n, uint8_t* out) {
  static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  size_t at = 0;
  memcpy(out, signature, 8), at += 8;
  uint8_t ihdr[13] = {(uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                      (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                      (uint8_t)depth, (uint8_t)colour, 0, 0, 0};
  const struct {
    const char* type;
    const uint8_t* data;
    size_t n;
  } chunks[] = {{"IHDR", ihdr, 13}, {"IDAT", data, n}, {"IEND", NULL, 0}};
  for (int c = 0; c < 3; c++) {
    size_t len = chunks[c].n;
    uint8_t head[8] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
    memcpy(head + 4, chunks[c].type, 4);
    memcpy(out + at, head, 8), at += 8;
    if (len) memcpy(out + at, chunks[c].data, len), at += len;
    memset(out + at, 0, 4), at += 4;
  }
  return at;
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
    io_raster a = {C, R, 1, grey}, b = {C, R, 2, ga};
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
  test_jpeg(&rng);
  test_png(&rng);
  printf("decoders: BMP variants exact, JPEG and PNG guards hold\n");
  return 0;
}
