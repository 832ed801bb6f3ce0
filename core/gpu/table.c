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
};
#pragma GCC diagnostic pop
