/* The onednn engine: the fast CPU engine, on oneDNN (Intel's deep-learning kernels, the ones
   PyTorch's CPU convolutions use; Debian's libdnnl-dev). A host engine like the reference: a
   batch's images become their N copies (augment/tta.h, the bits every engine makes), all copies
   of a tile of images go through the network together (onednn_net.h: every graph of model.h's
   layers, convolutions in oneDNN's own layouts with what follows them fused in), and each
   image's N softmax outputs are merged (augment/merge.h). fp32 throughout; the threads (OpenMP,
   oneDNN's own runtime) from the engine's options.

   Tiles: a batch runs in tiles of about 64 rows (copies) a thread, so that a tile's activations
   stay in the cores' caches; the last, partial tile in a net planned for the next power of two
   of images (nets planned on first use and kept). An image's result is the same bits in any
   tile, at any position, with any number of threads (tests/unit/test_onednn.c and
   test_onednn_graph.c check it): the kernels sum each output in an order that depends on the
   layer's shape, not on the batch. The one exception oneDNN makes, a single row, is never
   planned (a net has 2 rows or more).

   Tolerance against the reference (tests/unit/test_layers.c per layer, test_onednn.c and
   test_onednn_graph.c whole): fp32 sums in oneDNN's order against the reference's double sums,
   the affine layers folded into the convolution before them, and oneDNN's own approximations
   of exp, tanh, erf and the activations built on them; the same bounds as the GPU engines'
   fp32. Max pooling and clip do not propagate NaN as the reference does, so the engine refuses
   models with a weight or bias that is not finite (auto then takes the reference). */
#ifndef TTP_ONEDNN_ENGINE_H
#define TTP_ONEDNN_ENGINE_H

#include <stddef.h>

#include "../engine.h"

extern const host_engine_ops onednn_engine_ops;

/* engine_entry.supports, .supports_model and .run_layer (engine.h). */
int onednn_engine_supports(const model_layer* l, const engine_config* c, char* why, size_t n);
int onednn_engine_supports_model(const model* m, const engine_config* c, char* why, size_t n);
ttp_status onednn_engine_run_layer(const model_layer* l, int n, const engine_config* c,
                                   int use_graph, const float* in, float* out, size_t guard,
                                   ttp_err* e);

#endif
