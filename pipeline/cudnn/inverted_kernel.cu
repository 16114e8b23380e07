// ttapipe's inverted residual block (see inverted_kernel.h): expansion, depthwise and projection
// in one kernel, fp16, the 1x1 layers on the tensor cores (mma.sync m16n8k16, fp32 sums in
// conv_kernels.h's order) and the depthwise one in fp32 multiply-adds on the CUDA cores.
//
// Two blocks of 8 warps an SM on a persistent grid. An item is a band of TR output rows of one
// image. Its input window (the input rows under the band's, with one above and below: zeros
// outside the image, planes of 8 channels, 16 bytes a pixel) arrives by cp.async while the block
// computes the item before it (two buffers). Then three phases, a barrier between them:
//   - expansion: 16-pixel tiles of the window's rows (A by ldmatrix) times the expansion's
//     weights (B, all of them held in shared memory), + bias, clamp, rounded to fp16, into the
//     expanded band (half-planes of 4 channels, 8 bytes a pixel, so that the depthwise phase's
//     lanes read consecutive 8-byte words), zeros on its rows outside the image; its columns
//     either side of the image hold zeros from the kernel's start: the depthwise layer's padding;
//   - depthwise (stride S): a thread takes 4 channels of one output column of the band: their
//     nine taps' weights (fp32 in shared memory) once, then the TR outputs down the column, each
//     row of the expanded band read and widened to fp32 once into registers and used by the
//     outputs under it, every tap added (those on the padding add 0 x w, which leaves a sum that
//     gpu_depthwise_nhwc starts from the bias + 0 as it was: the same bits as its skipping them,
//     given finite weights); + bias, clamp, rounded to fp16, into the depthwise band (planes of 8
//     channels, 16 bytes a pixel, the projection's A);
//   - projection: 16-pixel tiles of the depthwise band times the projection's weights (their
//     outputs padded with zeros to a multiple of 16: 24 computed as 32), + bias, + the block's
//     input (stride 1: read back from the window by ldmatrix in the accumulators' layout), clamp,
//     the COUT real channels to device memory.
// Only the input window is read from device memory and the output written.
#include <cuda_fp16.h>

#include "conv_tile.cuh"
#include "inverted_kernel.h"

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;

// The shared memory of a block of CIN -> MID -> COUT channels over H x W maps, depthwise stride
// S, TR output rows an item.
template <int CIN, int MID, int COUT, int H, int W, int TR, int S>
struct inverted_layout {
  static constexpr int kOutH = H / S, kOutW = W / S;
  static constexpr int kOut = padded_k(COUT);        // the projection's channels, computed
  static constexpr int kRows = (TR - 1) * S + 3;    // expanded rows an item: one above, one below
  static constexpr int kXPlane = kRows * W * 16;    // the input window: planes of 8 channels
  static constexpr int kXBytes = CIN / 8 * kXPlane;
  static constexpr int kMCols = W + 2;              // the expanded band's columns: a zero each side
  static constexpr int kMPlane = kRows * kMCols * 8;  // the expanded band: half-planes of 4
  static constexpr int kMBytes = MID / 4 * kMPlane;
  static constexpr int kDPlane = TR * kOutW * 16;   // the depthwise band: planes of 8
  static constexpr int kDBytes = MID / 8 * kDPlane;
  static constexpr int kExpandBytes = CIN / 16 * (MID / 16) * 512;  // the mma's B fragments
  static constexpr int kProjectBytes = MID / 16 * (kOut / 16) * 512;
  static constexpr int kDepthwiseFloats = 9 * MID;
  static constexpr int kBiasFloats = 2 * MID + kOut;  // expansion, depthwise, projection
  static constexpr int kParams =
      (kExpandBytes + kProjectBytes + 4 * (kDepthwiseFloats + kBiasFloats) + 127) / 128 * 128;
  static constexpr int kShared = kParams + 2 * kXBytes + kMBytes + kDBytes;
  static constexpr int kBands = kOutH / TR;
  static constexpr int kExpandTiles = kRows * W / 16;
  static constexpr int kProjectTiles = TR * kOutW / 16;
  static constexpr int kUnits = MID / 4 * kOutW;  // depthwise: 4 channels of an output column
  static_assert(S == 1 || S == 2, "stride");
  static_assert(H % S == 0 && W % S == 0 && kOutH % TR == 0, "whole bands");
  static_assert(kRows * W % 16 == 0 && TR * kOutW % 16 == 0, "16-pixel tiles");
  static_assert(CIN % 16 == 0 && MID % 16 == 0 && COUT % 8 == 0, "k-steps, n-tiles");
  static_assert(kShared <= 113 << 10, "two blocks an SM");
};

__device__ __forceinline__ void ldmatrix4(unsigned (&a)[4], unsigned at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(at));
}

__device__ __forceinline__ uint4 load_b(unsigned at) {
  uint4 b;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w)
               : "r"(at));
  return b;
}

// acc += a 1x1 convolution's k-steps of one 16-pixel tile: this lane's A row in plane 0 at a_at
// (planes of 8 channels, plane_bytes apart; k-step s reads planes 2s and 2s + 1), the B
// fragments of Steps k-steps and Pairs pairs of n-tiles at w_at (gpu_conv_weights' layout), in
// its sum order: k-step by k-step.
template <int Steps, int Pairs>
__device__ __forceinline__ void multiply_1x1(float (&acc)[1][2 * Pairs][4], unsigned a_at,
                                             unsigned plane_bytes, unsigned w_at, int lane) {
#pragma unroll
  for (int step = 0; step < Steps; step++) {
    unsigned a[4];
    ldmatrix4(a, a_at + (2 * step + lane / 16) * plane_bytes);
#pragma unroll
    for (int np = 0; np < Pairs; np++) {
      const uint4 w = load_b(w_at + ((step * Pairs + np) * 32 + lane) * 16);
      element<__half>::mma(acc[0][2 * np], a, w.x, w.y);
      element<__half>::mma(acc[0][2 * np + 1], a, w.z, w.w);
    }
  }
}

__device__ __forceinline__ unsigned half2_bits(float a, float b) {
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const unsigned*>(&v);
}

__device__ __forceinline__ float2 half2_value(unsigned bits) {
  return __half22float2(*reinterpret_cast<const __half2*>(&bits));
}

// The input window of an item (image, output rows p0 .. p0 + TR - 1) into `at`: input rows
// S p0 - 1 .. S (p0 + TR - 1) + 1, zeros outside the image; consecutive threads copy consecutive
// 16 bytes of a pixel.
template <int CIN, int MID, int COUT, int H, int W, int TR, int S>
__device__ __forceinline__ void load_window(const __half* __restrict__ x, int image, int p0,
                                            unsigned at) {
  using L = inverted_layout<CIN, MID, COUT, H, W, TR, S>;
  constexpr int kPlanes = CIN / 8;
  for (int v = threadIdx.x; v < L::kRows * W * kPlanes; v += kThreads) {
    const int plane = v % kPlanes, pixel = v / kPlanes;
    const int row = S * p0 - 1 + pixel / W, column = pixel % W;
    const bool valid = row >= 0 && row < H;
    const __half* src =
        valid ? x + (((long long)image * H + row) * W + column) * CIN + plane * 8 : x;
    copy16(at + plane * L::kXPlane + pixel * 16, src, valid);
  }
}

template <int CIN, int MID, int COUT, int H, int W, int TR, int S>
__global__ void __launch_bounds__(kThreads, 2)
    inverted_kernel(const __half* __restrict__ x, __half* __restrict__ y, int n,
                    gpu_inverted_block b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800  // mma.sync m16n8k16 (takes() asks for it)
  using L = inverted_layout<CIN, MID, COUT, H, W, TR, S>;
  using E = element<__half>;
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned base = shared_address(smem);
  const unsigned expand_at = base, project_at = base + L::kExpandBytes;
  float* depthwise_w = reinterpret_cast<float*>(smem + L::kExpandBytes + L::kProjectBytes);
  float* biases = depthwise_w + L::kDepthwiseFloats;  // expansion, depthwise, projection
  const unsigned windows_at = base + L::kParams;
  unsigned char* expanded = smem + L::kParams + 2 * L::kXBytes;
  const unsigned depthwise_at = windows_at + 2 * L::kXBytes + L::kMBytes;
  unsigned char* depthwise_out = smem + L::kParams + 2 * L::kXBytes + L::kMBytes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int items = n * L::kBands;

  // The 1x1 layers' B fragments by cp.async, then the first item's window; the depthwise weights
  // widened to fp32 (their values exactly) and the biases (none: 0) by plain stores.
  for (int v = threadIdx.x; v < L::kExpandBytes / 16; v += kThreads)
    copy16(expand_at + v * 16, static_cast<const unsigned char*>(b.expand) + v * 16, true);
  for (int v = threadIdx.x; v < L::kProjectBytes / 16; v += kThreads)
    copy16(project_at + v * 16, static_cast<const unsigned char*>(b.project) + v * 16, true);
  int item = blockIdx.x;
  if (item < items)
    load_window<CIN, MID, COUT, H, W, TR, S>(x, item / L::kBands, item % L::kBands * TR,
                                          windows_at);
  copies_commit();
  for (int i = threadIdx.x; i < L::kDepthwiseFloats; i += kThreads)
    depthwise_w[i] = __half2float(static_cast<const __half*>(b.depthwise)[i]);
  for (int i = threadIdx.x; i < L::kBiasFloats; i += kThreads) {
    const float* bias = i < MID ? b.expand_bias : i < 2 * MID ? b.depthwise_bias : b.project_bias;
    const int k = i < MID ? i : i < 2 * MID ? i - MID : i - 2 * MID;
    biases[i] = bias && (i < 2 * MID || k < COUT) ? bias[k] : 0.0f;  // past COUT: padding
  }

  // The expanded band's columns either side of the image: zeros, written once (the expansion
  // writes the image's columns alone).
  for (int i = threadIdx.x; i < MID / 4 * L::kRows * 2; i += kThreads) {
    const int hp = i / (L::kRows * 2), r = i / 2 % L::kRows, side = i % 2;
    *reinterpret_cast<uint2*>(expanded + hp * L::kMPlane + (r * L::kMCols + side * (W + 1)) * 8) =
        make_uint2(0u, 0u);
  }

  const int a_row = (lane / 8 % 2) * 8 + lane % 8, a_half = lane / 16;
  const int g = lane / 4, t4 = lane % 4;

  for (int buffer = 0; item < items; item += gridDim.x, buffer ^= 1) {
    copies_wait_all();
    __syncthreads();  // this item's window is in; every warp is done with the last item
    const int next = item + gridDim.x;
    if (next < items)
      load_window<CIN, MID, COUT, H, W, TR, S>(x, next / L::kBands, next % L::kBands * TR,
                                            windows_at + (buffer ^ 1) * L::kXBytes);
    copies_commit();
    const unsigned window = windows_at + buffer * L::kXBytes;
    const int image = item / L::kBands, p0 = item % L::kBands * TR;

    // Expansion: window pixel e (row e / W of the window, image row S p0 - 1 + e / W).
    for (int t = warp; t < L::kExpandTiles; t += kWarps) {
      float acc[1][MID / 8][4];
      start_sums<MID, 1>(acc, biases, 0, t4);
      multiply_1x1<CIN / 16, MID / 16>(acc, window + (t * 16 + a_row) * 16, L::kXPlane,
                                       expand_at, lane);
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int e = t * 16 + g + 8 * h, r = e / W, row = S * p0 - 1 + r;
        const bool inside = row >= 0 && row < H;
        unsigned char* at = expanded + (r * L::kMCols + e % W + 1) * 8 + (t4 % 2) * 4;
#pragma unroll
        for (int j = 0; j < MID / 8; j++)
          *reinterpret_cast<unsigned*>(at + (j * 2 + t4 / 2) * L::kMPlane) =
              inside ? half2_bits(gpu_clamped(acc[0][j][2 * h], b.expand_clamp),
                                  gpu_clamped(acc[0][j][2 * h + 1], b.expand_clamp))
                     : 0u;
      }
    }
    __syncthreads();

    // Depthwise: 4 channels (half-plane hp) of output column q, output rows p0 .. p0 + TR - 1;
    // the taps in gpu_depthwise_nhwc's order (window rows, then columns).
    for (int u = threadIdx.x; u < L::kUnits; u += kThreads) {
      const int hp = u / L::kOutW, q = u % L::kOutW;
      float taps[9][4], sum0[4];
#pragma unroll
      for (int k = 0; k < 9; k++) {
        const float4 w4 = *reinterpret_cast<const float4*>(depthwise_w + k * MID + hp * 4);
        taps[k][0] = w4.x, taps[k][1] = w4.y, taps[k][2] = w4.z, taps[k][3] = w4.w;
      }
#pragma unroll
      for (int c = 0; c < 4; c++) sum0[c] = biases[MID + hp * 4 + c] + 0.0f;
      // column S q - 1 of the image is column S q of the band (its first is the padding's)
      const unsigned char* column = expanded + hp * L::kMPlane + S * q * 8;
      float rows[3][3][4];  // expanded rows r % 3, image columns S q - 1 .. S q + 1, widened
      auto load_row = [&](int r, float (&into)[3][4]) {
#pragma unroll
        for (int t = 0; t < 3; t++) {
          const uint2 v = *reinterpret_cast<const uint2*>(column + (r * L::kMCols + t) * 8);
          const float2 lo = half2_value(v.x), hi = half2_value(v.y);
          into[t][0] = lo.x, into[t][1] = lo.y, into[t][2] = hi.x, into[t][3] = hi.y;
        }
      };
#pragma unroll
      for (int j = 0; j < TR; j++) {
        // output row j reads band rows S j .. S j + 2; those up to S (j - 1) + 2 are held
#pragma unroll
        for (int r = j == 0 ? 0 : S * (j - 1) + 3; r <= S * j + 2; r++) load_row(r, rows[r % 3]);
        float sum[4] = {sum0[0], sum0[1], sum0[2], sum0[3]};
#pragma unroll
        for (int r = 0; r < 3; r++)
#pragma unroll
          for (int t = 0; t < 3; t++)
#pragma unroll
            for (int c = 0; c < 4; c++)
              sum[c] = fmaf(rows[(S * j + r) % 3][t][c], taps[r * 3 + t][c], sum[c]);
        const gpu_clamp c = b.depthwise_clamp;
        *reinterpret_cast<uint2*>(depthwise_out + (hp / 2) * L::kDPlane +
                                  (j * L::kOutW + q) * 16 + (hp % 2) * 8) =
            make_uint2(half2_bits(gpu_clamped(sum[0], c), gpu_clamped(sum[1], c)),
                       half2_bits(gpu_clamped(sum[2], c), gpu_clamped(sum[3], c)));
      }
    }
    __syncthreads();

    // Projection: output pixel m of the band (row m / kOutW), + the input at it (stride 1: window
    // row m / W + 1), to device memory.
    for (int t = warp; t < L::kProjectTiles; t += kWarps) {
      float acc[1][L::kOut / 8][4];
      start_sums<L::kOut, 1>(acc, biases + 2 * MID, 0, t4);
      multiply_1x1<MID / 16, L::kOut / 16>(acc, depthwise_at + (t * 16 + a_row) * 16, L::kDPlane,
                                           project_at, lane);
      __half* out =
          y + (((long long)image * L::kOutH + p0) * L::kOutW + t * 16 + g) * COUT + t4 * 2;
#pragma unroll
      for (int np = 0; np < L::kOut / 16; np++) {
        // the input at these outputs, in the accumulators' layout: (rows 0-7, 8-15) of n-tile
        // 2 np, then of 2 np + 1
        const bool residual = S == 1 && COUT % 16 == 0 && b.residual;
        unsigned z[4] = {0u, 0u, 0u, 0u};
        if (residual)
          ldmatrix4(z, window + (2 * np + a_half) * L::kXPlane + (W + t * 16 + a_row) * 16);
#pragma unroll
        for (int jj = 0; jj < 2; jj++)
#pragma unroll
          for (int h = 0; h < 2; h++) {
            const int j = 2 * np + jj;
            if (j * 8 >= COUT) continue;  // the padding's channels
            float v0 = acc[0][j][2 * h], v1 = acc[0][j][2 * h + 1];
            if (residual) {
              const float2 r = half2_value(z[2 * jj + h]);
              v0 += r.x, v1 += r.y;
            }
            E::store(out + 8 * h * COUT + j * 8, gpu_clamped(v0, b.project_clamp),
                     gpu_clamped(v1, b.project_clamp));
          }
      }
    }
  }
#endif
}

// The shapes the kernel is built for (the MobileNetV2-style test net's first, second and last
// blocks).
template <int CIN, int MID, int COUT, int H, int W, int TR, int S>
struct inverted_shape {};

template <typename F>
bool with_shape(const gpu_inverted_shape& s, F f) {
  if (s.cin == 16 && s.mid == 64 && s.cout == 16 && s.h == 32 && s.w == 32 && s.stride == 1)
    return f(inverted_shape<16, 64, 16, 32, 32, 8, 1>()), true;
  if (s.cin == 16 && s.mid == 64 && s.cout == 24 && s.h == 32 && s.w == 32 && s.stride == 2)
    return f(inverted_shape<16, 64, 24, 32, 32, 4, 2>()), true;
  if (s.cin == 32 && s.mid == 128 && s.cout == 32 && s.h == 8 && s.w == 8 && s.stride == 1)
    return f(inverted_shape<32, 128, 32, 8, 8, 8, 1>()), true;
  return false;
}

template <int CIN, int MID, int COUT, int H, int W, int TR, int S>
constexpr int shared_of(inverted_shape<CIN, MID, COUT, H, W, TR, S>) {
  return inverted_layout<CIN, MID, COUT, H, W, TR, S>::kShared;
}

template <int CIN, int MID, int COUT, int H, int W, int TR, int S>
cudaError_t launch(inverted_shape<CIN, MID, COUT, H, W, TR, S>, const void* x, void* y, int n,
                   const gpu_inverted_block& b, cudaStream_t stream) {
  using L = inverted_layout<CIN, MID, COUT, H, W, TR, S>;
  auto kernel = inverted_kernel<CIN, MID, COUT, H, W, TR, S>;
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kShared);
  int device = 0, sms = 0, resident = 0;
  if (err == cudaSuccess) err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, L::kShared);
  if (err != cudaSuccess) return err;
  const long long fill = (long long)sms * (resident > 0 ? resident : 1);
  const long long items = (long long)n * L::kBands;
  kernel<<<(unsigned)(items < fill ? items : fill), kThreads, L::kShared, stream>>>(
      static_cast<const __half*>(x), static_cast<__half*>(y), n, b);
  return cudaGetLastError();
}

bool takes(const gpu_inverted_shape& s, int half) {
  int shared = 0;
  const bool shape = half && s.n >= 1 && (long long)s.n * s.h <= 0x7fffffff &&
                     with_shape(s, [&](auto shape_of) { shared = shared_of(shape_of); });
  return shape && device_runs(8, shared);
}

}  // namespace

extern "C" int gpu_inverted_nhwc_takes(const gpu_inverted_shape* s, int half) {
  return takes(*s, half);
}

extern "C" ttp_status gpu_inverted_nhwc(const void* x, void* y, const gpu_inverted_shape* s,
                                        const gpu_inverted_block* b, cudaStream_t stream,
                                        ttp_err* e) {
  if (!takes(*s, 1) || (b->residual && (s->cin != s->cout || s->stride != 1)))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_inverted_nhwc: %d -> %d -> %d channels over "
               "%dx%d maps, stride %d%s (built for 16 -> 64 -> 16 over 32x32 and 32 -> 128 -> "
               "32 over 8x8 at stride 1, 16 -> 64 -> 24 over 32x32 at stride 2 without the "
               "residual; fp16, sm_80 or later)", s->cin, s->mid, s->cout, s->h, s->w, s->stride,
               b->residual ? ", + residual" : "");
  cudaError_t err = cudaSuccess;
  with_shape(*s, [&](auto shape) { err = launch(shape, x, y, s->n, *b, stream); });
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "inverted_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}
