/* File lists: directory walks (sorted, loop-safe, hidden names and extensions filtered) and
   lists read from a file or standard input. See ttapipe.h ("File lists"). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "ttapipe.h"

enum { WALK_MAX_DEPTH = 256 };

void ttp_list_options_init(ttp_list_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->hidden = 0;
  o->extensions = "png,jpg,jpeg,bmp,pgm,ppm,pnm";
}

void ttp_file_list_free(ttp_file_list* list) {
  if (!list) return;
  for (size_t i = 0; i < list->count; i++) free(list->paths[i]);
  free(list->paths);
  *list = (ttp_file_list){0};
}

/* Appends a copy of path; the array grows by doubling (its capacity is the next power of two,
   known from the count alone). */
static ttp_status push(ttp_file_list* list, const char* path, ttp_err* e) {
  size_t n = list->count;
  if (n == 0 || (n >= 16 && (n & (n - 1)) == 0) ) {
    size_t cap = n == 0 ? 16 : 2 * n;
    char** grown = realloc(list->paths, cap * sizeof *grown);
    if (!grown) return ERR_NOMEM(e, cap * sizeof *grown);
    list->paths = grown;
  }
  char* copy = strdup(path);
  if (!copy) return ERR_NOMEM(e, strlen(path) + 1);
  list->paths[list->count++] = copy;
  return TTP_OK;
}

typedef struct walk {
  const char* extensions;
  int hidden;
  struct { dev_t dev; ino_t ino; } * seen; /* directories entered */
  size_t seen_count, seen_cap;
} walk;

/* Whether name's extension (after its last dot) is in the comma-separated list. */
static int extension_matches(const char* name, const char* list) {
  const char* dot = strrchr(name, '.');
  if (!dot || !dot[1]) return 0;
  size_t len = strlen(dot + 1);
  for (const char* p = list; *p;) {
    const char* comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (n == len) {
      size_t i = 0;
      while (i < n && tolower((unsigned char)p[i]) == tolower((unsigned char)dot[1 + i])) i++;
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

static ttp_status walk_dir(walk* w, const char* dir, int depth, ttp_file_list* found, ttp_err* e) {
  DIR* d = opendir(dir);
  if (!d || depth > WALK_MAX_DEPTH) { /* classifying it will say why it cannot be read */
    if (d) closedir(d);
    return push(found, dir, e);
  }
  ttp_status s = TTP_OK;
  struct dirent* ent;
  size_t dir_len = strlen(dir);
  while (s == TTP_OK && (ent = readdir(d))) {
    const char* name = ent->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
    if (name[0] == '.' && !w->hidden) continue;
    size_t len = dir_len + 1 + strlen(name) + 1;
    char* path = malloc(len);
    if (!path) {
      s = ERR_NOMEM(e, len);
      break;
    }
    snprintf(path, len, "%s%s%s", dir, dir_len && dir[dir_len - 1] == '/' ? "" : "/", name);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
      if (enter_once(w, &st, e, &s)) s = walk_dir(w, path, depth + 1, found, e);
    } else if (extension_matches(name, w->extensions)) {
      s = push(found, path, e); /* a dangling link too: its row will say so */
    }
    free(path);
  }
  closedir(d);
  return s;
}

static int by_bytes(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

ttp_status ttp_list_files(const char* const* paths, size_t count, const ttp_list_options* given,
                          ttp_file_list* list, char* error, size_t error_size) {
  ttp_err e = {0};
  ttp_list_options o;
  ttp_list_options_init(&o);
  if (given && given->struct_size >= offsetof(ttp_list_options, extensions) + sizeof(char*))
    memcpy(&o, given, given->struct_size < sizeof o ? given->struct_size : sizeof o);
  else if (given)
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_list_options.struct_size is %zu: call "
        "ttp_list_options_init first", given->struct_size);
  if (e.status == TTP_OK && (!list || (count && !paths) || !o.extensions))
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_list_files: list, paths and extensions are required");
  walk w = {o.extensions, o.hidden, NULL, 0, 0};
  for (size_t i = 0; i < count && e.status == TTP_OK; i++) {
    struct stat st;
    if (stat(paths[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
      push(list, paths[i], &e);
      continue;
    }
    ttp_file_list found = {0};
    ttp_status s = TTP_OK;
    if (enter_once(&w, &st, &e, &s)) s = walk_dir(&w, paths[i], 0, &found, &e);
    if (s == TTP_OK && found.count) qsort(found.paths, found.count, sizeof *found.paths, by_bytes);
    for (size_t j = 0; j < found.count && e.status == TTP_OK; j++) push(list, found.paths[j], &e);
    ttp_file_list_free(&found);
  }
  free(w.seen);
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
  while (e.status == TTP_OK && (n = getdelim(&line, &cap, separator, f)) > 0) {
    if (line[n - 1] == separator) line[--n] = '\0';
    if (!nul_separated && n > 0 && line[n - 1] == '\r') line[--n] = '\0';
    if (n > 0) push(list, line, &e);
  }
  if (e.status == TTP_OK && ferror(f))
    ERR(&e, TTP_ERR_IO, "%s: read failed: %s", use_stdin ? "standard input" : path,
        strerror(errno));
  free(line);
  if (!use_stdin) fclose(f);
  err_copy_out(&e, error, error_size);
  return e.status;
}
