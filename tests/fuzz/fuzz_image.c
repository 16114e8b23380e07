/* Fuzz target: image loading as ttp_load_image does it once a file is read (io_load_image_bytes:
   the format told by the first bytes, decoding, preprocessing), for one format, FUZZ_FORMAT
   (png, jpeg, bmp or pnm; an input of another format is skipped, so that each target spends its
   time on its own decoder).

   The last 4 bytes of an input choose the preprocessing: invert mode, grey with or without
   centring or three planes (RGB), and an output of 1..48 rows by 1..48 columns. Decoders ignore bytes after an image's end, so a seed keeps
   its image whole and still picks its options (tests/fuzz/make_corpus.c appends them).

   The PNG reader checks each chunk's CRC, which a mutated byte almost never leaves right: for an
   input of an odd number of bytes, fuzz_png decodes a copy with every chunk's CRC made right
   (the chunks walked from the signature to IEND, or to one that does not fit), so that about
   half of the inputs reach what lies behind the check and the rest fuzz the check. The size
   chooses rather than an option byte: the option bytes' unused bits are 0 in every seed (their
   mutants would seldom change sides) and their used bits would tie the choice to an option;
   the seeds' sizes are odd and even alike, and inserting or erasing a byte changes sides.

   Beyond what the sanitizers see, each input checks: a failure is one line naming the file; a
   success writes every output byte the same way twice (the output is poisoned differently
   before each run, and decoding anew must not depend on what memory held before). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "fuzz.h"
#include "io/image.h"

#ifndef FUZZ_FORMAT
#error "FUZZ_FORMAT must name the format: png, jpeg, bmp or pnm"
#endif

/* Larger images are refused from their headers, as --max-size does: the fuzzer looks for bad
   memory accesses, not for the time an 8192 x 8192 image takes. */
enum { FUZZ_MAX_SIDE = 1024, FUZZ_MAX_OUT = 48 };

static const struct {
  const char* format;
  const char* magic[2];
} formats[] = {
    {"png", {"\x89PNG\r\n\x1a\n", NULL}},
    {"jpeg", {"\xff\xd8\xff", NULL}},
    {"bmp", {"BM", NULL}},
    {"pnm", {"P5", "P6"}},
};

static int is_format(const uint8_t* data, size_t size) {
  for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
    if (strcmp(formats[f].format, FUZZ_FORMAT) != 0) continue;
    for (int m = 0; m < 2 && formats[f].magic[m]; m++) {
      size_t n = strlen(formats[f].magic[m]);
      if (size >= n && memcmp(data, formats[f].magic[m], n) == 0) return 1;
    }
    return 0;
  }
  FUZZ_ASSERT(0, "unknown FUZZ_FORMAT %s", FUZZ_FORMAT);
  return 0;
}

/* Writes the right CRC after each chunk of a PNG, up to IEND or a chunk longer than what is
   left. */
static void png_fix_crcs(uint8_t* png, size_t size) {
  for (size_t at = 8; size - at >= 12;) {
    uint32_t length = (uint32_t)png[at] << 24 | (uint32_t)png[at + 1] << 16 |
                      (uint32_t)png[at + 2] << 8 | png[at + 3];
    if (length > size - at - 12) return;
    uint32_t crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), png + at + 4, (uInt)length + 4);
    uint8_t* out = png + at + 8 + length;
    out[0] = (uint8_t)(crc >> 24), out[1] = (uint8_t)(crc >> 16), out[2] = (uint8_t)(crc >> 8);
    out[3] = (uint8_t)crc;
    if (memcmp(png + at + 4, "IEND", 4) == 0) return;
    at += 12 + (size_t)length;
  }
}

static ttp_status load(const uint8_t* data, size_t size, const ttp_image_options* o, int rows,
                       int cols, uint8_t* out, ttp_err* e) {
  *e = (ttp_err){0};
  return io_load_image_bytes(data, size, "fuzz-input", o, rows, cols, out, NULL, NULL, e);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4 || !is_format(data, size)) return 0;
  const uint8_t* tail = data + size - 4;
  ttp_image_options o;
  ttp_image_options_init(&o);
  o.invert = (ttp_invert)(tail[0] % 3);
  o.channels = tail[1] & 2 ? 3 : 1;
  o.center = o.channels == 1 ? (ttp_center)(tail[1] % 2) : TTP_CENTER_NONE;
  o.max_width = o.max_height = FUZZ_MAX_SIDE;
  int rows = 1 + tail[2] % FUZZ_MAX_OUT, cols = 1 + tail[3] % FUZZ_MAX_OUT;
  uint8_t* fixed = NULL;
  if (strcmp(FUZZ_FORMAT, "png") == 0 && size % 2) {
    fixed = malloc(size);
    FUZZ_ASSERT(fixed, "out of memory copying %zu bytes", size);
    memcpy(fixed, data, size);
    png_fix_crcs(fixed, size);
    data = fixed;
  }

  static uint8_t first[3 * FUZZ_MAX_OUT * FUZZ_MAX_OUT], second[3 * FUZZ_MAX_OUT * FUZZ_MAX_OUT];
  size_t n = (size_t)o.channels * rows * cols;
  memset(first, 0x00, n);
  memset(second, 0xff, n);
  ttp_err e;
  ttp_status s = load(data, size, &o, rows, cols, first, &e);
  if (s != TTP_OK) {
    FUZZ_ASSERT_REFUSAL(e, s);
    FUZZ_ASSERT(s == TTP_ERR_FORMAT || s == TTP_ERR_OUT_OF_MEMORY, "status %d for a bad image: %s",
                (int)s, e.message);
    FUZZ_ASSERT(s != TTP_ERR_FORMAT || strstr(e.message, "fuzz-input"),
                "the message does not name the file: %s", e.message);
  } else {
    ttp_status again = load(data, size, &o, rows, cols, second, &e);
    FUZZ_ASSERT(again == TTP_OK, "decoded once, then refused: %s", e.message);
    FUZZ_ASSERT(memcmp(first, second, n) == 0, "two decodings of the same bytes differ");
  }
  free(fixed);
  return 0;
}
