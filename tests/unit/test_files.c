/* File lists: directory walks sorted byte-wise, nested, hidden names skipped unless asked,
   extensions matched without regard to case, explicit paths kept as given, symbolic-link loops
   walked once; lists read from a file by lines (with CR LF) or NUL bytes. The walk underneath
   (io/files.h): on a directory of files made in shuffled order, with names that share their
   first 8 bytes and directories among them, whether the consumer is always hungry (every file
   found as it is read), never (found in order), or now and then, every file found is placed
   once, never before it is found, and the order placed is ttp_list_files' order, strictly
   increasing byte-wise. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/files.h"
#include "tests/common/check.h"
#include "ttapipe.h"

static char dir[1024];

static void touch(const char* name) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  test_write_file(path, "x", 1);
}

static void mk(const char* name) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
}

/* The list must be exactly the given names, each under dir. */
static void expect_list(const ttp_file_list* l, const char* const* names, size_t n) {
  for (size_t i = 0; i < l->count; i++) printf("    %s\n", l->paths[i]);
  CHECK(l->count == n, "%zu paths, want %zu", l->count, n);
  for (size_t i = 0; i < n; i++) {
    char want[2048];
    snprintf(want, sizeof want, "%s/%s", dir, names[i]);
    CHECK(strcmp(l->paths[i], want) == 0, "path %zu: %s, want %s", i, l->paths[i], want);
  }
}

enum { MANY = 997 };

typedef struct walk_record {
  char* found[MANY + 64];
  size_t found_count, placed[MANY + 64], placed_count;
  int hunger, asked; /* 0 never, 1 always, 2 every other time asked */
} walk_record;

static int record_hungry(void* user) {
  walk_record* r = user;
  return r->hunger == 1 || (r->hunger == 2 && r->asked++ % 2);
}

static ttp_status record_found(void* user, const char* path, ttp_err* e) {
  (void)e;
  walk_record* r = user;
  CHECK(r->found_count < MANY + 64 && (r->found[r->found_count] = strdup(path)), "too many");
  r->found_count++;
  return TTP_OK;
}

static void record_placed(void* user, size_t found) {
  walk_record* r = user;
  CHECK(found < r->found_count, "file %zu placed before it was found (%zu found)", found,
        r->found_count);
  r->placed[r->placed_count++] = found;
}

/* io_walk against ttp_list_files on a directory made in shuffled order. */
static void check_walk_order(int hunger) {
  static walk_record r;
  memset(&r, 0, sizeof r);
  r.hunger = hunger;
  char root[2048];
  snprintf(root, sizeof root, "%s/many", dir);
  const char* args[1] = {root};
  ttp_list_options o;
  ttp_list_options_init(&o);
  ttp_err e = {0};
  io_walk_fns fns = {record_found, record_placed, record_hungry, &r};
  CHECK(io_walk(args, 1, &o, &fns, &e) == TTP_OK,
        "%s", e.message);
  ttp_file_list l = {0};
  char error[TTP_ERROR_SIZE];
  CHECK(ttp_list_files(args, 1, NULL, &l, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(r.found_count == MANY + 2 && r.placed_count == MANY + 2 && l.count == MANY + 2,
        "%zu found, %zu placed, %zu listed", r.found_count, r.placed_count, l.count);
  static unsigned char seen[MANY + 64];
  memset(seen, 0, sizeof seen);
  for (size_t j = 0; j < r.placed_count; j++) {
    CHECK(!seen[r.placed[j]]++, "file %zu placed twice", r.placed[j]);
    const char* path = r.found[r.placed[j]];
    CHECK(strcmp(path, l.paths[j]) == 0, "place %zu: %s, listed %s", j, path, l.paths[j]);
    CHECK(j == 0 || strcmp(r.found[r.placed[j - 1]], path) < 0, "place %zu: %s after %s", j,
          path, r.found[r.placed[j - 1]]);
  }
  size_t in_order = 0; /* the directory's own order is not the sorted one */
  for (size_t j = 0; j < r.placed_count; j++) in_order += r.placed[j] == j;
  printf("    hunger %d: %zu of %zu files found in their sorted place\n", hunger, in_order,
         r.placed_count);
  CHECK(hunger != 0 || in_order == r.placed_count, "never hungry, yet found out of order");
  for (size_t i = 0; i < r.found_count; i++) free(r.found[i]);
  ttp_file_list_free(&l);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  mk("b");
  mk("b/c");
  mk(".hidden");
  touch("b.png");
  touch("a.PNG");
  touch("b/c/z.jpeg");
  touch("b/y, \"q\".bmp");
  touch("b/notes.txt");
  touch(".hidden/h.png");
  touch(".dot.png");
  touch("noext");
  char path[2048], target[2048];
  snprintf(path, sizeof path, "%s/b/c/loop", dir);
  snprintf(target, sizeof target, "%s/b", dir);
  CHECK(symlink(target, path) == 0, "symlink"); /* b/c/loop -> b: a loop */
  snprintf(path, sizeof path, "%s/b/dangling.png", dir);
  CHECK(symlink("/nonexistent/ttapipe", path) == 0, "symlink");

  ttp_file_list l = {0};
  char error[TTP_ERROR_SIZE];
  const char* args[1] = {dir};
  CHECK(ttp_list_files(args, 1, NULL, &l, error, sizeof error) == TTP_OK, "%s", error);
  static const char* const walked[] = {"a.PNG", "b.png", "b/c/z.jpeg", "b/dangling.png",
                                       "b/y, \"q\".bmp"};
  expect_list(&l, walked, 5); /* byte order: "b.png" < "b/..." ('.' < '/') */
  ttp_file_list_free(&l);

  ttp_list_options o;
  ttp_list_options_init(&o);
  o.hidden = 1;
  o.extensions = "png,TXT";
  CHECK(ttp_list_files(args, 1, &o, &l, error, sizeof error) == TTP_OK, "%s", error);
  static const char* const hidden[] = {".dot.png", ".hidden/h.png", "a.PNG", "b.png",
                                       "b/dangling.png", "b/notes.txt"};
  expect_list(&l, hidden, 6);
  ttp_file_list_free(&l);

  /* Explicit paths are kept as given, in order, whatever they are; appending keeps the list. */
  char p1[2048], p2[2048], p3[2048];
  snprintf(p1, sizeof p1, "%s/noext", dir);
  snprintf(p2, sizeof p2, "%s/missing.png", dir);
  snprintf(p3, sizeof p3, "%s/b/c", dir);
  const char* explicit_paths[3] = {p1, p2, p3};
  CHECK(ttp_list_files(explicit_paths, 3, NULL, &l, error, sizeof error) == TTP_OK, "%s", error);
  /* b/c holds z.jpeg and the link back to b, walked once: b's files appear through it. */
  static const char* const explicit_list[] = {"noext", "missing.png", "b/c/loop/dangling.png",
                                              "b/c/loop/y, \"q\".bmp", "b/c/z.jpeg"};
  expect_list(&l, explicit_list, 5);

  /* Lists from a file: lines (CR LF, empty lines), then NUL-separated. */
  const char* lines = "one.png\r\n\ntwo words.png\nthree\n";
  snprintf(path, sizeof path, "%s/list.txt", dir);
  test_write_file(path, lines, strlen(lines));
  CHECK(ttp_read_file_list(path, 0, &l, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(l.count == 8 && strcmp(l.paths[5], "one.png") == 0 &&
            strcmp(l.paths[6], "two words.png") == 0 && strcmp(l.paths[7], "three") == 0,
        "lines read wrongly");
  const char nul[] = "with\nnewline.png\0second.png\0";
  snprintf(path, sizeof path, "%s/list0", dir);
  test_write_file(path, nul, sizeof nul - 1);
  CHECK(ttp_read_file_list(path, 1, &l, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(l.count == 10 && strcmp(l.paths[8], "with\nnewline.png") == 0 &&
            strcmp(l.paths[9], "second.png") == 0,
        "NUL list read wrongly");
  ttp_file_list_free(&l);
  CHECK(ttp_read_file_list("/nonexistent/list", 0, &l, error, sizeof error) == TTP_ERR_IO,
        "a missing list was read");
  EXPECT_MESSAGE(error, "/nonexistent/list", "cannot open");
  mk("many");
  mk("many/same_prefix_");
  mk("many/same_prefix_dir");
  touch("many/same_prefix_/inner.png");
  touch("many/same_prefix_dir/inner.png");
  for (int i = 0; i < MANY; i++) {
    int k = (int)((i * 613L + 5) % MANY); /* 613 and MANY are coprime: each k once */
    char name[96];
    snprintf(name, sizeof name, k % 3 ? "many/same_prefix_%d.png" : "many/%d.png", k);
    touch(name);
  }
  for (int hunger = 0; hunger < 3; hunger++) check_walk_order(hunger);
  test_remove_tree(dir);
  printf("files: walks and lists as specified\n");
  return 0;
}
