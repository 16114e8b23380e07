/* A host engine behind the streaming core (stream.h): the slots are plain buffers, a submitted
   batch waits in its slot, and collecting it runs the engine on it, on the calling thread (and
   the engine's own workers). So the CPU engine is driven the way the GPU engines are. */
#include <stdlib.h>

#include "clock.h"
#include "engine.h"

/* Images per batch (at most: max_batch if smaller) and slots of the ring: enough for the CPU
   engines' threads to share a batch, small enough that the files path hands results out
   often. */
enum { HOST_CAPACITY = 256, HOST_DEPTH = 2 };

typedef struct host_stream {
  const host_engine_ops* engine;
  void* state;
  uint8_t* input[HOST_DEPTH];
} host_stream;

static uint8_t* host_input(void* impl, int s) { return ((host_stream*)impl)->input[s]; }

static ttp_status host_submit(void* impl, int s, size_t count, ttp_run_stats* stats, ttp_err* e) {
  (void)impl, (void)s, (void)count, (void)stats, (void)e;
  return TTP_OK;
}

static ttp_status host_collect(void* impl, int s, size_t count, ttp_result* results,
                               float* merged, float* extras, ttp_run_stats* stats, double* waited,
                               ttp_err* e) {
  (void)waited; /* the host's time is its own */
  host_stream* h = impl;
  double start = clock_seconds();
  TRY(h->engine->run(h->state, h->input[s], count, results, merged, extras, e));
  if (stats) {
    stats->batches++;
    stats->images += count;
    stats->compute_ms += 1e3 * (clock_seconds() - start);
  }
  return TTP_OK;
}

/* The work happens when the batch is collected: it never has to wait for anything else. */
static int host_ready(void* impl, int s) {
  (void)impl, (void)s;
  return 1;
}

static void host_abandon(void* impl, int s) { (void)impl, (void)s; }

static const char* host_describe(void* impl) {
  host_stream* h = impl;
  return h->engine->describe(h->state);
}

static void host_close(void* impl) {
  host_stream* h = impl;
  if (!h) return;
  h->engine->close(h->state);
  for (int s = 0; s < HOST_DEPTH; s++) free(h->input[s]);
  free(h);
}

static const stream_impl host_stream_ops = {
    .input = host_input,
    .submit = host_submit,
    .collect = host_collect,
    .ready = host_ready,
    .abandon = host_abandon,
    .classify_device = NULL,
    .bench_device = NULL,
    .describe = host_describe,
    .close = host_close,
};

ttp_status host_stream_open(const host_engine_ops* engine, const model* m, const engine_config* c,
                            batch_stream* s, ttp_err* e) {
  host_stream* h = calloc(1, sizeof *h);
  if (!h) return ERR_NOMEM(e, sizeof *h);
  h->engine = engine;
  size_t pixels = model_shape_size(m->input);
  size_t capacity = c->max_batch >= 1 && (c->exact_batch || c->max_batch < HOST_CAPACITY)
                        ? (size_t)c->max_batch
                        : HOST_CAPACITY;
  for (int k = 0; k < HOST_DEPTH; k++)
    if (!(h->input[k] = malloc(capacity * pixels))) {
      host_close(h);
      return ERR_NOMEM(e, capacity * pixels);
    }
  ttp_status st = engine->open(m, c, &h->state, e);
  if (st != TTP_OK) {
    for (int k = 0; k < HOST_DEPTH; k++) free(h->input[k]);
    free(h);
    return st;
  }
  *s = (batch_stream){.ops = &host_stream_ops, .impl = h, .depth = HOST_DEPTH,
                      .capacity = capacity, .pixels = pixels, .classes = m->classes,
                      .temperature = 1.0f};
  return TTP_OK;
}
