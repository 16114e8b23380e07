/* Debian's stb_image v2.27 (libstb-dev) with its JPEG decoder alone, for bench/decode_jpeg.c:
   the decoder ttapipe used before io/jpeg.c. Static (STB_IMAGE_STATIC), so that it cannot meet
   the library's own stb (PNG and BMP); compiled without sanitizers or warnings: it is Debian's
   code, and here only timed, never trusted with a hostile file. */
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#include <stb/stb_image.h>

#include <stdint.h>

uint8_t* bench_stb_jpeg(const uint8_t* bytes, int size, int* w, int* h, int* channels);

uint8_t* bench_stb_jpeg(const uint8_t* bytes, int size, int* w, int* h, int* channels) {
  return stbi_load_from_memory(bytes, size, w, h, channels, 0);
}
