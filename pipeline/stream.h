/* The streaming core, the one way every engine is driven: ttp_classify (a caller's array, copied
   in), ttp_classify_files (the decode pool writes straight into the core's input buffers) and
   ttapipe bench go through it alike.

   A stream has `depth` slots, each an input buffer of `capacity` images owned by the core
   (pinned host memory on a GPU). A producer acquires the next free slot, writes images into its
   buffer and submits it; results are collected in the order of submission. Slots are used in a
   ring: at any time the busy ones are, oldest first, the batches in flight (submitted, not yet
   collected) and then the slots acquired but not yet submitted. When every slot is busy,
   acquiring fails: the caller collects the oldest batch first (back-pressure). Submitting
   returns at once on a GPU, so consecutive batches overlap their copies and compute whoever
   submits them, one call or many.

   An implementation provides the per-slot work (stream_impl): the GPU runner for the GPU engines
   (graph/runner.c), the host stream for the CPU engine (host_stream.c). This file keeps the
   order, the back-pressure and the profiling counters, once for all of them. One thread drives
   a stream at a time (the decode pool's workers only write into buffers handed to them). */
#ifndef TTP_STREAM_H
#define TTP_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ttapipe.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { STREAM_MAX_SLOTS = 16 };

typedef struct stream_impl {
  /* Slot s's input buffer: capacity x pixels bytes. */
  uint8_t* (*input)(void* impl, int s);
  /* Starts slot s's batch of count images (1..capacity) and returns without waiting for it.
     stats: NULL, or the counters to add this batch's timings to (profiling). */
  ttp_status (*submit)(void* impl, int s, size_t count, ttp_run_stats* stats, ttp_err* e);
  /* Waits for slot s's batch of count images, writes its results (and merged vectors, count x
     classes, when merged is not NULL; the merge's extras, count x MERGE_EXTRAS of
     augment/merge_core.h, when extras is not NULL), adds its timings to stats (when not NULL)
     and the seconds the host spent waiting to *waited. */
  ttp_status (*collect)(void* impl, int s, size_t count, ttp_result* results, float* merged,
                        float* extras, ttp_run_stats* stats, double* waited, ttp_err* e);
  /* Whether slot s's batch is done, without waiting (collecting it would not block). */
  int (*ready)(void* impl, int s);
  /* After a failure: waits for slot s's batch, and forgets it. */
  void (*abandon)(void* impl, int s);
  /* Slot s, acquired and never submitted, is forgotten (NULL: nothing to do). */
  void (*release)(void* impl, int s);
  /* ttp_classify_device (ttapipe.h): device images to device results, ordered on the caller's
     CUDA stream; NULL for an engine without a device. */
  ttp_status (*classify_device)(void* impl, const uint8_t* images, size_t count,
                                ttp_result* results, float* merged, void* stream, ttp_err* e);
  /* ttp_bench_device; NULL for an engine without a device. */
  ttp_status (*bench_device)(void* impl, const uint8_t* images, size_t count, int replays,
                             double* ms, ttp_err* e);
  const char* (*describe)(void* impl); /* one line: how the engine runs */
  void (*close)(void* impl);           /* waits for everything in flight; accepts NULL */
} stream_impl;

typedef struct batch_stream {
  const stream_impl* ops;
  void* impl;
  int depth;       /* slots, 1..STREAM_MAX_SLOTS */
  size_t capacity; /* images per batch */
  size_t pixels;   /* bytes per image */
  int classes;
  int oldest;      /* the oldest busy slot */
  int in_flight;   /* slots oldest .. oldest + in_flight - 1 (in the ring) */
  int acquired;    /* the next `acquired` slots after them */
  size_t count[STREAM_MAX_SLOTS];
  int profiling;
  ttp_run_stats stats;
  ttp_startup startup; /* a GPU runner's parts of its opening (cuda_s, buffers_s, graphs_s);
                          ttp_get_startup adds the rest */
  float temperature; /* applied to every collected batch (ttp_tta.temperature); 1: none */
  float* scratch;    /* capacity x classes: the merged vectors a caller did not ask for, which
                        the temperature still needs (only when temperature != 1) */
} batch_stream;

/* The next free slot's input buffer (capacity x pixels bytes), or NULL when every slot is in
   flight or acquired: collect the oldest batch first. */
uint8_t* stream_acquire(batch_stream* s);

/* Submits the oldest acquired slot with count images (1..capacity). */
ttp_status stream_submit(batch_stream* s, size_t count, ttp_err* e);

/* Waits for the oldest batch in flight and writes its results (results: its count entries;
   merged: NULL, or count x classes floats; extras: NULL, or count x MERGE_EXTRAS); *count: how
   many. */
ttp_status stream_collect(batch_stream* s, ttp_result* results, float* merged, float* extras,
                          size_t* count, ttp_err* e);

/* Whether the oldest batch in flight is done: collecting it would not wait. 0 if none. */
int stream_ready(batch_stream* s);

/* After a failure: waits for every batch in flight, forgets them and every acquired slot. */
void stream_abandon(batch_stream* s);

/* Classifies a caller's array through the stream: each batch copied into the next free slot,
   submitted, and collected as slots are needed; returns when every result is written. Adds the
   host's own time (the call less its waits) to the profile. */
ttp_status stream_run(batch_stream* s, const uint8_t* images, size_t count, ttp_result* results,
                      float* merged, float* extras, ttp_err* e);

void stream_set_profiling(batch_stream* s, int on);

/* The temperature applied after the merge to everything collected from now on (augment/merge.h:
   aug_temper). */
ttp_status stream_set_temperature(batch_stream* s, float temperature, ttp_err* e);

/* Closes the implementation; the stream is empty afterwards. Accepts a stream never opened. */
void stream_close(batch_stream* s);

#ifdef __cplusplus
}
#endif

#endif
