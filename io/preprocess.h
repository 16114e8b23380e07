/* From a decoded raster to the model's rows x cols grey bytes: grey (BT.601 luma, alpha over
   white), polarity (invert when asked, or when the border is light), and size (resize the whole
   image, or centre it as MNIST was made); or, for a colour model, to three planes of its size
   (alpha over white, inverted only when asked, each plane resized). The steps and their constants are in ttapipe.h
   ("Image files"); the functions are separate so that tests can check each. */
#ifndef TTP_IO_PREPROCESS_H
#define TTP_IO_PREPROCESS_H

#include "image.h"
#include "ttapipe.h"

/* MNIST's proportions: the ink's longer side is 20 of 28 pixels. Ink: pixels of 0.3 and up. */
#define IO_INK_LEVEL 0.3f

typedef struct io_grey {
  int width, height;
  float* v; /* width x height values in [0, 1] */
} io_grey;

ttp_status io_to_grey(const io_raster* r, io_grey* out, ttp_err* e);
void io_grey_free(io_grey* g);

/* Whether the mean of the outermost ring of pixels is above 0.5. */
int io_border_is_light(const io_grey* g);

/* src (sw x sh) to dst (dw x dh), separably: along each axis the average of the covered areas
   when shrinking, bilinear between pixel centres when enlarging, a copy when equal. scratch:
   dw x sh floats. */
void io_resample(const float* src, int sw, int sh, float* dst, int dw, int dh, float* scratch);

/* The MNIST centring of g into rows x cols values (see ttapipe.h). */
ttp_status io_center_mnist(const io_grey* g, int rows, int cols, float* out, ttp_err* e);

/* All the steps, as the options say; out: o->channels x rows x cols bytes (planar). */
ttp_status io_preprocess(const io_raster* r, const ttp_image_options* o, int rows, int cols,
                         uint8_t* out, ttp_err* e);

#endif
