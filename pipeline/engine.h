/* The engines that run a model, from a registry (engines.c), so that the pipeline knows none of
   them by name or address. Each engine says which layers it supports; ttp_open checks the model
   against it before any work. Two kinds:
   - a host engine (cpu, onednn) does the whole job of a batch on the CPU: augment, forward
     every copy, merge. host_stream.c drives it through the streaming core (stream.h);
   - a GPU engine is only a network: plan, enqueue (stream, device input, device output,
     bucket), describe, destroy (graph/runner.h). graph/'s runner does the rest: the device, the
     buckets, the ring of pinned slots, the CUDA Graphs, the timings.
   Every engine can also run one layer by itself (run_layer), so that tests/unit/test_layers.c
   checks each of its layers against the CPU reference. */
#ifndef TTP_ENGINE_H
#define TTP_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "../augment/tta_core.h"
#include "error.h"
#include "../model/model.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ttp_cancel's flag, which host engines read: a C11 atomic int. CUDA's C++ translation units
   see only pointers to it (the same size), never the flag. */
#ifdef __cplusplus
typedef int engine_cancel_flag;
#else
#include <stdatomic.h>
typedef atomic_int engine_cancel_flag;
#endif

/* How a GPU engine uses CUDA Graphs (engine_config.use_graph, graph/graph.h). */
enum { GRAPH_EAGER = 0, GRAPH_AT_PLAN = 1, GRAPH_LAZY = 2 };

/* What an engine is opened with: the checked options of ttp_open. */
typedef struct engine_config {
  int threads;             /* CPU engines: worker threads */
  int device;              /* GPU engines: CUDA device index */
  const int* devices;      /* GPU engines: device_count > 1: one runner on each of these (graph/
                              devices.c); device is devices[0] */
  int device_count;        /* 1 for one device */
  int choice_device;       /* cudnn engine: the device whose algorithm choices every runner of
                              the pipeline takes (the first of its devices) */
  ttp_precision precision; /* GPU engines */
  int max_batch;           /* GPU engines: images per batch */
  int exact_batch;         /* host engines too take max_batch images a batch (open_behind) */
  int slots;               /* GPU engines: pinned slots in the ring */
  int use_graph;           /* GPU engines: GRAPH_EAGER (launches), GRAPH_AT_PLAN (every
                              (slot, bucket)'s CUDA Graph captured at open) or GRAPH_LAZY (each
                              on its first batch): graph/graph.h */
  ttp_wait wait;           /* GPU engines: how collecting a batch waits (ttapipe.h) */
  ttp_plan plan;           /* cudnn engine: how it chooses convolution algorithms (ttapipe.h) */
  const char* plan_cache;  /* cudnn engine: the plan cache file (plan_cache.h), or NULL */
  aug_spec spec;
  ttp_merge merge;
  /* The pipeline's ttp_cancel flag (NULL: never set). A host engine reads it between images or
     tiles of a batch and, once set, gives the batch up with TTP_ERR_CANCELLED: a cancel then
     waits for a few images, not for a batch. GPU engines leave their batches to finish (a
     batch is milliseconds). */
  const engine_cancel_flag* cancel;
} engine_config;

/* A host engine: the whole job for a run of images. */
typedef struct host_engine_ops {
  /* Plan: everything that allocates. The model outlives the engine. */
  ttp_status (*open)(const model* m, const engine_config* c, void** state, ttp_err* e);
  /* images: count x input pixels. results: count entries. merged: NULL, or count x classes.
     extras: NULL, or count x MERGE_EXTRAS (augment/merge_core.h). TTP_ERR_CANCELLED when
     engine_config.cancel was set during the batch: its results are not written, or not all. */
  ttp_status (*run)(void* state, const uint8_t* images, size_t count, ttp_result* results,
                    float* merged, float* extras, ttp_err* e);
  const char* (*describe)(void* state); /* one line: how the engine runs */
  void (*close)(void* state);           /* accepts NULL */
} host_engine_ops;

struct gpu_network_ops; /* graph/runner.h: a GPU engine's network */

typedef struct engine_entry {
  ttp_engine id;    /* the value callers name it by (ttapipe.h) */
  const char* name; /* "cpu", "cudnn", "fused", "onednn" */
  /* Whether the engine runs layer l under options c; if not, why (one phrase) into why. NULL
     where this build cannot run the engine at all. */
  int (*supports)(const model_layer* l, const engine_config* c, char* why, size_t n);
  /* Whether the engine runs the model as a whole (its order of layers, its sizes) under c; if
     not, why into why. NULL: every model whose layers it supports. */
  int (*supports_model)(const model* m, const engine_config* c, char* why, size_t n);
  const host_engine_ops* host;            /* a host engine, or NULL */
  const struct gpu_network_ops* network;  /* a GPU engine's network, or NULL (also a GPU engine
                                             in a CPU-only build) */
  /* One layer by itself, for tests: n rows of l's input (host floats) -> out, which holds n rows
     of l's output between `guard` floats on each side; every float of out is carried to where
     the engine computes and back, so that a write outside the rows shows. GPU engines launch
     eagerly or (use_graph) through a captured CUDA Graph, in c->precision. */
  ttp_status (*run_layer)(const model_layer* l, int n, const engine_config* c, int use_graph,
                          const float* in, float* out, size_t guard, ttp_err* e);
  /* A CPU engine this build lacks (supports NULL): why, for the error of a caller who names it.
     NULL for the GPU engines, whose absence is TTP_ERR_NO_GPU. */
  const char* absent;
  int graphs; /* it runs any graph of the layers it supports (model.h); 0: chains alone */
} engine_entry;

/* Whether l's window (a convolution's or a pooling's) is one every engine takes: a stride and a
   padding the same on every side, no dilation, one group, no ceil mode; if not, why into why.
   Other layers: 1. */
int engine_plain_windows(const model_layer* l, char* why, size_t n);

#ifndef __cplusplus
/* Whether a cancel flag (engine_config.cancel, kept by the engine) is set. */
static inline int engine_cancelled(const engine_cancel_flag* cancel) {
  return cancel && atomic_load_explicit(cancel, memory_order_relaxed);
}
#endif

/* The entry of engine id; NULL for an unknown or retired value (3, the naive baseline). */
const engine_entry* engine_find(ttp_engine id);

/* The engines TTP_ENGINE_AUTO tries, best first; NULL-terminated. */
extern const engine_entry* const engine_preference[];

/* TTP_OK if the engine supports every layer of m, and m as a whole, under c; else
   TTP_ERR_MODEL with one line naming the engine and the first layer it cannot run, or why it
   cannot run the model. */
ttp_status engine_check_model(const engine_entry* engine, const model* m, const engine_config* c,
                              ttp_err* e);

/* Opens the engine on m into a streaming core (stream.h). */
ttp_status engine_open_stream(const engine_entry* engine, const model* m, const engine_config* c,
                              batch_stream* s, ttp_err* e);

/* graph/runner.c (gpu_absent.c in a CPU-only build): a GPU engine's network behind the ring. */
ttp_status gpu_runner_open(const struct gpu_network_ops* network, const model* m,
                           const engine_config* c, batch_stream* s, ttp_err* e);

/* graph/devices.c (gpu_absent.c in a CPU-only build): a GPU engine's network on each of
   c->devices, behind one stream. */
ttp_status gpu_devices_open(const struct gpu_network_ops* network, const model* m,
                            const engine_config* c, batch_stream* s, ttp_err* e);

/* host_stream.c: a host engine behind the streaming core. */
ttp_status host_stream_open(const host_engine_ops* host, const model* m, const engine_config* c,
                            batch_stream* s, ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
