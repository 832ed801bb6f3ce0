/* sparse.h -- the internal front doors of the CSR product's backward (core/ops/sparse.c), which the
 * autograd layer calls. Internal to the core. */
#ifndef MT_OPS_SPARSE_H
#define MT_OPS_SPARSE_H

#include "dispatch.h"

/* W^T @ g for the CSR matrix W (ncols columns) of mt_csr_mm and g (m, n): (ncols, n). transposed:
 * g is (n, m) and the result (n, ncols) (the gradient of a Linear's input). Not recorded. */
mt_status mt_csr_mm_t(mt_tensor *crow, mt_tensor *col, mt_tensor *values, mt_tensor *g, int64_t ncols, int transposed,
                      int64_t index_base, mt_tensor **result);
/* The gradient of W's values: for each entry (i, c), g[i, :] . dense[c, :] (transposed: g (n, m) and
 * dense (n, ncols), the columns' products). Not recorded. */
mt_status mt_csr_sddmm(mt_tensor *crow, mt_tensor *col, mt_tensor *g, mt_tensor *dense, int64_t ncols, int transposed,
                       int64_t index_base, mt_tensor **result);

#endif
