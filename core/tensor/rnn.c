/* rnn.c -- the CPU kernels of one recurrent time step's gate arithmetic (core/ops/rnn.c): the
 * LSTM's and the GRU's, forward and backward, each one pass over the rows. The products around
 * them (the input projection of every step at once, the hidden projection of each step) are GEMMs
 * of their own; these kernels add the two projections and the biases, apply the gates' sigmoid and
 * tanh (float32: eight lanes at a time through vmath.c) and combine them, keeping the activated
 * gates in `ws` for the backward. Operands are 2-D with unit stride along a row (rows may be apart,
 * as the time steps of a batch_first projection are); results and ws are contiguous. */
#include "cpu.h"

#include <math.h>

/* ---------------------------------------------------------------- the activations over a row */
static void sig_f32_scalar(float *out, const float *in, int64_t n) {
  for (int64_t j = 0; j < n; j++) out[j] = 1.0f / (1.0f + expf(-in[j]));
}
static void tanh_f32_scalar(float *out, const float *in, int64_t n) {
  for (int64_t j = 0; j < n; j++) out[j] = tanhf(in[j]);
}
static void sig_f64(double *out, const double *in, int64_t n) {
  for (int64_t j = 0; j < n; j++) out[j] = 1.0 / (1.0 + exp(-in[j]));
}
static void tanh_f64(double *out, const double *in, int64_t n) {
  for (int64_t j = 0; j < n; j++) out[j] = tanh(in[j]);
}

typedef struct acts_f32 {
  mt_vmath_fn sig, tanh;
} acts_f32;
static acts_f32 f32_acts(void) {
  acts_f32 a = {mt_vmath_f32(MT_OP_SIGMOID), mt_vmath_f32(MT_OP_TANH)};
  if (!a.sig) a.sig = sig_f32_scalar;
  if (!a.tanh) a.tanh = tanh_f32_scalar;
  return a;
}

/* row r of a 2-D operand (unit stride along the row) */
#define ROW(T, t, r) ((const T *)(t)->_data + (r) * (t)->_strides[0])
#define WROW(T, t, r) ((T *)(t)->_data + (r) * (t)->_strides[0])
#define VEC(T, t) ((t) ? (const T *)(t)->_data : NULL)

/* ---------------------------------------------------------------- LSTM */
#define LSTM_FORWARD(T, SIG, TANH)                                                                             \
  do {                                                                                                         \
    int64_t B = hy->_sizes[0], H = hy->_sizes[1];                                                              \
    const T *b1 = VEC(T, bi), *b2 = VEC(T, bh);                                                                \
    for (int64_t r = 0; r < B; r++) {                                                                          \
      const T *a = ROW(T, ig, r), *b = ROW(T, hg, r), *c0 = ROW(T, cx, r);                                     \
      T *w = WROW(T, ws, r), *h = WROW(T, hy, r), *c = WROW(T, cy, r);                                         \
      if (b1 && b2)                                                                                            \
        for (int64_t j = 0; j < 4 * H; j++) w[j] = b[j] + b2[j] + (a[j] + b1[j]);                              \
      else if (b1 || b2) {                                                                                     \
        const T *bb = b1 ? b1 : b2;                                                                            \
        for (int64_t j = 0; j < 4 * H; j++) w[j] = a[j] + b[j] + bb[j];                                        \
      } else                                                                                                   \
        for (int64_t j = 0; j < 4 * H; j++) w[j] = a[j] + b[j];                                                \
      SIG(w, w, 2 * H);                                                                                        \
      TANH(w + 2 * H, w + 2 * H, H);                                                                           \
      SIG(w + 3 * H, w + 3 * H, H);                                                                            \
      for (int64_t j = 0; j < H; j++) c[j] = w[H + j] * c0[j] + w[j] * w[2 * H + j];                           \
      TANH(h, c, H);                                                                                           \
      for (int64_t j = 0; j < H; j++) h[j] *= w[3 * H + j];                                                    \
    }                                                                                                          \
  } while (0)

mt_status mt_cpu_lstm_cell(mt_tensor *hy, mt_tensor *cy, mt_tensor *ws, const mt_tensor *ig, const mt_tensor *hg,
                           const mt_tensor *cx, const mt_tensor *bi, const mt_tensor *bh) {
  if (hy->_dtype == MT_FLOAT32) {
    acts_f32 A = f32_acts();
    LSTM_FORWARD(float, A.sig, A.tanh);
  } else {
    LSTM_FORWARD(double, sig_f64, tanh_f64);
  }
  return MT_OK;
}

/* dgates [B, 4H] (the gradient of the gates before their activations, the same for igates, hgates
 * and the biases), dcx [B, H]; tanh(cy) goes through dcx's row first */
#define LSTM_BACKWARD(T, TANH)                                                                                 \
  do {                                                                                                         \
    int64_t B = dcx->_sizes[0], H = dcx->_sizes[1];                                                            \
    for (int64_t r = 0; r < B; r++) {                                                                          \
      const T *w = ROW(T, ws, r), *c = ROW(T, cy, r), *c0 = ROW(T, cx, r);                                     \
      const T *gh = dhy ? ROW(T, dhy, r) : NULL, *gc = dcy ? ROW(T, dcy, r) : NULL;                            \
      T *dg = WROW(T, dgates, r), *d0 = WROW(T, dcx, r);                                                       \
      TANH(d0, c, H);                                                                                          \
      for (int64_t j = 0; j < H; j++) {                                                                        \
        T tc = d0[j], i = w[j], f = w[H + j], g = w[2 * H + j], o = w[3 * H + j];                              \
        T h_ = gh ? gh[j] : 0, c_ = gc ? gc[j] : 0;                                                            \
        T dc = c_ + h_ * o * (1 - tc * tc);                                                                    \
        dg[j] = dc * g * i * (1 - i);                                                                          \
        dg[H + j] = dc * c0[j] * f * (1 - f);                                                                  \
        dg[2 * H + j] = dc * i * (1 - g * g);                                                                  \
        dg[3 * H + j] = h_ * tc * o * (1 - o);                                                                 \
        d0[j] = dc * f;                                                                                        \
      }                                                                                                        \
    }                                                                                                          \
  } while (0)

mt_status mt_cpu_lstm_cell_backward(mt_tensor *dgates, mt_tensor *dcx, const mt_tensor *dhy, const mt_tensor *dcy,
                                    const mt_tensor *cx, const mt_tensor *cy, const mt_tensor *ws) {
  if (dcx->_dtype == MT_FLOAT32) {
    acts_f32 A = f32_acts();
    LSTM_BACKWARD(float, A.tanh);
  } else {
    LSTM_BACKWARD(double, tanh_f64);
  }
  return MT_OK;
}

/* ---------------------------------------------------------------- GRU */
/* ws [B, 4H]: r, z, n (activated) and h_n (the hidden projection's new-gate part with its bias) */
#define GRU_FORWARD(T, SIG, TANH)                                                                              \
  do {                                                                                                         \
    int64_t B = hy->_sizes[0], H = hy->_sizes[1];                                                              \
    const T *b1 = VEC(T, bi), *b2 = VEC(T, bh);                                                                \
    for (int64_t r = 0; r < B; r++) {                                                                          \
      const T *a = ROW(T, ig, r), *b = ROW(T, hg, r), *h0 = ROW(T, hx, r);                                     \
      T *w = WROW(T, ws, r), *h = WROW(T, hy, r);                                                              \
      for (int64_t j = 0; j < 2 * H; j++) w[j] = (b[j] + (b2 ? b2[j] : 0)) + (a[j] + (b1 ? b1[j] : 0));        \
      SIG(w, w, 2 * H);                                                                                        \
      for (int64_t j = 0; j < H; j++) {                                                                        \
        T hn = b[2 * H + j] + (b2 ? b2[2 * H + j] : 0);                                                        \
        w[3 * H + j] = hn;                                                                                     \
        w[2 * H + j] = (a[2 * H + j] + (b1 ? b1[2 * H + j] : 0)) + hn * w[j];                                  \
      }                                                                                                        \
      TANH(w + 2 * H, w + 2 * H, H);                                                                           \
      for (int64_t j = 0; j < H; j++) h[j] = (h0[j] - w[2 * H + j]) * w[H + j] + w[2 * H + j];                 \
    }                                                                                                          \
  } while (0)

mt_status mt_cpu_gru_cell(mt_tensor *hy, mt_tensor *ws, const mt_tensor *ig, const mt_tensor *hg, const mt_tensor *hx,
                          const mt_tensor *bi, const mt_tensor *bh) {
  if (hy->_dtype == MT_FLOAT32) {
    acts_f32 A = f32_acts();
    GRU_FORWARD(float, A.sig, A.tanh);
  } else {
    GRU_FORWARD(double, sig_f64, tanh_f64);
  }
  return MT_OK;
}

#define GRU_BACKWARD(T)                                                                                        \
  do {                                                                                                         \
    int64_t B = dhx->_sizes[0], H = dhx->_sizes[1];                                                            \
    for (int64_t r = 0; r < B; r++) {                                                                          \
      const T *w = ROW(T, ws, r), *h0 = ROW(T, hx, r), *g = ROW(T, dhy, r);                                    \
      T *di = WROW(T, dig, r), *dh = WROW(T, dhg, r), *d0 = WROW(T, dhx, r);                                   \
      for (int64_t j = 0; j < H; j++) {                                                                        \
        T rr = w[j], z = w[H + j], n = w[2 * H + j], hn = w[3 * H + j], gj = g[j];                             \
        T dz = gj * (h0[j] - n) * z * (1 - z);                                                                 \
        T dn = gj * (1 - z) * (1 - n * n);                                                                     \
        T dr = dn * hn * rr * (1 - rr);                                                                        \
        di[j] = dr, di[H + j] = dz, di[2 * H + j] = dn;                                                        \
        dh[j] = dr, dh[H + j] = dz, dh[2 * H + j] = dn * rr;                                                   \
        d0[j] = gj * z;                                                                                        \
      }                                                                                                        \
    }                                                                                                          \
  } while (0)

mt_status mt_cpu_gru_cell_backward(mt_tensor *dig, mt_tensor *dhg, mt_tensor *dhx, const mt_tensor *dhy,
                                   const mt_tensor *hx, const mt_tensor *ws) {
  if (dhx->_dtype == MT_FLOAT32) GRU_BACKWARD(float);
  else GRU_BACKWARD(double);
  return MT_OK;
}
