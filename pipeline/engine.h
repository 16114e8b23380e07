/* The engines that run a model: one table of operations per engine, picked by ttp_engine, so
   the pipeline handle knows nothing of CPUs or GPUs. Every engine does the whole job of
   ttp_classify for a run of images: augment, forward every copy, merge. */
#ifndef TTP_ENGINE_H
#define TTP_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "../augment/tta_core.h"
#include "error.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an engine is opened with: the checked options of ttp_open. */
typedef struct engine_config {
  int threads;             /* CPU engine: worker threads */
  int device;              /* GPU engines: CUDA device index */
  ttp_precision precision; /* GPU engines */
  int max_batch;           /* GPU engines: images per batch */
  int slots;               /* GPU engines: pinned slots in the ring */
  int use_graph;           /* GPU engines: replay CUDA Graphs (else eager launches) */
  int naive;               /* the cudnn engine driven like NVIDIA's sample (TTP_ENGINE_NAIVE) */
  aug_spec spec;
  ttp_merge merge;
} engine_config;

typedef struct engine_ops {
  const char* name;
  /* Plan: everything that allocates or synchronises. The model outlives the engine. */
  ttp_status (*open)(const model* m, const engine_config* c, void** state, ttp_err* e);
  /* images: count x input pixels. results: count entries. merged: NULL, or count x classes. */
  ttp_status (*run)(void* state, const uint8_t* images, size_t count, ttp_result* results,
                    float* merged, ttp_err* e);
  /* One line: how the engine runs (precision, algorithms, graphs or why not). */
  const char* (*describe)(void* state);
  void (*close)(void* state); /* accepts NULL */
  /* Measuring (ttapipe.h): profiling on (counters reset) or off; the counters. */
  void (*set_profiling)(void* state, int on);
  void (*get_stats)(void* state, ttp_run_stats* stats);
  /* ttp_bench_device; NULL where the engine has no device mode. */
  ttp_status (*bench_device)(void* state, const uint8_t* images, size_t count, int replays,
                             double* ms, ttp_err* e);
} engine_ops;

extern const engine_ops cpu_engine_ops;
extern const engine_ops cudnn_engine_ops; /* a CPU-only build's answers TTP_ERR_NO_GPU */

#ifdef __cplusplus
}
#endif

#endif
