/* Test-time augmentation on the CPU: the spec taken from the public ttp_tta, the image key, and
   the N copies of an image as float, exactly as the CUDA kernel makes them (tta_core.h holds the
   arithmetic both share). */
#ifndef TTP_AUGMENT_TTA_H
#define TTP_AUGMENT_TTA_H

#include <stddef.h>
#include <stdint.h>

#include "../pipeline/error.h"
#include "tta_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { AUG_MAX_SHIFT = 16 };

/* Checks t's ranges and turns it into an aug_spec, a merge mode and (temperature not NULL) the
   temperature applied after the merge (t NULL: one copy, as it is). Refusals name the field and its allowed
   range. */
ttp_status aug_spec_from(const ttp_tta* t, aug_spec* out, ttp_merge* merge, float* temperature,
                         ttp_err* e);

/* Whether t draws geometric views: a mirror, a rotation, a scale or a sub-pixel translation
   (a full structure's fields: after aug_spec_from's widening, or t's own). */
int aug_draws_views(const ttp_tta* t);

/* Sets the spec's input scaling (tta_core.h) for an input of `channels` channels: off where
   every channel's is mean 0, std 1 (the copies' bits are then those of no scaling at all). */
void aug_spec_scale(aug_spec* s, const float mean[3], const float std[3], int channels);

/* The 64-bit key of an image of n pixels: the only thing besides the seed and the copy index
   that its augmentation depends on. */
uint64_t aug_image_key(const uint8_t* pixels, size_t n);

/* Copy `copy` (0..N-1) of an image of channels x rows x cols bytes (planar), as as many floats
   in out. */
void aug_make_copy(const aug_spec* s, uint64_t key, int copy, const uint8_t* image, int channels,
                   int rows, int cols, float* out);

#ifdef __cplusplus
}
#endif

#endif
