/* Debian's stb_image_write (libstb-dev), compiled once for the tests' fixtures: PNG, BMP and
   JPEG files to decode. Compiled with -w: its warnings are Debian's. */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
