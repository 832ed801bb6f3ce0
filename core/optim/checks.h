/* checks.h -- what every fused optimizer step's front door checks (sgd.c, adam.c, adaptive.c): the
 * parameter's dtype, each state tensor against the parameter, state tensors apart from each other,
 * and the CPU step counter some optimizers keep. Inline: they run for every parameter every step.
 * Internal to core/optim/. */
#ifndef MT_OPTIM_CHECKS_H
#define MT_OPTIM_CHECKS_H

#include "../grad/node.h"

/* (a loop, not memcmp: parameters have few dims) */
static inline bool optim_same_sizes(const mt_tensor *a, const mt_tensor *b) {
  if (a->_ndim != b->_ndim) return false;
  for (int i = 0; i < a->_ndim; i++)
    if (a->_sizes[i] != b->_sizes[i]) return false;
  return true;
}

/* a parameter of a floating dtype the kernels take */
static inline mt_status optim_check_param(const char *op, const mt_tensor *param) {
  if (param->_dtype != MT_FLOAT32 && param->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: parameters of dtype %s are not supported (Float and Double only)", op,
                    mt_type_title(param->_dtype));
  return MT_OK;
}

/* grad or a state tensor against the parameter: device, shape, dtype, no shared memory */
static inline mt_status optim_check_operand(const char *op, const mt_tensor *p, const mt_tensor *t, const char *what) {
  MT_TRY(mt_check_tensor(t, op, what));
  MT_TRY(mt_check_same_device(op, p, t));
  if (!optim_same_sizes(p, t))
    return mt_error(MT_ESHAPE, "%s: %s of shape %s does not match the parameter's shape %s", op, what, MT_SHAPE(t),
                    MT_SHAPE(p));
  if (t->_dtype != p->_dtype)
    return mt_error(MT_EDTYPE, "%s: %s has dtype %s but the parameter has dtype %s", op, what, mt_type_title(t->_dtype),
                    mt_type_title(p->_dtype));
  if (p->_storage == t->_storage && mt_may_overlap(p, t))
    return mt_error(MT_EINVAL, "%s: %s shares memory with the parameter", op, what);
  return MT_OK;
}

/* no two of the n operands (NULL ones skipped) share memory */
static inline mt_status optim_check_apart(const char *op, mt_tensor *const *t, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (t[i] && t[j] && t[i]->_storage == t[j]->_storage && mt_may_overlap(t[i], t[j]))
        return mt_error(MT_EINVAL, "%s: %s shares memory with %s", op, names[i], names[j]);
  return MT_OK;
}

/* the step counter (PyTorch's torch.tensor(0.)): one element of a floating dtype on the CPU; counts one
 * more step and gives the count as the counter holds it (float32 rounds) */
static inline mt_status optim_count_step(const char *op, mt_tensor *step, double *count) {
  MT_TRY(mt_check_tensor(step, op, "step"));
  if (step->_numel != 1 || step->_device_type != MT_CPU || (step->_dtype != MT_FLOAT32 && step->_dtype != MT_FLOAT64))
    return mt_error(MT_EINVAL, "%s: step must be a CPU Float or Double tensor of one element", op);
  mt_store_double(step->_dtype, step->_data, mt_load_double(step->_dtype, step->_data) + 1);
  *count = mt_load_double(step->_dtype, step->_data);
  mt_bump_version(step);
  return MT_OK;
}

/* The start of every step: param checked, its device's kernel there, settings given, the gradient
 * (the parameter's .grad, borrowed, when none is given). *grad is NULL after an MT_OK when there is
 * none: nothing to do (PyTorch skips such parameters). */
static inline mt_status optim_begin(const char *op, mt_op id, mt_tensor *param, const void *settings, mt_tensor **grad) {
  MT_TRY(mt_check_tensor(param, op, "param"));
  MT_TRY(mt_check_kernel(id, param));
  if (!settings) return mt_error(MT_EINVAL, "%s: no settings given", op);
  if (!*grad) {
    *grad = mt_grad_of(param);
    if (!*grad) return MT_OK;
  }
  return optim_check_param(op, param);
}

/* the n operands (grad first; NULL ones absent) each against the parameter, then apart */
static inline mt_status optim_check_operands(const char *op, const mt_tensor *param, mt_tensor *const *t,
                                             const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (t[i]) MT_TRY(optim_check_operand(op, param, t[i], names[i]));
  return optim_check_apart(op, t, names, n);
}

/* the parameter and the state operands t[1..n-1] (not the gradient, t[0]) are written: versions bumped */
static inline void optim_bump(mt_tensor *param, mt_tensor *const *t, int n) {
  mt_bump_version(param);
  for (int i = 1; i < n; i++)
    if (t[i]) mt_bump_version(t[i]);
}

#endif
