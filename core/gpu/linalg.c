/* linalg.c -- the CUDA backend's product slots: gemm (float32 and float64 through cuBLAS on a GPU where
 * the matrices' layouts allow it, the generic tiled kernel of k_linalg.cu otherwise and in the emulator)
 * and outer (a broadcast multiply). The batch offsets go to the device with the product. */
#include "gpu.h"

#include <stdlib.h>

mt_status mt_gpu_gemm_slot(const mt_gemm *j) {
  if (j->nb == 0 || j->M == 0 || j->N == 0) return MT_OK;
  int dev = mt_gpu_device_of(j->C);
  if (dev < 0) dev = mt_gpu_device_of(j->A);
  if (dev < 0) return mt_error(MT_EDEVICE, "matmul: the product's memory is not on a CUDA device");
  MT_TRY(mt_gpu_use(dev, "matmul"));
  void *stream = mt_gpu_current_stream(dev);
  mt_gpu_gemm g = {.dtype = j->dt, .nb = j->nb, .M = j->M, .N = j->N, .K = j->K, .alpha = j->alpha, .beta = j->beta,
                   .A = j->A, .B = j->B, .C = j->C, .ars = j->ga.rs, .acs = j->ga.cs, .brs = j->gb.rs, .bcs = j->gb.cs,
                   .crs = j->gc.rs, .ccs = j->gc.cs};
  /* the batch offsets, on the device (stream-ordered: the scratch is free for reuse after the launch) */
  int64_t *offs = NULL;
  int nofs = (j->aoff != NULL) + (j->boff != NULL) + (j->coff != NULL);
  if (nofs && j->nb > 0) {
    size_t per = (size_t)j->nb * 8;
    offs = mt_gpu_malloc(dev, per * (size_t)nofs, stream, "matmul");
    if (!offs) return MT_ENOMEM;
    int64_t *host = malloc(per * (size_t)nofs);
    if (!host) {
      mt_gpu_free(offs);
      return mt_error(MT_ENOMEM, "matmul: out of memory");
    }
    int k = 0;
    const int64_t *src[3] = {j->aoff, j->boff, j->coff};
    const int64_t **dst[3] = {&g.aoff, &g.boff, &g.coff};
    for (int i = 0; i < 3; i++)
      if (src[i]) {
        memcpy(host + k * j->nb, src[i], per);
        *dst[i] = offs + k * j->nb;
        k++;
      }
    int code = mt_gpu_rt->memcpy_async(offs, host, per * (size_t)nofs, MT_GPU_H2D, stream);
    free(host);
    if (code) {
      mt_gpu_free(offs);
      return mt_gpu_error(code, "matmul");
    }
  }
  mt_status s = MT_OK;
  int done = 0;
#ifdef MT_HAVE_CUDA
  if (mt_gpu_rt == &mt_gpu_cuda_runtime && (j->dt == MT_FLOAT32 || j->dt == MT_FLOAT64)) {
    /* cuBLAS takes host offsets: it is called per batch when they are irregular */
    mt_gpu_gemm h = g;
    h.aoff = j->aoff;
    h.boff = j->boff;
    h.coff = j->coff;
    done = mt_gpu_cublas_gemm(&h, dev, stream, &s);
  }
#endif
  if (!done && s == MT_OK) {
    int64_t left = j->nb;
    mt_gpu_gemm part = g;
    /* a grid's layers are at most 65535: batches beyond in more launches */
    for (int64_t p0 = 0; left > 0 && s == MT_OK; p0 += 65535, left -= 65535) {
      part.nb = left < 65535 ? left : 65535;
      if (g.aoff) part.aoff = g.aoff + p0;
      if (g.boff) part.boff = g.boff + p0;
      if (g.coff) part.coff = g.coff + p0;
      if (mt_gpu_k->gemm(&part, stream))
        s = mt_error(MT_EDTYPE, "matmul: not implemented for '%s' on device cuda", mt_dtype_name(j->dt));
    }
  }
  if (offs) mt_gpu_free(offs);
  return s;
}

mt_status mt_gpu_outer(mt_tensor *out, const mt_tensor *a, const mt_tensor *b) {
  /* out (k, n) = a[i] * b[j]: a multiply of a (k, 1) and a (1, n) view */
  mt_gpu_iter it;
  memset(&it, 0, sizeof it);
  it.nops = 3;
  it.numel = out->_numel;
  it.ndim = 2;
  it.sizes[0] = out->_sizes[0];
  it.sizes[1] = out->_sizes[1];
  it.strides[0][0] = out->_strides[0];
  it.strides[0][1] = out->_strides[1];
  it.strides[1][0] = a->_strides[0];
  it.strides[2][1] = b->_strides[0];
  it.data[0] = out->_data;
  it.data[1] = a->_data;
  it.data[2] = b->_data;
  for (int k = 0; k < 3; k++) it.dtype[k] = out->_dtype;
  if (it.numel == 0) return MT_OK;
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->binary(MT_OP_MUL, &it, mt_gpu_fault_of(out->_device_index), s))
    return mt_error(MT_EDTYPE, "outer: not implemented for '%s' on device cuda", mt_dtype_name(out->_dtype));
  return MT_OK;
}
