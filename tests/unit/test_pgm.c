/* The PGM reader behind ttp_read_image: good files with comments and small maxvals read back
   exactly; every malformed one is refused with one line naming the file, and the caller's
   pixels are untouched. */
#include <string.h>

#include "../common/check.h"
#include "../common/fixtures.h"
#include "ttapipe.h"

static char dir[1024];

static void expect_refused(const char* name, const void* data, size_t n, ttp_status status,
                           const char* fragment) {
  const char* path = test_path(dir, name);
  char keep[4096];
  snprintf(keep, sizeof keep, "%s", path);
  test_write_file(keep, data, n);
  uint8_t pixels[28 * 28];
  memset(pixels, 0xa5, sizeof pixels);
  char error[TTP_ERROR_SIZE];
  ttp_status s = ttp_read_image(keep, 28, 28, pixels, error, sizeof error);
  CHECK(s == status, "%s: want %s, got %s: %s", name, ttp_status_string(status),
        ttp_status_string(s), error);
  EXPECT_MESSAGE(error, keep, fragment);
  for (size_t i = 0; i < sizeof pixels; i++) CHECK(pixels[i] == 0xa5, "%s: pixels written", name);
}

/* A header followed by n pixel bytes of value v. */
static size_t make(uint8_t* buf, const char* header, size_t n, uint8_t v) {
  size_t h = strlen(header);
  memcpy(buf, header, h);
  memset(buf + h, v, n);
  return h + n;
}

int main(void) {
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  test_rng rng = {5};
  uint8_t want[17 * 23], got[28 * 28];
  for (size_t i = 0; i < sizeof want; i++) want[i] = (uint8_t)test_int(&rng, 0, 255);
  fixture_pgm(test_path(dir, "good.pgm"), 17, 23, 255, want);
  char error[TTP_ERROR_SIZE];
  char path[4096];
  snprintf(path, sizeof path, "%s", test_path(dir, "good.pgm"));
  CHECK(ttp_read_image(path, 17, 23, got, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(memcmp(got, want, sizeof want) == 0, "pixels differ");
  CHECK(ttp_read_image(path, 23, 17, got, error, sizeof error) == TTP_ERR_FORMAT,
        "rows and columns swapped were accepted");
  EXPECT_MESSAGE(error, "image is 23x17, the model needs 17x23");

  /* maxval 15: 0 -> 0, 15 -> 255, 7 -> 119 (7 * 255 / 15 = 119). */
  uint8_t small[28 * 28];
  for (int i = 0; i < 28 * 28; i++) small[i] = (uint8_t)(i % 16);
  fixture_pgm(test_path(dir, "small.pgm"), 28, 28, 15, small);
  snprintf(path, sizeof path, "%s", test_path(dir, "small.pgm"));
  CHECK(ttp_read_image(path, 28, 28, got, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(got[0] == 0 && got[15] == 255 && got[7] == 119, "maxval 15 scaled to %d %d %d", got[0],
        got[15], got[7]);

  /* Comments between every header field; trailing data is a next image and ignored. */
  uint8_t buf[4096];
  size_t n = make(buf, "P5 #c1\n28#c2\n #c3\n28 255\n", 28 * 28 + 5, 9);
  snprintf(path, sizeof path, "%s", test_path(dir, "comments.pgm"));
  test_write_file(path, buf, n);
  CHECK(ttp_read_image(path, 28, 28, got, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(got[0] == 9 && got[783] == 9, "comments: pixels %d %d", got[0], got[783]);

  expect_refused("empty.pgm", "", 0, TTP_ERR_FORMAT, "empty file");
  n = make(buf, "P2\n28 28\n255\n", 0, 0);
  expect_refused("ascii.pgm", buf, n, TTP_ERR_FORMAT, "not a binary PGM");
  n = make(buf, "P6\n28 28\n255\n", 28 * 28 * 3, 1);
  expect_refused("colour.ppm", buf, n, TTP_ERR_FORMAT, "not a binary PGM");
  n = make(buf, "P55\n28 28\n255\n", 28 * 28, 1);
  expect_refused("p55.pgm", buf, n, TTP_ERR_FORMAT, "not a binary PGM");
  n = make(buf, "P5\n28 28\n255\n", 28 * 28 - 1, 1);
  expect_refused("short.pgm", buf, n, TTP_ERR_FORMAT, "truncated: 784 pixel bytes expected, 783");
  n = make(buf, "P5\n28 27\n255\n", 28 * 28, 1);
  expect_refused("size.pgm", buf, n, TTP_ERR_FORMAT, "image is 28x27");
  n = make(buf, "P5\n28 28\n0\n", 28 * 28, 0);
  expect_refused("maxval0.pgm", buf, n, TTP_ERR_FORMAT, "maxval out of range");
  n = make(buf, "P5\n28 28\n65535\n", 28 * 28 * 2, 1);
  expect_refused("deep.pgm", buf, n, TTP_ERR_FORMAT, "16-bit PGM");
  n = make(buf, "P5\n28 28\n100\n", 28 * 28, 101);
  expect_refused("above.pgm", buf, n, TTP_ERR_FORMAT, "pixel 0 is 101, above maxval 100");
  n = make(buf, "P5\n28\n", 0, 0);
  expect_refused("noheight.pgm", buf, n, TTP_ERR_FORMAT, "height missing");
  n = make(buf, "P5\n28x 28\n255\n", 28 * 28, 1);
  expect_refused("garbage.pgm", buf, n, TTP_ERR_FORMAT, "width is not a number");
  n = make(buf, "P5\n99999999999999999999 28\n255\n", 28 * 28, 1);
  expect_refused("huge.pgm", buf, n, TTP_ERR_FORMAT, "width out of range");
  n = make(buf, "P5\n28 28\n255", 0, 0);
  expect_refused("cut.pgm", buf, n, TTP_ERR_FORMAT, "truncated PGM header");
  CHECK(ttp_read_image(dir, 28, 28, got, error, sizeof error) == TTP_ERR_IO, "directory read");
  EXPECT_MESSAGE(error, "is a directory");
  test_remove_tree(dir);
  printf("pgm: good files read back, every bad one refused\n");
  return 0;
}
