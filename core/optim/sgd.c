/* sgd.c -- the front door of the fused SGD step (optim.SGD): it takes the parameter's gradient
 * (its .grad when none is given: the optimizer layer sits above autograd), checks the operands
 * and runs the device's sgd_step kernel (core/tensor/sgd.c says what it computes). No autograd is
 * recorded; the version counters are bumped as by any in-place op. */
#include "checks.h"

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
  MT_TRY(optim_check_param("sgd_step", param));
  MT_TRY(optim_check_operand("sgd_step", param, grad, "grad"));
  if (s->momentum != 0) {
    if (!buf) return mt_error(MT_EINVAL, "sgd_step: momentum %g needs a momentum buffer", s->momentum);
    MT_TRY(optim_check_operand("sgd_step", param, buf, "momentum_buffer"));
    if (grad->_storage == buf->_storage && mt_may_overlap(grad, buf))
      return mt_error(MT_EINVAL, "sgd_step: momentum_buffer shares memory with grad");
  } else {
    buf = NULL; /* PyTorch ignores the buffer while momentum is 0 */
  }
  mt_bump_version(param);
  if (buf) mt_bump_version(buf);
  return mt_kernels_of(param)->sgd_step(param, grad, buf, s, first_step);
}
