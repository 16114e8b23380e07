/* Classify image files and directories, printing each file's row as it comes and the progress
 * on stderr.
 *
 *   classify_files MODEL PATH...
 *
 * Directories are walked (PNG, JPEG, BMP, PGM/PPM), the files classified in sorted order while
 * a pool of threads decodes the next ones. A file that cannot be read is a row with its error;
 * the others go on. */
#include <stdio.h>

#include "ttapipe.h"

typedef struct progress {
  const ttp_pipeline* p;
  size_t done;
} progress;

/* Called once per file, in order, on the thread that called ttp_classify_paths. */
static void on_file(void* user, size_t index, const char* path, const ttp_result* result,
                    const float* probabilities, const char* error) {
  (void)index, (void)probabilities;
  progress* pr = user;
  if (error)
    printf("%s,error,%s\n", path, error);
  else
    printf("%s,%d,%s,%.6f\n", path, result->class_index,
           ttp_class_label(pr->p, result->class_index), result->probability);
  if (++pr->done % 1000 == 0) fprintf(stderr, "\r%zu files", pr->done);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL PATH...\n", argv[0]);
    return 2;
  }
  ttp_options options;
  ttp_options_init(&options);
  options.model_dir = argv[1];
  ttp_pipeline* p = NULL;
  if (ttp_open(&options, &p) != TTP_OK) {
    fprintf(stderr, "%s\n", ttp_last_error(p));
    ttp_close(p);
    return 1;
  }

  /* How files become the model's input: the defaults resize each image whole and invert one
     whose border is light (the shipped models read light strokes on black). */
  ttp_image_options images;
  ttp_image_options_init(&images);

  progress pr = {p, 0};
  ttp_bulk_stats stats = {.struct_size = sizeof stats};
  ttp_status s = ttp_classify_paths(p, (const char* const*)argv + 2, (size_t)argc - 2, NULL,
                                    &images, 0 /* a decoding thread per core */, on_file, &pr,
                                    &stats);
  if (s != TTP_OK) fprintf(stderr, "%s\n", ttp_last_error(p));
  fprintf(stderr, "\r%zu files: %zu classified, %zu failed, %.3f s\n", stats.files,
          stats.classified, stats.failed, stats.wall_seconds);
  ttp_close(p);
  return s == TTP_OK ? 0 : 1;
}
