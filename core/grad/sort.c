/* sort.c -- autograd for sort, topk and the rearranging copies (core/ops/sort.c): flip, roll,
 * repeat, repeat_interleave. */
#include "formula.h"

/* run `call` (writing through &r_) without recording, then `record` (reading r_) */
#define RECORDED(call, record)                    \
  do {                                            \
    mt_tensor *r_ = NULL;                         \
    MT_TRY(MT_NOGRAD(call));                      \
    mt_status s_ = record;                        \
    if (s_) { mt_tensor_release(r_); return s_; } \
    return mt_give(r_, result);                   \
  } while (0)

/* ---------------------------------------------------------------- sort, topk */
/* the values' gradient goes back to where each value came from */
typedef struct sort_node {
  mt_saved index; /* the indices along dim, 0-based */
  int32_t dim;
  mt_shape in;
} sort_node;
MT_NODE_DATA_FITS(sort_node);

static mt_status sort_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  sort_node *d = NODE_DATA(n, sort_node);
  mt_tensor *idx, *z;
  MT_TRY(mt_node_saved(n, &d->index, &idx));
  mt_device dev = mt_device_of(g);
  mt_status s = mt_tensor_full(d->in.sizes, d->in.ndim, g->_dtype, 0, &dev, &z);
  if (s == MT_OK) {
    s = mt_scatter(z, d->dim, idx, g, 0, 1, 0, NULL, &gin[0]);
    mt_tensor_release(z);
  }
  mt_tensor_release(idx);
  return s;
}
static const mt_node_kind sort_kind = {.name = "SortBackward0", .backward = sort_backward, .nsaved = 1};
static const mt_node_kind topk_kind = {.name = "TopkBackward0", .backward = sort_backward, .nsaved = 1};

/* v, i: the values and indices the op gave (base-based) */
static mt_status record_sorted(const mt_node_kind *kind, mt_tensor *a, int dim, int64_t base, mt_tensor *v,
                               mt_tensor *i) {
  if (!mt_is_float(v->_dtype)) return MT_OK;
  mt_tensor *i0 = NULL;
  mt_status s = base ? MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i, (double)base, 1, 0, NULL, &i0))
                     : (i0 = mt_tensor_retain(i), MT_OK);
  mt_node *n;
  if (s == MT_OK) s = mt_node_make(kind, &a, 1, 1, &n);
  if (s == MT_OK) {
    sort_node *d = NODE_DATA(n, sort_node);
    d->dim = dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim;
    mt_shape_of(&d->in, a);
    mt_node_save(n, &d->index, i0);
    s = mt_node_attach_new(n, v);
  }
  mt_tensor_release(i0);
  return s;
}

static mt_status grad_sort(mt_tensor *a, int dim, int descending, int stable, int64_t index_base, mt_tensor **values,
                           mt_tensor **indices) {
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(mt_sort(a, dim, descending, stable, index_base, &v, &i)));
  mt_status s = record_sorted(&sort_kind, a, dim, index_base, v, i);
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}

static mt_status grad_topk(mt_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base,
                           mt_tensor **values, mt_tensor **indices) {
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(mt_topk(a, k, dim, largest, sorted, index_base, &v, &i)));
  mt_status s = record_sorted(&topk_kind, a, dim, index_base, v, i);
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}

/* ---------------------------------------------------------------- flip, roll */
/* the gradient flipped over the same dims */
typedef struct flip_node {
  int32_t count;
  int64_t dims[MT_MAX_DIMS];
} flip_node;
MT_NODE_DATA_FITS(flip_node);

static mt_status flip_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const flip_node *d = NODE_DATA(n, flip_node);
  return mt_flip(g, d->dims, d->count, &gin[0]);
}
static const mt_node_kind flip_kind = {.name = "FlipBackward0", .backward = flip_backward};

static mt_status record_flip(mt_tensor *a, const int64_t *dims, int count, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(&flip_kind, &a, 1, 1, &n));
  flip_node *d = NODE_DATA(n, flip_node);
  d->count = count;
  for (int i = 0; i < count; i++) d->dims[i] = dims[i];
  return mt_node_attach_new(n, out);
}

static mt_status grad_flip(mt_tensor *a, const int64_t *dims, int n, mt_tensor **result) {
  RECORDED(mt_flip(a, dims, n, &r_), record_flip(a, dims, n, r_));
}

/* the gradient rolled back */
typedef struct roll_node {
  int32_t count, flat; /* flat: over the flattened tensor (no dims given) */
  int64_t shifts[MT_MAX_DIMS], dims[MT_MAX_DIMS];
} roll_node;
MT_NODE_DATA_FITS(roll_node);

static mt_status roll_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const roll_node *d = NODE_DATA(n, roll_node);
  int64_t back[MT_MAX_DIMS];
  for (int i = 0; i < d->count; i++) back[i] = -d->shifts[i];
  return mt_roll(g, back, d->flat ? NULL : d->dims, d->count, &gin[0]);
}
static const mt_node_kind roll_kind = {.name = "RollBackward0", .backward = roll_backward};

static mt_status record_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int count, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(&roll_kind, &a, 1, 1, &n));
  roll_node *d = NODE_DATA(n, roll_node);
  d->count = count;
  d->flat = dims == NULL;
  for (int i = 0; i < count; i++) {
    d->shifts[i] = shifts[i];
    d->dims[i] = dims ? dims[i] : 0;
  }
  return mt_node_attach_new(n, out);
}

static mt_status grad_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int n, mt_tensor **result) {
  RECORDED(mt_roll(a, shifts, dims, n, &r_), record_roll(a, shifts, dims, n, r_));
}

/* ---------------------------------------------------------------- repeat */
/* the gradient seen as (r0, s0, r1, s1, ...) for repeats r and input sizes s, summed over the r's */
typedef struct repeat_node {
  int32_t count;
  int64_t repeats[MT_MAX_DIMS];
  mt_shape in;
} repeat_node;
MT_NODE_DATA_FITS(repeat_node);

static mt_status repeat_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  repeat_node *d = NODE_DATA(n, repeat_node);
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  int k = d->count, lead = k - d->in.ndim;
  if (2 * k > MT_MAX_DIMS)
    return mt_error(MT_ENOTIMPL, "backward: repeat over more than %d dims is not differentiable", MT_MAX_DIMS / 2);
  int64_t is[2 * MT_MAX_DIMS] = {0}, dims[MT_MAX_DIMS];
  for (int i = 0; i < k; i++) {
    is[2 * i] = d->repeats[i];
    is[2 * i + 1] = i < lead ? 1 : d->in.sizes[i - lead];
    dims[i] = 2 * i;
  }
  mt_tensor *gi = RESHAPE(g, is, 2 * k);
  mt_tensor *r = RESHAPE_TO(k ? SUM_DIMS(gi, dims, k, 0) : gi, &d->in);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}
static const mt_node_kind repeat_kind = {.name = "RepeatBackward0", .backward = repeat_backward};

static mt_status record_repeat(mt_tensor *a, const int64_t *repeats, int count, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(&repeat_kind, &a, 1, 1, &n));
  repeat_node *d = NODE_DATA(n, repeat_node);
  d->count = count;
  for (int i = 0; i < count; i++) d->repeats[i] = repeats[i];
  mt_shape_of(&d->in, a);
  return mt_node_attach_new(n, out);
}

static mt_status grad_repeat(mt_tensor *a, const int64_t *repeats, int n, mt_tensor **result) {
  RECORDED(mt_repeat(a, repeats, n, &r_), record_repeat(a, repeats, n, r_));
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
      mt_device dev = mt_device_of(src);
      s = MT_NOGRAD(mt_arange(0, (double)len, 1, MT_INT64, &dev, &pos));
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

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_sort_kinds[] = {&sort_kind, &topk_kind, &flip_kind, &roll_kind, &repeat_kind, NULL};

void mt_grad_register_sort(mt_autograd_ops *t) {
  t->sort = grad_sort;
  t->topk = grad_topk;
  t->flip = grad_flip;
  t->roll = grad_roll;
  t->repeat = grad_repeat;
  t->repeat_interleave = grad_repeat_interleave;
}
