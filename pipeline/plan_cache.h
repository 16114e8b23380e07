/* The plan cache: what an engine's timed search chose at open (the cudnn engine's convolution
   algorithms), kept in a file so that later processes on the same GPU model, driver and library
   versions open without searching and choose the same, which also gives them the same bits.

   A file holds the choices of one identity (a line naming the GPU model, the driver and the
   libraries: the caller's string); each entry, a choice's key (the layer's layout, precision,
   canonical rows and shapes: the same shapes choose the same in any model) and the choice (two
   ints and the time measured). The format, text:

     ttapipe plan cache 1
     id <the identity: printable ASCII>
     conv <PLAN_KEY_INTS ints> <algo> <math> <ms>       (any number of lines, up to PLAN_MAX)
     end <the number of conv lines> <FNV-1a 64 of every byte before this line, 16 hex digits>

   and nothing after the end line's newline. A file that breaks any of it (cut short, another
   version, bytes changed) or names another identity is ignored, with a note saying why: a
   stale, foreign or corrupt cache is never trusted, and the next write replaces it. Writes go to
   a temporary file beside the cache, renamed over it, so that a reader (or a second process
   writing the same cache) sees the old file or the new, never part of one. No global state. */
#ifndef TTP_PLAN_CACHE_H
#define TTP_PLAN_CACHE_H

#include <stddef.h>

enum { PLAN_KEY_INTS = 17, PLAN_MAX = 1024, PLAN_ID_MAX = 256 };

typedef struct plan_entry {
  int key[PLAN_KEY_INTS];
  int algo, math;
  float ms;
} plan_entry;

/* Reads the entries of identity id from path into out (room for max), *count their number.
   Returns 1 when read, 0 when there is no such file (no note), -1 when the file is ignored:
   note (note_size bytes) says why in a line that names the file. */
int plan_cache_read(const char* path, const char* id, plan_entry* out, int max, int* count,
                    char* note, size_t note_size);

/* Writes count entries of identity id (printable ASCII, at most PLAN_ID_MAX - 1 characters) to
   path, replacing it whole; makes the directories above path that are missing. Returns 0, or -1
   with a note naming the file (also for an entry out of the ranges the reader takes: keys
   within +-1e9, algo and math 0..1000, a finite time of -1..1e6 ms). */
int plan_cache_write(const char* path, const char* id, const plan_entry* entries, int count,
                     char* note, size_t note_size);

/* The cache's default path into out: $XDG_CACHE_HOME/ttapipe/plans, else
   $HOME/.cache/ttapipe/plans (only absolute directories count). Returns 0 when neither is set
   (then no default cache), 1 otherwise. */
int plan_cache_default_path(char* out, size_t size);

#endif
