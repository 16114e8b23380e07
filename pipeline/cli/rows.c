/* Rows of the command's outputs: see rows.h. */
#include "rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

size_t cli_row_end(const char* text, size_t n, size_t at, int csv) {
  int quoted = 0;
  for (size_t i = at; i < n; i++) {
    if (csv && text[i] == '"') quoted = !quoted; /* "" inside a field toggles twice */
    else if (text[i] == '\n' && !quoted) return i + 1;
  }
  return 0;
}

int cli_read_whole(const char* path, char** text, size_t* n) {
  *text = NULL, *n = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16, len = 0;
  char* buf = malloc(cap + 1);
  while (buf) {
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap) break;
    char* grown = realloc(buf, 2 * cap + 1);
    if (!grown) free(buf);
    buf = grown, cap *= 2;
  }
  const int failed = !buf || ferror(f);
  fclose(f);
  if (failed) {
    free(buf);
    errno = buf ? EIO : ENOMEM;
    return -1;
  }
  buf[len] = '\0';
  *text = buf, *n = len;
  return 0;
}
