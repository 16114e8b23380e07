// The fused engine's kernels (see fused_kernels.h). Compiled with -fmad=false, because stage 1
// makes the copies with tta_core.h's arithmetic, which must round every operation as the CPU
// does; the network's own multiply-adds are written as __fmaf_rn, fused on purpose.
//
// Why three launches and not one (napkin figures for the mnistCUDNN LeNet, N = 5, fp32, per
// image; H100: 67 TFLOP/s fp32, about 3 TB/s from device memory): the work is 2.3 M multiply-
// adds per copy, 11.5 M per image, so 1.3 M images/s needs 30 TFLOP/s. Between the stages each
// copy's act1 (2,880 floats) and act2 (800 floats) go out and back: 5 x 29 KB = 147 KB per image
// at 3 TB/s is 20 M images/s, 15 times above the compute's need. So each stage keeps only what
// grows large on chip (conv1's 11,520 outputs a copy never leave stage 1; fc1's outputs never
// leave stage 3), and the stages may each take the thread layout that suits them.
#include <math.h>

#include "../../augment/merge_core.h"
#include "../../augment/merge_kernel.h"
#include "../../augment/tta_block.cuh"
#include "fused_kernels.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWindow = FUSED_CONV + FUSED_POOL - 1;  // input rows/columns under one pooled output

// max() that propagates NaN, as cpu_maxpool does.
__device__ __forceinline__ float nan_max(float a, float b) { return b > a || isnan(b) ? b : a; }

__device__ __forceinline__ float relu_if(int relu, float v) { return relu && v < 0.0f ? 0.0f : v; }

// One pooled output of a 5x5 convolution over a 6x6 patch: the four convolutions under the 2x2
// window (without bias), their maximum.
__device__ __forceinline__ float conv_pool(const float (&patch)[kWindow][kWindow],
                                           const float* __restrict__ w) {
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
  for (int r = 0; r < FUSED_CONV; r++)
#pragma unroll
    for (int s = 0; s < FUSED_CONV; s++) {
      const float v = w[r * FUSED_CONV + s];
      a0 = __fmaf_rn(v, patch[r][s], a0);
      a1 = __fmaf_rn(v, patch[r][s + 1], a1);
      a2 = __fmaf_rn(v, patch[r + 1][s], a2);
      a3 = __fmaf_rn(v, patch[r + 1][s + 1], a3);
    }
  return nan_max(nan_max(a0, a1), nan_max(a2, a3));
}

__device__ __forceinline__ void load_patch(float (&patch)[kWindow][kWindow], const float* x,
                                           int pitch) {
#pragma unroll
  for (int r = 0; r < kWindow; r++)
#pragma unroll
    for (int s = 0; s < kWindow; s++) patch[r][s] = x[r * pitch + s];
}

// ---- stage 1: augment + conv1 + bias + [ReLU] + pool --------------------------------------------
//
// Block (i, y) takes image i's copies y, y + 1, ... of an equal share (gridDim.y shares: small
// batches spread their copies over more blocks). Copies are made into shared memory a chunk at a
// time (as many as fit in kStage1Bytes), zero-padded; then each thread computes pooled outputs of
// a (copy, group of four channels, position) from one 6x6 patch held in registers.

constexpr int kStage1Bytes = 40 * 1024;
constexpr int kGroup1 = 4;

// The copies a block makes at a time, of the `copies` it takes: as many as fit in kStage1Bytes.
__host__ __device__ inline int stage1_chunk(const fused_shape& s, int copies) {
  const int plane = (s.in_h + 2 * s.pad1) * (s.in_w + 2 * s.pad1);
  return min(copies, kStage1Bytes / (int)(plane * sizeof(float)));
}

__global__ void __launch_bounds__(kThreads)
    stage1_kernel(fused_shape s, aug_spec spec, const float* __restrict__ w1,
                  const float* __restrict__ b1, const uint8_t* __restrict__ images,
                  float* __restrict__ act1) {
  __shared__ uint8_t image[FUSED_MAX_INPUT * FUSED_MAX_INPUT];
  __shared__ float weights[FUSED_MAX_K1 * FUSED_CONV * FUSED_CONV];
  extern __shared__ float copies[];
  const int pixels = s.in_h * s.in_w;
  const int pitch = s.in_w + 2 * s.pad1, plane = (s.in_h + 2 * s.pad1) * pitch;
  for (int i = threadIdx.x; i < s.k1 * FUSED_CONV * FUSED_CONV; i += kThreads) weights[i] = w1[i];
  const uint64_t key =
      aug_block_load<kThreads>(images + (size_t)blockIdx.x * pixels, pixels, image);  // syncs

  const int per_block = (s.copies + gridDim.y - 1) / gridDim.y;
  const int begin = blockIdx.y * per_block, end = min(s.copies, begin + per_block);
  const int chunk = stage1_chunk(s, per_block);
  const int positions = s.p1_h * s.p1_w, groups = (s.k1 + kGroup1 - 1) / kGroup1;
  for (int first = begin; first < end; first += chunk) {
    const int n = min(chunk, end - first);
    for (int i = threadIdx.x; i < n * plane; i += kThreads) copies[i] = 0.0f;  // the padding
    __syncthreads();
    for (int c = 0; c < n; c++)
      aug_block_copy<kThreads>(spec, key, first + c, image, s.in_h, s.in_w,
                               copies + c * plane + s.pad1 * pitch + s.pad1, pitch);
    __syncthreads();
    for (int item = threadIdx.x; item < n * groups * positions; item += kThreads) {
      const int pos = item % positions, group = item / positions % groups,
                c = item / (positions * groups);
      const int py = pos / s.p1_w, px = pos % s.p1_w;
      float patch[kWindow][kWindow];
      load_patch(patch, copies + c * plane + 2 * py * pitch + 2 * px, pitch);
      float* out = act1 + ((size_t)blockIdx.x * s.copies + first + c) * s.k1 * positions + pos;
#pragma unroll
      for (int g = 0; g < kGroup1; g++) {
        const int k = group * kGroup1 + g;
        if (k < s.k1)
          out[(size_t)k * positions] =
              relu_if(s.relu1, conv_pool(patch, weights + k * FUSED_CONV * FUSED_CONV) + b1[k]);
      }
    }
    __syncthreads();  // the copies are overwritten next
  }
}

// ---- stage 2: conv2 + bias + [ReLU] + pool --------------------------------------------------------
//
// A block holds `per_block` copies' act1 in shared memory (zero-padded). Lane = (copy, pooled
// position); the output channels are shared out over the gridDim.y blocks of those copies and
// their warps (small batches spread over more blocks), each warp a group of them: per
// input channel a 6x6 patch in registers, 25 weights per output channel the same for the whole
// warp (one broadcast load each).

constexpr int kWarps = kThreads / 32;
constexpr int kGroup2 = (FUSED_MAX_K2 + kWarps - 1) / kWarps;

__global__ void __launch_bounds__(kThreads)
    stage2_kernel(fused_shape s, const float* __restrict__ w2, const float* __restrict__ b2,
                  const float* __restrict__ act1, int rows, float* __restrict__ act2) {
  extern __shared__ float tile[];
  const int positions = s.p2_h * s.p2_w, per_block = fused_stage2_copies(&s);
  const int pitch = s.p1_w + 2 * s.pad2, plane = (s.p1_h + 2 * s.pad2) * pitch;
  const int row0 = blockIdx.x * per_block, n = min(per_block, rows - row0);
  const int in_plane = s.p1_h * s.p1_w;
  for (int i = threadIdx.x; i < n * s.k1 * plane; i += kThreads) {
    const int y = i % plane / pitch - s.pad2, x = i % pitch - s.pad2, cc = i / plane;
    tile[i] = y >= 0 && y < s.p1_h && x >= 0 && x < s.p1_w
                  ? act1[((size_t)row0 * s.k1 + cc) * in_plane + y * s.p1_w + x]
                  : 0.0f;
  }
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

// ---- stage 3: fc1 + ReLU + [LRN] + fc2 + softmax + merge ------------------------------------------
//
// A block takes per_block images (rows = per_block x N, at most 64: fewer in small batches, so
// that more blocks share the work). fc1 in groups of kRowGroup rows (8, 16 or 32, the smallest
// that holds the block's rows): thread t owns outputs t and t + 256 for all of them; act2 comes through shared
// memory in chunks of kChunk inputs, read as float4 broadcasts; the transposed weights are read
// coalesced. Then one warp per row: LRN from fc1's outputs in shared memory, fc2 (lane l the
// outputs l, l + 32, ..., a warp sum per class), softmax over the lanes. Then one thread per image merges.

constexpr int kMaxRowGroup = 32, kChunk = 32, kChunkPitch = kChunk + 4;
constexpr int kPerLane = FUSED_MAX_FC1 / 32;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__host__ __device__ inline size_t stage3_shared(const fused_shape& s, int per_block) {
  const int rows = per_block * s.copies;
  return sizeof(float) * ((size_t)kMaxRowGroup * kChunkPitch + (size_t)rows * s.fc_out +
                          (size_t)rows * s.classes);
}

template <int kRowGroup>
__global__ void __launch_bounds__(kThreads)
    stage3_kernel(fused_shape s, int per_block, ttp_merge merge, const float* __restrict__ w3t,
                  const float* __restrict__ b3, const float* __restrict__ w4,
                  const float* __restrict__ b4, const float* __restrict__ act2, int count,
                  size_t record_size, unsigned char* __restrict__ records) {
  extern __shared__ __align__(16) float shared[];
  float* chunk = shared;                             // kRowGroup x kChunkPitch
  float* hidden = chunk + kMaxRowGroup * kChunkPitch;  // rows x fc_out
  const int image0 = blockIdx.x * per_block, images = min(per_block, count - image0);
  const int rows = images * s.copies, row0 = image0 * s.copies;
  float* probs = hidden + per_block * s.copies * s.fc_out;  // rows x classes
  const int t = threadIdx.x;

  for (int base = 0; base < rows; base += kRowGroup) {
    float acc[2][kRowGroup];
#pragma unroll
    for (int r = 0; r < kRowGroup; r++) acc[0][r] = acc[1][r] = 0.0f;
    for (int k0 = 0; k0 < s.fc_in; k0 += kChunk) {
      __syncthreads();
      for (int i = t; i < kRowGroup * kChunk; i += kThreads) {
        const int r = i / kChunk, k = i % kChunk;
        chunk[r * kChunkPitch + k] = base + r < rows && k0 + k < s.fc_in
                                         ? act2[(size_t)(row0 + base + r) * s.fc_in + k0 + k]
                                         : 0.0f;
      }
      __syncthreads();
      const int kn = min(kChunk, s.fc_in - k0);
      // Small row groups: the next weights' loads in flight while these are used (with 32 rows
      // the registers this takes would halve the blocks an SM holds).
#pragma unroll(kRowGroup <= 16 ? 2 : 1)
      for (int k = 0; k < kn; k += 4) {
        float wa[4], wb[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const bool in = k + j < kn;
          const float* wrow = w3t + (size_t)(k0 + k + j) * s.fc_out;
          wa[j] = in && t < s.fc_out ? __ldg(wrow + t) : 0.0f;
          wb[j] = in && t + kThreads < s.fc_out ? __ldg(wrow + t + kThreads) : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < kRowGroup; r++) {
          const float4 x = *reinterpret_cast<const float4*>(chunk + r * kChunkPitch + k);
          acc[0][r] = __fmaf_rn(wa[0], x.x, acc[0][r]);
          acc[0][r] = __fmaf_rn(wa[1], x.y, acc[0][r]);
          acc[0][r] = __fmaf_rn(wa[2], x.z, acc[0][r]);
          acc[0][r] = __fmaf_rn(wa[3], x.w, acc[0][r]);
          acc[1][r] = __fmaf_rn(wb[0], x.x, acc[1][r]);
          acc[1][r] = __fmaf_rn(wb[1], x.y, acc[1][r]);
          acc[1][r] = __fmaf_rn(wb[2], x.z, acc[1][r]);
          acc[1][r] = __fmaf_rn(wb[3], x.w, acc[1][r]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRowGroup; r++)
      if (base + r < rows) {
        if (t < s.fc_out) hidden[(base + r) * s.fc_out + t] = relu_if(1, acc[0][r] + b3[t]);
        if (t + kThreads < s.fc_out)
          hidden[(base + r) * s.fc_out + t + kThreads] =
              relu_if(1, acc[1][r] + b3[t + kThreads]);
      }
  }
  __syncthreads();

  const int lane = t % 32, warp = t / 32;
  const int before = (s.lrn_n - 1) / 2, after = s.lrn_n - 1 - before;
  for (int r = warp; r < rows; r += kWarps) {
    const float* h = hidden + r * s.fc_out;
    float y[kPerLane];
#pragma unroll
    for (int j = 0; j < kPerLane; j++) {
      const int o = j * 32 + lane;
      y[j] = 0.0f;
      if (o < s.fc_out) {
        y[j] = h[o];
        if (s.lrn) {
          const int lo = max(o - before, 0), hi = min(o + after, s.fc_out - 1);
          float sum = 0.0f;
          for (int q = lo; q <= hi; q++) sum = __fmaf_rn(h[q], h[q], sum);
          y[j] = y[j] / powf(s.lrn_k + s.lrn_alpha_n * sum, s.lrn_beta);
        }
      }
    }
    float logit = -INFINITY;
    for (int c = 0; c < s.classes; c++) {
      const float* w = w4 + (size_t)c * s.fc_out;
      float part = 0.0f;
#pragma unroll
      for (int j = 0; j < kPerLane; j++) {
        const int o = j * 32 + lane;
        if (o < s.fc_out) part = __fmaf_rn(__ldg(w + o), y[j], part);
      }
      const float total = warp_sum(part);
      if (lane == c) logit = total + b4[c];
    }
    const float top = warp_max(lane < s.classes ? logit : -INFINITY);
    const float e = lane < s.classes ? expf(logit - top) : 0.0f;
    const float sum = warp_sum(e);
    if (lane < s.classes) probs[r * s.classes + lane] = e / sum;
  }
  __syncthreads();

  if (t < images) {
    unsigned char* record = records + (size_t)(image0 + t) * record_size;
    ttp_result result;
    merge_image(merge, probs + t * s.copies * s.classes, s.copies, s.classes,
                reinterpret_cast<float*>(record + sizeof(ttp_result)), &result);
    *reinterpret_cast<ttp_result*>(record) = result;
  }
}

ttp_status launched(const char* what, ttp_err* e) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ERR(e, TTP_ERR_CUDA, "%s launch: %s", what, cudaGetErrorString(err));
  return TTP_OK;
}

size_t stage1_shared(const fused_shape& s) {
  return sizeof(float) * stage1_chunk(s, s.copies) * (s.in_h + 2 * s.pad1) * (s.in_w + 2 * s.pad1);
}

size_t stage2_shared(const fused_shape& s) {
  return sizeof(float) * fused_stage2_copies(&s) * s.k1 * (s.p1_h + 2 * s.pad2) * (s.p1_w + 2 * s.pad2);
}

}  // namespace

extern "C" ttp_status fused_kernels_prepare(const fused_shape* s, ttp_err* e) {
  const size_t stage3 = stage3_shared(*s, fused_stage3_images(s->copies));
  const struct {
    const void* kernel;
    size_t bytes;
    const char* name;
  } need[] = {{(const void*)stage1_kernel, stage1_shared(*s), "stage1_kernel"},
              {(const void*)stage2_kernel, stage2_shared(*s), "stage2_kernel"},
              {(const void*)stage3_kernel<8>, stage3, "stage3_kernel"},
              {(const void*)stage3_kernel<16>, stage3, "stage3_kernel"},
              {(const void*)stage3_kernel<32>, stage3, "stage3_kernel"}};
  for (const auto& n : need) {
    const cudaError_t err =
        cudaFuncSetAttribute(n.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)n.bytes);
    if (err != cudaSuccess)
      return ERR(e, TTP_ERR_CUDA, "%s: %zu bytes of shared memory: %s", n.name, n.bytes,
                 cudaGetErrorString(err));
  }
  return TTP_OK;
}

// Blocks enough to fill the GPU twice over: small batches split their work further.
static int spread(const fused_shape& s, int blocks) {
  const int want = 2 * s.sms;
  return blocks >= want ? 1 : (want + blocks - 1) / blocks;
}

extern "C" ttp_status fused_stage1(const fused_shape* s, const aug_spec* spec,
                                   const fused_weights* w, const uint8_t* images, int count,
                                   float* act1, cudaStream_t stream, ttp_err* e) {
  const dim3 grid(count, min(s->copies, spread(*s, count)));
  stage1_kernel<<<grid, kThreads, stage1_shared(*s), stream>>>(*s, *spec, w->w1, w->b1, images,
                                                               act1);
  return launched("fused stage 1", e);
}

extern "C" ttp_status fused_stage2(const fused_shape* s, const fused_weights* w, const float* act1,
                                   int rows, float* act2, cudaStream_t stream, ttp_err* e) {
  const int per_block = fused_stage2_copies(s), blocks = (rows + per_block - 1) / per_block;
  const dim3 grid(blocks, min((s->k2 + kWarps - 1) / kWarps, spread(*s, blocks)));
  stage2_kernel<<<grid, kThreads, stage2_shared(*s), stream>>>(*s, w->w2, w->b2, act1, rows, act2);
  return launched("fused stage 2", e);
}

extern "C" ttp_status fused_stage3(const fused_shape* s, ttp_merge merge, const fused_weights* w,
                                   const float* act2, int count, void* records,
                                   cudaStream_t stream, ttp_err* e) {
  /* As many images a block as keeps every SM busy, within the most it holds (each block reads
     all of fc1's weights: fewer rows a block, more reads). */
  const int most = fused_stage3_images(s->copies);
  const int per_block = max(1, min(most, count / s->sms));
  const int rows = per_block * s->copies, blocks = (count + per_block - 1) / per_block;
  const size_t shared = stage3_shared(*s, per_block), record = aug_merge_record_size(s->classes);
  const auto kernel = rows <= 8 ? stage3_kernel<8> : rows <= 16 ? stage3_kernel<16> : stage3_kernel<32>;
  kernel<<<blocks, kThreads, shared, stream>>>(*s, per_block, merge, w->w3t, w->b3, w->w4, w->b4,
                                               act2, count, record,
                                               static_cast<unsigned char*>(records));
  return launched("fused stage 3", e);
}
