/* The CUDA Graph lifecycle of a GPU engine: warm-up, capture, instantiate, upload, replay, and
   the eager fallback with its recorded reason.

   The engine gives one enqueue function that launches a whole batch (augment -> layers ->
   merge) for a (slot, bucket) pair on a stream, launches only. graph_set_build runs it eagerly
   once per bucket (cuDNN sets up per-stream state on first use), then captures one
   graph per pair on the engine's own non-default stream, instantiates and uploads them: all of
   it at plan time, so replaying allocates nothing. Graph and eager runs execute the same
   enqueue code, so they give the same bits. If any capture fails, the capture is ended, every
   graph discarded, the reason kept, and the engine goes on eagerly.

   Lazily (GRAPH_LAZY), the warm-up stays at plan time but each pair's graph is captured when
   its first batch is launched, on the launching thread (thread-local capture: other threads'
   CUDA calls cannot break it), and replayed from then on: a job that uses one bucket captures
   that one. A pair whose capture fails runs eagerly from then on. */
#ifndef TTP_GRAPH_H
#define TTP_GRAPH_H

#include <cuda_runtime_api.h>

#include "../pipeline/engine.h" /* GRAPH_EAGER, GRAPH_AT_PLAN, GRAPH_LAZY */
#include "../pipeline/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef ttp_status (*graph_enqueue_fn)(void* ctx, int slot, int bucket, cudaStream_t stream,
                                       ttp_err* e);

typedef struct graph_set {
  int slots, buckets;
  cudaGraphExec_t* exec; /* slots x buckets, NULL when eager (lazily: each NULL until captured) */
  unsigned char* failed; /* lazily: the pairs whose capture failed, eager from then on */
  int replaying;         /* 1: graphs captured (or to be) and replayed; 0: eager launches */
  int lazy;
  char reason[384];      /* why eager: asked for, or the capture's failure */
} graph_set;

/* Warms up every bucket, then (mode GRAPH_AT_PLAN) captures and uploads every (slot, bucket)
   graph. Synchronises stream. Fails only if the eager warm-up fails; a failed capture leaves the
   set eager with the reason recorded. */
ttp_status graph_set_build(graph_set* g, int slots, int buckets, int mode,
                           graph_enqueue_fn enqueue, void* ctx, cudaStream_t stream, ttp_err* e);

/* Lazily: captures (slot, bucket)'s graph where it has none yet (a failure: the pair eager from
   then on); nothing otherwise. Callers that time a launch call it first, so that the capture
   is not counted as the batch's time. */
void graph_set_prepare(graph_set* g, int slot, int bucket, graph_enqueue_fn enqueue, void* ctx,
                       cudaStream_t stream);

/* Launches the batch of (slot, bucket) on stream: its graph (captured first, lazily, when it is
   the pair's first batch), or the enqueue function. */
ttp_status graph_set_launch(graph_set* g, int slot, int bucket, graph_enqueue_fn enqueue,
                            void* ctx, cudaStream_t stream, ttp_err* e);

void graph_set_destroy(graph_set* g);

#ifdef __cplusplus
}
#endif

#endif
