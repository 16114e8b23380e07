// The runner's fault hook (runner.h, gpu_fault_batch): a kernel that traps, leaving the context
// in the state a failing kernel or device leaves it.
#include "runner.h"

namespace {
__global__ void trap_kernel() { __trap(); }
}  // namespace

extern "C" cudaError_t gpu_fault_launch(cudaStream_t stream) {
  trap_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}
