/* reduce.c -- reductions (sum, mean, prod, amax, amin, all, any, var, std, norm, logsumexp,
 * nansum, count_nonzero), max/min with indices, argmax, cumsum/cumprod, softmax, var_mean,
 * equal, isclose and allclose.
 *
 * How a reduction runs: the reduced dims of the input form an "inner" geometry (sorted by
 * stride, coalesced) and the kept dims an "outer" one. For every output element the inner
 * elements are walked row by row, converted in chunks into a small buffer in the compute domain
 * (double for floating results -- so float32/float16/bfloat16 accumulate in double -- or int64
 * for integer results), transformed (|x|, x^2, exp(x - c), ...) and combined (+, *, max, min,
 * and, or). An op is one or two such passes plus a finishing formula; var/std and logsumexp take
 * two passes (mean then squared deviations; max then sum of exponentials). Big reductions run on
 * the thread pool: across outputs when there are many, otherwise across fixed chunks of the inner
 * elements whose partial results are combined in chunk order (so results do not depend on the
 * number of threads). The dispatch layer (core/ops/reduce.c) has worked out the result's shape and
 * dtype; these kernels fill it. */
#include "cpu.h"
#include "softmax.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- row loads and stores */
/* n elements from p (stride st bytes) into a buffer of doubles / int64s, and back. */
static void load_d(int dt, const char *p, int64_t st, int64_t n, double *buf) {
  switch (dt) {
#define X(DT, T, LOAD, STORE)                                                           \
  case DT:                                                                              \
    if (st == (int64_t)sizeof(T)) {                                                     \
      const T *q = (const T *)p;                                                        \
      for (int64_t i = 0; i < n; i++) { T x = q[i]; buf[i] = (double)(LOAD); }          \
    } else {                                                                            \
      for (int64_t i = 0; i < n; i++) { T x = *(const T *)(p + i * st); buf[i] = (double)(LOAD); } \
    }                                                                                   \
    break;
    MT_FOREACH_DTYPE(X)
#undef X
    default: break;
  }
}
static void load_i(int dt, const char *p, int64_t st, int64_t n, int64_t *buf) {
  switch (dt) {
#define X(DT, T, LOAD, STORE)                                                           \
  case DT:                                                                              \
    if (st == (int64_t)sizeof(T)) {                                                     \
      const T *q = (const T *)p;                                                        \
      for (int64_t i = 0; i < n; i++) { T x = q[i]; buf[i] = (int64_t)(LOAD); }         \
    } else {                                                                            \
      for (int64_t i = 0; i < n; i++) { T x = *(const T *)(p + i * st); buf[i] = (int64_t)(LOAD); } \
    }                                                                                   \
    break;
    MT_FOREACH_DTYPE(X)
#undef X
    default: break;
  }
}
static void store_d(int dt, char *p, int64_t st, int64_t n, const double *buf) {
  switch (dt) {
#define X(DT, T, LOAD, STORE)                                                           \
  case DT:                                                                              \
    for (int64_t i = 0; i < n; i++) { double v = buf[i]; *(T *)(p + i * st) = STORE; }  \
    break;
    MT_FOREACH_DTYPE(X)
#undef X
    default: break;
  }
}
static void store_i(int dt, char *p, int64_t st, int64_t n, const int64_t *buf) {
  switch (dt) {
#define X(DT, T, LOAD, STORE)                                                           \
  case DT:                                                                              \
    for (int64_t i = 0; i < n; i++) { int64_t v = buf[i]; *(T *)(p + i * st) = STORE; } \
    break;
    MT_FOREACH_DTYPE(X)
#undef X
    default: break;
  }
}

/* ---------------------------------------------------------------- passes */
typedef enum { F_ID, F_NONZERO, F_NAN0, F_ABS, F_SQ, F_POWP, F_SQDEV, F_EXPDEV } xform;
typedef enum { C_ADD, C_MUL, C_MAX, C_MIN, C_AND, C_OR } comb;
typedef struct {
  xform f;
  comb c;
  double p;      /* F_POWP: the exponent */
  double center; /* F_SQDEV, F_EXPDEV: per output */
} pass_t;

#define BUF 256

static double ident_d(const pass_t *ps) {
  switch (ps->c) {
    case C_ADD: return 0;
    case C_MUL: return 1;
    case C_MAX: return ps->f == F_ABS ? 0 : -INFINITY;
    case C_MIN: return INFINITY;
    case C_AND: return 1;
    case C_OR: return 0;
  }
  return 0;
}
static int64_t ident_i(const pass_t *ps) {
  switch (ps->c) {
    case C_ADD: return 0;
    case C_MUL: return 1;
    case C_MAX: return INT64_MIN;
    case C_MIN: return INT64_MAX;
    case C_AND: return 1;
    case C_OR: return 0;
  }
  return 0;
}

/* a running double sum with Kahan compensation across chunks */
typedef struct {
  double v, comp;
} acc_d;

static inline double comb_d(comb c, double a, double b) {
  switch (c) {
    case C_ADD: return a + b;
    case C_MUL: return a * b;
    case C_MAX: return (a != a) ? a : ((b != b || b > a) ? b : a);
    case C_MIN: return (a != a) ? a : ((b != b || b < a) ? b : a);
    case C_AND: return (double)(a != 0 && b != 0);
    case C_OR: return (double)(a != 0 || b != 0);
  }
  return a;
}
static inline int64_t comb_i(comb c, int64_t a, int64_t b) {
  switch (c) {
    case C_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case C_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case C_MAX: return b > a ? b : a;
    case C_MIN: return b < a ? b : a;
    case C_AND: return a != 0 && b != 0;
    case C_OR: return a != 0 || b != 0;
  }
  return a;
}

/* transform then combine one buffer of doubles into acc */
static void chunk_d(double *b, int64_t n, const pass_t *ps, acc_d *acc) {
  const double c = ps->center, p = ps->p;
  switch (ps->f) {
    case F_ID: break;
    case F_NONZERO: for (int64_t i = 0; i < n; i++) b[i] = b[i] != 0; break;
    case F_NAN0: for (int64_t i = 0; i < n; i++) b[i] = b[i] != b[i] ? 0 : b[i]; break;
    case F_ABS: for (int64_t i = 0; i < n; i++) b[i] = fabs(b[i]); break;
    case F_SQ: for (int64_t i = 0; i < n; i++) b[i] = b[i] * b[i]; break;
    case F_POWP: for (int64_t i = 0; i < n; i++) b[i] = pow(fabs(b[i]), p); break;
    case F_SQDEV: for (int64_t i = 0; i < n; i++) { double d = b[i] - c; b[i] = d * d; } break;
    case F_EXPDEV: for (int64_t i = 0; i < n; i++) b[i] = exp(b[i] - c); break;
  }
  switch (ps->c) {
    case C_ADD: {
      double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) s[k] += b[i + k];
      for (; i < n; i++) s[0] += b[i];
      double t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
      /* Kahan-Babuska: compensate the running total */
      double y = acc->v + t;
      if (fabs(acc->v) >= fabs(t)) acc->comp += (acc->v - y) + t;
      else acc->comp += (t - y) + acc->v;
      acc->v = y;
      break;
    }
    case C_MUL: {
      double v = acc->v;
      for (int64_t i = 0; i < n; i++) v *= b[i];
      acc->v = v;
      break;
    }
    case C_MAX:
    case C_MIN: {
      /* branch-free lanes (the compiler makes max/min instructions of them); NaN is counted
       * separately and wins */
      double v = acc->v;
      if (v != v) break;
      double m[4] = {v, v, v, v};
      int nn = 0;
      int64_t i = 0;
      if (ps->c == C_MAX) {
        for (; i + 4 <= n; i += 4)
          for (int k = 0; k < 4; k++) { double x = b[i + k]; nn |= x != x; m[k] = x > m[k] ? x : m[k]; }
        for (; i < n; i++) { double x = b[i]; nn |= x != x; m[0] = x > m[0] ? x : m[0]; }
        v = m[0] > m[1] ? m[0] : m[1];
        double w = m[2] > m[3] ? m[2] : m[3];
        v = v > w ? v : w;
      } else {
        for (; i + 4 <= n; i += 4)
          for (int k = 0; k < 4; k++) { double x = b[i + k]; nn |= x != x; m[k] = x < m[k] ? x : m[k]; }
        for (; i < n; i++) { double x = b[i]; nn |= x != x; m[0] = x < m[0] ? x : m[0]; }
        v = m[0] < m[1] ? m[0] : m[1];
        double w = m[2] < m[3] ? m[2] : m[3];
        v = v < w ? v : w;
      }
      acc->v = nn ? NAN : v;
      break;
    }
    case C_AND: {
      double v = acc->v;
      for (int64_t i = 0; i < n && v != 0; i++) if (b[i] == 0) v = 0;
      acc->v = v;
      break;
    }
    case C_OR: {
      double v = acc->v;
      for (int64_t i = 0; i < n && v == 0; i++) if (b[i] != 0) v = 1;
      acc->v = v;
      break;
    }
  }
}

static void chunk_i(int64_t *b, int64_t n, const pass_t *ps, int64_t *acc) {
  if (ps->f == F_NONZERO)
    for (int64_t i = 0; i < n; i++) b[i] = b[i] != 0;
  int64_t v = *acc;
  switch (ps->c) {
    case C_ADD: {
      uint64_t s = (uint64_t)v;
      for (int64_t i = 0; i < n; i++) s += (uint64_t)b[i];
      v = (int64_t)s;
      break;
    }
    case C_MUL: {
      uint64_t s = (uint64_t)v;
      for (int64_t i = 0; i < n; i++) s *= (uint64_t)b[i];
      v = (int64_t)s;
      break;
    }
    case C_MAX: for (int64_t i = 0; i < n; i++) if (b[i] > v) v = b[i]; break;
    case C_MIN: for (int64_t i = 0; i < n; i++) if (b[i] < v) v = b[i]; break;
    case C_AND: for (int64_t i = 0; i < n && v; i++) if (!b[i]) v = 0; break;
    case C_OR: for (int64_t i = 0; i < n && !v; i++) if (b[i]) v = 1; break;
  }
  *acc = v;
}

/* ---------------------------------------------------------------- walking the reduced elements */
typedef struct {
  int nd;                      /* dim 0 is the fastest */
  int64_t size[MT_MAX_DIMS];
  int64_t st[MT_MAX_DIMS];     /* bytes */
  int64_t numel;
} geom;

/* Walk inner elements [begin, end) of g from base, calling BODY(ptr, stride, n) per row. */
#define WALK(g, base, begin, end, BODY)                                                  \
  do {                                                                                   \
    if ((begin) >= (end)) break;                                                         \
    if ((g)->nd == 0) {                                                                  \
      if ((begin) < (end)) { const char *row_ = (base); int64_t rs_ = 0, rn_ = 1; BODY; } \
      break;                                                                             \
    }                                                                                    \
    int64_t idx_[MT_MAX_DIMS], rem_ = (begin), pos_ = (begin);                          \
    const char *ptr_ = (base);                                                           \
    for (int d_ = 0; d_ < (g)->nd; d_++) {                                               \
      idx_[d_] = rem_ % (g)->size[d_];                                                   \
      rem_ /= (g)->size[d_];                                                             \
      ptr_ += idx_[d_] * (g)->st[d_];                                                    \
    }                                                                                    \
    while (pos_ < (end)) {                                                               \
      int64_t n_ = (g)->size[0] - idx_[0];                                               \
      if (n_ > (end) - pos_) n_ = (end) - pos_;                                           \
      {                                                                                  \
        const char *row_ = ptr_;                                                         \
        int64_t rs_ = (g)->st[0], rn_ = n_;                                              \
        BODY;                                                                            \
      }                                                                                  \
      pos_ += n_;                                                                        \
      idx_[0] += n_;                                                                     \
      ptr_ += n_ * (g)->st[0];                                                           \
      for (int d_ = 0; d_ + 1 < (g)->nd && idx_[d_] == (g)->size[d_]; d_++) {           \
        ptr_ += (g)->st[d_ + 1] - (g)->size[d_] * (g)->st[d_];                           \
        idx_[d_] = 0;                                                                    \
        idx_[d_ + 1]++;                                                                  \
      }                                                                                  \
    }                                                                                    \
  } while (0)

static double walk_d(const geom *g, int dt, const char *base, int64_t begin, int64_t end, const pass_t *ps) {
  double buf[BUF];
  acc_d acc = {ident_d(ps), 0};
  /* fast path: a contiguous float32 sum, straight from memory */
  if (dt == MT_FLOAT32 && ps->f == F_ID && ps->c == C_ADD && g->nd == 1 && g->st[0] == 4) {
    const float *q = (const float *)base + begin;
    int64_t n = end - begin;
    for (int64_t k = 0; k < n; k += 1024) {
      int64_t m = n - k < 1024 ? n - k : 1024;
      double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= m; i += 8)
        for (int j = 0; j < 8; j++) s[j] += (double)q[k + i + j];
      for (; i < m; i++) s[0] += q[k + i];
      double t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
      double y = acc.v + t;
      if (fabs(acc.v) >= fabs(t)) acc.comp += (acc.v - y) + t;
      else acc.comp += (t - y) + acc.v;
      acc.v = y;
    }
    return isfinite(acc.v) ? acc.v + acc.comp : acc.v;
  }
  WALK(g, base, begin, end, {
    for (int64_t k_ = 0; k_ < rn_; k_ += BUF) {
      int64_t m_ = rn_ - k_ < BUF ? rn_ - k_ : BUF;
      load_d(dt, row_ + k_ * rs_, rs_, m_, buf);
      chunk_d(buf, m_, ps, &acc);
    }
  });
  return ps->c == C_ADD && isfinite(acc.v) ? acc.v + acc.comp : acc.v;
}

static int64_t walk_i(const geom *g, int dt, const char *base, int64_t begin, int64_t end, const pass_t *ps) {
  int64_t buf[BUF];
  int64_t acc = ident_i(ps);
  WALK(g, base, begin, end, {
    for (int64_t k_ = 0; k_ < rn_; k_ += BUF) {
      int64_t m_ = rn_ - k_ < BUF ? rn_ - k_ : BUF;
      load_i(dt, row_ + k_ * rs_, rs_, m_, buf);
      chunk_i(buf, m_, ps, &acc);
    }
  });
  return acc;
}

/* one pass over all inner elements of one output, on the pool when `par` */
#define MAX_PARTS 64
typedef struct {
  const geom *g;
  int dt;
  const char *base;
  const pass_t *ps;
  int64_t len;
  int isint;
  double pd[MAX_PARTS];
  int64_t pi[MAX_PARTS];
} part_job;

static void part_run(void *ctx, int64_t b, int64_t e) {
  part_job *j = ctx;
  for (int64_t k = b; k < e; k++) {
    int64_t lo = k * j->len, hi = lo + j->len < j->g->numel ? lo + j->len : j->g->numel;
    if (j->isint) j->pi[k] = walk_i(j->g, j->dt, j->base, lo, hi, j->ps);
    else j->pd[k] = walk_d(j->g, j->dt, j->base, lo, hi, j->ps);
  }
}

static int64_t nparts(int64_t n) {
  int64_t k = n / MT_GRAIN;
  return k > MAX_PARTS ? MAX_PARTS : (k < 1 ? 1 : k);
}

static double pass_d(const geom *g, int dt, const char *base, const pass_t *ps, int par) {
  int64_t k = par ? nparts(g->numel) : 1;
  if (k <= 1) return walk_d(g, dt, base, 0, g->numel, ps);
  part_job j = {.g = g, .dt = dt, .base = base, .ps = ps, .len = (g->numel + k - 1) / k, .isint = 0};
  k = (g->numel + j.len - 1) / j.len;
  mt_parallel_for(k, 1, part_run, &j);
  double v = j.pd[0];
  for (int64_t i = 1; i < k; i++) v = comb_d(ps->c, v, j.pd[i]);
  return v;
}
static int64_t pass_i(const geom *g, int dt, const char *base, const pass_t *ps, int par) {
  int64_t k = par ? nparts(g->numel) : 1;
  if (k <= 1) return walk_i(g, dt, base, 0, g->numel, ps);
  part_job j = {.g = g, .dt = dt, .base = base, .ps = ps, .len = (g->numel + k - 1) / k, .isint = 1};
  k = (g->numel + j.len - 1) / j.len;
  mt_parallel_for(k, 1, part_run, &j);
  int64_t v = j.pi[0];
  for (int64_t i = 1; i < k; i++) v = comb_i(ps->c, v, j.pi[i]);
  return v;
}

/* ---------------------------------------------------------------- ops over the passes */
typedef struct {
  int op;
  int isint;       /* compute in int64 */
  double p;        /* correction (var/std) or order (norm) */
  int in_dt, out_dt;
  geom inner;
  int ond;
  int64_t osize[MT_MAX_DIMS], ost_in[MT_MAX_DIMS], ost_out[MT_MAX_DIMS]; /* bytes */
  int64_t nout;
  const char *in_data;
  char *out_data;
} red_job;

static void norm_pass(double p, pass_t *ps) {
  ps->p = p;
  if (p == 0) { ps->f = F_NONZERO; ps->c = C_ADD; }
  else if (p == 1) { ps->f = F_ABS; ps->c = C_ADD; }
  else if (p == 2) { ps->f = F_SQ; ps->c = C_ADD; }
  else if (p == INFINITY) { ps->f = F_ABS; ps->c = C_MAX; }
  else if (p == -INFINITY) { ps->f = F_ABS; ps->c = C_MIN; }
  else { ps->f = F_POWP; ps->c = C_ADD; }
}

static void reduce_one(const red_job *j, const char *in, char *out, int par) {
  const geom *g = &j->inner;
  double n = (double)g->numel;
  pass_t ps = {F_ID, C_ADD, 0, 0};
  if (j->isint) {
    switch (j->op) {
      case MT_OP_PROD: ps.c = C_MUL; break;
      case MT_OP_AMAX: ps.c = C_MAX; break;
      case MT_OP_AMIN: ps.c = C_MIN; break;
      case MT_OP_ALL: ps.f = F_NONZERO; ps.c = C_AND; break;
      case MT_OP_ANY: ps.f = F_NONZERO; ps.c = C_OR; break;
      case MT_OP_COUNT_NONZERO: ps.f = F_NONZERO; break;
      default: break; /* sum, nansum */
    }
    int64_t v = pass_i(g, j->in_dt, in, &ps, par);
    store_i(j->out_dt, out, 0, 1, &v);
    return;
  }
  double v = 0;
  switch (j->op) {
    case MT_OP_SUM: v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_OP_NANSUM: ps.f = F_NAN0; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_OP_MEAN: v = pass_d(g, j->in_dt, in, &ps, par) / n; break;
    case MT_OP_PROD: ps.c = C_MUL; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_OP_AMAX: ps.c = C_MAX; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_OP_AMIN: ps.c = C_MIN; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_OP_ALL: ps.f = F_NONZERO; ps.c = C_AND; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_OP_ANY: ps.f = F_NONZERO; ps.c = C_OR; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_OP_COUNT_NONZERO: ps.f = F_NONZERO; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_OP_VAR:
    case MT_OP_STD: {
      double mean = pass_d(g, j->in_dt, in, &ps, par) / n;
      ps.f = F_SQDEV;
      ps.center = mean;
      double m2 = pass_d(g, j->in_dt, in, &ps, par);
      double dof = n - j->p;
      if (dof < 0) dof = 0;
      v = m2 / dof;
      if (j->op == MT_OP_STD) v = sqrt(v);
      break;
    }
    case MT_OP_NORM: {
      double p = j->p;
      if (g->numel == 0) { v = 0; break; }
      norm_pass(p, &ps);
      v = pass_d(g, j->in_dt, in, &ps, par);
      if (p == 2) v = sqrt(v);
      else if (p != 0 && p != 1 && !isinf(p)) v = pow(v, 1.0 / p);
      break;
    }
    case MT_OP_LOGSUMEXP: {
      ps.c = C_MAX;
      double m = pass_d(g, j->in_dt, in, &ps, par);
      double c = isinf(m) ? 0 : m;
      ps.c = C_ADD;
      ps.f = F_EXPDEV;
      ps.center = c;
      v = log(pass_d(g, j->in_dt, in, &ps, par)) + c;
      break;
    }
    default: break;
  }
  store_d(j->out_dt, out, 0, 1, &v);
}

static void outer_ptrs(const red_job *j, int64_t o, const char **in, char **out) {
  const char *pi = j->in_data;
  char *po = j->out_data;
  for (int d = j->ond - 1; d >= 0; d--) {
    int64_t i = o % j->osize[d];
    o /= j->osize[d];
    pi += i * j->ost_in[d];
    po += i * j->ost_out[d];
  }
  *in = pi;
  *out = po;
}

static void outer_run(void *ctx, int64_t b, int64_t e) {
  const red_job *j = ctx;
  for (int64_t o = b; o < e; o++) {
    const char *in;
    char *out;
    outer_ptrs(j, o, &in, &out);
    reduce_one(j, in, out, 0);
  }
}

/* speed: sum or mean of a float32/float64 (or bfloat16/float16) input over one strided run of rows into a contiguous run of
 * outputs (the bias gradient, `g:sum(1)` of an N x C matrix): the rows are added column block by column
 * block, in the order and with the lanes walk_d/chunk_d use for each output (8 lanes by row mod 8 within
 * chunks of BUF rows, the tail rows on lane 0, Kahan-Babuska across chunks), so the result is the
 * same bit for bit, without walking each column on its own. */
#define COLS 64
typedef struct {
  const red_job *j;
} colsum_job;
static void colsum_run(void *ctx, int64_t b, int64_t e) {
  const red_job *j = ((const colsum_job *)ctx)->j;
  const int64_t rows = j->inner.numel, rst = j->inner.st[0];
  const int f32 = j->in_dt == MT_FLOAT32;
  double s[8][COLS], v[COLS], comp[COLS];
  for (int64_t c0 = b * COLS; c0 < e * COLS && c0 < j->nout; c0 += COLS) {
    int64_t nc = j->nout - c0 < COLS ? j->nout - c0 : COLS;
    for (int64_t c = 0; c < nc; c++) v[c] = comp[c] = 0;
    const char *base = j->in_data + c0 * j->ost_in[0];
    for (int64_t k = 0; k < rows; k += BUF) {
      int64_t m = rows - k < BUF ? rows - k : BUF, full = m & ~(int64_t)7;
      for (int l = 0; l < 8; l++)
        for (int64_t c = 0; c < nc; c++) s[l][c] = 0;
      for (int64_t i = 0; i < m; i++) {
        double *sl = s[i < full ? (i & 7) : 0];
        const char *row = base + (k + i) * rst;
        if (f32) {
          const float *q = (const float *)row;
          for (int64_t c = 0; c < nc; c++) sl[c] += (double)q[c];
        } else if (j->in_dt == MT_BFLOAT16) { /* issue 25: the bias gradient of a bfloat16 layer */
          const mt_bf16 *q = (const mt_bf16 *)row;
          for (int64_t c = 0; c < nc; c++) sl[c] += (double)mt_b2f(q[c]);
        } else if (j->in_dt == MT_FLOAT16) {
          const mt_half *q = (const mt_half *)row;
          for (int64_t c = 0; c < nc; c++) sl[c] += (double)mt_h2f(q[c]);
        } else {
          const double *q = (const double *)row;
          for (int64_t c = 0; c < nc; c++) sl[c] += q[c];
        }
      }
      for (int64_t c = 0; c < nc; c++) {
        double t = ((s[0][c] + s[1][c]) + (s[2][c] + s[3][c])) + ((s[4][c] + s[5][c]) + (s[6][c] + s[7][c]));
        double y = v[c] + t;
        if (fabs(v[c]) >= fabs(t)) comp[c] += (v[c] - y) + t;
        else comp[c] += (t - y) + v[c];
        v[c] = y;
      }
    }
    for (int64_t c = 0; c < nc; c++) {
      double r = isfinite(v[c]) ? v[c] + comp[c] : v[c];
      if (j->op == MT_OP_MEAN) r /= (double)rows;
      store_d(j->out_dt, j->out_data + (c0 + c) * j->ost_out[0], 0, 1, &r);
    }
  }
}
static int colsum_fast(red_job *j) {
  if ((j->op != MT_OP_SUM && j->op != MT_OP_MEAN) || j->isint) return 0;
  if (j->in_dt != MT_FLOAT32 && j->in_dt != MT_FLOAT64 && !mt_is_reduced_float(j->in_dt)) return 0;
  int64_t isz = (int64_t)mt_itemsize(j->in_dt);
  if (j->ond != 1 || j->ost_in[0] != isz || j->inner.nd != 1 || j->inner.st[0] == isz || j->inner.numel < 2 ||
      j->nout < 8)
    return 0;
  /* run_reduction splits the rows of each output into parts (another order) when there are few outputs */
  int nt = mt_get_num_threads();
  double total = (double)j->inner.numel * (double)j->nout;
  if (!(total < 2.0 * MT_GRAIN || nt <= 1) && !(j->nout >= 8 * nt || j->inner.numel < 2 * MT_GRAIN)) return 0;
  colsum_job cj = {j};
  int64_t blocks = (j->nout + COLS - 1) / COLS;
  int64_t grain = MT_GRAIN / (COLS * j->inner.numel);
  mt_parallel_for(blocks, grain < 1 ? 1 : grain, colsum_run, &cj);
  return 1;
}
#undef COLS

static void run_reduction(red_job *j) {
  int64_t nred = j->inner.numel, nout = j->nout;
  if (nout == 0) return;
  if (colsum_fast(j)) return;
  double total = (double)nred * (double)nout;
  if (total < 2.0 * MT_GRAIN || mt_get_num_threads() <= 1) {
    outer_run(j, 0, nout);
  } else if (nout >= 8 * mt_get_num_threads() || nred < 2 * MT_GRAIN) {
    int64_t grain = nred > 0 ? MT_GRAIN / nred : MT_GRAIN;
    mt_parallel_for(nout, grain < 1 ? 1 : grain, outer_run, j);
  } else {
    for (int64_t o = 0; o < nout; o++) {
      const char *in;
      char *out;
      outer_ptrs(j, o, &in, &out);
      reduce_one(j, in, out, 1);
    }
  }
}

/* The inner/outer geometry of a reduction over `mask`. */
static void plan(red_job *j, const mt_tensor *a, const bool *mask) {
  int nd = a->_ndim, ri = 0;
  int64_t isz = (int64_t)mt_itemsize(a->_dtype);
  int64_t rs[MT_MAX_DIMS], rst[MT_MAX_DIMS];
  j->ond = 0;
  for (int d = 0; d < nd; d++) {
    if (mask[d]) {
      if (a->_sizes[d] != 1) {
        rs[ri] = a->_sizes[d];
        rst[ri] = a->_strides[d] * isz;
        ri++;
      }
    } else {
      j->osize[j->ond] = a->_sizes[d];
      j->ost_in[j->ond] = a->_strides[d] * isz;
      j->ond++;
    }
  }
  /* inner: sort by |stride| ascending (insertion sort, stable), then merge neighbours */
  for (int x = 1; x < ri; x++) {
    int64_t s = rs[x], t = rst[x];
    int y = x - 1;
    while (y >= 0 && llabs(rst[y]) > llabs(t)) {
      rs[y + 1] = rs[y];
      rst[y + 1] = rst[y];
      y--;
    }
    rs[y + 1] = s;
    rst[y + 1] = t;
  }
  geom *g = &j->inner;
  g->nd = 0;
  g->numel = 1;
  for (int x = 0; x < ri; x++) {
    g->numel *= rs[x];
    if (g->nd > 0 && rst[x] == g->st[g->nd - 1] * g->size[g->nd - 1]) {
      g->size[g->nd - 1] *= rs[x];
    } else {
      g->size[g->nd] = rs[x];
      g->st[g->nd] = rst[x];
      g->nd++;
    }
  }
  j->nout = 1;
  for (int d = 0; d < j->ond; d++) j->nout *= j->osize[d];
}

/* out strides for the outer dims of result r */
static void plan_out(red_job *j, const mt_tensor *r, const bool *mask, int nd, int keepdim) {
  int64_t isz = (int64_t)mt_itemsize(r->_dtype);
  int k = 0, rd = 0;
  for (int d = 0; d < nd; d++) {
    if (mask[d]) {
      if (keepdim) rd++;
    } else {
      j->ost_out[k++] = r->_strides[rd] * isz;
      rd++;
    }
  }
  j->in_data = NULL;
  j->out_data = r->_data;
}

/* ---------------------------------------------------------------- max/min with indices */
/* index of the first extreme of n elements (the first NaN, if any) */
#define X(DT, T, LOAD, STORE)                                                   \
  static int64_t ext_##DT(const char *p, int64_t st, int64_t n, int is_min) {   \
    T x = *(const T *)p;                                                        \
    __typeof__(LOAD) best = (LOAD);                                             \
    int64_t bi = 0;                                                             \
    if (best != best) return 0;                                                 \
    for (int64_t i = 1; i < n; i++) {                                           \
      x = *(const T *)(p + i * st);                                             \
      __typeof__(LOAD) v = (LOAD);                                              \
      if (v != v) return i;                                                     \
      if (is_min ? v < best : v > best) { best = v; bi = i; }                   \
    }                                                                           \
    return bi;                                                                  \
  }
MT_FOREACH_DTYPE(X)
#undef X

static int64_t extreme(int dt, const char *p, int64_t st, int64_t n, int is_min) {
  switch (dt) {
#define X(DT, T, LOAD, STORE) case DT: return ext_##DT(p, st, n, is_min);
    MT_FOREACH_DTYPE(X)
#undef X
    default: return 0;
  }
}

typedef struct {
  const mt_tensor *a;
  int dim;
  int ond;
  int64_t osize[MT_MAX_DIMS], ost_in[MT_MAX_DIMS], ost_v[MT_MAX_DIMS], ost_i[MT_MAX_DIMS];
  char *vdata, *idata;
  int64_t n, st, base;
  int is_min;
  size_t isz;
} ext_job;

static void ext_run(void *ctx, int64_t b, int64_t e) {
  const ext_job *j = ctx;
  for (int64_t o = b; o < e; o++) {
    const char *pi = j->a->_data;
    char *pv = j->vdata, *px = j->idata;
    int64_t r = o;
    for (int d = j->ond - 1; d >= 0; d--) {
      int64_t i = r % j->osize[d];
      r /= j->osize[d];
      pi += i * j->ost_in[d];
      if (pv) pv += i * j->ost_v[d];
      px += i * j->ost_i[d];
    }
    int64_t k = extreme(j->a->_dtype, pi, j->st, j->n, j->is_min);
    if (pv) memcpy(pv, pi + k * j->st, j->isz);
    *(int64_t *)px = k + j->base;
  }
}

/* ---------------------------------------------------------------- lines along one dim */
/* cumsum/cumprod and softmax work line by line: every line along `dim` is loaded into a buffer,
 * transformed, and stored. */
typedef struct {
  const mt_tensor *a;
  mt_tensor *r;
  int dim; /* wrapped; -1 for a 0-dim tensor */
  int64_t n, st_in, st_out; /* line length and strides (bytes) */
  int ond;
  int64_t osize[MT_MAX_DIMS], ost_in[MT_MAX_DIMS], ost_out[MT_MAX_DIMS];
  int kind;  /* 0 cumsum, 1 cumprod, 2 softmax, 3 log_softmax */
  int isint;
  int failed;
} line_job;

static void line_run(void *ctx, int64_t b, int64_t e) {
  line_job *j = ctx;
  int64_t n = j->n;
  void *buf = malloc((size_t)(n > 0 ? n : 1) * 8);
  if (!buf) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t o = b; o < e; o++) {
    const char *pi = j->a->_data;
    char *po = j->r->_data;
    int64_t rem = o;
    for (int d = j->ond - 1; d >= 0; d--) {
      int64_t i = rem % j->osize[d];
      rem /= j->osize[d];
      pi += i * j->ost_in[d];
      po += i * j->ost_out[d];
    }
    if (j->isint) {
      int64_t *x = buf;
      load_i(j->a->_dtype, pi, j->st_in, n, x);
      uint64_t acc = j->kind == 1 ? 1 : 0;
      for (int64_t i = 0; i < n; i++) {
        acc = j->kind == 1 ? acc * (uint64_t)x[i] : acc + (uint64_t)x[i];
        x[i] = (int64_t)acc;
      }
      store_i(j->r->_dtype, po, j->st_out, n, x);
    } else {
      double *x = buf;
      load_d(j->a->_dtype, pi, j->st_in, n, x);
      if (j->kind == 0) {
        double acc = 0;
        for (int64_t i = 0; i < n; i++) { acc += x[i]; x[i] = acc; }
      } else if (j->kind == 1) {
        double acc = 1;
        for (int64_t i = 0; i < n; i++) { acc *= x[i]; x[i] = acc; }
      } else {
        double m = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
          if (x[i] != x[i]) { m = x[i]; break; }
          if (x[i] > m) m = x[i];
        }
        double s = 0;
        /* float results take expf (as PyTorch computes them in float); sums stay in double */
        bool f32 = j->r->_dtype != MT_FLOAT64;
        if (j->kind == 2) {
          if (f32)
            for (int64_t i = 0; i < n; i++) { x[i] = expf((float)(x[i] - m)); s += x[i]; }
          else
            for (int64_t i = 0; i < n; i++) { x[i] = exp(x[i] - m); s += x[i]; }
          double inv = 1.0 / s;
          for (int64_t i = 0; i < n; i++) x[i] *= inv;
        } else {
          if (f32)
            for (int64_t i = 0; i < n; i++) s += expf((float)(x[i] - m));
          else
            for (int64_t i = 0; i < n; i++) s += exp(x[i] - m);
          /* (x - m) - log(s), as PyTorch: x - (m + log(s)) loses log(s) where |m| is huge */
          double ls = log(s);
          for (int64_t i = 0; i < n; i++) x[i] = (x[i] - m) - ls;
        }
      }
      store_d(j->r->_dtype, po, j->st_out, n, x);
    }
  }
  free(buf);
}

static mt_status run_lines(const mt_tensor *a, int w, mt_tensor *r, int kind, int isint, const char *name) {
  line_job j;
  memset(&j, 0, sizeof j);
  j.a = a;
  j.r = r;
  j.kind = kind;
  j.isint = isint;
  int nd = a->_ndim;
  int64_t ia = (int64_t)mt_itemsize(a->_dtype), ir = (int64_t)mt_itemsize(r->_dtype);
  j.n = nd ? a->_sizes[w] : 1;
  j.st_in = nd ? a->_strides[w] * ia : 0;
  j.st_out = nd ? r->_strides[w] * ir : 0;
  int64_t nlines = 1;
  for (int d = 0; d < nd; d++) {
    if (d == w) continue;
    j.osize[j.ond] = a->_sizes[d];
    j.ost_in[j.ond] = a->_strides[d] * ia;
    j.ost_out[j.ond] = r->_strides[d] * ir;
    j.ond++;
    nlines *= a->_sizes[d];
  }
  if (nlines == 0 || j.n == 0) return MT_OK;
  int64_t grain = MT_GRAIN / j.n;
  mt_parallel_for(nlines, grain < 1 ? 1 : grain, line_run, &j);
  if (j.failed) return mt_error(MT_ENOMEM, "%s: out of memory for a line of %lld elements", name, (long long)j.n);
  return MT_OK;
}

typedef struct {
  int dt;
  double rtol, atol;
  int equal_nan;
} close_ctx;

static void close_loop(void *ctx_, char **p, const int64_t *st, int64_t n) {
  const close_ctx *c = ctx_;
  bool isint = !mt_is_float(c->dt);
  for (int64_t k = 0; k < n; k += BUF) {
    int64_t m = n - k < BUF ? n - k : BUF;
    uint8_t *o = (uint8_t *)(p[0] + k * st[0]);
    const char *pa = p[1] + k * st[1], *pb = p[2] + k * st[2];
    if (isint) {
      int64_t x[BUF], y[BUF];
      load_i(c->dt, pa, st[1], m, x);
      load_i(c->dt, pb, st[2], m, y);
      for (int64_t i = 0; i < m; i++) {
        bool r = x[i] == y[i];
        if (!r && (c->rtol != 0 || c->atol != 0)) {
          double diff = fabs((double)x[i] - (double)y[i]);
          r = diff <= c->atol + fabs(c->rtol * (double)y[i]);
        }
        o[i * st[0]] = r;
      }
    } else {
      double x[BUF], y[BUF];
      load_d(c->dt, pa, st[1], m, x);
      load_d(c->dt, pb, st[2], m, y);
      for (int64_t i = 0; i < m; i++) {
        double a = x[i], b = y[i];
        bool r = a == b;
        if (!r && c->equal_nan && a != a && b != b) r = true;
        if (!r && (c->rtol != 0 || c->atol != 0)) {
          double diff = fabs(a - b);
          r = isfinite(diff) && diff <= c->atol + fabs(c->rtol * b);
        }
        o[i * st[0]] = r;
      }
    }
  }
}


/* ---------------------------------------------------------------- the kernels */
/* Sum, prod and nansum accumulate in int64 for integer results; the ops that keep the input's
 * values (amax, amin, all, any, count_nonzero) for integer inputs; the rest in double. */
static int in_int64(mt_op op, int in_dt, int out_dt) {
  switch (op) {
    case MT_OP_SUM: case MT_OP_PROD: case MT_OP_NANSUM: return !mt_is_float(out_dt);
    case MT_OP_AMAX: case MT_OP_AMIN: case MT_OP_ALL: case MT_OP_ANY: case MT_OP_COUNT_NONZERO:
      return !mt_is_float(in_dt);
    default: return 0;
  }
}

mt_status mt_cpu_reduce(mt_op op, mt_tensor *out, const mt_tensor *a, const bool *mask, int keepdim, double p) {
  red_job j;
  memset(&j, 0, sizeof j);
  j.op = op;
  j.isint = in_int64(op, a->_dtype, out->_dtype);
  j.p = p;
  j.in_dt = a->_dtype;
  j.out_dt = out->_dtype;
  plan(&j, a, mask);
  plan_out(&j, out, mask, a->_ndim, keepdim);
  j.in_data = a->_data;
  run_reduction(&j);
  return MT_OK;
}

mt_status mt_cpu_reduce_index(mt_tensor *v, mt_tensor *ix, const mt_tensor *a, int w, int keepdim, int is_min,
                              int64_t index_base) {
  int nd = a->_ndim;
  int64_t n = nd ? a->_sizes[w] : 1;
  ext_job j;
  memset(&j, 0, sizeof j);
  int rd = 0;
  for (int d = 0; d < nd; d++) {
    if (d == w) {
      if (keepdim) rd++;
      continue;
    }
    j.osize[j.ond] = a->_sizes[d];
    j.ost_in[j.ond] = a->_strides[d] * (int64_t)mt_itemsize(a->_dtype);
    j.ost_v[j.ond] = v ? v->_strides[rd] * (int64_t)mt_itemsize(a->_dtype) : 0;
    j.ost_i[j.ond] = ix->_strides[rd] * 8;
    j.ond++;
    rd++;
  }
  j.a = a;
  j.vdata = v ? v->_data : NULL;
  j.idata = ix->_data;
  j.n = n;
  j.st = nd ? a->_strides[w] * (int64_t)mt_itemsize(a->_dtype) : 0;
  j.base = index_base;
  j.is_min = is_min;
  j.isz = mt_itemsize(a->_dtype);
  int64_t nout = ix->_numel;
  int64_t grain = MT_GRAIN / n;
  mt_parallel_for(nout, grain < 1 ? 1 : grain, ext_run, &j);
  return MT_OK;
}

mt_status mt_cpu_cumulative(mt_tensor *out, const mt_tensor *a, int dim, int is_prod) {
  return run_lines(a, dim, out, is_prod, !mt_is_float(out->_dtype), is_prod ? "cumprod" : "cumsum");
}

mt_status mt_cpu_softmax(mt_tensor *out, const mt_tensor *a, int dim, int log) {
  mt_status s; /* s6-vec: float32 with the vector kernels of softmax.c */
  if (mt_cpu_softmax_vec(out, a, dim, log, &s)) return s;
  return run_lines(a, dim, out, log ? 3 : 2, 0, log ? "log_softmax" : "softmax");
}

mt_status mt_cpu_isclose(mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double rtol, double atol,
                         int equal_nan) {
  const mt_tensor *ops[3] = {out, a, b};
  mt_iter it;
  mt_iter_init(&it, ops, 3, out->_sizes, out->_ndim);
  close_ctx c = {a->_dtype, rtol, atol, equal_nan};
  mt_iter_run(&it, close_loop, &c, MT_GRAIN);
  return MT_OK;
}
