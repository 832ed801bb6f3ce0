/* loss.c -- the front door of nll_loss (issue 12, the modules part): PyTorch's nll_loss over an
 * input of log-probabilities (C) or (N, C) and class targets () or (N), int64, counted from
 * index_base; weight NULL or (C); ignore_index compared with the targets as given; reduction 0
 * none, 1 mean (weighted: divided by the sum of the targets' weights), 2 sum. Its kernels are
 * core/tensor/loss.c, its derivative (NllLossBackward0) core/grad/loss.c. */
#include "loss.h"

static mt_status check(mt_tensor *input, mt_tensor *target, mt_tensor *weight, int reduction, int64_t *n,
                       int64_t *c) {
  MT_TRY(mt_check_tensor(input, "nll_loss", "input"));
  MT_TRY(mt_check_tensor(target, "nll_loss", "target"));
  MT_TRY(mt_check_same_device("nll_loss", input, target));
  MT_TRY(mt_check_kernel(MT_OP_NLL_LOSS, input));
  if (input->_dtype != MT_FLOAT32 && input->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "nll_loss: expected a float32 or float64 input, got %s", mt_dtype_name(input->_dtype));
  if (target->_dtype != MT_INT64)
    return mt_error(MT_EDTYPE, "nll_loss: expected scalar type Long but found %s", mt_type_title(target->_dtype));
  if (input->_ndim < 1 || input->_ndim > 2)
    return mt_error(MT_ESHAPE, "nll_loss: input tensor should be 1D or 2D, got %dD", input->_ndim);
  if (target->_ndim > 1)
    return mt_error(MT_ESHAPE, "nll_loss: 0D or 1D target tensor expected, multi-target not supported");
  int64_t rows = input->_ndim == 2 ? input->_sizes[0] : 1;
  int64_t tn = target->_ndim == 1 ? target->_sizes[0] : 1;
  if (rows != tn || (input->_ndim == 1 && target->_ndim != 0 && tn != 1))
    return mt_error(MT_ESHAPE, "nll_loss: Expected input batch_size (%lld) to match target batch_size (%lld).",
                    (long long)rows, (long long)tn);
  *n = rows;
  *c = input->_sizes[input->_ndim - 1];
  if (weight) {
    MT_TRY(mt_check_tensor(weight, "nll_loss", "weight"));
    MT_TRY(mt_check_same_device("nll_loss", input, weight));
    if (weight->_numel != *c || weight->_dtype != input->_dtype)
      return mt_error(MT_ESHAPE, "nll_loss: weight tensor should be defined either for all %lld classes or no classes "
                                 "(of the input's dtype), got %lld elements of %s",
                      (long long)*c, (long long)weight->_numel, mt_dtype_name(weight->_dtype));
  }
  if (reduction < 0 || reduction > 2) return mt_error(MT_EINVAL, "nll_loss: unknown reduction %d", reduction);
  return MT_OK;
}

static mt_status nll_loss(mt_tensor *input, mt_tensor *target, mt_tensor *weight, int64_t ignore_index,
                          int reduction, int64_t base, mt_tensor **result, double *total_weight) {
  int64_t n, c;
  MT_TRY(check(input, target, weight, reduction, &n, &c));
  mt_tensor *xc = NULL, *tc = NULL, *wc = NULL, *r = NULL;
  mt_status s = mt_contiguous(input, &xc);
  if (!s) s = mt_contiguous(target, &tc);
  if (!s && weight) s = mt_contiguous(weight, &wc);
  if (!s) s = mt_new(mt_device_of(input), target->_sizes, reduction == 0 ? target->_ndim : 0, input->_dtype,
                     "nll_loss", &r);
  double tw = 0;
  if (!s) s = mt_kernels_of(input)->nll_loss(r, &tw, xc, tc, wc, ignore_index, reduction, base);
  mt_tensor_release(xc);
  mt_tensor_release(tc);
  mt_tensor_release(wc);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  if (total_weight) *total_weight = tw;
  return mt_give(r, result);
}

mt_status mt_nll_loss(mt_tensor *input, mt_tensor *target, mt_tensor *weight, int64_t ignore_index, int reduction,
                      int64_t index_base, mt_tensor **result, double *total_weight) {
  if (mt_records(input) && mt_autograd.nll_loss)
    return mt_autograd.nll_loss(input, target, weight, ignore_index, reduction, index_base, result, total_weight);
  return nll_loss(input, target, weight, ignore_index, reduction, index_base, result, total_weight);
}

mt_status mt_nll_loss_backward(mt_tensor *g, mt_tensor *input, mt_tensor *target, mt_tensor *weight,
                               int64_t ignore_index, int reduction, double total_weight, int64_t index_base,
                               mt_tensor **result) {
  MT_TRY(mt_check_kernel(MT_OP_NLL_LOSS, input));
  mt_tensor *gc = NULL, *gcv = NULL, *tc = NULL, *wc = NULL, *r = NULL;
  mt_status s = MT_OK;
  if (g->_dtype != input->_dtype) s = mt_as_dtype(g, input->_dtype, &gcv);
  if (!s) s = mt_contiguous(gcv ? gcv : g, &gc);
  if (!s) s = mt_contiguous(target, &tc);
  if (!s && weight) s = mt_contiguous(weight, &wc);
  if (!s) s = mt_new(mt_device_of(input), input->_sizes, input->_ndim, input->_dtype, "nll_loss_backward", &r);
  if (!s)
    s = mt_kernels_of(input)->nll_loss_backward(r, gc, tc, wc, ignore_index, reduction, total_weight, index_base);
  mt_tensor_release(gcv);
  mt_tensor_release(gc);
  mt_tensor_release(tc);
  mt_tensor_release(wc);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}
