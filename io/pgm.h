/* Binary PGM ("P5") images of 8 bits per pixel. The header is "P5", width, height and maxval
   separated by whitespace, with '#' comments to the end of a line anywhere between them, then
   one whitespace byte and width x height bytes. Data after the first image is ignored (the
   format allows several images in one file). */
#ifndef TTP_IO_PGM_H
#define TTP_IO_PGM_H

#include <stdint.h>

#include "../pipeline/error.h"

/* Reads path, which must be rows x cols, into pixels, scaling maxval to 255 (rounded). */
ttp_status pgm_read(const char* path, int rows, int cols, uint8_t* pixels, ttp_err* e);

#endif
