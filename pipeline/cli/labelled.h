/* A labelled set for eval and tune, in either form, with --offset and --limit, read and checked
   against the model:
   - IDX: --images FILE --labels FILE;
   - a directory: --images DIR alone, its image files listed as `classify DIR` lists them
     (ttp_list_files: sorted paths), each label in its file's name (NNNNN_label<L>.png, as
     ttp_export and ttp_variants write them), each file read as classify reads it (the
     CLI_IMAGE_OPTIONS). A labelled set that drops a file biases its metrics, so a name without
     a label, a label the model does not have, or a file that does not decode is refused. */
#ifndef TTP_CLI_LABELLED_H
#define TTP_CLI_LABELLED_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* The options that name a labelled set, for eval's and tune's option tables. */
#define CLI_LABELLED_OPTIONS                                                                   \
  {"images", "FILE|DIR", "IDX image file, plain or .gz, or a directory of labelled image "     \
                         "files, NNNNN_label<L>.png (required; see eval --help)"},             \
      {"labels", "FILE", "IDX label file, plain or .gz (required with an IDX file, refused "   \
                         "with a directory)"},                                                 \
      {"offset", "N", "skip the first N images (default 0)"},                                  \
      {"limit", "N", "at most N images (default: all)"},                                       \
      CLI_IMAGE_OPTIONS

typedef struct cli_labelled {
  const char* source;    /* --images */
  const uint8_t* pixels; /* the slice's count images, one after the other, as the model takes
                            them */
  const uint8_t* labels; /* their count labels, each below the model's classes */
  size_t first, count;   /* the slice: images first .. first + count - 1 of the set's total */
  size_t total;
  char* const* paths;    /* a directory: the slice's files (paths[i] is image first + i);
                            NULL for IDX */
  /* What the loader holds: the IDX files whole (ttp_free), or the directory's listing and the
     slice's decoded images and labels (free). */
  ttp_images idx;
  uint8_t* idx_labels;
  ttp_file_list files;
  uint8_t *decoded, *named;
} cli_labelled;

/* Reads the set the arguments name and checks it against the model. Returns CLI_EXIT_OK, or
   the exit code after printing why (one line, naming the file). Free with cli_labelled_free,
   whatever it returned. */
int cli_load_labelled(const cli_args* a, const ttp_model_info* m, cli_labelled* d);
void cli_labelled_free(cli_labelled* d);

/* "SOURCE: 9000 to 9299 of 10000", or for a directory "DIR: files 0 to 299 of 300 (sorted
   paths), labels from their names": what eval and tune read. CLI_LABELLED_TEXT bytes hold it
   (a path of Linux's 4096 bytes at most and the words around it). */
enum { CLI_LABELLED_TEXT = 4096 + 128 };
void cli_labelled_describe(const cli_labelled* d, char* buf, size_t size);

/* Image i of the slice for a reader: its file's path (a directory), or "#N", N its index in the
   IDX file, written into buf. */
const char* cli_labelled_name(const cli_labelled* d, size_t i, char* buf, size_t size);

#endif
