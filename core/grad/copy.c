/* copy.c -- autograd for copies: clone, to(dtype), and copy_ / fill_ over a whole tensor. */
#include "grad.h"

static mt_status grad_clone(mt_tensor *t, mt_tensor **out) {
  MT_TRY(MT_NOGRAD(mt_clone(t, out)));
  mt_status s = mt_record_clone(t, 0, *out);
  if (s) { mt_tensor_release(*out); *out = NULL; }
  return s;
}

static mt_status grad_to_dtype(mt_tensor *t, int dtype, int copy, mt_tensor **out) {
  MT_TRY(MT_NOGRAD(mt_to_dtype(t, dtype, copy, out)));
  if (*out == t) return MT_OK;
  mt_status s = mt_record_clone(t, t->_dtype != dtype, *out);
  if (s) { mt_tensor_release(*out); *out = NULL; }
  return s;
}

/* In-place writes into the graph: a copy_ or fill_ over a whole tensor is recorded (PyTorch's
 * CopyBackwards / FillBackward2: the old value gets a zero gradient, src the gradient). Writes
 * into part of a tensor would need PyTorch's CopySlices, which moontorch does not have: they are
 * refused when the graph is involved. */
static mt_status grad_copy_(mt_tensor *dst, const mt_tensor *src) {
  if (!dst || !src) return MT_NOGRAD(mt_copy_(dst, src)); /* its message */
  MT_TRY(mt_grad_check_inplace(dst, "copy_"));
  MT_TRY(mt_grad_check_whole_write(dst, "copy_"));
  MT_TRY(MT_NOGRAD(mt_copy_(dst, src)));
  return mt_record_copy(dst, (mt_tensor *)src);
}

static mt_status grad_fill_(mt_tensor *t, double value) {
  MT_TRY(mt_grad_check_inplace(t, "fill_"));
  MT_TRY(mt_grad_check_whole_write(t, "fill_"));
  MT_TRY(MT_NOGRAD(mt_fill_(t, value)));
  return mt_record_copy(t, NULL);
}

void mt_grad_register_copy(mt_autograd_ops *t) {
  t->clone = grad_clone;
  t->to_dtype = grad_to_dtype;
  t->copy_ = grad_copy_;
  t->fill_ = grad_fill_;
}
