/* Test helpers: see check.h. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "check.h"

#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

uint64_t test_rng_next(test_rng* r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double test_uniform(test_rng* r, double lo, double hi) {
  return lo + (hi - lo) * (double)(test_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

int test_int(test_rng* r, int lo, int hi) {
  return lo + (int)(test_rng_next(r) % (uint64_t)(hi - lo + 1));
}

void test_fill_uniform(test_rng* r, float* x, size_t n, double lo, double hi) {
  for (size_t i = 0; i < n; i++) x[i] = (float)test_uniform(r, lo, hi);
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

double test_quantile(double* v, size_t n, double q) {
  qsort(v, n, sizeof *v, by_value);
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

void test_poison(float* x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = NAN;
}

size_t test_compare(const char* what, const float* got, const double* want, size_t n,
                    double atol, double rtol) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double diff = fabs((double)got[i] - want[i]);
    if (!(diff <= atol + rtol * fabs(want[i]))) {
      if (bad < 5)
        fprintf(stderr, "  %s[%zu]: got %.9g, want %.9g (diff %.3g)\n", what, i, got[i], want[i],
                diff);
      bad++;
    }
  }
  if (bad) fprintf(stderr, "  %s: %zu of %zu values out of tolerance\n", what, bad, n);
  return bad;
}

char* test_make_dir(void) {
  const char* base = getenv("TMPDIR");
  static char templ[4096];
  snprintf(templ, sizeof templ, "%s/ttapipe-test-XXXXXX", base && *base ? base : "/tmp");
  char* dir = mkdtemp(templ);
  CHECK(dir, "mkdtemp %s failed", templ);
  return dir;
}

static int remove_entry(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

void test_remove_tree(const char* path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

const char* test_path(const char* dir, const char* name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

void test_write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  CHECK(f, "cannot create %s", path);
  CHECK(fwrite(data, 1, size, f) == size, "short write to %s", path);
  CHECK(fclose(f) == 0, "cannot close %s", path);
}

void test_put(test_bytes* b, const void* data, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    CHECK((b->p = realloc(b->p, b->cap)), "out of memory");
  }
  if (n) memcpy(b->p + b->n, data, n);
  b->n += n;
}
void test_put8(test_bytes* b, unsigned v) { test_put(b, &(uint8_t){(uint8_t)v}, 1); }
void test_put16le(test_bytes* b, unsigned v) { test_put8(b, v & 255), test_put8(b, v >> 8 & 255); }
void test_put32le(test_bytes* b, uint32_t v) { test_put16le(b, v & 0xffff), test_put16le(b, v >> 16); }

void test_expect_message(const char* message, ...) {
  va_list ap;
  va_start(ap, message);
  for (const char* frag; (frag = va_arg(ap, const char*));)
    CHECK(strstr(message, frag), "message \"%s\" lacks \"%s\"", message, frag);
  va_end(ap);
  CHECK(!strchr(message, '\n'), "message \"%s\" spans lines", message);
}
