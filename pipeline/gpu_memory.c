/* Device and pinned allocations at open, refused with the sizes: see cuda_check.h. */
#include <stdio.h>

#include "cuda_check.h"

/* bytes as "512 KiB", "1.5 MiB", "79.2 GiB". */
static void size_text(size_t bytes, char* out, size_t size) {
  static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, u++;
  if (u == 0)
    snprintf(out, size, "%zu bytes", bytes);
  else
    snprintf(out, size, "%.*f %s", v < 10 ? 1 : 0, v, units[u]);
}

ttp_status gpu_alloc(void** p, size_t bytes, const char* what, ttp_err* e) {
  *p = NULL;
  const cudaError_t err = cudaMalloc(p, bytes);
  if (err == cudaSuccess) return TTP_OK;
  if (err != cudaErrorMemoryAllocation)
    return ERR(e, TTP_ERR_CUDA, "device memory for %s: %s", what, cudaGetErrorString(err));
  cudaGetLastError(); /* not sticky: the device stays usable */
  size_t free_bytes = 0, total = 0;
  int device = -1;
  cudaGetDevice(&device);
  char want[32], free_text[32], total_text[32];
  size_text(bytes, want, sizeof want);
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return ERR(e, TTP_ERR_OUT_OF_MEMORY, "not enough device memory on GPU %d for %s: %s wanted",
               device, what, want);
  }
  size_text(free_bytes, free_text, sizeof free_text);
  size_text(total, total_text, sizeof total_text);
  return ERR(e, TTP_ERR_OUT_OF_MEMORY,
             "not enough device memory on GPU %d for %s: %s wanted, %s free of %s (a smaller "
             "batch needs less)",
             device, what, want, free_text, total_text);
}

ttp_status gpu_alloc_pinned(void** p, size_t bytes, const char* what, ttp_err* e) {
  *p = NULL;
  const cudaError_t err = cudaMallocHost(p, bytes);
  if (err == cudaSuccess) return TTP_OK;
  cudaGetLastError();
  char want[32];
  size_text(bytes, want, sizeof want);
  return ERR(e, err == cudaErrorMemoryAllocation ? TTP_ERR_OUT_OF_MEMORY : TTP_ERR_CUDA,
             "pinned host memory for %s: %s wanted: %s", what, want, cudaGetErrorString(err));
}
