/* Kernel lab: stage 3b's tail (pipeline/fused/fused_kernels.cu's stage3_tail: LRN, fc2,
   softmax, the merge) for one image of LeNet's shape on one block, warm (the first of four
   repetitions cold), with LRN and without; then the latency of single dependent operations on
   one thread (clock64): a shared-memory load, FFMA, DFMA, a double and a float division; and on
   one warp a chain of dependent mma, alone and behind its operands' loads. The
   numbers behind tests/bench/NOTES.md's rows on stage 3b and BENCHMARKS.md's latency path,
   step 3. Not a test: it prints cycles. bench_tail_lab (exit 77 without a GPU). */
#include <cstdio>
#include <cstdlib>

#include "pipeline/fused/fused_kernels.cu"  // the tail itself, not a copy of it

namespace {

__global__ void tail_lab(fused_shape s, const float* w4, const float* b4, unsigned char* records,
                         size_t record_size, long long* out) {
  extern __shared__ __align__(16) float lab_shared[];
  const int pitch = stage3_pitch(s), rows = s.copies;
  float* hidden = lab_shared;
  float* probs = hidden + rows * pitch;
  float* merged = probs + rows * s.classes;
  for (int rep = 0; rep < 4; rep++) {
    for (int i = threadIdx.x; i < rows * pitch; i += blockDim.x) {  // fc1's outputs, zero-padded
      const int j = i % pitch - kRowLead;
      hidden[i] = j >= 0 && j < s.fc_out ? (float)((unsigned)(i * 2654435761u) >> 24) / 256.0f : 0.0f;
    }
    __syncthreads();
    const long long t0 = clock64();
    stage3_tail(s, TTP_MERGE_MEAN, nullptr, w4, b4, hidden, probs, merged, 1, 0, record_size, records);
    __syncthreads();
    if (threadIdx.x == 0) out[rep] = clock64() - t0;
  }
}

__global__ void latency_lab(long long* out, int n) {
  __shared__ int chain[1024];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) chain[i] = (i * 17 + 1) % 1024;
  __syncthreads();
  if (threadIdx.x != 0) return;
  int p = 0;
  const long long t0 = clock64();
#pragma unroll 16
  for (int i = 0; i < n; i++) p = chain[p];
  const long long t1 = clock64();
  float f = (float)p;
#pragma unroll 16
  for (int i = 0; i < n; i++) f = __fmaf_rn(f, 1.0001f, 0.5f);
  const long long t2 = clock64();
  double d = f;
#pragma unroll 16
  for (int i = 0; i < n; i++) d = __fma_rn(d, 1.0001, 0.5);
  const long long t3 = clock64();
  double q = d;
#pragma unroll 4
  for (int i = 0; i < n / 8; i++) q = q / (1.37 + i);
  const long long t4 = clock64();
  float g = (float)q;
#pragma unroll 4
  for (int i = 0; i < n / 8; i++) g = g / (1.37f + i);
  const long long t5 = clock64();
  out[0] = t1 - t0, out[1] = t2 - t1, out[2] = t3 - t2, out[3] = t4 - t3, out[4] = t5 - t4;
  out[5] = (long long)g;  // keeps the chains
}

// One warp: a chain of n dependent m16n8k16 mma (the accumulator carried), then the same with
// each step's A fragments by ldmatrix from an address loaded from shared memory first (fp16
// conv2's k step in the one launch), cycles a step.
__global__ void mma_lab(long long* out, int n) {
  __shared__ __align__(16) __half tile[64 * 8];
  __shared__ int offsets[64];
  for (int i = threadIdx.x; i < 64 * 8; i += 32) tile[i] = __float2half_rn((float)(i % 7) / 8.0f);
  for (int i = threadIdx.x; i < 64; i += 32) offsets[i] = (i * 5 % 4) * 16 * 8 * 2;
  __syncwarp();
  const int lane = threadIdx.x;
  uint32_t a[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  const uint2 b = {0x3c003c00u, 0x3c003c00u};
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const long long t0 = clock64();
  for (int i = 0; i < n; i++) mma_16816(acc, a, b);
  const long long t1 = clock64();
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(tile) + (lane % 16) * 16;
  int k = lane % 2;
  for (int i = 0; i < n; i++) {  // the offsets independent of the mma, as in conv2
    ldmatrix_x4(a, base + offsets[k]);
    mma_16816(acc, a, b);
    k = (k + 2) % 64;
  }
  const long long t2 = clock64();
  for (int i = 0; i < n; i++) {  // each offset waiting on the mma before: the whole chain's sum
    ldmatrix_x4(a, base + offsets[k]);
    mma_16816(acc, a, b);
    k = (k + 2 + (int)(acc[0] < -1e30f)) % 64;
  }
  const long long t3 = clock64();
  if (lane == 0)
    out[0] = t1 - t0, out[1] = t2 - t1, out[2] = t3 - t2, out[3] = (long long)(acc[0] + acc[3]);
}

// One thread: the merge's pieces for one image of 5 copies x 10 classes (merge_core.h; the
// mode a run-time argument, as the kernels had it before stage3_merge<kMode>), each timed
// alone: a class's merged value, the ten classes', merge_finish, its argmax, a double square
// root, a double division, five loads and adds in double, and the record's stores to `records`
// (mapped host memory, as the small batches' kernel writes it).
__global__ void merge_lab(unsigned char* records, long long* out, ttp_merge mode) {
  __shared__ float probs[5 * 10], merged[10];
  for (int i = threadIdx.x; i < 50; i += blockDim.x) probs[i] = (float)((i * 37) % 11 + 1) / 66.0f;
  __syncthreads();
  if (threadIdx.x != 0) return;
  int winners[MERGE_MAX_COPIES];
  long long t[10];
  t[0] = clock64();
  merge_winners(mode, probs, 5, 10, winners);
  const double norm = merge_norm(mode, probs, 5, 10, winners, nullptr);
  merged[3] = merge_class(mode, probs, 5, 10, 3, winners, norm, nullptr);
  t[1] = clock64();
  for (int k = 0; k < 10; k++) merged[k] = merge_class(mode, probs, 5, 10, k, winners, norm, nullptr);
  t[2] = clock64();
  ttp_result r;
  merge_finish(mode, probs, 5, 10, merged, &r, nullptr);
  t[3] = clock64();
  const int best = merge_argmax(merged, 10);
  t[4] = clock64();
  const double root = sqrt((double)merged[best] + 0.25);
  t[5] = clock64();
  const double quotient = ((double)merged[best] + root) / 5;
  t[6] = clock64();
  double sum = 0;
  for (int c = 0; c < 5; c++) sum += probs[c * 10 + best];
  t[7] = clock64();
  *reinterpret_cast<ttp_result*>(records) = r;
  t[8] = clock64();
  reinterpret_cast<float*>(records + sizeof(ttp_result))[0] = (float)(quotient + sum);
  t[9] = clock64();
  for (int k = 0; k < 9; k++) out[k] = t[k + 1] - t[k];
}

// The lab kernel's first n results into h; false (said) on a CUDA error.
bool fetch(long long* h, const long long* out, int n) {
  if (cudaMemcpy(h, out, n * sizeof(long long), cudaMemcpyDeviceToHost) == cudaSuccess) return true;
  printf("bench_tail_lab: %s\n", cudaGetErrorString(cudaGetLastError()));
  return false;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("bench_tail_lab: no GPU\n");
    return 77;
  }
  fused_shape s = {};
  s.in_h = s.in_w = 28, s.copies = 5, s.k1 = 20, s.k2 = 50, s.fc_in = 800, s.fc_out = 500;
  s.lrn_n = 5, s.lrn_alpha_n = 1e-4f / 5, s.lrn_beta = 0.75f, s.lrn_k = 1.0f;
  s.classes = 10, s.sms = 132;
  float *w4 = NULL, *b4 = NULL;
  unsigned char* records = NULL;
  long long* out = NULL;
  if (cudaMalloc(&w4, sizeof(float) * s.classes * s.fc_out) != cudaSuccess ||
      cudaMalloc(&b4, sizeof(float) * s.classes) != cudaSuccess ||
      cudaMalloc(&records, aug_merge_record_size(s.classes)) != cudaSuccess ||
      cudaMalloc(&out, 16 * sizeof(long long)) != cudaSuccess) {
    printf("bench_tail_lab: out of device memory\n");
    return 1;
  }
  cudaMemset(w4, 0, sizeof(float) * s.classes * s.fc_out);
  cudaMemset(b4, 0, sizeof(float) * s.classes);
  const size_t shared = sizeof(float) * (s.copies * (stage3_pitch(s) + s.classes) + s.classes);
  long long h[16];
  for (int lrn = 1; lrn >= 0; lrn--) {
    s.lrn = lrn;
    tail_lab<<<1, kThreads, shared>>>(s, w4, b4, records, aug_merge_record_size(s.classes), out);
    if (!fetch(h, out, 4)) return 1;
    printf("stage 3b's tail, one image, %s LRN: %lld cycles cold, %lld %lld %lld warm\n",
           lrn ? "with" : "without", h[0], h[1], h[2], h[3]);
  }
  latency_lab<<<1, 256>>>(out, 1024);
  if (!fetch(h, out, 6)) return 1;
  printf("dependent latency, cycles an operation: shared load %.1f, FFMA %.1f, DFMA %.1f, "
         "double division %.1f, float division %.1f\n",
         h[0] / 1024.0, h[1] / 1024.0, h[2] / 1024.0, h[3] / 128.0, h[4] / 128.0);
  mma_lab<<<1, 32>>>(out, 1024);
  if (!fetch(h, out, 4)) return 1;
  printf("one warp, cycles a step: dependent mma.m16n8k16 %.1f; offset load + ldmatrix + mma "
         "%.1f (offsets ahead), %.1f (each behind the mma)\n",
         h[0] / 1024.0, h[1] / 1024.0, h[2] / 1024.0);
  unsigned char *mapped = NULL, *mapped_dev = NULL;
  if (cudaHostAlloc((void**)&mapped, 256, cudaHostAllocMapped) != cudaSuccess ||
      cudaHostGetDevicePointer((void**)&mapped_dev, mapped, 0) != cudaSuccess) {
    printf("bench_tail_lab: no mapped host memory\n");
    return 1;
  }
  for (int round = 0; round < 2; round++) {
    merge_lab<<<1, 64>>>(mapped_dev, out, TTP_MERGE_MEAN);
    if (!fetch(h, out, 9)) return 1;
    printf("merge, one thread, cycles (%s): a class %lld, ten classes %lld, merge_finish %lld, "
           "argmax %lld, double sqrt %lld, double division %lld, five loads + adds %lld, the "
           "result's store to mapped memory %lld, a float's %lld\n",
           round ? "warm" : "cold", h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]);
  }
  cudaFreeHost(mapped);
  cudaFree(w4), cudaFree(b4), cudaFree(records), cudaFree(out);
  return 0;
}
