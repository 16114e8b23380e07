/* The ttapipe command: picks the subcommand and hands it the rest of the arguments. */
#include <string.h>

#include "cli.h"

static const cli_command* const commands[] = {&cli_classify, &cli_eval, &cli_info, &cli_bench,
                                              &cli_merge, &cli_tune};
enum { COMMAND_COUNT = sizeof commands / sizeof commands[0] };

static void print_usage(FILE* f) {
  fprintf(f, "Usage: ttapipe COMMAND [options]\n\n"
             "Classify small images with a LeNet-class CNN.\n\nCommands:\n");
  for (int i = 0; i < COMMAND_COUNT; i++)
    fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f, "\n'ttapipe COMMAND --help' describes a command's options; "
             "'ttapipe --version' prints the version.\n");
}

int main(int argc, char** argv) {
  cli_started = cli_now();
  if (argc < 2) {
    print_usage(stderr);
    return CLI_EXIT_USAGE;
  }
  const char* name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    print_usage(stdout);
    return CLI_EXIT_OK;
  }
  if (strcmp(name, "--version") == 0) {
    printf("%s\n", ttp_build_string());
    return CLI_EXIT_OK;
  }
  for (int i = 0; i < COMMAND_COUNT; i++)
    if (strcmp(name, commands[i]->name) == 0) {
      cli_args args;
      int rc = cli_parse(commands[i], argc - 1, argv + 1, &args);
      return rc >= 0 ? rc : commands[i]->run(&args);
    }
  fprintf(stderr, "ttapipe: unknown command '%s'\nTry 'ttapipe --help'.\n", name);
  return CLI_EXIT_USAGE;
}
