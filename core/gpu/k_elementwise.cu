/* k_elementwise.cu -- the CUDA backend's elementwise kernels: one generic kernel per arity, templated on
 * the op's functor (grid-stride; vectorised loads and stores when every operand is dense and aligned; the
 * strided offsets of mt_gpu_iter otherwise), carrying every unary and binary op of the op list
 * (elementwise.cuh; instantiated a dtype family a file: k_ew_float32.cu, k_ew_float64.cu, k_ew_int.cu),
 * where, isclose, and the fused backward of abs and relu. The functors compute what the CPU's kernels
 * compute (core/tensor/elementwise.c), in the same types. */
#include "elementwise.cuh"

namespace MT_GPU_NS {

static int unary(int op, const mt_gpu_iter *it, double p1, double p2, mt_gpu_fault *f, void *stream) {
  switch (it->dtype[1]) {
  case MT_FLOAT32: return ew_unary_f32(op, it, p1, p2, stream);
  case MT_FLOAT64: return ew_unary_f64(op, it, p1, p2, stream);
  default: return ew_unary_int(op, it, p1, p2, f, stream);
  }
}

static int binary(int op, const mt_gpu_iter *it, mt_gpu_fault *f, void *stream) {
  switch (it->dtype[1]) {
  case MT_FLOAT32: return ew_binary_f32(op, it, stream);
  case MT_FLOAT64: return ew_binary_f64(op, it, stream);
  default: return ew_binary_int(op, it, f, stream);
  }
}

/* ---------------------------------------------------------------- where */
/* out, cond (bool/uint8: nonzero picks a), a, b: every value of one item size */
template <typename T> __global__ void where_kernel(mt_gpu_iter it) {
  const int64_t n = it.numel, step = (int64_t)gridDim.x * blockDim.x;
  const uint8_t *c = (const uint8_t *)it.data[1];
  const T *a = (const T *)it.data[2], *b = (const T *)it.data[3];
  T xa = a ? T() : host_scalar<T>(it, 2), xb = b ? T() : host_scalar<T>(it, 3);
  T *o = (T *)it.data[0];
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    bool pick = c[iter_offset(it, 1, i)] != 0;
    o[iter_offset(it, 0, i)] = pick ? (a ? a[iter_offset(it, 2, i)] : xa) : (b ? b[iter_offset(it, 3, i)] : xb);
  }
}
static int where(const mt_gpu_iter *it, void *stream) {
  if (it->numel == 0) return 0;
  dim3 g(blocks_for(it->numel, 4)), b(THREADS);
  switch (it->dtype[0]) {
  case MT_UINT8: case MT_INT8: case MT_BOOL: mt_launch(where_kernel<uint8_t>, g, b, 0, stream, *it); return 0;
  case MT_INT16: case MT_FLOAT16: case MT_BFLOAT16: mt_launch(where_kernel<uint16_t>, g, b, 0, stream, *it); return 0;
  case MT_INT32: case MT_FLOAT32: mt_launch(where_kernel<uint32_t>, g, b, 0, stream, *it); return 0;
  case MT_INT64: case MT_FLOAT64: mt_launch(where_kernel<uint64_t>, g, b, 0, stream, *it); return 0;
  default: return -1;
  }
}

/* ---------------------------------------------------------------- fused backward of abs and relu */
struct g_ABS {
  template <typename T> MT_DEV T operator()(T g, T x) const { return g * (T)(x > 0 ? 1 : (x < 0 ? -1 : x)); }
};
struct g_RELU {
  template <typename T> MT_DEV T operator()(T g, T x) const { return g * (x > 0 ? (T)1 : (T)0); }
};
static int unary_grad(int op, const mt_gpu_iter *it, void *stream) {
  bool d = it->dtype[1] == MT_FLOAT64;
  if (it->dtype[1] != MT_FLOAT32 && !d) return -1;
  if (op == MT_OP_ABS) return d ? run_binary<double, double>(it, g_ABS{}, stream) : run_binary<float, float>(it, g_ABS{}, stream);
  if (op == MT_OP_RELU) return d ? run_binary<double, double>(it, g_RELU{}, stream) : run_binary<float, float>(it, g_RELU{}, stream);
  return -1;
}

/* ---------------------------------------------------------------- isclose */
struct close_int {
  double rtol, atol;
  template <typename T> MT_DEV uint8_t operator()(T x_, T y_) const {
    int64_t x = (int64_t)x_, y = (int64_t)y_;
    bool r = x == y;
    if (!r && (rtol != 0 || atol != 0)) r = fabs((double)x - (double)y) <= atol + fabs(rtol * (double)y);
    return r;
  }
};
struct close_float {
  double rtol, atol;
  int equal_nan;
  template <typename T> MT_DEV uint8_t operator()(T x_, T y_) const {
    double a = (double)dtype_of<T>::load(x_), b = (double)dtype_of<T>::load(y_);
    bool r = a == b;
    if (!r && equal_nan && a != a && b != b) r = true;
    if (!r && (rtol != 0 || atol != 0)) {
      double diff = fabs(a - b);
      r = m_isfinite(diff) && diff <= atol + fabs(rtol * b);
    }
    return r;
  }
};
static int isclose(const mt_gpu_iter *it, double rtol, double atol, int equal_nan, void *stream) {
  switch (it->dtype[1]) {
  case MT_FLOAT32: return run_binary<uint8_t, float>(it, close_float{rtol, atol, equal_nan}, stream);
  case MT_FLOAT64: return run_binary<uint8_t, double>(it, close_float{rtol, atol, equal_nan}, stream);
  case MT_FLOAT16: return run_binary<uint8_t, half_t>(it, close_float{rtol, atol, equal_nan}, stream);
  case MT_BFLOAT16: return run_binary<uint8_t, bf16_t>(it, close_float{rtol, atol, equal_nan}, stream);
  case MT_UINT8: case MT_BOOL: return run_binary<uint8_t, uint8_t>(it, close_int{rtol, atol}, stream);
  case MT_INT8: return run_binary<uint8_t, int8_t>(it, close_int{rtol, atol}, stream);
  case MT_INT16: return run_binary<uint8_t, int16_t>(it, close_int{rtol, atol}, stream);
  case MT_INT32: return run_binary<uint8_t, int32_t>(it, close_int{rtol, atol}, stream);
  case MT_INT64: return run_binary<uint8_t, int64_t>(it, close_int{rtol, atol}, stream);
  default: return -1;
  }
}

} // namespace MT_GPU_NS

/* the launchers, for the table (k_table.cu) */
namespace MT_GPU_NS {
int launch_unary(int op, const mt_gpu_iter *it, double p1, double p2, mt_gpu_fault *f, void *stream) {
  return unary(op, it, p1, p2, f, stream);
}
int launch_binary(int op, const mt_gpu_iter *it, mt_gpu_fault *f, void *stream) { return binary(op, it, f, stream); }
int launch_where(const mt_gpu_iter *it, void *stream) { return where(it, stream); }
int launch_unary_grad(int op, const mt_gpu_iter *it, void *stream) { return unary_grad(op, it, stream); }
int launch_isclose(const mt_gpu_iter *it, double rtol, double atol, int equal_nan, void *stream) {
  return isclose(it, rtol, atol, equal_nan, stream);
}
} // namespace MT_GPU_NS
