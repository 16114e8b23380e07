/* Tar archives through libarchive: see archive.h. */
#include "archive.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "files.h"

int io_is_archive(const char* path) { return io_extension_matches(path, "tar,tar.gz,tgz"); }

io_block* io_block_new(size_t cap) {
  io_block* b = malloc(sizeof *b + cap);
  if (!b) return NULL;
  atomic_init(&b->refs, 1);
  b->used = 0, b->cap = cap;
  return b;
}

void io_block_release(io_block* b) {
  if (b && atomic_fetch_sub(&b->refs, 1) == 1) free(b);
}

void io_member_free_bytes(io_member* m) {
  if (m->block) io_block_release(m->block);
  else free(m->bytes);
  m->bytes = NULL, m->block = NULL;
}

int io_member_wanted(const char* name, const char* extensions, int hidden) {
  if (!hidden)
    for (const char* c = name; c; c = strchr(c, '/')) {
      while (*c == '/') c++;
      if (*c == '.') return 0;
    }
  const char* base = strrchr(name, '/');
  base = base ? base + 1 : name;
  return *base && !io_is_archive(base) && io_extension_matches(base, extensions);
}

#ifdef TTAPIPE_ARCHIVE

#include <archive.h>
#include <archive_entry.h>

struct io_archive {
  struct archive* a;
  int fd; /* -1 when reading memory */
  char* path;
  size_t max_member;
  int over; /* ended or failed: nothing more is read */
};

static ttp_status start(io_archive* r, const uint8_t* bytes, size_t size, ttp_err* e) {
  if (!(r->a = archive_read_new())) return ERR_NOMEM(e, sizeof(void*));
  /* gzip through zlib inside libarchive; nothing else, and never an external program. */
  if (archive_read_support_filter_none(r->a) != ARCHIVE_OK ||
      archive_read_support_filter_gzip(r->a) != ARCHIVE_OK ||
      archive_read_support_format_tar(r->a) != ARCHIVE_OK)
    return ERR(e, TTP_ERR_INTERNAL, "%s: libarchive: %s", r->path, archive_error_string(r->a));
  int rc = bytes ? archive_read_open_memory(r->a, bytes, size)
                 : archive_read_open_fd(r->a, r->fd, 1 << 16);
  if (rc != ARCHIVE_OK) {
    const char* why = archive_error_string(r->a);
    return ERR(e, TTP_ERR_FORMAT, "%s: not a readable tar archive: %s", r->path,
               why ? why : "unknown error");
  }
  return TTP_OK;
}

static ttp_status open_either(const uint8_t* bytes, size_t size, const char* path,
                              size_t max_member, io_archive** out, ttp_err* e) {
  *out = NULL;
  io_archive* r = calloc(1, sizeof *r);
  if (!r) return ERR_NOMEM(e, sizeof *r);
  r->fd = -1;
  r->max_member = max_member;
  ttp_status s = (r->path = strdup(path)) ? TTP_OK : ERR_NOMEM(e, strlen(path) + 1);
  size_t ignored;
  if (s == TTP_OK && !bytes) s = io_open_regular(path, &r->fd, &ignored, e);
  if (s == TTP_OK) s = start(r, bytes, size, e);
  if (s != TTP_OK) {
    io_archive_close(r);
    return s;
  }
  *out = r;
  return TTP_OK;
}

ttp_status io_archive_open(const char* path, size_t max_member, io_archive** out, ttp_err* e) {
  return open_either(NULL, 0, path, max_member, out, e);
}

ttp_status io_archive_open_memory(const uint8_t* bytes, size_t size, const char* path,
                                  size_t max_member, io_archive** out, ttp_err* e) {
  /* libarchive takes a non-NULL buffer even for no bytes. */
  static const uint8_t none[1];
  return open_either(size ? bytes : none, size, path, max_member, out, e);
}

/* The member's name as rows show it: "./" prefixes dropped, as tar -C dir -cf x.tar . writes. */
static const char* member_name(const char* name) {
  while (name[0] == '.' && name[1] == '/') {
    name += 2;
    while (*name == '/') name++;
  }
  return name;
}

/* Reads the current member's data whole (at most max_member bytes) into m. */
static ttp_status read_member(io_archive* r, struct archive_entry* entry, io_block* block,
                              io_member* m, ttp_err* e) {
  const int known = archive_entry_size_is_set(entry);
  const int64_t declared = archive_entry_size(entry);
  if (known && (declared < 0 || (uint64_t)declared > r->max_member))
    return ERR(e, TTP_ERR_FORMAT, "%s: %lld bytes, more than the %zu allowed", m->path,
               (long long)declared, r->max_member);
  size_t cap = known ? (size_t)declared : 1 << 16, size = 0;
  if (known && block && block->cap - block->used > cap) { /* in the block: its bytes' NUL too */
    uint8_t* at = block->data + block->used;
    la_ssize_t got = cap ? archive_read_data(r->a, at, cap) : 0;
    /* The data of a member comes whole from one call unless the archive ends inside it. */
    while (got > 0 && (size_t)got < cap) {
      la_ssize_t more = archive_read_data(r->a, at + got, cap - (size_t)got);
      if (more <= 0) break;
      got += more;
    }
    if (got < 0 || (size_t)got != cap) {
      r->over = 1;
      return ERR(e, TTP_ERR_FORMAT, "%s: truncated: %zu bytes declared, the archive ends before",
                 m->path, cap);
    }
    at[cap] = 0;
    block->used += (cap + 16) & ~(size_t)15;
    if (block->used > block->cap) block->used = block->cap;
    atomic_fetch_add(&block->refs, 1);
    m->bytes = at, m->size = cap, m->block = block;
    return TTP_OK;
  }
  uint8_t* buf = malloc(cap + 1);
  if (!buf) return ERR_NOMEM(e, cap + 1);
  for (;;) {
    if (size == cap) { /* a size not declared: grow up to the limit, and one byte past it */
      if (known || cap > r->max_member) break;
      size_t grown_cap = cap * 2 > r->max_member + 1 ? r->max_member + 1 : cap * 2;
      uint8_t* grown = realloc(buf, grown_cap + 1);
      if (!grown) {
        free(buf);
        return ERR_NOMEM(e, grown_cap + 1);
      }
      buf = grown, cap = grown_cap;
    }
    la_ssize_t got = archive_read_data(r->a, buf + size, cap - size);
    if (got < 0) {
      free(buf);
      r->over = 1; /* libarchive cannot go on after a failed read */
      return ERR(e, TTP_ERR_FORMAT, "%s: cannot read the member: %s", m->path,
                 archive_error_string(r->a) ? archive_error_string(r->a) : "unknown error");
    }
    if (got == 0) break;
    size += (size_t)got;
  }
  if (size > r->max_member) {
    free(buf);
    return ERR(e, TTP_ERR_FORMAT, "%s: more than the %zu bytes allowed", m->path, r->max_member);
  }
  if (known && size != (size_t)declared) {
    free(buf);
    r->over = 1;
    return ERR(e, TTP_ERR_FORMAT, "%s: truncated: %lld bytes declared, %zu read", m->path,
               (long long)declared, size);
  }
  buf[size] = 0;
  m->bytes = buf, m->size = size;
  return TTP_OK;
}

int io_archive_next(io_archive* r, const char* extensions, int hidden, io_block* block,
                    io_member* m, ttp_err* e) {
  *m = (io_member){0};
  while (!r->over) {
    struct archive_entry* entry;
    int rc = archive_read_next_header(r->a, &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      r->over = 1;
      const char* why = archive_error_string(r->a);
      ERR(e, TTP_ERR_FORMAT, "%s: not a readable tar archive: %s", r->path,
          why ? why : "unknown error");
      return -1;
    }
    const char* raw = archive_entry_pathname(entry);
    /* A regular member; a hard link's data is another member's, read there. */
    if (!raw || archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry))
      continue;
    const char* name = member_name(raw);
    if (!io_member_wanted(name, extensions, hidden)) continue;
    const size_t a = strlen(r->path), n = strlen(name);
    if (!(m->path = malloc(a + n + 2))) {
      r->over = 1;
      ERR_NOMEM(e, a + n + 2);
      return -1;
    }
    memcpy(m->path, r->path, a);
    m->path[a] = '/';
    memcpy(m->path + a + 1, name, n + 1);
    read_member(r, entry, block, m, e);
    return 1;
  }
  r->over = 1;
  return 0;
}

void io_archive_close(io_archive* r) {
  if (!r) return;
  if (r->a) archive_read_free(r->a);
  if (r->fd >= 0) close(r->fd);
  free(r->path);
  free(r);
}

#else /* built without libarchive */

struct io_archive {
  int unused;
};

static ttp_status absent(const char* path, io_archive** out, ttp_err* e) {
  *out = NULL;
  return ERR(e, TTP_ERR_FORMAT, "%s: this build reads no tar archives (libarchive was not "
             "found when it was built)", path);
}

ttp_status io_archive_open(const char* path, size_t max_member, io_archive** out, ttp_err* e) {
  (void)max_member;
  return absent(path, out, e);
}

ttp_status io_archive_open_memory(const uint8_t* bytes, size_t size, const char* path,
                                  size_t max_member, io_archive** out, ttp_err* e) {
  (void)bytes, (void)size, (void)max_member;
  return absent(path, out, e);
}

int io_archive_next(io_archive* r, const char* extensions, int hidden, io_block* block,
                    io_member* m, ttp_err* e) {
  (void)r, (void)extensions, (void)hidden, (void)block, (void)e;
  *m = (io_member){0};
  return 0;
}

void io_archive_close(io_archive* r) { (void)r; }

#endif
