/* A run of a model's layers as oneDNN primitives, planned for a fixed number of rows (augmented
   copies): the onednn engine's network. Plan, then run: onednn_net_plan creates every primitive
   and memory, lays the weights out as the primitives want them (once) and chains the layers,
   each in the layout oneDNN chooses for it (reorders only where two layers disagree);
   onednn_net_run only executes them.

   The rows go in as plain floats (rows x C x H x W of the first layer's input, written by the
   caller into onednn_net_input) and come out as plain floats (rows x C x H x W of the last
   layer's output, onednn_net_output). A pointwise layer after a convolution or a fully connected
   layer runs inside it (a post-op); a softmax runs on the host (cpu_softmax: the reference's
   own function, double sums), on plain rows. */
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

/* Plans layers[0 .. count-1] for `rows` rows, 2 at least (oneDNN sums a lone row in another
   order than it sums each of several, so that one image alone would not get the bits it gets
   in a batch; a second row, zeros, costs little). The layers (and their weights) must outlive
   the net only until this returns: the net keeps its own copies of the weights. */
ttp_status onednn_net_plan(const onednn_context* ctx, const model_layer* layers, int count,
                           int rows, onednn_net** net, ttp_err* e);

/* Runs every layer on the rows in onednn_net_input; waits for the end. */
ttp_status onednn_net_run(onednn_net* net, ttp_err* e);

float* onednn_net_input(onednn_net* net);        /* rows x the first layer's input */
const float* onednn_net_output(const onednn_net* net); /* rows x the last layer's output */

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
