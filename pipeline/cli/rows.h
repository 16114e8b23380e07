/* Rows of the command's own outputs (CSV with a header, or JSON Lines), for classify --resume
   and merge: where a row ends, and a file read whole. */
#ifndef TTP_CLI_ROWS_H
#define TTP_CLI_ROWS_H

#include <stddef.h>
#include <stdio.h>

/* The end (one past its '\n') of the row that starts at `at` in text[0..n): a CSV row may hold
   line breaks inside quoted fields; a JSON Lines row is a line. 0 when the row is not whole
   (no line break after it: a torn last row). */
size_t cli_row_end(const char* text, size_t n, size_t at, int csv);

/* The outputs of the N shards of one list (text[i], n[i] bytes; shard i holds the rows of the
   list's entries i, i + N, ...), named name[i] in messages, dealt back into the output of one
   run over the whole list, written to out: unit k is unit k / N of shard k mod N, where a unit
   is a file's row, or the rows of one tar archive's members (consecutive rows whose paths share
   an archive key). CSV (a header, the same in every shard, written once) or JSON Lines, told by
   the first shard's first byte. Returns CLI_EXIT_OK, or CLI_EXIT_FATAL after printing why (a
   torn row, headers that differ, unit counts that cannot be those of N shards of one list, a
   failed write). */
int cli_deal_rows(char* const* text, const size_t* n, const char* const* name, int count,
                  FILE* out, const char* out_name);

/* The length of path[0..n)'s prefix up to the end of its first component named like a tar
   archive (ending in .tar, .tar.gz or .tgz, any case): n for an archive itself, less for its
   members' rows (archive/member); 0 when no component is. */
size_t cli_archive_key(const char* path, size_t n);

/* The file at path, whole, into *text (malloc'd, *n bytes; a NUL after them). Returns 0, or -1
   with errno set. */
int cli_read_whole(const char* path, char** text, size_t* n);

#endif
