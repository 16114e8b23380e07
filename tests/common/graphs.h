/* Models that are graphs, not chains (model/model.h), built by hand with random weights on odd
   input sizes, for the tests that run graphs through an engine (test_graph: the CPU engine
   against a textbook reference; test_onednn_graph: the onednn engine against the CPU engine).
   Each builder returns a model that has passed model_check; the caller frees it (model_free).
   A failure to build is a test failure: the builders die loudly (check.h's CHECK). */
#ifndef TTP_TEST_GRAPHS_H
#define TTP_TEST_GRAPHS_H

#include "model/model.h"
#include "tests/common/check.h"

/* ---- building blocks ------------------------------------------------------------------------ */

/* Appends a layer of op reading value `input` (0 the input, i + 1 layer i's output). */
model_layer* graphs_add(model* m, model_op op, const char* name, int input);
/* The value layer l makes. */
int graphs_value(const model* m, const model_layer* l);
/* A convolution of k outputs in `groups` groups over window w. */
model_layer* graphs_conv(model* m, const char* name, int input, int k, int groups,
                         model_window w);
/* A layer of op over the n values inputs[0..n-1] (an Add, a Concat, ...). */
model_layer* graphs_join(model* m, model_op op, const char* name, int n, const int* inputs);
/* A window of r x s, strides sh x sw, pads top, left, bottom, right, dilation dh x dw. */
model_window graphs_window(int r, int s, int sh, int sw, int pt, int pl, int pb, int pr, int dh,
                           int dw);
/* Shapes (model_infer_shapes), then random weights for every layer that has them (convolutions
   and fc uniform in +-1.5/sqrt(fan-in), affine scales in 0.5..1.5, PReLU slopes in -1.5..0.4,
   biases and shifts in +-0.3), then model_check. */
void graphs_finish(model* m, test_rng* rng);

/* ---- the networks --------------------------------------------------------------------------- */

/* A CIFAR-like residual network on 3 x 17 x 15: stem, `blocks` basic blocks a stage (conv,
   BatchNorm kept as an affine, ReLU, conv, affine, the shortcut's Add, ReLU) over three stages,
   the first block of the later two strided with a 1x1 projection, global average pooling as a
   window of the whole map, fc, softmax. */
model* graphs_resnet(int blocks, test_rng* rng);

/* Residual blocks as a trained CIFAR ResNet's read once BatchNorm is folded into the
   convolutions, on 3 x 32 x 32: a stem of 16 channels, two basic blocks (conv, ReLU, conv, the
   shortcut's Add, ReLU), two convolutions in a row without a shortcut (the first clamped as
   PyTorch's ReLU6 exports: ReLU then Clip), the same at 32 channels over 16 x 16 after a strided
   convolution, global average pooling as a window of the whole map, fc, softmax: the six pairs
   of convolutions the cudnn engine runs as ttapipe's residual block kernel in fp16. */
model* graphs_blocks(test_rng* rng);

/* MobileNetV2's inverted residual blocks as the cudnn engine runs them in one kernel in fp16, on
   3 x 32 x 32: a stem of 16 channels, a block 16 -> 64 -> 16 with ReLU6s and the residual Add, one
   with a Clip to [-1, 2] after the expansion and no Add, one 16 -> 64 -> 24 with a depthwise
   stride of 2 (to 16 x 16), a strided convolution to 32 x 8 x 8, a block 32 -> 128 -> 32 with its
   Add, global average pooling as a window of the whole map, fc, softmax. */
model* graphs_inverted(test_rng* rng);

/* MobileNetV2-like on 3 x 16 x 14: a 1x1 projection, an inverted residual (1x1 expand, ReLU6,
   3x3 depthwise, HardSwish, squeeze-and-excitation: global pooling, 1x1 convs, HardSigmoid, the
   gate's Mul), 1x1 project, the residual Add with a third, scalar input; ReduceMean as a global
   pooling, fc, softmax. */
model* graphs_mobilenet(test_rng* rng);

/* MobileNet's blocks in widths that a GPU engine runs in NHWC (multiples of 8) on 3 x 17 x 15:
   stem, 1x1 expand, ReLU6, 3x3 depthwise, ReLU and a Clip (PyTorch's ReLU6 as exported), 1x1
   project and the residual Add; then two depthwise convolutions of stride 2, one of uneven
   padding, one dilated, added, ReLU; global average pooling, fc, softmax. */
model* graphs_depthwise(test_rng* rng);

/* DenseNet-like on 1 x 13 x 11, and the other layers: uneven padding, dilation, GELU, Concat
   of feature maps, an affine after the Concat, ELU, Mish, max pooling in ceil mode, average
   pooling of uneven padding not counted, PReLU, Softplus, Erf, a shuffle, a Split's slice, a
   channel and row Pad, the Sub and Div of two values, a reshape and an affine over its new
   channels, fc, softmax. */
model* graphs_densenet(test_rng* rng);

/* ResNet's option-A shortcut on 3 x 15 x 16: x[:, :, ::2, ::2] padded with zero channels, added
   to a strided block's output. */
model* graphs_option_a(test_rng* rng);

/* Every layer kind of model.h at least once, on 3 x 19 x 17, in the variants an engine may
   treat apart: a dilated grouped convolution of two strides and uneven padding, a depthwise
   one, convolutions whose activation, affine or residual Add an engine may fuse and ones
   whose output has two readers, Sub, Mul and Div broadcast from C x 1 x 1 and 1 x 1 x 1, an Add
   of four inputs, an affine of one value, every pointwise activation, LRN, a Slice with steps,
   Pad, Shuffle, PReLU of one slope and of one a channel, Concat, max pooling in ceil mode,
   average pooling with padding counted and not, a Reshape, fc, softmax. */
model* graphs_zoo(test_rng* rng);

/* The six networks above, in that order (resnet of `blocks` blocks a stage), with their names
   ("resnet, 3 blocks a stage", "mobilenet-like", ...) into names, each up to 48 bytes. */
enum { GRAPHS_COUNT = 6 };
void graphs_every(int blocks, test_rng* rng, model* models[GRAPHS_COUNT],
                  char names[GRAPHS_COUNT][48]);

#endif
