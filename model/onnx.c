/* Reads an ONNX model into a model: see onnx.h. The protobuf parser is protoc-c's, generated at
   build time from Debian's onnx.proto. This file walks the graph: one slot per tensor name, the
   nodes that lead to the output in an order where each follows the makers of its inputs, each
   node computed at load (onnx_fold.c) or made layers (onnx_layers.c); then the softmax the merge
   needs, GELU where PyTorch wrote it as Erf arithmetic, and no layer that the output does not
   need. */
#include "onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "../io/file.h"
#include "labels.h"
#include "onnx_internal.h"

enum { INPUT_LOW = TTP_MIN_SIDE, INPUT_HIGH = TTP_MAX_SIDE };

/* A name the graph gives a tensor: the graph's input, an initializer, or a node's output. */
typedef struct named {
  const char* name;
  int kind; /* 0 an initializer, 1 a graph input, 2 a node's output (the order that wins) */
  size_t index, output;
} named;

static int by_name(const void* a, const void* b) {
  const named *x = a, *y = b;
  const int c = strcmp(x->name, y->name);
  return c ? c : (x->kind > y->kind) - (x->kind < y->kind);
}

/* One slot a name; the graph's input that is not an initializer into *input. */
static ttp_status make_slots(onnx_reader* r, int* input) {
  const Onnx__GraphProto* g = r->g;
  size_t total = g->n_initializer + g->n_input;
  for (size_t k = 0; k < g->n_node; k++) total += g->node[k]->n_output;
  named* all = malloc((total ? total : 1) * sizeof *all);
  r->slots = calloc(total ? total : 1, sizeof *r->slots);
  if (!all || !r->slots) {
    free(all);
    return ERR_NOMEM(r->e, total * (sizeof *all + sizeof *r->slots));
  }
  size_t n = 0;
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && g->initializer[i]->name[0])
      all[n++] = (named){g->initializer[i]->name, 0, i, 0};
  for (size_t i = 0; i < g->n_input; i++)
    if (g->input[i]->name && g->input[i]->name[0]) all[n++] = (named){g->input[i]->name, 1, i, 0};
  for (size_t k = 0; k < g->n_node; k++)
    for (size_t o = 0; o < g->node[k]->n_output; o++)
      if (g->node[k]->output[o] && g->node[k]->output[o][0])
        all[n++] = (named){g->node[k]->output[o], 2, k, o};
  qsort(all, n, sizeof *all, by_name);
  ttp_status s = TTP_OK;
  *input = -1;
  const char* second = NULL;
  for (size_t i = 0; i < n && s == TTP_OK; i++) {
    const named* x = &all[i];
    const int same = r->n_slots && strcmp(r->slots[r->n_slots - 1].name, x->name) == 0;
    if (same) {
      /* An initializer listed among the graph's inputs too (as opsets before 9 wrote them): the
         initializer. Any other second maker of a name is refused. */
      if (x->kind == 1 && all[i - 1].kind == 0) continue;
      s = ERR(r->e, TTP_ERR_MODEL, "%s: two tensors are named '%s'", r->path, x->name);
      break;
    }
    onnx_slot* slot = &r->slots[r->n_slots++];
    slot->name = x->name;
    slot->producer = -1;
    if (x->kind == 0) {
      slot->kind = SLOT_INIT, slot->proto = g->initializer[x->index];
    } else if (x->kind == 1) {
      if (*input >= 0) second = x->name;
      else *input = (int)(r->n_slots - 1);
    } else {
      slot->producer = (int)x->index;
    }
  }
  if (s == TTP_OK && second)
    s = ERR(r->e, TTP_ERR_MODEL, "%s: two graph inputs ('%s' and '%s'): ttapipe gives a network "
            "one image tensor", r->path, r->slots[*input].name, second);
  free(all);
  return s;
}

/* Every node's inputs and outputs as slots (-1: absent, -2: a name nothing makes). */
static ttp_status map_nodes(onnx_reader* r) {
  const Onnx__GraphProto* g = r->g;
  r->node_inputs = calloc(g->n_node ? g->n_node : 1, sizeof *r->node_inputs);
  r->node_outputs = calloc(g->n_node ? g->n_node : 1, sizeof *r->node_outputs);
  if (!r->node_inputs || !r->node_outputs) return ERR_NOMEM(r->e, 2 * g->n_node * sizeof(int*));
  for (size_t k = 0; k < g->n_node; k++) {
    const Onnx__NodeProto* n = g->node[k];
    r->node_inputs[k] = malloc((n->n_input + 1) * sizeof(int));
    r->node_outputs[k] = malloc((n->n_output + 1) * sizeof(int));
    if (!r->node_inputs[k] || !r->node_outputs[k]) return ERR_NOMEM(r->e, (n->n_input + n->n_output) * sizeof(int));
    for (size_t i = 0; i < n->n_input; i++) {
      const char* name = n->input[i];
      r->node_inputs[k][i] = !name || !name[0] ? -1 : onnx_slot_of(r, name) >= 0 ? onnx_slot_of(r, name) : -2;
    }
    for (size_t o = 0; o < n->n_output; o++) r->node_outputs[k][o] = onnx_slot_of(r, n->output[o]);
  }
  return TTP_OK;
}

/* The nodes the output needs, each after the makers of its inputs (a depth-first walk from the
   output, without recursion: a deep graph must not exhaust the stack); a node reached again
   while its inputs are being walked closes a cycle. */
static ttp_status order_nodes(onnx_reader* r, int output) {
  const Onnx__GraphProto* g = r->g;
  const size_t n = g->n_node;
  unsigned char* state = calloc(n ? n : 1, 1); /* 0 not seen, 1 on the walk, 2 ordered */
  size_t* stack = malloc((n ? n : 1) * sizeof *stack);
  size_t* next = calloc(n ? n : 1, sizeof *next);
  r->order = malloc((n ? n : 1) * sizeof *r->order);
  ttp_status s = TTP_OK;
  if (!state || !stack || !next || !r->order) s = ERR_NOMEM(r->e, n * 3 * sizeof *stack);
  size_t depth = 0;
  if (s == TTP_OK && r->slots[output].producer >= 0) {
    stack[depth++] = (size_t)r->slots[output].producer;
    state[stack[0]] = 1;
  }
  while (s == TTP_OK && depth) {
    const size_t k = stack[depth - 1];
    if (next[k] == g->node[k]->n_input) {
      state[k] = 2;
      r->order[r->n_order++] = k;
      depth--;
      continue;
    }
    const size_t i = next[k]++;
    const int slot = r->node_inputs[k][i];
    if (slot == -2) {
      s = onnx_node_error(r, k, "its input '%s' is made by no node, initializer or graph input",
                          g->node[k]->input[i]);
      break;
    }
    if (slot < 0 || r->slots[slot].producer < 0) continue;
    const size_t p = (size_t)r->slots[slot].producer;
    if (state[p] == 1) {
      s = onnx_node_error(r, p, "a cycle: it needs its own output through '%s'",
                          r->slots[slot].name);
      break;
    }
    if (state[p] == 0) state[p] = 1, stack[depth++] = p;
  }
  for (size_t j = 0; s == TTP_OK && j < r->n_order; j++) {
    const size_t k = r->order[j];
    for (size_t i = 0; i < g->node[k]->n_input; i++)
      if (r->node_inputs[k][i] >= 0) r->slots[r->node_inputs[k][i]].uses++;
  }
  free(state);
  free(stack);
  free(next);
  return s;
}

/* The single graph input as [N,] C x H x W: N 1 or named (any batch), the others fixed. */
static ttp_status input_shape(const onnx_reader* r, int slot, model_shape* s) {
  const Onnx__ValueInfoProto* in = NULL;
  for (size_t i = 0; i < r->g->n_input && !in; i++)
    if (r->g->input[i]->name && strcmp(r->g->input[i]->name, r->slots[slot].name) == 0)
      in = r->g->input[i];
  const Onnx__TypeProto* t = in->type;
  if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
      t->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || !t->tensor_type->shape)
    return ERR(r->e, TTP_ERR_MODEL, "%s: input '%s' is not a float32 tensor of known rank",
               r->path, in->name);
  const Onnx__TensorShapeProto* sh = t->tensor_type->shape;
  if (sh->n_dim != 4)
    return ERR(r->e, TTP_ERR_MODEL, "%s: input '%s' has %zu dimensions, not N, C, H, W",
               r->path, in->name, sh->n_dim);
  const Onnx__TensorShapeProto__Dimension* batch = sh->dim[0];
  if (batch->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
      batch->dim_value != 1)
    return ERR(r->e, TTP_ERR_MODEL, "%s: input '%s' has a fixed batch of %lld: export it with a "
               "batch of 1 or a dynamic one", r->path, in->name, (long long)batch->dim_value);
  int64_t v[3];
  static const char* const axis[3] = {"channels", "rows", "columns"};
  for (int i = 0; i < 3; i++) {
    const Onnx__TensorShapeProto__Dimension* d = sh->dim[1 + i];
    if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
      return ERR(r->e, TTP_ERR_MODEL, "%s: input '%s' has dynamic %s ('%s'): export it with "
                 "fixed channels, rows and columns (only the batch may be dynamic)", r->path,
                 in->name, axis[i], d->dim_param ? d->dim_param : "?");
    v[i] = d->dim_value;
  }
  if (!(v[0] == 1 || v[0] == 3) || v[1] < INPUT_LOW || v[1] > INPUT_HIGH || v[2] < INPUT_LOW ||
      v[2] > INPUT_HIGH)
    return ERR(r->e, TTP_ERR_MODEL, "%s: input %lldx%lldx%lld: ttapipe takes 1 or 3 channels of "
               "%dx%d to %dx%d", r->path, (long long)v[0], (long long)v[1], (long long)v[2],
               INPUT_LOW, INPUT_LOW, INPUT_HIGH, INPUT_HIGH);
  *s = (model_shape){(int)v[0], (int)v[1], (int)v[2]};
  return TTP_OK;
}

static ttp_status read_node(onnx_reader* r, size_t k) {
  const Onnx__NodeProto* n = r->g->node[k];
  r->at = k;
  if (!n->op_type || !n->op_type[0]) return onnx_node_error(r, k, "no operator");
  if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
    return onnx_node_error(r, k, "operator domain '%s'", n->domain);
  int tensors = 0;
  for (size_t i = 0; i < n->n_input; i++)
    tensors += r->node_inputs[k][i] >= 0 && r->slots[r->node_inputs[k][i]].kind == SLOT_TENSOR;
  if (tensors) {
    TRY(onnx_layers(r, k));
  } else if (onnx_foldable(n->op_type)) {
    TRY(onnx_fold(r, k));
  } else {
    return onnx_node_error(r, k, "operator not supported on constants (ttapipe's: %s)",
                           onnx_supported);
  }
  for (size_t o = 0; o < n->n_output; o++) {
    const int s = r->node_outputs[k][o];
    if (s >= 0 && r->slots[s].uses > 0 && r->slots[s].kind == SLOT_NONE)
      return onnx_node_error(r, k, "its output '%s' is not made", r->slots[s].name);
  }
  return TTP_OK;
}

/* Layer i's single scale and shift (an affine layer of one value for every channel). */
static int scalar_affine(const model_layer* l, double scale, double shift) {
  return l->op == MODEL_AFFINE && l->weight_count == 1 &&
         fabs(l->weights[0] - scale) <= 1e-6 * fabs(scale) && fabs(l->bias[0] - shift) <= 1e-6;
}

/* GELU where PyTorch writes it below opset 20: x (erf(x / sqrt 2) + 1) / 2 as an affine layer
   (x / sqrt 2), Erf, an affine (+ 1), Mul by x and an affine (times 0.5); the last becomes GELU of
   x, the others are left to pruning. readers[v]: how many layers read value v. */
static void find_gelu(model* m, const int* readers) {
  for (int i = 0; i < m->layer_count; i++) {
    model_layer* half = &m->layers[i];
    if (!scalar_affine(half, 0.5, 0) || half->inputs[0] == 0) continue;
    const model_layer* mul = &m->layers[half->inputs[0] - 1];
    if (mul->op != MODEL_MUL || readers[half->inputs[0]] != 1) continue;
    for (int side = 0; side < 2; side++) {
      const int x = mul->inputs[side], y = mul->inputs[1 - side];
      if (y == 0 || readers[y] != 1) continue;
      const model_layer* plus = &m->layers[y - 1];
      if (!scalar_affine(plus, 1, 1) || plus->inputs[0] == 0 || readers[plus->inputs[0]] != 1)
        continue;
      const model_layer* erf_l = &m->layers[plus->inputs[0] - 1];
      if (erf_l->op != MODEL_ERF || erf_l->inputs[0] == 0 || readers[erf_l->inputs[0]] != 1)
        continue;
      const model_layer* div = &m->layers[erf_l->inputs[0] - 1];
      if (!scalar_affine(div, 1 / sqrt(2.0), 0) || div->inputs[0] != x) continue;
      free(half->weights), free(half->bias);
      half->weights = NULL, half->bias = NULL, half->weight_count = 0;
      half->op = MODEL_GELU;
      half->inputs[0] = x;
      break;
    }
  }
}

static ttp_status finish_model(onnx_reader* r, int output) {
  onnx_slot* out = &r->slots[output];
  if (out->kind != SLOT_TENSOR)
    return ERR(r->e, TTP_ERR_MODEL, "%s: the graph's output '%s' does not depend on the image",
               r->path, out->name);
  int v = out->t.value;
  model* m = r->m;
  if (out->t.pad.on || v == 0 || m->layers[v - 1].op != MODEL_SOFTMAX) {
    /* Logits (or a LogSoftmax's): the merge needs probabilities. */
    if (out->t.pad.on)
      return ERR(r->e, TTP_ERR_MODEL, "%s: the graph's output is a Pad's", r->path);
    model_layer* l = model_add(m, MODEL_SOFTMAX, "softmax (added)", r->e);
    if (!l) return r->e->status;
    l->inputs[0] = v;
    m->softmax_added = 1;
    v = m->layer_count;
  }
  int* readers = calloc((size_t)m->layer_count + 1, sizeof *readers);
  if (!readers) return ERR_NOMEM(r->e, ((size_t)m->layer_count + 1) * sizeof *readers);
  for (int i = 0; i < m->layer_count; i++)
    for (int j = 0; j < m->layers[i].input_count; j++) readers[m->layers[i].inputs[j]]++;
  find_gelu(m, readers);
  free(readers);
  TRY(model_prune(m, v - 1, r->e));
  if (model_check(m, r->e) != TTP_OK) err_prefix(r->e, "%s: ", r->path);
  return r->e->status;
}

static ttp_status read_graph(onnx_reader* r) {
  const Onnx__GraphProto* g = r->g;
  int input = -1;
  TRY(make_slots(r, &input));
  if (input < 0) return ERR(r->e, TTP_ERR_MODEL, "%s: no graph input", r->path);
  if (g->n_output != 1)
    return ERR(r->e, TTP_ERR_MODEL, "%s: %zu graph outputs: ttapipe takes one, the class scores",
               r->path, g->n_output);
  const int output = g->output[0]->name ? onnx_slot_of(r, g->output[0]->name) : -1;
  if (output < 0)
    return ERR(r->e, TTP_ERR_MODEL, "%s: the graph's output '%s' is made by no node", r->path,
               g->output[0]->name ? g->output[0]->name : "");
  r->slots[output].is_output = 1;
  r->slots[output].uses++;
  TRY(map_nodes(r));
  TRY(order_nodes(r, output));
  model_shape shape;
  TRY(input_shape(r, input, &shape));
  r->m = model_new(shape, r->e);
  if (!r->m) return r->e->status;
  onnx_slot* in = &r->slots[input];
  in->kind = SLOT_TENSOR;
  in->t = (onnx_tensor){.value = 0, .rank = 4, .dims = {1, shape.c, shape.h, shape.w}};
  for (size_t j = 0; j < r->n_order; j++) TRY(read_node(r, r->order[j]));
  return finish_model(r, output);
}

static void free_reader(onnx_reader* r) {
  for (size_t i = 0; i < r->n_slots; i++)
    if (r->slots[i].kind == SLOT_CONST) onnx_const_free(&r->slots[i].c);
  for (size_t k = 0; r->g && k < r->g->n_node; k++) {
    if (r->node_inputs) free(r->node_inputs[k]);
    if (r->node_outputs) free(r->node_outputs[k]);
  }
  free(r->node_inputs);
  free(r->node_outputs);
  free(r->slots);
  free(r->order);
}

static ttp_status check_opset(onnx_reader* r, const Onnx__ModelProto* mp) {
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto* o = mp->opset_import[i];
    if (o->domain && o->domain[0] && strcmp(o->domain, "ai.onnx") != 0) continue;
    if (!o->has_version || o->version < OPSET_LOW || o->version > OPSET_HIGH)
      return ERR(r->e, TTP_ERR_MODEL, "%s: opset %lld of the default domain: ttapipe reads %d "
                 "to %d", r->path, (long long)o->version, OPSET_LOW, OPSET_HIGH);
    r->opset = o->version;
    return TTP_OK;
  }
  return ERR(r->e, TTP_ERR_MODEL, "%s: no opset of the default domain", r->path);
}

/* metadata_props "mean" or "std" (key): one number, or one a channel, separated by commas (and
   spaces); a std must be positive. */
static ttp_status scaling(onnx_reader* r, const char* key, const char* text) {
  const int is_std = strcmp(key, "std") == 0, channels = r->m->input.c;
  float v[3];
  int count = 0;
  const char* at = text;
  for (;;) {
    char* end;
    const double x = strtod(at, &end);
    if (end == at || count == 3 || !(is_std ? model_std_ok(x) : model_mean_ok(x)))
      return ERR(r->e, TTP_ERR_MODEL, "%s: metadata '%s' is '%.60s': one number%s, or one a "
                 "channel, separated by commas (%s)", r->path, key, text,
                 channels > 1 ? " for all channels" : "",
                 is_std ? "each 1e-6..1e6" : "each -16..16");
    v[count++] = (float)x;
    while (*end == ' ') end++;
    if (*end == '\0') break;
    if (*end != ',') count = 3; /* refused on the next turn */
    at = end + 1;
  }
  if (count != 1 && count != channels)
    return ERR(r->e, TTP_ERR_MODEL, "%s: metadata '%s' gives %d values for %d channel%s", r->path,
               key, count, channels, channels == 1 ? "" : "s");
  for (int c = 0; c < 3; c++) (is_std ? r->m->scaling.std : r->m->scaling.mean)[c] = v[c < count ? c : 0];
  return TTP_OK;
}

ttp_status io_load_onnx(const char* path, model** out, ttp_err* e) {
  *out = NULL;
  uint8_t* data;
  size_t size;
  TRY(io_read_file(path, ONNX_MAX_BYTES, &data, &size, e));
  if (size == 0) {
    free(data);
    return ERR(e, TTP_ERR_FORMAT, "%s: empty file", path);
  }
  Onnx__ModelProto* mp = onnx__model_proto__unpack(NULL, size, data);
  free(data);
  if (!mp)
    return ERR(e, TTP_ERR_FORMAT, "%s: not an ONNX model (the protobuf does not parse)", path);
  onnx_reader r = {.path = path, .g = mp->graph, .e = e};
  ttp_status s = mp->graph ? check_opset(&r, mp)
                           : ERR(e, TTP_ERR_FORMAT, "%s: not an ONNX model (no graph)", path);
  if (s == TTP_OK) s = read_graph(&r);
  for (size_t i = 0; s == TTP_OK && i < mp->n_metadata_props; i++) {
    const Onnx__StringStringEntryProto* kv = mp->metadata_props[i];
    if (!kv->key || !kv->value) continue;
    if (strcmp(kv->key, "labels") == 0) {
      char where[1100];
      snprintf(where, sizeof where, "%s (metadata 'labels')", path);
      s = io_parse_labels(where, kv->value, strlen(kv->value), r.m, e);
    } else if (strcmp(kv->key, "mean") == 0 || strcmp(kv->key, "std") == 0) {
      s = scaling(&r, kv->key, kv->value);
    }
  }
  free_reader(&r);
  onnx__model_proto__free_unpacked(mp, NULL);
  if (s != TTP_OK) {
    model_free(r.m);
    return s;
  }
  *out = r.m;
  return TTP_OK;
}
