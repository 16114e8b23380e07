/* The fused engine: a network for the GPU runner (graph/runner.h) written here, four launches
   for the whole augmented pass (fused_kernels.h; the smallest batches one), no cuDNN or cuBLAS
   on its path; buckets up to FUSED_SMALL_MAX images write their records straight into the
   runner's mapped pinned output (direct_max). It runs one shape of model, LeNet's:

     conv 5x5 -> [ReLU] -> max-pool 2x2/2 -> conv 5x5 -> [ReLU] -> max-pool 2x2/2
       -> fc -> ReLU -> [LRN] -> fc -> softmax

   on one-channel inputs, within fused_kernels.h's limits; fp32 arithmetic (FFMA), or fp16 with
   conv2 and fc1 on the tensor cores (fused_kernels.h says what stays fp32). The registry
   uses fused_network, fused_supports and fused_supports_model; tests reach each stage by itself
   through fused_run_stage. */
#ifndef TTP_FUSED_ENGINE_H
#define TTP_FUSED_ENGINE_H

#include "../../graph/runner.h"
#include "../engine.h"
#include "fused_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per layer: the kinds the engine knows. The model as a whole: fused_supports_model. */
int fused_supports(const model_layer* l, const engine_config* c, char* why, size_t n);
/* Whether m has the engine's shape within its limits under c; if not, why (one phrase). */
int fused_supports_model(const model* m, const engine_config* c, char* why, size_t n);

extern const gpu_network_ops fused_network;

/* Test-only: one stage (1, 2, 3; fused_kernels.h) by itself on the current device, for `images`
   images (images x N rows), host memory to host memory, activations as the CPU has them (fp32
   CHW; in fp16 converted to and from the kernels' layouts on the device):
     1: in  images x input pixels (bytes)       out  rows x K1 P1 Q1 floats (act1)
     2: in  rows x K1 P1 Q1 floats              out  rows x fc_in floats (act2)
     3: in  rows x fc_in floats                 out  images records (augment/merge_kernel.h)
   wide: fused_shape.wide (0 as the engine chooses; 1 or -1 to reach fp32's batch-wide kernels
   or the others with any batch). */
ttp_status fused_run_stage(const model* m, const engine_config* c, int stage, int images,
                           int wide, const void* in, void* out, ttp_err* e);

/* Test-only: the whole pass on the current device, `images` images (bytes) to their records,
   host memory to host memory: the stages' launches (small 0) or the small batches' one launch
   (small 1: up to FUSED_SMALL_MAX images), the output poisoned before each pass; the last
   pass's records. trace: NULL, or (small 1) the last launch's trace, 4 numbers per item
   (fused_small), fused_small_items of them. Either way three passes one after another; ms: NULL,
   or the last one's time on the GPU (CUDA events). */
ttp_status fused_run_pass(const model* m, const engine_config* c, int images, int small,
                          const uint8_t* in, void* out, unsigned long long* trace, double* ms,
                          ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
