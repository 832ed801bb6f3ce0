/* conv.c -- the front doors of convolution (issue 12, conv part): mt_convolution (1-d to 3-d,
 * stride, padding, dilation, groups, bias, transposed with output_padding), mt_im2col (F.unfold)
 * and mt_col2im (F.fold). Their checks and messages follow PyTorch 1.13's.
 *
 * A convolution is im2col and matrix products: the columns of a batch of samples (the im2col
 * kernel of the device, one thread-pool task per sample and channel), then one batched product
 * per (sample, group), W_g (C_out/g x C/g K) @ cols (C/g K x L), written straight into the result
 * (the gemm kernel: our pool over small products, the BLAS's threads over large ones, never both),
 * the bias preloaded into the result so the products add onto it. A 1x1 convolution of stride 1
 * without padding multiplies the input itself: no columns. Transposed: cols = W_g^T @ x, then
 * col2im sums the blocks into the result. Samples go in chunks whose columns stay under
 * COLS_BYTES. Every geometry is worked out before a kernel runs, so the meta device only skips
 * the kernels. */
#include "conv.h"
#include "../thread.h"

#include <stdio.h>
#include <stdlib.h>

#define COLS_BYTES (48LL << 20)

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

/* offsets arrays of one batched product */
typedef struct {
  int64_t *a, *b, *c;
} offsets;
static mt_status offsets_open(offsets *o, int64_t nb) {
  o->a = malloc(sizeof(int64_t) * 3 * (size_t)(nb ? nb : 1));
  o->b = o->c = NULL;
  if (!o->a) return mt_error(MT_ENOMEM, "convolution: out of memory");
  o->b = o->a + nb;
  o->c = o->b + nb;
  return MT_OK;
}

static mt_status gemm_batch(const mt_tensor *on, int dt, int64_t nb, int64_t M, int64_t N, int64_t K, const char *A,
                            mt_matrix_geo ga, const char *B, mt_matrix_geo gb, char *Cm, mt_matrix_geo gc,
                            double beta, const offsets *o) {
  mt_gemm j;
  j.dt = dt;
  j.nb = nb;
  j.M = M;
  j.N = N;
  j.K = K;
  j.alpha = 1;
  j.beta = beta;
  j.A = A;
  j.B = B;
  j.C = Cm;
  j.ga = ga;
  j.gb = gb;
  j.gc = gc;
  j.aoff = o->a;
  j.boff = o->b;
  j.coff = o->c;
  return mt_kernels_of(on)->gemm(&j);
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

static mt_conv_geo geo_of(const conv_shape *cs, const int64_t *image, const int64_t *blocks) {
  mt_conv_geo g;
  memset(&g, 0, sizeof g);
  g.nsp = cs->nsp;
  for (int i = 0; i < cs->nsp; i++) {
    g.in[i] = image[i];
    g.out[i] = blocks[i];
    g.k[i] = cs->k[i];
    g.s[i] = cs->s[i];
    g.p[i] = cs->p[i];
    g.d[i] = cs->d[i];
  }
  return g;
}

static bool pointwise(const conv_shape *cs) {
  for (int i = 0; i < cs->nsp; i++)
    if (cs->k[i] != 1 || cs->s[i] != 1 || cs->p[i] != 0 || cs->op[i] != 0) return false;
  return true;
}

/* samples per chunk so that the columns stay under COLS_BYTES */
static int64_t chunk_of(int64_t N, int64_t per_sample) {
  int64_t n = per_sample > 0 ? COLS_BYTES / per_sample : N;
  if (n < 1) n = 1;
  return n < N ? n : N;
}

/* ---------------------------------------------------------------- one sample at a time
 * When each sample's product is small (float32 on the CPU, at most 64^3 multiply-adds: what the gemm
 * kernel runs on one thread with its own kernel), the samples are split over the thread pool and
 * each thread makes one sample's columns at a time into its own scratch, which stays in cache, and
 * multiplies them at once: the columns of the whole batch never go out to memory (for the LeNet
 * convs they are 20 times the input). Larger products take the batched path below, whose products
 * run on the BLAS's threads. */
#define FUSED_MACS (64LL * 64 * 64)
static bool fused(const conv_shape *cs, const mt_tensor *x, int64_t M, int64_t N, int64_t K) {
  return x->_device_type == MT_CPU && x->_dtype == MT_FLOAT32 && cs->N > 1 && mt_get_num_threads() > 1 &&
         M * N * K <= FUSED_MACS && K * N * 4 <= 256 * 1024 && M * K * 4 <= 256 * 1024;
}

typedef struct {
  const conv_shape *cs;
  mt_tensor *x, *w, *r;
  const float *bias; /* not transposed: each sample's rows start as the bias (then beta is 1) */
  double beta;
  mt_conv_geo geo;
  int failed;
} fused_job;

static void fused_range(void *ctx, int64_t begin, int64_t end) {
  fused_job *j = ctx;
  const conv_shape *cs = j->cs;
  int dt = j->x->_dtype;
  int64_t g = cs->g, Cg = cs->C / g, Coutg = cs->Cout / g;
  bool tr = cs->transposed;
  int64_t Ck = tr ? Coutg * cs->K : Cg * cs->K, L = tr ? cs->Lin : cs->Lout;
  int64_t sz[3] = {1, tr ? cs->Cout * cs->K : cs->C * cs->K, L};
  mt_tensor *cols = NULL;
  offsets o = {0};
  mt_status s = mt_new(mt_device_of(j->x), sz, 3, dt, "convolution", &cols);
  if (!s) s = offsets_open(&o, g);
  const mt_kernels *k = mt_kernels_of(j->x);
  for (int64_t n = begin; n < end && !s; n++) {
    if (!tr) {
      mt_tensor *xn = NULL;
      s = mt_narrow(j->x, 0, n, 1, &xn);
      if (!s) s = k->im2col(cols, xn, &j->geo);
      if (xn) mt_tensor_release(xn);
      if (j->bias) {
        float *rn = (float *)j->r->_data + n * cs->Cout * L;
        for (int64_t co = 0; co < cs->Cout; co++)
          for (int64_t l = 0; l < L; l++) rn[co * L + l] = j->bias[co];
      }
      for (int64_t gi = 0; gi < g; gi++) {
        o.a[gi] = gi * Coutg * Ck;
        o.b[gi] = gi * Ck * L;
        o.c[gi] = (n * cs->Cout + gi * Coutg) * L;
      }
      if (!s)
        s = gemm_batch(j->x, dt, g, Coutg, L, Ck, j->w->_data, (mt_matrix_geo){Coutg, Ck, Ck, 1}, cols->_data,
                       (mt_matrix_geo){Ck, L, L, 1}, j->r->_data, (mt_matrix_geo){Coutg, L, L, 1}, j->beta, &o);
    } else {
      for (int64_t gi = 0; gi < g; gi++) {
        o.a[gi] = gi * Cg * Ck;
        o.b[gi] = (n * cs->C + gi * Cg) * L;
        o.c[gi] = gi * Ck * L;
      }
      s = gemm_batch(j->x, dt, g, Ck, L, Cg, j->w->_data, (mt_matrix_geo){Ck, Cg, 1, Ck}, j->x->_data,
                     (mt_matrix_geo){Cg, L, L, 1}, cols->_data, (mt_matrix_geo){Ck, L, L, 1}, 0, &o);
      mt_tensor *rn = NULL;
      if (!s) s = mt_narrow(j->r, 0, n, 1, &rn);
      if (!s) s = k->col2im(rn, cols, &j->geo);
      if (rn) mt_tensor_release(rn);
    }
  }
  free(o.a);
  if (cols) mt_tensor_release(cols);
  if (s) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

static mt_status run_fused(const conv_shape *cs, mt_tensor *x, mt_tensor *w, mt_tensor *r, const float *bias,
                           double beta) {
  fused_job j = {cs, x, w, r, bias, bias ? 1 : beta,
                 cs->transposed ? geo_of(cs, cs->out, cs->in) : geo_of(cs, cs->in, cs->out), 0};
  mt_parallel_for(cs->N, 1, fused_range, &j);
  if (j.failed) return mt_error(MT_ENOMEM, "convolution: out of memory for the columns of a sample");
  return MT_OK;
}

/* fused() holds for the forward of a (non-transposed) convolution of these shapes */
static bool forward_fused(const conv_shape *cs, const mt_tensor *x) {
  int64_t g = cs->g;
  return !pointwise(cs) && fused(cs, x, cs->Cout / g, cs->Lout, cs->C / g * cs->K);
}

/* r (N, Cout, *out) = conv(x, w) [+ bias preloaded in r when beta == 1; bias: (the fused path) added
 * as each sample is computed] */
static mt_status conv_forward(const conv_shape *cs, mt_tensor *x, mt_tensor *w, mt_tensor *r, const float *bias,
                              double beta) {
  int dt = x->_dtype;
  size_t it = mt_itemsize(dt);
  int64_t N = cs->N, g = cs->g, Cg = cs->C / g, Coutg = cs->Cout / g, Ck = Cg * cs->K, L = cs->Lout;
  bool pw = pointwise(cs);
  if (forward_fused(cs, x)) return run_fused(cs, x, w, r, bias, beta);
  int64_t chunk = pw ? N : chunk_of(N, cs->C * cs->K * L * (int64_t)it);
  mt_tensor *cols = NULL;
  mt_status s = MT_OK;
  offsets o;
  MT_TRY(offsets_open(&o, chunk * g));
  if (!pw) {
    int64_t sz[3] = {chunk, cs->C * cs->K, L};
    s = mt_new(mt_device_of(x), sz, 3, dt, "convolution", &cols);
    if (s) { free(o.a); return s; }
  }
  mt_conv_geo geo = geo_of(cs, cs->in, cs->out);
  for (int64_t n0 = 0; n0 < N && s == MT_OK; n0 += chunk) {
    int64_t nc = N - n0 < chunk ? N - n0 : chunk;
    const char *B;
    if (pw) {
      B = x->_data;
    } else {
      mt_tensor *xn = NULL, *cn = NULL;
      s = mt_narrow(x, 0, n0, nc, &xn);
      if (!s) s = mt_narrow(cols, 0, 0, nc, &cn);
      if (!s) s = mt_kernels_of(x)->im2col(cn, xn, &geo);
      if (xn) mt_tensor_release(xn);
      if (cn) mt_tensor_release(cn);
      B = cols->_data;
    }
    for (int64_t p = 0; p < nc * g; p++) {
      int64_t n = p / g, gi = p % g;
      o.a[p] = gi * Coutg * Ck;
      o.b[p] = pw ? ((n0 + n) * cs->C + gi * Cg) * L : (n * cs->C * cs->K + gi * Ck) * L;
      o.c[p] = ((n0 + n) * cs->Cout + gi * Coutg) * L;
    }
    if (!s)
      s = gemm_batch(x, dt, nc * g, Coutg, L, Ck, w->_data, (mt_matrix_geo){Coutg, Ck, Ck, 1}, B,
                     (mt_matrix_geo){Ck, L, L, 1}, r->_data, (mt_matrix_geo){Coutg, L, L, 1}, beta, &o);
  }
  if (cols) mt_tensor_release(cols);
  free(o.a);
  return s;
}

/* transposed: r (N, Cout, *out) = col2im(W^T @ x) (+ bias added by the caller), or, pointwise, the
 * products straight into r with beta */
static mt_status conv_transposed_forward(const conv_shape *cs, mt_tensor *x, mt_tensor *w, mt_tensor *r, double beta) {
  int dt = x->_dtype;
  size_t it = mt_itemsize(dt);
  int64_t N = cs->N, g = cs->g, Cg = cs->C / g, Coutg = cs->Cout / g, Ck = Coutg * cs->K, L = cs->Lin;
  bool pw = pointwise(cs);
  if (!pw && fused(cs, x, Ck, L, Cg)) return run_fused(cs, x, w, r, NULL, beta);
  int64_t chunk = pw ? N : chunk_of(N, cs->Cout * cs->K * L * (int64_t)it);
  mt_tensor *cols = NULL;
  mt_status s = MT_OK;
  offsets o;
  MT_TRY(offsets_open(&o, chunk * g));
  if (!pw) {
    int64_t sz[3] = {chunk, cs->Cout * cs->K, L};
    s = mt_new(mt_device_of(x), sz, 3, dt, "convolution", &cols);
    if (s) { free(o.a); return s; }
  }
  /* col2im of the output image from blocks laid on the input's grid */
  mt_conv_geo geo = geo_of(cs, cs->out, cs->in);
  for (int64_t n0 = 0; n0 < N && s == MT_OK; n0 += chunk) {
    int64_t nc = N - n0 < chunk ? N - n0 : chunk;
    for (int64_t p = 0; p < nc * g; p++) {
      int64_t n = p / g, gi = p % g;
      o.a[p] = gi * Cg * Ck;
      o.b[p] = ((n0 + n) * cs->C + gi * Cg) * L;
      o.c[p] = pw ? ((n0 + n) * cs->Cout + gi * Coutg) * L : (n * cs->Cout * cs->K + gi * Ck) * L;
    }
    /* W_g stored (Cg x Ck) row-major, read transposed */
    s = gemm_batch(x, dt, nc * g, Ck, L, Cg, w->_data, (mt_matrix_geo){Ck, Cg, 1, Ck}, x->_data,
                   (mt_matrix_geo){Cg, L, L, 1}, pw ? r->_data : cols->_data, (mt_matrix_geo){Ck, L, L, 1},
                   pw ? beta : 0, &o);
    if (!s && !pw) {
      mt_tensor *rn = NULL, *cn = NULL;
      s = mt_narrow(r, 0, n0, nc, &rn);
      if (!s) s = mt_narrow(cols, 0, 0, nc, &cn);
      if (!s) s = mt_kernels_of(x)->col2im(rn, cn, &geo);
      if (rn) mt_tensor_release(rn);
      if (cn) mt_tensor_release(cn);
    }
  }
  if (cols) mt_tensor_release(cols);
  free(o.a);
  return s;
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
  mt_tensor *r = NULL, *x = NULL, *w = NULL, *bview = NULL;
  mt_status s = mt_new(mt_device_of(input), sz, nsp + 2, input->_dtype, op, &r);
  if (!s) s = mt_contiguous(input, &x);
  if (!s) s = mt_contiguous(weight, &w);
  if (!s && bias) {
    int64_t bs[5] = {1, cs.Cout, 1, 1, 1};
    s = mt_view(bias, bs, nsp + 2, &bview);
  }
  mt_tensor *bc = NULL; /* the bias, contiguous, for the fused path */
  bool bias_fused = bias && !transposed && forward_fused(&cs, input);
  if (!s && bias_fused) s = mt_contiguous(bias, &bc);
  bool preload = bias && !bias_fused && (!transposed || pointwise(&cs));
  if (!s && preload && r->_numel) s = mt_copy_(r, bview);
  if (!s && r->_numel && cs.K && cs.C) {
    if (!transposed) s = conv_forward(&cs, x, w, r, bc ? (const float *)bc->_data : NULL, preload ? 1 : 0);
    else s = conv_transposed_forward(&cs, x, w, r, preload ? 1 : 0);
  } else if (!s && !preload && r->_numel) {
    bias_fused = false;
    s = mt_fill_(r, 0); /* no channels in: zeros (and the bias below) */
  }
  if (!s && bias && !preload && !bias_fused && r->_numel) {
    mt_tensor *sum = NULL;
    s = mt_binary(MT_OP_ADD, r, bview, r, &sum);
    if (sum) mt_tensor_release(sum);
  }
  if (x) mt_tensor_release(x);
  if (w) mt_tensor_release(w);
  if (bview) mt_tensor_release(bview);
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
 * gw (Qc, Pc/g K) per group g: sum over samples of Q[n]_g (Qc/g x L) @ cols(P[n])_g^T (L x Pc/g K), where
 * P is the side whose columns are taken (the input; transposed: the output's gradient) and Q the other.
 * Small products (as fused() says): each pool thread takes samples one at a time, makes P[n]'s columns
 * and Q[n]^T (L x Qc) in its own scratch and adds cols @ Q^T (both read along rows, which the small
 * kernel wants) into its own gw^T; the threads' sums are added and transposed at the end. Larger ones:
 * the columns of a chunk of samples, then per sample one product into gw with the BLAS's threads
 * (the transposed operand passed as such), the first writing, the others adding. */
typedef struct {
  mt_tensor *P, *Q;
  mt_conv_geo geo;
  int64_t N, g, Pc, Qc, K, L;
  float *sums; /* one gw^T (g, Ck, Qc/g) per range, nranges of them */
  int nranges, next;
  int failed;
} wgrad_job;

static void wgrad_range(void *ctx, int64_t begin, int64_t end) {
  wgrad_job *j = ctx;
  int64_t g = j->g, Ck = j->Pc / g * j->K, Qg = j->Qc / g, L = j->L;
  int slot = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
  if (slot >= j->nranges) { /* never: mt_parallel_for runs at most nranges ranges */
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  float *acc = j->sums + (int64_t)slot * g * Ck * Qg;
  memset(acc, 0, sizeof(float) * (size_t)(g * Ck * Qg));
  int64_t csz[3] = {1, j->Pc * j->K, L};
  mt_tensor *cols = NULL;
  float *qt = malloc(sizeof(float) * (size_t)(L * j->Qc + 1));
  offsets o = {0};
  mt_status s = qt ? MT_OK : MT_ENOMEM;
  if (!s) s = mt_new(mt_device_of(j->P), csz, 3, MT_FLOAT32, "convolution_backward", &cols);
  if (!s) s = offsets_open(&o, g);
  const mt_kernels *k = mt_kernels_of(j->P);
  for (int64_t n = begin; n < end && !s; n++) {
    mt_tensor *pn = NULL;
    s = mt_narrow(j->P, 0, n, 1, &pn);
    if (!s) s = k->im2col(cols, pn, &j->geo);
    if (pn) mt_tensor_release(pn);
    const float *q = (const float *)j->Q->_data + n * j->Qc * L;
    for (int64_t c = 0; c < j->Qc; c++)
      for (int64_t l = 0; l < L; l++) qt[l * j->Qc + c] = q[c * L + l];
    for (int64_t gi = 0; gi < g; gi++) {
      o.a[gi] = gi * Ck * L;
      o.b[gi] = gi * Qg;
      o.c[gi] = gi * Ck * Qg;
    }
    /* acc_g (Ck x Qg) += cols_g (Ck x L) @ qt_g (L x Qg) */
    if (!s)
      s = gemm_batch(j->P, MT_FLOAT32, g, Ck, Qg, L, cols->_data, (mt_matrix_geo){Ck, L, L, 1}, (const char *)qt,
                     (mt_matrix_geo){L, Qg, j->Qc, 1}, (char *)acc, (mt_matrix_geo){Ck, Qg, Qg, 1}, 1, &o);
  }
  free(o.a);
  free(qt);
  if (cols) mt_tensor_release(cols);
  if (s) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

mt_status mt_conv_weight_grad(mt_tensor *gout, mt_tensor *input, const int64_t *wsizes, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int transposed, int64_t groups, int nsp,
                              mt_tensor **result) {
  const char *op = "convolution_backward";
  MT_TRY(mt_check_tensor(gout, op, "grad_output"));
  MT_TRY(mt_check_tensor(input, op, "input"));
  MT_TRY(mt_check_same_device(op, gout, input));
  if (gout->_dtype != input->_dtype) return mt_error(MT_EDTYPE, "%s: grad_output and input differ in dtype", op);
  MT_TRY(float_only(op, input));
  int dt = input->_dtype;
  mt_tensor *P = NULL, *Q = NULL, *gw = NULL, *cols = NULL;
  mt_status s = mt_contiguous(transposed ? gout : input, &P);
  if (!s) s = mt_contiguous(transposed ? input : gout, &Q);
  if (s) {
    if (P) mt_tensor_release(P);
    return s;
  }
  int64_t K = 1, N = P->_sizes[0], Pc = P->_sizes[1], Qc = Q->_sizes[1], L = 1, g = groups;
  mt_conv_geo geo;
  memset(&geo, 0, sizeof geo);
  geo.nsp = nsp;
  for (int i = 0; i < nsp; i++) {
    K *= wsizes[2 + i];
    geo.in[i] = P->_sizes[2 + i];
    geo.out[i] = Q->_sizes[2 + i]; /* the blocks: one per position of the other side */
    geo.k[i] = wsizes[2 + i];
    geo.s[i] = stride[i];
    geo.p[i] = padding[i];
    geo.d[i] = dilation[i];
    L *= geo.out[i];
  }
  int64_t Ck = Pc / g * K, Qg = Qc / g;
  s = mt_new(mt_device_of(input), wsizes, nsp + 2, dt, op, &gw);
  conv_shape cs = {.N = N};
  if (!s && gw->_numel && (N == 0 || L == 0)) s = mt_fill_(gw, 0);
  else if (!s && gw->_numel && fused(&cs, P, Ck, Qg, L)) {
    int nt = mt_get_num_threads();
    wgrad_job j = {P, Q, geo, N, g, Pc, Qc, K, L, NULL, nt, 0, 0};
    j.sums = malloc(sizeof(float) * (size_t)(nt * g * Ck * Qg));
    if (!j.sums) s = mt_error(MT_ENOMEM, "%s: out of memory", op);
    if (!s) mt_parallel_for(N, 1, wgrad_range, &j);
    if (!s && j.failed) s = mt_error(MT_ENOMEM, "%s: out of memory for the columns of a sample", op);
    if (!s) { /* gw[gi Qg + q, c] = sum over the ranges of sums[r][gi][c][q] */
      float *w = (float *)gw->_data;
      int used = j.next < nt ? j.next : nt;
      for (int64_t gi = 0; gi < g; gi++)
        for (int64_t q = 0; q < Qg; q++)
          for (int64_t c = 0; c < Ck; c++) {
            float v = 0;
            for (int r = 0; r < used; r++) v += j.sums[((int64_t)r * g + gi) * Ck * Qg + c * Qg + q];
            w[(gi * Qg + q) * Ck + c] = v;
          }
    }
    free(j.sums);
  } else if (!s && gw->_numel) {
    /* a 1x1 kernel of stride 1 without padding: the columns are P itself */
    bool pw = K == 1;
    for (int i = 0; i < nsp; i++) pw = pw && stride[i] == 1 && padding[i] == 0 && geo.in[i] == geo.out[i];
    size_t it = mt_itemsize(dt);
    int64_t chunk = pw ? N : chunk_of(N, Pc * K * L * (int64_t)it);
    int64_t csz[3] = {chunk, Pc * K, L};
    offsets o = {0};
    if (!pw) s = mt_new(mt_device_of(input), csz, 3, dt, op, &cols);
    if (!s) s = offsets_open(&o, g);
    for (int64_t n0 = 0; n0 < N && !s; n0 += chunk) {
      int64_t nc = N - n0 < chunk ? N - n0 : chunk;
      mt_tensor *pn = NULL, *cn = NULL;
      if (!pw) {
        s = mt_narrow(P, 0, n0, nc, &pn);
        if (!s) s = mt_narrow(cols, 0, 0, nc, &cn);
        if (!s) s = mt_kernels_of(P)->im2col(cn, pn, &geo);
      }
      if (pn) mt_tensor_release(pn);
      if (cn) mt_tensor_release(cn);
      const char *B = pw ? P->_data : cols ? cols->_data : NULL;
      for (int64_t n = 0; n < nc && !s; n++) {
        for (int64_t gi = 0; gi < g; gi++) {
          o.a[gi] = ((n0 + n) * Qc + gi * Qg) * L;
          o.b[gi] = ((pw ? n0 + n : n) * Pc * K + gi * Ck) * L;
          o.c[gi] = gi * Qg * Ck;
        }
        /* gw_g (Qg x Ck) (+)= Q[n]_g (Qg x L) @ cols_g^T (L x Ck) */
        s = gemm_batch(P, dt, g, Qg, Ck, L, Q->_data, (mt_matrix_geo){Qg, L, L, 1}, B,
                       (mt_matrix_geo){L, Ck, 1, L}, gw->_data, (mt_matrix_geo){Qg, Ck, Ck, 1},
                       n0 + n == 0 ? 0 : 1, &o);
      }
    }
    free(o.a);
  }
  if (cols) mt_tensor_release(cols);
  mt_tensor_release(P);
  mt_tensor_release(Q);
  if (s) {
    if (gw) mt_tensor_release(gw);
    return s;
  }
  return mt_give(gw, result);
}
