/* Result writers: CSV (RFC 4180) and JSON Lines, one row per file. See ttapipe.h ("Writing
   results") for the columns. Rows are formatted into the writer's own buffer and handed to the
   stream whole, a flush at a time (WRITER_FLUSH_BYTES of rows, ttp_writer_flush, or the close):
   the stream never holds part of a row that a later flush completes, so a process killed
   between flushes leaves whole rows behind (on an unbuffered stream each flush is one
   write(2)).

   Text fields are written as ttapipe.h ("Writing results") says: a status is a message made
   printable (err_escape, the library's one escape), a CSV path or label escaped losslessly by the
   same function with its backslashes, a CSV text cell that a spreadsheet would take for a formula
   marked with an apostrophe, a JSON string escaped with lone surrogates for bytes that are not
   UTF-8. The labels' cells are made once, at the open. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../pipeline/error.h"
#include "ttapipe.h"

enum { WRITER_FLUSH_BYTES = 64 << 10 };

struct ttp_writer {
  const ttp_pipeline* p;
  FILE* out;
  ttp_format format;
  int topk, probabilities, classes;
  int* order; /* classes: indices by falling probability */
  int uncertainty;
  int formulas;  /* TTP_WRITE_CSV_FORMULAS: no apostrophes before cells beginning = + - @ ' */
  char** labels; /* classes: each label's field as written (a CSV cell, a JSON string) */
  size_t* label_len;
  char* text; /* rows not yet handed to the stream: len bytes (of cap) */
  size_t len, cap;
  char* scratch[2]; /* escaped text (escaped()), scratch_cap bytes each */
  size_t scratch_cap[2];
  int out_of_memory; /* a row could not be held: it and those after it are lost */
};

/* ---- the buffer -------------------------------------------------------------------------------- */

static int reserve(ttp_writer* w, size_t n) {
  if (w->out_of_memory) return 0;
  if (w->len + n <= w->cap) return 1;
  size_t cap = w->cap ? w->cap : 4096;
  while (cap < w->len + n) cap *= 2;
  char* grown = realloc(w->text, cap);
  if (!grown) return !(w->out_of_memory = 1);
  w->text = grown, w->cap = cap;
  return 1;
}

static void put(ttp_writer* w, const char* s, size_t n) {
  if (!reserve(w, n)) return;
  memcpy(w->text + w->len, s, n);
  w->len += n;
}

static void put_str(ttp_writer* w, const char* s) { put(w, s, strlen(s)); }

static void put_char(ttp_writer* w, char c) { put(w, &c, 1); }

static void put_fmt(ttp_writer* w, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put_fmt(ttp_writer* w, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !reserve(w, (size_t)n + 1)) return;
  va_start(ap, fmt);
  vsnprintf(w->text + w->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  w->len += (size_t)n;
}

/* The rows held, to the stream in one fwrite, then the stream flushed. */
static ttp_status flush_rows(ttp_writer* w) {
  if (w->len && fwrite(w->text, 1, w->len, w->out) != w->len) return TTP_ERR_IO;
  w->len = 0;
  return fflush(w->out) != 0 || ferror(w->out) ? TTP_ERR_IO : TTP_OK;
}

/* ---- text fields ----------------------------------------------------------------------------- */

/* text escaped (err_escape with flags): text itself where nothing is to escape, else in the
   writer's scratch buffer `slot`; "" (the writer then out of memory) if that cannot grow. */
static const char* escaped(ttp_writer* w, int slot, const char* text, int flags) {
  const unsigned char* c = (const unsigned char*)text; /* printable ASCII alone: as it is */
  while (*c >= 0x20 && *c < 0x7f && !(*c == '\\' && (flags & ERR_ESCAPE_BACKSLASH))) c++;
  if (!*c) return text;
  const size_t need = 4 * strlen(text) + 1; /* a byte becomes at most \xHH */
  if (need > w->scratch_cap[slot]) {
    char* grown = realloc(w->scratch[slot], need);
    if (!grown) {
      w->out_of_memory = 1;
      return "";
    }
    w->scratch[slot] = grown, w->scratch_cap[slot] = need;
  }
  err_escape(text, flags, w->scratch[slot], need);
  return w->scratch[slot];
}

/* A CSV text cell of printable text (escaped already: no line breaks): an apostrophe first where
   a spreadsheet would take the cell for a formula, or where the cell begins with one (so that a
   reader drops exactly one), unless TTP_WRITE_CSV_FORMULAS; quoted per RFC 4180 when it holds a
   comma or a quote. OWASP's list also has TAB and CR, which the escape has written \x09, \x0d. */
static void csv_cell(ttp_writer* w, const char* s) {
  const int mark = !w->formulas && s[0] && strchr("=+-@'", s[0]);
  const int quote = strpbrk(s, ",\"") != NULL;
  if (quote) put_char(w, '"');
  if (mark) put_char(w, '\'');
  if (!quote) {
    put_str(w, s);
  } else {
    for (; *s; s++) {
      if (*s == '"') put_char(w, '"');
      put_char(w, *s);
    }
    put_char(w, '"');
  }
}

/* A path or label as a CSV cell: escaped losslessly, then csv_cell. */
static void csv_name(ttp_writer* w, const char* name) {
  csv_cell(w, escaped(w, 0, name, ERR_ESCAPE_BACKSLASH));
}

/* A JSON string: quote, backslash and control characters (C0, DEL, C1) escaped as JSON does,
   printable UTF-8 as it is, and a byte 0xHH that is not part of valid UTF-8 as the lone
   surrogate \udcHH (PEP 383's surrogateescape), which no valid text gives. */
static void json_string(ttp_writer* w, const char* text) {
  const unsigned char* s = (const unsigned char*)text;
  put_char(w, '"');
  while (*s) {
    int n = err_utf8_length(s);
    if (n == 0) {
      put_fmt(w, "\\udc%02x", *s);
      n = 1;
    } else if (*s == '"' || *s == '\\') {
      put_fmt(w, "\\%c", *s);
    } else if (*s == '\n') {
      put_str(w, "\\n");
    } else if (*s < 0x20 || *s == 0x7f) {
      put_fmt(w, "\\u%04x", *s);
    } else if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0) { /* C1: U+0080 + (s[1] - 0x80) */
      put_fmt(w, "\\u%04x", s[1]);
    } else {
      put(w, (const char*)s, (size_t)n);
    }
    s += n;
  }
  put_char(w, '"');
}

/* The status of an error row: the message made printable (the library's are already; a
   caller's may not be), without the "path: " it begins with, the path escaped as a message
   holds it. */
static const char* status_of(ttp_writer* w, const char* path, const char* error) {
  const char* message = escaped(w, 0, error, 0);
  const char* name = escaped(w, 1, path, 0);
  const size_t n = strlen(name);
  return strncmp(message, name, n) == 0 && message[n] == ':' && message[n + 1] == ' '
             ? message + n + 2
             : message;
}

/* ---- numbers ----------------------------------------------------------------------------------- *
 * A CSV row's numbers without printf, whose "%.7f" of a float was most of a row's time: the same
 * bytes, for every float. */

/* Writes n's decimal digits at buf; returns their count. */
static int put_digits(char* buf, unsigned long long n) {
  char tmp[24];
  int len = 0;
  do tmp[len++] = (char)('0' + n % 10);
  while (n /= 10);
  for (int i = 0; i < len; i++) buf[i] = tmp[len - 1 - i];
  return len;
}

/* "%d" into buf (room for 12 bytes); returns the length. */
static int put_int(char* buf, int value) {
  if (value >= 0) return put_digits(buf, (unsigned long long)value);
  buf[0] = '-';
  return 1 + put_digits(buf + 1, (unsigned long long)-(long long)value);
}

/* "%.7f" into buf (room for 48 bytes); returns the length. A float times 10^7 is exact in a
   double (24 + 17 significant bits), so rounding that product to the nearest integer, ties to
   even as printf rounds the exact value, gives printf's digits. Values of 10^9 or more and
   those that are not finite (a broken model's output) are left to printf. */
static int put_fixed7(char* buf, float value) {
  double v = value;
  if (!(fabs(v) < 1e9)) return snprintf(buf, 48, "%.7f", v);
  int len = 0;
  if (signbit(v)) buf[len++] = '-', v = -v;
  unsigned long long q = (unsigned long long)nearbyint(v * 1e7);
  len += put_digits(buf + len, q / 10000000u);
  buf[len++] = '.';
  unsigned long long frac = q % 10000000u;
  for (int i = 6; i >= 0; i--, frac /= 10) buf[len + i] = (char)('0' + frac % 10);
  return len + 7;
}

/* ---- writer ---------------------------------------------------------------------------------- */

/* w->labels: each class's label as its rows write it (in w->text, then copied out). */
static void make_labels(ttp_writer* w) {
  if (!(w->labels = calloc((size_t)w->classes, sizeof *w->labels)) ||
      !(w->label_len = calloc((size_t)w->classes, sizeof *w->label_len))) {
    w->out_of_memory = 1;
    return;
  }
  for (int c = 0; c < w->classes && !w->out_of_memory; c++) {
    const char* label = ttp_class_label(w->p, c);
    w->len = 0;
    if (w->format == TTP_FORMAT_CSV) csv_name(w, label);
    else json_string(w, label);
    if (w->out_of_memory || !(w->labels[c] = malloc(w->len + 1))) {
      w->out_of_memory = 1;
      break;
    }
    memcpy(w->labels[c], w->text, w->len);
    w->label_len[c] = w->len;
  }
  w->len = 0;
}

/* ttp_writer_open and ttp_writer_open_append: the CSV header written or not. */
static ttp_status writer_open(const ttp_pipeline* p, FILE* out, ttp_format format, int topk,
                              int columns, int header, ttp_writer** writer, char* error,
                              size_t error_size) {
  /* columns with bits besides the known ones (a negative value too): its earlier meaning. */
  enum { KNOWN = TTP_WRITE_PROBABILITIES | TTP_WRITE_UNCERTAINTY | TTP_WRITE_CSV_FORMULAS };
  const int earlier = (columns & ~KNOWN) != 0;
  const int uncertainty = columns > 0 && (columns & TTP_WRITE_UNCERTAINTY);
  const int probabilities = earlier || (columns & TTP_WRITE_PROBABILITIES);
  const int formulas = !earlier && (columns & TTP_WRITE_CSV_FORMULAS);
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
    *w = (ttp_writer){.p = p, .out = out, .format = format, .topk = topk,
                      .probabilities = probabilities, .classes = m->classes, .order = w->order,
                      .uncertainty = uncertainty, .formulas = formulas};
    make_labels(w);
    if (format == TTP_FORMAT_CSV && header && !w->out_of_memory) {
      put_str(w, "path,status,class,label,probability");
      for (int k = 2; k <= topk; k++) put_fmt(w, ",class_%d,label_%d,probability_%d", k, k, k);
      if (probabilities) {
        put_str(w, ",spread");
        for (int c = 0; c < m->classes; c++) {
          char name[256];
          snprintf(name, sizeof name, "p_%s", ttp_class_label(p, c));
          put_char(w, ',');
          csv_name(w, name);
        }
      }
      if (uncertainty) put_str(w, ",entropy,mutual_information,agreement");
      put_char(w, '\n');
    }
    if (w->out_of_memory) {
      ERR_NOMEM(&e, w->len);
      ttp_writer_close(w);
      w = NULL;
    }
    *writer = w;
  }
  err_copy_out(&e, error, error_size);
  return e.status;
}

ttp_status ttp_writer_open(const ttp_pipeline* p, FILE* out, ttp_format format, int topk,
                           int probabilities, ttp_writer** writer, char* error,
                           size_t error_size) {
  return writer_open(p, out, format, topk, probabilities, 1, writer, error, error_size);
}

ttp_status ttp_writer_open_append(const ttp_pipeline* p, FILE* out, ttp_format format, int topk,
                                  int probabilities, ttp_writer** writer, char* error,
                                  size_t error_size) {
  return writer_open(p, out, format, topk, probabilities, 0, writer, error, error_size);
}

/* w->order: the classes by falling probability, the lower index first on a tie; the result's
   class first (it may differ from the vector's top under a vote). */
static void rank(ttp_writer* w, const ttp_result* r, const float* probs) {
  int n = 0;
  w->order[n++] = r->class_index;
  if (w->topk == 1) return; /* the rest is never written */
  for (int c = 0; c < w->classes; c++)
    if (c != r->class_index) w->order[n++] = c;
  for (int i = 2; i < w->classes; i++) /* insertion sort of the rest, stable */
    for (int j = i; j > 1 && probs[w->order[j]] > probs[w->order[j - 1]]; j--) {
      int t = w->order[j];
      w->order[j] = w->order[j - 1], w->order[j - 1] = t;
    }
}

static void write_csv(ttp_writer* w, const char* path, const ttp_result* r, const float* probs,
                      const ttp_uncertainty* u, const char* error) {
  csv_name(w, path);
  put_char(w, ',');
  if (error || !r) {
    csv_cell(w, error ? status_of(w, path, error) : "error");
    int empty = 3 * w->topk + (w->probabilities ? 1 + w->classes : 0) + 3 * w->uncertainty;
    for (int i = 0; i < empty; i++) put_char(w, ',');
    put_char(w, '\n');
    return;
  }
  put_str(w, "ok");
  char num[64];
  for (int k = 0; k < w->topk; k++) {
    int c = w->order[k];
    float p = k == 0 ? r->probability : probs[c];
    num[0] = ',';
    int n = 1 + put_int(num + 1, c);
    num[n++] = ',';
    put(w, num, (size_t)n);
    put(w, w->labels[c], w->label_len[c]);
    n = 1 + put_fixed7(num + 1, p);
    put(w, num, (size_t)n);
  }
  if (w->probabilities) {
    for (int c = -1; c < w->classes; c++) { /* the spread first */
      num[0] = ',';
      int n = 1 + put_fixed7(num + 1, c < 0 ? r->spread : probs[c]);
      put(w, num, (size_t)n);
    }
  }
  if (w->uncertainty && !u) put_str(w, ",,,");
  if (w->uncertainty && u) { /* entropy up to ln(classes): more than 1, the digits of %.7f */
    const float v[3] = {u->entropy, u->mutual_information, u->agreement};
    for (int k = 0; k < 3; k++) put_fmt(w, ",%.7f", v[k]);
  }
  put_char(w, '\n');
}

static void write_json(ttp_writer* w, const char* path, const ttp_result* r, const float* probs,
                       const ttp_uncertainty* u, const char* error) {
  put_str(w, "{\"path\":");
  json_string(w, path);
  put_str(w, ",\"status\":");
  if (error || !r) {
    json_string(w, error ? status_of(w, path, error) : "error");
    put_str(w, ",\"class\":null,\"label\":null,\"probability\":null");
    if (w->topk > 1) put_str(w, ",\"top\":null");
    if (w->probabilities) put_str(w, ",\"spread\":null,\"probabilities\":null");
    if (w->uncertainty) put_str(w, ",\"entropy\":null,\"mutual_information\":null,\"agreement\":null");
    put_str(w, "}\n");
    return;
  }
  put_fmt(w, "\"ok\",\"class\":%d,\"label\":", r->class_index);
  put(w, w->labels[r->class_index], w->label_len[r->class_index]);
  put_fmt(w, ",\"probability\":%.9g", r->probability);
  if (w->topk > 1) {
    put_str(w, ",\"top\":[");
    for (int k = 0; k < w->topk; k++) {
      int c = w->order[k];
      put_fmt(w, "%s{\"class\":%d,\"label\":", k ? "," : "", c);
      put(w, w->labels[c], w->label_len[c]);
      put_fmt(w, ",\"probability\":%.9g}", k == 0 ? r->probability : probs[c]);
    }
    put_char(w, ']');
  }
  if (w->probabilities) {
    put_fmt(w, ",\"spread\":%.9g,\"probabilities\":[", r->spread);
    for (int c = 0; c < w->classes; c++) put_fmt(w, "%s%.9g", c ? "," : "", probs[c]);
    put_char(w, ']');
  }
  if (w->uncertainty && u)
    put_fmt(w, ",\"entropy\":%.9g,\"mutual_information\":%.9g,\"agreement\":%.9g", u->entropy,
            u->mutual_information, u->agreement);
  else if (w->uncertainty)
    put_str(w, ",\"entropy\":null,\"mutual_information\":null,\"agreement\":null");
  put_str(w, "}\n");
}

ttp_status ttp_writer_write_uncertainty(ttp_writer* w, const char* path, const ttp_result* result,
                                        const float* probabilities,
                                        const ttp_uncertainty* uncertainty, const char* error) {
  if (!w || !path || (result && !error && !probabilities)) return TTP_ERR_INVALID_ARGUMENT;
  if (result && !error) rank(w, result, probabilities);
  if (w->format == TTP_FORMAT_CSV)
    write_csv(w, path, result, probabilities, uncertainty, error);
  else
    write_json(w, path, result, probabilities, uncertainty, error);
  if (w->out_of_memory) return TTP_ERR_OUT_OF_MEMORY;
  return w->len >= WRITER_FLUSH_BYTES ? flush_rows(w) : TTP_OK;
}

ttp_status ttp_writer_write(ttp_writer* w, const char* path, const ttp_result* result,
                            const float* probabilities, const char* error) {
  return ttp_writer_write_uncertainty(w, path, result, probabilities, NULL, error);
}

ttp_status ttp_writer_flush(ttp_writer* w) {
  if (!w) return TTP_ERR_INVALID_ARGUMENT;
  ttp_status s = flush_rows(w);
  return w->out_of_memory ? TTP_ERR_OUT_OF_MEMORY : s;
}

ttp_status ttp_writer_close(ttp_writer* w) {
  if (!w) return TTP_OK;
  ttp_status s = ttp_writer_flush(w);
  for (int c = 0; w->labels && c < w->classes; c++) free(w->labels[c]);
  free(w->labels);
  free(w->label_len);
  free(w->scratch[0]);
  free(w->scratch[1]);
  free(w->order);
  free(w->text);
  free(w);
  return s;
}
