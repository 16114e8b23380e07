/* Preprocessing of decoded images into the model's input; see preprocess.h. */
#include "preprocess.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

ttp_status io_to_grey(const io_raster* r, io_grey* out, ttp_err* e) {
  size_t n = (size_t)r->width * r->height;
  *out = (io_grey){r->width, r->height, malloc(n * sizeof(float))};
  if (!out->v) return ERR_NOMEM(e, n * sizeof(float));
  const int c = r->channels;
  for (size_t i = 0; i < n; i++) {
    const uint8_t* p = r->data + i * c;
    float y = c >= 3 ? (0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2]) / 255.0f : p[0] / 255.0f;
    if (c == 2 || c == 4) { /* over white paper */
      float a = p[c - 1] / 255.0f;
      y = a * y + (1.0f - a);
    }
    out->v[i] = y;
  }
  return TTP_OK;
}

void io_grey_free(io_grey* g) {
  if (!g) return;
  free(g->v);
  *g = (io_grey){0};
}

int io_border_is_light(const io_grey* g) {
  double sum = 0;
  long n = 0;
  for (int y = 0; y < g->height; y++)
    for (int x = 0; x < g->width; x++)
      if (y == 0 || y == g->height - 1 || x == 0 || x == g->width - 1) {
        sum += g->v[(size_t)y * g->width + x];
        n++;
      }
  return sum > 0.5 * n;
}

/* One line of n_src values (stride apart) into n_dst values (stride apart). */
static void resample_line(const float* src, int n_src, size_t src_stride, float* dst, int n_dst,
                          size_t dst_stride) {
  if (n_dst == n_src) {
    for (int j = 0; j < n_dst; j++) dst[j * dst_stride] = src[j * src_stride];
  } else if (n_dst < n_src) { /* each output averages the source area it covers */
    double scale = (double)n_src / n_dst;
    for (int j = 0; j < n_dst; j++) {
      double lo = j * scale, hi = (j + 1) * scale, sum = 0;
      for (int i = (int)lo; i < n_src && i < hi; i++) {
        double a = fmax(lo, i), b = fmin(hi, i + 1.0);
        if (b > a) sum += (b - a) * src[i * src_stride];
      }
      dst[j * dst_stride] = (float)(sum / scale);
    }
  } else { /* bilinear between pixel centres */
    double scale = (double)n_src / n_dst;
    for (int j = 0; j < n_dst; j++) {
      double x = (j + 0.5) * scale - 0.5;
      if (x < 0) x = 0;
      int i = (int)x;
      if (i >= n_src - 1) {
        dst[j * dst_stride] = src[(size_t)(n_src - 1) * src_stride];
      } else {
        double t = x - i;
        dst[j * dst_stride] = (float)((1 - t) * src[i * src_stride] + t * src[(i + 1) * src_stride]);
      }
    }
  }
}

void io_resample(const float* src, int sw, int sh, float* dst, int dw, int dh, float* scratch) {
  for (int y = 0; y < sh; y++)
    resample_line(src + (size_t)y * sw, sw, 1, scratch + (size_t)y * dw, dw, 1);
  for (int x = 0; x < dw; x++) resample_line(scratch + x, sh, (size_t)dw, dst + x, dh, (size_t)dw);
}

/* Resamples g whole into rows x cols. */
static ttp_status resize_whole(const io_grey* g, int rows, int cols, float* out, ttp_err* e) {
  float* scratch = malloc((size_t)cols * g->height * sizeof(float));
  if (!scratch) return ERR_NOMEM(e, (size_t)cols * g->height * sizeof(float));
  io_resample(g->v, g->width, g->height, out, cols, rows, scratch);
  free(scratch);
  return TTP_OK;
}

ttp_status io_center_mnist(const io_grey* g, int rows, int cols, float* out, ttp_err* e) {
  int x0 = g->width, x1 = -1, y0 = g->height, y1 = -1;
  for (int y = 0; y < g->height; y++)
    for (int x = 0; x < g->width; x++)
      if (g->v[(size_t)y * g->width + x] >= IO_INK_LEVEL) {
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
  if (x1 < 0) return resize_whole(g, rows, cols, out, e); /* no ink: nothing to centre */
  int bw = x1 - x0 + 1, bh = y1 - y0 + 1;
  int box = (int)lround((rows < cols ? rows : cols) * 20.0 / 28.0);
  double scale = (double)box / (bw > bh ? bw : bh);
  int w = (int)lround(bw * scale), h = (int)lround(bh * scale);
  if (w < 1) w = 1;
  if (h < 1) h = 1;
  float* crop = malloc((size_t)bw * bh * sizeof(float));
  float* fit = malloc((size_t)w * h * sizeof(float));
  float* scratch = malloc((size_t)w * bh * sizeof(float));
  if (!crop || !fit || !scratch) {
    free(crop), free(fit), free(scratch);
    return ERR_NOMEM(e, ((size_t)bw * bh + (size_t)w * h + (size_t)w * bh) * sizeof(float));
  }
  for (int y = 0; y < bh; y++)
    for (int x = 0; x < bw; x++)
      crop[(size_t)y * bw + x] = g->v[(size_t)(y0 + y) * g->width + x0 + x];
  io_resample(crop, bw, bh, fit, w, h, scratch);
  /* The centre of mass (pixel centres, values as weights) goes to the field's centre. */
  double mass = 0, mx = 0, my = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double v = fit[(size_t)y * w + x];
      mass += v, mx += v * (x + 0.5), my += v * (y + 0.5);
    }
  int dx = (int)lround(cols / 2.0 - (mass > 0 ? mx / mass : w / 2.0));
  int dy = (int)lround(rows / 2.0 - (mass > 0 ? my / mass : h / 2.0));
  for (size_t i = 0; i < (size_t)rows * cols; i++) out[i] = 0.0f;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int ox = x + dx, oy = y + dy;
      if (ox >= 0 && ox < cols && oy >= 0 && oy < rows) out[(size_t)oy * cols + ox] = fit[(size_t)y * w + x];
    }
  free(crop), free(fit), free(scratch);
  return TTP_OK;
}

/* The common case of a grey image already rows x cols, not centred: the same arithmetic as the
   general path below (each grey level through the same float steps, once, into tables of 256),
   without its buffers: every file of an MNIST-like directory comes this way. */
static float grey_level[256];           /* v / 255.0f */
static uint8_t grey_byte[2][256];       /* [invert][v]: the output byte of grey level v */
static pthread_once_t grey_once = PTHREAD_ONCE_INIT;

static void grey_tables(void) {
  for (int v = 0; v < 256; v++) grey_level[v] = v / 255.0f;
  for (int invert = 0; invert < 2; invert++)
    for (int v = 0; v < 256; v++) {
      float f = invert ? 1.0f - grey_level[v] : grey_level[v];
      f = f < 0.0f ? 0.0f : f > 1.0f ? 1.0f : f;
      grey_byte[invert][v] = (uint8_t)(f * 255.0f + 0.5f);
    }
}

static int preprocess_exact(const io_raster* r, const ttp_image_options* o, int rows, int cols,
                            uint8_t* out) {
  if (r->channels != 1 || r->width != cols || r->height != rows || o->center != TTP_CENTER_NONE)
    return 0;
  pthread_once(&grey_once, grey_tables);
  const uint8_t* px = r->data;
  int invert = o->invert == TTP_INVERT_YES;
  if (o->invert == TTP_INVERT_AUTO) { /* io_border_is_light's sum, in its order */
    double sum = 0;
    long n = 0;
    for (int y = 0; y < rows; y++) {
      const uint8_t* row = px + (size_t)y * cols;
      if (y == 0 || y == rows - 1) {
        for (int x = 0; x < cols; x++) sum += grey_level[row[x]];
        n += cols;
      } else {
        sum += grey_level[row[0]];
        n++;
        if (cols > 1) sum += grey_level[row[cols - 1]], n++;
      }
    }
    invert = sum > 0.5 * n;
  }
  const uint8_t* table = grey_byte[invert];
  for (size_t i = 0; i < (size_t)rows * cols; i++) out[i] = table[px[i]];
  return 1;
}

/* A value of [0, 1] (clamped) as a byte. */
static uint8_t to_byte(float v) {
  v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
  return (uint8_t)(v * 255.0f + 0.5f);
}

/* Three planes: each colour (grey repeated) in [0, 1], alpha over white, inverted when asked,
   resized whole. */
static ttp_status preprocess_rgb(const io_raster* r, const ttp_image_options* o, int rows,
                                 int cols, uint8_t* out, ttp_err* e) {
  const size_t n = (size_t)r->width * r->height, field = (size_t)rows * cols;
  float* plane = malloc(n * sizeof *plane);
  float* sized = malloc(field * sizeof *sized);
  float* scratch = malloc((size_t)cols * r->height * sizeof *scratch);
  ttp_status s = TTP_OK;
  if (!plane || !sized || !scratch)
    s = ERR_NOMEM(e, (n + field + (size_t)cols * r->height) * sizeof(float));
  const int c = r->channels, colour = c >= 3;
  for (int ch = 0; ch < 3 && s == TTP_OK; ch++) {
    for (size_t i = 0; i < n; i++) {
      const uint8_t* p = r->data + i * c;
      float v = p[colour ? ch : 0] / 255.0f;
      if (c == 2 || c == 4) { /* over white paper */
        float a = p[c - 1] / 255.0f;
        v = a * v + (1.0f - a);
      }
      plane[i] = o->invert == TTP_INVERT_YES ? 1.0f - v : v;
    }
    io_resample(plane, r->width, r->height, sized, cols, rows, scratch);
    for (size_t i = 0; i < field; i++) out[ch * field + i] = to_byte(sized[i]);
  }
  free(plane), free(sized), free(scratch);
  return s;
}

ttp_status io_preprocess(const io_raster* r, const ttp_image_options* o, int rows, int cols,
                         uint8_t* out, ttp_err* e) {
  if (o->channels == 3) return preprocess_rgb(r, o, rows, cols, out, e);
  if (preprocess_exact(r, o, rows, cols, out)) return TTP_OK;
  io_grey g;
  TRY(io_to_grey(r, &g, e));
  if (o->invert == TTP_INVERT_YES || (o->invert == TTP_INVERT_AUTO && io_border_is_light(&g)))
    for (size_t i = 0; i < (size_t)g.width * g.height; i++) g.v[i] = 1.0f - g.v[i];
  float* field = malloc((size_t)rows * cols * sizeof(float));
  ttp_status s = field ? TTP_OK : ERR_NOMEM(e, (size_t)rows * cols * sizeof(float));
  if (s == TTP_OK)
    s = o->center == TTP_CENTER_MNIST ? io_center_mnist(&g, rows, cols, field, e)
                                      : resize_whole(&g, rows, cols, field, e);
  if (s == TTP_OK)
    for (size_t i = 0; i < (size_t)rows * cols; i++) out[i] = to_byte(field[i]);
  free(field);
  io_grey_free(&g);
  return s;
}
