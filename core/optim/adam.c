/* adam.c -- the front door of the fused Adam/AdamW step (optim.Adam, optim.AdamW): it takes the
 * parameter's gradient (its .grad when none is given), checks the operands, increments the step
 * counter and runs the device's adam_step kernel (core/tensor/adam.c says what it computes). No
 * autograd is recorded; the version counters are bumped as by any in-place op. */
#include "checks.h"

mt_status mt_adam_step(mt_tensor *param, mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_avg_sq,
                       mt_tensor *max_exp_avg_sq, mt_tensor *step, const mt_adam_settings *s) {
  const char *op = "adam_step";
  MT_TRY(optim_begin(op, MT_OP_ADAM_STEP, param, s, &grad));
  if (!grad) return MT_OK;
  if (!s->amsgrad) max_exp_avg_sq = NULL;
  else if (!max_exp_avg_sq) return mt_error(MT_EINVAL, "adam_step: amsgrad needs a max_exp_avg_sq");
  mt_tensor *all[4] = {grad, exp_avg, exp_avg_sq, max_exp_avg_sq};
  const char *names[4] = {"grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  for (int i = 1; i < 3; i++) MT_TRY(mt_check_tensor(all[i], op, names[i]));
  MT_TRY(optim_check_operands(op, param, all, names, 4));
  double n = 0;
  MT_TRY(optim_count_step(op, step, &n));
  optim_bump(param, all, 4);
  return mt_kernels_of(param)->adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, s, n);
}
