/* elementwise.c -- autograd for the elementwise ops (core/ops/elementwise.c): unary ops, binary
 * ops with a tensor or a number, a + alpha * b, where. For each: the node's data, the wrapper that
 * records it, its backward, and the names PyTorch prints. */
#include "formula.h"

/* ---------------------------------------------------------------- wrappers' shared steps */
/* the result `r` (a new reference) handed out once `rec` (the recording's status) succeeded */
static mt_status hand_out(mt_tensor *r, mt_status rec, mt_tensor *out, mt_tensor **result) {
  if (rec) {
    mt_tensor_release(r);
    return rec;
  }
  if (out) {
    mt_tensor_release(r);
    if (result) *result = mt_tensor_retain(out);
    return MT_OK;
  }
  return mt_give(r, result);
}

/* a copy of a's value for an in-place op's backward */
static mt_status old_value(mt_tensor *a, bool needed, mt_tensor **x) {
  *x = NULL;
  if (!needed) return MT_OK;
  return MT_NOGRAD(mt_clone(a, x));
}

/* in place (out == a): a leaf is refused; out=: refused */
static inline mt_status check_out(mt_tensor *a, mt_tensor *out, const char *op) {
  if (!out) return MT_OK; /* a new result: the usual case */
  if (out == a) return mt_grad_check_inplace(a, op);
  return mt_grad_check_out(out, true, op);
}

/* ---------------------------------------------------------------- unary ops */
/* y = op(x; p1, p2) */
typedef struct unary_node {
  mt_saved x;    /* the input (its old value for an in-place op), when the derivative reads it */
  mt_saved y;    /* the result, when the derivative is written with it */
  int32_t op;
  double p1, p2; /* the op's parameters: clamp's bounds, pow's exponent, leaky_relu's slope, ... */
} unary_node;
MT_NODE_DATA_FITS(unary_node);

/* Each differentiable unary op (DIFF in the op list): the grad_fn name PyTorch gives it and what its
 * derivative reads, the input x and/or the result y. A new unary op is a row here and its case in
 * unary_backward below. */
enum { READS_X = 1, READS_Y = 2 };
static const struct unary_rule {
  const char *name;
  unsigned char reads;
} unary_rules[MT_OP_COUNT] = {
    [MT_OP_NEG] = {"NegBackward0", 0},
    [MT_OP_ABS] = {"AbsBackward0", READS_X},
    [MT_OP_SIGN] = {"SignBackward0", 0},
    [MT_OP_EXP] = {"ExpBackward0", READS_Y},
    [MT_OP_EXP2] = {"Exp2Backward0", READS_Y},
    [MT_OP_LOG] = {"LogBackward0", READS_X},
    [MT_OP_LOG2] = {"Log2Backward0", READS_X},
    [MT_OP_LOG10] = {"Log10Backward0", READS_X},
    [MT_OP_LOG1P] = {"Log1PBackward0", READS_X},
    [MT_OP_EXPM1] = {"Expm1Backward0", READS_Y},
    [MT_OP_SQRT] = {"SqrtBackward0", READS_Y},
    [MT_OP_RSQRT] = {"RsqrtBackward0", READS_Y},
    [MT_OP_SIN] = {"SinBackward0", READS_X},
    [MT_OP_COS] = {"CosBackward0", READS_X},
    [MT_OP_TAN] = {"TanBackward0", READS_Y},
    [MT_OP_ASIN] = {"AsinBackward0", READS_X},
    [MT_OP_ACOS] = {"AcosBackward0", READS_X},
    [MT_OP_ATAN] = {"AtanBackward0", READS_X},
    [MT_OP_SINH] = {"SinhBackward0", READS_X},
    [MT_OP_COSH] = {"CoshBackward0", READS_X},
    [MT_OP_TANH] = {"TanhBackward0", READS_Y},
    [MT_OP_SIGMOID] = {"SigmoidBackward0", READS_Y},
    [MT_OP_LOGIT] = {"LogitBackward0", READS_X},
    [MT_OP_RELU] = {"ReluBackward0", READS_X},
    [MT_OP_GELU] = {"GeluBackward0", READS_X},
    [MT_OP_GELU_TANH] = {"GeluBackward0", READS_X},
    [MT_OP_SILU] = {"SiluBackward0", READS_X},
    [MT_OP_ERF] = {"ErfBackward0", READS_X},
    [MT_OP_ERFC] = {"ErfcBackward0", READS_X},
    [MT_OP_FLOOR] = {"FloorBackward0", 0},
    [MT_OP_CEIL] = {"CeilBackward0", 0},
    [MT_OP_ROUND] = {"RoundBackward0", 0},
    [MT_OP_TRUNC] = {"TruncBackward0", 0},
    [MT_OP_FRAC] = {"FracBackward0", 0},
    [MT_OP_RECIPROCAL] = {"ReciprocalBackward0", READS_Y},
    [MT_OP_SQUARE] = {"PowBackward0", READS_X},
    [MT_OP_SINC] = {"SincBackward0", READS_X},
    [MT_OP_SOFTPLUS] = {"SoftplusBackward0", READS_X},
    [MT_OP_LGAMMA] = {"LgammaBackward0", READS_X},
    [MT_OP_DIGAMMA] = {"DigammaBackward0", READS_X},
    [MT_OP_POLYGAMMA] = {"PolygammaBackward0", READS_X},
    [MT_OP_CLAMP] = {"ClampBackward1", READS_X},
    [MT_OP_POW_SCALAR] = {"PowBackward0", READS_X},
    [MT_OP_RPOW_SCALAR] = {"PowBackward2", READS_Y},
    [MT_OP_LEAKY_RELU] = {"LeakyReluBackward0", READS_X},
    [MT_OP_ELU] = {"EluBackward0", READS_X | READS_Y},
    [MT_OP_HARDTANH] = {"HardtanhBackward0", READS_X},
    [MT_OP_THRESHOLD] = {"ThresholdBackward0", READS_X},
    [MT_OP_ROUND_DECIMALS] = {"RoundBackward1", 0},
    [MT_OP_NAN_TO_NUM] = {"NanToNumBackward0", READS_X},
};
static const char *unary_name_of(const mt_node *n) { return unary_rules[NODE_DATA(n, unary_node)->op].name; }
static const char *unary_names(int i) {
  if (i >= MT_OP_COUNT) return NULL;
  return unary_rules[i].name ? unary_rules[i].name : "";
}

/* g * op'(x) in one pass when the backward is not recorded and the kernels fuse it (abs, relu:
 * the same float operations as the formula, so the same bits); NULL, having done nothing, else */
static mt_tensor *fused_grad(scope *sc, mt_op op, mt_tensor *g, mt_tensor *x) {
  if (!LIVE(sc) || mt_grad_mode || !g || !x) return NULL;
  mt_tensor *r = NULL;
  return mt_unary_grad(op, g, x, &r) == MT_OK ? keep(sc, MT_OK, &r) : NULL;
}

static mt_status unary_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  unary_node *d = NODE_DATA(n, unary_node);
  mt_tensor *g = gout[0], *x = saved(sc, n, &d->x), *y = saved(sc, n, &d->y), *r = NULL;
  double p1 = d->p1, p2 = d->p2;
  if (!g || !mt_node_wants(n, 0)) goto done;
  switch (d->op) {
    case MT_OP_NEG: r = NEG(g); break;
    case MT_OP_ABS:
      if (!(r = fused_grad(sc, MT_OP_ABS, g, x))) r = MUL(g, UNARY(MT_OP_SIGN, x, 0, 0));
      break;
    case MT_OP_SIGN: case MT_OP_FLOOR: case MT_OP_CEIL: case MT_OP_ROUND: case MT_OP_TRUNC:
    case MT_OP_ROUND_DECIMALS:
      r = MULS(g, 0); break;
    case MT_OP_EXP: r = MUL(g, y); break;
    case MT_OP_EXP2: r = MULS(MUL(g, y), M_LN2); break;
    case MT_OP_LOG: r = DIV(g, x); break;
    case MT_OP_LOG2: r = DIV(g, MULS(x, M_LN2)); break;
    case MT_OP_LOG10: r = DIV(g, MULS(x, M_LN10)); break;
    case MT_OP_LOG1P: r = DIV(g, ADDS(x, 1)); break;
    case MT_OP_EXPM1: r = MUL(g, ADDS(y, 1)); break;
    case MT_OP_SQRT: r = DIV(g, MULS(y, 2)); break;
    case MT_OP_RSQRT: r = MUL(g, MULS(UNARY(MT_OP_POW_SCALAR, y, 3, 0), -0.5)); break;
    case MT_OP_SIN: r = MUL(g, UNARY(MT_OP_COS, x, 0, 0)); break;
    case MT_OP_COS: r = MUL(g, NEG(UNARY(MT_OP_SIN, x, 0, 0))); break;
    case MT_OP_TAN: r = MUL(g, ADDS(MUL(y, y), 1)); break;
    case MT_OP_ASIN: r = DIV(g, UNARY(MT_OP_SQRT, NEG(ADDS(MUL(x, x), -1)), 0, 0)); break;
    case MT_OP_ACOS: r = NEG(DIV(g, UNARY(MT_OP_SQRT, NEG(ADDS(MUL(x, x), -1)), 0, 0))); break;
    case MT_OP_ATAN: r = DIV(g, ADDS(MUL(x, x), 1)); break;
    case MT_OP_SINH: r = MUL(g, UNARY(MT_OP_COSH, x, 0, 0)); break;
    case MT_OP_COSH: r = MUL(g, UNARY(MT_OP_SINH, x, 0, 0)); break;
    case MT_OP_TANH: r = MUL(g, NEG(ADDS(MUL(y, y), -1))); break;
    case MT_OP_SIGMOID: r = MUL(g, MUL(y, NEG(ADDS(y, -1)))); break;
    case MT_OP_LOGIT: { /* g / (x (1 - x)); with eps: 0 outside [eps, 1 - eps]; without: nan outside [0, 1] */
      mt_tensor *d = DIV(g, MUL(x, ADDS(NEG(x), 1)));
      if (p1 >= 0) {
        mt_tensor *outside = BINARY(MT_OP_LOGICAL_OR, CMPS(MT_OP_LT, x, p1), CMPS(MT_OP_GT, x, 1 - p1));
        r = WHERE(outside, ZEROS(g, NULL, 0, g->_dtype), d);
      } else {
        mt_tensor *outside = BINARY(MT_OP_LOGICAL_OR, CMPS(MT_OP_LT, x, 0), CMPS(MT_OP_GT, x, 1));
        r = WHERE(outside, FULL(g, NULL, 0, g->_dtype, NAN), d);
      }
      break;
    }
    case MT_OP_RELU: /* x > 0 iff relu(x) > 0 */
      if (!(r = fused_grad(sc, MT_OP_RELU, g, x))) r = MUL(g, MASK_AS(CMPS(MT_OP_GT, x, 0), g));
      break;
    case MT_OP_GELU: {
      mt_tensor *cdf = MULS(ADDS(UNARY(MT_OP_ERF, MULS(x, M_SQRT1_2), 0, 0), 1), 0.5);
      mt_tensor *pdf = MULS(UNARY(MT_OP_EXP, MULS(MUL(x, x), -0.5), 0, 0), 0.3989422804014327);
      r = MUL(g, ADD(cdf, MUL(x, pdf)));
      break;
    }
    case MT_OP_GELU_TANH: {
      const double k = 0.7978845608028654, c = 0.044715;
      mt_tensor *x2 = MUL(x, x);
      mt_tensor *inner = MULS(MUL(x, ADDS(MULS(x2, c), 1)), k);
      mt_tensor *t = UNARY(MT_OP_TANH, inner, 0, 0);
      mt_tensor *dinner = MULS(ADDS(MULS(x2, 3 * c), 1), k);
      mt_tensor *left = MULS(ADDS(t, 1), 0.5);
      mt_tensor *right = MUL(MULS(x, 0.5), MUL(NEG(ADDS(MUL(t, t), -1)), dinner));
      r = MUL(g, ADD(left, right));
      break;
    }
    case MT_OP_SILU: {
      mt_tensor *s = UNARY(MT_OP_SIGMOID, x, 0, 0);
      r = MUL(g, MUL(s, ADDS(MUL(x, NEG(ADDS(s, -1))), 1)));
      break;
    }
    case MT_OP_ERF: r = MUL(g, MULS(UNARY(MT_OP_EXP, NEG(MUL(x, x)), 0, 0), 1.1283791670955126)); break;
    case MT_OP_ERFC: r = MUL(g, MULS(UNARY(MT_OP_EXP, NEG(MUL(x, x)), 0, 0), -1.1283791670955126)); break;
    case MT_OP_FRAC: r = g; break;
    case MT_OP_RECIPROCAL: r = MUL(g, NEG(MUL(y, y))); break;
    case MT_OP_SQUARE: r = MUL(g, MULS(x, 2)); break;
    case MT_OP_SINC: { /* (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at x = 0 */
      mt_tensor *px = MULS(x, M_PI);
      mt_tensor *d = DIV(SUB(MUL(px, UNARY(MT_OP_COS, px, 0, 0)), UNARY(MT_OP_SIN, px, 0, 0)), MUL(px, x));
      r = MUL(g, WHERE(CMPS(MT_OP_EQ, x, 0), ZEROS(g, NULL, 0, g->_dtype), d));
      break;
    }
    case MT_OP_SOFTPLUS: r = MUL(g, UNARY(MT_OP_SIGMOID, x, 0, 0)); break;
    case MT_OP_LGAMMA: r = MUL(g, UNARY(MT_OP_DIGAMMA, x, 0, 0)); break;
    case MT_OP_DIGAMMA: r = MUL(g, UNARY(MT_OP_POLYGAMMA, x, 1, 0)); break;
    case MT_OP_POLYGAMMA: r = MUL(g, UNARY(MT_OP_POLYGAMMA, x, p1 + 1, 0)); break;
    case MT_OP_CLAMP: {
      mt_tensor *m = NULL;
      if (!isnan(p1)) m = CMPS(MT_OP_GE, x, p1);
      if (!isnan(p2)) { mt_tensor *m2 = CMPS(MT_OP_LE, x, p2); m = m ? BINARY(MT_OP_LOGICAL_AND, m, m2) : m2; }
      r = m ? MUL(g, MASK_AS(m, g)) : g;
      break;
    }
    case MT_OP_POW_SCALAR:
      if (p1 == 0) r = MULS(g, 0);
      else r = MUL(g, MULS(UNARY(MT_OP_POW_SCALAR, x, p1 - 1, 0), p1));
      break;
    case MT_OP_RPOW_SCALAR: r = MULS(MUL(g, y), log(p1)); break;
    case MT_OP_LEAKY_RELU: {
      mt_tensor *pos = MASK_AS(CMPS(MT_OP_GT, x, 0), g);
      r = MUL(g, ADDS(MULS(pos, 1 - p1), p1));
      break;
    }
    case MT_OP_ELU: {
      mt_tensor *pos = MASK_AS(CMPS(MT_OP_GT, x, 0), g);
      mt_tensor *neg = ADDS(y, p1); /* alpha * exp(x) where x <= 0 */
      r = MUL(g, ADD(pos, MUL(NEG(ADDS(pos, -1)), neg)));
      break;
    }
    case MT_OP_HARDTANH:
      r = MUL(g, MASK_AS(BINARY(MT_OP_LOGICAL_AND, CMPS(MT_OP_GT, x, p1), CMPS(MT_OP_LT, x, p2)), g));
      break;
    case MT_OP_THRESHOLD: r = MUL(g, MASK_AS(CMPS(MT_OP_GT, x, p1), g)); break;
    case MT_OP_NAN_TO_NUM: r = MUL(g, MASK_AS(UNARY(MT_OP_ISFINITE, x, 0, 0), g)); break;
    default:
      S.s = mt_error(MT_ENOTIMPL, "backward: the derivative of %s is not implemented", MT_OP_NAME(d->op));
  }
  if (LIVE(sc) && r) give(gin, 0, r);
done:;
  return scope_close(sc);
}

static const mt_node_kind unary_kind = {
    .name_of = unary_name_of, .names = unary_names, .backward = unary_backward, .nsaved = 2};

/* `x` is a's value for the backward: a copy of its old value for an in-place op */
static mt_status record_unary(mt_op op, mt_tensor *a, mt_tensor *x, double p1, double p2, mt_tensor *out) {
  if (!mt_is_float(out->_dtype) || !mt_op_differentiable[op]) return MT_OK;
  if (!unary_rules[op].name)
    return mt_error(MT_ENOTIMPL, "%s: differentiable in the op list but without a rule in core/grad/elementwise.c",
                    MT_OP_NAME(op));
  mt_node *n;
  MT_TRY(mt_node_make(&unary_kind, &a, 1, 1, &n));
  unary_node *d = NODE_DATA(n, unary_node);
  d->op = op;
  d->p1 = p1;
  d->p2 = p2;
  if (unary_rules[op].reads & READS_X) mt_node_save(n, &d->x, x);
  if (unary_rules[op].reads & READS_Y) mt_node_save_output(n, &d->y, out, 0);
  return mt_node_attach_new(n, out);
}

static mt_status grad_unary(mt_op op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result) {
  MT_TRY(check_out(a, out, MT_OP_NAME(op)));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && (unary_rules[op].reads & READS_X), &x));
  mt_status s = MT_NOGRAD(mt_unary(op, a, p1, p2, out, &r));
  if (s == MT_OK) s = hand_out(r, record_unary(op, a, x ? x : a, p1, p2, r), out, result);
  mt_tensor_release(x);
  return s;
}

/* ---------------------------------------------------------------- binary ops */
/* y = a (op) b, broadcast */
typedef struct binary_node {
  mt_saved a, b; /* the inputs (a's old value for an in-place op), when the rule reads them (IN) */
  mt_saved y;    /* the result, when the rule reads it (OUT) */
  int32_t op;
  mt_input_shapes shapes; /* a's and b's */
} binary_node;
MT_NODE_DATA_FITS(binary_node);

/* Each differentiable binary op (DIFF in the op list): the grad_fn names PyTorch gives a (op) b,
 * a (op) s and s (op) a for a number s (NULL: no such form), and what the derivatives read: the
 * inputs and/or the result, of the form with two tensors (IN, OUT) and of those with a number
 * (NUM_IN, NUM_OUT). A new binary op is a row here and its cases in binary_backward and
 * binary_number_backward below. */
enum { IN = 1, OUT = 2, NUM_IN = 4, NUM_OUT = 8 };
static const struct binary_rule {
  const char *name, *number_name, *number_first_name;
  unsigned char reads;
} binary_rules[MT_OP_COUNT] = {
    [MT_OP_ADD] = {"AddBackward0", "AddBackward0", "AddBackward0", 0}, /* parity: Python wraps the number */
    [MT_OP_SUB] = {"SubBackward0", "SubBackward0", "RsubBackward1", 0},
    [MT_OP_MUL] = {"MulBackward0", "MulBackward0", "MulBackward0", IN},
    [MT_OP_DIV] = {"DivBackward0", "DivBackward0", "DivBackward0", IN | NUM_IN | NUM_OUT},
    [MT_OP_DIV_TRUNC] = {"DivBackward2", "DivBackward2", "DivBackward2", IN | NUM_IN},
    [MT_OP_DIV_FLOOR] = {"DivBackward2", "DivBackward2", "DivBackward2", IN | NUM_IN},
    [MT_OP_POW] = {"PowBackward1", "PowBackward0", "PowBackward2", IN | OUT | NUM_IN | NUM_OUT},
    [MT_OP_MAXIMUM] = {"MaximumBackward0", "ClampMinBackward0", "ClampMinBackward0", IN | NUM_IN},
    [MT_OP_MINIMUM] = {"MinimumBackward0", "ClampMaxBackward0", "ClampMaxBackward0", IN | NUM_IN},
    [MT_OP_FMOD] = {"FmodBackward1", "FmodBackward0", "FmodBackward0", IN | NUM_IN},
    [MT_OP_REMAINDER] = {"RemainderBackward1", "RemainderBackward0", "RemainderBackward0", IN | NUM_IN},
    [MT_OP_ATAN2] = {"Atan2Backward0", "Atan2Backward0", "Atan2Backward0", IN | NUM_IN},
    [MT_OP_HYPOT] = {"HypotBackward0", "HypotBackward0", "HypotBackward0", IN | OUT | NUM_IN},
    [MT_OP_FMAX] = {"FmaxBackward0", "FmaxBackward0", "FmaxBackward0", IN | NUM_IN},
    [MT_OP_FMIN] = {"FminBackward0", "FminBackward0", "FminBackward0", IN | NUM_IN},
    [MT_OP_XLOGY] = {"XlogyBackward0", "XlogyBackward2", "XlogyBackward1", IN | NUM_IN},
    [MT_OP_COPYSIGN] = {"CopysignBackward0", "CopysignBackward1", NULL, IN | OUT | NUM_IN | NUM_OUT},
};
static const char *binary_grad_name(mt_op op, int scalar, int reverse) {
  const struct binary_rule *r = &binary_rules[op];
  return scalar ? (reverse ? r->number_first_name : r->number_name) : r->name;
}
/* a differentiable op without the rule for this form: an error (not a silently detached result) */
static mt_status no_rule(mt_op op, int scalar, int reverse) {
  return mt_error(MT_ENOTIMPL, "%s: %s is not differentiable", MT_OP_NAME(op),
                  !scalar ? "the form with two tensors" : (reverse ? "a number as its first argument" : "a number argument"));
}
static const char *binary_name_of(const mt_node *n) { return binary_grad_name(NODE_DATA(n, binary_node)->op, 0, 0); }
static const char *binary_names(int i) {
  if (i >= MT_OP_COUNT) return NULL;
  const char *s = binary_grad_name(i, 0, 0);
  return s ? s : "";
}

/* The end of a two-input backward: each gradient summed down to its input's shape (undoing
 * broadcasting), handed out, and the scope closed. */
static mt_status finish_two(scope *sc, mt_tensor **gin, mt_tensor *ga, mt_tensor *gb, const mt_input_shapes *k) {
  if (ga) ga = TO_INPUT_OF(k, 0, ga);
  if (gb) gb = TO_INPUT_OF(k, 1, gb);
  if (LIVE(sc)) {
    if (ga) give(gin, 0, ga);
    if (gb) give(gin, 1, gb);
  }
  return scope_close(sc);
}

static mt_status binary_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  binary_node *d = NODE_DATA(n, binary_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *a = saved(sc, n, &d->a), *b = saved(sc, n, &d->b), *y = saved(sc, n, &d->y);
  mt_tensor *ga = NULL, *gb = NULL;
  bool wa = mt_node_wants(n, 0), wb = mt_node_wants(n, 1);
  switch (d->op) {
    case MT_OP_ADD: ga = g; gb = g; break;
    case MT_OP_SUB: ga = g; if (wb) gb = NEG(g); break;
    case MT_OP_MUL: if (wa) ga = MUL(g, b); if (wb) gb = MUL(g, a); break;
    case MT_OP_DIV:
      if (wa) ga = DIV(g, b);
      if (wb) gb = NEG(DIV(MUL(g, a), MUL(b, b)));
      break;
    case MT_OP_POW:
      if (wa) ga = MUL(g, MUL(b, BINARY(MT_OP_POW, a, ADDS(b, -1))));
      if (wb) {
        /* where a == 0 and b >= 0 the derivative is 0 (log(0) would give nan) */
        mt_tensor *safe = MUL(MUL(g, y), UNARY(MT_OP_LOG, a, 0, 0));
        mt_tensor *zero_base = BINARY(MT_OP_LOGICAL_AND, CMPS(MT_OP_EQ, a, 0), CMPS(MT_OP_GE, b, 0));
        gb = WHERE(zero_base, ZEROS(g, NULL, 0, g->_dtype), safe);
      }
      break;
    case MT_OP_MAXIMUM: case MT_OP_MINIMUM: case MT_OP_FMAX: case MT_OP_FMIN: {
      bool mx = d->op == MT_OP_MAXIMUM || d->op == MT_OP_FMAX;
      mt_tensor *eq = MASK_AS(CMP(MT_OP_EQ, a, b), g);
      mt_tensor *win = MASK_AS(CMP(mx ? MT_OP_GT : MT_OP_LT, a, b), g);
      mt_tensor *share = ADD(win, MULS(eq, 0.5)); /* a's share; ties split evenly */
      if (wa) ga = MUL(g, share);
      if (wb) gb = MUL(g, NEG(ADDS(share, -1)));
      break;
    }
    case MT_OP_ATAN2: {
      mt_tensor *den = ADD(MUL(a, a), MUL(b, b));
      if (wa) ga = MUL(g, DIV(b, den));
      if (wb) gb = MUL(g, NEG(DIV(a, den)));
      break;
    }
    case MT_OP_HYPOT:
      if (wa) ga = MUL(g, DIV(a, y));
      if (wb) gb = MUL(g, DIV(b, y));
      break;
    case MT_OP_FMOD: case MT_OP_REMAINDER:
      ga = g;
      if (wb) gb = NEG(MUL(g, BINARY(d->op == MT_OP_FMOD ? MT_OP_DIV_TRUNC : MT_OP_DIV_FLOOR, a, b)));
      break;
    case MT_OP_XLOGY:
      if (wa) ga = MUL(g, UNARY(MT_OP_LOG, b, 0, 0));
      if (wb) gb = MUL(g, DIV(a, b));
      break;
    case MT_OP_DIV_TRUNC: case MT_OP_DIV_FLOOR:
      if (wa) ga = MULS(g, 0);
      if (wb) gb = MULS(g, 0);
      break;
    case MT_OP_COPYSIGN: /* copysign(a, b) / a where a != 0; nothing for b */
      if (wa) ga = MUL(g, WHERE(CMPS(MT_OP_EQ, a, 0), ZEROS(g, NULL, 0, g->_dtype), DIV(y, a)));
      if (wb) gb = ZEROS(g, b->_sizes, b->_ndim, g->_dtype);
      break;
    default:
      S.s = mt_error(MT_ENOTIMPL, "backward: the derivative of %s is not implemented", MT_OP_NAME(d->op));
  }
  return finish_two(sc, gin, wa ? ga : NULL, wb ? gb : NULL, &d->shapes);
}

static const mt_node_kind binary_kind = {
    .name_of = binary_name_of, .names = binary_names, .backward = binary_backward, .nsaved = 3};

/* `xa` is a's value for the backward: a copy of its old value for an in-place op */
static mt_status record_binary(mt_op op, mt_tensor *a, mt_tensor *b, mt_tensor *xa, mt_tensor *out) {
  if (!mt_is_float(out->_dtype) || !mt_op_differentiable[op]) return MT_OK;
  if (!binary_rules[op].name) return no_rule(op, 0, 0);
  mt_tensor *in[2] = {a, b};
  mt_node *n;
  MT_TRY(mt_node_make(&binary_kind, in, 2, 1, &n));
  binary_node *d = NODE_DATA(n, binary_node);
  d->op = op;
  mt_input_shapes_keep(&d->shapes, a, b, out);
  if (binary_rules[op].reads & IN) {
    mt_node_save(n, &d->a, xa);
    mt_node_save(n, &d->b, b);
  }
  if (binary_rules[op].reads & OUT) mt_node_save_output(n, &d->y, out, 0);
  return mt_node_attach_new(n, out);
}

static mt_status grad_binary(mt_op op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(check_out(a, out, MT_OP_NAME(op)));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && (binary_rules[op].reads & IN), &x));
  mt_status s = MT_NOGRAD(mt_binary(op, a, b, out, &r));
  if (s == MT_OK) s = hand_out(r, record_binary(op, a, b, x ? x : a, r), out, result);
  mt_tensor_release(x);
  return s;
}

/* ---------------------------------------------------------------- binary ops with a number */
/* y = x (op) s, or s (op) x when reverse */
typedef struct binary_number_node {
  mt_saved x; /* the input (its old value for an in-place op), when the rule reads it (NUM_IN) */
  mt_saved y; /* the result, when the rule reads it (NUM_OUT) */
  int32_t op, reverse;
  double s;
  mt_input_shape shape;
} binary_number_node;
MT_NODE_DATA_FITS(binary_number_node);

static const char *binary_number_name_of(const mt_node *n) {
  const binary_number_node *d = NODE_DATA(n, binary_number_node);
  return binary_grad_name(d->op, 1, d->reverse);
}
static const char *binary_number_names(int i) {
  if (i >= 2 * MT_OP_COUNT) return NULL;
  const char *s = binary_grad_name(i / 2, 1, i % 2);
  return s ? s : "";
}

static mt_status binary_number_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  binary_number_node *d = NODE_DATA(n, binary_number_node);
  mt_tensor *g = gout[0], *r = NULL;
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *x = saved(sc, n, &d->x), *y = saved(sc, n, &d->y);
  double s = d->s;
  bool rev = d->reverse != 0;
  switch (d->op) {
    case MT_OP_ADD: r = g; break;
    case MT_OP_SUB: r = rev ? NEG(g) : g; break;
    case MT_OP_MUL: r = MULS(g, s); break;
    case MT_OP_DIV: r = rev ? NEG(DIV(MUL(g, y), x)) : MULS(g, 1 / s); break;
    case MT_OP_POW:
      if (rev) r = MULS(MUL(g, y), log(s));
      else r = s == 0 ? MULS(g, 0) : MUL(g, MULS(UNARY(MT_OP_POW_SCALAR, x, s - 1, 0), s));
      break;
    case MT_OP_MAXIMUM: case MT_OP_FMAX: r = MUL(g, MASK_AS(CMPS(MT_OP_GE, x, s), g)); break;
    case MT_OP_MINIMUM: case MT_OP_FMIN: r = MUL(g, MASK_AS(CMPS(MT_OP_LE, x, s), g)); break;
    case MT_OP_FMOD: case MT_OP_REMAINDER:
      if (!rev) r = g;
      else S.s = mt_error(MT_ENOTIMPL, "backward: the derivative of a number modulo a tensor is not implemented");
      break;
    case MT_OP_DIV_TRUNC: case MT_OP_DIV_FLOOR: r = MULS(g, 0); break;
    case MT_OP_ATAN2: /* atan2(x, s): s / (x^2 + s^2); atan2(s, x): -s / (x^2 + s^2) */
      r = MULS(DIV(g, ADDS(MUL(x, x), s * s)), rev ? -s : s);
      break;
    case MT_OP_HYPOT: r = MUL(g, DIV(x, UNARY(MT_OP_SQRT, ADDS(MUL(x, x), s * s), 0, 0))); break;
    case MT_OP_XLOGY: r = rev ? MULS(DIV(g, x), s) : MULS(g, log(s)); break; /* s*log(x) : x*log(s) */
    case MT_OP_COPYSIGN: r = MUL(g, WHERE(CMPS(MT_OP_EQ, x, 0), ZEROS(g, NULL, 0, g->_dtype), DIV(y, x))); break;
    default:
      S.s = mt_error(MT_ENOTIMPL, "backward: the derivative of %s with a number is not implemented",
                     MT_OP_NAME(d->op));
  }
  if (LIVE(sc) && r) give(gin, 0, TO_INPUT(&d->shape, r));
  return scope_close(sc);
}

static const mt_node_kind binary_number_kind = {.name_of = binary_number_name_of,
                                                .names = binary_number_names,
                                                .backward = binary_number_backward,
                                                .nsaved = 2};

static mt_status record_binary_number(mt_op op, mt_tensor *a, mt_tensor *x, double s, int reverse, mt_tensor *out) {
  if (!mt_is_float(out->_dtype) || !mt_op_differentiable[op]) return MT_OK;
  if (!binary_grad_name(op, 1, reverse)) return no_rule(op, 1, reverse);
  mt_node *n;
  MT_TRY(mt_node_make(&binary_number_kind, &a, 1, 1, &n));
  binary_number_node *d = NODE_DATA(n, binary_number_node);
  d->op = op;
  d->reverse = reverse;
  d->s = s;
  mt_input_shape_keep(&d->shape, a, out);
  if (binary_rules[op].reads & NUM_IN) mt_node_save(n, &d->x, x);
  if (binary_rules[op].reads & NUM_OUT) mt_node_save_output(n, &d->y, out, 0);
  return mt_node_attach_new(n, out);
}

static mt_status grad_binary_scalar(mt_op op, mt_tensor *a, double sv, int scalar_kind, int reverse, mt_tensor *out,
                                    mt_tensor **result) {
  MT_TRY(check_out(a, out, MT_OP_NAME(op)));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && (binary_rules[op].reads & NUM_IN), &x));
  mt_status s = MT_NOGRAD(mt_binary_scalar(op, a, sv, scalar_kind, reverse, out, &r));
  if (s == MT_OK) s = hand_out(r, record_binary_number(op, a, x ? x : a, sv, reverse, r), out, result);
  mt_tensor_release(x);
  return s;
}

/* ---------------------------------------------------------------- a + alpha * b */
typedef struct add_scaled_node {
  double alpha;
  mt_input_shapes shapes; /* a's and b's */
} add_scaled_node;
MT_NODE_DATA_FITS(add_scaled_node);

static const char *add_scaled_name_of(const mt_node *n) {
  return NODE_DATA(n, add_scaled_node)->alpha >= 0 ? "AddBackward0" : "SubBackward0";
}
static const char *add_scaled_names(int i) { return i == 0 ? "AddBackward0" : i == 1 ? "SubBackward0" : NULL; }

static mt_status add_scaled_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  add_scaled_node *d = NODE_DATA(n, add_scaled_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  if (mt_node_wants(n, 0)) give(gin, 0, TO_INPUT_OF(&d->shapes, 0, g));
  if (mt_node_wants(n, 1)) give(gin, 1, TO_INPUT_OF(&d->shapes, 1, MULS(g, d->alpha)));
  return scope_close(sc);
}

static const mt_node_kind add_scaled_kind = {
    .name_of = add_scaled_name_of, .names = add_scaled_names, .backward = add_scaled_backward};

/* one node for a + alpha * b */
static mt_status grad_add_scaled(mt_tensor *a, mt_tensor *b, double alpha, mt_tensor *out, mt_tensor **result) {
  MT_TRY(check_out(a, out, "add"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_add_scaled(a, b, alpha, out, &r)));
  mt_status rec = MT_OK;
  if (mt_is_float(r->_dtype)) {
    mt_tensor *in[2] = {a, b};
    mt_node *n;
    rec = mt_node_make(&add_scaled_kind, in, 2, 1, &n);
    if (rec == MT_OK) {
      add_scaled_node *d = NODE_DATA(n, add_scaled_node);
      d->alpha = alpha;
      mt_input_shapes_keep(&d->shapes, a, b, r);
      rec = mt_node_attach_new(n, r);
    }
  }
  return hand_out(r, rec, out, result);
}

/* ---------------------------------------------------------------- where */
/* y = cond ? a : b, broadcast */
typedef struct where_node {
  mt_saved cond;
  mt_shape shape_a, shape_b;
} where_node;
MT_NODE_DATA_FITS(where_node);

static mt_status where_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  where_node *d = NODE_DATA(n, where_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *c = saved(sc, n, &d->cond), *z = ZEROS(g, NULL, 0, g->_dtype);
  if (mt_node_wants(n, 0)) {
    mt_tensor *ga = SUM_TO(WHERE(c, g, z), &d->shape_a);
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (mt_node_wants(n, 1)) {
    mt_tensor *gb = SUM_TO(WHERE(c, z, g), &d->shape_b);
    if (LIVE(sc)) give(gin, 1, gb);
  }
  return scope_close(sc);
}

static const mt_node_kind where_kind = {.name = "WhereBackward0", .backward = where_backward, .nsaved = 1};

static mt_status grad_where(mt_tensor *cond, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, "where"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_where(cond, a, b, NULL, &r)));
  mt_status rec = MT_OK;
  if (mt_is_float(r->_dtype)) {
    mt_tensor *in[2] = {a, b};
    mt_node *n;
    rec = mt_node_make(&where_kind, in, 2, 1, &n);
    if (rec == MT_OK) {
      where_node *d = NODE_DATA(n, where_node);
      mt_shape_of(&d->shape_a, a);
      mt_shape_of(&d->shape_b, b);
      mt_node_save(n, &d->cond, cond);
      rec = mt_node_attach_new(n, r);
    }
  }
  return hand_out(r, rec, NULL, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_elementwise_kinds[] = {&unary_kind, &binary_kind, &binary_number_kind, &add_scaled_kind,
                                                     &where_kind, NULL};

void mt_grad_register_elementwise(mt_autograd_ops *t) {
  t->unary = grad_unary;
  t->binary = grad_binary;
  t->binary_scalar = grad_binary_scalar;
  t->add_scaled = grad_add_scaled;
  t->where = grad_where;
}
