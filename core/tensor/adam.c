/* adam.c -- the fused Adam/AdamW update (optim.Adam, optim.AdamW): one call per parameter does what
 * PyTorch 1.13's _single_tensor_adam / _single_tensor_adamw do with six to nine tensor ops, in the
 * same order of float operations and in the parameter's dtype, so that results agree with
 * PyTorch's to rounding. With t the step's number (the counter after its increment):
 *
 *   g = maximize ? -grad : grad
 *   AdamW:                       param = param * (1 - lr * weight_decay)
 *   Adam, weight_decay != 0:     g = g + weight_decay * param
 *   exp_avg    = exp_avg * beta1 + (1 - beta1) * g
 *   exp_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * g * g
 *   amsgrad:   max_sq = maximum(max_sq, exp_avg_sq), and max_sq stands for exp_avg_sq below
 *   denom = sqrt(exp_avg_sq) / sqrt(1 - beta2^t) + eps
 *   param = param + (-lr / (1 - beta1^t)) * exp_avg / denom
 *
 * The scalars are worked out in double, as Python does, then used in the parameter's dtype. The
 * front door (core/optim/adam.c) checks the operands, counts the step and bumps the versions.
 * Each combination of the flags gets its own loop (an always-inlined body called with constant
 * flags), so that the contiguous loops have no branches. */
#include "cpu.h"
#include <math.h>

typedef struct adam_job {
  char *p, *g, *m, *v, *x; /* first elements (contiguous path); x: max_exp_avg_sq or NULL */
  double sign, decay, wd, b1, omb1, b2, omb2, bc2s, eps, nss;
  int mode; /* 0 Adam without weight decay, 1 Adam with, 2 AdamW */
  int ams;
} adam_job;

#define ADAM_BODY(T)                                                                                                   \
  static inline __attribute__((always_inline)) void adam_body_##T(                                                     \
      T *restrict p, const T *restrict g, T *restrict m, T *restrict v, T *restrict x, int64_t n, int64_t sp,          \
      int64_t sg, int64_t sm, int64_t sv, int64_t sx, const adam_job *j, const int mode, const int ams) {              \
    const T sign = (T)j->sign, decay = (T)j->decay, wd = (T)j->wd, b1 = (T)j->b1, omb1 = (T)j->omb1;                   \
    const T b2 = (T)j->b2, omb2 = (T)j->omb2, bc2s = (T)j->bc2s, eps = (T)j->eps, nss = (T)j->nss;                     \
    for (int64_t i = 0; i < n; i++) {                                                                                  \
      T gi = sign * g[i * sg];                                                                                         \
      T pi = p[i * sp];                                                                                                \
      if (mode == 2)                                                                                                   \
        pi = pi * decay;                                                                                               \
      if (mode == 1)                                                                                                   \
        gi = gi + wd * pi;                                                                                             \
      T mi = m[i * sm] * b1;                                                                                           \
      mi = mi + omb1 * gi;                                                                                             \
      m[i * sm] = mi;                                                                                                  \
      T vi = v[i * sv] * b2;                                                                                           \
      vi = vi + omb2 * gi * gi;                                                                                        \
      v[i * sv] = vi;                                                                                                  \
      if (ams) {                                                                                                       \
        T xi = x[i * sx];                                                                                              \
        xi = (xi > vi || xi != xi) ? xi : vi;                                                                          \
        x[i * sx] = xi;                                                                                                \
        vi = xi;                                                                                                       \
      }                                                                                                                \
      T denom = _Generic(vi, float : sqrtf, default : sqrt)(vi) / bc2s + eps;                                          \
      p[i * sp] = pi + nss * mi / denom;                                                                               \
    }                                                                                                                  \
  }
ADAM_BODY(float)
ADAM_BODY(double)

#define ADAM_DISPATCH(j, CALL)                                                                                         \
  switch ((j)->mode * 2 + (j)->ams) {                                                                                  \
  case 0:                                                                                                              \
    CALL(0, 0);                                                                                                        \
    break;                                                                                                             \
  case 1:                                                                                                              \
    CALL(0, 1);                                                                                                        \
    break;                                                                                                             \
  case 2:                                                                                                              \
    CALL(1, 0);                                                                                                        \
    break;                                                                                                             \
  case 3:                                                                                                              \
    CALL(1, 1);                                                                                                        \
    break;                                                                                                             \
  case 4:                                                                                                              \
    CALL(2, 0);                                                                                                        \
    break;                                                                                                             \
  default:                                                                                                             \
    CALL(2, 1);                                                                                                        \
    break;                                                                                                             \
  }

#define ADAM_CONTIG(T)                                                                                                 \
  static void adam_contig_##T(void *ctx, int64_t s, int64_t e) {                                                       \
    const adam_job *j = ctx;                                                                                           \
    T *p = (T *)j->p + s, *m = (T *)j->m + s, *v = (T *)j->v + s;                                                      \
    const T *g = (const T *)j->g + s;                                                                                  \
    T *x = j->x ? (T *)j->x + s : NULL;                                                                                \
    int64_t n = e - s;                                                                                                 \
    ADAM_DISPATCH(j, ADAM_CALL_CONTIG_##T)                                                                             \
  }
#define ADAM_CALL_CONTIG_float(md, a) adam_body_float(p, g, m, v, x, n, 1, 1, 1, 1, 1, j, md, a)
#define ADAM_CALL_CONTIG_double(md, a) adam_body_double(p, g, m, v, x, n, 1, 1, 1, 1, 1, j, md, a)
ADAM_CONTIG(float)
ADAM_CONTIG(double)

/* Strided: the iterator's inner loop (byte strides; ptrs[4] absent without amsgrad) */
#define ADAM_STRIDED(T)                                                                                                \
  static void adam_strided_##T(void *ctx, char **ptrs, const int64_t *strides, int64_t n) {                            \
    const adam_job *j = ctx;                                                                                           \
    T *p = (T *)ptrs[0], *m = (T *)ptrs[2], *v = (T *)ptrs[3];                                                         \
    const T *g = (const T *)ptrs[1];                                                                                   \
    T *x = j->ams ? (T *)ptrs[4] : NULL;                                                                               \
    const int64_t z = (int64_t)sizeof(T);                                                                              \
    int64_t sp = strides[0] / z, sg = strides[1] / z, sm = strides[2] / z, sv = strides[3] / z;                        \
    int64_t sx = j->ams ? strides[4] / z : 1;                                                                          \
    if (sp == 1 && sg == 1 && sm == 1 && sv == 1 && sx == 1) {                                                         \
      ADAM_DISPATCH(j, ADAM_CALL_CONTIG_##T)                                                                           \
    } else {                                                                                                           \
      ADAM_DISPATCH(j, ADAM_CALL_STRIDED_##T)                                                                          \
    }                                                                                                                  \
  }
#define ADAM_CALL_STRIDED_float(md, a) adam_body_float(p, g, m, v, x, n, sp, sg, sm, sv, sx, j, md, a)
#define ADAM_CALL_STRIDED_double(md, a) adam_body_double(p, g, m, v, x, n, sp, sg, sm, sv, sx, j, md, a)
ADAM_STRIDED(float)
ADAM_STRIDED(double)

mt_status mt_cpu_adam_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_avg_sq,
                           mt_tensor *max_sq, const mt_adam_settings *st, double step) {
  double bc1 = 1 - pow(st->beta1, step), bc2 = 1 - pow(st->beta2, step);
  adam_job j = {
      .sign = st->maximize ? -1.0 : 1.0,
      .decay = 1 - st->lr * st->weight_decay,
      .wd = st->weight_decay,
      .b1 = st->beta1,
      .omb1 = 1 - st->beta1,
      .b2 = st->beta2,
      .omb2 = 1 - st->beta2,
      .bc2s = sqrt(bc2),
      .eps = st->eps,
      .nss = -(st->lr / bc1),
      .mode = st->decoupled ? 2 : (st->weight_decay != 0 ? 1 : 0),
      .ams = max_sq != NULL,
  };
  int64_t n = param->_numel;
  if (n == 0)
    return MT_OK;
  bool f32 = param->_dtype == MT_FLOAT32;
  if (param->_flags & grad->_flags & exp_avg->_flags & exp_avg_sq->_flags &
      (max_sq ? max_sq->_flags : MT_TENSOR_CONTIGUOUS) & MT_TENSOR_CONTIGUOUS) {
    j.p = param->_data, j.g = grad->_data, j.m = exp_avg->_data, j.v = exp_avg_sq->_data;
    j.x = max_sq ? max_sq->_data : NULL;
    mt_range_fn fn = f32 ? adam_contig_float : adam_contig_double;
    if (n >= 2 * MT_GRAIN)
      mt_parallel_for(n, MT_GRAIN, fn, &j);
    else
      fn(&j, 0, n);
    return MT_OK;
  }
  const mt_tensor *ops[5] = {param, grad, exp_avg, exp_avg_sq, max_sq};
  mt_iter it;
  mt_iter_init(&it, ops, max_sq ? 5 : 4, param->_sizes, param->_ndim);
  mt_iter_run(&it, f32 ? adam_strided_float : adam_strided_double, &j, MT_GRAIN);
  return MT_OK;
}
