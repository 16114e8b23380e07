/* The decode thread pool: worker threads read, decode and preprocess image files into a ring
   of `window` chunks of `chunk` files, in the files' order, while the caller consumes finished
   chunks one after the other. Back-pressure: a worker takes a file only if its chunk fits in the
   ring (at most `window` chunks ahead of the oldest unconsumed one); otherwise it waits, so
   memory stays bounded. A slow file holds back only the hand-over of its own chunk: the other
   workers go on with the files after it. */
#ifndef TTP_IO_DECODE_POOL_H
#define TTP_IO_DECODE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "../pipeline/error.h"
#include "ttapipe.h"

typedef struct io_pool io_pool;

/* One file's outcome. */
typedef struct io_outcome {
  ttp_status status;
  char error[ERR_MESSAGE_SIZE]; /* when status is not TTP_OK */
} io_outcome;

/* Starts `threads` workers on paths[0 .. count-1]. options: as ttp_load_image's (NULL: the
   defaults). The pool keeps pointers to paths and options until io_pool_close. */
ttp_status io_pool_open(const char* const* paths, size_t count, const ttp_image_options* options,
                        int rows, int cols, int threads, size_t chunk, int window, io_pool** out,
                        ttp_err* e);

/* Waits for chunk k (files k chunk .. ), which must be the next unconsumed one. *pixels: its
   files' images, rows x cols bytes each, zeros for a file that failed; *outcomes: each file's
   outcome; *n: the number of files in it. Valid until io_pool_release(k). */
void io_pool_wait(io_pool* pool, size_t k, const uint8_t** pixels, const io_outcome** outcomes,
                  size_t* n);

/* Chunk k is consumed: its place in the ring takes later files. */
void io_pool_release(io_pool* pool, size_t k);

/* Stops the workers (whatever is left undone), adds the seconds they spent reading, decoding and
   preprocessing (summed over them) to seconds[0..2] unless it is NULL, and frees everything.
   Accepts NULL. */
void io_pool_close(io_pool* pool, double seconds[3]);

#endif
