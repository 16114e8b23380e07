/* ONNX models (a ModelProto file, as PyTorch's torch.onnx.export writes it): a graph of
   operators over named tensors, with every weight inside the file and every shape static but
   the batch's. */
#ifndef TTP_MODEL_ONNX_H
#define TTP_MODEL_ONNX_H

#include "model.h"

/* The largest ONNX file read (the shipped LeNet is 1.7 MB). */
enum { ONNX_MAX_BYTES = 256 << 20 };

/* Reads path into a model (model.h) and checks it (model_check). The graph's nodes that the
   output needs are read in an order where each follows the makers of its inputs; a node whose
   inputs are all known at load (initializers, Constant nodes, Shape of a tensor and what is
   computed from those) is computed then (onnx_fold.c), the others become layers
   (onnx_layers.c: the operators in onnx_supported, each at the semantics of the opset the file
   declares, 7 to 21). BatchNormalization, and a constant's Add, Sub, Mul or Div, fold into the
   Conv, Gemm or affine layer before them when nothing else reads its output, and are affine
   layers otherwise; a Pad before a Conv or an AveragePool is their own padding where it can
   be; GELU written as Erf arithmetic (below opset 20) is one GELU layer. A graph that ends in
   logits (or a LogSoftmax) gets a softmax ("softmax (added)"), which the merge needs. The input
   is N x C x H x W, float32, N 1 or dynamic, C 1 or 3, H and W fixed in TTP_MIN_SIDE..
   TTP_MAX_SIDE; constants of any float or integer type (raw or typed), weights finite in
   float32. Class names come from the model's metadata_props entry "labels" (one a line, as
   labels.txt), the input's scaling from "mean" and "std". Refuses, in one line naming the file
   and (where it applies) the node, its operator and the reason: an empty, unparsable or
   oversized file, another opset than 7..21 of the default domain, two graph inputs or outputs,
   a dynamic dimension other than the batch's, a name made twice, an input nothing makes, a
   cycle, an unsupported operator or attribute, a shape mismatch, data stored outside the file.
   *out is NULL on failure. */
ttp_status io_load_onnx(const char* path, model** out, ttp_err* e);

#endif
