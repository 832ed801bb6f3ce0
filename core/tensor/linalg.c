/* linalg.c -- matrix products: mm, bmm, matmul, mv, dot, outer, addmm, baddbmm.
 *
 * Everything funnels into one batched strided product, gemm_run():
 *   C[p] = alpha * A[p] @ B[p] + beta * C[p]   (beta == 0: C is not read, NaNs in it vanish)
 * where each operand is described by its geometry (rows, cols, row stride, col stride, in
 * elements) and a per-batch element offset. The kernels, in order of preference:
 *  - float32 products small enough to fit in L2 run on our own AVX2/FMA register-blocked kernel
 *    (6x16 accumulator tile, no packing, no threads): for these sizes OpenBLAS's packing and its
 *    thread wake-ups cost more than the arithmetic. Picked at run time by a CPU check.
 *  - float32/float64 otherwise go to the BLAS (core/blas.h: gemm, gemv for matrix-vector, dot for
 *    vector-vector) with all of its threads. Transposed operands are passed with the transpose flag and
 *    their leading dimension; only layouts BLAS cannot describe (zero or negative strides, both
 *    strides non-unit) are copied, into a contiguous scratch matrix.
 *  - float16/bfloat16 are converted to float32, multiplied there and rounded once at the end
 *    (PyTorch accumulates them in float32 too).
 *  - integer types use a plain loop accumulating in 64-bit wrap-around arithmetic, so the result
 *    wraps as PyTorch's does.
 * Messages follow PyTorch's wording, prefixed with the op name. */
#include "../blas.h"
#include "../grad/grad.h"

#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MT_HAVE_X86 1
#endif

/* ---------------------------------------------------------------- names */

static mt_status dtype_mismatch(const char *op, int expected, int found) {
  return mt_error(MT_EDTYPE, "%s: expected scalar type %s but found %s", op, mt_type_title(expected), mt_type_title(found));
}

/* The C++ type names PyTorch's out= messages print. */
static const char *cxx_name(int dt) {
  switch (dt) {
  case MT_FLOAT32: return "float";
  case MT_FLOAT64: return "double";
  case MT_FLOAT16: return "c10::Half";
  case MT_BFLOAT16: return "c10::BFloat16";
  case MT_INT64: return "long int";
  case MT_INT32: return "int";
  case MT_INT16: return "short int";
  case MT_INT8: return "signed char";
  case MT_UINT8: return "unsigned char";
  case MT_BOOL: return "bool";
  default: return "?";
  }
}

/* An out= tensor must already have the result's dtype (PyTorch's wording). */
static mt_status check_out_dtype(const char *op, const mt_tensor *out, int dt) {
  if (!out) return MT_OK;
  MT_TRY(mt_check_tensor(out, op, "out"));
  if (out->_dtype != dt)
    return mt_error(MT_EDTYPE, "%s: Expected out tensor to have dtype %s, but got %s instead", op, cxx_name(dt),
                    cxx_name(out->_dtype));
  return MT_OK;
}

static mt_status not_for_bool(const char *op, const char *kernel, int dt) {
  if (dt == MT_BOOL) return mt_error(MT_ENOTIMPL, "%s: \"%s\" not implemented for 'Bool'", op, kernel);
  return MT_OK;
}

/* ---------------------------------------------------------------- operand geometry */
typedef struct {
  int64_t r, c;   /* rows, cols */
  int64_t rs, cs; /* strides in elements */
} geo;

static inline geo geo_of(const mt_tensor *t, int d0) {
  geo g = {t->_sizes[d0], t->_sizes[d0 + 1], t->_strides[d0], t->_strides[d0 + 1]};
  return g;
}

/* How BLAS can read a matrix: 0 row-major (ld = row stride), 1 transposed (ld = col stride),
 * -1 not at all. Size-1 dims have meaningless strides and are normalised first. */
static int blas_layout(const geo *g, int64_t *ld) {
  int64_t r = g->r, c = g->c;
  int64_t rs = r <= 1 ? (c > 1 ? c : 1) : g->rs;
  int64_t cs = c <= 1 ? 1 : g->cs;
  if (cs == 1 && rs >= (c > 1 ? c : 1)) { *ld = rs; return 0; }
  rs = r <= 1 ? 1 : g->rs;
  cs = c <= 1 ? (r > 1 ? r : 1) : g->cs;
  if (rs == 1 && cs >= (r > 1 ? r : 1)) { *ld = cs; return 1; }
  return -1;
}

/* ---------------------------------------------------------------- element access */
static inline double load_d(int dt, const char *p) {
  switch (dt) {
#define X(DT, T, LOAD, STORE) \
  case DT: { T x = *(const T *)p; return (double)(LOAD); }
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return 0;
}
static inline void store_d(int dt, char *p, double v) {
  switch (dt) {
#define X(DT, T, LOAD, STORE) \
  case DT: *(T *)p = STORE; return;
    MT_FOREACH_DTYPE(X)
#undef X
  }
}
static inline int64_t load_i(int dt, const char *p) {
  switch (dt) {
  case MT_UINT8: case MT_BOOL: return *(const uint8_t *)p;
  case MT_INT8: return *(const int8_t *)p;
  case MT_INT16: return *(const int16_t *)p;
  case MT_INT32: return *(const int32_t *)p;
  case MT_INT64: return *(const int64_t *)p;
  }
  return 0;
}
static inline void store_i(int dt, char *p, int64_t v) {
  switch (dt) {
  case MT_UINT8: case MT_BOOL: *(uint8_t *)p = (uint8_t)v; return;
  case MT_INT8: *(int8_t *)p = (int8_t)v; return;
  case MT_INT16: *(int16_t *)p = (int16_t)v; return;
  case MT_INT32: *(int32_t *)p = (int32_t)v; return;
  case MT_INT64: *(int64_t *)p = v; return;
  }
}

/* ---------------------------------------------------------------- the small float32 kernel */
#ifdef MT_HAVE_X86
static int cpu_avx2_fma = -1;
static int have_avx2_fma(void) {
  if (cpu_avx2_fma < 0) cpu_avx2_fma = mt_cpu_has(MT_CPU_AVX2 | MT_CPU_FMA);
  return cpu_avx2_fma;
}

/* One MR x (8*NV) tile of C: acc = A[0:MR, :] @ B[:, 0:8*NV]; then C = alpha*acc (+ beta*C).
 * When `masked`, NV is 1 and only the lanes in `mask` are read and written (the last columns).
 * MR and NV are constants at every call site, so the loops unroll and acc lives in registers. */
#define TGT __attribute__((target("avx2,fma")))
static inline __attribute__((always_inline)) TGT void tile_f32(const int MR, const int NV, const int masked,
                                                                __m256i mask, int64_t K, const float *A, int64_t ars,
                                                                int64_t acs, const float *B, int64_t ldb, float *C,
                                                                int64_t ldc, float alpha, float beta) {
  __m256 acc0[6], acc1[6];
  for (int i = 0; i < MR; i++) {
    acc0[i] = _mm256_setzero_ps();
    acc1[i] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < K; k++) {
    const float *bk = B + k * ldb;
    const float *ak = A + k * acs;
    __m256 b0 = masked ? _mm256_maskload_ps(bk, mask) : _mm256_loadu_ps(bk);
    __m256 b1 = NV == 2 ? _mm256_loadu_ps(bk + 8) : b0;
    for (int i = 0; i < MR; i++) {
      __m256 a = _mm256_broadcast_ss(ak + i * ars);
      acc0[i] = _mm256_fmadd_ps(a, b0, acc0[i]);
      if (NV == 2) acc1[i] = _mm256_fmadd_ps(a, b1, acc1[i]);
    }
  }
  __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  for (int i = 0; i < MR; i++) {
    float *c = C + i * ldc;
    __m256 r0 = _mm256_mul_ps(acc0[i], va);
    if (masked) {
      if (beta != 0) r0 = _mm256_fmadd_ps(_mm256_maskload_ps(c, mask), vb, r0);
      _mm256_maskstore_ps(c, mask, r0);
    } else {
      if (beta != 0) r0 = _mm256_fmadd_ps(_mm256_loadu_ps(c), vb, r0);
      _mm256_storeu_ps(c, r0);
      if (NV == 2) {
        __m256 r1 = _mm256_mul_ps(acc1[i], va);
        if (beta != 0) r1 = _mm256_fmadd_ps(_mm256_loadu_ps(c + 8), vb, r1);
        _mm256_storeu_ps(c + 8, r1);
      }
    }
  }
}

#define TILE_ROWS(NV, MASKED)                                                                                  \
  switch (mr) {                                                                                                \
  case 6: tile_f32(6, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  case 5: tile_f32(5, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  case 4: tile_f32(4, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  case 3: tile_f32(3, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  case 2: tile_f32(2, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  default: tile_f32(1, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                  \
  }

/* C (M x N, row stride ldc, unit col stride) = alpha * A @ B + beta * C, with A any strides and B
 * row-major (unit col stride). K >= 1. */
static TGT void sgemm_small(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t ars, int64_t acs,
                            const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t j = 0; j < N;) {
    int64_t left = N - j;
    const float *b = B + j;
    if (left >= 16) {
      __m256i mask = _mm256_setzero_si256();
      for (int64_t i = 0; i < M; i += 6) {
        int mr = M - i < 6 ? (int)(M - i) : 6;
        const float *a = A + i * ars;
        float *c = C + i * ldc + j;
        TILE_ROWS(2, 0)
      }
      j += 16;
    } else if (left >= 8) {
      __m256i mask = _mm256_setzero_si256();
      for (int64_t i = 0; i < M; i += 6) {
        int mr = M - i < 6 ? (int)(M - i) : 6;
        const float *a = A + i * ars;
        float *c = C + i * ldc + j;
        TILE_ROWS(1, 0)
      }
      j += 8;
    } else {
      __m256i mask = _mm256_loadu_si256((const __m256i *)(lanes + 8 - left));
      for (int64_t i = 0; i < M; i += 6) {
        int mr = M - i < 6 ? (int)(M - i) : 6;
        const float *a = A + i * ars;
        float *c = C + i * ldc + j;
        TILE_ROWS(1, 1)
      }
      j = N;
    }
  }
}
#undef TILE_ROWS
#else
static int have_avx2_fma(void) { return 0; }
#endif

/* Products whose B fits in half of L2 and of up to bl->small_macs multiply-adds (on one thread: up
 * to SMALL_MACS_1T) use the small kernel: below that, the BLAS's packing and thread wake-ups cost more
 * than the arithmetic. Measured on the 2-core EPYC (core/blas.c has the figures per provider). */
#define SMALL_MACS_1T (192LL * 192 * 192)
#define SMALL_B_BYTES (256 * 1024)
static inline int use_small(const mt_blas *bl, int dt, int64_t M, int64_t N, int64_t K) {
  int64_t most = mt_get_num_threads() > 1 ? bl->small_macs : SMALL_MACS_1T;
  return dt == MT_FLOAT32 && M * N * K <= most && K * N * 4 <= SMALL_B_BYTES && have_avx2_fma();
}

/* ---------------------------------------------------------------- scratch */
/* A contiguous row-major copy of a strided matrix of `dt` (BLAS dtypes only). */
static void pack_rowmajor(int dt, const char *src, const geo *g, char *dst) {
  size_t it = mt_itemsize(dt);
  if (dt == MT_FLOAT32) {
    float *d = (float *)dst;
    const float *s = (const float *)src;
    for (int64_t i = 0; i < g->r; i++)
      for (int64_t j = 0; j < g->c; j++) *d++ = s[i * g->rs + j * g->cs];
  } else if (dt == MT_FLOAT64) {
    double *d = (double *)dst;
    const double *s = (const double *)src;
    for (int64_t i = 0; i < g->r; i++)
      for (int64_t j = 0; j < g->c; j++) *d++ = s[i * g->rs + j * g->cs];
  } else {
    for (int64_t i = 0; i < g->r; i++)
      for (int64_t j = 0; j < g->c; j++, dst += it) memcpy(dst, src + (i * g->rs + j * g->cs) * (int64_t)it, it);
  }
}

/* ---------------------------------------------------------------- scratch space */
/* Grown on demand, so that BLAS-able products never allocate. */
typedef struct {
  char *p;
  size_t n;
  int failed;
} scratch_t;
static char *scratch_get(scratch_t *s, size_t n) {
  if (n > s->n) {
    mt_aligned_free(s->p);
    s->p = mt_aligned_alloc(n ? n : 1);
    s->n = s->p ? n : 0;
    if (!s->p) s->failed = 1;
  }
  return s->p;
}

/* ---------------------------------------------------------------- one product, BLAS dtypes */
/* C = alpha * A @ B + beta * C for float32/float64, one matrix. Operands BLAS cannot read are
 * copied into `scr` (room for M*K + K*N + M*N elements, taken only then). */
static void gemm_blas_one(const mt_blas *bl, int dt, int64_t M, int64_t N, int64_t K, double alpha, const char *A,
                          geo ga, const char *B, geo gb, double beta, char *C, geo gc, scratch_t *scr,
                          int allow_small) {
  size_t it = mt_itemsize(dt);
  char *scratch = NULL;
#define SCRATCH()                                                                            \
  do {                                                                                       \
    scratch = scratch_get(scr, (size_t)(M * K + K * N + M * N) * it);                        \
    if (!scratch) return;                                                                    \
    sa = scratch, sb = scratch + M * K * (int64_t)it, sc = sb + K * N * (int64_t)it;         \
  } while (0)
  if (M == 0 || N == 0) return;
  if (K == 0) { /* C = beta * C */
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        char *p = C + (i * gc.rs + j * gc.cs) * (int64_t)it;
        if (dt == MT_FLOAT32) *(float *)p = beta == 0 ? 0.0f : (float)(beta * *(float *)p);
        else *(double *)p = beta == 0 ? 0.0 : beta * *(double *)p;
      }
    return;
  }
  /* vector . vector */
  if (M == 1 && N == 1) {
    int64_t ia = ga.cs, ib = gb.rs;
    double d;
    if (K == 1) ia = ib = 1;
    if (ia <= 0 || ib <= 0) { /* BLAS may not take zero/negative increments: plain loop */
      d = 0;
      for (int64_t k = 0; k < K; k++)
        d += dt == MT_FLOAT32 ? (double)((const float *)A)[k * ga.cs] * ((const float *)B)[k * gb.rs]
                              : ((const double *)A)[k * ga.cs] * ((const double *)B)[k * gb.rs];
    } else if (dt == MT_FLOAT32) {
      d = bl->sdot(K, (const float *)A, ia, (const float *)B, ib);
    } else {
      d = bl->ddot(K, (const double *)A, ia, (const double *)B, ib);
    }
    if (dt == MT_FLOAT32) {
      float r = (float)alpha * (float)d;
      *(float *)C = beta == 0 ? r : r + (float)beta * *(float *)C;
    } else {
      double r = alpha * d;
      *(double *)C = beta == 0 ? r : r + beta * *(double *)C;
    }
    return;
  }
  char *sa = NULL, *sb = NULL, *sc = NULL;
#ifdef MT_HAVE_X86
  if (allow_small && use_small(bl, dt, M, N, K)) {
    const float *b = (const float *)B;
    int64_t ldb = K == 1 ? 0 : gb.rs; /* one row: its stride is never used */
    if (!(gb.cs == 1 || N == 1)) {
      SCRATCH();
      pack_rowmajor(dt, B, &gb, sb);
      b = (const float *)sb;
      ldb = N;
    }
    if (gc.cs == 1 || N == 1) {
      sgemm_small(M, N, K, (float)alpha, (const float *)A, ga.rs, ga.cs, b, ldb, (float)beta, (float *)C,
                  M == 1 ? 0 : gc.rs);
    } else { /* C written through a row-major scratch */
      geo gs = {M, N, N, 1};
      if (!scratch) SCRATCH();
      if (beta != 0) pack_rowmajor(dt, C, &gc, sc);
      sgemm_small(M, N, K, (float)alpha, (const float *)A, ga.rs, ga.cs, b, ldb, (float)beta, (float *)sc, N);
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) ((float *)C)[i * gc.rs + j * gc.cs] = ((float *)sc)[i * gs.rs + j];
    }
    return;
  }
#endif
  int64_t lda = 0, ldb = 0, ldc = 0;
  int ta = blas_layout(&ga, &lda), tb = blas_layout(&gb, &ldb), tc = blas_layout(&gc, &ldc);
  if (ta < 0 || tb < 0 || tc < 0) SCRATCH();
  if (ta < 0) { pack_rowmajor(dt, A, &ga, sa); A = sa; ta = 0; lda = K; }
  if (tb < 0) { pack_rowmajor(dt, B, &gb, sb); B = sb; tb = 0; ldb = N; }
  char *cw = C;
  if (tc < 0) {
    if (beta != 0) pack_rowmajor(dt, C, &gc, sc);
    cw = sc; tc = 0; ldc = N;
  }
  if (tc == 1) {
    /* C column-major: compute C^T = B^T A^T in row-major terms */
    const char *tp = A; A = B; B = tp;
    int64_t t = M; M = N; N = t;
    int tt = ta; ta = !tb; tb = !tt;
    t = lda; lda = ldb; ldb = t;
  }
  /* matrix . vector and vector . matrix through gemv */
  if (N == 1 || M == 1) {
    int vec_is_b = N == 1;
    /* y = op(Mat) x: Mat is A (M x K) when N == 1, else B^T (N x K) */
    const char *mat = vec_is_b ? A : B;
    int64_t ldm = vec_is_b ? lda : ldb;
    int tm = vec_is_b ? ta : !tb;
    int64_t rows = vec_is_b ? M : N;
    /* the vector: B's column (N == 1) or A's row (M == 1), and C's single column / row */
    int64_t incx, incy;
    const char *x = vec_is_b ? B : A;
    if (vec_is_b) incx = tb == 0 ? ldb : 1; else incx = ta == 0 ? 1 : lda;
    incy = vec_is_b ? ldc : 1;
    if (K == 1) incx = 1;
    if (rows == 1) incy = 1;
    if (incx > 0 && incy > 0) {
      /* row-major mat as stored: (rows x K) when !tm, (K x rows) when tm */
      if (dt == MT_FLOAT32)
        bl->sgemv(tm, tm ? K : rows, tm ? rows : K, (float)alpha, (const float *)mat, ldm, (const float *)x, incx,
                  (float)beta, (float *)cw, incy);
      else
        bl->dgemv(tm, tm ? K : rows, tm ? rows : K, alpha, (const double *)mat, ldm, (const double *)x, incx, beta,
                  (double *)cw, incy);
      goto done;
    }
  }
  if (dt == MT_FLOAT32)
    bl->sgemm(ta, tb, M, N, K, (float)alpha, (const float *)A, lda, (const float *)B, ldb, (float)beta, (float *)cw,
              ldc);
  else
    bl->dgemm(ta, tb, M, N, K, alpha, (const double *)A, lda, (const double *)B, ldb, beta, (double *)cw, ldc);
done:
  if (cw != C) {
    /* sizes may have been swapped above only when tc == 1, which never uses the scratch */
    for (int64_t i = 0; i < gc.r; i++)
      for (int64_t j = 0; j < gc.c; j++) {
        if (dt == MT_FLOAT32) ((float *)C)[i * gc.rs + j * gc.cs] = ((float *)cw)[i * gc.c + j];
        else ((double *)C)[i * gc.rs + j * gc.cs] = ((double *)cw)[i * gc.c + j];
      }
  }
#undef SCRATCH
}

/* ---------------------------------------------------------------- batched driver */
typedef struct {
  int dt;
  int64_t nb, M, N, K;
  double alpha, beta;
  const char *A, *B;
  char *C;
  geo ga, gb, gc;
  const int64_t *aoff, *boff, *coff; /* per batch, in elements; NULL: 0 */
  const mt_blas *bl;
  int allow_small;
  int failed; /* scratch could not be allocated */
} gemm_job;

static void run_range(void *ctx_, int64_t lo, int64_t hi) {
  gemm_job *j = ctx_;
  size_t it = mt_itemsize(j->dt);
  scratch_t scratch = {0};
  for (int64_t p = lo; p < hi; p++) {
    int64_t oa = j->aoff ? j->aoff[p] : 0, ob = j->boff ? j->boff[p] : 0, oc = j->coff ? j->coff[p] : 0;
    gemm_blas_one(j->bl, j->dt, j->M, j->N, j->K, j->alpha, j->A + oa * (int64_t)it, j->ga, j->B + ob * (int64_t)it,
                  j->gb, j->beta, j->C + oc * (int64_t)it, j->gc, &scratch, j->allow_small);
  }
  mt_aligned_free(scratch.p);
  if (scratch.failed) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

/* Integers: 64-bit wrap-around accumulation (unsigned arithmetic, so overflow is defined). */
static void gemm_int(const gemm_job *j) {
  int dt = j->dt;
  size_t it = mt_itemsize(dt);
  uint64_t alpha = (uint64_t)(int64_t)j->alpha, beta = (uint64_t)(int64_t)j->beta;
  for (int64_t p = 0; p < j->nb; p++) {
    const char *A = j->A + (j->aoff ? j->aoff[p] : 0) * (int64_t)it;
    const char *B = j->B + (j->boff ? j->boff[p] : 0) * (int64_t)it;
    char *C = j->C + (j->coff ? j->coff[p] : 0) * (int64_t)it;
    for (int64_t i = 0; i < j->M; i++)
      for (int64_t n = 0; n < j->N; n++) {
        uint64_t acc = 0;
        for (int64_t k = 0; k < j->K; k++)
          acc += (uint64_t)load_i(dt, A + (i * j->ga.rs + k * j->ga.cs) * (int64_t)it) *
                 (uint64_t)load_i(dt, B + (k * j->gb.rs + n * j->gb.cs) * (int64_t)it);
        char *c = C + (i * j->gc.rs + n * j->gc.cs) * (int64_t)it;
        uint64_t r = alpha * acc;
        if (j->beta != 0) r += beta * (uint64_t)load_i(dt, c);
        store_i(dt, c, (int64_t)r);
      }
  }
}

/* float16 / bfloat16: each matrix converted to float32, multiplied, rounded back. */
static mt_status gemm_half(const gemm_job *j) {
  int dt = j->dt;
  size_t it = mt_itemsize(dt);
  int64_t M = j->M, N = j->N, K = j->K;
  float *buf = mt_aligned_alloc((size_t)(M * K + K * N + M * N) * sizeof(float) + 64);
  scratch_t scratch = {0};
  if (!buf) {
    return mt_error(MT_ENOMEM, "matmul: out of memory");
  }
  float *fa = buf, *fb = buf + M * K, *fc = fb + K * N;
  geo ga = {M, K, K, 1}, gb = {K, N, N, 1}, gc = {M, N, N, 1};
  for (int64_t p = 0; p < j->nb; p++) {
    const char *A = j->A + (j->aoff ? j->aoff[p] : 0) * (int64_t)it;
    const char *B = j->B + (j->boff ? j->boff[p] : 0) * (int64_t)it;
    char *C = j->C + (j->coff ? j->coff[p] : 0) * (int64_t)it;
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++) fa[i * K + k] = (float)load_d(dt, A + (i * j->ga.rs + k * j->ga.cs) * (int64_t)it);
    for (int64_t k = 0; k < K; k++)
      for (int64_t n = 0; n < N; n++) fb[k * N + n] = (float)load_d(dt, B + (k * j->gb.rs + n * j->gb.cs) * (int64_t)it);
    if (j->beta != 0)
      for (int64_t i = 0; i < M; i++)
        for (int64_t n = 0; n < N; n++) fc[i * N + n] = (float)load_d(dt, C + (i * j->gc.rs + n * j->gc.cs) * (int64_t)it);
    gemm_blas_one(j->bl, MT_FLOAT32, M, N, K, j->alpha, (const char *)fa, ga, (const char *)fb, gb, j->beta, (char *)fc,
                  gc, &scratch, 1);
    for (int64_t i = 0; i < M; i++)
      for (int64_t n = 0; n < N; n++) store_d(dt, C + (i * j->gc.rs + n * j->gc.cs) * (int64_t)it, fc[i * N + n]);
  }
  mt_aligned_free(buf);
  mt_aligned_free(scratch.p);
  return MT_OK;
}

static mt_status gemm_run(gemm_job *j) {
  if (j->nb == 0 || j->M == 0 || j->N == 0) return MT_OK;
  if (j->dt == MT_FLOAT32 || j->dt == MT_FLOAT64 || mt_is_reduced_float(j->dt)) {
    j->bl = mt_blas_get("matmul");
    if (!j->bl) return MT_EDEVICE;
  }
  if (j->dt == MT_FLOAT32 || j->dt == MT_FLOAT64) {
    int64_t flops = j->M * j->N * j->K;
    int small = use_small(j->bl, j->dt, j->M, j->N, j->K);
    j->allow_small = 1;
    if (j->nb > 1 && small && !(j->M == 1 && j->N == 1) && !mt_in_parallel()) {
      /* many small products: split the batch over our pool, each on the single-thread kernel (never
       * the BLAS, which would start its own threads beside ours: dots stay on this thread) */
      int64_t grain = (MT_GRAIN * 8) / (flops + 1) + 1;
      mt_parallel_for(j->nb, grain, run_range, j);
    } else {
      run_range(j, 0, j->nb); /* BLAS threads itself */
    }
    if (j->failed) return mt_error(MT_ENOMEM, "matmul: out of memory for a scratch copy of an operand");
    return MT_OK;
  }
  if (mt_is_reduced_float(j->dt)) return gemm_half(j);
  gemm_int(j);
  return MT_OK;
}

/* ---------------------------------------------------------------- helpers on tensors */
/* Offsets of every batch of `t` (whose first nbd dims are batch dims, broadcast to bshape,
 * aligned right) over the row-major iteration of bshape. */
static void batch_offsets(const mt_tensor *t, int tbd, const int64_t *bshape, int nbd, int64_t nb, int64_t *offs) {
  int64_t st[MT_MAX_DIMS];
  for (int d = 0; d < nbd; d++) {
    int td = d - (nbd - tbd);
    st[d] = (td < 0 || t->_sizes[td] == 1) ? 0 : t->_strides[td];
  }
  int64_t idx[MT_MAX_DIMS] = {0};
  int64_t off = 0;
  for (int64_t p = 0; p < nb; p++) {
    offs[p] = off;
    for (int d = nbd - 1; d >= 0; d--) {
      if (++idx[d] < bshape[d]) { off += st[d]; break; }
      off -= st[d] * (idx[d] - 1);
      idx[d] = 0;
    }
  }
}

static int64_t prod(const int64_t *s, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s[i];
  return p;
}

/* Write the product into `r`; when r shares memory with an input, go through a fresh tensor. */
typedef struct {
  mt_tensor *r;   /* where the result goes (new reference) */
  mt_tensor *tmp; /* a fresh tensor to compute into, copied to r afterwards, or NULL */
} dest;

static mt_status dest_open(dest *d, mt_tensor *out, const int64_t *sizes, int nd, int dt, const char *op,
                           mt_tensor *a, mt_tensor *b) {
  d->r = d->tmp = NULL;
  MT_TRY(check_out_dtype(op, out, dt));
  MT_TRY(mt_out_or_new(out, sizes, nd, dt, op, &d->r));
  if (out && ((a && mt_may_overlap(d->r, a)) || (b && mt_may_overlap(d->r, b)))) {
    mt_status s = mt_new(sizes, nd, dt, op, &d->tmp);
    if (s != MT_OK) { mt_tensor_release(d->r); return s; }
  }
  return MT_OK;
}
static inline mt_tensor *dest_target(dest *d) { return d->tmp ? d->tmp : d->r; }
static mt_status dest_close(dest *d, mt_status s, mt_tensor *out, mt_tensor **result) {
  if (s == MT_OK && d->tmp) s = mt_copy_(d->r, d->tmp);
  if (d->tmp) mt_tensor_release(d->tmp);
  if (s != MT_OK) { mt_tensor_release(d->r); return s; }
  if (out) mt_bump_version(out);
  return mt_give(d->r, result);
}

/* c broadcast to (sizes) as PyTorch's expand: messages as expand's. */
static mt_status check_expand(const char *op, const mt_tensor *c, const int64_t *sizes, int nd) {
  if (c->_ndim > nd)
    return mt_error(MT_ESHAPE,
                    "%s: expand(torch.%sTensor{%s}, size=%s): the number of sizes provided (%d) must be greater or "
                    "equal to the number of dimensions in the tensor (%d)",
                    op, mt_type_title(c->_dtype), MT_SHAPE(c), mt_shape_str(sizes, nd), nd, c->_ndim);
  for (int i = 0; i < c->_ndim; i++) {
    int d = nd - c->_ndim + i;
    if (c->_sizes[i] != 1 && c->_sizes[i] != sizes[d])
      return mt_error(MT_ESHAPE,
                      "%s: The expanded size of the tensor (%lld) must match the existing size (%lld) at non-singleton "
                      "dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                      op, (long long)sizes[d], (long long)c->_sizes[i], d, mt_shape_str(sizes, nd), MT_SHAPE(c));
  }
  return MT_OK;
}

/* r (M x N or B x M x N) = beta * c broadcast into it, before a product with that beta. */
static mt_status preload_c(mt_tensor *r, mt_tensor *c, double beta) {
  if (beta == 0 || r == c) return MT_OK;
  return mt_copy_(r, c);
}

/* ---------------------------------------------------------------- the ops */
/* r[M x N] (2-D, any strides) = alpha * a @ b + beta * r: a, b 2-D views checked by the caller. */
static mt_status mm_into(mt_tensor *r, const mt_tensor *a, const mt_tensor *b, double alpha, double beta) {
  gemm_job j = {0};
  j.dt = a->_dtype;
  j.nb = 1;
  j.M = a->_sizes[0];
  j.K = a->_sizes[1];
  j.N = b->_sizes[1];
  j.alpha = alpha;
  j.beta = beta;
  j.A = a->_data;
  j.B = b->_data;
  j.C = r->_data;
  j.ga = geo_of(a, 0);
  j.gb = geo_of(b, 0);
  j.gc = geo_of(r, 0);
  return gemm_run(&j);
}

static mt_status mm_checks(const char *op, const mt_tensor *a, const mt_tensor *b) {
  MT_TRY(mt_check_tensor(a, op, "self"));
  MT_TRY(mt_check_tensor(b, op, "mat2"));
  if (a->_ndim != 2) return mt_error(MT_ESHAPE, "%s: self must be a matrix", op);
  if (b->_ndim != 2) return mt_error(MT_ESHAPE, "%s: mat2 must be a matrix", op);
  if (a->_sizes[1] != b->_sizes[0])
    return mt_error(MT_ESHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                    (long long)a->_sizes[0], (long long)a->_sizes[1], (long long)b->_sizes[0], (long long)b->_sizes[1]);
  if (a->_dtype != b->_dtype) return dtype_mismatch(op, a->_dtype, b->_dtype);
  return not_for_bool(op, "addmm_impl_cpu_", a->_dtype);
}

static mt_status mm_impl(const char *op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mm_checks(op, a, b));
  int64_t sz[2] = {a->_sizes[0], b->_sizes[1]};
  if (!out) { /* the hot path: a fresh contiguous result */
    mt_tensor *r;
    MT_TRY(mt_new(sz, 2, a->_dtype, op, &r));
    mt_status s = mm_into(r, a, b, 1.0, 0.0);
    if (s != MT_OK) { mt_tensor_release(r); return s; }
    return mt_give(r, result);
  }
  dest d;
  MT_TRY(dest_open(&d, out, sz, 2, a->_dtype, op, a, b));
  return dest_close(&d, mm_into(dest_target(&d), a, b, 1.0, 0.0), out, result);
}

static mt_status pub_mm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  return mm_impl("mm", a, b, out, result);
}

static mt_status addmm_impl(const char *op, mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha,
                            mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_check_tensor(c, op, "self"));
  MT_TRY(mt_check_tensor(a, op, "mat1"));
  MT_TRY(mt_check_tensor(b, op, "mat2"));
  if (a->_ndim != 2) return mt_error(MT_ESHAPE, "%s: mat1 must be a matrix, got %d-D tensor", op, a->_ndim);
  if (b->_ndim != 2) return mt_error(MT_ESHAPE, "%s: mat2 must be a matrix, got %d-D tensor", op, b->_ndim);
  if (a->_dtype != b->_dtype) return mt_error(MT_EDTYPE, "%s: mat1 and mat2 must have the same dtype", op);
  if (c->_dtype != b->_dtype) return mt_error(MT_EDTYPE, "%s: self and mat2 must have the same dtype", op);
  if (a->_sizes[1] != b->_sizes[0])
    return mt_error(MT_ESHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                    (long long)a->_sizes[0], (long long)a->_sizes[1], (long long)b->_sizes[0], (long long)b->_sizes[1]);
  MT_TRY(not_for_bool(op, "addmm_impl_cpu_", a->_dtype));
  int64_t sz[2] = {a->_sizes[0], b->_sizes[1]};
  MT_TRY(check_expand(op, c, sz, 2));
  if (out == c && (c->_ndim != 2 || c->_sizes[0] != sz[0] || c->_sizes[1] != sz[1]))
    return mt_error(MT_ESHAPE, "%s: the in-place result %s does not have the product's shape %s", op, MT_SHAPE(c),
                    mt_shape_str(sz, 2));
  dest d;
  MT_TRY(dest_open(&d, out, sz, 2, a->_dtype, op, a, b));
  mt_tensor *t = dest_target(&d);
  mt_status s = preload_c(t, c, beta);
  if (s == MT_OK) s = mm_into(t, a, b, alpha, beta);
  return dest_close(&d, s, out, result);
}

static mt_status pub_addmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                   mt_tensor **result) {
  return addmm_impl("addmm", c, a, b, beta, alpha, out, result);
}

/* r (B x M x N) = alpha * a @ b + beta * r, a and b 3-D */
static mt_status bmm_into(mt_tensor *r, const mt_tensor *a, const mt_tensor *b, double alpha, double beta) {
  int64_t nb = a->_sizes[0];
  int64_t *offs = malloc(sizeof(int64_t) * 3 * (size_t)(nb ? nb : 1));
  if (!offs) return mt_error(MT_ENOMEM, "bmm: out of memory");
  for (int64_t p = 0; p < nb; p++) {
    offs[p] = p * a->_strides[0];
    offs[nb + p] = p * b->_strides[0];
    offs[2 * nb + p] = p * r->_strides[0];
  }
  gemm_job j = {0};
  j.dt = a->_dtype;
  j.nb = nb;
  j.M = a->_sizes[1];
  j.K = a->_sizes[2];
  j.N = b->_sizes[2];
  j.alpha = alpha;
  j.beta = beta;
  j.A = a->_data;
  j.B = b->_data;
  j.C = r->_data;
  j.ga = geo_of(a, 1);
  j.gb = geo_of(b, 1);
  j.gc = geo_of(r, 1);
  j.aoff = offs;
  j.boff = offs + nb;
  j.coff = offs + 2 * nb;
  mt_status s = gemm_run(&j);
  free(offs);
  return s;
}

static mt_status bmm_checks(const char *op, const mt_tensor *a, const mt_tensor *b, const char *kernel) {
  MT_TRY(mt_check_tensor(a, op, "batch1"));
  MT_TRY(mt_check_tensor(b, op, "batch2"));
  if (a->_ndim != 3) return mt_error(MT_ESHAPE, "%s: batch1 must be a 3D tensor", op);
  if (b->_ndim != 3) return mt_error(MT_ESHAPE, "%s: batch2 must be a 3D tensor", op);
  if (b->_sizes[0] != a->_sizes[0] || b->_sizes[1] != a->_sizes[2])
    return mt_error(MT_ESHAPE,
                    "%s: Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, "
                    "%lld].",
                    op, (long long)a->_sizes[0], (long long)a->_sizes[2], (long long)b->_sizes[0],
                    (long long)b->_sizes[1]);
  if (a->_dtype != b->_dtype) return dtype_mismatch(op, a->_dtype, b->_dtype);
  return not_for_bool(op, kernel, a->_dtype);
}

static mt_status bmm_impl(const char *op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(bmm_checks(op, a, b, "bmm"));
  int64_t sz[3] = {a->_sizes[0], a->_sizes[1], b->_sizes[2]};
  dest d;
  MT_TRY(dest_open(&d, out, sz, 3, a->_dtype, op, a, b));
  return dest_close(&d, bmm_into(dest_target(&d), a, b, 1.0, 0.0), out, result);
}

static mt_status pub_bmm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  return bmm_impl("bmm", a, b, out, result);
}

static mt_status pub_baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                     mt_tensor **result) {
  const char *op = "baddbmm";
  MT_TRY(mt_check_tensor(c, op, "self"));
  MT_TRY(bmm_checks(op, a, b, "baddbmm"));
  int64_t sz[3] = {a->_sizes[0], a->_sizes[1], b->_sizes[2]};
  MT_TRY(check_expand(op, c, sz, 3));
  if (out == c && (c->_ndim != 3 || memcmp(c->_sizes, sz, sizeof sz)))
    return mt_error(MT_ESHAPE, "%s: the in-place result %s does not have the product's shape %s", op, MT_SHAPE(c),
                    mt_shape_str(sz, 3));
  dest d;
  MT_TRY(dest_open(&d, out, sz, 3, a->_dtype, op, a, b));
  mt_tensor *t = dest_target(&d);
  mt_status s = preload_c(t, c, beta);
  if (s == MT_OK) s = bmm_into(t, a, b, alpha, beta);
  return dest_close(&d, s, out, result);
}

/* mv: the product with N = 1, the vector as a K x 1 matrix */
static mt_status mv_impl(const char *op, mt_tensor *a, mt_tensor *v, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, op, "self"));
  MT_TRY(mt_check_tensor(v, op, "vec"));
  if (a->_ndim != 2 || v->_ndim != 1)
    return mt_error(MT_ESHAPE, "%s: vector + matrix @ vector expected, got 1, %d, %d", op, a->_ndim, v->_ndim);
  if (a->_sizes[1] != v->_sizes[0])
    return mt_error(MT_ESHAPE, "%s: size mismatch, got %lld, %lldx%lld,%lld", op, (long long)a->_sizes[0],
                    (long long)a->_sizes[0], (long long)a->_sizes[1], (long long)v->_sizes[0]);
  if (a->_dtype != v->_dtype) return dtype_mismatch(op, a->_dtype, v->_dtype);
  MT_TRY(not_for_bool(op, "addmv_impl_cpu", a->_dtype));
  int64_t sz[1] = {a->_sizes[0]};
  dest d;
  MT_TRY(dest_open(&d, out, sz, 1, a->_dtype, op, a, v));
  mt_tensor *t = dest_target(&d);
  gemm_job j = {0};
  j.dt = a->_dtype;
  j.nb = 1;
  j.M = a->_sizes[0];
  j.K = a->_sizes[1];
  j.N = 1;
  j.alpha = 1;
  j.beta = 0;
  j.A = a->_data;
  j.B = v->_data;
  j.C = t->_data;
  j.ga = geo_of(a, 0);
  j.gb = (geo){v->_sizes[0], 1, v->_strides[0], 1};
  j.gc = (geo){t->_sizes[0], 1, t->_strides[0], 1};
  return dest_close(&d, gemm_run(&j), out, result);
}

static mt_status pub_mv(mt_tensor *a, mt_tensor *v, mt_tensor *out, mt_tensor **result) {
  return mv_impl("mv", a, v, out, result);
}

static mt_status dot_impl(const char *op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, op, "self"));
  MT_TRY(mt_check_tensor(b, op, "tensor"));
  if (a->_ndim != 1 || b->_ndim != 1)
    return mt_error(MT_ESHAPE, "%s: 1D tensors expected, but got %dD and %dD tensors", op, a->_ndim, b->_ndim);
  if (a->_dtype != b->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected both vectors to have same dtype, but found %s and %s", op,
                    mt_type_title(a->_dtype), mt_type_title(b->_dtype));
  if (a->_sizes[0] != b->_sizes[0])
    return mt_error(MT_ESHAPE,
                    "%s: inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same number of "
                    "elements, but got %lld and %lld elements respectively",
                    op, (long long)a->_sizes[0], (long long)b->_sizes[0], (long long)a->_sizes[0],
                    (long long)b->_sizes[0]);
  MT_TRY(not_for_bool(op, "dot", a->_dtype));
  dest d;
  MT_TRY(dest_open(&d, out, NULL, 0, a->_dtype, op, a, b));
  mt_tensor *t = dest_target(&d);
  gemm_job j = {0};
  j.dt = a->_dtype;
  j.nb = 1;
  j.M = 1;
  j.K = a->_sizes[0];
  j.N = 1;
  j.alpha = 1;
  j.beta = 0;
  j.A = a->_data;
  j.B = b->_data;
  j.C = t->_data;
  j.ga = (geo){1, a->_sizes[0], 1, a->_strides[0]};
  j.gb = (geo){b->_sizes[0], 1, b->_strides[0], 1};
  j.gc = (geo){1, 1, 1, 1};
  return dest_close(&d, gemm_run(&j), out, result);
}

static mt_status pub_dot(mt_tensor *a, mt_tensor *b, mt_tensor **result) { return dot_impl("dot", a, b, NULL, result); }

static mt_status pub_outer(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "outer", "self"));
  MT_TRY(mt_check_tensor(b, "outer", "vec2"));
  if (a->_ndim != 1) return mt_error(MT_ESHAPE, "outer: Expected 1-D argument self, but got %d-D", a->_ndim);
  if (b->_ndim != 1) return mt_error(MT_ESHAPE, "outer: Expected 1-D argument vec2, but got %d-D", b->_ndim);
  /* a[:, None] * b[None, :]: broadcasting and type promotion as PyTorch's outer */
  int64_t sa[2] = {a->_sizes[0], 1}, ta[2] = {a->_strides[0], 1};
  int64_t sb[2] = {1, b->_sizes[0]}, tb[2] = {1, b->_strides[0]};
  mt_tensor *va = NULL, *vb = NULL;
  MT_TRY(mt_new_view(a, sa, ta, 2, a->_offset, &va));
  mt_status s = mt_new_view(b, sb, tb, 2, b->_offset, &vb);
  if (s == MT_OK) s = mt_binary(MT_OP_MUL, va, vb, NULL, result);
  mt_tensor_release(va);
  if (vb) mt_tensor_release(vb);
  return s;
}

/* ---------------------------------------------------------------- matmul */
/* Reshape `r` (a new reference, contiguous) to sizes, handing the view out. */
static mt_status give_reshaped(mt_tensor *r, const int64_t *sizes, int nd, mt_tensor *out, mt_tensor **result) {
  if (out) {
    mt_status s = mt_prepare_out(out, sizes, nd, r->_dtype, "matmul");
    if (s == MT_OK) {
      mt_tensor *v;
      s = mt_view(r, sizes, nd, &v);
      if (s == MT_OK) {
        s = mt_copy_(out, v);
        mt_tensor_release(v);
      }
    }
    mt_tensor_release(r);
    if (s != MT_OK) return s;
    return mt_give(mt_tensor_retain(out), result);
  }
  mt_tensor *v;
  mt_status s = mt_view(r, sizes, nd, &v);
  mt_tensor_release(r);
  if (s != MT_OK) return s;
  return mt_give(v, result);
}

/* Can dims [0, n) of t be merged into one (a view, no copy)? *stride: the merged dim's stride. */
static int mergeable(const mt_tensor *t, int n, int64_t *stride) {
  int64_t expect = 0;
  int have = 0;
  *stride = 1;
  for (int i = n - 1; i >= 0; i--) {
    if (t->_sizes[i] == 1) continue;
    if (!have) {
      *stride = t->_strides[i];
      expect = t->_strides[i] * t->_sizes[i];
      have = 1;
    } else {
      if (t->_strides[i] != expect) return 0;
      expect *= t->_sizes[i];
    }
  }
  return 1;
}

/* a (..., M, K) @ b (..., K, N) with broadcast batch dims; a1/b1: the operand was a vector
 * (unsqueezed to 1 x K / K x 1), whose dim is dropped from the result. */
static mt_status matmul_batched(mt_tensor *a, mt_tensor *b, int a1, int b1, mt_tensor *out, mt_tensor **result) {
  const char *op = "matmul";
  int dt = a->_dtype;
  /* matrix geometry of each operand and its batch dims */
  geo ga = a1 ? (geo){1, a->_sizes[0], 0, a->_strides[0]} : geo_of(a, a->_ndim - 2);
  geo gb = b1 ? (geo){b->_sizes[0], 1, b->_strides[0], 0} : geo_of(b, b->_ndim - 2);
  int abd = a1 ? 0 : a->_ndim - 2, bbd = b1 ? 0 : b->_ndim - 2;
  int64_t bshape[MT_MAX_DIMS];
  int nbd = abd > bbd ? abd : bbd;
  for (int d = 0; d < nbd; d++) {
    int da = d - (nbd - abd), db = d - (nbd - bbd);
    int64_t sa = da >= 0 ? a->_sizes[da] : 1, sb = db >= 0 ? b->_sizes[db] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return mt_error(MT_ESHAPE,
                      "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                      "dimension %d",
                      op, (long long)sa, (long long)sb, d);
    bshape[d] = sa == 1 ? sb : sa;
  }
  int64_t nb = prod(bshape, nbd);
  if (gb.r != ga.c)
    return mt_error(MT_ESHAPE,
                    "%s: Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, "
                    "%lld].",
                    op, (long long)nb, (long long)ga.c, (long long)nb, (long long)gb.r);
  if (a->_dtype != b->_dtype) return dtype_mismatch(op, a->_dtype, b->_dtype);
  MT_TRY(not_for_bool(op, "bmm", dt));
  /* result sizes: batch, then M unless a was a vector, then N unless b was */
  int64_t rs[MT_MAX_DIMS + 2];
  int nr = 0;
  for (int d = 0; d < nbd; d++) rs[nr++] = bshape[d];
  int64_t full[MT_MAX_DIMS + 2];
  memcpy(full, bshape, sizeof(int64_t) * nbd);
  full[nbd] = ga.r;
  full[nbd + 1] = gb.c;
  if (!a1) rs[nr++] = ga.r;
  if (!b1) rs[nr++] = gb.c;
  if (nbd + 2 > MT_MAX_DIMS) return mt_error(MT_EINVAL, "%s: too many dimensions", op);
  mt_tensor *r;
  MT_TRY(mt_new(full, nbd + 2, dt, op, &r));
  int64_t *offs = malloc(sizeof(int64_t) * 3 * (size_t)(nb ? nb : 1));
  if (!offs) { mt_tensor_release(r); return mt_error(MT_ENOMEM, "%s: out of memory", op); }
  batch_offsets(a, abd, bshape, nbd, nb, offs);
  batch_offsets(b, bbd, bshape, nbd, nb, offs + nb);
  for (int64_t p = 0; p < nb; p++) offs[2 * nb + p] = p * ga.r * gb.c;
  gemm_job j = {0};
  j.dt = dt;
  j.nb = nb;
  j.M = ga.r;
  j.K = ga.c;
  j.N = gb.c;
  j.alpha = 1;
  j.beta = 0;
  j.A = a->_data;
  j.B = b->_data;
  j.C = r->_data;
  j.ga = ga;
  j.gb = gb;
  j.gc = (geo){ga.r, gb.c, gb.c, 1};
  j.aoff = offs;
  j.boff = offs + nb;
  j.coff = offs + 2 * nb;
  mt_status s = gemm_run(&j);
  free(offs);
  if (s != MT_OK) { mt_tensor_release(r); return s; }
  return give_reshaped(r, rs, nr, out, result);
}

static mt_status pub_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  const char *op = "matmul";
  MT_TRY(mt_check_tensor(a, op, "self"));
  MT_TRY(mt_check_tensor(b, op, "other"));
  int da = a->_ndim, db = b->_ndim;
  if (da == 0 || db == 0)
    return mt_error(MT_ESHAPE, "%s: both arguments to matmul need to be at least 1D, but they are %dD and %dD", op, da,
                    db);
  if (da == 2 && db == 2) return mm_impl(op, a, b, out, result);
  if (da == 1 && db == 1) return dot_impl(op, a, b, out, result);
  if (da == 2 && db == 1) return mv_impl(op, a, b, out, result);
  if (out) MT_TRY(check_out_dtype(op, out, a->_dtype));
  if (da == 1 && db == 2) {
    if (a->_sizes[0] != b->_sizes[0])
      return mt_error(MT_ESHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (1x%lld and %lldx%lld)", op,
                      (long long)a->_sizes[0], (long long)b->_sizes[0], (long long)b->_sizes[1]);
    if (a->_dtype != b->_dtype) return dtype_mismatch(op, a->_dtype, b->_dtype);
    if (!out && a->_dtype != MT_BOOL) {
      /* a (1 x k) @ (k x n) product straight into a 1-D result: stack heads, no batch machinery */
      int64_t k = a->_sizes[0], n = b->_sizes[1];
      mt_tensor av = *a, rv;
      av._ndim = 2;
      av._sizes[0] = 1;
      av._sizes[1] = k;
      av._strides[0] = k > 0 ? k * a->_strides[0] : 1;
      av._strides[1] = a->_strides[0];
      mt_tensor *r;
      MT_TRY(mt_new(&n, 1, a->_dtype, op, &r));
      rv = *r;
      rv._ndim = 2;
      rv._sizes[0] = 1;
      rv._sizes[1] = n;
      rv._strides[0] = n > 0 ? n : 1;
      rv._strides[1] = 1;
      mt_status s = mm_into(&rv, &av, b, 1.0, 0.0);
      if (s != MT_OK) { mt_tensor_release(r); return s; }
      return mt_give(r, result);
    }
    return matmul_batched(a, b, 1, 0, out, result);
  }
  if (da >= 3 && db <= 2) {
    /* PyTorch folds a's batch dims into its rows: its messages name the folded shapes */
    int64_t rows = prod(a->_sizes, da - 1), k = a->_sizes[da - 1];
    if (db == 2 && b->_sizes[0] != k)
      return mt_error(MT_ESHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                      (long long)rows, (long long)k, (long long)b->_sizes[0], (long long)b->_sizes[1]);
    if (db == 1 && b->_sizes[0] != k)
      return mt_error(MT_ESHAPE, "%s: size mismatch, got %lld, %lldx%lld,%lld", op, (long long)rows, (long long)rows,
                      (long long)k, (long long)b->_sizes[0]);
    if (a->_dtype != b->_dtype) return dtype_mismatch(op, a->_dtype, b->_dtype);
    MT_TRY(not_for_bool(op, db == 2 ? "addmm_impl_cpu_" : "addmv_impl_cpu", a->_dtype));
    int64_t mstride;
    if (mergeable(a, da - 1, &mstride)) {
      /* one product over the merged rows, no copy */
      mt_tensor av = *a, bv = *b; /* stack heads: geometry only, never retained or released */
      av._ndim = 2;
      av._sizes[0] = rows;
      av._sizes[1] = k;
      av._strides[0] = mstride;
      av._strides[1] = a->_strides[da - 1];
      int64_t n = db == 2 ? b->_sizes[1] : 1;
      if (db == 1) {
        bv._ndim = 2;
        bv._sizes[0] = k;
        bv._sizes[1] = 1;
        bv._strides[0] = b->_strides[0];
        bv._strides[1] = 1;
      }
      int64_t sz2[2] = {rows, n};
      mt_tensor *r;
      MT_TRY(mt_new(sz2, 2, a->_dtype, op, &r));
      mt_status s = mm_into(r, &av, &bv, 1.0, 0.0);
      if (s != MT_OK) { mt_tensor_release(r); return s; }
      int64_t rs[MT_MAX_DIMS];
      memcpy(rs, a->_sizes, sizeof(int64_t) * (da - 1));
      int nr = da - 1;
      if (db == 2) rs[nr++] = n;
      return give_reshaped(r, rs, nr, out, result);
    }
    return matmul_batched(a, b, 0, db == 1, out, result);
  }
  if (db >= 3 && da <= 2) {
    /* PyTorch folds b^T: (batch * N) x K against a^T */
    int64_t rows = prod(b->_sizes, db - 2) * b->_sizes[db - 1], k = b->_sizes[db - 2];
    if (da == 2 && a->_sizes[1] != k)
      return mt_error(MT_ESHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                      (long long)rows, (long long)k, (long long)a->_sizes[1], (long long)a->_sizes[0]);
    if (da == 1 && a->_sizes[0] != k)
      return mt_error(MT_ESHAPE, "%s: size mismatch, got %lld, %lldx%lld,%lld", op, (long long)rows, (long long)rows,
                      (long long)k, (long long)a->_sizes[0]);
    if (a->_dtype != b->_dtype) return dtype_mismatch(op, b->_dtype, a->_dtype);
    return matmul_batched(a, b, da == 1, 0, out, result);
  }
  return matmul_batched(a, b, 0, 0, out, result);
}

/* ---------------------------------------------------------------- autograd entry points */
#define PRODUCT_OP(name, call_impl)                                             \
  do {                                                                          \
    if (!a || !b || !mt_grad_on2(a, b)) return call_impl(out, result);           \
    MT_TRY(mt_grad_check_out(out, true, name));                                 \
    mt_tensor *r_;                                                              \
    MT_TRY(MT_NOGRAD(call_impl(NULL, &r_)));                                    \
    mt_status s_ = mt_record_matmul(a, b, r_);                                  \
    if (s_) { mt_tensor_release(r_); return s_; }                               \
    return mt_give(r_, result);                                                 \
  } while (0)

#define MM_CALL(o, r) pub_mm(a, b, o, r)
#define BMM_CALL(o, r) pub_bmm(a, b, o, r)
#define MV_CALL(o, r) pub_mv(a, b, o, r)
#define MATMUL_CALL(o, r) pub_matmul(a, b, o, r)
#define DOT_CALL(o, r) pub_dot(a, b, r)
mt_status mt_mm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) { PRODUCT_OP("mm", MM_CALL); }
mt_status mt_bmm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) { PRODUCT_OP("bmm", BMM_CALL); }
mt_status mt_mv(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) { PRODUCT_OP("mv", MV_CALL); }
mt_status mt_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("matmul", MATMUL_CALL);
}
mt_status mt_dot(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  mt_tensor *out = NULL;
  PRODUCT_OP("dot", DOT_CALL);
}

mt_status mt_addmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                   mt_tensor **result) {
  bool rec = mt_grad_mode && c && a && b &&
             ((c->_flags | a->_flags | b->_flags) & MT_TENSOR_REQUIRES_GRAD);
  if (!rec) return pub_addmm(c, a, b, beta, alpha, out, result);
  if (out == c) MT_TRY(mt_grad_check_inplace(c, "addmm_"));
  else MT_TRY(mt_grad_check_out(out, true, "addmm"));
  if (out == c) return mt_error(MT_ENOTIMPL, "addmm_: in-place addmm on a tensor that requires grad is not supported yet");
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(pub_addmm(c, a, b, beta, alpha, NULL, &r)));
  mt_status s = mt_record_addmm(c, a, b, beta, alpha, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                     mt_tensor **result) {
  bool rec = mt_grad_mode && c && a && b &&
             ((c->_flags | a->_flags | b->_flags) & MT_TENSOR_REQUIRES_GRAD);
  if (!rec) return pub_baddbmm(c, a, b, beta, alpha, out, result);
  if (out == c) MT_TRY(mt_grad_check_inplace(c, "baddbmm_"));
  else MT_TRY(mt_grad_check_out(out, true, "baddbmm"));
  if (out == c)
    return mt_error(MT_ENOTIMPL, "baddbmm_: in-place baddbmm on a tensor that requires grad is not supported (use baddbmm)");
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(pub_baddbmm(c, a, b, beta, alpha, NULL, &r)));
  mt_status s = mt_record_baddbmm(c, a, b, beta, alpha, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* outer with grad: a[:, None] * b, as PyTorch 1.13 records it (MulBackward0) */
mt_status mt_outer(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  if (!a || !b || !mt_grad_on2(a, b)) return pub_outer(a, b, result);
  if (a->_ndim != 1 || b->_ndim != 1) return pub_outer(a, b, result); /* its error message */
  mt_tensor *ua;
  MT_TRY(mt_unsqueeze(a, 1, &ua));
  mt_status s = mt_binary(MT_OP_MUL, ua, b, NULL, result);
  mt_tensor_release(ua);
  return s;
}
