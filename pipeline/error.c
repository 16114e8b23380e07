/* The internal error record: see error.h for which errors carry a source location. */
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
  size_t used = 0;
  if (err_has_location(status)) {
    int n = snprintf(e->message, sizeof e->message, "%s:%d: ", file, line);
    used = n > 0 ? (size_t)n : 0;
    if (used >= sizeof e->message) used = sizeof e->message - 1;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message + used, sizeof e->message - used, fmt, ap);
  va_end(ap);
  /* One line, whatever a file name or a library string contained. */
  for (char* c = e->message; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  return status;
}

void err_clear(ttp_err* e) {
  if (!e) return;
  e->status = TTP_OK;
  e->message[0] = '\0';
}

void err_copy_out(const ttp_err* e, char* buffer, size_t size) {
  if (!buffer || size == 0) return;
  snprintf(buffer, size, "%s", e->status == TTP_OK ? "" : e->message);
}

void err_prefix(ttp_err* e, const char* fmt, ...) {
  if (!e || e->status == TTP_OK) return;
  char joined[ERR_MESSAGE_SIZE];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(joined, sizeof joined, fmt, ap);
  va_end(ap);
  size_t used = n < 0 ? 0 : (size_t)n < sizeof joined ? (size_t)n : sizeof joined - 1;
  size_t rest = strlen(e->message);
  if (rest > sizeof joined - 1 - used) rest = sizeof joined - 1 - used;
  memcpy(joined + used, e->message, rest);
  joined[used + rest] = '\0';
  memcpy(e->message, joined, sizeof e->message);
}
