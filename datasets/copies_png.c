/* ttp_copies: one image beside the copies a TTA policy makes of it, as one PNG strip (the
   README's picture of the views): the image as it is, then each copy in order (copy 0 included),
   each enlarged SCALE times by repeating pixels, 4 px of grey between them; and on standard
   output, one line a copy with its most probable class and probability (ttp_inspect_copies).
     ttp_copies MODEL IMAGES INDEX POLICY OUT.png [--scale K]
   MODEL: a model directory or ONNX file; IMAGES: an IDX image file, plain or gzip; INDEX: the
   image's index in it; POLICY: a TTA policy file (README: TTA policies). The CPU engine (the
   reference) runs the model. PNG through Debian's stb_image_write (libstb-dev). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb/stb_image_write.h>

#include "ttapipe.h"

static int usage(void) {
  fprintf(stderr, "usage: ttp_copies MODEL IMAGES INDEX POLICY OUT.png [--scale K]\n");
  return 2;
}

int main(int argc, char** argv) {
  if (argc != 6 && !(argc == 8 && strcmp(argv[6], "--scale") == 0)) return usage();
  const long index = strtol(argv[3], NULL, 10), scale = argc == 8 ? strtol(argv[7], NULL, 10) : 4;
  if (index < 0 || scale < 1 || scale > 16) return usage();
  char error[TTP_ERROR_SIZE];
  ttp_tta tta;
  ttp_tta_init(&tta);
  if (ttp_read_tta_policy(argv[4], &tta, error, sizeof error) != TTP_OK) {
    fprintf(stderr, "ttp_copies: %s\n", error);
    return 1;
  }
  ttp_images im;
  if (ttp_read_idx_images(argv[2], &im, error, sizeof error) != TTP_OK) {
    fprintf(stderr, "ttp_copies: %s\n", error);
    return 1;
  }
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = argv[1];
  o.engine = TTP_ENGINE_CPU;
  o.threads = 1;
  o.tta = &tta;
  ttp_pipeline* p = NULL;
  int rc = 0;
  if (ttp_open(&o, &p) != TTP_OK) {
    fprintf(stderr, "ttp_copies: %s\n", ttp_last_error(p));
    rc = 1;
  }
  const ttp_model_info* m = rc ? NULL : ttp_model(p);
  if (m && (im.rows != m->input_rows || im.cols != m->input_cols || im.channels != 1 ||
            (size_t)index >= im.count || m->input_channels != 1)) {
    fprintf(stderr, "ttp_copies: %s holds %zu images of %dx%d; the model reads %dx%d grey, "
            "image %ld asked\n", argv[2], im.count, im.rows, im.cols, m->input_rows,
            m->input_cols, index);
    rc = 1;
  }
  const int copies = tta.copies, h = m ? m->input_rows : 0, w = m ? m->input_cols : 0;
  const size_t pixels = (size_t)h * w;
  uint8_t* made = rc ? NULL : malloc((size_t)copies * pixels);
  float* probs = rc ? NULL : malloc((size_t)copies * m->classes * sizeof *probs);
  const int gap = 4, tile = (int)scale * w, width = (copies + 1) * tile + copies * gap,
            height = (int)scale * h;
  uint8_t* strip = rc ? NULL : malloc((size_t)width * height);
  if (!rc && (!made || !probs || !strip)) rc = (fprintf(stderr, "ttp_copies: out of memory\n"), 1);
  const uint8_t* image = rc ? NULL : im.pixels + (size_t)index * pixels;
  if (!rc && ttp_inspect_copies(p, image, made, probs) != TTP_OK)
    rc = (fprintf(stderr, "ttp_copies: %s\n", ttp_last_error(p)), 1);
  if (!rc) {
    memset(strip, 160, (size_t)width * height);
    for (int c = -1; c < copies; c++) { /* -1: the image as it is */
      const uint8_t* from = c < 0 ? image : made + (size_t)c * pixels;
      const int x0 = (c + 1) * (tile + gap);
      for (int y = 0; y < height; y++)
        for (int x = 0; x < tile; x++)
          strip[(size_t)y * width + x0 + x] = from[(size_t)(y / scale) * w + x / scale];
    }
    for (int c = 0; c < copies; c++) {
      const float* v = probs + (size_t)c * m->classes;
      int best = 0;
      for (int k = 1; k < m->classes; k++)
        if (v[k] > v[best]) best = k;
      printf("copy %d: %s %.3f\n", c, ttp_class_label(p, best), v[best]);
    }
    if (!stbi_write_png(argv[5], width, height, 1, strip, width))
      rc = (fprintf(stderr, "ttp_copies: %s: cannot write\n", argv[5]), 1);
  }
  free(made), free(probs), free(strip);
  ttp_close(p);
  ttp_free(im.pixels);
  return rc;
}
