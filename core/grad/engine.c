/* engine.c -- the backward engine: finds the graph below the roots, counts each node's
 * dependencies, and runs nodes when all their gradients have arrived (latest-made first), summing
 * gradients for inputs used more than once. No recursion: a 100 000-node chain is a loop.
 *
 * It is steppable: mt_engine_run returns to the caller whenever the Lua layer must act (Lua hooks,
 * Lua backward functions), and the caller calls it again to go on. The C core never calls Lua.
 *
 * It is re-entrant as PyTorch's is: while the Lua layer acts for one engine (a Function's backward,
 * a hook) a new backward may start, run and finish (autograd.grad in a backward: a gradient
 * penalty). Engines nest: the innermost one runs. A node's scratch (epoch, deps, buf, heap_pos)
 * belongs to one engine at a time; an inner engine that reaches an outer engine's node keeps its
 * scratch aside and gives it back when the inner engine is freed. */
#include "node.h"

#include <stddef.h>
#include <stdlib.h>

typedef enum { ST_POP, ST_PRE_DONE, ST_LUA_DONE, ST_HOOK_DONE, ST_POST_DONE } stage;

enum { E_INLINE = 32, E_INLINE_GIN = 8, E_INLINE_SLOTS = 64, E_CHUNK_SLOTS = 256 };

/* more gradient slots (nodes' buf arrays), when the inline ones run out */
/* an outer engine's scratch of a node that an inner engine uses meanwhile */
typedef struct node_scratch {
  mt_node *node;
  uint64_t epoch;
  int32_t deps, heap_pos;
  mt_tensor **buf;
} node_scratch;

typedef struct slot_chunk {
  struct slot_chunk *next;
  mt_tensor *slots[];
} slot_chunk;

struct mt_engine {
  int retain_graph, create_graph, allow_unused;
  uint64_t epoch;
  /* every node reached, to clean up */
  mt_node **nodes;
  size_t nnodes, cap;
  /* ready nodes: a max-heap on seq */
  mt_node **heap;
  size_t nheap, heapcap;
  /* the node being run and its state */
  mt_node *cur;
  stage st;
  mt_tensor **gin; /* the current node's input gradients (cur->nin), NULL between nodes */
  mt_tensor **gin_buf;
  int gin_cap;
  /* where nodes' buf arrays come from: slots_in, then chunks */
  mt_tensor **slots;
  size_t slots_left;
  slot_chunk *chunks;
  /* autograd.grad: capture targets */
  int ncap;
  mt_node **cap_node;
  int *cap_nr;
  mt_tensor **captured;
  int saved_grad_mode;
  int finished;
  /* the engine this one runs inside (NULL: none), and the outer engines' node scratch kept aside */
  mt_engine *outer;
  node_scratch *aside;
  size_t naside, asidecap;
  /* small graphs need no allocation beyond the engine itself */
  mt_node *nodes_in[E_INLINE];
  mt_node *heap_in[E_INLINE + 1];
  mt_tensor *gin_in[E_INLINE_GIN];
  mt_tensor *slots_in[E_INLINE_SLOTS];
};

/* One finished engine is kept for the next backward (taken and given back atomically). */
static mt_engine *spare_engine;

static uint64_t engine_epoch;

/* the innermost engine of this thread that is not freed yet */
static __thread mt_engine *active_engine;

static mt_status oom(void) { return mt_error(MT_ENOMEM, "backward: out of memory"); }

static void heap_push(mt_engine *e, mt_node *n) {
  size_t i = e->nheap++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (e->heap[p]->seq >= n->seq) break;
    e->heap[i] = e->heap[p];
    i = p;
  }
  e->heap[i] = n;
}

static mt_node *heap_pop(mt_engine *e) {
  mt_node *top = e->heap[0];
  mt_node *last = e->heap[--e->nheap];
  size_t i = 0, n = e->nheap;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    mt_node *best = last;
    if (l < n && e->heap[l]->seq > best->seq) { m = l; best = e->heap[l]; }
    if (r < n && e->heap[r]->seq > best->seq) { m = r; best = e->heap[r]; }
    if (m == i) break;
    e->heap[i] = e->heap[m];
    i = m;
  }
  if (n > 0) e->heap[i] = last;
  return top;
}

/* n zeroed gradient slots that live as long as the engine */
static mt_tensor **take_slots(mt_engine *e, size_t n) {
  if (e->slots_left < n) {
    size_t len = n > E_CHUNK_SLOTS ? n : E_CHUNK_SLOTS;
    slot_chunk *c = malloc(sizeof *c + len * sizeof(mt_tensor *));
    if (!c) return NULL;
    c->next = e->chunks;
    e->chunks = c;
    e->slots = c->slots;
    e->slots_left = len;
  }
  mt_tensor **r = e->slots;
  for (size_t i = 0; i < n; i++) r[i] = NULL;
  e->slots += n;
  e->slots_left -= n;
  return r;
}

/* Mark a node as part of this run (first visit) */
static mt_status visit(mt_engine *e, mt_node *n, bool *first) {
  *first = n->epoch != e->epoch;
  if (!*first) return MT_OK;
  if (n->epoch != 0) {
    /* an outer engine's node: keep its scratch aside until this engine is freed */
    if (e->naside == e->asidecap) {
      size_t nc = e->asidecap ? e->asidecap * 2 : 16;
      node_scratch *na = realloc(e->aside, nc * sizeof *na);
      if (!na) return oom();
      e->aside = na;
      e->asidecap = nc;
    }
    e->aside[e->naside++] = (node_scratch){n, n->epoch, n->deps, n->heap_pos, n->buf};
  }
  n->epoch = e->epoch;
  n->heap_pos = -1;
  n->deps = 0;
  n->buf = take_slots(e, (size_t)(n->nout > 0 ? n->nout : 1));
  if (!n->buf) return oom();
  if (e->nnodes == e->cap) {
    size_t nc = e->cap * 2;
    mt_node **nn = e->nodes == e->nodes_in ? malloc(nc * sizeof *nn) : realloc(e->nodes, nc * sizeof *nn);
    if (!nn) return oom();
    if (e->nodes == e->nodes_in) memcpy(nn, e->nodes_in, sizeof e->nodes_in);
    e->nodes = nn;
    e->cap = nc;
  }
  e->nodes[e->nnodes++] = node_ref(n);
  return MT_OK;
}

/* Discover the graph below `roots` and count dependencies (iterative DFS). */
static mt_status discover(mt_engine *e, mt_node **roots, int n) {
  mt_node *local[64];
  size_t cap = 64, len = 0;
  mt_node **stack = local;
  mt_status s = MT_OK;
  for (int i = 0; i < n && s == MT_OK; i++) {
    bool first;
    if ((s = visit(e, roots[i], &first))) break;
    if (!first) continue;
    stack[len++] = roots[i];
    while (len > 0 && s == MT_OK) {
      mt_node *d = stack[--len];
      for (int k = 0; k < d->nin; k++) {
        mt_node *c = d->next[k].node;
        if (!c) continue;
        if ((s = visit(e, c, &first))) break;
        c->deps++;
        if (first) {
          if (len == cap) {
            mt_node **ns = stack == local ? malloc(cap * 2 * sizeof *ns) : realloc(stack, cap * 2 * sizeof *ns);
            if (!ns) { s = oom(); break; }
            if (stack == local) memcpy(ns, local, sizeof local);
            stack = ns;
            cap *= 2;
          }
          stack[len++] = c;
        }
      }
    }
  }
  if (stack != local) free(stack);
  if (s == MT_OK && e->nnodes + 1 > e->heapcap) {
    e->heapcap = e->nnodes + 1;
    e->heap = malloc(e->heapcap * sizeof *e->heap);
    if (!e->heap) s = oom();
  }
  return s;
}

/* buf[i] += g (g borrowed); out of place so that create_graph records the sum */
static mt_status accumulate_into(mt_tensor **slot, mt_tensor *g) {
  if (!g) return MT_OK;
  if (!*slot) {
    *slot = mt_tensor_retain(g);
    return MT_OK;
  }
  mt_tensor *sum;
  MT_TRY(mt_binary(MT_OP_ADD, *slot, g, NULL, &sum));
  mt_tensor_release(*slot);
  *slot = sum;
  return MT_OK;
}

static bool has_nan(const mt_tensor *g) {
  if (!g || !mt_is_float(g->_dtype) || !mt_backend_of(g)->holds_data) return false; /* meta: no values */
  mt_tensor *isn = NULL;
  int any = 0;
  if (mt_unary(MT_OP_ISNAN, (mt_tensor *)g, 0, 0, NULL, &isn) == MT_OK) {
    mt_tensor *r = NULL;
    if (mt_reduce(MT_OP_ANY, isn, NULL, 0, 0, -1, 0, NULL, &r) == MT_OK) {
      double v = 0;
      if (mt_tensor_item(r, &v) == MT_OK) any = v != 0;
      mt_tensor_release(r);
    }
    mt_tensor_release(isn);
  }
  return any != 0;
}

mt_status mt_engine_new(mt_tensor **roots, mt_tensor **grads, int n, int retain_graph, int create_graph,
                        mt_tensor **inputs, int ninputs, int allow_unused, mt_engine **out) {
  if (n <= 0) return mt_error(MT_EINVAL, "backward: no tensors to differentiate");
  mt_engine *e = __atomic_exchange_n(&spare_engine, NULL, __ATOMIC_ACQUIRE);
  if (!e) e = malloc(sizeof *e);
  if (!e) return oom();
  /* everything but the inline arrays */
  memset(e, 0, offsetof(mt_engine, nodes_in));
  e->nodes = e->nodes_in;
  e->cap = E_INLINE;
  e->heap = e->heap_in;
  e->heapcap = E_INLINE + 1;
  e->gin_buf = e->gin_in;
  e->gin_cap = E_INLINE_GIN;
  e->slots = e->slots_in;
  e->slots_left = E_INLINE_SLOTS;
  e->retain_graph = retain_graph;
  e->create_graph = create_graph;
  e->allow_unused = allow_unused;
  e->epoch = ++engine_epoch;
  e->saved_grad_mode = mt_grad_mode;
  e->outer = active_engine;
  active_engine = e;
  mt_status s = MT_OK;
  mt_node *rn_in[4] = {0};
  int rnr_in[4] = {0};
  mt_node **rn = n <= 4 ? rn_in : calloc((size_t)n, sizeof *rn);
  int *rnr = n <= 4 ? rnr_in : calloc((size_t)n, sizeof *rnr);
  if (!rn || !rnr) { s = oom(); goto fail; }
  for (int i = 0; i < n; i++) {
    mt_tensor *r = roots[i];
    if ((s = mt_check_tensor(r, "backward", "tensor"))) goto fail;
    if (!(r->_flags & MT_TENSOR_REQUIRES_GRAD)) {
      s = mt_error(MT_ESTATE, "backward: element %d of tensors does not require grad and does not have a grad_fn", i);
      goto fail;
    }
    mt_edge edge;
    if ((s = mt_tensor_edge(r, &edge))) goto fail;
    rn[i] = edge.node;
    rnr[i] = edge.input_nr;
    mt_tensor *g = grads ? grads[i] : NULL;
    if (g) {
      bool same = g->_ndim == r->_ndim && !memcmp(g->_sizes, r->_sizes, sizeof(int64_t) * (size_t)r->_ndim);
      if (!same) {
        s = mt_error(MT_ESHAPE, "backward: Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a "
                                "shape of %s.", i, MT_SHAPE(g), i, MT_SHAPE(r));
        goto fail;
      }
    } else if (r->_numel != 1) {
      s = mt_error(MT_ESTATE, "backward: grad can be implicitly created only for scalar outputs");
      goto fail;
    }
  }
  if ((s = discover(e, rn, n))) goto fail;
  /* seed the roots' gradients */
  for (int i = 0; i < n; i++) {
    mt_tensor *g = grads ? grads[i] : NULL;
    mt_tensor *ones = NULL;
    if (!g) {
      mt_device dev = mt_device_of(roots[i]);
      if ((s = mt_tensor_full(roots[i]->_sizes, roots[i]->_ndim, roots[i]->_dtype, 1.0, &dev, &ones))) goto fail;
      g = ones;
    }
    s = accumulate_into(&rn[i]->buf[rnr[i]], g);
    mt_tensor_release(ones);
    if (s) goto fail;
  }
  for (int i = 0; i < n; i++) {
    if (rn[i]->deps == 0 && rn[i]->heap_pos != -2) {
      rn[i]->heap_pos = -2; /* queued */
      heap_push(e, rn[i]);
    }
  }
  /* autograd.grad targets */
  if (inputs && ninputs > 0) {
    e->ncap = ninputs;
    e->cap_node = calloc((size_t)ninputs, sizeof *e->cap_node);
    e->cap_nr = calloc((size_t)ninputs, sizeof *e->cap_nr);
    e->captured = calloc((size_t)ninputs, sizeof *e->captured);
    if (!e->cap_node || !e->cap_nr || !e->captured) { s = oom(); goto fail; }
    for (int i = 0; i < ninputs; i++) {
      mt_tensor *t = inputs[i];
      if ((s = mt_check_tensor(t, "grad", "inputs"))) goto fail;
      if (!(t->_flags & MT_TENSOR_REQUIRES_GRAD)) {
        s = mt_error(MT_ESTATE, "grad: One of the differentiated Tensors does not require grad");
        goto fail;
      }
      mt_edge edge;
      if ((s = mt_tensor_edge(t, &edge))) goto fail;
      e->cap_node[i] = edge.node; /* owned */
      e->cap_nr[i] = edge.input_nr;
    }
  }
  for (int i = 0; i < n; i++) mt_node_release(rn[i]);
  if (rn != rn_in) free(rn);
  if (rnr != rnr_in) free(rnr);
  *out = e;
  return MT_OK;
fail:
  if (rn) for (int i = 0; i < n; i++) mt_node_release(rn[i]);
  if (rn != rn_in) free(rn);
  if (rnr != rnr_in) free(rnr);
  mt_engine_free(e);
  return s;
}

void mt_engine_free(mt_engine *e) {
  if (!e) return;
  for (size_t i = 0; i < e->nnodes; i++) {
    mt_node *d = e->nodes[i];
    if (d->buf) {
      for (int k = 0; k < d->nout; k++) mt_tensor_release(d->buf[k]);
      d->buf = NULL;
    }
    d->epoch = 0;
    d->heap_pos = -1;
  }
  /* the outer engines' scratch back, last kept first (a node kept twice gets the oldest) */
  for (size_t i = e->naside; i-- > 0;) {
    node_scratch *k = &e->aside[i];
    k->node->epoch = k->epoch;
    k->node->deps = k->deps;
    k->node->heap_pos = k->heap_pos;
    k->node->buf = k->buf;
  }
  free(e->aside);
  /* off the stack of engines. Freed out of turn (a coroutine left an inner engine running): the
   * inner engines forget what they kept of this one's nodes, whose scratch dies with it. */
  mt_engine **link = &active_engine;
  while (*link && *link != e) {
    mt_engine *in = *link;
    for (size_t i = 0; i < in->naside; i++)
      if (in->aside[i].epoch == e->epoch) in->aside[i] = (node_scratch){in->aside[i].node, 0, 0, -1, NULL};
    link = &in->outer;
  }
  if (*link == e) *link = e->outer;
  for (size_t i = 0; i < e->nnodes; i++) mt_node_release(e->nodes[i]);
  if (e->gin && e->cur) {
    for (int k = 0; k < e->cur->nin; k++) mt_tensor_release(e->gin[k]);
  }
  if (e->gin_buf != e->gin_in) free(e->gin_buf);
  if (e->nodes != e->nodes_in) free(e->nodes);
  if (e->heap != e->heap_in) free(e->heap);
  while (e->chunks) {
    slot_chunk *c = e->chunks;
    e->chunks = c->next;
    free(c);
  }
  for (int i = 0; i < e->ncap; i++) {
    mt_node_release(e->cap_node ? e->cap_node[i] : NULL);
    mt_tensor_release(e->captured ? e->captured[i] : NULL);
  }
  free(e->cap_node);
  free(e->cap_nr);
  free(e->captured);
  mt_grad_mode = e->saved_grad_mode;
#ifdef MT_ASAN_BUILD
  free(e); /* every engine a malloc of its own, so that a use after free is caught */
#else
  mt_engine *old = __atomic_exchange_n(&spare_engine, e, __ATOMIC_RELEASE);
  free(old);
#endif
}

mt_tensor *mt_engine_captured(mt_engine *e, int i) {
  if (!e || i < 0 || i >= e->ncap) return NULL;
  return mt_tensor_retain(e->captured[i]);
}

mt_status mt_engine_set_grad(mt_engine *e, int i, mt_tensor *g) {
  mt_node *n = e->cur;
  if (!n) return mt_error(MT_ESTATE, "backward: no event to answer");
  mt_tensor **arr;
  int count;
  if (e->st == ST_POST_DONE) { arr = e->gin; count = n->nin; }
  else { arr = n->buf; count = n->nout; }
  if (i < 0 || i >= count) return mt_error(MT_ERANGE, "backward: gradient %d of %d", i, count);
  mt_tensor_retain(g);
  mt_tensor_release(arr[i]);
  arr[i] = g;
  return MT_OK;
}

mt_status mt_engine_set_input_grads(mt_engine *e, mt_tensor **grads, int n) {
  mt_node *d = e->cur;
  if (!d || e->st != ST_LUA_DONE) return mt_error(MT_ESTATE, "backward: no Lua backward to answer");
  if (n != d->nin)
    return mt_error(MT_EINVAL, "backward: function %s returned an incorrect number of gradients (expected %d, got %d)",
                    mt_node_name(d), d->nin, n);
  for (int k = 0; k < n; k++) {
    mt_tensor_release(e->gin[k]);
    e->gin[k] = mt_tensor_retain(grads[k]);
  }
  return MT_OK;
}

/* Can a leaf's first gradient g become its .grad without a copy, as PyTorch's AccumulateGrad takes
 * it? Only when nothing else can see it: the gradient slot holds the only reference to g and to its
 * storage (no view of it, no saved copy, no Lua handle, no other slot), it is plain (no autograd of
 * its own), dense and laid out as the leaf is (both contiguous), in memory moontorch allocated. A
 * clone otherwise. */
static bool stealable(const mt_tensor *g, const mt_tensor *v) {
  if (__atomic_load_n(&g->_refcount, __ATOMIC_ACQUIRE) != 1) return false;
  const mt_storage *s = g->_storage;
  if (__atomic_load_n(&s->_refcount, __ATOMIC_ACQUIRE) != 1) return false;
  if (s->_flags & (MT_STORAGE_EXTERNAL | MT_STORAGE_MMAP)) return false;
  if (g->_autograd || (g->_flags & (MT_TENSOR_REQUIRES_GRAD | MT_TENSOR_WRAPPED_NUMBER))) return false;
  if (!(g->_flags & MT_TENSOR_CONTIGUOUS) || !(v->_flags & MT_TENSOR_CONTIGUOUS)) return false;
  if (g->_ndim != v->_ndim || g->_device_type != v->_device_type || g->_device_index != v->_device_index) return false;
  return memcmp(g->_sizes, v->_sizes, sizeof(int64_t) * (size_t)g->_ndim) == 0;
}

/* A leaf's gradient arrives: accumulate it into .grad (PyTorch's AccumulateGrad). */
static mt_status accumulate_grad(mt_engine *e, mt_node *n, mt_tensor *g) {
  mt_tensor *v = n->variable;
  if (!v || !g) return MT_OK;
  mt_meta *m = mt_meta_get(v);
  if (!m) return oom();
  if (g->_dtype != v->_dtype) {
    /* a gradient arrives in the leaf's own dtype (an op with a dtype= argument can differ) */
    mt_tensor *c;
    MT_TRY(mt_to(g, v->_dtype, NULL, 0, &c));
    mt_status s = accumulate_grad(e, n, c);
    mt_tensor_release(c);
    return s;
  }
  if (!m->grad) {
    if (e->create_graph || stealable(g, v)) {
      /* under create_graph the graph's own tensor; else one that nobody but this slot holds */
      m->grad = mt_tensor_retain(g);
    } else {
      /* a gradient of its own: detached, and not shared with anyone else */
      mt_tensor *c;
      MT_TRY(mt_clone(g, &c));
      m->grad = c;
    }
    return MT_OK;
  }
  if (e->create_graph) {
    mt_tensor *sum;
    MT_TRY(mt_binary(MT_OP_ADD, m->grad, g, NULL, &sum));
    mt_tensor_release(m->grad);
    m->grad = sum;
    return MT_OK;
  }
  int mode = mt_grad_mode;
  mt_grad_mode = 0;
  mt_status s = mt_binary(MT_OP_ADD, m->grad, g, m->grad, NULL);
  mt_grad_mode = mode;
  return s;
}

/* Hand the node's input gradients to the next nodes, then retire the node. */
static mt_status propagate(mt_engine *e, mt_node *n) {
  for (int k = 0; k < n->nin; k++) {
    mt_node *c = n->next[k].node;
    mt_tensor *g = e->gin ? e->gin[k] : NULL;
    if (!c) continue;
    if (g) MT_TRY(accumulate_into(&c->buf[n->next[k].input_nr], g));
    if (--c->deps == 0 && c->heap_pos != -2) {
      c->heap_pos = -2;
      heap_push(e, c);
    }
  }
  if (e->gin) {
    for (int k = 0; k < n->nin; k++) mt_tensor_release(e->gin[k]);
    e->gin = NULL;
  }
  for (int k = 0; k < n->nout; k++) {
    mt_tensor_release(n->buf[k]);
    n->buf[k] = NULL;
  }
  if (!e->retain_graph && (n->flags & NODE_HAS_SAVED)) {
    mt_saved *sv = NODE_DATA(n, mt_saved);
    for (int k = 0; k < n->kind->nsaved; k++) {
      mt_tensor_release(sv[k].t);
      sv[k].t = NULL;
    }
    n->flags |= NODE_RELEASED;
  }
  e->cur = NULL;
  return MT_OK;
}

static void set_event(mt_engine_event *ev, int kind, mt_node *n, mt_tensor **grads, int count, mt_tensor **gin,
                      int count_in) {
  ev->kind = kind;
  ev->node = n;
  ev->grads = grads;
  ev->count = count;
  ev->grads_in = gin;
  ev->count_in = count_in;
}

/* Run the C backward of n into e->gin. */
static mt_status run_c_backward(mt_engine *e, mt_node *n) {
  mt_backward_fn bw = n->kind->backward;
  if (!bw) return mt_error(MT_ENOTIMPL, "backward: %s has no backward", mt_node_name(n));
  mt_grad_mode = e->create_graph;
  mt_status s = bw(n, n->buf, e->gin);
  mt_grad_mode = e->saved_grad_mode;
  if (s) return s;
  if (mt_is_anomaly_enabled()) {
    for (int k = 0; k < n->nin; k++)
      if (has_nan(e->gin[k]))
        return mt_error(MT_ESTATE, "backward: Function '%s' returned nan values in its %dth output. [anomaly:%lld]",
                        mt_node_name(n), k, (long long)n->anomaly_id);
  }
  return MT_OK;
}

mt_status mt_engine_run(mt_engine *e, mt_engine_event *ev) {
  mt_status s;
  if (e != active_engine)
    return mt_error(MT_ESTATE, "backward: a backward started inside this one (in a hook or a Function's backward) "
                               "has not finished: a coroutine left it suspended");
  for (;;) {
    mt_node *n = e->cur;
    if (!n) {
      if (e->nheap == 0) {
        set_event(ev, MT_EV_DONE, NULL, NULL, 0, NULL, 0);
        return MT_OK;
      }
      n = e->cur = heap_pop(e);
      e->st = ST_POP;
      /* autograd.grad: capture what arrives for a target */
      for (int i = 0; i < e->ncap; i++)
        if (e->cap_node[i] == n) {
          mt_tensor_release(e->captured[i]);
          e->captured[i] = mt_tensor_retain(n->buf[e->cap_nr[i]]);
        }
      if (n->flags & NODE_PRE_HOOK) {
        e->st = ST_PRE_DONE;
        set_event(ev, MT_EV_PRE_HOOK, n, n->buf, n->nout, NULL, 0);
        return MT_OK;
      }
      e->st = ST_PRE_DONE;
    }
    if (e->st == ST_PRE_DONE) {
      if (n->nin > e->gin_cap) {
        mt_tensor **g = malloc(sizeof *g * (size_t)n->nin);
        if (!g) return oom();
        if (e->gin_buf != e->gin_in) free(e->gin_buf);
        e->gin_buf = g;
        e->gin_cap = n->nin;
      }
      e->gin = e->gin_buf;
      for (int k = 0; k < n->nin; k++) e->gin[k] = NULL;
      if (n->kind == &mt_accumulate_grad_kind) {
        mt_meta *m = n->variable ? n->variable->_autograd : NULL;
        if (m && (m->flags & META_HAS_HOOKS)) {
          e->st = ST_HOOK_DONE;
          set_event(ev, MT_EV_TENSOR_HOOK, n, n->buf, 1, NULL, 0);
          return MT_OK;
        }
        e->st = ST_HOOK_DONE;
      } else if (n->kind == &mt_lua_function_kind) {
        e->st = ST_LUA_DONE;
        set_event(ev, MT_EV_LUA_BACKWARD, n, n->buf, n->nout, e->gin, n->nin);
        return MT_OK;
      } else {
        /* the output's own tensor hooks and retain_grad are pre hooks of its grad_fn (Lua) */
        if ((s = run_c_backward(e, n))) return s;
        e->st = ST_LUA_DONE;
      }
    }
    if (e->st == ST_HOOK_DONE) {
      /* AccumulateGrad: into .grad unless autograd.grad is capturing */
      if (e->ncap == 0 && (s = accumulate_grad(e, n, n->buf[0]))) return s;
      e->st = ST_LUA_DONE;
    }
    if (e->st == ST_LUA_DONE) {
      if (n->flags & NODE_POST_HOOK) {
        e->st = ST_POST_DONE;
        set_event(ev, MT_EV_POST_HOOK, n, e->gin, n->nin, n->buf, n->nout);
        return MT_OK;
      }
      e->st = ST_POST_DONE;
    }
    if ((s = propagate(e, n))) return s;
  }
}

mt_status mt_backward(mt_tensor *root, mt_tensor *grad, int retain_graph, int create_graph) {
  mt_engine *e;
  mt_tensor *roots[1] = {root}, *grads[1] = {grad};
  MT_TRY(mt_engine_new(roots, grads, 1, retain_graph, create_graph, NULL, 0, 0, &e));
  mt_engine_event ev;
  mt_status s;
  while ((s = mt_engine_run(e, &ev)) == MT_OK && ev.kind != MT_EV_DONE) {
    s = mt_error(MT_ESTATE, "backward: the graph has Lua hooks or functions; run it from Lua");
    break;
  }
  mt_engine_free(e);
  return s;
}
