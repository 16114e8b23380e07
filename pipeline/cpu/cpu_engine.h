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
#include "../engine.h"
#include "../../model/model.h"

typedef struct cpu_engine cpu_engine;

/* Opened and run through cpu_engine_ops (engine.h), from the registry. threads:
   1..CPU_MAX_THREADS. */
enum { CPU_MAX_THREADS = 256 };

extern const host_engine_ops cpu_engine_ops;
/* engine_entry.supports and .run_layer (engine.h). */
int cpu_engine_supports(const model_layer* l, const engine_config* c, char* why, size_t n);
ttp_status cpu_engine_run_layer(const model_layer* l, int n, const engine_config* c, int use_graph,
                                const float* in, float* out, size_t guard, ttp_err* e);

/* ttp_inspect_copies: image's c->spec.copies copies one by one through the reference: inputs
   (NULL, or copies x the model's input floats: each copy as the network sees it) and probs
   (copies x classes floats: each copy's softmax). Opens its own one-thread engine. */
ttp_status cpu_engine_copies(const model* m, const engine_config* c, const uint8_t* image,
                             float* inputs, float* probs, ttp_err* e);

#endif
