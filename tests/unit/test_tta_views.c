/* The geometric views of test-time augmentation on the CPU reference (ttapipe.h: mirrors,
   rotation, scale, sub-pixel translation, edge modes):
   - the edge modes' index rule on lines of 1, 2 and 5 pixels, worked out by hand;
   - mirrors exact: a copy that is always mirrored equals the image read backwards, bit for bit,
     at odd and even sizes, one and three channels;
   - the geometric path without rotation, scale or sub-pixel translation gives the whole-pixel
     path's bits wherever both read inside the image, and the nearest edge pixel where the
     replicate edge reads outside;
   - rotation, scale, translation and random mirrors against ttapipe.h's definition computed in
     double from the same Philox uniforms (bilinear, each edge mode), within 2e-5;
   - how often copies are mirrored, and that the views' settings are checked;
   - lists of views: parsed, exact where they move whole pixels, the definition in double
     elsewhere, refused where they should be. */
#include <math.h>
#include <string.h>

#include "../common/check.h"
#include "augment/tta.h"
#include "tta_checks.h"

/* Settings that change nothing but the geometry: no shift, contrast 1, brightness 0, no noise,
   no clamp, every copy augmented. */
static ttp_tta plain(int copies) {
  ttp_tta t;
  ttp_tta_init(&t);
  t.copies = copies, t.keep_original = 0, t.shift = 0, t.noise = 0, t.clamp = 0;
  t.contrast_min = t.contrast_max = 1, t.brightness_min = t.brightness_max = 0;
  return t;
}

static void random_image(test_rng* rng, uint8_t* image, size_t n) {
  for (size_t i = 0; i < n; i++) image[i] = (uint8_t)test_int(rng, 0, 255);
}

static void test_edge_index(void) {
  static const int n5_reflect[] = {4, 3, 2, 1, 0, 1, 2, 3, 4, 3, 2, 1, 0, 1}; /* i = -4 .. 9 */
  for (int i = -4; i <= 9; i++) {
    CHECK(aug_edge_index(i, 5, AUG_EDGE_REFLECT) == n5_reflect[i + 4], "reflect %d of 5: %d", i,
          aug_edge_index(i, 5, AUG_EDGE_REFLECT));
    const int replicate = i < 0 ? 0 : i > 4 ? 4 : i, zero = i < 0 || i > 4 ? -1 : i;
    CHECK(aug_edge_index(i, 5, AUG_EDGE_REPLICATE) == replicate, "replicate %d of 5", i);
    CHECK(aug_edge_index(i, 5, AUG_EDGE_ZERO) == zero, "zero %d of 5", i);
  }
  static const int n2_reflect[] = {1, 0, 1, 0, 1, 0, 1}; /* i = -3 .. 3 */
  for (int i = -3; i <= 3; i++)
    CHECK(aug_edge_index(i, 2, AUG_EDGE_REFLECT) == n2_reflect[i + 3], "reflect %d of 2", i);
  for (int i = -3; i <= 3; i++)
    CHECK(aug_edge_index(i, 1, AUG_EDGE_REFLECT) == 0 &&
              aug_edge_index(i, 1, AUG_EDGE_REPLICATE) == 0,
          "%d of 1", i);
  CHECK(aug_edge_index(-1000003, 5, AUG_EDGE_REFLECT) >= 0 &&
            aug_edge_index(1000003, 5, AUG_EDGE_REFLECT) < 5,
        "far outside");
}

static void test_mirrors(test_rng* rng) {
  const int sizes[][3] = {{1, 7, 9}, {3, 5, 10}, {1, 28, 28}, {3, 9, 4}};
  for (int k = 0; k < 4; k++) {
    const int ch = sizes[k][0], rows = sizes[k][1], cols = sizes[k][2], plane = rows * cols;
    uint8_t image[3 * 28 * 28];
    float copy[3 * 28 * 28];
    random_image(rng, image, (size_t)ch * plane);
    for (int mode = 1; mode <= 3; mode++) { /* left-right, upside down, both */
      ttp_tta t = plain(3);
      t.flip_h = mode & 1 ? 1.0f : 0.0f, t.flip_v = mode & 2 ? 1.0f : 0.0f;
      const aug_spec s = spec_of(&t);
      const uint64_t key = aug_image_key(image, (size_t)ch * plane);
      for (int c = 0; c < 3; c++) {
        aug_make_copy(&s, key, c, image, ch, rows, cols, copy);
        for (int i = 0; i < ch * plane; i++) {
          const int y = i % plane / cols, x = i % cols;
          const int sy = mode & 2 ? rows - 1 - y : y, sx = mode & 1 ? cols - 1 - x : x;
          const float want = (float)image[i / plane * plane + sy * cols + sx] / 255.0f;
          CHECK(memcmp(&copy[i], &want, 4) == 0, "mirror %d, %dx%dx%d, copy %d, value %d: %.9g, "
                "not %.9g", mode, ch, rows, cols, c, i, copy[i], want);
        }
      }
    }
  }
}

/* Edge replicate turns the geometric path on without moving anything but the whole-pixel shift:
   where both read inside, the same bits as the whole-pixel path (contrast, brightness and noise
   included); outside, the nearest edge pixel's value where the other path has black. */
static void test_whole_pixels(test_rng* rng) {
  const int ch = 3, rows = 11, cols = 13, plane = rows * cols, n = ch * plane;
  uint8_t image[3 * 11 * 13];
  float a[3 * 11 * 13], b[3 * 11 * 13];
  random_image(rng, image, n);
  ttp_tta t;
  ttp_tta_init(&t);
  t.copies = 9, t.shift = 4, t.noise_kind = TTP_NOISE_GAUSSIAN;
  const aug_spec whole = spec_of(&t);
  t.edge = TTP_EDGE_REPLICATE;
  const aug_spec geometric = spec_of(&t);
  CHECK(!whole.geometric && geometric.geometric, "geometric flags");
  const uint64_t key = aug_image_key(image, n);
  size_t inside = 0, outside = 0;
  for (int c = 0; c < 9; c++) {
    aug_make_copy(&whole, key, c, image, ch, rows, cols, a);
    aug_make_copy(&geometric, key, c, image, ch, rows, cols, b);
    const aug_params p = aug_copy_params(&whole, key, (uint32_t)c);
    for (int i = 0; i < n; i++) {
      const int y = i % plane / cols, x = i % cols, sy = y - p.dy, sx = x - p.dx;
      if (p.identity || (sy >= 0 && sy < rows && sx >= 0 && sx < cols)) {
        CHECK(memcmp(&a[i], &b[i], 4) == 0, "copy %d value %d: %.9g and %.9g", c, i, a[i], b[i]);
        inside++;
        continue;
      }
      const int ry = sy < 0 ? 0 : sy >= rows ? rows - 1 : sy;
      const int rx = sx < 0 ? 0 : sx >= cols ? cols - 1 : sx;
      aug_spec one = whole; /* the same pixel with the edge's value, through aug_pixel */
      aug_params q = p;
      float noise[4];
      aug_noise4(&one, key, (uint32_t)c, (uint32_t)(i / 4), noise);
      const float want = aug_pixel(&one, &q, i / plane,
                                   (float)image[i / plane * plane + ry * cols + rx] / 255.0f,
                                   noise[i % 4]);
      CHECK(memcmp(&b[i], &want, 4) == 0, "copy %d value %d outside: %.9g, not %.9g", c, i, b[i],
            want);
      outside++;
    }
  }
  CHECK(inside > 0 && outside > 0, "%zu inside, %zu outside", inside, outside);
}

/* A view in double: mirrors (-1 or 1), the angle in degrees, the zoom, the translation. */
typedef struct view_d {
  double mx, my, degrees, k, tx, ty;
} view_d;

/* ttapipe.h's definition in double: output (y, x)'s source point under view v, then the
   bilinear value with the edge mode. */
static double view_pixel(view_d w, int edge, const uint8_t* plane, int rows, int cols, int y,
                         int x) {
  const double a = w.degrees * 3.14159265358979323846 / 180;
  const double cx = (cols - 1) / 2.0, cy = (rows - 1) / 2.0;
  const double u = x - cx - w.tx, v = y - cy - w.ty;
  const double sx = w.mx * (cos(a) / w.k * u + sin(a) / w.k * v) + cx;
  const double sy = w.my * (-sin(a) / w.k * u + cos(a) / w.k * v) + cy;
  const double fx = floor(sx), fy = floor(sy), wx = sx - fx, wy = sy - fy;
  double tap[4];
  for (int j = 0; j < 4; j++) {
    const int r = aug_edge_index((int)fy + j / 2, rows, edge);
    const int col = aug_edge_index((int)fx + j % 2, cols, edge);
    tap[j] = r < 0 || col < 0 ? 0 : plane[r * cols + col] / 255.0;
  }
  return (1 - wy) * ((1 - wx) * tap[0] + wx * tap[1]) + wy * ((1 - wx) * tap[2] + wx * tap[3]);
}

/* The drawn view of copy c, from the same Philox uniforms, in double. */
static double reference_pixel(const ttp_tta* t, const aug_spec* s, uint64_t key, int c,
                              const uint8_t* plane, int rows, int cols, int y, int x) {
  const aug_params whole = aug_copy_params(s, key, (uint32_t)c); /* dx, dy as documented */
  const aug_u32x4 g = aug_random(s, key, (uint32_t)c, AUG_PURPOSE_PARAMS, 1);
  const aug_u32x4 h = aug_random(s, key, (uint32_t)c, AUG_PURPOSE_PARAMS, 2);
  const double u0 = (g.v[0] >> 8) / 16777216.0, u1 = (g.v[1] >> 8) / 16777216.0;
  const double u2 = (g.v[2] >> 8) / 16777216.0, u3 = (g.v[3] >> 8) / 16777216.0;
  const double u4 = (h.v[0] >> 8) / 16777216.0, u5 = (h.v[1] >> 8) / 16777216.0;
  const view_d w = {u0 < t->flip_h ? -1 : 1, u1 < t->flip_v ? -1 : 1, t->rotate * (2 * u2 - 1),
                    t->scale_min + (t->scale_max - t->scale_min) * u3,
                    whole.dx + t->translate * (2 * u4 - 1), whole.dy + t->translate * (2 * u5 - 1)};
  return view_pixel(w, s->edge, plane, rows, cols, y, x);
}

static void test_definition(test_rng* rng) {
  const int sizes[][3] = {{1, 28, 28}, {3, 9, 14}, {1, 17, 6}};
  const ttp_edge edges[3] = {TTP_EDGE_ZERO, TTP_EDGE_REPLICATE, TTP_EDGE_REFLECT};
  double worst = 0;
  for (int k = 0; k < 3; k++) {
    const int ch = sizes[k][0], rows = sizes[k][1], cols = sizes[k][2], plane = rows * cols;
    uint8_t image[28 * 28];
    float copy[28 * 28];
    random_image(rng, image, (size_t)ch * plane);
    const uint64_t key = aug_image_key(image, (size_t)ch * plane);
    for (int m = 0; m < 3; m++) {
      ttp_tta t = plain(6);
      t.flip_h = 0.5f, t.flip_v = 0.25f, t.rotate = 35, t.scale_min = 0.8f, t.scale_max = 1.3f;
      t.translate = 1.5f, t.shift = 2, t.edge = edges[m];
      const aug_spec s = spec_of(&t);
      for (int c = 0; c < 6; c++) {
        aug_make_copy(&s, key, c, image, ch, rows, cols, copy);
        for (int i = 0; i < ch * plane; i++) {
          const double want = reference_pixel(&t, &s, key, c, image + i / plane * plane, rows,
                                              cols, i % plane / cols, i % cols);
          const double d = fabs(copy[i] - want);
          if (d > worst) worst = d;
          CHECK(d <= 2e-5, "%dx%dx%d, edge %d, copy %d, value %d: %.9g, the definition %.9g", ch,
                rows, cols, m, c, i, copy[i], want);
        }
      }
    }
  }
  printf("views against the definition in double: worst %.3g\n", worst);
}

/* Over 4,000 copies, mirrors as often as asked (within 4 standard deviations); angles and
   scales inside their ranges. */
static void test_draws(void) {
  ttp_tta t = plain(64);
  t.flip_h = 0.5f, t.flip_v = 0.2f, t.rotate = 12, t.scale_min = 0.9f, t.scale_max = 1.1f;
  const aug_spec s = spec_of(&t);
  int left_right = 0, upside_down = 0, total = 0;
  for (uint64_t key = 1; key <= 63; key++)
    for (uint32_t c = 0; c < 64; c++, total++) {
      const aug_params p = aug_copy_params(&s, key * 0x9E3779B97F4A7C15ull, c);
      /* m00 = mx cos/k, m10 = -my sin/k: the mirror's sign where cos > 0, the scale 1/|col| */
      left_right += p.m00 < 0, upside_down += p.m11 < 0;
      const double inv = sqrt((double)p.m00 * p.m00 + (double)p.m10 * p.m10);
      const double angle = atan2(fabs(p.m01), fabs(p.m00)) * 180 / 3.14159265358979323846;
      CHECK(inv >= 1 / 1.1 - 1e-6 && inv <= 1 / 0.9 + 1e-6, "scale %g", 1 / inv);
      CHECK(angle <= 12 + 1e-4, "angle %g", angle);
    }
  const double sd_h = sqrt(total * 0.25), sd_v = sqrt(total * 0.16);
  CHECK(fabs(left_right - 0.5 * total) < 4 * sd_h, "%d of %d mirrored left-right", left_right,
        total);
  CHECK(fabs(upside_down - 0.2 * total) < 4 * sd_v, "%d of %d mirrored upside down", upside_down,
        total);
}

/* Lists of views: airbench's six parsed; a quarter turn and a mirror with a whole-pixel shift
   exact; turns, zooms and fractional shifts against the definition in double; copy 0 kept as it
   is; lists refused where they should be. */
static void test_lists(test_rng* rng) {
  char error[256];
  ttp_tta t = plain(1);
  CHECK(ttp_tta_set_views(&t, "none; flip_h; shift 1 0; flip_h shift 1 0;shift -1 0 ;\r\n"
                              "\tflip_h  shift -1 0", error, sizeof error) == TTP_OK, "%s", error);
  CHECK(t.view_count == 6 && t.copies == 6 && !t.views[0].flip_h && t.views[1].flip_h &&
            t.views[2].dx == 1 && t.views[3].flip_h && t.views[3].dx == 1 &&
            t.views[5].dx == -1 && t.views[5].dy == 0 && t.views[4].scale == 1,
        "airbench's six views read wrong");
  CHECK(spec_of(&t).geometric && spec_of(&t).view_count == 6, "the list's spec");

  const int sizes[][3] = {{1, 9, 9}, {3, 10, 10}};
  for (int z = 0; z < 2; z++) {
    const int ch = sizes[z][0], n = sizes[z][1], plane = n * n;
    uint8_t image[3 * 10 * 10];
    float copy[3 * 10 * 10];
    random_image(rng, image, (size_t)ch * plane);
    const uint64_t key = aug_image_key(image, (size_t)ch * plane);
    t = plain(1);
    CHECK(ttp_tta_set_views(&t, "rotate 90; flip_h shift 1 0", error, sizeof error) == TTP_OK,
          "%s", error);
    const aug_spec s = spec_of(&t);
    for (int c = 0; c < 2; c++) {
      aug_make_copy(&s, key, c, image, ch, n, n, copy);
      for (int i = 0; i < ch * plane; i++) {
        const int y = i % plane / n, x = i % n, base = i / plane * plane;
        /* a quarter turn clockwise: output (y, x) reads (n - 1 - x, y); the mirror then a
           shift right by one: (y, n - x), black at x = 0 */
        const float want = c == 0   ? (float)image[base + (n - 1 - x) * n + y] / 255.0f
                           : x == 0 ? 0.0f
                                    : (float)image[base + y * n + n - x] / 255.0f;
        CHECK(memcmp(&copy[i], &want, 4) == 0, "view %d, %dx%d, value %d: %.9g, not %.9g", c,
              ch, n, i, copy[i], want);
      }
    }
  }

  const int rows = 17, cols = 12;
  uint8_t image[17 * 12];
  float copy[17 * 12];
  random_image(rng, image, rows * cols);
  const uint64_t key = aug_image_key(image, rows * cols);
  const view_d want[4] = {{1, 1, 0, 1, 0, 0}, {-1, 1, -37.5, 1.25, 0.5, -2.25},
                          {1, -1, 170, 0.6, -3, 1}, {-1, -1, 12, 2, 0, 0.75}};
  for (int edge = 0; edge < 3; edge++) {
    t = plain(1);
    t.keep_original = 1, t.edge = (ttp_edge)edge;
    CHECK(ttp_tta_set_views(&t, "flip_h; flip_h rotate -37.5 scale 1.25 shift 0.5 -2.25; "
                                "flip_v rotate 170 scale 0.6 shift -3 1; flip_h flip_v rotate 12 "
                                "scale 2 shift 0 0.75", error, sizeof error) == TTP_OK,
          "%s", error);
    const aug_spec s = spec_of(&t);
    for (int c = 0; c < 4; c++) { /* copy 0: kept as it is, not mirrored */
      aug_make_copy(&s, key, c, image, 1, rows, cols, copy);
      for (int i = 0; i < rows * cols; i++) {
        const double v = view_pixel(want[c], edge, image, rows, cols, i / cols, i % cols);
        CHECK(fabs(copy[i] - v) <= 2e-5, "edge %d, view %d, value %d: %.9g, the definition %.9g",
              edge, c, i, copy[i], v);
      }
    }
  }

  /* the farthest a list can reach (zoom 0.25 turned by 45 degrees, shifted 16 by 16): the
     reflect edge, which repeats, still reads the definition's pixel */
  {
    const int n = 32;
    uint8_t big[32 * 32];
    float out[32 * 32];
    random_image(rng, big, n * n);
    t = plain(1);
    t.edge = TTP_EDGE_REFLECT;
    CHECK(ttp_tta_set_views(&t, "rotate 45 scale 0.25 shift 16 16", error, sizeof error) == TTP_OK,
          "%s", error);
    const aug_spec s = spec_of(&t);
    aug_make_copy(&s, aug_image_key(big, n * n), 0, big, 1, n, n, out);
    const view_d far = {1, 1, 45, 0.25, 16, 16};
    for (int i = 0; i < n * n; i++) {
      const double v = view_pixel(far, TTP_EDGE_REFLECT, big, n, n, i / n, i % n);
      CHECK(fabs(out[i] - v) <= 2e-4, "far view, value %d: %.9g, the definition %.9g", i, out[i],
            v);
    }
  }

  static const struct {
    const char *list, *fragment;
  } bad[] = {{"none; wobble", "view 2: unknown view word 'wobble'"},
             {"shift 1", "shift: two numbers"},
             {"rotate", "rotate: degrees after it"},
             {"scale x", "scale: a zoom after it"},
             {"rotate 500", "rotate: degrees after it, -180..180"},
             {"scale 0.1", "scale: a zoom after it, 0.25..4"},
             {"shift 1e40 0", "shift: two numbers after it, DX DY, each -16..16"},
             {"none; flip_h;", "view 3: an empty view"},
             {"none;;flip_h", "view 2: an empty view"},
             {"", "view 1: an empty view"},
             {"none;none;none;none;none;none;none;none;none;none;none;none;none;none;none;none;"
              "none", "more than 16 views"}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    t = plain(3);
    CHECK(ttp_tta_set_views(&t, bad[k].list, error, sizeof error) == TTP_ERR_INVALID_ARGUMENT,
          "'%s' accepted", bad[k].list);
    EXPECT_MESSAGE(error, bad[k].fragment);
    CHECK(t.copies == 3 && t.view_count == 0, "'%s' changed the settings", bad[k].list);
  }
  ttp_tta d = plain(1);
  CHECK(ttp_tta_set_views(&d, "none; rotate 10", error, sizeof error) == TTP_OK, "%s", error);
  t = d, t.copies = 3, expect_refused(t, "copies (3) must equal the views (2)");
  t = d, t.flip_h = 0.5f, expect_refused(t, "a list or drawn, not both");
  t = d, t.views[1].rotate = 200, expect_refused(t, "view 1: mirrors 0 or 1");
  t = d, t.views[0].scale = 0, expect_refused(t, "view 0");
  t = d, t.views[1].flip_v = 2, expect_refused(t, "view 1");
  t = d, t.views[1].dx = 17, expect_refused(t, "view 1");
  t = d, t.view_count = 17, expect_refused(t, "views must be 0..16");
  t = plain(1), t.struct_size = offsetof(ttp_tta, views);
  CHECK(ttp_tta_set_views(&t, "none", error, sizeof error) == TTP_ERR_INVALID_ARGUMENT,
        "an older structure took a list");
}

/* The bilinear value at source point (sx, sy) of a plane, zero outside. */
static double bilinear_at(const uint8_t* plane, int rows, int cols, double sx, double sy) {
  const double fx = floor(sx), fy = floor(sy), wx = sx - fx, wy = sy - fy;
  double tap[4];
  for (int j = 0; j < 4; j++) {
    const int r = (int)fy + j / 2, c = (int)fx + j % 2;
    tap[j] = r < 0 || r >= rows || c < 0 || c >= cols ? 0 : plane[r * cols + c] / 255.0;
  }
  return (1 - wy) * ((1 - wx) * tap[0] + wx * tap[1]) + wy * ((1 - wx) * tap[2] + wx * tap[3]);
}

/* Crops, worked out from what a crop is rather than from ttapipe.h's formula: the part F of
   each side at a corner or the centre, its pixel centres spread over the whole output. Output
   pixel x (0..cols-1) of a crop starting at column x0 = cols (1 - F) (right), 0 (left) or half
   that (centre) reads column x0 + (x + 0.5) F - 0.5; mirrored, column x0 + (cols - x - 0.5) F
   - 0.5; rows likewise. Odd sizes, one and three channels, with a shift after the crop. */
static void test_crops(test_rng* rng) {
  char error[256];
  const int sizes[][3] = {{1, 13, 10}, {3, 9, 16}};
  for (int z = 0; z < 2; z++) {
    const int ch = sizes[z][0], rows = sizes[z][1], cols = sizes[z][2], plane = rows * cols;
    uint8_t image[3 * 16 * 16];
    float copy[3 * 16 * 16];
    random_image(rng, image, (size_t)ch * plane);
    const uint64_t key = aug_image_key(image, (size_t)ch * plane);
    ttp_tta t = plain(1);
    t.keep_original = 0;
    CHECK(ttp_tta_set_views(&t, "crop tl 0.875; crop tr 0.875; crop bl 0.6; crop br 0.75; "
                                "crop c 0.5; flip_h crop tl 0.8; flip_v crop br 0.7 shift 1 -2",
                            error, sizeof error) == TTP_OK, "%s", error);
    CHECK(t.views[2].crop == 0.6f && t.views[2].crop_x == -1 && t.views[2].crop_y == 1 &&
              t.views[4].crop_x == 0 && t.views[4].crop_y == 0, "crops read wrong");
    const aug_spec s = spec_of(&t);
    static const double part[7] = {0.875, 0.875, 0.6, 0.75, 0.5, 0.8, 0.7};
    static const int across[7] = {-1, 1, -1, 1, 0, -1, 1}, down[7] = {-1, -1, 1, 1, 0, -1, 1};
    static const int mx[7] = {0, 0, 0, 0, 0, 1, 0}, my[7] = {0, 0, 0, 0, 0, 0, 1};
    static const double shx[7] = {0, 0, 0, 0, 0, 0, 1}, shy[7] = {0, 0, 0, 0, 0, 0, -2};
    double worst = 0;
    for (int c = 0; c < 7; c++) {
      aug_make_copy(&s, key, c, image, ch, rows, cols, copy);
      const double f = part[c];
      const double x0 = cols * (1 - f) * (across[c] + 1) / 2, y0 = rows * (1 - f) * (down[c] + 1) / 2;
      for (int i = 0; i < ch * plane; i++) {
        const int y = i % plane / cols, x = i % cols, base = i / plane * plane;
        const double ox = x - shx[c], oy = y - shy[c]; /* the shift moves the cropped view */
        const double sx = x0 + (mx[c] ? cols - ox - 0.5 : ox + 0.5) * f - 0.5;
        const double sy = y0 + (my[c] ? rows - oy - 0.5 : oy + 0.5) * f - 0.5;
        const double want = bilinear_at(image + base, rows, cols, sx, sy);
        const double d = fabs(copy[i] - want);
        worst = d > worst ? d : worst;
        CHECK(d <= 2e-5, "%dx%dx%d, crop view %d, value %d: %.9g, the crop's %.9g", ch, rows,
              cols, c, i, copy[i], want);
      }
    }
    printf("crops (%dx%dx%d) against the crop itself: worst %.3g\n", ch, rows, cols, worst);
  }
  ttp_tta t = plain(1);
  CHECK(ttp_tta_set_views(&t, "crop tl", error, sizeof error) != TTP_OK && strstr(error, "crop:"),
        "a crop without its part: %s", error);
  CHECK(ttp_tta_set_views(&t, "crop xy 0.5", error, sizeof error) != TTP_OK, "crop xy");
  CHECK(ttp_tta_set_views(&t, "crop c 0.2", error, sizeof error) != TTP_OK, "crop 0.2");
  CHECK(ttp_tta_set_views(&t, "crop c 0.5 rotate 10", error, sizeof error) == TTP_OK, "%s", error);
  expect_refused(t, "takes no rotation or scale");
}

static void test_settings(void) {
  ttp_tta d, t;
  ttp_tta_init(&d);
  CHECK(d.flip_h == 0 && d.flip_v == 0 && d.rotate == 0 && d.scale_min == 1 && d.scale_max == 1 &&
            d.translate == 0 && d.edge == TTP_EDGE_ZERO && !spec_of(&d).geometric,
        "defaults");
  t = d, t.flip_h = 1.5f, expect_refused(t, "mirror probabilities");
  t = d, t.flip_v = NAN, expect_refused(t, "mirror probabilities");
  t = d, t.rotate = 181, expect_refused(t, "rotation must be 0..180");
  t = d, t.scale_min = 0.2f, expect_refused(t, "scale range");
  t = d, t.scale_min = 1.2f, expect_refused(t, "scale range");
  t = d, t.translate = 17, expect_refused(t, "translation must be 0..16");
  t = d, t.edge = (ttp_edge)7, expect_refused(t, "edge mode 7");
  /* a caller's structure from before the views: their defaults */
  t = d, t.struct_size = offsetof(ttp_tta, flip_h), t.flip_h = 7, t.edge = (ttp_edge)9;
  CHECK(!spec_of(&t).geometric, "an older structure");
  t = d, t.scale_max = 1.5f;
  CHECK(spec_of(&t).geometric, "a scale turns the views on");
}

int main(void) {
  test_rng rng = {43};
  test_edge_index();
  test_mirrors(&rng);
  test_whole_pixels(&rng);
  test_definition(&rng);
  test_draws();
  test_lists(&rng);
  test_crops(&rng);
  test_settings();
  printf("tta views: edge modes, exact mirrors, whole pixels, the definition, draws, lists and "
         "settings check out\n");
  return 0;
}
