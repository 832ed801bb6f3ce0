/* norm.c -- the CPU's layer norm kernels (issue 12, the modules part): each of m contiguous rows
 * of n elements normalised by its own mean and biased variance, then scaled and shifted by the
 * per-element weight and bias; and its backward. Statistics accumulate in double for every
 * dtype (two passes: the mean, then the squared deviations). Rows run in parallel; the backward's
 * weight and bias gradients, sums over rows, are summed per chunk of rows and then chunk by
 * chunk in order, so the result does not depend on the thread count. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Row sums in double over vectors of four lanes, two vectors at a time (GCC's vector extensions:
 * AVX registers in the AVX2 build, pairs of SSE ones in the baseline; a single scalar accumulator
 * would be one long chain of dependent additions). */
/* (the helpers are inlined into each clone: no vector crosses a call, whatever -Wpsabi fears) */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float ln_v4f __attribute__((vector_size(16)));
typedef double ln_v4d __attribute__((vector_size(32)));
static inline ln_v4d ln_ld4_float(const float *p) {
  ln_v4f v;
  memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, ln_v4d);
}
static inline ln_v4d ln_ld4_double(const double *p) {
  ln_v4d v;
  memcpy(&v, p, sizeof v);
  return v;
}
/* by pointer: a 32-byte vector passed by value draws GCC's -Wpsabi note on targets without AVX */
static inline double ln_hsum(const ln_v4d *a, const ln_v4d *b) {
  ln_v4d c = *a + *b;
  return (c[0] + c[1]) + (c[2] + c[3]);
}

#define LN_SUMS(T)                                                                                \
  static inline double ln_sum_##T(const T *restrict x, int64_t n) {                               \
    ln_v4d a = {0, 0, 0, 0}, b = {0, 0, 0, 0};                                                    \
    int64_t i = 0;                                                                                \
    for (; i + 8 <= n; i += 8) {                                                                  \
      a += ln_ld4_##T(x + i);                                                                     \
      b += ln_ld4_##T(x + i + 4);                                                                 \
    }                                                                                             \
    double s = 0;                                                                                 \
    for (; i < n; i++) s += (double)x[i];                                                         \
    return s + ln_hsum(&a, &b);                                                                  \
  }                                                                                               \
  static inline double ln_sqdev_##T(const T *restrict x, int64_t n, double mu) {                  \
    ln_v4d a = {0, 0, 0, 0}, b = {0, 0, 0, 0}, m = {mu, mu, mu, mu};                              \
    int64_t i = 0;                                                                                \
    for (; i + 8 <= n; i += 8) {                                                                  \
      ln_v4d d = ln_ld4_##T(x + i) - m, e = ln_ld4_##T(x + i + 4) - m;                            \
      a += d * d;                                                                                 \
      b += e * e;                                                                                 \
    }                                                                                             \
    double s = 0;                                                                                 \
    for (; i < n; i++) {                                                                          \
      double d = (double)x[i] - mu;                                                               \
      s += d * d;                                                                                 \
    }                                                                                             \
    return s + ln_hsum(&a, &b);                                                                  \
  }                                                                                               \
  /* sum of g * w (w NULL: 1) and of g * w * (x - mu) */                                          \
  static inline void ln_dots_##T(const T *restrict g, const T *restrict w, const T *restrict x,   \
                                 int64_t n, double mu, double *sg, double *sgx) {                 \
    ln_v4d a = {0, 0, 0, 0}, c = {0, 0, 0, 0}, m = {mu, mu, mu, mu};                              \
    int64_t i = 0;                                                                                \
    for (; i + 4 <= n; i += 4) {                                                                  \
      ln_v4d gh = w ? ln_ld4_##T(g + i) * ln_ld4_##T(w + i) : ln_ld4_##T(g + i);                  \
      a += gh;                                                                                    \
      c += gh * (ln_ld4_##T(x + i) - m);                                                          \
    }                                                                                             \
    double s = 0, t = 0;                                                                          \
    for (; i < n; i++) {                                                                          \
      double gh = (double)g[i] * (w ? (double)w[i] : 1.0);                                        \
      s += gh;                                                                                    \
      t += gh * ((double)x[i] - mu);                                                              \
    }                                                                                             \
    *sg = s + (a[0] + a[1]) + (a[2] + a[3]);                                                      \
    *sgx = t + (c[0] + c[1]) + (c[2] + c[3]);                                                     \
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
        const T trs = (T)rs, tm = (T)mu;                                                               \
        if (j->gx) {                                                                                   \
          double sg, sgx;                                                                              \
          ln_dots_##T(g, w, x, n, mu, &sg, &sgx);                                                      \
          /* dx = rs * (gh - mean(gh) - xhat * mean(gh * xhat)), xhat = (x - mu) * rs */               \
          const T a = (T)(sg / (double)n), k = (T)(sgx / (double)n * rs * rs);                         \
          T *restrict gx = (T *)j->gx + r * n;                                                         \
          if (w && j->want_gw && j->want_gb) {                                                         \
            /* the usual case (affine, everything wanted): one pass */                                 \
            for (int64_t i = 0; i < n; i++) {                                                          \
              const T xc = x[i] - tm;                                                                  \
              gx[i] = trs * (g[i] * w[i] - a - xc * k);                                                \
              pw[i] += (double)(g[i] * (xc * trs));                                                    \
              pb[i] += (double)g[i];                                                                   \
            }                                                                                          \
            continue;                                                                                  \
          }                                                                                            \
          if (w)                                                                                       \
            for (int64_t i = 0; i < n; i++) gx[i] = trs * (g[i] * w[i] - a - (x[i] - tm) * k);         \
          else                                                                                         \
            for (int64_t i = 0; i < n; i++) gx[i] = trs * (g[i] - a - (x[i] - tm) * k);                \
        }                                                                                              \
        /* the weight and bias sums (xhat in T, as the forward's output used it) */                  \
        if (j->want_gw && j->want_gb)                                                                  \
          for (int64_t i = 0; i < n; i++) {                                                            \
            pw[i] += (double)(g[i] * ((x[i] - tm) * trs));                                             \
            pb[i] += (double)g[i];                                                                     \
          }                                                                                            \
        else if (j->want_gw)                                                                           \
          for (int64_t i = 0; i < n; i++) pw[i] += (double)(g[i] * ((x[i] - tm) * trs));               \
        else if (j->want_gb)                                                                           \
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
