/* The cudnn engine: test-time augmentation, the model's layers (cudnn_layers.c) and the merge
   for all B x N copies of a batch on one GPU, each batch one CUDA Graph, with its copies in and
   out overlapped with the compute of its neighbours.

   Shapes: a batch is B images (at most max_batch); each becomes N copies, so n = B x N rows go
   through the network, NCHW. Buckets: 1, 8, 64, 512, 4096, 32768 below max_batch, and
   max_batch; a batch of b images runs in the smallest bucket >= b, and its padding rows are
   computed but never read back.

   Plan (cudnn_engine_open), where every allocation and synchronisation happens:
     device, streams, cuDNN and cuBLASLt handles; each layer planned for every bucket; the
     workspaces; two ping-pong activation buffers of the largest bucket; K slots (pinned host
     input and output, device input and output, a copy stream, three events); then graph/
     warms every bucket up eagerly and captures one graph per (slot, bucket).
   Enqueue (enqueue_batch), the body of every graph, launches only:
     augment kernel (slot's device input -> copies) -> each layer -> [fp16: widen the
     probabilities] -> merge kernel (-> the slot's device output: one record per image).
   Run (cudnn_engine_run), per batch on slot s = batch mod K:
     wait for slot s's previous batch to finish its copy out (the only wait on the GPU), hand its
     results to the caller; stage the images in the slot's pinned input; on the slot's copy
     stream copy them in; the compute stream waits for that, replays the graph; the copy stream
     waits for the compute, copies the records out. So batch i+1's copy in and batch i-1's copy
     out run while batch i computes.

   Memory: activations 2 x n_max x (largest layer tensor) elements, about 2 x 46 KB per copy in
   fp32 for the mnistCUDNN LeNet (conv1's 20 x 24 x 24 output). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../augment/merge_kernel.h"
#include "../../augment/tta_kernel.h"
#include "../clock.h"
#include "../trace.h"
#include "cudnn_check.h"
#include "cudnn_engine.h"
#include "cudnn_kernels.h"

/* cuBLASLt's workspace: 32 MiB, as NVIDIA recommends for Hopper. */
#define GEMM_WORKSPACE ((size_t)32 << 20)

typedef struct gpu_slot {
  uint8_t* host_in;       /* pinned: max_batch images */
  unsigned char* host_out; /* pinned: max_batch records */
  uint8_t* dev_in;
  void* dev_out;
  cudaStream_t copy;      /* this slot's copies in and out */
  cudaEvent_t in_ready, computed, done;
  /* Profiling only (timing events, recorded when profiling is on): before the copy in, after
     it, when the batch starts and ends on the compute stream, after the copy out. */
  cudaEvent_t t_start, t_in, t_begin, t_end, t_out;
  int timed;
  int busy;               /* a batch is in flight: first .. first + count - 1 of the request */
  size_t first, count;
} gpu_slot;

typedef struct cudnn_engine {
  const model* m;
  engine_config cfg;
  gpu_context ctx;
  int bucket_images[GPU_MAX_BUCKETS];
  gpu_layer* layers;
  void* act[2];       /* ping-pong activations, each n_max x largest tensor */
  float* probs;       /* fp16 only: the softmax output widened for the merge */
  size_t record;      /* bytes per image of a slot's output */
  size_t pixels;      /* bytes per image of a slot's input */
  gpu_slot slots[GPU_MAX_SLOTS];
  graph_set graphs;
  int opened;         /* the device guard has a device to return to */
  int profiling;
  ttp_run_stats stats;
  double waited; /* seconds the host spent waiting for slots (not its own time) */
  char description[1536];
} cudnn_engine;

/* ---- the device the caller had ------------------------------------------------------------ */

static ttp_status enter_device(int device, int* previous, ttp_err* e) {
  CUDA_TRY(e, cudaGetDevice(previous));
  if (*previous != device) CUDA_TRY(e, cudaSetDevice(device));
  return TTP_OK;
}

static void leave_device(int device, int previous) {
  if (previous != device) cudaSetDevice(previous);
}

/* ---- enqueue: one batch, launches only -------------------------------------------------------- */

static ttp_status enqueue_batch(void* state, int slot, int bucket, cudaStream_t stream,
                                ttp_err* e) {
  cudnn_engine* g = state;
  const model* m = g->m;
  int images = g->bucket_images[bucket];
  TRY(aug_launch(&g->cfg.spec, g->slots[slot].dev_in, images, m->input.h, m->input.w,
                 g->ctx.half ? AUG_OUT_HALF : AUG_OUT_FLOAT, g->act[1], stream, e));
  const void* in = g->act[1];
  void* out = g->act[0];
  for (int i = 0; i < m->layer_count; i++) {
    if (g->layers[i].skip) continue;
    TRY(gpu_layer_enqueue(&g->ctx, &g->layers[i], bucket, in, out, e));
    in = out;
    out = out == g->act[0] ? g->act[1] : g->act[0];
  }
  const float* probs = in;
  if (g->ctx.half) {
    TRY(gpu_to_float(in, g->probs, (size_t)g->ctx.rows[bucket] * m->classes, stream, e));
    probs = g->probs;
  }
  return aug_merge_launch(g->cfg.merge, probs, images, g->cfg.spec.copies, m->classes,
                          g->slots[slot].dev_out, stream, e);
}

/* ---- plan ----------------------------------------------------------------------------------- */

static void choose_buckets(cudnn_engine* g) {
  static const int steps[] = {1, 8, 64, 512, 4096, 32768};
  int n = 0;
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
    if (steps[i] < g->cfg.max_batch) g->bucket_images[n++] = steps[i];
  g->bucket_images[n++] = g->cfg.max_batch;
  g->ctx.buckets = n;
  for (int b = 0; b < n; b++) g->ctx.rows[b] = g->bucket_images[b] * g->cfg.spec.copies;
  g->ctx.canonical_rows = GPU_CANONICAL_IMAGES * g->cfg.spec.copies;
  g->ctx.device = g->cfg.device;
}

static ttp_status plan_layers(cudnn_engine* g, ttp_err* e) {
  const model* m = g->m;
  g->layers = calloc((size_t)m->layer_count, sizeof *g->layers);
  if (!g->layers) return ERR_NOMEM(e, (size_t)m->layer_count * sizeof *g->layers);
  for (int i = 0; i < m->layer_count; i++) {
    g->layers[i].l = &m->layers[i];
    /* A ReLU right after an fc layer runs in that layer's GEMM epilogue. */
    if (m->layers[i].op == MODEL_RELU && i > 0 && m->layers[i - 1].op == MODEL_FC) {
      g->layers[i].skip = 1;
      g->layers[i - 1].fused_relu = 1;
    }
  }
  g->ctx.gemm_workspace_size = GEMM_WORKSPACE;
  for (int i = 0; i < m->layer_count; i++) TRY(gpu_layer_plan(&g->ctx, &g->layers[i], e));
  if (g->ctx.conv_workspace_size)
    CUDA_TRY(e, cudaMalloc(&g->ctx.conv_workspace, g->ctx.conv_workspace_size));
  CUDA_TRY(e, cudaMalloc(&g->ctx.gemm_workspace, g->ctx.gemm_workspace_size));
  size_t rows = (size_t)g->ctx.rows[g->ctx.buckets - 1];
  size_t act = rows * model_max_activation(m) * g->ctx.elem;
  CUDA_TRY(e, cudaMalloc(&g->act[0], act));
  CUDA_TRY(e, cudaMalloc(&g->act[1], act));
  if (g->ctx.half) CUDA_TRY(e, cudaMalloc((void**)&g->probs, rows * m->classes * sizeof(float)));
  return TTP_OK;
}

static ttp_status plan_slots(cudnn_engine* g, ttp_err* e) {
  size_t in = (size_t)g->cfg.max_batch * g->pixels, out = (size_t)g->cfg.max_batch * g->record;
  for (int s = 0; s < g->cfg.slots; s++) {
    gpu_slot* slot = &g->slots[s];
    CUDA_TRY(e, cudaMallocHost((void**)&slot->host_in, in));
    CUDA_TRY(e, cudaMallocHost((void**)&slot->host_out, out));
    CUDA_TRY(e, cudaMalloc((void**)&slot->dev_in, in));
    CUDA_TRY(e, cudaMalloc(&slot->dev_out, out));
    /* Padding rows read whatever a slot last held: start from zeros, so it is always defined.
       On the engine's stream, which the warm-up that reads it follows. */
    memset(slot->host_in, 0, in);
    CUDA_TRY(e, cudaMemsetAsync(slot->dev_in, 0, in, g->ctx.stream));
    CUDA_TRY(e, cudaStreamCreateWithFlags(&slot->copy, cudaStreamNonBlocking));
    CUDA_TRY(e, cudaEventCreateWithFlags(&slot->in_ready, cudaEventDisableTiming));
    CUDA_TRY(e, cudaEventCreateWithFlags(&slot->computed, cudaEventDisableTiming));
    CUDA_TRY(e, cudaEventCreateWithFlags(&slot->done, cudaEventDisableTiming));
    cudaEvent_t* timing[5] = {&slot->t_start, &slot->t_in, &slot->t_begin, &slot->t_end,
                              &slot->t_out};
    for (int k = 0; k < 5; k++) CUDA_TRY(e, cudaEventCreate(timing[k]));
  }
  return TTP_OK;
}

static void describe(cudnn_engine* g, const char* device_name) {
  int n = snprintf(g->description, sizeof g->description,
                   "%s on GPU %d (%s), %s, batch buckets", g->cfg.naive ? "naive (one image at a "
                   "time, cudaMalloc/cudaFree and a sync per layer)" : "cudnn", g->cfg.device, device_name,
                   g->ctx.half ? "fp16 storage, tensor cores, fp32 accumulation"
                               : "fp32 (FMA, no TF32)");
  for (int b = 0; b < g->ctx.buckets && n > 0 && (size_t)n < sizeof g->description; b++)
    n += snprintf(g->description + n, sizeof g->description - n, "%c%d", b ? '/' : ' ',
                  g->bucket_images[b]);
  if (n > 0 && (size_t)n < sizeof g->description)
    n += snprintf(g->description + n, sizeof g->description - n, ", %d slots, %s",
                  g->cfg.slots, g->graphs.replaying ? "CUDA Graphs replayed" : g->graphs.reason);
  for (int i = 0; i < g->m->layer_count && n > 0 && (size_t)n < sizeof g->description; i++)
    if (g->layers[i].algo[0])
      n += snprintf(g->description + n, sizeof g->description - n, "; %s: %s",
                    g->layers[i].l->name, g->layers[i].algo);
}

static void cudnn_engine_close(void* state);

static ttp_status open_on_device(cudnn_engine* g, ttp_err* e) {
  struct cudaDeviceProp prop;
  CUDA_TRY(e, cudaGetDeviceProperties(&prop, g->cfg.device));
  g->ctx.half = g->cfg.precision == TTP_PRECISION_FP16;
  g->ctx.dnn_type = g->ctx.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  g->ctx.blas_type = g->ctx.half ? CUDA_R_16F : CUDA_R_32F;
  g->ctx.elem = g->ctx.half ? 2 : 4;
  g->pixels = model_shape_size(g->m->input);
  g->record = aug_merge_record_size(g->m->classes);
  choose_buckets(g);
  CUDA_TRY(e, cudaStreamCreateWithFlags(&g->ctx.stream, cudaStreamNonBlocking));
  CUDNN_TRY(e, cudnnCreate(&g->ctx.dnn));
  CUDNN_TRY(e, cudnnSetStream(g->ctx.dnn, g->ctx.stream));
  CUBLAS_TRY(e, cublasLtCreate(&g->ctx.lt));
  TRY(plan_layers(g, e));
  TRY(plan_slots(g, e));
  TRY(graph_set_build(&g->graphs, g->cfg.slots, g->ctx.buckets, g->cfg.use_graph, enqueue_batch,
                      g, g->ctx.stream, e));
  describe(g, prop.name);
  return TTP_OK;
}

static ttp_status cudnn_engine_open(const model* m, const engine_config* c, void** out,
                                    ttp_err* e) {
  *out = NULL;
  if (m->input.c != 1)
    return ERR(e, TTP_ERR_MODEL, "the cudnn engine takes one-channel images");
  if (c->slots > GPU_MAX_SLOTS)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "slots must be at most %d", GPU_MAX_SLOTS);
  /* cuDNN's kernels refuse tensors of 2 GiB and more (pooling says NOT_SUPPORTED). */
  size_t per_image = (size_t)c->spec.copies * model_max_activation(m) *
                     (c->precision == TTP_PRECISION_FP16 ? 2 : 4);
  if ((size_t)c->max_batch * per_image > (size_t)INT32_MAX)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT,
               "max_batch %d is too large for this model and %d copies: a layer's tensor would "
               "exceed cuDNN's 2 GiB; use at most %zu", c->max_batch, c->spec.copies,
               (size_t)INT32_MAX / per_image);
  int devices = ttp_gpu_count();
  if (devices == 0) return ERR(e, TTP_ERR_NO_GPU, "engine cudnn needs a GPU: no CUDA device found");
  if (c->device >= devices)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "device %d: this machine has %d CUDA device%s",
               c->device, devices, devices == 1 ? "" : "s");
  cudnn_engine* g = calloc(1, sizeof *g);
  if (!g) return ERR_NOMEM(e, sizeof *g);
  g->m = m;
  g->cfg = *c;
  int previous;
  ttp_status s = enter_device(c->device, &previous, e);
  if (s == TTP_OK) {
    g->opened = 1;
    TRACE_PUSH("plan");
    s = open_on_device(g, e);
    TRACE_POP();
    leave_device(c->device, previous);
  }
  if (s != TTP_OK) {
    cudnn_engine_close(g);
    return s;
  }
  *out = g;
  return TTP_OK;
}

static void cudnn_engine_close(void* state) {
  cudnn_engine* g = state;
  if (!g) return;
  int previous = g->cfg.device;
  if (g->opened && cudaGetDevice(&previous) == cudaSuccess && previous != g->cfg.device)
    cudaSetDevice(g->cfg.device);
  if (g->ctx.stream) cudaStreamSynchronize(g->ctx.stream);
  for (int s = 0; s < GPU_MAX_SLOTS; s++) {
    gpu_slot* slot = &g->slots[s];
    if (slot->copy) cudaStreamSynchronize(slot->copy);
    if (slot->copy) cudaStreamDestroy(slot->copy);
    if (slot->in_ready) cudaEventDestroy(slot->in_ready);
    if (slot->computed) cudaEventDestroy(slot->computed);
    if (slot->done) cudaEventDestroy(slot->done);
    cudaEvent_t timing[5] = {slot->t_start, slot->t_in, slot->t_begin, slot->t_end, slot->t_out};
    for (int k = 0; k < 5; k++)
      if (timing[k]) cudaEventDestroy(timing[k]);
    cudaFreeHost(slot->host_in);
    cudaFreeHost(slot->host_out);
    cudaFree(slot->dev_in);
    cudaFree(slot->dev_out);
  }
  graph_set_destroy(&g->graphs);
  if (g->layers)
    for (int i = 0; i < g->m->layer_count; i++) gpu_layer_destroy(&g->layers[i]);
  free(g->layers);
  cudaFree(g->act[0]);
  cudaFree(g->act[1]);
  cudaFree(g->probs);
  cudaFree(g->ctx.conv_workspace);
  cudaFree(g->ctx.gemm_workspace);
  if (g->ctx.lt) cublasLtDestroy(g->ctx.lt);
  if (g->ctx.dnn) cudnnDestroy(g->ctx.dnn);
  if (g->ctx.stream) cudaStreamDestroy(g->ctx.stream);
  if (g->opened) leave_device(g->cfg.device, previous);
  free(g);
}

/* ---- run ------------------------------------------------------------------------------------ */


/* Waits for the slot's batch to be copied out and hands its results to the caller. */
static ttp_status finish_slot(cudnn_engine* g, gpu_slot* slot, ttp_result* results,
                              float* merged, ttp_err* e) {
  TRACE_PUSH("wait for slot");
  double start = clock_seconds();
  cudaError_t err = cudaEventSynchronize(slot->done);
  g->waited += clock_seconds() - start;
  TRACE_POP();
  slot->busy = 0;
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "cudaEventSynchronize: %s", cudaGetErrorString(err));
  if (slot->timed) {
    float h2d = 0, compute = 0, d2h = 0;
    CUDA_TRY(e, cudaEventElapsedTime(&h2d, slot->t_start, slot->t_in));
    CUDA_TRY(e, cudaEventElapsedTime(&compute, slot->t_begin, slot->t_end));
    CUDA_TRY(e, cudaEventElapsedTime(&d2h, slot->t_end, slot->t_out));
    g->stats.h2d_ms += h2d, g->stats.compute_ms += compute, g->stats.d2h_ms += d2h;
    g->stats.batches++, g->stats.images += slot->count;
    slot->timed = 0;
  }
  TRACE_PUSH("hand out results");
  size_t classes = (size_t)g->m->classes;
  for (size_t i = 0; i < slot->count; i++) {
    const unsigned char* record = slot->host_out + i * g->record;
    memcpy(&results[slot->first + i], record, sizeof(ttp_result));
    if (merged)
      memcpy(merged + (slot->first + i) * classes, record + sizeof(ttp_result),
             classes * sizeof(float));
  }
  TRACE_POP();
  return TTP_OK;
}

/* Stages and launches one batch on a free slot. */
static ttp_status launch_batch(cudnn_engine* g, int s, const uint8_t* images, size_t first,
                               size_t count, ttp_err* e) {
  gpu_slot* slot = &g->slots[s];
  int bucket = 0;
  while (g->bucket_images[bucket] < (int)count) bucket++;
  TRACE_PUSH("stage images");
  memcpy(slot->host_in, images + first * g->pixels, count * g->pixels);
  TRACE_POP();
  TRACE_PUSH("launch batch");
  /* Each timing event goes just before the event that is waited on, so that waiting for the
     latter means the former is complete too. */
  slot->timed = g->profiling;
  if (slot->timed) CUDA_TRY(e, cudaEventRecord(slot->t_start, slot->copy));
  CUDA_TRY(e, cudaMemcpyAsync(slot->dev_in, slot->host_in, count * g->pixels,
                              cudaMemcpyHostToDevice, slot->copy));
  if (slot->timed) CUDA_TRY(e, cudaEventRecord(slot->t_in, slot->copy));
  CUDA_TRY(e, cudaEventRecord(slot->in_ready, slot->copy));
  CUDA_TRY(e, cudaStreamWaitEvent(g->ctx.stream, slot->in_ready, 0));
  if (slot->timed) CUDA_TRY(e, cudaEventRecord(slot->t_begin, g->ctx.stream));
  TRY(graph_set_launch(&g->graphs, s, bucket, enqueue_batch, g, g->ctx.stream, e));
  if (slot->timed) CUDA_TRY(e, cudaEventRecord(slot->t_end, g->ctx.stream));
  CUDA_TRY(e, cudaEventRecord(slot->computed, g->ctx.stream));
  CUDA_TRY(e, cudaStreamWaitEvent(slot->copy, slot->computed, 0));
  CUDA_TRY(e, cudaMemcpyAsync(slot->host_out, slot->dev_out, count * g->record,
                              cudaMemcpyDeviceToHost, slot->copy));
  if (slot->timed) CUDA_TRY(e, cudaEventRecord(slot->t_out, slot->copy));
  CUDA_TRY(e, cudaEventRecord(slot->done, slot->copy));
  TRACE_POP();
  slot->busy = 1;
  slot->first = first;
  slot->count = count;
  return TTP_OK;
}

static ttp_status run_on_device(cudnn_engine* g, const uint8_t* images, size_t count,
                                ttp_result* results, float* merged, ttp_err* e) {
  int K = g->cfg.slots, s = 0;
  ttp_status status = TTP_OK;
  for (size_t first = 0; first < count && status == TTP_OK; first += (size_t)g->cfg.max_batch) {
    size_t n = count - first < (size_t)g->cfg.max_batch ? count - first : (size_t)g->cfg.max_batch;
    if (g->slots[s].busy) status = finish_slot(g, &g->slots[s], results, merged, e);
    if (status == TTP_OK) status = launch_batch(g, s, images, first, n, e);
    s = (s + 1) % K;
  }
  /* Collect the batches still in flight, oldest first; after a failure, only wait for them. */
  for (int k = 0; k < K; k++) {
    gpu_slot* slot = &g->slots[(s + k) % K];
    if (!slot->busy) continue;
    if (status == TTP_OK) {
      status = finish_slot(g, slot, results, merged, e);
    } else {
      cudaEventSynchronize(slot->done);
      slot->busy = 0;
    }
  }
  return status;
}

/* ---- the naive baseline ------------------------------------------------------------------- *
 * One image at a time, the way NVIDIA's mnistCUDNN sample works: each layer's output
 * cudaMalloc'ed, the layer launched eagerly, the stream synchronised, the input freed. The same
 * layers, planned for a batch of one image (bucket 0), as the engine above. */

static ttp_status naive_step(void** keep, size_t bytes, ttp_err* e) {
  CUDA_TRY(e, cudaMalloc(keep, bytes));
  return TTP_OK;
}

static ttp_status naive_image(cudnn_engine* g, const uint8_t* image, ttp_result* result,
                              float* merged, ttp_err* e) {
  const model* m = g->m;
  cudaStream_t st = g->ctx.stream;
  size_t rows = (size_t)g->cfg.spec.copies;
  void *pixels = NULL, *in = NULL, *out = NULL, *record = NULL;
  unsigned char host[4096];
  ttp_status s = naive_step(&pixels, g->pixels, e);
  if (s == TTP_OK) s = naive_step(&in, rows * g->pixels * g->ctx.elem, e);
  cudaError_t err = cudaSuccess;
  if (s == TTP_OK && (err = cudaMemcpy(pixels, image, g->pixels, cudaMemcpyHostToDevice)))
    s = ERR(e, TTP_ERR_CUDA, "cudaMemcpy: %s", cudaGetErrorString(err));
  if (s == TTP_OK)
    s = aug_launch(&g->cfg.spec, pixels, 1, m->input.h, m->input.w,
                   g->ctx.half ? AUG_OUT_HALF : AUG_OUT_FLOAT, in, st, e);
  if (s == TTP_OK && (err = cudaStreamSynchronize(st)))
    s = ERR(e, TTP_ERR_CUDA, "cudaStreamSynchronize: %s", cudaGetErrorString(err));
  for (int i = 0; s == TTP_OK && i < m->layer_count; i++) {
    if (g->layers[i].skip) continue;
    s = naive_step(&out, rows * model_shape_size(m->layers[i].out) * g->ctx.elem, e);
    if (s == TTP_OK) s = gpu_layer_enqueue(&g->ctx, &g->layers[i], 0, in, out, e);
    if (s == TTP_OK && (err = cudaStreamSynchronize(st)))
      s = ERR(e, TTP_ERR_CUDA, "cudaStreamSynchronize: %s", cudaGetErrorString(err));
    cudaFree(in);
    in = out;
    out = NULL;
  }
  if (s == TTP_OK && g->ctx.half) {
    s = naive_step(&out, rows * m->classes * sizeof(float), e);
    if (s == TTP_OK) s = gpu_to_float(in, out, rows * m->classes, st, e);
    cudaFree(in);
    in = out;
    out = NULL;
  }
  if (s == TTP_OK) s = naive_step(&record, g->record, e);
  if (s == TTP_OK)
    s = aug_merge_launch(g->cfg.merge, in, 1, g->cfg.spec.copies, m->classes, record, st, e);
  if (s == TTP_OK && (err = cudaStreamSynchronize(st)))
    s = ERR(e, TTP_ERR_CUDA, "cudaStreamSynchronize: %s", cudaGetErrorString(err));
  if (s == TTP_OK && (err = cudaMemcpy(host, record, g->record, cudaMemcpyDeviceToHost)))
    s = ERR(e, TTP_ERR_CUDA, "cudaMemcpy: %s", cudaGetErrorString(err));
  cudaFree(pixels);
  cudaFree(in);
  cudaFree(out);
  cudaFree(record);
  if (s == TTP_OK) {
    memcpy(result, host, sizeof *result);
    if (merged) memcpy(merged, host + sizeof *result, (size_t)m->classes * sizeof(float));
  }
  return s;
}

static ttp_status naive_run(cudnn_engine* g, const uint8_t* images, size_t count,
                            ttp_result* results, float* merged, ttp_err* e) {
  if (g->record > 4096) return ERR(e, TTP_ERR_INVALID_ARGUMENT, "too many classes for naive");
  size_t classes = (size_t)g->m->classes;
  for (size_t i = 0; i < count; i++)
    TRY(naive_image(g, images + i * g->pixels, &results[i], merged ? merged + i * classes : NULL, e));
  return TTP_OK;
}


static ttp_status cudnn_engine_run(void* state, const uint8_t* images, size_t count,
                                   ttp_result* results, float* merged, ttp_err* e) {
  cudnn_engine* g = state;
  int previous;
  TRY(enter_device(g->cfg.device, &previous, e));
  TRACE_PUSH("classify");
  double start = clock_seconds();
  g->waited = 0;
  ttp_status s = g->cfg.naive ? naive_run(g, images, count, results, merged, e)
                              : run_on_device(g, images, count, results, merged, e);
  if (g->profiling) {
    double ms = 1e3 * (clock_seconds() - start);
    if (g->cfg.naive) { /* all of it is its own, waiting included */
      g->stats.compute_ms += ms;
      g->stats.batches += count;
      g->stats.images += count;
    } else { /* the host's own time: the call, less its waits for the GPU */
      g->stats.host_ms += ms - 1e3 * g->waited;
    }
  }
  TRACE_POP();
  leave_device(g->cfg.device, previous);
  return s;
}

static void cudnn_engine_set_profiling(void* state, int on) {
  cudnn_engine* g = state;
  g->profiling = on;
  if (on) {
    g->stats = (ttp_run_stats){.struct_size = sizeof(ttp_run_stats)};
  }
}

static void cudnn_engine_get_stats(void* state, ttp_run_stats* stats) {
  *stats = ((cudnn_engine*)state)->stats;
}

static ttp_status cudnn_engine_bench_device(void* state, const uint8_t* images, size_t count,
                                            int replays, double* ms, ttp_err* e) {
  cudnn_engine* g = state;
  if (g->cfg.naive) return ERR(e, TTP_ERR_INVALID_ARGUMENT, "the naive engine has no device mode");
  if (count < 1 || count > (size_t)g->cfg.max_batch || replays < 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "ttp_bench_device: 1..%d images, at least one replay",
               g->cfg.max_batch);
  int previous;
  TRY(enter_device(g->cfg.device, &previous, e));
  gpu_slot* slot = &g->slots[0];
  int bucket = 0;
  while (g->bucket_images[bucket] < (int)count) bucket++;
  ttp_status s = TTP_OK;
  cudaError_t err = cudaMemcpy(slot->dev_in, images, count * g->pixels, cudaMemcpyHostToDevice);
  if (err != cudaSuccess) s = ERR(e, TTP_ERR_CUDA, "cudaMemcpy: %s", cudaGetErrorString(err));
  for (int r = 0; s == TTP_OK && r < replays; r++) {
    float t = 0;
    err = cudaEventRecord(slot->t_begin, g->ctx.stream);
    if (err == cudaSuccess)
      s = graph_set_launch(&g->graphs, 0, bucket, enqueue_batch, g, g->ctx.stream, e);
    if (s == TTP_OK && err == cudaSuccess) err = cudaEventRecord(slot->t_end, g->ctx.stream);
    if (s == TTP_OK && err == cudaSuccess) err = cudaEventSynchronize(slot->t_end);
    if (s == TTP_OK && err == cudaSuccess) err = cudaEventElapsedTime(&t, slot->t_begin, slot->t_end);
    if (s == TTP_OK && err != cudaSuccess)
      s = ERR(e, TTP_ERR_CUDA, "timing a replay: %s", cudaGetErrorString(err));
    ms[r] = t;
  }
  leave_device(g->cfg.device, previous);
  return s;
}

static const char* cudnn_engine_describe(void* state) {
  return ((cudnn_engine*)state)->description;
}

const engine_ops cudnn_engine_ops = {
    .name = "cudnn",
    .open = cudnn_engine_open,
    .run = cudnn_engine_run,
    .describe = cudnn_engine_describe,
    .close = cudnn_engine_close,
    .set_profiling = cudnn_engine_set_profiling,
    .get_stats = cudnn_engine_get_stats,
    .bench_device = cudnn_engine_bench_device,
};
