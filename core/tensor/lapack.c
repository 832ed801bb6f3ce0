/* lapack.c -- the CPU's kernels of torch.linalg's decompositions (core/kernels.h: cholesky, solve_triangular,
 * qr, eigh, svd, lstsq, lu_factor, lu_solve, ldl_factor, ldl_solve), by LAPACK (potrf, trsm, geqrf + orgqr, syevd,
 * gesdd, gelsd / gelsy, getrf, getrs, sytrf, sytrs) from the loaded BLAS or liblapack.so.3 (mt_lapack_symbol,
 * core/blas.c): the s-routines for float32 operands, the d-routines for float64, as PyTorch (LAPACK_KERNELS,
 * defined once per type). Every operand is a contiguous batch of row-major matrices of one dtype (the front doors,
 * core/ops/lapack.c, convert); each matrix is copied here into a column-major work buffer, factored, and copied
 * back (cholesky factors the row-major copy itself). One matrix at a time from the calling thread (OpenBLAS threads
 * inside a routine). LP64 LAPACK (32-bit int). */
#include "cpu.h"

#include "../blas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef int lp_int; /* LAPACK's INTEGER in Debian's LP64 builds */

#define SYM(op, var, type, name)                                                                                       \
  type var = (type)mt_lapack_symbol(op, name);                                                                         \
  if (!var)                                                                                                            \
  return MT_ENOTIMPL

static inline lp_int ld(int64_t n) {
  return n > 0 ? (lp_int)n : 1;
}

static mt_status too_big(const char *op, int64_t m, int64_t n) {
  if (m > 0x3fffffff || n > 0x3fffffff || m * n > 0x7fffffff)
    return mt_error(MT_ERANGE, "%s: a %lld by %lld matrix is too large for LAPACK's 32-bit indices", op, (long long)m,
                    (long long)n);
  return MT_OK;
}

/* the size a workspace query answered (a float32 query rounds: a little more) */
static lp_int query_size(double q) {
  return q < 1 ? 1 : (lp_int)(q * (1 + 1e-6) + 1);
}

/* The kernels for one real type: LAPACK_KERNELS(REAL, SFX, LP) defines cholesky_SFX, ..., ldl_solve_SFX on REAL
 * operands by LAPACK's LP-routines (LP "potrf_": "spotrf_" for float, "dpotrf_" for double), as PyTorch calls them;
 * LAPACK_TYPES lists the two (float32 by the s-routines, float64 by the d-routines). */
#define LAPACK_TYPES(X) X(float, f32, "s") X(double, f64, "d")

/* row-major <-> column-major copies go in LP_TILE x LP_TILE tiles */
#define LP_TILE 32

#define LAPACK_KERNELS(REAL, SFX, LP)                                                                                  \
  typedef void (*potrf_fn_##SFX)(const char *uplo, const lp_int *n, REAL *a, const lp_int *lda, lp_int *info);         \
  typedef void (*trsm_fn_##SFX)(const char *side, const char *uplo, const char *transa, const char *diag,              \
                                const lp_int *m, const lp_int *n, const REAL *alpha, const REAL *a, const lp_int *lda, \
                                REAL *b, const lp_int *ldb);                                                           \
  typedef void (*geqrf_fn_##SFX)(const lp_int *m, const lp_int *n, REAL *a, const lp_int *lda, REAL *tau, REAL *work,  \
                                 const lp_int *lwork, lp_int *info);                                                   \
  typedef void (*orgqr_fn_##SFX)(const lp_int *m, const lp_int *n, const lp_int *k, REAL *a, const lp_int *lda,        \
                                 const REAL *tau, REAL *work, const lp_int *lwork, lp_int *info);                      \
  typedef void (*syevd_fn_##SFX)(const char *jobz, const char *uplo, const lp_int *n, REAL *a, const lp_int *lda,      \
                                 REAL *w, REAL *work, const lp_int *lwork, lp_int *iwork, const lp_int *liwork,        \
                                 lp_int *info);                                                                        \
  typedef void (*gesdd_fn_##SFX)(const char *jobz, const lp_int *m, const lp_int *n, REAL *a, const lp_int *lda,       \
                                 REAL *s, REAL *u, const lp_int *ldu, REAL *vt, const lp_int *ldvt, REAL *work,        \
                                 const lp_int *lwork, lp_int *iwork, lp_int *info);                                    \
  typedef void (*gelsd_fn_##SFX)(const lp_int *m, const lp_int *n, const lp_int *nrhs, REAL *a, const lp_int *lda,     \
                                 REAL *b, const lp_int *ldb, REAL *s, const REAL *rcond, lp_int *rank, REAL *work,     \
                                 const lp_int *lwork, lp_int *iwork, lp_int *info);                                    \
  typedef void (*gelsy_fn_##SFX)(const lp_int *m, const lp_int *n, const lp_int *nrhs, REAL *a, const lp_int *lda,     \
                                 REAL *b, const lp_int *ldb, lp_int *jpvt, const REAL *rcond, lp_int *rank,            \
                                 REAL *work, const lp_int *lwork, lp_int *info);                                       \
  typedef void (*getrf_fn_##SFX)(const lp_int *m, const lp_int *n, REAL *a, const lp_int *lda, lp_int *ipiv,           \
                                 lp_int *info);                                                                        \
  typedef void (*sytrf_fn_##SFX)(const char *uplo, const lp_int *n, REAL *a, const lp_int *lda, lp_int *ipiv,          \
                                 REAL *work, const lp_int *lwork, lp_int *info);                                       \
  typedef void (*sytrs_fn_##SFX)(const char *uplo, const lp_int *n, const lp_int *nrhs, const REAL *a,                 \
                                 const lp_int *lda, const lp_int *ipiv, REAL *b, const lp_int *ldb, lp_int *info);     \
  typedef void (*getrs_fn_##SFX)(const char *trans, const lp_int *n, const lp_int *nrhs, const REAL *a,                \
                                 const lp_int *lda, const lp_int *ipiv, REAL *b, const lp_int *ldb, lp_int *info);     \
                                                                                                                       \
  /* row-major (m, n) <-> column-major with leading dimension lda >= m, in 32 x 32 tiles (each tile's rows and         \
   * columns stay in the cache) */                                                                                     \
  static void to_col_##SFX(REAL *c, lp_int lda, const REAL *r, int64_t m, int64_t n) {                                 \
    for (int64_t i0 = 0; i0 < m; i0 += LP_TILE)                                                                        \
      for (int64_t j0 = 0; j0 < n; j0 += LP_TILE) {                                                                    \
        int64_t i1 = i0 + LP_TILE < m ? i0 + LP_TILE : m, j1 = j0 + LP_TILE < n ? j0 + LP_TILE : n;                    \
        for (int64_t j = j0; j < j1; j++)                                                                              \
          for (int64_t i = i0; i < i1; i++)                                                                            \
            c[j * lda + i] = r[i * n + j];                                                                             \
      }                                                                                                                \
  }                                                                                                                    \
  static void from_col_##SFX(REAL *r, const REAL *c, lp_int lda, int64_t m, int64_t n) {                               \
    for (int64_t i0 = 0; i0 < m; i0 += LP_TILE)                                                                        \
      for (int64_t j0 = 0; j0 < n; j0 += LP_TILE) {                                                                    \
        int64_t i1 = i0 + LP_TILE < m ? i0 + LP_TILE : m, j1 = j0 + LP_TILE < n ? j0 + LP_TILE : n;                    \
        for (int64_t i = i0; i < i1; i++)                                                                              \
          for (int64_t j = j0; j < j1; j++)                                                                            \
            r[i * n + j] = c[j * lda + i];                                                                             \
      }                                                                                                                \
  }                                                                                                                    \
                                                                                                                       \
  static int all_finite_##SFX(const REAL *x, int64_t n) {                                                              \
    int ok = 1;                                                                                                        \
    for (int64_t i = 0; i < n; i++)                                                                                    \
      ok &= isfinite(x[i]) != 0;                                                                                       \
    return ok;                                                                                                         \
  }                                                                                                                    \
                                                                                                                       \
  static REAL *work_alloc_##SFX(const char *op, size_t count) {                                                        \
    REAL *w = malloc((count ? count : 1) * sizeof(REAL));                                                              \
    if (!w)                                                                                                            \
      mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace (%zu elements)", op, count);                       \
    return w;                                                                                                          \
  }                                                                                                                    \
                                                                                                                       \
  static mt_status cholesky_##SFX(mt_tensor *L, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n,            \
                                  int upper) {                                                                         \
    const char *op = "linalg.cholesky";                                                                                \
    if (nb == 0)                                                                                                       \
      return MT_OK;                                                                                                    \
    int32_t *inf = (int32_t *)info->_data;                                                                             \
    if (n == 0) {                                                                                                      \
      memset(inf, 0, nb * sizeof(int32_t));                                                                            \
      return MT_OK;                                                                                                    \
    }                                                                                                                  \
    MT_TRY(too_big(op, n, n));                                                                                         \
    SYM(op, potrf, potrf_fn_##SFX, LP "potrf_");                                                                       \
    const lp_int nn = (lp_int)n;                                                                                       \
    /* no transposes: the row-major matrix read column-major is its transpose, so LAPACK's upper triangle of it is     \
     * A's lower one, and the upper factor U it leaves (M^T = U^T U) read row-major is L = U^T with A = L L^T */       \
    const char uplo = upper ? 'L' : 'U';                                                                               \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      const REAL *src = (const REAL *)A->_data + b * n * n;                                                            \
      REAL *dst = (REAL *)L->_data + b * n * n;                                                                        \
      memcpy(dst, src, (size_t)(n * n) * sizeof(REAL));                                                                \
      lp_int i = 0;                                                                                                    \
      potrf(&uplo, &nn, dst, &nn, &i);                                                                                 \
      inf[b] = i;                                                                                                      \
      for (int64_t r = 0; r < n; r++) /* the other triangle zeroed */                                                  \
        if (upper)                                                                                                     \
          memset(dst + r * n, 0, (size_t)r * sizeof(REAL));                                                            \
        else                                                                                                           \
          memset(dst + r * n + r + 1, 0, (size_t)(n - r - 1) * sizeof(REAL));                                          \
    }                                                                                                                  \
    return MT_OK;                                                                                                      \
  }                                                                                                                    \
                                                                                                                       \
  static mt_status solve_triangular_##SFX(mt_tensor *X, const mt_tensor *A, const mt_tensor *B, int64_t nb, int64_t n, \
                                          int64_t k, int upper, int left, int unitriangular) {                         \
    const char *op = "linalg.solve_triangular";                                                                        \
    /* B (n, k) when left, else (k, n) */                                                                              \
    int64_t bm = left ? n : k, bn = left ? k : n;                                                                      \
    if (nb == 0 || n == 0 || k == 0)                                                                                   \
      return MT_OK;                                                                                                    \
    MT_TRY(too_big(op, n, n));                                                                                         \
    MT_TRY(too_big(op, bm, bn));                                                                                       \
    SYM(op, trsm, trsm_fn_##SFX, LP "trsm_");                                                                          \
    REAL *a = work_alloc_##SFX(op, (size_t)(n * n)), *x = work_alloc_##SFX(op, (size_t)(bm * bn));                     \
    if (!a || !x) {                                                                                                    \
      free(a);                                                                                                         \
      free(x);                                                                                                         \
      return MT_ENOMEM;                                                                                                \
    }                                                                                                                  \
    const lp_int nn = (lp_int)n, m_ = (lp_int)bm, n_ = (lp_int)bn, ldb = ld(bm);                                       \
    const char side = left ? 'L' : 'R', uplo = upper ? 'U' : 'L', trans = 'N', diag = unitriangular ? 'U' : 'N';       \
    const REAL one = 1;                                                                                                \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      to_col_##SFX(a, nn, (const REAL *)A->_data + b * n * n, n, n);                                                   \
      to_col_##SFX(x, ldb, (const REAL *)B->_data + b * bm * bn, bm, bn);                                              \
      trsm(&side, &uplo, &trans, &diag, &m_, &n_, &one, a, &nn, x, &ldb);                                              \
      from_col_##SFX((REAL *)X->_data + b * bm * bn, x, ldb, bm, bn);                                                  \
    }                                                                                                                  \
    free(a);                                                                                                           \
    free(x);                                                                                                           \
    return MT_OK;                                                                                                      \
  }                                                                                                                    \
                                                                                                                       \
  static mt_status qr_##SFX(mt_tensor *Q, mt_tensor *R, const mt_tensor *A, int64_t nb, int64_t m, int64_t n,          \
                            int mode) {                                                                                \
    const char *op = "linalg.qr";                                                                                      \
    int64_t k = m < n ? m : n;                                                                                         \
    int64_t qc = mode == 1 ? m : k; /* Q's columns */                                                                  \
    int64_t rr = mode == 1 ? m : k; /* R's rows */                                                                     \
    int64_t wc = n > qc ? n : qc;   /* the work buffer's columns: A's, or Q's when more */                             \
    if (nb == 0)                                                                                                       \
      return MT_OK;                                                                                                    \
    if (mode == 3) { /* geqrf's own results: Q <- the factored (m, n) matrix, R <- tau (k) */                          \
      if (k == 0)                                                                                                      \
        return MT_OK;                                                                                                  \
      MT_TRY(too_big(op, m, n));                                                                                       \
      SYM(op, geqrf3, geqrf_fn_##SFX, LP "geqrf_");                                                                    \
      const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m, minus1 = -1;                                       \
      lp_int info = 0;                                                                                                 \
      REAL q = 0, *a = work_alloc_##SFX(op, (size_t)(m * n)), *work = NULL;                                            \
      geqrf3(&m_, &n_, a ? a : &q, &lda, (REAL *)R->_data, &q, &minus1, &info);                                        \
      lp_int lwork = query_size(q);                                                                                    \
      if (a)                                                                                                           \
        work = work_alloc_##SFX(op, (size_t)lwork);                                                                    \
      if (!a || !work) {                                                                                               \
        free(a);                                                                                                       \
        return MT_ENOMEM;                                                                                              \
      }                                                                                                                \
      for (int64_t b = 0; b < nb; b++) {                                                                               \
        to_col_##SFX(a, lda, (const REAL *)A->_data + b * m * n, m, n);                                                \
        geqrf3(&m_, &n_, a, &lda, (REAL *)R->_data + b * k, work, &lwork, &info);                                      \
        from_col_##SFX((REAL *)Q->_data + b * m * n, a, lda, m, n);                                                    \
      }                                                                                                                \
      free(a);                                                                                                         \
      free(work);                                                                                                      \
      return MT_OK;                                                                                                    \
    }                                                                                                                  \
    REAL *Qd = Q ? (REAL *)Q->_data : NULL, *Rd = (REAL *)R->_data;                                                    \
    if (m == 0 || n == 0) { /* R all zeros; Q the first columns of the identity */                                     \
      memset(Rd, 0, (size_t)(nb * rr * n) * sizeof(REAL));                                                             \
      if (Qd) {                                                                                                        \
        memset(Qd, 0, (size_t)(nb * m * qc) * sizeof(REAL));                                                           \
        for (int64_t b = 0; b < nb; b++)                                                                               \
          for (int64_t i = 0; i < m && i < qc; i++)                                                                    \
            Qd[b * m * qc + i * qc + i] = 1;                                                                           \
      }                                                                                                                \
      return MT_OK;                                                                                                    \
    }                                                                                                                  \
    MT_TRY(too_big(op, m, wc));                                                                                        \
    SYM(op, geqrf, geqrf_fn_##SFX, LP "geqrf_");                                                                       \
    orgqr_fn_##SFX orgqr = NULL;                                                                                       \
    if (Q && !(orgqr = (orgqr_fn_##SFX)mt_lapack_symbol(op, LP "orgqr_")))                                             \
      return MT_ENOTIMPL;                                                                                              \
    const lp_int m_ = (lp_int)m, n_ = (lp_int)n, k_ = (lp_int)k, qc_ = (lp_int)qc, lda = (lp_int)m;                    \
    /* the workspace: the larger query of the two routines */                                                          \
    REAL q1 = 0, q2 = 0;                                                                                               \
    lp_int info = 0, minus1 = -1;                                                                                      \
    REAL *a = work_alloc_##SFX(op, (size_t)(m * wc)), *tau = work_alloc_##SFX(op, (size_t)k);                          \
    if (!a || !tau) {                                                                                                  \
      free(a);                                                                                                         \
      free(tau);                                                                                                       \
      return MT_ENOMEM;                                                                                                \
    }                                                                                                                  \
    geqrf(&m_, &n_, a, &lda, tau, &q1, &minus1, &info);                                                                \
    if (Q)                                                                                                             \
      orgqr(&m_, &qc_, &k_, a, &lda, tau, &q2, &minus1, &info);                                                        \
    lp_int lwork = query_size(q1 > q2 ? q1 : q2);                                                                      \
    REAL *work = work_alloc_##SFX(op, (size_t)lwork);                                                                  \
    if (!work) {                                                                                                       \
      free(a);                                                                                                         \
      free(tau);                                                                                                       \
      return MT_ENOMEM;                                                                                                \
    }                                                                                                                  \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      to_col_##SFX(a, lda, (const REAL *)A->_data + b * m * n, m, n);                                                  \
      geqrf(&m_, &n_, a, &lda, tau, work, &lwork, &info);                                                              \
      REAL *r = Rd + b * rr * n;                                                                                       \
      for (int64_t i = 0; i < rr; i++)                                                                                 \
        for (int64_t j = 0; j < n; j++)                                                                                \
          r[i * n + j] = (i <= j && i < m) ? a[j * lda + i] : 0;                                                       \
      if (Q) {                                                                                                         \
        orgqr(&m_, &qc_, &k_, a, &lda, tau, work, &lwork, &info);                                                      \
        from_col_##SFX(Qd + b * m * qc, a, lda, m, qc);                                                                \
      }                                                                                                                \
    }                                                                                                                  \
    free(a);                                                                                                           \
    free(tau);                                                                                                         \
    free(work);                                                                                                        \
    return MT_OK;                                                                                                      \
  }                                                                                                                    \
                                                                                                                       \
  static mt_status eigh_##SFX(mt_tensor *w, mt_tensor *V, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n,  \
                              int upper) {                                                                             \
    const char *op = "linalg.eigh";                                                                                    \
    if (nb == 0)                                                                                                       \
      return MT_OK;                                                                                                    \
    int32_t *inf = (int32_t *)info->_data;                                                                             \
    if (n == 0) {                                                                                                      \
      memset(inf, 0, nb * sizeof(int32_t));                                                                            \
      return MT_OK;                                                                                                    \
    }                                                                                                                  \
    MT_TRY(too_big(op, n, n));                                                                                         \
    SYM(op, syevd, syevd_fn_##SFX, LP "syevd_");                                                                       \
    const lp_int nn = (lp_int)n, minus1 = -1;                                                                          \
    /* (copied column-major as PyTorch does: the other triangle's tridiagonal form gives other eigenvector signs) */   \
    const char jobz = V ? 'V' : 'N', uplo = upper ? 'U' : 'L';                                                         \
    REAL *a = work_alloc_##SFX(op, (size_t)(n * n)), qw = 0;                                                           \
    if (!a)                                                                                                            \
      return MT_ENOMEM;                                                                                                \
    lp_int qi = 0, i = 0;                                                                                              \
    syevd(&jobz, &uplo, &nn, a, &nn, (REAL *)w->_data, &qw, &minus1, &qi, &minus1, &i);                                \
    lp_int lwork = query_size(qw), liwork = qi > 1 ? qi : 1;                                                           \
    REAL *work = work_alloc_##SFX(op, (size_t)lwork);                                                                  \
    lp_int *iwork = malloc((size_t)liwork * sizeof(lp_int));                                                           \
    if (!work || !iwork) {                                                                                             \
      free(a);                                                                                                         \
      free(work);                                                                                                      \
      free(iwork);                                                                                                     \
      return mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);                                      \
    }                                                                                                                  \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      const REAL *src = (const REAL *)A->_data + b * n * n;                                                            \
      if (!all_finite_##SFX(src, n * n)) { /* NaN results (LAPACK's scaling would only make noise of them) */          \
        inf[b] = 0;                                                                                                    \
        for (int64_t e = 0; e < n; e++)                                                                                \
          ((REAL *)w->_data)[b * n + e] = NAN;                                                                         \
        if (V)                                                                                                         \
          for (int64_t e = 0; e < n * n; e++)                                                                          \
            ((REAL *)V->_data)[b * n * n + e] = NAN;                                                                   \
        continue;                                                                                                      \
      }                                                                                                                \
      to_col_##SFX(a, nn, src, n, n);                                                                                  \
      syevd(&jobz, &uplo, &nn, a, &nn, (REAL *)w->_data + b * n, work, &lwork, iwork, &liwork, &i);                    \
      inf[b] = i;                                                                                                      \
      if (V)                                                                                                           \
        from_col_##SFX((REAL *)V->_data + b * n * n, a, nn, n, n);                                                     \
    }                                                                                                                  \
    free(a);                                                                                                           \
    free(work);                                                                                                        \
    free(iwork);                                                                                                       \
    return MT_OK;                                                                                                      \
  }                                                                                                                    \
                                                                                                                       \
  static mt_status svd_##SFX(mt_tensor *U, mt_tensor *S, mt_tensor *Vh, mt_tensor *info, const mt_tensor *A,           \
                             int64_t nb, int64_t m, int64_t n, int full) {                                             \
    const char *op = "linalg.svd";                                                                                     \
    int64_t k = m < n ? m : n;                                                                                         \
    int uv = U != NULL;                                                                                                \
    int64_t uc = full ? m : k, vr = full ? n : k; /* U's columns, Vh's rows */                                         \
    if (nb == 0)                                                                                                       \
      return MT_OK;                                                                                                    \
    int32_t *inf = (int32_t *)info->_data;                                                                             \
    memset(inf, 0, nb * sizeof(int32_t));                                                                              \
    if (m == 0 || n == 0) { /* U and Vh (full) identities, S empty */                                                  \
      if (uv) {                                                                                                        \
        memset(U->_data, 0, (size_t)(nb * m * uc) * sizeof(REAL));                                                     \
        memset(Vh->_data, 0, (size_t)(nb * vr * n) * sizeof(REAL));                                                    \
        for (int64_t b = 0; b < nb; b++) {                                                                             \
          for (int64_t i = 0; i < m && i < uc; i++)                                                                    \
            ((REAL *)U->_data)[b * m * uc + i * uc + i] = 1;                                                           \
          for (int64_t i = 0; i < vr && i < n; i++)                                                                    \
            ((REAL *)Vh->_data)[b * vr * n + i * n + i] = 1;                                                           \
        }                                                                                                              \
      }                                                                                                                \
      return MT_OK;                                                                                                    \
    }                                                                                                                  \
    MT_TRY(too_big(op, m, n));                                                                                         \
    MT_TRY(too_big(op, m, m));                                                                                         \
    MT_TRY(too_big(op, n, n));                                                                                         \
    SYM(op, gesdd, gesdd_fn_##SFX, LP "gesdd_");                                                                       \
    const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m, ldu = (lp_int)m, ldvt = (lp_int)vr, minus1 = -1;     \
    const char jobz = !uv ? 'N' : full ? 'A' : 'S';                                                                    \
    REAL *a = work_alloc_##SFX(op, (size_t)(m * n)), *u = uv ? work_alloc_##SFX(op, (size_t)(m * uc)) : NULL;          \
    REAL *vt = uv ? work_alloc_##SFX(op, (size_t)(vr * n)) : NULL, qw = 0;                                             \
    lp_int *iwork = malloc((size_t)(8 * k) * sizeof(lp_int)), i = 0;                                                   \
    REAL *work = NULL;                                                                                                 \
    mt_status s = MT_OK;                                                                                               \
    if (!a || !iwork || (uv && (!u || !vt))) {                                                                         \
      s = mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);                                         \
      goto done;                                                                                                       \
    }                                                                                                                  \
    gesdd(&jobz, &m_, &n_, a, &lda, (REAL *)S->_data, u ? u : &qw, &ldu, vt ? vt : &qw, &ldvt, &qw, &minus1, iwork,    \
          &i);                                                                                                         \
    lp_int lwork = query_size(qw);                                                                                     \
    work = work_alloc_##SFX(op, (size_t)lwork);                                                                        \
    if (!work) {                                                                                                       \
      s = MT_ENOMEM;                                                                                                   \
      goto done;                                                                                                       \
    }                                                                                                                  \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      const REAL *src = (const REAL *)A->_data + b * m * n;                                                            \
      REAL *sv = (REAL *)S->_data + b * k;                                                                             \
      if (!all_finite_##SFX(                                                                                           \
              src, m * n)) { /* LAPACK's gesdd may not return on NaN: reported as PyTorch's "non-finite values" */     \
        inf[b] = -4;                                                                                                   \
        for (int64_t e = 0; e < k; e++)                                                                                \
          sv[e] = NAN;                                                                                                 \
        if (uv) {                                                                                                      \
          for (int64_t e = 0; e < m * uc; e++)                                                                         \
            ((REAL *)U->_data)[b * m * uc + e] = NAN;                                                                  \
          for (int64_t e = 0; e < vr * n; e++)                                                                         \
            ((REAL *)Vh->_data)[b * vr * n + e] = NAN;                                                                 \
        }                                                                                                              \
        continue;                                                                                                      \
      }                                                                                                                \
      to_col_##SFX(a, lda, src, m, n);                                                                                 \
      gesdd(&jobz, &m_, &n_, a, &lda, sv, u ? u : &qw, &ldu, vt ? vt : &qw, &ldvt, work, &lwork, iwork, &i);           \
      inf[b] = i;                                                                                                      \
      if (uv) {                                                                                                        \
        from_col_##SFX((REAL *)U->_data + b * m * uc, u, ldu, m, uc);                                                  \
        from_col_##SFX((REAL *)Vh->_data + b * vr * n, vt, ldvt, vr, n);                                               \
      }                                                                                                                \
    }                                                                                                                  \
  done:                                                                                                                \
    free(a);                                                                                                           \
    free(u);                                                                                                           \
    free(vt);                                                                                                          \
    free(iwork);                                                                                                       \
    free(work);                                                                                                        \
    return s;                                                                                                          \
  }                                                                                                                    \
                                                                                                                       \
  static mt_status lstsq_##SFX(mt_tensor *X, mt_tensor *rank, mt_tensor *S, mt_tensor *info, const mt_tensor *A,       \
                               const mt_tensor *B, int64_t nb, int64_t m, int64_t n, int64_t k, double rcond_,         \
                               int svd) {                                                                              \
    const REAL rcond = (REAL)rcond_;                                                                                   \
    const char *op = "linalg.lstsq";                                                                                   \
    int64_t mn = m < n ? m : n, mx = m > n ? m : n;                                                                    \
    if (nb == 0)                                                                                                       \
      return MT_OK;                                                                                                    \
    int32_t *inf = (int32_t *)info->_data;                                                                             \
    int64_t *rk = (int64_t *)rank->_data;                                                                              \
    memset(inf, 0, nb * sizeof(int32_t));                                                                              \
    if (m == 0 || n == 0) { /* nothing to solve: X zeros, rank 0 */                                                    \
      memset(X->_data, 0, (size_t)(nb * n * k) * sizeof(REAL));                                                        \
      for (int64_t b = 0; b < nb; b++)                                                                                 \
        rk[b] = 0;                                                                                                     \
      return MT_OK;                                                                                                    \
    }                                                                                                                  \
    MT_TRY(too_big(op, m, n));                                                                                         \
    MT_TRY(too_big(op, mx, k > 0 ? k : 1));                                                                            \
    gelsd_fn_##SFX gelsd = NULL;                                                                                       \
    gelsy_fn_##SFX gelsy = NULL;                                                                                       \
    if (svd ? !(gelsd = (gelsd_fn_##SFX)mt_lapack_symbol(op, LP "gelsd_"))                                             \
            : !(gelsy = (gelsy_fn_##SFX)mt_lapack_symbol(op, LP "gelsy_")))                                            \
      return MT_ENOTIMPL;                                                                                              \
    int64_t kk = k > 0 ? k : 1; /* gelsd wants nrhs >= 0 but a buffer of one column at least */                        \
    const lp_int m_ = (lp_int)m, n_ = (lp_int)n, k_ = (lp_int)k, lda = ld(m), ldb = ld(mx), minus1 = -1;               \
    REAL *a = work_alloc_##SFX(op, (size_t)(m * n)), *bb = work_alloc_##SFX(op, (size_t)(mx * kk));                    \
    REAL *s = work_alloc_##SFX(op, (size_t)mn), qw = 0, *work = NULL;                                                  \
    lp_int qi = 0, r = 0, i = 0, *iwork = NULL; /* iwork: gelsd's, or gelsy's column pivots (n) */                     \
    mt_status st = MT_OK;                                                                                              \
    if (!a || !bb || !s) {                                                                                             \
      st = MT_ENOMEM;                                                                                                  \
      goto done;                                                                                                       \
    }                                                                                                                  \
    if (svd)                                                                                                           \
      gelsd(&m_, &n_, &k_, a, &lda, bb, &ldb, s, &rcond, &r, &qw, &minus1, &qi, &i);                                   \
    else                                                                                                               \
      gelsy(&m_, &n_, &k_, a, &lda, bb, &ldb, &qi, &rcond, &r, &qw, &minus1, &i), qi = n_;                             \
    lp_int lwork = query_size(qw);                                                                                     \
    work = work_alloc_##SFX(op, (size_t)lwork);                                                                        \
    iwork = malloc((size_t)(qi > 1 ? qi : 1) * sizeof(lp_int));                                                        \
    if (!work || !iwork) {                                                                                             \
      st = mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);                                        \
      goto done;                                                                                                       \
    }                                                                                                                  \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      const REAL *src = (const REAL *)A->_data + b * m * n;                                                            \
      if (!all_finite_##SFX(src, m * n) || !all_finite_##SFX((const REAL *)B->_data + b * m * k, m * k)) {             \
        /* gelsd's scaling reports a non-finite norm on stderr (xerbla): NaN results and info -4 instead */            \
        inf[b] = -4;                                                                                                   \
        rk[b] = 0;                                                                                                     \
        for (int64_t e = 0; e < n * k; e++)                                                                            \
          ((REAL *)X->_data)[b * n * k + e] = NAN;                                                                     \
        if (S)                                                                                                         \
          for (int64_t e = 0; e < mn; e++)                                                                             \
            ((REAL *)S->_data)[b * mn + e] = NAN;                                                                      \
        continue;                                                                                                      \
      }                                                                                                                \
      to_col_##SFX(a, lda, src, m, n);                                                                                 \
      memset(bb, 0, (size_t)(mx * kk) * sizeof(REAL));                                                                 \
      if (k > 0)                                                                                                       \
        to_col_##SFX(bb, ldb, (const REAL *)B->_data + b * m * k, m, k);                                               \
      if (svd)                                                                                                         \
        gelsd(&m_, &n_, &k_, a, &lda, bb, &ldb, s, &rcond, &r, work, &lwork, iwork, &i);                               \
      else {                                                                                                           \
        memset(iwork, 0, (size_t)n * sizeof(lp_int)); /* every column free to move */                                  \
        gelsy(&m_, &n_, &k_, a, &lda, bb, &ldb, iwork, &rcond, &r, work, &lwork, &i);                                  \
      }                                                                                                                \
      inf[b] = i;                                                                                                      \
      rk[b] = r;                                                                                                       \
      if (S && svd)                                                                                                    \
        memcpy((REAL *)S->_data + b * mn, s, (size_t)mn * sizeof(REAL));                                               \
      if (k > 0)                                                                                                       \
        from_col_##SFX((REAL *)X->_data + b * n * k, bb, ldb, n, k);                                                   \
    }                                                                                                                  \
  done:                                                                                                                \
    free(a);                                                                                                           \
    free(bb);                                                                                                          \
    free(s);                                                                                                           \
    free(work);                                                                                                        \
    free(iwork);                                                                                                       \
    return st;                                                                                                         \
  }                                                                                                                    \
                                                                                                                       \
  static mt_status lu_factor_##SFX(mt_tensor *LU, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb,  \
                                   int64_t m, int64_t n) {                                                             \
    const char *op = "linalg.lu_factor";                                                                               \
    int64_t k = m < n ? m : n;                                                                                         \
    if (nb == 0)                                                                                                       \
      return MT_OK;                                                                                                    \
    int32_t *inf = (int32_t *)info->_data;                                                                             \
    memset(inf, 0, nb * sizeof(int32_t));                                                                              \
    if (k == 0)                                                                                                        \
      return MT_OK;                                                                                                    \
    MT_TRY(too_big(op, m, n));                                                                                         \
    SYM(op, getrf, getrf_fn_##SFX, LP "getrf_");                                                                       \
    const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m;                                                      \
    REAL *a = work_alloc_##SFX(op, (size_t)(m * n));                                                                   \
    if (!a)                                                                                                            \
      return MT_ENOMEM;                                                                                                \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      to_col_##SFX(a, lda, (const REAL *)A->_data + b * m * n, m, n);                                                  \
      lp_int i = 0;                                                                                                    \
      getrf(&m_, &n_, a, &lda, (lp_int *)pivots->_data + b * k, &i);                                                   \
      inf[b] = i;                                                                                                      \
      from_col_##SFX((REAL *)LU->_data + b * m * n, a, lda, m, n);                                                     \
    }                                                                                                                  \
    free(a);                                                                                                           \
    return MT_OK;                                                                                                      \
  }                                                                                                                    \
                                                                                                                       \
  /* X (n, k) with A X = B (trans: A^T X = B) from getrf's LU (n, n) and 1-based pivots (n) of each matrix */          \
  static mt_status lu_solve_##SFX(mt_tensor *X, const mt_tensor *LU, const mt_tensor *pivots, const mt_tensor *B,      \
                                  int64_t nb, int64_t n, int64_t k, int trans) {                                       \
    const char *op = "linalg.lu_solve";                                                                                \
    if (nb == 0 || n == 0 || k == 0)                                                                                   \
      return MT_OK;                                                                                                    \
    MT_TRY(too_big(op, n, n));                                                                                         \
    MT_TRY(too_big(op, n, k));                                                                                         \
    const int32_t *piv = (const int32_t *)pivots->_data;                                                               \
    for (int64_t e = 0; e < nb * n; e++) /* getrs reads rows by them: out of range is out of bounds */                 \
      if (piv[e] < 1 || piv[e] > n)                                                                                    \
        return mt_error(MT_EINVAL,                                                                                     \
                        "%s: Pivots given to lu_solve must all be %s. Did you properly pass the result of lu_factor?", \
                        op, piv[e] < 1 ? "greater or equal to 1" : "smaller or equal to LU.size(-2)");                 \
    SYM(op, getrs, getrs_fn_##SFX, LP "getrs_");                                                                       \
    REAL *a = work_alloc_##SFX(op, (size_t)(n * n)), *x = work_alloc_##SFX(op, (size_t)(n * k));                       \
    if (!a || !x) {                                                                                                    \
      free(a);                                                                                                         \
      free(x);                                                                                                         \
      return MT_ENOMEM;                                                                                                \
    }                                                                                                                  \
    const lp_int nn = (lp_int)n, kk = (lp_int)k;                                                                       \
    const char tr = trans ? 'T' : 'N';                                                                                 \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      to_col_##SFX(a, nn, (const REAL *)LU->_data + b * n * n, n, n);                                                  \
      to_col_##SFX(x, nn, (const REAL *)B->_data + b * n * k, n, k);                                                   \
      lp_int i = 0;                                                                                                    \
      getrs(&tr, &nn, &kk, a, &nn, (const lp_int *)piv + b * n, x, &nn, &i);                                           \
      from_col_##SFX((REAL *)X->_data + b * n * k, x, nn, n, k);                                                       \
    }                                                                                                                  \
    free(a);                                                                                                           \
    free(x);                                                                                                           \
    return MT_OK;                                                                                                      \
  }                                                                                                                    \
                                                                                                                       \
  /* LD (n, n) and pivots (n) of A = L D L^T (Bunch-Kaufman, sytrf, from A's lower triangle, as PyTorch): L unit lower \
   * below the diagonal, D's 1x1 and 2x2 blocks on and beside it, the upper triangle zeroed; LAPACK's pivots */        \
  static mt_status ldl_factor_##SFX(mt_tensor *LD, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb, \
                                    int64_t n) {                                                                       \
    const char *op = "linalg.ldl_factor";                                                                              \
    if (nb == 0)                                                                                                       \
      return MT_OK;                                                                                                    \
    int32_t *inf = (int32_t *)info->_data;                                                                             \
    memset(inf, 0, nb * sizeof(int32_t));                                                                              \
    if (n == 0)                                                                                                        \
      return MT_OK;                                                                                                    \
    MT_TRY(too_big(op, n, n));                                                                                         \
    SYM(op, sytrf, sytrf_fn_##SFX, LP "sytrf_");                                                                       \
    const lp_int nn = (lp_int)n, minus1 = -1;                                                                          \
    const char uplo = 'L';                                                                                             \
    REAL *a = work_alloc_##SFX(op, (size_t)(n * n)), q = 0;                                                            \
    if (!a)                                                                                                            \
      return MT_ENOMEM;                                                                                                \
    lp_int i = 0;                                                                                                      \
    sytrf(&uplo, &nn, a, &nn, (lp_int *)pivots->_data, &q, &minus1, &i);                                               \
    lp_int lwork = query_size(q);                                                                                      \
    REAL *work = work_alloc_##SFX(op, (size_t)lwork);                                                                  \
    if (!work) {                                                                                                       \
      free(a);                                                                                                         \
      return MT_ENOMEM;                                                                                                \
    }                                                                                                                  \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      to_col_##SFX(a, nn, (const REAL *)A->_data + b * n * n, n, n);                                                   \
      sytrf(&uplo, &nn, a, &nn, (lp_int *)pivots->_data + b * n, work, &lwork, &i);                                    \
      inf[b] = i;                                                                                                      \
      REAL *dst = (REAL *)LD->_data + b * n * n;                                                                       \
      from_col_##SFX(dst, a, nn, n, n);                                                                                \
      for (int64_t r = 0; r < n; r++)                                                                                  \
        memset(dst + r * n + r + 1, 0, (size_t)(n - r - 1) * sizeof(REAL));                                            \
    }                                                                                                                  \
    free(a);                                                                                                           \
    free(work);                                                                                                        \
    return MT_OK;                                                                                                      \
  }                                                                                                                    \
                                                                                                                       \
  /* X (n, k) with A X = B from ldl_factor's LD and pivots (sytrs); the pivots checked to be a factorization's (sytrs  \
   * reads rows and 2x2 blocks by them) */                                                                             \
  static mt_status ldl_solve_##SFX(mt_tensor *X, const mt_tensor *LD, const mt_tensor *pivots, const mt_tensor *B,     \
                                   int64_t nb, int64_t n, int64_t k) {                                                 \
    const char *op = "linalg.ldl_solve";                                                                               \
    if (nb == 0 || n == 0 || k == 0)                                                                                   \
      return MT_OK;                                                                                                    \
    MT_TRY(too_big(op, n, n));                                                                                         \
    MT_TRY(too_big(op, n, k));                                                                                         \
    const int32_t *piv = (const int32_t *)pivots->_data;                                                               \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      const int32_t *p = piv + b * n;                                                                                  \
      for (int64_t e = 0; e < n;) {                                                                                    \
        int ok = p[e] > 0 ? p[e] <= n : (e + 1 < n && p[e + 1] == p[e] && -p[e] <= n);                                 \
        if (!ok)                                                                                                       \
          return mt_error(MT_EINVAL,                                                                                   \
                          "%s: pivots[%lld] = %d is not a pivot of an LDL factorization of a %lld by %lld matrix "     \
                          "(did you pass the result of linalg.ldl_factor?)",                                           \
                          op, (long long)(e + 1), (int)p[e], (long long)n, (long long)n);                              \
        e += p[e] > 0 ? 1 : 2;                                                                                         \
      }                                                                                                                \
    }                                                                                                                  \
    SYM(op, sytrs, sytrs_fn_##SFX, LP "sytrs_");                                                                       \
    REAL *a = work_alloc_##SFX(op, (size_t)(n * n)), *x = work_alloc_##SFX(op, (size_t)(n * k));                       \
    if (!a || !x) {                                                                                                    \
      free(a);                                                                                                         \
      free(x);                                                                                                         \
      return MT_ENOMEM;                                                                                                \
    }                                                                                                                  \
    const lp_int nn = (lp_int)n, kk = (lp_int)k;                                                                       \
    const char uplo = 'L';                                                                                             \
    for (int64_t b = 0; b < nb; b++) {                                                                                 \
      to_col_##SFX(a, nn, (const REAL *)LD->_data + b * n * n, n, n);                                                  \
      to_col_##SFX(x, nn, (const REAL *)B->_data + b * n * k, n, k);                                                   \
      lp_int i = 0;                                                                                                    \
      sytrs(&uplo, &nn, &kk, a, &nn, (const lp_int *)piv + b * n, x, &nn, &i);                                         \
      from_col_##SFX((REAL *)X->_data + b * n * k, x, nn, n, k);                                                       \
    }                                                                                                                  \
    free(a);                                                                                                           \
    free(x);                                                                                                           \
    return MT_OK;                                                                                                      \
  }

LAPACK_TYPES(LAPACK_KERNELS)

/* the kernels: the float32 or float64 one, by the operands' dtype (one dtype for all of them) */
#define F32(t) ((t)->_dtype == MT_FLOAT32)

mt_status mt_cpu_cholesky(mt_tensor *L, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n, int upper) {
  return F32(A) ? cholesky_f32(L, info, A, nb, n, upper) : cholesky_f64(L, info, A, nb, n, upper);
}
mt_status mt_cpu_solve_triangular(mt_tensor *X, const mt_tensor *A, const mt_tensor *B, int64_t nb, int64_t n,
                                  int64_t k, int upper, int left, int unitriangular) {
  return F32(A) ? solve_triangular_f32(X, A, B, nb, n, k, upper, left, unitriangular)
                : solve_triangular_f64(X, A, B, nb, n, k, upper, left, unitriangular);
}
mt_status mt_cpu_qr(mt_tensor *Q, mt_tensor *R, const mt_tensor *A, int64_t nb, int64_t m, int64_t n, int mode) {
  return F32(A) ? qr_f32(Q, R, A, nb, m, n, mode) : qr_f64(Q, R, A, nb, m, n, mode);
}
mt_status mt_cpu_eigh(mt_tensor *w, mt_tensor *V, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n,
                      int upper) {
  return F32(A) ? eigh_f32(w, V, info, A, nb, n, upper) : eigh_f64(w, V, info, A, nb, n, upper);
}
mt_status mt_cpu_svd(mt_tensor *U, mt_tensor *S, mt_tensor *Vh, mt_tensor *info, const mt_tensor *A, int64_t nb,
                     int64_t m, int64_t n, int full) {
  return F32(A) ? svd_f32(U, S, Vh, info, A, nb, m, n, full) : svd_f64(U, S, Vh, info, A, nb, m, n, full);
}
mt_status mt_cpu_lstsq(mt_tensor *X, mt_tensor *rank, mt_tensor *S, mt_tensor *info, const mt_tensor *A,
                       const mt_tensor *B, int64_t nb, int64_t m, int64_t n, int64_t k, double rcond, int svd) {
  return F32(A) ? lstsq_f32(X, rank, S, info, A, B, nb, m, n, k, rcond, svd)
                : lstsq_f64(X, rank, S, info, A, B, nb, m, n, k, rcond, svd);
}
mt_status mt_cpu_lu_factor(mt_tensor *LU, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t m,
                           int64_t n) {
  return F32(A) ? lu_factor_f32(LU, pivots, info, A, nb, m, n) : lu_factor_f64(LU, pivots, info, A, nb, m, n);
}
mt_status mt_cpu_lu_solve(mt_tensor *X, const mt_tensor *LU, const mt_tensor *pivots, const mt_tensor *B, int64_t nb,
                          int64_t n, int64_t k, int trans) {
  return F32(LU) ? lu_solve_f32(X, LU, pivots, B, nb, n, k, trans) : lu_solve_f64(X, LU, pivots, B, nb, n, k, trans);
}
mt_status mt_cpu_ldl_factor(mt_tensor *LD, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb,
                            int64_t n) {
  return F32(A) ? ldl_factor_f32(LD, pivots, info, A, nb, n) : ldl_factor_f64(LD, pivots, info, A, nb, n);
}
mt_status mt_cpu_ldl_solve(mt_tensor *X, const mt_tensor *LD, const mt_tensor *pivots, const mt_tensor *B, int64_t nb,
                           int64_t n, int64_t k) {
  return F32(LD) ? ldl_solve_f32(X, LD, pivots, B, nb, n, k) : ldl_solve_f64(X, LD, pivots, B, nb, n, k);
}
