/* sparse.c -- the CPU's products with a CSR matrix (issue 24): W @ D, W^T @ G and the sampled
 * products G[i, :] . D[col, :] that make the gradient of W's values. W has m rows; row i's entries
 * are vals[p] at columns col[p] for p in [crow[i], crow[i + 1]) (both counted from `base`).
 *
 * W @ D walks each row's entries once per block of up to 64 columns of D, adding v * D[col, block]
 * into an accumulator that stays in vector registers (AVX-512 or AVX2 clones): a D row block is 64
 * contiguous numbers (a Linear's batch), so each entry costs a few vector loads and FMAs and the
 * zeros cost nothing. Rows run in parallel. W^T @ G scatters rows of G into rows of the result:
 * threads split the columns, so no two write one place. Sums run in entry order, so results do not
 * depend on the thread count. The indices are checked first: a col outside [base, base + k) or a
 * crow that is not a non-decreasing run from base to base + nnz is MT_ERANGE. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#include "../thread.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MT_SP_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define MT_SP_CLONES
#endif

/* GCC's vector extensions: 64-byte vectors (one AVX-512 register, two AVX ones, four SSE ones), four
 * of them a block of columns (64 floats, 32 doubles) whose sums stay in registers */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float sp_vfloat __attribute__((vector_size(64)));
typedef double sp_vdouble __attribute__((vector_size(64)));
static inline sp_vfloat sp_ld_float(const float *p) {
  sp_vfloat v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline sp_vdouble sp_ld_double(const double *p) {
  sp_vdouble v;
  memcpy(&v, p, sizeof v);
  return v;
}
#define SP_LANES(T) ((int64_t)(64 / sizeof(T)))

static mt_status check_csr(const mt_tensor *crow, const mt_tensor *col, int64_t m, int64_t k, int64_t base,
                           const char *op) {
  const int64_t *cr = (const int64_t *)crow->_data, *cl = (const int64_t *)col->_data;
  int64_t nnz = col->_numel;
  if (cr[0] != base)
    return mt_error(MT_ERANGE, "%s: crow_indices must start at %lld, got %lld", op, (long long)base, (long long)cr[0]);
  for (int64_t i = 0; i < m; i++)
    if (cr[i + 1] < cr[i])
      return mt_error(MT_ERANGE, "%s: crow_indices must not decrease (%lld after %lld at row %lld)", op,
                      (long long)cr[i + 1], (long long)cr[i], (long long)(i + base));
  if (cr[m] - base != nnz)
    return mt_error(MT_ERANGE, "%s: crow_indices end at %lld but there are %lld values", op, (long long)cr[m],
                    (long long)nnz);
  for (int64_t p = 0; p < nnz; p++)
    if (cl[p] < base || cl[p] - base >= k)
      return mt_error(MT_ERANGE, "%s: col_indices[%lld] = %lld is out of range for %lld columns", op,
                      (long long)(p + base), (long long)cl[p], (long long)k);
  return MT_OK;
}

/* ---------------------------------------------------------------- W @ D */
typedef struct sp_job {
  char *out;
  int64_t os0, os1; /* out's strides for (row of W, column of D) */
  const int64_t *crow, *col;
  const char *vals, *d, *g;
  int64_t ldd, ldg, n, base;
  char *gv;
  int dt;
  int64_t m;
} sp_job;

/* rows are taken in groups of 16, whose results for a block of columns wait in a small tile: written
 * transposed (out (n, m)), each column's 16 numbers are then one contiguous run */
#define SP_GROUP 16
#define SP_MM(T)                                                                                           \
  MT_SP_CLONES static void sp_mm_rows_##T(const sp_job *j, int64_t g0, int64_t g1) {                       \
    const T *vals = (const T *)j->vals, *d = (const T *)j->d;                                              \
    T *out = (T *)j->out;                                                                                  \
    const int64_t *col = j->col;                                                                           \
    int64_t n = j->n, base = j->base, ldd = j->ldd, L = SP_LANES(T), B = 4 * SP_LANES(T);                  \
    int64_t m = j->m;                                                                                      \
    T tile[SP_GROUP][4 * SP_LANES(T)];                                                                     \
    for (int64_t g = g0; g < g1; g++) {                                                                    \
      int64_t i0 = g * SP_GROUP, i1 = i0 + SP_GROUP < m ? i0 + SP_GROUP : m;                              \
      for (int64_t c0 = 0; c0 < n; c0 += B) {                                                              \
        int64_t w = n - c0 < B ? n - c0 : B;                                                               \
        for (int64_t i = i0; i < i1; i++) {                                                                \
          int64_t p0 = j->crow[i] - base, p1 = j->crow[i + 1] - base;                                      \
          T *acc = tile[i - i0];                                                                           \
          if (w == B) {                                                                                    \
            sp_v##T a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                                \
            const T *dc = d + c0 - base * ldd;                                                             \
            for (int64_t p = p0; p < p1; p++) {                                                            \
              sp_v##T v = vals[p] - (sp_v##T){0};                                                          \
              const T *dr = dc + col[p] * ldd;                                                             \
              a0 += v * sp_ld_##T(dr);                                                                     \
              a1 += v * sp_ld_##T(dr + L);                                                                 \
              a2 += v * sp_ld_##T(dr + 2 * L);                                                             \
              a3 += v * sp_ld_##T(dr + 3 * L);                                                             \
            }                                                                                              \
            memcpy(acc, &a0, 64);                                                                          \
            memcpy(acc + L, &a1, 64);                                                                      \
            memcpy(acc + 2 * L, &a2, 64);                                                                  \
            memcpy(acc + 3 * L, &a3, 64);                                                                  \
          } else {                                                                                         \
            for (int64_t c = 0; c < w; c++) acc[c] = 0;                                                    \
            for (int64_t p = p0; p < p1; p++) {                                                            \
              T v = vals[p];                                                                               \
              const T *dr = d + (col[p] - base) * ldd + c0;                                                \
              for (int64_t c = 0; c < w; c++) acc[c] += v * dr[c];                                         \
            }                                                                                              \
          }                                                                                                \
        }                                                                                                  \
        if (j->os1 == 1) {                                                                                 \
          for (int64_t i = i0; i < i1; i++) memcpy(out + i * j->os0 + c0, tile[i - i0], (size_t)w * sizeof(T)); \
        } else {                                                                                           \
          for (int64_t c = 0; c < w; c++) {                                                                \
            T *o = out + (c0 + c) * j->os1 + i0 * j->os0;                                                  \
            for (int64_t i = 0; i < i1 - i0; i++) o[i * j->os0] = tile[i][c];                              \
          }                                                                                                \
        }                                                                                                  \
      }                                                                                                    \
    }                                                                                                      \
  }
SP_MM(float)
SP_MM(double)

static void sp_mm_f32(void *ctx, int64_t b, int64_t e) { sp_mm_rows_float(ctx, b, e); }
static void sp_mm_f64(void *ctx, int64_t b, int64_t e) { sp_mm_rows_double(ctx, b, e); }

/* rows per chunk so that a chunk holds about `work` multiply-adds */
static int64_t row_grain(int64_t m, int64_t nnz, int64_t n) {
  double per_row = m ? (double)nnz * (double)(n ? n : 1) / (double)m : 1;
  int64_t g = (int64_t)(MT_GRAIN / (per_row > 1 ? per_row : 1));
  return g < 1 ? 1 : g;
}

/* ---------------------------------------------------------------- transposes into scratch */
/* dst (c, r) contiguous = src (r, c) with rows of stride lds, in 16 x 16 blocks (both sides' lines stay
 * in cache); columns of blocks in parallel */
typedef struct tr_job {
  char *dst;
  const char *src;
  int64_t r, c, lds;
  size_t item;
} tr_job;
static void tr_blocks(void *ctx, int64_t b, int64_t e) {
  tr_job *t = ctx;
  for (int64_t cb = b; cb < e; cb++) {
    int64_t c0 = cb * 16, c1 = c0 + 16 < t->c ? c0 + 16 : t->c;
    for (int64_t r0 = 0; r0 < t->r; r0 += 16) {
      int64_t r1 = r0 + 16 < t->r ? r0 + 16 : t->r;
      if (t->item == 4) {
        const float *s = (const float *)t->src;
        float *d = (float *)t->dst;
        for (int64_t c = c0; c < c1; c++)
          for (int64_t r = r0; r < r1; r++) d[c * t->r + r] = s[r * t->lds + c];
      } else {
        const double *s = (const double *)t->src;
        double *d = (double *)t->dst;
        for (int64_t c = c0; c < c1; c++)
          for (int64_t r = r0; r < r1; r++) d[c * t->r + r] = s[r * t->lds + c];
      }
    }
  }
}
static void transpose_into(char *dst, const char *src, int64_t r, int64_t c, int64_t lds, size_t item) {
  tr_job t = {dst, src, r, c, lds, item};
  int64_t nb = (c + 15) / 16;
  mt_parallel_for(nb, r * 16 > MT_GRAIN ? 1 : (MT_GRAIN / (r * 16 + 1)) + 1, tr_blocks, &t);
}

/* transposed: d is given as (n, k) (rows of stride 1) and out is (n, m); d's transpose is made in
 * scratch first (a Linear's input: its columns are what each entry reads) */
mt_status mt_cpu_csr_mm(mt_tensor *out, int transposed, const mt_tensor *crow, const mt_tensor *col,
                        const mt_tensor *vals, const mt_tensor *d, int64_t base) {
  int64_t m = crow->_numel - 1, k = d->_sizes[transposed ? 1 : 0], n = d->_sizes[transposed ? 0 : 1];
  MT_TRY(check_csr(crow, col, m, k, base, "csr_mm"));
  size_t item = mt_itemsize(out->_dtype);
  char *scratch = NULL;
  const char *dd = d->_data;
  int64_t ldd = d->_strides[0];
  if (transposed && k > 0 && n > 0) {
    scratch = malloc((size_t)(k * n) * item);
    if (!scratch) return mt_error(MT_ENOMEM, "csr_mm: out of memory for a %lld x %lld scratch matrix", (long long)k,
                                  (long long)n);
    transpose_into(scratch, d->_data, n, k, d->_strides[0], item);
    dd = scratch;
    ldd = n;
  }
  sp_job j = {.out = out->_data,
              .os0 = transposed ? 1 : n,
              .os1 = transposed ? m : 1,
              .crow = (const int64_t *)crow->_data,
              .col = (const int64_t *)col->_data,
              .vals = vals->_data,
              .d = dd,
              .ldd = ldd,
              .n = n,
              .base = base};
  j.m = m;
  if (m > 0 && n > 0) {
    int64_t groups = (m + SP_GROUP - 1) / SP_GROUP, grain = row_grain(m, col->_numel, n) / SP_GROUP;
    mt_parallel_for(groups, grain < 1 ? 1 : grain, out->_dtype == MT_FLOAT32 ? sp_mm_f32 : sp_mm_f64, &j);
  }
  free(scratch);
  return MT_OK;
}

/* ---------------------------------------------------------------- W^T @ G */
#define SP_MM_T(T)                                                                                         \
  MT_SP_CLONES static void sp_mm_t_cols_##T(const sp_job *j, int64_t m, int64_t c0, int64_t c1) {          \
    const T *vals = (const T *)j->vals, *g = (const T *)j->g;                                              \
    T *out = (T *)j->out;                                                                                  \
    int64_t n = j->n, base = j->base, w = c1 - c0;                                                         \
    for (int64_t i = 0; i < m; i++) {                                                                      \
      const T *gr = g + i * j->ldg + c0;                                                                   \
      for (int64_t p = j->crow[i] - base; p < j->crow[i + 1] - base; p++) {                                \
        T v = vals[p];                                                                                     \
        T *o = out + (j->col[p] - base) * n + c0;                                                          \
        for (int64_t c = 0; c < w; c++) o[c] += v * gr[c];                                                 \
      }                                                                                                    \
    }                                                                                                      \
  }
SP_MM_T(float)
SP_MM_T(double)

typedef struct sp_t_job {
  sp_job j;
  int64_t m, chunk;
} sp_t_job;
static void sp_mm_t_chunk(void *ctx, int64_t b, int64_t e) {
  sp_t_job *t = ctx;
  int64_t n = t->j.n;
  for (int64_t q = b; q < e; q++) {
    int64_t c0 = q * t->chunk, c1 = c0 + t->chunk < n ? c0 + t->chunk : n;
    if (t->j.dt == MT_FLOAT32) sp_mm_t_cols_float(&t->j, t->m, c0, c1);
    else sp_mm_t_cols_double(&t->j, t->m, c0, c1);
  }
}

mt_status mt_cpu_csr_mm_t(mt_tensor *out, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *vals,
                          const mt_tensor *g, int64_t base) {
  int64_t m = crow->_numel - 1, k = out->_sizes[0], n = out->_sizes[1];
  MT_TRY(check_csr(crow, col, m, k, base, "csr_mm"));
  memset(out->_data, 0, (size_t)(k * n) * mt_dtype_size(out->_dtype));
  if (m == 0 || n == 0 || k == 0) return MT_OK;
  /* column chunks of at least 16 numbers (a vector line), about one per thread */
  int threads = mt_get_num_threads();
  int64_t chunk = (n + threads - 1) / threads;
  if (chunk < 16) chunk = 16;
  int64_t nchunks = (n + chunk - 1) / chunk;
  sp_t_job t = {.j = {.out = out->_data,
                      .crow = (const int64_t *)crow->_data,
                      .col = (const int64_t *)col->_data,
                      .vals = vals->_data,
                      .g = g->_data,
                      .ldg = g->_strides[0],
                      .n = n,
                      .dt = out->_dtype,
                      .base = base},
                .m = m,
                .chunk = chunk};
  int64_t work = col->_numel * n;
  mt_parallel_for(nchunks, work > MT_GRAIN ? 1 : nchunks, sp_mm_t_chunk, &t);
  return MT_OK;
}

/* ---------------------------------------------------------------- the sampled products */
#define SP_SDDMM(T)                                                                                        \
  MT_SP_CLONES static void sp_sddmm_rows_##T(const sp_job *j, int64_t i0, int64_t i1) {                    \
    const T *g = (const T *)j->g, *d = (const T *)j->d;                                                    \
    T *gv = (T *)j->gv;                                                                                    \
    int64_t n = j->n, base = j->base;                                                                      \
    for (int64_t i = i0; i < i1; i++) {                                                                    \
      const T *gr = g + i * j->ldg;                                                                        \
      for (int64_t p = j->crow[i] - base; p < j->crow[i + 1] - base; p++) {                                \
        const T *dr = d + (j->col[p] - base) * j->ldd;                                                     \
        T s = 0;                                                                                           \
        for (int64_t c = 0; c < n; c++) s += gr[c] * dr[c];                                                \
        gv[p] = s;                                                                                         \
      }                                                                                                    \
    }                                                                                                      \
  }
SP_SDDMM(float)
SP_SDDMM(double)
static void sp_sddmm_f32(void *ctx, int64_t b, int64_t e) { sp_sddmm_rows_float(ctx, b, e); }
static void sp_sddmm_f64(void *ctx, int64_t b, int64_t e) { sp_sddmm_rows_double(ctx, b, e); }

mt_status mt_cpu_csr_sddmm(mt_tensor *gv, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *g,
                           const mt_tensor *d, int64_t base) {
  int64_t m = crow->_numel - 1, k = d->_sizes[0], n = d->_sizes[1];
  MT_TRY(check_csr(crow, col, m, k, base, "csr_mm"));
  sp_job j = {.crow = (const int64_t *)crow->_data,
              .col = (const int64_t *)col->_data,
              .g = g->_data,
              .d = d->_data,
              .ldg = g->_strides[0],
              .ldd = d->_strides[0],
              .n = n,
              .base = base,
              .gv = gv->_data};
  if (m == 0) return MT_OK;
  mt_parallel_for(m, row_grain(m, col->_numel, n), gv->_dtype == MT_FLOAT32 ? sp_sddmm_f32 : sp_sddmm_f64, &j);
  return MT_OK;
}
