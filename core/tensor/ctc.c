/* ctc.c -- the CPU's CTC kernels (issue 12, the modules part): for each sample n, the forward
 * variables alpha over the extended target l' = (blank, l1, blank, l2, ..., blank) in log space,
 *   alpha_0(0) = lp_0(blank), alpha_0(1) = lp_0(l1),
 *   alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) when l'_s is not
 *                blank and differs from l'_{s-2}) + lp_t(l'_s),
 * the loss -logsumexp(alpha_{T-1}(L-1), alpha_{T-1}(L-2)); the backward variables beta the same
 * way from the end, and the gradient with respect to log_probs
 *   d loss / d lp_t(c) = -sum over s with l'_s = c of exp(alpha_t(s) + beta_t(s) - lp_t(c) + loss)
 * (alpha and beta both hold lp_t). Samples run in parallel, in double. A sample whose input is too
 * short for its target has loss inf (0 with zero_infinity) and gradient 0. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

static inline double lse2(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double m = a > b ? a : b;
  return m + log(exp(a - m) + exp(b - m));
}

typedef struct ctc_job {
  const char *lp, *g, *nll_in;
  char *out;
  const int64_t *tg, *il, *tl;
  int64_t T, N, C, S, blank, base;
  int dt, zero_inf, backward;
  mt_status s;
} ctc_job;

static double lp_at(const ctc_job *j, int64_t t, int64_t n, int64_t c) {
  int64_t k = (t * j->N + n) * j->C + c;
  return j->dt == MT_FLOAT32 ? (double)((const float *)j->lp)[k] : ((const double *)j->lp)[k];
}

/* the label of extended position s of sample n (0-based class) */
static inline int64_t ext_label(const ctc_job *j, int64_t n, int64_t s) {
  return s % 2 == 0 ? j->blank : j->tg[n * j->S + s / 2] - j->base;
}

/* alpha (Tn x L) of sample n into a; returns the log-likelihood */
static double ctc_alpha(const ctc_job *j, int64_t n, int64_t tn, int64_t L, double *a) {
  for (int64_t s = 0; s < L; s++) a[s] = -INFINITY;
  if (tn == 0) return L == 1 ? 0 : -INFINITY;
  a[0] = lp_at(j, 0, n, j->blank);
  if (L > 1) a[1] = lp_at(j, 0, n, ext_label(j, n, 1));
  for (int64_t t = 1; t < tn; t++) {
    const double *p = a + (t - 1) * L;
    double *q = a + t * L;
    for (int64_t s = 0; s < L; s++) {
      int64_t l = ext_label(j, n, s);
      double v = p[s];
      if (s >= 1) v = lse2(v, p[s - 1]);
      if (s >= 2 && l != j->blank && l != ext_label(j, n, s - 2)) v = lse2(v, p[s - 2]);
      q[s] = v == -INFINITY ? -INFINITY : v + lp_at(j, t, n, l);
    }
  }
  const double *last = a + (tn - 1) * L;
  return L > 1 ? lse2(last[L - 1], last[L - 2]) : last[L - 1];
}

/* beta (Tn x L) of sample n into b */
static void ctc_beta(const ctc_job *j, int64_t n, int64_t tn, int64_t L, double *b) {
  for (int64_t i = 0; i < tn * L; i++) b[i] = -INFINITY;
  if (tn == 0) return;
  double *q = b + (tn - 1) * L;
  q[L - 1] = lp_at(j, tn - 1, n, ext_label(j, n, L - 1));
  if (L > 1) q[L - 2] = lp_at(j, tn - 1, n, ext_label(j, n, L - 2));
  for (int64_t t = tn - 2; t >= 0; t--) {
    const double *p = b + (t + 1) * L;
    double *r = b + t * L;
    for (int64_t s = 0; s < L; s++) {
      int64_t l = ext_label(j, n, s);
      double v = p[s];
      if (s + 1 < L) v = lse2(v, p[s + 1]);
      if (s + 2 < L && l != j->blank && l != ext_label(j, n, s + 2)) v = lse2(v, p[s + 2]);
      r[s] = v == -INFINITY ? -INFINITY : v + lp_at(j, t, n, l);
    }
  }
}

static void ctc_run(void *ctx, int64_t n0, int64_t n1) {
  ctc_job *j = ctx;
  for (int64_t n = n0; n < n1; n++) {
    int64_t tn = j->il[n], L = 2 * j->tl[n] + 1;
    double *a = malloc(sizeof(double) * (size_t)((tn ? tn : 1) * L) * (j->backward ? 2 : 1));
    double *gam = j->backward ? malloc(sizeof(double) * (size_t)j->C) : NULL;
    if (!a || (j->backward && !gam)) {
      free(a);
      free(gam);
      __atomic_store_n(&j->s, MT_ENOMEM, __ATOMIC_RELAXED);
      continue;
    }
    double ll = ctc_alpha(j, n, tn, L, a);
    if (!j->backward) {
      double loss = -ll;
      if (isinf(loss) && j->zero_inf) loss = 0;
      if (j->dt == MT_FLOAT32) ((float *)j->out)[n] = (float)loss;
      else ((double *)j->out)[n] = loss;
    } else {
      /* out: (T, N, C) gradient, zero where t >= tn or the loss is infinite */
      double gn = j->dt == MT_FLOAT32 ? (double)((const float *)j->g)[n] : ((const double *)j->g)[n];
      double *b = a + (tn ? tn : 1) * L;
      bool finite = ll > -INFINITY;
      if (finite) ctc_beta(j, n, tn, L, b);
      for (int64_t t = 0; t < j->T; t++) {
        for (int64_t c = 0; c < j->C; c++) gam[c] = -INFINITY;
        if (finite && t < tn)
          for (int64_t s = 0; s < L; s++) {
            int64_t l = ext_label(j, n, s);
            gam[l] = lse2(gam[l], a[t * L + s] + b[t * L + s]);
          }
        for (int64_t c = 0; c < j->C; c++) {
          double v = 0;
          if (gam[c] > -INFINITY) v = -gn * exp(gam[c] - lp_at(j, t, n, c) - ll);
          int64_t k = (t * j->N + n) * j->C + c;
          if (j->dt == MT_FLOAT32) ((float *)j->out)[k] = (float)v;
          else ((double *)j->out)[k] = v;
        }
      }
    }
    free(a);
    free(gam);
  }
}

static mt_status ctc_go(ctc_job *j) {
  if (j->N > 1) mt_parallel_for(j->N, 1, ctc_run, j);
  else if (j->N == 1) ctc_run(j, 0, 1);
  if (j->s) return mt_error(j->s, "ctc_loss: out of memory for the forward and backward variables");
  return MT_OK;
}

mt_status mt_cpu_ctc_loss(mt_tensor *out, const mt_tensor *log_probs, const mt_tensor *targets,
                          const mt_tensor *input_lengths, const mt_tensor *target_lengths, int64_t blank,
                          int zero_infinity, int64_t base) {
  ctc_job j = {.lp = log_probs->_data, .out = out->_data, .tg = (const int64_t *)targets->_data,
               .il = (const int64_t *)input_lengths->_data, .tl = (const int64_t *)target_lengths->_data,
               .T = log_probs->_sizes[0], .N = log_probs->_sizes[1], .C = log_probs->_sizes[2],
               .S = targets->_sizes[1], .blank = blank, .base = base, .dt = log_probs->_dtype,
               .zero_inf = zero_infinity};
  return ctc_go(&j);
}

mt_status mt_cpu_ctc_loss_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *log_probs,
                                   const mt_tensor *targets, const mt_tensor *input_lengths,
                                   const mt_tensor *target_lengths, int64_t blank, int64_t base) {
  ctc_job j = {.lp = log_probs->_data, .g = g->_data, .out = gin->_data, .tg = (const int64_t *)targets->_data,
               .il = (const int64_t *)input_lengths->_data, .tl = (const int64_t *)target_lengths->_data,
               .T = log_probs->_sizes[0], .N = log_probs->_sizes[1], .C = log_probs->_sizes[2],
               .S = targets->_sizes[1], .blank = blank, .base = base, .dt = log_probs->_dtype, .backward = 1};
  return ctc_go(&j);
}
