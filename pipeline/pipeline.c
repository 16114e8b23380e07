/* The pipeline handle: options, lifecycle (open = load, check, plan the engine; close), the
   model's description for callers, and classification, handed whole to the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../augment/merge.h"
#include "../augment/tta.h"
#include "../model/load.h"
#include "../model/plan.h"
#include "clock.h"
#include "cpu/cpu_engine.h"
#include "pipeline_internal.h"
#include "plan_cache.h"

enum { MAX_BATCH_LIMIT = 65536, MIN_SLOTS = 2, MAX_SLOTS = 16 };

/* ---- version, status, build -------------------------------------------------------------- */

unsigned ttp_version_number(void) { return TTP_VERSION_NUMBER; }

const char* ttp_version_string(void) { return TTP_VERSION_STRING; }

const char* ttp_status_string(ttp_status s) {
  switch (s) {
    case TTP_OK: return "ok";
    case TTP_ERR_INVALID_ARGUMENT: return "invalid argument";
    case TTP_ERR_OUT_OF_MEMORY: return "out of memory";
    case TTP_ERR_IO: return "input/output error";
    case TTP_ERR_FORMAT: return "bad file format";
    case TTP_ERR_MODEL: return "bad model";
    case TTP_ERR_NO_GPU: return "no GPU";
    case TTP_ERR_CUDA: return "CUDA error";
    case TTP_ERR_CUDNN: return "cuDNN error";
    case TTP_ERR_CUBLAS: return "cuBLAS error";
    case TTP_ERR_INTERNAL: return "internal error";
    case TTP_ERR_CANCELLED: return "cancelled";
    case TTP_ERR_GPU_LOST: return "GPU lost";
  }
  return "unknown status";
}

static const char* const precision_names[] = {"fp32", "fp16", "tf32"};
enum { PRECISIONS = (int)(sizeof precision_names / sizeof *precision_names) };

const char* ttp_precision_name(ttp_precision p) {
  return (unsigned)p < PRECISIONS ? precision_names[p] : NULL;
}

ttp_status ttp_precision_from_name(const char* name, ttp_precision* p) {
  for (int i = 0; name && p && i < PRECISIONS; i++)
    if (strcmp(name, precision_names[i]) == 0) {
      *p = (ttp_precision)i;
      return TTP_OK;
    }
  return TTP_ERR_INVALID_ARGUMENT;
}

/* ---- options and lifecycle --------------------------------------------------------------- */

void ttp_options_init(ttp_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->engine = TTP_ENGINE_AUTO;
  o->threads = 0;
  o->tta = NULL;
  o->device = 0;
  o->precision = TTP_PRECISION_FP32;
  o->max_batch = 1024;
  o->slots = 3;
  o->no_graph = 0;
  o->wait = TTP_WAIT_AUTO;
  o->plan = TTP_PLAN_MEASURE;
}

/* The caller's options as this library knows them: fields beyond the caller's struct_size (an
   older header) keep their defaults. */
static ttp_status take_options(ttp_pipeline* p, const ttp_options* given) {
  ttp_options_init(&p->options);
  size_t first_fields = offsetof(ttp_options, model_dir) + sizeof given->model_dir;
  if (given->struct_size < first_fields)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT,
               "ttp_options.struct_size is %zu: call ttp_options_init first", given->struct_size);
  size_t n = given->struct_size < sizeof p->options ? given->struct_size : sizeof p->options;
  memcpy(&p->options, given, n);
  p->options.struct_size = sizeof p->options;
  if (!p->options.model_dir)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "no model directory given");
  const ttp_options* o = &p->options;
  if (o->engine == TTP_ENGINE_RESERVED_3)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "engine 3 is retired: the naive baseline is a "
               "benchmark now (tests/bench/naive.c)");
  if (o->engine != TTP_ENGINE_AUTO && !engine_find(o->engine))
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "unknown engine %d", (int)o->engine);
  if (!ttp_precision_name(o->precision))
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "unknown precision %d", (int)o->precision);
  if (o->max_batch < 1 || o->max_batch > MAX_BATCH_LIMIT)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "max_batch must be 1..%d, not %d",
               MAX_BATCH_LIMIT, o->max_batch);
  if (o->slots < MIN_SLOTS || o->slots > MAX_SLOTS)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "slots must be %d..%d, not %d", MIN_SLOTS,
               MAX_SLOTS, o->slots);
  if (o->device < 0) return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "device %d", o->device);
  const int most = (int)(sizeof p->devices / sizeof *p->devices);
  if (o->device_count < 0 || o->device_count > most || (o->device_count && !o->devices))
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "devices: 1..%d device indices, not %d%s", most,
               o->device_count, o->device_count && !o->devices ? " and no array" : "");
  for (int g = 0; g < o->device_count; g++) {
    if (o->devices[g] < 0)
      return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "devices[%d] is %d", g, o->devices[g]);
    p->devices[g] = o->devices[g];
  }
  if (o->device_count) p->options.device = p->devices[0];
  if (o->device_count < 2) p->options.device_count = 0;
  p->options.devices = NULL; /* the caller's array need not outlive ttp_open */
  if (!o->plan_cache) {
    if (!plan_cache_default_path(p->plan_cache, sizeof p->plan_cache)) p->plan_cache[0] = '\0';
  } else if (strlen(o->plan_cache) >= sizeof p->plan_cache) {
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "plan_cache: a path of %zu bytes",
               strlen(o->plan_cache));
  } else {
    strcpy(p->plan_cache, o->plan_cache);
  }
  p->options.plan_cache = NULL; /* nor the caller's string */
  if (o->wait < TTP_WAIT_AUTO || o->wait > TTP_WAIT_BLOCK)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "unknown wait %d", (int)o->wait);
  if (o->plan != TTP_PLAN_MEASURE && o->plan != TTP_PLAN_HEURISTIC)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "unknown plan %d", (int)o->plan);
  if (p->options.threads < 0 || p->options.threads > CPU_MAX_THREADS)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "threads must be 0..%d, not %d",
               CPU_MAX_THREADS, p->options.threads);
  if (p->options.threads == 0) p->options.threads = pipeline_cores();
  for (int c = 0; o->normalize && c < 3; c++)
    if (!model_mean_ok(o->mean[c]) || !model_std_ok(o->std[c]))
      return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "input scaling of channel %d: mean %g must "
                 "be -16..16 and std %g 1e-6..1e6", c, o->mean[c], o->std[c]);
  TRY(aug_spec_from(p->options.tta, &p->spec, &p->merge, &p->temperature, &p->err));
  p->options.tta = NULL; /* the caller's struct need not outlive ttp_open */
  return TTP_OK;
}

/* The read-only description callers get through ttp_model and ttp_layer. */
static ttp_status describe_model(ttp_pipeline* p) {
  const model* m = p->model;
  p->layers = calloc((size_t)m->layer_count, sizeof *p->layers);
  p->details = calloc((size_t)m->layer_count, sizeof *p->details);
  p->index_labels = calloc((size_t)m->classes, sizeof *p->index_labels);
  p->layer_inputs = calloc((size_t)m->layer_count * MODEL_MAX_INPUTS, sizeof *p->layer_inputs);
  if (!p->layers || !p->details || !p->index_labels || !p->layer_inputs)
    return ERR_NOMEM(&p->err, (size_t)m->layer_count * (sizeof *p->layers + sizeof *p->details));
  double flops = 0;
  for (int i = 0; i < m->layer_count; i++) {
    const model_layer* l = &m->layers[i];
    model_describe(l, p->details[i], sizeof p->details[i]);
    int* inputs = p->layer_inputs + (size_t)i * MODEL_MAX_INPUTS;
    for (int k = 0; k < l->input_count; k++) inputs[k] = l->inputs[k] - 1; /* value v: layer v-1 */
    p->layers[i] = (ttp_layer_info){
        .name = l->name,
        .kind = model_op_name(l->op),
        .detail = p->details[i],
        .in_c = l->in.c, .in_h = l->in.h, .in_w = l->in.w,
        .out_c = l->out.c, .out_h = l->out.h, .out_w = l->out.w,
        .parameters = (long long)l->weight_count + (l->bias ? (long long)l->bias_count : 0),
        .flops = 2.0 * l->macs,
        .input_count = l->input_count,
        .inputs = inputs,
    };
    flops += 2.0 * l->macs;
  }
  for (int k = 0; k < m->classes; k++) snprintf(p->index_labels[k], sizeof p->index_labels[k], "%d", k);
  p->info = (ttp_model_info){
      .input_channels = m->input.c, .input_rows = m->input.h, .input_cols = m->input.w,
      .classes = m->classes,
      .layers = m->layer_count,
      .parameters = model_parameter_count(m),
      .flops = flops,
  };
  model_plan plan;
  TRY(model_plan_values(m, &plan, &p->err));
  p->info.activation_bytes = 4.0 * (double)plan.arena;
  p->info.activation_sum_bytes = 4.0 * (double)plan.sum;
  model_plan_free(&plan);
  memcpy(p->info.input_mean, m->scaling.mean, sizeof p->info.input_mean);
  memcpy(p->info.input_std, m->scaling.std, sizeof p->info.input_std);
  return TTP_OK;
}

static engine_config config_of(const ttp_pipeline* p) {
  return (engine_config){
      .threads = p->options.threads,
      .device = p->options.device,
      .devices = p->devices,
      .device_count = p->options.device_count > 1 ? p->options.device_count : 1,
      .choice_device = p->options.device,
      .precision = p->options.precision,
      .max_batch = p->options.max_batch,
      .exact_batch = p->options.open_behind,
      .slots = p->options.slots,
      .use_graph = p->options.no_graph     ? GRAPH_EAGER
                   : p->options.lazy_graphs ? GRAPH_LAZY
                                            : GRAPH_AT_PLAN,
      .wait = p->options.wait,
      .plan = p->options.plan,
      .plan_cache = p->plan_cache[0] ? p->plan_cache : NULL,
      .spec = p->spec,
      .merge = p->merge,
      .cancel = &p->cancel,
  };
}

/* TTP_ENGINE_AUTO: the first engine of the registry's preference that supports the model and
   opens; why the ones before it did not goes into *fallback. A named engine: that one, or its
   error. */
static ttp_status open_engine(ttp_pipeline* p, char* fallback, size_t size, ttp_err* e) {
  engine_config config = config_of(p);
  fallback[0] = '\0';
  if (p->options.engine != TTP_ENGINE_AUTO) {
    const engine_entry* engine = engine_find(p->options.engine);
    TRY(engine_open_stream(engine, p->model, &config, &p->stream, e));
    p->engine = engine;
    return TTP_OK;
  }
  int n = 0;
  for (int i = 0; engine_preference[i]; i++) {
    const engine_entry* engine = engine_preference[i];
    ttp_err why = {0};
    if (engine_open_stream(engine, p->model, &config, &p->stream, &why) == TTP_OK) {
      p->engine = engine;
      return TTP_OK;
    }
    if (n >= 0 && (size_t)n < size)
      n += snprintf(fallback + n, size - n, "%s%s could not open: %s", n ? "; " : "",
                    engine->name, why.message);
    if (!engine_preference[i + 1]) {
      *e = why;
      return why.status;
    }
  }
  return ERR(e, TTP_ERR_INTERNAL, "the engine registry is empty");
}

/* The engine opened and the pipeline described: ttp_open's second half, on the calling thread
   or (open_behind) on the opener's, its failure recorded in *e. */
static ttp_status finish_open(ttp_pipeline* p, ttp_err* e) {
  char fallback[1024];
  const double opening = clock_seconds();
  TRY(open_engine(p, fallback, sizeof fallback, e));
  p->engine_s = clock_seconds() - opening;
  TRY(stream_set_temperature(&p->stream, p->temperature, e));
  char tempered[48] = "";
  if (p->temperature != 1.0f)
    snprintf(tempered, sizeof tempered, "; temperature %g", p->temperature);
  snprintf(p->description, sizeof p->description,
           "%s; tta %d cop%s%s%s; activations %.1f KB a copy%s%s%s",
           p->stream.ops->describe(p->stream.impl), p->spec.copies,
           p->spec.copies == 1 ? "y" : "ies", tempered,
           p->model->softmax_added ? "; a softmax added after the model's logits" : "",
           p->info.activation_bytes / 1024.0, fallback[0] ? " (auto: " : "", fallback,
           fallback[0] ? ")" : "");
  return TTP_OK;
}

static void* opener_run(void* arg) {
  ttp_pipeline* p = arg;
  p->open_status = finish_open(p, &p->open_err);
  return NULL;
}

/* The pipeline once its engine has opened (or failed to): the opener joined. The const
   getters' way to it too. */
static const ttp_pipeline* settled(const ttp_pipeline* p) {
  if (p && p->opening) {
    ttp_pipeline* q = (ttp_pipeline*)p; /* joining the opener changes no state a caller sees */
    pthread_join(q->opener, NULL);
    q->opening = 0;
  }
  return p;
}

ttp_status pipeline_ready(ttp_pipeline* p) {
  settled(p);
  if (p->open_status != TTP_OK) {
    p->err = p->open_err;
    return p->open_status;
  }
  if (!p->engine) return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "the pipeline is not open");
  return TTP_OK;
}

ttp_status ttp_wait_open(ttp_pipeline* p) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  return pipeline_ready(p);
}


static ttp_status open_pipeline(ttp_pipeline* p, const ttp_options* options) {
  if (!options) return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "no options given");
  TRY(take_options(p, options));
  const char* path = p->options.model_dir;
  const double start = clock_seconds();
  TRY(model_load(path, &p->model, &p->err));
  p->model_s = clock_seconds() - start;
  const model_shape in = p->model->input;
  if ((in.c != 1 && in.c != 3) || in.h < TTP_MIN_SIDE || in.h > TTP_MAX_SIDE ||
      in.w < TTP_MIN_SIDE || in.w > TTP_MAX_SIDE)
    return ERR(&p->err, TTP_ERR_MODEL, "%s: the model takes %dx%dx%d inputs; ttapipe classifies "
               "images of 1 or 3 channels of %dx%d to %dx%d", path, in.c, in.h, in.w,
               TTP_MIN_SIDE, TTP_MIN_SIDE, TTP_MAX_SIDE, TTP_MAX_SIDE);
  if (p->options.normalize)
    for (int c = 0; c < 3; c++) /* a grey model takes [0] */
      p->model->scaling.mean[c] = p->options.mean[in.c == 1 ? 0 : c],
      p->model->scaling.std[c] = p->options.std[in.c == 1 ? 0 : c];
  aug_spec_scale(&p->spec, p->model->scaling.mean, p->model->scaling.std, in.c);
  TRY(describe_model(p));
  if (p->options.open_behind && pthread_create(&p->opener, NULL, opener_run, p) == 0) {
    p->opening = 1;
    return TTP_OK;
  }
  return finish_open(p, &p->err); /* no thread to be had: opened here, as without open_behind */
}

ttp_status ttp_open(const ttp_options* options, ttp_pipeline** out) {
  if (!out) return TTP_ERR_INVALID_ARGUMENT;
  *out = calloc(1, sizeof **out);
  if (!*out) return TTP_ERR_OUT_OF_MEMORY;
  return open_pipeline(*out, options);
}

void ttp_close(ttp_pipeline* p) {
  if (!p) return;
  settled(p);
  stream_close(&p->stream);
  free(p->layers);
  free(p->details);
  free(p->layer_inputs);
  free(p->index_labels);
  model_free(p->model);
  free(p);
}

const char* ttp_engine_description(const ttp_pipeline* p) {
  return p ? settled(p)->description : "";
}

const char* ttp_last_error(const ttp_pipeline* p) {
  if (!p) return "no pipeline (ttp_open could not allocate one)";
  return p->err.status == TTP_OK ? "" : p->err.message;
}

/* ---- the model, for callers ---------------------------------------------------------------- */

const ttp_model_info* ttp_model(const ttp_pipeline* p) {
  return p && p->layers ? &p->info : NULL;
}

const ttp_layer_info* ttp_layer(const ttp_pipeline* p, int index) {
  if (!p || !p->layers || index < 0 || index >= p->info.layers) return NULL;
  return &p->layers[index];
}

const char* ttp_class_label(const ttp_pipeline* p, int class_index) {
  if (!p || !p->index_labels || class_index < 0 || class_index >= p->info.classes) return NULL;
  return p->model->labels ? p->model->labels[class_index] : p->index_labels[class_index];
}

/* ---- classifying ---------------------------------------------------------------------------- */

ttp_status pipeline_idle(ttp_pipeline* p) {
  if (p->stream.in_flight > 0)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "%d batches submitted with ttp_submit are in "
               "flight: collect them first", p->stream.in_flight);
  return TTP_OK;
}

/* A call's status: a cancel request it ended (a host engine gave a batch up) is spent. */
static ttp_status spend_cancel(ttp_pipeline* p, ttp_status s) {
  if (s == TTP_ERR_CANCELLED) atomic_store(&p->cancel, 0);
  return s;
}

ttp_status ttp_classify(ttp_pipeline* p, const uint8_t* images, size_t count, ttp_result* results,
                        float* probabilities) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  TRY(pipeline_ready(p));
  if (count == 0) return TTP_OK;
  if (!images || !results)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_classify: images and results are required");
  TRY(pipeline_idle(p));
  return spend_cancel(p, stream_run(&p->stream, images, count, results, probabilities, NULL,
                                    &p->err));
}

ttp_uncertainty pipeline_uncertainty(const float* merged, int classes, const float* extras) {
  float entropy = 0; /* of the vector handed out: after the temperature */
  for (int k = 0; k < classes; k++) entropy += merge_surprise(merged[k]);
  return (ttp_uncertainty){
      .entropy = entropy,
      .mutual_information = extras[MERGE_EXTRA_MUTUAL],
      .agreement = extras[MERGE_EXTRA_AGREEMENT],
  };
}

const ttp_uncertainty* ttp_file_uncertainty(const ttp_pipeline* p) {
  return p ? p->file_uncertainty : NULL;
}

ttp_status ttp_classify_uncertainty(ttp_pipeline* p, const uint8_t* images, size_t count,
                                    ttp_result* results, float* probabilities,
                                    ttp_uncertainty* uncertainty) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  TRY(pipeline_ready(p));
  if (count == 0) return TTP_OK;
  if (!images || !results || !uncertainty)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT,
               "ttp_classify_uncertainty: images, results and uncertainty are required");
  TRY(pipeline_idle(p));
  const size_t classes = (size_t)p->info.classes;
  float* merged = probabilities ? probabilities : malloc(count * classes * sizeof *merged);
  float* extras = malloc(count * MERGE_EXTRAS * sizeof *extras);
  ttp_status st = merged && extras
                      ? stream_run(&p->stream, images, count, results, merged, extras, &p->err)
                      : ERR_NOMEM(&p->err, count * (classes + MERGE_EXTRAS) * sizeof(float));
  for (size_t i = 0; st == TTP_OK && i < count; i++)
    uncertainty[i] = pipeline_uncertainty(merged + i * classes, (int)classes,
                                          extras + i * MERGE_EXTRAS);
  if (merged != probabilities) free(merged);
  free(extras);
  return spend_cancel(p, st);
}

ttp_status ttp_inspect_copies(ttp_pipeline* p, const uint8_t* image, uint8_t* pixels,
                              float* probabilities) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  TRY(pipeline_ready(p));
  if (!image || !probabilities)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT,
               "ttp_inspect_copies: an image and the probabilities are required");
  const model* m = p->model;
  const size_t n = model_shape_size(m->input), copies = (size_t)p->spec.copies;
  float* inputs = pixels ? malloc(copies * n * sizeof *inputs) : NULL;
  if (pixels && !inputs) return ERR_NOMEM(&p->err, copies * n * sizeof *inputs);
  engine_config c = config_of(p);
  ttp_status s = cpu_engine_copies(m, &c, image, inputs, probabilities, &p->err);
  const size_t plane = (size_t)m->input.h * m->input.w;
  for (size_t i = 0; s == TTP_OK && pixels && i < copies * n; i++) {
    const int ch = (int)(i % n / plane);
    float v = inputs[i];
    if (p->spec.scaled) v = v * p->spec.std[ch] + p->spec.mean[ch]; /* undo the scaling */
    v = v * 255.0f + 0.5f;
    pixels[i] = !(v > 0) ? 0 : v >= 255 ? 255 : (uint8_t)v;
  }
  free(inputs);
  return s;
}

/* ---- device inputs -------------------------------------------------------------------------- */

ttp_status ttp_classify_device(ttp_pipeline* p, const uint8_t* images, size_t count,
                               ttp_result* results, float* probabilities, void* stream) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  TRY(pipeline_ready(p));
  if (p->options.device_count > 1)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_classify_device takes one device's "
               "memory: open the pipeline on one device");
  if (!p->stream.ops->classify_device)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_classify_device needs a GPU engine, not "
               "%s", p->engine->name);
  if (p->temperature != 1.0f) /* applied on the host as results are collected */
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_classify_device does not apply a TTA "
               "temperature (%g): use ttp_classify", p->temperature);
  if (count == 0) return TTP_OK;
  if (!images || !results)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT,
               "ttp_classify_device: images and results are required");
  TRY(pipeline_idle(p));
  return p->stream.ops->classify_device(p->stream.impl, images, count, results, probabilities,
                                        stream, &p->err);
}

/* ---- streaming batches ---------------------------------------------------------------------- */

size_t ttp_batch_capacity(const ttp_pipeline* p) {
  return p && settled(p)->engine ? p->stream.capacity : 0;
}

int ttp_batches_max(const ttp_pipeline* p) { return p && settled(p)->engine ? p->stream.depth : 0; }

int ttp_batches_in_flight(const ttp_pipeline* p) {
  return p && settled(p)->engine ? p->stream.in_flight : 0;
}

ttp_status ttp_submit(ttp_pipeline* p, const uint8_t* images, size_t count) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  TRY(pipeline_ready(p));
  if (!images || count < 1 || count > p->stream.capacity)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_submit: images and 1..%zu of them are "
               "required, not %zu", p->stream.capacity, count);
  uint8_t* slot = stream_acquire(&p->stream);
  if (!slot)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_submit: all %d batches are in flight: "
               "collect the oldest first", p->stream.depth);
  memcpy(slot, images, count * p->stream.pixels);
  ttp_status s = stream_submit(&p->stream, count, &p->err);
  if (s != TTP_OK) stream_abandon(&p->stream);
  return s;
}

ttp_status ttp_collect(ttp_pipeline* p, ttp_result* results, float* probabilities,
                       size_t* count) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  if (count) *count = 0;
  TRY(pipeline_ready(p));
  if (!results || !count)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_collect: results and count are required");
  if (p->stream.in_flight < 1)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_collect: no batch in flight");
  ttp_status s = stream_collect(&p->stream, results, probabilities, NULL, count, &p->err);
  if (s != TTP_OK) stream_abandon(&p->stream);
  return spend_cancel(p, s);
}

int ttp_batch_ready(ttp_pipeline* p) {
  return p && settled(p)->engine ? stream_ready(&p->stream) : 0;
}

/* ---- measuring ---------------------------------------------------------------------------- */

ttp_status ttp_set_profiling(ttp_pipeline* p, int on) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  TRY(pipeline_ready(p));
  stream_set_profiling(&p->stream, on);
  return TTP_OK;
}

ttp_status ttp_get_run_stats(const ttp_pipeline* p, ttp_run_stats* stats) {
  if (!p || !settled(p)->engine || !stats || stats->struct_size < sizeof *stats)
    return TTP_ERR_INVALID_ARGUMENT;
  *stats = p->stream.stats;
  stats->struct_size = sizeof *stats;
  return TTP_OK;
}

ttp_status ttp_get_startup(const ttp_pipeline* p, ttp_startup* startup) {
  if (!p || !settled(p)->engine || !startup || startup->struct_size < sizeof *startup)
    return TTP_ERR_INVALID_ARGUMENT;
  const ttp_startup* parts = &p->stream.startup;
  *startup = (ttp_startup){.struct_size = sizeof *startup, .model_s = p->model_s,
                           .engine_s = p->engine_s, .cuda_s = parts->cuda_s,
                           .buffers_s = parts->buffers_s, .graphs_s = parts->graphs_s};
  const double rest = p->engine_s - parts->cuda_s - parts->buffers_s - parts->graphs_s;
  startup->plan_s = rest > 0 ? rest : 0;
  return TTP_OK;
}

ttp_status ttp_bench_device(ttp_pipeline* p, const uint8_t* images, size_t count, int replays,
                            double* ms) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  TRY(pipeline_ready(p));
  if (!p->stream.ops->bench_device || !images || !ms)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT,
               "ttp_bench_device needs an open GPU engine, images and a result array");
  return p->stream.ops->bench_device(p->stream.impl, images, count, replays, ms, &p->err);
}
