/* node.h -- the autograd layer's graph (node.c): nodes, what kind of node each is, per-tensor
 * autograd metadata, and what recording an op does with them.
 *
 * Autograd sits above the dispatch layer: for every front door that records, an op family's file
 * (core/grad/<family>.c, beside core/ops/<family>.c and core/tensor/<family>.c) registers a
 * wrapper that runs the front door with grad mode off and records a node; beside it stand the
 * node's data (what it saves, as a named struct) and its backward, written with the front doors
 * (core/grad/formula.h). */
#ifndef MT_NODE_H
#define MT_NODE_H

#include "../ops/dispatch.h"

typedef struct mt_edge {
  mt_node *node;     /* strong reference; NULL where the input needs no gradient */
  int32_t input_nr;  /* which output of `node` (= which gradient slot) this edge feeds */
  int32_t _pad;
} mt_edge;

/* A tensor kept for the backward. */
typedef struct mt_saved {
  mt_tensor *t;      /* strong reference, NULL once released */
  int64_t version;   /* the storage version when saved */
  int32_t output_nr; /* >= 0 when t is an output of this node (saved without its grad_fn) */
  int32_t _pad;
} mt_saved;

/* A shape (and dtype) remembered for the backward. */
typedef struct mt_shape {
  int32_t ndim, dtype;
  int64_t sizes[MT_MAX_DIMS];
} mt_shape;

/* An input's shape, kept to sum its gradient down to it (undoing broadcasting): only the flag
 * `same` when it was the output's shape (then the gradient goes on as it is). */
typedef struct mt_input_shape {
  int32_t same;
  int32_t _pad;
  mt_shape shape;
} mt_input_shape;

/* The two inputs' shapes of a binary op, their flags first: recording the usual case (neither input
 * broadcast) writes one line of the node, which is cold (see struct mt_node). */
typedef struct mt_input_shapes {
  int32_t same[2];
  mt_shape shape[2];
} mt_input_shapes;

/* A node's backward: from its outputs' gradients gout[nout] (NULL: none arrived) it makes gin[nin],
 * new references (NULL where an input needs no gradient). */
typedef mt_status (*mt_backward_fn)(mt_node *n, mt_tensor **gout, mt_tensor **gin);

/* What a node is (PyTorch's Node subclasses): its name as grad_fn prints it, its backward, and
 * what its data holds. Defined beside the op's recording, one per kind of node. */
typedef struct mt_node_kind {
  const char *name;                         /* the grad_fn name, when every node of the kind has it */
  const char *(*name_of)(const mt_node *n); /* else: this node's name (from its data) */
  const char *(*names)(int i);              /* and then every name name_of gives, i = 0, 1, ... (NULL after) */
  mt_backward_fn backward;
  uint8_t nsaved; /* the node's data begins with this many mt_saved (released with the graph) */
  uint8_t view;   /* the node records a view: writing into its output in place is refused */
} mt_node_kind;

enum {
  NODE_RELEASED = 1,  /* saved tensors were freed by a backward without retain_graph */
  NODE_PRE_HOOK = 2,  /* the Lua layer has pre hooks on this node */
  NODE_POST_HOOK = 4, /* ... post hooks */
  NODE_HAS_SAVED = 8, /* the saved tensors at the start of data are initialised (some were stored) */
  NODE_SMALL = 16,    /* allocated from the small-block list */
  NODE_EXTRA = 32     /* variable, name or lua_id may be set (releasing looks at them) */
};

#define MT_NODE_INLINE_EDGES 2
#define MT_NODE_DATA_BYTES 384

/* A graph node. Laid out by use, in 64-byte lines, because graphs are released a GC cycle after
 * they were made (lua/tensor.lua), when their memory is cold: recording writes lines 0-1 and the
 * part of data its kind uses, releasing reads lines 0-1 (and the saved tensors when
 * NODE_HAS_SAVED). */
struct mt_node {
  /* line 0: recording, releasing, the engine */
  int64_t refcount;
  const mt_node_kind *kind;
  int16_t nin;       /* edges: one per differentiable input of the forward op */
  int16_t nout;      /* gradients coming in: one per output of the forward op */
  uint32_t flags;
  int32_t deps;      /* engine scratch, valid while engine `epoch` runs */
  int32_t heap_pos;
  uint64_t seq;      /* creation order: later nodes run first */
  mt_edge *next;     /* nin edges: edge_in, or tail */
  mt_tensor **buf;   /* engine: nout incoming gradients being summed */
  uint64_t epoch;
  /* line 1 */
  mt_edge edge_in[MT_NODE_INLINE_EDGES];
  int64_t lua_id;
  int64_t anomaly_id;
  mt_tensor *variable;   /* AccumulateGrad: the leaf (strong reference) */
  char *name;            /* Lua nodes: their name (owned) */
  /* lines 2-7: the kind's struct (NODE_DATA), written and read by its recording and backward only */
  _Alignas(16) unsigned char data[MT_NODE_DATA_BYTES];
  mt_edge tail[];        /* edges beyond MT_NODE_INLINE_EDGES */
};
_Static_assert(sizeof(mt_node) <= MT_NODE_BLOCK, "a node with its inline edges fits a node block");

/* A node's data as its kind's struct T (whose first fields are its kind's nsaved mt_saved). */
#define NODE_DATA(n, T) ((T *)(void *)(n)->data)
#define MT_NODE_DATA_FITS(T) _Static_assert(sizeof(T) <= MT_NODE_DATA_BYTES, #T " fits a node's data")

/* mt_node_retain for the core's own use */
static inline mt_node *node_ref(mt_node *n) {
  if (n) n->refcount++;
  return n;
}

/* Per-tensor autograd metadata (mt_tensor._autograd), made on demand. Its first word is grad_fn,
 * which releasing a tensor reaches first (see mt_autograd_release). */
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
_Static_assert(offsetof(mt_meta, grad_fn) == 0, "grad_fn is the metadata's first word");

mt_meta *mt_meta_get(mt_tensor *t); /* made if missing; NULL when out of memory */
void mt_meta_free(mt_tensor *t);    /* a dying head's metadata (what mt_autograd_release does) */
/* a tensor's accumulated gradient, borrowed (NULL if none) */
mt_tensor *mt_grad_of(const mt_tensor *t);

/* ---------------------------------------------------------------- recording */
/* A node of `kind` with one edge per input (NULL inputs, or inputs that need no grad, get no
 * edge); its data is left for the recording to fill. */
mt_status mt_node_make(const mt_node_kind *kind, mt_tensor **inputs, int nin, int nout, mt_node **out);
/* Keep t (an input, or its old value for an in-place op) in `slot` of n's data. */
void mt_node_save(mt_node *n, mt_saved *slot, mt_tensor *t);
/* Keep an output of n itself: a detached head over its data (keeping the output would be a cycle). */
mt_status mt_node_save_output(mt_node *n, mt_saved *slot, mt_tensor *out, int output_nr);
/* A saved tensor for the backward (a new reference, NULL if none was saved); an error when it was
 * released or modified in place since. */
mt_status mt_node_saved(mt_node *n, mt_saved *slot, mt_tensor **t);
/* Attach `out` as output `nr` of n: out.grad_fn = n, out requires grad. */
mt_status mt_node_attach(mt_node *n, mt_tensor *out, int nr);
/* The same as output 0, handing over the caller's reference to n (released on failure). */
mt_status mt_node_attach_new(mt_node *n, mt_tensor *out);
/* Does input k of n need a gradient? */
static inline bool mt_node_wants(const mt_node *n, int k) { return n->next[k].node != NULL; }

void mt_shape_of(mt_shape *s, const mt_tensor *t);
/* Keep input t's shape for its gradient, when it differs from the output's. */
static inline void mt_input_shape_keep(mt_input_shape *k, const mt_tensor *t, const mt_tensor *out) {
  bool same = t->_ndim == out->_ndim;
  for (int i = 0; same && i < t->_ndim; i++) same = t->_sizes[i] == out->_sizes[i];
  k->same = same;
  if (!same) mt_shape_of(&k->shape, t);
}

/* The same for both inputs of a binary op. */
static inline void mt_input_shapes_keep(mt_input_shapes *k, const mt_tensor *a, const mt_tensor *b,
                                        const mt_tensor *out) {
  const mt_tensor *in[2] = {a, b};
  for (int j = 0; j < 2; j++) {
    const mt_tensor *t = in[j];
    bool same = t->_ndim == out->_ndim;
    for (int i = 0; same && i < t->_ndim; i++) same = t->_sizes[i] == out->_sizes[i];
    k->same[j] = same;
    if (!same) mt_shape_of(&k->shape[j], t);
  }
}

/* The edge a tensor contributes as an input: its grad_fn, or its AccumulateGrad for a leaf. */
mt_status mt_tensor_edge(mt_tensor *t, mt_edge *e);

/* The checks of the wrappers: an in-place op on t with grad recording (leaves and views of leaves
 * are refused); out= arguments (autograd and out= do not mix, as in PyTorch); an in-place write
 * recorded over the whole of t (t not a view, nor part of a storage). */
mt_status mt_grad_check_inplace(mt_tensor *t, const char *op);
mt_status mt_grad_check_out(mt_tensor *out, bool recording, const char *op);
mt_status mt_grad_check_whole_write(mt_tensor *t, const char *op);

/* Run a front door with recording off (its inner conversions and copies are not part of the graph). */
#define MT_NOGRAD(expr)             \
  ({                                \
    int mode_ = mt_grad_mode;       \
    mt_grad_mode = 0;               \
    mt_status s_ = (expr);          \
    mt_grad_mode = mode_;           \
    s_;                             \
  })

/* The kinds of node node.c itself makes: a leaf's AccumulateGrad, a Lua function's node. */
extern const mt_node_kind mt_accumulate_grad_kind, mt_lua_function_kind;

#endif
