/* k_ew_int.cu -- the elementwise ops' kernels for integer and bool inputs (elementwise.cuh) */
#include "elementwise.cuh"

namespace MT_GPU_NS {
int ew_unary_int(int op, const mt_gpu_iter *it, double p1, double p2, mt_gpu_fault *f, void *stream) {
  switch (it->dtype[1]) {
  case MT_UINT8: return unary_int<uint8_t>(op, it, p1, p2, f, stream);
  case MT_INT8: return unary_int<int8_t>(op, it, p1, p2, f, stream);
  case MT_INT16: return unary_int<int16_t>(op, it, p1, p2, f, stream);
  case MT_INT32: return unary_int<int32_t>(op, it, p1, p2, f, stream);
  case MT_INT64: return unary_int<int64_t>(op, it, p1, p2, f, stream);
  case MT_BOOL: /* as uint8, but for the two logical ones */
    if (op == MT_OP_LOGICAL_NOT) return run_unary<uint8_t, uint8_t>(it, p_LOGICAL_NOT{}, stream);
    if (op == MT_OP_BITWISE_NOT) return run_unary<uint8_t, uint8_t>(it, b_BITWISE_NOT{}, stream);
    return unary_int<uint8_t>(op, it, p1, p2, f, stream);
  default: return -1;
  }
}
int ew_binary_int(int op, const mt_gpu_iter *it, mt_gpu_fault *f, void *stream) {
  switch (it->dtype[1]) {
  case MT_UINT8: return binary_int<uint8_t>(op, it, f, stream);
  case MT_INT8: return binary_int<int8_t>(op, it, f, stream);
  case MT_INT16: return binary_int<int16_t>(op, it, f, stream);
  case MT_INT32: return binary_int<int32_t>(op, it, f, stream);
  case MT_INT64: return binary_int<int64_t>(op, it, f, stream);
  case MT_BOOL: return binary_bool(op, it, f, stream);
  default: return -1;
  }
}
} // namespace MT_GPU_NS
