/* index.c -- indexing and creation ops: cat, stack, index_select, gather, scatter, index_add,
 * index_fill_, index_copy_, masked_fill/select/scatter, nonzero, advanced indexing (index,
 * index_put_), arange, linspace, logspace, eye, diag, tril/triu, one_hot.
 *
 * Index tensors are first "normalised": copied into a contiguous int64 tensor of 0-based
 * positions, every value checked against the size it indexes (errors name the value in the
 * caller's base). The kernels then never check and never fail, so in-place ops never leave a
 * half-written tensor behind.
 *
 * Most kernels run on one walker: a row-major walk over an iteration shape with up to four
 * operands (byte strides), calling a row function for the last dimension. The indexed ops use
 * three operands: the plain one (walked with its strides), the indexed one (walked with its
 * strides except along `dim`, where the normalised index value times its stride is added) and
 * the index itself. */
#include "../grad/grad.h"

#include <stdio.h>
#include <stdlib.h>

#define CHECK(t, op, arg) MT_TRY(mt_check_tensor((t), (op), (arg)))

/* ---------------------------------------------------------------- small helpers */
static void encode_value(int dtype, double value, char *bytes) {
  switch (dtype) {
#define X(DT, T, L, S) case DT: { double v = value; T x_ = S; memcpy(bytes, &x_, sizeof x_); } break;
    MT_FOREACH_DTYPE(X)
#undef X
  }
}

static double load_value(int dtype, const char *p) {
  switch (dtype) {
#define X(DT, T, L, S) case DT: { T x = *(const T *)p; return (double)(L); }
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return 0;
}

static bool is_nonzero(int dtype, const char *p) {
  switch (dtype) {
#define X(DT, T, L, S) case DT: { T x = *(const T *)p; return (L) != 0; }
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return false;
}

static bool same_shape(const mt_tensor *a, const mt_tensor *b) {
  if (a->_ndim != b->_ndim) return false;
  for (int i = 0; i < a->_ndim; i++)
    if (a->_sizes[i] != b->_sizes[i]) return false;
  return true;
}

static bool is_index_dtype(int dt) { return dt == MT_INT64 || dt == MT_INT32; }

/* Hand back a freshly computed result `r`: into `out` (resized, same dtype) when given, else as
 * the result. Consumes r. */
static mt_status deliver(mt_tensor *r, mt_tensor *out, mt_tensor **result, const char *op) {
  if (!out) return mt_give(r, result);
  if (out == r) return mt_give(r, result);
  mt_status s = mt_prepare_out(out, r->_sizes, r->_ndim, r->_dtype, op);
  if (s == MT_OK) s = mt_copy_(out, r);
  mt_tensor_release(r);
  if (s) return s;
  if (result) *result = mt_tensor_retain(out);
  return MT_OK;
}

/* A head over t with a 0-dim tensor seen as 1-D of size 1 (the indexed ops treat a scalar so). */
static mt_status as_1d_if_scalar(mt_tensor *t, mt_tensor **out) {
  if (t->_ndim > 0) { *out = mt_tensor_retain(t); return MT_OK; }
  int64_t one = 1, st = 1;
  return mt_new_view(t, &one, &st, 1, t->_offset, out);
}

/* Copy `index` (int64 or int32, any strides) into a contiguous int64 tensor of 0-based positions
 * along a dimension of `size`, checking every value. allow_neg: -1 is the last (advanced
 * indexing, index_fill_). `dim` is 0-based; messages show it, and the values, in base `base`. */
static mt_status normalize_index(mt_tensor *index, int64_t size, int64_t base, int allow_neg, int dim, const char *op,
                                 mt_tensor **out) {
  mt_tensor *r;
  MT_TRY(mt_new(index->_sizes, index->_ndim, MT_INT64, op, &r));
  mt_status s = mt_copy_(r, index);
  if (s) { mt_tensor_release(r); return s; }
  int64_t *p = (int64_t *)r->_data;
  for (int64_t i = 0, n = r->_numel; i < n; i++) {
    int64_t v = p[i], pos;
    if (allow_neg && v < 0) pos = v + size;
    else pos = v - base;
    if (pos < 0 || pos >= size || (allow_neg && v >= 0 && v < base)) {
      mt_tensor_release(r);
      return mt_error(MT_ERANGE, "%s: index %lld is out of bounds for dimension %lld with size %lld", op, (long long)v,
                      (long long)(dim + base), (long long)size);
    }
    p[i] = pos;
  }
  *out = r;
  return MT_OK;
}

/* ---------------------------------------------------------------- the walker */
#define WALK_MAX_OPS 4
typedef struct {
  int nd; /* >= 1 */
  int nops;
  int64_t sizes[MT_MAX_DIMS];
  char *base[WALK_MAX_OPS];
  int64_t st[WALK_MAX_OPS][MT_MAX_DIMS]; /* bytes */
  int64_t numel;
} walk;

/* p[k]: operand k at the row's first element; st[k]: its stride along the last dim; coord: the
 * row's coordinates (coord[nd-1] is 0). */
typedef void (*walk_fn)(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord);

static void walk_init(walk *w, const int64_t *sizes, int nd) {
  memset(w, 0, sizeof *w);
  if (nd == 0) {
    w->nd = 1;
    w->sizes[0] = 1;
  } else {
    w->nd = nd;
    for (int i = 0; i < nd; i++) w->sizes[i] = sizes[i];
  }
  w->numel = 1;
  for (int i = 0; i < w->nd; i++) w->numel *= w->sizes[i];
}

/* Add an operand: its data and element strides for the walk's dims (NULL: all 0). */
static int walk_add(walk *w, char *data, const int64_t *strides, size_t item) {
  int k = w->nops++;
  w->base[k] = data;
  for (int i = 0; i < w->nd; i++) w->st[k][i] = strides ? strides[i] * (int64_t)item : 0;
  return k;
}

/* Add a tensor whose dims align with the walk's (same ndim, or a scalar on a 1-D walk). */
static int walk_add_tensor(walk *w, const mt_tensor *t) {
  int64_t zero[MT_MAX_DIMS] = {0};
  return walk_add(w, t->_data, t->_ndim ? t->_strides : zero, mt_itemsize(t->_dtype));
}

static void walk_rows(const walk *w, walk_fn fn, void *ctx, int64_t r0, int64_t r1) {
  if (r0 >= r1) return; /* nothing to walk (also: an empty tensor has a zero size to divide by) */
  int nd = w->nd, nops = w->nops;
  int64_t rowlen = w->sizes[nd - 1];
  int64_t coord[MT_MAX_DIMS] = {0};
  int64_t rem = r0;
  for (int d = nd - 2; d >= 0; d--) {
    coord[d] = rem % w->sizes[d];
    rem /= w->sizes[d];
  }
  char *p[WALK_MAX_OPS], *call[WALK_MAX_OPS];
  int64_t last[WALK_MAX_OPS];
  for (int k = 0; k < nops; k++) {
    p[k] = w->base[k];
    for (int d = 0; d < nd - 1; d++) p[k] += coord[d] * w->st[k][d];
    last[k] = w->st[k][nd - 1];
  }
  for (int64_t r = r0; r < r1; r++) {
    for (int k = 0; k < nops; k++) call[k] = p[k];
    fn(ctx, call, last, rowlen, coord);
    for (int d = nd - 2; d >= 0; d--) {
      coord[d]++;
      for (int k = 0; k < nops; k++) p[k] += w->st[k][d];
      if (coord[d] < w->sizes[d]) break;
      for (int k = 0; k < nops; k++) p[k] -= w->st[k][d] * w->sizes[d];
      coord[d] = 0;
    }
  }
}

typedef struct {
  const walk *w;
  walk_fn fn;
  void *ctx;
  int64_t block;
} walk_job;

static void walk_job_run(void *p, int64_t b, int64_t e) {
  walk_job *j = p;
  walk_rows(j->w, j->fn, j->ctx, b * j->block, e * j->block);
}

/* Run over every row. block: rows that must stay on one thread together (0: run serially). */
static void walk_run(const walk *w, walk_fn fn, void *ctx, int64_t block) {
  if (w->numel == 0) return;
  int64_t rowlen = w->sizes[w->nd - 1];
  int64_t nrows = w->numel / rowlen;
  if (block <= 0 || w->numel < 2 * MT_GRAIN || nrows % block != 0) {
    walk_rows(w, fn, ctx, 0, nrows);
    return;
  }
  walk_job j = {w, fn, ctx, block};
  int64_t per = rowlen * block;
  int64_t grain = MT_GRAIN / per;
  if (grain < 1) grain = 1;
  mt_parallel_for(nrows / block, grain, walk_job_run, &j);
}

/* Rows that share writes when a walk writes through an index along `dim`: positions differing
 * only in dim may hit the same element, so all rows of one value of the dims before `dim` stay
 * together. */
static int64_t write_block(const walk *w, int dim) {
  if (dim == w->nd - 1) return 1;
  int64_t b = 1;
  for (int d = dim; d < w->nd - 1; d++) b *= w->sizes[d];
  return b;
}

/* ---------------------------------------------------------------- indexed row kernels */
enum { K_GET, K_PUT, K_FILL, K_ADD, K_MUL, K_ADDV, K_MULV };

typedef struct {
  int kind;
  int dtype;
  size_t item;
  int64_t dimstride; /* bytes: the indexed operand's stride along dim */
  double alpha;      /* K_ADD: scale of the source; K_ADDV/K_MULV: the value */
  char fill[8];      /* K_FILL: the value's bytes */
} ix_ctx;

/* Copy kinds move bytes; arithmetic kinds compute in the dtype's native type. */
#define DEF_ACC(DT, T, L, S)                                                                        \
  static void acc_row_##DT(const ix_ctx *c, char *pp, int64_t sp, char *pi, int64_t si, const char *px,  \
                           int64_t sx, int64_t n) {                                                  \
    T x;                                                                                            \
    typedef __typeof__(L) nat;                                                                      \
    /* the value goes through the dtype (as PyTorch converts a scalar to self's type); alpha     */ \
    /* scales in the native type                                                                */ \
    nat value, alpha = DT == MT_BOOL ? (nat)(c->alpha != 0) : (nat)c->alpha;                         \
    {                                                                                               \
      double v = c->alpha;                                                                          \
      x = S;                                                                                        \
      value = L;                                                                                    \
    }                                                                                               \
    for (int64_t k = 0; k < n; k++) {                                                               \
      T *d = (T *)(pi + k * si + *(const int64_t *)(px + k * sx) * c->dimstride);                  \
      x = *d;                                                                                       \
      nat a = L, b, v;                                                                              \
      switch (c->kind) {                                                                            \
        case K_ADD: x = *(const T *)(pp + k * sp); b = L; v = a + alpha * b; break;                 \
        case K_MUL: x = *(const T *)(pp + k * sp); b = L; v = a * b; break;                         \
        case K_ADDV: v = a + value; break;                                                          \
        default: v = a * value; break;                                                              \
      }                                                                                             \
      *d = S;                                                                                       \
    }                                                                                               \
  }
MT_FOREACH_DTYPE(DEF_ACC)
#undef DEF_ACC

typedef void (*acc_row_fn)(const ix_ctx *, char *, int64_t, char *, int64_t, const char *, int64_t, int64_t);
static acc_row_fn acc_row_for(int dt) {
  switch (dt) {
#define X(DT, T, L, S) case DT: return acc_row_##DT;
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return NULL;
}

#define COPY_ROWS(T)                                                                                \
  {                                                                                                 \
    const int64_t ds = c->dimstride;                                                                \
    switch (c->kind) {                                                                              \
      case K_GET:                                                                                   \
        for (int64_t k = 0; k < n; k++)                                                             \
          *(T *)(pp + k * sp) = *(const T *)(pi + k * si + *(const int64_t *)(px + k * sx) * ds);   \
        break;                                                                                      \
      case K_PUT:                                                                                   \
        for (int64_t k = 0; k < n; k++)                                                             \
          *(T *)(pi + k * si + *(const int64_t *)(px + k * sx) * ds) = *(const T *)(pp + k * sp);   \
        break;                                                                                      \
      default: {                                                                                    \
        T v;                                                                                        \
        memcpy(&v, c->fill, sizeof v);                                                              \
        for (int64_t k = 0; k < n; k++) *(T *)(pi + k * si + *(const int64_t *)(px + k * sx) * ds) = v; \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
  break;

static void ix_row(const ix_ctx *c, char *pp, int64_t sp, char *pi, int64_t si, const char *px, int64_t sx,
                   int64_t n) {
  if (c->kind >= K_ADD) {
    acc_row_for(c->dtype)(c, pp, sp, pi, si, px, sx, n);
    return;
  }
  switch (c->item) {
    case 1: COPY_ROWS(uint8_t)
    case 2: COPY_ROWS(uint16_t)
    case 4: COPY_ROWS(uint32_t)
    case 8: COPY_ROWS(uint64_t)
  }
}

/* walker adapter: p[0] plain, p[1] indexed, p[2] index */
static void ix_walk_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  (void)coord;
  ix_row(ctx, p[0], st[0], p[1], st[1], p[2], st[2], n);
}

/* Set up and run an indexed walk over `shape` (nd dims, >= 1).
 * plain: data + element strides over the walk (NULL data: none, for fills);
 * ind: the indexed tensor (its strides used for every dim but `dim`);
 * idx: normalised index data + element strides over the walk. */
static void ix_run(ix_ctx *c, const int64_t *shape, int nd, char *plain, const int64_t *plain_st, mt_tensor *ind,
                   int dim, const int64_t *idx, const int64_t *idx_st, int writes) {
  walk w;
  walk_init(&w, shape, nd);
  int64_t zero[MT_MAX_DIMS] = {0};
  int64_t ist[MT_MAX_DIMS] = {0};
  size_t item = mt_itemsize(ind->_dtype);
  static char dummy[8];
  walk_add(&w, plain ? plain : dummy, plain ? plain_st : zero, item);
  for (int i = 0; i < w.nd; i++) ist[i] = ind->_ndim ? ind->_strides[i] : 0;
  c->dimstride = ist[dim] * (int64_t)item;
  ist[dim] = 0;
  walk_add(&w, ind->_data, ist, item);
  walk_add(&w, (char *)idx, idx_st, sizeof(int64_t));
  c->item = item;
  c->dtype = ind->_dtype;
  walk_run(&w, ix_walk_row, c, writes ? write_block(&w, dim) : 1);
}

/* ---------------------------------------------------------------- cat, stack */
static mt_status pub_cat(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  if (!ts || n <= 0) return mt_error(MT_EINVAL, "cat: expected a non-empty list of Tensors");
  int ref = -1, dtype = -1;
  for (int i = 0; i < n; i++) {
    if (!ts[i]) return mt_error(MT_EINVAL, "cat: expected a tensor at position %d, got nothing", i);
    CHECK(ts[i], "cat", "tensors");
    if (ts[i]->_ndim == 0)
      return mt_error(MT_ESHAPE, "cat: zero-dimensional tensor (at position %d) cannot be concatenated", i);
    dtype = dtype < 0 ? ts[i]->_dtype : mt_promote_types(dtype, ts[i]->_dtype);
    /* 1-D empty tensors are skipped (PyTorch's legacy rule) */
    bool skip = ts[i]->_ndim == 1 && ts[i]->_sizes[0] == 0;
    if (!skip && ref < 0) ref = i;
  }
  const mt_tensor *r0 = ref >= 0 ? ts[ref] : ts[0];
  MT_TRY(mt_wrap_dim(dim, r0->_ndim, "cat", &dim));
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, r0->_sizes, sizeof sizes);
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    const mt_tensor *t = ts[i];
    if (t->_ndim == 1 && t->_sizes[0] == 0 && (ref < 0 || i != ref)) continue;
    if (t->_ndim != r0->_ndim)
      return mt_error(MT_ESHAPE, "cat: Tensors must have same number of dimensions: got %d and %d", r0->_ndim,
                      t->_ndim);
    for (int d = 0; d < t->_ndim; d++)
      if (d != dim && t->_sizes[d] != r0->_sizes[d])
        return mt_error(MT_ESHAPE,
                        "cat: Sizes of tensors must match except in dimension %lld. Expected size %lld but got size "
                        "%lld for tensor number %lld in the list.",
                        MT_D(dim), (long long)r0->_sizes[d], (long long)t->_sizes[d], MT_D(i));
    total += t->_sizes[dim];
  }
  sizes[dim] = total;
  mt_tensor *r;
  MT_TRY(mt_new(sizes, r0->_ndim, dtype, "cat", &r));
  int64_t pos = 0;
  for (int i = 0; i < n; i++) {
    mt_tensor *t = ts[i];
    if (t->_ndim == 1 && t->_sizes[0] == 0 && (ref < 0 || i != ref)) continue;
    if (t->_numel > 0) {
      int64_t vs[MT_MAX_DIMS];
      memcpy(vs, r->_sizes, sizeof vs);
      vs[dim] = t->_sizes[dim];
      mt_tensor *v;
      mt_status s = mt_new_view(r, vs, r->_strides, r->_ndim, pos * r->_strides[dim], &v);
      if (s == MT_OK) {
        s = mt_copy_(v, t);
        mt_tensor_release(v);
      }
      if (s) { mt_tensor_release(r); return s; }
    }
    pos += t->_sizes[dim];
  }
  return deliver(r, out, result, "cat");
}

static mt_status stack_impl(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  if (!ts || n <= 0) return mt_error(MT_EINVAL, "stack: stack expects a non-empty TensorList");
  for (int i = 0; i < n; i++) {
    if (!ts[i]) return mt_error(MT_EINVAL, "stack: expected a tensor at position %d, got nothing", i);
    CHECK(ts[i], "stack", "tensors");
    if (!same_shape(ts[0], ts[i]))
      return mt_error(MT_ESHAPE, "stack: stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d",
                      MT_SHAPE(ts[0]), MT_SHAPE(ts[i]), i);
  }
  int nd = ts[0]->_ndim;
  if (nd + 1 > MT_MAX_DIMS) return mt_error(MT_EINVAL, "stack: at most %d dimensions are supported", MT_MAX_DIMS);
  MT_TRY(mt_wrap_dim(dim, nd + 1, "stack", &dim));
  mt_tensor **us = calloc((size_t)n, sizeof *us);
  if (!us) return mt_error(MT_ENOMEM, "stack: out of memory");
  mt_status s = MT_OK;
  for (int i = 0; i < n && s == MT_OK; i++) s = mt_unsqueeze(ts[i], dim, &us[i]);
  if (s == MT_OK) {
    s = mt_cat(us, n, dim, out, result);
    if (s) {
      /* re-label cat's message as stack's */
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", mt_last_error());
      mt_error(s, "stack: %s", strncmp(msg, "cat: ", 5) == 0 ? msg + 5 : msg);
    }
  }
  for (int i = 0; i < n; i++) mt_tensor_release(us[i]);
  free(us);
  return s;
}

/* ---------------------------------------------------------------- index_select */
static mt_status pub_index_select(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out, mt_tensor **result) {
  const char *op = "index_select";
  CHECK(a, op, "input");
  CHECK(index, op, "index");
  if (!is_index_dtype(index->_dtype))
    return mt_error(MT_EDTYPE, "%s: expected dtype int32 or int64 for index, got %s", op, mt_dtype_name(index->_dtype));
  if (index->_ndim > 1)
    return mt_error(MT_ESHAPE, "%s: index is supposed to be a vector, got a tensor of size %s", op, MT_SHAPE(index));
  MT_TRY(mt_wrap_dim(dim, a->_ndim, op, &dim));
  int64_t nidx = index->_numel;
  if (a->_ndim == 0 && nidx != 1)
    return mt_error(MT_ESHAPE, "%s: index to a 0-dim tensor can have only 1 value, got %lld", op, (long long)nidx);
  mt_tensor *a1, *idx, *r;
  MT_TRY(as_1d_if_scalar(a, &a1));
  mt_status s = normalize_index(index, a1->_sizes[dim], base, 0, dim, op, &idx);
  if (s) { mt_tensor_release(a1); return s; }
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, a1->_sizes, sizeof sizes);
  sizes[dim] = nidx;
  s = mt_new(sizes, a->_ndim, a->_dtype, op, &r);
  if (s == MT_OK && nidx > 0 && a1->_numel > 0) {
    int64_t ist[MT_MAX_DIMS] = {0};
    ist[dim] = 1;
    int64_t rst[MT_MAX_DIMS];
    mt_compute_strides(sizes, a1->_ndim, rst);
    ix_ctx c = {.kind = K_GET};
    ix_run(&c, sizes, a1->_ndim, r->_data, rst, a1, dim, (const int64_t *)idx->_data, ist, 0);
  }
  mt_tensor_release(idx);
  mt_tensor_release(a1);
  if (s) return s;
  return deliver(r, out, result, op);
}

/* ---------------------------------------------------------------- gather, scatter */
static mt_status pub_gather(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out, mt_tensor **result) {
  const char *op = "gather";
  CHECK(a, op, "input");
  CHECK(index, op, "index");
  if (index->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: expected dtype int64 for index, got %s", op, mt_dtype_name(index->_dtype));
  MT_TRY(mt_wrap_dim(dim, a->_ndim, op, &dim));
  int and_ = a->_ndim ? a->_ndim : 1, ind = index->_ndim ? index->_ndim : 1;
  if (and_ != ind)
    return mt_error(MT_ESHAPE, "%s: index tensor must have the same number of dimensions as input tensor (%d and %d)",
                    op, index->_ndim, a->_ndim);
  mt_tensor *a1, *i1, *idx = NULL, *r = NULL;
  MT_TRY(as_1d_if_scalar(a, &a1));
  mt_status s = as_1d_if_scalar(index, &i1);
  if (s) { mt_tensor_release(a1); return s; }
  for (int d = 0; d < and_ && s == MT_OK; d++)
    if (d != dim && i1->_sizes[d] > a1->_sizes[d])
      s = mt_error(MT_ESHAPE,
                   "%s: size does not match at dimension %lld: expected index %s to be smaller than self %s apart "
                   "from dimension %lld",
                   op, (long long)(d + base), MT_SHAPE(index), MT_SHAPE(a), (long long)(dim + base));
  if (s == MT_OK) s = normalize_index(i1, a1->_sizes[dim], base, 0, dim, op, &idx);
  if (s == MT_OK) s = mt_new(index->_sizes, index->_ndim, a->_dtype, op, &r);
  if (s == MT_OK && r->_numel > 0) {
    ix_ctx c = {.kind = K_GET};
    int64_t rst[MT_MAX_DIMS];
    mt_compute_strides(i1->_sizes, and_, rst);
    ix_run(&c, i1->_sizes, and_, r->_data, rst, a1, dim, (const int64_t *)idx->_data, rst, 0);
  }
  mt_tensor_release(idx);
  mt_tensor_release(i1);
  mt_tensor_release(a1);
  if (s) return s;
  return deliver(r, out, result, op);
}

/* The tensor an out-of-place-or-in-place op writes into: `a` itself when out == a, else a copy
 * (a new reference either way). */
static mt_status write_target(mt_tensor *a, mt_tensor *out, mt_tensor **t) {
  if (out == a) {
    *t = mt_tensor_retain(a);
    return MT_OK;
  }
  return mt_clone(a, t);
}

/* A source that may share memory with the target is copied first. */
static mt_status unaliased(mt_tensor *src, mt_tensor *target, mt_tensor **r) {
  if (src && mt_may_overlap(src, target)) return mt_clone(src, r);
  *r = src ? mt_tensor_retain(src) : NULL;
  return MT_OK;
}

static mt_status finish_write(mt_tensor *t, mt_tensor *a, mt_tensor *out, mt_tensor **result, const char *op) {
  if (out == a) return mt_give(t, result);
  return deliver(t, out, result, op);
}

static mt_status pub_scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double value, int reduce, int64_t base,
                     mt_tensor *out, mt_tensor **result) {
  const char *op = reduce == 1 && src ? "scatter_add" : "scatter";
  CHECK(a, op, "self");
  CHECK(index, op, "index");
  if (src) CHECK(src, op, "src");
  if (reduce < 0 || reduce > 2) return mt_error(MT_EINVAL, "%s: reduce argument must be either add or multiply", op);
  if (index->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: expected dtype int64 for index, got %s", op, mt_dtype_name(index->_dtype));
  if (src && src->_dtype != a->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected self.dtype to be equal to src.dtype (got %s and %s)", op,
                    mt_dtype_name(a->_dtype), mt_dtype_name(src->_dtype));
  MT_TRY(mt_wrap_dim(dim, a->_ndim, op, &dim));
  int nd = a->_ndim ? a->_ndim : 1;
  if ((index->_ndim ? index->_ndim : 1) != nd)
    return mt_error(MT_ESHAPE, "%s: index tensor must have the same number of dimensions as self tensor (%d and %d)",
                    op, index->_ndim, a->_ndim);
  if (src && (src->_ndim ? src->_ndim : 1) != nd)
    return mt_error(MT_ESHAPE, "%s: src tensor must have the same number of dimensions as self tensor (%d and %d)", op,
                    src->_ndim, a->_ndim);
  for (int d = 0; d < nd; d++) {
    int64_t is = index->_ndim ? index->_sizes[d] : 1;
    int64_t ss = a->_ndim ? a->_sizes[d] : 1;
    int64_t rs = src ? (src->_ndim ? src->_sizes[d] : 1) : is;
    if ((d != dim && is > ss) || is > rs) {
      if (src)
        return mt_error(MT_ESHAPE,
                        "%s: expected index %s to be smaller than self %s apart from dimension %lld and to be smaller "
                        "size than src %s",
                        op, MT_SHAPE(index), MT_SHAPE(a), (long long)(dim + base), MT_SHAPE(src));
      return mt_error(MT_ESHAPE, "%s: expected index %s to be smaller than self %s apart from dimension %lld", op,
                      MT_SHAPE(index), MT_SHAPE(a), (long long)(dim + base));
    }
  }
  mt_tensor *t, *s1 = NULL, *i1 = NULL, *idx = NULL, *src1 = NULL, *t1 = NULL;
  MT_TRY(write_target(a, out, &t));
  mt_status s = unaliased(src, t, &s1);
  if (s == MT_OK) s = as_1d_if_scalar(index, &i1);
  if (s == MT_OK) s = as_1d_if_scalar(t, &t1);
  if (s == MT_OK && s1) s = as_1d_if_scalar(s1, &src1);
  if (s == MT_OK) s = normalize_index(i1, t1->_sizes[dim], base, 0, dim, op, &idx);
  if (s == MT_OK && i1->_numel > 0) {
    mt_bump_version(t);
    ix_ctx c;
    memset(&c, 0, sizeof c);
    if (src1) c.kind = reduce == 0 ? K_PUT : (reduce == 1 ? K_ADD : K_MUL);
    else c.kind = reduce == 0 ? K_FILL : (reduce == 1 ? K_ADDV : K_MULV);
    c.alpha = src1 ? 1.0 : value;
    encode_value(t->_dtype, value, c.fill);
    int64_t ist[MT_MAX_DIMS];
    mt_compute_strides(i1->_sizes, nd, ist);
    ix_run(&c, i1->_sizes, nd, src1 ? src1->_data : NULL, src1 ? src1->_strides : NULL, t1, dim,
           (const int64_t *)idx->_data, ist, 1);
  }
  mt_tensor_release(idx);
  mt_tensor_release(i1);
  mt_tensor_release(t1);
  mt_tensor_release(src1);
  mt_tensor_release(s1);
  if (s) { mt_tensor_release(t); return s; }
  return finish_write(t, a, out, result, op);
}

/* ---------------------------------------------------------------- index_add, index_fill_, index_copy_ */
/* Shared checks of index_add/index_copy_: a 1-D index, src of self's shape except along dim. */
static mt_status check_index_src(mt_tensor *a, int *dim, mt_tensor *index, mt_tensor *src, int64_t base,
                                 const char *op, int int32_ok) {
  CHECK(a, op, "self");
  CHECK(index, op, "index");
  CHECK(src, op, "source");
  if (!(index->_dtype == MT_INT64 || (int32_ok && index->_dtype == MT_INT32)))
    return mt_error(MT_EDTYPE, "%s: expected dtype %s for index, got %s", op, int32_ok ? "int32 or int64" : "int64",
                    mt_dtype_name(index->_dtype));
  if (index->_ndim > 1)
    return mt_error(MT_ESHAPE, "%s: index is supposed to be a vector, got a tensor of size %s", op, MT_SHAPE(index));
  if (src->_dtype != a->_dtype)
    return mt_error(MT_EDTYPE, "%s: self (%s) and source (%s) must have the same dtype", op, mt_dtype_name(a->_dtype),
                    mt_dtype_name(src->_dtype));
  MT_TRY(mt_wrap_dim(*dim, a->_ndim, op, dim));
  int nd = a->_ndim ? a->_ndim : 1;
  if ((src->_ndim ? src->_ndim : 1) != nd)
    return mt_error(MT_ESHAPE, "%s: source and destination must have the same number of dimensions (got %d and %d)",
                    op, src->_ndim, a->_ndim);
  int64_t ns = src->_ndim ? src->_sizes[*dim] : 1;
  if (index->_numel != ns)
    return mt_error(MT_ESHAPE, "%s: number of indices (%lld) should be equal to source.size(%lld) (%lld)", op,
                    (long long)index->_numel, (long long)(*dim + base), (long long)ns);
  for (int d = 0; d < nd; d++)
    if (d != *dim && src->_sizes[d] != a->_sizes[d])
      return mt_error(MT_ESHAPE,
                      "%s: source %s and self %s must have the same size apart from dimension %lld (dimension %lld "
                      "differs)",
                      op, MT_SHAPE(src), MT_SHAPE(a), (long long)(*dim + base), (long long)(d + base));
  return MT_OK;
}

/* self[..., idx[j], ...] (op)= src[..., j, ...] over src's shape. */
static mt_status index_write(mt_tensor *t, int dim, mt_tensor *index, mt_tensor *src, int kind, double alpha,
                             int64_t base, const char *op) {
  mt_tensor *t1 = NULL, *s0 = NULL, *s1 = NULL, *idx = NULL;
  MT_TRY(as_1d_if_scalar(t, &t1));
  mt_status s = unaliased(src, t, &s0);
  if (s == MT_OK) s = as_1d_if_scalar(s0, &s1);
  if (s == MT_OK) s = normalize_index(index, t1->_sizes[dim], base, 0, dim, op, &idx);
  if (s == MT_OK && s1->_numel > 0) {
    mt_bump_version(t);
    ix_ctx c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.alpha = alpha;
    int64_t ist[MT_MAX_DIMS] = {0};
    ist[dim] = 1;
    ix_run(&c, s1->_sizes, s1->_ndim, s1->_data, s1->_strides, t1, dim, (const int64_t *)idx->_data, ist, 1);
  }
  mt_tensor_release(idx);
  mt_tensor_release(s1);
  mt_tensor_release(s0);
  mt_tensor_release(t1);
  return s;
}

static mt_status pub_index_add(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha, int64_t base,
                       mt_tensor *out, mt_tensor **result) {
  const char *op = "index_add";
  MT_TRY(check_index_src(a, &dim, index, src, base, op, 1));
  mt_tensor *t;
  MT_TRY(write_target(a, out, &t));
  mt_status s = index_write(t, dim, index, src, K_ADD, alpha, base, op);
  if (s) { mt_tensor_release(t); return s; }
  return finish_write(t, a, out, result, op);
}

static mt_status pub_index_copy_(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int64_t base) {
  const char *op = "index_copy_";
  MT_TRY(check_index_src(a, &dim, index, src, base, op, 0));
  return index_write(a, dim, index, src, K_PUT, 1.0, base, op);
}

static mt_status pub_index_fill_(mt_tensor *a, int dim, mt_tensor *index, double value, int64_t base) {
  const char *op = "index_fill_";
  CHECK(a, op, "self");
  CHECK(index, op, "index");
  if (index->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: expected dtype int64 for index, got %s", op, mt_dtype_name(index->_dtype));
  if (index->_ndim > 1)
    return mt_error(MT_ESHAPE, "%s: index has to be a vector or a scalar, got a tensor of size %s", op,
                    MT_SHAPE(index));
  MT_TRY(mt_wrap_dim(dim, a->_ndim, op, &dim));
  mt_tensor *t1, *idx;
  MT_TRY(as_1d_if_scalar(a, &t1));
  mt_status s = normalize_index(index, t1->_sizes[dim], base, 1, dim, op, &idx);
  if (s) { mt_tensor_release(t1); return s; }
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, t1->_sizes, sizeof sizes);
  sizes[dim] = index->_numel;
  int64_t n = 1;
  for (int d = 0; d < t1->_ndim; d++) n *= sizes[d];
  if (n > 0) {
    mt_bump_version(a);
    ix_ctx c;
    memset(&c, 0, sizeof c);
    c.kind = K_FILL;
    encode_value(a->_dtype, value, c.fill);
    int64_t ist[MT_MAX_DIMS] = {0};
    ist[dim] = 1;
    ix_run(&c, sizes, t1->_ndim, NULL, NULL, t1, dim, (const int64_t *)idx->_data, ist, 1);
  }
  mt_tensor_release(idx);
  mt_tensor_release(t1);
  return MT_OK;
}

/* ---------------------------------------------------------------- masks */
static mt_status check_mask(const mt_tensor *mask, const char *op) {
  CHECK(mask, op, "mask");
  if (mask->_dtype != MT_BOOL && mask->_dtype != MT_UINT8)
    return mt_error(MT_EDTYPE, "%s: expected a bool mask, got a mask with dtype %s", op, mt_dtype_name(mask->_dtype));
  return MT_OK;
}

/* mask expanded to `sizes` (error if it does not broadcast there). */
static mt_status mask_to(mt_tensor *mask, const int64_t *sizes, int nd, const char *op, const char *what,
                         mt_tensor **out) {
  int64_t bs[MT_MAX_DIMS];
  int bn;
  mt_status s = mt_broadcast_shapes(mask->_sizes, mask->_ndim, sizes, nd, bs, &bn);
  bool ok = s == MT_OK && bn == nd;
  for (int i = 0; ok && i < nd; i++) ok = bs[i] == sizes[i];
  if (!ok)
    return mt_error(MT_ESHAPE, "%s: mask of shape %s cannot be broadcast to %s of shape %s", op, MT_SHAPE(mask), what,
                    mt_shape_str(sizes, nd));
  return mt_expand(mask, sizes, nd, out);
}

typedef struct { size_t item; char fill[8]; } mfill_ctx;
static void mfill_loop(void *ctx, char **p, const int64_t *st, int64_t n) {
  const mfill_ctx *c = ctx;
  char *d = p[0];
  const char *m = p[1];
  switch (c->item) {
#define MF(T)                                                                 \
  {                                                                           \
    T v;                                                                      \
    memcpy(&v, c->fill, sizeof v);                                            \
    for (int64_t i = 0; i < n; i++, d += st[0], m += st[1]) if (*m) *(T *)d = v; \
  } break;
    case 1: MF(uint8_t)
    case 2: MF(uint16_t)
    case 4: MF(uint32_t)
    case 8: MF(uint64_t)
#undef MF
  }
}

static mt_status pub_masked_fill(mt_tensor *a, mt_tensor *mask, double value, mt_tensor *out, mt_tensor **result) {
  const char *op = out == a ? "masked_fill_" : "masked_fill";
  CHECK(a, op, "self");
  MT_TRY(check_mask(mask, op));
  mt_tensor *t, *m0, *m;
  if (out == a) {
    t = mt_tensor_retain(a);
  } else {
    int64_t bs[MT_MAX_DIMS];
    int bn;
    MT_TRY(mt_broadcast_shapes(a->_sizes, a->_ndim, mask->_sizes, mask->_ndim, bs, &bn));
    MT_TRY(mt_new(bs, bn, a->_dtype, op, &t));
    mt_status s = mt_copy_(t, a);
    if (s) { mt_tensor_release(t); return s; }
  }
  mt_status s = unaliased(mask, t, &m0);
  if (s == MT_OK) {
    s = mask_to(m0, t->_sizes, t->_ndim, op, "self", &m);
    mt_tensor_release(m0);
  }
  if (s) { mt_tensor_release(t); return s; }
  if (t->_numel > 0) {
    mt_bump_version(t);
    mfill_ctx c;
    c.item = mt_itemsize(t->_dtype);
    encode_value(t->_dtype, value, c.fill);
    mt_tensor *ops[2] = {t, m};
    mt_iter it;
    mt_iter_init(&it, ops, 2, t->_sizes, t->_ndim);
    mt_iter_run(&it, mfill_loop, &c, MT_GRAIN);
  }
  mt_tensor_release(m);
  return finish_write(t, a, out, result, op);
}

static mt_status pub_masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out, mt_tensor **result) {
  const char *op = out == a ? "masked_fill_" : "masked_fill";
  CHECK(value, op, "value");
  if (value->_ndim != 0)
    return mt_error(MT_ESHAPE, "%s: only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)",
                    op, value->_ndim);
  double v = load_value(value->_dtype, value->_data);
  return mt_masked_fill(a, mask, v, out, result);
}

/* Row-major walks over (a, mask) for masked_select / masked_scatter_ / nonzero. */
typedef struct {
  size_t item;
  int mdtype;
  char *seq;       /* the packed side: result (select) or source (scatter) */
  int64_t pos;     /* next element of seq */
  int scatter;
} mseq_ctx;

static void mcount_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  (void)coord;
  int64_t *cnt = ctx;
  const char *m = p[0];
  int64_t c = 0;
  for (int64_t i = 0; i < n; i++, m += st[0]) c += *m != 0;
  *cnt += c;
}

static void mseq_row(void *ctx_, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  (void)coord;
  mseq_ctx *c = ctx_;
  char *a = p[0];
  const char *m = p[1];
  size_t item = c->item;
  for (int64_t i = 0; i < n; i++, a += st[0], m += st[1]) {
    if (!*m) continue;
    if (c->scatter) memcpy(a, c->seq + c->pos * item, item);
    else memcpy(c->seq + c->pos * item, a, item);
    c->pos++;
  }
}

static int64_t count_true(mt_tensor *m) {
  walk w;
  walk_init(&w, m->_sizes, m->_ndim);
  walk_add_tensor(&w, m);
  int64_t cnt = 0;
  if (w.numel) walk_rows(&w, mcount_row, &cnt, 0, w.numel / w.sizes[w.nd - 1]);
  return cnt;
}

static mt_status pub_masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor **result) {
  const char *op = "masked_select";
  CHECK(a, op, "input");
  MT_TRY(check_mask(mask, op));
  int64_t bs[MT_MAX_DIMS];
  int bn;
  MT_TRY(mt_broadcast_shapes(a->_sizes, a->_ndim, mask->_sizes, mask->_ndim, bs, &bn));
  mt_tensor *ae, *me, *r = NULL;
  MT_TRY(mt_expand(a, bs, bn, &ae));
  mt_status s = mt_expand(mask, bs, bn, &me);
  if (s) { mt_tensor_release(ae); return s; }
  int64_t cnt = count_true(me);
  s = mt_new(&cnt, 1, a->_dtype, op, &r);
  if (s == MT_OK && cnt > 0) {
    walk w;
    walk_init(&w, bs, bn);
    walk_add_tensor(&w, ae);
    walk_add_tensor(&w, me);
    mseq_ctx c = {mt_itemsize(a->_dtype), mask->_dtype, r->_data, 0, 0};
    walk_rows(&w, mseq_row, &c, 0, w.numel / w.sizes[w.nd - 1]);
  }
  mt_tensor_release(ae);
  mt_tensor_release(me);
  if (s) return s;
  *result = r;
  return MT_OK;
}

static mt_status pub_masked_scatter_(mt_tensor *a, mt_tensor *mask, mt_tensor *src) {
  const char *op = "masked_scatter_";
  CHECK(a, op, "self");
  MT_TRY(check_mask(mask, op));
  CHECK(src, op, "source");
  if (src->_dtype != a->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected self and source to have the same dtype, but got %s and %s", op,
                    mt_dtype_name(a->_dtype), mt_dtype_name(src->_dtype));
  mt_tensor *me, *m0, *sc;
  MT_TRY(unaliased(mask, a, &m0));
  mt_status s = mask_to(m0, a->_sizes, a->_ndim, op, "self", &me);
  mt_tensor_release(m0);
  if (s) return s;
  int64_t cnt = count_true(me);
  if (src->_numel < cnt) {
    mt_tensor_release(me);
    return mt_error(MT_ESHAPE, "%s: number of elements of source (%lld) < number of ones in mask (%lld)", op,
                    (long long)src->_numel, (long long)cnt);
  }
  if (mt_may_overlap(src, a)) s = mt_clone(src, &sc);
  else s = mt_contiguous(src, &sc);
  if (s == MT_OK && cnt > 0) {
    mt_bump_version(a);
    walk w;
    walk_init(&w, a->_sizes, a->_ndim);
    walk_add_tensor(&w, a);
    walk_add_tensor(&w, me);
    mseq_ctx c = {mt_itemsize(a->_dtype), mask->_dtype, sc->_data, 0, 1};
    walk_rows(&w, mseq_row, &c, 0, w.numel / w.sizes[w.nd - 1]);
  }
  if (s == MT_OK) mt_tensor_release(sc);
  mt_tensor_release(me);
  return s;
}

/* ---------------------------------------------------------------- nonzero */
typedef struct {
  int dtype;
  size_t item;
  int nd; /* the tensor's real ndim (0 for a scalar) */
  int64_t base;
  int64_t *out;
  int64_t count;
} nz_ctx;

static void nz_count_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  (void)coord;
  nz_ctx *c = ctx;
  const char *a = p[0];
  for (int64_t i = 0; i < n; i++, a += st[0]) c->count += is_nonzero(c->dtype, a);
}

static void nz_fill_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  nz_ctx *c = ctx;
  const char *a = p[0];
  int nd = c->nd;
  for (int64_t i = 0; i < n; i++, a += st[0]) {
    if (!is_nonzero(c->dtype, a)) continue;
    int64_t *row = c->out + c->count * nd;
    for (int d = 0; d + 1 < nd; d++) row[d] = coord[d] + c->base;
    if (nd > 0) row[nd - 1] = i + c->base;
    c->count++;
  }
}

mt_status mt_nonzero(mt_tensor *a, int64_t base, mt_tensor **result) {
  const char *op = "nonzero";
  CHECK(a, op, "input");
  walk w;
  walk_init(&w, a->_sizes, a->_ndim);
  walk_add_tensor(&w, a);
  int64_t nrows = w.numel ? w.numel / w.sizes[w.nd - 1] : 0;
  nz_ctx c = {a->_dtype, mt_itemsize(a->_dtype), a->_ndim, base, NULL, 0};
  walk_rows(&w, nz_count_row, &c, 0, nrows);
  int64_t sizes[2] = {c.count, a->_ndim};
  mt_tensor *r;
  MT_TRY(mt_new(sizes, 2, MT_INT64, op, &r));
  c.out = (int64_t *)r->_data;
  c.count = 0;
  if (sizes[0] > 0) walk_rows(&w, nz_fill_row, &c, 0, nrows);
  *result = r;
  return MT_OK;
}

/* ---------------------------------------------------------------- advanced indexing */
typedef struct {
  mt_tensor *w;      /* the indexed tensor (a, or a with unit dims added for 0-dim bool indices) */
  int k;             /* leading dims of w that the indices consume */
  int bnd;
  int64_t bshape[MT_MAX_DIMS];
  int64_t P;         /* numel of bshape */
  int64_t *off;      /* P element offsets into w */
} adv_index;

static void adv_free(adv_index *ai) {
  mt_tensor_release(ai->w);
  free(ai->off);
}

static mt_status adv_prepare(mt_tensor *a, mt_tensor **indices, int n, int64_t base, const char *op, adv_index *ai) {
  memset(ai, 0, sizeof *ai);
  CHECK(a, op, "self");
  if (n < 0 || (n > 0 && !indices)) return mt_error(MT_EINVAL, "%s: bad list of indices", op);
  mt_tensor *lt[MT_MAX_DIMS];   /* long index tensors, one per consumed dim */
  int raw[MT_MAX_DIMS];         /* 1: values still in the caller's base */
  int nl = 0;
  mt_status s = MT_OK;
  mt_tensor *w = mt_tensor_retain(a);
  int d = 0;
  for (int i = 0; i < n && s == MT_OK; i++) {
    mt_tensor *t = indices[i];
    if (!t) { s = mt_error(MT_EINVAL, "%s: index %d is missing (nil)", op, i + (int)base); break; }
    if ((s = mt_check_tensor(t, op, "indices"))) break;
    if (t->_dtype == MT_BOOL || t->_dtype == MT_UINT8) {
      int km = t->_ndim;
      if (km == 0) {
        /* a 0-dim mask adds a unit dim, kept when true */
        mt_tensor *w2;
        if (w->_ndim >= MT_MAX_DIMS) { s = mt_error(MT_EINVAL, "%s: too many dimensions", op); break; }
        if ((s = mt_unsqueeze(w, d, &w2))) break;
        mt_tensor_release(w);
        w = w2;
        int64_t cnt = is_nonzero(t->_dtype, t->_data) ? 1 : 0;
        if ((s = mt_new(&cnt, 1, MT_INT64, op, &lt[nl]))) break;
        if (cnt) ((int64_t *)lt[nl]->_data)[0] = 0;
        raw[nl++] = 0;
        d++;
        continue;
      }
      if (d + km > w->_ndim) {
        s = mt_error(MT_ERANGE, "%s: too many indices for tensor of dimension %d", op, a->_ndim);
        break;
      }
      for (int j = 0; j < km && s == MT_OK; j++)
        if (t->_sizes[j] != w->_sizes[d + j])
          s = mt_error(MT_ESHAPE,
                       "%s: the shape of the mask %s at index %d does not match the shape of the indexed tensor %s at "
                       "index %d",
                       op, MT_SHAPE(t), j, MT_SHAPE(w), d + j);
      if (s) break;
      mt_tensor *nz;
      if ((s = mt_nonzero(t, 0, &nz))) break;
      for (int j = 0; j < km && s == MT_OK; j++) {
        if ((s = mt_select(nz, 1, j, &lt[nl]))) break;
        raw[nl++] = 0;
      }
      mt_tensor_release(nz);
      d += km;
    } else if (t->_dtype == MT_INT64 || t->_dtype == MT_INT32) {
      if (d + 1 > w->_ndim) {
        s = mt_error(MT_ERANGE, "%s: too many indices for tensor of dimension %d", op, a->_ndim);
        break;
      }
      lt[nl] = mt_tensor_retain(t);
      raw[nl++] = 1;
      d++;
    } else {
      s = mt_error(MT_EDTYPE, "%s: tensors used as indices must be long, int, byte or bool tensors, got %s", op,
                   mt_dtype_name(t->_dtype));
    }
  }
  /* the broadcast shape of the index tensors */
  int64_t bs[MT_MAX_DIMS];
  int bn = 0;
  for (int i = 0; i < nl && s == MT_OK; i++) {
    int64_t nb[MT_MAX_DIMS];
    int nn;
    if (i == 0) {
      bn = lt[0]->_ndim;
      memcpy(bs, lt[0]->_sizes, sizeof(int64_t) * (size_t)bn);
      continue;
    }
    if (mt_broadcast_shapes(bs, bn, lt[i]->_sizes, lt[i]->_ndim, nb, &nn) != MT_OK) {
      char shapes[512];
      size_t len = 0;
      for (int j = 0; j < nl && len < sizeof shapes - 64; j++)
        len += (size_t)snprintf(shapes + len, sizeof shapes - len, j ? ", %s" : "%s", MT_SHAPE(lt[j]));
      s = mt_error(MT_ESHAPE, "%s: shape mismatch: indexing tensors could not be broadcast together with shapes %s", op,
                   shapes);
      break;
    }
    bn = nn;
    memcpy(bs, nb, sizeof(int64_t) * (size_t)bn);
  }
  int64_t P = 1;
  for (int i = 0; i < bn; i++) P *= bs[i];
  int64_t *off = NULL;
  if (s == MT_OK) {
    off = calloc((size_t)(P > 0 ? P : 1), sizeof *off);
    if (!off) s = mt_error(MT_ENOMEM, "%s: out of memory", op);
  }
  for (int i = 0; i < nl && s == MT_OK; i++) {
    mt_tensor *e, *norm;
    if ((s = mt_expand(lt[i], bs, bn, &e))) break;
    s = normalize_index(e, w->_sizes[i], raw[i] ? base : 0, raw[i], i, op, &norm);
    mt_tensor_release(e);
    if (s) break;
    const int64_t *p = (const int64_t *)norm->_data;
    int64_t st = w->_strides[i];
    for (int64_t q = 0; q < P; q++) off[q] += p[q] * st;
    mt_tensor_release(norm);
  }
  for (int i = 0; i < nl; i++) mt_tensor_release(lt[i]);
  if (s) {
    free(off);
    mt_tensor_release(w);
    return s;
  }
  ai->w = w;
  ai->k = nl;
  ai->bnd = bn;
  memcpy(ai->bshape, bs, sizeof bs);
  ai->P = P;
  ai->off = off;
  return MT_OK;
}

typedef struct {
  const adv_index *ai;
  ix_ctx c;
  char *contig;       /* the contiguous side: result (get) or values (put) */
  int64_t B;          /* elements per block */
  int tnd;
  int64_t tsz[MT_MAX_DIMS], tst[MT_MAX_DIMS]; /* trailing sizes and byte strides in w */
} adv_job;

static void adv_blocks(void *ctx, int64_t p0, int64_t p1) {
  adv_job *j = ctx;
  const int64_t zero = 0;
  size_t item = j->c.item;
  int nd = j->tnd;
  int64_t inner = nd ? j->tsz[nd - 1] : 1, ist = nd ? j->tst[nd - 1] : 0;
  for (int64_t p = p0; p < p1; p++) {
    char *s = j->ai->w->_data + j->ai->off[p] * (int64_t)item;
    char *c = j->contig + p * j->B * (int64_t)item;
    if (j->B == 0) continue;
    int64_t idx[MT_MAX_DIMS] = {0};
    int64_t rows = j->B / inner;
    for (int64_t r = 0; r < rows; r++) {
      ix_row(&j->c, c, (int64_t)item, s, ist, (const char *)&zero, 0, inner);
      c += inner * (int64_t)item;
      for (int d = nd - 2; d >= 0; d--) {
        idx[d]++;
        s += j->tst[d];
        if (idx[d] < j->tsz[d]) break;
        s -= j->tst[d] * j->tsz[d];
        idx[d] = 0;
      }
    }
  }
}

static void adv_job_init(adv_job *j, const adv_index *ai, int kind, char *contig) {
  memset(j, 0, sizeof *j);
  j->ai = ai;
  j->c.kind = kind;
  j->c.dtype = ai->w->_dtype;
  j->c.item = mt_itemsize(ai->w->_dtype);
  j->c.alpha = 1.0;
  j->contig = contig;
  j->tnd = ai->w->_ndim - ai->k;
  j->B = 1;
  for (int i = 0; i < j->tnd; i++) {
    j->tsz[i] = ai->w->_sizes[ai->k + i];
    j->tst[i] = ai->w->_strides[ai->k + i] * (int64_t)j->c.item;
    j->B *= j->tsz[i];
  }
}

static mt_status pub_index(mt_tensor *a, mt_tensor **indices, int n, int64_t base, mt_tensor **result) {
  const char *op = "index";
  adv_index ai;
  MT_TRY(adv_prepare(a, indices, n, base, op, &ai));
  int64_t sizes[2 * MT_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < ai.bnd; i++) sizes[nd++] = ai.bshape[i];
  for (int i = ai.k; i < ai.w->_ndim; i++) sizes[nd++] = ai.w->_sizes[i];
  mt_tensor *r;
  mt_status s = nd > MT_MAX_DIMS ? mt_error(MT_EINVAL, "%s: the result would have %d dimensions, at most %d are supported", op, nd, MT_MAX_DIMS)
                                 : mt_new(sizes, nd, a->_dtype, op, &r);
  if (s == MT_OK && r->_numel > 0) {
    adv_job j;
    adv_job_init(&j, &ai, K_GET, r->_data);
    int64_t grain = MT_GRAIN / (j.B > 0 ? j.B : 1);
    mt_parallel_for(ai.P, grain < 1 ? 1 : grain, adv_blocks, &j);
  }
  adv_free(&ai);
  if (s) return s;
  *result = r;
  return MT_OK;
}

static mt_status pub_index_put_(mt_tensor *a, mt_tensor **indices, int n, mt_tensor *values, int accumulate, int64_t base) {
  const char *op = "index_put_";
  CHECK(a, op, "self");
  CHECK(values, op, "values");
  if (values->_dtype != a->_dtype)
    return mt_error(MT_EDTYPE,
                    "%s: index_put_ requires the source and destination dtypes to match, got %s for the destination "
                    "and %s for the source",
                    op, mt_dtype_name(a->_dtype), mt_dtype_name(values->_dtype));
  adv_index ai;
  MT_TRY(adv_prepare(a, indices, n, base, op, &ai));
  int64_t sizes[2 * MT_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < ai.bnd; i++) sizes[nd++] = ai.bshape[i];
  for (int i = ai.k; i < ai.w->_ndim; i++) sizes[nd++] = ai.w->_sizes[i];
  mt_status s = MT_OK;
  mt_tensor *ve = NULL, *vc = NULL;
  if (nd > MT_MAX_DIMS) s = mt_error(MT_EINVAL, "%s: too many dimensions", op);
  if (s == MT_OK) {
    int64_t bs[MT_MAX_DIMS];
    int bn;
    bool ok = mt_broadcast_shapes(values->_sizes, values->_ndim, sizes, nd, bs, &bn) == MT_OK && bn == nd;
    for (int i = 0; ok && i < nd; i++) ok = bs[i] == sizes[i];
    if (!ok)
      s = mt_error(MT_ESHAPE, "%s: shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s",
                   op, MT_SHAPE(values), mt_shape_str(sizes, nd));
  }
  if (s == MT_OK) s = mt_expand(values, sizes, nd, &ve);
  if (s == MT_OK) {
    /* a contiguous copy of the values (always a copy when they share memory with a) */
    if (mt_may_overlap(ve, a) || !(ve->_flags & MT_TENSOR_CONTIGUOUS)) s = mt_clone(ve, &vc);
    else vc = mt_tensor_retain(ve);
  }
  if (s == MT_OK && ai.P > 0) {
    mt_bump_version(a);
    adv_job j;
    adv_job_init(&j, &ai, accumulate ? K_ADD : K_PUT, vc->_data);
    /* one thread: repeated positions add up (accumulate) or the last write wins */
    if (j.B > 0) adv_blocks(&j, 0, ai.P);
  }
  mt_tensor_release(ve);
  mt_tensor_release(vc);
  adv_free(&ai);
  return s;
}

/* ---------------------------------------------------------------- creation */
mt_status mt_arange(double start, double end, double step, int dtype, mt_tensor **result) {
  const char *op = "arange";
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: invalid dtype %d", op, dtype);
  if (dtype == MT_BOOL) return mt_error(MT_EDTYPE, "%s: not implemented for 'bool'", op);
  bool integral = !mt_is_float(dtype);
  if (!isfinite(start) || !isfinite(end))
    return mt_error(MT_EINVAL, "%s: unsupported range: %g -> %g", op, start, end);
  double size_d;
  int64_t is = 0, ie = 0, ist = 0;
  if (integral) {
    if (fabs(start) > 9.2e18 || fabs(end) > 9.2e18 || fabs(step) > 9.2e18)
      return mt_error(MT_EINVAL, "%s: unsupported range: %g -> %g", op, start, end);
    is = (int64_t)start;
    ie = (int64_t)end;
    ist = (int64_t)step;
    if (ist == 0) return mt_error(MT_EINVAL, "%s: step must be nonzero", op);
    if (dtype == MT_INT64) size_d = ceil((double)(ie - is) / (double)ist);
    else size_d = ceil((end - start) / step);
    if (!((ist > 0 && ie >= is) || (ist < 0 && ie <= is)))
      return mt_error(MT_EINVAL, "%s: upper bound and larger bound inconsistent with step sign", op);
  } else {
    if (step == 0 || isnan(step)) return mt_error(MT_EINVAL, "%s: step must be nonzero", op);
    size_d = ceil((end - start) / step);
    if (!((step > 0 && end >= start) || (step < 0 && end <= start)))
      return mt_error(MT_EINVAL, "%s: upper bound and larger bound inconsistent with step sign", op);
  }
  if (!(size_d >= 0 && size_d <= 9.2e18)) return mt_error(MT_EINVAL, "%s: invalid size, possible overflow?", op);
  int64_t n = (int64_t)size_d;
  mt_tensor *r;
  MT_TRY(mt_new(&n, 1, dtype, op, &r));
  switch (dtype) {
#define X(DT, T, L, S)                                                                \
  case DT: {                                                                          \
    T *p = (T *)r->_data;                                                             \
    if (integral) {                                                                   \
      for (int64_t i = 0; i < n; i++) { int64_t v = is + i * ist; p[i] = S; }         \
    } else if (mt_is_reduced_float(DT)) {                                             \
      for (int64_t i = 0; i < n; i++) { float v = (float)start + (float)i * (float)step; p[i] = S; } \
    } else {                                                                          \
      for (int64_t i = 0; i < n; i++) { double v = start + (double)i * step; p[i] = S; } \
    }                                                                                 \
  } break;
    MT_FOREACH_DTYPE(X)
#undef X
  }
  *result = r;
  return MT_OK;
}

/* linspace/logspace share the point rule: the first half counts up from start, the second
 * half down from end, so both endpoints are exact. */
static mt_status spaced(double start, double end, int64_t steps, double base, int log, int dtype, const char *op,
                        mt_tensor **result) {
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: invalid dtype %d", op, dtype);
  if (dtype == MT_BOOL) return mt_error(MT_EDTYPE, "%s: not implemented for 'bool'", op);
  if (steps < 0) return mt_error(MT_EINVAL, "%s: number of steps must be non-negative", op);
  mt_tensor *r;
  MT_TRY(mt_new(&steps, 1, dtype, op, &r));
  int64_t half = steps / 2;
  switch (dtype) {
#define X(DT, T, L, S)                                                                          \
  case DT: {                                                                                    \
    T *p = (T *)r->_data;                                                                       \
    if (DT == MT_FLOAT32 || mt_is_reduced_float(DT)) {                                          \
      float s0 = (float)start, s1 = (float)end;                                                 \
      float stp = steps > 1 ? (s1 - s0) / (float)(steps - 1) : 0.f;                             \
      for (int64_t i = 0; i < steps; i++) {                                                     \
        float e = i < half ? s0 + stp * (float)i : s1 - stp * (float)(steps - i - 1);          \
        double v = log ? pow(base, (double)e) : (double)e;                                      \
        if (steps == 1) v = log ? pow(base, (double)s0) : (double)s0;                           \
        p[i] = S;                                                                               \
      }                                                                                         \
    } else {                                                                                    \
      double s0 = start, s1 = end;                                                              \
      if (!mt_is_float(DT)) { T t0 = (T)(int64_t)start, t1 = (T)(int64_t)end; s0 = (double)t0; s1 = (double)t1; } \
      double stp = steps > 1 ? (s1 - s0) / (double)(steps - 1) : 0.;                            \
      for (int64_t i = 0; i < steps; i++) {                                                     \
        double e = i < half ? s0 + stp * (double)i : s1 - stp * (double)(steps - i - 1);        \
        if (steps == 1) e = s0;                                                                 \
        double v = log ? pow(base, e) : e;                                                      \
        p[i] = S;                                                                               \
      }                                                                                         \
    }                                                                                           \
  } break;
    MT_FOREACH_DTYPE(X)
#undef X
  }
  *result = r;
  return MT_OK;
}

mt_status mt_linspace(double start, double end, int64_t steps, int dtype, mt_tensor **result) {
  return spaced(start, end, steps, 10.0, 0, dtype, "linspace", result);
}

mt_status mt_logspace(double start, double end, int64_t steps, double base, int dtype, mt_tensor **result) {
  return spaced(start, end, steps, base, 1, dtype, "logspace", result);
}

mt_status mt_eye(int64_t n, int64_t m, int dtype, mt_tensor **result) {
  const char *op = "eye";
  if (n < 0) return mt_error(MT_EINVAL, "%s: n must be greater or equal to 0, got %lld", op, (long long)n);
  if (m < 0) return mt_error(MT_EINVAL, "%s: m must be greater or equal to 0, got %lld", op, (long long)m);
  int64_t sizes[2] = {n, m};
  mt_tensor *r;
  MT_TRY(mt_new(sizes, 2, dtype, op, &r));
  mt_status s = mt_fill_(r, 0);
  if (s) { mt_tensor_release(r); return s; }
  char one[8];
  size_t item = mt_itemsize(dtype);
  encode_value(dtype, 1.0, one);
  int64_t k = n < m ? n : m;
  for (int64_t i = 0; i < k; i++) memcpy(r->_data + (i * m + i) * (int64_t)item, one, item);
  *result = r;
  return MT_OK;
}

static mt_status pub_diag(mt_tensor *a, int64_t diagonal, mt_tensor **result) {
  const char *op = "diag";
  CHECK(a, op, "input");
  if (a->_ndim == 2) {
    mt_tensor *v;
    MT_TRY(mt_diagonal(a, diagonal, 0, 1, &v));
    mt_status s = mt_clone(v, result);
    mt_tensor_release(v);
    return s;
  }
  if (a->_ndim != 1) return mt_error(MT_ESHAPE, "%s: supports 1-D or 2-D tensors, got a %d-D tensor", op, a->_ndim);
  int64_t n = a->_sizes[0], m;
  if (diagonal == INT64_MIN || __builtin_add_overflow(n, diagonal < 0 ? -diagonal : diagonal, &m))
    return mt_error(MT_ENOMEM, "%s: diagonal %lld makes a result too large to allocate", op, (long long)diagonal);
  int64_t sizes[2] = {m, m};
  mt_tensor *r, *d;
  MT_TRY(mt_new(sizes, 2, a->_dtype, op, &r));
  mt_status s = mt_fill_(r, 0);
  if (s == MT_OK) s = mt_diagonal(r, diagonal, 0, 1, &d);
  if (s == MT_OK) {
    s = mt_copy_(d, a);
    mt_tensor_release(d);
  }
  if (s) { mt_tensor_release(r); return s; }
  *result = r;
  return MT_OK;
}

typedef struct { int64_t k; int upper; size_t item; int nd; } tri_ctx;
static void tri_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  const tri_ctx *c = ctx;
  int64_t i = coord[c->nd - 2];
  /* tril keeps j <= i + k, triu keeps j >= i + k: zero the rest */
  int64_t lo, hi; /* the zeroed column range [lo, hi) */
  if (c->upper) {
    lo = 0;
    hi = i + c->k;
  } else {
    lo = i + c->k + 1;
    hi = n;
  }
  if (lo < 0) lo = 0;
  if (hi > n) hi = n;
  char *d = p[0];
  for (int64_t j = lo; j < hi; j++) memset(d + j * st[0], 0, c->item);
}

static mt_status pub_triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out, mt_tensor **result) {
  const char *op = upper ? "triu" : "tril";
  CHECK(a, op, "input");
  if (a->_ndim < 2)
    return mt_error(MT_ESHAPE, "%s: input tensor must have at least 2 dimensions, got %d", op, a->_ndim);
  mt_tensor *t;
  MT_TRY(write_target(a, out, &t));
  if (t->_numel > 0) {
    mt_bump_version(t);
    walk w;
    walk_init(&w, t->_sizes, t->_ndim);
    walk_add_tensor(&w, t);
    /* beyond rows + cols every diagonal keeps (or zeroes) the same: clamped, i + k cannot overflow */
    int64_t lim = t->_sizes[t->_ndim - 2] + t->_sizes[t->_ndim - 1];
    if (diagonal > lim) diagonal = lim;
    if (diagonal < -lim) diagonal = -lim;
    tri_ctx c = {diagonal, upper, mt_itemsize(t->_dtype), t->_ndim};
    walk_run(&w, tri_row, &c, 1);
  }
  return finish_write(t, a, out, result, op);
}

mt_status mt_one_hot(mt_tensor *index, int64_t num_classes, int64_t base, mt_tensor **result) {
  const char *op = "one_hot";
  CHECK(index, op, "input");
  if (index->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: one_hot is only applicable to index tensors of dtype int64, got %s", op,
                    mt_dtype_name(index->_dtype));
  if (index->_ndim + 1 > MT_MAX_DIMS) return mt_error(MT_EINVAL, "%s: too many dimensions", op);
  mt_tensor *ic;
  MT_TRY(mt_contiguous(index, &ic));
  const int64_t *p = (const int64_t *)ic->_data;
  int64_t n = ic->_numel;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t i = 0; i < n; i++) {
    if (p[i] < lo) lo = p[i];
    if (p[i] > hi) hi = p[i];
  }
  mt_status s = MT_OK;
  if (num_classes == -1) {
    if (n == 0) s = mt_error(MT_EINVAL, "%s: can not infer the total number of classes from an empty tensor", op);
    else num_classes = hi - base + 1;
  } else if (num_classes < 0) {
    s = mt_error(MT_EINVAL, "%s: num_classes must be -1 or non-negative, got %lld", op, (long long)num_classes);
  }
  if (s == MT_OK && n > 0 && lo < base)
    s = mt_error(MT_ERANGE, "%s: class value %lld is out of range for num_classes %lld (class values are %lld to %lld)",
                 op, (long long)lo, (long long)num_classes, (long long)base, (long long)(num_classes - 1 + base));
  if (s == MT_OK && n > 0 && hi - base >= num_classes)
    s = mt_error(MT_ERANGE, "%s: class value %lld is out of range for num_classes %lld (class values are %lld to %lld)",
                 op, (long long)hi, (long long)num_classes, (long long)base, (long long)(num_classes - 1 + base));
  mt_tensor *r = NULL;
  if (s == MT_OK) {
    int64_t sizes[MT_MAX_DIMS];
    memcpy(sizes, index->_sizes, sizeof(int64_t) * (size_t)index->_ndim);
    sizes[index->_ndim] = num_classes;
    s = mt_new(sizes, index->_ndim + 1, MT_INT64, op, &r);
    if (s == MT_OK) s = mt_fill_(r, 0);
    if (s == MT_OK) {
      int64_t *q = (int64_t *)r->_data;
      for (int64_t i = 0; i < n; i++) q[i * num_classes + (p[i] - base)] = 1;
    } else if (r) {
      mt_tensor_release(r);
    }
  }
  mt_tensor_release(ic);
  if (s) return s;
  *result = r;
  return MT_OK;
}

/* ---------------------------------------------------------------- autograd entry points */
mt_status mt_cat(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  bool rec = false;
  for (int i = 0; ts && i < n; i++) rec = rec || (ts[i] && mt_grad_on1(ts[i]));
  if (!rec) return pub_cat(ts, n, dim, out, result);
  MT_TRY(mt_grad_check_out(out, true, "cat"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(pub_cat(ts, n, dim, NULL, &r)));
  int d = dim < 0 ? dim + r->_ndim : dim;
  mt_status s = mt_record_cat(ts, n, d, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* index_select / gather: the backward needs the index 0-based as int64 */
static mt_status record_indexed(mt_tensor *a, int dim, mt_tensor *index, int64_t base, int gather, mt_tensor *r) {
  mt_tensor *i64 = NULL, *i0 = NULL;
  mt_status s = MT_NOGRAD(mt_to_dtype(index, MT_INT64, 0, &i64));
  if (s == MT_OK) s = MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i64, (double)base, 1, 0, NULL, &i0));
  if (s == MT_OK) s = mt_record_index(a, dim < 0 ? dim + a->_ndim : dim, i0, gather, r);
  mt_tensor_release(i64);
  mt_tensor_release(i0);
  return s;
}

mt_status mt_index_select(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_index_select(a, dim, index, base, out, result);
  MT_TRY(mt_grad_check_out(out, true, "index_select"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(pub_index_select(a, dim, index, base, NULL, &r)));
  mt_status s = record_indexed(a, dim, index, base, 0, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_gather(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_gather(a, dim, index, base, out, result);
  MT_TRY(mt_grad_check_out(out, true, "gather"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(pub_gather(a, dim, index, base, NULL, &r)));
  mt_status s = record_indexed(a, dim, index, base, 1, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_masked_fill(mt_tensor *a, mt_tensor *mask, double value, mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_masked_fill(a, mask, value, out, result);
  if (out == a) MT_TRY(mt_grad_check_inplace(a, "masked_fill_"));
  else MT_TRY(mt_grad_check_out(out, true, "masked_fill"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(pub_masked_fill(a, mask, value, out, &r)));
  mt_status s = mt_record_masked_fill(a, mask, r);
  if (s) { mt_tensor_release(r); return s; }
  if (out) { mt_tensor_release(r); if (result) *result = mt_tensor_retain(out); return MT_OK; }
  return mt_give(r, result);
}

mt_status mt_stack(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  bool rec = false;
  for (int i = 0; ts && i < n; i++) rec = rec || (ts[i] && mt_grad_on1(ts[i]));
  if (!rec) return stack_impl(ts, n, dim, out, result);
  MT_TRY(mt_grad_check_out(out, true, "stack"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(stack_impl(ts, n, dim, NULL, &r)));
  int d = dim < 0 ? dim + r->_ndim : dim;
  mt_status s = mt_record_stack(ts, n, d, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* an index tensor 0-based as int64 (a new reference) */
static mt_status index0(mt_tensor *index, int64_t base, mt_tensor **out) {
  mt_tensor *i64 = NULL;
  mt_status s = MT_NOGRAD(mt_to_dtype(index, MT_INT64, 1, &i64));
  if (s == MT_OK && base) {
    s = MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i64, (double)base, 1, 0, NULL, out));
    mt_tensor_release(i64);
    return s;
  }
  if (s == MT_OK) *out = i64;
  return s;
}
static int wrap0(int dim, const mt_tensor *a) { return dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim; }

/* in place on a (out == a) or out of place (out NULL) with recording: refuse leaves, views and out= */
static mt_status check_write(mt_tensor *a, mt_tensor *out, const char *op_, const char *op) {
  if (out == a) {
    MT_TRY(mt_grad_check_inplace(a, op_));
    return mt_grad_check_whole_write(a, op_);
  }
  return mt_grad_check_out(out, true, op);
}

/* run `call` (writing its result through &r_) without recording, then `record` (may use r_, i0) */
#define WRITE_OP(call, record)                                  \
  do {                                                          \
    mt_tensor *r_ = NULL, *i0 = NULL;                           \
    MT_TRY(MT_NOGRAD(call));                                    \
    mt_status s_ = index ? index0(index, base, &i0) : MT_OK;    \
    if (s_ == MT_OK) s_ = (record);                             \
    mt_tensor_release(i0);                                      \
    if (s_) { mt_tensor_release(r_); return s_; }               \
    return mt_give(r_, result);                                 \
  } while (0)

mt_status mt_scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double value, int reduce, int64_t base,
                     mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on2(a, src)) return pub_scatter(a, dim, index, src, value, reduce, base, out, result);
  const char *op = reduce == 1 && src ? "scatter_add" : "scatter";
  MT_TRY(check_write(a, out, reduce == 1 && src ? "scatter_add_" : "scatter_", op));
  if (reduce == 2 || (reduce == 1 && !src))
    return mt_error(MT_ENOTIMPL, "%s: scatter with reduce='%s' is not differentiable (in PyTorch neither)", op,
                    reduce == 2 ? "multiply" : "add");
  int kind = !src ? MT_SC_VALUE : reduce == 1 ? MT_SC_ADD_SRC : MT_SC_SRC;
  WRITE_OP(pub_scatter(a, dim, index, src, value, reduce, base, out, &r_),
           mt_record_scatter(a, wrap0(dim, a), i0, src, kind, r_));
}
mt_status mt_index_add(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha, int64_t base,
                       mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on2(a, src)) return pub_index_add(a, dim, index, src, alpha, base, out, result);
  MT_TRY(check_write(a, out, "index_add_", "index_add"));
  WRITE_OP(pub_index_add(a, dim, index, src, alpha, base, out, &r_),
           mt_record_index_write(0, a, wrap0(dim, a), i0, src, alpha, r_));
}
mt_status mt_index_copy_(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int64_t base) {
  if (!a || !mt_grad_on2(a, src)) return pub_index_copy_(a, dim, index, src, base);
  MT_TRY(check_write(a, a, "index_copy_", "index_copy_"));
  mt_tensor **result = NULL;
  WRITE_OP(pub_index_copy_(a, dim, index, src, base), mt_record_index_write(1, a, wrap0(dim, a), i0, src, 1, a));
}
mt_status mt_index_fill_(mt_tensor *a, int dim, mt_tensor *index, double value, int64_t base) {
  if (!a || !mt_grad_on1(a)) return pub_index_fill_(a, dim, index, value, base);
  MT_TRY(check_write(a, a, "index_fill_", "index_fill_"));
  mt_tensor **result = NULL;
  WRITE_OP(pub_index_fill_(a, dim, index, value, base), mt_record_index_write(2, a, wrap0(dim, a), i0, NULL, 0, a));
}
mt_status mt_masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on2(a, value)) return pub_masked_fill_tensor(a, mask, value, out, result);
  MT_TRY(check_write(a, out, "masked_fill_", "masked_fill"));
  mt_tensor *index = NULL;
  int64_t base = 0;
  WRITE_OP(pub_masked_fill_tensor(a, mask, value, out, &r_), mt_record_masked_fill_tensor(a, mask, value, r_));
}
mt_status mt_masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_masked_select(a, mask, result);
  mt_tensor *index = NULL;
  int64_t base = 0;
  WRITE_OP(pub_masked_select(a, mask, &r_), mt_record_masked_select(a, mask, r_));
}
mt_status mt_masked_scatter_(mt_tensor *a, mt_tensor *mask, mt_tensor *src) {
  if (!a || !mt_grad_on2(a, src)) return pub_masked_scatter_(a, mask, src);
  MT_TRY(check_write(a, a, "masked_scatter_", "masked_scatter_"));
  mt_tensor *index = NULL, **result = NULL;
  int64_t base = 0;
  WRITE_OP(pub_masked_scatter_(a, mask, src), mt_record_masked_scatter(a, mask, src, a));
}
/* advanced indexing: the same indexing of a's positions tells the backward where elements came from */
mt_status mt_index(mt_tensor *a, mt_tensor **indices, int n, int64_t base, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_index(a, indices, n, base, result);
  mt_tensor *pos = NULL, *p = NULL, *r = NULL;
  MT_TRY(MT_NOGRAD(pub_index(a, indices, n, base, &r)));
  mt_status s = mt_grad_positions(a, &pos);
  if (s == MT_OK) s = MT_NOGRAD(pub_index(pos, indices, n, base, &p));
  if (s == MT_OK) s = mt_record_gather_flat(MT_GF_INDEX, a, p, 0, r);
  mt_tensor_release(pos);
  mt_tensor_release(p);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}
mt_status mt_index_put_(mt_tensor *a, mt_tensor **indices, int n, mt_tensor *values, int accumulate, int64_t base) {
  if (!a || !mt_grad_on2(a, values)) return pub_index_put_(a, indices, n, values, accumulate, base);
  MT_TRY(check_write(a, a, "index_put_", "index_put_"));
  mt_tensor *pos = NULL, *p = NULL;
  mt_status s = mt_grad_positions(a, &pos);
  if (s == MT_OK) s = MT_NOGRAD(pub_index(pos, indices, n, base, &p));
  if (s == MT_OK) s = MT_NOGRAD(pub_index_put_(a, indices, n, values, accumulate, base));
  if (s == MT_OK) s = mt_record_index_put(a, values, p, accumulate, a);
  mt_tensor_release(pos);
  mt_tensor_release(p);
  return s;
}
mt_status mt_diag(mt_tensor *a, int64_t diagonal, mt_tensor **result) {
  if (!a || !mt_grad_on1(a) || (a->_ndim != 1 && a->_ndim != 2)) return pub_diag(a, diagonal, result);
  mt_tensor *pos = NULL, *p = NULL, *r = NULL;
  MT_TRY(MT_NOGRAD(pub_diag(a, diagonal, &r)));
  mt_status s = MT_OK;
  if (a->_ndim == 2) {
    s = mt_grad_positions(a, &pos);
    if (s == MT_OK) s = MT_NOGRAD(pub_diag(pos, diagonal, &p));
  }
  if (s == MT_OK) s = mt_record_gather_flat(MT_GF_DIAG, a, p, diagonal, r);
  mt_tensor_release(pos);
  mt_tensor_release(p);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}
mt_status mt_triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_triangle(a, diagonal, upper, out, result);
  MT_TRY(check_write(a, out, upper ? "triu_" : "tril_", upper ? "triu" : "tril"));
  mt_tensor *index = NULL;
  int64_t base = 0;
  WRITE_OP(pub_triangle(a, diagonal, upper, out, &r_), mt_record_triangle(a, diagonal, upper, r_));
}
