/* ttp_classify_files and ttp_classify_paths: the decode pool (io/decode_pool.h) decodes files
   straight into the streaming core's input slots (stream.h: the pinned slots of the GPU runner's
   ring, or the host stream's buffers), one chunk of the core's capacity per slot; a chunk is
   submitted as soon as it is decoded, and its results go to the caller's callback, in the order
   of the files, when it is collected. One ring, not two: the slots the pool is filling and the
   batches in flight share the core's depth. ttp_classify_paths also walks directories, on a
   thread of its own, handing each file to the pool as soon as its place in the order is known,
   so that decoding starts with the walk's first files rather than after its last.

   The calling thread, in order of preference: hands every free slot to the pool (the workers
   always have chunks to decode while there are slots); submits the next chunk once it is
   decoded; collects the oldest batch once it is done (its slot goes back to the pool before the
   callback writes its rows); and otherwise waits, for the next chunk's decoding while there is
   one (so that the GPU gets it the moment it is ready), else for the oldest batch. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../io/decode_pool.h"
#include "../io/files.h"
#include "clock.h"
#include "pipeline_internal.h"
#include "trace.h"

typedef struct files_run {
  ttp_pipeline* p;
  io_pool* pool;
  ttp_file_callback callback;
  void* user;
  ttp_result* results;
  float* merged;
  size_t provided, submitted, collected;
  ttp_bulk_stats st;
} files_run;

/* The chunks there are, as far as the list is known; SIZE_MAX while it may grow. */
static size_t chunks_known(files_run* r) {
  int final;
  size_t known = io_pool_known(r->pool, &final), capacity = r->p->stream.capacity;
  return final ? (known + capacity - 1) / capacity : (size_t)-1;
}

/* Every free slot to the pool, for the next chunks. */
static void provide_slots(files_run* r) {
  uint8_t* slot;
  size_t chunks = chunks_known(r);
  while (r->provided < chunks && (slot = stream_acquire(&r->p->stream)))
    io_pool_provide(r->pool, r->provided++, slot);
}

/* Collects the oldest batch and reports its files: its slot goes back to the pool first, so
   that the workers decode while the callback writes. */
static ttp_status collect_chunk(files_run* r) {
  ttp_pipeline* p = r->p;
  size_t classes = (size_t)p->model->classes, n, files;
  double t0 = clock_seconds();
  TRY(stream_collect(&p->stream, r->results, r->merged, &n, &p->err));
  provide_slots(r);
  double t1 = clock_seconds();
  const io_outcome* outcomes;
  const char* const* paths;
  size_t k = r->collected++;
  io_pool_wait(r->pool, k, &outcomes, &paths, &files);
  TRACE_PUSH("hand out results");
  /* Failed files are zeros in their slot: classified with the rest, never reported. */
  for (size_t j = 0; j < files; j++) {
    size_t i = k * p->stream.capacity + j;
    if (outcomes[j].status == TTP_OK) {
      r->st.classified++;
      r->callback(r->user, i, paths[j], &r->results[j], r->merged + j * classes, NULL);
    } else {
      r->st.failed++;
      r->callback(r->user, i, paths[j], NULL, NULL, outcomes[j].error);
    }
  }
  TRACE_POP();
  io_pool_release(r->pool, k);
  r->st.classify_seconds += t1 - t0;
  r->st.callback_seconds += clock_seconds() - t1;
  return TTP_OK;
}

/* Waits for the next chunk's decoding and submits it; *none: the list ended before it. */
static ttp_status submit_chunk(files_run* r, int* none) {
  const io_outcome* outcomes;
  const char* const* paths;
  size_t n;
  double t0 = clock_seconds();
  TRACE_PUSH("wait for decoding");
  io_pool_wait(r->pool, r->submitted, &outcomes, &paths, &n);
  TRACE_POP();
  double t1 = clock_seconds();
  r->st.waiting_seconds += t1 - t0;
  *none = n == 0;
  if (n == 0) return TTP_OK;
  TRY(stream_submit(&r->p->stream, n, &r->p->err));
  r->submitted++;
  r->st.classify_seconds += clock_seconds() - t1;
  return TTP_OK;
}

static ttp_status run_files(files_run* r) {
  batch_stream* s = &r->p->stream;
  for (;;) {
    provide_slots(r);
    size_t chunks = chunks_known(r);
    if (r->collected == chunks) return TTP_OK;
    int decoding = r->submitted < r->provided && r->submitted < chunks, none = 0;
    if (decoding && io_pool_ready(r->pool, r->submitted)) {
      TRY(submit_chunk(r, &none));
    } else if (stream_ready(s) || (s->in_flight > 0 && !decoding)) {
      TRY(collect_chunk(r)); /* done, or all there is to wait for */
    } else if (decoding) {
      TRY(submit_chunk(r, &none)); /* waits for its decoding; the batches in flight go on */
    } else {
      return ERR(&r->p->err, TTP_ERR_INTERNAL, "classifying files: nothing to wait for");
    }
    (void)none; /* an empty last chunk: the list is final now, chunks_known says so */
  }
}

static ttp_status check_call(ttp_pipeline* p, size_t count, const void* paths,
                             ttp_file_callback callback, int threads, const ttp_bulk_stats* stats) {
  err_clear(&p->err);
  if (!p->engine) return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "the pipeline is not open");
  if ((count && !paths) || !callback || threads < 0)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT,
               "classifying files: paths, a callback and threads >= 0 are required");
  if (stats && stats->struct_size < sizeof(ttp_bulk_stats))
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_bulk_stats.struct_size is %zu, not %zu",
               stats->struct_size, sizeof(ttp_bulk_stats));
  return TTP_OK;
}

/* The walk's thread: batches of paths into the pool, then the end of the list. */
typedef struct walker {
  io_pool* pool;
  const char* const* paths;
  size_t count;
  ttp_list_options options;
  char* batch[256];
  size_t n, emitted;
  ttp_err err;
} walker;

static ttp_status flush_walk(walker* w, ttp_err* e) {
  ttp_status s = io_pool_append(w->pool, w->batch, w->n, e);
  w->n = 0;
  return s;
}

static ttp_status emit_to_pool(void* user, const char* path, ttp_err* e) {
  walker* w = user;
  if (!(w->batch[w->n] = strdup(path))) return ERR_NOMEM(e, strlen(path) + 1);
  /* The first files go to the workers in small batches, so that they start at once; the rest
     in larger ones, so that the pool's lock is seldom taken. */
  w->emitted++;
  if (++w->n == (w->emitted <= 4096 ? 32 : sizeof w->batch / sizeof w->batch[0]))
    return flush_walk(w, e);
  return TTP_OK;
}

static void* walk_thread(void* arg) {
  walker* w = arg;
  ttp_status s = io_walk(w->paths, w->count, &w->options, emit_to_pool, w, &w->err);
  if (s == TTP_OK && w->n) flush_walk(w, &w->err);
  io_pool_finish(w->pool);
  return NULL;
}

/* Both entry points: a list (walk NULL) or paths to walk. */
static ttp_status classify(ttp_pipeline* p, const char* const* paths, size_t count,
                           const ttp_list_options* walk, const ttp_image_options* options,
                           int threads, ttp_file_callback callback, void* user,
                           ttp_bulk_stats* stats) {
  if (threads == 0) threads = pipeline_cores();
  double start = clock_seconds();
  const model* m = p->model;
  size_t capacity = p->stream.capacity, classes = (size_t)m->classes;
  files_run r = {.p = p, .callback = callback, .user = user,
                 .st = {.struct_size = sizeof r.st, .threads = threads}};
  r.results = malloc(capacity * sizeof *r.results);
  r.merged = malloc(capacity * classes * sizeof *r.merged);
  ttp_status s = r.results && r.merged
                     ? TTP_OK : ERR_NOMEM(&p->err, capacity * (sizeof *r.results + classes * 4));
  walker w = {.paths = paths, .count = count};
  pthread_t walking;
  int walk_started = 0;
  if (s == TTP_OK)
    s = io_pool_open(walk ? NULL : paths, walk ? 0 : count, !walk, options, m->input.h,
                     m->input.w, threads, capacity, p->stream.depth + 1, &r.pool, &p->err);
  if (s == TTP_OK && walk) { /* + 1: the chunk being reported */
    w.pool = r.pool;
    w.options = *walk;
    walk_started = pthread_create(&walking, NULL, walk_thread, &w) == 0;
    if (!walk_started) s = ERR(&p->err, TTP_ERR_INTERNAL, "cannot start the walk's thread");
  }
  if (s == TTP_OK) s = run_files(&r);
  /* After a failure: the workers stop first (they may be writing into slots), then the stream
     forgets its batches and slots. */
  if (walk_started) {
    if (s != TTP_OK) io_pool_finish(r.pool); /* nothing more will be read */
    pthread_join(walking, NULL);
    if (s == TTP_OK && w.err.status != TTP_OK) s = (p->err = w.err).status;
  }
  int final;
  r.st.files = r.pool ? io_pool_known(r.pool, &final) : 0;
  double seconds[3] = {0, 0, 0};
  io_pool_close(r.pool, seconds);
  stream_abandon(&p->stream); /* after success: only slots acquired for chunks that never came */
  r.st.read_seconds = seconds[0];
  r.st.decode_seconds = seconds[1];
  r.st.preprocess_seconds = seconds[2];
  r.st.wall_seconds = clock_seconds() - start;
  if (stats) *stats = r.st;
  free(r.results);
  free(r.merged);
  return s;
}

ttp_status ttp_classify_files(ttp_pipeline* p, const char* const* paths, size_t count,
                              const ttp_image_options* options, int threads,
                              ttp_file_callback callback, void* user, ttp_bulk_stats* stats) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  TRY(check_call(p, count, paths, callback, threads, stats));
  return classify(p, paths, count, NULL, options, threads, callback, user, stats);
}

ttp_status ttp_classify_paths(ttp_pipeline* p, const char* const* paths, size_t count,
                              const ttp_list_options* list_options,
                              const ttp_image_options* options, int threads,
                              ttp_file_callback callback, void* user, ttp_bulk_stats* stats) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  TRY(check_call(p, count, paths, callback, threads, stats));
  ttp_list_options walk;
  TRY(io_list_options(list_options, &walk, &p->err));
  return classify(p, paths, count, &walk, options, threads, callback, user, stats);
}
