/* TTA policy files (ttp_read_tta_policy, ttp_write_tta_policy):
   - a file giving every key, with comments, blank lines, spaces, tabs and CRLF, reads into
     those values; a file giving some keys keeps the others' defaults; an empty file is the
     defaults;
   - 200 random policies (odd values in every range) written and read back are the same,
     field by field and bit for bit (floats written with 9 significant digits);
   - refused in one line naming the file (and the line where there is one): an unknown key, a
     key twice, no '=', a number that does not parse, a range written with one number, a value
     out of ttp_open's range (copies 65, contrast 9 .. 1, noise 2), a bad choice, a negative
     seed, a NUL byte, a file over 64 KiB, a directory, a missing file; the output is untouched
     on failure. */
#include <math.h>
#include <string.h>

#include "tests/common/check.h"
#include "ttapipe.h"

static const char* dir;

static const char* write_text(const char* name, const char* text) {
  const char* path = test_path(dir, name);
  test_write_file(path, text, strlen(text));
  return path;
}

static void refused(const char* name, const char* text, ttp_status want, const char* fragment) {
  const char* path = text ? write_text(name, text) : test_path(dir, name);
  ttp_tta t, before;
  ttp_tta_init(&t);
  t.copies = 13;
  before = t;
  char error[512] = "";
  ttp_status s = ttp_read_tta_policy(path, &t, error, sizeof error);
  CHECK(s == want, "%s: status %d, not %d (%s)", name, s, want, error);
  EXPECT_MESSAGE(error, name, fragment);
  CHECK(memcmp(&t, &before, sizeof t) == 0, "%s: the output changed on failure", name);
}

int main(void) {
  dir = test_make_dir();
  char error[512];
  ttp_tta t, d;
  ttp_tta_init(&d);

  const char* full = write_text("full.policy",
                                "# a policy\r\n\r\n  copies = 7  # seven\r\nkeep_original=no\n"
                                "\tshift = 3\ncontrast = 0.5 ,1.5\nbrightness = -0.25, 0.125\n"
                                "noise = 0.0625\nnoise_kind = gaussian\nclamp = no\n"
                                "seed = 18446744073709551615\nmerge = gmean");
  CHECK(ttp_read_tta_policy(full, &t, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(t.copies == 7 && !t.keep_original && t.shift == 3 && t.contrast_min == 0.5f &&
            t.contrast_max == 1.5f && t.brightness_min == -0.25f && t.brightness_max == 0.125f &&
            t.noise == 0.0625f && t.noise_kind == TTP_NOISE_GAUSSIAN && !t.clamp &&
            t.seed == UINT64_MAX && t.merge == TTP_MERGE_GMEAN,
        "the full policy read wrong");
  const char* views = write_text("views.policy", "flip_h = 0.5\nflip_v=0.25\nrotate = 15\n"
                                 "scale = 0.9, 1.1\ntranslate = 0.75\nedge = reflect\n");
  CHECK(ttp_read_tta_policy(views, &t, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(t.flip_h == 0.5f && t.flip_v == 0.25f && t.rotate == 15 && t.scale_min == 0.9f &&
            t.scale_max == 1.1f && t.translate == 0.75f && t.edge == TTP_EDGE_REFLECT &&
            t.copies == d.copies,
        "the views read wrong");
  const char* six = write_text("six.policy", "copies = 6\nviews = none; flip_h; shift 1 0; "
                               "flip_h shift 1 0; shift -1 0; flip_h shift -1 0\n");
  CHECK(ttp_read_tta_policy(six, &t, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(t.copies == 6 && t.view_count == 6 && t.views[3].flip_h && t.views[3].dx == 1 &&
            t.views[4].dx == -1 && !t.views[4].flip_h,
        "airbench's views read wrong");
  const char* airbench = write_text("airbench.policy", "weights = 2, 2, 1, 1, 1, 1\n"
                                    "merge = logits\n");
  CHECK(ttp_read_tta_policy(airbench, &t, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(t.copies == 6 && t.weights[0] == 2 && t.weights[5] == 1 && t.weights[6] == 0 &&
            t.merge == TTP_MERGE_GMEAN, "weights and the logits merge read wrong");
  const char* some = write_text("some.policy", "copies = 3\nmerge = vote\n");
  CHECK(ttp_read_tta_policy(some, &t, error, sizeof error) == TTP_OK, "%s", error);
  ttp_tta want = d;
  want.copies = 3, want.merge = TTP_MERGE_VOTE;
  CHECK(memcmp(&t, &want, sizeof t) == 0, "unset keys did not keep their defaults");
  CHECK(ttp_read_tta_policy(write_text("empty.policy", ""), &t, error, sizeof error) == TTP_OK &&
            memcmp(&t, &d, sizeof t) == 0, "an empty file is not the defaults");

  test_rng rng = {53};
  const char* round = test_path(dir, "round.policy");
  for (int k = 0; k < 200; k++) {
    ttp_tta w;
    ttp_tta_init(&w);
    w.copies = test_int(&rng, 1, 64);
    w.keep_original = test_int(&rng, 0, 1);
    w.shift = test_int(&rng, 0, 16);
    w.contrast_min = (float)test_uniform(&rng, 0, 8);
    w.contrast_max = w.contrast_min + (float)test_uniform(&rng, 0, 8);
    w.brightness_min = (float)test_uniform(&rng, -1, 0);
    w.brightness_max = (float)test_uniform(&rng, 0, 1);
    w.noise = (float)test_uniform(&rng, 0, 1);
    w.noise_kind = test_int(&rng, 0, 1) ? TTP_NOISE_GAUSSIAN : TTP_NOISE_UNIFORM;
    w.clamp = test_int(&rng, 0, 1);
    w.seed = test_rng_next(&rng);
    w.merge = (ttp_merge)test_int(&rng, 0, 3);
    w.temperature = (float)exp(test_uniform(&rng, -4.5, 4.5));
    if (k % 3 == 1) { /* a list of views, in another third */
      w.view_count = w.copies = test_int(&rng, 1, TTP_MAX_VIEWS);
      for (int v = 0; v < w.view_count; v++) {
        ttp_view* view = &w.views[v];
        view->flip_h = test_int(&rng, 0, 1), view->flip_v = test_int(&rng, 0, 1);
        view->rotate = test_int(&rng, 0, 2) ? (float)test_uniform(&rng, -180, 180) : 0.0f;
        view->scale = test_int(&rng, 0, 2) ? (float)test_uniform(&rng, 0.25, 4) : 1.0f;
        view->dx = test_int(&rng, 0, 1) ? (float)test_uniform(&rng, -16, 16) : 0.0f;
        view->dy = test_int(&rng, 0, 1) ? (float)test_uniform(&rng, -16, 16) : 0.0f;
        if (test_int(&rng, 0, 3) == 0) { /* a crop: at a corner or the centre, no turn or zoom */
          const int place = test_int(&rng, 0, 4);
          view->crop = (float)test_uniform(&rng, 0.25, 1);
          view->crop_x = place == 4 ? 0 : place % 2 ? 1 : -1;
          view->crop_y = place == 4 ? 0 : place / 2 ? 1 : -1;
          view->rotate = 0, view->scale = 1;
        }
      }
    }
    if (k % 3 == 2) /* weights, in the last third (0 allowed, not all) */
      for (int c = 0; c < w.copies; c++)
        w.weights[c] = c == 0 || test_int(&rng, 0, 3) ? (float)test_uniform(&rng, 0.01, 5) : 0.0f;
    if (k % 3 == 0) { /* the geometric views, in a third of them */
      w.flip_h = (float)test_uniform(&rng, 0, 1);
      w.flip_v = (float)test_uniform(&rng, 0, 1);
      w.rotate = (float)test_uniform(&rng, 0, 180);
      w.scale_min = (float)test_uniform(&rng, 0.25, 2);
      w.scale_max = w.scale_min + (float)test_uniform(&rng, 0, 2);
      w.translate = (float)test_uniform(&rng, 0, 16);
      w.edge = (ttp_edge)test_int(&rng, 0, 2);
    }
    CHECK(ttp_write_tta_policy(round, &w, k % 2 ? "line one\nline two = 3" : NULL, error,
                               sizeof error) == TTP_OK, "%s", error);
    ttp_tta r;
    CHECK(ttp_read_tta_policy(round, &r, error, sizeof error) == TTP_OK, "policy %d: %s", k,
          error);
    CHECK(memcmp(&r, &w, sizeof r) == 0, "policy %d: read back differs", k);
  }

  static const struct {
    const char *name, *text, *fragment;
  } bad[] = {
      {"unknown.policy", "copies = 5\nwobble = 2\n", "line 2"},
      {"twice.policy", "copies = 5\ncopies = 6\n", "twice"},
      {"noeq.policy", "copies 5\n", "key = value"},
      {"nan.policy", "noise = 0.1x\n", "a number"},
      {"pair.policy", "contrast = 0.9\n", "LOW, HIGH"},
      {"copies.policy", "copies = 65\n", "copies"},
      {"fraction.policy", "copies = 2.5\n", "whole number"},
      {"order.policy", "contrast = 9, 1\n", "contrast"},
      {"noise.policy", "noise = 2\n", "noise"},
      {"kind.policy", "noise_kind = pink\n", "uniform or gaussian"},
      {"merge.policy", "merge = median\n", "mean, vote"},
      {"seed.policy", "seed = -1\n", "seed"},
      {"yes.policy", "clamp = maybe\n", "yes or no"},
      {"cold.policy", "temperature = 0\n", "temperature"},
      {"hot.policy", "temperature = 1e3\n", "temperature"},
      {"warm.policy", "temperature = warm\n", "temperature: a number"},
      {"flip.policy", "flip_h = 2\n", "mirror probabilities"},
      {"turn.policy", "rotate = 190\n", "rotation"},
      {"zoom.policy", "scale = 1.5\n", "LOW, HIGH"},
      {"tiny.policy", "scale = 0.1, 1\n", "scale range"},
      {"slide.policy", "translate = 20\n", "translation"},
      {"edge.policy", "edge = wrap\n", "zero, replicate or reflect"},
      {"list.policy", "views = none; wobble\n", "line 1: view 2: unknown view word"},
      {"count.policy", "copies = 3\nviews = none; flip_h\n", "2 of them, but copies = 3"},
      {"after.policy", "views = none; flip_h\ncopies = 3\n", "must equal the views"},
      {"both.policy", "views = none; flip_h\nrotate = 5\n", "not both"},
      {"weights.policy", "weights = 1, x\n", "weights: numbers"},
      {"wcount.policy", "copies = 3\nweights = 1, 2\n", "weights: 2 of them, but 3 copies"},
      {"wafter.policy", "weights = 1, 2\ncopies = 3\n", "copies = 3, but weights lists 2"},
      {"wviews.policy", "weights = 1, 2\nviews = none\n", "views: 1 of them, but copies = 2"},
      {"wminus.policy", "weights = 1, -1\n", "weight 1 must be 0..1e6"},
      {"wnone.policy", "weights = 0, 0\n", "not all 0"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    refused(bad[k].name, bad[k].text, TTP_ERR_FORMAT, bad[k].fragment);
  const char nul[] = "copies = 5\n\0merge = mean\n";
  test_write_file(test_path(dir, "nul.policy"), nul, sizeof nul - 1);
  refused("nul.policy", NULL, TTP_ERR_FORMAT, "NUL");
  char* big = malloc(70 * 1024 + 1);
  memset(big, '#', 70 * 1024);
  big[70 * 1024] = '\0';
  refused("big.policy", big, TTP_ERR_FORMAT, "larger");
  free(big);
  refused("missing.policy", NULL, TTP_ERR_IO, "cannot open");
  CHECK(ttp_read_tta_policy(dir, &t, error, sizeof error) == TTP_ERR_IO, "a directory: %s", error);
  CHECK(ttp_read_tta_policy(NULL, &t, error, sizeof error) == TTP_ERR_INVALID_ARGUMENT, "NULL");
  test_remove_tree(dir);
  printf("test_policy: policies read, written back, and refused as they should\n");
  return 0;
}
