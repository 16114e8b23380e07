/* JPEG files through Debian's libjpeg-turbo (libjpeg-dev), the decoder that browsers and image
   libraries ship and that OSS-Fuzz fuzzes continuously. Debian's stb_image (v2.27), which
   decoded JPEG before, wrote past its Huffman tables on a crafted 300-byte file and read
   uninitialised tables on others (README.md, "Images"). Baseline, progressive and
   arithmetic-coded files, any sampling factors; grey, YCbCr, RGB, CMYK and YCCK.

   Strict, and bounded:
   - a warning of libjpeg (corrupt or truncated data, bytes where a marker belongs) is an error,
     so that a damaged file is an error row rather than a silently wrong answer;
   - the size in the header is checked against the caller's limits before anything is decoded;
   - a progressive file may have 500 scans at most (as TurboJPEG's TJFLAG_LIMITSCANS): each
     scan costs a pass over the whole image, and a small file could otherwise ask for millions.
   libjpeg reports errors by calling error_exit, which must not return: it jumps back here
   (longjmp), and the decoder is destroyed; nothing is printed. */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <stdlib.h>

#include <jpeglib.h>

#include "image.h"

enum { JPEG_MAX_SCANS = 500 };

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
    snprintf(g->message, sizeof g->message, "more than %d progressive scans", JPEG_MAX_SCANS);
    longjmp(g->escape, 1);
  }
}

/* x * y / 255, rounded: how a CMYK pixel, stored inverted as Adobe's files do, becomes RGB. */
static uint8_t ink(unsigned x, unsigned y) {
  unsigned t = x * y + 128;
  return (uint8_t)((t + (t >> 8)) >> 8);
}

ttp_status io_jpeg_decode(const uint8_t* bytes, size_t size, const char* path, int max_w,
                          int max_h, io_raster* out, ttp_err* e) {
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
    return ERR(e, TTP_ERR_FORMAT, "%s: %s (JPEG: %s)", path,
               header_read ? "corrupt image" : "unreadable image header", g.message);
  }
  jpeg_create_decompress(&d);
  d.progress = &progress;
  jpeg_mem_src(&d, bytes, (unsigned long)size);
  jpeg_read_header(&d, TRUE);
  header_read = 1;
  ttp_status size_ok = io_check_size(path, "JPEG", d.image_width, d.image_height,
                                     d.num_components, max_w, max_h, e);
  if (size_ok != TTP_OK) {
    jpeg_destroy_decompress(&d);
    return size_ok;
  }
  int cmyk = d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK;
  d.out_color_space = d.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(&d);
  int w = (int)d.output_width, h = (int)d.output_height, channels = d.output_components;
  size_t n = (size_t)w * h, row_bytes = (size_t)w * channels;
  if (!(data = malloc(n * channels))) {
    jpeg_destroy_decompress(&d);
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
  *out = (io_raster){w, h, channels, px};
  return TTP_OK;
}
