/* table.c -- the CUDA backend's kernel table: the slots of core/kernels.h that core/gpu/ fills. A NULL
 * slot is an op the dispatch layer reports as not supported on device cuda (gpu.md lists them). */
#include "gpu.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
const mt_kernels mt_cuda_kernels = {
    .copy = mt_gpu_copy,
    .fill = mt_gpu_fill,
    .unary = mt_gpu_unary,
    .binary = mt_gpu_binary,
    .where = mt_gpu_where,
    .unary_grad = mt_gpu_unary_grad,
    .isclose = mt_gpu_isclose,
    .arange = mt_gpu_arange,
    .linspace = mt_gpu_linspace,
    .triangle = mt_gpu_triangle,
    .reduce = mt_gpu_reduce_slot,
    .reduce_index = mt_gpu_reduce_index,
    .cumulative = mt_gpu_cumulative,
    .softmax = mt_gpu_softmax,
    .softmax_backward = mt_gpu_softmax_backward,
    .index_select = mt_gpu_index_select,
    .gather = mt_gpu_gather,
    .scatter = mt_gpu_scatter,
    .index_write = mt_gpu_index_write,
    .index_fill = mt_gpu_index_fill,
    .masked_fill = mt_gpu_masked_fill,
    .masked_select = mt_gpu_masked_select,
    .masked_scatter = mt_gpu_masked_scatter,
    .nonzero = mt_gpu_nonzero,
    .index = mt_gpu_index,
    .index_put = mt_gpu_index_put,
    .one_hot = mt_gpu_one_hot,
    .rearrange = mt_gpu_rearrange_slot,
    .sort = mt_gpu_sort_slot,
    .unique = mt_gpu_unique,
    .searchsorted = mt_gpu_searchsorted,
    .bincount = mt_gpu_bincount_slot,
    .gemm = mt_gpu_gemm_slot,
    .outer = mt_gpu_outer,
    .sgd_step = mt_gpu_sgd_step,
    .adam_step = mt_gpu_adam_step,
    .rmsprop_step = mt_gpu_rmsprop_step,
    .adagrad_step = mt_gpu_adagrad_step,
    .adadelta_step = mt_gpu_adadelta_step,
    .adamax_step = mt_gpu_adamax_step,
};
#pragma GCC diagnostic pop
