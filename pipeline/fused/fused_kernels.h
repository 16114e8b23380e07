/* The fused engine's kernels (fused_kernels.cu): the whole augmented pass of a batch in three
   stages (four launches; small batches all four in one launch, fused_small); conv1's outputs
   stay on chip, act1, act2 and fc1's outputs make one trip each through device memory
   (fused_kernels.cu says why):

     stage 1  augment + conv1 + bias + [ReLU] + max-pool     images -> act1 (rows, K1, P1, Q1)
     stage 2  conv2 + bias + [ReLU] + max-pool               act1 -> act2 (rows, F = K2 P2 Q2)
     stage 3  fc1 + bias + ReLU + [LRN] + fc2 + bias + softmax + the merge of the N copies
                                                             act2 -> one record per image

   rows = images x N copies, copy c of image i at row i N + c. Two precisions (fused_shape.half):
     fp32  FFMA throughout; act1 and act2 fp32, CHW per row (the model's order). Batches that
           fill the GPU take "wide" kernels (fused_shape.wide): conv2 register-tiled over a
           block's copies, fc1 a GEMM of its own like fp16's; smaller ones kernels that spread a
           copy's work over more threads. Both sum every output in the same order: same bits.
     fp16  conv1 in fp32 FFMA as in fp32 (the copies are fp32), its output rounded to fp16;
           conv2 and fc1 on the tensor cores (mma.sync m16n8k16, fp16 in, fp32 accumulation);
           LRN, fc2, softmax and the merge in fp32. act1 fp16 HWC per row with the channels
           padded to fused_c1_pad (zeros), act2 fp16 CHW per row padded to fused_act2_pitch
           (zeros); weights of conv2 and fc1 in the tensor cores' fragment order
           (fused_pack_weights).
   Stage 3 is two launches: fc1 over all rows (fp32 outputs to a workspace in device memory),
   then the rest.
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
  int half;                                    /* fp16 (tensor cores), else fp32 */
  /* fp32's batch-wide kernels (stage 2 register-tiled, fc1 a GEMM of its own): 0 where the batch
     fills the GPU (the engine), 1 wherever the shape allows them, -1 never (tests: both). */
  int wide;
  int small_fit; /* blocks of the small batches' kernel a multiprocessor holds (prepare) */
} fused_shape;

/* Channels padded to whole groups of 8: conv1's outputs (act1's channels in fp16), conv2's
   outputs (the fp32 weights' rows and the tensor cores' n tiles). (AUG_FN, tta_core.h: host and
   device.) */
AUG_FN int fused_c1_pad(const fused_shape* s) { return (s->k1 + 7) / 8 * 8; }
AUG_FN int fused_k2_pad(const fused_shape* s) { return (s->k2 + 7) / 8 * 8; }

/* conv1's weights' row: its channels padded to stage 1's groups of 4 (one 16-byte load a tap). */
AUG_FN int fused_k1_pitch(const fused_shape* s) { return (s->k1 + 3) / 4 * 4; }

/* fp16 stage 2: conv2's outputs of a copy as tensor-core rows, four a pooled position (its 2x2
   window), 16 a tile; a warp takes two tiles of one copy. */
AUG_FN int fused_stage2_tile_pairs(const fused_shape* s) {
  return ((s->p2_h * s->p2_w + 3) / 4 + 1) / 2;
}

/* Stage 2's copies a block. fp32: one warp's lanes hold (copy, pooled position) pairs; fp16: up
   to 8 warps, fused_stage2_tile_pairs of them a copy. */
AUG_FN int fused_stage2_copies(const fused_shape* s) {
  if (s->half) {
    const int c = 8 / fused_stage2_tile_pairs(s);
    return c > 0 ? c : 1;
  }
  return 32 / (s->p2_h * s->p2_w);
}

/* fp16: act2's row pitch, fc_in rounded up to fc1's k chunks of 32 (the padding zeros). */
AUG_FN int fused_act2_pitch(const fused_shape* s) {
  return s->half ? (s->fc_in + 31) / 32 * 32 : s->fc_in;
}

/* Stage 3's most images a block: rows = images x N up to 32 (N when N > 32: two row groups). */
AUG_FN int fused_stage3_images(int copies) { return copies >= 32 ? 1 : 32 / copies; }

/* Device weights. Biases are never NULL (zeros where the model has none). */
typedef struct fused_weights {
  const float *w1, *b1;  /* conv1 by tap: 25 x fused_k1_pitch (zeros beyond k1) */
  const float *w2t, *b2; /* conv2 by input channel and tap: k1 x 25 x fused_k2_pad (zeros) */
  const float *w3t, *b3; /* fc1 transposed: fc_in x fc_out */
  const float *w4, *b4;  /* classes x fc_out */
  /* fp16 only (fused_pack_weights): conv2's and fc1's weights as the tensor cores' B
     fragments, per (k step of 16, n tile of 8) 32 lanes of 4 halves. */
  const void *w2h, *w3h;
  /* fp32, where the small batches' kernel takes fc1 whole (else NULL): fc1's weights in blocks
     of 32 outputs, [fc_out / 32][fc_in][32], so that an item's are one contiguous copy. */
  const float* w3b;
  /* The copies' weights in the merge (device, s->copies floats summing to 1: aug_spec's), or
     NULL: every copy alike. */
  const float* merge_w;
} fused_weights;

/* The bytes of packed weights (fp16: fragments; fp32: fc1's blocks, or 0), and their packing
   from w's fp32 weights into packed, which w2h and w3h or w3b then point into (run once, before
   the first launch). */
size_t fused_packed_bytes(const fused_shape* s);
ttp_status fused_pack_weights(const fused_shape* s, fused_weights* w, void* packed,
                              cudaStream_t stream, ttp_err* e);

/* The bytes of one row's act1 (stage 1) or act2 (stage 2) in the kernels' layout. */
size_t fused_act_bytes(const fused_shape* s, int stage);

/* The shared memory the launches need beyond 48 KB: set once, before the first launch; fills
   s->small_fit. */
ttp_status fused_kernels_prepare(fused_shape* s, ttp_err* e);

ttp_status fused_stage1(const fused_shape* s, const aug_spec* spec, const fused_weights* w,
                        const uint8_t* images, int count, void* act1, cudaStream_t stream,
                        ttp_err* e);
ttp_status fused_stage2(const fused_shape* s, const fused_weights* w, const void* act1, int rows,
                        void* act2, cudaStream_t stream, ttp_err* e);
/* records: count records of aug_merge_record_size(classes) bytes (augment/merge_kernel.h).
   hidden: fused_hidden_bytes a row of workspace (fc1's outputs). */
size_t fused_hidden_bytes(const fused_shape* s);
ttp_status fused_stage3(const fused_shape* s, ttp_merge merge, const fused_weights* w,
                        const void* act2, int count, float* hidden, void* records,
                        cudaStream_t stream, ttp_err* e);

/* Small batches (up to FUSED_SMALL_MAX images): the whole pass, images to records, in one
   launch (fused_kernels.cu says how), with the same bits as stages 1 to 3. act1, act2 and hidden
   as for the stages; sync: FUSED_SMALL_SYNC counters, zero before the first launch, then used by
   launches of this `count` only, one after another (a stream's order). trace: NULL, or (the
   kernel lab) 4 numbers per item: device timestamps in ns when its block took it (a block's
   first item: when the block began), when the stage before it was done and when it was done,
   then its stage (0 .. FUSED_SMALL_STAGES - 1) plus 16 times the SM clock cycles the item took;
   fused_small_items items (FUSED_SMALL_STAGES: all stages; 0 .. FUSED_SMALL_STAGES - 1: one). */
enum { FUSED_SMALL_MAX = 64, FUSED_SMALL_STAGES = 4, FUSED_SMALL_SYNC = FUSED_SMALL_STAGES + 1 };
ttp_status fused_small(const fused_shape* s, const aug_spec* spec, ttp_merge merge,
                       const fused_weights* w, const uint8_t* images, int count, void* act1,
                       void* act2, float* hidden, void* records, unsigned long long* sync,
                       unsigned long long* trace, cudaStream_t stream, ttp_err* e);
int fused_small_items(const fused_shape* s, int count, int stage);

/* Test-only: rows of act1 (stage 1) or act2 (stage 2) between fp32 CHW (the CPU reference's
   layout) and the kernels' layout, on the device (to_kernel: from chw into kernel, else back). */
ttp_status fused_act_convert(const fused_shape* s, int stage, int rows, int to_kernel,
                             float* chw, void* kernel, cudaStream_t stream, ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
