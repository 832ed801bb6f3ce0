/* cublas.c -- float32 and float64 products on a GPU through cuBLAS, loaded with dlopen at the first product
 * (libmoontorch does not link it: scripts that never use a GPU do not pay for loading it, and a machine
 * without it still loads libmoontorch). Row-major products are column-major ones of the transposes: C =
 * A B is C^T = B^T A^T. A matrix cuBLAS cannot take as it lies (no unit stride, or a leading dimension too
 * small) sends the product to the generic kernel. TF32 only when torch.backends.cuda.matmul.allow_tf32.
 * Built only where nvcc is (MT_HAVE_CUDA). */
#include "gpu.h"

/* the setting is kept in every build (torch.backends reads and writes it); only cuBLAS reads it */
static int allow_tf32; /* torch.backends.cuda.matmul.allow_tf32: off, as PyTorch's default */

MT_API int mt_cuda_allow_tf32(int set) {
  if (set >= 0) __atomic_store_n(&allow_tf32, set != 0, __ATOMIC_RELAXED);
  return __atomic_load_n(&allow_tf32, __ATOMIC_RELAXED);
}

#ifdef MT_HAVE_CUDA
#include <cublas_v2.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*set_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*gemm_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                                     const void *, cudaDataType, int, const void *, cudaDataType, int, const void *,
                                     void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*gemm_batched_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                          const void *, const void *, cudaDataType, int, long long, const void *,
                                          cudaDataType, int, long long, const void *, void *, cudaDataType, int,
                                          long long, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef const char *(*status_string_fn)(cublasStatus_t);

static struct {
  create_fn create;
  set_stream_fn set_stream;
  gemm_ex_fn gemm;
  gemm_batched_fn gemm_batched;
  status_string_fn status_string;
  char why[256];
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static cublasHandle_t handles[MT_GPU_MAX_DEVICES];
static pthread_mutex_t handles_mu = PTHREAD_MUTEX_INITIALIZER;

static void load(void) {
#ifndef MT_CUBLAS_PATH
#define MT_CUBLAS_PATH ""
#endif
  const char *names[] = {MT_CUBLAS_PATH, "libcublas.so.13", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so.13",
                         "/usr/local/cuda/lib64/libcublas.so"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++)
    if (names[i][0]) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(lib.why, sizeof lib.why, "cannot load cuBLAS (libcublas.so.13): %s", dlerror());
    return;
  }
  lib.create = (create_fn)dlsym(h, "cublasCreate_v2");
  lib.set_stream = (set_stream_fn)dlsym(h, "cublasSetStream_v2");
  lib.gemm = (gemm_ex_fn)dlsym(h, "cublasGemmEx");
  lib.gemm_batched = (gemm_batched_fn)dlsym(h, "cublasGemmStridedBatchedEx");
  lib.status_string = (status_string_fn)dlsym(h, "cublasGetStatusString");
  if (!lib.create || !lib.set_stream || !lib.gemm || !lib.gemm_batched) {
    snprintf(lib.why, sizeof lib.why, "cuBLAS lacks an entry point moontorch uses");
    lib.create = NULL;
  }
}

static mt_status blas_error(cublasStatus_t st, const char *what) {
  return mt_error(MT_EDEVICE, "matmul: cuBLAS %s failed: %s", what,
                  lib.status_string ? lib.status_string(st) : "unknown error");
}

/* a matrix as cuBLAS takes it: column-major `ld`, transposed or not (0: it cannot) */
typedef struct {
  int ok, col; /* col: column-major as it lies; else row-major (its transpose is column-major) */
  int64_t ld;
} layout;
static layout layout_of(int64_t r, int64_t c, int64_t rs, int64_t cs) {
  layout l = {0, 0, 0};
  if (cs == 1 || c == 1) {
    int64_t ld = r == 1 ? (c > 1 ? c : 1) : rs;
    if (ld >= (c > 1 ? c : 1)) return (layout){1, 0, ld};
  }
  if (rs == 1 || r == 1) {
    int64_t ld = c == 1 ? (r > 1 ? r : 1) : cs;
    if (ld >= (r > 1 ? r : 1)) return (layout){1, 1, ld};
  }
  return l;
}

/* the offsets' common step (1: a regular progression), NULL offsets step 0 */
static int regular(const int64_t *off, int64_t nb, int64_t *step) {
  if (!off) {
    *step = 0;
    return 1;
  }
  *step = nb > 1 ? off[1] - off[0] : 0;
  for (int64_t p = 2; p < nb; p++)
    if (off[p] - off[p - 1] != *step) return 0;
  return 1;
}

int mt_gpu_cublas_gemm(const mt_gpu_gemm *g, int device, void *stream, mt_status *error) {
  *error = MT_OK;
  if (g->M > INT32_MAX || g->N > INT32_MAX || g->K > INT32_MAX) return 0;
  layout la = layout_of(g->M, g->K, g->ars, g->acs), lb = layout_of(g->K, g->N, g->brs, g->bcs),
         lc = layout_of(g->M, g->N, g->crs, g->ccs);
  if (!la.ok || !lb.ok || !lc.ok || la.ld > INT32_MAX || lb.ld > INT32_MAX || lc.ld > INT32_MAX) return 0;
  pthread_once(&lib_once, load);
  if (!lib.create) {
    *error = mt_error(MT_EDEVICE, "matmul: %s", lib.why);
    return 0;
  }
  pthread_mutex_lock(&handles_mu);
  if (!handles[device]) {
    cublasStatus_t st = lib.create(&handles[device]);
    if (st != CUBLAS_STATUS_SUCCESS) {
      handles[device] = NULL;
      pthread_mutex_unlock(&handles_mu);
      *error = blas_error(st, "initialisation");
      return 0;
    }
  }
  cublasHandle_t h = handles[device];
  pthread_mutex_unlock(&handles_mu);
  lib.set_stream(h, (cudaStream_t)stream);
  int f64 = g->dtype == MT_FLOAT64;
  size_t item = f64 ? 8 : 4;
  cudaDataType dt = f64 ? CUDA_R_64F : CUDA_R_32F;
  cublasComputeType_t ct = f64 ? CUBLAS_COMPUTE_64F
                               : (mt_cuda_allow_tf32(-1) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  double ad = g->alpha, bd = g->beta;
  float af = (float)g->alpha, bf = (float)g->beta;
  const void *alpha = f64 ? (const void *)&ad : (const void *)&af, *beta = f64 ? (const void *)&bd : (const void *)&bf;
  /* column-major C: C = op(A) op(B); row-major C: C^T = op(B)^T op(A)^T */
  const char *x, *y;
  layout lx, ly;
  int m, n, k = (int)g->K;
  const int64_t *ox, *oy;
  if (lc.col) {
    x = g->A, y = g->B, lx = la, ly = lb, ox = g->aoff, oy = g->boff;
    m = (int)g->M, n = (int)g->N;
  } else {
    x = g->B, y = g->A, lx = lb, ly = la, ox = g->boff, oy = g->aoff;
    m = (int)g->N, n = (int)g->M;
  }
  /* x must be m x k column-major: as it lies when its layout matches C's, else transposed */
  cublasOperation_t tx = lx.col == lc.col ? CUBLAS_OP_N : CUBLAS_OP_T;
  cublasOperation_t ty = ly.col == lc.col ? CUBLAS_OP_N : CUBLAS_OP_T;
  int64_t sx, sy, sc;
  if (g->nb > 1 && regular(ox, g->nb, &sx) && regular(oy, g->nb, &sy) && regular(g->coff, g->nb, &sc) && g->coff &&
      g->nb <= INT32_MAX) {
    cublasStatus_t st = lib.gemm_batched(h, tx, ty, m, n, k, alpha, x + (ox ? ox[0] : 0) * (int64_t)item, dt,
                                         (int)lx.ld, sx, y + (oy ? oy[0] : 0) * (int64_t)item, dt, (int)ly.ld, sy, beta,
                                         g->C + g->coff[0] * (int64_t)item, dt, (int)lc.ld, sc, (int)g->nb, ct,
                                         CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) *error = blas_error(st, "GemmStridedBatchedEx");
    return 1;
  }
  if (g->nb > 1 && !g->coff) return 0; /* every product into one C: the generic kernel orders them */
  for (int64_t p = 0; p < g->nb; p++) {
    cublasStatus_t st = lib.gemm(h, tx, ty, m, n, k, alpha, x + (ox ? ox[p] : 0) * (int64_t)item, dt, (int)lx.ld,
                                 y + (oy ? oy[p] : 0) * (int64_t)item, dt, (int)ly.ld, beta,
                                 g->C + (g->coff ? g->coff[p] : 0) * (int64_t)item, dt, (int)lc.ld, ct,
                                 CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
      *error = blas_error(st, "GemmEx");
      return 1;
    }
  }
  return 1;
}
#endif
