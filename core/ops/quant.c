/* quant.c -- the front doors of quantization (issue 25): quantize and dequantize (per tensor, per channel),
 * the quantized linear product (dynamic: float32 out; static: uint8 out, requantized) and the quantized
 * 2-D convolution (uint8 im2col + the same product). A quantized tensor lives in Lua (lua/quantization/):
 * its integer values are an ordinary int8 / uint8 / int32 tensor and its quantizer is numbers or
 * float64 / int64 tensors, which these take. CPU only. */
#include "dispatch.h"

static mt_status cpu_only(const mt_tensor *t, const char *op, const char *what) {
  MT_TRY(mt_check_tensor(t, op, what));
  if (t->_device_type != MT_CPU)
    return mt_error(MT_EDEVICE, "%s: quantized computation runs on the CPU; %s is on %s", op, what,
                    mt_device_str(mt_device_of(t)));
  return MT_OK;
}

/* the quantizer's scales (float64) and zero points (int64) as contiguous arrays of n, or of 1 */
static mt_status qparams(const char *op, const mt_tensor *scales, const mt_tensor *zps, int64_t n, mt_tensor **sc,
                         mt_tensor **zc) {
  MT_TRY(cpu_only(scales, op, "scales"));
  MT_TRY(cpu_only(zps, op, "zero_points"));
  if (scales->_numel != n || zps->_numel != n)
    return mt_error(MT_ESHAPE, "%s: expected %lld scales and zero points, got %lld and %lld", op, (long long)n,
                    (long long)scales->_numel, (long long)zps->_numel);
  mt_status s = mt_to((mt_tensor *)scales, MT_FLOAT64, NULL, MT_TO_COPY, sc);
  if (!s) s = mt_to((mt_tensor *)zps, MT_INT64, NULL, MT_TO_COPY, zc);
  if (s) {
    mt_tensor_release(*sc);
    *sc = NULL;
    return s;
  }
  const double *sv = (const double *)(*sc)->_data;
  for (int64_t i = 0; i < n; i++)
    if (!(sv[i] > 0) || sv[i] == INFINITY) {
      double bad = sv[i];
      mt_tensor_release(*sc);
      mt_tensor_release(*zc);
      *sc = *zc = NULL;
      return mt_error(MT_EINVAL, "%s: scales must be positive and finite, got %g", op, bad);
    }
  return MT_OK;
}

/* (outer, channels, inner) of a tensor split at axis (-1: per tensor) */
static mt_status split_axis(const char *op, const mt_tensor *t, int axis, int64_t *outer, int64_t *ch, int64_t *inner) {
  *outer = 1, *ch = 1, *inner = t->_numel;
  if (axis < 0) return MT_OK;
  if (axis >= t->_ndim)
    return mt_error(MT_EINVAL, "%s: axis %lld is out of range for a tensor of %d dims", op, MT_D(axis), t->_ndim);
  *ch = t->_sizes[axis];
  *outer = 1;
  for (int d = 0; d < axis; d++) *outer *= t->_sizes[d];
  *inner = 1;
  for (int d = axis + 1; d < t->_ndim; d++) *inner *= t->_sizes[d];
  return MT_OK;
}

mt_status mt_quantize(const mt_tensor *x, const mt_tensor *scales, const mt_tensor *zero_points, int axis, int dtype,
                      int64_t qmin, int64_t qmax, mt_tensor **out) {
  const char *op = axis < 0 ? "quantize_per_tensor" : "quantize_per_channel";
  MT_TRY(cpu_only(x, op, "input"));
  if (!mt_is_float(x->_dtype))
    return mt_error(MT_EDTYPE, "%s: expected a floating point input, got %s", op, mt_dtype_name(x->_dtype));
  if (dtype != MT_INT8 && dtype != MT_UINT8 && dtype != MT_INT32)
    return mt_error(MT_EDTYPE, "%s: the integer storage must be int8, uint8 or int32, got %s", op, mt_dtype_name(dtype));
  if (qmin > qmax) return mt_error(MT_EINVAL, "%s: quant_min %lld is above quant_max %lld", op, (long long)qmin, (long long)qmax);
  int64_t outer, ch, inner;
  MT_TRY(split_axis(op, x, axis, &outer, &ch, &inner));
  mt_tensor *sc = NULL, *zc = NULL, *xc = NULL, *q = NULL;
  MT_TRY(qparams(op, scales, zero_points, ch, &sc, &zc));
  mt_status s = mt_to((mt_tensor *)x, MT_FLOAT32, NULL, 0, &xc);
  mt_tensor *xcc = NULL;
  if (!s) s = mt_contiguous(xc, &xcc);
  if (!s) s = mt_new(mt_device_of(x), x->_sizes, x->_ndim, dtype, op, &q);
  if (!s)
    s = mt_kernels_of(x)->quantize(q, xcc, (const double *)sc->_data, (const int64_t *)zc->_data, outer, ch, inner, qmin,
                                   qmax);
  mt_tensor_release(sc);
  mt_tensor_release(zc);
  mt_tensor_release(xc);
  mt_tensor_release(xcc);
  if (s) {
    mt_tensor_release(q);
    return s;
  }
  return mt_give(q, out);
}

mt_status mt_dequantize(const mt_tensor *q, const mt_tensor *scales, const mt_tensor *zero_points, int axis,
                        mt_tensor **out) {
  const char *op = "dequantize";
  MT_TRY(cpu_only(q, op, "input"));
  if (q->_dtype != MT_INT8 && q->_dtype != MT_UINT8 && q->_dtype != MT_INT32)
    return mt_error(MT_EDTYPE, "%s: expected int8, uint8 or int32 values, got %s", op, mt_dtype_name(q->_dtype));
  int64_t outer, ch, inner;
  MT_TRY(split_axis(op, q, axis, &outer, &ch, &inner));
  mt_tensor *sc = NULL, *zc = NULL, *qc = NULL, *x = NULL;
  MT_TRY(qparams(op, scales, zero_points, ch, &sc, &zc));
  mt_status s = mt_contiguous((mt_tensor *)q, &qc);
  if (!s) s = mt_new(mt_device_of(q), q->_sizes, q->_ndim, MT_FLOAT32, op, &x);
  if (!s)
    s = mt_kernels_of(q)->dequantize(x, qc, (const double *)sc->_data, (const int64_t *)zc->_data, outer, ch, inner);
  mt_tensor_release(sc);
  mt_tensor_release(zc);
  mt_tensor_release(qc);
  if (s) {
    mt_tensor_release(x);
    return s;
  }
  return mt_give(x, out);
}

/* the weight's checks shared by linear and conv: int8 (N, ...), scales/zps of 1 or N, bias float (N) */
static mt_status weight_args(const char *op, const mt_tensor *w, const mt_tensor *ws, const mt_tensor *wz,
                             const mt_tensor *bias, int64_t N, mt_tensor **sc, mt_tensor **zc, mt_tensor **bc,
                             int *per_channel) {
  MT_TRY(cpu_only(w, op, "weight"));
  if (w->_dtype != MT_INT8) return mt_error(MT_EDTYPE, "%s: expected an int8 weight, got %s", op, mt_dtype_name(w->_dtype));
  *per_channel = ws->_numel != 1;
  MT_TRY(qparams(op, ws, wz, *per_channel ? N : 1, sc, zc));
  *bc = NULL;
  if (bias) {
    mt_status s = cpu_only(bias, op, "bias");
    if (!s && (bias->_ndim != 1 || bias->_sizes[0] != N))
      s = mt_error(MT_ESHAPE, "%s: expected a bias of %lld elements, got %s", op, (long long)N, MT_SHAPE(bias));
    if (!s) s = mt_to((mt_tensor *)bias, MT_FLOAT32, NULL, MT_TO_COPY, bc);
    if (s) {
      mt_tensor_release(*sc);
      mt_tensor_release(*zc);
      return s;
    }
  }
  return MT_OK;
}

/* packed: NULL, or mt_qpack's result for this weight (checked to be of its size) */
static mt_status check_packed(const char *op, const mt_tensor *packed, int64_t N, int64_t K) {
  if (!packed) return MT_OK;
  MT_TRY(cpu_only(packed, op, "packed weight"));
  if (packed->_dtype != MT_INT32 || packed->_numel != mt_qpack_size(N, K) || !(packed->_flags & MT_TENSOR_CONTIGUOUS))
    return mt_error(MT_EINVAL, "%s: the packed weight is not mt_qpack's of a %lld x %lld weight", op, (long long)N,
                    (long long)K);
  return MT_OK;
}

/* out (rows x N) = the quantized product of xc (rows x K uint8, contiguous) and wc (N x K int8, contiguous) */
static mt_status run_qgemm(const mt_tensor *x, const mt_tensor *xc, int64_t rows, int64_t K, double x_scale,
                           int64_t x_zp, const mt_tensor *wc, const mt_tensor *packed, int64_t N, const mt_tensor *sc,
                           const mt_tensor *zc, int per_channel, const mt_tensor *bc, double out_scale, int64_t out_zp,
                           int out_u8, int relu, mt_tensor *r) {
  mt_qgemm g = {rows, N, K, (const uint8_t *)xc->_data, K, x_scale, x_zp, (const int8_t *)wc->_data, K,
                packed ? (const uint32_t *)packed->_data : NULL, (const double *)sc->_data, (const int64_t *)zc->_data,
                per_channel, bc ? (const float *)bc->_data : NULL, out_u8 ? NULL : (float *)r->_data,
                out_u8 ? (uint8_t *)r->_data : NULL, N, out_scale, out_zp, relu};
  return mt_kernels_of(x)->qgemm(&g);
}

mt_status mt_qpack(const mt_tensor *w, mt_tensor **out) {
  const char *op = "quantized linear prepack";
  MT_TRY(cpu_only(w, op, "weight"));
  if (w->_dtype != MT_INT8 || w->_ndim != 2)
    return mt_error(MT_EDTYPE, "%s: expected a 2-D int8 weight, got %s of %s", op, MT_SHAPE(w), mt_dtype_name(w->_dtype));
  int64_t n = mt_qpack_size(w->_sizes[0], w->_sizes[1]);
  mt_tensor *wc = NULL, *p = NULL;
  mt_status s = mt_contiguous((mt_tensor *)w, &wc);
  if (!s) s = mt_new(mt_device_of(w), &n, 1, MT_INT32, op, &p);
  if (!s) s = mt_kernels_of(w)->qpack(p, wc);
  mt_tensor_release(wc);
  if (s) {
    mt_tensor_release(p);
    return s;
  }
  return mt_give(p, out);
}

mt_status mt_qlinear(const mt_tensor *x, double x_scale, int64_t x_zp, const mt_tensor *w, const mt_tensor *w_scales,
                     const mt_tensor *w_zps, const mt_tensor *bias, const mt_tensor *packed, double out_scale,
                     int64_t out_zp, int out_u8, int relu, mt_tensor **out) {
  const char *op = "quantized linear";
  MT_TRY(cpu_only(x, op, "input"));
  if (x->_dtype != MT_UINT8) return mt_error(MT_EDTYPE, "%s: expected a uint8 (quint8) input, got %s", op, mt_dtype_name(x->_dtype));
  if (x->_ndim < 1) return mt_error(MT_ESHAPE, "%s: expected an input of at least 1 dim", op);
  if (w && w->_ndim != 2) return mt_error(MT_ESHAPE, "%s: expected a 2-D weight, got %s", op, MT_SHAPE(w));
  int64_t K = x->_sizes[x->_ndim - 1], N = w->_sizes[0];
  if (w->_sizes[1] != K)
    return mt_error(MT_ESHAPE, "%s: the input's last dim %lld does not match the weight %s", op, (long long)K, MT_SHAPE(w));
  if (out_u8 && (!(out_scale > 0) || out_zp < 0 || out_zp > 255))
    return mt_error(MT_EINVAL, "%s: the output's scale must be positive and its zero point in [0, 255]", op);
  if (x_zp < 0 || x_zp > 255) return mt_error(MT_EINVAL, "%s: the input's zero point must be in [0, 255]", op);
  MT_TRY(check_packed(op, packed, N, K));
  mt_tensor *sc = NULL, *zc = NULL, *bc = NULL, *xc = NULL, *wc = NULL, *r = NULL;
  int per_channel;
  MT_TRY(weight_args(op, w, w_scales, w_zps, bias, N, &sc, &zc, &bc, &per_channel));
  int64_t rows = K ? x->_numel / K : 0, sz[MT_MAX_DIMS];
  for (int d = 0; d < x->_ndim - 1; d++) sz[d] = x->_sizes[d];
  sz[x->_ndim - 1] = N;
  mt_status s = mt_contiguous((mt_tensor *)x, &xc);
  if (!s) s = mt_contiguous((mt_tensor *)w, &wc);
  if (!s) s = mt_new(mt_device_of(x), sz, x->_ndim, out_u8 ? MT_UINT8 : MT_FLOAT32, op, &r);
  if (!s)
    s = run_qgemm(x, xc, rows, K, x_scale, x_zp, wc, packed, N, sc, zc, per_channel, bc, out_scale, out_zp, out_u8,
                  relu, r);
  mt_tensor_release(sc);
  mt_tensor_release(zc);
  mt_tensor_release(bc);
  mt_tensor_release(xc);
  mt_tensor_release(wc);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, out);
}

mt_status mt_qconv2d(const mt_tensor *x, double x_scale, int64_t x_zp, const mt_tensor *w, const mt_tensor *w_scales,
                     const mt_tensor *w_zps, const mt_tensor *bias, const int64_t *stride, const int64_t *padding,
                     const int64_t *dilation, int64_t groups, double out_scale, int64_t out_zp, int relu,
                     mt_tensor **out) {
  const char *op = "quantized conv2d";
  MT_TRY(cpu_only(x, op, "input"));
  MT_TRY(cpu_only(w, op, "weight"));
  if (x->_dtype != MT_UINT8 || x->_ndim != 4)
    return mt_error(MT_EDTYPE, "%s: expected a 4-D uint8 (quint8) input, got %s of %s", op, MT_SHAPE(x),
                    mt_dtype_name(x->_dtype));
  if (w->_ndim != 4) return mt_error(MT_ESHAPE, "%s: expected a 4-D weight, got %s", op, MT_SHAPE(w));
  if (groups != 1) return mt_error(MT_ENOTIMPL, "%s: groups other than 1 are not supported (got %lld)", op, (long long)groups);
  int64_t N = x->_sizes[0], C = x->_sizes[1], Co = w->_sizes[0];
  if (w->_sizes[1] != C)
    return mt_error(MT_ESHAPE, "%s: the weight %s takes %lld channels, the input %s has %lld", op, MT_SHAPE(w),
                    (long long)w->_sizes[1], MT_SHAPE(x), (long long)C);
  int64_t k[2] = {w->_sizes[2], w->_sizes[3]}, o[2];
  for (int i = 0; i < 2; i++) {
    if (stride[i] <= 0 || dilation[i] <= 0 || padding[i] < 0)
      return mt_error(MT_EINVAL, "%s: stride and dilation must be positive, padding not negative", op);
    o[i] = (x->_sizes[2 + i] + 2 * padding[i] - dilation[i] * (k[i] - 1) - 1) / stride[i] + 1;
    if (o[i] <= 0) return mt_error(MT_ESHAPE, "%s: the input %s is smaller than the kernel", op, MT_SHAPE(x));
  }
  if (out_zp < 0 || out_zp > 255 || !(out_scale > 0) || x_zp < 0 || x_zp > 255)
    return mt_error(MT_EINVAL, "%s: scales must be positive and zero points in [0, 255]", op);
  mt_tensor *sc = NULL, *zc = NULL, *bc = NULL, *xc = NULL, *wc = NULL, *r = NULL;
  int per_channel;
  int64_t K = C * k[0] * k[1];
  MT_TRY(weight_args(op, w, w_scales, w_zps, bias, Co, &sc, &zc, &bc, &per_channel));
  int64_t rsz[4] = {N, Co, o[0], o[1]};
  mt_status s = mt_contiguous((mt_tensor *)x, &xc);
  if (!s) s = mt_contiguous((mt_tensor *)w, &wc);
  if (!s) s = mt_new(mt_device_of(x), rsz, 4, MT_UINT8, op, &r);
  if (!s) {
    mt_qgemm g = {0, Co, K, NULL, 0, x_scale, x_zp, (const int8_t *)wc->_data, K, NULL, (const double *)sc->_data,
                  (const int64_t *)zc->_data, per_channel, bc ? (const float *)bc->_data : NULL, NULL,
                  (uint8_t *)r->_data, 0, out_scale, out_zp, relu};
    s = mt_kernels_of(x)->qconv2d(&g, xc, k, stride, padding, dilation, o);
  }
  mt_tensor_release(sc);
  mt_tensor_release(zc);
  mt_tensor_release(bc);
  mt_tensor_release(xc);
  mt_tensor_release(wc);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, out);
}

mt_status mt_qlinear_dynamic(const mt_tensor *x, const mt_tensor *w, const mt_tensor *w_scales, const mt_tensor *w_zps,
                             const mt_tensor *bias, const mt_tensor *packed, int reduce_range, mt_tensor **out) {
  const char *op = "dynamic quantized linear";
  MT_TRY(cpu_only(x, op, "input"));
  if (!mt_is_float(x->_dtype)) return mt_error(MT_EDTYPE, "%s: expected a floating point input, got %s", op, mt_dtype_name(x->_dtype));
  if (x->_ndim < 1) return mt_error(MT_ESHAPE, "%s: expected an input of at least 1 dim", op);
  MT_TRY(cpu_only(w, op, "weight"));
  if (w->_ndim != 2) return mt_error(MT_ESHAPE, "%s: expected a 2-D weight, got %s", op, MT_SHAPE(w));
  int64_t K = x->_sizes[x->_ndim - 1];
  if (w->_sizes[1] != K)
    return mt_error(MT_ESHAPE, "%s: the input's last dim %lld does not match the weight %s", op, (long long)K, MT_SHAPE(w));
  mt_tensor *xf = NULL, *xc = NULL, *q = NULL, *r = NULL;
  double scale = 1;
  int64_t zp = 0;
  mt_status s = mt_to((mt_tensor *)x, MT_FLOAT32, NULL, 0, &xf);
  if (!s) s = mt_contiguous(xf, &xc);
  if (!s) s = mt_new(mt_device_of(x), x->_sizes, x->_ndim, MT_UINT8, op, &q);
  if (!s) s = mt_kernels_of(x)->quantize_dynamic(q, xc, reduce_range, &scale, &zp);
  if (!s) s = mt_qlinear(q, scale, zp, w, w_scales, w_zps, bias, packed, 1.0, 0, 0, 0, &r);
  mt_tensor_release(xf);
  mt_tensor_release(xc);
  mt_tensor_release(q);
  if (!s && x->_dtype != MT_FLOAT32) {
    mt_tensor *rr = NULL;
    s = mt_to(r, x->_dtype, NULL, 0, &rr);
    mt_tensor_release(r);
    r = rr;
  }
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, out);
}
