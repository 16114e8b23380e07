/* The public API's contracts on a generated model: version and status strings, options with
   their struct_size, half-open pipelines, argument checks, and ttp_classify's determinism
   (results independent of the request size, of the image's position, of the chunking inside,
   and of the number of threads). */
#include <math.h>
#include <string.h>

#include "../common/check.h"
#include "../common/fixtures.h"
#include "ttapipe.h"

static ttp_pipeline* open_model(const char* dir, int threads, const ttp_tta* tta) {
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir;
  o.threads = threads;
  o.tta = tta;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  CHECK(ttp_last_error(p)[0] == '\0', "message after a successful open");
  return p;
}

static void test_version_and_status(void) {
  CHECK(ttp_version_number() == TTP_VERSION_NUMBER, "linked %u, header %d", ttp_version_number(),
        TTP_VERSION_NUMBER);
  char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", TTP_VERSION_MAJOR, TTP_VERSION_MINOR, TTP_VERSION_PATCH);
  CHECK(strcmp(ttp_version_string(), v) == 0, "version %s", ttp_version_string());
  CHECK(strstr(ttp_build_string(), v), "build string %s", ttp_build_string());
  /* Every status has its own text; unknown values get one too. */
  for (int s = 0; s <= TTP_ERR_CANCELLED; s++) {
    CHECK(ttp_status_string((ttp_status)s) && strcmp(ttp_status_string((ttp_status)s), "unknown status"),
          "status %d has no text", s);
    for (int t = 0; t < s; t++)
      CHECK(strcmp(ttp_status_string((ttp_status)s), ttp_status_string((ttp_status)t)),
            "statuses %d and %d share a text", s, t);
  }
  CHECK(strcmp(ttp_status_string((ttp_status)999), "unknown status") == 0, "unknown status text");
  /* Each precision's name, and the name back to it; no name for other values. */
  static const char* const precisions[] = {"fp32", "fp16", "tf32"};
  CHECK(TTP_PRECISION_FP32 == 0 && TTP_PRECISION_FP16 == 1 && TTP_PRECISION_TF32 == 2,
        "precision values moved");
  for (int k = 0; k < 3; k++) {
    ttp_precision back = (ttp_precision)7;
    CHECK(ttp_precision_name((ttp_precision)k) &&
              strcmp(ttp_precision_name((ttp_precision)k), precisions[k]) == 0,
          "precision %d is named %s", k, ttp_precision_name((ttp_precision)k));
    CHECK(ttp_precision_from_name(precisions[k], &back) == TTP_OK && back == (ttp_precision)k,
          "%s read back as %d", precisions[k], (int)back);
  }
  ttp_precision kept = TTP_PRECISION_FP16;
  CHECK(!ttp_precision_name((ttp_precision)3) && !ttp_precision_name((ttp_precision)-1),
        "a precision 3 or -1 has a name");
  CHECK(ttp_precision_from_name("bf16", &kept) == TTP_ERR_INVALID_ARGUMENT &&
            ttp_precision_from_name(NULL, &kept) == TTP_ERR_INVALID_ARGUMENT &&
            kept == TTP_PRECISION_FP16,
        "an unknown name was taken");
  CHECK(TTP_OK == 0 && TTP_ERR_INVALID_ARGUMENT == 1 && TTP_ERR_INTERNAL == 10 &&
            TTP_ERR_CANCELLED == 11,
        "status values moved");
  CHECK(ttp_gpu_count() >= 0, "gpu count");
}

static void test_options(const char* dir) {
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(NULL, &p) == TTP_ERR_INVALID_ARGUMENT, "NULL options accepted");
  EXPECT_MESSAGE(ttp_last_error(p), "no options");
  ttp_close(p);
  CHECK(ttp_open(NULL, NULL) == TTP_ERR_INVALID_ARGUMENT, "NULL out accepted");
  ttp_close(NULL);
  CHECK(strlen(ttp_last_error(NULL)) > 0, "no message without a pipeline");

  ttp_options o;
  memset(&o, 0, sizeof o); /* ttp_options_init forgotten */
  o.model_dir = dir;
  CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "struct_size 0 accepted");
  EXPECT_MESSAGE(ttp_last_error(p), "struct_size", "ttp_options_init");
  ttp_close(p);

  /* A caller compiled against an older, shorter ttp_options: the fields it lacks default. */
  ttp_options_init(&o);
  o.model_dir = dir;
  o.threads = 9999; /* beyond the old struct: must be ignored */
  o.struct_size = offsetof(ttp_options, model_dir) + sizeof o.model_dir;
  CHECK(ttp_open(&o, &p) == TTP_OK, "old options refused: %s", ttp_last_error(p));
  ttp_close(p);

  ttp_options_init(&o);
  o.model_dir = dir;
  o.threads = 257;
  CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "threads 257 accepted");
  EXPECT_MESSAGE(ttp_last_error(p), "threads");
  ttp_close(p);
  o.threads = 1;
  o.engine = (ttp_engine)42;
  CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "engine 42 accepted");
  EXPECT_MESSAGE(ttp_last_error(p), "engine 42");
  ttp_close(p);
  ttp_options_init(&o);
  CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "no model dir accepted");
  ttp_close(p);

  /* The GPU engine's options are checked whatever the engine. */
  static const struct {
    int max_batch, slots, precision, device, wait, plan;
    const char* fragment;
  } bad[] = {{0, 3, 0, 0, 0, 0, "max_batch must be 1..65536, not 0"},
             {65537, 3, 0, 0, 0, 0, "max_batch must be 1..65536"},
             {8, 1, 0, 0, 0, 0, "slots must be 2..16, not 1"},
             {8, 17, 0, 0, 0, 0, "slots must be 2..16, not 17"},
             {8, 3, 3, 0, 0, 0, "unknown precision 3"},
             {8, 3, -1, 0, 0, 0, "unknown precision -1"},
             {8, 3, 0, -1, 0, 0, "device -1"},
             {8, 3, 0, 0, 4, 0, "unknown wait 4"},
             {8, 3, 0, 0, -1, 0, "unknown wait -1"},
             {8, 3, 0, 0, 0, 2, "unknown plan 2"},
             {8, 3, 0, 0, 0, -1, "unknown plan -1"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ttp_options_init(&o);
    o.model_dir = dir;
    o.engine = TTP_ENGINE_CPU;
    o.max_batch = bad[i].max_batch, o.slots = bad[i].slots, o.device = bad[i].device;
    o.precision = (ttp_precision)bad[i].precision;
    o.wait = (ttp_wait)bad[i].wait;
    o.plan = (ttp_plan)bad[i].plan;
    CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "accepted: %s", bad[i].fragment);
    EXPECT_MESSAGE(ttp_last_error(p), bad[i].fragment);
    ttp_close(p);
  }
  /* A plan cache path longer than the pipeline keeps is refused; one that fits, "" (none) and
     NULL (the default file) open (the CPU engine reads no cache). */
  {
    static char long_path[5000];
    memset(long_path, 'a', sizeof long_path - 1);
    const char* caches[] = {long_path, "", NULL, "/nonexistent/dir/plans"};
    for (int i = 0; i < 4; i++) {
      ttp_options_init(&o);
      o.model_dir = dir, o.engine = TTP_ENGINE_CPU, o.threads = 1, o.plan_cache = caches[i];
      const ttp_status s = ttp_open(&o, &p);
      CHECK(i == 0 ? s == TTP_ERR_INVALID_ARGUMENT : s == TTP_OK, "plan_cache %d: %s", i,
            ttp_last_error(p));
      if (i == 0) EXPECT_MESSAGE(ttp_last_error(p), "plan_cache: a path of 4999 bytes");
      ttp_close(p);
    }
  }
  /* Without a GPU (or in a CPU-only build) the cudnn engine says so, and auto picks the fast
     CPU engine where the build has it, else the reference. A build without oneDNN says so when
     onednn is named. */
  const int have_onednn = strstr(ttp_build_string(), "oneDNN") != NULL;
  ttp_options_init(&o);
  o.model_dir = dir;
  o.threads = 1;
  if (ttp_gpu_count() == 0) {
    o.engine = TTP_ENGINE_CUDNN;
    CHECK(ttp_open(&o, &p) == TTP_ERR_NO_GPU, "cudnn opened without a GPU");
    EXPECT_MESSAGE(ttp_last_error(p), "GPU");
    ttp_close(p);
    o.engine = TTP_ENGINE_AUTO;
    CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
    EXPECT_MESSAGE(ttp_engine_description(p), have_onednn ? "onednn" : "cpu");
    ttp_close(p);
  }
  if (!have_onednn) {
    o.engine = TTP_ENGINE_ONEDNN;
    CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "onednn opened in a build without it");
    EXPECT_MESSAGE(ttp_last_error(p), "without oneDNN");
    ttp_close(p);
  }
}

static void test_description(const char* dir) {
  ttp_pipeline* p = open_model(dir, 1, NULL);
  const ttp_model_info* m = ttp_model(p);
  CHECK(m && m->classes == 10 && m->layers == 9 && m->input_rows == 28 && m->input_cols == 28 &&
            m->input_channels == 1,
        "model info");
  CHECK(m->parameters == 431080, "parameters %lld", m->parameters);
  CHECK(fabs(m->flops - 2.0 * 2293000) < 0.5, "flops %.0f", m->flops);
  const ttp_layer_info* l = ttp_layer(p, 2);
  CHECK(l && strcmp(l->name, "conv2") == 0 && strcmp(l->kind, "conv") == 0 && l->in_c == 20 &&
            l->out_c == 50 && l->out_h == 8 && l->parameters == 25050,
        "conv2 info");
  CHECK(strcmp(l->detail, "50x20x5x5 stride 1 pad 0") == 0, "conv2 detail %s", l->detail);
  CHECK(!ttp_layer(p, -1) && !ttp_layer(p, 9), "layer index out of range answered");
  CHECK(strcmp(ttp_class_label(p, 7), "7") == 0 && !ttp_class_label(p, 10), "index labels");
  ttp_close(p);
  /* The opening's times: the CPU engine has no CUDA, buffers or graphs; its plan is the engine's
     whole opening. A caller's struct of another size is refused. */
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir, o.engine = TTP_ENGINE_CPU;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  ttp_startup t = {.struct_size = sizeof t, .cuda_s = -1, .buffers_s = -1, .graphs_s = -1};
  CHECK(ttp_get_startup(p, &t) == TTP_OK, "ttp_get_startup");
  CHECK(t.model_s > 0 && t.engine_s > 0 && t.cuda_s == 0 && t.buffers_s == 0 && t.graphs_s == 0 &&
            t.plan_s == t.engine_s,
        "startup: model %g, engine %g, cuda %g, plan %g, buffers %g, graphs %g s", t.model_s,
        t.engine_s, t.cuda_s, t.plan_s, t.buffers_s, t.graphs_s);
  t.struct_size = sizeof t - 1;
  CHECK(ttp_get_startup(p, &t) == TTP_ERR_INVALID_ARGUMENT, "a short ttp_startup accepted");
  ttp_close(p);
}

/* The probabilities of each image, classified in one request of all, must equal those of the
   image alone, at any position, with any thread count, bit for bit; with augmentation too. */
static void test_determinism(const char* dir, const ttp_tta* tta) {
  enum { COUNT = TEST_SIZE(301, 41), PIXELS = 28 * 28, CLASSES = 10 };
  test_rng rng = {31};
  uint8_t* images = malloc((size_t)COUNT * PIXELS);
  for (size_t i = 0; i < (size_t)COUNT * PIXELS; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);
  float* all = malloc(sizeof(float) * COUNT * CLASSES);
  ttp_result* results = malloc(sizeof *results * COUNT);
  test_poison(all, (size_t)COUNT * CLASSES);
  memset(results, 0xff, sizeof *results * COUNT);
  ttp_pipeline* p1 = open_model(dir, 1, tta); /* 1 thread: one range; p3 below cuts three */
  CHECK(ttp_classify(p1, images, COUNT, results, all) == TTP_OK, "%s", ttp_last_error(p1));
  for (int i = 0; i < COUNT; i++) {
    double sum = 0;
    const float* v = all + i * CLASSES;
    for (int k = 0; k < CLASSES; k++) {
      CHECK(v[k] >= 0 && v[k] <= 1, "image %d p%d = %g", i, k, v[k]);
      sum += v[k];
    }
    CHECK(fabs(sum - 1) < 1e-5, "image %d sums to %f", i, sum);
    /* The class holds the largest probability (a vote's tie may pick any of the largest). */
    int best = results[i].class_index;
    CHECK(best >= 0 && best < CLASSES && results[i].probability == v[best], "image %d: result %d "
          "%f disagrees with its probabilities", i, best, results[i].probability);
    for (int k = 0; k < CLASSES; k++)
      CHECK(v[k] < v[best] || (v[k] == v[best] && (k >= best || (tta && tta->merge == TTP_MERGE_VOTE))),
            "image %d: class %d beats the result's %d", i, k, best);
    CHECK((results[i].spread == 0.0f) == (!tta || tta->copies == 1), "image %d: spread %g", i,
          results[i].spread);
  }
  ttp_pipeline* p3 = open_model(dir, 3, tta);
  float one[CLASSES];
  ttp_result r;
  for (int i = 0; i < COUNT; i += 7) {
    test_poison(one, CLASSES);
    CHECK(ttp_classify(p3, images + (size_t)i * PIXELS, 1, &r, one) == TTP_OK, "alone");
    CHECK(memcmp(one, all + i * CLASSES, sizeof one) == 0, "image %d alone differs", i);
  }
  /* The images shuffled, results without probabilities. */
  int order[COUNT];
  for (int i = 0; i < COUNT; i++) order[i] = i;
  for (int i = COUNT - 1; i > 0; i--) {
    int j = test_int(&rng, 0, i), t = order[i];
    order[i] = order[j], order[j] = t;
  }
  uint8_t* shuffled = malloc((size_t)COUNT * PIXELS);
  for (int i = 0; i < COUNT; i++)
    memcpy(shuffled + (size_t)i * PIXELS, images + (size_t)order[i] * PIXELS, PIXELS);
  ttp_result* back = malloc(sizeof *back * COUNT);
  CHECK(ttp_classify(p3, shuffled, COUNT, back, NULL) == TTP_OK, "shuffled");
  for (int i = 0; i < COUNT; i++)
    CHECK(back[i].class_index == results[order[i]].class_index &&
              back[i].probability == results[order[i]].probability &&
              back[i].spread == results[order[i]].spread,
          "image %d shuffled to %d differs", order[i], i);

  /* Augmentation changes the answers: against the plain ones, most probabilities differ. */
  if (tta && tta->copies > 1) {
    ttp_pipeline* plain = open_model(dir, 2, NULL);
    float* probs = malloc(sizeof(float) * COUNT * CLASSES);
    CHECK(ttp_classify(plain, images, COUNT, back, probs) == TTP_OK, "plain");
    size_t same = 0;
    for (size_t i = 0; i < (size_t)COUNT * CLASSES; i++) same += probs[i] == all[i];
    CHECK(same < (size_t)COUNT * CLASSES / 10, "%zu of %d probabilities unchanged by TTA", same,
          COUNT * CLASSES);
    free(probs);
    ttp_close(plain);
  }

  CHECK(ttp_classify(p3, images, 0, NULL, NULL) == TTP_OK, "count 0 refused");
  CHECK(ttp_classify(p3, NULL, 1, &r, NULL) == TTP_ERR_INVALID_ARGUMENT, "NULL images accepted");
  EXPECT_MESSAGE(ttp_last_error(p3), "images and results are required");
  CHECK(ttp_classify(p3, images, 1, &r, NULL) == TTP_OK && ttp_last_error(p3)[0] == '\0',
        "the error outlived a good call");
  CHECK(ttp_classify(NULL, images, 1, &r, NULL) == TTP_ERR_INVALID_ARGUMENT, "NULL pipeline");
  ttp_close(p1);
  ttp_close(p3);
  free(images), free(all), free(results), free(shuffled), free(back);
}

/* TTA settings reach ttp_open's checks, and an older, shorter ttp_tta gets defaults. */
static void test_tta_options(const char* dir) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 65;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir;
  o.tta = &tta;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_ERR_INVALID_ARGUMENT, "65 copies accepted");
  EXPECT_MESSAGE(ttp_last_error(p), "copies must be 1..64, not 65");
  ttp_close(p);
  /* The options of a caller compiled before the tta field: tta is ignored, not read. */
  ttp_options_init(&o);
  o.model_dir = dir;
  o.tta = (const ttp_tta*)16; /* would crash if read */
  o.struct_size = offsetof(ttp_options, tta);
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  ttp_close(p);
}

int main(void) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", test_make_dir());
  fixture_model_dir(dir, 3);
  test_version_and_status();
  test_options(dir);
  test_description(dir);
  test_determinism(dir, NULL);
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = 5;
  test_determinism(dir, &tta);
  tta.copies = 7, tta.noise_kind = TTP_NOISE_GAUSSIAN, tta.merge = TTP_MERGE_VOTE, tta.seed = 99;
  tta.keep_original = 0;
  test_determinism(dir, &tta);
  /* One copy kept as it is: exactly the plain pipeline. */
  tta.copies = 1, tta.keep_original = 1, tta.merge = TTP_MERGE_MEAN;
  test_determinism(dir, &tta);
  test_tta_options(dir);
  test_remove_tree(dir);
  printf("api: contracts hold\n");
  return 0;
}
