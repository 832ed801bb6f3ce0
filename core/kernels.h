/* kernels.h -- what a backend computes: the kernel table, one slot per kind of computation.
 *
 * The dispatch layer (core/ops/) checks an op's arguments, works out its result's shape and dtype,
 * allocates the result on the inputs' device and converts operands to the dtype a kernel computes
 * in; then it calls the kernel of that device's backend (core/backend.h). A kernel only computes:
 * its arguments are valid, its outputs allocated. It fails only for what it alone can see (a value
 * out of range in an index tensor, an integer division by zero, memory for scratch space).
 * Kernels that make results whose shape depends on the data (nonzero, masked_select, unique, ...)
 * allocate those results themselves, on their own device.
 *
 * Every backend fills a table of this one type; a NULL slot is an op that backend cannot run,
 * which the dispatch layer reports as MT_EDEVICE naming the op and the device. */
#ifndef MT_KERNELS_H
#define MT_KERNELS_H

#include "mt_internal.h"

/* One batched strided matrix product: C[p] = alpha * A[p] @ B[p] + beta * C[p] for p < nb, each
 * matrix given by its geometry (rows, cols and their strides, in elements) and a per-batch offset
 * in elements (NULL: 0). beta == 0: C is not read. */
typedef struct mt_matrix_geo {
  int64_t r, c;   /* rows, cols */
  int64_t rs, cs; /* strides in elements */
} mt_matrix_geo;
typedef struct mt_gemm {
  int dt;
  int64_t nb, M, N, K;
  double alpha, beta;
  const char *A, *B;
  char *C;
  mt_matrix_geo ga, gb, gc;
  const int64_t *aoff, *boff, *coff;
} mt_gemm;

/* The geometry of im2col / col2im (issue 12, conv part): nsp (1 to 3) spatial dims, the image's sizes
 * `in`, the blocks' grid `out`, kernel, stride, padding, dilation. */
typedef struct mt_conv_geo {
  int nsp;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
} mt_conv_geo;

/* A convolution as a backend computes it (issue 21: the whole CPU convolution lives behind these slots):
 * nsp (1 to 3) spatial dims, groups g. Not transposed: x (N, C, *in) -> out (N, Cout, *out), weight
 * (Cout, C/g, *k). Transposed: x (N, C, *in) -> out (N, Cout, *out), weight (C, Cout/g, *k), out's sizes
 * (in - 1) s - 2p + d (k - 1) + op + 1. The front door (core/ops/conv.c) has checked and worked out all
 * of it; x, w, bias and every result are contiguous, of one float dtype. */
typedef struct mt_conv_args {
  int nsp, transposed;
  int64_t N, C, Cout, groups;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3], op[3];
} mt_conv_args;

/* The indexed writes of index_add / index_copy_. */
enum { MT_INDEX_ADD, MT_INDEX_COPY };

/* issue 12, pooling. The pools and resamplings see their input as contiguous planes (P, S0, S1, S2):
 * the spatial dims, 1 where fewer than 3 are pooled, and the result as (P, O0, O1, O2). */
/* max pools: output o of dim d reads count[d][o] positions start[d][o] + k * step[d] (all inside) */
typedef struct mt_windows {
  int64_t in[3], out[3], step[3];
  const int64_t *start[3], *count[3];
} mt_windows;
/* linear resamplings: out[o0, o1, o2] = scale * sum over taps t of w0[o0, t0] w1[o1, t1] w2[o2, t2]
 * x[i0[o0, t0], i1[o1, t1], i2[o2, t2]], ntaps[d] taps per output of dim d; the adjoint writes x's
 * shape from out's (zeroed first) */
typedef struct mt_taps {
  int64_t in[3], out[3];
  int32_t ntaps[3], box; /* box: along the last dim each output's taps are a run of positions from its first
                          * tap, of one weight, the unused taps (weight 0) after them */
  const int64_t *index[3];
  const double *weight[3];
  double scale;
} mt_taps;
/* pool_index over planes (P, M) of out and (P, K) of src and indices (int64 positions in a plane of
 * out from base): MT_POOL_SCATTER_ADD, MT_POOL_SCATTER_SET write out (zeroed first) from src;
 * MT_POOL_GATHER writes src-shaped out from the planes of `src` read at indices */
enum { MT_POOL_SCATTER_ADD, MT_POOL_SCATTER_SET, MT_POOL_GATHER };

/* issue 25: the quantized product of qgemm.c: out (M x N, row stride ldo; float32 out_f32, or uint8 out_u8
 * requantized with out_scale, out_zp) from A (M x K uint8, row stride lda; zero point a_zp, scale a_scale)
 * and W (N x K int8, row stride ldw; w_scale[N] / w_zp[N] when per_channel, else [1]; w_zp NULL: 0),
 * plus bias[N] (float32, or NULL); relu clamps the result at 0 */
typedef struct mt_qgemm {
  int64_t M, N, K;
  const uint8_t *A;
  int64_t lda;
  double a_scale;
  int64_t a_zp;
  const int8_t *W;
  int64_t ldw;
  const uint32_t *Wp;    /* W packed by the qpack kernel (panels, then the column sums), or NULL: packed here */
  const double *w_scale;
  const int64_t *w_zp;
  int per_channel;
  const float *bias;
  float *out_f32;
  uint8_t *out_u8;
  int64_t ldo;
  double out_scale;
  int64_t out_zp;
  int relu;
} mt_qgemm;

/* the int32 elements a packed int8 weight of N x K takes (qgemm.c's layout) */
static inline int64_t mt_qpack_size(int64_t N, int64_t K) { return ((N + 31) / 32) * ((K + 3) / 4) * 32 + N; }

/* X(slot, parameters): every kernel returns mt_status. */
#define MT_KERNEL_LIST(X)                                                                                         \
  /* copy.c: dst <- src (src broadcast to dst's shape, any dtypes, no overlap); fill */                          \
  X(copy, (mt_tensor * dst, const mt_tensor *src))                                                                \
  X(fill, (mt_tensor * t, double value))                                                                          \
  /* elementwise.c: a, b in the compute dtype; out of the broadcast shape */                                     \
  X(unary, (mt_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2))                                    \
  X(binary, (mt_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b))                                     \
  X(where, (mt_tensor * out, const mt_tensor *cond, const mt_tensor *a, const mt_tensor *b))                      \
  /* g * op'(x) in one pass, for the unary ops whose backward a backend fuses (MT_ENOTIMPL: not op) */            \
  X(unary_grad, (mt_op op, mt_tensor *out, const mt_tensor *g, const mt_tensor *x))                                 \
  /* reduce.c: mask[d] says whether dim d of a is reduced */                                                     \
  X(reduce, (mt_op op, mt_tensor *out, const mt_tensor *a, const bool *mask, int keepdim, double p))               \
  X(reduce_index, (mt_tensor * values, mt_tensor *indices, const mt_tensor *a, int dim, int keepdim, int is_min, \
                   int64_t base))                                                                                 \
  X(cumulative, (mt_tensor * out, const mt_tensor *a, int dim, int is_prod))                                      \
  X(softmax, (mt_tensor * out, const mt_tensor *a, int dim, int log))                                            \
  X(isclose, (mt_tensor * out, const mt_tensor *a, const mt_tensor *b, double rtol, double atol, int equal_nan))  \
  /* index.c: index tensors int64 (or int32) of positions from `base`, checked by the kernel */                  \
  X(index_select, (mt_tensor * out, const mt_tensor *a, int dim, const mt_tensor *index, int64_t base))          \
  X(gather, (mt_tensor * out, const mt_tensor *a, int dim, const mt_tensor *index, int64_t base))                \
  X(scatter, (mt_tensor * t, int dim, const mt_tensor *index, const mt_tensor *src, double value, int reduce,    \
              int64_t base))                                                                                      \
  X(index_write, (mt_tensor * t, int dim, const mt_tensor *index, const mt_tensor *src, int kind, double alpha,  \
                  int64_t base))                                                                                  \
  X(index_fill, (mt_tensor * t, int dim, const mt_tensor *index, double value, int64_t base))                    \
  X(masked_fill, (mt_tensor * t, const mt_tensor *mask, double value))                                            \
  X(masked_select, (const mt_tensor *a, const mt_tensor *mask, mt_tensor **result))                              \
  X(masked_scatter, (mt_tensor * t, const mt_tensor *mask, const mt_tensor *src))                                 \
  X(nonzero, (const mt_tensor *a, int64_t base, mt_tensor **result))                                              \
  X(index, (mt_tensor * out, const mt_tensor *w, int n, mt_tensor *const *indices, const int *raw, int64_t base)) \
  X(index_put, (mt_tensor * w, int n, mt_tensor *const *indices, const int *raw, const mt_tensor *values,        \
                int accumulate, int64_t base))                                                                    \
  X(triangle, (mt_tensor * t, int64_t diagonal, int upper))                                                       \
  X(one_hot, (const mt_tensor *index, int64_t num_classes, int64_t base, mt_tensor **result))                    \
  X(arange, (mt_tensor * out, double start, double step))                                                         \
  X(linspace, (mt_tensor * out, double start, double end, double base, int log))                                  \
  /* sort.c */                                                                                                    \
  X(sort, (mt_tensor * values, mt_tensor *indices, const mt_tensor *a, int dim, int descending, int64_t base))   \
  X(unique, (const mt_tensor *a, int64_t base, mt_tensor **values, mt_tensor **inverse, mt_tensor **counts))     \
  X(searchsorted, (mt_tensor * out, const mt_tensor *sorted, const mt_tensor *values, int right, int64_t base))  \
  X(bincount, (const mt_tensor *a, const mt_tensor *weights, int64_t minlength, mt_tensor **result))             \
  /* out[i0, i1, ...] = src[maps[0][i0] + maps[1][i1] + ...] (element offsets): flip, roll, repeat, ... */      \
  X(rearrange, (mt_tensor * out, const mt_tensor *src, int64_t *const *maps))                                    \
  /* linalg.c: out (k x n) = a (k) times b (n), one product per element; a, b and out of one float dtype */    \
  X(outer, (mt_tensor * out, const mt_tensor *a, const mt_tensor *b))                                             \
  X(gemm, (const mt_gemm *g))                                                                                     \
  /* random.c: fills in the order PyTorch's CPU generator draws (g: a CPU generator) */                          \
  X(uniform, (mt_tensor * t, double from, double to, mt_generator *g))                                           \
  X(normal, (mt_tensor * t, double mean, double std, mt_generator *g))                                           \
  X(random, (mt_tensor * t, int64_t from, int64_t to, mt_generator *g))                                          \
  X(bernoulli, (mt_tensor * t, double p, mt_generator *g))                                                       \
  X(bernoulli_tensor, (mt_tensor * t, const mt_tensor *p, mt_generator *g))                                      \
  X(exponential, (mt_tensor * t, double lambd, mt_generator *g))                                                 \
  X(randperm, (mt_tensor * out, int64_t base, mt_generator *g))                                                  \
  X(multinomial, (mt_tensor * out, const mt_tensor *probs, int replacement, int64_t base, mt_generator *g))      \
  /* samplers.c: torch.distributions' samplers (PyTorch's CPU algorithms, drawing what it draws) and the */     \
  /* reparameterized gradients; every operand contiguous, of out's shape and float dtype */                     \
  X(standard_gamma, (mt_tensor * out, const mt_tensor *alpha, mt_generator *g))                                  \
  X(sample_dirichlet, (mt_tensor * out, const mt_tensor *alpha, mt_generator *g))                                \
  X(poisson, (mt_tensor * out, const mt_tensor *rates, mt_generator *g))                                         \
  X(binomial, (mt_tensor * out, const mt_tensor *count, const mt_tensor *prob, mt_generator *g))                 \
  X(standard_gamma_grad, (mt_tensor * out, const mt_tensor *alpha, const mt_tensor *x))                          \
  X(dirichlet_grad, (mt_tensor * out, const mt_tensor *x, const mt_tensor *alpha, const mt_tensor *total))       \
  /* sgd.c: one optimizer step in place (buf NULL without momentum) */                                          \
  X(sgd_step, (mt_tensor * param, const mt_tensor *grad, mt_tensor *buf, const mt_sgd_settings *s, int first_step)) \
  /* pool.c (issue 12, pooling): over contiguous (P, S0, S1, S2) planes, see mt_windows, mt_taps */              \
  X(pool_max, (mt_tensor * values, mt_tensor *indices, const mt_tensor *x, const mt_windows *w, int64_t base))   \
  X(resample, (mt_tensor * out, const mt_tensor *x, const mt_taps *t, int adjoint))                               \
  X(pool_index, (mt_tensor * out, const mt_tensor *src, const mt_tensor *indices, int kind, int64_t base))             \
  /* conv.c (issue 12, conv part): image (n, c, *in) <-> columns (n, c * prod(k), prod(out)), both contiguous; */  \
  /* col2im overwrites the image with the sum of the blocks */                                                   \
  X(im2col, (mt_tensor * cols, const mt_tensor *image, const mt_conv_geo *g))                                    \
  X(col2im, (mt_tensor * image, const mt_tensor *cols, const mt_conv_geo *g))                                          \
  /* conv.c: a convolution into out (bias: NULL or (Cout)); and its weight's gradient gw (the weight's shape) */ \
  /* from the output's gradient gout (out's shape) and the input x, not recorded (see mt_conv_args) */          \
  X(convolution, (mt_tensor * out, const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias,                \
                  const mt_conv_args *a))                                                                         \
  X(conv_weight_grad, (mt_tensor * gw, const mt_tensor *gout, const mt_tensor *x, const mt_conv_args *a))         \
  /* rnn.c (issue 12, rnn part): one recurrent time step's gates; 2-D operands whose rows have unit stride,   \
   * biases NULL or contiguous, results and ws (the activated gates, for the backward) contiguous;          \
   * in the backwards dhy, dcy may be NULL (no gradient)                                                    \
   */                                                                                                         \
  X(lstm_cell, (mt_tensor * hy, mt_tensor *cy, mt_tensor *ws, const mt_tensor *ig, const mt_tensor *hg,        \
                const mt_tensor *cx, const mt_tensor *bi, const mt_tensor *bh))                               \
  X(lstm_cell_backward, (mt_tensor * dgates, mt_tensor *dcx, const mt_tensor *dhy, const mt_tensor *dcy,      \
                         const mt_tensor *cx, const mt_tensor *cy, const mt_tensor *ws))                     \
  X(gru_cell, (mt_tensor * hy, mt_tensor *ws, const mt_tensor *ig, const mt_tensor *hg, const mt_tensor *hx,   \
               const mt_tensor *bi, const mt_tensor *bh))                                                     \
  X(gru_cell_backward, (mt_tensor * dig, mt_tensor *dhg, mt_tensor *dhx, const mt_tensor *dhy,                \
                        const mt_tensor *hx, const mt_tensor *ws))                                                     \
  /* optimizers (issue 13) -- adam.c: one Adam/AdamW step in place (max_sq NULL without amsgrad); */              \
  /* step: the step's number after the increment */                                                              \
  X(adam_step, (mt_tensor * param, const mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_avg_sq,             \
                mt_tensor *max_sq, const mt_adam_settings *s, double step))                                   \
  /* adaptive.c: RMSprop (grad_avg NULL unless centered, buf NULL without momentum) and Adagrad */                \
  /* (clr: the step's learning rate after lr_decay) */                                                              \
  X(rmsprop_step, (mt_tensor * param, const mt_tensor *grad, mt_tensor *square_avg, mt_tensor *grad_avg,           \
                   mt_tensor *buf, const mt_rmsprop_settings *s))                                                   \
  X(adagrad_step, (mt_tensor * param, const mt_tensor *grad, mt_tensor *sum, const mt_adagrad_settings *s, double clr)) \
  /* adaptive.c: Adadelta, and Adamax (clr: lr / (1 - beta1^step)) */                                              \
  X(adadelta_step, (mt_tensor * param, const mt_tensor *grad, mt_tensor *square_avg, mt_tensor *acc_delta,         \
                    const mt_adadelta_settings *s))                                                                 \
  X(adamax_step, (mt_tensor * param, const mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_inf,                \
                  const mt_adamax_settings *s, double clr))                                                            \
  /* norm.c (issue 12, the modules part): m contiguous rows of n elements; w, b, mean, rstd NULL or contiguous */ \
  X(layer_norm, (mt_tensor * out, mt_tensor *mean, mt_tensor *rstd, const mt_tensor *x, const mt_tensor *w,         \
                 const mt_tensor *b, int64_t m, int64_t n, double eps))                                             \
  X(layer_norm_backward, (mt_tensor * gx, mt_tensor *gw, mt_tensor *gb, const mt_tensor *g, const mt_tensor *x,     \
                          const mt_tensor *mean, const mt_tensor *rstd, const mt_tensor *w, int64_t m, int64_t n)) \
  /* loss.c (issue 12): nll_loss over an (n, c) contiguous input, targets int64 from `base` (checked here) */      \
  X(nll_loss, (mt_tensor * out, double *total_weight, const mt_tensor *input, const mt_tensor *target,             \
               const mt_tensor *weight, int64_t ignore_index, int reduction, int64_t base))                        \
  X(nll_loss_backward, (mt_tensor * gin, const mt_tensor *g, const mt_tensor *target, const mt_tensor *weight,     \
                        int64_t ignore_index, int reduction, double total_weight, int64_t base))          \
  /* ctc.c (issue 12): per-sample CTC losses (out (N)) and their gradient (gin (T, N, C)); blank 0-based */         \
  X(ctc_loss, (mt_tensor * out, const mt_tensor *log_probs, const mt_tensor *targets,                              \
               const mt_tensor *input_lengths, const mt_tensor *target_lengths, int64_t blank, int zero_infinity,  \
               int64_t base))                                                                                      \
  X(ctc_loss_backward, (mt_tensor * gin, const mt_tensor *g, const mt_tensor *log_probs, const mt_tensor *targets, \
                        const mt_tensor *input_lengths, const mt_tensor *target_lengths, int64_t blank,            \
                        int64_t base))                                                                             \
  /* bag.c (issue 12): embedding_bag's segment reduce (pad: 0-based row or -1) and its backward */                  \
  X(embedding_bag, (mt_tensor * out, mt_tensor *max_arg, const mt_tensor *weight, const mt_tensor *indices,        \
                    const mt_tensor *starts, const mt_tensor *psw, int mode, int64_t pad, int64_t base))          \
  X(embedding_bag_backward, (mt_tensor * gw, mt_tensor *gpsw, const mt_tensor *g, const mt_tensor *weight,        \
                             const mt_tensor *indices, const mt_tensor *starts, const mt_tensor *psw,             \
                             const mt_tensor *max_arg, int mode, int64_t pad, int64_t base, int scale_grad_by_freq)) \
  /* softmax.c (s6-vec): the fused softmax / log_softmax backward; gin, g and y contiguous, of one shape */        \
  X(softmax_backward, (mt_tensor * gin, const mt_tensor *g, const mt_tensor *y, int dim, int log))                \
  /* sparse.c (issue 24): products with a CSR matrix W of m rows (crow (m + 1), col (nnz) int64 counted from     \
   * `base`, checked here against d's or out's k rows; vals (nnz)); every tensor contiguous but d and g, whose   \
   * rows only are (stride 1 within a row): out (m, n) = W @ d (out (n, m) = (W @ d)^T when transposed), d (k,   \
   * n); out (k, n) = W^T @ g, g (m, n); gv (nnz) = g[i, :] . d[col, :] for each entry (i, col) */                \
  X(csr_mm, (mt_tensor * out, int transposed, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *vals, \
             const mt_tensor *d, int64_t base))                                                                    \
  X(csr_mm_t, (mt_tensor * out, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *vals,                \
               const mt_tensor *g, int64_t base))                                                                  \
  X(csr_sddmm, (mt_tensor * gv, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *g,                   \
                const mt_tensor *d, int64_t base))                                                                \
  /* qgemm.c (issue 25): quantized kernels; q and x contiguous, per channel over (outer, channels, inner) */      \
  X(quantize, (mt_tensor * q, const mt_tensor *x, const double *scales, const int64_t *zps, int64_t outer,        \
               int64_t channels, int64_t inner, int64_t qmin, int64_t qmax))                                       \
  X(dequantize, (mt_tensor * x, const mt_tensor *q, const double *scales, const int64_t *zps, int64_t outer,      \
                 int64_t channels, int64_t inner))                                                                 \
  X(qgemm, (const mt_qgemm *g))                                                                                   \
  /* packed (int32, mt_qpack_size(N, K) elements) <- W (N x K int8, contiguous) as qgemm reads it, once */        \
  X(qpack, (mt_tensor * packed, const mt_tensor *w))                                                              \
  /* x (float32, contiguous) -> q (uint8): min and max of x, PyTorch's ChooseQuantizationParams, quantize */      \
  X(quantize_dynamic, (mt_tensor * q, const mt_tensor *x, int reduce_range, double *scale, int64_t *zero_point))  \
  /* the quantized 2-D convolution (groups 1) straight from x (N, C, H, W) uint8 contiguous: g's W is the weight  \
   * as (Co = g->N) x (K = C * KH * KW) int8, a_scale / a_zp x's; scales, zero points, bias, relu and out_u8      \
   * ((N, Co, OH, OW) contiguous: o = {OH, OW}) as qgemm's (g->M, A, lda, Wp, out_f32 and ldo unused) */         \
  X(qconv2d, (const mt_qgemm *g, const mt_tensor *x, const int64_t *k, const int64_t *s, const int64_t *p,        \
              const int64_t *d, const int64_t *o))                                                         \
  /* lapack.c (torch.linalg's decompositions, by LAPACK): `nb` row-major (m, n) float32 or float64 matrices, every \
   * tensor contiguous of that one dtype (info, pivots int32; rank int64) with the batch first; the column-major copies are made  \
   * here. info: LAPACK's per matrix (0 ok, > 0 the routine's failure, -4 for svd and lstsq: a non-finite     \
   * input; eigh gives NaN results for one). */                                                                   \
  X(cholesky, (mt_tensor * L, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n, int upper))            \
  X(solve_triangular, (mt_tensor * X, const mt_tensor *A, const mt_tensor *B, int64_t nb, int64_t n, int64_t k,  \
                       int upper, int left, int unitriangular))                                                  \
  /* mode 0 reduced (Q (m, min), R (min, n)), 1 complete (Q (m, m), R (m, n)), 2 R alone (Q NULL), 3 geqrf's  \
   * results (Q (m, n): R and the Householder vectors, R: tau (min)) */                                           \
  X(qr, (mt_tensor * Q, mt_tensor *R, const mt_tensor *A, int64_t nb, int64_t m, int64_t n, int mode))          \
  X(eigh, (mt_tensor * w, mt_tensor *V, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n, int upper)) \
  /* U (m, full ? m : min), S (min), Vh (full ? n : min, n); U and Vh NULL: values only */                        \
  X(svd, (mt_tensor * U, mt_tensor *S, mt_tensor *Vh, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t m, \
          int64_t n, int full))                                                                                   \
  /* least squares by gelsd (svd) or gelsy: X (n, k), rank (nb), S (min(m, n); gelsd's only) from A (m, n), B (m, k) */ \
  X(lstsq, (mt_tensor * X, mt_tensor *rank, mt_tensor *S, mt_tensor *info, const mt_tensor *A, const mt_tensor *B, \
            int64_t nb, int64_t m, int64_t n, int64_t k, double rcond, int svd))                                 \
  X(lu_factor, (mt_tensor * LU, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t m,    \
                int64_t n))                                                                                       \
  /* getrs: X (n, k) with A X = B (trans: A^T X = B), A = P L U as lu_factor left it (LU (n, n), pivots (n)) */   \
  X(lu_solve, (mt_tensor * X, const mt_tensor *LU, const mt_tensor *pivots, const mt_tensor *B, int64_t nb,       \
               int64_t n, int64_t k, int trans))                                                                  \
  /* sytrf (lower, Bunch-Kaufman): LD (n, n), pivots (n) as LAPACK's; sytrs: X (n, k) with A X = B from them */    \
  X(ldl_factor, (mt_tensor * LD, mt_tensor *pivots, mt_tensor *info, const mt_tensor *A, int64_t nb, int64_t n)) \
  X(ldl_solve, (mt_tensor * X, const mt_tensor *LD, const mt_tensor *pivots, const mt_tensor *B, int64_t nb,      \
                int64_t n, int64_t k))

/* the slots by number: the op list of core/moontorch.h names each op's slot */
#define MT_KERNEL_SLOT_(slot, params) MT_SLOT_##slot,
typedef enum mt_kernel_slot { MT_SLOT_none = -1, MT_KERNEL_LIST(MT_KERNEL_SLOT_) MT_SLOT_COUNT } mt_kernel_slot;
#undef MT_KERNEL_SLOT_

#define MT_KERNEL_FIELD_(slot, params) mt_status(*slot) params;
typedef struct mt_kernels {
  MT_KERNEL_LIST(MT_KERNEL_FIELD_)
} mt_kernels;
#undef MT_KERNEL_FIELD_

#endif
