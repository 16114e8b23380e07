/* Rows of the command's outputs: see rows.h. */
#include "rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

int cli_deal_rows(char* const* text, const size_t* n, const char* const* name, int count,
                  FILE* out, const char* out_name) {
  size_t* at = calloc((size_t)count, sizeof *at);
  size_t* rows = calloc((size_t)count, sizeof *rows);
  if (!at || !rows) {
    free(at), free(rows);
    return cli_fail("out of memory");
  }
  /* JSON Lines rows begin with '{'; CSV has a header (also the shards of no file). */
  const int csv = !(n[0] == 0 || text[0][0] == '{');
  const size_t header = csv ? cli_row_end(text[0], n[0], 0, 1) : 0;
  int rc = csv && !header ? cli_fail("%s: no CSV header", name[0]) : CLI_EXIT_OK;
  size_t total = 0;
  for (int i = 0; i < count && rc == CLI_EXIT_OK; i++) {
    if (csv && (n[i] < header || memcmp(text[i], text[0], header) != 0)) {
      rc = cli_fail("%s: its header differs from %s's", name[i], name[0]);
      break;
    }
    at[i] = header;
    for (size_t p = header; p < n[i]; rows[i]++) {
      const size_t end = cli_row_end(text[i], n[i], p, csv);
      if (!end) {
        rc = cli_fail("%s: its last row is torn (a run that did not finish?)", name[i]);
        break;
      }
      p = end;
    }
    total += rows[i];
  }
  for (int i = 0; i < count && rc == CLI_EXIT_OK; i++) { /* shard i holds ceil((total - i) / N) */
    const size_t want = (total + (size_t)(count - 1 - i)) / (size_t)count;
    if (rows[i] != want)
      rc = cli_fail("%s: %zu rows, where shard %d of %d of %zu rows holds %zu: not the shards "
                    "of one list, in order", name[i], rows[i], i, count, total, want);
  }
  if (rc == CLI_EXIT_OK) {
    fwrite(text[0], 1, header, out);
    for (size_t k = 0; k < total; k++) {
      const int i = (int)(k % (size_t)count);
      const size_t end = cli_row_end(text[i], n[i], at[i], csv);
      fwrite(text[i] + at[i], 1, end - at[i], out);
      at[i] = end;
    }
    if (fflush(out) != 0 || ferror(out)) rc = cli_fail("%s: writing failed", out_name);
  }
  free(at), free(rows);
  return rc;
}
