/* softmax.h -- the internal front door of softmax's and log_softmax's fused backward (core/ops/softmax.c,
 * s6-vec), for the autograd layer. Internal to the core. */
#ifndef MT_OPS_SOFTMAX_H
#define MT_OPS_SOFTMAX_H

#include "dispatch.h"

/* For a backward that is not recorded: the input gradient of softmax (log 0: y (g - sum(g y))) or
 * log_softmax (log 1: g - exp(y) sum(g)) along dim (0-based, wrapped) from the output gradient g and the
 * forward's output y, in one kernel (two passes over each line). MT_ENOTIMPL (no message: the caller
 * composes the formula instead) unless g and y are float32 or float64 tensors of one device whose backend
 * has the kernel, of one dtype and shape with at least one dimension, and y is contiguous (g is made
 * contiguous). */
mt_status mt_softmax_backward_data(mt_tensor *g, mt_tensor *y, int dim, int log, mt_tensor **result);

#endif
