/* The plan cache's file (pipeline/plan_cache.h):
     - 37 random entries (odd keys, negative ones too, times of every size) written and read
       back are the same, bit for bit; subnormal times too; an empty cache too; the writer
       refuses an entry the reader would (a key past 1e9, a NaN time); a missing file reads as
       absent, with no note; the write makes the missing directories above the file and leaves
       no temporary file beside it;
     - ignored with a one-line note naming the file, and no entries: every cut of a valid file
       of 5 entries (each length from 0 to its size less one), each byte of it changed (one bit
       flipped), another version's first line, another identity (the note names both), bytes
       after the end line, an entry line with a field too many or too few or a NaN time, an
       entry count past the caller's room, random bytes, and a directory in place of the
       file;
     - the default path: $XDG_CACHE_HOME's when absolute, else $HOME/.cache's, else none. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/plan_cache.h"
#include "tests/common/check.h"

static const char* kId = "NVIDIA H200 sm_90, driver 13000, cuDNN 91400, cuBLASLt 130000";

static void random_entries(test_rng* r, plan_entry* e, int n) {
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < PLAN_KEY_INTS; k++) e[i].key[k] = test_int(r, -5, 70000);
    e[i].algo = test_int(r, 0, 7), e[i].math = test_int(r, 0, 3);
    e[i].ms = i % 5 == 0 ? -1.0f : (float)test_uniform(r, 0.0, 1000.0) / (float)(1 + i * i);
  }
}

static char* read_text(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  CHECK(f, "cannot open %s", path);
  char* text = malloc(1 << 20);
  *size = fread(text, 1, 1 << 20, f);
  fclose(f);
  return text;
}

/* path must be ignored with a one-line note that names it (and holds `says` when not NULL). */
static void expect_ignored(const char* what, const char* path, const char* says) {
  plan_entry got[64];
  int count = -1;
  char note[512] = "";
  const int r = plan_cache_read(path, kId, got, 64, &count, note, sizeof note);
  CHECK(r == -1 && count == 0, "%s: read gave %d with %d entries (%s)", what, r, count, note);
  CHECK(strstr(note, path) && !strchr(note, '\n') && strstr(note, "ignored"),
        "%s: the note: %s", what, note);
  CHECK(!says || strstr(note, says), "%s: the note does not say \"%s\": %s", what, says, note);
}

int main(void) {
  test_rng rng = {20261128};
  char* dir = test_make_dir();
  char path[1024], note[512];
  snprintf(path, sizeof path, "%s/made/below/plans", dir);

  /* written and read back */
  plan_entry want[37], got[64];
  random_entries(&rng, want, 37);
  CHECK(plan_cache_write(path, kId, want, 37, note, sizeof note) == 0, "%s", note);
  int count = -1;
  CHECK(plan_cache_read(path, kId, got, 64, &count, note, sizeof note) == 1 && count == 37,
        "read back: %d entries (%s)", count, note);
  for (int i = 0; i < 37; i++)
    CHECK(memcmp(&want[i], &got[i], sizeof want[i]) == 0, "entry %d read back differs", i);
  char temp[1100];
  snprintf(temp, sizeof temp, "%s.%ld.tmp", path, (long)getpid());
  struct stat st;
  CHECK(stat(temp, &st) != 0, "a temporary file is left: %s", temp);
  /* a subnormal time reads back (strtof's ERANGE), and the writer refuses what the reader
     would: a key past 1e9, a NaN time */
  plan_entry odd[2];
  random_entries(&rng, odd, 2);
  odd[0].ms = 0x1p-149f, odd[1].ms = 0x1p-130f;
  char tiny[1024];
  snprintf(tiny, sizeof tiny, "%s/tiny", dir);
  CHECK(plan_cache_write(tiny, kId, odd, 2, note, sizeof note) == 0, "%s", note);
  CHECK(plan_cache_read(tiny, kId, got, 64, &count, note, sizeof note) == 1 && count == 2 &&
            got[0].ms == 0x1p-149f && got[1].ms == 0x1p-130f,
        "subnormal times: %d entries (%s)", count, note);
  odd[1].key[3] = 1000000001;
  CHECK(plan_cache_write(tiny, kId, odd, 2, note, sizeof note) == -1 && strstr(note, "ranges"),
        "a key past 1e9 written: %s", note);
  odd[1].key[3] = 5, odd[1].ms = NAN;
  CHECK(plan_cache_write(tiny, kId, odd, 2, note, sizeof note) == -1, "a NaN time written");
  char empty[1024];
  snprintf(empty, sizeof empty, "%s/empty", dir);
  CHECK(plan_cache_write(empty, kId, want, 0, note, sizeof note) == 0, "%s", note);
  CHECK(plan_cache_read(empty, kId, got, 64, &count, note, sizeof note) == 1 && count == 0,
        "an empty cache: %d entries (%s)", count, note);
  char missing[1024];
  snprintf(missing, sizeof missing, "%s/none", dir);
  note[0] = '\0';
  CHECK(plan_cache_read(missing, kId, got, 64, &count, note, sizeof note) == 0 && !note[0],
        "a missing file: note %s", note);

  /* every cut, every flipped bit (of a cache of 5 entries) */
  char small[1024];
  snprintf(small, sizeof small, "%s/small", dir);
  CHECK(plan_cache_write(small, kId, want, 5, note, sizeof note) == 0, "%s", note);
  size_t size;
  char* text = read_text(small, &size);
  char bad[1024];
  snprintf(bad, sizeof bad, "%s/bad", dir);
  for (size_t cut = 0; cut < size; cut++) {
    test_write_file(bad, text, cut);
    expect_ignored("a cut file", bad, NULL);
  }
  for (size_t at = 0; at < size; at++) {
    text[at] ^= (char)(1 << (at % 7));
    test_write_file(bad, text, size);
    expect_ignored("a changed byte", bad, NULL);
    text[at] ^= (char)(1 << (at % 7));
  }

  /* another version, another identity, a tail, malformed entries: each written with a right
     checksum where it has one, so that only what is named is wrong */
  plan_entry one[1];
  random_entries(&rng, one, 1);
  CHECK(plan_cache_write(bad, "NVIDIA H100 80GB HBM3 sm_90, driver 12080, cuDNN 91400", one, 1,
                         note, sizeof note) == 0, "%s", note);
  expect_ignored("another identity", bad, "H100");
  char* other = read_text(bad, &size);
  other[19] = '2'; /* "ttapipe plan cache 2" */
  test_write_file(bad, other, size);
  expect_ignored("another version", bad, "version");
  free(other);
  CHECK(plan_cache_write(bad, kId, one, 1, note, sizeof note) == 0, "%s", note);
  other = read_text(bad, &size);
  memcpy(other + size, "x\n", 2);
  test_write_file(bad, other, size + 2);
  expect_ignored("bytes after the end", bad, NULL);
  free(other);
  const char* entries[] = {"conv 1 2 3\n",
                           "conv 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 1 2 3 4\n",
                           "conv 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 1 2 nan\n"};
  for (int i = 0; i < 3; i++) {
    char body[600];
    const int n = snprintf(body, sizeof body, "ttapipe plan cache 1\nid %s\n%s", kId, entries[i]);
    uint64_t h = 0xcbf29ce484222325u; /* the format's FNV-1a 64 (plan_cache.h) */
    for (int k = 0; k < n; k++) h = (h ^ (unsigned char)body[k]) * 0x100000001b3u;
    snprintf(body + n, sizeof body - n, "end 1 %016llx\n", (unsigned long long)h);
    test_write_file(bad, body, strlen(body));
    expect_ignored("a malformed entry", bad, "entry 1");
  }
  CHECK(plan_cache_read(path, kId, got, 36, &count, note, sizeof note) == -1 && count == 0 &&
            strstr(note, "more than 36"),
        "37 entries into room for 36: %s", note);
  for (int i = 0; i < 50; i++) {
    char noise[300];
    const size_t n = (size_t)test_int(&rng, 1, (int)sizeof noise);
    for (size_t k = 0; k < n; k++) noise[k] = (char)test_int(&rng, 0, 255);
    if (i % 2) memcpy(noise, "ttapipe plan cache 1\n", n < 21 ? n : 21);
    test_write_file(bad, noise, n);
    expect_ignored("random bytes", bad, NULL);
  }
  expect_ignored("a directory", dir, NULL);
  free(text);

  /* the default path */
  char at[1024];
  setenv("XDG_CACHE_HOME", "/x/cache", 1), setenv("HOME", "/h", 1);
  CHECK(plan_cache_default_path(at, sizeof at) == 1 && strcmp(at, "/x/cache/ttapipe/plans") == 0,
        "with XDG_CACHE_HOME: %s", at);
  setenv("XDG_CACHE_HOME", "relative", 1);
  CHECK(plan_cache_default_path(at, sizeof at) == 1 && strcmp(at, "/h/.cache/ttapipe/plans") == 0,
        "with a relative XDG_CACHE_HOME: %s", at);
  unsetenv("XDG_CACHE_HOME"), unsetenv("HOME");
  CHECK(plan_cache_default_path(at, sizeof at) == 0, "with neither: %s", at);

  test_remove_tree(dir);
  printf("plan cache: read back, every cut and changed byte, other versions, identities and "
         "malformed files ignored with a note\n");
  return 0;
}
