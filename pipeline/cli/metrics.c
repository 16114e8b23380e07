/* Calibration and uncertainty metrics: see metrics.h. Sums in double. */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>

typedef struct scored {
  double score;
  int wrong;
} scored;

static int by_score(const void* x, const void* y) {
  const double a = ((const scored*)x)->score, b = ((const scored*)y)->score;
  return (a > b) - (a < b);
}

/* Mann-Whitney: the share of (mistake, correct) pairs where the mistake scores higher, ties
   half; -1 without both kinds. */
static double auroc(scored* s, size_t n) {
  qsort(s, n, sizeof *s, by_score);
  double wrong = 0, right = 0, ranks = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && s[j].score == s[i].score) j++;
    const double rank = (double)(i + j + 1) / 2; /* the mean of ranks i+1 .. j */
    for (size_t k = i; k < j; k++)
      if (s[k].wrong) ranks += rank, wrong++;
      else right++;
    i = j;
  }
  if (wrong == 0 || right == 0) return -1;
  return (ranks - wrong * (wrong + 1) / 2) / (wrong * right);
}

int metrics_compute(const float* probs, const uint8_t* labels, const ttp_result* results,
                    size_t n, int classes, metrics* m) {
  *m = (metrics){.images = n};
  scored* s = malloc((n ? n : 1) * sizeof *s);
  double* entropy = malloc((n ? n : 1) * sizeof *entropy);
  if (!s || !entropy) {
    free(s), free(entropy);
    return -1;
  }
  double nll = 0, brier = 0, conf_sum[METRICS_BINS] = {0}, right_sum[METRICS_BINS] = {0};
  for (size_t i = 0; i < n; i++) {
    const float* p = probs + i * (size_t)classes;
    const int label = labels[i], wrong = results[i].class_index != label;
    double best = 0, h = 0;
    for (int k = 0; k < classes; k++) {
      const double v = p[k], d = v - (k == label);
      brier += d * d;
      if (v > best) best = v;
      if (v > 0) h -= v * log(v);
    }
    nll -= log(p[label] > 1e-12 ? (double)p[label] : 1e-12);
    entropy[i] = h;
    int b = (int)ceil(best * METRICS_BINS) - 1; /* (b/15, (b+1)/15] */
    b = b < 0 ? 0 : b >= METRICS_BINS ? METRICS_BINS - 1 : b;
    m->bins[b].count++;
    conf_sum[b] += best, right_sum[b] += !wrong;
    m->correct += !wrong;
    s[i] = (scored){1 - best, wrong};
  }
  if (n) {
    m->accuracy = (double)m->correct / (double)n;
    m->nll = nll / (double)n, m->brier = brier / (double)n;
  }
  for (int b = 0; b < METRICS_BINS; b++) {
    metrics_bin* bin = &m->bins[b];
    if (!bin->count) continue;
    bin->confidence = conf_sum[b] / (double)bin->count;
    bin->accuracy = right_sum[b] / (double)bin->count;
    m->ece += (double)bin->count / (double)n * fabs(bin->accuracy - bin->confidence);
  }
  m->auroc_confidence = auroc(s, n);
  for (size_t i = 0; i < n; i++) s[i] = (scored){entropy[i], results[i].class_index != labels[i]};
  m->auroc_entropy = auroc(s, n);
  for (size_t i = 0; i < n; i++)
    s[i] = (scored){results[i].spread, results[i].class_index != labels[i]};
  m->auroc_spread = auroc(s, n);
  free(s), free(entropy);
  return 0;
}

void metrics_json(FILE* f, const metrics* m, const char* in) {
  fprintf(f, "%s\"images\": %zu, \"correct\": %zu, \"accuracy\": %.9f,\n%s\"nll\": %.9f, "
             "\"brier\": %.9f, \"ece\": %.9f,\n%s\"auroc\": {\"one_minus_confidence\": %.9f, "
             "\"entropy\": %.9f, \"spread\": %.9f},\n%s\"bins\": [", in, m->images, m->correct,
          m->accuracy, in, m->nll, m->brier, m->ece, in, m->auroc_confidence, m->auroc_entropy,
          m->auroc_spread, in);
  for (int b = 0; b < METRICS_BINS; b++)
    fprintf(f, "%s\n%s  {\"low\": %.9f, \"high\": %.9f, \"count\": %zu, \"confidence\": %.9f, "
               "\"accuracy\": %.9f}", b ? "," : "", in, (double)b / METRICS_BINS,
            (double)(b + 1) / METRICS_BINS, m->bins[b].count, m->bins[b].confidence,
            m->bins[b].accuracy);
  fprintf(f, "\n%s]", in);
}
