/* Tar archives read ahead of their turn (the decode pool's walk, decode_pool.h): a walk that
   finds several archives hands each to this feed as it finds it; helper threads read the
   waiting ones in the order found, member after member, into a bounded queue of their own
   (32 MiB or 32,768 members), while the walk hands the archive whose turn has come to the pool
   batch by batch, in its order. An archive no helper has started when its turn comes is read
   by the walk itself. One reader of a tar archive reads ~300,000 small members a second (H100
   machine): several archives at once keep sixteen decoding threads fed. */
#ifndef TTP_IO_ARCHIVE_FEED_H
#define TTP_IO_ARCHIVE_FEED_H

#include <stddef.h>

#include "../pipeline/error.h"
#include "archive.h"

/* Members handed over at once: one lock and one wake-up of the decoding threads a batch. */
enum { IO_MEMBER_BATCH = 64 };

typedef struct io_member_batch {
  size_t n;
  io_member members[IO_MEMBER_BATCH];
  char* errors[IO_MEMBER_BATCH]; /* malloc'd: the member's (or the archive's) failure, or NULL */
  struct io_member_batch* next;
} io_member_batch;

typedef struct io_feed io_feed;
typedef struct io_feed_job io_feed_job;

/* helpers threads (0: the walk reads every archive itself); members filtered by extensions and
   hidden (archive.h), larger than max_member refused. */
ttp_status io_feed_open(int helpers, size_t max_member, const char* extensions, int hidden,
                        io_feed** out, ttp_err* e);

/* An archive found (path copied): queued for the helpers. NULL when out of memory (e). */
io_feed_job* io_feed_add(io_feed* f, const char* path, ttp_err* e);

/* The next batch of job's members, in the archive's order (the caller takes the batch and
   what it holds), or NULL after the last. An archive that cannot be opened or fails is its
   last batch's last member: the archive's path, no bytes, its error. NULL with e set: out of
   memory. */
io_member_batch* io_feed_next(io_feed* f, io_feed_job* job, ttp_err* e);

/* Frees a batch and whatever it still holds. */
void io_member_batch_free(io_member_batch* b);

/* Stops the helpers (an archive half read is dropped) and frees every job. Accepts NULL. */
void io_feed_close(io_feed* f);

#endif
