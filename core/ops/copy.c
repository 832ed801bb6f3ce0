/* copy.c -- the front doors of copy_, clone, to(dtype, device), contiguous, fill_, and of element
 * access (item, get, set, tolist). Copies between devices go through the backends' transfers. */
#include "dispatch.h"
#include "layout.h"

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

/* dst <- src, on different devices (the shapes checked): src's values made into a contiguous
 * tensor of dst's shape and dtype on src's device, carried over by the backend that is not the
 * CPU's, and copied into dst on dst's device when dst is not contiguous. Nothing to carry into a
 * device that holds no data; nothing to carry out of one. */
static mt_status copy_across(mt_tensor *dst, const mt_tensor *src, const char *op) {
  const mt_backend *bd = mt_backend_of(dst), *bs = mt_backend_of(src);
  if (!bs->holds_data)
    return mt_error(MT_EDEVICE, "%s: cannot copy out of a tensor on device %s: it holds no data", op,
                    mt_device_str(mt_device_of(src)));
  mt_bump_version(dst);
  if (!bd->holds_data) return MT_OK;
  if (dst->_device_type != MT_CPU && src->_device_type != MT_CPU) { /* through the CPU */
    mt_tensor *h;
    MT_TRY(mt_new_cpu(dst->_sizes, dst->_ndim, dst->_dtype, op, &h));
    mt_status s = copy_across(h, src, op);
    if (s == MT_OK) s = copy_across(dst, h, op);
    mt_tensor_release(h);
    return s;
  }
  const mt_backend *far = dst->_device_type == MT_CPU ? bs : bd;
  mt_tensor *from = NULL, *to = NULL;
  mt_status s = mt_new(mt_device_of(src), dst->_sizes, dst->_ndim, dst->_dtype, op, &from);
  if (s == MT_OK) s = mt_kernels_of(src)->copy(from, src);
  if (s == MT_OK && (dst->_flags & MT_TENSOR_CONTIGUOUS)) {
    s = far->transfer(dst, from);
  } else if (s == MT_OK) {
    s = mt_new(mt_device_of(dst), dst->_sizes, dst->_ndim, dst->_dtype, op, &to);
    if (s == MT_OK) s = far->transfer(to, from);
    if (s == MT_OK) s = mt_kernels_of(dst)->copy(dst, to);
  }
  mt_tensor_release(from);
  mt_tensor_release(to);
  return s;
}

mt_status mt_copy_(mt_tensor *dst, const mt_tensor *src) {
  if (mt_records2(dst, src) && mt_autograd.copy_) return mt_autograd.copy_(dst, src);
  MT_TRY(mt_check_tensor(dst, "copy_", "self"));
  MT_TRY(mt_check_tensor(src, "copy_", "src"));
  MT_TRY(check_broadcast_to(dst, src, "copy_"));
  if (dst == src) return MT_OK;
  if (!mt_same_device(dst, src)) return copy_across(dst, src, "copy_");
  MT_TRY(mt_check_kernel(MT_OP_COPY_, dst));
  mt_bump_version(dst);
  const mt_kernels *k = mt_kernels_of(dst);
  if (mt_may_overlap(dst, src)) {
    if (dst->_storage == src->_storage && dst->_offset == src->_offset && dst->_dtype == src->_dtype &&
        dst->_ndim == src->_ndim && !memcmp(dst->_sizes, src->_sizes, sizeof(int64_t) * (size_t)dst->_ndim) &&
        !memcmp(dst->_strides, src->_strides, sizeof(int64_t) * (size_t)dst->_ndim))
      return MT_OK; /* the same elements */
    mt_tensor *tmp;
    MT_TRY(mt_new(mt_device_of(src), src->_sizes, src->_ndim, src->_dtype, "copy_", &tmp));
    mt_status s = k->copy(tmp, src);
    if (s == MT_OK) s = k->copy(dst, tmp);
    mt_tensor_release(tmp);
    return s;
  }
  return k->copy(dst, src);
}

/* a new contiguous tensor of t's shape in `dtype`, holding t's values */
static mt_status converted(mt_tensor *t, int dtype, const char *op, mt_tensor **out) {
  MT_TRY(mt_check_kernel(MT_OP_CLONE, t));
  mt_tensor *r;
  MT_TRY(mt_new(mt_device_of(t), t->_sizes, t->_ndim, dtype, op, &r));
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

mt_status mt_to(mt_tensor *t, int dtype, const mt_device *device, int copy, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.to) return mt_autograd.to(t, dtype, device, copy, out);
  MT_TRY(mt_check_tensor(t, "to", "input"));
  if (dtype < 0) dtype = t->_dtype;
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "to: invalid dtype %d", dtype);
  mt_device dev = mt_device_of(t);
  if (device) MT_TRY(mt_device_arg(device, "to", &dev));
  bool here = dev.type == t->_device_type && dev.index == t->_device_index;
  if (here && t->_dtype == dtype && !copy) {
    *out = mt_tensor_retain(t);
    return MT_OK;
  }
  if (here) { /* parity: PyTorch's to() keeps t's layout (preserve_format) */
    MT_TRY(mt_check_kernel(MT_OP_CLONE, t));
    mt_tensor *r;
    MT_TRY(mt_new_preserving(t, dtype, "to", &r));
    mt_status s = mt_kernels_of(t)->copy(r, t);
    if (s) { mt_tensor_release(r); return s; }
    *out = r;
    return MT_OK;
  }
  mt_tensor *r;
  MT_TRY(mt_new(dev, t->_sizes, t->_ndim, dtype, "to", &r));
  mt_status s = copy_across(r, t, "to");
  if (s) { mt_tensor_release(r); return s; }
  *out = r;
  return MT_OK;
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
  MT_TRY(mt_check_kernel(MT_OP_FILL_, t));
  mt_bump_version(t);
  return mt_kernels_of(t)->fill(t, value);
}

mt_status mt_zero_(mt_tensor *t) { return mt_fill_(t, 0.0); }

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
  return mt_to(t, dtype, NULL, 1, r);
}

/* ---------------------------------------------------------------- element access */
/* one element as the double handed out (NaNs canonical: see mt_number_out) */
static double load_out(int dtype, const char *p) { return mt_canonical_double(mt_load_double(dtype, p)); }

/* t's values, readable on the CPU: t itself, or a CPU copy of it (a new reference either way) */
static mt_status on_cpu(const mt_tensor *t, const char *op, mt_tensor **h) {
  MT_TRY(mt_check_tensor(t, op, "input"));
  if (t->_device_type == MT_CPU) {
    *h = mt_tensor_retain((mt_tensor *)t);
    return MT_OK;
  }
  MT_TRY(mt_check_data(t, op));
  MT_TRY(mt_new_cpu(t->_sizes, t->_ndim, t->_dtype, op, h));
  mt_status s = copy_across(*h, t, op);
  if (s) mt_tensor_release(*h);
  return s;
}

/* the one element of t, readable on the CPU: *src is t itself (a CPU tensor: no reference taken) or a CPU
 * copy of it, which *owned holds (release it after reading) */
static mt_status item_of(const mt_tensor *t, const mt_tensor **src, mt_tensor **owned) {
  *owned = NULL;
  MT_TRY(mt_check_tensor(t, "item", "input"));
  if (t->_device_type != MT_CPU) {
    MT_TRY(on_cpu(t, "item", owned));
    t = *owned;
  }
  if (t->_numel != 1) {
    int64_t n = t->_numel;
    mt_tensor_release(*owned);
    *owned = NULL;
    return mt_error(MT_EINVAL, "item: a Tensor with %lld elements cannot be converted to Scalar", (long long)n);
  }
  *src = t;
  return MT_OK;
}

mt_status mt_tensor_item(const mt_tensor *t, double *out) {
  const mt_tensor *h = NULL;
  mt_tensor *owned;
  MT_TRY(item_of(t, &h, &owned));
  *out = load_out(h->_dtype, h->_data);
  if (owned) mt_tensor_release(owned);
  return MT_OK;
}

/* an integer dtype's value exactly; a floating one's truncated toward zero, as Python's int() does, and an
 * error for NaN, the infinities and values outside int64's range (a C cast of those is undefined) */
mt_status mt_tensor_item_int64(const mt_tensor *t, int64_t *out) {
  const mt_tensor *h = NULL;
  mt_tensor *owned;
  MT_TRY(item_of(t, &h, &owned));
  mt_status s = MT_OK;
  if (h->_dtype == MT_INT64) {
    *out = *(const int64_t *)h->_data;
  } else {
    double v = mt_load_double(h->_dtype, h->_data);
    if (v != v) s = mt_error(MT_EINVAL, "item: cannot convert float NaN to integer");
    else if (v == INFINITY || v == -INFINITY) s = mt_error(MT_EINVAL, "item: cannot convert float infinity to integer");
    else if (!(v >= -0x1p63 && v < 0x1p63))
      s = mt_error(MT_ERANGE, "item: value cannot be converted to type int64_t without overflow");
    else *out = (int64_t)v;
  }
  if (owned) mt_tensor_release(owned);
  return s;
}

static mt_status element_ptr(const mt_tensor *t, const int64_t *index, const char *op, char **p) {
  MT_TRY(mt_check_tensor(t, op, "input"));
  if (t->_device_type != MT_CPU) {
    MT_TRY(mt_check_data(t, op));
    return mt_error(MT_EDEVICE, "%s: reads one element of a CPU tensor; copy this one to the CPU first", op);
  }
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
  mt_tensor *h, *view = NULL;
  MT_TRY(on_cpu(t, op, &h));
  mt_status s = mt_tensor_from_blob(buf, h->_sizes, NULL, h->_ndim, dtype, NULL, NULL, &view);
  if (s == MT_OK) s = mt_kernels_of(h)->copy(view, h);
  mt_tensor_release(view);
  mt_tensor_release(h);
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
  if (t->_device_type != MT_CPU) return mt_error(MT_EDEVICE, "from_doubles: fills a CPU tensor");
  if (n != t->_numel)
    return mt_error(MT_EINVAL, "from_doubles: %lld values given, tensor has %lld", (long long)n, (long long)t->_numel);
  mt_tensor *view;
  MT_TRY(mt_tensor_from_blob((void *)src, t->_sizes, NULL, t->_ndim, MT_FLOAT64, NULL, NULL, &view));
  mt_bump_version(t);
  mt_status s = mt_kernels_of(t)->copy(t, view);
  mt_tensor_release(view);
  return s;
}
