/* k_table.cu -- the table of launchers of one compilation of the kernel files (abi.h): nvcc's
 * (mt_gpu_real_kernels) or the host compiler's for the emulator (mt_gpu_emu_kernels). */
#include "device.cuh"

namespace MT_GPU_NS {
int max_blocks = 4 * 132;
static void configure(int multiprocessors) { max_blocks = 4 * (multiprocessors > 0 ? multiprocessors : 1); }

int launch_unary(int op, const mt_gpu_iter *it, double p1, double p2, mt_gpu_fault *f, void *stream);
int launch_binary(int op, const mt_gpu_iter *it, mt_gpu_fault *f, void *stream);
int launch_where(const mt_gpu_iter *it, void *stream);
int launch_unary_grad(int op, const mt_gpu_iter *it, void *stream);
int launch_isclose(const mt_gpu_iter *it, double rtol, double atol, int equal_nan, void *stream);
int launch_copy(const mt_gpu_iter *it, void *stream);
int launch_fill(const mt_gpu_iter *it, double value, void *stream);
int launch_arange(const mt_gpu_iter *it, double start, double step, void *stream);
int launch_linspace(const mt_gpu_iter *it, double start, double end, double base, int log, void *stream);
int launch_triangle(const mt_gpu_iter *it, int64_t diagonal, int upper, void *stream);
int launch_reduce(const mt_gpu_reduce *r, void *stream);
int launch_reduce_index(const mt_gpu_lines *l, int is_min, int64_t base, void *stream);
int launch_cumulative(const mt_gpu_lines *l, int is_prod, void *stream);
int launch_softmax(const mt_gpu_lines *l, int log_, void *stream);
int launch_softmax_backward(const mt_gpu_lines *l, int log_, void *stream);
int launch_indexed(const mt_gpu_indexed *x, void *stream);
int launch_masked_fill(const mt_gpu_iter *it, void *stream);
int launch_scan(const mt_gpu_scan *s, int64_t *chunks, int phase, void *stream);
int launch_advanced(const mt_gpu_advanced *a, void *stream);
int launch_rearrange(const mt_gpu_rearrange *r, void *stream);
int launch_one_hot(int64_t *out, const int64_t *index, int64_t n, int64_t classes, int64_t base, void *stream);
int launch_sort(const mt_gpu_sort *s, void *stream);
int launch_searchsorted(const mt_gpu_search *s, void *stream);
int launch_bincount(const mt_gpu_bincount *c, void *stream);
int launch_gemm(const mt_gpu_gemm *g, void *stream);
int launch_optim(const mt_gpu_optim *o, const mt_gpu_iter *it, void *stream);
int launch_layer_norm(const mt_gpu_ln *l, int backward, void *stream);
int launch_nll(const mt_gpu_nll *l, int backward, void *stream);
int launch_conv(const mt_gpu_conv *c, int col2im, void *stream);
int launch_pool_max(const mt_gpu_pool *p, void *stream);
int launch_resample(const mt_gpu_resample *r, void *stream);
int launch_pool_index(const mt_gpu_pool_index *p, void *stream);
int launch_rnn(const mt_gpu_rnn *r, void *stream);
int launch_bag(const mt_gpu_bag *b, int backward, void *stream);
int launch_ctc(const mt_gpu_ctc *c, int backward, void *stream);
int launch_random(const mt_gpu_iter *it, const mt_gpu_random *r, uint64_t *used, void *stream);
int launch_multinomial(const double *cum, const double *u, int64_t *out, int64_t rows, int64_t k, int64_t s,
                       int64_t base, void *stream);
int launch_csr(const mt_gpu_csr *c, void *stream);
} // namespace MT_GPU_NS

extern "C" {
extern const mt_gpu_kernels MT_GPU_TABLE;
const mt_gpu_kernels MT_GPU_TABLE = {
    MT_GPU_NS::configure,
    MT_GPU_NS::launch_unary,
    MT_GPU_NS::launch_binary,
    MT_GPU_NS::launch_where,
    MT_GPU_NS::launch_unary_grad,
    MT_GPU_NS::launch_isclose,
    MT_GPU_NS::launch_copy,
    MT_GPU_NS::launch_fill,
    MT_GPU_NS::launch_arange,
    MT_GPU_NS::launch_linspace,
    MT_GPU_NS::launch_triangle,
    MT_GPU_NS::launch_reduce,
    MT_GPU_NS::launch_reduce_index,
    MT_GPU_NS::launch_cumulative,
    MT_GPU_NS::launch_softmax,
    MT_GPU_NS::launch_softmax_backward,
    MT_GPU_NS::launch_indexed,
    MT_GPU_NS::launch_masked_fill,
    MT_GPU_NS::launch_scan,
    MT_GPU_NS::launch_advanced,
    MT_GPU_NS::launch_rearrange,
    MT_GPU_NS::launch_one_hot,
    MT_GPU_NS::launch_sort,
    MT_GPU_NS::launch_searchsorted,
    MT_GPU_NS::launch_bincount,
    MT_GPU_NS::launch_gemm,
    MT_GPU_NS::launch_optim,
    MT_GPU_NS::launch_layer_norm,
    MT_GPU_NS::launch_nll,
    MT_GPU_NS::launch_conv,
    MT_GPU_NS::launch_pool_max,
    MT_GPU_NS::launch_resample,
    MT_GPU_NS::launch_pool_index,
    MT_GPU_NS::launch_rnn,
    MT_GPU_NS::launch_bag,
    MT_GPU_NS::launch_ctc,
    MT_GPU_NS::launch_random,
    MT_GPU_NS::launch_multinomial,
    MT_GPU_NS::launch_csr,
};
}
