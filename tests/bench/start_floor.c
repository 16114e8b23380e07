/* What any process that classifies on this GPU with cuDNN pays before its first batch, measured
   step by step in a fresh process (issue 42's probe): the floor beside which ttapipe's own start
   (ttp_get_startup, `--verbose`) is judged on the same machine.

     cuInit          the driver's start (the runtime's first call, counting the devices)
     context         device 0's primary context (cudaFree(0) on it)
     pinned          64 MiB of pinned host memory (cudaHostAlloc)
     cudnn           cuDNN loaded (as the cudnn engine loads it: dnn_libs.h) and one handle
     cublaslt        cuBLASLt loaded (dlopen) and one handle: part of the floor as issue 42
                     defines it, though ttapipe no longer uses cuBLASLt (fc_kernel.h); the total
                     without it is the last line

   bench_start_floor [--json]   one line per step in ms, the total and the total without
                                cuBLASLt (or one JSON object)
   Exits 77 where there is no GPU (ctest, label gpu: each step must have taken time). */
#include <cublasLt.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pipeline/cudnn/dnn_libs.h"
#include "tests/common/check_cuda.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  const int json = argc > 1 && strcmp(argv[1], "--json") == 0;
  enum { STEPS = 5 };
  const char* names[STEPS] = {"cuInit", "context", "pinned", "cudnn", "cublaslt"};
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
  cudnnHandle_t dnn;
  CHECK(gpu_libs.cudnnCreate(&dnn) == CUDNN_STATUS_SUCCESS, "a cuDNN handle failed");
  ms[3] = 1e3 * (now() - at), at = now();
  void* lt_library = dlopen("libcublasLt.so." STRINGIFY(CUBLAS_VER_MAJOR), RTLD_NOW | RTLD_LOCAL);
  CHECK(lt_library, "cannot load cuBLASLt: %s", dlerror());
  cublasStatus_t (*lt_create)(cublasLtHandle_t*) = NULL;
  cublasStatus_t (*lt_destroy)(cublasLtHandle_t) = NULL;
  *(void**)&lt_create = dlsym(lt_library, "cublasLtCreate");
  *(void**)&lt_destroy = dlsym(lt_library, "cublasLtDestroy");
  cublasLtHandle_t lt;
  CHECK(lt_create && lt_destroy && lt_create(&lt) == CUBLAS_STATUS_SUCCESS,
        "a cuBLASLt handle failed");
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
    printf("\"total_ms\": %.3f, \"total_without_cublaslt_ms\": %.3f}\n", total, total - ms[4]);
  } else {
    for (int i = 0; i < STEPS; i++) printf("%-10s %9.3f ms\n", names[i], ms[i]);
    printf("%-10s %9.3f ms\n", "total", total);
    printf("%-10s %9.3f ms\n", "no-lt", total - ms[4]);
  }
  lt_destroy(lt);
  gpu_libs.cudnnDestroy(dnn);
  cudaFreeHost(pinned);
  if (failed) fprintf(stderr, "bench_start_floor: a step took no time\n");
  return failed;
}
