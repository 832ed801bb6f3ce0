/* norm.c -- the CPU's layer norm kernels (issue 12, the modules part): each of m contiguous rows
 * of n elements normalised by its own mean and biased variance, then scaled and shifted by the
 * per-element weight and bias; and its backward. Statistics accumulate in double for every
 * dtype (two passes: the mean, then the squared deviations). Rows run in parallel; the backward's
 * weight and bias gradients, sums over rows, are summed per chunk of rows and then chunk by
 * chunk in order, so the result does not depend on the thread count. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

/* the row loops are built twice, for AVX2+FMA and for the baseline, the CPU's picked as the
 * library loads (GCC's function multiversioning) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MT_LN_CLONES __attribute__((target_clones("avx2,fma", "default")))
#else
#define MT_LN_CLONES
#endif

typedef struct ln_job {
  char *out, *mean, *rstd;
  const char *x, *w, *b, *g;
  char *gx;
  double *part; /* backward: per chunk, n weight-gradient sums then n bias-gradient sums */
  int64_t m, n, rows_per_chunk;
  double eps;
  int want_gw, want_gb;
} ln_job;

/* Row sums in double with eight independent accumulators (so that the compiler can vectorise
 * them: a single accumulator is one long chain of dependent additions). */
#define LN_SUMS(T)                                                                                \
  static inline double ln_sum_##T(const T *restrict x, int64_t n) {                               \
    double a[8] = {0};                                                                            \
    int64_t i = 0;                                                                                \
    for (; i + 8 <= n; i += 8)                                                                    \
      for (int l = 0; l < 8; l++) a[l] += (double)x[i + l];                                       \
    double s = 0;                                                                                 \
    for (; i < n; i++) s += (double)x[i];                                                         \
    return s + ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                 \
  }                                                                                               \
  static inline double ln_sqdev_##T(const T *restrict x, int64_t n, double mu) {                  \
    double a[8] = {0};                                                                            \
    int64_t i = 0;                                                                                \
    for (; i + 8 <= n; i += 8)                                                                    \
      for (int l = 0; l < 8; l++) {                                                               \
        double d = (double)x[i + l] - mu;                                                         \
        a[l] += d * d;                                                                            \
      }                                                                                           \
    double s = 0;                                                                                 \
    for (; i < n; i++) {                                                                          \
      double d = (double)x[i] - mu;                                                               \
      s += d * d;                                                                                 \
    }                                                                                             \
    return s + ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                 \
  }                                                                                               \
  /* sum of g * w (w NULL: 1) and of g * w * (x - mu) */                                          \
  static inline void ln_dots_##T(const T *restrict g, const T *restrict w, const T *restrict x,   \
                                 int64_t n, double mu, double *sg, double *sgx) {                 \
    double a[8] = {0}, c[8] = {0};                                                                \
    int64_t i = 0;                                                                                \
    for (; i + 8 <= n; i += 8)                                                                    \
      for (int l = 0; l < 8; l++) {                                                               \
        double gh = (double)g[i + l] * (w ? (double)w[i + l] : 1.0);                              \
        a[l] += gh;                                                                               \
        c[l] += gh * ((double)x[i + l] - mu);                                                     \
      }                                                                                           \
    double s = 0, t = 0;                                                                          \
    for (; i < n; i++) {                                                                          \
      double gh = (double)g[i] * (w ? (double)w[i] : 1.0);                                        \
      s += gh;                                                                                    \
      t += gh * ((double)x[i] - mu);                                                              \
    }                                                                                             \
    *sg = s + ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                  \
    *sgx = t + ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));                 \
  }
LN_SUMS(float)
LN_SUMS(double)

#define LN_FORWARD(T)                                                                             \
  MT_LN_CLONES static void ln_forward_##T(void *ctx, int64_t r0, int64_t r1) {                                 \
    const ln_job *j = ctx;                                                                        \
    const int64_t n = j->n;                                                                       \
    const T *restrict w = (const T *)j->w, *restrict b = (const T *)j->b;                         \
    for (int64_t r = r0; r < r1; r++) {                                                           \
      const T *restrict x = (const T *)j->x + r * n;                                              \
      T *restrict y = (T *)j->out + r * n;                                                        \
      double mu = n ? ln_sum_##T(x, n) / (double)n : 0;                                           \
      double v = n ? ln_sqdev_##T(x, n, mu) / (double)n : 0;                                      \
      double rs = 1.0 / sqrt(v + j->eps);                                                         \
      const T tm = (T)mu, tr = (T)rs;                                                             \
      if (w && b)                                                                                 \
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - tm) * tr * w[i] + b[i];                    \
      else if (w)                                                                                 \
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - tm) * tr * w[i];                           \
      else if (b)                                                                                 \
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - tm) * tr + b[i];                           \
      else                                                                                        \
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - tm) * tr;                                  \
      if (j->mean) ((T *)j->mean)[r] = tm;                                                        \
      if (j->rstd) ((T *)j->rstd)[r] = tr;                                                        \
    }                                                                                             \
  }
LN_FORWARD(float)
LN_FORWARD(double)

static int64_t ln_grain(int64_t n) { return n >= MT_GRAIN ? 1 : MT_GRAIN / (n ? n : 1); }

mt_status mt_cpu_layer_norm(mt_tensor *out, mt_tensor *mean, mt_tensor *rstd, const mt_tensor *x, const mt_tensor *w,
                            const mt_tensor *b, int64_t m, int64_t n, double eps) {
  ln_job j = {.out = out->_data, .mean = mean ? mean->_data : NULL, .rstd = rstd ? rstd->_data : NULL,
              .x = x->_data, .w = w ? w->_data : NULL, .b = b ? b->_data : NULL, .m = m, .n = n, .eps = eps};
  mt_range_fn fn = x->_dtype == MT_FLOAT32 ? ln_forward_float : ln_forward_double;
  int64_t grain = ln_grain(n);
  if (m >= 2 * grain) mt_parallel_for(m, grain, fn, &j);
  else fn(&j, 0, m);
  return MT_OK;
}

/* rows [c * rows_per_chunk, ...) of chunk c: the input gradient of each row, and the chunk's sums
 * of g * xhat (weight) and g (bias) per element */
#define LN_BACKWARD(T)                                                                                 \
  MT_LN_CLONES static void ln_backward_##T(void *ctx, int64_t c0, int64_t c1) {                                     \
    const ln_job *j = ctx;                                                                             \
    const int64_t n = j->n;                                                                            \
    const T *restrict w = (const T *)j->w;                                                             \
    for (int64_t c = c0; c < c1; c++) {                                                                \
      int64_t r0 = c * j->rows_per_chunk, r1 = r0 + j->rows_per_chunk;                                 \
      if (r1 > j->m) r1 = j->m;                                                                        \
      double *restrict pw = j->part ? j->part + c * 2 * n : NULL, *restrict pb = pw ? pw + n : NULL;   \
      if (pw)                                                                                          \
        for (int64_t i = 0; i < 2 * n; i++) pw[i] = 0;                                                 \
      for (int64_t r = r0; r < r1; r++) {                                                              \
        const T *restrict x = (const T *)j->x + r * n, *restrict g = (const T *)j->g + r * n;          \
        const double mu = (double)((const T *)j->mean)[r], rs = (double)((const T *)j->rstd)[r];       \
        if (j->gx) {                                                                                   \
          double sg, sgx;                                                                              \
          ln_dots_##T(g, w, x, n, mu, &sg, &sgx);                                                      \
          /* dx = rs * (gh - mean(gh) - xhat * mean(gh * xhat)), xhat = (x - mu) * rs */               \
          const T a = (T)(sg / (double)n), k = (T)(sgx / (double)n * rs * rs), trs = (T)rs, tm = (T)mu; \
          T *restrict gx = (T *)j->gx + r * n;                                                         \
          if (w)                                                                                       \
            for (int64_t i = 0; i < n; i++) gx[i] = trs * (g[i] * w[i] - a - (x[i] - tm) * k);         \
          else                                                                                         \
            for (int64_t i = 0; i < n; i++) gx[i] = trs * (g[i] - a - (x[i] - tm) * k);                \
        }                                                                                              \
        if (j->want_gw)                                                                                \
          for (int64_t i = 0; i < n; i++) pw[i] += (double)g[i] * (((double)x[i] - mu) * rs);          \
        if (j->want_gb)                                                                                \
          for (int64_t i = 0; i < n; i++) pb[i] += (double)g[i];                                       \
      }                                                                                                \
    }                                                                                                  \
  }
LN_BACKWARD(float)
LN_BACKWARD(double)

mt_status mt_cpu_layer_norm_backward(mt_tensor *gx, mt_tensor *gw, mt_tensor *gb, const mt_tensor *g,
                                     const mt_tensor *x, const mt_tensor *mean, const mt_tensor *rstd,
                                     const mt_tensor *w, int64_t m, int64_t n) {
  int64_t grain = ln_grain(n);
  int64_t rows_per_chunk = grain;
  if (m < 2 * grain) rows_per_chunk = m ? m : 1;
  int64_t chunks = m ? (m + rows_per_chunk - 1) / rows_per_chunk : 0;
  ln_job j = {.x = x->_data, .g = g->_data, .mean = mean->_data, .rstd = rstd->_data, .w = w ? w->_data : NULL,
              .gx = gx ? gx->_data : NULL, .m = m, .n = n, .rows_per_chunk = rows_per_chunk,
              .want_gw = gw != NULL, .want_gb = gb != NULL};
  if (gw || gb) {
    j.part = malloc(sizeof(double) * (size_t)(chunks ? chunks : 1) * 2 * (size_t)(n ? n : 1));
    if (!j.part) return mt_error(MT_ENOMEM, "layer_norm_backward: out of memory (%lld floats of scratch space)",
                                 (long long)(chunks * 2 * n));
  }
  mt_range_fn fn = x->_dtype == MT_FLOAT32 ? ln_backward_float : ln_backward_double;
  if (chunks > 1) mt_parallel_for(chunks, 1, fn, &j);
  else if (chunks == 1) fn(&j, 0, 1);
  if (gw || gb) {
    for (int k = 0; k < 2; k++) {
      mt_tensor *t = k == 0 ? gw : gb;
      if (!t) continue;
      for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int64_t c = 0; c < chunks; c++) s += j.part[c * 2 * n + k * n + i];
        if (t->_dtype == MT_FLOAT32) ((float *)t->_data)[i] = (float)s;
        else ((double *)t->_data)[i] = s;
      }
    }
    free(j.part);
  }
  return MT_OK;
}
