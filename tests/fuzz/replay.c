/* Replays saved inputs through a fuzz target without libFuzzer: every file named, and every
   file in each directory named (not recursive, in byte order), once. A crash, a sanitizer
   report or a failed FUZZ_ASSERT aborts with the input's path printed just before; otherwise it
   prints how many inputs ran. A replay that finds no input at all fails: its corpus went
   missing. Usage: fuzz_TARGET_replay PATH... */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static size_t replay_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    exit(1);
  }
  size_t capacity = 1 << 16, size = 0, got;
  uint8_t* data = malloc(capacity);
  while (data && (got = fread(data + size, 1, capacity - size, f)) > 0)
    if ((size += got) == capacity) data = realloc(data, capacity *= 2);
  if (!data || ferror(f)) {
    fprintf(stderr, "%s: cannot read\n", path);
    exit(1);
  }
  fclose(f);
  fprintf(stderr, "%s\n", path); /* the input of a report that follows */
  LLVMFuzzerTestOneInput(data, size);
  free(data);
  return 1;
}

static int by_name(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static size_t replay(const char* path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "%s: not found\n", path);
    exit(1);
  }
  if (!S_ISDIR(st.st_mode)) return replay_file(path);
  DIR* d = opendir(path);
  if (!d) {
    fprintf(stderr, "%s: cannot open the directory\n", path);
    exit(1);
  }
  char** names = NULL;
  size_t count = 0, done = 0;
  for (struct dirent* entry; (entry = readdir(d));) {
    if (entry->d_name[0] == '.') continue;
    names = realloc(names, (count + 1) * sizeof *names);
    size_t n = strlen(path) + strlen(entry->d_name) + 2;
    if (!names || !(names[count] = malloc(n))) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
    snprintf(names[count++], n, "%s/%s", path, entry->d_name);
  }
  closedir(d);
  if (count) qsort(names, count, sizeof *names, by_name);
  for (size_t i = 0; i < count; i++) {
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) done += replay_file(names[i]);
    free(names[i]);
  }
  free(names);
  return done;
}

int main(int argc, char** argv) {
  size_t done = 0;
  for (int i = 1; i < argc; i++) done += replay(argv[i]);
  if (done == 0) {
    fprintf(stderr, "%s: no inputs to replay\n", argv[0]);
    return 1;
  }
  printf("%s: %zu inputs replayed\n", argv[0], done);
  return 0;
}
