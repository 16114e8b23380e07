/* The fused engine's kernels (fused_kernels.cu): the whole augmented pass of a batch in three
   launches, each of which keeps its layers' intermediates on chip:

     stage 1  augment + conv1 + bias + [ReLU] + max-pool     images -> act1 (rows, K1, P1, Q1)
     stage 2  conv2 + bias + [ReLU] + max-pool               act1 -> act2 (rows, F = K2 P2 Q2)
     stage 3  fc1 + bias + ReLU + [LRN] + fc2 + bias + softmax + the merge of the N copies
                                                             act2 -> one record per image

   rows = images x N copies, copy c of image i at row i N + c; activations fp32, CHW per row.
   Launch only (capture-safe): no allocation, no synchronisation. */
#ifndef TTP_FUSED_KERNELS_H
#define TTP_FUSED_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "../../augment/tta_core.h"
#include "../error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The limits of the kernels (the fused engine refuses other models with the reason). */
enum {
  FUSED_CONV = 5,        /* both convolutions R = S = 5, stride 1 */
  FUSED_MAX_PAD = 2,     /* zero padding 0..2 */
  FUSED_POOL = 2,        /* both poolings 2 x 2, stride 2 */
  FUSED_MAX_INPUT = 32,  /* input rows and columns, one channel */
  FUSED_MAX_K1 = 64,     /* conv1's output channels */
  FUSED_MAX_K2 = 64,     /* conv2's output channels */
  FUSED_MAX_P2Q2 = 32,   /* conv2's pooled positions per channel */
  FUSED_MAX_FC1 = 512,   /* fc1's outputs */
  FUSED_MAX_FC_IN = 4096,
  FUSED_MAX_CLASSES = 32,
  FUSED_MAX_COPIES = 64
};

/* The network's shape, as the kernels see it. */
typedef struct fused_shape {
  int in_h, in_w, copies;
  int k1, pad1, relu1, c1_h, c1_w, p1_h, p1_w; /* conv1 output c1, pooled p1 */
  int k2, pad2, relu2, c2_h, c2_w, p2_h, p2_w; /* conv2 (input channels k1) */
  int fc_in, fc_out;                           /* fc1: fc_in = k2 p2_h p2_w; ReLU after it */
  int lrn, lrn_n;                              /* LRN across fc1's outputs, if lrn */
  float lrn_alpha_n, lrn_beta, lrn_k;          /* alpha / n, beta, k */
  int classes;                                 /* fc2's outputs; softmax over them */
  int sms;                                     /* the device's multiprocessors */
} fused_shape;

/* Stage 2's copies a block: one warp's lanes hold (copy, pooled position) pairs. (AUG_FN,
   tta_core.h: host and device.) */
AUG_FN int fused_stage2_copies(const fused_shape* s) { return 32 / (s->p2_h * s->p2_w); }

/* Stage 3's most images a block: rows = images x N up to 32 (N when N > 32: two row groups). */
AUG_FN int fused_stage3_images(int copies) { return copies >= 32 ? 1 : 32 / copies; }

/* Device weights, fp32. Biases are never NULL (zeros where the model has none). */
typedef struct fused_weights {
  const float *w1, *b1; /* k1 x 25 */
  const float *w2, *b2; /* k2 x k1 x 25 */
  const float *w3t, *b3; /* fc1 transposed: fc_in x fc_out */
  const float *w4, *b4; /* classes x fc_out */
} fused_weights;

/* The shared memory the launches need beyond 48 KB: set once, before the first launch. */
ttp_status fused_kernels_prepare(const fused_shape* s, ttp_err* e);

ttp_status fused_stage1(const fused_shape* s, const aug_spec* spec, const fused_weights* w,
                        const uint8_t* images, int count, float* act1, cudaStream_t stream,
                        ttp_err* e);
ttp_status fused_stage2(const fused_shape* s, const fused_weights* w, const float* act1, int rows,
                        float* act2, cudaStream_t stream, ttp_err* e);
/* records: count records of aug_merge_record_size(classes) bytes (augment/merge_kernel.h). */
ttp_status fused_stage3(const fused_shape* s, ttp_merge merge, const fused_weights* w,
                        const float* act2, int count, void* records, cudaStream_t stream,
                        ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
