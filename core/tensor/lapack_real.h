/* lapack_real.h -- the kernels of core/tensor/lapack.c for one real type, included once per type with
 * REAL (float, double), FN(name) (name_f32, name_f64) and LPNAME("potrf_") ("spotrf_", "dpotrf_") defined: the
 * LAPACK routine of the operand's precision, as PyTorch calls them (float32 by the s-routines). */

typedef void (*FN(potrf_fn))(const char *uplo, const lp_int *n, REAL *a, const lp_int *lda, lp_int *info);
typedef void (*FN(trsm_fn))(const char *side, const char *uplo, const char *transa, const char *diag, const lp_int *m,
                            const lp_int *n, const REAL *alpha, const REAL *a, const lp_int *lda, REAL *b,
                            const lp_int *ldb);
typedef void (*FN(geqrf_fn))(const lp_int *m, const lp_int *n, REAL *a, const lp_int *lda, REAL *tau, REAL *work,
                             const lp_int *lwork, lp_int *info);
typedef void (*FN(orgqr_fn))(const lp_int *m, const lp_int *n, const lp_int *k, REAL *a, const lp_int *lda,
                             const REAL *tau, REAL *work, const lp_int *lwork, lp_int *info);
typedef void (*FN(syevd_fn))(const char *jobz, const char *uplo, const lp_int *n, REAL *a, const lp_int *lda, REAL *w,
                             REAL *work, const lp_int *lwork, lp_int *iwork, const lp_int *liwork, lp_int *info);
typedef void (*FN(gesdd_fn))(const char *jobz, const lp_int *m, const lp_int *n, REAL *a, const lp_int *lda, REAL *s,
                             REAL *u, const lp_int *ldu, REAL *vt, const lp_int *ldvt, REAL *work,
                             const lp_int *lwork, lp_int *iwork, lp_int *info);
typedef void (*FN(gelsd_fn))(const lp_int *m, const lp_int *n, const lp_int *nrhs, REAL *a, const lp_int *lda, REAL *b,
                             const lp_int *ldb, REAL *s, const REAL *rcond, lp_int *rank, REAL *work,
                             const lp_int *lwork, lp_int *iwork, lp_int *info);
typedef void (*FN(gelsy_fn))(const lp_int *m, const lp_int *n, const lp_int *nrhs, REAL *a, const lp_int *lda, REAL *b,
                             const lp_int *ldb, lp_int *jpvt, const REAL *rcond, lp_int *rank, REAL *work,
                             const lp_int *lwork, lp_int *info);
typedef void (*FN(getrf_fn))(const lp_int *m, const lp_int *n, REAL *a, const lp_int *lda, lp_int *ipiv, lp_int *info);
typedef void (*FN(getrs_fn))(const char *trans, const lp_int *n, const lp_int *nrhs, const REAL *a, const lp_int *lda,
                             const lp_int *ipiv, REAL *b, const lp_int *ldb, lp_int *info);

/* row-major (m, n) <-> column-major with leading dimension lda >= m */
static void FN(to_col)(REAL *c, lp_int lda, const REAL *r, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) c[j * lda + i] = r[i * n + j];
}
static void FN(from_col)(REAL *r, const REAL *c, lp_int lda, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) r[i * n + j] = c[j * lda + i];
}

static int FN(all_finite)(const REAL *x, int64_t n) {
  int ok = 1;
  for (int64_t i = 0; i < n; i++) ok &= isfinite(x[i]) != 0;
  return ok;
}

static REAL *FN(work_alloc)(const char *op, size_t count) {
  REAL *w = malloc((count ? count : 1) * sizeof(REAL));
  if (!w) mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace (%zu elements)", op, count);
  return w;
}

static mt_status FN(cholesky)(mt_tensor *L, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n, int upper) {
  const char *op = "linalg.cholesky";
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  if (n == 0) {
    memset(inf, 0, nb * sizeof(int32_t));
    return MT_OK;
  }
  MT_TRY(too_big(op, n, n));
  SYM(op, potrf, FN(potrf_fn), LPNAME("potrf_"));
  REAL *a = FN(work_alloc)(op, (size_t)(n * n));
  if (!a) return MT_ENOMEM;
  const lp_int nn = (lp_int)n;
  const char uplo = upper ? 'U' : 'L';
  for (int64_t b = 0; b < nb; b++) {
    const REAL *src = (const REAL *)A->_data + b * n * n;
    REAL *dst = (REAL *)L->_data + b * n * n;
    FN(to_col)(a, nn, src, n, n);
    lp_int i = 0;
    potrf(&uplo, &nn, a, &nn, &i);
    inf[b] = i;
    FN(from_col)(dst, a, nn, n, n);
    for (int64_t r = 0; r < n; r++) /* the other triangle zeroed */
      for (int64_t c = 0; c < n; c++)
        if (upper ? c < r : c > r) dst[r * n + c] = 0;
  }
  free(a);
  return MT_OK;
}

static mt_status FN(solve_triangular)(mt_tensor *X, const mt_tensor *A, const mt_tensor *B, int64_t nb, int64_t n,
                                  int64_t k, int upper, int left, int unitriangular) {
  const char *op = "linalg.solve_triangular";
  /* B (n, k) when left, else (k, n) */
  int64_t bm = left ? n : k, bn = left ? k : n;
  if (nb == 0 || n == 0 || k == 0) return MT_OK;
  MT_TRY(too_big(op, n, n));
  MT_TRY(too_big(op, bm, bn));
  SYM(op, trsm, FN(trsm_fn), LPNAME("trsm_"));
  REAL *a = FN(work_alloc)(op, (size_t)(n * n)), *x = FN(work_alloc)(op, (size_t)(bm * bn));
  if (!a || !x) {
    free(a);
    free(x);
    return MT_ENOMEM;
  }
  const lp_int nn = (lp_int)n, m_ = (lp_int)bm, n_ = (lp_int)bn, ldb = ld(bm);
  const char side = left ? 'L' : 'R', uplo = upper ? 'U' : 'L', trans = 'N', diag = unitriangular ? 'U' : 'N';
  const REAL one = 1;
  for (int64_t b = 0; b < nb; b++) {
    FN(to_col)(a, nn, (const REAL *)A->_data + b * n * n, n, n);
    FN(to_col)(x, ldb, (const REAL *)B->_data + b * bm * bn, bm, bn);
    trsm(&side, &uplo, &trans, &diag, &m_, &n_, &one, a, &nn, x, &ldb);
    FN(from_col)((REAL *)X->_data + b * bm * bn, x, ldb, bm, bn);
  }
  free(a);
  free(x);
  return MT_OK;
}

static mt_status FN(qr)(mt_tensor *Q, mt_tensor *R, const mt_tensor *A, int64_t nb, int64_t m, int64_t n, int mode) {
  const char *op = "linalg.qr";
  int64_t k = m < n ? m : n;
  int64_t qc = mode == 1 ? m : k;    /* Q's columns */
  int64_t rr = mode == 1 ? m : k;    /* R's rows */
  int64_t wc = n > qc ? n : qc;      /* the work buffer's columns: A's, or Q's when more */
  if (nb == 0) return MT_OK;
  if (mode == 3) { /* geqrf's own results: Q <- the factored (m, n) matrix, R <- tau (k) */
    if (k == 0) return MT_OK;
    MT_TRY(too_big(op, m, n));
    SYM(op, geqrf3, FN(geqrf_fn), LPNAME("geqrf_"));
    const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m, minus1 = -1;
    lp_int info = 0;
    REAL q = 0, *a = FN(work_alloc)(op, (size_t)(m * n)), *work = NULL;
    geqrf3(&m_, &n_, a ? a : &q, &lda, (REAL *)R->_data, &q, &minus1, &info);
    lp_int lwork = query_size(q);
    if (a) work = FN(work_alloc)(op, (size_t)lwork);
    if (!a || !work) {
      free(a);
      return MT_ENOMEM;
    }
    for (int64_t b = 0; b < nb; b++) {
      FN(to_col)(a, lda, (const REAL *)A->_data + b * m * n, m, n);
      geqrf3(&m_, &n_, a, &lda, (REAL *)R->_data + b * k, work, &lwork, &info);
      FN(from_col)((REAL *)Q->_data + b * m * n, a, lda, m, n);
    }
    free(a);
    free(work);
    return MT_OK;
  }
  REAL *Qd = Q ? (REAL *)Q->_data : NULL, *Rd = (REAL *)R->_data;
  if (m == 0 || n == 0) { /* R all zeros; Q the first columns of the identity */
    memset(Rd, 0, (size_t)(nb * rr * n) * sizeof(REAL));
    if (Qd) {
      memset(Qd, 0, (size_t)(nb * m * qc) * sizeof(REAL));
      for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < m && i < qc; i++) Qd[b * m * qc + i * qc + i] = 1;
    }
    return MT_OK;
  }
  MT_TRY(too_big(op, m, wc));
  SYM(op, geqrf, FN(geqrf_fn), LPNAME("geqrf_"));
  FN(orgqr_fn) orgqr = NULL;
  if (Q && !(orgqr = (FN(orgqr_fn))mt_lapack_symbol(op, LPNAME("orgqr_")))) return MT_ENOTIMPL;
  const lp_int m_ = (lp_int)m, n_ = (lp_int)n, k_ = (lp_int)k, qc_ = (lp_int)qc, lda = (lp_int)m;
  /* the workspace: the larger query of the two routines */
  REAL q1 = 0, q2 = 0;
  lp_int info = 0, minus1 = -1;
  REAL *a = FN(work_alloc)(op, (size_t)(m * wc)), *tau = FN(work_alloc)(op, (size_t)k);
  if (!a || !tau) {
    free(a);
    free(tau);
    return MT_ENOMEM;
  }
  geqrf(&m_, &n_, a, &lda, tau, &q1, &minus1, &info);
  if (Q) orgqr(&m_, &qc_, &k_, a, &lda, tau, &q2, &minus1, &info);
  lp_int lwork = query_size(q1 > q2 ? q1 : q2);
  REAL *work = FN(work_alloc)(op, (size_t)lwork);
  if (!work) {
    free(a);
    free(tau);
    return MT_ENOMEM;
  }
  for (int64_t b = 0; b < nb; b++) {
    FN(to_col)(a, lda, (const REAL *)A->_data + b * m * n, m, n);
    geqrf(&m_, &n_, a, &lda, tau, work, &lwork, &info);
    REAL *r = Rd + b * rr * n;
    for (int64_t i = 0; i < rr; i++)
      for (int64_t j = 0; j < n; j++) r[i * n + j] = (i <= j && i < m) ? a[j * lda + i] : 0;
    if (Q) {
      orgqr(&m_, &qc_, &k_, a, &lda, tau, work, &lwork, &info);
      FN(from_col)(Qd + b * m * qc, a, lda, m, qc);
    }
  }
  free(a);
  free(tau);
  free(work);
  return MT_OK;
}

static mt_status FN(eigh)(mt_tensor *w, mt_tensor *V, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n,
                      int upper) {
  const char *op = "linalg.eigh";
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  if (n == 0) {
    memset(inf, 0, nb * sizeof(int32_t));
    return MT_OK;
  }
  MT_TRY(too_big(op, n, n));
  SYM(op, syevd, FN(syevd_fn), LPNAME("syevd_"));
  const lp_int nn = (lp_int)n, minus1 = -1;
  const char jobz = V ? 'V' : 'N', uplo = upper ? 'U' : 'L';
  REAL *a = FN(work_alloc)(op, (size_t)(n * n)), qw = 0;
  if (!a) return MT_ENOMEM;
  lp_int qi = 0, i = 0;
  syevd(&jobz, &uplo, &nn, a, &nn, (REAL *)w->_data, &qw, &minus1, &qi, &minus1, &i);
  lp_int lwork = query_size(qw), liwork = qi > 1 ? qi : 1;
  REAL *work = FN(work_alloc)(op, (size_t)lwork);
  lp_int *iwork = malloc((size_t)liwork * sizeof(lp_int));
  if (!work || !iwork) {
    free(a);
    free(work);
    free(iwork);
    return mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);
  }
  for (int64_t b = 0; b < nb; b++) {
    const REAL *src = (const REAL *)A->_data + b * n * n;
    if (!FN(all_finite)(src, n * n)) { /* NaN results (LAPACK's scaling would only make noise of them) */
      inf[b] = 0;
      for (int64_t e = 0; e < n; e++) ((REAL *)w->_data)[b * n + e] = NAN;
      if (V)
        for (int64_t e = 0; e < n * n; e++) ((REAL *)V->_data)[b * n * n + e] = NAN;
      continue;
    }
    FN(to_col)(a, nn, src, n, n);
    syevd(&jobz, &uplo, &nn, a, &nn, (REAL *)w->_data + b * n, work, &lwork, iwork, &liwork, &i);
    inf[b] = i;
    if (V) FN(from_col)((REAL *)V->_data + b * n * n, a, nn, n, n);
  }
  free(a);
  free(work);
  free(iwork);
  return MT_OK;
}

static mt_status FN(svd)(mt_tensor *U, mt_tensor *S, mt_tensor *Vh, mt_tensor *info, const mt_tensor *A, int64_t nb,
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
      memset(U->_data, 0, (size_t)(nb * m * uc) * sizeof(REAL));
      memset(Vh->_data, 0, (size_t)(nb * vr * n) * sizeof(REAL));
      for (int64_t b = 0; b < nb; b++) {
        for (int64_t i = 0; i < m && i < uc; i++) ((REAL *)U->_data)[b * m * uc + i * uc + i] = 1;
        for (int64_t i = 0; i < vr && i < n; i++) ((REAL *)Vh->_data)[b * vr * n + i * n + i] = 1;
      }
    }
    return MT_OK;
  }
  MT_TRY(too_big(op, m, n));
  MT_TRY(too_big(op, m, m));
  MT_TRY(too_big(op, n, n));
  SYM(op, gesdd, FN(gesdd_fn), LPNAME("gesdd_"));
  const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m, ldu = (lp_int)m, ldvt = (lp_int)vr, minus1 = -1;
  const char jobz = !uv ? 'N' : full ? 'A' : 'S';
  REAL *a = FN(work_alloc)(op, (size_t)(m * n)), *u = uv ? FN(work_alloc)(op, (size_t)(m * uc)) : NULL;
  REAL *vt = uv ? FN(work_alloc)(op, (size_t)(vr * n)) : NULL, qw = 0;
  lp_int *iwork = malloc((size_t)(8 * k) * sizeof(lp_int)), i = 0;
  REAL *work = NULL;
  mt_status s = MT_OK;
  if (!a || !iwork || (uv && (!u || !vt))) {
    s = mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);
    goto done;
  }
  gesdd(&jobz, &m_, &n_, a, &lda, (REAL *)S->_data, u ? u : &qw, &ldu, vt ? vt : &qw, &ldvt, &qw, &minus1, iwork, &i);
  lp_int lwork = query_size(qw);
  work = FN(work_alloc)(op, (size_t)lwork);
  if (!work) {
    s = MT_ENOMEM;
    goto done;
  }
  for (int64_t b = 0; b < nb; b++) {
    const REAL *src = (const REAL *)A->_data + b * m * n;
    REAL *sv = (REAL *)S->_data + b * k;
    if (!FN(all_finite)(src, m * n)) { /* LAPACK's gesdd may not return on NaN: reported as PyTorch's "non-finite values" */
      inf[b] = -4;
      for (int64_t e = 0; e < k; e++) sv[e] = NAN;
      if (uv) {
        for (int64_t e = 0; e < m * uc; e++) ((REAL *)U->_data)[b * m * uc + e] = NAN;
        for (int64_t e = 0; e < vr * n; e++) ((REAL *)Vh->_data)[b * vr * n + e] = NAN;
      }
      continue;
    }
    FN(to_col)(a, lda, src, m, n);
    gesdd(&jobz, &m_, &n_, a, &lda, sv, u ? u : &qw, &ldu, vt ? vt : &qw, &ldvt, work, &lwork, iwork, &i);
    inf[b] = i;
    if (uv) {
      FN(from_col)((REAL *)U->_data + b * m * uc, u, ldu, m, uc);
      FN(from_col)((REAL *)Vh->_data + b * vr * n, vt, ldvt, vr, n);
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

static mt_status FN(lstsq)(mt_tensor *X, mt_tensor *rank, mt_tensor *S, mt_tensor *info, const mt_tensor *A,
                       const mt_tensor *B, int64_t nb, int64_t m, int64_t n, int64_t k, double rcond_, int svd) {
  const REAL rcond = (REAL)rcond_;
  const char *op = "linalg.lstsq";
  int64_t mn = m < n ? m : n, mx = m > n ? m : n;
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  int64_t *rk = (int64_t *)rank->_data;
  memset(inf, 0, nb * sizeof(int32_t));
  if (m == 0 || n == 0) { /* nothing to solve: X zeros, rank 0 */
    memset(X->_data, 0, (size_t)(nb * n * k) * sizeof(REAL));
    for (int64_t b = 0; b < nb; b++) rk[b] = 0;
    return MT_OK;
  }
  MT_TRY(too_big(op, m, n));
  MT_TRY(too_big(op, mx, k > 0 ? k : 1));
  FN(gelsd_fn) gelsd = NULL;
  FN(gelsy_fn) gelsy = NULL;
  if (svd ? !(gelsd = (FN(gelsd_fn))mt_lapack_symbol(op, LPNAME("gelsd_"))) : !(gelsy = (FN(gelsy_fn))mt_lapack_symbol(op, LPNAME("gelsy_"))))
    return MT_ENOTIMPL;
  int64_t kk = k > 0 ? k : 1; /* gelsd wants nrhs >= 0 but a buffer of one column at least */
  const lp_int m_ = (lp_int)m, n_ = (lp_int)n, k_ = (lp_int)k, lda = ld(m), ldb = ld(mx), minus1 = -1;
  REAL *a = FN(work_alloc)(op, (size_t)(m * n)), *bb = FN(work_alloc)(op, (size_t)(mx * kk));
  REAL *s = FN(work_alloc)(op, (size_t)mn), qw = 0, *work = NULL;
  lp_int qi = 0, r = 0, i = 0, *iwork = NULL; /* iwork: gelsd's, or gelsy's column pivots (n) */
  mt_status st = MT_OK;
  if (!a || !bb || !s) {
    st = MT_ENOMEM;
    goto done;
  }
  if (svd) gelsd(&m_, &n_, &k_, a, &lda, bb, &ldb, s, &rcond, &r, &qw, &minus1, &qi, &i);
  else gelsy(&m_, &n_, &k_, a, &lda, bb, &ldb, &qi, &rcond, &r, &qw, &minus1, &i), qi = n_;
  lp_int lwork = query_size(qw);
  work = FN(work_alloc)(op, (size_t)lwork);
  iwork = malloc((size_t)(qi > 1 ? qi : 1) * sizeof(lp_int));
  if (!work || !iwork) {
    st = mt_error(MT_ENOMEM, "%s: out of memory for LAPACK's workspace", op);
    goto done;
  }
  for (int64_t b = 0; b < nb; b++) {
    const REAL *src = (const REAL *)A->_data + b * m * n;
    if (!FN(all_finite)(src, m * n) || !FN(all_finite)((const REAL *)B->_data + b * m * k, m * k)) {
      /* gelsd's scaling reports a non-finite norm on stderr (xerbla): NaN results and info -4 instead */
      inf[b] = -4;
      rk[b] = 0;
      for (int64_t e = 0; e < n * k; e++) ((REAL *)X->_data)[b * n * k + e] = NAN;
      if (S)
        for (int64_t e = 0; e < mn; e++) ((REAL *)S->_data)[b * mn + e] = NAN;
      continue;
    }
    FN(to_col)(a, lda, src, m, n);
    memset(bb, 0, (size_t)(mx * kk) * sizeof(REAL));
    if (k > 0) FN(to_col)(bb, ldb, (const REAL *)B->_data + b * m * k, m, k);
    if (svd) gelsd(&m_, &n_, &k_, a, &lda, bb, &ldb, s, &rcond, &r, work, &lwork, iwork, &i);
    else {
      memset(iwork, 0, (size_t)n * sizeof(lp_int)); /* every column free to move */
      gelsy(&m_, &n_, &k_, a, &lda, bb, &ldb, iwork, &rcond, &r, work, &lwork, &i);
    }
    inf[b] = i;
    rk[b] = r;
    if (S && svd) memcpy((REAL *)S->_data + b * mn, s, (size_t)mn * sizeof(REAL));
    if (k > 0) FN(from_col)((REAL *)X->_data + b * n * k, bb, ldb, n, k);
  }
done:
  free(a);
  free(bb);
  free(s);
  free(work);
  free(iwork);
  return st;
}

static mt_status FN(lu_factor)(mt_tensor *LU, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb,
                           int64_t m, int64_t n) {
  const char *op = "linalg.lu_factor";
  int64_t k = m < n ? m : n;
  if (nb == 0) return MT_OK;
  int32_t *inf = (int32_t *)info->_data;
  memset(inf, 0, nb * sizeof(int32_t));
  if (k == 0) return MT_OK;
  MT_TRY(too_big(op, m, n));
  SYM(op, getrf, FN(getrf_fn), LPNAME("getrf_"));
  const lp_int m_ = (lp_int)m, n_ = (lp_int)n, lda = (lp_int)m;
  REAL *a = FN(work_alloc)(op, (size_t)(m * n));
  if (!a) return MT_ENOMEM;
  for (int64_t b = 0; b < nb; b++) {
    FN(to_col)(a, lda, (const REAL *)A->_data + b * m * n, m, n);
    lp_int i = 0;
    getrf(&m_, &n_, a, &lda, (lp_int *)pivots->_data + b * k, &i);
    inf[b] = i;
    FN(from_col)((REAL *)LU->_data + b * m * n, a, lda, m, n);
  }
  free(a);
  return MT_OK;
}

/* X (n, k) with A X = B (trans: A^T X = B) from getrf's LU (n, n) and 1-based pivots (n) of each matrix */
static mt_status FN(lu_solve)(mt_tensor *X, const mt_tensor *LU, const mt_tensor *pivots, const mt_tensor *B,
                              int64_t nb, int64_t n, int64_t k, int trans) {
  const char *op = "linalg.lu_solve";
  if (nb == 0 || n == 0 || k == 0) return MT_OK;
  MT_TRY(too_big(op, n, n));
  MT_TRY(too_big(op, n, k));
  const int32_t *piv = (const int32_t *)pivots->_data;
  for (int64_t e = 0; e < nb * n; e++) /* getrs reads rows by them: out of range is out of bounds */
    if (piv[e] < 1 || piv[e] > n)
      return mt_error(MT_EINVAL, "%s: Pivots given to lu_solve must all be %s. Did you properly pass the result of lu_factor?",
                      op, piv[e] < 1 ? "greater or equal to 1" : "smaller or equal to LU.size(-2)");
  SYM(op, getrs, FN(getrs_fn), LPNAME("getrs_"));
  REAL *a = FN(work_alloc)(op, (size_t)(n * n)), *x = FN(work_alloc)(op, (size_t)(n * k));
  if (!a || !x) {
    free(a);
    free(x);
    return MT_ENOMEM;
  }
  const lp_int nn = (lp_int)n, kk = (lp_int)k;
  const char tr = trans ? 'T' : 'N';
  for (int64_t b = 0; b < nb; b++) {
    FN(to_col)(a, nn, (const REAL *)LU->_data + b * n * n, n, n);
    FN(to_col)(x, nn, (const REAL *)B->_data + b * n * k, n, k);
    lp_int i = 0;
    getrs(&tr, &nn, &kk, a, &nn, (const lp_int *)piv + b * n, x, &nn, &i);
    FN(from_col)((REAL *)X->_data + b * n * k, x, nn, n, k);
  }
  free(a);
  free(x);
  return MT_OK;
}
