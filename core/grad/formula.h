/* formula.h -- what backward formulas are written with: a scope of temporaries and the front doors
 * as functions on it, so that a formula reads as the math. Backward formulas call the front
 * doors, which record themselves when create_graph is on: double backward comes for free.
 *
 * Every helper works in the scope `sc` of the function it is used in (a backward declares
 * `scope S = {0}, *sc = &S;`) and returns a borrowed tensor that the scope owns, or NULL once an op
 * in the scope failed (the first failure is kept in sc->s; later helpers do nothing), so a formula
 * is written straight through and checked once, at its end (scope_close). In formulas the helpers
 * are written in capitals (MUL, UNARY, RESHAPE, ...): each is a macro over f_<name>(sc, ...),
 * inline here; what is longer is in formula.c. */
#ifndef MT_FORMULA_H
#define MT_FORMULA_H

#include "node.h"

#define MT_SCOPE_TENSORS 48
typedef struct scope {
  mt_tensor *t[MT_SCOPE_TENSORS];
  int n;
  mt_status s;
} scope;

#define LIVE(sc) ((sc)->s == MT_OK)
/* keep(sc, op(..., &r), &r): the scope takes `r`, a new reference written by the op (read through
 * its address after the call), or records the op's failure. */
mt_tensor *mt_scope_keep(scope *sc, mt_status s, mt_tensor **rp);
static inline mt_tensor *keep(scope *sc, mt_status s, mt_tensor **rp) { return mt_scope_keep(sc, s, rp); }
/* SCOPED(call): run a front door writing its result through &r_, kept by the scope. */
#define SCOPED(call)                             \
  ({                                             \
    mt_tensor *r_ = NULL;                        \
    LIVE(sc) ? keep(sc, (call), &r_) : NULL;     \
  })
/* the end of a backward: release the temporaries, report the first failure */
mt_status mt_scope_close(scope *sc);
static inline mt_status scope_close(scope *sc) { return mt_scope_close(sc); }
/* hand a scope tensor out as gin[k] (a new reference) */
static inline void give(mt_tensor **gin, int k, mt_tensor *t) { gin[k] = mt_tensor_retain(t); }
/* a saved tensor of node n, kept by the scope (NULL if none was saved) */
static inline mt_tensor *saved(scope *sc, mt_node *n, mt_saved *slot) {
  mt_tensor *t = NULL;
  if (!LIVE(sc)) return NULL;
  mt_status s = mt_node_saved(n, slot, &t);
  if (s) { sc->s = s; return NULL; }
  return t ? keep(sc, MT_OK, &t) : NULL;
}

/* ---------------------------------------------------------------- elementwise */
static inline mt_tensor *f_binary(scope *sc, mt_op op, mt_tensor *a, mt_tensor *b) {
  return a && b ? SCOPED(mt_binary(op, a, b, NULL, &r_)) : NULL;
}
/* a (op) s, s a floating number */
static inline mt_tensor *f_binary_number(scope *sc, mt_op op, mt_tensor *a, double s) {
  return a ? SCOPED(mt_binary_scalar(op, a, s, 2, 0, NULL, &r_)) : NULL;
}
static inline mt_tensor *f_unary(scope *sc, mt_op op, mt_tensor *a, double p1, double p2) {
  return a ? SCOPED(mt_unary(op, a, p1, p2, NULL, &r_)) : NULL;
}
#define MUL(a, b) f_binary(sc, MT_OP_MUL, a, b)
#define DIV(a, b) f_binary(sc, MT_OP_DIV, a, b)
#define ADD(a, b) f_binary(sc, MT_OP_ADD, a, b)
#define SUB(a, b) f_binary(sc, MT_OP_SUB, a, b)
#define MULS(a, s) f_binary_number(sc, MT_OP_MUL, a, s) /* ...S: with a number */
#define ADDS(a, s) f_binary_number(sc, MT_OP_ADD, a, s)
#define NEG(a) f_unary(sc, MT_OP_NEG, a, 0, 0)
#define CMP(op, a, b) f_binary(sc, op, a, b)
#define CMPS(op, a, s) f_binary_number(sc, op, a, s)
/* a bool mask in like's dtype: 1 where cond holds */
static inline mt_tensor *f_mask_as(scope *sc, mt_tensor *cond, mt_tensor *like) {
  return cond ? SCOPED(mt_to(cond, like->_dtype, NULL, 0, &r_)) : NULL;
}
static inline mt_tensor *f_where(scope *sc, mt_tensor *cond, mt_tensor *a, mt_tensor *b) {
  return cond && a && b ? SCOPED(mt_where(cond, a, b, NULL, &r_)) : NULL;
}

/* ---------------------------------------------------------------- shapes */
/* new tensors on the device of `like` */
static inline mt_tensor *f_full(scope *sc, const mt_tensor *like, const int64_t *sizes, int ndim, int dtype,
                                double value) {
  if (!like) return NULL;
  mt_device dev = mt_device_of(like);
  return SCOPED(mt_tensor_full(sizes, ndim, dtype, value, &dev, &r_));
}
static inline mt_tensor *f_zeros(scope *sc, const mt_tensor *like, const int64_t *sizes, int ndim, int dtype) {
  return f_full(sc, like, sizes, ndim, dtype, 0);
}
static inline mt_tensor *f_zeros_of(scope *sc, const mt_tensor *like, const mt_shape *s, int dtype) {
  return f_full(sc, like, s->sizes, s->ndim, dtype, 0);
}
static inline mt_tensor *f_reshape(scope *sc, mt_tensor *t, const int64_t *sizes, int ndim) {
  return t ? SCOPED(mt_reshape(t, sizes, ndim, &r_)) : NULL;
}
static inline mt_tensor *f_reshape_to(scope *sc, mt_tensor *t, const mt_shape *s) {
  return f_reshape(sc, t, s->sizes, s->ndim);
}
/* t as one dim */
static inline mt_tensor *f_flatten(scope *sc, mt_tensor *t) {
  if (!t) return NULL;
  int64_t n = t->_numel;
  return f_reshape(sc, t, &n, 1);
}
static inline mt_tensor *f_to_dtype(scope *sc, mt_tensor *t, int dtype) {
  if (!t || t->_dtype == dtype) return t;
  return SCOPED(mt_to(t, dtype, NULL, 0, &r_));
}
static inline mt_tensor *f_unsqueeze(scope *sc, mt_tensor *t, int dim) {
  return t ? SCOPED(mt_unsqueeze(t, dim, &r_)) : NULL;
}
static inline mt_tensor *f_squeeze(scope *sc, mt_tensor *t, int dim) {
  return t ? SCOPED(mt_squeeze(t, dim, 0, &r_)) : NULL;
}
static inline mt_tensor *f_transpose(scope *sc, mt_tensor *t, int d0, int d1) {
  return t ? SCOPED(mt_transpose(t, d0, d1, &r_)) : NULL;
}
/* the last two dims swapped */
static inline mt_tensor *f_transpose_last(scope *sc, mt_tensor *t) { return f_transpose(sc, t, -1, -2); }
static inline mt_tensor *f_permute(scope *sc, mt_tensor *t, const int64_t *dims, int ndim) {
  return t ? SCOPED(mt_permute(t, dims, ndim, &r_)) : NULL;
}
static inline mt_tensor *f_expand_to(scope *sc, mt_tensor *t, const mt_shape *s) {
  return t ? SCOPED(mt_expand(t, s->sizes, s->ndim, &r_)) : NULL;
}
static inline mt_tensor *f_narrow(scope *sc, mt_tensor *t, int dim, int64_t start, int64_t length) {
  return t ? SCOPED(mt_narrow(t, dim, start, length, &r_)) : NULL;
}
static inline mt_tensor *f_cat2(scope *sc, mt_tensor *a, mt_tensor *b, int dim) {
  if (!a || !b) return NULL;
  mt_tensor *ts[2] = {a, b};
  return SCOPED(mt_cat(ts, 2, dim, NULL, &r_));
}
static inline mt_tensor *f_flip_dim(scope *sc, mt_tensor *t, int64_t dim) {
  return t ? SCOPED(mt_flip(t, &dim, 1, &r_)) : NULL;
}
/* t padded with zeros at the end of every dim up to `s` (t no larger than s anywhere) */
mt_tensor *mt_pad_to(scope *sc, mt_tensor *t, const mt_shape *s);
static inline mt_tensor *f_pad_to(scope *sc, mt_tensor *t, const mt_shape *s) { return mt_pad_to(sc, t, s); }

/* ---------------------------------------------------------------- reductions, products */
static inline mt_tensor *f_sum_dims(scope *sc, mt_tensor *t, const int64_t *dims, int ndims, int keepdim) {
  return t ? SCOPED(mt_reduce(MT_OP_SUM, t, dims, ndims, keepdim, -1, 0, NULL, &r_)) : NULL;
}
static inline mt_tensor *f_sum_dim(scope *sc, mt_tensor *t, int64_t dim, int keepdim) {
  return f_sum_dims(sc, t, &dim, 1, keepdim);
}
static inline mt_tensor *f_cumulative(scope *sc, mt_tensor *t, int dim, int is_prod) {
  return t ? SCOPED(mt_cumulative(t, dim, is_prod, -1, NULL, &r_)) : NULL;
}
static inline mt_tensor *f_matmul(scope *sc, mt_tensor *a, mt_tensor *b) {
  return a && b ? SCOPED(mt_matmul(a, b, NULL, &r_)) : NULL;
}
/* Sum g down to a shape (undoing broadcasting): a new reference. */
mt_status mt_sum_to(mt_tensor *g, const int64_t *sizes, int ndim, mt_tensor **out);
static inline mt_tensor *f_sum_to(scope *sc, mt_tensor *g, const mt_shape *s) {
  return g ? SCOPED(mt_sum_to(g, s->sizes, s->ndim, &r_)) : NULL;
}
/* g summed down to an input's shape, or g itself when the input had the output's shape */
static inline mt_tensor *f_to_input(scope *sc, const mt_input_shape *k, mt_tensor *g) {
  return k->same ? g : f_sum_to(sc, g, &k->shape);
}
/* ... to input i of a binary op (mt_input_shapes) */
static inline mt_tensor *f_to_input_of(scope *sc, const mt_input_shapes *k, int i, mt_tensor *g) {
  return k->same[i] ? g : f_sum_to(sc, g, &k->shape[i]);
}

/* ---------------------------------------------------------------- positions */
/* int64 0, 1, 2, ... in t's shape (recorded nowhere): an op that moves elements, run on it,
 * tells where each output element came from. */
mt_status mt_grad_positions(const mt_tensor *t, mt_tensor **out);
/* The gradient of an op whose output elements are input elements: g added into zeros of the
 * input's shape at `pos` (each output element's flat position in the input; repeats add up). */
mt_tensor *mt_add_at_positions(scope *sc, mt_tensor *g, mt_tensor *pos, const mt_shape *input);
static inline mt_tensor *f_add_at_positions(scope *sc, mt_tensor *g, mt_tensor *pos, const mt_shape *input) {
  return mt_add_at_positions(sc, g, pos, input);
}

/* ---------------------------------------------------------------- the helpers in formulas */
#define BINARY(op, a, b) f_binary(sc, op, a, b)
#define BINARY_N(op, a, s) f_binary_number(sc, op, a, s)
#define UNARY(op, a, p1, p2) f_unary(sc, op, a, p1, p2)
#define MASK_AS(cond, like) f_mask_as(sc, cond, like)
#define WHERE(cond, a, b) f_where(sc, cond, a, b)
#define FULL(like, sizes, ndim, dtype, value) f_full(sc, like, sizes, ndim, dtype, value) /* on like's device */
#define ZEROS(like, sizes, ndim, dtype) f_zeros(sc, like, sizes, ndim, dtype)
#define ZEROS_OF(like, shape, dtype) f_zeros_of(sc, like, shape, dtype)
#define RESHAPE(t, sizes, ndim) f_reshape(sc, t, sizes, ndim)
#define RESHAPE_TO(t, shape) f_reshape_to(sc, t, shape)
#define FLATTEN(t) f_flatten(sc, t)
#define TO_DTYPE(t, dtype) f_to_dtype(sc, t, dtype)
#define UNSQUEEZE(t, dim) f_unsqueeze(sc, t, dim)
#define SQUEEZE(t, dim) f_squeeze(sc, t, dim)
#define TRANSPOSE(t, d0, d1) f_transpose(sc, t, d0, d1)
#define TRANSPOSE_LAST(t) f_transpose_last(sc, t)
#define PERMUTE(t, dims, ndim) f_permute(sc, t, dims, ndim)
#define EXPAND_TO(t, shape) f_expand_to(sc, t, shape)
#define NARROW(t, dim, start, length) f_narrow(sc, t, dim, start, length)
#define CAT2(a, b, dim) f_cat2(sc, a, b, dim)
#define FLIP_DIM(t, dim) f_flip_dim(sc, t, dim)
#define PAD_TO(t, shape) f_pad_to(sc, t, shape)
#define SUM_DIMS(t, dims, ndims, keepdim) f_sum_dims(sc, t, dims, ndims, keepdim)
#define SUM_DIM(t, dim, keepdim) f_sum_dim(sc, t, dim, keepdim)
#define CUMULATIVE(t, dim, is_prod) f_cumulative(sc, t, dim, is_prod)
#define MATMUL(a, b) f_matmul(sc, a, b)
#define SUM_TO(g, shape) f_sum_to(sc, g, shape)
#define TO_INPUT(k, g) f_to_input(sc, k, g)
#define TO_INPUT_OF(k, i, g) f_to_input_of(sc, k, i, g)
#define ADD_AT_POSITIONS(g, pos, input) f_add_at_positions(sc, g, pos, input)

#endif
