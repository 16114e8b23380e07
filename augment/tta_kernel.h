/* The CUDA kernel of test-time augmentation: all N copies of every image of a batch in one
   launch, straight from the batch's bytes. The arithmetic is tta_core.h's, compiled without
   fused multiply-adds, so the copies equal the CPU reference's (aug_make_copy) bit for bit.
   Launch only: no allocation, no synchronisation, no host read of device data; its arguments
   are plain values and device pointers, so a captured CUDA Graph serves every batch that is
   copied into the same input buffer. */
#ifndef TTP_AUGMENT_TTA_KERNEL_H
#define TTP_AUGMENT_TTA_KERNEL_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "tta.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aug_out_type { AUG_OUT_FLOAT = 0, AUG_OUT_HALF = 1 } aug_out_type;

/* images: device, count x channels x rows x cols bytes (planar). out: device, count x N copies
   of channels x rows x cols values of the given type, copy c of image i at index i N + c; half
   values are the float values rounded to nearest. channels 1..3; channels x rows x cols at most
   AUG_MAX_PIXELS. */
enum { AUG_MAX_PIXELS = 3 * 128 * 128 };
ttp_status aug_launch(const aug_spec* spec, const uint8_t* images, int count, int channels,
                      int rows, int cols, aug_out_type type, void* out, cudaStream_t stream,
                      ttp_err* e);

#ifdef __cplusplus
}
#endif

#endif
