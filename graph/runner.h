/* The GPU runner: what makes ttapipe a CUDA-Graphs pipeline, for every GPU engine alike. A GPU
   engine is only a network (gpu_network_ops): it plans itself for the runner's batch buckets
   and launches one batch from a device input to a device output. The runner owns the rest:

     device   the pipeline's device made current inside each call, the caller's given back;
     buckets  1, 8, 64, 512, 4096, 32768 below max_batch, and max_batch: a batch of b images runs
              in the smallest bucket >= b, its padding rows computed and never read back;
     slots    K of them in a ring, each: pinned host input (max_batch images) and output
              (max_batch records), their device twins, a copy stream and three events;
     graphs   one CUDA Graph per (slot, bucket), captured from the network's enqueue
              (graph.h), or eager launches with the reason;
     timing   CUDA events around each batch's copies and compute, when profiling;
     device mode  ttp_bench_device: a batch replayed with its input already on the GPU (the
              latency path's graphs take their input from pinned memory: that trip counts).

   It serves the streaming core (pipeline/stream.h). Submitting slot s: on its copy stream, the
   copy in; the compute stream waits for it and replays the (s, bucket) graph; the copy stream
   waits for that and copies the records out. Collecting slot s waits for its last event, the
   only wait the host makes. So while batch i computes, batch i+1 is copied in and batch i-1
   out, whoever submits them.

   The latency path: buckets up to the network's direct_max (small batches, where every node,
   copy and event between streams costs more than the work) run as one graph on the compute
   stream alone: the network takes its images from the slot's pinned host input (mapped: its
   kernels read them across PCIe, or it copies them in first, as it measured best) and writes
   the records straight into the slot's pinned host output (mapped); no copy out, no events
   between streams. The measured floor (tests/bench/floor.cu, BENCHMARKS.md) chose this shape:
   a copy node out costs ~8 us more than the kernel's writes to mapped memory; a kernel reading
   its input from mapped memory in one round of loads ~2 us less than a copy node in at one
   image, ~8 us less at 64 (read a byte at a time, in turn, it cost ~12 us more). */
#ifndef TTP_GRAPH_RUNNER_H
#define TTP_GRAPH_RUNNER_H

#include <cuda_runtime_api.h>

#include "../pipeline/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GPU_MAX_BUCKETS = 8, GPU_MAX_SLOTS = STREAM_MAX_SLOTS, GPU_CANONICAL_IMAGES = 1024 };

/* The batch sizes a runner serves, smallest first. */
typedef struct gpu_buckets {
  int count;
  int images[GPU_MAX_BUCKETS];
} gpu_buckets;

typedef struct gpu_network_ops {
  const char* name;
  /* Plans the network on the current device for every bucket: everything that allocates or
     synchronises. stream: the runner's compute stream, on which every batch will run. */
  ttp_status (*plan)(const model* m, const engine_config* c, const gpu_buckets* buckets,
                     cudaStream_t stream, void** net, ttp_err* e);
  /* Launches one batch of bucket b on stream: dev_in (its images, pixel bytes) -> dev_out (one
     record per image: a ttp_result and the merged vector, augment/merge_kernel.h). Launches
     (and copies on stream) only: no allocation, no synchronisation, no host read of device
     data (it is captured). Buckets up to direct_max: dev_in is the slot's pinned host input as
     the device addresses it, unchanged until the batch is collected. */
  ttp_status (*enqueue)(void* net, int bucket, const uint8_t* dev_in, void* dev_out,
                        cudaStream_t stream, ttp_err* e);
  /* The largest bucket whose enqueue may write its records straight into pinned host memory
     (dev_out is then the slot's mapped host output; 0: none): the runner's latency path. */
  int direct_max;
  const char* (*precision)(void* net); /* a phrase: "fp32 (FMA, no TF32)" */
  const char* (*details)(void* net);   /* per layer: "conv1: implicit GEMM ...; ..." or "" */
  void (*destroy)(void* net);          /* the device current; accepts NULL */
} gpu_network_ops;

/* Test hooks (tests/gpu/test_gpu_faults.c), -1 (off) unless a test sets them; when >= 0, the
   number of batches (of any runner of the process) still to submit before the one they strike,
   after which they are -1 again. gpu_fault_batch's batch is followed on its stream by a kernel
   that traps: a fault CUDA cannot recover from within the process, as a failing kernel or device
   gives. gpu_refuse_batch's batch fails to submit instead: a plain launch error, after which the
   GPU stays usable. One thread at a time. */
extern long long gpu_fault_batch, gpu_refuse_batch;

/* Launches the trapping kernel on stream (graph/fault.cu). */
cudaError_t gpu_fault_launch(cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
