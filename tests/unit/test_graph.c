/* Models that are graphs, not chains (model/model.h): the layers of residual, depthwise,
   squeeze-and-excitation, dense, shuffled and option-A networks, built with random weights on
   odd input sizes (tests/common/graphs.c), run by the CPU engine (the whole augmented pass, one
   copy) against this file's own textbook forward pass in double: every class probability
   within 1e-5. The
   windows' every variant (groups, dilation, uneven padding, two strides, ceil mode, padding
   counted or not) against PyTorch's rules for their output sizes; the values' arena
   (model/plan.h): no two values alive at once share a float, and a ResNet-like graph's arena is
   at most a quarter of its values' sum; refusals: a shape mismatch at an Add or a Concat, an
   input that is not an earlier value; the engines that run chains alone refuse a graph with one
   line naming the layer. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "augment/tta.h"
#include "model/model.h"
#include "model/plan.h"
#include "pipeline/engine.h"
#include "tests/common/check.h"
#include "tests/common/graphs.h"

#define ATOL 1e-5
#define RTOL 1e-5

/* ---- the textbook forward pass in double ---------------------------------------------------- */

static double at(const double* x, model_shape s, int c, int y, int xx) {
  return x[((size_t)c * s.h + y) * s.w + xx];
}

static void ref_layer(const model* m, const model_layer* l, double* const* v, double* out) {
  const double* x = v[l->inputs[0]];
  const model_shape s = l->in, o = l->out;
  const size_t n = model_shape_size(o);
  switch (l->op) {
    case MODEL_CONV: {
      const model_window* w = &l->p.conv.w;
      const int g = l->p.conv.groups ? l->p.conv.groups : 1, cg = s.c / g, kg = l->p.conv.k / g;
      for (int k = 0; k < o.c; k++)
        for (int p = 0; p < o.h; p++)
          for (int q = 0; q < o.w; q++) {
            double sum = l->bias ? l->bias[k] : 0;
            for (int c = 0; c < cg; c++)
              for (int r = 0; r < w->r; r++)
                for (int t = 0; t < w->s; t++) {
                  const int y = p * w->stride_h + r * w->dil_h - w->pad_t;
                  const int xx = q * w->stride_w + t * w->dil_w - w->pad_l;
                  if (y < 0 || y >= s.h || xx < 0 || xx >= s.w) continue;
                  sum += l->weights[(((size_t)k * cg + c) * w->r + r) * w->s + t] *
                         at(x, s, k / kg * cg + c, y, xx);
                }
            out[((size_t)k * o.h + p) * o.w + q] = sum;
          }
      return;
    }
    case MODEL_MAXPOOL:
    case MODEL_AVGPOOL: {
      const model_window* w = &l->p.pool.w;
      for (int c = 0; c < o.c; c++)
        for (int p = 0; p < o.h; p++)
          for (int q = 0; q < o.w; q++) {
            double best = -INFINITY, sum = 0;
            int inside = 0, padded = 0;
            for (int r = 0; r < w->r; r++)
              for (int t = 0; t < w->s; t++) {
                const int y = p * w->stride_h + r - w->pad_t, xx = q * w->stride_w + t - w->pad_l;
                padded += y < s.h + w->pad_b && xx < s.w + w->pad_r; /* PyTorch's divisor */
                if (y < 0 || y >= s.h || xx < 0 || xx >= s.w) continue;
                const double val = at(x, s, c, y, xx);
                best = val > best ? val : best, sum += val, inside++;
              }
            out[((size_t)c * o.h + p) * o.w + q] =
                l->op == MODEL_MAXPOOL ? best : sum / (l->p.pool.count_pad ? padded : inside);
          }
      return;
    }
    case MODEL_FC:
      for (int k = 0; k < o.c; k++) {
        double sum = l->bias ? l->bias[k] : 0;
        for (size_t i = 0; i < model_shape_size(s); i++)
          sum += l->weights[(size_t)k * model_shape_size(s) + i] * x[i];
        out[k] = sum;
      }
      return;
    case MODEL_SOFTMAX: {
      double most = -INFINITY, sum = 0;
      for (size_t i = 0; i < n; i++) most = x[i] > most ? x[i] : most;
      for (size_t i = 0; i < n; i++) sum += out[i] = exp(x[i] - most);
      for (size_t i = 0; i < n; i++) out[i] /= sum;
      return;
    }
    case MODEL_ADD:
    case MODEL_SUB:
    case MODEL_MUL:
    case MODEL_DIV:
      for (size_t i = 0; i < n; i++) {
        double acc = x[i];
        for (int k = 1; k < l->input_count; k++) {
          const model_shape b = model_value_shape(m, l->inputs[k]);
          const double y = b.h == o.h && b.w == o.w && b.c == o.c ? v[l->inputs[k]][i]
                           : b.c == 1 ? v[l->inputs[k]][0]
                                      : v[l->inputs[k]][i / ((size_t)o.h * o.w)];
          acc = l->op == MODEL_ADD ? acc + y : l->op == MODEL_SUB ? acc - y
                : l->op == MODEL_MUL ? acc * y : acc / y;
        }
        out[i] = acc;
      }
      return;
    case MODEL_CONCAT: {
      size_t o_at = 0;
      for (int k = 0; k < l->input_count; k++) {
        const size_t len = model_shape_size(model_value_shape(m, l->inputs[k]));
        memcpy(out + o_at, v[l->inputs[k]], len * sizeof *out);
        o_at += len;
      }
      return;
    }
    case MODEL_SLICE:
      for (int c = 0; c < o.c; c++)
        for (int y = 0; y < o.h; y++)
          for (int xx = 0; xx < o.w; xx++)
            out[((size_t)c * o.h + y) * o.w + xx] =
                at(x, s, l->p.slice.c0 + c, l->p.slice.h0 + y * l->p.slice.step_h,
                   l->p.slice.w0 + xx * l->p.slice.step_w);
      return;
    case MODEL_PAD:
      for (int c = 0; c < o.c; c++)
        for (int y = 0; y < o.h; y++)
          for (int xx = 0; xx < o.w; xx++) {
            const int ci = c - l->p.pad.c0, yi = y - l->p.pad.h0, xi = xx - l->p.pad.w0;
            out[((size_t)c * o.h + y) * o.w + xx] =
                ci < 0 || ci >= s.c || yi < 0 || yi >= s.h || xi < 0 || xi >= s.w
                    ? l->p.pad.value : at(x, s, ci, yi, xi);
          }
      return;
    case MODEL_RESHAPE:
      memcpy(out, x, n * sizeof *out);
      return;
    case MODEL_SHUFFLE: { /* a reshape to (g, C/g), a transpose, a reshape back */
      const int g = l->p.shuffle.groups, per = s.c / g;
      for (int c = 0; c < s.c; c++)
        for (int i = 0; i < s.h * s.w; i++)
          out[(size_t)((c % per) * g + c / per) * s.h * s.w + i] = x[(size_t)c * s.h * s.w + i];
      return;
    }
    default:
      break;
  }
  const size_t plane = (size_t)s.h * s.w;
  for (size_t i = 0; i < n; i++) {
    const double t = x[i];
    const int c = (int)(i / plane);
    double y;
    switch (l->op) {
      case MODEL_RELU: y = t > 0 ? t : 0; break;
      case MODEL_CLIP: y = t < l->p.clip.lo ? l->p.clip.lo : t > l->p.clip.hi ? l->p.clip.hi : t; break;
      case MODEL_SIGMOID: y = 1 / (1 + exp(-t)); break;
      case MODEL_TANH: y = tanh(t); break;
      case MODEL_LEAKY_RELU: y = t >= 0 ? t : l->p.leaky.alpha * t; break;
      case MODEL_AFFINE: {
        const int j = l->weight_count == 1 ? 0 : c;
        y = t * l->weights[j] + (l->bias ? l->bias[j] : 0);
        break;
      }
      case MODEL_PRELU: y = t >= 0 ? t : l->weights[l->weight_count == 1 ? 0 : c] * t; break;
      case MODEL_HARDSWISH: y = t * fmin(fmax(t + 3, 0), 6) / 6; break;
      case MODEL_HARDSIGMOID: y = fmin(fmax(l->p.hard.alpha * t + l->p.hard.beta, 0), 1); break;
      case MODEL_GELU: y = t * (1 + erf(t / sqrt(2))) / 2; break;
      case MODEL_ERF: y = erf(t); break;
      case MODEL_ELU: y = t > 0 ? t : l->p.elu.alpha * (exp(t) - 1); break;
      case MODEL_SOFTPLUS: y = log(1 + exp(t)); break;
      case MODEL_MISH: y = t * tanh(log(1 + exp(t))); break;
      default: CHECK(0, "layer %s: no reference for %s", l->name, model_op_name(l->op));
    }
    out[i] = y;
  }
}

/* The model on image (pixels / 255, one channel after another) into probs. */
static void ref_forward(const model* m, const uint8_t* image, double* probs) {
  double** v = calloc((size_t)m->layer_count + 1, sizeof *v);
  v[0] = malloc(model_shape_size(m->input) * sizeof **v);
  for (size_t i = 0; i < model_shape_size(m->input); i++) v[0][i] = image[i] / 255.0;
  for (int i = 0; i < m->layer_count; i++) {
    v[i + 1] = malloc(model_shape_size(m->layers[i].out) * sizeof **v);
    ref_layer(m, &m->layers[i], v, v[i + 1]);
  }
  memcpy(probs, v[m->layer_count], (size_t)m->classes * sizeof *probs);
  for (int i = 0; i <= m->layer_count; i++) free(v[i]);
  free(v);
}

/* ---- the checks ------------------------------------------------------------------------------ */

/* Plans m's values (run_at: its units, or NULL) into *plan and checks it: values alive at once
   never share a float, a value being alive from the step that makes it to the step of its last
   reader (a layer reads at its unit's step); a unit's inner values have no room. */
static void check_plan(const char* what, const model* m, const int* run_at, model_plan* plan) {
  ttp_err e = {0};
  CHECK(model_plan_units(m, run_at, plan, &e) == TTP_OK, "%s", e.message);
  const int values = m->layer_count + 1;
  int* made = malloc((size_t)values * sizeof *made);
  int* last = malloc((size_t)values * sizeof *last);
  CHECK(made && last, "out of memory");
  for (int v = 0; v < values; v++) {
    made[v] = v - 1;
    last[v] = v == 0 || v == values - 1 ? m->layer_count : v - 1;
  }
  for (int i = 0; i < m->layer_count; i++)
    for (int k = 0; k < m->layers[i].input_count; k++) {
      const int v = m->layers[i].inputs[k], step = run_at ? run_at[i] : i;
      if (step > last[v]) last[v] = step;
    }
  for (int v = 1; v < values; v++) {
    const int inner = run_at && run_at[v - 1] != v - 1;
    CHECK(inner == (plan->offsets[v] == SIZE_MAX), "%s: value %d %s", what, v,
          inner ? "inside a unit has room" : "has no room");
  }
  for (int a = 0; a < values; a++)
    for (int b = a + 1; b < values; b++) {
      if (plan->offsets[a] == SIZE_MAX || plan->offsets[b] == SIZE_MAX) continue;
      if (last[a] < made[b]) continue; /* a is dead before b is made */
      const size_t a0 = plan->offsets[a], a1 = a0 + model_shape_size(model_value_shape(m, a));
      const size_t b0 = plan->offsets[b], b1 = b0 + model_shape_size(model_value_shape(m, b));
      CHECK(a1 <= b0 || b1 <= a0, "%s: values %d and %d overlap in the arena%s", what, a, b,
            run_at ? " (units)" : "");
      CHECK(a1 <= plan->arena && b1 <= plan->arena, "%s: a value past the arena", what);
    }
  free(made), free(last);
}

/* Units as a GPU engine fuses them: a convolution, affine or Add whose value one ReLU, affine or
   Add alone reads runs at that reader's step (a convolution, its BatchNorm, the residual Add and
   the ReLU: one unit). *fused: how many layers run at another's step. */
static int* fusion_units(const model* m, int* fused) {
  int* run_at = malloc((size_t)m->layer_count * sizeof *run_at);
  int* readers = calloc((size_t)m->layer_count + 1, sizeof *readers);
  int* reader = calloc((size_t)m->layer_count + 1, sizeof *reader);
  CHECK(run_at && readers && reader, "out of memory");
  for (int i = 0; i < m->layer_count; i++)
    for (int k = 0; k < m->layers[i].input_count; k++)
      readers[m->layers[i].inputs[k]]++, reader[m->layers[i].inputs[k]] = i;
  *fused = 0;
  for (int i = m->layer_count - 1; i >= 0; i--) {
    const model_op op = m->layers[i].op, next = m->layers[reader[i + 1]].op;
    run_at[i] = i;
    if ((op == MODEL_CONV || op == MODEL_AFFINE || op == MODEL_ADD) && readers[i + 1] == 1 &&
        i + 1 < m->layer_count &&
        (next == MODEL_RELU || next == MODEL_AFFINE || next == MODEL_ADD)) {
      run_at[i] = run_at[reader[i + 1]];
      ++*fused;
    }
  }
  free(readers), free(reader);
  return run_at;
}

/* The CPU engine on `images` random images of m against ref_forward; the plan's arena. */
static void check_model(const char* what, model* m, test_rng* rng, int images) {
  const engine_entry* cpu = engine_find(TTP_ENGINE_CPU);
  ttp_tta tta;
  ttp_tta_init(&tta);
  engine_config c = {.threads = 2, .max_batch = images};
  float temperature;
  ttp_err e = {0};
  CHECK(aug_spec_from(&tta, &c.spec, &c.merge, &temperature, &e) == TTP_OK, "%s", e.message);
  void* state;
  CHECK(cpu->host->open(m, &c, &state, &e) == TTP_OK, "%s: %s", what, e.message);
  const size_t pixels = model_shape_size(m->input), classes = (size_t)m->classes;
  uint8_t* x = malloc((size_t)images * pixels);
  for (size_t i = 0; i < (size_t)images * pixels; i++) x[i] = (uint8_t)test_int(rng, 0, 255);
  ttp_result* results = calloc((size_t)images, sizeof *results);
  float* got = malloc((size_t)images * classes * sizeof *got);
  test_poison(got, (size_t)images * classes);
  CHECK(cpu->host->run(state, x, (size_t)images, results, got, NULL, &e) == TTP_OK, "%s: %s",
        what, e.message);
  double* want = malloc((size_t)images * classes * sizeof *want);
  for (int i = 0; i < images; i++) ref_forward(m, x + (size_t)i * pixels, want + (size_t)i * classes);
  const size_t bad = test_compare(what, got, want, (size_t)images * classes, ATOL, RTOL);
  CHECK(bad == 0, "%s: %zu probabilities off the reference", what, bad);
  double spread = 0; /* the probabilities must vary, or the comparison says little */
  for (size_t i = 0; i < (size_t)images * classes; i++) spread = fmax(spread, fabs(want[i] - want[0]));
  CHECK(spread > 0.01, "%s: every probability alike (%g)", what, spread);
  cpu->host->close(state);

  model_plan plan;
  check_plan(what, m, NULL, &plan);
  model_plan units;
  int fused;
  int* run_at = fusion_units(m, &fused);
  check_plan(what, m, run_at, &units);
  CHECK(fused > 0 || !strstr(what, "resnet"), "%s: no units to plan", what);
  free(run_at);
  printf("%s: %d layers, %d images within %g of the reference; arena %zu of %zu floats (%zu "
         "with %d layers fused into units)\n", what, m->layer_count, images, ATOL, plan.arena,
         plan.sum, units.arena, fused);
  model_plan_free(&units);
  model_plan_free(&plan);
  free(x), free(results), free(got), free(want);
}

/* Output sizes against PyTorch's rules, computed here: floor or ceil of (n + pads - span) /
   stride, + 1; in ceil mode a last window that would start in the trailing padding is dropped. */
static void check_windows(void) {
  static const struct {
    int n, f, stride, lo, hi, dil, ceil, want;
  } cases[] = {
      {7, 2, 2, 0, 0, 1, 0, 3}, {7, 2, 2, 0, 0, 1, 1, 4}, {6, 3, 2, 1, 1, 1, 1, 4},
      {5, 3, 2, 1, 1, 1, 1, 3}, {8, 3, 1, 2, 2, 2, 0, 8}, {4, 2, 3, 1, 0, 1, 1, 2},
      {13, 3, 2, 0, 0, 1, 1, 6}, {10, 5, 1, 0, 1, 1, 0, 7},
  };
  ttp_err e = {0};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    model* m = model_new((model_shape){2, cases[i].n, 9}, &e);
    model_layer* l = model_add(m, MODEL_MAXPOOL, "pool", &e);
    l->p.pool.w = graphs_window(cases[i].f, 1, cases[i].stride, 1, cases[i].lo, 0, cases[i].hi,
                                0, 1, 1);
    l->p.pool.ceil = cases[i].ceil;
    if (cases[i].dil > 1) { /* dilation: a convolution's */
      l->op = MODEL_CONV, l->p.conv.k = 2, l->p.conv.groups = 1;
      l->p.conv.w = graphs_window(cases[i].f, 1, cases[i].stride, 1, cases[i].lo, 0,
                                  cases[i].hi, 0, cases[i].dil, 1);
    }
    model_add(m, MODEL_SOFTMAX, "softmax", &e);
    CHECK(model_infer_shapes(m, &e) == TTP_OK, "case %zu: %s", i, e.message);
    CHECK(m->layers[0].out.h == cases[i].want, "case %zu: %d rows, PyTorch gives %d", i,
          m->layers[0].out.h, cases[i].want);
    model_free(m);
  }
}

static void expect_refused(model* m, const char* fragment) {
  ttp_err e = {0};
  CHECK(model_infer_shapes(m, &e) == TTP_ERR_MODEL, "accepted, wanted \"%s\"", fragment);
  EXPECT_MESSAGE(e.message, fragment);
  model_free(m);
}

static void check_refusals(test_rng* rng) {
  ttp_err e = {0};
  model* m = model_new((model_shape){3, 8, 8}, &e);
  int a = graphs_value(m, graphs_conv(m, "a", 0, 4, 1, model_window_of(3, 3, 1, 1)));
  int b = graphs_value(m, graphs_conv(m, "b", 0, 4, 1, model_window_of(3, 3, 2, 1)));
  int pair[2] = {a, b};
  graphs_join(m, MODEL_ADD, "sum", 2, pair);
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "layer sum: add of 4x8x8 and 4x4x4 (a shape mismatch");
  m = model_new((model_shape){3, 8, 8}, &e);
  a = graphs_value(m, graphs_conv(m, "a", 0, 4, 1, model_window_of(3, 3, 1, 1)));
  b = graphs_value(m, graphs_conv(m, "b", 0, 4, 1, model_window_of(3, 3, 2, 1)));
  pair[0] = a, pair[1] = b;
  graphs_join(m, MODEL_CONCAT, "cat", 2, pair);
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "layer cat: concatenation of 8x8 and 4x4 maps (a shape mismatch)");
  m = model_new((model_shape){3, 8, 8}, &e);
  graphs_add(m, MODEL_RELU, "ahead", 2); /* reads a later value: a cycle in any file's graph */
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "layer ahead: input 0 is value 2, not one made before it");
  m = model_new((model_shape){4, 8, 8}, &e);
  graphs_conv(m, "grouped", 0, 6, 4, model_window_of(3, 3, 1, 1));
  model_add(m, MODEL_SOFTMAX, "softmax", &e);
  expect_refused(m, "layer grouped: bad convolution of 6 outputs in 4 groups over 4 channels");

  /* An engine that runs chains alone refuses a graph, naming the layer: each of this build's
     that does, and the CPU engine's entry marked so. */
  m = graphs_option_a(rng);
  engine_config c = {.threads = 1};
  engine_entry chains = *engine_find(TTP_ENGINE_CPU);
  chains.graphs = 0;
  const engine_entry* engines[] = {&chains, engine_find(TTP_ENGINE_ONEDNN),
                                   engine_find(TTP_ENGINE_CUDNN), engine_find(TTP_ENGINE_FUSED)};
  for (size_t k = 0; k < sizeof engines / sizeof *engines; k++) {
    if (!engines[k]->supports || engines[k]->graphs) continue;
    char want[96];
    snprintf(want, sizeof want, "engine %s runs chains of layers alone", engines[k]->name);
    e = (ttp_err){0};
    CHECK(engine_check_model(engines[k], m, &c, &e) == TTP_ERR_MODEL, "%s took a graph",
          engines[k]->name);
    EXPECT_MESSAGE(e.message, want, "every_other (slice), reads layer 1's output: a graph");
  }
  e = (ttp_err){0};
  CHECK(engine_check_model(engine_find(TTP_ENGINE_CPU), m, &c, &e) == TTP_OK, "%s", e.message);
  model_free(m);
}

int main(void) {
  test_rng rng = {40};
  check_windows();
  check_refusals(&rng);
  model* m = graphs_resnet(3, &rng); /* ResNet-20's layout, narrower */
  check_model("resnet, 3 blocks a stage", m, &rng, 5);
  model_plan plan;
  ttp_err e = {0};
  CHECK(model_plan_values(m, &plan, &e) == TTP_OK, "%s", e.message);
  CHECK(plan.arena * 4 <= plan.sum, "resnet: an arena of %zu floats, more than a quarter of the "
        "values' %zu", plan.arena, plan.sum);
  model_plan_free(&plan);
  model_free(m);
  m = graphs_mobilenet(&rng);
  check_model("mobilenet-like", m, &rng, 4);
  model_free(m);
  m = graphs_densenet(&rng);
  check_model("densenet-like and the other layers", m, &rng, 6);
  model_free(m);
  m = graphs_option_a(&rng);
  check_model("option-A shortcut", m, &rng, 3);
  model_free(m);
  m = graphs_depthwise(&rng);
  check_model("depthwise, NHWC widths", m, &rng, 3);
  model_free(m);
  printf("graph: every layer kind against the reference, arenas and refusals as expected\n");
  return 0;
}
