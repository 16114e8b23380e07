/* The merge of an image's N softmax outputs on the CPU: merge_core.h defines the modes, and
   the GPU's merge kernel shares that code. */
#ifndef TTP_AUGMENT_MERGE_H
#define TTP_AUGMENT_MERGE_H

#include "ttapipe.h"

/* probs: copies x classes (copies 1..64); merged: classes floats, written; result written. */
void aug_merge(ttp_merge mode, const float* probs, int copies, int classes, float* merged,
               ttp_result* result);

#endif
