/* conv.c -- the CUDA backend's convolution slots (core/kernels.h's convolution and conv_weight_grad): the
 * columns of every sample (im2col), then the products on the device, a batch of them per call (samples x
 * groups); transposed convolutions the other way round (products, then col2im). The bias is a broadcast
 * add. cuDNN comes later (gpu.md). */
#include "gpu.h"

#include <stdlib.h>

static int64_t prod3(const int64_t *v, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= v[i];
  return p;
}

/* the geometry of the columns of `image_sizes` (the image side) with blocks on `grid` */
static void geo_of(mt_conv_geo *g, const mt_conv_args *a, const int64_t *image, const int64_t *grid) {
  memset(g, 0, sizeof *g);
  g->nsp = a->nsp;
  for (int i = 0; i < a->nsp; i++) {
    g->in[i] = image[i];
    g->out[i] = grid[i];
    g->k[i] = a->k[i];
    g->s[i] = a->s[i];
    g->p[i] = a->p[i];
    g->d[i] = a->d[i];
  }
}

/* C[p] = A[p] B[p] for p = (n, group), offsets n * sa + g * ga, ... (elements) */
static mt_status batch(int dt, int64_t N, int64_t G, int64_t M, int64_t Nc, int64_t K, const char *A, mt_matrix_geo ga,
                       int64_t an, int64_t ag, const char *B, mt_matrix_geo gb, int64_t bn, int64_t bg, char *C,
                       mt_matrix_geo gc, int64_t cn, int64_t cg, double beta) {
  int64_t nb = N * G;
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)(3 * nb + 1));
  if (!offs) return mt_error(MT_ENOMEM, "convolution: out of memory");
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < G; g++) {
      int64_t p = n * G + g;
      offs[p] = n * an + g * ag;
      offs[nb + p] = n * bn + g * bg;
      offs[2 * nb + p] = n * cn + g * cg;
    }
  mt_gemm j = {.dt = dt, .nb = nb, .M = M, .N = Nc, .K = K, .alpha = 1, .beta = beta, .A = A, .B = B, .C = C,
               .ga = ga, .gb = gb, .gc = gc, .aoff = offs, .boff = offs + nb, .coff = offs + 2 * nb};
  mt_status s = mt_gpu_gemm_slot(&j);
  free(offs);
  return s;
}

/* out (N, Cout, L) += bias (Cout) */
static mt_status add_bias(mt_tensor *out, const mt_tensor *bias, int64_t N, int64_t Cout, int64_t L) {
  mt_gpu_iter it;
  memset(&it, 0, sizeof it);
  it.nops = 3;
  it.numel = N * Cout * L;
  it.ndim = 3;
  it.sizes[0] = N, it.sizes[1] = Cout, it.sizes[2] = L;
  for (int k = 0; k < 2; k++) it.strides[k][0] = Cout * L, it.strides[k][1] = L, it.strides[k][2] = 1;
  it.strides[2][1] = 1;
  it.data[0] = it.data[1] = out->_data;
  it.data[2] = bias->_data;
  for (int k = 0; k < 3; k++) it.dtype[k] = out->_dtype;
  if (it.numel == 0) return MT_OK;
  if (mt_gpu_k->binary(MT_OP_ADD, &it, mt_gpu_fault_of(out->_device_index), mt_gpu_stream_of(out)))
    return mt_error(MT_EDTYPE, "convolution: not implemented for '%s' on device cuda", mt_dtype_name(out->_dtype));
  return MT_OK;
}

mt_status mt_gpu_convolution(mt_tensor *out, const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias,
                             const mt_conv_args *a) {
  if (out->_numel == 0) return MT_OK;
  const int dt = x->_dtype, nsp = a->nsp;
  const int64_t N = a->N, C = a->C, Cout = a->Cout, G = a->groups, K = prod3(a->k, nsp);
  const int64_t Lin = prod3(a->in, nsp), Lout = prod3(a->out, nsp);
  const size_t it = mt_itemsize(dt);
  if (C == 0 || K == 0) {
    MT_TRY(mt_gpu_fill(out, 0));
    return bias ? add_bias(out, bias, N, Cout, Lout) : MT_OK;
  }
  mt_tensor *cols = NULL;
  mt_status s;
  if (!a->transposed) {
    /* cols (N, C K, Lout) = im2col(x); out[n]_g (Cout/g x Lout) = w_g (Cout/g x C/g K) cols[n]_g */
    int64_t cs[3] = {N, C * K, Lout}, Cg = C / G, Og = Cout / G;
    mt_conv_geo geo;
    geo_of(&geo, a, a->in, a->out);
    MT_TRY(mt_gpu_new(x->_device_index, cs, 3, dt, "convolution", &cols));
    s = mt_gpu_im2col(cols, x, &geo);
    if (!s)
      s = batch(dt, N, G, Og, Lout, Cg * K, w->_data, (mt_matrix_geo){Og, Cg * K, Cg * K, 1}, 0, Og * Cg * K,
                cols->_data, (mt_matrix_geo){Cg * K, Lout, Lout, 1}, C * K * Lout, Cg * K * Lout, out->_data,
                (mt_matrix_geo){Og, Lout, Lout, 1}, Cout * Lout, Og * Lout, 0);
  } else {
    /* cols[n]_g (Cout/g K x Lin) = w_g^T (w: (C, Cout/g, K)) x[n]_g (C/g x Lin); out = col2im(cols) */
    int64_t cs[3] = {N, Cout * K, Lin}, Cg = C / G, Og = Cout / G;
    mt_conv_geo geo;
    geo_of(&geo, a, a->out, a->in);
    MT_TRY(mt_gpu_new(x->_device_index, cs, 3, dt, "convolution", &cols));
    s = batch(dt, N, G, Og * K, Lin, Cg, w->_data, (mt_matrix_geo){Og * K, Cg, 1, Og * K}, 0, Cg * Og * K,
              x->_data, (mt_matrix_geo){Cg, Lin, Lin, 1}, C * Lin, Cg * Lin, cols->_data,
              (mt_matrix_geo){Og * K, Lin, Lin, 1}, Cout * K * Lin, Og * K * Lin, 0);
    if (!s) s = mt_gpu_col2im(out, cols, &geo);
  }
  (void)it;
  mt_tensor_release(cols);
  if (!s && bias) s = add_bias(out, bias, N, Cout, Lout);
  return s;
}

/* gw viewed as (Qc, Pc/g K) = sum over samples of Q[n]_g (Qc/g x L) cols(P[n])_g^T: the samples folded
 * into the product's inner dim by laying Q and the columns out channel-major, (channels, N, L) */
mt_status mt_gpu_conv_weight_grad(mt_tensor *gw, const mt_tensor *gout, const mt_tensor *x, const mt_conv_args *a) {
  if (gw->_numel == 0) return MT_OK;
  const int dt = x->_dtype, nsp = a->nsp, dev = x->_device_index;
  const mt_tensor *P = a->transposed ? gout : x, *Q = a->transposed ? x : gout;
  const int64_t N = a->N, G = a->groups, K = prod3(a->k, nsp), Pc = P->_sizes[1], Qc = Q->_sizes[1];
  int64_t pin[3] = {1, 1, 1}, grid[3] = {1, 1, 1}, L = 1;
  for (int i = 0; i < nsp; i++) {
    pin[i] = P->_sizes[2 + i];
    grid[i] = Q->_sizes[2 + i];
    L *= grid[i];
  }
  if (N == 0 || L == 0) return mt_gpu_fill(gw, 0);
  const int64_t Ck = Pc / G * K, Qg = Qc / G;
  mt_conv_geo geo;
  geo_of(&geo, a, pin, grid);
  mt_tensor *cols = NULL, *ct = NULL, *qt = NULL, *view = NULL;
  int64_t cs[3] = {N, Pc * K, L}, ts[3] = {Pc * K, N, L}, qs[3] = {Qc, N, L};
  mt_status s = mt_gpu_new(dev, cs, 3, dt, "convolution_backward", &cols);
  if (!s) s = mt_gpu_im2col(cols, P, &geo);
  /* (N, Pc K, L) -> (Pc K, N, L) and Q (N, Qc, L) -> (Qc, N, L) */
  if (!s) s = mt_gpu_new(dev, ts, 3, dt, "convolution_backward", &ct);
  if (!s) {
    int64_t st[3] = {L, Pc * K * L, 1};
    s = mt_new_view(cols, ts, st, 3, 0, &view);
    if (!s) s = mt_gpu_copy(ct, view);
    if (view) mt_tensor_release(view), view = NULL;
  }
  if (!s) s = mt_gpu_new(dev, qs, 3, dt, "convolution_backward", &qt);
  if (!s) {
    int64_t st[3] = {L, Qc * L, 1};
    s = mt_new_view((mt_tensor *)Q, qs, st, 3, Q->_offset, &view);
    if (!s) s = mt_gpu_copy(qt, view);
    if (view) mt_tensor_release(view), view = NULL;
  }
  /* gw_g (Qg x Ck) = qt_g (Qg x N L) ct_g^T (N L x Ck) */
  if (!s)
    s = batch(dt, 1, G, Qg, Ck, N * L, qt->_data, (mt_matrix_geo){Qg, N * L, N * L, 1}, 0, Qg * N * L, ct->_data,
              (mt_matrix_geo){N * L, Ck, 1, N * L}, 0, Ck * N * L, gw->_data, (mt_matrix_geo){Qg, Ck, Ck, 1}, 0,
              Qg * Ck, 0);
  if (cols) mt_tensor_release(cols);
  if (ct) mt_tensor_release(ct);
  if (qt) mt_tensor_release(qt);
  return s;
}
