/* adam.c -- the front door of the fused Adam/AdamW step (optim.Adam, optim.AdamW): it takes the
 * parameter's gradient (its .grad when none is given), checks the operands, increments the step
 * counter and runs the device's adam_step kernel (core/tensor/adam.c says what it computes). No
 * autograd is recorded; the version counters are bumped as by any in-place op. */
#include "../grad/node.h"

static inline bool same_sizes(const mt_tensor *a, const mt_tensor *b) {
  if (a->_ndim != b->_ndim)
    return false;
  for (int i = 0; i < a->_ndim; i++)
    if (a->_sizes[i] != b->_sizes[i])
      return false;
  return true;
}

/* a state tensor or the gradient against the parameter: shape, dtype, no shared memory */
static inline mt_status check_operand(const mt_tensor *p, const mt_tensor *t, const char *what) {
  MT_TRY(mt_check_tensor(t, "adam_step", what));
  MT_TRY(mt_check_same_device("adam_step", p, t));
  if (!same_sizes(p, t))
    return mt_error(MT_ESHAPE, "adam_step: %s of shape %s does not match the parameter's shape %s", what, MT_SHAPE(t),
                    MT_SHAPE(p));
  if (t->_dtype != p->_dtype)
    return mt_error(MT_EDTYPE, "adam_step: %s has dtype %s but the parameter has dtype %s", what,
                    mt_type_title(t->_dtype), mt_type_title(p->_dtype));
  if (p->_storage == t->_storage && mt_may_overlap(p, t))
    return mt_error(MT_EINVAL, "adam_step: %s shares memory with the parameter", what);
  return MT_OK;
}

static inline mt_status check_apart(const mt_tensor *a, const mt_tensor *b, const char *an, const char *bn) {
  if (a && b && a->_storage == b->_storage && mt_may_overlap(a, b))
    return mt_error(MT_EINVAL, "adam_step: %s shares memory with %s", an, bn);
  return MT_OK;
}

mt_status mt_adam_step(mt_tensor *param, mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_avg_sq,
                       mt_tensor *max_exp_avg_sq, mt_tensor *step, const mt_adam_settings *s) {
  MT_TRY(mt_check_tensor(param, "adam_step", "param"));
  MT_TRY(mt_check_kernel(MT_OP_ADAM_STEP, param));
  if (!s)
    return mt_error(MT_EINVAL, "adam_step: no settings given");
  if (!grad) {
    grad = mt_grad_of(param); /* borrowed; none: PyTorch skips the parameter */
    if (!grad)
      return MT_OK;
  }
  if (param->_dtype != MT_FLOAT32 && param->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "adam_step: parameters of dtype %s are not supported (Float and Double only)",
                    mt_type_title(param->_dtype));
  MT_TRY(check_operand(param, grad, "grad"));
  MT_TRY(check_operand(param, exp_avg, "exp_avg"));
  MT_TRY(check_operand(param, exp_avg_sq, "exp_avg_sq"));
  if (s->amsgrad) {
    if (!max_exp_avg_sq)
      return mt_error(MT_EINVAL, "adam_step: amsgrad needs a max_exp_avg_sq");
    MT_TRY(check_operand(param, max_exp_avg_sq, "max_exp_avg_sq"));
  } else {
    max_exp_avg_sq = NULL;
  }
  MT_TRY(check_apart(grad, exp_avg, "grad", "exp_avg"));
  MT_TRY(check_apart(grad, exp_avg_sq, "grad", "exp_avg_sq"));
  MT_TRY(check_apart(exp_avg, exp_avg_sq, "exp_avg", "exp_avg_sq"));
  MT_TRY(check_apart(grad, max_exp_avg_sq, "grad", "max_exp_avg_sq"));
  MT_TRY(check_apart(exp_avg, max_exp_avg_sq, "exp_avg", "max_exp_avg_sq"));
  MT_TRY(check_apart(exp_avg_sq, max_exp_avg_sq, "exp_avg_sq", "max_exp_avg_sq"));
  /* the counter: one element of a floating dtype on the CPU (PyTorch's torch.tensor(0.)) */
  MT_TRY(mt_check_tensor(step, "adam_step", "step"));
  if (step->_numel != 1 || step->_device_type != MT_CPU || (step->_dtype != MT_FLOAT32 && step->_dtype != MT_FLOAT64))
    return mt_error(MT_EINVAL, "adam_step: step must be a CPU Float or Double tensor of one element");
  double n = mt_load_double(step->_dtype, step->_data) + 1;
  mt_store_double(step->_dtype, step->_data, n);
  n = mt_load_double(step->_dtype, step->_data); /* as the counter holds it (float32) */
  mt_bump_version(step);
  mt_bump_version(param);
  mt_bump_version(exp_avg);
  mt_bump_version(exp_avg_sq);
  if (max_exp_avg_sq)
    mt_bump_version(max_exp_avg_sq);
  return mt_kernels_of(param)->adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, s, n);
}
