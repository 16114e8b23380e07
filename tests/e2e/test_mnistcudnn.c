/* NVIDIA's mnistCUDNN sample model on its three test images: classes 1, 3 and 5 with the
   softmax vectors the sample prints (shared/datasets/README.md), within 1e-6.
   Usage: test_mnistcudnn SHARED_DATASETS_DIR; skipped (77) when that folder is absent. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/check.h"
#include "../common/fixtures.h"
#include "ttapipe.h"

static const struct {
  const char* file;
  int digit;
  double probs[10];
} expected[] = {
    {"one_28x28.pgm", 1,
     {0.0000000, 0.9999399, 0.0000000, 0.0000000, 0.0000561, 0.0000000, 0.0000012, 0.0000017,
      0.0000010, 0.0000000}},
    {"three_28x28.pgm", 3,
     {0.0000000, 0.0000000, 0.0000000, 0.9999288, 0.0000000, 0.0000711, 0.0000000, 0.0000000,
      0.0000000, 0.0000000}},
    {"five_28x28.pgm", 5,
     {0.0000000, 0.0000008, 0.0000000, 0.0000002, 0.0000000, 0.9999820, 0.0000154, 0.0000000,
      0.0000012, 0.0000006}},
};

int main(int argc, char** argv) {
  CHECK(argc == 2, "usage: %s SHARED_DATASETS_DIR", argv[0]);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/mnistcudnn", argv[1]);
  struct stat st;
  if (stat(dir, &st) != 0) {
    printf("skipped: %s is absent\n", dir);
    return TEST_SKIP;
  }
  ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, NULL);
  uint8_t images[3 * 28 * 28];
  ttp_image_options io; /* the sample's pixels exactly: no inversion, no resizing */
  ttp_image_options_init(&io);
  io.invert = TTP_INVERT_NO;
  for (int i = 0; i < 3; i++) {
    char path[4200], error[TTP_ERROR_SIZE];
    snprintf(path, sizeof path, "%s/%s", dir, expected[i].file);
    CHECK(ttp_load_image(path, &io, 28, 28, images + i * 784, error, sizeof error) == TTP_OK,
          "%s", error);
  }
  ttp_result r[3];
  float probs[3 * 10];
  test_poison(probs, 30);
  CHECK(ttp_classify(p, images, 3, r, probs) == TTP_OK, "%s", ttp_last_error(p));
  size_t bad = 0;
  for (int i = 0; i < 3; i++) {
    CHECK(r[i].class_index == expected[i].digit, "%s classified as %d", expected[i].file,
          r[i].class_index);
    bad += test_compare(expected[i].file, probs + 10 * i, expected[i].probs, 10, 1e-6, 0);
    printf("%s -> %d:", expected[i].file, r[i].class_index);
    for (int k = 0; k < 10; k++) printf(" %.7f", probs[10 * i + k]);
    printf("\n");
  }
  CHECK(bad == 0, "%zu probabilities differ from the sample's", bad);
  ttp_close(p);
  return 0;
}
