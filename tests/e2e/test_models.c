/* The shipped models against datasets/train.py's own evaluation (each model's reference.csv):
   ttapipe's CPU engine, no TTA, gets the same number of held-out images right, and the softmax
   outputs of the listed images within 1e-5; and the accuracies clear the bars the models are
   shipped with (lenet-mnist >= 98.8% on MNIST test images 8000..9999, lenet-fashion >= 91.5% on
   the 10,000 Fashion-MNIST test images). A model whose data is absent is skipped, and the test
   with it when none can run.
   Usage: test_models MODELS_DIR MNIST_DIR FASHION_DIR */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { CLASSES = 10 };

/* Returns 1 if it ran, 0 if its data is absent. */
static int check_model(const char* models, const char* name, const char* data, double bar) {
  char dir[2048], path[2300], error[TTP_ERROR_SIZE];
  snprintf(dir, sizeof dir, "%s/%s", models, name);
  snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", data);
  struct stat st;
  if (stat(path, &st) != 0) {
    printf("%s: skipped, no data at %s\n", name, data);
    return 0;
  }
  ttp_images im;
  uint8_t* labels;
  size_t count;
  CHECK(ttp_read_idx_images(path, &im, error, sizeof error) == TTP_OK, "%s", error);
  snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", data);
  CHECK(ttp_read_idx_labels(path, &labels, &count, error, sizeof error) == TTP_OK, "%s", error);

  snprintf(path, sizeof path, "%s/reference.csv", dir);
  FILE* f = fopen(path, "r");
  CHECK(f, "cannot open %s", path);
  char line[4096];
  size_t first = 0, end = 0, correct = 0;
  while (fgets(line, sizeof line, f) && (line[0] == '#' || !first))
    if (sscanf(line, "accuracy,t10k,%zu,%zu,%zu", &first, &end, &correct) == 3) break;
  CHECK(end > first && end <= im.count, "%s: no accuracy line", path);

  ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, NULL);
  size_t n = end - first;
  ttp_result* results = malloc(n * sizeof *results);
  float* probs = malloc(n * CLASSES * sizeof *probs);
  test_poison(probs, n * CLASSES);
  CHECK(ttp_classify(p, im.pixels + first * 784, n, results, probs) == TTP_OK, "%s",
        ttp_last_error(p));
  size_t right = 0;
  for (size_t i = 0; i < n; i++) right += results[i].class_index == labels[first + i];

  size_t rows = 0, bad = 0;
  while (fgets(line, sizeof line, f)) {
    size_t index;
    double want[CLASSES];
    char* s = line;
    CHECK(sscanf(s, "%zu", &index) == 1 && index >= first && index < end, "%s: bad row", path);
    for (int k = 0; k < CLASSES; k++) {
      s = strchr(s, ',');
      CHECK(s, "%s: short row", path);
      want[k] = strtod(++s, NULL);
    }
    char what[64];
    snprintf(what, sizeof what, "%s image %zu", name, index);
    bad += test_compare(what, probs + (index - first) * CLASSES, want, CLASSES, 1e-5, 0);
    rows++;
  }
  fclose(f);
  double accuracy = 100.0 * right / n;
  printf("%s: %zu of %zu right (%.2f%%), train.py %zu; %zu reference rows, %zu values off\n", name,
         right, n, accuracy, correct, rows, bad);
  CHECK(right == correct, "%s: ttapipe gets %zu right, train.py %zu", name, right, correct);
  CHECK(rows > 0 && bad == 0, "%s: probabilities differ from train.py's", name);
  CHECK(accuracy >= bar, "%s: %.2f%% is below %.1f%%", name, accuracy, bar);
  ttp_close(p);
  free(results), free(probs), ttp_free(im.pixels), ttp_free(labels);
  return 1;
}

int main(int argc, char** argv) {
  CHECK(argc == 4, "usage: %s MODELS_DIR MNIST_DIR FASHION_DIR", argv[0]);
  int ran = check_model(argv[1], "lenet-mnist", argv[2], 98.8) +
            check_model(argv[1], "lenet-fashion", argv[3], 91.5);
  return ran ? 0 : TEST_SKIP;
}
