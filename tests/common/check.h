/* What every test shares: loud failure, a seeded random source, NaN poisoning, tolerance
   comparison that prints the first mismatches, and scratch directories. Tests may print and
   exit; library code never does. */
#ifndef TTP_TEST_CHECK_H
#define TTP_TEST_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* ctest counts a test that exits with this code as skipped. */
enum { TEST_SKIP = 77 };

/* How big a test's inputs are. The sanitized build (TTAPIPE_TEST_SIZE=small, CMake's default
   with TTAPIPE_SANITIZE) checks every property on small inputs: a sanitizer finds a bad access
   on ten images as well as on ten thousand, and each pass under it costs tens of times more.
   The optimised build (full) runs the same checks at full size, and the checks that only mean
   something at full size (a model's accuracy over a whole test set). TEST_SIZE(full, small)
   picks one of two values; TEST_FULL says which build this is. */
#ifdef TTP_TEST_SMALL
enum { TEST_FULL = 0 };
#define TEST_SIZE(full, small) (small)
#else
enum { TEST_FULL = 1 };
#define TEST_SIZE(full, small) (full)
#endif

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

/* A deterministic generator (splitmix64): each test states its seed. */
typedef struct test_rng {
  uint64_t state;
} test_rng;
uint64_t test_rng_next(test_rng* r);
double test_uniform(test_rng* r, double lo, double hi); /* [lo, hi) */
int test_int(test_rng* r, int lo, int hi);              /* [lo, hi] */

void test_fill_uniform(test_rng* r, float* x, size_t n, double lo, double hi);
void test_poison(float* x, size_t n); /* NaN everywhere */

/* Counts i with |got - want| > atol + rtol |want| (NaN always counts) and prints the first five
   with their indices under `what`. */
size_t test_compare(const char* what, const float* got, const double* want, size_t n,
                    double atol, double rtol);

/* The q-quantile (0..1) of v's n values (sorts v); the median is q = 0.5. */
double test_quantile(double* v, size_t n, double q);

/* A fresh directory under $TMPDIR (or /tmp), removed with everything in it by
   test_remove_tree. */
char* test_make_dir(void);
void test_remove_tree(const char* path);

/* path = dir/name in a static buffer that the next call overwrites. */
const char* test_path(const char* dir, const char* name);

void test_write_file(const char* path, const void* data, size_t size);

/* A growable run of bytes, for files built in memory (little-endian puts). */
typedef struct test_bytes {
  uint8_t* p;
  size_t n, cap;
} test_bytes;
void test_put(test_bytes* b, const void* data, size_t n);
void test_put8(test_bytes* b, unsigned v);
void test_put16le(test_bytes* b, unsigned v);
void test_put32le(test_bytes* b, uint32_t v);
/* The message must be one line and contain every fragment given after it. */
#define EXPECT_MESSAGE(message, ...) test_expect_message((message), __VA_ARGS__, (const char*)NULL)
void test_expect_message(const char* message, ...);

#endif
