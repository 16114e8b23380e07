/* The reports' PNG writer: Debian's stb_image_write (libstb-dev, header-only), compiled here
   alone so that its warnings stay out of the command's own files. */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#include <stb/stb_image_write.h>

#include "report.h"

int report_png(void (*sink)(void* context, void* data, int size), void* context, int w, int h,
               int channels, const uint8_t* pixels) {
  return stbi_write_png_to_func(sink, context, w, h, channels, pixels, w * channels);
}
