/* ttp_load_image: read, decode (by the file's first bytes), preprocess. See ttapipe.h. */
#include <stdlib.h>
#include <string.h>

#include "../pipeline/clock.h"
#include "budget.h"
#include "file.h"
#include "image.h"
#include "preprocess.h"
#include "shrink.h"

enum { IMAGE_MAX_SIDE = 8192 };
#define IMAGE_MAX_BYTES ((uint64_t)1 << 30)
#define IMAGE_MAX_PIXELS ((uint64_t)IMAGE_MAX_SIDE * IMAGE_MAX_SIDE)

/* A large image is decoded at a reduced size that keeps at least this many pixels of it for
   each pixel of the model's input, a side (README.md, "Large images", measures what it
   changes). */
enum { IMAGE_REDUCED_PER_PIXEL = 8 };

void ttp_image_options_init(ttp_image_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->invert = TTP_INVERT_AUTO;
  o->center = TTP_CENTER_NONE;
  o->max_width = o->max_height = IMAGE_MAX_SIDE;
  o->max_file_bytes = (size_t)64 << 20;
  o->channels = 1;
  o->max_pixels = TTP_DEFAULT_MAX_PIXELS;
}

void io_raster_free(io_raster* r) {
  if (!r) return;
  free(r->data); /* every decoder allocates with malloc */
  io_budget_give(r->budget, r->reserved);
  *r = (io_raster){0};
}

io_limits io_limits_full(int max_w, int max_h) {
  return (io_limits){max_w, max_h, IMAGE_MAX_PIXELS, 0, 0, NULL};
}

int io_reduction(const io_limits* l, uint64_t width, uint64_t height) {
  if (l->min_w < 1 || l->min_h < 1) return 1;
  const uint64_t fw = width / (uint64_t)l->min_w, fh = height / (uint64_t)l->min_h;
  const uint64_t f = fw < fh ? fw : fh;
  return f < 1 ? 1 : f > IO_SHRINK_MAX_FACTOR ? IO_SHRINK_MAX_FACTOR : (int)f;
}

ttp_status io_check_size(const char* path, const char* format, uint64_t w, uint64_t h,
                         int channels, const io_limits* l, ttp_err* e) {
  /* The sides first: they are the limit a user sets and can read (--max-size). */
  if (w > (uint64_t)l->max_w || h > (uint64_t)l->max_h)
    return ERR(e, TTP_ERR_FORMAT, "%s: image is %llux%llu, larger than the %dx%d allowed", path,
               (unsigned long long)w, (unsigned long long)h, l->max_w, l->max_h);
  if (w * h > l->max_pixels)
    return ERR(e, TTP_ERR_FORMAT, "%s: image is %llux%llu, %llu pixels, more than the %llu "
               "allowed (--max-pixels)", path, (unsigned long long)w, (unsigned long long)h,
               (unsigned long long)(w * h), (unsigned long long)l->max_pixels);
  if (w * h * (uint64_t)channels > IMAGE_MAX_BYTES)
    return ERR(e, TTP_ERR_FORMAT,
               "%s: image is %llux%llu, %s of %llu bytes decoded, over the limit of 2^30 bytes",
               path, (unsigned long long)w, (unsigned long long)h, format,
               (unsigned long long)(w * h * (uint64_t)channels));
  return TTP_OK;
}

void io_raster_reserve(io_raster* r, const io_limits* l, uint64_t width, uint64_t height,
                       int channels, uint64_t working) {
  /* The raster, and preprocessing's floats: a plane (or the grey image) and its scratch. */
  const uint64_t pixels = width * height;
  const uint64_t bytes = pixels * (uint64_t)channels + 2 * pixels * sizeof(float) + working;
  r->budget = l->budget;
  r->reserved = io_budget_take(l->budget, bytes > SIZE_MAX ? SIZE_MAX : (size_t)bytes);
}

static int starts(const uint8_t* b, size_t n, const char* magic, size_t m) {
  return n >= m && memcmp(b, magic, m) == 0;
}

ttp_status io_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                     io_raster* out, ttp_err* e) {
  *out = (io_raster){0};
  if (size == 0) return ERR(e, TTP_ERR_FORMAT, "%s: empty file", path);
  if (starts(bytes, size, "\x89PNG\r\n\x1a\n", 8)) return io_png_decode(bytes, size, path, l, out, e);
  if (starts(bytes, size, "BM", 2)) return io_bmp_decode(bytes, size, path, l, out, e);
  if (starts(bytes, size, "\xff\xd8\xff", 3)) return io_jpeg_decode(bytes, size, path, l, out, e);
  if (starts(bytes, size, "P5", 2) || starts(bytes, size, "P6", 2))
    return io_pnm_decode(bytes, size, path, l, out, e);
  return ERR(e, TTP_ERR_FORMAT, "%s: not an image ttapipe reads (PNG, JPEG, BMP, binary PNM)",
             path);
}

ttp_status io_image_options(const ttp_image_options* given, int channels, ttp_image_options* o,
                            ttp_err* e) {
  ttp_image_options_init(o);
  if (given && given->struct_size < offsetof(ttp_image_options, max_file_bytes) + sizeof(size_t))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT,
               "ttp_image_options.struct_size is %zu: call ttp_image_options_init first",
               given->struct_size);
  if (given) memcpy(o, given, given->struct_size < sizeof *o ? given->struct_size : sizeof *o);
  o->struct_size = sizeof *o;
  if (channels) o->channels = channels;
  if ((unsigned)o->invert > TTP_INVERT_NO || (unsigned)o->center > TTP_CENTER_MNIST)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "unknown invert or center mode");
  if (o->max_width < 1 || o->max_width > IMAGE_MAX_SIDE || o->max_height < 1 ||
      o->max_height > IMAGE_MAX_SIDE)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "image size limits must be 1..%d, not %dx%d",
               IMAGE_MAX_SIDE, o->max_width, o->max_height);
  if (o->max_pixels < 1 || o->max_pixels > IMAGE_MAX_PIXELS)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "the image pixel limit must be 1..%llu, not %llu",
               (unsigned long long)IMAGE_MAX_PIXELS, (unsigned long long)o->max_pixels);
  if (o->channels != 1 && o->channels != 3)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "images of 1 or 3 channels, not %d", o->channels);
  if (o->channels == 3 && o->center == TTP_CENTER_MNIST)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "MNIST centring is for one-channel images");
  return TTP_OK;
}

ttp_status io_load_image_bytes(const uint8_t* bytes, size_t size, const char* path,
                               const ttp_image_options* given, int rows, int cols,
                               uint8_t* pixels, io_budget* budget, double seconds[2], ttp_err* e) {
  if (!bytes || !path || !pixels || rows < 1 || cols < 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "ttp_load_image: path, pixels and a size are required");
  ttp_image_options o;
  TRY(io_image_options(given, 0, &o, e));
  const int reduce = !o.full_size;
  const io_limits limits = {o.max_width, o.max_height, o.max_pixels,
                            reduce ? IMAGE_REDUCED_PER_PIXEL * cols : 0,
                            reduce ? IMAGE_REDUCED_PER_PIXEL * rows : 0, budget};
  double t0 = clock_seconds();
  io_raster r;
  ttp_status s = io_decode(bytes, size, path, &limits, &r, e);
  double t1 = clock_seconds();
  if (s == TTP_OK) s = io_preprocess(&r, &o, rows, cols, pixels, e);
  io_raster_free(&r); /* after a failure too: what the decoder reserved */
  if (seconds) {
    seconds[0] += t1 - t0;
    seconds[1] += clock_seconds() - t1;
  }
  return s;
}

ttp_status io_load_image(const char* path, const ttp_image_options* given, int rows, int cols,
                         uint8_t* pixels, const io_budgets* budgets, double seconds[3],
                         ttp_err* e) {
  if (!path || !pixels || rows < 1 || cols < 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "ttp_load_image: path, pixels and a size are required");
  ttp_image_options o;
  TRY(io_image_options(given, 0, &o, e));
  double t0 = clock_seconds();
  uint8_t* bytes;
  size_t size, reserved;
  io_budget* files = budgets ? budgets->files : NULL;
  TRY(io_read_file_within(path, o.max_file_bytes, files, &bytes, &size, &reserved, e));
  if (seconds) seconds[0] += clock_seconds() - t0;
  ttp_status s = io_load_image_bytes(bytes, size, path, &o, rows, cols, pixels,
                                     budgets ? budgets->pixels : NULL,
                                     seconds ? seconds + 1 : NULL, e);
  free(bytes);
  io_budget_give(files, reserved);
  return s;
}

ttp_status ttp_load_image(const char* path, const ttp_image_options* options, int rows, int cols,
                          uint8_t* pixels, char* error, size_t error_size) {
  ttp_err e = {0};
  io_load_image(path, options, rows, cols, pixels, NULL, NULL, &e);
  err_copy_out(&e, error, error_size);
  return e.status;
}
