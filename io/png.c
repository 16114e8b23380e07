/* PNG files, ttapipe's own reader, from the PNG specification, with zlib inflating the image
   data. Debian's stb_image (v2.27), which read them before, trusted what a file declares: a
   60-byte file made it grow a buffer to 2 GiB for a chunk's declared length, small files could
   inflate without bound, a palette index past the palette read uninitialised stack memory; and
   its own inflate was half of the time of a 28 x 28 file (README.md, "Images").

   Read: the signature; IHDR first (a size within the caller's limits, a bit depth the colour
   type allows, methods the specification defines, then its CRC); then chunks, each of a length
   that fits in what is left of the file, up to IEND: PLTE (at most 256 entries), tRNS (before
   the image data, of the length its colour type gives), IDAT; ancillary chunks skipped, unknown
   critical ones refused. Every chunk read (IHDR, PLTE, tRNS, every IDAT, IEND) has its CRC
   checked before its data is used; an ancillary chunk is skipped unread, its CRC too, as libpng
   discards them. Then the IDAT chunks' zlib stream is inflated, a window of rows at a time (a
   small image's whole data at once), into exactly the bytes the header implies (the filter
   byte and packed samples of every row of every Adam7 pass) and no further (extra data is
   ignored, as stb_image and libpng do: nothing more is inflated, whatever the file holds); each
   row unfiltered (None, Sub, Up, Average, Paeth) and its pixels placed: into the whole image, or
   for a large one averaged into boxes as they come (shrink.h), so that the image never exists
   at full size in memory.

   The pixels are stb_image's, byte for byte, for every file it read whose CRCs are right
   (stb_image does not check them): grey 1, grey + alpha 2, RGB 3, RGBA 4 channels; a palette
   expanded to RGB, or RGBA when tRNS gives it alpha; a tRNS colour of a grey or RGB image
   becomes an alpha channel (0 where a pixel equals it, 255 elsewhere: compared at 16 bits in
   16-bit files, else after the grey scaling below); samples of 16 bits keep their high byte;
   grey samples of 1, 2 and 4 bits are scaled to 0..255 by repeating their bits. Refused with
   the reason, where stb_image went on: a palette index past the palette, a chunk read whose CRC
   is not that of its type and data, Apple's CgBI variant. A chunk's type comes from the file
   and may hold any byte: messages print those outside printable ASCII as \xHH. */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "image.h"
#include "shrink.h"

enum { PNG_CHUNK_MAX = 0x7fffffff }; /* the specification's limit on a chunk's length */

static uint32_t be32(const uint8_t* p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A chunk type as message text: its 4 bytes, those outside printable ASCII (0x20..0x7e) as
   \xHH, for a type is whatever the file holds (an ESC or NUL byte too). Returns text. */
static const char* type_text(const uint8_t* type, char text[17]) {
  static const char hex[] = "0123456789abcdef";
  char* t = text;
  for (int i = 0; i < 4; i++) {
    if (type[i] >= 0x20 && type[i] <= 0x7e) {
      *t++ = (char)type[i];
    } else {
      *t++ = '\\', *t++ = 'x', *t++ = hex[type[i] >> 4], *t++ = hex[type[i] & 15];
    }
  }
  *t = 0;
  return text;
}

/* Checks the CRC that follows a chunk (chunk: its length field; length: its data's) against
   zlib's crc32 of its type and data; what names the error's kind ("corrupt image", or
   "unreadable image header" for IHDR). */
static ttp_status check_crc(const char* path, const uint8_t* chunk, uint32_t length,
                            const char* what, ttp_err* e) {
  uint32_t stored = be32(chunk + 8 + length);
  uint32_t computed = (uint32_t)crc32(crc32(0, Z_NULL, 0), chunk + 4, (uInt)length + 4);
  char type[17];
  if (stored != computed)
    return ERR(e, TTP_ERR_FORMAT, "%s: %s (PNG chunk %s: CRC 0x%08x where the data gives 0x%08x)",
               path, what, type_text(chunk + 4, type), stored, computed);
  return TTP_OK;
}

static const int adam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};

typedef struct png {
  const char* path;
  uint32_t w, h;
  int depth, colour, interlaced, samples; /* samples per pixel in the file */
  uint8_t palette[256][4];
  int palette_len, has_trns;
  uint16_t trns16[3]; /* a grey or RGB tRNS colour, as stored */
  uint8_t trns8[3];   /* the same, as stb_image compares it at 8 bits */
  int channels;       /* per output pixel */
  size_t idat_at;     /* where the first IDAT chunk begins */
} png;

/* Samples per pixel of a colour type, if it allows the bit depth; 0 if not. */
static int png_samples(int colour, int depth) {
  switch (colour) {
    case 0: return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16 ? 1 : 0;
    case 3: return depth == 1 || depth == 2 || depth == 4 || depth == 8 ? 1 : 0;
    case 2: return depth == 8 || depth == 16 ? 3 : 0;
    case 4: return depth == 8 || depth == 16 ? 2 : 0;
    case 6: return depth == 8 || depth == 16 ? 4 : 0;
    default: return 0;
  }
}

/* Pass p's size in pixels (the whole image when not interlaced); 0 x 0 for an empty pass. */
static void pass_size(const png* g, int p, size_t* pw, size_t* ph) {
  uint32_t x0 = g->interlaced ? (uint32_t)adam7[p][0] : 0, y0 = g->interlaced ? (uint32_t)adam7[p][1] : 0;
  uint32_t dx = g->interlaced ? (uint32_t)adam7[p][2] : 1, dy = g->interlaced ? (uint32_t)adam7[p][3] : 1;
  *pw = g->w > x0 ? (g->w - x0 + dx - 1) / dx : 0;
  *ph = g->h > y0 ? (g->h - y0 + dy - 1) / dy : 0;
  if (!*pw || !*ph) *pw = *ph = 0;
}

static size_t row_bytes(const png* g, size_t pw) {
  return (pw * (size_t)g->samples * (size_t)g->depth + 7) / 8;
}

/* Bytes of image data the header implies: each row of each pass, a filter byte and samples. */
static size_t raw_size(const png* g) {
  size_t total = 0, pw, ph;
  for (int p = 0; p < (g->interlaced ? 7 : 1); p++) {
    pass_size(g, p, &pw, &ph);
    total += ph * (1 + row_bytes(g, pw));
  }
  return total;
}

static int paeth(int a, int b, int c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undoes row's filter in place, given the previous row of its pass (zeros for the first). */
static int unfilter(uint8_t* row, const uint8_t* prior, size_t n, size_t bpp, int filter) {
  switch (filter) {
    case 0: return 1;
    case 1: for (size_t i = bpp; i < n; i++) row[i] = (uint8_t)(row[i] + row[i - bpp]); return 1;
    case 2: for (size_t i = 0; i < n; i++) row[i] = (uint8_t)(row[i] + prior[i]); return 1;
    case 3:
      for (size_t i = 0; i < n; i++)
        row[i] = (uint8_t)(row[i] + (((i >= bpp ? row[i - bpp] : 0) + prior[i]) >> 1));
      return 1;
    case 4:
      for (size_t i = 0; i < n; i++)
        row[i] = (uint8_t)(row[i] + paeth(i >= bpp ? row[i - bpp] : 0, prior[i],
                                          i >= bpp ? prior[i - bpp] : 0));
      return 1;
    default: return 0;
  }
}

/* Sample k of an unfiltered row: its 8-bit value (16 bits: the high byte; grey of fewer bits:
   scaled by repeating them) and, in *wide, its value as stored. */
static uint8_t sample(const png* g, const uint8_t* row, size_t k, unsigned* wide) {
  static const uint8_t scale[9] = {0, 0xff, 0x55, 0, 0x11, 0, 0, 0, 1};
  if (g->depth == 16) {
    *wide = (unsigned)row[2 * k] << 8 | row[2 * k + 1];
    return row[2 * k];
  }
  if (g->depth == 8) return (uint8_t)(*wide = row[k]);
  size_t bit = k * (size_t)g->depth;
  *wide = (unsigned)(row[bit / 8] >> (8 - g->depth - bit % 8)) & ((1u << g->depth) - 1);
  return g->colour == 3 ? (uint8_t)*wide : (uint8_t)(*wide * scale[g->depth]);
}

/* Places an unfiltered pass row's pixels. */
static ttp_status place_row(const png* g, const uint8_t* row, size_t pw, uint32_t x0, uint32_t dx,
                            uint8_t* out, ttp_err* e) {
  if (g->depth == 8 && g->colour != 3 && !g->has_trns && dx == 1) { /* the bytes as they are */
    memcpy(out + (size_t)x0 * g->channels, row, pw * (size_t)g->samples);
    return TTP_OK;
  }
  for (size_t i = 0; i < pw; i++) {
    uint8_t* px = out + (x0 + i * dx) * (size_t)g->channels;
    unsigned wide[4];
    uint8_t v[4];
    for (int s = 0; s < g->samples; s++) v[s] = sample(g, row, i * g->samples + s, &wide[s]);
    if (g->colour == 3) {
      if ((int)wide[0] >= g->palette_len)
        return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG palette index %u past the %d-colour "
                   "palette)", g->path, wide[0], g->palette_len);
      memcpy(px, g->palette[wide[0]], (size_t)g->channels);
      continue;
    }
    memcpy(px, v, (size_t)g->samples);
    if (g->has_trns) {
      int same = 1;
      for (int s = 0; s < g->samples; s++)
        same &= g->depth == 16 ? wide[s] == g->trns16[s] : v[s] == g->trns8[s];
      px[g->samples] = same ? 0 : 255;
    }
  }
  return TTP_OK;
}

/* The chunks after IHDR, each checked, up to IEND: the palette, the transparency, and where the
   image data begins (g->idat_at). */
static ttp_status read_chunks(png* g, const uint8_t* bytes, size_t size, ttp_err* e) {
  const char* path = g->path;
  size_t at = 8 + 25;
  int idat_seen = 0;
  ttp_status s = TTP_OK;
  for (;;) {
    if (size - at < 12) {
      s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (truncated PNG: no IEND chunk)", path);
      break;
    }
    const uint8_t* chunk = bytes + at;
    uint32_t length = be32(chunk);
    const uint8_t* type = chunk + 4;
    const uint8_t* data = chunk + 8;
    char text[17];
    if (length > PNG_CHUNK_MAX || length > size - at - 12) {
      s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (truncated PNG: chunk %s of %u bytes, %zu "
              "left)", path, type_text(type, text), length, size - at - 12);
      break;
    }
    at += 12 + (size_t)length;
    int used = memcmp(type, "IEND", 4) == 0 || memcmp(type, "IDAT", 4) == 0 ||
               memcmp(type, "PLTE", 4) == 0 || memcmp(type, "tRNS", 4) == 0;
    if (used && (s = check_crc(path, chunk, length, "corrupt image", e)) != TTP_OK) break;
    if (memcmp(type, "IEND", 4) == 0) break;
    if (memcmp(type, "IDAT", 4) == 0) {
      if (g->colour == 3 && !g->palette_len) {
        s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG palette image without PLTE)", path);
        break;
      }
      if (!idat_seen) g->idat_at = (size_t)(chunk - bytes);
      idat_seen = 1;
    } else if (memcmp(type, "IHDR", 4) == 0) {
      s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG with a second IHDR)", path);
      break;
    } else if (memcmp(type, "PLTE", 4) == 0) {
      if (length > 256 * 3 || length % 3) {
        s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG PLTE of %u bytes)", path, length);
        break;
      }
      g->palette_len = (int)(length / 3);
      for (int i = 0; i < g->palette_len; i++) {
        memcpy(g->palette[i], data + 3 * i, 3);
        g->palette[i][3] = 255;
      }
    } else if (memcmp(type, "tRNS", 4) == 0) {
      if (idat_seen) {
        s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG tRNS after the image data)", path);
        break;
      }
      if (g->colour == 3) {
        if (!g->palette_len || length > (uint32_t)g->palette_len) {
          s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG tRNS of %u entries for a %d-colour "
                  "palette)", path, length, g->palette_len);
          break;
        }
        for (uint32_t i = 0; i < length; i++) g->palette[i][3] = data[i];
        g->has_trns = 1;
      } else if (g->colour == 4 || g->colour == 6 || length != 2 * (uint32_t)g->samples) {
        s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG tRNS of %u bytes for colour type %d)",
                path, length, g->colour);
        break;
      } else {
        static const uint8_t scale[9] = {0, 0xff, 0x55, 0, 0x11, 0, 0, 0, 1};
        for (int k = 0; k < g->samples; k++) {
          g->trns16[k] = (uint16_t)(data[2 * k] << 8 | data[2 * k + 1]);
          g->trns8[k] = (uint8_t)((g->trns16[k] & 255) * scale[g->depth < 16 ? g->depth : 8]);
        }
        g->has_trns = 1;
      }
    } else if (memcmp(type, "CgBI", 4) == 0) {
      s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (Apple's CgBI PNG, not a standard one)", path);
      break;
    } else if (!(type[0] & 0x20)) { /* a critical chunk this reader does not know */
      s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG chunk %s unknown)", path,
              type_text(type, text));
      break;
    }
  }
  if (s == TTP_OK && !idat_seen)
    s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG without image data)", path);
  return s;
}

/* The image data's zlib stream, fed from the IDAT chunks in their order (the chunks were
   checked by read_chunks). */
typedef struct idat_stream {
  const png* g;
  const uint8_t* bytes;
  size_t size, at; /* the file; where the next chunk to look at begins */
  int last;        /* the chunk being inflated is the last IDAT */
  int ended;       /* the zlib stream ended */
  z_stream z;
  size_t got;      /* bytes inflated so far */
} idat_stream;

/* The next IDAT chunk's data into the stream; 0 when there is none before IEND. */
static int next_idat(idat_stream* st) {
  while (st->size - st->at >= 12) {
    const uint8_t* chunk = st->bytes + st->at;
    const uint32_t length = be32(chunk);
    st->at += 12 + (size_t)length;
    if (memcmp(chunk + 4, "IEND", 4) == 0) break;
    if (memcmp(chunk + 4, "IDAT", 4) != 0) continue;
    st->z.next_in = (Bytef*)(chunk + 8);
    st->z.avail_in = length;
    st->last = st->size - st->at < 8 || memcmp(st->bytes + st->at + 4, "IDAT", 4) != 0;
    return 1;
  }
  st->at = st->size;
  return 0;
}

/* Inflates the next n bytes of image data into out; the image's last bytes (last: nothing is
   read after them) inflate with Z_FINISH when they come from the last IDAT chunk, so that a
   stream ending there needs no sliding window (zlib allocates and fills one only for more
   calls to come). Data past what the header implies is never inflated. */
static ttp_status inflate_data(idat_stream* st, uint8_t* out, size_t n, int last, ttp_err* e) {
  z_stream* z = &st->z;
  z->next_out = out;
  z->avail_out = (uInt)n;
  while (z->avail_out > 0 && !st->ended) {
    if (z->avail_in == 0 && !next_idat(st)) break;
    const int r = inflate(z, last && st->last ? Z_FINISH : Z_NO_FLUSH);
    if (r == Z_STREAM_END) {
      st->ended = 1;
    } else if (r == Z_BUF_ERROR) {
      if (z->avail_in > 0) break; /* no progress possible */
    } else if (r != Z_OK) {
      return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG image data: %s)", st->g->path,
                 z->msg ? z->msg : "zlib error");
    }
  }
  st->got += n - z->avail_out;
  if (z->avail_out > 0)
    return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG image data ends after %zu of %zu "
               "bytes)", st->g->path, st->got, raw_size(st->g));
  return TTP_OK;
}

/* Rows of image data inflated at a time, at most this many bytes of them: a small image's
   whole data at once, a large one's in pieces that the cache holds. */
enum { PNG_WINDOW_BYTES = 1 << 20 };

/* Every row of every pass inflated, a window of rows at a time, unfiltered and its pixels
   placed: into out's full-size data (factor 1), or averaged into boxes of factor x factor
   pixels (shrink.h), so that a large image never exists whole. */
static ttp_status build_image(const png* g, idat_stream* st, int factor, io_raster* out,
                              ttp_err* e) {
  size_t bpp = (size_t)g->samples * g->depth / 8, pw, ph;
  if (bpp < 1) bpp = 1;
  const size_t widest = row_bytes(g, g->w), total = raw_size(g);
  size_t window_rows = PNG_WINDOW_BYTES / (1 + widest);
  if (window_rows < 1) window_rows = 1;
  if (window_rows > g->h) window_rows = g->h;
  uint8_t* window = malloc(window_rows * (1 + widest));
  uint8_t* prior = malloc(widest + 1);
  uint8_t* pixels = factor > 1 ? malloc((size_t)g->w * g->channels) : NULL; /* a row's */
  io_shrink shrink = {0};
  ttp_status s = window && prior && (factor == 1 || pixels)
                     ? TTP_OK
                     : ERR_NOMEM(e, window_rows * (1 + widest) + widest + 1);
  const size_t n_full = (size_t)g->w * g->h * g->channels;
  if (s == TTP_OK && factor == 1 && !(out->data = malloc(n_full))) s = ERR_NOMEM(e, n_full);
  if (s == TTP_OK && factor > 1)
    s = io_shrink_open(&shrink, (int)g->w, (int)g->h, g->channels, factor, 0, 0, e);
  size_t inflated = 0;
  for (int p = 0; p < (g->interlaced ? 7 : 1) && s == TTP_OK; p++) {
    pass_size(g, p, &pw, &ph);
    const size_t n = row_bytes(g, pw), stride = 1 + n;
    uint32_t x0 = g->interlaced ? (uint32_t)adam7[p][0] : 0, y0 = g->interlaced ? (uint32_t)adam7[p][1] : 0;
    uint32_t dx = g->interlaced ? (uint32_t)adam7[p][2] : 1, dy = g->interlaced ? (uint32_t)adam7[p][3] : 1;
    memset(prior, 0, n);
    for (size_t j = 0; j < ph && s == TTP_OK;) {
      const size_t k = ph - j < window_rows ? ph - j : window_rows;
      inflated += k * stride;
      s = inflate_data(st, window, k * stride, inflated == total, e);
      for (size_t r = 0; r < k && s == TTP_OK; r++, j++) {
        uint8_t* raw = window + r * stride;
        const uint8_t* above = r ? raw - stride + 1 : prior;
        const size_t y = y0 + j * dy;
        if (!unfilter(raw + 1, above, n, bpp, raw[0]))
          s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG row filter %d)", g->path, raw[0]);
        else if (factor == 1)
          s = place_row(g, raw + 1, pw, x0, dx, out->data + y * g->w * g->channels, e);
        else if ((s = place_row(g, raw + 1, pw, 0, 1, pixels, e)) == TTP_OK)
          io_shrink_row(&shrink, (int)y, (int)x0, (int)dx, pixels, (int)pw);
      }
      if (s == TTP_OK) memcpy(prior, window + (k - 1) * stride + 1, n);
    }
  }
  if (s == TTP_OK && factor > 1) s = io_shrink_finish(&shrink, NULL, out, e);
  io_shrink_free(&shrink);
  free(window), free(prior), free(pixels);
  if (s == TTP_OK && factor == 1) out->width = (int)g->w, out->height = (int)g->h, out->channels = g->channels;
  return s;
}

ttp_status io_png_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                         io_raster* out, ttp_err* e) {
  *out = (io_raster){0};
  if (size < 8 + 25) return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (truncated PNG)", path);
  const uint8_t* ihdr = bytes + 8;
  if (be32(ihdr) != 13 || memcmp(ihdr + 4, "IHDR", 4) != 0)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (PNG without a 13-byte IHDR first)",
               path);
  png g = {.path = path, .w = be32(ihdr + 8), .h = be32(ihdr + 12), .depth = ihdr[16],
           .colour = ihdr[17], .interlaced = ihdr[20]};
  g.samples = png_samples(g.colour, g.depth);
  if (g.w == 0 || g.h == 0 || g.w > 0x7fffffff || g.h > 0x7fffffff)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (PNG of %ux%u pixels)", path, g.w,
               g.h);
  if (!g.samples || ihdr[18] != 0 || ihdr[19] != 0 || g.interlaced > 1)
    return ERR(e, TTP_ERR_FORMAT,
               "%s: unreadable image header (PNG colour type %d, bit depth %d, methods %d %d %d)",
               path, g.colour, g.depth, ihdr[18], ihdr[19], g.interlaced);
  TRY(io_check_size(path, "PNG", g.w, g.h, g.colour == 3 ? 4 : g.samples, l, e));
  /* IHDR's CRC after what it declares: a header that asks for what is refused anyway (a size
     over the caller's limit above all) is refused for that, in the caller's terms. */
  TRY(check_crc(path, ihdr, 13, "unreadable image header", e));
  TRY(read_chunks(&g, bytes, size, e));
  g.channels = g.colour == 3 ? (g.has_trns ? 4 : 3) : g.samples + (g.has_trns ? 1 : 0);
  const int factor = io_reduction(l, g.w, g.h);
  const size_t widest = row_bytes(&g, g.w);
  const uint64_t window = (widest + 1) * (PNG_WINDOW_BYTES / (widest + 1) + 1);
  io_raster_reserve(out, l, (g.w + factor - 1) / factor, (g.h + factor - 1) / factor, g.channels,
                    window + (factor > 1 ? io_shrink_bytes((int)g.w, (int)g.h, g.channels,
                                                           factor, 0, 0) : 0));
  idat_stream st = {.g = &g, .bytes = bytes, .size = size, .at = g.idat_at};
  if (inflateInit(&st.z) != Z_OK) {
    io_raster_free(out);
    return ERR_NOMEM(e, sizeof st.z);
  }
  ttp_status s = build_image(&g, &st, factor, out, e);
  inflateEnd(&st.z);
  if (s != TTP_OK) io_raster_free(out);
  return s;
}
