/* softmax.h -- the vectorised float32 softmax and log_softmax kernels (s6-vec, issue 12's speed): one
 * line-set at a time, called by softmax.c, written in vmath512.c (AVX-512) and vmath.c (AVX2+FMA) beside
 * the vector exp and log they use. Internal to the core.
 *
 * A call works on `w` adjacent lines of `n` elements each: element k of line j is at [k * st + j].
 * st == 1 (w == 1): one contiguous row (softmax over the last dim); st > 1 (1 <= w <= st): w columns
 * (softmax over an inner dim, the lanes running along the contiguous dim).
 *  fwd: out = softmax or (log) log_softmax of x along the lines: a max pass, an exp(x - max) + sum pass
 *       (the exps stored for softmax), then a scale pass (out *= 1 / sum) or, for log_softmax,
 *       out = (x - max) - log(sum). A row of -inf (max -inf) gives NaN, as PyTorch; NaN propagates.
 *  bwd: gin from the output gradient g and the forward's output y: softmax y (g - sum(g y)),
 *       log_softmax g - exp(y) sum(g). */
#ifndef MT_TENSOR_SOFTMAX_H
#define MT_TENSOR_SOFTMAX_H

#include "cpu.h"

typedef void (*mt_softmax_fwd_fn)(float *out, const float *x, int64_t n, int64_t st, int64_t w, int log);
typedef void (*mt_softmax_bwd_fn)(float *gin, const float *g, const float *y, int64_t n, int64_t st, int64_t w,
                                  int log);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
void mt_v5_softmax_fwd(float *out, const float *x, int64_t n, int64_t st, int64_t w, int log);
void mt_v5_softmax_bwd(float *gin, const float *g, const float *y, int64_t n, int64_t st, int64_t w, int log);
void mt_vm_softmax_fwd(float *out, const float *x, int64_t n, int64_t st, int64_t w, int log);
void mt_vm_softmax_bwd(float *gin, const float *g, const float *y, int64_t n, int64_t st, int64_t w, int log);
#endif

/* softmax.c: the float32 forward with the kernels above (the CPU's level), into a contiguous `out` of a's
 * shape; 0 when it does not take the call (another dtype, a 0-dim tensor, no vector level), 1 when it did
 * (*status: MT_OK, or the failure of a contiguous copy of a). */
int mt_cpu_softmax_vec(mt_tensor *out, const mt_tensor *a, int dim, int log, mt_status *status);

#endif
