/* Fuzz target: image loading as ttp_load_image does it once a file is read (io_load_image_bytes:
   the format told by the first bytes, decoding, preprocessing), for one format, FUZZ_FORMAT
   (png, jpeg, bmp or pnm; an input of another format is skipped, so that each target spends its
   time on its own decoder).

   The last 4 bytes of an input choose the preprocessing: invert mode, grey with or without
   centring or three planes (RGB), and an output of 1..48 rows by 1..48 columns. Decoders ignore bytes after an image's end, so a seed keeps
   its image whole and still picks its options (tests/fuzz/make_corpus.c appends them).

   Beyond what the sanitizers see, each input checks: a failure is one line naming the file; a
   success writes every output byte the same way twice (the output is poisoned differently
   before each run, and decoding anew must not depend on what memory held before). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static ttp_status load(const uint8_t* data, size_t size, const ttp_image_options* o, int rows,
                       int cols, uint8_t* out, ttp_err* e) {
  *e = (ttp_err){0};
  return io_load_image_bytes(data, size, "fuzz-input", o, rows, cols, out, NULL, e);
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
    return 0;
  }
  ttp_status again = load(data, size, &o, rows, cols, second, &e);
  FUZZ_ASSERT(again == TTP_OK, "decoded once, then refused: %s", e.message);
  FUZZ_ASSERT(memcmp(first, second, n) == 0, "two decodings of the same bytes differ");
  return 0;
}
