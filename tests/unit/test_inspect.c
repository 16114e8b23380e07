/* ttp_inspect_copies (what the eval report shows of test-time augmentation), on the CPU engine
   and a generated model, for 7 random images, 5 copies, and with the input scaling:
   - copy 0 is the image itself, byte for byte; the other copies differ from it;
   - each copy's probabilities are a softmax (positive, summing to 1 within 1e-5);
   - merged with `mean` (their average, its argmax) they give ttp_classify's class, and that
     average equals ttp_classify's merged probabilities within 1e-6;
   - with one copy, copy 0's probabilities equal ttp_classify's bit for bit;
   - outputs are poisoned first; NULL pixels is allowed, NULL image or probabilities refused.
   The GPU engines' pipelines take the same path (the reference), so the CPU test covers them. */
#include <math.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { PIXELS = 784, CLASSES = 10, IMAGES = 7, COPIES = 5 };

int main(void) {
  const char* dir = test_make_dir();
  fixture_model_dir(dir, 47);
  test_rng rng = {47};
  uint8_t images[IMAGES * PIXELS];
  for (size_t i = 0; i < sizeof images; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  for (int scaled = 0; scaled < 2; scaled++) {
    ttp_tta tta;
    ttp_tta_init(&tta);
    tta.copies = COPIES;
    ttp_options o;
    ttp_options_init(&o);
    o.model_dir = dir, o.engine = TTP_ENGINE_CPU, o.tta = &tta, o.threads = 2;
    for (int c = 0; scaled && c < 3; c++) o.normalize = 1, o.mean[c] = 0.1307f, o.std[c] = 0.3081f;
    ttp_pipeline* p = NULL;
    CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
    ttp_result results[IMAGES];
    float merged[IMAGES * CLASSES];
    CHECK(ttp_classify(p, images, IMAGES, results, merged) == TTP_OK, "%s", ttp_last_error(p));
    for (int i = 0; i < IMAGES; i++) {
      uint8_t copies[COPIES * PIXELS];
      float probs[COPIES * CLASSES];
      memset(copies, 0xa5, sizeof copies);
      test_poison(probs, COPIES * CLASSES);
      CHECK(ttp_inspect_copies(p, images + i * PIXELS, copies, probs) == TTP_OK, "%s",
            ttp_last_error(p));
      CHECK(memcmp(copies, images + i * PIXELS, PIXELS) == 0, "image %d: copy 0 is not the image", i);
      for (int c = 1; c < COPIES; c++)
        CHECK(memcmp(copies + c * PIXELS, images + i * PIXELS, PIXELS) != 0,
              "image %d: copy %d is the image", i, c);
      double mean[CLASSES] = {0};
      for (int c = 0; c < COPIES; c++) {
        double sum = 0;
        for (int k = 0; k < CLASSES; k++) {
          const float v = probs[c * CLASSES + k];
          CHECK(v > 0 && v <= 1, "image %d copy %d class %d: %g", i, c, k, v);
          sum += v;
          mean[k] += v / COPIES;
        }
        CHECK(fabs(sum - 1) < 1e-5, "image %d copy %d: probabilities sum to %.8f", i, c, sum);
      }
      int best = 0;
      for (int k = 0; k < CLASSES; k++) {
        CHECK(fabs(mean[k] - merged[i * CLASSES + k]) < 1e-6, "image %d class %d: mean %.8f, "
              "ttp_classify %.8f", i, k, mean[k], merged[i * CLASSES + k]);
        if (mean[k] > mean[best]) best = k;
      }
      CHECK(best == results[i].class_index, "image %d: class %d from the copies, %d merged", i,
            best, results[i].class_index);
      test_poison(probs, CLASSES);
      CHECK(ttp_inspect_copies(p, images + i * PIXELS, NULL, probs) == TTP_OK, "no pixels");
      CHECK(!isnan(probs[0]), "probabilities not written without pixels");
    }
    CHECK(ttp_inspect_copies(p, NULL, NULL, (float[COPIES * CLASSES]){0}) ==
          TTP_ERR_INVALID_ARGUMENT, "no image");
    CHECK(ttp_inspect_copies(p, images, NULL, NULL) == TTP_ERR_INVALID_ARGUMENT, "no output");
    EXPECT_MESSAGE(ttp_last_error(p), "ttp_inspect_copies");
    ttp_close(p);
  }
  /* One copy: copy 0 through the reference is ttp_classify's own computation. */
  ttp_tta one;
  ttp_tta_init(&one);
  ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, &one);
  ttp_result results[IMAGES];
  float merged[IMAGES * CLASSES], probs[CLASSES];
  CHECK(ttp_classify(p, images, IMAGES, results, merged) == TTP_OK, "%s", ttp_last_error(p));
  for (int i = 0; i < IMAGES; i++) {
    CHECK(ttp_inspect_copies(p, images + i * PIXELS, NULL, probs) == TTP_OK, "%s",
          ttp_last_error(p));
    CHECK(memcmp(probs, merged + i * CLASSES, sizeof probs) == 0, "image %d: one copy differs", i);
  }
  ttp_close(p);
  test_remove_tree(dir);
  printf("test_inspect: copies and their probabilities agree with ttp_classify\n");
  return 0;
}
