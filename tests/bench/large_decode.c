/* Large images decoded at a reduced size against decoding them whole: the model's input each
   way, and the time of a file each way.

   Photographs made here (tests/common/large_images.h: gradients, blobs, edges, texture, noise)
   of 640 x 480, 1920 x 1080 and 4000 x 3000 pixels, as PNG and as JPEG (quality 90), loaded
   with ttp_load_image into a grey 28 x 28 input (inverted where the border is light, as
   classify does by default), a grey 28 x 28 one centred as MNIST was (--center mnist) and RGB
   32 x 32 and 64 x 64 ones, with full_size 1 (the whole image decoded, then resized) and 0 (a
   JPEG at a DCT scale n/8, a PNG averaged in boxes as its rows are inflated, then resized).
   Prints, per file and input, the largest and the mean difference of the input's bytes and the
   time of a load each way (the best of `runs`).

     large_decode [--runs N] [--validate]

   --validate (ctest): one run each, and fails when a difference passes the documented bound
   (README.md, "Large images"): at most LARGE_MAX_DIFF levels, on average LARGE_MEAN_DIFF. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "tests/common/check.h"
#include "tests/common/large_images.h"
#include "ttapipe.h"

#define LARGE_MAX_DIFF 8
#define LARGE_MEAN_DIFF 0.5

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct input {
  const char* name;
  int channels, side;
  ttp_center center;
  ttp_invert invert;
} input;

/* The best time of `runs` loads into px (channels x side x side). */
static double load(const char* path, const input* in, int full_size, int runs, uint8_t* px) {
  ttp_image_options o;
  ttp_image_options_init(&o);
  o.channels = in->channels, o.center = in->center, o.invert = in->invert;
  o.full_size = full_size;
  char error[TTP_ERROR_SIZE];
  double best = 1e9;
  for (int r = 0; r < runs; r++) {
    memset(px, 0xa5, (size_t)in->channels * in->side * in->side); /* poisoned */
    const double t0 = now();
    CHECK(ttp_load_image(path, &o, in->side, in->side, px, error, sizeof error) == TTP_OK, "%s",
          error);
    const double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char** argv) {
  int runs = 5, validate = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--validate") == 0) validate = 1, runs = 1;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else CHECK(0, "usage: %s [--runs N] [--validate]", argv[0]);
  }
  static const int sizes[][2] = {{640, 480}, {1920, 1080}, {4000, 3000}};
  static const input inputs[] = {
      {"grey 28", 1, 28, TTP_CENTER_NONE, TTP_INVERT_AUTO},
      {"mnist 28", 1, 28, TTP_CENTER_MNIST, TTP_INVERT_YES},
      {"rgb 32", 3, 32, TTP_CENTER_NONE, TTP_INVERT_NO},
      {"rgb 64", 3, 64, TTP_CENTER_NONE, TTP_INVERT_NO},
  };
  const char* dir = test_make_dir();
  char dir_copy[1024];
  snprintf(dir_copy, sizeof dir_copy, "%s", dir);
  static uint8_t a[3 * 64 * 64], b[3 * 64 * 64];
  int worst = 0, failed = 0;
  double worst_mean = 0;
  printf("%-22s %-9s %5s %6s %10s %10s %6s\n", "file", "input", "max", "mean", "full ms",
         "reduced ms", "speed");
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int format = 0; format < 2; format++) {
      char path[1100], name[64];
      snprintf(name, sizeof name, "photo-%dx%d.%s", sizes[s][0], sizes[s][1], format ? "jpg" : "png");
      snprintf(path, sizeof path, "%s/%s", dir_copy, name);
      if (format)
        large_jpeg(path, sizes[s][0], sizes[s][1], 3, 90, 1, large_photo_row, 7 + s);
      else
        large_png(path, sizes[s][0], sizes[s][1], 2, 8, large_photo_row, 7 + s);
      for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
        const input* in = &inputs[k];
        const double full = load(path, in, 1, runs, a), reduced = load(path, in, 0, runs, b);
        const size_t n = (size_t)in->channels * in->side * in->side;
        int most = 0;
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
          const int d = abs((int)a[i] - (int)b[i]);
          most = d > most ? d : most;
          sum += d;
        }
        const double mean = sum / (double)n;
        printf("%-22s %-9s %5d %6.3f %10.2f %10.2f %5.1fx\n", name, in->name, most, mean,
               1e3 * full, 1e3 * reduced, full / reduced);
        if (most > worst) worst = most;
        if (mean > worst_mean) worst_mean = mean;
        if (most > LARGE_MAX_DIFF || mean > LARGE_MEAN_DIFF) failed = 1;
      }
      remove(path);
    }
  test_remove_tree(dir_copy);
  printf("largest difference %d levels, largest mean %.3f (bound %d, %.2f)\n", worst, worst_mean,
         LARGE_MAX_DIFF, LARGE_MEAN_DIFF);
  if (validate && failed) {
    printf("FAIL: reduced decoding is further from full decoding than documented\n");
    return 1;
  }
  return 0;
}
