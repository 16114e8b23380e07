/* Large images made by the tests, none of them committed: synthetic photographs (PNG, JPEG)
   written a row at a time, and the hostile files of issue 39 — a few hundred kilobytes that
   declare 8192 x 8192 pixels. */
#ifndef TTP_TESTS_LARGE_IMAGES_H
#define TTP_TESTS_LARGE_IMAGES_H

#include <stdint.h>

/* Writes row y of a w x h image (the PNG's samples: 3 bytes a pixel for RGB 8-bit, 8 for RGBA
   16-bit, ...). */
typedef void (*large_row_fn)(int w, int h, int y, uint64_t seed, uint8_t* row);

/* Row y of a synthetic photograph, RGB: gradients, soft blobs, hard edges, texture, noise. */
void large_photo_row(int w, int h, int y, uint64_t seed, uint8_t* rgb);

/* A PNG of colour type `colour` and bit depth `depth`, its rows from row(), filter None,
   deflated as they come (never the whole image in memory). */
void large_png(const char* path, int w, int h, int colour, int depth, large_row_fn row,
               uint64_t seed);

/* A JPEG of the RGB rows of row() (components 1: their luma): baseline (scans 0 or 1), with
   scans > 1 a progressive file of that many scans, with scans -1 libjpeg's own progression
   (10 scans in colour). */
void large_jpeg(const char* path, int w, int h, int components, int quality, int scans,
                large_row_fn row, uint64_t seed);

/* Into dir, for side 8192: png16-rgba-8192.png (about 520 KB: RGBA of 16 bits, mostly zeros),
   rle8-8192.bmp (about a kilobyte: RLE8), and with progressive, progressive-499-scans-8192.jpg
   (grey) and progressive-883-scans-8192.jpg (colour; a minute to make at 8192). */
void large_hostile(const char* dir, int side, int progressive);

/* Into dir: photo-6000x4000.jpg (baseline, colour), progressive-6000x4000.jpg (libjpeg's
   progression: 72 MB of coefficients held while it decodes) and photo-4096x4096.png (RGB):
   large, but what cameras make, to be classified. */
void large_big(const char* dir);

#endif
