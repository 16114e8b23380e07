/* What the ttapipe subcommands share. The command is a client of ttapipe.h alone. */
#ifndef TTP_CLI_H
#define TTP_CLI_H

#include <stdio.h>

#include "args.h"
#include "ttapipe.h"

/* Exit codes of the ttapipe command. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FATAL = 1, CLI_EXIT_SOME_FAILED = 3 };

/* The options of every subcommand that opens a model, for its option table. */
#define CLI_PIPELINE_OPTIONS                                                              \
  {"model", "DIR", "model directory in the mnistCUDNN layout (required)"},                \
      {"engine", "NAME", "auto|cpu (default auto: the fastest available; today cpu)"},   \
      {"threads", "N", "threads of the CPU engine (default: one per core)"}

/* Opens the pipeline the CLI_PIPELINE_OPTIONS describe. Returns CLI_EXIT_OK with *p open, or
   the exit code after printing why (CLI_EXIT_USAGE or CLI_EXIT_FATAL). */
int cli_open_pipeline(const cli_args* a, ttp_pipeline** p);

/* Prints "ttapipe: message" to stderr and returns CLI_EXIT_FATAL. */
int cli_fail(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Seconds on a monotonic clock. */
double cli_now(void);

/* Writes s as one CSV field (RFC 4180: quoted when it holds a comma, quote, CR or LF). */
void cli_csv_field(FILE* f, const char* s);

extern const cli_command cli_eval, cli_classify, cli_info;

#endif
