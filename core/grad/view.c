/* view.c -- autograd for the views: each wrapper runs the front door with grad mode off, then
 * records how to map the gradient back to the input. */
#include "grad.h"

/* run `call` (writing *out) without recording, then `record`; on failure *out is released */
#define VIEW_OP(call, record)                          \
  do {                                                 \
    MT_TRY(MT_NOGRAD(call));                           \
    mt_status rs_ = (record);                          \
    if (rs_) { mt_tensor_release(*out); *out = NULL; } \
    return rs_;                                        \
  } while (0)

static mt_status grad_view(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  VIEW_OP(mt_view(t, sizes, ndim, out), mt_record_reshape(MT_RS_VIEW, t, *out));
}
static mt_status grad_reshape(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  VIEW_OP(mt_reshape(t, sizes, ndim, out),
          mt_record_reshape((*out)->_storage == t->_storage ? MT_RS_VIEW : MT_RS_RESHAPE_COPY, t, *out));
}
static mt_status grad_flatten(mt_tensor *t, int start_dim, int end_dim, mt_tensor **out) {
  VIEW_OP(mt_flatten(t, start_dim, end_dim, out), mt_record_reshape(MT_RS_FLATTEN, t, *out));
}
static mt_status grad_unsqueeze(mt_tensor *t, int dim, mt_tensor **out) {
  VIEW_OP(mt_unsqueeze(t, dim, out), mt_record_reshape(MT_RS_UNSQUEEZE, t, *out));
}
static mt_status grad_squeeze(mt_tensor *t, int dim, int all, mt_tensor **out) {
  VIEW_OP(mt_squeeze(t, dim, all, out), mt_record_reshape(all ? MT_RS_SQUEEZE : MT_RS_SQUEEZE_DIM, t, *out));
}
static mt_status grad_transpose(mt_tensor *t, int d0, int d1, mt_tensor **out) {
  VIEW_OP(mt_transpose(t, d0, d1, out), mt_record_transpose(t, d0, d1, 0, *out));
}
static mt_status grad_permute(mt_tensor *t, const int64_t *dims, int ndim, mt_tensor **out) {
  VIEW_OP(mt_permute(t, dims, ndim, out), mt_record_permute(t, dims, ndim, *out));
}
static mt_status grad_expand(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  VIEW_OP(mt_expand(t, sizes, ndim, out), mt_record_expand(t, *out));
}
static mt_status grad_select(mt_tensor *t, int dim, int64_t index, mt_tensor **out) {
  VIEW_OP(mt_select(t, dim, index, out), ({
            int d_ = dim < 0 ? dim + t->_ndim : dim;
            mt_record_select(t, d_, index < 0 ? index + t->_sizes[d_] : index, *out);
          }));
}
static mt_status grad_slice(mt_tensor *t, int dim, int64_t start, int64_t stop, int64_t step, mt_tensor **out) {
  VIEW_OP(mt_slice(t, dim, start, stop, step, out), ({
            int d_ = dim < 0 ? dim + t->_ndim : dim;
            int64_t n_ = t->_sizes[d_], s0_ = start < 0 ? start + n_ : start;
            if (s0_ < 0) s0_ = 0;
            if (s0_ > n_) s0_ = n_;
            mt_record_slice(t, d_, s0_, s0_ + (*out)->_sizes[d_] * step, step, *out);
          }));
}
static mt_status grad_narrow(mt_tensor *t, int dim, int64_t start, int64_t length, mt_tensor **out) {
  VIEW_OP(mt_narrow(t, dim, start, length, out), ({
            int d_ = dim < 0 ? dim + t->_ndim : dim;
            int64_t s0_ = start < 0 ? start + t->_sizes[d_] : start;
            mt_record_slice(t, d_, s0_, s0_ + length, 1, *out);
          }));
}

/* The views below move elements about: the same view of t's positions (mt_grad_positions)
 * tells the backward where each element came from. */
static mt_status record_moved(int kind, mt_tensor *t, mt_tensor *pos, mt_tensor *out) {
  mt_tensor *c = NULL;
  mt_status s = MT_NOGRAD(mt_clone(pos, &c)); /* its own compact storage */
  if (s == MT_OK) s = mt_record_gather_flat(kind, t, c, 0, out);
  mt_tensor_release(c);
  mt_tensor_release(pos);
  return s;
}
#define MOVED_VIEW(kind, call_t, call_p)                    \
  do {                                                      \
    MT_TRY(MT_NOGRAD(call_t));                              \
    mt_tensor *p_ = NULL, *pv_ = NULL;                      \
    mt_status s_ = mt_grad_positions(t, &p_);               \
    if (s_ == MT_OK) s_ = MT_NOGRAD(call_p);                \
    mt_tensor_release(p_);                                  \
    if (s_ == MT_OK) s_ = record_moved(kind, t, pv_, *out); \
    if (s_) { mt_tensor_release(*out); *out = NULL; }       \
    return s_;                                              \
  } while (0)

static mt_status grad_unfold(mt_tensor *t, int dim, int64_t size, int64_t step, mt_tensor **out) {
  MOVED_VIEW(MT_GF_UNFOLD, mt_unfold(t, dim, size, step, out), mt_unfold(p_, dim, size, step, &pv_));
}
static mt_status grad_diagonal(mt_tensor *t, int64_t offset, int d0, int d1, mt_tensor **out) {
  MOVED_VIEW(MT_GF_DIAGONAL, mt_diagonal(t, offset, d0, d1, out), mt_diagonal(p_, offset, d0, d1, &pv_));
}

/* as_strided addresses t's storage: a map of that storage holding t's positions (-1 elsewhere)
 * viewed the same way; an element outside t cannot get a gradient. */
static mt_status as_strided_positions(mt_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim,
                                      int64_t offset, mt_tensor **pos) {
  int64_t len = (int64_t)(t->_storage->_nbytes / mt_itemsize(t->_dtype));
  mt_tensor *map, *in_t = NULL, *mine = NULL, *v = NULL, *c = NULL;
  MT_TRY(mt_tensor_full(&len, 1, MT_INT64, -1, &map));
  mt_status s = mt_as_strided(map, t->_sizes, t->_strides, t->_ndim, t->_offset, &in_t);
  if (s == MT_OK) s = mt_grad_positions(t, &mine);
  if (s == MT_OK) s = mt_copy_(in_t, mine);
  if (s == MT_OK) s = mt_as_strided(map, sizes, strides, ndim, offset < 0 ? t->_offset : offset, &v);
  if (s == MT_OK) s = mt_clone(v, &c);
  if (s == MT_OK) {
    const int64_t *p = (const int64_t *)c->_data;
    for (int64_t i = 0; i < c->_numel; i++)
      if (p[i] < 0) {
        s = mt_error(MT_EINVAL, "as_strided: the view reaches storage outside its input, whose elements cannot "
                                "get a gradient (take as_strided of the base tensor)");
        break;
      }
  }
  mt_tensor_release(map);
  mt_tensor_release(in_t);
  mt_tensor_release(mine);
  mt_tensor_release(v);
  if (s) { mt_tensor_release(c); return s; }
  *pos = c;
  return MT_OK;
}

static mt_status grad_as_strided(mt_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim, int64_t offset,
                                 mt_tensor **out) {
  MT_TRY(MT_NOGRAD(mt_as_strided(t, sizes, strides, ndim, offset, out)));
  mt_tensor *pos = NULL;
  mt_status s = MT_NOGRAD(as_strided_positions(t, sizes, strides, ndim, offset, &pos));
  if (s == MT_OK) s = mt_record_gather_flat(MT_GF_AS_STRIDED, t, pos, 0, *out);
  mt_tensor_release(pos);
  if (s) { mt_tensor_release(*out); *out = NULL; }
  return s;
}

void mt_grad_register_view(mt_autograd_ops *t) {
  t->view = grad_view;
  t->reshape = grad_reshape;
  t->flatten = grad_flatten;
  t->unsqueeze = grad_unsqueeze;
  t->squeeze = grad_squeeze;
  t->transpose = grad_transpose;
  t->permute = grad_permute;
  t->expand = grad_expand;
  t->select = grad_select;
  t->slice = grad_slice;
  t->narrow = grad_narrow;
  t->unfold = grad_unfold;
  t->diagonal = grad_diagonal;
  t->as_strided = grad_as_strided;
}
