/* A CUDA program whose images are already on the GPU: classify them without a trip through the
 * host, ordered on the program's own CUDA stream.
 *
 *   device_inputs MODEL
 *
 * The program makes 1000 images in device memory (here copied from random bytes; in a real
 * program a GPU JPEG decoder such as nvJPEG or DALI writes them), enqueues the classification on
 * its stream, enqueues its own copy of the results after it, and waits for its stream only.
 * Exits 0 with a note where there is no GPU. Build: link the CUDA runtime (-lcudart) too. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "ttapipe.h"

#define CUDA(call)                                                                    \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(err_));                   \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL\n", argv[0]);
    return 2;
  }
  if (ttp_gpu_count() == 0) {
    printf("no GPU: device inputs need one\n");
    return 0;
  }
  ttp_options options;
  ttp_options_init(&options);
  options.model_dir = argv[1];
  options.engine = TTP_ENGINE_AUTO; /* a GPU engine: the CPU engine takes no device memory */
  ttp_pipeline* p = NULL;
  if (ttp_open(&options, &p) != TTP_OK) {
    fprintf(stderr, "%s\n", ttp_last_error(p));
    ttp_close(p);
    return 1;
  }
  const ttp_model_info* m = ttp_model(p);
  const size_t count = 1000,
               bytes = count * m->input_channels * m->input_rows * m->input_cols;

  /* The program's own stream and device buffers (on device 0, the pipeline's default). */
  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint8_t *host, *images;
  ttp_result *results, *answers;
  CUDA(cudaMallocHost((void**)&host, bytes));
  CUDA(cudaMallocHost((void**)&answers, count * sizeof *answers));
  CUDA(cudaMalloc((void**)&images, bytes));
  CUDA(cudaMalloc((void**)&results, count * sizeof *results));
  for (size_t i = 0; i < bytes; i++) host[i] = (uint8_t)(rand() >> 7);
  CUDA(cudaMemcpyAsync(images, host, bytes, cudaMemcpyHostToDevice, stream));

  /* Enqueued after the copy above, on the same stream: returns at once. */
  if (ttp_classify_device(p, images, count, results, NULL, stream) != TTP_OK) {
    fprintf(stderr, "%s\n", ttp_last_error(p));
    return 1;
  }
  /* The results are there for whatever the program enqueues next on its stream. */
  CUDA(cudaMemcpyAsync(answers, results, count * sizeof *answers, cudaMemcpyDeviceToHost, stream));
  CUDA(cudaStreamSynchronize(stream));
  int histogram[1024] = {0};
  for (size_t i = 0; i < count; i++) histogram[answers[i].class_index % 1024]++;
  printf("%zu images classified from device memory:", count);
  for (int k = 0; k < m->classes && k < 1024; k++) printf(" %s:%d", ttp_class_label(p, k), histogram[k]);
  printf("\n");

  cudaFree(images), cudaFree(results), cudaFreeHost(host), cudaFreeHost(answers);
  cudaStreamDestroy(stream);
  ttp_close(p);
  return 0;
}
