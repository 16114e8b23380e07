/* TTA policy files (ttapipe.h, "TTA policies"): the augmentation as a small text file, one
   `key = value` a line, that `tune` writes and classify, eval, bench and the library read.
   Hostile input as any file: at most 64 KiB, every line checked, one line of error naming the
   file and the line; the values' ranges checked as ttp_open checks them (aug_spec_from). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tta.h"

enum { POLICY_MAX_BYTES = 64 * 1024 };

static const char* const merges[] = {"mean", "vote", "max", "gmean"};
static const char* const kinds[] = {"uniform", "gaussian"};
static const char* const edges[] = {"zero", "replicate", "reflect"};
/* A crop's places (ttp_view.crop_x, crop_y): the four corners and the centre. */
static const struct {
  const char* name;
  int x, y;
} crop_places[] = {{"tl", -1, -1}, {"tr", 1, -1}, {"bl", -1, 1}, {"br", 1, 1}, {"c", 0, 0}};
enum { CROP_PLACES = sizeof crop_places / sizeof *crop_places };

typedef enum key_id { K_COPIES, K_ORIGINAL, K_SHIFT, K_CONTRAST, K_BRIGHTNESS, K_NOISE,
                      K_NOISE_KIND, K_CLAMP, K_SEED, K_MERGE, K_TEMPERATURE, K_FLIP_H, K_FLIP_V,
                      K_ROTATE, K_SCALE, K_TRANSLATE, K_EDGE, K_VIEWS, K_WEIGHTS,
                      K_COUNT } key_id;
static const char* const keys[K_COUNT] = {"copies", "keep_original", "shift", "contrast",
                                          "brightness", "noise", "noise_kind", "clamp", "seed",
                                          "merge", "temperature", "flip_h", "flip_v", "rotate",
                                          "scale", "translate", "edge", "views", "weights"};

/* s without the spaces and tabs around it (in place). */
static char* trim(char* s) {
  while (*s == ' ' || *s == '\t') s++;
  char* end = s + strlen(s);
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) *--end = '\0';
  return s;
}

static int number(const char* s, double* v) {
  char* end;
  errno = 0;
  *v = strtod(s, &end);
  return end != s && *trim(end) == '\0' && errno == 0 && isfinite(*v);
}

static int choice(const char* s, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

/* One view's words (`flip_h rotate 10 ...`, in place) into v; 0, or -1 with the reason. */
static int parse_view(char* text, ttp_view* v, char* why, size_t size) {
  *v = (ttp_view){0, 0, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0, 0};
  int words = 0;
  char* at = NULL;
  const char* blank = " \t\r\n";
  for (char* w = strtok_r(text, blank, &at); w; w = strtok_r(NULL, blank, &at), words++) {
    double a, b;
    if (strcmp(w, "none") == 0) continue;
    if (strcmp(w, "flip_h") == 0 || strcmp(w, "flip_v") == 0) {
      *(w[5] == 'h' ? &v->flip_h : &v->flip_v) = 1;
    } else if (strcmp(w, "rotate") == 0) {
      const char* n = strtok_r(NULL, blank, &at);
      if (!n || !number(n, &a) || a < -180 || a > 180)
        return snprintf(why, size, "rotate: degrees after it, -180..180"), -1;
      v->rotate = (float)a;
    } else if (strcmp(w, "scale") == 0) {
      const char* n = strtok_r(NULL, blank, &at);
      if (!n || !number(n, &a) || a < 0.25 || a > 4)
        return snprintf(why, size, "scale: a zoom after it, 0.25..4"), -1;
      v->scale = (float)a;
    } else if (strcmp(w, "shift") == 0) {
      const char* x = strtok_r(NULL, blank, &at);
      const char* y = x ? strtok_r(NULL, blank, &at) : NULL;
      if (!y || !number(x, &a) || !number(y, &b) || fabs(a) > AUG_MAX_SHIFT ||
          fabs(b) > AUG_MAX_SHIFT)
        return snprintf(why, size, "shift: two numbers after it, DX DY, each -%d..%d",
                        AUG_MAX_SHIFT, AUG_MAX_SHIFT), -1;
      v->dx = (float)a, v->dy = (float)b;
    } else if (strcmp(w, "crop") == 0) {
      const char* where = strtok_r(NULL, blank, &at);
      const char* n = where ? strtok_r(NULL, blank, &at) : NULL;
      int i = CROP_PLACES - 1;
      while (i >= 0 && !(where && strcmp(where, crop_places[i].name) == 0)) i--;
      if (i < 0 || !n || !number(n, &a) || a < 0.25 || a > 1)
        return snprintf(why, size, "crop: where (tl, tr, bl, br or c) and the part of each side "
                        "kept, 0.25..1, after it"), -1;
      v->crop = (float)a, v->crop_x = crop_places[i].x, v->crop_y = crop_places[i].y;
    } else {
      return snprintf(why, size, "unknown view word '%.24s' (none, flip_h, flip_v, rotate DEG, "
                      "scale K, shift DX DY, crop POS F)", w), -1;
    }
  }
  return words ? 0 : (snprintf(why, size, "an empty view (write none)"), -1);
}

/* A list of views (`view; view; ...`, in place) into t; 0, or -1 with the reason in why. */
static int parse_views(char* text, ttp_tta* t, char* why, size_t size) {
  ttp_view views[TTP_MAX_VIEWS];
  int count = 0;
  for (char* view = text;; count++) {
    char* end = strchr(view, ';');
    if (end) *end = '\0';
    if (count == TTP_MAX_VIEWS)
      return snprintf(why, size, "more than %d views", TTP_MAX_VIEWS), -1;
    char reason[128];
    if (parse_view(view, &views[count], reason, sizeof reason) != 0)
      return snprintf(why, size, "view %d: %s", count + 1, reason), -1;
    if (!end) break;
    view = end + 1;
  }
  count++;
  memcpy(t->views, views, (size_t)count * sizeof *views);
  t->view_count = count, t->copies = count;
  return 0;
}

ttp_status ttp_tta_set_views(ttp_tta* t, const char* text, char* error, size_t error_size) {
  ttp_err e = {0};
  char* copy = text ? strdup(text) : NULL;
  char why[200];
  ttp_tta next;
  if (!t || !text) {
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_tta_set_views: a ttp_tta and a list are required");
  } else if (!copy) {
    ERR_NOMEM(&e, strlen(text) + 1);
  } else if (t->struct_size < offsetof(ttp_tta, views) + sizeof t->views) {
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_tta.struct_size is %zu: too old for a list of views",
        t->struct_size);
  } else if (next = *t, parse_views(copy, &next, why, sizeof why) != 0) {
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "%s", why);
  } else {
    *t = next;
  }
  free(copy);
  err_copy_out(&e, error, error_size);
  return e.status;
}

/* One `key = value` line into t; 0, or -1 with the reason in why. */
static int take(char* line, ttp_tta* t, int* seen, char* why, size_t size) {
  char* eq = strchr(line, '=');
  if (!eq) return snprintf(why, size, "not key = value"), -1;
  *eq = '\0';
  const char* key = trim(line);
  char* value = trim(eq + 1);
  int k = choice(key, keys, K_COUNT);
  if (k < 0) return snprintf(why, size, "unknown key '%.40s'", key), -1;
  if (seen[k]++) return snprintf(why, size, "%s given twice", keys[k]), -1;
  double a, b;
  char* comma = strchr(value, ',');
  switch ((key_id)k) {
  case K_CONTRAST:
  case K_BRIGHTNESS:
  case K_SCALE:
    if (!comma) return snprintf(why, size, "%s: LOW, HIGH", keys[k]), -1;
    *comma = '\0';
    if (!number(trim(value), &a) || !number(trim(comma + 1), &b))
      return snprintf(why, size, "%s: two numbers, LOW, HIGH", keys[k]), -1;
    if (k == K_CONTRAST) t->contrast_min = (float)a, t->contrast_max = (float)b;
    else if (k == K_BRIGHTNESS) t->brightness_min = (float)a, t->brightness_max = (float)b;
    else t->scale_min = (float)a, t->scale_max = (float)b;
    return 0;
  case K_COPIES:
  case K_SHIFT:
    if (!number(value, &a) || a != floor(a) || a < 0 || a > 1e6) /* range: below */
      return snprintf(why, size, "%s: a whole number", keys[k]), -1;
    if (k == K_COPIES && seen[K_WEIGHTS] && (int)a != t->copies)
      return snprintf(why, size, "copies = %d, but weights lists %d", (int)a, t->copies), -1;
    if (k == K_COPIES) t->copies = (int)a;
    else t->shift = (int)a;
    return 0;
  case K_NOISE:
  case K_TEMPERATURE:
  case K_FLIP_H:
  case K_FLIP_V:
  case K_ROTATE:
  case K_TRANSLATE: {
    if (!number(value, &a)) return snprintf(why, size, "%s: a number", keys[k]), -1;
    float* field[K_COUNT] = {[K_NOISE] = &t->noise, [K_TEMPERATURE] = &t->temperature,
                             [K_FLIP_H] = &t->flip_h, [K_FLIP_V] = &t->flip_v,
                             [K_ROTATE] = &t->rotate, [K_TRANSLATE] = &t->translate};
    *field[k] = (float)a;
    return 0;
  }
  case K_VIEWS: {
    const int copies = t->copies;
    if (parse_views(value, t, why, size) != 0) return -1;
    if ((seen[K_COPIES] || seen[K_WEIGHTS]) && copies != t->copies)
      return snprintf(why, size, "views: %d of them, but copies = %d", t->copies, copies), -1;
    return 0;
  }
  case K_WEIGHTS: { /* sets copies to their number, as views does */
    float w[TTP_MAX_COPIES] = {0};
    int count = 0;
    for (char* item = value;; item = comma + 1, comma = strchr(item, ',')) {
      if (comma) *comma = '\0';
      if (count == TTP_MAX_COPIES) return snprintf(why, size, "weights: more than %d", count), -1;
      if (!number(trim(item), &a)) return snprintf(why, size, "weights: numbers, W, W, ..."), -1;
      w[count++] = (float)a;
      if (!comma) break;
    }
    int some = 0;
    for (int c = 0; c < count; c++) some |= w[c] != 0;
    if (!some) return snprintf(why, size, "weights: not all 0 (equal ones: no key)"), -1;
    if ((seen[K_COPIES] || seen[K_VIEWS]) && count != t->copies)
      return snprintf(why, size, "weights: %d of them, but %d copies", count, t->copies), -1;
    memcpy(t->weights, w, sizeof w);
    t->copies = count;
    return 0;
  }
  case K_EDGE: {
    const int i = choice(value, edges, 3);
    if (i < 0) return snprintf(why, size, "edge: zero, replicate or reflect"), -1;
    t->edge = (ttp_edge)i;
    return 0;
  }
  case K_SEED: {
    char* end;
    errno = 0;
    unsigned long long s = strtoull(value, &end, 10);
    if (end == value || *end || errno || value[0] == '-')
      return snprintf(why, size, "seed: 0..2^64-1"), -1;
    t->seed = (uint64_t)s;
    return 0;
  }
  case K_ORIGINAL:
  case K_CLAMP: {
    const int yes = strcmp(value, "yes") == 0;
    if (!yes && strcmp(value, "no") != 0) return snprintf(why, size, "%s: yes or no", keys[k]), -1;
    if (k == K_ORIGINAL) t->keep_original = yes;
    else t->clamp = yes;
    return 0;
  }
  case K_NOISE_KIND: {
    const int i = choice(value, kinds, 2);
    if (i < 0) return snprintf(why, size, "noise_kind: uniform or gaussian"), -1;
    t->noise_kind = i ? TTP_NOISE_GAUSSIAN : TTP_NOISE_UNIFORM;
    return 0;
  }
  case K_MERGE: {
    const int i = strcmp(value, "logits") == 0 ? TTP_MERGE_GMEAN : choice(value, merges, 4);
    if (i < 0) return snprintf(why, size, "merge: mean, vote, max, gmean or logits"), -1;
    t->merge = (ttp_merge)i;
    return 0;
  }
  case K_COUNT: break;
  }
  return -1;
}

ttp_status ttp_read_tta_policy(const char* path, ttp_tta* out, char* error, size_t error_size) {
  ttp_err e = {0};
  FILE* f = path && out ? fopen(path, "rb") : NULL;
  char* text = NULL;
  size_t n = 0;
  if (!path || !out) {
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_read_tta_policy: a path and a policy are required");
  } else if (!f) {
    ERR(&e, TTP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  } else if (!(text = malloc(POLICY_MAX_BYTES + 1))) {
    ERR_NOMEM(&e, POLICY_MAX_BYTES + 1);
  } else {
    n = fread(text, 1, POLICY_MAX_BYTES + 1, f);
    if (ferror(f)) ERR(&e, TTP_ERR_IO, "%s: cannot read (a directory?)", path);
    else if (n > POLICY_MAX_BYTES)
      ERR(&e, TTP_ERR_FORMAT, "%s: larger than a policy (%d bytes)", path, POLICY_MAX_BYTES);
    else if (memchr(text, '\0', n))
      ERR(&e, TTP_ERR_FORMAT, "%s: a NUL byte: not a text file", path);
  }
  if (f) fclose(f);
  ttp_tta t;
  ttp_tta_init(&t);
  int seen[K_COUNT] = {0};
  for (size_t at = 0, line = 1; e.status == TTP_OK && at < n; line++) {
    char* start = text + at;
    char* nl = memchr(start, '\n', n - at);
    const size_t len = nl ? (size_t)(nl - start) : n - at;
    start[len] = '\0';
    at += len + 1;
    char* hash = strchr(start, '#');
    if (hash) *hash = '\0';
    char* content = trim(start);
    char why[160];
    if (*content && take(content, &t, seen, why, sizeof why) != 0)
      ERR(&e, TTP_ERR_FORMAT, "%s: line %zu: %s", path, line, why);
  }
  free(text);
  if (e.status == TTP_OK) { /* the ranges, as ttp_open checks them */
    aug_spec spec;
    ttp_merge merge;
    if (aug_spec_from(&t, &spec, &merge, NULL, &e) != TTP_OK) {
      err_prefix(&e, "%s: ", path);
      e.status = TTP_ERR_FORMAT; /* the file's content, not the caller's argument */
    }
  }
  if (e.status == TTP_OK) *out = t;
  err_copy_out(&e, error, error_size);
  return e.status;
}

/* The shortest decimal form of v that reads back as v (0.85, not 0.850000024). */
static const char* shortest(float v, char buf[32]) {
  for (int digits = 6; digits <= 9; digits++) {
    snprintf(buf, 32, "%.*g", digits, v);
    if (strtof(buf, NULL) == v) break;
  }
  return buf;
}

ttp_status ttp_write_tta_policy(const char* path, const ttp_tta* t, const char* comment,
                                char* error, size_t error_size) {
  ttp_err e = {0};
  FILE* f = path && t ? fopen(path, "w") : NULL;
  if (!path || !t) {
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_write_tta_policy: a path and a policy are required");
  } else if (!f) {
    ERR(&e, TTP_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
  } else {
    fputs("# ttapipe TTA policy (README: \"TTA policies\")\n", f);
    for (const char* c = comment; c && *c;) { /* each line of the comment a comment line */
      const size_t len = strcspn(c, "\n");
      fprintf(f, "# %.*s\n", (int)len, c);
      c += len + (c[len] == '\n');
    }
    char b[6][32];
    fprintf(f, "copies = %d\nkeep_original = %s\nshift = %d\ncontrast = %s, %s\n"
               "brightness = %s, %s\nnoise = %s\nnoise_kind = %s\nclamp = %s\n"
               "seed = %" PRIu64 "\nmerge = %s\ntemperature = %s\n",
            t->copies, t->keep_original ? "yes" : "no",
            t->shift, shortest(t->contrast_min, b[0]), shortest(t->contrast_max, b[1]),
            shortest(t->brightness_min, b[2]), shortest(t->brightness_max, b[3]),
            shortest(t->noise, b[4]), kinds[t->noise_kind == TTP_NOISE_GAUSSIAN],
            t->clamp ? "yes" : "no", t->seed, (unsigned)t->merge < 4 ? merges[t->merge] : "mean",
            shortest(t->temperature, b[5]));
    /* the geometric views where the caller's structure has them and any is on */
    const int has = t->struct_size >= offsetof(ttp_tta, edge) + sizeof t->edge;
    if (has && (aug_draws_views(t) || t->edge != TTP_EDGE_ZERO)) {
      char g[6][32];
      fprintf(f, "flip_h = %s\nflip_v = %s\nrotate = %s\nscale = %s, %s\ntranslate = %s\n"
                 "edge = %s\n",
              shortest(t->flip_h, g[0]), shortest(t->flip_v, g[1]), shortest(t->rotate, g[2]),
              shortest(t->scale_min, g[3]), shortest(t->scale_max, g[4]),
              shortest(t->translate, g[5]), (unsigned)t->edge < 3 ? edges[t->edge] : "zero");
    }
    const int lists = t->struct_size >= offsetof(ttp_tta, views) + sizeof t->views;
    for (int i = 0; lists && i < t->view_count && i < TTP_MAX_VIEWS; i++) {
      const ttp_view* v = &t->views[i];
      char words[160] = "", r[32], k[32], x[32], y[32];
      size_t n = 0;
      if (v->flip_h) n += snprintf(words + n, sizeof words - n, " flip_h");
      if (v->flip_v) n += snprintf(words + n, sizeof words - n, " flip_v");
      if (v->rotate != 0)
        n += snprintf(words + n, sizeof words - n, " rotate %s", shortest(v->rotate, r));
      if (v->scale != 1)
        n += snprintf(words + n, sizeof words - n, " scale %s", shortest(v->scale, k));
      if (v->dx != 0 || v->dy != 0)
        n += snprintf(words + n, sizeof words - n, " shift %s %s", shortest(v->dx, x),
                      shortest(v->dy, y));
      for (int i = 0; v->crop != 0 && i < CROP_PLACES; i++)
        if (v->crop_x == crop_places[i].x && v->crop_y == crop_places[i].y)
          n += snprintf(words + n, sizeof words - n, " crop %s %s", crop_places[i].name,
                        shortest(v->crop, k));
      fprintf(f, "%s%s%s", i ? ";" : "views =", n ? words : " none",
              i == t->view_count - 1 ? "\n" : "");
    }
    const int weighs = t->struct_size >= offsetof(ttp_tta, weights) + sizeof t->weights;
    int weighted = 0;
    for (int c = 0; weighs && c < TTP_MAX_COPIES; c++) weighted |= t->weights[c] != 0;
    for (int c = 0; weighted && c < t->copies && c < TTP_MAX_COPIES; c++) {
      char w[32];
      fprintf(f, "%s %s%s", c ? "," : "weights =", shortest(t->weights[c], w),
              c == t->copies - 1 ? "\n" : "");
    }
    if (fclose(f) != 0) ERR(&e, TTP_ERR_IO, "%s: writing failed", path);
  }
  err_copy_out(&e, error, error_size);
  return e.status;
}
