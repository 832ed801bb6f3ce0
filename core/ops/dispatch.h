/* dispatch.h -- the dispatch layer (core/ops/): every public op's front door. A front door checks
 * its arguments (dtype, shape, device), works out the result's shape and dtype, allocates it,
 * converts operands to the dtype the kernel computes in, and runs the kernel of the inputs'
 * device (core/kernels.h). When grad mode is on and an input requires grad, it hands the call to
 * the op's autograd wrapper instead, which the autograd layer (core/grad/) registers below: the
 * wrapper runs the same front door with grad mode off and records the op. The dispatch layer
 * itself knows nothing of graphs: backward formulas, which are written with the front doors, sit
 * above it. Internal to the core. */
#ifndef MT_DISPATCH_H
#define MT_DISPATCH_H

#include "device.h"

/* ---------------------------------------------------------------- grad mode and autograd */
extern int mt_grad_mode;      /* 1: ops on tensors that require grad are recorded (torch.no_grad sets 0) */
extern int mt_inference_mode; /* 1: no recording, no version bookkeeping for saved tensors */

/* Does a call with these inputs go to its autograd wrapper? */
static inline bool mt_records(const mt_tensor *a) {
  return mt_grad_mode && a && (a->_flags & MT_TENSOR_REQUIRES_GRAD);
}
static inline bool mt_records2(const mt_tensor *a, const mt_tensor *b) {
  return mt_grad_mode && ((a ? a->_flags : 0) | (b ? b->_flags : 0)) & MT_TENSOR_REQUIRES_GRAD;
}

/* The front doors that have an autograd wrapper. Each wrapper has its front door's signature. */
#define MT_AUTOGRAD_OPS(X)                                                                                       \
  X(unary) X(binary) X(binary_scalar) X(add_scaled) X(where)                                                     \
  X(copy_) X(fill_) X(clone) X(to)                                                                         \
  X(view) X(reshape) X(flatten) X(unsqueeze) X(squeeze) X(transpose) X(permute) X(expand) X(select) X(slice)     \
  X(narrow) X(as_strided) X(unfold) X(diagonal)                                                                  \
  X(reduce) X(reduce_with_index) X(softmax) X(cumulative) X(var_mean)                                            \
  X(cat) X(stack) X(index_select) X(gather) X(masked_fill) X(scatter) X(index_add) X(index_copy_) X(index_fill_) \
  X(masked_fill_tensor) X(masked_select) X(masked_scatter_) X(index) X(index_put_) X(diag) X(triangle)           \
  X(sort) X(topk) X(flip) X(roll) X(repeat) X(repeat_interleave)                                                 \
  X(mm) X(bmm) X(mv) X(matmul) X(dot) X(addmm) X(baddbmm) X(outer)                                             \
  /* issue 12, pooling */                                                                                        \
  X(max_pool) X(adaptive_max_pool) X(resample) X(resample_backward) X(max_unpool)                                      \
  /* issue 12, conv part */                                                                                      \
  X(convolution) X(im2col) X(col2im)                                                                                   \
  /* recurrent layers (issue 12, rnn part) */ X(lstm_cell_pointwise) X(gru_cell_pointwise) X(unbind)                   \
  /* issue 12, the modules part */                                                                              \
  X(layer_norm) X(nll_loss) X(ctc_loss) X(embedding_bag)                                                        \
  /* issue 12, the LSTM's speed */                                                                               \
  X(lstm_layer)                                                                                                  \
  /* issue 24: sparse CSR products */                                                                            \
  X(csr_mm)                                                                                                      \
  /* torch.distributions' samplers */                                                                            \
  X(standard_gamma) X(poisson)

#define MT_AUTOGRAD_FIELD_(name) __typeof__(mt_##name) *name;
typedef struct mt_autograd_ops {
  MT_AUTOGRAD_OPS(MT_AUTOGRAD_FIELD_)
} mt_autograd_ops;
#undef MT_AUTOGRAD_FIELD_
/* Filled in by the autograd layer when the library loads (core/grad/register.c). */
extern mt_autograd_ops mt_autograd;

/* ---------------------------------------------------------------- shared helpers */
/* (copy.c) `r` (a new reference, freshly computed) handed out: into `out` (resized to r's shape, of r's
 * dtype) when given, else as the result. Consumes r. */
mt_status mt_deliver(mt_tensor *r, mt_tensor *out, mt_tensor **result, const char *op);
/* t in `dtype`: a new reference to t itself when it already has it, else a converted copy. */
mt_status mt_as_dtype(mt_tensor *t, int dtype, mt_tensor **r);
/* (elementwise.c) For backwards that are not recorded: g * op'(x) in one pass, on small contiguous
 * float operands of one shape and dtype; MT_ENOTIMPL (no message) when the device does not fuse
 * op's backward or the operands are not such. */
mt_status mt_unary_grad(mt_op op, mt_tensor *g, mt_tensor *x, mt_tensor **result);
/* (dispatch.c) A 0-dim tensor on the stack for a number (PyTorch's wrapped number): kind 0 bool, 1 integer,
 * 2 floating. It never escapes the call that made it. */
void mt_wrapped_number(mt_tensor *t, double *buf, double s, int kind);
/* (generator.c) The generator a random fill of t draws from: g itself when it is of t's device (else
 * MT_EDEVICE in PyTorch's words), the default generator of t's device when g is NULL, and g as given
 * (maybe NULL) on a device that draws nothing (meta). */
mt_status mt_generator_for(const mt_tensor *t, mt_generator *g, const char *op, mt_generator **out);

#endif
