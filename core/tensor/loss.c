/* loss.c -- the CPU's negative log-likelihood kernels (issue 12, the modules part), PyTorch's
 * nll_loss over an (n, c) contiguous input of log-probabilities and n class targets (int64,
 * counted from `base`): out[i] = -w[t_i] * x[i, t_i], 0 where t_i is ignore_index; reduced to the
 * sum, or the mean weighted by the sum of the targets' weights (total_weight). The backward writes
 * -w[t_i] * g (divided by total_weight for the mean) at each row's target and 0 elsewhere. */
#include "cpu.h"

enum { NLL_NONE = 0, NLL_MEAN = 1, NLL_SUM = 2 };

static mt_status check_target(int64_t t, int64_t c, int64_t base) {
  if (t < base || t >= c + base)
    return mt_error(MT_ERANGE, "nll_loss: Target %lld is out of bounds.%s", (long long)t, MT_BASE_HINT(t, base));
  return MT_OK;
}

#define NLL_FORWARD(T)                                                                                  \
  static mt_status nll_forward_##T(T *out, double *total_weight, const T *x, const int64_t *tg,        \
                                   const T *w, int64_t n, int64_t c, int64_t ignore, int reduction,     \
                                   int64_t base) {                                                      \
    double sum = 0, tw = 0;                                                                             \
    for (int64_t i = 0; i < n; i++) {                                                                   \
      int64_t t = tg[i];                                                                                \
      if (t == ignore) {                                                                                \
        if (reduction == NLL_NONE) out[i] = 0;                                                          \
        continue;                                                                                       \
      }                                                                                                 \
      MT_TRY(check_target(t, c, base));                                                                 \
      double wt = w ? (double)w[t - base] : 1.0;                                                        \
      double l = -wt * (double)x[i * c + (t - base)];                                                   \
      if (reduction == NLL_NONE) out[i] = (T)l;                                                         \
      sum += l;                                                                                         \
      tw += wt;                                                                                         \
    }                                                                                                   \
    if (reduction == NLL_SUM) out[0] = (T)sum;                                                          \
    else if (reduction == NLL_MEAN) out[0] = (T)(sum / tw);                                             \
    *total_weight = tw;                                                                                 \
    return MT_OK;                                                                                       \
  }
NLL_FORWARD(float)
NLL_FORWARD(double)

mt_status mt_cpu_nll_loss(mt_tensor *out, double *total_weight, const mt_tensor *input, const mt_tensor *target,
                          const mt_tensor *weight, int64_t ignore_index, int reduction, int64_t base) {
  int64_t n = target->_numel, c = input->_sizes[input->_ndim - 1];
  const int64_t *tg = (const int64_t *)target->_data;
  if (input->_dtype == MT_FLOAT32)
    return nll_forward_float((float *)out->_data, total_weight, (const float *)input->_data, tg,
                             weight ? (const float *)weight->_data : NULL, n, c, ignore_index, reduction, base);
  return nll_forward_double((double *)out->_data, total_weight, (const double *)input->_data, tg,
                            weight ? (const double *)weight->_data : NULL, n, c, ignore_index, reduction, base);
}

#define NLL_BACKWARD(T)                                                                                 \
  static void nll_backward_##T(T *gin, const T *g, const int64_t *tg, const T *w, int64_t n, int64_t c, \
                               int64_t ignore, int reduction, double total_weight, int64_t base) {      \
    for (int64_t i = 0; i < n * c; i++) gin[i] = 0;                                                     \
    double scale = reduction == NLL_MEAN ? 1.0 / total_weight : 1.0;                                    \
    for (int64_t i = 0; i < n; i++) {                                                                   \
      int64_t t = tg[i];                                                                                \
      if (t == ignore || t < base || t >= c + base) continue;                                           \
      double gi = reduction == NLL_NONE ? (double)g[i] : (double)g[0];                                  \
      double wt = w ? (double)w[t - base] : 1.0;                                                        \
      gin[i * c + (t - base)] = (T)(-wt * gi * scale);                                                  \
    }                                                                                                   \
  }
NLL_BACKWARD(float)
NLL_BACKWARD(double)

mt_status mt_cpu_nll_loss_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *target,
                                   const mt_tensor *weight, int64_t ignore_index, int reduction, double total_weight,
                                   int64_t base) {
  int64_t n = target->_numel, c = gin->_sizes[gin->_ndim - 1];
  const int64_t *tg = (const int64_t *)target->_data;
  if (gin->_dtype == MT_FLOAT32)
    nll_backward_float((float *)gin->_data, (const float *)g->_data, tg, weight ? (const float *)weight->_data : NULL,
                       n, c, ignore_index, reduction, total_weight, base);
  else
    nll_backward_double((double *)gin->_data, (const double *)g->_data, tg,
                        weight ? (const double *)weight->_data : NULL, n, c, ignore_index, reduction, total_weight,
                        base);
  return MT_OK;
}
