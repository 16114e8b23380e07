/* bench --report: images/s against the batch size, one line per engine, precision, graph mode
   and TTA copies, on log axes, with the ceilings of DESIGN.md's performance model as lines; and
   every point's latency percentiles (report.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"

/* The performance model's H100 figures (DESIGN.md): fp32 CUDA cores, fp16 tensor cores, pinned
   host-to-device copies; TF32 tensor cores at half the fp16 rate, as the datasheet has them. */
#define CEILING_FP32_FLOPS 51e12
#define CEILING_FP16_FLOPS 740e12
#define CEILING_TF32_FLOPS (CEILING_FP16_FLOPS / 2)
#define CEILING_PCIE_BYTES 55e9

enum { W = 820, H = 460, LEFT = 70, RIGHT = 180, TOP = 20, BOTTOM = 50 };

static const char* const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

static int same_series(const bench_point* a, const bench_point* b) {
  return strcmp(a->engine, b->engine) == 0 && strcmp(a->precision, b->precision) == 0 &&
         strcmp(a->graph, b->graph) == 0 && a->copies == b->copies;
}

typedef struct axes {
  double x0, x1, y0, y1; /* log2 of the batch, log10 of images/s */
} axes;

static double px(const axes* a, int batch) {
  return LEFT + (log2((double)batch) - a->x0) / (a->x1 - a->x0) * (W - LEFT - RIGHT);
}

static double py(const axes* a, double v) {
  return TOP + (a->y1 - log10(v)) / (a->y1 - a->y0) * (H - TOP - BOTTOM);
}

int bench_report_write(const char* path, const char* about, double flops_per_copy,
                       size_t input_bytes, int gpu, const bench_point* pts, int n) {
  report h;
  if (report_open(&h, path, "ttapipe bench") != 0) return CLI_EXIT_FATAL;
  report_html(&h, "<section id=\"summary\"><h2>Summary</h2><p>");
  report_text(&h, about);
  report_html(&h, "</p></section>\n<section id=\"throughput\"><h2>Throughput against the batch"
                  "</h2>\n");
  /* The ceilings for each precision and copies measured on the GPU. */
  double ceil_v[16];
  char ceil_name[16][96];
  int ceilings = 0;
  for (int i = 0; gpu && i < n && ceilings < 15; i++) {
    if (strcmp(pts[i].engine, "cpu") == 0) continue;
    const int half = strcmp(pts[i].precision, "fp16") == 0;
    const int tf32 = strcmp(pts[i].precision, "tf32") == 0;
    char name[96];
    snprintf(name, sizeof name, "%s ceiling, N=%d",
             half ? "fp16 tensor-core" : tf32 ? "tf32 tensor-core" : "fp32 CUDA-core",
             pts[i].copies);
    int seen = 0;
    for (int c = 0; c < ceilings; c++) seen |= strcmp(ceil_name[c], name) == 0;
    if (seen) continue;
    ceil_v[ceilings] = (half ? CEILING_FP16_FLOPS : tf32 ? CEILING_TF32_FLOPS : CEILING_FP32_FLOPS) /
                       (flops_per_copy * pts[i].copies);
    snprintf(ceil_name[ceilings++], sizeof ceil_name[0], "%s", name);
  }
  if (ceilings) {
    ceil_v[ceilings] = CEILING_PCIE_BYTES / (double)input_bytes;
    snprintf(ceil_name[ceilings++], sizeof ceil_name[0], "PCIe ceiling (inputs in)");
  }
  axes a = {1e9, -1e9, 1e9, -1e9};
  for (int i = 0; i < n; i++) {
    const double x = log2((double)pts[i].batch), y = log10(pts[i].images_per_s > 0 ? pts[i].images_per_s : 1);
    if (x < a.x0) a.x0 = x;
    if (x > a.x1) a.x1 = x;
    if (y < a.y0) a.y0 = y;
    if (y > a.y1) a.y1 = y;
  }
  for (int c = 0; c < ceilings; c++)
    if (log10(ceil_v[c]) > a.y1) a.y1 = log10(ceil_v[c]);
  a.x0 = floor(a.x0), a.x1 = ceil(a.x1) > a.x0 ? ceil(a.x1) : a.x0 + 1;
  a.y0 = floor(a.y0), a.y1 = ceil(a.y1 + 0.05) > a.y0 ? ceil(a.y1 + 0.05) : a.y0 + 1;
  report_html(&h, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-size=\"11\" font-family=\"sans-serif\">\n", W, H);
  for (double y = a.y0; y <= a.y1 + 1e-9; y += 1) { /* decades */
    const double v = pow(10, y), at = py(&a, v);
    static const char* const units[] = {"", "k", "M", "G"};
    const int unit = y >= 9 ? 3 : y >= 6 ? 2 : y >= 3 ? 1 : 0;
    report_html(&h, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g%s</text>\n", LEFT,
                W - RIGHT, at, at, LEFT - 4, at + 4, v / pow(1000, unit), units[unit]);
  }
  for (double x = a.x0; x <= a.x1 + 1e-9; x += 1) { /* powers of two */
    const int batch = (int)pow(2, x);
    const double at = px(&a, batch);
    report_html(&h, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/>"
                    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", at, at, TOP,
                H - BOTTOM, at, H - BOTTOM + 14, batch);
  }
  report_html(&h, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">batch (images per call; log "
                  "scale)</text><text x=\"14\" y=\"%d\" text-anchor=\"middle\" "
                  "transform=\"rotate(-90 14 %d)\">images/s (log scale)</text>\n",
              (LEFT + W - RIGHT) / 2, H - 12, (TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2);
  for (int c = 0; c < ceilings; c++) {
    const double at = py(&a, ceil_v[c]);
    report_html(&h, "<line class=\"ceiling\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"#888\" stroke-dasharray=\"6 4\"/><text x=\"%d\" y=\"%.1f\" "
                    "fill=\"#555\">", LEFT, W - RIGHT, at, at, LEFT + 6, at - 4);
    report_text(&h, ceil_name[c]);
    report_html(&h, "</text>\n");
  }
  int series = 0;
  for (int i = 0; i < n; i++) {
    int first = 1;
    for (int j = 0; j < i && first; j++) first = !same_series(&pts[j], &pts[i]);
    if (!first) continue;
    const char* colour = colours[series % (int)(sizeof colours / sizeof *colours)];
    report_html(&h, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                    "points=\"", colour);
    for (int j = i; j < n; j++)
      if (same_series(&pts[j], &pts[i]))
        report_html(&h, "%.1f,%.1f ", px(&a, pts[j].batch), py(&a, pts[j].images_per_s));
    report_html(&h, "\"/>\n");
    for (int j = i; j < n; j++)
      if (same_series(&pts[j], &pts[i])) {
        report_html(&h, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>",
                    px(&a, pts[j].batch), py(&a, pts[j].images_per_s), colour);
        report_text(&h, pts[j].engine);
        report_html(&h, " %s batch %d: %.0f images/s</title></circle>\n", pts[j].precision,
                    pts[j].batch, pts[j].images_per_s);
      }
    const int ly = TOP + 16 * series + 10;
    report_html(&h, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" "
                    "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">", W - RIGHT + 4, W - RIGHT + 24,
                ly, ly, colour, W - RIGHT + 28, ly + 4);
    report_text(&h, pts[i].engine);
    report_html(&h, " %s%s, N=%d</text>\n", pts[i].precision,
                strcmp(pts[i].graph, "off") == 0 ? ", eager" : "", pts[i].copies);
    series++;
  }
  report_html(&h, "</svg>\n");
  if (ceilings)
    report_html(&h, "<p>Dashed: the ceilings of the performance model (DESIGN.md) on an H100 "
                    "(51 TFLOP/s fp32 on CUDA cores, 740 TFLOP/s fp16 on tensor cores, 55 GB/s "
                    "of pinned copies in), for this model's %.2f MFLOP per copy.</p>",
                flops_per_copy * 1e-6);
  report_html(&h, "</section>\n");
  report_html(&h, "<section id=\"latency\"><h2>Latency of one batch per call</h2><table>\n<tr>"
                  "<th class=\"l\">engine</th><th class=\"l\">precision</th><th class=\"l\">"
                  "graph</th><th>batch</th><th>N</th><th>images/s</th><th>p50 ms</th>"
                  "<th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th></tr>\n");
  for (int i = 0; i < n; i++) {
    report_html(&h, "<tr class=\"point\"><td class=\"l\">");
    report_text(&h, pts[i].engine);
    report_html(&h, "</td><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%d</td><td>%d</td>"
                    "<td>%.0f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td></tr>\n",
                pts[i].precision, pts[i].graph, pts[i].batch, pts[i].copies,
                pts[i].images_per_s, pts[i].p50, pts[i].p90, pts[i].p99, pts[i].p999);
  }
  report_html(&h, "</table></section>\n");
  return report_close(&h) == 0 ? CLI_EXIT_OK : CLI_EXIT_FATAL;
}
