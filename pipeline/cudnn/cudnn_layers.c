/* Each model layer on the GPU, over the n = B x N rows of a batch, NCHW. A table of layer
   operations (plan, enqueue) indexed by model_op.

     conv     cudnnConvolutionForward (cross-correlation, zero padding, groups, dilation),
              then the epilogue kernel (bias, residual Add, ReLU), or all in one
              cudnnConvolutionBiasActivationForward where cuDNN takes it. Uneven padding is
              written out first (window_copy_kernel into the scratch buffer). The algorithm:
              cudnnFindConvolutionForwardAlgorithm at the canonical batch (or, with
              TTP_PLAN_HEURISTIC, cuDNN's heuristic ranking, nothing timed), the fastest
              implicit GEMM that every bucket supports (and, in fp32, that uses no tensor
              cores: no TF32). fp32: FMA math. fp16 and tf32: tensor-core math, fp32
              accumulation. In NHWC (fp16, tf32), ttapipe's own kernels where cuDNN is slower
              or absent, with bias, residual Add and ReLU in their epilogue: its convolution
              (conv_kernels.h; own_conv_suits says where), two convolutions in a row as one
              kernel, the residual block (cudnn_engine.c's block_units says where), and, for one
              filter a channel, its depthwise convolution (depthwise_kernel.h).
     maxpool, avgpool
              pool_kernel (cudnn_kernels.cu): any window, uneven padding and ceil mode, which
              cuDNN's pooling lacks; NaN propagates.
     relu and the other pointwise activations
              pointwise_kernel, unless a conv or fc layer applies it in its epilogue.
     fc       ttapipe's fc kernel (fc_kernel.h): fp32 multiply-adds in a fixed order, with the
              bias, and the residual Add, ReLU or Clip that follows, in its epilogue.
     lrn      cudnnLRNCrossChannelForward (the model's n, alpha, beta, k are cuDNN's definition).
     softmax  cudnnSoftmaxForward, accurate, over each row's C x H x W.
     add, sub, mul, div, affine, prelu, slice, pad, shuffle
              elementwise_kernel, channel_kernel, window_copy_kernel, shuffle_kernel.
     concat, reshape
              strided device copies (cudaMemcpy2DAsync, cudaMemcpyAsync).

   Batch invariance: one algorithm per layer for every bucket, and no split-K, so that a row's
   arithmetic does not depend on how many rows share the batch; tests/gpu checks the bits. In
   fp16 and tf32 cuDNN's tensor-core convolutions of some shapes (a residual network's
   16-channel ones, LeNet's conv2) still round differently at another batch size:
   test_cudnn_graph holds fp16 graphs to the tolerance there, and graph against eager to the
   bits; on a chain the plan checks each such convolution (gpu_conv_check) and its details name
   those that differ. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_check.h"
#include "cudnn_engine.h"
#include "conv_kernels.h"
#include "inverted_kernel.h"
#include "cudnn_kernels.h"
#include "depthwise_kernel.h"
#include "fc_kernel.h"
#include "../plan_cache.h"

static const float one = 1.0f, zero = 0.0f;

static gpu_dims dims(const gpu_context* ctx, model_shape s) {
  return (gpu_dims){s.c, s.h, s.w, ctx->nhwc};
}

/* cuDNN's descriptors of the layer's input (of shape in) and output for every bucket. */
static ttp_status plan_tensors(gpu_context* ctx, gpu_layer* L, model_shape in, ttp_err* e) {
  const model_layer* l = L->l;
  for (int b = 0; b < ctx->buckets; b++) {
    CUDNN_TRY(e, gpu_libs.cudnnCreateTensorDescriptor(&L->x[b]));
    CUDNN_TRY(e, gpu_libs.cudnnCreateTensorDescriptor(&L->y[b]));
    CUDNN_TRY(e, gpu_libs.cudnnSetTensor4dDescriptor(L->x[b], ctx->format, ctx->dnn_type,
                                                     ctx->rows[b], in.c, in.h, in.w));
    CUDNN_TRY(e, gpu_libs.cudnnSetTensor4dDescriptor(L->y[b], ctx->format, ctx->dnn_type,
                                                     ctx->rows[b], l->out.c, l->out.h, l->out.w));
  }
  return TTP_OK;
}

/* Host floats into a device buffer of count elements of the context's type (fp16: converted on
   the device). Every copy goes on the context's stream: a cudaMemcpy from pageable memory may
   return before its data lands, and the legacy default stream does not order the engine's
   non-blocking stream. Returns when the data is there. */
ttp_status gpu_upload(gpu_context* ctx, const float* host, size_t count, void* dev, ttp_err* e) {
  if (!ctx->half) {
    CUDA_TRY(e, cudaMemcpyAsync(dev, host, count * sizeof(float), cudaMemcpyHostToDevice,
                                ctx->stream));
    CUDA_TRY(e, cudaStreamSynchronize(ctx->stream));
    return TTP_OK;
  }
  float* staging = NULL;
  TRY(gpu_alloc((void**)&staging, count * sizeof(float), "the weights' fp32 staging", e));
  ttp_status s = TTP_OK;
  cudaError_t err = cudaMemcpyAsync(staging, host, count * sizeof(float), cudaMemcpyHostToDevice,
                                    ctx->stream);
  if (err != cudaSuccess)
    s = ERR(e, TTP_ERR_CUDA, "cudaMemcpyAsync: %s", cudaGetErrorString(err));
  if (s == TTP_OK) s = gpu_to_half(staging, dev, count, ctx->stream, e);
  if (s == TTP_OK && (err = cudaStreamSynchronize(ctx->stream)) != cudaSuccess)
    s = ERR(e, TTP_ERR_CUDA, "cudaStreamSynchronize: %s", cudaGetErrorString(err));
  cudaFree(staging);
  return s;
}

/* The layer's weights and bias on the device, in the engine's element type. */
static ttp_status upload(gpu_context* ctx, const float* host, size_t count, void** out,
                         ttp_err* e) {
  TRY(gpu_alloc(out, count * ctx->elem, "a layer's weights", e));
  return gpu_upload(ctx, host, count, *out, e);
}

/* count host floats into a new device buffer *out in fp32, whatever the engine's precision:
   what the kernels read as floats (an affine's or a PReLU's parameters, the bias of ttapipe's
   convolution). Returns when the data is there. */
static ttp_status upload_fp32(gpu_context* ctx, const float* host, size_t count, void** out,
                              ttp_err* e) {
  TRY(gpu_alloc(out, count * sizeof(float), "a layer's parameters", e));
  CUDA_TRY(e, cudaMemcpyAsync(*out, host, count * sizeof(float), cudaMemcpyHostToDevice,
                              ctx->stream));
  CUDA_TRY(e, cudaStreamSynchronize(ctx->stream));
  return TTP_OK;
}

/* The layer's weights and bias (if any) in fp32 (upload_fp32). */
static ttp_status upload_floats(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  TRY(upload_fp32(ctx, L->l->weights, L->l->weight_count, &L->weights, e));
  if (!L->l->bias) return TTP_OK;
  return upload_fp32(ctx, L->l->bias, L->l->bias_count, &L->bias, e);
}

/* The layer's weights (or `weights`, count of them: in another order, or padded) and bias. */
static ttp_status upload_weights(gpu_context* ctx, gpu_layer* L, const float* weights,
                                 size_t count, ttp_err* e) {
  if (!weights) weights = L->l->weights, count = L->l->weight_count;
  TRY(upload(ctx, weights, count, &L->weights, e));
  if (!L->l->bias) return TTP_OK;
  return upload(ctx, L->l->bias, L->l->bias_count, &L->bias, e);
}

/* The weights k x c x r x s as k x r x s x pad, the channels past c zeros (pad >= c). A fully
   connected layer's out x (c x h x w) reads as k = out, r = h, s = w: k x r x s x c is then its
   weights for an NHWC input. Returns NULL (recorded) when out of memory. */
static float* reordered(const model_layer* l, int k, int c, int r, int s, int pad, ttp_err* e) {
  if (pad < c) {
    ERR(e, TTP_ERR_INTERNAL, "layer %s: %d channels padded to %d", l->name, c, pad);
    return NULL;
  }
  const size_t count = (size_t)k * pad * r * s;
  float* to = calloc(count, sizeof *to);
  if (!to) {
    ERR_NOMEM(e, count * sizeof *to);
    return NULL;
  }
  for (int o = 0; o < k; o++)
    for (int i = 0; i < c; i++)
      for (int a = 0; a < r * s; a++)
        to[((size_t)o * r * s + a) * pad + i] = l->weights[((size_t)o * c + i) * r * s + a];
  return to;
}

/* ---- conv ------------------------------------------------------------------------------------ */

static const char* const conv_algo_names[] = {
    "implicit GEMM", "implicit precomputed GEMM", "GEMM", "direct", "FFT", "tiled FFT",
    "Winograd", "non-fused Winograd"};

/* A convolution's algorithm depends on its shapes, the precision and the device, never on
   max_batch: cudnnFindConvolutionForwardAlgorithm measures at the canonical batch
   (ctx->canonical_rows), and the pick is remembered for the life of the process, so every
   pipeline of a process runs the same arithmetic and an image gets the same bits whatever the
   batch size. The pick is the lowest-numbered implicit-GEMM algorithm within 10% of the fastest
   of them that every bucket can run (fp32: without tensor cores), so that timing noise rarely
   changes it between processes either; both give each output as one fp32 sum. With
   TTP_PLAN_HEURISTIC the pick is the first of those in cuDNN's heuristic ranking: nothing runs,
   and every process on the same device and cuDNN picks the same. */
typedef struct conv_choice {
  int key[1 + PLAN_KEY_INTS]; /* the device, the layout, the precision, the canonical rows, the
                                 shapes */
  cudnnConvolutionFwdAlgo_t algo;
  cudnnMathType_t math;
  float ms;
  int from_cache; /* read from the plan cache, not searched here */
  int measured;   /* searched here by cuDNN's timed search (what the plan cache keeps) */
} conv_choice;

enum { MAX_CONV_CHOICES = 1024 };
static conv_choice conv_choices[MAX_CONV_CHOICES];
static int conv_choice_count;
static int conv_choices_unsaved; /* measured choices searched since the plan cache was written */
/* The plan cache file as this process read it (once a file): its choices, apart from the
   remembered ones (which they join when a layer takes one), and the identity they are for. */
static char plan_cache_taken[4096];
static plan_entry cached[PLAN_MAX];
static int cached_count;
static char cached_id[PLAN_ID_MAX];
static pthread_mutex_t conv_choice_lock = PTHREAD_MUTEX_INITIALIZER;

/* The installed NVIDIA driver's version ("580.159.04") into out: the kernel module's
   (/sys/module/nvidia/version), else the first dotted number after "Module" in
   /proc/driver/nvidia/version (the proprietary module's line and the open one's, "Open Kernel
   Module for x86_64  580.159.04 ..."), else the CUDA driver API's version. */
static void driver_version(char* out, size_t size) {
  char line[256] = "";
  const char* at = NULL;
  FILE* f = fopen("/sys/module/nvidia/version", "r");
  if (f) {
    if (fgets(line, sizeof line, f)) at = line;
    fclose(f);
  } else if ((f = fopen("/proc/driver/nvidia/version", "r"))) {
    if (fgets(line, sizeof line, f) && (at = strstr(line, "Module")))
      while (*at && !(*at >= '0' && *at <= '9' && strspn(at, "0123456789.") > 2 &&
                      memchr(at, '.', strspn(at, "0123456789."))))
        at++;
    fclose(f);
  }
  const size_t n = at ? strspn(at, "0123456789.") : 0;
  if (n > 0 && n < size) {
    memcpy(out, at, n);
    out[n] = '\0';
    return;
  }
  int api = 0;
  cudaDriverGetVersion(&api);
  snprintf(out, size, "API %d", api);
}

/* The identity a plan cache file is written for: the GPU model, the driver and cuDNN. */
static void plan_identity(const gpu_context* ctx, char* id, size_t size) {
  struct cudaDeviceProp prop;
  char driver[64];
  if (cudaGetDeviceProperties(&prop, ctx->device) != cudaSuccess) prop.name[0] = '\0';
  driver_version(driver, sizeof driver);
  prop.name[sizeof prop.name - 1] = '\0';
  for (char* c = prop.name; *c; c++)
    if (*c < 0x20 || *c > 0x7e) *c = '?';
  snprintf(id, size, "%s sm_%d%d, driver %s, cuDNN %zu", prop.name[0] ? prop.name : "GPU",
           prop.name[0] ? prop.major : 0, prop.name[0] ? prop.minor : 0, driver,
           gpu_libs.cudnnGetVersion());
}

/* Never trusted: an implicit GEMM and a math type cuDNN knows (usable() still checks every
   bucket). */
static int cached_choice_ok(const plan_entry* e) {
  return (e->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
          e->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) &&
         (e->math == CUDNN_DEFAULT_MATH || e->math == CUDNN_TENSOR_OP_MATH ||
          e->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION || e->math == CUDNN_FMA_MATH);
}

void gpu_plan_cache_read(gpu_context* ctx, const char* path, char* note, size_t note_size) {
  note[0] = ctx->plan_cache_id[0] = '\0';
  if (!path || ctx->plan != TTP_PLAN_MEASURE) return;
  plan_identity(ctx, ctx->plan_cache_id, sizeof ctx->plan_cache_id);
  pthread_mutex_lock(&conv_choice_lock);
  if (strcmp(plan_cache_taken, path) != 0 && strlen(path) < sizeof plan_cache_taken) {
    strcpy(plan_cache_taken, path);
    int count = 0;
    cached_count = 0;
    if (plan_cache_read(path, ctx->plan_cache_id, cached, PLAN_MAX, &count, note, note_size) ==
        1) {
      for (int i = 0; i < count; i++) /* kept in place where they pass */
        if (cached_choice_ok(&cached[i])) cached[cached_count++] = cached[i];
      snprintf(cached_id, sizeof cached_id, "%s", ctx->plan_cache_id);
      snprintf(note, note_size, "plan cache %s: %d choices read", path, cached_count);
    }
  }
  pthread_mutex_unlock(&conv_choice_lock);
}

/* The plan cache's choice for key (the device's first) into *c, where it holds one that ctx
   may take (the table is its device's identity's); under conv_choice_lock. */
static int cached_choice(const gpu_context* ctx, const int* key, conv_choice* c) {
  if (!ctx->plan_cache_id[0] || ctx->plan != TTP_PLAN_MEASURE ||
      strcmp(cached_id, ctx->plan_cache_id) != 0)
    return 0;
  for (int i = 0; i < cached_count; i++)
    if (memcmp(cached[i].key, key + 1, sizeof cached[i].key) == 0) {
      memcpy(c->key, key, sizeof c->key);
      c->algo = (cudnnConvolutionFwdAlgo_t)cached[i].algo;
      c->math = (cudnnMathType_t)cached[i].math;
      c->ms = cached[i].ms, c->from_cache = 1, c->measured = 1;
      return 1;
    }
  return 0;
}

void gpu_plan_cache_write(const gpu_context* ctx, const char* path, char* note,
                          size_t note_size) {
  note[0] = '\0';
  const char* id = ctx->plan_cache_id; /* gpu_plan_cache_read's: "" where no cache applies */
  if (!path || !id[0]) return;
  static plan_entry entries[PLAN_MAX];
  pthread_mutex_lock(&conv_choice_lock);
  if (conv_choices_unsaved) {
    /* this device's measured choices, then the file's others (when it was this identity's) */
    int count = 0;
    for (int i = 0; i < conv_choice_count && count < PLAN_MAX; i++)
      if (conv_choices[i].key[0] == ctx->choice_device && conv_choices[i].measured) {
        memcpy(entries[count].key, conv_choices[i].key + 1, sizeof entries[count].key);
        entries[count].algo = (int)conv_choices[i].algo;
        entries[count].math = (int)conv_choices[i].math;
        entries[count].ms = conv_choices[i].ms;
        count++;
      }
    const int mine = count;
    for (int i = 0; i < cached_count && count < PLAN_MAX && strcmp(cached_id, id) == 0; i++) {
      int known = 0;
      for (int k = 0; k < mine && !known; k++)
        known = memcmp(entries[k].key, cached[i].key, sizeof cached[i].key) == 0;
      if (!known) entries[count++] = cached[i];
    }
    if (plan_cache_write(path, id, entries, count, note, note_size) == 0) {
      conv_choices_unsaved = 0;
      memcpy(cached, entries, (size_t)count * sizeof *entries);
      cached_count = count;
      snprintf(cached_id, sizeof cached_id, "%s", id);
    }
  }
  pthread_mutex_unlock(&conv_choice_lock);
}

/* Whether a convolution of math type m runs on the tensor cores. */
static int on_tensor_cores(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

static int usable(const gpu_context* ctx, const gpu_layer* L,
                  const cudnnConvolutionFwdAlgoPerf_t* p, size_t* workspace) {
  int tensor_cores = on_tensor_cores(p->mathType);
  /* Implicit GEMM only: each output is a plain sum of products, accumulated in fp32, whatever
     the batch. FFT and Winograd round through transforms (in fp16, errors of 1e-2 relative were
     seen on conv2) and their kernels may differ with the batch size, so the bits would too. */
  int implicit_gemm = p->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
                      p->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  if (p->status != CUDNN_STATUS_SUCCESS || !implicit_gemm || (!ctx->tensor_cores && tensor_cores))
    return 0;
  *workspace = 0;
  for (int b = 0; b < ctx->buckets; b++) {
    size_t need;
    if (gpu_libs.cudnnGetConvolutionForwardWorkspaceSize(
            ctx->dnn, L->x[b], L->filter, L->conv, L->y[b], p->algo, &need) != CUDNN_STATUS_SUCCESS)
      return 0;
    if (need > *workspace) *workspace = need;
  }
  return 1;
}

/* Measures (or ranks) the algorithms at the canonical batch and picks one (see above). */
static ttp_status find_conv_algo(gpu_context* ctx, gpu_layer* L, conv_choice* pick, ttp_err* e) {
  const model_layer* l = L->l;
  cudnnTensorDescriptor_t x = NULL, y = NULL;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  cudnnStatus_t st = gpu_libs.cudnnCreateTensorDescriptor(&x);
  if (st == CUDNN_STATUS_SUCCESS) st = gpu_libs.cudnnCreateTensorDescriptor(&y);
  if (st == CUDNN_STATUS_SUCCESS)
    st = gpu_libs.cudnnSetTensor4dDescriptor(x, ctx->format, ctx->dnn_type, ctx->canonical_rows,
                                             L->x_shape.c, L->x_shape.h, L->x_shape.w);
  if (st == CUDNN_STATUS_SUCCESS)
    st = gpu_libs.cudnnSetTensor4dDescriptor(y, ctx->format, ctx->dnn_type, ctx->canonical_rows,
                                             l->out.c, l->out.h, l->out.w);
  const int measure = ctx->plan == TTP_PLAN_MEASURE;
  const char* call = measure ? "cudnnFindConvolutionForwardAlgorithm"
                             : "cudnnGetConvolutionForwardAlgorithm_v7";
  if (st == CUDNN_STATUS_SUCCESS && measure)
    st = gpu_libs.cudnnFindConvolutionForwardAlgorithm(
        ctx->dnn, x, L->filter, L->conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf);
  else if (st == CUDNN_STATUS_SUCCESS)
    st = gpu_libs.cudnnGetConvolutionForwardAlgorithm_v7(
        ctx->dnn, x, L->filter, L->conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf);
  if (x) gpu_libs.cudnnDestroyTensorDescriptor(x);
  if (y) gpu_libs.cudnnDestroyTensorDescriptor(y);
  if (st != CUDNN_STATUS_SUCCESS)
    return ERR(e, TTP_ERR_CUDNN, "layer %s: %s: %s", l->name, call,
               gpu_libs.cudnnGetErrorString(st));
  const cudnnConvolutionFwdAlgoPerf_t* best = NULL;
  size_t workspace;
  for (int i = 0; i < found && !best; i++) /* sorted by time, or by the heuristic's rank */
    if (usable(ctx, L, &perf[i], &workspace)) best = &perf[i];
  if (!best) { /* what cuDNN offered, for the message */
    char offered[160] = "";
    for (int i = 0, n = 0; i < found && i < 4 && n >= 0 && (size_t)n < sizeof offered; i++)
      n += snprintf(offered + n, sizeof offered - n, "%s%d (%s, math %d)", i ? ", " : "",
                    (int)perf[i].algo, gpu_libs.cudnnGetErrorString(perf[i].status),
                    (int)perf[i].mathType);
    return ERR(e, TTP_ERR_CUDNN, "layer %s: no convolution algorithm serves every batch bucket "
               "(cuDNN offered algorithms %s)", l->name, found ? offered : "none");
  }
  const cudnnConvolutionFwdAlgoPerf_t* chosen = best;
  for (int i = 0; i < found && measure; i++)
    if (perf[i].time <= 1.1f * best->time && perf[i].algo < chosen->algo &&
        usable(ctx, L, &perf[i], &workspace))
      chosen = &perf[i];
  pick->algo = chosen->algo;
  pick->math = chosen->mathType;
  pick->ms = measure ? chosen->time : -1.0f; /* the heuristic times nothing */
  return TTP_OK;
}

/* The convolution of n rows as conv_kernels.h reads it. */
static gpu_conv_shape own_shape(const gpu_context* ctx, const gpu_layer* L, int n) {
  (void)ctx;
  const model_layer* l = L->l;
  const model_window* w = &l->p.conv.w;
  return (gpu_conv_shape){n, l->in.h, l->in.w, L->x_shape.c, l->out.h, l->out.w, l->p.conv.k, w->r,
                          w->s, w->stride_h, w->stride_w, w->pad_t, w->pad_l, w->dil_h, w->dil_w};
}

/* The activation convolution L applies in its epilogue (none: the whole range). */
static gpu_clamp clamp_of(const gpu_layer* L) {
  return L->fused_act ? L->clamp : (gpu_clamp){-INFINITY, INFINITY};
}

/* Whether that activation is a plain ReLU, which cuDNN's fused call can apply. */
static int clamp_is_relu(const gpu_layer* L) {
  return L->fused_act && L->clamp.lo == 0.0f && L->clamp.hi == INFINITY;
}

/* ", + ReLU" or ", + clamp to [lo, hi]" after a layer's details (at: its end), or nothing. */
static void describe_clamp(const gpu_layer* L, char* at, size_t room) {
  if (!L->fused_act) return;
  if (clamp_is_relu(L)) snprintf(at, room, ", + ReLU");
  else snprintf(at, room, ", + clamp to [%g, %g]", L->clamp.lo, L->clamp.hi);
}

/* ttapipe's NHWC convolution (conv_kernels.h) where the engine ran faster with it than with
   cuDNN's (ResNet-20, fp16, one A/B call: BENCHMARKS.md): 1x1 windows, and windows of stride 1
   over maps 32 or more columns wide. On the narrower maps and the strided 3x3 windows the
   convolutions cuDNN picks in the engine are faster, though not the ones bench_conv_lab times
   beside ours. One group; it pads unevenly by itself. */
static int own_conv_suits(const gpu_context* ctx, const gpu_layer* L) {
  const model_layer* l = L->l;
  const model_window* w = &l->p.conv.w;
  if (l->p.conv.groups > 1) return 0;
  const int suited = (w->r == 1 && w->s == 1) ||
                     (w->stride_h == 1 && w->stride_w == 1 && l->out.w >= 32);
  const gpu_conv_shape s = own_shape(ctx, L, ctx->rows[ctx->buckets - 1]);
  return suited && gpu_conv_nhwc_takes(&s, ctx->half);
}

/* One of ttapipe's own kernels for convolution L: its weights, laid out for the kernel in
   host floats (count of them), go up in the engine's type and are freed; its bias goes up in
   fp32 (the kernels add it to their fp32 sums); `what` names the kernel in the layer's
   details. */
static ttp_status own_conv_upload(gpu_context* ctx, gpu_layer* L, float* weights, size_t count,
                                  const char* what, ttp_err* e) {
  const model_layer* l = L->l;
  ttp_status s = upload(ctx, weights, count, &L->weights, e);
  free(weights);
  TRY(s);
  if (l->bias) TRY(upload_fp32(ctx, l->bias, l->bias_count, &L->bias, e));
  const int n = snprintf(L->algo, sizeof L->algo, "%s%s", what,
                         L->residual ? ", + residual" : "");
  if (n > 0 && (size_t)n < sizeof L->algo) describe_clamp(L, L->algo + n, sizeof L->algo - n);
  return TTP_OK;
}

static ttp_status own_conv_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  const model_layer* l = L->l;
  const int k = l->p.conv.k, r = l->p.conv.w.r, t = l->p.conv.w.s;
  const int c = gpu_conv_nhwc_window_channels(L->x_shape.c, ctx->half);
  const size_t count = gpu_conv_weights_count(k, c, r, t);
  float* rsck = malloc(count * sizeof *rsck);
  if (!rsck) return ERR_NOMEM(e, count * sizeof *rsck);
  gpu_conv_weights(l->weights, k, l->in.c, r, t, c, ctx->half, rsck); /* past the model's: 0 */
  char what[160];
  const char* type = ctx->half ? "fp16" : "TF32 tensor cores";
  if (L->folded) /* its convolution's details name it */
    snprintf(what, sizeof what, "in a later convolution's kernel (its output kept in shared "
             "memory)");
  else if (L->middle)
    snprintf(what, sizeof what, "ttapipe's NHWC inverted residual block (fp16), after %s and %s "
             "in the same kernel", L->first->l->name, L->middle->l->name);
  else if (L->first)
    snprintf(what, sizeof what, "ttapipe's NHWC residual block (fp16), after %s in the same kernel",
             L->first->l->name);
  else
    snprintf(what, sizeof what, "ttapipe's NHWC convolution (%s)", type);
  return own_conv_upload(ctx, L, rsck, count, what, e);
}

int gpu_depthwise_suits(const model_layer* l) {
  return l->op == MODEL_CONV && l->p.conv.groups == l->in.c && l->p.conv.k == l->in.c &&
         l->in.c % 8 == 0;
}

/* ttapipe's depthwise kernel (depthwise_kernel.h): it pads by itself, unevenly too. */
static ttp_status depthwise_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  const model_layer* l = L->l;
  const int c = l->in.c, r = l->p.conv.w.r, t = l->p.conv.w.s;
  const size_t count = (size_t)c * r * t;
  float* rsc = malloc(count * sizeof *rsc);
  if (!rsc) return ERR_NOMEM(e, count * sizeof *rsc);
  gpu_depthwise_weights(l->weights, c, r, t, rsc);
  return own_conv_upload(ctx, L, rsc, count,
                         L->folded ? "in the next convolution's kernel (its output kept in "
                                     "shared memory)"
                         : ctx->half ? "ttapipe's NHWC fp16 depthwise convolution"
                                     : "ttapipe's NHWC fp32 depthwise convolution", e);
}

static ttp_status conv_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  const model_layer* l = L->l;
  const model_window* w = &l->p.conv.w;
  const int groups = l->p.conv.groups ? l->p.conv.groups : 1; /* 0: one, as model.h reads it */
  L->x_shape = l->in;
  L->depthwise = ctx->nhwc && gpu_depthwise_suits(l);
  if (L->depthwise) return depthwise_plan(ctx, L, e);
  if (L->input_c) L->x_shape.c = L->input_c; /* zero channels past the model's: zero weights */
  L->own = ctx->nhwc && (L->folded || L->first || own_conv_suits(ctx, L));
  if (L->own) return own_conv_plan(ctx, L, e);
  /* cuDNN pads the same above as below and left as right; other padding (TensorFlow's "same"
     of a stride 2) is written out first into the scratch buffer, and the convolution then pads
     nothing. */
  L->explicit_pad = w->pad_t != w->pad_b || w->pad_l != w->pad_r;
  int pad_h = w->pad_t, pad_w = w->pad_l;
  if (L->explicit_pad) {
    L->x_shape.h += w->pad_t + w->pad_b, L->x_shape.w += w->pad_l + w->pad_r;
    pad_h = pad_w = 0;
    const size_t need = (size_t)ctx->rows[ctx->buckets - 1] * model_shape_size(L->x_shape) *
                        ctx->elem;
    if (need > ctx->scratch_size) ctx->scratch_size = need;
  }
  TRY(plan_tensors(ctx, L, L->x_shape, e));
  float* krsc = NULL;
  const int c = L->x_shape.c / groups;
  if (ctx->nhwc && !(krsc = reordered(l, l->p.conv.k, l->in.c / groups, w->r, w->s, c, e)))
    return e->status; /* recorded by reordered */
  ttp_status up = upload_weights(ctx, L, krsc, (size_t)l->p.conv.k * c * w->r * w->s, e);
  free(krsc);
  TRY(up);
  CUDNN_TRY(e, gpu_libs.cudnnCreateFilterDescriptor(&L->filter));
  CUDNN_TRY(e, gpu_libs.cudnnSetFilter4dDescriptor(L->filter, ctx->dnn_type, ctx->format,
                                                   l->p.conv.k, c, w->r, w->s));
  CUDNN_TRY(e, gpu_libs.cudnnCreateConvolutionDescriptor(&L->conv));
  CUDNN_TRY(e, gpu_libs.cudnnSetConvolution2dDescriptor(L->conv, pad_h, pad_w, w->stride_h,
                                                        w->stride_w, w->dil_h, w->dil_w,
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_TRY(e, gpu_libs.cudnnSetConvolutionGroupCount(L->conv, groups));
  /* fp32 stays on FMA math: cuDNN's default math would allow TF32 on this hardware. tf32 asks
     for it (fp32 data on tensor-core math is TF32). */
  CUDNN_TRY(e, gpu_libs.cudnnSetConvolutionMathType(
                   L->conv, ctx->tensor_cores ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  conv_choice pick = {.key = {ctx->choice_device, ctx->nhwc, (int)ctx->precision,
                              ctx->canonical_rows, L->x_shape.c, L->x_shape.h, L->x_shape.w,
                              l->p.conv.k, w->r, w->s, w->stride_h, w->stride_w, pad_h, pad_w,
                              w->dil_h, w->dil_w, groups}};
  ttp_status s = TTP_OK;
  int remembered = 0;
  pthread_mutex_lock(&conv_choice_lock);
  for (int i = 0; i < conv_choice_count && !remembered; i++)
    if (memcmp(conv_choices[i].key, pick.key, sizeof pick.key) == 0) {
      pick = conv_choices[i];
      remembered = 1;
    }
  if (!remembered && cached_choice(ctx, pick.key, &pick)) {
    if (conv_choice_count < MAX_CONV_CHOICES) conv_choices[conv_choice_count++] = pick;
  } else if (!remembered) {
    s = find_conv_algo(ctx, L, &pick, e);
    pick.measured = ctx->plan == TTP_PLAN_MEASURE;
    if (s == TTP_OK && conv_choice_count < MAX_CONV_CHOICES) {
      conv_choices[conv_choice_count++] = pick;
      if (pick.measured) conv_choices_unsaved = 1;
    }
  }
  pthread_mutex_unlock(&conv_choice_lock);
  if (s != TTP_OK) return s;
  size_t workspace = 0;
  cudnnConvolutionFwdAlgoPerf_t as_perf = {.algo = pick.algo, .status = CUDNN_STATUS_SUCCESS,
                                           .mathType = pick.math};
  if (ctx->tensor_cores) CUDNN_TRY(e, gpu_libs.cudnnSetConvolutionMathType(L->conv, pick.math));
  const char* note = "";
  if (!usable(ctx, L, &as_perf, &workspace)) {
    /* Buckets larger than the remembered pick can serve: this pipeline picks for itself, and
       its bits may differ from the process's other pipelines. */
    TRY(find_conv_algo(ctx, L, &pick, e));
    if (ctx->tensor_cores) CUDNN_TRY(e, gpu_libs.cudnnSetConvolutionMathType(L->conv, pick.math));
    as_perf.algo = pick.algo, as_perf.mathType = pick.math;
    usable(ctx, L, &as_perf, &workspace);
    note = ", own pick for these large buckets";
  }
  L->conv_algo = pick.algo;
  L->conv_math = ctx->tensor_cores ? pick.math : CUDNN_FMA_MATH;
  if (workspace > ctx->conv_workspace_size) ctx->conv_workspace_size = workspace;
  /* The bias, the residual and the ReLU in cuDNN's fused call (one pass over the output instead
     of two) where it takes them: it needs a bias, applies no clamp but the ReLU, and runs the
     identity activation with the precomputed implicit GEMM alone. Not for grouped
     convolutions, which it ran slower than the convolution and ttapipe's epilogue
     (BENCHMARKS.md). In fp16 it rounds differently at
     another batch size (seen on a LeNet-shaped chain): a chain keeps the epilogue kernel there,
     one source of differing bits fewer; graph networks in fp16 are held to the tolerance across
     batch sizes already. */
  int at;
  const int chain = !ctx->m || model_is_chain(ctx->m, &at);
  L->fused_epilogue =
      l->bias && groups == 1 && !(ctx->half && chain) && (!L->fused_act || clamp_is_relu(L)) &&
      (L->fused_act || pick.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  if (L->fused_epilogue) {
    CUDNN_TRY(e, gpu_libs.cudnnCreateTensorDescriptor(&L->bias_desc));
    CUDNN_TRY(e, gpu_libs.cudnnSetTensor4dDescriptor(L->bias_desc, ctx->format, ctx->dnn_type, 1,
                                                     l->p.conv.k, 1, 1));
    CUDNN_TRY(e, gpu_libs.cudnnCreateActivationDescriptor(&L->act));
    CUDNN_TRY(e, gpu_libs.cudnnSetActivationDescriptor(
                     L->act, L->fused_act ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                     CUDNN_PROPAGATE_NAN, 0.0));
  }
  int tensor_cores = on_tensor_cores(pick.math);
  char timed[80] = "cuDNN's heuristic, not timed";
  if (pick.ms >= 0)
    snprintf(timed, sizeof timed, "%.3f ms at %d rows%s", pick.ms, ctx->canonical_rows,
             pick.from_cache ? " (from the plan cache)" : "");
  const int n = snprintf(L->algo, sizeof L->algo, "%s%s, %s%s%s",
                         (unsigned)pick.algo < sizeof conv_algo_names / sizeof *conv_algo_names
                             ? conv_algo_names[pick.algo] : "algorithm ?",
                         tensor_cores ? " (tensor cores)" : "", timed, note,
                         L->residual ? ", + residual" : "");
  if (n > 0 && (size_t)n < sizeof L->algo) {
    describe_clamp(L, L->algo + n, sizeof L->algo - n);
    const size_t used = strlen(L->algo);
    if (L->fused_epilogue) snprintf(L->algo + used, sizeof L->algo - used, " (cuDNN's fused call)");
  }
  return TTP_OK;
}

/* in[1]: the residual z when L->residual. */
static ttp_status conv_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                               const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  const void* x = in[0];
  const void* z = L->residual ? in[1] : NULL;
  if (L->middle) { /* in[0]: the expansion's input, which the residual z is too */
    const gpu_inverted_shape s = {ctx->rows[b], L->first->l->in.h, L->first->l->in.w,
                                  L->first->l->in.c, l->in.c, l->p.conv.k,
                                  L->middle->l->p.conv.w.stride_h};
    const gpu_inverted_block block = {L->first->weights, L->middle->weights, L->weights,
                                      L->first->bias, L->middle->bias, L->bias,
                                      clamp_of(L->first), clamp_of(L->middle), clamp_of(L),
                                      L->residual};
    return gpu_inverted_nhwc(x, out, &s, &block, ctx->stream, e);
  }
  if (L->first) { /* in[0]: the first convolution's input, which the residual z is too */
    const gpu_conv_shape s = own_shape(ctx, L, ctx->rows[b]);
    return gpu_conv_block_nhwc(x, L->first->weights, L->first->bias, clamp_of(L->first),
                               L->weights, L->bias, clamp_of(L), L->residual, out, &s,
                               ctx->stream, e);
  }
  if (L->own || L->depthwise) {
    const gpu_conv_shape s = own_shape(ctx, L, ctx->rows[b]);
    return (L->own ? gpu_conv_nhwc : gpu_depthwise_nhwc)(x, L->weights, L->bias, z, out, &s,
                                                         clamp_of(L), ctx->half, ctx->stream,
                                                         e);
  }
  if (L->explicit_pad) {
    const model_window* w = &l->p.conv.w;
    TRY(gpu_window_copy(x, dims(ctx, l->in), ctx->scratch, dims(ctx, L->x_shape),
                        (size_t)ctx->rows[b], 0, -w->pad_t, -w->pad_l, 1, 1, 0.0f, ctx->half,
                        ctx->stream, e));
    x = ctx->scratch;
  }
  if (L->fused_epilogue) { /* y = act(conv + alpha2 z + bias); z unread when alpha2 is 0 */
    const float alpha2 = z ? 1.0f : 0.0f;
    CUDNN_TRY(e, gpu_libs.cudnnConvolutionBiasActivationForward(
                     ctx->dnn, &one, L->x[b], x, L->filter, L->weights, L->conv, L->conv_algo,
                     ctx->conv_workspace, ctx->conv_workspace_size, &alpha2, L->y[b], z ? z : out,
                     L->bias_desc, L->bias, L->act, L->y[b], out));
    return TTP_OK;
  }
  CUDNN_TRY(e, gpu_libs.cudnnConvolutionForward(ctx->dnn, &one, L->x[b], x, L->filter, L->weights,
                                                L->conv, L->conv_algo, ctx->conv_workspace,
                                                ctx->conv_workspace_size, &zero, L->y[b], out));
  if (!L->bias && !z && !L->fused_act) return TTP_OK;
  return gpu_epilogue(out, L->bias, z, clamp_of(L), (size_t)ctx->rows[b], dims(ctx, l->out),
                      ctx->half, ctx->stream, e);
}

/* Convolution L for bucket b on hashed input (the same first rows in every bucket) into
   probe->y[b]. */
static ttp_status probe_bucket(const gpu_context* ctx, const gpu_layer* L,
                               const gpu_conv_probe* probe, int b, ttp_err* e) {
  const model_layer* l = L->l;
  const size_t row = (size_t)(L->input_c ? L->input_c : l->in.c) * l->in.h * l->in.w;
  TRY(gpu_fill_hashed(probe->x[b], (size_t)ctx->rows[b] * row, ctx->half, 1, ctx->stream, e));
  const void* in[1] = {probe->x[b]};
  return conv_enqueue(ctx, L, b, in, probe->y[b], e);
}

/* How many bytes of each smaller bucket's first rows (up to probe->ref_rows) differ from the
   same rows of the largest bucket, into *count. Waits for the result. */
static ttp_status rows_differing(const gpu_context* ctx, const gpu_layer* L,
                                 const gpu_conv_probe* probe, unsigned* count, ttp_err* e) {
  const size_t row = model_shape_size(L->l->out) * ctx->elem;
  const int last = ctx->buckets - 1;
  *count = 0;
  TRY(probe_bucket(ctx, L, probe, last, e));
  CUDA_TRY(e, cudaMemcpyAsync(probe->ref, probe->y[last], (size_t)probe->ref_rows * row,
                              cudaMemcpyDeviceToDevice, ctx->stream));
  CUDA_TRY(e, cudaMemsetAsync(probe->differ, 0, sizeof *probe->differ, ctx->stream));
  for (int b = 0; b < last; b++) {
    TRY(probe_bucket(ctx, L, probe, b, e));
    const int rows = ctx->rows[b] < probe->ref_rows ? ctx->rows[b] : probe->ref_rows;
    TRY(gpu_count_differing(probe->ref, probe->y[b], (size_t)rows * row, probe->differ,
                            ctx->stream, e));
  }
  CUDA_TRY(e, cudaMemcpyAsync(count, probe->differ, sizeof *count, cudaMemcpyDeviceToHost,
                              ctx->stream));
  CUDA_TRY(e, cudaStreamSynchronize(ctx->stream));
  return TTP_OK;
}

ttp_status gpu_conv_check(const gpu_context* ctx, gpu_layer* L, const gpu_conv_probe* probe,
                          int* checked, ttp_err* e) {
  if (L->l->op != MODEL_CONV || L->own || L->depthwise || L->residual || ctx->buckets < 2 ||
      !on_tensor_cores(L->conv_math))
    return TTP_OK;
  (*checked)++;
  unsigned count = 0;
  TRY(rows_differing(ctx, L, probe, &count, e));
  const size_t used = strlen(L->algo);
  if (count)
    snprintf(L->algo + used, sizeof L->algo - used, "; its rows round differently by bucket");
  return TTP_OK;
}

/* ---- maxpool, relu, lrn, softmax ----------------------------------------------------------- */

static ttp_status pool_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  (void)ctx, (void)e;
  snprintf(L->algo, sizeof L->algo, "ttapipe's pooling kernel");
  return TTP_OK;
}

static ttp_status pool_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                               const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  const model_window* w = &l->p.pool.w;
  const gpu_window win = {w->r, w->s, w->stride_h, w->stride_w, w->pad_t, w->pad_l, w->pad_b,
                          w->pad_r};
  return gpu_pool(l->op == MODEL_MAXPOOL, l->p.pool.count_pad, in[0], dims(ctx, l->in), out,
                  dims(ctx, l->out), (size_t)ctx->rows[b], win, ctx->half, ctx->stream, e);
}

static ttp_status pointwise_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  (void)ctx, (void)e;
  snprintf(L->algo, sizeof L->algo, "ttapipe's pointwise kernel");
  return TTP_OK;
}

static ttp_status pointwise_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                                    const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  gpu_pointwise_op op;
  float x = 0, y = 0;
  switch (l->op) {
    case MODEL_RELU: op = GPU_RELU; break;
    case MODEL_LEAKY_RELU: op = GPU_LEAKY_RELU, x = l->p.leaky.alpha; break;
    case MODEL_SIGMOID: op = GPU_SIGMOID; break;
    case MODEL_TANH: op = GPU_TANH; break;
    case MODEL_CLIP: op = GPU_CLIP, x = l->p.clip.lo, y = l->p.clip.hi; break;
    case MODEL_HARDSWISH: op = GPU_HARDSWISH; break;
    case MODEL_HARDSIGMOID: op = GPU_HARDSIGMOID, x = l->p.hard.alpha, y = l->p.hard.beta; break;
    case MODEL_GELU: op = GPU_GELU; break;
    case MODEL_ERF: op = GPU_ERF; break;
    case MODEL_ELU: op = GPU_ELU, x = l->p.elu.alpha; break;
    case MODEL_SOFTPLUS: op = GPU_SOFTPLUS; break;
    default: op = GPU_MISH; break;
  }
  return gpu_pointwise(op, x, y, in[0], out, (size_t)ctx->rows[b] * model_shape_size(l->in),
                       ctx->half, ctx->stream, e);
}

/* ---- the layers of graphs: elementwise, affine, prelu, concat, slice, pad, shuffle, reshape -- */

static ttp_status own_kernel_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  (void)ctx, (void)e;
  snprintf(L->algo, sizeof L->algo, "ttapipe's kernel");
  return TTP_OK;
}

static ttp_status elementwise_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  const model_layer* l = L->l;
  for (int k = 1; k < l->input_count; k++) {
    const model_shape s = model_value_shape(ctx->m, l->inputs[k]);
    L->spread[k] = model_shape_size(s) == model_shape_size(l->out) ? GPU_EVERY
                   : s.c == 1 && l->out.c > 1                     ? GPU_PER_ROW
                                                                  : GPU_PER_CHANNEL;
  }
  return own_kernel_plan(ctx, L, e);
}

static ttp_status elementwise_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                                      const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  gpu_operands x = {.count = l->input_count};
  for (int k = 0; k < l->input_count; k++) x.in[k] = in[k], x.spread[k] = L->spread[k];
  const gpu_binary_op op = l->op == MODEL_ADD ? GPU_ADD : l->op == MODEL_SUB ? GPU_SUB
                           : l->op == MODEL_MUL ? GPU_MUL : GPU_DIV;
  return gpu_elementwise(op, &x, out, (size_t)ctx->rows[b], dims(ctx, l->out), ctx->half,
                         ctx->stream, e);
}

static ttp_status channel_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  TRY(upload_floats(ctx, L, e));
  return own_kernel_plan(ctx, L, e);
}

static ttp_status channel_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                                  const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  return gpu_channel_op(l->op == MODEL_PRELU, in[0], out, L->weights, L->bias,
                        (int)l->weight_count, (size_t)ctx->rows[b], dims(ctx, l->out), ctx->half,
                        ctx->stream, e);
}

/* Each input's channels into theirs of every output row (NCHW) or pixel (NHWC): one strided
   copy an input. */
static ttp_status concat_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                                 const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  const size_t plane = (size_t)l->out.h * l->out.w;
  const size_t unit = ctx->nhwc ? ctx->elem : plane * ctx->elem;   /* a channel's bytes */
  const size_t lines = ctx->nhwc ? ctx->rows[b] * plane : (size_t)ctx->rows[b];
  const size_t line = l->out.c * unit;
  size_t at = 0;
  for (int k = 0; k < l->input_count; k++) {
    const size_t part = model_value_shape(ctx->m, l->inputs[k]).c * unit;
    CUDA_TRY(e, cudaMemcpy2DAsync((char*)out + at, line, in[k], part, part, lines,
                                  cudaMemcpyDeviceToDevice, ctx->stream));
    at += part;
  }
  return TTP_OK;
}

static ttp_status slice_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                                const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  return gpu_window_copy(in[0], dims(ctx, l->in), out, dims(ctx, l->out), (size_t)ctx->rows[b],
                         l->p.slice.c0, l->p.slice.h0, l->p.slice.w0, l->p.slice.step_h,
                         l->p.slice.step_w, 0.0f, ctx->half, ctx->stream, e);
}

static ttp_status pad_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                              const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  return gpu_window_copy(in[0], dims(ctx, l->in), out, dims(ctx, l->out), (size_t)ctx->rows[b],
                         -l->p.pad.c0, -l->p.pad.h0, -l->p.pad.w0, 1, 1, l->p.pad.value,
                         ctx->half, ctx->stream, e);
}

static ttp_status shuffle_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                                  const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  return gpu_shuffle(in[0], out, (size_t)ctx->rows[b], dims(ctx, l->in), l->p.shuffle.groups,
                     ctx->half, ctx->stream, e);
}

/* The same values in the same order (CHW), read as another shape: a copy, or in NHWC where
   either shape has more than one pixel, a reordering. */
static ttp_status reshape_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                                  const void* const* in, void* out, ttp_err* e) {
  const model_layer* l = L->l;
  if (ctx->nhwc && (l->in.h * l->in.w > 1 || l->out.h * l->out.w > 1))
    return gpu_reorder(in[0], dims(ctx, l->in), out, dims(ctx, l->out), (size_t)ctx->rows[b],
                       ctx->half, ctx->stream, e);
  CUDA_TRY(e, cudaMemcpyAsync(out, in[0],
                              (size_t)ctx->rows[b] * model_shape_size(L->l->in) * ctx->elem,
                              cudaMemcpyDeviceToDevice, ctx->stream));
  return TTP_OK;
}

static ttp_status lrn_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  TRY(plan_tensors(ctx, L, L->l->in, e));
  CUDNN_TRY(e, gpu_libs.cudnnCreateLRNDescriptor(&L->lrn));
  CUDNN_TRY(e, gpu_libs.cudnnSetLRNDescriptor(L->lrn, (unsigned)L->l->p.lrn.n, L->l->p.lrn.alpha,
                                              L->l->p.lrn.beta, L->l->p.lrn.k));
  return TTP_OK;
}

static ttp_status lrn_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                              const void* const* in, void* out, ttp_err* e) {
  CUDNN_TRY(e, gpu_libs.cudnnLRNCrossChannelForward(ctx->dnn, L->lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1,
                                                    &one, L->x[b], in[0], &zero, L->y[b], out));
  return TTP_OK;
}

static ttp_status softmax_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  return plan_tensors(ctx, L, L->l->in, e);
}

static ttp_status softmax_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                                  const void* const* in, void* out, ttp_err* e) {
  CUDNN_TRY(
      e, gpu_libs.cudnnSoftmaxForward(ctx->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                      &one, L->x[b], in[0], &zero, L->y[b], out));
  return TTP_OK;
}

/* ---- fc ---------------------------------------------------------------------------------- */

/* ttapipe's fc kernel (fc_kernel.h), with the ReLU, Clip or residual Add that follows it
   (conv_unit) in its epilogue. An NHWC input of more than one pixel lies in (h x w x c) order and
   reads the weights reordered so. */
static ttp_status fc_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  const model_layer* l = L->l;
  const int in = (int)model_shape_size(l->in), out = l->p.fc.out;
  const size_t count = (size_t)in * out;
  const float* model_order = l->weights;
  float* nhwc = NULL;
  if (ctx->nhwc && l->in.h * l->in.w > 1) {
    if (!(nhwc = reordered(l, out, l->in.c, l->in.h, l->in.w, l->in.c, e)))
      return e->status; /* recorded by reordered */
    model_order = nhwc;
  }
  float* weights = malloc(count * sizeof *weights);
  if (weights) gpu_fc_weights(model_order, in, out, weights);
  free(nhwc);
  if (!weights) return ERR_NOMEM(e, count * sizeof *weights);
  return own_conv_upload(ctx, L, weights, count, "ttapipe's fc kernel (fp32 multiply-adds)", e);
}

static ttp_status fc_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                             const void* const* in, void* out, ttp_err* e) {
  return gpu_fc(in[0], L->weights, L->bias, L->residual ? in[1] : NULL, out, ctx->rows[b],
                (int)model_shape_size(L->l->in), L->l->p.fc.out, clamp_of(L), ctx->half,
                GPU_FC_ANY, ctx->stream, e);
}

/* ---- the table --------------------------------------------------------------------------- */

typedef struct gpu_layer_ops {
  ttp_status (*plan)(gpu_context* ctx, gpu_layer* L, ttp_err* e);
  ttp_status (*enqueue)(const gpu_context* ctx, const gpu_layer* L, int b, const void* const* in,
                        void* out, ttp_err* e);
} gpu_layer_ops;

static const gpu_layer_ops gpu_layer_table[MODEL_OP_COUNT] = {
    [MODEL_CONV] = {conv_plan, conv_enqueue},
    [MODEL_MAXPOOL] = {pool_plan, pool_enqueue},
    [MODEL_AVGPOOL] = {pool_plan, pool_enqueue},
    [MODEL_FC] = {fc_plan, fc_enqueue},
    [MODEL_LRN] = {lrn_plan, lrn_enqueue},
    [MODEL_SOFTMAX] = {softmax_plan, softmax_enqueue},
    [MODEL_RELU] = {pointwise_plan, pointwise_enqueue},
    [MODEL_LEAKY_RELU] = {pointwise_plan, pointwise_enqueue},
    [MODEL_SIGMOID] = {pointwise_plan, pointwise_enqueue},
    [MODEL_TANH] = {pointwise_plan, pointwise_enqueue},
    [MODEL_CLIP] = {pointwise_plan, pointwise_enqueue},
    [MODEL_HARDSWISH] = {pointwise_plan, pointwise_enqueue},
    [MODEL_HARDSIGMOID] = {pointwise_plan, pointwise_enqueue},
    [MODEL_GELU] = {pointwise_plan, pointwise_enqueue},
    [MODEL_ERF] = {pointwise_plan, pointwise_enqueue},
    [MODEL_ELU] = {pointwise_plan, pointwise_enqueue},
    [MODEL_SOFTPLUS] = {pointwise_plan, pointwise_enqueue},
    [MODEL_MISH] = {pointwise_plan, pointwise_enqueue},
    [MODEL_ADD] = {elementwise_plan, elementwise_enqueue},
    [MODEL_SUB] = {elementwise_plan, elementwise_enqueue},
    [MODEL_MUL] = {elementwise_plan, elementwise_enqueue},
    [MODEL_DIV] = {elementwise_plan, elementwise_enqueue},
    [MODEL_AFFINE] = {channel_plan, channel_enqueue},
    [MODEL_PRELU] = {channel_plan, channel_enqueue},
    [MODEL_CONCAT] = {own_kernel_plan, concat_enqueue},
    [MODEL_SLICE] = {own_kernel_plan, slice_enqueue},
    [MODEL_PAD] = {own_kernel_plan, pad_enqueue},
    [MODEL_SHUFFLE] = {own_kernel_plan, shuffle_enqueue},
    [MODEL_RESHAPE] = {own_kernel_plan, reshape_enqueue},
};

ttp_status gpu_layer_plan(gpu_context* ctx, gpu_layer* L, ttp_err* e) {
  return gpu_layer_table[L->l->op].plan(ctx, L, e);
}

ttp_status gpu_layer_enqueue(const gpu_context* ctx, const gpu_layer* L, int b,
                             const void* const* in, void* out, ttp_err* e) {
  return gpu_layer_table[L->l->op].enqueue(ctx, L, b, in, out, e);
}

void gpu_layer_destroy(gpu_layer* L) {
  for (int b = 0; b < GPU_MAX_BUCKETS; b++) {
    if (L->x[b]) gpu_libs.cudnnDestroyTensorDescriptor(L->x[b]);
    if (L->y[b]) gpu_libs.cudnnDestroyTensorDescriptor(L->y[b]);
  }
  if (L->filter) gpu_libs.cudnnDestroyFilterDescriptor(L->filter);
  if (L->conv) gpu_libs.cudnnDestroyConvolutionDescriptor(L->conv);
  if (L->lrn) gpu_libs.cudnnDestroyLRNDescriptor(L->lrn);
  if (L->bias_desc) gpu_libs.cudnnDestroyTensorDescriptor(L->bias_desc);
  if (L->act) gpu_libs.cudnnDestroyActivationDescriptor(L->act);
  cudaFree(L->weights);
  cudaFree(L->bias);
  memset(L, 0, sizeof *L);
}
