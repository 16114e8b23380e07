/* A large image decoded at a reduced size: its pixels, as a decoder produces them (rows in any
   order, Adam7's passes, an RLE stream's scattered runs), averaged into boxes of factor x factor
   pixels as they come, so that the whole image never exists in memory. The result is the
   raster of the box averages (width / factor x height / factor, rounded up; a box at the right
   or bottom edge averages the pixels it holds), which preprocessing then resizes to the model's
   input: averaging areas twice, which differs from averaging them once only where an output
   pixel's edge cuts a box (README.md, "Large images").

   Alpha is averaged as it will be used: a box's alpha is the mean of its pixels' alpha, and its
   colour the alpha-weighted mean of theirs, so that compositing the box over white (what
   preprocessing does) gives the mean of its pixels composited over white. With `opaque_if_clear`
   (BMP: an alpha channel that is 0 everywhere was not used), an image whose alpha is 0
   everywhere comes out opaque, its colours the plain means. */
#ifndef TTP_IO_SHRINK_H
#define TTP_IO_SHRINK_H

#include <stddef.h>
#include <stdint.h>

#include "../pipeline/error.h"
#include "image.h"

/* The factor at most: the sums of a box of 8-bit products fit in 32 bits. */
enum { IO_SHRINK_MAX_FACTOR = 256 };

typedef struct io_shrink {
  int width, height, channels, factor; /* the image's; 1..4 channels as io_raster's */
  int out_w, out_h;
  uint32_t* sums;  /* out_w x out_h x channels: colour sums (alpha-weighted with alpha), alpha */
  uint32_t* plain; /* with alpha and opaque_if_clear: the colours' plain sums, else NULL */
  uint32_t* count; /* sparse: the pixels each box received, else NULL (every pixel comes) */
  int alpha_seen;
} io_shrink;

/* Bytes io_shrink_open allocates for such an image. */
size_t io_shrink_bytes(int width, int height, int channels, int factor, int opaque_if_clear,
                       int sparse);

/* sparse: some pixels may never come (an RLE stream's skips); io_shrink_finish gives them the
   background colour. */
ttp_status io_shrink_open(io_shrink* s, int width, int height, int channels, int factor,
                          int opaque_if_clear, int sparse, ttp_err* e);

/* n pixels of row y (channels bytes each, packed in px) at columns x0, x0 + dx, ... */
void io_shrink_row(io_shrink* s, int y, int x0, int dx, const uint8_t* px, int n);

/* The averaged raster (channels as the image's) into *out (its size, channels and data, which
   it allocates; its reservation stays); the sums are freed. background: sparse images' colour of pixels that never came (channels bytes). */
ttp_status io_shrink_finish(io_shrink* s, const uint8_t* background, io_raster* out, ttp_err* e);

void io_shrink_free(io_shrink* s); /* after a failure; accepts one never opened */

#endif
