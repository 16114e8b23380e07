/* The values' arena: see plan.h. */
#include "plan.h"

#include <stdint.h>
#include <stdlib.h>

/* The free rooms, by offset: [at, at + size) floats each. */
typedef struct room {
  size_t at, size;
} room;

typedef struct rooms {
  room* r;
  int n, cap;
} rooms;

static size_t aligned(size_t n) { return (n + MODEL_PLAN_ALIGN - 1) / MODEL_PLAN_ALIGN * MODEL_PLAN_ALIGN; }

/* The first free room of at least n floats, taken from its front; or the arena's end, grown. */
static size_t take(rooms* f, size_t n, size_t* arena) {
  for (int i = 0; i < f->n; i++)
    if (f->r[i].size >= n) {
      const size_t at = f->r[i].at;
      f->r[i].at += n, f->r[i].size -= n;
      if (f->r[i].size == 0) {
        for (int j = i + 1; j < f->n; j++) f->r[j - 1] = f->r[j];
        f->n--;
      }
      return at;
    }
  /* A free room that ends at the arena's end grows instead of a new one after it. */
  if (f->n && f->r[f->n - 1].at + f->r[f->n - 1].size == *arena) {
    const size_t at = f->r[--f->n].at;
    *arena = at + n;
    return at;
  }
  const size_t at = *arena;
  *arena += n;
  return at;
}

/* [at, at + n) freed, merged with its neighbours. */
static int give(rooms* f, size_t at, size_t n) {
  int i = 0;
  while (i < f->n && f->r[i].at < at) i++;
  if (i > 0 && f->r[i - 1].at + f->r[i - 1].size == at) { /* after the one before */
    f->r[i - 1].size += n;
    if (i < f->n && f->r[i - 1].at + f->r[i - 1].size == f->r[i].at) {
      f->r[i - 1].size += f->r[i].size;
      for (int j = i + 1; j < f->n; j++) f->r[j - 1] = f->r[j];
      f->n--;
    }
    return 1;
  }
  if (i < f->n && at + n == f->r[i].at) { /* before the one after */
    f->r[i].at = at, f->r[i].size += n;
    return 1;
  }
  if (f->n == f->cap) {
    const int cap = f->cap ? 2 * f->cap : 16;
    room* grown = realloc(f->r, (size_t)cap * sizeof *grown);
    if (!grown) return 0;
    f->r = grown, f->cap = cap;
  }
  for (int j = f->n; j > i; j--) f->r[j] = f->r[j - 1];
  f->r[i] = (room){at, n};
  f->n++;
  return 1;
}

ttp_status model_plan_values(const model* m, model_plan* plan, ttp_err* e) {
  return model_plan_units(m, NULL, plan, e);
}

ttp_status model_plan_units(const model* m, const int* run_at, model_plan* plan, ttp_err* e) {
  const int values = m->layer_count + 1;
  *plan = (model_plan){0};
  plan->offsets = calloc((size_t)values, sizeof *plan->offsets);
  int* last = malloc((size_t)values * sizeof *last); /* the last layer that reads value v */
  rooms free_rooms = {0};
  if (!plan->offsets || !last) {
    free(last);
    model_plan_free(plan);
    return ERR_NOMEM(e, (size_t)values * (sizeof *plan->offsets + sizeof *last));
  }
  for (int v = 0; v < values; v++) last[v] = v == 0 || v == values - 1 ? m->layer_count : -1;
  for (int i = 0; i < m->layer_count; i++) {
    const int step = run_at ? run_at[i] : i;
    for (int k = 0; k < m->layers[i].input_count; k++)
      if (last[m->layers[i].inputs[k]] < step) last[m->layers[i].inputs[k]] = step;
  }
  ttp_status s = TTP_OK;
  plan->offsets[0] = take(&free_rooms, aligned(model_shape_size(m->input)), &plan->arena);
  plan->sum = aligned(model_shape_size(m->input));
  for (int i = 0; i < m->layer_count && s == TTP_OK; i++) {
    const size_t n = aligned(model_shape_size(m->layers[i].out));
    if (run_at && run_at[i] != i) { /* inside a unit: no room of its own */
      plan->offsets[i + 1] = SIZE_MAX;
    } else {
      plan->offsets[i + 1] = take(&free_rooms, n, &plan->arena);
      plan->sum += n;
    }
    /* The values whose last reader this is, freed once it has written. A value no layer reads
       (last -1, a dead branch) is freed at once. */
    for (int v = 0; v <= i + 1 && s == TTP_OK; v++)
      if (plan->offsets[v] != SIZE_MAX && (last[v] == i || (v == i + 1 && last[v] < 0)))
        if (!give(&free_rooms, plan->offsets[v], aligned(model_shape_size(model_value_shape(m, v)))))
          s = ERR_NOMEM(e, sizeof(room));
  }
  free(last);
  free(free_rooms.r);
  if (s != TTP_OK) model_plan_free(plan);
  return s;
}

void model_plan_free(model_plan* plan) {
  free(plan->offsets);
  *plan = (model_plan){0};
}
