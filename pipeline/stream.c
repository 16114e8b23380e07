/* The streaming core's order, back-pressure and profile: see stream.h. */
#include "stream.h"

#include <stdlib.h>
#include <string.h>

#include "../augment/merge.h"

#include "clock.h"
#include "trace.h"

static int slot_at(const batch_stream* s, int k) { return (s->oldest + k) % s->depth; }

uint8_t* stream_acquire(batch_stream* s) {
  if (s->in_flight + s->acquired >= s->depth) return NULL;
  int slot = slot_at(s, s->in_flight + s->acquired);
  s->acquired++;
  return s->ops->input(s->impl, slot);
}

ttp_status stream_submit(batch_stream* s, size_t count, ttp_err* e) {
  if (s->acquired < 1 || count < 1 || count > s->capacity)
    return ERR(e, TTP_ERR_INTERNAL, "stream_submit: %d slots acquired, %zu images (capacity %zu)",
               s->acquired, count, s->capacity);
  int slot = slot_at(s, s->in_flight);
  TRY(s->ops->submit(s->impl, slot, count, s->profiling ? &s->stats : NULL, e));
  s->count[slot] = count;
  s->acquired--;
  s->in_flight++;
  return TTP_OK;
}

static ttp_status collect_timed(batch_stream* s, ttp_result* results, float* merged,
                                float* extras, size_t* count, double* waited, ttp_err* e) {
  *count = 0;
  if (s->in_flight < 1) return ERR(e, TTP_ERR_INTERNAL, "stream_collect: nothing in flight");
  int slot = s->oldest;
  *count = s->count[slot];
  if (s->temperature != 1.0f && !merged) merged = s->scratch;
  ttp_status st = s->ops->collect(s->impl, slot, *count, results, merged, extras,
                                  s->profiling ? &s->stats : NULL, waited, e);
  if (st == TTP_OK) aug_temper(s->temperature, s->classes, *count, results, merged);
  s->oldest = (s->oldest + 1) % s->depth;
  s->in_flight--;
  return st;
}

ttp_status stream_collect(batch_stream* s, ttp_result* results, float* merged, float* extras,
                          size_t* count, ttp_err* e) {
  double waited = 0;
  return collect_timed(s, results, merged, extras, count, &waited, e);
}

int stream_ready(batch_stream* s) {
  return s->in_flight > 0 && s->ops->ready(s->impl, s->oldest);
}

void stream_abandon(batch_stream* s) {
  for (int k = 0; k < s->in_flight; k++) s->ops->abandon(s->impl, slot_at(s, k));
  for (int k = s->in_flight; k < s->in_flight + s->acquired && s->ops->release; k++)
    s->ops->release(s->impl, slot_at(s, k));
  s->oldest = slot_at(s, s->in_flight);
  s->in_flight = 0;
  s->acquired = 0;
}

ttp_status stream_run(batch_stream* s, const uint8_t* images, size_t count, ttp_result* results,
                      float* merged, float* extras, ttp_err* e) {
  TRACE_PUSH("classify");
  double start = clock_seconds(), waited = 0;
  size_t done = 0, sent = 0, n = 0;
  ttp_status st = TTP_OK;
  while (st == TTP_OK && done < count) {
    uint8_t* in = sent < count ? stream_acquire(s) : NULL;
    if (in) {
      n = count - sent < s->capacity ? count - sent : s->capacity;
      TRACE_PUSH("stage images");
      memcpy(in, images + sent * s->pixels, n * s->pixels);
      TRACE_POP();
      st = stream_submit(s, n, e);
      if (st != TTP_OK) err_prefix(e, "images %zu..%zu of this call: ", sent, sent + n - 1);
      sent += n;
    } else { /* every slot busy, or everything sent: the oldest batch's results */
      st = collect_timed(s, results + done, merged ? merged + done * (size_t)s->classes : NULL,
                         extras ? extras + done * MERGE_EXTRAS : NULL, &n, &waited, e);
      if (st != TTP_OK) err_prefix(e, "images %zu..%zu of this call: ", done, done + n - 1);
      done += n;
    }
  }
  if (st != TTP_OK) stream_abandon(s);
  if (s->profiling) s->stats.host_ms += 1e3 * (clock_seconds() - start - waited);
  TRACE_POP();
  return st;
}

void stream_set_profiling(batch_stream* s, int on) {
  s->profiling = on != 0;
  if (on) s->stats = (ttp_run_stats){.struct_size = sizeof(ttp_run_stats)};
}

ttp_status stream_set_temperature(batch_stream* s, float temperature, ttp_err* e) {
  if (temperature != 1.0f && !s->scratch) {
    const size_t bytes = s->capacity * (size_t)s->classes * sizeof(float);
    if (!(s->scratch = malloc(bytes))) return ERR_NOMEM(e, bytes);
  }
  s->temperature = temperature;
  return TTP_OK;
}

void stream_close(batch_stream* s) {
  if (s->ops) {
    stream_abandon(s);
    s->ops->close(s->impl);
  }
  free(s->scratch);
  *s = (batch_stream){0};
}
