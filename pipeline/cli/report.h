/* HTML reports (`eval --report FILE.html`): one self-contained file — no network, no files
   beside it: images as PNG data (Debian's stb_image_write) in data: URIs, charts as inline SVG,
   a little CSS, and one short script that marks each image with its decoded width (what a
   test reads back from a browser's DOM). Written by the command from what ttapipe.h gives; every
   string it embeds is escaped, as text or attribute, invalid UTF-8 and control bytes shown as
   U+FFFD (file names and labels are hostile input). */
#ifndef TTP_CLI_REPORT_H
#define TTP_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ttapipe.h"

typedef struct report {
  FILE* f;
  const char* path;
} report;

/* Creates path and writes the page's head with title. Returns 0, or -1 after printing why. */
int report_open(report* r, const char* path, const char* title);

/* s as HTML text (also fit for a quoted attribute). */
void report_text(report* r, const char* s);

/* printf-formatted HTML, written as it is: for the report's own markup only, never for a
   string that came from outside (those go through report_text). */
void report_html(report* r, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* An <img> of an image of channels (1 or 3, planar) x rows x cols bytes, each pixel drawn as
   scale x scale, as PNG data; alt: its text (escaped). */
void report_image(report* r, const uint8_t* pixels, int channels, int rows, int cols, int scale,
                  const char* alt);

/* A heat map of n x n counts (row-major: rows the true class, columns the predicted), each
   cell shaded by its share of its row and labelled with its count; labels: n names. */
void report_heatmap(report* r, const size_t* counts, int n, const char* const* labels);

/* PNG of w x h pixels of channels bytes each (interleaved), written through sink
   (report_png.c: stb_image_write). Returns nonzero on success. */
int report_png(void (*sink)(void* context, void* data, int size), void* context, int w, int h,
               int channels, const uint8_t* pixels);

/* classify --report (report_files.c): rows gathered from the callback, the page at the end. */
typedef struct files_report files_report;
files_report* files_report_new(int classes); /* NULL when out of memory */
void files_report_add(files_report* r, const char* path, const ttp_result* result,
                      const char* error);
/* The page at path: the run's summary (st, the engine, inputs: what was classified), files
   per class and per status, the failed files (the first 100), the 24 least certain images
   (reloaded with io). Returns CLI_EXIT_OK or CLI_EXIT_FATAL after printing why. */
int files_report_write(files_report* r, const char* path, ttp_pipeline* p,
                       const ttp_image_options* io, const ttp_bulk_stats* st, const char* inputs);
void files_report_free(files_report* r); /* accepts NULL */

/* bench --report (report_bench.c): one measured point of the sweep (cmd_bench.c). */
typedef struct bench_point {
  const char* engine;
  const char* precision;
  const char* graph;
  int batch, copies;
  double images_per_s, copies_per_s, tflops;
  double p50, p90, p99, p999;     /* ms per batch */
  double h2d, compute, d2h, host; /* ms per batch, throughput phase */
  ttp_startup startup;            /* what opening its pipeline took */
} bench_point;

/* The page at path: about (one line: build, date, mode, GPU), images/s against the batch per
   engine, precision, graph mode and copies (log axes) with the performance model's ceilings
   for flops_per_copy and input_bytes where gpu, and every point's latency percentiles. Returns
   CLI_EXIT_OK or CLI_EXIT_FATAL after printing why. */
int bench_report_write(const char* path, const char* about, double flops_per_copy,
                       size_t input_bytes, int gpu, const bench_point* points, int count);

/* Ends the page. Returns 0, or -1 after printing why (a failed write). */
int report_close(report* r);

#endif
