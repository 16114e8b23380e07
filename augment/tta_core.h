/* The arithmetic of test-time augmentation, shared word for word by the CPU reference (tta.c,
   compiled by the C compiler) and the CUDA kernel (tta_kernel.cu, compiled by nvcc), so that both
   produce the same bits.

   What keeps them equal:
   - integers (Philox, the pixel hash, the shifts) are exact on both;
   - every float operation is a single IEEE operation rounded to nearest, in the order written:
     tta.c is compiled with -ffp-contract=off and tta_kernel.cu with -fmad=false, so that no
     compiler fuses a multiply and an add; division and sqrtf are correctly rounded on both
     (nvcc's defaults -prec-div=true -prec-sqrt=true; never --use_fast_math here);
   - the only transcendental functions (the logarithm and sine/cosine of the Gaussian noise) are
     written here from those operations rather than taken from two different math libraries.

   The random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
   3", SC'11) with key = the 64-bit seed and counter = (image key low, image key high, copy,
   purpose << 24 | block). The image key is a hash of the image's pixels whose terms are summed
   modulo 2^64, so the order of the sum does not matter and a GPU block can reduce it in
   parallel. A copy's augmentation is therefore a function of (seed, copy, pixels) alone. */
#ifndef TTP_TTA_CORE_H
#define TTP_TTA_CORE_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define AUG_FN static __host__ __device__ __forceinline__
#else
#define AUG_FN static inline
#endif

enum { AUG_MAX_VIEWS = 16, AUG_MAX_COPIES = 64 };

/* One view of a list: its inverse map (aug_params' m00 .. ty). */
typedef struct aug_view {
  float m00, m01, m10, m11, tx, ty;
  float ex, ey; /* a crop's anchor: tx + ex (cols / 2), ty + ey (rows / 2); else 0 */
} aug_view;

/* The augmentation of one pipeline, validated (aug_spec_from in tta.h). Plain data: it is passed
   by value to the CUDA kernel. */
typedef struct aug_spec {
  int copies;        /* N, 1..64 */
  int keep_original; /* copy 0 is the image as it is */
  int shift;         /* S: dx, dy uniform in -S..S */
  int clamp;         /* clamp to [0, 1] */
  int gaussian;      /* noise Gaussian with standard deviation `noise`, else uniform in +-noise */
  float contrast_lo, contrast_hi;
  float brightness_lo, brightness_hi;
  float noise;
  uint32_t seed_lo, seed_hi;
  /* The model's input scaling, applied last: (v - mean[c]) / std[c] for channel c, when scaled
     (aug_spec_from leaves it off: mean 0, std 1, and the pipeline sets it from the model). */
  int scaled;
  float mean[3], std[3];
  /* The geometric views (ttp_tta's flip_h .. edge): when `geometric`, every copy but a kept
     original goes through aug_copy_geometry's sampling, else through the whole-pixel shift
     alone, as before these views existed. */
  int geometric;
  float flip_h, flip_v;       /* the probability of each mirror */
  float rotate_turns;         /* largest rotation, in turns (degrees / 360) */
  float scale_lo, scale_hi;   /* zoom about the centre */
  float translate;            /* largest sub-pixel translation, in pixels */
  int edge;                   /* aug_edge */
  /* A list of views (ttp_tta.views): copy c is view c, its inverse map worked out once on the
     host (aug_spec_from), so that every device reads the same floats; no geometry is drawn. */
  int view_count;
  aug_view views[AUG_MAX_VIEWS];
  /* The copies' weights in the merge (ttp_tta.weights), scaled to sum to 1, when `weighted`;
     else every copy counts alike (merge_core.h's NULL). */
  int weighted;
  float weights[AUG_MAX_COPIES];
} aug_spec;

/* The weights the merge takes (merge_core.h): the spec's, or NULL for equal ones. */
static inline const float* aug_spec_weights(const aug_spec* s) {
  return s->weighted ? s->weights : NULL;
}

/* What enters a geometric view from outside the image. */
enum aug_edge { AUG_EDGE_ZERO = 0, AUG_EDGE_REPLICATE = 1, AUG_EDGE_REFLECT = 2 };

/* One copy's parameters. */
typedef struct aug_params {
  int dx, dy; /* the image moves right by dx and down by dy; what enters is black */
  float contrast, brightness;
  int identity; /* copy 0 kept as it is: no change and no noise */
  /* Geometric (spec's geometric, not identity): the source point of an output pixel at (u, v)
     from the centre is (m00 u' + m01 v', m10 u' + m11 v') from the centre, u' = u - tx,
     v' = v - ty. */
  int geometric;
  float m00, m01, m10, m11, tx, ty;
  float ex, ey; /* a listed crop's anchor (aug_view); else 0 */
} aug_params;

enum { AUG_PURPOSE_PARAMS = 1, AUG_PURPOSE_NOISE = 2 };

/* ---- Philox4x32-10 ------------------------------------------------------------------------ */

typedef struct aug_u32x4 {
  uint32_t v[4];
} aug_u32x4;

AUG_FN uint32_t aug_mulhi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

AUG_FN aug_u32x4 aug_philox(aug_u32x4 ctr, uint32_t k0, uint32_t k1) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u; /* multipliers */
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u; /* Weyl key increments */
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += W0;
      k1 += W1;
    }
    uint32_t hi0 = aug_mulhi(M0, ctr.v[0]), lo0 = M0 * ctr.v[0];
    uint32_t hi1 = aug_mulhi(M1, ctr.v[2]), lo1 = M1 * ctr.v[2];
    aug_u32x4 next = {{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    ctr = next;
  }
  return ctr;
}

AUG_FN aug_u32x4 aug_random(const aug_spec* s, uint64_t key, uint32_t copy, uint32_t purpose,
                            uint32_t block) {
  aug_u32x4 ctr = {{(uint32_t)key, (uint32_t)(key >> 32), copy, purpose << 24 | block}};
  return aug_philox(ctr, s->seed_lo, s->seed_hi);
}

/* ---- the image key ------------------------------------------------------------------------ */

/* SplitMix64's finaliser: a bijection of 64-bit words that mixes every bit into every other. */
AUG_FN uint64_t aug_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The term of pixel `index` with value `value`; the key is aug_key_finish(sum of all terms). */
AUG_FN uint64_t aug_key_term(uint32_t index, uint32_t value) {
  return aug_mix64(((uint64_t)index << 8 | value) + 0x9E3779B97F4A7C15ull);
}

AUG_FN uint64_t aug_key_finish(uint64_t sum) { return aug_mix64(sum ^ 0x243F6A8885A308D3ull); }

/* ---- numbers from random words ------------------------------------------------------------ */

/* [0, 1) in steps of 2^-24: exact in float. */
AUG_FN float aug_unit(uint32_t r) { return (float)(r >> 8) * 5.9604644775390625e-8f; }

/* (0, 1] in steps of 2^-24, for the logarithm. */
AUG_FN float aug_unit_open(uint32_t r) { return (float)((r >> 8) + 1) * 5.9604644775390625e-8f; }

AUG_FN float aug_lerp(float lo, float hi, float u) { return lo + (hi - lo) * u; }

/* An integer uniform in -s..s, from the high bits of r * (2s + 1). */
AUG_FN int aug_shift_of(uint32_t r, int s) {
  return (int)(((uint64_t)r * (uint32_t)(2 * s + 1)) >> 32) - s;
}

/* Natural logarithm of x in (0, 1]: x = m 2^e with m in [sqrt(1/2), sqrt(2)), and
   log m = 2 atanh(f / (2 + f)), f = m - 1, by its series to the 9th power (error below 1e-9). */
AUG_FN float aug_log(float x) {
  int e;
  float m = frexpf(x, &e); /* m in [1/2, 1), exact */
  if (m < 0.70710678f) {
    m = m + m;
    e = e - 1;
  }
  float f = m - 1.0f;
  float s = f / (2.0f + f);
  float s2 = s * s;
  float series = 1.0f + s2 * (0.33333333f + s2 * (0.2f + s2 * (0.14285715f + s2 * 0.11111111f)));
  return (float)e * 0.69314718f + 2.0f * s * series;
}

/* Sine and cosine of 2 pi t, t in [0, 1): the quadrant from 4t, then Taylor series on the angle
   left in [0, pi/2) (to the 11th and 12th powers: error below 1e-7). */
AUG_FN void aug_sincos_turn(float t, float* sine, float* cosine) {
  float q4 = 4.0f * t; /* exact */
  int quadrant = (int)q4;
  float a = (q4 - (float)quadrant) * 1.57079633f;
  float a2 = a * a;
  float s = a * (1.0f + a2 * (-1.66666667e-1f + a2 * (8.33333333e-3f + a2 * (-1.98412698e-4f +
            a2 * (2.75573192e-6f + a2 * -2.50521084e-8f)))));
  float c = 1.0f + a2 * (-0.5f + a2 * (4.16666667e-2f + a2 * (-1.38888889e-3f + a2 *
            (2.48015873e-5f + a2 * (-2.75573192e-7f + a2 * 2.08767570e-9f)))));
  switch (quadrant) {
    case 0: *sine = s, *cosine = c; break;
    case 1: *sine = c, *cosine = -s; break;
    case 2: *sine = -s, *cosine = -c; break;
    default: *sine = -c, *cosine = s; break;
  }
}

/* ---- a copy's parameters and noise ---------------------------------------------------------- */

/* The inverse map of a view, a mirror after the inverse rotation and scale: the matrix
   F R(-a) / scale, a = turn (in turns, any sign, |turn| < 1) and F = diag(mirror_x, mirror_y).
   R(-a) = [cos sin; -sin cos] with y down: a positive angle turns the content clockwise. */
AUG_FN void aug_inverse_map(float mirror_x, float mirror_y, float turn, float scale, float* m00,
                            float* m01, float* m10, float* m11) {
  if (turn < 0.0f) turn = turn + 1.0f; /* aug_sincos_turn takes [0, 1) */
  if (turn >= 1.0f) turn = 0.0f;
  float sine, cosine;
  aug_sincos_turn(turn, &sine, &cosine);
  const float c = cosine / scale, sn = sine / scale;
  *m00 = mirror_x * c, *m01 = mirror_x * sn;
  *m10 = mirror_y * -sn, *m11 = mirror_y * c;
}

AUG_FN aug_params aug_copy_params(const aug_spec* s, uint64_t key, uint32_t copy) {
  aug_params p = {0, 0, 1.0f, 0.0f, 1, 0, 1.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  if (copy == 0 && s->keep_original) return p; /* the identity */
  aug_u32x4 r = aug_random(s, key, copy, AUG_PURPOSE_PARAMS, 0);
  p.dx = aug_shift_of(r.v[0], s->shift);
  p.dy = aug_shift_of(r.v[1], s->shift);
  p.contrast = aug_lerp(s->contrast_lo, s->contrast_hi, aug_unit(r.v[2]));
  p.brightness = aug_lerp(s->brightness_lo, s->brightness_hi, aug_unit(r.v[3]));
  p.identity = 0;
  p.geometric = s->geometric;
  if (!s->geometric) return p;
  if (s->view_count > 0) { /* the list's view c (copies = views: aug_spec_from) */
    const aug_view* v = &s->views[copy < (uint32_t)s->view_count ? copy : 0];
    p.m00 = v->m00, p.m01 = v->m01, p.m10 = v->m10, p.m11 = v->m11, p.tx = v->tx, p.ty = v->ty;
    p.ex = v->ex, p.ey = v->ey;
    p.dx = 0, p.dy = 0;
    return p;
  }
  /* Six more uniforms from blocks 1 and 2 of the same purpose: the mirrors, the angle, the
     scale and the sub-pixel translation. The inverse map, a mirror after the inverse rotation
     and scale: source = F R(-angle) (output - translation) / scale, about the centre. */
  aug_u32x4 g = aug_random(s, key, copy, AUG_PURPOSE_PARAMS, 1);
  aug_u32x4 h = aug_random(s, key, copy, AUG_PURPOSE_PARAMS, 2);
  const float mirror_x = aug_unit(g.v[0]) < s->flip_h ? -1.0f : 1.0f;
  const float mirror_y = aug_unit(g.v[1]) < s->flip_v ? -1.0f : 1.0f;
  const float turn = aug_lerp(-s->rotate_turns, s->rotate_turns, aug_unit(g.v[2]));
  const float scale = aug_lerp(s->scale_lo, s->scale_hi, aug_unit(g.v[3]));
  aug_inverse_map(mirror_x, mirror_y, turn, scale, &p.m00, &p.m01, &p.m10, &p.m11);
  p.tx = (float)p.dx + aug_lerp(-s->translate, s->translate, aug_unit(h.v[0]));
  p.ty = (float)p.dy + aug_lerp(-s->translate, s->translate, aug_unit(h.v[1]));
  return p;
}

/* The noise of pixels 4 block .. 4 block + 3 of a copy, by their index in the output's C x H x W
   values (each channel draws its own noise).
   Uniform: noise (2u - 1), in [-noise, noise). Gaussian: noise z, z standard normal by the
   Box-Muller transform of two pairs of uniforms. */
AUG_FN void aug_noise4(const aug_spec* s, uint64_t key, uint32_t copy, uint32_t block,
                       float out[4]) {
  aug_u32x4 r = aug_random(s, key, copy, AUG_PURPOSE_NOISE, block);
  if (!s->gaussian) {
    for (int j = 0; j < 4; j++) out[j] = s->noise * (2.0f * aug_unit(r.v[j]) - 1.0f);
    return;
  }
  for (int j = 0; j < 4; j += 2) {
    float radius = sqrtf(-2.0f * aug_log(aug_unit_open(r.v[j])));
    float sine, cosine;
    aug_sincos_turn(aug_unit(r.v[j + 1]), &sine, &cosine);
    out[j] = s->noise * (radius * cosine);
    out[j + 1] = s->noise * (radius * sine);
  }
}

/* The output pixel of a channel: clamp((contrast x + brightness) + noise), x the source pixel /
   255 (0 where the shift brought in nothing), then the scaling (v - mean) / std, each operation
   rounded to float in this order. */
AUG_FN float aug_pixel(const aug_spec* s, const aug_params* p, int channel, float x, float noise) {
  float v = p->contrast * x;
  v = v + p->brightness;
  v = v + noise;
  if (s->clamp) v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
  if (s->scaled) {
    v = v - s->mean[channel];
    v = v / s->std[channel];
  }
  return v;
}

/* The source pixel of output (y, x) of a plane for a copy's shift (every channel moves alike), its
   index in the plane, or -1 where it lies outside. */
AUG_FN int aug_source_index(const aug_params* p, int y, int x, int rows, int cols) {
  int sy = y - p->dy, sx = x - p->dx;
  return sy < 0 || sy >= rows || sx < 0 || sx >= cols ? -1 : sy * cols + sx;
}

/* Index i of a line of n pixels under the edge mode: itself inside; outside, -1 (zero), the
   nearest end (replicate), or mirrored about the end pixels without repeating them (reflect:
   -1 reads 1, n reads n - 2, as PyTorch's reflect padding). */
AUG_FN int aug_edge_index(int i, int n, int edge) {
  if (i >= 0 && i < n) return i;
  if (edge == AUG_EDGE_ZERO) return -1;
  if (edge == AUG_EDGE_REPLICATE || n == 1) return i < 0 ? 0 : n - 1;
  const int period = 2 * (n - 1);
  int k = i % period;
  if (k < 0) k += period;
  return k < n ? k : period - k;
}

/* A geometric copy's source of output pixel (y, x): the plane indices of the four pixels
   around it (-1 where the zero edge brings in black) in the order top left, top right, bottom
   left, bottom right, and the weights wx, wy of the right and bottom ones. Every operation one
   IEEE float operation in the order written. */
AUG_FN void aug_source_taps(const aug_spec* s, const aug_params* p, int y, int x, int rows,
                            int cols, int taps[4], float* wx, float* wy) {
  const float cx = (float)(cols - 1) * 0.5f, cy = (float)(rows - 1) * 0.5f;
  float u = (float)x - cx, v = (float)y - cy;
  const float tx = p->tx + p->ex * ((float)cols * 0.5f), ty = p->ty + p->ey * ((float)rows * 0.5f);
  u = u - tx;
  v = v - ty;
  float sx = p->m00 * u;
  sx = sx + p->m01 * v;
  sx = sx + cx;
  float sy = p->m10 * u;
  sy = sy + p->m11 * v;
  sy = sy + cy;
  /* Clamped so that the integers below cannot overflow; no valid setting reaches the bound
     (|source - centre| <= 2.83 n + 181 for n the larger side at scale 0.25, shift and
     translation 16), so the reflect edge, which repeats, reads the right pixel. */
  const float far = 8.0f * (float)(rows > cols ? rows : cols) + 512.0f;
  sx = !(sx >= -far) ? -far : sx > far ? far : sx;
  sy = !(sy >= -far) ? -far : sy > far ? far : sy;
  const float fx = floorf(sx), fy = floorf(sy);
  *wx = sx - fx;
  *wy = sy - fy;
  const int x0 = (int)fx, y0 = (int)fy;
  const int c0 = aug_edge_index(x0, cols, s->edge), c1 = aug_edge_index(x0 + 1, cols, s->edge);
  const int r0 = aug_edge_index(y0, rows, s->edge), r1 = aug_edge_index(y0 + 1, rows, s->edge);
  taps[0] = r0 < 0 || c0 < 0 ? -1 : r0 * cols + c0;
  taps[1] = r0 < 0 || c1 < 0 ? -1 : r0 * cols + c1;
  taps[2] = r1 < 0 || c0 < 0 ? -1 : r1 * cols + c0;
  taps[3] = r1 < 0 || c1 < 0 ? -1 : r1 * cols + c1;
}

/* The bilinear value of the four taps' values (0 for a tap of -1) with weights wx, wy. */
AUG_FN float aug_bilinear(const float v[4], float wx, float wy) {
  const float ix = 1.0f - wx, iy = 1.0f - wy;
  float top = ix * v[0];
  top = top + wx * v[1];
  float bottom = ix * v[2];
  bottom = bottom + wx * v[3];
  float out = iy * top;
  out = out + wy * bottom;
  return out;
}

#endif
