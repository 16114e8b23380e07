/* Debian's stb_image_write (libstb-dev), compiled once for ttp_export. Compiled with -w: its
   warnings are Debian's. */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
