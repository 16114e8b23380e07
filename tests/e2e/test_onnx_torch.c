/* Models exported by PyTorch (tests/onnx/export_models.py and datasets/train.py; the files and
   PyTorch's own float64 outputs are committed, so no PyTorch is needed here) through ttapipe:

   - cpu: each network's 7 random images (tests/onnx/NAME.images.idx) give PyTorch's softmax
     (NAME.expected, float64) within 1e-5 on the CPU engine; and the ONNX export of lenet-mnist
     gives the same classes, and probabilities within 1e-6, as its .bin directory on the 2,000
     held-out MNIST images (t10k 8000..9999; the first 400 of them in the sanitized build). The onednn engine (where built) within 1e-5 of the
     CPU engine, with one copy and with five. ResNet-20's planned activations: at most a
     quarter of its tensors' sum. The graph networks (residual, depthwise, dense, the zoo; also
     as PyTorch 2.11's torch.export-based exporter writes them, tests/onnx/torch2-dynamo).
   - gpu: every network on the cudnn engine, within 1e-4 of PyTorch in fp32 and 1e-2 in fp16;
     `auto` takes the fused engine for the LeNet and the cudnn engine for every other network,
     graphs included; and with five augmented copies (RGB: three planes moved alike, noise per
     channel, the model's scaling) the cudnn engine agrees with the CPU engine within 1e-4 in
     fp32 and 1e-2 in fp16, as does the fused engine (fp32) on the LeNet with a scaling given
     (MNIST's mean and std). Exits 77 without a GPU.

   The sanitized build (TEST_FULL 0) leaves out the torch2-dynamo files and onednn's one copy.
   Outputs are poisoned before every run.
   Usage: test_onnx_torch ONNX_DIR MODELS_DIR MNIST_DIR cpu|gpu */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

enum { CLASSES = 10, MAX_IMAGES = 64 };

typedef struct net {
  const char* name;
  const char* model; /* relative to ONNX_DIR, or to MODELS_DIR with from_models */
  int from_models;
} net;

static const net nets[] = {
    {"lenet-mnist", "lenet-mnist/model.onnx", 1},
    {"lenet-bn-avg", "lenet-bn-avg.onnx", 0},
    {"rgb-stride", "rgb-stride.onnx", 0},
    {"mlp-sigmoid", "mlp-sigmoid.onnx", 0},
    {"resnet20", "resnet20.onnx", 0},
    {"resnet-option-a", "resnet-option-a.onnx", 0},
    {"mobilenetv2", "mobilenetv2.onnx", 0},
    {"densenet", "densenet.onnx", 0},
    {"zoo", "zoo.onnx", 0},
    /* PyTorch 2.11's torch.export-based exporter (opset 18): the same networks, other graphs. */
    {"torch2-dynamo/resnet20", "torch2-dynamo/resnet20.onnx", 0},
    {"torch2-dynamo/resnet-option-a", "torch2-dynamo/resnet-option-a.onnx", 0},
    {"torch2-dynamo/mobilenetv2", "torch2-dynamo/mobilenetv2.onnx", 0},
    {"torch2-dynamo/densenet", "torch2-dynamo/densenet.onnx", 0},
};

/* NAME.expected: '#' comments, then one line of CLASSES numbers an image. */
static size_t read_expected(const char* path, double want[MAX_IMAGES][CLASSES]) {
  FILE* f = fopen(path, "r");
  CHECK(f, "cannot open %s", path);
  char line[4096];
  size_t rows = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    CHECK(rows < MAX_IMAGES, "%s: more than %d rows", path, MAX_IMAGES);
    char* s = line;
    for (int k = 0; k < CLASSES; k++) {
      char* end;
      want[rows][k] = strtod(s, &end);
      CHECK(end != s && (*end == ',' || k == CLASSES - 1), "%s: row %zu, value %d", path, rows, k);
      s = end + 1;
    }
    rows++;
  }
  fclose(f);
  return rows;
}

/* scaled: MNIST's mean and standard deviation as the input scaling (ttp_options.normalize). */
static ttp_pipeline* open_scaled(const char* path, ttp_engine engine, ttp_precision precision,
                                 int copies, int scaled) {
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = copies;
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = path, o.engine = engine, o.precision = precision, o.tta = &tta;
  o.normalize = scaled;
  for (int c = 0; c < 3; c++) o.mean[c] = 0.1307f, o.std[c] = 0.3081f;
  o.max_batch = 64, o.threads = 2, o.plan = TTP_PLAN_HEURISTIC;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s: %s", path, ttp_last_error(p));
  return p;
}

static ttp_pipeline* open_model(const char* path, ttp_engine engine, ttp_precision precision,
                                int copies) {
  return open_scaled(path, engine, precision, copies, 0);
}

/* probs (count x CLASSES) of the images on p, poisoned first. */
static void classify(ttp_pipeline* p, const ttp_images* im, float* probs) {
  ttp_result results[MAX_IMAGES];
  memset(results, 0xa5, sizeof results);
  test_poison(probs, im->count * CLASSES);
  CHECK(ttp_classify(p, im->pixels, im->count, results, probs) == TTP_OK, "%s",
        ttp_last_error(p));
  for (size_t i = 0; i < im->count; i++) {
    int best = 0;
    for (int k = 1; k < CLASSES; k++)
      if (probs[i * CLASSES + k] > probs[i * CLASSES + best]) best = k;
    CHECK(results[i].class_index == best, "image %zu: class %d, its probabilities' best %d", i,
          results[i].class_index, best);
  }
}

/* The largest |got - want| over count images; checked against tol. */
static double compare(const char* what, const float* got, const double* want, size_t count,
                      double tol) {
  double worst = 0;
  for (size_t i = 0; i < count * CLASSES; i++) {
    const double d = fabs(got[i] - want[i]);
    CHECK(d <= tol, "%s: image %zu class %zu: %.9g, want %.9g (tolerance %g)", what,
          i / CLASSES, i % CLASSES, got[i], want[i], tol);
    if (d > worst) worst = d;
  }
  printf("  %-44s max |diff| %.3g (tolerance %g)\n", what, worst, tol);
  return worst;
}

static void check_net(const net* n, const char* onnx_dir, const char* models_dir, int gpu) {
  char path[2048], model[2048], what[128], error[TTP_ERROR_SIZE];
  snprintf(model, sizeof model, "%s/%s", n->from_models ? models_dir : onnx_dir, n->model);
  snprintf(path, sizeof path, "%s/%s.images.idx", onnx_dir, n->name);
  ttp_images im;
  CHECK(ttp_read_idx_images(path, &im, error, sizeof error) == TTP_OK, "%s", error);
  CHECK(im.count <= MAX_IMAGES, "%s: %zu images", path, im.count);
  double want[MAX_IMAGES][CLASSES];
  snprintf(path, sizeof path, "%s/%s.expected", onnx_dir, n->name);
  CHECK(read_expected(path, want) == im.count, "%s: not one row an image", path);
  float probs[MAX_IMAGES * CLASSES], reference[MAX_IMAGES * CLASSES];
  printf("%s (%zu images of %dx%dx%d):\n", n->name, im.count, im.channels, im.rows, im.cols);

  ttp_pipeline* p = open_model(model, TTP_ENGINE_CPU, TTP_PRECISION_FP32, 1);
  const ttp_model_info* info = ttp_model(p);
  CHECK(info->input_channels == im.channels && info->input_rows == im.rows &&
            info->input_cols == im.cols, "%s: the model takes %dx%dx%d", n->name,
        info->input_channels, info->input_rows, info->input_cols);
  classify(p, &im, probs);
  snprintf(what, sizeof what, "cpu against PyTorch float64");
  compare(what, probs, &want[0][0], im.count, 1e-5);
  if (strcmp(n->name, "resnet20") == 0) { /* the lifetime plan: a quarter of the sum at most */
    CHECK(info->activation_bytes <= 0.25 * info->activation_sum_bytes, "resnet20: activations "
          "%.0f bytes of %.0f", info->activation_bytes, info->activation_sum_bytes);
    printf("  activations planned: %.1f KB a copy, %.1f%% of the %.1f KB of all its tensors\n",
           info->activation_bytes / 1024, 100 * info->activation_bytes / info->activation_sum_bytes,
           info->activation_sum_bytes / 1024);
  }
  ttp_close(p);

  /* The onednn engine against the CPU engine, one copy and five. */
  for (int copies = TEST_FULL ? 1 : 5; !gpu && copies <= 5; copies += 4) {
    ttp_tta tta;
    ttp_tta_init(&tta);
    tta.copies = copies;
    ttp_pipeline* q = fixture_open_if_built(model, TTP_ENGINE_ONEDNN, &tta);
    if (!q) {
      printf("  onednn: not built\n");
      break;
    }
    p = open_model(model, TTP_ENGINE_CPU, TTP_PRECISION_FP32, copies);
    classify(p, &im, reference);
    ttp_close(p);
    double ref[MAX_IMAGES * CLASSES];
    for (size_t i = 0; i < im.count * CLASSES; i++) ref[i] = reference[i];
    classify(q, &im, probs);
    snprintf(what, sizeof what, "onednn, %d cop%s, against the cpu", copies, copies == 1 ? "y" : "ies");
    compare(what, probs, ref, im.count, 1e-5);
    ttp_close(q);
  }
  /* fp32 within 1e-4; fp16 and tf32 (10 bits of mantissa in the products) within 1e-2. */
  static const ttp_precision precisions[] = {TTP_PRECISION_FP32, TTP_PRECISION_FP16,
                                             TTP_PRECISION_TF32};
  for (int k = 0; gpu && k < 3; k++) {
    p = open_model(model, TTP_ENGINE_CUDNN, precisions[k], 1);
    classify(p, &im, probs);
    snprintf(what, sizeof what, "cudnn %s against PyTorch float64", ttp_precision_name(precisions[k]));
    compare(what, probs, &want[0][0], im.count, k ? 1e-2 : 1e-4);
    ttp_close(p);
  }
  if (gpu) {
    /* auto: the fused engine for LeNet's shape only, cudnn for the others. */
    p = open_model(model, TTP_ENGINE_AUTO, TTP_PRECISION_FP32, 1);
    const char* d = ttp_engine_description(p);
    const int lenet = strcmp(n->name, "lenet-mnist") == 0;
    CHECK(strncmp(d, lenet ? "fused" : "cudnn", 5) == 0, "%s: auto opened '%s'", n->name, d);
    printf("  auto: %.60s...\n", d);
    ttp_close(p);
    /* Five augmented copies: the GPU's copies (and merge) against the CPU's. */
    p = open_model(model, TTP_ENGINE_CPU, TTP_PRECISION_FP32, 5);
    classify(p, &im, reference);
    ttp_close(p);
    double ref[MAX_IMAGES * CLASSES];
    for (size_t i = 0; i < im.count * CLASSES; i++) ref[i] = reference[i];
    for (int k = 0; k < 3; k++) {
      p = open_model(model, TTP_ENGINE_CUDNN, precisions[k], 5);
      classify(p, &im, probs);
      snprintf(what, sizeof what, "cudnn %s, 5 copies, against the cpu",
               ttp_precision_name(precisions[k]));
      compare(what, probs, ref, im.count, k ? 1e-2 : 1e-4);
      ttp_close(p);
    }
    /* The fused engine scales inside its augmentation: with a scaling given, against the CPU. */
    if (lenet) {
      p = open_scaled(model, TTP_ENGINE_CPU, TTP_PRECISION_FP32, 5, 1);
      classify(p, &im, reference);
      ttp_close(p);
      for (size_t i = 0; i < im.count * CLASSES; i++) ref[i] = reference[i];
      p = open_scaled(model, TTP_ENGINE_FUSED, TTP_PRECISION_FP32, 5, 1);
      classify(p, &im, probs);
      compare("fused fp32, 5 copies, scaled, against the cpu", probs, ref, im.count, 1e-4);
      ttp_close(p);
    }
  }
  ttp_free(im.pixels);
}

/* lenet-mnist: its ONNX export and its .bin directory on the held-out images. */
static void check_export(const char* models_dir, const char* mnist) {
  char path[2048], dir[2048], error[TTP_ERROR_SIZE];
  snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", mnist);
  struct stat st;
  if (stat(path, &st) != 0) {
    printf("lenet-mnist export against its directory: skipped, no MNIST at %s\n", mnist);
    return;
  }
  ttp_images im;
  CHECK(ttp_read_idx_images(path, &im, error, sizeof error) == TTP_OK, "%s", error);
  enum { FIRST = 8000, COUNT = TEST_SIZE(2000, 400) };
  CHECK(im.count >= FIRST + COUNT, "%s: %zu images", path, im.count);
  float* a = malloc(sizeof(float) * COUNT * CLASSES);
  float* b = malloc(sizeof(float) * COUNT * CLASSES);
  ttp_result* ra = malloc(sizeof *ra * COUNT);
  ttp_result* rb = malloc(sizeof *rb * COUNT);
  CHECK(a && b && ra && rb, "out of memory");
  snprintf(dir, sizeof dir, "%s/lenet-mnist", models_dir);
  snprintf(path, sizeof path, "%s/lenet-mnist/model.onnx", models_dir);
  const char* models[2] = {dir, path};
  for (int m = 0; m < 2; m++) {
    ttp_pipeline* p = open_model(models[m], TTP_ENGINE_CPU, TTP_PRECISION_FP32, 1);
    test_poison(m ? b : a, (size_t)COUNT * CLASSES);
    memset(m ? rb : ra, 0xa5, sizeof *ra * COUNT);
    CHECK(ttp_classify(p, im.pixels + (size_t)FIRST * 784, COUNT, m ? rb : ra, m ? b : a) ==
              TTP_OK, "%s", ttp_last_error(p));
    ttp_close(p);
  }
  double worst = 0;
  for (size_t i = 0; i < COUNT; i++) {
    CHECK(ra[i].class_index == rb[i].class_index, "image %zu: class %d from the directory, %d "
          "from the ONNX file", FIRST + i, ra[i].class_index, rb[i].class_index);
    for (int k = 0; k < CLASSES; k++) {
      const double d = fabs((double)a[i * CLASSES + k] - b[i * CLASSES + k]);
      CHECK(d <= 1e-6, "image %zu class %d: %.9g from the directory, %.9g from the ONNX file",
            FIRST + i, k, a[i * CLASSES + k], b[i * CLASSES + k]);
      if (d > worst) worst = d;
    }
  }
  printf("lenet-mnist's ONNX export against its directory, MNIST t10k %d..%d: the same classes, "
         "max |diff| %.3g (tolerance 1e-6)\n", FIRST, FIRST + COUNT - 1, worst);
  free(a), free(b), free(ra), free(rb);
  ttp_free(im.pixels);
}

int main(int argc, char** argv) {
  CHECK(argc == 5, "usage: test_onnx_torch ONNX_DIR MODELS_DIR MNIST_DIR cpu|gpu");
  const int gpu = strcmp(argv[4], "gpu") == 0;
  if (gpu && ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  for (size_t i = 0; i < sizeof nets / sizeof *nets; i++) {
    /* The sanitized build (small) skips the second exporter's files: the same networks. */
    if (!TEST_FULL && strncmp(nets[i].name, "torch2-", 7) == 0) continue;
    check_net(&nets[i], argv[1], argv[2], gpu);
  }
  if (!gpu) check_export(argv[2], argv[3]);
  printf("onnx from PyTorch: every network within tolerance of PyTorch%s\n",
         gpu ? " on the GPU" : "");
  return 0;
}
