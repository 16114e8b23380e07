/* What this build and this machine offer: the GPU count and the build description. The CUDA
   calls are compiled only with TTAPIPE_CUDA; a CPU-only build answers "no GPU". */
#include "ttapipe.h"

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
#else
int ttp_gpu_count(void) { return 0; }
#endif

/* TTAPIPE_BUILD_INFO comes from CMake: "CUDA 13.0.48, cuDNN 9.19.0, sm 90" or "CPU only". */
const char* ttp_build_string(void) { return "ttapipe " TTP_VERSION_STRING ", " TTAPIPE_BUILD_INFO; }
