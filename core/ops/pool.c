/* pool.c -- the front doors of pooling and resampling (issue 12, pooling): max pools (windows with
 * stride, padding, dilation, ceil_mode; adaptive), avg pools (count_include_pad, divisor_override;
 * adaptive), interpolation (nearest, linear, cubic), max_unpool, over the last 1-3 dims of an
 * (N, C, *) or (C, *) input. Each works out its result's shape and the windows or taps of every
 * output position (core/kernels.h), then runs its device's kernel on the input made contiguous.
 * Avg pools and interpolation are one linear resampling (mt_resample), whose adjoint is
 * mt_resample_backward; both are recorded by core/grad/pool.c. */
#include "pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(t, op, arg) MT_TRY(mt_check_tensor((t), (op), (arg)))

static const char *dims_name(int nsp) { return nsp == 1 ? "1d" : nsp == 2 ? "2d" : "3d"; }

/* "(1x4x4)": the sizes of dims [from, ndim) */
static const char *sizes_x(const int64_t *s, int from, int ndim, char *buf, size_t n) {
  size_t k = 0;
  k += (size_t)snprintf(buf + k, n - k, "(");
  for (int d = from; d < ndim && k < n; d++) k += (size_t)snprintf(buf + k, n - k, d > from ? "x%lld" : "%lld", (long long)s[d]);
  if (k < n) snprintf(buf + k, n - k, ")");
  return buf;
}

/* The input checked: nsp + 1 or nsp + 2 dims, float32 or float64, no empty non-batch dim. */
/* (quantized: the integers of a quantized tensor, whose dtype mt_qmax_pool checks) */
static mt_status check_input_(const char *op, mt_tensor *x, int nsp, int adaptive, int quantized) {
  CHECK(x, op, "input");
  if (nsp < 1 || nsp > 3) return mt_error(MT_EINVAL, "%s: pooling over %d dims (1 to 3 are supported)", op, nsp);
  if (x->_ndim != nsp + 1 && x->_ndim != nsp + 2) {
    if (adaptive)
      return mt_error(MT_ESHAPE, "%s(): Expected %dD or %dD tensor, but got %s", op, nsp + 1, nsp + 2, MT_SHAPE(x));
    return mt_error(MT_ESHAPE, "%s: non-empty %dD or %dD (batch mode) tensor expected for input", op, nsp + 1,
                    nsp + 2);
  }
  for (int d = x->_ndim == nsp + 2 ? 1 : 0; d < x->_ndim; d++)
    if (x->_sizes[d] == 0) {
      if (adaptive)
        return mt_error(MT_ESHAPE,
                        "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
                        "%s with dimension %lld being empty",
                        op, MT_SHAPE(x), MT_D(d));
      return mt_error(MT_ESHAPE, "%s: Expected %dD or %dD (batch mode) tensor with optional 0 dim batch size for "
                      "input, but got:%s", op, nsp + 1, nsp + 2, MT_SHAPE(x));
    }
  if (!quantized && x->_dtype != MT_FLOAT32 && x->_dtype != MT_FLOAT64) {
    const char *n = mt_dtype_name(x->_dtype);
    /* PyTorch's ScalarType names: Long, Int, Half, ... */
    const char *py = !strcmp(n, "int64")      ? "Long"
                     : !strcmp(n, "int32")    ? "Int"
                     : !strcmp(n, "int16")    ? "Short"
                     : !strcmp(n, "int8")     ? "Char"
                     : !strcmp(n, "uint8")    ? "Byte"
                     : !strcmp(n, "bool")     ? "Bool"
                     : !strcmp(n, "float16")  ? "Half"
                     : !strcmp(n, "bfloat16") ? "BFloat16"
                                              : n;
    return mt_error(MT_EDTYPE, "%s: \"%s\" not implemented for '%s'", op, op, py);
  }
  return MT_OK;
}
static mt_status check_input(const char *op, mt_tensor *x, int nsp, int adaptive) {
  return check_input_(op, x, nsp, adaptive, 0);
}

/* the planes (the product of the leading dims) and the spatial sizes, padded to 3 in front */
static int64_t planes_of(const mt_tensor *x, int nsp, int64_t in[3]) {
  int lead = x->_ndim - nsp;
  int64_t P = 1;
  for (int d = 0; d < lead; d++) P *= x->_sizes[d];
  for (int d = 0; d < 3; d++) in[d] = d < 3 - nsp ? 1 : x->_sizes[lead + d - (3 - nsp)];
  return P;
}

/* the result's shape: x's leading dims, then the nsp sizes of out3 (padded to 3) */
static int result_shape(const mt_tensor *x, int nsp, const int64_t out3[3], int64_t *shape) {
  int lead = x->_ndim - nsp;
  for (int d = 0; d < lead; d++) shape[d] = x->_sizes[d];
  for (int d = 0; d < nsp; d++) shape[lead + d] = out3[3 - nsp + d];
  return x->_ndim;
}

/* a pool's output size along one dim (PyTorch's pooling_output_shape) */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, int ceil_mode) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t o = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (o - 1) * stride >= in + pad) o--;
  return o;
}

/* The window parameters checked, and the output's spatial sizes (3, padded in front with 1). */
static mt_status pool_geometry(const char *op, const mt_tensor *x, const mt_pool_params *p, int dil_ok,
                               int64_t in[3], int64_t out[3]) {
  int nsp = p->nsp;
  for (int d = 0; d < nsp; d++) {
    if (p->kernel[d] <= 0)
      return mt_error(MT_EINVAL, "%s: kernel size should be greater than zero, but got kernel size %lld", op,
                      (long long)p->kernel[d]);
    if (p->stride[d] <= 0) return mt_error(MT_EINVAL, "%s: stride should not be zero", op);
    if (p->padding[d] < 0) return mt_error(MT_EINVAL, "%s: pad must be non-negative, but got pad: %lld", op,
                                           (long long)p->padding[d]);
    if (dil_ok && p->dilation[d] <= 0)
      return mt_error(MT_EINVAL, "%s: dilation should be greater than zero, but got dilation %lld", op,
                      (long long)p->dilation[d]);
  }
  for (int d = 0; d < nsp; d++)
    if (p->padding[d] > p->kernel[d] / 2)
      return mt_error(MT_EINVAL, "%s: pad should be at most half of kernel size, but got pad=%lld and kernel_size=%lld",
                      op, (long long)p->padding[d], (long long)p->kernel[d]);
  planes_of(x, nsp, in);
  bool small = false;
  for (int d = 0; d < 3; d++) {
    if (d < 3 - nsp) {
      out[d] = 1;
      continue;
    }
    int s = d - (3 - nsp);
    out[d] = pool_out(in[d], p->kernel[s], p->padding[s], p->stride[s], dil_ok ? p->dilation[s] : 1, p->ceil_mode);
    if (out[d] < 1) small = true;
  }
  if (small) {
    char a[128], b[128];
    int64_t os[MT_MAX_DIMS];
    result_shape(x, nsp, out, os);
    int from = x->_ndim == nsp + 2 ? 1 : 0;
    return mt_error(MT_ESHAPE, "%s: Given input size: %s. Calculated output size: %s. Output size is too small", op,
                    sizes_x(x->_sizes, from, x->_ndim, a, sizeof a), sizes_x(os, from, x->_ndim, b, sizeof b));
  }
  return MT_OK;
}

/* ---------------------------------------------------------------- max pools */
static mt_status max_pool_windows(const char *op, mt_tensor *x, int nsp, const int64_t in[3], const int64_t out[3],
                                  const mt_pool_params *p, const int64_t *adaptive, int64_t base, mt_tensor **values,
                                  mt_tensor **indices) {
  int64_t total = out[0] + out[1] + out[2];
  int64_t *buf = malloc(sizeof(int64_t) * 2 * (size_t)total);
  if (!buf) return mt_error(MT_ENOMEM, "%s: out of memory", op);
  mt_windows w;
  int64_t *q = buf;
  for (int d = 0; d < 3; d++) {
    int64_t *st = q, *cn = q + out[d];
    q += 2 * out[d];
    w.in[d] = in[d];
    w.out[d] = out[d];
    w.start[d] = st;
    w.count[d] = cn;
    int s = d - (3 - nsp);
    if (s < 0) {
      w.step[d] = 1;
      st[0] = 0;
      cn[0] = 1;
      continue;
    }
    if (adaptive) {
      w.step[d] = 1;
      for (int64_t o = 0; o < out[d]; o++) {
        int64_t a = (o * in[d]) / out[d], b = ((o + 1) * in[d] + out[d] - 1) / out[d];
        st[o] = a;
        cn[o] = b - a;
      }
      continue;
    }
    int64_t k = p->kernel[s], dil = p->dilation[s], stride = p->stride[s], pad = p->padding[s];
    w.step[d] = dil;
    for (int64_t o = 0; o < out[d]; o++) {
      int64_t start = o * stride - pad;
      int64_t lo = start < 0 ? (-start + dil - 1) / dil : 0;
      int64_t hi = start + dil * (k - 1) < in[d] ? k : (in[d] - 1 - start) / dil + 1;
      if (hi < lo || start + dil * lo >= in[d]) hi = lo;
      st[o] = start + lo * dil;
      cn[o] = hi - lo;
      if (st[o] >= in[d]) st[o] = in[d] - 1;
    }
  }
  int64_t shape[MT_MAX_DIMS];
  int nd = result_shape(x, nsp, out, shape);
  mt_tensor *xc = NULL, *v = NULL, *ix = NULL;
  mt_status s = mt_contiguous(x, &xc);
  if (!s) s = mt_new(mt_device_of(x), shape, nd, x->_dtype, op, &v);
  if (!s && indices) s = mt_new(mt_device_of(x), shape, nd, MT_INT64, op, &ix);
  if (!s) s = mt_kernels_of(x)->pool_max(v, ix, xc, &w, base);
  free(buf);
  mt_tensor_release(xc);
  if (s) {
    mt_tensor_release(v);
    mt_tensor_release(ix);
    return s;
  }
  *values = v;
  if (indices) *indices = ix;
  return MT_OK;
}

static mt_status max_pool(mt_tensor *x, const mt_pool_params *p, int64_t base, mt_tensor **values,
                          mt_tensor **indices) {
  char op[32];
  snprintf(op, sizeof op, "max_pool%s", p ? dims_name(p->nsp) : "");
  if (!p) return mt_error(MT_EINVAL, "max_pool: no parameters");
  MT_TRY(check_input(op, x, p->nsp, 0));
  MT_TRY(mt_check_kernel(MT_OP_MAX_POOL, x));
  int64_t in[3], out[3];
  MT_TRY(pool_geometry(op, x, p, 1, in, out));
  return max_pool_windows(op, x, p->nsp, in, out, p, NULL, base, values, indices);
}

/* issue 25: the max pool of a quantized tensor's integers (the max of the values is the max of the integers):
 * uint8, int8 or int32 on the CPU, no indices, no autograd */
mt_status mt_qmax_pool(mt_tensor *x, const mt_pool_params *p, mt_tensor **values) {
  char op[40];
  if (!p) return mt_error(MT_EINVAL, "quantized max_pool: no parameters");
  snprintf(op, sizeof op, "quantized max_pool%s", dims_name(p->nsp));
  MT_TRY(check_input_(op, x, p->nsp, 0, 1));
  if (x->_dtype != MT_UINT8 && x->_dtype != MT_INT8 && x->_dtype != MT_INT32)
    return mt_error(MT_EDTYPE, "%s: expected a quantized tensor's integers (uint8, int8 or int32), got %s", op,
                    mt_dtype_name(x->_dtype));
  if (x->_device_type != MT_CPU)
    return mt_error(MT_EDEVICE, "%s: quantized computation runs on the CPU; the input is on %s", op,
                    mt_device_str(mt_device_of(x)));
  int64_t in[3], out[3];
  MT_TRY(pool_geometry(op, x, p, 1, in, out));
  return max_pool_windows(op, x, p->nsp, in, out, p, NULL, 0, values, NULL);
}

static mt_status adaptive_max_pool(mt_tensor *x, int nsp, const int64_t *sizes, int64_t base, mt_tensor **values,
                                   mt_tensor **indices) {
  char op[40];
  snprintf(op, sizeof op, "adaptive_max_pool%s", dims_name(nsp));
  MT_TRY(check_input(op, x, nsp, 1));
  MT_TRY(mt_check_kernel(MT_OP_MAX_POOL, x));
  int64_t in[3], out[3];
  planes_of(x, nsp, in);
  for (int d = 0; d < 3; d++) {
    out[d] = d < 3 - nsp ? 1 : sizes[d - (3 - nsp)];
    if (out[d] < 0) return mt_error(MT_EINVAL, "%s: output sizes must be non-negative, got %lld", op, (long long)out[d]);
  }
  return max_pool_windows(op, x, nsp, in, out, NULL, sizes, base, values, indices);
}

/* ---------------------------------------------------------------- resamplings */
static const char *resample_op(const mt_resample_spec *s, char *buf, size_t n) {
  const char *d = dims_name(s->nsp);
  switch (s->kind) {
  case MT_RS_AVG_POOL: snprintf(buf, n, "avg_pool%s", d); break;
  case MT_RS_ADAPTIVE_AVG: snprintf(buf, n, "adaptive_avg_pool%s", d); break;
  case MT_RS_NEAREST: snprintf(buf, n, "upsample_nearest%s", d); break;
  case MT_RS_LINEAR:
    snprintf(buf, n, "%s", s->nsp == 1 ? "upsample_linear1d" : s->nsp == 2 ? "upsample_bilinear2d" : "upsample_trilinear3d");
    break;
  case MT_RS_NEAREST_EXACT: snprintf(buf, n, "upsample_nearest_exact%s", d); break;
  case MT_RS_LINEAR_AA: snprintf(buf, n, "_upsample_bilinear2d_aa"); break;
  case MT_RS_CUBIC_AA: snprintf(buf, n, "_upsample_bicubic2d_aa"); break;
  case MT_RS_REFLECT: snprintf(buf, n, "reflection_pad%s", d); break;
  case MT_RS_REPLICATE: snprintf(buf, n, "replication_pad%s", d); break;
  default: snprintf(buf, n, "upsample_bicubic%s", d); break;
  }
  return buf;
}
static mt_op resample_op_id(const mt_resample_spec *s) {
  if (s->kind == MT_RS_REFLECT || s->kind == MT_RS_REPLICATE) return MT_OP_PAD;
  return s->kind == MT_RS_AVG_POOL || s->kind == MT_RS_ADAPTIVE_AVG ? MT_OP_AVG_POOL : MT_OP_INTERPOLATE;
}

/* PyTorch's area_pixel_compute_scale */
static double pixel_scale(int64_t in, int64_t out, int align_corners, double given) {
  if (align_corners) return out > 1 ? (double)(in - 1) / (double)(out - 1) : 0;
  return given > 0 ? 1.0 / given : (double)in / (double)out;
}
static double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
static double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

/* The taps of one spatial dim d (of 3) of spec: n per output, into idx / w (out * n each). */
static int taps_per_output(const mt_resample_spec *s, int d) {
  int sd = d - (3 - s->nsp);
  if (sd < 0) return 1;
  switch (s->kind) {
  case MT_RS_AVG_POOL: return (int)s->kernel[sd];
  case MT_RS_ADAPTIVE_AVG: {
    int64_t in = s->in[sd], out = s->out[sd], m = 1;
    for (int64_t o = 0; o < out; o++) {
      int64_t a = (o * in) / out, b = ((o + 1) * in + out - 1) / out;
      if (b - a > m) m = b - a;
    }
    return (int)m;
  }
  case MT_RS_NEAREST:
  case MT_RS_NEAREST_EXACT:
  case MT_RS_REFLECT:
  case MT_RS_REPLICATE: return 1;
  case MT_RS_LINEAR: return 2;
  case MT_RS_LINEAR_AA:
  case MT_RS_CUBIC_AA: { /* PyTorch's interp_size: the filter's support, stretched when downsampling */
    double scale = pixel_scale(s->in[sd], s->out[sd], s->align_corners, s->scales[sd]);
    double support = (s->kind == MT_RS_LINEAR_AA ? 1.0 : 2.0) * (scale >= 1.0 ? scale : 1.0);
    return (int)ceil(support) * 2 + 1;
  }
  default: return 4;
  }
}

static void fill_taps(const mt_resample_spec *s, int d, int n, int64_t *idx, double *w) {
  int sd = d - (3 - s->nsp);
  if (sd < 0) {
    idx[0] = 0;
    w[0] = 1;
    return;
  }
  int64_t in = s->in[sd], out = s->out[sd];
  for (int64_t o = 0; o < out; o++) {
    int64_t *ix = idx + o * n;
    double *wt = w + o * n;
    for (int t = 0; t < n; t++) ix[t] = 0, wt[t] = 0;
    switch (s->kind) {
    case MT_RS_AVG_POOL: {
      int64_t start = o * s->stride[sd] - s->padding[sd];
      int64_t end = start + s->kernel[sd];
      if (end > in + s->padding[sd]) end = in + s->padding[sd];
      int64_t size = end - start;
      int64_t a = start < 0 ? 0 : start, b = end > in ? in : end;
      double div = s->divisor_override ? 1.0 : (double)(s->count_include_pad ? size : b - a);
      for (int64_t pos = a; pos < b && div > 0; pos++) ix[pos - a] = pos, wt[pos - a] = 1.0 / div;
      break;
    }
    case MT_RS_ADAPTIVE_AVG: {
      int64_t a = (o * in) / out, b = ((o + 1) * in + out - 1) / out;
      for (int64_t t = 0; t < b - a; t++) ix[t] = a + t, wt[t] = 1.0 / (double)(b - a);
      break;
    }
    case MT_RS_NEAREST: {
      int64_t src;
      if (out == in) src = o;
      else if (out == 2 * in) src = o >> 1;
      else {
        float scale = s->scales[sd] > 0 ? (float)(1.0 / s->scales[sd]) : (float)in / (float)out;
        src = (int64_t)floorf((float)o * scale);
        if (src > in - 1) src = in - 1;
      }
      ix[0] = src;
      wt[0] = 1;
      break;
    }
    case MT_RS_NEAREST_EXACT: { /* PyTorch's nearest_neighbor_exact_compute_source_index */
      float scale = s->scales[sd] > 0 ? (float)(1.0 / s->scales[sd]) : (float)in / (float)out;
      int64_t src = (int64_t)floorf((float)(((double)o + 0.5) * (double)scale));
      ix[0] = src > in - 1 ? in - 1 : src;
      wt[0] = 1;
      break;
    }
    case MT_RS_LINEAR_AA:
    case MT_RS_CUBIC_AA: { /* PyTorch's _compute_weights_aa: the filter over [center - support, center + support) */
      double scale = pixel_scale(in, out, s->align_corners, s->scales[sd]);
      double support = (s->kind == MT_RS_LINEAR_AA ? 1.0 : 2.0) * (scale >= 1.0 ? scale : 1.0);
      double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
      double center = scale * ((double)o + 0.5), total = 0;
      int64_t lo = (int64_t)(center - support + 0.5), hi = (int64_t)(center + support + 0.5);
      if (lo < 0) lo = 0;
      if (hi > in) hi = in;
      for (int64_t j = 0; j < hi - lo && j < n; j++) {
        double x = fabs(((double)(j + lo) - center + 0.5) * invscale), f;
        if (s->kind == MT_RS_LINEAR_AA) f = x < 1.0 ? 1.0 - x : 0.0;
        else f = x < 1.0 ? cubic1(x, -0.5) : x < 2.0 ? cubic2(x, -0.5) : 0.0;
        ix[j] = j + lo;
        wt[j] = f;
        total += f;
      }
      for (int64_t j = 0; j < hi - lo && j < n; j++) {
        if (total != 0) wt[j] /= total;
      }
      for (int t = 0; t < n; t++)
        if (t >= hi - lo) ix[t] = lo < in ? lo : in - 1; /* unused taps: weight 0 at a valid position */
      break;
    }
    case MT_RS_REFLECT:
    case MT_RS_REPLICATE: {
      int64_t j = o - s->padding[sd];
      if (s->kind == MT_RS_REFLECT)
        j = j < 0 ? -j : j >= in ? 2 * (in - 1) - j : j;
      else
        j = j < 0 ? 0 : j >= in ? in - 1 : j;
      ix[0] = j < 0 ? 0 : j >= in ? in - 1 : j; /* (in range whenever the pads passed the checks) */
      wt[0] = 1;
      break;
    }
    case MT_RS_LINEAR: {
      double scale = pixel_scale(in, out, s->align_corners, s->scales[sd]);
      double src = s->align_corners ? scale * (double)o : scale * ((double)o + 0.5) - 0.5;
      if (src < 0) src = 0;
      int64_t i0 = (int64_t)src;
      if (i0 > in - 1) i0 = in - 1;
      int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
      double l1 = src - (double)i0;
      if (l1 > 1) l1 = 1;
      ix[0] = i0, wt[0] = 1 - l1;
      ix[1] = i1, wt[1] = l1;
      break;
    }
    default: { /* cubic, PyTorch's A = -0.75, the taps clamped to the input */
      const double A = -0.75;
      double scale = pixel_scale(in, out, s->align_corners, s->scales[sd]);
      double src = s->align_corners ? scale * (double)o : scale * ((double)o + 0.5) - 0.5;
      double fl = floor(src), t = src - fl;
      int64_t i = (int64_t)fl;
      double ws[4] = {cubic2(t + 1, A), cubic1(t, A), cubic1(1 - t, A), cubic2(2 - t, A)};
      for (int k = 0; k < 4; k++) {
        int64_t pos = i - 1 + k;
        if (pos < 0) pos = 0;
        if (pos > in - 1) pos = in - 1;
        ix[k] = pos;
        wt[k] = ws[k];
      }
      break;
    }
    }
  }
}

/* the taps of spec (arrays in one block *mem, to free) */
static mt_status build_taps(const mt_resample_spec *s, mt_taps *t, void **mem) {
  int64_t total = 0;
  int n[3];
  for (int d = 0; d < 3; d++) {
    int sd = d - (3 - s->nsp);
    t->in[d] = sd < 0 ? 1 : s->in[sd];
    t->out[d] = sd < 0 ? 1 : s->out[sd];
    n[d] = taps_per_output(s, d);
    t->ntaps[d] = n[d];
    total += t->out[d] * n[d];
  }
  char *m = malloc((sizeof(int64_t) + sizeof(double)) * (size_t)(total ? total : 1));
  if (!m) return mt_error(MT_ENOMEM, "resample: out of memory");
  int64_t *ip = (int64_t *)m;
  double *wp = (double *)(m + sizeof(int64_t) * (size_t)total);
  for (int d = 0; d < 3; d++) {
    fill_taps(s, d, n[d], ip, wp);
    t->index[d] = ip;
    t->weight[d] = wp;
    ip += t->out[d] * n[d];
    wp += t->out[d] * n[d];
  }
  t->scale = s->kind == MT_RS_AVG_POOL && s->divisor_override ? 1.0 / (double)s->divisor_override : 1.0;
  t->box = s->kind == MT_RS_AVG_POOL || s->kind == MT_RS_ADAPTIVE_AVG;
  *mem = m;
  return MT_OK;
}

/* forward (x of the input's sizes) or adjoint (x of the output's) */
static mt_status run_resample(mt_tensor *x, const mt_resample_spec *s, int adjoint, mt_tensor **result) {
  char op[40];
  resample_op(s, op, sizeof op);
  CHECK(x, op, adjoint ? "grad" : "input");
  if (s->nsp < 1 || s->nsp > 3 || x->_ndim < s->nsp)
    return mt_error(MT_ESHAPE, "%s: expected an input with at least %d dims, got %s", op, s->nsp, MT_SHAPE(x));
  if (x->_dtype != MT_FLOAT32 && x->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: expected a float32 or float64 tensor, got %s", op, mt_dtype_name(x->_dtype));
  MT_TRY(mt_check_kernel(adjoint ? MT_OP_RESAMPLE_BACKWARD : resample_op_id(s), x));
  const int64_t *have = adjoint ? s->out : s->in, *want = adjoint ? s->in : s->out;
  for (int d = 0; d < s->nsp; d++) {
    if (x->_sizes[x->_ndim - s->nsp + d] != have[d])
      return mt_error(MT_ESHAPE, "%s: expected %s spatial size %lld at dim %lld, got %s", op,
                      adjoint ? "a gradient of" : "an input of", (long long)have[d],
                      MT_D(x->_ndim - s->nsp + d), MT_SHAPE(x));
    if (want[d] < 0) return mt_error(MT_EINVAL, "%s: a negative size %lld", op, (long long)want[d]);
  }
  int64_t shape[MT_MAX_DIMS], w3[3];
  for (int d = 0; d < 3; d++) w3[d] = d < 3 - s->nsp ? 1 : want[d - (3 - s->nsp)];
  int nd = result_shape(x, s->nsp, w3, shape);
  /* the result first: a size too large to allocate fails here, before the taps are counted (a loop
   * over the outputs), and an empty result needs no taps */
  mt_tensor *xc = NULL, *r = NULL;
  MT_TRY(mt_new(mt_device_of(x), shape, nd, x->_dtype, op, &r));
  if (r->_numel == 0) {
    *result = r;
    return MT_OK;
  }
  mt_taps t;
  void *mem = NULL;
  mt_status st = build_taps(s, &t, &mem);
  if (!st) st = mt_contiguous(x, &xc);
  if (!st) st = mt_kernels_of(x)->resample(r, xc, &t, adjoint);
  free(mem);
  mt_tensor_release(xc);
  if (st) {
    mt_tensor_release(r);
    return st;
  }
  *result = r;
  return MT_OK;
}

static mt_status resample(mt_tensor *x, const mt_resample_spec *s, mt_tensor **result) {
  return run_resample(x, s, 0, result);
}
static mt_status resample_backward(mt_tensor *g, const mt_resample_spec *s, mt_tensor **result) {
  return run_resample(g, s, 1, result);
}

static mt_status avg_pool(mt_tensor *x, const mt_pool_params *p, mt_tensor **result) {
  if (!p) return mt_error(MT_EINVAL, "avg_pool: no parameters");
  char op[32];
  snprintf(op, sizeof op, "avg_pool%s", dims_name(p->nsp));
  MT_TRY(check_input(op, x, p->nsp, 0));
  if (p->divisor_override < 0) return mt_error(MT_EINVAL, "%s: divisor must be not zero", op);
  int64_t in[3], out[3];
  MT_TRY(pool_geometry(op, x, p, 0, in, out));
  mt_resample_spec s = {.kind = MT_RS_AVG_POOL, .nsp = p->nsp, .ceil_mode = p->ceil_mode,
                        .count_include_pad = p->count_include_pad, .divisor_override = p->divisor_override};
  for (int d = 0; d < p->nsp; d++) {
    s.in[d] = in[3 - p->nsp + d];
    s.out[d] = out[3 - p->nsp + d];
    s.kernel[d] = p->kernel[d];
    s.stride[d] = p->stride[d];
    s.padding[d] = p->padding[d];
  }
  return mt_resample(x, &s, result);
}

static mt_status adaptive_avg_pool(mt_tensor *x, int nsp, const int64_t *sizes, mt_tensor **result) {
  char op[40];
  snprintf(op, sizeof op, "adaptive_avg_pool%s", dims_name(nsp));
  MT_TRY(check_input(op, x, nsp, 1));
  mt_resample_spec s = {.kind = MT_RS_ADAPTIVE_AVG, .nsp = nsp};
  for (int d = 0; d < nsp; d++) {
    s.in[d] = x->_sizes[x->_ndim - nsp + d];
    s.out[d] = sizes[d];
    if (sizes[d] < 0) return mt_error(MT_EINVAL, "%s: output sizes must be non-negative, got %lld", op, (long long)sizes[d]);
  }
  return mt_resample(x, &s, result);
}

static mt_status interpolate(mt_tensor *x, int nsp, int mode, const int64_t *sizes, const double *scales,
                             int align_corners, mt_tensor **result) {
  const char *op = "interpolate";
  CHECK(x, op, "input");
  if (nsp < 1 || nsp > 3) return mt_error(MT_EINVAL, "%s: %d spatial dims (1 to 3 are supported)", op, nsp);
  if (mode != MT_RS_NEAREST && mode != MT_RS_LINEAR && mode != MT_RS_CUBIC && mode != MT_RS_NEAREST_EXACT &&
      mode != MT_RS_LINEAR_AA && mode != MT_RS_CUBIC_AA)
    return mt_error(MT_EINVAL, "%s: unknown mode %d", op, mode);
  if ((mode == MT_RS_CUBIC || mode == MT_RS_LINEAR_AA || mode == MT_RS_CUBIC_AA) && nsp != 2)
    return mt_error(MT_EINVAL, "%s: %s mode needs 2 spatial dims", op, mode == MT_RS_LINEAR_AA ? "antialiased bilinear" : "bicubic");
  if (x->_ndim != nsp + 2)
    return mt_error(MT_ESHAPE, "%s: expected a %dD input (N, C and %d spatial dims), got %s", op, nsp + 2, nsp,
                    MT_SHAPE(x));
  mt_resample_spec s = {.kind = mode, .nsp = nsp, .align_corners = mode != MT_RS_NEAREST && mode != MT_RS_NEAREST_EXACT && align_corners};
  for (int d = 0; d < nsp; d++) {
    s.in[d] = x->_sizes[2 + d];
    s.out[d] = sizes[d];
    s.scales[d] = scales && scales[d] > 0 ? scales[d] : 0;
    if (sizes[d] <= 0 || s.in[d] <= 0)
      return mt_error(MT_EINVAL, "%s: Input and output sizes should be greater than 0, but got input (%s) and output "
                      "sizes %lld", op, MT_SHAPE(x), (long long)sizes[d]);
  }
  return mt_resample(x, &s, result);
}

static mt_status pad(mt_tensor *x, int nsp, int mode, const int64_t *before, const int64_t *after, mt_tensor **result) {
  const char *op = "pad";
  CHECK(x, op, "input");
  if (mode != MT_RS_REFLECT && mode != MT_RS_REPLICATE) return mt_error(MT_EINVAL, "%s: unknown mode %d", op, mode);
  if (nsp < 1 || nsp > 3 || x->_ndim < nsp + 1)
    return mt_error(MT_ESHAPE, "%s: padding %d dims needs an input of at least %d dims, got %s", op, nsp, nsp + 1,
                    MT_SHAPE(x));
  mt_resample_spec s = {.kind = mode, .nsp = nsp};
  for (int d = 0; d < nsp; d++) {
    int64_t in = x->_sizes[x->_ndim - nsp + d];
    s.in[d] = in;
    s.out[d] = in + before[d] + after[d];
    s.padding[d] = before[d];
    bool bad = mode == MT_RS_REFLECT ? (before[d] >= in || after[d] >= in) : in == 0;
    if (bad || s.out[d] < 1)
      return mt_error(MT_EINVAL, "%s: %s padding (%lld, %lld) does not fit dim %lld of size %lld", op,
                      mode == MT_RS_REFLECT ? "reflect" : "replicate", (long long)before[d], (long long)after[d],
                      MT_D(x->_ndim - nsp + d), (long long)in);
  }
  return mt_resample(x, &s, result);
}

/* ---------------------------------------------------------------- max_unpool and positions */
mt_status mt_pool_index(const char *op, mt_tensor *src, mt_tensor *indices, int kind, const int64_t *shape, int ndim,
                        int64_t base, mt_tensor **result) {
  /* planes: the first dim of src, indices and the result (the caller passes (P, K) and (P, M) views) */
  mt_tensor *sc = NULL, *ic = NULL, *r = NULL;
  mt_status s = mt_contiguous(src, &sc);
  if (!s) s = mt_contiguous(indices, &ic);
  const int64_t *rs = kind == MT_POOL_GATHER ? indices->_sizes : shape;
  int rn = kind == MT_POOL_GATHER ? indices->_ndim : ndim;
  if (!s) s = mt_new(mt_device_of(src), rs, rn, src->_dtype, op, &r);
  if (!s) s = mt_kernels_of(src)->pool_index(r, sc, ic, kind, base);
  mt_tensor_release(sc);
  mt_tensor_release(ic);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  *result = r;
  return MT_OK;
}

static mt_status max_unpool(mt_tensor *x, mt_tensor *indices, int nsp, const int64_t *sizes, int64_t base,
                            mt_tensor **result) {
  char op[32];
  snprintf(op, sizeof op, "max_unpool%s", dims_name(nsp));
  CHECK(x, op, "input");
  CHECK(indices, op, "indices");
  MT_TRY(mt_check_same_device(op, x, indices));
  if (nsp < 1 || nsp > 3) return mt_error(MT_EINVAL, "%s: %d spatial dims (1 to 3 are supported)", op, nsp);
  if (indices->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: elements in indices should be type int64 but got: %s", op,
                    mt_dtype_name(indices->_dtype));
  if (x->_ndim != nsp + 1 && x->_ndim != nsp + 2)
    return mt_error(MT_ESHAPE, "%s: Input to max_unpooling should be a %dd or %dd Tensor, but got a tensor with %d "
                    "dimensions.", op, nsp + 1, nsp + 2, x->_ndim);
  bool same = x->_ndim == indices->_ndim;
  for (int d = 0; same && d < x->_ndim; d++) same = x->_sizes[d] == indices->_sizes[d];
  if (!same)
    return mt_error(MT_ESHAPE, "%s: Expected shape of indices to be same as that of the input tensor (%s) but got "
                    "indices tensor with shape: %s", op, MT_SHAPE(x), MT_SHAPE(indices));
  if (x->_dtype != MT_FLOAT32 && x->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: expected a float32 or float64 input, got %s", op, mt_dtype_name(x->_dtype));
  for (int d = 0; d < nsp; d++)
    if (sizes[d] <= 0)
      return mt_error(MT_EINVAL, "%s: output sizes must be positive, got %lld", op, (long long)sizes[d]);
  MT_TRY(mt_check_kernel(MT_OP_MAX_UNPOOL, x));
  int lead = x->_ndim - nsp;
  int64_t P = 1, K = 1, M = 1;
  for (int d = 0; d < lead; d++) P *= x->_sizes[d];
  for (int d = lead; d < x->_ndim; d++) K *= x->_sizes[d];
  for (int d = 0; d < nsp; d++) M *= sizes[d];
  int64_t shape[MT_MAX_DIMS];
  for (int d = 0; d < lead; d++) shape[d] = x->_sizes[d];
  for (int d = 0; d < nsp; d++) shape[lead + d] = sizes[d];
  /* as planes: (P, K) in, (P, M) out */
  int64_t pk[2] = {P, K}, pm[2] = {P, M};
  mt_tensor *xv = NULL, *iv = NULL, *r = NULL;
  mt_status s = mt_reshape(x, pk, 2, &xv);
  if (!s) s = mt_reshape(indices, pk, 2, &iv);
  if (!s) {
    s = mt_pool_index(op, xv, iv, MT_POOL_SCATTER_SET, pm, 2, base, &r);
    if (s == MT_ERANGE) { /* the kernel's message, named by the op, the sizes as PyTorch prints them */
      long long bad = 0;
      sscanf(mt_last_error(), "Found an invalid max index: %lld", &bad);
      char sz[96];
      size_t k = 0;
      for (int d = 0; d < nsp && k < sizeof sz; d++)
        k += (size_t)snprintf(sz + k, sizeof sz - k, d ? "x%lld" : "%lld", (long long)sizes[d]);
      mt_error(s, "%s: Found an invalid max index: %lld (output volumes are of size %s)%s", op, bad, sz,
               MT_BASE_HINT(bad, base));
    }
  }
  mt_tensor_release(xv);
  mt_tensor_release(iv);
  if (s) return s;
  s = mt_reshape(r, shape, x->_ndim, result);
  mt_tensor_release(r);
  return s;
}

/* ---------------------------------------------------------------- the public front doors */
/* issue 25: a bfloat16 / float16 input is pooled, resampled or padded in float32 and the result
 * rounded once (a max, a copy or a padding gives back the input's own values): x converted with mt_to,
 * which autograd follows. LOWP(call) runs `call` with `xf` in x's place into `r32`, then converts it
 * into *result. */
static mt_status lowp_to(mt_tensor *x, mt_tensor **xf) { return mt_to(x, MT_FLOAT32, NULL, 0, xf); }
static mt_status lowp_back(mt_status s, mt_tensor *xf, mt_tensor *r32, int dt, mt_tensor **result) {
  mt_tensor_release(xf);
  if (!s && result) s = mt_to(r32, dt, NULL, 0, result);
  mt_tensor_release(r32);
  return s;
}
#define LOWP(x, call)                                                                                                  \
  if ((x) && mt_is_reduced_float((x)->_dtype)) {                                                                     \
    mt_tensor *xf = NULL, *r32 = NULL;                                                                               \
    mt_status s_ = lowp_to((x), &xf);                                                                                \
    if (!s_) s_ = (call);                                                                                            \
    return lowp_back(s_, xf, r32, (x)->_dtype, result);                                                              \
  }

mt_status mt_max_pool(mt_tensor *x, const mt_pool_params *p, int64_t index_base, mt_tensor **values,
                      mt_tensor **indices) {
  {
    mt_tensor **result = values;
    LOWP(x, mt_max_pool(xf, p, index_base, &r32, indices))
  }
  if (mt_records(x) && mt_autograd.max_pool) return mt_autograd.max_pool(x, p, index_base, values, indices);
  return max_pool(x, p, index_base, values, indices);
}
mt_status mt_adaptive_max_pool(mt_tensor *x, int nsp, const int64_t *sizes, int64_t index_base, mt_tensor **values,
                               mt_tensor **indices) {
  {
    mt_tensor **result = values;
    LOWP(x, mt_adaptive_max_pool(xf, nsp, sizes, index_base, &r32, indices))
  }
  if (mt_records(x) && mt_autograd.adaptive_max_pool)
    return mt_autograd.adaptive_max_pool(x, nsp, sizes, index_base, values, indices);
  return adaptive_max_pool(x, nsp, sizes, index_base, values, indices);
}
mt_status mt_avg_pool(mt_tensor *x, const mt_pool_params *p, mt_tensor **result) {
  LOWP(x, mt_avg_pool(xf, p, &r32))
  return avg_pool(x, p, result);
}
mt_status mt_adaptive_avg_pool(mt_tensor *x, int nsp, const int64_t *sizes, mt_tensor **result) {
  LOWP(x, mt_adaptive_avg_pool(xf, nsp, sizes, &r32))
  return adaptive_avg_pool(x, nsp, sizes, result);
}
mt_status mt_interpolate(mt_tensor *x, int nsp, int mode, const int64_t *sizes, const double *scales, int align_corners,
                         mt_tensor **result) {
  LOWP(x, mt_interpolate(xf, nsp, mode, sizes, scales, align_corners, &r32))
  return interpolate(x, nsp, mode, sizes, scales, align_corners, result);
}
mt_status mt_resample(mt_tensor *x, const mt_resample_spec *spec, mt_tensor **result) {
  LOWP(x, mt_resample(xf, spec, &r32))
  if (mt_records(x) && mt_autograd.resample) return mt_autograd.resample(x, spec, result);
  return resample(x, spec, result);
}
mt_status mt_resample_backward(mt_tensor *g, const mt_resample_spec *spec, mt_tensor **result) {
  LOWP(g, mt_resample_backward(xf, spec, &r32))
  if (mt_records(g) && mt_autograd.resample_backward) return mt_autograd.resample_backward(g, spec, result);
  return resample_backward(g, spec, result);
}
mt_status mt_max_unpool(mt_tensor *x, mt_tensor *indices, int nsp, const int64_t *sizes, int64_t index_base,
                        mt_tensor **result) {
  LOWP(x, mt_max_unpool(xf, indices, nsp, sizes, index_base, &r32))
  if (mt_records(x) && mt_autograd.max_unpool)
    return mt_autograd.max_unpool(x, indices, nsp, sizes, index_base, result);
  return max_unpool(x, indices, nsp, sizes, index_base, result);
}
mt_status mt_pad(mt_tensor *x, int nsp, int mode, const int64_t *before, const int64_t *after, mt_tensor **result) {
  LOWP(x, mt_pad(xf, nsp, mode, before, after, &r32))
  return pad(x, nsp, mode, before, after, result);
}
