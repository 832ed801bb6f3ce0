/* copy.c -- copying between any dtypes and any strides; fill; clone; element access. */
#include "../grad/grad.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One conversion loop per (dst, src) dtype pair: 100 small functions. */
#define DEF_CONV(DD, TD, SD, DS, TS, LS, SS)                                                  \
  static void conv_##DD##_##DS(void *ctx, char **p, const int64_t *st, int64_t n) {           \
    (void)ctx;                                                                                \
    char *d = p[0];                                                                           \
    const char *s = p[1];                                                                     \
    if (st[0] == (int64_t)sizeof(TD) && st[1] == (int64_t)sizeof(TS)) {                       \
      TD *dd = (TD *)d;                                                                       \
      const TS *ss = (const TS *)s;                                                           \
      for (int64_t i = 0; i < n; i++) {                                                       \
        TS x = ss[i];                                                                         \
        __typeof__(LS) v = LS;                                                                \
        dd[i] = SD;                                                                           \
      }                                                                                       \
    } else {                                                                                  \
      for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) {                               \
        TS x = *(const TS *)s;                                                                \
        __typeof__(LS) v = LS;                                                                \
        *(TD *)d = SD;                                                                        \
      }                                                                                       \
    }                                                                                         \
  }
#define CONV_FOR_DST(DD, TD, LD, SD) MT_FOREACH_DTYPE_B(DEF_CONV, DD, TD, SD)
MT_FOREACH_DTYPE(CONV_FOR_DST)

static mt_loop_fn conv_table[MT_DTYPE_MAX][MT_DTYPE_MAX];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static void init_table(void) {
#define SET_CONV(DD, TD, SD, DS, TS, LS, SS) conv_table[DD][DS] = conv_##DD##_##DS;
#define SET_FOR_DST(DD, TD, LD, SD) MT_FOREACH_DTYPE_B(SET_CONV, DD, TD, SD)
  MT_FOREACH_DTYPE(SET_FOR_DST)
}

static void memcpy_loop(void *ctx, char **p, const int64_t *st, int64_t n) {
  size_t item = *(size_t *)ctx;
  if (st[0] == (int64_t)item && st[1] == (int64_t)item) {
    memcpy(p[0], p[1], (size_t)n * item);
    return;
  }
  char *d = p[0];
  const char *s = p[1];
  switch (item) {
#define STRIDED(T) for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) *(T *)d = *(const T *)s; break;
    case 1: STRIDED(uint8_t)
    case 2: STRIDED(uint16_t)
    case 4: STRIDED(uint32_t)
    case 8: STRIDED(uint64_t)
#undef STRIDED
    default:
      for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) memcpy(d, s, item);
  }
}

typedef struct { char *d; const char *s; } flat_copy;
static void flat_copy_range(void *ctx, int64_t b, int64_t e) {
  flat_copy *f = ctx;
  memcpy(f->d + b, f->s + b, (size_t)(e - b));
}

/* dst <- src where src already has dst's shape (or broadcasts to it) and they do not overlap. */
static mt_status copy_nonoverlapping(mt_tensor *dst, const mt_tensor *src) {
  if (dst->_dtype == src->_dtype && (dst->_flags & src->_flags & MT_TENSOR_CONTIGUOUS) &&
      dst->_numel == src->_numel) {
    bool same = dst->_ndim == src->_ndim;
    for (int i = 0; same && i < dst->_ndim; i++) same = dst->_sizes[i] == src->_sizes[i];
    if (same || src->_numel == dst->_numel) {
      size_t bytes = (size_t)dst->_numel * mt_itemsize(dst->_dtype);
      flat_copy f = {dst->_data, src->_data};
      mt_parallel_for((int64_t)bytes, (int64_t)MT_GRAIN * 8, flat_copy_range, &f);
      return MT_OK;
    }
  }
  pthread_once(&table_once, init_table);
  mt_tensor *ops[2] = {dst, (mt_tensor *)src};
  mt_iter it;
  mt_iter_init(&it, ops, 2, dst->_sizes, dst->_ndim);
  if (dst->_dtype == src->_dtype) {
    size_t item = mt_itemsize(dst->_dtype);
    mt_iter_run(&it, memcpy_loop, &item, MT_GRAIN);
  } else {
    mt_iter_run(&it, conv_table[dst->_dtype][src->_dtype], NULL, MT_GRAIN);
  }
  return MT_OK;
}

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

static mt_status copy_impl(mt_tensor *dst, const mt_tensor *src) {
  MT_TRY(mt_check_tensor(dst, "copy_", "self"));
  MT_TRY(mt_check_tensor(src, "copy_", "src"));
  MT_TRY(check_broadcast_to(dst, src, "copy_"));
  if (dst == src) return MT_OK;
  mt_bump_version(dst);
  if (mt_may_overlap(dst, src)) {
    if (dst->_storage == src->_storage && dst->_offset == src->_offset && dst->_dtype == src->_dtype &&
        dst->_ndim == src->_ndim &&
        !memcmp(dst->_sizes, src->_sizes, sizeof(int64_t) * (size_t)dst->_ndim) &&
        !memcmp(dst->_strides, src->_strides, sizeof(int64_t) * (size_t)dst->_ndim))
      return MT_OK; /* the same elements */
    mt_tensor *tmp;
    MT_TRY(mt_new(src->_sizes, src->_ndim, src->_dtype, "copy_", &tmp));
    copy_nonoverlapping(tmp, src);
    copy_nonoverlapping(dst, tmp);
    mt_tensor_release(tmp);
    return MT_OK;
  }
  return copy_nonoverlapping(dst, src);
}

static mt_status clone_impl(mt_tensor *t, mt_tensor **out) {
  MT_TRY(mt_check_tensor(t, "clone", "input"));
  mt_tensor *r;
  MT_TRY(mt_new(t->_sizes, t->_ndim, t->_dtype, "clone", &r));
  copy_nonoverlapping(r, t);
  *out = r;
  return MT_OK;
}

static mt_status to_dtype_impl(mt_tensor *t, int dtype, int copy, mt_tensor **out) {
  MT_TRY(mt_check_tensor(t, "to", "input"));
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "to: invalid dtype %d", dtype);
  if (t->_dtype == dtype && !copy) {
    *out = mt_tensor_retain(t);
    return MT_OK;
  }
  mt_tensor *r;
  MT_TRY(mt_new(t->_sizes, t->_ndim, dtype, "to", &r));
  copy_nonoverlapping(r, t);
  *out = r;
  return MT_OK;
}

/* ---------------------------------------------------------------- fill */
typedef struct { char bytes[8]; size_t item; } fill_ctx;

static void fill_loop(void *ctx, char **p, const int64_t *st, int64_t n) {
  fill_ctx *f = ctx;
  char *d = p[0];
  switch (f->item) {
#define FILL(T)                                                  \
  {                                                              \
    T v;                                                         \
    memcpy(&v, f->bytes, sizeof v);                              \
    if (st[0] == sizeof(T)) for (int64_t i = 0; i < n; i++) ((T *)d)[i] = v; \
    else for (int64_t i = 0; i < n; i++, d += st[0]) *(T *)d = v; \
  } break;
    case 1: FILL(uint8_t)
    case 2: FILL(uint16_t)
    case 4: FILL(uint32_t)
    case 8: FILL(uint64_t)
#undef FILL
  }
}

/* The bytes of `value` stored as dtype. */
static void encode_value(int dtype, double value, char *bytes) {
  switch (dtype) {
#define X(DT, T, L, S) case DT: { double v = value; T x = S; memcpy(bytes, &x, sizeof x); } break;
    MT_FOREACH_DTYPE(X)
#undef X
  }
}

static mt_status fill_impl(mt_tensor *t, double value) {
  MT_TRY(mt_check_tensor(t, "fill_", "self"));
  mt_bump_version(t);
  fill_ctx f;
  f.item = mt_itemsize(t->_dtype);
  encode_value(t->_dtype, value, f.bytes);
  if (value == 0 && (t->_flags & MT_TENSOR_CONTIGUOUS) && (value == 0 && !signbit(value))) {
    memset(t->_data, 0, (size_t)t->_numel * f.item);
    return MT_OK;
  }
  mt_tensor *ops[1] = {t};
  mt_iter it;
  mt_iter_init(&it, ops, 1, t->_sizes, t->_ndim);
  mt_iter_run(&it, fill_loop, &f, MT_GRAIN);
  return MT_OK;
}

mt_status mt_zero_(mt_tensor *t) { return mt_fill_(t, 0.0); }

/* ---------------------------------------------------------------- element access */
/* one element as the double handed out (NaNs canonical: see mt_number_out) */
static double load_double(int dtype, const char *p) {
  switch (dtype) {
#define X(DT, T, L, S) case DT: { T x = *(const T *)p; return mt_canonical_double((double)(L)); }
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return 0;
}

mt_status mt_tensor_item(const mt_tensor *t, double *out) {
  MT_TRY(mt_check_tensor(t, "item", "input"));
  if (t->_numel != 1)
    return mt_error(MT_EINVAL, "item: a Tensor with %lld elements cannot be converted to Scalar", (long long)t->_numel);
  *out = load_double(t->_dtype, t->_data);
  return MT_OK;
}

mt_status mt_tensor_item_int64(const mt_tensor *t, int64_t *out) {
  MT_TRY(mt_check_tensor(t, "item", "input"));
  if (t->_numel != 1)
    return mt_error(MT_EINVAL, "item: a Tensor with %lld elements cannot be converted to Scalar", (long long)t->_numel);
  if (t->_dtype == MT_INT64) *out = *(const int64_t *)t->_data;
  else *out = (int64_t)load_double(t->_dtype, t->_data);
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
  *out = load_double(t->_dtype, p);
  return MT_OK;
}

mt_status mt_tensor_set(mt_tensor *t, const int64_t *index, double value) {
  char *p;
  MT_TRY(element_ptr(t, index, "set", &p));
  encode_value(t->_dtype, value, p);
  mt_bump_version(t);
  return MT_OK;
}

mt_status mt_tensor_to_doubles(const mt_tensor *t, double *out, int64_t n) {
  MT_TRY(mt_check_tensor(t, "tolist", "input"));
  if (n != t->_numel)
    return mt_error(MT_EINVAL, "tolist: buffer holds %lld values, tensor has %lld", (long long)n, (long long)t->_numel);
  mt_tensor *view;
  int64_t one = n;
  MT_TRY(mt_tensor_from_blob(out, &one, NULL, 1, MT_FLOAT64, NULL, NULL, &view));
  mt_tensor *flat;
  mt_status s = MT_NOGRAD(mt_reshape((mt_tensor *)t, &one, 1, &flat));
  if (s == MT_OK) {
    s = copy_impl(view, flat);
    mt_tensor_release(flat);
  }
  mt_tensor_release(view);
  if (s == MT_OK && mt_is_float(t->_dtype))
    for (int64_t i = 0; i < n; i++) out[i] = mt_canonical_double(out[i]);
  return s;
}

mt_status mt_tensor_to_int64s(const mt_tensor *t, int64_t *out, int64_t n) {
  MT_TRY(mt_check_tensor(t, "tolist", "input"));
  if (n != t->_numel)
    return mt_error(MT_EINVAL, "tolist: buffer holds %lld values, tensor has %lld", (long long)n, (long long)t->_numel);
  mt_tensor *view, *flat;
  int64_t one = n;
  MT_TRY(mt_tensor_from_blob(out, &one, NULL, 1, MT_INT64, NULL, NULL, &view));
  mt_status s = MT_NOGRAD(mt_reshape((mt_tensor *)t, &one, 1, &flat));
  if (s == MT_OK) {
    s = copy_impl(view, flat);
    mt_tensor_release(flat);
  }
  mt_tensor_release(view);
  return s;
}

mt_status mt_tensor_from_doubles(mt_tensor *t, const double *src, int64_t n) {
  MT_TRY(mt_check_tensor(t, "from_doubles", "input"));
  if (n != t->_numel)
    return mt_error(MT_EINVAL, "from_doubles: %lld values given, tensor has %lld", (long long)n, (long long)t->_numel);
  mt_tensor *view;
  MT_TRY(mt_tensor_from_blob((void *)src, t->_sizes, NULL, t->_ndim, MT_FLOAT64, NULL, NULL, &view));
  mt_status s = copy_impl(t, view);
  mt_tensor_release(view);
  return s;
}

/* ---------------------------------------------------------------- autograd entry points */
mt_status mt_clone(mt_tensor *t, mt_tensor **out) {
  MT_TRY(clone_impl(t, out));
  if (!mt_grad_on1(t)) return MT_OK;
  mt_status s = mt_record_clone(t, 0, *out);
  if (s) { mt_tensor_release(*out); *out = NULL; }
  return s;
}

mt_status mt_to_dtype(mt_tensor *t, int dtype, int copy, mt_tensor **out) {
  MT_TRY(to_dtype_impl(t, dtype, copy, out));
  if (*out == t || !mt_grad_on1(t)) return MT_OK;
  mt_status s = mt_record_clone(t, t->_dtype != dtype, *out);
  if (s) { mt_tensor_release(*out); *out = NULL; }
  return s;
}

/* In-place writes into the graph: a copy_ or fill_ over a whole tensor is recorded (PyTorch's
 * CopyBackwards / FillBackward2: the old value gets a zero gradient, src the gradient). Writes
 * into part of a tensor would need PyTorch's CopySlices, which moontorch does not have: they are
 * refused when the graph is involved. */
mt_status mt_copy_(mt_tensor *dst, const mt_tensor *src) {
  if (!(mt_grad_mode && dst && src && mt_grad_on2(dst, src))) return copy_impl(dst, src);
  MT_TRY(mt_grad_check_inplace(dst, "copy_"));
  MT_TRY(mt_grad_check_whole_write(dst, "copy_"));
  MT_TRY(copy_impl(dst, src));
  return mt_record_copy(dst, (mt_tensor *)src);
}

mt_status mt_fill_(mt_tensor *t, double value) {
  if (!(t && mt_grad_on1(t))) return fill_impl(t, value);
  MT_TRY(mt_grad_check_inplace(t, "fill_"));
  MT_TRY(mt_grad_check_whole_write(t, "fill_"));
  MT_TRY(fill_impl(t, value));
  return mt_record_copy(t, NULL);
}
