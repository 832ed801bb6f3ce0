/* optable.h -- what the core derives from the op list of core/moontorch.h (MT_OP_LIST): each op's
 * kind, whether autograd records it, its kernel slot. The dispatch layer reads an op's kind to
 * decide its result's dtype, the autograd layer whether to record it, a backend which kernel an op
 * needs. Not installed. */
#ifndef MT_OPTABLE_H
#define MT_OPTABLE_H

#include "mt_internal.h"

typedef enum mt_op_kind {
  MT_KIND_UNARY_FLOAT,
  MT_KIND_UNARY_KEEP,
  MT_KIND_UNARY_TEST,
  MT_KIND_UNARY_LOGICAL,
  MT_KIND_UNARY_BITS,
  MT_KIND_BINARY_ARITH,
  MT_KIND_BINARY_FLOAT,
  MT_KIND_BINARY_CMP,
  MT_KIND_BINARY_BITS,
  MT_KIND_REDUCE,
  MT_KIND_VIEW,
  MT_KIND_OP,
  MT_KIND_COMPOSITE,
} mt_op_kind;

/* one byte per op: its kind and its autograd flag */
extern const unsigned char mt_op_kinds[MT_OP_COUNT];
extern const bool mt_op_differentiable[MT_OP_COUNT];
/* each op's name (mt_op_name without a call, for the layers of the core) */
extern const char *const mt_op_names[MT_OP_COUNT];
#define MT_OP_NAME(op) (mt_op_names[op])
/* each op's kernel slot (an mt_kernel_slot of core/kernels.h; -1: none) */
extern const signed char mt_op_slots[MT_OP_COUNT];

static inline bool mt_op_valid(int op) { return op >= 0 && op < MT_OP_COUNT; }
static inline mt_op_kind mt_op_kind_of(mt_op op) { return (mt_op_kind)mt_op_kinds[op]; }
static inline bool mt_op_is_unary(int op) {
  return mt_op_valid(op) && mt_op_kinds[op] >= MT_KIND_UNARY_FLOAT && mt_op_kinds[op] <= MT_KIND_UNARY_BITS;
}
static inline bool mt_op_is_binary(int op) {
  return mt_op_valid(op) && mt_op_kinds[op] >= MT_KIND_BINARY_ARITH && mt_op_kinds[op] <= MT_KIND_BINARY_BITS;
}
static inline bool mt_op_is_reduce(int op) { return mt_op_valid(op) && mt_op_kinds[op] == MT_KIND_REDUCE; }

#endif
