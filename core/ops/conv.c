/* conv.c -- the front doors of convolution (issue 12, conv part): mt_convolution (1-d to 3-d,
 * stride, padding, dilation, groups, bias, transposed with output_padding), mt_im2col (F.unfold)
 * and mt_col2im (F.fold). Their checks and messages follow PyTorch 1.13's.
 *
 * A front door checks the arguments, works out the result's shape and allocates it on the inputs'
 * device, then hands the whole computation to that device's kernels (core/kernels.h: convolution,
 * conv_weight_grad, im2col, col2im): how a convolution is computed (oneDNN's primitives, or im2col and
 * matrix products on the thread pool, for the CPU: core/tensor/conv.c) is the backend's business, so
 * this layer holds no CPU code and the meta device only skips the kernels. */
#include "conv.h"

#include <stdio.h>
#include <stdlib.h>

/* the C names PyTorch's dtype messages print */
static const char *c_name(int dt) { return dt == MT_FLOAT32 ? "float" : dt == MT_FLOAT64 ? "double" : mt_type_title(dt); }

static mt_status bad(const char *op, const char *what) { return mt_error(MT_EINVAL, "%s: %s", op, what); }

/* "(a x b x c)" as PyTorch prints spatial sizes */
static const char *sizes_x(const int64_t *v, int n) {
  static _Thread_local char ring[4][96];
  static _Thread_local int next;
  char *buf = ring[next++ & 3];
  size_t len = 0;
  buf[len++] = '(';
  for (int i = 0; i < n && len < 80; i++)
    len += (size_t)snprintf(buf + len, 96 - len, i ? " x %lld" : "%lld", (long long)v[i]);
  buf[len++] = ')';
  buf[len] = 0;
  return buf;
}

static mt_status check_geometry(const char *op, int nsp, const int64_t *kernel, const int64_t *stride,
                                const int64_t *padding, const int64_t *dilation) {
  if (nsp < 1 || nsp > 3) return mt_error(MT_EINVAL, "%s: expected 1 to 3 spatial dimensions, got %d", op, nsp);
  for (int i = 0; i < nsp; i++) {
    if (kernel && kernel[i] <= 0) return bad(op, "non-positive kernel size is not supported");
    if (stride[i] <= 0) return bad(op, "non-positive stride is not supported");
    if (padding[i] < 0) return bad(op, "negative padding is not supported");
  }
  for (int i = 0; i < nsp; i++)
    if (dilation[i] <= 0) {
      return mt_error(MT_EINVAL, "%s: dilation should be greater than zero, but got %s", op,
                      mt_shape_str(dilation, nsp));
    }
  return MT_OK;
}

static mt_status float_only(const char *op, const mt_tensor *t) {
  if (t->_dtype == MT_FLOAT32 || t->_dtype == MT_FLOAT64) return MT_OK;
  return mt_error(MT_ENOTIMPL, "%s: \"%s\" not implemented for '%s'", op,
                  strcmp(op, "convolution") ? op : "slow_conv2d_cpu", mt_type_title(t->_dtype));
}

/* ---------------------------------------------------------------- convolution */
typedef struct {
  int nsp, transposed;
  int64_t N, C, Cout, g;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3], op[3];
  int64_t K, Lin, Lout;
} conv_shape;

static mt_status conv_checks(const char *op, mt_tensor *input, mt_tensor *weight, mt_tensor *bias,
                             const int64_t *stride, const int64_t *padding, const int64_t *dilation, int transposed,
                             const int64_t *output_padding, int64_t groups, int nsp, conv_shape *cs) {
  MT_TRY(mt_check_tensor(input, op, "input"));
  MT_TRY(mt_check_tensor(weight, op, "weight"));
  MT_TRY(mt_check_same_device(op, input, weight));
  if (bias) {
    MT_TRY(mt_check_tensor(bias, op, "bias"));
    MT_TRY(mt_check_same_device(op, input, bias));
  }
  MT_TRY(mt_check_kernel(MT_OP_CONVOLUTION, input));
  MT_TRY(check_geometry(op, nsp, NULL, stride, padding, dilation));
  if (groups <= 0) return bad(op, "non-positive groups is not supported");
  if (weight->_ndim != nsp + 2)
    return mt_error(MT_ESHAPE, "%s: expected a %d-dimensional weight for %d spatial dimensions, but got weight of size %s",
                    op, nsp + 2, nsp, MT_SHAPE(weight));
  if (input->_ndim != nsp + 2)
    return mt_error(MT_ESHAPE, "%s: Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional "
                    "input of size %s instead", op, nsp + 2, nsp + 2, MT_SHAPE(weight), input->_ndim, MT_SHAPE(input));
  if (input->_dtype != weight->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected scalar type %s but found %s", op, mt_type_title(input->_dtype),
                    mt_type_title(weight->_dtype));
  if (bias && bias->_dtype != input->_dtype)
    return mt_error(MT_EDTYPE, "%s: Input type (%s) and bias type (%s) should be the same", op,
                    c_name(input->_dtype), c_name(bias->_dtype));
  MT_TRY(float_only(op, input));
  memset(cs, 0, sizeof *cs);
  cs->nsp = nsp;
  cs->transposed = transposed;
  cs->N = input->_sizes[0];
  cs->C = input->_sizes[1];
  cs->g = groups;
  cs->K = 1;
  for (int i = 0; i < nsp; i++) {
    cs->in[i] = input->_sizes[2 + i];
    cs->k[i] = weight->_sizes[2 + i];
    cs->s[i] = stride[i];
    cs->p[i] = padding[i];
    cs->d[i] = dilation[i];
    cs->op[i] = output_padding ? output_padding[i] : 0;
    cs->K *= cs->k[i];
  }
  if (!transposed) {
    if (weight->_sizes[0] % groups)
      return mt_error(MT_ESHAPE, "%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                      "weight of size [%s] instead", op, (long long)groups, (long long)groups, MT_SHAPE(weight));
    if (cs->C != weight->_sizes[1] * groups)
      return mt_error(MT_ESHAPE, "%s: Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but "
                      "got %lld channels instead", op, (long long)groups, MT_SHAPE(weight), MT_SHAPE(input),
                      (long long)(weight->_sizes[1] * groups), (long long)cs->C);
    cs->Cout = weight->_sizes[0];
  } else {
    if (cs->C != weight->_sizes[0])
      return mt_error(MT_ESHAPE, "%s: Given transposed=1, weight of size %s, expected input%s to have %lld channels, but "
                      "got %lld channels instead", op, MT_SHAPE(weight), MT_SHAPE(input), (long long)weight->_sizes[0],
                      (long long)cs->C);
    if (cs->C % groups)
      return mt_error(MT_ESHAPE, "%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                      "weight of size [%s] instead", op, (long long)groups, (long long)groups, MT_SHAPE(weight));
    for (int i = 0; i < nsp; i++)
      if (cs->op[i] < 0 || (cs->op[i] >= cs->s[i] && cs->op[i] >= cs->d[i]))
        return mt_error(MT_EINVAL, "%s: output padding must be smaller than either stride or dilation, but got "
                        "output_padding %s, stride %s and dilation %s", op, mt_shape_str(cs->op, nsp),
                        mt_shape_str(stride, nsp), mt_shape_str(dilation, nsp));
    cs->Cout = weight->_sizes[1] * groups;
  }
  if (bias && (bias->_ndim != 1 || bias->_sizes[0] != cs->Cout))
    return mt_error(MT_ESHAPE, "%s: Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but "
                    "got bias of size %s instead", op, MT_SHAPE(weight), (long long)cs->Cout, MT_SHAPE(bias));
  if (!transposed) {
    int64_t padded[3], ks[3];
    bool small = false;
    for (int i = 0; i < nsp; i++) {
      padded[i] = cs->in[i] + 2 * cs->p[i];
      ks[i] = cs->d[i] * (cs->k[i] - 1) + 1;
      if (padded[i] < ks[i]) small = true;
    }
    if (small)
      return mt_error(MT_ESHAPE, "%s: Calculated padded input size per channel: %s. Kernel size: %s. Kernel size can't "
                      "be greater than actual input size", op, sizes_x(padded, nsp), sizes_x(ks, nsp));
    for (int i = 0; i < nsp; i++) cs->out[i] = (padded[i] - ks[i]) / cs->s[i] + 1;
  } else {
    bool small = false;
    for (int i = 0; i < nsp; i++) {
      cs->out[i] = (cs->in[i] - 1) * cs->s[i] - 2 * cs->p[i] + cs->d[i] * (cs->k[i] - 1) + cs->op[i] + 1;
      if (cs->out[i] <= 0) small = true;
    }
    if (small)
      return mt_error(MT_ESHAPE, "%s: Given input size per channel: %s. Calculated output size per channel: %s. Output "
                      "size is too small", op, sizes_x(cs->in, nsp), sizes_x(cs->out, nsp));
  }
  cs->Lin = cs->Lout = 1;
  for (int i = 0; i < nsp; i++) {
    cs->Lin *= cs->in[i];
    cs->Lout *= cs->out[i];
  }
  return MT_OK;
}

static mt_conv_args args_of(const conv_shape *cs) {
  mt_conv_args a;
  memset(&a, 0, sizeof a);
  a.nsp = cs->nsp;
  a.transposed = cs->transposed;
  a.N = cs->N;
  a.C = cs->C;
  a.Cout = cs->Cout;
  a.groups = cs->g;
  for (int i = 0; i < 3; i++) {
    bool real = i < cs->nsp;
    a.in[i] = real ? cs->in[i] : 1;
    a.out[i] = real ? cs->out[i] : 1;
    a.k[i] = real ? cs->k[i] : 1;
    a.s[i] = real ? cs->s[i] : 1;
    a.p[i] = real ? cs->p[i] : 0;
    a.d[i] = real ? cs->d[i] : 1;
    a.op[i] = real ? cs->op[i] : 0;
  }
  return a;
}

/* issue 25: a bfloat16 / float16 convolution runs in float32 and rounds once (PyTorch's CPU
 * convolutions accumulate low precision in float32 too): the operands are converted with mt_to,
 * which autograd follows, so the backward is float32's too */
static mt_status lowp_convolution(mt_tensor *input, mt_tensor *weight, mt_tensor *bias, const int64_t *stride,
                                  const int64_t *padding, const int64_t *dilation, int transposed,
                                  const int64_t *output_padding, int64_t groups, int nsp, mt_tensor **result) {
  if (weight->_dtype != input->_dtype || (bias && bias->_dtype != input->_dtype))
    return mt_error(MT_EDTYPE, "convolution: expected input, weight and bias of one dtype, got %s, %s%s%s",
                    mt_type_title(input->_dtype), mt_type_title(weight->_dtype), bias ? " and " : "",
                    bias ? mt_type_title(bias->_dtype) : "");
  mt_tensor *x = NULL, *w = NULL, *b = NULL, *r = NULL;
  mt_status s = mt_to(input, MT_FLOAT32, NULL, 0, &x);
  if (!s) s = mt_to(weight, MT_FLOAT32, NULL, 0, &w);
  if (!s && bias) s = mt_to(bias, MT_FLOAT32, NULL, 0, &b);
  if (!s) s = mt_convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups, nsp, &r);
  if (!s) s = mt_to(r, input->_dtype, NULL, 0, result);
  mt_tensor_release(x);
  mt_tensor_release(w);
  mt_tensor_release(b);
  mt_tensor_release(r);
  return s;
}

mt_status mt_convolution(mt_tensor *input, mt_tensor *weight, mt_tensor *bias, const int64_t *stride,
                         const int64_t *padding, const int64_t *dilation, int transposed,
                         const int64_t *output_padding, int64_t groups, int nsp, mt_tensor **result) {
  if (input && weight && mt_is_reduced_float(input->_dtype))
    return lowp_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, nsp,
                            result);
  const char *op = "convolution";
  if (mt_grad_mode && (mt_records2(input, weight) || mt_records(bias)) && mt_autograd.convolution)
    return mt_autograd.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
                                   nsp, result);
  conv_shape cs;
  MT_TRY(conv_checks(op, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, nsp, &cs));
  int64_t sz[5] = {cs.N, cs.Cout};
  for (int i = 0; i < nsp; i++) sz[2 + i] = cs.out[i];
  mt_tensor *r = NULL, *x = NULL, *w = NULL, *bc = NULL;
  mt_status s = mt_new(mt_device_of(input), sz, nsp + 2, input->_dtype, op, &r);
  if (!s) s = mt_contiguous(input, &x);
  if (!s) s = mt_contiguous(weight, &w);
  if (!s && bias) s = mt_contiguous(bias, &bc);
  mt_conv_args a = args_of(&cs);
  if (!s && r->_numel) s = mt_kernels_of(input)->convolution(r, x, w, bc, &a);
  if (x) mt_tensor_release(x);
  if (w) mt_tensor_release(w);
  if (bc) mt_tensor_release(bc);
  if (s) {
    if (r) mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- im2col, col2im */
static int64_t prod3(const int64_t *v, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= v[i];
  return p;
}

static const char *tuple(const int64_t *v, int n) {
  static _Thread_local char ring[8][96];
  static _Thread_local int next;
  char *buf = ring[next++ & 7];
  size_t len = 0;
  buf[len++] = '(';
  for (int i = 0; i < n && len < 80; i++)
    len += (size_t)snprintf(buf + len, 96 - len, i ? ", %lld" : "%lld", (long long)v[i]);
  buf[len++] = ')';
  buf[len] = 0;
  return buf;
}

mt_status mt_im2col(mt_tensor *input, const int64_t *kernel, const int64_t *dilation, const int64_t *padding,
                    const int64_t *stride, int nsp, mt_tensor **result) {
  const char *op = "im2col";
  if (mt_records(input) && mt_autograd.im2col)
    return mt_autograd.im2col(input, kernel, dilation, padding, stride, nsp, result);
  MT_TRY(mt_check_tensor(input, op, "input"));
  MT_TRY(mt_check_kernel(MT_OP_IM2COL, input));
  MT_TRY(check_geometry(op, nsp, kernel, stride, padding, dilation));
  if (input->_ndim != nsp + 2)
    return mt_error(MT_ESHAPE, "%s: Expected %dD (batched) input, but got input of size %s", op, nsp + 2,
                    MT_SHAPE(input));
  MT_TRY(float_only(op, input));
  mt_conv_geo g;
  memset(&g, 0, sizeof g);
  g.nsp = nsp;
  bool small = false;
  for (int i = 0; i < nsp; i++) {
    g.in[i] = input->_sizes[2 + i];
    g.k[i] = kernel[i];
    g.s[i] = stride[i];
    g.p[i] = padding[i];
    g.d[i] = dilation[i];
    int64_t span = g.in[i] + 2 * g.p[i] - (g.d[i] * (g.k[i] - 1) + 1);
    g.out[i] = span < 0 ? 0 : span / g.s[i] + 1;
    if (g.out[i] < 1) small = true;
  }
  if (small || input->_sizes[1] == 0)
    return mt_error(MT_ESHAPE, "%s: Given input with spatial size %s, kernel_size=%s, dilation=%s, padding=%s, "
                    "calculated shape of the array of sliding blocks as %s, but its components must be at least one.",
                    op, tuple(g.in, nsp), tuple(kernel, nsp), tuple(dilation, nsp), tuple(padding, nsp),
                    tuple(g.out, nsp));
  int64_t K = prod3(kernel, nsp), L = prod3(g.out, nsp);
  int64_t sz[3] = {input->_sizes[0], input->_sizes[1] * K, L};
  mt_tensor *r = NULL, *x = NULL;
  mt_status s = mt_new(mt_device_of(input), sz, 3, input->_dtype, op, &r);
  if (!s) s = mt_contiguous(input, &x);
  if (!s && r->_numel) s = mt_kernels_of(input)->im2col(r, x, &g);
  if (x) mt_tensor_release(x);
  if (s) {
    if (r) mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

mt_status mt_col2im(mt_tensor *cols, const int64_t *output_size, const int64_t *kernel, const int64_t *dilation,
                    const int64_t *padding, const int64_t *stride, int nsp, mt_tensor **result) {
  const char *op = "col2im";
  if (mt_records(cols) && mt_autograd.col2im)
    return mt_autograd.col2im(cols, output_size, kernel, dilation, padding, stride, nsp, result);
  MT_TRY(mt_check_tensor(cols, op, "input"));
  MT_TRY(mt_check_kernel(MT_OP_COL2IM, cols));
  MT_TRY(check_geometry(op, nsp, kernel, stride, padding, dilation));
  if (cols->_ndim != 3)
    return mt_error(MT_ESHAPE, "%s: Expected 3D (batched) input, but got input of size %s", op, MT_SHAPE(cols));
  MT_TRY(float_only(op, cols));
  int64_t K = prod3(kernel, nsp);
  if (cols->_sizes[1] % K)
    return mt_error(MT_ESHAPE, "%s: Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                    "but got input.size(1)=%lld and kernel_size=%s.", op, (long long)cols->_sizes[1], tuple(kernel, nsp));
  mt_conv_geo g;
  memset(&g, 0, sizeof g);
  g.nsp = nsp;
  bool small = false;
  char blocks[96];
  size_t len = 0;
  for (int i = 0; i < nsp; i++) {
    if (output_size[i] < 0) return bad(op, "output_size must be non-negative");
    g.in[i] = output_size[i];
    g.k[i] = kernel[i];
    g.s[i] = stride[i];
    g.p[i] = padding[i];
    g.d[i] = dilation[i];
    int64_t span = g.in[i] + 2 * g.p[i] - (g.d[i] * (g.k[i] - 1) + 1);
    g.out[i] = span < 0 ? 0 : span / g.s[i] + 1;
    if (g.out[i] < 1) small = true;
    len += (size_t)snprintf(blocks + len, sizeof blocks - len, i ? " * %lld" : "%lld", (long long)g.out[i]);
  }
  int64_t L = prod3(g.out, nsp);
  if (small)
    return mt_error(MT_ESHAPE, "%s: Given output_size=%s, kernel_size=%s, dilation=%s, padding=%s, stride=%s, "
                    "calculated shape of the array of sliding blocks as %s, but its components must be at least one.",
                    op, tuple(output_size, nsp), tuple(kernel, nsp), tuple(dilation, nsp), tuple(padding, nsp),
                    tuple(stride, nsp), tuple(g.out, nsp));
  if (cols->_sizes[2] != L)
    return mt_error(MT_ESHAPE, "%s: Given output_size=%s, kernel_size=%s, dilation=%s, padding=%s, stride=%s, expected "
                    "size of input's dimension 2 to match the calculated number of sliding blocks %s = %lld, but got "
                    "input.size(2)=%lld.", op, tuple(output_size, nsp), tuple(kernel, nsp), tuple(dilation, nsp),
                    tuple(padding, nsp), tuple(stride, nsp), blocks, (long long)L, (long long)cols->_sizes[2]);
  int64_t sz[5] = {cols->_sizes[0], cols->_sizes[1] / K};
  for (int i = 0; i < nsp; i++) sz[2 + i] = output_size[i];
  mt_tensor *r = NULL, *c = NULL;
  mt_status s = mt_new(mt_device_of(cols), sz, nsp + 2, cols->_dtype, op, &r);
  if (!s) s = mt_contiguous(cols, &c);
  if (!s && r->_numel) s = mt_kernels_of(cols)->col2im(r, c, &g);
  if (c) mt_tensor_release(c);
  if (s) {
    if (r) mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- the weight's gradient
 * Not recorded (autograd's backward when it is not itself recorded): the device's conv_weight_grad kernel,
 * straight into the weight's shape. */
mt_status mt_conv_weight_grad(mt_tensor *gout, mt_tensor *input, const int64_t *wsizes, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int transposed, int64_t groups, int nsp,
                              mt_tensor **result) {
  const char *op = "convolution_backward";
  MT_TRY(mt_check_tensor(gout, op, "grad_output"));
  MT_TRY(mt_check_tensor(input, op, "input"));
  MT_TRY(mt_check_same_device(op, gout, input));
  MT_TRY(mt_check_kernel(MT_OP_CONVOLUTION, input));
  if (gout->_dtype != input->_dtype) return mt_error(MT_EDTYPE, "%s: grad_output and input differ in dtype", op);
  MT_TRY(float_only(op, input));
  if (nsp < 1 || nsp > 3 || gout->_ndim != nsp + 2 || input->_ndim != nsp + 2 || groups <= 0)
    return mt_error(MT_ESHAPE, "%s: grad_output %s and input %s do not fit a %d-d convolution", op, MT_SHAPE(gout),
                    MT_SHAPE(input), nsp);
  mt_conv_args a;
  memset(&a, 0, sizeof a);
  a.nsp = nsp;
  a.transposed = transposed;
  a.N = input->_sizes[0];
  a.C = input->_sizes[1];
  a.Cout = gout->_sizes[1];
  a.groups = groups;
  for (int i = 0; i < 3; i++) {
    bool real = i < nsp;
    a.in[i] = real ? input->_sizes[2 + i] : 1;
    a.out[i] = real ? gout->_sizes[2 + i] : 1;
    a.k[i] = real ? wsizes[2 + i] : 1;
    a.s[i] = real ? stride[i] : 1;
    a.p[i] = real ? padding[i] : 0;
    a.d[i] = real ? dilation[i] : 1;
  }
  if (transposed) /* the output padding that made gout's sizes */
    for (int i = 0; i < nsp; i++)
      a.op[i] = a.out[i] - ((a.in[i] - 1) * a.s[i] - 2 * a.p[i] + a.d[i] * (a.k[i] - 1) + 1);
  mt_tensor *x = NULL, *g = NULL, *gw = NULL;
  mt_status s = mt_contiguous(input, &x);
  if (!s) s = mt_contiguous(gout, &g);
  if (!s) s = mt_new(mt_device_of(input), wsizes, nsp + 2, input->_dtype, op, &gw);
  if (!s) s = mt_kernels_of(input)->conv_weight_grad(gw, g, x, &a);
  if (x) mt_tensor_release(x);
  if (g) mt_tensor_release(g);
  if (s) {
    if (gw) mt_tensor_release(gw);
    return s;
  }
  return mt_give(gw, result);
}
