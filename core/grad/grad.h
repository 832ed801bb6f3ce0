/* grad.h -- the autograd layer's internals: graph nodes, per-tensor autograd metadata, recording.
 * Autograd sits above the dispatch layer: it registers a wrapper for every front door that
 * records (core/ops/dispatch.h), and its backward formulas are written with the front doors. */
#ifndef MT_GRAD_H
#define MT_GRAD_H

#include "../ops/dispatch.h"

#define MT_NODE_MAX_SAVED 4

typedef struct mt_edge {
  mt_node *node;     /* strong reference; NULL where the input needs no gradient */
  int32_t input_nr;  /* which output of `node` (= which gradient slot) this edge feeds */
  int32_t _pad;
} mt_edge;

typedef struct mt_saved {
  mt_tensor *t;      /* strong reference, NULL once released */
  int64_t version;   /* the storage version when saved */
  int32_t output_nr; /* >= 0 when t is an output of this node (saved without its grad_fn) */
  int32_t _pad;
} mt_saved;

/* A shape (and dtype) remembered for the backward: input shapes for unbroadcasting. */
typedef struct mt_shape {
  int32_t ndim, dtype;
  int64_t sizes[MT_MAX_DIMS];
} mt_shape;

enum {
  NODE_SMALL = 16,    /* allocated from the small-block list */
  NODE_RELEASED = 1,  /* saved tensors were freed by a backward without retain_graph */
  NODE_PRE_HOOK = 2,  /* the Lua layer has pre hooks on this node */
  NODE_POST_HOOK = 4, /* ... post hooks */
  NODE_HAS_SAVED = 8, /* saved[] is initialised (some saved tensors were stored) */
  NODE_EXTRA = 32     /* variable, name or lua_id may be set (releasing looks at them) */
};

#define MT_NODE_INLINE_EDGES 2

/* A graph node. Laid out by use, in 64-byte lines, because graphs are released a GC cycle after
 * they were made (lua/tensor.lua), when their memory is cold: recording writes lines 0-2 (and the
 * shapes and saved slots it uses), releasing reads lines 0-1 (and saved[] when NODE_HAS_SAVED). */
struct mt_node {
  /* line 0: recording, releasing, the engine */
  int64_t refcount;
  int32_t op;        /* mt_grad_op */
  int16_t nin;       /* edges: one per differentiable input of the forward op */
  int16_t nout;      /* gradients coming in: one per output of the forward op */
  uint32_t flags;
  int32_t deps;      /* engine scratch, valid while engine `epoch` runs */
  uint64_t seq;      /* creation order: later nodes run first */
  mt_edge *next;     /* nin edges: edge_in, or tail */
  mt_tensor **buf;   /* engine: nout incoming gradients being summed */
  uint64_t epoch;
  int32_t heap_pos;
  int32_t _pad0;
  /* line 1 */
  mt_edge edge_in[MT_NODE_INLINE_EDGES];
  int64_t lua_id;
  int64_t anomaly_id;
  mt_tensor *variable;   /* AccumulateGrad: the leaf (strong reference) */
  char *name;            /* Lua nodes: their name (owned) */
  /* line 2 */
  int32_t ip[6];     /* integer parameters of the op (dims, op codes, keepdim, ...) */
  uint32_t same_shape; /* bit k: input k had the output's shape (shape[k] not stored; see mt_node_keep_shape) */
  int32_t _pad1;
  double dp[4];      /* number parameters (alpha, exponents, bounds, ...) */
  /* written and read only by the ops that use them */
  mt_saved saved[MT_NODE_MAX_SAVED];
  mt_shape shape[2];     /* e.g. the inputs' shapes */
  mt_edge tail[];        /* edges beyond MT_NODE_INLINE_EDGES */
};
_Static_assert(sizeof(mt_node) <= MT_NODE_BLOCK, "a node with its inline edges fits a node block");

/* mt_node_retain for the core's own use (no call through the library's PLT) */
static inline mt_node *node_ref(mt_node *n) {
  if (n) n->refcount++;
  return n;
}

/* Per-tensor autograd metadata (mt_tensor._autograd), made on demand. */
typedef struct mt_meta {
  mt_node *grad_fn;  /* strong; NULL for leaves */
  mt_node *grad_acc; /* weak: a leaf's AccumulateGrad node, cleared when that node dies */
  mt_tensor *grad;   /* strong */
  int32_t output_nr;
  uint32_t flags;    /* META_* */
  int64_t lua_hooks; /* the Lua layer's id for tensor hooks (0: none) */
} mt_meta;

enum { META_RETAINS_GRAD = 1, META_HAS_HOOKS = 2, META_EMBEDDED = 4 };
_Static_assert(sizeof(mt_meta) <= MT_META_BYTES, "mt_meta must fit the space reserved in a tensor block");


mt_meta *mt_meta_get(mt_tensor *t); /* made if missing; NULL when out of memory */

/* Recording: a node for op with one edge per input (NULL inputs, or inputs that need no grad,
 * get no edge), then its outputs attached. */
mt_status mt_node_make(int op, mt_tensor **inputs, int nin, int nout, mt_node **out);
mt_status mt_node_save(mt_node *n, int slot, mt_tensor *t);
mt_status mt_node_save_output(mt_node *n, int slot, mt_tensor *out, int output_nr);
void mt_node_set_shape(mt_node *n, int k, const mt_tensor *t);
/* Remember input k's shape for unbroadcasting its gradient: nothing but a bit when it is the
 * output's shape (then mt_node_to_input_shape hands the gradient on as it is). */
static inline void mt_node_keep_shape(mt_node *n, int k, const mt_tensor *t, const mt_tensor *out) {
  bool same = t->_ndim == out->_ndim;
  for (int i = 0; same && i < t->_ndim; i++) same = t->_sizes[i] == out->_sizes[i];
  if (same) n->same_shape |= 1u << k;
  else mt_node_set_shape(n, k, t);
}
/* g (a gradient of the output) summed down to input k's shape kept by mt_node_keep_shape: a new
 * reference */
mt_status mt_node_to_input_shape(mt_node *n, int k, mt_tensor *g, mt_tensor **out);
/* Attach `out` as output `nr` of n: out.grad_fn = n, out requires grad. */
mt_status mt_node_attach(mt_node *n, mt_tensor *out, int nr);
/* The same as output 0, handing over the caller's reference to n (released on failure). */
mt_status mt_node_attach_new(mt_node *n, mt_tensor *out);
/* A saved tensor for the backward (a new reference, NULL if none was saved); an error when it was
 * released or modified in place. */
mt_status mt_node_get_saved(mt_node *n, int slot, mt_tensor **t);

/* The edge a tensor contributes as an input: its grad_fn, or its AccumulateGrad for a leaf. */
mt_status mt_tensor_edge(mt_tensor *t, mt_edge *e);

/* An in-place op on t is about to run with grad recording: leaves are refused. */
mt_status mt_grad_check_inplace(mt_tensor *t, const char *op);
/* out= arguments and autograd do not mix (as in PyTorch). */
mt_status mt_grad_check_out(mt_tensor *out, bool recording, const char *op);

/* The backward of every op, by mt_grad_op (ops.c). */
typedef mt_status (*mt_backward_fn)(mt_node *n, mt_tensor **gout, mt_tensor **gin);
const char *mt_grad_op_name(const mt_node *n);
mt_backward_fn mt_grad_op_backward(int op);

/* Sum g down to a shape (undoing broadcasting): a new reference. */
mt_status mt_sum_to(mt_tensor *g, const int64_t *sizes, int ndim, mt_tensor **out);
mt_status mt_sum_to_shape(mt_tensor *g, const mt_shape *s, mt_tensor **out);

/* Recording, called by the forward ops (ops.c). `x`: the input's value for the backward (a copy
 * of it for an in-place op), `out`: the result. */
bool mt_grad_unary_needs_input(int op);
mt_status mt_record_unary(int op, mt_tensor *a, mt_tensor *x, double p1, double p2, mt_tensor *out);
mt_status mt_record_binary(int op, mt_tensor *a, mt_tensor *b, mt_tensor *xa, mt_tensor *out);
mt_status mt_record_binary_scalar(int op, mt_tensor *a, mt_tensor *x, double s, int reverse, mt_tensor *out);
mt_status mt_record_add_scaled(mt_tensor *a, mt_tensor *b, double alpha, mt_tensor *out);
mt_status mt_record_reduce(int op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, double p,
                           mt_tensor *out);
mt_status mt_record_reduce_index(mt_tensor *a, int dim, int keepdim, int is_min, mt_tensor *indices,
                                 mt_tensor *values);
enum { MT_RS_VIEW, MT_RS_RESHAPE_COPY, MT_RS_UNSQUEEZE, MT_RS_SQUEEZE, MT_RS_SQUEEZE_DIM, MT_RS_FLATTEN };
mt_status mt_record_reshape(int kind, mt_tensor *a, mt_tensor *out);
mt_status mt_record_transpose(mt_tensor *a, int d0, int d1, int is_t, mt_tensor *out);
mt_status mt_record_permute(mt_tensor *a, const int64_t *dims, int ndim, mt_tensor *out);
mt_status mt_record_expand(mt_tensor *a, mt_tensor *out);
mt_status mt_record_select(mt_tensor *a, int dim, int64_t index, mt_tensor *out);
mt_status mt_record_slice(mt_tensor *a, int dim, int64_t start, int64_t stop, int64_t step, mt_tensor *out);
mt_status mt_record_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out);
mt_status mt_record_addmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out);
mt_status mt_record_softmax(mt_tensor *a, int dim, int log, mt_tensor *out);
mt_status mt_record_where(mt_tensor *cond, mt_tensor *a, mt_tensor *b, mt_tensor *out);
mt_status mt_record_clone(mt_tensor *a, int to_dtype, mt_tensor *out);
mt_status mt_record_cat(mt_tensor **ts, int count, int dim, mt_tensor *out);
mt_status mt_record_index(mt_tensor *a, int dim, mt_tensor *index, int gather, mt_tensor *out);
mt_status mt_record_masked_fill(mt_tensor *a, mt_tensor *mask, mt_tensor *out);

/* The rest of the recorded ops (ops.c). Indices handed to these are 0-based int64. */
mt_status mt_record_cumulative(mt_tensor *a, int dim, int is_prod, mt_tensor *out);
mt_status mt_record_var_mean(mt_tensor *a, const int64_t *dims, int ndims, int keepdim, double correction,
                             int take_sqrt, mt_tensor *var, mt_tensor *mean);
mt_status mt_record_baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out);
enum { MT_SC_SRC, MT_SC_VALUE, MT_SC_ADD_SRC };
mt_status mt_record_scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int kind, mt_tensor *out);
/* which: 0 index_add (alpha), 1 index_copy_, 2 index_fill_ (src NULL) */
mt_status mt_record_index_write(int which, mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha,
                                mt_tensor *out);
mt_status mt_record_masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out);
mt_status mt_record_masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor *out);
mt_status mt_record_masked_scatter(mt_tensor *a, mt_tensor *mask, mt_tensor *src, mt_tensor *out);
/* Ops whose output elements are input elements: `pos` (int64, the output's shape) holds each
 * output element's flat position in a (see mt_grad_positions). param: diag's diagonal. */
enum { MT_GF_INDEX, MT_GF_AS_STRIDED, MT_GF_UNFOLD, MT_GF_DIAGONAL, MT_GF_DIAG };
mt_status mt_record_gather_flat(int kind, mt_tensor *a, mt_tensor *pos, int64_t param, mt_tensor *out);
mt_status mt_record_index_put(mt_tensor *a, mt_tensor *values, mt_tensor *pos, int accumulate, mt_tensor *out);
mt_status mt_record_triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out);
mt_status mt_record_sort(mt_tensor *a, int dim, mt_tensor *index, int topk, mt_tensor *values);
mt_status mt_record_flip(mt_tensor *a, const int64_t *dims, int count, mt_tensor *out);
mt_status mt_record_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int count, mt_tensor *out);
mt_status mt_record_repeat(mt_tensor *a, const int64_t *repeats, int count, mt_tensor *out);
mt_status mt_record_stack(mt_tensor **ts, int count, int dim, mt_tensor *out);
/* copy_ (src) or fill_ (src NULL) over the whole of dst, recorded after the write */
mt_status mt_record_copy(mt_tensor *dst, mt_tensor *src);
/* An in-place write that autograd records must cover the whole of t's storage, t not a view. */
mt_status mt_grad_check_whole_write(mt_tensor *t, const char *op);
/* int64 0, 1, 2, ... in t's shape (no grad) */
mt_status mt_grad_positions(const mt_tensor *t, mt_tensor **out);

/* Run a kernel with recording off (conversions and copies inside it are not part of the graph). */
#define MT_NOGRAD(expr)             \
  ({                                \
    int mode_ = mt_grad_mode;       \
    mt_grad_mode = 0;               \
    mt_status s_ = (expr);          \
    mt_grad_mode = mode_;           \
    s_;                             \
  })

/* Each family's wrappers, put into the dispatch layer's table when the library loads. */
void mt_grad_register_elementwise(mt_autograd_ops *t);
void mt_grad_register_copy(mt_autograd_ops *t);
void mt_grad_register_view(mt_autograd_ops *t);
void mt_grad_register_reduce(mt_autograd_ops *t);
void mt_grad_register_index(mt_autograd_ops *t);
void mt_grad_register_sort(mt_autograd_ops *t);
void mt_grad_register_linalg(mt_autograd_ops *t);
/* a tensor's accumulated gradient, borrowed (NULL if none) */
mt_tensor *mt_grad_of(const mt_tensor *t);

#endif
