/* abi.h -- what the CUDA backend's C side (core/gpu/ C files: the kernel slots, which read tensors and
 * work out geometry) hands its kernels (core/gpu/k_*.cu): plain structs of pointers, sizes and
 * strides, and one table of launchers per runtime. The kernel files are compiled twice, by nvcc
 * for the GPU (mt_gpu_real_kernels) and by the host C++ compiler for the emulator
 * (mt_gpu_emu_kernels); the C side calls whichever table the backend chose.
 *
 * Plain C, includable from C, C++ and CUDA. A launcher returns 0, or -1 when it has no kernel for
 * the op or dtypes (the C side then reports MT_EDTYPE); errors of the work itself (an index out of
 * range, an integer division by zero) land in the device's fault record, read at the next
 * synchronisation. Not installed. */
#ifndef MT_GPU_ABI_H
#define MT_GPU_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MT_GPU_DIMS 16
#define MT_GPU_OPS 5

/* An elementwise iteration: operand 0 the output, the others inputs broadcast to its shape. Dims
 * are ordered by the output's strides (slowest first) and coalesced. `flat`: every operand's
 * element i sits at i * inc[k] (inc 0: one element) and the kernel needs no offset arithmetic. An
 * operand whose data is NULL is a number from the host (scalar[k]: a CPU 0-dim tensor's bytes). */
typedef struct mt_gpu_iter {
  int64_t numel;
  int32_t ndim;
  int32_t flat;
  int32_t nops;
  int32_t pad_;
  int64_t sizes[MT_GPU_DIMS];
  int64_t strides[MT_GPU_OPS][MT_GPU_DIMS]; /* in elements */
  int64_t inc[MT_GPU_OPS];
  char *data[MT_GPU_OPS];
  uint64_t scalar[MT_GPU_OPS]; /* a host number's bytes, in the operand's dtype */
  int32_t dtype[MT_GPU_OPS];
} mt_gpu_iter;

/* The fault record of a device: page-locked host memory the device writes (the first fault wins)
 * and the host reads after a synchronisation. */
enum {
  MT_GPU_FAULT_NONE = 0,
  MT_GPU_FAULT_ZERO_DIVISION = 1, /* integer division by zero */
  MT_GPU_FAULT_NEGATIVE_POWER = 2, /* an integer to a negative integer power */
  MT_GPU_FAULT_INDEX = 3,          /* value: the index, bound: the size it must be below, dim: the dim */
  MT_GPU_FAULT_VALUE = 4,          /* a value out of its domain (value) */
  MT_GPU_FAULT_TARGET = 5,         /* nll_loss: a target out of bounds (value) */
  MT_GPU_FAULT_MAX_INDEX = 6,      /* a pool's index out of its plane (value, bound: the plane) */
  MT_GPU_FAULT_BAG_INDEX = 7,      /* embedding_bag: an index out of range (value, bound: rows) */
  MT_GPU_FAULT_CSR_CROW = 8,       /* csr_mm: crow not a non-decreasing run from base to base + nnz (value: the
                                      row, bound: base, dim: nnz) */
  MT_GPU_FAULT_CSR_COL = 9,        /* csr_mm: a column out of range (value, bound: columns, dim: its position) */
};
typedef struct mt_gpu_fault {
  int32_t code;
  int32_t op; /* the MT_OP_* (or -1) */
  int64_t value, bound, dim;
  int64_t pad_[4];
} mt_gpu_fault;

/* A reduction: `outer` output elements, each the reduction of `inner` input elements. The input
 * element (o, i) is at in_off(o) + in_off2(i): two geometries, the kept dims' and the reduced
 * dims' (both coalesced). */
typedef struct mt_gpu_reduce {
  int64_t outer, inner;
  int32_t ondim, indim;
  int64_t osizes[MT_GPU_DIMS], ostrides_in[MT_GPU_DIMS], ostrides_out[MT_GPU_DIMS];
  int64_t isizes[MT_GPU_DIMS], istrides[MT_GPU_DIMS];
  const char *in;
  char *out;
  int32_t in_dtype, out_dtype;
  int32_t op;     /* MT_OP_SUM, ... */
  int32_t is_int; /* accumulate in int64 (else double) */
  double p;       /* var/std correction, norm order */
} mt_gpu_reduce;

/* A line operation along one dim (cumsum, softmax, max with its index): `lines` lines of `n`
 * elements; line l's element j at off(l) + j * stride, for the input and each output. */
typedef struct mt_gpu_lines {
  int64_t lines, n;
  int32_t ndim;
  int32_t pad_;
  int64_t sizes[MT_GPU_DIMS];
  int64_t strides[3][MT_GPU_DIMS]; /* per operand: the lines' geometry (elements) */
  int64_t stride[3];               /* per operand: along the line */
  char *data[3];
  int32_t dtype[3];
} mt_gpu_lines;

/* An indexed walk over `sizes` (ndim >= 1): element i's plain operand at plain + off(plain_strides), its
 * indexed element at ind + off(ind_strides) + pos * dimstride, pos the index value (at idx +
 * off(idx_strides), int64 or int32) less `base`, checked against dimsize (negative values count from the
 * end when allow_neg). kind: get (plain = indexed), put (indexed = plain), fill, add (indexed += alpha *
 * plain), mul, add a value, multiply by a value (fill and value: the bytes in `fill`). */
typedef struct mt_gpu_indexed {
  int64_t numel;
  int32_t ndim, dim;
  int64_t sizes[MT_GPU_DIMS], plain_strides[MT_GPU_DIMS], ind_strides[MT_GPU_DIMS], idx_strides[MT_GPU_DIMS];
  char *plain, *ind;
  const void *idx;
  int32_t idx_dtype, dtype;
  int64_t dimstride, dimsize, base;
  int32_t allow_neg, kind, op, pad_;
  double alpha;
  uint64_t fill;
  mt_gpu_fault *fault;
} mt_gpu_indexed;

/* A scan in row-major order over `sizes` of the elements whose predicate holds (mask nonzero, or a new
 * run of sorted keys), in chunks: phase 0 counts them (chunks[c]: chunk c's first position, then the
 * total at chunks[nchunks]), phase 1 writes (select: out[pos] = src[i]; scatter: src... see k_index.cu). */
enum { MT_GPU_SCAN_SELECT, MT_GPU_SCAN_SCATTER, MT_GPU_SCAN_NONZERO, MT_GPU_SCAN_UNIQUE };
typedef struct mt_gpu_scan {
  int64_t numel, chunk, nchunks;
  int32_t ndim, kind;
  int64_t sizes[MT_GPU_DIMS];
  int64_t strides[2][MT_GPU_DIMS]; /* the mask's, the other tensor's */
  const char *mask;
  int32_t mask_dtype, dtype; /* dtype: of the moved values */
  char *out;
  const char *src;
  int64_t base;
  /* unique: the sorted keys (double or int64) and their positions in the input */
  const void *keys;
  int32_t keys_float;
  int32_t ncols; /* nonzero: the columns of a row (the tensor's dims) */
  const int64_t *perm;
  int64_t *inverse, *counts;
} mt_gpu_scan;

/* Advanced indexing: w's first k dims taken by k index tensors (int64, contiguous, P elements each: raw
 * values, checked; raw[k]: counted from `base` with negatives from the end, else positions from 0), its
 * trailing dims walked whole (B elements); contig: P x B, the result (get) or the values (put, add). */
typedef struct mt_gpu_advanced {
  int64_t P, B;
  int32_t k, tnd;
  const int64_t *idx[MT_GPU_DIMS];
  int32_t raw[MT_GPU_DIMS];
  int64_t wsizes[MT_GPU_DIMS], wstrides[MT_GPU_DIMS], tsizes[MT_GPU_DIMS], tstrides[MT_GPU_DIMS];
  char *w, *contig;
  int32_t dtype, kind, op, pad_;
  int64_t base;
  mt_gpu_fault *fault;
} mt_gpu_advanced;

/* out (contiguous) [i0, i1, ...] = src[maps[map_at[0] + i0] + maps[map_at[1] + i1] + ...] */
typedef struct mt_gpu_rearrange {
  int64_t numel;
  int32_t ndim, dtype;
  int64_t sizes[MT_GPU_DIMS], map_at[MT_GPU_DIMS];
  const int64_t *maps;
  char *out;
  const char *src;
} mt_gpu_rearrange;

/* Sort lines of n: line l = (outer, inner) at in + outer * in_outer + inner * in_inner, element j at
 * j * stride; the first k of each sorted line out into values / indices (contiguous outer x k x inner);
 * scratch: keys (2 n 8-byte keys a line) and perm (2 n a line); sorted_perm / sorted_keys (one line:
 * unique) take the whole sorted line. */
typedef struct mt_gpu_sort {
  int64_t lines, n, k, inner, in_outer, in_inner, stride;
  int32_t dtype, desc;
  const char *in;
  char *values;
  int64_t *indices;
  void *keys;
  int64_t *perm;
  int64_t *sorted_perm;
  void *sorted_keys;
  int64_t base;
} mt_gpu_sort;

typedef struct mt_gpu_search {
  const char *sorted, *values;
  int32_t sorted_dtype, values_dtype, right, ints;
  int64_t lines, m, per, base;
  int64_t *out;
} mt_gpu_search;

typedef struct mt_gpu_bincount {
  const char *x, *weights;
  int64_t xs, ws, n;
  int32_t x_dtype, weights_dtype, out_dtype, pad_;
  char *out;
} mt_gpu_bincount;

/* One batched product C[p] = alpha A[p] B[p] + beta C[p] (kernels.h's mt_gemm with the batch offsets in
 * device memory): every dtype, any strides, by the generic tiled kernel. */
typedef struct mt_gpu_gemm {
  int32_t dtype, pad_;
  int64_t nb, M, N, K;
  double alpha, beta;
  const char *A, *B;
  char *C;
  int64_t ars, acs, brs, bcs, crs, ccs;
  const int64_t *aoff, *boff, *coff; /* NULL: 0 */
} mt_gpu_gemm;

/* One optimizer step over param, grad and its state tensors (it: operands p, g, then the state in the
 * order of each rule), as the CPU's fused steps: every constant computed on the host in double, each
 * rounded to the parameter's dtype, the operations in PyTorch's order. */
enum { MT_GPU_SGD, MT_GPU_ADAM, MT_GPU_RMSPROP, MT_GPU_ADAGRAD, MT_GPU_ADADELTA, MT_GPU_ADAMAX };
typedef struct mt_gpu_optim {
  int32_t rule;
  int32_t mode;  /* sgd: 0 no momentum, 1 first step, 2 later; adam: 0, 1 weight decay, 2 decoupled */
  int32_t flags; /* sgd: nesterov; adam: amsgrad; rmsprop: 1 centered | 2 momentum */
  int32_t wd_on;
  double c[12]; /* the rule's constants (k_optim.cu) */
} mt_gpu_optim;

/* layer norm over m contiguous rows of n (w, b, mean, rstd: NULL or contiguous); the backward's gw and gb
 * are sums over rows */
typedef struct mt_gpu_ln {
  int64_t m, n;
  double eps;
  int32_t dtype, pad_;
  char *out, *mean, *rstd, *gx, *gw, *gb;
  const char *x, *w, *b, *g;
  const char *fmean, *frstd; /* the backward's saved statistics */
} mt_gpu_ln;

/* nll_loss over an (n, c) contiguous input, int64 targets from base; the forward writes the total
 * weight into tw (device memory) */
typedef struct mt_gpu_nll {
  int64_t n, c, ignore, base;
  int32_t reduction, dtype;
  char *out, *gin;
  double *tw;
  const char *x, *w, *g;
  const int64_t *target;
  double total_weight;
  mt_gpu_fault *fault;
} mt_gpu_nll;

/* im2col / col2im of images (N, C, *in) and columns (N, C * K, L), contiguous, the spatial dims as three */
typedef struct mt_gpu_conv {
  int64_t N, C;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
  int32_t dtype, pad_;
  char *cols, *image;
} mt_gpu_conv;

/* max pools over planes (P, S0, S1, S2) -> (P, O0, O1, O2): output o of dim d reads count[d][o] positions
 * start[d][o] + k * step[d] (device arrays); indices (NULL: none) are positions in a plane from base */
typedef struct mt_gpu_pool {
  int64_t P;
  int64_t in[3], out[3], step[3];
  const int64_t *start[3], *count[3];
  const char *x;
  char *v;
  int64_t *idx;
  int64_t base;
  int32_t dtype, pad_;
} mt_gpu_pool;

/* linear resamplings (kernels.h's mt_taps, its arrays on the device); adjoint: out has x's... see
 * k_nn.cu */
typedef struct mt_gpu_resample {
  int64_t P;
  int64_t in[3], out[3];
  int32_t ntaps[3], box, adjoint, dtype;
  const int64_t *index[3];
  const double *weight[3];
  double scale;
  const char *x;
  char *out_;
} mt_gpu_resample;

/* pool_index: planes (P, M) of out and (P, K) of src and indices; kind as kernels.h's MT_POOL_* */
enum { MT_GPU_POOL_SCATTER_ADD, MT_GPU_POOL_SCATTER_SET, MT_GPU_POOL_GATHER };
typedef struct mt_gpu_pool_index {
  int64_t P, M, K, base;
  int32_t kind, dtype;
  char *out;
  const char *src;
  const int64_t *idx;
  mt_gpu_fault *fault;
} mt_gpu_pool_index;

/* one recurrent time step's gates (kernels.h's lstm_cell, gru_cell and their backwards): 2-D operands with
 * unit stride along a row, the row strides given; NULL: absent */
enum { MT_GPU_LSTM, MT_GPU_LSTM_BACKWARD, MT_GPU_GRU, MT_GPU_GRU_BACKWARD };
typedef struct mt_gpu_rnn {
  int64_t B, H;
  int32_t kind, dtype;
  /* lstm: hy cy ws ig hg cx bi bh | lstm backward: dgates dcx dhy dcy cx cy ws | gru: hy ws ig hg hx bi bh |
   * gru backward: dig dhg dhx dhy hx ws */
  char *t[8];
  int64_t rs[8];
} mt_gpu_rnn;

/* embedding_bag: bags [starts[b], starts[b + 1]) of int64 indices (contiguous), weight (V, D) contiguous */
typedef struct mt_gpu_bag {
  int64_t B, V, D, n, pad, base;
  int32_t mode, dtype, scale_by_freq, pad_;
  const char *w, *psw, *g;
  char *out, *gw, *gpsw;
  int64_t *arg;
  const int64_t *arg_in, *idx, *starts;
  int64_t *freq; /* scale_by_freq: V counts of scratch */
  mt_gpu_fault *fault;
} mt_gpu_bag;

/* The CSR matrix products (k_sparse.cu; kernels.h's csr_mm, csr_mm_t, csr_sddmm): W of m rows (crow m + 1,
 * col and vals nnz, counted from base) with k columns. kind 0: out (m, n) = W @ D, D[r, c] at
 * d[r * sd0 + c * sd1], out[i, c] at out[i * os0 + c * os1]; kind 1: out (k, n) contiguous = W^T @ G (G (m, n)
 * rows of stride ldg); kind 2: out (nnz) = G[i, :] . D[col, :] (D rows of stride sd0). Sums in entry order,
 * as the CPU's. */
enum { MT_GPU_CSR_MM, MT_GPU_CSR_MM_T, MT_GPU_CSR_SDDMM };
typedef struct mt_gpu_csr {
  int64_t m, k, n, nnz, base;
  int64_t sd0, sd1, os0, os1, ldg;
  int32_t kind, dtype;
  const int64_t *crow, *col;
  const char *vals, *d, *g;
  char *out;
  mt_gpu_fault *fault;
} mt_gpu_csr;

/* ctc_loss over log_probs (T, N, C) contiguous, targets (N, S) int64 from base, lengths (N) int64; alpha and
 * beta: N x T x (2S + 1) doubles of scratch */
typedef struct mt_gpu_ctc {
  int64_t T, N, C, S, blank, base;
  int32_t dtype, zero_inf;
  const char *lp, *g;
  char *out;
  const int64_t *tg, *il, *tl;
  double *alpha, *beta, *ll;
} mt_gpu_ctc;

/* A random fill (k_random.cu): kind (uniform, normal, bernoulli, exponential, random, random64,
 * bernoulli with a tensor, 64-bit keys), two values a round for float64 (doubles), the generator's seed and
 * offset; a, b: from/to-from, mean/std, p, lambda; random: range and from */
typedef struct mt_gpu_random {
  uint64_t seed, offset;
  int32_t kind, doubles;
  double a, b;
  uint64_t range;
  int64_t from;
} mt_gpu_random;

typedef struct mt_gpu_kernels {
  /* the launch geometry's bound: the device's multiprocessors (grids are a few blocks per one) */
  void (*configure)(int multiprocessors);
  /* elementwise (k_elementwise.cu): it->data[0] the output */
  int (*unary)(int op, const mt_gpu_iter *it, double p1, double p2, mt_gpu_fault *f, void *stream);
  int (*binary)(int op, const mt_gpu_iter *it, mt_gpu_fault *f, void *stream);
  int (*where)(const mt_gpu_iter *it, void *stream); /* out, cond (bool/uint8), a, b */
  int (*unary_grad)(int op, const mt_gpu_iter *it, void *stream); /* out, g, x */
  int (*isclose)(const mt_gpu_iter *it, double rtol, double atol, int equal_nan, void *stream);
  /* copies and fills (k_copy.cu): out <- in, any two dtypes; out <- value */
  int (*copy)(const mt_gpu_iter *it, void *stream);
  int (*fill)(const mt_gpu_iter *it, double value, void *stream);
  /* out[i] = start + i * step (over out's numel, out contiguous) */
  int (*arange)(const mt_gpu_iter *it, double start, double step, void *stream);
  int (*linspace)(const mt_gpu_iter *it, double start, double end, double base, int log, void *stream);
  /* triu/tril in place over the last two dims: it is t's geometry; rows, cols the last two sizes */
  int (*triangle)(const mt_gpu_iter *it, int64_t diagonal, int upper, void *stream);
  /* reductions (k_reduce.cu) */
  int (*reduce)(const mt_gpu_reduce *r, void *stream);
  int (*reduce_index)(const mt_gpu_lines *l, int is_min, int64_t base, void *stream); /* values, indices, in */
  int (*cumulative)(const mt_gpu_lines *l, int is_prod, void *stream);                 /* out, in */
  int (*softmax)(const mt_gpu_lines *l, int log, void *stream);                        /* out, in */
  int (*softmax_backward)(const mt_gpu_lines *l, int log, void *stream);               /* gin, g, y */
  /* indexing (k_index.cu) */
  int (*indexed)(const mt_gpu_indexed *x, void *stream);
  int (*masked_fill)(const mt_gpu_iter *it, void *stream); /* t, mask; the value's bytes in scalar[0] */
  /* phase 0 into chunks (nchunks + 1 int64 of device memory), phase 1 the writes */
  int (*scan)(const mt_gpu_scan *s, int64_t *chunks, int phase, void *stream);
  int (*advanced)(const mt_gpu_advanced *a, void *stream);
  int (*rearrange)(const mt_gpu_rearrange *r, void *stream);
  int (*one_hot)(int64_t *out, const int64_t *index, int64_t n, int64_t classes, int64_t base, void *stream);
  int (*sort)(const mt_gpu_sort *s, void *stream);
  int (*searchsorted)(const mt_gpu_search *s, void *stream);
  int (*bincount)(const mt_gpu_bincount *c, void *stream);
  /* products (k_linalg.cu) */
  int (*gemm)(const mt_gpu_gemm *g, void *stream);
  /* optimizers (k_optim.cu) */
  int (*optim)(const mt_gpu_optim *o, const mt_gpu_iter *it, void *stream);
  /* the layers' kernels (k_nn.cu) */
  int (*layer_norm)(const mt_gpu_ln *l, int backward, void *stream);
  int (*nll)(const mt_gpu_nll *l, int backward, void *stream);
  int (*conv)(const mt_gpu_conv *c, int col2im, void *stream);
  int (*pool_max)(const mt_gpu_pool *p, void *stream);
  int (*resample)(const mt_gpu_resample *r, void *stream);
  int (*pool_index)(const mt_gpu_pool_index *p, void *stream);
  int (*rnn)(const mt_gpu_rnn *r, void *stream);
  int (*bag)(const mt_gpu_bag *b, int backward, void *stream);
  int (*ctc)(const mt_gpu_ctc *c, int backward, void *stream);
  /* random numbers (k_random.cu): *used is the offset the launch took */
  int (*random)(const mt_gpu_iter *it, const mt_gpu_random *r, uint64_t *used, void *stream);
  int (*multinomial)(const double *cum, const double *u, int64_t *out, int64_t rows, int64_t k, int64_t s,
                     int64_t base, void *stream);
  /* the CSR products (k_sparse.cu): the arrays checked first (faults), then the product */
  int (*csr)(const mt_gpu_csr *c, void *stream);
} mt_gpu_kernels;

extern const mt_gpu_kernels mt_gpu_emu_kernels;
#ifdef MT_HAVE_CUDA
extern const mt_gpu_kernels mt_gpu_real_kernels;
#endif

#ifdef __cplusplus
}
#endif

#endif
