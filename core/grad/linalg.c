/* linalg.c -- autograd for the matrix products. */
#include "grad.h"

/* mm, bmm, mv, matmul, dot: run without recording, then record the product */
#define PRODUCT_OP(name, call)                                  \
  do {                                                          \
    MT_TRY(mt_grad_check_out(out, true, name));                 \
    mt_tensor *r_;                                              \
    MT_TRY(MT_NOGRAD(call));                                    \
    mt_status s_ = mt_record_matmul(a, b, r_);                  \
    if (s_) { mt_tensor_release(r_); return s_; }               \
    return mt_give(r_, result);                                 \
  } while (0)

static mt_status grad_mm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("mm", mt_mm(a, b, NULL, &r_));
}
static mt_status grad_bmm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("bmm", mt_bmm(a, b, NULL, &r_));
}
static mt_status grad_mv(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("mv", mt_mv(a, b, NULL, &r_));
}
static mt_status grad_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("matmul", mt_matmul(a, b, NULL, &r_));
}
static mt_status grad_dot(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  mt_tensor *out = NULL;
  PRODUCT_OP("dot", mt_dot(a, b, &r_));
}

static mt_status grad_addmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                            mt_tensor **result) {
  if (out == c) MT_TRY(mt_grad_check_inplace(c, "addmm_"));
  else MT_TRY(mt_grad_check_out(out, true, "addmm"));
  if (out == c) return mt_error(MT_ENOTIMPL, "addmm_: in-place addmm on a tensor that requires grad is not supported yet");
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(mt_addmm(c, a, b, beta, alpha, NULL, &r)));
  mt_status s = mt_record_addmm(c, a, b, beta, alpha, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status grad_baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                              mt_tensor **result) {
  if (out == c) MT_TRY(mt_grad_check_inplace(c, "baddbmm_"));
  else MT_TRY(mt_grad_check_out(out, true, "baddbmm"));
  if (out == c)
    return mt_error(MT_ENOTIMPL, "baddbmm_: in-place baddbmm on a tensor that requires grad is not supported (use baddbmm)");
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(mt_baddbmm(c, a, b, beta, alpha, NULL, &r)));
  mt_status s = mt_record_baddbmm(c, a, b, beta, alpha, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* outer with grad: a[:, None] * b, as PyTorch 1.13 records it (MulBackward0) */
static mt_status grad_outer(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  if (a->_ndim != 1 || b->_ndim != 1) return MT_NOGRAD(mt_outer(a, b, result)); /* its error message */
  mt_tensor *ua;
  MT_TRY(mt_unsqueeze(a, 1, &ua));
  mt_status s = mt_binary(MT_OP_MUL, ua, b, NULL, result);
  mt_tensor_release(ua);
  return s;
}

void mt_grad_register_linalg(mt_autograd_ops *t) {
  t->mm = grad_mm;
  t->bmm = grad_bmm;
  t->mv = grad_mv;
  t->matmul = grad_matmul;
  t->dot = grad_dot;
  t->addmm = grad_addmm;
  t->baddbmm = grad_baddbmm;
  t->outer = grad_outer;
}
