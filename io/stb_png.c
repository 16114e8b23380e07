/* The one translation unit that compiles stb_image, from Debian's libstb-dev (never a copy of
   its source), for PNG alone: JPEG goes through libjpeg-turbo (jpeg.c), BMP and PNM through
   ttapipe's own readers (bmp.c, pnm.c). Debian's snapshot (v2.27) trusts what a PNG declares,
   so png.c checks a file's structure and sizes before it gets here; here: no stdio (the file
   is read, with a size cap, by io/file.c), no HDR or linear paths, images never flipped. stb
   keeps its failure reason per thread (C11 _Thread_local), so decoding threads do not share
   it. Compiled with -w: its warnings are Debian's. */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#include <stb/stb_image.h>

#include <limits.h>

#include "image.h"

ttp_status io_stb_png(const uint8_t* bytes, size_t size, const char* path, int w, int h,
                      io_raster* out, ttp_err* e) {
  *out = (io_raster){0};
  if (size > (size_t)INT_MAX) return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG file over 2 GiB)", path);
  int dw, dh, dc;
  uint8_t* data = stbi_load_from_memory(bytes, (int)size, &dw, &dh, &dc, 0);
  if (!data) return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG: %s)", path, stbi_failure_reason());
  if (dw != w || dh != h || dc < 1 || dc > 4) { /* the decoder must agree with the header */
    stbi_image_free(data);
    return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (PNG decoded to another size than its header)", path);
  }
  *out = (io_raster){dw, dh, dc, data};
  return TTP_OK;
}
