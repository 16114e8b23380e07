// Kernel lab for ttapipe's inverted residual block in one kernel
// (pipeline/cudnn/inverted_kernel.cu) beside the same block as three kernels (gpu_conv_nhwc for
// the 1x1 expansion, gpu_depthwise_nhwc, gpu_conv_nhwc for the projection with the input as z),
// fp16, on the MobileNetV2-style net's blocks it is built for:
//
//   b0        16 -> 64 -> 16 channels, 32x32, ReLU6 after the expansion and the depthwise layer,
//             + the input (the net's first block)
//   b1        16 -> 64 -> 24, 32x32 in, depthwise stride 2, 16x16 out, ReLU6s, no residual (its
//             second)
//   b4        32 -> 128 -> 32, 8x8, the same as b0 (its last)
//   b0plain   16 -> 64 -> 16, 32x32, no biases, clamps [-0.2, 0.3] and [0, 0.5] and none on the
//             projection, no residual
//
// Every shape at 5 and 1031 rows: the block's outputs poisoned (two different NaNs) before each
// run, then
//   - the kernel's bits against the three kernels' (every output);
//   - both against a CPU reference (every image of 5 rows, every 61st of 1031): each layer in
//     double, rounded to fp16 after each as the kernels round, |got - want| <= 2^-8 |want| +
//     4e-3 (a rounding of a middle value that falls the other way moves the output by a few
//     fp16 steps of the sums after it).
//
//   bench_inverted_lab --validate     check only (ctest, label gpu; 77 without a GPU)
//   bench_inverted_lab [--rows N] [--runs R]
//                                     check, then time the kernel and the three on each shape
//                                     with N rows (default 5120: a batch of 1024 images x 5
//                                     copies), the median of R runs (default 20); GB/s: the
//                                     block's input and output once each
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "pipeline/cudnn/depthwise_kernel.h"
#include "pipeline/cudnn/inverted_kernel.h"
#include "tests/bench/lab_util.cuh"

namespace {

struct block_shape {
  const char* name;
  int h, w, cin, mid, cout, stride;  // h x w: the input's
  int residual, bias;
  gpu_clamp expand, depthwise, project;
};

const gpu_clamp kRelu6 = {0.0f, 6.0f}, kNone = {-INFINITY, INFINITY};
const block_shape kShapes[] = {
    {"b0", 32, 32, 16, 64, 16, 1, 1, 1, kRelu6, kRelu6, kNone},
    {"b1", 32, 32, 16, 64, 24, 2, 0, 1, kRelu6, kRelu6, kNone},
    {"b4", 8, 8, 32, 128, 32, 1, 1, 1, kRelu6, kRelu6, kNone},
    {"b0plain", 32, 32, 16, 64, 16, 1, 0, 0, {-0.2f, 0.3f}, {0.0f, 0.5f}, kNone},
};

float half_of(double v) { return __half2float(__float2half_rn((float)v)); }
double clamped(double v, gpu_clamp c) { return v < c.lo ? c.lo : v > c.hi ? c.hi : v; }

struct problem {
  block_shape b;
  gpu_inverted_shape s;
  tensor x, we, wd, wp;  // the model's weights: mid x cin, mid x 3 x 3, cout x mid
  std::vector<float> be, bd, bp;
  void *we_dev = nullptr, *wd_dev = nullptr, *wp_dev = nullptr;
  float *be_dev = nullptr, *bd_dev = nullptr, *bp_dev = nullptr;
  void *m1 = nullptr, *m2 = nullptr, *y_fused = nullptr, *y_three = nullptr;
  int p, q;  // the output's rows and columns
  size_t y_count;

  problem(const block_shape& shape, int rows) : b(shape) {
    s = {rows, b.h, b.w, b.cin, b.mid, b.cout, b.stride};
    p = b.h / b.stride, q = b.w / b.stride;
    x.fill((size_t)rows * b.h * b.w * b.cin, -1.0f, 1.0f);
    we.fill((size_t)b.mid * b.cin, -1.5f / sqrtf((float)b.cin), 1.5f / sqrtf((float)b.cin));
    wd.fill((size_t)b.mid * 9, -0.5f, 0.5f);
    wp.fill((size_t)b.cout * b.mid, -1.5f / sqrtf((float)b.mid), 1.5f / sqrtf((float)b.mid));
    for (auto* v : {&be, &bd, &bp}) v->resize(v == &bp ? b.cout : b.mid);
    for (auto* v : {&be, &bd, &bp})
      for (float& f : *v) f = b.bias ? uniform(-0.3f, 0.3f) : 0.0f;
    std::vector<float> laid(gpu_conv_weights_count(b.mid, b.cin, 1, 1));
    gpu_conv_weights(we.value.data(), b.mid, b.cin, 1, 1, b.cin, 1, laid.data());
    we_dev = lab_upload_values(laid, true);
    laid.assign(gpu_conv_weights_count(b.cout, b.mid, 1, 1), 0.0f);
    gpu_conv_weights(wp.value.data(), b.cout, b.mid, 1, 1, b.mid, 1, laid.data());
    wp_dev = lab_upload_values(laid, true);
    laid.assign((size_t)b.mid * 9, 0.0f);
    gpu_depthwise_weights(wd.value.data(), b.mid, 3, 3, laid.data());
    wd_dev = lab_upload_values(laid, true);
    be_dev = static_cast<float*>(lab_upload(be.data(), be.size() * sizeof(float)));
    bd_dev = static_cast<float*>(lab_upload(bd.data(), bd.size() * sizeof(float)));
    bp_dev = static_cast<float*>(lab_upload(bp.data(), bp.size() * sizeof(float)));
    const size_t pixels = (size_t)rows * b.h * b.w, out_pixels = (size_t)rows * p * q;
    y_count = out_pixels * b.cout;
    CHECK_CUDA(cudaMalloc(&m1, pixels * b.mid * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&m2, out_pixels * b.mid * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&y_fused, y_count * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&y_three, y_count * sizeof(__half)));
  }
  ~problem() {
    for (void* p : {we_dev, wd_dev, wp_dev, (void*)be_dev, (void*)bd_dev, (void*)bp_dev, m1, m2,
                    y_fused, y_three})
      cudaFree(p);
  }

  void run_fused(cudaStream_t stream) {
    const gpu_inverted_block blk = {we_dev, wd_dev, wp_dev,
                                    b.bias ? be_dev : nullptr, b.bias ? bd_dev : nullptr,
                                    b.bias ? bp_dev : nullptr, b.expand, b.depthwise, b.project,
                                    b.residual};
    ttp_err e = {};
    CHECK(gpu_inverted_nhwc(x.dev, y_fused, &s, &blk, stream, &e) == TTP_OK, "%s: %s", b.name,
          e.message);
  }

  void run_three(cudaStream_t stream) {
    ttp_err e = {};
    const gpu_conv_shape expand = {s.n, b.h, b.w, b.cin, b.h, b.w, b.mid, 1, 1, 1, 1, 0, 0, 1, 1};
    const gpu_conv_shape depthwise = {s.n, b.h, b.w, b.mid, p, q, b.mid, 3, 3, b.stride,
                                      b.stride, 1, 1, 1, 1};
    const gpu_conv_shape project = {s.n, p, q, b.mid, p, q, b.cout, 1, 1, 1, 1, 0, 0, 1, 1};
    CHECK(gpu_conv_nhwc(x.dev, we_dev, b.bias ? be_dev : nullptr, nullptr, m1, &expand, b.expand,
                        1, stream, &e) == TTP_OK, "%s expansion: %s", b.name, e.message);
    CHECK(gpu_depthwise_nhwc(m1, wd_dev, b.bias ? bd_dev : nullptr, nullptr, m2, &depthwise,
                             b.depthwise, 1, stream, &e) == TTP_OK,
          "%s depthwise: %s", b.name, e.message);
    CHECK(gpu_conv_nhwc(m2, wp_dev, b.bias ? bp_dev : nullptr, b.residual ? x.dev : nullptr,
                        y_three, &project, b.project, 1, stream, &e) == TTP_OK,
          "%s projection: %s", b.name, e.message);
  }

  // The CPU reference of image `image`'s output (p x q x cout floats into out).
  void reference(int image, std::vector<double>& out) const {
    const int h = b.h, w = b.w, pixels = h * w, out_pixels = p * q;
    const float* in = &x.value[(size_t)image * pixels * b.cin];
    std::vector<float> m1h((size_t)pixels * b.mid), m2h((size_t)out_pixels * b.mid);
    for (int o = 0; o < pixels; o++)
      for (int k = 0; k < b.mid; k++) {
        double sum = be[k];
        for (int c = 0; c < b.cin; c++) sum += (double)in[o * b.cin + c] * we.value[k * b.cin + c];
        m1h[(size_t)o * b.mid + k] = half_of(clamped(sum, b.expand));
      }
    for (int i = 0; i < p; i++)
      for (int j = 0; j < q; j++)
        for (int k = 0; k < b.mid; k++) {
          double sum = bd[k];
          for (int r = 0; r < 3; r++)
            for (int t = 0; t < 3; t++) {
              const int row = i * b.stride - 1 + r, col = j * b.stride - 1 + t;
              if (row < 0 || row >= h || col < 0 || col >= w) continue;
              sum += (double)m1h[((size_t)row * w + col) * b.mid + k] * wd.value[k * 9 + r * 3 + t];
            }
          m2h[((size_t)i * q + j) * b.mid + k] = half_of(clamped(sum, b.depthwise));
        }
    out.assign((size_t)out_pixels * b.cout, 0.0);
    for (int o = 0; o < out_pixels; o++)
      for (int k = 0; k < b.cout; k++) {
        double sum = bp[k];
        for (int c = 0; c < b.mid; c++)
          sum += (double)m2h[(size_t)o * b.mid + c] * wp.value[k * b.mid + c];
        if (b.residual) sum += in[o * b.cin + k];  // stride 1: the same pixel
        out[(size_t)o * b.cout + k] = clamped(sum, b.project);
      }
  }

  // Poisons both outputs, runs both, and checks: the kernel's bits are the three kernels', and
  // both lie within the bound of the CPU's.
  void validate() {
    // two different NaNs, so that outputs neither path writes cannot compare equal
    CHECK_CUDA(cudaMemset(y_fused, 0xff, y_count * sizeof(__half)));
    CHECK_CUDA(cudaMemset(y_three, 0xfe, y_count * sizeof(__half)));
    run_fused(0);
    run_three(0);
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<__half> fused(y_count), three(y_count);
    CHECK_CUDA(cudaMemcpy(fused.data(), y_fused, y_count * sizeof(__half), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(three.data(), y_three, y_count * sizeof(__half), cudaMemcpyDeviceToHost));
    const size_t per_image = (size_t)p * q * b.cout;
    for (size_t i = 0; i < y_count; i++)
      CHECK(memcmp(&fused[i], &three[i], sizeof(__half)) == 0,
            "%s, %d rows: image %zu value %zu: the kernel %.7g, the three kernels %.7g", b.name,
            s.n, i / per_image, i % per_image, __half2float(fused[i]), __half2float(three[i]));
    double worst = 0;
    std::vector<double> want;
    for (int image = 0; image < s.n; image += s.n > 64 ? 61 : 1) {
      reference(image, want);
      for (size_t i = 0; i < per_image; i++) {
        const double got = __half2float(fused[image * per_image + i]);
        const double d = fabs(got - want[i]);
        CHECK(d <= 0x1p-8 * fabs(want[i]) + 4e-3, "%s, %d rows: image %d value %zu: %.7g, the "
              "CPU %.7g", b.name, s.n, image, i, got, want[i]);
        worst = d > worst ? d : worst;
      }
    }
    printf("  %-8s %4d rows: the three kernels' bits; max |diff| from the CPU %.3g\n", b.name,
           s.n, worst);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const lab_options o = lab_options_of(argc, argv, "bench_inverted_lab");
  lab_seed(4242u);
  if (!lab_have_gpu()) return 77;
  for (const block_shape& b : kShapes) {
    gpu_inverted_shape s = {5, b.h, b.w, b.cin, b.mid, b.cout, b.stride};
    if (!gpu_inverted_nhwc_takes(&s, 1)) {
      printf("skipped: this GPU does not run the kernel (sm_80 or later, its shared memory)\n");
      return 77;
    }
  }
  printf("the kernel against the three kernels and the CPU:\n");
  for (const block_shape& b : kShapes)
    for (int rows : {5, 1031}) problem(b, rows).validate();
  if (o.validate_only) return 0;

  const lab_device device;
  printf("\n%s, fp16, %d rows, median of %d runs; GB/s: the block's input and output once each\n",
         device.prop.name, o.rows, o.runs);
  printf("%-8s %10s %8s %10s %8s\n", "block", "kernel us", "GB/s", "three us", "ratio");
  for (const block_shape& b : kShapes) {
    problem pr(b, o.rows);
    pr.validate();
    const float one = median_ms([&](cudaStream_t s) { pr.run_fused(s); }, o.runs, device.stream);
    const float three = median_ms([&](cudaStream_t s) { pr.run_three(s); }, o.runs, device.stream);
    const double bytes = 2.0 * (pr.x.value.size() + pr.y_count);
    printf("%-8s %10.1f %8.0f %10.1f %8.2f\n", b.name, one * 1e3, bytes / one / 1e6, three * 1e3,
           three / one);
  }
  cudaStreamDestroy(device.stream);
  return 0;
}
