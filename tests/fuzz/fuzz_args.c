/* Fuzz target: the ttapipe command's argument parser (pipeline/cli/args.c) with the real
   subcommands' option tables. The input's first byte chooses the subcommand (classify, eval,
   info, bench); the rest, split at NUL bytes, is its arguments (at most 32). A parse that
   succeeds is followed by every typed read of every option's value (integer, unsigned 64-bit,
   float, float pair, a choice), as the subcommands make them; the subcommand itself is not run.

   Checks: cli_parse returns -1 (parsed), 0 (--help) or 2 (a usage error); each read returns 0 or
   2; what parsed as given names only the subcommand's options and at most its positional
   arguments. What the parser prints (usage errors, --help) goes to /dev/null. */
#include <string.h>

#include "fuzz.h"
#include "pipeline/cli/cli.h"

enum { MAX_ARGS = 32 };

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const cli_command* const commands[] = {&cli_classify, &cli_eval, &cli_info, &cli_bench};
  const cli_command* cmd = commands[data[0] % 4];
  /* The arguments: a NUL-terminated copy of the rest, cut at each NUL byte. */
  char* text = malloc(size);
  FUZZ_ASSERT(text, "out of memory");
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  char* argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = (char*)cmd->name;
  for (char* p = text; p < text + size - 1 && argc <= MAX_ARGS; p += strlen(p) + 1) argv[argc++] = p;
  argv[argc] = NULL;

  /* The usage errors and --help go to /dev/null (glibc's stdout and stderr are assignable; the
     sanitizers and the assertions below keep the real ones). */
  static FILE* quiet;
  if (!quiet) quiet = fopen("/dev/null", "w");
  FILE *real_out = stdout, *real_err = stderr;
  if (quiet) stdout = stderr = quiet;
  cli_args a;
  memset(&a, 0, sizeof a);
  int r = cli_parse(cmd, argc, argv, &a);
  stdout = real_out, stderr = real_err;
  FUZZ_ASSERT(r == -1 || r == 0 || r == CLI_EXIT_USAGE, "cli_parse returned %d", r);
  if (r == -1) {
    FUZZ_ASSERT(cmd->max_positional < 0 || a.positional_count <= cmd->max_positional,
                "%d positional arguments for at most %d", a.positional_count, cmd->max_positional);
    static const char* const choices[] = {"fp32", "fp16", "tf32", "auto", "on", "off", NULL};
    for (const cli_option* o = cmd->options; o->name; o++) {
      const char* value = cli_get(&a, o->name);
      if (!o->arg) {
        FUZZ_ASSERT(value == NULL || value[0] == '\0', "flag --%s with a value", o->name);
        continue;
      }
      long l;
      uint64_t u;
      float f, lo, hi;
      int index = -1;
      if (quiet) stdout = stderr = quiet;
      int rc[5] = {cli_get_long(&a, o->name, -1000000, 1000000, &l), cli_get_u64(&a, o->name, &u),
                   cli_get_float(&a, o->name, &f), cli_get_float_pair(&a, o->name, &lo, &hi),
                   cli_get_choice(&a, o->name, choices, &index)};
      stdout = real_out, stderr = real_err;
      for (int k = 0; k < 5; k++)
        FUZZ_ASSERT(rc[k] == 0 || rc[k] == CLI_EXIT_USAGE, "a read of --%s returned %d", o->name,
                    rc[k]);
      if (rc[0] == 0 && value) FUZZ_ASSERT(l >= -1000000 && l <= 1000000, "--%s: %ld", o->name, l);
    }
  }
  free(text);
  return 0;
}
