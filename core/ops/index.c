/* index.c -- the front doors of indexing and creation: cat, stack, index_select, gather,
 * scatter, index_add, index_fill_, index_copy_, masked_fill/select/scatter, nonzero, advanced
 * indexing (index, index_put_), arange, linspace, logspace, eye, diag, tril/triu, one_hot. They
 * check arguments and shapes and make the results; the kernels check the values of index tensors
 * (core/tensor/index.c). */
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>

#define CHECK(t, op, arg) MT_TRY(mt_check_tensor((t), (op), (arg)))
#define SAME_DEVICE(op, a, b) MT_TRY(mt_check_same_device((op), (a), (b)))
#define KERNEL(op_id, t) MT_TRY(mt_check_kernel((op_id), (t)))

static bool same_shape(const mt_tensor *a, const mt_tensor *b) {
  if (a->_ndim != b->_ndim) return false;
  for (int i = 0; i < a->_ndim; i++)
    if (a->_sizes[i] != b->_sizes[i]) return false;
  return true;
}

static bool is_index_dtype(int dt) { return dt == MT_INT64 || dt == MT_INT32; }

/* ---------------------------------------------------------------- cat, stack */
static mt_status cat(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  if (!ts || n <= 0) return mt_error(MT_EINVAL, "cat: expected a non-empty list of Tensors");
  int ref = -1, dtype = -1;
  for (int i = 0; i < n; i++) {
    if (!ts[i]) return mt_error(MT_EINVAL, "cat: expected a tensor at position %d, got nothing", i);
    MT_TRY(mt_check_tensor(ts[i], "cat", "tensors"));
    SAME_DEVICE("cat", ts[0], ts[i]);
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
  KERNEL(MT_OP_CAT, r0);
  MT_TRY(mt_new(mt_device_of(r0), sizes, r0->_ndim, dtype, "cat", &r));
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
  return mt_deliver(r, out, result, "cat");
}

static mt_status stack(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  if (!ts || n <= 0) return mt_error(MT_EINVAL, "stack: stack expects a non-empty TensorList");
  for (int i = 0; i < n; i++) {
    if (!ts[i]) return mt_error(MT_EINVAL, "stack: expected a tensor at position %d, got nothing", i);
    MT_TRY(mt_check_tensor(ts[i], "stack", "tensors"));
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

/* ---------------------------------------------------------------- index_select, gather */
static mt_status index_select(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out,
                              mt_tensor **result) {
  const char *op = "index_select";
  CHECK(a, op, "input");
  CHECK(index, op, "index");
  SAME_DEVICE(op, a, index);
  KERNEL(MT_OP_INDEX_SELECT, a);
  if (!is_index_dtype(index->_dtype))
    return mt_error(MT_EDTYPE, "%s: expected dtype int32 or int64 for index, got %s", op, mt_dtype_name(index->_dtype));
  if (index->_ndim > 1)
    return mt_error(MT_ESHAPE, "%s: index is supposed to be a vector, got a tensor of size %s", op, MT_SHAPE(index));
  MT_TRY(mt_wrap_dim(dim, a->_ndim, op, &dim));
  int64_t nidx = index->_numel;
  if (a->_ndim == 0 && nidx != 1)
    return mt_error(MT_ESHAPE, "%s: index to a 0-dim tensor can have only 1 value, got %lld", op, (long long)nidx);
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, a->_sizes, sizeof sizes);
  if (a->_ndim) sizes[dim] = nidx;
  mt_tensor *r;
  MT_TRY(mt_new(mt_device_of(a), sizes, a->_ndim, a->_dtype, op, &r));
  mt_status s = mt_kernels_of(a)->index_select(r, a, dim, index, base);
  if (s) { mt_tensor_release(r); return s; }
  return mt_deliver(r, out, result, op);
}

static mt_status gather(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out, mt_tensor **result) {
  const char *op = "gather";
  CHECK(a, op, "input");
  CHECK(index, op, "index");
  SAME_DEVICE(op, a, index);
  KERNEL(MT_OP_GATHER, a);
  if (index->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: expected dtype int64 for index, got %s", op, mt_dtype_name(index->_dtype));
  MT_TRY(mt_wrap_dim(dim, a->_ndim, op, &dim));
  int and_ = a->_ndim ? a->_ndim : 1, ind = index->_ndim ? index->_ndim : 1;
  if (and_ != ind)
    return mt_error(MT_ESHAPE, "%s: index tensor must have the same number of dimensions as input tensor (%d and %d)",
                    op, index->_ndim, a->_ndim);
  for (int d = 0; d < and_; d++) {
    int64_t is = index->_ndim ? index->_sizes[d] : 1, as = a->_ndim ? a->_sizes[d] : 1;
    if (d != dim && is > as)
      return mt_error(MT_ESHAPE,
                      "%s: size does not match at dimension %lld: expected index %s to be smaller than self %s apart "
                      "from dimension %lld",
                      op, (long long)(d + base), MT_SHAPE(index), MT_SHAPE(a), (long long)(dim + base));
  }
  mt_tensor *r;
  MT_TRY(mt_new(mt_device_of(a), index->_sizes, index->_ndim, a->_dtype, op, &r));
  mt_status s = mt_kernels_of(a)->gather(r, a, dim, index, base);
  if (s) { mt_tensor_release(r); return s; }
  return mt_deliver(r, out, result, op);
}

/* ---------------------------------------------------------------- writes */
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
  return mt_deliver(t, out, result, op);
}

static mt_status scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double value, int reduce,
                         int64_t base, mt_tensor *out, mt_tensor **result) {
  const char *op = reduce == 1 && src ? "scatter_add" : "scatter";
  CHECK(a, op, "self");
  CHECK(index, op, "index");
  if (src) CHECK(src, op, "src");
  SAME_DEVICE(op, a, index);
  SAME_DEVICE(op, a, src);
  KERNEL(MT_OP_SCATTER, a);
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
  mt_tensor *t, *s1 = NULL;
  MT_TRY(write_target(a, out, &t));
  mt_status s = unaliased(src, t, &s1);
  if (s == MT_OK) s = mt_kernels_of(t)->scatter(t, dim, index, s1, value, reduce, base);
  if (s == MT_OK && index->_numel > 0) mt_bump_version(t);
  mt_tensor_release(s1);
  if (s) { mt_tensor_release(t); return s; }
  return finish_write(t, a, out, result, op);
}

/* Shared checks of index_add/index_copy_: a 1-D index, src of self's shape except along dim. */
static mt_status check_index_src(mt_tensor *a, int *dim, mt_tensor *index, mt_tensor *src, int64_t base,
                                 const char *op, int int32_ok) {
  CHECK(a, op, "self");
  CHECK(index, op, "index");
  CHECK(src, op, "source");
  SAME_DEVICE(op, a, index);
  SAME_DEVICE(op, a, src);
  KERNEL(MT_OP_INDEX_ADD, a);
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

/* self[..., idx[j], ...] (op)= src[..., j, ...] over src's shape */
static mt_status index_write(mt_tensor *t, int dim, mt_tensor *index, mt_tensor *src, int kind, double alpha,
                             int64_t base) {
  mt_tensor *s0 = NULL;
  MT_TRY(unaliased(src, t, &s0));
  mt_status s = mt_kernels_of(t)->index_write(t, dim, index, s0, kind, alpha, base);
  if (s == MT_OK && s0->_numel > 0) mt_bump_version(t);
  mt_tensor_release(s0);
  return s;
}

static mt_status index_add(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha, int64_t base,
                           mt_tensor *out, mt_tensor **result) {
  const char *op = "index_add";
  MT_TRY(check_index_src(a, &dim, index, src, base, op, 1));
  mt_tensor *t;
  MT_TRY(write_target(a, out, &t));
  mt_status s = index_write(t, dim, index, src, MT_INDEX_ADD, alpha, base);
  if (s) { mt_tensor_release(t); return s; }
  return finish_write(t, a, out, result, op);
}

static mt_status index_copy_(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int64_t base) {
  MT_TRY(check_index_src(a, &dim, index, src, base, "index_copy_", 0));
  return index_write(a, dim, index, src, MT_INDEX_COPY, 1.0, base);
}

static mt_status index_fill_(mt_tensor *a, int dim, mt_tensor *index, double value, int64_t base) {
  const char *op = "index_fill_";
  CHECK(a, op, "self");
  CHECK(index, op, "index");
  SAME_DEVICE(op, a, index);
  KERNEL(MT_OP_INDEX_FILL, a);
  if (index->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: expected dtype int64 for index, got %s", op, mt_dtype_name(index->_dtype));
  if (index->_ndim > 1)
    return mt_error(MT_ESHAPE, "%s: index has to be a vector or a scalar, got a tensor of size %s", op,
                    MT_SHAPE(index));
  MT_TRY(mt_wrap_dim(dim, a->_ndim, op, &dim));
  MT_TRY(mt_kernels_of(a)->index_fill(a, dim, index, value, base));
  if (index->_numel > 0 && a->_numel > 0) mt_bump_version(a);
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

static mt_status masked_fill(mt_tensor *a, mt_tensor *mask, double value, mt_tensor *out, mt_tensor **result) {
  const char *op = out == a ? "masked_fill_" : "masked_fill";
  CHECK(a, op, "self");
  MT_TRY(check_mask(mask, op));
  SAME_DEVICE(op, a, mask);
  KERNEL(MT_OP_MASKED_FILL, a);
  mt_tensor *t, *m0, *m;
  if (out == a) {
    t = mt_tensor_retain(a);
  } else {
    int64_t bs[MT_MAX_DIMS];
    int bn;
    MT_TRY(mt_broadcast_shapes(a->_sizes, a->_ndim, mask->_sizes, mask->_ndim, bs, &bn));
    MT_TRY(mt_new(mt_device_of(a), bs, bn, a->_dtype, op, &t));
    mt_status s = mt_copy_(t, a);
    if (s) { mt_tensor_release(t); return s; }
  }
  mt_status s = unaliased(mask, t, &m0);
  if (s == MT_OK) {
    s = mask_to(m0, t->_sizes, t->_ndim, op, "self", &m);
    mt_tensor_release(m0);
  }
  if (s) { mt_tensor_release(t); return s; }
  if (t->_numel > 0) mt_bump_version(t);
  s = mt_kernels_of(t)->masked_fill(t, m, value);
  mt_tensor_release(m);
  if (s) { mt_tensor_release(t); return s; }
  return finish_write(t, a, out, result, op);
}

static mt_status masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out,
                                    mt_tensor **result) {
  const char *op = out == a ? "masked_fill_" : "masked_fill";
  CHECK(value, op, "value");
  if (value->_ndim != 0)
    return mt_error(MT_ESHAPE, "%s: only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)",
                    op, value->_ndim);
  double v;
  MT_TRY(mt_tensor_item(value, &v));
  return mt_masked_fill(a, mask, v, out, result);
}

static mt_status masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor **result) {
  const char *op = "masked_select";
  CHECK(a, op, "input");
  MT_TRY(check_mask(mask, op));
  SAME_DEVICE(op, a, mask);
  KERNEL(MT_OP_MASKED_SELECT, a);
  int64_t bs[MT_MAX_DIMS];
  int bn;
  MT_TRY(mt_broadcast_shapes(a->_sizes, a->_ndim, mask->_sizes, mask->_ndim, bs, &bn));
  mt_tensor *ae, *me;
  MT_TRY(mt_expand(a, bs, bn, &ae));
  mt_status s = mt_expand(mask, bs, bn, &me);
  if (s == MT_OK) {
    s = mt_kernels_of(a)->masked_select(ae, me, result);
    mt_tensor_release(me);
  }
  mt_tensor_release(ae);
  return s;
}

static mt_status masked_scatter_(mt_tensor *a, mt_tensor *mask, mt_tensor *src) {
  const char *op = "masked_scatter_";
  CHECK(a, op, "self");
  MT_TRY(check_mask(mask, op));
  CHECK(src, op, "source");
  SAME_DEVICE(op, a, mask);
  SAME_DEVICE(op, a, src);
  KERNEL(MT_OP_MASKED_SCATTER, a);
  if (src->_dtype != a->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected self and source to have the same dtype, but got %s and %s", op,
                    mt_dtype_name(a->_dtype), mt_dtype_name(src->_dtype));
  mt_tensor *me, *m0, *sc = NULL;
  MT_TRY(unaliased(mask, a, &m0));
  mt_status s = mask_to(m0, a->_sizes, a->_ndim, op, "self", &me);
  mt_tensor_release(m0);
  if (s) return s;
  /* the source packed (a copy when it shares memory with self) */
  if (mt_may_overlap(src, a)) s = mt_clone(src, &sc);
  else s = mt_contiguous(src, &sc);
  if (s == MT_OK) s = mt_kernels_of(a)->masked_scatter(a, me, sc);
  if (s == MT_OK && me->_numel > 0) mt_bump_version(a);
  mt_tensor_release(sc);
  mt_tensor_release(me);
  return s;
}

mt_status mt_nonzero(mt_tensor *a, int64_t base, mt_tensor **result) {
  CHECK(a, "nonzero", "input");
  KERNEL(MT_OP_NONZERO, a);
  return mt_kernels_of(a)->nonzero(a, base, result);
}

/* ---------------------------------------------------------------- advanced indexing */
/* a[indices...]: each index tensor (long, int, or a bool/byte mask standing for the positions of
 * its true values) consumes dims of a from the first; the long index tensors, broadcast together,
 * pick elements of `w` (a, with a unit dim for each 0-dim mask) along its first `k` dims. */
typedef struct {
  mt_tensor *w;
  int k;
  mt_tensor *idx[MT_MAX_DIMS]; /* expanded to the broadcast shape */
  int raw[MT_MAX_DIMS];        /* 1: values in the caller's base (and -1 counting from the end) */
  int bnd;
  int64_t bshape[MT_MAX_DIMS];
} adv_index;

static void adv_free(adv_index *ai) {
  mt_tensor_release(ai->w);
  for (int i = 0; i < ai->k; i++) mt_tensor_release(ai->idx[i]);
}

static mt_status adv_prepare(mt_tensor *a, mt_tensor **indices, int n, int64_t base, const char *op, adv_index *ai) {
  memset(ai, 0, sizeof *ai);
  CHECK(a, op, "self");
  if (n < 0 || (n > 0 && !indices)) return mt_error(MT_EINVAL, "%s: bad list of indices", op);
  mt_tensor **lt = ai->idx; /* long index tensors, one per consumed dim */
  int *raw = ai->raw;
  int nl = 0;
  mt_status s = MT_OK;
  mt_tensor *w = mt_tensor_retain(a);
  int d = 0;
  for (int i = 0; i < n && s == MT_OK; i++) {
    mt_tensor *t = indices[i];
    if (!t) { s = mt_error(MT_EINVAL, "%s: index %d is missing (nil)", op, i + (int)base); break; }
    if ((s = mt_check_tensor(t, op, "indices"))) break;
    /* index tensors on a's device, or on the CPU (as lists of positions made by the caller) */
    if (t->_device_type != MT_CPU && (s = mt_check_same_device(op, a, t))) break;
    if (t->_dtype == MT_BOOL || t->_dtype == MT_UINT8) {
      int km = t->_ndim;
      if (km == 0) {
        /* a 0-dim mask adds a unit dim, kept when true */
        mt_tensor *w2;
        if (w->_ndim >= MT_MAX_DIMS) { s = mt_error(MT_EINVAL, "%s: too many dimensions", op); break; }
        if ((s = mt_unsqueeze(w, d, &w2))) break;
        mt_tensor_release(w);
        w = w2;
        double v;
        if ((s = mt_tensor_item(t, &v))) break;
        int64_t cnt = v != 0 ? 1 : 0;
        mt_device dev = mt_device_of(t);
        if ((s = mt_tensor_full(&cnt, 1, MT_INT64, 0, &dev, &lt[nl]))) break;
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
  ai->w = w;
  ai->k = nl;
  /* the broadcast shape of the index tensors */
  int64_t *bs = ai->bshape;
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
  ai->bnd = bn;
  for (int i = 0; i < nl && s == MT_OK; i++) {
    mt_tensor *e;
    if ((s = mt_expand(lt[i], bs, bn, &e))) break;
    mt_tensor_release(lt[i]);
    lt[i] = e;
  }
  if (s) adv_free(ai);
  return s;
}

/* the shape of a[indices...]: the broadcast index shape, then w's dims the indices left */
static mt_status adv_shape(const adv_index *ai, const char *op, int64_t *sizes, int *nd) {
  int n = ai->bnd + ai->w->_ndim - ai->k;
  if (n > MT_MAX_DIMS)
    return mt_error(MT_EINVAL, "%s: the result would have %d dimensions, at most %d are supported", op, n, MT_MAX_DIMS);
  *nd = 0;
  for (int i = 0; i < ai->bnd; i++) sizes[(*nd)++] = ai->bshape[i];
  for (int i = ai->k; i < ai->w->_ndim; i++) sizes[(*nd)++] = ai->w->_sizes[i];
  return MT_OK;
}

static mt_status index_tensors(mt_tensor *a, mt_tensor **indices, int n, int64_t base, mt_tensor **result) {
  const char *op = "index";
  adv_index ai;
  CHECK(a, op, "self");
  KERNEL(MT_OP_INDEX, a);
  MT_TRY(adv_prepare(a, indices, n, base, op, &ai));
  int64_t sizes[MT_MAX_DIMS];
  int nd;
  mt_tensor *r = NULL;
  mt_status s = adv_shape(&ai, op, sizes, &nd);
  if (s == MT_OK) s = mt_new(mt_device_of(a), sizes, nd, a->_dtype, op, &r);
  if (s == MT_OK) s = mt_kernels_of(a)->index(r, ai.w, ai.k, ai.idx, ai.raw, base);
  adv_free(&ai);
  if (s) { mt_tensor_release(r); return s; }
  *result = r;
  return MT_OK;
}

static mt_status index_put_(mt_tensor *a, mt_tensor **indices, int n, mt_tensor *values, int accumulate,
                            int64_t base) {
  const char *op = "index_put_";
  CHECK(a, op, "self");
  CHECK(values, op, "values");
  MT_TRY(mt_check_same_device_or_scalar(op, a, values));
  KERNEL(MT_OP_INDEX_PUT, a);
  if (values->_dtype != a->_dtype)
    return mt_error(MT_EDTYPE,
                    "%s: index_put_ requires the source and destination dtypes to match, got %s for the destination "
                    "and %s for the source",
                    op, mt_dtype_name(a->_dtype), mt_dtype_name(values->_dtype));
  adv_index ai;
  MT_TRY(adv_prepare(a, indices, n, base, op, &ai));
  int64_t sizes[MT_MAX_DIMS];
  int nd = 0;
  mt_tensor *ve = NULL, *vc = NULL;
  mt_status s = adv_shape(&ai, op, sizes, &nd);
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
  if (s == MT_OK) s = mt_kernels_of(a)->index_put(ai.w, ai.k, ai.idx, ai.raw, vc, accumulate, base);
  if (s == MT_OK && vc->_numel > 0) mt_bump_version(a);
  mt_tensor_release(ve);
  mt_tensor_release(vc);
  adv_free(&ai);
  return s;
}

/* ---------------------------------------------------------------- creation */
mt_status mt_arange(double start, double end, double step, int dtype, const mt_device *device, mt_tensor **result) {
  const char *op = "arange";
  mt_device dev = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, op, &dev));
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: invalid dtype %d", op, dtype);
  if (dtype == MT_BOOL) return mt_error(MT_EDTYPE, "%s: not implemented for 'bool'", op);
  bool integral = !mt_is_float(dtype);
  if (!isfinite(start) || !isfinite(end))
    return mt_error(MT_EINVAL, "%s: unsupported range: %g -> %g", op, start, end);
  double size_d;
  if (integral) {
    if (fabs(start) > 9.2e18 || fabs(end) > 9.2e18 || fabs(step) > 9.2e18)
      return mt_error(MT_EINVAL, "%s: unsupported range: %g -> %g", op, start, end);
    int64_t is = (int64_t)start, ie = (int64_t)end, ist = (int64_t)step;
    if (ist == 0) return mt_error(MT_EINVAL, "%s: step must be nonzero", op);
    if (dtype == MT_INT64) size_d = ceil((double)(ie - is) / (double)ist);
    else size_d = ceil((end - start) / step);
    if (!((ist > 0 && ie >= is) || (ist < 0 && ie <= is)))
      return mt_error(MT_EINVAL, "%s: upper bound and larger bound inconsistent with step sign", op);
    start = (double)is;
    step = (double)ist;
  } else {
    if (step == 0 || isnan(step)) return mt_error(MT_EINVAL, "%s: step must be nonzero", op);
    size_d = ceil((end - start) / step);
    if (!((step > 0 && end >= start) || (step < 0 && end <= start)))
      return mt_error(MT_EINVAL, "%s: upper bound and larger bound inconsistent with step sign", op);
  }
  if (!(size_d >= 0 && size_d <= 9.2e18)) return mt_error(MT_EINVAL, "%s: invalid size, possible overflow?", op);
  int64_t n = (int64_t)size_d;
  mt_tensor *r;
  MT_TRY(mt_new(dev, &n, 1, dtype, op, &r));
  mt_status s = mt_kernels_of(r)->arange(r, start, step);
  if (s) { mt_tensor_release(r); return s; }
  *result = r;
  return MT_OK;
}

static mt_status spaced(double start, double end, int64_t steps, double base, int log, int dtype,
                        const mt_device *device, const char *op, mt_tensor **result) {
  mt_device dev = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, op, &dev));
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: invalid dtype %d", op, dtype);
  if (dtype == MT_BOOL) return mt_error(MT_EDTYPE, "%s: not implemented for 'bool'", op);
  if (steps < 0) return mt_error(MT_EINVAL, "%s: number of steps must be non-negative", op);
  mt_tensor *r;
  MT_TRY(mt_new(dev, &steps, 1, dtype, op, &r));
  mt_status s = mt_kernels_of(r)->linspace(r, start, end, base, log);
  if (s) { mt_tensor_release(r); return s; }
  *result = r;
  return MT_OK;
}

mt_status mt_linspace(double start, double end, int64_t steps, int dtype, const mt_device *device,
                      mt_tensor **result) {
  return spaced(start, end, steps, 10.0, 0, dtype, device, "linspace", result);
}

mt_status mt_logspace(double start, double end, int64_t steps, double base, int dtype, const mt_device *device,
                      mt_tensor **result) {
  return spaced(start, end, steps, base, 1, dtype, device, "logspace", result);
}

/* eye: zeros with ones on the diagonal (a fill of its diagonal view) */
mt_status mt_eye(int64_t n, int64_t m, int dtype, const mt_device *device, mt_tensor **result) {
  const char *op = "eye";
  if (n < 0) return mt_error(MT_EINVAL, "%s: n must be greater or equal to 0, got %lld", op, (long long)n);
  if (m < 0) return mt_error(MT_EINVAL, "%s: m must be greater or equal to 0, got %lld", op, (long long)m);
  int64_t sizes[2] = {n, m};
  mt_tensor *r, *d = NULL;
  MT_TRY(mt_tensor_full(sizes, 2, dtype, 0, device, &r));
  mt_status s = mt_diagonal(r, 0, 0, 1, &d);
  if (s == MT_OK) s = mt_fill_(d, 1.0);
  mt_tensor_release(d);
  if (s) { mt_tensor_release(r); return s; }
  *result = r;
  return MT_OK;
}

static mt_status diag(mt_tensor *a, int64_t diagonal, mt_tensor **result) {
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
  MT_TRY(mt_new(mt_device_of(a), sizes, 2, a->_dtype, op, &r));
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

static mt_status triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out, mt_tensor **result) {
  const char *op = upper ? "triu" : "tril";
  CHECK(a, op, "input");
  KERNEL(upper ? MT_OP_TRIU : MT_OP_TRIL, a);
  if (a->_ndim < 2)
    return mt_error(MT_ESHAPE, "%s: input tensor must have at least 2 dimensions, got %d", op, a->_ndim);
  mt_tensor *t;
  MT_TRY(write_target(a, out, &t));
  if (t->_numel > 0) mt_bump_version(t);
  /* beyond rows + cols every diagonal keeps (or zeroes) the same: clamped, i + k cannot overflow */
  int64_t lim = t->_sizes[t->_ndim - 2] + t->_sizes[t->_ndim - 1];
  if (diagonal > lim) diagonal = lim;
  if (diagonal < -lim) diagonal = -lim;
  mt_status s = mt_kernels_of(t)->triangle(t, diagonal, upper);
  if (s) { mt_tensor_release(t); return s; }
  return finish_write(t, a, out, result, op);
}

mt_status mt_one_hot(mt_tensor *index, int64_t num_classes, int64_t base, mt_tensor **result) {
  const char *op = "one_hot";
  CHECK(index, op, "input");
  KERNEL(MT_OP_ONE_HOT, index);
  if (index->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: one_hot is only applicable to index tensors of dtype int64, got %s", op,
                    mt_dtype_name(index->_dtype));
  if (index->_ndim + 1 > MT_MAX_DIMS) return mt_error(MT_EINVAL, "%s: too many dimensions", op);
  if (num_classes < -1)
    return mt_error(MT_EINVAL, "%s: num_classes must be -1 or non-negative, got %lld", op, (long long)num_classes);
  return mt_kernels_of(index)->one_hot(index, num_classes, base, result);
}

/* ---------------------------------------------------------------- the front doors */
mt_status mt_cat(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  bool rec = false;
  for (int i = 0; ts && i < n; i++) rec = rec || mt_records(ts[i]);
  if (rec && mt_autograd.cat) return mt_autograd.cat(ts, n, dim, out, result);
  return cat(ts, n, dim, out, result);
}

mt_status mt_stack(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  bool rec = false;
  for (int i = 0; ts && i < n; i++) rec = rec || mt_records(ts[i]);
  if (rec && mt_autograd.stack) return mt_autograd.stack(ts, n, dim, out, result);
  return stack(ts, n, dim, out, result);
}

mt_status mt_index_select(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.index_select) return mt_autograd.index_select(a, dim, index, base, out, result);
  return index_select(a, dim, index, base, out, result);
}

mt_status mt_gather(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.gather) return mt_autograd.gather(a, dim, index, base, out, result);
  return gather(a, dim, index, base, out, result);
}

mt_status mt_scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double value, int reduce, int64_t base,
                     mt_tensor *out, mt_tensor **result) {
  if (a && mt_records2(a, src) && mt_autograd.scatter)
    return mt_autograd.scatter(a, dim, index, src, value, reduce, base, out, result);
  return scatter(a, dim, index, src, value, reduce, base, out, result);
}

mt_status mt_index_add(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha, int64_t base,
                       mt_tensor *out, mt_tensor **result) {
  if (a && mt_records2(a, src) && mt_autograd.index_add)
    return mt_autograd.index_add(a, dim, index, src, alpha, base, out, result);
  return index_add(a, dim, index, src, alpha, base, out, result);
}

mt_status mt_index_copy_(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int64_t base) {
  if (a && mt_records2(a, src) && mt_autograd.index_copy_) return mt_autograd.index_copy_(a, dim, index, src, base);
  return index_copy_(a, dim, index, src, base);
}

mt_status mt_index_fill_(mt_tensor *a, int dim, mt_tensor *index, double value, int64_t base) {
  if (mt_records(a) && mt_autograd.index_fill_) return mt_autograd.index_fill_(a, dim, index, value, base);
  return index_fill_(a, dim, index, value, base);
}

mt_status mt_masked_fill(mt_tensor *a, mt_tensor *mask, double value, mt_tensor *out, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.masked_fill) return mt_autograd.masked_fill(a, mask, value, out, result);
  return masked_fill(a, mask, value, out, result);
}

mt_status mt_masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out, mt_tensor **result) {
  if (a && mt_records2(a, value) && mt_autograd.masked_fill_tensor)
    return mt_autograd.masked_fill_tensor(a, mask, value, out, result);
  return masked_fill_tensor(a, mask, value, out, result);
}

mt_status mt_masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.masked_select) return mt_autograd.masked_select(a, mask, result);
  return masked_select(a, mask, result);
}

mt_status mt_masked_scatter_(mt_tensor *a, mt_tensor *mask, mt_tensor *src) {
  if (a && mt_records2(a, src) && mt_autograd.masked_scatter_) return mt_autograd.masked_scatter_(a, mask, src);
  return masked_scatter_(a, mask, src);
}

mt_status mt_index(mt_tensor *a, mt_tensor **indices, int n, int64_t base, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.index) return mt_autograd.index(a, indices, n, base, result);
  return index_tensors(a, indices, n, base, result);
}

mt_status mt_index_put_(mt_tensor *a, mt_tensor **indices, int n, mt_tensor *values, int accumulate, int64_t base) {
  if (a && mt_records2(a, values) && mt_autograd.index_put_)
    return mt_autograd.index_put_(a, indices, n, values, accumulate, base);
  return index_put_(a, indices, n, values, accumulate, base);
}

mt_status mt_diag(mt_tensor *a, int64_t diagonal, mt_tensor **result) {
  if (mt_records(a) && (a->_ndim == 1 || a->_ndim == 2) && mt_autograd.diag) return mt_autograd.diag(a, diagonal, result);
  return diag(a, diagonal, result);
}

mt_status mt_triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.triangle) return mt_autograd.triangle(a, diagonal, upper, out, result);
  return triangle(a, diagonal, upper, out, result);
}
