/* ttapipe eval: accuracy of a model on a labelled set (IDX, or a directory of image files with
   the labels in their names: labelled.h), per class, and the confusion matrix. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "labelled.h"
#include "metrics.h"
#include "report.h"

static const cli_option eval_options[] = {
    CLI_PIPELINE_OPTIONS,
    CLI_LABELLED_OPTIONS,
    {"json", "FILE", "also write the accuracy, the calibration metrics (NLL, Brier, ECE), copy "
                     "0's accuracy, the mistakes' AUROCs and the reliability bins as JSON"},
    {"report", "FILE", "also write an HTML report to FILE: the summary, the confusion matrix, "
                       "per-class accuracy, the mistakes and the least certain images, and "
                       "what augmentation does to a few of them"},
    {NULL, NULL, NULL},
};

typedef cli_labelled eval_data; /* labelled.h */

static void print_summary(const cli_args* a, ttp_pipeline* p, const ttp_tta* tta, const eval_data* d,
                          const ttp_result* results, double seconds) {
  const ttp_model_info* m = ttp_model(p);
  int classes = m->classes;
  size_t* confusion = calloc((size_t)classes * classes, sizeof *confusion);
  if (!confusion) {
    cli_fail("out of memory");
    return;
  }
  size_t correct = 0;
  for (size_t i = 0; i < d->count; i++) {
    int truth = d->labels[i], guess = results[i].class_index;
    confusion[(size_t)truth * classes + guess]++;
    correct += truth == guess;
  }
  printf("model     %s (%d layers, %lld parameters, %.2f MFLOP per image)\n", cli_get(a, "model"),
         m->layers, m->parameters, m->flops * 1e-6);
  char source[CLI_LABELLED_TEXT];
  cli_labelled_describe(d, source, sizeof source);
  printf("images    %s\n", source);
  char augmentation[256];
  cli_describe_tta(tta, augmentation, sizeof augmentation);
  printf("tta       %s\n", augmentation);
  printf("accuracy  %.2f%% (%zu of %zu)\n", 100.0 * correct / d->count, correct, d->count);
  printf("time      %.3f s, %.0f images/s, %.1f us per image (%d cop%s each)\n\n", seconds,
         d->count / seconds, 1e6 * seconds / d->count, tta->copies, tta->copies == 1 ? "y" : "ies");

  printf("%-6s %-16s %8s %8s %9s\n", "class", "label", "images", "correct", "accuracy");
  for (int k = 0; k < classes; k++) {
    size_t n = 0;
    for (int j = 0; j < classes; j++) n += confusion[(size_t)k * classes + j];
    size_t ok = confusion[(size_t)k * classes + k];
    printf("%-6d %-16.16s %8zu %8zu ", k, ttp_class_label(p, k), n, ok);
    if (n) printf("%8.2f%%\n", 100.0 * ok / n);
    else printf("%9s\n", "-");
  }

  printf("\nconfusion matrix (rows: true class, columns: predicted class)\n%6s", "");
  for (int j = 0; j < classes; j++) printf(" %5d", j);
  printf("\n");
  for (int k = 0; k < classes; k++) {
    printf("%6d", k);
    for (int j = 0; j < classes; j++) printf(" %5zu", confusion[(size_t)k * classes + j]);
    printf("\n");
  }
  free(confusion);
}

/* ---- the HTML report ---------------------------------------------------------------------- */

enum { REPORT_THUMBS = 24, REPORT_SCALE = 3, REPORT_INSPECT = 3 };

static const float* probs_of(const float* probs, size_t i, int classes) {
  return probs + i * (size_t)classes;
}

/* The indices of the `most` images with the largest key[i] (wrong only: the mistakes), best
   first; returns how many. */
static size_t top_images(const double* key, const int* wanted, size_t n, size_t* out,
                         size_t most) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++) {
    if (wanted && !wanted[i]) continue;
    size_t at = count < most ? count++ : most;
    if (at == most && !(key[i] > key[out[most - 1]])) continue;
    if (at == most) at = most - 1;
    while (at > 0 && key[i] > key[out[at - 1]]) out[at] = out[at - 1], at--;
    out[at] = i;
  }
  return count;
}

/* "3 0.912, 8 0.051, 5 0.020": the top three classes of a probability vector. */
static void top3(ttp_pipeline* p, const float* v, int classes, char* buf, size_t size) {
  int best[3] = {-1, -1, -1};
  for (int k = 0; k < classes; k++)
    for (int j = 0; j < 3; j++)
      if (best[j] < 0 || v[k] > v[best[j]]) {
        for (int m = 2; m > j; m--) best[m] = best[m - 1];
        best[j] = k;
        break;
      }
  size_t n = 0;
  for (int j = 0; j < 3 && best[j] >= 0 && n < size; j++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s %.3f", j ? ", " : "",
                          ttp_class_label(p, best[j]), v[best[j]]);
}

static void thumbs(report* r, ttp_pipeline* p, const eval_data* d, const ttp_result* results,
                   const float* probs, const size_t* chosen, size_t n, int show_spread) {
  const ttp_model_info* m = ttp_model(p);
  const size_t pixels = (size_t)m->input_channels * m->input_rows * m->input_cols;
  report_html(r, "<div class=\"thumbs\">\n");
  for (size_t t = 0; t < n; t++) {
    const size_t i = chosen[t];
    const int truth = d->labels[i], guess = results[i].class_index;
    char top[160], index[32];
    const char* name = cli_labelled_name(d, i, index, sizeof index);
    top3(p, probs_of(probs, i, m->classes), m->classes, top, sizeof top);
    report_html(r, "<figure class=\"thumb\">");
    report_image(r, d->pixels + i * pixels, m->input_channels, m->input_rows, m->input_cols,
                 REPORT_SCALE, name);
    report_html(r, "<figcaption>");
    report_text(r, name);
    report_html(r, ": true ");
    report_text(r, ttp_class_label(p, truth));
    report_html(r, ", <span class=\"%s\">predicted ", truth == guess ? "" : "wrong");
    report_text(r, ttp_class_label(p, guess));
    report_html(r, "</span>");
    if (show_spread) report_html(r, ", spread %.3f", results[i].spread);
    report_html(r, "<br>top 3: ");
    report_text(r, top);
    report_html(r, "</figcaption></figure>\n");
  }
  if (!n) report_html(r, "<p>None.</p>\n");
  report_html(r, "</div>\n");
}

/* One image beside its augmented copies, each with its own prediction (ttp_inspect_copies). */
static int copies_row(report* r, ttp_pipeline* p, int copies, const eval_data* d,
                      const ttp_result* results, size_t i, const char* why) {
  const ttp_model_info* m = ttp_model(p);
  const size_t pixels = (size_t)m->input_channels * m->input_rows * m->input_cols;
  const int classes = m->classes;
  uint8_t* images = malloc((size_t)copies * pixels);
  float* probs = malloc((size_t)copies * classes * sizeof *probs);
  const uint8_t* image = d->pixels + i * pixels;
  char index[32];
  const char* name = cli_labelled_name(d, i, index, sizeof index);
  int rc = images && probs ? 0 : cli_fail("out of memory");
  if (!rc && ttp_inspect_copies(p, image, images, probs) != TTP_OK)
    rc = cli_fail("%s", ttp_last_error(p));
  if (!rc) {
    report_html(r, "<p>");
    report_text(r, name);
    report_html(r, " (%s): true ", why);
    report_text(r, ttp_class_label(p, d->labels[i]));
    report_html(r, ", merged: ");
    report_text(r, ttp_class_label(p, results[i].class_index));
    report_html(r, " %.3f, spread %.3f</p>\n<div class=\"copies\">", results[i].probability,
                results[i].spread);
    for (int c = 0; c < copies; c++) {
      const float* v = probs + (size_t)c * classes;
      int best = 0;
      for (int k = 1; k < classes; k++)
        if (v[k] > v[best]) best = k;
      char alt[CLI_LABELLED_TEXT];
      snprintf(alt, sizeof alt, "copy %d of %s", c, name);
      report_html(r, "<figure class=\"thumb\" style=\"width:90px\">");
      report_image(r, images + (size_t)c * pixels, m->input_channels, m->input_rows,
                   m->input_cols, REPORT_SCALE, alt);
      report_html(r, "<figcaption>copy %d%s: ", c, c == 0 ? " (as it is)" : "");
      report_text(r, ttp_class_label(p, best));
      report_html(r, " %.3f</figcaption></figure>", v[best]);
    }
    report_html(r, "</div>\n");
  }
  free(images), free(probs);
  return rc;
}

/* The reliability diagram: each bin's accuracy against its mean confidence (the diagonal is
   a perfectly calibrated model), bars sized by the bin's share of the images. */
static void reliability(report* r, const metrics* m) {
  enum { S = 320, L = 50, T = 10 };
  report_html(r, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "font-size=\"11\" font-family=\"sans-serif\">\n<rect x=\"%d\" y=\"%d\" "
                 "width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n<line x1=\"%d\" "
                 "y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#aaa\" stroke-dasharray=\"4 3\"/>\n",
              S + L + 20, S + T + 40, L, T, S, S, L, T + S, L + S, T);
  for (int b = 0; b < METRICS_BINS; b++) {
    const double w = (double)S / METRICS_BINS, x = L + b * w;
    if (m->bins[b].count) {
      const double hgt = m->bins[b].accuracy * S;
      report_html(r, "<rect class=\"bin\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                     "fill=\"#4a7ab5\" fill-opacity=\"%.2f\"><title>confidence %.3f, accuracy "
                     "%.3f, %zu images</title></rect>\n", x + 1, T + S - hgt, w - 2, hgt,
                  0.3 + 0.7 * sqrt((double)m->bins[b].count / m->images), m->bins[b].confidence,
                  m->bins[b].accuracy, m->bins[b].count);
    }
  }
  for (int k = 0; k <= 5; k++)
    report_html(r, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.1f</text><text x=\"%d\" "
                   "y=\"%d\" text-anchor=\"end\">%.1f</text>\n", L + k * S / 5, T + S + 14,
                k / 5.0, L - 4, T + S - k * S / 5 + 4, k / 5.0);
  report_html(r, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">confidence</text><text "
                 "x=\"12\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 12 %d)\">"
                 "accuracy</text></svg>\n", L + S / 2, T + S + 32, T + S / 2, T + S / 2);
}

static int write_report(const char* path, const cli_args* a, ttp_pipeline* p,
                        const ttp_tta* tta, const eval_data* d, const ttp_result* results,
                        const float* probs, const metrics* met, double seconds) {
  const ttp_model_info* m = ttp_model(p);
  const int classes = m->classes;
  report r;
  if (report_open(&r, path, "ttapipe eval") != 0) return CLI_EXIT_FATAL;
  size_t* confusion = calloc((size_t)classes * classes, sizeof *confusion);
  double* key = malloc(d->count * sizeof *key);
  int* wrong = malloc(d->count * sizeof *wrong);
  const char** labels = malloc((size_t)classes * sizeof *labels);
  size_t chosen[REPORT_THUMBS], correct = 0;
  int rc = confusion && key && wrong && labels ? CLI_EXIT_OK : cli_fail("out of memory");
  for (size_t i = 0; rc == CLI_EXIT_OK && i < d->count; i++) {
    const int truth = d->labels[i], guess = results[i].class_index;
    confusion[(size_t)truth * classes + guess]++;
    wrong[i] = truth != guess;
    correct += !wrong[i];
  }
  for (int k = 0; rc == CLI_EXIT_OK && k < classes; k++) labels[k] = ttp_class_label(p, k);
  if (rc == CLI_EXIT_OK) {
    char augmentation[256];
    cli_describe_tta(tta, augmentation, sizeof augmentation);
    report_html(&r, "<section id=\"summary\"><h2>Summary</h2><table>\n<tr><th class=\"l\">model"
                    "</th><td class=\"l\">");
    report_text(&r, cli_get(a, "model"));
    report_html(&r, " (%d layers, %lld parameters)</td></tr>\n<tr><th class=\"l\">images</th>"
                    "<td class=\"l\">", m->layers, m->parameters);
    char source[CLI_LABELLED_TEXT];
    cli_labelled_describe(d, source, sizeof source);
    report_text(&r, source);
    report_html(&r, "</td></tr>\n<tr><th class=\"l\">augmentation</th><td class=\"l\">");
    report_text(&r, augmentation);
    report_html(&r, "</td></tr>\n<tr><th class=\"l\">engine</th><td class=\"l\">");
    report_text(&r, ttp_engine_description(p));
    report_html(&r, "</td></tr>\n<tr><th class=\"l\">accuracy</th><td class=\"l\"><b>%.2f%%</b>"
                    " (%zu of %zu)</td></tr>\n<tr><th class=\"l\">time</th><td class=\"l\">%.3f s,"
                    " %.0f images/s</td></tr>\n</table></section>\n", 100.0 * correct / d->count,
                correct, d->count, seconds, d->count / seconds);

    report_html(&r, "<section id=\"calibration\"><h2>Calibration</h2><p>NLL %.4f, Brier "
                    "%.4f, expected calibration error %.4f (%d bins). The mistakes ranked by 1 - "
                    "confidence: AUROC %.4f; by the entropy: %.4f; by the spread: %.4f; by the "
                    "mutual information: %.4f; by 1 - the copies' agreement: %.4f.</p>\n",
                met->nll, met->brier, met->ece, METRICS_BINS, met->auroc_confidence,
                met->auroc_entropy, met->auroc_spread, met->auroc_mutual,
                met->auroc_disagreement);
    reliability(&r, met);
    report_html(&r, "</section>\n");
    report_html(&r, "<section id=\"confusion\"><h2>Confusion matrix</h2><p>Rows: the true "
                    "class; columns: the predicted class; each cell shaded by its share of its "
                    "row.</p>\n");
    report_heatmap(&r, confusion, classes, labels);
    report_html(&r, "</section>\n<section id=\"classes\"><h2>Accuracy per class</h2><table>\n"
                    "<tr><th class=\"l\">class</th><th>images</th><th>correct</th>"
                    "<th>accuracy</th><th class=\"l\"></th></tr>\n");
    for (int k = 0; k < classes; k++) {
      size_t n = 0;
      for (int j = 0; j < classes; j++) n += confusion[(size_t)k * classes + j];
      const size_t ok = confusion[(size_t)k * classes + k];
      const double share = n ? (double)ok / (double)n : 0;
      report_html(&r, "<tr><td class=\"l\">%d ", k);
      report_text(&r, labels[k]);
      report_html(&r, "</td><td>%zu</td><td>%zu</td><td>%s%.2f%%</td><td class=\"l\"><span "
                      "class=\"bar\" style=\"width:%dpx\"></span></td></tr>\n", n, ok,
                  n ? "" : "- ", 100.0 * share, (int)(200 * share));
    }
    report_html(&r, "</table></section>\n");

    for (size_t i = 0; i < d->count; i++) key[i] = results[i].probability;
    const size_t mistakes = top_images(key, wrong, d->count, chosen, REPORT_THUMBS);
    report_html(&r, "<section id=\"mistakes\"><h2>The most confident mistakes</h2><p>The "
                    "%zu wrong answers given with the highest merged probability (of %zu "
                    "mistakes).</p>\n", mistakes, d->count - correct);
    thumbs(&r, p, d, results, probs, chosen, mistakes, 0);
    const size_t first_mistake = mistakes ? chosen[0] : 0;

    for (size_t i = 0; i < d->count; i++) key[i] = results[i].spread;
    const size_t unsure = top_images(key, NULL, d->count, chosen, REPORT_THUMBS);
    report_html(&r, "</section>\n<section id=\"uncertain\"><h2>The least certain images</h2>"
                    "<p>The largest spread: the standard deviation of the winning class's "
                    "probability across the augmented copies (0 without augmentation).</p>\n");
    thumbs(&r, p, d, results, probs, chosen, unsure, 1);

    report_html(&r, "</section>\n<section id=\"copies\"><h2>What augmentation does</h2><p>"
                    "Each image beside its %d copies as the network sees them, and each copy's "
                    "own prediction; the merged answer combines them.</p>\n", tta->copies);
    const size_t pick[REPORT_INSPECT] = {first_mistake, unsure ? chosen[0] : 0, 0};
    const char* const why[REPORT_INSPECT] = {mistakes ? "the most confident mistake"
                                                      : "the first image",
                                             "the least certain", "the first image"};
    for (int k = 0; k < REPORT_INSPECT && rc == CLI_EXIT_OK; k++)
      rc = copies_row(&r, p, tta->copies, d, results, pick[k], why[k]);
    report_html(&r, "</section>\n");
  }
  free(confusion), free(key), free(wrong), free(labels);
  if (report_close(&r) != 0 && rc == CLI_EXIT_OK) rc = CLI_EXIT_FATAL;
  return rc;
}

static void print_metrics(const metrics* m, const ttp_tta* tta, size_t copy0_correct) {
  printf("\ncalibration  NLL %.4f, Brier %.4f, ECE %.4f (%d bins)%s\n", m->nll, m->brier, m->ece,
         METRICS_BINS, tta->merge == TTP_MERGE_VOTE ? ", on the mean of the copies" : "");
  if (tta->copies > 1)
    printf("copy 0       %.2f%% alone (%zu of %zu), merged %.2f%%\n",
           100.0 * copy0_correct / m->images, copy0_correct, m->images, 100.0 * m->accuracy);
  printf("mistakes     AUROC of 1 - confidence %.4f, entropy %.4f, spread %.4f, mutual "
         "information %.4f, 1 - agreement %.4f\n", m->auroc_confidence, m->auroc_entropy,
         m->auroc_spread, m->auroc_mutual, m->auroc_disagreement);
}

/* --json FILE: the metrics and the reliability diagram's bins. */
static int write_json(const char* path, const metrics* m, const ttp_tta* tta, size_t copy0_correct,
                      double seconds) {
  FILE* f = fopen(path, "w");
  if (!f) return cli_fail("%s: cannot create", path);
  fprintf(f, "{\n  \"copies\": %d, \"seconds\": %.6f,\n", tta->copies, seconds);
  if (tta->copies > 1)
    fprintf(f, "  \"copy0_correct\": %zu, \"copy0_accuracy\": %.9f,\n", copy0_correct,
            (double)copy0_correct / m->images);
  metrics_json(f, m, "  ");
  fprintf(f, "\n}\n");
  return fclose(f) == 0 ? CLI_EXIT_OK : cli_fail("%s: writing failed", path);
}

static int run_eval(const cli_args* a) {
  ttp_pipeline* p = NULL;
  ttp_tta tta;
  eval_data d = {0};
  ttp_result* results = NULL;
  int rc = cli_open_pipeline(a, (cli_pipeline_defaults){.plan = TTP_PLAN_MEASURE}, &p, &tta);
  if (rc == CLI_EXIT_OK) rc = cli_load_labelled(a, ttp_model(p), &d);
  const int classes = rc == CLI_EXIT_OK ? ttp_model(p)->classes : 0;
  if (rc == CLI_EXIT_OK && !(results = malloc(d.count * sizeof *results)))
    rc = cli_fail("out of memory for %zu results", d.count);
  /* Every image's merged probabilities: the calibration metrics and the report. */
  float* probs = NULL;
  ttp_uncertainty* uncertainty = NULL;
  if (rc == CLI_EXIT_OK && (!(probs = malloc(d.count * (size_t)classes * sizeof *probs)) ||
                            !(uncertainty = malloc(d.count * sizeof *uncertainty))))
    rc = cli_fail("out of memory for %zu images' probabilities", d.count);
  const uint8_t* images = d.pixels;
  double seconds = 0;
  if (rc == CLI_EXIT_OK) {
    double start = cli_now();
    if (ttp_classify_uncertainty(p, images, d.count, results, probs, uncertainty) != TTP_OK)
      rc = cli_fail("%s", ttp_last_error(p));
    seconds = cli_now() - start;
  }
  /* Copy 0 alone, beside the merged answer: a pass with one copy (the same copy 0). */
  size_t copy0_correct = 0;
  if (rc == CLI_EXIT_OK && tta.copies > 1) {
    ttp_result* alone = malloc(d.count * sizeof *alone);
    ttp_tta one = tta;
    one.copies = 1;
    if (one.view_count > 0) one.view_count = 1; /* a list's view 0 */
    rc = alone ? cli_classify_tta(a, TTP_PLAN_MEASURE, &one, images, d.count, alone, NULL, NULL)
               : cli_fail("out of memory");
    for (size_t i = 0; rc == CLI_EXIT_OK && i < d.count; i++)
      copy0_correct += alone[i].class_index == d.labels[i];
    free(alone);
  }
  /* A vote's vector is the share of votes, 0 for a class no copy chose: its probabilities are
     the mean of the copies' (the same copies, merged by mean), its answers the vote's. */
  if (rc == CLI_EXIT_OK && tta.merge == TTP_MERGE_VOTE) {
    ttp_tta mean = tta;
    mean.merge = TTP_MERGE_MEAN;
    rc = cli_classify_tta(a, TTP_PLAN_MEASURE, &mean, images, d.count, NULL, probs, NULL);
  }
  metrics m;
  if (rc == CLI_EXIT_OK &&
      metrics_compute(probs, d.labels, results, uncertainty, d.count, classes, &m) != 0)
    rc = cli_fail("out of memory");
  if (rc == CLI_EXIT_OK) {
    print_summary(a, p, &tta, &d, results, seconds);
    print_metrics(&m, &tta, copy0_correct);
    if (cli_get(a, "json")) rc = write_json(cli_get(a, "json"), &m, &tta, copy0_correct, seconds);
    if (rc == CLI_EXIT_OK && cli_get(a, "report"))
      rc = write_report(cli_get(a, "report"), a, p, &tta, &d, results, probs, &m, seconds);
  }
  free(probs);
  free(uncertainty);
  free(results);
  cli_labelled_free(&d);
  ttp_close(p);
  return rc;
}

const cli_command cli_eval = {
    .name = "eval",
    .usage = "--model PATH (--images FILE --labels FILE | --images DIR) [options]",
    .summary = "Classify a labelled set and report accuracy, per-class accuracy and the "
               "confusion matrix.",
    .details = "A labelled set is an IDX image file with its label file, or a directory of image\n"
               "files, each labelled by the number after the last _label in its name, up to the\n"
               "extension (NNNNN_label<L>.png, as ttp_export writes them). The directory is\n"
               "listed as classify DIR lists it (sorted paths; a tar archive in it is refused),\n"
               "each file read as classify reads it (--invert, --center, --max-size: refused with\n"
               "IDX, whose images are the model's input as they are) and decoded on --threads\n"
               "threads before classifying. A name without a label, a label the model does not\n"
               "have or a file that does not decode is refused, naming the file: a file dropped\n"
               "from a labelled set would bias its metrics. --offset and --limit count files in\n"
               "that order; every name is checked, the files of the slice alone decoded.",
    .options = eval_options,
    .max_positional = 0,
    .run = run_eval,
};
