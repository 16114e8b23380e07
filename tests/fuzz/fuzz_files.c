/* The fuzz targets' temporary files (fuzz.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char dir[PATH_MAX / 2];
static char made[16][PATH_MAX]; /* the files made in it, removed at exit */
static int made_count;

static void remove_all(void) {
  for (int i = 0; i < made_count; i++) unlink(made[i]);
  if (dir[0]) rmdir(dir);
}

const char* fuzz_temp_path(const char* name) {
  if (!dir[0]) {
    const char* tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/ttp-fuzz-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    FUZZ_ASSERT(mkdtemp(dir), "cannot make a directory from %s", dir);
    atexit(remove_all);
  }
  for (int i = 0; i < made_count; i++) {
    const char* slash = strrchr(made[i], '/');
    if (strcmp(slash + 1, name) == 0) return made[i];
  }
  FUZZ_ASSERT(made_count < 16, "too many temporary files");
  const int n = snprintf(made[made_count], PATH_MAX, "%s/%s", dir, name);
  FUZZ_ASSERT(n > 0 && n < PATH_MAX, "the path of %s is too long", name);
  return made[made_count++];
}

void fuzz_write(const char* path, const uint8_t* data, size_t size) {
  FILE* f = fopen(path, "wb");
  FUZZ_ASSERT(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", path);
}
