/* The ONNX reader's shared state (onnx.c walks the graph; onnx_values.c reads names, attributes
   and constants; onnx_fold.c computes the nodes whose inputs are all known when the file is
   read; onnx_layers.c turns the others into the model's layers).

   Every tensor name of the graph has a slot. A slot holds either a constant (known at load:
   initializers, Constant nodes and whatever is computed from them and from shapes alone) or a
   tensor of the network (computed per image, from the input): a model value and the tensor's
   ONNX dimensions. The batch's dimension is always the first and is taken as 1 wherever a shape
   is computed (Shape, Gather, Concat ... of PyTorch's view(x.size(0), -1)); no node may move it.
   A tensor of rank 2, 3 or 4 reads its model value as C x H x W with C, H, W its dimensions
   after the batch's (missing ones 1): its "canonical" shape. Reshapes change only the ONNX
   dimensions (the values stay in the same order); a layer that needs the canonical shape of a
   tensor whose value has another gets a MODEL_RESHAPE before it (value_of). */
#ifndef TTP_MODEL_ONNX_INTERNAL_H
#define TTP_MODEL_ONNX_INTERNAL_H

#include <stdint.h>

#include "model.h"
#include "onnx.pb-c.h"

enum {
  ONNX_MAX_RANK = 8,
  ONNX_CONST_MAX = 1 << 24, /* elements of a constant computed at load */
  OPSET_LOW = 7,
  OPSET_HIGH = 21
};

/* A tensor known at load: int64 values (integer types, bool) or float64 ones (float types). */
typedef struct onnx_const {
  int rank;
  int64_t dims[ONNX_MAX_RANK];
  size_t count;
  int integer;
  int64_t* i; /* count values when integer */
  double* f;  /* count values otherwise */
} onnx_const;

/* Zero-padding (or value-padding) of a tensor not yet made: a Pad whose only reader is a Conv or
   an AveragePool, which take it as their own padding; anything else makes the Pad layer. */
typedef struct onnx_pending_pad {
  int on; /* 1 while the pad is pending */
  int c0, c1, h0, h1, w0, w1;
  float value;
} onnx_pending_pad;

/* A tensor of the network. */
typedef struct onnx_tensor {
  int value; /* the model value holding it */
  int rank;  /* its ONNX rank, the batch's dimension included */
  int64_t dims[ONNX_MAX_RANK]; /* dims[0] = 1, the batch's */
  onnx_pending_pad pad;       /* applies to the value before dims (dims are the padded ones) */
} onnx_tensor;

typedef enum { SLOT_NONE, SLOT_INIT, SLOT_CONST, SLOT_TENSOR } slot_kind;

typedef struct onnx_slot {
  const char* name;
  slot_kind kind;
  const Onnx__TensorProto* proto; /* SLOT_INIT: the initializer or Constant's tensor, not read yet */
  onnx_const c;                   /* SLOT_CONST */
  onnx_tensor t;                  /* SLOT_TENSOR */
  int uses;      /* live nodes' inputs that read it, plus 1 if it is the graph's output */
  int sole;      /* SLOT_TENSOR: no other slot reads its value (an alias of a tensor read once) */
  int producer;  /* the node that makes it, or -1 (initializers, the graph's input) */
  int is_output; /* the graph's output */
} onnx_slot;

typedef struct onnx_reader {
  const char* path;
  const Onnx__GraphProto* g;
  int64_t opset;
  model* m;
  ttp_err* e;
  onnx_slot* slots; /* sorted by name: binary search */
  size_t n_slots;
  int** node_inputs;   /* per node: the slot of each input (-1: absent, "") */
  int** node_outputs;  /* per node: the slot of each output (-1: absent) */
  size_t* order;       /* the live nodes in an order where each follows its inputs' makers */
  size_t n_order;
  size_t at;           /* the node being read (for messages) */
} onnx_reader;

/* ---- onnx_values.c ----------------------------------------------------------------------- */

/* Node k's error: "FILE: node k 'NAME' (OP): why". Returns TTP_ERR_MODEL. */
ttp_status onnx_node_error(const onnx_reader* r, size_t k, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The error already recorded (by the model's checks), prefixed so: "FILE: node k 'NAME' (OP): ".
   Returns its status. */
ttp_status onnx_node_prefix(const onnx_reader* r, size_t k);

const Onnx__AttributeProto* onnx_attr(const Onnx__NodeProto* n, const char* name);
int64_t onnx_int_attr(const Onnx__NodeProto* n, const char* name, int64_t fallback);
float onnx_float_attr(const Onnx__NodeProto* n, const char* name, float fallback);
/* A STRING attribute equal to s (absent: fallback). */
int onnx_string_attr_is(const Onnx__NodeProto* n, const char* name, const char* s, int fallback);

/* The slot of name, or -1. */
int onnx_slot_of(const onnx_reader* r, const char* name);

/* Node k's input i: its slot, or -1 where absent (past the inputs, or named ""). */
int onnx_input(const onnx_reader* r, size_t k, size_t i);
/* The constant of slot s, reading an initializer on first use; NULL (recorded) when the slot is
   not a constant or the tensor cannot be read. Node k is named in the message. */
const onnx_const* onnx_const_of(onnx_reader* r, size_t k, int s);
/* Node k's input i as a constant (NULL and a message naming `what` when it is not one). */
const onnx_const* onnx_const_input(onnx_reader* r, size_t k, size_t i, const char* what);
/* An integer constant input's values (at most max) into v and their number into *n; absent
   input: *n = 0. A message naming what when it is not an integer constant. */
ttp_status onnx_ints_input(onnx_reader* r, size_t k, size_t i, const char* what, int64_t* v,
                           size_t max, size_t* n);
/* An INTS attribute's values (at most max); absent: *n = 0, returns 0. */
int onnx_ints_attr(const Onnx__NodeProto* n, const char* name, int64_t* v, size_t max, size_t* count);

/* Constant c (named `name` in messages) as count finite float32 values, transposed from
   [rows][count / rows] to [count / rows][rows] when transpose. */
ttp_status onnx_tensor_floats(const onnx_reader* r, const onnx_const* c, const char* name,
                              size_t count, int transpose, size_t rows, float** out);
/* A TensorProto into a constant (integer or float types). */
ttp_status onnx_read_const(const onnx_reader* r, const Onnx__TensorProto* t, onnx_const* c);

ttp_status onnx_const_alloc(const onnx_reader* r, onnx_const* c, int integer);
void onnx_const_free(onnx_const* c);
/* Element i as a double / an int64 (whatever the constant holds). */
double onnx_const_f(const onnx_const* c, size_t i);
int64_t onnx_const_i(const onnx_const* c, size_t i);
/* The number of elements of dims (rank of them); 0 on overflow past ONNX_CONST_MAX. */
size_t onnx_dims_count(const int64_t* dims, int rank, int* ok);

/* ---- onnx_fold.c ------------------------------------------------------------------------- */

/* Whether an operator is computed at load when its inputs are all constants. */
int onnx_foldable(const char* op);
/* Computes node k (every input a constant) into constant outputs. */
ttp_status onnx_fold(onnx_reader* r, size_t k);
/* numpy's broadcast of two shapes into out (rank *out_rank); 0 when they do not broadcast. */
int onnx_broadcast(const int64_t* a, int ra, const int64_t* b, int rb, int64_t* out, int* out_rank);

/* What the operators on constants and on tensors share: */
/* Shape or Size of a tensor of these dimensions, into node k's constant output. */
ttp_status onnx_fold_shape(onnx_reader* r, size_t k, int rank, const int64_t* dims);
/* The axes of Unsqueeze, Squeeze or a reduction: attribute, or input 1 when from_input. */
ttp_status onnx_axes(onnx_reader* r, size_t k, int64_t* axes, size_t* n, int from_input);
/* The dimensions after node k's Squeeze or Unsqueeze, or Reshape or Flatten, of dims. */
ttp_status onnx_squeeze_dims(onnx_reader* r, size_t k, int rank, const int64_t* dims,
                             int* out_rank, int64_t* out);
ttp_status onnx_reshape_dims(onnx_reader* r, size_t k, int rank, const int64_t* dims,
                             int* out_rank, int64_t* out);
/* Node k's Slice of a tensor of dims: per axis the first index, the step and the count (after
   ONNX's clamping); *raw_end0 the end given for axis 0 (INT64_MAX when not given). */
ttp_status onnx_slice_params(onnx_reader* r, size_t k, int rank, const int64_t* dims,
                             int64_t* start, int64_t* step, int64_t* count, int64_t* raw_end0);
/* Transpose's perm (absent: reversed axes), checked a permutation of rank axes. */
ttp_status onnx_perm(onnx_reader* r, size_t k, int rank, int64_t* perm);
/* Split's part sizes of a dimension of dim into parts outputs. */
ttp_status onnx_split_sizes(onnx_reader* r, size_t k, int64_t dim, int64_t* sizes, size_t parts);

/* ---- onnx_layers.c ----------------------------------------------------------------------- */

/* Node k, some input a tensor of the network: into layers (or a view of a tensor). */
ttp_status onnx_layers(onnx_reader* r, size_t k);
/* The canonical shape of a tensor of rank 2 to 4 (0 for other ranks). */
int onnx_canonical(const onnx_tensor* t, model_shape* s);
/* The operators ttapipe reads, for messages. */
extern const char onnx_supported[];

#endif
