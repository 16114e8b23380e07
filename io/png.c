/* PNG files: ttapipe checks what Debian's stb_image (v2.27) trusts, then stb_image decodes
   (stb_png.c). From the PNG specification:
   - the signature, then chunks, each of a length that fits in what is left of the file (stb
     grows its buffer to a chunk's declared length before reading it: a 60-byte file asked for
     2 GiB), up to IEND;
   - IHDR first, 13 bytes: a size within the caller's limits, a bit depth that the colour type
     allows, compression, filter and interlace methods the specification defines;
   - a first IDAT chunk that is not empty (stb would add 0 to a null pointer);
   - the image data, every IDAT chunk in turn, inflates (zlib) without error to no more bytes
     than the header implies (the filter byte and the packed samples of every row of every
     pass): stb inflates into a buffer that grows without bound, so a 64 MiB file could
     otherwise expand to gigabytes.
   CRCs are not checked (nor by stb): a file that passes is well-formed enough to decode. */
#include <string.h>

#include <zlib.h>

#include "image.h"

enum { PNG_CHUNK_MAX = 0x7fffffff }; /* the specification's limit on a chunk's length */

static uint32_t be32(const uint8_t* p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Bytes of image data a header implies: each row of each pass is a filter byte and its
   samples; Adam7's seven passes cover the image in shrinking steps. */
static size_t png_raw_size(uint32_t w, uint32_t h, int bits_per_pixel, int interlaced) {
  static const int pass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                 {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  size_t total = 0;
  for (int p = 0; p < (interlaced ? 7 : 1); p++) {
    uint32_t x0 = interlaced ? (uint32_t)pass[p][0] : 0, y0 = interlaced ? (uint32_t)pass[p][1] : 0;
    uint32_t dx = interlaced ? (uint32_t)pass[p][2] : 1, dy = interlaced ? (uint32_t)pass[p][3] : 1;
    size_t pw = w > x0 ? (w - x0 + dx - 1) / dx : 0, ph = h > y0 ? (h - y0 + dy - 1) / dy : 0;
    if (pw && ph) total += ph * (1 + (pw * (size_t)bits_per_pixel + 7) / 8);
  }
  return total;
}

/* Samples per pixel of a colour type, and whether it allows the bit depth; 0 if not. */
static int png_channels(int colour, int depth) {
  switch (colour) {
    case 0: return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16 ? 1 : 0;
    case 3: return depth == 1 || depth == 2 || depth == 4 || depth == 8 ? 1 : 0;
    case 2: return depth == 8 || depth == 16 ? 3 : 0;
    case 4: return depth == 8 || depth == 16 ? 2 : 0;
    case 6: return depth == 8 || depth == 16 ? 4 : 0;
    default: return 0;
  }
}

ttp_status io_png_decode(const uint8_t* bytes, size_t size, const char* path, int max_w,
                         int max_h, io_raster* out, ttp_err* e) {
  *out = (io_raster){0};
  if (size < 8 + 12 + 13) return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (truncated PNG)", path);
  const uint8_t* ihdr = bytes + 8;
  if (be32(ihdr) != 13 || memcmp(ihdr + 4, "IHDR", 4) != 0)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (PNG without a 13-byte IHDR first)", path);
  uint32_t w = be32(ihdr + 8), h = be32(ihdr + 12);
  int depth = ihdr[16], colour = ihdr[17], interlaced = ihdr[20];
  int channels = png_channels(colour, depth);
  if (w == 0 || h == 0 || w > 0x7fffffff || h > 0x7fffffff)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (PNG of %ux%u pixels)", path, w, h);
  if (!channels || ihdr[18] != 0 || ihdr[19] != 0 || interlaced > 1)
    return ERR(e, TTP_ERR_FORMAT,
               "%s: unreadable image header (PNG colour type %d, bit depth %d, methods %d %d %d)",
               path, colour, depth, ihdr[18], ihdr[19], interlaced);
  TRY(io_check_size(path, "PNG", w, h, channels, max_w, max_h, e));
  size_t expected = png_raw_size(w, h, channels * depth, interlaced);

  /* Every chunk within the file; the image data inflated in passing, its output counted. */
  z_stream z = {0};
  if (inflateInit(&z) != Z_OK) return ERR_NOMEM(e, sizeof z);
  uint8_t scratch[16384];
  size_t at = 8, inflated = 0;
  int zlib_end = 0, idat_seen = 0;
  ttp_status s = TTP_OK;
  for (;;) {
    if (size - at < 12) {
      s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (truncated PNG: no IEND chunk)", path);
      break;
    }
    uint32_t length = be32(bytes + at);
    const uint8_t* type = bytes + at + 4;
    if (length > PNG_CHUNK_MAX || length > size - at - 12) {
      s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (truncated PNG: chunk %.4s of %u bytes, %zu left)", path,
              (const char*)type, length, size - at - 12);
      break;
    }
    if (memcmp(type, "IEND", 4) == 0) break;
    if (memcmp(type, "IDAT", 4) == 0 && !zlib_end) {
      if (!idat_seen && length == 0) { /* stb would offset its still-NULL buffer */
        s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG whose first IDAT chunk is empty)", path);
        break;
      }
      idat_seen = 1;
      z.next_in = (Bytef*)(bytes + at + 8);
      z.avail_in = length;
      while (z.avail_in > 0 && !zlib_end) {
        z.next_out = scratch;
        z.avail_out = sizeof scratch;
        int r = inflate(&z, Z_NO_FLUSH);
        inflated += sizeof scratch - z.avail_out;
        if (r == Z_STREAM_END) zlib_end = 1;
        else if (r == Z_BUF_ERROR) break; /* no progress possible: the next chunk's bytes */
        else if (r != Z_OK) {
          s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG image data: %s)", path,
                  z.msg ? z.msg : "zlib error");
          break;
        }
        if (inflated > expected) {
          s = ERR(e, TTP_ERR_FORMAT,
                  "%s: corrupt image (PNG image data inflates past the %zu bytes its header implies)",
                  path, expected);
          break;
        }
      }
      if (s != TTP_OK) break;
    }
    at += 12 + (size_t)length;
  }
  inflateEnd(&z);
  if (s == TTP_OK && !idat_seen) s = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG without image data)", path);
  if (s != TTP_OK) return s;
  return io_stb_png(bytes, size, path, (int)w, (int)h, out, e);
}
