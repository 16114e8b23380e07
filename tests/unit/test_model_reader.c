/* The mnistCUDNN model directory reader on generated good and bad directories: the weights read
   back bit for bit; every missing, short, long, empty or non-finite file and every bad labels.txt
   is refused with one line that names the file (and, for sizes, the expected and actual sizes);
   the same errors reach callers of the public ttp_open. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/fixtures.h"
#include "model/mnistcudnn.h"
#include "ttapipe.h"

enum { SEED = 7 };

/* A fresh model directory with good files, to be spoiled by one test. */
static char* good_dir(void) {
  char* dir = test_make_dir();
  fixture_model_dir(dir, SEED);
  return strdup(dir);
}

static void spoil(const char* dir, const char* name, const void* data, size_t size) {
  test_write_file(test_path(dir, name), data, size);
}

/* Loading must fail with the status; the message holds every fragment. Checked both inside
   (io_load_mnistcudnn) and through the public API (ttp_open). */
static void expect_refused(const char* dir, ttp_status status, const char* f1, const char* f2,
                           const char* f3) {
  ttp_err e = {0};
  model* m = (model*)1;
  CHECK(io_load_mnistcudnn(dir, &m, &e) == status, "want %s, got %d: %s",
        ttp_status_string(status), e.status, e.message);
  CHECK(m == NULL, "a model was returned with an error");
  EXPECT_MESSAGE(e.message, f1, f2, f3);
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir;
  o.threads = 1;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == status, "ttp_open: want %s", ttp_status_string(status));
  CHECK(p && strcmp(ttp_last_error(p), e.message) == 0, "ttp_open said \"%s\"",
        ttp_last_error(p));
  CHECK(ttp_model(p) == NULL && ttp_layer(p, 0) == NULL && ttp_class_label(p, 0) == NULL,
        "a failed pipeline describes a model");
  ttp_close(p);
}

static void test_good(void) {
  char* dir = good_dir();
  ttp_err e = {0};
  model* m;
  CHECK(io_load_mnistcudnn(dir, &m, &e) == TTP_OK, "%s", e.message);
  CHECK(m->layer_count == 9 && m->classes == 10 && !m->labels, "the sample's network");
  /* Each file's floats land in the right layer, bit for bit. */
  const float* loaded[FIXTURE_MODEL_FILES] = {
      m->layers[0].weights, m->layers[0].bias, m->layers[2].weights, m->layers[2].bias,
      m->layers[4].weights, m->layers[4].bias, m->layers[7].weights, m->layers[7].bias};
  for (int i = 0; i < FIXTURE_MODEL_FILES; i++) {
    size_t n = fixture_model_files[i].floats;
    float* want = malloc(n * sizeof *want);
    fixture_weights(SEED, i, want);
    CHECK(memcmp(loaded[i], want, n * sizeof *want) == 0, "%s read wrongly",
          fixture_model_files[i].name);
    free(want);
  }
  model_free(m);

  /* labels.txt: CRLF line ends and a missing final newline are fine. */
  const char* labels = "zero\r\none\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\neight\r\nnine, \"9\"";
  spoil(dir, "labels.txt", labels, strlen(labels));
  CHECK(io_load_mnistcudnn(dir, &m, &e) == TTP_OK, "%s", e.message);
  CHECK(m->labels && strcmp(m->labels[0], "zero") == 0 && strcmp(m->labels[9], "nine, \"9\"") == 0,
        "labels read wrongly");
  model_free(m);
  test_remove_tree(dir);
  free(dir);
}

static void test_sizes(void) {
  for (int i = 0; i < FIXTURE_MODEL_FILES; i++) {
    const char* name = fixture_model_files[i].name;
    size_t bytes = fixture_model_files[i].floats * 4;
    char expected[32], found[48];
    snprintf(expected, sizeof expected, "expected %zu bytes", bytes);
    uint8_t* data = calloc(bytes + 4, 1);
    for (size_t j = 0; j < bytes + 4; j++) data[j] = (uint8_t)(j * 7 + 1) & 0x3f; /* small floats */

    char* dir = good_dir();
    unlink(test_path(dir, name));
    expect_refused(dir, TTP_ERR_IO, name, "cannot open", "No such file");
    test_remove_tree(dir), free(dir);

    size_t sizes[3] = {bytes - 1, bytes + 4, 0}; /* short, over-long, empty */
    for (int k = 0; k < 3; k++) {
      dir = good_dir();
      spoil(dir, name, data, sizes[k]);
      snprintf(found, sizeof found, "found %zu", sizes[k]);
      expect_refused(dir, TTP_ERR_FORMAT, name, expected, found);
      test_remove_tree(dir), free(dir);
    }

    dir = good_dir();
    mkdir(test_path(dir, "x"), 0755); /* a directory where the file should be */
    unlink(test_path(dir, name));
    char from[4096];
    snprintf(from, sizeof from, "%s", test_path(dir, "x"));
    rename(from, test_path(dir, name));
    expect_refused(dir, TTP_ERR_IO, name, "is a directory", "");
    test_remove_tree(dir), free(dir);
    free(data);
  }
}

static void test_values(void) {
  /* NaN, +Inf and -Inf at a random place of a random file. */
  test_rng rng = {99};
  const float bad[3] = {NAN, INFINITY, -INFINITY};
  const char* words[3] = {"NaN", "infinite", "infinite"};
  for (int k = 0; k < 3; k++) {
    int i = test_int(&rng, 0, FIXTURE_MODEL_FILES - 1);
    size_t n = fixture_model_files[i].floats, at = (size_t)test_int(&rng, 0, (int)n - 1);
    float* w = malloc(n * sizeof *w);
    fixture_weights(SEED, i, w);
    w[at] = bad[k];
    char* dir = good_dir();
    spoil(dir, fixture_model_files[i].name, w, n * sizeof *w); /* the test host is little-endian */
    char where[32];
    snprintf(where, sizeof where, "value %zu is", at);
    expect_refused(dir, TTP_ERR_FORMAT, fixture_model_files[i].name, where, words[k]);
    test_remove_tree(dir), free(dir), free(w);
  }
}

static void test_labels(void) {
  static const struct {
    const char* text;
    const char* fragment;
  } cases[] = {
      {"0\n1\n2\n3\n4\n5\n6\n7\n8\n", "9 names for the model's 10 classes"},
      {"0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "more than 10 lines"},
      {"0\n1\n\n3\n4\n5\n6\n7\n8\n9\n", "line 3 is empty"},
      {"0\n1\n2\n3\n4\n5\n6\x01\n7\n8\n9\n", "line 7: control character 0x01"},
      {"", "0 names for the model's 10 classes"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char* dir = good_dir();
    spoil(dir, "labels.txt", cases[i].text, strlen(cases[i].text));
    expect_refused(dir, TTP_ERR_FORMAT, "labels.txt", cases[i].fragment, "");
    test_remove_tree(dir), free(dir);
  }
  char* dir = good_dir();
  mkdir(test_path(dir, "labels.txt"), 0755);
  expect_refused(dir, TTP_ERR_IO, "labels.txt", "is a directory", "");
  test_remove_tree(dir), free(dir);
}

int main(void) {
  test_good();
  test_sizes();
  test_values();
  test_labels();
  expect_refused("/nonexistent/ttapipe-model", TTP_ERR_IO, "/nonexistent/ttapipe-model/conv1.bin",
                 "cannot open", "");
  printf("model reader: good directories load, every bad one refused with its file named\n");
  return 0;
}
