// Kernel lab for ttapipe's NHWC depthwise convolution (pipeline/cudnn/depthwise_kernel.cu), in
// fp16 and fp32, beside cuDNN's grouped convolution in NCHW of the same type (what the cudnn
// engine ran before: cuDNN takes
// groups of one channel only in NCHW), on the depthwise layers of the MobileNetV2-style net of
// tests/onnx/nets.py (3x3, a folded BatchNorm's bias):
//
//   b1    64 channels, 32x32, stride 1         b2    64, 32x32 -> 16x16, stride 2
//   b3    96 channels, 16x16, stride 1         b4    96, 16x16 -> 8x8, stride 2
//   b5    128 channels, 8x8, stride 1
//
// and, for the check alone, four odd shapes: 24 channels of 7x9, a 3x3 window of strides 2 and 1,
// dilation 2 and 1, padding above and left only, with a residual z and a clamp to [0, 0.5] (a
// ReLU6's kind; the other shapes' ReLU is [0, inf)); 16 channels of
// 5x6, a 5x3 window (the kernel's general loop), no bias; 40 channels of 7x5 at stride 1
// (padding left 0 and right 2) and 8 of 9x11 at stride 2 (padding above 0 and below 2), 3x3
// windows with a residual z and a ReLU (the second without a bias).
//
// Every shape is first checked in both types against a CPU reference (sums in double over the
// same inputs), every output poisoned (NaN) before the run. fp16 (the kernel's fp32 sum is
// rounded once to fp16): |got - want| <= 2^-10 |want| + 1e-3; fp32 (fp32 products and sums of at
// most 16 terms): |got - want| <= 2^-19 sum |x w| + 1e-6.
//
//   bench_depthwise_lab --validate   check only (ctest, label gpu; 77 without a GPU)
//   bench_depthwise_lab [--rows N] [--runs R]
//                                    check, then time both on each shape in each type with N
//                                    rows (default
//                                    5120: a batch of 1024 images x 5 copies), the median of R
//                                    runs (default 20), GB/s of x and y once each
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "pipeline/cudnn/depthwise_kernel.h"
#include "tests/bench/lab_util.cuh"

namespace {

struct lab_shape {
  const char* name;
  int h, w, c, r, s, stride_h, stride_w, pad_t, pad_l, pad_b, pad_r, dil_h, dil_w;
  int residual, relu, bias;
};

const lab_shape kShapes[] = {
    {"b1", 32, 32, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1},
    {"b2", 32, 32, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 1},
    {"b3", 16, 16, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1},
    {"b4", 16, 16, 96, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 1},
    {"b5", 8, 8, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1},
};
const lab_shape kOdd[] = {
    {"odd3x3", 7, 9, 24, 3, 3, 2, 1, 1, 1, 0, 0, 2, 1, 1, 1, 1},
    {"odd5x3", 5, 6, 16, 5, 3, 1, 1, 2, 0, 2, 2, 1, 1, 0, 0, 0},
    {"strip1", 7, 5, 40, 3, 3, 1, 1, 1, 0, 1, 2, 1, 1, 1, 1, 1},
    {"strip2", 9, 11, 8, 3, 3, 2, 2, 0, 1, 2, 1, 1, 1, 1, 1, 0},
};

gpu_conv_shape shape_of(const lab_shape& l, int rows) {
  gpu_conv_shape s = {rows, l.h, l.w, l.c, 0, 0, l.c, l.r, l.s, l.stride_h, l.stride_w,
                      l.pad_t, l.pad_l, l.dil_h, l.dil_w};
  s.p = (l.h + l.pad_t + l.pad_b - (l.r - 1) * l.dil_h - 1) / l.stride_h + 1;
  s.q = (l.w + l.pad_l + l.pad_r - (l.s - 1) * l.dil_w - 1) / l.stride_w + 1;
  return s;
}

struct problem {
  lab_shape l;
  gpu_conv_shape s;
  bool half;       // fp16, else fp32
  tensor x, w, z;  // x NHWC; w the model's c x 1 x r x s
  std::vector<float> bias;
  void* w_rsc = nullptr;
  float* bias_dev = nullptr;
  void* y = nullptr;
  size_t y_count;

  gpu_clamp clamp;  // the epilogue's activation

  problem(const lab_shape& shape, int rows, bool in_half)
      : l(shape), s(shape_of(shape, rows)), half(in_half) {
    clamp = strcmp(l.name, "odd3x3") == 0 ? gpu_clamp{0.0f, 0.5f}
            : l.relu                      ? gpu_clamp{0.0f, INFINITY}
                                          : gpu_clamp{-INFINITY, INFINITY};
    x.fill((size_t)s.n * s.h * s.w * s.c, -1.0f, 1.0f, half);
    const float range = 1.5f / sqrtf((float)(s.r * s.s));
    w.fill((size_t)s.c * s.r * s.s, -range, range, half);
    y_count = (size_t)s.n * s.p * s.q * s.c;
    z.fill(l.residual ? y_count : 1, -1.0f, 1.0f, half);
    bias.resize(s.c);
    for (float& b : bias) b = uniform(-0.3f, 0.3f);
    std::vector<float> rsc(w.value.size());
    gpu_depthwise_weights(w.value.data(), s.c, s.r, s.s, rsc.data());
    w_rsc = lab_upload_values(rsc, half);
    bias_dev = static_cast<float*>(lab_upload(bias.data(), s.c * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y, y_count * (half ? sizeof(__half) : sizeof(float))));
  }
  ~problem() { cudaFree(w_rsc), cudaFree(bias_dev), cudaFree(y); }

  void run_ours(cudaStream_t stream) {
    ttp_err e = {};
    CHECK(gpu_depthwise_nhwc(x.dev, w_rsc, l.bias ? bias_dev : nullptr,
                             l.residual ? z.dev : nullptr, y, &s, clamp, half, stream,
                             &e) == TTP_OK,
          "%s: %s", l.name, e.message);
  }

  // The CPU reference of output (image, p, q, channel k), in double, and the kernel's bound.
  lab_want reference(int image, int p, int q, int k) const {
    double sum = l.bias ? bias[k] : 0.0, magnitude = fabs(sum);
    for (int r = 0; r < s.r; r++)
      for (int t = 0; t < s.s; t++) {
        const int row = p * s.stride_h - s.pad_t + r * s.dil_h;
        const int col = q * s.stride_w - s.pad_l + t * s.dil_w;
        if (row < 0 || row >= s.h || col < 0 || col >= s.w) continue;
        const double product = (double)x.value[(((size_t)image * s.h + row) * s.w + col) * s.c +
                                               k] * w.value[((size_t)k * s.r + r) * s.s + t];
        sum += product, magnitude += fabs(product);
      }
    if (l.residual) {
      const double residual = z.value[(((size_t)image * s.p + p) * s.q + q) * s.c + k];
      sum += residual, magnitude += fabs(residual);
    }
    const double want = sum < clamp.lo ? clamp.lo : sum > clamp.hi ? clamp.hi : sum;
    return {want, half ? 0x1p-10 * fabs(want) + 1e-3 : 0x1p-19 * magnitude + 1e-6};
  }

  // Poisons y, runs the kernel, and checks every output against the reference.
  void validate() {
    lab_validate(l.name, s, y, half, [&] { run_ours(0); },
                 [&](int image, int p, int q, int k) { return reference(image, p, q, k); });
  }
};

// cuDNN's grouped convolution in NCHW of the problem's type over tensors of the same sizes (the
// values are not compared: only the time is).
struct cudnn_depthwise {
  cudnnHandle_t dnn;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  void *workspace = nullptr, *y = nullptr;
  size_t workspace_size = 0;
  problem& pr;

  explicit cudnn_depthwise(problem& p) : pr(p) {
    const gpu_conv_shape& s = p.s;
    const cudnnDataType_t type = p.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    CHECK_DNN(cudnnCreate(&dnn));
    CHECK_DNN(cudnnCreateTensorDescriptor(&xd));
    CHECK_DNN(cudnnCreateTensorDescriptor(&yd));
    CHECK_DNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, type, s.n, s.c, s.h, s.w));
    CHECK_DNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, type, s.n, s.c, s.p, s.q));
    CHECK_DNN(cudnnCreateFilterDescriptor(&wd));
    CHECK_DNN(cudnnSetFilter4dDescriptor(wd, type, CUDNN_TENSOR_NCHW, s.c, 1, s.r, s.s));
    CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
    CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, s.pad_t, s.pad_l, s.stride_h, s.stride_w,
                                              s.dil_h, s.dil_w, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
    CHECK_DNN(cudnnSetConvolutionGroupCount(cd, s.c));
    CHECK_DNN(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    CHECK_DNN(cudnnFindConvolutionForwardAlgorithm(dnn, xd, wd, cd, yd,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
    for (int i = found - 1; i >= 0; i--)  // the fastest implicit GEMM, as the engine picks
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
           perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))
        algo = perf[i].algo;
    CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, wd, cd, yd, algo, &workspace_size));
    if (workspace_size) CHECK_CUDA(cudaMalloc(&workspace, workspace_size));
    CHECK_CUDA(cudaMalloc(&y, p.y_count * (p.half ? sizeof(__half) : sizeof(float))));
  }
  ~cudnn_depthwise() {
    cudaFree(workspace), cudaFree(y);
    cudnnDestroyConvolutionDescriptor(cd), cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyTensorDescriptor(xd), cudnnDestroyTensorDescriptor(yd), cudnnDestroy(dnn);
  }
  void run(cudaStream_t stream) {
    CHECK_DNN(cudnnSetStream(dnn, stream));
    const float one = 1.0f, zero = 0.0f;
    CHECK_DNN(cudnnConvolutionForward(dnn, &one, xd, pr.x.dev, wd, pr.w.dev, cd, algo, workspace,
                                      workspace_size, &zero, yd, y));
  }
};

}  // namespace

int main(int argc, char** argv) {
  const lab_options o = lab_options_of(argc, argv, "bench_depthwise_lab");
  const int rows = o.rows, runs = o.runs;
  lab_seed(2718u);
  if (!lab_have_gpu()) return 77;
  printf("check against the CPU (5 rows; the odd shapes 3):\n");
  for (bool half : {true, false}) {
    for (const lab_shape& l : kShapes) problem(l, 5, half).validate();
    for (const lab_shape& l : kOdd) problem(l, 3, half).validate();
  }
  if (o.validate_only) return 0;

  const lab_device device;
  const cudaDeviceProp& prop = device.prop;
  cudaStream_t stream = device.stream;
  for (bool half : {true, false}) {
    const char* type = half ? "fp16" : "fp32";
    printf("\n%s, %s, %d rows, median of %d runs; GB/s: x and y once each\n", prop.name, type,
           rows, runs);
    printf("%-7s %10s %8s %14s %8s %8s\n", "shape", "ours us", "GB/s", "cuDNN NCHW us", "GB/s",
           "ratio");
    double ours_total = 0, cudnn_total = 0;
    for (const lab_shape& l : kShapes) {
      problem pr(l, rows, half);
      pr.validate();
      cudnn_depthwise dnn(pr);
      const float ours = median_ms([&](cudaStream_t s) { pr.run_ours(s); }, runs, stream);
      const float theirs = median_ms([&](cudaStream_t s) { dnn.run(s); }, runs, stream);
      const double bytes = (half ? 2.0 : 4.0) * (pr.x.value.size() + pr.y_count);
      printf("%-7s %10.1f %8.0f %14.1f %8.0f %8.2f\n", l.name, ours * 1e3, bytes / ours / 1e6,
             theirs * 1e3, bytes / theirs / 1e6, theirs / ours);
      ours_total += ours, cudnn_total += theirs;
    }
    printf("%s: the five depthwise layers, %d rows: ours %.3f ms, cuDNN NCHW %.3f ms (%.2fx)\n",
           type, rows, ours_total, cudnn_total, cudnn_total / ours_total);
  }
  cudaStreamDestroy(stream);
  return 0;
}
