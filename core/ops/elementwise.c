/* elementwise.c -- the front doors of the unary, binary, scalar and ternary elementwise ops:
 * PyTorch's type promotion, broadcasting, out= and in-place results, then the elementwise
 * kernels of the inputs' device. float16/bfloat16 compute in float32 (converted on the way in and
 * out). */
#include "layout.h" /* parity: results laid out as PyTorch lays them out */
#include "dispatch.h"

/* ---------------------------------------------------------------- dtype rules */
/* An op's kind in the op list says what dtype its result has (core/optable.h): UNARY_FLOAT ops turn
 * integers into the default float dtype, UNARY_KEEP ops keep them, UNARY_TEST and UNARY_LOGICAL
 * ops give bool, ... */
/* ---------------------------------------------------------------- type promotion */
#define UNDEF (-1)
static int promote_u(int a, int b) { return a == UNDEF ? b : (b == UNDEF ? a : mt_promote_types(a, b)); }
static int combine(int higher, int lower) {
  if (higher != UNDEF && mt_is_float(higher)) return higher;
  if (higher == MT_BOOL || (lower != UNDEF && mt_is_float(lower))) return promote_u(higher, lower);
  return higher != UNDEF ? higher : lower;
}
static void add_operand(const mt_tensor *t, int *dim, int *zero, int *wrapped) {
  if (t->_flags & MT_TENSOR_WRAPPED_NUMBER) {
    int d = t->_dtype;
    if (mt_is_float(d)) d = mt_get_default_dtype();
    else if (d != MT_BOOL) d = MT_INT64;
    *wrapped = promote_u(*wrapped, d);
  } else if (t->_ndim == 0) {
    *zero = promote_u(*zero, t->_dtype);
  } else {
    *dim = promote_u(*dim, t->_dtype);
  }
}
static int scalar_kind_dtype(int kind) {
  return kind == 0 ? MT_BOOL : (kind == 1 ? MT_INT64 : mt_get_default_dtype());
}
int mt_result_type(const mt_tensor *a, const mt_tensor *b, int scalar_kind) {
  int dim = UNDEF, zero = UNDEF, wrapped = UNDEF;
  if (a) add_operand(a, &dim, &zero, &wrapped);
  if (b) add_operand(b, &dim, &zero, &wrapped);
  else if (scalar_kind >= 0) wrapped = promote_u(wrapped, scalar_kind_dtype(scalar_kind));
  return combine(dim, combine(zero, wrapped));
}

/* PyTorch's canCast for out= and in-place results: no floating -> integral, nothing -> bool
 * (but bool itself); narrowing within a category is allowed. */
static bool can_cast(int from, int to) {
  if (mt_is_float(from) && !mt_is_float(to)) return false;
  if (from != MT_BOOL && to == MT_BOOL) return false;
  return true;
}
static mt_status check_cast(int from, const mt_tensor *out, const char *op) {
  if (out && !can_cast(from, out->_dtype))
    return mt_error(MT_EDTYPE, "%s: result type %s can't be cast to the desired output type %s", op,
                    mt_type_title(from), mt_type_title(out->_dtype));
  return MT_OK;
}

/* Write `res` (compute dtype) into `out` or hand it back as the result. */
static mt_status finish(mt_tensor *res, mt_tensor *out, mt_tensor **result, const char *op, int out_dtype) {
  if (res->_dtype != out_dtype) {
    mt_tensor *conv;
    mt_status s = mt_new_preserving(res, out_dtype, op, &conv);
    if (s == MT_OK && (s = mt_kernels_of(res)->copy(conv, res))) mt_tensor_release(conv);
    mt_tensor_release(res);
    if (s) return s;
    res = conv;
  }
  if (out) {
    mt_status s = mt_prepare_out(out, res->_sizes, res->_ndim, out_dtype, op);
    if (s == MT_OK) s = mt_copy_(out, res);
    mt_tensor_release(res);
    if (s == MT_OK && result) *result = mt_tensor_retain(out);
    return s;
  }
  return mt_give(res, result);
}

/* ---------------------------------------------------------------- the general drivers */
static mt_status unary_impl(mt_op op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result) {
  if (!mt_op_is_unary(op)) return mt_error(MT_EINVAL, "unary: %d is no unary op", op);
  const char *name = MT_OP_NAME(op);
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_kernel(op, a));
  if (out) MT_TRY(mt_check_same_device(name, a, out));
  mt_op_kind kind = mt_op_kind_of(op);
  int in = a->_dtype;
  int rdt; /* result dtype */
  int cdt; /* compute dtype: the kernel's input */
  if (op == MT_OP_NEG && in == MT_BOOL)
    return mt_error(MT_EDTYPE, "neg: negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.");
  if (op == MT_OP_POW_SCALAR && !mt_is_float(in) && p1 != floor(p1)) kind = MT_KIND_UNARY_FLOAT;
  if (kind == MT_KIND_UNARY_BITS) {
    if (mt_is_float(in)) return mt_error(MT_EDTYPE, "bitwise_not: not implemented for '%s'", mt_dtype_name(in));
    rdt = cdt = in;
  } else if (kind == MT_KIND_UNARY_TEST || kind == MT_KIND_UNARY_LOGICAL) {
    rdt = MT_BOOL;
    if (mt_is_float(in)) {
      cdt = in == MT_FLOAT64 ? MT_FLOAT64 : MT_FLOAT32;
    } else if (kind == MT_KIND_UNARY_LOGICAL) {
      cdt = in;
    } else { /* integers are never nan/inf */
      mt_tensor *r;
      MT_TRY(mt_out_or_new(out, mt_device_of(a), a->_sizes, a->_ndim, MT_BOOL, name, &r));
      mt_status s = mt_fill_(r, op == MT_OP_ISFINITE);
      if (s) { mt_tensor_release(r); return s; }
      return mt_give(r, result);
    }
  } else if (kind == MT_KIND_UNARY_KEEP && !mt_is_float(in)) {
    rdt = cdt = in; /* bool: abs/relu/sign/floor/... are identities */
  } else {
    rdt = mt_is_float(in) ? in : mt_get_default_dtype();
    cdt = rdt == MT_FLOAT64 ? MT_FLOAT64 : MT_FLOAT32;
  }
  if (out) MT_TRY(mt_check_tensor(out, name, "out"));
  MT_TRY(check_cast(rdt, out, name));
  int res_dt = rdt == MT_BOOL ? MT_BOOL : cdt; /* what the kernel writes */
  mt_tensor *x, *res;
  MT_TRY(mt_as_dtype(a, cdt, &x));
  mt_status s;
  /* the result buffer: straight into out when dtypes match and it does not overlap in a bad way */
  bool direct = out && out->_dtype == res_dt && out->_dtype == rdt;
  if (direct) {
    s = mt_prepare_out(out, a->_sizes, a->_ndim, rdt, name);
    if (s) { mt_tensor_release(x); return s; }
    if (out != x && mt_may_overlap(out, x)) direct = false; /* partial overlap: compute into a temporary */
  }
  if (direct) {
    res = mt_tensor_retain(out);
  } else if ((s = mt_new_laid_out(mt_device_of(a), a->_sizes, a->_ndim, res_dt, name, (const mt_tensor *[]){a}, 1,
                                  &res))) {
    mt_tensor_release(x);
    return s;
  }
  s = mt_kernels_of(x)->unary(op, res, x, p1, p2);
  mt_tensor_release(x);
  if (s) { mt_tensor_release(res); return s; }
  if (direct) {
    mt_bump_version(out);
    mt_tensor_release(res);
    if (result) *result = mt_tensor_retain(out);
    return MT_OK;
  }
  return finish(res, out, result, name, out ? out->_dtype : rdt);
}

/* The core binary driver: a and b already tensors (b may be a wrapped number on the stack). */
static mt_status binary_impl(mt_op op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  const char *name = MT_OP_NAME(op);
  int common = mt_result_type(a, b, -1);
  mt_op_kind kind = mt_op_kind_of(op);
  int rdt, cdt;
  if (kind == MT_KIND_BINARY_FLOAT) {
    rdt = mt_is_float(common) ? common : mt_get_default_dtype();
    cdt = rdt;
  } else if (kind == MT_KIND_BINARY_CMP) {
    rdt = MT_BOOL;
    cdt = common;
  } else if (kind == MT_KIND_BINARY_BITS) {
    if (mt_is_float(common))
      return mt_error(MT_EDTYPE, "%s: not implemented for '%s' (bitwise ops take integer or bool tensors)", name,
                      mt_dtype_name(common));
    rdt = cdt = common;
  } else {
    rdt = cdt = common;
    if (common == MT_BOOL && op == MT_OP_SUB)
      return mt_error(MT_EDTYPE, "sub: subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                                 "`^` or `logical_xor()` operator instead.");
  }
  /* float16 / bfloat16 compute in float32 */
  if (mt_is_reduced_float(cdt)) cdt = MT_FLOAT32;
  /* broadcast shape */
  int64_t shape[MT_MAX_DIMS];
  int nd;
  if (mt_broadcast_shapes(a->_sizes, a->_ndim, b->_sizes, b->_ndim, shape, &nd) != MT_OK)
    return mt_error(MT_ESHAPE, "%s: the size of tensor a %s must match the size of tensor b %s (they do not broadcast)",
                    name, MT_SHAPE(a), MT_SHAPE(b));
  mt_device dev = mt_result_device(a, b);
  MT_TRY(mt_check_kernel(op, dev.type == a->_device_type ? a : b));
  if (out) {
    MT_TRY(mt_check_tensor(out, name, "out"));
    MT_TRY(check_cast(rdt, out, name));
    if (out->_device_type != dev.type || out->_device_index != dev.index)
      return mt_error(MT_EDEVICE, "%s: expected out on device %s, found it on %s", name, mt_device_str(dev),
                      mt_device_str(mt_device_of(out)));
  }
  mt_tensor *x = NULL, *y = NULL, *res = NULL;
  mt_status s;
  if ((s = mt_as_dtype(a, cdt, &x)) || (s = mt_as_dtype(b, cdt, &y))) goto done;
  int res_dt = kind == MT_KIND_BINARY_CMP ? MT_BOOL : cdt;
  bool direct = out && out->_dtype == res_dt;
  if (direct) {
    if ((s = mt_prepare_out(out, shape, nd, out->_dtype, name))) goto done;
    /* out may alias an input exactly (in-place) but not partially */
    if ((out != x && mt_may_overlap(out, x) && !(out->_data == x->_data && x->_flags & out->_flags & MT_TENSOR_CONTIGUOUS)) ||
        (out != y && mt_may_overlap(out, y) && !(out->_data == y->_data && y->_flags & out->_flags & MT_TENSOR_CONTIGUOUS)))
      direct = false;
  }
  if (direct) res = mt_tensor_retain(out);
  else if ((s = mt_new_laid_out(dev, shape, nd, res_dt, name, (const mt_tensor *[]){a, b}, 2, &res))) goto done;
  if ((s = mt_kernels_of(res)->binary(op, res, x, y))) goto done;
  if (direct) {
    mt_bump_version(out);
    if (result) *result = res; else mt_tensor_release(res);
    res = NULL;
    goto done;
  }
  s = finish(res, out, result, name, out ? out->_dtype : rdt);
  res = NULL;
done:
  mt_tensor_release(x);
  mt_tensor_release(y);
  mt_tensor_release(res);
  return s;
}

static mt_status binary_pub(mt_op op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (!mt_op_is_binary(op)) return mt_error(MT_EINVAL, "binary: %d is no binary op", op);
  const char *name = MT_OP_NAME(op);
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_tensor(b, name, "other"));
  MT_TRY(mt_check_same_device_or_scalar(name, a, b));
  return binary_impl(op, a, b, out, result);
}

static mt_status binary_scalar_pub(mt_op op, mt_tensor *a, double s, int scalar_kind, int reverse, mt_tensor *out,
                                   mt_tensor **result) {
  if (!mt_op_is_binary(op)) return mt_error(MT_EINVAL, "binary: %d is no binary op", op);
  MT_TRY(mt_check_tensor(a, MT_OP_NAME(op), "input"));
  if (scalar_kind == 1 && (s != floor(s) || fabs(s) > 9.2e18)) scalar_kind = 2;
  mt_tensor sc;
  double buf;
  mt_wrapped_number(&sc, &buf, s, scalar_kind);
  return reverse ? binary_impl(op, &sc, a, out, result) : binary_impl(op, a, &sc, out, result);
}

/* ---------------------------------------------------------------- fast paths */
/* Small contiguous float32/float64 tensors go straight to the kernel the general driver would
 * end up calling, on the same operands (so the same bits come out), without the promotion, the
 * conversion of a wrapped number and the checks that cannot fail here. `out` may be NULL or the
 * input itself (in place). They return false, having done nothing, when the call is not theirs:
 * also when the tensor's backend does not run the op (the general driver then says so). Nothing
 * here is one device's: any backend's kernel slot is called the same way. */
static inline bool small_float(const mt_tensor *a) {
  return (a->_dtype == MT_FLOAT32 || a->_dtype == MT_FLOAT64) && (a->_flags & MT_TENSOR_CONTIGUOUS) &&
         !(a->_flags & MT_TENSOR_WRAPPED_NUMBER) && a->_numel < 2 * MT_GRAIN && (uint32_t)a->_device_type < MT_DEVICE_TYPES;
}
/* does a's backend run op (the CPU's runs every op: no lookup) */
static inline bool runs(mt_op op, const mt_tensor *a) {
  return __builtin_expect(a->_device_type == MT_CPU, 1) || mt_backend_runs(mt_backend_of(a), op, NULL, 0);
}

/* speed: contiguous float operands of any size (the fused backward kernels) */
static inline bool float_contig(const mt_tensor *a) {
  return (a->_dtype == MT_FLOAT32 || a->_dtype == MT_FLOAT64) && (a->_flags & MT_TENSOR_CONTIGUOUS) &&
         !(a->_flags & MT_TENSOR_WRAPPED_NUMBER) && (uint32_t)a->_device_type < MT_DEVICE_TYPES;
}

static inline bool lowp_contig(const mt_tensor *a) {
  return mt_is_reduced_float(a->_dtype) && (a->_flags & MT_TENSOR_CONTIGUOUS) && !(a->_flags & MT_TENSOR_WRAPPED_NUMBER) &&
         (uint32_t)a->_device_type < MT_DEVICE_TYPES;
}

/* the result: a new tensor like a (dtype rdt), or `out` (== a) itself */
static mt_status fast_result(mt_tensor *a, int rdt, mt_tensor *out, const char *name, mt_tensor **r) {
  if (out) { *r = out; return MT_OK; }
  return mt_new_like(a, rdt, name, r);
}
static inline bool same_sizes(const mt_tensor *a, const mt_tensor *b) {
  if (a->_ndim != b->_ndim) return false;
  for (int i = 0; i < a->_ndim; i++)
    if (a->_sizes[i] != b->_sizes[i]) return false;
  return true;
}
static mt_status fast_done(mt_status s, mt_tensor *r, mt_tensor *out, mt_tensor **result) {
  if (out) {
    mt_bump_version(out);
    if (s == MT_OK && result) *result = mt_tensor_retain(out);
    return s;
  }
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static bool unary_fast(mt_op op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result, mt_status *st) {
  if (!a || (out && out != a) || !mt_op_is_unary(op) || !small_float(a) || !runs(op, a)) return false;
  mt_op_kind kind = mt_op_kind_of(op);
  if (kind != MT_KIND_UNARY_FLOAT && kind != MT_KIND_UNARY_KEEP) return false;
  mt_tensor *r;
  if ((*st = fast_result(a, a->_dtype, out, MT_OP_NAME(op), &r))) return true;
  *st = fast_done(mt_kernels_of(a)->unary(op, r, a, p1, p2), r, out, result);
  return true;
}

/* a (op) b of one shape and dtype; out NULL or a */
static bool binary_fast(mt_op op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result, mt_status *st) {
  if (!a || !b || (out && out != a) || !mt_op_is_binary(op)) return false;
  if (!small_float(a) || !small_float(b) || a->_dtype != b->_dtype || !same_sizes(a, b)) return false;
  if (!mt_same_device(a, b) || !runs(op, a)) return false;
  mt_op_kind bk = mt_op_kind_of(op);
  if (bk == MT_KIND_BINARY_BITS || (bk == MT_KIND_BINARY_CMP && out)) return false;
  if (out && a->_data != b->_data && mt_may_overlap(a, b)) return false;
  mt_tensor *r;
  if ((*st = fast_result(a, bk == MT_KIND_BINARY_CMP ? MT_BOOL : a->_dtype, out, MT_OP_NAME(op), &r))) return true;
  *st = fast_done(mt_kernels_of(a)->binary(op, r, a, b), r, out, result);
  return true;
}

/* a (op) s, or s (op) a; the number converted to a's dtype, as the promotion of a wrapped number
 * with a float tensor does */
static bool scalar_fast(mt_op op, mt_tensor *a, double sv, int kind, int reverse, mt_tensor *out, mt_tensor **result,
                        mt_status *st) {
  if (!a || (out && out != a) || !mt_op_is_binary(op) || !small_float(a) || !runs(op, a)) return false;
  mt_op_kind bk = mt_op_kind_of(op);
  if (bk == MT_KIND_BINARY_BITS || (bk == MT_KIND_BINARY_CMP && out)) return false;
  if (kind == 0) sv = sv != 0;
  union { float f; double d; } num;
  if (a->_dtype == MT_FLOAT32) num.f = (float)sv;
  else num.d = sv;
  mt_tensor sc; /* the number as a 0-dim CPU tensor of a's dtype on the stack: what the kernel reads (on
                 * the host, for a device's kernel: core/backend.h) */
  sc._numel = 1;
  sc._ndim = 0;
  sc._dtype = a->_dtype;
  sc._flags = MT_TENSOR_CONTIGUOUS | MT_TENSOR_WRAPPED_NUMBER;
  sc._data = (char *)&num;
  sc._device_type = MT_CPU;
  sc._device_index = 0;
  mt_tensor *r;
  if ((*st = fast_result(a, bk == MT_KIND_BINARY_CMP ? MT_BOOL : a->_dtype, out, MT_OP_NAME(op), &r))) return true;
  const mt_kernels *k = mt_kernels_of(a);
  *st = fast_done(reverse ? k->binary(op, r, &sc, a) : k->binary(op, r, a, &sc), r, out, result);
  return true;
}

/* ---------------------------------------------------------------- the front doors */
mt_status mt_unary(mt_op op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result) {
  if (op == MT_OP_POLYGAMMA && !(p1 >= 0 && p1 == floor(p1) && p1 < 1e6))
    return mt_error(MT_EINVAL, "polygamma: n must be a non-negative integer, got %g", p1);
  if (mt_op_is_unary(op) && mt_records(a) && mt_autograd.unary)
    return mt_autograd.unary(op, a, p1, p2, out, result);
  mt_status s;
  if (unary_fast(op, a, p1, p2, out, result, &s)) return s;
  return unary_impl(op, a, p1, p2, out, result);
}

mt_status mt_binary(mt_op op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (a && b && mt_op_is_binary(op) && mt_records2(a, b) && mt_autograd.binary)
    return mt_autograd.binary(op, a, b, out, result);
  mt_status s;
  if (binary_fast(op, a, b, out, result, &s)) return s;
  return binary_pub(op, a, b, out, result);
}

mt_status mt_binary_scalar(mt_op op, mt_tensor *a, double sv, int scalar_kind, int reverse, mt_tensor *out,
                           mt_tensor **result) {
  if (mt_op_is_binary(op) && mt_records(a) && mt_autograd.binary_scalar)
    return mt_autograd.binary_scalar(op, a, sv, scalar_kind, reverse, out, result);
  mt_status s;
  if (scalar_fast(op, a, sv, scalar_kind, reverse, out, result, &s)) return s;
  return binary_scalar_pub(op, a, sv, scalar_kind, reverse, out, result);
}

/* a + alpha * b: one node when recorded (the autograd wrapper), a scaled copy of b otherwise */
mt_status mt_add_scaled(mt_tensor *a, mt_tensor *b, double alpha, mt_tensor *out, mt_tensor **result) {
  if (alpha != 1 && a && b && mt_records2(a, b) && mt_autograd.add_scaled)
    return mt_autograd.add_scaled(a, b, alpha, out, result);
  MT_TRY(mt_check_tensor(a, "add", "input"));
  MT_TRY(mt_check_tensor(b, "add", "other"));
  if (alpha == 1) return mt_binary(MT_OP_ADD, a, b, out, result);
  mt_tensor *scaled;
  int kind = (alpha == floor(alpha) && !mt_is_float(b->_dtype)) ? 1 : 2;
  if (kind == 2 && !mt_is_float(mt_result_type(a, b, -1)))
    return mt_error(MT_EDTYPE, "add: for integral input tensors, argument alpha must not be a floating point number.");
  MT_TRY(mt_binary_scalar(MT_OP_MUL, b, alpha, kind, 0, NULL, &scaled));
  mt_status s = mt_binary(MT_OP_ADD, a, scaled, out, result);
  mt_tensor_release(scaled);
  return s;
}

/* addcmul / addcdiv: a + value * (b * c) or a + value * (b / c), composed of the binary ops */
mt_status mt_addcmul(mt_tensor *a, mt_tensor *b, mt_tensor *c, double value, int divide, mt_tensor *out,
                     mt_tensor **result) {
  const char *name = divide ? "addcdiv" : "addcmul";
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_tensor(b, name, "tensor1"));
  MT_TRY(mt_check_tensor(c, name, "tensor2"));
  mt_tensor *bc, *scaled = NULL;
  MT_TRY(mt_binary(divide ? MT_OP_DIV : MT_OP_MUL, b, c, NULL, &bc));
  mt_status s = mt_binary_scalar(MT_OP_MUL, bc, value, value == floor(value) ? 1 : 2, 0, NULL, &scaled);
  mt_tensor_release(bc);
  if (s) return s;
  s = mt_binary(MT_OP_ADD, a, scaled, out, result);
  mt_tensor_release(scaled);
  return s;
}

/* lerp: a + w * (b - a), composed */
mt_status mt_lerp(mt_tensor *a, mt_tensor *b, mt_tensor *w, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "lerp", "input"));
  MT_TRY(mt_check_tensor(b, "lerp", "end"));
  MT_TRY(mt_check_tensor(w, "lerp", "weight"));
  mt_tensor *d, *wd;
  MT_TRY(mt_binary(MT_OP_SUB, b, a, NULL, &d));
  mt_status s = mt_binary(MT_OP_MUL, w, d, NULL, &wd);
  mt_tensor_release(d);
  if (s) return s;
  s = mt_binary(MT_OP_ADD, a, wd, out, result);
  mt_tensor_release(wd);
  return s;
}

/* ---------------------------------------------------------------- where */
mt_status mt_where(mt_tensor *cond, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (a && b && mt_records2(a, b) && mt_autograd.where) return mt_autograd.where(cond, a, b, out, result);
  MT_TRY(mt_check_tensor(cond, "where", "condition"));
  MT_TRY(mt_check_tensor(a, "where", "input"));
  MT_TRY(mt_check_tensor(b, "where", "other"));
  MT_TRY(mt_check_same_device_or_scalar("where", a, b));
  MT_TRY(mt_check_same_device_or_scalar("where", cond, mt_is_cpu_scalar(a) ? b : a));
  if (cond->_dtype != MT_BOOL && cond->_dtype != MT_UINT8)
    return mt_error(MT_EDTYPE, "where: expected condition to be a boolean tensor, but got a tensor with dtype %s",
                    mt_dtype_name(cond->_dtype));
  int64_t s1[MT_MAX_DIMS], s2[MT_MAX_DIMS];
  int n1, n2;
  if (mt_broadcast_shapes(cond->_sizes, cond->_ndim, a->_sizes, a->_ndim, s1, &n1) ||
      mt_broadcast_shapes(s1, n1, b->_sizes, b->_ndim, s2, &n2))
    return mt_error(MT_ESHAPE, "where: condition %s, input %s and other %s do not broadcast together", MT_SHAPE(cond),
                    MT_SHAPE(a), MT_SHAPE(b));
  int dt = mt_result_type(a, b, -1);
  mt_tensor *x = NULL, *y = NULL, *r = NULL;
  mt_status s;
  if ((s = mt_as_dtype(a, dt, &x)) || (s = mt_as_dtype(b, dt, &y))) goto done;
  const mt_tensor *at = !mt_is_cpu_scalar(cond) ? cond : !mt_is_cpu_scalar(a) ? a : b; /* the result's device */
  if ((s = mt_check_kernel(MT_OP_WHERE, at))) goto done;
  if ((s = mt_new_laid_out(mt_device_of(at), s2, n2, dt, "where", (const mt_tensor *[]){cond, a, b}, 3, &r))) goto done;
  if ((s = mt_kernels_of(r)->where(r, cond, x, y))) goto done;
  s = finish(r, out, result, "where", out ? out->_dtype : dt);
  r = NULL;
done:
  mt_tensor_release(x);
  mt_tensor_release(y);
  mt_tensor_release(r);
  return s;
}

/* ---------------------------------------------------------------- fused backward */
/* For backwards that are not recorded (core/grad/elementwise.c): g * op'(x) in one kernel pass,
 * on small contiguous float operands of one shape and dtype. MT_ENOTIMPL (no message: the caller
 * composes the formula instead) when the call is not one of those. */
mt_status mt_unary_grad(mt_op op, mt_tensor *g, mt_tensor *x, mt_tensor **result) {
  /* speed: any size (the kernel splits large ones over the pool) */
  /* (bfloat16 / float16 too: issue 25) */
  if (!(float_contig(g) || lowp_contig(g)) || !(float_contig(x) || lowp_contig(x)) || g->_dtype != x->_dtype ||
      !same_sizes(g, x))
    return MT_ENOTIMPL;
  if (!mt_same_device(g, x) || !mt_backend_has_slot(g, MT_SLOT_unary_grad)) return MT_ENOTIMPL;
  mt_tensor *r;
  MT_TRY(mt_new_like(g, g->_dtype, "backward", &r));
  mt_status s = mt_kernels_of(g)->unary_grad(op, r, g, x);
  if (s) { mt_tensor_release(r); return s; }
  *result = r;
  return MT_OK;
}
