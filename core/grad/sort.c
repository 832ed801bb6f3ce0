/* sort.c -- autograd for sort, topk and the rearranging copies (flip, roll, repeat,
 * repeat_interleave). */
#include "grad.h"

/* sort / topk: the values record where they came from (the indices, 0-based) */
static mt_status record_sorted(mt_tensor *a, int dim, int64_t base, int topk, mt_tensor *v, mt_tensor *i) {
  mt_tensor *i0 = NULL;
  int d = dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim;
  mt_status s = base ? MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i, (double)base, 1, 0, NULL, &i0))
                     : (i0 = mt_tensor_retain(i), MT_OK);
  if (s == MT_OK) s = mt_record_sort(a, d, i0, topk, v);
  mt_tensor_release(i0);
  return s;
}

static mt_status grad_sort(mt_tensor *a, int dim, int descending, int stable, int64_t index_base, mt_tensor **values,
                           mt_tensor **indices) {
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(mt_sort(a, dim, descending, stable, index_base, &v, &i)));
  mt_status s = record_sorted(a, dim, index_base, 0, v, i);
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}

static mt_status grad_topk(mt_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base,
                           mt_tensor **values, mt_tensor **indices) {
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(mt_topk(a, k, dim, largest, sorted, index_base, &v, &i)));
  mt_status s = record_sorted(a, dim, index_base, 1, v, i);
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}

/* run `call` (writing through &r_) without recording, then `record` */
#define RECORDED(call, record)                    \
  do {                                            \
    mt_tensor *r_ = NULL;                         \
    MT_TRY(MT_NOGRAD(call));                      \
    mt_status s_ = record;                        \
    if (s_) { mt_tensor_release(r_); return s_; } \
    return mt_give(r_, result);                   \
  } while (0)

static mt_status grad_flip(mt_tensor *a, const int64_t *dims, int n, mt_tensor **result) {
  RECORDED(mt_flip(a, dims, n, &r_), mt_record_flip(a, dims, n, r_));
}
static mt_status grad_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int n, mt_tensor **result) {
  RECORDED(mt_roll(a, shifts, dims, n, &r_), mt_record_roll(a, shifts, dims, n, r_));
}
static mt_status grad_repeat(mt_tensor *a, const int64_t *repeats, int n, mt_tensor **result) {
  RECORDED(mt_repeat(a, repeats, n, &r_), mt_record_repeat(a, repeats, n, r_));
}

/* repeat_interleave records as PyTorch does: an index_select (IndexSelectBackward0), over the
 * flattened input when dim says so */
static mt_status grad_repeat_interleave(mt_tensor *a, int64_t repeats, int dim, mt_tensor **result) {
  int lim = a->_ndim ? a->_ndim : 1;
  mt_tensor *src = NULL, *idx = NULL, *r = NULL;
  mt_status s;
  int d = dim;
  if (dim < -lim) {
    int64_t m = a->_numel;
    s = mt_reshape(a, &m, 1, &src);
    d = 0;
  } else {
    if (a->_ndim == 0) return MT_NOGRAD(mt_repeat_interleave(a, repeats, dim, result)); /* its error */
    s = mt_wrap_dim(dim, a->_ndim, "repeat_interleave", &d);
    if (s == MT_OK) src = mt_tensor_retain(a);
  }
  if (s == MT_OK) {
    int64_t len = src->_sizes[d];
    if (repeats && len > INT64_MAX / repeats) s = mt_error(MT_EINVAL, "repeat_interleave: result size overflows");
    else {
      /* the source positions 0, 0, ..., 1, 1, ...: each one `repeats` times */
      mt_tensor *pos = NULL;
      s = MT_NOGRAD(mt_arange(0, (double)len, 1, MT_INT64, &pos));
      if (s == MT_OK) s = MT_NOGRAD(mt_repeat_interleave(pos, repeats, 0, &idx));
      mt_tensor_release(pos);
    }
  }
  if (s == MT_OK) s = mt_index_select(src, d, idx, 0, NULL, &r);
  mt_tensor_release(src);
  mt_tensor_release(idx);
  if (s) return s;
  return mt_give(r, result);
}

void mt_grad_register_sort(mt_autograd_ops *t) {
  t->sort = grad_sort;
  t->topk = grad_topk;
  t->flip = grad_flip;
  t->roll = grad_roll;
  t->repeat = grad_repeat;
  t->repeat_interleave = grad_repeat_interleave;
}
