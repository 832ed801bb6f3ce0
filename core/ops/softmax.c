/* softmax.c -- the front door of the fused softmax / log_softmax backward (s6-vec): the kernel slot
 * softmax_backward (the CPU's: core/tensor/softmax.c; any backend that fills the slot), called by SoftmaxBackward0 / LogSoftmaxBackward0
 * (core/grad/reduce.c) when the backward is not recorded. Under create_graph the formula is composed
 * of front doors instead, so that it records itself. */
#include "softmax.h"

static bool usable(const mt_tensor *t) {
  return (t->_dtype == MT_FLOAT32 || t->_dtype == MT_FLOAT64) && (uint32_t)t->_device_type < MT_DEVICE_TYPES &&
         !(t->_flags & MT_TENSOR_WRAPPED_NUMBER) && t->_ndim > 0;
}

mt_status mt_softmax_backward_data(mt_tensor *g, mt_tensor *y, int dim, int log, mt_tensor **result) {
  if (!g || !y || !usable(g) || !usable(y) || g->_dtype != y->_dtype || g->_ndim != y->_ndim ||
      !(y->_flags & MT_TENSOR_CONTIGUOUS) || dim < 0 || dim >= y->_ndim)
    return MT_ENOTIMPL;
  /* a backend without the fused kernel: the caller composes the formula */
  if (!mt_same_device(g, y) || !mt_backend_has_slot(y, MT_SLOT_softmax_backward)) return MT_ENOTIMPL;
  for (int d = 0; d < y->_ndim; d++)
    if (g->_sizes[d] != y->_sizes[d]) return MT_ENOTIMPL;
  mt_tensor *gc = NULL, *r = NULL;
  MT_TRY(mt_contiguous(g, &gc));
  mt_status s = mt_new_like(y, y->_dtype, log ? "log_softmax_backward" : "softmax_backward", &r);
  if (!s) s = mt_kernels_of(y)->softmax_backward(r, gc, y, dim, log);
  mt_tensor_release(gc);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  *result = r;
  return MT_OK;
}
