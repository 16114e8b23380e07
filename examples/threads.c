/* Several threads, each with its own pipeline, classifying parts of one array at once; then a
 * check that every image got the answer one pipeline gives it alone.
 *
 *   threads MODEL [THREADS]
 *
 * A pipeline is used by one thread at a time; pipelines share nothing, so threads need no
 * locks. On a GPU they share the device: four threads with a pipeline each classify more images
 * a second than one, in small calls especially (README, "Limits"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ttapipe.h"

enum { IMAGES = 600, MAX_THREADS = 16 };

typedef struct job {
  const char* model;
  const uint8_t* pixels; /* this thread's first image */
  size_t count, image_bytes;
  ttp_result* results;
  char error[TTP_ERROR_SIZE];
} job;

static void* run(void* arg) {
  job* j = arg;
  ttp_options options;
  ttp_options_init(&options);
  options.model_dir = j->model;
  options.threads = 1; /* the CPU engine: one thread a pipeline, the parallelism is ours */
  ttp_pipeline* p = NULL;
  ttp_status s = ttp_open(&options, &p);
  /* Small calls, as a server answering requests would make. */
  for (size_t i = 0; s == TTP_OK && i < j->count; i += 50) {
    size_t n = j->count - i < 50 ? j->count - i : 50;
    s = ttp_classify(p, j->pixels + i * j->image_bytes, n, j->results + i, NULL);
  }
  if (s != TTP_OK) snprintf(j->error, sizeof j->error, "%s", ttp_last_error(p));
  ttp_close(p);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s MODEL [THREADS]\n", argv[0]);
    return 2;
  }
  int threads = argc == 3 ? atoi(argv[2]) : 4;
  if (threads < 1 || threads > MAX_THREADS) threads = 4;

  /* The model's image size, from a pipeline opened for the purpose. */
  ttp_options options;
  ttp_options_init(&options);
  options.model_dir = argv[1];
  ttp_pipeline* p = NULL;
  if (ttp_open(&options, &p) != TTP_OK) {
    fprintf(stderr, "%s\n", ttp_last_error(p));
    ttp_close(p);
    return 1;
  }
  const ttp_model_info* m = ttp_model(p);
  const size_t image_bytes = (size_t)m->input_channels * m->input_rows * m->input_cols;
  uint8_t* pixels = malloc(IMAGES * image_bytes);
  ttp_result* alone = malloc(IMAGES * sizeof *alone);
  ttp_result* shared = malloc(IMAGES * sizeof *shared);
  if (!pixels || !alone || !shared) return 1;
  unsigned state = 7;
  for (size_t i = 0; i < IMAGES * image_bytes; i++)
    pixels[i] = (uint8_t)((state = state * 1103515245u + 12345u) >> 24);
  /* Every image's answer from this one pipeline, for the check. */
  if (ttp_classify(p, pixels, IMAGES, alone, NULL) != TTP_OK) {
    fprintf(stderr, "%s\n", ttp_last_error(p));
    return 1;
  }
  ttp_close(p);

  pthread_t ids[MAX_THREADS];
  job jobs[MAX_THREADS];
  for (int t = 0; t < threads; t++) {
    size_t first = (size_t)IMAGES * t / threads, end = (size_t)IMAGES * (t + 1) / threads;
    jobs[t] = (job){argv[1], pixels + first * image_bytes, end - first, image_bytes,
                    shared + first, ""};
    if (pthread_create(&ids[t], NULL, run, &jobs[t]) != 0) return 1;
  }
  int failed = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(ids[t], NULL);
    if (jobs[t].error[0]) fprintf(stderr, "thread %d: %s\n", t, jobs[t].error), failed = 1;
  }
  if (failed) return 1;
  size_t differ = 0;
  for (size_t i = 0; i < IMAGES; i++)
    differ += memcmp(&alone[i], &shared[i], sizeof alone[i]) != 0;
  printf("%d threads, %d images: %zu results differ from one pipeline's\n", threads, IMAGES,
         differ);
  free(pixels), free(alone), free(shared);
  return differ ? 1 : 0;
}
