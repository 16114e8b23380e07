/* ttapipe merge: the outputs of `classify --shard 0/N` .. `--shard N-1/N` (in that order) into
   the output one process would have written (rows.h: cli_deal_rows). */
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

static int run_merge(const cli_args* a) {
  const int count = a->positional_count;
  if (count < 1) return cli_usage_error(a->command, "no shard outputs given");
  char** text = calloc((size_t)count, sizeof *text);
  size_t* n = calloc((size_t)count, sizeof *n);
  int rc = text && n ? CLI_EXIT_OK : cli_fail("out of memory");
  for (int i = 0; i < count && rc == CLI_EXIT_OK; i++)
    if (cli_read_whole(a->positional[i], &text[i], &n[i]) != 0)
      rc = cli_fail("%s: cannot read: %s", a->positional[i], strerror(errno));
  const char* output = cli_get(a, "output");
  FILE* out = stdout;
  if (rc == CLI_EXIT_OK && output && !(out = fopen(output, "w")))
    rc = cli_fail("%s: cannot create: %s", output, strerror(errno));
  if (rc == CLI_EXIT_OK)
    rc = cli_deal_rows(text, n, (const char* const*)a->positional, count, out,
                       output ? output : "standard output");
  if (out && out != stdout && fclose(out) != 0 && rc == CLI_EXIT_OK)
    rc = cli_fail("%s: writing failed: %s", output, strerror(errno));
  for (int i = 0; text && i < count; i++) free(text[i]);
  free(text), free(n);
  return rc;
}

const cli_command cli_merge = {
    .name = "merge",
    .usage = "[-o FILE] SHARD_0 SHARD_1 ... SHARD_N-1",
    .summary = "Merge the outputs of classify --shard I/N (I = 0..N-1) into one run's output.",
    .details = "The shards' outputs in the order of I; the result is byte for byte what one\n"
               "classify over the whole list writes. A shard whose last row is torn, headers\n"
               "that differ, or row counts that cannot be those of one list's shards are refused.",
    .options = merge_options,
    .max_positional = -1,
    .run = run_merge,
    .aliases = merge_aliases,
};
