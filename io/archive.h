/* Tar archives of images (WebDataset's shards: shard-000123.tar, plain or gzip'd), read through
   Debian's libarchive, never a hand-written tar parser. An archive is a list of files: its
   regular members whose names pass the list's filter, in the archive's order. A member's path
   (in rows, messages and callbacks) is the archive's path, a slash and the member's name as the
   archive stores it (a leading "./" dropped), as if the archive were a directory: unique across
   shards, and telling the archive a row came from (rows.h deals shard outputs by archive).

   Archives are hostile input as image files are: only tar formats (ustar, pax, GNU) without or
   with gzip are read (no other filter, no external program); a member larger than the image
   size limit is refused unread; a corrupt or truncated archive ends with one error for it,
   after the members read before. Built without libarchive (TTAPIPE_ARCHIVE undefined), opening
   an archive fails with a message saying so. */
#ifndef TTP_IO_ARCHIVE_H
#define TTP_IO_ARCHIVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../pipeline/error.h"

typedef struct io_archive io_archive;

/* Whether path names an archive: it ends in .tar, .tar.gz or .tgz (any case). */
int io_is_archive(const char* path);

/* Whether an archive's member named name is taken: a regular file whose extension is one of
   extensions (comma-separated, as ttp_list_options's; archives' own extensions never: an archive
   in an archive is not opened), and no component of whose name begins with '.' unless hidden. */
int io_member_wanted(const char* name, const char* extensions, int hidden);

/* Opens the archive at path, or the size bytes at bytes (kept by pointer: the fuzz target)
   named path in messages. Members larger than max_member bytes are refused unread. */
ttp_status io_archive_open(const char* path, size_t max_member, io_archive** out, ttp_err* e);
ttp_status io_archive_open_memory(const uint8_t* bytes, size_t size, const char* path,
                                  size_t max_member, io_archive** out, ttp_err* e);

/* Memory that many members' bytes share: one allocation for a batch of small members, freed
   when the last of them is released. An archive is read on one thread and its members decoded
   on others: a malloc and a free of each member's bytes on different threads made them queue
   on the allocator's locks. */
typedef struct io_block {
  atomic_int refs;
  size_t used, cap;
  uint8_t data[];
} io_block;

/* A block of cap bytes, one reference (the caller's). NULL when out of memory. */
io_block* io_block_new(size_t cap);
void io_block_release(io_block* b); /* drops a reference; accepts NULL */

/* One member: its path (archive path / member name, malloc'd) and either its bytes (size of
   them, NUL after them: inside block, holding a reference to it, or malloc'd when block is
   NULL) or, when it could not be read, the one-line error in e. */
typedef struct io_member {
  char* path;
  uint8_t* bytes;
  size_t size;
  io_block* block;
} io_member;

/* Releases m's bytes (its block's reference, or the malloc'd bytes); accepts none. */
void io_member_free_bytes(io_member* m);

/* The next wanted member (io_member_wanted with extensions and hidden) into *m, its bytes in
   block where they fit (block may be NULL: malloc'd). Returns 1 (a member: m->bytes NULL means
   it failed, the reason in e), 0 (the archive's end) or -1 (the archive failed: unreadable,
   not a tar, corrupt or truncated; the reason in e naming the archive; nothing more comes). */
int io_archive_next(io_archive* a, const char* extensions, int hidden, io_block* block,
                    io_member* m, ttp_err* e);

void io_archive_close(io_archive* a); /* accepts NULL */

#endif
