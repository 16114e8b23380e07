/* Image files to the model's input: decoding (PNG, JPEG, BMP through Debian's stb_image; binary
   PNM through pnm.c) into a raster of bytes, then preprocess.h turns the raster into the
   model's rows x cols grey bytes. Files are hostile: the whole file is read with a size cap,
   dimensions are checked before decoding, and every failure is one line naming the file. */
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

/* ttp_load_image (ttapipe.h), with the seconds spent reading, decoding and preprocessing added
   to seconds[0..2] when seconds is not NULL. */
ttp_status io_load_image(const char* path, const ttp_image_options* options, int rows, int cols,
                         uint8_t* pixels, double seconds[3], ttp_err* e);

/* The decoders io_decode dispatches to. */
ttp_status io_stb_decode(const uint8_t* bytes, size_t size, const char* path, int max_w, int max_h,
                         io_raster* out, ttp_err* e);
ttp_status io_pnm_decode(const uint8_t* bytes, size_t size, const char* path, int max_w, int max_h,
                         io_raster* out, ttp_err* e);

#endif
