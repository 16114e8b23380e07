/* Fuzz target: the file-list reader (ttp_read_file_list: `classify --files-from`, newline or
   NUL-separated). The input's first byte chooses the form (bit 0: NUL-separated); the rest is
   the list.

   Checks against a reference split of the same bytes: the entries, in order, are exactly the
   non-empty pieces between separators (in the newline form without one '\r' at a piece's end);
   a newline-form piece holding a NUL byte makes the whole read fail with TTP_ERR_FORMAT and a
   one-line message naming the file. */
#include <string.h>

#include "fuzz.h"
#include "ttapipe.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int nul = data[0] & 1;
  const char separator = nul ? '\0' : '\n';
  const uint8_t* list_bytes = data + 1;
  const size_t n = size - 1;
  const char* path = fuzz_temp_path("list.txt");
  fuzz_write(path, list_bytes, n);
  ttp_file_list list = {0};
  char error[512] = "";
  ttp_status s = ttp_read_file_list(path, nul, &list, error, sizeof error);

  /* The reference. */
  size_t expected = 0, start = 0;
  int has_nul = 0;
  while (start < n) {
    const uint8_t* piece = list_bytes + start;
    const uint8_t* end = memchr(piece, separator, n - start);
    const size_t whole = end ? (size_t)(end - piece) : n - start; /* before the separator */
    size_t len = whole;
    if (!nul && len > 0 && piece[len - 1] == '\r') len--;
    if (!nul && memchr(piece, '\0', len)) {
      has_nul = 1;
      break;
    }
    if (len > 0) {
      if (s == TTP_OK) {
        FUZZ_ASSERT(expected < list.count, "entry %zu missing (%zu read)", expected, list.count);
        FUZZ_ASSERT(strlen(list.paths[expected]) == len &&
                        memcmp(list.paths[expected], piece, len) == 0,
                    "entry %zu differs", expected);
      }
      expected++;
    }
    start += whole + (end != NULL);
  }
  if (has_nul) {
    FUZZ_ASSERT(s == TTP_ERR_FORMAT, "a line with a NUL byte read with status %d", (int)s);
    FUZZ_ASSERT(error[0] && !strchr(error, '\n') && strstr(error, path),
                "not one line naming the file: %s", error);
  } else {
    FUZZ_ASSERT(s == TTP_OK, "status %d: %s", (int)s, error);
    FUZZ_ASSERT(list.count == expected, "%zu entries, the reference has %zu", list.count, expected);
  }
  ttp_file_list_free(&list);
  return 0;
}
