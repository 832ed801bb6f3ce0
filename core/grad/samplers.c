/* samplers.c -- the derivatives of torch.distributions' samplers (core/ops/samplers.c):
 * StandardGammaBackward0, the reparameterized gradient of a Gamma(alpha, 1) draw x (grad times
 * _standard_gamma_grad(alpha, x), as PyTorch's), and PoissonBackward0, zeros (PyTorch's: a Poisson
 * count does not move with its rate). _standard_gamma_grad itself is not differentiable (nor in
 * PyTorch): under create_graph the product with the incoming gradient is recorded, not the factor. */
#include "formula.h"

typedef struct gamma_node {
  mt_saved alpha, x;
} gamma_node;
MT_NODE_DATA_FITS(gamma_node);

static mt_status gamma_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  gamma_node *d = NODE_DATA(n, gamma_node);
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *alpha = saved(sc, n, &d->alpha), *x = saved(sc, n, &d->x);
  mt_tensor *dx = LIVE(sc) ? SCOPED(mt_standard_gamma_grad(alpha, x, &r_)) : NULL;
  mt_tensor *r = MUL(g, dx);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

static mt_status poisson_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *r = ZEROS(g, g->_sizes, g->_ndim, g->_dtype);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

static const mt_node_kind gamma_kind = {.name = "StandardGammaBackward0", .backward = gamma_backward, .nsaved = 2};
static const mt_node_kind poisson_kind = {.name = "PoissonBackward0", .backward = poisson_backward, .nsaved = 0};

static mt_status grad_standard_gamma(mt_tensor *alpha, mt_generator *g, mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_standard_gamma(alpha, g, &r)));
  mt_node *n;
  mt_status s = mt_node_make(&gamma_kind, &alpha, 1, 1, &n);
  if (!s) {
    gamma_node *d = NODE_DATA(n, gamma_node);
    mt_node_save(n, &d->alpha, alpha);
    s = mt_node_save_output(n, &d->x, r, 0);
    if (!s) s = mt_node_attach_new(n, r);
    else mt_node_release(n);
  }
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

static mt_status grad_poisson(mt_tensor *rates, mt_generator *g, mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_poisson(rates, g, &r)));
  mt_node *n;
  mt_status s = mt_node_make(&poisson_kind, &rates, 1, 1, &n);
  if (!s) s = mt_node_attach_new(n, r);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_samplers_kinds[] = {&gamma_kind, &poisson_kind, NULL};

void mt_grad_register_samplers(mt_autograd_ops *t) {
  t->standard_gamma = grad_standard_gamma;
  t->poisson = grad_poisson;
}
