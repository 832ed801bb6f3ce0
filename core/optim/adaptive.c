/* adaptive.c -- the front doors of the fused RMSprop, Adagrad, Adadelta and Adamax steps: each takes
 * the parameter's gradient (its .grad when none is given), checks the operands (checks.h: shape,
 * dtype, device, no shared memory), counts Adagrad's and Adamax's step and runs the device's
 * kernel (core/tensor/adaptive.c says what they compute). No autograd is recorded; the version
 * counters are bumped as by any in-place op. */
#include "checks.h"
#include <math.h>

mt_status mt_rmsprop_step(mt_tensor *param, mt_tensor *grad, mt_tensor *square_avg, mt_tensor *grad_avg, mt_tensor *buf,
                          const mt_rmsprop_settings *s) {
  const char *op = "rmsprop_step";
  MT_TRY(optim_begin(op, MT_OP_RMSPROP_STEP, param, s, &grad));
  if (!grad) return MT_OK;
  if (!s->centered) grad_avg = NULL;
  else if (!grad_avg) return mt_error(MT_EINVAL, "%s: centered needs a grad_avg", op);
  if (!(s->momentum > 0)) buf = NULL;
  else if (!buf) return mt_error(MT_EINVAL, "%s: momentum %g needs a momentum_buffer", op, s->momentum);
  mt_tensor *all[4] = {grad, square_avg, grad_avg, buf};
  const char *names[4] = {"grad", "square_avg", "grad_avg", "momentum_buffer"};
  MT_TRY(mt_check_tensor(square_avg, op, "square_avg"));
  MT_TRY(optim_check_operands(op, param, all, names, 4));
  optim_bump(param, all, 4);
  return mt_kernels_of(param)->rmsprop_step(param, grad, square_avg, grad_avg, buf, s);
}

mt_status mt_adagrad_step(mt_tensor *param, mt_tensor *grad, mt_tensor *sum, mt_tensor *step,
                          const mt_adagrad_settings *s) {
  const char *op = "adagrad_step";
  MT_TRY(optim_begin(op, MT_OP_ADAGRAD_STEP, param, s, &grad));
  if (!grad) return MT_OK;
  mt_tensor *all[2] = {grad, sum};
  const char *names[2] = {"grad", "sum"};
  MT_TRY(mt_check_tensor(sum, op, "sum"));
  MT_TRY(optim_check_operands(op, param, all, names, 2));
  double n = 0;
  MT_TRY(optim_count_step(op, step, &n));
  optim_bump(param, all, 2);
  double clr = s->lr / (1 + (n - 1) * s->lr_decay);
  return mt_kernels_of(param)->adagrad_step(param, grad, sum, s, clr);
}

mt_status mt_adadelta_step(mt_tensor *param, mt_tensor *grad, mt_tensor *square_avg, mt_tensor *acc_delta,
                           const mt_adadelta_settings *s) {
  const char *op = "adadelta_step";
  MT_TRY(optim_begin(op, MT_OP_ADADELTA_STEP, param, s, &grad));
  if (!grad) return MT_OK;
  mt_tensor *all[3] = {grad, square_avg, acc_delta};
  const char *names[3] = {"grad", "square_avg", "acc_delta"};
  for (int i = 1; i < 3; i++) MT_TRY(mt_check_tensor(all[i], op, names[i]));
  MT_TRY(optim_check_operands(op, param, all, names, 3));
  optim_bump(param, all, 3);
  return mt_kernels_of(param)->adadelta_step(param, grad, square_avg, acc_delta, s);
}

mt_status mt_adamax_step(mt_tensor *param, mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_inf, mt_tensor *step,
                         const mt_adamax_settings *s) {
  const char *op = "adamax_step";
  MT_TRY(optim_begin(op, MT_OP_ADAMAX_STEP, param, s, &grad));
  if (!grad) return MT_OK;
  mt_tensor *all[3] = {grad, exp_avg, exp_inf};
  const char *names[3] = {"grad", "exp_avg", "exp_inf"};
  for (int i = 1; i < 3; i++) MT_TRY(mt_check_tensor(all[i], op, names[i]));
  MT_TRY(optim_check_operands(op, param, all, names, 3));
  double n = 0;
  MT_TRY(optim_count_step(op, step, &n));
  optim_bump(param, all, 3);
  double clr = s->lr / (1 - pow(s->beta1, n));
  return mt_kernels_of(param)->adamax_step(param, grad, exp_avg, exp_inf, s, clr);
}
