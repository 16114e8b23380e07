/* The onednn engine: plan (the context, the full tile's net), then run (tiles: the copies,
   the net, the merge, each spread over the engine's threads). */
#include "onednn_engine.h"

#include <math.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../augment/merge.h"
#include "../../augment/tta.h"
#include "../cpu/cpu_engine.h"
#include "../trace.h"
#include "onednn_net.h"

/* Rows (copies) a thread in a full tile: 64 rows of LeNet are about 4 MB of activations, which
   stays in a core's L2 and its share of L3; at 2 threads 40 to 160 rows a tile ran at the same
   speed and 320 at half of it (BENCHMARKS.md, "CPU engines"). */
enum { TILE_ROWS_PER_THREAD = 64, MAX_NETS = 16 };

typedef struct onednn_engine {
  const model* m;
  aug_spec spec;
  ttp_merge merge;
  int threads;
  const engine_cancel_flag* cancel;      /* engine_config.cancel: read between tiles */
  onednn_context ctx;
  size_t tile;                   /* images in a full tile */
  size_t net_images[MAX_NETS];   /* the nets planned so far, by images */
  onednn_net* nets[MAX_NETS];
  int net_count;
  uint64_t* keys;                /* tile: each image's key */
  float* merged;                 /* tile x classes */
  char description[160];
} onednn_engine;

static void onednn_engine_close(void* state);

/* The net for `images` images (a full tile, or a power of two below it): planned on first use. */
static ttp_status net_for(onednn_engine* eng, size_t images, onednn_net** net, ttp_err* e) {
  for (int i = 0; i < eng->net_count; i++)
    if (eng->net_images[i] == images) {
      *net = eng->nets[i];
      return TTP_OK;
    }
  if (eng->net_count == MAX_NETS)
    return ERR(e, TTP_ERR_INTERNAL, "onednn engine: more than %d nets", MAX_NETS);
  TRY(onednn_net_plan(&eng->ctx, eng->m, (int)images * eng->spec.copies, net, e));
  eng->net_images[eng->net_count] = images;
  eng->nets[eng->net_count++] = *net;
  return TTP_OK;
}

/* Images a net must hold to take n (1..tile) images. */
static size_t bucket(const onednn_engine* eng, size_t n) {
  size_t b = 1;
  while (b < n) b *= 2;
  return b < eng->tile ? b : eng->tile;
}

static ttp_status onednn_engine_open(const model* m, const engine_config* c, void** out,
                                     ttp_err* e) {
  *out = NULL;
  if (c->threads < 1 || c->threads > CPU_MAX_THREADS)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "threads must be 1..%d, not %d", CPU_MAX_THREADS,
               c->threads);
  onednn_engine* eng = calloc(1, sizeof *eng);
  if (!eng) return ERR_NOMEM(e, sizeof *eng);
  eng->m = m;
  eng->spec = c->spec;
  eng->merge = c->merge;
  eng->threads = c->threads;
  eng->cancel = c->cancel;
  size_t rows = (size_t)TILE_ROWS_PER_THREAD * c->threads;
  eng->tile = rows / (size_t)c->spec.copies;
  if (eng->tile < 1) eng->tile = 1;
  eng->keys = malloc(eng->tile * sizeof *eng->keys);
  eng->merged = malloc(eng->tile * (size_t)m->classes * sizeof *eng->merged);
  if (!eng->keys || !eng->merged) {
    size_t bytes = eng->tile * (sizeof(uint64_t) + (size_t)m->classes * sizeof(float));
    onednn_engine_close(eng);
    return ERR_NOMEM(e, bytes);
  }
  /* oneDNN sizes its kernels' work for the threads of the calling thread's OpenMP settings. */
  omp_set_num_threads(eng->threads);
  onednn_net* full;
  ttp_status st = onednn_context_open(&eng->ctx, e);
  if (st == TTP_OK) st = net_for(eng, eng->tile, &full, e);
  if (st != TTP_OK) {
    onednn_engine_close(eng);
    return st;
  }
  const dnnl_version_t* v = dnnl_version();
  const char* isa = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()); /* "cpu_isa_avx2" */
  if (!strncmp(isa, "cpu_isa_", 8)) isa += 8;
  snprintf(eng->description, sizeof eng->description, "onednn %d.%d.%d, fp32, %s, %d thread%s",
           v->major, v->minor, v->patch, isa, eng->threads, eng->threads == 1 ? "" : "s");
  *out = eng;
  return TTP_OK;
}

static void onednn_engine_close(void* state) {
  onednn_engine* eng = state;
  if (!eng) return;
  for (int i = 0; i < eng->net_count; i++) onednn_net_free(eng->nets[i]);
  onednn_context_close(&eng->ctx);
  free(eng->keys);
  free(eng->merged);
  free(eng);
}

/* n images' copies into the net's input rows: image i's copy k is row i N + k. */
static void make_copies(onednn_engine* eng, onednn_net* net, const uint8_t* images, long n) {
  const model* m = eng->m;
  const size_t pixels = model_shape_size(m->input);
  const int copies = eng->spec.copies;
  float* input = onednn_net_input(net);
  uint64_t* keys = eng->keys;
#pragma omp parallel for num_threads(eng->threads) schedule(static)
  for (long i = 0; i < n; i++) keys[i] = aug_image_key(images + (size_t)i * pixels, pixels);
#pragma omp parallel for num_threads(eng->threads) schedule(static)
  for (long r = 0; r < n * copies; r++)
    aug_make_copy(&eng->spec, keys[r / copies], (int)(r % copies),
                  images + (size_t)(r / copies) * pixels, m->input.c, m->input.h, m->input.w,
                  input + (size_t)r * pixels);
}

/* The net's softmax rows of n images merged into their results (and merged vectors, extras). */
static void merge_copies(onednn_engine* eng, const onednn_net* net, long n, ttp_result* results,
                         float* merged, float* extras) {
  const int classes = eng->m->classes, copies = eng->spec.copies;
  const float* probs = onednn_net_output(net);
#pragma omp parallel for num_threads(eng->threads) schedule(static)
  for (long i = 0; i < n; i++) {
    float* vector = merged ? merged + (size_t)i * classes : eng->merged + (size_t)i * classes;
    aug_merge(eng->merge, probs + (size_t)i * copies * classes, copies, classes, vector,
              &results[i], extras ? extras + (size_t)i * MERGE_EXTRAS : NULL,
              aug_spec_weights(&eng->spec));
  }
}

static ttp_status onednn_engine_run(void* state, const uint8_t* images, size_t count,
                                    ttp_result* results, float* merged, float* extras,
                                    ttp_err* e) {
  onednn_engine* eng = state;
  const size_t pixels = model_shape_size(eng->m->input), classes = (size_t)eng->m->classes;
  TRACE_PUSH("onednn classify");
  omp_set_num_threads(eng->threads);
  ttp_status st = TTP_OK;
  for (size_t start = 0; start < count && st == TTP_OK;) {
    if (engine_cancelled(eng->cancel)) {
      st = ERR(e, TTP_ERR_CANCELLED, "cancelled (ttp_cancel) during a batch");
      break;
    }
    size_t n = count - start < eng->tile ? count - start : eng->tile;
    onednn_net* net;
    st = net_for(eng, bucket(eng, n), &net, e);
    if (st != TTP_OK) break;
    make_copies(eng, net, images + start * pixels, (long)n);
    st = onednn_net_run(net, e);
    if (st != TTP_OK) break;
    merge_copies(eng, net, (long)n, results + start, merged ? merged + start * classes : NULL,
                 extras ? extras + start * MERGE_EXTRAS : NULL);
    start += n;
  }
  TRACE_POP();
  return st;
}

static const char* onednn_engine_describe(void* state) {
  return ((onednn_engine*)state)->description;
}

const host_engine_ops onednn_engine_ops = {
    .open = onednn_engine_open,
    .run = onednn_engine_run,
    .describe = onednn_engine_describe,
    .close = onednn_engine_close,
};

/* ---- what it runs, and one layer alone ---------------------------------------------------- */

/* Every layer of model.h, every window (onednn_net.h says which run as host loops), but for an
   LRN window of even size. */
int onednn_engine_supports(const model_layer* l, const engine_config* c, char* why, size_t n) {
  (void)c;
  if ((unsigned)l->op >= MODEL_OP_COUNT) {
    snprintf(why, n, "no oneDNN code for layer kind %d", (int)l->op);
    return 0;
  }
  if (l->op == MODEL_LRN && l->p.lrn.n % 2 == 0) {
    snprintf(why, n, "an LRN window of even size (%d): oneDNN centres it otherwise", l->p.lrn.n);
    return 0;
  }
  return 1;
}

static int all_finite(const float* v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

int onednn_engine_supports_model(const model* m, const engine_config* c, char* why, size_t n) {
  (void)c;
  for (int i = 0; i < m->layer_count; i++) {
    const model_layer* l = &m->layers[i];
    if ((l->weights && !all_finite(l->weights, l->weight_count)) ||
        (l->bias && !all_finite(l->bias, l->bias_count))) {
      snprintf(why, n, "layer %s has a weight that is not finite (oneDNN's max pooling and "
               "clip do not carry NaN as the reference does)", l->name);
      return 0;
    }
  }
  return 1;
}

ttp_status onednn_engine_run_layer(const model_layer* l, int n, const engine_config* c,
                                   int use_graph, const float* in, float* out, size_t guard,
                                   ttp_err* e) {
  (void)use_graph;
  if (l->input_count != 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "layer %s: one layer alone runs on one input, not %d",
               l->name, l->input_count);
  omp_set_num_threads(c->threads > 0 ? c->threads : 1);
  /* The layer as a model of one layer reading the input. */
  model_layer alone = *l;
  alone.inputs[0] = 0;
  model one = {.input = l->in, .layers = &alone, .layer_count = 1, .layer_capacity = 1};
  onednn_context ctx;
  TRY(onednn_context_open(&ctx, e));
  onednn_net* net;
  ttp_status st = onednn_net_plan(&ctx, &one, n, &net, e);
  if (st == TTP_OK) {
    memcpy(onednn_net_input(net), in, (size_t)n * model_shape_size(l->in) * sizeof(float));
    st = onednn_net_run(net, e);
    if (st == TTP_OK)
      memcpy(out + guard, onednn_net_output(net),
             (size_t)n * model_shape_size(l->out) * sizeof(float));
    onednn_net_free(net);
  }
  onednn_context_close(&ctx);
  return st;
}
