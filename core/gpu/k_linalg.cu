/* k_linalg.cu -- the generic product kernel: C = alpha A B + beta C for every dtype and any strides, in
 * 16 x 16 tiles through shared memory, a batch per grid layer. On a GPU, float32 and float64 products go
 * to cuBLAS (cublas.c) and this kernel takes the rest (float16 and bfloat16 in float, as the CPU does,
 * integers in wrapping int64); in the emulator it takes every product. */
#include "device.cuh"

namespace MT_GPU_NS {

const int TILE = 16;

/* the accumulator of a dtype: double for float64, float for the other floats, int64 for integers */
template <typename T> struct acc_of {
  typedef int64_t type;
};
template <> struct acc_of<float> {
  typedef float type;
};
template <> struct acc_of<double> {
  typedef double type;
};
template <> struct acc_of<half_t> {
  typedef float type;
};
template <> struct acc_of<bf16_t> {
  typedef float type;
};

template <typename T> __global__ void gemm_kernel(mt_gpu_gemm g) {
  typedef typename acc_of<T>::type A;
  __shared__ A as[TILE][TILE + 1];
  __shared__ A bs[TILE][TILE + 1];
  const int64_t p = blockIdx.z;
  const T *a = (const T *)g.A + (g.aoff ? g.aoff[p] : 0);
  const T *b = (const T *)g.B + (g.boff ? g.boff[p] : 0);
  T *c = (T *)g.C + (g.coff ? g.coff[p] : 0);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t row = (int64_t)blockIdx.y * TILE + ty, col = (int64_t)blockIdx.x * TILE + tx;
  A acc = 0;
  for (int64_t k0 = 0; k0 < g.K; k0 += TILE) {
    int64_t ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = row < g.M && ka < g.K ? (A)dtype_of<T>::load(a[row * g.ars + ka * g.acs]) : (A)0;
    bs[ty][tx] = kb < g.K && col < g.N ? (A)dtype_of<T>::load(b[kb * g.brs + col * g.bcs]) : (A)0;
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc += as[ty][k] * bs[k][tx];
    __syncthreads();
  }
  if (row < g.M && col < g.N) {
    T *out = c + row * g.crs + col * g.ccs;
    A r = (A)g.alpha * acc;
    if (g.beta != 0) r += (A)g.beta * (A)dtype_of<T>::load(*out);
    *out = convert_to<T>::from(r);
  }
}
/* integers: wrapping products and sums, alpha and beta as integers */
template <typename T> __global__ void gemm_int_kernel(mt_gpu_gemm g) {
  __shared__ uint64_t as[TILE][TILE + 1];
  __shared__ uint64_t bs[TILE][TILE + 1];
  const int64_t p = blockIdx.z;
  const T *a = (const T *)g.A + (g.aoff ? g.aoff[p] : 0);
  const T *b = (const T *)g.B + (g.boff ? g.boff[p] : 0);
  T *c = (T *)g.C + (g.coff ? g.coff[p] : 0);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t row = (int64_t)blockIdx.y * TILE + ty, col = (int64_t)blockIdx.x * TILE + tx;
  uint64_t acc = 0;
  for (int64_t k0 = 0; k0 < g.K; k0 += TILE) {
    int64_t ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = row < g.M && ka < g.K ? (uint64_t)(int64_t)dtype_of<T>::load(a[row * g.ars + ka * g.acs]) : 0;
    bs[ty][tx] = kb < g.K && col < g.N ? (uint64_t)(int64_t)dtype_of<T>::load(b[kb * g.brs + col * g.bcs]) : 0;
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc += as[ty][k] * bs[k][tx];
    __syncthreads();
  }
  if (row < g.M && col < g.N) {
    T *out = c + row * g.crs + col * g.ccs;
    uint64_t r = (uint64_t)(int64_t)g.alpha * acc;
    if (g.beta != 0) r += (uint64_t)(int64_t)g.beta * (uint64_t)(int64_t)dtype_of<T>::load(*out);
    *out = convert_to<T>::from((int64_t)r);
  }
}

static int gemm(const mt_gpu_gemm *g, void *stream) {
  if (g->nb == 0 || g->M == 0 || g->N == 0) return 0;
  if (g->nb > 65535) return -1;
  dim3 grid((unsigned)((g->N + TILE - 1) / TILE), (unsigned)((g->M + TILE - 1) / TILE), (unsigned)g->nb);
  dim3 block(TILE, TILE);
  switch (g->dtype) {
  case MT_FLOAT32: mt_launch(gemm_kernel<float>, grid, block, 0, stream, *g); return 0;
  case MT_FLOAT64: mt_launch(gemm_kernel<double>, grid, block, 0, stream, *g); return 0;
  case MT_FLOAT16: mt_launch(gemm_kernel<half_t>, grid, block, 0, stream, *g); return 0;
  case MT_BFLOAT16: mt_launch(gemm_kernel<bf16_t>, grid, block, 0, stream, *g); return 0;
  case MT_UINT8: mt_launch(gemm_int_kernel<uint8_t>, grid, block, 0, stream, *g); return 0;
  case MT_BOOL: mt_launch(gemm_int_kernel<bool_t>, grid, block, 0, stream, *g); return 0;
  case MT_INT8: mt_launch(gemm_int_kernel<int8_t>, grid, block, 0, stream, *g); return 0;
  case MT_INT16: mt_launch(gemm_int_kernel<int16_t>, grid, block, 0, stream, *g); return 0;
  case MT_INT32: mt_launch(gemm_int_kernel<int32_t>, grid, block, 0, stream, *g); return 0;
  case MT_INT64: mt_launch(gemm_int_kernel<int64_t>, grid, block, 0, stream, *g); return 0;
  default: return -1;
  }
}

int launch_gemm(const mt_gpu_gemm *g, void *stream) { return gemm(g, stream); }

} // namespace MT_GPU_NS
