/* Test-time augmentation on the CPU: Philox4x32-10 against the published known-answer vectors;
   the image key; copy 0; shifts, contrast and brightness against a direct computation; the
   parameters and the noise over large samples (ranges covered, expected means and spreads);
   the logarithm and sine/cosine written for the Gaussian noise against libm; the merge modes on
   vectors worked out by hand; and the refusal of out-of-range settings. */
#include <math.h>
#include <string.h>

#include "../common/check.h"
#include "augment/merge.h"
#include "augment/tta.h"
#include "tta_checks.h"

static void test_philox(void) {
  /* Random123's kat_vectors, "philox4x32 10": counter, key, expected output. */
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1},
  };
  for (int t = 0; t < 3; t++) {
    aug_u32x4 ctr = {{kat[t][0], kat[t][1], kat[t][2], kat[t][3]}};
    aug_u32x4 r = aug_philox(ctr, kat[t][4], kat[t][5]);
    for (int j = 0; j < 4; j++)
      CHECK(r.v[j] == kat[t][6 + j], "Philox vector %d word %d: %08x, want %08x", t, j, r.v[j],
            kat[t][6 + j]);
  }
}

static void test_key(test_rng* rng) {
  uint8_t img[28 * 28];
  for (int i = 0; i < 784; i++) img[i] = (uint8_t)test_int(rng, 0, 255);
  uint64_t key = aug_image_key(img, 784);
  /* The sum of terms in any order: here backwards. */
  uint64_t sum = 0;
  for (int i = 783; i >= 0; i--) sum += aug_key_term((uint32_t)i, img[i]);
  CHECK(aug_key_finish(sum) == key, "the key depends on the order of the sum");
  /* Any one pixel changed by one, or two different pixels swapped, changes the key. */
  for (int i = 0; i < 784; i++) {
    img[i] ^= 1;
    CHECK(aug_image_key(img, 784) != key, "pixel %d changed, key kept", i);
    img[i] ^= 1;
  }
  int a = 10, b = 500;
  img[a] = 7, img[b] = 200;
  key = aug_image_key(img, 784);
  img[a] = 200, img[b] = 7;
  CHECK(aug_image_key(img, 784) != key, "swapped pixels, key kept");
}

static void test_copies(test_rng* rng) {
  enum { R = 13, C = 11 }; /* odd, and 143 pixels: not a multiple of 4 */
  uint8_t img[R * C];
  for (int i = 0; i < R * C; i++) img[i] = (uint8_t)test_int(rng, 1, 255);
  float out[R * C];
  ttp_tta t;
  ttp_tta_init(&t);
  t.copies = 8;
  aug_spec s = spec_of(&t);
  uint64_t key = aug_image_key(img, R * C);

  /* Copy 0 is the image itself; without keep_original it is augmented. */
  test_poison(out, R * C);
  aug_make_copy(&s, key, 0, img, 1, R, C, out);
  for (int i = 0; i < R * C; i++)
    CHECK(out[i] == (float)img[i] / 255.0f, "copy 0 pixel %d is %g", i, out[i]);
  t.keep_original = 0;
  aug_spec s2 = spec_of(&t);
  aug_make_copy(&s2, key, 0, img, 1, R, C, out);
  int changed = 0;
  for (int i = 0; i < R * C; i++) changed += out[i] != (float)img[i] / 255.0f;
  CHECK(changed > R * C / 2, "copy 0 without keep_original changed only %d pixels", changed);

  /* No noise, contrast and brightness fixed: a copy is the image shifted by (dx, dy), black
     coming in; then scaled, offset and clamped. */
  t.keep_original = 1, t.shift = 3, t.noise = 0;
  t.contrast_min = t.contrast_max = 1.7f;
  t.brightness_min = t.brightness_max = -0.1f;
  s = spec_of(&t);
  for (int c = 1; c < 8; c++) {
    aug_params p = aug_copy_params(&s, key, (uint32_t)c);
    CHECK(p.dx >= -3 && p.dx <= 3 && p.dy >= -3 && p.dy <= 3, "shift %d %d", p.dx, p.dy);
    test_poison(out, R * C);
    aug_make_copy(&s, key, c, img, 1, R, C, out);
    for (int y = 0; y < R; y++)
      for (int x = 0; x < C; x++) {
        int sy = y - p.dy, sx = x - p.dx;
        double v = sy >= 0 && sy < R && sx >= 0 && sx < C ? img[sy * C + sx] / 255.0 : 0.0;
        double want = fmin(1.0, fmax(0.0, 1.7 * v - 0.1));
        CHECK(fabs(out[y * C + x] - want) < 1e-6, "copy %d (%d,%d) dx %d dy %d: %g, want %g", c,
              y, x, p.dx, p.dy, out[y * C + x], want);
      }
  }
  /* Without the clamp the same copies leave [0, 1]. */
  t.clamp = 0;
  s = spec_of(&t);
  aug_make_copy(&s, key, 1, img, 1, R, C, out);
  float lo = 1, hi = 0;
  for (int i = 0; i < R * C; i++) lo = fminf(lo, out[i]), hi = fmaxf(hi, out[i]);
  CHECK(lo < 0 && hi > 1, "unclamped copy within [%g, %g]", lo, hi);
}

/* Three planes: every channel moves by the copy's shift with the same contrast and brightness,
   draws its own noise, and is scaled last, (v - mean) / std, after the clamp. */
static void test_channels(test_rng* rng) {
  enum { R = 9, C = 7, P = R * C }; /* 63 values a plane: the noise's groups of four straddle */
  uint8_t img[3 * P];
  for (int i = 0; i < 3 * P; i++) img[i] = (uint8_t)test_int(rng, 1, 255);
  float out[3 * P], grey[P];
  ttp_tta t;
  ttp_tta_init(&t);
  t.copies = 4, t.shift = 2, t.noise = 0;
  aug_spec s = spec_of(&t);
  uint64_t key = aug_image_key(img, 3 * P);
  for (int c = 1; c < 4; c++) {
    aug_params p = aug_copy_params(&s, key, (uint32_t)c);
    test_poison(out, 3 * P);
    aug_make_copy(&s, key, c, img, 3, R, C, out);
    for (int ch = 0; ch < 3; ch++) { /* without noise each plane is a grey copy of itself */
      aug_make_copy(&s, key, c, img + ch * P, 1, R, C, grey);
      CHECK(memcmp(grey, out + ch * P, sizeof grey) == 0, "copy %d channel %d (dx %d dy %d) is "
            "not its plane moved alike", c, ch, p.dx, p.dy);
    }
  }
  /* With noise, the planes of a flat image differ from one another (each its own noise). */
  memset(img, 128, sizeof img);
  t.noise = 0.1f, t.shift = 0;
  s = spec_of(&t);
  key = aug_image_key(img, 3 * P);
  aug_make_copy(&s, key, 1, img, 3, R, C, out);
  int same = 0;
  for (int i = 0; i < P; i++) same += out[i] == out[P + i] && out[i] == out[2 * P + i];
  CHECK(same < P / 4, "%d of %d pixels drew the same noise in every channel", same, P);
  /* Scaling comes after the clamp: a copy clamped to 1 becomes (1 - mean) / std. */
  t.noise = 0, t.contrast_min = t.contrast_max = 4.0f;
  s = spec_of(&t);
  s.scaled = 1;
  const float mean[3] = {0.25f, 0.5f, 0.75f}, std[3] = {0.5f, 0.25f, 2.0f};
  memcpy(s.mean, mean, sizeof mean), memcpy(s.std, std, sizeof std);
  test_poison(out, 3 * P);
  aug_make_copy(&s, key, 1, img, 3, R, C, out);
  for (int ch = 0; ch < 3; ch++)
    for (int i = 0; i < P; i++)
      CHECK(out[ch * P + i] == (1.0f - mean[ch]) / std[ch], "channel %d pixel %d: %g, want %g",
            ch, i, out[ch * P + i], (1.0f - mean[ch]) / std[ch]);
  /* Copy 0 scaled: the pixel / 255, then the scaling, each step rounded to float. */
  aug_make_copy(&s, key, 0, img, 3, R, C, out);
  for (int ch = 0; ch < 3; ch++)
    CHECK(out[ch * P] == ((128.0f / 255.0f) - mean[ch]) / std[ch], "copy 0 channel %d: %g", ch,
          out[ch * P]);
}

/* Parameters and noise over many images and copies: every shift occurs about equally often,
   contrast and brightness fill their ranges with the expected mean, uniform noise has mean 0
   and variance A^2/3, Gaussian noise mean 0, standard deviation A and the normal's shape. */
static void test_distributions(test_rng* rng) {
  ttp_tta t;
  ttp_tta_init(&t);
  t.copies = 5;
  aug_spec s = spec_of(&t);
  enum { KEYS = 4000, DRAWS = KEYS * 4 };
  long shifts[2][5] = {{0}};
  double cmin = 9, cmax = -9, csum = 0, bmin = 9, bmax = -9, bsum = 0;
  for (int k = 0; k < KEYS; k++) {
    uint64_t key = test_rng_next(rng);
    for (uint32_t c = 1; c < 5; c++) {
      aug_params p = aug_copy_params(&s, key, c);
      shifts[0][p.dx + 2]++, shifts[1][p.dy + 2]++;
      cmin = fmin(cmin, p.contrast), cmax = fmax(cmax, p.contrast), csum += p.contrast;
      bmin = fmin(bmin, p.brightness), bmax = fmax(bmax, p.brightness), bsum += p.brightness;
    }
  }
  double expect = DRAWS / 5.0, sigma = sqrt(DRAWS * 0.2 * 0.8);
  for (int a = 0; a < 2; a++)
    for (int v = 0; v < 5; v++)
      CHECK(fabs(shifts[a][v] - expect) < 5 * sigma, "shift %d of axis %d drawn %ld times of %d",
            v - 2, a, shifts[a][v], DRAWS);
  double cs = 0.3 / sqrt(12.0 * DRAWS), bs = 0.1 / sqrt(12.0 * DRAWS); /* sd of the means */
  CHECK(cmin >= 0.85f && cmax < 1.15f && cmin < 0.852 && cmax > 1.148, "contrast %g..%g", cmin,
        cmax);
  CHECK(fabs(csum / DRAWS - 1.0) < 5 * cs, "contrast mean %g", csum / DRAWS);
  CHECK(bmin >= -0.05f && bmax < 0.05f && bmin < -0.0495 && bmax > 0.0495, "brightness %g..%g",
        bmin, bmax);
  CHECK(fabs(bsum / DRAWS) < 5 * bs, "brightness mean %g", bsum / DRAWS);

  for (int gaussian = 0; gaussian < 2; gaussian++) {
    t.noise_kind = gaussian ? TTP_NOISE_GAUSSIAN : TTP_NOISE_UNIFORM;
    t.noise = 0.04f;
    s = spec_of(&t);
    enum { BLOCKS = 100000 };
    double sum = 0, sq = 0, quad = 0, lo = 1, hi = -1;
    long within = 0;
    uint64_t key = test_rng_next(rng);
    for (uint32_t b = 0; b < BLOCKS; b++) {
      float n[4];
      aug_noise4(&s, key, 1 + b % 7, b, n);
      for (int j = 0; j < 4; j++) {
        sum += n[j], sq += (double)n[j] * n[j], quad += pow(n[j], 4);
        lo = fmin(lo, n[j]), hi = fmax(hi, n[j]);
        within += fabs(n[j]) <= 0.04;
      }
    }
    double N = 4.0 * BLOCKS, mean = sum / N, var = sq / N - mean * mean;
    if (!gaussian) {
      CHECK(lo >= -0.04f && hi < 0.04f && lo < -0.0399 && hi > 0.0399, "uniform noise %g..%g", lo,
            hi);
      CHECK(fabs(mean) < 5 * 0.04 / sqrt(3 * N), "uniform noise mean %g", mean);
      CHECK(fabs(var / (0.04 * 0.04 / 3) - 1) < 0.01, "uniform noise variance %g", var);
    } else {
      CHECK(fabs(mean) < 5 * 0.04 / sqrt(N), "gaussian mean %g", mean);
      CHECK(fabs(sqrt(var) / 0.04 - 1) < 0.005, "gaussian sd %g", sqrt(var));
      CHECK(fabs(within / N - 0.682689) < 0.003, "gaussian within 1 sd: %g", within / N);
      double kurtosis = quad / N / (var * var);
      CHECK(fabs(kurtosis - 3) < 0.06, "gaussian kurtosis %g", kurtosis);
      CHECK(hi > 0.04 * 3.5 && lo < -0.04 * 3.5 && hi < 0.04 * 5.8, "gaussian tails %g..%g", lo, hi);
    }
  }
}

static void test_math(void) {
  double worst = 0;
  for (int i = 1; i <= (1 << 16); i++) {
    float x = (float)i / 65536.0f * (i % 2 ? 1.0f : 1e-5f); /* (0, 1], also tiny values */
    double err = fabs(aug_log(x) - log(x)) / fmax(1.0, fabs(log(x)));
    worst = fmax(worst, err);
  }
  CHECK(worst < 3e-7, "aug_log relative error %g", worst);
  worst = 0;
  for (int i = 0; i < (1 << 16); i++) {
    float t = (float)i / 65536.0f, s, c;
    aug_sincos_turn(t, &s, &c);
    worst = fmax(worst, fmax(fabs(s - sin(6.283185307179586 * (double)t)), fabs(c - cos(6.283185307179586 * (double)t))));
  }
  CHECK(worst < 3e-7, "aug_sincos_turn error %g", worst);
}

/* The merge modes on three copies of four classes, the expected values worked out in double. */
static void test_merge(void) {
  const float probs[3][4] = {{0.6f, 0.3f, 0.05f, 0.05f}, {0.1f, 0.5f, 0.3f, 0.1f},
                             {0.2f, 0.45f, 0.3f, 0.05f}};
  double want[4];
  float merged[4];
  ttp_result r;
  /* mean */
  test_poison(merged, 4);
  aug_merge(TTP_MERGE_MEAN, &probs[0][0], 3, 4, merged, &r, NULL, NULL);
  for (int k = 0; k < 4; k++) want[k] = ((double)probs[0][k] + probs[1][k] + probs[2][k]) / 3;
  CHECK(test_compare("mean", merged, want, 4, 1e-7, 0) == 0, "mean");
  double m = want[1], sd = sqrt((pow(probs[0][1] - m, 2) + pow(probs[1][1] - m, 2) +
                                 pow(probs[2][1] - m, 2)) / 3);
  CHECK(r.class_index == 1 && r.probability == merged[1] && fabs(r.spread - sd) < 1e-7,
        "mean result %d %g %g (sd %g)", r.class_index, r.probability, r.spread, sd);
  /* vote: copies pick 0, 1, 1 */
  test_poison(merged, 4);
  aug_merge(TTP_MERGE_VOTE, &probs[0][0], 3, 4, merged, &r, NULL, NULL);
  double votes[4] = {1.0 / 3, 2.0 / 3, 0, 0};
  CHECK(test_compare("vote", merged, votes, 4, 1e-7, 0) == 0 && r.class_index == 1, "vote");
  /* vote tie (copies 0 and 1 pick 0 and 1): class 1 has the higher mean (0.4 vs 0.35) */
  aug_merge(TTP_MERGE_VOTE, &probs[0][0], 2, 4, merged, &r, NULL, NULL);
  CHECK(r.class_index == 1 && r.probability == 0.5f, "vote tie went to %d", r.class_index);
  /* max */
  test_poison(merged, 4);
  aug_merge(TTP_MERGE_MAX, &probs[0][0], 3, 4, merged, &r, NULL, NULL);
  double maxes[4] = {0.6 / 1.5, 0.5 / 1.5, 0.3 / 1.5, 0.1 / 1.5};
  CHECK(test_compare("max", merged, maxes, 4, 1e-7, 1e-6) == 0 && r.class_index == 0, "max");
  /* geometric mean */
  test_poison(merged, 4);
  aug_merge(TTP_MERGE_GMEAN, &probs[0][0], 3, 4, merged, &r, NULL, NULL);
  double total = 0;
  for (int k = 0; k < 4; k++)
    total += want[k] = cbrt((double)probs[0][k] * probs[1][k] * probs[2][k]);
  for (int k = 0; k < 4; k++) want[k] /= total;
  CHECK(test_compare("gmean", merged, want, 4, 1e-7, 1e-6) == 0 && r.class_index == 1, "gmean");
  /* A zero probability in one copy does not make the geometric mean NaN. */
  const float zero[2][3] = {{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}};
  aug_merge(TTP_MERGE_GMEAN, &zero[0][0], 2, 3, merged, &r, NULL, NULL);
  CHECK(!isnan(merged[0]) && fabs(merged[0] - 0.5) < 1e-6 && fabs(merged[2]) < 1e-6,
        "gmean with zeros: %g %g %g", merged[0], merged[1], merged[2]);
  /* One copy: the result is that copy, spread 0. */
  aug_merge(TTP_MERGE_MEAN, &probs[2][0], 1, 4, merged, &r, NULL, NULL);
  CHECK(memcmp(merged, probs[2], sizeof merged) == 0 && r.spread == 0 && r.class_index == 1,
        "one copy");

  /* Weights 0.5, 0.2, 0.3 against the definitions worked out here. */
  const float w[3] = {0.5f, 0.2f, 0.3f};
  float extras[MERGE_EXTRAS];
  test_poison(merged, 4);
  aug_merge(TTP_MERGE_MEAN, &probs[0][0], 3, 4, merged, &r, extras, w);
  for (int k = 0; k < 4; k++)
    want[k] = (double)w[0] * probs[0][k] + (double)w[1] * probs[1][k] + (double)w[2] * probs[2][k];
  CHECK(test_compare("weighted mean", merged, want, 4, 1e-7, 0) == 0, "weighted mean");
  const int best = want[1] > want[0] ? 1 : 0;
  m = want[best];
  sd = sqrt(w[0] * pow(probs[0][best] - m, 2) + w[1] * pow(probs[1][best] - m, 2) +
            w[2] * pow(probs[2][best] - m, 2));
  CHECK(r.class_index == best && fabs(r.spread - sd) < 1e-7, "weighted mean: class %d spread %g "
        "(want %d, %g)", r.class_index, r.spread, best, sd);
  double h_mean = 0, h_copies = 0, agree = 0;
  for (int k = 0; k < 4; k++) h_mean -= want[k] * log(want[k]);
  for (int c = 0; c < 3; c++) {
    double h = 0;
    int top = 0;
    for (int k = 0; k < 4; k++) {
      h -= probs[c][k] * log(probs[c][k]);
      if (probs[c][k] > probs[c][top]) top = k;
    }
    h_copies += w[c] * h, agree += top == best ? w[c] : 0;
  }
  CHECK(fabs(extras[MERGE_EXTRA_MUTUAL] - (h_mean - h_copies)) < 1e-6 &&
            fabs(extras[MERGE_EXTRA_AGREEMENT] - agree) < 1e-6,
        "weighted extras %g %g, want %g %g", extras[MERGE_EXTRA_MUTUAL],
        extras[MERGE_EXTRA_AGREEMENT], h_mean - h_copies, agree);
  /* a weighted vote: copy 0 (class 0) 0.5 against copies 1 and 2 (class 1) 0.5: a tie, to the
     higher weighted mean */
  aug_merge(TTP_MERGE_VOTE, &probs[0][0], 3, 4, merged, &r, NULL, w);
  CHECK(fabs(merged[0] - 0.5) < 1e-7 && fabs(merged[1] - 0.5) < 1e-7 && r.class_index == best,
        "weighted vote %g %g, class %d", merged[0], merged[1], r.class_index);
  /* weighted geometric mean: exp of the weighted mean of the logs, normalised */
  aug_merge(TTP_MERGE_GMEAN, &probs[0][0], 3, 4, merged, &r, NULL, w);
  total = 0;
  for (int k = 0; k < 4; k++)
    total += want[k] = exp(w[0] * log(probs[0][k]) + w[1] * log(probs[1][k]) +
                           w[2] * log(probs[2][k]));
  for (int k = 0; k < 4; k++) want[k] /= total;
  CHECK(test_compare("weighted gmean", merged, want, 4, 1e-7, 1e-6) == 0, "weighted gmean");
  /* weight 0 leaves a copy out: max over copies 0 and 2 alone; every mode with weights 1, 0, 0
     is copy 0 alone, bit for bit */
  const float w02[3] = {0.6f, 0.0f, 0.4f}, only0[3] = {1.0f, 0.0f, 0.0f};
  aug_merge(TTP_MERGE_MAX, &probs[0][0], 3, 4, merged, &r, NULL, w02);
  total = 0;
  for (int k = 0; k < 4; k++) total += want[k] = fmax(probs[0][k], probs[2][k]);
  for (int k = 0; k < 4; k++) want[k] /= total;
  CHECK(test_compare("weighted max", merged, want, 4, 1e-7, 1e-6) == 0, "weighted max");
  for (int mode = 0; mode < 4; mode++) {
    float alone[4], weighted[4], xa[MERGE_EXTRAS], xw[MERGE_EXTRAS];
    ttp_result ra, rw;
    aug_merge((ttp_merge)mode, &probs[0][0], 1, 4, alone, &ra, xa, NULL);
    aug_merge((ttp_merge)mode, &probs[0][0], 3, 4, weighted, &rw, xw, only0);
    CHECK(memcmp(alone, weighted, sizeof alone) == 0 && ra.class_index == rw.class_index &&
              ra.spread == rw.spread && xa[MERGE_EXTRA_MUTUAL] == xw[MERGE_EXTRA_MUTUAL] &&
              xa[MERGE_EXTRA_AGREEMENT] == xw[MERGE_EXTRA_AGREEMENT],
          "merge %d: weights 1, 0, 0 differ from copy 0 alone", mode);
  }
}

static void test_spec(void) {
  ttp_tta d, t;
  ttp_tta_init(&d);
  aug_spec s;
  ttp_merge merge;
  ttp_err e = {0};
  CHECK(aug_spec_from(NULL, &s, &merge, NULL, &e) == TTP_OK && s.copies == 1 && merge == TTP_MERGE_MEAN,
        "no TTA");
  CHECK(d.copies == 1 && d.keep_original && d.shift == 2 && d.contrast_min == 0.85f &&
            d.contrast_max == 1.15f && d.brightness_min == -0.05f && d.brightness_max == 0.05f &&
            d.noise == 0.04f && d.noise_kind == TTP_NOISE_UNIFORM && d.clamp && d.seed == 0 &&
            d.merge == TTP_MERGE_MEAN,
        "defaults");
  t = d, t.copies = 0, expect_refused(t, "copies must be 1..64");
  t = d, t.copies = 65, expect_refused(t, "copies must be 1..64");
  t = d, t.shift = 17, expect_refused(t, "shift must be 0..16");
  t = d, t.contrast_min = 1.2f, expect_refused(t, "contrast range");
  t = d, t.contrast_max = NAN, expect_refused(t, "contrast range");
  t = d, t.brightness_min = -2, expect_refused(t, "brightness range");
  t = d, t.noise = 1.5f, expect_refused(t, "noise must be 0..1");
  t = d, t.noise_kind = (ttp_noise)7, expect_refused(t, "noise kind 7");
  t = d, t.merge = (ttp_merge)9, expect_refused(t, "merge mode 9");
  t = d, t.struct_size = 4, expect_refused(t, "ttp_tta_init");
  t = d, t.seed = 0x123456789abcdef0ull;
  CHECK(aug_spec_from(&t, &s, &merge, NULL, &e) == TTP_OK && s.seed_lo == 0x9abcdef0u &&
            s.seed_hi == 0x12345678u,
        "seed split");
}

int main(void) {
  test_rng rng = {3};
  test_philox();
  test_key(&rng);
  test_copies(&rng);
  test_channels(&rng);
  test_distributions(&rng);
  test_math();
  test_merge();
  test_spec();
  printf("tta: Philox vectors, keys, copies, distributions, merge modes and settings check out\n");
  return 0;
}
