/* The model: a list of layers with their weights in host memory, built once (by a reader here: onnx.h, mnistcudnn.h)
   and then only read by the engines. model_infer_shapes walks the list from the input, works out
   every layer's input and output shape and weight sizes, and refuses a layer that does not fit;
   model_check adds that every weight is present and the labels match the classes. After
   model_check an engine may trust every shape and size in the model.

   Shapes are of one image (one augmented copy): channels c, rows h, columns w, in that order in
   memory (CHW). Engines put the batch dimension in front. */
#ifndef TTP_MODEL_H
#define TTP_MODEL_H

#include <stddef.h>

#include "../pipeline/error.h"

typedef enum model_op {
  MODEL_CONV,    /* cross-correlation K x C x R x S, stride, zero padding, + bias */
  MODEL_MAXPOOL, /* R x S window, stride, padding (never chosen: -infinity); NaN propagates */
  MODEL_RELU,
  MODEL_FC,      /* weights row-major [out][in] over the CHW-flattened input, + bias */
  MODEL_LRN,     /* across channels, cuDNN's definition (see cpu_layers.h) */
  MODEL_SOFTMAX, /* over the whole C x H x W vector of an image */
  MODEL_AVGPOOL, /* R x S window, stride, zero padding; the divisor R x S (count_pad) or the
                    window's positions inside the input */
  MODEL_LEAKY_RELU, /* y = x for x >= 0, alpha x below */
  MODEL_SIGMOID,    /* y = 1 / (1 + exp(-x)) */
  MODEL_TANH,
  MODEL_CLIP,       /* y = min(max(x, lo), hi); NaN propagates */
  MODEL_OP_COUNT
} model_op;

typedef struct model_shape {
  int c, h, w;
} model_shape;

typedef struct model_layer {
  model_op op;
  char name[32];
  union {
    struct { int k, r, s, stride, pad; } conv; /* k output channels, r x s filter */
    struct { int r, s, stride, pad, count_pad; } pool; /* maxpool and avgpool; pad < r, s */
    struct { int out; } fc;
    struct { int n; double alpha, beta, k; } lrn;
    struct { float alpha; } leaky;
    struct { float lo, hi; } clip;
  } p;
  float* weights; /* conv: k x c x r x s; fc: out x in; owned by the model */
  float* bias;    /* conv: k; fc: out; owned by the model; NULL means no bias */

  /* Set by model_infer_shapes: */
  model_shape in, out;
  size_t weight_count, bias_count; /* 0 for layers without weights */
  double macs;                     /* multiply-adds per image (conv and fc only) */
} model_layer;

/* How pixels become the network's input, after the augmentation: (v - mean[c]) / std[c] for
   channel c, v the augmented copy's value in [0, 1] (the pixel / 255 for copy 0). */
typedef struct model_scaling {
  float mean[3], std[3];
} model_scaling;

/* The scalings ttapipe takes, from a model's file or the caller's options alike. */
#define MODEL_MEAN_MAX 16.0   /* each mean in -16..16 */
#define MODEL_STD_MIN 1e-6    /* each std in 1e-6..1e6 */
#define MODEL_STD_MAX 1e6
static inline int model_mean_ok(double v) { return v >= -MODEL_MEAN_MAX && v <= MODEL_MEAN_MAX; }
static inline int model_std_ok(double v) { return v >= MODEL_STD_MIN && v <= MODEL_STD_MAX; }

typedef struct model {
  model_shape input;
  model_scaling scaling; /* model_new: mean 0, std 1 (pixels / 255 as they are) */
  model_layer* layers;
  int layer_count;
  int layer_capacity;
  int classes;     /* the last layer's output size, set by model_infer_shapes */
  int softmax_added; /* the reader appended the softmax to a graph that ended in logits */
  char** labels;   /* NULL, or label_count class names owned by the model */
  int label_count; /* model_check requires it to equal classes when labels are given */
} model;

/* Lifecycle. model_new returns NULL (and records why) when out of memory. model_free accepts
   NULL and half-built models. */
model* model_new(model_shape input, ttp_err* e);
void model_free(model* m);

/* Appends a layer of the given op with all parameters zero; the caller sets l->p and, after
   model_infer_shapes, the weights. Returns NULL (recorded) when out of memory. */
model_layer* model_add(model* m, model_op op, const char* name, ttp_err* e);

ttp_status model_infer_shapes(model* m, ttp_err* e);
ttp_status model_check(model* m, ttp_err* e);

/* "conv", "maxpool", ... Static text. */
const char* model_op_name(model_op op);
/* The layer's parameters in words ("20x1x5x5 stride 1 pad 0"), into buf of n bytes. */
void model_describe(const model_layer* l, char* buf, size_t n);

/* Largest C x H x W over the input and every layer's output: the size of an activation buffer. */
size_t model_max_activation(const model* m);
/* Weights plus biases of every layer. */
long long model_parameter_count(const model* m);

static inline size_t model_shape_size(model_shape s) { return (size_t)s.c * s.h * s.w; }

#endif
