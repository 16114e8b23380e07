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

/* width x height pixels of `channels` bytes each: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA; rows
   top first. */
typedef struct io_raster {
  int width, height, channels;
  uint8_t* data;
} io_raster;

void io_raster_free(io_raster* r);

/* Decodes a file's bytes, the format told by its first bytes. Refuses images wider than max_w
   or taller than max_h from their headers, before decoding. path names the file in messages. */
ttp_status io_decode(const uint8_t* bytes, size_t size, const char* path, int max_w, int max_h,
                     io_raster* out, ttp_err* e);

/* The caller's options (NULL: the defaults; an older, shorter struct keeps the newer fields'
   defaults) into *out, their channels replaced by `channels` unless it is 0, checked. */
ttp_status io_image_options(const ttp_image_options* given, int channels, ttp_image_options* out,
                            ttp_err* e);

/* What ttp_load_image does once the file is read: decode and preprocess size bytes (path names
   the file in messages); the fuzz targets (tests/fuzz/) enter here. The seconds spent decoding
   and preprocessing are added to seconds[0..1] when seconds is not NULL. */
ttp_status io_load_image_bytes(const uint8_t* bytes, size_t size, const char* path,
                               const ttp_image_options* options, int rows, int cols,
                               uint8_t* pixels, double seconds[2], ttp_err* e);

/* ttp_load_image (ttapipe.h), with the seconds spent reading, decoding and preprocessing added
   to seconds[0..2] when seconds is not NULL. */
ttp_status io_load_image(const char* path, const ttp_image_options* options, int rows, int cols,
                         uint8_t* pixels, double seconds[3], ttp_err* e);

/* The decoders io_decode dispatches to, each given a file of its format: JPEG (jpeg.c, Debian's
   libjpeg-turbo); PNG (png.c), BMP (bmp.c) and binary PNM (pnm.c), ttapipe's own. Each refuses images wider than max_w or taller than max_h from the
   header, before decoding, and names path in every message. */
ttp_status io_png_decode(const uint8_t* bytes, size_t size, const char* path, int max_w, int max_h,
                         io_raster* out, ttp_err* e);
ttp_status io_jpeg_decode(const uint8_t* bytes, size_t size, const char* path, int max_w,
                          int max_h, io_raster* out, ttp_err* e);
ttp_status io_bmp_decode(const uint8_t* bytes, size_t size, const char* path, int max_w, int max_h,
                         io_raster* out, ttp_err* e);
ttp_status io_pnm_decode(const uint8_t* bytes, size_t size, const char* path, int max_w, int max_h,
                         io_raster* out, ttp_err* e);

/* A decoder's check of the size a header declares, before anything is decoded: more than
   max_w x max_h is refused as larger than allowed (both sizes in the message), then more than
   2^30 bytes of pixels (channels per pixel). format names the format in the message. */
ttp_status io_check_size(const char* path, const char* format, uint64_t w, uint64_t h,
                         int channels, int max_w, int max_h, ttp_err* e);

#endif
