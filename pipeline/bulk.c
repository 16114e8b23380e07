/* ttp_classify_files: the decode pool (io/decode_pool.h) fills chunks of images while the
   engine classifies the chunk before; each file's result goes to the caller's callback in the
   order of the paths. A chunk is one engine batch (max_batch images on the GPU). */
#include <stdlib.h>
#include <string.h>

#include "../io/decode_pool.h"
#include "clock.h"
#include "pipeline_internal.h"
#include "trace.h"

enum { CPU_CHUNK = 256 };

ttp_status ttp_classify_files(ttp_pipeline* p, const char* const* paths, size_t count,
                              const ttp_image_options* options, int threads,
                              ttp_file_callback callback, void* user, ttp_bulk_stats* stats) {
  if (!p) return TTP_ERR_INVALID_ARGUMENT;
  err_clear(&p->err);
  if (!p->engine) return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "the pipeline is not open");
  if ((count && !paths) || !callback || threads < 0)
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT,
               "ttp_classify_files: paths, a callback and threads >= 0 are required");
  if (stats && stats->struct_size < sizeof(ttp_bulk_stats))
    return ERR(&p->err, TTP_ERR_INVALID_ARGUMENT, "ttp_bulk_stats.struct_size is %zu, not %zu",
               stats->struct_size, sizeof(ttp_bulk_stats));
  if (threads == 0) threads = pipeline_cores();
  double start = clock_seconds();
  ttp_bulk_stats st = {.struct_size = sizeof st, .files = count, .threads = threads};
  const model* m = p->model;
  size_t classes = (size_t)m->classes;
  size_t chunk = p->engine == &cpu_engine_ops ? CPU_CHUNK : (size_t)p->options.max_batch;
  ttp_result* results = malloc(chunk * sizeof *results);
  float* merged = malloc(chunk * classes * sizeof *merged);
  io_pool* pool = NULL;
  ttp_status s = results && merged ? TTP_OK
                                   : ERR_NOMEM(&p->err, chunk * (sizeof *results + classes * 4));
  if (s == TTP_OK && count)
    s = io_pool_open(paths, count, options, m->input.h, m->input.w, threads, chunk,
                     p->options.slots, &pool, &p->err);
  for (size_t k = 0; s == TTP_OK && k * chunk < count; k++) {
    const uint8_t* pixels;
    const io_outcome* outcomes;
    size_t n;
    double t0 = clock_seconds();
    TRACE_PUSH("wait for decoding");
    io_pool_wait(pool, k, &pixels, &outcomes, &n);
    TRACE_POP();
    double t1 = clock_seconds();
    /* Failed files are zeros here: classified with the rest, never reported. */
    s = p->engine->run(p->engine_state, pixels, n, results, merged, &p->err);
    double t2 = clock_seconds();
    TRACE_PUSH("hand out results");
    for (size_t j = 0; s == TTP_OK && j < n; j++) {
      size_t i = k * chunk + j;
      if (outcomes[j].status == TTP_OK) {
        st.classified++;
        callback(user, i, paths[i], &results[j], merged + j * classes, NULL);
      } else {
        st.failed++;
        callback(user, i, paths[i], NULL, NULL, outcomes[j].error);
      }
    }
    TRACE_POP();
    io_pool_release(pool, k);
    st.waiting_seconds += t1 - t0;
    st.classify_seconds += t2 - t1;
    st.callback_seconds += clock_seconds() - t2;
  }
  double seconds[3] = {0, 0, 0};
  io_pool_close(pool, seconds);
  st.read_seconds = seconds[0];
  st.decode_seconds = seconds[1];
  st.preprocess_seconds = seconds[2];
  st.wall_seconds = clock_seconds() - start;
  if (stats) *stats = st;
  free(results);
  free(merged);
  return s;
}
