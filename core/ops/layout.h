/* layout.h -- the memory layout of a new result (layout.c): PyTorch's rule for elementwise results
 * and for *_like / clone with preserve_format, so that `x:t() + 1` has x:t()'s strides. Internal to
 * the core (the dispatch layer). */
#ifndef MT_LAYOUT_H
#define MT_LAYOUT_H

#include "dispatch.h"

/* Is t non-overlapping and dense (its elements fill a block of storage exactly, in some order)? */
bool mt_is_dense(const mt_tensor *t);

/* The strides (in elements) a new result of `shape` gets from its operands (NULL entries and
 * 0-dim operands are skipped), as PyTorch's TensorIterator lays out its outputs: contiguous when
 * every operand is; the operands' own strides when they all have the result's shape and the same
 * strides and are dense; else contiguous in the order of the operands' strides (the first operand
 * that tells two dims apart decides; broadcast dims tell nothing). Returns false when that is
 * plain row-major (the caller allocates as usual). */
bool mt_layout_strides(const mt_tensor *const *ops, int nops, const int64_t *shape, int nd, int64_t *strides);

/* A new tensor of `shape` on `dev`, laid out as mt_layout_strides says. */
mt_status mt_new_laid_out(mt_device dev, const int64_t *shape, int nd, int dtype, const char *op,
                          const mt_tensor *const *ops, int nops, mt_tensor **out);

/* PyTorch's preserve_format for one tensor (empty_like, clone, to): t's strides when t is dense,
 * else contiguous in the order of t's strides. */
mt_status mt_new_preserving(const mt_tensor *t, int dtype, const char *op, mt_tensor **out);

#endif
