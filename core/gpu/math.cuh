/* math.cuh -- the scalar functions of the elementwise ops, for float and double, written as the CPU's
 * kernels (core/tensor/elementwise.c) write them, so that a value computed here is the value the CPU
 * computes (bit for bit in the emulator, which calls the same C library; within the device math
 * library's ulps on a GPU). Part of the kernel files' compilation (device.cuh first). */
#ifndef MT_GPU_MATH_CUH
#define MT_GPU_MATH_CUH

#include "device.cuh"

namespace MT_GPU_NS {

/* one name per function for float and double: the C library's f-suffixed function for float (as
 * tgmath.h picks it on the CPU) */
#define MT_MATH1(name, ff, df)                                                                                       \
  MT_DEV float name(float x) { return ff(x); }                                                                       \
  MT_DEV double name(double x) { return df(x); }
#define MT_MATH2(name, ff, df)                                                                                       \
  MT_DEV float name(float x, float y) { return ff(x, y); }                                                           \
  MT_DEV double name(double x, double y) { return df(x, y); }
MT_MATH1(m_fabs, fabsf, fabs)
MT_MATH1(m_exp, expf, exp)
MT_MATH1(m_exp2, exp2f, exp2)
MT_MATH1(m_log, logf, log)
MT_MATH1(m_log2, log2f, log2)
MT_MATH1(m_log10, log10f, log10)
MT_MATH1(m_log1p, log1pf, log1p)
MT_MATH1(m_expm1, expm1f, expm1)
MT_MATH1(m_sqrt, sqrtf, sqrt)
MT_MATH1(m_sin, sinf, sin)
MT_MATH1(m_cos, cosf, cos)
MT_MATH1(m_tan, tanf, tan)
MT_MATH1(m_asin, asinf, asin)
MT_MATH1(m_acos, acosf, acos)
MT_MATH1(m_atan, atanf, atan)
MT_MATH1(m_sinh, sinhf, sinh)
MT_MATH1(m_cosh, coshf, cosh)
MT_MATH1(m_tanh, tanhf, tanh)
MT_MATH1(m_erf, erff, erf)
MT_MATH1(m_erfc, erfcf, erfc)
MT_MATH1(m_floor, floorf, floor)
MT_MATH1(m_ceil, ceilf, ceil)
MT_MATH1(m_nearbyint, nearbyintf, nearbyint)
MT_MATH1(m_trunc, truncf, trunc)
MT_MATH1(m_lgamma, lgammaf, lgamma)
MT_MATH2(m_pow, powf, pow)
MT_MATH2(m_fmod, fmodf, fmod)
MT_MATH2(m_atan2, atan2f, atan2)
MT_MATH2(m_hypot, hypotf, hypot)
MT_MATH2(m_fmax, fmaxf, fmax)
MT_MATH2(m_fmin, fminf, fmin)
MT_MATH2(m_copysign, copysignf, copysign)
#undef MT_MATH1
#undef MT_MATH2

MT_DEV bool m_isnan(double x) { return x != x; }
MT_DEV bool m_isinf(double x) { return x == (double)INFINITY || x == -(double)INFINITY; }
MT_DEV bool m_isfinite(double x) { return x == x && !m_isinf(x); }

const double M_PI_ = 3.14159265358979323846;

MT_DEV double gelu_(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }
MT_DEV float gelu_(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }
MT_DEV double gelu_tanh_(double x) { return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))); }
MT_DEV float gelu_tanh_(float x) {
  return 0.5f * x * (1.0f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
}
MT_DEV double sigmoid_(double x) { return 1.0 / (1.0 + exp(-x)); }
MT_DEV float sigmoid_(float x) { return 1.0f / (1.0f + expf(-x)); }
MT_DEV double logit_(double x, double eps) {
  if (eps >= 0) x = x < eps ? eps : (x > 1 - eps ? 1 - eps : x);
  return log(x / (1 - x));
}
MT_DEV float logit_(float x, double eps) {
  if (eps >= 0) {
    float lo = (float)eps, hi = 1.0f - lo;
    x = x < lo ? lo : (x > hi ? hi : x);
  }
  return logf(x / (1.0f - x));
}
MT_DEV double sinc_(double x) { return x == 0 ? 1.0 : sin(M_PI_ * x) / (M_PI_ * x); }
MT_DEV float sinc_(float x) {
  float px = (float)M_PI_ * x;
  return x == 0 ? 1.0f : sinf(px) / px;
}
MT_DEV double softplus_(double x) { return x > 20 ? x : log1p(exp(x)); }
MT_DEV float softplus_(float x) { return x > 20.f ? x : log1pf(expf(x)); }

/* digamma and polygamma in double, as the CPU computes them (Cephes' zeta for the Hurwitz zeta) */
/* x > 0 */
MT_DEV double digamma_pos(double x) {
  double r = 0;
  while (x < 10) {
    r -= 1 / x;
    x += 1;
  }
  double f = 1 / (x * x);
  return r + log(x) - 0.5 / x - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}
MT_DEV double digamma_d(double x) {
  if (x == 0) return copysign((double)INFINITY, -x);
  if (x < 0) {
    if (x == floor(x)) return (double)NAN;
    return digamma_pos(1 - x) - M_PI_ / tan(M_PI_ * x); /* reflection */
  }
  return digamma_pos(x);
}
MT_DEV double hurwitz_zeta(double s, double q) {
  const double b2j[] = {1.0 / 12,
                        -1.0 / 720,
                        1.0 / 30240,
                        -1.0 / 1209600,
                        1.0 / 47900160,
                        -691.0 / 1307674368000.0,
                        1.0 / 74724249600.0,
                        -3617.0 / 10670622842880000.0,
                        43867.0 / 5109094217170944000.0,
                        -174611.0 / 802857662698291200000.0};
  if (s == 1) return (double)INFINITY;
  if (s < 1 || s != s || q != q) return (double)NAN;
  if (q <= 0) {
    if (q == floor(q)) return (double)INFINITY;
    if (s != floor(s)) return (double)NAN;
  }
  double sum = 0, a = q;
  int k = 0;
  while (k < 9 || a <= 9.0) {
    double t = pow(a, -s);
    sum += t;
    if (fabs(t) < fabs(sum) * 1e-17) return sum;
    a += 1, k++;
  }
  double w = a, tail = pow(w, 1 - s) / (s - 1) + 0.5 * pow(w, -s);
  double fac = s, wp = pow(w, -s - 1);
  for (int j = 0; j < 10; j++) {
    double t = b2j[j] * fac * wp;
    tail += t;
    if (fabs(t) < fabs(sum + tail) * 1e-17) break;
    fac *= (s + 2 * j + 1) * (s + 2 * j + 2);
    wp /= w * w;
  }
  return sum + tail;
}
MT_DEV double polygamma_d(double n, double x) {
  if (n == 0) return digamma_d(x);
  double sign = fmod(n, 2.0) == 1 ? 1.0 : -1.0;
  return sign * exp(lgamma(n + 1)) * hurwitz_zeta(n + 1, x);
}
MT_DEV double round_dec(double x, double d) {
  double m = pow(10.0, d);
  return d >= 0 ? nearbyint(x * m) / m : nearbyint(x / pow(10.0, -d)) * pow(10.0, -d);
}
MT_DEV double nan_to_num_d(double x, double pinf, double ninf) {
  return x != x ? 0.0 : (x == (double)INFINITY ? pinf : (x == -(double)INFINITY ? ninf : x));
}
MT_DEV double clamp_d(double x, double lo, double hi) {
  if (x != x) return x;
  if (lo == lo && x < lo) x = lo;
  if (hi == hi && x > hi) x = hi;
  return x;
}
MT_DEV double div_floor_d(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  double fl;
  if (div != 0) {
    fl = floor(div);
    if (div - fl > 0.5) fl += 1;
  } else {
    fl = copysign(0.0, a / b);
  }
  return fl;
}
MT_DEV double remainder_d(double a, double b) {
  double r = fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
/* x < 0, and false for an unsigned type (without a comparison the compilers call pointless) */
template <typename T, bool S = (T)-1 < (T)0> struct sign_of {
  static MT_DEV bool neg(T x) { return x < (T)0; }
};
template <typename T> struct sign_of<T, false> {
  static MT_DEV bool neg(T) { return false; }
};
template <typename T> MT_DEV bool is_neg(T x) { return sign_of<T>::neg(x); }

MT_DEV double maximum_d(double a, double b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
MT_DEV double minimum_d(double a, double b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
MT_DEV double xlogy_d(double a, double b) { return b != b ? b : (a == 0 ? 0 : a * log(b)); }

} // namespace MT_GPU_NS

#endif
