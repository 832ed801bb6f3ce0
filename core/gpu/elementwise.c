/* elementwise.c -- the CUDA backend's elementwise, copy and fill slots: the operands' geometry
 * (iter.c), the device's current stream, and the launch of the kernel of the op and dtypes
 * (k_elementwise.cu, k_copy.cu). */
#include "gpu.h"

static mt_status no_kernel(const char *op, int dtype) {
  return mt_error(MT_EDTYPE, "%s: not implemented for '%s' on device cuda", op, mt_dtype_name(dtype));
}

mt_status mt_gpu_copy(mt_tensor *dst, const mt_tensor *src) {
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){dst, src}, 2);
  void *s = mt_gpu_stream_of(dst);
  if (mt_gpu_k->copy(&it, s)) return no_kernel("copy_", src->_dtype);
  return MT_OK;
}

mt_status mt_gpu_fill(mt_tensor *t, double value) {
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){t}, 1);
  mt_store_double(t->_dtype, &it.scalar[0], value); /* the CPU's encoding of the value */
  void *s = mt_gpu_stream_of(t);
  if (mt_gpu_k->fill(&it, value, s)) return no_kernel("fill_", t->_dtype);
  return MT_OK;
}

mt_status mt_gpu_unary(mt_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2) {
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){out, a}, 2);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->unary(op, &it, p1, p2, mt_gpu_fault_of(out->_device_index), s)) return no_kernel(MT_OP_NAME(op), a->_dtype);
  return MT_OK;
}

mt_status mt_gpu_binary(mt_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b) {
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){out, a, b}, 3);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->binary(op, &it, mt_gpu_fault_of(out->_device_index), s)) return no_kernel(MT_OP_NAME(op), a->_dtype);
  return MT_OK;
}

mt_status mt_gpu_where(mt_tensor *out, const mt_tensor *cond, const mt_tensor *a, const mt_tensor *b) {
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){out, cond, a, b}, 4);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->where(&it, s)) return no_kernel("where", out->_dtype);
  return MT_OK;
}

mt_status mt_gpu_unary_grad(mt_op op, mt_tensor *out, const mt_tensor *g, const mt_tensor *x) {
  if (op != MT_OP_ABS && op != MT_OP_RELU) return MT_ENOTIMPL;
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){out, g, x}, 3);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->unary_grad(op, &it, s)) return MT_ENOTIMPL;
  return MT_OK;
}

mt_status mt_gpu_isclose(mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double rtol, double atol,
                         int equal_nan) {
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){out, a, b}, 3);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->isclose(&it, rtol, atol, equal_nan, s)) return no_kernel("isclose", a->_dtype);
  return MT_OK;
}

mt_status mt_gpu_arange(mt_tensor *out, double start, double step) {
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){out}, 1);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->arange(&it, start, step, s)) return no_kernel("arange", out->_dtype);
  return MT_OK;
}

mt_status mt_gpu_linspace(mt_tensor *out, double start, double end, double base, int log) {
  int dt = out->_dtype;
  if (!mt_is_float(dt)) { /* integers: the ends in the dtype first, as the CPU does */
    uint64_t b0 = 0, b1 = 0;
    mt_store_double(dt, &b0, (double)(int64_t)start);
    mt_store_double(dt, &b1, (double)(int64_t)end);
    start = mt_load_double(dt, &b0);
    end = mt_load_double(dt, &b1);
  }
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){out}, 1);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->linspace(&it, start, end, base, log, s)) return no_kernel("linspace", dt);
  return MT_OK;
}

mt_status mt_gpu_triangle(mt_tensor *t, int64_t diagonal, int upper) {
  if (t->_numel == 0) return MT_OK;
  mt_gpu_iter it;
  mt_gpu_iter_raw(&it, t);
  void *s = mt_gpu_stream_of(t);
  if (mt_gpu_k->triangle(&it, diagonal, upper, s)) return no_kernel(upper ? "triu" : "tril", t->_dtype);
  return MT_OK;
}
