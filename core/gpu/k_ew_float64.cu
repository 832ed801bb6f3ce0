/* k_ew_float64.cu -- the elementwise ops' kernels for double inputs (elementwise.cuh) */
#include "elementwise.cuh"

namespace MT_GPU_NS {
int ew_unary_f64(int op, const mt_gpu_iter *it, double p1, double p2, void *stream) {
  return unary_float<double>(op, it, p1, p2, stream);
}
int ew_binary_f64(int op, const mt_gpu_iter *it, void *stream) { return binary_float<double>(op, it, stream); }
} // namespace MT_GPU_NS
