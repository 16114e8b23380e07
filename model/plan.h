/* Where an engine keeps a model's values: one arena, each value at an offset, a value's room
   given to a later one once no layer reads it any more (TensorFlow Lite's arena planner does
   likewise). Planned once, at open, in floats of one image; an engine that runs n images at
   once multiplies. */
#ifndef TTP_MODEL_PLAN_H
#define TTP_MODEL_PLAN_H

#include <stddef.h>

#include "model.h"

/* Each value's offset in the arena are aligned to this many floats (64 bytes). */
enum { MODEL_PLAN_ALIGN = 16 };

typedef struct model_plan {
  size_t* offsets; /* layer_count + 1: value v at offsets[v] (floats) */
  size_t arena;    /* floats in all */
  size_t sum;      /* the values' sizes summed (aligned): what one buffer each would take */
} model_plan;

/* Plans m's values: a layer's output never shares room with a value still to be read, its own
   inputs included (a layer reads its inputs while it writes); the last layer's output and the
   network's input are kept to the end. Rooms are taken first-fit from the freed ones, in the
   layers' order. Returns TTP_OK or TTP_ERR_OUT_OF_MEMORY. */
ttp_status model_plan_values(const model* m, model_plan* plan, ttp_err* e);

/* The same for an engine that runs some layers together as one unit (a convolution with the
   Add and the ReLU after it, in one kernel): layer i runs at step run_at[i] (>= i, and the
   unit's last layer j has run_at[j] = j), reading its inputs then; only a unit's last layer
   writes its value to memory. The other layers' values get no room (offset SIZE_MAX): the
   engine must not let a layer outside the unit read them. run_at NULL: every layer alone
   (model_plan_values). */
ttp_status model_plan_units(const model* m, const int* run_at, model_plan* plan, ttp_err* e);
void model_plan_free(model_plan* plan); /* accepts one never planned */

#endif
