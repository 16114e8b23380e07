/* The fuzz targets' one entry point, libFuzzer's. Each target is one source here; built with
   libFuzzer (TTAPIPE_FUZZ) it is a fuzzer, built with replay.c it replays saved inputs in any
   build, as a plain ctest test (zstd's tests/fuzz/regression_driver.c does the same). */
#ifndef TTP_FUZZ_H
#define TTP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

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

#endif
