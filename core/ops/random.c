/* random.c -- the front doors of the random fills, randperm and multinomial: argument checks in
 * PyTorch's words, the generator (the caller's, of the tensor's device, or that device's default:
 * mt_generator_for in generator.c), then the device's kernels, which draw from it
 * (core/tensor/random.c says how each one matches PyTorch's CPU generator). */
#include "dispatch.h"

static mt_status need_float(const mt_tensor *t, const char *op, const char *kernel) {
  if (!mt_is_float(t->_dtype))
    return mt_error(MT_EDTYPE, "%s: \"%s\" not implemented for '%s'", op, kernel, mt_type_title(t->_dtype));
  return MT_OK;
}

static inline float round_to(int dt, float v) {
  if (dt == MT_FLOAT16) return mt_h2f(mt_f2h(v));
  if (dt == MT_BFLOAT16) return mt_b2f(mt_f2b(v));
  return v;
}

mt_status mt_uniform_(mt_tensor *t, double from, double to, mt_generator *g) {
  MT_TRY(mt_check_tensor(t, "uniform_", "self"));
  MT_TRY(mt_check_kernel(MT_OP_UNIFORM_, t));
  MT_TRY(need_float(t, "uniform_", "check_uniform_bounds"));
  MT_TRY(mt_generator_for(t, g, "uniform_", &g));
  if (!(from <= to))
    return mt_error(MT_EINVAL, "uniform_: uniform_ expects to return a [from, to) range, but found from=%g > to=%g",
                    from, to);
  float fa = round_to(t->_dtype, (float)from), fb = round_to(t->_dtype, (float)to);
  if (!isfinite(to - from) || (t->_dtype != MT_FLOAT64 && !isfinite(fb - fa)))
    return mt_error(MT_EINVAL, "uniform_: uniform_ expects to-from <= std::numeric_limits<%s>::max(), but found "
                    "to=%g and from=%g which result in to-from to exceed the limit",
                    mt_type_title(t->_dtype), to, from);
  mt_bump_version(t);
  return mt_kernels_of(t)->uniform(t, from, to, g);
}

mt_status mt_normal_(mt_tensor *t, double mean, double std, mt_generator *g) {
  MT_TRY(mt_check_tensor(t, "normal_", "self"));
  MT_TRY(mt_check_kernel(MT_OP_NORMAL_, t));
  MT_TRY(need_float(t, "normal_", "normal_kernel_cpu"));
  MT_TRY(mt_generator_for(t, g, "normal_", &g));
  if (!(std >= 0.0)) return mt_error(MT_EINVAL, "normal_: normal expects std >= 0.0, but found std %g", std);
  mt_bump_version(t);
  return mt_kernels_of(t)->normal(t, mean, std, g);
}

/* The largest value of the type that random_ may produce, as PyTorch bounds `to - 1`. */
static int64_t type_max(int dt) {
  switch (dt) {
    case MT_UINT8: return 255;
    case MT_INT8: return 127;
    case MT_INT16: return 32767;
    case MT_INT32: return 2147483647;
    case MT_BOOL: return 1;
    case MT_FLOAT16: return 1 << 11;
    case MT_BFLOAT16: return 1 << 8;
    case MT_FLOAT32: return 1 << 24;
    case MT_FLOAT64: return 1LL << 53;
  }
  return INT64_MAX;
}
static int64_t type_min(int dt) {
  switch (dt) {
    case MT_UINT8: case MT_BOOL: return 0;
    case MT_INT8: return -128;
    case MT_INT16: return -32768;
    case MT_INT32: return -2147483647 - 1;
    case MT_INT64: return INT64_MIN;
  }
  return -type_max(dt);
}
static const char *c_type_name(int dt) {
  switch (dt) {
    case MT_UINT8: return "unsigned char";
    case MT_INT8: return "signed char";
    case MT_INT16: return "short";
    case MT_INT32: return "int";
    case MT_INT64: return "long";
    case MT_FLOAT16: return "c10::Half";
    case MT_FLOAT32: return "float";
    case MT_FLOAT64: return "double";
    case MT_BOOL: return "bool";
    case MT_BFLOAT16: return "c10::BFloat16";
  }
  return "?";
}

/* `to == INT64_MIN` stands for 2^63 (the end of int64's range, which int64_t cannot hold):
 * random_() on an int64 tensor is random_(0, 2^63). */
mt_status mt_random_(mt_tensor *t, int64_t from, int64_t to, mt_generator *g) {
  MT_TRY(mt_check_tensor(t, "random_", "self"));
  MT_TRY(mt_check_kernel(MT_OP_RANDOM_, t));
  MT_TRY(mt_generator_for(t, g, "random_", &g));
  int dt = t->_dtype;
  bool to_end = to == INT64_MIN;
  if (!to_end && from >= to)
    return mt_error(MT_EINVAL, "random_: random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                    (long long)from, (long long)to);
  if (from < type_min(dt) || from > type_max(dt))
    return mt_error(MT_EINVAL, "random_: from is out of bounds for %s", c_type_name(dt));
  if (!to_end && (to - 1 < type_min(dt) || to - 1 > type_max(dt)))
    return mt_error(MT_EINVAL, "random_: to - 1 is out of bounds for %s", c_type_name(dt));
  mt_bump_version(t);
  return mt_kernels_of(t)->random(t, from, to, g);
}

mt_status mt_bernoulli_(mt_tensor *t, double p, mt_generator *g) {
  MT_TRY(mt_check_tensor(t, "bernoulli_", "self"));
  MT_TRY(mt_check_kernel(MT_OP_BERNOULLI_, t));
  MT_TRY(mt_generator_for(t, g, "bernoulli_", &g));
  if (!(p >= 0 && p <= 1))
    return mt_error(MT_EINVAL, "bernoulli_: bernoulli_ expects p to be in [0, 1], but got p=%g", p);
  mt_bump_version(t);
  return mt_kernels_of(t)->bernoulli(t, p, g);
}

mt_status mt_bernoulli_tensor_(mt_tensor *t, mt_tensor *p, mt_generator *g) {
  MT_TRY(mt_check_tensor(t, "bernoulli_", "self"));
  MT_TRY(mt_check_tensor(p, "bernoulli_", "p"));
  MT_TRY(mt_check_same_device("bernoulli_", t, p));
  MT_TRY(mt_check_kernel(MT_OP_BERNOULLI, t));
  MT_TRY(mt_generator_for(t, g, "bernoulli_", &g));
  if (!mt_is_float(p->_dtype))
    return mt_error(MT_EDTYPE, "bernoulli_: \"bernoulli_tensor_cpu_p_\" not implemented for '%s'", mt_type_title(p->_dtype));
  /* p must broadcast to t's shape */
  bool ok = p->_ndim <= t->_ndim;
  for (int i = 0; ok && i < p->_ndim; i++) {
    int64_t ps = p->_sizes[p->_ndim - 1 - i], ts = t->_sizes[t->_ndim - 1 - i];
    ok = ps == ts || ps == 1;
  }
  if (!ok)
    return mt_error(MT_ESHAPE, "bernoulli_: p of size %s cannot be broadcast to self of size %s", MT_SHAPE(p),
                    MT_SHAPE(t));
  /* p expanded to t's shape, as a view; a copy when it shares t's memory */
  mt_tensor *pe = NULL, *pc = NULL;
  MT_TRY(mt_expand(p, t->_sizes, t->_ndim, &pe));
  if (mt_may_overlap(t, pe)) {
    mt_status s = mt_clone(pe, &pc);
    mt_tensor_release(pe);
    if (s != MT_OK) return s;
    pe = pc;
  }
  mt_status s = mt_kernels_of(t)->bernoulli_tensor(t, pe, g);
  if (s == MT_OK) mt_bump_version(t);
  mt_tensor_release(pe);
  return s;
}

mt_status mt_exponential_(mt_tensor *t, double lambd, mt_generator *g) {
  MT_TRY(mt_check_tensor(t, "exponential_", "self"));
  MT_TRY(mt_check_kernel(MT_OP_EXPONENTIAL_, t));
  MT_TRY(need_float(t, "exponential_", "exponential_cpu"));
  MT_TRY(mt_generator_for(t, g, "exponential_", &g));
  if (!(lambd >= 0.0))
    return mt_error(MT_EINVAL, "exponential_: exponential_ expects lambda >= 0.0, but found lambda=%g", lambd);
  mt_bump_version(t);
  return mt_kernels_of(t)->exponential(t, lambd, g);
}

mt_status mt_randperm(int64_t n, int dtype, int64_t index_base, mt_generator *g, const mt_device *device,
                      mt_tensor **result) {
  if (!result) return mt_error(MT_EINVAL, "randperm: result is NULL");
  mt_device dev = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "randperm", &dev));
  if (n < 0) return mt_error(MT_EINVAL, "randperm: Trying to create tensor with negative dimension %lld: [%lld]",
                             (long long)n, (long long)n);
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "randperm: invalid dtype %d", dtype);
  if (dtype == MT_BOOL && n > 0) return mt_error(MT_EDTYPE, "randperm: \"randperm\" not implemented for 'Bool'");
  if (n > 0) {
    int64_t hi = n - 1 + index_base, lo = index_base;
    int64_t mx = type_max(dtype);
    if (mt_is_float(dtype)) {
      if (n > mx + 1) /* PyTorch: n may be at most 2^digits + 1 for a floating type */
        return mt_error(MT_EINVAL, "randperm: n cannot be greater than 2^%d+1 for %s type.",
                        dtype == MT_FLOAT64 ? 53 : dtype == MT_FLOAT32 ? 24 : dtype == MT_FLOAT16 ? 11 : 8,
                        mt_type_title(dtype));
    } else if (hi > mx || lo < type_min(dtype)) {
      return mt_error(MT_EINVAL, "randperm: value cannot be converted to type %s without overflow",
                      dtype == MT_UINT8 ? "uint8_t" : dtype == MT_INT8 ? "int8_t" : dtype == MT_INT16 ? "int16_t"
                                                                                 : "int32_t");
    }
  }
  mt_tensor *r;
  MT_TRY(mt_new(dev, &n, 1, dtype, "randperm", &r));
  mt_status s = mt_generator_for(r, g, "randperm", &g);
  if (!s) s = mt_kernels_of(r)->randperm(r, index_base, g);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

mt_status mt_multinomial(mt_tensor *probs, int64_t num_samples, int replacement, int64_t index_base,
                         mt_generator *g, mt_tensor **result) {
  MT_TRY(mt_check_tensor(probs, "multinomial", "input"));
  MT_TRY(mt_check_kernel(MT_OP_MULTINOMIAL, probs));
  MT_TRY(mt_generator_for(probs, g, "multinomial", &g));
  if (!result) return mt_error(MT_EINVAL, "multinomial: result is NULL");
  if (probs->_ndim < 1 || probs->_ndim > 2) return mt_error(MT_ESHAPE, "multinomial: prob_dist must be 1 or 2 dim");
  int dt = probs->_dtype;
  if (!mt_is_float(dt))
    return mt_error(MT_EDTYPE, "multinomial: multinomial only supports floating-point dtypes for input, got: %s",
                    mt_type_title(dt));
  if (num_samples <= 0) return mt_error(MT_EINVAL, "multinomial: cannot sample n_sample <= 0 samples");
  int64_t ncat = probs->_sizes[probs->_ndim - 1];
  if (!replacement && num_samples > ncat)
    return mt_error(MT_EINVAL, "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  if (ncat > (1 << 24)) return mt_error(MT_EINVAL, "multinomial: number of categories cannot exceed 2^24");
  int64_t rs[2] = {probs->_ndim == 2 ? probs->_sizes[0] : 1, num_samples};
  mt_tensor *r;
  if (probs->_ndim == 1) MT_TRY(mt_new(mt_device_of(probs), &num_samples, 1, MT_INT64, "multinomial", &r));
  else MT_TRY(mt_new(mt_device_of(probs), rs, 2, MT_INT64, "multinomial", &r));
  mt_status s = mt_kernels_of(probs)->multinomial(r, probs, replacement, index_base, g);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}
