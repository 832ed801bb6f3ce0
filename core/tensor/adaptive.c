/* adaptive.c -- the fused RMSprop and Adagrad updates (optim.RMSprop, optim.Adagrad): one call per
 * parameter does what PyTorch 1.13's _single_tensor_rmsprop / _single_tensor_adagrad do with four
 * to eight tensor ops, in the same order of float operations and in the parameter's dtype:
 *
 *   g = maximize ? -grad : grad;  weight_decay != 0:  g = g + weight_decay * param
 *   RMSprop:
 *     square_avg = square_avg * alpha + (1 - alpha) * g * g
 *     centered:  grad_avg = grad_avg * alpha + (1 - alpha) * g
 *                avg = sqrt(square_avg + (-1) * grad_avg * grad_avg) + eps
 *     else:      avg = sqrt(square_avg) + eps
 *     momentum > 0:  buf = buf * momentum + 1 * g / avg;  param = param + (-lr) * buf
 *     else:          param = param + (-lr) * g / avg
 *   Adagrad (clr = lr / (1 + (step - 1) * lr_decay), from the front door):
 *     sum = sum + 1 * g * g;  param = param + (-clr) * g / (sqrt(sum) + eps)
 *
 * The front doors (core/optim/adaptive.c) check the operands and bump the versions. Each
 * combination of the flags gets its own loop (an always-inlined body called with constant flags). */
#include "cpu.h"
#include <math.h>

#define SQRT_(x) _Generic((x), float : sqrtf, default : sqrt)(x)

/* ------------------------------------------------------------------ RMSprop */
typedef struct rms_job {
  char *p, *g, *s, *a, *b; /* first elements (contiguous path); a: grad_avg, b: momentum buffer */
  double sign, wd, alpha, oma, eps, mom, nlr;
  int wd_on, centered, mom_on;
} rms_job;

#define RMS_BODY(T)                                                                                                    \
  static inline __attribute__((always_inline)) void rms_body_##T(                                                      \
      T *restrict p, const T *restrict g, T *restrict s, T *restrict a, T *restrict b, int64_t n, int64_t sp,          \
      int64_t sg, int64_t ss, int64_t sa, int64_t sb, const rms_job *j, const int wd_on, const int centered,           \
      const int mom_on) {                                                                                              \
    const T sign = (T)j->sign, wd = (T)j->wd, alpha = (T)j->alpha, oma = (T)j->oma, eps = (T)j->eps;                   \
    const T mom = (T)j->mom, nlr = (T)j->nlr;                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                                                  \
      T gi = sign * g[i * sg];                                                                                         \
      T pi = p[i * sp];                                                                                                \
      if (wd_on)                                                                                                       \
        gi = gi + wd * pi;                                                                                             \
      T si = s[i * ss] * alpha;                                                                                        \
      si = si + oma * gi * gi;                                                                                         \
      s[i * ss] = si;                                                                                                  \
      T avg;                                                                                                           \
      if (centered) {                                                                                                  \
        T ai = a[i * sa] * alpha;                                                                                      \
        ai = ai + oma * gi;                                                                                            \
        a[i * sa] = ai;                                                                                                \
        avg = si + (T)-1 * ai * ai;                                                                                    \
        avg = SQRT_(avg);                                                                                              \
      } else {                                                                                                         \
        avg = SQRT_(si);                                                                                               \
      }                                                                                                                \
      avg = avg + eps;                                                                                                 \
      if (mom_on) {                                                                                                    \
        T bi = b[i * sb] * mom;                                                                                        \
        bi = bi + (T)1 * gi / avg;                                                                                     \
        b[i * sb] = bi;                                                                                                \
        p[i * sp] = pi + nlr * bi;                                                                                     \
      } else {                                                                                                         \
        p[i * sp] = pi + nlr * gi / avg;                                                                               \
      }                                                                                                                \
    }                                                                                                                  \
  }
RMS_BODY(float)
RMS_BODY(double)

#define RMS_DISPATCH(j, CALL)                                                                                          \
  switch ((j)->wd_on * 4 + (j)->centered * 2 + (j)->mom_on) {                                                          \
  case 0:                                                                                                              \
    CALL(0, 0, 0);                                                                                                     \
    break;                                                                                                             \
  case 1:                                                                                                              \
    CALL(0, 0, 1);                                                                                                     \
    break;                                                                                                             \
  case 2:                                                                                                              \
    CALL(0, 1, 0);                                                                                                     \
    break;                                                                                                             \
  case 3:                                                                                                              \
    CALL(0, 1, 1);                                                                                                     \
    break;                                                                                                             \
  case 4:                                                                                                              \
    CALL(1, 0, 0);                                                                                                     \
    break;                                                                                                             \
  case 5:                                                                                                              \
    CALL(1, 0, 1);                                                                                                     \
    break;                                                                                                             \
  case 6:                                                                                                              \
    CALL(1, 1, 0);                                                                                                     \
    break;                                                                                                             \
  default:                                                                                                             \
    CALL(1, 1, 1);                                                                                                     \
    break;                                                                                                             \
  }

#define RMS_CONTIG(T)                                                                                                  \
  static void rms_contig_##T(void *ctx, int64_t lo, int64_t hi) {                                                      \
    const rms_job *j = ctx;                                                                                            \
    T *p = (T *)j->p + lo, *s = (T *)j->s + lo;                                                                        \
    const T *g = (const T *)j->g + lo;                                                                                 \
    T *a = j->a ? (T *)j->a + lo : NULL, *b = j->b ? (T *)j->b + lo : NULL;                                            \
    int64_t n = hi - lo;                                                                                               \
    RMS_DISPATCH(j, RMS_CALL_CONTIG_##T)                                                                               \
  }
#define RMS_CALL_CONTIG_float(w, c, m) rms_body_float(p, g, s, a, b, n, 1, 1, 1, 1, 1, j, w, c, m)
#define RMS_CALL_CONTIG_double(w, c, m) rms_body_double(p, g, s, a, b, n, 1, 1, 1, 1, 1, j, w, c, m)
RMS_CONTIG(float)
RMS_CONTIG(double)

/* strided: operands p, g, s, then a (centered) and b (momentum) when present */
#define RMS_STRIDED(T)                                                                                                 \
  static void rms_strided_##T(void *ctx, char **ptrs, const int64_t *strides, int64_t n) {                             \
    const rms_job *j = ctx;                                                                                            \
    const int64_t z = (int64_t)sizeof(T);                                                                              \
    int k = 3;                                                                                                         \
    T *p = (T *)ptrs[0], *s = (T *)ptrs[2], *a = NULL, *b = NULL;                                                      \
    const T *g = (const T *)ptrs[1];                                                                                   \
    int64_t sp = strides[0] / z, sg = strides[1] / z, ss = strides[2] / z, sa = 1, sb = 1;                             \
    if (j->centered)                                                                                                   \
      a = (T *)ptrs[k], sa = strides[k] / z, k++;                                                                      \
    if (j->mom_on)                                                                                                     \
      b = (T *)ptrs[k], sb = strides[k] / z, k++;                                                                      \
    if (sp == 1 && sg == 1 && ss == 1 && sa == 1 && sb == 1) {                                                         \
      RMS_DISPATCH(j, RMS_CALL_CONTIG_##T)                                                                             \
    } else {                                                                                                           \
      RMS_DISPATCH(j, RMS_CALL_STRIDED_##T)                                                                            \
    }                                                                                                                  \
  }
#define RMS_CALL_STRIDED_float(w, c, m) rms_body_float(p, g, s, a, b, n, sp, sg, ss, sa, sb, j, w, c, m)
#define RMS_CALL_STRIDED_double(w, c, m) rms_body_double(p, g, s, a, b, n, sp, sg, ss, sa, sb, j, w, c, m)
RMS_STRIDED(float)
RMS_STRIDED(double)

mt_status mt_cpu_rmsprop_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *square_avg, mt_tensor *grad_avg,
                              mt_tensor *buf, const mt_rmsprop_settings *st) {
  rms_job j = {
      .sign = st->maximize ? -1.0 : 1.0,
      .wd = st->weight_decay,
      .alpha = st->alpha,
      .oma = 1 - st->alpha,
      .eps = st->eps,
      .mom = st->momentum,
      .nlr = -st->lr,
      .wd_on = st->weight_decay != 0,
      .centered = grad_avg != NULL,
      .mom_on = buf != NULL,
  };
  int64_t n = param->_numel;
  if (n == 0)
    return MT_OK;
  bool f32 = param->_dtype == MT_FLOAT32;
  int flags = param->_flags & grad->_flags & square_avg->_flags & (grad_avg ? grad_avg->_flags : MT_TENSOR_CONTIGUOUS) &
              (buf ? buf->_flags : MT_TENSOR_CONTIGUOUS);
  if (flags & MT_TENSOR_CONTIGUOUS) {
    j.p = param->_data, j.g = grad->_data, j.s = square_avg->_data;
    j.a = grad_avg ? grad_avg->_data : NULL, j.b = buf ? buf->_data : NULL;
    mt_range_fn fn = f32 ? rms_contig_float : rms_contig_double;
    if (n >= 2 * MT_GRAIN)
      mt_parallel_for(n, MT_GRAIN, fn, &j);
    else
      fn(&j, 0, n);
    return MT_OK;
  }
  const mt_tensor *ops[5] = {param, grad, square_avg};
  int nops = 3;
  if (grad_avg)
    ops[nops++] = grad_avg;
  if (buf)
    ops[nops++] = buf;
  mt_iter it;
  mt_iter_init(&it, ops, nops, param->_sizes, param->_ndim);
  mt_iter_run(&it, f32 ? rms_strided_float : rms_strided_double, &j, MT_GRAIN);
  return MT_OK;
}

/* ------------------------------------------------------------------ Adagrad */
typedef struct ada_job {
  char *p, *g, *s;
  double sign, wd, eps, nclr;
  int wd_on;
} ada_job;

#define ADA_BODY(T)                                                                                                    \
  static inline __attribute__((always_inline)) void ada_body_##T(T *restrict p, const T *restrict g, T *restrict s,    \
                                                                 int64_t n, int64_t sp, int64_t sg, int64_t ss,        \
                                                                 const ada_job *j, const int wd_on) {                  \
    const T sign = (T)j->sign, wd = (T)j->wd, eps = (T)j->eps, nclr = (T)j->nclr;                                      \
    for (int64_t i = 0; i < n; i++) {                                                                                  \
      T gi = sign * g[i * sg];                                                                                         \
      T pi = p[i * sp];                                                                                                \
      if (wd_on)                                                                                                       \
        gi = gi + wd * pi;                                                                                             \
      T si = s[i * ss] + (T)1 * gi * gi;                                                                               \
      s[i * ss] = si;                                                                                                  \
      T std = SQRT_(si) + eps;                                                                                         \
      p[i * sp] = pi + nclr * gi / std;                                                                                \
    }                                                                                                                  \
  }
ADA_BODY(float)
ADA_BODY(double)

#define ADA_CONTIG(T)                                                                                                  \
  static void ada_contig_##T(void *ctx, int64_t lo, int64_t hi) {                                                      \
    const ada_job *j = ctx;                                                                                            \
    T *p = (T *)j->p + lo, *s = (T *)j->s + lo;                                                                        \
    const T *g = (const T *)j->g + lo;                                                                                 \
    if (j->wd_on)                                                                                                      \
      ada_body_##T(p, g, s, hi - lo, 1, 1, 1, j, 1);                                                                   \
    else                                                                                                               \
      ada_body_##T(p, g, s, hi - lo, 1, 1, 1, j, 0);                                                                   \
  }
ADA_CONTIG(float)
ADA_CONTIG(double)

#define ADA_STRIDED(T)                                                                                                 \
  static void ada_strided_##T(void *ctx, char **ptrs, const int64_t *strides, int64_t n) {                             \
    const ada_job *j = ctx;                                                                                            \
    const int64_t z = (int64_t)sizeof(T);                                                                              \
    T *p = (T *)ptrs[0], *s = (T *)ptrs[2];                                                                            \
    const T *g = (const T *)ptrs[1];                                                                                   \
    int64_t sp = strides[0] / z, sg = strides[1] / z, ss = strides[2] / z;                                             \
    if (j->wd_on)                                                                                                      \
      ada_body_##T(p, g, s, n, sp, sg, ss, j, 1);                                                                      \
    else                                                                                                               \
      ada_body_##T(p, g, s, n, sp, sg, ss, j, 0);                                                                      \
  }
ADA_STRIDED(float)
ADA_STRIDED(double)

mt_status mt_cpu_adagrad_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *sum, const mt_adagrad_settings *st,
                              double clr) {
  ada_job j = {
      .sign = st->maximize ? -1.0 : 1.0,
      .wd = st->weight_decay,
      .eps = st->eps,
      .nclr = -clr,
      .wd_on = st->weight_decay != 0,
  };
  int64_t n = param->_numel;
  if (n == 0)
    return MT_OK;
  bool f32 = param->_dtype == MT_FLOAT32;
  if (param->_flags & grad->_flags & sum->_flags & MT_TENSOR_CONTIGUOUS) {
    j.p = param->_data, j.g = grad->_data, j.s = sum->_data;
    mt_range_fn fn = f32 ? ada_contig_float : ada_contig_double;
    if (n >= 2 * MT_GRAIN)
      mt_parallel_for(n, MT_GRAIN, fn, &j);
    else
      fn(&j, 0, n);
    return MT_OK;
  }
  const mt_tensor *ops[3] = {param, grad, sum};
  mt_iter it;
  mt_iter_init(&it, ops, 3, param->_sizes, param->_ndim);
  mt_iter_run(&it, f32 ? ada_strided_float : ada_strided_double, &j, MT_GRAIN);
  return MT_OK;
}

/* ------------------------------------------------------------------ Adadelta and Adamax
 * Adadelta (PyTorch's order):
 *   square_avg = square_avg * rho + (1 - rho) * g * g
 *   delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
 *   acc_delta = acc_delta * rho + (1 - rho) * delta * delta
 *   param = param + (-lr) * delta
 * Adamax (clr = lr / (1 - beta1^step), from the front door):
 *   exp_avg = exp_avg * beta1 + (1 - beta1) * g
 *   exp_inf = maximum(exp_inf * beta2, |g| + eps)       (NaN wins, as PyTorch's amax)
 *   param = param + (-clr) * exp_avg / exp_inf */
typedef struct two_job {
  char *p, *g, *a, *b;                   /* first elements (contiguous path): the two state tensors a, b */
  double sign, wd, r, omr, b2, eps, nlr; /* r: rho (Adadelta) or beta1 (Adamax); omr: 1 - r */
  int wd_on, adamax;
} two_job;

#define TWO_BODY(T)                                                                                                    \
  static inline __attribute__((always_inline)) void two_body_##T(                                                      \
      T *restrict p, const T *restrict g, T *restrict a, T *restrict b, int64_t n, int64_t sp, int64_t sg, int64_t sa, \
      int64_t sb, const two_job *j, const int wd_on, const int adamax) {                                               \
    const T sign = (T)j->sign, wd = (T)j->wd, r = (T)j->r, omr = (T)j->omr, eps = (T)j->eps, nlr = (T)j->nlr;          \
    const T b2 = (T)j->b2;                                                                                             \
    for (int64_t i = 0; i < n; i++) {                                                                                  \
      T gi = sign * g[i * sg];                                                                                         \
      T pi = p[i * sp];                                                                                                \
      if (wd_on)                                                                                                       \
        gi = gi + wd * pi;                                                                                             \
      if (adamax) {                                                                                                    \
        T mi = a[i * sa] * r;                                                                                          \
        mi = mi + omr * gi;                                                                                            \
        a[i * sa] = mi;                                                                                                \
        T ui = b[i * sb] * b2;                                                                                         \
        T ag = (gi < 0 ? -gi : gi) + eps;                                                                              \
        ui = (ui > ag || ui != ui) ? ui : ag;                                                                          \
        b[i * sb] = ui;                                                                                                \
        p[i * sp] = pi + nlr * mi / ui;                                                                                \
      } else {                                                                                                         \
        T si = a[i * sa] * r;                                                                                          \
        si = si + omr * gi * gi;                                                                                       \
        a[i * sa] = si;                                                                                                \
        T std = SQRT_(si + eps);                                                                                       \
        T di = b[i * sb];                                                                                              \
        T delta = SQRT_(di + eps) / std * gi;                                                                          \
        di = di * r;                                                                                                   \
        di = di + omr * delta * delta;                                                                                 \
        b[i * sb] = di;                                                                                                \
        p[i * sp] = pi + nlr * delta;                                                                                  \
      }                                                                                                                \
    }                                                                                                                  \
  }
TWO_BODY(float)
TWO_BODY(double)

#define TWO_CONTIG(T)                                                                                                  \
  static void two_contig_##T(void *ctx, int64_t lo, int64_t hi) {                                                      \
    const two_job *j = ctx;                                                                                            \
    T *p = (T *)j->p + lo, *a = (T *)j->a + lo, *b = (T *)j->b + lo;                                                   \
    const T *g = (const T *)j->g + lo;                                                                                 \
    int64_t n = hi - lo;                                                                                               \
    switch (j->wd_on * 2 + j->adamax) {                                                                                \
    case 0:                                                                                                            \
      two_body_##T(p, g, a, b, n, 1, 1, 1, 1, j, 0, 0);                                                                \
      break;                                                                                                           \
    case 1:                                                                                                            \
      two_body_##T(p, g, a, b, n, 1, 1, 1, 1, j, 0, 1);                                                                \
      break;                                                                                                           \
    case 2:                                                                                                            \
      two_body_##T(p, g, a, b, n, 1, 1, 1, 1, j, 1, 0);                                                                \
      break;                                                                                                           \
    default:                                                                                                           \
      two_body_##T(p, g, a, b, n, 1, 1, 1, 1, j, 1, 1);                                                                \
      break;                                                                                                           \
    }                                                                                                                  \
  }
TWO_CONTIG(float)
TWO_CONTIG(double)

#define TWO_STRIDED(T)                                                                                                 \
  static void two_strided_##T(void *ctx, char **ptrs, const int64_t *strides, int64_t n) {                             \
    const two_job *j = ctx;                                                                                            \
    const int64_t z = (int64_t)sizeof(T);                                                                              \
    T *p = (T *)ptrs[0], *a = (T *)ptrs[2], *b = (T *)ptrs[3];                                                         \
    const T *g = (const T *)ptrs[1];                                                                                   \
    int64_t sp = strides[0] / z, sg = strides[1] / z, sa = strides[2] / z, sb = strides[3] / z;                        \
    switch (j->wd_on * 2 + j->adamax) {                                                                                \
    case 0:                                                                                                            \
      two_body_##T(p, g, a, b, n, sp, sg, sa, sb, j, 0, 0);                                                            \
      break;                                                                                                           \
    case 1:                                                                                                            \
      two_body_##T(p, g, a, b, n, sp, sg, sa, sb, j, 0, 1);                                                            \
      break;                                                                                                           \
    case 2:                                                                                                            \
      two_body_##T(p, g, a, b, n, sp, sg, sa, sb, j, 1, 0);                                                            \
      break;                                                                                                           \
    default:                                                                                                           \
      two_body_##T(p, g, a, b, n, sp, sg, sa, sb, j, 1, 1);                                                            \
      break;                                                                                                           \
    }                                                                                                                  \
  }
TWO_STRIDED(float)
TWO_STRIDED(double)

static mt_status two_run(two_job *j, mt_tensor *param, const mt_tensor *grad, mt_tensor *a, mt_tensor *b) {
  int64_t n = param->_numel;
  if (n == 0)
    return MT_OK;
  bool f32 = param->_dtype == MT_FLOAT32;
  if (param->_flags & grad->_flags & a->_flags & b->_flags & MT_TENSOR_CONTIGUOUS) {
    j->p = param->_data, j->g = grad->_data, j->a = a->_data, j->b = b->_data;
    mt_range_fn fn = f32 ? two_contig_float : two_contig_double;
    if (n >= 2 * MT_GRAIN)
      mt_parallel_for(n, MT_GRAIN, fn, j);
    else
      fn(j, 0, n);
    return MT_OK;
  }
  const mt_tensor *ops[4] = {param, grad, a, b};
  mt_iter it;
  mt_iter_init(&it, ops, 4, param->_sizes, param->_ndim);
  mt_iter_run(&it, f32 ? two_strided_float : two_strided_double, j, MT_GRAIN);
  return MT_OK;
}

mt_status mt_cpu_adadelta_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *square_avg, mt_tensor *acc_delta,
                               const mt_adadelta_settings *st) {
  two_job j = {.sign = st->maximize ? -1.0 : 1.0,
               .wd = st->weight_decay,
               .r = st->rho,
               .omr = 1 - st->rho,
               .eps = st->eps,
               .nlr = -st->lr,
               .wd_on = st->weight_decay != 0,
               .adamax = 0};
  return two_run(&j, param, grad, square_avg, acc_delta);
}

mt_status mt_cpu_adamax_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_inf,
                             const mt_adamax_settings *st, double clr) {
  two_job j = {.sign = st->maximize ? -1.0 : 1.0,
               .wd = st->weight_decay,
               .r = st->beta1,
               .omr = 1 - st->beta1,
               .b2 = st->beta2,
               .eps = st->eps,
               .nlr = -clr,
               .wd_on = st->weight_decay != 0,
               .adamax = 1};
  return two_run(&j, param, grad, exp_avg, exp_inf);
}
