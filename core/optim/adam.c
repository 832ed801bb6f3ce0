/* adam.c -- the front door of the fused Adam/AdamW step (optim.Adam, optim.AdamW): it takes the
 * parameter's gradient (its .grad when none is given), checks the operands, increments the step
 * counter and runs the device's adam_step kernel (core/tensor/adam.c says what it computes). No
 * autograd is recorded; the version counters are bumped as by any in-place op. */
#include "checks.h"

mt_status mt_adam_step(mt_tensor *param, mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_avg_sq,
                       mt_tensor *max_exp_avg_sq, mt_tensor *step, const mt_adam_settings *s) {
  const char *op = "adam_step";
  MT_TRY(mt_check_tensor(param, op, "param"));
  MT_TRY(mt_check_kernel(MT_OP_ADAM_STEP, param));
  if (!s)
    return mt_error(MT_EINVAL, "adam_step: no settings given");
  if (!grad) {
    grad = mt_grad_of(param); /* borrowed; none: PyTorch skips the parameter */
    if (!grad)
      return MT_OK;
  }
  MT_TRY(optim_check_param(op, param));
  MT_TRY(optim_check_operand(op, param, grad, "grad"));
  MT_TRY(optim_check_operand(op, param, exp_avg, "exp_avg"));
  MT_TRY(optim_check_operand(op, param, exp_avg_sq, "exp_avg_sq"));
  if (s->amsgrad) {
    if (!max_exp_avg_sq)
      return mt_error(MT_EINVAL, "adam_step: amsgrad needs a max_exp_avg_sq");
    MT_TRY(optim_check_operand(op, param, max_exp_avg_sq, "max_exp_avg_sq"));
  } else {
    max_exp_avg_sq = NULL;
  }
  mt_tensor *all[4] = {grad, exp_avg, exp_avg_sq, max_exp_avg_sq};
  const char *names[4] = {"grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  MT_TRY(optim_check_apart(op, all, names, 4));
  double n = 0;
  MT_TRY(optim_count_step(op, step, &n));
  mt_bump_version(param);
  mt_bump_version(exp_avg);
  mt_bump_version(exp_avg_sq);
  if (max_exp_avg_sq)
    mt_bump_version(max_exp_avg_sq);
  return mt_kernels_of(param)->adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, s, n);
}
