/* Image files through ttp_load_image: every format read back (grey PNG, BMP and PNM exactly;
   colour by BT.601 luma; alpha over white; JPEG within its loss), and every bad file refused
   with one line naming it, the caller's pixels untouched: empty, random bytes, truncated PNG,
   a PNG declaring 100000 x 100000, an image over --max-size, a file over the size cap, a
   directory, malformed PNM headers and samples. */
#include <math.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

static char dir[1024];
static ttp_image_options exact; /* no inversion, no resizing when sizes match */

static const char* at(const char* name) {
  static char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static void expect_refused_file(const char* path, const ttp_image_options* o, ttp_status status,
                                const char* fragment) {
  uint8_t pixels[28 * 28];
  memset(pixels, 0xa5, sizeof pixels);
  char error[TTP_ERROR_SIZE];
  ttp_status s = ttp_load_image(path, o, 28, 28, pixels, error, sizeof error);
  CHECK(s == status, "%s: want %s, got %s: %s", path, ttp_status_string(status),
        ttp_status_string(s), error);
  EXPECT_MESSAGE(error, path, fragment);
  for (size_t i = 0; i < sizeof pixels; i++) CHECK(pixels[i] == 0xa5, "%s: pixels written", path);
}

static void expect_refused(const char* name, const void* data, size_t n, ttp_status status,
                           const char* fragment) {
  char path[2048];
  snprintf(path, sizeof path, "%s", at(name));
  test_write_file(path, data, n);
  expect_refused_file(path, &exact, status, fragment);
}

static void load(const char* name, uint8_t* out) {
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_load_image(at(name), &exact, 28, 28, out, error, sizeof error) == TTP_OK, "%s", error);
}

static void test_formats(test_rng* rng) {
  uint8_t grey[28 * 28], rgb[28 * 28 * 3], rgba[28 * 28 * 4], got[28 * 28];
  for (int i = 0; i < 28 * 28; i++) grey[i] = (uint8_t)test_int(rng, 0, 255);
  for (int i = 0; i < 28 * 28 * 3; i++) rgb[i] = (uint8_t)test_int(rng, 0, 255);
  for (int i = 0; i < 28 * 28 * 4; i++) rgba[i] = (uint8_t)test_int(rng, 0, 255);

  fixture_png(at("grey.png"), 28, 28, 1, grey);
  load("grey.png", got);
  CHECK(memcmp(got, grey, sizeof grey) == 0, "grey PNG differs");
  fixture_pgm(at("grey.pgm"), 28, 28, 255, grey);
  load("grey.pgm", got);
  CHECK(memcmp(got, grey, sizeof grey) == 0, "PGM differs");
  fixture_bmp(at("grey.bmp"), 28, 28, 1, grey);
  load("grey.bmp", got);
  CHECK(memcmp(got, grey, sizeof grey) == 0, "BMP differs");

  /* Colour: BT.601 luma; alpha over white. */
  fixture_png(at("rgb.png"), 28, 28, 3, rgb);
  load("rgb.png", got);
  for (int i = 0; i < 28 * 28; i++) {
    double y = 0.299 * rgb[3 * i] + 0.587 * rgb[3 * i + 1] + 0.114 * rgb[3 * i + 2];
    CHECK(fabs(got[i] - y) <= 0.51, "RGB pixel %d: %d, luma %.2f", i, got[i], y);
  }
  fixture_png(at("rgba.png"), 28, 28, 4, rgba);
  load("rgba.png", got);
  for (int i = 0; i < 28 * 28; i++) {
    const uint8_t* p = rgba + 4 * i;
    double a = p[3] / 255.0, y = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
    double want = a * y + (1 - a) * 255;
    CHECK(fabs(got[i] - want) <= 0.51, "RGBA pixel %d: %d, want %.2f", i, got[i], want);
  }
  /* P6, and 16-bit P5 scaled to 8 bits. */
  char header[64];
  uint8_t buf[64 + 28 * 28 * 3];
  int h = snprintf(header, sizeof header, "P6\n28 28\n255\n");
  memcpy(buf, header, (size_t)h);
  memcpy(buf + h, rgb, sizeof rgb);
  test_write_file(at("rgb.ppm"), buf, (size_t)h + sizeof rgb);
  uint8_t from_png[28 * 28];
  load("rgb.png", from_png);
  load("rgb.ppm", got);
  CHECK(memcmp(got, from_png, sizeof got) == 0, "PPM and PNG of the same pixels differ");
  h = snprintf(header, sizeof header, "P5\n28 28\n65535\n");
  memcpy(buf, header, (size_t)h);
  for (int i = 0; i < 28 * 28; i++) buf[h + 2 * i] = grey[i], buf[h + 2 * i + 1] = grey[i];
  test_write_file(at("deep.pgm"), buf, (size_t)h + 2 * 28 * 28);
  load("deep.pgm", got);
  CHECK(memcmp(got, grey, sizeof grey) == 0, "16-bit PGM differs"); /* v * 257 / 65535 * 255 */

  /* JPEG is lossy: a smooth drawing comes back close. */
  uint8_t drawing[28 * 28];
  fixture_drawing(drawing, 28, 28, 1, 0, 9);
  fixture_jpg(at("drawing.jpg"), 28, 28, 1, drawing);
  load("drawing.jpg", got);
  double diff = 0;
  for (int i = 0; i < 28 * 28; i++) diff += fabs((double)got[i] - drawing[i]);
  CHECK(diff / (28 * 28) < 12, "JPEG differs by %.1f levels on average", diff / (28 * 28));
}

static void test_bad(test_rng* rng) {
  uint8_t grey[28 * 28];
  for (int i = 0; i < 28 * 28; i++) grey[i] = (uint8_t)test_int(rng, 0, 255);
  fixture_png(at("good.png"), 28, 28, 1, grey);
  FILE* f = fopen(at("good.png"), "rb");
  uint8_t png[8192];
  size_t n = fread(png, 1, sizeof png, f);
  fclose(f);
  CHECK(n > 100 && n < sizeof png, "PNG of %zu bytes", n);

  expect_refused("empty.png", "", 0, TTP_ERR_FORMAT, "empty file");
  uint8_t noise[3000];
  for (size_t i = 0; i < sizeof noise; i++) noise[i] = (uint8_t)test_int(rng, 0, 255);
  noise[0] = 'x';
  expect_refused("noise.png", noise, sizeof noise, TTP_ERR_FORMAT, "not an image");
  expect_refused("text.jpg", "hello\n", 6, TTP_ERR_FORMAT, "not an image");
  expect_refused("truncated.png", png, n / 2, TTP_ERR_FORMAT, "corrupt image");
  uint8_t huge[8192];
  memcpy(huge, png, n);
  /* IHDR's width and height (big-endian, bytes 16..23): 20000 x 20000 and 100000 x 100000 (40
     GB of pixels) are refused from the header, before any decoding, with their size against
     the limit. */
  static const uint8_t side[4] = {0x00, 0x00, 0x4e, 0x20}, absurd[4] = {0x00, 0x01, 0x86, 0xa0};
  memcpy(huge + 16, side, 4);
  memcpy(huge + 20, side, 4);
  expect_refused("huge.png", huge, n, TTP_ERR_FORMAT, "image is 20000x20000, larger than");
  memcpy(huge + 16, absurd, 4);
  memcpy(huge + 20, absurd, 4);
  expect_refused("absurd.png", huge, n, TTP_ERR_FORMAT,
                 "image is 100000x100000, larger than the 8192x8192 allowed");
  uint8_t noisy_png_tail[8192];
  memcpy(noisy_png_tail, png, n);
  for (size_t i = 40; i < n - 12; i++) noisy_png_tail[i] ^= 0x5a;
  expect_refused("scrambled.png", noisy_png_tail, n, TTP_ERR_FORMAT, "corrupt image");

  ttp_image_options small = exact;
  small.max_width = small.max_height = 20;
  expect_refused_file(at("good.png"), &small, TTP_ERR_FORMAT, "image is 28x28, larger than the 20x20");
  ttp_image_options tiny = exact;
  tiny.max_file_bytes = 100;
  expect_refused_file(at("good.png"), &tiny, TTP_ERR_FORMAT, "more than the 100 allowed");
  expect_refused_file(dir, &exact, TTP_ERR_IO, "is a directory");
  expect_refused_file(at("missing.png"), &exact, TTP_ERR_IO, "cannot open");

  /* PNM headers and samples. */
  static const struct {
    const char* name;
    const char* text;
    size_t pixels;
    uint8_t v;
    const char* fragment;
  } pnm[] = {
      {"ascii.pgm", "P2\n28 28\n255\n", 0, 0, "not an image"},
      {"p55.pgm", "P55\n28 28\n255\n", 784, 1, "not a binary PNM"},
      {"short.pgm", "P5\n28 28\n255\n", 783, 1, "truncated: 784 pixel bytes expected, 783"},
      {"maxval0.pgm", "P5\n28 28\n0\n", 784, 0, "maxval out of range"},
      {"above.pgm", "P5\n28 28\n100\n", 784, 101, "sample 0 is 101, above maxval 100"},
      {"noheight.pgm", "P5\n28\n", 0, 0, "height missing"},
      {"garbage.pgm", "P5\n28x 28\n255\n", 784, 1, "width is not a number"},
      {"hugenum.pgm", "P5\n99999999999999999999 28\n255\n", 784, 1, "width out of range"},
      {"cut.pgm", "P5\n28 28\n255", 0, 0, "truncated PNM header"},
      {"wide.pgm", "P5\n9000 2\n255\n", 0, 0, "larger than the 8192x8192"},
  };
  uint8_t buf[4096];
  for (size_t i = 0; i < sizeof pnm / sizeof pnm[0]; i++) {
    size_t h = strlen(pnm[i].text);
    memcpy(buf, pnm[i].text, h);
    memset(buf + h, pnm[i].v, pnm[i].pixels);
    expect_refused(pnm[i].name, buf, h + pnm[i].pixels, TTP_ERR_FORMAT, pnm[i].fragment);
  }
}

int main(void) {
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  ttp_image_options_init(&exact);
  exact.invert = TTP_INVERT_NO;
  test_rng rng = {5};
  test_formats(&rng);
  test_bad(&rng);
  char error[TTP_ERROR_SIZE];
  uint8_t px[4];
  CHECK(ttp_load_image(NULL, NULL, 2, 2, px, error, sizeof error) == TTP_ERR_INVALID_ARGUMENT,
        "NULL path accepted");
  test_remove_tree(dir);
  printf("images: every format read back, every bad file refused\n");
  return 0;
}
