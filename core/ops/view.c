/* view.c -- the front doors of the ops that make a new head over the same storage: no data is
 * copied, no kernel runs (the same on every device). */
#include "dispatch.h"

#include <stdlib.h>

#define CHECK_IN(t, op) MT_TRY(mt_check_tensor((t), (op), "input"))

/* Infer a -1 size and check the element count (shared by view and reshape). */
static mt_status infer_size(const mt_tensor *t, const int64_t *sizes, int ndim, int64_t *out, const char *op) {
  if (ndim < 0 || ndim > MT_MAX_DIMS)
    return mt_error(MT_EINVAL, "%s: %d dimensions requested, at most %d are supported", op, ndim, MT_MAX_DIMS);
  int infer = -1;
  int64_t prod = 1;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] == -1) {
      if (infer >= 0) return mt_error(MT_EINVAL, "%s: only one dimension can be inferred", op);
      infer = i;
    } else if (sizes[i] < 0) {
      return mt_error(MT_EINVAL, "%s: invalid shape dimension %lld", op, (long long)sizes[i]);
    } else {
      prod *= sizes[i];
    }
    out[i] = sizes[i];
  }
  if (infer >= 0) {
    if (prod == 0 || t->_numel % prod != 0)
      return mt_error(MT_ESHAPE, "%s: shape '%s' is invalid for input of size %lld", op, mt_shape_str(sizes, ndim),
                      (long long)t->_numel);
    out[infer] = t->_numel / prod;
  } else if (prod != t->_numel) {
    return mt_error(MT_ESHAPE, "%s: shape '%s' is invalid for input of size %lld", op, mt_shape_str(sizes, ndim),
                    (long long)t->_numel);
  }
  return MT_OK;
}

/* Strides for viewing (sizes, strides) as newshape without a copy; false if impossible.
 * Walks chunks of old dims that are contiguous with each other (PyTorch's rule). */
static bool view_strides(const mt_tensor *t, const int64_t *nsz, int nd, int64_t *nst) {
  int od = t->_ndim;
  const int64_t *osz = t->_sizes, *ost = t->_strides;
  if (t->_numel == 0 || od == 0) { /* empty, or a scalar (every new size is 1) */
    mt_compute_strides(nsz, nd, nst);
    return true;
  }
  int64_t view_d = nd - 1;
  int64_t chunk_base_stride = od > 0 ? ost[od - 1] : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = od - 1; td >= 0; td--) {
    tensor_numel *= osz[td];
    if (td == 0 || (osz[td - 1] != 1 && ost[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || nsz[view_d] == 1)) {
        nst[view_d] = view_numel * chunk_base_stride;
        view_numel *= nsz[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = ost[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return false;
  return true;
}

mt_status mt_view(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.view) return mt_autograd.view(t, sizes, ndim, out);
  CHECK_IN(t, "view");
  int64_t nsz[MT_MAX_DIMS], nst[MT_MAX_DIMS];
  MT_TRY(infer_size(t, sizes, ndim, nsz, "view"));
  if (!view_strides(t, nsz, ndim, nst))
    return mt_error(MT_ESHAPE,
                    "view: size %s is not compatible with input of size %s and strides %s (at least one dimension "
                    "spans across two contiguous subspaces); use reshape instead",
                    mt_shape_str(nsz, ndim), MT_SHAPE(t), mt_shape_str(t->_strides, t->_ndim));
  return mt_new_view(t, nsz, nst, ndim, t->_offset, out);
}

mt_status mt_reshape(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.reshape) return mt_autograd.reshape(t, sizes, ndim, out);
  CHECK_IN(t, "reshape");
  int64_t nsz[MT_MAX_DIMS], nst[MT_MAX_DIMS];
  MT_TRY(infer_size(t, sizes, ndim, nsz, "reshape"));
  if (view_strides(t, nsz, ndim, nst)) return mt_new_view(t, nsz, nst, ndim, t->_offset, out);
  mt_tensor *c;
  MT_TRY(mt_clone(t, &c));
  mt_status s = mt_view(c, nsz, ndim, out);
  mt_tensor_release(c);
  return s;
}

mt_status mt_as_strided(mt_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim, int64_t offset,
                        mt_tensor **out) {
  if (mt_records(t) && mt_autograd.as_strided) return mt_autograd.as_strided(t, sizes, strides, ndim, offset, out);
  CHECK_IN(t, "as_strided");
  int64_t numel;
  MT_TRY(mt_check_sizes(sizes, ndim, "as_strided", &numel));
  if (offset < 0) offset = t->_offset;
  /* the elements reached, offset included, and their bytes: an overflow anywhere reaches past
   * every storage (size 2, stride 2^62 must not wrap around to a small span) */
  int64_t span;
  bool over = __builtin_add_overflow(offset, (int64_t)1, &span);
  for (int i = 0; i < ndim; i++) {
    if (strides[i] < 0) return mt_error(MT_EINVAL, "as_strided: negative strides are not supported");
    int64_t reach;
    if (sizes[i] > 0)
      over |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) || __builtin_add_overflow(span, reach, &span);
  }
  uint64_t bytes;
  over |= __builtin_mul_overflow((uint64_t)span, (uint64_t)mt_itemsize(t->_dtype), &bytes);
  if (numel > 0 && (over || bytes > t->_storage->_nbytes))
    return mt_error(MT_ERANGE,
                    "as_strided: size %s, strides %s and offset %lld reach past the storage's %zu bytes",
                    mt_shape_str(sizes, ndim), mt_shape_str(strides, ndim), (long long)offset, t->_storage->_nbytes);
  return mt_new_view(t, sizes, strides, ndim, offset, out);
}

mt_status mt_transpose(mt_tensor *t, int d0, int d1, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.transpose) return mt_autograd.transpose(t, d0, d1, out);
  CHECK_IN(t, "transpose");
  MT_TRY(mt_wrap_dim(d0, t->_ndim, "transpose", &d0));
  MT_TRY(mt_wrap_dim(d1, t->_ndim, "transpose", &d1));
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  memcpy(sz, t->_sizes, sizeof sz);
  memcpy(st, t->_strides, sizeof st);
  if (t->_ndim > 0) {
    sz[d0] = t->_sizes[d1]; sz[d1] = t->_sizes[d0];
    st[d0] = t->_strides[d1]; st[d1] = t->_strides[d0];
  }
  return mt_new_view(t, sz, st, t->_ndim, t->_offset, out);
}

mt_status mt_permute(mt_tensor *t, const int64_t *dims, int ndim, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.permute) return mt_autograd.permute(t, dims, ndim, out);
  CHECK_IN(t, "permute");
  if (ndim != t->_ndim)
    return mt_error(MT_EINVAL, "permute: number of dims don't match in permute (input has %d, %d given)", t->_ndim,
                    ndim);
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  bool seen[MT_MAX_DIMS] = {0};
  for (int i = 0; i < ndim; i++) {
    int d;
    MT_TRY(mt_wrap_dim((int)dims[i], ndim, "permute", &d));
    if (seen[d]) return mt_error(MT_EINVAL, "permute: repeated dim %lld in permute", MT_D(dims[i]));
    seen[d] = true;
    sz[i] = t->_sizes[d];
    st[i] = t->_strides[d];
  }
  return mt_new_view(t, sz, st, ndim, t->_offset, out);
}

mt_status mt_slice(mt_tensor *t, int dim, int64_t start, int64_t stop, int64_t step, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.slice) return mt_autograd.slice(t, dim, start, stop, step, out);
  CHECK_IN(t, "slice");
  if (t->_ndim == 0) return mt_error(MT_EINVAL, "slice: cannot slice a 0-dim tensor");
  MT_TRY(mt_wrap_dim(dim, t->_ndim, "slice", &dim));
  if (step <= 0) return mt_error(MT_EINVAL, "slice: step must be positive, got %lld", (long long)step);
  int64_t n = t->_sizes[dim];
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  if (stop > n) stop = n;
  if (stop < start) stop = start;
  /* a step past the end takes one element: the same view, without overflowing step * stride */
  if (step > stop - start && stop > start) step = stop - start;
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  memcpy(sz, t->_sizes, sizeof sz);
  memcpy(st, t->_strides, sizeof st);
  sz[dim] = stop == start ? 0 : (stop - start - 1) / step + 1;
  st[dim] = t->_strides[dim] * step;
  return mt_new_view(t, sz, st, t->_ndim, t->_offset + start * t->_strides[dim], out);
}

mt_status mt_narrow(mt_tensor *t, int dim, int64_t start, int64_t length, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.narrow) return mt_autograd.narrow(t, dim, start, length, out);
  CHECK_IN(t, "narrow");
  if (t->_ndim == 0) return mt_error(MT_EINVAL, "narrow: narrow() cannot be applied to a 0-dim tensor");
  MT_TRY(mt_wrap_dim(dim, t->_ndim, "narrow", &dim));
  int64_t n = t->_sizes[dim];
  int64_t start0 = start;
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start > n || length > n - start)
    return mt_error(MT_ERANGE, "narrow: start %lld and length %lld are out of bounds for dimension %lld of size %lld",
                    MT_D(start0), (long long)length, MT_D(dim), (long long)n);
  return mt_slice(t, dim, start, start + length, 1, out);
}

mt_status mt_select(mt_tensor *t, int dim, int64_t index, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.select) return mt_autograd.select(t, dim, index, out);
  CHECK_IN(t, "select");
  if (t->_ndim == 0) return mt_error(MT_EINVAL, "select: cannot index a 0-dim tensor");
  MT_TRY(mt_wrap_dim(dim, t->_ndim, "select", &dim));
  int64_t n = t->_sizes[dim];
  if (index < -n || index >= n)
    return mt_error(MT_ERANGE, "select: index %lld is out of bounds for dimension %lld with size %lld",
                    MT_D(index), MT_D(dim), (long long)n);
  if (index < 0) index += n;
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < t->_ndim; i++)
    if (i != dim) { sz[k] = t->_sizes[i]; st[k] = t->_strides[i]; k++; }
  return mt_new_view(t, sz, st, k, t->_offset + index * t->_strides[dim], out);
}

mt_status mt_unsqueeze(mt_tensor *t, int dim, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.unsqueeze) return mt_autograd.unsqueeze(t, dim, out);
  CHECK_IN(t, "unsqueeze");
  if (t->_ndim >= MT_MAX_DIMS) return mt_error(MT_EINVAL, "unsqueeze: at most %d dimensions", MT_MAX_DIMS);
  MT_TRY(mt_wrap_dim(dim, t->_ndim + 1, "unsqueeze", &dim));
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i <= t->_ndim; i++) {
    if (i == dim) {
      sz[k] = 1;
      st[k] = i < t->_ndim ? t->_sizes[i] * t->_strides[i] : 1;
      k++;
    }
    if (i < t->_ndim) { sz[k] = t->_sizes[i]; st[k] = t->_strides[i]; k++; }
  }
  return mt_new_view(t, sz, st, k, t->_offset, out);
}

mt_status mt_squeeze(mt_tensor *t, int dim, int all, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.squeeze) return mt_autograd.squeeze(t, dim, all, out);
  CHECK_IN(t, "squeeze");
  if (!all) MT_TRY(mt_wrap_dim(dim, t->_ndim, "squeeze", &dim));
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < t->_ndim; i++) {
    bool drop = t->_sizes[i] == 1 && (all || i == dim);
    if (!drop) { sz[k] = t->_sizes[i]; st[k] = t->_strides[i]; k++; }
  }
  return mt_new_view(t, sz, st, k, t->_offset, out);
}

mt_status mt_expand(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.expand) return mt_autograd.expand(t, sizes, ndim, out);
  CHECK_IN(t, "expand");
  if (ndim < t->_ndim)
    return mt_error(MT_ESHAPE,
                    "expand: the number of sizes provided (%d) must be greater or equal to the number of dimensions "
                    "in the tensor (%d)", ndim, t->_ndim);
  if (ndim > MT_MAX_DIMS) return mt_error(MT_EINVAL, "expand: at most %d dimensions", MT_MAX_DIMS);
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  for (int i = ndim - 1; i >= 0; i--) {
    int j = i - (ndim - t->_ndim);
    int64_t want = sizes[i];
    if (j >= 0) {
      int64_t have = t->_sizes[j];
      if (want == -1) want = have;
      if (have == want) { sz[i] = have; st[i] = t->_strides[j]; }
      else if (have == 1 && want >= 0) { sz[i] = want; st[i] = 0; }
      else
        return mt_error(MT_ESHAPE,
                        "expand: the expanded size of the tensor (%lld) must match the existing size (%lld) at "
                        "non-singleton dimension %lld.  Target sizes: %s.  Tensor sizes: %s",
                        (long long)want, (long long)have, MT_D(i), mt_shape_str(sizes, ndim), MT_SHAPE(t));
    } else {
      if (want < 0)
        return mt_error(MT_EINVAL, "expand: the expanded size of the tensor (%lld) isn't allowed in a leading, "
                        "non-existing dimension %lld", (long long)want, MT_D(i));
      sz[i] = want;
      st[i] = 0;
    }
  }
  return mt_new_view(t, sz, st, ndim, t->_offset, out);
}

mt_status mt_flatten(mt_tensor *t, int start, int end, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.flatten) return mt_autograd.flatten(t, start, end, out);
  CHECK_IN(t, "flatten");
  if (t->_ndim == 0) {
    int64_t one = 1;
    return mt_reshape(t, &one, 1, out);
  }
  MT_TRY(mt_wrap_dim(start, t->_ndim, "flatten", &start));
  MT_TRY(mt_wrap_dim(end, t->_ndim, "flatten", &end));
  if (start > end) return mt_error(MT_EINVAL, "flatten: start_dim cannot come after end_dim");
  int64_t sz[MT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < start; i++) sz[k++] = t->_sizes[i];
  int64_t p = 1;
  for (int i = start; i <= end; i++) p *= t->_sizes[i];
  sz[k++] = p;
  for (int i = end + 1; i < t->_ndim; i++) sz[k++] = t->_sizes[i];
  return mt_reshape(t, sz, k, out);
}

mt_status mt_unfold(mt_tensor *t, int dim, int64_t size, int64_t step, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.unfold) return mt_autograd.unfold(t, dim, size, step, out);
  CHECK_IN(t, "unfold");
  if (t->_ndim >= MT_MAX_DIMS) return mt_error(MT_EINVAL, "unfold: at most %d dimensions", MT_MAX_DIMS);
  MT_TRY(mt_wrap_dim(dim, t->_ndim, "unfold", &dim));
  int64_t n = t->_ndim == 0 ? 1 : t->_sizes[dim];
  int64_t stride = t->_ndim == 0 ? 1 : t->_strides[dim];
  if (size < 0 || size > n)
    return mt_error(MT_ERANGE, "unfold: maximum size for tensor at dimension %lld is %lld but size is %lld",
                    MT_D(dim), (long long)n, (long long)size);
  if (step <= 0) return mt_error(MT_EINVAL, "unfold: step is %lld but must be > 0", (long long)step);
  if (step > n - size + 1) step = n - size + 1; /* one window either way; step * stride must not overflow */
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  memcpy(sz, t->_sizes, sizeof sz);
  memcpy(st, t->_strides, sizeof st);
  int nd = t->_ndim;
  if (nd > 0) {
    sz[dim] = (n - size) / step + 1;
    st[dim] = step * stride;
  }
  sz[nd] = size;
  st[nd] = stride;
  return mt_new_view(t, sz, st, nd + 1, t->_offset, out);
}

mt_status mt_diagonal(mt_tensor *t, int64_t offset, int d0, int d1, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.diagonal) return mt_autograd.diagonal(t, offset, d0, d1, out);
  CHECK_IN(t, "diagonal");
  if (t->_ndim < 2) return mt_error(MT_EINVAL, "diagonal: expected a tensor with at least 2 dims, got %d", t->_ndim);
  MT_TRY(mt_wrap_dim(d0, t->_ndim, "diagonal", &d0));
  MT_TRY(mt_wrap_dim(d1, t->_ndim, "diagonal", &d1));
  if (d0 == d1) return mt_error(MT_EINVAL, "diagonal: diagonal dimensions cannot be identical %d, %d", d0, d1);
  int64_t off = t->_offset;
  /* the length first: an offset past the matrix (even INT64_MIN) gives an empty view, and the
   * products below are computed only for offsets inside it */
  int64_t len = offset >= 0 ? t->_sizes[d1] - offset : t->_sizes[d0] + offset;
  if (len > 0) off += offset >= 0 ? offset * t->_strides[d1] : -offset * t->_strides[d0];
  if (len < 0) len = 0;
  if (len > t->_sizes[d0]) len = t->_sizes[d0];
  if (len > t->_sizes[d1]) len = t->_sizes[d1];
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < t->_ndim; i++)
    if (i != d0 && i != d1) { sz[k] = t->_sizes[i]; st[k] = t->_strides[i]; k++; }
  sz[k] = len;
  st[k] = t->_strides[d0] + t->_strides[d1];
  k++;
  return mt_new_view(t, sz, st, k, off, out);
}

mt_status mt_broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, int *nout) {
  int n = na > nb ? na : nb;
  if (n > MT_MAX_DIMS) return mt_error(MT_EINVAL, "broadcast: at most %d dimensions", MT_MAX_DIMS);
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa == sb || sb == 1) out[i] = sa;
    else if (sa == 1) out[i] = sb;
    else
      return mt_error(MT_ESHAPE,
                      "the size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton dimension %d",
                      (long long)sa, (long long)sb, i);
  }
  *nout = n;
  return MT_OK;
}

