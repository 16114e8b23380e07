/* The CPU engine: the reference pipeline. Each image, whole on one worker thread, becomes its N
   augmented copies (augment/tta.h), each copy goes through the model's layers, and the N softmax
   outputs are merged (augment/merge.h). Plan, then run: cpu_engine_open sizes and allocates
   every worker's buffers; cpu_engine_run allocates nothing (it only starts the workers), so an
   image's result cannot depend on the batch, its position, or the number of threads. */
#ifndef TTP_CPU_ENGINE_H
#define TTP_CPU_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "../../augment/tta.h"
#include "../model.h"

typedef struct cpu_engine cpu_engine;

/* threads: 1..CPU_MAX_THREADS. The model must outlive the engine; spec is copied. */
enum { CPU_MAX_THREADS = 256 };
ttp_status cpu_engine_open(const model* m, int threads, const aug_spec* spec, ttp_merge merge,
                           cpu_engine** out, ttp_err* e);
void cpu_engine_close(cpu_engine* eng);

/* images: count x (input h x w) bytes. results: count entries; merged: count x classes floats
   (each image's merged probability vector). */
void cpu_engine_run(cpu_engine* eng, const uint8_t* images, size_t count, ttp_result* results,
                    float* merged);

/* One image through every layer, on the buffers of worker `worker` (0..threads-1).
   input: the model's input shape, already scaled; probs: classes floats. */
void cpu_engine_forward(cpu_engine* eng, int worker, const float* input, float* probs);

#endif
