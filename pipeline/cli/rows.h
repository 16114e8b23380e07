/* Rows of the command's own outputs (CSV with a header, or JSON Lines), for classify --resume
   and merge: where a row ends, and a file read whole. */
#ifndef TTP_CLI_ROWS_H
#define TTP_CLI_ROWS_H

#include <stddef.h>

/* The end (one past its '\n') of the row that starts at `at` in text[0..n): a CSV row may hold
   line breaks inside quoted fields; a JSON Lines row is a line. 0 when the row is not whole
   (no line break after it: a torn last row). */
size_t cli_row_end(const char* text, size_t n, size_t at, int csv);

/* The file at path, whole, into *text (malloc'd, *n bytes; a NUL after them). Returns 0, or -1
   with errno set. */
int cli_read_whole(const char* path, char** text, size_t* n);

#endif
