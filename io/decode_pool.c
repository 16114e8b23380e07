/* The decode thread pool: see decode_pool.h. One mutex guards the bookkeeping; the work itself
   (io_load_image) runs outside it. A worker takes a few consecutive files at a time and reports
   them done when it comes back for more, so that sixteen workers do not queue on the mutex. */
#include "decode_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "archive_feed.h"
#include "budget.h"
#include "files.h"
#include "image.h"

/* Files a worker takes at once: few enough that the last files of a chunk spread over the
   workers, enough that the mutex is taken once per several files. */
enum { POOL_TAKE = 4 };

/* Bytes of archive members read ahead of the workers, at most (beyond the members a worker
   is about to take): what bounds the memory of reading tar shards. */
#define POOL_BYTES_AHEAD ((size_t)64 << 20)

/* The workers' budgets (budget.h): the bytes of the files being decoded, and what their
   decoding holds (rasters, preprocessing's planes, a decoder's own buffers). Whatever the files
   and the threads, the workers together hold about this much at most (one file beyond it
   goes through alone), besides a few small buffers each. */
#define POOL_FILE_BUDGET ((size_t)96 << 20)
#define POOL_PIXEL_BUDGET ((size_t)128 << 20)

/* A file whose bytes were read already (an archive's member), or that failed before decoding
   (the member or the archive could not be read): what a worker decodes or reports instead of
   reading a path. Both fields NULL: a file to read. */
typedef struct pool_blob {
  uint8_t* bytes;
  io_block* block; /* where bytes lie (archive.h), or NULL: malloc'd */
  size_t size;
  char* error; /* the one-line message (TTP_ERR_FORMAT) */
} pool_blob;

typedef struct pool_chunk {
  uint8_t* pixels;      /* the consumer's buffer */
  io_outcome* outcomes; /* chunk of them */
  const char** paths;   /* chunk of them: each file's path, set when it is taken */
  size_t done;          /* files of the chunk finished */
} pool_chunk;

struct io_pool {
  const char* const* paths; /* the files: the caller's array, or `owned` */
  char** owned;             /* files appended by a walk, freed at close */
  pool_blob* blobs;         /* beside owned: the members' bytes, until a worker takes them */
  size_t blob_bytes;        /* bytes of members appended and not yet decoded */
  size_t known, owned_cap;  /* files known so far */
  int final;                /* no more will come */
  size_t chunk, pixels;
  int rows, cols, window, threads, started;
  ttp_image_options options;
  pool_chunk* chunks;       /* window of them: chunk k lives in chunks[k % window] */
  pthread_t* ids;
  pthread_mutex_t lock;
  pthread_cond_t work;      /* files or a buffer arrived, or the pool stops */
  pthread_cond_t ready;     /* a chunk may be complete */
  pthread_cond_t room;      /* a member may be appended (io_pool_append_member) */
  size_t next;              /* the next file to take */
  size_t finished;          /* files decoded or failed */
  size_t provided;          /* chunks with a buffer: files of chunk >= provided must wait */
  int stopping;
  double seconds[3];
  io_budgets budgets;
};

/* Files in chunk k, when known: the whole chunk, or (the list final) what is left; else -1. */
static long long expected(const io_pool* p, size_t k) {
  size_t first = k * p->chunk;
  if (p->known >= first + p->chunk) return (long long)p->chunk;
  if (!p->final) return -1;
  return p->known > first ? (long long)(p->known - first) : 0;
}

static int complete(const io_pool* p, size_t k) {
  return (long long)p->chunks[k % p->window].done == expected(p, k);
}

static void* worker(void* arg) {
  io_pool* p = arg;
  double seconds[3] = {0, 0, 0};
  size_t indices[POOL_TAKE], freed = 0;
  const char* paths[POOL_TAKE];
  pool_blob blobs[POOL_TAKE];
  pool_chunk* c = NULL;
  size_t taken = 0, k = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    if (taken) { /* report the files just done */
      c->done += taken;
      p->finished += taken;
      if (complete(p, k)) pthread_cond_broadcast(&p->ready);
      taken = 0;
    }
    if (freed) {
      p->blob_bytes -= freed, freed = 0;
      pthread_cond_broadcast(&p->room);
    }
    while (!p->stopping && !(p->next < p->known && p->next / p->chunk < p->provided) &&
           !(p->final && p->next >= p->known))
      pthread_cond_wait(&p->work, &p->lock);
    if (p->stopping || p->next >= p->known) break;
    k = p->next / p->chunk;
    c = &p->chunks[k % p->window];
    size_t end = (k + 1) * p->chunk;
    while (taken < POOL_TAKE && p->next < p->known && p->next < end) {
      size_t i = p->next++;
      indices[taken] = i;
      paths[taken] = c->paths[i % p->chunk] = p->paths[i];
      blobs[taken] = p->blobs ? p->blobs[i] : (pool_blob){0}; /* this worker's now */
      taken++;
    }
    uint8_t* pixels = c->pixels;
    pthread_mutex_unlock(&p->lock);

    for (size_t t = 0; t < taken; t++) {
      size_t j = indices[t] % p->chunk;
      uint8_t* px = pixels + j * p->pixels;
      io_outcome* out = &c->outcomes[j];
      ttp_err e = {0};
      const pool_blob* b = &blobs[t];
      if (b->error)
        out->status = ERR(&e, TTP_ERR_FORMAT, "%s", b->error);
      else if (b->bytes)
        out->status = io_load_image_bytes(b->bytes, b->size, paths[t], &p->options, p->rows,
                                          p->cols, px, p->budgets.pixels, seconds + 1, &e);
      else
        out->status = io_load_image(paths[t], &p->options, p->rows, p->cols, px, &p->budgets,
                                    seconds, &e);
      freed += b->size;
      io_member_free_bytes(&(io_member){.bytes = b->bytes, .block = b->block});
      free(b->error);
      out->error = NULL;
      if (out->status != TTP_OK) {
        memset(px, 0, p->pixels);
        out->error = strdup(e.message);
      }
    }
    pthread_mutex_lock(&p->lock);
  }
  for (int s = 0; s < 3; s++) p->seconds[s] += seconds[s];
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

ttp_status io_pool_open(const char* const* paths, size_t count, int final,
                        const ttp_image_options* options, int channels, int rows, int cols,
                        int threads, size_t chunk, int window, io_pool** out, ttp_err* e) {
  *out = NULL;
  if (threads < 1 || chunk < 1 || window < 1)
    return ERR(e, TTP_ERR_INTERNAL, "io_pool_open: %d threads, chunk %zu, window %d", threads,
               chunk, window);
  io_pool* p = calloc(1, sizeof *p);
  if (!p) return ERR_NOMEM(e, sizeof *p);
  *p = (io_pool){.paths = paths, .known = count, .final = final, .chunk = chunk,
                 .pixels = (size_t)channels * rows * cols, .rows = rows, .cols = cols,
                 .window = window, .threads = threads};
  ttp_status s = io_image_options(options, channels, &p->options, e);
  if (s != TTP_OK) {
    free(p);
    return s;
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->work, NULL);
  pthread_cond_init(&p->ready, NULL);
  pthread_cond_init(&p->room, NULL);
  p->chunks = calloc((size_t)window, sizeof *p->chunks);
  p->ids = calloc((size_t)threads, sizeof *p->ids);
  p->budgets = (io_budgets){io_budget_new(POOL_FILE_BUDGET), io_budget_new(POOL_PIXEL_BUDGET)};
  s = p->chunks && p->ids && p->budgets.files && p->budgets.pixels
          ? TTP_OK
          : ERR_NOMEM(e, (size_t)window * sizeof *p->chunks);
  for (int w = 0; w < window && s == TTP_OK; w++) {
    p->chunks[w].outcomes = calloc(chunk, sizeof(io_outcome)); /* messages NULL */
    p->chunks[w].paths = malloc(chunk * sizeof(char*));
    if (!p->chunks[w].outcomes || !p->chunks[w].paths)
      s = ERR_NOMEM(e, chunk * (sizeof(io_outcome) + sizeof(char*)));
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

/* Room for n more appended files (the lock held). */
static ttp_status grow_owned(io_pool* p, size_t n, ttp_err* e) {
  if (p->known + n <= p->owned_cap) return TTP_OK;
  size_t cap = (p->known + n) * 2 + 1024;
  char** grown = realloc(p->owned, cap * sizeof *grown);
  if (!grown) return ERR_NOMEM(e, cap * sizeof *grown);
  p->owned = grown;
  p->paths = (const char* const*)grown;
  pool_blob* blobs = realloc(p->blobs, cap * sizeof *blobs);
  if (!blobs) return ERR_NOMEM(e, cap * sizeof *blobs);
  memset(blobs + p->owned_cap, 0, (cap - p->owned_cap) * sizeof *blobs);
  p->blobs = blobs, p->owned_cap = cap;
  return TTP_OK;
}

ttp_status io_pool_append(io_pool* p, char** paths, size_t n, ttp_err* e) {
  pthread_mutex_lock(&p->lock);
  /* A run that stopped (a cancel, a failure) takes no more: the walk ends at once. */
  ttp_status s = p->stopping || p->final
                     ? ERR(e, TTP_ERR_CANCELLED, "%s: the run stopped before this file", paths[0])
                     : grow_owned(p, n, e);
  if (s == TTP_OK) {
    memcpy(p->owned + p->known, paths, n * sizeof *paths);
    p->known += n;
    pthread_cond_broadcast(&p->work);
  } else {
    for (size_t i = 0; i < n; i++) free(paths[i]);
  }
  pthread_mutex_unlock(&p->lock);
  return s;
}

ttp_status io_pool_append_members(io_pool* p, io_member* members, char** errors, size_t n,
                                  ttp_err* e) {
  pthread_mutex_lock(&p->lock);
  /* At most a chunk (and this batch) past the buffers provided, and the bytes read ahead
     bounded: never a wait on a member the workers need (the ones in provided chunks are
     taken without it). */
  while (!p->stopping && !p->final &&
         (p->known >= (p->provided + 1) * p->chunk ||
          (p->blob_bytes > POOL_BYTES_AHEAD && p->next < p->known)))
    pthread_cond_wait(&p->room, &p->lock);
  ttp_status s = TTP_OK;
  if (p->stopping || p->final)
    s = ERR(e, TTP_ERR_CANCELLED, "%s: the run stopped before this file", members[0].path);
  if (s == TTP_OK) s = grow_owned(p, n, e);
  for (size_t i = 0; i < n && s == TTP_OK; i++) {
    const size_t size = members[i].bytes ? members[i].size : 0;
    p->owned[p->known] = members[i].path;
    p->blobs[p->known] = (pool_blob){members[i].bytes, members[i].block, size, errors[i]};
    p->blob_bytes += size;
    p->known++;
  }
  if (s == TTP_OK) pthread_cond_broadcast(&p->work); /* once a batch: the workers wake once */
  pthread_mutex_unlock(&p->lock);
  for (size_t i = 0; i < n && s != TTP_OK; i++) {
    io_member_free_bytes(&members[i]);
    free(members[i].path), free(errors[i]);
  }
  return s;
}

size_t io_pool_max_member(const io_pool* p) { return p->options.max_file_bytes; }

int io_pool_threads(const io_pool* p) { return p->started; }

void io_pool_finish(io_pool* p) {
  pthread_mutex_lock(&p->lock);
  p->final = 1;
  pthread_cond_broadcast(&p->work);
  pthread_cond_broadcast(&p->ready);
  pthread_cond_broadcast(&p->room);
  pthread_mutex_unlock(&p->lock);
}

/* A file the walk found: the pool's number of a file (its item), or an archive, whose members
   become items when its place comes (so that they are read in the walk's order). */
typedef struct walk_find {
  size_t item;
  io_feed_job* archive; /* NULL for a file */
} walk_find;

struct io_pool_walk {
  io_pool* pool;
  const char* const* paths;
  size_t count;
  int listed;             /* paths are the files themselves, in their order: no walk */
  ttp_list_options options; /* also the archives' member filter */
  io_feed* feed;          /* the archives found, read ahead (opened at the first) */
  char* batch[256];       /* files found, not yet appended */
  size_t n, items;        /* in the batch; items appended or batched so far */
  walk_find* finds;       /* everything found, by the walk's number */
  size_t found, finds_cap;
  size_t places[256];     /* items placed, not yet published */
  size_t m;
  ttp_err failed;         /* an append that failed (placed cannot say so): the walk stops */
  pthread_t id;
  ttp_err err;
  pthread_mutex_t lock;   /* guards what follows: the consumer's view */
  size_t* order;          /* the items' numbers in the walk's order */
  size_t placed, cap;
  int over;
};

static void flush_found(io_pool_walk* w) {
  if (w->n && w->failed.status == TTP_OK) io_pool_append(w->pool, w->batch, w->n, &w->failed);
  w->n = 0;
}

static void flush_placed(io_pool_walk* w) {
  if (!w->m) return;
  pthread_mutex_lock(&w->lock);
  memcpy(w->order + w->placed, w->places, w->m * sizeof *w->places);
  w->placed += w->m;
  pthread_mutex_unlock(&w->lock);
  w->m = 0;
}

/* Room in order for `items` items, so that placing them cannot fail. */
static ttp_status reserve_order(io_pool_walk* w, size_t items, ttp_err* e) {
  if (items <= w->cap) return TTP_OK;
  size_t cap = w->cap ? 2 * w->cap : 4096;
  pthread_mutex_lock(&w->lock);
  size_t* grown = realloc(w->order, cap * sizeof *grown);
  if (grown) w->order = grown, w->cap = cap;
  pthread_mutex_unlock(&w->lock);
  return grown ? TTP_OK : ERR_NOMEM(e, cap * sizeof *grown);
}

static void place_item(io_pool_walk* w, size_t item) {
  w->places[w->m++] = item;
  if (w->m == sizeof w->places / sizeof w->places[0]) flush_placed(w);
}

static ttp_status walk_found(void* user, const char* path, ttp_err* e) {
  io_pool_walk* w = user;
  if (w->failed.status != TTP_OK) return (*e = w->failed).status;
  if (w->found == w->finds_cap) {
    size_t cap = w->finds_cap ? 2 * w->finds_cap : 4096;
    walk_find* grown = realloc(w->finds, cap * sizeof *grown);
    if (!grown) return ERR_NOMEM(e, cap * sizeof *grown);
    w->finds = grown, w->finds_cap = cap;
  }
  if (io_is_archive(path)) {
    /* A helper for every four decoding threads reads archives ahead, up to three. */
    int helpers = io_pool_threads(w->pool) / 4;
    if (!w->feed)
      TRY(io_feed_open(helpers < 3 ? helpers : 3, io_pool_max_member(w->pool),
                       w->options.extensions, w->options.hidden, &w->feed, e));
    if (!(w->finds[w->found].archive = io_feed_add(w->feed, path, e))) return e->status;
    w->found++;
    return TTP_OK;
  }
  TRY(reserve_order(w, w->items + 1, e));
  if (!(w->batch[w->n] = strdup(path))) return ERR_NOMEM(e, strlen(path) + 1);
  w->finds[w->found++] = (walk_find){w->items++, NULL};
  /* The first files go to the workers in small batches, so that they start at once; the rest
     in larger ones, so that the pool's lock is seldom taken. */
  if (++w->n == (w->items <= 4096 ? 32 : sizeof w->batch / sizeof w->batch[0])) flush_found(w);
  return TTP_OK;
}

/* An archive's place has come: its members become items, read and placed in its order (the
   reading waits while the workers are far enough ahead), a batch at a time, as the feed gives
   them (read ahead by a helper, or now). */
static void expand_archive(io_pool_walk* w, io_feed_job* job) {
  flush_found(w); /* the files found before it take the numbers before its members */
  while (w->failed.status == TTP_OK) {
    io_member_batch* b = io_feed_next(w->feed, job, &w->failed);
    if (!b) break;
    if (reserve_order(w, w->items + b->n, &w->failed) != TTP_OK) {
      io_member_batch_free(b);
      break;
    }
    if (io_pool_append_members(w->pool, b->members, b->errors, b->n, &w->failed) == TTP_OK)
      for (size_t i = 0; i < b->n; i++) place_item(w, w->items++);
    free(b); /* what it held is the pool's now (or freed by it) */
  }
  flush_placed(w);
}

static void walk_placed(void* user, size_t found) {
  io_pool_walk* w = user;
  walk_find* f = &w->finds[found];
  if (f->archive) {
    expand_archive(w, f->archive);
    return;
  }
  /* A file placed before the last one found: a directory listed, its files found early all
     wanted now. (A file found and placed at once waits for its batch to fill.) */
  if (found + 1 < w->found) flush_found(w);
  place_item(w, f->item);
}

static int walk_hungry(void* user) {
  io_pool_walk* w = user;
  flush_found(w); /* what the workers have, then whether it is enough */
  flush_placed(w); /* asked as a directory's listing starts: the last one's order, at once */
  return io_pool_hungry(w->pool);
}

static void* walk_thread(void* arg) {
  io_pool_walk* w = arg;
  if (w->listed) { /* the caller's files in their order, the archives among them opened */
    for (size_t i = 0; i < w->count && w->err.status == TTP_OK; i++)
      if (walk_found(w, w->paths[i], &w->err) == TTP_OK) walk_placed(w, i);
  } else {
    io_walk(w->paths, w->count, &w->options,
            &(io_walk_fns){walk_found, walk_placed, walk_hungry, w}, &w->err);
  }
  flush_found(w);
  flush_placed(w);
  io_feed_close(w->feed); /* the helpers stop; archives never placed are dropped */
  w->feed = NULL;
  if (w->err.status == TTP_OK && w->failed.status != TTP_OK) w->err = w->failed;
  pthread_mutex_lock(&w->lock);
  w->over = 1;
  pthread_mutex_unlock(&w->lock);
  io_pool_finish(w->pool);
  return NULL;
}

ttp_status io_pool_walk_start(io_pool* pool, const char* const* paths, size_t count,
                              const ttp_list_options* o, io_pool_walk** out, ttp_err* e) {
  *out = NULL;
  io_pool_walk* w = calloc(1, sizeof *w);
  if (!w) return ERR_NOMEM(e, sizeof *w);
  w->pool = pool, w->paths = paths, w->count = count;
  w->listed = !o;
  if (o) w->options = *o;
  else ttp_list_options_init(&w->options);
  pthread_mutex_init(&w->lock, NULL);
  if (pthread_create(&w->id, NULL, walk_thread, w) != 0) {
    pthread_mutex_destroy(&w->lock);
    free(w);
    return ERR(e, TTP_ERR_INTERNAL, "cannot start the walk's thread");
  }
  *out = w;
  return TTP_OK;
}

size_t io_pool_walk_order(io_pool_walk* w, size_t from, size_t* out, size_t max, int* over) {
  pthread_mutex_lock(&w->lock);
  *over = w->over;
  size_t n = from < w->placed ? w->placed - from : 0;
  if (n > max) n = max, *over = 0;
  if (n) memcpy(out, w->order + from, n * sizeof *out);
  pthread_mutex_unlock(&w->lock);
  return n;
}

ttp_status io_pool_walk_join(io_pool_walk* w, ttp_err* e) {
  if (!w) return TTP_OK;
  pthread_join(w->id, NULL);
  ttp_status s = w->err.status;
  if (s != TTP_OK) *e = w->err;
  pthread_mutex_destroy(&w->lock);
  free(w->finds);
  free(w->order);
  free(w);
  return s;
}

int io_pool_hungry(io_pool* p) {
  pthread_mutex_lock(&p->lock);
  int hungry = p->known < p->next + p->chunk * (size_t)p->window;
  pthread_mutex_unlock(&p->lock);
  return hungry;
}

size_t io_pool_finished(io_pool* p) {
  pthread_mutex_lock(&p->lock);
  size_t finished = p->finished;
  pthread_mutex_unlock(&p->lock);
  return finished;
}

size_t io_pool_known(io_pool* p, int* final) {
  pthread_mutex_lock(&p->lock);
  size_t known = p->known;
  *final = p->final;
  pthread_mutex_unlock(&p->lock);
  return known;
}

void io_pool_provide(io_pool* p, size_t k, uint8_t* pixels) {
  pthread_mutex_lock(&p->lock);
  pool_chunk* c = &p->chunks[k % p->window];
  c->pixels = pixels;
  c->done = 0;
  p->provided = k + 1;
  pthread_cond_broadcast(&p->work);
  pthread_cond_broadcast(&p->room);
  pthread_mutex_unlock(&p->lock);
}

int io_pool_ready(io_pool* p, size_t k) {
  pthread_mutex_lock(&p->lock);
  int ready = k < p->provided && complete(p, k);
  pthread_mutex_unlock(&p->lock);
  return ready;
}

void io_pool_wait(io_pool* p, size_t k, const io_outcome** outcomes, const char* const** paths,
                  size_t* n) {
  pool_chunk* c = &p->chunks[k % p->window];
  pthread_mutex_lock(&p->lock);
  while (!complete(p, k)) pthread_cond_wait(&p->ready, &p->lock);
  *n = (size_t)expected(p, k);
  pthread_mutex_unlock(&p->lock);
  *outcomes = c->outcomes;
  *paths = (const char* const*)c->paths;
}

/* The messages of a window place's failed files, freed. */
static void free_messages(pool_chunk* c, size_t files) {
  for (size_t j = 0; j < files; j++) {
    free(c->outcomes[j].error);
    c->outcomes[j].error = NULL;
  }
}

void io_pool_release(io_pool* p, size_t k) {
  pthread_mutex_lock(&p->lock);
  pool_chunk* c = &p->chunks[k % p->window];
  c->pixels = NULL;
  free_messages(c, c->done);
  pthread_mutex_unlock(&p->lock);
}

void io_pool_close(io_pool* p, double seconds[3]) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  p->stopping = 1;
  pthread_cond_broadcast(&p->work);
  pthread_cond_broadcast(&p->room);
  pthread_mutex_unlock(&p->lock);
  for (int t = 0; t < p->started; t++) pthread_join(p->ids[t], NULL);
  if (seconds)
    for (int s = 0; s < 3; s++) seconds[s] += p->seconds[s];
  if (p->chunks)
    for (int w = 0; w < p->window; w++) {
      if (p->chunks[w].outcomes) free_messages(&p->chunks[w], p->chunk);
      free(p->chunks[w].outcomes);
      free(p->chunks[w].paths);
    }
  if (p->owned)
    for (size_t i = 0; i < p->known; i++) free(p->owned[i]);
  if (p->blobs) /* the members no worker took */
    for (size_t i = p->next; i < p->known; i++) {
      io_member_free_bytes(&(io_member){.bytes = p->blobs[i].bytes, .block = p->blobs[i].block});
      free(p->blobs[i].error);
    }
  free(p->owned);
  free(p->blobs);
  free(p->chunks);
  free(p->ids);
  io_budget_free(p->budgets.files);
  io_budget_free(p->budgets.pixels);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->work);
  pthread_cond_destroy(&p->ready);
  pthread_cond_destroy(&p->room);
  free(p);
}
