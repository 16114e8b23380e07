/* Every layer kind, alone, through every engine that supports it, against the CPU engine (the
   reference, whose layers test_cpu_layers checks against double-precision loops), in the manner
   of ggml's test-backend-ops: a table of cases, the shipped network's shapes and random ones of
   odd sizes, n rows at a time (1, 3, 17 or 37); random inputs (and a NaN where a layer must
   propagate one); each output poisoned (NaN) before the run and framed by guard regions of a
   sentinel that must come back untouched; GPU engines in fp32 and fp16, eagerly and through a
   captured CUDA Graph, which must give the same bits.

   Tolerances, |got - want| <= atol + rtol |want|: fp32 sums of L products in any order are
   within a few L eps |w| |x| of the double-accumulated reference (atol = 4 sqrt(L) eps, with
   weights of size 1/sqrt(L) and inputs of size 1), rtol 2e-6 for LRN and softmax (libm);
   fp16 runs take inputs and weights already rounded to fp16 (so products are exact) and round
   their output, once or twice: rtol 2^-9, atol 1e-7, and for conv and fc 2^-10 |bias| more
   (the sum is rounded before its bias of up to 0.5 is added). Max pooling and ReLU select:
   exact.

   The onednn engine (where the build has it) is checked in both modes, with the fp32 bounds,
   twice (the same bits again), without the NaN cases: its max pooling and clip do not carry a
   NaN (onednn_engine.h).

   Usage: test_layers [cpu|all]   (cpu: the CPU engines; all: also the GPU engines, exits 77
   without a GPU) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/engine.h"
#include "model/model.h"
#include "tests/common/check.h"
#include "ttapipe.h"

enum { GUARD = 19 };
static const float SENTINEL = -1234.0f; /* exact in fp16 too */

typedef struct layer_case {
  const char* name;
  model_op op;
  model_shape in;
  int a, b, c, d, e; /* conv: k r s stride pad; pool: r s stride pad count_pad; fc: out;
                        lrn: n */
  int rows;
  int nan;           /* put a NaN in the input */
} layer_case;

/* Rounds to the nearest fp16 value (ties to even), for values in fp16's normal range or zero. */
static float round_half(float x) {
  if (x == 0 || isnan(x)) return x;
  uint32_t u;
  memcpy(&u, &x, 4);
  u += 0x0fffu + ((u >> 13) & 1u);
  u &= ~0x1fffu;
  memcpy(&x, &u, 4);
  return x;
}

/* A one-layer model (a softmax after it, which model_infer_shapes wants last) with random
   weights of size 1/sqrt(fan-in). */
static model* build(const layer_case* t, test_rng* rng, int half) {
  ttp_err e = {0};
  model* m = model_new(t->in, &e);
  CHECK(m, "%s", e.message);
  model_layer* l = model_add(m, t->op, t->name, &e);
  CHECK(l, "%s", e.message);
  switch (t->op) {
    case MODEL_CONV:
      l->p.conv.k = t->a, l->p.conv.w = model_window_of(t->b, t->c, t->d, t->e);
      break;
    case MODEL_MAXPOOL:
    case MODEL_AVGPOOL:
      l->p.pool.w = model_window_of(t->a, t->b, t->c, t->d), l->p.pool.count_pad = t->e;
      break;
    case MODEL_LEAKY_RELU: l->p.leaky.alpha = 0.15f; break;
    case MODEL_CLIP: l->p.clip.lo = -0.75f, l->p.clip.hi = 0.5f; break;
    case MODEL_FC: l->p.fc.out = t->a; break;
    case MODEL_LRN:
      l->p.lrn.n = t->a, l->p.lrn.alpha = 1e-2, l->p.lrn.beta = 0.75, l->p.lrn.k = 1.0;
      break;
    default: break;
  }
  if (t->op != MODEL_SOFTMAX) CHECK(model_add(m, MODEL_SOFTMAX, "softmax", &e), "%s", e.message);
  CHECK(model_infer_shapes(m, &e) == TTP_OK, "%s: %s", t->name, e.message);
  l = &m->layers[0];
  double fan_in = l->weight_count ? (double)l->weight_count / l->bias_count : 1;
  if (l->weight_count) {
    l->weights = malloc(l->weight_count * sizeof(float));
    l->bias = malloc(l->bias_count * sizeof(float));
    test_fill_uniform(rng, l->weights, l->weight_count, -1 / sqrt(fan_in), 1 / sqrt(fan_in));
    test_fill_uniform(rng, l->bias, l->bias_count, -0.5, 0.5);
    if (half) {
      for (size_t i = 0; i < l->weight_count; i++) l->weights[i] = round_half(l->weights[i]);
      for (size_t i = 0; i < l->bias_count; i++) l->bias[i] = round_half(l->bias[i]);
    }
  }
  return m;
}

/* out: GUARD sentinels, n NaNs, GUARD sentinels. */
static float* guarded(size_t n) {
  float* out = malloc((n + 2 * GUARD) * sizeof *out);
  CHECK(out, "out of memory");
  for (size_t i = 0; i < GUARD; i++) out[i] = out[n + GUARD + i] = SENTINEL;
  test_poison(out + GUARD, n);
  return out;
}

static size_t guards_broken(const float* out, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < GUARD; i++) bad += (out[i] != SENTINEL) + (out[n + GUARD + i] != SENTINEL);
  return bad;
}

/* Mismatches of got against want (NaN must meet NaN), the first few printed. */
static size_t compare(const char* what, const float* got, const float* want, size_t n,
                      double atol, double rtol) {
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]);
    int ok = isnan(want[i]) ? isnan(got[i]) : !isnan(got[i]) && d <= atol + rtol * fabs(want[i]);
    if (!isnan(want[i]) && d > worst) worst = d;
    if (!ok && bad++ < 5)
      fprintf(stderr, "  %s[%zu]: got %.9g, want %.9g (diff %.3g)\n", what, i, got[i], want[i], d);
  }
  printf("  %-64s max diff %.3g%s\n", what, worst, bad ? "  FAILED" : "");
  return bad;
}

static size_t run_case(const layer_case* t, test_rng* rng, int gpu) {
  const engine_entry* cpu = engine_find(TTP_ENGINE_CPU);
  const engine_entry* others[] = {engine_find(TTP_ENGINE_ONEDNN), engine_find(TTP_ENGINE_CUDNN)};
  size_t bad = 0;
  for (int half = 0; half <= gpu; half++) {
    model* m = build(t, rng, half);
    const model_layer* l = &m->layers[0];
    size_t n_in = (size_t)t->rows * model_shape_size(l->in);
    size_t n_out = (size_t)t->rows * model_shape_size(l->out);
    float* in = malloc(n_in * sizeof *in);
    double scale = t->op == MODEL_SOFTMAX ? 8 : t->op == MODEL_LRN ? 4 : 1;
    test_fill_uniform(rng, in, n_in, -scale, scale);
    if (half)
      for (size_t i = 0; i < n_in; i++) in[i] = round_half(in[i]);
    if (t->nan) in[n_in / 2] = NAN;
    engine_config c = {.threads = 1, .device = 0, .max_batch = 1, .slots = 2,
                       .precision = half ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32};
    ttp_err e = {0};
    float* want = guarded(n_out);
    CHECK(cpu->run_layer(l, t->rows, &c, 0, in, want, GUARD, &e) == TTP_OK, "%s", e.message);
    char what[160];
    snprintf(what, sizeof what, "%s on cpu", t->name);
    CHECK(guards_broken(want, n_out) == 0, "%s: the guards were written", what);
    for (size_t i = 0; i < n_out; i++)
      CHECK(!isnan(want[GUARD + i]) || t->nan, "%s: output %zu not written", what, i);
    double fan_in = l->weight_count ? (double)l->weight_count / l->bias_count : 1;
    double atol = half ? 1e-7 : 0, rtol = half ? 1.0 / 512 : 0;
    if (t->op == MODEL_CONV || t->op == MODEL_FC) {
      atol += 4 * sqrt(fan_in) * 0x1p-24;
      /* fp16: the sum before its bias is rounded too, and it may be larger by up to |bias| */
      if (half) atol += 0.5 * 0x1p-10;
    }
    if (t->op == MODEL_AVGPOOL) /* a sum of R x S inputs of size 1, then a division */
      atol += 4 * sqrt((double)t->a * t->b) * 0x1p-24, rtol += 0x1p-23;
    if (t->op == MODEL_LRN || t->op == MODEL_SOFTMAX || t->op == MODEL_SIGMOID ||
        t->op == MODEL_TANH) { /* libm's and CUDA's functions, each within a few ulp */
      atol += 1e-7;
      rtol += 2e-6;
    }
    for (size_t k = 0; k < sizeof others / sizeof *others; k++) {
      const engine_entry* engine = others[k];
      char why[160];
      const int host = engine->host != NULL;
      if ((!gpu && !host) || !engine->run_layer || !engine->supports(l, &c, why, sizeof why))
        continue;
      /* onednn: fp32 only; its max pooling and clip drop NaN (it refuses models whose weights
         are not finite, the only way a NaN reaches them from image bytes) */
      if (host && (half || t->nan)) continue;
      float* eager = guarded(n_out);
      float* graph = guarded(n_out);
      CHECK(engine->run_layer(l, t->rows, &c, 0, in, eager, GUARD, &e) == TTP_OK, "%s", e.message);
      CHECK(engine->run_layer(l, t->rows, &c, 1, in, graph, GUARD, &e) == TTP_OK, "%s", e.message);
      snprintf(what, sizeof what, "%s on %s %s", t->name, engine->name, half ? "fp16" : "fp32");
      /* A host engine's two runs: the same bits again. */
      CHECK(guards_broken(eager, n_out) == 0 && guards_broken(graph, n_out) == 0,
            "%s: the guards were written", what);
      bad += compare(what, eager + GUARD, want + GUARD, n_out, atol, rtol);
      CHECK(memcmp(eager, graph, (n_out + 2 * GUARD) * sizeof(float)) == 0,
            "%s: graph and eager differ", what);
      free(eager), free(graph);
    }
    free(in), free(want);
    model_free(m);
  }
  return bad;
}

int main(int argc, char** argv) {
  int gpu = argc > 1 && strcmp(argv[1], "all") == 0;
  if (gpu && ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  static const layer_case shipped[] = {
      {"conv1 1x28x28 20x5x5", MODEL_CONV, {1, 28, 28}, 20, 5, 5, 1, 0, 37, 0},
      {"pool1 20x24x24 2x2/2", MODEL_MAXPOOL, {20, 24, 24}, 2, 2, 2, 0, 0, 17, 0},
      {"conv2 20x12x12 50x5x5", MODEL_CONV, {20, 12, 12}, 50, 5, 5, 1, 0, 17, 0},
      {"pool2 50x8x8 2x2/2", MODEL_MAXPOOL, {50, 8, 8}, 2, 2, 2, 0, 0, 3, 0},
      {"ip1 800 -> 500", MODEL_FC, {50, 4, 4}, 500, 0, 0, 0, 0, 37, 0},
      {"relu1 500", MODEL_RELU, {500, 1, 1}, 0, 0, 0, 0, 0, 37, 0},
      {"norm1 500 n5", MODEL_LRN, {500, 1, 1}, 5, 0, 0, 0, 0, 17, 0},
      {"ip2 500 -> 10", MODEL_FC, {500, 1, 1}, 10, 0, 0, 0, 0, 37, 0},
      {"softmax 10", MODEL_SOFTMAX, {10, 1, 1}, 0, 0, 0, 0, 0, 37, 0},
      {"pool with a NaN", MODEL_MAXPOOL, {3, 9, 7}, 2, 2, 2, 0, 0, 3, 1},
      {"relu with a NaN", MODEL_RELU, {7, 3, 5}, 0, 0, 0, 0, 0, 3, 1},
      /* the layers of PyTorch's exports (tests/onnx/) */
      {"avgpool 8x24x24 2x2/2", MODEL_AVGPOOL, {8, 24, 24}, 2, 2, 2, 0, 1, 17, 0},
      {"avgpool 16x12x12 3x3/2 pad 1 counted", MODEL_AVGPOOL, {16, 12, 12}, 3, 3, 2, 1, 1, 3, 0},
      {"avgpool 5x9x7 3x2/1 pad 1 not counted", MODEL_AVGPOOL, {5, 9, 7}, 3, 2, 1, 1, 0, 37, 0},
      {"maxpool 32x8x8 3x3/2 pad 1", MODEL_MAXPOOL, {32, 8, 8}, 3, 3, 2, 1, 0, 17, 0},
      {"leakyrelu 64", MODEL_LEAKY_RELU, {64, 1, 1}, 0, 0, 0, 0, 0, 37, 0},
      {"sigmoid 64", MODEL_SIGMOID, {64, 1, 1}, 0, 0, 0, 0, 0, 37, 0},
      {"tanh 16x12x12", MODEL_TANH, {16, 12, 12}, 0, 0, 0, 0, 0, 17, 0},
      {"clip 16x16x16", MODEL_CLIP, {16, 16, 16}, 0, 0, 0, 0, 0, 3, 0},
      {"maxpool padded with a NaN", MODEL_MAXPOOL, {3, 9, 7}, 3, 3, 2, 1, 0, 3, 1},
      {"avgpool with a NaN", MODEL_AVGPOOL, {3, 9, 7}, 2, 2, 2, 0, 1, 3, 1},
      {"leakyrelu with a NaN", MODEL_LEAKY_RELU, {7, 3, 5}, 0, 0, 0, 0, 0, 3, 1},
      {"sigmoid with a NaN", MODEL_SIGMOID, {7, 3, 5}, 0, 0, 0, 0, 0, 3, 1},
      {"tanh with a NaN", MODEL_TANH, {7, 3, 5}, 0, 0, 0, 0, 0, 3, 1},
      {"clip with a NaN", MODEL_CLIP, {7, 3, 5}, 0, 0, 0, 0, 0, 3, 1},
  };
  test_rng rng = {20261123};
  size_t bad = 0, cases = 0;
  for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++, cases++)
    bad += run_case(&shipped[i], &rng, gpu);
  /* Random shapes of every kind every engine has (model.h up to MODEL_CLIP; the graphs' own
     layers, after it, are checked inside whole graphs: test_graph, test_onednn_graph,
     test_cudnn_graph), odd sizes. */
  static const int rows[] = {1, 3, 17, 37};
  enum { SHARED_OPS = MODEL_CLIP + 1 };
  for (int k = 0; k < 4 * SHARED_OPS; k++, cases++) {
    char name[96];
    layer_case t = {name, (model_op)(k % SHARED_OPS), {test_int(&rng, 1, 7),
                    test_int(&rng, 5, 19), test_int(&rng, 5, 19)}, 0, 0, 0, 0, 0,
                    rows[test_int(&rng, 0, 3)], 0};
    switch (t.op) {
      case MODEL_CONV:
        t.a = test_int(&rng, 1, 13), t.b = test_int(&rng, 1, 5), t.c = test_int(&rng, 1, 5);
        t.d = test_int(&rng, 1, 3), t.e = test_int(&rng, 0, 2);
        snprintf(name, sizeof name, "conv %dx%dx%d %dx%dx%d stride %d pad %d", t.in.c, t.in.h,
                 t.in.w, t.a, t.b, t.c, t.d, t.e);
        break;
      case MODEL_MAXPOOL:
      case MODEL_AVGPOOL:
        t.a = test_int(&rng, 1, 4), t.b = test_int(&rng, 1, 4), t.c = test_int(&rng, 1, 3);
        t.d = test_int(&rng, 0, (t.a < t.b ? t.a : t.b) - 1), t.e = test_int(&rng, 0, 1);
        snprintf(name, sizeof name, "%s %dx%dx%d %dx%d/%d pad %d%s", model_op_name(t.op), t.in.c,
                 t.in.h, t.in.w, t.a, t.b, t.c, t.d,
                 t.op == MODEL_AVGPOOL && t.d ? t.e ? " counted" : " not counted" : "");
        break;
      case MODEL_FC:
        t.a = test_int(&rng, 1, 301);
        snprintf(name, sizeof name, "fc %dx%dx%d -> %d", t.in.c, t.in.h, t.in.w, t.a);
        break;
      case MODEL_LRN:
        t.a = 2 * test_int(&rng, 0, 3) + 1;
        t.in.c = test_int(&rng, 1, 23);
        snprintf(name, sizeof name, "lrn %dx%dx%d n%d", t.in.c, t.in.h, t.in.w, t.a);
        break;
      default:
        snprintf(name, sizeof name, "%s %dx%dx%d", model_op_name(t.op), t.in.c, t.in.h, t.in.w);
    }
    bad += run_case(&t, &rng, gpu);
  }
  CHECK(bad == 0, "%zu outputs out of tolerance", bad);
  printf("layers: %zu cases, every supporting engine agrees with the CPU%s\n", cases,
         gpu ? "; graph and eager give the same bits" : "");
  return 0;
}
