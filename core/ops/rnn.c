/* rnn.c -- the front doors of the recurrent layers' ops: one LSTM or GRU time step's gate
 * arithmetic after its two products (lstm_cell_pointwise, gru_cell_pointwise: their CPU kernels
 * are core/tensor/rnn.c, their autograd core/grad/rnn.c), their fused backwards, and unbind (the
 * views of every time step, one graph node for all). lua/nn/rnn.lua builds the layers on them: the
 * input projection of every step as one product per layer, then per step one product for the
 * hidden projection and one of these kernels. */
#include "rnn.h"

/* t itself (a new reference) when its rows have unit stride, else a contiguous copy */
static mt_status rowwise(mt_tensor *t, mt_tensor **out) {
  if (!t) return *out = NULL, MT_OK;
  int last = t->_ndim - 1;
  if (t->_strides[last] == 1 || t->_sizes[last] <= 1) return *out = mt_tensor_retain(t), MT_OK;
  return mt_contiguous(t, out);
}

static mt_status check_operand(const char *op, const char *arg, mt_tensor *t, mt_tensor *like, int ndim,
                               int64_t rows, int64_t cols) {
  MT_TRY(mt_check_tensor(t, op, arg));
  MT_TRY(mt_check_same_device(op, like, t));
  if (t->_dtype != like->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected %s to have dtype %s like igates, but got %s", op, arg,
                    mt_type_title(like->_dtype), mt_type_title(t->_dtype));
  bool ok = t->_ndim == ndim && (ndim == 1 ? t->_sizes[0] == cols : t->_sizes[0] == rows && t->_sizes[1] == cols);
  if (!ok) {
    int64_t want[2] = {rows, cols};
    return mt_error(MT_ESHAPE, "%s: expected %s of size %s, but got %s", op, arg,
                    mt_shape_str(ndim == 1 ? want + 1 : want, ndim), MT_SHAPE(t));
  }
  return MT_OK;
}

/* the checks both cells share: igates [B, k * H] of float32 or float64, hgates alike, the state
 * [B, H], biases [k * H]; *H is the hidden size */
static mt_status check_cell(const char *op, int k, mt_tensor *ig, mt_tensor *hg, mt_tensor *state, const char *sname,
                            mt_tensor *bi, mt_tensor *bh, int64_t *H) {
  MT_TRY(mt_check_tensor(ig, op, "igates"));
  if (ig->_dtype != MT_FLOAT32 && ig->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: expected igates of dtype float32 or float64, but got %s", op,
                    mt_type_title(ig->_dtype));
  if (ig->_ndim != 2 || ig->_sizes[1] % k != 0)
    return mt_error(MT_ESHAPE, "%s: expected igates of size [batch, %d * hidden_size], but got %s", op, k,
                    MT_SHAPE(ig));
  int64_t B = ig->_sizes[0];
  *H = ig->_sizes[1] / k;
  MT_TRY(check_operand(op, "hgates", hg, ig, 2, B, k * *H));
  MT_TRY(check_operand(op, sname, state, ig, 2, B, *H));
  if (bi) MT_TRY(check_operand(op, "b_ih", bi, ig, 1, 0, k * *H));
  if (bh) MT_TRY(check_operand(op, "b_hh", bh, ig, 1, 0, k * *H));
  return MT_OK;
}

static void release_all(mt_tensor **ts, int n) {
  for (int i = 0; i < n; i++) mt_tensor_release(ts[i]);
}

/* ---------------------------------------------------------------- LSTM */
mt_status mt_lstm_cell_forward(mt_tensor *igates, mt_tensor *hgates, mt_tensor *cx, mt_tensor *b_ih, mt_tensor *b_hh,
                               mt_tensor **hy, mt_tensor **cy, mt_tensor **ws) {
  const char *op = "lstm_cell_pointwise";
  int64_t H;
  MT_TRY(check_cell(op, 4, igates, hgates, cx, "cx", b_ih, b_hh, &H));
  MT_TRY(mt_check_kernel(MT_OP_LSTM_CELL_POINTWISE, igates));
  /* in: ig, hg, cx, bi, bh (rows with unit stride); out: hy, cy, ws */
  mt_tensor *in[5] = {0}, *out[3] = {0};
  mt_tensor *args[5] = {igates, hgates, cx, b_ih, b_hh};
  mt_status s = MT_OK;
  for (int i = 0; i < 5 && s == MT_OK; i++) s = rowwise(args[i], &in[i]);
  mt_device dev = mt_device_of(igates);
  int64_t sz[2] = {igates->_sizes[0], H}, wsz[2] = {igates->_sizes[0], 4 * H};
  if (s == MT_OK) s = mt_new(dev, sz, 2, igates->_dtype, op, &out[0]);
  if (s == MT_OK) s = mt_new(dev, sz, 2, igates->_dtype, op, &out[1]);
  if (s == MT_OK) s = mt_new(dev, wsz, 2, igates->_dtype, op, &out[2]);
  if (s == MT_OK) s = mt_kernels_of(igates)->lstm_cell(out[0], out[1], out[2], in[0], in[1], in[2], in[3], in[4]);
  release_all(in, 5);
  if (s) { release_all(out, 3); return s; }
  mt_give(out[0], hy);
  mt_give(out[1], cy);
  return mt_give(out[2], ws);
}

/* issue 25: bfloat16 / float16 gates and states run the fused ops in float32 and round each result
 * once: the operands converted with mt_to (autograd follows the conversions, so the backward is
 * float32's), NULL operands left NULL */
#define LOWP_MAX 5
static mt_status lowp_in(mt_tensor **in, int n, mt_tensor **f32) {
  for (int i = 0; i < n; i++) f32[i] = NULL;
  for (int i = 0; i < n; i++) {
    if (!in[i]) continue;
    mt_status s = mt_to(in[i], MT_FLOAT32, NULL, 0, &f32[i]);
    if (s) return s;
  }
  return MT_OK;
}
static void lowp_release(mt_tensor **t, int n) {
  for (int i = 0; i < n; i++) mt_tensor_release(t[i]);
}
/* out[i] (float32, consumed) -> *res[i] in dtype dt */
static mt_status lowp_out(mt_tensor **out, int n, int dt, mt_tensor ***res) {
  mt_status s = MT_OK;
  for (int i = 0; i < n; i++) {
    if (!s && res[i]) s = mt_to(out[i], dt, NULL, 0, res[i]);
    mt_tensor_release(out[i]);
  }
  return s;
}

mt_status mt_lstm_cell_pointwise(mt_tensor *igates, mt_tensor *hgates, mt_tensor *cx, mt_tensor *b_ih,
                                 mt_tensor *b_hh, mt_tensor **hy, mt_tensor **cy) {
  if (igates && mt_is_reduced_float(igates->_dtype)) {
    mt_tensor *in[5] = {igates, hgates, cx, b_ih, b_hh}, *f[5], *out[2] = {NULL, NULL};
    mt_tensor **res[2] = {hy, cy};
    mt_status s = lowp_in(in, 5, f);
    if (!s) s = mt_lstm_cell_pointwise(f[0], f[1], f[2], f[3], f[4], &out[0], &out[1]);
    lowp_release(f, 5);
    if (s) return s;
    return lowp_out(out, 2, igates->_dtype, res);
  }
  if ((mt_records2(igates, hgates) || mt_records2(cx, b_ih) || mt_records(b_hh)) && mt_autograd.lstm_cell_pointwise)
    return mt_autograd.lstm_cell_pointwise(igates, hgates, cx, b_ih, b_hh, hy, cy);
  return mt_lstm_cell_forward(igates, hgates, cx, b_ih, b_hh, hy, cy, NULL);
}

mt_status mt_lstm_cell_backward(mt_tensor *dhy, mt_tensor *dcy, mt_tensor *cx, mt_tensor *cy, mt_tensor *ws,
                                mt_tensor **dgates, mt_tensor **dcx) {
  const char *op = "lstm_cell_pointwise backward";
  mt_tensor *in[5] = {0}, *out[2] = {0};
  mt_tensor *args[5] = {dhy, dcy, cx, cy, ws};
  mt_status s = MT_OK;
  for (int i = 0; i < 5 && s == MT_OK; i++) s = args[i] && args[i]->_dtype != ws->_dtype
                                                    ? mt_error(MT_EDTYPE, "%s: gradient of dtype %s for %s", op,
                                                               mt_type_title(args[i]->_dtype),
                                                               mt_type_title(ws->_dtype))
                                                    : rowwise(args[i], &in[i]);
  if (s == MT_OK) s = mt_new_like(ws, ws->_dtype, op, &out[0]);
  if (s == MT_OK) s = mt_new_like(cx, cx->_dtype, op, &out[1]);
  if (s == MT_OK) s = mt_kernels_of(ws)->lstm_cell_backward(out[0], out[1], in[0], in[1], in[2], in[3], in[4]);
  release_all(in, 5);
  if (s) { release_all(out, 2); return s; }
  mt_give(out[0], dgates);
  return mt_give(out[1], dcx);
}

/* ---------------------------------------------------------------- GRU */
mt_status mt_gru_cell_forward(mt_tensor *igates, mt_tensor *hgates, mt_tensor *hx, mt_tensor *b_ih, mt_tensor *b_hh,
                              mt_tensor **hy, mt_tensor **ws) {
  const char *op = "gru_cell_pointwise";
  int64_t H;
  MT_TRY(check_cell(op, 3, igates, hgates, hx, "hx", b_ih, b_hh, &H));
  MT_TRY(mt_check_kernel(MT_OP_GRU_CELL_POINTWISE, igates));
  mt_tensor *in[5] = {0}, *out[2] = {0};
  mt_tensor *args[5] = {igates, hgates, hx, b_ih, b_hh};
  mt_status s = MT_OK;
  for (int i = 0; i < 5 && s == MT_OK; i++) s = rowwise(args[i], &in[i]);
  mt_device dev = mt_device_of(igates);
  int64_t sz[2] = {igates->_sizes[0], H}, wsz[2] = {igates->_sizes[0], 4 * H};
  if (s == MT_OK) s = mt_new(dev, sz, 2, igates->_dtype, op, &out[0]);
  if (s == MT_OK) s = mt_new(dev, wsz, 2, igates->_dtype, op, &out[1]);
  if (s == MT_OK) s = mt_kernels_of(igates)->gru_cell(out[0], out[1], in[0], in[1], in[2], in[3], in[4]);
  release_all(in, 5);
  if (s) { release_all(out, 2); return s; }
  mt_give(out[0], hy);
  return mt_give(out[1], ws);
}

mt_status mt_gru_cell_pointwise(mt_tensor *igates, mt_tensor *hgates, mt_tensor *hx, mt_tensor *b_ih, mt_tensor *b_hh,
                                mt_tensor **hy) {
  if (igates && mt_is_reduced_float(igates->_dtype)) {
    mt_tensor *in[5] = {igates, hgates, hx, b_ih, b_hh}, *f[5], *out[1] = {NULL};
    mt_tensor **res[1] = {hy};
    mt_status s = lowp_in(in, 5, f);
    if (!s) s = mt_gru_cell_pointwise(f[0], f[1], f[2], f[3], f[4], &out[0]);
    lowp_release(f, 5);
    if (s) return s;
    return lowp_out(out, 1, igates->_dtype, res);
  }
  if ((mt_records2(igates, hgates) || mt_records2(hx, b_ih) || mt_records(b_hh)) && mt_autograd.gru_cell_pointwise)
    return mt_autograd.gru_cell_pointwise(igates, hgates, hx, b_ih, b_hh, hy);
  return mt_gru_cell_forward(igates, hgates, hx, b_ih, b_hh, hy, NULL);
}

mt_status mt_gru_cell_backward(mt_tensor *dhy, mt_tensor *hx, mt_tensor *ws, mt_tensor **dig, mt_tensor **dhg,
                               mt_tensor **dhx) {
  const char *op = "gru_cell_pointwise backward";
  if (dhy->_dtype != ws->_dtype)
    return mt_error(MT_EDTYPE, "%s: gradient of dtype %s for %s", op, mt_type_title(dhy->_dtype),
                    mt_type_title(ws->_dtype));
  mt_tensor *in[3] = {0}, *out[3] = {0};
  mt_tensor *args[3] = {dhy, hx, ws};
  mt_status s = MT_OK;
  for (int i = 0; i < 3 && s == MT_OK; i++) s = rowwise(args[i], &in[i]);
  mt_device dev = mt_device_of(ws);
  int64_t B = hx->_sizes[0], H = hx->_sizes[1], gsz[2] = {B, 3 * H};
  if (s == MT_OK) s = mt_new(dev, gsz, 2, ws->_dtype, op, &out[0]);
  if (s == MT_OK) s = mt_new(dev, gsz, 2, ws->_dtype, op, &out[1]);
  if (s == MT_OK) s = mt_new_like(hx, hx->_dtype, op, &out[2]);
  if (s == MT_OK) s = mt_kernels_of(ws)->gru_cell_backward(out[0], out[1], out[2], in[0], in[1], in[2]);
  release_all(in, 3);
  if (s) { release_all(out, 3); return s; }
  mt_give(out[0], dig);
  mt_give(out[1], dhg);
  return mt_give(out[2], dhx);
}

/* ---------------------------------------------------------------- unbind */
static mt_status unbind_impl(mt_tensor *t, int dim, mt_tensor **out) {
  MT_TRY(mt_check_tensor(t, "unbind", "input"));
  if (t->_ndim == 0) return mt_error(MT_EINVAL, "unbind: Dimension specified as 0 but tensor has no dimensions");
  int d;
  MT_TRY(mt_wrap_dim(dim, t->_ndim, "unbind", &d));
  int64_t n = t->_sizes[d];
  for (int64_t i = 0; i < n; i++) {
    mt_status s = mt_select(t, d, i, &out[i]); /* not recording: the wrapper runs this with grad mode off */
    if (s) {
      for (int64_t j = 0; j < i; j++) mt_tensor_release(out[j]), out[j] = NULL;
      return s;
    }
  }
  return MT_OK;
}

mt_status mt_unbind(mt_tensor *t, int dim, mt_tensor **out) {
  if (mt_records(t) && mt_autograd.unbind) return mt_autograd.unbind(t, dim, out);
  return unbind_impl(t, dim, out);
}

/* ---------------------------------------------------------------- the LSTM's recurrence over a sequence */
/* igates [T, B, 4H] (rows with unit stride), h0 and c0 [B, H], w_hh [4H, H], all of one float dtype
 * and device; *H the hidden size */
static mt_status check_layer(const char *op, mt_tensor *ig, mt_tensor *h0, mt_tensor *c0, mt_tensor *w, int64_t *H) {
  MT_TRY(mt_check_tensor(ig, op, "igates"));
  if (ig->_dtype != MT_FLOAT32 && ig->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: expected igates of dtype float32 or float64, but got %s", op,
                    mt_type_title(ig->_dtype));
  if (ig->_ndim != 3 || ig->_sizes[2] % 4 != 0)
    return mt_error(MT_ESHAPE, "%s: expected igates of size [seq_len, batch, 4 * hidden_size], but got %s", op,
                    MT_SHAPE(ig));
  int64_t B = ig->_sizes[1];
  *H = ig->_sizes[2] / 4;
  MT_TRY(check_operand(op, "h0", h0, ig, 2, B, *H));
  MT_TRY(check_operand(op, "c0", c0, ig, 2, B, *H));
  MT_TRY(check_operand(op, "w_hh", w, ig, 2, 4 * *H, *H));
  return MT_OK;
}

mt_status mt_lstm_layer_forward(mt_tensor *igates, mt_tensor *h0, mt_tensor *c0, mt_tensor *w_hh, int reverse,
                                mt_tensor **hs, mt_tensor **cs, mt_tensor **ws) {
  const char *op = "lstm_layer";
  int64_t H = 0;
  MT_TRY(check_layer(op, igates, h0, c0, w_hh, &H));
  MT_TRY(mt_check_kernel(MT_OP_LSTM_CELL_POINTWISE, igates));
  int64_t T = igates->_sizes[0], B = igates->_sizes[1];
  mt_device dev = mt_device_of(igates);
  int64_t sz[3] = {T, B, H}, wsz[3] = {T, B, 4 * H};
  /* out: hs, cs, ws; per step: the views of step t and the hidden projection */
  mt_tensor *out[3] = {0}, *in[3] = {0}, *wt = NULL, *hg = NULL;
  mt_status s = rowwise(igates, &in[0]);
  if (s == MT_OK) s = rowwise(h0, &in[1]);
  if (s == MT_OK) s = rowwise(c0, &in[2]);
  if (s == MT_OK) s = mt_new(dev, sz, 3, igates->_dtype, op, &out[0]);
  if (s == MT_OK) s = mt_new(dev, sz, 3, igates->_dtype, op, &out[1]);
  if (s == MT_OK) s = mt_new(dev, wsz, 3, igates->_dtype, op, &out[2]);
  if (s == MT_OK) { /* w_hh^T made contiguous once: every step's product then has both operands as they lie */
    mt_tensor *v = NULL;
    s = mt_transpose(w_hh, 0, 1, &v);
    if (s == MT_OK) s = mt_contiguous(v, &wt);
    mt_tensor_release(v);
  }
  if (s == MT_OK) s = mt_new(dev, wsz + 1, 2, igates->_dtype, op, &hg);
  mt_tensor *h = in[1], *c = in[2];
  for (int64_t k = 0; k < T && s == MT_OK; k++) {
    int64_t t = reverse ? T - 1 - k : k;
    mt_tensor *ig = NULL, *hy = NULL, *cy = NULL, *w = NULL;
    s = mt_mm(h, wt, hg, NULL); /* hg = h @ w_hh^T, into the buffer every step reuses */
    if (s == MT_OK) s = mt_select(in[0], 0, t, &ig);
    if (s == MT_OK) s = mt_select(out[0], 0, t, &hy);
    if (s == MT_OK) s = mt_select(out[1], 0, t, &cy);
    if (s == MT_OK) s = mt_select(out[2], 0, t, &w);
    if (s == MT_OK) s = mt_kernels_of(igates)->lstm_cell(hy, cy, w, ig, hg, c, NULL, NULL);
    mt_tensor_release(ig);
    mt_tensor_release(w);
    if (h != in[1]) mt_tensor_release(h);
    if (c != in[2]) mt_tensor_release(c);
    h = hy, c = cy;
  }
  if (h != in[1]) mt_tensor_release(h);
  if (c != in[2]) mt_tensor_release(c);
  mt_tensor_release(wt);
  mt_tensor_release(hg);
  release_all(in, 3);
  if (s) { release_all(out, 3); return s; }
  mt_give(out[0], hs);
  mt_give(out[1], cs);
  if (ws) return mt_give(out[2], ws);
  mt_tensor_release(out[2]);
  return MT_OK;
}

mt_status mt_lstm_layer(mt_tensor *igates, mt_tensor *h0, mt_tensor *c0, mt_tensor *w_hh, int reverse, mt_tensor **hs,
                        mt_tensor **cs) {
  if (igates && mt_is_reduced_float(igates->_dtype)) {
    mt_tensor *in[4] = {igates, h0, c0, w_hh}, *f[4], *out[2] = {NULL, NULL};
    mt_tensor **res[2] = {hs, cs};
    mt_status s = lowp_in(in, 4, f);
    if (!s) s = mt_lstm_layer(f[0], f[1], f[2], f[3], reverse, &out[0], &out[1]);
    lowp_release(f, 4);
    if (s) return s;
    return lowp_out(out, 2, igates->_dtype, res);
  }
  if ((mt_records2(igates, h0) || mt_records2(c0, w_hh)) && mt_autograd.lstm_layer)
    return mt_autograd.lstm_layer(igates, h0, c0, w_hh, reverse, hs, cs);
  return mt_lstm_layer_forward(igates, h0, c0, w_hh, reverse, hs, cs, NULL);
}
