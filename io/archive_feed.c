/* Archives read ahead by helper threads: see archive_feed.h. One mutex guards every job's
   state and queue; the reading itself runs outside it. */
#include "archive_feed.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A batch's block: 64 members of up to 4 KiB each (larger ones are allocated alone). */
#define BLOCK_BYTES ((size_t)256 << 10)

/* What a helper holds read ahead of one archive's turn, at most. */
#define JOB_BYTES ((size_t)32 << 20)
enum { JOB_BATCHES = 512 };

enum { JOB_WAITING, JOB_HELPER, JOB_READ, JOB_WALK };

struct io_feed_job {
  char* path;
  int state;            /* JOB_*: waiting for a reader; a helper reading; read whole; the walk's */
  io_archive* archive;  /* the reader's, while it reads */
  int opened, over;     /* the reader's: the archive opened (or failed to); nothing more */
  io_member_batch *head, *tail; /* read ahead by a helper, not yet taken */
  size_t queued, bytes;
};

struct io_feed {
  size_t max_member;
  const char* extensions;
  int hidden;
  pthread_mutex_t lock;
  pthread_cond_t changed; /* a job queued or claimed, a batch queued or taken, stopping */
  io_feed_job** jobs;
  size_t count, cap, next_waiting;
  int stopping, helpers;
  pthread_t ids[8];
};

void io_member_batch_free(io_member_batch* b) {
  if (!b) return;
  for (size_t i = 0; i < b->n; i++) {
    io_member_free_bytes(&b->members[i]);
    free(b->members[i].path), free(b->errors[i]);
  }
  free(b);
}

/* Reads up to a batch of the job's next members (the reader alone touches the archive). NULL
   when the archive is over; *nomem when memory ran out (e). */
static io_member_batch* read_batch(io_feed* f, io_feed_job* j, ttp_err* e) {
  if (j->over) return NULL;
  io_member_batch* b = calloc(1, sizeof *b);
  if (!b) {
    ERR_NOMEM(e, sizeof *b);
    return NULL;
  }
  /* The batch's small members in one block (archive.h: io_block). */
  io_block* block = io_block_new(BLOCK_BYTES);
  ttp_err why = {0};
  int rc = 1;
  if (!j->opened) {
    j->opened = 1;
    rc = io_archive_open(j->path, f->max_member, &j->archive, &why) == TTP_OK ? 1 : -1;
  }
  while (b->n < IO_MEMBER_BATCH) {
    io_member m = {0};
    if (rc > 0) rc = io_archive_next(j->archive, f->extensions, f->hidden, block, &m, &why);
    if (rc == 0) break;
    if (rc < 0 && !(m.path = strdup(j->path))) break;
    char* error = NULL;
    if (!m.bytes && !(error = strdup(why.message))) {
      free(m.path);
      break;
    }
    b->members[b->n] = m, b->errors[b->n] = error, b->n++;
    err_clear(&why);
    if (rc < 0) break; /* the archive's own error ends it */
  }
  io_block_release(block); /* its members hold it now */
  if (rc <= 0 || b->n < IO_MEMBER_BATCH) { /* over (or out of memory: over too) */
    j->over = 1;
    io_archive_close(j->archive);
    j->archive = NULL;
  }
  if (b->n == 0) {
    free(b);
    return NULL;
  }
  return b;
}

static void* helper(void* arg) {
  io_feed* f = arg;
  pthread_mutex_lock(&f->lock);
  for (;;) {
    while (!f->stopping && f->next_waiting < f->count &&
           f->jobs[f->next_waiting]->state != JOB_WAITING)
      f->next_waiting++;
    if (f->stopping) break;
    if (f->next_waiting == f->count) {
      pthread_cond_wait(&f->changed, &f->lock);
      continue;
    }
    io_feed_job* j = f->jobs[f->next_waiting++];
    j->state = JOB_HELPER;
    pthread_mutex_unlock(&f->lock);
    ttp_err e = {0};
    io_member_batch* b;
    while ((b = read_batch(f, j, &e))) {
      size_t bytes = 0;
      for (size_t i = 0; i < b->n; i++) bytes += b->members[i].size;
      pthread_mutex_lock(&f->lock);
      while (!f->stopping && (j->queued >= JOB_BATCHES || j->bytes > JOB_BYTES))
        pthread_cond_wait(&f->changed, &f->lock);
      if (f->stopping) {
        pthread_mutex_unlock(&f->lock);
        io_member_batch_free(b);
        break;
      }
      if (j->tail) j->tail->next = b;
      else j->head = b;
      j->tail = b, j->queued++, j->bytes += bytes;
      pthread_cond_broadcast(&f->changed);
      pthread_mutex_unlock(&f->lock);
    }
    io_archive_close(j->archive); /* after stopping half way */
    j->archive = NULL;
    pthread_mutex_lock(&f->lock);
    j->state = JOB_READ; /* out of memory reading: the archive ends there */
    pthread_cond_broadcast(&f->changed);
  }
  pthread_mutex_unlock(&f->lock);
  return NULL;
}

ttp_status io_feed_open(int helpers, size_t max_member, const char* extensions, int hidden,
                        io_feed** out, ttp_err* e) {
  *out = NULL;
  io_feed* f = calloc(1, sizeof *f);
  if (!f) return ERR_NOMEM(e, sizeof *f);
  f->max_member = max_member, f->extensions = extensions, f->hidden = hidden;
  pthread_mutex_init(&f->lock, NULL);
  pthread_cond_init(&f->changed, NULL);
  const int most = (int)(sizeof f->ids / sizeof *f->ids);
  for (int h = 0; h < helpers && h < most; h++) {
    if (pthread_create(&f->ids[h], NULL, helper, f) != 0) break; /* fewer: slower, not wrong */
    f->helpers++;
  }
  *out = f;
  return TTP_OK;
}

io_feed_job* io_feed_add(io_feed* f, const char* path, ttp_err* e) {
  io_feed_job* j = calloc(1, sizeof *j);
  char* copy = strdup(path);
  pthread_mutex_lock(&f->lock);
  if (j && copy && f->count == f->cap) {
    size_t cap = f->cap ? 2 * f->cap : 64;
    io_feed_job** grown = realloc(f->jobs, cap * sizeof *grown);
    if (grown) f->jobs = grown, f->cap = cap;
  }
  const int ok = j && copy && f->count < f->cap;
  if (ok) {
    j->path = copy;
    f->jobs[f->count++] = j;
    pthread_cond_broadcast(&f->changed);
  }
  pthread_mutex_unlock(&f->lock);
  if (!ok) {
    free(j), free(copy);
    ERR_NOMEM(e, strlen(path) + sizeof *j);
    return NULL;
  }
  return j;
}

io_member_batch* io_feed_next(io_feed* f, io_feed_job* j, ttp_err* e) {
  pthread_mutex_lock(&f->lock);
  if (j->state == JOB_WAITING) j->state = JOB_WALK; /* no helper took it: the walk reads it */
  while (j->state == JOB_HELPER && !j->head) pthread_cond_wait(&f->changed, &f->lock);
  io_member_batch* b = j->head;
  if (b) {
    j->head = b->next;
    if (!j->head) j->tail = NULL;
    b->next = NULL;
    j->queued--;
    for (size_t i = 0; i < b->n; i++) j->bytes -= b->members[i].size;
    pthread_cond_broadcast(&f->changed);
  }
  const int mine = j->state == JOB_WALK;
  pthread_mutex_unlock(&f->lock);
  return mine ? read_batch(f, j, e) : b;
}

void io_feed_close(io_feed* f) {
  if (!f) return;
  pthread_mutex_lock(&f->lock);
  f->stopping = 1;
  pthread_cond_broadcast(&f->changed);
  pthread_mutex_unlock(&f->lock);
  for (int h = 0; h < f->helpers; h++) pthread_join(f->ids[h], NULL);
  for (size_t i = 0; i < f->count; i++) {
    io_feed_job* j = f->jobs[i];
    while (j->head) {
      io_member_batch* next = j->head->next;
      io_member_batch_free(j->head);
      j->head = next;
    }
    io_archive_close(j->archive);
    free(j->path);
    free(j);
  }
  free(f->jobs);
  pthread_mutex_destroy(&f->lock);
  pthread_cond_destroy(&f->changed);
  free(f);
}
