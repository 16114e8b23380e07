/* Rows of the command's outputs: see rows.h. */
#include "rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

size_t cli_archive_key(const char* path, size_t n) {
  static const char* const ends[] = {".tar", ".tar.gz", ".tgz"};
  for (size_t start = 0, i = 0; i <= n; i++) {
    if (i < n && path[i] != '/') continue;
    for (size_t k = 0; k < sizeof ends / sizeof *ends; k++) {
      const size_t len = strlen(ends[k]);
      if (i - start >= len && strncasecmp(path + i - len, ends[k], len) == 0) return i;
    }
    start = i + 1;
  }
  return 0;
}

/* The archive key (cli_archive_key) of the row at text[at..end): over its path field's text as
   written (inside the quotes of a quoted CSV field or of the JSON string; in CSV after the
   apostrophe that a cell beginning with '=', '+', '-', '@' or an apostrophe is given, see
   ttapipe.h: the archive's name as it is). *key: where it starts. */
static size_t row_key(const char* text, size_t at, size_t end, int csv, const char** key) {
  size_t from = at, to = at;
  *key = text + at;
  if (csv && text[at] == '"') { /* to the quote that closes it ("" is one inside) */
    from = to = at + 1;
    while (to < end && !(text[to] == '"' && (to + 1 >= end || text[to + 1] != '"')))
      to += text[to] == '"' ? 2 : 1;
  } else if (csv) {
    while (to < end && text[to] != ',' && text[to] != '\n' && text[to] != '\r') to++;
  } else { /* {"path":"...", */
    static const char open[] = "{\"path\":\"";
    if (end - at < sizeof open - 1 || memcmp(text + at, open, sizeof open - 1) != 0) return 0;
    from = to = at + sizeof open - 1;
    while (to < end && text[to] != '"') to += text[to] == '\\' ? 2 : 1;
    if (to > end) to = end;
  }
  if (csv && from < to && text[from] == '\'') from++; /* the cell's mark, not the name */
  *key = text + from;
  return cli_archive_key(text + from, to - from);
}

/* One shard's units, in order: where each starts (a row's offset), the end of the last after
   them (count + 1 offsets). A unit is a row, or the consecutive rows of one archive. */
typedef struct units {
  size_t* at;
  size_t count, cap;
} units;

static int add_unit(units* u, size_t at) {
  if (u->count + 1 >= u->cap) {
    size_t cap = u->cap ? 2 * u->cap : 1024;
    size_t* grown = realloc(u->at, cap * sizeof *grown);
    if (!grown) return -1;
    u->at = grown, u->cap = cap;
  }
  u->at[u->count++] = at;
  return 0;
}

int cli_deal_rows(char* const* text, const size_t* n, const char* const* name, int count,
                  FILE* out, const char* out_name) {
  units* u = calloc((size_t)count, sizeof *u);
  if (!u) return cli_fail("out of memory");
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
    const char* last = NULL; /* the previous row's archive key */
    size_t last_len = 0;
    for (size_t p = header; p < n[i] && rc == CLI_EXIT_OK;) {
      const size_t end = cli_row_end(text[i], n[i], p, csv);
      if (!end) {
        rc = cli_fail("%s: its last row is torn (a run that did not finish?)", name[i]);
        break;
      }
      const char* key;
      const size_t len = row_key(text[i], p, end, csv, &key);
      if (!(len && len == last_len && memcmp(key, last, len) == 0) && add_unit(&u[i], p) != 0)
        rc = cli_fail("out of memory");
      last = key, last_len = len;
      p = end;
    }
    if (rc == CLI_EXIT_OK && add_unit(&u[i], n[i]) != 0) rc = cli_fail("out of memory");
    if (rc == CLI_EXIT_OK) total += --u[i].count; /* the end is not a unit */
  }
  for (int i = 0; i < count && rc == CLI_EXIT_OK; i++) { /* shard i holds ceil((total - i) / N) */
    const size_t want = (total + (size_t)(count - 1 - i)) / (size_t)count;
    if (u[i].count != want)
      rc = cli_fail("%s: %zu rows (or archives), where shard %d of %d of %zu holds %zu: not the "
                    "shards of one list, in order", name[i], u[i].count, i, count, total, want);
  }
  if (rc == CLI_EXIT_OK) {
    fwrite(text[0], 1, header, out);
    for (size_t k = 0; k < total; k++) {
      const int i = (int)(k % (size_t)count);
      const size_t j = k / (size_t)count;
      fwrite(text[i] + u[i].at[j], 1, u[i].at[j + 1] - u[i].at[j], out);
    }
    if (fflush(out) != 0 || ferror(out)) rc = cli_fail("%s: writing failed", out_name);
  }
  for (int i = 0; i < count; i++) free(u[i].at);
  free(u);
  return rc;
}
