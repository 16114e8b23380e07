// The latency floor of one small call on this GPU: what any design of the small-batch path can
// approach, measured with the same clock and waiting strategies as ttapipe's own calls. Each
// variant is a CUDA graph, launched and waited for, --iterations times (after 1,000 unmeasured):
//
//   empty             a graph with no nodes
//   kernel            one tiny kernel (one block of 64 threads)
//   copy+kernel+copy  784 bytes from pinned host memory in, the kernel (it sums the bytes into
//                     a 64-byte record), the 64 bytes back to pinned host memory: one image's
//                     call reduced to its copies
//   copy+kernel+map   the same, the kernel writing the record straight into mapped pinned host
//                     memory (no copy node out)
//   map+kernel+map    one node: the kernel reads the image from mapped pinned memory and writes
//                     the record there
//
// Waiting: --wait sync (cudaStreamSynchronize; with --flags spin, yield or block, the device's
// scheduling flag, set before the context exists: one flag a process) or --wait poll (spin on
// cudaEventQuery; for the mapped-output variants, spin on the record's sequence number in host
// memory, which the kernel writes last). Every call's record is checked (the image's bytes
// change every call and the record is poisoned before it), so a copy that did not happen fails.
//
//   bench_floor [--wait sync|poll] [--flags spin|yield|block|auto] [--iterations N]
//   bench_floor --validate       200 calls of each variant, checked (ctest, label gpu; 77 without a GPU)
//
// Prints a markdown row per variant: p50, p99, p99.9 in microseconds.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <vector>

extern "C" {
#include "pipeline/clock.h"
}
#include "tests/common/check_cuda.h"

namespace {

constexpr int kPixels = 784, kRecord = 16;  // floats: the record's 64 bytes, [15] the sequence

// Sums the image's bytes (each thread a strided share, then warp and block sums) into record:
// [0] the sum, [1 .. 14] the sum plus their index, [15] the call's sequence number, last.
__global__ void record_kernel(const uint8_t* image, float* record, unsigned sequence) {
  __shared__ unsigned parts[2];
  unsigned sum = 0;
  for (int i = threadIdx.x; i < kPixels; i += blockDim.x) sum += image[i];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) parts[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < kRecord - 1) record[threadIdx.x] = (float)(parts[0] + parts[1] + threadIdx.x);
  if (threadIdx.x == 0) {
    __threadfence_system();  // the record before its sequence number, as the host reads them
    reinterpret_cast<volatile unsigned*>(record)[kRecord - 1] = sequence;
  }
}

__global__ void empty_kernel() {}

enum kind { EMPTY, KERNEL, COPY_KERNEL_COPY, COPY_KERNEL_MAP, MAP_KERNEL_MAP, KINDS };
const char* kNames[KINDS] = {"empty", "kernel", "copy+kernel+copy", "copy+kernel+map",
                             "map+kernel+map"};

struct buffers {
  uint8_t *host_in, *dev_in, *mapped_in_dev;  // host_in: pinned and mapped
  float *host_out, *dev_out, *mapped_out_dev;   // host_out: pinned and mapped
};

// The graph of one variant, captured from a stream. The kernel's arguments are fixed at capture:
// it writes sequence 0 every call, over the host's poison (0xffffffff) of the call before.
cudaGraphExec_t make_graph(kind k, const buffers& b, cudaStream_t stream) {
  cudaGraph_t graph;
  if (k == EMPTY) {
    CHECK_CUDA(cudaGraphCreate(&graph, 0));
  } else {
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    if (k == KERNEL) empty_kernel<<<1, 64, 0, stream>>>();
    if (k == COPY_KERNEL_COPY || k == COPY_KERNEL_MAP)
      CHECK_CUDA(cudaMemcpyAsync(b.dev_in, b.host_in, kPixels, cudaMemcpyHostToDevice, stream));
    const uint8_t* in = k == MAP_KERNEL_MAP ? b.mapped_in_dev : b.dev_in;
    float* out = k == COPY_KERNEL_COPY ? b.dev_out : b.mapped_out_dev;
    if (k != KERNEL) record_kernel<<<1, 64, 0, stream>>>(in, out, 0);
    if (k == COPY_KERNEL_COPY)
      CHECK_CUDA(cudaMemcpyAsync(b.host_out, b.dev_out, kRecord * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  }
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphDestroy(graph));
  return exec;
}

struct percentiles {
  double p50, p99, p999;
};

// `calls` timed calls of variant k (after `warmup` untimed ones), each checked; microseconds.
percentiles run_variant(kind k, const buffers& b, cudaStream_t stream, bool poll, int warmup,
                        int calls) {
  cudaGraphExec_t exec = make_graph(k, b, stream);
  cudaEvent_t done;
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  std::vector<double> us;
  us.reserve(calls);
  const bool has_record = k >= COPY_KERNEL_COPY;
  for (int i = 0; i < warmup + calls; i++) {
    // This call's image: every byte i + j (mod 256), so that its sum differs between calls.
    unsigned want = 0;
    if (has_record) {
      for (int j = 0; j < kPixels; j++) b.host_in[j] = (uint8_t)(i + j), want += (uint8_t)(i + j);
      for (int j = 0; j < kRecord; j++) b.host_out[j] = -1.0f;  // poison, NaN-free on purpose
      reinterpret_cast<volatile unsigned*>(b.host_out)[kRecord - 1] = 0xffffffffu;
    }
    const double start = clock_seconds();
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    if (poll && (k == COPY_KERNEL_MAP || k == MAP_KERNEL_MAP)) {
      // The kernel writes sequence 0 last; the poison is 0xffffffff.
      while (reinterpret_cast<volatile unsigned*>(b.host_out)[kRecord - 1] != 0u) {
      }
    } else if (poll) {
      CHECK_CUDA(cudaEventRecord(done, stream));
      while (cudaEventQuery(done) == cudaErrorNotReady) {
      }
    } else {
      CHECK_CUDA(cudaStreamSynchronize(stream));
    }
    const double took = clock_seconds() - start;
    if (i >= warmup) us.push_back(took * 1e6);
    if (has_record)
      for (int j = 0; j < kRecord - 1; j++)
        CHECK(reinterpret_cast<volatile float*>(b.host_out)[j] == (float)(want + j),
              "%s: call %d's record[%d] is %g, want %u", kNames[k], i, j,
              (double)b.host_out[j], want + j);
  }
  // Polling on the record returns before the graph is done: let it finish before the next graph.
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaEventDestroy(done));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, (size_t)(q * us.size()))]; };
  return {at(0.5), at(0.99), at(0.999)};
}

const char* arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  bool validate = false;
  for (int i = 1; i < argc; i++) validate |= strcmp(argv[i], "--validate") == 0;
  const char* wait = arg(argc, argv, "--wait", "sync");
  const char* flags = arg(argc, argv, "--flags", "auto");
  const int calls = validate ? 200 : atoi(arg(argc, argv, "--iterations", "20000"));
  CHECK(calls >= 1 && calls <= 10000000, "--iterations wants 1 to 10000000");
  CHECK(strcmp(wait, "sync") == 0 || strcmp(wait, "poll") == 0, "--wait sync or poll");
  unsigned flag = cudaDeviceScheduleAuto;
  if (strcmp(flags, "spin") == 0) flag = cudaDeviceScheduleSpin;
  else if (strcmp(flags, "yield") == 0) flag = cudaDeviceScheduleYield;
  else if (strcmp(flags, "block") == 0) flag = cudaDeviceScheduleBlockingSync;
  else CHECK(strcmp(flags, "auto") == 0, "--flags spin, yield, block or auto");
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("bench_floor: no GPU, skipped\n");
    return 77;
  }
  CHECK_CUDA(cudaSetDeviceFlags(flag | cudaDeviceMapHost));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  buffers b = {};
  CHECK_CUDA(cudaHostAlloc(&b.host_in, kPixels, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&b.host_out, kRecord * sizeof(float), cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer(&b.mapped_in_dev, b.host_in, 0));
  CHECK_CUDA(cudaHostGetDevicePointer(&b.mapped_out_dev, b.host_out, 0));
  CHECK_CUDA(cudaMalloc(&b.dev_in, kPixels));
  CHECK_CUDA(cudaMalloc(&b.dev_out, kRecord * sizeof(float)));

  if (!validate)
    printf("| %s, wait %s, flags %s, %d calls | p50 us | p99 us | p99.9 us |\n| --- | --- | --- | --- |\n",
           prop.name, wait, flags, calls);
  for (int k = 0; k < KINDS; k++) {
    const percentiles p =
        run_variant((kind)k, b, stream, strcmp(wait, "poll") == 0, validate ? 10 : 1000, calls);
    if (!validate) printf("| %s | %.1f | %.1f | %.1f |\n", kNames[k], p.p50, p.p99, p.p999);
  }
  if (validate) printf("bench_floor: every variant's records checked\n");
  CHECK_CUDA(cudaFreeHost(b.host_in));
  CHECK_CUDA(cudaFreeHost(b.host_out));
  CHECK_CUDA(cudaFree(b.dev_in));
  CHECK_CUDA(cudaFree(b.dev_out));
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
