/* The onednn engine's network: plan (a primitive per layer, or per layer and the pointwise
   layers after it; reorders between layouts; the weights laid out once), then run. */
#include "onednn_net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "../cpu/cpu_layers.h"

#if DNNL_VERSION_MAJOR != 2
#error "the onednn engine is written against oneDNN 2.x (Debian 12's libdnnl-dev)"
#endif

/* One step of a run: a primitive with its arguments, or (primitive NULL) a softmax on the host
   over each row of softmax_n plain floats. */
typedef struct net_step {
  dnnl_primitive_t primitive;
  int nargs;
  dnnl_exec_arg_t args[4];
  const float* softmax_in;
  float* softmax_out;
  size_t softmax_n;
} net_step;

struct onednn_net {
  const onednn_context* ctx;
  int rows;
  net_step* steps;
  int step_count, step_capacity;
  dnnl_memory_t* memories; /* every memory the net made, freed with it */
  int memory_count, memory_capacity;
  float* input;
  const float* output;
};

const char* onednn_status_name(dnnl_status_t s) { return dnnl_status2str(s); }

ttp_status onednn_context_open(onednn_context* ctx, ttp_err* e) {
  *ctx = (onednn_context){0};
  DNNL_TRY(e, dnnl_engine_create(&ctx->engine, dnnl_cpu, 0));
  dnnl_status_t s = dnnl_stream_create(&ctx->stream, ctx->engine, dnnl_stream_default_flags);
  if (s != dnnl_success) {
    onednn_context_close(ctx);
    return ERR(e, TTP_ERR_INTERNAL, "dnnl_stream_create: %s", onednn_status_name(s));
  }
  return TTP_OK;
}

void onednn_context_close(onednn_context* ctx) {
  if (ctx->stream) dnnl_stream_destroy(ctx->stream);
  if (ctx->engine) dnnl_engine_destroy(ctx->engine);
  *ctx = (onednn_context){0};
}

/* ---- bookkeeping ----------------------------------------------------------------------------- */

static ttp_status grow(void** array, int* capacity, int count, size_t size, ttp_err* e) {
  if (count < *capacity) return TTP_OK;
  int want = *capacity ? 2 * *capacity : 16;
  void* bigger = realloc(*array, (size_t)want * size);
  if (!bigger) return ERR_NOMEM(e, (size_t)want * size);
  *array = bigger;
  *capacity = want;
  return TTP_OK;
}

/* A memory of descriptor md, owned by the net: its own buffer (handle NULL) or the handle's. */
static ttp_status net_memory(onednn_net* net, const dnnl_memory_desc_t* md, void* handle,
                             dnnl_memory_t* out, ttp_err* e) {
  TRY(grow((void**)&net->memories, &net->memory_capacity, net->memory_count, sizeof(dnnl_memory_t),
           e));
  DNNL_TRY(e, dnnl_memory_create(out, md, net->ctx->engine,
                                 handle ? handle : DNNL_MEMORY_ALLOCATE));
  net->memories[net->memory_count++] = *out;
  return TTP_OK;
}

static float* memory_data(dnnl_memory_t m) {
  void* p = NULL;
  dnnl_memory_get_data_handle(m, &p);
  return p;
}

static const dnnl_memory_desc_t* memory_desc(dnnl_memory_t m) {
  const dnnl_memory_desc_t* md = NULL;
  dnnl_memory_get_memory_desc(m, &md);
  return md;
}

/* Makes pd's primitive a step of the run with the given arguments; destroys pd either way. */
static ttp_status net_step_add(onednn_net* net, dnnl_primitive_desc_t pd, int nargs,
                               const dnnl_exec_arg_t* args, ttp_err* e) {
  ttp_status st = grow((void**)&net->steps, &net->step_capacity, net->step_count,
                       sizeof(net_step), e);
  dnnl_primitive_t p = NULL;
  dnnl_status_t s = st == TTP_OK ? dnnl_primitive_create(&p, pd) : dnnl_success;
  dnnl_primitive_desc_destroy(pd);
  if (st != TTP_OK) return st;
  if (s != dnnl_success)
    return ERR(e, s == dnnl_out_of_memory ? TTP_ERR_OUT_OF_MEMORY : TTP_ERR_INTERNAL,
               "dnnl_primitive_create: %s", onednn_status_name(s));
  net_step* step = &net->steps[net->step_count++];
  *step = (net_step){.primitive = p, .nargs = nargs};
  memcpy(step->args, args, (size_t)nargs * sizeof *args);
  return TTP_OK;
}

/* Plain rows x C x H x W floats. */
static void plain_desc(dnnl_memory_desc_t* md, int rows, model_shape s) {
  dnnl_dims_t dims = {rows, s.c, s.h, s.w};
  dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, dnnl_nchw);
}

/* cur in the layout `want`: cur itself, or a new memory filled by a reorder step. */
static ttp_status net_layout(onednn_net* net, dnnl_memory_t cur, const dnnl_memory_desc_t* want,
                             dnnl_memory_t* out, ttp_err* e) {
  if (dnnl_memory_desc_equal(memory_desc(cur), want)) {
    *out = cur;
    return TTP_OK;
  }
  TRY(net_memory(net, want, NULL, out, e));
  dnnl_primitive_desc_t pd;
  DNNL_TRY(e, dnnl_reorder_primitive_desc_create(&pd, memory_desc(cur), net->ctx->engine, want,
                                                 net->ctx->engine, NULL));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, cur}, {DNNL_ARG_TO, *out}};
  return net_step_add(net, pd, 2, args, e);
}

/* Fills `to` (descriptor md, a new memory of the net) from host floats laid out as `from_md`:
   once, at plan time (weights and biases). */
static ttp_status net_constant(onednn_net* net, const float* host, const dnnl_memory_desc_t* from_md,
                               const dnnl_memory_desc_t* md, dnnl_memory_t* to, ttp_err* e) {
  TRY(net_memory(net, md, NULL, to, e));
  dnnl_memory_t from;
  DNNL_TRY(e, dnnl_memory_create(&from, from_md, net->ctx->engine, (void*)host));
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t p = NULL;
  dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, from_md, net->ctx->engine, md,
                                                       net->ctx->engine, NULL);
  if (s == dnnl_success) s = dnnl_primitive_create(&p, pd);
  if (s == dnnl_success) {
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, *to}};
    s = dnnl_primitive_execute(p, net->ctx->stream, 2, args);
    if (s == dnnl_success) s = dnnl_stream_wait(net->ctx->stream);
  }
  if (p) dnnl_primitive_destroy(p);
  if (pd) dnnl_primitive_desc_destroy(pd);
  dnnl_memory_destroy(from);
  if (s != dnnl_success)
    return ERR(e, TTP_ERR_INTERNAL, "oneDNN reorder of weights: %s", onednn_status_name(s));
  return TTP_OK;
}

/* ---- layers ---------------------------------------------------------------------------------- */

/* The pointwise layers as oneDNN's eltwise algorithms; 0 for any other layer. */
static int eltwise_of(const model_layer* l, dnnl_alg_kind_t* alg, float* alpha, float* beta) {
  *alg = dnnl_alg_kind_undef, *alpha = 0, *beta = 0;
  switch (l->op) {
    case MODEL_RELU: *alg = dnnl_eltwise_relu; return 1;
    case MODEL_LEAKY_RELU: *alg = dnnl_eltwise_relu, *alpha = l->p.leaky.alpha; return 1;
    case MODEL_SIGMOID: *alg = dnnl_eltwise_logistic; return 1;
    case MODEL_TANH: *alg = dnnl_eltwise_tanh; return 1;
    case MODEL_CLIP: *alg = dnnl_eltwise_clip, *alpha = l->p.clip.lo, *beta = l->p.clip.hi; return 1;
    default: return 0;
  }
}

/* The pointwise layers from layers[next] on as post-ops of an attribute (NULL when there are
   none); how many into *fused. */
static ttp_status post_ops(const model_layer* layers, int next, int count, dnnl_primitive_attr_t* attr,
                           int* fused, ttp_err* e) {
  *attr = NULL, *fused = 0;
  dnnl_alg_kind_t alg;
  float alpha, beta;
  if (next >= count || !eltwise_of(&layers[next], &alg, &alpha, &beta)) return TTP_OK;
  dnnl_post_ops_t ops;
  DNNL_TRY(e, dnnl_post_ops_create(&ops));
  dnnl_status_t s = dnnl_success;
  while (s == dnnl_success && next + *fused < count &&
         eltwise_of(&layers[next + *fused], &alg, &alpha, &beta)) {
    s = dnnl_post_ops_append_eltwise(ops, 1.0f, alg, alpha, beta);
    ++*fused;
  }
  if (s == dnnl_success) s = dnnl_primitive_attr_create(attr);
  if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(*attr, ops);
  dnnl_post_ops_destroy(ops);
  if (s != dnnl_success) {
    if (*attr) dnnl_primitive_attr_destroy(*attr);
    *attr = NULL;
    return ERR(e, TTP_ERR_INTERNAL, "oneDNN post-ops: %s", onednn_status_name(s));
  }
  return TTP_OK;
}

/* The weighted layers (conv, fc) once their primitive descriptor is made: the source in its
   layout, the weights and bias laid out, the destination, the step. user_w: the weights as the
   model holds them. */
static ttp_status weighted_step(onednn_net* net, const model_layer* l,
                                dnnl_primitive_desc_t pd, const dnnl_memory_desc_t* user_w,
                                dnnl_memory_t cur, dnnl_memory_t* out, ttp_err* e) {
  dnnl_memory_t src, w, b = NULL, dst;
  ttp_status st = net_layout(net, cur, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                             &src, e);
  if (st == TTP_OK)
    st = net_constant(net, l->weights, user_w,
                      dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &w, e);
  if (st == TTP_OK && l->bias) {
    dnnl_memory_desc_t user_b;
    dnnl_dims_t dims = {(dnnl_dim_t)l->bias_count};
    dnnl_memory_desc_init_by_tag(&user_b, 1, dims, dnnl_f32, dnnl_x);
    st = net_constant(net, l->bias, &user_b,
                      dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), &b, e);
  }
  if (st == TTP_OK)
    st = net_memory(net, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), NULL, &dst, e);
  if (st != TTP_OK) {
    dnnl_primitive_desc_destroy(pd);
    return st;
  }
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst},
                            {DNNL_ARG_BIAS, b}};
  *out = dst;
  return net_step_add(net, pd, b ? 4 : 3, args, e);
}

static ttp_status plan_conv(onednn_net* net, const model_layer* l, dnnl_primitive_attr_t attr,
                            dnnl_memory_t cur, dnnl_memory_t* out, ttp_err* e) {
  dnnl_memory_desc_t src, w, user_w, b, dst;
  dnnl_dims_t src_dims = {net->rows, l->in.c, l->in.h, l->in.w};
  dnnl_dims_t w_dims = {l->p.conv.k, l->in.c, l->p.conv.w.r, l->p.conv.w.s};
  dnnl_dims_t b_dims = {l->p.conv.k};
  dnnl_dims_t dst_dims = {net->rows, l->out.c, l->out.h, l->out.w};
  dnnl_dims_t strides = {l->p.conv.w.stride_h, l->p.conv.w.stride_h};
  dnnl_dims_t pad = {l->p.conv.w.pad_t, l->p.conv.w.pad_t};
  dnnl_memory_desc_init_by_tag(&src, 4, src_dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&w, 4, w_dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&user_w, 4, w_dims, dnnl_f32, dnnl_oihw);
  dnnl_memory_desc_init_by_tag(&b, 1, b_dims, dnnl_f32, dnnl_x);
  dnnl_memory_desc_init_by_tag(&dst, 4, dst_dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_convolution_desc_t desc;
  DNNL_TRY(e, dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                                 dnnl_convolution_direct, &src, &w,
                                                 l->bias ? &b : NULL, &dst, strides, pad, pad));
  dnnl_primitive_desc_t pd;
  DNNL_TRY(e, dnnl_primitive_desc_create(&pd, &desc, attr, net->ctx->engine, NULL));
  return weighted_step(net, l, pd, &user_w, cur, out, e);
}

/* Fully connected over the CHW-flattened input: an inner product whose weights [out][in] are
   out x C x H x W in oihw. Its output (rows x out, nc) is seen from then on as rows x out x 1 x 1
   (nchw: the same bytes). */
static ttp_status plan_fc(onednn_net* net, const model_layer* l, dnnl_primitive_attr_t attr,
                          dnnl_memory_t cur, dnnl_memory_t* out, ttp_err* e) {
  dnnl_memory_desc_t src, w, user_w, b, dst;
  dnnl_dims_t src_dims = {net->rows, l->in.c, l->in.h, l->in.w};
  dnnl_dims_t w_dims = {l->p.fc.out, l->in.c, l->in.h, l->in.w};
  dnnl_dims_t b_dims = {l->p.fc.out};
  dnnl_dims_t dst_dims = {net->rows, l->p.fc.out};
  dnnl_memory_desc_init_by_tag(&src, 4, src_dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&w, 4, w_dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&user_w, 4, w_dims, dnnl_f32, dnnl_oihw);
  dnnl_memory_desc_init_by_tag(&b, 1, b_dims, dnnl_f32, dnnl_x);
  dnnl_memory_desc_init_by_tag(&dst, 2, dst_dims, dnnl_f32, dnnl_nc);
  dnnl_inner_product_desc_t desc;
  DNNL_TRY(e, dnnl_inner_product_forward_desc_init(&desc, dnnl_forward_inference, &src, &w,
                                                   l->bias ? &b : NULL, &dst));
  dnnl_primitive_desc_t pd;
  DNNL_TRY(e, dnnl_primitive_desc_create(&pd, &desc, attr, net->ctx->engine, NULL));
  dnnl_memory_t flat;
  TRY(weighted_step(net, l, pd, &user_w, cur, &flat, e));
  dnnl_memory_desc_t view;
  plain_desc(&view, net->rows, l->out);
  return net_memory(net, &view, memory_data(flat), out, e);
}

/* A layer of one input and one output (pooling, LRN, a pointwise layer) from its descriptor:
   into a new memory in the layout oneDNN chooses (out), or in place (out NULL). */
static ttp_status unary_step(onednn_net* net, const_dnnl_op_desc_t desc,
                             dnnl_memory_t cur, dnnl_memory_t* out, ttp_err* e) {
  dnnl_primitive_desc_t pd;
  DNNL_TRY(e, dnnl_primitive_desc_create(&pd, desc, NULL, net->ctx->engine, NULL));
  dnnl_memory_t dst = cur;
  if (out) {
    ttp_status st =
        net_memory(net, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), NULL, &dst, e);
    if (st != TTP_OK) {
      dnnl_primitive_desc_destroy(pd);
      return st;
    }
    *out = dst;
  }
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, cur}, {DNNL_ARG_DST, dst}};
  return net_step_add(net, pd, 2, args, e);
}

static ttp_status plan_pool(onednn_net* net, const model_layer* l, dnnl_memory_t cur,
                            dnnl_memory_t* out, ttp_err* e) {
  dnnl_memory_desc_t dst;
  dnnl_dims_t dst_dims = {net->rows, l->out.c, l->out.h, l->out.w};
  dnnl_dims_t strides = {l->p.pool.w.stride_h, l->p.pool.w.stride_h};
  dnnl_dims_t kernel = {l->p.pool.w.r, l->p.pool.w.s};
  dnnl_dims_t pad = {l->p.pool.w.pad_t, l->p.pool.w.pad_t};
  dnnl_memory_desc_init_by_tag(&dst, 4, dst_dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_alg_kind_t alg = l->op == MODEL_MAXPOOL      ? dnnl_pooling_max
                        : l->p.pool.count_pad ? dnnl_pooling_avg_include_padding
                                              : dnnl_pooling_avg_exclude_padding;
  dnnl_pooling_desc_t desc;
  DNNL_TRY(e, dnnl_pooling_forward_desc_init(&desc, dnnl_forward_inference, alg, memory_desc(cur),
                                             &dst, strides, kernel, pad, pad));
  return unary_step(net, &desc, cur, out, e);
}

/* A pointwise layer that follows no conv or fc: in place. */
static ttp_status plan_eltwise(onednn_net* net, const model_layer* l, dnnl_memory_t cur,
                               ttp_err* e) {
  dnnl_alg_kind_t alg;
  float alpha, beta;
  eltwise_of(l, &alg, &alpha, &beta);
  dnnl_eltwise_desc_t desc;
  DNNL_TRY(e, dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, alg, memory_desc(cur),
                                             alpha, beta));
  return unary_step(net, &desc, cur, NULL, e);
}

/* LRN across channels: oneDNN's definition is cuDNN's (alpha divided by the window), with the
   window centred as the reference centres it for odd sizes (the engine refuses even ones).
   oneDNN has JIT kernels for channels blocked or last, only its reference code for plain
   nchw: after a fully connected layer (1 x 1 positions, where nchw and nhwc are the same bytes)
   the rows are seen as nhwc. */
static ttp_status plan_lrn(onednn_net* net, const model_layer* l, dnnl_memory_t cur,
                           dnnl_memory_t* out, ttp_err* e) {
  dnnl_memory_desc_t plain;
  plain_desc(&plain, net->rows, l->in);
  if (l->in.h == 1 && l->in.w == 1 && dnnl_memory_desc_equal(memory_desc(cur), &plain)) {
    dnnl_memory_desc_t last;
    dnnl_dims_t dims = {net->rows, l->in.c, 1, 1};
    dnnl_memory_desc_init_by_tag(&last, 4, dims, dnnl_f32, dnnl_nhwc);
    TRY(net_memory(net, &last, memory_data(cur), &cur, e));
  }
  dnnl_lrn_desc_t desc;
  DNNL_TRY(e, dnnl_lrn_forward_desc_init(&desc, dnnl_forward_inference, dnnl_lrn_across_channels,
                                         memory_desc(cur), l->p.lrn.n, (float)l->p.lrn.alpha,
                                         (float)l->p.lrn.beta, (float)l->p.lrn.k));
  return unary_step(net, &desc, cur, out, e);
}

/* Softmax over each row's whole C x H x W on the host, from plain rows into plain rows. */
static ttp_status plan_softmax(onednn_net* net, const model_layer* l, dnnl_memory_t cur,
                               dnnl_memory_t* out, ttp_err* e) {
  dnnl_memory_desc_t plain;
  plain_desc(&plain, net->rows, l->in);
  dnnl_memory_t in;
  TRY(net_layout(net, cur, &plain, &in, e));
  TRY(net_memory(net, &plain, NULL, out, e));
  TRY(grow((void**)&net->steps, &net->step_capacity, net->step_count, sizeof(net_step), e));
  net->steps[net->step_count++] = (net_step){.softmax_in = memory_data(in),
                                             .softmax_out = memory_data(*out),
                                             .softmax_n = model_shape_size(l->in)};
  return TTP_OK;
}

/* ---- plan, run ------------------------------------------------------------------------------- */

static ttp_status plan_layers(onednn_net* net, const model_layer* layers, int count, ttp_err* e) {
  dnnl_memory_desc_t plain;
  plain_desc(&plain, net->rows, layers[0].in);
  dnnl_memory_t cur;
  TRY(net_memory(net, &plain, NULL, &cur, e));
  net->input = memory_data(cur);
  /* Rows the caller leaves unwritten (a batch padded up to the net's rows) hold zeros. */
  memset(net->input, 0, (size_t)net->rows * model_shape_size(layers[0].in) * sizeof(float));
  for (int i = 0; i < count; i++) {
    const model_layer* l = &layers[i];
    dnnl_memory_t next = cur;
    if (l->op == MODEL_CONV || l->op == MODEL_FC) {
      dnnl_primitive_attr_t attr;
      int fused;
      TRY(post_ops(layers, i + 1, count, &attr, &fused, e));
      ttp_status st = l->op == MODEL_CONV ? plan_conv(net, l, attr, cur, &next, e)
                                          : plan_fc(net, l, attr, cur, &next, e);
      if (attr) dnnl_primitive_attr_destroy(attr);
      TRY(st);
      i += fused;
    } else if (l->op == MODEL_MAXPOOL || l->op == MODEL_AVGPOOL) {
      TRY(plan_pool(net, l, cur, &next, e));
    } else if (l->op == MODEL_LRN) {
      TRY(plan_lrn(net, l, cur, &next, e));
    } else if (l->op == MODEL_SOFTMAX) {
      TRY(plan_softmax(net, l, cur, &next, e));
    } else {
      TRY(plan_eltwise(net, l, cur, e));
    }
    cur = next;
  }
  plain_desc(&plain, net->rows, layers[count - 1].out);
  dnnl_memory_t out;
  TRY(net_layout(net, cur, &plain, &out, e));
  net->output = memory_data(out);
  return TTP_OK;
}

ttp_status onednn_net_plan(const onednn_context* ctx, const model_layer* layers, int count,
                           int rows, onednn_net** out, ttp_err* e) {
  *out = NULL;
  if (count < 1 || rows < 1)
    return ERR(e, TTP_ERR_INTERNAL, "onednn_net_plan: %d layers, %d rows", count, rows);
  onednn_net* net = calloc(1, sizeof *net);
  if (!net) return ERR_NOMEM(e, sizeof *net);
  net->ctx = ctx;
  net->rows = rows < 2 ? 2 : rows; /* oneDNN sums a single row in another order */
  ttp_status st = plan_layers(net, layers, count, e);
  if (st != TTP_OK) {
    onednn_net_free(net);
    return st;
  }
  *out = net;
  return TTP_OK;
}

ttp_status onednn_net_run(onednn_net* net, ttp_err* e) {
  for (int i = 0; i < net->step_count; i++) {
    const net_step* s = &net->steps[i];
    if (s->primitive) {
      DNNL_TRY(e, dnnl_primitive_execute(s->primitive, net->ctx->stream, s->nargs, s->args));
      continue;
    }
    DNNL_TRY(e, dnnl_stream_wait(net->ctx->stream));
    for (int r = 0; r < net->rows; r++)
      cpu_softmax(s->softmax_in + (size_t)r * s->softmax_n, s->softmax_n,
                  s->softmax_out + (size_t)r * s->softmax_n);
  }
  DNNL_TRY(e, dnnl_stream_wait(net->ctx->stream));
  return TTP_OK;
}

float* onednn_net_input(onednn_net* net) { return net->input; }
const float* onednn_net_output(const onednn_net* net) { return net->output; }

void onednn_net_free(onednn_net* net) {
  if (!net) return;
  for (int i = 0; i < net->step_count; i++)
    if (net->steps[i].primitive) dnnl_primitive_destroy(net->steps[i].primitive);
  for (int i = 0; i < net->memory_count; i++) dnnl_memory_destroy(net->memories[i]);
  free(net->steps);
  free(net->memories);
  free(net);
}
