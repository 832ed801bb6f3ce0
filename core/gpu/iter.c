/* iter.c -- the elementwise geometry the CUDA kernels take (abi.h's mt_gpu_iter): operands broadcast to
 * the output's shape, dims of size 1 dropped, the rest ordered by the output's strides and merged where
 * every operand allows, so that dense operands of any one layout (a transposed result of transposed
 * inputs, say) run as one flat loop. */
#include "gpu.h"

void mt_gpu_iter_make(mt_gpu_iter *it, const mt_tensor *const *ops, int nops) {
  memset(it, 0, sizeof *it);
  const mt_tensor *out = ops[0];
  int nd = out->_ndim;
  it->nops = nops;
  it->numel = out->_numel;
  int64_t sizes[MT_MAX_DIMS], strides[MT_GPU_OPS][MT_MAX_DIMS];
  for (int k = 0; k < nops; k++) {
    const mt_tensor *t = ops[k];
    it->dtype[k] = t->_dtype;
    if (k > 0 && t->_device_type == MT_CPU) { /* a number from the host: its bytes */
      memcpy(&it->scalar[k], t->_data, mt_itemsize(t->_dtype));
      it->data[k] = NULL;
      for (int d = 0; d < nd; d++) strides[k][d] = 0;
      continue;
    }
    it->data[k] = t->_data;
    int off = nd - t->_ndim;
    for (int d = 0; d < nd; d++) {
      int td = d - off;
      strides[k][d] = td < 0 || t->_sizes[td] == 1 ? 0 : t->_strides[td];
    }
  }
  /* dims of size 1 go; the rest in the order of the output's strides, largest first (stable) */
  int order[MT_MAX_DIMS], m = 0;
  for (int d = 0; d < nd; d++)
    if (out->_sizes[d] != 1) order[m++] = d;
  for (int i = 1; i < m; i++) {
    int d = order[i], j = i;
    while (j > 0 && out->_strides[order[j - 1]] < out->_strides[d]) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = d;
  }
  for (int i = 0; i < m; i++) {
    sizes[i] = out->_sizes[order[i]];
    for (int k = 0; k < nops; k++) it->strides[k][i] = strides[k][order[i]];
  }
  /* merge dim i into i - 1 where every operand steps over both as over one */
  int n = 0;
  for (int i = 0; i < m; i++) {
    if (n > 0) {
      bool merge = true;
      for (int k = 0; k < nops && merge; k++) merge = it->strides[k][n - 1] == it->strides[k][i] * sizes[i];
      if (merge) {
        it->sizes[n - 1] *= sizes[i];
        for (int k = 0; k < nops; k++) it->strides[k][n - 1] = it->strides[k][i];
        continue;
      }
    }
    it->sizes[n] = sizes[i];
    for (int k = 0; k < nops; k++) it->strides[k][n] = it->strides[k][i];
    n++;
  }
  it->ndim = n;
  /* flat: one dim (or none) where the output is dense and each input dense or a single element */
  bool flat = n <= 1;
  for (int k = 0; k < nops && flat; k++) {
    int64_t s = n == 1 ? it->strides[k][0] : 0;
    if (k == 0 && n == 1 && s != 1) flat = false;
    if (s != 0 && s != 1) flat = false;
    it->inc[k] = s;
  }
  it->flat = flat;
}

void mt_gpu_iter_raw(mt_gpu_iter *it, const mt_tensor *t) {
  memset(it, 0, sizeof *it);
  it->nops = 1;
  it->numel = t->_numel;
  it->ndim = t->_ndim;
  it->data[0] = t->_data;
  it->dtype[0] = t->_dtype;
  for (int d = 0; d < t->_ndim; d++) {
    it->sizes[d] = t->_sizes[d];
    it->strides[0][d] = t->_strides[d];
  }
}
