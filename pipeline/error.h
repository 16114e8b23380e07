/* The internal error record. Library code never prints and never exits: a failing function
   records one line in a ttp_err and returns its status, and the caller passes that status up.

   Bad input (a missing, short or malformed file, an argument out of range) is recorded as the
   message alone, written for the user: "models/x/conv1.bin: expected 2000 bytes, found 1999".
   A failure of the library or of the machine (a CUDA call, memory, an impossible state) is
   recorded with where it happened: "graph/capture.c:88: cudaStreamEndCapture: ...".

   A message is one line of printable text whatever went into it (a file name, a libjpeg string,
   bytes from inside a file): err_set and err_prefix escape it as ttp_printable says, so that
   neither a terminal showing it nor a CSV file holding it can be driven by those bytes. */
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

/* The one escape of the library (ttp_printable is it with flags 0): text into out (out_size
   bytes, NUL included; out may be NULL when out_size is 0), each byte that is a control
   character, a byte of a C1 control or not part of valid UTF-8 written \xHH; with
   ERR_ESCAPE_BACKSLASH also the backslash (\x5c), which makes the escape lossless: decoding
   each \xHH gives the text back (the writers' CSV cells of paths and labels). Returns the
   length of the whole escaped text; out ends on a whole character or escape. */
enum { ERR_ESCAPE_BACKSLASH = 1 };
size_t err_escape(const char* text, int flags, char* out, size_t out_size);

/* The length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one (an overlong form,
   a surrogate, a code point past U+10FFFF, a stray or missing continuation byte). */
int err_utf8_length(const unsigned char* s);

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
