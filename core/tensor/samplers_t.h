/* samplers_t.h -- the per-dtype half of samplers.c, included there once for float and once for double
 * with T (the element type) and SFX (a name suffix) defined. PyTorch computes these in its scalar_t
 * where its code has scalar_t and in double elsewhere; <tgmath.h> (included by samplers.c) picks logf,
 * powf, sqrtf, ... for float arguments as C++'s overloads do, so each operation rounds where
 * PyTorch's rounds. Facts, not code, from PyTorch 1.13's ATen/native/Distributions.h (see samplers.c). */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, SFX)

/* ---------------------------------------------------------------- Gamma(alpha, 1) */
/* Marsaglia and Tsang's squeeze and rejection, alpha < 1 boosted to alpha + 1 with a U^(1/alpha)
 * factor (that uniform drawn first); alpha bumps, 1/3 and 1/alpha in T; the rest in double; the
 * constants 0.0331 and 1/3 are float literals in PyTorch's source, so they carry float's rounding. */
static double F(gamma_one)(T alpha, mt_generator *g) {
  double scale = 1.0;
  if (alpha < 1.0f) {
    if (alpha == 0.f) return 0.0;
    scale *= pow(1 - mt_cpu_draw_uniform(g), (T)1.0f / alpha);
    alpha += (T)1.0f;
  }
  const double d = (double)(alpha - (T)(1.0f / 3.0f));
  const double c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, y;
    do {
      x = mt_cpu_draw_normal(g);
      y = 1.0 + c * x;
    } while (y <= 0);
    const double v = y * y * y;
    const double u = 1 - mt_cpu_draw_uniform(g);
    const double xx = x * x;
    if (u < 1.0 - (double)0.0331f * xx * xx) return scale * d * v;
    if (log(u) < 0.5 * xx + d * (1.0 - v + log(v))) return scale * d * v;
  }
}

/* ---------------------------------------------------------------- digamma (PyTorch's digamma_one) */
/* The argument is T; the sums in double; the result rounded to T. */
static T F(digamma_one)(T x) {
  const double PSI_10 = 2.25175258906672110764;
  if (x == 0) return (T)INFINITY;
  double additional = 0;
  int x_is_integer = x == floor(x);
  if (x < 0) {
    if (x_is_integer) return (T)INFINITY;
    additional = -(T)M_PI / tan((T)M_PI * x);
    x = 1 - x;
  }
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return (T)(result + PSI_10 + additional);
  static const double A[] = {
      8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3, -4.16666666666666666667E-3,
      3.96825396825396825397E-3, -8.33333333333333333333E-3, 8.33333333333333333333E-2,
  };
  double y = 0;
  if (x < 1.0e17f) {
    double z = 1.0 / (x * x);
    double p = 0;
    for (int i = 0; i <= 6; i++) p = p * z + A[i];
    y = z * p;
  }
  return (T)(result + log(x) - (0.5f / x) - y + additional);
}

/* ---------------------------------------------------------------- d sample / d alpha of Gamma(alpha, 1) */
/* -(d/dalpha cdf(x; alpha)) / pdf(x; alpha), in double: a series for small x, Rice's saddle point
 * expansion for large alpha, else a bivariate rational fit (PyTorch's standard_gamma_grad_one). */
static T F(gamma_grad_one)(T alpha_, T x_) {
  double x = x_, alpha = alpha_;
  if (x < (double)0.8f) {
    double numer = 1, denom = alpha;
    double series1 = numer / denom, series2 = numer / (denom * denom);
    for (int i = 1; i <= 5; ++i) {
      numer *= -x / (double)i;
      denom += 1;
      series1 += numer / denom;
      series2 += numer / (denom * denom);
    }
    const double pow_x_alpha = pow(x, alpha);
    const double gamma_pdf = pow(x, alpha - 1) * exp(-x);
    const double gamma_cdf = pow_x_alpha * series1;
    const double gamma_cdf_alpha = (log(x) - digamma_one_d(alpha)) * gamma_cdf - pow_x_alpha * series2;
    const double result = -gamma_cdf_alpha / gamma_pdf;
    return isnan(result) ? (T)0.f : (T)result;
  }
  if (alpha > 8.0f) {
    if ((double)0.9f * alpha <= x && x <= (double)1.1f * alpha) {
      const double numer_1 = 1 + 24 * alpha * (1 + 12 * alpha);
      const double numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x);
      const double denom = 1244160 * (alpha * alpha) * (alpha * alpha);
      return (T)(numer_1 * numer_2 / denom);
    }
    const double denom = sqrt(8 * alpha);
    const double term2 = denom / (alpha - x);
    const double term3 = pow(x - alpha - alpha * log(x / alpha), -1.5);
    const double term23 = (x < alpha) ? term2 - term3 : term2 + term3;
    const double term1 = log(x / alpha) * term23 - sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x));
    const double stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha));
    const double numer = x * term1;
    return (T)(-stirling * numer / denom);
  }
  const double u = log(x / alpha), v = log(alpha);
  double coef_v[8];
  for (int i = 0; i < 8; ++i) coef_v[i] = GAMMA_UV[0][i] + u * (GAMMA_UV[1][i] + u * GAMMA_UV[2][i]);
  const double p = coef_v[0] + v * (coef_v[1] + v * (coef_v[2] + v * coef_v[3]));
  const double q = coef_v[4] + v * (coef_v[5] + v * (coef_v[6] + v * coef_v[7]));
  return (T)exp(p / q);
}

/* ---------------------------------------------------------------- Dirichlet's gradient, through Betas */
/* Beta(alpha, beta) near x = 0: a Taylor series in T */
static T F(beta_grad_alpha_small)(T x, T alpha, T beta) {
  const T factor = F(digamma_one)(alpha) - F(digamma_one)(alpha + beta) - log(x);
  T numer = 1;
  T series = numer / alpha * (factor + 1 / alpha);
  for (int i = 1; i <= 10; ++i) {
    T ci = (T)i;
    numer *= (ci - beta) * x / ci;
    const T denom = alpha + ci;
    series += numer / denom * (factor + 1 / denom);
  }
  const T result = x * pow(1 - x, -beta) * series;
  return isnan(result) ? (T)0.f : result;
}
static T F(beta_grad_beta_small)(T x, T alpha, T beta) {
  const T factor = F(digamma_one)(alpha + beta) - F(digamma_one)(beta);
  T numer = 1, betas = 1, dbetas = 0, series = factor / alpha;
  for (int i = 1; i <= 8; ++i) {
    T ci = (T)i;
    numer *= -x / ci;
    dbetas = dbetas * (beta - ci) + betas;
    betas = betas * (beta - ci);
    series += numer / (alpha + ci) * (dbetas + factor * betas);
  }
  const T result = -pow(1 - x, 1 - beta) * series;
  return isnan(result) ? (T)0.f : result;
}
/* alpha and beta both large: Rice's saddle point expansion, in double */
static T F(beta_grad_alpha_mid)(double x, double alpha, double beta) {
  const double total = alpha + beta;
  const double mean = alpha / total;
  const double std = sqrt(alpha * beta / (total + 1)) / total;
  if (mean - 0.1 * std <= x && x <= mean + 0.1 * std) {
    const double poly = 47 * x * (beta * beta) * (beta * beta) +
                        alpha * ((43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta +
                                 alpha * (3 * (59 + 180 * beta - 90 * x) * (beta * beta) +
                                          alpha * ((453 + 1620 * beta * (1 - x) - 455 * x) * beta +
                                                   alpha * (8 * (1 - x) * (135 * beta - 11)))));
    const double prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total);
    const double prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total);
    return (T)(prefactor_num / (1 - x) * poly / prefactor_den);
  }
  const double prefactor = -x / sqrt(2 * alpha * beta / total);
  const double stirling = (1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) *
                          (1 + 1 / (12 * beta) + 1 / (288 * beta * beta)) /
                          (1 + 1 / (12 * total) + 1 / (288 * total * total));
  const double term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta);
  const double axbx = alpha * (x - 1) + beta * x;
  const double term1_den = sqrt(2 * alpha / beta) * pow(total, 1.5) * axbx * axbx;
  const double term1 = term1_num / term1_den;
  const double term2 = 0.5 * log(alpha / (total * x));
  const double term3_num = sqrt(8 * alpha * beta / total);
  const double term3_den = beta * x + alpha * (x - 1);
  const double term3 = term3_num / term3_den;
  const double term4_base = beta * log(beta / (total * (1 - x))) + alpha * log(alpha / (total * x));
  const double term4 = pow(term4_base, -1.5);
  const double term1234 = term1 + term2 * (term3 + (x < mean ? term4 : -term4));
  return (T)(stirling * prefactor * term1234);
}
/* -(d/dalpha cdf(x; alpha, total - alpha)) / pdf / (1 - x) for x drawn from that Beta */
static T F(dirichlet_grad_one)(T x, T alpha, T total) {
  const double x_ = x, alpha_ = alpha, total_ = total;
  const T beta = total - alpha;
  const double beta_ = total_ - alpha_;
  const T boundary = total * x * (1 - x);
  if (x <= 0.5f && boundary < 2.5f) return F(beta_grad_alpha_small)(x, alpha, beta);
  if (x >= 0.5f && boundary < 0.75f) return -F(beta_grad_beta_small)(1 - x, beta, alpha);
  if (alpha > 6 && beta > 6) return F(beta_grad_alpha_mid)(x_, alpha_, beta_);
  const double u = log(x_);
  const double a = log(alpha_) - u;
  const double b = log(total_) - a;
  const double pow_u[3] = {1, u, u * u};
  const double pow_a[3] = {1, a, a * a};
  double p = 0.0, q = 0.0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const double ua = pow_u[i] * pow_a[j];
      const double *c0 = DIRICHLET_C[0][i][j], *c1 = DIRICHLET_C[1][i][j];
      p += ua * (c0[0] + b * (c0[1] + b * (c0[2] + b * c0[3])));
      q += ua * (c1[0] + b * (c1[1] + b * (c1[2] + b * c1[3])));
    }
  }
  const double approx = x_ * (F(digamma_one)((T)total_) - F(digamma_one)((T)alpha_)) / beta_;
  return (T)(p / q * approx);
}

/* ---------------------------------------------------------------- Binomial(count, prob) */
/* Hormann's BTRS (transformed rejection with a squeeze) for count * prob >= 10, else inversion by
 * geometric waiting times; prob > 1/2 by symmetry (count minus a draw at 1 - prob). */
static T F(btrs)(T count, T prob, mt_generator *g) {
  T k;
  double U, V, us;
  const double stddev = sqrt(count * prob * (1 - prob));
  const double b = 1.15 + 2.53 * stddev;
  const double a = -0.0873 + 0.0248 * b + 0.01 * prob;
  const double c = count * prob + 0.5;
  const double v_r = 0.92 - 4.2 / b;
  const double r = prob / (1 - prob);
  const double alpha = (2.83 + 5.1 / b) * stddev;
  const double m = floor((count + 1) * prob);
  for (;;) {
    U = mt_cpu_draw_uniform(g) - 0.5;
    V = mt_cpu_draw_uniform(g);
    us = 0.5 - fabs(U);
    k = (T)floor((2 * a / us + b) * U + c);
    if (k < 0 || k > count) continue;
    if (us >= 0.07 && V <= v_r) return k;
    V = log(V * alpha / (a / (us * us) + b));
    double upperbound = ((m + 0.5) * log((m + 1) / (r * (count - m + 1))) +
                         (count + 1) * log((count - m + 1) / (count - k + 1)) +
                         (k + 0.5) * log(r * (count - k + 1) / (k + 1)) + stirling_tail(m) + stirling_tail(count - m) -
                         stirling_tail(k) - stirling_tail(count - k));
    if (V <= upperbound) return k;
  }
}
static T F(binomial_inversion)(T count, T prob, mt_generator *g) {
  double geom_sum = 0;
  T num_geom = 0;
  const double logprob = log1p(-prob);
  for (;;) {
    double U = mt_cpu_draw_uniform(g);
    double geom = ceil(log(U) / logprob);
    geom_sum += geom;
    if (geom_sum > count) break;
    num_geom = num_geom + 1;
  }
  return num_geom;
}
static T F(binomial_one)(T count, T prob, mt_generator *g) {
  if (count <= 0.0 || prob <= 0.0) return 0;
  if (prob >= 1.0) return count;
  if (prob <= 0.5) {
    if (count * prob >= 10.0) return F(btrs)(count, prob, g);
    return F(binomial_inversion)(count, prob, g);
  }
  if (prob > 0.5) {
    T qprob = (T)(1.0 - prob);
    if (count * qprob >= 10.0) return count - F(btrs)(count, qprob, g);
    return count - F(binomial_inversion)(count, qprob, g);
  }
  return (T)NAN;
}

/* ---------------------------------------------------------------- the kernels' loops */
static void F(gamma_fill)(T *out, const T *alpha, int64_t n, mt_generator *g) {
  const T tiny = sizeof(T) == 4 ? (T)FLT_MIN : (T)DBL_MIN;
  for (int64_t i = 0; i < n; i++) {
    T s = (T)F(gamma_one)(alpha[i], g);
    out[i] = tiny < s ? s : tiny; /* std::max(tiny, s): NaN gives tiny */
  }
}
static void F(binomial_fill)(T *out, const T *count, const T *prob, int64_t n, mt_generator *g) {
  for (int64_t i = 0; i < n; i++) out[i] = F(binomial_one)(count[i], prob[i], g);
}
static void F(gamma_grad_fill)(T *out, const T *alpha, const T *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = F(gamma_grad_one)(alpha[i], x[i]);
}
static void F(dirichlet_grad_fill)(T *out, const T *x, const T *alpha, const T *total, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = F(dirichlet_grad_one)(x[i], alpha[i], total[i]);
}
/* gammas in double (alpha read as double), each row normalised by its sum, clamped into [tiny, 1) of T */
static void F(dirichlet_fill)(T *out, const T *alpha, double *gam, int64_t rows, int64_t k, mt_generator *g) {
  const T tiny = sizeof(T) == 4 ? (T)FLT_MIN : (T)DBL_MIN;
  const T below_one = nextafter((T)1.0f, (T)0.0f);
  for (int64_t i = 0; i < rows * k; i++) {
    double s = gamma_one_d((double)alpha[i], g);
    gam[i] = DBL_MIN < s ? s : DBL_MIN;
  }
  for (int64_t r = 0; r < rows; r++) {
    double sum = 0;
    for (int64_t j = 0; j < k; j++) sum += gam[r * k + j];
    for (int64_t j = 0; j < k; j++) {
      T v = (T)(gam[r * k + j] / sum);
      v = tiny < v ? v : tiny;
      out[r * k + j] = v < below_one ? v : below_one;
    }
  }
}

#undef F
#undef CAT
#undef CAT_
