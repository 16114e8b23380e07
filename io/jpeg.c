/* JPEG files through Debian's libjpeg-turbo (libjpeg-dev), the decoder that browsers and image
   libraries ship and that OSS-Fuzz fuzzes continuously. Debian's stb_image (v2.27), which
   decoded JPEG before, wrote past its Huffman tables on a crafted 300-byte file and read
   uninitialised tables on others (README.md, "Images"). Baseline, progressive and
   arithmetic-coded files, any sampling factors; grey, YCbCr, RGB, CMYK and YCCK.

   Strict, and bounded:
   - a warning of libjpeg (corrupt or truncated data, bytes where a marker belongs) is an error,
     so that a damaged file is an error row rather than a silently wrong answer;
   - the size in the header is checked against the caller's limits before anything is decoded;
   - a file may have JPEG_MAX_SCANS scans at most, counted from its markers before anything is
     decoded: each scan of a progressive file costs a pass over the whole image, and a file of
     a few hundred kilobytes could otherwise ask for hundreds of passes over 8192 x 8192
     pixels (libjpeg's progress monitor still stops one that gets past the count);
   - an image much larger than the model's input is decoded at a reduced DCT scale (n/8 of its
     size, the smallest n that keeps it at least as large as io_limits asks): libjpeg then
     computes an 8 x 8 block's n x n pixels directly, and the full-size image is never made.
   libjpeg reports errors by calling error_exit, which must not return: it jumps back here
   (longjmp), and the decoder is destroyed; nothing is printed. */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <stdlib.h>

#include <jpeglib.h>

#include "image.h"

/* Real encoders write 1 scan (baseline) or about 10 (libjpeg's progression; mozjpeg's), a few
   more for odd scripts. */
enum { JPEG_MAX_SCANS = 100 };

typedef struct jpeg_guard {
  struct jpeg_error_mgr mgr; /* first: libjpeg hands back a pointer to it */
  jmp_buf escape;
  char message[JMSG_LENGTH_MAX];
} jpeg_guard;

static void escape(j_common_ptr c) {
  jpeg_guard* g = (jpeg_guard*)c->err;
  (*c->err->format_message)(c, g->message);
  longjmp(g->escape, 1);
}

/* Warnings (level -1) end the decoding like errors; trace messages (0 and up) are dropped. */
static void on_message(j_common_ptr c, int level) {
  if (level < 0) escape(c);
}

static void on_progress(j_common_ptr c) {
  j_decompress_ptr d = (j_decompress_ptr)c;
  if (d->progressive_mode && d->input_scan_number > JPEG_MAX_SCANS) {
    jpeg_guard* g = (jpeg_guard*)c->err;
    snprintf(g->message, sizeof g->message, "more than %d scans", JPEG_MAX_SCANS);
    longjmp(g->escape, 1);
  }
}

/* x * y / 255, rounded: how a CMYK pixel, stored inverted as Adobe's files do, becomes RGB. */
static uint8_t ink(unsigned x, unsigned y) {
  unsigned t = x * y + 128;
  return (uint8_t)((t + (t >> 8)) >> 8);
}

/* The scans of a JPEG file, counted from its markers (start of scan, 0xffda) without decoding
   them: each marker segment skipped by its length, each scan's entropy-coded data up to the
   next marker (0xff not followed by 0 or a restart marker). Counting stops at the end of the
   image, at bytes that are not a marker, or past `most`. */
static int count_scans(const uint8_t* b, size_t n, int most) {
  size_t at = 2; /* after SOI */
  int scans = 0;
  while (at + 4 <= n && scans <= most) {
    if (b[at] != 0xff) return scans;
    const uint8_t marker = b[at + 1];
    if (marker == 0xff) { /* fill bytes */
      at++;
      continue;
    }
    if (marker == 0xd9) return scans; /* EOI */
    at += 2 + ((size_t)b[at + 2] << 8 | b[at + 3]);
    if (marker != 0xda) continue;
    scans++;
    while (at + 1 < n && !(b[at] == 0xff && b[at + 1] != 0 && (b[at + 1] < 0xd0 || b[at + 1] > 0xd7)))
      at++;
  }
  return scans;
}

ttp_status io_jpeg_decode(const uint8_t* bytes, size_t size, const char* path, const io_limits* l,
                          io_raster* out, ttp_err* e) {
  *out = (io_raster){0};
  struct jpeg_decompress_struct d = {0};
  struct jpeg_progress_mgr progress = {.progress_monitor = on_progress};
  jpeg_guard g;
  d.err = jpeg_std_error(&g.mgr);
  g.mgr.error_exit = escape;
  g.mgr.emit_message = on_message;
  uint8_t* volatile data = NULL; /* volatile: still right after a longjmp */
  volatile int header_read = 0;
  if (setjmp(g.escape)) {
    jpeg_destroy_decompress(&d);
    free(data);
    out->data = NULL;
    io_raster_free(out);
    return ERR(e, TTP_ERR_FORMAT, "%s: %s (JPEG: %s)", path,
               header_read ? "corrupt image" : "unreadable image header", g.message);
  }
  jpeg_create_decompress(&d);
  d.progress = &progress;
  jpeg_mem_src(&d, bytes, (unsigned long)size);
  jpeg_read_header(&d, TRUE);
  header_read = 1;
  ttp_status size_ok = io_check_size(path, "JPEG", d.image_width, d.image_height,
                                     d.num_components, l, e);
  const int scans = size_ok == TTP_OK ? count_scans(bytes, size, JPEG_MAX_SCANS) : 0;
  if (size_ok == TTP_OK && scans > JPEG_MAX_SCANS)
    size_ok = ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (JPEG of more than %d scans)", path,
                  JPEG_MAX_SCANS);
  if (size_ok != TTP_OK) {
    jpeg_destroy_decompress(&d);
    return size_ok;
  }
  int cmyk = d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK;
  d.out_color_space = d.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;
  /* The smallest DCT scale n/8 that keeps the image at least l's reduced size. */
  unsigned n8 = 8;
  while (l->min_w > 0 && l->min_h > 0 && n8 > 1 &&
         ((uint64_t)d.image_width * (n8 - 1) + 7) / 8 >= (uint64_t)l->min_w &&
         ((uint64_t)d.image_height * (n8 - 1) + 7) / 8 >= (uint64_t)l->min_h)
    n8--;
  d.scale_num = n8, d.scale_denom = 8;
  jpeg_calc_output_dimensions(&d);
  /* What libjpeg holds besides the raster: a file of several scans keeps every block's
     coefficients (2 bytes each) until the last scan. */
  uint64_t coefficients = 0;
  for (int c = 0; scans > 1 && c < d.num_components; c++)
    coefficients += (uint64_t)d.comp_info[c].width_in_blocks * d.comp_info[c].height_in_blocks *
                    DCTSIZE2 * sizeof(JCOEF);
  io_raster_reserve(out, l, d.output_width, d.output_height, d.output_components, coefficients);
  jpeg_start_decompress(&d);
  int w = (int)d.output_width, h = (int)d.output_height, channels = d.output_components;
  size_t n = (size_t)w * h, row_bytes = (size_t)w * channels;
  if (!(data = malloc(n * channels))) {
    jpeg_destroy_decompress(&d);
    io_raster_free(out);
    return ERR_NOMEM(e, n * channels);
  }
  while (d.output_scanline < d.output_height) {
    JSAMPROW row = data + d.output_scanline * row_bytes;
    jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  uint8_t* px = data;
  if (cmyk) { /* to RGB, in place: pixel i's 3 bytes never overtake pixel i's 4 */
    for (size_t i = 0; i < n; i++) {
      const uint8_t* p = px + 4 * i;
      uint8_t r = ink(p[0], p[3]), gr = ink(p[1], p[3]), b = ink(p[2], p[3]);
      px[3 * i] = r, px[3 * i + 1] = gr, px[3 * i + 2] = b;
    }
    channels = 3;
  }
  out->width = w, out->height = h, out->channels = channels, out->data = px;
  return TTP_OK;
}
