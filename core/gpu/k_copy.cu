/* k_copy.cu -- copies between any two dtypes and any strides (the conversions of the CPU's copy.c: a
 * value is loaded into its dtype's working type and stored as the CPU's store expression does), fills,
 * arange, linspace/logspace and triu/tril. */
#include "device.cuh"

namespace MT_GPU_NS {

/* ---------------------------------------------------------------- copy */
template <typename D, typename S> __global__ void convert_kernel(mt_gpu_iter it) {
  const int64_t n = it.numel, step = (int64_t)gridDim.x * blockDim.x;
  D *o = (D *)it.data[0];
  const S *s = (const S *)it.data[1];
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (it.flat) {
    const int64_t inc = it.inc[1];
    for (; i < n; i += step) o[i] = convert_to<D>::from(dtype_of<S>::load(s[i * inc]));
    return;
  }
  for (; i < n; i += step) o[iter_offset(it, 0, i)] = convert_to<D>::from(dtype_of<S>::load(s[iter_offset(it, 1, i)]));
}

/* the same dtype: words of its size moved; a dense copy moves 16 bytes a thread */
template <typename W> __global__ void move_kernel(mt_gpu_iter it) {
  const int64_t n = it.numel, step = (int64_t)gridDim.x * blockDim.x;
  W *o = (W *)it.data[0];
  const W *s = (const W *)it.data[1];
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (it.flat) {
    const int64_t inc = it.inc[1];
    if (inc == 1 && ((uintptr_t)o & 15) == 0 && ((uintptr_t)s & 15) == 0) {
      const int V = 16 / (int)sizeof(W);
      int64_t nv = n / V;
      for (int64_t j = i; j < nv; j += step) reinterpret_cast<uint4 *>(o)[j] = reinterpret_cast<const uint4 *>(s)[j];
      for (int64_t j = nv * V + i; j < n; j += step) o[j] = s[j];
      return;
    }
    for (; i < n; i += step) o[i] = s[i * inc];
    return;
  }
  for (; i < n; i += step) o[iter_offset(it, 0, i)] = s[iter_offset(it, 1, i)];
}

template <typename D> static int convert_from(const mt_gpu_iter *it, dim3 g, dim3 b, void *stream) {
  MT_GPU_DISPATCH_ALL(it->dtype[1], S, mt_launch(convert_kernel<D, S>, g, b, 0, stream, *it))
  return 0;
}

static int copy(const mt_gpu_iter *it, void *stream) {
  if (it->numel == 0) return 0;
  dim3 g(blocks_for(it->numel, 4)), b(THREADS);
  if (it->dtype[0] == it->dtype[1]) {
    switch (mt_dtype_size(it->dtype[0])) {
    case 1: mt_launch(move_kernel<uint8_t>, g, b, 0, stream, *it); return 0;
    case 2: mt_launch(move_kernel<uint16_t>, g, b, 0, stream, *it); return 0;
    case 4: mt_launch(move_kernel<uint32_t>, g, b, 0, stream, *it); return 0;
    case 8: mt_launch(move_kernel<uint64_t>, g, b, 0, stream, *it); return 0;
    default: return -1;
    }
  }
  MT_GPU_DISPATCH_ALL(it->dtype[0], D, return convert_from<D>(it, g, b, stream))
  return 0;
}

/* ---------------------------------------------------------------- fill */
template <typename W> __global__ void fill_kernel(mt_gpu_iter it, W v) {
  const int64_t n = it.numel, step = (int64_t)gridDim.x * blockDim.x;
  W *o = (W *)it.data[0];
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    o[it.flat ? i : iter_offset(it, 0, i)] = v;
}
/* the value's bytes in the dtype are in it->scalar[0] */
static int fill(const mt_gpu_iter *it, double value, void *stream) {
  (void)value;
  if (it->numel == 0) return 0;
  dim3 g(blocks_for(it->numel, 4)), b(THREADS);
  switch (mt_dtype_size(it->dtype[0])) {
  case 1: mt_launch(fill_kernel<uint8_t>, g, b, 0, stream, *it, (uint8_t)it->scalar[0]); return 0;
  case 2: mt_launch(fill_kernel<uint16_t>, g, b, 0, stream, *it, (uint16_t)it->scalar[0]); return 0;
  case 4: mt_launch(fill_kernel<uint32_t>, g, b, 0, stream, *it, (uint32_t)it->scalar[0]); return 0;
  case 8: mt_launch(fill_kernel<uint64_t>, g, b, 0, stream, *it, (uint64_t)it->scalar[0]); return 0;
  default: return -1;
  }
}

/* ---------------------------------------------------------------- arange, linspace */
/* as the CPU's index.c: integers count in int64, the 16-bit floats in float, the others in double */
template <typename T> __global__ void arange_kernel(T *o, int64_t n, double start, double step_, int kind) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  int64_t is = (int64_t)start, ist = (int64_t)step_;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    if (kind == 0) o[i] = convert_to<T>::from(is + i * ist);
    else if (kind == 1) o[i] = convert_to<T>::from((float)start + (float)i * (float)step_);
    else o[i] = convert_to<T>::from(start + (double)i * step_);
  }
}
static int arange(const mt_gpu_iter *it, double start, double step, void *stream) {
  int64_t n = it->numel;
  if (n == 0) return 0;
  int dt = it->dtype[0];
  int kind = (dt == MT_FLOAT16 || dt == MT_BFLOAT16) ? 1 : (dt == MT_FLOAT32 || dt == MT_FLOAT64) ? 2 : 0;
  dim3 g(blocks_for(n)), b(THREADS);
  MT_GPU_DISPATCH_ALL(dt, T, mt_launch(arange_kernel<T>, g, b, 0, stream, (T *)it->data[0], n, start, step, kind))
  return 0;
}

template <typename T>
__global__ void linspace_kernel(T *o, int64_t steps, double start, double end, double base, int log, int single) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x, half = steps / 2;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < steps; i += step) {
    double v;
    if (single) {
      float s0 = (float)start, s1 = (float)end;
      float stp = steps > 1 ? (s1 - s0) / (float)(steps - 1) : 0.f;
      float e = i < half ? s0 + stp * (float)i : s1 - stp * (float)(steps - i - 1);
      v = log ? pow(base, (double)e) : (double)e;
      if (steps == 1) v = log ? pow(base, (double)s0) : (double)s0;
    } else {
      double stp = steps > 1 ? (end - start) / (double)(steps - 1) : 0.;
      double e = i < half ? start + stp * (double)i : end - stp * (double)(steps - i - 1);
      if (steps == 1) e = start;
      v = log ? pow(base, e) : e;
    }
    o[i] = convert_to<T>::from(v);
  }
}
/* integers: start and end are first truncated to the dtype (the C side does it) */
static int linspace(const mt_gpu_iter *it, double start, double end, double base, int log, void *stream) {
  int64_t n = it->numel;
  if (n == 0) return 0;
  int dt = it->dtype[0];
  int single = dt == MT_FLOAT32 || dt == MT_FLOAT16 || dt == MT_BFLOAT16;
  dim3 g(blocks_for(n)), b(THREADS);
  MT_GPU_DISPATCH_ALL(dt, T,
                      mt_launch(linspace_kernel<T>, g, b, 0, stream, (T *)it->data[0], n, start, end, base, log, single))
  return 0;
}

/* ---------------------------------------------------------------- triu, tril */
/* it: t's own dims (not coalesced); the last two are the matrix's rows and columns */
template <typename W> __global__ void triangle_kernel(mt_gpu_iter it, int64_t k, int upper) {
  const int64_t n = it.numel, step = (int64_t)gridDim.x * blockDim.x;
  const int64_t cols = it.sizes[it.ndim - 1], rows = it.sizes[it.ndim - 2];
  W *o = (W *)it.data[0];
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t c = i % cols, r = (i / cols) % rows;
    bool zero = upper ? c < r + k : c > r + k;
    if (zero) o[iter_offset(it, 0, i)] = W();
  }
}
static int triangle(const mt_gpu_iter *it, int64_t diagonal, int upper, void *stream) {
  if (it->numel == 0) return 0;
  dim3 g(blocks_for(it->numel)), b(THREADS);
  switch (mt_dtype_size(it->dtype[0])) {
  case 1: mt_launch(triangle_kernel<uint8_t>, g, b, 0, stream, *it, diagonal, upper); return 0;
  case 2: mt_launch(triangle_kernel<uint16_t>, g, b, 0, stream, *it, diagonal, upper); return 0;
  case 4: mt_launch(triangle_kernel<uint32_t>, g, b, 0, stream, *it, diagonal, upper); return 0;
  case 8: mt_launch(triangle_kernel<uint64_t>, g, b, 0, stream, *it, diagonal, upper); return 0;
  default: return -1;
  }
}

int launch_copy(const mt_gpu_iter *it, void *stream) { return copy(it, stream); }
int launch_fill(const mt_gpu_iter *it, double value, void *stream) { return fill(it, value, stream); }
int launch_arange(const mt_gpu_iter *it, double start, double step, void *stream) {
  return arange(it, start, step, stream);
}
int launch_linspace(const mt_gpu_iter *it, double start, double end, double base, int log, void *stream) {
  return linspace(it, start, end, base, log, stream);
}
int launch_triangle(const mt_gpu_iter *it, int64_t diagonal, int upper, void *stream) {
  return triangle(it, diagonal, upper, stream);
}

} // namespace MT_GPU_NS
