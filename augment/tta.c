/* The CPU reference of test-time augmentation. Compiled with -ffp-contract=off: see tta_core.h
   for why every float operation must stay as written. */
#include "tta.h"

#include <math.h>
#include <string.h>

static int in_range(double v, double lo, double hi) { return v >= lo && v <= hi; }

void ttp_tta_init(ttp_tta* t) {
  if (!t) return;
  memset(t, 0, sizeof *t);
  t->struct_size = sizeof *t;
  t->copies = 1;
  t->keep_original = 1;
  t->shift = 2;
  t->contrast_min = 0.85f, t->contrast_max = 1.15f;
  t->brightness_min = -0.05f, t->brightness_max = 0.05f;
  t->noise = 0.04f;
  t->noise_kind = TTP_NOISE_UNIFORM;
  t->clamp = 1;
  t->seed = 0;
  t->merge = TTP_MERGE_MEAN;
  t->temperature = 1.0f;
  t->scale_min = t->scale_max = 1.0f;
  t->edge = TTP_EDGE_ZERO;
}

int aug_draws_views(const ttp_tta* t) {
  return t->flip_h > 0 || t->flip_v > 0 || t->rotate > 0 || t->scale_min != 1.0f ||
         t->scale_max != 1.0f || t->translate > 0;
}

_Static_assert((int)AUG_MAX_VIEWS == (int)TTP_MAX_VIEWS, "a list's room on both sides");

/* A list of views: its length, each view's ranges, and no drawn geometry beside it. */
static ttp_status check_views(const ttp_tta* t, ttp_err* e) {
  if (t->view_count == 0) return TTP_OK;
  if (t->view_count < 0 || t->view_count > TTP_MAX_VIEWS)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA views must be 0..%d, not %d", TTP_MAX_VIEWS,
               t->view_count);
  if (t->copies != t->view_count)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA copies (%d) must equal the views (%d)",
               t->copies, t->view_count);
  if (aug_draws_views(t))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT,
               "TTA views are a list or drawn, not both: leave the mirrors, rotation, scale and "
               "translation at their defaults with a list");
  for (int i = 0; i < t->view_count; i++) {
    const ttp_view* v = &t->views[i];
    if ((v->flip_h != 0 && v->flip_h != 1) || (v->flip_v != 0 && v->flip_v != 1) ||
        !in_range(v->rotate, -180, 180) || !in_range(v->scale, 0.25, 4) ||
        !in_range(v->dx, -AUG_MAX_SHIFT, AUG_MAX_SHIFT) ||
        !in_range(v->dy, -AUG_MAX_SHIFT, AUG_MAX_SHIFT))
      return ERR(e, TTP_ERR_INVALID_ARGUMENT,
                 "TTA view %d: mirrors 0 or 1, rotation -180..180 degrees, scale 0.25..4, shift "
                 "-%d..%d pixels", i, AUG_MAX_SHIFT, AUG_MAX_SHIFT);
    if (v->crop != 0 && (!in_range(v->crop, 0.25, 1) || !in_range(v->crop_x, -1, 1) ||
                         !in_range(v->crop_y, -1, 1) || (v->crop_x == 0) != (v->crop_y == 0) ||
                         v->rotate != 0 || v->scale != 1))
      return ERR(e, TTP_ERR_INVALID_ARGUMENT,
                 "TTA view %d: a crop keeps 0.25..1 of each side at a corner (crop_x, crop_y each "
                 "-1 or 1) or the centre (both 0), and takes no rotation or scale", i);
  }
  return TTP_OK;
}

ttp_status aug_spec_from(const ttp_tta* given, aug_spec* out, ttp_merge* merge,
                         float* temperature, ttp_err* e) {
  /* A caller's older, shorter ttp_tta leaves the fields it lacks at their defaults. */
  ttp_tta tta;
  ttp_tta_init(&tta);
  if (given) {
    if (given->struct_size < offsetof(ttp_tta, merge) + sizeof given->merge)
      return ERR(e, TTP_ERR_INVALID_ARGUMENT,
                 "ttp_tta.struct_size is %zu: call ttp_tta_init first", given->struct_size);
    memcpy(&tta, given, given->struct_size < sizeof tta ? given->struct_size : sizeof tta);
  }
  const ttp_tta* t = &tta;
  if (!in_range(t->copies, 1, AUG_MAX_COPIES))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA copies must be 1..%d, not %d", AUG_MAX_COPIES,
               t->copies);
  if (!in_range(t->shift, 0, AUG_MAX_SHIFT))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA shift must be 0..%d pixels, not %d",
               AUG_MAX_SHIFT, t->shift);
  if (!in_range(t->contrast_min, 0, 16) || !in_range(t->contrast_max, t->contrast_min, 16))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT,
               "TTA contrast range must satisfy 0 <= min <= max <= 16, not %g..%g",
               t->contrast_min, t->contrast_max);
  if (!in_range(t->brightness_min, -1, 1) || !in_range(t->brightness_max, t->brightness_min, 1))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT,
               "TTA brightness range must satisfy -1 <= min <= max <= 1, not %g..%g",
               t->brightness_min, t->brightness_max);
  if (!in_range(t->noise, 0, 1))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA noise must be 0..1, not %g", t->noise);
  if (t->noise_kind != TTP_NOISE_UNIFORM && t->noise_kind != TTP_NOISE_GAUSSIAN)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "unknown TTA noise kind %d", (int)t->noise_kind);
  if ((unsigned)t->merge > TTP_MERGE_GMEAN)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "unknown merge mode %d", (int)t->merge);
  if (!in_range(t->temperature, 0.01, 100))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA temperature must be 0.01..100, not %g",
               t->temperature);
  if (!in_range(t->flip_h, 0, 1) || !in_range(t->flip_v, 0, 1))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA mirror probabilities must be 0..1, not %g, %g",
               t->flip_h, t->flip_v);
  if (!in_range(t->rotate, 0, 180))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA rotation must be 0..180 degrees, not %g",
               t->rotate);
  if (!in_range(t->scale_min, 0.25, 4) || !in_range(t->scale_max, t->scale_min, 4))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT,
               "TTA scale range must satisfy 0.25 <= min <= max <= 4, not %g..%g", t->scale_min,
               t->scale_max);
  if (!in_range(t->translate, 0, AUG_MAX_SHIFT))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA translation must be 0..%d pixels, not %g",
               AUG_MAX_SHIFT, t->translate);
  if ((unsigned)t->edge > TTP_EDGE_REFLECT)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "unknown TTA edge mode %d", (int)t->edge);
  TRY(check_views(t, e));
  double weight_sum = 0;
  int weighted = 0;
  for (int c = 0; c < TTP_MAX_COPIES; c++) {
    if (!in_range(t->weights[c], 0, 1e6))
      return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA weight %d must be 0..1e6, not %g", c,
                 t->weights[c]);
    if (c >= t->copies && t->weights[c] != 0)
      return ERR(e, TTP_ERR_INVALID_ARGUMENT, "TTA weight %d is given, but there are %d copies",
                 c, t->copies);
    weight_sum += t->weights[c];
    weighted |= t->weights[c] != 0;
  }
  *out = (aug_spec){
      .copies = t->copies,
      .keep_original = t->keep_original != 0,
      .shift = t->shift,
      .clamp = t->clamp != 0,
      .gaussian = t->noise_kind == TTP_NOISE_GAUSSIAN,
      .contrast_lo = t->contrast_min,
      .contrast_hi = t->contrast_max,
      .brightness_lo = t->brightness_min,
      .brightness_hi = t->brightness_max,
      .noise = t->noise,
      .seed_lo = (uint32_t)t->seed,
      .seed_hi = (uint32_t)(t->seed >> 32),
      .scaled = 0,
      .std = {1.0f, 1.0f, 1.0f},
      .geometric = aug_draws_views(t) || t->edge != TTP_EDGE_ZERO,
      .flip_h = t->flip_h,
      .flip_v = t->flip_v,
      .rotate_turns = t->rotate / 360.0f,
      .scale_lo = t->scale_min,
      .scale_hi = t->scale_max,
      .translate = t->translate,
      .edge = (int)t->edge,
      .view_count = t->view_count,
      .weighted = weighted,
  };
  for (int c = 0; c < t->copies && weighted; c++)
    out->weights[c] = (float)(t->weights[c] / weight_sum);
  for (int i = 0; i < t->view_count; i++) {
    const ttp_view* v = &t->views[i];
    aug_view* a = &out->views[i];
    const float mirror_x = v->flip_h ? -1.0f : 1.0f, mirror_y = v->flip_v ? -1.0f : 1.0f;
    /* a crop: the zoom 1 / F, its anchor at the side (ttapipe.h) */
    const float scale = v->crop != 0 ? 1.0f / v->crop : v->scale;
    aug_inverse_map(mirror_x, mirror_y, v->rotate / 360.0f, scale, &a->m00, &a->m01, &a->m10,
                    &a->m11);
    a->tx = v->dx, a->ty = v->dy;
    const double kept = v->crop != 0 ? (1.0 - v->crop) / v->crop : 0.0;
    a->ex = (float)(-mirror_x * v->crop_x * kept), a->ey = (float)(-mirror_y * v->crop_y * kept);
  }
  if (t->view_count > 0) out->geometric = 1;
  *merge = t->merge;
  if (temperature) *temperature = t->temperature;
  return TTP_OK;
}

void aug_spec_scale(aug_spec* s, const float mean[3], const float std[3], int channels) {
  s->scaled = 0;
  for (int c = 0; c < 3; c++) {
    s->mean[c] = c < channels ? mean[c] : 0.0f;
    s->std[c] = c < channels ? std[c] : 1.0f;
    s->scaled |= s->mean[c] != 0.0f || s->std[c] != 1.0f;
  }
}

uint64_t aug_image_key(const uint8_t* pixels, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) sum += aug_key_term((uint32_t)i, pixels[i]);
  return aug_key_finish(sum);
}

void aug_make_copy(const aug_spec* s, uint64_t key, int copy, const uint8_t* image, int channels,
                   int rows, int cols, float* out) {
  aug_params p = aug_copy_params(s, key, (uint32_t)copy);
  const int plane = rows * cols, n = channels * plane;
  for (int block = 0; 4 * block < n; block++) {
    float noise[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (!p.identity) aug_noise4(s, key, (uint32_t)copy, (uint32_t)block, noise);
    for (int j = 0; j < 4 && 4 * block + j < n; j++) {
      const int i = 4 * block + j, channel = i / plane, at = i % plane;
      const uint8_t* source = image + channel * plane;
      float x;
      if (p.geometric) {
        int taps[4];
        float v[4], wx, wy;
        aug_source_taps(s, &p, at / cols, at % cols, rows, cols, taps, &wx, &wy);
        for (int t = 0; t < 4; t++) v[t] = taps[t] < 0 ? 0.0f : (float)source[taps[t]] / 255.0f;
        x = aug_bilinear(v, wx, wy);
      } else {
        const int src = aug_source_index(&p, at / cols, at % cols, rows, cols);
        x = src < 0 ? 0.0f : (float)source[src] / 255.0f;
      }
      out[i] = aug_pixel(s, &p, channel, x, noise[j]);
    }
  }
}
