/* The naive baseline: the cudnn engine's own layers driven the way NVIDIA's mnistCUDNN sample
   drives them, one image at a time: for each layer its output cudaMalloc'ed, the layer launched
   eagerly, the stream synchronised, its input freed; the image copied in and its record out with
   plain cudaMemcpy. The same augmentation, layers (planned by cudnn_network for a batch of one
   image) and merge as ttapipe, so that the gain of batching, the ring and graphs is measured, not
   claimed (BENCHMARKS.md). A benchmark, not an engine: ttp_open refuses value 3, which it was.

   Each point: --seconds, half on latency (calls of one batch of B images, one after another),
   half on throughput; printed like `ttapipe bench` and written to --json in its format, engine
   "naive", so that tests/bench/table.py reads both.
   Usage: bench_naive --model DIR [--precision fp32|fp16] [--batch LIST] [--tta N] [--seconds S]
                      [--warmup N] [--device D] [--json FILE] */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment/merge_kernel.h"
#include "augment/tta.h"
#include "augment/tta_kernel.h"
#include "model/mnistcudnn.h"
#include "pipeline/clock.h"
#include "pipeline/cudnn/cudnn_engine.h"
#include "pipeline/cudnn/cudnn_kernels.h"
#include "tests/common/args.h"
#include "tests/common/check_cuda.h"

static void* fresh(size_t bytes) {
  void* p = NULL;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

/* One image, the sample's way. */
static void naive_image(cudnn_net* g, const uint8_t* image, unsigned char* record) {
  const model* m = g->m;
  cudaStream_t st = g->ctx.stream;
  size_t rows = (size_t)g->cfg.spec.copies, pixels = model_shape_size(m->input);
  size_t record_size = aug_merge_record_size(m->classes);
  ttp_err e = {0};
  void* dev_image = fresh(pixels);
  void* in = fresh(rows * pixels * g->ctx.elem);
  CHECK_CUDA(cudaMemcpy(dev_image, image, pixels, cudaMemcpyHostToDevice));
  CHECK(aug_launch(&g->cfg.spec, dev_image, 1, m->input.c, m->input.h, m->input.w,
                   g->ctx.half ? AUG_OUT_HALF : AUG_OUT_FLOAT, in, st, &e) == TTP_OK, "%s",
        e.message);
  CHECK_CUDA(cudaStreamSynchronize(st));
  for (int i = 0; i < m->layer_count; i++) {
    if (g->layers[i].skip || g->layers[i].folded) continue; /* folded: in the next one's kernel */
    void* out = fresh(rows * model_shape_size(m->layers[i].out) * g->ctx.elem);
    const void* x[1] = {in}; /* a chain: each layer reads the one before */
    CHECK(gpu_layer_enqueue(&g->ctx, &g->layers[i], 0, x, out, &e) == TTP_OK, "%s", e.message);
    CHECK_CUDA(cudaStreamSynchronize(st));
    CHECK_CUDA(cudaFree(in));
    in = out;
  }
  if (g->ctx.half) {
    void* out = fresh(rows * m->classes * sizeof(float));
    CHECK(gpu_to_float(in, out, rows * m->classes, st, &e) == TTP_OK, "%s", e.message);
    CHECK_CUDA(cudaFree(in));
    in = out;
  }
  void* dev_record = fresh(record_size);
  CHECK(aug_merge_launch(g->cfg.merge, aug_spec_weights(&g->cfg.spec), in, 1,
                         g->cfg.spec.copies, m->classes, dev_record, st, &e) == TTP_OK,
        "%s", e.message);
  CHECK_CUDA(cudaStreamSynchronize(st));
  CHECK_CUDA(cudaMemcpy(record, dev_record, record_size, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(dev_image));
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(dev_record));
}

int main(int argc, char** argv) {
  const char* dir = bench_arg(argc, argv, "--model", NULL);
  CHECK(dir, "usage: %s --model DIR [--precision fp32|fp16] [--batch LIST] [--tta N] "
        "[--seconds S] [--warmup N] [--device D] [--json FILE]", argv[0]);
  int half = strcmp(bench_arg(argc, argv, "--precision", "fp32"), "fp16") == 0;
  int copies = atoi(bench_arg(argc, argv, "--tta", "5")), warmup = atoi(bench_arg(argc, argv, "--warmup", "1"));
  int device = atoi(bench_arg(argc, argv, "--device", "0"));
  double seconds = atof(bench_arg(argc, argv, "--seconds", "1"));
  const char* json = bench_arg(argc, argv, "--json", NULL);
  int count;
  CHECK(cudaGetDeviceCount(&count) == cudaSuccess && count > device, "no CUDA device %d", device);
  CHECK_CUDA(cudaSetDevice(device));

  ttp_err e = {0};
  model* m = NULL;
  CHECK(io_load_mnistcudnn(dir, &m, &e) == TTP_OK, "%s", e.message);
  ttp_tta tta;
  ttp_tta_init(&tta);
  tta.copies = copies;
  engine_config c = {.device = device, .choice_device = device, .max_batch = 1, .slots = 2,
                     .precision = half ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32};
  CHECK(aug_spec_from(&tta, &c.spec, &c.merge, NULL, &e) == TTP_OK, "%s", e.message);
  gpu_buckets one = {1, {1}};
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* state = NULL;
  CHECK(cudnn_network.plan(m, &c, &one, stream, &state, &e) == TTP_OK, "%s", e.message);
  cudnn_net* g = state;
  struct cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));

  enum { POOL = 4096 };
  uint8_t* images = malloc((size_t)POOL * 784);
  unsigned char record[4096];
  CHECK(images && aug_merge_record_size(m->classes) <= sizeof record, "out of memory");
  test_rng rng = {0x9e3779b97f4a7c15ull};
  for (size_t i = 0; i < (size_t)POOL * 784; i++) images[i] = (uint8_t)test_int(&rng, 0, 255);

  FILE* out = json ? fopen(json, "w") : NULL;
  CHECK(!json || out, "cannot create %s", json);
  if (out)
    fprintf(out, "{\n  \"build\": \"bench_naive (tests/bench/naive.c)\", \"date\": \"\", "
            "\"mode\": \"e2e\", \"images\": \"random\",\n  \"gpu\": {\"name\": \"%s\"},\n"
            "  \"points\": [", prop.name);
  printf("# naive baseline on %s, %s, N = %d\n", prop.name, half ? "fp16" : "fp32", copies);
  printf("%-6s %-5s %6s %3s %12s %9s %9s %9s %9s\n", "engine", "prec", "batch", "N", "images/s",
         "p50 ms", "p90 ms", "p99 ms", "p99.9 ms");
  char list[256];
  snprintf(list, sizeof list, "%s", bench_arg(argc, argv, "--batch", "1,64,1024"));
  int first = 1;
  for (char* item = strtok(list, ","); item; item = strtok(NULL, ",")) {
    int batch = atoi(item);
    CHECK(batch >= 1 && batch <= POOL, "--batch: 1..%d, not %s", POOL, item);
    for (int w = 0; w < warmup; w++) naive_image(g, images, record);
    /* latency: calls of one batch; throughput: the same, timed as a whole */
    size_t cap = 1 << 14, n = 0, offset = 0, done = 0;
    double* lat = malloc(cap * sizeof *lat);
    for (int phase = 0; phase < 2; phase++) {
      double start = clock_seconds();
      for (;;) {
        double elapsed = clock_seconds() - start;
        if (phase == 0 && (n >= cap || (n >= 3 && elapsed >= seconds / 2))) break;
        if (phase == 1 && done > 0 && elapsed >= seconds / 2) break;
        if (offset + (size_t)batch > POOL) offset = 0;
        double t = clock_seconds();
        for (int i = 0; i < batch; i++) naive_image(g, images + (offset + i) * 784, record);
        if (phase == 0) lat[n++] = 1e3 * (clock_seconds() - t);
        else done += (size_t)batch;
        offset += (size_t)batch;
      }
      if (phase == 1) {
        double rate = done / (clock_seconds() - start);
        double p50 = test_quantile(lat, n, 0.5), p90 = test_quantile(lat, n, 0.9);
        double p99 = test_quantile(lat, n, 0.99), p999 = test_quantile(lat, n, 0.999);
        printf("%-6s %-5s %6d %3d %12.0f %9.3f %9.3f %9.3f %9.3f\n", "naive",
               half ? "fp16" : "fp32", batch, copies, rate, p50, p90, p99, p999);
        if (out)
          fprintf(out, "%s\n    {\"engine\": \"naive\", \"precision\": \"%s\", \"graph\": \"-\", "
                  "\"batch\": %d, \"copies\": %d, \"images_per_s\": %.1f, \"copies_per_s\": %.1f, "
                  "\"latency_ms\": {\"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f, "
                  "\"p99.9\": %.4f}}",
                  first ? "" : ",", half ? "fp16" : "fp32", batch, copies, rate, rate * copies,
                  p50, p90, p99, p999);
        first = 0;
      }
    }
    free(lat);
  }
  if (out) {
    fprintf(out, "\n  ]\n}\n");
    CHECK(fclose(out) == 0, "writing %s failed", json);
  }
  cudnn_network.destroy(state);
  CHECK_CUDA(cudaStreamDestroy(stream));
  model_free(m);
  free(images);
  return 0;
}
