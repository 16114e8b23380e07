/* The merge of N softmax outputs on the CPU (definitions in merge_core.h). */
#include "merge.h"

#include <math.h>

#include "merge_core.h"

void aug_merge(ttp_merge mode, const float* probs, int copies, int classes, float* merged,
               ttp_result* result, float* extras, const float* weights) {
  float unused[MERGE_EXTRAS];
  merge_image(mode, probs, copies, classes, merged, result, extras ? extras : unused, weights);
}

void aug_temper(float temperature, int classes, size_t count, ttp_result* results, float* merged) {
  if (temperature == 1.0f) return;
  const double beta = 1.0 / temperature;
  for (size_t i = 0; i < count; i++) {
    float* q = merged + i * (size_t)classes;
    /* q^beta as exp(beta log q - beta log max q): no overflow or underflow of the largest. */
    const double top = beta * log(q[merge_argmax(q, classes)]);
    double sum = 0;
    for (int k = 0; k < classes; k++)
      sum += q[k] = q[k] > 0 ? (float)exp(beta * log(q[k]) - top) : 0.0f;
    for (int k = 0; k < classes; k++) q[k] = (float)(q[k] / sum);
    results[i].probability = q[results[i].class_index];
  }
}
