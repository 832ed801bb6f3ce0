/* bag.c -- the derivative of embedding_bag (core/ops/bag.c), EmbeddingBagBackward0: the output
 * gradient scattered back into a dense weight gradient, and for per-sample weights each entry's
 * dot product of its bag's gradient with its row (core/tensor/bag.c). Its result is not itself
 * differentiable: under create_graph the first derivative is computed, not recorded. */
#include "formula.h"

#include "../ops/bag.h"

typedef struct bag_node {
  mt_saved w, idx, st, psw, arg;
  int64_t pad0, base;
  int32_t mode, scale_by_freq, has_psw;
} bag_node;
MT_NODE_DATA_FITS(bag_node);

static mt_status bag_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  bag_node *d = NODE_DATA(n, bag_node);
  mt_tensor *g = gout[0];
  bool want_w = mt_node_wants(n, 0), want_p = d->has_psw && mt_node_wants(n, 1);
  if (!g || (!want_w && !want_p)) return MT_OK;
  mt_tensor *w = saved(sc, n, &d->w), *idx = saved(sc, n, &d->idx), *st = saved(sc, n, &d->st);
  mt_tensor *psw = d->has_psw ? saved(sc, n, &d->psw) : NULL;
  mt_tensor *arg = d->mode == 2 ? saved(sc, n, &d->arg) : NULL;
  if (LIVE(sc)) {
    mt_tensor *rw = NULL, *rp = NULL;
    mt_status s = mt_embedding_bag_backward(g, w, idx, st, psw, arg, d->mode, d->pad0, d->scale_by_freq, d->base,
                                            want_w ? &rw : NULL, want_p ? &rp : NULL);
    if (s) sc->s = s;
    mt_tensor *kw = rw ? keep(sc, MT_OK, &rw) : NULL, *kp = rp ? keep(sc, MT_OK, &rp) : NULL;
    if (LIVE(sc)) {
      if (kw) give(gin, 0, kw);
      if (kp) give(gin, 1, kp);
    }
  }
  return scope_close(sc);
}

static const mt_node_kind bag_kind = {.name = "EmbeddingBagBackward0", .backward = bag_backward, .nsaved = 5};

static mt_status grad_embedding_bag(mt_tensor *weight, mt_tensor *indices, mt_tensor *starts, mt_tensor *psw, int mode,
                                    int has_padding, int64_t padding_idx, int scale_grad_by_freq, int64_t base,
                                    mt_tensor **result) {
  int64_t pad0 = has_padding ? padding_idx - base : -1;
  mt_tensor *r = NULL, *arg = NULL;
  MT_TRY(MT_NOGRAD(mt_embedding_bag_impl(weight, indices, starts, psw, mode, pad0, base, &r, &arg)));
  mt_tensor *in[2] = {weight, psw};
  mt_node *n;
  mt_status s = mt_node_make(&bag_kind, in, 2, 1, &n);
  if (!s) {
    bag_node *d = NODE_DATA(n, bag_node);
    d->pad0 = pad0;
    d->base = base;
    d->mode = mode;
    d->scale_by_freq = scale_grad_by_freq;
    d->has_psw = psw != NULL;
    mt_node_save(n, &d->w, weight); /* (its shape; its rows for the per-sample weights' gradient) */
    mt_node_save(n, &d->idx, indices);
    mt_node_save(n, &d->st, starts);
    if (psw) mt_node_save(n, &d->psw, psw);
    if (arg) mt_node_save(n, &d->arg, arg);
    s = mt_node_attach_new(n, r);
  }
  mt_tensor_release(arg);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_bag_kinds[] = {&bag_kind, NULL};

void mt_grad_register_bag(mt_autograd_ops *t) { t->embedding_bag = grad_embedding_bag; }
