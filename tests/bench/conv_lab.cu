// Kernel lab for ttapipe's NHWC convolution with its epilogue (pipeline/cudnn/conv_kernels.cu),
// in fp16 and in fp32 on TF32 tensor cores, beside cuDNN's fused convolution
// (cudnnConvolutionBiasActivationForward, NHWC, the same types, tensor-core math, the fastest
// algorithm cudnnFind measures), on a CIFAR ResNet-20's convolutions:
//
//   stage1     3x3, 16 -> 16 channels, 32x32, + residual + ReLU
//   down2      3x3 stride 2, 16 -> 32, 32x32 -> 16x16, + ReLU
//   proj2      1x1 stride 2, 16 -> 32 (the projection shortcut), no ReLU
//   stage2     3x3, 32 -> 32, 16x16, + residual + ReLU
//   down3, proj3, stage3 likewise, 32 -> 64, 8x8
//   mbexp1     1x1, 16 -> 64, 32x32, + ReLU (the MobileNetV2-style net's first expansions)
//   mbproj1    1x1, 64 -> 16, 32x32, + residual (its first projection)
//   mbexp      1x1, 24 -> 96, 16x16, + ReLU (its expansions of 24 input channels, which the
//              kernel pads to a whole k-step in shared memory)
//   mbproj     1x1, 96 -> 24, 16x16, + residual (its projections to 24 channels, which the kernel
//              computes as 32 and stores 24 of)
//
// and, for the check alone, an odd shape (3 rows of 7x9, 24 -> 40 channels, a 3x2 window of
// strides 2 and 1, dilation 1 and 2, padding above only) without a bias, clamped to [-0.2, 0.3]
// (the epilogue's general clamp; the others' ReLU is [0, inf)).
//
// Every shape is first checked in both types against a CPU reference (sums in double over the
// same inputs). fp16 (the inputs fp16 values; the kernel's fp32 sum is rounded once to fp16):
// |got - want| <= 2^-10 |want| + 1e-3. TF32 (fp32 inputs of full precision, which the tensor
// cores cut to 10 bits of mantissa, < 2^-10 relative, and weights rounded to them, <= 2^-11):
// |got - want| <= 2^-9 sum |x w| + 1e-5, the products' error bound with room for the fp32
// accumulation.
//
// Then ttapipe's residual block (gpu_conv_block_nhwc: two convolutions in one kernel, the
// middle value in shared memory, fp16) against the same two convolutions run one after the other
// by gpu_conv_nhwc, which must give the same bits: ResNet-20's stage-1 and stage-2 blocks, and a
// pair without a bias or a residual over 16x16 maps (the first clamped to [-0.2, 0.3]), at 5 and
// 1031 rows.
//
//   bench_conv_lab --validate        check only (ctest, label gpu; 77 without a GPU)
//   bench_conv_lab [--rows N] [--runs R]
//                                    check, then time both on each shape in each type with N
//                                    rows (default
//                                    5120: a batch of 1024 images x 5 copies), the median of R
//                                    runs (default 20); and ResNet-20's convolutions summed
//                                    (the stem, on 3 channels, left out); then each block
//                                    against its two convolutions
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "pipeline/cudnn/conv_kernels.h"
#include "tests/bench/lab_util.cuh"

namespace {

struct lab_shape {
  const char* name;
  int h, w, c, k, r, s, stride_h, stride_w, pad_t, pad_l, dil_h, dil_w;
  int residual, relu, bias;
  int count;  // how many ResNet-20 has
};

const lab_shape kShapes[] = {
    {"stage1", 32, 32, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 6},
    {"down2", 32, 32, 16, 32, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, 1, 1},
    {"proj2", 32, 32, 16, 32, 1, 1, 2, 2, 0, 0, 1, 1, 0, 0, 1, 1},
    {"stage2", 16, 16, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5},
    {"down3", 16, 16, 32, 64, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, 1, 1},
    {"proj3", 16, 16, 32, 64, 1, 1, 2, 2, 0, 0, 1, 1, 0, 0, 1, 1},
    {"stage3", 8, 8, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5},
    {"mbexp1", 32, 32, 16, 64, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0},
    {"mbproj1", 32, 32, 64, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0},
    {"mbexp", 16, 16, 24, 96, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0},
    {"mbproj", 16, 16, 96, 24, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0},
};
const lab_shape kOdd = {"odd", 7, 9, 24, 40, 3, 2, 2, 1, 1, 0, 1, 2, 1, 1, 0, 0};

gpu_conv_shape shape_of(const lab_shape& l, int rows) {
  gpu_conv_shape s = {rows, l.h, l.w, l.c, 0, 0, l.k, l.r, l.s, l.stride_h, l.stride_w,
                      l.pad_t, l.pad_l, l.dil_h, l.dil_w};
  // the padding below and right as above and left (the odd shape: none below)
  const int pad_b = l.name == kOdd.name ? 0 : l.pad_t, pad_r = l.pad_l;
  s.p = (l.h + l.pad_t + pad_b - (l.r - 1) * l.dil_h - 1) / l.stride_h + 1;
  s.q = (l.w + l.pad_l + pad_r - (l.s - 1) * l.dil_w - 1) / l.stride_w + 1;
  return s;
}

struct problem {
  lab_shape l;
  gpu_conv_shape s;
  bool half;       // fp16, else fp32 on TF32 tensor cores
  tensor x, w, z;  // w: the model's k x c x r x s
  std::vector<float> bias;
  void* w_rsck = nullptr;
  float* bias_dev = nullptr;
  void* y = nullptr;
  size_t y_count;

  gpu_clamp clamp;  // the epilogue's activation

  problem(const lab_shape& shape, int rows, bool in_half)
      : l(shape), s(shape_of(shape, rows)), half(in_half) {
    clamp = l.name == kOdd.name ? gpu_clamp{-0.2f, 0.3f}
            : l.relu            ? gpu_clamp{0.0f, INFINITY}
                                : gpu_clamp{-INFINITY, INFINITY};
    x.fill((size_t)s.n * s.h * s.w * s.c, -1.0f, 1.0f, half);
    const float range = 1.5f / sqrtf((float)(s.c * s.r * s.s));
    w.fill((size_t)s.k * s.c * s.r * s.s, -range, range, half);
    y_count = (size_t)s.n * s.p * s.q * s.k;
    z.fill(l.residual ? y_count : 1, -1.0f, 1.0f, half);
    bias.resize(s.k);
    for (float& b : bias) b = uniform(-0.3f, 0.3f);
    const int cp = gpu_conv_nhwc_window_channels(s.c, half);
    std::vector<float> rsck(gpu_conv_weights_count(s.k, cp, s.r, s.s));
    gpu_conv_weights(w.value.data(), s.k, s.c, s.r, s.s, cp, half, rsck.data());
    w_rsck = lab_upload_values(rsck, half);
    bias_dev = static_cast<float*>(lab_upload(bias.data(), s.k * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y, y_count * (half ? sizeof(__half) : sizeof(float))));
  }
  ~problem() { cudaFree(w_rsck), cudaFree(bias_dev), cudaFree(y); }

  void run_ours(cudaStream_t stream) {
    ttp_err e = {};
    CHECK(gpu_conv_nhwc(x.dev, w_rsck, l.bias ? bias_dev : nullptr, l.residual ? z.dev : nullptr,
                        y, &s, clamp, half, stream, &e) == TTP_OK, "%s: %s", l.name,
          e.message);
  }

  // The CPU reference of output (image, p, q, k), in double, and the kernel's bound.
  lab_want reference(int image, int p, int q, int k) const {
    double sum = l.bias ? bias[k] : 0.0, magnitude = 0.0;
    for (int r = 0; r < s.r; r++)
      for (int t = 0; t < s.s; t++) {
        const int row = p * s.stride_h - s.pad_t + r * s.dil_h;
        const int col = q * s.stride_w - s.pad_l + t * s.dil_w;
        if (row < 0 || row >= s.h || col < 0 || col >= s.w) continue;
        const float* in = &x.value[(((size_t)image * s.h + row) * s.w + col) * s.c];
        for (int c = 0; c < s.c; c++) {
          const double product =
              (double)in[c] * w.value[(((size_t)k * s.c + c) * s.r + r) * s.s + t];
          sum += product, magnitude += fabs(product);
        }
      }
    if (l.residual) sum += z.value[(((size_t)image * s.p + p) * s.q + q) * s.k + k];
    const double want = sum < clamp.lo ? clamp.lo : sum > clamp.hi ? clamp.hi : sum;
    return {want, half ? 0x1p-10 * fabs(want) + 1e-3 : 0x1p-9 * magnitude + 1e-5};
  }

  // Poisons y, runs the kernel, and checks every output against the reference.
  void validate() {
    lab_validate(l.name, s, y, half, [&] { run_ours(0); },
                 [&](int image, int p, int q, int k) { return reference(image, p, q, k); });
  }
};

// cuDNN's fused convolution on the same problem in the same type (its own weights in k x r x s
// x c; the bias in the tensors' type).
struct cudnn_conv {
  cudnnHandle_t dnn;
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnActivationDescriptor_t ad;
  cudnnConvolutionFwdAlgo_t algo;
  void* w_krsc = nullptr;
  void* bias_typed = nullptr;
  void* workspace = nullptr;
  size_t workspace_size = 0;
  problem& pr;

  explicit cudnn_conv(problem& p) : pr(p) {
    const gpu_conv_shape& s = p.s;
    const cudnnDataType_t type = p.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    CHECK_DNN(cudnnCreate(&dnn));
    CHECK_DNN(cudnnCreateTensorDescriptor(&xd));
    CHECK_DNN(cudnnCreateTensorDescriptor(&yd));
    CHECK_DNN(cudnnCreateTensorDescriptor(&bd));
    CHECK_DNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, type, s.n, s.c, s.h, s.w));
    CHECK_DNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, type, s.n, s.k, s.p, s.q));
    CHECK_DNN(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NHWC, type, 1, s.k, 1, 1));
    CHECK_DNN(cudnnCreateFilterDescriptor(&wd));
    CHECK_DNN(cudnnSetFilter4dDescriptor(wd, type, CUDNN_TENSOR_NHWC, s.k, s.c, s.r, s.s));
    CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
    CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, s.pad_t, s.pad_l, s.stride_h, s.stride_w,
                                              s.dil_h, s.dil_w, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
    CHECK_DNN(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH));
    CHECK_DNN(cudnnCreateActivationDescriptor(&ad));
    CHECK_DNN(cudnnSetActivationDescriptor(
        ad, p.l.relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0));
    std::vector<float> krsc(p.w.value.size());
    for (int k = 0; k < s.k; k++)
      for (int c = 0; c < s.c; c++)
        for (int r = 0; r < s.r; r++)
          for (int t = 0; t < s.s; t++)
            krsc[(((size_t)k * s.r + r) * s.s + t) * s.c + c] =
                p.w.value[(((size_t)k * s.c + c) * s.r + r) * s.s + t];
    w_krsc = lab_upload_values(krsc, p.half);
    bias_typed = lab_upload_values(p.bias, p.half);
    // The identity activation runs with the precomputed implicit GEMM alone (cuDNN's rule).
    algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (p.l.relu) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int found = 0;
      CHECK_DNN(cudnnFindConvolutionForwardAlgorithm(dnn, xd, wd, cd, yd,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found,
                                                     perf));
      for (int i = found - 1; i >= 0; i--)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) algo = perf[i].algo;
    }
    CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, wd, cd, yd, algo, &workspace_size));
    if (workspace_size) CHECK_CUDA(cudaMalloc(&workspace, workspace_size));
  }
  ~cudnn_conv() {
    cudaFree(w_krsc), cudaFree(bias_typed), cudaFree(workspace);
    cudnnDestroyActivationDescriptor(ad), cudnnDestroyConvolutionDescriptor(cd);
    cudnnDestroyFilterDescriptor(wd), cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd), cudnnDestroyTensorDescriptor(bd), cudnnDestroy(dnn);
  }
  void run(cudaStream_t stream) {
    CHECK_DNN(cudnnSetStream(dnn, stream));
    const float one = 1.0f, zero = 0.0f;
    const float alpha2 = pr.l.residual ? 1.0f : 0.0f;
    void* z = pr.l.residual ? pr.z.dev : pr.y;
    CHECK_DNN(cudnnConvolutionBiasActivationForward(dnn, &one, xd, pr.x.dev, wd, w_krsc, cd, algo,
                                                    workspace, workspace_size, &alpha2, yd, z, bd,
                                                    bias_typed, ad, yd, pr.y));
    (void)zero;
  }
};


// Two convolutions of one shape in a row: ttapipe's residual block kernel against
// gpu_conv_nhwc run twice (x -> m -> y, + x where residual), fp16.
struct block_shape {
  const char* name;
  int h, w, c, residual, bias;
  gpu_clamp clamp1, clamp2;
};
const gpu_clamp kRelu = {0.0f, INFINITY}, kNone = {-INFINITY, INFINITY};
const block_shape kBlocks[] = {
    {"block1", 32, 32, 16, 1, 1, kRelu, kRelu},  // ResNet-20's stage 1
    {"block2", 16, 16, 32, 1, 1, kRelu, kRelu},  // its stage 2
    {"pair", 16, 16, 16, 0, 0, {-0.2f, 0.3f}, kNone},
};

struct block_problem {
  block_shape b;
  gpu_conv_shape s;
  tensor x;
  void *w1 = nullptr, *w2 = nullptr, *m = nullptr, *y_two = nullptr, *y_block = nullptr;
  float *bias1 = nullptr, *bias2 = nullptr;
  size_t count;

  block_problem(const block_shape& shape, int rows) : b(shape) {
    s = {rows, b.h, b.w, b.c, b.h, b.w, b.c, 3, 3, 1, 1, 1, 1, 1, 1};
    count = (size_t)rows * b.h * b.w * b.c;
    x.fill(count, -1.0f, 1.0f, true);
    const float range = 1.5f / sqrtf((float)(b.c * 9));
    for (void** w : {&w1, &w2}) {
      std::vector<float> kcrs((size_t)b.c * b.c * 9), laid(kcrs.size());
      for (float& v : kcrs) v = uniform(-range, range);
      gpu_conv_weights(kcrs.data(), b.c, b.c, 3, 3, b.c, 1, laid.data());
      *w = lab_upload_values(laid, true);
    }
    for (float** bias : {&bias1, &bias2}) {
      std::vector<float> v(b.c);
      for (float& e : v) e = uniform(-0.3f, 0.3f);
      *bias = static_cast<float*>(lab_upload(v.data(), v.size() * sizeof(float)));
    }
    for (void** buffer : {&m, &y_two, &y_block})
      CHECK_CUDA(cudaMalloc(buffer, count * sizeof(__half)));
  }
  ~block_problem() {
    for (void* p : {w1, w2, m, y_two, y_block, (void*)bias1, (void*)bias2}) cudaFree(p);
  }

  void run_two(cudaStream_t stream) {
    ttp_err e = {};
    CHECK(gpu_conv_nhwc(x.dev, w1, b.bias ? bias1 : nullptr, nullptr, m, &s, b.clamp1, 1, stream,
                        &e) == TTP_OK, "%s: %s", b.name, e.message);
    CHECK(gpu_conv_nhwc(m, w2, b.bias ? bias2 : nullptr, b.residual ? x.dev : nullptr, y_two, &s,
                        b.clamp2, 1, stream, &e) == TTP_OK, "%s: %s", b.name, e.message);
  }
  void run_block(cudaStream_t stream) {
    ttp_err e = {};
    CHECK(gpu_conv_block_nhwc(x.dev, w1, b.bias ? bias1 : nullptr, b.clamp1, w2,
                              b.bias ? bias2 : nullptr, b.clamp2, b.residual, y_block, &s, stream,
                              &e) == TTP_OK, "%s: %s", b.name, e.message);
  }

  // Both into poisoned outputs; every value of the block's the same bits as the two's, and none
  // left unwritten (NaN).
  void validate() {
    CHECK(gpu_conv_block_nhwc_takes(&s, 1), "%s: the block kernel refuses it", b.name);
    CHECK_CUDA(cudaMemset(y_two, 0xff, count * sizeof(__half)));
    CHECK_CUDA(cudaMemset(y_block, 0xff, count * sizeof(__half)));
    run_two(0);
    run_block(0);
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<__half> two(count), block(count);
    CHECK_CUDA(cudaMemcpy(two.data(), y_two, count * sizeof(__half), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(block.data(), y_block, count * sizeof(__half), cudaMemcpyDeviceToHost));
    size_t differ = 0, unwritten = 0, first = count;
    for (size_t i = 0; i < count; i++) {
      const bool same = memcmp(&two[i], &block[i], sizeof(__half)) == 0;
      const float v = __half2float(block[i]);
      differ += !same, unwritten += v != v;
      if (!same && first == count) first = i;
    }
    CHECK(differ == 0 && unwritten == 0,
          "%s (%d rows): %zu of %zu values differ from the two convolutions' (the first at %zu: "
          "%g, not %g), %zu unwritten", b.name, s.n, differ, count, first,
          first < count ? __half2float(block[first]) : 0.0f,
          first < count ? __half2float(two[first]) : 0.0f, unwritten);
    printf("  %-7s fp16 %d rows of %dx%dx%d: the two convolutions' bits\n", b.name, s.n, b.h,
           b.w, b.c);
  }
};

void validate_blocks() {
  printf("the residual block against its two convolutions:\n");
  for (const block_shape& b : kBlocks)
    for (int rows : {5, 1031}) block_problem(b, rows).validate();
}

}  // namespace

int main(int argc, char** argv) {
  const lab_options o = lab_options_of(argc, argv, "bench_conv_lab");
  const int rows = o.rows, runs = o.runs;
  lab_seed(12345u);
  if (!lab_have_gpu()) return 77;
  printf("check against the CPU (5 rows; the odd shape 3):\n");
  for (bool half : {true, false}) {
    for (const lab_shape& l : kShapes) problem(l, 5, half).validate();
    problem(kOdd, 3, half).validate();
  }
  validate_blocks();
  if (o.validate_only) return 0;

  const lab_device device;
  const cudaDeviceProp& prop = device.prop;
  cudaStream_t stream = device.stream;
  for (bool half : {true, false}) {
    const char* type = half ? "fp16" : "fp32 on TF32 tensor cores";
    printf("\n%s, %s, %d rows, median of %d runs; GB/s: x, z, y and the weights once each\n",
           prop.name, type, rows, runs);
    printf("%-7s %10s %8s %10s %8s %8s\n", "shape", "ours us", "GB/s", "cuDNN us", "GB/s",
           "ratio");
    double ours_total = 0, cudnn_total = 0;
    for (const lab_shape& l : kShapes) {
      problem pr(l, rows, half);
      pr.validate();
      cudnn_conv dnn(pr);
      const float ours = median_ms([&](cudaStream_t s) { pr.run_ours(s); }, runs, stream);
      const float theirs = median_ms([&](cudaStream_t s) { dnn.run(s); }, runs, stream);
      const double bytes = (half ? 2.0 : 4.0) * (pr.x.value.size() +
                                                 (l.residual ? 2 : 1) * pr.y_count +
                                                 pr.w.value.size());
      printf("%-7s %10.1f %8.0f %10.1f %8.0f %8.2f\n", l.name, ours * 1e3, bytes / ours / 1e6,
             theirs * 1e3, bytes / theirs / 1e6, theirs / ours);
      ours_total += l.count * ours, cudnn_total += l.count * theirs;
    }
    printf("%s: ResNet-20's 18 convolutions after the stem, %d rows: ours %.3f ms, cuDNN %.3f "
           "ms; at 5 copies that alone allows %.0f and %.0f images/s\n", type, rows, ours_total,
           cudnn_total, rows / 5 / ours_total * 1e3, rows / 5 / cudnn_total * 1e3);
  }
  printf("\nthe residual block against its two convolutions, fp16, %d rows, median of %d runs; "
         "GB/s: x and y once each\n", rows, runs);
  printf("%-7s %10s %8s %10s %8s\n", "block", "block us", "GB/s", "two us", "ratio");
  for (const block_shape& b : kBlocks) {
    block_problem pr(b, rows);
    pr.validate();
    const float block = median_ms([&](cudaStream_t s) { pr.run_block(s); }, runs, stream);
    const float two = median_ms([&](cudaStream_t s) { pr.run_two(s); }, runs, stream);
    printf("%-7s %10.1f %8.0f %10.1f %8.2f\n", b.name, block * 1e3,
           2.0 * pr.count * sizeof(__half) / block / 1e6, two * 1e3, two / block);
  }
  cudaStreamDestroy(stream);
  return 0;
}
