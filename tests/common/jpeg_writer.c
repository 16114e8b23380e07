/* JPEG files through Debian's libjpeg-turbo encoder (see fixtures.h): the seeds of the JPEG fuzz
   target, the cases of test_decoders and the inputs of bench/decode_jpeg.c. */
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <stdlib.h>

#include <jpeglib.h>

#include "check.h"
#include "fixtures.h"

size_t fixture_jpeg_bytes(const fixture_jpeg_spec* s, const uint8_t* pixels, uint8_t** out) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = NULL;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = (JDIMENSION)s->w, c.image_height = (JDIMENSION)s->h;
  c.input_components = s->components;
  c.in_color_space = s->components == 1 ? JCS_GRAYSCALE : s->components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&c);
  if (s->colour_space) jpeg_set_colorspace(&c, (J_COLOR_SPACE)s->colour_space);
  jpeg_set_quality(&c, s->quality, TRUE);
  if (s->h0) {
    c.comp_info[0].h_samp_factor = s->h0, c.comp_info[0].v_samp_factor = s->v0;
    for (int i = 1; i < c.num_components; i++)
      c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  }
  c.restart_interval = (unsigned)s->restart;
  c.optimize_coding = s->optimize ? TRUE : FALSE;
  c.arith_code = s->arithmetic ? TRUE : FALSE;
  if (s->progressive) jpeg_simple_progression(&c);
  if (s->nscans) c.scan_info = s->scans, c.num_scans = s->nscans;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * s->w * s->components);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  CHECK(mem && size, "libjpeg wrote nothing");
  *out = mem;
  return size;
}
