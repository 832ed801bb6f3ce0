/* bf16.c -- bfloat16 matrix products with float32 accumulation (issue 25). The CPU's gemm slot
 * (linalg.c) sends every bfloat16 product here.
 *
 *   C = alpha * A @ B + beta * C     A, B, C bfloat16, any strides; alpha, beta float32
 *
 * Each element of C has one float32 accumulator, and k is visited in pairs (k, k+1) as AVX512-BF16's
 * vdpbf16ps visits them: acc = fma(a[k+1], b[k+1], acc), then acc = fma(a[k], b[k], acc), with
 * denormal inputs and results flushed to zero (an odd K ends with a pair whose second half is 0).
 * The epilogue is float32: r = alpha * acc (+ beta * C, one fma), rounded to bfloat16 nearest-even.
 * Three paths compute it, with the same bits:
 *  - vdpbf16ps, where the CPU has AVX512-BF16 and the kernel level is AVX-512 (32 multiply-adds an
 *    instruction, twice a float32 FMA's);
 *  - AVX2+FMA: each 32-bit pair split into its two float32 halves (the odd element is the pair with
 *    its low 16 bits cleared, the even one the pair shifted up 16) and two FMAs under MXCSR's
 *    flush-to-zero and denormals-are-zero. On the EPYC (Zen 4) this equalled vdpbf16ps on 32 million
 *    random dot products (normal numbers, any bit patterns, tiny exponents), signed zeros included;
 *  - scalar: fmaf and explicit flushing (MOONTORCH_VMATH=0).
 * MOONTORCH_VMATH=avx2 or 0 choose the lower paths (spec/bf16_spec.lua runs each in a child).
 *
 * Layout: B is packed per panel of 32 columns as 32-bit pairs, bp[kp * 32 + j] = B[2kp, j] |
 * B[2kp+1, j] << 16 (the even k in the low half, as vdpbf16ps reads a dword); A per tile of MR rows,
 * ap[kp * MR + i] likewise along k, packed once for the whole product, unless its rows are runs of
 * whole pairs already (unit column stride, K even: x in x @ W^T), which are read as they are. Each
 * thread packs the panels of B it computes. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MT_BF16_X86 1
#endif

#define NR 32 /* columns of a panel */
/* A's pair (i, kp) of a tile is at a + i * arb + kp * akb (bytes): a packed tile (arb 4, akb MR * 4) or A
 * itself when its rows are contiguous pairs (arb its row stride, akb 4) */
typedef uint32_t u32_any __attribute__((aligned(1), may_alias));
#define APAIR(a, arb, akb, i, kp) (*(const u32_any *)((a) + (i) * (arb) + (kp) * (akb)))
#define MR 8  /* rows of a tile */

enum { PATH_SCALAR, PATH_AVX2, PATH_DPBF16 };
static int bf16_path = -1;
static int choose_path(void) {
  const char *p = mt_kernels_bf16(); /* cpu.c: from the kernel level and the CPU's features */
  return !strcmp(p, "avx512_bf16") ? PATH_DPBF16 : !strcmp(p, "avx2") ? PATH_AVX2 : PATH_SCALAR;
}

/* ---------------------------------------------------------------- packing */
static inline uint32_t pair(uint16_t even, uint16_t odd) { return (uint32_t)even | (uint32_t)odd << 16; }

/* the tile of A's rows [i0, i0 + MR) (rows past M are 0): dst[kp * MR + i] */
static void pack_a_tile(uint32_t *dst, const uint16_t *A, int64_t ars, int64_t acs, int64_t M, int64_t K,
                        int64_t i0) {
  int64_t KP = (K + 1) / 2, rows = M - i0 < MR ? M - i0 : MR;
#ifdef MT_BF16_X86
  if (ars == 1 && rows == MR) {
    /* speed: A = G^T (the weight gradient's g^T x): a pair of 8 rows is two rows of G side by side */
    const uint16_t *a = A + i0;
    int64_t kp = 0;
    for (; kp < K / 2; kp++) {
      __m128i r0 = _mm_loadu_si128((const __m128i *)(a + 2 * kp * acs));
      __m128i r1 = _mm_loadu_si128((const __m128i *)(a + (2 * kp + 1) * acs));
      _mm_storeu_si128((__m128i *)(dst + kp * MR), _mm_unpacklo_epi16(r0, r1));
      _mm_storeu_si128((__m128i *)(dst + kp * MR + 4), _mm_unpackhi_epi16(r0, r1));
    }
    if (K & 1) {
      __m128i r0 = _mm_loadu_si128((const __m128i *)(a + (K - 1) * acs)), z = _mm_setzero_si128();
      _mm_storeu_si128((__m128i *)(dst + kp * MR), _mm_unpacklo_epi16(r0, z));
      _mm_storeu_si128((__m128i *)(dst + kp * MR + 4), _mm_unpackhi_epi16(r0, z));
    }
    return;
  }
#endif
  if (rows < MR) memset(dst, 0, (size_t)KP * MR * sizeof *dst);
  for (int64_t i = 0; i < rows; i++) {
    const uint16_t *a = A + (i0 + i) * ars;
    uint32_t *d = dst + i;
    int64_t kp = 0;
    if (acs == 1) {
      for (; kp < K / 2; kp++) {
        uint32_t v;
        memcpy(&v, a + 2 * kp, 4);
        d[kp * MR] = v;
      }
    } else {
      for (; kp < K / 2; kp++) d[kp * MR] = pair(a[2 * kp * acs], a[(2 * kp + 1) * acs]);
    }
    if (K & 1) d[kp * MR] = pair(a[(K - 1) * acs], 0);
  }
}

#ifdef MT_BF16_X86
/* speed: B = W^T, 8 columns (rows of W) by 8 pairs at a time, moved as 8x8 blocks of 32-bit pairs through
 * AVX registers; returns how many whole pairs it did (the rest is the caller's) */
__attribute__((target("avx2"))) static int64_t pack_bt_avx2(uint32_t *dst, const uint16_t *b, int64_t bcs,
                                                            int64_t K, int64_t w) {
  int64_t kp8 = (K / 2) & ~(int64_t)7;
  for (int64_t j = 0; j + 8 <= w; j += 8) {
    const uint16_t *src = b + j * bcs;
    for (int64_t kp = 0; kp < kp8; kp += 8) {
      __m256 r0 = _mm256_loadu_ps((const float *)(src + 2 * kp)), r1 = _mm256_loadu_ps((const float *)(src + bcs + 2 * kp));
      __m256 r2 = _mm256_loadu_ps((const float *)(src + 2 * bcs + 2 * kp));
      __m256 r3 = _mm256_loadu_ps((const float *)(src + 3 * bcs + 2 * kp));
      __m256 r4 = _mm256_loadu_ps((const float *)(src + 4 * bcs + 2 * kp));
      __m256 r5 = _mm256_loadu_ps((const float *)(src + 5 * bcs + 2 * kp));
      __m256 r6 = _mm256_loadu_ps((const float *)(src + 6 * bcs + 2 * kp));
      __m256 r7 = _mm256_loadu_ps((const float *)(src + 7 * bcs + 2 * kp));
      __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
      __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
      __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
      __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
      __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float *d = (float *)(dst + kp * NR + j);
      _mm256_storeu_ps(d, _mm256_permute2f128_ps(s0, s4, 0x20));
      _mm256_storeu_ps(d + NR, _mm256_permute2f128_ps(s1, s5, 0x20));
      _mm256_storeu_ps(d + 2 * NR, _mm256_permute2f128_ps(s2, s6, 0x20));
      _mm256_storeu_ps(d + 3 * NR, _mm256_permute2f128_ps(s3, s7, 0x20));
      _mm256_storeu_ps(d + 4 * NR, _mm256_permute2f128_ps(s0, s4, 0x31));
      _mm256_storeu_ps(d + 5 * NR, _mm256_permute2f128_ps(s1, s5, 0x31));
      _mm256_storeu_ps(d + 6 * NR, _mm256_permute2f128_ps(s2, s6, 0x31));
      _mm256_storeu_ps(d + 7 * NR, _mm256_permute2f128_ps(s3, s7, 0x31));
    }
  }
  return (w & ~(int64_t)7) ? kp8 : 0;
}
#endif

/* columns [j0, j0 + w) of B, w <= NR (columns past w are 0): dst[kp * NR + j] */
static void pack_b_panel(uint32_t *dst, const uint16_t *B, int64_t brs, int64_t bcs, int64_t K, int64_t j0,
                         int64_t w) {
  int64_t KP = (K + 1) / 2;
  if (w < NR) memset(dst, 0, (size_t)KP * NR * sizeof *dst);
  const uint16_t *b = B + j0 * bcs;
  if (brs == 1) { /* B = W^T: a pair is two neighbours of a row of W */
    int64_t done = 0, wv = 0; /* pairs [0, done) of columns [0, wv) are packed */
#ifdef MT_BF16_X86
    if (mt_cpu_kernel_level() >= MT_CPU_LEVEL_AVX2) {
      done = pack_bt_avx2(dst, b, bcs, K, w);
      wv = w & ~(int64_t)7;
    }
#endif
    for (int64_t j = 0; j < wv; j++) {
      const uint16_t *col = b + j * bcs;
      int64_t kp = done;
      for (; kp < K / 2; kp++) {
        uint32_t v;
        memcpy(&v, col + 2 * kp, 4);
        dst[kp * NR + j] = v;
      }
      if (K & 1) dst[kp * NR + j] = pair(col[K - 1], 0);
    }
    for (int64_t j = wv; j < w; j++) {
      const uint16_t *col = b + j * bcs;
      int64_t kp = 0;
      for (; kp < K / 2; kp++) {
        uint32_t v;
        memcpy(&v, col + 2 * kp, 4);
        dst[kp * NR + j] = v;
      }
      if (K & 1) dst[kp * NR + j] = pair(col[K - 1], 0);
    }
    return;
  }
#ifdef MT_BF16_X86
  if (bcs == 1 && w == NR) {
    /* speed: B row-major (x, g): a pair row is two rows of B interleaved, 8 columns at a time */
    for (int64_t kp = 0; kp < (K + 1) / 2; kp++) {
      const uint16_t *r0 = b + 2 * kp * brs, *r1 = r0 + brs;
      uint32_t *d = dst + kp * NR;
      for (int j = 0; j < NR; j += 8) {
        __m128i x0 = _mm_loadu_si128((const __m128i *)(r0 + j));
        __m128i x1 = 2 * kp + 1 < K ? _mm_loadu_si128((const __m128i *)(r1 + j)) : _mm_setzero_si128();
        _mm_storeu_si128((__m128i *)(d + j), _mm_unpacklo_epi16(x0, x1));
        _mm_storeu_si128((__m128i *)(d + j + 4), _mm_unpackhi_epi16(x0, x1));
      }
    }
    return;
  }
#endif
  for (int64_t kp = 0; kp < K / 2; kp++) {
    const uint16_t *r0 = b + 2 * kp * brs, *r1 = r0 + brs;
    uint32_t *d = dst + kp * NR;
    if (bcs == 1)
      for (int64_t j = 0; j < w; j++) d[j] = pair(r0[j], r1[j]);
    else
      for (int64_t j = 0; j < w; j++) d[j] = pair(r0[j * bcs], r1[j * bcs]);
  }
  if (K & 1) {
    const uint16_t *r0 = b + (K - 1) * brs;
    for (int64_t j = 0; j < w; j++) dst[(K / 2) * NR + j] = pair(r0[j * bcs], 0);
  }
}

/* ---------------------------------------------------------------- the epilogue */
static inline uint16_t round_bf16(float f) { return mt_f2b(f); }

/* one row of a tile: n <= NR accumulators into C's row c (column stride ccs) */
static void store_row_scalar(const float *acc, int64_t n, uint16_t *c, int64_t ccs, float alpha, float beta) {
  for (int64_t j = 0; j < n; j++) {
    float r = acc[j] * alpha;
    if (beta != 0) r = fmaf(mt_b2f(c[j * ccs]), beta, r);
    c[j * ccs] = round_bf16(r);
  }
}

/* ---------------------------------------------------------------- scalar path */
static inline float ftz(float x) {
  union { float f; uint32_t u; } v = {x};
  if ((v.u & 0x7f800000u) == 0) v.u &= 0x80000000u;
  return v.f;
}
static inline float half_lo(uint32_t p) { return ftz(mt_b2f((uint16_t)p)); }
static inline float half_hi(uint32_t p) { return ftz(mt_b2f((uint16_t)(p >> 16))); }

static void tile_scalar(int64_t KP, const char *a, int64_t arb, int64_t akb, const uint32_t *bp, int64_t rows,
                        int64_t cols, uint16_t *C, int64_t crs, int64_t ccs, float alpha, float beta) {
  float acc[MR][NR];
  memset(acc, 0, sizeof acc);
  for (int64_t kp = 0; kp < KP; kp++) {
    const uint32_t *b = bp + kp * NR;
    for (int64_t i = 0; i < rows; i++) {
      uint32_t ai = APAIR(a, arb, akb, i, kp);
      float a1 = half_hi(ai), a0 = half_lo(ai);
      for (int64_t j = 0; j < cols; j++) {
        float s = ftz(fmaf(a1, half_hi(b[j]), acc[i][j]));
        acc[i][j] = ftz(fmaf(a0, half_lo(b[j]), s));
      }
    }
  }
  for (int64_t i = 0; i < rows; i++) store_row_scalar(acc[i], cols, C + i * crs, ccs, alpha, beta);
}

#ifdef MT_BF16_X86
/* ---------------------------------------------------------------- AVX2 path */
#define TGT2 __attribute__((target("avx2,fma")))
static inline TGT2 __m256 bf16x8_to_f32(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
/* 8 floats rounded to bfloat16 nearest-even (NaN: quiet, as mt_f2b) */
static inline TGT2 __m128i f32x8_to_bf16(__m256 r) {
  __m256i u = _mm256_castps_si256(r);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  __m256i nanv = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  __m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  __m256i v = _mm256_blendv_epi8(rounded, nanv, isnan);
  /* the low 16 bits of each lane, in order */
  __m256i packed = _mm256_packus_epi32(v, v); /* values < 65536: no saturation */
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0xd8));
}

static inline __attribute__((always_inline)) TGT2 void tile_avx2(const int R, int64_t KP, const char *ap, int64_t arb,
                                                                   int64_t akb, const uint32_t *bp, int64_t cols,
                                                                   uint16_t *C, int64_t crs, int64_t ccs, float alpha,
                                                                   float beta) {
  /* R rows x 32 columns: 4 vectors of 8 a row (R <= 2 keeps 8 accumulators; called per pair of rows) */
  __m256 acc[2][4];
  for (int i = 0; i < R; i++)
    for (int v = 0; v < 4; v++) acc[i][v] = _mm256_setzero_ps();
  const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
  unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040); /* FTZ | DAZ */
  for (int64_t kp = 0; kp < KP; kp++) {
    const uint32_t *b = bp + kp * NR;
    __m256 bo[4], be[4];
    for (int v = 0; v < 4; v++) {
      __m256i p = _mm256_loadu_si256((const __m256i *)(b + 8 * v));
      bo[v] = _mm256_castsi256_ps(_mm256_and_si256(p, hi));
      be[v] = _mm256_castsi256_ps(_mm256_slli_epi32(p, 16));
    }
    for (int i = 0; i < R; i++) {
      __m256i p = _mm256_set1_epi32((int)APAIR(ap, arb, akb, i, kp));
      __m256 ao = _mm256_castsi256_ps(_mm256_and_si256(p, hi)), ae = _mm256_castsi256_ps(_mm256_slli_epi32(p, 16));
      for (int v = 0; v < 4; v++) {
        acc[i][v] = _mm256_fmadd_ps(ao, bo[v], acc[i][v]);
        acc[i][v] = _mm256_fmadd_ps(ae, be[v], acc[i][v]);
      }
    }
  }
  _mm_setcsr(csr);
  __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  for (int i = 0; i < R; i++) {
    uint16_t *c = C + i * crs;
    if (ccs != 1 || cols < NR) {
      float t[NR];
      for (int v = 0; v < 4; v++) _mm256_storeu_ps(t + 8 * v, acc[i][v]);
      store_row_scalar(t, cols, c, ccs, alpha, beta);
      continue;
    }
    for (int v = 0; v < 4; v++) {
      __m256 r = _mm256_mul_ps(acc[i][v], va);
      if (beta != 0) r = _mm256_fmadd_ps(bf16x8_to_f32(_mm_loadu_si128((const __m128i *)(c + 8 * v))), vb, r);
      _mm_storeu_si128((__m128i *)(c + 8 * v), f32x8_to_bf16(r));
    }
  }
}
static TGT2 void tiles_avx2(int64_t KP, const char *ap, int64_t arb, int64_t akb, const uint32_t *bp, int64_t rows,
                            int64_t cols, uint16_t *C, int64_t crs, int64_t ccs, float alpha, float beta) {
  /* two rows at a time: each row's pair is split once, each of B's pairs once per two rows */
  int64_t i = 0;
  for (; i + 2 <= rows; i += 2) tile_avx2(2, KP, ap + i * arb, arb, akb, bp, cols, C + i * crs, crs, ccs, alpha, beta);
  if (i < rows) tile_avx2(1, KP, ap + i * arb, arb, akb, bp, cols, C + i * crs, crs, ccs, alpha, beta);
}

/* ---------------------------------------------------------------- vdpbf16ps path */
#define TGT5 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma")))
static inline TGT5 __m512 bf16x16_to_f32(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline TGT5 __m256i f32x16_to_bf16(__m512 r) {
  __m512i u = _mm512_castps_si512(r);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  __mmask16 isnan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  __m512i v = _mm512_mask_or_epi32(rounded, isnan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(v);
}
static inline __attribute__((always_inline)) TGT5 void tile_dp(const int R, int64_t KP, const char *ap, int64_t arb,
                                                                 int64_t akb, const uint32_t *bp, int64_t cols,
                                                                 uint16_t *C, int64_t crs, int64_t ccs, float alpha,
                                                                 float beta) {
  __m512 acc0[MR], acc1[MR];
  for (int i = 0; i < R; i++) {
    acc0[i] = _mm512_setzero_ps();
    acc1[i] = _mm512_setzero_ps();
  }
  for (int64_t kp = 0; kp < KP; kp++) {
    const uint32_t *b = bp + kp * NR;
    const char *ak = ap + kp * akb;
    __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16);
    for (int i = 0; i < R; i++) {
      __m512bh av = (__m512bh)_mm512_set1_epi32((int)*(const u32_any *)(ak + i * arb));
      acc0[i] = _mm512_dpbf16_ps(acc0[i], av, b0);
      acc1[i] = _mm512_dpbf16_ps(acc1[i], av, b1);
    }
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __mmask16 m0 = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1);
  __mmask16 m1 = cols >= 32 ? (__mmask16)0xffff : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1) : 0;
  for (int i = 0; i < R; i++) {
    uint16_t *c = C + i * crs;
    if (ccs != 1) {
      float t[NR];
      _mm512_storeu_ps(t, acc0[i]);
      _mm512_storeu_ps(t + 16, acc1[i]);
      store_row_scalar(t, cols, c, ccs, alpha, beta);
      continue;
    }
    __m512 r0 = _mm512_mul_ps(acc0[i], va), r1 = _mm512_mul_ps(acc1[i], va);
    if (beta != 0) {
      r0 = _mm512_fmadd_ps(bf16x16_to_f32(_mm256_maskz_loadu_epi16(m0, c)), vb, r0);
      r1 = _mm512_fmadd_ps(bf16x16_to_f32(_mm256_maskz_loadu_epi16(m1, c + 16)), vb, r1);
    }
    _mm256_mask_storeu_epi16(c, m0, f32x16_to_bf16(r0));
    if (m1) _mm256_mask_storeu_epi16(c + 16, m1, f32x16_to_bf16(r1));
  }
}
static TGT5 void tiles_dp(int64_t KP, const char *ap, int64_t arb, int64_t akb, const uint32_t *bp, int64_t rows,
                          int64_t cols, uint16_t *C, int64_t crs, int64_t ccs, float alpha, float beta) {
  switch (rows) {
  case 8: tile_dp(8, KP, ap, arb, akb, bp, cols, C, crs, ccs, alpha, beta); break;
  case 7: tile_dp(7, KP, ap, arb, akb, bp, cols, C, crs, ccs, alpha, beta); break;
  case 6: tile_dp(6, KP, ap, arb, akb, bp, cols, C, crs, ccs, alpha, beta); break;
  case 5: tile_dp(5, KP, ap, arb, akb, bp, cols, C, crs, ccs, alpha, beta); break;
  case 4: tile_dp(4, KP, ap, arb, akb, bp, cols, C, crs, ccs, alpha, beta); break;
  case 3: tile_dp(3, KP, ap, arb, akb, bp, cols, C, crs, ccs, alpha, beta); break;
  case 2: tile_dp(2, KP, ap, arb, akb, bp, cols, C, crs, ccs, alpha, beta); break;
  default: tile_dp(1, KP, ap, arb, akb, bp, cols, C, crs, ccs, alpha, beta); break;
  }
}
#endif

/* ---------------------------------------------------------------- the product */
typedef struct {
  int64_t M, N, K, KP;
  float alpha, beta;
  const uint16_t *B;
  int64_t brs, bcs;
  uint16_t *C;
  int64_t crs, ccs;
  const uint32_t *ap; /* A packed, tile after tile (KP * MR pairs each); NULL: A read as it is */
  const uint16_t *A;
  int64_t ars;
  int path;
  int by_rows; /* the threads split the rows (each packing every panel) rather than the panels */
  int failed;
} bf16_job;

/* tiles [t0, t1) of rows against panels [p0, p1) */
static void bf16_part(bf16_job *j, int64_t t0, int64_t t1, int64_t p0, int64_t p1) {
  uint32_t *bp = mt_aligned_alloc((size_t)j->KP * NR * sizeof(uint32_t));
  if (!bp) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t p = p0; p < p1; p++) {
    int64_t j0 = p * NR, w = j->N - j0 < NR ? j->N - j0 : NR;
    pack_b_panel(bp, j->B, j->brs, j->bcs, j->K, j0, w);
    for (int64_t t = t0; t < t1; t++) {
      int64_t i0 = t * MR, rows = j->M - i0 < MR ? j->M - i0 : MR;
      const char *ap;
      int64_t arb, akb;
      if (j->ap) {
        ap = (const char *)(j->ap + t * j->KP * MR), arb = 4, akb = MR * 4;
      } else {
        ap = (const char *)(j->A + i0 * j->ars), arb = j->ars * 2, akb = 4;
      }
      uint16_t *c = j->C + i0 * j->crs + j0 * j->ccs;
#ifdef MT_BF16_X86
      if (j->path == PATH_DPBF16) {
        tiles_dp(j->KP, ap, arb, akb, bp, rows, w, c, j->crs, j->ccs, j->alpha, j->beta);
        continue;
      }
      if (j->path == PATH_AVX2) {
        tiles_avx2(j->KP, ap, arb, akb, bp, rows, w, c, j->crs, j->ccs, j->alpha, j->beta);
        continue;
      }
#endif
      tile_scalar(j->KP, ap, arb, akb, bp, rows, w, c, j->crs, j->ccs, j->alpha, j->beta);
    }
  }
  mt_aligned_free(bp);
}
static void bf16_range(void *ctx, int64_t lo, int64_t hi) {
  bf16_job *j = ctx;
  int64_t tiles = (j->M + MR - 1) / MR, panels = (j->N + NR - 1) / NR;
  if (j->by_rows) bf16_part(j, lo, hi, 0, panels);
  else bf16_part(j, 0, tiles, lo, hi);
}
typedef struct {
  uint32_t *ap;
  const uint16_t *A;
  int64_t ars, acs, M, K;
} pack_a_job;
static void pack_a_range(void *ctx, int64_t lo, int64_t hi) {
  pack_a_job *p = ctx;
  int64_t KP = (p->K + 1) / 2;
  for (int64_t t = lo; t < hi; t++) pack_a_tile(p->ap + t * KP * MR, p->A, p->ars, p->acs, p->M, p->K, t * MR);
}

/* C (M x N bfloat16, strides crs, ccs) = alpha * A @ B + beta * C; A (M x K), B (K x N) bfloat16 with any
 * strides; K >= 1. Splits over the pool unless already inside it. */
mt_status mt_cpu_bf16_gemm(int64_t M, int64_t N, int64_t K, float alpha, const uint16_t *A, int64_t ars, int64_t acs,
                           const uint16_t *B, int64_t brs, int64_t bcs, float beta, uint16_t *C, int64_t crs,
                           int64_t ccs) {
  if (M <= 0 || N <= 0) return MT_OK;
  if (bf16_path < 0) bf16_path = choose_path();
  int64_t KP = (K + 1) / 2, tiles = (M + MR - 1) / MR, panels = (N + NR - 1) / NR;
  if (M == 1) ars = 0; /* one row: its stride is never used */
  if (K == 1) acs = brs = 0;
  if (N == 1) bcs = 0;
  int nt = mt_get_num_threads();
  int par = nt > 1 && !mt_in_parallel() && M * N * K >= 96LL * 1024;
  /* A's rows as they are when each is a run of whole pairs; else packed once */
  uint32_t *ap = NULL;
  if (!(acs == 1 && K % 2 == 0)) {
    ap = mt_aligned_alloc((size_t)(tiles * KP * MR) * sizeof(uint32_t));
    if (!ap) return mt_error(MT_ENOMEM, "matmul: out of memory packing a bfloat16 operand");
    pack_a_job pa = {ap, A, ars, acs, M, K};
    if (par && tiles > 1) mt_parallel_for(tiles, (64 * 1024) / (KP * MR + 1) + 1, pack_a_range, &pa);
    else pack_a_range(&pa, 0, tiles);
  }
  bf16_job j = {M, N, K, KP, alpha, beta, B, brs, bcs, C, crs, ccs, ap, A, ars, bf16_path, 0, 0};
  if (!par) {
    bf16_part(&j, 0, tiles, 0, panels);
  } else {
    /* the split whose slowest thread has the least to do; panels on a tie (each thread packs only its own) */
    int64_t by_panels = ((panels + nt - 1) / nt) * tiles, by_rows = ((tiles + nt - 1) / nt) * panels;
    j.by_rows = by_rows < by_panels;
    if (j.by_rows) mt_parallel_for(tiles, 1, bf16_range, &j);
    else mt_parallel_for(panels, 1, bf16_range, &j);
  }
  mt_aligned_free(ap);
  if (j.failed) return mt_error(MT_ENOMEM, "matmul: out of memory packing a bfloat16 operand");
  return MT_OK;
}
