/* norm.h -- the internal front door of the layer norm's backward (core/ops/norm.c), which the
 * autograd layer calls when a backward is not recorded. Internal to the core. */
#ifndef MT_OPS_NORM_H
#define MT_OPS_NORM_H

#include "dispatch.h"

/* The gradients of mt_layer_norm with respect to x, weight and bias (each NULL when not wanted),
 * from the output gradient g and the forward's x, weight, mean and rstd; nnorm: the number of
 * trailing dims normalised. Not recorded. */
mt_status mt_layer_norm_backward(mt_tensor *g, mt_tensor *x, mt_tensor *weight, mt_tensor *mean, mt_tensor *rstd,
                                 int nnorm, mt_tensor **gx, mt_tensor **gw, mt_tensor **gb);

#endif
