/* What any process that classifies on this GPU with cuDNN pays before its first batch, measured
   step by step in a fresh process (issue 42's probe): the floor beside which ttapipe's own start
   (ttp_get_startup, `--verbose`) is judged on the same machine.

     cuInit          the driver's start (the runtime's first call, counting the devices)
     context         device 0's primary context (cudaFree(0) on it)
     pinned          64 MiB of pinned host memory (cudaHostAlloc)
     libraries       cuDNN and cuBLASLt loaded (as the cudnn engine loads them: dnn_libs.h)
     handles         one cuDNN handle and one cuBLASLt handle

   bench_start_floor [--json]   one line per step in ms, and the total (or one JSON object)
   Exits 77 where there is no GPU (ctest, label gpu: each step must have taken time). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pipeline/cudnn/dnn_libs.h"
#include "tests/common/check_cuda.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  const int json = argc > 1 && strcmp(argv[1], "--json") == 0;
  enum { STEPS = 5 };
  const char* names[STEPS] = {"cuInit", "context", "pinned", "libraries", "handles"};
  double ms[STEPS], at = now();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  ms[0] = 1e3 * (now() - at), at = now();
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaFree(0));
  ms[1] = 1e3 * (now() - at), at = now();
  void* pinned = NULL;
  CHECK_CUDA(cudaHostAlloc(&pinned, (size_t)64 << 20, cudaHostAllocDefault));
  ms[2] = 1e3 * (now() - at), at = now();
  ttp_err e = {0};
  CHECK(dnn_libs_load(&e) == TTP_OK, "%s", e.message);
  ms[3] = 1e3 * (now() - at), at = now();
  cudnnHandle_t dnn;
  cublasLtHandle_t lt;
  CHECK(gpu_libs.cudnnCreate(&dnn) == CUDNN_STATUS_SUCCESS &&
            gpu_libs.cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS,
        "a cuDNN or cuBLASLt handle failed");
  ms[4] = 1e3 * (now() - at);
  double total = 0;
  int failed = 0;
  for (int i = 0; i < STEPS; i++) {
    total += ms[i];
    failed |= !(ms[i] > 0);
  }
  if (json) {
    printf("{");
    for (int i = 0; i < STEPS; i++) printf("\"%s_ms\": %.3f, ", names[i], ms[i]);
    printf("\"total_ms\": %.3f}\n", total);
  } else {
    for (int i = 0; i < STEPS; i++) printf("%-10s %9.3f ms\n", names[i], ms[i]);
    printf("%-10s %9.3f ms\n", "total", total);
  }
  gpu_libs.cublasLtDestroy(lt);
  gpu_libs.cudnnDestroy(dnn);
  cudaFreeHost(pinned);
  if (failed) fprintf(stderr, "bench_start_floor: a step took no time\n");
  return failed;
}
