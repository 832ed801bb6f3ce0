/* optim.c -- the CUDA backend's fused optimizer steps: the constants of each rule (as the CPU's fused steps
 * compute them) and the operands' geometry, for k_optim.cu. */
#include "gpu.h"

#include <math.h>

static mt_status run(mt_gpu_optim *o, const mt_tensor *const *ops, int nops, const char *op) {
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, ops, nops);
  if (it.numel == 0) return MT_OK;
  void *s = mt_gpu_stream_of(ops[0]);
  if (mt_gpu_k->optim(o, &it, s))
    return mt_error(MT_EDTYPE, "%s: not implemented for '%s' on device cuda", op, mt_dtype_name(ops[0]->_dtype));
  return MT_OK;
}

mt_status mt_gpu_sgd_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *buf, const mt_sgd_settings *st,
                          int first_step) {
  mt_gpu_optim o = {.rule = MT_GPU_SGD, .mode = buf ? (first_step ? 1 : 2) : 0, .flags = buf && st->nesterov,
                    .wd_on = st->weight_decay != 0,
                    .c = {-st->lr, st->momentum, 1 - st->dampening, st->weight_decay, st->maximize ? -1.0 : 1.0}};
  return run(&o, (const mt_tensor *[]){param, grad, buf}, buf ? 3 : 2, "sgd_step");
}

mt_status mt_gpu_adam_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_avg_sq,
                           mt_tensor *max_sq, const mt_adam_settings *st, double step) {
  double bc1 = 1 - pow(st->beta1, step), bc2 = 1 - pow(st->beta2, step);
  mt_gpu_optim o = {.rule = MT_GPU_ADAM, .mode = st->decoupled ? 2 : (st->weight_decay != 0 ? 1 : 0),
                    .flags = max_sq != NULL,
                    .c = {st->maximize ? -1.0 : 1.0, 1 - st->lr * st->weight_decay, st->weight_decay, st->beta1,
                          1 - st->beta1, st->beta2, 1 - st->beta2, sqrt(bc2), st->eps, -(st->lr / bc1)}};
  return run(&o, (const mt_tensor *[]){param, grad, exp_avg, exp_avg_sq, max_sq}, max_sq ? 5 : 4, "adam_step");
}

mt_status mt_gpu_rmsprop_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *square_avg, mt_tensor *grad_avg,
                              mt_tensor *buf, const mt_rmsprop_settings *st) {
  mt_gpu_optim o = {.rule = MT_GPU_RMSPROP, .flags = (grad_avg ? 1 : 0) | (buf ? 2 : 0),
                    .wd_on = st->weight_decay != 0,
                    .c = {st->maximize ? -1.0 : 1.0, st->weight_decay, st->alpha, 1 - st->alpha, st->eps,
                          st->momentum, -st->lr}};
  const mt_tensor *ops[5] = {param, grad, square_avg};
  int n = 3;
  if (grad_avg) ops[n++] = grad_avg;
  if (buf) ops[n++] = buf;
  return run(&o, ops, n, "rmsprop_step");
}

mt_status mt_gpu_adagrad_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *sum, const mt_adagrad_settings *st,
                              double clr) {
  mt_gpu_optim o = {.rule = MT_GPU_ADAGRAD, .wd_on = st->weight_decay != 0,
                    .c = {st->maximize ? -1.0 : 1.0, st->weight_decay, st->eps, -clr}};
  return run(&o, (const mt_tensor *[]){param, grad, sum}, 3, "adagrad_step");
}

mt_status mt_gpu_adadelta_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *square_avg, mt_tensor *acc_delta,
                               const mt_adadelta_settings *st) {
  mt_gpu_optim o = {.rule = MT_GPU_ADADELTA, .wd_on = st->weight_decay != 0,
                    .c = {st->maximize ? -1.0 : 1.0, st->weight_decay, st->rho, 1 - st->rho, 0, st->eps, -st->lr}};
  return run(&o, (const mt_tensor *[]){param, grad, square_avg, acc_delta}, 4, "adadelta_step");
}

mt_status mt_gpu_adamax_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_inf,
                             const mt_adamax_settings *st, double clr) {
  mt_gpu_optim o = {.rule = MT_GPU_ADAMAX, .wd_on = st->weight_decay != 0,
                    .c = {st->maximize ? -1.0 : 1.0, st->weight_decay, st->beta1, 1 - st->beta1, st->beta2, st->eps,
                          -clr}};
  return run(&o, (const mt_tensor *[]){param, grad, exp_avg, exp_inf}, 4, "adamax_step");
}
