/* What this build and this machine offer: the GPU count and the build description. The CUDA
   calls are compiled only with TTAPIPE_CUDA; a CPU-only build answers "no GPU". */
#include "ttapipe.h"

#include <stdio.h>
#include <string.h>

#if TTAPIPE_HAVE_CUDA
#include <cuda_runtime_api.h>

int ttp_gpu_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); /* no driver or no device: clear the sticky-free error and say none */
    return 0;
  }
  return n;
}

ttp_status ttp_get_gpu_info(int device, ttp_gpu_info* info) {
  if (!info) return TTP_ERR_INVALID_ARGUMENT;
  int n = ttp_gpu_count();
  if (n == 0) return TTP_ERR_NO_GPU;
  if (device < 0 || device >= n) return TTP_ERR_INVALID_ARGUMENT;
  struct cudaDeviceProp prop;
  int sm = 0, mem = 0;
  memset(info, 0, sizeof *info);
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sm, cudaDevAttrClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&mem, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
      cudaDriverGetVersion(&info->driver_version) != cudaSuccess ||
      cudaRuntimeGetVersion(&info->runtime_version) != cudaSuccess) {
    cudaGetLastError();
    return TTP_ERR_CUDA;
  }
  snprintf(info->name, sizeof info->name, "%s", prop.name);
  info->major = prop.major, info->minor = prop.minor;
  info->sm_clock_mhz = sm / 1000, info->memory_clock_mhz = mem / 1000;
  info->memory_bytes = prop.totalGlobalMem;
  return TTP_OK;
}
#else
int ttp_gpu_count(void) { return 0; }

ttp_status ttp_get_gpu_info(int device, ttp_gpu_info* info) {
  (void)device, (void)info;
  return TTP_ERR_NO_GPU;
}
#endif

/* TTAPIPE_BUILD_INFO comes from CMake: "CUDA 13.0.48, cuDNN 9.19.0, sm 90" or "CPU only". */
const char* ttp_build_string(void) { return "ttapipe " TTP_VERSION_STRING ", " TTAPIPE_BUILD_INFO; }
