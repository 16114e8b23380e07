/* The CPU engine: plan (buffers per worker), then run (threads over contiguous ranges of
   images; per image: copies, forward passes, merge). A table of layer functions, indexed by
   model_op, does the forward pass. */
#include "cpu_engine.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../augment/merge.h"
#include "../trace.h"
#include "cpu_layers.h"
#include "../../model/plan.h"

typedef struct cpu_worker {
  const model* m;
  float* arena;  /* every value of one copy, at the plan's offsets (model/plan.h) */
  double* acc;   /* convolution accumulator */
  float* copies; /* N x classes: the softmax output of each copy */
  float* merged; /* classes: the merged vector of the image at hand */
} cpu_worker;

struct cpu_engine {
  const model* m;
  aug_spec spec;
  ttp_merge merge;
  int threads;
  const engine_cancel_flag* cancel; /* engine_config.cancel */
  model_plan plan;
  cpu_worker* workers;
  char description[64];
};

/* ---- the forward table ------------------------------------------------------------------- */

/* in: the layer's inputs (in[0] its first), out: its output. */
typedef void (*cpu_layer_fn)(const model_layer* l, const float* const* in, float* out,
                             cpu_worker* w);

static void run_conv(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  cpu_conv2d(in[0], l->in.c, l->in.h, l->in.w, l->weights, l->bias, l->p.conv.k,
             l->p.conv.groups ? l->p.conv.groups : 1, &l->p.conv.w, l->out.h, l->out.w, w->acc,
             out);
}
static void run_maxpool(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_maxpool(in[0], l->in.c, l->in.h, l->in.w, &l->p.pool.w, l->out.h, l->out.w, out);
}
static void run_avgpool(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_avgpool(in[0], l->in.c, l->in.h, l->in.w, &l->p.pool.w, l->out.h, l->out.w,
              l->p.pool.count_pad, out);
}
static void run_leaky_relu(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_leaky_relu(in[0], model_shape_size(l->in), l->p.leaky.alpha, out);
}
static void run_sigmoid(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_sigmoid(in[0], model_shape_size(l->in), out);
}
static void run_tanh(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_tanh(in[0], model_shape_size(l->in), out);
}
static void run_clip(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_clip(in[0], model_shape_size(l->in), l->p.clip.lo, l->p.clip.hi, out);
}
static void run_relu(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_relu(in[0], model_shape_size(l->in), out);
}
static void run_fc(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_fc(in[0], (int)model_shape_size(l->in), l->weights, l->bias, l->p.fc.out, out);
}
static void run_lrn(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_lrn(in[0], l->in.c, l->in.h, l->in.w, l->p.lrn.n, l->p.lrn.alpha, l->p.lrn.beta,
          l->p.lrn.k, out);
}
static void run_softmax(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_softmax(in[0], model_shape_size(l->in), out);
}
/* The shapes of a layer's inputs, for the layers of several. */
static void input_shapes(const model_layer* l, const cpu_worker* w, model_shape* shapes) {
  for (int k = 0; k < l->input_count; k++) shapes[k] = model_value_shape(w->m, l->inputs[k]);
}
static void run_elementwise(const model_layer* l, const float* const* in, float* out,
                            cpu_worker* w) {
  model_shape shapes[MODEL_MAX_INPUTS];
  input_shapes(l, w, shapes);
  cpu_elementwise(l->op, in, shapes, l->input_count, l->out, out);
}
static void run_concat(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  model_shape shapes[MODEL_MAX_INPUTS];
  input_shapes(l, w, shapes);
  cpu_concat(in, shapes, l->input_count, out);
}
static void run_affine(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_affine(in[0], l->in, l->weights, l->bias, (int)l->weight_count, out);
}
static void run_prelu(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_prelu(in[0], l->in, l->weights, (int)l->weight_count, out);
}
static void run_slice(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_slice(in[0], l->in, l->p.slice.c0, l->p.slice.h0, l->p.slice.w0, l->p.slice.step_h,
            l->p.slice.step_w, l->out, out);
}
static void run_pad(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_pad(in[0], l->in, l->p.pad.c0, l->p.pad.h0, l->p.pad.w0, l->p.pad.value, l->out, out);
}
static void run_shuffle(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_shuffle(in[0], l->in, l->p.shuffle.groups, out);
}
static void run_activation(const model_layer* l, const float* const* in, float* out,
                           cpu_worker* w) {
  (void)w;
  const double a = l->op == MODEL_HARDSIGMOID ? l->p.hard.alpha : l->op == MODEL_ELU ? l->p.elu.alpha : 0;
  const double b = l->op == MODEL_HARDSIGMOID ? l->p.hard.beta : 0;
  cpu_activation(l->op, in[0], model_shape_size(l->in), a, b, out);
}

static void run_reshape(const model_layer* l, const float* const* in, float* out, cpu_worker* w) {
  (void)w;
  memcpy(out, in[0], model_shape_size(l->in) * sizeof *out);
}

static const cpu_layer_fn cpu_layer_table[MODEL_OP_COUNT] = {
    [MODEL_CONV] = run_conv,   [MODEL_MAXPOOL] = run_maxpool, [MODEL_RELU] = run_relu,
    [MODEL_FC] = run_fc,       [MODEL_LRN] = run_lrn,         [MODEL_SOFTMAX] = run_softmax,
    [MODEL_AVGPOOL] = run_avgpool, [MODEL_LEAKY_RELU] = run_leaky_relu,
    [MODEL_SIGMOID] = run_sigmoid, [MODEL_TANH] = run_tanh, [MODEL_CLIP] = run_clip,
    [MODEL_ADD] = run_elementwise, [MODEL_SUB] = run_elementwise, [MODEL_MUL] = run_elementwise,
    [MODEL_DIV] = run_elementwise, [MODEL_AFFINE] = run_affine, [MODEL_CONCAT] = run_concat,
    [MODEL_SLICE] = run_slice, [MODEL_PAD] = run_pad, [MODEL_SHUFFLE] = run_shuffle,
    [MODEL_HARDSWISH] = run_activation, [MODEL_HARDSIGMOID] = run_activation,
    [MODEL_GELU] = run_activation, [MODEL_ERF] = run_activation, [MODEL_ELU] = run_activation,
    [MODEL_PRELU] = run_prelu, [MODEL_SOFTPLUS] = run_activation, [MODEL_MISH] = run_activation,
    [MODEL_RESHAPE] = run_reshape,
};

/* ---- plan ----------------------------------------------------------------------------------- */

static void cpu_engine_close(void* state);

static ttp_status cpu_engine_open(const model* m, const engine_config* c, void** out, ttp_err* e) {
  *out = NULL;
  int threads = c->threads;
  const aug_spec* spec = &c->spec;
  if (threads < 1 || threads > CPU_MAX_THREADS)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "threads must be 1..%d, not %d", CPU_MAX_THREADS,
               threads);
  size_t acc = 1;
  for (int i = 0; i < m->layer_count; i++)
    if (m->layers[i].op == MODEL_CONV) {
      size_t plane = (size_t)m->layers[i].out.h * m->layers[i].out.w;
      if (plane > acc) acc = plane;
    }
  cpu_engine* eng = calloc(1, sizeof *eng);
  if (!eng) return ERR_NOMEM(e, sizeof *eng);
  eng->m = m;
  eng->spec = *spec;
  eng->merge = c->merge;
  eng->threads = threads;
  eng->cancel = c->cancel;
  snprintf(eng->description, sizeof eng->description, "cpu, fp32 with double sums, %d thread%s",
           threads, threads == 1 ? "" : "s");
  ttp_status st = model_plan_values(m, &eng->plan, e);
  eng->workers = st == TTP_OK ? calloc((size_t)threads, sizeof *eng->workers) : NULL;
  if (st == TTP_OK && !eng->workers) st = ERR_NOMEM(e, (size_t)threads * sizeof(cpu_worker));
  for (int t = 0; t < threads && st == TTP_OK; t++) {
    cpu_worker* w = &eng->workers[t];
    w->m = m;
    w->arena = malloc(eng->plan.arena * sizeof *w->arena);
    w->acc = malloc(acc * sizeof *w->acc);
    w->copies = malloc((size_t)spec->copies * m->classes * sizeof *w->copies);
    w->merged = malloc((size_t)m->classes * sizeof *w->merged);
    if (!w->arena || !w->acc || !w->copies || !w->merged)
      st = ERR_NOMEM(e, eng->plan.arena * sizeof(float) + acc * sizeof(double));
  }
  if (st != TTP_OK) {
    cpu_engine_close(eng);
    return st;
  }
  *out = eng;
  return TTP_OK;
}

static void cpu_engine_close(void* state) {
  cpu_engine* eng = state;
  if (!eng) return;
  if (eng->workers)
    for (int t = 0; t < eng->threads; t++) {
      free(eng->workers[t].arena);
      free(eng->workers[t].acc);
      free(eng->workers[t].copies);
      free(eng->workers[t].merged);
    }
  free(eng->workers);
  model_plan_free(&eng->plan);
  free(eng);
}

/* ---- run ------------------------------------------------------------------------------------ */

/* The copy's place in worker w's arena: value 0, the network's input. */
static float* copy_input(const cpu_engine* eng, const cpu_worker* w) {
  return w->arena + eng->plan.offsets[0];
}

/* One copy, already in the arena's value 0, through every layer on worker `worker`'s arena;
   probs: classes floats. */
static void cpu_engine_forward(cpu_engine* eng, int worker, float* probs) {
  const model* m = eng->m;
  cpu_worker* w = &eng->workers[worker];
  const float* in[MODEL_MAX_INPUTS];
  for (int i = 0; i < m->layer_count; i++) {
    const model_layer* l = &m->layers[i];
    for (int k = 0; k < l->input_count; k++) in[k] = w->arena + eng->plan.offsets[l->inputs[k]];
    cpu_layer_table[l->op](l, in, w->arena + eng->plan.offsets[i + 1], w);
  }
  memcpy(probs, w->arena + eng->plan.offsets[m->layer_count], (size_t)m->classes * sizeof *probs);
}

typedef struct cpu_job {
  cpu_engine* eng;
  int worker;
  const uint8_t* images;
  size_t begin, end;
  ttp_result* results;
  float* merged;
  float* extras;
  int cancelled; /* stopped by the cancel flag before its last image */
} cpu_job;

static void* cpu_job_run(void* arg) {
  cpu_job* job = arg;
  cpu_engine* eng = job->eng;
  const model* m = eng->m;
  cpu_worker* w = &eng->workers[job->worker];
  size_t pixels = model_shape_size(m->input);
  float* input = copy_input(eng, w);
  for (size_t i = job->begin; i < job->end; i++) {
    if (engine_cancelled(eng->cancel)) {
      job->cancelled = 1;
      break;
    }
    const uint8_t* image = job->images + i * pixels;
    uint64_t key = aug_image_key(image, pixels);
    for (int c = 0; c < eng->spec.copies; c++) {
      aug_make_copy(&eng->spec, key, c, image, m->input.c, m->input.h, m->input.w, input);
      cpu_engine_forward(eng, job->worker, w->copies + (size_t)c * m->classes);
    }
    aug_merge(eng->merge, w->copies, eng->spec.copies, m->classes, w->merged, &job->results[i],
              job->extras ? job->extras + i * MERGE_EXTRAS : NULL, aug_spec_weights(&eng->spec));
    if (job->merged)
      memcpy(job->merged + i * (size_t)m->classes, w->merged, (size_t)m->classes * sizeof(float));
  }
  return NULL;
}

/* Runs the workers over the images; 1 if the cancel flag stopped them. */
static int cpu_run(cpu_engine* eng, const uint8_t* images, size_t count, ttp_result* results,
                   float* merged, float* extras) {
  int threads = count < (size_t)eng->threads ? (int)count : eng->threads;
  if (threads <= 1) {
    cpu_job job = {eng, 0, images, 0, count, results, merged, extras, 0};
    cpu_job_run(&job);
    return job.cancelled;
  }
  cpu_job jobs[CPU_MAX_THREADS];
  pthread_t ids[CPU_MAX_THREADS];
  int started[CPU_MAX_THREADS] = {0};
  for (int t = 0; t < threads; t++) {
    jobs[t] = (cpu_job){eng, t, images, count * t / threads, count * (t + 1) / threads, results,
                        merged, extras, 0};
    /* Worker 0's share runs on the calling thread; so does any share whose thread would not
       start, so a machine short of threads is slower, never wrong. */
    if (t > 0) started[t] = pthread_create(&ids[t], NULL, cpu_job_run, &jobs[t]) == 0;
  }
  for (int t = 0; t < threads; t++)
    if (!started[t]) cpu_job_run(&jobs[t]);
  int cancelled = 0;
  for (int t = 0; t < threads; t++) {
    if (t > 0 && started[t]) pthread_join(ids[t], NULL);
    cancelled |= jobs[t].cancelled;
  }
  return cancelled;
}

static ttp_status cpu_engine_run(void* state, const uint8_t* images, size_t count,
                                 ttp_result* results, float* merged, float* extras, ttp_err* e) {
  TRACE_PUSH("cpu classify");
  const int cancelled = cpu_run(state, images, count, results, merged, extras);
  TRACE_POP();
  return cancelled ? ERR(e, TTP_ERR_CANCELLED, "cancelled (ttp_cancel) during a batch") : TTP_OK;
}

ttp_status cpu_engine_copies(const model* m, const engine_config* c, const uint8_t* image,
                             float* inputs, float* probs, ttp_err* e) {
  engine_config one = *c;
  one.threads = 1;
  void* state;
  TRY(cpu_engine_open(m, &one, &state, e));
  cpu_engine* eng = state;
  const size_t pixels = model_shape_size(m->input);
  const uint64_t key = aug_image_key(image, pixels);
  float* input = copy_input(eng, &eng->workers[0]);
  for (int k = 0; k < eng->spec.copies; k++) {
    aug_make_copy(&eng->spec, key, k, image, m->input.c, m->input.h, m->input.w, input);
    if (inputs) memcpy(inputs + (size_t)k * pixels, input, pixels * sizeof *input);
    cpu_engine_forward(eng, 0, probs + (size_t)k * m->classes);
  }
  cpu_engine_close(eng);
  return TTP_OK;
}

static const char* cpu_engine_describe(void* state) {
  return ((cpu_engine*)state)->description;
}

const host_engine_ops cpu_engine_ops = {
    .open = cpu_engine_open,
    .run = cpu_engine_run,
    .describe = cpu_engine_describe,
    .close = cpu_engine_close,
};

/* ---- what it runs, and one layer alone ---------------------------------------------------- */

int cpu_engine_supports(const model_layer* l, const engine_config* c, char* why, size_t n) {
  (void)c;
  if ((unsigned)l->op < MODEL_OP_COUNT && cpu_layer_table[l->op]) return 1;
  snprintf(why, n, "no CPU code for layer kind %d", (int)l->op);
  return 0;
}

ttp_status cpu_engine_run_layer(const model_layer* l, int n, const engine_config* c, int use_graph,
                                const float* in, float* out, size_t guard, ttp_err* e) {
  (void)c, (void)use_graph;
  if (l->input_count != 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "layer %s: one layer alone runs on one input, not %d",
               l->name, l->input_count);
  size_t plane = (size_t)l->out.h * l->out.w;
  cpu_worker w = {.acc = malloc((plane ? plane : 1) * sizeof(double))};
  if (!w.acc) return ERR_NOMEM(e, plane * sizeof(double));
  size_t rows_in = model_shape_size(l->in), rows_out = model_shape_size(l->out);
  for (int r = 0; r < n; r++) {
    const float* one[1] = {in + (size_t)r * rows_in};
    cpu_layer_table[l->op](l, one, out + guard + (size_t)r * rows_out, &w);
  }
  free(w.acc);
  return TTP_OK;
}
