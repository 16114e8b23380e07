/* ttapipe merge: the outputs of `classify --shard 0/N` .. `--shard N-1/N` (in that order) into
   the output one process would have written. Shard I holds the rows of files I, I + N, I + 2N,
   ... of the list, so the rows are dealt back in turn: row k of the result is row k / N of shard
   k mod N. CSV (the header once; every shard's must be the same) or JSON Lines, told by the first
   byte. A shard whose row count does not fit the others', or whose last row is torn, is refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rows.h"

static const cli_option merge_options[] = {
    {"output", "FILE", "write the merged rows to FILE instead of standard output"},
    {NULL, NULL, NULL},
};

static const char* const merge_aliases[] = {"-o", "output", NULL};

typedef struct shard {
  const char* path;
  char* text;
  size_t n, at, rows;
} shard;

/* Counts s's rows from s->at, checking that the last is whole. */
static int count_rows(shard* s, int csv) {
  s->rows = 0;
  for (size_t at = s->at; at < s->n; s->rows++) {
    const size_t end = cli_row_end(s->text, s->n, at, csv);
    if (!end) return cli_fail("%s: its last row is torn (a run that did not finish?)", s->path);
    at = end;
  }
  return CLI_EXIT_OK;
}

static int run_merge(const cli_args* a) {
  const int count = a->positional_count;
  if (count < 1) return cli_usage_error(a->command, "no shard outputs given");
  shard* shards = calloc((size_t)count, sizeof *shards);
  if (!shards) return cli_fail("out of memory");
  int rc = CLI_EXIT_OK, csv = 1;
  size_t header = 0, total = 0;
  for (int i = 0; i < count && rc == CLI_EXIT_OK; i++) {
    shard* s = &shards[i];
    s->path = a->positional[i];
    if (cli_read_whole(s->path, &s->text, &s->n) != 0) {
      rc = cli_fail("%s: cannot read: %s", s->path, strerror(errno));
      break;
    }
    if (i == 0) { /* JSON Lines rows begin with '{'; CSV has a header (shards of no file too) */
      csv = !(s->n == 0 || s->text[0] == '{');
      header = csv ? cli_row_end(s->text, s->n, 0, 1) : 0;
      if (csv && !header) {
        rc = cli_fail("%s: no CSV header", s->path);
        break;
      }
    }
    if (csv && (s->n < header || memcmp(s->text, shards[0].text, header) != 0)) {
      rc = cli_fail("%s: its header differs from %s's", s->path, shards[0].path);
      break;
    }
    s->at = header;
    rc = count_rows(s, csv);
    total += s->rows;
  }
  /* Shard i of N holds ceil((total - i) / N) rows. */
  for (int i = 0; i < count && rc == CLI_EXIT_OK; i++)
    if (shards[i].rows != (total + (size_t)(count - 1 - i)) / (size_t)count)
      rc = cli_fail("%s: %zu rows, where shard %d of %d of %zu rows holds %zu: not the shards "
                    "of one list, in order", shards[i].path, shards[i].rows, i, count, total,
                    (total + (size_t)(count - 1 - i)) / (size_t)count);
  const char* output = cli_get(a, "output");
  FILE* out = stdout;
  if (rc == CLI_EXIT_OK && output && !(out = fopen(output, "w")))
    rc = cli_fail("%s: cannot create: %s", output, strerror(errno));
  if (rc == CLI_EXIT_OK) {
    fwrite(shards[0].text, 1, header, out);
    for (size_t k = 0; k < total; k++) {
      shard* s = &shards[k % (size_t)count];
      const size_t end = cli_row_end(s->text, s->n, s->at, csv);
      fwrite(s->text + s->at, 1, end - s->at, out);
      s->at = end;
    }
    if (fflush(out) != 0 || ferror(out))
      rc = cli_fail("%s: writing failed", output ? output : "standard output");
  }
  if (out && out != stdout && fclose(out) != 0 && rc == CLI_EXIT_OK)
    rc = cli_fail("%s: writing failed: %s", output, strerror(errno));
  for (int i = 0; i < count; i++) free(shards[i].text);
  free(shards);
  return rc;
}

const cli_command cli_merge = {
    .name = "merge",
    .usage = "[-o FILE] SHARD_0 SHARD_1 ... SHARD_N-1",
    .summary = "Merge the outputs of classify --shard I/N (I = 0..N-1) into one run's output.",
    .details = "The shards' outputs in the order of I; the result is byte for byte what one\n"
               "classify over the whole list writes.",
    .options = merge_options,
    .max_positional = -1,
    .run = run_merge,
    .aliases = merge_aliases,
};
