/* loss.h -- the internal front door of nll_loss's backward (core/ops/loss.c), for the autograd
 * layer. Internal to the core. */
#ifndef MT_OPS_LOSS_H
#define MT_OPS_LOSS_H

#include "dispatch.h"

/* The gradient of mt_nll_loss with respect to its input (input's shape) for the output gradient g
 * (the result's shape), from the forward's target, weight and total weight. Not recorded. */
mt_status mt_nll_loss_backward(mt_tensor *g, mt_tensor *input, mt_tensor *target, mt_tensor *weight,
                               int64_t ignore_index, int reduction, double total_weight, int64_t index_base,
                               mt_tensor **result);

#endif
