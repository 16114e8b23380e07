/* Table-driven option parsing: --name VALUE, --name=VALUE, flags, and "--" to end options. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ttapipe.h"

/* The message made printable (ttp_printable), as cli_fail's: it may quote any argument. */
int cli_usage_error(const cli_command* cmd, const char* fmt, ...) {
  char raw[4096], shown[4 * sizeof raw];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  ttp_printable(raw, shown, sizeof shown);
  fprintf(stderr, "ttapipe %s: %s\nTry 'ttapipe %s --help'.\n", cmd->name, shown, cmd->name);
  return CLI_EXIT_USAGE;
}

/* The short spelling of --name, or NULL. */
static const char* alias_of(const cli_command* cmd, const char* name) {
  for (const char* const* a = cmd->aliases; a && a[0]; a += 2)
    if (strcmp(a[1], name) == 0) return a[0];
  return NULL;
}

static void print_help(const cli_command* cmd) {
  printf("Usage: ttapipe %s %s\n\n%s\n\nOptions:\n", cmd->name, cmd->usage, cmd->summary);
  for (const cli_option* o = cmd->options; o->name; o++) {
    char left[64];
    const char* alias = alias_of(cmd, o->name);
    snprintf(left, sizeof left, "%s%s--%s%s%s", alias ? alias : "", alias ? ", " : "", o->name,
             o->arg ? " " : "", o->arg ? o->arg : "");
    printf("  %-28s %s\n", left, o->help);
  }
  printf("  %-28s %s\n", "-h, --help", "show this help and exit");
  if (cmd->details) printf("\n%s\n", cmd->details);
}

static int find_option(const cli_command* cmd, const char* name, size_t len) {
  for (int i = 0; cmd->options[i].name; i++)
    if (strlen(cmd->options[i].name) == len && strncmp(cmd->options[i].name, name, len) == 0)
      return i;
  return -1;
}

int cli_parse(const cli_command* cmd, int argc, char** argv, cli_args* out) {
  memset(out, 0, sizeof *out);
  out->command = cmd;
  int declared = 0;
  while (cmd->options[declared].name) declared++;
  if (declared > CLI_MAX_OPTIONS) /* the program's own table: values[] would overflow */
    return cli_usage_error(cmd, "internal error: %d options declared, at most %d", declared,
                           CLI_MAX_OPTIONS);
  /* Positional arguments are gathered in place at the front of argv + 1. */
  out->positional = argv + 1;
  int only_positional = 0;
  for (int i = 1; i < argc; i++) {
    char* arg = argv[i];
    if (only_positional || arg[0] != '-' || strcmp(arg, "-") == 0) {
      out->positional[out->positional_count++] = arg;
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      only_positional = 1;
      continue;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      print_help(cmd);
      return 0;
    }
    const char* name = arg + 2;
    if (arg[1] != '-') { /* a short spelling */
      name = NULL;
      for (const char* const* a = cmd->aliases; a && a[0] && !name; a += 2)
        if (strcmp(a[0], arg) == 0) name = a[1];
      if (!name) return cli_usage_error(cmd, "unknown option '%s'", arg);
    }
    const char* eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    int k = find_option(cmd, name, len);
    if (k < 0) return cli_usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
    const cli_option* o = &cmd->options[k];
    if (!o->arg) {
      if (eq) return cli_usage_error(cmd, "option '--%s' takes no value", o->name);
      out->values[k] = "";
    } else if (eq) {
      out->values[k] = eq + 1;
    } else if (i + 1 < argc) {
      out->values[k] = argv[++i];
    } else {
      return cli_usage_error(cmd, "option '--%s' needs a value (%s)", o->name, o->arg);
    }
  }
  if (cmd->max_positional >= 0 && out->positional_count > cmd->max_positional)
    return cli_usage_error(cmd, "unexpected argument '%s'",
                           out->positional[cmd->max_positional]);
  return -1;
}

static int option_index(const cli_args* a, const char* name) {
  int k = find_option(a->command, name, strlen(name));
  if (k < 0) { /* a bug in a command's table, not a user error */
    fprintf(stderr, "ttapipe: internal error: no option --%s\n", name);
    abort();
  }
  return k;
}

const char* cli_get(const cli_args* a, const char* name) { return a->values[option_index(a, name)]; }

int cli_flag(const cli_args* a, const char* name) { return cli_get(a, name) != NULL; }

int cli_require(const cli_args* a, const char* name, const char** value) {
  *value = cli_get(a, name);
  if (!*value || !**value) return cli_usage_error(a->command, "--%s is required", name);
  return 0;
}

int cli_get_long(const cli_args* a, const char* name, long lo, long hi, long* value) {
  const char* text = cli_get(a, name);
  if (!text) return 0;
  char* end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi)
    return cli_usage_error(a->command, "--%s must be an integer in %ld..%ld, not '%s'", name, lo,
                           hi, text);
  *value = v;
  return 0;
}

int cli_get_u64(const cli_args* a, const char* name, uint64_t* value) {
  const char* text = cli_get(a, name);
  if (!text) return 0;
  char* end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || end == text || *end || text[0] == '-' || text[0] == '+')
    return cli_usage_error(a->command, "--%s must be an integer in 0..2^64-1, not '%s'", name,
                           text);
  *value = v;
  return 0;
}

/* A finite number filling text up to stop. */
static int parse_float(const char* text, const char* stop, float* value) {
  char* end;
  errno = 0;
  float v = strtof(text, &end);
  if (errno || end == text || end != stop || !isfinite(v)) return -1;
  *value = v;
  return 0;
}

int cli_get_float(const cli_args* a, const char* name, float* value) {
  const char* text = cli_get(a, name);
  if (!text) return 0;
  if (parse_float(text, text + strlen(text), value))
    return cli_usage_error(a->command, "--%s must be a number, not '%s'", name, text);
  return 0;
}

int cli_get_float_pair(const cli_args* a, const char* name, float* lo, float* hi) {
  const char* text = cli_get(a, name);
  if (!text) return 0;
  const char* comma = strchr(text, ',');
  if (!comma || parse_float(text, comma, lo) || parse_float(comma + 1, comma + 1 + strlen(comma + 1), hi))
    return cli_usage_error(a->command, "--%s must be two numbers LO,HI, not '%s'", name, text);
  return 0;
}

int cli_get_floats(const cli_args* a, const char* name, float* values, int max, int* count) {
  const char* text = cli_get(a, name);
  *count = 0;
  if (!text) return 0;
  for (const char* at = text;; at++) {
    const char* comma = strchr(at, ',');
    const char* end = comma ? comma : at + strlen(at);
    if (*count == max || parse_float(at, end, &values[*count]))
      return cli_usage_error(a->command, "--%s must be 1 to %d numbers separated by commas, not "
                             "'%s'", name, max, text);
    ++*count;
    if (!comma) return 0;
    at = comma;
  }
}

int cli_get_choice(const cli_args* a, const char* name, const char* const* choices, int* index) {
  const char* text = cli_get(a, name);
  if (!text) return 0;
  for (int i = 0; choices[i]; i++)
    if (strcmp(text, choices[i]) == 0) {
      *index = i;
      return 0;
    }
  char list[256] = "";
  for (int i = 0; choices[i]; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "|" : "", choices[i]);
  return cli_usage_error(a->command, "--%s must be one of %s, not '%s'", name, list, text);
}
