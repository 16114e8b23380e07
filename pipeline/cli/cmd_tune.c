/* ttapipe tune: searches test-time augmentation policies on one split of a labelled set (IDX or
   a directory: labelled.h) and reports the chosen one on a held-out split the search never saw.

   The split: the slice's images shuffled by --split-seed (xorshift, Fisher-Yates), the first
   part tuned on, the last --holdout of them held out. The search (greedy, in the spirit of
   Molchanov et al. 2020's greedy policy search, over ttapipe's parameters instead of a list of
   operations, and a few lists of views such as airbench's): start from the better of the plain
   model (one copy) and the arguments' policy (by default `--tta 5`), then sweep each
   parameter's values in turn (from 5 plain copies while the plain model is the best: neutral),
   keeping a change when it is better by the objective (accuracy, ties by NLL; or NLL), twice
   over or until the budget (--candidates, --seconds) is spent. Copy 0 stays the image as it is.
   Each candidate is a pipeline opened with that policy (the cudnn engine choosing by its fixed
   rule): correct and deterministic for a seed, not yet fast on the GPU (a policy change
   re-plans).

   --folds 2: the search runs twice, on each half of the shuffle, the other half held out, so
   that every image is held out once; the held-out figures are reported by fold and pooled.
   --compare POLICY scores another policy (the one in use) on the same held-out images. The
   chosen policy is compared with the plain model and with it image by image: the mean of the
   paired differences in correctness and NLL, in standard errors of that mean. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "labelled.h"
#include "metrics.h"

static const cli_option tune_options[] = {
    CLI_PIPELINE_OPTIONS,
    CLI_LABELLED_OPTIONS,
    {"output", "FILE", "write the chosen policy to FILE (required)"},
    {"objective", "NAME", "accuracy|nll: what the search maximises or minimises (default "
                          "accuracy, ties broken by NLL)"},
    {"holdout", "F", "the share of the images held out, 0.1..0.9 (default 0.5)"},
    {"folds", "N", "1|2: 2 searches twice, on each half of the images, scoring the other, so "
                   "that every image is held out once, and reports both folds and the pooled "
                   "held-out figures; the policy written is the first fold's (default 1)"},
    {"sweeps", "LIST", "the parameters the search sweeps, comma-separated, of copies, shift, "
                       "contrast, brightness, noise, noise_kind, merge, flip_h, rotate, scale, "
                       "translate, edge, views (lists of views: mirrors, airbench's shifted "
                       "mirrors, turns, zooms) (default: all, in that order)"},
    {"compare", "POLICY", "also score this policy file on the held-out images, beside the chosen "
                          "(e.g. the one in use), image by image"},
    {"split-seed", "S", "seed of the split, 0..2^64-1 (default 1)"},
    {"candidates", "N", "at most N policies tried, 1..1000 (default 40)"},
    {"seconds", "S", "stop the search after S seconds, each fold's (default: no limit)"},
    {"json", "FILE", "also write the search and the held-out metrics as JSON"},
    {"splits", "FILE", "also write the two splits: 'tune' and 'heldout' lines of the images' "
                       "indices in the IDX file, or with a directory one line a file, 'tune "
                       "PATH' or 'heldout PATH'"},
    {"no-temperature", NULL, "keep every policy's softmax temperature at 1 instead of fitting "
                             "one to each on the tuning split"},
    {"quiet", NULL, "no progress line (shown only when stderr is a terminal)"},
    {NULL, NULL, NULL},
};

static const char* const tune_aliases[] = {"-o", "output", NULL};

/* One parameter the search sweeps, and its values. */
enum { SWEEP_VALUES = 7 };
typedef struct sweep {
  const char* name;
  int count;
  double v[SWEEP_VALUES][2];
} sweep;

static const sweep sweeps[] = {
    {"copies", 4, {{1}, {3}, {5}, {8}}},
    {"shift", 4, {{0}, {1}, {2}, {3}}},
    {"contrast", 4, {{1, 1}, {0.9, 1.1}, {0.85, 1.15}, {0.75, 1.25}}},
    {"brightness", 3, {{0, 0}, {-0.05, 0.05}, {-0.1, 0.1}}},
    {"noise", 4, {{0}, {0.02}, {0.04}, {0.08}}},
    {"noise_kind", 2, {{0}, {1}}},
    {"merge", 4, {{0}, {1}, {2}, {3}}},
    /* the geometric views: a mirror suits clothes and natural images, small turns and zooms
       digits; the edge what a moved copy takes in */
    {"flip_h", 2, {{0}, {0.5}}},
    {"rotate", 4, {{0}, {5}, {10}, {15}}},
    {"scale", 3, {{1, 1}, {0.95, 1.05}, {0.9, 1.1}}},
    {"translate", 3, {{0}, {0.5}, {1}}},
    {"edge", 3, {{0}, {1}, {2}}},
    /* lists of views instead of drawn ones (view_lists below) */
    {"views", 7, {{0}, {1}, {2}, {3}, {4}, {5}, {6}}},
};

/* The views sweep's lists, each with its copies' weights (none: alike): drawn views (none); a
   mirror pair; airbench's six (the mirror by no shift and 1-pixel shifts either way, the unshifted
   pair weighing twice the others); its ten, the shifts up and down too; and the classical views
   of digits: turns of 10 degrees either way, zooms of 0.9 and 1.1, both. A list fixes the copies
   and the geometry; the edge mode (reflect in airbench) is its own sweep. */
static const struct {
  const char* views;
  float weights[10];
} view_lists[] = {
    {NULL, {0}},
    {"none; flip_h", {0}},
    {"none; flip_h; shift 1 0; flip_h shift 1 0; shift -1 0; flip_h shift -1 0",
     {2, 2, 1, 1, 1, 1}},
    {"none; flip_h; shift 1 0; flip_h shift 1 0; shift -1 0; flip_h shift -1 0; shift 0 1; "
     "flip_h shift 0 1; shift 0 -1; flip_h shift 0 -1",
     {2, 2, 1, 1, 1, 1, 1, 1, 1, 1}},
    {"none; rotate 10; rotate -10", {0}},
    {"none; scale 0.9; scale 1.1", {0}},
    {"none; rotate 10; rotate -10; scale 0.9; scale 1.1", {0}},
};

/* Whether sweep s changes what a list of views fixes (the copies and the drawn geometry). */
static int fixed_by_lists(size_t s) {
  static const char* const fixed[] = {"copies", "shift", "flip_h", "rotate", "scale", "translate"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    if (strcmp(sweeps[s].name, fixed[i]) == 0) return 1;
  return 0;
}

/* t with the views sweep's list k, its weights, the drawn geometry at its defaults (a list
   replaces it); k = 0: drawn views, 5 copies, where t has a list (else t as it is). */
static void set_views(ttp_tta* t, int k) {
  if (k == 0 && t->view_count == 0) return;
  memset(t->views, 0, sizeof t->views);
  memset(t->weights, 0, sizeof t->weights);
  t->view_count = 0;
  t->flip_h = t->flip_v = t->rotate = t->translate = 0;
  t->scale_min = t->scale_max = 1;
  t->shift = 0; /* a list does not draw shifts: equal lists compare equal whatever the base */
  if (!view_lists[k].views) {
    t->copies = 5;
    return;
  }
  char why[200];
  const ttp_status s = ttp_tta_set_views(t, view_lists[k].views, why, sizeof why);
  (void)s; /* the lists above are valid: test_tune_folds runs each */
  memcpy(t->weights, view_lists[k].weights, sizeof view_lists[k].weights);
}

static void set(ttp_tta* t, const sweep* s, int k) {
  const double* v = s->v[k];
  switch (s - sweeps) {
    case 0: t->copies = (int)v[0]; break;
    case 1: t->shift = (int)v[0]; break;
    case 2: t->contrast_min = (float)v[0], t->contrast_max = (float)v[1]; break;
    case 3: t->brightness_min = (float)v[0], t->brightness_max = (float)v[1]; break;
    case 4: t->noise = (float)v[0]; break;
    case 5: t->noise_kind = v[0] ? TTP_NOISE_GAUSSIAN : TTP_NOISE_UNIFORM; break;
    case 6: t->merge = (ttp_merge)(int)v[0]; break;
    case 7: t->flip_h = (float)v[0]; break;
    case 8: t->rotate = (float)v[0]; break;
    case 9: t->scale_min = (float)v[0], t->scale_max = (float)v[1]; break;
    case 10: t->translate = (float)v[0]; break;
    case 11: t->edge = (ttp_edge)(int)v[0]; break;
    default: set_views(t, (int)v[0]);
  }
}

/* One copy: the other fields change nothing; written as the defaults so that equal policies
   compare equal. */
static ttp_tta canonical(ttp_tta t) {
  if (t.copies > 1) return t;
  ttp_tta c;
  ttp_tta_init(&c);
  c.seed = t.seed;
  c.temperature = t.temperature;
  return c;
}

/* Where a sweep starts while the plain model is the best: 5 copies that are the image itself (no
   shift, contrast, brightness or noise, no views), so that each candidate adds one variation to
   the plain model. From ttp_tta_init's defaults instead (a shift of 2, contrast, brightness and
   noise) no single change could win where the defaults cost more than it gains: on the shipped
   Fashion-MNIST ResNet every such candidate lost to the plain model, a mirror among them
   (BENCHMARKS.md, issue 43). */
static ttp_tta neutral(ttp_tta t) {
  t.copies = 5, t.keep_original = 1, t.shift = 0;
  t.contrast_min = t.contrast_max = 1, t.brightness_min = t.brightness_max = 0, t.noise = 0;
  return t;
}

typedef struct tuner {
  const cli_args* a;
  int classes, objective_nll;
  const uint8_t* images[2]; /* tune, held-out: contiguous copies */
  const uint8_t* labels[2];
  size_t n[2];
  ttp_tta tried[1000];       /* each at temperature 1 */
  metrics scores[1000];      /* on the tuning split, the NLL at the fitted temperature */
  float temperatures[1000];  /* fitted to each (1 with --no-temperature) */
  float* losses[1000];       /* each one's NLL image by image (at its temperature) */
  int fit;                   /* fit a temperature to each policy */
  unsigned sweeps;           /* the sweeps the search runs: bit i, sweeps[i] */
  int count, budget;
  double deadline;
  int show;
} tuner;

/* What the held-out split scores: the plain model, --tta 5 as it comes, the --compare policy, the
   chosen one, and the chosen at temperature 1 (what the temperature alone did). */
enum { HELD_PLAIN, HELD_TTA5, HELD_COMPARED, HELD_CHOSEN, HELD_CHOSEN_T1, HELD_ROWS };
static const char* const held_names[HELD_ROWS] = {"plain", "--tta 5", "compared", "chosen",
                                                  "chosen, T = 1"};
static const char* const held_keys[HELD_ROWS] = {"plain", "tta5", "compared", "chosen",
                                                 "chosen_t1"};

/* The chosen policy against another on the same held-out images, image by image: the gains in
   accuracy (points) and NLL (positive: the chosen better), each in standard errors of the mean
   of the paired differences (compare). */
typedef struct comparison {
  double accuracy, accuracy_z, nll, nll_z;
  size_t images;
} comparison;

/* One fold: the search on its tuning split and the policies held out. */
typedef struct fold {
  int best, kept_plain, tried;
  double gain, z, seconds; /* the best's NLL gain over plain on the tuning split, in errors */
  metrics tuning;          /* the chosen's score on the tuning split */
  ttp_tta policies[HELD_ROWS];
  int has[HELD_ROWS];
  metrics held[HELD_ROWS];
  float* losses[HELD_ROWS];   /* held out, image by image: plain, compared, chosen */
  uint8_t* correct[HELD_ROWS];
  comparison over_plain, over_compared; /* the chosen's paired gains (compare_fold) */
} fold;

static void fold_free(fold* f) {
  for (int k = 0; k < HELD_ROWS; k++) free(f->losses[k]), free(f->correct[k]);
}

/* The metrics of policy t on split s (a vote's calibration on the mean of its copies). fitted
   not NULL: the temperature that minimises the split's NLL is fitted to the merged vectors
   (metrics_fit_temperature) and m's NLL is the NLL at that temperature (accuracy, Brier and
   ECE stay those of t's own temperature). On the held-out split, the uncertainty measures'
   AUROCs too, and where losses and correct are not NULL each image's NLL (at t's temperature)
   and whether its class is right. */
static int evaluate(tuner* u, const ttp_tta* t, int s, metrics* m, float* fitted, float* losses,
                    uint8_t* correct) {
  const size_t n = u->n[s];
  ttp_result* results = malloc(n * sizeof *results);
  float* probs = malloc(n * (size_t)u->classes * sizeof *probs);
  ttp_uncertainty* measures = s == 1 ? malloc(n * sizeof *measures) : NULL;
  int rc = results && probs && (s == 0 || measures)
               ? cli_classify_tta(u->a, TTP_PLAN_HEURISTIC, t, u->images[s], n, results, probs,
                                  measures)
               : cli_fail("out of memory");
  if (rc == CLI_EXIT_OK && t->merge == TTP_MERGE_VOTE) {
    ttp_tta mean = *t;
    mean.merge = TTP_MERGE_MEAN;
    rc = cli_classify_tta(u->a, TTP_PLAN_HEURISTIC, &mean, u->images[s], n, NULL, probs, NULL);
  }
  if (rc == CLI_EXIT_OK &&
      metrics_compute(probs, u->labels[s], results, measures, n, u->classes, m) != 0)
    rc = cli_fail("out of memory");
  if (rc == CLI_EXIT_OK && fitted &&
      metrics_fit_temperature(probs, u->labels[s], n, u->classes, fitted, &m->nll) != 0)
    rc = cli_fail("out of memory");
  if (rc == CLI_EXIT_OK && s == 0) {
    if (!(u->losses[u->count] = malloc(n * sizeof(float)))) rc = cli_fail("out of memory");
    else metrics_losses(probs, u->labels[0], n, u->classes, fitted ? *fitted : t->temperature,
                        u->losses[u->count]);
  }
  if (rc == CLI_EXIT_OK && losses) /* the pipeline applied t's temperature already */
    metrics_losses(probs, u->labels[s], n, u->classes, 1.0f, losses);
  for (size_t i = 0; rc == CLI_EXIT_OK && correct && i < n; i++)
    correct[i] = results[i].class_index == u->labels[s][i];
  free(results), free(probs), free(measures);
  return rc;
}

/* Whether tried policy i is better than tried policy j by the objective. */
static int better(const tuner* u, int i, int j) {
  const metrics *x = &u->scores[i], *y = &u->scores[j];
  if (u->objective_nll) return x->nll < y->nll;
  return x->accuracy > y->accuracy || (x->accuracy == y->accuracy && x->nll < y->nll);
}

/* The mean of n paired differences d(k) and it in standard errors of that mean (*z; +-inf where
   the differences are all alike and not 0, 0 where all are 0). */
static double paired(size_t n, double (*d)(const void*, size_t), const void* ctx, double* z) {
  double mean = 0, squares = 0;
  for (size_t k = 0; k < n; k++) {
    const double v = d(ctx, k);
    mean += v, squares += v * v;
  }
  mean /= (double)n;
  const double variance = n > 1 ? fmax(squares - (double)n * mean * mean, 0) / (double)(n - 1) : 0;
  const double error = sqrt(variance / (double)n);
  *z = error > 0 ? mean / error : mean > 0 ? HUGE_VAL : mean < 0 ? -HUGE_VAL : 0;
  return mean;
}

typedef struct loss_pair {
  const float *better, *worse; /* the NLL image by image: the gain is worse - better */
} loss_pair;

static double loss_gain(const void* ctx, size_t k) {
  const loss_pair* p = ctx;
  return (double)p->worse[k] - p->better[k];
}

/* How far tried policy i's NLL on the tuning split is below policy j's (*gain, per image), in
   standard errors of the mean of the images' paired differences. With --objective nll the
   search's choice is kept over the plain model only beyond 2: where the tuning split shows it,
   not where its noise (and the search's pick of the best of many) does: on the shift
   benchmark's thick and paper sets, the bare mean chose policies whose held-out NLL was above
   the plain model's. */
static double gain_z(const tuner* u, int i, int j, double* gain) {
  const loss_pair p = {u->losses[i], u->losses[j]};
  double z;
  *gain = paired(u->n[0], loss_gain, &p, &z);
  return z;
}

/* Tries t on the tuning split unless it was tried; *index: its place among the tried, or -1
   when the budget is spent. */
static int try_policy(tuner* u, const ttp_tta* given, int* index) {
  const ttp_tta t = canonical(*given);
  for (int i = 0; i < u->count; i++)
    if (memcmp(&u->tried[i], &t, sizeof t) == 0) return *index = i, CLI_EXIT_OK;
  if (u->count > 0 && (u->count >= u->budget || (u->deadline > 0 && cli_now() > u->deadline)))
    return *index = -1, 0; /* the first, the plain model, is always tried */
  u->temperatures[u->count] = 1;
  const int rc = evaluate(u, &t, 0, &u->scores[u->count],
                          u->fit ? &u->temperatures[u->count] : NULL, NULL, NULL);
  if (rc != CLI_EXIT_OK) return rc;
  u->tried[u->count] = t;
  *index = u->count++;
  if (u->show)
    fprintf(stderr, "\rtune: %d of at most %d policies tried   ", u->count, u->budget);
  return CLI_EXIT_OK;
}

/* The search on u's tuning split from the plain model and `start`, into f (best, gain, z,
   kept_plain, tried, seconds, tuning). */
static int search(tuner* u, ttp_tta start, double seconds, fold* f) {
  const double started = cli_now();
  u->deadline = seconds > 0 ? started + seconds : 0;
  /* Starts: the plain model and the arguments' policy (--tta 5 when they give one copy). */
  int best = -1, index = -1;
  ttp_tta plain;
  ttp_tta_init(&plain);
  plain.seed = start.seed;
  if (start.copies < 2) start.copies = 5;
  start.keep_original = 1;
  start.temperature = 1; /* fitted to each policy, or 1 */
  int rc = try_policy(u, &plain, &best);
  if (rc == CLI_EXIT_OK) rc = try_policy(u, &start, &index);
  if (rc == CLI_EXIT_OK && index >= 0 && better(u, index, best)) best = index;
  for (int round = 0; round < 2 && rc == CLI_EXIT_OK && index >= 0; round++)
    for (size_t s = 0; s < sizeof sweeps / sizeof *sweeps && index >= 0 && rc == CLI_EXIT_OK; s++)
      for (int k = 0; u->sweeps >> s & 1 && k < sweeps[s].count && index >= 0 &&
                      rc == CLI_EXIT_OK; k++) {
        ttp_tta t = u->tried[best];
        if (t.copies == 1 && s > 0) t = neutral(t); /* the other parameters act on copies */
        if (t.view_count > 0 && fixed_by_lists(s)) break; /* the list fixes them */
        set(&t, &sweeps[s], k);
        rc = try_policy(u, &t, &index);
        if (rc == CLI_EXIT_OK && index >= 0 && better(u, index, best)) best = index;
      }
  if (rc != CLI_EXIT_OK) return rc;
  f->gain = f->z = 0;
  f->kept_plain = 0; /* plain is tried first: index 0 */
  if (best != 0) f->z = gain_z(u, best, 0, &f->gain);
  if (u->objective_nll && best != 0 && !(f->z > 2)) best = 0, f->kept_plain = 1;
  f->best = best, f->tried = u->count, f->tuning = u->scores[best];
  f->seconds = cli_now() - started;
  if (u->show) fprintf(stderr, "\n");
  return CLI_EXIT_OK;
}

/* The held-out split's rows (f->policies and f->has set), each image's NLL and correctness kept
   for plain, compared and chosen. */
static int hold_out(tuner* u, fold* f) {
  int rc = CLI_EXIT_OK;
  for (int k = 0; k < HELD_ROWS && rc == CLI_EXIT_OK; k++) {
    if (!f->has[k]) continue;
    const int kept = k == HELD_PLAIN || k == HELD_COMPARED || k == HELD_CHOSEN;
    if (kept && (!(f->losses[k] = malloc(u->n[1] * sizeof(float))) ||
                 !(f->correct[k] = malloc(u->n[1]))))
      return cli_fail("out of memory");
    rc = evaluate(u, &f->policies[k], 1, &f->held[k], NULL, f->losses[k], f->correct[k]);
  }
  return rc;
}

static void print_row(const char* name, const metrics* m) {
  const double margin = 1.96 * sqrt(m->accuracy * (1 - m->accuracy) / (double)m->images);
  printf("  %-13s %7.2f%% +- %.2f %9.4f %9.4f %9.4f\n", name, 100 * m->accuracy, 100 * margin,
         m->nll, m->brier, m->ece);
}

typedef struct correct_pair {
  const uint8_t *a, *b;
} correct_pair;

static double correct_gain(const void* ctx, size_t k) {
  const correct_pair* p = ctx;
  return 100.0 * ((double)p->a[k] - p->b[k]);
}

static comparison compare(size_t n, const float* chosen_loss, const uint8_t* chosen_correct,
                          const float* other_loss, const uint8_t* other_correct) {
  comparison c = {.images = n};
  const correct_pair cp = {chosen_correct, other_correct};
  const loss_pair lp = {chosen_loss, other_loss};
  c.accuracy = paired(n, correct_gain, &cp, &c.accuracy_z);
  c.nll = paired(n, loss_gain, &lp, &c.nll_z);
  return c;
}

static void print_comparison(const char* lead, const char* other, comparison c) {
  printf("%-9s chosen over %s, image by image: accuracy %+.2f points (%+.2f standard errors), "
         "NLL %+.4f lower (%+.2f)\n", lead, other, c.accuracy, c.accuracy_z, c.nll, c.nll_z);
}

static void json_comparison(FILE* f, const char* name, comparison c, int last) {
  fprintf(f, "    \"%s\": {\"images\": %zu, \"accuracy_gain\": %.9f, \"accuracy_z\": %.6g, "
             "\"nll_gain\": %.9f, \"nll_z\": %.6g}%s\n", name, c.images, c.accuracy,
          isfinite(c.accuracy_z) ? c.accuracy_z : copysign(1e9, c.accuracy_z), c.nll,
          isfinite(c.nll_z) ? c.nll_z : copysign(1e9, c.nll_z), last ? "" : ",");
}

/* A fold's lines: the search, the chosen policy, the held-out table, the paired comparisons. */
static void print_fold(const tuner* u, const fold* f, uint64_t split_seed, int objective_nll) {
  char text[256];
  cli_describe_tta(&f->policies[HELD_CHOSEN], text, sizeof text);
  printf("split     %zu images tuned on, %zu held out (seed %llu)\n", u->n[0], u->n[1],
         (unsigned long long)split_seed);
  printf("search    %d policies in %.1f s, objective %s%s\n", f->tried, f->seconds,
         objective_nll ? "NLL" : "accuracy", u->fit ? ", a temperature fitted to each" : "");
  printf("chosen    %s\n", text);
  if (f->gain != 0)
    printf("          %s: its NLL on the tuning split %.4f below the plain model's, %.2f "
           "standard errors%s\n", f->kept_plain ? "the plain model kept over the best policy"
                                                : "the best policy kept over the plain model",
           f->gain, f->z, f->kept_plain ? " (not more than 2)" : "");
  printf("tuning    accuracy %.2f%%, NLL %.4f\n", 100 * f->tuning.accuracy, f->tuning.nll);
  printf("held out  %13s %19s %9s %9s %9s\n", "", "accuracy (95%)", "NLL", "Brier", "ECE");
  for (int k = 0; k < HELD_ROWS; k++)
    if (f->has[k]) print_row(held_names[k], &f->held[k]);
  print_comparison("paired", "plain", f->over_plain);
  if (f->has[HELD_COMPARED]) print_comparison("", "compared", f->over_compared);
}

/* The chosen's paired gains over the plain model and --compare's, on the n held-out images. */
static void compare_fold(fold* f, size_t n) {
  f->over_plain = compare(n, f->losses[HELD_CHOSEN], f->correct[HELD_CHOSEN],
                          f->losses[HELD_PLAIN], f->correct[HELD_PLAIN]);
  if (f->has[HELD_COMPARED])
    f->over_compared = compare(n, f->losses[HELD_CHOSEN], f->correct[HELD_CHOSEN],
                               f->losses[HELD_COMPARED], f->correct[HELD_COMPARED]);
}

/* A fold as a JSON object's members (the search's trace from u, which holds it still). */
static void json_fold(FILE* j, const tuner* u, const fold* f, uint64_t split_seed,
                      int objective_nll) {
  fprintf(j, "  \"objective\": \"%s\", \"split_seed\": %llu, \"tune_images\": %zu, "
             "\"heldout_images\": %zu, \"candidates\": %d, \"seconds\": %.3f,\n"
             "  \"temperature\": %.9g, \"tuning_accuracy\": %.9f, \"tuning_nll\": %.9f,\n"
             "  \"best_gain\": %.9f, \"best_gain_z\": %.6g, \"kept_plain\": %s,\n"
             "  \"heldout\": {",
          objective_nll ? "nll" : "accuracy", (unsigned long long)split_seed, u->n[0], u->n[1],
          f->tried, f->seconds, f->policies[HELD_CHOSEN].temperature, f->tuning.accuracy,
          f->tuning.nll, f->gain, isfinite(f->z) ? f->z : copysign(1e9, f->z),
          f->kept_plain ? "true" : "false");
  int first = 1;
  for (int k = 0; k < HELD_ROWS; k++) {
    if (!f->has[k]) continue;
    fprintf(j, "%s\n    \"%s\": {\n", first ? "" : ",", held_keys[k]);
    metrics_json(j, &f->held[k], "      ");
    fprintf(j, "\n    }");
    first = 0;
  }
  fprintf(j, "\n  },\n  \"paired\": {\n");
  json_comparison(j, "plain", f->over_plain, !f->has[HELD_COMPARED]);
  if (f->has[HELD_COMPARED]) json_comparison(j, "compared", f->over_compared, 1);
  /* the search's trace: each policy tried, in order, with its score on the tuning split
     (cli_describe_tta's words hold no quote or backslash) */
  fprintf(j, "  },\n  \"tried\": [");
  for (int i = 0; i < u->count; i++) {
    char described[1024];
    cli_describe_tta(&u->tried[i], described, sizeof described);
    fprintf(j, "%s\n    {\"policy\": \"%s\", \"accuracy\": %.9f, \"nll\": %.9f, "
               "\"temperature\": %.9g}", i ? "," : "", described, u->scores[i].accuracy,
            u->scores[i].nll, u->temperatures[i]);
  }
  fprintf(j, "\n  ]");
}

/* --splits: for IDX a line a split, "tune I I ..." and "heldout I I ...", I an image's index in
   the file; for a directory a line a file, "tune PATH" or "heldout PATH" (a path may hold
   spaces: `sed -n 's/^heldout //p'` gives classify --files-from its list). */
static int write_splits(FILE* f, const char* name, const cli_labelled* d, const size_t* order,
                        const size_t n[2]) {
  for (size_t i = 0; d->paths && i < d->count; i++)
    if (strchr(d->paths[i], '\n'))
      return cli_fail("%s: %s holds a line break, which a line of it cannot", name, d->paths[i]);
  for (int s = 0; s < 2; s++) {
    const size_t* part = order + (s ? n[0] : 0);
    const char* split = s ? "heldout" : "tune";
    if (!d->paths) fputs(split, f);
    for (size_t i = 0; i < n[s]; i++) {
      if (d->paths) fprintf(f, "%s %s\n", split, d->paths[part[i]]);
      else fprintf(f, " %zu", d->first + part[i]);
    }
    if (!d->paths) fputc('\n', f);
  }
  return CLI_EXIT_OK;
}

/* --sweeps LIST into *mask (bit i: sweeps[i]); a name not of the list is a usage error. */
static int parse_sweeps(const cli_args* a, unsigned* mask) {
  const char* list = cli_get(a, "sweeps");
  if (!list) return CLI_EXIT_OK;
  *mask = 0;
  for (const char* at = list; *at;) {
    const size_t len = strcspn(at, ",");
    size_t i = 0;
    while (i < sizeof sweeps / sizeof *sweeps &&
           !(strlen(sweeps[i].name) == len && strncmp(sweeps[i].name, at, len) == 0))
      i++;
    if (i == sizeof sweeps / sizeof *sweeps)
      return cli_usage_error(a->command, "--sweeps: '%.*s' is none of copies, shift, contrast, "
                             "brightness, noise, noise_kind, merge, flip_h, rotate, scale, "
                             "translate, edge, views", (int)len, at);
    *mask |= 1u << i;
    at += len + (at[len] == ',');
  }
  if (!*mask) return cli_usage_error(a->command, "--sweeps: no parameter named");
  return CLI_EXIT_OK;
}

/* The pooled rows of both folds, each image held out once: plain, compared and chosen (each
   fold's own), their accuracy and NLL, and the chosen's paired gains. */
static int print_pooled(const fold folds[2], const size_t n[2], FILE* json) {
  const size_t total = n[0] + n[1];
  float* losses[HELD_ROWS] = {0};
  uint8_t* correct[HELD_ROWS] = {0};
  int rc = CLI_EXIT_OK;
  for (int k = 0; k < HELD_ROWS && rc == CLI_EXIT_OK; k++) {
    if (!folds[0].losses[k]) continue;
    losses[k] = malloc(total * sizeof(float)), correct[k] = malloc(total);
    if (!losses[k] || !correct[k]) {
      rc = cli_fail("out of memory");
      break;
    }
    for (int f = 0; f < 2; f++) { /* fold f held out n[1 - f] images (its split's second part) */
      const size_t at = f ? n[1] : 0, count = f ? n[0] : n[1];
      memcpy(losses[k] + at, folds[f].losses[k], count * sizeof(float));
      memcpy(correct[k] + at, folds[f].correct[k], count);
    }
  }
  if (rc == CLI_EXIT_OK) {
    printf("both folds, each image held out once (%zu images), each fold's own chosen policy:\n",
           total);
    printf("          %13s %19s %9s\n", "", "accuracy (95%)", "NLL");
    if (json) fprintf(json, ",\n  \"pooled\": {\n    \"images\": %zu,\n", total);
    for (int k = 0; k < HELD_ROWS; k++) {
      if (!losses[k]) continue;
      double right = 0, nll = 0;
      for (size_t i = 0; i < total; i++) right += correct[k][i], nll += losses[k][i];
      const double accuracy = right / (double)total;
      printf("  %-13s %7.2f%% +- %.2f %9.4f\n", held_names[k], 100 * accuracy,
             196 * sqrt(accuracy * (1 - accuracy) / (double)total), nll / (double)total);
      if (json)
        fprintf(json, "    \"%s\": {\"accuracy\": %.9f, \"nll\": %.9f},\n", held_keys[k],
                accuracy, nll / (double)total);
    }
    const comparison vs_plain = compare(total, losses[HELD_CHOSEN], correct[HELD_CHOSEN],
                                        losses[HELD_PLAIN], correct[HELD_PLAIN]);
    print_comparison("paired", "plain", vs_plain);
    if (json) fprintf(json, "    \"paired\": {\n");
    if (json) json_comparison(json, "plain", vs_plain, !losses[HELD_COMPARED]);
    if (losses[HELD_COMPARED]) {
      const comparison vs = compare(total, losses[HELD_CHOSEN], correct[HELD_CHOSEN],
                                    losses[HELD_COMPARED], correct[HELD_COMPARED]);
      print_comparison("", "compared", vs);
      if (json) json_comparison(json, "compared", vs, 1);
    }
    if (json) fprintf(json, "    }\n  }");
  }
  for (int k = 0; k < HELD_ROWS; k++) free(losses[k]), free(correct[k]);
  return rc;
}

static int run_tune(const cli_args* a) {
  const char *output, *compared = cli_get(a, "compare"), *json_path = cli_get(a, "json");
  static const char* const objectives[] = {"accuracy", "nll", NULL};
  int objective = 0, rc;
  long budget = 40, folds = 1;
  float holdout = 0.5f, seconds = 0;
  uint64_t split_seed = 1;
  if ((rc = cli_require(a, "output", &output)) ||
      (rc = cli_get_choice(a, "objective", objectives, &objective)) ||
      (rc = cli_get_long(a, "candidates", 1, 1000, &budget)) ||
      (rc = cli_get_long(a, "folds", 1, 2, &folds)) ||
      (rc = cli_get_float(a, "holdout", &holdout)) || (rc = cli_get_float(a, "seconds", &seconds)) ||
      (rc = cli_get_u64(a, "split-seed", &split_seed)))
    return rc;
  if (!(holdout >= 0.1f && holdout <= 0.9f))
    return cli_usage_error(a->command, "--holdout must be 0.1..0.9");
  if (folds == 2 && cli_get(a, "holdout"))
    return cli_usage_error(a->command, "--folds 2 splits the images in halves: --holdout does "
                           "not apply");
  unsigned swept = (1u << sizeof sweeps / sizeof *sweeps) - 1;
  if ((rc = parse_sweeps(a, &swept))) return rc;
  ttp_tta compared_policy;
  char error[TTP_ERROR_SIZE];
  if (compared && ttp_read_tta_policy(compared, &compared_policy, error, sizeof error) != TTP_OK)
    return cli_fail("%s", error);
  ttp_pipeline* p = NULL;
  ttp_tta start;
  cli_labelled d = {0};
  rc = cli_open_pipeline(a, (cli_pipeline_defaults){.plan = TTP_PLAN_HEURISTIC}, &p, &start);
  const ttp_model_info info = rc == CLI_EXIT_OK ? *ttp_model(p) : (ttp_model_info){0};
  char engine[512] = "";
  if (rc == CLI_EXIT_OK) snprintf(engine, sizeof engine, "%s", ttp_engine_description(p));
  ttp_close(p);
  if (rc == CLI_EXIT_OK && (start.view_count > 0 || cli_tta_weighted(&start)))
    rc = cli_usage_error(a->command, "tune searches drawn views of equal weight; a list of views "
                         "or weights (--tta-views, --tta-weights, or a policy's) is not searched "
                         "yet");
  if (rc == CLI_EXIT_OK) rc = cli_load_labelled(a, &info, &d);
  if (rc == CLI_EXIT_OK && d.count < 20) rc = cli_fail("tune needs at least 20 images, not %zu", d.count);
  /* The split: a shuffle of the slice by the seed; fold 2 swaps its parts. */
  const size_t pixels = (size_t)info.input_channels * info.input_rows * info.input_cols;
  size_t* order = rc == CLI_EXIT_OK ? malloc(d.count * sizeof *order) : NULL;
  uint8_t* images = rc == CLI_EXIT_OK ? malloc(d.count * pixels) : NULL;
  uint8_t* labels = rc == CLI_EXIT_OK ? malloc(d.count) : NULL;
  if (rc == CLI_EXIT_OK && (!order || !images || !labels)) rc = cli_fail("out of memory");
  tuner* u = rc == CLI_EXIT_OK ? calloc(1, sizeof *u) : NULL;
  if (rc == CLI_EXIT_OK && !u) rc = cli_fail("out of memory");
  size_t n[2] = {0, 0}; /* fold 1's tuning and held-out images */
  if (rc == CLI_EXIT_OK) {
    uint64_t x = split_seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < d.count; i++) order[i] = i;
    for (size_t i = d.count - 1; i > 0; i--) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const size_t j = (size_t)(x % (i + 1));
      const size_t keep = order[i];
      order[i] = order[j], order[j] = keep;
    }
    for (size_t i = 0; i < d.count; i++) {
      memcpy(images + i * pixels, d.pixels + order[i] * pixels, pixels);
      labels[i] = d.labels[order[i]];
    }
    n[1] = folds == 2 ? d.count / 2 : (size_t)(holdout * (double)d.count + 0.5);
    n[0] = d.count - n[1];
  }
  FILE* json = NULL;
  if (rc == CLI_EXIT_OK && json_path && !(json = fopen(json_path, "w")))
    rc = cli_fail("%s: cannot create", json_path);
  if (rc == CLI_EXIT_OK) printf("model     %s; %s\n", cli_get(a, "model"), engine);
  fold f[2] = {0};
  for (int k = 0; k < folds && rc == CLI_EXIT_OK; k++) {
    const size_t first = k ? n[0] : 0, second = k ? 0 : n[0]; /* where its parts start */
    for (int i = 0; i < u->count; i++) free(u->losses[i]);
    *u = (tuner){.a = a, .classes = info.classes, .objective_nll = objective == 1,
                 .images = {images + first * pixels, images + second * pixels},
                 .labels = {labels + first, labels + second}, .n = {n[k], n[1 - k]},
                 .budget = (int)budget, .show = isatty(2) && !cli_flag(a, "quiet"),
                 .fit = !cli_flag(a, "no-temperature"), .sweeps = swept};
    rc = search(u, start, seconds, &f[k]);
    if (rc != CLI_EXIT_OK) break;
    ttp_tta* held = f[k].policies;
    ttp_tta_init(&held[HELD_PLAIN]);
    ttp_tta_init(&held[HELD_TTA5]);
    held[HELD_TTA5].copies = 5;
    held[HELD_CHOSEN] = held[HELD_CHOSEN_T1] = u->tried[f[k].best];
    held[HELD_CHOSEN].temperature = u->temperatures[f[k].best];
    if (compared) held[HELD_COMPARED] = compared_policy;
    f[k].has[HELD_PLAIN] = f[k].has[HELD_TTA5] = f[k].has[HELD_CHOSEN] = 1;
    f[k].has[HELD_COMPARED] = compared != NULL;
    f[k].has[HELD_CHOSEN_T1] = held[HELD_CHOSEN].temperature != 1.0f;
    rc = hold_out(u, &f[k]);
    if (rc != CLI_EXIT_OK) break;
    compare_fold(&f[k], u->n[1]);
    if (folds == 2) printf("fold %d of 2\n", k + 1);
    print_fold(u, &f[k], split_seed, objective == 1);
    if (json) {
      fprintf(json, k ? ",\n  \"fold2\": {\n" : "{\n");
      json_fold(json, u, &f[k], split_seed, objective == 1);
      if (k) fprintf(json, "\n  }");
    }
  }
  if (rc == CLI_EXIT_OK && folds == 2) rc = print_pooled(f, n, json);
  if (json) {
    if (rc == CLI_EXIT_OK) fprintf(json, "\n}\n");
    if (fclose(json) != 0 && rc == CLI_EXIT_OK) rc = cli_fail("%s: writing failed", json_path);
  }
  if (rc == CLI_EXIT_OK) { /* the policy the (first) fold chose */
    const fold* c = &f[0];
    char comment[1024];
    snprintf(comment, sizeof comment, "chosen by ttapipe tune (objective %s) on %zu images of %s\n"
             "held out (%zu images): accuracy %.4f, NLL %.4f; plain %.4f, %.4f",
             objective ? "nll" : "accuracy", n[0], cli_get(a, "images"), n[1],
             c->held[HELD_CHOSEN].accuracy, c->held[HELD_CHOSEN].nll,
             c->held[HELD_PLAIN].accuracy, c->held[HELD_PLAIN].nll);
    if (ttp_write_tta_policy(output, &c->policies[HELD_CHOSEN], comment, error, sizeof error) !=
        TTP_OK)
      rc = cli_fail("%s", error);
  }
  const char* splits = cli_get(a, "splits");
  if (rc == CLI_EXIT_OK && splits) {
    FILE* sf = fopen(splits, "w");
    if (!sf) {
      rc = cli_fail("%s: cannot create", splits);
    } else {
      rc = write_splits(sf, splits, &d, order, n);
      if (fclose(sf) != 0 && rc == CLI_EXIT_OK) rc = cli_fail("%s: writing failed", splits);
    }
  }
  for (int k = 0; u && k < u->count; k++) free(u->losses[k]);
  fold_free(&f[0]), fold_free(&f[1]);
  free(u), free(order), free(images), free(labels);
  cli_labelled_free(&d);
  return rc;
}
const cli_command cli_tune = {
    .name = "tune",
    .usage = "--model PATH (--images FILE --labels FILE | --images DIR) -o POLICY [options]",
    .summary = "Search test-time augmentation policies on a split of a labelled set; report the "
               "chosen one on the held-out rest.",
    .details = "The search tries the plain model and the options' policy (--tta 5 by default),\n"
               "then each parameter's values in turn (copies, shift, contrast, brightness, noise\n"
               "and its kind, merge, then the views: mirror, rotation, zoom, translation, edge;\n"
               "--sweeps names fewer), keeping what the objective prefers (NLL at a temperature\n"
               "fitted to each policy, unless --no-temperature), within --candidates and\n"
               "--seconds. The chosen policy is written for --tta-policy. Deterministic for\n"
               "a --split-seed (and the augmentation's --seed). The held-out lines compare the\n"
               "chosen policy with the plain model (and --compare's) image by image: the gains\n"
               "in accuracy and NLL, in standard errors of the paired differences. --folds 2\n"
               "holds each image out once and pools the two folds. The labelled set is read as\n"
               "eval reads it (ttapipe eval --help): IDX, or a directory of NNNNN_label<L>.png\n"
               "files, whose --splits name the files.",
    .options = tune_options,
    .max_positional = 0,
    .run = run_tune,
    .aliases = tune_aliases,
};
