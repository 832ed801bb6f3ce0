/* bag.c -- the front door of embedding_bag (issue 12, the modules part): PyTorch's embedding_bag
 * over a weight (V, D) of float32 or float64, indices (n) int64 counted from index_base, and the
 * bags' boundaries `starts` (B + 1) int64: bag b is the entries starts[b] .. starts[b + 1] - 1
 * (0-based entry positions). mode 0 sum (times per_sample_weights (n) when given), 1 mean, 2 max;
 * entries at padding_idx (counted from index_base; has_padding 0: none) are left out; an empty
 * bag gives zeros. Kernels core/tensor/bag.c, derivative EmbeddingBagBackward0 core/grad/bag.c. */
#include "bag.h"

static mt_status check(mt_tensor *w, mt_tensor *idx, mt_tensor *st, mt_tensor *psw, int mode) {
  MT_TRY(mt_check_tensor(w, "embedding_bag", "weight"));
  MT_TRY(mt_check_tensor(idx, "embedding_bag", "indices"));
  MT_TRY(mt_check_tensor(st, "embedding_bag", "starts"));
  MT_TRY(mt_check_kernel(MT_OP_EMBEDDING_BAG, w));
  MT_TRY(mt_check_same_device("embedding_bag", w, idx));
  MT_TRY(mt_check_same_device("embedding_bag", w, st));
  if (w->_dtype != MT_FLOAT32 && w->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "embedding_bag: expected a float32 or float64 weight, got %s", mt_dtype_name(w->_dtype));
  if (w->_ndim != 2) return mt_error(MT_ESHAPE, "embedding_bag: 'weight' must be 2-D");
  if (idx->_dtype != MT_INT64 || idx->_ndim != 1)
    return mt_error(MT_EDTYPE, "embedding_bag: indices must be a 1-D int64 tensor");
  if (st->_dtype != MT_INT64 || st->_ndim != 1 || st->_numel < 1)
    return mt_error(MT_EDTYPE, "embedding_bag: starts must be a 1-D int64 tensor of at least 1 element");
  if (mode < 0 || mode > 2) return mt_error(MT_EINVAL, "embedding_bag: unknown mode %d", mode);
  if (psw) {
    MT_TRY(mt_check_tensor(psw, "embedding_bag", "per_sample_weights"));
    MT_TRY(mt_check_same_device("embedding_bag", w, psw));
    if (mode != 0) return mt_error(MT_EINVAL, "embedding_bag: per_sample_weights is only supported for mode='sum'");
    if (psw->_dtype != w->_dtype || psw->_numel != idx->_numel)
      return mt_error(MT_ESHAPE, "embedding_bag: per_sample_weights must have the indices' size and the weight's dtype");
  }
  if (!mt_backend_of(w)->holds_data) return MT_OK;
  /* the starts read on the host, contiguous there */
  mt_tensor *sc = NULL;
  MT_TRY(mt_readback(st, "embedding_bag", true, &sc));
  const int64_t *s = (const int64_t *)sc->_data;
  mt_status r = MT_OK;
  if (s[0] != 0) r = mt_error(MT_EINVAL, "embedding_bag: the first bag must start at the first entry");
  for (int64_t i = 1; !r && i < st->_numel; i++)
    if (s[i] < s[i - 1]) r = mt_error(MT_EINVAL, "embedding_bag: the bags' starts must be non-decreasing");
  if (!r && s[st->_numel - 1] > idx->_numel)
    r = mt_error(MT_EINVAL, "embedding_bag: the last bag ends past the indices (%lld > %lld)",
                 (long long)s[st->_numel - 1], (long long)idx->_numel);
  mt_tensor_release(sc);
  return r;
}

mt_status mt_embedding_bag_impl(mt_tensor *w, mt_tensor *idx, mt_tensor *st, mt_tensor *psw, int mode, int64_t pad0,
                                int64_t base, mt_tensor **result, mt_tensor **max_arg) {
  MT_TRY(check(w, idx, st, psw, mode));
  int64_t sizes[2] = {st->_numel - 1, w->_sizes[1]};
  mt_tensor *wc = NULL, *ic = NULL, *sc = NULL, *pc = NULL, *r = NULL, *arg = NULL;
  mt_status s = mt_contiguous(w, &wc);
  if (!s) s = mt_contiguous(idx, &ic);
  if (!s) s = mt_contiguous(st, &sc);
  if (!s && psw) s = mt_contiguous(psw, &pc);
  if (!s) s = mt_new(mt_device_of(w), sizes, 2, w->_dtype, "embedding_bag", &r);
  if (!s && mode == 2) s = mt_new(mt_device_of(w), sizes, 2, MT_INT64, "embedding_bag", &arg);
  if (!s) s = mt_kernels_of(w)->embedding_bag(r, arg, wc, ic, sc, pc, mode, pad0, base);
  mt_tensor_release(wc);
  mt_tensor_release(ic);
  mt_tensor_release(sc);
  mt_tensor_release(pc);
  if (s) {
    mt_tensor_release(r);
    mt_tensor_release(arg);
    return s;
  }
  if (max_arg) *max_arg = arg;
  else mt_tensor_release(arg);
  return mt_give(r, result);
}

mt_status mt_embedding_bag(mt_tensor *weight, mt_tensor *indices, mt_tensor *starts, mt_tensor *per_sample_weights,
                           int mode, int has_padding, int64_t padding_idx, int scale_grad_by_freq, int64_t index_base,
                           mt_tensor **result) {
  int64_t pad0 = has_padding ? padding_idx - index_base : -1;
  if (mt_records2(weight, per_sample_weights) && mt_autograd.embedding_bag)
    return mt_autograd.embedding_bag(weight, indices, starts, per_sample_weights, mode, has_padding, padding_idx,
                                     scale_grad_by_freq, index_base, result);
  return mt_embedding_bag_impl(weight, indices, starts, per_sample_weights, mode, pad0, index_base, result, NULL);
}

mt_status mt_embedding_bag_backward(mt_tensor *g, mt_tensor *w, mt_tensor *idx, mt_tensor *st, mt_tensor *psw,
                                    mt_tensor *max_arg, int mode, int64_t pad0, int scale_grad_by_freq, int64_t base,
                                    mt_tensor **gw, mt_tensor **gpsw) {
  MT_TRY(mt_check_kernel(MT_OP_EMBEDDING_BAG, w));
  mt_tensor *gv = NULL, *gc = NULL, *wc = NULL, *ic = NULL, *sc = NULL, *pc = NULL, *rw = NULL, *rp = NULL;
  mt_status s = MT_OK;
  if (g->_dtype != w->_dtype) s = mt_as_dtype(g, w->_dtype, &gv);
  if (!s) s = mt_contiguous(gv ? gv : g, &gc);
  if (!s) s = mt_contiguous(w, &wc);
  if (!s) s = mt_contiguous(idx, &ic);
  if (!s) s = mt_contiguous(st, &sc);
  if (!s && psw) s = mt_contiguous(psw, &pc);
  if (!s && gw) s = mt_new(mt_device_of(w), w->_sizes, 2, w->_dtype, "embedding_bag_backward", &rw);
  if (!s && gpsw) s = mt_new(mt_device_of(w), idx->_sizes, 1, w->_dtype, "embedding_bag_backward", &rp);
  if (!s)
    s = mt_kernels_of(w)->embedding_bag_backward(rw, rp, gc, wc, ic, sc, pc, max_arg, mode, pad0, base,
                                                 scale_grad_by_freq);
  mt_tensor_release(gv);
  mt_tensor_release(gc);
  mt_tensor_release(wc);
  mt_tensor_release(ic);
  mt_tensor_release(sc);
  mt_tensor_release(pc);
  if (s) {
    mt_tensor_release(rw);
    mt_tensor_release(rp);
    return s;
  }
  if (gw) *gw = rw;
  if (gpsw) *gpsw = rp;
  return MT_OK;
}
