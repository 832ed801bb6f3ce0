/* norm.c -- the CPU's layer norm kernels (issue 12, the modules part): each of m contiguous rows
 * of n elements normalised by its own mean and biased variance, then scaled and shifted by the
 * per-element weight and bias; and its backward. Statistics accumulate in double for every
 * dtype (two passes: the mean, then the squared deviations). Rows run in parallel; the backward's
 * weight and bias gradients, sums over rows, are summed per chunk of rows and then chunk by
 * chunk in order, so the result does not depend on the thread count. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

typedef struct ln_job {
  char *out, *mean, *rstd;
  const char *x, *w, *b, *g;
  char *gx;
  double *part; /* backward: per chunk, n weight-gradient sums then n bias-gradient sums */
  int64_t m, n, rows_per_chunk;
  double eps;
  int want_gw, want_gb;
} ln_job;

#define LN_FORWARD(T)                                                                             \
  static void ln_forward_##T(void *ctx, int64_t r0, int64_t r1) {                                 \
    const ln_job *j = ctx;                                                                        \
    const int64_t n = j->n;                                                                       \
    const T *w = (const T *)j->w, *b = (const T *)j->b;                                           \
    for (int64_t r = r0; r < r1; r++) {                                                           \
      const T *x = (const T *)j->x + r * n;                                                       \
      T *y = (T *)j->out + r * n;                                                                 \
      double s = 0;                                                                               \
      for (int64_t i = 0; i < n; i++) s += (double)x[i];                                          \
      double mu = n ? s / (double)n : 0;                                                          \
      double v = 0;                                                                               \
      for (int64_t i = 0; i < n; i++) {                                                           \
        double d = (double)x[i] - mu;                                                             \
        v += d * d;                                                                               \
      }                                                                                           \
      double rs = 1.0 / sqrt((n ? v / (double)n : 0) + j->eps);                                   \
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
  static void ln_backward_##T(void *ctx, int64_t c0, int64_t c1) {                                     \
    const ln_job *j = ctx;                                                                             \
    const int64_t n = j->n;                                                                            \
    const T *w = (const T *)j->w;                                                                      \
    for (int64_t c = c0; c < c1; c++) {                                                                \
      int64_t r0 = c * j->rows_per_chunk, r1 = r0 + j->rows_per_chunk;                                 \
      if (r1 > j->m) r1 = j->m;                                                                        \
      double *pw = j->part + c * 2 * n, *pb = pw + n;                                                  \
      if (j->want_gw || j->want_gb)                                                                    \
        for (int64_t i = 0; i < 2 * n; i++) pw[i] = 0;                                                 \
      for (int64_t r = r0; r < r1; r++) {                                                              \
        const T *x = (const T *)j->x + r * n, *g = (const T *)j->g + r * n;                            \
        const double mu = (double)((const T *)j->mean)[r], rs = (double)((const T *)j->rstd)[r];       \
        if (j->gx) {                                                                                   \
          double a = 0, bb = 0;                                                                        \
          for (int64_t i = 0; i < n; i++) {                                                            \
            double gh = (double)g[i] * (w ? (double)w[i] : 1.0);                                       \
            a += gh;                                                                                   \
            bb += gh * (((double)x[i] - mu) * rs);                                                     \
          }                                                                                            \
          a /= (double)n;                                                                              \
          bb /= (double)n;                                                                             \
          T *gx = (T *)j->gx + r * n;                                                                  \
          for (int64_t i = 0; i < n; i++) {                                                            \
            double gh = (double)g[i] * (w ? (double)w[i] : 1.0);                                       \
            gx[i] = (T)(rs * (gh - a - (((double)x[i] - mu) * rs) * bb));                               \
          }                                                                                            \
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
