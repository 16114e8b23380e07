/* The fused engine (see fused_engine.h): the model's shape read into a fused_shape, the weights
   laid out for the kernels, and the launches of a batch (four; one for the smallest). */
#include "fused_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../augment/merge_kernel.h"
#include "../cuda_check.h"

/* ---- the shape it runs -------------------------------------------------------------------------- */

int fused_supports(const model_layer* l, const engine_config* c, char* why, size_t n) {
  (void)c;
  if (!engine_plain_windows(l, why, n)) return 0;
  if (l->op == MODEL_CONV || (l->op == MODEL_MAXPOOL && l->p.pool.w.pad_t == 0) ||
      l->op == MODEL_RELU || l->op == MODEL_FC || l->op == MODEL_LRN || l->op == MODEL_SOFTMAX)
    return 1;
  snprintf(why, n, "no fused kernel for layer %s (%s%s)", l->name, model_op_name(l->op),
           l->op == MODEL_MAXPOOL ? " with padding" : "");
  return 0;
}

#define FUSED_SHAPE_TEXT                                                                      \
  "conv 5x5 -> [relu] -> maxpool 2x2/2 -> conv 5x5 -> [relu] -> maxpool 2x2/2 -> fc -> relu " \
  "-> [lrn] -> fc -> softmax"

typedef struct layer_walk {
  const model* m;
  int i;
  char* why;
  size_t n;
} layer_walk;

/* The next layer if it is of kind op (and steps past it), else NULL. */
static const model_layer* take(layer_walk* w, model_op op) {
  if (w->i >= w->m->layer_count || w->m->layers[w->i].op != op) return NULL;
  return &w->m->layers[w->i++];
}

/* Takes any ReLU layers that come next; returns whether there was one. */
static int take_relus(layer_walk* w) {
  int any = 0;
  while (take(w, MODEL_RELU)) any = 1;
  return any;
}

static int refuse(layer_walk* w, const char* what) {
  if (w->i < w->m->layer_count)
    snprintf(w->why, w->n, "layer %s (%s) where the engine's shape (" FUSED_SHAPE_TEXT ") has %s",
             w->m->layers[w->i].name, model_op_name(w->m->layers[w->i].op), what);
  else
    snprintf(w->why, w->n, "the model ends where the engine's shape (" FUSED_SHAPE_TEXT ") has %s",
             what);
  return 0;
}

/* A 5x5 convolution, stride 1, pad 0..2, then 2x2 stride-2 max-pooling, with their ReLUs. */
static int take_conv_pool(layer_walk* w, int max_k, int* k, int* pad, int* relu, int* conv_h,
                          int* conv_w, int* pool_h, int* pool_w) {
  const model_layer* conv = take(w, MODEL_CONV);
  if (!conv) return refuse(w, "a conv");
  const model_window* cw = &conv->p.conv.w; /* plain (fused_supports) */
  if (cw->r != FUSED_CONV || cw->s != FUSED_CONV || cw->stride_h != 1 ||
      cw->pad_t > FUSED_MAX_PAD || conv->p.conv.k > max_k) {
    snprintf(w->why, w->n, "layer %s: the fused kernels take %dx%d convolutions of stride 1, "
             "padding up to %d and up to %d output channels, not %dx%d stride %d pad %d with %d",
             conv->name, FUSED_CONV, FUSED_CONV, FUSED_MAX_PAD, max_k, cw->r, cw->s, cw->stride_h,
             cw->pad_t, conv->p.conv.k);
    return 0;
  }
  *relu = take_relus(w);
  const model_layer* pool = take(w, MODEL_MAXPOOL);
  if (!pool) return refuse(w, "a maxpool");
  const model_window* pw = &pool->p.pool.w;
  if (pw->r != FUSED_POOL || pw->s != FUSED_POOL || pw->stride_h != FUSED_POOL || pw->pad_t != 0) {
    snprintf(w->why, w->n, "layer %s: the fused kernels take %dx%d max-pooling of stride %d "
             "without padding, not %dx%d stride %d pad %d", pool->name, FUSED_POOL, FUSED_POOL,
             FUSED_POOL, pw->r, pw->s, pw->stride_h, pw->pad_t);
    return 0;
  }
  *relu |= take_relus(w);
  *k = conv->p.conv.k, *pad = cw->pad_t;
  *conv_h = conv->out.h, *conv_w = conv->out.w, *pool_h = pool->out.h, *pool_w = pool->out.w;
  return 1;
}

/* Reads m into s; 0 with why when m is not the engine's shape or exceeds a limit. */
static int shape_of(const model* m, const engine_config* c, fused_shape* s, char* why,
                    size_t n) {
  memset(s, 0, sizeof *s);
  if (c->precision != TTP_PRECISION_FP32 && c->precision != TTP_PRECISION_FP16) {
    snprintf(why, n, "the fused engine runs fp32 and fp16, not %s (the cudnn engine does)",
             ttp_precision_name(c->precision) ? ttp_precision_name(c->precision) : "that precision");
    return 0;
  }
  s->half = c->precision == TTP_PRECISION_FP16;
  if (m->input.c != 1 || m->input.h > FUSED_MAX_INPUT || m->input.w > FUSED_MAX_INPUT) {
    snprintf(why, n, "the fused kernels take one-channel inputs up to %dx%d, not %dx%dx%d",
             FUSED_MAX_INPUT, FUSED_MAX_INPUT, m->input.c, m->input.h, m->input.w);
    return 0;
  }
  if (c->spec.copies > FUSED_MAX_COPIES) {
    snprintf(why, n, "the fused kernels take up to %d copies, not %d", FUSED_MAX_COPIES,
             c->spec.copies);
    return 0;
  }
  s->in_h = m->input.h, s->in_w = m->input.w, s->copies = c->spec.copies;
  layer_walk w = {m, 0, why, n};
  if (!take_conv_pool(&w, FUSED_MAX_K1, &s->k1, &s->pad1, &s->relu1, &s->c1_h, &s->c1_w,
                      &s->p1_h, &s->p1_w) ||
      !take_conv_pool(&w, FUSED_MAX_K2, &s->k2, &s->pad2, &s->relu2, &s->c2_h, &s->c2_w, &s->p2_h,
                      &s->p2_w))
    return 0;
  if (s->p2_h * s->p2_w > FUSED_MAX_P2Q2) {
    snprintf(why, n, "the second pooling's output is %dx%d; the fused kernels take up to %d "
             "positions", s->p2_h, s->p2_w, FUSED_MAX_P2Q2);
    return 0;
  }
  const model_layer* fc1 = take(&w, MODEL_FC);
  if (!fc1) return refuse(&w, "an fc");
  if (!take_relus(&w)) return refuse(&w, "a relu");
  const model_layer* lrn = take(&w, MODEL_LRN);
  const model_layer* fc2 = take(&w, MODEL_FC);
  if (!fc2) return refuse(&w, lrn ? "an fc" : "an lrn or an fc");
  if (!take(&w, MODEL_SOFTMAX)) return refuse(&w, "a softmax");
  if (w.i != m->layer_count) return refuse(&w, "nothing more");
  s->fc_in = (int)model_shape_size(fc1->in), s->fc_out = fc1->p.fc.out;
  s->classes = fc2->p.fc.out;
  if (s->fc_in > FUSED_MAX_FC_IN || s->fc_out > FUSED_MAX_FC1 ||
      s->classes > FUSED_MAX_CLASSES) {
    snprintf(why, n, "the fused kernels take fc layers of up to %d inputs, %d hidden units and "
             "%d classes, not %d, %d and %d", FUSED_MAX_FC_IN, FUSED_MAX_FC1, FUSED_MAX_CLASSES,
             s->fc_in, s->fc_out, s->classes);
    return 0;
  }
  if (lrn) {
    s->lrn = 1, s->lrn_n = lrn->p.lrn.n;
    s->lrn_alpha_n = (float)(lrn->p.lrn.alpha / lrn->p.lrn.n);
    s->lrn_beta = (float)lrn->p.lrn.beta, s->lrn_k = (float)lrn->p.lrn.k;
  } else {
    s->lrn_n = 1;
  }
  return 1;
}

int fused_supports_model(const model* m, const engine_config* c, char* why, size_t n) {
  fused_shape s;
  return shape_of(m, c, &s, why, n);
}

/* ---- the network ---------------------------------------------------------------------------------- */

/* Batches up to this many images run in one launch (fused_small), larger ones in the stages'
   launches: where each was faster on the H100 (GPU time of the pass, bench_small_trace,
   BENCHMARKS.md's latency path, step 4: fp32 26-33 against 45 us at 1 image, 49.7 against 50.3
   at 8; fp16 26.1 against 53.9 at 1, 29.7 against 54.4 at 8, 55.2 against 67.7 at 64). */
static int one_launch_most(const fused_shape* s) { return s->half ? FUSED_SMALL_MAX : 1; }

/* The latency path hands the network its images in mapped pinned host memory (runner.h). Where
   the batch runs in the one launch and has no more copies than SMs, they are copied in first (a
   copy node): stage 1's items then read them from L2, and a batch of one or eight was 1 to 3 us
   faster at p50 than with the items' loads crossing PCIe. Larger ones read the host memory
   themselves: a batch of 64 in fp16 0.071 -> 0.065-0.067 ms p50 (A/B, H100, 2026-11-24,
   BENCHMARKS.md). */
static int copies_input_in(const fused_shape* s, int images) {
  return images <= one_launch_most(s) && images * s->copies <= s->sms;
}

typedef struct fused_net {
  fused_shape s;
  engine_config cfg;
  gpu_buckets buckets;
  cudaStream_t stream; /* where every batch runs */
  float* weights; /* one allocation: fused_weights point into it */
  void* packed;   /* fp16: conv2's and fc1's weights as tensor-core fragments; fp32: fc1's
                     weights in blocks (fused_weights.w3b), or NULL */
  fused_weights w;
  void *act1, *act2;
  uint8_t* small_in; /* the images of the batches that copies_input_in copies in */
  float* hidden; /* fc1's outputs between its GEMM and the rest of stage 3 */
  unsigned long long* sync; /* FUSED_SMALL_SYNC counters per bucket (the small batches' kernel) */
  char details[480];
} fused_net;

/* The model's layers in the order shape_of read them: conv1, conv2, fc1, fc2. */
static void find_weighted(const model* m, const model_layer* out[4]) {
  int k = 0;
  for (int i = 0; i < m->layer_count && k < 4; i++)
    if (m->layers[i].op == MODEL_CONV || m->layers[i].op == MODEL_FC) out[k++] = &m->layers[i];
}

/* A layer's weights [outs][ins] as [ins][pitch] (pitch >= outs; the rest stays zero). */
static void transpose(float* dst, const float* src, int outs, int ins, int pitch) {
  for (int o = 0; o < outs; o++)
    for (int i = 0; i < ins; i++) dst[(size_t)i * pitch + o] = src[(size_t)o * ins + i];
}

/* The weights in the kernels' layouts, and the copies' weights in the merge where the
   augmentation weighs them, copied to the device in one piece. */
static ttp_status upload_weights(fused_net* g, const model* m, ttp_err* e) {
  const fused_shape* s = &g->s;
  const model_layer* l[4];
  find_weighted(m, l);
  const int k2p = fused_k2_pad(s), taps = FUSED_CONV * FUSED_CONV;
  const int k1p = fused_k1_pitch(s);
  const aug_spec* spec = &g->cfg.spec;
  const size_t counts[9] = {(size_t)taps * k1p, (size_t)s->k1, (size_t)s->k1 * taps * k2p,
                            (size_t)s->k2, l[2]->weight_count, (size_t)s->fc_out,
                            l[3]->weight_count, (size_t)s->classes,
                            spec->weighted ? (size_t)spec->copies : 0};
  size_t offsets[10] = {0};
  for (int i = 0; i < 9; i++) offsets[i + 1] = offsets[i] + ((counts[i] + 31) & ~(size_t)31);
  float* host = calloc(offsets[9], sizeof(float));
  if (!host) return ERR_NOMEM(e, offsets[9] * sizeof(float));
  if (spec->weighted) memcpy(host + offsets[8], spec->weights, counts[8] * sizeof(float));
  for (int k = 0; k < 4; k++) {
    float* wdst = host + offsets[2 * k];
    /* conv1 as [tap][output channel] (pitch k1p), conv2 as [input channel][tap][output channel]
       (pitch k2p), fc1 as [in][out]: a warp's lanes or a 16-byte load take consecutive outputs */
    if (k == 0)
      transpose(wdst, l[0]->weights, s->k1, taps, k1p);
    else if (k == 1)
      transpose(wdst, l[1]->weights, s->k2, s->k1 * taps, k2p);
    else if (k == 2)
      transpose(wdst, l[2]->weights, s->fc_out, s->fc_in, s->fc_out);
    else
      memcpy(wdst, l[k]->weights, l[k]->weight_count * sizeof(float));
    if (l[k]->bias) memcpy(host + offsets[2 * k + 1], l[k]->bias, counts[2 * k + 1] * sizeof(float));
  }
  /* On the engine's stream, waited for: a cudaMemcpy from pageable memory may return before its
     data lands, and the legacy default stream does not order the runner's non-blocking stream,
     on which the packing below (fp16's fragments, fp32's fc1 blocks) reads these weights (it
     once packed a half-copied buffer: every result of that pipeline off, none wrong enough to
     notice but by their bits). */
  ttp_status st = gpu_alloc((void**)&g->weights, offsets[9] * sizeof(float),
                            "the fused engine's weights", e);
  cudaError_t err = cudaSuccess;
  if (st == TTP_OK)
    err = cudaMemcpyAsync(g->weights, host, offsets[9] * sizeof(float), cudaMemcpyHostToDevice,
                          g->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(g->stream);
  free(host);
  if (err != cudaSuccess)
    st = ERR(e, TTP_ERR_CUDA, "fused engine weights: %s", cudaGetErrorString(err));
  const float* d = g->weights;
  g->w = (fused_weights){d + offsets[0], d + offsets[1], d + offsets[2], d + offsets[3],
                         d + offsets[4], d + offsets[5], d + offsets[6], d + offsets[7],
                         NULL, NULL, NULL, spec->weighted ? d + offsets[8] : NULL};
  if (st != TTP_OK || fused_packed_bytes(s) == 0) return st;
  TRY(gpu_alloc(&g->packed, fused_packed_bytes(s), "the fused engine's packed weights", e));
  TRY(fused_pack_weights(s, &g->w, g->packed, g->stream, e));
  err = cudaStreamSynchronize(g->stream);
  if (err != cudaSuccess)
    return ERR(e, TTP_ERR_CUDA, "fused engine weights' packing: %s", cudaGetErrorString(err));
  return TTP_OK;
}

static void fused_destroy(void* state) {
  fused_net* g = state;
  if (!g) return;
  cudaStreamSynchronize(g->stream); /* nothing of ours may still run on what is freed */
  cudaFree(g->weights);
  cudaFree(g->packed);
  cudaFree(g->act1);
  cudaFree(g->act2);
  cudaFree(g->small_in);
  cudaFree(g->hidden);
  cudaFree(g->sync);
  free(g);
}

static ttp_status fused_plan(const model* m, const engine_config* c, const gpu_buckets* buckets,
                             cudaStream_t stream, void** out, ttp_err* e) {
  *out = NULL;
  char why[256];
  fused_net* g = calloc(1, sizeof *g);
  if (!g) return ERR_NOMEM(e, sizeof *g);
  g->cfg = *c;
  g->buckets = *buckets;
  g->stream = stream;
  ttp_status st = TTP_OK;
  if (!shape_of(m, c, &g->s, why, sizeof why)) st = ERR(e, TTP_ERR_MODEL, "fused engine: %s", why);
  size_t rows = (size_t)buckets->images[buckets->count - 1] * c->spec.copies;
  if (st == TTP_OK &&
      cudaDeviceGetAttribute(&g->s.sms, cudaDevAttrMultiProcessorCount, c->device) != cudaSuccess)
    st = ERR(e, TTP_ERR_CUDA, "device %d: its multiprocessor count: %s", c->device,
             cudaGetErrorString(cudaGetLastError()));
  if (st == TTP_OK) st = upload_weights(g, m, e);
  if (st == TTP_OK) st = fused_kernels_prepare(&g->s, e);
  char what[96];
  snprintf(what, sizeof what, "the activations of %d-image batches (%zu copies)",
           buckets->images[buckets->count - 1], rows);
  if (st == TTP_OK) st = gpu_alloc(&g->act1, rows * fused_act_bytes(&g->s, 1), what, e);
  if (st == TTP_OK) st = gpu_alloc(&g->act2, rows * fused_act_bytes(&g->s, 2), what, e);
  if (st == TTP_OK) st = gpu_alloc((void**)&g->hidden, rows * fused_hidden_bytes(&g->s), what, e);
  if (st == TTP_OK)
    st = gpu_alloc((void**)&g->small_in, (size_t)FUSED_SMALL_MAX * g->s.in_h * g->s.in_w,
                   "the small batches' images", e);
  const size_t sync = sizeof *g->sync * FUSED_SMALL_SYNC * GPU_MAX_BUCKETS;
  if (st == TTP_OK) st = gpu_alloc((void**)&g->sync, sync, "the small batches' counters", e);
  /* On the engine's stream, which every launch follows (cudaMemset may run later, on the
     legacy stream, than the warm-up's first launch on the runner's). */
  cudaError_t err = st == TTP_OK ? cudaMemsetAsync(g->sync, 0, sync, g->stream) : cudaSuccess;
  if (err != cudaSuccess)
    st = ERR(e, TTP_ERR_CUDA, "fused engine counters: %s", cudaGetErrorString(err));
  if (st != TTP_OK) {
    fused_destroy(g);
    return st;
  }
  const int half = g->s.half;
  snprintf(g->details, sizeof g->details,
           "stage 1: augment + conv1 + pool (an image a block); stage 2: conv2 + pool, %s%d "
           "copies a block; stage 3: fc1 (%s) + %sfc2 + softmax + merge (up to %d images a "
           "block); batches of up to %d images in one launch",
           half ? "mma.sync, " : "register-tiled where the batch fills the GPU, else ",
           fused_stage2_copies(&g->s),
           half ? "a GEMM of its own, mma.sync"
                : "a GEMM of its own where the batch fills the GPU, else 32 outputs a block",
           g->s.lrn ? "LRN + " : "", fused_stage3_images(g->s.copies), one_launch_most(&g->s));
  *out = g;
  return TTP_OK;
}

static ttp_status enqueue_images(fused_net* g, int images, const uint8_t* dev_in, void* dev_out,
                                 cudaStream_t stream, ttp_err* e) {
  TRY(fused_stage1(&g->s, &g->cfg.spec, &g->w, dev_in, images, g->act1, stream, e));
  TRY(fused_stage2(&g->s, &g->w, g->act1, images * g->s.copies, g->act2, stream, e));
  return fused_stage3(&g->s, g->cfg.merge, &g->w, g->act2, images, g->hidden, dev_out, stream, e);
}

static ttp_status fused_enqueue(void* state, int bucket, const uint8_t* dev_in, void* dev_out,
                                cudaStream_t stream, ttp_err* e) {
  fused_net* g = state;
  const int images = g->buckets.images[bucket];
  if (copies_input_in(&g->s, images)) { /* a latency-path bucket: dev_in is mapped host memory */
    const size_t bytes = (size_t)images * g->s.in_h * g->s.in_w;
    const cudaError_t err = cudaMemcpyAsync(g->small_in, dev_in, bytes, cudaMemcpyDefault, stream);
    if (err != cudaSuccess)
      return ERR(e, TTP_ERR_CUDA, "fused engine: the images' copy in: %s", cudaGetErrorString(err));
    dev_in = g->small_in;
  }
  if (images <= one_launch_most(&g->s))
    return fused_small(&g->s, &g->cfg.spec, g->cfg.merge, &g->w, dev_in, images, g->act1, g->act2,
                       g->hidden, dev_out, g->sync + (size_t)bucket * FUSED_SMALL_SYNC, NULL,
                       stream, e);
  return enqueue_images(g, images, dev_in, dev_out, stream, e);
}

static const char* fused_precision(void* state) {
  return ((fused_net*)state)->s.half
             ? "fp16 (conv2 and fc1 on tensor cores, fp32 accumulation; the rest fp32)"
             : "fp32 (FFMA)";
}

static const char* fused_details(void* state) { return ((fused_net*)state)->details; }

const gpu_network_ops fused_network = {
    .name = "fused",
    .plan = fused_plan,
    .enqueue = fused_enqueue,
    .direct_max = FUSED_SMALL_MAX,
    .precision = fused_precision,
    .details = fused_details,
    .destroy = fused_destroy,
};

/* ---- one stage by itself (tests) ------------------------------------------------------------------ */

ttp_status fused_run_stage(const model* m, const engine_config* c, int stage, int images,
                           int wide, const void* in, void* out, ttp_err* e) {
  if (stage < 1 || stage > 3 || images < 1)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "fused_run_stage: stage %d, %d images", stage, images);
  gpu_buckets b = {1, {images}};
  void* state = NULL;
  TRY(fused_plan(m, c, &b, 0, &state, e));
  fused_net* g = state;
  g->s.wide = wide;
  const fused_shape* s = &g->s;
  const int rows = images * s->copies;
  /* The activations as the CPU has them: fp32 CHW, rows x (K1 P1 Q1 | fc_in) floats. */
  const size_t chw1 = (size_t)rows * s->k1 * s->p1_h * s->p1_w * sizeof(float);
  const size_t chw2 = (size_t)rows * s->fc_in * sizeof(float);
  const size_t in_bytes = stage == 1 ? (size_t)images * s->in_h * s->in_w
                          : stage == 2 ? chw1 : chw2;
  const size_t out_bytes = stage == 1 ? chw1
                           : stage == 2 ? chw2 : images * aug_merge_record_size(s->classes);
  void *d_in = NULL, *d_out = NULL;
  ttp_status st = TTP_OK;
  cudaError_t err = cudaMalloc(&d_in, in_bytes);
  if (err == cudaSuccess) err = cudaMalloc(&d_out, out_bytes);
  /* The outputs poisoned, so that an element the stage does not write shows. */
  if (err == cudaSuccess) err = cudaMemset(d_out, 0xff, out_bytes);
  if (err == cudaSuccess) err = cudaMemset(g->act1, 0xff, rows * fused_act_bytes(s, 1));
  if (err == cudaSuccess) err = cudaMemset(g->act2, 0xff, rows * fused_act_bytes(s, 2));
  if (err == cudaSuccess) err = cudaMemcpy(d_in, in, in_bytes, cudaMemcpyHostToDevice);
  if (err != cudaSuccess) st = ERR(e, TTP_ERR_CUDA, "fused_run_stage: %s", cudaGetErrorString(err));
  /* In the kernels' layouts through the engine's own activations. */
  if (st == TTP_OK) {
    if (stage == 1) {
      st = fused_stage1(s, &g->cfg.spec, &g->w, d_in, images, g->act1, 0, e);
      if (st == TTP_OK) st = fused_act_convert(s, 1, rows, 0, d_out, g->act1, 0, e);
    } else if (stage == 2) {
      st = fused_act_convert(s, 1, rows, 1, d_in, g->act1, 0, e);
      if (st == TTP_OK) st = fused_stage2(s, &g->w, g->act1, rows, g->act2, 0, e);
      if (st == TTP_OK) st = fused_act_convert(s, 2, rows, 0, d_out, g->act2, 0, e);
    } else {
      st = fused_act_convert(s, 2, rows, 1, d_in, g->act2, 0, e);
      if (st == TTP_OK)
        st = fused_stage3(s, g->cfg.merge, &g->w, g->act2, images, g->hidden, d_out, 0, e);
    }
  }
  if (st == TTP_OK) {
    err = cudaMemcpy(out, d_out, out_bytes, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess)
      st = ERR(e, TTP_ERR_CUDA, "fused stage %d: %s", stage, cudaGetErrorString(err));
  }
  cudaFree(d_in);
  cudaFree(d_out);
  fused_destroy(g);
  return st;
}

/* ---- the whole pass (tests) ------------------------------------------------------------------------ */

ttp_status fused_run_pass(const model* m, const engine_config* c, int images, int small,
                          const uint8_t* in, void* out, unsigned long long* trace, double* ms,
                          ttp_err* e) {
  if (images < 1 || (small && images > FUSED_SMALL_MAX))
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "fused_run_pass: %d images", images);
  gpu_buckets b = {1, {images}};
  void* state = NULL;
  TRY(fused_plan(m, c, &b, 0, &state, e));
  fused_net* g = state;
  const size_t in_bytes = (size_t)images * g->s.in_h * g->s.in_w;
  const size_t out_bytes = images * aug_merge_record_size(g->s.classes);
  const size_t trace_bytes = 4 * sizeof *trace * fused_small_items(&g->s, images, FUSED_SMALL_STAGES);
  void *d_in = NULL, *d_out = NULL;
  unsigned long long* d_trace = NULL;
  ttp_status st = TTP_OK;
  cudaError_t err = cudaMalloc(&d_in, in_bytes);
  if (err == cudaSuccess) err = cudaMalloc(&d_out, out_bytes);
  if (err == cudaSuccess && trace) err = cudaMalloc((void**)&d_trace, trace_bytes);
  if (err == cudaSuccess) err = cudaMemcpy(d_in, in, in_bytes, cudaMemcpyHostToDevice);
  cudaEvent_t t0 = NULL, t1 = NULL;
  if (err == cudaSuccess) err = cudaEventCreate(&t0);
  if (err == cudaSuccess) err = cudaEventCreate(&t1);
  if (err != cudaSuccess) st = ERR(e, TTP_ERR_CUDA, "fused_run_pass: %s", cudaGetErrorString(err));
  /* Three passes one after another, the output poisoned before each: the last one's result
     shows whether the small kernel's counters carried over from launch to launch; the last one
     timed. */
  for (int k = 0; k < 3 && st == TTP_OK; k++) {
    err = cudaMemset(d_out, 0xff, out_bytes);
    if (err == cudaSuccess) err = cudaEventRecord(t0, 0);
    if (err != cudaSuccess) {
      st = ERR(e, TTP_ERR_CUDA, "fused_run_pass: %s", cudaGetErrorString(err));
      break;
    }
    st = small ? fused_small(&g->s, &g->cfg.spec, g->cfg.merge, &g->w, d_in, images, g->act1,
                             g->act2, g->hidden, d_out, g->sync, d_trace, 0, e)
               : enqueue_images(g, images, d_in, d_out, 0, e);
    if (st == TTP_OK && (err = cudaEventRecord(t1, 0)) != cudaSuccess)
      st = ERR(e, TTP_ERR_CUDA, "fused_run_pass: %s", cudaGetErrorString(err));
  }
  float elapsed = 0;
  if (st == TTP_OK && ms && (err = cudaEventSynchronize(t1)) == cudaSuccess &&
      (err = cudaEventElapsedTime(&elapsed, t0, t1)) == cudaSuccess)
    *ms = elapsed;
  if (st == TTP_OK && err != cudaSuccess)
    st = ERR(e, TTP_ERR_CUDA, "fused_run_pass: %s", cudaGetErrorString(err));
  if (t0) cudaEventDestroy(t0);
  if (t1) cudaEventDestroy(t1);
  if (st == TTP_OK) {
    err = cudaMemcpy(out, d_out, out_bytes, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess && trace) err = cudaMemcpy(trace, d_trace, trace_bytes, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) st = ERR(e, TTP_ERR_CUDA, "fused_run_pass: %s", cudaGetErrorString(err));
  }
  cudaFree(d_trace);
  cudaFree(d_in);
  cudaFree(d_out);
  fused_destroy(g);
  return st;
}
