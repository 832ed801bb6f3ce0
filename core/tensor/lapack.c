/* lapack.c -- the CPU's kernels of torch.linalg's decompositions (core/kernels.h: cholesky, solve_triangular,
 * qr, eigh, svd, lstsq, lu_factor, lu_solve), by LAPACK (potrf, trsm, geqrf + orgqr, syevd, gesdd, gelsd / gelsy,
 * getrf, getrs) from the loaded BLAS or liblapack.so.3 (mt_lapack_symbol, core/blas.c): the s-routines for float32
 * operands, the d-routines for float64, as PyTorch (lapack_real.h, included once per type). Every operand is a
 * contiguous batch of row-major matrices of one dtype (the front doors, core/ops/lapack.c, convert); each matrix
 * is copied here into a column-major work buffer, factored, and copied back. One matrix at a time from the
 * calling thread (OpenBLAS threads inside a routine). LP64 LAPACK (32-bit int). */
#include "cpu.h"

#include "../blas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef int lp_int; /* LAPACK's INTEGER in Debian's LP64 builds */

#define SYM(op, var, type, name)               \
  type var = (type)mt_lapack_symbol(op, name); \
  if (!var) return MT_ENOTIMPL

static inline lp_int ld(int64_t n) { return n > 0 ? (lp_int)n : 1; }

static mt_status too_big(const char *op, int64_t m, int64_t n) {
  if (m > 0x3fffffff || n > 0x3fffffff || m * n > 0x7fffffff)
    return mt_error(MT_ERANGE, "%s: a %lld by %lld matrix is too large for LAPACK's 32-bit indices", op, (long long)m,
                    (long long)n);
  return MT_OK;
}

/* the size a workspace query answered (a float32 query rounds: a little more) */
static lp_int query_size(double q) { return q < 1 ? 1 : (lp_int)(q * (1 + 1e-6) + 1); }

#define REAL double
#define FN(name) name##_f64
#define LPNAME(name) "d" name
#include "lapack_real.h"
#undef REAL
#undef FN
#undef LPNAME

#define REAL float
#define FN(name) name##_f32
#define LPNAME(name) "s" name
#include "lapack_real.h"
#undef REAL
#undef FN
#undef LPNAME

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
mt_status mt_cpu_lu_factor(mt_tensor *LU, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb,
                           int64_t m, int64_t n) {
  return F32(A) ? lu_factor_f32(LU, pivots, info, A, nb, m, n) : lu_factor_f64(LU, pivots, info, A, nb, m, n);
}
mt_status mt_cpu_lu_solve(mt_tensor *X, const mt_tensor *LU, const mt_tensor *pivots, const mt_tensor *B, int64_t nb,
                          int64_t n, int64_t k, int trans) {
  return F32(LU) ? lu_solve_f32(X, LU, pivots, B, nb, n, k, trans) : lu_solve_f64(X, LU, pivots, B, nb, n, k, trans);
}
