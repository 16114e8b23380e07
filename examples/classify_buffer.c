/* Classify images that are already in memory: the simplest use of ttapipe.
 *
 *   classify_buffer MODEL [IDX_IMAGES]
 *
 * MODEL is a model directory (mnistCUDNN layout) or an ONNX file. With an IDX image file the
 * first 16 of its images are classified; without one, 16 images of random pixels are. Each line
 * printed: the image's index, its class, the class's label, its probability. */
#include <stdio.h>
#include <stdlib.h>

#include "ttapipe.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s MODEL [IDX_IMAGES]\n", argv[0]);
    return 2;
  }

  /* 1. Options: every field starts at its default; set the ones you need. */
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5; /* each image classified as 5 augmented copies, their outputs averaged */
  ttp_options options;
  ttp_options_init(&options);
  options.model_dir = argv[1];
  options.tta = &tta; /* read during ttp_open only */

  /* 2. Open: loads the model and prepares the best engine (a GPU's where there is one). A
        pipeline comes back even when opening fails, so that ttp_last_error can say why. */
  ttp_pipeline* p = NULL;
  if (ttp_open(&options, &p) != TTP_OK) {
    fprintf(stderr, "%s\n", ttp_last_error(p));
    ttp_close(p);
    return 1;
  }
  const ttp_model_info* model = ttp_model(p);
  const size_t image_bytes =
      (size_t)model->input_channels * model->input_rows * model->input_cols;

  /* 3. The images: count x channels x rows x cols bytes, 0 black .. 255 white. */
  enum { COUNT = 16 };
  uint8_t* pixels = malloc(COUNT * image_bytes);
  if (!pixels) return 1;
  if (argc == 3) {
    ttp_images idx;
    char error[TTP_ERROR_SIZE];
    if (ttp_read_idx_images(argv[2], &idx, error, sizeof error) != TTP_OK) {
      fprintf(stderr, "%s\n", error);
      return 1;
    }
    if ((size_t)idx.channels * idx.rows * idx.cols != image_bytes || idx.count < COUNT) {
      fprintf(stderr, "%s: not %d images of the model's size\n", argv[2], COUNT);
      return 1;
    }
    for (size_t i = 0; i < COUNT * image_bytes; i++) pixels[i] = idx.pixels[i];
    ttp_free(idx.pixels);
  } else {
    unsigned state = 12345;
    for (size_t i = 0; i < COUNT * image_bytes; i++)
      pixels[i] = (uint8_t)((state = state * 1103515245u + 12345u) >> 24);
  }

  /* 4. Classify: one call for all of them; the results come back in the same order. */
  ttp_result results[COUNT];
  if (ttp_classify(p, pixels, COUNT, results, NULL) != TTP_OK) {
    fprintf(stderr, "%s\n", ttp_last_error(p));
    ttp_close(p);
    return 1;
  }
  for (int i = 0; i < COUNT; i++)
    printf("%d %d %s %.6f\n", i, results[i].class_index,
           ttp_class_label(p, results[i].class_index), results[i].probability);

  /* 5. Close: releases everything, the GPU's memory included. */
  free(pixels);
  ttp_close(p);
  return 0;
}
