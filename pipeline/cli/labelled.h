/* A labelled IDX set for eval and tune: --images, --labels, --offset, --limit, read and
   checked against each other and the model. */
#ifndef TTP_CLI_LABELLED_H
#define TTP_CLI_LABELLED_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

typedef struct cli_labelled {
  ttp_images images;
  uint8_t* labels;
  size_t first, count; /* the slice evaluated */
} cli_labelled;

/* Reads both files and checks them against each other and the model. Returns CLI_EXIT_OK, or
   the exit code after printing why. Free with cli_labelled_free, whatever it returned. */
int cli_load_labelled(const cli_args* a, const ttp_model_info* m, cli_labelled* d);
void cli_labelled_free(cli_labelled* d);

#endif
