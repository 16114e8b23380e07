/* HTML reports: see report.h. */
#include "report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right}"
    "td.l,th.l{text-align:left}tr:nth-child(even){background:#f4f4f4}"
    ".thumbs{display:flex;flex-wrap:wrap;gap:10px}"
    ".thumb{margin:0;width:150px;font-size:12px}.thumb img{display:block;image-rendering:pixelated;"
    "border:1px solid #999}.bar{background:#4a7ab5;height:10px;display:inline-block}"
    ".copies{display:flex;gap:8px;align-items:flex-start;margin-bottom:14px}"
    ".wrong{color:#b00}";

int report_open(report* r, const char* path, const char* title) {
  r->path = path;
  if (!(r->f = fopen(path, "w"))) {
    cli_fail("%s: cannot create: %s", path, strerror(errno));
    return -1;
  }
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", r->f);
  report_text(r, title);
  fprintf(r->f, "</title>\n<style>%s</style></head>\n<body>\n<h1>", style);
  report_text(r, title);
  fputs("</h1>\n", r->f);
  return 0;
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0 (invalid: a stray continuation,
   a sequence cut short, an overlong form, a surrogate, past U+10FFFF). */
static int utf8_length(const unsigned char* s) {
  const unsigned c = s[0];
  int n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
        : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))) return 0;
  if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))) return 0;
  return n;
}

void report_text(report* r, const char* text) {
  const unsigned char* s = (const unsigned char*)text;
  while (*s) {
    const int n = utf8_length(s);
    if (n == 0 || (*s < 0x20 && *s != '\t' && *s != '\n') || *s == 0x7f) {
      fputs("&#xFFFD;", r->f); /* shown, never taken for markup or for another character */
      s++;
      continue;
    }
    switch (*s) {
    case '&': fputs("&amp;", r->f); break;
    case '<': fputs("&lt;", r->f); break;
    case '>': fputs("&gt;", r->f); break;
    case '"': fputs("&quot;", r->f); break;
    case '\'': fputs("&#39;", r->f); break;
    default: fwrite(s, 1, (size_t)n, r->f);
    }
    s += n;
  }
}

void report_html(report* r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(r->f, fmt, ap);
  va_end(ap);
}

/* stb_image_write's output, base64 straight into the page. */
typedef struct b64 {
  FILE* f;
  unsigned char held[3];
  int n;
} b64;

static void b64_flush(b64* b) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (!b->n) return;
  const unsigned v = (unsigned)b->held[0] << 16 | (unsigned)(b->n > 1 ? b->held[1] : 0) << 8 |
                     (b->n > 2 ? b->held[2] : 0);
  char out[4] = {digits[v >> 18 & 63], digits[v >> 12 & 63], b->n > 1 ? digits[v >> 6 & 63] : '=',
                 b->n > 2 ? digits[v & 63] : '='};
  fwrite(out, 1, 4, b->f);
  b->n = 0;
}

static void b64_write(void* context, void* data, int size) {
  b64* b = context;
  const unsigned char* p = data;
  for (int i = 0; i < size; i++) {
    b->held[b->n++] = p[i];
    if (b->n == 3) b64_flush(b);
  }
}

void report_image(report* r, const uint8_t* pixels, int channels, int rows, int cols, int scale,
                  const char* alt) {
  const int w = cols * scale, h = rows * scale;
  uint8_t* rgb = malloc((size_t)w * h * (size_t)channels);
  if (!rgb) return;
  const size_t plane = (size_t)rows * cols;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < channels; c++) /* planar in, interleaved out */
        rgb[((size_t)y * w + x) * channels + c] =
            pixels[c * plane + (size_t)(y / scale) * cols + x / scale];
  fprintf(r->f, "<img width=\"%d\" height=\"%d\" alt=\"", w, h);
  report_text(r, alt);
  fputs("\" src=\"data:image/png;base64,", r->f);
  b64 b = {r->f, {0}, 0};
  report_png(b64_write, &b, w, h, channels, rgb);
  b64_flush(&b);
  fputs("\">", r->f);
  free(rgb);
}

void report_heatmap(report* r, const size_t* counts, int n, const char* const* labels) {
  const int cell = n <= 12 ? 44 : n <= 24 ? 28 : 16, margin = 90;
  const int size = margin + n * cell + 10;
  fprintf(r->f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "font-size=\"11\" font-family=\"sans-serif\">\n", size, size);
  fprintf(r->f, "<text x=\"%d\" y=\"12\" text-anchor=\"middle\">predicted class</text>\n",
          margin + n * cell / 2);
  fprintf(r->f, "<text x=\"12\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 12 %d)\">"
                "true class</text>\n", margin + n * cell / 2, margin + n * cell / 2);
  for (int k = 0; k < n; k++) {
    fprintf(r->f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", margin + k * cell + cell / 2,
            margin - 6);
    report_text(r, labels[k]);
    fprintf(r->f, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", margin - 6,
            margin + k * cell + cell / 2 + 4);
    report_text(r, labels[k]);
    fputs("</text>\n", r->f);
  }
  for (int t = 0; t < n; t++) {
    size_t row = 0;
    for (int p = 0; p < n; p++) row += counts[(size_t)t * n + p];
    for (int p = 0; p < n; p++) {
      const size_t c = counts[(size_t)t * n + p];
      const double share = row ? (double)c / (double)row : 0;
      /* White to blue by the share of the row; the diagonal's share is its class's recall. */
      const int shade = (int)(255 - 200 * share);
      fprintf(r->f, "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                    "fill=\"rgb(%d,%d,255)\" stroke=\"#ddd\"><title>true %d, predicted %d: %zu"
                    "</title></rect>", margin + p * cell, margin + t * cell, cell, cell, shade,
              shade, t, p, c);
      if (c && cell >= 28)
        fprintf(r->f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\">%zu</text>",
                margin + p * cell + cell / 2, margin + t * cell + cell / 2 + 4,
                share > 0.6 ? "#fff" : "#000", c);
      fputc('\n', r->f);
    }
  }
  fputs("</svg>\n", r->f);
}

int report_close(report* r) {
  /* Each image marked with its decoded width once it is decoded: what a test reads back. */
  fputs("<script>for(const i of document.images){const m=()=>i.setAttribute('data-decoded',"
        "i.naturalWidth);if(i.complete)m();else i.addEventListener('load',m);}</script>\n"
        "</body></html>\n", r->f);
  const int failed = fflush(r->f) != 0 || ferror(r->f);
  const int closed = fclose(r->f);
  r->f = NULL;
  if (failed || closed != 0) {
    cli_fail("%s: writing failed", r->path);
    return -1;
  }
  return 0;
}
