/* loss.c -- the derivative of nll_loss (core/ops/loss.c), PyTorch's NllLossBackward0: the input
 * gradient is -w[t_i] * g at each row's target (divided by the total weight for the mean), 0
 * elsewhere. It is linear in g, so under create_graph it is written as g times the constant
 * pattern the kernel makes for g = 1, which records itself. */
#include "formula.h"

#include "../ops/loss.h"

typedef struct nll_node {
  mt_saved input, target, weight;
  int64_t ignore_index, base;
  double total_weight;
  int32_t reduction, has_weight;
} nll_node;
MT_NODE_DATA_FITS(nll_node);

static mt_status nll_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  nll_node *d = NODE_DATA(n, nll_node);
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *x = saved(sc, n, &d->input), *t = saved(sc, n, &d->target);
  mt_tensor *w = d->has_weight ? saved(sc, n, &d->weight) : NULL;
  mt_tensor *r = NULL;
  if (LIVE(sc) && !mt_grad_mode) {
    r = SCOPED(mt_nll_loss_backward(g, x, t, w, d->ignore_index, d->reduction, d->total_weight, d->base, &r_));
  } else if (LIVE(sc)) {
    /* the pattern for g = 1, times g (broadcast over the classes) */
    int64_t one = 1;
    mt_tensor *ones = f_full(sc, x, d->reduction == 0 ? t->_sizes : &one, d->reduction == 0 ? t->_ndim : 0,
                             x->_dtype, 1.0);
    mt_tensor *pat = NULL;
    if (ones)
      pat = SCOPED(mt_nll_loss_backward(ones, x, t, w, d->ignore_index, d->reduction, d->total_weight, d->base, &r_));
    mt_tensor *gg = g;
    if (d->reduction == 0 && x->_ndim == 2) gg = f_unsqueeze(sc, g, 1);
    r = MUL(pat, gg);
  }
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

static const mt_node_kind nll_kind = {.name = "NllLossBackward0", .backward = nll_backward, .nsaved = 3};

static mt_status grad_nll_loss(mt_tensor *input, mt_tensor *target, mt_tensor *weight, int64_t ignore_index,
                               int reduction, int64_t base, mt_tensor **result, double *total_weight) {
  mt_tensor *r = NULL;
  double tw = 0;
  MT_TRY(MT_NOGRAD(mt_nll_loss(input, target, weight, ignore_index, reduction, base, &r, &tw)));
  mt_node *n;
  mt_status s = mt_node_make(&nll_kind, &input, 1, 1, &n);
  if (!s) {
    nll_node *d = NODE_DATA(n, nll_node);
    d->ignore_index = ignore_index;
    d->base = base;
    d->total_weight = tw;
    d->reduction = reduction;
    d->has_weight = weight != NULL;
    mt_node_save(n, &d->input, input);
    mt_node_save(n, &d->target, target);
    if (weight) mt_node_save(n, &d->weight, weight);
    s = mt_node_attach_new(n, r);
  }
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  if (total_weight) *total_weight = tw;
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_loss_kinds[] = {&nll_kind, NULL};

void mt_grad_register_loss(mt_autograd_ops *t) { t->nll_loss = grad_nll_loss; }
