/* The one translation unit that compiles stb_image, from Debian's libstb-dev (never a copy of
   its source), hardened because Debian's snapshot (v2.27) predates several published fixes:
   only the PNG, JPEG and BMP decoders are compiled in (PNM goes through ttapipe's own pnm.c);
   no stdio (the file is read, with a size cap, by io/file.c); no HDR or linear paths; the
   dimensions are checked with stbi_info_from_memory against the caller's limits (8192 x 8192
   at most) before any decoding, so stb's own, wider limit is never reached; images are never
   flipped. stb keeps its failure reason per thread (C11
   _Thread_local), so decoding threads do not share it. Compiled with -w: its warnings are
   Debian's. */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#include <stb/stb_image.h>

#include <limits.h>

#include "image.h"

ttp_status io_stb_decode(const uint8_t* bytes, size_t size, const char* path, int max_w, int max_h,
                         io_raster* out, ttp_err* e) {
  *out = (io_raster){0};
  if (size > (size_t)INT_MAX) return ERR(e, TTP_ERR_FORMAT, "%s: file too large", path);
  int w, h, channels;
  if (!stbi_info_from_memory(bytes, (int)size, &w, &h, &channels))
    return ERR(e, TTP_ERR_FORMAT, "%s: unreadable image header (%s)", path, stbi_failure_reason());
  if (w < 1 || h < 1 || w > max_w || h > max_h)
    return ERR(e, TTP_ERR_FORMAT, "%s: image is %dx%d, larger than the %dx%d allowed", path, w, h,
               max_w, max_h);
  int dw, dh, dc;
  uint8_t* data = stbi_load_from_memory(bytes, (int)size, &dw, &dh, &dc, 0);
  if (!data)
    return ERR(e, TTP_ERR_FORMAT, "%s: corrupt image (%s)", path, stbi_failure_reason());
  if (dw != w || dh != h || dc < 1 || dc > 4) { /* the decoder must agree with its own header */
    stbi_image_free(data);
    return ERR(e, TTP_ERR_FORMAT, "%s: inconsistent image header", path);
  }
  *out = (io_raster){dw, dh, dc, data};
  return TTP_OK;
}

void io_raster_free(io_raster* r) {
  if (!r) return;
  stbi_image_free(r->data); /* stb's free is free(): pnm.c allocates with malloc */
  *r = (io_raster){0};
}
