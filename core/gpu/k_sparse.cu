/* k_sparse.cu -- the products with a CSR matrix W (abi.h's mt_gpu_csr; the CPU's are core/tensor/sparse.c):
 * W @ D a thread per output element (row i, column c), summing row i's entries in order; W^T @ G a thread
 * per output column, walking every row's entries in order (no atomics: each thread owns its column, and the
 * sums run in the CPU's order); the sampled products G[i, :] . D[col, :] a thread per entry, its row found
 * by a binary search of crow. The arrays are checked first by a kernel of their own (a thread per row and
 * entry): a bad crow or column lands in the device's fault record, reported at the next synchronisation,
 * and the products skip what is out of range (they never read outside the arrays). */
#include "math.cuh"

namespace MT_GPU_NS {

/* crow from base to base + nnz without decreasing; every column in [base, base + k) */
__global__ void csr_check_kernel(mt_gpu_csr j) {
  const int64_t total = (j.m + 1 > j.nnz ? j.m + 1 : j.nnz), step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    if (e <= j.m) {
      int64_t r = j.crow[e];
      bool bad = (e == 0 && r != j.base) || (e > 0 && r < j.crow[e - 1]) || (e == j.m && r - j.base != j.nnz);
      if (bad) raise_fault(j.fault, MT_GPU_FAULT_CSR_CROW, MT_OP_CSR_MM, e, j.base, j.nnz);
    }
    if (e < j.nnz) {
      int64_t c = j.col[e];
      if (c < j.base || c - j.base >= j.k) raise_fault(j.fault, MT_GPU_FAULT_CSR_COL, MT_OP_CSR_MM, c, j.k, e + j.base);
    }
  }
}

/* row i's entries [p0, p1), clamped to the arrays */
MT_DEV void csr_row(const mt_gpu_csr &j, int64_t i, int64_t &p0, int64_t &p1) {
  p0 = j.crow[i] - j.base;
  p1 = j.crow[i + 1] - j.base;
  if (p0 < 0) p0 = 0;
  if (p1 > j.nnz) p1 = j.nnz;
}

template <typename T> __global__ void csr_mm_kernel(mt_gpu_csr j) {
  const int64_t total = j.m * j.n, step = (int64_t)gridDim.x * blockDim.x;
  const T *vals = (const T *)j.vals, *d = (const T *)j.d;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t i = e / j.n, c = e % j.n, p0, p1;
    csr_row(j, i, p0, p1);
    T acc = 0;
    for (int64_t p = p0; p < p1; p++) {
      int64_t r = j.col[p] - j.base;
      if (r < 0 || r >= j.k) continue;
      acc += vals[p] * d[r * j.sd0 + c * j.sd1];
    }
    ((T *)j.out)[i * j.os0 + c * j.os1] = acc;
  }
}

template <typename T> __global__ void csr_mm_t_kernel(mt_gpu_csr j) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const T *vals = (const T *)j.vals, *g = (const T *)j.g;
  T *out = (T *)j.out;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < j.n; c += step) {
    for (int64_t r = 0; r < j.k; r++) out[r * j.n + c] = 0;
    for (int64_t i = 0; i < j.m; i++) {
      int64_t p0, p1;
      csr_row(j, i, p0, p1);
      T gi = g[i * j.ldg + c];
      for (int64_t p = p0; p < p1; p++) {
        int64_t r = j.col[p] - j.base;
        if (r < 0 || r >= j.k) continue;
        out[r * j.n + c] += vals[p] * gi;
      }
    }
  }
}

template <typename T> __global__ void csr_sddmm_kernel(mt_gpu_csr j) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const T *g = (const T *)j.g, *d = (const T *)j.d;
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < j.nnz; p += step) {
    /* the row: the last i with crow[i] - base <= p */
    int64_t lo = 0, hi = j.m; /* crow[lo] <= p + base is assumed (crow[0] == base); answer in [0, m) */
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (j.crow[mid] - j.base <= p) lo = mid;
      else hi = mid;
    }
    int64_t r = j.col[p] - j.base;
    T s = 0;
    if (r >= 0 && r < j.k && j.m > 0) {
      const T *gr = g + lo * j.ldg, *dr = d + r * j.sd0;
      for (int64_t c = 0; c < j.n; c++) s += gr[c] * dr[c];
    }
    ((T *)j.out)[p] = s;
  }
}

template <typename T> static void csr_run(const mt_gpu_csr &c, void *stream) {
  dim3 b(THREADS);
  if (c.kind == MT_GPU_CSR_MM) {
    if (c.m > 0 && c.n > 0) mt_launch(csr_mm_kernel<T>, dim3(blocks_for(c.m * c.n)), b, 0, stream, c);
  } else if (c.kind == MT_GPU_CSR_MM_T) {
    if (c.k > 0 && c.n > 0) mt_launch(csr_mm_t_kernel<T>, dim3(blocks_for(c.n)), b, 0, stream, c);
  } else if (c.nnz) {
    mt_launch(csr_sddmm_kernel<T>, dim3(blocks_for(c.nnz)), b, 0, stream, c);
  }
}

int launch_csr(const mt_gpu_csr *c, void *stream) {
  if (c->dtype != MT_FLOAT32 && c->dtype != MT_FLOAT64) return -1;
  int64_t total = c->m + 1 > c->nnz ? c->m + 1 : c->nnz;
  mt_launch(csr_check_kernel, dim3(blocks_for(total)), dim3(THREADS), 0, stream, *c);
  if (c->dtype == MT_FLOAT32) csr_run<float>(*c, stream);
  else csr_run<double>(*c, stream);
  return 0;
}

} // namespace MT_GPU_NS
