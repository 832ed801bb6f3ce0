/* sort.c -- the front doors of ordering and rearranging: sort, topk, unique, searchsorted,
 * bincount, flip, roll, repeat, repeat_interleave. The rearranging ops describe their result as
 * per-dim tables of source offsets (pure shape arithmetic) for the rearrange kernel. */
#include "dispatch.h"

#include <stdlib.h>

static void release2(mt_tensor *a, mt_tensor *b) {
  if (a) mt_tensor_release(a);
  if (b) mt_tensor_release(b);
}

/* r (contiguous, fresh) from the contiguous src through one table over their elements in order */
static mt_status flat_rearrange(mt_tensor *r, mt_tensor *src, int64_t *const *maps) {
  int64_t n = r->_numel, one = 1, m = src->_numel;
  mt_tensor *rv = NULL, *sv = NULL;
  mt_status s = mt_new_view(r, &n, &one, 1, r->_offset, &rv);
  if (s == MT_OK) s = mt_new_view(src, &m, &one, 1, src->_offset, &sv);
  if (s == MT_OK) s = mt_kernels_of(src)->rearrange(rv, sv, maps);
  release2(rv, sv);
  return s;
}

/* ---------------------------------------------------------------- sort / topk */
/* Sort (or keep the first k of the sorted) lines of `a` along `dim`. */
static mt_status sort_impl(mt_tensor *a, int d, int desc, int64_t k, int64_t base, const char *op,
                           mt_tensor **values, mt_tensor **indices) {
  int64_t sizes[MT_MAX_DIMS];
  int nd = a->_ndim;
  for (int i = 0; i < nd; i++) sizes[i] = a->_sizes[i];
  if (nd) sizes[d] = k;
  mt_tensor *v = NULL, *ix = NULL;
  mt_status s;
  if ((s = mt_new(mt_device_of(a), sizes, nd, a->_dtype, op, &v)) != MT_OK) return s;
  if ((s = mt_new(mt_device_of(a), sizes, nd, MT_INT64, op, &ix)) != MT_OK) goto fail;
  if ((s = mt_kernels_of(a)->sort(v, ix, a, d, desc, base)) != MT_OK) goto fail;
  mt_give(v, values);
  mt_give(ix, indices);
  return MT_OK;
fail:
  release2(v, ix);
  return s;
}

static mt_status sort(mt_tensor *a, int dim, int descending, int stable, int64_t index_base, mt_tensor **values,
                      mt_tensor **indices) {
  (void)stable; /* always stable */
  MT_TRY(mt_check_tensor(a, "sort", "input"));
  MT_TRY(mt_check_kernel(MT_OP_SORT, a));
  int d;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, "sort", &d));
  int64_t n = a->_ndim ? a->_sizes[d] : 1;
  return sort_impl(a, d, descending, n, index_base, "sort", values, indices);
}

static mt_status topk(mt_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base,
                      mt_tensor **values, mt_tensor **indices) {
  (void)sorted; /* the kept elements always come out in sorted order, which `sorted=false` allows */
  MT_TRY(mt_check_tensor(a, "topk", "input"));
  MT_TRY(mt_check_kernel(MT_OP_TOPK, a));
  int d;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, "topk", &d));
  if (a->_dtype == MT_BOOL) return mt_error(MT_EDTYPE, "topk: not implemented for bool tensors");
  int64_t n = a->_ndim ? a->_sizes[d] : 1;
  if (k < 0 || k > n)
    return mt_error(MT_ERANGE, "topk: selected index k out of range (k = %lld, dimension %lld has size %lld)",
                    (long long)k, MT_D(d), (long long)n);
  return sort_impl(a, d, largest, k, index_base, "topk", values, indices);
}

/* ---------------------------------------------------------------- unique, searchsorted, bincount */
mt_status mt_unique(mt_tensor *a, int sorted, int return_inverse, int return_counts, int64_t index_base,
                    mt_tensor **values, mt_tensor **inverse, mt_tensor **counts) {
  (void)sorted; /* results always come out sorted, which `sorted=false` allows */
  MT_TRY(mt_check_tensor(a, "unique", "input"));
  MT_TRY(mt_check_kernel(MT_OP_UNIQUE, a));
  if (inverse) *inverse = NULL;
  if (counts) *counts = NULL;
  mt_tensor *v = NULL, *inv = NULL, *cnt = NULL;
  MT_TRY(mt_kernels_of(a)->unique(a, index_base, &v, return_inverse ? &inv : NULL, return_counts ? &cnt : NULL));
  mt_give(v, values);
  if (inv) mt_give(inv, inverse);
  if (cnt) mt_give(cnt, counts);
  return MT_OK;
}

mt_status mt_searchsorted(mt_tensor *sorted, mt_tensor *values, int right, int64_t index_base, mt_tensor **result) {
  MT_TRY(mt_check_tensor(sorted, "searchsorted", "sorted_sequence"));
  MT_TRY(mt_check_tensor(values, "searchsorted", "input"));
  MT_TRY(mt_check_same_device("searchsorted", sorted, values));
  MT_TRY(mt_check_kernel(MT_OP_SEARCHSORTED, sorted));
  int nb = sorted->_ndim, nv = values->_ndim;
  if (nb == 0)
    return mt_error(MT_EINVAL, "searchsorted: boundaries tensor should have positive dimension, but got 0 dimension");
  if (nb > 1) {
    bool ok = nb == nv;
    for (int i = 0; ok && i < nb - 1; i++) ok = sorted->_sizes[i] == values->_sizes[i];
    if (!ok)
      return mt_error(MT_ESHAPE,
                      "searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
                      "tensor and input value tensor must match, but we got boundaries tensor %s and input value "
                      "tensor %s",
                      MT_SHAPE(sorted), MT_SHAPE(values));
  }
  mt_tensor *r;
  MT_TRY(mt_new(mt_device_of(values), values->_sizes, nv, MT_INT64, "searchsorted", &r));
  mt_status s = mt_kernels_of(sorted)->searchsorted(r, sorted, values, right, index_base);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_bincount(mt_tensor *a, mt_tensor *weights, int64_t minlength, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "bincount", "input"));
  if (weights) MT_TRY(mt_check_tensor(weights, "bincount", "weights"));
  MT_TRY(mt_check_same_device("bincount", a, weights));
  MT_TRY(mt_check_kernel(MT_OP_BINCOUNT, a));
  if (a->_ndim != 1 || mt_is_float(a->_dtype) || a->_dtype == MT_BOOL)
    return mt_error(MT_EINVAL, "bincount: only 1-d non-negative integral inputs are supported, got a %dD %s tensor",
                    a->_ndim, mt_dtype_name(a->_dtype));
  if (weights && (weights->_ndim != 1 || weights->_sizes[0] != a->_sizes[0]))
    return mt_error(MT_ESHAPE, "bincount: weights should be 1-d and have the same length as input (input %s, weights %s)",
                    MT_SHAPE(a), MT_SHAPE(weights));
  if (minlength < 0) return mt_error(MT_EINVAL, "bincount: minlength should be >= 0, got %lld", (long long)minlength);
  return mt_kernels_of(a)->bincount(a, weights, minlength, result);
}

/* ---------------------------------------------------------------- rearranging copies */
/* Tables for `nd` result dims of the given sizes, in one block (free maps[0]'s block). */
static mt_status alloc_maps(const int64_t *sizes, int nd, const char *op, int64_t **maps, void **block) {
  int64_t total = 0;
  for (int d = 0; d < nd; d++) total += sizes[d];
  int64_t *p = malloc((size_t)total * sizeof(int64_t) + 8);
  if (!p) return mt_error(MT_ENOMEM, "%s: out of memory for index tables", op);
  *block = p;
  for (int d = 0; d < nd; d++) {
    maps[d] = p;
    p += sizes[d];
  }
  return MT_OK;
}

static int64_t pos_mod(int64_t a, int64_t n) {
  int64_t r = a % n;
  return r < 0 ? r + n : r;
}

static mt_status flip(mt_tensor *a, const int64_t *dims, int n, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "flip", "input"));
  MT_TRY(mt_check_kernel(MT_OP_FLIP, a));
  int nd = a->_ndim;
  bool flipped[MT_MAX_DIMS + 1] = {false};
  for (int i = 0; i < n; i++) {
    if (dims[i] < INT32_MIN || dims[i] > INT32_MAX)
      return mt_error(MT_ERANGE, "flip: dimension %lld out of range", (long long)dims[i]);
    int d;
    MT_TRY(mt_wrap_dim((int)dims[i], nd, "flip", &d));
    if (flipped[d]) return mt_error(MT_EINVAL, "flip: dim %lld appears multiple times in the list of dims", MT_D(d));
    flipped[d] = true;
  }
  mt_tensor *r;
  MT_TRY(mt_new(mt_device_of(a), a->_sizes, nd, a->_dtype, "flip", &r));
  if (r->_numel == 0) return mt_give(r, result); /* nothing to move (its index tables could be huge) */
  int64_t *maps[MT_MAX_DIMS];
  void *block = NULL;
  mt_status s = alloc_maps(a->_sizes, nd, "flip", maps, &block);
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  for (int d = 0; d < nd; d++) {
    int64_t m = a->_sizes[d];
    for (int64_t i = 0; i < m; i++) maps[d][i] = (flipped[d] ? m - 1 - i : i) * a->_strides[d];
  }
  mt_status s2 = mt_kernels_of(a)->rearrange(r, a, maps);
  free(block);
  if (s2) { mt_tensor_release(r); return s2; }
  return mt_give(r, result);
}

static mt_status roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int n, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "roll", "input"));
  MT_TRY(mt_check_kernel(MT_OP_ROLL, a));
  int nd = a->_ndim;
  if (n < 1) return mt_error(MT_EINVAL, "roll: `shifts` required");
  if (!dims && n != 1)
    return mt_error(MT_EINVAL, "roll: shifts and dimensions must align. shifts: %d, dims:0", n);
  int64_t shift[MT_MAX_DIMS] = {0};
  if (dims) {
    for (int i = 0; i < n; i++) {
      if (dims[i] < INT32_MIN || dims[i] > INT32_MAX)
        return mt_error(MT_ERANGE, "roll: dimension %lld out of range", (long long)dims[i]);
      int d;
      if (nd == 0)
        return mt_error(MT_ERANGE, "roll: dimension specified as %lld but tensor has no dimensions",
                        MT_D(dims[i]));
      MT_TRY(mt_wrap_dim((int)dims[i], nd, "roll", &d));
      int64_t m = a->_sizes[d];
      if (m) shift[d] = pos_mod(shift[d] + pos_mod(shifts[i], m), m);
    }
  }
  mt_tensor *r = NULL, *src = NULL;
  MT_TRY(mt_new(mt_device_of(a), a->_sizes, nd, a->_dtype, "roll", &r));
  if (r->_numel == 0) return mt_give(r, result);
  int64_t *maps[MT_MAX_DIMS];
  void *block = NULL;
  mt_status s;
  if (!dims) {
    /* flattened: roll the row-major sequence of elements */
    if ((s = mt_contiguous(a, &src)) != MT_OK) goto fail;
    int64_t m = a->_numel;
    if ((s = alloc_maps(&m, 1, "roll", maps, &block)) != MT_OK) goto fail;
    int64_t sh = m ? pos_mod(shifts[0], m) : 0;
    for (int64_t i = 0; i < m; i++) maps[0][i] = pos_mod(i - sh, m);
    if ((s = flat_rearrange(r, src, maps)) != MT_OK) goto fail;
    mt_tensor_release(src);
    src = NULL;
  } else {
    if ((s = alloc_maps(a->_sizes, nd, "roll", maps, &block)) != MT_OK) goto fail;
    for (int d = 0; d < nd; d++) {
      int64_t m = a->_sizes[d];
      for (int64_t i = 0; i < m; i++) maps[d][i] = pos_mod(i - shift[d], m) * a->_strides[d];
    }
    if ((s = mt_kernels_of(a)->rearrange(r, a, maps)) != MT_OK) goto fail;
  }
  free(block);
  return mt_give(r, result);
fail:
  free(block);
  release2(r, src);
  return s;
}

static mt_status repeat(mt_tensor *a, const int64_t *repeats, int n, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "repeat", "input"));
  MT_TRY(mt_check_kernel(MT_OP_REPEAT, a));
  int nd = a->_ndim;
  if (n < nd)
    return mt_error(MT_EINVAL,
                    "repeat: number of dimensions of repeat dims (%d) can not be smaller than number of dimensions "
                    "of tensor (%d)",
                    n, nd);
  if (n > MT_MAX_DIMS)
    return mt_error(MT_EINVAL, "repeat: %d dimensions requested, at most %d are supported", n, MT_MAX_DIMS);
  int64_t ss[MT_MAX_DIMS], st[MT_MAX_DIMS], os[MT_MAX_DIMS];
  int lead = n - nd;
  for (int d = 0; d < n; d++) {
    ss[d] = d < lead ? 1 : a->_sizes[d - lead];
    st[d] = d < lead ? 0 : a->_strides[d - lead];
    if (repeats[d] < 0)
      return mt_error(MT_EINVAL, "repeat: repeats must be non-negative, got %lld for dimension %lld",
                      (long long)repeats[d], MT_D(d));
    if (ss[d] && repeats[d] > INT64_MAX / ss[d]) return mt_error(MT_EINVAL, "repeat: result size overflows");
    os[d] = ss[d] * repeats[d];
  }
  mt_tensor *r;
  MT_TRY(mt_new(mt_device_of(a), os, n, a->_dtype, "repeat", &r));
  if (r->_numel == 0) return mt_give(r, result);
  int64_t *maps[MT_MAX_DIMS];
  void *block = NULL;
  mt_status s = alloc_maps(os, n, "repeat", maps, &block);
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  for (int d = 0; d < n; d++)
    for (int64_t i = 0; i < os[d]; i++) maps[d][i] = (i % ss[d]) * st[d];
  s = mt_kernels_of(a)->rearrange(r, a, maps);
  free(block);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status repeat_interleave(mt_tensor *a, int64_t repeats, int dim, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "repeat_interleave", "input"));
  MT_TRY(mt_check_kernel(MT_OP_REPEAT_INTERLEAVE, a));
  if (repeats < 0) return mt_error(MT_EINVAL, "repeat_interleave: repeats can not be negative, got %lld",
                                   (long long)repeats);
  int nd = a->_ndim;
  int lim = nd > 0 ? nd : 1;
  mt_tensor *r = NULL, *src = NULL;
  int64_t *maps[MT_MAX_DIMS];
  void *block = NULL;
  mt_status s;
  if (dim < -lim) {
    /* flattened */
    int64_t m = a->_numel;
    if (repeats && m > INT64_MAX / repeats) return mt_error(MT_EINVAL, "repeat_interleave: result size overflows");
    int64_t om = m * repeats;
    MT_TRY(mt_contiguous(a, &src));
    if ((s = mt_new(mt_device_of(a), &om, 1, a->_dtype, "repeat_interleave", &r)) != MT_OK) goto fail;
    if ((s = alloc_maps(&om, 1, "repeat_interleave", maps, &block)) != MT_OK) goto fail;
    for (int64_t i = 0; i < om; i++) maps[0][i] = i / repeats;
    if ((s = flat_rearrange(r, src, maps)) != MT_OK) goto fail;
    mt_tensor_release(src);
    free(block);
    return mt_give(r, result);
  }
  if (nd == 0)
    return mt_error(MT_ERANGE, "repeat_interleave: dimension specified as %lld but tensor has no dimensions",
                    MT_D(dim));
  int d;
  MT_TRY(mt_wrap_dim(dim, nd, "repeat_interleave", &d));
  int64_t os[MT_MAX_DIMS];
  for (int i = 0; i < nd; i++) os[i] = a->_sizes[i];
  if (repeats && os[d] > INT64_MAX / repeats) return mt_error(MT_EINVAL, "repeat_interleave: result size overflows");
  os[d] *= repeats;
  MT_TRY(mt_new(mt_device_of(a), os, nd, a->_dtype, "repeat_interleave", &r));
  if (r->_numel == 0) return mt_give(r, result);
  if ((s = alloc_maps(os, nd, "repeat_interleave", maps, &block)) != MT_OK) goto fail;
  for (int j = 0; j < nd; j++)
    for (int64_t i = 0; i < os[j]; i++) maps[j][i] = (j == d ? i / repeats : i) * a->_strides[j];
  if ((s = mt_kernels_of(a)->rearrange(r, a, maps)) != MT_OK) goto fail;
  free(block);
  return mt_give(r, result);
fail:
  free(block);
  release2(r, src);
  return s;
}

/* ---------------------------------------------------------------- the front doors */
mt_status mt_sort(mt_tensor *a, int dim, int descending, int stable, int64_t index_base, mt_tensor **values,
                  mt_tensor **indices) {
  if (mt_records(a) && mt_autograd.sort) return mt_autograd.sort(a, dim, descending, stable, index_base, values, indices);
  return sort(a, dim, descending, stable, index_base, values, indices);
}
mt_status mt_topk(mt_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base, mt_tensor **values,
                  mt_tensor **indices) {
  if (mt_records(a) && mt_autograd.topk)
    return mt_autograd.topk(a, k, dim, largest, sorted, index_base, values, indices);
  return topk(a, k, dim, largest, sorted, index_base, values, indices);
}
mt_status mt_flip(mt_tensor *a, const int64_t *dims, int n, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.flip) return mt_autograd.flip(a, dims, n, result);
  return flip(a, dims, n, result);
}
mt_status mt_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int n, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.roll) return mt_autograd.roll(a, shifts, dims, n, result);
  return roll(a, shifts, dims, n, result);
}
mt_status mt_repeat(mt_tensor *a, const int64_t *repeats, int n, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.repeat) return mt_autograd.repeat(a, repeats, n, result);
  return repeat(a, repeats, n, result);
}
mt_status mt_repeat_interleave(mt_tensor *a, int64_t repeats, int dim, mt_tensor **result) {
  if (mt_records(a) && repeats >= 0 && mt_autograd.repeat_interleave)
    return mt_autograd.repeat_interleave(a, repeats, dim, result);
  return repeat_interleave(a, repeats, dim, result);
}
