/* ttapipe tune: searches test-time augmentation policies on one split of a labelled set (IDX or
   a directory: labelled.h) and reports the chosen one on a held-out split the search never saw.

   The split: the slice's images shuffled by --split-seed (xorshift, Fisher-Yates), the first
   part tuned on, the last --holdout of them held out. The search (greedy, in the spirit of
   Molchanov et al. 2020's greedy policy search, over ttapipe's parameters instead of a list of
   operations): start from the better of the plain model (one copy) and the arguments' policy
   (by default `--tta 5`), then sweep each parameter's values in turn, keeping a change when it
   is better by the objective (accuracy, ties by NLL; or NLL), twice over or until the budget
   (--candidates, --seconds) is spent. Copy 0 stays the image as it is. Each candidate is a
   pipeline opened with that policy (the cudnn engine choosing by its fixed rule): correct and
   deterministic for a seed, not yet fast on the GPU (a policy change re-plans). */
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
    {"split-seed", "S", "seed of the split, 0..2^64-1 (default 1)"},
    {"candidates", "N", "at most N policies tried, 1..1000 (default 40)"},
    {"seconds", "S", "stop the search after S seconds (default: no limit)"},
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
enum { SWEEP_VALUES = 4 };
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
};

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
    default: t->edge = (ttp_edge)(int)v[0];
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
  int count, budget;
  double deadline;
  int show;
} tuner;

/* The metrics of policy t on split s (a vote's calibration on the mean of its copies). fitted
   not NULL: the temperature that minimises the split's NLL is fitted to the merged vectors
   (metrics_fit_temperature) and m's NLL is the NLL at that temperature (accuracy, Brier and
   ECE stay those of t's own temperature). On the held-out split, the uncertainty measures'
   AUROCs too. */
static int evaluate(tuner* u, const ttp_tta* t, int s, metrics* m, float* fitted) {
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
  free(results), free(probs), free(measures);
  return rc;
}

/* Whether tried policy i is better than tried policy j by the objective. */
static int better(const tuner* u, int i, int j) {
  const metrics *x = &u->scores[i], *y = &u->scores[j];
  if (u->objective_nll) return x->nll < y->nll;
  return x->accuracy > y->accuracy || (x->accuracy == y->accuracy && x->nll < y->nll);
}

/* How far tried policy i's NLL on the tuning split is below policy j's (*gain, per image), in
   standard errors of the mean of the images' paired differences. With --objective nll the
   search's choice is kept over the plain model only beyond 2: where the tuning split shows it,
   not where its noise (and the search's pick of the best of many) does: on the shift
   benchmark's thick and paper sets, the bare mean chose policies whose held-out NLL was above
   the plain model's. */
static double gain_z(const tuner* u, int i, int j, double* gain) {
  const size_t n = u->n[0];
  double mean = 0, squares = 0;
  for (size_t k = 0; k < n; k++) {
    const double d = (double)u->losses[j][k] - u->losses[i][k];
    mean += d, squares += d * d;
  }
  mean /= (double)n;
  const double error = sqrt(fmax(squares / (double)n - mean * mean, 0) / (double)n);
  *gain = mean;
  return error > 0 ? mean / error : mean > 0 ? HUGE_VAL : 0;
}

/* Tries t on the tuning split unless it was tried; *index: its place among the tried, or -1
   when the budget is spent. */
static int try_policy(tuner* u, const ttp_tta* given, int* index) {
  const ttp_tta t = canonical(*given);
  for (int i = 0; i < u->count; i++)
    if (memcmp(&u->tried[i], &t, sizeof t) == 0) return *index = i, CLI_EXIT_OK;
  if (u->count >= u->budget || (u->deadline > 0 && cli_now() > u->deadline)) return *index = -1, 0;
  u->temperatures[u->count] = 1;
  const int rc = evaluate(u, &t, 0, &u->scores[u->count],
                          u->fit ? &u->temperatures[u->count] : NULL);
  if (rc != CLI_EXIT_OK) return rc;
  u->tried[u->count] = t;
  *index = u->count++;
  if (u->show)
    fprintf(stderr, "\rtune: %d of at most %d policies tried   ", u->count, u->budget);
  return CLI_EXIT_OK;
}

static void print_row(const char* name, const metrics* m) {
  const double margin = 1.96 * sqrt(m->accuracy * (1 - m->accuracy) / (double)m->images);
  printf("  %-13s %7.2f%% +- %.2f %9.4f %9.4f %9.4f\n", name, 100 * m->accuracy, 100 * margin,
         m->nll, m->brier, m->ece);
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

static int run_tune(const cli_args* a) {
  const char* output;
  static const char* const objectives[] = {"accuracy", "nll", NULL};
  int objective = 0, rc;
  long budget = 40;
  float holdout = 0.5f, seconds = 0;
  uint64_t split_seed = 1;
  if ((rc = cli_require(a, "output", &output)) ||
      (rc = cli_get_choice(a, "objective", objectives, &objective)) ||
      (rc = cli_get_long(a, "candidates", 1, 1000, &budget)) ||
      (rc = cli_get_float(a, "holdout", &holdout)) || (rc = cli_get_float(a, "seconds", &seconds)) ||
      (rc = cli_get_u64(a, "split-seed", &split_seed)))
    return rc;
  if (!(holdout >= 0.1f && holdout <= 0.9f))
    return cli_usage_error(a->command, "--holdout must be 0.1..0.9");
  ttp_pipeline* p = NULL;
  ttp_tta start;
  cli_labelled d = {0};
  rc = cli_open_pipeline(a, (cli_pipeline_defaults){.plan = TTP_PLAN_HEURISTIC}, &p, &start);
  const ttp_model_info info = rc == CLI_EXIT_OK ? *ttp_model(p) : (ttp_model_info){0};
  char engine[512] = "";
  if (rc == CLI_EXIT_OK) snprintf(engine, sizeof engine, "%s", ttp_engine_description(p));
  ttp_close(p);
  if (rc == CLI_EXIT_OK) rc = cli_load_labelled(a, &info, &d);
  if (rc == CLI_EXIT_OK && d.count < 20) rc = cli_fail("tune needs at least 20 images, not %zu", d.count);
  /* The split: a shuffle of the slice by the seed. */
  const size_t pixels = (size_t)info.input_channels * info.input_rows * info.input_cols;
  size_t* order = rc == CLI_EXIT_OK ? malloc(d.count * sizeof *order) : NULL;
  uint8_t* images = rc == CLI_EXIT_OK ? malloc(d.count * pixels) : NULL;
  uint8_t* labels = rc == CLI_EXIT_OK ? malloc(d.count) : NULL;
  if (rc == CLI_EXIT_OK && (!order || !images || !labels)) rc = cli_fail("out of memory");
  tuner* u = rc == CLI_EXIT_OK ? calloc(1, sizeof *u) : NULL;
  if (rc == CLI_EXIT_OK && !u) rc = cli_fail("out of memory");
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
    const size_t held = (size_t)(holdout * (double)d.count + 0.5);
    *u = (tuner){.a = a, .classes = info.classes, .objective_nll = objective == 1,
                 .images = {images, images + (d.count - held) * pixels},
                 .labels = {labels, labels + (d.count - held)}, .n = {d.count - held, held},
                 .budget = (int)budget, .show = isatty(2) && !cli_flag(a, "quiet"),
                 .fit = !cli_flag(a, "no-temperature")};
  }
  if (rc == CLI_EXIT_OK && (start.view_count > 0 || cli_tta_weighted(&start)))
    rc = cli_usage_error(a->command, "tune searches drawn views of equal weight; a list of views "
                         "or weights (--tta-views, --tta-weights, or a policy's) is not searched "
                         "yet");
  const double started = cli_now();
  if (u && seconds > 0) u->deadline = started + seconds;
  /* Starts: the plain model and the arguments' policy (--tta 5 when they give one copy). */
  int best = -1, index = -1;
  if (rc == CLI_EXIT_OK) {
    ttp_tta plain;
    ttp_tta_init(&plain);
    plain.seed = start.seed;
    if (start.copies < 2) start.copies = 5;
    start.keep_original = 1;
    start.temperature = 1; /* fitted to each policy, or 1 */
    rc = try_policy(u, &plain, &best);
    if (rc == CLI_EXIT_OK) rc = try_policy(u, &start, &index);
    if (rc == CLI_EXIT_OK && index >= 0 && better(u, index, best))
      best = index;
  }
  for (int round = 0; round < 2 && rc == CLI_EXIT_OK && index >= 0; round++)
    for (size_t s = 0; s < sizeof sweeps / sizeof *sweeps && index >= 0 && rc == CLI_EXIT_OK; s++)
      for (int k = 0; k < sweeps[s].count && index >= 0 && rc == CLI_EXIT_OK; k++) {
        ttp_tta t = u->tried[best];
        if (t.copies == 1 && s > 0) t.copies = 5; /* the other parameters act on copies */
        set(&t, &sweeps[s], k);
        rc = try_policy(u, &t, &index);
        if (rc == CLI_EXIT_OK && index >= 0 && better(u, index, best))
          best = index;
      }
  int kept_plain = 0; /* plain is tried first: index 0 */
  double gain = 0, z = 0;
  if (rc == CLI_EXIT_OK && best != 0) z = gain_z(u, best, 0, &gain);
  if (rc == CLI_EXIT_OK && u->objective_nll && best != 0 && !(z > 2)) best = 0, kept_plain = 1;
  const double searched = cli_now() - started;
  if (u && u->show) fprintf(stderr, "\n");
  /* Held out: the plain model, --tta 5 as it comes, the chosen, and the chosen at temperature 1
     (what the temperature alone did; when it is not 1). */
  metrics held[4];
  ttp_tta policies[4];
  ttp_tta_init(&policies[0]);
  ttp_tta_init(&policies[1]);
  policies[1].copies = 5;
  int rows = 3;
  if (rc == CLI_EXIT_OK) {
    policies[2] = policies[3] = u->tried[best];
    policies[2].temperature = u->temperatures[best];
    rows = policies[2].temperature != 1.0f ? 4 : 3;
  }
  for (int k = 0; k < rows && rc == CLI_EXIT_OK; k++)
    rc = evaluate(u, &policies[k], 1, &held[k], NULL);
  static const char* const row_names[4] = {"plain", "--tta 5", "chosen", "chosen, T = 1"};
  if (rc == CLI_EXIT_OK) {
    char text[256];
    cli_describe_tta(&policies[2], text, sizeof text);
    printf("model     %s; %s\n", cli_get(a, "model"), engine);
    printf("split     %zu images tuned on, %zu held out (seed %llu)\n", u->n[0], u->n[1],
           (unsigned long long)split_seed);
    printf("search    %d policies in %.1f s, objective %s%s\n", u->count, searched,
           objective ? "NLL" : "accuracy", u->fit ? ", a temperature fitted to each" : "");
    printf("chosen    %s\n", text);
    if (gain != 0)
      printf("          %s: its NLL on the tuning split %.4f below the plain model's, %.2f "
             "standard errors%s\n", kept_plain ? "the plain model kept over the best policy"
                                               : "the best policy kept over the plain model",
             gain, z, kept_plain ? " (not more than 2)" : "");
    printf("tuning    accuracy %.2f%%, NLL %.4f\n", 100 * u->scores[best].accuracy,
           u->scores[best].nll);
    printf("held out  %13s %19s %9s %9s %9s\n", "", "accuracy (95%)", "NLL", "Brier", "ECE");
    for (int k = 0; k < rows; k++) print_row(row_names[k], &held[k]);
    char comment[1024];
    snprintf(comment, sizeof comment, "chosen by ttapipe tune (objective %s) on %zu images of %s\n"
             "held out (%zu images): accuracy %.4f, NLL %.4f; plain %.4f, %.4f",
             objective ? "nll" : "accuracy", u->n[0], cli_get(a, "images"), u->n[1],
             held[2].accuracy, held[2].nll, held[0].accuracy, held[0].nll);
    char error[TTP_ERROR_SIZE];
    if (ttp_write_tta_policy(output, &policies[2], comment, error, sizeof error) != TTP_OK)
      rc = cli_fail("%s", error);
  }
  const char* json = cli_get(a, "json");
  if (rc == CLI_EXIT_OK && json) {
    FILE* f = fopen(json, "w");
    if (!f) {
      rc = cli_fail("%s: cannot create", json);
    } else {
      static const char* const names[4] = {"plain", "tta5", "chosen", "chosen_t1"};
      fprintf(f, "{\n  \"objective\": \"%s\", \"split_seed\": %llu, \"tune_images\": %zu, "
                 "\"heldout_images\": %zu, \"candidates\": %d, \"seconds\": %.3f,\n"
                 "  \"temperature\": %.9g, \"tuning_accuracy\": %.9f, \"tuning_nll\": %.9f,\n"
                 "  \"best_gain\": %.9f, \"best_gain_z\": %.6g, \"kept_plain\": %s,\n"
                 "  \"heldout\": {",
              objective ? "nll" : "accuracy", (unsigned long long)split_seed, u->n[0], u->n[1],
              u->count, searched, policies[2].temperature, u->scores[best].accuracy,
              u->scores[best].nll, gain, isfinite(z) ? z : 1e9, kept_plain ? "true" : "false");
      for (int k = 0; k < rows; k++) {
        fprintf(f, "%s\n    \"%s\": {\n", k ? "," : "", names[k]);
        metrics_json(f, &held[k], "      ");
        fprintf(f, "\n    }");
      }
      /* the search's trace: each policy tried, in order, with its score on the tuning split
         (cli_describe_tta's words hold no quote or backslash) */
      fprintf(f, "\n  },\n  \"tried\": [");
      for (int i = 0; i < u->count; i++) {
        char described[1024];
        cli_describe_tta(&u->tried[i], described, sizeof described);
        fprintf(f, "%s\n    {\"policy\": \"%s\", \"accuracy\": %.9f, \"nll\": %.9f, "
                   "\"temperature\": %.9g}", i ? "," : "", described, u->scores[i].accuracy,
                u->scores[i].nll, u->temperatures[i]);
      }
      fprintf(f, "\n  ]\n}\n");
      if (fclose(f) != 0) rc = cli_fail("%s: writing failed", json);
    }
  }
  const char* splits = cli_get(a, "splits");
  if (rc == CLI_EXIT_OK && splits) {
    FILE* f = fopen(splits, "w");
    if (!f) {
      rc = cli_fail("%s: cannot create", splits);
    } else {
      rc = write_splits(f, splits, &d, order, u->n);
      if (fclose(f) != 0 && rc == CLI_EXIT_OK) rc = cli_fail("%s: writing failed", splits);
    }
  }
  for (int k = 0; u && k < u->count; k++) free(u->losses[k]);
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
               "and its kind, merge, then the views: mirror, rotation, zoom, translation, edge),\n"
               "keeping what the objective prefers (NLL at a temperature fitted to each policy,\n"
               "unless --no-temperature), within --candidates\n"
               "and --seconds. The chosen policy is written for --tta-policy. Deterministic for\n"
               "a --split-seed (and the augmentation's --seed). The labelled set is read as\n"
               "eval reads it (ttapipe eval --help): IDX, or a directory of NNNNN_label<L>.png\n"
               "files, whose --splits name the files.",
    .options = tune_options,
    .max_positional = 0,
    .run = run_tune,
    .aliases = tune_aliases,
};
