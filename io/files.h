/* The directory walk of ttp_list_files (files.c), for callers inside the library that start on
   the first files while the walk goes on (ttp_classify_paths). */
#ifndef TTP_IO_FILES_H
#define TTP_IO_FILES_H

#include <stddef.h>

#include "../pipeline/error.h"
#include "ttapipe.h"

/* The walk's two callbacks. found: a file, as soon as it is read from its directory (a
   directory's files in the order the directory lists them, before they are sorted), numbered
   from 0 in the order found; the callee copies what it keeps, and a status other than TTP_OK
   stops the walk (that file counts as not found). placed: the walk's order, file by file: the
   file found as number `found` is the next one in byte-wise order; it cannot fail (allocate in
   found). */
typedef struct io_walk_fns {
  ttp_status (*found)(void* user, const char* path, ttp_err* e);
  void (*placed)(void* user, size_t found);
  void* user;
} io_walk_fns;

/* Walks paths as ttp_list_files does (directories recursively, in byte-wise order within each,
   loops safe, hidden names and extensions as o says; anything else as given). Every file found
   is placed exactly once, even when the walk fails: a directory's files as soon as its listing
   is sorted, so that a consumer can start on a directory's files while it is still being read
   and still report them in order; after a failure, the files found and not yet placed in the
   order they were found. */
ttp_status io_walk(const char* const* paths, size_t count, const ttp_list_options* o,
                   const io_walk_fns* fns, ttp_err* e);

/* The caller's list options over the defaults (NULL: the defaults), checked. */
ttp_status io_list_options(const ttp_list_options* given, ttp_list_options* o, ttp_err* e);

#endif
