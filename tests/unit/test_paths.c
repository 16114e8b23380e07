/* ttp_classify_paths, which walks while it classifies, against ttp_list_files followed by
   ttp_classify_files: on a tree of odd shape (nested directories, names that sort across the
   levels, hidden files and directories, other extensions, bad files, more files than one CPU
   batch of 256, and one directory of several batches whose files were made in shuffled order,
   so that it lists them in an order of its own and their results must wait for their turn
   across batches), the callback sees the same files in the same order, with the same results
   and probabilities bit for bit and the same errors, and the stats count the same; with one
   decoding thread and with five. */
#include <string.h>
#include <sys/stat.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { CLASSES = 10, MAX_FILES = 1400 };

typedef struct seen {
  size_t calls;
  char paths[MAX_FILES][256];
  ttp_result results[MAX_FILES];
  float probs[MAX_FILES][CLASSES];
  char errors[MAX_FILES][96];
} seen;

static void on_file(void* user, size_t index, const char* path, const ttp_result* r,
                    const float* probs, const char* error) {
  seen* s = user;
  CHECK(index == s->calls && index < MAX_FILES, "file %zu reported as %zu", s->calls, index);
  snprintf(s->paths[index], sizeof s->paths[index], "%s", path);
  if (error) {
    snprintf(s->errors[index], sizeof s->errors[index], "%s", error);
  } else {
    s->results[index] = *r;
    memcpy(s->probs[index], probs, sizeof s->probs[index]);
  }
  s->calls++;
}

static void expect_same(const seen* a, const seen* b, const char* what) {
  CHECK(a->calls == b->calls, "%s: %zu files against %zu", what, a->calls, b->calls);
  for (size_t i = 0; i < a->calls; i++) {
    CHECK(strcmp(a->paths[i], b->paths[i]) == 0, "%s: file %zu is %s, not %s", what, i,
          a->paths[i], b->paths[i]);
    CHECK(strcmp(a->errors[i], b->errors[i]) == 0, "%s: %s: error '%s', not '%s'", what,
          a->paths[i], a->errors[i], b->errors[i]);
    CHECK(memcmp(&a->results[i], &b->results[i], sizeof a->results[i]) == 0 &&
              memcmp(a->probs[i], b->probs[i], sizeof a->probs[i]) == 0,
          "%s: %s: the results differ", what, a->paths[i]);
  }
}

int main(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  char model[1100];
  snprintf(model, sizeof model, "%s/model", dir);
  mkdir(model, 0755);
  fixture_model_dir(model, 8);
  /* tree/a.pgm, tree/a/..., tree/a0.pgm (a/ sorts between them), tree/b/c/..., hidden and
     other-extension files, and enough files for two CPU batches. */
  static const char* const dirs[] = {"tree", "tree/a", "tree/b", "tree/b/c", "tree/.hidden",
                                     "tree/z", "tree/empty", "tree/m"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) mkdir(test_path(dir, dirs[i]), 0755);
  int files = TEST_SIZE(480, 400); /* three quarters visible: more than one CPU batch */
  uint8_t px[40 * 30];
  for (int i = 0; i < files; i++) {
    char name[64];
    snprintf(name, sizeof name, "tree/%s/%03d%s", i % 4 == 0 ? "a" : i % 4 == 1 ? "b/c"
             : i % 4 == 2 ? "z" : ".hidden", i, i % 29 == 0 ? ".txt" : ".pgm");
    fixture_drawing(px, 30, 40, 1, i % 2, (uint64_t)i);
    fixture_pgm(test_path(dir, name), 40, 30, 255, px);
  }
  int many = TEST_SIZE(811, 577); /* tree/m: made in a shuffled order, a few broken */
  for (int i = 0; i < many; i++) {
    int k = (int)((i * 7919L + 13) % many); /* 7919 is prime: each k once */
    char name[64];
    snprintf(name, sizeof name, "tree/m/%d.pgm", k);
    if (k % 300 == 7) {
      test_write_file(test_path(dir, name), "P5\n40 30\n255\n", 13);
      continue;
    }
    fixture_drawing(px, 30, 40, 1, k % 3 == 0, (uint64_t)k + 1000);
    fixture_pgm(test_path(dir, name), 40, 30, 255, px);
  }
  fixture_pgm(test_path(dir, "tree/a.pgm"), 40, 30, 255, px);
  fixture_pgm(test_path(dir, "tree/a0.pgm"), 40, 30, 255, px);
  test_write_file(test_path(dir, "tree/z/broken.pgm"), "P5\n40 30\n255\n", 13);
  test_write_file(test_path(dir, "tree/.dot.pgm"), "P5\n1 1\n255\n\x80", 13);

  char tree[1100];
  snprintf(tree, sizeof tree, "%s/tree", dir);
  const char* roots[] = {tree, "/no/such/file.pgm"};
  ttp_pipeline* p = fixture_open(model, TTP_ENGINE_CPU, NULL);
  for (int threads = 1; threads <= 5; threads += 4) {
    static seen listed, walked;
    memset(&listed, 0, sizeof listed);
    memset(&walked, 0, sizeof walked);
    ttp_file_list list = {0};
    char error[TTP_ERROR_SIZE];
    CHECK(ttp_list_files(roots, 2, NULL, &list, error, sizeof error) == TTP_OK, "%s", error);
    ttp_bulk_stats a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
    CHECK(ttp_classify_files(p, (const char* const*)list.paths, list.count, NULL, threads,
                             on_file, &listed, &a) == TTP_OK, "%s", ttp_last_error(p));
    CHECK(ttp_classify_paths(p, roots, 2, NULL, NULL, threads, on_file, &walked, &b) == TTP_OK,
          "%s", ttp_last_error(p));
    expect_same(&walked, &listed, threads == 1 ? "1 thread" : "5 threads");
    CHECK(a.files == b.files && a.classified == b.classified && a.failed == b.failed &&
              b.files == list.count && b.failed == 2 + (size_t)(many + 292) / 300,
          "stats: %zu/%zu/%zu against %zu/%zu/%zu", b.files, b.classified, b.failed, a.files,
          a.classified, a.failed);
    CHECK(strstr(walked.paths[0], "tree/a.pgm") && strstr(walked.paths[1], "tree/a/"),
          "order: %s, %s", walked.paths[0], walked.paths[1]);
    ttp_file_list_free(&list);
  }
  /* Nothing to walk, and bad arguments. */
  static seen none;
  const char* empty_dir[] = {test_path(dir, "tree/empty")};
  CHECK(ttp_classify_paths(p, empty_dir, 1, NULL, NULL, 2, on_file, &none, NULL) == TTP_OK &&
            none.calls == 0, "empty directory: %s", ttp_last_error(p));
  ttp_list_options lo;
  ttp_list_options_init(&lo);
  lo.struct_size = 3;
  CHECK(ttp_classify_paths(p, roots, 1, &lo, NULL, 2, on_file, &none, NULL) ==
            TTP_ERR_INVALID_ARGUMENT, "old list options accepted");
  CHECK(ttp_classify_paths(p, roots, 1, NULL, NULL, 2, NULL, NULL, NULL) ==
            TTP_ERR_INVALID_ARGUMENT, "no callback accepted");
  ttp_close(p);
  test_remove_tree(dir);
  printf("paths: the walk while classifying gives what the list then classifying gives\n");
  return 0;
}
