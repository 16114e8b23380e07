/* The merge of an image's N softmax outputs on the CPU: merge_core.h defines the modes, and
   the GPU's merge kernel shares that code. */
#ifndef TTP_AUGMENT_MERGE_H
#define TTP_AUGMENT_MERGE_H

#include <stddef.h>

#include "merge_core.h"
#include "ttapipe.h"

/* probs: copies x classes (copies 1..64); merged: classes floats, written; result written;
   extras: NULL, or MERGE_EXTRAS floats (merge_core.h), written; weights: the copies' (summing
   to 1: aug_spec_weights), or NULL for equal ones. */
void aug_merge(ttp_merge mode, const float* probs, int copies, int classes, float* merged,
               ttp_result* result, float* extras, const float* weights);

/* The temperature after the merge (ttp_tta.temperature) on count results and their merged
   vectors (count x classes), in place: q^(1/T) / sum q^(1/T),
   in double, zeros kept; each result's probability becomes its class's new value, its class and
   spread stay. T = 1 changes nothing. */
void aug_temper(float temperature, int classes, size_t count, ttp_result* results, float* merged);

#endif
