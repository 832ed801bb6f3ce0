/* copy.c -- the front doors of copy_, clone, to(dtype), contiguous, fill_, and of element access
 * (item, get, set, tolist). */
#include "dispatch.h"

/* Can src be broadcast to dst's shape? */
static mt_status check_broadcast_to(const mt_tensor *dst, const mt_tensor *src, const char *op) {
  if (src->_ndim > dst->_ndim) goto bad;
  for (int i = 0; i < src->_ndim; i++) {
    int64_t s = src->_sizes[src->_ndim - 1 - i], d = dst->_sizes[dst->_ndim - 1 - i];
    if (s != d && s != 1) goto bad;
  }
  return MT_OK;
bad:
  return mt_error(MT_ESHAPE, "%s: source of size %s cannot be broadcast to destination of size %s", op, MT_SHAPE(src),
                  MT_SHAPE(dst));
}

mt_status mt_copy_(mt_tensor *dst, const mt_tensor *src) {
  if (mt_records2(dst, src) && mt_autograd.copy_) return mt_autograd.copy_(dst, src);
  MT_TRY(mt_check_tensor(dst, "copy_", "self"));
  MT_TRY(mt_check_tensor(src, "copy_", "src"));
  MT_TRY(check_broadcast_to(dst, src, "copy_"));
  if (dst == src) return MT_OK;
  mt_bump_version(dst);
  const mt_kernels *k = mt_kernels_of(dst);
  if (mt_may_overlap(dst, src)) {
    if (dst->_storage == src->_storage && dst->_offset == src->_offset && dst->_dtype == src->_dtype &&
        dst->_ndim == src->_ndim && !memcmp(dst->_sizes, src->_sizes, sizeof(int64_t) * (size_t)dst->_ndim) &&
        !memcmp(dst->_strides, src->_strides, sizeof(int64_t) * (size_t)dst->_ndim))
      return MT_OK; /* the same elements */
    mt_tensor *tmp;
    MT_TRY(mt_new(src->_sizes, src->_ndim, src->_dtype, "copy_", &tmp));
    mt_status s = k->copy(tmp, src);
    if (s == MT_OK) s = k->copy(dst, tmp);
    mt_tensor_release(tmp);
    return s;
  }
  return k->copy(dst, src);
}

/* a new contiguous tensor of t's shape in `dtype`, holding t's values */
static mt_status converted(mt_tensor *t, int dtype, const char *op, mt_tensor **out) {
  mt_tensor *r;
  MT_TRY(mt_new(t->_sizes, t->_ndim, dtype, op, &r));
  mt_status s = mt_kernels_of(t)->copy(r, t);
  if (s) { mt_tensor_release(r); return s; }
  *out = r;
  return MT_OK;
}

mt_status mt_clone(mt_tensor *t, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.clone) return mt_autograd.clone(t, out);
  MT_TRY(mt_check_tensor(t, "clone", "input"));
  return converted(t, t->_dtype, "clone", out);
}

mt_status mt_to_dtype(mt_tensor *t, int dtype, int copy, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.to_dtype) return mt_autograd.to_dtype(t, dtype, copy, out);
  MT_TRY(mt_check_tensor(t, "to", "input"));
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "to: invalid dtype %d", dtype);
  if (t->_dtype == dtype && !copy) {
    *out = mt_tensor_retain(t);
    return MT_OK;
  }
  return converted(t, dtype, "to", out);
}

/* contiguous() of a contiguous tensor is the tensor itself; otherwise a clone (recorded as one) */
mt_status mt_contiguous(mt_tensor *t, mt_tensor **out) {
  MT_TRY(mt_check_tensor(t, "contiguous", "input"));
  if (t->_flags & MT_TENSOR_CONTIGUOUS) {
    *out = mt_tensor_retain(t);
    return MT_OK;
  }
  return mt_clone(t, out);
}

mt_status mt_fill_(mt_tensor *t, double value) {
  if (mt_records(t) && mt_autograd.fill_) return mt_autograd.fill_(t, value);
  MT_TRY(mt_check_tensor(t, "fill_", "self"));
  mt_bump_version(t);
  return mt_kernels_of(t)->fill(t, value);
}

mt_status mt_zero_(mt_tensor *t) { return mt_fill_(t, 0.0); }

mt_status mt_tensor_full(const int64_t *sizes, int ndim, int dtype, double value, mt_tensor **out) {
  mt_tensor *t = NULL;
  MT_TRY(mt_new(sizes, ndim, dtype, "full", &t));
  mt_status s = mt_kernels_of(t)->fill(t, value);
  if (s != MT_OK) { mt_tensor_release(t); return s; }
  *out = t;
  return MT_OK;
}

/* ---------------------------------------------------------------- results */
mt_status mt_deliver(mt_tensor *r, mt_tensor *out, mt_tensor **result, const char *op) {
  if (!out || out == r) return mt_give(r, result);
  mt_status s = mt_prepare_out(out, r->_sizes, r->_ndim, r->_dtype, op);
  if (s == MT_OK) s = mt_copy_(out, r);
  mt_tensor_release(r);
  if (s) return s;
  if (result) *result = mt_tensor_retain(out);
  return MT_OK;
}

mt_status mt_as_dtype(mt_tensor *t, int dtype, mt_tensor **r) {
  if (t->_dtype == dtype) {
    *r = mt_tensor_retain(t);
    return MT_OK;
  }
  return mt_to_dtype(t, dtype, 1, r);
}

/* ---------------------------------------------------------------- element access */
/* one element as the double handed out (NaNs canonical: see mt_number_out) */
static double load_out(int dtype, const char *p) { return mt_canonical_double(mt_load_double(dtype, p)); }

mt_status mt_tensor_item(const mt_tensor *t, double *out) {
  MT_TRY(mt_check_tensor(t, "item", "input"));
  if (t->_numel != 1)
    return mt_error(MT_EINVAL, "item: a Tensor with %lld elements cannot be converted to Scalar", (long long)t->_numel);
  *out = load_out(t->_dtype, t->_data);
  return MT_OK;
}

mt_status mt_tensor_item_int64(const mt_tensor *t, int64_t *out) {
  MT_TRY(mt_check_tensor(t, "item", "input"));
  if (t->_numel != 1)
    return mt_error(MT_EINVAL, "item: a Tensor with %lld elements cannot be converted to Scalar", (long long)t->_numel);
  if (t->_dtype == MT_INT64) *out = *(const int64_t *)t->_data;
  else *out = (int64_t)load_out(t->_dtype, t->_data);
  return MT_OK;
}

static mt_status element_ptr(const mt_tensor *t, const int64_t *index, const char *op, char **p) {
  MT_TRY(mt_check_tensor(t, op, "input"));
  int64_t off = 0;
  for (int i = 0; i < t->_ndim; i++) {
    int64_t ix = index[i];
    if (ix < 0) ix += t->_sizes[i];
    if (ix < 0 || ix >= t->_sizes[i])
      return mt_error(MT_ERANGE, "%s: index %lld is out of bounds for dimension %lld with size %lld", op,
                      MT_D(index[i]), MT_D(i), (long long)t->_sizes[i]);
    off += ix * t->_strides[i];
  }
  *p = t->_data + off * (int64_t)mt_itemsize(t->_dtype);
  return MT_OK;
}

mt_status mt_tensor_get(const mt_tensor *t, const int64_t *index, double *out) {
  char *p;
  MT_TRY(element_ptr(t, index, "get", &p));
  *out = load_out(t->_dtype, p);
  return MT_OK;
}

mt_status mt_tensor_set(mt_tensor *t, const int64_t *index, double value) {
  char *p;
  MT_TRY(element_ptr(t, index, "set", &p));
  mt_store_double(t->_dtype, p, value);
  mt_bump_version(t);
  return MT_OK;
}

/* t's elements in row-major order into a host buffer seen as a 1-D tensor of `dtype` */
static mt_status read_into(const mt_tensor *t, void *buf, int64_t n, int dtype, const char *op) {
  MT_TRY(mt_check_tensor(t, op, "input"));
  if (n != t->_numel)
    return mt_error(MT_EINVAL, "%s: buffer holds %lld values, tensor has %lld", op, (long long)n, (long long)t->_numel);
  mt_tensor *view;
  MT_TRY(mt_tensor_from_blob(buf, t->_sizes, NULL, t->_ndim, dtype, NULL, NULL, &view));
  mt_status s = mt_kernels_of(t)->copy(view, t);
  mt_tensor_release(view);
  return s;
}

mt_status mt_tensor_to_doubles(const mt_tensor *t, double *out, int64_t n) {
  MT_TRY(read_into(t, out, n, MT_FLOAT64, "tolist"));
  if (mt_is_float(t->_dtype))
    for (int64_t i = 0; i < n; i++) out[i] = mt_canonical_double(out[i]);
  return MT_OK;
}

mt_status mt_tensor_to_int64s(const mt_tensor *t, int64_t *out, int64_t n) {
  return read_into(t, out, n, MT_INT64, "tolist");
}

mt_status mt_tensor_from_doubles(mt_tensor *t, const double *src, int64_t n) {
  MT_TRY(mt_check_tensor(t, "from_doubles", "input"));
  if (n != t->_numel)
    return mt_error(MT_EINVAL, "from_doubles: %lld values given, tensor has %lld", (long long)n, (long long)t->_numel);
  mt_tensor *view;
  MT_TRY(mt_tensor_from_blob((void *)src, t->_sizes, NULL, t->_ndim, MT_FLOAT64, NULL, NULL, &view));
  mt_bump_version(t);
  mt_status s = mt_kernels_of(t)->copy(t, view);
  mt_tensor_release(view);
  return s;
}
