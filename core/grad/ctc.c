/* ctc.c -- the derivative of the CTC loss (core/ops/ctc.c), CtcLossBackward0: the kernel's
 * gradient from the forward and backward variables (core/tensor/ctc.c). Its result is not itself
 * differentiable (as in PyTorch, which has no double backward for ctc_loss): under create_graph the
 * first derivative is computed, not recorded. */
#include "formula.h"

#include "../ops/ctc.h"

typedef struct ctc_node {
  mt_saved lp, tg, il, tl;
  int64_t blank, base;
} ctc_node;
MT_NODE_DATA_FITS(ctc_node);

static mt_status ctc_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  ctc_node *d = NODE_DATA(n, ctc_node);
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *lp = saved(sc, n, &d->lp), *tg = saved(sc, n, &d->tg), *il = saved(sc, n, &d->il),
            *tl = saved(sc, n, &d->tl);
  mt_tensor *r = LIVE(sc) ? SCOPED(mt_ctc_loss_backward(g, lp, tg, il, tl, d->blank, d->base, &r_)) : NULL;
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

static const mt_node_kind ctc_kind = {.name = "CtcLossBackward0", .backward = ctc_backward, .nsaved = 4};

static mt_status grad_ctc_loss(mt_tensor *lp, mt_tensor *tg, mt_tensor *il, mt_tensor *tl, int64_t blank,
                               int zero_infinity, int64_t base, mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_ctc_loss(lp, tg, il, tl, blank, zero_infinity, base, &r)));
  mt_node *n;
  mt_status s = mt_node_make(&ctc_kind, &lp, 1, 1, &n);
  if (!s) {
    ctc_node *d = NODE_DATA(n, ctc_node);
    d->blank = blank;
    d->base = base;
    mt_node_save(n, &d->lp, lp);
    mt_node_save(n, &d->tg, tg);
    mt_node_save(n, &d->il, il);
    mt_node_save(n, &d->tl, tl);
    s = mt_node_attach_new(n, r);
  }
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_ctc_kinds[] = {&ctc_kind, NULL};

void mt_grad_register_ctc(mt_autograd_ops *t) { t->ctc_loss = grad_ctc_loss; }
