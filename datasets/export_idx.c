/* ttp_export: writes the images of an IDX set as one file each, the label in the name:
   OUT/NNNNN_label<L>.png (or .pgm), NNNNN the image's index in the set.
     ttp_export IMAGES LABELS OUT [--format png|pgm] [--offset N] [--limit N] [--invert]
   IMAGES and LABELS are IDX files, plain or gzip (LABELS may be "-": no label in the names).
   --invert writes dark strokes on white, as drawn on paper. PNG through Debian's
   stb_image_write (libstb-dev). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stb/stb_image_write.h>

#include "ttapipe.h"

static int usage(void) {
  fprintf(stderr, "usage: ttp_export IMAGES LABELS|- OUT [--format png|pgm] [--offset N] "
                  "[--limit N] [--invert]\n");
  return 2;
}

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  const char* format = "png";
  long offset = 0, limit = -1;
  int invert = 0;
  for (int i = 4; i < argc; i++) {
    if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) format = argv[++i];
    else if (strcmp(argv[i], "--offset") == 0 && i + 1 < argc) offset = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) limit = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--invert") == 0) invert = 1;
    else return usage();
  }
  if ((strcmp(format, "png") && strcmp(format, "pgm")) || offset < 0) return usage();
  char error[TTP_ERROR_SIZE];
  ttp_images im;
  uint8_t* labels = NULL;
  size_t label_count = 0;
  if (ttp_read_idx_images(argv[1], &im, error, sizeof error) != TTP_OK ||
      (strcmp(argv[2], "-") && ttp_read_idx_labels(argv[2], &labels, &label_count, error,
                                                   sizeof error) != TTP_OK)) {
    fprintf(stderr, "ttp_export: %s\n", error);
    return 1;
  }
  if (labels && label_count != im.count) {
    fprintf(stderr, "ttp_export: %zu labels for %zu images\n", label_count, im.count);
    return 1;
  }
  if (mkdir(argv[3], 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "ttp_export: %s: %s\n", argv[3], strerror(errno));
    return 1;
  }
  size_t end = im.count;
  if (limit >= 0 && (size_t)(offset + limit) < end) end = (size_t)(offset + limit);
  size_t pixels = (size_t)im.rows * im.cols;
  uint8_t* buf = malloc(pixels);
  int status = 0;
  for (size_t i = (size_t)offset; i < end && status == 0; i++) {
    for (size_t j = 0; j < pixels; j++) buf[j] = invert ? 255 - im.pixels[i * pixels + j] : im.pixels[i * pixels + j];
    char path[4096];
    if (labels)
      snprintf(path, sizeof path, "%s/%05zu_label%d.%s", argv[3], i, labels[i], format);
    else
      snprintf(path, sizeof path, "%s/%05zu.%s", argv[3], i, format);
    int ok;
    if (strcmp(format, "png") == 0) {
      ok = stbi_write_png(path, im.cols, im.rows, 1, buf, im.cols);
    } else {
      FILE* f = fopen(path, "wb");
      ok = f && fprintf(f, "P5\n%d %d\n255\n", im.cols, im.rows) > 0 &&
           fwrite(buf, 1, pixels, f) == pixels;
      ok = f && fclose(f) == 0 && ok;
    }
    if (!ok) {
      fprintf(stderr, "ttp_export: %s: cannot write\n", path);
      status = 1;
    }
  }
  if (status == 0) printf("ttp_export: %zu images written to %s\n", end - (size_t)offset, argv[3]);
  free(buf);
  ttp_free(im.pixels);
  ttp_free(labels);
  return status;
}
