/* Binary PNM images, ttapipe's own strict parser (stb's PNM reader in Debian's snapshot has
   known integer-overflow bugs): P5 (grey) and P6 (RGB). The header is the signature, width,
   height and maxval separated by whitespace, with '#' comments to the end of a line between
   them, then exactly one whitespace byte; then width x height samples of one byte (maxval up to
   255) or two big-endian bytes (up to 65535), scaled to 0..255 with rounding. Data after the
   first image is ignored (the format allows several images in a file). */
#include <ctype.h>
#include <stdlib.h>

#include "image.h"
#include "shrink.h"

enum { PNM_MAX_NUMBER = 65535 };

typedef struct pnm_cursor {
  const uint8_t* p;
  const uint8_t* end;
} pnm_cursor;

static void skip_space_and_comments(pnm_cursor* c) {
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

/* A decimal header number of 1..PNM_MAX_NUMBER, followed by whitespace or a comment. One
   written with a sign is refused as such, its first digits in the message. */
static ttp_status read_number(pnm_cursor* c, const char* path, const char* what, int* value,
                              ttp_err* e) {
  skip_space_and_comments(c);
  if (c->p < c->end && (*c->p == '-' || *c->p == '+')) {
    const uint8_t* q = c->p + 1;
    while (q < c->end && isdigit(*q) && q - c->p <= 10) q++;
    int n = (int)(q - c->p), more = q < c->end && isdigit(*q);
    if (n == 1) return ERR(e, TTP_ERR_FORMAT, "%s: PNM header: %s is not a number", path, what);
    return ERR(e, TTP_ERR_FORMAT, "%s: PNM header: %s %.*s%s %s", path, what, n,
               (const char*)c->p, more ? "..." : "",
               *c->p == '-' ? "is not a positive number" : "has a sign (PNM numbers are digits)");
  }
  long v = 0;
  const uint8_t* start = c->p;
  while (c->p < c->end && isdigit(*c->p) && v <= PNM_MAX_NUMBER) v = v * 10 + (*c->p++ - '0');
  if (c->p == start) return ERR(e, TTP_ERR_FORMAT, "%s: PNM header: %s missing", path, what);
  if (v < 1 || v > PNM_MAX_NUMBER)
    return ERR(e, TTP_ERR_FORMAT, "%s: PNM header: %s out of range 1..%d", path, what,
               PNM_MAX_NUMBER);
  if (c->p >= c->end) return ERR(e, TTP_ERR_FORMAT, "%s: truncated PNM header", path);
  if (!(isspace(*c->p) || *c->p == '#'))
    return ERR(e, TTP_ERR_FORMAT, "%s: PNM header: %s is not a number", path, what);
  *value = (int)v;
  return TTP_OK;
}

ttp_status io_pnm_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                         io_raster* out, ttp_err* e) {
  *out = (io_raster){0};
  if (size < 2 || bytes[0] != 'P' || (bytes[1] != '5' && bytes[1] != '6'))
    return ERR(e, TTP_ERR_FORMAT, "%s: not a binary PNM file (P5 or P6)", path);
  int channels = bytes[1] == '5' ? 1 : 3;
  pnm_cursor c = {bytes + 2, bytes + size};
  if (c.p < c.end && !(isspace(*c.p) || *c.p == '#'))
    return ERR(e, TTP_ERR_FORMAT, "%s: not a binary PNM file (P5 or P6)", path);
  int width, height, maxval;
  TRY(read_number(&c, path, "width", &width, e));
  TRY(read_number(&c, path, "height", &height, e));
  TRY(read_number(&c, path, "maxval", &maxval, e));
  if (!isspace(*c.p))
    return ERR(e, TTP_ERR_FORMAT, "%s: PNM header: no whitespace byte after maxval", path);
  c.p++;
  TRY(io_check_size(path, "PNM", (uint64_t)width, (uint64_t)height, channels, l, e));
  size_t samples = (size_t)width * height * channels, depth = maxval > 255 ? 2 : 1;
  if ((size_t)(c.end - c.p) < samples * depth)
    return ERR(e, TTP_ERR_FORMAT, "%s: truncated: %zu pixel bytes expected, %zu present", path,
               samples * depth, (size_t)(c.end - c.p));
  const int factor = io_reduction(l, (uint64_t)width, (uint64_t)height);
  const size_t line = (size_t)width * channels;
  io_raster_reserve(out, l, (width + factor - 1) / factor, (height + factor - 1) / factor,
                    channels, factor > 1 ? line + io_shrink_bytes(width, height, channels, factor,
                                                                  0, 0) : 0);
  /* Row by row: into the full-size data (factor 1), or a row at a time into box sums. */
  io_shrink shrink = {0};
  uint8_t* data = malloc(factor == 1 ? samples : line);
  ttp_status s = data ? TTP_OK : ERR_NOMEM(e, factor == 1 ? samples : line);
  if (s == TTP_OK && factor > 1) s = io_shrink_open(&shrink, width, height, channels, factor, 0, 0, e);
  for (int y = 0; y < height && s == TTP_OK; y++) {
    uint8_t* row = factor == 1 ? data + (size_t)y * line : data;
    for (size_t k = 0, i = (size_t)y * line; k < line; k++, i++) {
      unsigned v = depth == 2 ? (unsigned)c.p[2 * i] << 8 | c.p[2 * i + 1] : c.p[i];
      if (v > (unsigned)maxval) {
        s = ERR(e, TTP_ERR_FORMAT, "%s: sample %zu is %u, above maxval %d", path, i, v, maxval);
        break;
      }
      row[k] = (uint8_t)((v * 255u + (unsigned)maxval / 2) / (unsigned)maxval);
    }
    if (s == TTP_OK && factor > 1) io_shrink_row(&shrink, y, 0, 1, row, width);
  }
  if (s == TTP_OK && factor == 1) {
    out->width = width, out->height = height, out->channels = channels, out->data = data;
    return TTP_OK;
  }
  free(data);
  if (s == TTP_OK) s = io_shrink_finish(&shrink, NULL, out, e);
  io_shrink_free(&shrink);
  if (s != TTP_OK) io_raster_free(out);
  return s;
}
