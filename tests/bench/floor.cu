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
//   map4+kernel+map   the same, the image read in one round of 4-byte loads by 256 threads
//   map16+kernel+map  the same, in one round of 16-byte loads (a thread each), where
//                     map+kernel+map's 64 threads read it a byte at a time, 13 in turn
//
// With --images N, every variant moves N images in and N records out (a block an image; the
// host then polls the N records' sequence numbers): the floor of a batch of N. With --readers R,
// R blocks read each image (as the small batches' kernel's stage 1 items do), all writing its
// record.
//
// Waiting: --wait sync (cudaStreamSynchronize; with --flags spin, yield or block, the device's
// scheduling flag, set before the context exists: one flag a process) or --wait poll (spin on
// cudaEventQuery; for the mapped-output variants, spin on the record's sequence number in host
// memory, which the kernel writes last). Every call's record is checked (the image's bytes
// change every call and the record is poisoned before it), so a copy that did not happen fails.
//
//   bench_floor [--wait sync|poll] [--flags spin|yield|block|auto] [--iterations N] [--images N]
//               [--readers R]
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
__device__ __forceinline__ unsigned byte_sum(unsigned w) {
  return (w & 0xff) + (w >> 8 & 0xff) + (w >> 16 & 0xff) + (w >> 24);
}

// Block b: image b / readers, record b (each of an image's `readers` blocks reads it and
// writes a record of its own). kWidth 1: the image a byte at a time over the block's threads, in
// turn; 4 or 16: one load a thread of 4 or 16 bytes, all at once.
template <int kWidth>
__global__ void record_kernel(const uint8_t* images, float* records, unsigned sequence,
                              int readers) {
  __shared__ unsigned parts[8];
  const uint8_t* image = images + (size_t)(blockIdx.x / readers) * kPixels;
  float* record = records + (size_t)blockIdx.x * kRecord;
  unsigned sum = 0;
  if (kWidth == 16) {
    if (threadIdx.x < kPixels / 16) {
      const uint4 v = reinterpret_cast<const uint4*>(image)[threadIdx.x];
      for (unsigned w : {v.x, v.y, v.z, v.w}) sum += byte_sum(w);
    }
  } else if (kWidth == 4) {
    for (int i = threadIdx.x; i < kPixels / 4; i += blockDim.x)
      sum += byte_sum(reinterpret_cast<const unsigned*>(image)[i]);
  } else {
    for (int i = threadIdx.x; i < kPixels; i += blockDim.x) sum += image[i];
  }
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) parts[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < kRecord - 1) {
    unsigned total = 0;
    for (int w = 0; w < (int)blockDim.x / 32; w++) total += parts[w];
    record[threadIdx.x] = (float)(total + threadIdx.x);
  }
  if (threadIdx.x == 0) {
    __threadfence_system();  // the record before its sequence number, as the host reads them
    reinterpret_cast<volatile unsigned*>(record)[kRecord - 1] = sequence;
  }
}

__global__ void empty_kernel() {}

static_assert(kPixels % 16 == 0, "an image is whole 16-byte units");

enum kind { EMPTY, KERNEL, COPY_KERNEL_COPY, COPY_KERNEL_MAP, MAP_KERNEL_MAP, MAP4_KERNEL_MAP,
            MAP16_KERNEL_MAP, KINDS };
const char* kNames[KINDS] = {"empty", "kernel", "copy+kernel+copy", "copy+kernel+map",
                             "map+kernel+map", "map4+kernel+map", "map16+kernel+map"};

struct buffers {
  int images, readers;
  size_t records() const { return (size_t)images * readers; }
  uint8_t *host_in, *dev_in, *mapped_in_dev;  // host_in: pinned and mapped
  float *host_out, *dev_out, *mapped_out_dev;   // host_out: pinned and mapped
};

bool mapped_in(kind k) {
  return k == MAP_KERNEL_MAP || k == MAP4_KERNEL_MAP || k == MAP16_KERNEL_MAP;
}
bool mapped_out(kind k) { return k == COPY_KERNEL_MAP || mapped_in(k); }

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
      CHECK_CUDA(cudaMemcpyAsync(b.dev_in, b.host_in, (size_t)b.images * kPixels,
                                 cudaMemcpyHostToDevice, stream));
    const uint8_t* in = mapped_in(k) ? b.mapped_in_dev : b.dev_in;
    float* out = k == COPY_KERNEL_COPY ? b.dev_out : b.mapped_out_dev;
    const int blocks = b.images * b.readers;
    if (k == MAP16_KERNEL_MAP)
      record_kernel<16><<<blocks, 64, 0, stream>>>(in, out, 0, b.readers);
    else if (k == MAP4_KERNEL_MAP)
      record_kernel<4><<<blocks, 256, 0, stream>>>(in, out, 0, b.readers);
    else if (k != KERNEL)
      record_kernel<1><<<blocks, 64, 0, stream>>>(in, out, 0, b.readers);
    if (k == COPY_KERNEL_COPY)
      CHECK_CUDA(cudaMemcpyAsync(b.host_out, b.dev_out, b.records() * kRecord * sizeof(float),
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
    // This call's image m: every byte i + m + j (mod 256), so that its sum differs between
    // calls and images.
    std::vector<unsigned> want(b.images, 0);
    volatile unsigned* sequences = reinterpret_cast<volatile unsigned*>(b.host_out);
    if (has_record) {
      for (int m = 0; m < b.images; m++) {
        for (int j = 0; j < kPixels; j++) {
          const uint8_t v = (uint8_t)(i + m + j);
          b.host_in[(size_t)m * kPixels + j] = v, want[m] += v;
        }
      }
      for (size_t m = 0; m < b.records(); m++) {
        for (int j = 0; j < kRecord; j++) b.host_out[m * kRecord + j] = -1.0f;  // NaN-free poison
        sequences[m * kRecord + kRecord - 1] = 0xffffffffu;
      }
    }
    const double start = clock_seconds();
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    if (poll && mapped_out(k)) {
      // Each block writes sequence 0 last; the poison is 0xffffffff.
      for (size_t m = 0; m < b.records(); m++)
        while (sequences[m * kRecord + kRecord - 1] != 0u) {
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
      for (size_t m = 0; m < b.records(); m++)
        for (int j = 0; j < kRecord - 1; j++) {
          const float got = reinterpret_cast<volatile float*>(b.host_out)[m * kRecord + j];
          const unsigned expect = want[m / b.readers] + j;
          CHECK(got == (float)expect, "%s: call %d's record %zu[%d] is %g, want %u", kNames[k],
                i, m, j, (double)got, expect);
        }
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
  const int images = validate ? 3 : atoi(arg(argc, argv, "--images", "1"));
  const int readers = validate ? 2 : atoi(arg(argc, argv, "--readers", "1"));
  CHECK(images >= 1 && images <= 4096, "--images wants 1 to 4096");
  CHECK(readers >= 1 && readers <= 64, "--readers wants 1 to 64");
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
  b.images = images, b.readers = readers;
  const size_t in_bytes = (size_t)images * kPixels;
  const size_t out_bytes = b.records() * kRecord * sizeof(float);
  CHECK_CUDA(cudaHostAlloc(&b.host_in, in_bytes, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&b.host_out, out_bytes, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer(&b.mapped_in_dev, b.host_in, 0));
  CHECK_CUDA(cudaHostGetDevicePointer(&b.mapped_out_dev, b.host_out, 0));
  CHECK_CUDA(cudaMalloc(&b.dev_in, in_bytes));
  CHECK_CUDA(cudaMalloc(&b.dev_out, out_bytes));

  if (!validate)
    printf("| %s, wait %s, flags %s, %d calls of %d images, %d blocks an image | p50 us | p99 us "
           "| p99.9 us |\n| --- | --- | --- | --- |\n", prop.name, wait, flags, calls, images,
           readers);
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
