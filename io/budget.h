/* A memory budget shared by the decoding threads: bytes reserved before a large allocation and
   given back after it, so that the threads' peak stays bounded whatever the files ask for (a
   folder of uploads of 8192 x 8192 pixels each, decoded by 16 threads at once). A reservation
   waits while the bytes reserved by others and its own would pass the limit; it never waits
   when nothing else is reserved, so one file larger than the whole budget still goes through,
   alone. Small reservations (below IO_BUDGET_FREE) are not counted: the threads' small files
   never meet a lock for it. */
#ifndef TTP_IO_BUDGET_H
#define TTP_IO_BUDGET_H

#include <stddef.h>

enum { IO_BUDGET_FREE = 1 << 20 };

typedef struct io_budget io_budget;

/* A budget of `limit` bytes; NULL when it cannot be allocated (then nothing is counted). */
io_budget* io_budget_new(size_t limit);
void io_budget_free(io_budget* b); /* accepts NULL */

/* Reserves n bytes, waiting as above; returns what was reserved (0 for a small n or a NULL
   budget), to be given back with io_budget_give. */
size_t io_budget_take(io_budget* b, size_t n);
void io_budget_give(io_budget* b, size_t n);

/* The largest number of bytes reserved at once so far (tests). */
size_t io_budget_peak(const io_budget* b);

#endif
