/* bag.h -- the internal front door of embedding_bag's backward (core/ops/bag.c), for the autograd
 * layer. Internal to the core. */
#ifndef MT_OPS_BAG_H
#define MT_OPS_BAG_H

#include "dispatch.h"

/* The gradients of mt_embedding_bag with respect to weight (dense, weight's shape) and to the
 * per-sample weights (NULL pointers: not wanted), from the output gradient g and the forward's
 * operands; max_arg: the rows the maxima came from (mode max). Not recorded. */
mt_status mt_embedding_bag_backward(mt_tensor *g, mt_tensor *weight, mt_tensor *indices, mt_tensor *starts,
                                    mt_tensor *psw, mt_tensor *max_arg, int mode, int64_t pad0,
                                    int scale_grad_by_freq, int64_t index_base, mt_tensor **gw, mt_tensor **gpsw);
/* The forward, also handing out max_arg (mode max; NULL pointer: not wanted); pad0 the 0-based
 * padding row or -1. */
mt_status mt_embedding_bag_impl(mt_tensor *weight, mt_tensor *indices, mt_tensor *starts, mt_tensor *psw, int mode,
                                int64_t pad0, int64_t index_base, mt_tensor **result, mt_tensor **max_arg);

#endif
