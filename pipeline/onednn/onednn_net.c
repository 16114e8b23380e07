/* The onednn engine's network (onednn_net.h): plan (a step per layer, or per layer and the layers
   fused into it; reorders between layouts; the weights laid out once; every value's buffer
   placed in the arena), then run. */
#include "onednn_net.h"

#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "../cpu/cpu_layers.h"

#if DNNL_VERSION_MAJOR != 2
#error "the onednn engine is written against oneDNN 2.x (Debian 12's libdnnl-dev)"
#endif

/* Arguments of a step: a concat's inputs, its output. Pointwise post-ops of one step, at most
   (a longer run of pointwise layers continues as steps of their own). Bytes each buffer's
   offset is a multiple of (a cache line, the widest vector). */
enum { MAX_ARGS = MODEL_MAX_INPUTS + 2, MAX_POST = 8, ALIGN = 64 };

/* The loops that run on the host, over plain rows. */
typedef enum host_loop {
  HOST_NONE,
  HOST_SOFTMAX,
  HOST_PAD,
  HOST_ERF,
  HOST_AVGPOOL,
  HOST_SLICE
} host_loop;

/* One step of a run: a primitive with its arguments, or a host loop from args[0] (DNNL_ARG_SRC)
   into args[1] (DNNL_ARG_DST), each rows x the layer's input and output in plain nchw. */
typedef struct net_step {
  dnnl_primitive_t primitive; /* owned by the net's primitive list, not the step */
  int nargs;
  dnnl_exec_arg_t args[MAX_ARGS];
  host_loop host;
  model_layer layer; /* a host loop's layer: its parameters and shapes (its weights unused) */
} net_step;

/* Where a memory's data lives: in a buffer of the plan, or (buffer -1) in oneDNN's own
   allocation (the weights, biases and other constants). */
typedef struct net_memory {
  dnnl_memory_t memory;
  int buffer;
} net_memory;

/* Bytes that values hold one after another during a run (a value, then a value computed over
   it in place, a view of it as another shape, ...). fixed: the input's or the output's, an
   allocation of its own for the whole run; readonly: the input's, which the caller writes and
   no step may write over. */
typedef struct net_buffer {
  size_t bytes;    /* the largest of its memories */
  int first, last; /* the first and the last step that touch it: its lifetime; -1: none does */
  int fixed, readonly;
  char* data;
} net_buffer;

struct onednn_net {
  const onednn_context* ctx;
  int rows;
  net_step* steps;
  int step_count, step_capacity;
  net_memory* memories; /* every memory the net made, freed with it */
  int memory_count, memory_capacity;
  dnnl_primitive_t* primitives;
  int primitive_count, primitive_capacity;
  net_buffer* buffers;
  int buffer_count, buffer_capacity;
  void* arena;   /* the buffers that are not fixed, each at its offset */
  void** owned;  /* the fixed buffers' allocations, and the arena's */
  int owned_count;
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

static const dnnl_memory_desc_t* memory_desc(dnnl_memory_t m) {
  const dnnl_memory_desc_t* md = NULL;
  dnnl_memory_get_memory_desc(m, &md);
  return md;
}

static float* memory_data(dnnl_memory_t m) {
  void* p = NULL;
  dnnl_memory_get_data_handle(m, &p);
  return p;
}

/* Plain rows x C x H x W floats. */
static void plain_desc(dnnl_memory_desc_t* md, int rows, model_shape s) {
  dnnl_dims_t dims = {rows, s.c, s.h, s.w};
  dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, dnnl_nchw);
}

/* A new buffer; its index into *b. */
static ttp_status net_buffer_new(onednn_net* net, int* b, ttp_err* e) {
  TRY(grow((void**)&net->buffers, &net->buffer_capacity, net->buffer_count, sizeof(net_buffer),
           e));
  net->buffers[net->buffer_count] = (net_buffer){.first = -1, .last = -1};
  *b = net->buffer_count++;
  return TTP_OK;
}

/* A memory of descriptor md on buffer b (its data placed at the plan's end), the buffer grown
   to hold it; or, b -1, with oneDNN's own allocation. */
static ttp_status net_memory_on(onednn_net* net, const dnnl_memory_desc_t* md, int b,
                                dnnl_memory_t* out, ttp_err* e) {
  TRY(grow((void**)&net->memories, &net->memory_capacity, net->memory_count, sizeof(net_memory),
           e));
  DNNL_TRY(e, dnnl_memory_create(out, md, net->ctx->engine,
                                 b < 0 ? DNNL_MEMORY_ALLOCATE : DNNL_MEMORY_NONE));
  net->memories[net->memory_count++] = (net_memory){*out, b};
  if (b >= 0) {
    const size_t bytes = dnnl_memory_desc_get_size(md);
    if (bytes > net->buffers[b].bytes) net->buffers[b].bytes = bytes;
  }
  return TTP_OK;
}

/* A memory of descriptor md on a buffer of its own. */
static ttp_status net_memory_new(onednn_net* net, const dnnl_memory_desc_t* md,
                                 dnnl_memory_t* out, ttp_err* e) {
  int b;
  TRY(net_buffer_new(net, &b, e));
  return net_memory_on(net, md, b, out, e);
}

static int buffer_of(const onednn_net* net, dnnl_memory_t m) {
  for (int i = net->memory_count - 1; i >= 0; i--)
    if (net->memories[i].memory == m) return net->memories[i].buffer;
  return -1;
}

/* What the plan needs of a primitive descriptor once the primitive exists. */
typedef struct pd_mds {
  dnnl_memory_desc_t src, weights, bias, dst;
} pd_mds;

static void query(dnnl_primitive_desc_t pd, dnnl_query_t what, int index, dnnl_memory_desc_t* md) {
  const dnnl_memory_desc_t* q = dnnl_primitive_desc_query_md(pd, what, index);
  if (q) *md = *q;
  else memset(md, 0, sizeof *md);
}

/* The primitive of pd, owned by the net, and pd's memory descriptors; destroys pd either way. */
static ttp_status net_primitive(onednn_net* net, dnnl_primitive_desc_t pd, dnnl_primitive_t* p,
                                pd_mds* mds, ttp_err* e) {
  if (mds) {
    query(pd, dnnl_query_src_md, 0, &mds->src);
    query(pd, dnnl_query_weights_md, 0, &mds->weights);
    query(pd, dnnl_query_weights_md, 1, &mds->bias);
    query(pd, dnnl_query_dst_md, 0, &mds->dst);
  }
  ttp_status st = grow((void**)&net->primitives, &net->primitive_capacity, net->primitive_count,
                       sizeof(dnnl_primitive_t), e);
  dnnl_status_t s = st == TTP_OK ? dnnl_primitive_create(p, pd) : dnnl_success;
  dnnl_primitive_desc_destroy(pd);
  if (st != TTP_OK) return st;
  if (s != dnnl_success)
    return ERR(e, s == dnnl_out_of_memory ? TTP_ERR_OUT_OF_MEMORY : TTP_ERR_INTERNAL,
               "dnnl_primitive_create: %s", onednn_status_name(s));
  net->primitives[net->primitive_count++] = *p;
  return TTP_OK;
}

/* Whether oneDNN's implementation `name` gives a row the same bits whatever the rows and the
   threads (seen on AVX2): its 1x1 convolutions ("jit_1x1:avx2") and its GEMM-based ones
   ("gemm:jit") split their sums by heuristics of both, where the direct ones do not; and
   "simple_nchw" poolings, offered at some batch sizes and not others, average a window in
   another order than "ref" does. */
static int row_invariant(const char* name) {
  return strncmp(name, "jit_1x1", 7) != 0 && strncmp(name, "simple_nchw", 11) != 0 &&
         !strstr(name, "gemm");
}

/* pd of an operation descriptor under attr (NULL: none): oneDNN's first implementation that is
   row_invariant, else its first. */
static ttp_status net_pd(onednn_net* net, const_dnnl_op_desc_t desc,
                         const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t* pd, ttp_err* e) {
  dnnl_primitive_desc_iterator_t it;
  DNNL_TRY(e, dnnl_primitive_desc_iterator_create(&it, desc, attr, net->ctx->engine, NULL));
  *pd = NULL;
  do {
    dnnl_primitive_desc_t candidate = dnnl_primitive_desc_iterator_fetch(it);
    const char* name = "";
    if (candidate) dnnl_primitive_desc_query(candidate, dnnl_query_impl_info_str, 0, &name);
    if (candidate && row_invariant(name)) {
      if (*pd) dnnl_primitive_desc_destroy(*pd);
      *pd = candidate;
      break;
    }
    if (candidate && !*pd) *pd = candidate; /* the first, kept unless a later one suits */
    else if (candidate) dnnl_primitive_desc_destroy(candidate);
  } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
  dnnl_primitive_desc_iterator_destroy(it);
  if (!*pd) return ERR(e, TTP_ERR_INTERNAL, "oneDNN offered no implementation");
  return TTP_OK;
}

static ttp_status net_add_step(onednn_net* net, dnnl_primitive_t p, int nargs,
                               const dnnl_exec_arg_t* args, ttp_err* e) {
  TRY(grow((void**)&net->steps, &net->step_capacity, net->step_count, sizeof(net_step), e));
  net_step* step = &net->steps[net->step_count++];
  memset(step, 0, sizeof *step);
  step->primitive = p;
  step->nargs = nargs;
  memcpy(step->args, args, (size_t)nargs * sizeof *args);
  return TTP_OK;
}

static ttp_status net_host_step(onednn_net* net, host_loop loop, const model_layer* l,
                                dnnl_memory_t in, dnnl_memory_t out, ttp_err* e) {
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, in}, {DNNL_ARG_DST, out}};
  TRY(net_add_step(net, NULL, 2, args, e));
  net_step* step = &net->steps[net->step_count - 1];
  step->host = loop;
  step->layer = *l;
  step->layer.weights = step->layer.bias = NULL;
  return TTP_OK;
}

/* A reorder step from `from` into `to`. */
static ttp_status net_reorder(onednn_net* net, dnnl_memory_t from, dnnl_memory_t to, ttp_err* e) {
  dnnl_primitive_desc_t pd;
  DNNL_TRY(e, dnnl_reorder_primitive_desc_create(&pd, memory_desc(from), net->ctx->engine,
                                                 memory_desc(to), net->ctx->engine, NULL));
  dnnl_primitive_t p;
  TRY(net_primitive(net, pd, &p, NULL, e));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return net_add_step(net, p, 2, args, e);
}

/* A constant of descriptor md (a new memory of oneDNN's allocation) filled, once, at plan time,
   from host floats laid out as from_md. */
static ttp_status net_constant(onednn_net* net, const float* host,
                               const dnnl_memory_desc_t* from_md, const dnnl_memory_desc_t* md,
                               dnnl_memory_t* to, ttp_err* e) {
  TRY(net_memory_on(net, md, -1, to, e));
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

/* A per-channel constant of n floats (C, or 1 for all channels) as a 1 x n x 1 x 1 tensor, the
   second input of a binary primitive (broadcast over rows and positions). */
static void channel_desc(dnnl_memory_desc_t* md, int n) {
  dnnl_dims_t dims = {1, n, 1, 1};
  dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, dnnl_nchw);
}

/* ---- the plan's view of the model ------------------------------------------------------------ */

/* A value while the net is planned: its memory in its producer's layout, and copies of it in
   other layouts made for its readers (each made once). */
typedef struct net_value {
  dnnl_memory_t memory, plain, other;
  int memory_buffer, plain_buffer, other_buffer; /* their buffers (buffer_of) */
  int pending; /* reads by layers not yet planned (the output: one more, the caller's) */
} net_value;

typedef struct planner {
  onednn_net* net;
  const model* m;
  net_value* values; /* layer_count + 1 */
  char* done;        /* layers planned (fused ones too) */
  char* live;        /* layers whose output the model's output depends on */
} planner;

static model_shape shape_of(const planner* pl, int v) { return model_value_shape(pl->m, v); }

static int same_shape(model_shape a, model_shape b) {
  return a.c == b.c && a.h == b.h && a.w == b.w;
}

/* Whether a layer's step may write its output over memory mem: no later read of any value held
   in mem's buffer but the one read the layer at hand makes, and not the caller's input. */
static int writable(const planner* pl, dnnl_memory_t mem) {
  const int b = buffer_of(pl->net, mem);
  if (b < 0 || pl->net->buffers[b].readonly) return 0;
  int reads = 0;
  for (int v = 0; v <= pl->m->layer_count; v++) {
    const net_value* x = &pl->values[v];
    if ((x->memory && x->memory_buffer == b) || (x->plain && x->plain_buffer == b) ||
        (x->other && x->other_buffer == b))
      reads += x->pending;
  }
  return reads == 1;
}

/* Value v made in memory m (and, where m is plain nchw, its plain copy is m itself). */
static void made(planner* pl, int v, dnnl_memory_t m) {
  net_value* x = &pl->values[v];
  x->memory = m;
  x->memory_buffer = buffer_of(pl->net, m);
  dnnl_memory_desc_t plain;
  plain_desc(&plain, pl->net->rows, shape_of(pl, v));
  if (dnnl_memory_desc_equal(memory_desc(m), &plain)) {
    x->plain = m;
    x->plain_buffer = x->memory_buffer;
  }
}

/* Layer i's reads made: each value it reads has one reader fewer to wait for. */
static void consume(planner* pl, int i) {
  const model_layer* l = &pl->m->layers[i];
  for (int k = 0; k < l->input_count; k++) pl->values[l->inputs[k]].pending--;
  pl->done[i] = 1;
}

/* Layer i planned, its output in memory out. */
static void planned(planner* pl, int i, dnnl_memory_t out) {
  consume(pl, i);
  made(pl, i + 1, out);
}

/* Value v in plain nchw: its memory, or a copy made once by a reorder. */
static ttp_status plain_of(planner* pl, int v, dnnl_memory_t* out, ttp_err* e) {
  net_value* x = &pl->values[v];
  if (!x->plain) {
    dnnl_memory_desc_t plain;
    plain_desc(&plain, pl->net->rows, shape_of(pl, v));
    TRY(net_memory_new(pl->net, &plain, &x->plain, e));
    x->plain_buffer = buffer_of(pl->net, x->plain);
    TRY(net_reorder(pl->net, x->memory, x->plain, e));
  }
  *out = x->plain;
  return TTP_OK;
}

/* Value v in the layout `want` (a primitive's choice for its input): its memory, its plain copy,
   or a copy made by a reorder (kept for the next reader that wants the same). */
static ttp_status layout_of(planner* pl, int v, const dnnl_memory_desc_t* want, dnnl_memory_t* out,
                            ttp_err* e) {
  net_value* x = &pl->values[v];
  const dnnl_memory_t have[] = {x->memory, x->plain, x->other};
  for (int k = 0; k < 3; k++)
    if (have[k] && dnnl_memory_desc_equal(memory_desc(have[k]), want)) {
      *out = have[k];
      return TTP_OK;
    }
  TRY(net_memory_new(pl->net, want, out, e));
  TRY(net_reorder(pl->net, x->memory, *out, e));
  x->other = *out;
  x->other_buffer = buffer_of(pl->net, *out);
  return TTP_OK;
}

/* ---- fusions --------------------------------------------------------------------------------- */

typedef struct eltwise_op {
  dnnl_alg_kind_t alg;
  float alpha, beta;
} eltwise_op;

/* The pointwise layers as oneDNN's eltwise algorithms (HardSigmoid as two: a linear one and a
   clip); how many into ops, 0 for any other layer (Erf has none in oneDNN 2.6). */
static int eltwise_ops(const model_layer* l, eltwise_op* ops) {
  switch (l->op) {
    case MODEL_RELU: ops[0] = (eltwise_op){dnnl_eltwise_relu, 0, 0}; return 1;
    case MODEL_LEAKY_RELU: ops[0] = (eltwise_op){dnnl_eltwise_relu, l->p.leaky.alpha, 0}; return 1;
    case MODEL_SIGMOID: ops[0] = (eltwise_op){dnnl_eltwise_logistic, 0, 0}; return 1;
    case MODEL_TANH: ops[0] = (eltwise_op){dnnl_eltwise_tanh, 0, 0}; return 1;
    case MODEL_CLIP:
      ops[0] = (eltwise_op){dnnl_eltwise_clip, l->p.clip.lo, l->p.clip.hi};
      return 1;
    case MODEL_HARDSWISH: ops[0] = (eltwise_op){dnnl_eltwise_hardswish, 0, 0}; return 1;
    case MODEL_HARDSIGMOID:
      ops[0] = (eltwise_op){dnnl_eltwise_linear, l->p.hard.alpha, l->p.hard.beta};
      ops[1] = (eltwise_op){dnnl_eltwise_clip, 0, 1};
      return 2;
    case MODEL_GELU: ops[0] = (eltwise_op){dnnl_eltwise_gelu_erf, 0, 0}; return 1;
    case MODEL_ELU: ops[0] = (eltwise_op){dnnl_eltwise_elu, l->p.elu.alpha, 0}; return 1;
    case MODEL_SOFTPLUS: ops[0] = (eltwise_op){dnnl_eltwise_soft_relu, 0, 0}; return 1;
    case MODEL_MISH: ops[0] = (eltwise_op){dnnl_eltwise_mish, 0, 0}; return 1;
    default: return 0;
  }
}

/* What a step computes beyond its own layer: the affine layers folded into a convolution's or
   inner product's weights, a residual Add as a sum post-op, the pointwise layers as eltwise
   post-ops; the layers so taken, and the value the step makes. */
typedef struct fusion {
  int affines[MAX_POST], affine_count;
  int sum; /* the Add's other input, which the step accumulates into; 0: none */
  eltwise_op post[MAX_POST];
  int posts;
  int taken[3 * MAX_POST + 1], taken_count;
  int value;
} fusion;

/* The one layer still to plan that reads value v, or -1: v read by none or by several, or the
   model's output (which the caller reads). */
static int sole_reader(const planner* pl, int v) {
  if (v == pl->m->layer_count || pl->values[v].pending != 1) return -1;
  for (int j = v; j < pl->m->layer_count; j++) {
    if (pl->done[j] || !pl->live[j]) continue;
    const model_layer* l = &pl->m->layers[j];
    for (int k = 0; k < l->input_count; k++)
      if (l->inputs[k] == v) return j;
  }
  return -1;
}

/* The layers that fuse into layer i's step, in the order they follow it: affines (`weighted`:
   a convolution or inner product, before any other), a residual Add (`sum`: a convolution,
   before any post-op), pointwise layers. */
static void plan_fusion(const planner* pl, int i, int weighted, int sum, fusion* f) {
  memset(f, 0, sizeof *f);
  int cur = i + 1;
  for (;;) {
    const int j = sole_reader(pl, cur);
    if (j < 0 || f->taken_count == (int)(sizeof f->taken / sizeof *f->taken)) break;
    const model_layer* l = &pl->m->layers[j];
    eltwise_op ops[2];
    const int n = eltwise_ops(l, ops);
    if (l->op == MODEL_AFFINE && weighted && !f->posts && !f->sum &&
        f->affine_count < MAX_POST) {
      f->affines[f->affine_count++] = j;
    } else if (n && f->posts + n <= MAX_POST) {
      for (int k = 0; k < n; k++) f->post[f->posts++] = ops[k];
    } else if (l->op == MODEL_ADD && sum && !f->posts && !f->sum && l->input_count == 2) {
      /* The other input must be made before layer i runs, have the Add's shape, and nothing
         after the Add may read its buffer, which the convolution accumulates into. */
      const int o = l->inputs[0] == cur ? l->inputs[1] : l->inputs[0];
      if (o == cur || o > i || !same_shape(shape_of(pl, o), shape_of(pl, cur)) ||
          !writable(pl, pl->values[o].memory))
        break;
      f->sum = o;
    } else {
      break;
    }
    f->taken[f->taken_count++] = j;
    cur = j + 1;
  }
  f->value = cur;
}

/* f's post-ops as an attribute (NULL when there are none): the sum first, then the eltwise
   ones; shift (not NULL): before them a binary add of that per-channel constant. */
static ttp_status fusion_attr(const fusion* f, const dnnl_memory_desc_t* shift,
                              dnnl_primitive_attr_t* attr, ttp_err* e) {
  *attr = NULL;
  if (!f->sum && !f->posts && !shift) return TTP_OK;
  dnnl_post_ops_t ops;
  DNNL_TRY(e, dnnl_post_ops_create(&ops));
  dnnl_status_t s = dnnl_success;
  if (shift) s = dnnl_post_ops_append_binary(ops, dnnl_binary_add, shift);
  if (s == dnnl_success && f->sum) s = dnnl_post_ops_append_sum(ops, 1.0f);
  for (int k = 0; k < f->posts && s == dnnl_success; k++)
    s = dnnl_post_ops_append_eltwise(ops, 1.0f, f->post[k].alg, f->post[k].alpha, f->post[k].beta);
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

static ttp_status pd_with(onednn_net* net, const_dnnl_op_desc_t desc, const fusion* f,
                          const dnnl_memory_desc_t* shift, dnnl_primitive_desc_t* pd, ttp_err* e) {
  dnnl_primitive_attr_t attr;
  TRY(fusion_attr(f, shift, &attr, e));
  ttp_status st = net_pd(net, desc, attr, pd, e);
  if (attr) dnnl_primitive_attr_destroy(attr);
  return st;
}

/* The step's output made: value f->value is `out`; the fused layers planned. */
static void fusion_done(planner* pl, int i, const fusion* f, dnnl_memory_t out) {
  consume(pl, i);
  for (int k = 0; k < f->taken_count; k++) consume(pl, f->taken[k]);
  made(pl, f->value, out);
}

/* ---- convolution and inner product ---------------------------------------------------------- */

/* Layer l's weights and bias with the affines of f folded in: output channel k's weights times
   its scales, its bias times them plus the shifts, in double and rounded once. *w and *b are
   the model's own arrays where nothing folds, else new ones (*owned set) that the caller
   frees; *b NULL where there is no bias. */
static ttp_status folded(const planner* pl, const model_layer* l, const fusion* f, size_t outs,
                         float** w, float** b, int* owned, ttp_err* e) {
  *w = l->weights, *b = l->bias, *owned = 0;
  if (!f->affine_count) return TTP_OK;
  int shifted = l->bias != NULL;
  for (int a = 0; a < f->affine_count; a++) shifted |= pl->m->layers[f->affines[a]].bias != NULL;
  *w = malloc(l->weight_count * sizeof **w);
  *b = shifted ? malloc(outs * sizeof **b) : NULL;
  if (!*w || (shifted && !*b)) {
    free(*w), free(*b);
    return ERR_NOMEM(e, (l->weight_count + outs) * sizeof(float));
  }
  *owned = 1;
  const size_t per = l->weight_count / outs;
  for (size_t k = 0; k < outs; k++) {
    double scale = 1, shift = l->bias ? l->bias[k] : 0;
    for (int a = 0; a < f->affine_count; a++) {
      const model_layer* af = &pl->m->layers[f->affines[a]];
      const size_t j = af->weight_count == 1 ? 0 : k;
      scale *= af->weights[j];
      shift = shift * af->weights[j] + (af->bias ? af->bias[j] : 0);
    }
    for (size_t t = 0; t < per; t++) (*w)[k * per + t] = (float)(l->weights[k * per + t] * scale);
    if (*b) (*b)[k] = (float)shift;
  }
  return TTP_OK;
}

/* A convolution (groups, dilation, two strides, uneven padding) or inner product with what
   fuses into it. Its weights in the layout the primitive chose; its input reordered to the
   layout it wants where it has another; its output in the layout it chose, or the memory of
   the Add's other input it accumulates into. An inner product's output (rows x out, nc) is seen
   from then on as rows x out x 1 x 1 (nchw: the same bytes). */
static ttp_status plan_weighted(planner* pl, int i, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  const int conv = l->op == MODEL_CONV;
  fusion f;
  plan_fusion(pl, i, 1, conv, &f);
  const int outs = conv ? l->p.conv.k : l->p.fc.out;
  const int g = conv && l->p.conv.groups > 1 ? l->p.conv.groups : 1;
  dnnl_memory_desc_t src, w, user_w, b, dst;
  dnnl_dims_t src_dims = {net->rows, l->in.c, l->in.h, l->in.w};
  dnnl_dims_t b_dims = {outs};
  dnnl_memory_desc_init_by_tag(&src, 4, src_dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&b, 1, b_dims, dnnl_f32, dnnl_x);
  float *weights, *bias;
  int owned;
  TRY(folded(pl, l, &f, (size_t)outs, &weights, &bias, &owned, e));
  dnnl_primitive_desc_t pd = NULL;
  ttp_status st;
  if (conv) {
    const model_window* win = &l->p.conv.w;
    dnnl_dims_t w_dims = {outs, l->in.c, win->r, win->s};
    dnnl_dims_t g_dims = {g, outs / g, l->in.c / g, win->r, win->s};
    dnnl_dims_t dst_dims = {net->rows, l->out.c, l->out.h, l->out.w};
    dnnl_dims_t strides = {win->stride_h, win->stride_w};
    dnnl_dims_t dilates = {win->dil_h - 1, win->dil_w - 1}; /* oneDNN counts the gaps */
    dnnl_dims_t pad_l = {win->pad_t, win->pad_l}, pad_r = {win->pad_b, win->pad_r};
    if (g > 1) {
      dnnl_memory_desc_init_by_tag(&w, 5, g_dims, dnnl_f32, dnnl_format_tag_any);
      dnnl_memory_desc_init_by_tag(&user_w, 5, g_dims, dnnl_f32, dnnl_goihw);
    } else {
      dnnl_memory_desc_init_by_tag(&w, 4, w_dims, dnnl_f32, dnnl_format_tag_any);
      dnnl_memory_desc_init_by_tag(&user_w, 4, w_dims, dnnl_f32, dnnl_oihw);
    }
    dnnl_memory_desc_init_by_tag(&dst, 4, dst_dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_convolution_desc_t desc;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(
        &desc, dnnl_forward_inference, dnnl_convolution_direct, &src, &w, bias ? &b : NULL, &dst,
        strides, dilates, pad_l, pad_r);
    st = s == dnnl_success ? pd_with(net, &desc, &f, NULL, &pd, e)
                           : ERR(e, TTP_ERR_INTERNAL, "layer %s: convolution: %s", l->name,
                                 onednn_status_name(s));
  } else {
    /* A convolution whose window is the whole input: oneDNN's inner product (a GEMM) sums a
       row's products in an order that depends on the rows it is given and on the threads (seen
       on AVX2), its direct convolution does not. Its output in the layout it chooses, then
       plain rows (rows x out x 1 x 1: an nc matrix's bytes). */
    dnnl_dims_t w_dims = {outs, l->in.c, l->in.h, l->in.w};
    dnnl_dims_t dst_dims = {net->rows, outs, 1, 1};
    dnnl_dims_t ones = {1, 1}, zeros = {0, 0};
    dnnl_memory_desc_init_by_tag(&w, 4, w_dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&user_w, 4, w_dims, dnnl_f32, dnnl_oihw);
    dnnl_memory_desc_init_by_tag(&dst, 4, dst_dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_convolution_desc_t desc;
    dnnl_status_t s = dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                                         dnnl_convolution_direct, &src, &w,
                                                         bias ? &b : NULL, &dst, ones, zeros,
                                                         zeros);
    st = s == dnnl_success ? pd_with(net, &desc, &f, NULL, &pd, e)
                           : ERR(e, TTP_ERR_INTERNAL, "layer %s: fully connected: %s", l->name,
                                 onednn_status_name(s));
  }
  dnnl_primitive_t p = NULL;
  pd_mds mds;
  if (st == TTP_OK) st = net_primitive(net, pd, &p, &mds, e);
  dnnl_memory_t src_m = NULL, w_m = NULL, b_m = NULL, dst_m = NULL;
  if (st == TTP_OK) st = net_constant(net, weights, &user_w, &mds.weights, &w_m, e);
  if (st == TTP_OK && bias) st = net_constant(net, bias, &b, &mds.bias, &b_m, e);
  if (owned) free(weights), free(bias);
  TRY(st);
  TRY(layout_of(pl, l->inputs[0], &mds.src, &src_m, e));
  if (f.sum) {
    dnnl_memory_t other = pl->values[f.sum].memory;
    if (dnnl_memory_desc_equal(memory_desc(other), &mds.dst)) {
      dst_m = other;
    } else {
      TRY(net_memory_new(net, &mds.dst, &dst_m, e));
      TRY(net_reorder(net, other, dst_m, e));
    }
  } else {
    TRY(net_memory_new(net, &mds.dst, &dst_m, e));
  }
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_DST, dst_m},
                            {DNNL_ARG_BIAS, b_m}};
  TRY(net_add_step(net, p, b_m ? 4 : 3, args, e));
  if (!conv) { /* seen from here on as rows x out x 1 x 1 in plain rows */
    dnnl_memory_desc_t plain;
    plain_desc(&plain, net->rows, l->out);
    if (!dnnl_memory_desc_equal(&plain, &mds.dst)) {
      dnnl_memory_t rows;
      TRY(net_memory_new(net, &plain, &rows, e));
      TRY(net_reorder(net, dst_m, rows, e));
      dst_m = rows;
    }
  }
  fusion_done(pl, i, &f, dst_m);
  return TTP_OK;
}

/* ---- pointwise, binary, affine --------------------------------------------------------------- */

/* Where a step that reads memory `in` writes a result of the same layout: over it, where
   nothing reads it later, else a new memory. */
static ttp_status output_like(planner* pl, dnnl_memory_t in, dnnl_memory_t* out, ttp_err* e) {
  if (writable(pl, in)) {
    *out = in;
    return TTP_OK;
  }
  return net_memory_new(pl->net, memory_desc(in), out, e);
}

/* Eltwise steps of ops[0 .. n-1] from `in` into `out`, the first reading in, the rest out. */
static ttp_status eltwise_steps(onednn_net* net, const eltwise_op* ops, int n, dnnl_memory_t in,
                                dnnl_memory_t out, ttp_err* e) {
  for (int k = 0; k < n; k++) {
    dnnl_eltwise_desc_t desc;
    DNNL_TRY(e, dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, ops[k].alg,
                                               memory_desc(out), ops[k].alpha, ops[k].beta));
    dnnl_primitive_desc_t pd;
    TRY(net_pd(net, &desc, NULL, &pd, e));
    dnnl_primitive_t p;
    TRY(net_primitive(net, pd, &p, NULL, e));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, k ? out : in}, {DNNL_ARG_DST, out}};
    TRY(net_add_step(net, p, 2, args, e));
  }
  return TTP_OK;
}

/* A pointwise layer that follows nothing it fuses into, and the pointwise layers after it:
   eltwise steps, in place where its input is read by nothing else. */
static ttp_status plan_eltwise(planner* pl, int i, ttp_err* e) {
  const model_layer* l = &pl->m->layers[i];
  fusion f;
  plan_fusion(pl, i, 0, 0, &f);
  eltwise_op ops[MAX_POST + 2];
  int n = eltwise_ops(l, ops);
  for (int k = 0; k < f.posts; k++) ops[n++] = f.post[k];
  dnnl_memory_t in = pl->values[l->inputs[0]].memory, out;
  TRY(output_like(pl, in, &out, e));
  TRY(eltwise_steps(pl->net, ops, n, in, out, e));
  fusion_done(pl, i, &f, out);
  return TTP_OK;
}

/* One binary step of alg: dst = src0 (op) src1, the post-ops of f (when not NULL) and shift (a
   binary add of a per-channel constant, when not NULL) after it. */
static ttp_status binary_step(planner* pl, dnnl_alg_kind_t alg, dnnl_memory_t src0,
                              dnnl_memory_t src1, dnnl_memory_t dst, const fusion* f,
                              dnnl_memory_t shift, ttp_err* e) {
  onednn_net* net = pl->net;
  dnnl_binary_desc_t desc;
  DNNL_TRY(e, dnnl_binary_desc_init(&desc, alg, memory_desc(src0), memory_desc(src1),
                                    memory_desc(dst)));
  const fusion none = {0};
  dnnl_primitive_desc_t pd;
  TRY(pd_with(net, &desc, f ? f : &none, shift ? memory_desc(shift) : NULL, &pd, e));
  dnnl_primitive_t p;
  TRY(net_primitive(net, pd, &p, NULL, e));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, shift}};
  return net_add_step(net, p, shift ? 4 : 3, args, e);
}

/* Add (2 to 32 inputs), Sub, Mul, Div: binary steps, the first into a new memory (or over
   inputs[0] where nothing else reads it), each next one in place; an input of the output's
   shape in another layout reordered to the first's; a broadcast one (C x 1 x 1, 1 x 1 x 1) as it
   is. The pointwise layers after it as the last step's post-ops. */
static ttp_status plan_binary(planner* pl, int i, ttp_err* e) {
  const model_layer* l = &pl->m->layers[i];
  const dnnl_alg_kind_t alg = l->op == MODEL_ADD   ? dnnl_binary_add
                              : l->op == MODEL_SUB ? dnnl_binary_sub
                              : l->op == MODEL_MUL ? dnnl_binary_mul
                                                   : dnnl_binary_div;
  fusion f;
  plan_fusion(pl, i, 0, 0, &f);
  dnnl_memory_t first = pl->values[l->inputs[0]].memory, out;
  TRY(output_like(pl, first, &out, e));
  for (int k = 1; k < l->input_count; k++) {
    dnnl_memory_t other = pl->values[l->inputs[k]].memory;
    if (same_shape(shape_of(pl, l->inputs[k]), l->out))
      TRY(layout_of(pl, l->inputs[k], memory_desc(first), &other, e));
    TRY(binary_step(pl, alg, k == 1 ? first : out, other, out,
                    k == l->input_count - 1 ? &f : NULL, NULL, e));
  }
  fusion_done(pl, i, &f, out);
  return TTP_OK;
}

/* An affine that follows no convolution or inner product it folds into: a binary multiply by
   the scales (C, or one for all channels) with the shifts' add and the pointwise layers after
   it as post-ops. */
static ttp_status plan_affine(planner* pl, int i, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  fusion f;
  plan_fusion(pl, i, 0, 0, &f);
  dnnl_memory_desc_t md;
  channel_desc(&md, (int)l->weight_count);
  dnnl_memory_t scale, shift = NULL;
  TRY(net_constant(net, l->weights, &md, &md, &scale, e));
  if (l->bias) TRY(net_constant(net, l->bias, &md, &md, &shift, e));
  dnnl_memory_t in = pl->values[l->inputs[0]].memory, out;
  TRY(output_like(pl, in, &out, e));
  TRY(binary_step(pl, dnnl_binary_mul, in, scale, out, &f, shift, e));
  fusion_done(pl, i, &f, out);
  return TTP_OK;
}

/* ---- the other layers ------------------------------------------------------------------------ */

/* The padding after the input (pad_b or pad_r) that gives oneDNN's output size, whose formula
   has no ceil mode: the model's own where it fits, else the least that does (a ceil mode's
   last window reaching past the model's padding). */
static int pool_end_pad(int in, int out, int k, int stride, int begin, int end) {
  const int least = (out - 1) * stride + k - in - begin;
  return end >= least && end < least + stride ? end : least;
}

/* Max and average pooling, from the input's layout into the one oneDNN chooses. Ceil mode as
   padding after the input. The one case oneDNN cannot take, average pooling that counts the
   padding where a ceil-mode window passes it, runs on the host (cpu_avgpool); where the model
   has no padding at all that divisor is the positions inside the input, oneDNN's
   exclude-padding one. */
static ttp_status plan_pool(planner* pl, int i, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  const model_window* w = &l->p.pool.w;
  const int pad_b = pool_end_pad(l->in.h, l->out.h, w->r, w->stride_h, w->pad_t, w->pad_b);
  const int pad_r = pool_end_pad(l->in.w, l->out.w, w->s, w->stride_w, w->pad_l, w->pad_r);
  const int padded = w->pad_t || w->pad_l || w->pad_b || w->pad_r;
  const int past = pad_b > w->pad_b || pad_r > w->pad_r;
  const int counted = l->op == MODEL_AVGPOOL && l->p.pool.count_pad && padded;
  dnnl_memory_t in = pl->values[l->inputs[0]].memory, out;
  if (counted && past) {
    dnnl_memory_desc_t plain;
    plain_desc(&plain, net->rows, l->out);
    TRY(plain_of(pl, l->inputs[0], &in, e));
    TRY(net_memory_new(net, &plain, &out, e));
    TRY(net_host_step(net, HOST_AVGPOOL, l, in, out, e));
    planned(pl, i, out);
    return TTP_OK;
  }
  dnnl_memory_desc_t dst;
  dnnl_dims_t dst_dims = {net->rows, l->out.c, l->out.h, l->out.w};
  dnnl_dims_t strides = {w->stride_h, w->stride_w}, kernel = {w->r, w->s};
  dnnl_dims_t pad_l = {w->pad_t, w->pad_l}, pad_end = {pad_b, pad_r};
  dnnl_memory_desc_init_by_tag(&dst, 4, dst_dims, dnnl_f32, dnnl_format_tag_any);
  const dnnl_alg_kind_t alg = l->op == MODEL_MAXPOOL ? dnnl_pooling_max
                              : counted              ? dnnl_pooling_avg_include_padding
                                                     : dnnl_pooling_avg_exclude_padding;
  dnnl_pooling_desc_t desc;
  DNNL_TRY(e, dnnl_pooling_forward_desc_init(&desc, dnnl_forward_inference, alg, memory_desc(in),
                                             &dst, strides, kernel, pad_l, pad_end));
  dnnl_primitive_desc_t pd;
  TRY(net_pd(net, &desc, NULL, &pd, e));
  dnnl_primitive_t p;
  pd_mds mds;
  TRY(net_primitive(net, pd, &p, &mds, e));
  TRY(net_memory_new(net, &mds.dst, &out, e));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, in}, {DNNL_ARG_DST, out}};
  TRY(net_add_step(net, p, 2, args, e));
  planned(pl, i, out);
  return TTP_OK;
}

/* A primitive of one input and one output from its descriptor: from `in` into a new memory in
   the layout oneDNN chooses; *out that memory. */
static ttp_status unary_step(onednn_net* net, const_dnnl_op_desc_t desc, dnnl_memory_t in,
                             dnnl_memory_t* out, ttp_err* e) {
  dnnl_primitive_desc_t pd;
  TRY(net_pd(net, desc, NULL, &pd, e));
  dnnl_primitive_t p;
  pd_mds mds;
  TRY(net_primitive(net, pd, &p, &mds, e));
  TRY(net_memory_new(net, &mds.dst, out, e));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, in}, {DNNL_ARG_DST, *out}};
  return net_add_step(net, p, 2, args, e);
}

/* LRN across channels: oneDNN's definition is cuDNN's (alpha divided by the window), with the
   window centred as the reference centres it for odd sizes (the engine refuses even ones).
   oneDNN has JIT kernels for channels blocked or last, only its reference code for plain
   nchw: rows of 1 x 1 positions in nchw (after an inner product), where nchw and nhwc are the
   same bytes, are seen as nhwc. */
static ttp_status plan_lrn(planner* pl, int i, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  dnnl_memory_t in = pl->values[l->inputs[0]].memory;
  dnnl_memory_desc_t plain;
  plain_desc(&plain, net->rows, l->in);
  if (l->in.h == 1 && l->in.w == 1 && dnnl_memory_desc_equal(memory_desc(in), &plain)) {
    dnnl_memory_desc_t last;
    dnnl_dims_t dims = {net->rows, l->in.c, 1, 1};
    dnnl_memory_desc_init_by_tag(&last, 4, dims, dnnl_f32, dnnl_nhwc);
    TRY(net_memory_on(net, &last, buffer_of(net, in), &in, e));
  }
  dnnl_lrn_desc_t desc;
  DNNL_TRY(e, dnnl_lrn_forward_desc_init(&desc, dnnl_forward_inference, dnnl_lrn_across_channels,
                                         memory_desc(in), l->p.lrn.n, (float)l->p.lrn.alpha,
                                         (float)l->p.lrn.beta, (float)l->p.lrn.k));
  dnnl_memory_t out;
  TRY(unary_step(net, &desc, in, &out, e));
  planned(pl, i, out);
  return TTP_OK;
}

/* Channel shuffle of g groups: oneDNN's shuffle of group size C / g (its groups are the
   transposed matrix's rows). */
static ttp_status plan_shuffle(planner* pl, int i, ttp_err* e) {
  const model_layer* l = &pl->m->layers[i];
  dnnl_memory_t in = pl->values[l->inputs[0]].memory, out;
  dnnl_shuffle_desc_t desc;
  DNNL_TRY(e, dnnl_shuffle_forward_desc_init(&desc, dnnl_forward_inference, memory_desc(in), 1,
                                             l->in.c / l->p.shuffle.groups));
  TRY(unary_step(pl->net, &desc, in, &out, e));
  planned(pl, i, out);
  return TTP_OK;
}

/* PReLU: oneDNN's, its slopes (C, or one for all) a 1 x C x 1 x 1 tensor laid out as it wants. */
static ttp_status plan_prelu(planner* pl, int i, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  dnnl_memory_t in = pl->values[l->inputs[0]].memory, out, slopes;
  dnnl_memory_desc_t user, any;
  channel_desc(&user, (int)l->weight_count);
  dnnl_dims_t dims = {1, (dnnl_dim_t)l->weight_count, 1, 1};
  dnnl_memory_desc_init_by_tag(&any, 4, dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_prelu_desc_t desc;
  DNNL_TRY(e, dnnl_prelu_forward_desc_init(&desc, dnnl_forward_inference, memory_desc(in), &any));
  dnnl_primitive_desc_t pd;
  TRY(net_pd(net, &desc, NULL, &pd, e));
  dnnl_primitive_t p;
  pd_mds mds;
  TRY(net_primitive(net, pd, &p, &mds, e));
  TRY(net_constant(net, l->weights, &user, &mds.weights, &slopes, e));
  TRY(net_memory_new(net, &mds.dst, &out, e));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, slopes}, {DNNL_ARG_DST, out}};
  TRY(net_add_step(net, p, 3, args, e));
  planned(pl, i, out);
  return TTP_OK;
}

/* Concatenation of the channels: oneDNN's, from each input's layout into plain rows (left to
   choose, it took another layout at a few rows than at many, and the layers after it other
   implementations with other bits). */
static ttp_status plan_concat(planner* pl, int i, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  dnnl_memory_desc_t srcs[MODEL_MAX_INPUTS], dst;
  dnnl_exec_arg_t args[MAX_ARGS];
  for (int k = 0; k < l->input_count; k++) {
    dnnl_memory_t in = pl->values[l->inputs[k]].memory;
    srcs[k] = *memory_desc(in);
    args[k] = (dnnl_exec_arg_t){DNNL_ARG_MULTIPLE_SRC + k, in};
  }
  plain_desc(&dst, net->rows, l->out);
  dnnl_primitive_desc_t pd;
  DNNL_TRY(e, dnnl_concat_primitive_desc_create(&pd, &dst, l->input_count, 1, srcs, NULL,
                                                net->ctx->engine));
  dnnl_primitive_t p;
  pd_mds mds;
  TRY(net_primitive(net, pd, &p, &mds, e));
  dnnl_memory_t out;
  TRY(net_memory_new(net, &mds.dst, &out, e));
  args[l->input_count] = (dnnl_exec_arg_t){DNNL_ARG_DST, out};
  TRY(net_add_step(net, p, l->input_count + 1, args, e));
  planned(pl, i, out);
  return TTP_OK;
}

/* A slice (channels, rows and columns, with steps): a reorder from a strided view of the plain
   input (its strides the steps', its offset the first element's) into plain rows. oneDNN takes
   a view only where no dimension's extent passes the next outer one's stride (the rows' last
   step within the channel: out.h step_h <= H, and the columns' likewise); other slices run on
   the host (cpu_slice). */
static ttp_status plan_slice(planner* pl, int i, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  const model_shape s = l->in, o = l->out;
  dnnl_memory_t in, view, out;
  TRY(plain_of(pl, l->inputs[0], &in, e));
  dnnl_memory_desc_t plain;
  plain_desc(&plain, net->rows, o);
  TRY(net_memory_new(net, &plain, &out, e));
  if (o.h * l->p.slice.step_h > s.h || o.w * l->p.slice.step_w > s.w) {
    TRY(net_host_step(net, HOST_SLICE, l, in, out, e));
  } else {
    dnnl_memory_desc_t view_md;
    dnnl_dims_t dims = {net->rows, o.c, o.h, o.w};
    dnnl_dims_t strides = {(dnnl_dim_t)s.c * s.h * s.w, (dnnl_dim_t)s.h * s.w,
                           (dnnl_dim_t)l->p.slice.step_h * s.w, l->p.slice.step_w};
    DNNL_TRY(e, dnnl_memory_desc_init_by_strides(&view_md, 4, dims, dnnl_f32, strides));
    view_md.offset0 = ((dnnl_dim_t)l->p.slice.c0 * s.h + l->p.slice.h0) * s.w + l->p.slice.w0;
    TRY(net_memory_on(net, &view_md, buffer_of(net, in), &view, e));
    TRY(net_reorder(net, view, out, e));
  }
  planned(pl, i, out);
  return TTP_OK;
}

/* Reshape: the plain input's bytes seen as rows x c x h x w. */
static ttp_status plan_reshape(planner* pl, int i, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  dnnl_memory_t in, out;
  TRY(plain_of(pl, l->inputs[0], &in, e));
  dnnl_memory_desc_t plain;
  plain_desc(&plain, net->rows, l->out);
  TRY(net_memory_on(net, &plain, buffer_of(net, in), &out, e));
  planned(pl, i, out);
  return TTP_OK;
}

/* A host loop over plain rows (softmax, pad, erf): from the plain input into a new plain
   memory, or over it (erf) where nothing else reads it. */
static ttp_status plan_host(planner* pl, int i, host_loop loop, ttp_err* e) {
  onednn_net* net = pl->net;
  const model_layer* l = &pl->m->layers[i];
  dnnl_memory_t in, out;
  TRY(plain_of(pl, l->inputs[0], &in, e));
  if (loop == HOST_ERF) {
    TRY(output_like(pl, in, &out, e));
  } else {
    dnnl_memory_desc_t plain;
    plain_desc(&plain, net->rows, l->out);
    TRY(net_memory_new(net, &plain, &out, e));
  }
  TRY(net_host_step(net, loop, l, in, out, e));
  planned(pl, i, out);
  return TTP_OK;
}

static ttp_status plan_layer(planner* pl, int i, ttp_err* e) {
  switch (pl->m->layers[i].op) {
    case MODEL_CONV:
    case MODEL_FC: return plan_weighted(pl, i, e);
    case MODEL_MAXPOOL:
    case MODEL_AVGPOOL: return plan_pool(pl, i, e);
    case MODEL_LRN: return plan_lrn(pl, i, e);
    case MODEL_SOFTMAX: return plan_host(pl, i, HOST_SOFTMAX, e);
    case MODEL_ADD:
    case MODEL_SUB:
    case MODEL_MUL:
    case MODEL_DIV: return plan_binary(pl, i, e);
    case MODEL_AFFINE: return plan_affine(pl, i, e);
    case MODEL_CONCAT: return plan_concat(pl, i, e);
    case MODEL_SLICE: return plan_slice(pl, i, e);
    case MODEL_PAD: return plan_host(pl, i, HOST_PAD, e);
    case MODEL_SHUFFLE: return plan_shuffle(pl, i, e);
    case MODEL_ERF: return plan_host(pl, i, HOST_ERF, e);
    case MODEL_PRELU: return plan_prelu(pl, i, e);
    case MODEL_RESHAPE: return plan_reshape(pl, i, e);
    default: return plan_eltwise(pl, i, e);
  }
}

/* ---- placing the buffers --------------------------------------------------------------------- */

typedef struct placed {
  size_t at, end;
} placed;

static int by_start(const void* a, const void* b) {
  const placed *x = a, *y = b;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Each buffer's lifetime from the steps that touch it; the buffers that are not fixed placed
   in one arena, largest first, each at the lowest offset free throughout its lifetime; the
   memories given their data. */
static ttp_status place_buffers(onednn_net* net, ttp_err* e) {
  const int n = net->buffer_count;
  for (int s = 0; s < net->step_count; s++)
    for (int a = 0; a < net->steps[s].nargs; a++) {
      const int b = buffer_of(net, net->steps[s].args[a].memory);
      if (b < 0) continue;
      if (net->buffers[b].first < 0) net->buffers[b].first = s;
      net->buffers[b].last = s;
    }
  int* order = malloc((size_t)n * sizeof *order);
  size_t* offset = calloc((size_t)n, sizeof *offset);
  placed* taken = malloc((size_t)n * sizeof *taken);
  net->owned = calloc((size_t)n + 1, sizeof *net->owned);
  if (!order || !offset || !taken || !net->owned) {
    free(order), free(offset), free(taken);
    return ERR_NOMEM(e, (size_t)n * (sizeof *order + sizeof *offset + sizeof *taken));
  }
  int count = 0;
  for (int b = 0; b < n; b++)
    if (!net->buffers[b].fixed && net->buffers[b].first >= 0) order[count++] = b;
  for (int x = 1; x < count; x++) /* largest first; ties in the order they were made */
    for (int y = x; y > 0 && net->buffers[order[y]].bytes > net->buffers[order[y - 1]].bytes; y--) {
      const int t = order[y];
      order[y] = order[y - 1], order[y - 1] = t;
    }
  size_t arena = 0;
  for (int x = 0; x < count; x++) {
    const net_buffer* b = &net->buffers[order[x]];
    int overlapping = 0;
    for (int y = 0; y < x; y++) {
      const net_buffer* c = &net->buffers[order[y]];
      if (c->first <= b->last && b->first <= c->last)
        taken[overlapping++] = (placed){offset[order[y]], offset[order[y]] + c->bytes};
    }
    qsort(taken, (size_t)overlapping, sizeof *taken, by_start);
    size_t at = 0;
    for (int y = 0; y < overlapping && taken[y].at < at + b->bytes; y++) {
      const size_t end = (taken[y].end + ALIGN - 1) / ALIGN * ALIGN;
      if (end > at) at = end;
    }
    offset[order[x]] = at;
    if (at + b->bytes > arena) arena = at + b->bytes;
  }
  free(order), free(taken);
  ttp_status st = TTP_OK;
  /* Zeros at first: rows no caller writes (a batch padded up to the net's rows) stay zeros. */
  arena = (arena + ALIGN - 1) / ALIGN * ALIGN;
  if (arena && !(net->arena = net->owned[net->owned_count++] = aligned_alloc(ALIGN, arena)))
    st = ERR_NOMEM(e, arena);
  if (st == TTP_OK && arena) memset(net->arena, 0, arena);
  for (int b = 0; b < n && st == TTP_OK; b++) {
    net_buffer* buf = &net->buffers[b];
    if (!buf->fixed) {
      buf->data = (char*)net->arena + offset[b];
      continue;
    }
    const size_t bytes = (buf->bytes + ALIGN - 1) / ALIGN * ALIGN;
    buf->data = net->owned[net->owned_count++] = aligned_alloc(ALIGN, bytes ? bytes : ALIGN);
    if (!buf->data) st = ERR_NOMEM(e, bytes);
    else memset(buf->data, 0, bytes);
  }
  free(offset);
  for (int k = 0; k < net->memory_count && st == TTP_OK; k++)
    if (net->memories[k].buffer >= 0) {
      dnnl_status_t s = dnnl_memory_set_data_handle(net->memories[k].memory,
                                                    net->buffers[net->memories[k].buffer].data);
      if (s != dnnl_success)
        st = ERR(e, TTP_ERR_INTERNAL, "dnnl_memory_set_data_handle: %s", onednn_status_name(s));
    }
  return st;
}

/* ---- plan, run ------------------------------------------------------------------------------- */

static ttp_status plan_model(planner* pl, ttp_err* e) {
  onednn_net* net = pl->net;
  const model* m = pl->m;
  const int count = m->layer_count;
  /* The layers the output depends on, and how many reads each value waits for. */
  pl->live[count - 1] = 1;
  for (int i = count - 1; i >= 0; i--)
    if (pl->live[i])
      for (int k = 0; k < m->layers[i].input_count; k++)
        if (m->layers[i].inputs[k] > 0) pl->live[m->layers[i].inputs[k] - 1] = 1;
  for (int i = 0; i < count; i++)
    if (pl->live[i])
      for (int k = 0; k < m->layers[i].input_count; k++)
        pl->values[m->layers[i].inputs[k]].pending++;
  pl->values[count].pending++;

  dnnl_memory_desc_t plain;
  plain_desc(&plain, net->rows, m->input);
  int b;
  TRY(net_buffer_new(net, &b, e));
  net->buffers[b].fixed = net->buffers[b].readonly = 1;
  dnnl_memory_t in;
  TRY(net_memory_on(net, &plain, b, &in, e));
  made(pl, 0, in);
  for (int i = 0; i < count; i++)
    if (pl->live[i] && !pl->done[i]) TRY(plan_layer(pl, i, e));
  dnnl_memory_t out;
  TRY(plain_of(pl, count, &out, e));
  net->buffers[buffer_of(net, out)].fixed = 1;
  TRY(place_buffers(net, e));
  net->input = memory_data(pl->values[0].memory);
  net->output = memory_data(out);
  return TTP_OK;
}

ttp_status onednn_net_plan(const onednn_context* ctx, const model* m, int rows, onednn_net** out,
                           ttp_err* e) {
  *out = NULL;
  if (m->layer_count < 1 || rows < 1)
    return ERR(e, TTP_ERR_INTERNAL, "onednn_net_plan: %d layers, %d rows", m->layer_count, rows);
  onednn_net* net = calloc(1, sizeof *net);
  planner pl = {net, m, calloc((size_t)m->layer_count + 1, sizeof(net_value)),
                calloc((size_t)m->layer_count, 1), calloc((size_t)m->layer_count, 1)};
  ttp_status st = TTP_OK;
  if (!net || !pl.values || !pl.done || !pl.live) {
    st = ERR_NOMEM(e, sizeof *net + (size_t)m->layer_count * (sizeof(net_value) + 2));
  } else {
    net->ctx = ctx;
    net->rows = rows < 2 ? 2 : rows; /* oneDNN sums a single row in another order */
    st = plan_model(&pl, e);
  }
  free(pl.values), free(pl.done), free(pl.live);
  if (st != TTP_OK) {
    onednn_net_free(net);
    return st;
  }
  *out = net;
  return TTP_OK;
}

/* A host loop's rows. */
static void run_host(const net_step* s, int rows) {
  const model_layer* l = &s->layer;
  const float* in = memory_data(s->args[0].memory);
  float* out = memory_data(s->args[1].memory);
  const size_t n_in = model_shape_size(l->in), n_out = model_shape_size(l->out);
  for (int r = 0; r < rows; r++, in += n_in, out += n_out)
    switch (s->host) {
      case HOST_SOFTMAX: cpu_softmax(in, n_in, out); break;
      case HOST_PAD:
        cpu_pad(in, l->in, l->p.pad.c0, l->p.pad.h0, l->p.pad.w0, l->p.pad.value, l->out, out);
        break;
      case HOST_ERF: cpu_activation(MODEL_ERF, in, n_in, 0, 0, out); break;
      case HOST_AVGPOOL:
        cpu_avgpool(in, l->in.c, l->in.h, l->in.w, &l->p.pool.w, l->out.h, l->out.w,
                    l->p.pool.count_pad, out);
        break;
      case HOST_SLICE:
        cpu_slice(in, l->in, l->p.slice.c0, l->p.slice.h0, l->p.slice.w0, l->p.slice.step_h,
                  l->p.slice.step_w, l->out, out);
        break;
      case HOST_NONE: break;
    }
}

ttp_status onednn_net_run(onednn_net* net, ttp_err* e) {
  for (int i = 0; i < net->step_count; i++) {
    const net_step* s = &net->steps[i];
    if (s->primitive) {
      DNNL_TRY(e, dnnl_primitive_execute(s->primitive, net->ctx->stream, s->nargs, s->args));
      continue;
    }
    DNNL_TRY(e, dnnl_stream_wait(net->ctx->stream));
    run_host(s, net->rows);
  }
  DNNL_TRY(e, dnnl_stream_wait(net->ctx->stream));
  return TTP_OK;
}

float* onednn_net_input(onednn_net* net) { return net->input; }
const float* onednn_net_output(const onednn_net* net) { return net->output; }

void onednn_net_free(onednn_net* net) {
  if (!net) return;
  for (int i = 0; i < net->primitive_count; i++) dnnl_primitive_destroy(net->primitives[i]);
  for (int i = 0; i < net->memory_count; i++) dnnl_memory_destroy(net->memories[i].memory);
  for (int i = 0; i < net->owned_count; i++) free(net->owned[i]);
  free(net->owned);
  free(net->steps);
  free(net->memories);
  free(net->primitives);
  free(net->buffers);
  free(net);
}
