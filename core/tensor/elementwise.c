/* elementwise.c -- the CPU's unary, binary and where kernels. Loops are generated per op and
 * compute dtype from the expression lists below (the op list of core/moontorch.h names the ops;
 * the dispatch layer has converted operands to the compute dtype: float16/bfloat16 compute in
 * float32). */
#include "cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <tgmath.h>

/* ---------------------------------------------------------------- kernel context */
typedef struct {
  double p1, p2;
  int error; /* set by integer kernels: 1 division by zero, 2 negative integer power */
} ew_ctx;

/* The loop shape shared by every kernel: contiguous, scalar-broadcast and strided variants so the
 * compiler vectorises the common cases. EXPR reads x (and y), writes a value of type TO. */
#define BIN_KERNEL(NAME, TI, TO, EXPR)                                                      \
  static void NAME(void *ctx_, char **p, const int64_t *st, int64_t n) {                    \
    ew_ctx *ctx = ctx_;                                                                     \
    (void)ctx;                                                                              \
    char *o = p[0];                                                                         \
    const char *a = p[1], *b = p[2];                                                        \
    const int64_t so = st[0], sa = st[1], sb = st[2];                                       \
    if (so == sizeof(TO) && sa == sizeof(TI) && sb == sizeof(TI)) {                         \
      TO *O = (TO *)o;                                                                      \
      const TI *A = (const TI *)a, *B = (const TI *)b;                                      \
      for (int64_t i = 0; i < n; i++) { TI x = A[i], y = B[i]; O[i] = (TO)(EXPR); }         \
    } else if (so == sizeof(TO) && sa == sizeof(TI) && sb == 0) {                           \
      TO *O = (TO *)o;                                                                      \
      const TI *A = (const TI *)a;                                                          \
      const TI y = *(const TI *)b;                                                          \
      for (int64_t i = 0; i < n; i++) { TI x = A[i]; O[i] = (TO)(EXPR); }                   \
    } else if (so == sizeof(TO) && sa == 0 && sb == sizeof(TI)) {                           \
      TO *O = (TO *)o;                                                                      \
      const TI *B = (const TI *)b;                                                          \
      const TI x = *(const TI *)a;                                                          \
      for (int64_t i = 0; i < n; i++) { TI y = B[i]; O[i] = (TO)(EXPR); }                   \
    } else {                                                                                \
      for (int64_t i = 0; i < n; i++, o += so, a += sa, b += sb) {                          \
        TI x = *(const TI *)a, y = *(const TI *)b;                                          \
        *(TO *)o = (TO)(EXPR);                                                              \
      }                                                                                     \
    }                                                                                       \
  }

#define UN_KERNEL(NAME, TI, TO, EXPR)                                                       \
  static void NAME(void *ctx_, char **p, const int64_t *st, int64_t n) {                    \
    ew_ctx *ctx = ctx_;                                                                     \
    (void)ctx;                                                                              \
    char *o = p[0];                                                                         \
    const char *a = p[1];                                                                   \
    if (st[0] == sizeof(TO) && st[1] == sizeof(TI)) {                                       \
      TO *O = (TO *)o;                                                                      \
      const TI *A = (const TI *)a;                                                          \
      for (int64_t i = 0; i < n; i++) { TI x = A[i]; O[i] = (TO)(EXPR); }                   \
    } else {                                                                                \
      for (int64_t i = 0; i < n; i++, o += st[0], a += st[1]) {                             \
        TI x = *(const TI *)a;                                                              \
        *(TO *)o = (TO)(EXPR);                                                              \
      }                                                                                     \
    }                                                                                       \
  }

/* ---------------------------------------------------------------- scalar helpers */
static inline double gelu_d(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }
static inline double gelu_tanh_d(double x) {
  return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
static inline float gelu_f(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }
static inline float gelu_tanh_f(float x) {
  return 0.5f * x * (1.0f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
}
static inline double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }
/* logit: log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given (not NaN, not negative) */
static inline double logit_d(double x, double eps) {
  if (eps >= 0) x = x < eps ? eps : (x > 1 - eps ? 1 - eps : x);
  return log(x / (1 - x));
}
static inline float logit_f(float x, double eps) {
  if (eps >= 0) {
    float lo = (float)eps, hi = 1.0f - lo;
    x = x < lo ? lo : (x > hi ? hi : x);
  }
  return logf(x / (1.0f - x));
}
/* sinc: sin(pi x) / (pi x), 1 at 0 */
static inline double sinc_d(double x) { return x == 0 ? 1.0 : sin(M_PI * x) / (M_PI * x); }
static inline float sinc_f(float x) {
  float px = (float)M_PI * x;
  return x == 0 ? 1.0f : sinf(px) / px;
}
static inline double softplus_d(double x) { return x > 20 ? x : log1p(exp(x)); }
static inline float softplus_f(float x) { return x > 20.f ? x : log1pf(expf(x)); }
static inline double digamma_d(double x) {
  /* asymptotic series after shifting x above 10; reflection for negatives (PyTorch's calc_digamma idea) */
  if (x == 0) return copysign(INFINITY, -x);
  if (x < 0) {
    if (x == floor(x)) return NAN;
    return digamma_d(1 - x) - M_PI / tan(M_PI * x);
  }
  double r = 0;
  while (x < 10) { r -= 1 / x; x += 1; }
  double f = 1 / (x * x);
  return r + log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}
/* Hurwitz zeta(s, q) for s > 1: terms up to q + k > 9 (at least 9 of them), then the Euler-Maclaurin tail
   with the Bernoulli numbers B_2j / (2j)!; a pole at the non-positive integers (Cephes' zeta, as PyTorch) */
static double hurwitz_zeta(double s, double q) {
  static const double b2j[] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                               -691.0 / 1307674368000.0, 1.0 / 74724249600.0, -3617.0 / 10670622842880000.0,
                               43867.0 / 5109094217170944000.0, -174611.0 / 802857662698291200000.0};
  if (s == 1) return INFINITY;
  if (s < 1 || isnan(s) || isnan(q)) return NAN;
  if (q <= 0) {
    if (q == floor(q)) return INFINITY;
    if (s != floor(s)) return NAN; /* q^-s undefined */
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
  double fac = s, wp = pow(w, -s - 1); /* s (s+1) ... (s+2j-2) w^(-s-2j+1) */
  for (int j = 0; j < 10; j++) {
    double t = b2j[j] * fac * wp;
    tail += t;
    if (fabs(t) < fabs(sum + tail) * 1e-17) break;
    fac *= (s + 2 * j + 1) * (s + 2 * j + 2);
    wp /= w * w;
  }
  return sum + tail;
}
/* polygamma(n, x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x); n a whole number >= 0 (the front
   door checks it) */
static inline double polygamma_d(double n, double x) {
  if (n == 0) return digamma_d(x);
  double sign = fmod(n, 2) == 1 ? 1.0 : -1.0;
  return sign * exp(lgamma(n + 1)) * hurwitz_zeta(n + 1, x);
}
static inline double round_dec(double x, double d) {
  double m = pow(10.0, d);
  return d >= 0 ? nearbyint(x * m) / m : nearbyint(x / pow(10.0, -d)) * pow(10.0, -d);
}
static inline double nan_to_num_d(double x, double pinf, double ninf) {
  return isnan(x) ? 0.0 : (x == INFINITY ? pinf : (x == -INFINITY ? ninf : x));
}
static inline double clamp_d(double x, double lo, double hi) {
  if (isnan(x)) return x;
  if (!isnan(lo) && x < lo) x = lo;
  if (!isnan(hi) && x > hi) x = hi;
  return x;
}

#define FLT_SIGN(x) ((x) > 0 ? 1 : ((x) < 0 ? -1 : (x)))

/* Float unary ops: X(OP, expr-in-x of type T, where D is true for double). */
#define FLOAT_UNARY(X, T, SFX)                                                     \
  X(NEG, -x) X(ABS, fabs(x)) X(SIGN, (T)FLT_SIGN(x)) X(EXP, exp(x)) X(EXP2, exp2(x)) \
  X(LOG, log(x)) X(LOG2, log2(x)) X(LOG10, log10(x)) X(LOG1P, log1p(x))          \
  X(EXPM1, expm1(x)) X(SQRT, sqrt(x)) X(RSQRT, (T)1 / sqrt(x)) X(SIN, sin(x))      \
  X(COS, cos(x)) X(TAN, tan(x)) X(ASIN, asin(x)) X(ACOS, acos(x)) X(ATAN, atan(x)) \
  X(SINH, sinh(x)) X(COSH, cosh(x)) X(TANH, tanh(x)) X(SIGMOID, sigmoid_##SFX(x))  \
  X(LOGIT, logit_##SFX(x, ctx->p1)) X(RELU, x > 0 ? x : (x != x ? x : (T)0))        \
  X(GELU, gelu_##SFX(x))                                                           \
  X(GELU_TANH, gelu_tanh_##SFX(x)) X(SILU, x * sigmoid_##SFX(x)) X(ERF, erf(x))    \
  X(ERFC, erfc(x)) X(FLOOR, floor(x)) X(CEIL, ceil(x)) X(ROUND, nearbyint(x))      \
  X(TRUNC, trunc(x)) X(FRAC, x - trunc(x)) X(RECIPROCAL, (T)1 / x)                 \
  X(SQUARE, x * x) X(SINC, sinc_##SFX(x)) X(SOFTPLUS, softplus_##SFX(x))           \
  X(LGAMMA, lgamma(x))                                                             \
  X(DIGAMMA, (T)digamma_d(x)) X(POLYGAMMA, (T)polygamma_d(ctx->p1, x))                                                      \
  X(CLAMP, (T)clamp_d(x, ctx->p1, ctx->p2)) X(POW_SCALAR, pow(x, (T)ctx->p1))      \
  X(RPOW_SCALAR, pow((T)ctx->p1, x)) X(LEAKY_RELU, x > 0 ? x : x * (T)ctx->p1)     \
  X(ELU, x > 0 ? x : (T)ctx->p1 * expm1(x))                                        \
  X(HARDTANH, x < (T)ctx->p1 ? (T)ctx->p1 : (x > (T)ctx->p2 ? (T)ctx->p2 : x))     \
  X(THRESHOLD, x <= (T)ctx->p1 ? (T)ctx->p2 : x)                                   \
  X(ROUND_DECIMALS, (T)round_dec(x, ctx->p1))                                      \
  X(NAN_TO_NUM, (T)nan_to_num_d(x, ctx->p1, ctx->p2))

#define DEF_FU(OP, EXPR) UN_KERNEL(un_##OP##_f32, float, float, EXPR)
FLOAT_UNARY(DEF_FU, float, f)
#undef DEF_FU
#define DEF_FU(OP, EXPR) UN_KERNEL(un_##OP##_f64, double, double, EXPR)
FLOAT_UNARY(DEF_FU, double, d)
#undef DEF_FU

/* float32 ops with a vectorised loop in vmath.c (AVX2+FMA, chosen at run time in init_tables): that loop
 * takes contiguous operands, the scalar kernel above strided ones */
static mt_vmath_fn vmath_f32[MT_OP_COUNT];
#define DEF_VM(OP, name)                                                                  \
  static void un_##OP##_f32_vm(void *ctx, char **p, const int64_t *st, int64_t n) {      \
    if (st[0] == sizeof(float) && st[1] == sizeof(float))                                 \
      vmath_f32[MT_OP_##OP]((float *)p[0], (const float *)p[1], n);                       \
    else                                                                                  \
      un_##OP##_f32(ctx, p, st, n);                                                       \
  }
MT_VMATH_OPS(DEF_VM)
#undef DEF_VM

/* Unary ops that keep an integer dtype. */
static inline int64_t ipow(int64_t b, int64_t e, ew_ctx *ctx) {
  if (e < 0) {
    if (b == 1) return 1;
    if (b == -1) return (e & 1) ? -1 : 1;
    ctx->error = 2;
    return 0;
  }
  int64_t r = 1;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return r;
}
#define INT_UNARY(X, T)                                                                 \
  X(NEG, -x) X(ABS, x < 0 ? -x : x) X(SIGN, (x > 0) - (x < 0)) X(RELU, x > 0 ? x : 0)    \
  X(FLOOR, x) X(CEIL, x) X(ROUND, x) X(TRUNC, x) X(SQUARE, x * x) X(BITWISE_NOT, ~x)    \
  X(CLAMP, (T)clamp_d((double)x, ctx->p1, ctx->p2))                                      \
  X(POW_SCALAR, (T)ipow(x, (int64_t)ctx->p1, ctx))                                        \
  X(RPOW_SCALAR, (T)ipow((int64_t)ctx->p1, x, ctx))                                       \
  X(HARDTANH, x < ctx->p1 ? (T)ctx->p1 : (x > ctx->p2 ? (T)ctx->p2 : x))                  \
  X(THRESHOLD, x <= ctx->p1 ? (T)ctx->p2 : x) X(NAN_TO_NUM, x)

#define INT_TYPES(X) X(u8, uint8_t) X(i8, int8_t) X(i16, int16_t) X(i32, int32_t) X(i64, int64_t)
#define GEN_INT_UNARY(SFX, T) INT_UNARY(DEF_IU_##SFX, T)
#define DEF_IU_u8(OP, EXPR) UN_KERNEL(un_##OP##_u8, uint8_t, uint8_t, EXPR)
#define DEF_IU_i8(OP, EXPR) UN_KERNEL(un_##OP##_i8, int8_t, int8_t, EXPR)
#define DEF_IU_i16(OP, EXPR) UN_KERNEL(un_##OP##_i16, int16_t, int16_t, EXPR)
#define DEF_IU_i32(OP, EXPR) UN_KERNEL(un_##OP##_i32, int32_t, int32_t, EXPR)
#define DEF_IU_i64(OP, EXPR) UN_KERNEL(un_##OP##_i64, int64_t, int64_t, EXPR)
INT_TYPES(GEN_INT_UNARY)

/* Predicates: any float type in, bool out. */
/* (isinf of -inf may be -1, not 1: every predicate is compared to 0) */
#define PRED_UNARY(X) X(ISNAN, x != x) X(ISINF, isinf(x) != 0) X(ISFINITE, isfinite(x) != 0) X(LOGICAL_NOT, !x)
#define DEF_PRED_f32(OP, EXPR) UN_KERNEL(un_##OP##_f32, float, uint8_t, EXPR)
#define DEF_PRED_f64(OP, EXPR) UN_KERNEL(un_##OP##_f64, double, uint8_t, EXPR)
PRED_UNARY(DEF_PRED_f32)
PRED_UNARY(DEF_PRED_f64)
UN_KERNEL(un_LOGICAL_NOT_b, uint8_t, uint8_t, !x)
#define DEF_LNOT(SFX, T) UN_KERNEL(un_LOGICAL_NOT_##SFX, T, uint8_t, !x)
INT_TYPES(DEF_LNOT)
UN_KERNEL(un_BITWISE_NOT_b, uint8_t, uint8_t, !x)

static mt_loop_fn unary_f32[MT_OP_COUNT], unary_f64[MT_OP_COUNT];
static mt_loop_fn unary_int[MT_OP_COUNT][MT_DTYPE_MAX];
static mt_loop_fn lnot_int[MT_DTYPE_MAX];

/* ---------------------------------------------------------------- binary kernels */
static inline double div_floor_d(double a, double b) {
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
static inline double remainder_d(double a, double b) {
  double r = fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static inline double maximum_d(double a, double b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
static inline double minimum_d(double a, double b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
static inline double xlogy_d(double a, double b) { return b != b ? b : (a == 0 ? 0 : a * log(b)); }

#define FLOAT_BINARY(X, T)                                                                         \
  X(ADD, x + y) X(SUB, x - y) X(MUL, x * y) X(DIV, x / y) X(DIV_TRUNC, trunc(x / y))               \
  X(DIV_FLOOR, (T)div_floor_d(x, y)) X(POW, pow(x, y)) X(MAXIMUM, (T)maximum_d(x, y))              \
  X(MINIMUM, (T)minimum_d(x, y)) X(FMOD, fmod(x, y)) X(REMAINDER, (T)remainder_d(x, y))            \
  X(ATAN2, atan2(x, y)) X(HYPOT, hypot(x, y)) X(FMAX, fmax(x, y)) X(FMIN, fmin(x, y))              \
  X(XLOGY, (T)xlogy_d(x, y)) X(COPYSIGN, copysign(x, y))
#define CMP_BINARY(X)                                                                              \
  X(EQ, x == y) X(NE, x != y) X(LT, x < y) X(LE, x <= y) X(GT, x > y) X(GE, x >= y)                \
  X(LOGICAL_AND, (x != 0) && (y != 0)) X(LOGICAL_OR, (x != 0) || (y != 0))                        \
  X(LOGICAL_XOR, (x != 0) != (y != 0))

#define DEF_FB_f32(OP, EXPR) BIN_KERNEL(bin_##OP##_f32, float, float, EXPR)
#define DEF_FB_f64(OP, EXPR) BIN_KERNEL(bin_##OP##_f64, double, double, EXPR)
FLOAT_BINARY(DEF_FB_f32, float)
FLOAT_BINARY(DEF_FB_f64, double)

/* integer arithmetic: division by zero is flagged, never a trap */
#define IDIV_TRUNC(T, x, y) ((y) == 0 ? (ctx->error = 1, (T)0) : (T)((x) / (y)))
#define IDIV_FLOOR(T, x, y)                                                                        \
  ((y) == 0 ? (ctx->error = 1, (T)0)                                                               \
            : (T)(((x) % (y) != 0 && (((x) < 0) != ((y) < 0))) ? (x) / (y) - 1 : (x) / (y)))
#define IMOD(T, x, y) ((y) == 0 ? (ctx->error = 1, (T)0) : (T)((x) % (y)))
#define IREM(T, x, y)                                                                              \
  ((y) == 0 ? (ctx->error = 1, (T)0)                                                               \
            : (T)(((x) % (y) != 0 && (((x) % (y) < 0) != ((y) < 0))) ? (x) % (y) + (y) : (x) % (y)))
#define INT_BINARY(X, T)                                                                           \
  X(ADD, x + y) X(SUB, x - y) X(MUL, x * y) X(DIV_TRUNC, IDIV_TRUNC(T, x, y))                      \
  X(DIV_FLOOR, IDIV_FLOOR(T, x, y)) X(POW, (T)ipow(x, y, ctx)) X(MAXIMUM, x > y ? x : y)          \
  X(MINIMUM, x < y ? x : y) X(FMOD, IMOD(T, x, y)) X(REMAINDER, IREM(T, x, y))                     \
  X(FMAX, x > y ? x : y) X(FMIN, x < y ? x : y) X(BITWISE_AND, x & y) X(BITWISE_OR, x | y)         \
  X(BITWISE_XOR, x ^ y)
#define DEF_IB_u8(OP, EXPR) BIN_KERNEL(bin_##OP##_u8, uint8_t, uint8_t, EXPR)
#define DEF_IB_i8(OP, EXPR) BIN_KERNEL(bin_##OP##_i8, int8_t, int8_t, EXPR)
#define DEF_IB_i16(OP, EXPR) BIN_KERNEL(bin_##OP##_i16, int16_t, int16_t, EXPR)
#define DEF_IB_i32(OP, EXPR) BIN_KERNEL(bin_##OP##_i32, int32_t, int32_t, EXPR)
#define DEF_IB_i64(OP, EXPR) BIN_KERNEL(bin_##OP##_i64, int64_t, int64_t, EXPR)
#define GEN_INT_BINARY(SFX, T) INT_BINARY(DEF_IB_##SFX, T)
INT_TYPES(GEN_INT_BINARY)

#define DEF_CB_f32(OP, EXPR) BIN_KERNEL(bin_##OP##_f32, float, uint8_t, EXPR)
#define DEF_CB_f64(OP, EXPR) BIN_KERNEL(bin_##OP##_f64, double, uint8_t, EXPR)
#define DEF_CB_u8(OP, EXPR) BIN_KERNEL(bin_##OP##_u8, uint8_t, uint8_t, EXPR)
#define DEF_CB_i8(OP, EXPR) BIN_KERNEL(bin_##OP##_i8, int8_t, uint8_t, EXPR)
#define DEF_CB_i16(OP, EXPR) BIN_KERNEL(bin_##OP##_i16, int16_t, uint8_t, EXPR)
#define DEF_CB_i32(OP, EXPR) BIN_KERNEL(bin_##OP##_i32, int32_t, uint8_t, EXPR)
#define DEF_CB_i64(OP, EXPR) BIN_KERNEL(bin_##OP##_i64, int64_t, uint8_t, EXPR)
CMP_BINARY(DEF_CB_f32)
CMP_BINARY(DEF_CB_f64)
#define GEN_CMP(SFX, T) CMP_BINARY(DEF_CB_##SFX)
INT_TYPES(GEN_CMP)

/* kernels by [op][compute dtype]; bool computes with the uint8 kernels */
static mt_loop_fn binary_table[MT_OP_COUNT][MT_DTYPE_MAX];

static void init_tables(void) {
#define SET_FU(OP, EXPR) unary_f32[MT_OP_##OP] = un_##OP##_f32; unary_f64[MT_OP_##OP] = un_##OP##_f64;
  FLOAT_UNARY(SET_FU, float, f)
  PRED_UNARY(SET_FU)
#undef SET_FU
#define SET_VM(OP, name) \
  if ((vmath_f32[MT_OP_##OP] = mt_vmath_f32(MT_OP_##OP))) unary_f32[MT_OP_##OP] = un_##OP##_f32_vm;
  MT_VMATH_OPS(SET_VM)
#undef SET_VM
#define SET_IU_u8(OP, EXPR) unary_int[MT_OP_##OP][MT_UINT8] = un_##OP##_u8;
#define SET_IU_i8(OP, EXPR) unary_int[MT_OP_##OP][MT_INT8] = un_##OP##_i8;
#define SET_IU_i16(OP, EXPR) unary_int[MT_OP_##OP][MT_INT16] = un_##OP##_i16;
#define SET_IU_i32(OP, EXPR) unary_int[MT_OP_##OP][MT_INT32] = un_##OP##_i32;
#define SET_IU_i64(OP, EXPR) unary_int[MT_OP_##OP][MT_INT64] = un_##OP##_i64;
  INT_UNARY(SET_IU_u8, uint8_t) INT_UNARY(SET_IU_i8, int8_t) INT_UNARY(SET_IU_i16, int16_t)
  INT_UNARY(SET_IU_i32, int32_t) INT_UNARY(SET_IU_i64, int64_t)
  lnot_int[MT_UINT8] = un_LOGICAL_NOT_u8; lnot_int[MT_INT8] = un_LOGICAL_NOT_i8;
  lnot_int[MT_INT16] = un_LOGICAL_NOT_i16; lnot_int[MT_INT32] = un_LOGICAL_NOT_i32;
  lnot_int[MT_INT64] = un_LOGICAL_NOT_i64; lnot_int[MT_BOOL] = un_LOGICAL_NOT_b;
  unary_int[MT_OP_BITWISE_NOT][MT_BOOL] = un_BITWISE_NOT_b;
#define SET_FB(OP, EXPR) binary_table[MT_OP_##OP][MT_FLOAT32] = bin_##OP##_f32; \
  binary_table[MT_OP_##OP][MT_FLOAT64] = bin_##OP##_f64;
  FLOAT_BINARY(SET_FB, float)
  CMP_BINARY(SET_FB)
#undef SET_FB
#define SET_IB(SFX, DT, OP) binary_table[MT_OP_##OP][DT] = bin_##OP##_##SFX;
#define SET_IB_u8(OP, EXPR) SET_IB(u8, MT_UINT8, OP) SET_IB(u8, MT_BOOL, OP)
#define SET_IB_i8(OP, EXPR) SET_IB(i8, MT_INT8, OP)
#define SET_IB_i16(OP, EXPR) SET_IB(i16, MT_INT16, OP)
#define SET_IB_i32(OP, EXPR) SET_IB(i32, MT_INT32, OP)
#define SET_IB_i64(OP, EXPR) SET_IB(i64, MT_INT64, OP)
  INT_BINARY(SET_IB_u8, uint8_t) INT_BINARY(SET_IB_i8, int8_t) INT_BINARY(SET_IB_i16, int16_t)
  INT_BINARY(SET_IB_i32, int32_t) INT_BINARY(SET_IB_i64, int64_t)
  CMP_BINARY(SET_IB_u8) CMP_BINARY(SET_IB_i8) CMP_BINARY(SET_IB_i16) CMP_BINARY(SET_IB_i32)
  CMP_BINARY(SET_IB_i64)
}
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static mt_status int_error(const ew_ctx *c, const char *op) {
  if (c->error == 1) return mt_error(MT_EINVAL, "%s: ZeroDivisionError (integer division by zero)", op);
  if (c->error == 2) return mt_error(MT_EINVAL, "%s: integers to negative integer powers are not allowed", op);
  return MT_OK;
}

typedef struct { size_t item; } where_ctx;
static void where_loop(void *ctx_, char **p, const int64_t *st, int64_t n) {
  size_t item = ((where_ctx *)ctx_)->item;
  char *o = p[0];
  const char *c = p[1], *a = p[2], *b = p[3];
  for (int64_t i = 0; i < n; i++, o += st[0], c += st[1], a += st[2], b += st[3])
    memcpy(o, *(const uint8_t *)c ? a : b, item);
}

/* ---------------------------------------------------------------- running a loop */
/* the kernel tables, made once (a load on every call after that, not a call) */
static inline void tables_ready(void) {
  static int ready;
  if (__builtin_expect(__atomic_load_n(&ready, __ATOMIC_ACQUIRE), 1)) return;
  pthread_once(&tables_once, init_tables);
  __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

/* Run `fn` with out = ops[0] over out's shape. Small operands that are each either contiguous
 * with out's element count or a single element run as one flat loop (stride 0 for a single
 * element): no iterator. */
static inline __attribute__((always_inline)) void run(mt_loop_fn fn, void *ctx, const mt_tensor *const *ops,
                                                      int nops) {
  const mt_tensor *out = ops[0];
  int64_t n = out->_numel;
  if ((out->_flags & MT_TENSOR_CONTIGUOUS) && n < 2 * MT_GRAIN) {
    char *p[MT_ITER_MAX_OPS];
    int64_t st[MT_ITER_MAX_OPS];
    bool flat = true;
    for (int k = 0; k < nops && flat; k++) {
      const mt_tensor *t = ops[k];
      p[k] = t->_data;
      if (t->_numel == n && (t->_flags & MT_TENSOR_CONTIGUOUS)) st[k] = (int64_t)mt_itemsize(t->_dtype);
      else if (t->_numel == 1) st[k] = 0;
      else flat = false;
    }
    if (flat) {
      if (n) fn(ctx, p, st, n);
      return;
    }
  }
  mt_iter it;
  mt_iter_init(&it, ops, nops, out->_sizes, out->_ndim);
  mt_iter_run(&it, fn, ctx, MT_GRAIN);
}

/* ---------------------------------------------------------------- the kernels */
/* the loop of a unary op for input dtype dt: float32/float64 compute in their type; integers in
 * theirs; bool through the uint8 loops, but for logical_not and bitwise_not */
static mt_loop_fn unary_loop(mt_op op, int dt) {
  if (dt == MT_FLOAT32) return unary_f32[op];
  if (dt == MT_FLOAT64) return unary_f64[op];
  if (op == MT_OP_LOGICAL_NOT) return lnot_int[dt];
  if (dt == MT_BOOL && op != MT_OP_BITWISE_NOT) dt = MT_UINT8;
  return unary_int[op][dt];
}

mt_status mt_cpu_unary(mt_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2) {
  tables_ready();
  mt_loop_fn fn = unary_loop(op, a->_dtype);
  if (!fn) return mt_error(MT_EDTYPE, "%s: not implemented for '%s'", MT_OP_NAME(op), mt_dtype_name(a->_dtype));
  ew_ctx ctx = {p1, p2, 0};
  const mt_tensor *ops[2] = {out, a};
  run(fn, &ctx, ops, 2);
  return int_error(&ctx, MT_OP_NAME(op));
}

mt_status mt_cpu_binary(mt_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b) {
  tables_ready();
  mt_loop_fn fn = binary_table[op][a->_dtype];
  if (!fn) return mt_error(MT_EDTYPE, "%s: not implemented for '%s'", MT_OP_NAME(op), mt_dtype_name(a->_dtype));
  ew_ctx ctx = {0, 0, 0};
  const mt_tensor *ops[3] = {out, a, b};
  run(fn, &ctx, ops, 3);
  if (ctx.error) return int_error(&ctx, MT_OP_NAME(op));
  if (a->_dtype == MT_BOOL && out->_dtype == MT_BOOL && (out->_flags & MT_TENSOR_CONTIGUOUS)) {
    /* bool arithmetic ran in uint8: normalise to 0/1 */
    uint8_t *p = (uint8_t *)out->_data;
    for (int64_t i = 0; i < out->_numel; i++) p[i] = p[i] != 0;
  }
  return MT_OK;
}

mt_status mt_cpu_where(mt_tensor *out, const mt_tensor *cond, const mt_tensor *a, const mt_tensor *b) {
  where_ctx wc = {mt_itemsize(out->_dtype)};
  const mt_tensor *ops[4] = {out, cond, a, b};
  run(where_loop, &wc, ops, 4);
  return MT_OK;
}

/* g * sign(x) (abs), g * (x > 0) (relu): the float operations of their backward formulas (g times
 * the sign, g times the mask), in one pass, split over the pool when large. g, x and out of one shape
 * and dtype, contiguous. */
typedef struct {
  mt_op op;
  mt_tensor *out;
  const mt_tensor *g, *x;
} unary_grad_job;
static void unary_grad_run(void *ctx, int64_t b, int64_t e) {
  const unary_grad_job *j = ctx;
  mt_op op = j->op;
#define FUSED_LOOP(T)                                                               \
  {                                                                                 \
    const T *restrict G = (const T *)j->g->_data, *restrict X = (const T *)j->x->_data; \
    T *restrict R = (T *)j->out->_data; /* a new tensor */                          \
    if (op == MT_OP_ABS)                                                            \
      for (int64_t i = b; i < e; i++) {                                             \
        T v = X[i];                                                                 \
        R[i] = G[i] * (T)(v > 0 ? 1 : (v < 0 ? -1 : v));                            \
      }                                                                             \
    else /* branch-free, so that it vectorises: random signs defeat a branch */      \
      for (int64_t i = b; i < e; i++) {                                             \
        T m = X[i] > 0 ? (T)1 : (T)0;                                               \
        R[i] = G[i] * m;                                                            \
      }                                                                             \
  }
  if (j->g->_dtype == MT_FLOAT32) FUSED_LOOP(float) else if (j->g->_dtype == MT_FLOAT64) FUSED_LOOP(double)
  else {
    /* issue 25: bfloat16 / float16, the formula's float32 operations on chunks widened in place, each
     * product rounded once (g times a mask or a sign is exact) */
    const int bf = j->g->_dtype == MT_BFLOAT16;
    const uint16_t *G = (const uint16_t *)j->g->_data, *X = (const uint16_t *)j->x->_data;
    uint16_t *R = (uint16_t *)j->out->_data;
    float gb[256], xb[256];
    for (int64_t c = b; c < e; c += 256) {
      int64_t n = e - c < 256 ? e - c : 256;
      if (bf) { mt_cpu_bf16_to_f32(gb, G + c, n); mt_cpu_bf16_to_f32(xb, X + c, n); }
      else { mt_cpu_f16_to_f32(gb, G + c, n); mt_cpu_f16_to_f32(xb, X + c, n); }
      if (op == MT_OP_ABS)
        for (int64_t i = 0; i < n; i++) {
          float v = xb[i];
          gb[i] = gb[i] * (v > 0 ? 1.0f : (v < 0 ? -1.0f : v));
        }
      else /* branch-free, as above */
        for (int64_t i = 0; i < n; i++) {
          float m = xb[i] > 0 ? 1.0f : 0.0f;
          gb[i] = gb[i] * m;
        }
      if (bf) mt_cpu_f32_to_bf16(R + c, gb, n); else mt_cpu_f32_to_f16(R + c, gb, n);
    }
  }
#undef FUSED_LOOP
}
mt_status mt_cpu_unary_grad(mt_op op, mt_tensor *out, const mt_tensor *g, const mt_tensor *x) {
  if (op != MT_OP_ABS && op != MT_OP_RELU) return MT_ENOTIMPL;
  unary_grad_job j = {op, out, g, x};
  mt_parallel_for(g->_numel, MT_GRAIN, unary_grad_run, &j);
  return MT_OK;
}
