/* Fuzz target: the IDX reader (io/idx.h: MNIST images and labels, plain or gzip-compressed).
   The input's first byte chooses the call (bit 0: images of 3 or 4 dimensions, else labels of 1; bit
   1: a limit of 4 KiB of elements, else 1 MiB); the rest is the file.

   Checks: a refusal is one line naming the file, status TTP_ERR_FORMAT (TTP_ERR_IO for an
   unreadable file, TTP_ERR_OUT_OF_MEMORY for an allocation that failed); an accepted file has
   nonzero dimensions whose product is within the limit, and its every element is readable
   (the last one is summed, so that a buffer shorter than its dimensions shows under the
   sanitizers). */
#include <string.h>

#include "fuzz.h"
#include "io/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int images = data[0] & 1;
  const size_t limit = data[0] & 2 ? 4096 : 1 << 20;
  const char* path = fuzz_temp_path("input.idx");
  fuzz_write(path, data + 1, size - 1);
  uint32_t dims[IDX_MAX_DIMS] = {0, 0, 0, 0};
  uint8_t* elements = NULL;
  ttp_err e = {0};
  int ndims = -1;
  ttp_status s = idx_read(path, images ? 3 : 1, images ? 4 : 1, images ? "images" : "labels",
                          limit, dims, &ndims, &elements, &e);
  if (s != TTP_OK) {
    FUZZ_ASSERT_REFUSAL(e, s);
    FUZZ_ASSERT(s == TTP_ERR_FORMAT || s == TTP_ERR_IO || s == TTP_ERR_OUT_OF_MEMORY,
                "status %d for a bad file: %s", (int)s, e.message);
    FUZZ_ASSERT(strstr(e.message, path), "the message does not name the file: %s", e.message);
    FUZZ_ASSERT(elements == NULL, "a refusal left data behind");
    return 0;
  }
  FUZZ_ASSERT(images ? ndims == 3 || ndims == 4 : ndims == 1, "%d dimensions accepted", ndims);
  size_t total = 1;
  for (int d = 0; d < ndims; d++) {
    FUZZ_ASSERT(dims[d] > 0, "dimension %d is 0", d);
    total *= dims[d];
  }
  FUZZ_ASSERT(total <= limit, "%zu elements accepted over the limit %zu", total, limit);
  volatile unsigned sum = elements[0] + elements[total - 1];
  (void)sum;
  free(elements);
  return 0;
}
