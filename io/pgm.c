/* A strict reader of 8-bit binary PGM files; every malformed header is a one-line error. */
#include "pgm.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"

enum { PGM_MAX_BYTES = 1 << 24, PGM_MAX_NUMBER = 65535 };

typedef struct pgm_cursor {
  const uint8_t* p;
  const uint8_t* end;
} pgm_cursor;

static void skip_space_and_comments(pgm_cursor* c) {
  while (c->p < c->end) {
    if (isspace(*c->p)) {
      c->p++;
    } else if (*c->p == '#') {
      while (c->p < c->end && *c->p != '\n' && *c->p != '\r') c->p++;
    } else {
      break;
    }
  }
}

/* A decimal header number of 1..PGM_MAX_NUMBER, followed by whitespace or a comment. */
static ttp_status read_number(pgm_cursor* c, const char* path, const char* what, int* value,
                              ttp_err* e) {
  skip_space_and_comments(c);
  long v = 0;
  const uint8_t* start = c->p;
  while (c->p < c->end && isdigit(*c->p) && v <= PGM_MAX_NUMBER) v = v * 10 + (*c->p++ - '0');
  if (c->p == start) return ERR(e, TTP_ERR_FORMAT, "%s: PGM header: %s missing", path, what);
  if (v < 1 || v > PGM_MAX_NUMBER)
    return ERR(e, TTP_ERR_FORMAT, "%s: PGM header: %s out of range 1..%d", path, what,
               PGM_MAX_NUMBER);
  if (c->p >= c->end) return ERR(e, TTP_ERR_FORMAT, "%s: truncated PGM header", path);
  if (!(isspace(*c->p) || *c->p == '#'))
    return ERR(e, TTP_ERR_FORMAT, "%s: PGM header: %s is not a number", path, what);
  *value = (int)v;
  return TTP_OK;
}

static ttp_status parse(const uint8_t* data, size_t size, const char* path, int rows, int cols,
                        uint8_t* pixels, ttp_err* e) {
  if (size == 0) return ERR(e, TTP_ERR_FORMAT, "%s: empty file", path);
  if (size < 2 || data[0] != 'P' || data[1] != '5')
    return ERR(e, TTP_ERR_FORMAT, "%s: not a binary PGM file (no \"P5\" signature)", path);
  pgm_cursor c = {data + 2, data + size};
  if (c.p < c.end && !(isspace(*c.p) || *c.p == '#'))
    return ERR(e, TTP_ERR_FORMAT, "%s: not a binary PGM file (no \"P5\" signature)", path);
  int width, height, maxval;
  TRY(read_number(&c, path, "width", &width, e));
  TRY(read_number(&c, path, "height", &height, e));
  TRY(read_number(&c, path, "maxval", &maxval, e));
  if (maxval > 255)
    return ERR(e, TTP_ERR_FORMAT, "%s: 16-bit PGM (maxval %d) is not supported", path, maxval);
  if (width != cols || height != rows)
    return ERR(e, TTP_ERR_FORMAT, "%s: image is %dx%d, the model needs %dx%d", path, width,
               height, cols, rows);
  if (!isspace(*c.p))
    return ERR(e, TTP_ERR_FORMAT, "%s: PGM header: no whitespace byte after maxval", path);
  c.p++;
  size_t need = (size_t)rows * cols;
  if ((size_t)(c.end - c.p) < need)
    return ERR(e, TTP_ERR_FORMAT, "%s: truncated: %zu pixel bytes expected, %zu present", path,
               need, (size_t)(c.end - c.p));
  for (size_t i = 0; i < need; i++)
    if (c.p[i] > maxval)
      return ERR(e, TTP_ERR_FORMAT, "%s: pixel %zu is %d, above maxval %d", path, i, c.p[i],
                 maxval);
  for (size_t i = 0; i < need; i++)
    pixels[i] = (uint8_t)((c.p[i] * 255u + (unsigned)maxval / 2) / (unsigned)maxval);
  return TTP_OK;
}

ttp_status pgm_read(const char* path, int rows, int cols, uint8_t* pixels, ttp_err* e) {
  uint8_t* data;
  size_t size;
  TRY(io_read_file(path, PGM_MAX_BYTES, &data, &size, e));
  ttp_status s = parse(data, size, path, rows, cols, pixels, e);
  free(data);
  return s;
}
