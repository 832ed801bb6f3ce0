/* vmath512.c -- float32 exp, log, tanh and sigmoid over contiguous arrays, sixteen lanes at a time with
 * AVX-512 (F, DQ, BW, VL). vmath.c hands these out instead of its AVX2 loops where the CPU has AVX-512
 * (unless MOONTORCH_VMATH=avx2 or 0 says otherwise); the other vector ops stay on AVX2.
 *
 * The algorithms and coefficients are vmath.c's (see its top comment): within 2 ULP over the whole float
 * range, IEEE values at the edges, a NaN input returned as it came, payload and sign included. exp and log
 * give vmath.c's bits; tanh and sigmoid leave out the tail of e^x where its effect is below the rounding
 * (measured over the sweeps of spec/vmath_spec.lua and spec/vmath_paths_spec.lua: at most 1.25 and 1.35
 * ULP, against 0.78 and 0.75 for vmath.c), which saves a sixth of their work. What AVX-512 changes is the instructions: mask registers instead of
 * blends, vscalefps for the 2^n scaling (one rounding, down into the denormals and up to infinity, where
 * the AVX2 code multiplies by two power-of-two factors), vrndscaleps for the rounding to an integer,
 * masked loads and stores for the tail, and the reciprocal estimate of rcp14 in the division's
 * correction step (and, for sigmoid, in place of the division: v5_div2r). At the end, the softmax line kernels
 * (softmax.h) built on v5_exp16 and v5_log16. On a CPU that runs 512-bit operations as two 256-bit halves (AMD Zen 4) the gain is
 * in the instructions saved, not in width. */
#include "cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define V5 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma"))) static inline
#define V5K __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma"))) static

#define P5(v) _mm512_set1_ps(v)
#define I5(v) _mm512_set1_epi32(v)

#define LN2_HI 0x1.62e4p-1f
#define LN2_LO 0x1.7f7d1cf79abcap-20f
#define LOG2E 0x1.715476p+0f

V5 __m512 v5_abs(__m512 x) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), I5(0x7fffffff))); }
V5 __mmask16 v5_isnan(__m512 x) { return _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q); }
V5 __m512 v5_fast2sum_err(__m512 a, __m512 b, __m512 s) { return _mm512_add_ps(_mm512_sub_ps(a, s), b); }


/* e^y = (hi + lo) 2^n; nf = n as a float */
typedef struct {
  __m512 hi, lo, nf;
} v5_exp;
typedef struct {
  __m512 rhi, c, nf;
} v5_red;

V5 v5_red v5_reduce(__m512 y) {
  __m512 nf = _mm512_roundscale_ps(_mm512_mul_ps(y, P5(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v5_red r = {_mm512_fmadd_ps(nf, P5(-LN2_HI), y), _mm512_mul_ps(nf, P5(LN2_LO)), nf};
  return r;
}
V5 v5_exp v5_exp_poly(v5_red red) {
  __m512 r = _mm512_sub_ps(red.rhi, red.c), r2 = _mm512_mul_ps(r, r);
  __m512 p01 = _mm512_fmadd_ps(P5(0x1.555556p-3f), r, P5(0x1p-1f));
  __m512 p23 = _mm512_fmadd_ps(P5(0x1.1110acp-7f), r, P5(0x1.5554e8p-5f));
  __m512 p45 = _mm512_fmadd_ps(P5(0x1.a17e54p-13f), r, P5(0x1.6d4366p-10f));
  __m512 P = _mm512_fmadd_ps(_mm512_fmadd_ps(p45, r2, p23), r2, p01);
  __m512 one = P5(1.0f);
  __m512 h = _mm512_add_ps(one, red.rhi);
  __m512 e1 = v5_fast2sum_err(one, red.rhi, h);
  __m512 lo = _mm512_fmadd_ps(r2, P, _mm512_sub_ps(e1, red.c));
  __m512 hi = _mm512_add_ps(h, lo);
  v5_exp e = {hi, v5_fast2sum_err(h, lo, hi), red.nf};
  return e;
}
V5 __m512 v5_clamp_exp(__m512 y) { return _mm512_min_ps(_mm512_max_ps(y, P5(-110.0f)), P5(88.8f)); }

V5 __m512 v5_exp16(__m512 x) {
  v5_exp e = v5_exp_poly(v5_reduce(v5_clamp_exp(x)));
  __m512 r = _mm512_scalef_ps(e.hi, e.nf); /* hi 2^n, rounded once */
  return _mm512_mask_blend_ps(v5_isnan(x), r, x);
}

/* (nh + nl) / (dh + dl), dh in [1, 2^31]: the division's rounding and the tails put back by one correction
 * step, q + (nh - q dh + nl - q dl) / dh (the reciprocal estimate of rcp14 is close enough for the small
 * correction; a Newton-refined reciprocal in place of the division measured slower on Zen 4) */
V5 __m512 v5_div2(__m512 nh, __m512 nl, __m512 dh, __m512 dl) {
  __m512 q = _mm512_div_ps(nh, dh);
  __m512 e = _mm512_fnmadd_ps(q, dh, nh);
  e = _mm512_fnmadd_ps(q, dl, _mm512_add_ps(e, nl));
  return _mm512_fmadd_ps(e, _mm512_rcp14_ps(dh), q);
}

/* v5_div2 without the division (s6-vec, sigmoid): q0 = nh r with r the 14-bit reciprocal estimate of
 * rcp14, then the same correction step with r, which squares q0's relative error (2^-28 at most) and
 * puts back the tails; the result is within about 0.5 ulp + 2^-27 of the quotient. */
V5 __m512 v5_div2r(__m512 nh, __m512 nl, __m512 dh, __m512 dl) {
  __m512 r = _mm512_rcp14_ps(dh);
  __m512 q = _mm512_mul_ps(nh, r);
  __m512 e = _mm512_fnmadd_ps(q, dh, nh);
  e = _mm512_fnmadd_ps(q, dl, _mm512_add_ps(e, nl));
  return _mm512_fmadd_ps(e, r, q);
}
/* the same for a numerator without a tail (nl = 0) */
V5 __m512 v5_div1r(__m512 nh, __m512 dh, __m512 dl) {
  __m512 r = _mm512_rcp14_ps(dh);
  __m512 q = _mm512_mul_ps(nh, r);
  __m512 e = _mm512_fnmadd_ps(q, dl, _mm512_fnmadd_ps(q, dh, nh));
  return _mm512_fmadd_ps(e, r, q);
}

/* 1 / (1 + e^-|z|), times e^z where z < 0 (mask nz): vmath.c's vm_logistic with N = 1 */
V5 __m512 v5_logistic(v5_exp e, __mmask16 nz) {
  __m512 one = P5(1.0f), zero = _mm512_setzero_ps();
  if (!_mm512_cmp_ps_mask(e.nf, P5(-100.0f), _CMP_LT_OQ)) {
    /* n in [-100, 0] in every lane: E = e^-|z| (within 0.51 ulp) without its tail, which moves the
     * result by less than 0.13 ulp for z >= 0 and by E's own error for z < 0 (about 1.1 ulp at most
     * with the final rounding; 2 allowed); the rounding of 1 + E is still put back */
    __m512 E = _mm512_scalef_ps(e.hi, e.nf);
    __m512 d = _mm512_add_ps(one, E);
    __m512 dl = v5_fast2sum_err(one, E, d);
    return v5_div1r(_mm512_mask_blend_ps(nz, one, E), d, dl);
  }
  __m512 E = _mm512_scalef_ps(e.hi, e.nf), El = _mm512_scalef_ps(e.lo, e.nf);
  __m512 d = _mm512_add_ps(one, E);
  __m512 dl = _mm512_add_ps(v5_fast2sum_err(one, E, d), El);
  /* the numerator for z < 0 is hi + lo; the quotient is scaled by 2^n at the end (one rounding into
   * the denormals) */
  __m512 q = v5_div2r(_mm512_mask_blend_ps(nz, one, e.hi), _mm512_mask_blend_ps(nz, zero, e.lo), d, dl);
  return _mm512_scalef_ps(q, _mm512_maskz_mov_ps(nz, e.nf));
}

V5 __m512 v5_sigmoid16(__m512 x) {
  __mmask16 nz = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m512 y = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), I5((int)0x80000000))); /* -|x| */
  /* y <= 0 (nan -> -110): only the lower clamp */
  v5_exp e = v5_exp_poly(v5_reduce(_mm512_max_ps(y, P5(-110.0f))));
  __m512 r = v5_logistic(e, nz);
  return _mm512_mask_blend_ps(v5_isnan(x), r, x);
}

/* tanh: the odd polynomial below |x| = 0.5493, 1 - 2 / (e^2|x| + 1) above (vmath.c's) */
V5 __m512 v5_tanh_small(__m512 x) {
  __m512 x2 = _mm512_mul_ps(x, x);
  __m512 P = _mm512_fmadd_ps(P5(-0x1.9b7c04p-8f), x2, P5(0x1.59499ap-6f));
  P = _mm512_fmadd_ps(P, x2, P5(-0x1.b929e6p-5f));
  P = _mm512_fmadd_ps(P, x2, P5(0x1.110d2ep-3f));
  P = _mm512_fmadd_ps(P, x2, P5(-0x1.55554ap-2f));
  return _mm512_fmadd_ps(_mm512_mul_ps(x, x2), P, x);
}
V5 __m512 v5_tanh_large(__m512 a) {
  __m512 y = _mm512_min_ps(_mm512_add_ps(a, a), P5(19.0f)); /* nan -> 19 */
  v5_exp e = v5_exp_poly(v5_reduce(y));
  /* E = e^2a (n in [0, 28]: exact scaling) without its tail: 2 / (E + 1) moves by less than 2^-24 / (E + 1)
   * of an ulp of the result for it */
  __m512 E = _mm512_scalef_ps(e.hi, e.nf);
  __m512 one = P5(1.0f);
  __m512 d = _mm512_add_ps(E, one);
  __m512 dl = v5_fast2sum_err(E, one, d);
  return _mm512_sub_ps(one, v5_div2(P5(2.0f), _mm512_setzero_ps(), d, dl));
}
V5 __m512 v5_tanh16(__m512 x) {
  __m512 a = v5_abs(x);
  __mmask16 lt = _mm512_cmp_ps_mask(a, P5(0.5493f), _CMP_LT_OQ);
  __m512 r;
  if (lt == 0xffff)
    r = v5_tanh_small(x);
  else if (lt == 0)
    r = v5_tanh_large(a);
  else
    r = _mm512_mask_blend_ps(lt, v5_tanh_large(a), v5_tanh_small(x));
  /* the sign of x, also for tanh(-0) = -0 */
  r = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r),
                                          _mm512_and_si512(_mm512_castps_si512(x), I5((int)0x80000000))));
  return _mm512_mask_blend_ps(v5_isnan(x), r, x);
}

/* log: x = 2^k m, m in [sqrt(1/2), sqrt(2)), vmath.c's vm_log_core and vm_log_edges */
#define SQRT_HALF_BITS 0x3f3504f3
V5 __m512 v5_log16(__m512 x) {
  __mmask16 den = _mm512_cmp_ps_mask(x, P5(0x1p-126f), _CMP_LT_OQ);
  __m512 u = _mm512_mask_mul_ps(x, den, x, P5(0x1p23f));
  __m512i kbias = _mm512_maskz_mov_epi32(den, I5(23));
  __m512i ix = _mm512_sub_epi32(_mm512_castps_si512(u), I5(SQRT_HALF_BITS));
  __m512i k = _mm512_sub_epi32(_mm512_srai_epi32(ix, 23), kbias);
  __m512 m = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_and_si512(ix, I5(0x7fffff)), I5(SQRT_HALF_BITS)));
  __m512 f = _mm512_sub_ps(m, P5(1.0f));
  __m512 s = _mm512_div_ps(f, _mm512_add_ps(P5(2.0f), f));
  __m512 z = _mm512_mul_ps(s, s);
  __m512 R = _mm512_fmadd_ps(P5(0x1.31ea02p-2f), z, P5(0x1.995e7cp-2f));
  R = _mm512_mul_ps(_mm512_fmadd_ps(R, z, P5(0x1.55557ap-1f)), z);
  __m512 hfsq = _mm512_mul_ps(_mm512_mul_ps(P5(0.5f), f), f);
  __m512 kf = _mm512_cvtepi32_ps(k);
  __m512 t = _mm512_fmadd_ps(s, _mm512_add_ps(hfsq, R), _mm512_mul_ps(kf, P5(LN2_LO)));
  __m512 r = _mm512_fmsub_ps(kf, P5(LN2_HI), _mm512_sub_ps(_mm512_sub_ps(hfsq, t), f));
  /* x = 0 -> -inf, x < 0 -> nan, inf and nan -> x */
  r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), P5(-INFINITY));
  r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), P5(NAN));
  return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, P5(INFINITY), _CMP_NLT_UQ), x);
}

/* n floats: two vectors an iteration, then the tail with masked loads and stores */
#define V5_LOOP(name, F16)                                                                                             \
  V5K void v5_##name##_f32(float *o, const float *a, int64_t n) {                                                      \
    int64_t i = 0;                                                                                                     \
    for (; i + 32 <= n; i += 32) {                                                                                     \
      __m512 x0 = _mm512_loadu_ps(a + i), x1 = _mm512_loadu_ps(a + i + 16);                                            \
      __m512 y0 = F16(x0), y1 = F16(x1);                                                                               \
      _mm512_storeu_ps(o + i, y0);                                                                                     \
      _mm512_storeu_ps(o + i + 16, y1);                                                                                \
    }                                                                                                                  \
    for (; i < n; i += 16) {                                                                                           \
      __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);                                \
      _mm512_mask_storeu_ps(o + i, m, F16(_mm512_maskz_loadu_ps(m, a + i)));                                           \
    }                                                                                                                  \
  }
V5_LOOP(exp, v5_exp16)
V5_LOOP(log, v5_log16)
V5_LOOP(tanh, v5_tanh16)
V5_LOOP(sigmoid, v5_sigmoid16)

mt_vmath_fn mt_vmath512_f32(mt_op op) {
  switch (op) {
    case MT_OP_EXP: return v5_exp_f32;
    case MT_OP_LOG: return v5_log_f32;
    case MT_OP_TANH: return v5_tanh_f32;
    case MT_OP_SIGMOID: return v5_sigmoid_f32;
    default: return NULL;
  }
}
#else
mt_vmath_fn mt_vmath512_f32(mt_op op) {
  (void)op;
  return NULL;
}
#endif

/* ---------------------------------------------------------------- softmax lines (s6-vec) */
/* softmax.h's kernels with AVX-512: the exp above (v5_exp16) and, for columns, its log (v5_log16).
 * A row: a max pass, an exp + sum pass (16-lane float partial sums, two vectors an iteration), a
 * scale pass; columns: the same passes with each lane its own line. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <math.h>

#include "softmax.h"

V5 __mmask16 v5_tail(int64_t r) { return r >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << r) - 1); }
/* a column's sum runs down n elements one at a time: in double (two halves), so that its rounding stays
 * far below float32's for any n */
typedef struct {
  __m512d lo, hi;
} v5_dsum;
V5 v5_dsum v5_dsum_add(v5_dsum s, __m512 v) {
  s.lo = _mm512_add_pd(s.lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  s.hi = _mm512_add_pd(s.hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
  return s;
}
V5 __m512 v5_dsum_get(v5_dsum s) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(s.lo)), _mm512_cvtpd_ps(s.hi), 1);
}

V5K void v5_sm_row_fwd(float *o, const float *x, int64_t n, int lg) {
  __m512 m0 = P5(-INFINITY), m1 = m0, zero = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
  }
  for (; i < n; i += 16) {
    __mmask16 k = v5_tail(n - i);
    m0 = _mm512_mask_max_ps(m0, k, m0, _mm512_maskz_loadu_ps(k, x + i));
  }
  /* a NaN may or may not win the max: either way exp gives NaN for it and the sum spreads it */
  __m512 vm = P5(_mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));
  __m512 s0 = zero, s1 = zero;
  for (i = 0; i + 32 <= n; i += 32) {
    __m512 e0 = v5_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    __m512 e1 = v5_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm));
    if (!lg) {
      _mm512_storeu_ps(o + i, e0);
      _mm512_storeu_ps(o + i + 16, e1);
    }
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  for (; i < n; i += 16) {
    __mmask16 k = v5_tail(n - i);
    __m512 e = v5_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm));
    if (!lg) _mm512_mask_storeu_ps(o + i, k, e);
    s0 = _mm512_mask_add_ps(s0, k, s0, e);
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
  if (!lg) {
    __m512 r = P5(1.0f / s);
    for (i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, _mm512_mul_ps(_mm512_loadu_ps(o + i), r));
    if (i < n) {
      __mmask16 k = v5_tail(n - i);
      _mm512_mask_storeu_ps(o + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, o + i), r));
    }
  } else {
    __m512 l = P5((float)log((double)s));
    for (i = 0; i + 16 <= n; i += 16)
      _mm512_storeu_ps(o + i, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), l));
    if (i < n) {
      __mmask16 k = v5_tail(n - i);
      _mm512_mask_storeu_ps(o + i, k, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm), l));
    }
  }
}

V5K void v5_sm_cols_fwd(float *o, const float *x, int64_t n, int64_t st, int64_t w, int lg) {
  for (int64_t j = 0; j < w; j += 16) {
    __mmask16 k = v5_tail(w - j);
    const float *xp = x + j;
    float *op = o + j;
    __m512 mx = P5(-INFINITY);
    v5_dsum ds = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (int64_t c = 0; c < n; c++) mx = _mm512_max_ps(mx, _mm512_maskz_loadu_ps(k, xp + c * st));
    for (int64_t c = 0; c < n; c++) {
      __m512 e = v5_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xp + c * st), mx));
      if (!lg) _mm512_mask_storeu_ps(op + c * st, k, e);
      ds = v5_dsum_add(ds, e);
    }
    __m512 s = v5_dsum_get(ds);
    if (!lg) {
      __m512 r = _mm512_div_ps(P5(1.0f), s);
      for (int64_t c = 0; c < n; c++)
        _mm512_mask_storeu_ps(op + c * st, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, op + c * st), r));
    } else {
      __m512 l = v5_log16(s);
      for (int64_t c = 0; c < n; c++)
        _mm512_mask_storeu_ps(op + c * st, k, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xp + c * st), mx), l));
    }
  }
}

/* softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g) */
V5K void v5_sm_row_bwd(float *gi, const float *g, const float *y, int64_t n, int lg) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  int64_t i = 0;
  if (lg) {
    for (; i + 32 <= n; i += 32) {
      s0 = _mm512_add_ps(s0, _mm512_loadu_ps(g + i));
      s1 = _mm512_add_ps(s1, _mm512_loadu_ps(g + i + 16));
    }
    for (; i < n; i += 16) s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(v5_tail(n - i), g + i));
  } else {
    for (; i + 32 <= n; i += 32) {
      s0 = _mm512_fmadd_ps(_mm512_loadu_ps(g + i), _mm512_loadu_ps(y + i), s0);
      s1 = _mm512_fmadd_ps(_mm512_loadu_ps(g + i + 16), _mm512_loadu_ps(y + i + 16), s1);
    }
    for (; i < n; i += 16) {
      __mmask16 k = v5_tail(n - i);
      s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, g + i), _mm512_maskz_loadu_ps(k, y + i), s0);
    }
  }
  __m512 s = P5(_mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
  for (i = 0; i < n; i += 16) {
    __mmask16 k = v5_tail(n - i);
    __m512 gv = _mm512_maskz_loadu_ps(k, g + i), yv = _mm512_maskz_loadu_ps(k, y + i);
    __m512 r = lg ? _mm512_fnmadd_ps(v5_exp16(yv), s, gv) : _mm512_mul_ps(yv, _mm512_sub_ps(gv, s));
    _mm512_mask_storeu_ps(gi + i, k, r);
  }
}

V5K void v5_sm_cols_bwd(float *gi, const float *g, const float *y, int64_t n, int64_t st, int64_t w, int lg) {
  for (int64_t j = 0; j < w; j += 16) {
    __mmask16 k = v5_tail(w - j);
    v5_dsum ds = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (int64_t c = 0; c < n; c++) {
      __m512 gv = _mm512_maskz_loadu_ps(k, g + j + c * st);
      ds = v5_dsum_add(ds, lg ? gv : _mm512_mul_ps(gv, _mm512_maskz_loadu_ps(k, y + j + c * st)));
    }
    __m512 s = v5_dsum_get(ds);
    for (int64_t c = 0; c < n; c++) {
      __m512 gv = _mm512_maskz_loadu_ps(k, g + j + c * st), yv = _mm512_maskz_loadu_ps(k, y + j + c * st);
      __m512 r = lg ? _mm512_fnmadd_ps(v5_exp16(yv), s, gv) : _mm512_mul_ps(yv, _mm512_sub_ps(gv, s));
      _mm512_mask_storeu_ps(gi + j + c * st, k, r);
    }
  }
}

void mt_v5_softmax_fwd(float *out, const float *x, int64_t n, int64_t st, int64_t w, int log) {
  if (st == 1) v5_sm_row_fwd(out, x, n, log);
  else v5_sm_cols_fwd(out, x, n, st, w, log);
}
void mt_v5_softmax_bwd(float *gin, const float *g, const float *y, int64_t n, int64_t st, int64_t w, int log) {
  if (st == 1) v5_sm_row_bwd(gin, g, y, n, log);
  else v5_sm_cols_bwd(gin, g, y, n, st, w, log);
}
#endif
