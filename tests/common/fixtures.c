/* Generated test inputs: see fixtures.h. */
#include "fixtures.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include <stb/stb_image_write.h>

const fixture_file fixture_model_files[FIXTURE_MODEL_FILES] = {
    {"conv1.bin", 20 * 1 * 5 * 5}, {"conv1.bias.bin", 20},
    {"conv2.bin", 50 * 20 * 5 * 5}, {"conv2.bias.bin", 50},
    {"ip1.bin", 500 * 800}, {"ip1.bias.bin", 500},
    {"ip2.bin", 10 * 500}, {"ip2.bias.bin", 10},
};

/* The fan-in of each layer, for the scale of its weights. */
static const double fan_in[FIXTURE_MODEL_FILES] = {25, 25, 500, 500, 800, 800, 500, 500};

void fixture_weights(uint64_t seed, int index, float* out) {
  test_rng r = {seed * 1000003u + (uint64_t)index};
  double a = 1.0 / sqrt(fan_in[index]);
  test_fill_uniform(&r, out, fixture_model_files[index].floats, -a, a);
}

void fixture_model_dir(const char* dir, uint64_t seed) {
  for (int i = 0; i < FIXTURE_MODEL_FILES; i++) {
    size_t n = fixture_model_files[i].floats;
    float* w = malloc(n * sizeof *w);
    uint8_t* bytes = malloc(n * 4);
    CHECK(w && bytes, "out of memory");
    fixture_weights(seed, i, w);
    for (size_t j = 0; j < n; j++) {
      uint32_t bits;
      memcpy(&bits, &w[j], 4);
      for (int b = 0; b < 4; b++) bytes[4 * j + b] = (uint8_t)(bits >> (8 * b));
    }
    test_write_file(test_path(dir, fixture_model_files[i].name), bytes, n * 4);
    free(w);
    free(bytes);
  }
}

void fixture_idx(const char* path, int ndims, const uint32_t* dims, const uint8_t* data, size_t n,
                 int gz) {
  size_t header = 4 + 4 * (size_t)ndims;
  uint8_t* buf = malloc(header + n);
  CHECK(buf, "out of memory");
  buf[0] = buf[1] = 0;
  buf[2] = 0x08;
  buf[3] = (uint8_t)ndims;
  for (int i = 0; i < ndims; i++)
    for (int b = 0; b < 4; b++) buf[4 + 4 * i + b] = (uint8_t)(dims[i] >> (24 - 8 * b));
  if (n) memcpy(buf + header, data, n);
  if (gz) {
    gzFile f = gzopen(path, "wb");
    CHECK(f, "cannot create %s", path);
    CHECK(gzwrite(f, buf, (unsigned)(header + n)) == (int)(header + n), "gzwrite %s", path);
    CHECK(gzclose(f) == Z_OK, "gzclose %s", path);
  } else {
    test_write_file(path, buf, header + n);
  }
  free(buf);
}

void fixture_pgm(const char* path, int rows, int cols, int maxval, const uint8_t* pixels) {
  char header[128];
  int h = snprintf(header, sizeof header, "P5\n# made by ttapipe's tests\n%d %d\n%d\n", cols, rows,
                   maxval);
  size_t n = (size_t)rows * cols;
  uint8_t* buf = malloc((size_t)h + n);
  CHECK(buf, "out of memory");
  memcpy(buf, header, (size_t)h);
  memcpy(buf + h, pixels, n);
  test_write_file(path, buf, (size_t)h + n);
  free(buf);
}

void fixture_png(const char* path, int w, int h, int channels, const uint8_t* pixels) {
  CHECK(stbi_write_png(path, w, h, channels, pixels, w * channels), "cannot write %s", path);
}

void fixture_bmp(const char* path, int w, int h, int channels, const uint8_t* pixels) {
  CHECK(stbi_write_bmp(path, w, h, channels, pixels), "cannot write %s", path);
}

void fixture_jpg(const char* path, int w, int h, int channels, const uint8_t* pixels) {
  CHECK(stbi_write_jpg(path, w, h, channels, pixels, 95), "cannot write %s", path);
}

void fixture_drawing(uint8_t* pixels, int w, int h, int channels, int light_ground, uint64_t seed) {
  test_rng r = {seed};
  double cx = w * 0.45, cy = h * 0.5, radius = (w < h ? w : h) * 0.28;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double d = sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy));
      int ink = fabs(d - radius) < radius * 0.25 || (x > w * 0.7 && x < w * 0.8 && y > h * 0.2);
      int v = ink ? 230 : 20;
      v += test_int(&r, -15, 15);
      if (light_ground) v = 255 - v;
      uint8_t* p = pixels + ((size_t)y * w + x) * channels;
      for (int c = 0; c < channels; c++) p[c] = (uint8_t)v;
      if (channels == 2 || channels == 4) p[channels - 1] = 255;
    }
}

ttp_pipeline* fixture_open_gpu(const char* model_dir, ttp_engine engine, ttp_precision precision,
                               int copies) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = copies;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = model_dir, o.engine = engine, o.precision = precision, o.tta = &tta;
  o.max_batch = 256, o.plan = TTP_PLAN_HEURISTIC, o.threads = 2;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  return p;
}

/* ttp_open with the defaults but these; *p set whatever the status. */
static ttp_status open_defaults(const char* model_dir, ttp_engine engine, const ttp_tta* tta,
                                ttp_pipeline** p) {
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = model_dir;
  o.engine = engine;
  o.tta = tta;
  *p = NULL;
  return ttp_open(&o, p);
}

ttp_pipeline* fixture_open(const char* model_dir, ttp_engine engine, const ttp_tta* tta) {
  ttp_pipeline* p;
  CHECK(open_defaults(model_dir, engine, tta, &p) == TTP_OK, "%s", ttp_last_error(p));
  return p;
}

ttp_pipeline* fixture_open_if_built(const char* model_dir, ttp_engine engine, const ttp_tta* tta) {
  ttp_pipeline* p;
  const ttp_status s = open_defaults(model_dir, engine, tta, &p);
  if (s == TTP_ERR_INVALID_ARGUMENT && strstr(ttp_last_error(p), "built without")) {
    ttp_close(p);
    return NULL;
  }
  CHECK(s == TTP_OK, "%s: %s", model_dir, ttp_last_error(p));
  return p;
}
