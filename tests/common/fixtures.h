/* Generated inputs for tests: model directories in the mnistCUDNN layout with random weights,
   IDX files (plain or gzip) and PGM images. The sizes here are written from the format's
   description (shared/datasets/README.md), independently of io/. */
#ifndef TTP_TEST_FIXTURES_H
#define TTP_TEST_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "ttapipe.h"

typedef struct fixture_file {
  const char* name;
  size_t floats;
} fixture_file;

/* The eight weight files of a mnistCUDNN model directory. */
enum { FIXTURE_MODEL_FILES = 8 };
extern const fixture_file fixture_model_files[FIXTURE_MODEL_FILES];

/* The values file `index` holds in a model written with `seed`: uniform in +-1/sqrt(fan-in),
   so that activations stay in a sensible range. */
void fixture_weights(uint64_t seed, int index, float* out);

/* Writes the eight files (little-endian float32) into dir, which must exist. */
void fixture_model_dir(const char* dir, uint64_t seed);

/* Writes an IDX file: magic 0x0800 | ndims, the dims big-endian, then the data; gzip if gz. */
void fixture_idx(const char* path, int ndims, const uint32_t* dims, const uint8_t* data, size_t n,
                 int gz);

/* Writes a binary PGM (P5) with a comment line in its header. */
void fixture_pgm(const char* path, int rows, int cols, int maxval, const uint8_t* pixels);

/* Image files through Debian's stb_image_write: pixels are w x h x channels bytes (1 grey,
   2 grey + alpha, 3 RGB, 4 RGBA). JPEG at quality 95. */
void fixture_png(const char* path, int w, int h, int channels, const uint8_t* pixels);
void fixture_bmp(const char* path, int w, int h, int channels, const uint8_t* pixels);
void fixture_jpg(const char* path, int w, int h, int channels, const uint8_t* pixels);

/* Opens a pipeline on model_dir with the engine (the others options at their defaults; tta may
   be NULL), or dies saying why. */
ttp_pipeline* fixture_open(const char* model_dir, ttp_engine engine, const ttp_tta* tta);

/* A drawing: a thick ring and a bar, light strokes on a dark ground (or the reverse), with a
   little noise, w x h x channels bytes (alpha, if any, opaque). */
void fixture_drawing(uint8_t* pixels, int w, int h, int channels, int light_ground, uint64_t seed);

#endif
