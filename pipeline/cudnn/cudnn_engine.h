/* The cudnn engine's internals, shared by its two files: cudnn_layers.c (each model layer on
   cuDNN or ttapipe's kernels: plan, enqueue) and cudnn_engine.c (the network the GPU runner drives:
   augmentation, the layers, the merge). The registry uses cudnn_network, cudnn_supports and
   cudnn_run_layer; tests/bench/naive.c drives cudnn_net's layers itself. */
#ifndef TTP_CUDNN_ENGINE_H
#define TTP_CUDNN_ENGINE_H

#include <cudnn.h>

#include "../../graph/runner.h"
#include "../../model/plan.h"
#include "../engine.h"
#include "../plan_cache.h"
#include "conv_kernels.h"

/* One model layer on the GPU. Tensor descriptors and matrix layouts exist per bucket, because
   the number of rows n differs; the algorithm is one for all buckets. */
typedef struct gpu_layer {
  const model_layer* l;
  int skip;        /* a ReLU or Add that runs in the epilogue of the fc or conv layer it reads */
  int fused_act;   /* an fc or conv layer that also applies the activation that alone reads it:
                      a ReLU, a Clip, or a ReLU and a Clip (conv_unit) */
  gpu_clamp clamp; /* with fused_act: that activation (conv_kernels.h) */
  int run_at;      /* where it runs (model_plan_units): itself, or its unit's last layer */
  int explicit_pad;     /* conv: its uneven padding written out into the scratch buffer first */
  int own;              /* conv: ttapipe's NHWC kernel (conv_kernels.h), not cuDNN's */
  int depthwise;        /* conv: ttapipe's NHWC depthwise kernel (depthwise_kernel.h) */
  int residual;         /* conv, fc: adds value z_value (a residual Add fused into it) */
  const struct gpu_layer* first; /* conv: the convolution (with its unit) that runs before it in
                           its kernel, ttapipe's residual block (conv_kernels.h): it reads first's
                           input, and first's output stays in shared memory; NULL: none */
  const struct gpu_layer* middle; /* conv with `first`: the depthwise convolution between first
                           and it, the three one inverted residual block (inverted_kernel.h)
                           whose expanded maps stay in shared memory; NULL: none */
  int folded;           /* conv: runs inside the kernel of the convolution whose `first` (or
                           `middle`) it is */
  int z_value;
  model_shape x_shape;  /* conv: the input cuDNN sees (padded when explicit_pad) */
  int input_c;          /* conv: the channels its input holds, when more than its own (the
                           network's input padded with zeros; 0: as the model says) */
  unsigned char spread[MODEL_MAX_INPUTS]; /* elementwise: how each input spreads (gpu_spread) */
  void* weights;   /* device, in the engine's element type (and layout: conv_kernels.h's for
                      `own`, k x r x s x c for cuDNN in NHWC) */
  void* bias;      /* the element type; fp32 for `own` */
  cudnnTensorDescriptor_t x[GPU_MAX_BUCKETS], y[GPU_MAX_BUCKETS];
  cudnnFilterDescriptor_t filter;
  cudnnConvolutionDescriptor_t conv;
  cudnnConvolutionFwdAlgo_t conv_algo;
  cudnnMathType_t conv_math;
  cudnnLRNDescriptor_t lrn;
  int fused_epilogue;   /* conv on cuDNN: bias, residual and ReLU in its fused call */
  cudnnTensorDescriptor_t bias_desc;
  cudnnActivationDescriptor_t act;
  char algo[256]; /* the algorithm chosen, in words */
} gpu_layer;

/* The context every layer plans and enqueues in. */
typedef struct gpu_context {
  const model* m;               /* the shapes of a layer's inputs; NULL for one layer alone */
  cudnnHandle_t dnn;
  cudaStream_t stream;          /* the compute stream: every layer runs on it */
  ttp_precision precision;
  int half;                     /* fp16 storage */
  int tensor_cores;             /* convolutions on the tensor cores: fp16, or tf32's fp32 */
  int nhwc;                     /* activations NHWC (fp16, tf32: for the tensor cores), else NCHW */
  cudnnTensorFormat_t format;   /* cuDNN's name for it */
  cudnnDataType_t dnn_type;     /* CUDNN_DATA_FLOAT or CUDNN_DATA_HALF */
  size_t elem;                  /* bytes per element */
  int rows[GPU_MAX_BUCKETS];    /* n: images x copies of each bucket */
  int buckets;
  int canonical_rows;           /* GPU_CANONICAL_IMAGES x copies: where algorithms are chosen */
  int device;
  int choice_device; /* whose remembered algorithm choices it takes (engine_config) */
  ttp_plan plan;                /* how convolution algorithms are chosen */
  char plan_cache_id[PLAN_ID_MAX]; /* the plan cache identity of its device ("" where no cache
                                   applies), gpu_plan_cache_read's: its layers take the cache's
                                   choices while that is the table's */
  void* conv_workspace;         /* shared by every convolution; sized at plan */
  size_t conv_workspace_size;
  void* scratch;                /* a padded input (gpu_layer.explicit_pad); in NHWC also the
                                   augmentation's NCHW copies and the last value reordered to
                                   NCHW; sized at plan */
  size_t scratch_size;
  double libraries_s, handles_s; /* the plan's parts (its details): cuDNN loaded, its handle
                                    made */
} gpu_context;

/* The network: what cudnn_network's plan builds. */
typedef struct cudnn_net {
  const model* m;
  engine_config cfg;
  gpu_buckets buckets;
  gpu_context ctx;
  gpu_layer* layers;
  int* order;       /* the layers' indices in the order they run (run_at), skipped ones left out */
  int runs;         /* how many */
  model_plan plan;  /* each value's room in the arena, in floats of one row */
  void* arena;      /* the values: rows of the largest bucket x plan.arena elements */
  int input_c;      /* the channels of the input value (m's, or in NHWC padded to 16) */
  void* input;      /* the input value when padded; else it lies in the arena */
  float* probs;  /* fp16 only: the softmax output widened for the merge */
  double layers_s, slowest_s; /* planning the layers, and the slowest of them (its index) */
  double check_s; /* check_chain: the convolutions' rows checked in every bucket */
  int checked;    /* how many it checked */
  char unchecked[160]; /* why the check could not run, where it could not */
  int slowest;
  char details[6144];
} cudnn_net;

extern const gpu_network_ops cudnn_network;
/* engine_entry.supports and .run_layer (pipeline/engine.h). */
int cudnn_supports(const model_layer* l, const engine_config* c, char* why, size_t n);
ttp_status cudnn_run_layer(const model_layer* l, int n, const engine_config* c, int use_graph,
                           const float* in, float* out, size_t guard, ttp_err* e);

/* Whether convolution l is one filter a channel that ttapipe's NHWC depthwise kernel
   runs (depthwise_kernel.h), where cuDNN takes grouped convolutions in NCHW alone. */
int gpu_depthwise_suits(const model_layer* l);

/* Plans layer L (descriptors for every bucket, the algorithm, device weights) and raises
   ctx->conv_workspace_size to what it needs. The workspaces are allocated after every layer is
   planned. */
ttp_status gpu_layer_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e);
/* Where gpu_conv_check runs a convolution: its input and output for every bucket (the plan's
   arena), room for ref_rows rows of its output, and a device counter. */
typedef struct gpu_conv_probe {
  void* x[GPU_MAX_BUCKETS];
  void* y[GPU_MAX_BUCKETS];
  void* ref;
  int ref_rows;
  unsigned* differ;
} gpu_conv_probe;
/* Whether convolution L, on cuDNN's tensor-core math, gives a row the same bits in every bucket:
   hashed inputs through each bucket, the first ref_rows rows compared; where not, the layer's
   details say so. cuDNN may run another kernel for another row count under the same algorithm,
   and its fp32 sums then round differently now and then, which fp16 storage sometimes keeps.
   Nothing else is tried: cuDNN's other implicit GEMM and FMA math gave the same bits on LeNet's
   conv2 but ran several times slower there and up to 10x on ResNet-20 (BENCHMARKS.md). Other
   layers, FMA math (one sum order: tests/gpu checks fp32's bits) and residual convolutions:
   nothing; *checked counts the layers checked. Synchronises. */
ttp_status gpu_conv_check(const gpu_context* ctx, gpu_layer* L, const gpu_conv_probe* probe,
                          int* checked, ttp_err* e);
/* Launches layer L for bucket b on ctx->stream: its inputs in[0 .. input_count - 1] -> out.
   Launches only. */
ttp_status gpu_layer_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                             const void* const* in, void* out, ttp_err* e);
void gpu_layer_destroy(gpu_layer* L);

/* The plan cache (plan_cache.h) beside the process's remembered convolution choices, for the
   context's device (with TTP_PLAN_MEASURE; nothing otherwise). gpu_plan_cache_read reads the
   file (once a process and file), says in note (note_size bytes) what it did (how many choices
   it read, why it ignored the file, or "": nothing), and sets ctx->plan_cache_id: while the
   table read holds that identity's choices, its layers take them where they have none
   remembered, instead of searching. gpu_plan_cache_write, on a context that read, writes the
   device's choices and the file's others back (for ctx->plan_cache_id) when any was searched
   since, its note "" or why it could not. Neither fails the pipeline: a cache is only ever a
   shortcut. */
void gpu_plan_cache_read(gpu_context* ctx, const char* path, char* note, size_t note_size);
void gpu_plan_cache_write(const gpu_context* ctx, const char* path, char* note,
                          size_t note_size);

/* count host floats into dev, in the context's element type, on its stream; synchronises. */
ttp_status gpu_upload(gpu_context* ctx, const float* host, size_t count, void* dev, ttp_err* e);

#endif
