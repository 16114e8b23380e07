// ttapipe's NHWC convolution with its epilogue (see conv_kernels.h), in fp16 or in fp32 on TF32
// tensor cores.
//
// An implicit GEMM on the tensor cores (conv_tile.cuh) over a persistent grid: a block of 8 warps
// keeps a slice of KT output channels' weights in shared memory for its whole life and walks work
// items, each one to a few whole images (or a band of output rows of a large one). An item's
// input window (every input pixel the item reads, zeros outside the image) arrives in shared
// memory by cp.async while the block computes the item before it (two buffers). A warp takes two
// 16-pixel tiles at a time (four on 16 output channels): per step (a tap's k-step of 32 bytes of
// input channels: 16 in fp16 for an m16n8k16, 8 in fp32 for a TF32 m16n8k8), one ldmatrix of A a
// tile straight from the window (each lane names its own pixel's row, so that tiles may cross
// output rows and strides cost nothing) and the B fragments, each step's fragments loaded while
// the step before it multiplies; a table in shared memory holds each step's offset into the
// window. ldmatrix moves 16-bit pairs, so on fp32 values it hands each lane whole words: row
// lane / 4, word lane % 4 of each 8 x 16-byte matrix, which is the TF32 mma's A fragment as it is
// for fp16's. A k-step is 32 bytes of channels in both, and so are the B fragments' 512 bytes a
// pair of n-tiles and the addressing of the window. The window's 16-byte chunks are XOR-swizzled
// within each 128-byte line, so that the eight rows an ldmatrix phase reads lie in eight
// different bank groups. The epilogue works in the accumulators' registers: + z (read before the
// taps, so that its latency passes under their work), the clamp, rounded once to the element
// type, two channels a store.
#include <cuda_fp16.h>

#include <string.h>

#include <initializer_list>

#include "conv_tile.cuh"

namespace {

constexpr int kMaxSteps = 256;  // taps x k-steps: the table of their offsets
// 16-pixel tiles a warp holds at once (four on 16 output channels, where the accumulators are
// few).
__host__ __device__ constexpr int tiles_of(int kt) { return kt == 16 ? 4 : 2; }
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
// Blocks an SM the registers allow.
__host__ __device__ constexpr int blocks_of(int kt) { return kt <= 32 ? 2 : 1; }
constexpr size_t kSharedPerSM = 226 << 10;    // opt-in shared memory of a block on sm_90, less
                                              // the tap table
constexpr size_t kSharedForTwo = 111 << 10;   // per block, so that two fit on an SM
constexpr int kMaxItemPixels = 1024;          // output pixels an item: 64 tiles, 4 pairs a warp

// n / d for n < 2^24 and d < 2^16 as one multiply (the magic number rounded up: exact there).
struct fastdiv {
  unsigned d;
  unsigned long long m;
};
inline fastdiv make_fastdiv(unsigned d) { return {d, ((1ull << 40) + d - 1) / d}; }
__device__ __forceinline__ unsigned operator/(unsigned n, const fastdiv& f) {
  return (unsigned)(((unsigned long long)n * f.m) >> 40);
}

// How a shape is cut into work: KT output channels a block, items of `images` whole images or
// of `band` output rows of one image, the window an item reads (cp channels a pixel: the input's
// c and zeros up to a whole k-step), the shared memory it takes.
struct conv_plan {
  int kt, cp, images, band, bands, items, window_rows, window_cols;
  size_t weight_bytes, window_bytes, shared;
  fastdiv by_bands, by_row_chunks, by_chunks, by_window_rows, by_item_pixels, by_q;
};

inline size_t round128(size_t n) { return (n + 127) / 128 * 128; }

// The channels a window pixel holds: c up to a whole k-step of 32 bytes (16 in fp16, 8 in fp32).
inline int window_channels(int c, int elem) {
  const int step = 32 / elem;
  return (c + step - 1) / step * step;
}

// The divisors of a plan whose kt, images, band, window_rows and window_cols are set, and its
// bands and items; false where the kernels' 32-bit indexing (fastdiv's 2^24, the step table)
// would not hold.
inline bool plan_indexing(const gpu_conv_shape& s, int elem, conv_plan* p) {
  const size_t pixel_bytes = (size_t)p->cp * elem;
  p->bands = (s.p + p->band - 1) / p->band;
  p->items = (s.n + p->images - 1) / p->images * p->bands;
  const int row_chunks = (int)(p->window_cols * pixel_bytes / 16);
  if ((long long)p->images * p->window_rows * row_chunks >= (1 << 24) ||
      (long long)p->items >= (1 << 24) || row_chunks >= (1 << 16) ||
      p->images * p->band * s.q >= (1 << 16) || s.r * s.s * (int)(pixel_bytes / 32) > kMaxSteps)
    return false;
  p->by_bands = make_fastdiv(p->bands);
  p->by_row_chunks = make_fastdiv(row_chunks);
  p->by_chunks = make_fastdiv((unsigned)(pixel_bytes / 16));
  p->by_window_rows = make_fastdiv(p->window_rows);
  p->by_item_pixels = make_fastdiv(p->band * s.q);
  p->by_q = make_fastdiv(s.q);
  return true;
}

// The plan with the most pixels an item (up to kMaxItemPixels) at two blocks an SM, or at one
// where two would leave a warp without its set of tiles (or the registers allow one); 0 where
// nothing fits.
int plan_conv(const gpu_conv_shape& s, int elem, conv_plan* pl) {
  const int rows_full = (s.p - 1) * s.stride_h + (s.r - 1) * s.dil_h + 1;
  const int cols = (s.q - 1) * s.stride_w + (s.s - 1) * s.dil_w + 1;
  const int cp = window_channels(s.c, elem);
  const size_t pixel_bytes = (size_t)cp * elem;
  int found = 0;
  for (int per_sm = 2; per_sm >= 1 && !found; per_sm--) {
    const size_t budget = per_sm == 2 ? kSharedForTwo : kSharedPerSM;
    for (int kt : {64, 48, 32, 16}) {
      // a padded k (not a multiple of 16) takes slices of 16 or 32 channels (the kernels built
      // for padding)
      if (padded_k(s.k) % kt || (s.k % 16 && kt > 32)) continue;
      const size_t weights = (size_t)s.r * s.s * cp * kt * elem;
      if (weights >= budget) continue;
      conv_plan p = {};
      p.kt = kt, p.cp = cp, p.weight_bytes = weights, p.window_cols = cols;
      const size_t image_bytes = round128((size_t)rows_full * cols * pixel_bytes);
      if (weights + 2 * image_bytes <= budget) {  // whole images, as many as fit (powers of 2)
        p.band = s.p, p.window_rows = rows_full, p.images = 1;
        auto images_bytes = [&](int images) {
          return round128((size_t)images * rows_full * cols * pixel_bytes);
        };
        while (p.images * 2 * s.p * s.q <= kMaxItemPixels && p.images * 2 <= s.n &&
               weights + 2 * images_bytes(p.images * 2) <= budget)
          p.images *= 2;
        p.window_bytes = images_bytes(p.images);
      } else {  // bands of output rows of one image
        p.images = 1, p.band = s.p;
        auto window_of = [&](int band) {
          return round128((size_t)((band - 1) * s.stride_h + (s.r - 1) * s.dil_h + 1) * cols *
                          pixel_bytes);
        };
        while (p.band > 1 &&
               (p.band * s.q > kMaxItemPixels || weights + 2 * window_of(p.band) > budget))
          p.band--;
        if (weights + 2 * window_of(p.band) > budget) continue;
        // as many bands, of rows as even as they come (32 rows in 22 and 10 would leave the
        // short band's warps half idle; 16 and 16 do not)
        const int bands = (s.p + p.band - 1) / p.band;
        p.band = (s.p + bands - 1) / bands;
        p.window_rows = (p.band - 1) * s.stride_h + (s.r - 1) * s.dil_h + 1;
        p.window_bytes = window_of(p.band);
      }
      p.shared = weights + 2 * p.window_bytes;
      const int tiles = (p.images * p.band * s.q + 15) / 16;
      // Two blocks an SM only where every warp of each has a pair of tiles (or the batch is
      // too small to give more).
      if (per_sm == 2 && (tiles < kWarps * tiles_of(kt) || blocks_of(kt) < 2) &&
          p.images * 2 <= s.n)
        continue;
      if (!plan_indexing(s, elem, &p)) return 0;
      *pl = p;
      found = 1;
      break;
    }
  }
  return found;
}

__device__ __forceinline__ unsigned swizzle(unsigned byte) {
  return byte ^ (((byte >> 7) & 7) << 4);
}

// The window of item `item` into the buffer at `buffer` (a shared address), by the block's
// Threads threads: for each of the item's images and window rows, the input row's pixels from
// column -pad_l on, 16 bytes a copy (zeros for the chunks past the input's c channels).
template <int Threads, typename T>
__device__ __forceinline__ void load_window(const T* __restrict__ x, const gpu_conv_shape& s,
                                            const conv_plan& pl, int item, unsigned buffer) {
  const int group = (unsigned)item / pl.by_bands, band = item - group * pl.bands;
  const int first_image = group * pl.images;
  const int top = band * pl.band * s.stride_h - s.pad_t;
  const int chunks = pl.images * pl.window_rows * pl.by_row_chunks.d;
  for (int v = threadIdx.x; v < chunks; v += Threads) {
    const unsigned row_all = (unsigned)v / pl.by_row_chunks;
    const unsigned in_row_chunk = v - row_all * pl.by_row_chunks.d;
    const unsigned image = row_all / pl.by_window_rows;
    const unsigned col = in_row_chunk / pl.by_chunks;
    const unsigned part = in_row_chunk - col * pl.by_chunks.d;
    const int row = top + (int)(row_all - image * pl.window_rows);
    const int column = (int)col - s.pad_l;
    const int n = first_image + (int)image;
    const bool valid = n < s.n && row >= 0 && row < s.h && column >= 0 && column < s.w &&
                       (int)(part * (16 / sizeof(T))) < s.c;
    const T* src =
        valid ? x + (((long long)n * s.h + row) * s.w + column) * s.c + part * (16 / sizeof(T))
              : x;
    copy16(buffer + swizzle(v * 16), src, valid);
  }
}

// The slice of KPairs pairs of n-tiles from pair `first_pair` on of weights w (gpu_conv_weights'
// layout, k / 16 pairs in all) into shared memory at weights_at, by cp.async: for each step (a
// window column, a k-step, a window row: the sum order of conv_kernels.h), 512 bytes a pair (a
// lane's B fragments of two n-tiles: 16 bytes). And the table of the steps' offsets into a window
// (window pixels << 8 | k-step).
template <int Threads, int KPairs, typename T>
__device__ __forceinline__ void load_weights(const unsigned char* __restrict__ w,
                                             const gpu_conv_shape& s, const conv_plan& pl,
                                             int first_pair, unsigned weights_at,
                                             unsigned* step_at) {
  const int window_cols = pl.window_cols;
  const int steps = pl.cp * (int)sizeof(T) / 32, all_steps = s.r * s.s * steps;
  const int pairs = padded_k(s.k) / 16, chunks = all_steps * KPairs * 32;
  for (int v = threadIdx.x; v < chunks; v += Threads) {
    const int tap_step = v / (KPairs * 32), rest = v - tap_step * KPairs * 32;
    copy16(weights_at + v * 16,
           w + ((long long)tap_step * pairs + first_pair) * 512 + rest * 16, true);
  }
  for (int i = threadIdx.x; i < all_steps; i += Threads) {
    const int r = i % s.r, column_step = i / s.r, t = column_step / steps;
    step_at[i] = (unsigned)(r * s.dil_h * window_cols + t * s.dil_w) << 8 | (column_step % steps);
  }
}

// The window pixel (at tap (0, 0)) of output pixel m of an item: image m / (band x q), row and
// column within it by the strides.
__device__ __forceinline__ unsigned window_pixel(unsigned m, const gpu_conv_shape& s,
                                                 const conv_plan& pl) {
  const unsigned image = m / pl.by_item_pixels;
  const unsigned rest = m - image * pl.by_item_pixels.d;
  const unsigned p = rest / pl.by_q, q = rest - p * pl.by_q.d;
  return (image * pl.window_rows + p * s.stride_h) * pl.window_cols + q * s.stride_w;
}

// acc += the taps and k-steps of Tiles tiles whose lane rows lie at window pixels a_pixel[f] of
// the window at `window` (a shared address), against the weights at weights_at (KT channels:
// KT / 16 pairs); each step's fragments loaded while the step before it multiplies. Every
// caller sums in this one order, so that a convolution's bits do not depend on the kernel.
template <typename T, int KT, int Tiles>
__device__ __forceinline__ void multiply_taps(float (&acc)[Tiles][KT / 8][4],
                                              const unsigned (&a_pixel)[Tiles], unsigned window,
                                              unsigned weights_at, const unsigned* step_at,
                                              int all_steps, unsigned pixel_bytes, int lane) {
  using E = element<T>;
  constexpr int kPairs = KT / 16;
  const int a_half = lane / 16;
  unsigned a[2][Tiles][4];
  uint4 b[2][kPairs];
  auto load = [&](int i, unsigned (&a_)[Tiles][4], uint4 (&b_)[kPairs]) {
    const unsigned at = step_at[i];
    const unsigned chunk = ((at & 255) * 2 + a_half) * 16;
#pragma unroll
    for (int np = 0; np < kPairs; np++)
      asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(b_[np].x), "=r"(b_[np].y), "=r"(b_[np].z), "=r"(b_[np].w)
                   : "r"(weights_at + ((i * kPairs + np) * 32 + lane) * 16));
#pragma unroll
    for (int f = 0; f < Tiles; f++)
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(a_[f][0]), "=r"(a_[f][1]), "=r"(a_[f][2]), "=r"(a_[f][3])
                   : "r"(window + swizzle((a_pixel[f] + (at >> 8)) * pixel_bytes + chunk)));
  };
  auto multiply = [&](const unsigned (&a_)[Tiles][4], const uint4 (&b_)[kPairs]) {
#pragma unroll
    for (int f = 0; f < Tiles; f++)
#pragma unroll
      for (int np = 0; np < kPairs; np++) {
        E::mma(acc[f][2 * np], a_[f], b_[np].x, b_[np].y);
        E::mma(acc[f][2 * np + 1], a_[f], b_[np].z, b_[np].w);
      }
  };
  load(0, a[0], b[0]);
  for (int i = 0; i < all_steps; i += 2) {
    if (i + 1 < all_steps) load(i + 1, a[1], b[1]);
    multiply(a[0], b[0]);
    if (i + 1 >= all_steps) break;
    if (i + 2 < all_steps) load(i + 2, a[0], b[0]);
    multiply(a[1], b[1]);
  }
}

// Pad: k is not a multiple of 16; the channels past it are computed, neither read nor stored
// (a kernel of its own, so that the others carry no checks).
template <typename T, int KT, bool Pad>
__global__ void __launch_bounds__(kThreads, blocks_of(KT)) conv_nhwc_kernel(
    const T* __restrict__ x, const unsigned char* __restrict__ w, const float* __restrict__ bias,
    const T* __restrict__ z, T* __restrict__ y, gpu_conv_shape s, conv_plan pl, gpu_clamp clamp) {
  using E = element<T>;
  constexpr int kPairs = KT / 16;  // pairs of 8-channel n-tiles
  constexpr int kTiles = tiles_of(KT);
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ unsigned step_at[kMaxSteps];  // per tap and k-step: window pixels << 8 | k-step
  const unsigned weights_at = shared_address(smem);
  const unsigned windows_at = weights_at + (unsigned)pl.weight_bytes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int k0 = blockIdx.y * KT;
  const int k_end = Pad ? s.k : k0 + KT;  // this block's channels from k_end on: padding
  const int steps = pl.cp * (int)sizeof(T) / 32;  // 32 bytes of input channels a k-step
  const int all_steps = s.r * s.s * steps;

  // This block's slice of the weights: its kPairs of the layer's k / 16 pairs.
  load_weights<kThreads, kPairs, T>(w, s, pl, blockIdx.y * kPairs, weights_at, step_at);
  int item = blockIdx.x;
  if (item < pl.items) load_window<kThreads>(x, s, pl, item, windows_at);
  copies_commit();

  // Where this lane's ldmatrix row lies: matrix lane / 8 of the four (rows 0-7 / 8-15 of the
  // tile, channels 0-7 / 8-15 of the k-step), row lane % 8 of it.
  const int a_row = (lane / 8 % 2) * 8 + lane % 8;
  const int item_pixels = pl.images * pl.band * s.q;
  const int tiles = (item_pixels + 15) / 16;
  const unsigned pixel_bytes = (unsigned)pl.cp * sizeof(T);
  const int g = lane / 4, t4 = lane % 4;

  for (int buffer = 0; item < pl.items; item += gridDim.x, buffer ^= 1) {
    const int next = item + gridDim.x;
    if (next < pl.items)
      load_window<kThreads>(x, s, pl, next,
                            windows_at + (buffer ^ 1) * (unsigned)pl.window_bytes);
    copies_commit();
    copies_wait_all_but_one();
    __syncthreads();
    const unsigned window = windows_at + buffer * (unsigned)pl.window_bytes;
    const int group = (unsigned)item / pl.by_bands, band = item - group * pl.bands;
    const int images_here = min(pl.images, s.n - group * pl.images);
    const int rows_here = min(pl.band, s.p - band * pl.band);
    const int pixels_here = pl.images == 1 ? rows_here * s.q : images_here * s.p * s.q;
    const int first_image = group * pl.images;

    for (int set = warp; set * kTiles < tiles; set += kWarps) {
      // The window pixel of this lane's A row in each tile at tap (0, 0); rows past
      // the item's pixels read its last one (computed, never stored).
      unsigned a_pixel[kTiles];
#pragma unroll
      for (int f = 0; f < kTiles; f++)
        a_pixel[f] = window_pixel((unsigned)min((set * kTiles + f) * 16 + a_row, pixels_here - 1),
                                  s, pl);
      // Where this lane's outputs go (rows g and g + 8 of each tile; -1: past the item), and
      // their residual, read now so that its latency passes under the taps' work.
      long long out_at[kTiles][2];
      typename E::pair residual[kTiles][2][KT / 8];
#pragma unroll
      for (int f = 0; f < kTiles; f++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int m = (set * kTiles + f) * 16 + g + 8 * h;
          const unsigned image = (unsigned)m / pl.by_item_pixels;
          const unsigned rest = m - image * pl.by_item_pixels.d;
          out_at[f][h] = m >= pixels_here ? -1
                         : ((((long long)first_image + image) * s.p + band * pl.band) * s.q +
                            rest) * s.k + k0 + t4 * 2;
          const bool read = z && out_at[f][h] >= 0;
#pragma unroll
          for (int j = 0; j < KT / 8; j++)
            residual[f][h][j] =
                read && k0 + j * 8 < k_end ? E::load(z + out_at[f][h] + j * 8) : E::none();
        }
      float acc[kTiles][KT / 8][4];
      start_sums<KT, kTiles>(acc, bias, k0, t4, k_end);
      multiply_taps<T, KT, kTiles>(acc, a_pixel, window, weights_at, step_at, all_steps,
                                   pixel_bytes, lane);

      // Epilogue: this lane holds rows g and g + 8 of each tile, channels t4 * 2 and + 1 of
      // each 8-channel n-tile.
#pragma unroll
      for (int f = 0; f < kTiles; f++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          if (out_at[f][h] < 0) continue;
#pragma unroll
          for (int j = 0; j < KT / 8; j++) {
            if (k0 + j * 8 >= k_end) continue;  // the padding's channels
            float v0 = acc[f][j][2 * h], v1 = acc[f][j][2 * h + 1];
            if (z) {
              const float2 r = E::wide(residual[f][h][j]);
              v0 += r.x, v1 += r.y;
            }
            E::store(y + out_at[f][h] + j * 8, gpu_clamped(v0, clamp), gpu_clamped(v1, clamp));
          }
        }
    }
    __syncthreads();  // every warp is done with this buffer before the next item refills it
  }
}

template <typename T, int KT, bool Pad>
cudaError_t launch(const void* x, const void* w, const float* bias, const void* z, void* y,
                   const gpu_conv_shape& s, const conv_plan& pl, gpu_clamp clamp,
                   cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  if (pl.shared > (48 << 10))
    err = cudaFuncSetAttribute(conv_nhwc_kernel<T, KT, Pad>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, (int)pl.shared);
  int device = 0, sms = 0, resident = 0;
  if (err == cudaSuccess) err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, conv_nhwc_kernel<T, KT, Pad>,
                                                        kThreads, pl.shared);
  if (err != cudaSuccess) return err;
  const int ktiles = padded_k(s.k) / KT;
  const long long fill = (long long)sms * (resident > 0 ? resident : 1);
  const int blocks = (int)(pl.items < (fill + ktiles - 1) / ktiles ? pl.items
                                                                   : (fill + ktiles - 1) / ktiles);
  conv_nhwc_kernel<T, KT, Pad>
      <<<dim3((unsigned)blocks, (unsigned)ktiles), kThreads, pl.shared, stream>>>(
          static_cast<const T*>(x), static_cast<const unsigned char*>(w), bias,
          static_cast<const T*>(z), static_cast<T*>(y), s, pl, clamp);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch(const void* x, const void* w, const float* bias, const void* z, void* y,
                   const gpu_conv_shape& s, const conv_plan& pl, gpu_clamp clamp,
                   cudaStream_t stream) {
  if (s.k % 16) return pl.kt == 32 ? launch<T, 32, true>(x, w, bias, z, y, s, pl, clamp, stream)
                                    : launch<T, 16, true>(x, w, bias, z, y, s, pl, clamp, stream);
  switch (pl.kt) {
    case 64: return launch<T, 64, false>(x, w, bias, z, y, s, pl, clamp, stream);
    case 48: return launch<T, 48, false>(x, w, bias, z, y, s, pl, clamp, stream);
    case 32: return launch<T, 32, false>(x, w, bias, z, y, s, pl, clamp, stream);
    default: return launch<T, 16, false>(x, w, bias, z, y, s, pl, clamp, stream);
  }
}

// Whether the kernel takes the shape, and how it cuts it (*pl) where it does.
int takes(const gpu_conv_shape& s, int half, conv_plan* pl) {
  return s.c % 8 == 0 && s.k % 8 == 0 && s.c >= 8 && s.k >= 8 && s.n >= 1 && s.p >= 1 &&
         s.q >= 1 && plan_conv(s, half ? 2 : 4, pl);
}

}  // namespace

extern "C" int gpu_conv_nhwc_window_channels(int c, int half) {
  return window_channels(c, half ? 2 : 4);
}

extern "C" int gpu_conv_nhwc_takes(const gpu_conv_shape* s, int half) {
  conv_plan pl;
  return takes(*s, half, &pl);
}

extern "C" ttp_status gpu_conv_nhwc(const void* x, const void* weights, const float* bias,
                                    const void* z, void* y, const gpu_conv_shape* s,
                                    gpu_clamp clamp, int half, cudaStream_t stream, ttp_err* e) {
  conv_plan pl;
  if (!takes(*s, half, &pl))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_conv_nhwc: %d to %d channels, a %dx%d window "
               "(multiples of 8 channels, the weights and two windows within shared memory)",
               s->c, s->k, s->r, s->s);
  const cudaError_t err = half ? launch<__half>(x, weights, bias, z, y, *s, pl, clamp, stream)
                               : launch<float>(x, weights, bias, z, y, *s, pl, clamp, stream);
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "conv_nhwc_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}

/* The mma's B fragments in register order: for each window column, k-step, window row (the sum
   order) and pair of 8-channel n-tiles, 32 lanes x 16 bytes. fp16 (k-steps of 16 input channels): lane l holds, of n-tile 0 then 1,
   output channel l / 4 and input channels (l % 4) * 2, + 1, + 8 and + 9 of the step. TF32
   (k-steps of 8): of n-tile 0 then 1, output channel l / 4 and input channels l % 4 and + 4,
   each value rounded to TF32's 10 bits of mantissa (to nearest, ties away, as cvt.rna does). */
extern "C" size_t gpu_conv_weights_count(int k, int cp, int r, int s) {
  return (size_t)padded_k(k) * cp * r * s;
}

extern "C" void gpu_conv_weights(const float* kcrs, int k, int c, int r, int s, int cp, int half,
                                 float* out) {
  const int per_step = half ? 16 : 8, values = half ? 8 : 4;
  const int steps = cp / per_step, pairs = padded_k(k) / 16;
  for (int column = 0; column < s; column++)
    for (int step = 0; step < steps; step++)
      for (int row = 0; row < r; row++)
        for (int pair = 0; pair < pairs; pair++)
          for (int lane = 0; lane < 32; lane++)
            for (int e = 0; e < values; e++) {
              const int n = pair * 16 + e / (values / 2) * 8 + lane / 4;
              const int i = half ? step * 16 + (lane % 4) * 2 + e % 2 + (e % 4 / 2) * 8
                                 : step * 8 + lane % 4 + (e % 2) * 4;
              const size_t at =
                  (((((size_t)column * steps + step) * r + row) * pairs + pair) * 32 + lane) *
                      values + e;
              float v = i < c && n < k ? kcrs[(((size_t)n * c + i) * r + row) * s + column]
                                       : 0.0f;
              if (!half) {
                unsigned bits;
                memcpy(&bits, &v, sizeof bits);
                if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & ~0x1fffu;
                memcpy(&v, &bits, sizeof bits);
              }
              out[at] = v;
            }
}
