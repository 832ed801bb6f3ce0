/* samplers.c -- torch.distributions' samplers: torch._standard_gamma, torch._sample_dirichlet,
 * torch.poisson, torch.binomial, and the reparameterized gradients of the Gamma and Dirichlet draws
 * (torch._standard_gamma_grad, torch._dirichlet_grad).
 *
 * The draws equal PyTorch 1.13's CPU draws after the same seed: each sampler runs PyTorch's
 * algorithm, asking the CPU generator (random.c) for the same double uniforms and double normals in the
 * same order, element by element in row-major order of the result (the order PyTorch's
 * TensorIterator visits a fresh contiguous output), under the generator's lock. The facts used
 * (read in PyTorch 1.13's ATen/native/Distributions.h and Distributions.cpp, never copied):
 *
 *  - Gamma(alpha): Marsaglia and Tsang (2000): d = alpha - 1/3, c = 1/sqrt(9 d); draw a normal x
 *    until y = 1 + c x > 0, v = y^3, then a uniform u (taken as 1 - U): accept d v when
 *    u < 1 - 0.0331 x^4 or log u < x^2/2 + d (1 - v + log v). alpha < 1: one uniform first,
 *    scale = (1 - U)^(1/alpha), alpha + 1 sampled, times scale; alpha = 0 gives 0. The result is
 *    at least the type's smallest normal number (a NaN result becomes it too).
 *  - Dirichlet(alpha): a Gamma draw per element in double, each row (the last dimension) divided
 *    by its double sum, rounded to the type and clamped into [smallest normal, 1).
 *  - Poisson(rate), in double: rate >= 10: Hormann's transformed rejection (PTRS, 1993) with two
 *    uniforms a try; 0 < rate < 10: multiply uniforms until the product falls to exp(-rate) or
 *    below; rate 0: 0. A negative (or NaN) rate is an error.
 *  - Binomial(count, prob): count <= 0 or prob <= 0: 0; prob >= 1: count; prob <= 1/2: BTRS when
 *    count prob >= 10 (two uniforms a try, Stirling tail corrections), else the geometric-waiting-time
 *    inversion; prob > 1/2: count minus the draw for 1 - prob; a NaN prob gives NaN.
 *  - the gradients: standard_gamma_grad_one (d x / d alpha by a series for x < 0.8, Rice's saddle
 *    point for alpha > 8, a bivariate rational fit otherwise) and dirichlet_grad_one (Beta Taylor
 *    series near 0 and 1, a saddle point for both parameters > 6, a rational correction otherwise),
 *    with PyTorch's digamma_one; computed in double where PyTorch's accscalar_t is, in the type where
 *    its scalar_t is (samplers_t.h says how). */
#include "cpu.h"
#include "../generator.h"

#include <float.h>
#include <pthread.h>
#include <stdlib.h>
#include <tgmath.h>

/* the tail of Stirling's series for log k!, tabulated for k <= 9 */
static double stirling_tail(double k) {
  static const double tail[] = {0.0810614667953272,  0.0413406959554092,  0.0276779256849983,  0.02079067210376509,
                                0.0166446911898211,  0.0138761288230707,  0.0118967099458917,  0.0104112652619720,
                                0.00925546218271273, 0.00833056343336287};
  if (k <= 9) return tail[(size_t)k];
  double kp1sq = (k + 1) * (k + 1);
  return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/* the coefficients of the rational fit of d x / d alpha (Gamma) in u = log(x / alpha), v = log(alpha) */
static const double GAMMA_UV[3][8] = {
    {0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084},
    {0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623},
    {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07},
};
/* the rational correction of the Beta gradient (numerator [0], denominator [1]) in log x, log(alpha / x),
 * log(total) - log(alpha / x) */
static const double DIRICHLET_C[2][3][3][4] = {
    {{{1.003668233, -0.01061107488, -0.0657888334, 0.01201642863},
      {0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033},
      {-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013}},
     {{0.221950385, -0.3187676331, 0.01799915743, 0.01074823814},
      {-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057},
      {0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05}},
     {{-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565},
      {0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181},
      {0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05}}},
    {{{1, -0.02924021934, -0.04438342661, 0.007285809825},
      {0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521},
      {-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149}},
     {{0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273},
      {0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956},
      {-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05}},
     {{0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05},
      {0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05},
      {-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06}}},
};

/* double first: the float half calls the double Gamma sampler and digamma */
#define T double
#define SFX _d
#include "samplers_t.h"
#undef T
#undef SFX
#define T float
#define SFX _f
#include "samplers_t.h"
#undef T
#undef SFX

/* (int64_t)floor(v) as x86-64 converts it (PyTorch's int64_t cast): out of range or NaN gives INT64_MIN,
 * without the undefined behaviour of C's conversion */
static int64_t to_i64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
  return (int64_t)v;
}

/* Poisson(rate) in double */
static double poisson_one(double lambda, mt_generator *g) {
  if (lambda >= 10) {
    const double slam = sqrt(lambda), loglam = log(lambda);
    const double b = 0.931 + 2.53 * slam;
    const double a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4);
    const double vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
      double U = mt_cpu_draw_uniform(g) - 0.5;
      double V = mt_cpu_draw_uniform(g);
      double us = 0.5 - fabs(U);
      int64_t k = to_i64(floor((2 * a / us + b) * U + lambda + 0.43));
      if (us >= 0.07 && V <= vr) return (double)k;
      if (k < 0 || (us < 0.013 && V > us)) continue;
      if (log(V) + log(invalpha) - log(a / (us * us) + b) <= -lambda + (double)k * loglam - lgamma((double)k + 1))
        return (double)k;
    }
  }
  if (lambda == 0) return 0;
  const double enlam = exp(-lambda);
  int64_t x = 0;
  double prod = 1.0;
  for (;;) {
    prod *= mt_cpu_draw_uniform(g);
    if (prod > enlam) x += 1;
    else return (double)x;
  }
}

/* ---------------------------------------------------------------- the kernels */
#define IS_F32(t) ((t)->_dtype == MT_FLOAT32)

mt_status mt_cpu_standard_gamma(mt_tensor *out, const mt_tensor *alpha, mt_generator *g) {
  if (out->_numel == 0) return MT_OK;
  pthread_mutex_lock(&g->lock);
  if (IS_F32(out)) gamma_fill_f((float *)out->_data, (const float *)alpha->_data, out->_numel, g);
  else gamma_fill_d((double *)out->_data, (const double *)alpha->_data, out->_numel, g);
  pthread_mutex_unlock(&g->lock);
  return MT_OK;
}

mt_status mt_cpu_sample_dirichlet(mt_tensor *out, const mt_tensor *alpha, mt_generator *g) {
  int64_t n = out->_numel;
  if (n == 0) return MT_OK;
  int64_t k = out->_ndim ? out->_sizes[out->_ndim - 1] : 1;
  double *gam = malloc((size_t)n * sizeof(double));
  if (!gam) return mt_error(MT_ENOMEM, "_sample_dirichlet: out of memory");
  pthread_mutex_lock(&g->lock);
  if (IS_F32(out)) dirichlet_fill_f((float *)out->_data, (const float *)alpha->_data, gam, n / k, k, g);
  else dirichlet_fill_d((double *)out->_data, (const double *)alpha->_data, gam, n / k, k, g);
  pthread_mutex_unlock(&g->lock);
  free(gam);
  return MT_OK;
}

mt_status mt_cpu_poisson(mt_tensor *out, const mt_tensor *rates, mt_generator *g) {
  int64_t n = out->_numel;
  bool f32 = IS_F32(out);
  const float *rf = (const float *)rates->_data;
  const double *rd = (const double *)rates->_data;
  /* every rate checked before any draw (PyTorch checks each as it comes to it) */
  for (int64_t i = 0; i < n; i++) {
    double r = f32 ? (double)rf[i] : rd[i];
    if (!(r >= 0)) return mt_error(MT_EINVAL, "poisson: invalid Poisson rate, expected rate to be non-negative");
  }
  if (n == 0) return MT_OK;
  pthread_mutex_lock(&g->lock);
  for (int64_t i = 0; i < n; i++) {
    if (f32) ((float *)out->_data)[i] = (float)poisson_one((double)rf[i], g);
    else ((double *)out->_data)[i] = poisson_one(rd[i], g);
  }
  pthread_mutex_unlock(&g->lock);
  return MT_OK;
}

mt_status mt_cpu_binomial(mt_tensor *out, const mt_tensor *count, const mt_tensor *prob, mt_generator *g) {
  if (out->_numel == 0) return MT_OK;
  pthread_mutex_lock(&g->lock);
  if (IS_F32(out))
    binomial_fill_f((float *)out->_data, (const float *)count->_data, (const float *)prob->_data, out->_numel, g);
  else
    binomial_fill_d((double *)out->_data, (const double *)count->_data, (const double *)prob->_data, out->_numel, g);
  pthread_mutex_unlock(&g->lock);
  return MT_OK;
}

mt_status mt_cpu_standard_gamma_grad(mt_tensor *out, const mt_tensor *alpha, const mt_tensor *x) {
  if (IS_F32(out)) gamma_grad_fill_f((float *)out->_data, (const float *)alpha->_data, (const float *)x->_data, out->_numel);
  else gamma_grad_fill_d((double *)out->_data, (const double *)alpha->_data, (const double *)x->_data, out->_numel);
  return MT_OK;
}

mt_status mt_cpu_dirichlet_grad(mt_tensor *out, const mt_tensor *x, const mt_tensor *alpha, const mt_tensor *total) {
  if (IS_F32(out))
    dirichlet_grad_fill_f((float *)out->_data, (const float *)x->_data, (const float *)alpha->_data,
                          (const float *)total->_data, out->_numel);
  else
    dirichlet_grad_fill_d((double *)out->_data, (const double *)x->_data, (const double *)alpha->_data,
                          (const double *)total->_data, out->_numel);
  return MT_OK;
}
