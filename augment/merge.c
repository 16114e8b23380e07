/* The merge of N softmax outputs on the CPU (definitions in merge_core.h). */
#include "merge.h"

#include "merge_core.h"

void aug_merge(ttp_merge mode, const float* probs, int copies, int classes, float* merged,
               ttp_result* result) {
  merge_image(mode, probs, copies, classes, merged, result);
}
