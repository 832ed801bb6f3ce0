/* samplers.c -- the front doors of torch.distributions' samplers and their gradients:
 * _standard_gamma, _sample_dirichlet, poisson, binomial, _standard_gamma_grad, _dirichlet_grad.
 * Checks in PyTorch's words (float32 and float64 only, as its CPU kernels), operands broadcast to one
 * shape and made contiguous, the generator of the tensor's device (mt_generator_for), then the
 * kernels (core/tensor/samplers.c says how their draws equal PyTorch's). _standard_gamma and poisson
 * are recorded for autograd (StandardGammaBackward0: the reparameterized gradient; PoissonBackward0:
 * zeros), core/grad/samplers.c. */
#include "dispatch.h"

/* float32 or float64, or PyTorch's "<kernel>" not implemented for '<type>' */
static mt_status need_float(const mt_tensor *t, const char *op, const char *kernel) {
  if (t->_dtype != MT_FLOAT32 && t->_dtype != MT_FLOAT64)
    return mt_error(MT_EDTYPE, "%s: \"%s\" not implemented for '%s'", op, kernel, mt_type_title(t->_dtype));
  return MT_OK;
}

/* the n tensors in[] (checked, of one device, float, of in[0]'s dtype) broadcast together and made
 * contiguous: c[] new references, the shape in sizes/ndim */
static mt_status operands(mt_op id, const char *op, const char *kernel, int n, mt_tensor **in, mt_tensor **c, int64_t *sizes,
                          int *ndim) {
  static const char *names[] = {"input", "other", "third"};
  for (int i = 0; i < n; i++) c[i] = NULL;
  for (int i = 0; i < n; i++) {
    MT_TRY(mt_check_tensor(in[i], op, names[i]));
    MT_TRY(mt_check_same_device(op, in[0], in[i]));
  }
  MT_TRY(mt_check_kernel(id, in[0]));
  MT_TRY(need_float(in[0], op, kernel));
  for (int i = 1; i < n; i++)
    if (in[i]->_dtype != in[0]->_dtype)
      return mt_error(MT_EDTYPE, "%s: Found dtype %s but expected %s", op, mt_type_title(in[i]->_dtype),
                      mt_type_title(in[0]->_dtype));
  *ndim = in[0]->_ndim;
  memcpy(sizes, in[0]->_sizes, sizeof(int64_t) * (size_t)in[0]->_ndim);
  for (int i = 1; i < n; i++) {
    int64_t s[MT_MAX_DIMS];
    int nd;
    if (mt_broadcast_shapes(sizes, *ndim, in[i]->_sizes, in[i]->_ndim, s, &nd) != MT_OK) {
      mt_clear_error();
      for (int j = 1; j <= *ndim && j <= in[i]->_ndim; j++) {
        int64_t a = sizes[*ndim - j], b = in[i]->_sizes[in[i]->_ndim - j];
        if (a != b && a != 1 && b != 1)
          return mt_error(MT_ESHAPE, "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                          "non-singleton dimension %d", op, (long long)a, (long long)b,
                          (*ndim > in[i]->_ndim ? *ndim : in[i]->_ndim) - j);
      }
    }
    memcpy(sizes, s, sizeof(int64_t) * (size_t)nd);
    *ndim = nd;
  }
  mt_status s = MT_OK;
  for (int i = 0; i < n && s == MT_OK; i++) {
    mt_tensor *e = NULL;
    s = mt_expand(in[i], sizes, *ndim, &e);
    if (s == MT_OK) s = mt_contiguous(e, &c[i]);
    mt_tensor_release(e);
  }
  if (s)
    for (int i = 0; i < n; i++) mt_tensor_release(c[i]), c[i] = NULL;
  return s;
}

static void release_all(mt_tensor **c, int n) {
  for (int i = 0; i < n; i++) mt_tensor_release(c[i]);
}

/* the common path: operands, a result of their shape, the kernel through `run` */
typedef mt_status (*run_fn)(const mt_kernels *k, mt_tensor *out, mt_tensor **c, mt_generator *g);

static mt_status sampler(mt_op id, const char *op, const char *kernel, int n, mt_tensor **in, mt_generator *g, bool draws,
                         run_fn run, mt_tensor **result) {
  if (!result) return mt_error(MT_EINVAL, "%s: result is NULL", op);
  mt_tensor *c[3];
  int64_t sizes[MT_MAX_DIMS];
  int ndim = 0;
  MT_TRY(operands(id, op, kernel, n, in, c, sizes, &ndim));
  mt_tensor *r = NULL;
  mt_status s = draws ? mt_generator_for(c[0], g, op, &g) : MT_OK;
  if (!s) s = mt_new(mt_device_of(c[0]), sizes, ndim, c[0]->_dtype, op, &r);
  if (!s) s = run(mt_kernels_of(c[0]), r, c, g);
  release_all(c, n);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

static mt_status run_gamma(const mt_kernels *k, mt_tensor *out, mt_tensor **c, mt_generator *g) {
  return k->standard_gamma(out, c[0], g);
}
static mt_status run_dirichlet(const mt_kernels *k, mt_tensor *out, mt_tensor **c, mt_generator *g) {
  return k->sample_dirichlet(out, c[0], g);
}
static mt_status run_poisson(const mt_kernels *k, mt_tensor *out, mt_tensor **c, mt_generator *g) {
  return k->poisson(out, c[0], g);
}
static mt_status run_binomial(const mt_kernels *k, mt_tensor *out, mt_tensor **c, mt_generator *g) {
  return k->binomial(out, c[0], c[1], g);
}
static mt_status run_gamma_grad(const mt_kernels *k, mt_tensor *out, mt_tensor **c, mt_generator *g) {
  (void)g;
  return k->standard_gamma_grad(out, c[0], c[1]);
}
static mt_status run_dirichlet_grad(const mt_kernels *k, mt_tensor *out, mt_tensor **c, mt_generator *g) {
  (void)g;
  return k->dirichlet_grad(out, c[0], c[1], c[2]);
}

mt_status mt_standard_gamma(mt_tensor *alpha, mt_generator *g, mt_tensor **result) {
  if (mt_records(alpha) && mt_autograd.standard_gamma) return mt_autograd.standard_gamma(alpha, g, result);
  return sampler(MT_OP_STANDARD_GAMMA, "_standard_gamma", "gamma_cpu", 1, &alpha, g, true, run_gamma, result);
}

mt_status mt_sample_dirichlet(mt_tensor *alpha, mt_generator *g, mt_tensor **result) {
  return sampler(MT_OP_SAMPLE_DIRICHLET, "_sample_dirichlet", "dirichlet", 1, &alpha, g, true, run_dirichlet, result);
}

mt_status mt_poisson(mt_tensor *rates, mt_generator *g, mt_tensor **result) {
  if (mt_records(rates) && mt_autograd.poisson) return mt_autograd.poisson(rates, g, result);
  return sampler(MT_OP_POISSON, "poisson", "poisson_cpu", 1, &rates, g, true, run_poisson, result);
}

mt_status mt_binomial(mt_tensor *count, mt_tensor *prob, mt_generator *g, mt_tensor **result) {
  mt_tensor *in[2] = {count, prob};
  return sampler(MT_OP_BINOMIAL, "binomial", "binomial_cpu", 2, in, g, true, run_binomial, result);
}

mt_status mt_standard_gamma_grad(mt_tensor *alpha, mt_tensor *x, mt_tensor **result) {
  mt_tensor *in[2] = {alpha, x};
  return sampler(MT_OP_STANDARD_GAMMA_GRAD, "_standard_gamma_grad", "_standard_gamma_grad_cpu", 2, in, NULL, false, run_gamma_grad, result);
}

mt_status mt_dirichlet_grad(mt_tensor *x, mt_tensor *alpha, mt_tensor *total, mt_tensor **result) {
  mt_tensor *in[3] = {x, alpha, total};
  return sampler(MT_OP_DIRICHLET_GRAD, "_dirichlet_grad", "_dirichlet_grad_cpu", 3, in, NULL, false, run_dirichlet_grad, result);
}
