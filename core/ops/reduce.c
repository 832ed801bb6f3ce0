/* reduce.c -- the front doors of the reductions (sum, mean, prod, amax, amin, all, any, var, std,
 * norm, logsumexp, nansum, count_nonzero), max/min with indices, argmax, cumsum/cumprod, softmax,
 * var_mean, equal, isclose and allclose: the result's dtype (PyTorch's rules) and shape, then
 * the reduction kernels of the input's device. */
#include "dispatch.h"

#include <stdio.h>

/* Which dims of a are reduced: ndims == 0 means all. Records "<op>: ..." on failure. */
static mt_status parse_dims(const mt_tensor *a, const int64_t *dims, int ndims, const char *name, bool *mask) {
  int nd = a->_ndim;
  for (int d = 0; d < MT_MAX_DIMS; d++) mask[d] = false;
  if (ndims < 0 || ndims > MT_MAX_DIMS) return mt_error(MT_EINVAL, "%s: %d dimensions given", name, ndims);
  if (ndims == 0) {
    for (int d = 0; d < nd; d++) mask[d] = true;
    return MT_OK;
  }
  if (!dims) return mt_error(MT_EINVAL, "%s: dims is NULL", name);
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < -1000000 || dims[i] > 1000000)
      return mt_error(MT_ERANGE, "%s: dimension %lld out of range (expected to be in range of [%d, %d])", name,
                      (long long)dims[i], nd > 0 ? -nd : -1, nd > 0 ? nd - 1 : 0);
    int w;
    MT_TRY(mt_wrap_dim((int)dims[i], nd, name, &w));
    if (nd == 0) continue; /* a scalar: dim 0 / -1 reduce nothing */
    if (mask[w]) return mt_error(MT_EINVAL, "%s: dim %d appears multiple times in the list of dims", name, w);
    mask[w] = true;
  }
  return MT_OK;
}

static mt_status reduce_impl(mt_op op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, int dtype, double p,
                             mt_tensor *out, mt_tensor **result, const char *name) {
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_kernel(op, a));
  if (dtype >= 0 && !mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: unknown dtype %d", name, dtype);
  int in_dt = a->_dtype;
  bool in_float = mt_is_float(in_dt);
  int out_dt = in_dt;
  switch (op) {
    case MT_OP_SUM:
    case MT_OP_PROD:
    case MT_OP_NANSUM:
      out_dt = dtype >= 0 ? dtype : (in_float ? in_dt : MT_INT64);
      break;
    case MT_OP_MEAN:
      if (dtype >= 0 && !mt_is_float(dtype))
        return mt_error(MT_EDTYPE,
                        "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
                        "complex dtype. Got: %s",
                        mt_type_title(dtype));
      if (dtype < 0 && !in_float)
        return mt_error(MT_EDTYPE,
                        "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                        "complex dtype. Got: %s",
                        mt_type_title(in_dt));
      out_dt = dtype >= 0 ? dtype : in_dt;
      break;
    case MT_OP_AMAX:
    case MT_OP_AMIN:
      out_dt = dtype >= 0 ? dtype : in_dt;
      break;
    case MT_OP_ALL:
    case MT_OP_ANY:
      out_dt = dtype >= 0 ? dtype : (in_dt == MT_UINT8 ? MT_UINT8 : MT_BOOL);
      break;
    case MT_OP_COUNT_NONZERO:
      out_dt = dtype >= 0 ? dtype : MT_INT64;
      break;
    case MT_OP_VAR:
    case MT_OP_STD:
      if (!in_float) return mt_error(MT_EDTYPE, "%s: std and var only support floating point and complex dtypes (got %s)", name, mt_dtype_name(in_dt));
      if (dtype >= 0 && !mt_is_float(dtype))
        return mt_error(MT_EDTYPE, "%s: the dtype must be a floating point dtype, got %s", name, mt_dtype_name(dtype));
      out_dt = dtype >= 0 ? dtype : in_dt;
      if (!(p >= 0) && !isnan(p)) return mt_error(MT_EINVAL, "%s: correction must be non-negative, got %g", name, p);
      break;
    case MT_OP_NORM:
      if (!in_float)
        return mt_error(MT_EDTYPE, "norm(): input dtype should be either floating point or complex. Got %s instead.",
                        mt_type_title(in_dt));
      if (dtype >= 0 && !mt_is_float(dtype))
        return mt_error(MT_EDTYPE, "%s: the dtype must be a floating point dtype, got %s", name, mt_dtype_name(dtype));
      if (isnan(p)) return mt_error(MT_EINVAL, "%s: the order p must be a number, got nan", name);
      out_dt = dtype >= 0 ? dtype : in_dt;
      break;
    case MT_OP_LOGSUMEXP:
      if (dtype >= 0 && !mt_is_float(dtype))
        return mt_error(MT_EDTYPE, "%s: the dtype must be a floating point dtype, got %s", name, mt_dtype_name(dtype));
      out_dt = dtype >= 0 ? dtype : (in_float ? in_dt : mt_get_default_dtype());
      break;
    default: return mt_error(MT_EINVAL, "reduce: unknown reduction op %d", op);
  }
  bool mask[MT_MAX_DIMS];
  MT_TRY(parse_dims(a, dims, ndims, name, mask));
  if (op == MT_OP_AMAX || op == MT_OP_AMIN) {
    if (a->_numel == 0 && (ndims == 0 || a->_ndim == 0))
      return mt_error(MT_ESHAPE,
                      "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                      "with the 'dim' argument.",
                      name);
    for (int d = 0; d < a->_ndim; d++)
      if (mask[d] && a->_sizes[d] == 0)
        return mt_error(MT_ESHAPE, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
  }
  int64_t osizes[MT_MAX_DIMS];
  int ond = 0;
  for (int d = 0; d < a->_ndim; d++)
    if (!mask[d]) osizes[ond++] = a->_sizes[d];
    else if (keepdim) osizes[ond++] = 1;
  mt_tensor *r = NULL;
  MT_TRY(mt_out_or_new(out, mt_device_of(a), osizes, ond, out_dt, name, &r));
  const mt_kernels *k = mt_kernels_of(a);
  mt_status s;
  if (out && mt_may_overlap(out, a)) {
    /* write into a fresh tensor, then copy */
    mt_tensor *tmp;
    s = mt_new(mt_device_of(a), osizes, ond, out_dt, name, &tmp);
    if (s != MT_OK) { mt_tensor_release(r); return s; }
    s = k->reduce(op, tmp, a, mask, keepdim, p);
    if (s == MT_OK) s = mt_copy_(r, tmp);
    mt_tensor_release(tmp);
  } else {
    s = k->reduce(op, r, a, mask, keepdim, p);
  }
  if (s != MT_OK) { mt_tensor_release(r); return s; }
  if (out) mt_bump_version(r);
  return mt_give(r, result);
}

static mt_status with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base, mt_tensor **values,
                            mt_tensor **indices, const char *name) {
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_kernel(values ? (is_min ? MT_OP_MIN : MT_OP_MAX) : (is_min ? MT_OP_ARGMIN : MT_OP_ARGMAX), a));
  int w;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, name, &w));
  int nd = a->_ndim;
  int64_t n = nd ? a->_sizes[w] : 1;
  if (n == 0) return mt_error(MT_ESHAPE, "%s(): Expected reduction dim %d to have non-zero size.", name, w);
  int64_t osizes[MT_MAX_DIMS];
  int ond = 0;
  for (int d = 0; d < nd; d++) {
    if (d == w) {
      if (keepdim) osizes[ond++] = 1;
    } else {
      osizes[ond++] = a->_sizes[d];
    }
  }
  mt_tensor *v = NULL, *ix = NULL;
  if (values) MT_TRY(mt_new(mt_device_of(a), osizes, ond, a->_dtype, name, &v));
  mt_status s = mt_new(mt_device_of(a), osizes, ond, MT_INT64, name, &ix);
  if (s != MT_OK) {
    if (v) mt_tensor_release(v);
    return s;
  }
  s = mt_kernels_of(a)->reduce_index(v, ix, a, w, keepdim, is_min, index_base);
  if (s != MT_OK) {
    if (v) mt_tensor_release(v);
    mt_tensor_release(ix);
    return s;
  }
  if (values) *values = v;
  if (indices) *indices = ix;
  else mt_tensor_release(ix);
  return MT_OK;
}

static mt_status reduce_with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                               mt_tensor **values, mt_tensor **indices) {
  return with_index(a, dim, keepdim, is_min, index_base, values, indices, is_min ? "min" : "max");
}

mt_status mt_argmax(mt_tensor *a, int dim, int flat, int keepdim, int is_min, int64_t index_base,
                    mt_tensor **result) {
  const char *name = is_min ? "argmin" : "argmax";
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_kernel(is_min ? MT_OP_ARGMIN : MT_OP_ARGMAX, a));
  if (!flat) return with_index(a, dim, keepdim, is_min, index_base, NULL, result, name);
  if (a->_numel == 0)
    return mt_error(MT_ESHAPE, "%s(): Expected reduction dim to be specified for input.numel() == 0.", name);
  /* over the elements in row-major order: a contiguous copy seen as one line */
  mt_tensor *c, *line = NULL;
  MT_TRY(mt_contiguous(a, &c));
  int64_t n = c->_numel, one = 1;
  mt_status s = mt_new_view(c, &n, &one, 1, c->_offset, &line);
  mt_tensor_release(c);
  if (s) return s;
  int64_t ones[MT_MAX_DIMS];
  for (int d = 0; d < a->_ndim; d++) ones[d] = 1;
  mt_tensor *r = NULL;
  s = mt_new(mt_device_of(a), ones, keepdim ? a->_ndim : 0, MT_INT64, name, &r);
  if (s == MT_OK) s = mt_kernels_of(line)->reduce_index(NULL, r, line, 0, 0, is_min, index_base);
  mt_tensor_release(line);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status cumulative(mt_tensor *a, int dim, int is_prod, int dtype, mt_tensor *out, mt_tensor **result) {
  const char *name = is_prod ? "cumprod" : "cumsum";
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_kernel(is_prod ? MT_OP_CUMPROD : MT_OP_CUMSUM, a));
  if (dtype >= 0 && !mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: unknown dtype %d", name, dtype);
  int w;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, name, &w));
  int out_dt = dtype >= 0 ? dtype : (mt_is_float(a->_dtype) ? a->_dtype : MT_INT64);
  mt_tensor *r = NULL;
  MT_TRY(mt_out_or_new(out, mt_device_of(a), a->_sizes, a->_ndim, out_dt, name, &r));
  mt_status s;
  if (out && mt_may_overlap(out, a) && r->_data != a->_data) {
    mt_tensor *tmp = NULL;
    s = mt_new(mt_device_of(a), a->_sizes, a->_ndim, out_dt, name, &tmp);
    if (s == MT_OK) s = mt_kernels_of(a)->cumulative(tmp, a, w, is_prod);
    if (s == MT_OK) s = mt_copy_(r, tmp);
    if (tmp) mt_tensor_release(tmp);
  } else {
    s = mt_kernels_of(a)->cumulative(r, a, w, is_prod);
  }
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  if (out) mt_bump_version(r);
  return mt_give(r, result);
}

static mt_status softmax(mt_tensor *a, int dim, int log, int dtype, mt_tensor **result) {
  const char *name = log ? "log_softmax" : "softmax";
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_kernel(log ? MT_OP_LOG_SOFTMAX : MT_OP_SOFTMAX, a));
  if (dtype >= 0 && !mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: unknown dtype %d", name, dtype);
  int out_dt = dtype >= 0 ? dtype : a->_dtype;
  if (!mt_is_float(out_dt))
    return mt_error(MT_EDTYPE, "%s: expected a floating point tensor or dtype, got %s (PyTorch: not implemented for '%s')",
                    name, mt_dtype_name(out_dt), mt_type_title(out_dt));
  int w;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, name, &w));
  mt_tensor *r = NULL;
  MT_TRY(mt_new(mt_device_of(a), a->_sizes, a->_ndim, out_dt, name, &r));
  mt_status s = mt_kernels_of(a)->softmax(r, a, w, log);
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- var_mean */
static mt_status var_mean(mt_tensor *a, const int64_t *dims, int ndims, double correction, int keepdim, int take_sqrt,
                      mt_tensor **var, mt_tensor **mean) {
  const char *name = take_sqrt ? "std_mean" : "var_mean";
  MT_TRY(mt_check_tensor(a, name, "input"));
  if (!mt_is_float(a->_dtype))
    return mt_error(MT_EDTYPE, "%s: %s only support floating point and complex dtypes (got %s)", name, name,
                    mt_dtype_name(a->_dtype));
  mt_tensor *v, *m;
  MT_TRY(reduce_impl(take_sqrt ? MT_OP_STD : MT_OP_VAR, a, dims, ndims, keepdim, -1, correction, NULL, &v,
                     name));
  mt_status s = reduce_impl(MT_OP_MEAN, a, dims, ndims, keepdim, -1, 0, NULL, &m, name);
  if (s != MT_OK) {
    mt_tensor_release(v);
    return s;
  }
  mt_give(v, var);
  mt_give(m, mean);
  return MT_OK;
}

/* ---------------------------------------------------------------- equal / isclose / allclose */
static mt_status all_true(mt_tensor *t, int *result, const char *name) {
  MT_TRY(mt_check_data(t, name)); /* a bool out of the data */
  mt_tensor *r = NULL;
  MT_TRY(reduce_impl(MT_OP_ALL, t, NULL, 0, 0, MT_BOOL, 0, NULL, &r, name));
  double v = 0;
  mt_status s = mt_tensor_item(r, &v);
  mt_tensor_release(r);
  *result = v != 0;
  return s;
}

mt_status mt_equal(mt_tensor *a, mt_tensor *b, int *result) {
  MT_TRY(mt_check_tensor(a, "equal", "input"));
  MT_TRY(mt_check_tensor(b, "equal", "other"));
  if (!result) return mt_error(MT_EINVAL, "equal: result is NULL");
  MT_TRY(mt_check_same_device("equal", a, b));
  MT_TRY(mt_check_data(a, "equal"));
  *result = 0;
  if (a->_ndim != b->_ndim) return MT_OK;
  for (int d = 0; d < a->_ndim; d++)
    if (a->_sizes[d] != b->_sizes[d]) return MT_OK;
  if (a->_numel == 0) {
    *result = 1;
    return MT_OK;
  }
  mt_tensor *eq;
  MT_TRY(mt_binary(MT_OP_EQ, a, b, NULL, &eq));
  mt_status s = all_true(eq, result, "equal");
  mt_tensor_release(eq);
  return s;
}

static mt_status isclose_impl(mt_tensor *a, mt_tensor *b, double rtol, double atol, int equal_nan, mt_tensor **result,
                              const char *name) {
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_tensor(b, name, "other"));
  MT_TRY(mt_check_same_device(name, a, b));
  MT_TRY(mt_check_kernel(MT_OP_ISCLOSE, a));
  if (a->_dtype != b->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected both tensors to have the same dtype, got %s and %s", name,
                    mt_dtype_name(a->_dtype), mt_dtype_name(b->_dtype));
  if (!(rtol >= 0)) return mt_error(MT_EINVAL, "%s: rtol must be greater than or equal to zero, but got %g", name, rtol);
  if (!(atol >= 0)) return mt_error(MT_EINVAL, "%s: atol must be greater than or equal to zero, but got %g", name, atol);
  int64_t shape[MT_MAX_DIMS];
  int nd;
  if (mt_broadcast_shapes(a->_sizes, a->_ndim, b->_sizes, b->_ndim, shape, &nd) != MT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", mt_last_error());
    return mt_error(MT_ESHAPE, "%s: %s (shapes %s and %s)", name, msg, MT_SHAPE(a), MT_SHAPE(b));
  }
  mt_tensor *r = NULL;
  MT_TRY(mt_new(mt_device_of(a), shape, nd, MT_BOOL, name, &r));
  mt_status s = mt_kernels_of(a)->isclose(r, a, b, rtol, atol, equal_nan);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_isclose(mt_tensor *a, mt_tensor *b, double rtol, double atol, int equal_nan, mt_tensor **result) {
  return isclose_impl(a, b, rtol, atol, equal_nan, result, "isclose");
}

mt_status mt_allclose(mt_tensor *a, mt_tensor *b, double rtol, double atol, int equal_nan, int *result) {
  if (!result) return mt_error(MT_EINVAL, "allclose: result is NULL");
  mt_tensor *c;
  MT_TRY(isclose_impl(a, b, rtol, atol, equal_nan, &c, "allclose"));
  mt_status s = all_true(c, result, "allclose");
  mt_tensor_release(c);
  return s;
}

/* ---------------------------------------------------------------- the front doors */
mt_status mt_reduce(mt_op op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, int dtype, double p,
                    mt_tensor *out, mt_tensor **result) {
  if (!mt_op_is_reduce(op)) return mt_error(MT_EINVAL, "reduce: %d is no reduction", op);
  if (mt_records(a) && mt_autograd.reduce) return mt_autograd.reduce(op, a, dims, ndims, keepdim, dtype, p, out, result);
  return reduce_impl(op, a, dims, ndims, keepdim, dtype, p, out, result, MT_OP_NAME(op));
}

mt_status mt_reduce_with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                               mt_tensor **values, mt_tensor **indices) {
  if (mt_records(a) && mt_autograd.reduce_with_index)
    return mt_autograd.reduce_with_index(a, dim, keepdim, is_min, index_base, values, indices);
  return reduce_with_index(a, dim, keepdim, is_min, index_base, values, indices);
}

mt_status mt_softmax(mt_tensor *a, int dim, int log, int dtype, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.softmax) return mt_autograd.softmax(a, dim, log, dtype, result);
  return softmax(a, dim, log, dtype, result);
}

mt_status mt_cumulative(mt_tensor *a, int dim, int is_prod, int dtype, mt_tensor *out, mt_tensor **result) {
  if (mt_records(a) && mt_autograd.cumulative) return mt_autograd.cumulative(a, dim, is_prod, dtype, out, result);
  return cumulative(a, dim, is_prod, dtype, out, result);
}

mt_status mt_var_mean(mt_tensor *a, const int64_t *dims, int ndims, double correction, int keepdim, int take_sqrt,
                      mt_tensor **var, mt_tensor **mean) {
  if (mt_records(a) && mt_autograd.var_mean)
    return mt_autograd.var_mean(a, dims, ndims, correction, keepdim, take_sqrt, var, mean);
  return var_mean(a, dims, ndims, correction, keepdim, take_sqrt, var, mean);
}
