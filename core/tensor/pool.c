/* pool.c -- the CPU's pooling and resampling kernels (issue 12, pooling): max pools over windows
 * (with the flat per-plane position of each maximum), linear resamplings as sums over taps (avg
 * pools, adaptive avg pools, nearest / linear / cubic interpolation) and their adjoints, and the
 * writes and reads at per-plane positions (max pools' backward, max_unpool and its backward).
 * Inputs come contiguous, as planes (P, S0, S1, S2) (core/kernels.h); float32 and float64. Planes
 * are split over the thread pool when there is enough work. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

/* planes per chunk: about MT_GRAIN elements of work per thread */
static int64_t plane_grain(int64_t per_plane) {
  if (per_plane < 1) per_plane = 1;
  int64_t g = MT_GRAIN / per_plane;
  return g < 1 ? 1 : g;
}

/* ---------------------------------------------------------------- max pools */
typedef struct max_job {
  const mt_windows *w;
  const void *x;
  void *v;
  int64_t *idx;
  int64_t base;
} max_job;

#define MAX_POOL_RANGE(T)                                                                                       \
  static void max_range_##T(void *ctx, int64_t p0, int64_t p1) {                                              \
    const max_job *j = ctx;                                                                                     \
    const mt_windows *w = j->w;                                                                                 \
    const int64_t S1 = w->in[1], S2 = w->in[2], plane = w->in[0] * S1 * S2;                                     \
    const int64_t O0 = w->out[0], O1 = w->out[1], O2 = w->out[2], oplane = O0 * O1 * O2;                        \
    const int64_t st0 = w->step[0], st1 = w->step[1], st2 = w->step[2];                                         \
    for (int64_t p = p0; p < p1; p++) {                                                                         \
      const T *x = (const T *)j->x + p * plane;                                                                 \
      T *v = (T *)j->v + p * oplane;                                                                            \
      int64_t *ix = j->idx ? j->idx + p * oplane : NULL;                                                        \
      for (int64_t a = 0; a < O0; a++) {                                                                        \
        const int64_t s0 = w->start[0][a], c0 = w->count[0][a];                                                 \
        for (int64_t b = 0; b < O1; b++) {                                                                      \
          const int64_t s1 = w->start[1][b], c1 = w->count[1][b];                                               \
          for (int64_t c = 0; c < O2; c++) {                                                                    \
            const int64_t s2 = w->start[2][c], c2 = w->count[2][c];                                             \
            int64_t best = (s0 * S1 + s1) * S2 + s2;                                                            \
            T m = -INFINITY;                                                                                    \
            for (int64_t k0 = 0; k0 < c0; k0++) {                                                               \
              for (int64_t k1 = 0; k1 < c1; k1++) {                                                             \
                const int64_t row = ((s0 + k0 * st0) * S1 + s1 + k1 * st1) * S2 + s2;                          \
                const T *xr = x + row;                                                                          \
                for (int64_t k2 = 0; k2 < c2; k2++) {                                                           \
                  T val = xr[k2 * st2];                                                                         \
                  if (val > m || isnan(val)) {                                                                  \
                    m = val;                                                                                    \
                    best = row + k2 * st2;                                                                      \
                  }                                                                                             \
                }                                                                                               \
              }                                                                                                 \
            }                                                                                                   \
            int64_t o = (a * O1 + b) * O2 + c;                                                                  \
            v[o] = m;                                                                                           \
            if (ix) ix[o] = best + j->base;                                                                     \
          }                                                                                                     \
        }                                                                                                       \
      }                                                                                                         \
    }                                                                                                           \
  }
MAX_POOL_RANGE(float)
MAX_POOL_RANGE(double)

/* the common case of LeNet's pools: 2 x 2 windows, stride 2, no padding, every window whole */
static void max_range_2x2_float(void *ctx, int64_t p0, int64_t p1) {
  const max_job *j = ctx;
  const mt_windows *w = j->w;
  const int64_t S1 = w->in[1], S2 = w->in[2], O1 = w->out[1], O2 = w->out[2];
  for (int64_t p = p0; p < p1; p++) {
    const float *x = (const float *)j->x + p * S1 * S2;
    float *v = (float *)j->v + p * O1 * O2;
    int64_t *ix = j->idx ? j->idx + p * O1 * O2 : NULL;
    for (int64_t b = 0; b < O1; b++) {
      const float *r0 = x + 2 * b * S2, *r1 = r0 + S2;
      float *vr = v + b * O2;
      if (ix) {
        int64_t *ir = ix + b * O2, base = 2 * b * S2 + j->base;
        for (int64_t c = 0; c < O2; c++) {
          float a0 = r0[2 * c], a1 = r0[2 * c + 1], a2 = r1[2 * c], a3 = r1[2 * c + 1];
          float m = a0;
          int64_t k = 0;
          if (a1 > m || isnan(a1)) m = a1, k = 1;
          if (a2 > m || isnan(a2)) m = a2, k = S2;
          if (a3 > m || isnan(a3)) m = a3, k = S2 + 1;
          if (isnan(a0) && !(isnan(a1) || isnan(a2) || isnan(a3))) m = a0, k = 0;
          vr[c] = m;
          ir[c] = base + 2 * c + k;
        }
      } else {
        for (int64_t c = 0; c < O2; c++) {
          float m0 = r0[2 * c] > r0[2 * c + 1] || isnan(r0[2 * c]) ? r0[2 * c] : r0[2 * c + 1];
          float m1 = r1[2 * c] > r1[2 * c + 1] || isnan(r1[2 * c]) ? r1[2 * c] : r1[2 * c + 1];
          vr[c] = m0 > m1 || isnan(m0) ? m0 : m1;
        }
      }
    }
  }
}

static bool whole_2x2(const mt_windows *w) {
  if (w->out[0] != 1 || w->in[0] != 1 || w->step[1] != 1 || w->step[2] != 1) return false;
  if (w->in[1] < 2 * w->out[1] || w->in[2] < 2 * w->out[2]) return false;
  for (int64_t b = 0; b < w->out[1]; b++)
    if (w->start[1][b] != 2 * b || w->count[1][b] != 2) return false;
  for (int64_t c = 0; c < w->out[2]; c++)
    if (w->start[2][c] != 2 * c || w->count[2][c] != 2) return false;
  return true;
}

mt_status mt_cpu_pool_max(mt_tensor *values, mt_tensor *indices, const mt_tensor *x, const mt_windows *w,
                          int64_t base) {
  int64_t oplane = w->out[0] * w->out[1] * w->out[2];
  int64_t P = oplane ? values->_numel / oplane : 0;
  if (P == 0 || oplane == 0) return MT_OK;
  max_job j = {.w = w, .x = x->_data, .v = values->_data, .idx = indices ? (int64_t *)indices->_data : NULL,
               .base = base};
  int64_t work = w->in[0] * w->in[1] * w->in[2] + oplane;
  mt_range_fn fn;
  if (x->_dtype == MT_FLOAT32)
    fn = whole_2x2(w) ? max_range_2x2_float : max_range_float;
  else
    fn = max_range_double;
  mt_parallel_for(P, plane_grain(work), fn, &j);
  return MT_OK;
}

/* ---------------------------------------------------------------- linear resamplings */
typedef struct rs_job {
  const mt_taps *t;
  const void *x;
  void *out;
  const void *w[3]; /* the weights in the compute dtype */
} rs_job;

#define RESAMPLE_RANGE(T)                                                                                      \
  static void rs_range_##T(void *ctx, int64_t p0, int64_t p1) {                                               \
    const rs_job *j = ctx;                                                                                     \
    const mt_taps *t = j->t;                                                                                   \
    const int64_t S1 = t->in[1], S2 = t->in[2], plane = t->in[0] * S1 * S2;                                    \
    const int64_t O0 = t->out[0], O1 = t->out[1], O2 = t->out[2], oplane = O0 * O1 * O2;                       \
    const int n0 = t->ntaps[0], n1 = t->ntaps[1], n2 = t->ntaps[2];                                            \
    const int64_t *i0 = t->index[0], *i1 = t->index[1], *i2 = t->index[2];                                     \
    const T *w0 = j->w[0], *w1 = j->w[1], *w2 = j->w[2];                                                       \
    const T scale = (T)t->scale;                                                                               \
    for (int64_t p = p0; p < p1; p++) {                                                                        \
      const T *x = (const T *)j->x + p * plane;                                                                \
      T *out = (T *)j->out + p * oplane;                                                                       \
      for (int64_t a = 0; a < O0; a++) {                                                                       \
        for (int64_t b = 0; b < O1; b++) {                                                                     \
          T *orow = out + (a * O1 + b) * O2;                                                                   \
          for (int64_t c = 0; c < O2; c++) orow[c] = 0;                                                        \
          for (int k0 = 0; k0 < n0; k0++) {                                                                    \
            T c0 = w0[a * n0 + k0] * scale;                                                                    \
            if (c0 == 0) continue;                                                                             \
            for (int k1 = 0; k1 < n1; k1++) {                                                                  \
              T c01 = c0 * w1[b * n1 + k1];                                                                    \
              if (c01 == 0) continue;                                                                          \
              const T *xr = x + (i0[a * n0 + k0] * S1 + i1[b * n1 + k1]) * S2;                                 \
              if (n2 == 1) {                                                                                   \
                for (int64_t c = 0; c < O2; c++) orow[c] += c01 * w2[c] * xr[i2[c]];                           \
              } else {                                                                                         \
                for (int64_t c = 0; c < O2; c++) {                                                             \
                  T s = 0;                                                                                     \
                  const int64_t *ic = i2 + c * n2;                                                             \
                  const T *wc = w2 + c * n2;                                                                   \
                  for (int k2 = 0; k2 < n2; k2++) s += wc[k2] * xr[ic[k2]];                                    \
                  orow[c] += c01 * s;                                                                          \
                }                                                                                              \
              }                                                                                                \
            }                                                                                                  \
          }                                                                                                    \
        }                                                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  }                                                                                                            \
  static void rs_adjoint_range_##T(void *ctx, int64_t p0, int64_t p1) {                                       \
    const rs_job *j = ctx;                                                                                     \
    const mt_taps *t = j->t;                                                                                   \
    const int64_t S1 = t->in[1], S2 = t->in[2], plane = t->in[0] * S1 * S2;                                    \
    const int64_t O0 = t->out[0], O1 = t->out[1], O2 = t->out[2], oplane = O0 * O1 * O2;                       \
    const int n0 = t->ntaps[0], n1 = t->ntaps[1], n2 = t->ntaps[2];                                            \
    const int64_t *i0 = t->index[0], *i1 = t->index[1], *i2 = t->index[2];                                     \
    const T *w0 = j->w[0], *w1 = j->w[1], *w2 = j->w[2];                                                       \
    const T scale = (T)t->scale;                                                                               \
    for (int64_t p = p0; p < p1; p++) {                                                                        \
      T *gx = (T *)j->out + p * plane;                                                                         \
      const T *g = (const T *)j->x + p * oplane;                                                               \
      for (int64_t e = 0; e < plane; e++) gx[e] = 0;                                                           \
      for (int64_t a = 0; a < O0; a++) {                                                                       \
        for (int64_t b = 0; b < O1; b++) {                                                                     \
          const T *grow = g + (a * O1 + b) * O2;                                                               \
          for (int k0 = 0; k0 < n0; k0++) {                                                                    \
            T c0 = w0[a * n0 + k0] * scale;                                                                    \
            if (c0 == 0) continue;                                                                             \
            for (int k1 = 0; k1 < n1; k1++) {                                                                  \
              T c01 = c0 * w1[b * n1 + k1];                                                                    \
              if (c01 == 0) continue;                                                                          \
              T *xr = gx + (i0[a * n0 + k0] * S1 + i1[b * n1 + k1]) * S2;                                      \
              for (int64_t c = 0; c < O2; c++) {                                                               \
                T gc = c01 * grow[c];                                                                          \
                const int64_t *ic = i2 + c * n2;                                                               \
                const T *wc = w2 + c * n2;                                                                     \
                for (int k2 = 0; k2 < n2; k2++) xr[ic[k2]] += wc[k2] * gc;                                     \
              }                                                                                                \
            }                                                                                                  \
          }                                                                                                    \
        }                                                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  }
RESAMPLE_RANGE(float)
RESAMPLE_RANGE(double)

mt_status mt_cpu_resample(mt_tensor *out, const mt_tensor *x, const mt_taps *t, int adjoint) {
  int64_t plane = t->in[0] * t->in[1] * t->in[2], oplane = t->out[0] * t->out[1] * t->out[2];
  int64_t P = adjoint ? (plane ? out->_numel / plane : 0) : (oplane ? out->_numel / oplane : 0);
  if (P == 0) return MT_OK;
  if (adjoint && oplane == 0) return mt_cpu_fill(out, 0);
  rs_job j = {.t = t, .x = x->_data, .out = out->_data};
  float *wf = NULL;
  if (out->_dtype == MT_FLOAT32) {
    int64_t n = 0;
    for (int d = 0; d < 3; d++) n += t->out[d] * t->ntaps[d];
    wf = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!wf) return mt_error(MT_ENOMEM, "resample: out of memory for %lld weights", (long long)n);
    float *q = wf;
    for (int d = 0; d < 3; d++) {
      j.w[d] = q;
      for (int64_t k = 0; k < t->out[d] * t->ntaps[d]; k++) *q++ = (float)t->weight[d][k];
    }
  } else {
    for (int d = 0; d < 3; d++) j.w[d] = t->weight[d];
  }
  int64_t taps = (int64_t)t->ntaps[0] * t->ntaps[1] * t->ntaps[2];
  int64_t work = plane + oplane * taps;
  mt_range_fn fn = out->_dtype == MT_FLOAT32 ? (adjoint ? rs_adjoint_range_float : rs_range_float)
                                             : (adjoint ? rs_adjoint_range_double : rs_range_double);
  mt_parallel_for(P, plane_grain(work), fn, &j);
  free(wf);
  return MT_OK;
}

/* ---------------------------------------------------------------- writes and reads at positions */
typedef struct ix_job {
  mt_tensor *out;
  const mt_tensor *src;
  const int64_t *idx;
  int64_t M, K, base; /* M: the plane of positions, K: the indices per plane */
  int kind;
  int64_t bad; /* the first position out of range (+ base), written by any thread */
  int has_bad;
} ix_job;

#define INDEX_RANGE(T)                                                                                         \
  static void ix_range_##T(void *ctx, int64_t p0, int64_t p1) {                                               \
    ix_job *j = ctx;                                                                                           \
    const int64_t M = j->M, K = j->K, base = j->base;                                                          \
    for (int64_t p = p0; p < p1; p++) {                                                                        \
      const int64_t *ix = j->idx + p * K;                                                                      \
      if (j->kind == MT_POOL_GATHER) {                                                                         \
        const T *s = (const T *)j->src->_data + p * M;                                                         \
        T *o = (T *)j->out->_data + p * K;                                                                     \
        for (int64_t k = 0; k < K; k++) {                                                                      \
          int64_t i = ix[k] - base;                                                                            \
          if (__builtin_expect(i < 0 || i >= M, 0)) {                                                          \
            if (!__atomic_exchange_n(&j->has_bad, 1, __ATOMIC_RELAXED)) j->bad = ix[k];                        \
            o[k] = 0;                                                                                          \
            continue;                                                                                          \
          }                                                                                                    \
          o[k] = s[i];                                                                                         \
        }                                                                                                      \
      } else {                                                                                                 \
        const T *s = (const T *)j->src->_data + p * K;                                                         \
        T *o = (T *)j->out->_data + p * M;                                                                     \
        for (int64_t m = 0; m < M; m++) o[m] = 0;                                                              \
        for (int64_t k = 0; k < K; k++) {                                                                      \
          int64_t i = ix[k] - base;                                                                            \
          if (__builtin_expect(i < 0 || i >= M, 0)) {                                                          \
            if (!__atomic_exchange_n(&j->has_bad, 1, __ATOMIC_RELAXED)) j->bad = ix[k];                        \
            continue;                                                                                          \
          }                                                                                                    \
          if (j->kind == MT_POOL_SCATTER_ADD)                                                                  \
            o[i] += s[k];                                                                                      \
          else                                                                                                 \
            o[i] = s[k];                                                                                       \
        }                                                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  }
INDEX_RANGE(float)
INDEX_RANGE(double)

mt_status mt_cpu_pool_index(mt_tensor *out, const mt_tensor *src, const mt_tensor *indices, int kind, int64_t base) {
  int64_t P = indices->_ndim ? indices->_sizes[0] : 1;
  if (P == 0) return MT_OK;
  int64_t K = indices->_numel / P;
  int64_t M = (kind == MT_POOL_GATHER ? src->_numel : out->_numel) / P;
  if (K == 0) return kind == MT_POOL_GATHER ? MT_OK : mt_cpu_fill(out, 0);
  ix_job j = {.out = out, .src = src, .idx = (const int64_t *)indices->_data, .M = M, .K = K, .base = base, .kind = kind};
  mt_parallel_for(P, plane_grain(M + K), out->_dtype == MT_FLOAT32 ? ix_range_float : ix_range_double, &j);
  if (j.has_bad)
    return mt_error(MT_ERANGE, "Found an invalid max index: %lld (output volumes are of size %lld)", (long long)j.bad,
                    (long long)M);
  return MT_OK;
}
