/* ttp_classify_device: images in device memory, results written in device memory, ordered on
   the caller's stream. For the fused and cudnn engines, fp32 and fp16, batches of 1, 5, 64 and
   1037 images (several chunks of max_batch 256, the latency path's buckets and the others):
   - the images reach the device on the caller's stream just before the call (zeros, then an
     asynchronous copy from pinned memory): a call that did not wait for them would read zeros;
   - the results are copied back on the caller's stream right after the call and only that stream
     is synchronised: they must be there;
   - results and probabilities equal ttp_classify's for the same images, bit for bit; the
     device arrays are poisoned first; the calling thread's current device is unchanged; the
     pipeline's host path still gives the same results afterwards;
   - the CPU engine refuses in one line, as do missing arrays and batches of ttp_submit in flight.
   Exits 77 without a GPU. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/common/fixtures.h"
#include "ttapipe.h"

#define CUDA_OK(call)                                                                      \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    CHECK(err_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(err_));                 \
  } while (0)

enum { PIXELS = 784, CLASSES = 10, MOST = 1037 };

int main(void) {
  if (ttp_gpu_count() == 0) {
    printf("skipped: no CUDA device\n");
    return TEST_SKIP;
  }
  const char* dir = test_make_dir();
  fixture_model_dir(dir, 41);
  test_rng rng = {41};
  uint8_t* host_images;
  CUDA_OK(cudaMallocHost((void**)&host_images, (size_t)MOST * PIXELS));
  for (size_t i = 0; i < (size_t)MOST * PIXELS; i++) host_images[i] = (uint8_t)test_int(&rng, 0, 255);
  uint8_t* d_images;
  ttp_result* d_results;
  float* d_probs;
  CUDA_OK(cudaMalloc((void**)&d_images, (size_t)MOST * PIXELS));
  CUDA_OK(cudaMalloc((void**)&d_results, MOST * sizeof(ttp_result)));
  CUDA_OK(cudaMalloc((void**)&d_probs, (size_t)MOST * CLASSES * sizeof(float)));
  ttp_result *want = malloc(MOST * sizeof *want), *got;
  float *want_probs = malloc((size_t)MOST * CLASSES * sizeof(float)), *got_probs;
  CUDA_OK(cudaMallocHost((void**)&got, MOST * sizeof *got));
  CUDA_OK(cudaMallocHost((void**)&got_probs, (size_t)MOST * CLASSES * sizeof(float)));
  CHECK(want && want_probs, "out of memory");
  cudaStream_t caller;
  CUDA_OK(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking));

  const ttp_engine engines[2] = {TTP_ENGINE_FUSED, TTP_ENGINE_CUDNN};
  const size_t counts[4] = {1, 5, 64, MOST};
  for (int k = 0; k < 2; k++)
    for (int half = 0; half < 2; half++) {
      ttp_pipeline* p =
          fixture_open_gpu(dir, engines[k], half ? TTP_PRECISION_FP16 : TTP_PRECISION_FP32, 5);
      CHECK(ttp_classify(p, host_images, MOST, want, want_probs) == TTP_OK, "%s",
            ttp_last_error(p));
      for (int c = 0; c < 4; c++) {
        const size_t n = counts[c];
        /* The caller's own work: poison, then the images copied in on its stream. */
        CUDA_OK(cudaMemsetAsync(d_images, 0, (size_t)MOST * PIXELS, caller));
        CUDA_OK(cudaMemsetAsync(d_results, 0xff, MOST * sizeof(ttp_result), caller));
        CUDA_OK(cudaMemsetAsync(d_probs, 0xff, (size_t)MOST * CLASSES * sizeof(float), caller));
        CUDA_OK(cudaMemcpyAsync(d_images, host_images, n * PIXELS, cudaMemcpyHostToDevice, caller));
        int before;
        CUDA_OK(cudaGetDevice(&before));
        CHECK(ttp_classify_device(p, d_images, n, d_results, d_probs, caller) == TTP_OK, "%s",
              ttp_last_error(p));
        int after;
        CUDA_OK(cudaGetDevice(&after));
        CHECK(before == after, "the current device changed: %d -> %d", before, after);
        memset(got, 0xa5, n * sizeof *got);
        CUDA_OK(cudaMemcpyAsync(got, d_results, n * sizeof *got, cudaMemcpyDeviceToHost, caller));
        CUDA_OK(cudaMemcpyAsync(got_probs, d_probs, n * CLASSES * sizeof(float),
                                cudaMemcpyDeviceToHost, caller));
        CUDA_OK(cudaStreamSynchronize(caller)); /* the caller's stream alone */
        CHECK(memcmp(got, want, n * sizeof *got) == 0, "%s %s, %zu images: results differ from "
              "ttp_classify's", k ? "cudnn" : "fused", half ? "fp16" : "fp32", n);
        CHECK(memcmp(got_probs, want_probs, n * CLASSES * sizeof(float)) == 0,
              "%s %s, %zu images: probabilities differ", k ? "cudnn" : "fused",
              half ? "fp16" : "fp32", n);
      }
      /* The host path afterwards, through the slots the device path used. */
      CHECK(ttp_classify(p, host_images, MOST, got, got_probs) == TTP_OK, "%s", ttp_last_error(p));
      CHECK(memcmp(got, want, MOST * sizeof *got) == 0, "the host path after the device path");
      /* Refusals. */
      CHECK(ttp_classify_device(p, NULL, 3, d_results, NULL, caller) == TTP_ERR_INVALID_ARGUMENT,
            "no images accepted");
      CHECK(ttp_submit(p, host_images, 3) == TTP_OK, "%s", ttp_last_error(p));
      CHECK(ttp_classify_device(p, d_images, 3, d_results, NULL, caller) ==
                TTP_ERR_INVALID_ARGUMENT, "accepted with a batch in flight");
      EXPECT_MESSAGE(ttp_last_error(p), "collect them first");
      size_t n;
      CHECK(ttp_collect(p, got, NULL, &n) == TTP_OK && n == 3, "%s", ttp_last_error(p));
      printf("%s %s: 1, 5, 64 and %d images from device memory, on the caller's stream: the "
             "same bits as ttp_classify\n", k ? "cudnn" : "fused", half ? "fp16" : "fp32", MOST);
      ttp_close(p);
    }
  ttp_options o;
  ttp_options_init(&o);
  o.model_dir = dir, o.engine = TTP_ENGINE_CPU;
  ttp_pipeline* p = NULL;
  CHECK(ttp_open(&o, &p) == TTP_OK, "%s", ttp_last_error(p));
  CHECK(ttp_classify_device(p, d_images, 3, d_results, NULL, caller) == TTP_ERR_INVALID_ARGUMENT,
        "the CPU engine accepted device inputs");
  EXPECT_MESSAGE(ttp_last_error(p), "needs a GPU engine");
  ttp_close(p);
  CUDA_OK(cudaStreamDestroy(caller));
  cudaFree(d_images), cudaFree(d_results), cudaFree(d_probs);
  cudaFreeHost(host_images), cudaFreeHost(got), cudaFreeHost(got_probs);
  free(want), free(want_probs);
  printf("device inputs: every engine and precision as the host path, ordered on the caller's "
         "stream\n");
  return 0;
}
