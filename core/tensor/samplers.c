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
 *    its scalar_t is (MT_SAMPLERS_OF says how). */
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

/* The samplers and gradients of one element type T (float or double), their names ending in SFX: PyTorch
 * computes in its scalar_t where its code has scalar_t and in double elsewhere; <tgmath.h> picks logf, powf,
 * sqrtf, ... for float arguments as C++'s overloads do, so each operation rounds where PyTorch's rounds. */
#define MT_SAMPLERS_OF(T, SFX) \
/* ---------------------------------------------------------------- Gamma(alpha, 1) */ \
/* Marsaglia and Tsang's squeeze and rejection, alpha < 1 boosted to alpha + 1 with a U^(1/alpha) \
 * factor (that uniform drawn first); alpha bumps, 1/3 and 1/alpha in T; the rest in double; the \
 * constants 0.0331 and 1/3 are float literals in PyTorch's source, so they carry float's rounding. */ \
static double gamma_one##SFX(T alpha, mt_generator *g) { \
  double scale = 1.0; \
  if (alpha < 1.0f) { \
    if (alpha == 0.f) return 0.0; \
    scale *= pow(1 - mt_cpu_draw_uniform(g), (T)1.0f / alpha); \
    alpha += (T)1.0f; \
  } \
  const double d = (double)(alpha - (T)(1.0f / 3.0f)); \
  const double c = 1.0 / sqrt(9.0 * d); \
  for (;;) { \
    double x, y; \
    do { \
      x = mt_cpu_draw_normal(g); \
      y = 1.0 + c * x; \
    } while (y <= 0); \
    const double v = y * y * y; \
    const double u = 1 - mt_cpu_draw_uniform(g); \
    const double xx = x * x; \
    if (u < 1.0 - (double)0.0331f * xx * xx) return scale * d * v; \
    if (log(u) < 0.5 * xx + d * (1.0 - v + log(v))) return scale * d * v; \
  } \
} \
\
/* ---------------------------------------------------------------- digamma (PyTorch's digamma_one) */ \
/* The argument is T; the sums in double; the result rounded to T. */ \
static T digamma_one##SFX(T x) { \
  const double PSI_10 = 2.25175258906672110764; \
  if (x == 0) return (T)INFINITY; \
  double additional = 0; \
  int x_is_integer = x == floor(x); \
  if (x < 0) { \
    if (x_is_integer) return (T)INFINITY; \
    additional = -(T)M_PI / tan((T)M_PI * x); \
    x = 1 - x; \
  } \
  double result = 0; \
  while (x < 10) { \
    result -= 1 / x; \
    x += 1; \
  } \
  if (x == 10) return (T)(result + PSI_10 + additional); \
  static const double A[] = { \
      8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3, -4.16666666666666666667E-3, \
      3.96825396825396825397E-3, -8.33333333333333333333E-3, 8.33333333333333333333E-2, \
  }; \
  double y = 0; \
  if (x < 1.0e17f) { \
    double z = 1.0 / (x * x); \
    double p = 0; \
    for (int i = 0; i <= 6; i++) p = p * z + A[i]; \
    y = z * p; \
  } \
  return (T)(result + log(x) - (0.5f / x) - y + additional); \
} \
\
/* ---------------------------------------------------------------- d sample / d alpha of Gamma(alpha, 1) */ \
/* -(d/dalpha cdf(x; alpha)) / pdf(x; alpha), in double: a series for small x, Rice's saddle point \
 * expansion for large alpha, else a bivariate rational fit (PyTorch's standard_gamma_grad_one). */ \
static T gamma_grad_one##SFX(T alpha_, T x_) { \
  double x = x_, alpha = alpha_; \
  if (x < (double)0.8f) { \
    double numer = 1, denom = alpha; \
    double series1 = numer / denom, series2 = numer / (denom * denom); \
    for (int i = 1; i <= 5; ++i) { \
      numer *= -x / (double)i; \
      denom += 1; \
      series1 += numer / denom; \
      series2 += numer / (denom * denom); \
    } \
    const double pow_x_alpha = pow(x, alpha); \
    const double gamma_pdf = pow(x, alpha - 1) * exp(-x); \
    const double gamma_cdf = pow_x_alpha * series1; \
    const double gamma_cdf_alpha = (log(x) - digamma_one_d(alpha)) * gamma_cdf - pow_x_alpha * series2; \
    const double result = -gamma_cdf_alpha / gamma_pdf; \
    return isnan(result) ? (T)0.f : (T)result; \
  } \
  if (alpha > 8.0f) { \
    if ((double)0.9f * alpha <= x && x <= (double)1.1f * alpha) { \
      const double numer_1 = 1 + 24 * alpha * (1 + 12 * alpha); \
      const double numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x); \
      const double denom = 1244160 * (alpha * alpha) * (alpha * alpha); \
      return (T)(numer_1 * numer_2 / denom); \
    } \
    const double denom = sqrt(8 * alpha); \
    const double term2 = denom / (alpha - x); \
    const double term3 = pow(x - alpha - alpha * log(x / alpha), -1.5); \
    const double term23 = (x < alpha) ? term2 - term3 : term2 + term3; \
    const double term1 = log(x / alpha) * term23 - sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x)); \
    const double stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha)); \
    const double numer = x * term1; \
    return (T)(-stirling * numer / denom); \
  } \
  const double u = log(x / alpha), v = log(alpha); \
  double coef_v[8]; \
  for (int i = 0; i < 8; ++i) coef_v[i] = GAMMA_UV[0][i] + u * (GAMMA_UV[1][i] + u * GAMMA_UV[2][i]); \
  const double p = coef_v[0] + v * (coef_v[1] + v * (coef_v[2] + v * coef_v[3])); \
  const double q = coef_v[4] + v * (coef_v[5] + v * (coef_v[6] + v * coef_v[7])); \
  return (T)exp(p / q); \
} \
\
/* ---------------------------------------------------------------- Dirichlet's gradient, through Betas */ \
/* Beta(alpha, beta) near x = 0: a Taylor series in T */ \
static T beta_grad_alpha_small##SFX(T x, T alpha, T beta) { \
  const T factor = digamma_one##SFX(alpha) - digamma_one##SFX(alpha + beta) - log(x); \
  T numer = 1; \
  T series = numer / alpha * (factor + 1 / alpha); \
  for (int i = 1; i <= 10; ++i) { \
    T ci = (T)i; \
    numer *= (ci - beta) * x / ci; \
    const T denom = alpha + ci; \
    series += numer / denom * (factor + 1 / denom); \
  } \
  const T result = x * pow(1 - x, -beta) * series; \
  return isnan(result) ? (T)0.f : result; \
} \
static T beta_grad_beta_small##SFX(T x, T alpha, T beta) { \
  const T factor = digamma_one##SFX(alpha + beta) - digamma_one##SFX(beta); \
  T numer = 1, betas = 1, dbetas = 0, series = factor / alpha; \
  for (int i = 1; i <= 8; ++i) { \
    T ci = (T)i; \
    numer *= -x / ci; \
    dbetas = dbetas * (beta - ci) + betas; \
    betas = betas * (beta - ci); \
    series += numer / (alpha + ci) * (dbetas + factor * betas); \
  } \
  const T result = -pow(1 - x, 1 - beta) * series; \
  return isnan(result) ? (T)0.f : result; \
} \
/* alpha and beta both large: Rice's saddle point expansion, in double */ \
static T beta_grad_alpha_mid##SFX(double x, double alpha, double beta) { \
  const double total = alpha + beta; \
  const double mean = alpha / total; \
  const double std = sqrt(alpha * beta / (total + 1)) / total; \
  if (mean - 0.1 * std <= x && x <= mean + 0.1 * std) { \
    const double poly = 47 * x * (beta * beta) * (beta * beta) + \
                        alpha * ((43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + \
                                 alpha * (3 * (59 + 180 * beta - 90 * x) * (beta * beta) + \
                                          alpha * ((453 + 1620 * beta * (1 - x) - 455 * x) * beta + \
                                                   alpha * (8 * (1 - x) * (135 * beta - 11))))); \
    const double prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total); \
    const double prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total); \
    return (T)(prefactor_num / (1 - x) * poly / prefactor_den); \
  } \
  const double prefactor = -x / sqrt(2 * alpha * beta / total); \
  const double stirling = (1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * \
                          (1 + 1 / (12 * beta) + 1 / (288 * beta * beta)) / \
                          (1 + 1 / (12 * total) + 1 / (288 * total * total)); \
  const double term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta); \
  const double axbx = alpha * (x - 1) + beta * x; \
  const double term1_den = sqrt(2 * alpha / beta) * pow(total, 1.5) * axbx * axbx; \
  const double term1 = term1_num / term1_den; \
  const double term2 = 0.5 * log(alpha / (total * x)); \
  const double term3_num = sqrt(8 * alpha * beta / total); \
  const double term3_den = beta * x + alpha * (x - 1); \
  const double term3 = term3_num / term3_den; \
  const double term4_base = beta * log(beta / (total * (1 - x))) + alpha * log(alpha / (total * x)); \
  const double term4 = pow(term4_base, -1.5); \
  const double term1234 = term1 + term2 * (term3 + (x < mean ? term4 : -term4)); \
  return (T)(stirling * prefactor * term1234); \
} \
/* -(d/dalpha cdf(x; alpha, total - alpha)) / pdf / (1 - x) for x drawn from that Beta */ \
static T dirichlet_grad_one##SFX(T x, T alpha, T total) { \
  const double x_ = x, alpha_ = alpha, total_ = total; \
  const T beta = total - alpha; \
  const double beta_ = total_ - alpha_; \
  const T boundary = total * x * (1 - x); \
  if (x <= 0.5f && boundary < 2.5f) return beta_grad_alpha_small##SFX(x, alpha, beta); \
  if (x >= 0.5f && boundary < 0.75f) return -beta_grad_beta_small##SFX(1 - x, beta, alpha); \
  if (alpha > 6 && beta > 6) return beta_grad_alpha_mid##SFX(x_, alpha_, beta_); \
  const double u = log(x_); \
  const double a = log(alpha_) - u; \
  const double b = log(total_) - a; \
  const double pow_u[3] = {1, u, u * u}; \
  const double pow_a[3] = {1, a, a * a}; \
  double p = 0.0, q = 0.0; \
  for (int i = 0; i < 3; ++i) { \
    for (int j = 0; j < 3; ++j) { \
      const double ua = pow_u[i] * pow_a[j]; \
      const double *c0 = DIRICHLET_C[0][i][j], *c1 = DIRICHLET_C[1][i][j]; \
      p += ua * (c0[0] + b * (c0[1] + b * (c0[2] + b * c0[3]))); \
      q += ua * (c1[0] + b * (c1[1] + b * (c1[2] + b * c1[3]))); \
    } \
  } \
  const double approx = x_ * (digamma_one##SFX((T)total_) - digamma_one##SFX((T)alpha_)) / beta_; \
  return (T)(p / q * approx); \
} \
\
/* ---------------------------------------------------------------- Binomial(count, prob) */ \
/* Hormann's BTRS (transformed rejection with a squeeze) for count * prob >= 10, else inversion by \
 * geometric waiting times; prob > 1/2 by symmetry (count minus a draw at 1 - prob). */ \
static T btrs##SFX(T count, T prob, mt_generator *g) { \
  T k; \
  double U, V, us; \
  const double stddev = sqrt(count * prob * (1 - prob)); \
  const double b = 1.15 + 2.53 * stddev; \
  const double a = -0.0873 + 0.0248 * b + 0.01 * prob; \
  const double c = count * prob + 0.5; \
  const double v_r = 0.92 - 4.2 / b; \
  const double r = prob / (1 - prob); \
  const double alpha = (2.83 + 5.1 / b) * stddev; \
  const double m = floor((count + 1) * prob); \
  for (;;) { \
    U = mt_cpu_draw_uniform(g) - 0.5; \
    V = mt_cpu_draw_uniform(g); \
    us = 0.5 - fabs(U); \
    k = (T)floor((2 * a / us + b) * U + c); \
    if (k < 0 || k > count) continue; \
    if (us >= 0.07 && V <= v_r) return k; \
    V = log(V * alpha / (a / (us * us) + b)); \
    double upperbound = ((m + 0.5) * log((m + 1) / (r * (count - m + 1))) + \
                         (count + 1) * log((count - m + 1) / (count - k + 1)) + \
                         (k + 0.5) * log(r * (count - k + 1) / (k + 1)) + stirling_tail(m) + stirling_tail(count - m) - \
                         stirling_tail(k) - stirling_tail(count - k)); \
    if (V <= upperbound) return k; \
  } \
} \
static T binomial_inversion##SFX(T count, T prob, mt_generator *g) { \
  double geom_sum = 0; \
  T num_geom = 0; \
  const double logprob = log1p(-prob); \
  for (;;) { \
    double U = mt_cpu_draw_uniform(g); \
    double geom = ceil(log(U) / logprob); \
    geom_sum += geom; \
    if (geom_sum > count) break; \
    num_geom = num_geom + 1; \
  } \
  return num_geom; \
} \
static T binomial_one##SFX(T count, T prob, mt_generator *g) { \
  if (count <= 0.0 || prob <= 0.0) return 0; \
  if (prob >= 1.0) return count; \
  if (prob <= 0.5) { \
    if (count * prob >= 10.0) return btrs##SFX(count, prob, g); \
    return binomial_inversion##SFX(count, prob, g); \
  } \
  if (prob > 0.5) { \
    T qprob = (T)(1.0 - prob); \
    if (count * qprob >= 10.0) return count - btrs##SFX(count, qprob, g); \
    return count - binomial_inversion##SFX(count, qprob, g); \
  } \
  return (T)NAN; \
} \
\
/* ---------------------------------------------------------------- the kernels' loops */ \
static void gamma_fill##SFX(T *out, const T *alpha, int64_t n, mt_generator *g) { \
  const T tiny = sizeof(T) == 4 ? (T)FLT_MIN : (T)DBL_MIN; \
  for (int64_t i = 0; i < n; i++) { \
    T s = (T)gamma_one##SFX(alpha[i], g); \
    out[i] = tiny < s ? s : tiny; /* std::max(tiny, s): NaN gives tiny */ \
  } \
} \
static void binomial_fill##SFX(T *out, const T *count, const T *prob, int64_t n, mt_generator *g) { \
  for (int64_t i = 0; i < n; i++) out[i] = binomial_one##SFX(count[i], prob[i], g); \
} \
static void gamma_grad_fill##SFX(T *out, const T *alpha, const T *x, int64_t n) { \
  for (int64_t i = 0; i < n; i++) out[i] = gamma_grad_one##SFX(alpha[i], x[i]); \
} \
static void dirichlet_grad_fill##SFX(T *out, const T *x, const T *alpha, const T *total, int64_t n) { \
  for (int64_t i = 0; i < n; i++) out[i] = dirichlet_grad_one##SFX(x[i], alpha[i], total[i]); \
} \
/* gammas in double (alpha read as double), each row normalised by its sum, clamped into [tiny, 1) of T */ \
static void dirichlet_fill##SFX(T *out, const T *alpha, double *gam, int64_t rows, int64_t k, mt_generator *g) { \
  const T tiny = sizeof(T) == 4 ? (T)FLT_MIN : (T)DBL_MIN; \
  const T below_one = nextafter((T)1.0f, (T)0.0f); \
  for (int64_t i = 0; i < rows * k; i++) { \
    double s = gamma_one_d((double)alpha[i], g); \
    gam[i] = DBL_MIN < s ? s : DBL_MIN; \
  } \
  for (int64_t r = 0; r < rows; r++) { \
    double sum = 0; \
    for (int64_t j = 0; j < k; j++) sum += gam[r * k + j]; \
    for (int64_t j = 0; j < k; j++) { \
      T v = (T)(gam[r * k + j] / sum); \
      v = tiny < v ? v : tiny; \
      out[r * k + j] = v < below_one ? v : below_one; \
    } \
  } \
}

/* double first: the float half calls the double Gamma sampler and digamma */
MT_SAMPLERS_OF(double, _d)
MT_SAMPLERS_OF(float, _f)

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
