/* pool.c -- the CPU's pooling and resampling kernels (issue 12, pooling): max pools over windows
 * (with the flat per-plane position of each maximum), linear resamplings as sums over taps (avg
 * pools, adaptive avg pools, nearest / linear / cubic interpolation) and their adjoints, and the
 * writes and reads at per-plane positions (max pools' backward, max_unpool and its backward).
 * Inputs come contiguous, as planes (P, S0, S1, S2) (core/kernels.h); float32 and float64 (the max pools also
 * uint8, int8 and int32: quantized tensors' integers). Planes
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
  int avx2; /* the 2 x 2 path may use AVX2 */
} max_job;

#define MAX_POOL_RANGE(T, LOWEST)                                                                               \
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
            T m = LOWEST;                                                                                       \
            for (int64_t k0 = 0; k0 < c0; k0++) {                                                               \
              for (int64_t k1 = 0; k1 < c1; k1++) {                                                             \
                const int64_t row = ((s0 + k0 * st0) * S1 + s1 + k1 * st1) * S2 + s2;                          \
                const T *xr = x + row;                                                                          \
                for (int64_t k2 = 0; k2 < c2; k2++) { /* branch-free: the data decides */                    \
                  T val = xr[k2 * st2];                                                                         \
                  int take = (val > m) | (val != val);                                                          \
                  m = take ? val : m;                                                                           \
                  best = take ? row + k2 * st2 : best;                                                          \
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
MAX_POOL_RANGE(float, -INFINITY)
MAX_POOL_RANGE(double, -INFINITY)
/* the integers of quantized tensors (issue 25: mt_qmax_pool; no NaN, the same order) */
MAX_POOL_RANGE(uint8_t, 0)
MAX_POOL_RANGE(int8_t, INT8_MIN)
MAX_POOL_RANGE(int32_t, INT32_MIN)

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include "../cpu.h"
#define POOL_X86 1
/* one row of 2 x 2 windows, eight outputs at a time: the two input rows' even and odd columns,
 * taken in PyTorch's order (a later value replaces the maximum when larger, or when it is NaN) */
__attribute__((target("avx2"))) static int64_t max_row_2x2_avx2(const float *r0, const float *r1, float *vr,
                                                                 int64_t *ir, int64_t n, int64_t S2, int64_t base) {
  const __m256i perm = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
  const __m256i k1 = _mm256_set1_epi32(1), k2 = _mm256_set1_epi32((int)S2), k3 = _mm256_set1_epi32((int)S2 + 1);
  const __m256i step = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    __m256 lo0 = _mm256_loadu_ps(r0 + 2 * c), hi0 = _mm256_loadu_ps(r0 + 2 * c + 8);
    __m256 lo1 = _mm256_loadu_ps(r1 + 2 * c), hi1 = _mm256_loadu_ps(r1 + 2 * c + 8);
    /* even / odd columns, in order after the lane fix-up */
    __m256 a0 = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(_mm256_castps_si256(_mm256_shuffle_ps(lo0, hi0, 0x88)), perm));
    __m256 a1 = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(_mm256_castps_si256(_mm256_shuffle_ps(lo0, hi0, 0xdd)), perm));
    __m256 a2 = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(_mm256_castps_si256(_mm256_shuffle_ps(lo1, hi1, 0x88)), perm));
    __m256 a3 = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(_mm256_castps_si256(_mm256_shuffle_ps(lo1, hi1, 0xdd)), perm));
    __m256 m = a0;
    __m256i k = _mm256_setzero_si256();
    __m256 t = _mm256_or_ps(_mm256_cmp_ps(a1, m, _CMP_GT_OQ), _mm256_cmp_ps(a1, a1, _CMP_UNORD_Q));
    m = _mm256_blendv_ps(m, a1, t);
    k = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(k), _mm256_castsi256_ps(k1), t));
    t = _mm256_or_ps(_mm256_cmp_ps(a2, m, _CMP_GT_OQ), _mm256_cmp_ps(a2, a2, _CMP_UNORD_Q));
    m = _mm256_blendv_ps(m, a2, t);
    k = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(k), _mm256_castsi256_ps(k2), t));
    t = _mm256_or_ps(_mm256_cmp_ps(a3, m, _CMP_GT_OQ), _mm256_cmp_ps(a3, a3, _CMP_UNORD_Q));
    m = _mm256_blendv_ps(m, a3, t);
    _mm256_storeu_ps(vr + c, m);
    if (ir) {
      k = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(k), _mm256_castsi256_ps(k3), t));
      k = _mm256_add_epi32(k, step);
      __m256i b = _mm256_set1_epi64x(base + 2 * c);
      _mm256_storeu_si256((__m256i *)(ir + c), _mm256_add_epi64(b, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(k))));
      _mm256_storeu_si256((__m256i *)(ir + c + 4),
                          _mm256_add_epi64(b, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(k, 1))));
    }
  }
  /* four more with 128-bit vectors (rows of 8 to 15 inputs: LeNet's second pool) */
  for (; c + 4 <= n; c += 4) {
    __m128 lo0 = _mm_loadu_ps(r0 + 2 * c), hi0 = _mm_loadu_ps(r0 + 2 * c + 4);
    __m128 lo1 = _mm_loadu_ps(r1 + 2 * c), hi1 = _mm_loadu_ps(r1 + 2 * c + 4);
    __m128 a0 = _mm_shuffle_ps(lo0, hi0, 0x88), a1 = _mm_shuffle_ps(lo0, hi0, 0xdd);
    __m128 a2 = _mm_shuffle_ps(lo1, hi1, 0x88), a3 = _mm_shuffle_ps(lo1, hi1, 0xdd);
    __m128 m = a0;
    __m128i k = _mm_setzero_si128();
    __m128 t = _mm_or_ps(_mm_cmpgt_ps(a1, m), _mm_cmpunord_ps(a1, a1));
    m = _mm_blendv_ps(m, a1, t);
    k = _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(k), _mm_castsi128_ps(_mm_set1_epi32(1)), t));
    t = _mm_or_ps(_mm_cmpgt_ps(a2, m), _mm_cmpunord_ps(a2, a2));
    m = _mm_blendv_ps(m, a2, t);
    k = _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(k), _mm_castsi128_ps(_mm_set1_epi32((int)S2)), t));
    t = _mm_or_ps(_mm_cmpgt_ps(a3, m), _mm_cmpunord_ps(a3, a3));
    m = _mm_blendv_ps(m, a3, t);
    _mm_storeu_ps(vr + c, m);
    if (ir) {
      k = _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(k), _mm_castsi128_ps(_mm_set1_epi32((int)S2 + 1)), t));
      k = _mm_add_epi32(k, _mm_setr_epi32(0, 2, 4, 6));
      _mm256_storeu_si256((__m256i *)(ir + c), _mm256_add_epi64(_mm256_set1_epi64x(base + 2 * c), _mm256_cvtepi32_epi64(k)));
    }
  }
  return c;
}
#endif

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
      int64_t c0 = 0;
#ifdef POOL_X86
      if (j->avx2 && S2 < INT32_MAX / 2)
        c0 = max_row_2x2_avx2(r0, r1, vr, ix ? ix + b * O2 : NULL, O2, S2, 2 * b * S2 + j->base);
#endif
      if (ix) {
        int64_t *ir = ix + b * O2, base = 2 * b * S2 + j->base;
        for (int64_t c = c0; c < O2; c++) {
          float a0 = r0[2 * c], a1 = r0[2 * c + 1], a2 = r1[2 * c], a3 = r1[2 * c + 1];
          /* PyTorch's order and NaN rule (a NaN is taken, a later NaN replaces it), branch-free */
          float m = a0;
          int64_t k = 0;
          int t1 = (a1 > m) | (a1 != a1);
          m = t1 ? a1 : m;
          k = t1 ? 1 : k;
          int t2 = (a2 > m) | (a2 != a2);
          m = t2 ? a2 : m;
          k = t2 ? S2 : k;
          int t3 = (a3 > m) | (a3 != a3);
          m = t3 ? a3 : m;
          k = t3 ? S2 + 1 : k;
          vr[c] = m;
          ir[c] = base + 2 * c + k;
        }
      } else {
        for (int64_t c = c0; c < O2; c++) {
          float m0 = r0[2 * c] > r0[2 * c + 1] || isnan(r0[2 * c]) ? r0[2 * c] : r0[2 * c + 1];
          float m1 = r1[2 * c] > r1[2 * c + 1] || isnan(r1[2 * c]) ? r1[2 * c] : r1[2 * c + 1];
          vr[c] = m0 > m1 || isnan(m0) ? m0 : m1;
        }
      }
    }
  }
}

/* uint8 2 x 2 windows without indices (quantized LeNet's pools): 16 outputs at a time with SSE2, the rows' max,
 * then each byte pair's */
static void max_range_2x2_u8(void *ctx, int64_t p0, int64_t p1) {
  const max_job *j = ctx;
  const mt_windows *w = j->w;
  const int64_t S1 = w->in[1], S2 = w->in[2], O1 = w->out[1], O2 = w->out[2];
  for (int64_t p = p0; p < p1; p++) {
    const uint8_t *x = (const uint8_t *)j->x + p * S1 * S2;
    uint8_t *v = (uint8_t *)j->v + p * O1 * O2;
    for (int64_t b = 0; b < O1; b++) {
      const uint8_t *r0 = x + 2 * b * S2, *r1 = r0 + S2;
      uint8_t *vr = v + b * O2;
      int64_t c = 0;
#ifdef POOL_X86
      const __m128i lo = _mm_set1_epi16(0x00ff);
      for (; c + 8 <= O2; c += 8) { /* inputs 2c .. 2c + 15 of each row: inside, 2 O2 <= S2 */
        __m128i m = _mm_max_epu8(_mm_loadu_si128((const __m128i *)(r0 + 2 * c)), _mm_loadu_si128((const __m128i *)(r1 + 2 * c)));
        m = _mm_and_si128(_mm_max_epu8(m, _mm_srli_epi16(m, 8)), lo);
        _mm_storel_epi64((__m128i *)(vr + c), _mm_packus_epi16(m, m));
      }
#endif
      for (; c < O2; c++) {
        uint8_t a = r0[2 * c] > r0[2 * c + 1] ? r0[2 * c] : r0[2 * c + 1];
        uint8_t e = r1[2 * c] > r1[2 * c + 1] ? r1[2 * c] : r1[2 * c + 1];
        vr[c] = a > e ? a : e;
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
#ifdef POOL_X86
  static int have_avx2 = -1;
  if (have_avx2 < 0) have_avx2 = mt_cpu_kernel_level() >= MT_CPU_LEVEL_AVX2; /* MOONTORCH_VMATH=0: scalar */
  j.avx2 = have_avx2;
#endif
  int64_t work = w->in[0] * w->in[1] * w->in[2] + oplane;
  mt_range_fn fn;
  switch (x->_dtype) {
  case MT_FLOAT32: fn = whole_2x2(w) ? max_range_2x2_float : max_range_float; break;
  case MT_UINT8: fn = whole_2x2(w) && !j.idx ? max_range_2x2_u8 : max_range_uint8_t; break;
  case MT_INT8: fn = max_range_int8_t; break;
  case MT_INT32: fn = max_range_int32_t; break;
  default: fn = max_range_double;
  }
  mt_parallel_for(P, plane_grain(work), fn, &j);
  return MT_OK;
}

/* ---------------------------------------------------------------- linear resamplings */
typedef struct rs_job {
  const mt_taps *t;
  const void *x;
  void *out;
  const void *w[3]; /* the weights in the compute dtype */
  const int32_t *cnt[3]; /* box: each output's run length per dim */
  int whole;             /* box: one output whose run covers the whole plane */
  int adjoint;
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
              } else if (t->box) {                                                                             \
                for (int64_t c = 0; c < O2; c++) {                                                             \
                  const T *xc = xr + i2[c * n2], *wc = w2 + c * n2;                                            \
                  T s = 0;                                                                                     \
                  for (int k2 = 0; k2 < n2 && wc[k2] != 0; k2++) s += xc[k2];                                  \
                  orow[c] += c01 * wc[0] * s;                                                                  \
                }                                                                                              \
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
              if (t->box) {                                                                                    \
                for (int64_t c = 0; c < O2; c++) {                                                             \
                  const T *wc = w2 + c * n2;                                                                   \
                  T *xc = xr + i2[c * n2], gc = c01 * grow[c] * wc[0];                                         \
                  for (int k2 = 0; k2 < n2 && wc[k2] != 0; k2++) xc[k2] += gc;                                 \
                }                                                                                              \
              } else {                                                                                         \
                for (int64_t c = 0; c < O2; c++) {                                                             \
                  T gc = c01 * grow[c];                                                                        \
                  const int64_t *ic = i2 + c * n2;                                                             \
                  const T *wc = w2 + c * n2;                                                                   \
                  for (int k2 = 0; k2 < n2; k2++) xr[ic[k2]] += wc[k2] * gc;                                   \
                }                                                                                              \
              }                                                                                                \
            }                                                                                                  \
          }                                                                                                    \
        }                                                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  }
RESAMPLE_RANGE(float)
RESAMPLE_RANGE(double)

/* Box resamplings (avg pools, adaptive avg pools: along every dim a run of positions of one
 * weight): the rows of each output row's window summed first, column by column (a loop the
 * compiler vectorises), then each output's run of that row sum; the adjoint the other way round.
 * cnt[d][o]: the length of output o's run along dim d. */
#define BOX_MAX_ROW 2048 /* the box path's row sums live on the stack */
#define BOX_RANGE(T)                                                                                           \
  static void box_range_##T(void *ctx, int64_t p0, int64_t p1) {                                              \
    const rs_job *j = ctx;                                                                                     \
    const mt_taps *t = j->t;                                                                                   \
    const int64_t S1 = t->in[1], S2 = t->in[2], plane = t->in[0] * S1 * S2;                                    \
    const int64_t O0 = t->out[0], O1 = t->out[1], O2 = t->out[2], oplane = O0 * O1 * O2;                       \
    const int n0 = t->ntaps[0], n1 = t->ntaps[1], n2 = t->ntaps[2];                                            \
    const int64_t *i0 = t->index[0], *i1 = t->index[1], *i2 = t->index[2];                                     \
    const T *w0 = j->w[0], *w1 = j->w[1], *w2 = j->w[2];                                                       \
    const int32_t *c0 = j->cnt[0], *c1 = j->cnt[1], *c2 = j->cnt[2];                                           \
    T R[BOX_MAX_ROW];                                                                                          \
    const T scale = (T)t->scale;                                                                               \
    for (int64_t p = p0; p < p1; p++) {                                                                        \
      const T *x = (const T *)j->x + p * (j->adjoint ? oplane : plane);                                        \
      T *out = (T *)j->out + p * (j->adjoint ? plane : oplane);                                                \
      if (j->whole) { /* one output over the whole plane: a global average pool */                            \
        const T w = scale * w0[0] * w1[0] * w2[0];                                                             \
        if (j->adjoint) {                                                                                      \
          const T g = w * x[0];                                                                                \
          for (int64_t e = 0; e < plane; e++) out[e] = g;                                                      \
        } else {                                                                                               \
          T acc[8] = {0};                                                                                      \
          int64_t e = 0;                                                                                       \
          for (; e + 8 <= plane; e += 8)                                                                       \
            for (int q = 0; q < 8; q++) acc[q] += x[e + q];                                                    \
          T s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));             \
          for (; e < plane; e++) s += x[e];                                                                    \
          out[0] = w * s;                                                                                      \
        }                                                                                                      \
        continue;                                                                                              \
      }                                                                                                        \
      if (j->adjoint)                                                                                          \
        for (int64_t e = 0; e < plane; e++) out[e] = 0;                                                        \
      for (int64_t a = 0; a < O0; a++) {                                                                       \
        for (int64_t b = 0; b < O1; b++) {                                                                     \
          const T wab = scale * w0[a * n0] * w1[b * n1];                                                       \
          const int64_t r0 = i0[a * n0], r1 = i1[b * n1];                                                      \
          for (int64_t e = 0; e < S2; e++) R[e] = 0;                                                           \
          if (!j->adjoint) {                                                                                   \
            for (int k0 = 0; k0 < c0[a]; k0++)                                                                 \
              for (int k1 = 0; k1 < c1[b]; k1++) {                                                             \
                const T *row = x + ((r0 + k0) * S1 + r1 + k1) * S2;                                            \
                for (int64_t e = 0; e < S2; e++) R[e] += row[e];                                               \
              }                                                                                                \
            T *orow = out + (a * O1 + b) * O2;                                                                 \
            for (int64_t c = 0; c < O2; c++) {                                                                 \
              const T *rc = R + i2[c * n2];                                                                    \
              T s = 0;                                                                                         \
              for (int k2 = 0; k2 < c2[c]; k2++) s += rc[k2];                                                  \
              orow[c] = wab * w2[c * n2] * s;                                                                  \
            }                                                                                                  \
          } else {                                                                                             \
            const T *grow = x + (a * O1 + b) * O2;                                                             \
            for (int64_t c = 0; c < O2; c++) {                                                                 \
              T *rc = R + i2[c * n2], gc = wab * w2[c * n2] * grow[c];                                         \
              for (int k2 = 0; k2 < c2[c]; k2++) rc[k2] += gc;                                                 \
            }                                                                                                  \
            for (int k0 = 0; k0 < c0[a]; k0++)                                                                 \
              for (int k1 = 0; k1 < c1[b]; k1++) {                                                             \
                T *row = out + ((r0 + k0) * S1 + r1 + k1) * S2;                                                \
                for (int64_t e = 0; e < S2; e++) row[e] += R[e];                                               \
              }                                                                                                \
          }                                                                                                    \
        }                                                                                                      \
      }                                                                                                        \
    }                                                                                                          \
  }
BOX_RANGE(float)
BOX_RANGE(double)

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
  int32_t *cnt = NULL;
  if (t->box && t->in[2] <= BOX_MAX_ROW) {
    cnt = malloc(sizeof(int32_t) * (size_t)(t->out[0] + t->out[1] + t->out[2]));
    if (!cnt) {
      free(wf);
      return mt_error(MT_ENOMEM, "resample: out of memory");
    }
    int32_t *q = cnt;
    for (int d = 0; d < 3; d++) {
      j.cnt[d] = q;
      for (int64_t o = 0; o < t->out[d]; o++) {
        const double *w = t->weight[d] + o * t->ntaps[d];
        int k = 0;
        while (k < t->ntaps[d] && w[k] != 0) k++;
        *q++ = k;
      }
    }
    j.adjoint = adjoint;
    j.whole = oplane == 1 && (int64_t)j.cnt[0][0] * j.cnt[1][0] * j.cnt[2][0] == plane;
    fn = out->_dtype == MT_FLOAT32 ? box_range_float : box_range_double;
  }
  mt_parallel_for(P, plane_grain(work), fn, &j);
  free(wf);
  free(cnt);
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
