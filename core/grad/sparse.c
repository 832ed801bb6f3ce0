/* sparse.c -- the derivative of the CSR product (core/ops/sparse.c), under PyTorch's name for
 * torch.sparse.mm's, SparseAddmmBackward0. For R = W @ D (W's entries (i, c, v)):
 *   dv = G[i, :] . D[c, :] for each entry (the sampled product), dD = W^T @ G;
 * for the transposed form R = D @ W^T the same with G and D read by columns. Only W's values and D
 * are differentiable (the pattern is not). Its result is not itself differentiable: under
 * create_graph the first derivative is computed, not recorded. */
#include "formula.h"

#include "../ops/sparse.h"

typedef struct csr_node {
  mt_saved crow, col, vals, dense;
  int64_t ncols, base;
  int32_t transposed;
} csr_node;
MT_NODE_DATA_FITS(csr_node);

static mt_status csr_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  csr_node *d = NODE_DATA(n, csr_node);
  mt_tensor *g = gout[0];
  bool want_v = mt_node_wants(n, 0), want_d = mt_node_wants(n, 1);
  if (!g || (!want_v && !want_d)) return MT_OK;
  mt_tensor *crow = saved(sc, n, &d->crow), *col = saved(sc, n, &d->col);
  mt_tensor *vals = want_d ? saved(sc, n, &d->vals) : NULL, *dense = want_v ? saved(sc, n, &d->dense) : NULL;
  if (LIVE(sc)) {
    mt_tensor *rv = NULL, *rd = NULL;
    mt_status s = MT_OK;
    if (want_v) s = MT_NOGRAD(mt_csr_sddmm(crow, col, g, dense, d->ncols, d->transposed, d->base, &rv));
    if (!s && want_d) s = MT_NOGRAD(mt_csr_mm_t(crow, col, vals, g, d->ncols, d->transposed, d->base, &rd));
    if (s) sc->s = s;
    mt_tensor *kv = rv ? keep(sc, MT_OK, &rv) : NULL, *kd = rd ? keep(sc, MT_OK, &rd) : NULL;
    if (LIVE(sc)) {
      if (kv) give(gin, 0, kv);
      if (kd) give(gin, 1, kd);
    }
  }
  return scope_close(sc);
}

static const mt_node_kind csr_kind = {.name = "SparseAddmmBackward0", .backward = csr_backward, .nsaved = 4};

static mt_status grad_csr_mm(mt_tensor *crow, mt_tensor *col, mt_tensor *values, mt_tensor *dense, int64_t ncols,
                             int transposed, int64_t base, mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_csr_mm(crow, col, values, dense, ncols, transposed, base, &r)));
  mt_tensor *in[2] = {values, dense};
  mt_node *n;
  mt_status s = mt_node_make(&csr_kind, in, 2, 1, &n);
  if (!s) {
    csr_node *d = NODE_DATA(n, csr_node);
    d->ncols = ncols;
    d->base = base;
    d->transposed = transposed;
    mt_node_save(n, &d->crow, crow);
    mt_node_save(n, &d->col, col);
    mt_node_save(n, &d->vals, values);
    mt_node_save(n, &d->dense, dense);
    s = mt_node_attach_new(n, r);
  }
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_sparse_kinds[] = {&csr_kind, NULL};

void mt_grad_register_sparse(mt_autograd_ops *t) { t->csr_mm = grad_csr_mm; }
