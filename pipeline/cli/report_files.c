/* classify --report: what a run over files gives, gathered row by row from the callback and
   written as the report's page at the end (report.h). Bounded for any number of files: counts,
   the first failures, and the least certain images (reloaded from their files for the page). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"

enum { KINDS = 16, FAILED_SHOWN = 100, THUMBS = 24, SCALE = 3 };

typedef struct unsure {
  double spread;
  char* path;
  ttp_result result;
} unsure;

struct files_report {
  int classes;
  size_t files, ok, failed;
  size_t* per_class;
  struct {
    char* kind;
    size_t count;
  } kinds[KINDS + 1]; /* the last: every other kind */
  int kind_count;
  char* failed_path[FAILED_SHOWN];
  char* failed_error[FAILED_SHOWN];
  unsure least[THUMBS];
  int least_count;
};

files_report* files_report_new(int classes) {
  files_report* r = calloc(1, sizeof *r);
  if (r && !(r->per_class = calloc((size_t)classes, sizeof *r->per_class))) {
    free(r);
    return NULL;
  }
  if (r) r->classes = classes;
  return r;
}

/* An error's message without the file's path before it (the row says whose it is). */
static const char* without_path(const char* path, const char* error) {
  const size_t n = strlen(path);
  return strncmp(error, path, n) == 0 && error[n] == ':' && error[n + 1] == ' ' ? error + n + 2
                                                                               : error;
}

/* An error's kind: its message without the path and without the details in brackets
   ("corrupt image (...)" -> "corrupt image"). */
static void kind_of(const char* path, const char* error, char* kind, size_t size) {
  snprintf(kind, size, "%s", without_path(path, error));
  char* bracket = strstr(kind, " (");
  if (bracket) *bracket = '\0';
}

void files_report_add(files_report* r, const char* path, const ttp_result* result,
                      const char* error) {
  r->files++;
  if (!result) {
    char kind[256];
    kind_of(path, error ? error : "failed", kind, sizeof kind);
    int k = 0;
    while (k < r->kind_count && strcmp(r->kinds[k].kind, kind) != 0) k++;
    if (k == r->kind_count && k < KINDS && (r->kinds[k].kind = strdup(kind))) r->kind_count++;
    r->kinds[k < r->kind_count ? k : KINDS].count++;
    if (r->failed < FAILED_SHOWN) {
      r->failed_path[r->failed] = strdup(path);
      r->failed_error[r->failed] = strdup(error ? without_path(path, error) : "failed");
    }
    r->failed++;
    return;
  }
  r->ok++;
  if (result->class_index >= 0 && result->class_index < r->classes)
    r->per_class[result->class_index]++;
  /* The least certain: the largest spreads, kept in order (the first of equal ones stays). */
  int at = r->least_count < THUMBS ? r->least_count : THUMBS;
  if (at == THUMBS && !(result->spread > r->least[THUMBS - 1].spread)) return;
  char* copy = strdup(path);
  if (!copy) return;
  if (at == THUMBS) free(r->least[--at].path);
  else r->least_count++;
  while (at > 0 && result->spread > r->least[at - 1].spread) r->least[at] = r->least[at - 1], at--;
  r->least[at] = (unsure){result->spread, copy, *result};
}

int files_report_write(files_report* r, const char* path, ttp_pipeline* p,
                       const ttp_image_options* io, const ttp_bulk_stats* st,
                       const char* inputs) {
  report h;
  if (report_open(&h, path, "ttapipe classify") != 0) return CLI_EXIT_FATAL;
  const ttp_model_info* m = ttp_model(p);
  report_html(&h, "<section id=\"summary\"><h2>Summary</h2><table>\n<tr><th class=\"l\">inputs"
                  "</th><td class=\"l\">");
  report_text(&h, inputs);
  report_html(&h, "</td></tr>\n<tr><th class=\"l\">engine</th><td class=\"l\">");
  report_text(&h, ttp_engine_description(p));
  report_html(&h, "</td></tr>\n<tr><th class=\"l\">files</th><td class=\"l\">%zu: <b>%zu "
                  "classified</b>, %zu failed</td></tr>\n<tr><th class=\"l\">time</th>"
                  "<td class=\"l\">%.2f s, %.0f files/s (%d decoding threads)</td></tr>\n"
                  "</table></section>\n", r->files, r->ok, r->failed, st->wall_seconds,
              r->files / (st->wall_seconds + 1e-9), st->threads);

  size_t most = 1;
  for (int k = 0; k < r->classes; k++)
    if (r->per_class[k] > most) most = r->per_class[k];
  report_html(&h, "<section id=\"classes\"><h2>Files per class</h2><table>\n<tr><th class=\"l\">"
                  "class</th><th>files</th><th>share</th><th class=\"l\"></th></tr>\n");
  for (int k = 0; k < r->classes; k++) {
    report_html(&h, "<tr><td class=\"l\">%d ", k);
    report_text(&h, ttp_class_label(p, k));
    report_html(&h, "</td><td>%zu</td><td>%.1f%%</td><td class=\"l\"><span class=\"bar\" "
                    "style=\"width:%dpx\"></span></td></tr>\n", r->per_class[k],
                r->ok ? 100.0 * r->per_class[k] / r->ok : 0.0,
                (int)(300.0 * r->per_class[k] / most));
  }
  report_html(&h, "</table></section>\n<section id=\"status\"><h2>Files per status</h2><table>"
                  "\n<tr><th class=\"l\">status</th><th>files</th></tr>\n<tr><td class=\"l\">ok"
                  "</td><td>%zu</td></tr>\n", r->ok);
  for (int k = 0; k <= KINDS; k++) {
    if (k == r->kind_count && k < KINDS) k = KINDS; /* the catch-all row, when used */
    if (!r->kinds[k].count) continue;
    report_html(&h, "<tr><td class=\"l\">");
    report_text(&h, k < KINDS ? r->kinds[k].kind : "other errors");
    report_html(&h, "</td><td>%zu</td></tr>\n", r->kinds[k].count);
  }
  report_html(&h, "</table></section>\n<section id=\"failed\"><h2>Failed files</h2>\n");
  if (!r->failed) report_html(&h, "<p>None.</p>\n");
  else report_html(&h, "<table>\n<tr><th class=\"l\">file</th><th class=\"l\">error</th></tr>\n");
  for (size_t i = 0; i < r->failed && i < FAILED_SHOWN; i++) {
    report_html(&h, "<tr class=\"failure\"><td class=\"l\">");
    report_text(&h, r->failed_path[i] ? r->failed_path[i] : "?");
    report_html(&h, "</td><td class=\"l\">");
    report_text(&h, r->failed_error[i] ? r->failed_error[i] : "?");
    report_html(&h, "</td></tr>\n");
  }
  if (r->failed) report_html(&h, "</table>\n");
  if (r->failed > FAILED_SHOWN)
    report_html(&h, "<p>... and %zu more (the output's rows hold them all).</p>\n",
                r->failed - FAILED_SHOWN);

  report_html(&h, "</section>\n<section id=\"uncertain\"><h2>The least certain images</h2><p>"
                  "The largest spread: the standard deviation of the winning class's "
                  "probability across the augmented copies (0 without augmentation).</p>\n"
                  "<div class=\"thumbs\">\n");
  const size_t pixels = (size_t)m->input_channels * m->input_rows * m->input_cols;
  uint8_t* image = malloc(pixels);
  for (int t = 0; t < r->least_count && image; t++) {
    const unsure* u = &r->least[t];
    char error[TTP_ERROR_SIZE];
    report_html(&h, "<figure class=\"thumb\">");
    /* As the run read it (an archive's member cannot be read again alone: its path only). */
    if (ttp_load_image(u->path, io, m->input_rows, m->input_cols, image, error, sizeof error) ==
        TTP_OK)
      report_image(&h, image, m->input_channels, m->input_rows, m->input_cols, SCALE, u->path);
    else /* a tar archive's member, or a file changed since */
      report_html(&h, "<p>(not shown: it cannot be read again by itself)</p>");
    report_html(&h, "<figcaption>");
    report_text(&h, u->path);
    report_html(&h, ": ");
    report_text(&h, ttp_class_label(p, u->result.class_index));
    report_html(&h, " %.3f, spread %.3f</figcaption></figure>\n", u->result.probability,
                u->spread);
  }
  if (!r->least_count) report_html(&h, "<p>None.</p>\n");
  report_html(&h, "</div></section>\n");
  free(image);
  return report_close(&h) == 0 ? CLI_EXIT_OK : CLI_EXIT_FATAL;
}

void files_report_free(files_report* r) {
  if (!r) return;
  for (int k = 0; k < r->kind_count; k++) free(r->kinds[k].kind);
  for (size_t i = 0; i < r->failed && i < FAILED_SHOWN; i++)
    free(r->failed_path[i]), free(r->failed_error[i]);
  for (int t = 0; t < r->least_count; t++) free(r->least[t].path);
  free(r->per_class);
  free(r);
}
