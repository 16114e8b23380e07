/* The GPU runner: see runner.h. Plan (gpu_runner_open), where every allocation and
   synchronisation happens: device, compute stream, buckets, the network's own plan, K slots,
   then graph.c warms every bucket up eagerly and captures one graph per (slot, bucket). Submit
   and collect (stream.h) launch and wait only.

   Memory per slot: max_batch x (pixels + record) bytes pinned, as much on the device. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../augment/merge_kernel.h"
#include "../pipeline/clock.h"
#include "../pipeline/cuda_check.h"
#include "../pipeline/trace.h"
#include "graph.h"
#include "runner.h"

typedef struct gpu_slot {
  uint8_t* host_in;        /* pinned: max_batch images */
  unsigned char* host_out; /* pinned: max_batch records */
  uint8_t* dev_in;
  void* dev_out;
  const uint8_t* mapped_in; /* host_in as the device addresses it (the latency path) */
  void* mapped_out;         /* host_out likewise */
  cudaStream_t copy;       /* this slot's copies in and out */
  cudaEvent_t in_ready, computed, done;
  /* Profiling only (recorded when the batch is submitted with stats): before the copy in, after
     it, when the batch starts and ends on the compute stream, after the copy out. */
  cudaEvent_t t_start, t_in, t_begin, t_end, t_out;
  int timed;
  int direct;       /* its last batch took the latency path */
  long long batch;  /* its last batch's number (the runner's order of submission) */
} gpu_slot;

typedef struct gpu_runner {
  const gpu_network_ops* net_ops;
  void* net;
  const model* m;
  engine_config cfg;
  cudaStream_t stream; /* the compute stream */
  gpu_buckets buckets;
  size_t pixels, record;
  gpu_slot slots[GPU_MAX_SLOTS];
  graph_set graphs;
  int opened; /* the device guard has a device to return to */
  long long batches; /* submitted so far: the next batch's number */
  /* After a failure CUDA cannot recover from (the GPU lost to the process): why, and every
     later call is refused with it. */
  int lost;
  char lost_why[ERR_MESSAGE_SIZE];
  char description[6400];
} gpu_runner;

long long gpu_fault_batch = -1, gpu_refuse_batch = -1;

/* ---- the device the caller had ------------------------------------------------------------ */

static ttp_status enter_device(int device, int* previous, ttp_err* e) {
  CUDA_TRY(e, cudaGetDevice(previous));
  if (*previous != device) CUDA_TRY(e, cudaSetDevice(device));
  return TTP_OK;
}

static void leave_device(int device, int previous) {
  if (previous != device) cudaSetDevice(previous);
}

/* ---- a batch: the network's enqueue on a slot's buffers --------------------------------------- */

static int direct(const gpu_runner* r, int bucket) {
  return r->buckets.images[bucket] <= r->net_ops->direct_max;
}

/* The latency path's buckets hand the network the slot's mapped host memory, input and output
   (runner.h): it reads the images there or copies them in, as it measured best, and writes the
   records there. The slot is the core's until collected: nothing writes it while it is read. */
static ttp_status enqueue_slot(void* ctx, int slot, int bucket, cudaStream_t stream, ttp_err* e) {
  gpu_runner* r = ctx;
  gpu_slot* s = &r->slots[slot];
  if (!direct(r, bucket))
    return r->net_ops->enqueue(r->net, bucket, s->dev_in, s->dev_out, stream, e);
  return r->net_ops->enqueue(r->net, bucket, s->mapped_in, s->mapped_out, stream, e);
}

static int bucket_of(const gpu_runner* r, size_t count) {
  int b = 0;
  while (r->buckets.images[b] < (int)count) b++;
  return b;
}

/* The latency path: everything on the compute stream, the slot's last event after the graph. */
static ttp_status submit_direct(gpu_runner* r, gpu_slot* slot, int s, int bucket, int timed,
                                int fault, ttp_err* e) {
  if (timed) {
    CUDA_TRY(e, cudaEventRecord(slot->t_start, r->stream));
    CUDA_TRY(e, cudaEventRecord(slot->t_in, r->stream));
    CUDA_TRY(e, cudaEventRecord(slot->t_begin, r->stream));
  }
  TRY(graph_set_launch(&r->graphs, s, bucket, enqueue_slot, r, r->stream, e));
  if (fault) CUDA_TRY(e, gpu_fault_launch(r->stream));
  if (timed) {
    CUDA_TRY(e, cudaEventRecord(slot->t_end, r->stream));
    CUDA_TRY(e, cudaEventRecord(slot->t_out, r->stream));
  }
  CUDA_TRY(e, cudaEventRecord(slot->done, r->stream));
  return TTP_OK;
}

/* ---- the streaming core's operations --------------------------------------------------------- */

static uint8_t* runner_input(void* impl, int s) { return ((gpu_runner*)impl)->slots[s].host_in; }

/* Whether the context is unusable after err: the errors CUDA documents as sticky (a kernel's
   fault), or any failure of a query on the runner's own stream since. */
static int gpu_lost(const gpu_runner* r, cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return 1;
    default: {
      const cudaError_t probe = cudaStreamQuery(r->stream);
      return probe != cudaSuccess && probe != cudaErrorNotReady;
    }
  }
}

/* Records batch `batch`'s failure: TTP_ERR_GPU_LOST (and the runner refuses all later work) when
   CUDA cannot recover from it, else TTP_ERR_CUDA. */
static ttp_status batch_failed(gpu_runner* r, long long batch, size_t count, const char* doing,
                               cudaError_t err, ttp_err* e) {
  char what[ERR_MESSAGE_SIZE];
  snprintf(what, sizeof what, "batch %lld of this pipeline (%zu images): %s: %s", batch, count,
           doing, cudaGetErrorString(err));
  if (!gpu_lost(r, err)) {
    cudaGetLastError(); /* not sticky: cleared, the GPU stays usable */
    return ERR(e, TTP_ERR_CUDA, "%s", what);
  }
  r->lost = 1;
  memcpy(r->lost_why, what, sizeof r->lost_why);
  return ERR(e, TTP_ERR_GPU_LOST,
             "%s; CUDA cannot recover from this within the process: the batches not yet "
             "collected are lost and this pipeline takes no more work",
             r->lost_why);
}

static ttp_status refuse_if_lost(const gpu_runner* r, ttp_err* e) {
  if (!r->lost) return TTP_OK;
  return ERR(e, TTP_ERR_GPU_LOST,
             "this pipeline's GPU failed earlier (%s): it takes no more work; close it and "
             "restart the process", r->lost_why);
}

static ttp_status submit_on_device(gpu_runner* r, int s, size_t count, int timed, ttp_err* e) {
  gpu_slot* slot = &r->slots[s];
  int bucket = bucket_of(r, count);
  TRY(refuse_if_lost(r, e));
  slot->batch = r->batches++;
  if (gpu_refuse_batch >= 0 && gpu_refuse_batch-- == 0)
    return batch_failed(r, slot->batch, count, "submitting it (test hook)",
                        cudaErrorLaunchOutOfResources, e);
  const int fault = gpu_fault_batch >= 0 && gpu_fault_batch-- == 0;
  slot->timed = timed;
  slot->direct = direct(r, bucket);
  /* a lazy graph's capture before the timing events: not the batch's time */
  graph_set_prepare(&r->graphs, s, bucket, enqueue_slot, r, r->stream);
  if (slot->direct) {
    TRACE_PUSH("launch batch (latency path)");
    ttp_status st = submit_direct(r, slot, s, bucket, timed, fault, e);
    TRACE_POP();
    return st;
  }
  TRACE_PUSH("launch batch");
  /* Each timing event goes just before the event that is waited on, so that waiting for the
     latter means the former is complete too. */
  if (timed) CUDA_TRY(e, cudaEventRecord(slot->t_start, slot->copy));
  CUDA_TRY(e, cudaMemcpyAsync(slot->dev_in, slot->host_in, count * r->pixels,
                              cudaMemcpyHostToDevice, slot->copy));
  if (timed) CUDA_TRY(e, cudaEventRecord(slot->t_in, slot->copy));
  CUDA_TRY(e, cudaEventRecord(slot->in_ready, slot->copy));
  CUDA_TRY(e, cudaStreamWaitEvent(r->stream, slot->in_ready, 0));
  if (timed) CUDA_TRY(e, cudaEventRecord(slot->t_begin, r->stream));
  TRY(graph_set_launch(&r->graphs, s, bucket, enqueue_slot, r, r->stream, e));
  if (fault) CUDA_TRY(e, gpu_fault_launch(r->stream));
  if (timed) CUDA_TRY(e, cudaEventRecord(slot->t_end, r->stream));
  CUDA_TRY(e, cudaEventRecord(slot->computed, r->stream));
  CUDA_TRY(e, cudaStreamWaitEvent(slot->copy, slot->computed, 0));
  CUDA_TRY(e, cudaMemcpyAsync(slot->host_out, slot->dev_out, count * r->record,
                              cudaMemcpyDeviceToHost, slot->copy));
  if (timed) CUDA_TRY(e, cudaEventRecord(slot->t_out, slot->copy));
  CUDA_TRY(e, cudaEventRecord(slot->done, slot->copy));
  TRACE_POP();
  return TTP_OK;
}

static ttp_status runner_submit(void* impl, int s, size_t count, ttp_run_stats* stats,
                                ttp_err* e) {
  gpu_runner* r = impl;
  int previous;
  TRY(enter_device(r->cfg.device, &previous, e));
  ttp_status st = submit_on_device(r, s, count, stats != NULL, e);
  leave_device(r->cfg.device, previous);
  return st;
}

/* Waits for a slot's last event as ttp_options.wait says: polling (spin, yield, and auto for the
   latency path), or CUDA's own wait (block: the event was made with blocking sync). */
static cudaError_t wait_for(const gpu_runner* r, const gpu_slot* slot) {
  const ttp_wait w = r->cfg.wait;
  if (w == TTP_WAIT_BLOCK || (w == TTP_WAIT_AUTO && !slot->direct))
    return cudaEventSynchronize(slot->done);
  for (;;) {
    const cudaError_t err = cudaEventQuery(slot->done);
    if (err != cudaErrorNotReady) return err;
    if (w == TTP_WAIT_YIELD) sched_yield();
  }
}

static ttp_status collect_on_device(gpu_runner* r, gpu_slot* slot, size_t count,
                                    ttp_result* results, float* merged, float* extras,
                                    ttp_run_stats* stats, double* waited, ttp_err* e) {
  TRACE_PUSH("wait for slot");
  double start = clock_seconds();
  cudaError_t err = wait_for(r, slot);
  *waited += clock_seconds() - start;
  TRACE_POP();
  if (err != cudaSuccess) return batch_failed(r, slot->batch, count, "running it", err, e);
  if (slot->timed && stats) {
    float h2d = 0, compute = 0, d2h = 0;
    CUDA_TRY(e, cudaEventElapsedTime(&h2d, slot->t_start, slot->t_in));
    CUDA_TRY(e, cudaEventElapsedTime(&compute, slot->t_begin, slot->t_end));
    CUDA_TRY(e, cudaEventElapsedTime(&d2h, slot->t_end, slot->t_out));
    stats->h2d_ms += h2d, stats->compute_ms += compute, stats->d2h_ms += d2h;
    stats->batches++, stats->images += count;
  }
  slot->timed = 0;
  TRACE_PUSH("hand out results");
  size_t classes = (size_t)r->m->classes;
  for (size_t i = 0; i < count; i++) {
    const unsigned char* record = slot->host_out + i * r->record;
    memcpy(&results[i], record, sizeof(ttp_result));
    if (merged)
      memcpy(merged + i * classes, record + sizeof(ttp_result), classes * sizeof(float));
    if (extras)
      memcpy(extras + i * MERGE_EXTRAS, record + aug_merge_extras_offset(r->m->classes),
             MERGE_EXTRAS * sizeof(float));
  }
  TRACE_POP();
  return TTP_OK;
}

static ttp_status runner_collect(void* impl, int s, size_t count, ttp_result* results,
                                 float* merged, float* extras, ttp_run_stats* stats,
                                 double* waited, ttp_err* e) {
  gpu_runner* r = impl;
  int previous;
  TRY(enter_device(r->cfg.device, &previous, e));
  ttp_status st =
      collect_on_device(r, &r->slots[s], count, results, merged, extras, stats, waited, e);
  leave_device(r->cfg.device, previous);
  return st;
}

static int runner_ready(void* impl, int s) {
  gpu_runner* r = impl;
  /* An event belongs to its device's context, not the current one: no device switch needed. */
  return cudaEventQuery(r->slots[s].done) == cudaSuccess;
}

static void runner_abandon(void* impl, int s) {
  gpu_runner* r = impl;
  int previous;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  if (previous != r->cfg.device) cudaSetDevice(r->cfg.device);
  cudaEventSynchronize(r->slots[s].done);
  r->slots[s].timed = 0;
  leave_device(r->cfg.device, previous);
}

/* ---- device inputs --------------------------------------------------------------------------- */

/* Images in device memory through slot 0, max_batch at a time, all on the compute stream after
   the caller's stream's work: each chunk copied into the slot's device input (the bucket's rows
   past it read the slot's old, defined bytes), the batch run (the (0, bucket) graph for the
   runner's own buckets; eagerly for the latency path's, whose graphs read mapped host memory),
   its records' results and merged vectors copied into the caller's arrays (2-D copies: the
   records hold both). Then the caller's stream waits for the compute stream, and so do the
   slots' copy streams (a later host batch must not overwrite slot 0 while a chunk reads it). */
static ttp_status classify_on_device(gpu_runner* r, const uint8_t* images, size_t count,
                                     ttp_result* results, float* merged, cudaStream_t caller,
                                     ttp_err* e) {
  TRY(refuse_if_lost(r, e));
  gpu_slot* slot = &r->slots[0];
  const size_t classes = (size_t)r->m->classes, most = (size_t)r->cfg.max_batch;
  CUDA_TRY(e, cudaEventRecord(slot->in_ready, caller));
  CUDA_TRY(e, cudaStreamWaitEvent(r->stream, slot->in_ready, 0));
  for (size_t first = 0; first < count; first += most) {
    const size_t n = count - first < most ? count - first : most;
    const int bucket = bucket_of(r, n);
    slot->batch = r->batches++;
    CUDA_TRY(e, cudaMemcpyAsync(slot->dev_in, images + first * r->pixels, n * r->pixels,
                                cudaMemcpyDeviceToDevice, r->stream));
    if (direct(r, bucket))
      TRY(r->net_ops->enqueue(r->net, bucket, slot->dev_in, slot->dev_out, r->stream, e));
    else
      TRY(graph_set_launch(&r->graphs, 0, bucket, enqueue_slot, r, r->stream, e));
    CUDA_TRY(e, cudaMemcpy2DAsync(results + first, sizeof(ttp_result), slot->dev_out, r->record,
                                  sizeof(ttp_result), n, cudaMemcpyDeviceToDevice, r->stream));
    if (merged)
      CUDA_TRY(e, cudaMemcpy2DAsync(merged + first * classes, classes * sizeof(float),
                                    (const unsigned char*)slot->dev_out + sizeof(ttp_result),
                                    r->record, classes * sizeof(float), n,
                                    cudaMemcpyDeviceToDevice, r->stream));
  }
  CUDA_TRY(e, cudaEventRecord(slot->computed, r->stream));
  CUDA_TRY(e, cudaStreamWaitEvent(caller, slot->computed, 0));
  for (int s = 0; s < r->cfg.slots; s++)
    CUDA_TRY(e, cudaStreamWaitEvent(r->slots[s].copy, slot->computed, 0));
  return TTP_OK;
}

static ttp_status runner_classify_device(void* impl, const uint8_t* images, size_t count,
                                         ttp_result* results, float* merged, void* stream,
                                         ttp_err* e) {
  gpu_runner* r = impl;
  int previous;
  TRY(enter_device(r->cfg.device, &previous, e));
  ttp_status st = classify_on_device(r, images, count, results, merged, (cudaStream_t)stream, e);
  leave_device(r->cfg.device, previous);
  return st;
}

/* ---- device mode --------------------------------------------------------------------------- */

static ttp_status bench_on_device(gpu_runner* r, const uint8_t* images, size_t count, int replays,
                                  double* ms, ttp_err* e) {
  TRY(refuse_if_lost(r, e));
  gpu_slot* slot = &r->slots[0];
  int bucket = bucket_of(r, count);
  /* The latency path's graph reads its input from the slot's pinned memory. */
  if (direct(r, bucket))
    memcpy(slot->host_in, images, count * r->pixels);
  else /* On the compute stream, which the graphs follow (a cudaMemcpy from pageable memory may
          return before its data lands, and the legacy stream does not order ours). */
    CUDA_TRY(e, cudaMemcpyAsync(slot->dev_in, images, count * r->pixels, cudaMemcpyHostToDevice,
                                r->stream));
  graph_set_prepare(&r->graphs, 0, bucket, enqueue_slot, r, r->stream);
  for (int k = 0; k < replays; k++) {
    float t = 0;
    CUDA_TRY(e, cudaEventRecord(slot->t_begin, r->stream));
    TRY(graph_set_launch(&r->graphs, 0, bucket, enqueue_slot, r, r->stream, e));
    CUDA_TRY(e, cudaEventRecord(slot->t_end, r->stream));
    CUDA_TRY(e, cudaEventSynchronize(slot->t_end));
    CUDA_TRY(e, cudaEventElapsedTime(&t, slot->t_begin, slot->t_end));
    ms[k] = t;
  }
  return TTP_OK;
}

static ttp_status runner_bench_device(void* impl, const uint8_t* images, size_t count,
                                      int replays, double* ms, ttp_err* e) {
  gpu_runner* r = impl;
  if (count < 1 || count > (size_t)r->cfg.max_batch || replays < 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "ttp_bench_device: 1..%d images, at least one replay",
               r->cfg.max_batch);
  int previous;
  TRY(enter_device(r->cfg.device, &previous, e));
  ttp_status st = bench_on_device(r, images, count, replays, ms, e);
  leave_device(r->cfg.device, previous);
  return st;
}

static const char* runner_describe(void* impl) { return ((gpu_runner*)impl)->description; }

static void runner_close(void* impl) {
  gpu_runner* r = impl;
  if (!r) return;
  int previous = r->cfg.device;
  if (r->opened && cudaGetDevice(&previous) == cudaSuccess && previous != r->cfg.device)
    cudaSetDevice(r->cfg.device);
  if (r->stream) cudaStreamSynchronize(r->stream);
  for (int s = 0; s < GPU_MAX_SLOTS; s++) {
    gpu_slot* slot = &r->slots[s];
    if (slot->copy) cudaStreamSynchronize(slot->copy);
    if (slot->copy) cudaStreamDestroy(slot->copy);
    cudaEvent_t events[8] = {slot->in_ready, slot->computed, slot->done, slot->t_start,
                             slot->t_in,     slot->t_begin,  slot->t_end, slot->t_out};
    for (int k = 0; k < 8; k++)
      if (events[k]) cudaEventDestroy(events[k]);
    cudaFreeHost(slot->host_in);
    cudaFreeHost(slot->host_out);
    cudaFree(slot->dev_in);
    cudaFree(slot->dev_out);
  }
  graph_set_destroy(&r->graphs);
  if (r->net_ops) r->net_ops->destroy(r->net);
  if (r->stream) cudaStreamDestroy(r->stream);
  if (r->opened) leave_device(r->cfg.device, previous);
  free(r);
}

static const stream_impl runner_ops = {
    .input = runner_input,
    .submit = runner_submit,
    .collect = runner_collect,
    .ready = runner_ready,
    .abandon = runner_abandon,
    .classify_device = runner_classify_device,
    .bench_device = runner_bench_device,
    .describe = runner_describe,
    .close = runner_close,
};

/* ---- plan ----------------------------------------------------------------------------------- */

static void choose_buckets(gpu_runner* r) {
  static const int steps[] = {1, 8, 64, 512, 4096, 32768};
  int n = 0;
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
    if (steps[i] < r->cfg.max_batch) r->buckets.images[n++] = steps[i];
  r->buckets.images[n++] = r->cfg.max_batch;
  r->buckets.count = n;
}

static ttp_status plan_slots(gpu_runner* r, ttp_err* e) {
  size_t in = (size_t)r->cfg.max_batch * r->pixels, out = (size_t)r->cfg.max_batch * r->record;
  for (int s = 0; s < r->cfg.slots; s++) {
    gpu_slot* slot = &r->slots[s];
    TRY(gpu_alloc_pinned((void**)&slot->host_in, in, "a slot's images", e));
    TRY(gpu_alloc_pinned((void**)&slot->host_out, out, "a slot's results", e));
    TRY(gpu_alloc((void**)&slot->dev_in, in, "a slot's images", e));
    TRY(gpu_alloc(&slot->dev_out, out, "a slot's results", e));
    CUDA_TRY(e, cudaHostGetDevicePointer((void**)&slot->mapped_in, slot->host_in, 0));
    CUDA_TRY(e, cudaHostGetDevicePointer(&slot->mapped_out, slot->host_out, 0));
    /* Padding rows read whatever a slot last held: start from zeros, so it is always defined.
       On the compute stream, which the warm-up that reads it follows. */
    memset(slot->host_in, 0, in);
    CUDA_TRY(e, cudaMemsetAsync(slot->dev_in, 0, in, r->stream));
    CUDA_TRY(e, cudaStreamCreateWithFlags(&slot->copy, cudaStreamNonBlocking));
    cudaEvent_t* fences[2] = {&slot->in_ready, &slot->computed};
    for (int k = 0; k < 2; k++) CUDA_TRY(e, cudaEventCreateWithFlags(fences[k], cudaEventDisableTiming));
    /* The event the host waits on: a sleeping wait needs blocking sync. */
    const unsigned sleep = r->cfg.wait == TTP_WAIT_BLOCK ? cudaEventBlockingSync : 0;
    CUDA_TRY(e, cudaEventCreateWithFlags(&slot->done, cudaEventDisableTiming | sleep));
    cudaEvent_t* timing[5] = {&slot->t_start, &slot->t_in, &slot->t_begin, &slot->t_end,
                              &slot->t_out};
    for (int k = 0; k < 5; k++) CUDA_TRY(e, cudaEventCreate(timing[k]));
  }
  return TTP_OK;
}

/* How calls wait, and the latency path's reach, as describe says them. */
static void wait_phrase(const gpu_runner* r, char* out, size_t n) {
  switch (r->cfg.wait) {
    case TTP_WAIT_SPIN: snprintf(out, n, "polling for results"); return;
    case TTP_WAIT_YIELD: snprintf(out, n, "polling for results, yielding between polls"); return;
    case TTP_WAIT_BLOCK: snprintf(out, n, "sleeping until results are ready"); return;
    case TTP_WAIT_AUTO:
    default:
      if (r->net_ops->direct_max > 0)
        snprintf(out, n, "polling for small batches' results (up to %d images, copied in and "
                 "written straight to pinned memory in one graph)", r->net_ops->direct_max);
      else
        snprintf(out, n, "CUDA's wait for results");
  }
}

static void describe(gpu_runner* r, const char* device_name) {
  int n = snprintf(r->description, sizeof r->description, "%s on GPU %d (%s), %s, batch buckets",
                   r->net_ops->name, r->cfg.device, device_name, r->net_ops->precision(r->net));
  for (int b = 0; b < r->buckets.count && n > 0 && (size_t)n < sizeof r->description; b++)
    n += snprintf(r->description + n, sizeof r->description - n, "%c%d", b ? '/' : ' ',
                  r->buckets.images[b]);
  const char* details = r->net_ops->details(r->net);
  char wait[160];
  wait_phrase(r, wait, sizeof wait);
  if (n > 0 && (size_t)n < sizeof r->description)
    snprintf(r->description + n, sizeof r->description - n, ", %d slots, %s, %s%s%s",
             r->cfg.slots,
             !r->graphs.replaying ? r->graphs.reason
             : r->graphs.lazy     ? "CUDA Graphs replayed, each captured on its first batch"
                                  : "CUDA Graphs replayed",
             wait, details[0] ? "; " : "", details);
}

/* Plans on the current device, timing the parts of ttp_startup into *t (cuda_s: the device's
   context, made here by cudaFree(0) rather than by whichever call comes first). */
static ttp_status open_on_device(gpu_runner* r, ttp_startup* t, ttp_err* e) {
  double at = clock_seconds();
  CUDA_TRY(e, cudaFree(0));
  struct cudaDeviceProp prop;
  CUDA_TRY(e, cudaGetDeviceProperties(&prop, r->cfg.device));
  t->cuda_s += clock_seconds() - at, at = clock_seconds();
  CUDA_TRY(e, cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
  choose_buckets(r);
  TRY(r->net_ops->plan(r->m, &r->cfg, &r->buckets, r->stream, &r->net, e));
  at = clock_seconds(); /* the plan: the rest of the engine's opening (ttp_get_startup) */
  TRY(plan_slots(r, e));
  t->buffers_s += clock_seconds() - at, at = clock_seconds();
  TRY(graph_set_build(&r->graphs, r->cfg.slots, r->buckets.count, r->cfg.use_graph, enqueue_slot,
                      r, r->stream, e));
  t->graphs_s += clock_seconds() - at;
  describe(r, prop.name);
  return TTP_OK;
}

ttp_status gpu_runner_open(const gpu_network_ops* net, const model* m, const engine_config* c,
                           batch_stream* s, ttp_err* e) {
  if (c->slots < 1 || c->slots > GPU_MAX_SLOTS)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "slots must be at most %d", GPU_MAX_SLOTS);
  ttp_startup startup = {.struct_size = sizeof startup};
  const double counting = clock_seconds();
  int devices = ttp_gpu_count();
  startup.cuda_s = clock_seconds() - counting;
  if (devices == 0)
    return ERR(e, TTP_ERR_NO_GPU, "engine %s needs a GPU: no CUDA device found", net->name);
  if (c->device >= devices)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "device %d: this machine has %d CUDA device%s",
               c->device, devices, devices == 1 ? "" : "s");
  gpu_runner* r = calloc(1, sizeof *r);
  if (!r) return ERR_NOMEM(e, sizeof *r);
  r->net_ops = net;
  r->m = m;
  r->cfg = *c;
  r->pixels = model_shape_size(m->input);
  r->record = aug_merge_record_size(m->classes);
  int previous;
  ttp_status st = enter_device(c->device, &previous, e);
  if (st == TTP_OK) {
    r->opened = 1;
    TRACE_PUSH("plan");
    st = open_on_device(r, &startup, e);
    TRACE_POP();
    leave_device(c->device, previous);
  }
  if (st != TTP_OK) {
    runner_close(r);
    return st;
  }
  *s = (batch_stream){.ops = &runner_ops, .impl = r, .depth = c->slots,
                      .capacity = (size_t)c->max_batch, .pixels = r->pixels,
                      .classes = m->classes, .temperature = 1.0f, .startup = startup};
  return TTP_OK;
}
