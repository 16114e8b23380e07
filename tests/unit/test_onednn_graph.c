/* The onednn engine on graphs (model/model.h's layers in a DAG) against the reference (the cpu
   engine), through the host engines' interface (pipeline/engine.h): the residual, depthwise
   and squeeze-and-excitation, dense, option-A networks of tests/common/graphs.c and a zoo of
   every layer kind, each with random weights on odd sizes, with --tta 1's and --tta 5's
   policies, in batches of 1, 7 and 33 random images:
   - every merged probability within 1e-5 (absolute and relative) of the reference's;
   - an image's result the same bits in every batch (the engine plans a net for each size of
     tile, so each batch runs through other nets), on 1 and 2 threads, and run after run.
   Every output is poisoned (NaN) before each run.
   Usage: test_onednn_graph; exits 77 in a build without the onednn engine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "augment/tta.h"
#include "model/model.h"
#include "pipeline/engine.h"
#include "tests/common/check.h"
#include "tests/common/graphs.h"

#define ATOL 1e-5
#define RTOL 1e-5

enum { IMAGES = 33 };

/* Runs `count` images through a host engine opened on m: the merged probabilities into probs
   (poisoned first) and the results. */
static void run_engine(const char* what, const engine_entry* engine, const model* m,
                       const engine_config* c, const uint8_t* images, size_t count, float* probs,
                       ttp_result* results) {
  ttp_err e = {0};
  CHECK(engine_check_model(engine, m, c, &e) == TTP_OK, "%s: %s", what, e.message);
  void* state;
  CHECK(engine->host->open(m, c, &state, &e) == TTP_OK, "%s: %s", what, e.message);
  CHECK(strncmp(engine->host->describe(state), engine->name, strlen(engine->name)) == 0, "%s: %s",
        what, engine->host->describe(state));
  test_poison(probs, count * (size_t)m->classes);
  for (size_t i = 0; i < count; i++) results[i] = (ttp_result){-7, NAN, NAN};
  CHECK(engine->host->run(state, images, count, results, probs, NULL, &e) == TTP_OK, "%s: %s",
        what, e.message);
  engine->host->close(state);
}

/* Model m on both engines with `copies` copies an image: returns the largest difference of a
   probability. */
static double check_model(const char* name, const model* m, int copies, test_rng* rng) {
  const engine_entry* cpu = engine_find(TTP_ENGINE_CPU);
  const engine_entry* onednn = engine_find(TTP_ENGINE_ONEDNN);
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = copies;
  engine_config c = {.threads = 2, .max_batch = IMAGES};
  float temperature;
  ttp_err e = {0};
  CHECK(aug_spec_from(&tta, &c.spec, &c.merge, &temperature, &e) == TTP_OK, "%s", e.message);
  const size_t pixels = model_shape_size(m->input), classes = (size_t)m->classes;
  uint8_t* images = malloc(IMAGES * pixels);
  float* want = malloc(IMAGES * classes * sizeof *want);
  float* got = malloc(IMAGES * classes * sizeof *got);
  float* first = malloc(IMAGES * classes * sizeof *first);
  double* wanted = malloc(IMAGES * classes * sizeof *wanted);
  ttp_result* rw = malloc(IMAGES * sizeof *rw);
  ttp_result* rg = malloc(IMAGES * sizeof *rg);
  ttp_result* rfirst = malloc(IMAGES * sizeof *rfirst);
  CHECK(images && want && got && first && wanted && rw && rg && rfirst, "out of memory");
  for (size_t i = 0; i < IMAGES * pixels; i++) images[i] = (uint8_t)test_int(rng, 0, 255);
  char what[64 + 48];
  snprintf(what, sizeof what, "%.48s, %d cop%s", name, copies, copies == 1 ? "y" : "ies");
  run_engine(what, cpu, m, &c, images, IMAGES, want, rw);
  for (size_t i = 0; i < IMAGES * classes; i++) wanted[i] = want[i];

  static const size_t batches[] = {IMAGES, 1, 7, IMAGES};
  double worst = 0;
  for (int threads = 2; threads >= 1; threads--)
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++) {
      const size_t n = batches[b];
      c.threads = threads;
      char run[200];
      snprintf(run, sizeof run, "%s, %d thread%s, a batch of %zu", what, threads,
               threads == 1 ? "" : "s", n);
      run_engine(run, onednn, m, &c, images, n, got, rg);
      const size_t bad = test_compare(run, got, wanted, n * classes, ATOL, RTOL);
      CHECK(bad == 0, "%s: %zu probabilities off the reference", run, bad);
      for (size_t i = 0; i < n * classes; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
      for (size_t i = 0; i < n; i++)
        CHECK(rg[i].class_index >= 0 && rg[i].class_index < (int)classes, "%s: image %zu: class "
              "%d", run, i, rg[i].class_index);
      if (threads == 2 && b == 0) {
        memcpy(first, got, IMAGES * classes * sizeof *first);
        memcpy(rfirst, rg, IMAGES * sizeof *rfirst);
        continue;
      }
      CHECK(memcmp(got, first, n * classes * sizeof *got) == 0 &&
                memcmp(rg, rfirst, n * sizeof *rg) == 0,
            "%s: not the bits of the first batch of %d on 2 threads", run, IMAGES);
    }
  double spread = 0; /* the probabilities must vary, or the comparison says little */
  for (size_t i = 0; i < IMAGES * classes; i++) spread = fmax(spread, fabs(wanted[i] - wanted[0]));
  CHECK(spread > 0.01, "%s: every probability alike (%g)", what, spread);
  printf("%-40s %2d layers: max |dp| %.3g over %d images; the same bits in batches of 1, 7 and "
         "%d, on 1 and 2 threads\n", what, m->layer_count, worst, IMAGES, IMAGES);
  free(images), free(want), free(got), free(first), free(wanted), free(rw), free(rg), free(rfirst);
  return worst;
}

int main(void) {
  const engine_entry* onednn = engine_find(TTP_ENGINE_ONEDNN);
  if (!onednn || !onednn->supports) {
    printf("skipped: this build has no onednn engine\n");
    return TEST_SKIP;
  }
  CHECK(onednn->graphs, "the onednn engine's entry says it runs chains alone");
  test_rng rng = {4242};
  model* models[GRAPHS_COUNT];
  char names[GRAPHS_COUNT][48];
  graphs_every(3, &rng, models, names);
  double worst = 0;
  for (int k = 0; k < GRAPHS_COUNT; k++) {
    for (int copies = 1; copies <= 5; copies += 4)
      worst = fmax(worst, check_model(names[k], models[k], copies, &rng));
    model_free(models[k]);
  }
  printf("onednn graphs: within %g of the reference everywhere (max |dp| %.3g)\n", ATOL, worst);
  return 0;
}
