/* adaptive.c -- the front doors of the fused RMSprop and Adagrad steps (optim.RMSprop,
 * optim.Adagrad): each takes the parameter's gradient (its .grad when none is given), checks the
 * operands (shape, dtype, device, no shared memory), counts Adagrad's step and runs the device's
 * kernel (core/tensor/adaptive.c says what they compute). No autograd is recorded; the version
 * counters are bumped as by any in-place op. */
#include "../grad/node.h"
#include <math.h>

static inline bool same_sizes(const mt_tensor *a, const mt_tensor *b) {
  if (a->_ndim != b->_ndim)
    return false;
  for (int i = 0; i < a->_ndim; i++)
    if (a->_sizes[i] != b->_sizes[i])
      return false;
  return true;
}

static mt_status check_operand(const char *op, const mt_tensor *p, const mt_tensor *t, const char *what) {
  MT_TRY(mt_check_tensor(t, op, what));
  MT_TRY(mt_check_same_device(op, p, t));
  if (!same_sizes(p, t))
    return mt_error(MT_ESHAPE, "%s: %s of shape %s does not match the parameter's shape %s", op, what, MT_SHAPE(t),
                    MT_SHAPE(p));
  if (t->_dtype != p->_dtype)
    return mt_error(MT_EDTYPE, "%s: %s has dtype %s but the parameter has dtype %s", op, what, mt_type_title(t->_dtype),
                    mt_type_title(p->_dtype));
  if (p->_storage == t->_storage && mt_may_overlap(p, t))
    return mt_error(MT_EINVAL, "%s: %s shares memory with the parameter", op, what);
  return MT_OK;
}

/* no two of the n operands (the parameter excepted, checked above) share memory */
static mt_status check_apart(const char *op, mt_tensor *const *t, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (t[i] && t[j] && t[i]->_storage == t[j]->_storage && mt_may_overlap(t[i], t[j]))
        return mt_error(MT_EINVAL, "%s: %s shares memory with %s", op, names[i], names[j]);
  return MT_OK;
}

static mt_status check_param(const char *op, mt_tensor *param) {
  if (param->_dtype != MT_FLOAT32 && param->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: parameters of dtype %s are not supported (Float and Double only)", op,
                    mt_type_title(param->_dtype));
  return MT_OK;
}

mt_status mt_rmsprop_step(mt_tensor *param, mt_tensor *grad, mt_tensor *square_avg, mt_tensor *grad_avg, mt_tensor *buf,
                          const mt_rmsprop_settings *s) {
  const char *op = "rmsprop_step";
  MT_TRY(mt_check_tensor(param, op, "param"));
  MT_TRY(mt_check_kernel(MT_OP_RMSPROP_STEP, param));
  if (!s)
    return mt_error(MT_EINVAL, "%s: no settings given", op);
  if (!grad) {
    grad = mt_grad_of(param); /* borrowed; none: PyTorch skips the parameter */
    if (!grad)
      return MT_OK;
  }
  MT_TRY(check_param(op, param));
  MT_TRY(check_operand(op, param, grad, "grad"));
  MT_TRY(check_operand(op, param, square_avg, "square_avg"));
  if (s->centered) {
    if (!grad_avg)
      return mt_error(MT_EINVAL, "%s: centered needs a grad_avg", op);
    MT_TRY(check_operand(op, param, grad_avg, "grad_avg"));
  } else {
    grad_avg = NULL;
  }
  if (s->momentum > 0) {
    if (!buf)
      return mt_error(MT_EINVAL, "%s: momentum %g needs a momentum_buffer", op, s->momentum);
    MT_TRY(check_operand(op, param, buf, "momentum_buffer"));
  } else {
    buf = NULL;
  }
  mt_tensor *all[4] = {grad, square_avg, grad_avg, buf};
  const char *names[4] = {"grad", "square_avg", "grad_avg", "momentum_buffer"};
  MT_TRY(check_apart(op, all, names, 4));
  mt_bump_version(param);
  mt_bump_version(square_avg);
  if (grad_avg)
    mt_bump_version(grad_avg);
  if (buf)
    mt_bump_version(buf);
  return mt_kernels_of(param)->rmsprop_step(param, grad, square_avg, grad_avg, buf, s);
}

mt_status mt_adagrad_step(mt_tensor *param, mt_tensor *grad, mt_tensor *sum, mt_tensor *step,
                          const mt_adagrad_settings *s) {
  const char *op = "adagrad_step";
  MT_TRY(mt_check_tensor(param, op, "param"));
  MT_TRY(mt_check_kernel(MT_OP_ADAGRAD_STEP, param));
  if (!s)
    return mt_error(MT_EINVAL, "%s: no settings given", op);
  if (!grad) {
    grad = mt_grad_of(param);
    if (!grad)
      return MT_OK;
  }
  MT_TRY(check_param(op, param));
  MT_TRY(check_operand(op, param, grad, "grad"));
  MT_TRY(check_operand(op, param, sum, "sum"));
  mt_tensor *all[2] = {grad, sum};
  const char *names[2] = {"grad", "sum"};
  MT_TRY(check_apart(op, all, names, 2));
  MT_TRY(mt_check_tensor(step, op, "step"));
  if (step->_numel != 1 || step->_device_type != MT_CPU || (step->_dtype != MT_FLOAT32 && step->_dtype != MT_FLOAT64))
    return mt_error(MT_EINVAL, "%s: step must be a CPU Float or Double tensor of one element", op);
  double n = mt_load_double(step->_dtype, step->_data) + 1;
  mt_store_double(step->_dtype, step->_data, n);
  n = mt_load_double(step->_dtype, step->_data);
  mt_bump_version(step);
  mt_bump_version(param);
  mt_bump_version(sum);
  double clr = s->lr / (1 + (n - 1) * s->lr_decay);
  return mt_kernels_of(param)->adagrad_step(param, grad, sum, s, clr);
}

mt_status mt_adadelta_step(mt_tensor *param, mt_tensor *grad, mt_tensor *square_avg, mt_tensor *acc_delta,
                           const mt_adadelta_settings *s) {
  const char *op = "adadelta_step";
  MT_TRY(mt_check_tensor(param, op, "param"));
  MT_TRY(mt_check_kernel(MT_OP_ADADELTA_STEP, param));
  if (!s)
    return mt_error(MT_EINVAL, "%s: no settings given", op);
  if (!grad) {
    grad = mt_grad_of(param);
    if (!grad)
      return MT_OK;
  }
  MT_TRY(check_param(op, param));
  MT_TRY(check_operand(op, param, grad, "grad"));
  MT_TRY(check_operand(op, param, square_avg, "square_avg"));
  MT_TRY(check_operand(op, param, acc_delta, "acc_delta"));
  mt_tensor *all[3] = {grad, square_avg, acc_delta};
  const char *names[3] = {"grad", "square_avg", "acc_delta"};
  MT_TRY(check_apart(op, all, names, 3));
  mt_bump_version(param);
  mt_bump_version(square_avg);
  mt_bump_version(acc_delta);
  return mt_kernels_of(param)->adadelta_step(param, grad, square_avg, acc_delta, s);
}

mt_status mt_adamax_step(mt_tensor *param, mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_inf, mt_tensor *step,
                         const mt_adamax_settings *s) {
  const char *op = "adamax_step";
  MT_TRY(mt_check_tensor(param, op, "param"));
  MT_TRY(mt_check_kernel(MT_OP_ADAMAX_STEP, param));
  if (!s)
    return mt_error(MT_EINVAL, "%s: no settings given", op);
  if (!grad) {
    grad = mt_grad_of(param);
    if (!grad)
      return MT_OK;
  }
  MT_TRY(check_param(op, param));
  MT_TRY(check_operand(op, param, grad, "grad"));
  MT_TRY(check_operand(op, param, exp_avg, "exp_avg"));
  MT_TRY(check_operand(op, param, exp_inf, "exp_inf"));
  mt_tensor *all[3] = {grad, exp_avg, exp_inf};
  const char *names[3] = {"grad", "exp_avg", "exp_inf"};
  MT_TRY(check_apart(op, all, names, 3));
  MT_TRY(mt_check_tensor(step, op, "step"));
  if (step->_numel != 1 || step->_device_type != MT_CPU || (step->_dtype != MT_FLOAT32 && step->_dtype != MT_FLOAT64))
    return mt_error(MT_EINVAL, "%s: step must be a CPU Float or Double tensor of one element", op);
  double n = mt_load_double(step->_dtype, step->_data) + 1;
  mt_store_double(step->_dtype, step->_data, n);
  n = mt_load_double(step->_dtype, step->_data);
  mt_bump_version(step);
  mt_bump_version(param);
  mt_bump_version(exp_avg);
  mt_bump_version(exp_inf);
  double clr = s->lr / (1 - pow(s->beta1, n));
  return mt_kernels_of(param)->adamax_step(param, grad, exp_avg, exp_inf, s, clr);
}
