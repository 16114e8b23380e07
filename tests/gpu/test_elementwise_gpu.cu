// The cudnn engine's elementwise layers (gpu_elementwise, pipeline/cudnn/cudnn_kernels.cu): the
// 16-byte path (elementwise_vector_kernel, taken where every pointer is 16-byte aligned and the
// shapes give whole vectors) against the one-element path (taken where an operand lies 2
// elements past an aligned address) and against the host, bit for bit: the same operations in
// the same order in fp32, the fp16 result rounded once. In fp16 and fp32: NHWC with a
// per-channel operand (24 channels), NCHW with per-channel and per-row operands (5 channels of
// 4 x 6), each of add (three operands), sub, mul and div, on random values of odd row counts,
// the outputs poisoned (two different NaNs) before each run.
//   Usage: test_elementwise_gpu; exits 77 without a GPU.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "pipeline/cudnn/cudnn_kernels.h"
#include "tests/common/check_cuda.h"

namespace {

unsigned state = 777u;
float uniform(float lo, float hi) {
  state = state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(state >> 8) / 16777216.0f;
}

struct layout {
  const char* name;
  gpu_dims d;
  int rows;
  unsigned char spread[3];  // operands 1 and 2 (operand 0 is whole)
};

const layout kLayouts[] = {
    {"NHWC 3x5x24, per channel", {24, 3, 5, 1}, 7, {GPU_EVERY, GPU_PER_CHANNEL, GPU_EVERY}},
    {"NCHW 5x4x6, per channel", {5, 4, 6, 0}, 9, {GPU_EVERY, GPU_PER_CHANNEL, GPU_EVERY}},
    {"NCHW 5x4x6, per row", {5, 4, 6, 0}, 9, {GPU_EVERY, GPU_PER_ROW, GPU_PER_CHANNEL}},
};

// Operand k's element count for a layout.
size_t count_of(const layout& l, int k) {
  const size_t rows = (size_t)l.rows, c = (size_t)l.d.c;
  switch (l.spread[k]) {
    case GPU_PER_CHANNEL: return rows * c;
    case GPU_PER_ROW: return rows;
    default: return rows * c * l.d.h * l.d.w;
  }
}

// Where operand k's value for element i lies (the kernels' broadcast).
size_t index_of(const layout& l, int k, size_t i) {
  const size_t per_row = (size_t)l.d.c * l.d.h * l.d.w, row = i / per_row;
  const size_t c = l.d.nhwc ? i % l.d.c : i / ((size_t)l.d.h * l.d.w) % l.d.c;
  return l.spread[k] == GPU_PER_CHANNEL ? row * l.d.c + c : l.spread[k] == GPU_PER_ROW ? row : i;
}

float host_value(const std::vector<float>& v, bool half, size_t i) {
  return half ? __half2float(__float2half_rn(v[i])) : v[i];
}

// Device copies of host values in the type, at `offset` elements past an aligned allocation.
void* upload(const std::vector<float>& v, bool half, int offset, void** base) {
  const size_t elem = half ? 2 : 4;
  CHECK_CUDA(cudaMalloc(base, (v.size() + offset) * elem));
  std::vector<unsigned char> bytes(v.size() * elem);
  for (size_t i = 0; i < v.size(); i++) {
    if (half) {
      const __half h = __float2half_rn(v[i]);
      memcpy(&bytes[i * 2], &h, 2);
    } else {
      memcpy(&bytes[i * 4], &v[i], 4);
    }
  }
  void* at = static_cast<unsigned char*>(*base) + offset * elem;
  CHECK_CUDA(cudaMemcpy(at, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return at;
}

// Runs op over the layout with operands at `offset` elements past their allocations (0: the
// 16-byte path; 2: the one-element path); the output's bytes.
std::vector<unsigned char> run(const layout& l, gpu_binary_op op, int operands, bool half,
                               const std::vector<float> (&values)[3], int offset,
                               unsigned char poison) {
  gpu_operands x = {};
  void* bases[3] = {};
  for (int k = 0; k < operands; k++) {
    x.in[k] = upload(values[k], half, offset, &bases[k]);
    x.spread[k] = l.spread[k];
  }
  x.count = operands;
  const size_t total = count_of(l, 0), bytes = total * (half ? 2 : 4);
  void* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, bytes));
  CHECK_CUDA(cudaMemset(out, poison, bytes));
  ttp_err e = {};
  CHECK(gpu_elementwise(op, &x, out, (size_t)l.rows, l.d, half, 0, &e) == TTP_OK, "%s",
        e.message);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> got(bytes);
  CHECK_CUDA(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
  for (void* b : bases) cudaFree(b);
  cudaFree(out);
  return got;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("skipped: no GPU\n");
    return 77;
  }
  const gpu_binary_op ops[] = {GPU_ADD, GPU_SUB, GPU_MUL, GPU_DIV};
  const char* const op_names[] = {"add", "sub", "mul", "div"};
  int checked = 0;
  for (bool half : {true, false})
    for (const layout& l : kLayouts)
      for (int o = 0; o < 4; o++) {
        const int operands = ops[o] == GPU_ADD ? 3 : 2;
        std::vector<float> values[3];
        for (int k = 0; k < operands; k++) {
          values[k].resize(count_of(l, k));
          for (float& v : values[k])  // divisors kept away from 0
            v = (k > 0 && ops[o] == GPU_DIV ? 1.0f : 0.0f) + uniform(0.25f, 2.0f) *
                                                               (uniform(0, 1) < 0.5f ? -1 : 1);
        }
        const auto vec = run(l, ops[o], operands, half, values, 0, 0xff);
        const auto one = run(l, ops[o], operands, half, values, 2, 0xfe);
        CHECK(vec == one, "%s, %s, %s: the 16-byte path's bits differ from one element a thread's",
              l.name, op_names[o], half ? "fp16" : "fp32");
        for (size_t i = 0; i < count_of(l, 0); i++) {
          float acc = host_value(values[0], half, i);
          for (int k = 1; k < operands; k++) {
            const float v = host_value(values[k], half, index_of(l, k, i));
            acc = ops[o] == GPU_ADD ? acc + v : ops[o] == GPU_SUB ? acc - v
                  : ops[o] == GPU_MUL ? acc * v : acc / v;
          }
          unsigned char want[4];
          if (half) {
            const __half h = __float2half_rn(acc);
            memcpy(want, &h, 2);
          } else {
            memcpy(want, &acc, 4);
          }
          CHECK(memcmp(&vec[i * (half ? 2 : 4)], want, half ? 2 : 4) == 0,
                "%s, %s, %s: element %zu differs from the host's", l.name, op_names[o],
                half ? "fp16" : "fp32", i);
        }
        checked++;
      }
  printf("gpu_elementwise: %d cases, the 16-byte path, one element a thread and the host the same "
         "bits\n", checked);
  return 0;
}
