/* blas.h -- the GEMM seam: the few BLAS entry points the core uses, behind one table of function
 * pointers (core/blas.c fills it). Row-major throughout: C = alpha op(A) op(B) + beta C, where
 * op(X) is X, or X^T when its flag is set; lda/ldb/ldc are row strides in elements. Not installed. */
#ifndef MT_BLAS_H
#define MT_BLAS_H

#include "mt_internal.h"

#include <signal.h>

typedef struct mt_blas {
  const char *name; /* who does the float32 products: "openblas" or "onednn" */
  /* float32 products of up to this many multiply-adds run faster on moontorch's own single-thread
   * kernel (linalg.c) than on this provider's threads */
  int64_t small_macs;
  /* speed: float32 products of up to this many multiply-adds (and K <= MT_OWN_GEMM_MAX_K) run on
   * moontorch's own kernel split over its pool, B's panels copied when B is transposed (linalg.c); 0 when
   * MT_BLAS names a provider, which then takes every product above small_macs */
  int64_t own_macs;
  void (*sgemm)(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
  void (*dgemm)(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                const double *b, int64_t ldb, double beta, double *c, int64_t ldc);
  /* y = alpha op(A) x + beta y, A (m x n) as stored */
  void (*sgemv)(int ta, int64_t m, int64_t n, float alpha, const float *a, int64_t lda, const float *x, int64_t incx,
                float beta, float *y, int64_t incy);
  void (*dgemv)(int ta, int64_t m, int64_t n, double alpha, const double *a, int64_t lda, const double *x,
                int64_t incx, double beta, double *y, int64_t incy);
  float (*sdot)(int64_t n, const float *x, int64_t incx, const float *y, int64_t incy);
  double (*ddot)(int64_t n, const double *x, int64_t incx, const double *y, int64_t incy);
} mt_blas;

/* The own kernel's limits by default: 2^26 multiply-adds (128x784x512 and its backward products are
 * 51M), and K up to 1024 (a copied panel of B, K x 32 floats, stays within 128 KB) */
#define MT_OWN_GEMM_MACS (1LL << 26)
#define MT_OWN_GEMM_MAX_K 1024

/* The BLAS, loaded on the first call (see blas.c); NULL, with "<op>: ..." recorded, when it cannot
 * be loaded. Each call after the first is one atomic load. */
const mt_blas *mt_blas_get(const char *op);
/* A LAPACK routine (Fortran name, "dpotrf_") of the loaded BLAS, else of liblapack.so.3; NULL, with
 * "<op>: needs LAPACK: ..." recorded (MT_ENOTIMPL), where neither has it. */
void *mt_lapack_symbol(const char *op, const char *name);
/* The thread count the BLAS should use (thread.c calls it; remembered until the BLAS is loaded). */
void mt_blas_set_threads(int n);
/* oneDNN for the rest of the core (the CPU's convolution kernels, core/tensor/onednn.c): the library's
 * dlopen handle, opened on the first call as for dnnl_sgemm (MT_ONEDNN_LIB, then where CMake found it,
 * libdnnl.so.3, .so.2), with its major version; NULL where it cannot be loaded, and in a forked child
 * (GNU OpenMP's threads do not survive fork). mt_onednn_describe() says which, or why not. */
void *mt_onednn_library(int *major);
const char *mt_onednn_describe(void);
/* Around every call into oneDNN: our pool's workers rest, its OpenMP threads get moontorch's count,
 * and asynchronous signals wait until it returns (oneDNN 2.6 corrupts its heap when a signal handler
 * runs inside it: see blas.c). */
void mt_onednn_begin(sigset_t *old, int *held);
void mt_onednn_end(const sigset_t *old, int held);
/* MT_CONV, read once: 0 `auto` (oneDNN's convolutions where they are faster, Winograd included), 1 `direct`
 * (oneDNN's direct convolutions only), 2 `own` (moontorch's im2col and matrix products only). */
int mt_conv_mode(void);
/* The convolution line of mt_config_string into buf (snprintf's return). */
int mt_conv_describe(char *buf, size_t n);
/* The BLAS lines of mt_config_string into buf (snprintf's return). */
int mt_blas_describe(char *buf, size_t n);

#endif
