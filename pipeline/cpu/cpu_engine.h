/* The CPU engine: runs a checked model (model_check) over images with a few worker threads, each
   image whole on one thread. Plan, then run: cpu_engine_open sizes and allocates every worker's
   buffers; cpu_engine_run allocates nothing (it only starts the workers), so an image's result
   cannot depend on the batch, its position, or the number of threads. */
#ifndef TTP_CPU_ENGINE_H
#define TTP_CPU_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "../model.h"

typedef struct cpu_engine cpu_engine;

/* threads: 1..CPU_MAX_THREADS. The model must outlive the engine. */
enum { CPU_MAX_THREADS = 256 };
ttp_status cpu_engine_open(const model* m, int threads, cpu_engine** out, ttp_err* e);
void cpu_engine_close(cpu_engine* eng);

/* images: count x (input h x w) bytes, scaled to [0,1] by /255. probs: count x classes. */
void cpu_engine_run(cpu_engine* eng, const uint8_t* images, size_t count, float* probs);

/* One image through every layer, on the buffers of worker `worker` (0..threads-1).
   input: the model's input shape, already scaled; probs: classes floats. */
void cpu_engine_forward(cpu_engine* eng, int worker, const float* input, float* probs);

#endif
