/* index.c -- autograd for indexing (core/ops/index.c): cat, stack, index_select, gather,
 * masked_fill, masked_select, the writes at indices (scatter, index_add, index_copy_, index_fill_,
 * masked_scatter_, index_put_), advanced indexing, diag, tril/triu. Index tensors kept for a
 * backward are 0-based int64. */
#include "formula.h"

/* a result `r` (a new reference) handed out once `s` (the recording's status) succeeded */
static mt_status give_recorded(mt_tensor *r, mt_status s, mt_tensor **result) {
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* a node of `kind` over inputs in[0..nin), NULL (nothing recorded) when the result is not float */
static mt_status make(const mt_node_kind *kind, mt_tensor **in, int nin, const mt_tensor *out, mt_node **n) {
  *n = NULL;
  if (!mt_is_float(out->_dtype)) return MT_OK;
  return mt_node_make(kind, in, nin, 1, n);
}

/* an index tensor 0-based as int64 (a new reference) */
static mt_status index0(mt_tensor *index, int64_t base, mt_tensor **out) {
  mt_tensor *i64 = NULL;
  mt_status s = MT_NOGRAD(mt_to(index, MT_INT64, NULL, 1, &i64));
  if (s == MT_OK && base) {
    s = MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i64, (double)base, 1, 0, NULL, out));
    mt_tensor_release(i64);
    return s;
  }
  if (s == MT_OK) *out = i64;
  return s;
}
static int wrap0(int dim, const mt_tensor *a) { return dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim; }

/* ---------------------------------------------------------------- cat, stack */
typedef struct cat_node {
  mt_saved sizes; /* each input's size along dim (an int64 tensor on the CPU) */
  int32_t dim;
} cat_node;
MT_NODE_DATA_FITS(cat_node);

/* each input gets its part of the gradient along dim */
static mt_status cat_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  cat_node *d = NODE_DATA(n, cat_node);
  mt_tensor *sizes;
  MT_TRY(mt_node_saved(n, &d->sizes, &sizes));
  const int64_t *sz = (const int64_t *)sizes->_data;
  int64_t start = 0;
  mt_status s = MT_OK;
  for (int k = 0; k < n->nin && s == MT_OK; k++) {
    if (mt_node_wants(n, k)) s = mt_narrow(g, d->dim, start, sz[k], &gin[k]);
    start += sz[k];
  }
  mt_tensor_release(sizes);
  return s;
}
static const mt_node_kind cat_kind = {.name = "CatBackward0", .backward = cat_backward, .nsaved = 1};

static mt_status grad_cat(mt_tensor **ts, int count, int dim, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "cat"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_cat(ts, count, dim, NULL, &r)));
  mt_node *n;
  mt_status s = make(&cat_kind, ts, count, r, &n);
  if (n) {
    cat_node *d = NODE_DATA(n, cat_node);
    d->dim = dim < 0 ? dim + r->_ndim : dim;
    int64_t len = count;
    mt_tensor *sizes;
    s = mt_tensor_empty(&len, 1, MT_INT64, NULL, &sizes); /* sizes: read on the CPU */
    if (s == MT_OK) {
      for (int i = 0; i < count; i++) ((int64_t *)sizes->_data)[i] = ts[i]->_ndim ? ts[i]->_sizes[d->dim] : 0;
      mt_node_save(n, &d->sizes, sizes);
      mt_tensor_release(sizes);
      s = mt_node_attach_new(n, r);
    } else {
      mt_node_release(n);
    }
  }
  return give_recorded(r, s, result);
}

typedef struct stack_node {
  int32_t dim;
} stack_node;
MT_NODE_DATA_FITS(stack_node);

/* input k gets the slice k */
static mt_status stack_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  int dim = NODE_DATA(n, stack_node)->dim;
  mt_status s = MT_OK;
  for (int k = 0; k < n->nin && s == MT_OK; k++)
    if (mt_node_wants(n, k)) s = mt_select(g, dim, k, &gin[k]);
  return s;
}
static const mt_node_kind stack_kind = {.name = "StackBackward0", .backward = stack_backward};

static mt_status grad_stack(mt_tensor **ts, int count, int dim, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "stack"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_stack(ts, count, dim, NULL, &r)));
  mt_node *n;
  mt_status s = make(&stack_kind, ts, count, r, &n);
  if (n) {
    NODE_DATA(n, stack_node)->dim = dim < 0 ? dim + r->_ndim : dim;
    s = mt_node_attach_new(n, r);
  }
  return give_recorded(r, s, result);
}

/* ---------------------------------------------------------------- index_select, gather */
/* the gradient added back at the indices */
typedef struct indexed_node {
  mt_saved index;
  int32_t dim;
  mt_shape in;
} indexed_node;
MT_NODE_DATA_FITS(indexed_node);

static mt_status indexed_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin, int gather) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  indexed_node *d = NODE_DATA(n, indexed_node);
  mt_tensor *idx, *z;
  MT_TRY(mt_node_saved(n, &d->index, &idx));
  mt_device dev = mt_device_of(g);
  mt_status s = mt_tensor_full(d->in.sizes, d->in.ndim, g->_dtype, 0, &dev, &z);
  if (s == MT_OK) {
    s = gather ? mt_scatter(z, d->dim, idx, g, 0, 1, 0, NULL, &gin[0]) : mt_index_add(z, d->dim, idx, g, 1, 0, NULL, &gin[0]);
    mt_tensor_release(z);
  }
  mt_tensor_release(idx);
  return s;
}
static mt_status index_select_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  return indexed_backward(n, gout, gin, 0);
}
static mt_status gather_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  return indexed_backward(n, gout, gin, 1);
}
static const mt_node_kind index_select_kind = {
    .name = "IndexSelectBackward0", .backward = index_select_backward, .nsaved = 1};
static const mt_node_kind gather_kind = {.name = "GatherBackward0", .backward = gather_backward, .nsaved = 1};

static mt_status record_indexed(const mt_node_kind *kind, mt_tensor *a, int dim, mt_tensor *index, int64_t base,
                                mt_tensor *r) {
  mt_node *n;
  MT_TRY(make(kind, &a, 1, r, &n));
  if (!n) return MT_OK;
  indexed_node *d = NODE_DATA(n, indexed_node);
  d->dim = dim < 0 ? dim + a->_ndim : dim;
  mt_shape_of(&d->in, a);
  mt_tensor *i0 = NULL;
  mt_status s = index0(index, base, &i0);
  if (s) { mt_node_release(n); return s; }
  mt_node_save(n, &d->index, i0);
  mt_tensor_release(i0);
  return mt_node_attach_new(n, r);
}

static mt_status grad_index_select(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out,
                                   mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "index_select"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_index_select(a, dim, index, base, NULL, &r)));
  return give_recorded(r, record_indexed(&index_select_kind, a, dim, index, base, r), result);
}

static mt_status grad_gather(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out,
                             mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "gather"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_gather(a, dim, index, base, NULL, &r)));
  return give_recorded(r, record_indexed(&gather_kind, a, dim, index, base, r), result);
}

/* ---------------------------------------------------------------- masked_fill, masked_select */
/* masked_fill with a number: no gradient where the mask is set */
typedef struct masked_fill_node {
  mt_saved mask;
  mt_shape in;
} masked_fill_node;
MT_NODE_DATA_FITS(masked_fill_node);

static mt_status masked_fill_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  masked_fill_node *d = NODE_DATA(n, masked_fill_node);
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *m = saved(sc, n, &d->mask);
  mt_tensor *r = SUM_TO(m ? SCOPED(mt_masked_fill(g, m, 0, NULL, &r_)) : NULL, &d->in);
  if (LIVE(sc)) give(gin, 0, r);
  return scope_close(sc);
}
static const mt_node_kind masked_fill_kind = {
    .name = "MaskedFillBackward0", .backward = masked_fill_backward, .nsaved = 1};

static mt_status grad_masked_fill(mt_tensor *a, mt_tensor *mask, double value, mt_tensor *out, mt_tensor **result) {
  if (out == a) MT_TRY(mt_grad_check_inplace(a, "masked_fill_"));
  else MT_TRY(mt_grad_check_out(out, true, "masked_fill"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_masked_fill(a, mask, value, out, &r)));
  mt_node *n;
  mt_status s = make(&masked_fill_kind, &a, 1, r, &n);
  if (n) {
    masked_fill_node *d = NODE_DATA(n, masked_fill_node);
    mt_shape_of(&d->in, a);
    mt_node_save(n, &d->mask, mask);
    s = mt_node_attach_new(n, r);
  }
  if (s == MT_OK && out) { /* in place: out itself */
    mt_tensor_release(r);
    if (result) *result = mt_tensor_retain(out);
    return MT_OK;
  }
  return give_recorded(r, s, result);
}

/* masked_fill with a 0-dim tensor value: inputs self, value */
typedef struct masked_fill_tensor_node {
  mt_saved mask;
  mt_shape in, value;
} masked_fill_tensor_node;
MT_NODE_DATA_FITS(masked_fill_tensor_node);

static mt_status masked_fill_tensor_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  masked_fill_tensor_node *d = NODE_DATA(n, masked_fill_tensor_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *m = saved(sc, n, &d->mask);
  mt_tensor *kept = m ? SCOPED(mt_masked_fill(g, m, 0, NULL, &r_)) : NULL;
  if (mt_node_wants(n, 0)) {
    mt_tensor *ga = SUM_TO(kept, &d->in);
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (mt_node_wants(n, 1)) {
    mt_tensor *gv = SUM_DIMS(SUB(g, kept), NULL, 0, 0);
    gv = TO_DTYPE(RESHAPE_TO(gv, &d->value), d->value.dtype);
    if (LIVE(sc)) give(gin, 1, gv);
  }
  return scope_close(sc);
}
static const mt_node_kind masked_fill_tensor_kind = {
    .name = "MaskedFillBackward1", .backward = masked_fill_tensor_backward, .nsaved = 1};

typedef struct masked_select_node {
  mt_saved mask;
  mt_shape in, broadcast; /* the input's shape, and its broadcast with the mask's */
} masked_select_node;
MT_NODE_DATA_FITS(masked_select_node);

static mt_status masked_select_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  masked_select_node *d = NODE_DATA(n, masked_select_node);
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *m = saved(sc, n, &d->mask), *z = ZEROS_OF(g, &d->broadcast, g->_dtype);
  if (LIVE(sc)) {
    mt_status s = mt_masked_scatter_(z, m, g);
    if (s) S.s = s;
  }
  mt_tensor *r = SUM_TO(z, &d->in);
  if (LIVE(sc)) give(gin, 0, r);
  return scope_close(sc);
}
static const mt_node_kind masked_select_kind = {
    .name = "MaskedSelectBackward0", .backward = masked_select_backward, .nsaved = 1};

/* masked_scatter_: inputs self, src */
typedef struct masked_scatter_node {
  mt_saved mask;
  mt_shape src;
} masked_scatter_node;
MT_NODE_DATA_FITS(masked_scatter_node);

static mt_status masked_scatter_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  masked_scatter_node *d = NODE_DATA(n, masked_scatter_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *m = saved(sc, n, &d->mask);
  if (mt_node_wants(n, 0)) {
    mt_tensor *ga = m ? SCOPED(mt_masked_fill(g, m, 0, NULL, &r_)) : NULL;
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (mt_node_wants(n, 1)) {
    mt_tensor *sel = m ? SCOPED(mt_masked_select(g, m, &r_)) : NULL;
    int64_t total = 1;
    for (int i = 0; i < d->src.ndim; i++) total *= d->src.sizes[i];
    if (sel && sel->_numel < total) {
      int64_t rest = total - sel->_numel;
      sel = CAT2(sel, ZEROS(g, &rest, 1, g->_dtype), 0);
    }
    mt_tensor *gs = RESHAPE_TO(sel, &d->src);
    if (LIVE(sc)) give(gin, 1, gs);
  }
  return scope_close(sc);
}
static const mt_node_kind masked_scatter_kind = {
    .name = "MaskedScatterBackward0", .backward = masked_scatter_backward, .nsaved = 1};

/* ---------------------------------------------------------------- writes at indices */
/* in place on a (out == a) or out of place (out NULL) with recording: refuse leaves, views and out= */
static mt_status check_write(mt_tensor *a, mt_tensor *out, const char *op_, const char *op) {
  if (out == a) {
    MT_TRY(mt_grad_check_inplace(a, op_));
    return mt_grad_check_whole_write(a, op_);
  }
  return mt_grad_check_out(out, true, op);
}

/* scatter: self gets the gradient but where src (or the value) was written; src the gradient
 * gathered at the indices; scatter_add: self all of it */
enum { SCATTER_SRC, SCATTER_VALUE, SCATTER_ADD };
typedef struct scatter_node {
  mt_saved index;
  int32_t dim, how; /* SCATTER_* */
  mt_shape src;
} scatter_node;
MT_NODE_DATA_FITS(scatter_node);

static const char *const scatter_names_by_how[] = {
    [SCATTER_SRC] = "ScatterBackward0", [SCATTER_VALUE] = "ScatterBackward1", [SCATTER_ADD] = "ScatterAddBackward0"};
static const char *scatter_name_of(const mt_node *n) { return scatter_names_by_how[NODE_DATA(n, scatter_node)->how]; }
static const char *scatter_names(int i) { return i < 3 ? scatter_names_by_how[i] : NULL; }

static mt_status scatter_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  scatter_node *d = NODE_DATA(n, scatter_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *idx = saved(sc, n, &d->index);
  if (mt_node_wants(n, 0)) {
    mt_tensor *ga = d->how == SCATTER_ADD ? g : idx ? SCOPED(mt_scatter(g, d->dim, idx, NULL, 0, 0, 0, NULL, &r_)) : NULL;
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (n->nin > 1 && mt_node_wants(n, 1)) {
    mt_tensor *gs = PAD_TO(idx ? SCOPED(mt_gather(g, d->dim, idx, 0, NULL, &r_)) : NULL, &d->src);
    if (LIVE(sc)) give(gin, 1, gs);
  }
  return scope_close(sc);
}
static const mt_node_kind scatter_kind = {
    .name_of = scatter_name_of, .names = scatter_names, .backward = scatter_backward, .nsaved = 1};

static mt_status grad_scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double value, int reduce,
                              int64_t base, mt_tensor *out, mt_tensor **result) {
  const char *op = reduce == 1 && src ? "scatter_add" : "scatter";
  MT_TRY(check_write(a, out, reduce == 1 && src ? "scatter_add_" : "scatter_", op));
  if (reduce == 2 || (reduce == 1 && !src))
    return mt_error(MT_ENOTIMPL, "%s: scatter with reduce='%s' is not differentiable (in PyTorch neither)", op,
                    reduce == 2 ? "multiply" : "add");
  mt_tensor *r = NULL, *i0 = NULL;
  MT_TRY(MT_NOGRAD(mt_scatter(a, dim, index, src, value, reduce, base, out, &r)));
  mt_tensor *in[2] = {a, src};
  mt_node *n;
  mt_status s = make(&scatter_kind, in, src ? 2 : 1, r, &n);
  if (n && (s = index0(index, base, &i0)) != MT_OK) mt_node_release(n);
  else if (n) {
    scatter_node *d = NODE_DATA(n, scatter_node);
    d->dim = wrap0(dim, a);
    d->how = !src ? SCATTER_VALUE : reduce == 1 ? SCATTER_ADD : SCATTER_SRC;
    if (src) mt_shape_of(&d->src, src);
    mt_node_save(n, &d->index, i0);
    s = mt_node_attach_new(n, r);
  }
  mt_tensor_release(i0);
  return give_recorded(r, s, result);
}

/* index_add (alpha), index_copy_, index_fill_ along dim: self gets the gradient (but where
 * index_copy_ / index_fill_ wrote), src the gradient selected at the indices */
typedef struct index_write_node {
  mt_saved index;
  int32_t dim;
  double alpha; /* index_add */
  mt_shape src;
} index_write_node;
MT_NODE_DATA_FITS(index_write_node);

static mt_status index_write_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin, int adds) {
  scope S = {0}, *sc = &S;
  index_write_node *d = NODE_DATA(n, index_write_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *idx = saved(sc, n, &d->index);
  if (mt_node_wants(n, 0)) {
    mt_tensor *ga = g;
    if (!adds) {
      ga = SCOPED(mt_clone(g, &r_));
      if (LIVE(sc)) {
        mt_status s = mt_index_fill_(ga, d->dim, idx, 0, 0);
        if (s) S.s = s;
      }
    }
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (n->nin > 1 && mt_node_wants(n, 1)) {
    mt_tensor *gs = idx ? SCOPED(mt_index_select(g, d->dim, idx, 0, NULL, &r_)) : NULL;
    if (adds && d->alpha != 1) gs = MULS(gs, d->alpha);
    gs = RESHAPE_TO(gs, &d->src);
    if (LIVE(sc)) give(gin, 1, gs);
  }
  return scope_close(sc);
}
static mt_status index_add_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  return index_write_backward(n, gout, gin, 1);
}
static mt_status index_overwrite_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  return index_write_backward(n, gout, gin, 0);
}
static const mt_node_kind index_add_kind = {.name = "IndexAddBackward0", .backward = index_add_backward, .nsaved = 1};
static const mt_node_kind index_copy_kind = {
    .name = "IndexCopyBackward0", .backward = index_overwrite_backward, .nsaved = 1};
static const mt_node_kind index_fill_kind = {
    .name = "IndexFillBackward0", .backward = index_overwrite_backward, .nsaved = 1};

/* out: the result (a itself when in place); src NULL for index_fill_ */
static mt_status record_index_write(const mt_node_kind *kind, mt_tensor *a, int dim, mt_tensor *index, int64_t base,
                                    mt_tensor *src, double alpha, mt_tensor *out) {
  mt_tensor *in[2] = {a, src};
  mt_node *n;
  MT_TRY(make(kind, in, src ? 2 : 1, out, &n));
  if (!n) return MT_OK;
  mt_tensor *i0 = NULL;
  mt_status s = index0(index, base, &i0);
  if (s) { mt_node_release(n); return s; }
  index_write_node *d = NODE_DATA(n, index_write_node);
  d->dim = wrap0(dim, a);
  d->alpha = alpha;
  if (src) mt_shape_of(&d->src, src);
  mt_node_save(n, &d->index, i0);
  mt_tensor_release(i0);
  return mt_node_attach_new(n, out);
}

static mt_status grad_index_add(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha, int64_t base,
                                mt_tensor *out, mt_tensor **result) {
  MT_TRY(check_write(a, out, "index_add_", "index_add"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_index_add(a, dim, index, src, alpha, base, out, &r)));
  return give_recorded(r, record_index_write(&index_add_kind, a, dim, index, base, src, alpha, r), result);
}
static mt_status grad_index_copy_(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int64_t base) {
  MT_TRY(check_write(a, a, "index_copy_", "index_copy_"));
  MT_TRY(MT_NOGRAD(mt_index_copy_(a, dim, index, src, base)));
  return record_index_write(&index_copy_kind, a, dim, index, base, src, 1, a);
}
static mt_status grad_index_fill_(mt_tensor *a, int dim, mt_tensor *index, double value, int64_t base) {
  MT_TRY(check_write(a, a, "index_fill_", "index_fill_"));
  MT_TRY(MT_NOGRAD(mt_index_fill_(a, dim, index, value, base)));
  return record_index_write(&index_fill_kind, a, dim, index, base, NULL, 0, a);
}

static mt_status grad_masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out,
                                         mt_tensor **result) {
  MT_TRY(check_write(a, out, "masked_fill_", "masked_fill"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_masked_fill_tensor(a, mask, value, out, &r)));
  mt_tensor *in[2] = {a, value};
  mt_node *n;
  mt_status s = make(&masked_fill_tensor_kind, in, 2, r, &n);
  if (n) {
    masked_fill_tensor_node *d = NODE_DATA(n, masked_fill_tensor_node);
    mt_shape_of(&d->in, a);
    mt_shape_of(&d->value, value);
    mt_node_save(n, &d->mask, mask);
    s = mt_node_attach_new(n, r);
  }
  return give_recorded(r, s, result);
}

static mt_status grad_masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_masked_select(a, mask, &r)));
  int64_t bs[MT_MAX_DIMS];
  int bn;
  mt_node *n = NULL;
  mt_status s = mt_broadcast_shapes(a->_sizes, a->_ndim, mask->_sizes, mask->_ndim, bs, &bn);
  if (s == MT_OK) s = make(&masked_select_kind, &a, 1, r, &n);
  if (n) {
    masked_select_node *d = NODE_DATA(n, masked_select_node);
    mt_shape_of(&d->in, a);
    d->broadcast.ndim = bn;
    d->broadcast.dtype = a->_dtype;
    memcpy(d->broadcast.sizes, bs, sizeof(int64_t) * (size_t)bn);
    mt_node_save(n, &d->mask, mask);
    s = mt_node_attach_new(n, r);
  }
  return give_recorded(r, s, result);
}

static mt_status grad_masked_scatter_(mt_tensor *a, mt_tensor *mask, mt_tensor *src) {
  MT_TRY(check_write(a, a, "masked_scatter_", "masked_scatter_"));
  MT_TRY(MT_NOGRAD(mt_masked_scatter_(a, mask, src)));
  mt_tensor *in[2] = {a, src};
  mt_node *n;
  MT_TRY(make(&masked_scatter_kind, in, 2, a, &n));
  if (!n) return MT_OK;
  masked_scatter_node *d = NODE_DATA(n, masked_scatter_node);
  mt_shape_of(&d->src, src);
  mt_node_save(n, &d->mask, mask);
  return mt_node_attach_new(n, a);
}

/* ---------------------------------------------------------------- advanced indexing, diag */
/* a[indices...] and diag of a matrix: the same indexing of a's positions tells the backward where
 * each element came from; diag of a vector: the gradient's diagonal */
typedef struct positions_node {
  mt_saved pos; /* each output element's flat position in the input (not for diag of a vector) */
  mt_shape in;
  int64_t diagonal; /* diag */
  int32_t of_vector; /* diag of a vector */
} positions_node;
MT_NODE_DATA_FITS(positions_node);

static mt_status positions_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  positions_node *d = NODE_DATA(n, positions_node);
  mt_tensor *g = gout[0], *r;
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  if (d->of_vector)
    r = SCOPED(mt_diagonal(g, d->diagonal, 0, 1, &r_));
  else
    r = ADD_AT_POSITIONS(g, saved(sc, n, &d->pos), &d->in);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}
static const mt_node_kind index_kind = {.name = "IndexBackward0", .backward = positions_backward, .nsaved = 1};
static const mt_node_kind diag_kind = {.name = "DiagBackward0", .backward = positions_backward, .nsaved = 1};

static mt_status record_positions(const mt_node_kind *kind, mt_tensor *a, mt_tensor *pos, int64_t diagonal,
                                  mt_tensor *out) {
  mt_node *n;
  MT_TRY(make(kind, &a, 1, out, &n));
  if (!n) return MT_OK;
  positions_node *d = NODE_DATA(n, positions_node);
  mt_shape_of(&d->in, a);
  d->diagonal = diagonal;
  d->of_vector = pos == NULL;
  if (pos) mt_node_save(n, &d->pos, pos);
  return mt_node_attach_new(n, out);
}

static mt_status grad_index(mt_tensor *a, mt_tensor **indices, int n, int64_t base, mt_tensor **result) {
  mt_tensor *pos = NULL, *p = NULL, *r = NULL;
  MT_TRY(MT_NOGRAD(mt_index(a, indices, n, base, &r)));
  mt_status s = mt_grad_positions(a, &pos);
  if (s == MT_OK) s = MT_NOGRAD(mt_index(pos, indices, n, base, &p));
  if (s == MT_OK) s = record_positions(&index_kind, a, p, 0, r);
  mt_tensor_release(pos);
  mt_tensor_release(p);
  return give_recorded(r, s, result);
}

static mt_status grad_diag(mt_tensor *a, int64_t diagonal, mt_tensor **result) {
  mt_tensor *pos = NULL, *p = NULL, *r = NULL;
  MT_TRY(MT_NOGRAD(mt_diag(a, diagonal, &r)));
  mt_status s = MT_OK;
  if (a->_ndim == 2) {
    s = mt_grad_positions(a, &pos);
    if (s == MT_OK) s = MT_NOGRAD(mt_diag(pos, diagonal, &p));
  }
  if (s == MT_OK) s = record_positions(&diag_kind, a, p, diagonal, r);
  mt_tensor_release(pos);
  mt_tensor_release(p);
  return give_recorded(r, s, result);
}

/* index_put_: inputs self (its old value), values */
typedef struct index_put_node {
  mt_saved pos; /* the flat positions in self of the indexed elements (the indexing result's shape) */
  int32_t accumulate;
  mt_shape values;
} index_put_node;
MT_NODE_DATA_FITS(index_put_node);

static mt_status index_put_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  index_put_node *d = NODE_DATA(n, index_put_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *p0 = saved(sc, n, &d->pos), *pos = FLATTEN(p0);
  if (mt_node_wants(n, 0)) {
    mt_tensor *ga = g;
    if (!d->accumulate) { /* the overwritten elements get none */
      mt_tensor *gf = SCOPED(mt_clone(FLATTEN(g), &r_)); /* a whole tensor of its own (not a view) */
      if (LIVE(sc)) {
        mt_status s = mt_index_fill_(gf, 0, pos, 0, 0);
        if (s) S.s = s;
      }
      ga = RESHAPE(gf, g->_sizes, g->_ndim);
    }
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (mt_node_wants(n, 1)) {
    mt_tensor *fg = FLATTEN(g);
    mt_tensor *gv = fg && pos ? SCOPED(mt_index_select(fg, 0, pos, 0, NULL, &r_)) : NULL;
    gv = p0 ? RESHAPE(gv, p0->_sizes, p0->_ndim) : NULL;
    gv = SUM_TO(gv, &d->values);
    if (LIVE(sc)) give(gin, 1, gv);
  }
  return scope_close(sc);
}
static const mt_node_kind index_put_kind = {.name = "IndexPutBackward0", .backward = index_put_backward, .nsaved = 1};

static mt_status grad_index_put_(mt_tensor *a, mt_tensor **indices, int n, mt_tensor *values, int accumulate,
                                 int64_t base) {
  MT_TRY(check_write(a, a, "index_put_", "index_put_"));
  mt_tensor *pos = NULL, *p = NULL;
  mt_status s = mt_grad_positions(a, &pos);
  if (s == MT_OK) s = MT_NOGRAD(mt_index(pos, indices, n, base, &p));
  if (s == MT_OK) s = MT_NOGRAD(mt_index_put_(a, indices, n, values, accumulate, base));
  if (s == MT_OK) {
    mt_tensor *in[2] = {a, values};
    mt_node *nd;
    s = make(&index_put_kind, in, 2, a, &nd);
    if (nd) {
      index_put_node *d = NODE_DATA(nd, index_put_node);
      d->accumulate = accumulate;
      mt_shape_of(&d->values, values);
      mt_node_save(nd, &d->pos, p);
      s = mt_node_attach_new(nd, a);
    }
  }
  mt_tensor_release(pos);
  mt_tensor_release(p);
  return s;
}

/* ---------------------------------------------------------------- tril, triu */
typedef struct triangle_node {
  int64_t diagonal;
  int32_t upper;
} triangle_node;
MT_NODE_DATA_FITS(triangle_node);

static const char *triangle_name_of(const mt_node *n) {
  return NODE_DATA(n, triangle_node)->upper ? "TriuBackward0" : "TrilBackward0";
}
static const char *triangle_names(int i) { return i == 0 ? "TrilBackward0" : i == 1 ? "TriuBackward0" : NULL; }

static mt_status triangle_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const triangle_node *d = NODE_DATA(n, triangle_node);
  return mt_triangle(g, d->diagonal, d->upper, NULL, &gin[0]);
}
static const mt_node_kind triangle_kind = {
    .name_of = triangle_name_of, .names = triangle_names, .backward = triangle_backward};

static mt_status grad_triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out, mt_tensor **result) {
  MT_TRY(check_write(a, out, upper ? "triu_" : "tril_", upper ? "triu" : "tril"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_triangle(a, diagonal, upper, out, &r)));
  mt_node *n;
  mt_status s = make(&triangle_kind, &a, 1, r, &n);
  if (n) {
    *NODE_DATA(n, triangle_node) = (triangle_node){diagonal, upper};
    s = mt_node_attach_new(n, r);
  }
  return give_recorded(r, s, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_index_kinds[] = {
    &cat_kind,       &stack_kind,    &index_select_kind, &gather_kind,     &masked_fill_kind,
    &masked_fill_tensor_kind, &masked_select_kind, &masked_scatter_kind, &scatter_kind, &index_add_kind,
    &index_copy_kind, &index_fill_kind, &index_kind, &diag_kind, &index_put_kind, &triangle_kind, NULL};

void mt_grad_register_index(mt_autograd_ops *t) {
  t->cat = grad_cat;
  t->stack = grad_stack;
  t->index_select = grad_index_select;
  t->gather = grad_gather;
  t->masked_fill = grad_masked_fill;
  t->scatter = grad_scatter;
  t->index_add = grad_index_add;
  t->index_copy_ = grad_index_copy_;
  t->index_fill_ = grad_index_fill_;
  t->masked_fill_tensor = grad_masked_fill_tensor;
  t->masked_select = grad_masked_select;
  t->masked_scatter_ = grad_masked_scatter_;
  t->index = grad_index;
  t->index_put_ = grad_index_put_;
  t->diag = grad_diag;
  t->triangle = grad_triangle;
}
