/* ttp_fixture: writes generated inputs for the shell tests of the ttapipe command.
     ttp_fixture model DIR SEED                        a model directory with random weights
     ttp_fixture images PATH COUNT ROWS COLS SEED [gz] an IDX image file
     ttp_fixture labels PATH COUNT CLASSES SEED [gz]   an IDX label file
     ttp_fixture pgm PATH ROWS COLS SEED               a binary PGM of random pixels
     ttp_fixture gallery DIR                           images of every kind, good and bad (below)
     ttp_fixture drawn DIR IMAGES LABELS               20 MNIST digits drawn dark on white
     ttp_fixture onnx MODEL_DIR PATH                   a model directory written as ONNX
     ttp_fixture hostile DIR SIDE [scans]              SIDE x SIDE images in small files
     ttp_fixture big DIR                               a 6000 x 4000 JPEG, a 4096 x 4096 PNG
     ttp_fixture photo PATH W H SEED                   a synthetic photograph (.png or .jpg)
   (large_images.h) */
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fixtures.h"
#include "model/mnistcudnn.h"
#include "io/preprocess.h"
#include "large_images.h"
#include "ttapipe.h"

static long arg(char** argv, int i) { return strtol(argv[i], NULL, 10); }

static const char* in(const char* dir, const char* name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

/* Good files: PNG, JPEG, BMP, PGM, PPM; grey, RGB, RGBA; sizes other than 28 x 28; light and
   dark grounds; nested folders; names with spaces, commas, quotes and non-ASCII letters.
   Bad files: a truncated PNG, random bytes named .jpg, an empty .bmp, a PNG declaring
   20000 x 20000, and a directory named x.png (empty: a walk takes nothing from it). Also
   noread.png, a good PNG without read permission (refused unless the reader is root). */
static void gallery(const char* dir) {
  static uint8_t px[96 * 96 * 4];
  mkdir(dir, 0755);
  mkdir(in(dir, "nested"), 0755);
  mkdir(in(dir, "nested/deeper"), 0755);
  mkdir(in(dir, "x.png"), 0755);
  fixture_drawing(px, 28, 28, 1, 0, 1);
  fixture_png(in(dir, "digit grey.png"), 28, 28, 1, px);
  fixture_drawing(px, 64, 48, 3, 1, 2);
  fixture_jpg(in(dir, "light, rgb.jpg"), 64, 48, 3, px);
  fixture_drawing(px, 40, 40, 4, 0, 3);
  for (int i = 0; i < 40 * 40; i++) px[4 * i + 3] = (uint8_t)(i % 256); /* real transparency */
  fixture_png(in(dir, "nested/rgba \"quoted\".png"), 40, 40, 4, px);
  fixture_drawing(px, 30, 34, 3, 1, 4);
  fixture_bmp(in(dir, "nested/deeper/\xc3\xbc" "n\xc3\xaf" "c\xc3\xb8" "d\xc3\xa9.bmp"), 30, 34, 3, px);
  fixture_drawing(px, 20, 20, 1, 0, 5);
  fixture_pgm(in(dir, "nested/deeper/small.pgm"), 20, 20, 255, px);
  fixture_drawing(px, 96, 50, 3, 0, 6);
  char header[32];
  int h = snprintf(header, sizeof header, "P6\n96 50\n255\n");
  FILE* f = fopen(in(dir, "wide.ppm"), "wb");
  CHECK(f && fwrite(header, 1, (size_t)h, f) == (size_t)h && fwrite(px, 1, 96 * 50 * 3, f) == 96 * 50 * 3 &&
            fclose(f) == 0, "wide.ppm");
  fixture_png(in(dir, "noread.png"), 28, 28, 1, px);
  chmod(in(dir, "noread.png"), 0);
  /* bad ones */
  fixture_drawing(px, 28, 28, 1, 0, 7);
  fixture_png(in(dir, "truncated.png"), 28, 28, 1, px);
  FILE* g = fopen(in(dir, "truncated.png"), "rb");
  uint8_t png[4096];
  size_t n = fread(png, 1, sizeof png, g);
  fclose(g);
  test_write_file(in(dir, "truncated.png"), png, n / 2);
  memcpy(png + 16, "\x00\x00\x4e\x20\x00\x00\x4e\x20", 8);
  test_write_file(in(dir, "huge.png"), png, n);
  test_rng r = {11};
  for (int i = 0; i < 2000; i++) px[i] = (uint8_t)test_int(&r, 0, 255);
  px[0] = 'R';
  test_write_file(in(dir, "random.jpg"), px, 2000);
  test_write_file(in(dir, "empty.bmp"), "", 0);
}

/* MNIST test digits 0..19 as a person might draw them: three times larger, dark on a white
   canvas of 150 x 120, off-centre (each at its own place), named NN_labelD.png. */
static void drawn(const char* dir, const char* images_path, const char* labels_path) {
  ttp_images im;
  uint8_t* labels;
  size_t count;
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_read_idx_images(images_path, &im, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(ttp_read_idx_labels(labels_path, &labels, &count, error, sizeof error) == TTP_OK, "%s", error);
  mkdir(dir, 0755);
  enum { W = 150, H = 120, S = 84 };
  static float digit[28 * 28], big[S * S], scratch[S * 28];
  static uint8_t canvas[W * H * 3];
  for (int i = 0; i < 20; i++) {
    for (int j = 0; j < 28 * 28; j++) digit[j] = im.pixels[(size_t)i * 784 + j] / 255.0f;
    io_resample(digit, 28, 28, big, S, S, scratch);
    memset(canvas, 255, sizeof canvas);
    int ox = 8 + 12 * (i % 5), oy = 4 + 9 * (i % 4);
    for (int y = 0; y < S; y++)
      for (int x = 0; x < S; x++) {
        uint8_t v = (uint8_t)(255.0f - 255.0f * big[y * S + x] + 0.5f);
        uint8_t* p = canvas + ((size_t)(oy + y) * W + ox + x) * 3;
        p[0] = v, p[1] = v, p[2] = (uint8_t)(v * 0.9f); /* a slightly warm, dark ink */
      }
    char name[64];
    snprintf(name, sizeof name, "%02d_label%d.png", i, labels[i]);
    fixture_png(in(dir, name), W, H, 3, canvas);
  }
  ttp_free(im.pixels);
  ttp_free(labels);
}

static uint8_t* random_bytes(uint64_t seed, size_t n, int below) {
  test_rng r = {seed};
  uint8_t* b = malloc(n ? n : 1);
  CHECK(b, "out of memory");
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)test_int(&r, 0, below - 1);
  return b;
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "onnx") == 0 && argc == 4) {
    ttp_err e = {0};
    model* m = NULL;
    CHECK(io_load_mnistcudnn(argv[2], &m, &e) == TTP_OK, "%s", e.message);
    fixture_onnx(m, argv[3], 0);
    model_free(m);
  } else if (strcmp(what, "model") == 0 && argc == 4) {
    mkdir(argv[2], 0755);
    fixture_model_dir(argv[2], (uint64_t)arg(argv, 3));
  } else if (strcmp(what, "images") == 0 && (argc == 7 || argc == 8)) {
    uint32_t dims[3] = {(uint32_t)arg(argv, 3), (uint32_t)arg(argv, 4), (uint32_t)arg(argv, 5)};
    size_t n = (size_t)dims[0] * dims[1] * dims[2];
    uint8_t* px = random_bytes((uint64_t)arg(argv, 6), n, 256);
    fixture_idx(argv[2], 3, dims, px, n, argc == 8);
    free(px);
  } else if (strcmp(what, "labels") == 0 && (argc == 6 || argc == 7)) {
    uint32_t dims[1] = {(uint32_t)arg(argv, 3)};
    uint8_t* labels = random_bytes((uint64_t)arg(argv, 5), dims[0], (int)arg(argv, 4));
    fixture_idx(argv[2], 1, dims, labels, dims[0], argc == 7);
    free(labels);
  } else if (strcmp(what, "pgm") == 0 && argc == 6) {
    int rows = (int)arg(argv, 3), cols = (int)arg(argv, 4);
    uint8_t* px = random_bytes((uint64_t)arg(argv, 5), (size_t)rows * cols, 256);
    fixture_pgm(argv[2], rows, cols, 255, px);
    free(px);
  } else if (strcmp(what, "gallery") == 0 && argc == 3) {
    gallery(argv[2]);
  } else if (strcmp(what, "drawn") == 0 && argc == 5) {
    drawn(argv[2], argv[3], argv[4]);
  } else if (strcmp(what, "hostile") == 0 && (argc == 4 || argc == 5)) {
    mkdir(argv[2], 0755);
    large_hostile(argv[2], (int)arg(argv, 3), argc == 5 && strcmp(argv[4], "scans") == 0);
  } else if (strcmp(what, "big") == 0 && argc == 3) {
    mkdir(argv[2], 0755);
    large_big(argv[2]);
  } else if (strcmp(what, "photo") == 0 && argc == 6) {
    const char* ext = strrchr(argv[2], '.');
    const int w = (int)arg(argv, 3), h = (int)arg(argv, 4);
    if (ext && strcmp(ext, ".png") == 0)
      large_png(argv[2], w, h, 2, 8, large_photo_row, (uint64_t)arg(argv, 5));
    else
      large_jpeg(argv[2], w, h, 3, 90, 1, large_photo_row, (uint64_t)arg(argv, 5));
  } else {
    fprintf(stderr, "usage: see the comment at the top of tests/common/fixture_tool.c\n");
    return 2;
  }
  return 0;
}
