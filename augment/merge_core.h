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
   the copies. Sums are taken in double; no scratch memory is needed.
   Beside them, merge_extras: what the copies say beyond the merged vector (AUG_EXTRAS floats
   after it in a record, ttp_classify_uncertainty): the mutual information between the copies
   and the class, and the copies' agreement with the result. */
#ifndef TTP_AUGMENT_MERGE_CORE_H
#define TTP_AUGMENT_MERGE_CORE_H

#include <math.h>

#include "../pipeline/ttapipe.h"
#include "tta_core.h"

enum { MERGE_MAX_COPIES = 64 };
/* The extras' places: the entropy of the copies' mean less the mean of the copies' entropies
   (nats; BALD's mutual information, >= 0, 0 with one copy), and the share of copies whose own
   most probable class is the result's (1 with one copy). */
enum { MERGE_EXTRA_MUTUAL = 0, MERGE_EXTRA_AGREEMENT = 1, MERGE_EXTRAS = 2 };

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

/* -p ln p, 0 at p = 0, in float: the extras are measures to rank images by, not probabilities
   (float logf keeps the GPU's one thread per image short; engines agree within a few ulp). */
AUG_FN float merge_surprise(float p) { return p > 0 ? -p * logf(p) : 0.0f; }

/* The extras from their parts: of_mean, the entropy of the copies' mean (the sum over classes
   of merge_surprise of each class's mean, in class order); copies_sum, the sum over the copies
   (in order) of each copy's entropy; agree, how many copies' own class is the result's. The
   fused engine computes the parts in parallel (a copy's entropy as a warp's sum) and ends
   here, as merge_extras does. */
AUG_FN void merge_extras_from(float of_mean, float copies_sum, int agree, int copies,
                              float* extras) {
  extras[MERGE_EXTRA_MUTUAL] = copies > 1 ? fmaxf(of_mean - copies_sum / copies, 0.0f) : 0.0f;
  extras[MERGE_EXTRA_AGREEMENT] = copies > 1 ? (float)agree / copies : 1.0f;
}

/* Class k's share of the entropy of the copies' mean. */
AUG_FN float merge_mean_surprise(const float* probs, int copies, int classes, int k) {
  return merge_surprise((float)merge_mean(probs, copies, classes, k));
}

/* The extras of an image whose result's class is best into extras[MERGE_EXTRAS]. */
AUG_FN void merge_extras(const float* probs, int copies, int classes, int best, float* extras) {
  float of_mean = 0, copies_sum = 0;
  int agree = 0;
  for (int k = 0; k < classes && copies > 1; k++)
    of_mean += merge_mean_surprise(probs, copies, classes, k);
  for (int c = 0; c < copies && copies > 1; c++) {
    const float* p = probs + c * classes;
    float h = 0;
    for (int k = 0; k < classes; k++) h += merge_surprise(p[k]);
    copies_sum += h;
    agree += merge_argmax(p, classes) == best;
  }
  merge_extras_from(of_mean, copies_sum, agree, copies, extras);
}

/* probs: copies x classes (copies <= MERGE_MAX_COPIES); merged: classes floats, written;
   extras: MERGE_EXTRAS floats, written. */
AUG_FN void merge_image(ttp_merge mode, const float* probs, int copies, int classes, float* merged,
                        ttp_result* result, float* extras) {
  int winners[MERGE_MAX_COPIES];
  merge_winners(mode, probs, copies, classes, winners);
  const double norm = merge_norm(mode, probs, copies, classes, winners);
  for (int k = 0; k < classes; k++)
    merged[k] = merge_class(mode, probs, copies, classes, k, winners, norm);
  merge_finish(mode, probs, copies, classes, merged, result);
  merge_extras(probs, copies, classes, result->class_index, extras);
}

#endif
