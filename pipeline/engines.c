/* The engine registry: every engine ttapipe has, what each supports, and the order in which
   TTP_ENGINE_AUTO tries them. A new engine is one entry here (and a value appended to
   ttp_engine in ttapipe.h). */
#include <stdio.h>

#include "cpu/cpu_engine.h"
#include "engine.h"

#if TTAPIPE_HAVE_ONEDNN
#include "onednn/onednn_engine.h"
#endif

#if TTAPIPE_HAVE_CUDA
#include "../graph/runner.h"
#include "cudnn/cudnn_engine.h"
#include "fused/fused_engine.h"
#endif

static const engine_entry cpu_entry = {
    .id = TTP_ENGINE_CPU,
    .name = "cpu",
    .supports = cpu_engine_supports,
    .host = &cpu_engine_ops,
    .run_layer = cpu_engine_run_layer,
    .graphs = 1,
};

#if TTAPIPE_HAVE_CUDA
static const engine_entry cudnn_entry = {
    .id = TTP_ENGINE_CUDNN,
    .name = "cudnn",
    .supports = cudnn_supports,
    .network = &cudnn_network,
    .run_layer = cudnn_run_layer,
    .graphs = 1,
};
static const engine_entry fused_entry = {
    .id = TTP_ENGINE_FUSED,
    .name = "fused",
    .supports = fused_supports,
    .supports_model = fused_supports_model,
    .network = &fused_network,
};
#else
static const engine_entry cudnn_entry = {.id = TTP_ENGINE_CUDNN, .name = "cudnn"};
static const engine_entry fused_entry = {.id = TTP_ENGINE_FUSED, .name = "fused"};
#endif

#if TTAPIPE_HAVE_ONEDNN
static const engine_entry onednn_entry = {
    .id = TTP_ENGINE_ONEDNN,
    .name = "onednn",
    .supports = onednn_engine_supports,
    .supports_model = onednn_engine_supports_model,
    .host = &onednn_engine_ops,
    .run_layer = onednn_engine_run_layer,
    .graphs = 1,
};
#else
static const engine_entry onednn_entry = {
    .id = TTP_ENGINE_ONEDNN,
    .name = "onednn",
    .absent = "this ttapipe was built without oneDNN (install Debian's libdnnl-dev and build "
              "again: bash .ci/build)",
};
#endif

/* Values ttapipe.h reserves and never reuses: 3 was the naive baseline, now a benchmark
   (tests/bench/naive.c). */
static const engine_entry* const registry[] = {&cpu_entry, &cudnn_entry, &fused_entry,
                                               &onednn_entry};

/* The fused engine first: where it runs the model (LeNet's shape) it is faster than cudnn from
   batch 64 up in both precisions and at batch 1 in fp16, within 2% of it at batch 1 in fp32
   (BENCHMARKS.md); elsewhere it refuses and cudnn takes over. Without a GPU, onednn: 10 to 40
   times the reference's speed on the same cores (BENCHMARKS.md, "CPU engines"). */
const engine_entry* const engine_preference[] = {&fused_entry, &cudnn_entry, &onednn_entry,
                                                 &cpu_entry, NULL};

const engine_entry* engine_find(ttp_engine id) {
  for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
    if (registry[i]->id == id) return registry[i];
  return NULL;
}

int engine_plain_windows(const model_layer* l, char* why, size_t n) {
  const model_window* w = l->op == MODEL_CONV ? &l->p.conv.w
                          : l->op == MODEL_MAXPOOL || l->op == MODEL_AVGPOOL ? &l->p.pool.w
                                                                             : NULL;
  if (!w) return 1;
  const int grouped = l->op == MODEL_CONV && l->p.conv.groups > 1;
  const int ceil = l->op != MODEL_CONV && l->p.pool.ceil;
  if (model_window_plain(w) && !grouped && !ceil) return 1;
  snprintf(why, n, "a window other than one stride and one padding on every side, without "
           "dilation, groups or ceil mode (%s %s): not yet", model_op_name(l->op), l->name);
  return 0;
}

ttp_status engine_check_model(const engine_entry* engine, const model* m, const engine_config* c,
                              ttp_err* e) {
  if (!engine->supports && engine->absent)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "engine %s: %s", engine->name, engine->absent);
  if (!engine->supports)
    return ERR(e, TTP_ERR_NO_GPU, "engine %s: this ttapipe was built without GPU support "
               "(TTAPIPE_CUDA=OFF)", engine->name);
  char why[320] = "";
  int at;
  if (!engine->graphs && !model_is_chain(m, &at)) {
    const model_layer* l = &m->layers[at];
    char reads[64];
    if (l->input_count > 1)
      snprintf(reads, sizeof reads, "reads %d tensors", l->input_count);
    else if (l->inputs[0] == 0)
      snprintf(reads, sizeof reads, "reads the input image");
    else
      snprintf(reads, sizeof reads, "reads layer %d's output", l->inputs[0] - 1);
    char others[64] = "";
    for (size_t k = 0, n = 0; k < sizeof registry / sizeof *registry; k++)
      if (registry[k]->graphs && n < sizeof others)
        n += snprintf(others + n, sizeof others - n, "%s%s", n ? ", " : "", registry[k]->name);
    return ERR(e, TTP_ERR_MODEL, "engine %s runs chains of layers alone, each reading the one "
               "before; layer %d, %s (%s), %s: a graph (engines that run graphs: %s)",
               engine->name, at, l->name, model_op_name(l->op), reads, others);
  }
  for (int i = 0; i < m->layer_count; i++)
    if (!engine->supports(&m->layers[i], c, why, sizeof why))
      return ERR(e, TTP_ERR_MODEL, "engine %s cannot run layer %s (%s): %s", engine->name,
                 m->layers[i].name, model_op_name(m->layers[i].op), why);
  if (engine->supports_model && !engine->supports_model(m, c, why, sizeof why))
    return ERR(e, TTP_ERR_MODEL, "engine %s cannot run this model: %s", engine->name, why);
  return TTP_OK;
}

ttp_status engine_open_stream(const engine_entry* engine, const model* m, const engine_config* c,
                              batch_stream* s, ttp_err* e) {
  TRY(engine_check_model(engine, m, c, e));
  if (engine->host) return host_stream_open(engine->host, m, c, s, e);
  if (c->device_count > 1) return gpu_devices_open(engine->network, m, c, s, e);
  return gpu_runner_open(engine->network, m, c, s, e);
}
