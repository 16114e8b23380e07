/* ttp_fixture: writes generated inputs for the shell tests of the ttapipe command.
     ttp_fixture model DIR SEED                        a model directory with random weights
     ttp_fixture images PATH COUNT ROWS COLS SEED [gz] an IDX image file
     ttp_fixture labels PATH COUNT CLASSES SEED [gz]   an IDX label file
     ttp_fixture pgm PATH ROWS COLS SEED               a binary PGM of random pixels */
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fixtures.h"

static long arg(char** argv, int i) { return strtol(argv[i], NULL, 10); }

static uint8_t* random_bytes(uint64_t seed, size_t n, int below) {
  test_rng r = {seed};
  uint8_t* b = malloc(n ? n : 1);
  CHECK(b, "out of memory");
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)test_int(&r, 0, below - 1);
  return b;
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "model") == 0 && argc == 4) {
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
  } else {
    fprintf(stderr, "usage: see the comment at the top of tests/common/fixture_tool.c\n");
    return 2;
  }
  return 0;
}
