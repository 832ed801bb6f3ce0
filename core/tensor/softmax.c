/* softmax.c -- the CPU's vectorised softmax and log_softmax (s6-vec, issue 12's speed): the forward for
 * float32 (mt_cpu_softmax in reduce.c asks here first; float64, the other dtypes and the scalar level keep
 * reduce.c's line kernel, which sums in double) and the fused backward (kernel slot softmax_backward) for
 * float32 and float64.
 *
 * A contiguous tensor is outer x n x inner around the softmax dim (n its size). The last dim (inner 1)
 * goes row by row; another dim goes in blocks of SM_COLS adjacent columns, whose lanes run along the
 * contiguous inner dim, so that every pass still loads whole vectors. The rows or blocks are split over
 * the thread pool in chunks of at least MT_GRAIN elements. The line kernels are softmax.h's, AVX-512
 * (vmath512.c) or AVX2+FMA (vmath.c) as mt_cpu_kernel_level() says (MOONTORCH_VMATH=avx2 or 0 lowers
 * it); without either the float32 backward is the scalar loop below. */
#include "softmax.h"

#include <math.h>

#include "../cpu.h"
#include "../thread.h"
#include "cpu.h"

#define SM_COLS 64 /* columns in a block (a multiple of 16) */

typedef struct {
  const mt_tensor *x, *g, *y; /* x: forward's input; g, y: backward's */
  mt_tensor *out;
  int64_t n, inner, nchunk;
  int lg;
  mt_softmax_fwd_fn fwd;
  mt_softmax_bwd_fn bwd;
} sm_job;

/* unit u: its first element, the line stride and the number of lines */
static inline int64_t sm_unit(const sm_job *j, int64_t u, int64_t *st, int64_t *w) {
  if (j->inner == 1) {
    *st = 1;
    *w = 1;
    return u * j->n;
  }
  int64_t o = u / j->nchunk, c = u % j->nchunk;
  *st = j->inner;
  *w = j->inner - c * SM_COLS < SM_COLS ? j->inner - c * SM_COLS : SM_COLS;
  return o * j->n * j->inner + c * SM_COLS;
}

static void sm_fwd_run(void *ctx, int64_t b, int64_t e) {
  const sm_job *j = ctx;
  const float *x = (const float *)j->x->_data;
  float *o = (float *)j->out->_data;
  for (int64_t u = b; u < e; u++) {
    int64_t st, w, at = sm_unit(j, u, &st, &w);
    j->fwd(o + at, x + at, j->n, st, w, j->lg);
  }
}

/* the scalar backward: sums in double */
static void bwd_f64(double *gi, const double *g, const double *y, int64_t n, int64_t st, int64_t w, int lg) {
  for (int64_t k = 0; k < w; k++) {
    double s = 0;
    for (int64_t c = 0; c < n; c++) s += lg ? g[c * st + k] : g[c * st + k] * y[c * st + k];
    for (int64_t c = 0; c < n; c++) {
      int64_t i = c * st + k;
      gi[i] = lg ? g[i] - exp(y[i]) * s : y[i] * (g[i] - s);
    }
  }
}
static void bwd_f32(float *gi, const float *g, const float *y, int64_t n, int64_t st, int64_t w, int lg) {
  for (int64_t k = 0; k < w; k++) {
    double s = 0;
    for (int64_t c = 0; c < n; c++) s += lg ? (double)g[c * st + k] : (double)g[c * st + k] * y[c * st + k];
    float sf = (float)s;
    for (int64_t c = 0; c < n; c++) {
      int64_t i = c * st + k;
      gi[i] = lg ? g[i] - expf(y[i]) * sf : y[i] * (g[i] - sf);
    }
  }
}

static void sm_bwd_run(void *ctx, int64_t b, int64_t e) {
  const sm_job *j = ctx;
  bool f64 = j->y->_dtype == MT_FLOAT64;
  for (int64_t u = b; u < e; u++) {
    int64_t st, w, at = sm_unit(j, u, &st, &w);
    if (f64)
      bwd_f64((double *)j->out->_data + at, (const double *)j->g->_data + at, (const double *)j->y->_data + at, j->n,
              st, w, j->lg);
    else if (j->bwd)
      j->bwd((float *)j->out->_data + at, (const float *)j->g->_data + at, (const float *)j->y->_data + at, j->n, st,
             w, j->lg);
    else
      bwd_f32((float *)j->out->_data + at, (const float *)j->g->_data + at, (const float *)j->y->_data + at, j->n,
              st, w, j->lg);
  }
}

/* outer x n x inner around dim; the number of units and the grain in units */
static int64_t sm_plan(sm_job *j, const mt_tensor *t, int dim, int64_t *grain) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= t->_sizes[d];
  for (int d = dim + 1; d < t->_ndim; d++) inner *= t->_sizes[d];
  j->n = t->_sizes[dim];
  j->inner = inner;
  j->nchunk = (inner + SM_COLS - 1) / SM_COLS;
  int64_t per = j->n * (inner == 1 ? 1 : (inner < SM_COLS ? inner : SM_COLS));
  *grain = per > 0 && MT_GRAIN / per > 1 ? MT_GRAIN / per : 1;
  return inner == 1 ? outer : outer * j->nchunk;
}

static void sm_kernels(mt_softmax_fwd_fn *fwd, mt_softmax_bwd_fn *bwd) {
  *fwd = NULL;
  *bwd = NULL;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  int level = mt_cpu_kernel_level();
  if (level >= MT_CPU_LEVEL_AVX512) {
    *fwd = mt_v5_softmax_fwd;
    *bwd = mt_v5_softmax_bwd;
  } else if (level >= MT_CPU_LEVEL_AVX2) {
    *fwd = mt_vm_softmax_fwd;
    *bwd = mt_vm_softmax_bwd;
  }
#endif
}

int mt_cpu_softmax_vec(mt_tensor *out, const mt_tensor *a, int dim, int log, mt_status *status) {
  *status = MT_OK;
  if (a->_dtype != MT_FLOAT32 || out->_dtype != MT_FLOAT32 || a->_ndim == 0) return 0;
  if (!(out->_flags & MT_TENSOR_CONTIGUOUS)) return 0;
  sm_job j = {.out = out, .lg = log};
  mt_softmax_bwd_fn unused;
  sm_kernels(&j.fwd, &unused);
  if (!j.fwd) return 0;
  if (out->_numel == 0) return 1;
  mt_tensor *ac = NULL;
  *status = mt_cpu_contiguous(a, log ? "log_softmax" : "softmax", &ac);
  if (*status) return 1;
  j.x = ac;
  int64_t grain, units = sm_plan(&j, ac, dim, &grain);
  mt_parallel_for(units, grain, sm_fwd_run, &j);
  mt_tensor_release(ac);
  return 1;
}

mt_status mt_cpu_softmax_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *y, int dim, int log) {
  if (gin->_numel == 0) return MT_OK;
  sm_job j = {.out = gin, .g = g, .y = y, .lg = log};
  mt_softmax_fwd_fn unused;
  sm_kernels(&unused, &j.bwd);
  int64_t grain, units = sm_plan(&j, y, dim, &grain);
  mt_parallel_for(units, grain, sm_bwd_run, &j);
  return MT_OK;
}
