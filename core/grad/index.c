/* index.c -- autograd for indexing: cat, stack, index_select, gather, masked_fill, the writes at
 * indices (scatter, index_add, index_copy_, index_fill_, masked_scatter_, index_put_),
 * masked_select, advanced indexing, diag, tril/triu. */
#include "grad.h"

/* ---------------------------------------------------------------- cat, stack */
static mt_status grad_cat(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "cat"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_cat(ts, n, dim, NULL, &r)));
  int d = dim < 0 ? dim + r->_ndim : dim;
  mt_status s = mt_record_cat(ts, n, d, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status grad_stack(mt_tensor **ts, int n, int dim, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "stack"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_stack(ts, n, dim, NULL, &r)));
  int d = dim < 0 ? dim + r->_ndim : dim;
  mt_status s = mt_record_stack(ts, n, d, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- index_select, gather */
/* index_select / gather: the backward needs the index 0-based as int64 */
static mt_status record_indexed(mt_tensor *a, int dim, mt_tensor *index, int64_t base, int gather, mt_tensor *r) {
  mt_tensor *i64 = NULL, *i0 = NULL;
  mt_status s = MT_NOGRAD(mt_to_dtype(index, MT_INT64, 0, &i64));
  if (s == MT_OK) s = MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i64, (double)base, 1, 0, NULL, &i0));
  if (s == MT_OK) s = mt_record_index(a, dim < 0 ? dim + a->_ndim : dim, i0, gather, r);
  mt_tensor_release(i64);
  mt_tensor_release(i0);
  return s;
}

static mt_status grad_index_select(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out,
                                   mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "index_select"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_index_select(a, dim, index, base, NULL, &r)));
  mt_status s = record_indexed(a, dim, index, base, 0, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status grad_gather(mt_tensor *a, int dim, mt_tensor *index, int64_t base, mt_tensor *out,
                             mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "gather"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_gather(a, dim, index, base, NULL, &r)));
  mt_status s = record_indexed(a, dim, index, base, 1, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status grad_masked_fill(mt_tensor *a, mt_tensor *mask, double value, mt_tensor *out, mt_tensor **result) {
  if (out == a) MT_TRY(mt_grad_check_inplace(a, "masked_fill_"));
  else MT_TRY(mt_grad_check_out(out, true, "masked_fill"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_masked_fill(a, mask, value, out, &r)));
  mt_status s = mt_record_masked_fill(a, mask, r);
  if (s) { mt_tensor_release(r); return s; }
  if (out) { mt_tensor_release(r); if (result) *result = mt_tensor_retain(out); return MT_OK; }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- writes at indices */
/* an index tensor 0-based as int64 (a new reference) */
static mt_status index0(mt_tensor *index, int64_t base, mt_tensor **out) {
  mt_tensor *i64 = NULL;
  mt_status s = MT_NOGRAD(mt_to_dtype(index, MT_INT64, 1, &i64));
  if (s == MT_OK && base) {
    s = MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i64, (double)base, 1, 0, NULL, out));
    mt_tensor_release(i64);
    return s;
  }
  if (s == MT_OK) *out = i64;
  return s;
}
static int wrap0(int dim, const mt_tensor *a) { return dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim; }

/* in place on a (out == a) or out of place (out NULL) with recording: refuse leaves, views and out= */
static mt_status check_write(mt_tensor *a, mt_tensor *out, const char *op_, const char *op) {
  if (out == a) {
    MT_TRY(mt_grad_check_inplace(a, op_));
    return mt_grad_check_whole_write(a, op_);
  }
  return mt_grad_check_out(out, true, op);
}

/* run `call` (writing its result through &r_) without recording, then `record` (may use r_, i0) */
#define WRITE_OP(call, record)                                  \
  do {                                                          \
    mt_tensor *r_ = NULL, *i0 = NULL;                           \
    MT_TRY(MT_NOGRAD(call));                                    \
    mt_status s_ = index ? index0(index, base, &i0) : MT_OK;    \
    if (s_ == MT_OK) s_ = (record);                             \
    mt_tensor_release(i0);                                      \
    if (s_) { mt_tensor_release(r_); return s_; }               \
    return mt_give(r_, result);                                 \
  } while (0)

static mt_status grad_scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double value, int reduce,
                              int64_t base, mt_tensor *out, mt_tensor **result) {
  const char *op = reduce == 1 && src ? "scatter_add" : "scatter";
  MT_TRY(check_write(a, out, reduce == 1 && src ? "scatter_add_" : "scatter_", op));
  if (reduce == 2 || (reduce == 1 && !src))
    return mt_error(MT_ENOTIMPL, "%s: scatter with reduce='%s' is not differentiable (in PyTorch neither)", op,
                    reduce == 2 ? "multiply" : "add");
  int kind = !src ? MT_SC_VALUE : reduce == 1 ? MT_SC_ADD_SRC : MT_SC_SRC;
  WRITE_OP(mt_scatter(a, dim, index, src, value, reduce, base, out, &r_),
           mt_record_scatter(a, wrap0(dim, a), i0, src, kind, r_));
}
static mt_status grad_index_add(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha, int64_t base,
                                mt_tensor *out, mt_tensor **result) {
  MT_TRY(check_write(a, out, "index_add_", "index_add"));
  WRITE_OP(mt_index_add(a, dim, index, src, alpha, base, out, &r_),
           mt_record_index_write(0, a, wrap0(dim, a), i0, src, alpha, r_));
}
static mt_status grad_index_copy_(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int64_t base) {
  MT_TRY(check_write(a, a, "index_copy_", "index_copy_"));
  mt_tensor **result = NULL;
  WRITE_OP(mt_index_copy_(a, dim, index, src, base), mt_record_index_write(1, a, wrap0(dim, a), i0, src, 1, a));
}
static mt_status grad_index_fill_(mt_tensor *a, int dim, mt_tensor *index, double value, int64_t base) {
  MT_TRY(check_write(a, a, "index_fill_", "index_fill_"));
  mt_tensor **result = NULL;
  WRITE_OP(mt_index_fill_(a, dim, index, value, base), mt_record_index_write(2, a, wrap0(dim, a), i0, NULL, 0, a));
}
static mt_status grad_masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out,
                                         mt_tensor **result) {
  MT_TRY(check_write(a, out, "masked_fill_", "masked_fill"));
  mt_tensor *index = NULL;
  int64_t base = 0;
  WRITE_OP(mt_masked_fill_tensor(a, mask, value, out, &r_), mt_record_masked_fill_tensor(a, mask, value, r_));
}
static mt_status grad_masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor **result) {
  mt_tensor *index = NULL;
  int64_t base = 0;
  WRITE_OP(mt_masked_select(a, mask, &r_), mt_record_masked_select(a, mask, r_));
}
static mt_status grad_masked_scatter_(mt_tensor *a, mt_tensor *mask, mt_tensor *src) {
  MT_TRY(check_write(a, a, "masked_scatter_", "masked_scatter_"));
  mt_tensor *index = NULL, **result = NULL;
  int64_t base = 0;
  WRITE_OP(mt_masked_scatter_(a, mask, src), mt_record_masked_scatter(a, mask, src, a));
}

/* ---------------------------------------------------------------- advanced indexing, diag, tril/triu */
/* advanced indexing: the same indexing of a's positions tells the backward where elements came from */
static mt_status grad_index(mt_tensor *a, mt_tensor **indices, int n, int64_t base, mt_tensor **result) {
  mt_tensor *pos = NULL, *p = NULL, *r = NULL;
  MT_TRY(MT_NOGRAD(mt_index(a, indices, n, base, &r)));
  mt_status s = mt_grad_positions(a, &pos);
  if (s == MT_OK) s = MT_NOGRAD(mt_index(pos, indices, n, base, &p));
  if (s == MT_OK) s = mt_record_gather_flat(MT_GF_INDEX, a, p, 0, r);
  mt_tensor_release(pos);
  mt_tensor_release(p);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}
static mt_status grad_index_put_(mt_tensor *a, mt_tensor **indices, int n, mt_tensor *values, int accumulate,
                                 int64_t base) {
  MT_TRY(check_write(a, a, "index_put_", "index_put_"));
  mt_tensor *pos = NULL, *p = NULL;
  mt_status s = mt_grad_positions(a, &pos);
  if (s == MT_OK) s = MT_NOGRAD(mt_index(pos, indices, n, base, &p));
  if (s == MT_OK) s = MT_NOGRAD(mt_index_put_(a, indices, n, values, accumulate, base));
  if (s == MT_OK) s = mt_record_index_put(a, values, p, accumulate, a);
  mt_tensor_release(pos);
  mt_tensor_release(p);
  return s;
}
static mt_status grad_diag(mt_tensor *a, int64_t diagonal, mt_tensor **result) {
  mt_tensor *pos = NULL, *p = NULL, *r = NULL;
  MT_TRY(MT_NOGRAD(mt_diag(a, diagonal, &r)));
  mt_status s = MT_OK;
  if (a->_ndim == 2) {
    s = mt_grad_positions(a, &pos);
    if (s == MT_OK) s = MT_NOGRAD(mt_diag(pos, diagonal, &p));
  }
  if (s == MT_OK) s = mt_record_gather_flat(MT_GF_DIAG, a, p, diagonal, r);
  mt_tensor_release(pos);
  mt_tensor_release(p);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}
static mt_status grad_triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out, mt_tensor **result) {
  MT_TRY(check_write(a, out, upper ? "triu_" : "tril_", upper ? "triu" : "tril"));
  mt_tensor *index = NULL;
  int64_t base = 0;
  WRITE_OP(mt_triangle(a, diagonal, upper, out, &r_), mt_record_triangle(a, diagonal, upper, r_));
}

void mt_grad_register_index(mt_autograd_ops *t) {
  t->cat = grad_cat;
  t->stack = grad_stack;
  t->index_select = grad_index_select;
  t->gather = grad_gather;
  t->masked_fill = grad_masked_fill;
  t->scatter = grad_scatter;
  t->index_add = grad_index_add;
  t->index_copy_ = grad_index_copy_;
  t->index_fill_ = grad_index_fill_;
  t->masked_fill_tensor = grad_masked_fill_tensor;
  t->masked_select = grad_masked_select;
  t->masked_scatter_ = grad_masked_scatter_;
  t->index = grad_index;
  t->index_put_ = grad_index_put_;
  t->diag = grad_diag;
  t->triangle = grad_triangle;
}
