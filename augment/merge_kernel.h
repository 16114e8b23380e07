/* The merge on the GPU: one thread per image runs merge_core.h's merge_image, the same code as
   the CPU. Launch only (capture-safe). */
#ifndef TTP_AUGMENT_MERGE_KERNEL_H
#define TTP_AUGMENT_MERGE_KERNEL_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "../pipeline/error.h"
#include "merge_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes of one image's record: a ttp_result, its classes merged floats, then its
   MERGE_EXTRAS (merge_core.h) floats. */
static inline size_t aug_merge_record_size(int classes) {
  return sizeof(ttp_result) + ((size_t)classes + MERGE_EXTRAS) * sizeof(float);
}

/* Where a record's extras begin. */
static inline size_t aug_merge_extras_offset(int classes) {
  return sizeof(ttp_result) + (size_t)classes * sizeof(float);
}

/* probs: device, count x copies x classes floats (the softmax outputs of each image's copies,
   in order). records: device, count records of aug_merge_record_size(classes) bytes. weights:
   host, the copies' (aug_spec_weights), or NULL; passed by value with the launch. */
ttp_status aug_merge_launch(ttp_merge mode, const float* weights, const float* probs, int count,
                            int copies, int classes, void* records, cudaStream_t stream,
                            ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
