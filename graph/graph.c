/* CUDA Graph lifecycle: see graph.h. Capture rules kept here (shared/DESIGN.md): warm up on the
   capture stream first; never capture on the legacy default stream; thread-local capture mode,
   so that another thread's CUDA calls cannot break it; end a failed capture and discard it. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>

#include "../pipeline/cuda_check.h"

/* A capture's failure: the reason into e, and CUDA's last error cleared, so that the eager
   launch that follows does not take it for its own. */
static ttp_status capture_failed(ttp_err* e, const char* call, cudaError_t err) {
  cudaGetLastError();
  return ERR(e, TTP_ERR_CUDA, "%s: %s", call, cudaGetErrorString(err));
}

/* Captures one graph; on failure returns a non-OK status with the reason in e. */
static ttp_status capture(int slot, int bucket, graph_enqueue_fn enqueue, void* ctx,
                          cudaStream_t stream, cudaGraphExec_t* exec, ttp_err* e) {
  cudaGraph_t graph = NULL;
  const cudaError_t begin = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (begin != cudaSuccess) return capture_failed(e, "cudaStreamBeginCapture", begin);
  ttp_status s = enqueue(ctx, slot, bucket, stream, e);
  cudaError_t end = cudaStreamEndCapture(stream, &graph); /* always end what was begun */
  if (s != TTP_OK) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return s;
  }
  if (end != cudaSuccess) return capture_failed(e, "cudaStreamEndCapture", end);
  cudaError_t inst = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  if (inst != cudaSuccess) {
    *exec = NULL;
    return capture_failed(e, "cudaGraphInstantiate", inst);
  }
  const cudaError_t up = cudaGraphUpload(*exec, stream);
  if (up != cudaSuccess) {
    cudaGraphExecDestroy(*exec);
    *exec = NULL;
    return capture_failed(e, "cudaGraphUpload", up);
  }
  return TTP_OK;
}

static void destroy_graphs(graph_set* g) {
  if (!g->exec) return;
  for (int i = 0; i < g->slots * g->buckets; i++)
    if (g->exec[i]) cudaGraphExecDestroy(g->exec[i]);
  free(g->exec);
  free(g->failed);
  g->exec = NULL;
  g->failed = NULL;
  g->replaying = 0;
}

ttp_status graph_set_build(graph_set* g, int slots, int buckets, int mode,
                           graph_enqueue_fn enqueue, void* ctx, cudaStream_t stream, ttp_err* e) {
  *g = (graph_set){.slots = slots, .buckets = buckets};
  for (int b = 0; b < buckets; b++) TRY(enqueue(ctx, 0, b, stream, e));
  CUDA_TRY(e, cudaStreamSynchronize(stream));
  if (mode == GRAPH_EAGER) {
    snprintf(g->reason, sizeof g->reason, "eager launches, as asked (no graph)");
    return TTP_OK;
  }
  g->exec = calloc((size_t)slots * buckets, sizeof *g->exec);
  if (!g->exec) return ERR_NOMEM(e, (size_t)slots * buckets * sizeof *g->exec);
  g->replaying = 1;
  if (mode == GRAPH_LAZY) {
    g->lazy = 1;
    g->failed = calloc((size_t)slots * buckets, 1);
    if (!g->failed) {
      destroy_graphs(g);
      return ERR_NOMEM(e, (size_t)slots * buckets);
    }
    return TTP_OK;
  }
  for (int slot = 0; slot < slots && g->replaying; slot++)
    for (int b = 0; b < buckets && g->replaying; b++) {
      ttp_err why = {0};
      if (capture(slot, b, enqueue, ctx, stream, &g->exec[slot * buckets + b], &why) != TTP_OK) {
        destroy_graphs(g);
        snprintf(g->reason, sizeof g->reason, "eager launches: capture failed: %.300s",
                 why.message);
      }
    }
  CUDA_TRY(e, cudaStreamSynchronize(stream));
  return TTP_OK;
}

void graph_set_prepare(graph_set* g, int slot, int bucket, graph_enqueue_fn enqueue, void* ctx,
                       cudaStream_t stream) {
  if (!g->replaying || !g->lazy) return;
  const int i = slot * g->buckets + bucket;
  if (g->exec[i] || g->failed[i]) return;
  ttp_err why = {0};
  if (capture(slot, bucket, enqueue, ctx, stream, &g->exec[i], &why) != TTP_OK) {
    g->failed[i] = 1; /* this pair eagerly from now on: the same enqueue, the same bits */
    g->exec[i] = NULL;
  }
}

ttp_status graph_set_launch(graph_set* g, int slot, int bucket, graph_enqueue_fn enqueue,
                            void* ctx, cudaStream_t stream, ttp_err* e) {
  if (!g->replaying) return enqueue(ctx, slot, bucket, stream, e);
  const int i = slot * g->buckets + bucket;
  graph_set_prepare(g, slot, bucket, enqueue, ctx, stream);
  if (!g->exec[i]) return enqueue(ctx, slot, bucket, stream, e); /* its capture failed */
  CUDA_TRY(e, cudaGraphLaunch(g->exec[i], stream));
  return TTP_OK;
}

void graph_set_destroy(graph_set* g) { destroy_graphs(g); }
