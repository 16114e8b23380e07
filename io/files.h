/* The directory walk of ttp_list_files (files.c), for callers inside the library that start on
   the first files while the walk goes on (ttp_classify_paths). */
#ifndef TTP_IO_FILES_H
#define TTP_IO_FILES_H

#include <stddef.h>

#include "../pipeline/error.h"
#include "ttapipe.h"

/* Receives each path in the walk's order; copies what it keeps. A status other than TTP_OK
   stops the walk. */
typedef ttp_status (*io_emit_fn)(void* user, const char* path, ttp_err* e);

/* Walks paths as ttp_list_files does (directories recursively, in byte-wise order within each,
   loops safe, hidden names and extensions as o says; anything else as given), emitting each
   path as soon as its place in the order is known. */
ttp_status io_walk(const char* const* paths, size_t count, const ttp_list_options* o,
                   io_emit_fn emit, void* user, ttp_err* e);

/* The caller's list options over the defaults (NULL: the defaults), checked. */
ttp_status io_list_options(const ttp_list_options* given, ttp_list_options* o, ttp_err* e);

#endif
