/* lowp.c -- float32 <-> bfloat16 / float16 conversion loops for contiguous data (issue 25): the copy
 * kernel (copy.c) and the low-precision paths of the elementwise kernels call these for every
 * contiguous run. They give the bits of dtype.c's scalar conversions (bfloat16: round to nearest
 * even, a NaN kept quiet with its sign and upper payload; float16: IEEE nearest-even with
 * subnormals, F16C's vcvtps2ph / vcvtph2ps), only faster: AVX-512 or AVX2 chosen at run time,
 * MOONTORCH_VMATH=avx2 / 0 choosing lower (spec/bf16_spec.lua compares the levels bit for bit). */
#include "cpu.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MT_LOWP_X86 1
#endif

static int lowp_level = -1;
static inline int level(void) {
  if (lowp_level < 0) lowp_level = mt_cpu_kernel_level();
  return lowp_level;
}

#ifdef MT_LOWP_X86
#define TGT5 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define TGT2 __attribute__((target("avx2,fma,f16c")))

static TGT5 void f32_to_bf16_512(uint16_t *d, const float *s, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff), q = _mm512_set1_epi32(0x40);
  const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  int64_t i = 0;
  for (; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
    __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, s + i));
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, bias), _mm512_and_si512(hi, one)), 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, absm), inf);
    r = _mm512_mask_or_epi32(r, nan, hi, q);
    _mm256_mask_storeu_epi16(d + i, m, _mm512_cvtepi32_epi16(r));
  }
}
static TGT5 void bf16_to_f32_512(float *d, const uint16_t *s, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
    __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s + i));
    _mm512_mask_storeu_ps(d + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(h, 16)));
  }
}
static TGT5 void f32_to_f16_512(uint16_t *d, const float *s, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
    __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(d + i, m, h);
  }
}
/* vcvtph2ps makes a signalling NaN quiet; dtype.c keeps its bits: NaN lanes are widened by shifts */
static TGT5 void f16_to_f32_512(float *d, const uint16_t *s, int64_t n) {
  const __m512i expm = _mm512_set1_epi32(0x7c00), absm = _mm512_set1_epi32(0x7fff);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
    __m256i h = _mm256_maskz_loadu_epi16(m, s + i);
    __m512 f = _mm512_cvtph_ps(h);
    __m512i w = _mm512_cvtepu16_epi32(h);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(w, absm), expm);
    if (nan) {
      __m512i sign = _mm512_slli_epi32(_mm512_srli_epi32(w, 15), 31);
      __m512i bits = _mm512_or_si512(_mm512_or_si512(sign, _mm512_set1_epi32(0x7f800000)),
                                     _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x3ff)), 13));
      f = _mm512_mask_mov_ps(f, nan, _mm512_castsi512_ps(bits));
    }
    _mm512_mask_storeu_ps(d + i, m, f);
  }
}

static TGT2 void f32_to_bf16_256(uint16_t *d, const float *s, int64_t n) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff), q = _mm256_set1_epi32(0x40);
  const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i u = _mm256_castps_si256(_mm256_loadu_ps(s + i));
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, bias), _mm256_and_si256(hi, one)), 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absm), inf);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, q), nan);
    __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
    _mm_storeu_si128((__m128i *)(d + i), _mm256_castsi256_si128(p));
  }
  for (; i < n; i++) d[i] = mt_f2b(s[i]);
}
static TGT2 void bf16_to_f32_256(float *d, const uint16_t *s, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i)));
    _mm256_storeu_ps(d + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
  }
  for (; i < n; i++) d[i] = mt_b2f(s[i]);
}
static TGT2 void f32_to_f16_256(uint16_t *d, const float *s, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; i++) d[i] = mt_f2h(s[i]);
}
static TGT2 void f16_to_f32_256(float *d, const uint16_t *s, int64_t n) {
  int64_t i = 0;
  const __m256i expm = _mm256_set1_epi32(0x7c00), absm = _mm256_set1_epi32(0x7fff);
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128((const __m128i *)(s + i));
    __m256 f = _mm256_cvtph_ps(h);
    __m256i w = _mm256_cvtepu16_epi32(h);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(w, absm), expm);
    if (!_mm256_testz_si256(nan, nan)) {
      __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(w, 15), 31);
      __m256i bits = _mm256_or_si256(_mm256_or_si256(sign, _mm256_set1_epi32(0x7f800000)),
                                     _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x3ff)), 13));
      f = _mm256_blendv_ps(f, _mm256_castsi256_ps(bits), _mm256_castsi256_ps(nan));
    }
    _mm256_storeu_ps(d + i, f);
  }
  for (; i < n; i++) d[i] = mt_h2f(s[i]);
}
#endif

/* F16C comes with every CPU of the AVX2 level we know, but is its own feature bit */
static inline int have_f16c(void) { return mt_cpu_has(MT_CPU_F16C); }

void mt_cpu_f32_to_bf16(uint16_t *d, const float *s, int64_t n) {
#ifdef MT_LOWP_X86
  int l = level();
  if (l >= MT_CPU_LEVEL_AVX512) { f32_to_bf16_512(d, s, n); return; }
  if (l >= MT_CPU_LEVEL_AVX2) { f32_to_bf16_256(d, s, n); return; }
#endif
  for (int64_t i = 0; i < n; i++) d[i] = mt_f2b(s[i]);
}
void mt_cpu_bf16_to_f32(float *d, const uint16_t *s, int64_t n) {
#ifdef MT_LOWP_X86
  int l = level();
  if (l >= MT_CPU_LEVEL_AVX512) { bf16_to_f32_512(d, s, n); return; }
  if (l >= MT_CPU_LEVEL_AVX2) { bf16_to_f32_256(d, s, n); return; }
#endif
  for (int64_t i = 0; i < n; i++) d[i] = mt_b2f(s[i]);
}
void mt_cpu_f32_to_f16(uint16_t *d, const float *s, int64_t n) {
#ifdef MT_LOWP_X86
  int l = level();
  if (l >= MT_CPU_LEVEL_AVX512 && have_f16c()) { f32_to_f16_512(d, s, n); return; }
  if (l >= MT_CPU_LEVEL_AVX2 && have_f16c()) { f32_to_f16_256(d, s, n); return; }
#endif
  for (int64_t i = 0; i < n; i++) d[i] = mt_f2h(s[i]);
}
void mt_cpu_f16_to_f32(float *d, const uint16_t *s, int64_t n) {
#ifdef MT_LOWP_X86
  int l = level();
  if (l >= MT_CPU_LEVEL_AVX512 && have_f16c()) { f16_to_f32_512(d, s, n); return; }
  if (l >= MT_CPU_LEVEL_AVX2 && have_f16c()) { f16_to_f32_256(d, s, n); return; }
#endif
  for (int64_t i = 0; i < n; i++) d[i] = mt_h2f(s[i]);
}

/* the copy kernel's loops for these four pairs: the vector loop on contiguous runs, else element by element */
#define LOWP_LOOP(NAME, TD, TS, VEC, ONE)                                                   \
  void NAME(void *ctx, char **p, const int64_t *st, int64_t n) {                            \
    (void)ctx;                                                                              \
    if (st[0] == (int64_t)sizeof(TD) && st[1] == (int64_t)sizeof(TS)) {                     \
      VEC((TD *)p[0], (const TS *)p[1], n);                                                 \
      return;                                                                               \
    }                                                                                       \
    char *d = p[0];                                                                         \
    const char *s = p[1];                                                                   \
    for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) *(TD *)d = ONE(*(const TS *)s); \
  }
LOWP_LOOP(mt_cpu_loop_f32_to_bf16, uint16_t, float, mt_cpu_f32_to_bf16, mt_f2b)
LOWP_LOOP(mt_cpu_loop_bf16_to_f32, float, uint16_t, mt_cpu_bf16_to_f32, mt_b2f)
LOWP_LOOP(mt_cpu_loop_f32_to_f16, uint16_t, float, mt_cpu_f32_to_f16, mt_f2h)
LOWP_LOOP(mt_cpu_loop_f16_to_f32, float, uint16_t, mt_cpu_f16_to_f32, mt_h2f)

/* bool -> bfloat16 / float16: 0 or 1 (the masks of relu's backward) */
void mt_cpu_loop_bool_to_bf16(void *ctx, char **p, const int64_t *st, int64_t n) {
  (void)ctx;
  char *d = p[0];
  const char *s = p[1];
  for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) *(uint16_t *)d = *(const uint8_t *)s ? 0x3f80 : 0;
}
void mt_cpu_loop_bool_to_f16(void *ctx, char **p, const int64_t *st, int64_t n) {
  (void)ctx;
  char *d = p[0];
  const char *s = p[1];
  for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) *(uint16_t *)d = *(const uint8_t *)s ? 0x3c00 : 0;
}
