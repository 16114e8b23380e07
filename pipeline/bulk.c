/* ttp_classify_files and ttp_classify_paths: the decode pool (io/decode_pool.h) decodes files
   straight into the streaming core's input slots (stream.h: the pinned slots of the GPU runner's
   ring, or the host stream's buffers), one chunk of the core's capacity per slot; a chunk is
   submitted as soon as it is decoded, and its results go to the caller's callback, in the order
   of the files, when it is collected. One ring, not two: the slots the pool is filling and the
   batches in flight share the core's depth. ttp_classify_paths also walks directories, on a
   thread of its own (io_pool_walk): while the workers are short of files it hands them a
   directory's files as they are read from it, so that a directory of 100,000 files is decoded
   while it is still being listed, and the rest in the walk's (sorted) order once it is known;
   results whose turn has not come wait, copied out of the core, and the callback sees every
   file in the walk's order. Tar archives (io/archive.h), walked or listed, are read on that
   thread too, member by member in their turn, and the workers decode the members' bytes.

   The calling thread, in order of preference: hands every free slot to the pool (the workers
   always have chunks to decode while there are slots); submits the next chunk once it is
   decoded; collects the oldest batch once it is done (its slot goes back to the pool before the
   callback writes its rows, two chunks' worth at most); reports more rows whose turn has come,
   a chunk's worth at a time; and otherwise waits, for the next chunk's decoding while there is
   one (so that the GPU gets it the moment it is ready), else for the oldest batch. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../augment/merge_core.h"
#include "../io/archive.h"
#include "../io/decode_pool.h"
#include "../io/files.h"
#include "clock.h"
#include "pipeline_internal.h"
#include "trace.h"

/* A collected chunk's results, until every file of it is reported: at first the core's and the
   pool's own arrays (a chunk reported at once is never copied), copied when some of its files
   must wait for their turn. */
typedef struct report_block {
  size_t n, left; /* files; those not yet reported */
  const ttp_result* results;
  const float* merged;
  const float* extras;          /* MERGE_EXTRAS a file (ttp_file_uncertainty) */
  const char* const* paths;     /* the pool's strings, valid until it is closed */
  const io_outcome* outcomes;   /* the pool's (not copied: errors instead) */
  char** errors;                /* copied: a failed file's message, else NULL */
  int copied;
} report_block;

enum { ORDER_BATCH = 4096 };

/* ttp_bulk_stats as its first version had it: the least struct_size taken. */
#define BULK_STATS_FIRST (offsetof(ttp_bulk_stats, wall_seconds) + sizeof(double))

/* While a GPU engine opens (open_behind), the files are decoded into buffers of the host's own,
   up to this many bytes of images (and chunks), and copied into the core's slots once it is
   open. */
#define EARLY_BYTES ((size_t)128 << 20)
enum { EARLY_CHUNKS = 256 };

typedef struct files_run {
  ttp_pipeline* p;
  io_pool* pool;
  io_pool_walk* walk; /* NULL: the list's own order */
  ttp_file_callback callback;
  void* user;
  ttp_result* results;
  float* merged;
  float* extras;
  size_t provided, submitted, collected;
  report_block** blocks; /* by chunk, while any of its files waits to be reported */
  size_t blocks_cap;
  size_t order[ORDER_BATCH]; /* the next files to report, by their number in the pool */
  size_t order_head, order_len, order_fetched;
  size_t reported;
  ttp_bulk_stats st;
  size_t capacity;          /* images a chunk: the core's batch */
  uint8_t** early;          /* the first early_count chunks' host buffers (open_behind), each
                               freed once copied into a slot */
  size_t early_count;
} files_run;

/* The chunks there are, as far as the list is known; SIZE_MAX while it may grow. */
static size_t chunks_known(files_run* r) {
  int final;
  size_t known = io_pool_known(r->pool, &final), capacity = r->capacity;
  return final ? (known + capacity - 1) / capacity : (size_t)-1;
}

/* Every free slot to the pool, for the next chunks; none until the chunks decoded while the
   engine opened are submitted (the core submits its slots in the order they were taken). */
static void provide_slots(files_run* r) {
  if (r->submitted < r->early_count) return;
  uint8_t* slot;
  size_t chunks = chunks_known(r);
  while (r->provided < chunks && (slot = stream_acquire(&r->p->stream)))
    io_pool_provide(r->pool, r->provided++, slot);
}

/* More of the order in which files are reported; 0 when none is known yet. */
static size_t fetch_order(files_run* r) {
  size_t n;
  if (r->walk) {
    int over;
    n = io_pool_walk_order(r->walk, r->order_fetched, r->order, ORDER_BATCH, &over);
  } else { /* a list: its own order */
    int final;
    size_t known = io_pool_known(r->pool, &final);
    n = known - r->order_fetched < ORDER_BATCH ? known - r->order_fetched : ORDER_BATCH;
    for (size_t i = 0; i < n; i++) r->order[i] = r->order_fetched + i;
  }
  r->order_fetched += n;
  r->order_head = 0;
  return r->order_len = n;
}

static void free_block(report_block* b) {
  if (b && b->copied) {
    for (size_t j = 0; j < b->n; j++) free(b->errors[j]);
    free(b->errors);
    free(b);
  }
}

/* Copies a block that must wait out of the core's and the pool's arrays (n files). */
static ttp_status keep_block(report_block** slot, size_t n, size_t classes, ttp_err* e) {
  report_block* b = *slot;
  size_t bytes = sizeof *b + n * (sizeof(ttp_result) + (classes + MERGE_EXTRAS) * sizeof(float) +
                                  sizeof(char*));
  report_block* c = malloc(bytes);
  char** errors = calloc(n, sizeof *errors);
  if (!c || !errors) {
    free(c), free(errors);
    return ERR_NOMEM(e, bytes);
  }
  /* the paths first: pointers need their alignment, which an odd count of results would lose */
  const char** paths = (const char**)(c + 1);
  ttp_result* results = (ttp_result*)(paths + n);
  float* merged = (float*)(results + n);
  float* extras = merged + n * classes;
  memcpy(results, b->results, n * sizeof *results);
  memcpy(merged, b->merged, n * classes * sizeof *merged);
  memcpy(extras, b->extras, n * MERGE_EXTRAS * sizeof *extras);
  memcpy(paths, b->paths, n * sizeof *paths);
  *c = (report_block){.n = n, .left = b->left, .results = results, .merged = merged,
                      .extras = extras, .paths = paths, .errors = errors, .copied = 1};
  for (size_t j = 0; j < n; j++)
    if (b->outcomes[j].status != TTP_OK &&
        !(errors[j] = strdup(io_outcome_message(&b->outcomes[j])))) {
      free_block(c);
      return ERR_NOMEM(e, ERR_MESSAGE_SIZE);
    }
  *slot = c;
  return TTP_OK;
}

/* Reports up to `most` files whose turn has come and whose results are collected; returns how
   many. final: every chunk is collected (numbers past the pool's files, which a failed walk
   never appended, are skipped). */
static size_t report(files_run* r, int final, size_t most) {
  size_t capacity = r->capacity, classes = (size_t)r->p->model->classes;
  int list_final;
  size_t known = final ? io_pool_known(r->pool, &list_final) : 0, done = 0;
  double t0 = clock_seconds();
  while (done < most) {
    if (r->order_head == r->order_len && fetch_order(r) == 0) break;
    size_t f = r->order[r->order_head], k = f / capacity, j = f % capacity;
    if (final && f >= known) {
      r->order_head++;
      continue;
    }
    if (k >= r->collected) break; /* its turn, not yet its results */
    report_block* b = r->blocks[k];
    const char* error = b->copied ? b->errors[j] : b->outcomes[j].status != TTP_OK
                                                       ? io_outcome_message(&b->outcomes[j])
                                                       : NULL;
    /* A failed file is zeros in its slot: classified with the rest, never reported. */
    if (!error) {
      r->st.classified++;
      ttp_uncertainty measures =
          pipeline_uncertainty(b->merged + j * classes, (int)classes, b->extras + j * MERGE_EXTRAS);
      r->p->file_uncertainty = &measures;
      r->callback(r->user, r->reported++, b->paths[j], &b->results[j], b->merged + j * classes,
                  NULL);
      r->p->file_uncertainty = NULL;
    } else {
      r->st.failed++;
      r->callback(r->user, r->reported++, b->paths[j], NULL, NULL, error);
    }
    r->order_head++, done++;
    if (--b->left == 0) {
      free_block(b);
      r->blocks[k] = NULL;
    }
  }
  if (done) r->st.callback_seconds += clock_seconds() - t0;
  return done;
}

/* Collects the oldest batch and reports the files whose turn has come: its slot goes back to the
   pool first, so that the workers decode while the callback writes. */
static ttp_status collect_chunk(files_run* r) {
  ttp_pipeline* p = r->p;
  size_t n, files;
  double t0 = clock_seconds();
  if (stream_collect(&p->stream, r->results, r->merged, r->extras, &n, &p->err) != TTP_OK) {
    err_prefix(&p->err, "classifying files, the batch after the first %zu in order: ",
               r->reported);
    return p->err.status;
  }
  provide_slots(r);
  double t1 = clock_seconds();
  const io_outcome* outcomes;
  const char* const* paths;
  size_t k = r->collected;
  io_pool_wait(r->pool, k, &outcomes, &paths, &files);
  if (k == r->blocks_cap) {
    size_t cap = r->blocks_cap ? 2 * r->blocks_cap : 64;
    report_block** grown = realloc(r->blocks, cap * sizeof *grown);
    if (!grown) return ERR_NOMEM(&p->err, cap * sizeof *grown);
    memset(grown + r->blocks_cap, 0, (cap - r->blocks_cap) * sizeof *grown);
    r->blocks = grown, r->blocks_cap = cap;
  }
  report_block view = {.n = files, .left = files, .results = r->results, .merged = r->merged,
                       .extras = r->extras, .paths = paths, .outcomes = outcomes};
  r->blocks[k] = files ? &view : NULL;
  r->collected++;
  TRACE_PUSH("hand out results");
  /* Up to two chunks' worth: the chunk's own rows and as many that waited for them (in a flat
     directory, files decoded in its listing's order before it was sorted); more, if more have
     their turn, when there is time. */
  report(r, 0, 2 * r->capacity);
  TRACE_POP();
  ttp_status s = TTP_OK;
  if (r->blocks[k]) /* some files wait for their turn */
    s = keep_block(&r->blocks[k], files, (size_t)p->model->classes, &p->err);
  if (s != TTP_OK) r->blocks[k] = NULL;
  io_pool_release(r->pool, k);
  r->st.classify_seconds += t1 - t0;
  return s;
}

/* Waits for the next chunk's decoding and submits it; nothing when the list ended before it
   (chunks_known says so from then on). */
static ttp_status submit_chunk(files_run* r) {
  const io_outcome* outcomes;
  const char* const* paths;
  size_t n;
  double t0 = clock_seconds();
  TRACE_PUSH("wait for decoding");
  io_pool_wait(r->pool, r->submitted, &outcomes, &paths, &n);
  TRACE_POP();
  double t1 = clock_seconds();
  r->st.waiting_seconds += t1 - t0;
  if (n == 0) return TTP_OK;
  if (r->submitted < r->early_count) { /* decoded while the engine opened: into a slot now */
    uint8_t* slot = stream_acquire(&r->p->stream); /* one is free (run_files) */
    if (!slot) return ERR(&r->p->err, TTP_ERR_INTERNAL, "classifying files: no slot is free");
    memcpy(slot, r->early[r->submitted], n * r->p->stream.pixels);
    free(r->early[r->submitted]);
    r->early[r->submitted] = NULL;
  }
  if (stream_submit(&r->p->stream, n, &r->p->err) != TTP_OK) {
    err_prefix(&r->p->err, "classifying files, chunk %zu of the run (%zu files): ", r->submitted,
               n);
    return r->p->err.status;
  }
  r->submitted++;
  r->st.classify_seconds += clock_seconds() - t1;
  return TTP_OK;
}

/* After ttp_cancel: no new batch; the batches in flight collected until one is given up (a
   host engine stops between images once the flag is set: TTP_ERR_CANCELLED; the batches after
   it are abandoned by the caller), and every file whose turn has come reported, so that the
   rows are the first files in order. */
static ttp_status stop_files(files_run* r) {
  ttp_status s = TTP_OK;
  while (s == TTP_OK && r->p->stream.in_flight > 0) s = collect_chunk(r);
  if (s != TTP_OK && s != TTP_ERR_CANCELLED) return s;
  report(r, 0, (size_t)-1);
  return ERR(&r->p->err, TTP_ERR_CANCELLED,
             "classifying files: cancelled after the first %zu files", r->reported);
}

/* A chunk collected, or the run stopped if the engine gave it up for a cancel. */
static ttp_status collect_or_stop(files_run* r) {
  ttp_status s = collect_chunk(r);
  return s == TTP_ERR_CANCELLED ? stop_files(r) : s;
}

static ttp_status run_files(files_run* r) {
  batch_stream* s = &r->p->stream;
  for (;;) {
    if (atomic_load(&r->p->cancel)) return stop_files(r);
    provide_slots(r);
    size_t chunks = chunks_known(r);
    if (r->collected == chunks) return TTP_OK;
    /* the next chunk to submit: decoded while the engine opened, it needs a free slot */
    int decoding = r->submitted < r->provided && r->submitted < chunks &&
                   (r->submitted >= r->early_count || s->in_flight + s->acquired < s->depth);
    if (decoding && io_pool_ready(r->pool, r->submitted)) {
      TRY(submit_chunk(r));
    } else if (stream_ready(s) || (s->in_flight > 0 && !decoding)) {
      TRY(collect_or_stop(r)); /* done, or all there is to wait for */
    } else if (report(r, 0, s->capacity) > 0) {
      /* rows whose turn came, in the time there is before waiting */
    } else if (decoding) {
      TRY(submit_chunk(r)); /* waits for its decoding; the batches in flight go on */
    } else {
      return ERR(&r->p->err, TTP_ERR_INTERNAL, "classifying files: nothing to wait for");
    }
  }
}

static ttp_status check_call(ttp_pipeline* p, size_t count, const void* paths,
                             ttp_file_callback callback, int threads, const ttp_bulk_stats* stats) {
  err_clear(&p->err);
  if (!pipeline_opening(p)) TRY(pipeline_ready(p)); /* else decoded while it opens */
  if ((count && !paths) || !callback || threads < 0)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT,
               "classifying files: paths, a callback and threads >= 0 are required");
  if (stats && stats->struct_size < BULK_STATS_FIRST)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_bulk_stats.struct_size is %zu, not %zu",
               stats->struct_size, sizeof(ttp_bulk_stats));
  /* an engine still opening has no batch in flight (and its thread writes the stream) */
  return pipeline_opening(p) ? TTP_OK : pipeline_idle(p);
}

/* While the engine opens on its thread (open_behind): host buffers for the first chunks, as
   many as the list may need up to EARLY_BYTES, decoded by the workers meanwhile; then the
   engine, waited for. */
static ttp_status decode_while_opening(files_run* r, size_t most) {
  const size_t bytes = r->capacity * model_shape_size(r->p->model->input);
  r->early = calloc(most, sizeof *r->early);
  if (!r->early) return ERR_NOMEM(&r->p->err, most * sizeof *r->early);
  TRACE_PUSH("decode while the engine opens");
  while (r->early_count < most && r->early_count < chunks_known(r)) {
    uint8_t* buffer = malloc(bytes);
    if (!buffer) break; /* fewer chunks ahead: slower, not wrong */
    r->early[r->early_count++] = buffer;
    io_pool_provide(r->pool, r->provided++, buffer);
  }
  const double t0 = clock_seconds();
  ttp_status s = pipeline_ready(r->p);
  r->st.opening_seconds = clock_seconds() - t0;
  r->st.opening_files = io_pool_finished(r->pool);
  TRACE_POP();
  if (s == TTP_OK && r->p->stream.capacity != r->capacity)
    return ERR(&r->p->err, TTP_ERR_INTERNAL, "classifying files: the engine's batch holds %zu "
               "images, not max_batch (%zu)", r->p->stream.capacity, r->capacity);
  return s;
}

/* Both entry points: a list (walk NULL) or paths to walk. */
static ttp_status classify(ttp_pipeline* p, const char* const* paths, size_t count,
                           const ttp_list_options* walk, const ttp_image_options* options,
                           int threads, ttp_file_callback callback, void* user,
                           ttp_bulk_stats* stats) {
  if (threads == 0) threads = pipeline_cores();
  double start = clock_seconds();
  const model* m = p->model;
  /* The engine still opening: its batch will hold max_batch images (open_behind). */
  const int behind = pipeline_opening(p);
  size_t capacity = behind ? (size_t)p->options.max_batch : p->stream.capacity;
  size_t classes = (size_t)m->classes;
  size_t early = EARLY_BYTES / (capacity * model_shape_size(m->input));
  early = early < 1 ? 1 : early > EARLY_CHUNKS ? EARLY_CHUNKS : early;
  files_run r = {.p = p, .callback = callback, .user = user, .capacity = capacity,
                 .st = {.struct_size = sizeof r.st, .threads = threads}};
  r.results = malloc(capacity * sizeof *r.results);
  r.merged = malloc(capacity * classes * sizeof *r.merged);
  r.extras = malloc(capacity * MERGE_EXTRAS * sizeof *r.extras);
  ttp_status s = r.results && r.merged && r.extras
                     ? TTP_OK
                     : ERR_NOMEM(&p->err, capacity * (sizeof *r.results +
                                                       (classes + MERGE_EXTRAS) * sizeof(float)));
  io_pool_walk* walking = NULL;
  /* A list holding archives is fed by the walk's thread too (without walking): it opens each
     archive when its turn comes. */
  int fed = walk != NULL;
  for (size_t i = 0; i < count && !fed; i++) fed = io_is_archive(paths[i]);
  /* A window of depth + 1: the slots in flight and the chunk being reported; while the engine
     opens, the early chunks besides (and a depth not known yet: the most there is). */
  const int window = behind ? (int)early + STREAM_MAX_SLOTS + 1 : p->stream.depth + 1;
  if (s == TTP_OK)
    s = io_pool_open(fed ? NULL : paths, fed ? 0 : count, !fed, options, m->input.c,
                     m->input.h, m->input.w, threads, capacity, window, &r.pool, &p->err);
  if (s == TTP_OK && fed) s = io_pool_walk_start(r.pool, paths, count, walk, &walking, &p->err);
  r.walk = walking;
  if (s == TTP_OK && behind) s = decode_while_opening(&r, early);
  if (s == TTP_OK) s = run_files(&r);
  int final;
  r.st.files = r.pool ? io_pool_known(r.pool, &final) : 0;
  if (s == TTP_OK) { /* every chunk collected: the files still waiting for their turn */
    report(&r, 1, (size_t)-1);
    if (r.reported != r.st.files)
      s = ERR(&p->err, TTP_ERR_INTERNAL, "classifying files: %zu of %zu files reported",
              r.reported, r.st.files);
  }
  for (size_t k = 0; k < r.blocks_cap; k++) free_block(r.blocks[k]); /* after a failure */
  free(r.blocks);
  /* After a failure: the workers stop first (they may be writing into slots), then the stream
     forgets its batches and slots. */
  if (walking) {
    if (s != TTP_OK) io_pool_finish(r.pool); /* nothing more will be read */
    ttp_err walk_err = {0};
    ttp_status ws = io_pool_walk_join(walking, &walk_err);
    if (s == TTP_OK && ws != TTP_OK) s = (p->err = walk_err).status;
  }
  double seconds[3] = {0, 0, 0};
  io_pool_close(r.pool, seconds);
  for (size_t k = 0; k < r.early_count; k++) free(r.early[k]); /* after a failure */
  free(r.early);
  /* after success: only slots acquired for chunks that never came; none while the engine is
     still opening (a failure before the wait for it), whose stream its thread may be writing */
  if (!pipeline_opening(p) && p->engine) stream_abandon(&p->stream);
  r.st.read_seconds = seconds[0];
  r.st.decode_seconds = seconds[1];
  r.st.preprocess_seconds = seconds[2];
  r.st.wall_seconds = clock_seconds() - start;
  if (stats) { /* the fields the caller's header has */
    const size_t size = stats->struct_size < sizeof r.st ? stats->struct_size : sizeof r.st;
    memcpy(stats, &r.st, size);
    stats->struct_size = size;
  }
  free(r.results);
  free(r.merged);
  free(r.extras);
  atomic_store(&p->cancel, 0); /* a request lasts one call */
  return s;
}

void ttp_cancel(ttp_pipeline* p) {
  if (p) atomic_store(&p->cancel, 1);
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
