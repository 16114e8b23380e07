/* Command-line parsing for the ttapipe command: each subcommand declares a table of options,
   and the parser, the --help text and the usage errors all come from that table. */
#ifndef TTP_CLI_ARGS_H
#define TTP_CLI_ARGS_H

#include <stdint.h>

enum { CLI_MAX_OPTIONS = 64, CLI_EXIT_USAGE = 2 };

typedef struct cli_option {
  const char* name; /* "model" for --model */
  const char* arg;  /* "DIR" when the option takes a value; NULL for a flag */
  const char* help;
} cli_option;

typedef struct cli_args {
  const struct cli_command* command;
  const char* values[CLI_MAX_OPTIONS]; /* by option index: the value, "" for a given flag, or NULL */
  char** positional;
  int positional_count;
} cli_args;

typedef struct cli_command {
  const char* name;    /* "eval" */
  const char* usage;   /* what follows "ttapipe eval" in the usage line */
  const char* summary; /* one line */
  const char* details; /* paragraphs after the options in --help, or NULL */
  const cli_option* options; /* ends with a {NULL} entry */
  int max_positional;        /* 0: none accepted; -1: any number */
  int (*run)(const cli_args* args);
  const char* const* aliases; /* NULL, or pairs {"-o", "output", ...} ending with NULL: short
                                 spellings of long options */
} cli_command;

/* Parses argv[1..argc-1] (argv[0] is the subcommand's name). Returns -1 when parsing succeeded,
   otherwise the exit code to use: 0 after printing --help, CLI_EXIT_USAGE after printing a usage
   error to stderr. */
int cli_parse(const cli_command* cmd, int argc, char** argv, cli_args* out);

/* The value of --name, or NULL when it was not given. */
const char* cli_get(const cli_args* a, const char* name);
/* Whether the flag --name was given. */
int cli_flag(const cli_args* a, const char* name);

/* These print a usage error and return CLI_EXIT_USAGE on failure, else 0. */
int cli_require(const cli_args* a, const char* name, const char** value);
int cli_get_long(const cli_args* a, const char* name, long lo, long hi, long* value);
int cli_get_u64(const cli_args* a, const char* name, uint64_t* value);
int cli_get_float(const cli_args* a, const char* name, float* value);
/* "LO,HI": two numbers separated by a comma. */
int cli_get_float_pair(const cli_args* a, const char* name, float* lo, float* hi);
/* --name V[,V...]: 1 to max numbers into values, their number into *count (0 when absent). */
int cli_get_floats(const cli_args* a, const char* name, float* values, int max, int* count);
/* Picks value's position in choices (NULL-terminated). *index stays as it was when absent. */
int cli_get_choice(const cli_args* a, const char* name, const char* const* choices, int* index);

/* Prints "ttapipe CMD: message" and the hint to try --help, to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const cli_command* cmd, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
