/* sparse.c -- the front door of the CSR matrix product (issue 24): W @ dense for W given by its
 * CSR arrays (PyTorch's torch.sparse.mm with a sparse_csr tensor), and dense @ W^T (a Linear whose
 * weight is W), with the internal front doors of its backward. The CPU kernels are
 * core/tensor/sparse.c, the derivative core/grad/sparse.c. */
#include "sparse.h"

/* the CSR arrays checked: crow (m + 1) and col (nnz) int64, values (nnz) float32 or float64, one
 * device (that of `like`) */
static mt_status check_arrays(mt_tensor *crow, mt_tensor *col, mt_tensor *values, const mt_tensor *like,
                              const char *op) {
  MT_TRY(mt_check_tensor(crow, op, "crow_indices"));
  MT_TRY(mt_check_tensor(col, op, "col_indices"));
  MT_TRY(mt_check_tensor(values, op, "values"));
  MT_TRY(mt_check_same_device(op, like, crow));
  MT_TRY(mt_check_same_device(op, like, col));
  MT_TRY(mt_check_same_device(op, like, values));
  if (crow->_dtype != MT_INT64 || col->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "%s: expected int64 crow_indices and col_indices, got %s and %s", op,
                    mt_dtype_name(crow->_dtype), mt_dtype_name(col->_dtype));
  if (values->_dtype != MT_FLOAT32 && values->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: expected float32 or float64 values, got %s", op, mt_dtype_name(values->_dtype));
  if (crow->_ndim != 1 || crow->_numel < 1)
    return mt_error(MT_ESHAPE, "%s: expected crow_indices of one dim and at least one element, got %s", op,
                    MT_SHAPE(crow));
  if (col->_ndim != 1 || values->_ndim != 1 || col->_numel != values->_numel)
    return mt_error(MT_ESHAPE, "%s: expected col_indices and values of one dim and one length, got %s and %s", op,
                    MT_SHAPE(col), MT_SHAPE(values));
  return MT_OK;
}

/* t (r, c) with rows of stride 1 (a new reference): t itself, its contiguous copy, or (transposed)
 * the contiguous copy of its transpose */
static mt_status rows_of(mt_tensor *t, int transposed, mt_tensor **out) {
  if (!transposed) {
    if (t->_strides[1] == 1 || t->_sizes[1] <= 1) {
      *out = mt_tensor_retain(t);
      return MT_OK;
    }
    return mt_contiguous(t, out);
  }
  mt_tensor *tv = NULL;
  MT_TRY(mt_transpose(t, 0, 1, &tv));
  mt_status s = mt_contiguous(tv, out);
  mt_tensor_release(tv);
  return s;
}

static mt_status csr_mm(mt_tensor *crow, mt_tensor *col, mt_tensor *values, mt_tensor *dense, int64_t ncols,
                        int transposed, int64_t base, mt_tensor **result) {
  const char *op = "csr_mm";
  MT_TRY(mt_check_tensor(dense, op, "dense"));
  MT_TRY(check_arrays(crow, col, values, dense, op));
  MT_TRY(mt_check_kernel(MT_OP_CSR_MM, dense));
  if (dense->_dtype != values->_dtype)
    return mt_error(MT_EDTYPE, "%s: expected dense of the values' dtype %s, got %s", op, mt_dtype_name(values->_dtype),
                    mt_dtype_name(dense->_dtype));
  if (dense->_ndim != 2)
    return mt_error(MT_ESHAPE, "%s: expected a 2-D dense matrix, got %s", op, MT_SHAPE(dense));
  int64_t m = crow->_numel - 1, k = dense->_sizes[transposed ? 1 : 0], n = dense->_sizes[transposed ? 0 : 1];
  if (ncols < 0 || k != ncols)
    return mt_error(MT_ESHAPE, "%s: the sparse matrix is %lld x %lld but dense is %s", op, (long long)m,
                    (long long)ncols, MT_SHAPE(dense));
  int64_t shape[2] = {transposed ? n : m, transposed ? m : n};
  mt_tensor *cr = NULL, *cl = NULL, *v = NULL, *d = NULL, *r = NULL;
  mt_status s = mt_contiguous(crow, &cr);
  if (!s) s = mt_contiguous(col, &cl);
  if (!s) s = mt_contiguous(values, &v);
  if (!s) s = rows_of(dense, 0, &d); /* (transposed: the kernel transposes it) */
  if (!s) s = mt_new(mt_device_of(dense), shape, 2, dense->_dtype, op, &r);
  if (!s) s = mt_kernels_of(dense)->csr_mm(r, transposed, cr, cl, v, d, base);
  mt_tensor_release(cr);
  mt_tensor_release(cl);
  mt_tensor_release(v);
  mt_tensor_release(d);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

mt_status mt_csr_mm(mt_tensor *crow, mt_tensor *col, mt_tensor *values, mt_tensor *dense, int64_t ncols,
                    int transposed, int64_t index_base, mt_tensor **result) {
  if (mt_records2(values, dense) && mt_autograd.csr_mm)
    return mt_autograd.csr_mm(crow, col, values, dense, ncols, transposed, index_base, result);
  return csr_mm(crow, col, values, dense, ncols, transposed, index_base, result);
}

mt_status mt_csr_mm_t(mt_tensor *crow, mt_tensor *col, mt_tensor *values, mt_tensor *g, int64_t ncols, int transposed,
                      int64_t index_base, mt_tensor **result) {
  const char *op = "csr_mm_backward";
  MT_TRY(check_arrays(crow, col, values, g, op));
  MT_TRY(mt_check_kernel(MT_OP_CSR_MM, g));
  int64_t n = g->_sizes[transposed ? 0 : 1];
  int64_t shape[2] = {ncols, n};
  mt_tensor *cr = NULL, *cl = NULL, *v = NULL, *gc = NULL, *gd = NULL, *r = NULL, *rt = NULL;
  mt_status s = MT_OK;
  if (g->_dtype != values->_dtype) s = mt_as_dtype(g, values->_dtype, &gd);
  if (!s) s = mt_contiguous(crow, &cr);
  if (!s) s = mt_contiguous(col, &cl);
  if (!s) s = mt_contiguous(values, &v);
  if (!s) s = rows_of(gd ? gd : g, transposed, &gc);
  if (!s) s = mt_new(mt_device_of(g), shape, 2, values->_dtype, op, &r);
  if (!s) s = mt_kernels_of(g)->csr_mm_t(r, cr, cl, v, gc, index_base);
  if (!s && transposed) {
    /* (ncols, n) -> (n, ncols), contiguous */
    mt_tensor *tv = NULL;
    s = mt_transpose(r, 0, 1, &tv);
    if (!s) s = mt_contiguous(tv, &rt);
    mt_tensor_release(tv);
    mt_tensor_release(r);
    r = rt;
  }
  mt_tensor_release(cr);
  mt_tensor_release(cl);
  mt_tensor_release(v);
  mt_tensor_release(gc);
  mt_tensor_release(gd);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

mt_status mt_csr_sddmm(mt_tensor *crow, mt_tensor *col, mt_tensor *g, mt_tensor *dense, int64_t ncols, int transposed,
                       int64_t index_base, mt_tensor **result) {
  const char *op = "csr_mm_backward";
  (void)ncols;
  MT_TRY(mt_check_kernel(MT_OP_CSR_MM, g));
  mt_tensor *cr = NULL, *cl = NULL, *gc = NULL, *gd = NULL, *d = NULL, *r = NULL;
  int64_t nnz = col->_numel;
  mt_status s = MT_OK;
  if (g->_dtype != dense->_dtype) s = mt_as_dtype(g, dense->_dtype, &gd);
  if (!s) s = mt_contiguous(crow, &cr);
  if (!s) s = mt_contiguous(col, &cl);
  if (!s) s = rows_of(gd ? gd : g, transposed, &gc);
  if (!s) s = rows_of(dense, transposed, &d);
  if (!s) s = mt_new(mt_device_of(g), &nnz, 1, dense->_dtype, op, &r);
  if (!s) s = mt_kernels_of(g)->csr_sddmm(r, cr, cl, gc, d, index_base);
  mt_tensor_release(cr);
  mt_tensor_release(cl);
  mt_tensor_release(gc);
  mt_tensor_release(gd);
  mt_tensor_release(d);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}
