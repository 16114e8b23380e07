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

typedef struct cpu_worker {
  float* a;      /* activation ping */
  float* b;      /* activation pong; also holds the copy being classified */
  double* acc;   /* convolution accumulator */
  float* copies; /* N x classes: the softmax output of each copy */
  float* merged; /* classes: the merged vector of the image at hand */
} cpu_worker;

struct cpu_engine {
  const model* m;
  aug_spec spec;
  ttp_merge merge;
  int threads;
  const engine_cancel_flag* cancel;    /* engine_config.cancel */
  cpu_worker* workers;
  char description[64];
};

/* ---- the forward table ------------------------------------------------------------------- */

typedef void (*cpu_layer_fn)(const model_layer* l, const float* in, float* out, cpu_worker* w);

static void run_conv(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  cpu_conv2d(in, l->in.c, l->in.h, l->in.w, l->weights, l->bias, l->p.conv.k, l->p.conv.r,
             l->p.conv.s, l->p.conv.stride, l->p.conv.pad, w->acc, out);
}
static void run_maxpool(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_maxpool(in, l->in.c, l->in.h, l->in.w, l->p.pool.r, l->p.pool.s, l->p.pool.stride,
              l->p.pool.pad, out);
}
static void run_avgpool(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_avgpool(in, l->in.c, l->in.h, l->in.w, l->p.pool.r, l->p.pool.s, l->p.pool.stride,
              l->p.pool.pad, l->p.pool.count_pad, out);
}
static void run_leaky_relu(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_leaky_relu(in, model_shape_size(l->in), l->p.leaky.alpha, out);
}
static void run_sigmoid(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_sigmoid(in, model_shape_size(l->in), out);
}
static void run_tanh(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_tanh(in, model_shape_size(l->in), out);
}
static void run_clip(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_clip(in, model_shape_size(l->in), l->p.clip.lo, l->p.clip.hi, out);
}
static void run_relu(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_relu(in, model_shape_size(l->in), out);
}
static void run_fc(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_fc(in, (int)model_shape_size(l->in), l->weights, l->bias, l->p.fc.out, out);
}
static void run_lrn(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_lrn(in, l->in.c, l->in.h, l->in.w, l->p.lrn.n, l->p.lrn.alpha, l->p.lrn.beta, l->p.lrn.k,
          out);
}
static void run_softmax(const model_layer* l, const float* in, float* out, cpu_worker* w) {
  (void)w;
  cpu_softmax(in, model_shape_size(l->in), out);
}

static const cpu_layer_fn cpu_layer_table[MODEL_OP_COUNT] = {
    [MODEL_CONV] = run_conv,   [MODEL_MAXPOOL] = run_maxpool, [MODEL_RELU] = run_relu,
    [MODEL_FC] = run_fc,       [MODEL_LRN] = run_lrn,         [MODEL_SOFTMAX] = run_softmax,
    [MODEL_AVGPOOL] = run_avgpool, [MODEL_LEAKY_RELU] = run_leaky_relu,
    [MODEL_SIGMOID] = run_sigmoid, [MODEL_TANH] = run_tanh, [MODEL_CLIP] = run_clip,
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
  size_t act = model_max_activation(m), acc = 1;
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
  eng->workers = calloc((size_t)threads, sizeof *eng->workers);
  if (!eng->workers) {
    cpu_engine_close(eng);
    return ERR_NOMEM(e, (size_t)threads * sizeof(cpu_worker));
  }
  for (int t = 0; t < threads; t++) {
    cpu_worker* w = &eng->workers[t];
    w->a = malloc(act * sizeof *w->a);
    w->b = malloc(act * sizeof *w->b);
    w->acc = malloc(acc * sizeof *w->acc);
    w->copies = malloc((size_t)spec->copies * m->classes * sizeof *w->copies);
    w->merged = malloc((size_t)m->classes * sizeof *w->merged);
    if (!w->a || !w->b || !w->acc || !w->copies || !w->merged) {
      cpu_engine_close(eng);
      return ERR_NOMEM(e, act * 2 * sizeof(float) + acc * sizeof(double));
    }
  }
  *out = eng;
  return TTP_OK;
}

static void cpu_engine_close(void* state) {
  cpu_engine* eng = state;
  if (!eng) return;
  if (eng->workers)
    for (int t = 0; t < eng->threads; t++) {
      free(eng->workers[t].a);
      free(eng->workers[t].b);
      free(eng->workers[t].acc);
      free(eng->workers[t].copies);
      free(eng->workers[t].merged);
    }
  free(eng->workers);
  free(eng);
}

/* ---- run ------------------------------------------------------------------------------------ */

/* One copy through every layer, on the buffers of worker `worker`. input: the model's input
   shape; probs: classes floats. */
static void cpu_engine_forward(cpu_engine* eng, int worker, const float* input, float* probs) {
  const model* m = eng->m;
  cpu_worker* w = &eng->workers[worker];
  const float* in = input;
  float* out = w->a;
  for (int i = 0; i < m->layer_count; i++) {
    const model_layer* l = &m->layers[i];
    cpu_layer_table[l->op](l, in, out, w);
    in = out;
    out = out == w->a ? w->b : w->a;
  }
  memcpy(probs, in, (size_t)m->classes * sizeof *probs);
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
  /* The copy lives in the worker's pong buffer: the first layer writes to ping. */
  float* input = w->b;
  for (size_t i = job->begin; i < job->end; i++) {
    if (engine_cancelled(eng->cancel)) {
      job->cancelled = 1;
      break;
    }
    const uint8_t* image = job->images + i * pixels;
    uint64_t key = aug_image_key(image, pixels);
    for (int c = 0; c < eng->spec.copies; c++) {
      aug_make_copy(&eng->spec, key, c, image, m->input.c, m->input.h, m->input.w, input);
      cpu_engine_forward(eng, job->worker, input, w->copies + (size_t)c * m->classes);
    }
    aug_merge(eng->merge, w->copies, eng->spec.copies, m->classes, w->merged, &job->results[i],
              job->extras ? job->extras + i * MERGE_EXTRAS : NULL);
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
  for (int k = 0; k < eng->spec.copies; k++) {
    float* in = inputs ? inputs + (size_t)k * pixels : eng->workers[0].b;
    aug_make_copy(&eng->spec, key, k, image, m->input.c, m->input.h, m->input.w, in);
    cpu_engine_forward(eng, 0, in, probs + (size_t)k * m->classes);
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
  size_t plane = (size_t)l->out.h * l->out.w;
  cpu_worker w = {.acc = malloc((plane ? plane : 1) * sizeof(double))};
  if (!w.acc) return ERR_NOMEM(e, plane * sizeof(double));
  size_t rows_in = model_shape_size(l->in), rows_out = model_shape_size(l->out);
  for (int r = 0; r < n; r++)
    cpu_layer_table[l->op](l, in + (size_t)r * rows_in, out + guard + (size_t)r * rows_out, &w);
  free(w.acc);
  return TTP_OK;
}
