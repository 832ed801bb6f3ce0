/* conv.h -- what autograd's convolution backward (core/grad/conv.c) calls in core/ops/conv.c besides
 * the public front doors (issue 12, conv part). Internal to the core. */
#ifndef MT_OPS_CONV_H
#define MT_OPS_CONV_H

#include "dispatch.h"

/* The gradient of a convolution's weight (wsizes: its shape), not recorded: for each group, the sum
 * over samples of the output's gradient times the columns of the input (transposed: of the input
 * times the columns of the output's gradient). The same arguments as mt_convolution's. */
mt_status mt_conv_weight_grad(mt_tensor *gout, mt_tensor *input, const int64_t *wsizes, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int transposed, int64_t groups, int nsp,
                              mt_tensor **result);

#endif
