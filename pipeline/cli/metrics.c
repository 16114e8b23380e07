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
                    const ttp_uncertainty* u, size_t n, int classes, metrics* m) {
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
  m->auroc_mutual = m->auroc_disagreement = -1;
  if (u) {
    for (size_t i = 0; i < n; i++)
      s[i] = (scored){u[i].mutual_information, results[i].class_index != labels[i]};
    m->auroc_mutual = auroc(s, n);
    for (size_t i = 0; i < n; i++)
      s[i] = (scored){1 - u[i].agreement, results[i].class_index != labels[i]};
    m->auroc_disagreement = auroc(s, n);
  }
  free(s), free(entropy);
  return 0;
}

void metrics_json(FILE* f, const metrics* m, const char* in) {
  fprintf(f, "%s\"images\": %zu, \"correct\": %zu, \"accuracy\": %.9f,\n%s\"nll\": %.9f, "
             "\"brier\": %.9f, \"ece\": %.9f,\n%s\"auroc\": {\"one_minus_confidence\": %.9f, "
             "\"entropy\": %.9f, \"spread\": %.9f, \"mutual_information\": %.9f, "
             "\"one_minus_agreement\": %.9f},\n%s\"bins\": [", in, m->images, m->correct,
          m->accuracy, in, m->nll, m->brier, m->ece, in, m->auroc_confidence, m->auroc_entropy,
          m->auroc_spread, m->auroc_mutual, m->auroc_disagreement, in);
  for (int b = 0; b < METRICS_BINS; b++)
    fprintf(f, "%s\n%s  {\"low\": %.9f, \"high\": %.9f, \"count\": %zu, \"confidence\": %.9f, "
               "\"accuracy\": %.9f}", b ? "," : "", in, (double)b / METRICS_BINS,
            (double)(b + 1) / METRICS_BINS, m->bins[b].count, m->bins[b].confidence,
            m->bins[b].accuracy);
  fprintf(f, "\n%s]", in);
}

/* One image's NLL at beta = 1/T and its first two derivatives in beta (d1, d2 may be NULL):
   with a = ln q over the classes where q > 0 and w = q^beta / sum q^beta, the NLL is
   ln sum q^beta - beta a[label], its derivatives E_w[a] - a[label] and Var_w[a]. A label whose
   q is 0 costs the floor's constant. */
static double image_nll(const double* a, int label, int classes, double beta, double* d1,
                        double* d2) {
  if (a[label] == -HUGE_VAL) return -log(1e-12);
  double top = -HUGE_VAL, sum = 0, mean = 0, square = 0;
  for (int k = 0; k < classes; k++) top = fmax(top, a[k]);
  for (int k = 0; k < classes; k++) {
    if (a[k] == -HUGE_VAL) continue;
    const double w = exp(beta * (a[k] - top));
    sum += w, mean += w * a[k], square += w * a[k] * a[k];
  }
  mean /= sum;
  if (d1) *d1 += mean - a[label];
  if (d2) *d2 += square / sum - mean * mean;
  return log(sum) + beta * (top - a[label]);
}

/* The mean NLL of n images and its derivatives in beta. */
static void tempered_nll(const double* logs, const uint8_t* labels, size_t n, int classes,
                         double beta, double* f, double* d1, double* d2) {
  *f = *d1 = *d2 = 0;
  for (size_t i = 0; i < n; i++)
    *f += image_nll(logs + i * (size_t)classes, labels[i], classes, beta, d1, d2);
  *f /= (double)n, *d1 /= (double)n, *d2 /= (double)n;
}

/* The beta (0.01..100) that minimises the mean NLL of n images' logs plus a log-normal prior
   on the temperature, (ln beta)^2 / (2 sigma^2 n): with sigma = 0.5, T outside e^(+-1) must buy
   nats the prior charges (a few mistakes, all of them mild, otherwise pull T far below what the
   next images bear: on MNIST 8000..8499 the bare fit gave T = 0.12 where 2,000 images want
   0.8). The total's derivative rises with beta where it matters: keep a bracket [lo, hi] of its
   zero, step by Newton inside it, else halve it (in log beta: four decades). */
static double fit_beta(const double* logs, const uint8_t* labels, size_t n, int classes) {
  const double prior = 1 / (2 * 0.25 * (double)n);
  double lo = 0.01, hi = 100, beta = 1;
  for (int step = 0; step < 200 && lo < hi * (1 - 1e-9); step++) {
    double f, d1, d2;
    tempered_nll(logs, labels, n, classes, beta, &f, &d1, &d2);
    d1 += 2 * prior * log(beta) / beta;
    d2 += 2 * prior * (1 - log(beta)) / (beta * beta);
    if (d1 > 0) hi = beta;
    else lo = beta;
    const double next = d2 > 0 ? beta - d1 / d2 : -1;
    if (d1 == 0 || (next > lo && next < hi && fabs(next - beta) < 1e-10 * beta)) break;
    beta = next > lo && next < hi ? next : sqrt(lo * hi);
  }
  return beta;
}

int metrics_fit_temperature(const float* probs, const uint8_t* labels, size_t n, int classes,
                            float* temperature, double* nll) {
  double* logs = malloc((n ? n : 1) * (size_t)classes * sizeof *logs);
  if (!logs) return -1;
  for (size_t i = 0; i < n * (size_t)classes; i++)
    logs[i] = probs[i] > 0 ? log(probs[i]) : -HUGE_VAL;
  /* The cross-check: each half's images at the temperature fitted to the other half, against
     T = 1, image by image. */
  const size_t h = n / 2;
  const double beta_half[2] = {fit_beta(logs + h * (size_t)classes, labels + h, n - h, classes),
                               fit_beta(logs, labels, h, classes)};
  double untempered = 0, gain = 0, squares = 0;
  size_t mistakes[2] = {0, 0};
  for (size_t i = 0; i < n; i++) {
    const double* a = logs + i * (size_t)classes;
    int top = 0;
    for (int k = 1; k < classes; k++) top = a[k] > a[top] ? k : top;
    mistakes[i >= h] += top != labels[i];
    const double at_one = image_nll(a, labels[i], classes, 1, NULL, NULL);
    const double d = image_nll(a, labels[i], classes, beta_half[i >= h], NULL, NULL) - at_one;
    untempered += at_one, gain += d, squares += d * d;
  }
  untempered /= (double)n, gain /= (double)n;
  const double error = sqrt(fmax(squares / (double)n - gain * gain, 0) / (double)n);
  *temperature = 1, *nll = untempered;
  if (mistakes[0] >= METRICS_FIT_MISTAKES && mistakes[1] >= METRICS_FIT_MISTAKES &&
      gain < -2 * error) {
    *temperature = (float)(1 / fit_beta(logs, labels, n, classes));
    *nll = untempered + gain;
  }
  free(logs);
  return 0;
}

void metrics_losses(const float* probs, const uint8_t* labels, size_t n, int classes,
                    float temperature, float* losses) {
  const double beta = 1 / (double)temperature;
  for (size_t i = 0; i < n; i++) {
    const float* q = probs + i * (size_t)classes;
    double top = 0, sum = 0;
    for (int k = 0; k < classes; k++) top = fmax(top, q[k]);
    for (int k = 0; k < classes; k++)
      if (q[k] > 0) sum += exp(beta * (log(q[k]) - log(top)));
    const double p = q[labels[i]] > 0 ? exp(beta * (log(q[labels[i]]) - log(top))) / sum : 0;
    losses[i] = (float)-log(fmax(p, 1e-12));
  }
}
