/* The fuzz targets' one entry point, libFuzzer's. Each target is one source here; built with
   libFuzzer (TTAPIPE_FUZZ) it is a fuzzer, built with replay.c it replays saved inputs in any
   build, as a plain ctest test (zstd's tests/fuzz/regression_driver.c does the same). */
#ifndef TTP_FUZZ_H
#define TTP_FUZZ_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* Dies (abort, which the fuzzer and the sanitizers report with the input) unless cond holds. */
#define FUZZ_ASSERT(cond, ...)                                                      \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: FUZZ_ASSERT(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                 \
      fputc('\n', stderr);                                                          \
      abort();                                                                      \
    }                                                                               \
  } while (0)

/* A refusal as the library promises it (pipeline/error.h): the error holds the status returned
   and a message of one line. (A macro, so that a failure names the target's line.) */
#define FUZZ_ASSERT_REFUSAL(e, s)                                                   \
  FUZZ_ASSERT((e).status == (s) && (e).message[0] && !strchr((e).message, '\n'),    \
              "status %d without a one-line message: %s", (int)(s), (e).message)

/* The readers that take a path get the input through a file: fuzz_temp_path(NAME) is a file
   NAME in a directory made once a process (under TMPDIR, removed at exit), and fuzz_write
   replaces a file's content with the input. */
const char* fuzz_temp_path(const char* name);
void fuzz_write(const char* path, const uint8_t* data, size_t size);

#endif
