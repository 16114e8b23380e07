/* Box averages of a large image as it is decoded: see shrink.h. */
#include "shrink.h"

#include <stdlib.h>
#include <string.h>

static int has_alpha(int channels) { return channels == 2 || channels == 4; }

static size_t cells_of(int width, int height, int factor) {
  return (size_t)((width + factor - 1) / factor) * (size_t)((height + factor - 1) / factor);
}

size_t io_shrink_bytes(int width, int height, int channels, int factor, int opaque_if_clear,
                       int sparse) {
  const size_t cells = cells_of(width, height, factor);
  size_t n = cells * (size_t)channels * (sizeof(uint32_t) + 1); /* sums, and the raster */
  if (has_alpha(channels) && opaque_if_clear) n += cells * (size_t)(channels - 1) * sizeof(uint32_t);
  if (sparse) n += cells * sizeof(uint32_t);
  return n;
}

void io_shrink_free(io_shrink* s) {
  free(s->sums);
  free(s->plain);
  free(s->count);
  s->sums = s->plain = s->count = NULL;
}

ttp_status io_shrink_open(io_shrink* s, int width, int height, int channels, int factor,
                          int opaque_if_clear, int sparse, ttp_err* e) {
  *s = (io_shrink){width, height, channels, factor, (width + factor - 1) / factor,
                   (height + factor - 1) / factor, NULL, NULL, NULL, 0};
  if (factor < 1 || factor > IO_SHRINK_MAX_FACTOR || channels < 1 || channels > 4)
    return ERR(e, TTP_ERR_INTERNAL, "io_shrink_open: factor %d, %d channels", factor, channels);
  const size_t cells = cells_of(width, height, factor);
  s->sums = calloc(cells * (size_t)channels, sizeof *s->sums);
  if (has_alpha(channels) && opaque_if_clear)
    s->plain = calloc(cells * (size_t)(channels - 1), sizeof *s->plain);
  if (sparse) s->count = calloc(cells, sizeof *s->count);
  if (!s->sums || (has_alpha(channels) && opaque_if_clear && !s->plain) || (sparse && !s->count)) {
    io_shrink_free(s);
    return ERR_NOMEM(e, io_shrink_bytes(width, height, channels, factor, opaque_if_clear, sparse));
  }
  return TTP_OK;
}

void io_shrink_row(io_shrink* s, int y, int x0, int dx, const uint8_t* px, int n) {
  const int c = s->channels, f = s->factor;
  const size_t row = (size_t)(y / f) * (size_t)s->out_w;
  int x = x0, cx = x0 / f, edge = (cx + 1) * f; /* the box column of x, and where it ends */
  for (int i = 0; i < n; i++, px += c, x += dx) {
    while (x >= edge) cx++, edge += f;
    const size_t cell = row + (size_t)cx;
    uint32_t* sum = s->sums + cell * (size_t)c;
    if (!has_alpha(c)) {
      for (int k = 0; k < c; k++) sum[k] += px[k];
    } else {
      const uint32_t a = px[c - 1];
      for (int k = 0; k < c - 1; k++) sum[k] += px[k] * a;
      sum[c - 1] += a;
      s->alpha_seen |= a != 0;
      if (s->plain)
        for (int k = 0; k < c - 1; k++) s->plain[cell * (size_t)(c - 1) + (size_t)k] += px[k];
    }
    if (s->count) s->count[cell]++;
  }
}

/* sum / n, rounded to the nearest. */
static uint8_t mean(uint64_t sum, uint64_t n) { return (uint8_t)((2 * sum + n) / (2 * n)); }

ttp_status io_shrink_finish(io_shrink* s, const uint8_t* background, io_raster* out,
                            ttp_err* e) {
  const int c = s->channels, f = s->factor;
  const size_t n = (size_t)s->out_w * s->out_h * (size_t)c;
  uint8_t* data = malloc(n);
  if (!data) {
    io_shrink_free(s);
    return ERR_NOMEM(e, n);
  }
  const int opaque = has_alpha(c) && s->plain && !s->alpha_seen;
  for (int cy = 0; cy < s->out_h; cy++) {
    const int rows = s->height - cy * f < f ? s->height - cy * f : f;
    for (int cx = 0; cx < s->out_w; cx++) {
      const int cols = s->width - cx * f < f ? s->width - cx * f : f;
      const size_t cell = (size_t)cy * s->out_w + (size_t)cx;
      const uint32_t* sum = s->sums + cell * (size_t)c;
      uint8_t* o = data + cell * (size_t)c;
      const uint64_t area = (uint64_t)rows * (uint64_t)cols;
      /* The pixels that never came, as the background (sparse images). */
      const uint64_t missing = s->count && background ? area - s->count[cell] : 0;
      static const uint8_t none[4] = {0, 0, 0, 0};
      const uint8_t* bg = missing ? background : none;
      if (!has_alpha(c)) {
        for (int k = 0; k < c; k++) o[k] = mean(sum[k] + missing * bg[k], area);
      } else if (opaque) {
        for (int k = 0; k < c - 1; k++)
          o[k] = mean(s->plain[cell * (size_t)(c - 1) + (size_t)k] + missing * bg[k], area);
        o[c - 1] = 255;
      } else {
        const uint64_t a = bg[c - 1], alpha = sum[c - 1] + missing * a;
        for (int k = 0; k < c - 1; k++) o[k] = alpha ? mean(sum[k] + missing * bg[k] * a, alpha) : 0;
        o[c - 1] = mean(alpha, area);
      }
    }
  }
  out->width = s->out_w, out->height = s->out_h, out->channels = c, out->data = data;
  io_shrink_free(s);
  return TTP_OK;
}
