/* The internal error record: see error.h for which errors carry a source location. And the
   library's one escape (err_escape, ttp_printable), which every message goes through. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Failures of the library or the machine carry file:line; bad input does not. */
static int err_has_location(ttp_status s) {
  switch (s) {
    case TTP_ERR_OUT_OF_MEMORY:
    case TTP_ERR_CUDA:
    case TTP_ERR_CUDNN:
    case TTP_ERR_CUBLAS:
    case TTP_ERR_INTERNAL:
    case TTP_ERR_GPU_LOST:
      return 1;
    default:
      return 0;
  }
}

ttp_status err_set(ttp_err* e, ttp_status status, const char* file, int line, const char* fmt, ...) {
  if (!e || e->status != TTP_OK) return status;
  e->status = status;
  /* Room for the escape to be what cuts the message short: each byte may become four. */
  char raw[4 * ERR_MESSAGE_SIZE];
  size_t used = 0;
  if (err_has_location(status)) {
    int n = snprintf(raw, sizeof raw, "%s:%d: ", file, line);
    used = n > 0 ? (size_t)n : 0;
    if (used >= sizeof raw) used = sizeof raw - 1;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw + used, sizeof raw - used, fmt, ap);
  va_end(ap);
  err_escape(raw, 0, e->message, sizeof e->message);
  return status;
}

void err_clear(ttp_err* e) {
  if (!e) return;
  e->status = TTP_OK;
  e->message[0] = '\0';
}

void err_copy_out(const ttp_err* e, char* buffer, size_t size) {
  if (!buffer || size == 0) return;
  /* The message is printable already: escaped again, it stays the same, cut on a whole
     character or escape where the buffer is shorter. */
  err_escape(e->status == TTP_OK ? "" : e->message, 0, buffer, size);
}

void err_prefix(ttp_err* e, const char* fmt, ...) {
  if (!e || e->status == TTP_OK) return;
  char raw[4 * ERR_MESSAGE_SIZE], joined[ERR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  size_t used = err_escape(raw, 0, joined, sizeof joined);
  if (used > sizeof joined - 1) used = strlen(joined);
  size_t rest = strlen(e->message); /* escaped already */
  if (rest > sizeof joined - 1 - used) rest = sizeof joined - 1 - used;
  memcpy(joined + used, e->message, rest);
  joined[used + rest] = '\0';
  memcpy(e->message, joined, sizeof e->message);
}

int err_utf8_length(const unsigned char* s) {
  int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
        : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 2 && s[0] < 0xc2) return 0; /* overlong */
  for (int i = 1; i < n; i++) /* a NUL ends the text: it is no continuation byte */
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;
  if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || s[0] > 0xf4 || (s[0] == 0xf4 && s[1] >= 0x90)))
    return 0;
  return n;
}

/* Control characters are C0 (0x00-0x1f), DEL and C1 (U+0080..U+009F, UTF-8 c2 80..c2 9f: a
   terminal that obeys C1 takes U+009B for ESC [). */
size_t err_escape(const char* text, int flags, char* out, size_t out_size) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char* s = (const unsigned char*)text;
  size_t length = 0, kept = 0;
  int full = out_size == 0; /* once a piece does not fit, nothing after it is written */
  while (*s) {
    if (*s >= 0x20 && *s < 0x7f && !(*s == '\\' && (flags & ERR_ESCAPE_BACKSLASH))) {
      if (!full && kept + 1 < out_size) out[kept++] = (char)*s; /* printable ASCII */
      else full = 1;
      length++, s++;
      continue;
    }
    const int n = err_utf8_length(s);
    const int control =
        n == 1 ? s[0] < 0x20 || s[0] == 0x7f : n == 2 && s[0] == 0xc2 && s[1] < 0xa0;
    const int escape = n == 0 || control || (s[0] == '\\' && (flags & ERR_ESCAPE_BACKSLASH));
    const int bytes = n ? n : 1;
    char piece[16];
    size_t size = 0;
    for (int i = 0; i < bytes; i++) {
      if (escape) {
        piece[size++] = '\\', piece[size++] = 'x';
        piece[size++] = hex[s[i] >> 4], piece[size++] = hex[s[i] & 15];
      } else {
        piece[size++] = (char)s[i];
      }
    }
    if (!full && kept + size < out_size) {
      memcpy(out + kept, piece, size);
      kept += size;
    } else {
      full = 1;
    }
    length += size;
    s += bytes;
  }
  if (out_size) out[kept] = '\0';
  return length;
}

size_t ttp_printable(const char* text, char* out, size_t out_size) {
  return err_escape(text ? text : "", 0, out, out_size);
}
