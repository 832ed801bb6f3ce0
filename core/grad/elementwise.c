/* elementwise.c -- autograd for the elementwise ops: each wrapper refuses what autograd cannot
 * record (out= arguments, leaves written in place), keeps the input's old value when an in-place
 * op's backward needs it, runs the front door with grad mode off and records a node. */
#include "grad.h"

/* the result `r` (a new reference) handed out once `rec` (the recording's status) succeeded */
static mt_status hand_out(mt_tensor *r, mt_status rec, mt_tensor *out, mt_tensor **result) {
  if (rec) {
    mt_tensor_release(r);
    return rec;
  }
  if (out) {
    mt_tensor_release(r);
    if (result) *result = mt_tensor_retain(out);
    return MT_OK;
  }
  return mt_give(r, result);
}

/* a copy of a's value for an in-place op's backward */
static mt_status old_value(mt_tensor *a, bool needed, mt_tensor **x) {
  *x = NULL;
  if (!needed) return MT_OK;
  return MT_NOGRAD(mt_clone(a, x));
}

static mt_status grad_checks(mt_tensor *a, mt_tensor *out, const char *op) {
  if (out == a) return mt_grad_check_inplace(a, op);
  return mt_grad_check_out(out, true, op);
}

static mt_status grad_unary(int op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result) {
  MT_TRY(grad_checks(a, out, mt_unary_op_name(op)));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && mt_grad_unary_needs_input(op), &x));
  mt_status s = MT_NOGRAD(mt_unary(op, a, p1, p2, out, &r));
  if (s == MT_OK) s = hand_out(r, mt_record_unary(op, a, x ? x : a, p1, p2, r), out, result);
  mt_tensor_release(x);
  return s;
}

static mt_status grad_binary(int op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(grad_checks(a, out, mt_binary_op_name(op)));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && op != MT_OP_ADD && op != MT_OP_SUB, &x));
  mt_status s = MT_NOGRAD(mt_binary(op, a, b, out, &r));
  if (s == MT_OK) s = hand_out(r, mt_record_binary(op, a, b, x ? x : a, r), out, result);
  mt_tensor_release(x);
  return s;
}

static mt_status grad_binary_scalar(int op, mt_tensor *a, double sv, int scalar_kind, int reverse, mt_tensor *out,
                                    mt_tensor **result) {
  MT_TRY(grad_checks(a, out, mt_binary_op_name(op)));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && op != MT_OP_ADD && op != MT_OP_SUB && op != MT_OP_MUL, &x));
  mt_status s = MT_NOGRAD(mt_binary_scalar(op, a, sv, scalar_kind, reverse, out, &r));
  if (s == MT_OK) s = hand_out(r, mt_record_binary_scalar(op, a, x ? x : a, sv, reverse, r), out, result);
  mt_tensor_release(x);
  return s;
}

/* a + alpha * b as one node */
static mt_status grad_add_scaled(mt_tensor *a, mt_tensor *b, double alpha, mt_tensor *out, mt_tensor **result) {
  MT_TRY(grad_checks(a, out, "add"));
  mt_tensor *r = NULL;
  mt_status s = MT_NOGRAD(mt_add_scaled(a, b, alpha, out, &r));
  if (s == MT_OK) s = hand_out(r, mt_record_add_scaled(a, b, alpha, r), out, result);
  return s;
}

static mt_status grad_where(mt_tensor *cond, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "where"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_where(cond, a, b, NULL, &r)));
  return hand_out(r, mt_record_where(cond, a, b, r), NULL, result);
}

void mt_grad_register_elementwise(mt_autograd_ops *t) {
  t->unary = grad_unary;
  t->binary = grad_binary;
  t->binary_scalar = grad_binary_scalar;
  t->add_scaled = grad_add_scaled;
  t->where = grad_where;
}
