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
 * number of threads). */
#include "../grad/grad.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- names */
static const char *const reduce_names[] = {
#define X(NAME, name) #name,
    MT_REDUCE_OP_LIST(X)
#undef X
};
const char *mt_reduce_op_name(int op) { return op >= 0 && op < MT_REDUCE_OP_COUNT ? reduce_names[op] : "?"; }


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
      case MT_REDUCE_PROD: ps.c = C_MUL; break;
      case MT_REDUCE_AMAX: ps.c = C_MAX; break;
      case MT_REDUCE_AMIN: ps.c = C_MIN; break;
      case MT_REDUCE_ALL: ps.f = F_NONZERO; ps.c = C_AND; break;
      case MT_REDUCE_ANY: ps.f = F_NONZERO; ps.c = C_OR; break;
      case MT_REDUCE_COUNT_NONZERO: ps.f = F_NONZERO; break;
      default: break; /* sum, nansum */
    }
    int64_t v = pass_i(g, j->in_dt, in, &ps, par);
    store_i(j->out_dt, out, 0, 1, &v);
    return;
  }
  double v = 0;
  switch (j->op) {
    case MT_REDUCE_SUM: v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_REDUCE_NANSUM: ps.f = F_NAN0; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_REDUCE_MEAN: v = pass_d(g, j->in_dt, in, &ps, par) / n; break;
    case MT_REDUCE_PROD: ps.c = C_MUL; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_REDUCE_AMAX: ps.c = C_MAX; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_REDUCE_AMIN: ps.c = C_MIN; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_REDUCE_ALL: ps.f = F_NONZERO; ps.c = C_AND; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_REDUCE_ANY: ps.f = F_NONZERO; ps.c = C_OR; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_REDUCE_COUNT_NONZERO: ps.f = F_NONZERO; v = pass_d(g, j->in_dt, in, &ps, par); break;
    case MT_REDUCE_VAR:
    case MT_REDUCE_STD: {
      double mean = pass_d(g, j->in_dt, in, &ps, par) / n;
      ps.f = F_SQDEV;
      ps.center = mean;
      double m2 = pass_d(g, j->in_dt, in, &ps, par);
      double dof = n - j->p;
      if (dof < 0) dof = 0;
      v = m2 / dof;
      if (j->op == MT_REDUCE_STD) v = sqrt(v);
      break;
    }
    case MT_REDUCE_NORM: {
      double p = j->p;
      if (g->numel == 0) { v = 0; break; }
      norm_pass(p, &ps);
      v = pass_d(g, j->in_dt, in, &ps, par);
      if (p == 2) v = sqrt(v);
      else if (p != 0 && p != 1 && !isinf(p)) v = pow(v, 1.0 / p);
      break;
    }
    case MT_REDUCE_LOGSUMEXP: {
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

static void run_reduction(red_job *j) {
  int64_t nred = j->inner.numel, nout = j->nout;
  if (nout == 0) return;
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

/* Which dims of a are reduced: ndims == 0 means all. Records "<op>: ..." on failure. */
static mt_status parse_dims(const mt_tensor *a, const int64_t *dims, int ndims, const char *name, bool *mask) {
  int nd = a->_ndim;
  for (int d = 0; d < MT_MAX_DIMS; d++) mask[d] = false;
  if (ndims < 0 || ndims > MT_MAX_DIMS) return mt_error(MT_EINVAL, "%s: %d dimensions given", name, ndims);
  if (ndims == 0) {
    for (int d = 0; d < nd; d++) mask[d] = true;
    return MT_OK;
  }
  if (!dims) return mt_error(MT_EINVAL, "%s: dims is NULL", name);
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < -1000000 || dims[i] > 1000000)
      return mt_error(MT_ERANGE, "%s: dimension %lld out of range (expected to be in range of [%d, %d])", name,
                      (long long)dims[i], nd > 0 ? -nd : -1, nd > 0 ? nd - 1 : 0);
    int w;
    MT_TRY(mt_wrap_dim((int)dims[i], nd, name, &w));
    if (nd == 0) continue; /* a scalar: dim 0 / -1 reduce nothing */
    if (mask[w]) return mt_error(MT_EINVAL, "%s: dim %d appears multiple times in the list of dims", name, w);
    mask[w] = true;
  }
  return MT_OK;
}

/* Shape of the result and the inner/outer geometry of a reduction over `mask`. */
static void plan(red_job *j, const mt_tensor *a, const bool *mask, int keepdim, int64_t *osizes, int *ond_out) {
  int nd = a->_ndim, ond = 0, ri = 0;
  int64_t isz = (int64_t)mt_itemsize(a->_dtype);
  int64_t rs[MT_MAX_DIMS], rst[MT_MAX_DIMS];
  j->ond = 0;
  for (int d = 0; d < nd; d++) {
    if (mask[d]) {
      if (keepdim) osizes[ond++] = 1;
      if (a->_sizes[d] != 1) {
        rs[ri] = a->_sizes[d];
        rst[ri] = a->_strides[d] * isz;
        ri++;
      }
    } else {
      j->osize[j->ond] = a->_sizes[d];
      j->ost_in[j->ond] = a->_strides[d] * isz;
      j->ond++;
      osizes[ond++] = a->_sizes[d];
    }
  }
  *ond_out = ond;
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

static mt_status reduce_impl(int op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, int dtype, double p,
                             mt_tensor *out, mt_tensor **result, const char *name) {
  MT_TRY(mt_check_tensor(a, name, "input"));
  if (dtype >= 0 && !mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: unknown dtype %d", name, dtype);
  int in_dt = a->_dtype;
  bool in_float = mt_is_float(in_dt);
  int out_dt = in_dt, isint = 0;
  switch (op) {
    case MT_REDUCE_SUM:
    case MT_REDUCE_PROD:
    case MT_REDUCE_NANSUM:
      out_dt = dtype >= 0 ? dtype : (in_float ? in_dt : MT_INT64);
      isint = !mt_is_float(out_dt);
      break;
    case MT_REDUCE_MEAN:
      if (dtype >= 0 && !mt_is_float(dtype))
        return mt_error(MT_EDTYPE,
                        "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
                        "complex dtype. Got: %s",
                        mt_type_title(dtype));
      if (dtype < 0 && !in_float)
        return mt_error(MT_EDTYPE,
                        "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                        "complex dtype. Got: %s",
                        mt_type_title(in_dt));
      out_dt = dtype >= 0 ? dtype : in_dt;
      break;
    case MT_REDUCE_AMAX:
    case MT_REDUCE_AMIN:
      out_dt = dtype >= 0 ? dtype : in_dt;
      isint = !in_float;
      break;
    case MT_REDUCE_ALL:
    case MT_REDUCE_ANY:
      out_dt = dtype >= 0 ? dtype : (in_dt == MT_UINT8 ? MT_UINT8 : MT_BOOL);
      isint = !in_float;
      break;
    case MT_REDUCE_COUNT_NONZERO:
      out_dt = dtype >= 0 ? dtype : MT_INT64;
      isint = !in_float;
      break;
    case MT_REDUCE_VAR:
    case MT_REDUCE_STD:
      if (!in_float) return mt_error(MT_EDTYPE, "%s: std and var only support floating point and complex dtypes (got %s)", name, mt_dtype_name(in_dt));
      if (dtype >= 0 && !mt_is_float(dtype))
        return mt_error(MT_EDTYPE, "%s: the dtype must be a floating point dtype, got %s", name, mt_dtype_name(dtype));
      out_dt = dtype >= 0 ? dtype : in_dt;
      if (!(p >= 0) && !isnan(p)) return mt_error(MT_EINVAL, "%s: correction must be non-negative, got %g", name, p);
      break;
    case MT_REDUCE_NORM:
      if (!in_float)
        return mt_error(MT_EDTYPE, "norm(): input dtype should be either floating point or complex. Got %s instead.",
                        mt_type_title(in_dt));
      if (dtype >= 0 && !mt_is_float(dtype))
        return mt_error(MT_EDTYPE, "%s: the dtype must be a floating point dtype, got %s", name, mt_dtype_name(dtype));
      if (isnan(p)) return mt_error(MT_EINVAL, "%s: the order p must be a number, got nan", name);
      out_dt = dtype >= 0 ? dtype : in_dt;
      break;
    case MT_REDUCE_LOGSUMEXP:
      if (dtype >= 0 && !mt_is_float(dtype))
        return mt_error(MT_EDTYPE, "%s: the dtype must be a floating point dtype, got %s", name, mt_dtype_name(dtype));
      out_dt = dtype >= 0 ? dtype : (in_float ? in_dt : mt_get_default_dtype());
      break;
    default: return mt_error(MT_EINVAL, "reduce: unknown reduction op %d", op);
  }
  bool mask[MT_MAX_DIMS];
  MT_TRY(parse_dims(a, dims, ndims, name, mask));
  if (op == MT_REDUCE_AMAX || op == MT_REDUCE_AMIN) {
    if (a->_numel == 0 && (ndims == 0 || a->_ndim == 0))
      return mt_error(MT_ESHAPE,
                      "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                      "with the 'dim' argument.",
                      name);
    for (int d = 0; d < a->_ndim; d++)
      if (mask[d] && a->_sizes[d] == 0)
        return mt_error(MT_ESHAPE, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
  }
  red_job j;
  memset(&j, 0, sizeof j);
  j.op = op;
  j.isint = isint;
  j.p = p;
  j.in_dt = in_dt;
  j.out_dt = out_dt;
  int64_t osizes[MT_MAX_DIMS];
  int ond;
  plan(&j, a, mask, keepdim, osizes, &ond);
  mt_tensor *r = NULL;
  MT_TRY(mt_out_or_new(out, osizes, ond, out_dt, name, &r));
  plan_out(&j, r, mask, a->_ndim, keepdim);
  j.in_data = a->_data;
  if (out && mt_may_overlap(out, a)) {
    /* write into a fresh tensor, then copy */
    mt_tensor *tmp;
    mt_status s = mt_new(osizes, ond, out_dt, name, &tmp);
    if (s != MT_OK) { mt_tensor_release(r); return s; }
    plan_out(&j, tmp, mask, a->_ndim, keepdim);
    j.in_data = a->_data;
    run_reduction(&j);
    s = mt_copy_(r, tmp);
    mt_tensor_release(tmp);
    if (s != MT_OK) { mt_tensor_release(r); return s; }
  } else {
    run_reduction(&j);
  }
  if (out) mt_bump_version(r);
  return mt_give(r, result);
}

static mt_status pub_reduce(int op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, int dtype, double p,
                    mt_tensor *out, mt_tensor **result) {
  const char *name = mt_reduce_op_name(op);
  if (op < 0 || op >= MT_REDUCE_OP_COUNT) return mt_error(MT_EINVAL, "reduce: unknown reduction op %d", op);
  return reduce_impl(op, a, dims, ndims, keepdim, dtype, p, out, result, name);
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

static mt_status with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base, mt_tensor **values,
                            mt_tensor **indices, const char *name) {
  MT_TRY(mt_check_tensor(a, name, "input"));
  int w;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, name, &w));
  int nd = a->_ndim;
  int64_t n = nd ? a->_sizes[w] : 1;
  int64_t st = nd ? a->_strides[w] * (int64_t)mt_itemsize(a->_dtype) : 0;
  if (n == 0) return mt_error(MT_ESHAPE, "%s(): Expected reduction dim %d to have non-zero size.", name, w);
  int64_t osizes[MT_MAX_DIMS];
  int ond = 0;
  ext_job j;
  memset(&j, 0, sizeof j);
  for (int d = 0; d < nd; d++) {
    if (d == w) {
      if (keepdim) osizes[ond++] = 1;
    } else {
      osizes[ond++] = a->_sizes[d];
    }
  }
  mt_tensor *v = NULL, *ix = NULL;
  if (values) MT_TRY(mt_new(osizes, ond, a->_dtype, name, &v));
  mt_status s = mt_new(osizes, ond, MT_INT64, name, &ix);
  if (s != MT_OK) {
    if (v) mt_tensor_release(v);
    return s;
  }
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
  j.st = st;
  j.base = index_base;
  j.is_min = is_min;
  j.isz = mt_itemsize(a->_dtype);
  int64_t nout = ix->_numel;
  int64_t grain = MT_GRAIN / n;
  mt_parallel_for(nout, grain < 1 ? 1 : grain, ext_run, &j);
  if (values) *values = v;
  if (indices) *indices = ix;
  else mt_tensor_release(ix);
  return MT_OK;
}

static mt_status pub_reduce_with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                               mt_tensor **values, mt_tensor **indices) {
  return with_index(a, dim, keepdim, is_min, index_base, values, indices, is_min ? "min" : "max");
}

mt_status mt_argmax(mt_tensor *a, int dim, int flat, int keepdim, int is_min, int64_t index_base,
                    mt_tensor **result) {
  const char *name = is_min ? "argmin" : "argmax";
  MT_TRY(mt_check_tensor(a, name, "input"));
  if (!flat) return with_index(a, dim, keepdim, is_min, index_base, NULL, result, name);
  if (a->_numel == 0)
    return mt_error(MT_ESHAPE, "%s(): Expected reduction dim to be specified for input.numel() == 0.", name);
  mt_tensor *c;
  MT_TRY(mt_contiguous(a, &c));
  int64_t k = extreme(c->_dtype, c->_data, (int64_t)mt_itemsize(c->_dtype), c->_numel, is_min);
  mt_tensor_release(c);
  int64_t ones[MT_MAX_DIMS];
  for (int d = 0; d < a->_ndim; d++) ones[d] = 1;
  mt_tensor *r = NULL;
  MT_TRY(mt_new(ones, keepdim ? a->_ndim : 0, MT_INT64, name, &r));
  *(int64_t *)r->_data = k + index_base;
  return mt_give(r, result);
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
          double ls = log(s) + m;
          for (int64_t i = 0; i < n; i++) x[i] -= ls;
        }
      }
      store_d(j->r->_dtype, po, j->st_out, n, x);
    }
  }
  free(buf);
}

static mt_status run_lines(mt_tensor *a, int w, mt_tensor *r, int kind, int isint, const char *name) {
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

static mt_status pub_cumulative(mt_tensor *a, int dim, int is_prod, int dtype, mt_tensor *out, mt_tensor **result) {
  const char *name = is_prod ? "cumprod" : "cumsum";
  MT_TRY(mt_check_tensor(a, name, "input"));
  if (dtype >= 0 && !mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: unknown dtype %d", name, dtype);
  int w;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, name, &w));
  int out_dt = dtype >= 0 ? dtype : (mt_is_float(a->_dtype) ? a->_dtype : MT_INT64);
  mt_tensor *r = NULL;
  MT_TRY(mt_out_or_new(out, a->_sizes, a->_ndim, out_dt, name, &r));
  mt_status s;
  if (out && mt_may_overlap(out, a) && r->_data != a->_data) {
    mt_tensor *tmp = NULL;
    s = mt_new(a->_sizes, a->_ndim, out_dt, name, &tmp);
    if (s == MT_OK) s = run_lines(a, w, tmp, is_prod, !mt_is_float(out_dt), name);
    if (s == MT_OK) s = mt_copy_(r, tmp);
    if (tmp) mt_tensor_release(tmp);
  } else {
    s = run_lines(a, w, r, is_prod, !mt_is_float(out_dt), name);
  }
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  if (out) mt_bump_version(r);
  return mt_give(r, result);
}

static mt_status pub_softmax(mt_tensor *a, int dim, int log, int dtype, mt_tensor **result) {
  const char *name = log ? "log_softmax" : "softmax";
  MT_TRY(mt_check_tensor(a, name, "input"));
  if (dtype >= 0 && !mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: unknown dtype %d", name, dtype);
  int out_dt = dtype >= 0 ? dtype : a->_dtype;
  if (!mt_is_float(out_dt))
    return mt_error(MT_EDTYPE, "%s: expected a floating point tensor or dtype, got %s (PyTorch: not implemented for '%s')",
                    name, mt_dtype_name(out_dt), mt_type_title(out_dt));
  int w;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, name, &w));
  mt_tensor *r = NULL;
  MT_TRY(mt_new(a->_sizes, a->_ndim, out_dt, name, &r));
  mt_status s = run_lines(a, w, r, log ? 3 : 2, 0, name);
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- var_mean */
static mt_status pub_var_mean(mt_tensor *a, const int64_t *dims, int ndims, double correction, int keepdim, int take_sqrt,
                      mt_tensor **var, mt_tensor **mean) {
  const char *name = take_sqrt ? "std_mean" : "var_mean";
  MT_TRY(mt_check_tensor(a, name, "input"));
  if (!mt_is_float(a->_dtype))
    return mt_error(MT_EDTYPE, "%s: %s only support floating point and complex dtypes (got %s)", name, name,
                    mt_dtype_name(a->_dtype));
  mt_tensor *v, *m;
  MT_TRY(reduce_impl(take_sqrt ? MT_REDUCE_STD : MT_REDUCE_VAR, a, dims, ndims, keepdim, -1, correction, NULL, &v,
                     name));
  mt_status s = reduce_impl(MT_REDUCE_MEAN, a, dims, ndims, keepdim, -1, 0, NULL, &m, name);
  if (s != MT_OK) {
    mt_tensor_release(v);
    return s;
  }
  mt_give(v, var);
  mt_give(m, mean);
  return MT_OK;
}

/* ---------------------------------------------------------------- equal / isclose / allclose */
static mt_status all_true(mt_tensor *t, int *result, const char *name) {
  mt_tensor *r = NULL;
  MT_TRY(reduce_impl(MT_REDUCE_ALL, t, NULL, 0, 0, MT_BOOL, 0, NULL, &r, name));
  *result = *(uint8_t *)r->_data != 0;
  mt_tensor_release(r);
  return MT_OK;
}

mt_status mt_equal(mt_tensor *a, mt_tensor *b, int *result) {
  MT_TRY(mt_check_tensor(a, "equal", "input"));
  MT_TRY(mt_check_tensor(b, "equal", "other"));
  if (!result) return mt_error(MT_EINVAL, "equal: result is NULL");
  *result = 0;
  if (a->_ndim != b->_ndim) return MT_OK;
  for (int d = 0; d < a->_ndim; d++)
    if (a->_sizes[d] != b->_sizes[d]) return MT_OK;
  if (a->_numel == 0) {
    *result = 1;
    return MT_OK;
  }
  mt_tensor *eq;
  MT_TRY(mt_binary(MT_OP_EQ, a, b, NULL, &eq));
  mt_status s = all_true(eq, result, "equal");
  mt_tensor_release(eq);
  return s;
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

static mt_status isclose_impl(mt_tensor *a, mt_tensor *b, double rtol, double atol, int equal_nan, mt_tensor **result,
                              const char *name) {
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_tensor(b, name, "other"));
  if (a->_dtype != b->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected both tensors to have the same dtype, got %s and %s", name,
                    mt_dtype_name(a->_dtype), mt_dtype_name(b->_dtype));
  if (!(rtol >= 0)) return mt_error(MT_EINVAL, "%s: rtol must be greater than or equal to zero, but got %g", name, rtol);
  if (!(atol >= 0)) return mt_error(MT_EINVAL, "%s: atol must be greater than or equal to zero, but got %g", name, atol);
  int64_t shape[MT_MAX_DIMS];
  int nd;
  if (mt_broadcast_shapes(a->_sizes, a->_ndim, b->_sizes, b->_ndim, shape, &nd) != MT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", mt_last_error());
    return mt_error(MT_ESHAPE, "%s: %s (shapes %s and %s)", name, msg, MT_SHAPE(a), MT_SHAPE(b));
  }
  mt_tensor *r = NULL;
  MT_TRY(mt_new(shape, nd, MT_BOOL, name, &r));
  mt_tensor *ops[3] = {r, a, b};
  mt_iter it;
  mt_iter_init(&it, ops, 3, shape, nd);
  close_ctx c = {a->_dtype, rtol, atol, equal_nan};
  mt_iter_run(&it, close_loop, &c, MT_GRAIN);
  return mt_give(r, result);
}

mt_status mt_isclose(mt_tensor *a, mt_tensor *b, double rtol, double atol, int equal_nan, mt_tensor **result) {
  return isclose_impl(a, b, rtol, atol, equal_nan, result, "isclose");
}

mt_status mt_allclose(mt_tensor *a, mt_tensor *b, double rtol, double atol, int equal_nan, int *result) {
  if (!result) return mt_error(MT_EINVAL, "allclose: result is NULL");
  mt_tensor *c;
  MT_TRY(isclose_impl(a, b, rtol, atol, equal_nan, &c, "allclose"));
  mt_status s = all_true(c, result, "allclose");
  mt_tensor_release(c);
  return s;
}

/* ---------------------------------------------------------------- autograd entry points */
mt_status mt_reduce(int op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, int dtype, double p,
                    mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_reduce(op, a, dims, ndims, keepdim, dtype, p, out, result);
  MT_TRY(mt_grad_check_out(out, true, mt_reduce_op_name(op)));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(pub_reduce(op, a, dims, ndims, keepdim, dtype, p, NULL, &r)));
  mt_status s = mt_record_reduce(op, a, dims, ndims, keepdim, p, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_reduce_with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                               mt_tensor **values, mt_tensor **indices) {
  if (!a || !mt_grad_on1(a)) return pub_reduce_with_index(a, dim, keepdim, is_min, index_base, values, indices);
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(pub_reduce_with_index(a, dim, keepdim, is_min, index_base, &v, &i)));
  mt_tensor *i0 = NULL;
  int d = dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim;
  mt_status s = index_base ? MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i, (double)index_base, 1, 0, NULL, &i0))
                           : (i0 = mt_tensor_retain(i), MT_OK);
  if (s == MT_OK) s = mt_record_reduce_index(a, d, keepdim, is_min, i0, v);
  mt_tensor_release(i0);
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}

mt_status mt_softmax(mt_tensor *a, int dim, int log, int dtype, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_softmax(a, dim, log, dtype, result);
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(pub_softmax(a, dim, log, dtype, &r)));
  mt_status s = mt_record_softmax(a, dim, log, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_cumulative(mt_tensor *a, int dim, int is_prod, int dtype, mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on1(a)) return pub_cumulative(a, dim, is_prod, dtype, out, result);
  MT_TRY(mt_grad_check_out(out, true, is_prod ? "cumprod" : "cumsum"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(pub_cumulative(a, dim, is_prod, dtype, NULL, &r)));
  mt_status s = mt_record_cumulative(a, dim, is_prod, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_var_mean(mt_tensor *a, const int64_t *dims, int ndims, double correction, int keepdim, int take_sqrt,
                      mt_tensor **var, mt_tensor **mean) {
  if (!a || !mt_grad_on1(a)) return pub_var_mean(a, dims, ndims, correction, keepdim, take_sqrt, var, mean);
  mt_tensor *v = NULL, *m = NULL;
  MT_TRY(MT_NOGRAD(pub_var_mean(a, dims, ndims, correction, keepdim, take_sqrt, &v, &m)));
  mt_status s = mt_record_var_mean(a, dims, ndims, keepdim, correction, take_sqrt, v, m);
  if (s) { mt_tensor_release(v); mt_tensor_release(m); return s; }
  mt_give(v, var);
  return mt_give(m, mean);
}
