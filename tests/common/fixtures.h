/* Generated inputs for tests: model directories in the mnistCUDNN layout with random weights,
   IDX files (plain or gzip) and PGM images. The sizes here are written from the format's
   description (shared/datasets/README.md), independently of io/. */
#ifndef TTP_TEST_FIXTURES_H
#define TTP_TEST_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
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

/* BMP files of every kind (bmp_writer.c), from Microsoft's description of the format. pixels:
   w x h palette indices (bits <= 8) or RGBA quadruples (16, 24, 32 bits; 24 ignores alpha), top
   row first; 16 and 32-bit pixels keep each channel's top bits under its mask. The palette's
   entry i is fixture_bmp_palette(i). Returns the file's size; *out is malloc'd. */
typedef struct fixture_bmp_spec {
  int w, h, bits;     /* bits: 1, 4, 8, 16, 24 or 32 */
  int header;         /* 12 (OS/2 core), 40 (info), 52, 56, 108 (V4), 124 (V5) */
  int compression;    /* 0 none, 1 RLE8, 2 RLE4, 3 bit fields, 6 bit fields with alpha */
  int top_down;       /* rows stored top row first (a negative height) */
  int colours;        /* palette entries, and the header's count of colours used (0: 2^bits) */
  uint32_t masks[4];  /* red, green, blue, alpha bit masks of 16 and 32-bit pixels */
} fixture_bmp_spec;
void fixture_bmp_palette(int i, uint8_t rgb[3]);
size_t fixture_bmp_bytes(const fixture_bmp_spec* spec, const uint8_t* pixels, uint8_t** out);

/* JPEG files through Debian's libjpeg-turbo encoder (jpeg_writer.c). pixels: w x h x
   components bytes (1 grey, 3 RGB, 4 CMYK). Returns the file's size; *out is malloc'd. */
typedef struct fixture_jpeg_spec {
  int w, h, components;
  int colour_space;  /* what the file stores, a J_COLOR_SPACE (0: libjpeg's default for the input) */
  int h0, v0;        /* sampling factors of the first component, the others 1 x 1 (0: default) */
  int progressive, restart, optimize, arithmetic, quality;
  const void* scans; /* a scan script (nscans jpeg_scan_info), or NULL */
  int nscans;
} fixture_jpeg_spec;
size_t fixture_jpeg_bytes(const fixture_jpeg_spec* spec, const uint8_t* pixels, uint8_t** out);

/* Opens a pipeline on model_dir with the engine (the others options at their defaults; tta may
   be NULL), or dies saying why. */
ttp_pipeline* fixture_open(const char* model_dir, ttp_engine engine, const ttp_tta* tta);
/* The same, or NULL where this build lacks the engine (any other refusal dies). */
ttp_pipeline* fixture_open_if_built(const char* model_dir, ttp_engine engine, const ttp_tta* tta);

/* The GPU tests' pipeline: the engine in precision with `copies` augmented copies, batches of
   256 (so that a few hundred images make several), cuDNN's heuristic plan, 2 CPU threads; or
   dies saying why. */
ttp_pipeline* fixture_open_gpu(const char* model_dir, ttp_engine engine, ttp_precision precision,
                               int copies);

/* A drawing: a thick ring and a bar, light strokes on a dark ground (or the reverse), with a
   little noise, w x h x channels bytes (alpha, if any, opaque). */
void fixture_drawing(uint8_t* pixels, int w, int h, int channels, int light_ground, uint64_t seed);

/* An ONNX file (tests/common/onnx_writer.c) of model m's layers as an exporter writes them: a
   chain of Conv, MaxPool, Gemm (transB 1), Relu, LRN, Softmax nodes, float32 initializers as raw
   bytes, opset 13, input [N, C, H, W] with N named. The variant's flags change that: */
enum {
  FIXTURE_ONNX_TYPED = 1,        /* initializers as float_data */
  FIXTURE_ONNX_TRANSB0 = 2,      /* Gemm weights [in][out], transB 0 */
  FIXTURE_ONNX_EXTRAS = 4,       /* Dropout, Identity nodes, Gemm's alpha given */
  FIXTURE_ONNX_NO_SOFTMAX = 8,   /* the graph ends in logits */
  FIXTURE_ONNX_NORM = 2048,      /* a BatchNormalization after the first Conv and the first Gemm
                                    (fixture_onnx_norm's values, epsilon 1e-5) */
  FIXTURE_ONNX_LABELS = 4096,    /* metadata "labels": "c0" .. "c<classes - 1>", a line each */
  FIXTURE_ONNX_BAD_LABELS = 8192, /* metadata "labels" one name short */
  /* breakages: */
  FIXTURE_ONNX_MISSING = 16,     /* the first layer's weights are no initializer */
  FIXTURE_ONNX_BAD_OP = 32,      /* a Tanh node ("squash") after the first layer */
  FIXTURE_ONNX_NOT_CHAIN = 64,   /* a node ("astray") that takes the graph input again */
  FIXTURE_ONNX_DYNAMIC = 128,    /* the rows a named dimension */
  FIXTURE_ONNX_BIG = 256,        /* 200 rows */
  FIXTURE_ONNX_OPSET99 = 512,    /* opset 99 */
  FIXTURE_ONNX_EXTERNAL = 1024   /* initializers marked as stored outside the file */
};
void fixture_onnx(const model* m, const char* path, unsigned variant);
/* FIXTURE_ONNX_NORM's scale, bias, mean and variance of output channel c. */
void fixture_onnx_norm(int c, float v[4]);

#endif
