/* The directory walk of ttp_list_files (files.c), for callers inside the library that start on
   the first files while the walk goes on (ttp_classify_paths). */
#ifndef TTP_IO_FILES_H
#define TTP_IO_FILES_H

#include <stddef.h>

#include "../pipeline/error.h"
#include "ttapipe.h"

/* The walk's callbacks. found: a file, numbered from 0 in the order found; the callee copies
   what it keeps, and a status other than TTP_OK stops the walk (that file counts as not found).
   placed: the walk's order, file by file: the file found as number `found` is the next one in
   byte-wise order; it cannot fail (allocate in found). hungry (may be NULL: never): whether the
   consumer wants files before their place is known. While it says so, a directory's files are
   found as they are read from it (up to WALK_EARLY_MAX of a directory), in the order the
   directory lists them, and placed once its listing is sorted; the others are found and placed
   together, in order, after the sort. */
typedef struct io_walk_fns {
  ttp_status (*found)(void* user, const char* path, ttp_err* e);
  void (*placed)(void* user, size_t found);
  int (*hungry)(void* user);
  void* user;
} io_walk_fns;

/* Files of one directory found before its listing ends, at most: a bound on the results a
   consumer keeps while they wait for their place. */
enum { WALK_EARLY_MAX = 1 << 18 };

/* Walks paths as ttp_list_files does (directories recursively, in byte-wise order within each,
   loops safe, hidden names and extensions as o says; anything else as given). Every file found
   is placed exactly once, even when the walk fails (after a failure, the files of a directory
   found before it, in the order found). */
ttp_status io_walk(const char* const* paths, size_t count, const ttp_list_options* o,
                   const io_walk_fns* fns, ttp_err* e);

/* Whether name ends in a dot and one of list's comma-separated extensions, in any case (an
   extension may hold dots: "tar.gz"). */
int io_extension_matches(const char* name, const char* list);

/* The caller's list options over the defaults (NULL: the defaults), checked. */
ttp_status io_list_options(const ttp_list_options* given, ttp_list_options* o, ttp_err* e);

#endif
