/* BMP images, ttapipe's own strict reader (Debian's stb_image v2.27, which read them before,
   returns uninitialised stack memory as pixels for a header whose pixel offset lies before its
   palette, and indexes past its palette: README.md, "Images"). From Microsoft's description of
   the format:
   - headers: OS/2 and Windows core (12 bytes), info (40), V2 and V3 (52, 56), V4 (108) and V5
     (124); the file header's pixel offset is where the rows are;
   - 1, 4 and 8 bits through a palette (RLE8 and RLE4 compression too), 16 and 32 bits through
     bit masks (the defaults, 5-5-5 and 8-8-8 with the top byte unused, or BI_BITFIELDS and
     BI_ALPHABITFIELDS masks), 24 bits as blue, green, red;
   - rows bottom-up, or top-down when the height is negative (never with RLE); each row padded
     to a multiple of 4 bytes.
   A channel of n bits becomes 8 by repeating its bits (5 bits abcde: abcdeabc), or by keeping
   its top 8. Only an alpha mask gives a fourth channel: a bit-field one, or for 32-bit BI_RGB
   the alpha mask of a V4 or V5 header when it is not 0 (BI_RGB's defaults have none: the fourth
   byte of a 32-bit pixel is unused, as Microsoft's description says); an alpha channel that is
   0 everywhere means the writer did not use it, and the image is opaque. Pixels an RLE stream
   skips take palette entry 0. Refused, with the reason: a palette index beyond the palette,
   pixel data or a header cut short, masks that are not one run of bits, an RLE stream that goes
   past the image (pixels, an end of line after the last row's, a move), and what the format
   does not define. */
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "shrink.h"

enum { BI_RGB = 0, BI_RLE8 = 1, BI_RLE4 = 2, BI_BITFIELDS = 3, BI_ALPHABITFIELDS = 6 };

static uint32_t le16(const uint8_t* p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }

typedef struct bmp_channel {
  uint32_t mask;
  int shift, bits; /* the mask's lowest bit and its width */
} bmp_channel;

/* Returns 0 if the mask is not one run of set bits (an empty mask is a channel of zeros). */
static int channel_of(uint32_t mask, bmp_channel* c) {
  *c = (bmp_channel){mask, 0, 0};
  if (!mask) return 1;
  while (!(mask >> c->shift & 1)) c->shift++;
  uint32_t run = mask >> c->shift;
  while (c->bits < 32 && (run >> c->bits & 1)) c->bits++;
  return c->bits == 32 || (run >> c->bits) == 0;
}

static uint8_t channel_value(const bmp_channel* c, uint32_t pixel) {
  if (!c->mask) return 0;
  uint32_t v = (pixel & c->mask) >> c->shift;
  if (c->bits >= 8) return (uint8_t)(v >> (c->bits - 8));
  uint32_t out = 0; /* repeat the c->bits bits from the top down */
  for (int filled = 0; filled < 8; filled += c->bits)
    out |= 8 - filled >= c->bits ? v << (8 - filled - c->bits) : v >> (c->bits - (8 - filled));
  return (uint8_t)out;
}

typedef struct bmp_image {
  const char* path;
  const uint8_t* bytes;
  size_t size, offset;     /* the file, and where its pixel data begins */
  int width, height, bits; /* height > 0; top_down says the order of the rows */
  int top_down, compression, channels;
  const uint8_t* palette;  /* colours entries of entry_size bytes: blue, green, red[, 0] */
  int colours, entry_size;
  bmp_channel mask[4];     /* red, green, blue, alpha */
} bmp_image;

/* A palette colour into out (3 bytes), or the error of an index beyond the palette. */
static ttp_status palette_pixel(const bmp_image* b, unsigned index, uint8_t* out, ttp_err* e) {
  if (index >= (unsigned)b->colours)
    return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (BMP pixel index %u beyond the %d-colour palette)",
               b->path, index, b->colours);
  const uint8_t* p = b->palette + (size_t)index * b->entry_size;
  out[0] = p[2], out[1] = p[1], out[2] = p[0];
  return TTP_OK;
}

/* Row r of the file (bottom-up unless top_down) into px: width pixels of b->channels bytes.
   *alpha_seen: set when a pixel's alpha is not 0. */
static ttp_status decode_row(const bmp_image* b, int r, uint8_t* px, int* alpha_seen, ttp_err* e) {
  const size_t row_bytes = ((size_t)b->width * b->bits + 31) / 32 * 4;
  const uint8_t* row = b->bytes + b->offset + (size_t)r * row_bytes;
  for (int x = 0; x < b->width; x++, px += b->channels) {
    if (b->bits <= 8) {
      size_t bit = (size_t)x * b->bits;
      unsigned index = row[bit / 8] >> (8 - b->bits - bit % 8) & ((1u << b->bits) - 1);
      TRY(palette_pixel(b, index, px, e));
    } else if (b->bits == 24) {
      px[0] = row[3 * x + 2], px[1] = row[3 * x + 1], px[2] = row[3 * x];
    } else {
      uint32_t v = b->bits == 16 ? le16(row + 2 * x) : le32(row + 4 * x);
      for (int c = 0; c < b->channels; c++) px[c] = channel_value(&b->mask[c], v);
      if (b->channels == 4) *alpha_seen |= px[3];
    }
  }
  return TTP_OK;
}

/* Every row, into out's full-size data (factor 1) or averaged into boxes (shrink.h). */
static ttp_status read_rows(const bmp_image* b, int factor, io_raster* out, ttp_err* e) {
  size_t row_bytes = ((size_t)b->width * b->bits + 31) / 32 * 4;
  if (b->size - b->offset < row_bytes * b->height)
    return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (truncated BMP: %zu bytes of pixels expected, %zu present)",
               b->path, row_bytes * b->height, b->size - b->offset);
  int alpha_seen = 0;
  const size_t line = (size_t)b->width * b->channels;
  if (factor == 1) {
    if (!(out->data = malloc(line * b->height))) return ERR_NOMEM(e, line * b->height);
    for (int r = 0; r < b->height; r++) {
      int y = b->top_down ? r : b->height - 1 - r;
      TRY(decode_row(b, r, out->data + (size_t)y * line, &alpha_seen, e));
    }
    if (b->channels == 4 && !alpha_seen) /* an unused alpha channel: opaque */
      for (size_t i = 3; i < line * b->height; i += 4) out->data[i] = 255;
    out->width = b->width, out->height = b->height, out->channels = b->channels;
    return TTP_OK;
  }
  io_shrink shrink;
  uint8_t* px = malloc(line);
  if (!px) return ERR_NOMEM(e, line);
  ttp_status s = io_shrink_open(&shrink, b->width, b->height, b->channels, factor, 1, 0, e);
  for (int r = 0; r < b->height && s == TTP_OK; r++)
    if ((s = decode_row(b, r, px, &alpha_seen, e)) == TTP_OK)
      io_shrink_row(&shrink, b->top_down ? r : b->height - 1 - r, 0, 1, px, b->width);
  free(px);
  if (s == TTP_OK) return io_shrink_finish(&shrink, NULL, out, e);
  io_shrink_free(&shrink);
  return s;
}

/* Where read_rle puts its pixels: out's full-size data, or box sums (shrink.h). */
typedef struct rle_out {
  const bmp_image* b;
  uint8_t* data;     /* factor 1 */
  io_shrink* shrink; /* else */
} rle_out;

/* n palette indices (index(k)), from column x of row y (rows from the bottom). */
static ttp_status rle_put(rle_out* o, int x, int y, const uint8_t* indices, unsigned n, ttp_err* e) {
  const bmp_image* b = o->b;
  if (x + (long)n > b->width || y >= b->height)
    return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (BMP RLE pixels beyond the image)", b->path);
  uint8_t px[255 * 3];
  uint8_t* at = o->data ? o->data + ((size_t)(b->height - 1 - y) * b->width + x) * 3 : px;
  for (unsigned k = 0; k < n; k++) TRY(palette_pixel(b, indices[k], at + 3 * k, e));
  if (!o->data) io_shrink_row(o->shrink, b->height - 1 - y, x, 1, px, (int)n);
  return TTP_OK;
}

/* RLE8 and RLE4 (bottom-up): runs of one index (RLE4: two alternating), literal stretches
   padded to 16 bits, end of line, end of bitmap, and moves right and up. */
static ttp_status read_rle(const bmp_image* b, rle_out* o, ttp_err* e) {
  uint8_t background[3];
  TRY(palette_pixel(b, 0, background, e));
  if (o->data)
    for (size_t i = 0; i < (size_t)b->width * b->height; i++) memcpy(o->data + 3 * i, background, 3);
  const uint8_t* p = b->bytes + b->offset;
  const uint8_t* end = b->bytes + b->size;
  uint8_t indices[255];
  int x = 0, y = 0, rle4 = b->compression == BI_RLE4; /* y: rows from the bottom */
#define RLE_NEED(n)                                                                            \
  if (end - p < (n))                                                                           \
  return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (truncated BMP: RLE data ends before its end marker)", \
             b->path)
  for (;;) {
    RLE_NEED(2);
    unsigned count = p[0], value = p[1];
    p += 2;
    if (count > 0) { /* a run */
      for (unsigned k = 0; k < count; k++)
        indices[k] = (uint8_t)(rle4 ? (k % 2 ? value & 15 : value >> 4) : value);
      TRY(rle_put(o, x, y, indices, count, e));
      x += (int)count;
    } else if (value == 0) { /* end of line; the last row's may end the stream, no more */
      if (y >= b->height)
        return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (BMP RLE end of line beyond the image's "
                   "%d rows)", b->path, b->height);
      x = 0, y++;
    } else if (value == 1) { /* end of bitmap */
      return TTP_OK;
    } else if (value == 2) { /* move right and up, at most to the end of a row, or of the rows */
      RLE_NEED(2);
      x += p[0], y += p[1];
      p += 2;
      if (x > b->width || y > b->height)
        return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (BMP RLE move to column %d, row %d, "
                   "beyond the %d x %d image)", b->path, x, y, b->width, b->height);
    } else { /* value literal indices, padded to a whole number of 16-bit words */
      size_t bytes = rle4 ? (value + 1) / 2 : value;
      RLE_NEED((ptrdiff_t)(bytes + bytes % 2));
      for (unsigned k = 0; k < value; k++)
        indices[k] = (uint8_t)(rle4 ? (k % 2 ? p[k / 2] & 15 : p[k / 2] >> 4) : p[k]);
      TRY(rle_put(o, x, y, indices, value, e));
      x += (int)value;
      p += bytes + bytes % 2;
    }
  }
#undef RLE_NEED
}

/* RLE pixels into out's full-size data (factor 1) or box sums, where the pixels the stream
   skips take palette entry 0. */
static ttp_status read_rle_image(const bmp_image* b, int factor, io_raster* out, ttp_err* e) {
  const size_t n = (size_t)b->width * b->height * 3;
  if (factor == 1) {
    if (!(out->data = malloc(n))) return ERR_NOMEM(e, n);
    rle_out o = {b, out->data, NULL};
    TRY(read_rle(b, &o, e));
    out->width = b->width, out->height = b->height, out->channels = 3;
    return TTP_OK;
  }
  io_shrink shrink;
  TRY(io_shrink_open(&shrink, b->width, b->height, 3, factor, 0, 1, e));
  rle_out o = {b, NULL, &shrink};
  uint8_t background[3];
  ttp_status s = read_rle(b, &o, e);
  if (s == TTP_OK) s = palette_pixel(b, 0, background, e);
  if (s == TTP_OK) return io_shrink_finish(&shrink, background, out, e);
  io_shrink_free(&shrink);
  return s;
}

ttp_status io_bmp_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                         io_raster* out, ttp_err* e) {
  *out = (io_raster){0};
  bmp_image b = {.path = path, .bytes = bytes, .size = size};
  if (size < 18 || bytes[0] != 'B' || bytes[1] != 'M')
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (truncated BMP)", path);
  uint32_t header = le32(bytes + 14);
  b.offset = le32(bytes + 10);
  if (header != 12 && header != 40 && header != 52 && header != 56 && header != 108 &&
      header != 124)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (BMP header of %u bytes)", path, header);
  if (size < 14 + (size_t)header)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (truncated BMP)", path);
  const uint8_t* h = bytes + 14;
  int32_t height;
  unsigned planes;
  if (header == 12) {
    b.width = (int)le16(h + 4), height = (int32_t)le16(h + 6);
    planes = le16(h + 8), b.bits = (int)le16(h + 10), b.compression = BI_RGB;
  } else {
    b.width = (int32_t)le32(h + 4), height = (int32_t)le32(h + 8);
    planes = le16(h + 12), b.bits = (int)le16(h + 14), b.compression = (int)le32(h + 16);
  }
  b.top_down = height < 0;
  if (planes != 1 || b.width <= 0 || height == 0 || height == INT32_MIN)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (BMP of %d planes, %d x %d)", path,
               (int)planes, b.width, (int)height);
  b.height = b.top_down ? -height : height;
  TRY(io_check_size(path, "BMP", (uint64_t)b.width, (uint64_t)b.height, 4, l, e));
  int c = b.compression, bits = b.bits;
  int valid = (c == BI_RGB && (bits == 1 || bits == 4 || bits == 8 || bits == 16 || bits == 24 ||
                               bits == 32)) ||
              (c == BI_RLE8 && bits == 8) || (c == BI_RLE4 && bits == 4) ||
              ((c == BI_BITFIELDS || c == BI_ALPHABITFIELDS) && (bits == 16 || bits == 32));
  if (!valid)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (BMP of %d bits per pixel, compression %d)", path,
               bits, c);
  if (b.top_down && (c == BI_RLE8 || c == BI_RLE4))
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (BMP with RLE rows stored top-down)", path);

  /* Masks: after a 40-byte header (3, or 4 with alpha), or inside a longer one. */
  size_t after = 14 + (size_t)header;
  uint32_t masks[4] = {0, 0, 0, 0};
  if (bits == 16 && c == BI_RGB) {
    masks[0] = 0x7c00, masks[1] = 0x03e0, masks[2] = 0x001f;
  } else if (bits == 32 && c == BI_RGB) { /* the fourth byte is unused, unless V4/V5 say alpha */
    masks[0] = 0xff0000, masks[1] = 0xff00, masks[2] = 0xff;
    if (header >= 108) masks[3] = le32(h + 52);
  } else if (c == BI_BITFIELDS || c == BI_ALPHABITFIELDS) {
    /* A V2 header holds the red, green and blue masks, V3 and later alpha too; after a 40-byte
       header come three masks, or four with BI_ALPHABITFIELDS. */
    int in_header = header >= 56 ? 4 : header == 52 ? 3 : 0;
    int n = in_header ? in_header : c == BI_ALPHABITFIELDS ? 4 : 3;
    if (!in_header) after += 4 * (size_t)n;
    if (size < after) return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (truncated BMP)", path);
    for (int k = 0; k < n; k++) masks[k] = le32(h + 40 + 4 * k);
  }
  for (int k = 0; k < 4; k++)
    if (!channel_of(masks[k], &b.mask[k]))
      return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (BMP bit mask 0x%08x is not one run of bits)",
                 path, masks[k]);
  if (bits >= 16 && bits != 24 && !(masks[0] && masks[1] && masks[2]))
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (BMP with an empty colour bit mask)", path);
  b.channels = bits >= 16 && bits != 24 && masks[3] ? 4 : 3;

  /* The palette lies between the headers and the pixels: as many colours as the header says,
     or 2^bits, as far as that room goes. */
  if (bits <= 8) {
    b.entry_size = header == 12 ? 3 : 4;
    uint32_t used = header == 12 ? 0 : le32(h + 32);
    b.colours = used && used < (1u << bits) ? (int)used : 1 << bits;
    size_t room = b.offset > after && b.offset <= size ? (b.offset - after) / b.entry_size : 0;
    if ((size_t)b.colours > room) b.colours = (int)room;
    if (b.colours == 0)
      return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (BMP without a palette before its pixels)", path);
    b.palette = bytes + after;
    after += (size_t)b.colours * b.entry_size;
  }
  if (b.offset < after || b.offset > size)
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (BMP pixel offset %zu outside %zu..%zu)", path,
               b.offset, after, size);

  const int rle = c == BI_RLE8 || c == BI_RLE4, factor = io_reduction(l, b.width, b.height);
  io_raster_reserve(out, l, (b.width + factor - 1) / factor, (b.height + factor - 1) / factor,
                    b.channels, factor > 1 ? io_shrink_bytes(b.width, b.height, b.channels,
                                                             factor, 1, rle) : 0);
  ttp_status s = rle ? read_rle_image(&b, factor, out, e) : read_rows(&b, factor, out, e);
  if (s != TTP_OK) io_raster_free(out);
  return s;
}
