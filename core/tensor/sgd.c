/* sgd.c -- the fused SGD update (optim.SGD's step): one call per parameter does what PyTorch's
 * _single_tensor_sgd does with four or five tensor ops, in the same order of float operations
 * and in the parameter's dtype, so that results agree with PyTorch's to rounding:
 *
 *   d = maximize ? -grad : grad
 *   if weight_decay != 0:  d = d + weight_decay * param
 *   if momentum != 0:
 *     first step:  buf = d                                  (PyTorch: clone(d).detach())
 *     later:       buf = buf * momentum + (1 - dampening) * d
 *     d = nesterov ? d + momentum * buf : buf
 *   param = param + (-lr) * d
 *
 * The front door (core/optim/sgd.c) checks the operands and bumps the version counters. Every
 * combination of the flags gets its own loop (an always-inlined body called with constant
 * flags), so the contiguous loops have no branches and vectorise. */
#include "cpu.h"

typedef struct sgd_job {
  char *p, *g, *b;            /* first elements (contiguous path) */
  double nlr, mom, damp1, wd, sign;
  int wd_on, mode, nest;      /* mode: 0 no momentum, 1 first step (buf = d), 2 later steps */
} sgd_job;

/* The update of n elements; sp/sg/sb are element strides (constant 1 on the contiguous path). */
#define SGD_BODY(T)                                                                                   \
  static inline __attribute__((always_inline)) void sgd_body_##T(                                     \
      T *restrict p, const T *restrict g, T *restrict b, int64_t n, int64_t sp, int64_t sg, int64_t sb, \
      const sgd_job *j, const int wd_on, const int mode, const int nest) {                            \
    const T nlr = (T)j->nlr, mom = (T)j->mom, damp1 = (T)j->damp1, wd = (T)j->wd, sign = (T)j->sign;  \
    for (int64_t i = 0; i < n; i++) {                                                                 \
      T d = sign * g[i * sg];                                                                         \
      if (wd_on) d = d + wd * p[i * sp];                                                              \
      if (mode == 1) {                                                                                \
        b[i * sb] = d;                                                                                \
        d = nest ? d + mom * d : d;                                                                   \
      } else if (mode == 2) {                                                                         \
        T nb = b[i * sb] * mom;                                                                       \
        nb = nb + damp1 * d;                                                                          \
        b[i * sb] = nb;                                                                               \
        d = nest ? d + mom * nb : nb;                                                                 \
      }                                                                                               \
      p[i * sp] = p[i * sp] + nlr * d;                                                                \
    }                                                                                                 \
  }
SGD_BODY(float)
SGD_BODY(double)

/* Call CALL(wd_on, mode, nest) with constant arguments for the job's flags. */
#define SGD_DISPATCH(j, CALL)                    \
  switch ((j)->wd_on * 6 + (j)->mode * 2 + (j)->nest) { \
    case 0: CALL(0, 0, 0); break;                \
    case 1: CALL(0, 0, 1); break;                \
    case 2: CALL(0, 1, 0); break;                \
    case 3: CALL(0, 1, 1); break;                \
    case 4: CALL(0, 2, 0); break;                \
    case 5: CALL(0, 2, 1); break;                \
    case 6: CALL(1, 0, 0); break;                \
    case 7: CALL(1, 0, 1); break;                \
    case 8: CALL(1, 1, 0); break;                \
    case 9: CALL(1, 1, 1); break;                \
    case 10: CALL(1, 2, 0); break;               \
    default: CALL(1, 2, 1); break;               \
  }

/* Contiguous: a range [s, e) of elements, strides constant 1. */
#define SGD_CONTIG(T)                                                                       \
  static void sgd_contig_##T(void *ctx, int64_t s, int64_t e) {                             \
    const sgd_job *j = ctx;                                                                 \
    T *p = (T *)j->p + s;                                                                   \
    const T *g = (const T *)j->g + s;                                                       \
    T *b = j->b ? (T *)j->b + s : NULL;                                                     \
    int64_t n = e - s;                                                                      \
    SGD_DISPATCH(j, SGD_CALL_CONTIG_##T)                                                    \
  }
#define SGD_CALL_CONTIG_float(w, m, ne) sgd_body_float(p, g, b, n, 1, 1, 1, j, w, m, ne)
#define SGD_CALL_CONTIG_double(w, m, ne) sgd_body_double(p, g, b, n, 1, 1, 1, j, w, m, ne)
SGD_CONTIG(float)
SGD_CONTIG(double)

/* Strided: the iterator's inner loop (byte strides; ptrs[2] absent without momentum). A run whose
 * operands all step by one element (a transposed parameter with a matching grad) takes the
 * contiguous loop. */
#define SGD_STRIDED(T)                                                                                   \
  static void sgd_strided_##T(void *ctx, char **ptrs, const int64_t *strides, int64_t n) {               \
    const sgd_job *j = ctx;                                                                              \
    T *p = (T *)ptrs[0];                                                                                 \
    const T *g = (const T *)ptrs[1];                                                                     \
    T *b = j->mode ? (T *)ptrs[2] : NULL;                                                                \
    int64_t sp = strides[0] / (int64_t)sizeof(T), sg = strides[1] / (int64_t)sizeof(T);                  \
    int64_t sb = j->mode ? strides[2] / (int64_t)sizeof(T) : 1;                                          \
    if (sp == 1 && sg == 1 && sb == 1) {                                                                 \
      SGD_DISPATCH(j, SGD_CALL_CONTIG_##T)                                                               \
    } else {                                                                                             \
      SGD_DISPATCH(j, SGD_CALL_STRIDED_##T)                                                              \
    }                                                                                                    \
  }
#define SGD_CALL_STRIDED_float(w, m, ne) sgd_body_float(p, g, b, n, sp, sg, sb, j, w, m, ne)
#define SGD_CALL_STRIDED_double(w, m, ne) sgd_body_double(p, g, b, n, sp, sg, sb, j, w, m, ne)
SGD_STRIDED(float)
SGD_STRIDED(double)

mt_status mt_cpu_sgd_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *buf, const mt_sgd_settings *st,
                          int first_step) {
  sgd_job j = {
      .nlr = -st->lr,
      .mom = st->momentum,
      .damp1 = 1 - st->dampening,
      .wd = st->weight_decay,
      .sign = st->maximize ? -1.0 : 1.0,
      .wd_on = st->weight_decay != 0,
      .mode = buf ? (first_step ? 1 : 2) : 0,
      .nest = buf && st->nesterov,
  };
  int64_t n = param->_numel;
  if (n == 0) return MT_OK;
  bool f32 = param->_dtype == MT_FLOAT32;
  if (param->_flags & grad->_flags & (buf ? buf->_flags : MT_TENSOR_CONTIGUOUS) & MT_TENSOR_CONTIGUOUS) {
    j.p = param->_data, j.g = grad->_data, j.b = buf ? buf->_data : NULL;
    mt_range_fn fn = f32 ? sgd_contig_float : sgd_contig_double;
    if (n >= 2 * MT_GRAIN) mt_parallel_for(n, MT_GRAIN, fn, &j);
    else fn(&j, 0, n);
    return MT_OK;
  }
  const mt_tensor *ops[3] = {param, grad, buf};
  mt_iter it;
  mt_iter_init(&it, ops, buf ? 3 : 2, param->_sizes, param->_ndim);
  mt_iter_run(&it, f32 ? sgd_strided_float : sgd_strided_double, &j, MT_GRAIN);
  return MT_OK;
}
