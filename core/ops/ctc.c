/* ctc.c -- the front door of the CTC loss (issue 12, the modules part): PyTorch's ctc_loss with
 * reduction 'none', the negative log-likelihood of each sample's target under CTC's alignments.
 * log_probs (T, N, C) float32 or float64; targets (N, S) int64 classes counted from index_base,
 * padded; input_lengths and target_lengths (N) int64; blank a class counted from index_base. The
 * reductions are done above it (nn.functional.ctc_loss). Kernels core/tensor/ctc.c, derivative
 * CtcLossBackward0 core/grad/ctc.c. */
#include "ctc.h"

static mt_status check_lengths(const char *what, const mt_tensor *t, const mt_tensor *lp, int64_t n) {
  MT_TRY(mt_check_tensor(t, "ctc_loss", what));
  MT_TRY(mt_check_same_device("ctc_loss", lp, t));
  if (t->_dtype != MT_INT64) return mt_error(MT_EDTYPE, "ctc_loss: %s must be int64, got %s", what, mt_dtype_name(t->_dtype));
  if (t->_ndim != 1 || t->_sizes[0] != n) return mt_error(MT_ESHAPE, "ctc_loss: %s must be of size batch_size", what);
  return MT_OK;
}

static mt_status check(mt_tensor *lp, mt_tensor *tg, mt_tensor *il, mt_tensor *tl, int64_t blank, int64_t base) {
  MT_TRY(mt_check_tensor(lp, "ctc_loss", "log_probs"));
  MT_TRY(mt_check_kernel(MT_OP_CTC_LOSS, lp));
  if (lp->_dtype != MT_FLOAT32 && lp->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "ctc_loss: expected float32 or float64 log_probs, got %s", mt_dtype_name(lp->_dtype));
  if (lp->_ndim != 3) return mt_error(MT_ESHAPE, "ctc_loss: log_probs must be 3-D (T, N, C), got %dD", lp->_ndim);
  int64_t T = lp->_sizes[0], N = lp->_sizes[1], C = lp->_sizes[2];
  if (blank < base || blank >= C + base) return mt_error(MT_EINVAL, "ctc_loss: blank must be in label range");
  MT_TRY(mt_check_tensor(tg, "ctc_loss", "targets"));
  MT_TRY(mt_check_same_device("ctc_loss", lp, tg));
  if (tg->_dtype != MT_INT64) return mt_error(MT_EDTYPE, "ctc_loss: targets must be int64, got %s", mt_dtype_name(tg->_dtype));
  if (tg->_ndim != 2 || tg->_sizes[0] != N)
    return mt_error(MT_ESHAPE, "ctc_loss: targets must be 2-D (N, S) with N = %lld", (long long)N);
  MT_TRY(check_lengths("input_lengths", il, lp, N));
  MT_TRY(check_lengths("target_lengths", tl, lp, N));
  if (!mt_backend_of(lp)->holds_data) return MT_OK; /* (the meta device: no values to check) */
  /* the lengths and targets read on the host (contiguous there) */
  mt_tensor *ilc = NULL, *tlc = NULL, *tgc = NULL;
  mt_status s = mt_readback(il, "ctc_loss", true, &ilc);
  if (!s) s = mt_readback(tl, "ctc_loss", true, &tlc);
  if (!s) s = mt_readback(tg, "ctc_loss", true, &tgc);
  for (int64_t n = 0; !s && n < N; n++) {
    int64_t a = ((const int64_t *)ilc->_data)[n], b = ((const int64_t *)tlc->_data)[n];
    if (a < 0 || a > T)
      s = mt_error(MT_ERANGE, "ctc_loss: Expected input_lengths to have value at most %lld, but got value %lld",
                   (long long)T, (long long)a);
    else if (b < 0 || b > tg->_sizes[1])
      s = mt_error(MT_ESHAPE, "ctc_loss: Expected tensor to have size at least %lld at dimension %s, but got size %lld "
                              "for argument #2 'targets'", (long long)b, base ? "2" : "1", (long long)tg->_sizes[1]);
    for (int64_t i = 0; !s && i < b; i++) {
      int64_t k = ((const int64_t *)tgc->_data)[n * tg->_sizes[1] + i];
      if (k < base || k >= C + base || k == blank)
        s = mt_error(MT_ERANGE, "ctc_loss: targets must hold labels in [%lld, %lld] other than blank (%lld), got %lld%s",
                     (long long)base, (long long)(C - 1 + base), (long long)blank, (long long)k, MT_BASE_HINT(k, base));
    }
  }
  mt_tensor_release(ilc);
  mt_tensor_release(tlc);
  mt_tensor_release(tgc);
  return s;
}

/* contiguous copies of the operands */
typedef struct ctc_operands {
  mt_tensor *lp, *tg, *il, *tl;
} ctc_operands;
static mt_status operands(mt_tensor *lp, mt_tensor *tg, mt_tensor *il, mt_tensor *tl, ctc_operands *o) {
  *o = (ctc_operands){0};
  mt_status s = mt_contiguous(lp, &o->lp);
  if (!s) s = mt_contiguous(tg, &o->tg);
  if (!s) s = mt_contiguous(il, &o->il);
  if (!s) s = mt_contiguous(tl, &o->tl);
  return s;
}
static void release_operands(ctc_operands *o) {
  mt_tensor_release(o->lp);
  mt_tensor_release(o->tg);
  mt_tensor_release(o->il);
  mt_tensor_release(o->tl);
}

static mt_status ctc_loss(mt_tensor *lp, mt_tensor *tg, mt_tensor *il, mt_tensor *tl, int64_t blank, int zero_inf,
                          int64_t base, mt_tensor **result) {
  MT_TRY(check(lp, tg, il, tl, blank, base));
  ctc_operands o;
  mt_tensor *r = NULL;
  mt_status s = operands(lp, tg, il, tl, &o);
  if (!s) s = mt_new(mt_device_of(lp), lp->_sizes + 1, 1, lp->_dtype, "ctc_loss", &r);
  if (!s) s = mt_kernels_of(lp)->ctc_loss(r, o.lp, o.tg, o.il, o.tl, blank - base, zero_inf, base);
  release_operands(&o);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

mt_status mt_ctc_loss(mt_tensor *log_probs, mt_tensor *targets, mt_tensor *input_lengths, mt_tensor *target_lengths,
                      int64_t blank, int zero_infinity, int64_t index_base, mt_tensor **result) {
  if (mt_records(log_probs) && mt_autograd.ctc_loss)
    return mt_autograd.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, index_base,
                                result);
  return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, index_base, result);
}

mt_status mt_ctc_loss_backward(mt_tensor *g, mt_tensor *log_probs, mt_tensor *targets, mt_tensor *input_lengths,
                               mt_tensor *target_lengths, int64_t blank, int64_t index_base, mt_tensor **result) {
  MT_TRY(mt_check_kernel(MT_OP_CTC_LOSS, log_probs));
  ctc_operands o;
  mt_tensor *r = NULL, *gv = NULL, *gc = NULL;
  mt_status s = operands(log_probs, targets, input_lengths, target_lengths, &o);
  if (!s && g->_dtype != log_probs->_dtype) s = mt_as_dtype(g, log_probs->_dtype, &gv);
  if (!s) s = mt_contiguous(gv ? gv : g, &gc);
  if (!s) s = mt_new(mt_device_of(log_probs), log_probs->_sizes, 3, log_probs->_dtype, "ctc_loss_backward", &r);
  if (!s)
    s = mt_kernels_of(log_probs)->ctc_loss_backward(r, gc, o.lp, o.tg, o.il, o.tl, blank - index_base, index_base);
  release_operands(&o);
  mt_tensor_release(gv);
  mt_tensor_release(gc);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}
