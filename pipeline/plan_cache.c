/* The plan cache's file (plan_cache.h). */
#define _POSIX_C_SOURCE 200809L
#include "plan_cache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char kMagic[] = "ttapipe plan cache 1\n";
enum { kMaxFileBytes = 1 << 20, kMaxLine = 512 };

static uint64_t fnv1a(const char* bytes, size_t n) {
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)bytes[i]) * 0x100000001b3u;
  return h;
}

static int printable_id(const char* id) {
  const size_t n = strlen(id);
  if (n == 0 || n >= PLAN_ID_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (id[i] < 0x20 || id[i] > 0x7e) return 0;
  return 1;
}

/* The whole file into a new buffer (NUL-terminated) of *size bytes; NULL with errno set, or
   with *size past kMaxFileBytes when it is too large. */
static char* slurp(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  char* text = malloc(kMaxFileBytes + 2);
  size_t n = text ? fread(text, 1, kMaxFileBytes + 1, f) : 0;
  const int failed = !text || ferror(f);
  fclose(f);
  if (failed) {
    free(text);
    errno = EIO;
    return NULL;
  }
  text[n] = '\0';
  *size = n;
  return text;
}

/* A line of the body from *at (up to its newline, which must be there), NUL-terminated into
   line; advances *at past the newline. 0 when the text ends first or the line is too long. */
static int next_line(const char** at, const char* end, char* line) {
  const char* nl = memchr(*at, '\n', (size_t)(end - *at));
  if (!nl || nl - *at >= kMaxLine) return 0;
  memcpy(line, *at, (size_t)(nl - *at));
  line[nl - *at] = '\0';
  *at = nl + 1;
  return 1;
}

/* An int in [lo, hi] from the start of *s (decimal, optional minus), *s past it and one space
   or the end. */
static int read_int(const char** s, long lo, long hi, int* out) {
  char* stop;
  errno = 0;
  const long v = strtol(*s, &stop, 10);
  if (stop == *s || errno || v < lo || v > hi || (*stop != ' ' && *stop != '\0') ||
      (**s != '-' && (**s < '0' || **s > '9')))
    return 0;
  *out = (int)v;
  *s = *stop ? stop + 1 : stop;
  return 1;
}

/* The ranges of an entry's fields: what the reader takes, and so what the writer writes. */
enum { kKeyBound = 1000000000, kChoiceBound = 1000 };
static int entry_ok(const plan_entry* e) {
  for (int k = 0; k < PLAN_KEY_INTS; k++)
    if (e->key[k] < -kKeyBound || e->key[k] > kKeyBound) return 0;
  return e->algo >= 0 && e->algo <= kChoiceBound && e->math >= 0 && e->math <= kChoiceBound &&
         isfinite(e->ms) && e->ms >= -1.0f && e->ms <= 1e6f;
}

/* An entry from a "conv ..." line's fields; 0 when they are not exactly that. A time that
   underflows to a subnormal (strtof's ERANGE) is taken as it comes: the writer's %.9g of any
   float reads back to it. */
static int parse_entry(const char* s, plan_entry* e) {
  for (int k = 0; k < PLAN_KEY_INTS; k++)
    if (!read_int(&s, -kKeyBound, kKeyBound, &e->key[k])) return 0;
  if (!read_int(&s, 0, kChoiceBound, &e->algo) || !read_int(&s, 0, kChoiceBound, &e->math))
    return 0;
  char* stop;
  e->ms = strtof(s, &stop);
  return stop != s && *stop == '\0' && entry_ok(e);
}

/* A note (printf's format) into note; returns -1: the file ignored or not written. */
static int noted(char* note, size_t note_size, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(note, note_size, format, args);
  va_end(args);
  return -1;
}

/* The entries of text (size bytes, NUL-terminated) for id: 1 and *count, or -1 and a note. */
static int parse(const char* path, const char* text, size_t size, const char* id,
                 plan_entry* out, int max, int* count, char* note, size_t note_size) {
  char line[kMaxLine];
  const char* at = text + sizeof kMagic - 1;
  const char* end = text + size;
  if (size < sizeof kMagic - 1 || memcmp(text, kMagic, sizeof kMagic - 1) != 0)
    return noted(note, note_size, "plan cache %s: ignored: not a plan cache of this version",
                 path);
  if (!next_line(&at, end, line) || strncmp(line, "id ", 3) != 0 || !printable_id(line + 3))
    return noted(note, note_size, "plan cache %s: ignored: corrupt (its id line)", path);
  if (strcmp(line + 3, id) != 0)
    return noted(note, note_size, "plan cache %s: ignored: written for %.120s, not %.120s",
                 path, line + 3, id);
  int entries = 0;
  for (;;) {
    const char* line_start = at;
    if (!next_line(&at, end, line))
      return noted(note, note_size, "plan cache %s: ignored: cut short (no end line)", path);
    if (strncmp(line, "conv ", 5) == 0) {
      plan_entry e;
      if (!parse_entry(line + 5, &e))
        return noted(note, note_size, "plan cache %s: ignored: corrupt (entry %d)", path,
                     entries + 1);
      if (entries >= max || entries >= PLAN_MAX)
        return noted(note, note_size, "plan cache %s: ignored: more than %d entries", path,
                     max < PLAN_MAX ? max : PLAN_MAX);
      out[entries++] = e;
      continue;
    }
    /* the end line: "end N HHHHHHHHHHHHHHHH", N the entries, H the checksum */
    const char* s = line + 4;
    int n;
    char* stop;
    if (strncmp(line, "end ", 4) != 0 || !read_int(&s, 0, PLAN_MAX, &n) || strlen(s) != 16 ||
        strspn(s, "0123456789abcdef") != 16)
      return noted(note, note_size,
                   "plan cache %s: ignored: corrupt (a line that is neither an entry nor the "
                   "end)", path);
    const uint64_t sum = strtoull(s, &stop, 16);
    if (n != entries || sum != fnv1a(text, (size_t)(line_start - text)))
      return noted(note, note_size, "plan cache %s: ignored: corrupt (its count or checksum)",
                   path);
    if (at != end)
      return noted(note, note_size, "plan cache %s: ignored: corrupt (bytes after its end line)",
                   path);
    *count = entries;
    return 1;
  }
}

int plan_cache_read(const char* path, const char* id, plan_entry* out, int max, int* count,
                    char* note, size_t note_size) {
  *count = 0;
  size_t size = 0;
  char* text = slurp(path, &size);
  if (!text) {
    if (errno == ENOENT) return 0;
    return noted(note, note_size, "plan cache %s: ignored: cannot read it (%s)", path,
                 strerror(errno));
  }
  const int result =
      size > kMaxFileBytes
          ? noted(note, note_size, "plan cache %s: ignored: larger than %d bytes", path,
                  kMaxFileBytes)
          : parse(path, text, size, id, out, max, count, note, note_size);
  free(text);
  return result;
}

/* Makes every missing directory above path's last component. */
static int make_parents(const char* path) {
  char dir[4096];
  const size_t n = strlen(path);
  if (n >= sizeof dir) return -1;
  memcpy(dir, path, n + 1);
  for (char* p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return 0;
}

int plan_cache_write(const char* path, const char* id, const plan_entry* entries, int count,
                     char* note, size_t note_size) {
  int bad = !printable_id(id) || count < 0 || count > PLAN_MAX;
  for (int i = 0; !bad && i < count; i++) bad = !entry_ok(&entries[i]);
  if (bad)
    return noted(note, note_size,
                 "plan cache %s: not written: %d entries, an entry out of the format's ranges or "
                 "an id that is not printable", path, count);
  const size_t room = (size_t)count * (PLAN_KEY_INTS + 3) * 16 + PLAN_ID_MAX + 128;
  char* text = malloc(room);
  if (!text) return noted(note, note_size, "plan cache %s: not written: out of memory", path);
  size_t n = (size_t)snprintf(text, room, "%sid %s\n", kMagic, id);
  for (int i = 0; i < count; i++) {
    n += (size_t)snprintf(text + n, room - n, "conv");
    for (int k = 0; k < PLAN_KEY_INTS; k++)
      n += (size_t)snprintf(text + n, room - n, " %d", entries[i].key[k]);
    n += (size_t)snprintf(text + n, room - n, " %d %d %.9g\n", entries[i].algo, entries[i].math,
                          (double)entries[i].ms);
  }
  n += (size_t)snprintf(text + n, room - n, "end %d %016" PRIx64 "\n", count, fnv1a(text, n));
  char temp[4096];
  int ok = make_parents(path) == 0 &&
           snprintf(temp, sizeof temp, "%s.%ld.tmp", path, (long)getpid()) < (int)sizeof temp;
  FILE* f = ok ? fopen(temp, "wb") : NULL;
  if (f) {
    ok = fwrite(text, 1, n, f) == n;
    ok = fclose(f) == 0 && ok;
    ok = ok && rename(temp, path) == 0;
    if (!ok) remove(temp);
  } else {
    ok = 0;
  }
  const int saved = errno;
  free(text);
  if (!ok) return noted(note, note_size, "plan cache %s: not written (%s)", path, strerror(saved));
  return 0;
}

int plan_cache_default_path(char* out, size_t size) {
  const char* xdg = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') n = snprintf(out, size, "%s/ttapipe/plans", xdg);
  else if (home && home[0] == '/') n = snprintf(out, size, "%s/.cache/ttapipe/plans", home);
  else return 0;
  return n > 0 && (size_t)n < size;
}
