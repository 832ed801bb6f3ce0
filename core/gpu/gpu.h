/* gpu.h -- the CUDA backend's C side (core/gpu/): the runtime it chose (runtime.h: NVIDIA's, or the
 * CPU emulator), the devices and their current streams, the fault records the kernels write, the
 * caching allocator, the elementwise geometry the kernels take (abi.h), and the kernel slots that
 * the backend's table (backend.c) lists. Nothing here is known outside core/gpu/ but through the
 * backend (core/backend.h). Internal to the core. */
#ifndef MT_GPU_H
#define MT_GPU_H

#include "../backend.h"
#include "../optable.h"
#include "abi.h"
#include "runtime.h"

#define MT_GPU_MAX_DEVICES 16

/* ---------------------------------------------------------------- the runtime (context.c) */
/* Chosen once, at the first question: the emulator under MOONTORCH_CUDA_EMULATE=1, else NVIDIA's
 * runtime where this build has it and it finds a device, else none (mt_gpu_rt NULL). */
extern const mt_gpu_runtime *mt_gpu_rt;
extern const mt_gpu_kernels *mt_gpu_k;
int mt_gpu_device_count(void);
/* why there is no device ("" when there is one) */
const char *mt_gpu_unavailable_reason(void);
/* the runtime's failure `code` as MT_EDEVICE "<op>: CUDA error: <text>" */
mt_status mt_gpu_error(int code, const char *op);
#define MT_GPU_TRY(call, op)                                                                                         \
  do {                                                                                                               \
    int mt_gpu_code_ = (call);                                                                                       \
    if (mt_gpu_code_ != 0) return mt_gpu_error(mt_gpu_code_, op);                                                    \
  } while (0)

/* a device index this process has (MT_EDEVICE naming `op` otherwise), made the calling thread's
 * current device */
mt_status mt_gpu_use(int index, const char *op);
/* the calling thread's current stream on device `index` (NULL: the default stream) */
void *mt_gpu_current_stream(int index);
void mt_gpu_set_current_stream(int index, void *stream);
/* t's device made current; its current stream */
static inline void *mt_gpu_stream_of(const mt_tensor *t) {
  extern _Thread_local int mt_gpu_current_device;
  if (__builtin_expect(t->_device_index != mt_gpu_current_device, 0)) mt_gpu_use(t->_device_index, "cuda");
  return mt_gpu_current_stream(t->_device_index);
}
/* the fault record of device `index` (page-locked, written by its kernels) */
mt_gpu_fault *mt_gpu_fault_of(int index);
/* after a synchronisation of device `index`: a fault its kernels recorded, as the error of `op`,
 * cleared */
mt_status mt_gpu_check_fault(int index, const char *op);
mt_status mt_gpu_synchronize(int index);

/* ---------------------------------------------------------------- the caching allocator (alloc.c) */
/* Device memory for tensors, kept for reuse when freed (PyTorch's caching allocator): sizes
 * rounded to 512 bytes; requests up to 1 MiB from 2 MiB segments (the small pool), larger ones
 * from segments of their own rounded size or 20 MiB (the large pool); a free block goes back to
 * the stream it was allocated on, and to other streams only after events recorded on the streams
 * that used it (record_stream) have passed; when the runtime has no memory left, the cached free
 * segments are returned to it and the allocation tried once more. */
void *mt_gpu_malloc(int index, size_t nbytes, void *stream, const char *op);
void mt_gpu_free(void *ptr);
mt_status mt_gpu_record_stream(void *ptr, void *stream);
/* the segments no block uses go back to the runtime */
void mt_gpu_empty_cache(int index);
typedef struct mt_gpu_memory {
  int64_t allocated, allocated_peak; /* bytes in blocks handed out */
  int64_t reserved, reserved_peak;   /* bytes in segments taken from the runtime */
  int64_t active_blocks, segments;
  int64_t allocations, frees;        /* counts */
  int64_t cache_hits;                /* allocations served from cached blocks */
  int64_t retries, ooms;             /* free-and-retry, out of memory */
} mt_gpu_memory;
void mt_gpu_memory_stats(int index, mt_gpu_memory *out);
void mt_gpu_reset_peak(int index);
/* the device whose memory holds p (-1: none of the allocator's) */
int mt_gpu_device_of(const void *p);

/* ---------------------------------------------------------------- geometry (iter.c) */
/* ops[0] the output, the others inputs broadcast to its shape; a CPU 0-dim input becomes a number
 * from the host */
void mt_gpu_iter_make(mt_gpu_iter *it, const mt_tensor *const *ops, int nops);
/* t's own dims, none dropped nor merged (kernels that need coordinates) */
void mt_gpu_iter_raw(mt_gpu_iter *it, const mt_tensor *t);

/* ---------------------------------------------------------------- the kernel slots */
mt_status mt_gpu_copy(mt_tensor *dst, const mt_tensor *src);
mt_status mt_gpu_fill(mt_tensor *t, double value);
mt_status mt_gpu_unary(mt_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2);
mt_status mt_gpu_binary(mt_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b);
mt_status mt_gpu_where(mt_tensor *out, const mt_tensor *cond, const mt_tensor *a, const mt_tensor *b);
mt_status mt_gpu_unary_grad(mt_op op, mt_tensor *out, const mt_tensor *g, const mt_tensor *x);
mt_status mt_gpu_isclose(mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double rtol, double atol,
                         int equal_nan);
mt_status mt_gpu_arange(mt_tensor *out, double start, double step);
mt_status mt_gpu_linspace(mt_tensor *out, double start, double end, double base, int log);
mt_status mt_gpu_triangle(mt_tensor *t, int64_t diagonal, int upper);
mt_status mt_gpu_reduce_slot(mt_op op, mt_tensor *out, const mt_tensor *a, const bool *mask, int keepdim, double p);
mt_status mt_gpu_reduce_index(mt_tensor *values, mt_tensor *indices, const mt_tensor *a, int dim, int keepdim,
                              int is_min, int64_t base);
mt_status mt_gpu_cumulative(mt_tensor *out, const mt_tensor *a, int dim, int is_prod);
mt_status mt_gpu_softmax(mt_tensor *out, const mt_tensor *a, int dim, int log);
mt_status mt_gpu_softmax_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *y, int dim, int log);

mt_status mt_gpu_index_select(mt_tensor *out, const mt_tensor *a, int dim, const mt_tensor *index, int64_t base);
mt_status mt_gpu_gather(mt_tensor *out, const mt_tensor *a, int dim, const mt_tensor *index, int64_t base);
mt_status mt_gpu_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double value,
                         int reduce, int64_t base);
mt_status mt_gpu_index_write(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, int kind,
                             double alpha, int64_t base);
mt_status mt_gpu_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double value, int64_t base);
mt_status mt_gpu_masked_fill(mt_tensor *t, const mt_tensor *mask, double value);
mt_status mt_gpu_masked_select(const mt_tensor *a, const mt_tensor *mask, mt_tensor **result);
mt_status mt_gpu_masked_scatter(mt_tensor *t, const mt_tensor *mask, const mt_tensor *src);
mt_status mt_gpu_nonzero(const mt_tensor *a, int64_t base, mt_tensor **result);
mt_status mt_gpu_index(mt_tensor *out, const mt_tensor *w, int n, mt_tensor *const *indices, const int *raw,
                       int64_t base);
mt_status mt_gpu_index_put(mt_tensor *w, int n, mt_tensor *const *indices, const int *raw, const mt_tensor *values,
                           int accumulate, int64_t base);
mt_status mt_gpu_rearrange_slot(mt_tensor *out, const mt_tensor *src, int64_t *const *maps);
mt_status mt_gpu_one_hot(const mt_tensor *index, int64_t num_classes, int64_t base, mt_tensor **result);
mt_status mt_gpu_bincount_slot(const mt_tensor *a, const mt_tensor *weights, int64_t minlength, mt_tensor **result);
mt_status mt_gpu_sort_slot(mt_tensor *values, mt_tensor *indices, const mt_tensor *a, int dim, int descending,
                      int64_t base);
mt_status mt_gpu_unique(const mt_tensor *a, int64_t base, mt_tensor **values, mt_tensor **inverse,
                        mt_tensor **counts);
mt_status mt_gpu_searchsorted(mt_tensor *out, const mt_tensor *sorted, const mt_tensor *values, int right,
                              int64_t base);
mt_status mt_gpu_sgd_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *buf, const mt_sgd_settings *st,
                          int first_step);
mt_status mt_gpu_adam_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_avg_sq,
                           mt_tensor *max_sq, const mt_adam_settings *st, double step);
mt_status mt_gpu_rmsprop_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *square_avg, mt_tensor *grad_avg,
                              mt_tensor *buf, const mt_rmsprop_settings *st);
mt_status mt_gpu_adagrad_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *sum, const mt_adagrad_settings *st,
                              double clr);
mt_status mt_gpu_adadelta_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *square_avg, mt_tensor *acc_delta,
                               const mt_adadelta_settings *st);
mt_status mt_gpu_adamax_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_inf,
                             const mt_adamax_settings *st, double clr);
mt_status mt_gpu_layer_norm(mt_tensor *out, mt_tensor *mean, mt_tensor *rstd, const mt_tensor *x, const mt_tensor *w,
                            const mt_tensor *b, int64_t m, int64_t n, double eps);
mt_status mt_gpu_layer_norm_backward(mt_tensor *gx, mt_tensor *gw, mt_tensor *gb, const mt_tensor *g, const mt_tensor *x,
                                     const mt_tensor *mean, const mt_tensor *rstd, const mt_tensor *w, int64_t m,
                                     int64_t n);
mt_status mt_gpu_nll_loss(mt_tensor *out, double *total_weight, const mt_tensor *input, const mt_tensor *target,
                          const mt_tensor *weight, int64_t ignore_index, int reduction, int64_t base);
mt_status mt_gpu_nll_loss_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *target,
                                   const mt_tensor *weight, int64_t ignore_index, int reduction, double total_weight,
                                   int64_t base);
mt_status mt_gpu_im2col(mt_tensor *cols, const mt_tensor *image, const mt_conv_geo *g);
mt_status mt_gpu_col2im(mt_tensor *image, const mt_tensor *cols, const mt_conv_geo *g);
/* conv.c: the convolution slots (im2col and device products; cuDNN later) */
mt_status mt_gpu_convolution(mt_tensor *out, const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias,
                             const mt_conv_args *a);
mt_status mt_gpu_conv_weight_grad(mt_tensor *gw, const mt_tensor *gout, const mt_tensor *x, const mt_conv_args *a);
mt_status mt_gpu_pool_max(mt_tensor *values, mt_tensor *indices, const mt_tensor *x, const mt_windows *w,
                          int64_t base);
mt_status mt_gpu_resample_slot(mt_tensor *out, const mt_tensor *x, const mt_taps *t, int adjoint);
mt_status mt_gpu_pool_index_slot(mt_tensor *out, const mt_tensor *src, const mt_tensor *indices, int kind, int64_t base);
mt_status mt_gpu_lstm_cell(mt_tensor *hy, mt_tensor *cy, mt_tensor *ws, const mt_tensor *ig, const mt_tensor *hg,
                           const mt_tensor *cx, const mt_tensor *bi, const mt_tensor *bh);
mt_status mt_gpu_lstm_cell_backward(mt_tensor *dgates, mt_tensor *dcx, const mt_tensor *dhy, const mt_tensor *dcy,
                                    const mt_tensor *cx, const mt_tensor *cy, const mt_tensor *ws);
mt_status mt_gpu_gru_cell(mt_tensor *hy, mt_tensor *ws, const mt_tensor *ig, const mt_tensor *hg, const mt_tensor *hx,
                          const mt_tensor *bi, const mt_tensor *bh);
mt_status mt_gpu_gru_cell_backward(mt_tensor *dig, mt_tensor *dhg, mt_tensor *dhx, const mt_tensor *dhy,
                                   const mt_tensor *hx, const mt_tensor *ws);
mt_status mt_gpu_embedding_bag(mt_tensor *out, mt_tensor *max_arg, const mt_tensor *weight, const mt_tensor *indices,
                               const mt_tensor *starts, const mt_tensor *psw, int mode, int64_t pad, int64_t base);
mt_status mt_gpu_embedding_bag_backward(mt_tensor *gw, mt_tensor *gpsw, const mt_tensor *g, const mt_tensor *weight,
                                        const mt_tensor *indices, const mt_tensor *starts, const mt_tensor *psw,
                                        const mt_tensor *max_arg, int mode, int64_t pad, int64_t base,
                                        int scale_grad_by_freq);
/* sparse.c: the CSR matrix products */
mt_status mt_gpu_csr_mm(mt_tensor *out, int transposed, const mt_tensor *crow, const mt_tensor *col,
                        const mt_tensor *vals, const mt_tensor *d, int64_t base);
mt_status mt_gpu_csr_mm_t(mt_tensor *out, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *vals,
                          const mt_tensor *g, int64_t base);
mt_status mt_gpu_csr_sddmm(mt_tensor *gv, const mt_tensor *crow, const mt_tensor *col, const mt_tensor *g,
                           const mt_tensor *d, int64_t base);
mt_status mt_gpu_ctc_loss(mt_tensor *out, const mt_tensor *log_probs, const mt_tensor *targets,
                          const mt_tensor *input_lengths, const mt_tensor *target_lengths, int64_t blank,
                          int zero_infinity, int64_t base);
mt_status mt_gpu_ctc_loss_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *log_probs,
                                   const mt_tensor *targets, const mt_tensor *input_lengths,
                                   const mt_tensor *target_lengths, int64_t blank, int64_t base);
mt_status mt_gpu_uniform(mt_tensor *t, double from, double to, mt_generator *g);
mt_status mt_gpu_normal(mt_tensor *t, double mean, double std, mt_generator *g);
mt_status mt_gpu_random_slot(mt_tensor *t, int64_t from, int64_t to, mt_generator *g);
mt_status mt_gpu_bernoulli(mt_tensor *t, double p, mt_generator *g);
mt_status mt_gpu_bernoulli_tensor(mt_tensor *t, const mt_tensor *p, mt_generator *g);
mt_status mt_gpu_exponential(mt_tensor *t, double lambd, mt_generator *g);
mt_status mt_gpu_randperm(mt_tensor *out, int64_t base, mt_generator *g);
mt_status mt_gpu_multinomial(mt_tensor *out, const mt_tensor *probs, int replacement, int64_t base, mt_generator *g);
mt_status mt_gpu_gemm_slot(const mt_gemm *g);
mt_status mt_gpu_outer(mt_tensor *out, const mt_tensor *a, const mt_tensor *b);
#ifdef MT_HAVE_CUDA
/* cuBLAS (cublas.c, loaded at the first product): C = alpha A B + beta C for float32/float64 matrices a
 * cuBLAS call can take (one unit stride each); 1 when it did the product, 0 when it cannot (the caller
 * uses the generic kernel), or an error */
int mt_gpu_cublas_gemm(const mt_gpu_gemm *g, int device, void *stream, mt_status *error);
#endif
/* a new contiguous tensor on device cuda:index; n bytes of device memory read back (waits) */
mt_status mt_gpu_new(int index, const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **out);
mt_status mt_gpu_read(int index, void *host, const void *dev, size_t n, const char *op);

/* the CUDA backend's kernel table (table.c) */
extern const mt_kernels mt_cuda_kernels;

/* CUDA's random engine, PyTorch's Philox generator (random.c) */
extern const struct mt_rng_engine mt_cuda_rng;

/* the CUDA backend (backend.c) */
extern const mt_backend mt_cuda_backend;

#endif
