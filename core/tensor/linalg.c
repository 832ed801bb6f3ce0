/* linalg.c -- the CPU's matrix product kernel (the dispatch layer, core/ops/linalg.c, shapes mm, bmm,
 * matmul, mv, dot, addmm, baddbmm into it).
 *
 * Everything funnels into one batched strided product, gemm_run():
 *   C[p] = alpha * A[p] @ B[p] + beta * C[p]   (beta == 0: C is not read, NaNs in it vanish)
 * where each operand is described by its geometry (rows, cols, row stride, col stride, in
 * elements) and a per-batch element offset. The kernels, in order of preference:
 *  - float32 products up to the BLAS table's own_macs (2^26 multiply-adds, K up to 1024: every
 *    product of an MLP such as 784-512-256-10 at batch 128, forward and backward) run on our own
 *    register-blocked kernel (AVX-512 8x32 or AVX2 6x16 accumulator tile, chosen at run time), split
 *    over our pool: A is read as it is (any strides), B too when it is row-major, else (x @ W^T) its
 *    panels of 32 columns are copied first. No thread of the BLAS wakes for them, and our pool's
 *    workers are already polling between the ops of a training step (speed, measured: README).
 *  - float32/float64 otherwise go to the BLAS (core/blas.h: gemm, gemv for matrix-vector, dot for
 *    vector-vector) with all of its threads. Transposed operands are passed with the transpose flag and
 *    their leading dimension; only layouts BLAS cannot describe (zero or negative strides, both
 *    strides non-unit) are copied, into a contiguous scratch matrix.
 *  - bfloat16 goes to bf16.c's kernel (float32 accumulation, vdpbf16ps where the CPU has it);
 *    float16 is converted to float32, multiplied there and rounded once at the end (PyTorch
 *    accumulates both in float32 too).
 *  - integer types use a plain loop accumulating in 64-bit wrap-around arithmetic, so the result
 *    wraps as PyTorch's does.
 */
#include "cpu.h"
#include "../blas.h"

#include <stddef.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MT_HAVE_X86 1
#endif

/* ---------------------------------------------------------------- operand geometry */
typedef mt_matrix_geo geo; /* rows, cols and their strides in elements (core/kernels.h) */

/* How BLAS can read a matrix: 0 row-major (ld = row stride), 1 transposed (ld = col stride),
 * -1 not at all. Size-1 dims have meaningless strides and are normalised first. */
static int blas_layout(const geo *g, int64_t *ld) {
  int64_t r = g->r, c = g->c;
  int64_t rs = r <= 1 ? (c > 1 ? c : 1) : g->rs;
  int64_t cs = c <= 1 ? 1 : g->cs;
  if (cs == 1 && rs >= (c > 1 ? c : 1)) { *ld = rs; return 0; }
  rs = r <= 1 ? 1 : g->rs;
  cs = c <= 1 ? (r > 1 ? r : 1) : g->cs;
  if (rs == 1 && cs >= (r > 1 ? r : 1)) { *ld = cs; return 1; }
  return -1;
}

/* ---------------------------------------------------------------- element access */
static inline double load_d(int dt, const char *p) {
  switch (dt) {
#define X(DT, T, LOAD, STORE) \
  case DT: { T x = *(const T *)p; return (double)(LOAD); }
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return 0;
}
static inline void store_d(int dt, char *p, double v) {
  switch (dt) {
#define X(DT, T, LOAD, STORE) \
  case DT: *(T *)p = STORE; return;
    MT_FOREACH_DTYPE(X)
#undef X
  }
}
static inline int64_t load_i(int dt, const char *p) {
  switch (dt) {
  case MT_UINT8: case MT_BOOL: return *(const uint8_t *)p;
  case MT_INT8: return *(const int8_t *)p;
  case MT_INT16: return *(const int16_t *)p;
  case MT_INT32: return *(const int32_t *)p;
  case MT_INT64: return *(const int64_t *)p;
  }
  return 0;
}
static inline void store_i(int dt, char *p, int64_t v) {
  switch (dt) {
  case MT_UINT8: case MT_BOOL: *(uint8_t *)p = (uint8_t)v; return;
  case MT_INT8: *(int8_t *)p = (int8_t)v; return;
  case MT_INT16: *(int16_t *)p = (int16_t)v; return;
  case MT_INT32: *(int32_t *)p = (int32_t)v; return;
  case MT_INT64: *(int64_t *)p = v; return;
  }
}

/* ---------------------------------------------------------------- the small float32 kernel */
#ifdef MT_HAVE_X86
static int cpu_avx2_fma = -1;
/* the level of our own kernels (AVX2+FMA on the CPU, and MOONTORCH_VMATH not 0: then every float32
 * product goes to the BLAS) */
static int have_avx2_fma(void) {
  if (cpu_avx2_fma < 0)
    cpu_avx2_fma = mt_cpu_has(MT_CPU_AVX2 | MT_CPU_FMA) && mt_cpu_kernel_level() >= MT_CPU_LEVEL_AVX2;
  return cpu_avx2_fma;
}

/* One MR x (8*NV) tile of C: acc = A[0:MR, :] @ B[:, 0:8*NV]; then C = alpha*acc (+ beta*C).
 * When `masked`, NV is 1 and only the lanes in `mask` are read and written (the last columns).
 * MR and NV are constants at every call site, so the loops unroll and acc lives in registers. */
#define TGT __attribute__((target("avx2,fma")))
static inline __attribute__((always_inline)) TGT void tile_f32(const int MR, const int NV, const int masked,
                                                                __m256i mask, int64_t K, const float *A, int64_t ars,
                                                                int64_t acs, const float *B, int64_t ldb, float *C,
                                                                int64_t ldc, float alpha, float beta) {
  __m256 acc0[6], acc1[6];
  for (int i = 0; i < MR; i++) {
    acc0[i] = _mm256_setzero_ps();
    acc1[i] = _mm256_setzero_ps();
    __builtin_prefetch(C + i * ldc, 1, 3); /* speed: as in tile5_f32 below */
  }
  for (int64_t k = 0; k < K; k++) {
    const float *bk = B + k * ldb;
    const float *ak = A + k * acs;
    __m256 b0 = masked ? _mm256_maskload_ps(bk, mask) : _mm256_loadu_ps(bk);
    __m256 b1 = NV == 2 ? _mm256_loadu_ps(bk + 8) : b0;
    for (int i = 0; i < MR; i++) {
      __m256 a = _mm256_broadcast_ss(ak + i * ars);
      acc0[i] = _mm256_fmadd_ps(a, b0, acc0[i]);
      if (NV == 2) acc1[i] = _mm256_fmadd_ps(a, b1, acc1[i]);
    }
  }
  __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  for (int i = 0; i < MR; i++) {
    float *c = C + i * ldc;
    __m256 r0 = _mm256_mul_ps(acc0[i], va);
    if (masked) {
      if (beta != 0) r0 = _mm256_fmadd_ps(_mm256_maskload_ps(c, mask), vb, r0);
      _mm256_maskstore_ps(c, mask, r0);
    } else {
      if (beta != 0) r0 = _mm256_fmadd_ps(_mm256_loadu_ps(c), vb, r0);
      _mm256_storeu_ps(c, r0);
      if (NV == 2) {
        __m256 r1 = _mm256_mul_ps(acc1[i], va);
        if (beta != 0) r1 = _mm256_fmadd_ps(_mm256_loadu_ps(c + 8), vb, r1);
        _mm256_storeu_ps(c + 8, r1);
      }
    }
  }
}

#define TILE_ROWS(NV, MASKED)                                                                                  \
  switch (mr) {                                                                                                \
  case 6: tile_f32(6, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  case 5: tile_f32(5, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  case 4: tile_f32(4, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  case 3: tile_f32(3, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  case 2: tile_f32(2, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                   \
  default: tile_f32(1, NV, MASKED, mask, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                  \
  }

/* C (M x N, row stride ldc, unit col stride) = alpha * A @ B + beta * C, with A any strides and B
 * row-major (unit col stride). K >= 1. */
static TGT void sgemm_small(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t ars, int64_t acs,
                            const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t j = 0; j < N;) {
    int64_t left = N - j;
    const float *b = B + j;
    if (left >= 16) {
      __m256i mask = _mm256_setzero_si256();
      for (int64_t i = 0; i < M; i += 6) {
        int mr = M - i < 6 ? (int)(M - i) : 6;
        const float *a = A + i * ars;
        float *c = C + i * ldc + j;
        TILE_ROWS(2, 0)
      }
      j += 16;
    } else if (left >= 8) {
      __m256i mask = _mm256_setzero_si256();
      for (int64_t i = 0; i < M; i += 6) {
        int mr = M - i < 6 ? (int)(M - i) : 6;
        const float *a = A + i * ars;
        float *c = C + i * ldc + j;
        TILE_ROWS(1, 0)
      }
      j += 8;
    } else {
      __m256i mask = _mm256_loadu_si256((const __m256i *)(lanes + 8 - left));
      for (int64_t i = 0; i < M; i += 6) {
        int mr = M - i < 6 ? (int)(M - i) : 6;
        const float *a = A + i * ars;
        float *c = C + i * ldc + j;
        TILE_ROWS(1, 1)
      }
      j = N;
    }
  }
}
#undef TILE_ROWS

/* speed: the AVX-512 kernel, the same computation with an 8 x 32 tile (16 zmm accumulators; each element
 * of C is the same chain of FMAs over k as in tile_f32, so the two kernels agree bit for bit). Chosen by
 * small_kernel_avx512() below (MOONTORCH_VMATH=avx2 keeps the AVX2 kernel). */
#define TGT5 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))
static inline __attribute__((always_inline)) TGT5 void tile5_f32(const int MR, const int NV, __mmask16 m0,
                                                                  __mmask16 m1, int64_t K, const float *A, int64_t ars,
                                                                  int64_t acs, const float *B, int64_t ldb, float *C,
                                                                  int64_t ldc, float alpha, float beta) {
  __m512 acc0[8], acc1[8];
  for (int i = 0; i < MR; i++) {
    acc0[i] = _mm512_setzero_ps();
    acc1[i] = _mm512_setzero_ps();
    /* speed: C's lines of this tile start coming into cache now, while the tile computes (a fresh
     * result is cold: its first writes would otherwise wait on memory) */
    __builtin_prefetch(C + i * ldc, 1, 3);
    if (NV == 2) __builtin_prefetch(C + i * ldc + 16, 1, 3);
  }
  for (int64_t k = 0; k < K; k++) {
    const float *bk = B + k * ldb;
    const float *ak = A + k * acs;
    __m512 b0 = _mm512_maskz_loadu_ps(m0, bk);
    __m512 b1 = NV == 2 ? _mm512_maskz_loadu_ps(m1, bk + 16) : b0;
    for (int i = 0; i < MR; i++) {
      __m512 a = _mm512_set1_ps(ak[i * ars]);
      acc0[i] = _mm512_fmadd_ps(a, b0, acc0[i]);
      if (NV == 2) acc1[i] = _mm512_fmadd_ps(a, b1, acc1[i]);
    }
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int i = 0; i < MR; i++) {
    float *c = C + i * ldc;
    __m512 r0 = _mm512_mul_ps(acc0[i], va);
    if (beta != 0) r0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m0, c), vb, r0);
    _mm512_mask_storeu_ps(c, m0, r0);
    if (NV == 2) {
      __m512 r1 = _mm512_mul_ps(acc1[i], va);
      if (beta != 0) r1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m1, c + 16), vb, r1);
      _mm512_mask_storeu_ps(c + 16, m1, r1);
    }
  }
}
#define TILE5_ROWS(NV)                                                                                         \
  switch (mr) {                                                                                                \
  case 8: tile5_f32(8, NV, m0, m1, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                        \
  case 7: tile5_f32(7, NV, m0, m1, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                        \
  case 6: tile5_f32(6, NV, m0, m1, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                        \
  case 5: tile5_f32(5, NV, m0, m1, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                        \
  case 4: tile5_f32(4, NV, m0, m1, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                        \
  case 3: tile5_f32(3, NV, m0, m1, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                        \
  case 2: tile5_f32(2, NV, m0, m1, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                        \
  default: tile5_f32(1, NV, m0, m1, K, a, ars, acs, b, ldb, c, ldc, alpha, beta); break;                       \
  }
static TGT5 void sgemm_small5(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t ars, int64_t acs,
                              const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  for (int64_t j = 0; j < N; j += 32) {
    int64_t left = N - j;
    const float *b = B + j;
    __mmask16 m0 = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    __mmask16 m1 = left >= 32 ? (__mmask16)0xffff : left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
    for (int64_t i = 0; i < M; i += 8) {
      int mr = M - i < 8 ? (int)(M - i) : 8;
      const float *a = A + i * ars;
      float *c = C + i * ldc + j;
      if (left > 16) {
        TILE5_ROWS(2)
      } else {
        TILE5_ROWS(1)
      }
    }
  }
}
#undef TILE5_ROWS

/* speed: a product of at least PAR_SMALL_MACS multiply-adds and more than 32 columns is split over the
 * pool in panels of 32 columns (a whole number of either kernel's column blocks, so the tiles and the
 * results are those of one thread): a 64x64x64 product is about 4 us on one thread, while a worker that
 * is polling for work picks up its half in well under a microsecond. */
#define PAR_SMALL_MACS (96LL * 1024)
#define PANEL 32
typedef struct {
  int64_t M, N, K;
  float alpha, beta;
  const float *A, *B;
  int64_t ars, acs, brs, bcs, ldc;
  float *C;
  int pack; /* B's panels are copied row-major (K x 32) before use: B is not row-major (B = W^T) */
  int failed; /* a panel buffer could not be allocated */
} small_job;
static int small_avx512 = -1;
/* the AVX-512 kernel where the kernels' level is AVX-512 (MOONTORCH_VMATH=avx2 keeps AVX2). On AMD Zen 4,
 * which runs each 512-bit operation as two 256-bit halves, the two kernels measured the same on one
 * thread (64x64x64 into out=: 4.8-5.0 us of CPU time each, 200 000 products); a CPU with full-width
 * AVX-512 units is where this one can do twice the work per instruction. */
static int small_kernel_avx512(void) { return mt_cpu_kernel_level() >= MT_CPU_LEVEL_AVX512; }

/* speed: dst (K x w, row stride PANEL) = the columns [0, w) of B (K x N, strides brs, bcs), w <= PANEL.
 * A transposed B (brs == 1: the weight of nn.Linear, W^T) is moved in 8x8 blocks through AVX registers
 * (rows of W in, rows of the panel out); the rest element by element. */
static TGT void pack_panel(float *dst, const float *B, int64_t brs, int64_t bcs, int64_t K, int64_t w) {
  int64_t j = 0, k0 = 0;
  if (brs == 1 && K >= 8) {
    for (; j + 8 <= w; j += 8) {
      const float *src = B + j * bcs;
      int64_t k = 0;
      for (; k + 8 <= K; k += 8) {
        __m256 r0 = _mm256_loadu_ps(src + k), r1 = _mm256_loadu_ps(src + bcs + k);
        __m256 r2 = _mm256_loadu_ps(src + 2 * bcs + k), r3 = _mm256_loadu_ps(src + 3 * bcs + k);
        __m256 r4 = _mm256_loadu_ps(src + 4 * bcs + k), r5 = _mm256_loadu_ps(src + 5 * bcs + k);
        __m256 r6 = _mm256_loadu_ps(src + 6 * bcs + k), r7 = _mm256_loadu_ps(src + 7 * bcs + k);
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
        __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
        __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
        __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
        __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
        float *d = dst + k * PANEL + j;
        _mm256_storeu_ps(d, _mm256_permute2f128_ps(s0, s4, 0x20));
        _mm256_storeu_ps(d + PANEL, _mm256_permute2f128_ps(s1, s5, 0x20));
        _mm256_storeu_ps(d + 2 * PANEL, _mm256_permute2f128_ps(s2, s6, 0x20));
        _mm256_storeu_ps(d + 3 * PANEL, _mm256_permute2f128_ps(s3, s7, 0x20));
        _mm256_storeu_ps(d + 4 * PANEL, _mm256_permute2f128_ps(s0, s4, 0x31));
        _mm256_storeu_ps(d + 5 * PANEL, _mm256_permute2f128_ps(s1, s5, 0x31));
        _mm256_storeu_ps(d + 6 * PANEL, _mm256_permute2f128_ps(s2, s6, 0x31));
        _mm256_storeu_ps(d + 7 * PANEL, _mm256_permute2f128_ps(s3, s7, 0x31));
      }
      k0 = k;
    }
    /* the rows [k0, K) of the columns [0, j) */
    for (int64_t k = k0; k < K; k++)
      for (int64_t c = 0; c < j; c++) dst[k * PANEL + c] = B[k * brs + c * bcs];
  }
  /* the columns [j, w) */
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = j; c < w; c++) dst[k * PANEL + c] = B[k * brs + c * bcs];
}

/* the rows [i0, i1) and columns [j0, j1) of the product, on the kernel of this CPU's level; B row-major
 * (ldb), starting at column j0 */
static void small_block(const small_job *s, int64_t i0, int64_t i1, int64_t j0, int64_t j1, const float *B,
                        int64_t ldb) {
  const float *A = s->A + i0 * s->ars;
  float *C = s->C + i0 * s->ldc + j0;
  if (small_avx512)
    sgemm_small5(i1 - i0, j1 - j0, s->K, s->alpha, A, s->ars, s->acs, B, ldb, s->beta, C, s->ldc);
  else
    sgemm_small(i1 - i0, j1 - j0, s->K, s->alpha, A, s->ars, s->acs, B, ldb, s->beta, C, s->ldc);
}
/* the rows [i0, i1) and the panels [p0, p1) */
static void small_part(small_job *s, int64_t i0, int64_t i1, int64_t p0, int64_t p1) {
  int64_t j1 = p1 * PANEL < s->N ? p1 * PANEL : s->N;
  if (!s->pack) {
    small_block(s, i0, i1, p0 * PANEL, j1, s->B + p0 * PANEL * s->bcs, s->brs);
    return;
  }
  float *buf = mt_aligned_alloc((size_t)s->K * PANEL * sizeof(float));
  if (!buf) {
    __atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t j = p0 * PANEL; j < j1; j += PANEL) {
    int64_t w = j1 - j < PANEL ? j1 - j : PANEL;
    pack_panel(buf, s->B + j * s->bcs, s->brs, s->bcs, s->K, w);
    small_block(s, i0, i1, j, j + w, buf, PANEL);
  }
  mt_aligned_free(buf);
}
static void small_panels(void *ctx, int64_t p0, int64_t p1) {
  small_job *s = ctx;
  small_part(s, 0, s->M, p0, p1);
}
/* row blocks of ROWS_PER (a whole number of either kernel's tile heights) */
#define ROWS_PER 8
static void small_rows(void *ctx, int64_t r0, int64_t r1) {
  small_job *s = ctx;
  small_part(s, r0 * ROWS_PER, r1 * ROWS_PER < s->M ? r1 * ROWS_PER : s->M, 0, (s->N + PANEL - 1) / PANEL);
}
/* C (M x N, row stride ldc, unit col stride) = alpha * A @ B + beta * C, A and B any strides (B's panels
 * copied when B is not row-major). A product of at least PAR_SMALL_MACS multiply-adds is split over the
 * pool by panels of columns, or by blocks of rows where the panels would not share out evenly (each
 * thread then copies B's panels for itself). Every element of C is the same chain of FMAs however it
 * is split. Returns 0 when a panel buffer could not be allocated. */
static int sgemm_small_any(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t ars, int64_t acs,
                           const float *B, int64_t brs, int64_t bcs, float beta, float *C, int64_t ldc) {
  if (small_avx512 < 0) small_avx512 = small_kernel_avx512();
  if (N == 1) bcs = 1; /* one column: its stride is never used */
  if (K == 1) brs = 0; /* one row: likewise */
  small_job s = {M, N, K, alpha, beta, A, B, ars, acs, brs, bcs, ldc, C, bcs != 1, 0};
  int64_t panels = (N + PANEL - 1) / PANEL, rows = (M + ROWS_PER - 1) / ROWS_PER;
  int nt = mt_get_num_threads();
  if (M * N * K < PAR_SMALL_MACS || nt <= 1 || mt_in_parallel()) {
    small_panels(&s, 0, panels);
  } else {
    /* the share of the slowest thread either way (ceil(n / nt) of n); rows when their split is the more
     * even one and, when B's panels are copied, the copies each thread then makes are small beside its
     * work (at least 64 rows each) */
    int64_t by_panels = ((panels + nt - 1) / nt) * rows, by_rows = ((rows + nt - 1) / nt) * panels;
    /* (on a tie, B as it is and more rows than columns: rows, each thread then writing whole rows of C) */
    if ((by_rows < by_panels || (by_rows == by_panels && !s.pack && M > N)) && (!s.pack || M >= 64LL * nt)) {
      int64_t per = (PAR_SMALL_MACS / 2) / (ROWS_PER * N * K) + 1;
      mt_parallel_for(rows, per, small_rows, &s);
    } else {
      int64_t per = (PAR_SMALL_MACS / 2) / (M * K * PANEL) + 1;
      mt_parallel_for(panels, per, small_panels, &s);
    }
  }
  return !s.failed;
}
#else
static int have_avx2_fma(void) { return 0; }
#endif

/* Products whose B fits in half of L2 and of up to bl->small_macs multiply-adds (on one thread: up
 * to SMALL_MACS_1T) use the small kernel: below that, the BLAS's packing and thread wake-ups cost more
 * than the arithmetic. Measured on the 2-core EPYC (core/blas.c has the figures per provider). Above
 * that, up to bl->own_macs (0 when MT_BLAS names a provider) with K <= MT_OWN_GEMM_MAX_K: the same
 * kernel on one thread matched OpenBLAS's on the MLP's nine products (105-110 GFLOP/s a core on the
 * EPYC), and the whole training step was faster without the BLAS's threads (README). */
#define SMALL_MACS_1T (192LL * 192 * 192)
#define SMALL_B_BYTES (256 * 1024)
static inline int use_small(const mt_blas *bl, int dt, int64_t M, int64_t N, int64_t K) {
  int64_t most = mt_get_num_threads() > 1 ? bl->small_macs : SMALL_MACS_1T;
  if (dt != MT_FLOAT32 || !have_avx2_fma()) return 0;
  if (M * N * K <= most && K * N * 4 <= SMALL_B_BYTES) return 1;
  return M * N * K <= bl->own_macs && K <= MT_OWN_GEMM_MAX_K;
}

/* ---------------------------------------------------------------- scratch */
/* A contiguous row-major copy of a strided matrix of `dt` (BLAS dtypes only). */
static void pack_rowmajor(int dt, const char *src, const geo *g, char *dst) {
  size_t it = mt_itemsize(dt);
  if (dt == MT_FLOAT32) {
    float *d = (float *)dst;
    const float *s = (const float *)src;
    for (int64_t i = 0; i < g->r; i++)
      for (int64_t j = 0; j < g->c; j++) *d++ = s[i * g->rs + j * g->cs];
  } else if (dt == MT_FLOAT64) {
    double *d = (double *)dst;
    const double *s = (const double *)src;
    for (int64_t i = 0; i < g->r; i++)
      for (int64_t j = 0; j < g->c; j++) *d++ = s[i * g->rs + j * g->cs];
  } else {
    for (int64_t i = 0; i < g->r; i++)
      for (int64_t j = 0; j < g->c; j++, dst += it) memcpy(dst, src + (i * g->rs + j * g->cs) * (int64_t)it, it);
  }
}

/* ---------------------------------------------------------------- scratch space */
/* Grown on demand, so that BLAS-able products never allocate. */
typedef struct {
  char *p;
  size_t n;
  int failed;
} scratch_t;
static char *scratch_get(scratch_t *s, size_t n) {
  if (n > s->n) {
    mt_aligned_free(s->p);
    s->p = mt_aligned_alloc(n ? n : 1);
    s->n = s->p ? n : 0;
    if (!s->p) s->failed = 1;
  }
  return s->p;
}

/* ---------------------------------------------------------------- one product, BLAS dtypes */
/* C = alpha * A @ B + beta * C for float32/float64, one matrix. Operands BLAS cannot read are
 * copied into `scr` (room for M*K + K*N + M*N elements, taken only then). */
static void gemm_blas_one(const mt_blas *bl, int dt, int64_t M, int64_t N, int64_t K, double alpha, const char *A,
                          geo ga, const char *B, geo gb, double beta, char *C, geo gc, scratch_t *scr,
                          int allow_small) {
  size_t it = mt_itemsize(dt);
  char *scratch = NULL;
#define SCRATCH()                                                                            \
  do {                                                                                       \
    scratch = scratch_get(scr, (size_t)(M * K + K * N + M * N) * it);                        \
    if (!scratch) return;                                                                    \
    sa = scratch, sb = scratch + M * K * (int64_t)it, sc = sb + K * N * (int64_t)it;         \
  } while (0)
  if (M == 0 || N == 0) return;
  if (K == 0) { /* C = beta * C */
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        char *p = C + (i * gc.rs + j * gc.cs) * (int64_t)it;
        if (dt == MT_FLOAT32) *(float *)p = beta == 0 ? 0.0f : (float)(beta * *(float *)p);
        else *(double *)p = beta == 0 ? 0.0 : beta * *(double *)p;
      }
    return;
  }
  /* vector . vector */
  if (M == 1 && N == 1) {
    int64_t ia = ga.cs, ib = gb.rs;
    double d;
    if (K == 1) ia = ib = 1;
    if (ia <= 0 || ib <= 0) { /* BLAS may not take zero/negative increments: plain loop */
      d = 0;
      for (int64_t k = 0; k < K; k++)
        d += dt == MT_FLOAT32 ? (double)((const float *)A)[k * ga.cs] * ((const float *)B)[k * gb.rs]
                              : ((const double *)A)[k * ga.cs] * ((const double *)B)[k * gb.rs];
    } else if (dt == MT_FLOAT32) {
      d = bl->sdot(K, (const float *)A, ia, (const float *)B, ib);
    } else {
      d = bl->ddot(K, (const double *)A, ia, (const double *)B, ib);
    }
    if (dt == MT_FLOAT32) {
      float r = (float)alpha * (float)d;
      *(float *)C = beta == 0 ? r : r + (float)beta * *(float *)C;
    } else {
      double r = alpha * d;
      *(double *)C = beta == 0 ? r : r + beta * *(double *)C;
    }
    return;
  }
  char *sa = NULL, *sb = NULL, *sc = NULL;
#ifdef MT_HAVE_X86
  if (allow_small && use_small(bl, dt, M, N, K)) {
    if (gc.cs == 1 || N == 1) {
      /* B as it is: its panels are copied inside when it is not row-major */
      if (!sgemm_small_any(M, N, K, (float)alpha, (const float *)A, ga.rs, ga.cs, (const float *)B, gb.rs, gb.cs,
                           (float)beta, (float *)C, M == 1 ? 0 : gc.rs))
        scr->failed = 1;
    } else { /* C written through a row-major scratch */
      const float *b = (const float *)B;
      int64_t ldb = K == 1 ? 0 : gb.rs; /* one row: its stride is never used */
      if (!(gb.cs == 1 || N == 1)) {
        SCRATCH();
        pack_rowmajor(dt, B, &gb, sb);
        b = (const float *)sb;
        ldb = N;
      }
      geo gs = {M, N, N, 1};
      if (!scratch) SCRATCH();
      if (beta != 0) pack_rowmajor(dt, C, &gc, sc);
      sgemm_small(M, N, K, (float)alpha, (const float *)A, ga.rs, ga.cs, b, ldb, (float)beta, (float *)sc, N);
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) ((float *)C)[i * gc.rs + j * gc.cs] = ((float *)sc)[i * gs.rs + j];
    }
    return;
  }
#endif
  int64_t lda = 0, ldb = 0, ldc = 0;
  int ta = blas_layout(&ga, &lda), tb = blas_layout(&gb, &ldb), tc = blas_layout(&gc, &ldc);
  if (ta < 0 || tb < 0 || tc < 0) SCRATCH();
  if (ta < 0) { pack_rowmajor(dt, A, &ga, sa); A = sa; ta = 0; lda = K; }
  if (tb < 0) { pack_rowmajor(dt, B, &gb, sb); B = sb; tb = 0; ldb = N; }
  char *cw = C;
  if (tc < 0) {
    if (beta != 0) pack_rowmajor(dt, C, &gc, sc);
    cw = sc; tc = 0; ldc = N;
  }
  if (tc == 1) {
    /* C column-major: compute C^T = B^T A^T in row-major terms */
    const char *tp = A; A = B; B = tp;
    int64_t t = M; M = N; N = t;
    int tt = ta; ta = !tb; tb = !tt;
    t = lda; lda = ldb; ldb = t;
  }
  mt_pool_rest(); /* the BLAS's threads take the cores from here: our polling workers sleep */
  /* matrix . vector and vector . matrix through gemv */
  if (N == 1 || M == 1) {
    int vec_is_b = N == 1;
    /* y = op(Mat) x: Mat is A (M x K) when N == 1, else B^T (N x K) */
    const char *mat = vec_is_b ? A : B;
    int64_t ldm = vec_is_b ? lda : ldb;
    int tm = vec_is_b ? ta : !tb;
    int64_t rows = vec_is_b ? M : N;
    /* the vector: B's column (N == 1) or A's row (M == 1), and C's single column / row */
    int64_t incx, incy;
    const char *x = vec_is_b ? B : A;
    if (vec_is_b) incx = tb == 0 ? ldb : 1; else incx = ta == 0 ? 1 : lda;
    incy = vec_is_b ? ldc : 1;
    if (K == 1) incx = 1;
    if (rows == 1) incy = 1;
    if (incx > 0 && incy > 0) {
      /* row-major mat as stored: (rows x K) when !tm, (K x rows) when tm */
      if (dt == MT_FLOAT32)
        bl->sgemv(tm, tm ? K : rows, tm ? rows : K, (float)alpha, (const float *)mat, ldm, (const float *)x, incx,
                  (float)beta, (float *)cw, incy);
      else
        bl->dgemv(tm, tm ? K : rows, tm ? rows : K, alpha, (const double *)mat, ldm, (const double *)x, incx, beta,
                  (double *)cw, incy);
      goto done;
    }
  }
  if (dt == MT_FLOAT32)
    bl->sgemm(ta, tb, M, N, K, (float)alpha, (const float *)A, lda, (const float *)B, ldb, (float)beta, (float *)cw,
              ldc);
  else
    bl->dgemm(ta, tb, M, N, K, alpha, (const double *)A, lda, (const double *)B, ldb, beta, (double *)cw, ldc);
done:
  if (cw != C) {
    /* sizes may have been swapped above only when tc == 1, which never uses the scratch */
    for (int64_t i = 0; i < gc.r; i++)
      for (int64_t j = 0; j < gc.c; j++) {
        if (dt == MT_FLOAT32) ((float *)C)[i * gc.rs + j * gc.cs] = ((float *)cw)[i * gc.c + j];
        else ((double *)C)[i * gc.rs + j * gc.cs] = ((double *)cw)[i * gc.c + j];
      }
  }
#undef SCRATCH
}

/* ---------------------------------------------------------------- batched driver */
typedef struct {
  int dt;
  int64_t nb, M, N, K;
  double alpha, beta;
  const char *A, *B;
  char *C;
  geo ga, gb, gc;
  const int64_t *aoff, *boff, *coff; /* per batch, in elements; NULL: 0 */
  const mt_blas *bl;
  int allow_small;
  int failed; /* scratch could not be allocated */
} gemm_job;

static void run_range(void *ctx_, int64_t lo, int64_t hi) {
  gemm_job *j = ctx_;
  size_t it = mt_itemsize(j->dt);
  scratch_t scratch = {0};
  for (int64_t p = lo; p < hi; p++) {
    int64_t oa = j->aoff ? j->aoff[p] : 0, ob = j->boff ? j->boff[p] : 0, oc = j->coff ? j->coff[p] : 0;
    gemm_blas_one(j->bl, j->dt, j->M, j->N, j->K, j->alpha, j->A + oa * (int64_t)it, j->ga, j->B + ob * (int64_t)it,
                  j->gb, j->beta, j->C + oc * (int64_t)it, j->gc, &scratch, j->allow_small);
  }
  mt_aligned_free(scratch.p);
  if (scratch.failed) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

/* Integers: 64-bit wrap-around accumulation (unsigned arithmetic, so overflow is defined). */
static void gemm_int(const gemm_job *j) {
  int dt = j->dt;
  size_t it = mt_itemsize(dt);
  uint64_t alpha = (uint64_t)(int64_t)j->alpha, beta = (uint64_t)(int64_t)j->beta;
  for (int64_t p = 0; p < j->nb; p++) {
    const char *A = j->A + (j->aoff ? j->aoff[p] : 0) * (int64_t)it;
    const char *B = j->B + (j->boff ? j->boff[p] : 0) * (int64_t)it;
    char *C = j->C + (j->coff ? j->coff[p] : 0) * (int64_t)it;
    for (int64_t i = 0; i < j->M; i++)
      for (int64_t n = 0; n < j->N; n++) {
        uint64_t acc = 0;
        for (int64_t k = 0; k < j->K; k++)
          acc += (uint64_t)load_i(dt, A + (i * j->ga.rs + k * j->ga.cs) * (int64_t)it) *
                 (uint64_t)load_i(dt, B + (k * j->gb.rs + n * j->gb.cs) * (int64_t)it);
        char *c = C + (i * j->gc.rs + n * j->gc.cs) * (int64_t)it;
        uint64_t r = alpha * acc;
        if (j->beta != 0) r += beta * (uint64_t)load_i(dt, c);
        store_i(dt, c, (int64_t)r);
      }
  }
}

/* bfloat16: bf16.c's kernel, matrix after matrix (K == 0: C = beta * C) */
static mt_status gemm_bf16(const gemm_job *j) {
  for (int64_t p = 0; p < j->nb; p++) {
    const uint16_t *A = (const uint16_t *)j->A + (j->aoff ? j->aoff[p] : 0);
    const uint16_t *B = (const uint16_t *)j->B + (j->boff ? j->boff[p] : 0);
    uint16_t *C = (uint16_t *)j->C + (j->coff ? j->coff[p] : 0);
    if (j->K == 0) {
      for (int64_t i = 0; i < j->M; i++)
        for (int64_t n = 0; n < j->N; n++) {
          uint16_t *c = C + i * j->gc.rs + n * j->gc.cs;
          *c = j->beta == 0 ? 0 : mt_f2b(mt_b2f(*c) * (float)j->beta);
        }
      continue;
    }
    MT_TRY(mt_cpu_bf16_gemm(j->M, j->N, j->K, (float)j->alpha, A, j->ga.rs, j->ga.cs, B, j->gb.rs, j->gb.cs,
                            (float)j->beta, C, j->gc.rs, j->gc.cs));
  }
  return MT_OK;
}

/* float16: each matrix converted to float32, multiplied, rounded back. */
static mt_status gemm_half(const gemm_job *j) {
  int dt = j->dt;
  size_t it = mt_itemsize(dt);
  int64_t M = j->M, N = j->N, K = j->K;
  float *buf = mt_aligned_alloc((size_t)(M * K + K * N + M * N) * sizeof(float) + 64);
  scratch_t scratch = {0};
  if (!buf) {
    return mt_error(MT_ENOMEM, "matmul: out of memory");
  }
  float *fa = buf, *fb = buf + M * K, *fc = fb + K * N;
  geo ga = {M, K, K, 1}, gb = {K, N, N, 1}, gc = {M, N, N, 1};
  for (int64_t p = 0; p < j->nb; p++) {
    const char *A = j->A + (j->aoff ? j->aoff[p] : 0) * (int64_t)it;
    const char *B = j->B + (j->boff ? j->boff[p] : 0) * (int64_t)it;
    char *C = j->C + (j->coff ? j->coff[p] : 0) * (int64_t)it;
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++) fa[i * K + k] = (float)load_d(dt, A + (i * j->ga.rs + k * j->ga.cs) * (int64_t)it);
    for (int64_t k = 0; k < K; k++)
      for (int64_t n = 0; n < N; n++) fb[k * N + n] = (float)load_d(dt, B + (k * j->gb.rs + n * j->gb.cs) * (int64_t)it);
    if (j->beta != 0)
      for (int64_t i = 0; i < M; i++)
        for (int64_t n = 0; n < N; n++) fc[i * N + n] = (float)load_d(dt, C + (i * j->gc.rs + n * j->gc.cs) * (int64_t)it);
    gemm_blas_one(j->bl, MT_FLOAT32, M, N, K, j->alpha, (const char *)fa, ga, (const char *)fb, gb, j->beta, (char *)fc,
                  gc, &scratch, 1);
    for (int64_t i = 0; i < M; i++)
      for (int64_t n = 0; n < N; n++) store_d(dt, C + (i * j->gc.rs + n * j->gc.cs) * (int64_t)it, fc[i * N + n]);
  }
  mt_aligned_free(buf);
  mt_aligned_free(scratch.p);
  return MT_OK;
}

static mt_status gemm_run(gemm_job *j) {
  if (j->nb == 0 || j->M == 0 || j->N == 0) return MT_OK;
  if (j->dt == MT_FLOAT32 || j->dt == MT_FLOAT64 || mt_is_reduced_float(j->dt)) {
    j->bl = mt_blas_get("matmul");
    if (!j->bl) return MT_EDEVICE;
  }
  if (j->dt == MT_FLOAT32 || j->dt == MT_FLOAT64) {
    int64_t flops = j->M * j->N * j->K;
    int small = use_small(j->bl, j->dt, j->M, j->N, j->K);
    j->allow_small = 1;
    if (j->nb > 1 && small && !(j->M == 1 && j->N == 1) && !mt_in_parallel()) {
      /* many small products: split the batch over our pool, each on the single-thread kernel (never
       * the BLAS, which would start its own threads beside ours: dots stay on this thread) */
      int64_t grain = (MT_GRAIN * 8) / (flops + 1) + 1;
      mt_parallel_for(j->nb, grain, run_range, j);
    } else {
      run_range(j, 0, j->nb); /* BLAS threads itself */
    }
    if (j->failed) return mt_error(MT_ENOMEM, "matmul: out of memory for a scratch copy of an operand");
    return MT_OK;
  }
  if (j->dt == MT_BFLOAT16) return gemm_bf16(j);
  if (j->dt == MT_FLOAT16) return gemm_half(j);
  gemm_int(j);
  return MT_OK;
}

/* ---------------------------------------------------------------- the kernel */
/* gemm_job begins with mt_gemm's fields, in mt_gemm's order: the description is copied in whole */
_Static_assert(offsetof(gemm_job, coff) == offsetof(mt_gemm, coff) && offsetof(gemm_job, ga) == offsetof(mt_gemm, ga) &&
                   offsetof(gemm_job, alpha) == offsetof(mt_gemm, alpha) && offsetof(gemm_job, A) == offsetof(mt_gemm, A),
               "gemm_job starts as mt_gemm");
mt_status mt_cpu_gemm(const mt_gemm *g) {
  gemm_job j;
  memcpy(&j, g, sizeof *g);
  j.allow_small = 0;
  j.failed = 0;
  return gemm_run(&j);
}

/* the outer product of two vectors of one float dtype into a fresh (k, n) out: a[i] * b[j], the
 * products a broadcasting multiply makes */
mt_status mt_cpu_outer(mt_tensor *out, const mt_tensor *a, const mt_tensor *b) {
  int64_t k = a->_sizes[0], n = b->_sizes[0], sa = a->_strides[0], sb = b->_strides[0];
#define OUTER_LOOP(T)                                                                  \
  {                                                                                    \
    const T *A = (const T *)a->_data, *B = (const T *)b->_data;                        \
    T *R = (T *)out->_data;                                                            \
    for (int64_t i = 0; i < k; i++)                                                    \
      for (int64_t j = 0; j < n; j++) R[i * n + j] = A[i * sa] * B[j * sb];            \
  }
  if (out->_dtype == MT_FLOAT32) OUTER_LOOP(float)
  else if (out->_dtype == MT_FLOAT64) OUTER_LOOP(double)
  else return mt_error(MT_EDTYPE, "outer: no one-pass kernel for %s", mt_dtype_name(out->_dtype));
#undef OUTER_LOOP
  return MT_OK;
}
