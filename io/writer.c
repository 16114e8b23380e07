/* Result writers: CSV (RFC 4180) and JSON Lines, one row per file. See ttapipe.h ("Writing
   results") for the columns. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../pipeline/error.h"
#include "ttapipe.h"

struct ttp_writer {
  const ttp_pipeline* p;
  FILE* out;
  ttp_format format;
  int topk, probabilities, classes;
  int* order; /* classes: indices by falling probability */
};

/* ---- quoting ----------------------------------------------------------------------------------- */

static void csv_field(FILE* f, const char* s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static int utf8_length(const unsigned char* s) {
  int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
        : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 2 && s[0] < 0xc2) return 0; /* overlong */
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;
  if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || s[0] > 0xf4 || (s[0] == 0xf4 && s[1] >= 0x90)))
    return 0;
  return n;
}

static void json_string(FILE* f, const char* text) {
  const unsigned char* s = (const unsigned char*)text;
  fputc('"', f);
  while (*s) {
    int n = utf8_length(s);
    if (*s == '"' || *s == '\\') {
      fprintf(f, "\\%c", *s);
    } else if (*s == '\n') {
      fputs("\\n", f);
    } else if (*s < 0x20 || n == 0) { /* control characters, and bytes that are not UTF-8 */
      fprintf(f, "\\u%04x", *s);
      n = 1;
    } else {
      fwrite(s, 1, (size_t)n, f);
    }
    s += n ? n : 1;
  }
  fputc('"', f);
}

/* The status of an error row: the message without the "path: " it starts with. */
static const char* status_of(const char* path, const char* error) {
  size_t n = strlen(path);
  return strncmp(error, path, n) == 0 && error[n] == ':' && error[n + 1] == ' ' ? error + n + 2
                                                                                : error;
}

/* ---- writer ---------------------------------------------------------------------------------- */

ttp_status ttp_writer_open(const ttp_pipeline* p, FILE* out, ttp_format format, int topk,
                           int probabilities, ttp_writer** writer, char* error,
                           size_t error_size) {
  ttp_err e = {0};
  const ttp_model_info* m = p ? ttp_model(p) : NULL;
  if (writer) *writer = NULL;
  if (!m || !out || !writer)
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_writer_open: an open pipeline, a stream and a writer "
        "pointer are required");
  else if (format != TTP_FORMAT_CSV && format != TTP_FORMAT_JSONL)
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "unknown format %d", (int)format);
  else if (topk < 1 || topk > m->classes)
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "top-k must be 1..%d, not %d", m->classes, topk);
  ttp_writer* w = e.status == TTP_OK ? calloc(1, sizeof *w) : NULL;
  if (e.status == TTP_OK && (!w || !(w->order = malloc((size_t)m->classes * sizeof(int))))) {
    free(w);
    w = NULL;
    ERR_NOMEM(&e, sizeof *w);
  }
  if (w) {
    *w = (ttp_writer){p, out, format, topk, probabilities != 0, m->classes, w->order};
    if (format == TTP_FORMAT_CSV) {
      fputs("path,status,class,label,probability", out);
      for (int k = 2; k <= topk; k++) fprintf(out, ",class_%d,label_%d,probability_%d", k, k, k);
      if (probabilities) {
        fputs(",spread", out);
        for (int c = 0; c < m->classes; c++) {
          char name[256];
          snprintf(name, sizeof name, "p_%s", ttp_class_label(p, c));
          fputc(',', out);
          csv_field(out, name);
        }
      }
      fputc('\n', out);
    }
    *writer = w;
  }
  err_copy_out(&e, error, error_size);
  return e.status;
}

/* w->order: the classes by falling probability, the lower index first on a tie; the result's
   class first (it may differ from the vector's top under a vote). */
static void rank(ttp_writer* w, const ttp_result* r, const float* probs) {
  int n = 0;
  w->order[n++] = r->class_index;
  for (int c = 0; c < w->classes; c++)
    if (c != r->class_index) w->order[n++] = c;
  for (int i = 2; i < w->classes; i++) /* insertion sort of the rest, stable */
    for (int j = i; j > 1 && probs[w->order[j]] > probs[w->order[j - 1]]; j--) {
      int t = w->order[j];
      w->order[j] = w->order[j - 1], w->order[j - 1] = t;
    }
}

static void write_csv(ttp_writer* w, const char* path, const ttp_result* r, const float* probs,
                      const char* error) {
  FILE* f = w->out;
  csv_field(f, path);
  fputc(',', f);
  if (error || !r) {
    csv_field(f, error ? status_of(path, error) : "error");
    int empty = 3 * w->topk + (w->probabilities ? 1 + w->classes : 0);
    for (int i = 0; i < empty; i++) fputc(',', f);
    fputc('\n', f);
    return;
  }
  fputs("ok", f);
  for (int k = 0; k < w->topk; k++) {
    int c = w->order[k];
    float p = k == 0 ? r->probability : probs[c];
    fprintf(f, ",%d,", c);
    csv_field(f, ttp_class_label(w->p, c));
    fprintf(f, ",%.7f", p);
  }
  if (w->probabilities) {
    fprintf(f, ",%.7f", r->spread);
    for (int c = 0; c < w->classes; c++) fprintf(f, ",%.7f", probs[c]);
  }
  fputc('\n', f);
}

static void write_json(ttp_writer* w, const char* path, const ttp_result* r, const float* probs,
                       const char* error) {
  FILE* f = w->out;
  fputs("{\"path\":", f);
  json_string(f, path);
  fputs(",\"status\":", f);
  if (error || !r) {
    json_string(f, error ? status_of(path, error) : "error");
    fputs(",\"class\":null,\"label\":null,\"probability\":null", f);
    if (w->topk > 1) fputs(",\"top\":null", f);
    if (w->probabilities) fputs(",\"spread\":null,\"probabilities\":null", f);
    fputs("}\n", f);
    return;
  }
  fprintf(f, "\"ok\",\"class\":%d,\"label\":", r->class_index);
  json_string(f, ttp_class_label(w->p, r->class_index));
  fprintf(f, ",\"probability\":%.9g", r->probability);
  if (w->topk > 1) {
    fputs(",\"top\":[", f);
    for (int k = 0; k < w->topk; k++) {
      int c = w->order[k];
      fprintf(f, "%s{\"class\":%d,\"label\":", k ? "," : "", c);
      json_string(f, ttp_class_label(w->p, c));
      fprintf(f, ",\"probability\":%.9g}", k == 0 ? r->probability : probs[c]);
    }
    fputc(']', f);
  }
  if (w->probabilities) {
    fprintf(f, ",\"spread\":%.9g,\"probabilities\":[", r->spread);
    for (int c = 0; c < w->classes; c++) fprintf(f, "%s%.9g", c ? "," : "", probs[c]);
    fputc(']', f);
  }
  fputs("}\n", f);
}

ttp_status ttp_writer_write(ttp_writer* w, const char* path, const ttp_result* result,
                            const float* probabilities, const char* error) {
  if (!w || !path || (result && !error && !probabilities)) return TTP_ERR_INVALID_ARGUMENT;
  if (result && !error) rank(w, result, probabilities);
  if (w->format == TTP_FORMAT_CSV)
    write_csv(w, path, result, probabilities, error);
  else
    write_json(w, path, result, probabilities, error);
  return ferror(w->out) ? TTP_ERR_IO : TTP_OK;
}

ttp_status ttp_writer_close(ttp_writer* w) {
  if (!w) return TTP_OK;
  ttp_status s = fflush(w->out) != 0 || ferror(w->out) ? TTP_ERR_IO : TTP_OK;
  free(w->order);
  free(w);
  return s;
}
