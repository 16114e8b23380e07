/* Several GPUs behind one stream (ttp_options.devices): one runner (runner.h) on each, the
   streaming core's slots (stream.h) dealt among them. The pipeline sees one ring of
   sum-of-their-slots slots; a slot is bound to a GPU when it is acquired: the GPU with the
   fewest batches acquired or in flight (ties taken in turn), so a GPU that falls behind gets
   fewer. A batch runs whole on its GPU, and the core collects in the order of submission, so
   results come in the caller's order whatever GPU computed them. Each GPU's batches are
   submitted and collected in its own order too: a runner sees the ring it always sees.

   The same bits from every GPU: the runners are opened one after the other, the first choosing
   the cudnn engine's algorithms and the others taking its choices (engine_config.choice_device);
   GPUs of different models (whose arithmetic may differ) are refused. The fused and cpu
   engines choose nothing at run time.

   Device mode (ttp_bench_device): the images are split among the GPUs, each part one batch on
   its GPU, replayed on every GPU at once (one host thread each); replay k's time is the
   longest of the GPUs' replay k. ttp_classify_device, which takes one device's memory, is not
   served. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

enum { GPU_MAX_DEVICES = 8 };

typedef struct gpu_lane {
  batch_stream s;                   /* its runner: ops, impl, depth (its own counters unused) */
  int oldest, in_flight, acquired;  /* its ring, kept here */
} gpu_lane;

typedef struct gpu_devices {
  int count;
  gpu_lane lanes[GPU_MAX_DEVICES];
  int lane_of[STREAM_MAX_SLOTS], slot_of[STREAM_MAX_SLOTS]; /* the core's slot -> lane, slot */
  int turn;                         /* where the next tie starts */
  char description[6600];
} gpu_devices;

static uint8_t* devices_input(void* impl, int s) {
  gpu_devices* d = impl;
  int best = -1;
  for (int k = 0; k < d->count; k++) {
    const int g = (d->turn + k) % d->count;
    const gpu_lane* l = &d->lanes[g];
    const int busy = l->in_flight + l->acquired;
    if (busy < l->s.depth &&
        (best < 0 || busy < d->lanes[best].in_flight + d->lanes[best].acquired))
      best = g;
  }
  if (best < 0) return NULL; /* cannot happen: the core's depth is the lanes' sum */
  gpu_lane* l = &d->lanes[best];
  const int slot = (l->oldest + l->in_flight + l->acquired) % l->s.depth;
  l->acquired++;
  d->lane_of[s] = best, d->slot_of[s] = slot;
  d->turn = (best + 1) % d->count;
  return l->s.ops->input(l->s.impl, slot);
}

static ttp_status devices_submit(void* impl, int s, size_t count, ttp_run_stats* stats,
                                 ttp_err* e) {
  gpu_devices* d = impl;
  gpu_lane* l = &d->lanes[d->lane_of[s]];
  TRY(l->s.ops->submit(l->s.impl, d->slot_of[s], count, stats, e));
  l->acquired--, l->in_flight++;
  return TTP_OK;
}

static void forget_oldest(gpu_lane* l) {
  l->oldest = (l->oldest + 1) % l->s.depth;
  l->in_flight--;
}

static ttp_status devices_collect(void* impl, int s, size_t count, ttp_result* results,
                                  float* merged, float* extras, ttp_run_stats* stats,
                                  double* waited, ttp_err* e) {
  gpu_devices* d = impl;
  gpu_lane* l = &d->lanes[d->lane_of[s]];
  ttp_status st = l->s.ops->collect(l->s.impl, d->slot_of[s], count, results, merged, extras,
                                    stats, waited, e);
  forget_oldest(l);
  if (st != TTP_OK) err_prefix(e, "GPU %d of %d: ", d->lane_of[s], d->count);
  return st;
}

static int devices_ready(void* impl, int s) {
  gpu_devices* d = impl;
  const gpu_lane* l = &d->lanes[d->lane_of[s]];
  return l->s.ops->ready(l->s.impl, d->slot_of[s]);
}

static void devices_abandon(void* impl, int s) {
  gpu_devices* d = impl;
  gpu_lane* l = &d->lanes[d->lane_of[s]];
  l->s.ops->abandon(l->s.impl, d->slot_of[s]);
  forget_oldest(l);
}

static void devices_release(void* impl, int s) {
  gpu_devices* d = impl;
  gpu_lane* l = &d->lanes[d->lane_of[s]];
  if (l->s.ops->release) l->s.ops->release(l->s.impl, d->slot_of[s]);
  l->acquired--;
}

/* One GPU's part of a device-mode run, on a thread of its own. */
typedef struct bench_part {
  gpu_lane* lane;
  const uint8_t* images;
  size_t count;
  int replays;
  double* ms;
  ttp_err err;
} bench_part;

static void* bench_thread(void* arg) {
  bench_part* b = arg;
  b->lane->s.ops->bench_device(b->lane->s.impl, b->images, b->count, b->replays, b->ms, &b->err);
  return NULL;
}

static ttp_status devices_bench(void* impl, const uint8_t* images, size_t count, int replays,
                                double* ms, ttp_err* e) {
  gpu_devices* d = impl;
  const size_t capacity = d->lanes[0].s.capacity;
  if (count < 1 || count > capacity * (size_t)d->count || replays < 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "ttp_bench_device: 1..%zu images (%d GPUs of %zu), "
               "at least one replay", capacity * (size_t)d->count, d->count, capacity);
  bench_part parts[GPU_MAX_DEVICES];
  pthread_t ids[GPU_MAX_DEVICES];
  int started[GPU_MAX_DEVICES] = {0};
  ttp_status st = TTP_OK;
  for (int g = 0; g < d->count; g++) { /* GPU g: images [count g / n, count (g + 1) / n) */
    const size_t from = count * (size_t)g / (size_t)d->count,
                 to = count * (size_t)(g + 1) / (size_t)d->count;
    parts[g] = (bench_part){&d->lanes[g], images + from * d->lanes[g].s.pixels, to - from,
                            replays, calloc((size_t)replays, sizeof(double)), {0}};
    if (!parts[g].ms) st = ERR_NOMEM(e, (size_t)replays * sizeof(double));
  }
  for (int g = 0; g < d->count && st == TTP_OK; g++) {
    if (parts[g].count == 0) continue;
    if (pthread_create(&ids[g], NULL, bench_thread, &parts[g]) != 0)
      st = ERR(e, TTP_ERR_INTERNAL, "cannot start a thread for GPU %d", g);
    else
      started[g] = 1;
  }
  for (int g = 0; g < d->count; g++)
    if (started[g]) pthread_join(ids[g], NULL);
  for (int k = 0; k < replays && st == TTP_OK; k++) ms[k] = 0;
  for (int g = 0; g < d->count; g++) {
    if (st == TTP_OK && started[g] && parts[g].err.status != TTP_OK) {
      *e = parts[g].err;
      err_prefix(e, "GPU %d of %d: ", g, d->count);
      st = e->status;
    }
    for (int k = 0; k < replays && st == TTP_OK && started[g]; k++)
      if (parts[g].ms[k] > ms[k]) ms[k] = parts[g].ms[k];
    free(parts[g].ms);
  }
  return st;
}

static const char* devices_describe(void* impl) { return ((gpu_devices*)impl)->description; }

static void devices_close(void* impl) {
  gpu_devices* d = impl;
  if (!d) return;
  for (int g = 0; g < d->count; g++)
    if (d->lanes[g].s.ops) d->lanes[g].s.ops->close(d->lanes[g].s.impl);
  free(d);
}

static const stream_impl devices_ops = {
    .input = devices_input,
    .submit = devices_submit,
    .collect = devices_collect,
    .ready = devices_ready,
    .abandon = devices_abandon,
    .release = devices_release,
    .classify_device = NULL,
    .bench_device = devices_bench,
    .describe = devices_describe,
    .close = devices_close,
};

/* GPUs of one model and compute capability, or why not. */
static ttp_status same_model(const int* devices, int count, ttp_err* e) {
  ttp_gpu_info first, other;
  if (ttp_get_gpu_info(devices[0], &first) != TTP_OK)
    return ERR(e, TTP_ERR_NO_GPU, "device %d: no such GPU", devices[0]);
  for (int g = 1; g < count; g++) {
    if (ttp_get_gpu_info(devices[g], &other) != TTP_OK)
      return ERR(e, TTP_ERR_NO_GPU, "device %d: no such GPU", devices[g]);
    if (strcmp(first.name, other.name) != 0 || first.major != other.major ||
        first.minor != other.minor)
      return ERR(e, TTP_ERR_INVALID_ARGUMENT, "devices %d (%s) and %d (%s) are GPUs of different "
                 "models, whose results could differ in their last bits: give GPUs of one model",
                 devices[0], first.name, devices[g], other.name);
  }
  return TTP_OK;
}

ttp_status gpu_devices_open(const gpu_network_ops* network, const model* m,
                            const engine_config* c, batch_stream* s, ttp_err* e) {
  if (c->device_count < 2 || c->device_count > GPU_MAX_DEVICES)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "%d devices: 2..%d behind one pipeline",
               c->device_count, GPU_MAX_DEVICES);
  TRY(same_model(c->devices, c->device_count, e));
  gpu_devices* d = calloc(1, sizeof *d);
  if (!d) return ERR_NOMEM(e, sizeof *d);
  d->count = c->device_count;
  /* Each GPU its ring of the pipeline's slots, all of them within the core's ring. */
  int per = c->slots < STREAM_MAX_SLOTS / d->count ? c->slots : STREAM_MAX_SLOTS / d->count;
  if (per < 2) per = 2;
  ttp_status st = TTP_OK;
  int depth = 0, n = 0;
  for (int g = 0; g < d->count && st == TTP_OK; g++) {
    engine_config one = *c;
    one.device = c->devices[g];
    one.devices = NULL, one.device_count = 1;
    one.choice_device = c->devices[0];
    one.slots = per;
    st = gpu_runner_open(network, m, &one, &d->lanes[g].s, e);
    if (st != TTP_OK) err_prefix(e, "device %d: ", c->devices[g]);
    else depth += d->lanes[g].s.depth;
  }
  if (st != TTP_OK) {
    devices_close(d);
    return st;
  }
  n = snprintf(d->description, sizeof d->description, "%d GPUs (devices", d->count);
  for (int g = 0; g < d->count && n > 0 && (size_t)n < sizeof d->description; g++)
    n += snprintf(d->description + n, sizeof d->description - (size_t)n, "%s%d", g ? ", " : " ",
                  c->devices[g]);
  if (n > 0 && (size_t)n < sizeof d->description)
    snprintf(d->description + n, sizeof d->description - (size_t)n, "; %d slots each), each: %s",
             per, d->lanes[0].s.ops->describe(d->lanes[0].s.impl));
  const batch_stream* first = &d->lanes[0].s;
  *s = (batch_stream){.ops = &devices_ops, .impl = d, .depth = depth, .capacity = first->capacity,
                      .pixels = first->pixels, .classes = first->classes, .temperature = 1.0f};
  for (int g = 0; g < d->count; g++) { /* opened one after the other: the parts add up */
    const ttp_startup* t = &d->lanes[g].s.startup;
    s->startup.cuda_s += t->cuda_s, s->startup.buffers_s += t->buffers_s;
    s->startup.graphs_s += t->graphs_s;
  }
  return TTP_OK;
}
