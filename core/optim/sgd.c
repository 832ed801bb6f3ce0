/* sgd.c -- the front door of the fused SGD step (optim.SGD): it takes the parameter's gradient
 * (its .grad when none is given: the optimizer layer sits above autograd), checks the operands
 * and runs the device's sgd_step kernel (core/tensor/sgd.c says what it computes). No autograd is
 * recorded; the version counters are bumped as by any in-place op. */
#include "../grad/node.h"

/* (a loop, not memcmp: parameters have few dims and this runs for every parameter every step) */
static inline bool same_sizes(const mt_tensor *a, const mt_tensor *b) {
  if (a->_ndim != b->_ndim) return false;
  for (int i = 0; i < a->_ndim; i++)
    if (a->_sizes[i] != b->_sizes[i]) return false;
  return true;
}

/* grad / momentum_buffer against the parameter: shape, dtype, no shared memory */
static inline mt_status check_operand(const mt_tensor *p, const mt_tensor *t, const char *what) {
  MT_TRY(mt_check_tensor(t, "sgd_step", what));
  MT_TRY(mt_check_same_device("sgd_step", p, t));
  if (!same_sizes(p, t))
    return mt_error(MT_ESHAPE, "sgd_step: %s of shape %s does not match the parameter's shape %s", what, MT_SHAPE(t),
                    MT_SHAPE(p));
  if (t->_dtype != p->_dtype)
    return mt_error(MT_EDTYPE, "sgd_step: %s has dtype %s but the parameter has dtype %s", what,
                    mt_type_title(t->_dtype), mt_type_title(p->_dtype));
  if (p->_storage == t->_storage && mt_may_overlap(p, t))
    return mt_error(MT_EINVAL, "sgd_step: %s shares memory with the parameter", what);
  return MT_OK;
}

mt_status mt_sgd_step(mt_tensor *param, mt_tensor *grad, mt_tensor *buf, const mt_sgd_settings *s, int first_step) {
  MT_TRY(mt_check_tensor(param, "sgd_step", "param"));
  MT_TRY(mt_check_kernel(MT_OP_SGD_STEP, param));
  if (!s) return mt_error(MT_EINVAL, "sgd_step: no settings given");
  if (!grad) {
    /* the parameter's own .grad (borrowed: the parameter holds it for the call); none: nothing to
     * do (PyTorch skips such parameters) */
    grad = mt_grad_of(param);
    if (!grad) return MT_OK;
  }
  if (param->_dtype != MT_FLOAT32 && param->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "sgd_step: parameters of dtype %s are not supported (Float and Double only)",
                    mt_type_title(param->_dtype));
  MT_TRY(check_operand(param, grad, "grad"));
  if (s->momentum != 0) {
    if (!buf) return mt_error(MT_EINVAL, "sgd_step: momentum %g needs a momentum buffer", s->momentum);
    MT_TRY(check_operand(param, buf, "momentum_buffer"));
    if (grad->_storage == buf->_storage && mt_may_overlap(grad, buf))
      return mt_error(MT_EINVAL, "sgd_step: momentum_buffer shares memory with grad");
  } else {
    buf = NULL; /* PyTorch ignores the buffer while momentum is 0 */
  }
  mt_bump_version(param);
  if (buf) mt_bump_version(buf);
  return mt_kernels_of(param)->sgd_step(param, grad, buf, s, first_step);
}
