/* PNG files, ttapipe's own reader, from the PNG specification, with zlib inflating the image
   data. Debian's stb_image (v2.27), which read them before, trusted what a file declares: a
   60-byte file made it grow a buffer to 2 GiB for a chunk's declared length, small files could
   inflate without bound, a palette index past the palette read uninitialised stack memory; and
   its own inflate was half of the time of a 28 x 28 file (README.md, "Images").

   Read: the signature; IHDR first (a size within the caller's limits, a bit depth the colour
   type allows, methods the specification defines, then its CRC); then chunks, each of a length
   that fits in what is left of the file, up to IEND: PLTE (at most 256 entries), tRNS (before
   the image data, of the length its colour type gives), the IDAT chunks' zlib stream, inflated
   into exactly the bytes the header implies (the filter byte and packed samples of every row of
   every Adam7 pass) and no further (extra data is ignored, as stb_image and libpng do: nothing
   more is inflated, whatever the file holds); ancillary chunks skipped, unknown critical ones
   refused. Every chunk read (IHDR, PLTE, tRNS, every IDAT, IEND) has its CRC checked before its
   data is used; an ancillary chunk is skipped unread, its CRC too, as libpng discards them.
   Then each row unfiltered (None, Sub, Up, Average, Paeth) and its pixels placed.

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

/* Unfilters every row of every pass of raw and places its pixels in out. */
static ttp_status build_image(const png* g, uint8_t* raw, uint8_t* out, ttp_err* e) {
  size_t bpp = (size_t)g->samples * g->depth / 8, pw, ph;
  if (bpp < 1) bpp = 1;
  uint8_t* zeros = calloc(row_bytes(g, g->w) + 1, 1);
  if (!zeros) return ERR_NOMEM(e, row_bytes(g, g->w) + 1);
  ttp_status s = TTP_OK;
  for (int p = 0; p < (g->interlaced ? 7 : 1) && s == TTP_OK; p++) {
    pass_size(g, p, &pw, &ph);
    size_t n = row_bytes(g, pw);
    uint32_t x0 = g->interlaced ? (uint32_t)adam7[p][0] : 0, y0 = g->interlaced ? (uint32_t)adam7[p][1] : 0;
    uint32_t dx = g->interlaced ? (uint32_t)adam7[p][2] : 1, dy = g->interlaced ? (uint32_t)adam7[p][3] : 1;
    const uint8_t* prior = zeros;
    for (size_t j = 0; j < ph && s == TTP_OK; j++) {
      uint8_t* row = raw + 1;
      if (!unfilter(row, prior, n, bpp, raw[0]))
        s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG row filter %d)", g->path, raw[0]);
      else
        s = place_row(g, row, pw, x0, dx, out + (y0 + j * dy) * (size_t)g->w * g->channels, e);
      prior = row;
      raw += 1 + n;
    }
  }
  free(zeros);
  return s;
}

/* The chunks after IHDR: palette, transparency, image data inflated into raw (its size the
   header's), up to IEND. */
static ttp_status read_chunks(png* g, const uint8_t* bytes, size_t size, uint8_t* raw,
                              size_t expected, ttp_err* e) {
  const char* path = g->path;
  z_stream z = {0};
  if (inflateInit(&z) != Z_OK) return ERR_NOMEM(e, sizeof z);
  z.next_out = raw;
  z.avail_out = (uInt)expected;
  size_t at = 8 + 25;
  int idat_seen = 0, zlib_end = 0;
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
      idat_seen = 1;
      z.next_in = (Bytef*)data;
      z.avail_in = length;
      /* The last IDAT chunk inflates with Z_FINISH: a stream that ends in it then needs no
         sliding window (zlib allocates and fills one only for more calls to come). */
      int last = size - at < 8 || memcmp(bytes + at + 4, "IDAT", 4) != 0;
      while (z.avail_in > 0 && z.avail_out > 0 && !zlib_end) { /* once raw is full, no more */
        int r = inflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
        if (r == Z_STREAM_END) zlib_end = 1;
        else if (r == Z_BUF_ERROR) break; /* no progress possible: the next chunk's bytes */
        else if (r != Z_OK) {
          s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG image data: %s)", path,
                  z.msg ? z.msg : "zlib error");
          break;
        }
      }
      if (s != TTP_OK) break;
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
  size_t got = expected - z.avail_out;
  inflateEnd(&z);
  if (s == TTP_OK && !idat_seen)
    s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG without image data)", path);
  else if (s == TTP_OK && got < expected)
    s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG image data ends after %zu of %zu bytes)",
            path, got, expected);
  return s;
}

ttp_status io_png_decode(const uint8_t* bytes, size_t size, const char* path, int max_w,
                         int max_h, io_raster* out, ttp_err* e) {
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
  TRY(io_check_size(path, "PNG", g.w, g.h, g.colour == 3 ? 4 : g.samples, max_w, max_h, e));
  /* IHDR's CRC after what it declares: a header that asks for what is refused anyway (a size
     over the caller's limit above all) is refused for that, in the caller's terms. */
  TRY(check_crc(path, ihdr, 13, "unreadable image header", e));
  size_t expected = raw_size(&g);
  uint8_t* raw = malloc(expected);
  if (!raw) return ERR_NOMEM(e, expected);
  ttp_status s = read_chunks(&g, bytes, size, raw, expected, e);
  uint8_t* pixels = NULL;
  if (s == TTP_OK) {
    g.channels = g.colour == 3 ? (g.has_trns ? 4 : 3) : g.samples + (g.has_trns ? 1 : 0);
    size_t n = (size_t)g.w * g.h * g.channels;
    if (!(pixels = malloc(n))) s = ERR_NOMEM(e, n);
  }
  if (s == TTP_OK) s = build_image(&g, raw, pixels, e);
  free(raw);
  if (s != TTP_OK) {
    free(pixels);
    return s;
  }
  *out = (io_raster){(int)g.w, (int)g.h, g.channels, pixels};
  return TTP_OK;
}
