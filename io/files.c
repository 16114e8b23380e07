/* File lists: directory walks (sorted, loop-safe, hidden names and extensions filtered) and
   lists read from a file or standard input. See ttapipe.h ("File lists"). */
#define _DEFAULT_SOURCE /* readdir's d_type: most entries need no stat */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "files.h"
#include "ttapipe.h"

enum { WALK_MAX_DEPTH = 256 };

void ttp_list_options_init(ttp_list_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->hidden = 0;
  o->extensions = "png,jpg,jpeg,bmp,pgm,ppm,pnm,tar,tar.gz,tgz";
}

void ttp_file_list_free(ttp_file_list* list) {
  if (!list) return;
  for (size_t i = 0; i < list->count; i++) free(list->paths[i]);
  free(list->paths);
  *list = (ttp_file_list){0};
}

/* Appends path, taken; the array grows by doubling (its capacity is the next power of two,
   known from the count alone). */
static ttp_status push_taken(ttp_file_list* list, char* path, ttp_err* e) {
  size_t n = list->count;
  if (n == 0 || (n >= 16 && (n & (n - 1)) == 0) ) {
    size_t cap = n == 0 ? 16 : 2 * n;
    char** grown = realloc(list->paths, cap * sizeof *grown);
    if (!grown) return ERR_NOMEM(e, cap * sizeof *grown);
    list->paths = grown;
  }
  list->paths[list->count++] = path;
  return TTP_OK;
}

/* Appends a copy of path. */
static ttp_status push(ttp_file_list* list, const char* path, ttp_err* e) {
  char* copy = strdup(path);
  if (!copy) return ERR_NOMEM(e, strlen(path) + 1);
  ttp_status s = push_taken(list, copy, e);
  if (s != TTP_OK) free(copy);
  return s;
}

typedef struct walk {
  const char* extensions;
  int hidden;
  const io_walk_fns* fns;
  size_t found;                            /* files found so far */
  struct { dev_t dev; ino_t ino; } * seen; /* directories entered */
  size_t seen_count, seen_cap;
} walk;

enum { NOT_FOUND = -1, HUNGRY_EVERY = 256 /* entries read between asking */ };

/* A file found: its number, or NOT_FOUND when found() refused it (the walk stops). */
static ttp_status find(walk* w, const char* path, size_t* number, ttp_err* e) {
  *number = (size_t)NOT_FOUND;
  TRY(w->fns->found(w->fns->user, path, e));
  *number = w->found++;
  return TTP_OK;
}

static void place(walk* w, size_t number) {
  if (number != (size_t)NOT_FOUND) w->fns->placed(w->fns->user, number);
}

/* A path that is not walked (a file given, a directory that cannot be read): found and placed. */
static ttp_status find_and_place(walk* w, const char* path, ttp_err* e) {
  size_t number;
  TRY(find(w, path, &number, e));
  place(w, number);
  return TTP_OK;
}

int io_extension_matches(const char* name, const char* list) {
  const size_t len = strlen(name);
  for (const char* p = list; *p;) {
    const char* comma = strchr(p, ',');
    const size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (n && len > n && name[len - n - 1] == '.') {
      size_t i = 0;
      while (i < n && tolower((unsigned char)p[i]) == tolower((unsigned char)name[len - n + i])) i++;
      if (i == n) return 1;
    }
    p += n + (comma ? 1 : 0);
  }
  return 0;
}

/* Marks a directory as entered; 0 if it was already. */
static int enter_once(walk* w, const struct stat* st, ttp_err* e, ttp_status* s) {
  for (size_t i = 0; i < w->seen_count; i++)
    if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino) return 0;
  if (w->seen_count == w->seen_cap) {
    size_t cap = w->seen_cap ? 2 * w->seen_cap : 64;
    void* grown = realloc(w->seen, cap * sizeof *w->seen);
    if (!grown) {
      *s = ERR_NOMEM(e, cap * sizeof *w->seen);
      return 0;
    }
    w->seen = grown;
    w->seen_cap = cap;
  }
  w->seen[w->seen_count].dev = st->st_dev;
  w->seen[w->seen_count++].ino = st->st_ino;
  return 1;
}

/* A directory's entries: names packed in one buffer, each with whether it is a directory, and a
   file's number when found. */
typedef struct entry {
  size_t name; /* offset in the names buffer */
  size_t found;
  int dir;
} entry;

typedef struct listing {
  entry* entries;
  size_t count, cap;
  char* names;
  size_t used, names_cap;
} listing;

/* Sorting a directory's entries into the byte-wise order of their full paths: a directory's
   name compares as if followed by '/', the separator its files' paths continue with. A radix
   sort on the first 8 bytes of that (name, '/' for a directory, zeros), then the rare runs of
   equal prefixes by the whole comparison: a directory of 100,000 files sorts in a few
   milliseconds instead of tens. */
typedef struct sort_item {
  uint64_t key; /* the first 8 bytes, big-endian */
  const char* name;
  size_t found;
  int dir;
} sort_item;

static int by_path(const void* x, const void* y) {
  const sort_item *a = x, *b = y;
  const unsigned char* p = (const unsigned char*)a->name;
  const unsigned char* q = (const unsigned char*)b->name;
  while (*p && *p == *q) p++, q++;
  unsigned cp = *p ? *p : a->dir ? '/' : 0, cq = *q ? *q : b->dir ? '/' : 0;
  return (cp > cq) - (cp < cq);
}

static uint64_t sort_key(const char* name, int dir) {
  uint64_t key = 0;
  int i = 0, ended = 0;
  for (; i < 8; i++) {
    unsigned c = ended ? 0 : (unsigned char)name[i];
    if (!ended && !c) ended = 1, c = dir ? '/' : 0;
    key = key << 8 | c;
  }
  return key;
}

static void sort_items(sort_item* v, sort_item* tmp, size_t n) {
  for (int shift = 0; shift < 64; shift += 8) { /* least significant byte first, stable */
    size_t count[257] = {0};
    for (size_t i = 0; i < n; i++) count[(v[i].key >> shift & 255) + 1]++;
    if (count[(v[0].key >> shift & 255) + 1] == n) continue; /* one bucket: nothing moves */
    for (int b = 0; b < 256; b++) count[b + 1] += count[b];
    for (size_t i = 0; i < n; i++) tmp[count[v[i].key >> shift & 255]++] = v[i];
    memcpy(v, tmp, n * sizeof *v);
  }
  for (size_t i = 0; i < n;) { /* runs of one prefix: the whole comparison */
    size_t j = i + 1;
    while (j < n && v[j].key == v[i].key) j++;
    if (j - i > 1) qsort(v + i, j - i, sizeof *v, by_path);
    i = j;
  }
}

static ttp_status add_entry(listing* l, const char* name, int dir, size_t found, ttp_err* e) {
  size_t n = strlen(name) + 1;
  if (l->count == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 256;
    entry* grown = realloc(l->entries, cap * sizeof *grown);
    if (!grown) return ERR_NOMEM(e, cap * sizeof *grown);
    l->entries = grown, l->cap = cap;
  }
  if (l->used + n > l->names_cap) {
    size_t cap = (l->used + n) * 2 + 4096;
    char* grown = realloc(l->names, cap);
    if (!grown) return ERR_NOMEM(e, cap);
    l->names = grown, l->names_cap = cap;
  }
  memcpy(l->names + l->used, name, n);
  l->entries[l->count++] = (entry){l->used, found, dir};
  l->used += n;
  return TTP_OK;
}

/* Reads dir's entries (the hidden ones only when asked), telling directories by the type
   readdir gives, or by stat (which follows links) where it gives none; files are found as soon
   as they are read while the consumer is hungry. */
static ttp_status list_dir(walk* w, DIR* d, char* path, size_t dir_len, listing* l, ttp_err* e) {
  struct dirent* ent;
  size_t early = 0, read = 0;
  int hungry = 0;
  while ((ent = readdir(d))) {
    const char* name = ent->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
    if (name[0] == '.' && !w->hidden) continue;
    size_t n = strlen(name);
    if (dir_len + n + 2 >= PATH_MAX) continue; /* no such path can be opened */
    memcpy(path + dir_len, name, n + 1);
    int dir = ent->d_type == DT_DIR;
    if (ent->d_type == DT_UNKNOWN || ent->d_type == DT_LNK) {
      struct stat st;
      dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    }
    if (!dir && !io_extension_matches(name, w->extensions)) continue;
    if (read++ % HUNGRY_EVERY == 0)
      hungry = w->fns->hungry && early < WALK_EARLY_MAX && w->fns->hungry(w->fns->user);
    size_t found = (size_t)NOT_FOUND;
    ttp_status s = TTP_OK;
    if (!dir && hungry) { /* a dangling link too: its row will say so */
      s = find(w, path, &found, e);
      early++;
    }
    if (s == TTP_OK) s = add_entry(l, name, dir, found, e);
    if (s != TTP_OK) {
      place(w, found); /* found, not listed */
      return s;
    }
  }
  return TTP_OK;
}

/* path: the directory, PATH_MAX bytes of room. Its files are found as they are read, then placed,
   with those of its directories in place, in byte-wise order of their paths. */
static ttp_status walk_dir(walk* w, char* path, int depth, ttp_err* e) {
  DIR* d = opendir(path);
  if (!d || depth > WALK_MAX_DEPTH) { /* classifying it will say why it cannot be read */
    if (d) closedir(d);
    return find_and_place(w, path, e);
  }
  size_t dir_len = strlen(path);
  if (dir_len == 0 || path[dir_len - 1] != '/') path[dir_len++] = '/';
  path[dir_len] = '\0';
  listing l = {0};
  ttp_status s = list_dir(w, d, path, dir_len, &l, e);
  closedir(d);
  sort_item* items = NULL;
  if (s == TTP_OK && l.count) {
    items = malloc(2 * l.count * sizeof *items);
    if (!items) s = ERR_NOMEM(e, 2 * l.count * sizeof *items);
  }
  if (!items) { /* nothing listed, or a failure: the files found, in the order found */
    for (size_t i = 0; i < l.count; i++)
      if (!l.entries[i].dir) place(w, l.entries[i].found);
  } else { /* dir_len + 2 + the name's length < PATH_MAX, as listed */
    for (size_t i = 0; i < l.count; i++) {
      const entry* en = &l.entries[i];
      const char* name = l.names + en->name;
      items[i] = (sort_item){sort_key(name, en->dir), name, en->found, en->dir};
    }
    sort_items(items, items + l.count, l.count);
  }
  for (size_t i = 0; items && i < l.count; i++) {
    size_t n = strlen(items[i].name);
    memcpy(path + dir_len, items[i].name, n + 1);
    if (!items[i].dir) {
      if (items[i].found == (size_t)NOT_FOUND && s == TTP_OK) /* not found early: now */
        s = find(w, path, &items[i].found, e);
      place(w, items[i].found);
      continue;
    }
    if (s != TTP_OK) continue; /* after a failure, only the files this directory has found */
    struct stat st;
    if (stat(path, &st) == 0 && enter_once(w, &st, e, &s)) s = walk_dir(w, path, depth + 1, e);
  }
  path[dir_len] = '\0';
  free(items);
  free(l.entries);
  free(l.names);
  return s;
}

ttp_status io_walk(const char* const* paths, size_t count, const ttp_list_options* o,
                   const io_walk_fns* fns, ttp_err* e) {
  walk w = {.extensions = o->extensions, .hidden = o->hidden, .fns = fns};
  ttp_status s = TTP_OK;
  for (size_t i = 0; i < count && s == TTP_OK; i++) {
    struct stat st;
    if (stat(paths[i], &st) != 0 || !S_ISDIR(st.st_mode) || strlen(paths[i]) + 2 >= PATH_MAX) {
      s = find_and_place(&w, paths[i], e); /* classifying it will say why it cannot be read */
      continue;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", paths[i]);
    if (enter_once(&w, &st, e, &s)) s = walk_dir(&w, path, 0, e);
  }
  free(w.seen);
  return s;
}

/* ttp_list_files' side of the walk: the files as found, then their order. */
typedef struct list_walk {
  char** found;
  size_t* order; /* as many as found: order[j] is the number of the j-th file placed */
  size_t count, placed, cap;
} list_walk;

static ttp_status list_found(void* user, const char* path, ttp_err* e) {
  list_walk* l = user;
  if (l->count == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 256;
    char** found = realloc(l->found, cap * sizeof *found);
    if (found) l->found = found;
    size_t* order = found ? realloc(l->order, cap * sizeof *order) : NULL;
    if (!order) return ERR_NOMEM(e, cap * (sizeof *found + sizeof *order));
    l->order = order, l->cap = cap;
  }
  if (!(l->found[l->count] = strdup(path))) return ERR_NOMEM(e, strlen(path) + 1);
  l->count++;
  return TTP_OK;
}

static void list_placed(void* user, size_t found) {
  list_walk* l = user;
  l->order[l->placed++] = found;
}

ttp_status io_list_options(const ttp_list_options* given, ttp_list_options* o, ttp_err* e) {
  ttp_list_options_init(o);
  if (!given) return TTP_OK;
  if (given->struct_size < offsetof(ttp_list_options, extensions) + sizeof(char*))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "ttp_list_options.struct_size is %zu: call "
               "ttp_list_options_init first", given->struct_size);
  memcpy(o, given, given->struct_size < sizeof *o ? given->struct_size : sizeof *o);
  if (!o->extensions) return ERR(e, TTP_ERR_INVALID_ARGUMENT, "ttp_list_options: no extensions");
  return TTP_OK;
}

ttp_status ttp_list_files(const char* const* paths, size_t count, const ttp_list_options* given,
                          ttp_file_list* list, char* error, size_t error_size) {
  ttp_err e = {0};
  ttp_list_options o;
  if (io_list_options(given, &o, &e) == TTP_OK) {
    if (!list || (count && !paths))
      ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_list_files: list and paths are required");
    else {
      list_walk l = {0};
      io_walk(paths, count, &o, &(io_walk_fns){list_found, list_placed, NULL, &l}, &e);
      ttp_err room = {0};
      for (size_t j = 0; j < l.placed; j++) { /* every file found is placed, even after a failure */
        char* path = l.found[l.order[j]];
        if (room.status == TTP_OK && push_taken(list, path, &room) == TTP_OK) continue;
        free(path); /* no room left */
      }
      if (e.status == TTP_OK && room.status != TTP_OK) e = room;
      free(l.found);
      free(l.order);
    }
  }
  err_copy_out(&e, error, error_size);
  return e.status;
}

ttp_status ttp_read_file_list(const char* path, int nul_separated, ttp_file_list* list,
                              char* error, size_t error_size) {
  ttp_err e = {0};
  if (!path || !list) {
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_read_file_list: path and list are required");
    err_copy_out(&e, error, error_size);
    return e.status;
  }
  int use_stdin = strcmp(path, "-") == 0;
  FILE* f = use_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    ERR(&e, TTP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    err_copy_out(&e, error, error_size);
    return e.status;
  }
  char* line = NULL;
  size_t cap = 0;
  ssize_t n;
  int separator = nul_separated ? '\0' : '\n';
  size_t number = 0;
  while (e.status == TTP_OK && (n = getdelim(&line, &cap, separator, f)) > 0) {
    number++;
    if (line[n - 1] == separator) line[--n] = '\0';
    if (!nul_separated && n > 0 && line[n - 1] == '\r') line[--n] = '\0';
    /* A path cannot hold a NUL byte: such a line is a list of the other kind, not a path cut
       short (which would be classified, or skipped as empty, in its place). */
    if (!nul_separated && memchr(line, '\0', (size_t)n))
      ERR(&e, TTP_ERR_FORMAT, "%s: line %zu holds a NUL byte (a NUL-separated list needs --null)",
          use_stdin ? "standard input" : path, number);
    else if (n > 0)
      push(list, line, &e);
  }
  if (e.status == TTP_OK && ferror(f))
    ERR(&e, TTP_ERR_IO, "%s: read failed: %s", use_stdin ? "standard input" : path,
        strerror(errno));
  free(line);
  if (!use_stdin) fclose(f);
  err_copy_out(&e, error, error_size);
  return e.status;
}
