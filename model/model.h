/* The model: layers in topological order, each reading earlier values (the network's input, or
   earlier layers' outputs) and making one; with their weights in host memory. Built once by a
   reader here (onnx.h, mnistcudnn.h) and then only read by the engines. model_infer_shapes
   walks the layers in order, works out every layer's input and output shape and weight sizes,
   and refuses a layer that does not fit; model_check adds that every weight is present and the
   labels match the classes. After model_check an engine may trust every shape and size in the
   model. Most models are chains (model_is_chain): each layer reads the one before.

   Shapes are of one image (one augmented copy): channels c, rows h, columns w, in that order in
   memory (CHW). Engines put the batch dimension in front. */
#ifndef TTP_MODEL_H
#define TTP_MODEL_H

#include <stddef.h>

#include "../pipeline/error.h"

typedef enum model_op {
  MODEL_CONV,    /* cross-correlation K x C/groups x R x S over the window (stride, padding,
                    dilation), + bias */
  MODEL_MAXPOOL, /* over the window (padding never chosen: -infinity); NaN propagates */
  MODEL_RELU,
  MODEL_FC,      /* weights row-major [out][in] over the CHW-flattened input, + bias */
  MODEL_LRN,     /* across channels, cuDNN's definition (see cpu_layers.h) */
  MODEL_SOFTMAX, /* over the whole C x H x W vector of an image */
  MODEL_AVGPOOL, /* over the window; the divisor its positions inside the padded input
                    (count_pad) or inside the input */
  MODEL_LEAKY_RELU, /* y = x for x >= 0, alpha x below */
  MODEL_SIGMOID,    /* y = 1 / (1 + exp(-x)) */
  MODEL_TANH,
  MODEL_CLIP,       /* y = min(max(x, lo), hi); NaN propagates */
  MODEL_ADD,        /* the sum of its inputs (2 to MODEL_MAX_INPUTS), elementwise; an input after
                       the first may be broadcast from C x 1 x 1 or 1 x 1 x 1 */
  MODEL_SUB,        /* inputs[0] - inputs[1], broadcast as MODEL_ADD's */
  MODEL_MUL,        /* inputs[0] * inputs[1] (squeeze-and-excitation's gate), broadcast so */
  MODEL_DIV,        /* inputs[0] / inputs[1], broadcast so */
  MODEL_AFFINE,     /* per channel: x scale[c] + shift[c] (weights: scale, bias: shift; C each, or
                       1 for every channel): a BatchNorm that does not fold, a constant's Add,
                       Sub, Mul or Div */
  MODEL_CONCAT,     /* its inputs' channels, one input after the other (the same H x W) */
  MODEL_SLICE,      /* channels c0 .. c1 - 1; rows h0, h0 + step_h, ... below h1; columns
                       likewise: a Split's part, a crop, a Slice with steps (x[:, :, ::2, ::2]) */
  MODEL_PAD,        /* value before and after the channels, rows and columns */
  MODEL_SHUFFLE,    /* channel shuffle of g groups: input channel i (C/g) + j is output j g + i */
  MODEL_HARDSWISH,  /* x min(max(x + 3, 0), 6) / 6 */
  MODEL_HARDSIGMOID, /* min(max(alpha x + beta, 0), 1) */
  MODEL_GELU,       /* x (1 + erf(x / sqrt 2)) / 2 */
  MODEL_ERF,
  MODEL_ELU,        /* x for x > 0, alpha (exp(x) - 1) below */
  MODEL_PRELU,      /* x for x >= 0, slope[c] x below (weights: C slopes, or 1 for every channel) */
  MODEL_SOFTPLUS,   /* log(1 + exp(x)) */
  MODEL_MISH,       /* x tanh(softplus(x)) */
  MODEL_RESHAPE,    /* the same values in CHW order, read as c x h x w (p.reshape): what a Reshape
                       or Flatten is where the next layer needs channels that are not the input's */
  MODEL_OP_COUNT
} model_op;

typedef struct model_shape {
  int c, h, w;
} model_shape;

/* A convolution's or pooling's window over the input: R x S positions, stride_h rows and
   stride_w columns apart, dil_h and dil_w apart within the window (1: next to each other), over
   the input padded with pad_t rows on top, pad_b below, pad_l columns left and pad_r right. */
typedef struct model_window {
  int r, s;
  int stride_h, stride_w;
  int pad_t, pad_l, pad_b, pad_r;
  int dil_h, dil_w;
} model_window;

/* The values a layer reads: 0 is the network's input, i + 1 layer i's output. */
enum { MODEL_MAX_INPUTS = 32 };

typedef struct model_layer {
  model_op op;
  char name[32];
  int inputs[MODEL_MAX_INPUTS]; /* model_add sets inputs[0] to the last value: a chain */
  int input_count;
  union {
    struct { int k, groups; model_window w; } conv; /* k output channels */
    struct { model_window w; int count_pad, ceil; } pool; /* maxpool and avgpool; ceil: the
                       output's size rounded up (a last window may pass the padding) */
    struct { int out; } fc;
    struct { int n; double alpha, beta, k; } lrn;
    struct { float alpha; } leaky;
    struct { float lo, hi; } clip;
    struct { int c0, c1, h0, h1, w0, w1, step_h, step_w; } slice; /* ends excluded */
    struct { int c0, c1, h0, h1, w0, w1; float value; } pad; /* before and after */
    struct { int groups; } shuffle;
    struct { float alpha, beta; } hard; /* hardsigmoid */
    struct { float alpha; } elu;
    model_shape reshape;
  } p;
  float* weights; /* conv: k x c/groups x r x s; fc: out x in; affine: scale; prelu: slopes;
                     owned by the model */
  float* bias;    /* conv: k; fc: out; affine: shift; owned by the model; NULL means no bias */

  /* Set by model_infer_shapes: */
  model_shape in, out;             /* in: inputs[0]'s shape */
  size_t weight_count, bias_count; /* 0 for layers without weights */
  double macs;                     /* multiply-adds per image (conv and fc only) */
} model_layer;

/* The window of r x s positions, stride and padding the same on every side, no dilation: what
   every engine takes. */
static inline model_window model_window_of(int r, int s, int stride, int pad) {
  return (model_window){r, s, stride, stride, pad, pad, pad, pad, 1, 1};
}
/* Whether w is such a window (model_window_of's). */
static inline int model_window_plain(const model_window* w) {
  return w->stride_h == w->stride_w && w->pad_t == w->pad_l && w->pad_t == w->pad_b &&
         w->pad_t == w->pad_r && w->dil_h == 1 && w->dil_w == 1;
}

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

/* Appends a layer of the given op with all parameters zero, reading the last value (the
   network's input, or the last layer's output: a chain); the caller sets l->p (and other
   inputs) and, after model_infer_shapes, the weights. Returns NULL (recorded) when out of
   memory. */
model_layer* model_add(model* m, model_op op, const char* name, ttp_err* e);

/* Every layer's input and output shapes and weight sizes, in order, from the values it reads
   (each an earlier one: the layers are in topological order); refuses a layer whose inputs do
   not fit it. */
ttp_status model_infer_shapes(model* m, ttp_err* e);
/* Layer i's shapes alone (its inputs' already inferred): what a reader building the model
   layer by layer needs to know of the values it has made. */
ttp_status model_infer_layer(model* m, int i, ttp_err* e);
/* Keeps layer root and the layers it reads, directly or not, and removes the others (root then
   is the last), renumbering the inputs of those that remain. */
ttp_status model_prune(model* m, int root, ttp_err* e);
ttp_status model_check(model* m, ttp_err* e);

/* "conv", "maxpool", ... Static text. */
const char* model_op_name(model_op op);
/* The layer's parameters in words ("20x1x5x5 stride 1 pad 0"), into buf of n bytes. */
void model_describe(const model_layer* l, char* buf, size_t n);

/* Largest C x H x W over the input and every layer's output: the size of an activation buffer. */
size_t model_max_activation(const model* m);

/* The shape of value v (0: the input, i + 1: layer i's output). */
model_shape model_value_shape(const model* m, int v);

/* Whether every layer reads the one before it alone (the input, for the first): a chain, what
   the engines that run layer after layer take. 0, and the first layer that does not, in *at. */
int model_is_chain(const model* m, int* at);
/* Weights plus biases of every layer. */
long long model_parameter_count(const model* m);

static inline size_t model_shape_size(model_shape s) { return (size_t)s.c * s.h * s.w; }

#endif
