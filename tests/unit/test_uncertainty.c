/* ttp_classify_uncertainty and the TTA temperature, on the CPU engine and a generated model, for
   19 random images (7 in the sanitized build, TEST_FULL 0), one and 5 copies, the mean, vote and gmean merges, temperatures 1, 2.5 and
   0.4; every output poisoned first:
   - results and probabilities equal ttp_classify's bit for bit (with and without
     probabilities asked for, the uncertainty the same);
   - the entropy is that of the probabilities handed out (double, within 1e-5);
   - the mutual information and the agreement equal an independent computation from each copy's
     own softmax (ttp_inspect_copies): H(mean of copies) - mean H(copy) within 2e-5, and the
     share of copies whose most probable class is the result's, exactly;
   - a temperature T: each merged vector is T = 1's raised to 1/T and normalised (within 1e-6),
     the class and the spread the same bits, the probability the class's new value (the
     sanitized build, TEST_FULL 0, leaves out T = 0.4: 12 pipelines opened instead of 18);
   - refusals: no uncertainty array; a temperature out of 0.01..100;
   - the files path: during ttp_classify_files' callback, ttp_file_uncertainty gives each of 29
     PNG files (11 in the sanitized build) the bits ttp_classify_uncertainty gives its decoded pixels (5 copies, T = 2.5),
     NULL for a missing file and outside the callback; the writer's uncertainty columns (CSV
     and JSON Lines) hold those values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { PIXELS = 784, CLASSES = 10, IMAGES = TEST_FULL ? 19 : 7, MOST_COPIES = 5 };

static double entropy(const float* p, int n) {
  double h = 0;
  for (int k = 0; k < n; k++)
    if (p[k] > 0) h -= p[k] * log(p[k]);
  return h;
}

static int argmax(const float* p, int n) {
  int best = 0;
  for (int k = 1; k < n; k++)
    if (p[k] > p[best]) best = k;
  return best;
}

enum { FILES = TEST_FULL ? 30 : 12 };

typedef struct seen {
  const ttp_pipeline* p;
  ttp_uncertainty u[FILES];
  int null[FILES];
  ttp_writer* csv;
  ttp_writer* jsonl;
} seen;

static void on_file(void* user, size_t index, const char* path, const ttp_result* result,
                    const float* probabilities, const char* error) {
  seen* s = user;
  const ttp_uncertainty* u = ttp_file_uncertainty(s->p);
  s->null[index] = u == NULL;
  if (u) s->u[index] = *u;
  CHECK(ttp_writer_write_uncertainty(s->csv, path, result, probabilities, u, error) == TTP_OK &&
            ttp_writer_write_uncertainty(s->jsonl, path, result, probabilities, u, error) ==
                TTP_OK, "writing a row");
}

/* The files path and the writer against ttp_classify_uncertainty. */
static void files_path(const char* dir, test_rng* rng) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5, tta.temperature = 2.5f;
  ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, &tta);
  char* paths[FILES];
  static uint8_t pixels[FILES * PIXELS];
  ttp_image_options io;
  ttp_image_options_init(&io);
  for (int i = 0; i < FILES; i++) {
    char name[32];
    snprintf(name, sizeof name, "f%02d.png", i);
    paths[i] = strdup(test_path(dir, name));
    if (i == FILES - 1) break; /* missing */
    uint8_t px[PIXELS];
    for (int k = 0; k < PIXELS; k++) px[k] = (uint8_t)test_int(rng, 0, 255);
    fixture_png(paths[i], 28, 28, 1, px);
    char error[TTP_ERROR_SIZE];
    CHECK(ttp_load_image(paths[i], &io, 28, 28, pixels + i * PIXELS, error, sizeof error) ==
          TTP_OK, "%s", error);
  }
  seen s = {.p = p};
  char *csv = NULL, *jsonl = NULL;
  size_t csv_n = 0, jsonl_n = 0;
  FILE* fc = open_memstream(&csv, &csv_n);
  FILE* fj = open_memstream(&jsonl, &jsonl_n);
  const int columns = TTP_WRITE_PROBABILITIES | TTP_WRITE_UNCERTAINTY;
  CHECK(ttp_writer_open(p, fc, TTP_FORMAT_CSV, 1, columns, &s.csv, NULL, 0) == TTP_OK &&
            ttp_writer_open(p, fj, TTP_FORMAT_JSONL, 1, TTP_WRITE_UNCERTAINTY, &s.jsonl, NULL, 0) ==
                TTP_OK, "writers");
  for (int i = 0; i < FILES; i++) test_poison(&s.u[i].entropy, 3);
  CHECK(ttp_file_uncertainty(p) == NULL, "an uncertainty outside a callback");
  CHECK(ttp_classify_files(p, (const char* const*)paths, FILES, &io, 3, on_file, &s, NULL) ==
        TTP_OK, "%s", ttp_last_error(p));
  CHECK(ttp_file_uncertainty(p) == NULL, "an uncertainty after the call");
  ttp_writer_close(s.csv), ttp_writer_close(s.jsonl);
  fclose(fc), fclose(fj);
  ttp_result results[FILES - 1];
  ttp_uncertainty want[FILES - 1];
  CHECK(ttp_classify_uncertainty(p, pixels, FILES - 1, results, NULL, want) == TTP_OK, "%s",
        ttp_last_error(p));
  CHECK(s.null[FILES - 1], "the missing file has an uncertainty");
  const char* row = strchr(csv, '\n') + 1;
  CHECK(strstr(csv, ",p_9,entropy,mutual_information,agreement\n") == row - 42, "CSV header: %.200s",
        csv);
  for (int i = 0; i < FILES - 1; i++) {
    CHECK(!s.null[i] && memcmp(&s.u[i], &want[i], sizeof want[i]) == 0, "file %d: %g %g %g, "
          "not ttp_classify_uncertainty's %g %g %g", i, s.u[i].entropy,
          s.u[i].mutual_information, s.u[i].agreement, want[i].entropy,
          want[i].mutual_information, want[i].agreement);
    char tail[128];
    snprintf(tail, sizeof tail, ",%.7f,%.7f,%.7f\n", want[i].entropy, want[i].mutual_information,
             want[i].agreement);
    const char* end = strchr(row, '\n') + 1;
    CHECK((size_t)(end - row) > strlen(tail) && memcmp(end - strlen(tail), tail, strlen(tail)) == 0,
          "file %d's CSV row: %.*s", i, (int)(end - row), row);
    row = end;
  }
  CHECK(strstr(row, ",,,\n") && strstr(jsonl, "\"entropy\":null,\"mutual_information\":null,"
                                                 "\"agreement\":null}"), "the missing file's fields");
  char first[160];
  snprintf(first, sizeof first, "\"entropy\":%.9g,\"mutual_information\":%.9g,\"agreement\":%.9g}",
           want[0].entropy, want[0].mutual_information, want[0].agreement);
  CHECK(strstr(jsonl, first), "JSON Lines: no %s in %.300s", first, jsonl);
  for (int i = 0; i < FILES; i++) free(paths[i]);
  free(csv), free(jsonl);
  ttp_close(p);
}

int main(void) {
  const char* dir = test_make_dir();
  fixture_model_dir(dir, 59);
  test_rng rng = {59};
  static uint8_t images[IMAGES * PIXELS];
  for (size_t i = 0; i < sizeof images; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  static const ttp_merge merges[] = {TTP_MERGE_MEAN, TTP_MERGE_VOTE, TTP_MERGE_GMEAN};
  static const float temperatures[] = {1.0f, 2.5f, 0.4f};
  int checked = 0;
  for (int copies = 1; copies <= MOST_COPIES; copies += MOST_COPIES - 1)
    for (int m = 0; m < 3; m++) {
      ttp_result at_one[IMAGES];
      float merged_one[IMAGES * CLASSES];
      for (int t = 0; t < (TEST_FULL ? 3 : 2); t++) {
        ttp_tta tta;
        ttp_tta_init(&tta);
        tta.copies = copies, tta.merge = merges[m], tta.temperature = temperatures[t];
        ttp_pipeline* p = fixture_open(dir, TTP_ENGINE_CPU, &tta);
        ttp_result plain[IMAGES], results[IMAGES], bare[IMAGES];
        float merged[IMAGES * CLASSES], probs[IMAGES * CLASSES];
        ttp_uncertainty u[IMAGES], u_bare[IMAGES];
        test_poison(merged, IMAGES * CLASSES), test_poison(probs, IMAGES * CLASSES);
        test_poison(&u[0].entropy, 3 * IMAGES), test_poison(&u_bare[0].entropy, 3 * IMAGES);
        memset(results, 0xa5, sizeof results), memset(bare, 0xa5, sizeof bare);
        CHECK(ttp_classify(p, images, IMAGES, plain, merged) == TTP_OK, "%s", ttp_last_error(p));
        CHECK(ttp_classify_uncertainty(p, images, IMAGES, results, probs, u) == TTP_OK, "%s",
              ttp_last_error(p));
        CHECK(ttp_classify_uncertainty(p, images, IMAGES, bare, NULL, u_bare) == TTP_OK, "%s",
              ttp_last_error(p));
        CHECK(memcmp(plain, results, sizeof plain) == 0 && memcmp(plain, bare, sizeof bare) == 0 &&
                  memcmp(merged, probs, sizeof probs) == 0,
              "copies %d merge %d T %g: results differ from ttp_classify's", copies, m,
              temperatures[t]);
        CHECK(memcmp(u, u_bare, sizeof u) == 0, "uncertainty differs without probabilities");
        for (int i = 0; i < IMAGES; i++) {
          const float* q = probs + i * CLASSES;
          CHECK(fabs(u[i].entropy - entropy(q, CLASSES)) < 1e-5, "image %d: entropy %.7f, "
                "not %.7f", i, u[i].entropy, entropy(q, CLASSES));
          float own[MOST_COPIES * CLASSES];
          test_poison(own, MOST_COPIES * CLASSES);
          CHECK(ttp_inspect_copies(p, images + i * PIXELS, NULL, own) == TTP_OK, "%s",
                ttp_last_error(p));
          float mean[CLASSES];
          double mean_of = 0;
          int agree = 0;
          for (int k = 0; k < CLASSES; k++) {
            double sum = 0;
            for (int c = 0; c < copies; c++) sum += own[c * CLASSES + k];
            mean[k] = (float)(sum / copies);
          }
          for (int c = 0; c < copies; c++) {
            mean_of += entropy(own + c * CLASSES, CLASSES) / copies;
            agree += argmax(own + c * CLASSES, CLASSES) == results[i].class_index;
          }
          const double mi = copies > 1 ? fmax(entropy(mean, CLASSES) - mean_of, 0) : 0;
          CHECK(fabs(u[i].mutual_information - mi) < 2e-5, "image %d, %d copies: mutual "
                "information %.7f, not %.7f", i, copies, u[i].mutual_information, mi);
          CHECK(u[i].agreement == (float)agree / copies, "image %d: agreement %g, not %d of %d",
                i, u[i].agreement, agree, copies);
          if (t == 0) continue;
          /* The temperature against T = 1's vectors. */
          double w[CLASSES], sum = 0;
          for (int k = 0; k < CLASSES; k++)
            sum += w[k] = pow(merged_one[i * CLASSES + k], 1.0 / temperatures[t]);
          for (int k = 0; k < CLASSES; k++)
            CHECK(fabs(q[k] - w[k] / sum) < 1e-6, "image %d class %d at T %g: %.8f, not %.8f", i,
                  k, temperatures[t], q[k], w[k] / sum);
          CHECK(results[i].class_index == at_one[i].class_index &&
                    results[i].spread == at_one[i].spread &&
                    results[i].probability == q[results[i].class_index],
                "image %d at T %g: class, spread or probability", i, temperatures[t]);
          checked++;
        }
        if (t == 0) memcpy(at_one, results, sizeof at_one), memcpy(merged_one, probs, sizeof probs);
        CHECK(ttp_classify_uncertainty(p, images, IMAGES, results, NULL, NULL) ==
                  TTP_ERR_INVALID_ARGUMENT, "no uncertainty array accepted");
        EXPECT_MESSAGE(ttp_last_error(p), "uncertainty");
        ttp_close(p);
      }
    }
  CHECK(checked == 2 * 3 * (TEST_FULL ? 2 : 1) * IMAGES, "%d tempered images checked", checked);
  /* Out of range. */
  for (int k = 0; k < 2; k++) {
    ttp_tta tta;
    ttp_tta_init(&tta);
    tta.temperature = k ? 100.5f : 0.005f;
    ttp_options o;
    ttp_options_init(&o);
    o.model_dir = dir, o.engine = TTP_ENGINE_CPU, o.tta = &tta;
    ttp_pipeline* p = NULL;
    CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "temperature %g accepted", tta.temperature);
    EXPECT_MESSAGE(ttp_last_error(p), "temperature");
    ttp_close(p);
  }
  files_path(dir, &rng);
  test_remove_tree(dir);
  printf("test_uncertainty: entropy, mutual information, agreement and temperatures agree with "
         "their definitions over %d images\n", checked);
  return 0;
}
