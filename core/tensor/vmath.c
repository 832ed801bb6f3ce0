/* vmath.c -- float32 exp, log, tanh, sigmoid, expm1, log1p, silu, gelu_tanh and softplus over contiguous
 * arrays, eight lanes at a time with AVX2+FMA. elementwise.c asks mt_vmath_f32() for a kernel once; on a
 * CPU without AVX2+FMA (or with MOONTORCH_VMATH=0 in the environment) there is none and the scalar libm
 * kernels stay, as they do for strided operands and float64. Where the CPU has AVX-512, exp, log, tanh and
 * sigmoid come from vmath512.c instead (MOONTORCH_VMATH=avx2 keeps these loops).
 *
 * Accuracy: within 2 ULP of the correctly rounded result over the whole float range, denormal results
 * included (spec/vmath_spec.lua sweeps every op against float64 libm); IEEE values at the edges (exp
 * overflows to inf and underflows through the denormals to 0, log(0) = -inf, log(x < 0) = nan, nan in
 * gives nan out, tanh(-0) = -0, sigmoid(-inf) = 0). Measured over every 13th float32 bit pattern against
 * float64 libm: exp 0.75, log 0.81, tanh 0.80, sigmoid 0.75, expm1 1.41, log1p 0.83, silu 0.79,
 * gelu_tanh 0.78, softplus 1.13 ULP at most (the exp-based maxima are in the denormal results).
 *
 * The algorithms are the textbook ones, written here from their descriptions:
 *  - exp: Cody-Waite reduction y = n ln2 + r, |r| <= ln2/2, with ln2 split in a 15-bit head (so that
 *    n ln2_hi is exact and r_hi = y - n ln2_hi comes out of one FMA without error) and a tail; then
 *    e^r = 1 + r + r^2 P(r) with P a degree-5 minimax polynomial, summed as hi + lo (Fast2Sum on 1 + r)
 *    so that the only large rounding is the last one; 2^n applied as two exact power-of-two factors so
 *    that n from -160 to 128 reaches the denormals and the overflow with a single rounding.
 *  - log: x = 2^k m with m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f), and
 *    log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)) with R a degree-3 minimax polynomial (the classic
 *    formulation of Tang and of 4.3BSD / fdlibm); log1p adds the rounding error of 1 + x as c / u.
 *  - tanh: an odd minimax polynomial below |x| = 0.5493 (where tanh = 1/2), 1 - 2 / (e^2|x| + 1) above.
 *  - sigmoid, silu, gelu_tanh: N / (1 + e^-|z|) with the rounding error of 1 + e^-|z| and of the
 *    division put back by one correction step; for z < 0 the numerator carries e^z as (p, 2^n) so that
 *    the result reaches the denormals with one rounding. gelu_tanh forms z = 2 sqrt(2/pi) (x + 0.044715
 *    x^3) and its reduction in double: the result is ill-conditioned in z (relative error ~ |z| dz).
 *  - expm1: 2^n (e^r - 1) + (2^n - 1) in one FMA; softplus: log1p(exp(x)), x itself above 20 (as the
 *    scalar kernel and PyTorch do).
 * The polynomial coefficients were fitted for this file (Lawson's iteratively reweighted least squares
 * for the minimax error, in double, then rounded to float and checked). */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VM_X86 1
#include <immintrin.h>
#endif

#if VM_X86
#define VM __attribute__((target("avx2,fma"))) static inline
#define VMK __attribute__((target("avx2,fma"))) static

#define PS(v) _mm256_set1_ps(v)
#define PD(v) _mm256_set1_pd(v)

/* ---------------------------------------------------------------- small helpers */
VM __m256 vm_abs(__m256 x) {
  return _mm256_andnot_ps(PS(-0.0f), x);
}
VM __m256 vm_isnan(__m256 x) {
  return _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
}
/* 2^k for k in [-126, 127] */
VM __m256 vm_pow2i(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}
/* exact sum a + b = s + t when |a| >= |b| (Fast2Sum) */
VM __m256 vm_fast2sum_err(__m256 a, __m256 b, __m256 s) {
  return _mm256_add_ps(_mm256_sub_ps(a, s), b);
}

/* 2^n as two factors 2^(n>>1), 2^(n - (n>>1)), each normal for n in [-252, 254]: v * s1 * s2 rounds once */
typedef struct {
  __m256 s1, s2;
} vm_scale;
VM vm_scale vm_scale_of(__m256i n) {
  __m256i n1 = _mm256_srai_epi32(n, 1);
  vm_scale s = {vm_pow2i(n1), vm_pow2i(_mm256_sub_epi32(n, n1))};
  return s;
}
VM __m256 vm_apply(__m256 v, vm_scale s) {
  return _mm256_mul_ps(_mm256_mul_ps(v, s.s1), s.s2);
}

/* ---------------------------------------------------------------- exp core */
/* e^y = (hi + lo) 2^n, |lo| <= ulp(hi) / 2; hi = p rounded, within ~0.51 ULP of e^r */
typedef struct {
  __m256 hi, lo;
  __m256i n;
} vm_exp;

#define LN2_HI 0x1.62e4p-1f           /* 15 significant bits: n * LN2_HI is exact for |n| < 512 */
#define LN2_LO 0x1.7f7d1cf79abcap-20f /* ln 2 - LN2_HI */
#define LOG2E 0x1.715476p+0f

/* reduced argument y = n ln2 + (r_hi - c), r_hi exact, c = n LN2_LO rounded; y in [-110, 88.8] */
typedef struct {
  __m256 rhi, c;
  __m256i n;
} vm_red;
VM vm_red vm_reduce(__m256 y) {
  __m256 nf = _mm256_round_ps(_mm256_mul_ps(y, PS(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  vm_red r = {_mm256_fmadd_ps(nf, PS(-LN2_HI), y), _mm256_mul_ps(nf, PS(LN2_LO)), _mm256_cvtps_epi32(nf)};
  return r;
}
/* e^(r_hi - c) as hi + lo: 1 + r + r^2 P(r), with the 1 + r_hi rounding error kept (Fast2Sum) */
VM vm_exp vm_exp_poly(vm_red red) {
  __m256 r = _mm256_sub_ps(red.rhi, red.c), r2 = _mm256_mul_ps(r, r);
  /* P(r) = c0 + c1 r + ... + c5 r^5, in Estrin's scheme (a shorter dependency chain than Horner's) */
  __m256 p01 = _mm256_fmadd_ps(PS(0x1.555556p-3f), r, PS(0x1p-1f));
  __m256 p23 = _mm256_fmadd_ps(PS(0x1.1110acp-7f), r, PS(0x1.5554e8p-5f));
  __m256 p45 = _mm256_fmadd_ps(PS(0x1.a17e54p-13f), r, PS(0x1.6d4366p-10f));
  __m256 P = _mm256_fmadd_ps(_mm256_fmadd_ps(p45, r2, p23), r2, p01);
  __m256 one = PS(1.0f);
  __m256 h = _mm256_add_ps(one, red.rhi);
  __m256 e1 = vm_fast2sum_err(one, red.rhi, h);
  __m256 lo = _mm256_fmadd_ps(r2, P, _mm256_sub_ps(e1, red.c));
  __m256 hi = _mm256_add_ps(h, lo);
  vm_exp e = {hi, vm_fast2sum_err(h, lo, hi), red.n};
  return e;
}
/* y clamped into [-110, 88.8]: below -103.98 e^y rounds to 0, above 88.73 to inf; nan goes to -110 */
VM __m256 vm_clamp_exp(__m256 y) {
  return _mm256_min_ps(_mm256_max_ps(y, PS(-110.0f)), PS(88.8f));
}

VM __m256 vm_exp8(__m256 x) {
  vm_exp e = vm_exp_poly(vm_reduce(vm_clamp_exp(x)));
  __m256 r = vm_apply(e.hi, vm_scale_of(e.n));
  return _mm256_blendv_ps(r, x, vm_isnan(x));
}

/* ---------------------------------------------------------------- quotient with corrections */
/* (nh + nl) / (dh + dl) for dh in [1, 2^31], |nl|, |dl| below half an ulp: the division's rounding
 * and the two tails are put back with one step, q + (nh - q dh + nl - q dl) / dh */
VM __m256 vm_div2(__m256 nh, __m256 nl, __m256 dh, __m256 dl) {
  __m256 q = _mm256_div_ps(nh, dh);
  __m256 e = _mm256_fnmadd_ps(q, dh, nh);
  e = _mm256_fnmadd_ps(q, dl, _mm256_add_ps(e, nl));
  return _mm256_fmadd_ps(e, _mm256_rcp_ps(dh), q);
}

/* N / (1 + e^-|z|) for sigmoid-like results; z >= 0: num = N; z < 0: num = N e^z, nz the z < 0 mask;
 * unit: N = 1. The exp core gives e^-|z| = (hi + lo) 2^n. Where 2^n lo may be denormal (n < -100), the
 * numerator for z < 0 is N (hi + lo) and the quotient is scaled by 2^n at the end, so that results in the
 * denormals are rounded once. Elsewhere (the common case) E = 2^n hi and its tail are formed directly. */
VM __m256 vm_logistic(vm_exp e, __m256 nz, __m256 N, int unit) {
  __m256 one = PS(1.0f), zero = _mm256_setzero_ps();
  if (!_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(-100), e.n)))) {
    /* n in [-100, 0] in every lane: E = e^-|z| and its tail (lo 2^n) normal enough to keep their
     * precision; numerator N E with the product's rounding error */
    __m256 p2 = vm_pow2i(e.n);
    __m256 E = _mm256_mul_ps(e.hi, p2), El = _mm256_mul_ps(e.lo, p2);
    __m256 d = _mm256_add_ps(one, E);
    __m256 dl = _mm256_add_ps(vm_fast2sum_err(one, E, d), El); /* E <= 1 */
    if (unit)                                                  /* N = 1 */
      return vm_div2(_mm256_blendv_ps(one, E, nz), _mm256_and_ps(El, nz), d, dl);
    __m256 ph = _mm256_mul_ps(N, E);
    __m256 pl = _mm256_fmadd_ps(N, El, _mm256_fmsub_ps(N, E, ph));
    return vm_div2(_mm256_blendv_ps(N, ph, nz), _mm256_and_ps(pl, nz), d, dl);
  }
  vm_scale s = vm_scale_of(e.n);
  __m256 E = vm_apply(e.hi, s), El = vm_apply(e.lo, s);
  __m256 d = _mm256_add_ps(one, E);
  __m256 dl = _mm256_add_ps(vm_fast2sum_err(one, E, d), El);
  __m256 ph = _mm256_mul_ps(N, e.hi);
  __m256 pl = _mm256_fmadd_ps(N, e.lo, _mm256_fmsub_ps(N, e.hi, ph));
  __m256 q = vm_div2(_mm256_blendv_ps(N, ph, nz), _mm256_blendv_ps(zero, pl, nz), d, dl);
  /* scale by 2^n where z < 0 (n = 0 elsewhere) */
  __m256i n = _mm256_and_si256(e.n, _mm256_castps_si256(nz));
  return vm_apply(q, vm_scale_of(n));
}

VM __m256 vm_sigmoid8(__m256 x) {
  __m256 nz = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  vm_exp e = vm_exp_poly(vm_reduce(vm_clamp_exp(_mm256_or_ps(vm_abs(x), PS(-0.0f)))));
  __m256 r = vm_logistic(e, nz, PS(1.0f), 1);
  return _mm256_blendv_ps(r, x, vm_isnan(x));
}

/* x sigmoid(z) at the edges, as the scalar kernels give it: +-0 -> +-0, inf -> inf, -inf -> nan (-inf * 0),
 * nan -> nan */
VM __m256 vm_silu_edges(__m256 r, __m256 x, __m256 nz) {
  r = _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
  r = _mm256_blendv_ps(r, _mm256_blendv_ps(x, PS(NAN), nz), _mm256_cmp_ps(vm_abs(x), PS(INFINITY), _CMP_EQ_OQ));
  return _mm256_blendv_ps(r, x, vm_isnan(x));
}

VM __m256 vm_silu8(__m256 x) {
  __m256 nz = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  vm_exp e = vm_exp_poly(vm_reduce(vm_clamp_exp(_mm256_or_ps(vm_abs(x), PS(-0.0f)))));
  __m256 r = vm_logistic(e, nz, x, 0);
  /* below -110 the clamp keeps e^x at e^-110: x e^x rounds to -0 there */
  r = _mm256_blendv_ps(r, PS(-0.0f), _mm256_cmp_ps(x, PS(-110.0f), _CMP_LT_OQ));
  return vm_silu_edges(r, x, nz);
}

/* gelu with the tanh approximation: 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
 * z = 2u and its reduction in double, the rest as silu. */
VM __m256 vm_gelu_tanh8(__m256 x) {
  const __m256d K1 = PD(1.5957691216057307117597842397375), K3 = PD(1.5957691216057307117597842397375 * 0.044715);
  __m256d xd[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(x)), _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))};
  __m128 rhi[2], c[2];
  __m128i n[2];
  for (int h = 0; h < 2; h++) {
    __m256d v = xd[h];
    __m256d z = _mm256_mul_pd(v, _mm256_fmadd_pd(_mm256_mul_pd(v, v), K3, K1));
    /* y = -|z| in [-110, 0] */
    __m256d y = _mm256_max_pd(_mm256_or_pd(z, PD(-0.0)), PD(-110.0));
    __m256d nf =
        _mm256_round_pd(_mm256_mul_pd(y, PD(1.4426950408889634074)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fmadd_pd(nf, PD(-0x1.62e42fefa39efp-1), y);
    r = _mm256_fmadd_pd(nf, PD(-0x1.abc9e3b39803fp-56), r);
    __m128 rh = _mm256_cvtpd_ps(r);
    rhi[h] = rh;
    c[h] = _mm256_cvtpd_ps(_mm256_sub_pd(_mm256_cvtps_pd(rh), r));
    n[h] = _mm256_cvtpd_epi32(nf);
  }
  vm_red red = {_mm256_set_m128(rhi[1], rhi[0]), _mm256_set_m128(c[1], c[0]), _mm256_set_m128i(n[1], n[0])};
  __m256 nz = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  vm_exp e = vm_exp_poly(red);
  __m256 r = vm_logistic(e, nz, x, 0);
  /* below x = -11, z < -110 (clamped): x e^z rounds to -0 */
  r = _mm256_blendv_ps(r, PS(-0.0f), _mm256_cmp_ps(x, PS(-11.0f), _CMP_LT_OQ));
  return vm_silu_edges(r, x, nz);
}

/* ---------------------------------------------------------------- tanh */
/* tanh(x) for |x| < 0.5493: x + x^3 P(x^2), an odd minimax polynomial */
VM __m256 vm_tanh_small(__m256 x) {
  __m256 x2 = _mm256_mul_ps(x, x);
  __m256 P = _mm256_fmadd_ps(PS(-0x1.9b7c04p-8f), x2, PS(0x1.59499ap-6f));
  P = _mm256_fmadd_ps(P, x2, PS(-0x1.b929e6p-5f));
  P = _mm256_fmadd_ps(P, x2, PS(0x1.110d2ep-3f));
  P = _mm256_fmadd_ps(P, x2, PS(-0x1.55554ap-2f));
  return _mm256_fmadd_ps(_mm256_mul_ps(x, x2), P, x);
}
/* tanh(a) for a = |x| >= 0.5493: 1 - 2 / (E + 1), E = e^2a (a clamped at 9.5: tanh rounds to 1 from 9.011) */
VM __m256 vm_tanh_large(__m256 a) {
  __m256 y = _mm256_min_ps(_mm256_add_ps(a, a), PS(19.0f)); /* nan -> 19 */
  vm_exp e = vm_exp_poly(vm_reduce(y));
  __m256 p2 = vm_pow2i(e.n); /* n in [0, 28] */
  __m256 E = _mm256_mul_ps(e.hi, p2), El = _mm256_mul_ps(e.lo, p2);
  __m256 one = PS(1.0f);
  __m256 d = _mm256_add_ps(E, one);
  __m256 dl = _mm256_add_ps(vm_fast2sum_err(E, one, d), El); /* E >= 1 */
  return _mm256_sub_ps(one, vm_div2(PS(2.0f), _mm256_setzero_ps(), d, dl));
}
VM __m256 vm_tanh8(__m256 x) {
  __m256 a = vm_abs(x);
  __m256 lt = _mm256_cmp_ps(a, PS(0.5493f), _CMP_LT_OQ);
  int m = _mm256_movemask_ps(lt);
  __m256 r;
  if (m == 0xff)
    r = vm_tanh_small(x);
  else if (m == 0)
    r = vm_tanh_large(a);
  else
    r = _mm256_blendv_ps(vm_tanh_large(a), vm_tanh_small(x), lt);
  r = _mm256_or_ps(r, _mm256_and_ps(x, PS(-0.0f))); /* the sign of x, also for tanh(-0) = -0 */
  return _mm256_blendv_ps(r, x, vm_isnan(x));
}

/* ---------------------------------------------------------------- expm1 */
VM __m256 vm_expm1_8(__m256 x) {
  /* below -17.33 the result rounds to -1; the clamp at -18 keeps 2^n - 1 exact and 2^n normal */
  __m256 y = _mm256_min_ps(_mm256_max_ps(x, PS(-18.0f)), PS(88.8f));
  vm_red red = vm_reduce(y);
  vm_exp e = vm_exp_poly(red);
  /* e^r - 1 = (hi - 1) + lo; hi - 1 is exact (hi in [0.7, 1.42]) */
  __m256 q = _mm256_add_ps(_mm256_sub_ps(e.hi, PS(1.0f)), e.lo);
  /* 2^n q + (2^n - 1) in one FMA; n = 128 (x near 88.7) as 2 * (2^127 q + 2^127 - 1/2) */
  __m256i n = _mm256_min_epi32(e.n, _mm256_set1_epi32(127));
  __m256 t = vm_pow2i(n);
  __m256 extra = vm_pow2i(_mm256_sub_epi32(e.n, n)); /* 1 or 2 */
  __m256 tm1 = _mm256_sub_ps(t, vm_pow2i(_mm256_sub_epi32(n, e.n)));
  __m256 r = _mm256_mul_ps(_mm256_fmadd_ps(t, q, tm1), extra);
  /* +-0 and tiny x: x; nan: nan */
  r = _mm256_blendv_ps(r, x, _mm256_cmp_ps(vm_abs(x), PS(0x1p-25f), _CMP_LT_OQ));
  return _mm256_blendv_ps(r, x, vm_isnan(x));
}

/* ---------------------------------------------------------------- log core */
#define SQRT_HALF_BITS 0x3f3504f3 /* sqrt(1/2) */
/* log(u) + c for u > 0 finite (others give garbage: the callers blend the special values in) */
VM __m256 vm_log_core(__m256 u, __m256 c) {
  /* denormals: scale by 2^23 first */
  __m256 den = _mm256_cmp_ps(u, PS(0x1p-126f), _CMP_LT_OQ);
  u = _mm256_blendv_ps(u, _mm256_mul_ps(u, PS(0x1p23f)), den);
  __m256i kbias = _mm256_and_si256(_mm256_castps_si256(den), _mm256_set1_epi32(23));
  __m256i ix = _mm256_sub_epi32(_mm256_castps_si256(u), _mm256_set1_epi32(SQRT_HALF_BITS));
  __m256i k = _mm256_sub_epi32(_mm256_srai_epi32(ix, 23), kbias);
  __m256 m = _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_and_si256(ix, _mm256_set1_epi32(0x7fffff)), _mm256_set1_epi32(SQRT_HALF_BITS)));
  __m256 f = _mm256_sub_ps(m, PS(1.0f)); /* exact */
  __m256 s = _mm256_div_ps(f, _mm256_add_ps(PS(2.0f), f));
  __m256 z = _mm256_mul_ps(s, s);
  __m256 R = _mm256_fmadd_ps(PS(0x1.31ea02p-2f), z, PS(0x1.995e7cp-2f));
  R = _mm256_mul_ps(_mm256_fmadd_ps(R, z, PS(0x1.55557ap-1f)), z);
  __m256 hfsq = _mm256_mul_ps(_mm256_mul_ps(PS(0.5f), f), f);
  __m256 kf = _mm256_cvtepi32_ps(k);
  /* k ln2_hi - ((hfsq - (s (hfsq + R) + k ln2_lo + c)) - f) */
  __m256 t = _mm256_fmadd_ps(s, _mm256_add_ps(hfsq, R), _mm256_fmadd_ps(kf, PS(LN2_LO), c));
  return _mm256_fmsub_ps(kf, PS(LN2_HI), _mm256_sub_ps(_mm256_sub_ps(hfsq, t), f));
}
/* the special values of log(u): u = 0 -> -inf, u < 0 -> nan, u = inf -> inf, nan -> nan */
VM __m256 vm_log_edges(__m256 r, __m256 u) {
  r = _mm256_blendv_ps(r, PS(-INFINITY), _mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_EQ_OQ));
  r = _mm256_blendv_ps(r, PS(NAN), _mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_LT_OQ));
  return _mm256_blendv_ps(r, u, _mm256_cmp_ps(u, PS(INFINITY), _CMP_NLT_UQ)); /* inf or nan */
}
VM __m256 vm_log8(__m256 x) {
  return vm_log_edges(vm_log_core(x, _mm256_setzero_ps()), x);
}

/* log1p(x + xl), |xl| below half an ulp of x */
VM __m256 vm_log1p2(__m256 x, __m256 xl) {
  __m256 one = PS(1.0f);
  __m256 u = _mm256_add_ps(one, x);
  /* the rounding error of 1 + x, exactly (Fast2Sum with the larger operand first), and xl */
  __m256 big = _mm256_cmp_ps(vm_abs(x), one, _CMP_GT_OQ);
  __m256 err = _mm256_blendv_ps(vm_fast2sum_err(one, x, u), vm_fast2sum_err(x, one, u), big);
  __m256 r = vm_log_core(u, _mm256_div_ps(_mm256_add_ps(err, xl), u));
  r = vm_log_edges(r, u);
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ)); /* +-0 */
}
VM __m256 vm_log1p8(__m256 x) {
  return vm_log1p2(x, _mm256_setzero_ps());
}

/* softplus: x above 20, log1p(e^x) below, e^x passed on as hi + lo */
VM __m256 vm_softplus8(__m256 x) {
  vm_exp e = vm_exp_poly(vm_reduce(vm_clamp_exp(x)));
  vm_scale s = vm_scale_of(e.n);
  __m256 r = vm_log1p2(vm_apply(e.hi, s), vm_apply(e.lo, s));
  r = _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, PS(20.0f), _CMP_GT_OQ));
  return _mm256_blendv_ps(r, x, vm_isnan(x));
}

/* ---------------------------------------------------------------- array loops */
/* n floats: whole vectors, then the tail through a padded stack buffer (no reads past the end) */
#define VM_LOOP(name, F8)                                                                                              \
  VMK void vm_##name##_f32(float *o, const float *a, int64_t n) {                                                      \
    int64_t i = 0;                                                                                                     \
    /* two vectors an iteration: two independent dependency chains for the out-of-order core */                        \
    for (; i + 16 <= n; i += 16) {                                                                                     \
      __m256 x0 = _mm256_loadu_ps(a + i), x1 = _mm256_loadu_ps(a + i + 8);                                             \
      __m256 y0 = F8(x0), y1 = F8(x1);                                                                                 \
      _mm256_storeu_ps(o + i, y0);                                                                                     \
      _mm256_storeu_ps(o + i + 8, y1);                                                                                 \
    }                                                                                                                  \
    for (; i + 8 <= n; i += 8)                                                                                         \
      _mm256_storeu_ps(o + i, F8(_mm256_loadu_ps(a + i)));                                                             \
    if (i < n) {                                                                                                       \
      float buf[8] = {0};                                                                                              \
      memcpy(buf, a + i, (size_t)(n - i) * sizeof(float));                                                             \
      _mm256_storeu_ps(buf, F8(_mm256_loadu_ps(buf)));                                                                 \
      memcpy(o + i, buf, (size_t)(n - i) * sizeof(float));                                                             \
    }                                                                                                                  \
  }
VM_LOOP(exp, vm_exp8)
VM_LOOP(log, vm_log8)
VM_LOOP(tanh, vm_tanh8)
VM_LOOP(sigmoid, vm_sigmoid8)
VM_LOOP(expm1, vm_expm1_8)
VM_LOOP(log1p, vm_log1p8)
VM_LOOP(silu, vm_silu8)
VM_LOOP(gelu_tanh, vm_gelu_tanh8)
VM_LOOP(softplus, vm_softplus8)

#endif /* VM_X86 */

mt_vmath_fn mt_vmath_f32(mt_op op) {
#if VM_X86
  int level = mt_cpu_kernel_level();
  if (level < MT_CPU_LEVEL_AVX2) return NULL;
  if (level >= MT_CPU_LEVEL_AVX512) {
    mt_vmath_fn f = mt_vmath512_f32(op);
    if (f) return f;
  }
  switch (op) {
#define X(OP, name)                                                                                                    \
  case MT_OP_##OP:                                                                                                     \
    return vm_##name##_f32;
    MT_VMATH_OPS(X)
#undef X
  default:
    return NULL;
  }
#else
  (void)op;
  return NULL;
#endif
}

/* ---------------------------------------------------------------- softmax lines (s6-vec) */
/* softmax.h's kernels with AVX2+FMA: vmath512.c's passes eight lanes at a time, with vm_exp8 and, for
 * columns, vm_log8; tails through maskload / maskstore (masked-out lanes read 0 and are never stored). */
#if VM_X86
#include <math.h>

#include "softmax.h"

VM __m256i vm_tail(int64_t r) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(r < 8 ? r : 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
VM float vm_hmax(__m256 v) {
  __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_max_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_max_ss(a, _mm_shuffle_ps(a, a, 1)));
}
VM float vm_hsum(__m256 v) {
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(a, _mm_shuffle_ps(a, a, 1)));
}

/* a column's sum runs down n elements one at a time: in double (two halves), so that its rounding stays
 * far below float32's for any n */
typedef struct {
  __m256d lo, hi;
} vm_dsum;
VM vm_dsum vm_dsum_add(vm_dsum s, __m256 v) {
  s.lo = _mm256_add_pd(s.lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  s.hi = _mm256_add_pd(s.hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  return s;
}
VM __m256 vm_dsum_get(vm_dsum s) { return _mm256_set_m128(_mm256_cvtpd_ps(s.hi), _mm256_cvtpd_ps(s.lo)); }

VMK void vm_sm_row_fwd(float *o, const float *x, int64_t n, int lg) {
  __m256 m0 = PS(-INFINITY), m1 = m0, zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
  }
  for (; i < n; i += 8) {
    __m256i k = vm_tail(n - i);
    m0 = _mm256_blendv_ps(m0, _mm256_max_ps(m0, _mm256_maskload_ps(x + i, k)), _mm256_castsi256_ps(k));
  }
  /* a NaN may or may not win the max: either way exp gives NaN for it and the sum spreads it */
  __m256 vmx = PS(vm_hmax(_mm256_max_ps(m0, m1)));
  __m256 s0 = zero, s1 = zero;
  for (i = 0; i + 16 <= n; i += 16) {
    __m256 e0 = vm_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
    __m256 e1 = vm_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vmx));
    if (!lg) {
      _mm256_storeu_ps(o + i, e0);
      _mm256_storeu_ps(o + i + 8, e1);
    }
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  for (; i < n; i += 8) {
    __m256i k = vm_tail(n - i);
    __m256 e = _mm256_and_ps(vm_exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, k), vmx)), _mm256_castsi256_ps(k));
    if (!lg) _mm256_maskstore_ps(o + i, k, e);
    s0 = _mm256_add_ps(s0, e);
  }
  float s = vm_hsum(_mm256_add_ps(s0, s1));
  if (!lg) {
    __m256 r = PS(1.0f / s);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(o + i), r));
    if (i < n) {
      __m256i k = vm_tail(n - i);
      _mm256_maskstore_ps(o + i, k, _mm256_mul_ps(_mm256_maskload_ps(o + i, k), r));
    }
  } else {
    __m256 l = PS((float)log((double)s));
    for (i = 0; i + 8 <= n; i += 8)
      _mm256_storeu_ps(o + i, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx), l));
    if (i < n) {
      __m256i k = vm_tail(n - i);
      _mm256_maskstore_ps(o + i, k, _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, k), vmx), l));
    }
  }
}

/* loads and stores of 8 lanes: plain for whole vectors (full, a constant where these are inlined), through
 * maskload / maskstore for a tail (maskstore is slow on some CPUs: only where needed) */
VM __m256 vm_ld(const float *p, __m256i k, int full) { return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, k); }
VM void vm_st(float *p, __m256i k, __m256 v, int full) {
  if (full) _mm256_storeu_ps(p, v);
  else _mm256_maskstore_ps(p, k, v);
}

VM void vm_sm_cols8_fwd(float *op, const float *xp, int64_t n, int64_t st, __m256i k, int full, int lg) {
  __m256 mx = PS(-INFINITY);
  vm_dsum ds = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  for (int64_t c = 0; c < n; c++) mx = _mm256_max_ps(mx, vm_ld(xp + c * st, k, full));
  for (int64_t c = 0; c < n; c++) {
    __m256 e = vm_exp8(_mm256_sub_ps(vm_ld(xp + c * st, k, full), mx));
    if (!lg) vm_st(op + c * st, k, e, full);
    ds = vm_dsum_add(ds, e);
  }
  __m256 s = vm_dsum_get(ds);
  if (!lg) {
    __m256 r = _mm256_div_ps(PS(1.0f), s);
    for (int64_t c = 0; c < n; c++) vm_st(op + c * st, k, _mm256_mul_ps(vm_ld(op + c * st, k, full), r), full);
  } else {
    __m256 l = vm_log8(s);
    for (int64_t c = 0; c < n; c++)
      vm_st(op + c * st, k, _mm256_sub_ps(_mm256_sub_ps(vm_ld(xp + c * st, k, full), mx), l), full);
  }
}

VMK void vm_sm_cols_fwd(float *o, const float *x, int64_t n, int64_t st, int64_t w, int lg) {
  for (int64_t j = 0; j < w; j += 8) {
    if (w - j >= 8) vm_sm_cols8_fwd(o + j, x + j, n, st, _mm256_setzero_si256(), 1, lg);
    else vm_sm_cols8_fwd(o + j, x + j, n, st, vm_tail(w - j), 0, lg);
  }
}

/* softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g) */
VMK void vm_sm_row_bwd(float *gi, const float *g, const float *y, int64_t n, int lg) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  int64_t i = 0;
  if (lg) {
    for (; i + 16 <= n; i += 16) {
      s0 = _mm256_add_ps(s0, _mm256_loadu_ps(g + i));
      s1 = _mm256_add_ps(s1, _mm256_loadu_ps(g + i + 8));
    }
    for (; i < n; i += 8) s0 = _mm256_add_ps(s0, _mm256_maskload_ps(g + i, vm_tail(n - i)));
  } else {
    for (; i + 16 <= n; i += 16) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(g + i), _mm256_loadu_ps(y + i), s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(g + i + 8), _mm256_loadu_ps(y + i + 8), s1);
    }
    for (; i < n; i += 8) {
      __m256i k = vm_tail(n - i);
      s0 = _mm256_fmadd_ps(_mm256_maskload_ps(g + i, k), _mm256_maskload_ps(y + i, k), s0);
    }
  }
  __m256 s = PS(vm_hsum(_mm256_add_ps(s0, s1)));
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 gv = _mm256_loadu_ps(g + i), yv = _mm256_loadu_ps(y + i);
    _mm256_storeu_ps(gi + i, lg ? _mm256_fnmadd_ps(vm_exp8(yv), s, gv) : _mm256_mul_ps(yv, _mm256_sub_ps(gv, s)));
  }
  if (i < n) {
    __m256i k = vm_tail(n - i);
    __m256 gv = _mm256_maskload_ps(g + i, k), yv = _mm256_maskload_ps(y + i, k);
    _mm256_maskstore_ps(gi + i, k, lg ? _mm256_fnmadd_ps(vm_exp8(yv), s, gv) : _mm256_mul_ps(yv, _mm256_sub_ps(gv, s)));
  }
}

VM void vm_sm_cols8_bwd(float *gi, const float *g, const float *y, int64_t n, int64_t st, __m256i k, int full, int lg) {
  vm_dsum ds = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  for (int64_t c = 0; c < n; c++) {
    __m256 gv = vm_ld(g + c * st, k, full);
    ds = vm_dsum_add(ds, lg ? gv : _mm256_mul_ps(gv, vm_ld(y + c * st, k, full)));
  }
  __m256 s = vm_dsum_get(ds);
  for (int64_t c = 0; c < n; c++) {
    __m256 gv = vm_ld(g + c * st, k, full), yv = vm_ld(y + c * st, k, full);
    __m256 r = lg ? _mm256_fnmadd_ps(vm_exp8(yv), s, gv) : _mm256_mul_ps(yv, _mm256_sub_ps(gv, s));
    vm_st(gi + c * st, k, r, full);
  }
}

VMK void vm_sm_cols_bwd(float *gi, const float *g, const float *y, int64_t n, int64_t st, int64_t w, int lg) {
  for (int64_t j = 0; j < w; j += 8) {
    if (w - j >= 8) vm_sm_cols8_bwd(gi + j, g + j, y + j, n, st, _mm256_setzero_si256(), 1, lg);
    else vm_sm_cols8_bwd(gi + j, g + j, y + j, n, st, vm_tail(w - j), 0, lg);
  }
}

void mt_vm_softmax_fwd(float *out, const float *x, int64_t n, int64_t st, int64_t w, int log) {
  if (st == 1) vm_sm_row_fwd(out, x, n, log);
  else vm_sm_cols_fwd(out, x, n, st, w, log);
}
void mt_vm_softmax_bwd(float *gin, const float *g, const float *y, int64_t n, int64_t st, int64_t w, int log) {
  if (st == 1) vm_sm_row_bwd(gin, g, y, n, log);
  else vm_sm_cols_bwd(gin, g, y, n, st, w, log);
}
#endif
