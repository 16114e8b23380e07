/* The merge of an image's N softmax outputs into one result, shared word for word by the CPU
   (merge.c) and the GPU (merge_kernel.cu). Modes (ttp_merge):
     mean   the mean of the N vectors (the default);
     vote   each copy votes for its most probable class; the vector is the share of votes, and
            a tie between classes goes to the one of higher mean probability;
     max    each class's highest probability over the copies, normalised to sum to 1;
     gmean  the geometric mean of the copies' probabilities (floored at 1e-30 so that one copy's
            zero does not erase a class), normalised to sum to 1: the mean of the
            log-probabilities renormalised, which is the softmax of the copies' mean logits (the
            merge of logits, named so in the options).
   Weights (w: a weight a copy, summing to 1; NULL: equal, computed as before weights existed,
   the same bits): the mean and the geometric mean weigh each copy's term, a vote counts each
   copy's weight, max takes the copies of weight above 0; the spread and the extras weigh each
   copy so.
   The class is the merged vector's most probable (the lowest index on a tie), or the vote's
   winner; the spread is the population standard deviation of that class's probability over
   the copies (weighted). Sums are taken in double; no scratch memory is needed.
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

AUG_FN double merge_mean(const float* probs, int copies, int classes, int k, const float* w) {
  double sum = 0;
  if (w) {
    for (int c = 0; c < copies; c++) sum += (double)w[c] * probs[c * classes + k];
    return sum;
  }
  for (int c = 0; c < copies; c++) sum += probs[c * classes + k];
  return sum / copies;
}

/* Class k's value before normalisation. winners: each copy's class (vote only). */
AUG_FN double merge_value(ttp_merge mode, const float* probs, int copies, int classes, int k,
                          const int* winners, const float* w) {
  double v = 0;
  switch (mode) {
    case TTP_MERGE_VOTE:
      if (w) {
        for (int c = 0; c < copies; c++) v += winners[c] == k ? (double)w[c] : 0.0;
        return v;
      }
      for (int c = 0; c < copies; c++) v += winners[c] == k;
      return v / copies;
    case TTP_MERGE_MAX:
      v = w ? 0.0 : probs[k];
      for (int c = w ? 0 : 1; c < copies; c++)
        if (!w || w[c] > 0) v = fmax(v, (double)probs[c * classes + k]);
      return v;
    case TTP_MERGE_GMEAN:
      if (w) {
        for (int c = 0; c < copies; c++)
          v += (double)w[c] * log(fmax((double)probs[c * classes + k], 1e-30));
        return exp(v);
      }
      for (int c = 0; c < copies; c++) v += log(fmax((double)probs[c * classes + k], 1e-30));
      return exp(v / copies);
    case TTP_MERGE_MEAN:
    default:
      return merge_mean(probs, copies, classes, k, w);
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
                         const int* winners, const float* w) {
  double norm = 1;
  if (mode == TTP_MERGE_MAX || mode == TTP_MERGE_GMEAN) {
    norm = 0;
    for (int k = 0; k < classes; k++)
      norm += merge_value(mode, probs, copies, classes, k, winners, w);
  }
  return norm;
}

/* Class k of the merged vector. (The GPU's small batches give each class a thread of its own;
   the value is the same whichever computes it.) */
AUG_FN float merge_class(ttp_merge mode, const float* probs, int copies, int classes, int k,
                         const int* winners, double norm, const float* w) {
  return (float)(merge_value(mode, probs, copies, classes, k, winners, w) / norm);
}

/* After the merged vector: the class, its probability and the spread into result. */
AUG_FN void merge_finish(ttp_merge mode, const float* probs, int copies, int classes,
                         const float* merged, ttp_result* result, const float* w) {
  int best = merge_argmax(merged, classes);
  if (mode == TTP_MERGE_VOTE) /* equal shares: the higher mean probability wins */
    for (int k = 0; k < classes; k++)
      if (merged[k] == merged[best] &&
          merge_mean(probs, copies, classes, k, w) > merge_mean(probs, copies, classes, best, w))
        best = k;
  double m = merge_mean(probs, copies, classes, best, w), squares = 0;
  for (int c = 0; c < copies; c++) {
    double d = probs[c * classes + best] - m;
    squares += w ? (double)w[c] * d * d : d * d;
  }
  result->class_index = best;
  result->probability = merged[best];
  result->spread = (float)sqrt(w ? squares : squares / copies);
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

/* The same with weights: copies_mean, the weighted sum of the copies' entropies; agree_share,
   the weights of the copies whose class is the result's. */
AUG_FN void merge_extras_weighted_from(float of_mean, float copies_mean, float agree_share,
                                       int copies, float* extras) {
  extras[MERGE_EXTRA_MUTUAL] = copies > 1 ? fmaxf(of_mean - copies_mean, 0.0f) : 0.0f;
  extras[MERGE_EXTRA_AGREEMENT] = copies > 1 ? agree_share : 1.0f;
}

/* Class k's share of the entropy of the copies' mean. */
AUG_FN float merge_mean_surprise(const float* probs, int copies, int classes, int k,
                                 const float* w) {
  return merge_surprise((float)merge_mean(probs, copies, classes, k, w));
}

/* The extras of an image whose result's class is best into extras[MERGE_EXTRAS]. */
AUG_FN void merge_extras(const float* probs, int copies, int classes, int best, float* extras,
                         const float* w) {
  float of_mean = 0, copies_sum = 0, agree_share = 0;
  int agree = 0;
  for (int k = 0; k < classes && copies > 1; k++)
    of_mean += merge_mean_surprise(probs, copies, classes, k, w);
  for (int c = 0; c < copies && copies > 1; c++) {
    const float* p = probs + c * classes;
    float h = 0;
    for (int k = 0; k < classes; k++) h += merge_surprise(p[k]);
    const int agrees = merge_argmax(p, classes) == best;
    if (w) {
      copies_sum += w[c] * h, agree_share += agrees ? w[c] : 0.0f;
    } else {
      copies_sum += h, agree += agrees;
    }
  }
  if (w)
    merge_extras_weighted_from(of_mean, copies_sum, agree_share, copies, extras);
  else
    merge_extras_from(of_mean, copies_sum, agree, copies, extras);
}

/* probs: copies x classes (copies <= MERGE_MAX_COPIES); merged: classes floats, written;
   extras: MERGE_EXTRAS floats, written; w: the copies' weights, or NULL. */
AUG_FN void merge_image(ttp_merge mode, const float* probs, int copies, int classes, float* merged,
                        ttp_result* result, float* extras, const float* w) {
  int winners[MERGE_MAX_COPIES];
  merge_winners(mode, probs, copies, classes, winners);
  const double norm = merge_norm(mode, probs, copies, classes, winners, w);
  for (int k = 0; k < classes; k++)
    merged[k] = merge_class(mode, probs, copies, classes, k, winners, norm, w);
  merge_finish(mode, probs, copies, classes, merged, result, w);
  merge_extras(probs, copies, classes, result->class_index, extras, w);
}

#endif
