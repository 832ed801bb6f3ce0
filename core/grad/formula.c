/* formula.c -- the longer helpers of the backward formulas (formula.h). */
#include "formula.h"

mt_tensor *mt_scope_keep(scope *sc, mt_status s, mt_tensor **rp) {
  mt_tensor *r = *rp;
  if (s) {
    if (!sc->s) sc->s = s;
    return NULL;
  }
  if (sc->n == MT_SCOPE_TENSORS) {
    mt_tensor_release(r);
    sc->s = mt_error(MT_ENOMEM, "backward: too many temporaries");
    return NULL;
  }
  sc->t[sc->n++] = r;
  return r;
}

mt_status mt_scope_close(scope *sc) {
  mt_status s = sc->s;
  for (int i = 0; i < sc->n; i++) mt_tensor_release(sc->t[i]);
  sc->n = 0;
  return s;
}

mt_tensor *mt_pad_to(scope *sc, mt_tensor *t, const mt_shape *shp) {
  for (int d = 0; t && d < shp->ndim && d < t->_ndim; d++) {
    if (t->_sizes[d] >= shp->sizes[d]) continue;
    int64_t zs[MT_MAX_DIMS];
    memcpy(zs, t->_sizes, sizeof zs);
    zs[d] = shp->sizes[d] - t->_sizes[d];
    t = CAT2(t, ZEROS(t, zs, t->_ndim, t->_dtype), d);
  }
  return t;
}

mt_status mt_sum_to(mt_tensor *g, const int64_t *sizes, int ndim, mt_tensor **out) {
  int lead = g->_ndim - ndim;
  int64_t dims[MT_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < g->_ndim; i++) {
    if (i < lead) dims[nd++] = i;
    else if (sizes[i - lead] == 1 && g->_sizes[i] != 1) dims[nd++] = i;
  }
  if (nd == 0) {
    if (lead == 0) { *out = mt_tensor_retain(g); return MT_OK; }
    return mt_reshape(g, sizes, ndim, out);
  }
  mt_tensor *s;
  MT_TRY(mt_reduce(MT_OP_SUM, g, dims, nd, 1, -1, 0, NULL, &s));
  mt_status st = mt_reshape(s, sizes, ndim, out);
  mt_tensor_release(s);
  return st;
}

mt_status mt_grad_positions(const mt_tensor *t, mt_tensor **out) {
  mt_tensor *r, *v;
  mt_device dev = mt_device_of(t);
  MT_TRY(MT_NOGRAD(mt_arange(0, (double)t->_numel, 1, MT_INT64, &dev, &r)));
  mt_status s = MT_NOGRAD(mt_reshape(r, t->_sizes, t->_ndim, &v));
  mt_tensor_release(r);
  if (s) return s;
  *out = v;
  return MT_OK;
}

mt_tensor *mt_add_at_positions(scope *sc, mt_tensor *g, mt_tensor *pos, const mt_shape *input) {
  int64_t numel = 1;
  for (int d = 0; d < input->ndim; d++) numel *= input->sizes[d];
  mt_tensor *z = ZEROS(g ? g : pos, &numel, 1, g ? g->_dtype : MT_FLOAT32), *fp = FLATTEN(pos), *fg = FLATTEN(g);
  mt_tensor *r = z && fp && fg ? SCOPED(mt_index_add(z, 0, fp, fg, 1, 0, NULL, &r_)) : NULL;
  return RESHAPE_TO(r, input);
}
