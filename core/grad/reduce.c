/* reduce.c -- autograd for the reductions, max/min with indices, softmax, cumsum/cumprod and
 * var_mean. */
#include "grad.h"

static mt_status grad_reduce(int op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, int dtype, double p,
                             mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, mt_reduce_op_name(op)));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_reduce(op, a, dims, ndims, keepdim, dtype, p, NULL, &r)));
  mt_status s = mt_record_reduce(op, a, dims, ndims, keepdim, p, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* max/min along a dim: the backward needs the indices 0-based */
static mt_status grad_reduce_with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                                        mt_tensor **values, mt_tensor **indices) {
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(mt_reduce_with_index(a, dim, keepdim, is_min, index_base, &v, &i)));
  mt_tensor *i0 = NULL;
  int d = dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim;
  mt_status s = index_base ? MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i, (double)index_base, 1, 0, NULL, &i0))
                           : (i0 = mt_tensor_retain(i), MT_OK);
  if (s == MT_OK) s = mt_record_reduce_index(a, d, keepdim, is_min, i0, v);
  mt_tensor_release(i0);
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}

static mt_status grad_softmax(mt_tensor *a, int dim, int log, int dtype, mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_softmax(a, dim, log, dtype, &r)));
  mt_status s = mt_record_softmax(a, dim, log, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status grad_cumulative(mt_tensor *a, int dim, int is_prod, int dtype, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, is_prod ? "cumprod" : "cumsum"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_cumulative(a, dim, is_prod, dtype, NULL, &r)));
  mt_status s = mt_record_cumulative(a, dim, is_prod, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status grad_var_mean(mt_tensor *a, const int64_t *dims, int ndims, double correction, int keepdim,
                               int take_sqrt, mt_tensor **var, mt_tensor **mean) {
  mt_tensor *v = NULL, *m = NULL;
  MT_TRY(MT_NOGRAD(mt_var_mean(a, dims, ndims, correction, keepdim, take_sqrt, &v, &m)));
  mt_status s = mt_record_var_mean(a, dims, ndims, keepdim, correction, take_sqrt, v, m);
  if (s) { mt_tensor_release(v); mt_tensor_release(m); return s; }
  mt_give(v, var);
  return mt_give(m, mean);
}

void mt_grad_register_reduce(mt_autograd_ops *t) {
  t->reduce = grad_reduce;
  t->reduce_with_index = grad_reduce_with_index;
  t->softmax = grad_softmax;
  t->cumulative = grad_cumulative;
  t->var_mean = grad_var_mean;
}
