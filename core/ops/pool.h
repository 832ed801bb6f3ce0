/* pool.h -- what the pooling front doors (pool.c, issue 12) give the autograd layer beside the
 * public ones: the one-pass writes and reads at per-plane positions that backwards which are not
 * recorded use. Internal to the core. */
#ifndef MT_OPS_POOL_H
#define MT_OPS_POOL_H

#include "dispatch.h"

/* kind MT_POOL_SCATTER_ADD: src's values (shaped like `indices`, planes of K) added at their
 * positions into zeros of `shape` (planes of M); MT_POOL_GATHER: the values of src (shaped `shape`)
 * at the positions, shaped like `indices`. Positions from `base`. Not recorded. */
mt_status mt_pool_index(const char *op, mt_tensor *src, mt_tensor *indices, int kind, const int64_t *shape, int ndim,
                        int64_t base, mt_tensor **result);

#endif
