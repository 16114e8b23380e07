/* The shipped models against their training script's own evaluation (each model's
   reference.csv, by datasets/train.py or train_resnet.py): ttapipe's CPU engine, no TTA, gives
   the softmax outputs of the listed images within 1e-5; and, in the optimised build
   (TEST_FULL), gets the same number of held-out images right as the script, above the bars the
   models are shipped with (lenet-mnist >= 98.8% on MNIST test images 8000..9999, lenet-fashion
   >= 91.5% and resnet-fashion >= 94.0% on the 10,000 Fashion-MNIST test images). The ResNet's
   whole count runs on the onednn engine (the CPU reference takes minutes), skipped where it is
   not built. A model whose data is absent is skipped, and the test with it when none can run.
   Usage: test_models MODELS_DIR MNIST_DIR FASHION_DIR */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { CLASSES = 10 };

typedef struct reference_row {
  size_t index;
  double want[CLASSES];
} reference_row;

/* Reads reference.csv: its accuracy line (the held-out range [*first, *end) and train.py's
   count right) and its rows of listed probabilities; returns the rows. */
static reference_row* read_reference(const char* path, size_t* first, size_t* end, size_t* correct,
                                     size_t* count) {
  FILE* f = fopen(path, "r");
  CHECK(f, "cannot open %s", path);
  char line[4096];
  *first = *end = *correct = 0;
  while (fgets(line, sizeof line, f) && (line[0] == '#' || !*first))
    if (sscanf(line, "accuracy,t10k,%zu,%zu,%zu", first, end, correct) == 3) break;
  CHECK(*end > *first, "%s: no accuracy line", path);
  size_t rows = 0, capacity = 128;
  reference_row* r = malloc(capacity * sizeof *r);
  CHECK(r, "out of memory");
  while (fgets(line, sizeof line, f)) {
    if (rows == capacity) CHECK((r = realloc(r, (capacity *= 2) * sizeof *r)), "out of memory");
    char* s = line;
    CHECK(sscanf(s, "%zu", &r[rows].index) == 1 && r[rows].index >= *first &&
              r[rows].index < *end, "%s: bad row", path);
    for (int k = 0; k < CLASSES; k++) {
      s = strchr(s, ',');
      CHECK(s, "%s: short row", path);
      r[rows].want[k] = strtod(++s, NULL);
    }
    rows++;
  }
  fclose(f);
  CHECK(rows > 0, "%s: no reference rows", path);
  *count = rows;
  return r;
}

/* Returns 1 if it ran, 0 if its data is absent. */
static int check_model(const char* models, const char* name, const char* data, double bar,
                       ttp_engine whole) {
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
  size_t first, end, correct, rows;
  reference_row* ref = read_reference(path, &first, &end, &correct, &rows);
  CHECK(end <= im.count, "%s: range %zu..%zu beyond the %zu images", path, first, end, im.count);
  ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, NULL);

  /* The listed images, gathered into one request: their probabilities within 1e-5. */
  uint8_t* listed = malloc(rows * 784);
  for (size_t i = 0; i < rows; i++) memcpy(listed + i * 784, im.pixels + ref[i].index * 784, 784);
  ttp_result* results = malloc(rows * sizeof *results);
  float* probs = malloc(rows * CLASSES * sizeof *probs);
  test_poison(probs, rows * CLASSES);
  CHECK(ttp_classify(p, listed, rows, results, probs) == TTP_OK, "%s", ttp_last_error(p));
  size_t bad = 0;
  for (size_t i = 0; i < rows; i++) {
    char what[64];
    snprintf(what, sizeof what, "%s image %zu", name, ref[i].index);
    bad += test_compare(what, probs + i * CLASSES, ref[i].want, CLASSES, 1e-5, 0);
  }
  printf("%s: %zu reference rows, %zu values off\n", name, rows, bad);
  CHECK(bad == 0, "%s: probabilities differ from train.py's", name);
  free(results), free(probs), free(listed);

  /* The whole held-out range: the same count right as train.py, above the shipping bar. */
  ttp_pipeline* q = whole == TTP_ENGINE_CPU ? p : fixture_open_if_built(dir, whole, NULL);
  if (TEST_FULL && !q) {
    printf("%s: the accuracy over %zu images is checked with the onednn engine, not built\n",
           name, end - first);
  } else if (TEST_FULL) {
    size_t n = end - first, right = 0;
    results = malloc(n * sizeof *results);
    memset(results, 0xff, n * sizeof *results);
    CHECK(ttp_classify(q, im.pixels + first * 784, n, results, NULL) == TTP_OK, "%s",
          ttp_last_error(q));
    for (size_t i = 0; i < n; i++) right += results[i].class_index == labels[first + i];
    double accuracy = 100.0 * right / n;
    printf("%s: %zu of %zu right (%.2f%%), train.py %zu\n", name, right, n, accuracy, correct);
    CHECK(right == correct, "%s: ttapipe gets %zu right, train.py %zu", name, right, correct);
    CHECK(accuracy >= bar, "%s: %.2f%% is below %.1f%%", name, accuracy, bar);
    free(results);
  } else {
    printf("%s: the accuracy over %zu images is checked in the optimised build\n", name,
           end - first);
  }
  if (q && q != p) ttp_close(q);
  ttp_close(p);
  free(ref), ttp_free(im.pixels), ttp_free(labels);
  return 1;
}

int main(int argc, char** argv) {
  CHECK(argc == 4, "usage: %s MODELS_DIR MNIST_DIR FASHION_DIR", argv[0]);
  int ran = check_model(argv[1], "lenet-mnist", argv[2], 98.8, TTP_ENGINE_CPU) +
            check_model(argv[1], "lenet-fashion", argv[3], 91.5, TTP_ENGINE_CPU) +
            check_model(argv[1], "resnet-fashion", argv[3], 94.0, TTP_ENGINE_ONEDNN);
  return ran ? 0 : TEST_SKIP;
}
