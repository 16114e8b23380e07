/* A model's graph of layers as oneDNN primitives, planned for a fixed number of rows (augmented
   copies): the onednn engine's network. Plan, then run: onednn_net_plan creates every primitive
   and memory, lays the weights out as the primitives want them (once) and places every value;
   onednn_net_run only executes the steps.

   Values. Each value of the model (model.h: the input, each layer's output) gets a oneDNN
   memory in the layout its producer chose: convolutions pick their own (channels last for the
   brgemm kernels of AVX-512, channels in blocks of 8 or 16 for others), and the layers after
   them (pooling, binary, eltwise, concat, shuffle, PReLU, LRN) take whatever layout their input
   has; a reorder runs only where a consumer wants another (a convolution or inner product whose
   input is laid out otherwise, a binary layer's second input of its first's shape in another
   layout; the host loops, slices and reshapes, which read plain nchw), once for all the value's
   readers. A pointwise or binary layer writes over its input where nothing reads that later. A
   value's buffer is given to later values once its last reader has run: every buffer has a
   lifetime (the first and the last step that touch it) and an offset in one arena, the largest
   placed first, each at the lowest offset free throughout its lifetime (the idea of
   model/plan.h's arena, in bytes of oneDNN's layouts); the input and the output have buffers of
   their own, kept for the whole run.

   Fusions (each within the tolerance of the reference, tests/unit/test_onednn_graph.c): a
   convolution or inner product takes the per-channel affine layers after it into its weights
   and bias, and the pointwise layers after it as eltwise post-ops; a convolution takes the
   residual Add after it as a sum post-op, accumulating into the Add's other input where that
   was made before the convolution and is read by nothing after the Add (ResNet's conv -> add
   -> relu is one primitive). Binary layers and standalone affines (oneDNN's binary primitive)
   take the pointwise layers after them as post-ops too. A layer is fused only into the one
   producer it alone reads.

   On the host, plain C loops of the reference (pipeline/cpu/cpu_layers.h) over plain rows, one
   thread: softmax (double sums), Pad, Erf (oneDNN 2.6 has none), average pooling whose divisor
   counts the padding where a ceil-mode window passes it (oneDNN would count the positions past
   the padding too), and slices whose steps oneDNN's strided views cannot express (the last
   step past the input's end). Everything else runs in oneDNN: convolution, inner product,
   pooling, eltwise, binary (Add, Sub, Mul, Div, affine), concat, shuffle, PReLU, LRN, and
   reorders for slices, reshapes and layouts.

   The rows go in as plain floats (rows x C x H x W of the model's input, written by the caller
   into onednn_net_input) and come out as plain floats (rows x C x H x W of the model's output,
   onednn_net_output). */
#ifndef TTP_ONEDNN_NET_H
#define TTP_ONEDNN_NET_H

#include <stddef.h>

#include <oneapi/dnnl/dnnl.h>

#include "../error.h"
#include "../../model/model.h"

typedef struct onednn_net onednn_net;

/* The oneDNN engine and stream a net runs on (one CPU engine, one in-order stream). */
typedef struct onednn_context {
  dnnl_engine_t engine;
  dnnl_stream_t stream;
} onednn_context;

ttp_status onednn_context_open(onednn_context* ctx, ttp_err* e);
void onednn_context_close(onednn_context* ctx); /* accepts a zeroed context */

/* Plans model m (model_check'd, every layer one that onednn_engine_supports) for `rows` rows,
   2 at least (oneDNN sums a lone row in another order than it sums each of several, so that
   one image alone would not get the bits it gets in a batch; a second row, zeros, costs
   little). The model (and its weights) must outlive the net only until this returns: the net
   keeps its own copies of the weights and of the host loops' parameters. */
ttp_status onednn_net_plan(const onednn_context* ctx, const model* m, int rows, onednn_net** net,
                           ttp_err* e);

/* Runs every layer on the rows in onednn_net_input; waits for the end. */
ttp_status onednn_net_run(onednn_net* net, ttp_err* e);

float* onednn_net_input(onednn_net* net);              /* rows x the model's input */
const float* onednn_net_output(const onednn_net* net); /* rows x the model's output */

void onednn_net_free(onednn_net* net); /* accepts NULL */

/* Records a failed oneDNN call: "file:line: call: status". */
#define DNNL_TRY(e, call)                                                                   \
  do {                                                                                      \
    dnnl_status_t dnnl_status_ = (call);                                                    \
    if (dnnl_status_ != dnnl_success)                                                       \
      return ERR((e), dnnl_status_ == dnnl_out_of_memory ? TTP_ERR_OUT_OF_MEMORY            \
                                                         : TTP_ERR_INTERNAL,                \
                 "%s: %s", #call, onednn_status_name(dnnl_status_));                         \
  } while (0)

const char* onednn_status_name(dnnl_status_t s);

#endif
