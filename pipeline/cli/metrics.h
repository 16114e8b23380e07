/* Calibration and uncertainty metrics of a labelled evaluation (eval: text, --json, the report):
   from each image's merged probability vector, its label and its result. Definitions (the
   README's "eval" says the same):
     NLL     mean of -ln p[label], p floored at 1e-12 (an fp16 probability may round to 0);
     Brier   mean over images of the sum over classes of (p[k] - [k == label])^2 (0..2);
     ECE     15 equal-width bins of the confidence (the highest probability; bin b holds
             (b/15, (b+1)/15], the first also 0): sum over bins of count/N x |accuracy -
             mean confidence|;
     AUROC   of a measure against "wrong": the chance that a random mistake scores higher than
             a random correct answer (ties count half; 0.5 = no better than chance); measures:
             1 - confidence, the merged vector's entropy, and the spread across the copies. */
#ifndef TTP_CLI_METRICS_H
#define TTP_CLI_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ttapipe.h"

enum { METRICS_BINS = 15 };

typedef struct metrics_bin {
  size_t count;
  double confidence, accuracy; /* their means over the bin's images (0 when empty) */
} metrics_bin;

typedef struct metrics {
  size_t images, correct;
  double accuracy, nll, brier, ece;
  metrics_bin bins[METRICS_BINS];
  double auroc_confidence, auroc_entropy, auroc_spread; /* -1 when all right or all wrong */
} metrics;

/* probs: n x classes (each image's merged vector); labels[i] its label; results[i] its result
   (class and spread). Returns 0, or -1 when out of memory. */
int metrics_compute(const float* probs, const uint8_t* labels, const ttp_result* results,
                    size_t n, int classes, metrics* out);

/* m's fields as JSON members ("images", "correct", "accuracy", "nll", "brier", "ece", "auroc",
   "bins"), each line starting with indent, without the braces around them. */
void metrics_json(FILE* f, const metrics* m, const char* indent);

#endif
