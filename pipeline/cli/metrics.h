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
             1 - confidence, the merged vector's entropy, the spread across the copies, and
             (with ttp_classify_uncertainty's measures) the mutual information between the
             copies and the class, and 1 - the copies' agreement with the answer. */
#ifndef TTP_CLI_METRICS_H
#define TTP_CLI_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ttapipe.h"

enum { METRICS_BINS = 15, METRICS_FIT_MISTAKES = 10 };

typedef struct metrics_bin {
  size_t count;
  double confidence, accuracy; /* their means over the bin's images (0 when empty) */
} metrics_bin;

typedef struct metrics {
  size_t images, correct;
  double accuracy, nll, brier, ece;
  metrics_bin bins[METRICS_BINS];
  double auroc_confidence, auroc_entropy, auroc_spread; /* -1 when all right or all wrong */
  double auroc_mutual, auroc_disagreement;             /* -1 also without the measures */
} metrics;

/* probs: n x classes (each image's merged vector); labels[i] its label; results[i] its result
   (class and spread); uncertainty: NULL, or each image's measures. Returns 0, or -1 when out of
   memory. */
int metrics_compute(const float* probs, const uint8_t* labels, const ttp_result* results,
                    const ttp_uncertainty* uncertainty, size_t n, int classes, metrics* out);

/* The temperature T (0.01..100) for n images' merged vectors, as tune fits it: the T that
   minimises the NLL of the tempered vectors q^(1/T) / sum q^(1/T) (ttp_tta.temperature: zeros
   stay zero; the NLL is convex in 1/T, a log-sum-exp of lines less a line) under a log-normal
   prior on T (sigma 0.5 in ln T, weighed against the n images' NLL). It is kept only where
   each half of the images holds METRICS_FIT_MISTAKES mistakes or more (a fit's information is
   in the mistakes: with fewer, sharpening looks free on the images at hand and the confident
   mistakes of the next ones are unseen), and where each half at the temperature fitted to the
   other half has a lower NLL than at T = 1 by more than twice the standard error of the mean
   of the images' differences. *nll: that cross-checked NLL, or the NLL at T = 1 when
   *temperature is 1. Returns -1 when out of memory, else 0. */
int metrics_fit_temperature(const float* probs, const uint8_t* labels, size_t n, int classes,
                            float* temperature, double* nll);

/* Each image's NLL at temperature T into losses[n] (as metrics_compute's NLL: the label's
   tempered probability floored at 1e-12). */
void metrics_losses(const float* probs, const uint8_t* labels, size_t n, int classes,
                    float temperature, float* losses);

/* m's fields as JSON members ("images", "correct", "accuracy", "nll", "brier", "ece", "auroc",
   "bins"), each line starting with indent, without the braces around them. */
void metrics_json(FILE* f, const metrics* m, const char* indent);

#endif
