/* Image files to the model's input: decoding (JPEG through Debian's libjpeg-turbo; PNG, BMP
   and binary PNM through ttapipe's own readers, PNG with zlib) into a raster of bytes, then
   preprocess.h turns the raster into the model's rows x cols grey bytes. Files are hostile: the
   whole file is read with a size cap, dimensions are checked before decoding, and every failure
   is one line naming the file. */
#ifndef TTP_IO_IMAGE_H
#define TTP_IO_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../pipeline/error.h"
#include "ttapipe.h"

typedef struct io_budget io_budget; /* budget.h */

/* width x height pixels of `channels` bytes each: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA; rows
   top first. A decoded raster may hold bytes of the decoding threads' budget (budget.h), given
   back by io_raster_free: what it and its preprocessing allocate. */
typedef struct io_raster {
  int width, height, channels;
  uint8_t* data;
  io_budget* budget;
  size_t reserved;
} io_raster;

void io_raster_free(io_raster* r);

/* What a decoder may decode, and at what size. */
typedef struct io_limits {
  int max_w, max_h;     /* refused from the header when wider or taller */
  uint64_t max_pixels;  /* refused from the header when width x height is more */
  int min_w, min_h;     /* a large image may be decoded at a reduced size, as long as it stays
                           at least this large (JPEG: a DCT scale; the others: box averages,
                           shrink.h); 0: always at full size */
  io_budget* budget;    /* what the decoded raster reserves (budget.h); NULL: nothing */
} io_limits;

/* Full-size decoding within max_w x max_h (and IO_MAX_PIXELS), no budget: tests and tools. */
io_limits io_limits_full(int max_w, int max_h);

/* The reduced size's factor for a width x height image under l: the largest integer f (at most
   IO_SHRINK_MAX_FACTOR) with width / f >= min_w and height / f >= min_h; 1 when l asks for full
   size. */
int io_reduction(const io_limits* l, uint64_t width, uint64_t height);

/* Decodes a file's bytes, the format told by its first bytes, within l (sizes checked from the
   header, before decoding). path names the file in messages. */
ttp_status io_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                     io_raster* out, ttp_err* e);

/* The caller's options (NULL: the defaults; an older, shorter struct keeps the newer fields'
   defaults) into *out, their channels replaced by `channels` unless it is 0, checked. */
ttp_status io_image_options(const ttp_image_options* given, int channels, ttp_image_options* out,
                            ttp_err* e);

/* The decoding threads' budgets (budget.h): the files' bytes, and the pixels decoded from
   them. Two, so that a thread holding a file's bytes while it waits for pixels never waits on
   threads that wait for it. NULL members: nothing counted. */
typedef struct io_budgets {
  io_budget* files;
  io_budget* pixels;
} io_budgets;

/* What ttp_load_image does once the file is read: decode and preprocess size bytes (path names
   the file in messages); the fuzz targets (tests/fuzz/) enter here. The seconds spent decoding
   and preprocessing are added to seconds[0..1] when seconds is not NULL. pixels: the budget
   of the decoded raster, or NULL. */
ttp_status io_load_image_bytes(const uint8_t* bytes, size_t size, const char* path,
                               const ttp_image_options* options, int rows, int cols,
                               uint8_t* pixels, io_budget* budget, double seconds[2], ttp_err* e);

/* ttp_load_image (ttapipe.h), with the seconds spent reading, decoding and preprocessing added
   to seconds[0..2] when seconds is not NULL; budgets NULL: none. */
ttp_status io_load_image(const char* path, const ttp_image_options* options, int rows, int cols,
                         uint8_t* pixels, const io_budgets* budgets, double seconds[3],
                         ttp_err* e);

/* The decoders io_decode dispatches to, each given a file of its format: JPEG (jpeg.c, Debian's
   libjpeg-turbo); PNG (png.c), BMP (bmp.c) and binary PNM (pnm.c), ttapipe's own. Each checks
   the header's size (io_check_size) before decoding, reserves what it will hold
   (io_raster_reserve), decodes at the size l allows, and names path in every message. */
ttp_status io_png_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                         io_raster* out, ttp_err* e);
ttp_status io_jpeg_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                          io_raster* out, ttp_err* e);
ttp_status io_bmp_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                         io_raster* out, ttp_err* e);
ttp_status io_pnm_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                         io_raster* out, ttp_err* e);

/* A decoder's check of the size a header declares, before anything is decoded: more than
   max_w x max_h is refused as larger than allowed (both sizes in the message), then more than
   max_pixels, then more than 2^30 bytes of pixels at full size (channels per pixel). format
   names the format in the message. */
ttp_status io_check_size(const char* path, const char* format, uint64_t w, uint64_t h,
                         int channels, const io_limits* l, ttp_err* e);

/* Reserves, from l's budget, what decoding into a width x height x channels raster holds until
   the raster is freed: the raster, the planes of floats preprocessing makes of it, and
   `working` bytes of the decoder's own (given back when the raster is). Waits while the other
   threads hold the budget (budget.h). */
void io_raster_reserve(io_raster* r, const io_limits* l, uint64_t width, uint64_t height,
                       int channels, uint64_t working);

#endif
