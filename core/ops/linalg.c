/* linalg.c -- the front doors of the matrix products: mm, bmm, matmul, mv, dot, outer, addmm,
 * baddbmm. They check shapes and dtypes (messages follow PyTorch's wording, prefixed with the op
 * name), make the result and describe the product to the gemm kernel of the inputs' device as
 * one batched strided product (core/kernels.h's mt_gemm). */
#include "dispatch.h"

#include <stdlib.h>

typedef mt_matrix_geo geo;
static inline geo geo_of(const mt_tensor *t, int d0) {
  geo g = {t->_sizes[d0], t->_sizes[d0 + 1], t->_strides[d0], t->_strides[d0 + 1]};
  return g;
}


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
  MT_TRY(mt_out_or_new(out, mt_device_of(a), sizes, nd, dt, op, &d->r));
  if (out && ((a && mt_may_overlap(d->r, a)) || (b && mt_may_overlap(d->r, b)))) {
    mt_status s = mt_new(mt_device_of(a), sizes, nd, dt, op, &d->tmp);
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
/* One product C (M x N) = alpha * A (M x K) @ B (K x N) + beta * C, each matrix given by its data and
 * geometry, on the device of `on`. */
static mt_status product(const mt_tensor *on, int dt, const char *A, geo ga, const char *B, geo gb, char *C, geo gc,
                         double alpha, double beta) {
  mt_gemm j;
  j.dt = dt;
  j.nb = 1;
  j.M = ga.r;
  j.K = ga.c;
  j.N = gb.c;
  j.alpha = alpha;
  j.beta = beta;
  j.A = A;
  j.B = B;
  j.C = C;
  j.ga = ga;
  j.gb = gb;
  j.gc = gc;
  j.aoff = j.boff = j.coff = NULL;
  return mt_kernels_of(on)->gemm(&j);
}

/* r[M x N] (2-D, any strides) = alpha * a @ b + beta * r: a, b 2-D views checked by the caller. */
static mt_status mm_into(mt_tensor *r, const mt_tensor *a, const mt_tensor *b, double alpha, double beta) {
  return product(r, a->_dtype, a->_data, geo_of(a, 0), b->_data, geo_of(b, 0), r->_data, geo_of(r, 0), alpha, beta);
}

static mt_status mm_checks(const char *op, const mt_tensor *a, const mt_tensor *b) {
  MT_TRY(mt_check_tensor(a, op, "self"));
  MT_TRY(mt_check_tensor(b, op, "mat2"));
  MT_TRY(mt_check_same_device(op, a, b));
  MT_TRY(mt_check_kernel(MT_OP_MM, a));
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
    MT_TRY(mt_new(mt_device_of(a), sz, 2, a->_dtype, op, &r));
    mt_status s = mm_into(r, a, b, 1.0, 0.0);
    if (s != MT_OK) { mt_tensor_release(r); return s; }
    return mt_give(r, result);
  }
  dest d;
  MT_TRY(dest_open(&d, out, sz, 2, a->_dtype, op, a, b));
  return dest_close(&d, mm_into(dest_target(&d), a, b, 1.0, 0.0), out, result);
}


/* The common tail of addmm and baddbmm: c (checked) broadcast to the product's shape `sz` (nd = 2 or 3),
 * the in-place case's shape, then r = beta * c + alpha * (a @ b) through `into` (mm_into or bmm_into). */
typedef mt_status (*product_into)(mt_tensor *r, const mt_tensor *a, const mt_tensor *b, double alpha, double beta);
static mt_status add_product(const char *op, mt_tensor *c, mt_tensor *a, mt_tensor *b, const int64_t *sz, int nd,
                             product_into into, double beta, double alpha, mt_tensor *out, mt_tensor **result) {
  MT_TRY(check_expand(op, c, sz, nd));
  if (out == c && (c->_ndim != nd || memcmp(c->_sizes, sz, sizeof *sz * (size_t)nd)))
    return mt_error(MT_ESHAPE, "%s: the in-place result %s does not have the product's shape %s", op, MT_SHAPE(c),
                    mt_shape_str(sz, nd));
  dest d;
  MT_TRY(dest_open(&d, out, sz, nd, a->_dtype, op, a, b));
  mt_tensor *t = dest_target(&d);
  mt_status s = preload_c(t, c, beta);
  if (s == MT_OK) s = into(t, a, b, alpha, beta);
  return dest_close(&d, s, out, result);
}

static mt_status addmm_impl(const char *op, mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha,
                            mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_check_tensor(c, op, "self"));
  MT_TRY(mt_check_tensor(a, op, "mat1"));
  MT_TRY(mt_check_tensor(b, op, "mat2"));
  MT_TRY(mt_check_same_device(op, a, b));
  MT_TRY(mt_check_same_device(op, a, c));
  MT_TRY(mt_check_kernel(MT_OP_ADDMM, a));
  if (a->_ndim != 2) return mt_error(MT_ESHAPE, "%s: mat1 must be a matrix, got %d-D tensor", op, a->_ndim);
  if (b->_ndim != 2) return mt_error(MT_ESHAPE, "%s: mat2 must be a matrix, got %d-D tensor", op, b->_ndim);
  if (a->_dtype != b->_dtype) return mt_error(MT_EDTYPE, "%s: mat1 and mat2 must have the same dtype", op);
  if (c->_dtype != b->_dtype) return mt_error(MT_EDTYPE, "%s: self and mat2 must have the same dtype", op);
  if (a->_sizes[1] != b->_sizes[0])
    return mt_error(MT_ESHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                    (long long)a->_sizes[0], (long long)a->_sizes[1], (long long)b->_sizes[0], (long long)b->_sizes[1]);
  MT_TRY(not_for_bool(op, "addmm_impl_cpu_", a->_dtype));
  int64_t sz[2] = {a->_sizes[0], b->_sizes[1]};
  return add_product(op, c, a, b, sz, 2, mm_into, beta, alpha, out, result);
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
  mt_gemm j = {0};
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
  mt_status s = mt_kernels_of(r)->gemm(&j);
  free(offs);
  return s;
}

static mt_status bmm_checks(const char *op, const mt_tensor *a, const mt_tensor *b, const char *kernel) {
  MT_TRY(mt_check_tensor(a, op, "batch1"));
  MT_TRY(mt_check_tensor(b, op, "batch2"));
  MT_TRY(mt_check_same_device(op, a, b));
  MT_TRY(mt_check_kernel(MT_OP_BMM, a));
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


static mt_status baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                     mt_tensor **result) {
  const char *op = "baddbmm";
  MT_TRY(mt_check_tensor(c, op, "self"));
  MT_TRY(bmm_checks(op, a, b, "baddbmm"));
  MT_TRY(mt_check_same_device(op, a, c));
  int64_t sz[3] = {a->_sizes[0], a->_sizes[1], b->_sizes[2]};
  return add_product(op, c, a, b, sz, 3, bmm_into, beta, alpha, out, result);
}

/* mv: the product with N = 1, the vector as a K x 1 matrix */
static mt_status mv_impl(const char *op, mt_tensor *a, mt_tensor *v, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, op, "self"));
  MT_TRY(mt_check_tensor(v, op, "vec"));
  MT_TRY(mt_check_same_device(op, a, v));
  MT_TRY(mt_check_kernel(MT_OP_MV, a));
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
  mt_gemm j = {0};
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
  return dest_close(&d, mt_kernels_of(t)->gemm(&j), out, result);
}


static mt_status dot_impl(const char *op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, op, "self"));
  MT_TRY(mt_check_tensor(b, op, "tensor"));
  MT_TRY(mt_check_same_device(op, a, b));
  MT_TRY(mt_check_kernel(MT_OP_DOT, a));
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
  mt_gemm j = {0};
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
  return dest_close(&d, mt_kernels_of(t)->gemm(&j), out, result);
}


static mt_status outer(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "outer", "self"));
  MT_TRY(mt_check_tensor(b, "outer", "vec2"));
  MT_TRY(mt_check_same_device("outer", a, b));
  MT_TRY(mt_check_kernel(MT_OP_OUTER, a));
  if (a->_ndim != 1) return mt_error(MT_ESHAPE, "outer: Expected 1-D argument self, but got %d-D", a->_ndim);
  if (b->_ndim != 1) return mt_error(MT_ESHAPE, "outer: Expected 1-D argument vec2, but got %d-D", b->_ndim);
  if (a->_dtype == b->_dtype && (a->_dtype == MT_FLOAT32 || a->_dtype == MT_FLOAT64)) {
    /* one dtype: the products in one kernel pass */
    int64_t sz[2] = {a->_sizes[0], b->_sizes[0]};
    mt_tensor *r;
    MT_TRY(mt_new(mt_device_of(a), sz, 2, a->_dtype, "outer", &r));
    mt_status s = mt_kernels_of(r)->outer(r, a, b);
    if (s) { mt_tensor_release(r); return s; }
    return mt_give(r, result);
  }
  /* else a[:, None] * b[None, :]: broadcasting and type promotion as PyTorch's outer */
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
  MT_TRY(mt_new(mt_device_of(a), full, nbd + 2, dt, op, &r));
  int64_t *offs = malloc(sizeof(int64_t) * 3 * (size_t)(nb ? nb : 1));
  if (!offs) { mt_tensor_release(r); return mt_error(MT_ENOMEM, "%s: out of memory", op); }
  batch_offsets(a, abd, bshape, nbd, nb, offs);
  batch_offsets(b, bbd, bshape, nbd, nb, offs + nb);
  for (int64_t p = 0; p < nb; p++) offs[2 * nb + p] = p * ga.r * gb.c;
  mt_gemm j = {0};
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
  mt_status s = mt_kernels_of(r)->gemm(&j);
  free(offs);
  if (s != MT_OK) { mt_tensor_release(r); return s; }
  return give_reshaped(r, rs, nr, out, result);
}

static mt_status matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  const char *op = "matmul";
  MT_TRY(mt_check_tensor(a, op, "self"));
  MT_TRY(mt_check_tensor(b, op, "other"));
  MT_TRY(mt_check_same_device(op, a, b));
  MT_TRY(mt_check_kernel(MT_OP_MATMUL, a));
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
      /* a (1 x k) @ (k x n) product straight into a 1-D result: no batch machinery */
      int64_t k = a->_sizes[0], n = b->_sizes[1];
      geo ga = {1, k, k > 0 ? k * a->_strides[0] : 1, a->_strides[0]}, gr = {1, n, n > 0 ? n : 1, 1};
      mt_tensor *r;
      MT_TRY(mt_new(mt_device_of(a), &n, 1, a->_dtype, op, &r));
      mt_status s = product(r, a->_dtype, a->_data, ga, b->_data, geo_of(b, 0), r->_data, gr, 1.0, 0.0);
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
      geo ga = {rows, k, mstride, a->_strides[da - 1]};
      geo gb = db == 2 ? geo_of(b, 0) : (geo){k, 1, b->_strides[0], 1};
      int64_t n = gb.c;
      int64_t sz2[2] = {rows, n};
      mt_tensor *r;
      MT_TRY(mt_new(mt_device_of(a), sz2, 2, a->_dtype, op, &r));
      mt_status s = product(r, a->_dtype, a->_data, ga, b->_data, gb, r->_data, geo_of(r, 0), 1.0, 0.0);
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

/* ---------------------------------------------------------------- the front doors */
mt_status mt_mm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (a && b && mt_records2(a, b) && mt_autograd.mm) return mt_autograd.mm(a, b, out, result);
  return mm_impl("mm", a, b, out, result);
}
mt_status mt_bmm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (a && b && mt_records2(a, b) && mt_autograd.bmm) return mt_autograd.bmm(a, b, out, result);
  return bmm_impl("bmm", a, b, out, result);
}
mt_status mt_mv(mt_tensor *a, mt_tensor *v, mt_tensor *out, mt_tensor **result) {
  if (a && v && mt_records2(a, v) && mt_autograd.mv) return mt_autograd.mv(a, v, out, result);
  return mv_impl("mv", a, v, out, result);
}
mt_status mt_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (a && b && mt_records2(a, b) && mt_autograd.matmul) return mt_autograd.matmul(a, b, out, result);
  return matmul(a, b, out, result);
}
mt_status mt_dot(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  if (a && b && mt_records2(a, b) && mt_autograd.dot) return mt_autograd.dot(a, b, result);
  return dot_impl("dot", a, b, NULL, result);
}
mt_status mt_addmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                   mt_tensor **result) {
  if (c && a && b && (mt_records2(c, a) || mt_records(b)) && mt_autograd.addmm)
    return mt_autograd.addmm(c, a, b, beta, alpha, out, result);
  return addmm_impl("addmm", c, a, b, beta, alpha, out, result);
}
mt_status mt_baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                     mt_tensor **result) {
  if (c && a && b && (mt_records2(c, a) || mt_records(b)) && mt_autograd.baddbmm)
    return mt_autograd.baddbmm(c, a, b, beta, alpha, out, result);
  return baddbmm(c, a, b, beta, alpha, out, result);
}
mt_status mt_outer(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  if (a && b && mt_records2(a, b) && mt_autograd.outer) return mt_autograd.outer(a, b, result);
  return outer(a, b, result);
}
