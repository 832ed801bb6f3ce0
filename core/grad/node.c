/* node.c -- graph nodes and per-tensor autograd metadata: creation, reference counting, the
 * public getters and setters (requires_grad, grad, grad_fn, detach, ...), and recording helpers. */
#include "formula.h"
#include "../ops/layout.h"

#include <stdlib.h>

static int anomaly_mode;
static int64_t anomaly_trace;
static uint64_t next_seq;
static int64_t live_nodes;

void mt_set_detect_anomaly(int on) { anomaly_mode = on != 0; }
int mt_is_anomaly_enabled(void) { return anomaly_mode; }
void mt_set_anomaly_trace(int64_t id) { anomaly_trace = id; }
int64_t mt_live_nodes(void) { return live_nodes; }

/* ---------------------------------------------------------------- dead Lua ids */
static int64_t *dead_ids;
static size_t ndead, capdead;
static void push_dead(int64_t id) {
  if (!id) return;
  if (ndead == capdead) {
    size_t nc = capdead ? capdead * 2 : 64;
    int64_t *n = realloc(dead_ids, nc * sizeof *n);
    if (!n) return; /* the Lua side keeps a little state longer */
    dead_ids = n;
    capdead = nc;
  }
  dead_ids[ndead++] = id;
}
int64_t mt_grad_pop_dead_id(void) { return ndead ? dead_ids[--ndead] : 0; }

/* ---------------------------------------------------------------- metadata */
mt_meta *mt_meta_get(mt_tensor *t) {
  mt_meta *m = t->_autograd;
  if (m) return m;
  if (t->_flags & MT_TENSOR_EMBEDDED_HEAD) { /* the slot reserved in the tensor's own block */
    m = (mt_meta *)((char *)t + MT_EMBEDDED_META_OFFSET);
    memset(m, 0, sizeof *m);
    m->flags = META_EMBEDDED;
  } else {
    m = calloc(1, sizeof *m);
  }
  t->_autograd = m;
  return m;
}

/* called by mt_tensor_release when the head dies (installed as mt_autograd_release) */
void mt_meta_free(mt_tensor *t) {
  mt_meta *m = t->_autograd;
  if (!m) return;
  t->_autograd = NULL;
  push_dead(m->lua_hooks);
  mt_node_release(m->grad_fn);
  mt_tensor_release(m->grad);
  if (!(m->flags & META_EMBEDDED)) free(m);
}

int mt_requires_grad(const mt_tensor *t) { return t && (t->_flags & MT_TENSOR_REQUIRES_GRAD) != 0; }
int mt_is_leaf(const mt_tensor *t) {
  const mt_meta *m = t->_autograd;
  return !m || !m->grad_fn;
}
mt_node *mt_grad_fn(const mt_tensor *t) {
  const mt_meta *m = t->_autograd;
  return m ? m->grad_fn : NULL;
}
int mt_output_nr(const mt_tensor *t) {
  const mt_meta *m = t->_autograd;
  return m ? m->output_nr : 0;
}
int64_t mt_tensor_version(const mt_tensor *t) { return t->_storage->_version; }

mt_status mt_set_requires_grad(mt_tensor *t, int on) {
  MT_TRY(mt_check_tensor(t, "requires_grad_", "self"));
  if (!mt_is_leaf(t)) {
    if (!on)
      return mt_error(MT_ESTATE, "requires_grad_: you can only change requires_grad flags of leaf variables. If you "
                                 "want to use a computed variable in a subgraph that doesn't require differentiation "
                                 "use var_no_grad = var.detach().");
    return MT_OK;
  }
  if (on && !mt_is_float(t->_dtype))
    return mt_error(MT_EDTYPE, "requires_grad_: only Tensors of floating point dtype can require gradients (got %s)",
                    mt_dtype_name(t->_dtype));
  if (on) {
    t->_flags |= MT_TENSOR_REQUIRES_GRAD;
    t->_storage->_flags |= MT_STORAGE_LEAF_GRAD; /* its views must not be written in place */
  } else {
    t->_flags &= ~(uint32_t)MT_TENSOR_REQUIRES_GRAD;
    t->_storage->_flags &= ~(uint32_t)MT_STORAGE_LEAF_GRAD;
  }
  return MT_OK;
}

mt_status mt_tensor_set_data(mt_tensor *t, mt_tensor *src) {
  MT_TRY(mt_check_tensor(t, "set_data", "tensor"));
  MT_TRY(mt_check_tensor(src, "set_data", "data"));
  if ((t->_flags & MT_TENSOR_REQUIRES_GRAD) && !mt_is_float(src->_dtype))
    return mt_error(MT_EDTYPE, "data: data set to a tensor that requires gradients must be floating point "
                               "or complex dtype (got %s)", mt_dtype_name(src->_dtype));
  mt_tensor_take_data(t, src);
  /* a leaf that requires grad marks its storage (its views must not be written in place) */
  if ((t->_flags & MT_TENSOR_REQUIRES_GRAD) && mt_is_leaf(t)) t->_storage->_flags |= MT_STORAGE_LEAF_GRAD;
  return MT_OK;
}

mt_tensor *mt_grad_of(const mt_tensor *t) {
  const mt_meta *m = t->_autograd;
  return m ? m->grad : NULL;
}

mt_tensor *mt_get_grad(mt_tensor *t) {
  mt_meta *m = t->_autograd;
  return m && m->grad ? mt_tensor_retain(m->grad) : NULL;
}

mt_status mt_set_grad(mt_tensor *t, mt_tensor *g) {
  MT_TRY(mt_check_tensor(t, "grad", "self"));
  if (g) {
    bool same = g->_ndim == t->_ndim && !memcmp(g->_sizes, t->_sizes, sizeof(int64_t) * (size_t)t->_ndim);
    if (!same)
      return mt_error(MT_ESHAPE, "grad: assigned grad has data of a different size (%s, expected %s)", MT_SHAPE(g),
                      MT_SHAPE(t));
    if (g->_dtype != t->_dtype)
      return mt_error(MT_EDTYPE, "grad: assigned grad has data of a different type (%s, expected %s)",
                      mt_dtype_name(g->_dtype), mt_dtype_name(t->_dtype));
  }
  mt_meta *m = g ? mt_meta_get(t) : t->_autograd;
  if (!m) return g ? mt_error(MT_ENOMEM, "grad: out of memory") : MT_OK;
  mt_tensor *old = m->grad;
  m->grad = mt_tensor_retain(g);
  mt_tensor_release(old);
  return MT_OK;
}

mt_status mt_retain_grad(mt_tensor *t) {
  MT_TRY(mt_check_tensor(t, "retain_grad", "self"));
  if (!(t->_flags & MT_TENSOR_REQUIRES_GRAD))
    return mt_error(MT_ESTATE, "retain_grad: can't retain_grad on Tensor that has requires_grad=False");
  if (mt_is_leaf(t)) return MT_OK; /* leaves keep their grad anyway */
  mt_meta_get(t)->flags |= META_RETAINS_GRAD;
  return MT_OK;
}
int mt_retains_grad(const mt_tensor *t) {
  const mt_meta *m = t->_autograd;
  if (!m) return 0;
  return (m->flags & META_RETAINS_GRAD) != 0;
}

mt_status mt_detach(mt_tensor *t, mt_tensor **out) {
  MT_TRY(mt_check_tensor(t, "detach", "self"));
  return mt_tensor_alias(t, out); /* a fresh head: no grad_fn, no requires_grad */
}

mt_status mt_detach_(mt_tensor *t) {
  MT_TRY(mt_check_tensor(t, "detach_", "self"));
  mt_meta *m = t->_autograd;
  if (m && m->grad_fn) {
    mt_node_release(m->grad_fn);
    m->grad_fn = NULL;
    m->output_nr = 0;
  }
  t->_flags &= ~(uint32_t)MT_TENSOR_REQUIRES_GRAD;
  return MT_OK;
}

/* ---------------------------------------------------------------- nodes */
static mt_node *node_alloc(const mt_node_kind *kind, int nin, int nout) {
  int extra = nin > MT_NODE_INLINE_EDGES ? nin : 0;
  size_t size = sizeof(mt_node) + sizeof(mt_edge) * (size_t)extra;
  mt_node *n;
  if (size <= MT_NODE_BLOCK) {
    n = mt_small_alloc();
    if (!n) return NULL;
    n->flags = NODE_SMALL;
  } else {
    n = malloc(size);
    if (!n) return NULL;
    n->flags = 0;
  }
  /* field by field, lines 0-1 only (see struct mt_node): the data is the recording's to fill (its
   * saved tensors initialised by the first save) */
  n->refcount = 1;
  n->kind = kind;
  n->nin = (int16_t)nin;
  n->nout = (int16_t)nout;
  n->deps = 0;
  n->seq = ++next_seq;
  n->next = extra ? n->tail : n->edge_in;
  n->buf = NULL;
  n->epoch = 0;
  n->heap_pos = -1;
  n->lua_id = 0;
  n->anomaly_id = anomaly_mode ? anomaly_trace : 0;
  n->variable = NULL;
  n->name = NULL;
  live_nodes++;
  return n; /* its edges are the caller's to set (mt_node_make, grad_accumulator: none) */
}

mt_node *mt_node_retain(mt_node *n) { return node_ref(n); }

/* Release a chain of nodes without recursion: a 100 000-node graph must not overflow the stack.
 * Dying nodes' edges go on an explicit list. */
void mt_node_release(mt_node *n) {
  if (!n || --n->refcount > 0) return;
  enum { LOCAL = 32 };
  mt_node *local[LOCAL];
  mt_node **todo = local;
  size_t cap = LOCAL, len = 0;
  todo[len++] = n;
  while (len > 0) {
    mt_node *d = todo[--len];
    for (int i = 0; i < d->nin; i++) {
      mt_node *c = d->next[i].node;
      if (c && --c->refcount == 0) {
        if (len == cap) {
          mt_node **nt = todo == local ? malloc(cap * 2 * sizeof *nt) : realloc(todo, cap * 2 * sizeof *nt);
          if (!nt) { c->refcount = 1; continue; } /* out of memory: leak this branch rather than crash */
          if (todo == local) memcpy(nt, local, sizeof local);
          todo = nt;
          cap *= 2;
        }
        todo[len++] = c;
      }
    }
    if (d->flags & NODE_HAS_SAVED) {
      mt_saved *sv = NODE_DATA(d, mt_saved);
      for (int i = 0; i < d->kind->nsaved; i++) mt_tensor_release(sv[i].t);
    }
    if (d->flags & NODE_EXTRA) {
      if (d->variable) {
        mt_meta *m = d->variable->_autograd;
        if (m && m->grad_acc == d) m->grad_acc = NULL;
        mt_tensor_release(d->variable);
      }
      free(d->name);
      push_dead(d->lua_id);
    }
    /* buf belongs to an engine (mt_engine_free clears it before it lets go of the node) */
    live_nodes--;
    if (d->flags & NODE_SMALL) mt_small_free(d);
    else free(d);
  }
  if (todo != local) free(todo);
}

const char *mt_node_name(const mt_node *n) {
  if (!n) return "";
  if (n->name) return n->name;
  return n->kind->name_of ? n->kind->name_of(n) : n->kind->name;
}
mt_status mt_node_rename(mt_node *n, const char *name) {
  if (!n || !name) return mt_error(MT_EINVAL, "grad_fn: no node or name to rename");
  size_t len = strlen(name);
  char *c = malloc(len + 1);
  if (!c) return mt_error(MT_ENOMEM, "grad_fn: out of memory");
  memcpy(c, name, len + 1);
  free(n->name);
  n->name = c;
  n->flags |= NODE_EXTRA;
  return MT_OK;
}
int mt_node_num_next(const mt_node *n) { return n ? n->nin : 0; }
mt_node *mt_node_next(const mt_node *n, int i, int *input_nr) {
  if (!n || i < 0 || i >= n->nin) return NULL;
  if (input_nr) *input_nr = n->next[i].input_nr;
  return n->next[i].node;
}
mt_tensor *mt_node_variable(const mt_node *n) { return n ? n->variable : NULL; }
int64_t mt_node_lua_id(const mt_node *n) { return n ? n->lua_id : 0; }
void mt_node_set_lua_id(mt_node *n, int64_t id) {
  if (!n) return;
  n->lua_id = id;
  n->flags |= NODE_EXTRA;
}
int64_t mt_node_anomaly_trace(const mt_node *n) { return n ? n->anomaly_id : 0; }
void mt_node_set_hook_flags(mt_node *n, int pre, int post) {
  if (!n) return;
  n->flags = (n->flags & ~(uint32_t)(NODE_PRE_HOOK | NODE_POST_HOOK)) | (pre ? NODE_PRE_HOOK : 0) |
             (post ? NODE_POST_HOOK : 0);
}

/* A leaf's AccumulateGrad node: made once, kept weakly by the leaf. */
static mt_status grad_accumulator(mt_tensor *t, mt_node **out) {
  mt_meta *m = mt_meta_get(t);
  if (!m) return mt_error(MT_ENOMEM, "autograd: out of memory");
  if (m->grad_acc) {
    *out = node_ref(m->grad_acc);
    return MT_OK;
  }
  mt_node *n = node_alloc(&mt_accumulate_grad_kind, 0, 1);
  if (!n) return mt_error(MT_ENOMEM, "autograd: out of memory");
  n->variable = mt_tensor_retain(t);
  n->flags |= NODE_EXTRA;
  m->grad_acc = n;
  *out = n;
  return MT_OK;
}

mt_status mt_tensor_edge(mt_tensor *t, mt_edge *e) {
  e->node = NULL;
  e->input_nr = 0;
  if (!t || !(t->_flags & MT_TENSOR_REQUIRES_GRAD)) return MT_OK;
  mt_meta *m = t->_autograd;
  if (m && m->grad_fn) {
    e->node = node_ref(m->grad_fn);
    e->input_nr = m->output_nr;
    return MT_OK;
  }
  return grad_accumulator(t, &e->node);
}

mt_status mt_node_make(const mt_node_kind *kind, mt_tensor **inputs, int nin, int nout, mt_node **out) {
  mt_node *n = node_alloc(kind, nin, nout);
  if (!n) return mt_error(MT_ENOMEM, "autograd: out of memory recording an op");
  for (int i = 0; i < nin; i++) {
    mt_status s = mt_tensor_edge(inputs[i], &n->next[i]); /* sets the edge, also when it fails */
    if (s) {
      for (int j = i + 1; j < nin; j++) n->next[j] = (mt_edge){NULL, 0, 0};
      mt_node_release(n);
      return s;
    }
  }
  *out = n;
  return MT_OK;
}

/* the saved tensors at the start of the data are initialised by the first save */
static void saved_init(mt_node *n) {
  if (n->flags & NODE_HAS_SAVED) return;
  mt_saved *sv = NODE_DATA(n, mt_saved);
  for (int i = 0; i < n->kind->nsaved; i++) {
    sv[i].t = NULL;
    sv[i].version = 0;
    sv[i].output_nr = -1;
  }
  n->flags |= NODE_HAS_SAVED;
}

void mt_node_save(mt_node *n, mt_saved *slot, mt_tensor *t) {
  saved_init(n);
  slot->t = mt_tensor_retain(t);
  slot->version = t ? t->_storage->_version : 0;
  slot->output_nr = -1;
}

/* An output saved by its own node would be a reference cycle (node -> output -> grad_fn -> node):
 * keep a detached head over the same data instead. */
mt_status mt_node_save_output(mt_node *n, mt_saved *slot, mt_tensor *out, int output_nr) {
  mt_tensor *alias;
  MT_TRY(mt_tensor_alias(out, &alias));
  saved_init(n);
  slot->t = alias;
  slot->version = out->_storage->_version;
  slot->output_nr = output_nr;
  return MT_OK;
}

void mt_shape_of(mt_shape *s, const mt_tensor *t) {
  s->ndim = t->_ndim;
  s->dtype = t->_dtype;
  memcpy(s->sizes, t->_sizes, sizeof(int64_t) * (size_t)t->_ndim);
}

mt_status mt_node_attach(mt_node *n, mt_tensor *out, int nr) {
  mt_meta *m = mt_meta_get(out);
  if (!m) return mt_error(MT_ENOMEM, "autograd: out of memory");
  mt_node *old = m->grad_fn;
  m->grad_fn = node_ref(n);
  m->output_nr = nr;
  mt_node_release(old);
  out->_flags |= MT_TENSOR_REQUIRES_GRAD;
  return MT_OK;
}

mt_status mt_node_attach_new(mt_node *n, mt_tensor *out) {
  if (!out->_autograd && (out->_flags & MT_TENSOR_EMBEDDED_HEAD)) {
    /* a new result (the usual case): its metadata slot filled in one go, n's reference moved in */
    mt_meta *m = (mt_meta *)((char *)out + MT_EMBEDDED_META_OFFSET);
    m->grad_fn = n;
    m->grad_acc = NULL;
    m->grad = NULL;
    m->output_nr = 0;
    m->flags = META_EMBEDDED;
    m->lua_hooks = 0;
    out->_autograd = m;
    out->_flags |= MT_TENSOR_REQUIRES_GRAD;
    return MT_OK;
  }
  mt_status s = mt_node_attach(n, out, 0);
  mt_node_release(n);
  return s;
}

mt_status mt_node_saved(mt_node *n, mt_saved *sv, mt_tensor **t) {
  if (!(n->flags & NODE_HAS_SAVED)) {
    *t = NULL;
    return MT_OK;
  }
  if (!sv->t) {
    if (n->flags & NODE_RELEASED)
      return mt_error(MT_ESTATE,
                      "backward: Trying to backward through the graph a second time (or directly access saved tensors "
                      "after they have already been freed). Saved intermediate values of the graph are freed when you "
                      "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through "
                      "the graph a second time or if you need to access saved tensors after calling backward.");
    *t = NULL;
    return MT_OK;
  }
  if (!mt_inference_mode && sv->t->_storage->_version != sv->version) {
    return mt_error(MT_ESTATE,
                    "backward: one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: [%s %s], which is %s %s, is at version %lld; expected version %lld instead. Hint: "
                    "the backtrace further above can show the operation that failed to compute its gradient.",
                    mt_type_title(sv->t->_dtype), MT_SHAPE(sv->t), sv->output_nr >= 0 ? "output 0 of" : "an input of",
                    mt_node_name(n), (long long)sv->t->_storage->_version, (long long)sv->version);
  }
  if (sv->output_nr >= 0 && mt_grad_mode) {
    /* an output saved by its own node, unpacked for a backward that records (create_graph): a
     * fresh head that has the node as its grad_fn again, so second derivatives flow through it */
    return mt_node_output_alias(n, sv->t, sv->output_nr, t);
  }
  *t = mt_tensor_retain(sv->t);
  return MT_OK;
}

mt_status mt_grad_check_inplace(mt_tensor *t, const char *op) {
  if (mt_is_leaf(t) && (t->_flags & MT_TENSOR_REQUIRES_GRAD))
    return mt_error(MT_ESTATE, "%s: a leaf Variable that requires grad is being used in an in-place operation.", op);
  /* a recorded tensor over a leaf's storage can only be a view of that leaf */
  if ((t->_flags & MT_TENSOR_REQUIRES_GRAD) && (t->_storage->_flags & MT_STORAGE_LEAF_GRAD))
    return mt_error(MT_ESTATE,
                    "%s: a view of a leaf Variable that requires grad is being used in an in-place operation.", op);
  return MT_OK;
}

mt_status mt_grad_check_out(mt_tensor *out, bool recording, const char *op) {
  if (out && recording)
    return mt_error(MT_EINVAL,
                    "%s: functions with out=... arguments don't support automatic differentiation, but one of the "
                    "arguments requires grad.", op);
  return MT_OK;
}

/* A head over t that is output `nr` of node n (its grad_fn n): how an output that n (or a Lua
 * function) kept detached is unpacked for a backward that records (create_graph). */
/* function.c -- C support for nodes whose backward is written in Lua (torch.autograd.Function). */
#include "node.h"

mt_status mt_node_output_alias(mt_node *n, mt_tensor *t, int nr, mt_tensor **out) {
  if (!n) return mt_error(MT_EINVAL, "backward: no node");
  MT_TRY(mt_check_tensor(t, "backward", "saved tensor"));
  if (nr < 0 || nr >= n->nout) return mt_error(MT_ERANGE, "backward: output %d of a node with %d outputs", nr, n->nout);
  mt_tensor *a;
  MT_TRY(mt_tensor_alias(t, &a));
  mt_status s = mt_node_attach(n, a, nr);
  if (s) { mt_tensor_release(a); return s; }
  *out = a;
  return MT_OK;
}

mt_status mt_node_new_lua(const char *name, mt_tensor **inputs, int nin, mt_tensor **outputs, int nout,
                          int64_t lua_id, mt_node **out) {
  mt_node *n;
  MT_TRY(mt_node_make(&mt_lua_function_kind, inputs, nin, nout, &n));
  n->lua_id = lua_id;
  n->flags |= NODE_EXTRA;
  size_t len = strlen(name ? name : "");
  n->name = malloc(len + 1);
  if (n->name) memcpy(n->name, name ? name : "", len + 1);
  for (int i = 0; i < nout; i++) {
    if (!outputs[i]) continue;
    mt_status s = mt_node_attach(n, outputs[i], i);
    if (s) { mt_node_release(n); return s; }
  }
  *out = n;
  return MT_OK;
}

mt_status mt_tensor_set_hooks_id(mt_tensor *t, int64_t id) {
  MT_TRY(mt_check_tensor(t, "register_hook", "self"));
  mt_meta *m = mt_meta_get(t);
  if (!m) return mt_error(MT_ENOMEM, "register_hook: out of memory");
  m->lua_hooks = id;
  if (id) m->flags |= META_HAS_HOOKS;
  else m->flags &= ~(uint32_t)META_HAS_HOOKS;
  return MT_OK;
}
int64_t mt_tensor_hooks_id(const mt_tensor *t) {
  const mt_meta *m = t->_autograd;
  return m ? m->lua_hooks : 0;
}

void mt_node_set_anomaly_trace(mt_node *n, int64_t id) { if (n) n->anomaly_id = id; }

/* In-place writes recorded over a whole tensor: a view (or part of a storage) cannot be written
 * into with autograd, since the tensor it views would not learn of it (PyTorch's CopySlices). */
mt_status mt_grad_check_whole_write(mt_tensor *t, const char *op) {
  const mt_meta *m = t->_autograd;
  bool view = m && m->grad_fn && m->grad_fn->kind->view;
  /* the whole storage, in any dense layout (an elementwise result keeps its inputs' layout) */
  bool whole = t->_offset == 0 && mt_is_dense(t) &&
               (size_t)t->_numel * mt_itemsize(t->_dtype) == t->_storage->_nbytes;
  if (view || !whole)
    return mt_error(MT_ENOTIMPL,
                    "%s: an in-place write into a view (or part) of a tensor is not supported when autograd records it "
                    "(write into the whole tensor, or build the result with cat, where, index_put_ or masked_scatter_)",
                    op);
  return MT_OK;
}

/* A leaf's AccumulateGrad and a Lua function's node: the engine runs them itself. */
const mt_node_kind mt_accumulate_grad_kind = {.name = "AccumulateGrad"};
const mt_node_kind mt_lua_function_kind = {.name = "LuaFunctionBackward"};
