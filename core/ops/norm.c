/* norm.c -- the front door of the fused layer norm (issue 12, the modules part): PyTorch's
 * native_layer_norm, y = (x - mean) * rstd * weight + bias over the last `nnorm` dims of x, with
 * rstd = 1 / sqrt(biased variance + eps); the row statistics come back too (for the backward).
 * Its derivative is core/grad/norm.c, its CPU kernels core/tensor/norm.c. */
#include "norm.h"

static mt_status check_affine(const char *what, const mt_tensor *t, const mt_tensor *x, int64_t n) {
  MT_TRY(mt_check_tensor(t, "layer_norm", what));
  MT_TRY(mt_check_same_device("layer_norm", x, t));
  if (t->_dtype != x->_dtype)
    return mt_error(MT_EDTYPE, "layer_norm: expected %s of the input's dtype %s, got %s", what,
                    mt_dtype_name(x->_dtype), mt_dtype_name(t->_dtype));
  if (t->_numel != n)
    return mt_error(MT_ESHAPE, "layer_norm: expected %s with %lld elements (the normalized shape's), got %lld", what,
                    (long long)n, (long long)t->_numel);
  return MT_OK;
}

/* the rows and row length of x for nnorm trailing dims */
static mt_status geometry(const mt_tensor *x, int nnorm, const char *op, int64_t *m, int64_t *n) {
  if (nnorm < 1 || nnorm > x->_ndim)
    return mt_error(MT_EINVAL, "%s: expected 1 to %d normalized dims for an input of %d dims, got %d", op,
                    x->_ndim, x->_ndim, nnorm);
  int64_t k = 1;
  for (int d = x->_ndim - nnorm; d < x->_ndim; d++) k *= x->_sizes[d];
  *n = k;
  *m = k ? x->_numel / k : 0;
  if (!k) {
    int64_t r = 1;
    for (int d = 0; d < x->_ndim - nnorm; d++) r *= x->_sizes[d];
    *m = r;
  }
  return MT_OK;
}

static mt_status layer_norm(mt_tensor *x, mt_tensor *weight, mt_tensor *bias, int nnorm, double eps,
                            mt_tensor **result, mt_tensor **mean_out, mt_tensor **rstd_out) {
  MT_TRY(mt_check_tensor(x, "layer_norm", "input"));
  MT_TRY(mt_check_kernel(MT_OP_LAYER_NORM, x));
  if (x->_dtype != MT_FLOAT32 && x->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "layer_norm: expected a float32 or float64 input, got %s", mt_dtype_name(x->_dtype));
  int64_t m = 0, n = 0;
  MT_TRY(geometry(x, nnorm, "layer_norm", &m, &n));
  if (weight) MT_TRY(check_affine("weight", weight, x, n));
  if (bias) MT_TRY(check_affine("bias", bias, x, n));
  int64_t stat[MT_MAX_DIMS];
  for (int d = 0; d < x->_ndim; d++) stat[d] = d < x->_ndim - nnorm ? x->_sizes[d] : 1;
  mt_tensor *xc = NULL, *wc = NULL, *bc = NULL, *r = NULL, *mu = NULL, *rs = NULL;
  mt_status s = mt_contiguous(x, &xc);
  if (!s && weight) s = mt_contiguous(weight, &wc);
  if (!s && bias) s = mt_contiguous(bias, &bc);
  if (!s) s = mt_new(mt_device_of(x), x->_sizes, x->_ndim, x->_dtype, "layer_norm", &r);
  if (!s && mean_out) s = mt_new(mt_device_of(x), stat, x->_ndim, x->_dtype, "layer_norm", &mu);
  if (!s && rstd_out) s = mt_new(mt_device_of(x), stat, x->_ndim, x->_dtype, "layer_norm", &rs);
  if (!s) s = mt_kernels_of(x)->layer_norm(r, mu, rs, xc, wc, bc, m, n, eps);
  mt_tensor_release(xc);
  mt_tensor_release(wc);
  mt_tensor_release(bc);
  if (s) {
    mt_tensor_release(r);
    mt_tensor_release(mu);
    mt_tensor_release(rs);
    return s;
  }
  if (mean_out) *mean_out = mu;
  if (rstd_out) *rstd_out = rs;
  return mt_give(r, result);
}

mt_status mt_layer_norm(mt_tensor *x, mt_tensor *weight, mt_tensor *bias, int nnorm, double eps, mt_tensor **result,
                        mt_tensor **mean, mt_tensor **rstd) {
  if ((mt_records(x) || mt_records2(weight, bias)) && mt_autograd.layer_norm)
    return mt_autograd.layer_norm(x, weight, bias, nnorm, eps, result, mean, rstd);
  return layer_norm(x, weight, bias, nnorm, eps, result, mean, rstd);
}

mt_status mt_layer_norm_backward(mt_tensor *g, mt_tensor *x, mt_tensor *weight, mt_tensor *mean, mt_tensor *rstd,
                                 int nnorm, mt_tensor **gx, mt_tensor **gw, mt_tensor **gb) {
  int64_t m = 0, n = 0;
  MT_TRY(geometry(x, nnorm, "layer_norm_backward", &m, &n));
  MT_TRY(mt_check_kernel(MT_OP_LAYER_NORM, x));
  mt_tensor *gc = NULL, *xc = NULL, *wc = NULL, *rx = NULL, *rw = NULL, *rb = NULL, *gcv = NULL;
  mt_status s = MT_OK;
  /* g in x's dtype, contiguous */
  if (g->_dtype != x->_dtype) s = mt_as_dtype(g, x->_dtype, &gcv);
  if (!s) s = mt_contiguous(gcv ? gcv : g, &gc);
  if (!s) s = mt_contiguous(x, &xc);
  if (!s && weight) s = mt_contiguous(weight, &wc);
  if (!s && gx) s = mt_new(mt_device_of(x), x->_sizes, x->_ndim, x->_dtype, "layer_norm_backward", &rx);
  if (!s && gw) s = mt_new(mt_device_of(x), weight->_sizes, weight->_ndim, x->_dtype, "layer_norm_backward", &rw);
  if (!s && gb) s = mt_new(mt_device_of(x), weight ? weight->_sizes : x->_sizes + x->_ndim - nnorm,
                           weight ? weight->_ndim : nnorm, x->_dtype, "layer_norm_backward", &rb);
  if (!s) s = mt_kernels_of(x)->layer_norm_backward(rx, rw, rb, gc, xc, mean, rstd, wc, m, n);
  mt_tensor_release(gcv);
  mt_tensor_release(gc);
  mt_tensor_release(xc);
  mt_tensor_release(wc);
  if (s) {
    mt_tensor_release(rx);
    mt_tensor_release(rw);
    mt_tensor_release(rb);
    return s;
  }
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return MT_OK;
}
