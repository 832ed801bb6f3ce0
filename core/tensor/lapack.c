/* lapack.c -- the CPU's kernels of torch.linalg's decompositions (core/kernels.h: cholesky, solve_triangular,
 * qr, eigh, svd, lstsq, lu_factor), by LAPACK's double-precision routines (dpotrf, dtrsm, dgeqrf + dorgqr,
 * dsyevd, dgesdd, dgelsd, dgetrf) from the loaded BLAS or liblapack.so.3 (mt_lapack_symbol, core/blas.c).
 * Every operand is a contiguous float64 batch of row-major matrices (the front doors, core/ops/lapack.c,
 * convert); each matrix is copied here into a column-major work buffer, factored, and copied back. One
 * matrix at a time from the calling thread (OpenBLAS threads inside a routine). LP64 LAPACK (32-bit int). */
#include "cpu.h"

#include "../blas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef int lp_int; /* LAPACK's INTEGER in Debian's LP64 builds */

typedef void (*potrf_fn)(const char *uplo, const lp_int *n, double *a, const lp_int *lda, lp_int *info);
typedef void (*trsm_fn)(const char *side, const char *uplo, const char *transa, const char *diag, const lp_int *m,
                        const lp_int *n, const double *alpha, const double *a, const lp_int *lda, double *b,
                        const lp_int *ldb);
typedef void (*geqrf_fn)(const lp_int *m, const lp_int *n, double *a, const lp_int *lda, double *tau, double *work,
                         const lp_int *lwork, lp_int *info);
typedef void (*orgqr_fn)(const lp_int *m, const lp_int *n, const lp_int *k, double *a, const lp_int *lda,
                         const double *tau, double *work, const lp_int *lwork, lp_int *info);
typedef void (*syevd_fn)(const char *jobz, const char *uplo, const lp_int *n, double *a, const lp_int *lda, double *w,
                         double *work, const lp_int *lwork, lp_int *iwork, const lp_int *liwork, lp_int *info);
typedef void (*gesdd_fn)(const char *jobz, const lp_int *m, const lp_int *n, double *a, const lp_int *lda, double *s,
                         double *u, const lp_int *ldu, double *vt, const lp_int *ldvt, double *work,
                         const lp_int *lwork, lp_int *iwork, lp_int *info);
typedef void (*gelsd_fn)(const lp_int *m, const lp_int *n, const lp_int *nrhs, double *a, const lp_int *lda, double *b,
                         const lp_int *ldb, double *s, const double *rcond, lp_int *rank, double *work,
                         const lp_int *lwork, lp_int *iwork, lp_int *info);
typedef void (*gelsy_fn)(const lp_int *m, const lp_int *n, const lp_int *nrhs, double *a, const lp_int *lda, double *b,
                         const lp_int *ldb, lp_int *jpvt, const double *rcond, lp_int *rank, double *work,
                         const lp_int *lwork, lp_int *info);
typedef void (*getrf_fn)(const lp_int *m, const lp_int *n, double *a, const lp_int *lda, lp_int *ipiv, lp_int *info);

#define SYM(op, var, type, name)                       \
  type var = (type)mt_lapack_symbol(op, name);         \
  if (!var) return MT_ENOTIMPL

static inline lp_int ld(int64_t n) { return n > 0 ? (lp_int)n : 1; }

static mt_status too_big(const char *op, int64_t m, int64_t n) {
  if (m > 0x3fffffff || n > 0x3fffffff || m * n > 0x7fffffff)
    return mt_error(MT_ERANGE, "%s: a %lld by %lld matrix is too large for LAPACK's 32-bit indices", op, (long long)m,
                    (long long)n);
  return MT_OK;
}

/* row-major (m, n) <-> column-major with leading dimension lda >= m */
static void to_col(double *c, lp_int lda, const double *r, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) c[j * lda + i] = r[i * n + j];
}
static void from_col(double *r, const double *c, lp_int lda, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) r[i * n + j] = c[j * lda + i];
}

static int all_finite(const double *x, int64_t n) {
  int ok = 1;
  for (int64_t i = 0; i < n; i++) ok &= isfinite(x[i]) != 0;
  return ok;
}

static double *work_alloc(const char *op, size_t count) {
  double *w = malloc((count ? count : 1) * sizeof(double));
  if (!w) mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace (%zu doubles)", op, count);
  return w;
}
/* the size a workspace query answered */
static lp_int query_size(double q) { return q < 1 ? 1 : (lp_int)(q + 0.5); }

mt_status mt_cpu_cholesky(mt_tensor *L, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n, int upper) {
  const char *op = "linalg.cholesky";
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  if (n == 0) {
    memset(inf, 0, nb * sizeof(int32_t));
    return MT_OK;
  }
  MT_TRY(too_big(op, n, n));
  SYM(op, potrf, potrf_fn, "dpotrf_");
  double *a = work_alloc(op, (size_t)(n * n));
  if (!a) return MT_ENOMEM;
  const lp_int nn = (lp_int)n;
  const char uplo = upper ? 'U' : 'L';
  for (int64_t b = 0; b < nb; b++) {
    const double *src = (const double *)A->_data + b * n * n;
    double *dst = (double *)L->_data + b * n * n;
    to_col(a, nn, src, n, n);
    lp_int i = 0;
    potrf(&uplo, &nn, a, &nn, &i);
    inf[b] = i;
    from_col(dst, a, nn, n, n);
    for (int64_t r = 0; r < n; r++) /* the other triangle zeroed */
      for (int64_t c = 0; c < n; c++)
        if (upper ? c < r : c > r) dst[r * n + c] = 0;
  }
  free(a);
  return MT_OK;
}

mt_status mt_cpu_solve_triangular(mt_tensor *X, const mt_tensor *A, const mt_tensor *B, int64_t nb, int64_t n,
                                  int64_t k, int upper, int left, int unitriangular) {
  const char *op = "linalg.solve_triangular";
  /* B (n, k) when left, else (k, n) */
  int64_t bm = left ? n : k, bn = left ? k : n;
  if (nb == 0 || n == 0 || k == 0) return MT_OK;
  MT_TRY(too_big(op, n, n));
  MT_TRY(too_big(op, bm, bn));
  SYM(op, trsm, trsm_fn, "dtrsm_");
  double *a = work_alloc(op, (size_t)(n * n)), *x = work_alloc(op, (size_t)(bm * bn));
  if (!a || !x) {
    free(a);
    free(x);
    return MT_ENOMEM;
  }
  const lp_int nn = (lp_int)n, m_ = (lp_int)bm, n_ = (lp_int)bn, ldb = ld(bm);
  const char side = left ? 'L' : 'R', uplo = upper ? 'U' : 'L', trans = 'N', diag = unitriangular ? 'U' : 'N';
  const double one = 1;
  for (int64_t b = 0; b < nb; b++) {
    to_col(a, nn, (const double *)A->_data + b * n * n, n, n);
    to_col(x, ldb, (const double *)B->_data + b * bm * bn, bm, bn);
    trsm(&side, &uplo, &trans, &diag, &m_, &n_, &one, a, &nn, x, &ldb);
    from_col((double *)X->_data + b * bm * bn, x, ldb, bm, bn);
  }
  free(a);
  free(x);
  return MT_OK;
}

mt_status mt_cpu_qr(mt_tensor *Q, mt_tensor *R, const mt_tensor *A, int64_t nb, int64_t m, int64_t n, int mode) {
  const char *op = "linalg.qr";
  int64_t k = m < n ? m : n;
  int64_t qc = mode == 1 ? m : k;    /* Q's columns */
  int64_t rr = mode == 1 ? m : k;    /* R's rows */
  int64_t wc = n > qc ? n : qc;      /* the work buffer's columns: A's, or Q's when more */
  if (nb == 0) return MT_OK;
  if (mode == 3) { /* geqrf's own results: Q <- the factored (m, n) matrix, R <- tau (k) */
    if (k == 0) return MT_OK;
    MT_TRY(too_big(op, m, n));
    SYM(op, geqrf3, geqrf_fn, "dgeqrf_");
    const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m, minus1 = -1;
    lp_int info = 0;
    double q = 0, *a = work_alloc(op, (size_t)(m * n)), *work = NULL;
    geqrf3(&m_, &n_, a ? a : &q, &lda, (double *)R->_data, &q, &minus1, &info);
    lp_int lwork = query_size(q);
    if (a) work = work_alloc(op, (size_t)lwork);
    if (!a || !work) {
      free(a);
      return MT_ENOMEM;
    }
    for (int64_t b = 0; b < nb; b++) {
      to_col(a, lda, (const double *)A->_data + b * m * n, m, n);
      geqrf3(&m_, &n_, a, &lda, (double *)R->_data + b * k, work, &lwork, &info);
      from_col((double *)Q->_data + b * m * n, a, lda, m, n);
    }
    free(a);
    free(work);
    return MT_OK;
  }
  double *Qd = Q ? (double *)Q->_data : NULL, *Rd = (double *)R->_data;
  if (m == 0 || n == 0) { /* R all zeros; Q the first columns of the identity */
    memset(Rd, 0, (size_t)(nb * rr * n) * sizeof(double));
    if (Qd) {
      memset(Qd, 0, (size_t)(nb * m * qc) * sizeof(double));
      for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < m && i < qc; i++) Qd[b * m * qc + i * qc + i] = 1;
    }
    return MT_OK;
  }
  MT_TRY(too_big(op, m, wc));
  SYM(op, geqrf, geqrf_fn, "dgeqrf_");
  orgqr_fn orgqr = NULL;
  if (Q && !(orgqr = (orgqr_fn)mt_lapack_symbol(op, "dorgqr_"))) return MT_ENOTIMPL;
  const lp_int m_ = (lp_int)m, n_ = (lp_int)n, k_ = (lp_int)k, qc_ = (lp_int)qc, lda = (lp_int)m;
  /* the workspace: the larger query of the two routines */
  double q1 = 0, q2 = 0;
  lp_int info = 0, minus1 = -1;
  double *a = work_alloc(op, (size_t)(m * wc)), *tau = work_alloc(op, (size_t)k);
  if (!a || !tau) {
    free(a);
    free(tau);
    return MT_ENOMEM;
  }
  geqrf(&m_, &n_, a, &lda, tau, &q1, &minus1, &info);
  if (Q) orgqr(&m_, &qc_, &k_, a, &lda, tau, &q2, &minus1, &info);
  lp_int lwork = query_size(q1 > q2 ? q1 : q2);
  double *work = work_alloc(op, (size_t)lwork);
  if (!work) {
    free(a);
    free(tau);
    return MT_ENOMEM;
  }
  for (int64_t b = 0; b < nb; b++) {
    to_col(a, lda, (const double *)A->_data + b * m * n, m, n);
    geqrf(&m_, &n_, a, &lda, tau, work, &lwork, &info);
    double *r = Rd + b * rr * n;
    for (int64_t i = 0; i < rr; i++)
      for (int64_t j = 0; j < n; j++) r[i * n + j] = (i <= j && i < m) ? a[j * lda + i] : 0;
    if (Q) {
      orgqr(&m_, &qc_, &k_, a, &lda, tau, work, &lwork, &info);
      from_col(Qd + b * m * qc, a, lda, m, qc);
    }
  }
  free(a);
  free(tau);
  free(work);
  return MT_OK;
}

mt_status mt_cpu_eigh(mt_tensor *w, mt_tensor *V, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n,
                      int upper) {
  const char *op = "linalg.eigh";
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  if (n == 0) {
    memset(inf, 0, nb * sizeof(int32_t));
    return MT_OK;
  }
  MT_TRY(too_big(op, n, n));
  SYM(op, syevd, syevd_fn, "dsyevd_");
  const lp_int nn = (lp_int)n, minus1 = -1;
  const char jobz = V ? 'V' : 'N', uplo = upper ? 'U' : 'L';
  double *a = work_alloc(op, (size_t)(n * n)), qw = 0;
  if (!a) return MT_ENOMEM;
  lp_int qi = 0, i = 0;
  syevd(&jobz, &uplo, &nn, a, &nn, (double *)w->_data, &qw, &minus1, &qi, &minus1, &i);
  lp_int lwork = query_size(qw), liwork = qi > 1 ? qi : 1;
  double *work = work_alloc(op, (size_t)lwork);
  lp_int *iwork = malloc((size_t)liwork * sizeof(lp_int));
  if (!work || !iwork) {
    free(a);
    free(work);
    free(iwork);
    return mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);
  }
  for (int64_t b = 0; b < nb; b++) {
    const double *src = (const double *)A->_data + b * n * n;
    if (!all_finite(src, n * n)) { /* NaN results (LAPACK's scaling would only make noise of them) */
      inf[b] = 0;
      for (int64_t e = 0; e < n; e++) ((double *)w->_data)[b * n + e] = NAN;
      if (V)
        for (int64_t e = 0; e < n * n; e++) ((double *)V->_data)[b * n * n + e] = NAN;
      continue;
    }
    to_col(a, nn, src, n, n);
    syevd(&jobz, &uplo, &nn, a, &nn, (double *)w->_data + b * n, work, &lwork, iwork, &liwork, &i);
    inf[b] = i;
    if (V) from_col((double *)V->_data + b * n * n, a, nn, n, n);
  }
  free(a);
  free(work);
  free(iwork);
  return MT_OK;
}

mt_status mt_cpu_svd(mt_tensor *U, mt_tensor *S, mt_tensor *Vh, mt_tensor *info, const mt_tensor *A, int64_t nb,
                     int64_t m, int64_t n, int full) {
  const char *op = "linalg.svd";
  int64_t k = m < n ? m : n;
  int uv = U != NULL;
  int64_t uc = full ? m : k, vr = full ? n : k; /* U's columns, Vh's rows */
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  memset(inf, 0, nb * sizeof(int32_t));
  if (m == 0 || n == 0) { /* U and Vh (full) identities, S empty */
    if (uv) {
      memset(U->_data, 0, (size_t)(nb * m * uc) * sizeof(double));
      memset(Vh->_data, 0, (size_t)(nb * vr * n) * sizeof(double));
      for (int64_t b = 0; b < nb; b++) {
        for (int64_t i = 0; i < m && i < uc; i++) ((double *)U->_data)[b * m * uc + i * uc + i] = 1;
        for (int64_t i = 0; i < vr && i < n; i++) ((double *)Vh->_data)[b * vr * n + i * n + i] = 1;
      }
    }
    return MT_OK;
  }
  MT_TRY(too_big(op, m, n));
  MT_TRY(too_big(op, m, m));
  MT_TRY(too_big(op, n, n));
  SYM(op, gesdd, gesdd_fn, "dgesdd_");
  const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m, ldu = (lp_int)m, ldvt = (lp_int)vr, minus1 = -1;
  const char jobz = !uv ? 'N' : full ? 'A' : 'S';
  double *a = work_alloc(op, (size_t)(m * n)), *u = uv ? work_alloc(op, (size_t)(m * uc)) : NULL;
  double *vt = uv ? work_alloc(op, (size_t)(vr * n)) : NULL, qw = 0;
  lp_int *iwork = malloc((size_t)(8 * k) * sizeof(lp_int)), i = 0;
  double *work = NULL;
  mt_status s = MT_OK;
  if (!a || !iwork || (uv && (!u || !vt))) {
    s = mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);
    goto done;
  }
  gesdd(&jobz, &m_, &n_, a, &lda, (double *)S->_data, u ? u : &qw, &ldu, vt ? vt : &qw, &ldvt, &qw, &minus1, iwork, &i);
  lp_int lwork = query_size(qw);
  work = work_alloc(op, (size_t)lwork);
  if (!work) {
    s = MT_ENOMEM;
    goto done;
  }
  for (int64_t b = 0; b < nb; b++) {
    const double *src = (const double *)A->_data + b * m * n;
    double *sv = (double *)S->_data + b * k;
    if (!all_finite(src, m * n)) { /* LAPACK's gesdd may not return on NaN: reported as PyTorch's "non-finite values" */
      inf[b] = -4;
      for (int64_t e = 0; e < k; e++) sv[e] = NAN;
      if (uv) {
        for (int64_t e = 0; e < m * uc; e++) ((double *)U->_data)[b * m * uc + e] = NAN;
        for (int64_t e = 0; e < vr * n; e++) ((double *)Vh->_data)[b * vr * n + e] = NAN;
      }
      continue;
    }
    to_col(a, lda, src, m, n);
    gesdd(&jobz, &m_, &n_, a, &lda, sv, u ? u : &qw, &ldu, vt ? vt : &qw, &ldvt, work, &lwork, iwork, &i);
    inf[b] = i;
    if (uv) {
      from_col((double *)U->_data + b * m * uc, u, ldu, m, uc);
      from_col((double *)Vh->_data + b * vr * n, vt, ldvt, vr, n);
    }
  }
done:
  free(a);
  free(u);
  free(vt);
  free(iwork);
  free(work);
  return s;
}

mt_status mt_cpu_lstsq(mt_tensor *X, mt_tensor *rank, mt_tensor *S, mt_tensor *info, const mt_tensor *A,
                       const mt_tensor *B, int64_t nb, int64_t m, int64_t n, int64_t k, double rcond, int svd) {
  const char *op = "linalg.lstsq";
  int64_t mn = m < n ? m : n, mx = m > n ? m : n;
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  int64_t *rk = (int64_t *)rank->_data;
  memset(inf, 0, nb * sizeof(int32_t));
  if (m == 0 || n == 0) { /* nothing to solve: X zeros, rank 0 */
    memset(X->_data, 0, (size_t)(nb * n * k) * sizeof(double));
    for (int64_t b = 0; b < nb; b++) rk[b] = 0;
    return MT_OK;
  }
  MT_TRY(too_big(op, m, n));
  MT_TRY(too_big(op, mx, k > 0 ? k : 1));
  gelsd_fn gelsd = NULL;
  gelsy_fn gelsy = NULL;
  if (svd ? !(gelsd = (gelsd_fn)mt_lapack_symbol(op, "dgelsd_")) : !(gelsy = (gelsy_fn)mt_lapack_symbol(op, "dgelsy_")))
    return MT_ENOTIMPL;
  int64_t kk = k > 0 ? k : 1; /* gelsd wants nrhs >= 0 but a buffer of one column at least */
  const lp_int m_ = (lp_int)m, n_ = (lp_int)n, k_ = (lp_int)k, lda = ld(m), ldb = ld(mx), minus1 = -1;
  double *a = work_alloc(op, (size_t)(m * n)), *bb = work_alloc(op, (size_t)(mx * kk));
  double *s = work_alloc(op, (size_t)mn), qw = 0, *work = NULL;
  lp_int qi = 0, r = 0, i = 0, *iwork = NULL; /* iwork: gelsd's, or gelsy's column pivots (n) */
  mt_status st = MT_OK;
  if (!a || !bb || !s) {
    st = MT_ENOMEM;
    goto done;
  }
  if (svd) gelsd(&m_, &n_, &k_, a, &lda, bb, &ldb, s, &rcond, &r, &qw, &minus1, &qi, &i);
  else gelsy(&m_, &n_, &k_, a, &lda, bb, &ldb, &qi, &rcond, &r, &qw, &minus1, &i), qi = n_;
  lp_int lwork = query_size(qw);
  work = work_alloc(op, (size_t)lwork);
  iwork = malloc((size_t)(qi > 1 ? qi : 1) * sizeof(lp_int));
  if (!work || !iwork) {
    st = mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);
    goto done;
  }
  for (int64_t b = 0; b < nb; b++) {
    const double *src = (const double *)A->_data + b * m * n;
    if (!all_finite(src, m * n) || !all_finite((const double *)B->_data + b * m * k, m * k)) {
      /* gelsd's scaling reports a non-finite norm on stderr (xerbla): NaN results and info -4 instead */
      inf[b] = -4;
      rk[b] = 0;
      for (int64_t e = 0; e < n * k; e++) ((double *)X->_data)[b * n * k + e] = NAN;
      if (S)
        for (int64_t e = 0; e < mn; e++) ((double *)S->_data)[b * mn + e] = NAN;
      continue;
    }
    to_col(a, lda, src, m, n);
    memset(bb, 0, (size_t)(mx * kk) * sizeof(double));
    if (k > 0) to_col(bb, ldb, (const double *)B->_data + b * m * k, m, k);
    if (svd) gelsd(&m_, &n_, &k_, a, &lda, bb, &ldb, s, &rcond, &r, work, &lwork, iwork, &i);
    else {
      memset(iwork, 0, (size_t)n * sizeof(lp_int)); /* every column free to move */
      gelsy(&m_, &n_, &k_, a, &lda, bb, &ldb, iwork, &rcond, &r, work, &lwork, &i);
    }
    inf[b] = i;
    rk[b] = r;
    if (S && svd) memcpy((double *)S->_data + b * mn, s, (size_t)mn * sizeof(double));
    if (k > 0) from_col((double *)X->_data + b * n * k, bb, ldb, n, k);
  }
done:
  free(a);
  free(bb);
  free(s);
  free(work);
  free(iwork);
  return st;
}

mt_status mt_cpu_lu_factor(mt_tensor *LU, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb,
                           int64_t m, int64_t n) {
  const char *op = "linalg.lu_factor";
  int64_t k = m < n ? m : n;
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  memset(inf, 0, nb * sizeof(int32_t));
  if (k == 0) return MT_OK;
  MT_TRY(too_big(op, m, n));
  SYM(op, getrf, getrf_fn, "dgetrf_");
  const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m;
  double *a = work_alloc(op, (size_t)(m * n));
  if (!a) return MT_ENOMEM;
  for (int64_t b = 0; b < nb; b++) {
    to_col(a, lda, (const double *)A->_data + b * m * n, m, n);
    lp_int i = 0;
    getrf(&m_, &n_, a, &lda, (lp_int *)pivots->_data + b * k, &i);
    inf[b] = i;
    from_col((double *)LU->_data + b * m * n, a, lda, m, n);
  }
  free(a);
  return MT_OK;
}
