/* The decoding threads' memory budget: see budget.h. */
#include "budget.h"

#include <pthread.h>
#include <stdlib.h>

struct io_budget {
  pthread_mutex_t lock;
  pthread_cond_t freed;
  size_t limit, used, peak;
};

io_budget* io_budget_new(size_t limit) {
  io_budget* b = calloc(1, sizeof *b);
  if (!b) return NULL;
  pthread_mutex_init(&b->lock, NULL);
  pthread_cond_init(&b->freed, NULL);
  b->limit = limit;
  return b;
}

void io_budget_free(io_budget* b) {
  if (!b) return;
  pthread_mutex_destroy(&b->lock);
  pthread_cond_destroy(&b->freed);
  free(b);
}

size_t io_budget_take(io_budget* b, size_t n) {
  if (!b || n < IO_BUDGET_FREE) return 0;
  pthread_mutex_lock(&b->lock);
  while (b->used > 0 && b->used + n > b->limit) pthread_cond_wait(&b->freed, &b->lock);
  b->used += n;
  if (b->used > b->peak) b->peak = b->used;
  pthread_mutex_unlock(&b->lock);
  return n;
}

void io_budget_give(io_budget* b, size_t n) {
  if (!b || n == 0) return;
  pthread_mutex_lock(&b->lock);
  b->used -= n;
  pthread_cond_broadcast(&b->freed);
  pthread_mutex_unlock(&b->lock);
}

size_t io_budget_peak(const io_budget* b) {
  if (!b) return 0;
  pthread_mutex_lock((pthread_mutex_t*)&b->lock);
  const size_t peak = b->peak;
  pthread_mutex_unlock((pthread_mutex_t*)&b->lock);
  return peak;
}
