/* The cudnn engine: a network for the GPU runner (graph/runner.h) that runs test-time
   augmentation, the model's layers (cudnn_layers.c, on cuDNN and ttapipe's kernels) and the
   merge for all B x N copies of a batch.

   Shapes: a batch is B images (a bucket of the runner); each becomes N copies, so n = B x N rows
   go through the network. The model may be any graph (model.h): each layer reads its input
   values from the arena and writes its own there. Layout: NCHW in fp32; NHWC in fp16 and tf32
   where cuDNN takes every convolution so (nhwc_suits; the input's channels padded to 16), which
   the tensor cores and ttapipe's convolution (conv_kernels.h) want, else NCHW.

   Plan (cudnn_plan), where every allocation and synchronisation happens: a cuDNN handle on the
   runner's compute stream; which layers run together (a convolution or an fc and the residual
   Add, ReLU and Clip that alone read it: one epilogue); the arena (model_plan_units: a value's
   room reused once its last reader has run); each layer planned for every bucket; the
   workspaces. Where cuDNN refuses a convolution in NHWC the plan starts again in NCHW, and the
   details say why.
   Enqueue (cudnn_enqueue), the body of every graph, launches only:
     augment kernel (device input -> copies; NHWC: reordered into value 0) -> each unit in
     order -> [fp16: widen the probabilities] -> merge kernel (-> device output: one record per
     image).

   Memory: n_max x the plan's arena (ttp_model_info.activation_bytes per copy in fp32, half that
   in fp16). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../augment/merge_kernel.h"
#include "../../augment/tta_kernel.h"
#include "../../graph/graph.h"
#include "../clock.h"
#include "cudnn_check.h"
#include "cudnn_engine.h"
#include "cudnn_kernels.h"
#include "inverted_kernel.h"

/* ---- what it runs --------------------------------------------------------------------------- */

/* Every layer kind of model.h, in any graph; LRN within cuDNN's ranges. */
int cudnn_supports(const model_layer* l, const engine_config* c, char* why, size_t n) {
  (void)c;
  if (l->op == MODEL_LRN &&
      !(l->p.lrn.n >= 1 && l->p.lrn.n <= 16 && l->p.lrn.beta >= 0.01 && l->p.lrn.k >= 1e-5)) {
    snprintf(why, n, "cuDNN's LRN takes n 1..16, beta >= 0.01 and k >= 1e-5, not n %d, beta %g, "
             "k %g", l->p.lrn.n, l->p.lrn.beta, l->p.lrn.k);
    return 0;
  }
  return (unsigned)l->op < MODEL_OP_COUNT;
}

/* ---- enqueue: one batch, launches only -------------------------------------------------------- */

/* rows of shape s from NHWC into NCHW. */
static ttp_status to_nchw(const cudnn_net* g, const void* from, void* to, model_shape s,
                          size_t rows, ttp_err* e) {
  const gpu_dims a = {s.c, s.h, s.w, 1}, b = {s.c, s.h, s.w, 0};
  return gpu_reorder(from, a, to, b, rows, g->ctx.half, g->ctx.stream, e);
}

/* Value v's rows of bucket b in the arena (the input, when padded, in its own buffer). */
static void* value_at(const cudnn_net* g, int v, int bucket) {
  if (v == 0 && g->input) return g->input;
  return (char*)g->arena + g->plan.offsets[v] * g->ctx.rows[bucket] * g->ctx.elem;
}

static ttp_status cudnn_enqueue(void* state, int bucket, const uint8_t* dev_in, void* dev_out,
                                cudaStream_t stream, ttp_err* e) {
  cudnn_net* g = state;
  const model* m = g->m;
  int images = g->buckets.images[bucket];
  const size_t rows = (size_t)g->ctx.rows[bucket];
  /* The augmentation writes NCHW: in NHWC, into the scratch buffer, then reordered. */
  void* copies = g->ctx.nhwc ? g->ctx.scratch : value_at(g, 0, bucket);
  TRY(aug_launch(&g->cfg.spec, dev_in, images, m->input.c, m->input.h, m->input.w,
                 g->ctx.half ? AUG_OUT_HALF : AUG_OUT_FLOAT, copies, stream, e));
  if (g->ctx.nhwc) /* into NHWC, and the channels past the input's zeros */
    TRY(gpu_to_nhwc_padded(copies, m->input.c, m->input.h, m->input.w, value_at(g, 0, bucket),
                           g->input_c, rows, g->ctx.half, stream, e));
  for (int r = 0; r < g->runs; r++) {
    const gpu_layer* L = &g->layers[g->order[r]];
    const void* in[MODEL_MAX_INPUTS + 1];
    for (int k = 0; k < L->l->input_count; k++) /* a block reads its first convolution's input */
      in[k] = value_at(g, k == 0 && L->first ? L->first->l->inputs[0] : L->l->inputs[k], bucket);
    if (L->residual) in[L->l->input_count] = value_at(g, L->z_value, bucket);
    TRY(gpu_layer_enqueue(&g->ctx, L, bucket, in, value_at(g, L->run_at + 1, bucket), e));
  }
  const void* last = value_at(g, m->layer_count, bucket);
  const model_shape out = m->layers[m->layer_count - 1].out;
  if (g->ctx.nhwc && out.h * out.w > 1) { /* the classes in CHW order for the merge */
    TRY(to_nchw(g, last, g->ctx.scratch, out, rows, e));
    last = g->ctx.scratch;
  }
  const float* probs = last;
  if (g->ctx.half) {
    TRY(gpu_to_float(last, g->probs, rows * m->classes, stream, e));
    probs = g->probs;
  }
  return aug_merge_launch(g->cfg.merge, aug_spec_weights(&g->cfg.spec), probs, images,
                          g->cfg.spec.copies, m->classes, dev_out, stream, e);
}

/* ---- plan ----------------------------------------------------------------------------------- */

/* Whether fp16 and tf32 run m in NHWC, which tensor-core convolutions want: where every
   convolution has a multiple of 8 channels a group or is a depthwise one that ttapipe's kernel
   runs (gpu_depthwise_suits), but those reading the network's input,
   which then holds *input_c channels, its own rounded up to 16 with zeros (the augmentation's
   copies of 1 or 3 channels), when only such convolutions (of one group, even padding) read it.
   Else NCHW, as in fp32 (FMA math, where cuDNN's NCHW kernels are its fastest). */
static int nhwc_suits(const model* m, int* input_c) {
  int only_convs = 1;
  *input_c = m->input.c;
  for (int i = 0; i < m->layer_count; i++) {
    const model_layer* l = &m->layers[i];
    const int reads_input = l->inputs[0] == 0 || (l->input_count > 1 && l->inputs[1] == 0);
    for (int k = 2; k < l->input_count; k++) only_convs &= l->inputs[k] != 0;
    if (l->op != MODEL_CONV) {
      only_convs &= !reads_input;
      continue;
    }
    const model_window* w = &l->p.conv.w;
    const int groups = l->p.conv.groups ? l->p.conv.groups : 1;
    if (reads_input)
      only_convs &= groups == 1 && w->pad_t == w->pad_b && w->pad_l == w->pad_r;
    else if (l->in.c / groups % 8 && !gpu_depthwise_suits(l))
      return 0;
  }
  if (m->input.c % 8 == 0) return 1;
  if (!only_convs) return 0;
  *input_c = (m->input.c + 15) / 16 * 16; /* cuDNN refused 8 (NOT_SUPPORTED); 16 suits ours */
  return 1;
}

/* Handles on stream, the precision, and n = images x copies rows for each bucket. */
static ttp_status plan_context(gpu_context* ctx, const engine_config* c, const gpu_buckets* b,
                               int canonical_images, int nhwc, cudaStream_t stream, ttp_err* e) {
  ctx->stream = stream;
  ctx->device = c->device;
  ctx->choice_device = c->choice_device;
  ctx->precision = c->precision;
  ctx->half = c->precision == TTP_PRECISION_FP16;
  ctx->tensor_cores = ctx->half || c->precision == TTP_PRECISION_TF32;
  ctx->nhwc = nhwc;
  ctx->format = ctx->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  ctx->plan = c->plan;
  ctx->dnn_type = ctx->half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  ctx->elem = ctx->half ? 2 : 4;
  ctx->buckets = b->count;
  for (int k = 0; k < b->count; k++) ctx->rows[k] = b->images[k] * c->spec.copies;
  ctx->canonical_rows = canonical_images * c->spec.copies;
  double at = clock_seconds();
  TRY(dnn_libs_load(e));
  ctx->libraries_s = clock_seconds() - at, at = clock_seconds();
  CUDNN_TRY(e, gpu_libs.cudnnCreate(&ctx->dnn));
  CUDNN_TRY(e, gpu_libs.cudnnSetStream(ctx->dnn, stream));
  ctx->handles_s = clock_seconds() - at;
  return TTP_OK;
}

/* After every layer is planned: the workspaces they asked for. */
static ttp_status plan_workspaces(gpu_context* ctx, ttp_err* e) {
  if (ctx->conv_workspace_size)
    TRY(gpu_alloc(&ctx->conv_workspace, ctx->conv_workspace_size, "the convolutions' workspace",
                  e));
  if (ctx->scratch_size)
    TRY(gpu_alloc(&ctx->scratch, ctx->scratch_size, "the scratch buffer", e));
  return TTP_OK;
}

static void destroy_context(gpu_context* ctx) {
  cudaFree(ctx->conv_workspace);
  cudaFree(ctx->scratch);
  if (ctx->dnn) gpu_libs.cudnnDestroy(ctx->dnn);
  memset(ctx, 0, sizeof *ctx);
}

/* The layer that alone reads value v, or -1. */
static int sole_reader(const model* m, const int* readers, int v) {
  if (readers[v] != 1 || v == m->layer_count) return -1;
  for (int i = v; i < m->layer_count; i++)
    for (int k = 0; k < m->layers[i].input_count; k++)
      if (m->layers[i].inputs[k] == v) return i;
  return -1;
}

/* Layers i (the head) and j run as one unit at j's place, j only inside it. */
static void join(cudnn_net* g, int i, int j) {
  g->layers[j].skip = 1;
  g->layers[i].run_at = g->layers[j].run_at = j;
  snprintf(g->layers[j].algo, sizeof g->layers[j].algo, "in %s's epilogue", g->m->layers[i].name);
}

/* A convolution or fc i whose output alone feeds a residual Add (with another value of its
   shape), a ReLU and/or a Clip applies them in its epilogue, at the last one's place: the ReLU
   and the Clip as one clamp (a ReLU then a Clip to hi: 0 to hi, PyTorch's ReLU6 as it exports
   it). */
static void conv_unit(cudnn_net* g, const int* readers, int i) {
  const model* m = g->m;
  gpu_layer* L = &g->layers[i];
  int joined[3], count = 0, j = sole_reader(m, readers, i + 1);
  /* An Add of two convolutions' outputs joins the first's unit (the other is its z). */
  if (j >= 0 && !g->layers[j].skip && m->layers[j].op == MODEL_ADD &&
      m->layers[j].input_count == 2) {
    const int z = m->layers[j].inputs[m->layers[j].inputs[0] == i + 1];
    const model_shape zs = model_value_shape(m, z), out = m->layers[i].out;
    if (z != i + 1 && zs.c == out.c && zs.h == out.h && zs.w == out.w) {
      L->residual = 1, L->z_value = z;
      joined[count++] = j;
      j = sole_reader(m, readers, j + 1);
    }
  }
  gpu_clamp clamp = {-INFINITY, INFINITY};
  if (j >= 0 && !g->layers[j].skip && m->layers[j].op == MODEL_RELU) {
    clamp.lo = 0.0f;
    joined[count++] = j;
    j = sole_reader(m, readers, j + 1);
  }
  if (j >= 0 && !g->layers[j].skip && m->layers[j].op == MODEL_CLIP) {
    /* a Clip after the ReLU: the ReLU's 0 or the Clip's lo, whichever is higher, to hi (where
       they leave a range: a Clip alone is the clamp's own formula at any bounds) */
    const float lo = m->layers[j].p.clip.lo > clamp.lo ? m->layers[j].p.clip.lo : clamp.lo;
    if (clamp.lo == -INFINITY || lo <= m->layers[j].p.clip.hi) {
      clamp = (gpu_clamp){clamp.lo == -INFINITY ? m->layers[j].p.clip.lo : lo,
                          m->layers[j].p.clip.hi};
      joined[count++] = j;
    }
  }
  if (!count) return;
  L->fused_act = clamp.lo != -INFINITY || clamp.hi != INFINITY;
  L->clamp = clamp;
  for (int k = 0; k < count; k++) join(g, i, joined[k]);
  for (int k = 0; k < count; k++) g->layers[joined[k]].run_at = joined[count - 1];
}

/* Whether convolutions A and B (A's unit read by B alone) run as ttapipe's residual block
   (conv_kernels.h): one shape, 16 or 32 channels in and out, "same" windows of stride 1, one group,
   A not on the network's input (its channels padded) and without a residual of its own, and B's
   residual, if any, A's input. */
static int block_suits(const cudnn_net* g, const gpu_layer* A, const gpu_layer* B) {
  const model_layer *a = A->l, *b = B->l;
  const model_window *wa = &a->p.conv.w, *wb = &b->p.conv.w;
  if (a->inputs[0] == 0 || A->residual || (B->residual && B->z_value != a->inputs[0]) ||
      a->p.conv.groups > 1 || b->p.conv.groups > 1 || wa->pad_b != wa->pad_t ||
      wa->pad_r != wa->pad_l || memcmp(wa, wb, sizeof *wa) != 0 ||
      memcmp(&a->in, &b->in, sizeof a->in) != 0 || memcmp(&a->out, &b->out, sizeof a->out) != 0)
    return 0;
  const gpu_conv_shape s = {g->ctx.rows[g->ctx.buckets - 1], a->in.h, a->in.w, a->in.c,
                            a->out.h, a->out.w, a->p.conv.k, wa->r, wa->s, wa->stride_h,
                            wa->stride_w, wa->pad_t, wa->pad_l, wa->dil_h, wa->dil_w};
  return gpu_conv_block_nhwc_takes(&s, g->ctx.half);
}

/* Whether weights w (count floats) are finite in fp16 (below 65520 in magnitude). */
static int finite_in_half(const float* w, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (!(fabsf(w[i]) < 65520.0f)) return 0;
  return 1;
}

/* Whether convolutions A, B and C (each one's unit read by the next alone) run as ttapipe's
   inverted residual block (inverted_kernel.h): A a 1x1 expansion not on the network's input, B a
   depthwise 3x3 of stride 1 or 2 padded by 1 (ttapipe's depthwise kernel) whose weights are
   finite in fp16 (the kernel adds the padding's 0 x w, which the depthwise kernel skips: the
   same bits only then), C a 1x1 projection, the 1x1s not strided, A and B without a residual of
   their own, and C's residual, if any, A's input (at stride 1). */
static int inverted_suits(const cudnn_net* g, const gpu_layer* A, const gpu_layer* B,
                          const gpu_layer* C) {
  const model_layer *a = A->l, *b = B->l, *c = C->l;
  const model_window *wa = &a->p.conv.w, *wb = &b->p.conv.w, *wc = &c->p.conv.w;
  const model_window one = {.r = 1, .s = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1};
  const int stride = wb->stride_h;
  const model_window three = {.r = 3, .s = 3, .stride_h = stride, .stride_w = stride,
                              .pad_t = 1, .pad_l = 1, .pad_b = 1, .pad_r = 1, .dil_h = 1,
                              .dil_w = 1};
  if (a->inputs[0] == 0 || A->residual || B->residual ||
      (C->residual && (C->z_value != a->inputs[0] || stride != 1)) || a->p.conv.groups > 1 ||
      c->p.conv.groups > 1 || !gpu_depthwise_suits(b) || memcmp(wa, &one, sizeof one) != 0 ||
      memcmp(wc, &one, sizeof one) != 0 || memcmp(wb, &three, sizeof three) != 0 ||
      !finite_in_half(b->weights, b->weight_count))
    return 0;
  const gpu_inverted_shape s = {g->ctx.rows[g->ctx.buckets - 1], a->in.h, a->in.w, a->in.c,
                                a->p.conv.k, c->p.conv.k, stride};
  return gpu_inverted_nhwc_takes(&s, g->ctx.half);
}

/* Layer `from`'s unit runs at layer `to`'s place (inside its kernel): its value gets no room. */
static void fold_into(cudnn_net* g, gpu_layer* from, const gpu_layer* to) {
  const int unit = from->run_at;
  for (int k = 0; k <= unit; k++)
    if (g->layers[k].run_at == unit) g->layers[k].run_at = to->run_at;
  from->folded = 1;
}

/* Convolutions in a row that inverted_suits (three) or block_suits (two) joins into one kernel,
   in NHWC, unless the environment says TTP_CONV_BLOCKS=0 (the A/B of BENCHMARKS.md): the first
   ones (folded) run at the last one's place, and their units' values get no room. */
static void block_units(cudnn_net* g, const int* readers) {
  const model* m = g->m;
  const char* env = getenv("TTP_CONV_BLOCKS");
  if (!g->ctx.nhwc || (env && strcmp(env, "0") == 0)) return;
  for (int i = 0; i < m->layer_count; i++) {
    gpu_layer* A = &g->layers[i];
    if (m->layers[i].op != MODEL_CONV || A->skip || A->folded || A->first) continue;
    const int j = sole_reader(m, readers, A->run_at + 1);
    if (j < 0 || m->layers[j].op != MODEL_CONV || g->layers[j].skip) continue;
    gpu_layer* B = &g->layers[j];
    const int k = sole_reader(m, readers, B->run_at + 1);
    gpu_layer* C = k >= 0 && m->layers[k].op == MODEL_CONV && !g->layers[k].skip
                       ? &g->layers[k] : NULL;
    if (C && inverted_suits(g, A, B, C)) {
      fold_into(g, A, C), fold_into(g, B, C);
      C->first = A, C->middle = B;
    } else if (block_suits(g, A, B)) {
      fold_into(g, A, B);
      B->first = A;
    }
  }
}

/* Which layers run together: a convolution or an fc applies the residual Add, ReLU and Clip
   that follow it (conv_unit) in its epilogue, each at the last one's place; two convolutions in a
   row may run as one kernel (block_units). Then the order they run in. */
static ttp_status plan_units(cudnn_net* g, ttp_err* e) {
  const model* m = g->m;
  int* readers = calloc((size_t)m->layer_count + 1, sizeof *readers);
  g->order = malloc((size_t)m->layer_count * sizeof *g->order);
  if (!readers || !g->order) {
    free(readers);
    return ERR_NOMEM(e, (size_t)m->layer_count * 2 * sizeof(int));
  }
  for (int i = 0; i < m->layer_count; i++)
    for (int k = 0; k < m->layers[i].input_count; k++) readers[m->layers[i].inputs[k]]++;
  for (int i = 0; i < m->layer_count; i++) {
    g->layers[i].l = &m->layers[i];
    g->layers[i].run_at = i;
  }
  for (int i = 0; i < m->layer_count; i++) {
    if (m->layers[i].op == MODEL_CONV || m->layers[i].op == MODEL_FC) conv_unit(g, readers, i);
  }
  block_units(g, readers);
  free(readers);
  g->runs = 0;
  for (int at = 0; at < m->layer_count; at++)
    for (int i = 0; i <= at; i++)
      if (g->layers[i].run_at == at && !g->layers[i].skip && !g->layers[i].folded)
        g->order[g->runs++] = i;
  return TTP_OK;
}

static ttp_status plan_layers(cudnn_net* g, ttp_err* e) {
  const model* m = g->m;
  g->layers = calloc((size_t)m->layer_count, sizeof *g->layers);
  if (!g->layers) return ERR_NOMEM(e, (size_t)m->layer_count * sizeof *g->layers);
  TRY(plan_units(g, e));
  int* run_at = malloc((size_t)m->layer_count * sizeof *run_at);
  if (!run_at) return ERR_NOMEM(e, (size_t)m->layer_count * sizeof *run_at);
  for (int i = 0; i < m->layer_count; i++) run_at[i] = g->layers[i].run_at;
  ttp_status s = model_plan_units(m, run_at, &g->plan, e);
  free(run_at);
  TRY(s);
  size_t rows = (size_t)g->ctx.rows[g->ctx.buckets - 1];
  if (g->ctx.nhwc) { /* the augmentation's copies and the last value, reordered through it */
    const size_t most = rows * g->ctx.elem *
                        (model_shape_size(m->input) > (size_t)m->classes
                             ? model_shape_size(m->input) : (size_t)m->classes);
    if (most > g->ctx.scratch_size) g->ctx.scratch_size = most;
  }
  if (g->input_c != m->input.c) {
    TRY(gpu_alloc(&g->input, rows * g->input_c * m->input.h * m->input.w * g->ctx.elem,
                  "the copies, their channels padded", e));
    for (int i = 0; i < m->layer_count; i++) /* the convolutions reading it (nhwc_suits) */
      if (m->layers[i].op == MODEL_CONV && m->layers[i].inputs[0] == 0)
        g->layers[i].input_c = g->input_c;
  }
  const double start = clock_seconds();
  for (int i = 0; i < m->layer_count; i++) {
    if (g->layers[i].skip) continue;
    const double at = clock_seconds();
    TRY(gpu_layer_plan(&g->ctx, &g->layers[i], e));
    const double took = clock_seconds() - at;
    if (took > g->slowest_s) g->slowest_s = took, g->slowest = i;
  }
  TRY(plan_workspaces(&g->ctx, e));
  g->layers_s = clock_seconds() - start;
  char what[96];
  snprintf(what, sizeof what, "the values of %zu-row batches (images x copies)", rows);
  TRY(gpu_alloc(&g->arena, rows * g->plan.arena * g->ctx.elem, what, e));
  if (g->ctx.half)
    TRY(gpu_alloc((void**)&g->probs, rows * m->classes * sizeof(float), "the probabilities", e));
  return TTP_OK;
}

/* A chain's convolutions on cuDNN's tensor cores checked for the same bits in every bucket
   (gpu_conv_check), in the arena before any batch runs: up to 64 images' rows compared. Graphs
   are not checked (their fp16 rows are held to a tolerance across batch sizes: tests/gpu). */
static void check_chain(cudnn_net* g) {
  const model* m = g->m;
  const gpu_context* ctx = &g->ctx;
  int at;
  if (ctx->buckets < 2 || !ctx->tensor_cores || !model_is_chain(m, &at)) return;
  ttp_err err = {0}, *e = &err;
  gpu_conv_probe probe = {.ref_rows = ctx->rows[ctx->buckets - 2]};
  if (probe.ref_rows > 64 * g->cfg.spec.copies) probe.ref_rows = 64 * g->cfg.spec.copies;
  size_t most = 0;
  for (int i = 0; i < m->layer_count; i++)
    if (m->layers[i].op == MODEL_CONV && model_shape_size(m->layers[i].out) > most)
      most = model_shape_size(m->layers[i].out);
  ttp_status s = gpu_alloc(&probe.ref, (size_t)probe.ref_rows * most * ctx->elem,
                           "a convolution's check", e);
  if (s == TTP_OK) s = gpu_alloc((void**)&probe.differ, sizeof *probe.differ, "a counter", e);
  for (int i = 0; i < m->layer_count && s == TTP_OK; i++) {
    gpu_layer* L = &g->layers[i];
    if (L->skip || L->folded || L->first || m->layers[i].op != MODEL_CONV) continue;
    for (int b = 0; b < ctx->buckets; b++)
      probe.x[b] = value_at(g, m->layers[i].inputs[0], b), probe.y[b] = value_at(g, L->run_at + 1, b);
    s = gpu_conv_check(&g->ctx, L, &probe, &g->checked, e);
  }
  cudaFree(probe.ref), cudaFree(probe.differ);
  /* a check that cannot run leaves the plan as it is, and the details say why */
  if (s != TTP_OK) snprintf(g->unchecked, sizeof g->unchecked, "%.150s", err.message);
}

static void cudnn_destroy(void* state);

/* The network in one layout (nhwc, the input's channels input_c), into *out; the plan cache
   read first (what its reading did into cache_note, cache_size bytes, unless that already
   says). */
static ttp_status plan_net(const model* m, const engine_config* c, const gpu_buckets* buckets,
                           cudaStream_t stream, int nhwc, int input_c, cudnn_net** out,
                           char* cache_note, size_t cache_size, ttp_err* e) {
  cudnn_net* g = calloc(1, sizeof *g);
  if (!g) return ERR_NOMEM(e, sizeof *g);
  g->m = m;
  g->cfg = *c;
  g->buckets = *buckets;
  g->ctx.m = m;
  g->input_c = input_c;
  ttp_status s = plan_context(&g->ctx, c, buckets, GPU_CANONICAL_IMAGES, nhwc, stream, e);
  char note[300] = "";
  if (s == TTP_OK) gpu_plan_cache_read(&g->ctx, c->plan_cache, note, sizeof note);
  if (!cache_note[0]) snprintf(cache_note, cache_size, "%s", note);
  if (s == TTP_OK) s = plan_layers(g, e);
  const double at = clock_seconds();
  if (s == TTP_OK) check_chain(g);
  g->check_s = clock_seconds() - at;
  if (s != TTP_OK) {
    cudnn_destroy(g);
    return s;
  }
  *out = g;
  return TTP_OK;
}

static ttp_status cudnn_plan(const model* m, const engine_config* c, const gpu_buckets* buckets,
                             cudaStream_t stream, void** out, ttp_err* e) {
  *out = NULL;
  /* cuDNN's kernels refuse tensors of 2 GiB and more (pooling says NOT_SUPPORTED). */
  size_t per_image = (size_t)c->spec.copies * model_max_activation(m) *
                     (c->precision == TTP_PRECISION_FP16 ? 2 : 4);
  if ((size_t)c->max_batch * per_image > (size_t)INT32_MAX)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT,
               "max_batch %d is too large for this model and %d copies: a layer's tensor would "
               "exceed cuDNN's 2 GiB; use at most %zu", c->max_batch, c->spec.copies,
               (size_t)INT32_MAX / per_image);
  int input_c = m->input.c;
  const int nhwc = c->precision != TTP_PRECISION_FP32 && nhwc_suits(m, &input_c);
  char refused[200] = "", read_note[300] = "", write_note[300] = "";
  cudnn_net* g = NULL;
  ttp_status s = plan_net(m, c, buckets, stream, nhwc, input_c, &g, read_note, sizeof read_note,
                          e);
  if (s == TTP_ERR_CUDNN && nhwc) {
    /* cuDNN refused a convolution in NHWC: the network in NCHW, and why in its details. */
    snprintf(refused, sizeof refused, " (NHWC refused: %.170s)", e->message);
    err_clear(e);
    s = plan_net(m, c, buckets, stream, 0, m->input.c, &g, read_note, sizeof read_note, e);
  }
  if (s != TTP_OK) return s;
  /* what was searched goes into the plan cache for the next process */
  gpu_plan_cache_write(&g->ctx, c->plan_cache, write_note, sizeof write_note);
  char checked[240] = "";
  if (g->unchecked[0])
    snprintf(checked, sizeof checked, ", the convolutions' rows not checked in every bucket (%s)",
             g->unchecked);
  else if (g->checked)
    snprintf(checked, sizeof checked, ", %d convolution%s rows checked in every bucket %.1f ms",
             g->checked, g->checked == 1 ? "'s" : "s'", 1e3 * g->check_s);
  int n = snprintf(g->details, sizeof g->details,
                   "%s%s; the plan: cuDNN loaded %.1f ms, its handle %.1f ms, the layers %.1f ms "
                   "(the slowest %.1f ms, %s)%s%s%s%s%s",
                   g->ctx.nhwc ? "NHWC" : "NCHW", refused, 1e3 * g->ctx.libraries_s,
                   1e3 * g->ctx.handles_s, 1e3 * g->layers_s, 1e3 * g->slowest_s,
                   m->layers[g->slowest].name, checked, read_note[0] ? "; " : "", read_note,
                   write_note[0] ? "; " : "", write_note);
  for (int i = 0; i < m->layer_count && n >= 0 && (size_t)n < sizeof g->details; i++)
    if (g->layers[i].algo[0])
      n += snprintf(g->details + n, sizeof g->details - n, "; %s: %s", g->layers[i].l->name,
                    g->layers[i].algo);
  *out = g;
  return TTP_OK;
}

static void cudnn_destroy(void* state) {
  cudnn_net* g = state;
  if (!g) return;
  if (g->ctx.stream) cudaStreamSynchronize(g->ctx.stream);
  if (g->layers)
    for (int i = 0; i < g->m->layer_count; i++) gpu_layer_destroy(&g->layers[i]);
  free(g->layers);
  free(g->order);
  model_plan_free(&g->plan);
  cudaFree(g->arena);
  cudaFree(g->input);
  cudaFree(g->probs);
  destroy_context(&g->ctx);
  free(g);
}

static const char* cudnn_precision(void* state) {
  const gpu_context* ctx = &((cudnn_net*)state)->ctx;
  return ctx->half           ? "fp16 storage, tensor cores, fp32 accumulation"
         : ctx->tensor_cores ? "fp32 storage, TF32 tensor cores, fp32 accumulation"
                             : "fp32 (FMA, no TF32)";
}

static const char* cudnn_details(void* state) { return ((cudnn_net*)state)->details; }

const gpu_network_ops cudnn_network = {
    .name = "cudnn",
    .plan = cudnn_plan,
    .enqueue = cudnn_enqueue,
    .precision = cudnn_precision,
    .details = cudnn_details,
    .destroy = cudnn_destroy,
};

/* ---- one layer alone, for tests ------------------------------------------------------------ */

typedef struct layer_run {
  gpu_context ctx;
  gpu_layer L;
  const void* in;
  void* out;
} layer_run;

static ttp_status enqueue_layer(void* state, int slot, int bucket, cudaStream_t stream,
                                ttp_err* e) {
  (void)slot, (void)stream;
  layer_run* run = state;
  const void* in[1] = {run->in};
  return gpu_layer_enqueue(&run->ctx, &run->L, bucket, in, run->out, e);
}

/* Device elements of the context's type back to host floats. */
static ttp_status to_host(gpu_context* ctx, const void* dev, size_t count, float* host,
                          ttp_err* e) {
  const void* from = dev;
  float* staging = NULL;
  if (ctx->half) {
    CUDA_TRY(e, cudaMalloc((void**)&staging, count * sizeof(float)));
    ttp_status s = gpu_to_float(dev, staging, count, ctx->stream, e);
    if (s != TTP_OK) {
      cudaFree(staging);
      return s;
    }
    from = staging;
  }
  cudaError_t err = cudaMemcpyAsync(host, from, count * sizeof(float), cudaMemcpyDeviceToHost,
                                    ctx->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  cudaFree(staging);
  if (err != cudaSuccess) return ERR(e, TTP_ERR_CUDA, "copying out: %s", cudaGetErrorString(err));
  return TTP_OK;
}

/* n rows of shape s from CHW into HWC order (to_nhwc) or back. */
static void permute_rows(float* to, const float* from, size_t n, model_shape s, int to_nhwc) {
  const size_t plane = (size_t)s.h * s.w, size = model_shape_size(s);
  for (size_t r = 0; r < n; r++)
    for (int c = 0; c < s.c; c++)
      for (size_t i = 0; i < plane; i++) {
        const size_t chw = r * size + c * plane + i, hwc = r * size + i * s.c + c;
        to[to_nhwc ? hwc : chw] = from[to_nhwc ? chw : hwc];
      }
}

/* In NHWC, the caller's CHW rows of in, and of out (between its guards) on the way back, are
   reordered on the host; out's poison goes in as it is. */
static ttp_status run_layer_on_device(layer_run* run, const model_layer* l, int n,
                                      const engine_config* c, int use_graph, const float* in,
                                      float* out, size_t guard, ttp_err* e) {
  gpu_buckets one = {1, {n}};
  engine_config single = *c;
  single.spec.copies = 1; /* rows = n */
  /* NHWC in fp16 and tf32 but for a convolution of channels cuDNN's NHWC kernels refuse (the
     engine pads the network's input instead; a layer alone has no network) */
  const int groups = l->op == MODEL_CONV && l->p.conv.groups ? l->p.conv.groups : 1;
  const int nhwc = c->precision != TTP_PRECISION_FP32 &&
                   (l->op != MODEL_CONV || l->in.c / groups % 8 == 0 || gpu_depthwise_suits(l));
  TRY(plan_context(&run->ctx, &single, &one, n, nhwc, run->ctx.stream, e));
  run->L.l = l;
  TRY(gpu_layer_plan(&run->ctx, &run->L, e));
  TRY(plan_workspaces(&run->ctx, e));
  size_t n_in = (size_t)n * model_shape_size(l->in);
  size_t n_out = (size_t)n * model_shape_size(l->out) + 2 * guard;
  /* The output starts 256 bytes into the device buffer, aligned as cudaMalloc's own pointers
     are (the kernels' vector loads and stores need it); the guards lie just before and after it. */
  size_t lead = 256, first = lead - guard * run->ctx.elem;
  if (guard * run->ctx.elem > lead) return ERR(e, TTP_ERR_INVALID_ARGUMENT, "guard too large");
  void *dev_in = NULL, *dev_out = NULL;
  CUDA_TRY(e, cudaMalloc(&dev_in, n_in * run->ctx.elem));
  ttp_status s = TTP_OK;
  cudaError_t err = cudaMalloc(&dev_out, lead + n_out * run->ctx.elem);
  if (err != cudaSuccess) s = ERR(e, TTP_ERR_CUDA, "cudaMalloc: %s", cudaGetErrorString(err));
  void* mirror = (char*)dev_out + first; /* the device twin of the caller's out */
  float* nhwc_in = NULL;
  if (s == TTP_OK && run->ctx.nhwc) {
    nhwc_in = malloc(n_in * sizeof *nhwc_in);
    if (!nhwc_in) s = ERR_NOMEM(e, n_in * sizeof *nhwc_in);
    else permute_rows(nhwc_in, in, (size_t)n, l->in, 1), in = nhwc_in;
  }
  if (s == TTP_OK) s = gpu_upload(&run->ctx, in, n_in, dev_in, e);
  free(nhwc_in);
  if (s == TTP_OK) s = gpu_upload(&run->ctx, out, n_out, mirror, e); /* poison and guards */
  run->in = dev_in;
  run->out = (char*)dev_out + lead;
  graph_set graphs = {0};
  if (s == TTP_OK)
    s = graph_set_build(&graphs, 1, 1, use_graph, enqueue_layer, run, run->ctx.stream, e);
  if (s == TTP_OK && use_graph && !graphs.replaying)
    s = ERR(e, TTP_ERR_CUDA, "layer %s: %s", l->name, graphs.reason);
  /* graph_set_build ran the layer once eagerly (its warm-up); run it again, as asked, from the
     poisoned output. */
  if (s == TTP_OK) s = gpu_upload(&run->ctx, out, n_out, mirror, e);
  if (s == TTP_OK) s = graph_set_launch(&graphs, 0, 0, enqueue_layer, run, run->ctx.stream, e);
  if (s == TTP_OK) s = to_host(&run->ctx, mirror, n_out, out, e);
  if (s == TTP_OK && run->ctx.nhwc) {
    const size_t rows = n_out - 2 * guard;
    float* chw = malloc(rows * sizeof *chw);
    if (!chw) s = ERR_NOMEM(e, rows * sizeof *chw);
    else permute_rows(chw, out + guard, (size_t)n, l->out, 0);
    if (chw) memcpy(out + guard, chw, rows * sizeof *chw), free(chw);
  }
  graph_set_destroy(&graphs);
  cudaFree(dev_in);
  cudaFree(dev_out);
  return s;
}

ttp_status cudnn_run_layer(const model_layer* l, int n, const engine_config* c, int use_graph,
                           const float* in, float* out, size_t guard, ttp_err* e) {
  if (ttp_gpu_count() == 0) return ERR(e, TTP_ERR_NO_GPU, "engine cudnn needs a GPU");
  int previous;
  CUDA_TRY(e, cudaGetDevice(&previous));
  if (previous != c->device) CUDA_TRY(e, cudaSetDevice(c->device));
  layer_run run = {0};
  ttp_status s = TTP_OK;
  cudaError_t err = cudaStreamCreateWithFlags(&run.ctx.stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) s = ERR(e, TTP_ERR_CUDA, "cudaStreamCreate: %s", cudaGetErrorString(err));
  if (s == TTP_OK) s = run_layer_on_device(&run, l, n, c, use_graph, in, out, guard, e);
  cudaStream_t stream = run.ctx.stream;
  if (stream) cudaStreamSynchronize(stream);
  gpu_layer_destroy(&run.L);
  destroy_context(&run.ctx);
  if (stream) cudaStreamDestroy(stream);
  if (previous != c->device) cudaSetDevice(previous);
  return s;
}
