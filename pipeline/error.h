/* The internal error record. Library code never prints and never exits: a failing function
   records one line in a ttp_err and returns its status, and the caller passes that status up.

   Bad input (a missing, short or malformed file, an argument out of range) is recorded as the
   message alone, written for the user: "models/x/conv1.bin: expected 2000 bytes, found 1999".
   A failure of the library or of the machine (a CUDA call, memory, an impossible state) is
   recorded with where it happened: "graph/capture.c:88: cudaStreamEndCapture: ...". */
#ifndef TTP_ERROR_H
#define TTP_ERROR_H

#include <stddef.h>

#include "ttapipe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ERR_MESSAGE_SIZE 1024

typedef struct ttp_err {
  ttp_status status;            /* TTP_OK until something fails */
  char message[ERR_MESSAGE_SIZE];
} ttp_err;

/* Records status and the printf-formatted message in e (which may be NULL); returns status.
   The first error recorded wins: a later err_set on a record that already holds an error keeps
   the first message, which is the one closest to the cause. */
ttp_status err_set(ttp_err* e, ttp_status status, const char* file, int line, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

void err_clear(ttp_err* e);

/* Puts the printf-formatted context before the message already recorded in e (nothing if e holds
   no error): "images 128..191 of this call: " + what failed. */
void err_prefix(ttp_err* e, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Copies the message into a caller's buffer of size bytes (buffer may be NULL). */
void err_copy_out(const ttp_err* e, char* buffer, size_t size);

#ifdef __cplusplus
}
#endif

#define ERR(e, status, ...) err_set((e), (status), __FILE__, __LINE__, __VA_ARGS__)

/* The common case of running out of memory, with the size that failed. */
#define ERR_NOMEM(e, bytes) \
  ERR((e), TTP_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes", (size_t)(bytes))

/* Evaluates a call returning ttp_status and returns its status from the enclosing function on
   failure (the callee has already recorded the message). */
#define TRY(call)                      \
  do {                                 \
    ttp_status try_status_ = (call);   \
    if (try_status_ != TTP_OK) return try_status_; \
  } while (0)

#endif
