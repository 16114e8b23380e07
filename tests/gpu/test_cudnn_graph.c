/* The cudnn engine on graphs (model/model.h's layers in a DAG) against the reference (the cpu
   engine), both through the streaming core (pipeline/stream.h) as ttp_open drives them: the
   residual, depthwise and squeeze-and-excitation, dense and option-A networks of
   tests/common/graphs.c, a zoo of every layer kind, a network of NHWC widths whose
   depthwise layers must run on ttapipe's kernel in fp16, and residual blocks whose pairs of
   convolutions must run as ttapipe's residual block kernel in fp16 (graphs_blocks: at 16 and 32
   channels, with and without the shortcut, on the map sizes that kernel is built for), inverted
   residual blocks that must run as ttapipe's inverted residual kernel in fp16 (graphs_inverted:
   the three shapes it is built for, with and without the Add, one at a depthwise stride of 2),
   each with random weights on odd sizes,
   with --tta 1's and --tta 5's policies, on 33 random images:
   - every merged probability within 1e-4 (fp32) or 1e-2 (fp16, tf32: 10 bits of mantissa) of
     the reference's, and the same class wherever the reference's top two differ by more than
     that;
   - the same bits through CUDA Graphs and through eager launches at every batch size; in fp32
     also the same bits in batches of 33, 7 and 1 (other buckets, other graphs). On the tensor
     cores (fp16, tf32) cuDNN's convolutions may round differently at another batch size (seen
     on the residual network in fp16), so there each batch size is held to the tolerance alone.
   - the inverted blocks' network in fp16: the same bits with the inverted kernel as with its
     convolutions run apart (TTP_CONV_BLOCKS=0).
   Every output is poisoned (NaN) before each run.
   Usage: test_cudnn_graph; exits 77 without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "augment/tta.h"
#include "model/model.h"
#include "pipeline/engine.h"
#include "tests/common/check.h"
#include "tests/common/graphs.h"
#include "ttapipe.h"

enum { IMAGES = 33 };

typedef struct outputs {
  float* probs;
  ttp_result* results;
} outputs;

/* What an engine's description must say: `text`, `times` times (0: at least once). */
typedef struct expected {
  const char* text;
  int times;
} expected;

/* Runs the images through engine (opened on m with c) in batches of at most c->max_batch;
   the engine's description must hold what `expect` says where its text is not NULL. */
static void run_engine(const char* what, const engine_entry* engine, const model* m,
                       const engine_config* c, const uint8_t* images, outputs out,
                       expected expect) {
  ttp_err e = {0};
  batch_stream s = {0};
  CHECK(engine_open_stream(engine, m, c, &s, &e) == TTP_OK, "%s: %s", what, e.message);
  if (expect.text) {
    const char* said = s.ops->describe(s.impl);
    int times = 0;
    for (const char* at = strstr(said, expect.text); at; at = strstr(at + 1, expect.text))
      times++;
    CHECK(expect.times ? times == expect.times : times > 0,
          "%s: the engine says '%s' %d times, not %d: %s", what, expect.text, times,
          expect.times, said);
  }
  test_poison(out.probs, IMAGES * (size_t)m->classes);
  for (size_t i = 0; i < IMAGES; i++) out.results[i] = (ttp_result){-7, NAN, NAN};
  CHECK(stream_run(&s, images, IMAGES, out.results, out.probs, NULL, &e) == TTP_OK, "%s: %s",
        what, e.message);
  stream_close(&s);
}

static outputs outputs_new(size_t classes) {
  outputs o = {malloc(IMAGES * classes * sizeof(float)), malloc(IMAGES * sizeof(ttp_result))};
  CHECK(o.probs && o.results, "out of memory");
  return o;
}

static void outputs_free(outputs o) { free(o.probs), free(o.results); }

/* Whether the reference's top class of image i leads its second by more than tol. */
static int clear_winner(const float* p, int classes, double tol) {
  double first = -1, second = -1;
  for (int k = 0; k < classes; k++)
    if (p[k] > first) second = first, first = p[k];
    else if (p[k] > second) second = p[k];
  return first - second > tol;
}

/* Model m on the cudnn engine in one precision with `copies` copies an image, against the
   reference's probabilities `want`: returns the largest difference. */
static double check_precision(const char* what, const model* m, engine_config c,
                              const uint8_t* images, const outputs want) {
  const engine_entry* cudnn = engine_find(TTP_ENGINE_CUDNN);
  const size_t classes = (size_t)m->classes;
  const double tol = c.precision == TTP_PRECISION_FP32 ? 1e-4 : 1e-2;
  /* first: the first run's; graph: the last run through graphs; eager: the last eager run */
  outputs first = outputs_new(classes), graph = outputs_new(classes), eager = outputs_new(classes);
  char run[200];
  static const struct { int max_batch, use_graph; } runs[] = {
      {IMAGES, 1}, {IMAGES, 0}, {7, 1}, {7, 0}, {1, 1}};
  double worst = 0;
  for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
    c.max_batch = runs[r].max_batch, c.use_graph = runs[r].use_graph;
    snprintf(run, sizeof run, "%s, %s, batches of %d, %s", what,
             ttp_precision_name(c.precision), c.max_batch,
             c.use_graph ? "graphs" : "eager");
    const outputs now = c.use_graph ? graph : eager;
    /* In fp16, the network of NHWC widths runs its depthwise layers on ttapipe's kernel, the
       residual blocks' network its six pairs of convolutions as ttapipe's residual block, the
       inverted blocks' network its four blocks as ttapipe's inverted residual block. */
    expected expect = {NULL, 0};
    if (c.precision == TTP_PRECISION_FP16 && strstr(what, "NHWC widths"))
      expect = (expected){"NHWC fp16 depthwise", 0};
    else if (c.precision == TTP_PRECISION_FP16 && strstr(what, "residual blocks"))
      expect = (expected){"NHWC residual block", 6};
    else if (c.precision == TTP_PRECISION_FP16 && strstr(what, "inverted blocks"))
      expect = (expected){"NHWC inverted residual block", 4};
    run_engine(run, cudnn, m, &c, images, now, expect);
    for (size_t i = 0; i < IMAGES * classes; i++) {
      const double d = fabs((double)now.probs[i] - want.probs[i]);
      CHECK(d <= tol, "%s: image %zu, class %zu: %.7g, the reference %.7g", run, i / classes,
            i % classes, now.probs[i], want.probs[i]);
      worst = fmax(worst, d);
    }
    for (size_t i = 0; i < IMAGES; i++)
      if (clear_winner(want.probs + i * classes, (int)classes, tol))
        CHECK(now.results[i].class_index == want.results[i].class_index,
              "%s: image %zu: class %d, the reference %d", run, i, now.results[i].class_index,
              want.results[i].class_index);
    if (r == 0) {
      memcpy(first.probs, now.probs, IMAGES * classes * sizeof(float));
      memcpy(first.results, now.results, IMAGES * sizeof(ttp_result));
      continue;
    }
    /* Eager: the bits of the graphs of its batch size. Graphs: in fp32, the first run's. */
    const outputs* same = !c.use_graph ? &graph : c.precision == TTP_PRECISION_FP32 ? &first : NULL;
    if (same)
      CHECK(memcmp(now.probs, same->probs, IMAGES * classes * sizeof(float)) == 0 &&
                memcmp(now.results, same->results, IMAGES * sizeof(ttp_result)) == 0,
            "%s: not the bits of %s", run, c.use_graph ? "one batch of 33 through graphs"
                                                      : "the same batches through graphs");
  }
  outputs_free(first), outputs_free(graph), outputs_free(eager);
  return worst;
}

/* In fp16, model m's probabilities with ttapipe's inverted residual kernel and with its three
   convolutions run apart (TTP_CONV_BLOCKS=0), each on ttapipe's own kernels: the same bits, as
   the kernel promises. (The residual pair's apart are cuDNN's on 16 x 16 maps: other bits.) */
static void check_blocks_apart(const char* what, const model* m, engine_config c,
                               const uint8_t* images) {
  const engine_entry* cudnn = engine_find(TTP_ENGINE_CUDNN);
  outputs joined = outputs_new((size_t)m->classes), apart = outputs_new((size_t)m->classes);
  c.precision = TTP_PRECISION_FP16, c.max_batch = IMAGES, c.use_graph = 1;
  run_engine(what, cudnn, m, &c, images, joined, (expected){NULL, 0});
  CHECK(setenv("TTP_CONV_BLOCKS", "0", 1) == 0, "setenv");
  run_engine(what, cudnn, m, &c, images, apart, (expected){NULL, 0});
  unsetenv("TTP_CONV_BLOCKS");
  CHECK(memcmp(joined.probs, apart.probs, IMAGES * (size_t)m->classes * sizeof(float)) == 0,
        "%s: fp16 with the block kernels not the bits of the convolutions run apart", what);
  outputs_free(joined), outputs_free(apart);
}

static void check_model(const char* name, const model* m, int copies, test_rng* rng) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = copies;
  engine_config c = {.threads = 2, .device_count = 1, .max_batch = IMAGES, .slots = 2,
                     .plan = TTP_PLAN_HEURISTIC};
  float temperature;
  ttp_err e = {0};
  CHECK(aug_spec_from(&tta, &c.spec, &c.merge, &temperature, &e) == TTP_OK, "%s", e.message);
  const size_t pixels = model_shape_size(m->input), classes = (size_t)m->classes;
  uint8_t* images = malloc(IMAGES * pixels);
  CHECK(images, "out of memory");
  for (size_t i = 0; i < IMAGES * pixels; i++) images[i] = (uint8_t)test_int(rng, 0, 255);
  char what[64 + 48];
  snprintf(what, sizeof what, "%.48s, %d cop%s", name, copies, copies == 1 ? "y" : "ies");
  outputs want = outputs_new(classes);
  run_engine(what, engine_find(TTP_ENGINE_CPU), m, &c, images, want, (expected){NULL, 0});
  double spread = 0; /* the probabilities must vary, or the comparison says little */
  for (size_t i = 0; i < IMAGES * classes; i++)
    spread = fmax(spread, fabs((double)want.probs[i] - want.probs[0]));
  CHECK(spread > 0.01, "%s: every probability alike (%g)", what, spread);
  c.precision = TTP_PRECISION_FP32;
  const double fp32 = check_precision(what, m, c, images, want);
  c.precision = TTP_PRECISION_FP16;
  const double fp16 = check_precision(what, m, c, images, want);
  c.precision = TTP_PRECISION_TF32;
  const double tf32 = check_precision(what, m, c, images, want);
  if (strstr(name, "inverted")) check_blocks_apart(what, m, c, images);
  printf("%-36s %2d layers: max |dp| fp32 %.3g, fp16 %.3g, tf32 %.3g; graphs and eager the same "
         "bits; fp32 the same bits in batches of %d, 7 and 1\n", what, m->layer_count, fp32, fp16,
         tf32, IMAGES);
  outputs_free(want);
  free(images);
}

int main(void) {
  if (ttp_gpu_count() == 0) {
    printf("skipped: no GPU\n");
    return TEST_SKIP;
  }
  const engine_entry* cudnn = engine_find(TTP_ENGINE_CUDNN);
  CHECK(cudnn && cudnn->supports && cudnn->graphs, "the cudnn engine's entry runs no graphs");
  test_rng rng = {5151};
  model* models[GRAPHS_COUNT];
  char names[GRAPHS_COUNT][48];
  graphs_every(2, &rng, models, names);
  for (int k = 0; k < GRAPHS_COUNT; k++) {
    for (int copies = 1; copies <= 5; copies += 4) check_model(names[k], models[k], copies, &rng);
    model_free(models[k]);
  }
  model* blocks = graphs_blocks(&rng);
  for (int copies = 1; copies <= 5; copies += 4)
    check_model("residual blocks", blocks, copies, &rng);
  model_free(blocks);
  model* inverted = graphs_inverted(&rng);
  for (int copies = 1; copies <= 5; copies += 4)
    check_model("inverted blocks", inverted, copies, &rng);
  model_free(inverted);
  printf("cudnn graphs: within 1e-4 (fp32) and 1e-2 (fp16, tf32) of the reference everywhere\n");
  return 0;
}
