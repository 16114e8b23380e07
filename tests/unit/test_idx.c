/* IDX images and labels, plain and gzip, through the public reading functions: odd-sized good
   files read back exactly; truncated, empty, wrong-magic, absurdly sized, corrupt and trailing
   files are refused with one line naming the file, and nothing is returned. */
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "../common/check.h"
#include "../common/fixtures.h"
#include "ttapipe.h"

static char dir[1024];

static uint8_t* random_bytes(test_rng* r, size_t n, int below) {
  uint8_t* b = malloc(n ? n : 1);
  CHECK(b, "out of memory");
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)test_int(r, 0, below - 1);
  return b;
}

static void expect_images_refused(const char* path, ttp_status status, const char* f1,
                                  const char* f2);

static void read_back(test_rng* rng, int gz) {
  uint32_t dims[3] = {37, 13, 11};
  size_t n = 37 * 13 * 11;
  uint8_t* pixels = random_bytes(rng, n, 256);
  const char* path = test_path(dir, gz ? "images.gz" : "images");
  fixture_idx(path, 3, dims, pixels, n, gz);
  ttp_images im;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_read_idx_images(path, &im, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(error[0] == '\0', "message after success: %s", error);
  CHECK(im.count == 37 && im.rows == 13 && im.cols == 11, "dims %zu %d %d", im.count, im.rows,
        im.cols);
  CHECK(im.channels == 1, "%d channels in a 3-dimensional file", im.channels);
  CHECK(memcmp(im.pixels, pixels, n) == 0, "pixels differ");
  ttp_free(im.pixels);

  /* Four dimensions: [count, channels, rows, cols], planar; 1 or 3 channels, never 2. */
  uint32_t dims4[4] = {7, 3, 9, 5};
  const size_t n4 = 7 * 3 * 9 * 5;
  uint8_t* planes = random_bytes(rng, n4, 256);
  path = test_path(dir, gz ? "rgb.gz" : "rgb");
  fixture_idx(path, 4, dims4, planes, n4, gz);
  CHECK(ttp_read_idx_images(path, &im, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(im.count == 7 && im.channels == 3 && im.rows == 9 && im.cols == 5, "dims %zu %d %d %d",
        im.count, im.channels, im.rows, im.cols);
  CHECK(memcmp(im.pixels, planes, n4) == 0, "planes differ");
  ttp_free(im.pixels);
  dims4[1] = 2;
  fixture_idx(path, 4, dims4, planes, 7 * 2 * 9 * 5, gz);
  expect_images_refused(path, TTP_ERR_FORMAT, "2 channels", "1 or 3");
  free(planes);

  uint8_t* labels = random_bytes(rng, 37, 10);
  path = test_path(dir, gz ? "labels.gz" : "labels");
  fixture_idx(path, 1, dims, labels, 37, gz);
  uint8_t* got;
  size_t count;
  CHECK(ttp_read_idx_labels(path, &got, &count, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(count == 37 && memcmp(got, labels, 37) == 0, "labels differ");
  ttp_free(got);
  free(pixels), free(labels);
}

/* Both readers must refuse path with status and a message holding the fragments. */
static void expect_images_refused(const char* path, ttp_status status, const char* f1,
                                  const char* f2) {
  ttp_images im = {(uint8_t*)1, 5, 5, 5, 5};
  char error[TTP_ERROR_SIZE];
  ttp_status s = ttp_read_idx_images(path, &im, error, sizeof error);
  CHECK(s == status, "%s: want %s, got %s: %s", path, ttp_status_string(status),
        ttp_status_string(s), error);
  CHECK(!im.pixels && !im.count, "%s: something returned with an error", path);
  EXPECT_MESSAGE(error, path, f1, f2);
}

static void expect_labels_refused(const char* path, ttp_status status, const char* f1,
                                  const char* f2) {
  uint8_t* labels = (uint8_t*)1;
  size_t count = 5;
  char error[TTP_ERROR_SIZE];
  ttp_status s = ttp_read_idx_labels(path, &labels, &count, error, sizeof error);
  CHECK(s == status, "%s: want %s, got %s: %s", path, ttp_status_string(status),
        ttp_status_string(s), error);
  CHECK(!labels && !count, "%s: something returned with an error", path);
  EXPECT_MESSAGE(error, path, f1, f2);
}

static void write_raw(const char* name, const void* data, size_t n, int gz) {
  const char* path = test_path(dir, name);
  if (!gz) {
    test_write_file(path, data, n);
    return;
  }
  gzFile f = gzopen(path, "wb");
  CHECK(f && gzwrite(f, data, (unsigned)n) == (int)n && gzclose(f) == Z_OK, "gz %s", path);
}

static void bad_files(test_rng* rng, int gz) {
  char path[4096];
  const char* ext = gz ? ".gz" : "";
#define PATH(name) (snprintf(path, sizeof path, "%s/%s%s", dir, name, ext), path)
  uint32_t dims[3] = {19, 28, 28};
  size_t n = 19 * 28 * 28;
  uint8_t* pixels = random_bytes(rng, n, 256);

  write_raw(gz ? "empty.gz" : "empty", "", 0, gz);
  expect_images_refused(PATH("empty"), TTP_ERR_FORMAT, "empty file", "");
  expect_labels_refused(PATH("empty"), TTP_ERR_FORMAT, "empty file", "");

  uint8_t header7[7] = {0, 0, 8, 3, 0, 0, 0};
  write_raw(gz ? "header.gz" : "header", header7, 7, gz);
  expect_images_refused(PATH("header"), TTP_ERR_FORMAT, "truncated header", "7 of 16");

  /* Wrong magic: a label file given as images and the reverse, a signed type, a PNG. */
  fixture_idx(PATH("labels"), 1, dims, pixels, 19, gz);
  expect_images_refused(path, TTP_ERR_FORMAT, "not an IDX images file", "0x00000801");
  fixture_idx(PATH("images"), 3, dims, pixels, n, gz);
  expect_labels_refused(path, TTP_ERR_FORMAT, "not an IDX labels file", "0x00000803");
  uint8_t signed_type[16] = {0, 0, 9, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  write_raw(gz ? "signed.gz" : "signed", signed_type, 16, gz);
  expect_images_refused(PATH("signed"), TTP_ERR_FORMAT, "magic 0x00000903", "");
  uint8_t png[16] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  write_raw(gz ? "png.gz" : "png", png, 16, gz);
  expect_images_refused(PATH("png"), TTP_ERR_FORMAT, "not an IDX images file", "");

  /* Zero and absurd dimensions: refused from the header alone. */
  uint32_t zero[3] = {19, 0, 28};
  fixture_idx(PATH("zero"), 3, zero, pixels, 0, gz);
  expect_images_refused(path, TTP_ERR_FORMAT, "dimension 1 is zero", "");
  uint32_t absurd[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  fixture_idx(PATH("absurd"), 3, absurd, pixels, n, gz);
  expect_images_refused(path, TTP_ERR_FORMAT, "declares more than", "bytes of images");
  uint32_t billion[1] = {4000000000u}; /* 4 GB of labels declared, 19 present */
  fixture_idx(PATH("billion"), 1, billion, pixels, 19, gz);
  expect_labels_refused(path, TTP_ERR_FORMAT, "truncated", "4000000000 bytes of labels");
  uint32_t wide[3] = {1, 1, 100000}; /* within the byte limit, too wide for an image */
  uint8_t* row = random_bytes(rng, 100000, 256);
  fixture_idx(PATH("wide"), 3, wide, row, 100000, gz);
  expect_images_refused(path, TTP_ERR_FORMAT, "larger than 65535", "");
  free(row);

  /* Truncation by one byte, and one byte too many. */
  fixture_idx(PATH("short"), 3, dims, pixels, n - 1, gz);
  expect_images_refused(path, TTP_ERR_FORMAT, "truncated", "14895");
  uint8_t* longer = random_bytes(rng, n + 1, 256);
  fixture_idx(PATH("long"), 3, dims, longer, n + 1, gz);
  expect_images_refused(path, TTP_ERR_FORMAT, "data after the 14896 bytes", "");
  free(longer);
  free(pixels);
#undef PATH
}

/* Damage to the gzip stream itself: cut in half, and bytes flipped in the middle. */
static void bad_gzip(test_rng* rng) {
  uint32_t dims[3] = {50, 28, 28};
  size_t n = 50 * 28 * 28;
  uint8_t* pixels = random_bytes(rng, n, 256);
  const char* path = test_path(dir, "whole.gz");
  fixture_idx(path, 3, dims, pixels, n, 1);
  FILE* f = fopen(path, "rb");
  uint8_t* gz = malloc(2 * n);
  size_t size = fread(gz, 1, 2 * n, f);
  fclose(f);
  CHECK(size > 1000, "gzip of random data is %zu bytes", size);

  char cut[4096];
  snprintf(cut, sizeof cut, "%s", test_path(dir, "cut.gz"));
  test_write_file(cut, gz, size / 2);
  expect_images_refused(cut, TTP_ERR_FORMAT, "truncated", "");

  for (size_t i = size / 2; i < size / 2 + 16; i++) gz[i] ^= 0x5a;
  char flipped[4096];
  snprintf(flipped, sizeof flipped, "%s", test_path(dir, "flipped.gz"));
  test_write_file(flipped, gz, size);
  expect_images_refused(flipped, TTP_ERR_FORMAT, "corrupt gzip data", "");
  free(gz), free(pixels);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  test_rng rng = {2049};
  read_back(&rng, 0);
  read_back(&rng, 1);
  bad_files(&rng, 0);
  bad_files(&rng, 1);
  bad_gzip(&rng);
  expect_images_refused(test_path(dir, "missing"), TTP_ERR_IO, "cannot open", "");
  expect_images_refused(dir, TTP_ERR_IO, "is a directory", "");
  expect_labels_refused(dir, TTP_ERR_IO, "is a directory", "");
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_read_idx_images(NULL, NULL, error, sizeof error) == TTP_ERR_INVALID_ARGUMENT,
        "NULL arguments accepted");
  test_remove_tree(dir);
  printf("idx: good files read back, every bad one refused\n");
  return 0;
}
