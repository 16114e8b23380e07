/* The decode thread pool: see decode_pool.h. One mutex guards the ring's bookkeeping; the work
   itself (ttp_load_image) runs outside it. */
#include "decode_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

typedef struct pool_slot {
  uint8_t* pixels;      /* chunk x rows x cols */
  io_outcome* outcomes; /* chunk */
  size_t done;          /* files of its chunk finished */
} pool_slot;

struct io_pool {
  const char* const* paths;
  size_t count, chunk, pixels;
  int rows, cols, window, threads, started;
  ttp_image_options options;
  pool_slot* slots;     /* window of them: chunk k lives in slots[k % window] */
  pthread_t* ids;
  pthread_mutex_t lock;
  pthread_cond_t space; /* a chunk was released: workers may go on */
  pthread_cond_t ready; /* a chunk may be complete */
  size_t next;          /* the next file to take */
  size_t released;      /* chunks consumed: files of chunk >= released + window must wait */
  int stopping;
  double seconds[3];
};

static size_t files_in(const io_pool* p, size_t k) {
  size_t first = k * p->chunk;
  return p->count - first < p->chunk ? p->count - first : p->chunk;
}

static void* worker(void* arg) {
  io_pool* p = arg;
  double seconds[3] = {0, 0, 0};
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->stopping && p->next < p->count && p->next / p->chunk >= p->released + p->window)
      pthread_cond_wait(&p->space, &p->lock);
    if (p->stopping || p->next >= p->count) break;
    size_t i = p->next++;
    pool_slot* slot = &p->slots[(i / p->chunk) % p->window];
    size_t j = i % p->chunk;
    pthread_mutex_unlock(&p->lock);

    uint8_t* px = slot->pixels + j * p->pixels;
    io_outcome* out = &slot->outcomes[j];
    ttp_err e = {0};
    out->status = io_load_image(p->paths[i], &p->options, p->rows, p->cols, px, seconds, &e);
    if (out->status != TTP_OK) {
      memset(px, 0, p->pixels);
      memcpy(out->error, e.message, sizeof out->error);
    }

    pthread_mutex_lock(&p->lock);
    if (++slot->done == files_in(p, i / p->chunk)) pthread_cond_broadcast(&p->ready);
  }
  for (int s = 0; s < 3; s++) p->seconds[s] += seconds[s];
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

ttp_status io_pool_open(const char* const* paths, size_t count, const ttp_image_options* options,
                        int rows, int cols, int threads, size_t chunk, int window, io_pool** out,
                        ttp_err* e) {
  *out = NULL;
  if (threads < 1 || chunk < 1 || window < 1)
    return ERR(e, TTP_ERR_INTERNAL, "io_pool_open: %d threads, chunk %zu, window %d", threads,
               chunk, window);
  io_pool* p = calloc(1, sizeof *p);
  if (!p) return ERR_NOMEM(e, sizeof *p);
  *p = (io_pool){.paths = paths, .count = count, .chunk = chunk, .pixels = (size_t)rows * cols,
                 .rows = rows, .cols = cols, .window = window, .threads = threads};
  if (options) {
    p->options = *options;
  } else {
    ttp_image_options_init(&p->options);
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->space, NULL);
  pthread_cond_init(&p->ready, NULL);
  p->slots = calloc((size_t)window, sizeof *p->slots);
  p->ids = calloc((size_t)threads, sizeof *p->ids);
  ttp_status s = p->slots && p->ids ? TTP_OK : ERR_NOMEM(e, (size_t)window * sizeof *p->slots);
  for (int w = 0; w < window && s == TTP_OK; w++) {
    p->slots[w].pixels = malloc(chunk * p->pixels);
    p->slots[w].outcomes = malloc(chunk * sizeof(io_outcome));
    if (!p->slots[w].pixels || !p->slots[w].outcomes)
      s = ERR_NOMEM(e, chunk * (p->pixels + sizeof(io_outcome)));
  }
  for (int t = 0; t < threads && s == TTP_OK; t++) {
    if (pthread_create(&p->ids[t], NULL, worker, p) != 0) {
      if (p->started == 0) s = ERR(e, TTP_ERR_INTERNAL, "cannot start a decoding thread");
      break; /* fewer threads than asked: slower, not wrong */
    }
    p->started++;
  }
  if (s != TTP_OK) {
    io_pool_close(p, NULL);
    return s;
  }
  *out = p;
  return TTP_OK;
}

void io_pool_wait(io_pool* p, size_t k, const uint8_t** pixels, const io_outcome** outcomes,
                  size_t* n) {
  pool_slot* slot = &p->slots[k % p->window];
  *n = files_in(p, k);
  pthread_mutex_lock(&p->lock);
  while (slot->done < *n) pthread_cond_wait(&p->ready, &p->lock);
  pthread_mutex_unlock(&p->lock);
  *pixels = slot->pixels;
  *outcomes = slot->outcomes;
}

void io_pool_release(io_pool* p, size_t k) {
  pthread_mutex_lock(&p->lock);
  p->slots[k % p->window].done = 0;
  p->released = k + 1;
  pthread_cond_broadcast(&p->space);
  pthread_mutex_unlock(&p->lock);
}

void io_pool_close(io_pool* p, double seconds[3]) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  p->stopping = 1;
  pthread_cond_broadcast(&p->space);
  pthread_mutex_unlock(&p->lock);
  for (int t = 0; t < p->started; t++) pthread_join(p->ids[t], NULL);
  if (seconds)
    for (int s = 0; s < 3; s++) seconds[s] += p->seconds[s];
  if (p->slots)
    for (int w = 0; w < p->window; w++) {
      free(p->slots[w].pixels);
      free(p->slots[w].outcomes);
    }
  free(p->slots);
  free(p->ids);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->space);
  pthread_cond_destroy(&p->ready);
  free(p);
}
