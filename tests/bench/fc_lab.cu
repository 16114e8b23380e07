// The fc kernel's lab (pipeline/cudnn/fc_kernel.h): checks both of its kernels, and a candidate
// (128 x 128 tiles, 8 x 8 sums a thread, the next step's loads in flight during this one's
// multiply-adds), against a CPU reference and each other (the same bits, whatever the kernel),
// then times them beside cuBLASLt's GEMM on the fc shapes of the shipped networks.
//
//   bench_fc_lab [--validate] [--runs R]
//
// Checked: odd shapes and row counts, with a bias, a residual z and a clamp, in fp16 and fp32;
// every output within the bound of an fp32 chain of multiply-adds (below) of the reference in
// double, and the kernels' outputs the same bytes. Timed (unless --validate), for 5, 320 and
// 5120 rows (1, 64 and 1024 images of 5 copies): the kernel gpu_fc picks, each of the two, the
// candidate, and cuBLASLt (its heuristic's first algorithm, no epilogue: a little less work than
// ours).
#include <cublasLt.h>

#include "pipeline/element.cuh"
#include "pipeline/cudnn/fc_kernel.h"
#include "tests/bench/lab_util.cuh"

namespace {

// The candidate: a block computes 128 outputs x 128 rows, a thread 8 x 8 of them (outputs tx * 4
// + 0..3 and 64 + tx * 4 + 0..3; rows likewise with ty), kStep inputs a step through shared
// memory, the next step's slices loaded into registers while this step's are multiplied. The
// same chain of multiply-adds an output as the library's kernels, so the same bits.
constexpr int kCandidateStep = 8, kCandidateTile = 128, kCandidatePad = 132;

template <typename T>
__global__ void __launch_bounds__(256) fc_tiles128(const T* __restrict__ x, const T* __restrict__ w,
                                                   const float* __restrict__ bias,
                                                   const T* __restrict__ z, T* __restrict__ y,
                                                   int n, int in, int out, gpu_clamp clamp) {
  __shared__ __align__(16) float ws[kCandidateStep][kCandidateTile];  // [input][output]
  __shared__ __align__(16) float xs[kCandidateStep][kCandidatePad];   // [input][row]
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int o0 = blockIdx.y * kCandidateTile, r0 = blockIdx.x * kCandidateTile;
  float wr[4], xr[4];
  auto fetch = [&](int i0) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int e = t + 256 * j;
      const int i = e / kCandidateTile, o = e % kCandidateTile;
      wr[j] = i0 + i < in && o0 + o < out ? gpu_wide(__ldg(w + (size_t)(i0 + i) * out + o0 + o))
                                          : 0.0f;
      const int r = e / kCandidateStep, k = e % kCandidateStep;
      xr[j] = i0 + k < in && r0 + r < n ? gpu_wide(__ldg(x + (size_t)(r0 + r) * in + i0 + k))
                                        : 0.0f;
    }
  };
  auto put = [&]() {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int e = t + 256 * j;
      ws[e / kCandidateTile][e % kCandidateTile] = wr[j];
      xs[e % kCandidateStep][e / kCandidateStep] = xr[j];
    }
  };
  float sum[8][8];
#pragma unroll
  for (int u = 0; u < 8; u++)
#pragma unroll
    for (int r = 0; r < 8; r++) sum[u][r] = 0.0f;
  fetch(0);
  put();
  __syncthreads();
  for (int i0 = 0; i0 < in; i0 += kCandidateStep) {
    const bool more = i0 + kCandidateStep < in;
    if (more) fetch(i0 + kCandidateStep);
    const int steps = min(kCandidateStep, in - i0);
#pragma unroll
    for (int k = 0; k < kCandidateStep; k++) {
      if (k >= steps) break;
      const float4 w0 = *reinterpret_cast<const float4*>(&ws[k][tx * 4]);
      const float4 w1 = *reinterpret_cast<const float4*>(&ws[k][64 + tx * 4]);
      const float4 x0 = *reinterpret_cast<const float4*>(&xs[k][ty * 4]);
      const float4 x1 = *reinterpret_cast<const float4*>(&xs[k][64 + ty * 4]);
      const float wv[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
      const float xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
      for (int u = 0; u < 8; u++)
#pragma unroll
        for (int r = 0; r < 8; r++) sum[u][r] = fmaf(wv[u], xv[r], sum[u][r]);
    }
    __syncthreads();
    if (more) {
      put();
      __syncthreads();
    }
  }
#pragma unroll
  for (int r = 0; r < 8; r++)
#pragma unroll
    for (int u = 0; u < 8; u++) {
      const int o = o0 + (u < 4 ? tx * 4 + u : 64 + tx * 4 + u - 4);
      const int row = r0 + (r < 4 ? ty * 4 + r : 64 + ty * 4 + r - 4);
      if (o >= out || row >= n) continue;
      const size_t at = (size_t)row * out + o;
      float v = sum[u][r] + (bias ? bias[o] : 0.0f);
      if (z) v += gpu_wide(z[at]);
      y[at] = gpu_narrow<T>(gpu_clamped(v, clamp));
    }
}

struct fc_shape {
  const char* name;
  int in, out;
};
const fc_shape kShapes[] = {
    {"lenet ip1", 800, 500}, {"lenet ip2", 500, 10}, {"resnet fc", 64, 10},
    {"mobilenet", 128, 10},  {"wide", 2048, 1000}};
const fc_shape kOdd[] = {{"odd a", 37, 29}, {"odd b", 803, 97}, {"odd c", 5, 300}};

struct problem {
  fc_shape s;
  int n;
  bool half;
  tensor x, z;
  std::vector<float> w, bias;  // the model's order: out x in
  void *wdev = nullptr, *y = nullptr, *y2 = nullptr;
  float* bdev = nullptr;
  gpu_clamp clamp = {-0.5f, 0.75f};

  problem(fc_shape shape, int rows, bool in_half) : s(shape), n(rows), half(in_half) {
    x.fill((size_t)n * s.in, -1.0f, 1.0f, half);
    z.fill((size_t)n * s.out, -0.25f, 0.25f, half);
    w.resize((size_t)s.out * s.in), bias.resize(s.out);
    for (float& v : w) v = uniform(-0.1f, 0.1f);
    for (float& v : bias) v = uniform(-0.2f, 0.2f);
    if (half)  // the values the kernel sees
      for (float& v : w) v = __half2float(__float2half_rn(v));
    std::vector<float> t((size_t)s.in * s.out);
    gpu_fc_weights(w.data(), s.in, s.out, t.data());
    wdev = lab_upload_values(t, half);
    bdev = (float*)lab_upload(bias.data(), bias.size() * sizeof(float));
    const size_t bytes = (size_t)n * s.out * (half ? 2 : 4);
    CHECK_CUDA(cudaMalloc(&y, bytes));
    CHECK_CUDA(cudaMalloc(&y2, bytes));
  }
  ~problem() { cudaFree(wdev), cudaFree(bdev), cudaFree(y), cudaFree(y2); }

  void run_candidate(void* out, cudaStream_t stream) {
    const dim3 grid((unsigned)((n + kCandidateTile - 1) / kCandidateTile),
                    (unsigned)((s.out + kCandidateTile - 1) / kCandidateTile));
    if (half)
      fc_tiles128<__half><<<grid, 256, 0, stream>>>(
          (const __half*)x.dev, (const __half*)wdev, bdev, (const __half*)z.dev, (__half*)out, n,
          s.in, s.out, clamp);
    else
      fc_tiles128<float><<<grid, 256, 0, stream>>>((const float*)x.dev, (const float*)wdev, bdev,
                                                   (const float*)z.dev, (float*)out, n, s.in,
                                                   s.out, clamp);
    CHECK_CUDA(cudaGetLastError());
  }

  void run(void* out, gpu_fc_kernel kernel, cudaStream_t stream) {
    ttp_err e = {};
    CHECK(gpu_fc(x.dev, wdev, bdev, z.dev, out, n, s.in, s.out, clamp, half, kernel, stream,
                 &e) == TTP_OK, "%s", e.message);
  }

  // A chain of `in` fp32 multiply-adds lies within in x 2^-24 of the sum of |products| (then the
  // bias and z, two more roundings; fp16 rounds the result once more).
  lab_want want(int row, int o) const {
    double sum = 0, size = 0;
    for (int i = 0; i < s.in; i++) {
      const double p = (double)w[(size_t)o * s.in + i] * x.value[(size_t)row * s.in + i];
      sum += p, size += fabs(p);
    }
    const double zv = z.value[(size_t)row * s.out + o];
    double v = sum + bias[o] + zv;
    size += fabs(bias[o]) + fabs(zv);
    v = v < clamp.lo ? clamp.lo : v > clamp.hi ? clamp.hi : v;
    return {v, (s.in + 3) * ldexp(size, -24) + (half ? ldexp(fabs(v), -11) : 0.0) + 1e-7};
  }

  void validate() {
    const gpu_conv_shape as = {n, 1, 1, s.in, 1, 1, s.out, 1, 1, 1, 1, 0, 0, 1, 1};
    char name[64];
    snprintf(name, sizeof name, "%s threads", s.name);
    lab_validate(name, as, y, half, [&] { run(y, GPU_FC_THREADS, 0); },
                 [&](int row, int, int, int o) { return want(row, o); });
    snprintf(name, sizeof name, "%s tiles", s.name);
    lab_validate(name, as, y2, half, [&] { run(y2, GPU_FC_TILES, 0); },
                 [&](int row, int, int, int o) { return want(row, o); });
    same_bits("tiles");
    snprintf(name, sizeof name, "%s cand.", s.name);
    lab_validate(name, as, y2, half, [&] { run_candidate(y2, 0); },
                 [&](int row, int, int, int o) { return want(row, o); });
    same_bits("candidate");
  }

  // y (the thread-an-output kernel's) and y2 (the other's) hold the same bytes.
  void same_bits(const char* other) {
    const size_t bytes = (size_t)n * s.out * (half ? 2 : 4);
    std::vector<unsigned char> a(bytes), b(bytes);
    CHECK_CUDA(cudaMemcpy(a.data(), y, bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(b.data(), y2, bytes, cudaMemcpyDeviceToHost));
    CHECK(memcmp(a.data(), b.data(), bytes) == 0,
          "%s, %d rows (%s): the %s kernel's bits differ from a thread an output's", s.name, n,
          half ? "fp16" : "fp32", other);
  }
};

// cuBLASLt's D (out x n) = W (out x in) X (in x n), column-major, the heuristic's first algorithm.
struct lt_gemm {
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
  void* workspace = nullptr;
  size_t workspace_size = (size_t)32 << 20;

  lt_gemm(const problem& p) {
    const cudaDataType_t type = p.half ? CUDA_R_16F : CUDA_R_32F;
    CHECK(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS, "cublasLtCreate");
    CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) ==
              CUBLAS_STATUS_SUCCESS, "matmul desc");
    CHECK(cublasLtMatrixLayoutCreate(&a, type, p.s.out, p.s.in, p.s.out) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&b, type, p.s.in, p.n, p.s.in) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&d, type, p.s.out, p.n, p.s.out) ==
                  CUBLAS_STATUS_SUCCESS, "layouts");
    CHECK_CUDA(cudaMalloc(&workspace, workspace_size));
    cublasLtMatmulPreference_t pref;
    CHECK(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS, "preference");
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &workspace_size, sizeof workspace_size);
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, a, b, d, d, pref, 1, &result, &found) ==
              CUBLAS_STATUS_SUCCESS && found == 1, "no cuBLASLt algorithm");
    algo = result.algo;
    cublasLtMatmulPreferenceDestroy(pref);
  }
  ~lt_gemm() {
    cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(d);
    cublasLtMatmulDescDestroy(desc), cublasLtDestroy(lt), cudaFree(workspace);
  }
  void run(problem& p, cudaStream_t stream) {
    const float one = 1.0f, zero = 0.0f;
    CHECK(cublasLtMatmul(lt, desc, &one, p.wdev, a, p.x.dev, b, &zero, p.y2, d, p.y2, d, &algo,
                         workspace, workspace_size, stream) == CUBLAS_STATUS_SUCCESS,
          "cublasLtMatmul");
  }
};

}  // namespace

int main(int argc, char** argv) {
  const lab_options o = lab_options_of(argc, argv, "bench_fc_lab");
  lab_seed(1618u);
  if (!lab_have_gpu()) return 77;
  printf("check against the CPU and kernel against kernel:\n");
  for (bool half : {true, false}) {
    for (const fc_shape& s : kShapes) problem(s, 7, half).validate();
    for (const fc_shape& s : kOdd)
      for (int n : {1, 61, 333}) problem(s, n, half).validate();
  }
  problem(kShapes[0], 5120, false).validate();
  if (o.validate_only) return 0;

  const lab_device device;
  const cudaDeviceProp& prop = device.prop;
  cudaStream_t stream = device.stream;
  for (bool half : {true, false}) {
    printf("\n%s, %s, median of %d runs, us (TFLOP/s)\n", prop.name, half ? "fp16" : "fp32",
           o.runs);
    printf("%-10s %5s %16s %16s %16s %16s %16s\n", "shape", "rows", "gpu_fc", "threads", "tiles",
           "candidate", "cuBLASLt");
    for (const fc_shape& s : kShapes)
      for (int n : {5, 320, 5120}) {
        problem p(s, n, half);
        lt_gemm lt(p);
        const double flop = 2.0 * n * s.in * s.out;
        const float t[5] = {
            median_ms([&](cudaStream_t st) { p.run(p.y, GPU_FC_ANY, st); }, o.runs, stream),
            median_ms([&](cudaStream_t st) { p.run(p.y, GPU_FC_THREADS, st); }, o.runs, stream),
            median_ms([&](cudaStream_t st) { p.run(p.y, GPU_FC_TILES, st); }, o.runs, stream),
            median_ms([&](cudaStream_t st) { p.run_candidate(p.y, st); }, o.runs, stream),
            median_ms([&](cudaStream_t st) { lt.run(p, st); }, o.runs, stream)};
        printf("%-10s %5d", s.name, n);
        for (float ms : t) printf(" %8.1f (%5.2f)", 1e3 * ms, flop / (ms * 1e-3) / 1e12);
        printf("\n");
      }
  }
  return 0;
}
