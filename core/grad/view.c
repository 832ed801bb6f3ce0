/* view.c -- autograd for the views (core/ops/view.c): reshapes, transpose, permute, expand,
 * select, slice, and the views that move elements about (as_strided, unfold, diagonal). Nodes of
 * views are marked as such: writing into a view in place is refused while autograd records. */
#include "formula.h"

/* run `call` (writing *out) without recording, then `record`; on failure *out is released */
#define VIEW_OP(call, record)                          \
  do {                                                 \
    MT_TRY(MT_NOGRAD(call));                           \
    mt_status rs_ = (record);                          \
    if (rs_) { mt_tensor_release(*out); *out = NULL; } \
    return rs_;                                        \
  } while (0)

/* ---------------------------------------------------------------- reshapes */
/* view, reshape, unsqueeze, squeeze, flatten: the gradient reshaped back to the input's shape.
 * Named as PyTorch 1.13: a reshape (or flatten) that can view is its _reshape_alias, one that copies
 * its _unsafe_view of a clone. */
enum { RS_VIEW, RS_UNSQUEEZE, RS_SQUEEZE, RS_SQUEEZE_DIM, RS_RESHAPE_ALIAS, /* views */ RS_RESHAPE_COPY, RS_FLATTEN_ALIAS,
       RS_FLATTEN_COPY };
typedef struct reshape_node {
  int32_t how; /* RS_*: only for the name PyTorch prints */
  mt_shape in;
} reshape_node;
MT_NODE_DATA_FITS(reshape_node);

static const char *const reshape_names_by_how[] = {
    [RS_VIEW] = "ViewBackward0",           [RS_UNSQUEEZE] = "UnsqueezeBackward0",
    [RS_SQUEEZE] = "SqueezeBackward0",     [RS_SQUEEZE_DIM] = "SqueezeBackward1",
    [RS_RESHAPE_ALIAS] = "ReshapeAliasBackward0", [RS_RESHAPE_COPY] = "UnsafeViewBackward0",
    [RS_FLATTEN_ALIAS] = "ReshapeAliasBackward0", [RS_FLATTEN_COPY] = "UnsafeViewBackward0"};
static const char *reshape_name_of(const mt_node *n) { return reshape_names_by_how[NODE_DATA(n, reshape_node)->how]; }
static const char *reshape_names(int i) {
  return i < (int)(sizeof reshape_names_by_how / sizeof *reshape_names_by_how) ? reshape_names_by_how[i] : NULL;
}

static mt_status reshape_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const mt_shape *in = &NODE_DATA(n, reshape_node)->in;
  return mt_reshape(g, in->sizes, in->ndim, &gin[0]);
}

/* a reshape that viewed its input, and one that copied it (or a flatten: not a view to autograd) */
static const mt_node_kind reshape_kind = {
    .name_of = reshape_name_of, .names = reshape_names, .backward = reshape_backward, .view = 1};
static const mt_node_kind reshape_copy_kind = {.name_of = reshape_name_of, .backward = reshape_backward};

static mt_status record_reshape(int how, mt_tensor *a, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(how < RS_RESHAPE_COPY ? &reshape_kind : &reshape_copy_kind, &a, 1, 1, &n));
  reshape_node *d = NODE_DATA(n, reshape_node);
  d->how = how;
  mt_shape_of(&d->in, a);
  return mt_node_attach_new(n, out);
}

static mt_status grad_view(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  VIEW_OP(mt_view(t, sizes, ndim, out), record_reshape(RS_VIEW, t, *out));
}
static mt_status grad_reshape(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  VIEW_OP(mt_reshape(t, sizes, ndim, out),
          record_reshape((*out)->_storage == t->_storage ? RS_RESHAPE_ALIAS : RS_RESHAPE_COPY, t, *out));
}
static mt_status grad_flatten(mt_tensor *t, int start_dim, int end_dim, mt_tensor **out) {
  VIEW_OP(mt_flatten(t, start_dim, end_dim, out),
          record_reshape((*out)->_storage == t->_storage ? RS_FLATTEN_ALIAS : RS_FLATTEN_COPY, t, *out));
}
static mt_status grad_unsqueeze(mt_tensor *t, int dim, mt_tensor **out) {
  VIEW_OP(mt_unsqueeze(t, dim, out), record_reshape(RS_UNSQUEEZE, t, *out));
}
static mt_status grad_squeeze(mt_tensor *t, int dim, int all, mt_tensor **out) {
  VIEW_OP(mt_squeeze(t, dim, all, out), record_reshape(all ? RS_SQUEEZE : RS_SQUEEZE_DIM, t, *out));
}

/* ---------------------------------------------------------------- transpose, permute, expand */
typedef struct transpose_node {
  int32_t d0, d1;
} transpose_node;
MT_NODE_DATA_FITS(transpose_node);

static mt_status transpose_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const transpose_node *d = NODE_DATA(n, transpose_node);
  return mt_transpose(g, d->d0, d->d1, &gin[0]);
}
static const mt_node_kind transpose_kind = {.name = "TransposeBackward0", .backward = transpose_backward, .view = 1};

static mt_status grad_transpose(mt_tensor *t, int d0, int d1, mt_tensor **out) {
  VIEW_OP(mt_transpose(t, d0, d1, out), ({
            mt_node *n_;
            mt_status s_ = mt_node_make(&transpose_kind, &t, 1, 1, &n_);
            if (s_ == MT_OK) {
              *NODE_DATA(n_, transpose_node) = (transpose_node){d0, d1};
              s_ = mt_node_attach_new(n_, *out);
            }
            s_;
          }));
}

typedef struct permute_node {
  int32_t ndim;
  int64_t dims[MT_MAX_DIMS]; /* wrapped */
} permute_node;
MT_NODE_DATA_FITS(permute_node);

static mt_status permute_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const permute_node *d = NODE_DATA(n, permute_node);
  int64_t inv[MT_MAX_DIMS];
  for (int i = 0; i < d->ndim; i++) inv[d->dims[i]] = i;
  return mt_permute(g, inv, d->ndim, &gin[0]);
}
static const mt_node_kind permute_kind = {.name = "PermuteBackward0", .backward = permute_backward, .view = 1};

static mt_status grad_permute(mt_tensor *t, const int64_t *dims, int ndim, mt_tensor **out) {
  VIEW_OP(mt_permute(t, dims, ndim, out), ({
            mt_node *n_;
            mt_status s_ = mt_node_make(&permute_kind, &t, 1, 1, &n_);
            if (s_ == MT_OK) {
              permute_node *d_ = NODE_DATA(n_, permute_node);
              d_->ndim = ndim;
              for (int i = 0; i < ndim; i++) d_->dims[i] = dims[i] < 0 ? dims[i] + ndim : dims[i];
              s_ = mt_node_attach_new(n_, *out);
            }
            s_;
          }));
}

typedef struct expand_node {
  mt_shape in;
} expand_node;
MT_NODE_DATA_FITS(expand_node);

static mt_status expand_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const mt_shape *in = &NODE_DATA(n, expand_node)->in;
  return mt_sum_to(g, in->sizes, in->ndim, &gin[0]);
}
static const mt_node_kind expand_kind = {.name = "ExpandBackward0", .backward = expand_backward, .view = 1};

static mt_status grad_expand(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out) {
  VIEW_OP(mt_expand(t, sizes, ndim, out), ({
            mt_node *n_;
            mt_status s_ = mt_node_make(&expand_kind, &t, 1, 1, &n_);
            if (s_ == MT_OK) {
              mt_shape_of(&NODE_DATA(n_, expand_node)->in, t);
              s_ = mt_node_attach_new(n_, *out);
            }
            s_;
          }));
}

/* ---------------------------------------------------------------- select, slice */
/* the gradient lands in zeros of the input's shape, at what the view took */
typedef struct select_node {
  int32_t dim;
  int64_t index; /* wrapped */
  mt_shape in;
} select_node;
MT_NODE_DATA_FITS(select_node);

typedef struct slice_node {
  int32_t dim;
  int64_t start, stop, step; /* clamped into the dim */
  mt_shape in;
} slice_node;
MT_NODE_DATA_FITS(slice_node);

/* zeros of the input's shape with g copied into the view select or slice takes of them */
static mt_status into_zeros(mt_tensor *g, const mt_shape *in, const select_node *sel, const slice_node *sl,
                            mt_tensor **gin) {
  mt_tensor *z, *v;
  mt_device dev = mt_device_of(g);
  MT_TRY(mt_tensor_full(in->sizes, in->ndim, g->_dtype, 0, &dev, &z));
  if (mt_grad_mode) {
    /* under create_graph the result must stay a function of g (a gradient taken of it reaches
     * grad_outputs): g is added into the zeros by a recorded index_add at the positions the view
     * took, not copied in unrecorded */
    int dim = sel ? sel->dim : sl->dim;
    mt_tensor *idx = NULL, *src = NULL;
    mt_status s = sel ? mt_arange((double)sel->index, (double)sel->index + 1, 1, MT_INT64, &dev, &idx)
                      : mt_arange((double)sl->start, (double)sl->stop, (double)sl->step, MT_INT64, &dev, &idx);
    if (s == MT_OK) s = sel ? mt_unsqueeze(g, dim, &src) : (src = mt_tensor_retain(g), MT_OK);
    if (s == MT_OK) s = mt_index_add(z, dim, idx, src, 1.0, 0, NULL, gin);
    if (idx) mt_tensor_release(idx);
    if (src) mt_tensor_release(src);
    mt_tensor_release(z);
    return s;
  }
  mt_status s = sel ? mt_select(z, sel->dim, sel->index, &v) : mt_slice(z, sl->dim, sl->start, sl->stop, sl->step, &v);
  if (s == MT_OK) {
    s = MT_NOGRAD(mt_copy_(v, g));
    mt_tensor_release(v);
  }
  if (s) { mt_tensor_release(z); return s; }
  *gin = z;
  return MT_OK;
}

static mt_status select_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const select_node *d = NODE_DATA(n, select_node);
  return into_zeros(g, &d->in, d, NULL, &gin[0]);
}
static mt_status slice_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const slice_node *d = NODE_DATA(n, slice_node);
  return into_zeros(g, &d->in, NULL, d, &gin[0]);
}
static const mt_node_kind select_kind = {.name = "SelectBackward0", .backward = select_backward, .view = 1};
static const mt_node_kind slice_kind = {.name = "SliceBackward0", .backward = slice_backward, .view = 1};

static mt_status record_select(mt_tensor *a, int dim, int64_t index, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(&select_kind, &a, 1, 1, &n));
  select_node *d = NODE_DATA(n, select_node);
  d->dim = dim;
  d->index = index;
  mt_shape_of(&d->in, a);
  return mt_node_attach_new(n, out);
}

static mt_status record_slice(mt_tensor *a, int dim, int64_t start, int64_t stop, int64_t step, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(&slice_kind, &a, 1, 1, &n));
  slice_node *d = NODE_DATA(n, slice_node);
  d->dim = dim;
  d->start = start;
  d->stop = stop;
  d->step = step;
  mt_shape_of(&d->in, a);
  return mt_node_attach_new(n, out);
}

static mt_status grad_select(mt_tensor *t, int dim, int64_t index, mt_tensor **out) {
  VIEW_OP(mt_select(t, dim, index, out), ({
            int d_ = dim < 0 ? dim + t->_ndim : dim;
            record_select(t, d_, index < 0 ? index + t->_sizes[d_] : index, *out);
          }));
}
static mt_status grad_slice(mt_tensor *t, int dim, int64_t start, int64_t stop, int64_t step, mt_tensor **out) {
  VIEW_OP(mt_slice(t, dim, start, stop, step, out), ({
            int d_ = dim < 0 ? dim + t->_ndim : dim;
            int64_t n_ = t->_sizes[d_], s0_ = start < 0 ? start + n_ : start;
            if (s0_ < 0) s0_ = 0;
            if (s0_ > n_) s0_ = n_;
            record_slice(t, d_, s0_, s0_ + (*out)->_sizes[d_] * step, step, *out);
          }));
}
static mt_status grad_narrow(mt_tensor *t, int dim, int64_t start, int64_t length, mt_tensor **out) {
  VIEW_OP(mt_narrow(t, dim, start, length, out), ({
            int d_ = dim < 0 ? dim + t->_ndim : dim;
            int64_t s0_ = start < 0 ? start + t->_sizes[d_] : start;
            record_slice(t, d_, s0_, s0_ + length, 1, *out);
          }));
}

/* ---------------------------------------------------------------- views that move elements */
/* as_strided, unfold, diagonal: the same view of t's positions (mt_grad_positions) tells the
 * backward where each element came from; the gradient is added back there */
typedef struct moved_node {
  mt_saved pos; /* each output element's flat position in the input (int64, the output's shape) */
  mt_shape in;
} moved_node;
MT_NODE_DATA_FITS(moved_node);

static mt_status moved_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  moved_node *d = NODE_DATA(n, moved_node);
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *r = ADD_AT_POSITIONS(g, saved(sc, n, &d->pos), &d->in);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}
static const mt_node_kind as_strided_kind = {
    .name = "AsStridedBackward0", .backward = moved_backward, .nsaved = 1, .view = 1};
static const mt_node_kind unfold_kind = {.name = "UnfoldBackward0", .backward = moved_backward, .nsaved = 1, .view = 1};
static const mt_node_kind diagonal_kind = {
    .name = "DiagonalBackward0", .backward = moved_backward, .nsaved = 1, .view = 1};

/* pos: the positions viewed as out is (consumed) */
static mt_status record_moved(const mt_node_kind *kind, mt_tensor *t, mt_tensor *pos, mt_tensor *out) {
  mt_tensor *c = NULL;
  mt_status s = MT_NOGRAD(mt_clone(pos, &c)); /* its own compact storage */
  mt_tensor_release(pos);
  mt_node *n;
  if (s == MT_OK && mt_is_float(out->_dtype) && (s = mt_node_make(kind, &t, 1, 1, &n)) == MT_OK) {
    moved_node *d = NODE_DATA(n, moved_node);
    mt_shape_of(&d->in, t);
    mt_node_save(n, &d->pos, c);
    s = mt_node_attach_new(n, out);
  }
  mt_tensor_release(c);
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
  MOVED_VIEW(&unfold_kind, mt_unfold(t, dim, size, step, out), mt_unfold(p_, dim, size, step, &pv_));
}
static mt_status grad_diagonal(mt_tensor *t, int64_t offset, int d0, int d1, mt_tensor **out) {
  MOVED_VIEW(&diagonal_kind, mt_diagonal(t, offset, d0, d1, out), mt_diagonal(p_, offset, d0, d1, &pv_));
}

/* as_strided addresses t's storage: a map of that storage holding t's positions (-1 elsewhere)
 * viewed the same way; an element outside t cannot get a gradient. */
static mt_status as_strided_positions(mt_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim,
                                      int64_t offset, mt_tensor **pos) {
  int64_t len = (int64_t)(t->_storage->_nbytes / mt_itemsize(t->_dtype));
  mt_tensor *map, *in_t = NULL, *mine = NULL, *v = NULL, *c = NULL;
  mt_device dev = mt_device_of(t);
  MT_TRY(mt_tensor_full(&len, 1, MT_INT64, -1, &dev, &map));
  mt_status s = mt_as_strided(map, t->_sizes, t->_strides, t->_ndim, t->_offset, &in_t);
  if (s == MT_OK) s = mt_grad_positions(t, &mine);
  if (s == MT_OK) s = mt_copy_(in_t, mine);
  if (s == MT_OK) s = mt_as_strided(map, sizes, strides, ndim, offset < 0 ? t->_offset : offset, &v);
  if (s == MT_OK) s = mt_clone(v, &c);
  if (s == MT_OK) {
    int64_t lo = 0;
    mt_tensor *m = NULL;
    if (c->_numel > 0 && mt_backend_of(c)->holds_data) { /* (on the meta device: nothing to check) */
      s = mt_reduce(MT_OP_AMIN, c, NULL, 0, 0, -1, 0, NULL, &m);
      if (s == MT_OK) s = mt_tensor_item_int64(m, &lo);
      mt_tensor_release(m);
    }
    if (s == MT_OK && lo < 0)
      s = mt_error(MT_EINVAL, "as_strided: the view reaches storage outside its input, whose elements cannot get a "
                              "gradient (take as_strided of the base tensor)");
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
  if (s == MT_OK) s = record_moved(&as_strided_kind, t, pos, *out);
  if (s) { mt_tensor_release(*out); *out = NULL; }
  return s;
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_view_kinds[] = {&reshape_kind, &reshape_copy_kind, &transpose_kind, &permute_kind,
                                              &expand_kind, &select_kind, &slice_kind, &as_strided_kind,
                                              &unfold_kind, &diagonal_kind, NULL};

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
