// Kernel lab for the fused engine's stage 2: conv2 (5x5, stride 1, zero padding) + bias + [ReLU]
// + 2x2/2 max-pool, act1 (rows, K1, P1, Q1) -> act2 (rows, K2 P2 Q2), its variants side by side:
//
//   fp32-scalar  the variant before the shipped fp32 one, kept only here: lane = (copy, pooled
//                position), the warps share the output channels, weights in the model's layout
//                [K2][K1][5][5], one weight a __ldg feeding 4 FMAs
//   fp32-float4  shipped (fused_stage2, fp32): weights [K1][25][K2 padded to 8], a tap's 8
//                channels in two 16-byte loads feeding 32 FMAs
//   fp16-mma     shipped (fused_stage2, fp16): an implicit GEMM on the tensor cores (mma.sync
//                m16n8k16, fp32 accumulation), act1 fp16 HWC, weights packed as B fragments
//   fp32-wide    shipped (fused_stage2, fp32, batches that fill the GPU): register-tiled, a
//                thread 2 x 8 conv outputs of 4 channels, a block's copies and their weights
//                in shared memory (fp32-float4 takes the smaller batches)
//
// Every variant is checked against the CPU reference below (sums in double) on LeNet's shape and
// on an odd one (padding, ReLU, 7 and 9 channels, 10x11 inputs) before anything is timed.
//
//   bench_conv2_lab --validate            check only (ctest, label gpu; 77 without a GPU)
//   bench_conv2_lab [--rows N] [--runs R] check, then time each variant on LeNet's shape with N
//                                         rows (default 40960: a batch of 8192 images x 5
//                                         copies), median and minimum of R runs (default 20)
//
// fp32-float4, fp16-mma and fp32-wide ship (pipeline/fused/fused_kernels.cu); the predictions and the
// measured margins are recorded in tests/bench/NOTES.md. Compiled with -fmad=false, as
// fused_kernels.cu is: every multiply-add here is an explicit __fmaf_rn.
#include <cuda_runtime.h>

#include <algorithm>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "pipeline/fused/fused_device.cuh"
#include "pipeline/fused/fused_kernels.h"
#include "tests/common/check_cuda.h"

namespace {

// The napkin's ceilings, an H100 SXM at its 1980 MHz boost clock: 132 SMs x 128 FFMA lanes x
// 2 FLOP = 67 TFLOP/s in fp32; the dense fp16 tensor cores (fp32 accumulation) about 990
// TFLOP/s, which Hopper reaches through wgmma, not the mma.sync used here (cuBLAS measured 740
// on the project's H100, DESIGN.md); HBM3 3.35 TB/s.
constexpr double kFfmaPeak = 67e12, kTensorPeak = 990e12, kDramPeak = 3.35e12;
constexpr int kWarmup = 3, kMaxRuns = 1000;

// ---- the CPU reference ------------------------------------------------------------------------

// conv2 + bias + [ReLU] + max-pool of `rows` rows, sums in double, the model's layouts: act1
// (rows, K1, P1h, P1w), w2 (K2, K1, 5, 5), act2 (rows, K2, P2h, P2w).
void reference(const fused_shape& s, const float* act1, const float* w2, const float* b2,
               int rows, double* act2) {
  const int taps = FUSED_CONV * FUSED_CONV, in_plane = s.p1_h * s.p1_w;
  std::vector<double> conv((size_t)s.c2_h * s.c2_w);
  for (int row = 0; row < rows; row++)
    for (int k = 0; k < s.k2; k++) {
      std::fill(conv.begin(), conv.end(), (double)b2[k]);
      for (int ci = 0; ci < s.k1; ci++) {
        const float* in = act1 + ((size_t)row * s.k1 + ci) * in_plane;
        for (int r = 0; r < FUSED_CONV; r++)
          for (int q = 0; q < FUSED_CONV; q++) {
            const double w = w2[((size_t)k * s.k1 + ci) * taps + r * FUSED_CONV + q];
            const int x0 = std::max(0, s.pad2 - q), x1 = std::min(s.c2_w, s.p1_w + s.pad2 - q);
            for (int y = 0; y < s.c2_h; y++) {
              const int iy = y + r - s.pad2;
              if (iy < 0 || iy >= s.p1_h) continue;
              for (int x = x0; x < x1; x++)
                conv[(size_t)y * s.c2_w + x] += w * in[iy * s.p1_w + x + q - s.pad2];
            }
          }
      }
      double* out = act2 + ((size_t)row * s.k2 + k) * s.p2_h * s.p2_w;
      for (int py = 0; py < s.p2_h; py++)
        for (int px = 0; px < s.p2_w; px++) {
          const double* c = &conv[(size_t)2 * py * s.c2_w + 2 * px];
          double m = std::max(std::max(c[0], c[1]), std::max(c[s.c2_w], c[s.c2_w + 1]));
          out[py * s.p2_w + px] = s.relu2 && m < 0 ? 0 : m;
        }
    }
}

// ---- fp32-scalar: the fused engine's stage 2 before the shipped one (0c06e92) ------------------
//
// A block holds `per_block` copies' act1 in shared memory (zero-padded). Lane = (copy, pooled
// position); the output channels are shared out over the gridDim.y blocks of those copies and
// their warps (small batches spread over more blocks), each warp a group of them: per input
// channel a 6x6 patch in registers, 25 weights per output channel the same for the whole warp
// (one broadcast load each). It lost because each such load serves only 4 FMAs (NOTES.md).

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kWindow = kFusedWindow;
constexpr int kGroup2 = (FUSED_MAX_K2 + kWarps - 1) / kWarps;

__global__ void __launch_bounds__(kThreads)
    stage2_scalar_kernel(fused_shape s, const float* __restrict__ w2, const float* __restrict__ b2,
                         const float* __restrict__ act1, int rows, float* __restrict__ act2) {
  extern __shared__ float tile[];
  const int positions = s.p2_h * s.p2_w, per_block = fused_stage2_copies(&s);
  const int pitch = s.p1_w + 2 * s.pad2, plane = (s.p1_h + 2 * s.pad2) * pitch;
  const int row0 = blockIdx.x * per_block, n = min(per_block, rows - row0);
  load_padded_act1(s, act1, row0, n, s.k1 * plane, tile);
  copy_wait();
  __syncthreads();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c = lane / positions, pos = lane % positions;
  if (c >= n) return;
  const int py = pos / s.p2_w, px = pos % s.p2_w;
  const int group = (s.k2 + kWarps * gridDim.y - 1) / (kWarps * gridDim.y);
  const int k0 = (blockIdx.y * kWarps + warp) * group;
  float acc[kGroup2][4];
#pragma unroll
  for (int g = 0; g < kGroup2; g++) acc[g][0] = acc[g][1] = acc[g][2] = acc[g][3] = 0.0f;
  for (int ci = 0; ci < s.k1; ci++) {
    float patch[kWindow][kWindow];
    load_patch(patch, tile + (c * s.k1 + ci) * plane + 2 * py * pitch + 2 * px, pitch);
#pragma unroll
    for (int g = 0; g < kGroup2; g++) {
      const int k = k0 + g;
      if (g < group && k < s.k2) {
        const float* w = w2 + ((size_t)k * s.k1 + ci) * FUSED_CONV * FUSED_CONV;
#pragma unroll
        for (int r = 0; r < FUSED_CONV; r++)
#pragma unroll
          for (int q = 0; q < FUSED_CONV; q++) {
            const float v = __ldg(w + r * FUSED_CONV + q);
            acc[g][0] = __fmaf_rn(v, patch[r][q], acc[g][0]);
            acc[g][1] = __fmaf_rn(v, patch[r][q + 1], acc[g][1]);
            acc[g][2] = __fmaf_rn(v, patch[r + 1][q], acc[g][2]);
            acc[g][3] = __fmaf_rn(v, patch[r + 1][q + 1], acc[g][3]);
          }
      }
    }
  }
  float* out = act2 + (size_t)(row0 + c) * s.fc_in + pos;
#pragma unroll
  for (int g = 0; g < kGroup2; g++) {
    const int k = k0 + g;
    if (g < group && k < s.k2) {
      const float m = nan_max(nan_max(acc[g][0], acc[g][1]), nan_max(acc[g][2], acc[g][3]));
      out[(size_t)k * positions] = relu_if(s.relu2, m + b2[k]);
    }
  }
}

size_t stage2_scalar_shared(const fused_shape& s) {
  return sizeof(float) * fused_stage2_copies(&s) * s.k1 * (s.p1_h + 2 * s.pad2) *
         (s.p1_w + 2 * s.pad2);
}

// Blocks enough to fill the GPU twice over: small batches split their work further.
int spread(const fused_shape& s, int blocks) {
  const int want = 2 * s.sms;
  return blocks >= want ? 1 : (want + blocks - 1) / blocks;
}

ttp_status stage2_scalar_launch(const fused_shape& s, const float* w2, const float* b2,
                                const float* act1, int rows, float* act2, cudaStream_t stream,
                                ttp_err* e) {
  const int per_block = fused_stage2_copies(&s), blocks = (rows + per_block - 1) / per_block;
  const dim3 grid(blocks, std::min((s.k2 + kWarps - 1) / kWarps, spread(s, blocks)));
  stage2_scalar_kernel<<<grid, kThreads, stage2_scalar_shared(s), stream>>>(s, w2, b2, act1, rows,
                                                                            act2);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "stage2_scalar_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}

// ---- one shape's data in every variant's layout -----------------------------------------------

struct lab {
  fused_shape s[3];  // the same network in fp32 (per-position kernels), fp16, fp32 (wide kernels)
  int rows;
  std::vector<float> act1, w2, b2;  // host, the model's layouts (the reference's inputs)
  float *act1_f, *w2_d, *w2t, *b2_d, *w3t, *act2_f, *chw;  // device; chw: fp16's act2 in fp32
  void *act1_h, *packed, *act2_h;
  fused_weights w[3];
};

template <class T>
T* device_alloc(size_t bytes) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  return static_cast<T*>(p);
}

// Random act1 (uniform in [-1, 1)), weights (+-1/sqrt(K1 25)) and biases (+-0.5) for `rows` rows
// of shape s, uploaded in each variant's layout; the kernels prepared for their launch.
void lab_open(lab& l, const fused_shape& s, int rows, test_rng* rng, cudaStream_t stream) {
  ttp_err e = {};
  l.s[0] = l.s[1] = l.s[2] = s;
  l.s[0].half = 0, l.s[1].half = 1, l.s[2].half = 0;
  l.s[0].wide = -1, l.s[2].wide = 1;
  l.rows = rows;
  const int taps = FUSED_CONV * FUSED_CONV, k2p = fused_k2_pad(&s);
  const size_t in_row = (size_t)s.k1 * s.p1_h * s.p1_w, w_count = (size_t)s.k2 * s.k1 * taps;
  l.act1.resize(in_row * rows), l.w2.resize(w_count), l.b2.resize(s.k2);
  test_fill_uniform(rng, l.act1.data(), l.act1.size(), -1, 1);
  const double bound = 1 / sqrt((double)s.k1 * taps);
  test_fill_uniform(rng, l.w2.data(), w_count, -bound, bound);
  test_fill_uniform(rng, l.b2.data(), s.k2, -0.5, 0.5);
  // The shipped kernels' layout (fused_engine.c's upload_weights): [input channel][tap][output
  // channel], zeros up to k2p.
  std::vector<float> w2t((size_t)s.k1 * taps * k2p, 0.0f);
  for (int k = 0; k < s.k2; k++)
    for (int i = 0; i < s.k1 * taps; i++) w2t[(size_t)i * k2p + k] = l.w2[(size_t)k * s.k1 * taps + i];

  l.act1_f = device_alloc<float>(l.act1.size() * sizeof(float));
  l.w2_d = device_alloc<float>(w_count * sizeof(float));
  l.w2t = device_alloc<float>(w2t.size() * sizeof(float));
  l.b2_d = device_alloc<float>(s.k2 * sizeof(float));
  CHECK_CUDA(cudaMemcpy(l.act1_f, l.act1.data(), l.act1.size() * sizeof(float),
                        cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(l.w2_d, l.w2.data(), w_count * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(l.w2t, w2t.data(), w2t.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(l.b2_d, l.b2.data(), s.k2 * sizeof(float), cudaMemcpyHostToDevice));
  // fc1's weights only because fused_pack_weights packs both layers: zeros will do.
  l.w3t = device_alloc<float>((size_t)s.fc_in * s.fc_out * sizeof(float));
  CHECK_CUDA(cudaMemset(l.w3t, 0, (size_t)s.fc_in * s.fc_out * sizeof(float)));
  l.packed = device_alloc<void>(fused_packed_bytes(&l.s[1]));
  l.w[0] = fused_weights{};
  l.w[0].w2t = l.w2t, l.w[0].b2 = l.b2_d;
  l.w[1] = l.w[2] = l.w[0];
  l.w[1].w3t = l.w3t;
  CHECK(fused_pack_weights(&l.s[1], &l.w[1], l.packed, stream, &e) == TTP_OK, "%s", e.message);

  l.act1_h = device_alloc<void>(rows * fused_act_bytes(&l.s[1], 1));
  CHECK(fused_act_convert(&l.s[1], 1, rows, 1, l.act1_f, l.act1_h, stream, &e) == TTP_OK, "%s",
        e.message);
  l.act2_f = device_alloc<float>(rows * fused_act_bytes(&l.s[0], 2));
  l.act2_h = device_alloc<void>(rows * fused_act_bytes(&l.s[1], 2));
  l.chw = device_alloc<float>((size_t)rows * s.fc_in * sizeof(float));
  for (int half = 0; half < 2; half++)
    CHECK(fused_kernels_prepare(&l.s[half], &e) == TTP_OK, "%s", e.message);
  CHECK_CUDA(cudaFuncSetAttribute(stage2_scalar_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)stage2_scalar_shared(s)));
  CHECK_CUDA(cudaStreamSynchronize(stream));
}

void lab_close(lab& l) {
  for (void* p : {(void*)l.act1_f, (void*)l.w2_d, (void*)l.w2t, (void*)l.b2_d, (void*)l.w3t,
                  (void*)l.act2_f, (void*)l.chw, l.act1_h, l.packed, l.act2_h})
    CHECK_CUDA(cudaFree(p));
}

// ---- the variants --------------------------------------------------------------------------

ttp_status launch_scalar(const lab& l, int, cudaStream_t stream, ttp_err* e) {
  return stage2_scalar_launch(l.s[0], l.w2_d, l.b2_d, l.act1_f, l.rows, l.act2_f, stream, e);
}

ttp_status launch_shipped(const lab& l, int slot, cudaStream_t stream, ttp_err* e) {
  const int half = l.s[slot].half;
  return fused_stage2(&l.s[slot], &l.w[slot], half ? l.act1_h : (const void*)l.act1_f, l.rows,
                      half ? l.act2_h : (void*)l.act2_f, stream, e);
}

struct variant {
  const char* name;
  int slot;     // lab.s's shape: 1 fp16 layouts (act1 HWC, act2 padded), else fp32 CHW
  double tol;   // |got - want| <= tol (1 + |want|)
  double peak;  // the napkin's FLOP/s ceiling
  ttp_status (*launch)(const lab& l, int slot, cudaStream_t stream, ttp_err* e);
};

const variant kVariants[] = {
    {"fp32-scalar", 0, 1e-5, kFfmaPeak, launch_scalar},
    {"fp32-float4", 0, 1e-5, kFfmaPeak, launch_shipped},
    {"fp16-mma", 1, 1e-2, kTensorPeak, launch_shipped},
    {"fp32-wide", 2, 1e-5, kFfmaPeak, launch_shipped},
};

void* output_of(const lab& l, const variant& v) { return l.s[v.slot].half ? l.act2_h : (void*)l.act2_f; }

// v once on poisoned outputs (NaN); its act2 as fp32 CHW rows, on the host.
std::vector<float> run_once(const variant& v, const lab& l, cudaStream_t stream) {
  ttp_err e = {};
  const size_t values = (size_t)l.rows * l.s[0].fc_in;
  CHECK_CUDA(cudaMemsetAsync(output_of(l, v), 0xff, l.rows * fused_act_bytes(&l.s[v.slot], 2),
                             stream));
  CHECK_CUDA(cudaMemsetAsync(l.chw, 0xff, values * sizeof(float), stream));
  CHECK(v.launch(l, v.slot, stream, &e) == TTP_OK, "%s: %s", v.name, e.message);
  if (l.s[v.slot].half)
    CHECK(fused_act_convert(&l.s[1], 2, l.rows, 0, l.chw, l.act2_h, stream, &e) == TTP_OK, "%s",
          e.message);
  std::vector<float> got(values);
  CHECK_CUDA(cudaMemcpyAsync(got.data(), l.s[v.slot].half ? l.chw : l.act2_f,
                             values * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return got;
}

// Every variant against the reference on `rows` rows of shape s; returns how many disagree.
int validate(const char* name, const fused_shape& s, int rows, test_rng* rng, cudaStream_t stream) {
  lab l;
  lab_open(l, s, rows, rng, stream);
  const size_t values = (size_t)rows * s.fc_in;
  std::vector<double> want(values);
  reference(s, l.act1.data(), l.w2.data(), l.b2.data(), rows, want.data());
  int failed = 0;
  for (const variant& v : kVariants) {
    const std::vector<float> got = run_once(v, l, stream);
    double worst = 0;
    for (size_t i = 0; i < values; i++) {
      const double d = fabs((double)got[i] - want[i]);
      if (!(d <= worst)) worst = d;  // NaN sticks
    }
    const size_t bad = test_compare(v.name, got.data(), want.data(), values, v.tol, v.tol);
    printf("  %-8s %5d rows  %-12s max diff %.3g%s\n", name, rows, v.name, worst,
           bad ? "  FAILED" : "");
    failed += bad != 0;
  }
  lab_close(l);
  return failed;
}

// ---- timing ------------------------------------------------------------------------------------

// v's launches alone (no conversions) between two events: median and minimum over `runs`, ms.
void time_variant(const variant& v, const lab& l, int runs, cudaStream_t stream, double* median,
                  double* least) {
  ttp_err e = {};
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaMemsetAsync(output_of(l, v), 0xff, l.rows * fused_act_bytes(&l.s[v.slot], 2),
                             stream));
  for (int i = 0; i < kWarmup; i++)
    CHECK(v.launch(l, v.slot, stream, &e) == TTP_OK, "%s: %s", v.name, e.message);
  std::vector<double> ms(runs);
  for (int i = 0; i < runs; i++) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    CHECK(v.launch(l, v.slot, stream, &e) == TTP_OK, "%s: %s", v.name, e.message);
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    ms[i] = t;
  }
  *least = *std::min_element(ms.begin(), ms.end());
  *median = test_quantile(ms.data(), runs, 0.5);
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
}

// ---- shapes ------------------------------------------------------------------------------------

// NVIDIA's mnistCUDNN LeNet (the shipped model's shape), N = 5.
fused_shape lenet_shape(int sms) {
  fused_shape s = {};
  s.in_h = s.in_w = 28, s.copies = 5;
  s.k1 = 20, s.pad1 = 0, s.relu1 = 0, s.c1_h = s.c1_w = 24, s.p1_h = s.p1_w = 12;
  s.k2 = 50, s.pad2 = 0, s.relu2 = 0, s.c2_h = s.c2_w = 8, s.p2_h = s.p2_w = 4;
  s.fc_in = 800, s.fc_out = 500;
  s.lrn = 1, s.lrn_n = 5, s.lrn_alpha_n = 1e-4f / 5, s.lrn_beta = 0.75f, s.lrn_k = 2.0f;
  s.classes = 10, s.sms = sms;
  return s;
}

// test_fused_stages.c's odd model: 20x23 inputs, padding 2 then 1, 7 and 9 channels, ReLUs,
// conv2's output 8x9 pooled to 4x4 (its last column unused), N = 3.
fused_shape odd_shape(int sms) {
  fused_shape s = {};
  s.in_h = 20, s.in_w = 23, s.copies = 3;
  s.k1 = 7, s.pad1 = 2, s.relu1 = 1, s.c1_h = 20, s.c1_w = 23, s.p1_h = 10, s.p1_w = 11;
  s.k2 = 9, s.pad2 = 1, s.relu2 = 1, s.c2_h = 8, s.c2_w = 9, s.p2_h = s.p2_w = 4;
  s.fc_in = 9 * 16, s.fc_out = 37;
  s.lrn = 0, s.lrn_n = 1, s.classes = 13, s.sms = sms;
  return s;
}

int count_arg(const char* flag, const char* value, int most) {
  char* end = nullptr;
  const long n = value ? strtol(value, &end, 10) : 0;
  CHECK(value && *end == '\0' && n >= 1 && n <= most, "%s wants a count from 1 to %d", flag, most);
  return (int)n;
}

}  // namespace

int main(int argc, char** argv) {
  int check_only = 0, rows = 8192 * 5, runs = 20;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--validate") == 0) {
      check_only = 1;
    } else if (strcmp(argv[i], "--rows") == 0) {
      rows = count_arg("--rows", i + 1 < argc ? argv[++i] : nullptr, 1 << 20);
    } else if (strcmp(argv[i], "--runs") == 0) {
      runs = count_arg("--runs", i + 1 < argc ? argv[++i] : nullptr, kMaxRuns);
    } else {
      fprintf(stderr, "usage: %s [--validate] [--rows N] [--runs R]\n", argv[0]);
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  test_rng rng = {20261124};

  // 37 rows take the shipped fp32 kernel's one-channel-a-warp path (too few blocks to fill the
  // GPU twice); the larger count, enough blocks for every SM twice over, its 8-channel path.
  const int small = 37, large = std::max(1201, 8 * sms + 1);
  printf("conv2 lab on %s (%d SMs): every variant against the CPU\n", prop.name, sms);
  int failed = 0;
  for (const int n : {small, large}) {
    failed += validate("lenet", lenet_shape(sms), n, &rng, stream);
    failed += validate("odd", odd_shape(sms), n, &rng, stream);
  }
  if (failed) {
    fprintf(stderr, "conv2 lab: %d variant runs disagree with the CPU\n", failed);
    return 1;
  }
  printf("conv2 lab: every variant agrees with the CPU\n");
  if (check_only) return 0;

  const fused_shape s = lenet_shape(sms);
  const double flops = 2.0 * rows * s.k2 * s.c2_h * s.c2_w * s.k1 * FUSED_CONV * FUSED_CONV;
  lab l;
  lab_open(l, s, rows, &rng, stream);
  printf("\nLeNet's conv2 + pool2, %d rows, %.1f GFLOP useful; median and minimum of %d runs\n"
         "napkin: the larger of the FLOPs at the variant's peak (FFMA %.0f, fp16 tensor %.0f "
         "TFLOP/s) and act1 + act2 at %.2f TB/s\n\n",
         rows, flops * 1e-9, runs, kFfmaPeak * 1e-12, kTensorPeak * 1e-12, kDramPeak * 1e-12);
  printf("| variant | median ms | min ms | TFLOP/s | GB/s | napkin ms | median / napkin |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const variant& v : kVariants) {
    double median = 0, least = 0;
    time_variant(v, l, runs, stream, &median, &least);
    const double bytes =
        (double)rows * (fused_act_bytes(&l.s[v.slot], 1) + fused_act_bytes(&l.s[v.slot], 2));
    const double napkin = 1e3 * std::max(flops / v.peak, bytes / kDramPeak);
    printf("| %s | %.3f | %.3f | %.1f | %.0f | %.3f | %.1fx |\n", v.name, median, least,
           flops / (median * 1e-3) * 1e-12, bytes / (median * 1e-3) * 1e-9, napkin,
           median / napkin);
  }
  lab_close(l);
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
