/* sparse.c -- the CUDA backend's slots of the CSR matrix products (kernels.h's csr_mm, csr_mm_t,
 * csr_sddmm; the CPU's are core/tensor/sparse.c): the geometry handed to k_sparse.cu. The arrays are
 * checked on the device (a bad crow or column is reported at the next synchronisation, naming csr_mm). */
#include "gpu.h"

static mt_status run(mt_gpu_csr *c, const mt_tensor *on, const char *op) {
  if (mt_gpu_k->csr(c, mt_gpu_stream_of(on)))
    return mt_error(MT_EDTYPE, "%s: not implemented for '%s' on device cuda", op, mt_dtype_name(c->dtype));
  return MT_OK;
}

static mt_gpu_csr arrays(const mt_tensor *crow, const mt_tensor *col, const mt_tensor *vals, int64_t base, int dev) {
  mt_gpu_csr c = {.m = crow->_numel - 1, .nnz = col->_numel, .base = base, .dtype = vals->_dtype,
                  .crow = (const int64_t *)crow->_data, .col = (const int64_t *)col->_data, .vals = vals->_data,
                  .fault = mt_gpu_fault_of(dev)};
  return c;
}

/* out (m, n) = W @ d; transposed: d is (n, k) and out (n, m) */
mt_status mt_gpu_csr_mm(mt_tensor *out, int transposed, const mt_tensor *crow, const mt_tensor *col,
                        const mt_tensor *vals, const mt_tensor *d, int64_t base) {
  mt_gpu_csr c = arrays(crow, col, vals, base, out->_device_index);
  c.kind = MT_GPU_CSR_MM;
  c.k = d->_sizes[transposed ? 1 : 0];
  c.n = d->_sizes[transposed ? 0 : 1];
  c.sd0 = transposed ? 1 : d->_strides[0];
  c.sd1 = transposed ? d->_strides[0] : 1;
  c.os0 = transposed ? 1 : c.n;
  c.os1 = transposed ? c.m : 1;
  c.d = d->_data;
  c.out = out->_data;
  return run(&c, out, "csr_mm");
}

/* out (k, n) = W^T @ g */
mt_status mt_gpu_csr_mm_t(mt_tensor *out, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *vals,
                          const mt_tensor *g, int64_t base) {
  mt_gpu_csr c = arrays(crow, col, vals, base, out->_device_index);
  c.kind = MT_GPU_CSR_MM_T;
  c.k = out->_sizes[0];
  c.n = out->_sizes[1];
  c.ldg = g->_strides[0];
  c.g = g->_data;
  c.out = out->_data;
  return run(&c, out, "csr_mm_backward");
}

/* gv (nnz) = g[i, :] . d[col, :] */
mt_status mt_gpu_csr_sddmm(mt_tensor *gv, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *g,
                           const mt_tensor *d, int64_t base) {
  mt_gpu_csr c = arrays(crow, col, gv, base, gv->_device_index);
  c.kind = MT_GPU_CSR_SDDMM;
  c.k = d->_sizes[0];
  c.n = d->_sizes[1];
  c.sd0 = d->_strides[0];
  c.ldg = g->_strides[0];
  c.g = g->_data;
  c.d = d->_data;
  c.out = gv->_data;
  return run(&c, gv, "csr_mm_backward");
}
