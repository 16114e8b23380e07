/* IDX reading through zlib's gz* interface, which reads plain files transparently. */
#include "idx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"

/* zlib takes unsigned int lengths: read in chunks well below that. */
enum { IDX_CHUNK = 1 << 24, IDX_FIRST_ALLOCATION = 1 << 20 };

/* Reads up to n bytes; *got receives how many arrived (fewer only at the end of the data). */
static ttp_status gz_read(gzFile gz, const char* path, void* buf, size_t n, size_t* got,
                          ttp_err* e) {
  uint8_t* p = buf;
  *got = 0;
  while (*got < n) {
    size_t want = n - *got < IDX_CHUNK ? n - *got : IDX_CHUNK;
    int r = gzread(gz, p + *got, (unsigned)want);
    if (r < 0) {
      int code;
      const char* msg = gzerror(gz, &code);
      return ERR(e, TTP_ERR_FORMAT, "%s: corrupt gzip data: %s", path,
                 code == Z_ERRNO ? strerror(errno) : msg);
    }
    if (r == 0) break;
    *got += (size_t)r;
  }
  /* A gzip stream cut short reads as a short count with a pending error. */
  int code;
  const char* msg = gzerror(gz, &code);
  if (code != Z_OK && code != Z_BUF_ERROR)
    return ERR(e, TTP_ERR_FORMAT, "%s: corrupt gzip data: %s", path, msg);
  return TTP_OK;
}

static uint32_t be32(const uint8_t* b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

/* Reads the declared elements into a buffer grown as they arrive. */
static ttp_status read_elements(gzFile gz, const char* path, const char* what, size_t total,
                                uint8_t** data, ttp_err* e) {
  size_t cap = total < IDX_FIRST_ALLOCATION ? total : IDX_FIRST_ALLOCATION, have = 0;
  uint8_t* buf = malloc(cap);
  if (!buf) return ERR_NOMEM(e, cap);
  for (;;) {
    size_t got;
    ttp_status s = gz_read(gz, path, buf + have, cap - have, &got, e);
    if (s != TTP_OK) {
      free(buf);
      return s;
    }
    have += got;
    if (have < cap) {
      free(buf);
      return ERR(e, TTP_ERR_FORMAT, "%s: truncated: the header declares %zu bytes of %s, the file "
                 "holds %zu", path, total, what, have);
    }
    if (have == total) break;
    size_t grown = cap * 2 < total ? cap * 2 : total;
    uint8_t* next = realloc(buf, grown);
    if (!next) {
      free(buf);
      return ERR_NOMEM(e, grown);
    }
    buf = next;
    cap = grown;
  }
  uint8_t extra;
  size_t got;
  ttp_status s = gz_read(gz, path, &extra, 1, &got, e);
  if (s == TTP_OK && got)
    s = ERR(e, TTP_ERR_FORMAT, "%s: data after the %zu bytes of %s the header declares", path,
            total, what);
  if (s != TTP_OK) {
    free(buf);
    return s;
  }
  *data = buf;
  return TTP_OK;
}

static ttp_status parse(gzFile gz, const char* path, int min_dims, int max_dims, const char* what,
                        size_t max_bytes, uint32_t dims[IDX_MAX_DIMS], int* dims_out,
                        uint8_t** data, ttp_err* e) {
  uint8_t header[4 + 4 * IDX_MAX_DIMS];
  size_t got;
  TRY(gz_read(gz, path, header, 4, &got, e));
  if (got == 0) return ERR(e, TTP_ERR_FORMAT, "%s: empty file", path);
  const int ndims = got == 4 ? header[3] : 0;
  if (got == 4 && (header[0] != 0 || header[1] != 0 || header[2] != 0x08 || ndims < min_dims ||
                   ndims > max_dims)) {
    if (min_dims == max_dims)
      return ERR(e, TTP_ERR_FORMAT, "%s: not an IDX %s file (magic 0x%08x, expected 0x%08x)",
                 path, what, be32(header), 0x0800u | (unsigned)min_dims);
    return ERR(e, TTP_ERR_FORMAT, "%s: not an IDX %s file (magic 0x%08x, expected 0x%08x to "
               "0x%08x)", path, what, be32(header), 0x0800u | (unsigned)min_dims,
               0x0800u | (unsigned)max_dims);
  }
  const size_t header_size = 4 + 4 * (size_t)ndims;
  size_t more = 0;
  if (got == 4) TRY(gz_read(gz, path, header + 4, header_size - 4, &more, e));
  if (got + more < header_size)
    return ERR(e, TTP_ERR_FORMAT, "%s: truncated header (%zu of %zu bytes)", path, got + more,
               got < 4 ? (size_t)4 : header_size);
  *dims_out = ndims;
  size_t total = 1;
  for (int i = 0; i < ndims; i++) {
    dims[i] = be32(header + 4 + 4 * i);
    if (dims[i] == 0) return ERR(e, TTP_ERR_FORMAT, "%s: dimension %d is zero", path, i);
    /* Cannot overflow: total <= max_bytes < 2^63 before each multiplication by < 2^32. */
    total *= dims[i];
    if (total > max_bytes)
      return ERR(e, TTP_ERR_FORMAT, "%s: the header declares more than %zu bytes of %s", path,
                 max_bytes, what);
  }
  return read_elements(gz, path, what, total, data, e);
}

ttp_status idx_read(const char* path, int min_dims, int max_dims, const char* what,
                    size_t max_bytes, uint32_t dims[IDX_MAX_DIMS], int* ndims, uint8_t** data,
                    ttp_err* e) {
  *data = NULL;
  *ndims = 0;
  if (min_dims < 1 || max_dims < min_dims || max_dims > IDX_MAX_DIMS ||
      max_bytes > ((size_t)1 << 62))
    return ERR(e, TTP_ERR_INTERNAL, "idx_read: bad arguments");
  int fd;
  size_t size;
  TRY(io_open_regular(path, &fd, &size, e));
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    close(fd);
    return ERR(e, TTP_ERR_OUT_OF_MEMORY, "%s: gzdopen failed", path);
  }
  gzbuffer(gz, 1 << 16);
  ttp_status s = parse(gz, path, min_dims, max_dims, what, max_bytes, dims, ndims, data, e);
  gzclose_r(gz);
  return s;
}
