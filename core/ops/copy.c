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

static bool is_pinned(const mt_tensor *t) {
  const mt_allocator *a = t->_storage ? t->_storage->_allocator : NULL;
  if (t->_device_type != MT_CPU || !a) return false;
  for (int d = 0; d < MT_DEVICE_TYPES; d++)
    if (mt_backends[d] && mt_backends[d]->pinned == a) return true;
  return false;
}

/* Can t's bytes be carried as they are (contiguous, of dst's shape and dtype)? */
static bool carried_as_is(const mt_tensor *t, const mt_tensor *like) {
  if (!(t->_flags & MT_TENSOR_CONTIGUOUS) || t->_dtype != like->_dtype || t->_ndim != like->_ndim) return false;
  return !memcmp(t->_sizes, like->_sizes, sizeof(int64_t) * (size_t)t->_ndim);
}

/* dst <- src, on different devices (the shapes checked). The bytes are carried by the backend of the
 * end that is not the CPU (of both ends, when they are two devices of one type), as a contiguous tensor
 * of dst's shape and dtype: src itself when it is one, else a copy of it made on src's device; into dst
 * itself when it is contiguous, else into a tensor on dst's device copied into dst there. Between
 * devices of two types the bytes go through the CPU. Nothing to carry into a device that holds no data;
 * nothing to carry out of one. flags: MT_TO_NON_BLOCKING, passed to the transfer when the host end is
 * the caller's own pinned tensor (the device end may be a temporary: a queueing backend orders its
 * reuse after the copy). */
static mt_status copy_across(mt_tensor *dst, const mt_tensor *src, const char *op, int flags) {
  const mt_backend *bd = mt_backend_of(dst), *bs = mt_backend_of(src);
  if (!bs->holds_data)
    return mt_error(MT_EDEVICE, "%s: cannot copy out of a tensor on device %s: it holds no data", op,
                    mt_device_str(mt_device_of(src)));
  mt_bump_version(dst);
  if (!bd->holds_data) return MT_OK;
  bool host_dst = dst->_device_type == MT_CPU, host_src = src->_device_type == MT_CPU;
  if (!host_dst && !host_src && dst->_device_type != src->_device_type) { /* through the CPU */
    mt_tensor *h;
    MT_TRY(mt_new_cpu(dst->_sizes, dst->_ndim, dst->_dtype, op, &h));
    mt_status s = copy_across(h, src, op, 0);
    if (s == MT_OK) s = copy_across(dst, h, op, 0);
    mt_tensor_release(h);
    return s;
  }
  const mt_backend *far = host_dst ? bs : bd;
  if (!far->transfer)
    return mt_error(MT_EDEVICE, "%s: the backend of device %s carries no bytes", op,
                    mt_device_str(mt_device_of(host_dst ? src : dst)));
  mt_tensor *from = NULL, *to = NULL;
  mt_status s = MT_OK;
  if (carried_as_is(src, dst)) {
    from = mt_tensor_retain((mt_tensor *)src);
  } else {
    s = mt_new(mt_device_of(src), dst->_sizes, dst->_ndim, dst->_dtype, op, &from);
    if (s == MT_OK) s = mt_kernels_of(src)->copy(from, src);
  }
  bool direct = (dst->_flags & MT_TENSOR_CONTIGUOUS) != 0;
  const mt_tensor *host = host_dst ? (direct ? dst : NULL) : (from == src ? src : NULL);
  int tflags = (flags & MT_TO_NON_BLOCKING) && host && is_pinned(host) ? MT_TO_NON_BLOCKING : 0;
  if (s == MT_OK && direct) {
    s = far->transfer(dst, from, tflags);
  } else if (s == MT_OK) {
    s = mt_new(mt_device_of(dst), dst->_sizes, dst->_ndim, dst->_dtype, op, &to);
    if (s == MT_OK) s = far->transfer(to, from, tflags);
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
  if (!mt_same_device(dst, src)) return copy_across(dst, src, "copy_", 0);
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

mt_status mt_to(mt_tensor *t, int dtype, const mt_device *device, int flags, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.to) return mt_autograd.to(t, dtype, device, flags, out);
  bool copy = flags & MT_TO_COPY;
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
  mt_status s = copy_across(r, t, "to", flags);
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

mt_status mt_readback(const mt_tensor *t, const char *op, bool contiguous, mt_tensor **h) {
  MT_TRY(mt_check_tensor(t, op, "input"));
  if (t->_device_type == MT_CPU) {
    if (contiguous && !(t->_flags & MT_TENSOR_CONTIGUOUS)) return converted((mt_tensor *)t, t->_dtype, op, h);
    *h = mt_tensor_retain((mt_tensor *)t);
    return MT_OK;
  }
  MT_TRY(mt_check_data(t, op));
  MT_TRY(mt_new_cpu(t->_sizes, t->_ndim, t->_dtype, op, h));
  mt_status s = copy_across(*h, t, op, 0);
  if (s) mt_tensor_release(*h);
  return s;
}

mt_status mt_tensor_to_host(const mt_tensor *t, mt_tensor **out) {
  if (!out) return mt_error(MT_EINVAL, "to_host: out is NULL");
  return mt_readback(t, "to_host", false, out);
}

/* the one element of t, readable on the CPU: *src is t itself (a CPU tensor: no reference taken) or a CPU
 * copy of it, which *owned holds (release it after reading) */
static mt_status item_of(const mt_tensor *t, const mt_tensor **src, mt_tensor **owned) {
  *owned = NULL;
  MT_TRY(mt_check_tensor(t, "item", "input"));
  if (t->_device_type != MT_CPU) {
    MT_TRY(mt_readback(t, "item", false, owned));
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

/* the element of t at `index`: its offset in elements from t's first one */
static mt_status element_offset(const mt_tensor *t, const int64_t *index, const char *op, int64_t *off) {
  MT_TRY(mt_check_tensor(t, op, "input"));
  *off = 0;
  for (int i = 0; i < t->_ndim; i++) {
    int64_t ix = index[i];
    if (ix < 0) ix += t->_sizes[i];
    if (ix < 0 || ix >= t->_sizes[i])
      return mt_error(MT_ERANGE, "%s: index %lld is out of bounds for dimension %lld with size %lld", op,
                      MT_D(index[i]), MT_D(i), (long long)t->_sizes[i]);
    *off += ix * t->_strides[i];
  }
  return MT_OK;
}

/* the element as a 0-dim view of t (on t's device) */
static mt_status element_view(const mt_tensor *t, int64_t off, const char *op, mt_tensor **v) {
  MT_TRY(mt_check_data(t, op));
  return mt_new_view((mt_tensor *)t, NULL, NULL, 0, t->_offset + off, v);
}

mt_status mt_tensor_get(const mt_tensor *t, const int64_t *index, double *out) {
  int64_t off;
  MT_TRY(element_offset(t, index, "get", &off));
  if (t->_device_type == MT_CPU) {
    *out = load_out(t->_dtype, t->_data + off * (int64_t)mt_itemsize(t->_dtype));
    return MT_OK;
  }
  mt_tensor *v;
  MT_TRY(element_view(t, off, "get", &v));
  mt_status s = mt_tensor_item(v, out);
  mt_tensor_release(v);
  return s;
}

mt_status mt_tensor_set(mt_tensor *t, const int64_t *index, double value) {
  int64_t off;
  MT_TRY(element_offset(t, index, "set", &off));
  if (t->_device_type == MT_CPU) {
    mt_store_double(t->_dtype, t->_data + off * (int64_t)mt_itemsize(t->_dtype), value);
    mt_bump_version(t);
    return MT_OK;
  }
  MT_TRY(mt_check_kernel(MT_OP_FILL_, t));
  mt_tensor *v;
  MT_TRY(element_view(t, off, "set", &v));
  mt_status s = mt_kernels_of(v)->fill(v, value);
  mt_tensor_release(v);
  mt_bump_version(t);
  return s;
}

/* t's elements in row-major order into a host buffer seen as a 1-D tensor of `dtype` */
static mt_status read_into(const mt_tensor *t, void *buf, int64_t n, int dtype, const char *op) {
  MT_TRY(mt_check_tensor(t, op, "input"));
  if (n != t->_numel)
    return mt_error(MT_EINVAL, "%s: buffer holds %lld values, tensor has %lld", op, (long long)n, (long long)t->_numel);
  mt_tensor *h, *view = NULL;
  MT_TRY(mt_readback(t, op, false, &h));
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

/* host values into t: copied into it on the CPU, carried by t's backend to another device */
mt_status mt_tensor_from_doubles(mt_tensor *t, const double *src, int64_t n) {
  MT_TRY(mt_check_tensor(t, "from_doubles", "input"));
  if (n != t->_numel)
    return mt_error(MT_EINVAL, "from_doubles: %lld values given, tensor has %lld", (long long)n, (long long)t->_numel);
  mt_tensor *view;
  MT_TRY(mt_tensor_from_blob((void *)src, t->_sizes, NULL, t->_ndim, MT_FLOAT64, NULL, NULL, &view));
  mt_status s;
  if (t->_device_type == MT_CPU) {
    mt_bump_version(t);
    s = mt_kernels_of(t)->copy(t, view);
  } else {
    s = copy_across(t, view, "from_doubles", 0);
  }
  mt_tensor_release(view);
  return s;
}

/* ---------------------------------------------------------------- pinned memory */
int mt_tensor_is_pinned(const mt_tensor *t) { return t && is_pinned(t); }

mt_status mt_tensor_pin_memory(mt_tensor *t, const mt_device *device, mt_tensor **out) {
  MT_TRY(mt_check_tensor(t, "pin_memory", "input"));
  if (t->_device_type != MT_CPU)
    return mt_error(MT_EDEVICE, "pin_memory: cannot pin a tensor on device %s: only CPU tensors can be pinned",
                    mt_device_str(mt_device_of(t)));
  const mt_backend *b = NULL;
  if (device) {
    mt_device d = MT_DEVICE_CPU;
    MT_TRY(mt_device_arg(device, "pin_memory", &d));
    b = mt_backends[d.type];
  } else {
    for (int d = 0; d < MT_DEVICE_TYPES && !b; d++)
      if (mt_backends[d] && mt_backends[d]->pinned) b = mt_backends[d];
  }
  if (!b || !b->pinned)
    return mt_error(MT_EDEVICE, "pin_memory: no device of this build has page-locked host memory%s",
                    mt_backends[MT_CUDA] ? "" : " (moontorch was built without CUDA)");
  if (is_pinned(t)) {
    *out = mt_tensor_retain(t);
    return MT_OK;
  }
  mt_tensor *r;
  MT_TRY(mt_new_with(b->pinned, MT_CPU, 0, t->_sizes, t->_ndim, t->_dtype, "pin_memory", &r));
  mt_status s = mt_kernels_of(t)->copy(r, t);
  if (s) { mt_tensor_release(r); return s; }
  *out = r;
  return MT_OK;
}
