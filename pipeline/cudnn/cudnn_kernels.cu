// The cudnn engine's own kernels (see cudnn_kernels.h): grid-stride loops, one element a thread
// (the elementwise layers 16 bytes a thread where the shapes allow).
#include <cuda_fp16.h>
#include <stdint.h>

#include "cudnn_kernels.h"
#include "../element.cuh"

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(size_t count) {
  size_t b = (count + kThreads - 1) / kThreads;
  return (unsigned)(b < 65536 ? (b ? b : 1) : 65536);
}

template <typename T>
__device__ __forceinline__ void store(T* p, float v) { *p = gpu_narrow<T>(v); }

// Where element (row, c, y, x) of a tensor of shape d lies, and the other way.
__device__ __forceinline__ size_t index_of(const gpu_dims& d, size_t row, int c, int y, int x) {
  return d.nhwc ? ((row * d.h + y) * d.w + x) * d.c + c : ((row * d.c + c) * d.h + y) * d.w + x;
}
struct coords {
  size_t row;
  int c, y, x;
};
__device__ __forceinline__ coords coords_of(const gpu_dims& d, size_t i) {
  coords k;
  if (d.nhwc) {
    k.c = (int)(i % d.c), i /= d.c;
    k.x = (int)(i % d.w), i /= d.w;
    k.y = (int)(i % d.h), k.row = i / d.h;
  } else {
    k.x = (int)(i % d.w), i /= d.w;
    k.y = (int)(i % d.h), i /= d.h;
    k.c = (int)(i % d.c), k.row = i / d.c;
  }
  return k;
}
__device__ __forceinline__ int channel_of(const gpu_dims& d, size_t i) {
  return (int)(d.nhwc ? i % d.c : i / ((size_t)d.h * d.w) % d.c);
}

template <typename T>
__global__ void epilogue_kernel(T* __restrict__ x, const T* __restrict__ bias,
                                const T* __restrict__ z, gpu_clamp clamp, size_t total,
                                gpu_dims d) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    float v = gpu_wide(x[i]);
    if (bias) v += gpu_wide(bias[channel_of(d, i)]);
    if (z) v += gpu_wide(z[i]);
    store(&x[i], gpu_clamped(v, clamp));
  }
}

template <typename From, typename To>
__global__ void convert_kernel(const From* __restrict__ in, To* __restrict__ out, size_t count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x)
    store(&out[i], gpu_wide(in[i]));
}

__device__ __forceinline__ float softplus(float x) { return x > 30.0f ? x : log1pf(expf(x)); }

template <typename T>
__global__ void pointwise_kernel(gpu_pointwise_op op, float a, float b, const T* in, T* out,
                                 size_t count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x) {
    const float x = gpu_wide(in[i]);
    float y;
    switch (op) {  // comparisons are false for NaN: it passes through
      case GPU_RELU: y = x < 0.0f ? 0.0f : x; break;
      case GPU_LEAKY_RELU: y = x < 0.0f ? a * x : x; break;
      case GPU_SIGMOID: y = 1.0f / (1.0f + expf(-x)); break;
      case GPU_TANH: y = tanhf(x); break;
      case GPU_HARDSWISH: y = x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f; break;
      case GPU_HARDSIGMOID: y = fminf(fmaxf(a * x + b, 0.0f), 1.0f); break;
      case GPU_GELU: y = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); break;
      case GPU_ERF: y = erff(x); break;
      case GPU_ELU: y = x > 0.0f ? x : a * expm1f(x); break;
      case GPU_SOFTPLUS: y = softplus(x); break;
      case GPU_MISH: y = x * tanhf(softplus(x)); break;
      default: y = x < a ? a : x > b ? b : x; break;
    }
    store(&out[i], y);
  }
}

template <typename T>
__global__ void elementwise_kernel(gpu_binary_op op, gpu_operands x, T* out, size_t total,
                                   gpu_dims d) {
  const size_t per_row = (size_t)d.c * d.h * d.w;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const size_t row = i / per_row, c = channel_of(d, i);
    float acc = gpu_wide(static_cast<const T*>(x.in[0])[i]);
    for (int k = 1; k < x.count; k++) {
      const size_t at = x.spread[k] == GPU_PER_CHANNEL ? row * d.c + c
                        : x.spread[k] == GPU_PER_ROW   ? row
                                                       : i;
      const float v = gpu_wide(static_cast<const T*>(x.in[k])[at]);
      switch (op) {
        case GPU_ADD: acc += v; break;
        case GPU_SUB: acc -= v; break;
        case GPU_MUL: acc *= v; break;
        default: acc /= v; break;
      }
    }
    store(&out[i], acc);
  }
}

// elementwise_kernel 16 bytes at a time (8 fp16 or 4 fp32 values of one row and, in NHWC, of
// one pixel; in NCHW of one channel), for tensors whose rows, and NHWC pixels or NCHW planes,
// are whole vectors: one division a vector instead of two an element, 16-byte loads and
// stores (a MobileNet's squeeze-and-excitation gate, x times one value a channel, is such a
// layer). The same sums in the same order as elementwise_kernel, so the same bits.
template <typename T>
__global__ void elementwise_vector_kernel(gpu_binary_op op, gpu_operands x, T* out,
                                          size_t vectors, gpu_dims d) {
  constexpr int kVector = 16 / sizeof(T);
  const size_t per_row = (size_t)d.c * d.h * d.w;
  for (size_t v = blockIdx.x * (size_t)blockDim.x + threadIdx.x; v < vectors;
       v += (size_t)gridDim.x * blockDim.x) {
    const size_t i = v * kVector, row = i / per_row;
    const int c = channel_of(d, i);
    const uint4 first = *reinterpret_cast<const uint4*>(static_cast<const T*>(x.in[0]) + i);
    const T* xs = reinterpret_cast<const T*>(&first);
    float acc[kVector];
#pragma unroll
    for (int u = 0; u < kVector; u++) acc[u] = gpu_wide(xs[u]);
    for (int k = 1; k < x.count; k++) {
      const T* in = static_cast<const T*>(x.in[k]);
      float operand[kVector];
      if (x.spread[k] == GPU_EVERY || (x.spread[k] == GPU_PER_CHANNEL && d.nhwc)) {
        const uint4 loaded = *reinterpret_cast<const uint4*>(
            in + (x.spread[k] == GPU_EVERY ? i : row * d.c + c));
        const T* vs = reinterpret_cast<const T*>(&loaded);
#pragma unroll
        for (int u = 0; u < kVector; u++) operand[u] = gpu_wide(vs[u]);
      } else {  // one value for the vector: its row's, or its NCHW channel's
        const float value = gpu_wide(in[x.spread[k] == GPU_PER_ROW ? row : row * d.c + c]);
#pragma unroll
        for (int u = 0; u < kVector; u++) operand[u] = value;
      }
#pragma unroll
      for (int u = 0; u < kVector; u++) switch (op) {
          case GPU_ADD: acc[u] += operand[u]; break;
          case GPU_SUB: acc[u] -= operand[u]; break;
          case GPU_MUL: acc[u] *= operand[u]; break;
          default: acc[u] /= operand[u]; break;
        }
    }
    uint4 result;
    T* rs = reinterpret_cast<T*>(&result);
#pragma unroll
    for (int u = 0; u < kVector; u++) rs[u] = gpu_narrow<T>(acc[u]);
    *reinterpret_cast<uint4*>(out + i) = result;
  }
}

// Whether elementwise_vector_kernel takes the operands: every pointer 16-byte aligned, NHWC
// pixels (or NCHW planes) of whole vectors, and a per-channel operand's channels in NHWC at
// whole vectors too (c a multiple of the vector: then so is row x c).
bool elementwise_vectors(const gpu_operands& x, const void* out, gpu_dims d, int vector) {
  if ((d.nhwc ? d.c : d.h * d.w) % vector || (uintptr_t)out % 16) return false;
  for (int k = 0; k < x.count; k++)
    if ((uintptr_t)x.in[k] % 16 && (k == 0 || x.spread[k] != GPU_PER_ROW)) return false;
  return true;
}

template <typename T>
__global__ void channel_kernel(int prelu, const T* in, T* out, const float* __restrict__ scale,
                               const float* __restrict__ shift, int params, size_t total,
                               gpu_dims d) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const int c = params == 1 ? 0 : channel_of(d, i);
    const float x = gpu_wide(in[i]);
    store(&out[i], prelu ? (x >= 0.0f || x != x ? x : scale[c] * x)
                         : x * scale[c] + (shift ? shift[c] : 0.0f));
  }
}

template <typename T>
__global__ void window_copy_kernel(const T* __restrict__ in, gpu_dims di, T* __restrict__ out,
                                   gpu_dims d, size_t total, int c_at, int y_at, int x_at,
                                   int step_h, int step_w, float value) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const coords k = coords_of(d, i);
    const int ic = k.c + c_at, iy = k.y * step_h + y_at, ix = k.x * step_w + x_at;
    const bool inside = ic >= 0 && ic < di.c && iy >= 0 && iy < di.h && ix >= 0 && ix < di.w;
    if (inside)
      out[i] = in[index_of(di, k.row, ic, iy, ix)];
    else
      store(&out[i], value);
  }
}

template <typename T>
__global__ void shuffle_kernel(const T* __restrict__ in, T* __restrict__ out, size_t total,
                               gpu_dims d, int groups) {
  const int per_group = d.c / groups;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const coords k = coords_of(d, i);
    const int ic = k.c % groups * per_group + k.c / groups;  // output j g + i reads i (C/g) + j
    out[i] = in[index_of(d, k.row, ic, k.y, k.x)];
  }
}

template <typename T>
__global__ void reorder_kernel(const T* __restrict__ in, gpu_dims di, T* __restrict__ out,
                               gpu_dims d, size_t total) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const coords k = coords_of(d, i);
    size_t chw = ((size_t)k.c * d.h + k.y) * d.w + k.x;  // its place in CHW order
    const int ix = (int)(chw % di.w);
    chw /= di.w;
    out[i] = in[index_of(di, k.row, (int)(chw / di.h), (int)(chw % di.h), ix)];
  }
}

// A thread a pixel: its c values from the c planes of its row (NCHW), its cp channels written
// 8 at a time (16-byte stores), those past c zeros.
template <typename T>
__global__ void to_nhwc_padded_kernel(const T* __restrict__ in, int c, int plane,
                                      T* __restrict__ out, int cp, size_t pixels) {
  constexpr int kVector = 16 / sizeof(T);  // values a 16-byte store
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < pixels;
       i += (size_t)gridDim.x * blockDim.x) {
    const T* from = in + i / plane * c * plane + i % plane;
    uint4* to = reinterpret_cast<uint4*>(out + i * cp);
    for (int v = 0; v < cp / kVector; v++) {
      uint4 vector;
      T* h = reinterpret_cast<T*>(&vector);
#pragma unroll
      for (int u = 0; u < kVector; u++)
        h[u] = v * kVector + u < c ? from[(size_t)(v * kVector + u) * plane] : T();
      to[v] = vector;
    }
  }
}

template <typename T>
__global__ void pool_kernel(int max, int count_pad, const T* __restrict__ in, gpu_dims di,
                            T* __restrict__ out, gpu_dims d, size_t total, gpu_window w) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const coords k = coords_of(d, i);
    const int p = k.y, q = k.x;
    // the input's (row, channel) plane: element (r, s) at plane[r * pitch_h + s * pitch_w]
    const T* plane = in + index_of(di, k.row, k.c, 0, 0);
    const size_t pitch_w = di.nhwc ? di.c : 1, pitch_h = pitch_w * di.w;
    const int top = p * w.stride_h - w.pad_t, left = q * w.stride_w - w.pad_l;
    const int r0 = top < 0 ? 0 : top, r1 = top + w.r > di.h ? di.h : top + w.r;
    const int s0 = left < 0 ? 0 : left, s1 = left + w.s > di.w ? di.w : left + w.s;
    if (max) {
      float m = gpu_wide(plane[r0 * pitch_h + s0 * pitch_w]);
      for (int r = r0; r < r1; r++)
        for (int s = s0; s < s1; s++) {
          const float v = gpu_wide(plane[r * pitch_h + s * pitch_w]);
          if (v > m || v != v) m = v;
          if (m != m) r = r1, s = s1;  // a NaN wins
        }
      store(&out[i], m);
    } else {
      float sum = 0.0f;
      for (int r = r0; r < r1; r++)
        for (int s = s0; s < s1; s++) sum += gpu_wide(plane[r * pitch_h + s * pitch_w]);
      const int rows = (top + w.r > di.h + w.pad_b ? di.h + w.pad_b : top + w.r) - top;
      const int cols = (left + w.s > di.w + w.pad_r ? di.w + w.pad_r : left + w.s) - left;
      store(&out[i], sum / (float)(count_pad ? rows * cols : (r1 - r0) * (s1 - s0)));
    }
  }
}

// Element i: a value in [-1, 1) from a hash of (seed, i) (splitmix64's finaliser).
template <typename T>
__global__ void fill_kernel(T* __restrict__ out, size_t count, unsigned long long seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long h = seed + 0x9e3779b97f4a7c15ull * (i + 1);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    store(&out[i], (float)(h >> 40) * 0x1p-23f - 1.0f);
  }
}

__global__ void differ_kernel(const unsigned char* __restrict__ a,
                              const unsigned char* __restrict__ b, size_t bytes,
                              unsigned* __restrict__ count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < bytes;
       i += (size_t)gridDim.x * blockDim.x)
    if (a[i] != b[i]) atomicAdd(count, 1u);
}

ttp_status launched(const char* what, ttp_err* e) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ERR(e, TTP_ERR_CUDA, "%s launch: %s", what, cudaGetErrorString(err));
  return TTP_OK;
}

}  // namespace

extern "C" ttp_status gpu_epilogue(void* x, const void* bias, const void* z, gpu_clamp clamp,
                                   size_t rows, gpu_dims d, int half, cudaStream_t stream,
                                   ttp_err* e) {
  const size_t total = rows * d.c * d.h * d.w;
  if (half)
    epilogue_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<__half*>(x), static_cast<const __half*>(bias), static_cast<const __half*>(z),
        clamp, total, d);
  else
    epilogue_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<float*>(x), static_cast<const float*>(bias), static_cast<const float*>(z),
        clamp, total, d);
  return launched("epilogue_kernel", e);
}

extern "C" ttp_status gpu_pointwise(gpu_pointwise_op op, float a, float b, const void* in,
                                    void* out, size_t count, int half, cudaStream_t stream,
                                    ttp_err* e) {
  if (half)
    pointwise_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        op, a, b, static_cast<const __half*>(in), static_cast<__half*>(out), count);
  else
    pointwise_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        op, a, b, static_cast<const float*>(in), static_cast<float*>(out), count);
  return launched("pointwise_kernel", e);
}

extern "C" ttp_status gpu_to_half(const float* in, void* out, size_t count, cudaStream_t stream,
                                  ttp_err* e) {
  convert_kernel<<<blocks_for(count), kThreads, 0, stream>>>(in, static_cast<__half*>(out), count);
  return launched("convert_kernel", e);
}

extern "C" ttp_status gpu_to_float(const void* in, float* out, size_t count, cudaStream_t stream,
                                   ttp_err* e) {
  convert_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const __half*>(in), out,
                                                             count);
  return launched("convert_kernel", e);
}

extern "C" ttp_status gpu_elementwise(gpu_binary_op op, const gpu_operands* x, void* out,
                                      size_t rows, gpu_dims d, int half, cudaStream_t stream,
                                      ttp_err* e) {
  const size_t total = rows * d.c * d.h * d.w;
  const int vector = half ? 8 : 4;
  if (elementwise_vectors(*x, out, d, vector)) {
    if (half)
      elementwise_vector_kernel<<<blocks_for(total / vector), kThreads, 0, stream>>>(
          op, *x, static_cast<__half*>(out), total / vector, d);
    else
      elementwise_vector_kernel<<<blocks_for(total / vector), kThreads, 0, stream>>>(
          op, *x, static_cast<float*>(out), total / vector, d);
    return launched("elementwise_vector_kernel", e);
  }
  if (half)
    elementwise_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        op, *x, static_cast<__half*>(out), total, d);
  else
    elementwise_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        op, *x, static_cast<float*>(out), total, d);
  return launched("elementwise_kernel", e);
}

extern "C" ttp_status gpu_channel_op(int prelu, const void* in, void* out, const float* scale,
                                     const float* shift, int params, size_t rows, gpu_dims d,
                                     int half, cudaStream_t stream, ttp_err* e) {
  const size_t total = rows * d.c * d.h * d.w;
  if (half)
    channel_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        prelu, static_cast<const __half*>(in), static_cast<__half*>(out), scale, shift, params,
        total, d);
  else
    channel_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        prelu, static_cast<const float*>(in), static_cast<float*>(out), scale, shift, params,
        total, d);
  return launched("channel_kernel", e);
}

extern "C" ttp_status gpu_window_copy(const void* in, gpu_dims i, void* out, gpu_dims o,
                                      size_t rows, int c_at, int y_at, int x_at, int step_h,
                                      int step_w, float value, int half, cudaStream_t stream,
                                      ttp_err* e) {
  const size_t total = rows * o.c * o.h * o.w;
  if (half)
    window_copy_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const __half*>(in), i, static_cast<__half*>(out), o, total, c_at, y_at, x_at,
        step_h, step_w, value);
  else
    window_copy_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const float*>(in), i, static_cast<float*>(out), o, total, c_at, y_at, x_at,
        step_h, step_w, value);
  return launched("window_copy_kernel", e);
}

extern "C" ttp_status gpu_shuffle(const void* in, void* out, size_t rows, gpu_dims d, int groups,
                                  int half, cudaStream_t stream, ttp_err* e) {
  const size_t total = rows * d.c * d.h * d.w;
  if (half)
    shuffle_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const __half*>(in), static_cast<__half*>(out), total, d, groups);
  else
    shuffle_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const float*>(in), static_cast<float*>(out), total, d, groups);
  return launched("shuffle_kernel", e);
}

extern "C" ttp_status gpu_reorder(const void* in, gpu_dims i, void* out, gpu_dims o, size_t rows,
                                  int half, cudaStream_t stream, ttp_err* e) {
  const size_t total = rows * o.c * o.h * o.w;
  if (half)
    reorder_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const __half*>(in), i, static_cast<__half*>(out), o, total);
  else
    reorder_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const float*>(in), i, static_cast<float*>(out), o, total);
  return launched("reorder_kernel", e);
}

extern "C" ttp_status gpu_to_nhwc_padded(const void* in, int c, int h, int w, void* out, int cp,
                                         size_t rows, int half, cudaStream_t stream, ttp_err* e) {
  if (cp % 8 || cp < c)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "gpu_to_nhwc_padded: %d channels into %d", c, cp);
  const size_t pixels = rows * h * w;
  if (half)
    to_nhwc_padded_kernel<<<blocks_for(pixels), kThreads, 0, stream>>>(
        static_cast<const __half*>(in), c, h * w, static_cast<__half*>(out), cp, pixels);
  else
    to_nhwc_padded_kernel<<<blocks_for(pixels), kThreads, 0, stream>>>(
        static_cast<const float*>(in), c, h * w, static_cast<float*>(out), cp, pixels);
  return launched("to_nhwc_padded_kernel", e);
}

extern "C" ttp_status gpu_pool(int max, int count_pad, const void* in, gpu_dims i, void* out,
                               gpu_dims o, size_t rows, gpu_window w, int half,
                               cudaStream_t stream, ttp_err* e) {
  const size_t total = rows * o.c * o.h * o.w;
  if (half)
    pool_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        max, count_pad, static_cast<const __half*>(in), i, static_cast<__half*>(out), o, total, w);
  else
    pool_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
        max, count_pad, static_cast<const float*>(in), i, static_cast<float*>(out), o, total, w);
  return launched("pool_kernel", e);
}

extern "C" ttp_status gpu_fill_hashed(void* out, size_t count, int half, unsigned long long seed,
                                      cudaStream_t stream, ttp_err* e) {
  if (half)
    fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<__half*>(out), count, seed);
  else
    fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<float*>(out), count, seed);
  return launched("fill_kernel", e);
}

extern "C" ttp_status gpu_count_differing(const void* a, const void* b, size_t bytes,
                                          unsigned* count, cudaStream_t stream, ttp_err* e) {
  differ_kernel<<<blocks_for(bytes), kThreads, 0, stream>>>(
      static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), bytes, count);
  return launched("differ_kernel", e);
}
