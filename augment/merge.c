/* The merge of N softmax outputs: see merge.h for each mode's definition. */
#include "merge.h"

#include <math.h>

static int argmax(const float* v, int n) {
  int best = 0;
  for (int k = 1; k < n; k++)
    if (v[k] > v[best]) best = k;
  return best;
}

/* mean[k] over the copies. */
static void mean_of(const float* probs, int copies, int classes, double* mean) {
  for (int k = 0; k < classes; k++) {
    double sum = 0;
    for (int c = 0; c < copies; c++) sum += probs[(size_t)c * classes + k];
    mean[k] = sum / copies;
  }
}

static void normalise(const double* v, int classes, float* merged) {
  double sum = 0;
  for (int k = 0; k < classes; k++) sum += v[k];
  for (int k = 0; k < classes; k++) merged[k] = (float)(v[k] / sum);
}

void aug_merge(ttp_merge mode, const float* probs, int copies, int classes, double* scratch,
               float* merged, ttp_result* result) {
  double* a = scratch;           /* the mode's vector */
  double* mean = scratch + classes;
  int best;
  switch (mode) {
    case TTP_MERGE_VOTE:
      mean_of(probs, copies, classes, mean);
      for (int k = 0; k < classes; k++) a[k] = 0;
      for (int c = 0; c < copies; c++) a[argmax(probs + (size_t)c * classes, classes)] += 1;
      best = 0;
      for (int k = 1; k < classes; k++)
        if (a[k] > a[best] || (a[k] == a[best] && mean[k] > mean[best])) best = k;
      for (int k = 0; k < classes; k++) merged[k] = (float)(a[k] / copies);
      break;
    case TTP_MERGE_MAX:
      for (int k = 0; k < classes; k++) {
        a[k] = probs[k];
        for (int c = 1; c < copies; c++) a[k] = fmax(a[k], probs[(size_t)c * classes + k]);
      }
      normalise(a, classes, merged);
      best = argmax(merged, classes);
      break;
    case TTP_MERGE_GMEAN:
      for (int k = 0; k < classes; k++) {
        double logs = 0;
        for (int c = 0; c < copies; c++) logs += log(fmax(probs[(size_t)c * classes + k], 1e-30));
        a[k] = exp(logs / copies);
      }
      normalise(a, classes, merged);
      best = argmax(merged, classes);
      break;
    case TTP_MERGE_MEAN:
    default:
      mean_of(probs, copies, classes, a);
      for (int k = 0; k < classes; k++) merged[k] = (float)a[k];
      best = argmax(merged, classes);
      break;
  }
  double sum = 0, squares = 0;
  for (int c = 0; c < copies; c++) sum += probs[(size_t)c * classes + best];
  double m = sum / copies;
  for (int c = 0; c < copies; c++) {
    double d = probs[(size_t)c * classes + best] - m;
    squares += d * d;
  }
  *result = (ttp_result){best, merged[best], (float)sqrt(squares / copies)};
}
