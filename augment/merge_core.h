/* The merge of an image's N softmax outputs into one result, shared word for word by the CPU
   (merge.c) and the GPU (merge_kernel.cu). Modes (ttp_merge):
     mean   the mean of the N vectors (the default);
     vote   each copy votes for its most probable class; the vector is the share of votes, and
            a tie between classes goes to the one of higher mean probability;
     max    each class's highest probability over the copies, normalised to sum to 1;
     gmean  the geometric mean of the copies' probabilities (floored at 1e-30 so that one copy's
            zero does not erase a class), normalised to sum to 1.
   The class is the merged vector's most probable (the lowest index on a tie), or the vote's
   winner; the spread is the population standard deviation of that class's probability over
   the copies. Sums are taken in double; no scratch memory is needed. */
#ifndef TTP_AUGMENT_MERGE_CORE_H
#define TTP_AUGMENT_MERGE_CORE_H

#include <math.h>

#include "../pipeline/ttapipe.h"
#include "tta_core.h"

enum { MERGE_MAX_COPIES = 64 };

/* The lowest index of the largest of n values. */
AUG_FN int merge_argmax(const float* v, int n) {
  int best = 0;
  for (int k = 1; k < n; k++)
    if (v[k] > v[best]) best = k;
  return best;
}

AUG_FN double merge_mean(const float* probs, int copies, int classes, int k) {
  double sum = 0;
  for (int c = 0; c < copies; c++) sum += probs[c * classes + k];
  return sum / copies;
}

/* Class k's value before normalisation. winners: each copy's class (vote only). */
AUG_FN double merge_value(ttp_merge mode, const float* probs, int copies, int classes, int k,
                          const int* winners) {
  double v = 0;
  switch (mode) {
    case TTP_MERGE_VOTE:
      for (int c = 0; c < copies; c++) v += winners[c] == k;
      return v / copies;
    case TTP_MERGE_MAX:
      v = probs[k];
      for (int c = 1; c < copies; c++) v = fmax(v, (double)probs[c * classes + k]);
      return v;
    case TTP_MERGE_GMEAN:
      for (int c = 0; c < copies; c++) v += log(fmax((double)probs[c * classes + k], 1e-30));
      return exp(v / copies);
    case TTP_MERGE_MEAN:
    default:
      return merge_mean(probs, copies, classes, k);
  }
}

/* Each copy's class (vote only: winners needs copies entries). */
AUG_FN void merge_winners(ttp_merge mode, const float* probs, int copies, int classes,
                          int* winners) {
  if (mode == TTP_MERGE_VOTE)
    for (int c = 0; c < copies; c++) winners[c] = merge_argmax(probs + c * classes, classes);
}

/* What the values are divided by: the sum of every class's value (max, gmean), else 1. */
AUG_FN double merge_norm(ttp_merge mode, const float* probs, int copies, int classes,
                         const int* winners) {
  double norm = 1;
  if (mode == TTP_MERGE_MAX || mode == TTP_MERGE_GMEAN) {
    norm = 0;
    for (int k = 0; k < classes; k++) norm += merge_value(mode, probs, copies, classes, k, winners);
  }
  return norm;
}

/* Class k of the merged vector. (The GPU's small batches give each class a thread of its own;
   the value is the same whichever computes it.) */
AUG_FN float merge_class(ttp_merge mode, const float* probs, int copies, int classes, int k,
                         const int* winners, double norm) {
  return (float)(merge_value(mode, probs, copies, classes, k, winners) / norm);
}

/* After the merged vector: the class, its probability and the spread into result. */
AUG_FN void merge_finish(ttp_merge mode, const float* probs, int copies, int classes,
                         const float* merged, ttp_result* result) {
  int best = merge_argmax(merged, classes);
  if (mode == TTP_MERGE_VOTE) /* equal shares: the higher mean probability wins */
    for (int k = 0; k < classes; k++)
      if (merged[k] == merged[best] &&
          merge_mean(probs, copies, classes, k) > merge_mean(probs, copies, classes, best))
        best = k;
  double m = merge_mean(probs, copies, classes, best), squares = 0;
  for (int c = 0; c < copies; c++) {
    double d = probs[c * classes + best] - m;
    squares += d * d;
  }
  result->class_index = best;
  result->probability = merged[best];
  result->spread = (float)sqrt(squares / copies);
}

/* probs: copies x classes (copies <= MERGE_MAX_COPIES); merged: classes floats, written. */
AUG_FN void merge_image(ttp_merge mode, const float* probs, int copies, int classes, float* merged,
                        ttp_result* result) {
  int winners[MERGE_MAX_COPIES];
  merge_winners(mode, probs, copies, classes, winners);
  const double norm = merge_norm(mode, probs, copies, classes, winners);
  for (int k = 0; k < classes; k++)
    merged[k] = merge_class(mode, probs, copies, classes, k, winners, norm);
  merge_finish(mode, probs, copies, classes, merged, result);
}

#endif
