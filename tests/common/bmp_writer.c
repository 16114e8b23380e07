/* BMP files of every kind, written from Microsoft's description of the format (see
   fixtures.h): the seeds of the BMP fuzz target and the cases of test_decoders. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixtures.h"

void fixture_bmp_palette(int i, uint8_t rgb[3]) {
  rgb[0] = (uint8_t)(255 - i * 17 % 256), rgb[1] = (uint8_t)(i * 29 % 256), rgb[2] = (uint8_t)(i * 53 % 256);
}

/* An RGBA value into a 16 or 32-bit pixel: each channel's top bits into its mask. */
static uint32_t pack(const uint8_t rgba[4], const uint32_t masks[4]) {
  uint32_t v = 0;
  for (int c = 0; c < 4; c++) {
    uint32_t m = masks[c];
    if (!m) continue;
    int shift = 0, bits = 0;
    while (!(m >> shift & 1)) shift++;
    while (shift + bits < 32 && (m >> (shift + bits) & 1)) bits++;
    uint32_t value = bits >= 8 ? (uint32_t)rgba[c] << (bits - 8) : (uint32_t)rgba[c] >> (8 - bits);
    v |= value << shift;
  }
  return v;
}

/* The RLE stream of one row of palette indices: runs of two, literal stretches of three, single
   runs at the end (so that every command is used), then the end of the line or bitmap. */
static void rle_row(test_bytes* b, const uint8_t* idx, int w, int rle4, int last) {
  for (int x = 0; x < w;) {
    if (x % 7 < 2 && x + 2 <= w && idx[x] == idx[x + 1]) {
      test_put8(b, 2), test_put8(b, rle4 ? (unsigned)(idx[x] << 4 | idx[x]) : idx[x]);
      x += 2;
    } else if (x + 3 <= w) {
      test_put8(b, 0), test_put8(b, 3);
      if (rle4) { /* 3 nibbles in 2 bytes: already a whole 16-bit word */
        test_put8(b, (unsigned)(idx[x] << 4 | idx[x + 1])), test_put8(b, (unsigned)(idx[x + 2] << 4));
      } else { /* 3 bytes, padded to 4 */
        test_put8(b, idx[x]), test_put8(b, idx[x + 1]), test_put8(b, idx[x + 2]), test_put8(b, 0);
      }
      x += 3;
    } else {
      test_put8(b, 1), test_put8(b, rle4 ? (unsigned)idx[x] << 4 : idx[x]);
      x += 1;
    }
  }
  test_put8(b, 0), test_put8(b, last ? 1 : 0);
}

size_t fixture_bmp_bytes(const fixture_bmp_spec* s, const uint8_t* pixels, uint8_t** out) {
  int palette = s->bits <= 8 ? s->colours ? s->colours : 1 << s->bits : 0;
  int rle = s->compression == 1 || s->compression == 2;
  test_bytes px = {0};
  for (int r = 0; r < s->h; r++) {
    int y = s->top_down ? r : s->h - 1 - r; /* rows as stored */
    const uint8_t* row = pixels + (size_t)y * s->w * (s->bits <= 8 ? 1 : 4);
    if (rle) {
      rle_row(&px, row, s->w, s->compression == 2, r == s->h - 1);
      continue;
    }
    size_t start = px.n;
    uint32_t acc = 0;
    int nbits = 0;
    for (int x = 0; x < s->w; x++) {
      if (s->bits <= 8) {
        acc = acc << s->bits | row[x];
        if ((nbits += s->bits) == 8) test_put8(&px, acc), acc = 0, nbits = 0;
      } else if (s->bits == 24) {
        test_put8(&px, row[4 * x + 2]), test_put8(&px, row[4 * x + 1]), test_put8(&px, row[4 * x]);
      } else if (s->bits == 16) {
        test_put16le(&px, pack(row + 4 * x, s->masks));
      } else {
        test_put32le(&px, pack(row + 4 * x, s->masks));
      }
    }
    if (nbits) test_put8(&px, acc << (8 - nbits));
    while ((px.n - start) % 4) test_put8(&px, 0);
  }
  int extra_masks = s->header == 40 && s->compression == 3 ? 3 : s->header == 40 && s->compression == 6 ? 4 : 0;
  uint32_t offset = 14 + (uint32_t)s->header + 4 * (uint32_t)extra_masks +
                    (uint32_t)palette * (s->header == 12 ? 3 : 4);
  test_bytes b = {0};
  test_put(&b, "BM", 2);
  test_put32le(&b, offset + (uint32_t)px.n), test_put32le(&b, 0), test_put32le(&b, offset);
  test_put32le(&b, (uint32_t)s->header);
  if (s->header == 12) {
    test_put16le(&b, (unsigned)s->w), test_put16le(&b, (unsigned)s->h), test_put16le(&b, 1), test_put16le(&b, (unsigned)s->bits);
  } else {
    test_put32le(&b, (uint32_t)s->w), test_put32le(&b, (uint32_t)(s->top_down ? -s->h : s->h));
    test_put16le(&b, 1), test_put16le(&b, (unsigned)s->bits), test_put32le(&b, (uint32_t)s->compression);
    test_put32le(&b, (uint32_t)px.n), test_put32le(&b, 2835), test_put32le(&b, 2835);
    test_put32le(&b, (uint32_t)s->colours), test_put32le(&b, 0);
    if (s->header >= 52) /* masks inside the header: R, G, B (52), A (56 and longer) */
      for (int c = 0; c < (s->header >= 56 ? 4 : 3); c++) test_put32le(&b, s->masks[c]);
    if (s->header >= 108) {
      test_put32le(&b, 0x73524742); /* 'sRGB' */
      for (int i = 0; i < 12; i++) test_put32le(&b, 0); /* end points and gamma, unused */
      if (s->header == 124) test_put32le(&b, 4), test_put32le(&b, 0), test_put32le(&b, 0), test_put32le(&b, 0);
    }
    for (int c = 0; c < extra_masks; c++) test_put32le(&b, s->masks[c]);
  }
  for (int i = 0; i < palette; i++) {
    uint8_t rgb[3];
    fixture_bmp_palette(i, rgb);
    test_put8(&b, rgb[2]), test_put8(&b, rgb[1]), test_put8(&b, rgb[0]);
    if (s->header != 12) test_put8(&b, 0);
  }
  test_put(&b, px.p, px.n);
  free(px.p);
  *out = b.p;
  return b.n;
}
