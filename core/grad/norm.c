/* norm.c -- the derivative of the fused layer norm (core/ops/norm.c), PyTorch's
 * NativeLayerNormBackward0. With xhat = (x - mean) * rstd and gh = g * weight, over each row of
 * the normalised dims (n elements):
 *   dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)),  dweight = sum over rows of g * xhat,
 *   dbias = sum over rows of g.
 * A backward that is not recorded runs the fused kernel (core/tensor/norm.c) from the saved mean
 * and rstd; under create_graph the same formula is written with the front doors, the statistics
 * recomputed from x, so that it records itself and double backward is exact. */
#include "formula.h"

#include "../ops/norm.h"

typedef struct layer_norm_node {
  mt_saved x, w, mean, rstd;
  int32_t nnorm, has_w, has_b;
  double eps;
} layer_norm_node;
MT_NODE_DATA_FITS(layer_norm_node);

/* the formula with front doors: mean and rstd recomputed from x (so that they differentiate too) */
static void recorded_backward(scope *sc, layer_norm_node *d, mt_tensor *g, mt_tensor *x, mt_tensor *w, mt_tensor **gx,
                              mt_tensor **gw, mt_tensor **gb, bool want_x, bool want_w, bool want_b) {
  int nd = x->_ndim, k = d->nnorm;
  int64_t dims[MT_MAX_DIMS], lead[MT_MAX_DIMS];
  int64_t n = 1;
  for (int i = 0; i < k; i++) {
    dims[i] = nd - k + i;
    n *= x->_sizes[nd - k + i];
  }
  for (int i = 0; i < nd - k; i++) lead[i] = i;
  double inv = n ? 1.0 / (double)n : 0;
  mt_tensor *mu = MULS(SUM_DIMS(x, dims, k, 1), inv);
  mt_tensor *xc = SUB(x, mu);
  mt_tensor *var = MULS(SUM_DIMS(MUL(xc, xc), dims, k, 1), inv);
  mt_tensor *rs = UNARY(MT_OP_RSQRT, ADDS(var, d->eps), 0, 0);
  mt_tensor *xhat = MUL(xc, rs);
  if (want_x) {
    mt_tensor *gh = w ? MUL(g, w) : g;
    mt_tensor *a = MULS(SUM_DIMS(gh, dims, k, 1), inv);
    mt_tensor *b = MULS(SUM_DIMS(MUL(gh, xhat), dims, k, 1), inv);
    *gx = MUL(rs, SUB(SUB(gh, a), MUL(xhat, b)));
  }
  if (want_w) {
    mt_tensor *t = MUL(g, xhat);
    *gw = nd - k > 0 ? SUM_DIMS(t, lead, nd - k, 0) : t;
    if (*gw && w) *gw = RESHAPE(*gw, w->_sizes, w->_ndim);
  }
  if (want_b) {
    *gb = nd - k > 0 ? SUM_DIMS(g, lead, nd - k, 0) : g;
  }
}

static mt_status layer_norm_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  layer_norm_node *d = NODE_DATA(n, layer_norm_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  bool want_x = mt_node_wants(n, 0), want_w = d->has_w && mt_node_wants(n, 1),
       want_b = d->has_b && mt_node_wants(n, 2);
  if (!want_x && !want_w && !want_b) return MT_OK;
  mt_tensor *x = saved(sc, n, &d->x);
  mt_tensor *w = d->has_w ? saved(sc, n, &d->w) : NULL;
  mt_tensor *gx = NULL, *gw = NULL, *gb = NULL;
  if (!LIVE(sc)) return scope_close(sc);
  if (!mt_grad_mode) {
    /* not recorded: the fused kernel */
    mt_tensor *mean = saved(sc, n, &d->mean), *rstd = saved(sc, n, &d->rstd);
    mt_tensor *rx = NULL, *rw = NULL, *rb = NULL;
    if (LIVE(sc)) {
      mt_status s = mt_layer_norm_backward(g, x, w, mean, rstd, d->nnorm, want_x ? &rx : NULL, want_w ? &rw : NULL,
                                           want_b ? &rb : NULL);
      if (s) sc->s = s;
      if (rx) gx = keep(sc, MT_OK, &rx);
      if (rw) gw = keep(sc, MT_OK, &rw);
      if (rb) gb = keep(sc, MT_OK, &rb);
    }
  } else {
    recorded_backward(sc, d, g, x, w, &gx, &gw, &gb, want_x, want_w, want_b);
  }
  if (LIVE(sc)) {
    if (want_x && gx) give(gin, 0, gx);
    if (want_w && gw) give(gin, 1, gw);
    if (want_b && gb) give(gin, 2, gb);
  }
  return scope_close(sc);
}

static const mt_node_kind layer_norm_kind = {
    .name = "NativeLayerNormBackward0", .backward = layer_norm_backward, .nsaved = 4};

static mt_status grad_layer_norm(mt_tensor *x, mt_tensor *weight, mt_tensor *bias, int nnorm, double eps,
                                 mt_tensor **result, mt_tensor **mean_out, mt_tensor **rstd_out) {
  mt_tensor *r = NULL, *mean = NULL, *rstd = NULL;
  MT_TRY(MT_NOGRAD(mt_layer_norm(x, weight, bias, nnorm, eps, &r, &mean, &rstd)));
  mt_tensor *in[3] = {x, weight, bias};
  mt_node *n;
  mt_status s = mt_node_make(&layer_norm_kind, in, 3, 1, &n);
  if (!s) {
    layer_norm_node *d = NODE_DATA(n, layer_norm_node);
    d->nnorm = nnorm;
    d->eps = eps;
    d->has_w = weight != NULL;
    d->has_b = bias != NULL;
    mt_node_save(n, &d->x, x);
    if (weight) mt_node_save(n, &d->w, weight);
    mt_node_save(n, &d->mean, mean);
    mt_node_save(n, &d->rstd, rstd);
    s = mt_node_attach_new(n, r);
  }
  if (s) {
    mt_tensor_release(r);
    mt_tensor_release(mean);
    mt_tensor_release(rstd);
    return s;
  }
  if (mean_out) *mean_out = mean;
  else mt_tensor_release(mean);
  if (rstd_out) *rstd_out = rstd;
  else mt_tensor_release(rstd);
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_norm_kinds[] = {&layer_norm_kind, NULL};

void mt_grad_register_norm(mt_autograd_ops *t) { t->layer_norm = grad_layer_norm; }
