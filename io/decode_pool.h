/* The decode thread pool: worker threads read, decode and preprocess image files, in the files'
   order, into buffers that the consumer provides one chunk of `chunk` files at a time (on a GPU,
   the pinned input slots of the runner's ring: the images land where the copy to the device
   starts, with no copy of their own). A worker takes files only once their chunk has a buffer,
   so the buffers the consumer hands over bound how far the workers run ahead and how much memory
   is used. A slow file holds back only the hand-over of its own chunk: the other workers go on
   with the files after it.

   The files are a list known at the start, or one that grows while the pool runs: a directory
   walk appends each file as soon as its place in the order is known (io_pool_append), and says
   when it is over (io_pool_finish), so that decoding starts with the walk's first files. */
#ifndef TTP_IO_DECODE_POOL_H
#define TTP_IO_DECODE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "../pipeline/error.h"
#include "archive.h"
#include "ttapipe.h"

typedef struct io_pool io_pool;

/* One file's outcome: small, so that a window of many chunks (the files decoded while a GPU
   engine opens) costs little; the message of a failure is allocated apart. */
typedef struct io_outcome {
  ttp_status status;
  char* error; /* when status is not TTP_OK: the message (NULL if it could not be kept) */
} io_outcome;

/* The message of a failed outcome. */
static inline const char* io_outcome_message(const io_outcome* o) {
  return o->error ? o->error : "out of memory for the message of a failed file";
}

/* Starts `threads` workers. paths[0 .. count-1]: the files known now (kept by pointer, not
   copied, until io_pool_close); final: no more will come (else io_pool_append adds them and
   io_pool_finish ends the list). window: at most this many chunks provided and not yet
   released at a time. options: as ttp_load_image's (NULL: the defaults), their channels
   replaced by `channels`; each image is channels x rows x cols bytes. */
ttp_status io_pool_open(const char* const* paths, size_t count, int final,
                        const ttp_image_options* options, int channels, int rows, int cols,
                        int threads, size_t chunk, int window, io_pool** out, ttp_err* e);

/* Appends n files (1 or more; the pool takes the strings, malloc'd, and frees them at close,
   or at once when refused). TTP_ERR_CANCELLED once the pool is finished or closing: the walk
   feeding it then stops. */
ttp_status io_pool_append(io_pool* pool, char** paths, size_t n, ttp_err* e);
/* Appends n files whose bytes are read already (an archive's members: members[i].bytes,
   members[i].size of them, decoded from memory), or that failed (bytes NULL, errors[i] the
   one-line message); errors[i] NULL for a member read. The pool takes the paths, bytes and
   messages (malloc'd), also on failure. Waits while the pool holds a chunk of files past the
   buffers provided, or more than 64 MiB of members not yet taken; returns TTP_ERR_CANCELLED if
   the pool is finished or closed meanwhile (the files are dropped). */
ttp_status io_pool_append_members(io_pool* pool, io_member* members, char** errors, size_t n,
                                  ttp_err* e);
/* The largest member io_pool_append_members should be given: the image options' file limit. */
size_t io_pool_max_member(const io_pool* pool);
/* The decoding threads running. */
int io_pool_threads(const io_pool* pool);
/* No more files will come. */
void io_pool_finish(io_pool* pool);

/* A directory walk feeding the pool (the growing list above): io_walk (files.h) over paths with
   options o, on a thread of its own; or, o NULL, the files paths[0..count-1] themselves in their
   order (a caller's list that holds archives). Archives (archive.h) found become their members,
   read when their place in the order comes, filtered by o's extensions and hidden rule (NULL:
   the defaults'). The pool gets each directory's files as they are read from
   it, numbered in that order (the order of io_pool_wait's chunks); io_pool_walk_order gives the
   walk's own order (byte-wise sorted) as those numbers, a directory's as soon as its listing is
   sorted. At the end, io_pool_finish. The pool must have been opened without a final list. */
typedef struct io_pool_walk io_pool_walk;
ttp_status io_pool_walk_start(io_pool* pool, const char* const* paths, size_t count,
                              const ttp_list_options* o, io_pool_walk** out, ttp_err* e);
/* Copies into out up to max of the files' numbers in the walk's order, from the from-th on;
   returns how many. *over: every file has its place and all of them from `from` on were copied
   (when the walk failed to append files, their numbers are at or past io_pool_known's count:
   skip them). */
size_t io_pool_walk_order(io_pool_walk* w, size_t from, size_t* out, size_t max, int* over);
/* Waits for the walk's end (after a failure elsewhere, call io_pool_finish first so that nothing
   more is read), frees it and returns its status, its message in e. Accepts NULL. */
ttp_status io_pool_walk_join(io_pool_walk* w, ttp_err* e);

/* Whether fewer files wait for a worker than the window holds: a walk then finds files early
   (enough of them that the workers go on while it sorts a directory). */
int io_pool_hungry(io_pool* pool);

/* The files decoded (or failed) so far. */
size_t io_pool_finished(io_pool* pool);

/* The files known so far; *final: whether that is all of them. */
size_t io_pool_known(io_pool* pool, int* final);

/* Chunk k, the next one without a buffer, is to be decoded into pixels: room for `chunk`
   images, rows x cols bytes each. A file that fails leaves zeros there. */
void io_pool_provide(io_pool* pool, size_t k, uint8_t* pixels);

/* Whether chunk k (provided) is complete, without waiting: every file of it done, and it full or
   the list final. */
int io_pool_ready(io_pool* pool, size_t k);

/* Waits for chunk k, the oldest unreleased one, to be complete. *outcomes: each file's outcome;
   *paths: each file's path; *n: the number of files in it (0: the list ended before it).
   Valid until io_pool_release(k). */
void io_pool_wait(io_pool* pool, size_t k, const io_outcome** outcomes, const char* const** paths,
                  size_t* n);

/* Chunk k is consumed: its buffer is the consumer's again, its outcomes' messages are freed, and
   its place in the window is free. */
void io_pool_release(io_pool* pool, size_t k);

/* Stops the workers (whatever is left undone), adds the seconds they spent reading, decoding and
   preprocessing (summed over them) to seconds[0..2] unless it is NULL, and frees everything.
   Accepts NULL. */
void io_pool_close(io_pool* pool, double seconds[3]);

#endif
