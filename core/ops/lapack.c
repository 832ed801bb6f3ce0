/* lapack.c -- the front doors of torch.linalg's decompositions (core/moontorch.h: mt_linalg_cholesky, ...):
 * argument checks, the contiguous operands of one float dtype (float32 stays float32: LAPACK's s-routines, as
 * PyTorch; two operands of different dtypes both in float64) and the results the kernels take
 * (core/tensor/lapack.c). CPU only; not recorded (lua/ops/decomp.lua records them). */
#include "dispatch.h"

#include <string.h>

typedef struct lp_in {
  mt_tensor *a;       /* contiguous, of the working dtype */
  int64_t nb, m, n;   /* batch count, the matrices' rows and columns */
  int nd, dtype;      /* A's dims; the working dtype (float32 or float64) */
  int64_t batch[MT_MAX_DIMS];
} lp_in;

#define LP_WORK (-1) /* lp_new: a result of the working dtype */

/* A checked and made a contiguous matrix batch of dtype `dt` (-1: A's own) */
static mt_status lp_input(const char *op, const char *what, mt_tensor *A, int square, int dt, lp_in *in) {
  memset(in, 0, sizeof *in);
  MT_TRY(mt_check_tensor(A, op, what));
  if (A->_device_type != MT_CPU)
    return mt_error(MT_EDEVICE, "%s: runs on the CPU (LAPACK); %s is on %s", op, what, mt_device_str(mt_device_of(A)));
  if (A->_dtype != MT_FLOAT32 && A->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: expected a float32 or float64 %s, got %s", op, what, mt_dtype_name(A->_dtype));
  if (A->_ndim < 2)
    return mt_error(MT_ESHAPE, "%s: The input tensor %s must have at least 2 dimensions.", op, what);
  in->nd = A->_ndim;
  in->dtype = dt < 0 ? A->_dtype : dt;
  in->m = A->_sizes[A->_ndim - 2];
  in->n = A->_sizes[A->_ndim - 1];
  if (square && in->m != in->n)
    return mt_error(MT_ESHAPE, "%s: %s must be batches of square matrices, but they are %lld by %lld matrices", op, what,
                    (long long)in->m, (long long)in->n);
  in->nb = 1;
  for (int d = 0; d < A->_ndim - 2; d++) in->batch[d] = A->_sizes[d], in->nb *= A->_sizes[d];
  if (A->_dtype == in->dtype) return mt_contiguous(A, &in->a);
  mt_tensor *c = NULL;
  MT_TRY(mt_to(A, in->dtype, NULL, 0, &c));
  mt_status s = mt_contiguous(c, &in->a);
  mt_tensor_release(c);
  return s;
}

/* a new result (dtype: MT_FLOAT for the working dtype): the batch shape then up to two dims (-1: none) */
static mt_status lp_new(const char *op, const lp_in *in, int64_t d1, int64_t d2, int dtype, mt_tensor **out) {
  int64_t sz[MT_MAX_DIMS];
  int nd = in->nd - 2;
  memcpy(sz, in->batch, (size_t)nd * sizeof(int64_t));
  if (d1 >= 0) sz[nd++] = d1;
  if (d2 >= 0) sz[nd++] = d2;
  return mt_new(MT_DEVICE_CPU, sz, nd, dtype == LP_WORK ? in->dtype : dtype, op, out);
}

/* r (owned) handed out (NULL: none) */
static mt_status lp_give(mt_tensor *r, int dtype, mt_tensor **out) {
  (void)dtype;
  if (!r) {
    if (out) *out = NULL;
    return MT_OK;
  }
  return mt_give(r, out);
}

/* the working dtype of two operands: float64 if either is, else float32 */
static int lp_common(const mt_tensor *A, const mt_tensor *B) {
  return A && B && (A->_dtype == MT_FLOAT64 || B->_dtype == MT_FLOAT64) ? MT_FLOAT64 : MT_FLOAT32;
}

static void release_all(mt_tensor **ts, int n) {
  for (int i = 0; i < n; i++) mt_tensor_release(ts[i]);
}

mt_status mt_linalg_cholesky(mt_tensor *A, int upper, mt_tensor **L, mt_tensor **info) {
  const char *op = "linalg.cholesky";
  lp_in in;
  mt_status s = lp_input(op, "A", A, 1, -1, &in);
  mt_tensor *r[2] = {NULL, NULL};
  if (!s) s = lp_new(op, &in, in.n, in.n, LP_WORK, &r[0]);
  if (!s) s = lp_new(op, &in, -1, -1, MT_INT32, &r[1]);
  if (!s) s = mt_kernels_of(A)->cholesky(r[0], r[1], in.a, in.nb, in.n, upper);
  mt_tensor_release(in.a);
  if (s) {
    release_all(r, 2);
    return s;
  }
  mt_give(r[1], info);
  return lp_give(r[0], in.dtype, L);
}

mt_status mt_linalg_solve_triangular(mt_tensor *A, mt_tensor *B, int upper, int left, int unitriangular,
                                     mt_tensor **X) {
  const char *op = "linalg.solve_triangular";
  lp_in a, b;
  int dt = lp_common(A, B);
  MT_TRY(lp_input(op, "A", A, 1, dt, &a));
  mt_status s = lp_input(op, "B", B, 0, dt, &b);
  if (!s && (a.nd != b.nd || memcmp(a.batch, b.batch, (size_t)(a.nd - 2) * sizeof(int64_t)) != 0))
    s = mt_error(MT_ESHAPE, "%s: A %s and B %s must have one batch shape (broadcast them first)", op, MT_SHAPE(A),
                 MT_SHAPE(B));
  if (!s && (left ? b.m : b.n) != a.n)
    s = mt_error(MT_ESHAPE, "%s: Incompatible shapes of A and B for the equation %s (%lldx%lld and %lldx%lld)", op,
                 left ? "AX = B" : "XA = B", (long long)a.n, (long long)a.n, (long long)b.m, (long long)b.n);
  mt_tensor *x = NULL;
  if (!s) s = lp_new(op, &b, b.m, b.n, LP_WORK, &x);
  if (!s)
    s = mt_kernels_of(A)->solve_triangular(x, a.a, b.a, a.nb, a.n, left ? b.n : b.m, upper, left, unitriangular);
  mt_tensor_release(a.a);
  mt_tensor_release(b.a);
  if (s) {
    mt_tensor_release(x);
    return s;
  }
  return lp_give(x, a.dtype == MT_FLOAT64 || b.dtype == MT_FLOAT64 ? MT_FLOAT64 : MT_FLOAT32, X);
}

mt_status mt_linalg_qr(mt_tensor *A, int mode, mt_tensor **Q, mt_tensor **R) {
  const char *op = "linalg.qr";
  if (mode < 0 || mode > 3)
    return mt_error(MT_EINVAL, "%s: mode must be 0 (reduced), 1 (complete), 2 (r) or 3 (geqrf), got %d", op, mode);
  lp_in in;
  MT_TRY(lp_input(op, "A", A, 0, -1, &in));
  int64_t k = in.m < in.n ? in.m : in.n;
  mt_tensor *r[2] = {NULL, NULL};
  mt_status s = MT_OK;
  if (mode == 3) {
    s = lp_new(op, &in, in.m, in.n, LP_WORK, &r[0]);
    if (!s) s = lp_new(op, &in, k, -1, LP_WORK, &r[1]);
  } else {
    if (mode != 2) s = lp_new(op, &in, in.m, mode == 1 ? in.m : k, LP_WORK, &r[0]);
    if (!s) s = lp_new(op, &in, mode == 1 ? in.m : k, in.n, LP_WORK, &r[1]);
  }
  if (!s) s = mt_kernels_of(A)->qr(r[0], r[1], in.a, in.nb, in.m, in.n, mode);
  mt_tensor_release(in.a);
  if (s) {
    release_all(r, 2);
    return s;
  }
  s = lp_give(r[0], in.dtype, Q);
  if (s) {
    mt_tensor_release(r[1]);
    return s;
  }
  return lp_give(r[1], in.dtype, R);
}

mt_status mt_linalg_eigh(mt_tensor *A, int upper, int vectors, mt_tensor **w, mt_tensor **V, mt_tensor **info) {
  const char *op = "linalg.eigh";
  lp_in in;
  MT_TRY(lp_input(op, "A", A, 1, -1, &in));
  mt_tensor *r[3] = {NULL, NULL, NULL};
  mt_status s = lp_new(op, &in, in.n, -1, LP_WORK, &r[0]);
  if (!s && vectors) s = lp_new(op, &in, in.n, in.n, LP_WORK, &r[1]);
  if (!s) s = lp_new(op, &in, -1, -1, MT_INT32, &r[2]);
  if (!s) s = mt_kernels_of(A)->eigh(r[0], r[1], r[2], in.a, in.nb, in.n, upper);
  mt_tensor_release(in.a);
  if (s) {
    release_all(r, 3);
    return s;
  }
  mt_give(r[2], info);
  s = lp_give(r[1], in.dtype, V);
  if (s) {
    mt_tensor_release(r[0]);
    return s;
  }
  return lp_give(r[0], in.dtype, w);
}

mt_status mt_linalg_svd(mt_tensor *A, int full_matrices, int compute_uv, mt_tensor **U, mt_tensor **S, mt_tensor **Vh,
                        mt_tensor **info) {
  const char *op = "linalg.svd";
  lp_in in;
  MT_TRY(lp_input(op, "A", A, 0, -1, &in));
  int64_t k = in.m < in.n ? in.m : in.n;
  mt_tensor *r[4] = {NULL, NULL, NULL, NULL};
  mt_status s = MT_OK;
  if (compute_uv) {
    s = lp_new(op, &in, in.m, full_matrices ? in.m : k, LP_WORK, &r[0]);
    if (!s) s = lp_new(op, &in, full_matrices ? in.n : k, in.n, LP_WORK, &r[2]);
  }
  if (!s) s = lp_new(op, &in, k, -1, LP_WORK, &r[1]);
  if (!s) s = lp_new(op, &in, -1, -1, MT_INT32, &r[3]);
  if (!s) s = mt_kernels_of(A)->svd(r[0], r[1], r[2], r[3], in.a, in.nb, in.m, in.n, full_matrices);
  mt_tensor_release(in.a);
  if (s) {
    release_all(r, 4);
    return s;
  }
  mt_give(r[3], info);
  mt_tensor *outs[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; i++) {
    s = lp_give(r[i], in.dtype, &outs[i]);
    r[i] = NULL;
    if (s) {
      release_all(r, 3);
      release_all(outs, 3);
      return s;
    }
  }
  mt_give(outs[0], U);
  mt_give(outs[1], S);
  return mt_give(outs[2], Vh);
}

mt_status mt_linalg_lstsq(mt_tensor *A, mt_tensor *B, double rcond, int svd, mt_tensor **X, mt_tensor **rank,
                          mt_tensor **S, mt_tensor **info) {
  const char *op = "linalg.lstsq";
  lp_in a, b;
  int dt = lp_common(A, B);
  MT_TRY(lp_input(op, "A", A, 0, dt, &a));
  mt_status s = lp_input(op, "B", B, 0, dt, &b);
  if (!s && (a.nd != b.nd || memcmp(a.batch, b.batch, (size_t)(a.nd - 2) * sizeof(int64_t)) != 0))
    s = mt_error(MT_ESHAPE, "%s: A %s and B %s must have one batch shape (broadcast them first)", op, MT_SHAPE(A),
                 MT_SHAPE(B));
  if (!s && b.m != a.m) s = mt_error(MT_ESHAPE, "%s: input.size(-2) should match other.size(-2)", op);
  int64_t k = a.m < a.n ? a.m : a.n;
  mt_tensor *r[4] = {NULL, NULL, NULL, NULL};
  if (!s) s = lp_new(op, &a, a.n, b.n, LP_WORK, &r[0]);
  if (!s) s = lp_new(op, &a, -1, -1, MT_INT64, &r[1]);
  if (!s) s = lp_new(op, &a, svd ? k : 0, -1, LP_WORK, &r[2]);
  if (!s) s = lp_new(op, &a, -1, -1, MT_INT32, &r[3]);
  if (!s) s = mt_kernels_of(A)->lstsq(r[0], r[1], r[2], r[3], a.a, b.a, a.nb, a.m, a.n, b.n, rcond, svd);
  mt_tensor_release(a.a);
  mt_tensor_release(b.a);
  if (s) {
    release_all(r, 4);
    return s;
  }
  mt_give(r[1], rank);
  mt_give(r[3], info);
  mt_tensor *x = NULL;
  s = lp_give(r[0], dt, &x);
  if (s) {
    mt_tensor_release(r[2]);
    return s;
  }
  s = lp_give(r[2], dt, S);
  if (s) {
    mt_tensor_release(x);
    return s;
  }
  return mt_give(x, X);
}

mt_status mt_linalg_lu_factor(mt_tensor *A, mt_tensor **LU, mt_tensor **pivots, mt_tensor **info) {
  const char *op = "linalg.lu_factor";
  lp_in in;
  MT_TRY(lp_input(op, "A", A, 0, -1, &in));
  int64_t k = in.m < in.n ? in.m : in.n;
  mt_tensor *r[3] = {NULL, NULL, NULL};
  mt_status s = lp_new(op, &in, in.m, in.n, LP_WORK, &r[0]);
  if (!s) s = lp_new(op, &in, k, -1, MT_INT32, &r[1]);
  if (!s) s = lp_new(op, &in, -1, -1, MT_INT32, &r[2]);
  if (!s) s = mt_kernels_of(A)->lu_factor(r[0], r[1], r[2], in.a, in.nb, in.m, in.n);
  mt_tensor_release(in.a);
  if (s) {
    release_all(r, 3);
    return s;
  }
  mt_give(r[1], pivots);
  mt_give(r[2], info);
  return lp_give(r[0], in.dtype, LU);
}

mt_status mt_linalg_lu_solve(mt_tensor *LU, mt_tensor *pivots, mt_tensor *B, int adjoint, mt_tensor **X) {
  const char *op = "linalg.lu_solve";
  MT_TRY(mt_check_tensor(pivots, op, "pivots"));
  if (pivots->_dtype != MT_INT32)
    return mt_error(MT_EDTYPE, "%s: pivots must be int32, got %s", op, mt_dtype_name(pivots->_dtype));
  int dt = lp_common(LU, B);
  lp_in a, b;
  MT_TRY(lp_input(op, "LU", LU, 1, dt, &a));
  mt_status s = lp_input(op, "B", B, 0, dt, &b);
  if (!s && (a.nd != b.nd || memcmp(a.batch, b.batch, (size_t)(a.nd - 2) * sizeof(int64_t)) != 0))
    s = mt_error(MT_ESHAPE, "%s: LU %s and B %s must have one batch shape (broadcast them first)", op, MT_SHAPE(LU),
                 MT_SHAPE(B));
  if (!s && (pivots->_ndim != a.nd - 1 || memcmp(pivots->_sizes, a.batch, (size_t)(a.nd - 2) * sizeof(int64_t)) != 0 ||
             pivots->_sizes[a.nd - 2] != a.n))
    s = mt_error(MT_ESHAPE, "%s: pivots %s must have LU's batch shape and LU.size(-1) = %lld entries", op,
                 MT_SHAPE(pivots), (long long)a.n);
  if (!s && b.m != a.n)
    s = mt_error(MT_ESHAPE, "%s: Incompatible shapes of A and B for the equation AX = B (%lldx%lld and %lldx%lld)", op,
                 (long long)a.n, (long long)a.n, (long long)b.m, (long long)b.n);
  if (!s && pivots->_device_type != MT_CPU)
    s = mt_error(MT_EDEVICE, "%s: runs on the CPU (LAPACK); pivots are on %s", op, mt_device_str(mt_device_of(pivots)));
  mt_tensor *p = NULL, *x = NULL;
  if (!s) s = mt_contiguous(pivots, &p);
  if (!s) s = lp_new(op, &b, b.m, b.n, LP_WORK, &x);
  if (!s) s = mt_kernels_of(LU)->lu_solve(x, a.a, p, b.a, a.nb, a.n, b.n, adjoint);
  mt_tensor_release(a.a);
  mt_tensor_release(b.a);
  mt_tensor_release(p);
  if (s) {
    mt_tensor_release(x);
    return s;
  }
  return mt_give(x, X);
}

mt_status mt_linalg_ldl_factor(mt_tensor *A, mt_tensor **LD, mt_tensor **pivots, mt_tensor **info) {
  const char *op = "linalg.ldl_factor";
  lp_in in;
  MT_TRY(lp_input(op, "A", A, 1, -1, &in));
  mt_tensor *r[3] = {NULL, NULL, NULL};
  mt_status s = lp_new(op, &in, in.n, in.n, LP_WORK, &r[0]);
  if (!s) s = lp_new(op, &in, in.n, -1, MT_INT32, &r[1]);
  if (!s) s = lp_new(op, &in, -1, -1, MT_INT32, &r[2]);
  if (!s) s = mt_kernels_of(A)->ldl_factor(r[0], r[1], r[2], in.a, in.nb, in.n);
  mt_tensor_release(in.a);
  if (s) {
    release_all(r, 3);
    return s;
  }
  mt_give(r[1], pivots);
  mt_give(r[2], info);
  return mt_give(r[0], LD);
}

mt_status mt_linalg_ldl_solve(mt_tensor *LD, mt_tensor *pivots, mt_tensor *B, mt_tensor **X) {
  const char *op = "linalg.ldl_solve";
  MT_TRY(mt_check_tensor(pivots, op, "pivots"));
  if (pivots->_dtype != MT_INT32)
    return mt_error(MT_EDTYPE, "%s: pivots must be int32, got %s", op, mt_dtype_name(pivots->_dtype));
  int dt = lp_common(LD, B);
  lp_in a, b;
  MT_TRY(lp_input(op, "LD", LD, 1, dt, &a));
  mt_status s = lp_input(op, "B", B, 0, dt, &b);
  if (!s && (a.nd != b.nd || memcmp(a.batch, b.batch, (size_t)(a.nd - 2) * sizeof(int64_t)) != 0))
    s = mt_error(MT_ESHAPE, "%s: LD %s and B %s must have one batch shape (broadcast them first)", op, MT_SHAPE(LD),
                 MT_SHAPE(B));
  if (!s && (pivots->_ndim != a.nd - 1 || memcmp(pivots->_sizes, a.batch, (size_t)(a.nd - 2) * sizeof(int64_t)) != 0 ||
             pivots->_sizes[a.nd - 2] != a.n))
    s = mt_error(MT_ESHAPE, "%s: pivots %s must have LD's batch shape and LD.size(-1) = %lld entries", op,
                 MT_SHAPE(pivots), (long long)a.n);
  if (!s && b.m != a.n)
    s = mt_error(MT_ESHAPE, "%s: Incompatible matrix sizes: each A matrix is %lld by %lld but each b matrix is %lld by %lld",
                 op, (long long)a.n, (long long)a.n, (long long)b.m, (long long)b.n);
  if (!s && pivots->_device_type != MT_CPU)
    s = mt_error(MT_EDEVICE, "%s: runs on the CPU (LAPACK); pivots are on %s", op, mt_device_str(mt_device_of(pivots)));
  mt_tensor *p = NULL, *x = NULL;
  if (!s) s = mt_contiguous(pivots, &p);
  if (!s) s = lp_new(op, &b, b.m, b.n, LP_WORK, &x);
  if (!s) s = mt_kernels_of(LD)->ldl_solve(x, a.a, p, b.a, a.nb, a.n, b.n);
  mt_tensor_release(a.a);
  mt_tensor_release(b.a);
  mt_tensor_release(p);
  if (s) {
    mt_tensor_release(x);
    return s;
  }
  return mt_give(x, X);
}
