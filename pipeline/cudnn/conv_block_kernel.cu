// ttapipe's residual block (see conv_kernels.h): two 3x3 convolutions of one shape in one kernel,
// the first's output kept in shared memory, fp16 on the tensor cores (mma.sync m16n8k16, fp32
// sums in conv_kernels.h's order, so that the bits are gpu_conv_nhwc's for the two run one after
// the other).
//
// Two blocks of 8 warps an SM, on a persistent grid, each holding both convolutions' weights (the
// mma's B fragments, gpu_conv_weights' layout), two input windows (the next item's arrives by
// cp.async while the block computes this one) and a middle window; an item is one or a few whole
// images. Two blocks rather than one of 16 warps, so that one multiplies while the other waits at
// its barriers. A window holds an image's rows between a zero column on either side (the
// padding's; the rows above and below the image are not kept: the taps that would read them add
// nothing, and are skipped), as planes of 16 bytes a pixel: plane i holds channels 8i to 8i + 7
// of every pixel, so that the eight rows an ldmatrix phase reads (eight pixels in a row) are 128
// consecutive bytes, in eight different bank groups, and every address is the lane's own plus a
// constant.
//
// A warp computes TR output rows of 16 pixels (its tiles) at all C output channels. A 16-pixel
// row of the window, loaded once by ldmatrix for a window column and k-step, serves the output
// rows it lies under, one for each of the window's rows: TR + 2 loads for TR tiles where a load a
// tile and tap would take 3 TR. The first convolution's epilogue (bias, clamp, rounded to fp16)
// goes into the middle window by stmatrix (its zero columns stay: the second convolution's
// padding); the second's reads the input back from the window by ldmatrix for the residual, in
// the accumulators' own layout, and writes the output. Of the block's bytes to and from device
// memory, only the input is read and the output written, once each.
#include <cuda_fp16.h>

#include "conv_tile.cuh"

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;

// The layout of a block of C channels over H x W maps, TR output rows a warp.
template <int C, int H, int W, int TR>
struct block_layout {
  static constexpr int kChunks = C * 2 / 16;            // planes: 16-byte chunks of a pixel
  static constexpr int kCols = W + 2;                   // a window row: the image's, and zeros
  static constexpr int kRowBytes = kCols * 16;          // of a plane
  static constexpr int kPlaneBytes = H * kRowBytes;
  static constexpr int kImageBytes = kChunks * kPlaneBytes;
  static constexpr int kWarpsPerImage = H / TR * (W / 16);
  static constexpr int kImages = kWarps / kWarpsPerImage;  // an item
  static constexpr int kWindowBytes = kImages * kImageBytes;
  static constexpr int kSteps = C / 16;                 // k-steps of 16 channels a tap
  static constexpr int kPairs = C / 16;                 // pairs of 8-channel n-tiles
  static constexpr int kWeightBytes = 9 * kSteps * kPairs * 512;
  static constexpr int kBiasBytes = (2 * C * 4 + 127) / 128 * 128;  // both, as floats
  static constexpr int kShared = 2 * kWeightBytes + kBiasBytes + 3 * kWindowBytes;
  static_assert(H % TR == 0 && W % 16 == 0 && kWarps % kWarpsPerImage == 0, "tiles");
  static_assert(kShared <= 113 << 10, "two blocks an SM");
};

__device__ __forceinline__ void ldmatrix4(unsigned (&a)[4], unsigned at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(at));
}

__device__ __forceinline__ unsigned half2_bits(float a, float b) {
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const unsigned*>(&v);
}

__device__ __forceinline__ float2 half2_value(unsigned bits) {
  return __half22float2(*reinterpret_cast<const __half2*>(&bits));
}

// The windows of the images first .. first + kImages - 1 (zeros past n) into `buffer`: each
// 16-byte chunk of a pixel into its plane, consecutive threads reading consecutive chunks.
template <int C, int H, int W, int TR>
__device__ __forceinline__ void load_windows(const __half* __restrict__ x, int n, int first,
                                             unsigned buffer) {
  using L = block_layout<C, H, W, TR>;
  constexpr int kPerImage = H * L::kCols * L::kChunks;
  for (int v = threadIdx.x; v < L::kImages * kPerImage; v += kThreads) {
    const int image = v / kPerImage, rest = v % kPerImage;
    const int pixel = rest / L::kChunks, part = rest % L::kChunks;
    const int row = pixel / L::kCols, column = pixel % L::kCols - 1;
    const bool valid = first + image < n && column >= 0 && column < W;
    const __half* src =
        valid ? x + (((long long)(first + image) * H + row) * W + column) * C + part * 8 : x;
    copy16(buffer + image * L::kImageBytes + part * L::kPlaneBytes + pixel * 16, src, valid);
  }
}

// acc += one 3x3 convolution of this warp's TR tiles, output rows p0 .. p0 + TR - 1: the window
// at a_at (this lane's ldmatrix row in window row p0 - 1, at window column 0, plane 0), the
// weights at w_at. For each window column and k-step, the B fragments of the three window rows,
// then each of the TR + 2 window rows the tiles read, once, multiplied into every tile below it;
// the rows above and below the image (zeros) are skipped.
template <int C, int H, int W, int TR>
__device__ __forceinline__ void convolve(float (&acc)[TR][C / 8][4], unsigned a_at,
                                         unsigned w_at, int p0, int lane) {
  using L = block_layout<C, H, W, TR>;
  using E = element<__half>;
#pragma unroll
  for (int column = 0; column < 3; column++)
#pragma unroll
    for (int step = 0; step < L::kSteps; step++) {
      uint4 b[3][L::kPairs];
#pragma unroll
      for (int r = 0; r < 3; r++)
#pragma unroll
        for (int np = 0; np < L::kPairs; np++) {
          const unsigned at =
              w_at + (((((column * L::kSteps + step) * 3 + r) * L::kPairs + np) * 32 + lane) * 16);
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                       : "=r"(b[r][np].x), "=r"(b[r][np].y), "=r"(b[r][np].z), "=r"(b[r][np].w)
                       : "r"(at));
        }
#pragma unroll
      for (int row = 0; row < TR + 2; row++) {
        if ((row == 0 && p0 == 0) || (row == TR + 1 && p0 + TR == H)) continue;
        unsigned a[4];
        ldmatrix4(a, a_at + row * L::kRowBytes + column * 16 + step * 2 * L::kPlaneBytes);
#pragma unroll
        for (int r = 0; r < 3; r++) {
          const int f = row - r;  // the tile this window row is row r of
          if (f < 0 || f >= TR) continue;
#pragma unroll
          for (int np = 0; np < L::kPairs; np++) {
            E::mma(acc[f][2 * np], a, b[r][np].x, b[r][np].y);
            E::mma(acc[f][2 * np + 1], a, b[r][np].z, b[r][np].w);
          }
        }
      }
    }
}

template <int C, int H, int W, int TR>
__global__ void __launch_bounds__(kThreads, 2) conv_block_kernel(
    const __half* __restrict__ x, const unsigned char* __restrict__ w1,
    const float* __restrict__ bias1, gpu_clamp clamp1, const unsigned char* __restrict__ w2,
    const float* __restrict__ bias2, gpu_clamp clamp2, int residual, __half* __restrict__ y,
    int n) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // stmatrix: sm_90 (takes() asks for it)
  using L = block_layout<C, H, W, TR>;
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned w1_at = shared_address(smem);
  const unsigned w2_at = w1_at + L::kWeightBytes;
  float* biases = reinterpret_cast<float*>(smem + 2 * L::kWeightBytes);  // C of each
  const unsigned middle = w2_at + L::kWeightBytes + L::kBiasBytes;
  const unsigned windows_at = middle + L::kWindowBytes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int items = (n + L::kImages - 1) / L::kImages;

  // Both weights (gpu_conv_weights' layout: all of it, in order), then the first item.
  for (int v = threadIdx.x; v < L::kWeightBytes / 16; v += kThreads) {
    copy16(w1_at + v * 16, w1 + v * 16, true);
    copy16(w2_at + v * 16, w2 + v * 16, true);
  }
  // The biases too, read at each item's start from shared memory rather than device memory.
  for (int v = threadIdx.x; v < 2 * C; v += kThreads) {
    const float* bias = v < C ? bias1 : bias2;
    biases[v] = bias ? bias[v % C] : 0.0f;
  }
  int item = blockIdx.x;
  if (item < items) load_windows<C, H, W, TR>(x, n, item * L::kImages, windows_at);
  copies_commit();
  // The middle window's zero columns are the second convolution's padding: written once here,
  // never after (the first convolution writes the image's columns alone).
  for (int v = threadIdx.x; v < L::kWindowBytes / 16; v += kThreads)
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(middle + v * 16), "r"(0u)
                 : "memory");

  // This warp's tiles: image `image` of the item, output rows p0 .. p0 + TR - 1, columns q0 ..
  // q0 + 15. This lane's ldmatrix and stmatrix row: pixel a_row of a tile, plane a_half of a
  // k-step (matrix lane / 8 of the four: rows 0-7 / 8-15, channels 0-7 / 8-15), in window row
  // p0 - 1 (never read where p0 is 0: convolve skips it).
  const int image = warp / L::kWarpsPerImage, in_image = warp % L::kWarpsPerImage;
  const int p0 = in_image / (W / 16) * TR, q0 = in_image % (W / 16) * 16;
  const int a_row = (lane / 8 % 2) * 8 + lane % 8, a_half = lane / 16;
  const unsigned lane_at = image * L::kImageBytes + a_half * L::kPlaneBytes +
                           ((p0 - 1) * L::kCols + q0 + a_row) * 16;
  const unsigned centre = L::kRowBytes + 16;  // an output pixel's own window pixel
  const int g = lane / 4, t4 = lane % 4;

  for (int buffer = 0; item < items; item += gridDim.x, buffer ^= 1) {
    copies_wait_all();
    __syncthreads();  // this item's window is in; every warp is done with the last one's
    const int next = item + gridDim.x;
    if (next < items)
      load_windows<C, H, W, TR>(x, n, next * L::kImages,
                                windows_at + (buffer ^ 1) * L::kWindowBytes);
    copies_commit();
    const unsigned window = windows_at + buffer * L::kWindowBytes;
    const int my_image = item * L::kImages + image;
    float acc[TR][C / 8][4];

    // The first convolution, into the middle window.
    if (my_image < n) {
      start_sums<C, TR>(acc, biases, 0, t4);
      convolve<C, H, W, TR>(acc, window + lane_at, w1_at, p0, lane);
#pragma unroll
      for (int f = 0; f < TR; f++)
#pragma unroll
        for (int np = 0; np < L::kPairs; np++) {
          const float* lo = acc[f][2 * np];
          const float* hi = acc[f][2 * np + 1];
          auto c = [&](float v) { return gpu_clamped(v, clamp1); };
          asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(
                           middle + lane_at + centre + f * L::kRowBytes + np * 2 * L::kPlaneBytes),
                       "r"(half2_bits(c(lo[0]), c(lo[1]))), "r"(half2_bits(c(lo[2]), c(lo[3]))),
                       "r"(half2_bits(c(hi[0]), c(hi[1]))), "r"(half2_bits(c(hi[2]), c(hi[3])))
                       : "memory");
        }
    }
    __syncthreads();

    // The second, from the middle window, + the input, to device memory.
    if (my_image < n) {
      start_sums<C, TR>(acc, biases + C, 0, t4);
      convolve<C, H, W, TR>(acc, middle + lane_at, w2_at, p0, lane);
      __half* out = y + (((long long)my_image * H + p0) * W + q0 + g) * C + t4 * 2;
#pragma unroll
      for (int f = 0; f < TR; f++)
#pragma unroll
        for (int np = 0; np < L::kPairs; np++) {
          // the input at these outputs, in the accumulators' layout: (rows 0-7, 8-15) of
          // n-tile 2 np, then of 2 np + 1
          unsigned z[4] = {0u, 0u, 0u, 0u};
          if (residual)
            ldmatrix4(z, window + lane_at + centre + f * L::kRowBytes + np * 2 * L::kPlaneBytes);
#pragma unroll
          for (int jj = 0; jj < 2; jj++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
              const int j = 2 * np + jj;
              float v0 = acc[f][j][2 * h], v1 = acc[f][j][2 * h + 1];
              if (residual) {
                const float2 r = half2_value(z[2 * jj + h]);
                v0 += r.x, v1 += r.y;
              }
              element<__half>::store(out + (f * W + 8 * h) * C + j * 8,
                                     gpu_clamped(v0, clamp2), gpu_clamped(v1, clamp2));
            }
        }
    }
  }
#endif
}

// The shapes the kernel is built for: C channels over H x W maps, TR output rows a warp (ResNet
// stages of 16 and 32 channels; the most rows whose accumulators and windows fit).
template <int C, int H, int W, int TR>
struct block_shape {};

template <int C, int H, int W, int TR>
block_layout<C, H, W, TR> layout_of(block_shape<C, H, W, TR>) {
  return {};
}

template <typename F>
bool with_shape(int c, int h, int w, F f) {
  if (c == 16 && h == 32 && w == 32) return f(block_shape<16, 32, 32, 8>()), true;
  if (c == 16 && h == 16 && w == 16) return f(block_shape<16, 16, 16, 4>()), true;
  if (c == 32 && h == 16 && w == 16) return f(block_shape<32, 16, 16, 2>()), true;
  return false;
}

template <int C, int H, int W, int TR>
cudaError_t launch(block_shape<C, H, W, TR>, const void* x, const void* w1, const float* bias1,
                   gpu_clamp clamp1, const void* w2, const float* bias2, gpu_clamp clamp2,
                   int residual, void* y, int n, cudaStream_t stream) {
  using L = block_layout<C, H, W, TR>;
  cudaError_t err = cudaFuncSetAttribute(conv_block_kernel<C, H, W, TR>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, L::kShared);
  int device = 0, sms = 0, resident = 0;
  if (err == cudaSuccess) err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, conv_block_kernel<C, H, W, TR>,
                                                        kThreads, L::kShared);
  if (err != cudaSuccess) return err;
  const long long fill = (long long)sms * (resident > 0 ? resident : 1);
  const int items = (n + L::kImages - 1) / L::kImages;
  conv_block_kernel<C, H, W, TR><<<(unsigned)(items < fill ? items : fill), kThreads, L::kShared,
                                   stream>>>(
      static_cast<const __half*>(x), static_cast<const unsigned char*>(w1), bias1, clamp1,
      static_cast<const unsigned char*>(w2), bias2, clamp2, residual, static_cast<__half*>(y), n);
  return cudaGetLastError();
}

// Whether s is a shape the kernel is built for (c = k, a 3x3 window of stride 1 padded by 1) and
// the current device runs it: sm_90 or later (stmatrix), with a block's shared memory.
bool takes(const gpu_conv_shape& s, int half) {
  int shared = 0;
  const bool shape = half && s.n >= 1 && s.c == s.k && s.r == 3 && s.s == 3 && s.stride_h == 1 &&
                     s.stride_w == 1 && s.dil_h == 1 && s.dil_w == 1 && s.pad_t == 1 &&
                     s.pad_l == 1 && s.p == s.h && s.q == s.w &&
                     with_shape(s.c, s.h, s.w, [&](auto shape_of) {
                       shared = layout_of(shape_of).kShared;
                     });
  return shape && device_runs(9, shared);
}

}  // namespace

extern "C" int gpu_conv_block_nhwc_takes(const gpu_conv_shape* s, int half) {
  return takes(*s, half);
}

extern "C" ttp_status gpu_conv_block_nhwc(const void* x, const void* weights1,
                                          const float* bias1, gpu_clamp clamp1,
                                          const void* weights2, const float* bias2,
                                          gpu_clamp clamp2, int residual, void* y,
                                          const gpu_conv_shape* s, cudaStream_t stream,
                                          ttp_err* e) {
  if (!takes(*s, 1))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_conv_block_nhwc: %d to %d channels over %dx%d "
               "maps, a %dx%d window (16 channels over 32x32 or 16x16, 32 over 16x16; 3x3 "
               "windows of stride 1 padded by 1)", s->c, s->k, s->h, s->w, s->r, s->s);
  cudaError_t err = cudaSuccess;
  with_shape(s->c, s->h, s->w, [&](auto shape) {
    err = launch(shape, x, weights1, bias1, clamp1, weights2, bias2, clamp2, residual, y, s->n,
                 stream);
  });
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "conv_block_kernel launch: %s", cudaGetErrorString(err));
  return TTP_OK;
}
