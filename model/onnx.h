/* ONNX models (a ModelProto file, as PyTorch's torch.onnx.export writes it): the graph must be a
   chain, each node taking the output of the one before, of the operators ttapipe's layers
   implement, with every weight an initializer inside the file and every shape static. */
#ifndef TTP_MODEL_ONNX_H
#define TTP_MODEL_ONNX_H

#include "model.h"

/* The largest ONNX file read (the shipped LeNet is 1.7 MB). */
enum { ONNX_MAX_BYTES = 256 << 20 };

/* Reads path into a model (model.h) and checks it (model_check). Operators: Conv (group
   1, no dilation, equal strides, symmetric equal padding), MaxPool (no padding, no ceil mode),
   Relu, Gemm (alpha = beta = 1; B as [out][in] with transB = 1 or [in][out] with transB = 0),
   Flatten (axis 1) and Reshape to one row a image, LRN, Softmax over a flat vector,
   BatchNormalization right after a Conv or Gemm (folded into its weights and bias); Dropout and
   Identity are dropped. A graph that ends in logits gets a softmax ("softmax (added)"), which
   the merge needs. The input is [N,] C x H x W, float32, C, H and W fixed, H and W in 8..64;
   initializers float32 (raw or typed data) or float16 (converted), finite. Class names come
   from the model's metadata_props entry "labels" (one a line, as labels.txt), when it has one.
   Refuses, in one line naming the file and (where it applies) the node, its operator and the reason: an empty,
   unparsable or oversized file, another opset than 7..21 of the default domain, a node that does
   not continue the chain, an unsupported operator or attribute, a missing or ill-shaped
   initializer, a dynamic shape, weights stored outside the file. *out is NULL on failure. */
ttp_status io_load_onnx(const char* path, model** out, ttp_err* e);

#endif
