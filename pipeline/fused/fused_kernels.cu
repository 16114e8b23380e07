// The fused engine's kernels (see fused_kernels.h). Compiled with -fmad=false, because stage 1
// makes the copies with tta_core.h's arithmetic, which must round every operation as the CPU
// does; the network's own multiply-adds are written as __fmaf_rn, fused on purpose.
//
// Why three launches and not one (napkin figures for the mnistCUDNN LeNet, N = 5, fp32, per
// image; H100: 67 TFLOP/s fp32, about 3 TB/s from device memory): the work is 2.3 M multiply-
// adds per copy, 11.5 M per image, so 1.3 M images/s needs 30 TFLOP/s. Between the stages each
// copy's act1 (2,880 floats) and act2 (800 floats) go out and back: 5 x 29 KB = 147 KB per image
// at 3 TB/s is 20 M images/s, 15 times above the compute's need. So each stage keeps only what
// grows large on chip (conv1's 11,520 outputs a copy never leave stage 1), and the stages may
// each take the thread layout that suits them. In fp16 the same holds with half the bytes;
// conv2 and fc1 (94% of the multiply-adds) go to the tensor cores, which at 5% of their peak
// would carry 3 M images/s: what remains on the CUDA cores (the augmentation, conv1, LRN, fc2)
// sets the pace. Stage 3 is two launches: fc1 over the whole batch, its outputs (500 floats a
// copy, 2 KB) out and back once, which costs far less than every small block reading fc1's
// weights from L2 (stage3b_kernel). fp32 batches that fill the GPU take conv2 register-tiled
// (stage2w_kernel) and fc1 as a GEMM. The smallest batches run the same stages' bodies in one
// launch ("small batches", below), where the launches cost more than the work.
#include <cuda_fp16.h>
#include <limits.h>
#include <math.h>

#include "../../augment/merge_core.h"
#include "../../augment/merge_kernel.h"
#include "../../augment/tta_block.cuh"
#include "fused_device.cuh"
#include "fused_kernels.h"

// Lab instrumentation, compiled only with -DFUSED_PHASES (tests/bench/NOTES.md says how): in
// the small batches' kernel, FUSED_PHASE(k) adds the cycles from the start of the block's item
// to phase k of its stage's body; bench_small_trace prints the means (fused_phases_print).
#ifdef FUSED_PHASES
#include <stdio.h>
__device__ unsigned long long fused_phase_sum[FUSED_SMALL_STAGES][16],
    fused_phase_count[FUSED_SMALL_STAGES][16];
// The block's item: its stage and start, in shared memory (a stamp that read them from global
// memory waited ~500 cycles on L2, which the phases then counted); `magic` tells the small
// batches' kernel, which sets them, from the stages' kernels, whose shared memory holds anything.
__shared__ unsigned long long fused_phase_base, fused_phase_magic;
__shared__ int fused_phase_stage;  // -1: between items
constexpr unsigned long long kPhaseMagic = 0x9E3779B97F4A7C15ull;
#define FUSED_PHASE(k)                                                                  \
  do {                                                                                  \
    if (threadIdx.x == 0 && fused_phase_magic == kPhaseMagic && fused_phase_stage >= 0) { \
      atomicAdd(&fused_phase_sum[fused_phase_stage][k], clock64() - fused_phase_base);  \
      atomicAdd(&fused_phase_count[fused_phase_stage][k], 1ull);                        \
    }                                                                                   \
  } while (0)
#define FUSED_PHASE_ITEM(stage)                                                      \
  do {                                                                              \
    fused_phase_magic = kPhaseMagic, fused_phase_stage = (stage);                   \
    fused_phase_base = clock64();                                                   \
  } while (0)
extern "C" void fused_phases_reset(void) {
  static unsigned long long zeros[FUSED_SMALL_STAGES][16];
  cudaMemcpyToSymbol(fused_phase_sum, zeros, sizeof zeros);
  cudaMemcpyToSymbol(fused_phase_count, zeros, sizeof zeros);
}
extern "C" void fused_phases_print(void) {
  unsigned long long sum[FUSED_SMALL_STAGES][16], count[FUSED_SMALL_STAGES][16];
  cudaDeviceSynchronize();
  cudaMemcpyFromSymbol(sum, fused_phase_sum, sizeof sum);
  cudaMemcpyFromSymbol(count, fused_phase_count, sizeof count);
  for (int stage = 0; stage < FUSED_SMALL_STAGES; stage++) {
    printf("    phases of stage %d (cycles from the item's start, mean):", stage);
    for (int k = 0; k < 16; k++)
      if (count[stage][k]) printf(" %d:%.0f", k, (double)sum[stage][k] / count[stage][k]);
    printf("\n");
  }
}
#else
#define FUSED_PHASE(k) do {} while (0)
#define FUSED_PHASE_ITEM(stage) do {} while (0)
#endif

namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kWindow = kFusedWindow;

// The two parts of a block's work in stages 2 and 3 (`steps`): kEarly what no earlier stage
// writes (weights and tables into shared memory, copies left in flight), kLate the rest. The
// stages' own kernels run both at once; the small batches' kernel runs kEarly while the stage
// before is still at work, so that its fills leave the critical path.
constexpr int kEarly = 1, kLate = 2, kWhole = kEarly | kLate;


// Four channels' pooled outputs of a 5x5 convolution over a 6x6 patch: per channel the four
// convolutions under the 2x2 window (without bias), their maximum. w: the four channels' weights
// of tap t at w[t pitch] (16-byte aligned), one 16-byte load a tap.
__device__ __forceinline__ void conv_pool4(const float (&patch)[kWindow][kWindow],
                                           const float* w, int pitch, float (&out)[4]) {
  float a[4][4];
#pragma unroll
  for (int g = 0; g < 4; g++) a[g][0] = a[g][1] = a[g][2] = a[g][3] = 0.0f;
#pragma unroll
  for (int r = 0; r < FUSED_CONV; r++)
#pragma unroll
    for (int s = 0; s < FUSED_CONV; s++) {
      const float4 w4 = *reinterpret_cast<const float4*>(w + (r * FUSED_CONV + s) * pitch);
      const float v[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
      for (int g = 0; g < 4; g++) {
        a[g][0] = __fmaf_rn(v[g], patch[r][s], a[g][0]);
        a[g][1] = __fmaf_rn(v[g], patch[r][s + 1], a[g][1]);
        a[g][2] = __fmaf_rn(v[g], patch[r + 1][s], a[g][2]);
        a[g][3] = __fmaf_rn(v[g], patch[r + 1][s + 1], a[g][3]);
      }
    }
#pragma unroll
  for (int g = 0; g < 4; g++) out[g] = nan_max(nan_max(a[g][0], a[g][1]), nan_max(a[g][2], a[g][3]));
}


// ---- stage 1: augment + conv1 + bias + [ReLU] + pool --------------------------------------------
//
// Block (i, y) takes image i's copies y, y + 1, ... of an equal share (gridDim.y shares: small
// batches spread their copies over more blocks). The image's pixel values and the copies'
// parameters are computed once a block (not once a thread); copies are made into shared memory
// a chunk at a time (as many as fit in kStage1Bytes), zero-padded; then each thread computes
// pooled outputs of a (copy, group of four channels, position) from one 6x6 patch held in
// registers, the four channels' weights of a tap in one 16-byte load from shared memory (laid
// out [tap][channel]: one load a weight, the variant before, left the load unit busier than the
// FMA pipe). fp32 writes them CHW; fp16 writes the four channels of a position as one 8-byte
// store (HWC, channels padded with zeros to fused_c1_pad).

constexpr int kStage1Bytes = 40 * 1024;
constexpr int kGroup1 = 4;

// The copies a block makes at a time, of the `copies` it takes: as many as fit in kStage1Bytes.
__host__ __device__ inline int stage1_chunk(const fused_shape& s, int copies) {
  const int plane = (s.in_h + 2 * s.pad1) * (s.in_w + 2 * s.pad1);
  return min(copies, kStage1Bytes / (int)(plane * sizeof(float)));
}

__device__ __forceinline__ uint32_t half2_bits(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Item i = (c B + b) A + a of a loop over i = threadIdx.x, + kThreads, ...: (c, b, a) kept by
// additions as i advances, where two run-time divisions an item cost ~40 instructions.
struct item_cursor {
  int a, b, c, A, B, da, db;
  __device__ item_cursor(int i, int A_, int B_) : A(A_), B(B_) {
    a = i % A, b = i / A, c = b / B, b -= c * B;
    da = kThreads % A, db = kThreads / A;
  }
  __device__ void next() {
    a += da, b += db;
    if (a >= A) a -= A, b++;
    if (b >= B) c += b / B, b %= B;
  }
};

// One block's work: image `image`'s share `share` of `shares` (the grid's blockIdx.x, .y and
// gridDim.y), and of its channel groups the part `part` of `parts` (the engine's kernel: all,
// 0 of 1; the small batches' kernel splits a copy's conv1 over several items, each making the
// copy again); copies: stage1_shared bytes of shared memory.
template <bool kHalf>
__device__ __forceinline__ void stage1_block(const fused_shape& s, const aug_spec& spec,
                                             const float* __restrict__ w1,
                                             const float* __restrict__ b1,
                                             const uint8_t* __restrict__ images, void* act1,
                                             int image_index, int share, int shares, int part,
                                             int parts, float* copies) {
  __shared__ float image[FUSED_MAX_INPUT * FUSED_MAX_INPUT];  // the pixels' values, once
  __shared__ aug_params params[FUSED_MAX_COPIES];
  __shared__ __align__(16) float weights[FUSED_MAX_K1 * FUSED_CONV * FUSED_CONV];
  __shared__ float bias[FUSED_MAX_K1];  // read once a block from L2, not once a thread
  const int pixels = s.in_h * s.in_w;
  const int pitch = s.in_w + 2 * s.pad1, plane = (s.in_h + 2 * s.pad1) * pitch;
  const int kp = fused_k1_pitch(&s);  // the weights come laid out [tap][channel] (upload_weights)
  // The weights and biases in flight while the image's loads are (the images may be mapped host
  // memory, a PCIe round trip away: the small batches' kernel at batches of more copies than
  // SMs); the chunk loop's first barrier makes them visible.
  block_copy_async(w1, weights, kp * FUSED_CONV * FUSED_CONV);
  static_assert(FUSED_MAX_K1 <= kThreads, "a bias a thread");
  const float my_bias = threadIdx.x < s.k1 ? b1[threadIdx.x] : 0.0f;
  const uint64_t key =
      aug_block_load<kThreads>(images + (size_t)image_index * pixels, pixels, image);  // syncs
  if (threadIdx.x < s.k1) bias[threadIdx.x] = my_bias;
  copy_wait();
  FUSED_PHASE(1);

  const int per_block = (s.copies + shares - 1) / shares;
  const int begin = share * per_block, end = min(s.copies, begin + per_block);
  aug_block_params<kThreads>(spec, key, begin, end - begin, params);  // the loop's barrier
  FUSED_PHASE(2);
  const int chunk = stage1_chunk(s, per_block);
  const int channels = kHalf ? fused_c1_pad(&s) : s.k1;
  const int positions = s.p1_h * s.p1_w, all_groups = (channels + kGroup1 - 1) / kGroup1;
  const int per_part = (all_groups + parts - 1) / parts, group0 = part * per_part;
  const int groups = min(per_part, all_groups - group0);  // this part's
  const float inverse_w = 1.0f / (float)s.p1_w;  // pos / p1_w, exact for pos < 1024
  for (int first = begin; first < end; first += chunk) {
    const int n = min(chunk, end - first);
    for (int i = threadIdx.x; i < n * plane; i += kThreads) copies[i] = 0.0f;  // the padding
    __syncthreads();
    for (int c = 0; c < n; c++)
      aug_block_copy<kThreads>(spec, params[first - begin + c], key, first + c, image, 1,
                               s.in_h, s.in_w, copies + c * plane + s.pad1 * pitch + s.pad1, pitch);
    __syncthreads();
    FUSED_PHASE(3);
    // fp16: the groups of a position on consecutive threads, so that a warp's 8-byte stores
    // (HWC) are contiguous; fp32 (CHW): the positions of a group.
    for (item_cursor k(threadIdx.x, kHalf ? groups : positions, kHalf ? positions : groups);
         k.c < n; k.next()) {
      const int pos = kHalf ? k.b : k.a, group = group0 + (kHalf ? k.a : k.b), c = k.c;
      float v[kGroup1] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (group * kGroup1 < s.k1) {  // else fp16's padding channels: zeros
        const int py = __float2int_rz(((float)pos + 0.5f) * inverse_w), px = pos - py * s.p1_w;
        float patch[kWindow][kWindow];
        load_patch(patch, copies + c * plane + 2 * py * pitch + 2 * px, pitch);
        conv_pool4(patch, weights + group * kGroup1, kp, v);
#pragma unroll
        for (int g = 0; g < kGroup1; g++) {
          const int k = group * kGroup1 + g;
          v[g] = k < s.k1 ? relu_if(s.relu1, v[g] + bias[k]) : 0.0f;
        }
      }
      const size_t row = (size_t)image_index * s.copies + first + c;
      if (kHalf) {
        const uint2 four = {half2_bits(v[0], v[1]), half2_bits(v[2], v[3])};
        *reinterpret_cast<uint2*>(static_cast<__half*>(act1) + (row * positions + pos) * channels +
                                  group * kGroup1) = four;
      } else {
        float* out = static_cast<float*>(act1) + row * s.k1 * positions + pos;
#pragma unroll
        for (int g = 0; g < kGroup1; g++)
          if (group * kGroup1 + g < s.k1) out[(size_t)(group * kGroup1 + g) * positions] = v[g];
      }
    }
    __syncthreads();  // the copies are overwritten next
    FUSED_PHASE(4);
  }
}

template <bool kHalf>
__global__ void __launch_bounds__(kThreads)
    stage1_kernel(fused_shape s, aug_spec spec, const float* __restrict__ w1,
                  const float* __restrict__ b1, const uint8_t* __restrict__ images,
                  void* __restrict__ act1) {
  extern __shared__ float copies[];
  stage1_block<kHalf>(s, spec, w1, b1, images, act1, blockIdx.x, blockIdx.y, gridDim.y, 0, 1,
                      copies);
}

// ---- stage 2: conv2 + bias + [ReLU] + pool --------------------------------------------------------
//
// fp32: a block holds `per_block` copies' act1 in shared memory (zero-padded; each copy's start
// one word further along the banks, so that a warp's two copies never share a bank). Lane =
// (copy, pooled position); the output channels are shared out in groups of kGroup2 over the warps
// of the gridDim.y blocks of those copies (small batches spread over more blocks). Per input
// channel a 6x6 patch in registers; per tap the group's weights in two 16-byte loads, the same
// address for the whole warp (the weights are laid out [input channel][tap][output channel]):
// 32 multiply-adds a load, where one weight a load (the variant before, tests/bench/conv2_lab)
// left the FMA pipe waiting on the load unit. Batches too small to fill the GPU twice with
// blocks take one channel a warp (kGroup 1) over gridDim.y blocks of the same copies.

constexpr int kGroup2 = 8;

__host__ __device__ inline int stage2_copy_stride(const fused_shape& s) {
  return s.k1 * (s.p1_h + 2 * s.pad2) * (s.p1_w + 2 * s.pad2) | 1;
}

// One block's work: copies `copies` (a group of per_block) and channel group `group` (the grid's
// blockIdx.x and .y), computed by `warps` warps (the block's others help fill shared memory);
// tile: stage2_shared (kGroup 8) or stage2_one_shared (1) bytes of shared memory.
template <int kGroup>
__device__ __forceinline__ void stage2_block(const fused_shape& s, const float* __restrict__ w2t,
                                             const float* __restrict__ b2, const float* act1,
                                             int rows, float* act2, int copies, int group,
                                             int warps, float* tile, int steps = kWhole) {
  const int positions = s.p2_h * s.p2_w, per_block = fused_stage2_copies(&s);
  const int pitch = s.p1_w + 2 * s.pad2, plane = (s.p1_h + 2 * s.pad2) * pitch;
  const int stride = stage2_copy_stride(s);
  const int row0 = copies * per_block, n = min(per_block, rows - row0);
  // One channel a warp (small batches): the block's channels' weights into shared memory first,
  // [input channel][tap][warp], in one pass of loads all in flight (read from L1/L2 a tap at a
  // time, each warp waited on them in turn: 31 us of a batch of one on the H100). 4 or 8 warps
  // take whole 16-byte units (k2p is a multiple of 8), without an element's divisions.
  const int k2p = fused_k2_pad(&s), taps = FUSED_CONV * FUSED_CONV;
  float* weights = tile + (per_block * stride + 3) / 4 * 4;
  if (kGroup == 1 && (steps & kEarly)) {
    const float* first = w2t + group * warps;
    if (warps == 4 || warps == 8) {
      const int shift = warps / 8;  // 16-byte units a row: 1 << shift
      block_batched<8, float4>(
          s.k1 * taps << shift,
          [&](int i) {
            return __ldg(reinterpret_cast<const float4*>(first + (size_t)(i >> shift) * k2p) +
                         (i & shift));
          },
          [&](int i, float4 v) { reinterpret_cast<float4*>(weights)[i] = v; });
    } else {
      block_batched<8, float>(
          s.k1 * taps * warps,
          [&](int i) { return __ldg(first + (size_t)(i / warps) * k2p + i % warps); },
          [&](int i, float v) { weights[i] = v; });
    }
  }
  if (!(steps & kLate)) return;
  load_padded_act1(s, act1, row0, n, stride, tile);
  FUSED_PHASE(1);
  copy_wait();
  __syncthreads();
  FUSED_PHASE(2);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c = lane / positions, pos = lane % positions;
  const int k0 = (group * warps + warp) * kGroup;
  if (warp >= warps || c >= n || k0 >= s.k2) return;
  const int py = pos / s.p2_w, px = pos % s.p2_w;
  float acc[kGroup][4];
#pragma unroll
  for (int g = 0; g < kGroup; g++) acc[g][0] = acc[g][1] = acc[g][2] = acc[g][3] = 0.0f;
  for (int ci = 0; ci < s.k1; ci++) {
    float patch[kWindow][kWindow];
    load_patch(patch, tile + c * stride + ci * plane + 2 * py * pitch + 2 * px, pitch);
    const float* w = w2t + (size_t)ci * FUSED_CONV * FUSED_CONV * k2p + k0;
#pragma unroll
    for (int r = 0; r < FUSED_CONV; r++)
#pragma unroll
      for (int q = 0; q < FUSED_CONV; q++) {
        float v[kGroup];
        const float* tap = w + (r * FUSED_CONV + q) * k2p;
        if (kGroup == kGroup2) {
          const float4 lo = __ldg(reinterpret_cast<const float4*>(tap));
          const float4 hi = __ldg(reinterpret_cast<const float4*>(tap + 4));
          const float all[kGroup2] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
          for (int g = 0; g < kGroup; g++) v[g] = all[g];
        } else {
          v[0] = weights[((size_t)ci * taps + r * FUSED_CONV + q) * warps + warp];
        }
#pragma unroll
        for (int g = 0; g < kGroup; g++) {
          acc[g][0] = __fmaf_rn(v[g], patch[r][q], acc[g][0]);
          acc[g][1] = __fmaf_rn(v[g], patch[r][q + 1], acc[g][1]);
          acc[g][2] = __fmaf_rn(v[g], patch[r + 1][q], acc[g][2]);
          acc[g][3] = __fmaf_rn(v[g], patch[r + 1][q + 1], acc[g][3]);
        }
      }
  }
  float* out = act2 + (size_t)(row0 + c) * s.fc_in + pos;
#pragma unroll
  for (int g = 0; g < kGroup; g++) {
    const int k = k0 + g;
    if (k < s.k2) {
      const float m = nan_max(nan_max(acc[g][0], acc[g][1]), nan_max(acc[g][2], acc[g][3]));
      out[(size_t)k * positions] = relu_if(s.relu2, m + b2[k]);
    }
  }
  FUSED_PHASE(3);
}

template <int kGroup>
__global__ void __launch_bounds__(kThreads)
    stage2_kernel(fused_shape s, const float* __restrict__ w2t, const float* __restrict__ b2,
                  const float* __restrict__ act1, int rows, float* __restrict__ act2) {
  extern __shared__ float tile[];
  stage2_block<kGroup>(s, w2t, b2, act1, rows, act2, blockIdx.x, blockIdx.y, blockDim.x / 32, tile);
}

// fp32, batches that fill the GPU (the "wide" kernels): conv2 as a register-tiled implicit GEMM.
// A thread owns one pooled row of four output channels: the 2 x 8 conv outputs under it, 64
// accumulators. Per (input channel, kernel row) it reads the two input rows it needs (12
// floats each, three 16-byte loads) and per tap the four channels' weights (one 16-byte load):
// 320 multiply-adds for 11 loads, where the per-position kernel above takes 32 a load and reads
// every weight from L1 or L2 for only 2 copies. A block's 256 threads take consecutive
// (copy, channel group, pooled row) items, the copies they touch held in shared memory with
// their weights, wide_plan.chunk input channels at a time (as many as fit in kWideBytes). The
// multiply-adds of an output come in the per-position kernel's order: the same bits.

constexpr int kWideQ = 4;                  // pooled columns a thread: the shape's p2_w
constexpr int kWideCols = 2 * kWideQ + 4;  // a window row: 8 conv columns and 4 more taps
constexpr int kWideBytes = 40 * 1024;

struct wide_plan {
  int groups, per_copy, copies;  // channel groups of 4; items a copy; copies a block may touch
  int pitch, plane, chunk;       // shared rows' pitch and a plane (zero-padded); channels a pass
};

__host__ __device__ inline wide_plan stage2_wide_plan(const fused_shape& s) {
  wide_plan p;
  p.groups = (s.k2 + 3) / 4;
  p.per_copy = p.groups * s.p2_h;
  p.copies = (kThreads - 1) / p.per_copy + 2;
  p.pitch = max((s.p1_w + 2 * s.pad2 + 3) / 4 * 4, kWideCols);
  p.plane = (s.p1_h + 2 * s.pad2) * p.pitch;
  const int per_channel = (int)sizeof(float) * (p.copies * p.plane + 25 * fused_k2_pad(&s));
  p.chunk = min(s.k1, kWideBytes / per_channel);
  return p;
}

inline size_t stage2_wide_shared(const fused_shape& s) {
  const wide_plan p = stage2_wide_plan(s);
  return sizeof(float) * p.chunk * ((size_t)p.copies * p.plane + 25 * fused_k2_pad(&s));
}

__global__ void __launch_bounds__(kThreads, 2)
    stage2w_kernel(fused_shape s, const float* __restrict__ w2t, const float* __restrict__ b2,
                   const float* __restrict__ act1, int rows, float* __restrict__ act2) {
  extern __shared__ __align__(16) float wide[];
  const wide_plan p = stage2_wide_plan(s);
  const int k2p = fused_k2_pad(&s), taps = FUSED_CONV * FUSED_CONV;
  float* acts = wide;                                  // [copy][channel][plane]
  float* weights = wide + p.chunk * p.copies * p.plane;  // [channel][tap][k2p]
  const int item0 = blockIdx.x * kThreads, first = item0 / p.per_copy;
  const int present = min((item0 + kThreads - 1) / p.per_copy, rows - 1) - first + 1;
  const int item = item0 + threadIdx.x, copy = item / p.per_copy, rest = item % p.per_copy;
  const int group = rest / s.p2_h, py = rest % s.p2_h;
  const int in_plane = s.p1_h * s.p1_w;
  // Straight 16-byte copies where shared memory has act1's own layout (no padding, rows of
  // whole 16-byte units); element by element otherwise, the padding zeroed once.
  const bool straight = s.pad2 == 0 && p.pitch == s.p1_w;
  if (!straight)
    for (int i = threadIdx.x; i < p.chunk * p.copies * p.plane; i += kThreads) acts[i] = 0.0f;

  float acc[2][2 * kWideQ][4];
#pragma unroll
  for (int r = 0; r < 2; r++)
#pragma unroll
    for (int j = 0; j < 2 * kWideQ; j++) acc[r][j][0] = acc[r][j][1] = acc[r][j][2] = acc[r][j][3] = 0.0f;
  const float* a_at = acts + (copy - first) * p.chunk * p.plane + 2 * py * p.pitch;
  const float* w_at = weights + 4 * group;
  for (int ci0 = 0; ci0 < s.k1; ci0 += p.chunk) {
    const int kn = min(p.chunk, s.k1 - ci0);
    __syncthreads();  // the last pass's reads are done
    const float4* wsrc = reinterpret_cast<const float4*>(w2t + (size_t)ci0 * taps * k2p);
    for (int i = threadIdx.x; i < kn * taps * k2p / 4; i += kThreads)
      reinterpret_cast<float4*>(weights)[i] = __ldg(wsrc + i);
    if (straight) {
      const int units = kn * in_plane / 4, stride = p.chunk * p.plane / 4;
      for (int i = threadIdx.x; i < present * units; i += kThreads) {
        const int c = i / units, u = i - c * units;
        reinterpret_cast<float4*>(acts)[c * stride + u] = __ldg(reinterpret_cast<const float4*>(
            act1 + ((size_t)(first + c) * s.k1 + ci0) * in_plane) + u);
      }
    } else {
      for (int i = threadIdx.x; i < present * kn * in_plane; i += kThreads) {
        const int q = i / in_plane, at = i - q * in_plane, c = q / kn, cc = q - c * kn;
        const int y = at / s.p1_w, x = at - y * s.p1_w;
        acts[(c * p.chunk + cc) * p.plane + (y + s.pad2) * p.pitch + x + s.pad2] =
            __ldg(act1 + ((size_t)(first + c) * s.k1 + ci0 + cc) * in_plane + at);
      }
    }
    __syncthreads();
    for (int cc = 0; cc < kn; cc++) {
      const float* a = a_at + cc * p.plane;
      const float* w = w_at + cc * taps * k2p;
#pragma unroll
      for (int ky = 0; ky < FUSED_CONV; ky++) {
        float in[2][kWideCols];
#pragma unroll
        for (int r = 0; r < 2; r++)
#pragma unroll
          for (int u = 0; u < kWideCols / 4; u++) {
            const float4 v = *reinterpret_cast<const float4*>(a + (ky + r) * p.pitch + 4 * u);
            in[r][4 * u] = v.x, in[r][4 * u + 1] = v.y, in[r][4 * u + 2] = v.z, in[r][4 * u + 3] = v.w;
          }
#pragma unroll
        for (int kx = 0; kx < FUSED_CONV; kx++) {
          const float4 w4 = *reinterpret_cast<const float4*>(w + (ky * FUSED_CONV + kx) * k2p);
          const float v[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
          for (int r = 0; r < 2; r++)
#pragma unroll
            for (int j = 0; j < 2 * kWideQ; j++)
#pragma unroll
              for (int k = 0; k < 4; k++) acc[r][j][k] = __fmaf_rn(v[k], in[r][j + kx], acc[r][j][k]);
        }
      }
    }
  }
  if (copy >= rows) return;
  const int positions = s.p2_h * s.p2_w;
  float* out = act2 + (size_t)copy * s.fc_in + py * s.p2_w;
#pragma unroll
  for (int k = 0; k < 4; k++) {
    const int channel = 4 * group + k;
    if (channel < s.k2)
#pragma unroll
      for (int q = 0; q < kWideQ; q++) {
        const float m = nan_max(nan_max(acc[0][2 * q][k], acc[0][2 * q + 1][k]),
                                nan_max(acc[1][2 * q][k], acc[1][2 * q + 1][k]));
        out[channel * positions + q] = relu_if(s.relu2, m + b2[channel]);
      }
  }
}

// fp16: conv2 as an implicit GEMM on the tensor cores, mma.sync m16n8k16 (fp16 in, fp32
// accumulation; at 5% of the tensor cores' peak Hopper's wgmma would not change the pace).
// M = a copy's conv outputs, ordered so that the 2x2 pooling falls inside a lane: in a tile of
// 16 rows, row (qy 8 + j) is the output (2 py + qy, 2 px + (j & 1)) of pooled position
// 4 tile + j / 2; a lane's accumulators hold rows g and g + 8 (the two qy), its neighbour at
// lane ^ 4 the other qx. N = conv2's output channels in tiles of 8; K = (tap, input channel)
// with the channels innermost in groups of 8, so that each ldmatrix row is one pixel's 16
// contiguous bytes of act1 (HWC in shared memory, the pixels' pitch an odd number of 16-byte
// units: the 8 rows of an ldmatrix fall in distinct banks). The weights come as B fragments
// already in the lanes' order (fused_pack_weights): one 8-byte load per lane per (k step,
// n tile), from L1 (68 KB for LeNet). A warp takes two row tiles of one copy (the small batches'
// kernel, one copy an item: one row tile).

__host__ __device__ inline int stage2h_pixel_pitch(const fused_shape& s) {
  const int c = fused_c1_pad(&s);
  return c / 8 % 2 ? c : c + 8;
}

__host__ __device__ inline int stage2h_kgroups(const fused_shape& s) {
  return FUSED_CONV * FUSED_CONV * fused_c1_pad(&s) / 8;
}

__host__ __device__ inline int stage2h_ksteps(const fused_shape& s) {
  return (stage2h_kgroups(s) + 1) / 2;
}

// Shared memory of the fp16 stage 2: the k groups' offsets, 16 zero bytes, ...
constexpr int kOffsetBytes = FUSED_CONV * FUSED_CONV * FUSED_MAX_K1 / 8 * 4;
// ... then conv2's biases (copied in early with the rest: each block's first read of them from
// L2 stood on the critical path, ~0.3 us), then the copies' tiles.
constexpr int kStage2hHead = kOffsetBytes + sizeof(uint4) + FUSED_MAX_K2 * sizeof(float);

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&a)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(address)
               : "memory");
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint2 b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
}

// This lane's ldmatrix row address for a 16 x 16 A tile whose row r starts at base + r pitch
// bytes (the caller's row mapping aside): lanes 8 m .. 8 m + 7 give matrix m's rows, matrices
// (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
__device__ __forceinline__ int ldmatrix_row(int lane) { return (lane & 7) + (lane >> 3 & 1) * 8; }

// One block's work: copies `copies` (a group of per_block), each over slots x parts warps, a
// slot kM of the copy's 2 pairs row tiles: warp (c, slot, part) takes the n tiles tile0 + part,
// tile0 + part + parts, ... (kTiles of them; the engine's kernel: one part, all 8 from tile0 0;
// the small batches' kernel: per_block 1, the item's group of parts x kTiles tiles from tile0,
// as many parts as fill 8 warps). Every output's sum is the same sequence of mma whatever the
// split: the same bits. smem: stage2h_shared(s, per_block), and with kSharedB the group's
// fragments after it (the small batches' kernel, where a block's few warps would otherwise wait
// on L2 for every k step's fragments: copied in with the tile, ~18 KB a group of 2 for LeNet).
template <bool kSharedB, int kTiles, int kM = 2>
__device__ __forceinline__ void stage2h_block(const fused_shape& s, const uint2* __restrict__ w2h,
                                              const float* __restrict__ b2, const __half* act1,
                                              int rows, __half* act2, int copies, int per_block,
                                              int parts, int tile0, unsigned char* smem,
                                              int steps = kWhole) {
  int* offsets = reinterpret_cast<int*>(smem);
  uint4* zero = reinterpret_cast<uint4*>(smem + kOffsetBytes);
  float* bias = reinterpret_cast<float*>(smem + kOffsetBytes + sizeof(uint4));
  __half* tile = reinterpret_cast<__half*>(smem + kStage2hHead);
  const int pairs = fused_stage2_tile_pairs(&s), slots = 2 * pairs / kM;
  const int c1p = fused_c1_pad(&s), cblocks = c1p / 8, pp = stage2h_pixel_pitch(s);
  const int pitch = s.p1_w + 2 * s.pad2, pixels = (s.p1_h + 2 * s.pad2) * pitch;
  const int kgroups = stage2h_kgroups(s), ksteps = stage2h_ksteps(s), units = pp / 8;
  const int row0 = copies * per_block, n = min(per_block, rows - row0);
  const int ntiles = fused_k2_pad(&s) / 8, group = min(parts * kTiles, ntiles - tile0);
  if (steps & kEarly) {
    for (int i = threadIdx.x; i < kgroups; i += blockDim.x) {
      const int tap = i / cblocks;
      offsets[i] = ((tap / FUSED_CONV * pitch + tap % FUSED_CONV) * pp + i % cblocks * 8) * 2;
    }
    if (threadIdx.x == 0) *zero = make_uint4(0, 0, 0, 0);
    for (int k = tile0 * 8 + threadIdx.x; k < min(s.k2, (tile0 + group) * 8); k += blockDim.x)
      bias[k - tile0 * 8] = b2[k];
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  // The weights: the group's fragments of each k step (group x 256 contiguous bytes), a k step
  // a warp, by cp.async in flight with the tile's.
  const uint2* b = w2h + lane + (size_t)(tile0 + warp / slots % parts) * 32;
  int ks_stride = ntiles * 32;
  if (kSharedB) {
    uint2* to = reinterpret_cast<uint2*>(tile + (size_t)per_block * pixels * pp);
    for (int ks = warp; ks < ksteps && (steps & kEarly); ks += warps)
      for (int u = lane; u < group * 16; u += 32)
        copy16_async(reinterpret_cast<uint4*>(to + (size_t)ks * group * 32) + u,
                     reinterpret_cast<const uint4*>(w2h + ((size_t)ks * ntiles + tile0) * 32) + u);
    b = to + lane + (warp / slots % parts) * 32;
    ks_stride = group * 32;
  }
  if (!(steps & kLate)) return;
  FUSED_PHASE(1);
  // The copies' rows over the warps, a row's 16-byte units over the lanes (cp.async where
  // inside, zeros elsewhere): the divisions (by run-time sizes, tens of instructions each) once
  // a thread, not once a unit.
  const int height = s.p1_h + 2 * s.pad2;
  for (int item = lane; item < pitch * units; item += 32) {
    const int x = item / units - s.pad2, u = item % units;
    const bool inside = u < cblocks && x >= 0 && x < s.p1_w;
    for (int c = 0, y = warp; c < n;) {
      const int sy = y - s.pad2;
      uint4* to = reinterpret_cast<uint4*>(tile + ((size_t)c * pixels + y * pitch) * pp + item * 8);
      if (inside && sy >= 0 && sy < s.p1_h)
        copy16_async(to, act1 + ((size_t)(row0 + c) * s.p1_h * s.p1_w + sy * s.p1_w + x) * c1p + u * 8);
      else
        *to = make_uint4(0, 0, 0, 0);
      for (y += warps; y >= height && c < n; y -= height) c++;
    }
  }
  copy_wait();
  __syncthreads();
  FUSED_PHASE(2);
  // All 8 tiles a warp (the engine's kernel) is one part: part 0 at compile time, the tiles'
  // offsets constants.
  const int c = warp / (slots * parts), slot = warp % slots;
  const int part = kTiles == FUSED_MAX_K2 / 8 ? 0 : warp / slots % parts;
  if (c >= n) return;
  const int positions = s.p2_h * s.p2_w;
  const uint32_t copy_addr =
      (uint32_t)__cvta_generic_to_shared(tile + (size_t)c * pixels * pp);
  uint32_t row_addr[kM];
#pragma unroll
  for (int mt = 0; mt < kM; mt++) {
    const int r = ldmatrix_row(lane), j = r & 7;
    int p = (slot * kM + mt) * 4 + j / 2;
    if (p >= positions) p = 0;  // a tile's spare rows: any real position, their results unused
    const int cy = 2 * (p / s.p2_w) + r / 8, cx = 2 * (p % s.p2_w) + (j & 1);
    row_addr[mt] = copy_addr + (cy * pitch + cx) * pp * 2;
  }
  const uint32_t zero_addr = (uint32_t)__cvta_generic_to_shared(zero);
  // The warp's n tiles: part, part + parts, ... of the group (kTiles of them at most: the
  // engine's kernel one part, all 8; the small batches' kernel 1, 2 or 4, whose accumulators
  // and epilogue code, all 8 tiles' predicated, took registers and instruction fetches for
  // nothing).
  float acc[kM][kTiles][4];
#pragma unroll
  for (int mt = 0; mt < kM; mt++)
#pragma unroll
    for (int j = 0; j < kTiles; j++)
      acc[mt][j][0] = acc[mt][j][1] = acc[mt][j][2] = acc[mt][j][3] = 0.0f;
  // The weights' pointer advanced a k step at a time, the warp's n tiles at offsets from it
  // computed once: an index computed afresh for each load cost ~8 integer instructions a load
  // (70 a k step, for 14 mma), a run-time modulo per tile ~20.
  const int tile_parts = kTiles == FUSED_MAX_K2 / 8 ? 1 : parts;
  unsigned mine = 0;  // which of the kTiles are real
#pragma unroll 1
  for (int j = 0; j < kTiles && part + j * tile_parts < group; j++) mine |= 1u << j;
  const int tile_step = tile_parts * 32;
  // A k step's A offset in the tile (-1: the half step of zeros that ends an odd count of k
  // groups), then its operands: A's fragments by ldmatrix, B's for each of the warp's real n
  // tiles.
  auto offset_of = [&](int ks) {
    const int kg = 2 * ks + lane / 16;
    return kg < kgroups ? offsets[kg] : -1;
  };
  auto load_step = [&](int ks, int offset, uint32_t (&a)[kM][4], uint2 (&f)[kTiles]) {
#pragma unroll
    for (int mt = 0; mt < kM; mt++)
      ldmatrix_x4(a[mt], offset >= 0 ? row_addr[mt] + offset : zero_addr);
    const uint2* bk = b + (size_t)ks * ks_stride;
#pragma unroll
    for (int j = 0; j < kTiles; j++)
      if (mine >> j & 1) f[j] = kSharedB ? bk[j * tile_step] : __ldg(bk + j * tile_step);
  };
  auto mma_step = [&](const uint32_t (&a)[kM][4], const uint2 (&f)[kTiles]) {
#pragma unroll
    for (int j = 0; j < kTiles; j++)
      if (mine >> j & 1)
#pragma unroll
        for (int mt = 0; mt < kM; mt++) mma_16816(acc[mt][j], a[mt], f[j]);
  };
  if (kTiles <= 4) {
    // The small batches' kernel: the next k step's loads issued before this one's mma, two sets
    // of registers in turn, and each step's offset loaded two steps ahead (waited on just before
    // its ldmatrix, it chained with it and the mma: ~100 cycles a k step at one image, where
    // tail_lab's lone warp takes 40 with the offsets ahead). The same mma in the same order on
    // every accumulator: the same bits.
    uint32_t a0[kM][4], a1[kM][4];
    uint2 f0[kTiles], f1[kTiles];
    int o0 = offset_of(0), o1 = offset_of(1);
    load_step(0, o0, a0, f0);
    o0 = offset_of(2);
    int ks = 0;
    for (; ks + 1 < ksteps; ks += 2) {
      load_step(ks + 1, o1, a1, f1);
      o1 = offset_of(ks + 3);
      mma_step(a0, f0);
      if (ks + 2 < ksteps) {
        load_step(ks + 2, o0, a0, f0);
        o0 = offset_of(ks + 4);
      }
      mma_step(a1, f1);
    }
    if (ks < ksteps) mma_step(a0, f0);  // an odd count: the last step, loaded above
  } else {  // the engine's kernel, as measured (tests/bench/NOTES.md)
    const uint2* bk = b;
    for (int ks = 0; ks < ksteps; ks++, bk += ks_stride) {
      const int kg = 2 * ks + lane / 16;
      const bool real = kg < kgroups;
      const int offset = real ? offsets[kg] : 0;
      uint32_t a[kM][4];
#pragma unroll
      for (int mt = 0; mt < kM; mt++) ldmatrix_x4(a[mt], real ? row_addr[mt] + offset : zero_addr);
#pragma unroll
      for (int j = 0; j < kTiles; j++)
        if (mine >> j & 1) {
          const uint2 f = kSharedB ? bk[j * tile_step] : __ldg(bk + j * tile_step);
#pragma unroll
          for (int mt = 0; mt < kM; mt++) mma_16816(acc[mt][j], a[mt], f);
        }
    }
  }
  const int g = lane / 4, t = lane % 4, a2p = fused_act2_pitch(&s);
  __half* out = act2 + (size_t)(row0 + c) * a2p;
  if (slot == 0 && part == 0 && tile0 == 0)  // the row's padding: zeros, which fc1's k steps read
    for (int k = s.fc_in + lane; k < a2p; k += 32) out[k] = __float2half_rn(0.0f);
#pragma unroll
  for (int mt = 0; mt < kM; mt++)
#pragma unroll
    for (int j = 0; j < kTiles; j++)
      if (mine >> j & 1) {
        const int nt = tile0 + part + j * tile_parts;
        float v[2] = {nan_max(acc[mt][j][0], acc[mt][j][2]),
                      nan_max(acc[mt][j][1], acc[mt][j][3])};
        v[0] = nan_max(v[0], __shfl_xor_sync(0xffffffffu, v[0], 4));
        v[1] = nan_max(v[1], __shfl_xor_sync(0xffffffffu, v[1], 4));
        const int p = (slot * kM + mt) * 4 + g / 2;
        if (g % 2 == 0 && p < positions)
#pragma unroll
          for (int h = 0; h < 2; h++) {
            const int k = nt * 8 + 2 * t + h;
            if (k < s.k2)
              out[k * positions + p] = __float2half_rn(relu_if(s.relu2, v[h] + bias[k - tile0 * 8]));
          }
      }
  FUSED_PHASE(3);
}

__global__ void __launch_bounds__(kThreads)
    stage2h_kernel(fused_shape s, const uint2* __restrict__ w2h, const float* __restrict__ b2,
                   const __half* __restrict__ act1, int rows, __half* __restrict__ act2) {
  extern __shared__ __align__(16) unsigned char smem[];
  stage2h_block<false, FUSED_MAX_K2 / 8>(s, w2h, b2, act1, rows, act2, blockIdx.x,
                                         fused_stage2_copies(&s), 1, 0, smem);
}

// ---- stage 3: fc1 + ReLU + [LRN] + fc2 + softmax + merge ------------------------------------------
//
// Two launches: fc1 over all rows into a workspace (fc1's outputs, 2 KB a copy, one trip through
// device memory), by one of three kernels: fp16 fc1h_kernel (tensor cores); fp32 fc1f_kernel (an
// FFMA GEMM, batches that fill the GPU) or fc1n_kernel (smaller batches, spread over many
// blocks). Then stage3b_kernel: per_block images a block (rows = per_block x N, at most 64;
// fewer in small batches so that more blocks share the work), LRN + fc2 + softmax + merge
// (stage3_tail). In one block with the rest, fc1 read all of its weights (1.6 MB for LeNet in
// fp32) once a block of 30 rows, and a batch of one read them with one SM (0.15 ms).

// Stage 3b's rows in shared memory: kRowLead zeros, fc_out values, zeros up to the pitch (at
// least kLrnMost / 2 of them and the rest of the last 32 outputs), a multiple of 4 floats so that
// every row starts 16-byte aligned.
constexpr int kRowLead = 4;
__host__ __device__ inline int stage3_pitch(const fused_shape& s) {
  return kRowLead + (s.fc_out + 31) / 32 * 32 + 4;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// u / d for 0 <= u, d < 2^16 by a multiplication: d's reciprocal rounded up, exact in that range
// (a run-time division is ~20 dependent instructions).
struct small_div {
  unsigned d, inverse;
  __device__ explicit small_div(int d_) : d(d_), inverse(0xffffffffu / d_ + 1) {}
  __device__ int operator()(int u) const { return d == 1 ? u : (int)__umulhi((unsigned)u, inverse); }
};

// After fc1: hidden holds the block's rows in shared memory, ReLU applied (a barrier since),
// row r's outputs at hidden[r stage3_pitch + kRowLead + o], zeros on both sides. In three
// steps over all the block's warps (one warp a row, the variant before, left a batch of one's
// five rows on five warps, and its clamped and predicated indices made ~11 instructions of
// every LRN term; 6.6 us on the H100):
//  - LRN in place, whole rows a round (a window never leaves its row), a warp a (row, 32
//    outputs) unit: a round's values into registers, a barrier, then written back. A window's
//    terms read the zeros beside the row where it runs over an end: fma(0, 0, sum) is sum
//    (sum >= +0), the same bits as leaving them out. Windows of up to kLrnMost terms are
//    unrolled, the terms beyond lrn_n selected away, and taken term by term over a warp's
//    kLrnUnits units so that their chains interleave (a round's spare units repeat its last,
//    not stored). Ten units a warp: an image's five rows of LeNet's 16 units in one round (at
//    eight, a second round for the fifth row: stage 3b's item at one image 6.4 -> 5.8 us);
//  - fc2 a warp a (row, four classes): lane l the outputs l, l + 32, ... in order (the lanes
//    beyond fc_out multiply zeros: the sums unchanged), the four sums' shuffles interleaved,
//    the logits into probs;
//  - softmax a warp a row, over the lanes.
// Then the merge, a thread per (image, class) for the merged vector (kept in shared memory: the
// records may be mapped host memory, too far to read back) and a thread per image for the rest
// (merge_core.h's steps, each value as merge_image computes it). Every value is the same
// sequence of operations whichever warp computes it: the same bits in both precisions and in
// every kernel that calls this. What a batch of one's item waits on is chains of dependent
// shared-memory loads and arithmetic, not instruction fetch (each item done twice, the second
// as slow as the first: tests/bench/NOTES.md).
constexpr int kLrnMost = 8, kLrnUnits = 10;

// stage3_tail's merge in one mode, known at compile time: with the mode a run-time value, each
// class's value took ~620 cycles of one thread instead of ~240 (tail_lab), every mode's code
// in the way.
// The extras (merge_core.h) in parts: each copy's entropy and class from the softmax's warp
// (parts[2 r], parts[2 r + 1] for row r), each class's share of the mean's entropy beside its
// merged value (parts[2 rows + i]); the image's thread adds them up in merge_extras_from. Done
// by one thread per image as merge_extras does, they cost a batch of one ~10 us.
template <int kMode>
__device__ __forceinline__ void stage3_merge(const fused_shape& s, const float* __restrict__ mw,
                                             const float* probs, float* merged, float* parts,
                                             int images, int image0, size_t record_size,
                                             unsigned char* __restrict__ records) {
  const ttp_merge merge = static_cast<ttp_merge>(kMode);
  const int t = threadIdx.x, rows = images * s.copies;
  for (int i = t; i < images * s.classes; i += kThreads) {
    const int image = i / s.classes, k = i % s.classes;
    const float* p = probs + image * s.copies * s.classes;
    int winners[MERGE_MAX_COPIES];
    merge_winners(merge, p, s.copies, s.classes, winners);
    const double norm = merge_norm(merge, p, s.copies, s.classes, winners, mw);
    merged[i] = merge_class(merge, p, s.copies, s.classes, k, winners, norm, mw);
    reinterpret_cast<float*>(records + (size_t)(image0 + image) * record_size +
                             sizeof(ttp_result))[k] = merged[i];
    if (s.copies > 1)
      parts[2 * rows + i] = merge_mean_surprise(p, s.copies, s.classes, k, mw);
  }
  __syncthreads();
  FUSED_PHASE(3);
  if (t < images) {
    ttp_result result;
    const float* p = probs + t * s.copies * s.classes;
    merge_finish(merge, p, s.copies, s.classes, merged + t * s.classes, &result, mw);
    unsigned char* record = records + (size_t)(image0 + t) * record_size;
    *reinterpret_cast<ttp_result*>(record) = result;
    float of_mean = 0, copies_sum = 0, agree_share = 0, extras[MERGE_EXTRAS];
    int agree = 0;
    for (int k = 0; k < s.classes && s.copies > 1; k++) of_mean += parts[2 * rows + t * s.classes + k];
    for (int c = 0; c < s.copies && s.copies > 1; c++) {
      const int r = t * s.copies + c;
      const bool agrees = __float_as_int(parts[2 * r + 1]) == result.class_index;
      if (mw) {
        copies_sum += mw[c] * parts[2 * r], agree_share += agrees ? mw[c] : 0.0f;
      } else {
        copies_sum += parts[2 * r], agree += agrees;
      }
    }
    if (mw)
      merge_extras_weighted_from(of_mean, copies_sum, agree_share, s.copies, extras);
    else
      merge_extras_from(of_mean, copies_sum, agree, s.copies, extras);
    float* to = reinterpret_cast<float*>(record + sizeof(ttp_result)) + s.classes;
    for (int k = 0; k < MERGE_EXTRAS; k++) to[k] = extras[k];
  }
  FUSED_PHASE(4);
}

__device__ __forceinline__ void stage3_tail(const fused_shape& s, ttp_merge merge,
                                            const float* __restrict__ mw,
                                            const float* __restrict__ w4,
                                            const float* __restrict__ b4, float* hidden,
                                            float* probs, float* merged, int images, int image0,
                                            size_t record_size, unsigned char* __restrict__ records) {
  const int rows = images * s.copies, pitch = stage3_pitch(s);
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  if (s.lrn) {
    const int before = (s.lrn_n - 1) / 2, after = s.lrn_n - 1 - before;
    const int chunks = (s.fc_out + 31) / 32, round = max(1, kWarps * kLrnUnits / chunks);
    const small_div by_chunks(chunks);
    for (int r0 = 0; r0 < rows; r0 += round) {
      const int units = min(round, rows - r0) * chunks;
      const float* h[kLrnUnits];  // h[j][0]: unit j's output of this lane
      float sum[kLrnUnits], y[kLrnUnits];
      int o[kLrnUnits];
#pragma unroll
      for (int j = 0; j < kLrnUnits; j++) {
        const int u = min(warp + j * kWarps, units - 1);  // beyond: the last again, not stored
        const int r = by_chunks(u);
        o[j] = (u - r * chunks) * 32 + lane;
        h[j] = hidden + (r0 + r) * pitch + kRowLead + o[j];
        sum[j] = 0.0f;
      }
      if (s.lrn_n <= kLrnMost) {
        // Term by term over the units, so that their chains interleave (unit by unit, each
        // waited on its loads and its multiply-adds in turn: ~40% of the tail, ncu).
#pragma unroll
        for (int d = 0; d < kLrnMost; d++)
#pragma unroll
          for (int j = 0; j < kLrnUnits; j++) {
            const float v = h[j][d - before];
            const float term = __fmaf_rn(v, v, sum[j]);
            sum[j] = d < s.lrn_n ? term : sum[j];
          }
      } else {
#pragma unroll
        for (int j = 0; j < kLrnUnits; j++) {
          const int lo = max(o[j] - before, 0) - o[j], hi = min(o[j] + after, s.fc_out - 1) - o[j];
          for (int q = lo; q <= hi; q++) sum[j] = __fmaf_rn(h[j][q], h[j][q], sum[j]);
        }
      }
      // y / (k + alpha sum)^beta as y 2^(-beta log2(k + alpha sum)): the hardware's log2 and
      // exp2 (~2 ulp) instead of powf and a division, which made most of stage 3's instructions.
#pragma unroll
      for (int j = 0; j < kLrnUnits; j++)
        y[j] = h[j][0] * exp2f(-s.lrn_beta * __log2f(s.lrn_k + s.lrn_alpha_n * sum[j]));
      __syncthreads();
#pragma unroll
      for (int j = 0; j < kLrnUnits; j++) {
        const int u = warp + j * kWarps;
        const int r = by_chunks(u), o = (u - r * chunks) * 32 + lane;
        if (u < units && o < s.fc_out) hidden[(r0 + r) * pitch + kRowLead + o] = y[j];
      }
      __syncthreads();
    }
  }
  const int quads = (s.classes + 3) / 4, iters = (s.fc_out + 31) / 32;
  const small_div by_quads(quads);
  for (int task = warp; task < rows * quads; task += kWarps) {
    const int r = by_quads(task), c0 = (task - r * quads) * 4;
    const float* y = hidden + r * pitch + kRowLead;
    const float* w[4];
#pragma unroll
    for (int q = 0; q < 4; q++) w[q] = w4 + (size_t)min(c0 + q, s.classes - 1) * s.fc_out;
    float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 4
    for (int j = 0; j < iters; j++) {
      const int o = j * 32 + lane, oc = min(o, s.fc_out - 1);  // y[o] beyond fc_out: zeros
      const float v = y[o];
#pragma unroll
      for (int q = 0; q < 4; q++) p[q] = __fmaf_rn(w[q][oc], v, p[q]);
    }
    for (int offset = 16; offset > 0; offset >>= 1)  // warp_sum of each, interleaved
#pragma unroll
      for (int q = 0; q < 4; q++) p[q] += __shfl_xor_sync(0xffffffffu, p[q], offset);
#pragma unroll
    for (int q = 0; q < 4; q++)
      if (lane == q && c0 + q < s.classes) probs[r * s.classes + c0 + q] = p[q] + b4[c0 + q];
  }
  __syncthreads();
  for (int r = warp; r < rows; r += kWarps) {
    const float logit = lane < s.classes ? probs[r * s.classes + lane] : -INFINITY;
    const float top = warp_max(logit);
    const float e = lane < s.classes ? expf(logit - top) : 0.0f;
    const float sum = warp_sum(e);
    const float p = lane < s.classes ? e / sum : -1.0f;
    if (lane < s.classes) probs[r * s.classes + lane] = p;
    if (s.copies > 1) {  // the extras' parts of the copy (stage3_merge); hidden is read no more
      const float h = warp_sum(lane < s.classes ? merge_surprise(p) : 0.0f), most = warp_max(p);
      const unsigned at = __ballot_sync(0xffffffffu, p == most);  // merge_argmax's lowest index
      if (lane == 0) hidden[2 * r] = h, hidden[2 * r + 1] = __int_as_float(__ffs(at) - 1);
    }
  }
  __syncthreads();
  FUSED_PHASE(2);
  switch (merge) {  // each mode's code folded (merge_value's default: the mean)
    case TTP_MERGE_VOTE:
      stage3_merge<TTP_MERGE_VOTE>(s, mw, probs, merged, hidden, images, image0, record_size,
                                    records);
      break;
    case TTP_MERGE_MAX:
      stage3_merge<TTP_MERGE_MAX>(s, mw, probs, merged, hidden, images, image0, record_size,
                                    records);
      break;
    case TTP_MERGE_GMEAN:
      stage3_merge<TTP_MERGE_GMEAN>(s, mw, probs, merged, hidden, images, image0, record_size,
                                    records);
      break;
    default:
      stage3_merge<TTP_MERGE_MEAN>(s, mw, probs, merged, hidden, images, image0, record_size,
                                    records);
  }
}

// fp32 fc1 for batches too small for the GEMM: a block takes 32 outputs of 8 rows, thread
// (output lane, row warp), each output's sum in order over k from zero as in fc1f_kernel (the
// same bits). The weights' 32 columns and the rows' inputs come through shared memory in chunks
// of kNarrowK, the next chunk's loads in flight while this one is used: a batch of one spreads
// over fc_out / 32 blocks, each reading 100 KB of LeNet's weights.

constexpr int kNarrowOut = 32, kNarrowRows = kThreads / kNarrowOut, kNarrowK = 128;

struct fc1n_shared {
  float w[2][kNarrowK][kNarrowOut];
  float x[2][kNarrowRows][kNarrowK];
};

// One block's work: outputs group `outs` (32 a group) of rows group `row_group` (8 a group).
// act2 read with plain loads: the small batches' kernel writes it in the same launch.
__device__ __forceinline__ void fc1n_block(const fused_shape& s, const float* __restrict__ w3t,
                                           const float* __restrict__ b3, const float* act2,
                                           int rows, float* hidden, int outs, int row_group,
                                           fc1n_shared& sh) {
  auto& w = sh.w;
  auto& x = sh.x;
  constexpr int kW = kNarrowK * kNarrowOut / kThreads, kX = kNarrowK * kNarrowRows / kThreads;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int o0 = outs * kNarrowOut, row0 = row_group * kNarrowRows;
  float nw[kW], nx[kX];
  // Thread t's share of a chunk: weights (k i / 32, output i % 32) and inputs (row i / kNarrowK,
  // k i % kNarrowK), i = t + 256 j.
  auto load = [&](int k0) {
#pragma unroll
    for (int j = 0; j < kW; j++) {
      const int i = t + j * kThreads, k = k0 + i / kNarrowOut, o = o0 + i % kNarrowOut;
      nw[j] = k < s.fc_in && o < s.fc_out ? __ldg(w3t + (size_t)k * s.fc_out + o) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kX; j++) {
      const int i = t + j * kThreads, r = row0 + i / kNarrowK, k = k0 + i % kNarrowK;
      nx[j] = r < rows && k < s.fc_in ? act2[(size_t)r * s.fc_in + k] : 0.0f;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int j = 0; j < kW; j++) (&w[buf][0][0])[t + j * kThreads] = nw[j];
#pragma unroll
    for (int j = 0; j < kX; j++) (&x[buf][0][0])[t + j * kThreads] = nx[j];
  };
  float acc = 0.0f;
  load(0);
  store(0);
  __syncthreads();
  FUSED_PHASE(1);
  // Each live warp reads every weight from shared memory (128 bytes a k): the warps of rows
  // beyond the batch skip the loop, and a row's inputs come four k at a time (a batch of one's
  // item 11.7 -> 10.3 us; the chunks' round trips in turn are the rest, tests/bench/NOTES.md).
  const bool live = row0 + warp < rows;
  for (int k0 = 0, buf = 0; k0 < s.fc_in; k0 += kNarrowK, buf ^= 1) {
    const bool more = k0 + kNarrowK < s.fc_in;
    if (more) load(k0 + kNarrowK);
    const int kn = min(kNarrowK, s.fc_in - k0);
    // Unrolled, so that the shared-memory loads run ahead of the chain of multiply-adds (one
    // at a time, each waited on its loads: 30 cycles a k).
    if (live && kn == kNarrowK) {
#pragma unroll 4
      for (int k = 0; k < kNarrowK; k += 4) {
        const float4 in = *reinterpret_cast<const float4*>(&x[buf][warp][k]);
        acc = __fmaf_rn(w[buf][k][lane], in.x, acc);
        acc = __fmaf_rn(w[buf][k + 1][lane], in.y, acc);
        acc = __fmaf_rn(w[buf][k + 2][lane], in.z, acc);
        acc = __fmaf_rn(w[buf][k + 3][lane], in.w, acc);
      }
    } else if (live) {
      for (int k = 0; k < kn; k++) acc = __fmaf_rn(w[buf][k][lane], x[buf][warp][k], acc);
    }
    if (more) store(buf ^ 1);
    __syncthreads();
  }
  const int o = o0 + lane, r = row0 + warp;
  if (o < s.fc_out && r < rows) hidden[(size_t)r * s.fc_out + o] = relu_if(1, acc + b3[o]);
  FUSED_PHASE(3);
}

// fp32 fc1 in the small batches' kernel where a block holds all of K: 32 outputs x 4 rows an
// item, thread (output lane, row warp) of the first four warps (one a scheduler), each output's
// sum in order over k from zero as fc1n_block's and fc1f_kernel's (the same bits). The item's
// weights (LeNet: 100 KB, contiguous in w3b) come into shared memory in kWholeChunks bulk copies
// (bulk_copy: one instruction each) and its inputs by cp.async, all issued at once, each chunk's
// arithmetic starting when it has landed. Measured at a batch of one on the H100 (item time,
// bench_small_trace): fc1n_block's chunks, an L2 round trip and a barrier each in turn, 10.3 us;
// all of K in one round trip, 16-byte cp.async, 8 rows, 7.1 us; chunked, 4 rows, 7.6 us (every
// thread spent ~40% of the item issuing its cp.async); bulk copies, 6.2 us. smem: fc1w_shared.
constexpr int kWholeRows = 4, kWholeChunks = 4;

// The small batches' kernel's shared memory at most: it stages weights where they fit (LeNet:
// 68 KB of conv2's fp16 fragments, 20 KB of fc2's, fp32 fc1's 100 KB an item).
constexpr size_t kSmallShared = 160 * 1024;

__host__ __device__ inline int fc1w_chunk(const fused_shape& s) {  // k a chunk, a multiple of 4
  return ((s.fc_in + kWholeChunks - 1) / kWholeChunks + 3) / 4 * 4;
}

inline size_t fc1w_shared(const fused_shape& s) {
  return sizeof(float) * kWholeChunks * fc1w_chunk(s) * (kNarrowOut + kWholeRows);
}

// Whether the small batches' kernel takes fp32 fc1 by fc1w_block: 16-byte rows, and room.
inline bool small_fc1_whole(const fused_shape& s) {
  return !s.half && s.fc_in % 4 == 0 && s.fc_out % 4 == 0 && fc1w_shared(s) <= kSmallShared;
}

__device__ __forceinline__ void fc1w_block(const fused_shape& s, const float* __restrict__ w3b,
                                           const float* __restrict__ b3, const float* act2,
                                           int rows, float* hidden, int outs, int row_group,
                                           float* smem, int steps = kWhole) {
  __shared__ unsigned long long bars[kWholeChunks];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, chunk = fc1w_chunk(s);
  const int o0 = outs * kNarrowOut, row0 = row_group * kWholeRows;
  float* w = smem;                                        // [k][output]
  float* x = smem + kWholeChunks * chunk * kNarrowOut;    // [row][k]
  const int k_all = kWholeChunks * chunk, units = chunk / 4;  // a chunk's 16-byte units a row
  const small_div by_units(units);
  if (steps & kEarly) {  // the weights, a chunk a bulk copy
    for (int c = 0; c < kWholeChunks; c++) bulk_init(&bars[c]);
    __syncthreads();
    const float* from = w3b + (size_t)outs * s.fc_in * kNarrowOut;
    for (int c = 0; c < kWholeChunks; c++) {
      const int k0 = c * chunk, k1 = min(s.fc_in, k0 + chunk);
      if (k1 > k0)
        bulk_copy(w + k0 * kNarrowOut, from + (size_t)k0 * kNarrowOut,
                  (int)sizeof(float) * (k1 - k0) * kNarrowOut, &bars[c]);
    }
  }
  if (!(steps & kLate)) return;
#pragma unroll
  for (int c = 0; c < kWholeChunks; c++) {  // the inputs, a chunk a commit group
    const int k0 = c * chunk;
    for (int i = t; i < kWholeRows * units; i += kThreads) {
      const int r = by_units(i), k = k0 + (i - r * units) * 4;
      float* to = x + r * k_all + k;
      if (row0 + r < rows && k < s.fc_in)
        copy16_async(to, act2 + (size_t)(row0 + r) * s.fc_in + k);
      else
        *reinterpret_cast<float4*>(to) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  FUSED_PHASE(1);
  const int o = o0 + lane, r = row0 + warp;
  const bool live = warp < kWholeRows && r < rows;
  const float* in = x + warp * k_all;
  const float* wl = w + lane;
  float acc = 0.0f;
  static_assert(kWholeChunks == 4, "the waits below name each chunk's commit group");
#pragma unroll
  for (int c = 0; c < kWholeChunks; c++) {
    // Chunk c landed: this thread's input copies, the weights' copy, then everyone's.
    if (c == 0) asm volatile("cp.async.wait_group %0;\n" ::"n"(kWholeChunks - 1) : "memory");
    if (c == 1) asm volatile("cp.async.wait_group %0;\n" ::"n"(kWholeChunks - 2) : "memory");
    if (c == 2) asm volatile("cp.async.wait_group %0;\n" ::"n"(kWholeChunks - 3) : "memory");
    if (c == 3) asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    const int end = min(s.fc_in, (c + 1) * chunk);
    if (end > c * chunk) bulk_wait(&bars[c]);
    __syncthreads();
    if (c == 0) FUSED_PHASE(2);
    if (!live) continue;
#pragma unroll 8
    for (int k = c * chunk; k < end; k += 4) {  // fc_in is a multiple of 4
      const float4 v = *reinterpret_cast<const float4*>(in + k);
      acc = __fmaf_rn(wl[k * kNarrowOut], v.x, acc);
      acc = __fmaf_rn(wl[(k + 1) * kNarrowOut], v.y, acc);
      acc = __fmaf_rn(wl[(k + 2) * kNarrowOut], v.z, acc);
      acc = __fmaf_rn(wl[(k + 3) * kNarrowOut], v.w, acc);
    }
  }
  if (live && o < s.fc_out) hidden[(size_t)r * s.fc_out + o] = relu_if(1, acc + b3[o]);
  __syncthreads();  // nobody waits on the barriers any more
  for (int c = 0; c < kWholeChunks; c++) bulk_done(&bars[c]);
  FUSED_PHASE(3);
}

__global__ void __launch_bounds__(kThreads)
    fc1n_kernel(fused_shape s, const float* __restrict__ w3t, const float* __restrict__ b3,
                const float* __restrict__ act2, int rows, float* __restrict__ hidden) {
  __shared__ __align__(16) fc1n_shared sh;
  fc1n_block(s, w3t, b3, act2, rows, hidden, blockIdx.x, blockIdx.y, sh);
}

// fp16 fc1 as a GEMM of its own, on the tensor cores: hidden (rows x fc_out, fp32, bias and
// ReLU applied) = act2 (rows x fused_act2_pitch, fp16) x fc1's weights. Kept inside one block
// with the rest of stage 3, every block of 30 rows read all 800 KB of LeNet's weights from L2
// and ran at 12% occupancy (2.0 ms a batch of 8192 on the H100, tests/bench/NOTES.md); here a
// block's tile is 128 rows x 128 outputs, so the weights are read once per 128 rows, and fc1's
// outputs make one trip through device memory (2 KB a copy) to stage3b_kernel, which does the
// rest. 8 warps as 2 x 4, a warp 64 rows x 32 outputs (4 x 4 mma tiles); k in chunks of 32,
// act2's chunk and the weights' fragments for it double-buffered through shared memory.

constexpr int kFcRows = 128, kFcTiles = 16, kFcK = 32, kFcPitch = kFcK + 8;

__global__ void __launch_bounds__(kThreads, 2)
    fc1h_kernel(fused_shape s, const uint2* __restrict__ w3h, const float* __restrict__ b3,
                const __half* __restrict__ act2, int rows, float* __restrict__ hidden) {
  __shared__ __align__(16) __half a[2][kFcRows * kFcPitch];
  __shared__ __align__(16) uint2 b[2][kFcK / 16 * kFcTiles * 32];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, wm = warp / 4, wn = warp % 4;
  const int row0 = blockIdx.x * kFcRows, tile0 = blockIdx.y * kFcTiles;
  const int a2p = fused_act2_pitch(&s), ntiles = (s.fc_out + 7) / 8, chunks = a2p / kFcK;
  uint4 next_a[2], next_b[2];
  // Thread t's share of a chunk: uint4 i = t + 256 j of act2's 128 x 4 and the weights' 512.
  auto load = [&](int chunk) {
#pragma unroll
    for (int j = 0; j < 2; j++) {
      const int i = t + j * kThreads, r = i / 4, u = i % 4;
      next_a[j] = row0 + r < rows ? __ldg(reinterpret_cast<const uint4*>(
                                        act2 + (size_t)(row0 + r) * a2p + chunk * kFcK + u * 8))
                                  : make_uint4(0, 0, 0, 0);
      const int ks = 2 * i / (kFcTiles * 32), nt = 2 * i / 32 % kFcTiles, l = 2 * i % 32;
      next_b[j] = tile0 + nt < ntiles
                      ? __ldg(reinterpret_cast<const uint4*>(
                            w3h + ((size_t)(chunk * 2 + ks) * ntiles + tile0 + nt) * 32 + l))
                      : make_uint4(0, 0, 0, 0);
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int j = 0; j < 2; j++) {
      const int i = t + j * kThreads;
      *reinterpret_cast<uint4*>(&a[buf][i / 4 * kFcPitch + i % 4 * 8]) = next_a[j];
      *reinterpret_cast<uint4*>(&b[buf][2 * i]) = next_b[j];
    }
  };
  float acc[4][4][4];
#pragma unroll
  for (int mt = 0; mt < 4; mt++)
#pragma unroll
    for (int j = 0; j < 4; j++) acc[mt][j][0] = acc[mt][j][1] = acc[mt][j][2] = acc[mt][j][3] = 0.0f;
  load(0);
  store(0);
  __syncthreads();
  for (int c = 0; c < chunks; c++) {
    const int buf = c % 2;
    if (c + 1 < chunks) load(c + 1);
    const uint32_t a_addr = (uint32_t)__cvta_generic_to_shared(a[buf]) +
                            ((wm * 64 + ldmatrix_row(lane)) * kFcPitch + lane / 16 * 8) * 2;
#pragma unroll
    for (int ks = 0; ks < kFcK / 16; ks++) {
      uint32_t fa[4][4];
#pragma unroll
      for (int mt = 0; mt < 4; mt++) ldmatrix_x4(fa[mt], a_addr + (mt * 16 * kFcPitch + ks * 16) * 2);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const uint2 f = b[buf][(ks * kFcTiles + wn * 4 + j) * 32 + lane];
#pragma unroll
        for (int mt = 0; mt < 4; mt++) mma_16816(acc[mt][j], fa[mt], f);
      }
    }
    if (c + 1 < chunks) store(1 - buf);
    __syncthreads();
  }
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int mt = 0; mt < 4; mt++)
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int h = 0; h < 4; h++) {
        const int r = row0 + wm * 64 + mt * 16 + g + h / 2 * 8;
        const int k = (tile0 + wn * 4 + j) * 8 + 2 * q + h % 2;
        if (r < rows && k < s.fc_out)
          hidden[(size_t)r * s.fc_out + k] = relu_if(1, acc[mt][j][h] + b3[k]);
      }
}

// fp32 fc1 as a GEMM of its own, for batches that fill the GPU (the fp16 kernel's reasons, in
// FFMA): hidden = act2 (rows x fc_in) x fc1's weights (fc_in x fc_out), bias and ReLU applied.
// A block's tile is 128 rows x 128 outputs, k in chunks of 8, both operands double-buffered
// through shared memory (act2's chunk transposed, k-major); a thread owns 8 rows x 8 outputs
// (rows 4 ty + i and 64 + 4 ty + i, outputs likewise by tx), 64 multiply-adds for four 16-byte
// loads a k. Each output's sum runs over k in order from zero, as in fc1n_kernel: the same bits.

constexpr int kGemmTile = 128, kGemmK = 8;

__global__ void __launch_bounds__(kThreads, 2)
    fc1f_kernel(fused_shape s, const float* __restrict__ w3t, const float* __restrict__ b3,
                const float* __restrict__ act2, int rows, float* __restrict__ hidden) {
  __shared__ __align__(16) float a[2][kGemmK][kGemmTile];
  __shared__ __align__(16) float b[2][kGemmK][kGemmTile];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int row0 = blockIdx.x * kGemmTile, col0 = blockIdx.y * kGemmTile;
  // Thread t's share of a chunk: act2's row t / 2, k 4 (t % 2) + j; the weights' k t / 32,
  // outputs 4 (t % 32) + j.
  const int ar = t / 2, ak = 4 * (t % 2), bk = t / 32, bn = 4 * (t % 32);
  float na[4], nb[4];
  auto load = [&](int k0) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int k = k0 + ak + j;
      na[j] = row0 + ar < rows && k < s.fc_in ? __ldg(act2 + (size_t)(row0 + ar) * s.fc_in + k) : 0.0f;
      const int n = col0 + bn + j;
      nb[j] = k0 + bk < s.fc_in && n < s.fc_out ? __ldg(w3t + (size_t)(k0 + bk) * s.fc_out + n) : 0.0f;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int j = 0; j < 4; j++) a[buf][ak + j][ar] = na[j];
    *reinterpret_cast<float4*>(&b[buf][bk][bn]) = make_float4(nb[0], nb[1], nb[2], nb[3]);
  };
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; i++)
#pragma unroll
    for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
  load(0);
  store(0);
  __syncthreads();
  const int chunks = (s.fc_in + kGemmK - 1) / kGemmK;
  for (int c = 0; c < chunks; c++) {
    const int buf = c % 2;
    if (c + 1 < chunks) load((c + 1) * kGemmK);
#pragma unroll
    for (int k = 0; k < kGemmK; k++) {
      const float4 x0 = *reinterpret_cast<const float4*>(&a[buf][k][4 * ty]);
      const float4 x1 = *reinterpret_cast<const float4*>(&a[buf][k][64 + 4 * ty]);
      const float4 w0 = *reinterpret_cast<const float4*>(&b[buf][k][4 * tx]);
      const float4 w1 = *reinterpret_cast<const float4*>(&b[buf][k][64 + 4 * tx]);
      const float x[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
      const float w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
      for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = __fmaf_rn(w[j], x[i], acc[i][j]);
    }
    if (c + 1 < chunks) store(1 - buf);
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const int r = row0 + i / 4 * 64 + 4 * ty + i % 4;
    if (r < rows)
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const int n = col0 + j / 4 * 64 + 4 * tx + j % 4;
        if (n < s.fc_out) hidden[(size_t)r * s.fc_out + n] = relu_if(1, acc[i][j] + b3[n]);
      }
  }
}

// Stage 3's rest: LRN + fc2 + softmax + merge from fc1's outputs in device memory, copied
// to shared memory first in coalesced loads (read in place by the LRN's windows, they left the
// kernel waiting on scattered loads: 0.78 ms a batch of 8192 on the H100).
// One block's work: images group `group` (per_block a group); rows_of: stage3b_shared bytes.
// kSharedW (the small batches' kernel): fc2's weights copied into shared memory too (after the
// rows and the probabilities), read by every class from there instead of L2.
template <bool kSharedW>
__device__ __forceinline__ void stage3b_block(const fused_shape& s, int per_block, ttp_merge merge,
                                              const float* __restrict__ mw,
                                              const float* __restrict__ w4,
                                              const float* __restrict__ b4, const float* hidden,
                                              int count, size_t record_size,
                                              unsigned char* records, int group, float* rows_of,
                                              int steps = kWhole) {
  const int image0 = group * per_block, images = min(per_block, count - image0);
  const int rows = images * s.copies, pitch = stage3_pitch(s);
  float* probs = rows_of + per_block * s.copies * pitch;
  const float* w = w4;
  if (kSharedW) {
    if (steps & kEarly) block_copy_async(w4, probs, s.classes * s.fc_out);
    w = probs;
    probs += s.classes * s.fc_out;
  }
  float* merged = probs + per_block * s.copies * s.classes;
  if (steps & kEarly) {
    const int pad = pitch - s.fc_out;  // a row's zeros: kRowLead before it, the rest after
    const small_div by_pad(pad);
    for (int i = threadIdx.x; i < rows * pad; i += kThreads) {
      const int r = by_pad(i), j = i - r * pad;
      rows_of[r * pitch + (j < kRowLead ? j : s.fc_out + j)] = 0.0f;
    }
  }
  if (!(steps & kLate)) return;
  const float* from = hidden + (size_t)image0 * s.copies * s.fc_out;
  for (int r = 0; r < rows; r++)
    block_copy_async(from + (size_t)r * s.fc_out, rows_of + r * pitch + kRowLead, s.fc_out);
  copy_wait();
  __syncthreads();
  FUSED_PHASE(1);
  stage3_tail(s, merge, mw, w, b4, rows_of, probs, merged, images, image0, record_size, records);
}

__global__ void __launch_bounds__(kThreads)
    stage3b_kernel(fused_shape s, int per_block, ttp_merge merge, const float* __restrict__ mw,
                   const float* __restrict__ w4, const float* __restrict__ b4,
                   const float* __restrict__ hidden, int count, size_t record_size,
                   unsigned char* __restrict__ records) {
  extern __shared__ __align__(16) float rows_of[];
  stage3b_block<false>(s, per_block, merge, mw, w4, b4, hidden, count, record_size, records,
                       blockIdx.x, rows_of);
}

// ---- small batches: the whole pass in one launch ---------------------------------------------------
//
// A batch of one costs more in launches and in the gaps between them than in arithmetic (five
// copies are 23 MFLOP: microseconds of one SM). So small batches (fused_small) run the four
// stages in one kernel: each stage's work cut into items, block-sized pieces of the stages'
// own bodies above (stage1_block, stage2_block or stage2h_block, fc1w_block, fc1n_block or fc1h_item,
// stage3b_block), so that every output is the same sequence of operations as in the engine's
// kernels: the same bits. Blocks take items in order from a ticket counter, and an item of a
// stage waits until every item of the stage before it is done. Every item a block waits on
// holds a smaller ticket, taken by a block that is already running and waits only on smaller
// tickets still, so no block ever waits on one that could not start: the launch cannot
// deadlock however few of its blocks are resident (other pipelines' kernels beside it), which a
// grid-wide barrier could. A block takes its next ticket while it works on the current one,
// except in the build for batches of more copies than SMs (kWide), where it takes it once its
// item is done (taken while it worked, later stages' items were bound to blocks still busy
// while others idled: at 64 images in fp16, fc1's 80 items and stage 3b's 64 ran in two rounds
// on 132 SMs).
//
// The counters (FUSED_SMALL_SYNC of them) only grow: launch L of a batch size takes tickets
// [L T, (L + 1) T), T = items + blocks (each block takes one ticket past the last item), and
// stage p's count of items done reaches (L + 1) items_p (stages 1 to 3; nothing waits on the
// last, which is not counted). Activations written in the launch are read with plain loads
// (never through the non-coherent read-only path).

// Stage 1's items: each image's copies cut into `shares` of up to `per` copies (one image's
// load, key and parameters for all of them) and, where the batch leaves SMs over, each copy's
// conv1 channel groups into `parts` (each part making the copy again: ~3 us of the item at a
// batch of one, against conv1's ~4), so that the items about fill the GPU once. (One copy an
// item, a batch of 64 in fp16 took 320 items of ~7.4 us: 24 us for stage 1.)
struct stage1_split {
  int per, shares, parts;
};
inline stage1_split stage1_split_of(const fused_shape& s, int count) {
  const int want = min(s.copies, max(1, s.sms / count));
  const int groups = ((s.half ? fused_c1_pad(&s) : s.k1) + kGroup1 - 1) / kGroup1;
  stage1_split p;
  p.per = (s.copies + want - 1) / want;
  p.shares = (s.copies + p.per - 1) / p.per;
  p.parts = p.per > 1 ? 1 : max(1, min(groups, s.sms / (count * s.copies)));
  /* Every part some groups: 6 groups in 5 parts of 2 would leave the last with -2 (its item
     then wrote before act1: fp16, 3 copies, 8 images) and 6 in 4 the last with none. */
  const int per_part = (groups + p.parts - 1) / p.parts;
  p.parts = (groups + per_part - 1) / per_part;
  return p;
}

// fp32 conv2's channels an item: one a warp, four warps of the block (one a scheduler: with all
// eight, two warps shared each scheduler's issue and a batch of one's items took twice as long).
// (A lane an output before pooling instead, four times the items of a quarter the work, saved
// ~0.4 us an item at a batch of one but its 125 items with stage 1's 25 outnumbered the SMs:
// some ran in a second round, tests/bench/NOTES.md.)
constexpr int kSmallConv2Warps = 4;

// fp32 fc1's rows an item (fc1w_block or fc1n_block).
inline int fc1_rows(const fused_shape& s) {
  return small_fc1_whole(s) ? kWholeRows : kNarrowRows;
}

// A batch of more copies than SMs: the small batches' kernel built for it (small_kernel's
// kWide: tickets taken after an item, stage 2 in fp16 several copies an item, fc1 in fp16 two
// row tiles an item staged, or two n tiles a warp where staging does not fit). Apart, so that
// the batches of fewer run the code measured for them (with both
// in one kernel, a batch of one in fp16 took ~2 us longer, H100).
inline bool small_wide(const fused_shape& s, int count) {
  return count * s.copies > s.sms;
}

// fp16 stage 2's copies an item: one (its n tiles split over the warps, conv2's fragments staged
// in shared memory where they fit), else the fewest up to fused_stage2_copies (the engine's
// kernel's way) whose items do not outnumber the SMs, the fragments then read from L1/L2. (One
// copy an item, a batch of 64 took 320 items of ~7.7 us in 2.4 rounds, each staging all 68 KB of
// LeNet's fragments; four, 80 items of ~16.5 us, 52 SMs idle: three, 107 items.)
inline int small_stage2_copies(const fused_shape& s, int count) {
  const int rows = count * s.copies, most = fused_stage2_copies(&s);
  int c = 1;  // rows <= sms (not small_wide): 1
  while (c < most && (rows + c - 1) / c > s.sms) c++;
  return c;
}

// fp16 stage 2 of one copy an item: the copy's n tiles in groups, an item a (copy, group), a
// warp a (row tile, n tiles part, part + parts, ... of the group): `tiles` a warp over `parts`,
// the first of (parts, tiles) = (1, 1), (1, 2), (1, 4), (2, 4) whose items do not outnumber the
// SMs: few tiles an item, spread over many SMs. At a batch of one, 20 items of two tiles over 8
// warps took 5.1 us, 35 of one tile over 4 warps 3.9 (biases by then early too; still ~100
// cycles a k step, where tail_lab's lone warp takes 40: not the SM's shared bandwidth alone).
// (All n tiles an item, a batch of one's 5 items each took 8 us, staging all 68 KB of LeNet's
// fragments.)
struct conv2_split {
  int tiles, parts, groups;
};
inline conv2_split small_conv2_split(const fused_shape& s, int count) {
  const int rows = count * s.copies, ntiles = fused_k2_pad(&s) / 8;
  const int most = max(1, kWarps / (2 * fused_stage2_tile_pairs(&s)));  // parts that 8 warps hold
  const int choices[4][2] = {{1, 1}, {1, 2}, {1, 4}, {2, 4}};
  conv2_split p = {1, 1, ntiles};
  for (int c = 0; c < 4 && choices[c][0] <= most; c++) {
    p.parts = choices[c][0], p.tiles = choices[c][1];
    p.groups = (ntiles + p.parts * p.tiles - 1) / (p.parts * p.tiles);
    if (rows * p.groups <= s.sms) break;
  }
  return p;
}

// fp16 fc1's n tiles a warp (fc1h_item).
inline int fc1h_tiles(const fused_shape& s, int count) {
  const int row_tiles = (count * s.copies + 15) / 16;
  const int groups = ((s.fc_out + 7) / 8 + kWarps - 1) / kWarps;
  return small_wide(s, count) && row_tiles * groups > s.sms ? 2 : 1;  // the kWide build only
}

// fc1h_staged_item's shared memory (it is below, with fc1h_item).
__host__ __device__ inline int fc1h_staged_pitch(const fused_shape& s) {
  return fused_act2_pitch(&s) + 8;  // halves: rows 4 banks apart, a fragment's loads conflict-free
}
inline size_t fc1h_staged_shared(const fused_shape& s, int row_tiles) {
  return sizeof(__half) * 16 * row_tiles * fc1h_staged_pitch(s) +
         sizeof(uint2) * 32 * kWarps * (fused_act2_pitch(&s) / 16) + sizeof(float) * 8 * kWarps;
}
// The most row tiles a staged item may take (0: none fits, fc1h_item instead).
inline int fc1h_staged_most(const fused_shape& s) {
  if (!s.half) return 0;
  return fc1h_staged_shared(s, 2) <= kSmallShared ? 2 : fc1h_staged_shared(s, 1) <= kSmallShared;
}

// The small batches' kernel's plan, made on the host and passed in its arguments: the items'
// run-time divisions made in every item (and in both its parts) took ~10% of a batch of one's
// samples (ncu), their code cold on each SM. 16-byte aligned in the arguments, so that its
// fields can be read in pairs and fours.
struct __align__(16) small_plan {
  int items[FUSED_SMALL_STAGES];  // stage 1 (a copy), 2, fc1, stage 3b (an image)
  int total;
  stage1_split one;
  int copies2, parts2;  // fp16 stage 2 in the kWide build: copies an item, parts of a copy
  conv2_split two;      // fp16 stage 2 of one copy an item
  int conv2_groups;     // fp32 stage 2: items a group of copies
  int fc1_tiles, fc1_groups;  // fc1: fp16 n tiles a warp, items a row tile; fp32 groups of outputs
  int fc1_staged;             // fp16 fc1 by fc1h_staged_item: its row tiles an item (0: fc1h_item)
};

inline small_plan small_plan_of(const fused_shape& s, int count) {
  const int rows = count * s.copies;
  small_plan p;
  p.one = stage1_split_of(s, count);
  p.items[0] = count * p.one.shares * p.one.parts;
  p.copies2 = s.half ? small_stage2_copies(s, count) : fused_stage2_copies(&s);
  p.parts2 = max(1, kWarps / (fused_stage2_tile_pairs(&s) * p.copies2));
  p.two = small_conv2_split(s, count);
  p.conv2_groups = (s.k2 + kSmallConv2Warps - 1) / kSmallConv2Warps;
  p.items[1] = s.half ? (p.copies2 > 1 ? (rows + p.copies2 - 1) / p.copies2 : rows * p.two.groups)
                      : (rows + p.copies2 - 1) / p.copies2 * p.conv2_groups;
  // fp16 fc1 staged where it fits, two row tiles an item where one would outnumber the SMs
  const int row_tiles = (rows + 15) / 16, staged_most = fc1h_staged_most(s);
  const int staged_groups = ((s.fc_out + 7) / 8 + kWarps - 1) / kWarps;
  p.fc1_staged = staged_most == 0                                              ? 0
                 : small_wide(s, count) && row_tiles * staged_groups > s.sms ? staged_most
                                                                             : 1;
  p.fc1_tiles = p.fc1_staged ? 1 : fc1h_tiles(s, count);
  p.fc1_groups = s.half ? ((s.fc_out + 7) / 8 + p.fc1_tiles * kWarps - 1) / (p.fc1_tiles * kWarps)
                        : (s.fc_out + kNarrowOut - 1) / kNarrowOut;
  p.items[2] = s.half ? (row_tiles + max(p.fc1_staged, 1) - 1) / max(p.fc1_staged, 1) * p.fc1_groups
                      : p.fc1_groups * ((rows + fc1_rows(s) - 1) / fc1_rows(s));
  p.items[3] = count;
  p.total = 0;
  for (int i = 0; i < FUSED_SMALL_STAGES; i++) p.total += p.items[i];
  return p;
}

// fp16 fc1 for small batches: an item is 16 rows x 8 kTiles n tiles, a warp kTiles n tiles (its
// own, then 8 further on each), their k steps in fc1h_kernel's order (the same mma on the same
// fragments: the same bits), the A fragments loaded straight from act2 (rows beyond `rows`
// zeros, as fc1h_kernel's) once for all its tiles. kTiles 2 where items of one tile a warp
// would outnumber the SMs (fc1h_tiles): the chains are latency-bound, two in flight cost
// about what one does.
template <int kTiles>
__device__ __forceinline__ void fc1h_item(const fused_shape& s, const uint2* __restrict__ w3h,
                                          const float* __restrict__ b3, const __half* act2,
                                          int rows, float* hidden, int tile_row, int group) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int ntiles = (s.fc_out + 7) / 8, nt0 = group * kTiles * kWarps + warp;
  if (nt0 >= ntiles) return;
  const int a2p = fused_act2_pitch(&s), ksteps = a2p / 16, g = lane / 4, q = lane % 4;
  const int r0 = tile_row * 16 + g, r1 = r0 + 8;
  const uint32_t* x0 = reinterpret_cast<const uint32_t*>(act2 + (size_t)min(r0, rows - 1) * a2p) + q;
  const uint32_t* x1 = reinterpret_cast<const uint32_t*>(act2 + (size_t)min(r1, rows - 1) * a2p) + q;
  const bool in0 = r0 < rows, in1 = r1 < rows;
  const uint2* b = w3h + (size_t)nt0 * 32 + lane;
  float acc[kTiles][4];
  bool real[kTiles];
#pragma unroll
  for (int j = 0; j < kTiles; j++) {
    acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    real[j] = nt0 + j * kWarps < ntiles;
  }
#pragma unroll 10  // loads of 10 k steps in flight: each step's are L2 round trips (act2 written
  for (int ks = 0; ks < ksteps; ks++) {  // in this launch, B read once an item)
    const uint32_t a[4] = {in0 ? x0[ks * 8] : 0u, in1 ? x1[ks * 8] : 0u, in0 ? x0[ks * 8 + 4] : 0u,
                           in1 ? x1[ks * 8 + 4] : 0u};
#pragma unroll
    for (int j = 0; j < kTiles; j++)
      if (real[j]) mma_16816(acc[j], a, __ldg(b + ((size_t)ks * ntiles + j * kWarps) * 32));
  }
#pragma unroll
  for (int j = 0; j < kTiles; j++)
#pragma unroll
    for (int h = 0; h < 4; h++) {
      const int r = tile_row * 16 + g + h / 2 * 8, k = (nt0 + j * kWarps) * 8 + 2 * q + h % 2;
      if (real[j] && r < rows && k < s.fc_out)
        hidden[(size_t)r * s.fc_out + k] = relu_if(1, acc[j][h] + b3[k]);
    }
  FUSED_PHASE(3);
}

// fp16 fc1 for the small batches where it fits: fc1h_item<1>'s arithmetic on operands first
// copied into shared memory, all by cp.async at once (the item's kRowTiles x 16 rows of act2,
// zeros past `rows`, and its kWarps n tiles' fragments of every k step: 128 KB for LeNet at one
// row tile, 154 KB at two), where fc1h_item<1> waited on L2 for every 10 k steps' loads and a
// batch of one's 8 items took 4.6 us. Two row tiles an item (the kWide build, where items of one
// would outnumber the SMs): a warp's two chains share each k step's fragment, and a batch of 64
// takes one round of 80 items, not 1.2 of fc1h_item<2>'s 8.7 us. The same mma on the same
// fragments in the same order: the same bits.
template <int kRowTiles>
__device__ __forceinline__ void fc1h_staged_item(const fused_shape& s, const uint2* __restrict__ w3h,
                                                 const float* __restrict__ b3, const __half* act2,
                                                 int rows, float* hidden, int tile_row0, int group,
                                                 unsigned char* smem, int steps) {
  constexpr int kRows = 16 * kRowTiles;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int ntiles = (s.fc_out + 7) / 8, first = group * kWarps, a2p = fused_act2_pitch(&s);
  const int ksteps = a2p / 16, pitch = fc1h_staged_pitch(s), tiles = min(kWarps, ntiles - first);
  __half* a_rows = reinterpret_cast<__half*>(smem);
  uint2* frags = reinterpret_cast<uint2*>(smem + sizeof(__half) * kRows * pitch);
  float* bias = reinterpret_cast<float*>(frags + (size_t)ksteps * kWarps * 32);
  // The fragments: a k step's `tiles` x 256 contiguous bytes, k steps over the warps; the biases.
  if (steps & kEarly) {
    for (int ks = warp; ks < ksteps; ks += kWarps)
      for (int u = lane; u < tiles * 16; u += 32)
        copy16_async(reinterpret_cast<uint4*>(frags + (size_t)ks * kWarps * 32) + u,
                     reinterpret_cast<const uint4*>(w3h + ((size_t)ks * ntiles + first) * 32) + u);
    for (int k = first * 8 + threadIdx.x; k < min(s.fc_out, (first + tiles) * 8); k += kThreads)
      bias[k - first * 8] = b3[k];
  }
  if (!(steps & kLate)) return;
  // act2's rows: a row's 16-byte units over a warp (rows beyond `rows` zeros).
  for (int r = warp; r < kRows; r += kWarps) {
    const int row = tile_row0 * 16 + r;
    uint4* to = reinterpret_cast<uint4*>(a_rows + r * pitch);
    const uint4* from = reinterpret_cast<const uint4*>(act2 + (size_t)min(row, rows - 1) * a2p);
    for (int u = lane; u < a2p / 8; u += 32) {
      if (row < rows)
        copy16_async(to + u, from + u);
      else
        to[u] = make_uint4(0, 0, 0, 0);
    }
  }
  copy_wait();
  __syncthreads();
  FUSED_PHASE(1);
  if (warp >= tiles) return;
  const int g = lane / 4, q = lane % 4;
  const uint2* b = frags + warp * 32 + lane;
  float acc[kRowTiles][4];
#pragma unroll
  for (int m = 0; m < kRowTiles; m++) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.0f;
  // The next k step's operands loaded before this one's mma, two sets of registers in turn (the
  // loop as written, unrolled 8, took 56 cycles a k step: each step's loads waited on, then its
  // mma; a bare mma chain takes 25, tail_lab). The same mma in the same order: the same bits.
  const uint32_t *x0[kRowTiles], *x1[kRowTiles];  // a lane's two rows of each row tile
#pragma unroll
  for (int m = 0; m < kRowTiles; m++) {
    x0[m] = reinterpret_cast<const uint32_t*>(a_rows + (16 * m + g) * pitch) + q;
    x1[m] = reinterpret_cast<const uint32_t*>(a_rows + (16 * m + g + 8) * pitch) + q;
  }
  auto load = [&](int ks, uint32_t (&a)[kRowTiles][4], uint2& f) {
#pragma unroll
    for (int m = 0; m < kRowTiles; m++)
      a[m][0] = x0[m][ks * 8], a[m][1] = x1[m][ks * 8], a[m][2] = x0[m][ks * 8 + 4],
      a[m][3] = x1[m][ks * 8 + 4];
    f = b[(size_t)ks * kWarps * 32];
  };
  auto step = [&](const uint32_t (&a)[kRowTiles][4], uint2 f) {
#pragma unroll
    for (int m = 0; m < kRowTiles; m++) mma_16816(acc[m], a[m], f);
  };
  uint32_t a0[kRowTiles][4], a1[kRowTiles][4];
  uint2 f0, f1;
  load(0, a0, f0);
  int ks = 0;
  for (; ks + 1 < ksteps; ks += 2) {
    load(ks + 1, a1, f1);
    step(a0, f0);
    if (ks + 2 < ksteps) load(ks + 2, a0, f0);
    step(a1, f1);
  }
  if (ks < ksteps) step(a0, f0);  // an odd count: the last step, loaded above
  FUSED_PHASE(2);
#pragma unroll
  for (int m = 0; m < kRowTiles; m++)
#pragma unroll
    for (int h = 0; h < 4; h++) {
      const int r = (tile_row0 + m) * 16 + g + h / 2 * 8, k = (first + warp) * 8 + 2 * q + h % 2;
      if (r < rows && k < s.fc_out)
        hidden[(size_t)r * s.fc_out + k] = relu_if(1, acc[m][h] + bias[k - first * 8]);
    }
  FUSED_PHASE(3);
}

struct small_args {
  fused_shape s;
  aug_spec spec;
  fused_weights w;
  ttp_merge merge;
  const uint8_t* images;
  int count;
  void *act1, *act2;
  float* hidden;
  unsigned char* records;
  size_t record_size;
  int w2_shared, w4_shared;  // conv2's (fp16) and fc2's weights staged in shared memory
  int fc1_whole;             // fp32 fc1 by fc1w_block
  small_plan plan;
  unsigned long long* sync;  // tickets, then each stage's items done
  unsigned long long* trace; // NULL, or per item: taken, started (its wait over), done (ns),
                             // stage + 16 x the item's SM clock cycles
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}

template <bool kHalf, bool kWide>
__device__ __forceinline__ void small_item(const small_args& a, int stage, int i,
                                           unsigned char* smem, int steps) {
  const fused_shape& s = a.s;
  const int rows = a.count * s.copies;
  float* f = reinterpret_cast<float*>(smem);
  if (stage == 0) {
    if (!(steps & kLate)) return;  // stage 1 waits on nothing
    const stage1_split& p = a.plan.one;
    const int share = i / p.parts;
    stage1_block<kHalf>(s, a.spec, a.w.w1, a.w.b1, a.images, a.act1, share / p.shares,
                        share % p.shares, p.shares, i % p.parts, p.parts, f);
  } else if (stage == 1) {
    if (kHalf) {
      const int copies = kWide ? a.plan.copies2 : 1, parts = a.plan.parts2;
      const uint2* w2h = static_cast<const uint2*>(a.w.w2h);
      const __half* in = static_cast<const __half*>(a.act1);
      __half* out = static_cast<__half*>(a.act2);
      if (kWide && copies > 1 && parts == 1)
        stage2h_block<false, FUSED_MAX_K2 / 8>(s, w2h, a.w.b2, in, rows, out, i, copies, 1, 0, smem, steps);
      else if (kWide && copies > 1)
        stage2h_block<false, 4>(s, w2h, a.w.b2, in, rows, out, i, copies, parts, 0, smem, steps);
      else {  // one copy, a group of its n tiles (small_conv2_split), a row tile a warp
        const conv2_split& p = a.plan.two;
        const int row = i / p.groups, tile0 = i % p.groups * p.parts * p.tiles;
        if (a.w2_shared && p.tiles == 1)
          stage2h_block<true, 1, 1>(s, w2h, a.w.b2, in, rows, out, row, 1, p.parts, tile0, smem, steps);
        else if (a.w2_shared && p.tiles == 2)
          stage2h_block<true, 2, 1>(s, w2h, a.w.b2, in, rows, out, row, 1, p.parts, tile0, smem, steps);
        else if (a.w2_shared)
          stage2h_block<true, 4, 1>(s, w2h, a.w.b2, in, rows, out, row, 1, p.parts, tile0, smem, steps);
        else  // the group bounds a warp's tiles: 4 serve 1 or 2
          stage2h_block<false, 4, 1>(s, w2h, a.w.b2, in, rows, out, row, 1, p.parts, tile0, smem, steps);
      }
    } else {
      const int groups = a.plan.conv2_groups;
      stage2_block<1>(s, a.w.w2t, a.w.b2, static_cast<const float*>(a.act1), rows,
                      static_cast<float*>(a.act2), i / groups, i % groups, kSmallConv2Warps, f, steps);
    }
  } else if (stage == 2) {
    if (kHalf) {
      const int tiles = kWide ? a.plan.fc1_tiles : 1, groups = a.plan.fc1_groups;
      if (kWide && a.plan.fc1_staged == 2)
        fc1h_staged_item<2>(s, static_cast<const uint2*>(a.w.w3h), a.w.b3,
                            static_cast<const __half*>(a.act2), rows, a.hidden, 2 * (i / groups),
                            i % groups, smem, steps);
      else if (a.plan.fc1_staged)
        fc1h_staged_item<1>(s, static_cast<const uint2*>(a.w.w3h), a.w.b3,
                            static_cast<const __half*>(a.act2), rows, a.hidden, i / groups,
                            i % groups, smem, steps);
      else if (!(steps & kLate))
        return;  // fc1h_item: nothing early
      else if (kWide && tiles == 2)
        fc1h_item<2>(s, static_cast<const uint2*>(a.w.w3h), a.w.b3,
                     static_cast<const __half*>(a.act2), rows, a.hidden, i / groups, i % groups);
      else
        fc1h_item<1>(s, static_cast<const uint2*>(a.w.w3h), a.w.b3,
                     static_cast<const __half*>(a.act2), rows, a.hidden, i / groups, i % groups);
    } else {
      const int outs = a.plan.fc1_groups;
      const float* in = static_cast<const float*>(a.act2);
      if (a.fc1_whole)
        fc1w_block(s, a.w.w3b, a.w.b3, in, rows, a.hidden, i % outs, i / outs, f, steps);
      else if (steps & kLate)  // fc1n_block: nothing early
        fc1n_block(s, a.w.w3t, a.w.b3, in, rows, a.hidden, i % outs, i / outs,
                   *reinterpret_cast<fc1n_shared*>(smem));
    }
  } else {
    if (a.w4_shared)
      stage3b_block<true>(s, 1, a.merge, a.w.merge_w, a.w.w4, a.w.b4, a.hidden, a.count, a.record_size, a.records, i, f, steps);
    else
      stage3b_block<false>(s, 1, a.merge, a.w.merge_w, a.w.w4, a.w.b4, a.hidden, a.count, a.record_size, a.records, i, f, steps);
  }
}

template <bool kHalf, bool kWide>
__global__ void __launch_bounds__(kThreads, 1) small_kernel(small_args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ unsigned long long next;
  const small_plan& plan = a.plan;
  const unsigned long long per_launch = (unsigned long long)plan.total + gridDim.x;
  unsigned long long taken = a.trace ? global_ns() : 0, started = 0;  // first: the block's start
  if (threadIdx.x == 0) next = atomicAdd(a.sync, 1ull);
  __syncthreads();
  unsigned long long ticket = next;
  const unsigned long long launch = ticket / per_launch;
  int ready = 0;  // thread 0: the stages before this one are known to be done
  const bool late = kWide;  // a block's next ticket after its item
  long long cycles = 0;
  for (;;) {
    const int local = (int)(ticket - launch * per_launch);
    int item = local, stage = 0;
    if (item >= plan.total) break;
    while (item >= plan.items[stage]) item -= plan.items[stage++];
    __syncthreads();  // every thread has read `next`
    small_item<kHalf, kWide>(a, stage, item, smem, kEarly);  // while the stage before runs
    if (threadIdx.x == 0) {
      if (!late) next = atomicAdd(a.sync, 1ull);
      if (stage > ready) {
        const unsigned long long want = (launch + 1) * (unsigned long long)plan.items[stage - 1];
        while (load_acquire(a.sync + stage) < want) {
        }
        ready = stage;
      }
      if (a.trace) started = global_ns(), cycles = clock64();
      FUSED_PHASE_ITEM(stage);
    }
    __syncthreads();
#ifdef FUSED_TWICE  // lab: each item done twice, the phases stamped on the second (warm code)
    if (threadIdx.x == 0) FUSED_PHASE_ITEM(-1);
    small_item<kHalf, kWide>(a, stage, item, smem, kLate);
    __syncthreads();
    small_item<kHalf, kWide>(a, stage, item, smem, kEarly);
    if (threadIdx.x == 0) FUSED_PHASE_ITEM(stage);
    __syncthreads();
#endif
    small_item<kHalf, kWide>(a, stage, item, smem, kLate);
    __syncthreads();  // the item's writes are issued
    FUSED_PHASE(15);
    if (threadIdx.x == 0) {
      // Nothing waits on the last stage's items (the launch's end publishes the records): no
      // fence behind their writes to mapped host memory.
      if (stage < FUSED_SMALL_STAGES - 1) {
        __threadfence();
        atomicAdd(a.sync + 1 + stage, 1ull);
      }
      if (a.trace) {
        const unsigned long long done = global_ns();
        unsigned long long* t = a.trace + 4 * local;
        t[0] = taken, t[1] = started, t[2] = done, t[3] = stage | (clock64() - cycles) << 4;
        taken = done;
      }
      if (late) next = atomicAdd(a.sync, 1ull);
    }
    if (late) __syncthreads();  // `next` written
    ticket = next;
  }
}

// ---- the fp16 weights' packing and the layouts' conversion (tests) ---------------------------------
//
// B fragment of m16n8k16 for lane (g = lane / 4, q = lane % 4) of a (k step, n tile): halves
// (k 2q, n g), (2q + 1, g), (2q + 8, g), (2q + 9, g), k and n within the tile.

__device__ __forceinline__ void fragment_slot(int i, int ntiles, int* k, int* n) {
  const int h = i % 4, lane = i / 4 % 32, nt = i / 128 % ntiles, ks = i / (128 * ntiles);
  *n = nt * 8 + lane / 4;
  *k = ks * 16 + 2 * (lane % 4) + h % 2 + h / 2 * 8;
}

__global__ void pack_conv2_kernel(fused_shape s, const float* __restrict__ w2t, __half* out) {
  const int ntiles = fused_k2_pad(&s) / 8, total = stage2h_ksteps(s) * ntiles * 128;
  const int cblocks = fused_c1_pad(&s) / 8, k2p = fused_k2_pad(&s);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    int k, n;
    fragment_slot(i, ntiles, &k, &n);
    const int kg = k / 8, tap = kg / cblocks, ci = kg % cblocks * 8 + k % 8;
    const bool real = tap < FUSED_CONV * FUSED_CONV && ci < s.k1 && n < s.k2;
    out[i] = __float2half_rn(real ? w2t[((size_t)ci * FUSED_CONV * FUSED_CONV + tap) * k2p + n] : 0.0f);
  }
}

// fc1's fp32 weights in blocks of kNarrowOut (32) outputs (fused_weights.w3b, fc1w_block), k in
// order within a block, zeros beyond fc_out: fc1_blocks_floats of them.
__host__ __device__ inline size_t fc1_blocks_floats(const fused_shape& s) {
  return (size_t)((s.fc_out + kNarrowOut - 1) / kNarrowOut) * s.fc_in * kNarrowOut;
}

__global__ void pack_fc1_blocks_kernel(fused_shape s, const float* __restrict__ w3t, float* out) {
  const size_t total = fc1_blocks_floats(s);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const int o = (int)(i / ((size_t)s.fc_in * kNarrowOut)) * kNarrowOut + (int)(i % kNarrowOut);
    const int k = (int)(i / kNarrowOut % s.fc_in);
    out[i] = o < s.fc_out ? w3t[(size_t)k * s.fc_out + o] : 0.0f;
  }
}

__global__ void pack_fc1_kernel(fused_shape s, const float* __restrict__ w3t, __half* out) {
  const int ntiles = (s.fc_out + 7) / 8, total = fused_act2_pitch(&s) / 16 * ntiles * 128;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    int k, n;
    fragment_slot(i, ntiles, &k, &n);
    out[i] = __float2half_rn(k < s.fc_in && n < s.fc_out ? w3t[(size_t)k * s.fc_out + n] : 0.0f);
  }
}

// One element a thread: fp32 CHW <-> fp16 (act1: HWC with padded channels; act2: CHW).
__global__ void convert_kernel(fused_shape s, int stage, int rows, int to_kernel, float* chw,
                               __half* kernel) {
  const int channels = stage == 1 ? s.k1 : s.fc_in;
  const int padded = stage == 1 ? fused_c1_pad(&s) : fused_act2_pitch(&s);
  const int positions = stage == 1 ? s.p1_h * s.p1_w : 1;
  const size_t total = (size_t)rows * positions * padded;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const int k = (int)(i % padded), pos = (int)(i / padded % positions);
    const size_t row = i / ((size_t)padded * positions);
    const size_t at = (row * channels + k) * positions + pos;
    if (to_kernel)
      kernel[i] = __float2half_rn(k < channels ? chw[at] : 0.0f);
    else if (k < channels)
      chw[at] = __half2float(kernel[i]);
  }
}

ttp_status launched(const char* what, ttp_err* e) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ERR(e, TTP_ERR_CUDA, "%s launch: %s", what, cudaGetErrorString(err));
  return TTP_OK;
}

// A block that takes up to `copies` copies of an image (both kernels are sized for all of them:
// the small batches' items take stage1_split's `per`, at most all).
size_t stage1_shared(const fused_shape& s, int copies) {
  return sizeof(float) * stage1_chunk(s, copies) * (s.in_h + 2 * s.pad1) * (s.in_w + 2 * s.pad1);
}

size_t stage2h_shared(const fused_shape& s, int per_block) {
  return kStage2hHead +
         sizeof(__half) * per_block * (s.p1_h + 2 * s.pad2) * (s.p1_w + 2 * s.pad2) *
             stage2h_pixel_pitch(s);
}

size_t stage2_shared(const fused_shape& s) {
  if (s.half) return stage2h_shared(s, fused_stage2_copies(&s));
  return sizeof(float) * fused_stage2_copies(&s) * stage2_copy_stride(s);
}

// fp32's one-channel-a-warp stage 2 also holds its channels' weights.
size_t stage2_one_shared(const fused_shape& s) {
  return stage2_shared(s) + sizeof(float) * (3 + s.k1 * FUSED_CONV * FUSED_CONV * kWarps);
}

// The rows, their probabilities and the merged vectors.
size_t stage3b_shared(const fused_shape& s, int per_block) {
  return sizeof(float) * per_block * ((size_t)s.copies * (stage3_pitch(s) + s.classes) + s.classes);
}

size_t packed_conv2(const fused_shape& s) {
  return sizeof(uint2) * 32 * stage2h_ksteps(s) * (fused_k2_pad(&s) / 8);
}

size_t small_stage2_shared(const fused_shape& s) {
  return s.half ? stage2h_shared(s, 1) : stage2_one_shared(s);
}

int small_w2_shared(const fused_shape& s) {
  return s.half && small_stage2_shared(s) + packed_conv2(s) <= kSmallShared;
}

int small_w4_shared(const fused_shape& s) {
  return stage3b_shared(s, 1) + sizeof(float) * s.classes * s.fc_out <= kSmallShared;
}


// The small batches' kernel's shared memory: kWide, its build for batches of more copies than
// SMs (fc1 two row tiles an item where it fits).
size_t small_shared(const fused_shape& s, bool wide) {
  const size_t stage2 = max(small_stage2_shared(s) + (small_w2_shared(s) ? packed_conv2(s) : 0),
                           s.half ? stage2h_shared(s, fused_stage2_copies(&s)) : 0);  // wide
  const int staged = wide ? fc1h_staged_most(s) : min(1, fc1h_staged_most(s));
  const size_t fc1 = s.half ? (staged ? fc1h_staged_shared(s, staged) : 0)
                     : small_fc1_whole(s) ? fc1w_shared(s)
                                          : sizeof(fc1n_shared);
  const size_t one = stage1_shared(s, s.copies);  // stage1_split's per copies, or fewer
  const size_t rest = stage3b_shared(s, 1) + (small_w4_shared(s) ? sizeof(float) * s.classes * s.fc_out : 0);
  return max(max(one, stage2), max(fc1, rest));
}

}  // namespace

extern "C" size_t fused_packed_bytes(const fused_shape* s) {
  if (!s->half)
    return small_fc1_whole(*s) ? sizeof(float) * fc1_blocks_floats(*s) : 0;
  return packed_conv2(*s) + sizeof(uint2) * 32 * (fused_act2_pitch(s) / 16) * ((s->fc_out + 7) / 8);
}

extern "C" ttp_status fused_pack_weights(const fused_shape* s, fused_weights* w, void* packed,
                                         cudaStream_t stream, ttp_err* e) {
  if (!s->half) {
    w->w3b = NULL;
    if (!small_fc1_whole(*s)) return TTP_OK;
    pack_fc1_blocks_kernel<<<256, kThreads, 0, stream>>>(*s, w->w3t, static_cast<float*>(packed));
    w->w3b = static_cast<const float*>(packed);
    return launched("fused weights' packing", e);
  }
  __half* conv2 = static_cast<__half*>(packed);
  __half* fc1 = reinterpret_cast<__half*>(static_cast<unsigned char*>(packed) + packed_conv2(*s));
  pack_conv2_kernel<<<64, kThreads, 0, stream>>>(*s, w->w2t, conv2);
  pack_fc1_kernel<<<256, kThreads, 0, stream>>>(*s, w->w3t, fc1);
  w->w2h = conv2, w->w3h = fc1;
  return launched("fused weights' packing", e);
}

extern "C" size_t fused_act_bytes(const fused_shape* s, int stage) {
  if (s->half)
    return sizeof(__half) * (stage == 1 ? (size_t)s->p1_h * s->p1_w * fused_c1_pad(s)
                                        : (size_t)fused_act2_pitch(s));
  return sizeof(float) * (stage == 1 ? (size_t)s->k1 * s->p1_h * s->p1_w : s->fc_in);
}

extern "C" ttp_status fused_act_convert(const fused_shape* s, int stage, int rows, int to_kernel,
                                        float* chw, void* kernel, cudaStream_t stream,
                                        ttp_err* e) {
  const size_t bytes = fused_act_bytes(s, stage) * rows;
  if (!s->half) {
    const cudaError_t err = cudaMemcpyAsync(to_kernel ? kernel : chw, to_kernel ? chw : kernel,
                                            bytes, cudaMemcpyDeviceToDevice, stream);
    if (err != cudaSuccess) return ERR(e, TTP_ERR_CUDA, "fused act copy: %s", cudaGetErrorString(err));
    return TTP_OK;
  }
  convert_kernel<<<256, kThreads, 0, stream>>>(*s, stage, rows, to_kernel, chw,
                                               static_cast<__half*>(kernel));
  return launched("fused act conversion", e);
}

extern "C" ttp_status fused_kernels_prepare(fused_shape* s, ttp_err* e) {
  const size_t stage3b = stage3b_shared(*s, fused_stage3_images(s->copies));
  struct need {
    const void* kernel;
    size_t bytes;
    const char* name;
  };
  const need fp32[] = {{(const void*)stage1_kernel<false>, stage1_shared(*s, s->copies), "stage1_kernel"},
                       {(const void*)stage2_kernel<1>, stage2_one_shared(*s), "stage2_kernel"},
                       {(const void*)stage2_kernel<kGroup2>, stage2_shared(*s), "stage2_kernel"},
                       {(const void*)stage3b_kernel, stage3b, "stage3b_kernel"},
                       {(const void*)small_kernel<false, false>, small_shared(*s, false), "small_kernel"},
                       {(const void*)small_kernel<false, true>, small_shared(*s, true), "small_kernel"}};
  const need fp16[] = {{(const void*)stage1_kernel<true>, stage1_shared(*s, s->copies), "stage1_kernel"},
                       {(const void*)stage2h_kernel, stage2_shared(*s), "stage2h_kernel"},
                       {(const void*)stage3b_kernel, stage3b, "stage3b_kernel"},
                       {(const void*)small_kernel<true, false>, small_shared(*s, false), "small_kernel"},
                       {(const void*)small_kernel<true, true>, small_shared(*s, true), "small_kernel"}};
  const need* list = s->half ? fp16 : fp32;
  const size_t count = s->half ? sizeof fp16 / sizeof *fp16 : sizeof fp32 / sizeof *fp32;
  for (size_t i = 0; i < count; i++) {
    const cudaError_t err = cudaFuncSetAttribute(
        list[i].kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)list[i].bytes);
    if (err != cudaSuccess)
      return ERR(e, TTP_ERR_CUDA, "%s: %zu bytes of shared memory: %s", list[i].name,
                 list[i].bytes, cudaGetErrorString(err));
  }
  // Blocks an SM: the fewer of the two builds'.
  s->small_fit = INT_MAX;
  for (int wide = 0; wide < 2; wide++) {
    const void* small = s->half ? (wide ? (const void*)small_kernel<true, true>
                                        : (const void*)small_kernel<true, false>)
                                : (wide ? (const void*)small_kernel<false, true>
                                        : (const void*)small_kernel<false, false>);
    int fit = 0;
    const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &fit, small, kThreads, small_shared(*s, wide));
    if (err != cudaSuccess || fit < 1)
      return ERR(e, TTP_ERR_CUDA, "small_kernel: %zu bytes of shared memory: %s",
                 small_shared(*s, wide),
                 err != cudaSuccess ? cudaGetErrorString(err) : "no block fits a multiprocessor");
    s->small_fit = min(s->small_fit, fit);
  }
  return TTP_OK;
}

// fp32's batch-wide kernels: where the batch fills the GPU (`fills`), or wherever a test forces
// them (fused_shape.wide).
static bool wide_kernels(const fused_shape& s, bool fills) {
  return s.wide > 0 || (s.wide == 0 && fills);
}

// Blocks enough to fill the GPU twice over: small batches split their work further.
static int spread(const fused_shape& s, int blocks) {
  const int want = 2 * s.sms;
  return blocks >= want ? 1 : (want + blocks - 1) / blocks;
}

extern "C" ttp_status fused_stage1(const fused_shape* s, const aug_spec* spec,
                                   const fused_weights* w, const uint8_t* images, int count,
                                   void* act1, cudaStream_t stream, ttp_err* e) {
  const dim3 grid(count, min(s->copies, spread(*s, count)));
  const auto kernel = s->half ? stage1_kernel<true> : stage1_kernel<false>;
  kernel<<<grid, kThreads, stage1_shared(*s, s->copies), stream>>>(*s, *spec, w->w1, w->b1, images, act1);
  return launched("fused stage 1", e);
}

extern "C" ttp_status fused_stage2(const fused_shape* s, const fused_weights* w, const void* act1,
                                   int rows, void* act2, cudaStream_t stream, ttp_err* e) {
  const int per_block = fused_stage2_copies(s), blocks = (rows + per_block - 1) / per_block;
  if (s->half) {
    const int threads = 32 * per_block * fused_stage2_tile_pairs(s);
    stage2h_kernel<<<blocks, threads, stage2_shared(*s), stream>>>(
        *s, static_cast<const uint2*>(w->w2h), w->b2, static_cast<const __half*>(act1), rows,
        static_cast<__half*>(act2));
    return launched("fused stage 2 (fp16)", e);
  }
  const wide_plan p = stage2_wide_plan(*s);
  const int wide_blocks = (int)(((size_t)rows * p.per_copy + kThreads - 1) / kThreads);
  if (s->p2_w == kWideQ && p.chunk > 0 &&
      wide_kernels(*s, spread(*s, wide_blocks) == 1)) {
    stage2w_kernel<<<wide_blocks, kThreads, stage2_wide_shared(*s), stream>>>(
        *s, w->w2t, w->b2, static_cast<const float*>(act1), rows, static_cast<float*>(act2));
    return launched("fused stage 2 (wide)", e);
  }
  /* The channel groups over the warps of gridDim.y blocks of the same copies; one channel a warp
     where groups of 8 would not give every SM a warp. */
  const int one = spread(*s, blocks) > 1;
  const int groups = one ? s->k2 : fused_k2_pad(s) / kGroup2, warps = min(kWarps, groups);
  const dim3 grid(blocks, one ? (groups + warps - 1) / warps : 1);
  const size_t shared = one ? stage2_one_shared(*s) : stage2_shared(*s);
  (one ? stage2_kernel<1> : stage2_kernel<kGroup2>)<<<grid, 32 * warps, shared, stream>>>(
      *s, w->w2t, w->b2, static_cast<const float*>(act1), rows, static_cast<float*>(act2));
  return launched("fused stage 2", e);
}

extern "C" size_t fused_hidden_bytes(const fused_shape* s) { return sizeof(float) * s->fc_out; }

extern "C" int fused_small_items(const fused_shape* s, int count, int stage) {
  const small_plan plan = small_plan_of(*s, count);
  return stage < FUSED_SMALL_STAGES ? plan.items[stage] : plan.total;
}

extern "C" ttp_status fused_small(const fused_shape* s, const aug_spec* spec, ttp_merge merge,
                                  const fused_weights* w, const uint8_t* images, int count,
                                  void* act1, void* act2, float* hidden, void* records,
                                  unsigned long long* sync, unsigned long long* trace,
                                  cudaStream_t stream, ttp_err* e) {
  if (small_fc1_whole(*s) && !w->w3b)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "fused small batch: fc1's blocks not packed");
  const small_plan plan = small_plan_of(*s, count);
  /* A block per item where the GPU holds them all (with fewer, a block's next item may wait
     behind another of its own stage); small_fit is the fewer of the two builds' (one block an
     SM by its shared memory). */
  const int blocks = min(plan.total, s->sms * s->small_fit);
  const small_args a = {*s,     *spec, *w,     merge,  images,
                        count,  act1,  act2,   hidden, static_cast<unsigned char*>(records),
                        aug_merge_record_size(s->classes), small_w2_shared(*s),
                        small_w4_shared(*s), small_fc1_whole(*s), plan, sync, trace};
  const bool wide = small_wide(*s, count);
  const auto kernel = s->half ? (wide ? small_kernel<true, true> : small_kernel<true, false>)
                              : (wide ? small_kernel<false, true> : small_kernel<false, false>);
  kernel<<<blocks, kThreads, small_shared(*s, wide), stream>>>(a);
  return launched("fused small batch", e);
}

extern "C" ttp_status fused_stage3(const fused_shape* s, ttp_merge merge, const fused_weights* w,
                                   const void* act2, int count, float* hidden, void* records,
                                   cudaStream_t stream, ttp_err* e) {
  /* As many images a block as keeps every SM busy, within the most it holds. */
  const int most = fused_stage3_images(s->copies);
  const int per_block = max(1, min(most, count / s->sms));
  const int blocks = (count + per_block - 1) / per_block;
  const int all = count * s->copies;
  const dim3 wide((all + kGemmTile - 1) / kGemmTile, (s->fc_out + kGemmTile - 1) / kGemmTile);
  if (s->half) {
    const dim3 grid((all + kFcRows - 1) / kFcRows, ((s->fc_out + 7) / 8 + kFcTiles - 1) / kFcTiles);
    fc1h_kernel<<<grid, kThreads, 0, stream>>>(*s, static_cast<const uint2*>(w->w3h), w->b3,
                                               static_cast<const __half*>(act2), all, hidden);
  } else if (wide_kernels(*s, (int)(wide.x * wide.y) >= s->sms)) {
    fc1f_kernel<<<wide, kThreads, 0, stream>>>(*s, w->w3t, w->b3, static_cast<const float*>(act2),
                                               all, hidden);
  } else {
    const dim3 grid((s->fc_out + kNarrowOut - 1) / kNarrowOut, (all + kNarrowRows - 1) / kNarrowRows);
    fc1n_kernel<<<grid, kThreads, 0, stream>>>(*s, w->w3t, w->b3, static_cast<const float*>(act2),
                                               all, hidden);
  }
  TRY(launched("fused fc1", e));
  stage3b_kernel<<<blocks, kThreads, stage3b_shared(*s, per_block), stream>>>(
      *s, per_block, merge, w->merge_w, w->w4, w->b4, hidden, count,
      aug_merge_record_size(s->classes),
      static_cast<unsigned char*>(records));
  return launched("fused stage 3", e);
}
