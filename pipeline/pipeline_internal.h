/* The pipeline handle's insides, shared by pipeline.c (options, lifecycle, ttp_classify) and
   bulk.c (ttp_classify_files). Nothing outside pipeline/ includes this. */
#ifndef TTP_PIPELINE_INTERNAL_H
#define TTP_PIPELINE_INTERNAL_H

#include "../augment/tta_core.h"
#include "engine.h"
#include "error.h"
#include "../model/model.h"
#include "stream.h"
#include "ttapipe.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

/* Threads meaning "one per core": the online cores, 1..256. */
static inline int pipeline_cores(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores < 1 ? 1 : cores > 256 ? 256 : (int)cores;
}

struct ttp_pipeline {
  ttp_err err;
  ttp_options options;
  model* model;
  aug_spec spec;            /* the augmentation, checked */
  ttp_merge merge;
  float temperature; /* after the merge, by the streaming core (ttp_tta.temperature) */
  const ttp_uncertainty* file_uncertainty; /* during a files callback: ttp_file_uncertainty */
  ttp_model_info info;
  ttp_layer_info* layers;
  char (*details)[64];      /* layers[i].detail */
  int* layer_inputs;        /* layers[i].inputs: MODEL_MAX_INPUTS a layer */
  char (*index_labels)[12]; /* class names when the model has no labels.txt */
  const engine_entry* engine; /* NULL until the engine is open */
  batch_stream stream;        /* the engine behind the streaming core */
  int devices[8];             /* options.devices, copied (device_count of them) */
  char plan_cache[4096];      /* options.plan_cache as a path ("": none) */
  atomic_int cancel;          /* ttp_cancel: stop the files path after the batches in flight */
  double model_s, engine_s;   /* ttp_startup's: reading the model, opening the engine */
  /* open_behind: the thread that opens the engine, until pipeline_ready joins it; how the
     opening went (its message in open_err, copied to err by the calls that needed it). */
  pthread_t opener;
  int opening;
  ttp_status open_status;
  ttp_err open_err;
  char description[6800];
};

/* Waits for the engine's opening (open_behind) and returns its status: TTP_OK with the engine
   open, else why not (recorded). Every call that needs the engine goes through it. */
ttp_status pipeline_ready(ttp_pipeline* p);

/* Whether the engine is still opening on its thread (open_behind; not yet joined). */
static inline int pipeline_opening(const ttp_pipeline* p) { return p->opening; }

/* TTP_OK when no batch of ttp_submit is in flight; else refused (recorded): the calls that run
   the stream themselves (ttp_classify, the files path) wait until they are collected. */
ttp_status pipeline_idle(ttp_pipeline* p);

/* An image's ttp_uncertainty from its merged vector as handed out (classes floats) and the
   merge's extras (MERGE_EXTRAS floats, augment/merge_core.h). */
ttp_uncertainty pipeline_uncertainty(const float* merged, int classes, const float* extras);

#endif
