/* copy.c -- autograd for copies (core/ops/copy.c): clone, to(dtype, device), and copy_ / fill_
 * over a whole tensor. */
#include "formula.h"

/* ---------------------------------------------------------------- clone, to(dtype, device) */
typedef struct clone_node {
  int32_t to_dtype; /* a conversion: the gradient goes back to the input's dtype and device */
  mt_device device; /* the input's */
  mt_shape in;
} clone_node;
MT_NODE_DATA_FITS(clone_node);

static const char *clone_name_of(const mt_node *n) {
  return NODE_DATA(n, clone_node)->to_dtype ? "ToCopyBackward0" : "CloneBackward0";
}
static const char *clone_names(int i) { return i == 0 ? "CloneBackward0" : i == 1 ? "ToCopyBackward0" : NULL; }

static mt_status clone_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  const clone_node *d = NODE_DATA(n, clone_node);
  if (d->to_dtype) return mt_to(g, d->in.dtype, &d->device, 0, &gin[0]);
  gin[0] = mt_tensor_retain(g);
  return MT_OK;
}

static const mt_node_kind clone_kind = {.name_of = clone_name_of, .names = clone_names, .backward = clone_backward};

/* out: a new result (released on failure) */
static mt_status record_clone(mt_tensor *t, int to_dtype, mt_tensor **out) {
  if (!mt_is_float((*out)->_dtype)) return MT_OK;
  mt_node *n;
  mt_status s = mt_node_make(&clone_kind, &t, 1, 1, &n);
  if (s == MT_OK) {
    clone_node *d = NODE_DATA(n, clone_node);
    d->to_dtype = to_dtype;
    d->device = mt_device_of(t);
    mt_shape_of(&d->in, t);
    s = mt_node_attach_new(n, *out);
  }
  if (s) { mt_tensor_release(*out); *out = NULL; }
  return s;
}

static mt_status grad_clone(mt_tensor *t, mt_tensor **out) {
  MT_TRY(MT_NOGRAD(mt_clone(t, out)));
  return record_clone(t, 0, out);
}

static mt_status grad_to(mt_tensor *t, int dtype, const mt_device *device, int copy, mt_tensor **out) {
  MT_TRY(MT_NOGRAD(mt_to(t, dtype, device, copy, out)));
  if (*out == t) return MT_OK;
  return record_clone(t, t->_dtype != (*out)->_dtype || !mt_same_device(t, *out), out);
}

/* ---------------------------------------------------------------- copy_, fill_ */
/* In-place writes into the graph: a copy_ or fill_ over a whole tensor is recorded (PyTorch's
 * CopyBackwards / FillBackward2: the old value gets a zero gradient, src the gradient in its own
 * shape and dtype). Writes into part of a tensor would need PyTorch's CopySlices, which moontorch
 * does not have: they are refused when the graph is involved (mt_grad_check_whole_write). */
typedef struct copy_node {
  mt_shape dst, src;
} copy_node;
MT_NODE_DATA_FITS(copy_node);

static mt_status copy_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  copy_node *d = NODE_DATA(n, copy_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  if (mt_node_wants(n, 0)) {
    mt_tensor *z = ZEROS_OF(g, &d->dst, d->dst.dtype);
    if (LIVE(sc)) give(gin, 0, z);
  }
  if (n->nin > 1 && mt_node_wants(n, 1)) {
    mt_tensor *gs = TO_DTYPE(SUM_TO(g, &d->src), d->src.dtype);
    if (LIVE(sc)) give(gin, 1, gs);
  }
  return scope_close(sc);
}

static const mt_node_kind copy_kind = {.name = "CopyBackwards", .backward = copy_backward};
static const mt_node_kind fill_kind = {.name = "FillBackward2", .backward = copy_backward};

/* after the write: dst's old value and src (NULL for fill_) are the inputs */
static mt_status record_copy(mt_tensor *dst, mt_tensor *src) {
  if (!mt_is_float(dst->_dtype)) return MT_OK;
  mt_tensor *in[2] = {dst, src};
  mt_node *n;
  MT_TRY(mt_node_make(src ? &copy_kind : &fill_kind, in, src ? 2 : 1, 1, &n));
  copy_node *d = NODE_DATA(n, copy_node);
  mt_shape_of(&d->dst, dst);
  if (src) mt_shape_of(&d->src, src);
  return mt_node_attach_new(n, dst);
}

static mt_status grad_copy_(mt_tensor *dst, const mt_tensor *src) {
  if (!dst || !src) return MT_NOGRAD(mt_copy_(dst, src)); /* its message */
  MT_TRY(mt_grad_check_inplace(dst, "copy_"));
  MT_TRY(mt_grad_check_whole_write(dst, "copy_"));
  MT_TRY(MT_NOGRAD(mt_copy_(dst, src)));
  return record_copy(dst, (mt_tensor *)src);
}

static mt_status grad_fill_(mt_tensor *t, double value) {
  MT_TRY(mt_grad_check_inplace(t, "fill_"));
  MT_TRY(mt_grad_check_whole_write(t, "fill_"));
  MT_TRY(MT_NOGRAD(mt_fill_(t, value)));
  return record_copy(t, NULL);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_copy_kinds[] = {&clone_kind, &copy_kind, &fill_kind, NULL};

void mt_grad_register_copy(mt_autograd_ops *t) {
  t->clone = grad_clone;
  t->to = grad_to;
  t->copy_ = grad_copy_;
  t->fill_ = grad_fill_;
}
