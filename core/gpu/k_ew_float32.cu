/* k_ew_float32.cu -- the elementwise ops' kernels for float inputs (elementwise.cuh) */
#include "elementwise.cuh"

namespace MT_GPU_NS {
int ew_unary_f32(int op, const mt_gpu_iter *it, double p1, double p2, void *stream) {
  return unary_float<float>(op, it, p1, p2, stream);
}
int ew_binary_f32(int op, const mt_gpu_iter *it, void *stream) { return binary_float<float>(op, it, stream); }
} // namespace MT_GPU_NS
