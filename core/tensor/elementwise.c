/* elementwise.c -- unary, binary, scalar and ternary elementwise ops with broadcasting and
 * PyTorch's type promotion. Kernels are generated per op and compute dtype from the op lists
 * below; float16/bfloat16 compute in float32 (converted on the way in and out). */
#include "../grad/grad.h"

#include <pthread.h>
#include <stdlib.h>
#include <tgmath.h>

/* ---------------------------------------------------------------- names */
static const char *const unary_names[] = {
#define X(NAME, name) #name,
    MT_UNARY_OP_LIST(X)
#undef X
};
static const char *const binary_names[] = {
#define X(NAME, name) #name,
    MT_BINARY_OP_LIST(X)
#undef X
};
const char *mt_unary_op_name(int op) { return op >= 0 && op < MT_UNARY_OP_COUNT ? unary_names[op] : "?"; }
const char *mt_binary_op_name(int op) { return op >= 0 && op < MT_BINARY_OP_COUNT ? binary_names[op] : "?"; }

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
static inline double softplus_d(double x) { return x > 20 ? x : log1p(exp(x)); }
static inline float softplus_f(float x) { return x > 20.f ? x : log1pf(expf(x)); }
static inline double digamma_d(double x) {
  /* asymptotic series after shifting x above 6; reflection for negatives (PyTorch's calc_digamma idea) */
  if (x == 0) return copysign(INFINITY, -x);
  if (x < 0) {
    if (x == floor(x)) return NAN;
    return digamma_d(1 - x) - M_PI / tan(M_PI * x);
  }
  double r = 0;
  while (x < 6) { r -= 1 / x; x += 1; }
  double f = 1 / (x * x);
  return r + log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}
static inline double round_half_even(double x) { return nearbyint(x); }
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
  X(RELU, x > 0 ? x : (x != x ? x : (T)0)) X(GELU, gelu_##SFX(x))                    \
  X(GELU_TANH, gelu_tanh_##SFX(x)) X(SILU, x * sigmoid_##SFX(x)) X(ERF, erf(x))    \
  X(ERFC, erfc(x)) X(FLOOR, floor(x)) X(CEIL, ceil(x)) X(ROUND, nearbyint(x))      \
  X(TRUNC, trunc(x)) X(FRAC, x - trunc(x)) X(RECIPROCAL, (T)1 / x)                 \
  X(SQUARE, x * x) X(SOFTPLUS, softplus_##SFX(x)) X(LGAMMA, lgamma(x))             \
  X(DIGAMMA, (T)digamma_d(x))                                                      \
  X(CLAMP, (T)clamp_d(x, ctx->p1, ctx->p2)) X(POW_SCALAR, pow(x, (T)ctx->p1))      \
  X(RPOW_SCALAR, pow((T)ctx->p1, x)) X(LEAKY_RELU, x > 0 ? x : x * (T)ctx->p1)     \
  X(ELU, x > 0 ? x : (T)ctx->p1 * expm1(x))                                        \
  X(HARDTANH, x < (T)ctx->p1 ? (T)ctx->p1 : (x > (T)ctx->p2 ? (T)ctx->p2 : x))     \
  X(THRESHOLD, x <= (T)ctx->p1 ? (T)ctx->p2 : x)                                   \
  X(ROUND_DECIMALS, (T)round_dec(x, ctx->p1))                                      \
  X(NAN_TO_NUM, (T)nan_to_num_d(x, ctx->p1, ctx->p2))

#define DEF_FU(OP, EXPR) UN_KERNEL(un_##OP##_CUR, CUR_T, CUR_T, EXPR)
/* float32 */
#define CUR_T float
#undef DEF_FU
#define DEF_FU(OP, EXPR) UN_KERNEL(un_##OP##_f32, float, float, EXPR)
FLOAT_UNARY(DEF_FU, float, f)
#undef DEF_FU
#define DEF_FU(OP, EXPR) UN_KERNEL(un_##OP##_f64, double, double, EXPR)
FLOAT_UNARY(DEF_FU, double, d)
#undef DEF_FU
#undef CUR_T

/* float32 ops with a vectorised loop in vmath.c (AVX2+FMA, chosen at run time in init_tables): that loop
 * takes contiguous operands, the scalar kernel above strided ones */
static mt_vmath_fn vmath_f32[MT_UNARY_OP_COUNT];
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
#define DEF_IU(OP, EXPR) UN_KERNEL(un_##OP##_CURI, CUR_TI, CUR_TI, EXPR)
#define GEN_INT_UNARY(SFX, T) INT_UNARY(DEF_IU_##SFX, T)
#define DEF_IU_u8(OP, EXPR) UN_KERNEL(un_##OP##_u8, uint8_t, uint8_t, EXPR)
#define DEF_IU_i8(OP, EXPR) UN_KERNEL(un_##OP##_i8, int8_t, int8_t, EXPR)
#define DEF_IU_i16(OP, EXPR) UN_KERNEL(un_##OP##_i16, int16_t, int16_t, EXPR)
#define DEF_IU_i32(OP, EXPR) UN_KERNEL(un_##OP##_i32, int32_t, int32_t, EXPR)
#define DEF_IU_i64(OP, EXPR) UN_KERNEL(un_##OP##_i64, int64_t, int64_t, EXPR)
INT_TYPES(GEN_INT_UNARY)

/* Predicates: any float type in, bool out. */
#define PRED_UNARY(X) X(ISNAN, x != x) X(ISINF, isinf(x)) X(ISFINITE, isfinite(x)) X(LOGICAL_NOT, !x)
#define DEF_PRED_f32(OP, EXPR) UN_KERNEL(un_##OP##_f32, float, uint8_t, EXPR)
#define DEF_PRED_f64(OP, EXPR) UN_KERNEL(un_##OP##_f64, double, uint8_t, EXPR)
PRED_UNARY(DEF_PRED_f32)
PRED_UNARY(DEF_PRED_f64)
UN_KERNEL(un_LOGICAL_NOT_b, uint8_t, uint8_t, !x)
#define DEF_LNOT(SFX, T) UN_KERNEL(un_LOGICAL_NOT_##SFX, T, uint8_t, !x)
INT_TYPES(DEF_LNOT)
UN_KERNEL(un_BITWISE_NOT_b, uint8_t, uint8_t, !x)

/* ---------------------------------------------------------------- unary dispatch */
typedef enum { U_FLOAT, U_KEEP, U_PRED, U_BITS } ukind;
/* Which ops keep an integer dtype (U_KEEP), which give bool (U_PRED), bitwise (U_BITS);
 * the rest are float-only and turn integers into the default float dtype. */
static ukind unary_kind(int op) {
  switch (op) {
    case MT_OP_NEG: case MT_OP_ABS: case MT_OP_SIGN: case MT_OP_RELU: case MT_OP_FLOOR: case MT_OP_CEIL:
    case MT_OP_ROUND: case MT_OP_TRUNC: case MT_OP_SQUARE: case MT_OP_CLAMP: case MT_OP_POW_SCALAR:
    case MT_OP_HARDTANH: case MT_OP_THRESHOLD: case MT_OP_NAN_TO_NUM:
      return U_KEEP;
    case MT_OP_ISNAN: case MT_OP_ISINF: case MT_OP_ISFINITE: case MT_OP_LOGICAL_NOT:
      return U_PRED;
    case MT_OP_BITWISE_NOT:
      return U_BITS;
    default:
      return U_FLOAT;
  }
}

static mt_loop_fn unary_f32[MT_UNARY_OP_COUNT], unary_f64[MT_UNARY_OP_COUNT];
static mt_loop_fn unary_int[MT_UNARY_OP_COUNT][MT_DTYPE_MAX];
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

typedef enum { B_ARITH, B_FLOAT, B_CMP, B_BITS } bkind;
static bkind binary_kind(int op) {
  switch (op) {
    case MT_OP_DIV: case MT_OP_ATAN2: case MT_OP_HYPOT: case MT_OP_XLOGY: case MT_OP_COPYSIGN:
      return B_FLOAT;
    case MT_OP_EQ: case MT_OP_NE: case MT_OP_LT: case MT_OP_LE: case MT_OP_GT: case MT_OP_GE:
    case MT_OP_LOGICAL_AND: case MT_OP_LOGICAL_OR: case MT_OP_LOGICAL_XOR:
      return B_CMP;
    case MT_OP_BITWISE_AND: case MT_OP_BITWISE_OR: case MT_OP_BITWISE_XOR:
      return B_BITS;
    default:
      return B_ARITH;
  }
}

/* kernels by [op][compute dtype]; bool computes with the uint8 kernels */
static mt_loop_fn binary_table[MT_BINARY_OP_COUNT][MT_DTYPE_MAX];

static void init_tables(void) {
#define SET_FU(OP, EXPR) unary_f32[MT_OP_##OP] = un_##OP##_f32; unary_f64[MT_OP_##OP] = un_##OP##_f64;
  FLOAT_UNARY(SET_FU, float, f)
  PRED_UNARY(SET_FU)
#undef SET_FU
#define SET_VM(OP, name) \
  if ((vmath_f32[MT_OP_##OP] = mt_vmath_f32(MT_OP_##OP))) unary_f32[MT_OP_##OP] = un_##OP##_f32_vm;
  MT_VMATH_OPS(SET_VM)
#undef SET_VM
#define SET_IU(OP, EXPR) unary_int[MT_OP_##OP][CUR_DT] = CUR_FN(OP);
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

/* ---------------------------------------------------------------- drivers */
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
static mt_status int_error(const ew_ctx *c, const char *op) {
  if (c->error == 1) return mt_error(MT_EINVAL, "%s: ZeroDivisionError (integer division by zero)", op);
  if (c->error == 2) return mt_error(MT_EINVAL, "%s: integers to negative integer powers are not allowed", op);
  return MT_OK;
}

/* Run `fn` with out = ops[0] over the broadcast shape. */
static void run(mt_loop_fn fn, void *ctx, mt_tensor **ops, int nops, mt_tensor *out) {
  mt_iter it;
  /* fast path: all contiguous with the same numel and no broadcasting */
  bool flat = (out->_flags & MT_TENSOR_CONTIGUOUS) != 0;
  for (int k = 1; k < nops && flat; k++)
    flat = (ops[k]->_flags & MT_TENSOR_CONTIGUOUS) && ops[k]->_numel == out->_numel;
  if (flat && out->_numel < 2 * MT_GRAIN) {
    char *p[MT_ITER_MAX_OPS];
    int64_t st[MT_ITER_MAX_OPS];
    for (int k = 0; k < nops; k++) {
      p[k] = ops[k]->_data;
      st[k] = (int64_t)mt_itemsize(ops[k]->_dtype);
    }
    if (out->_numel) fn(ctx, p, st, out->_numel);
    return;
  }
  mt_iter_init(&it, ops, nops, out->_sizes, out->_ndim);
  mt_iter_run(&it, fn, ctx, MT_GRAIN);
}

/* Convert t to dtype if needed: a new reference either way. */
static mt_status as_dtype(mt_tensor *t, int dtype, mt_tensor **r) {
  if (t->_dtype == dtype) { *r = mt_tensor_retain(t); return MT_OK; }
  return mt_to_dtype(t, dtype, 1, r);
}

/* Write `res` (compute dtype) into `out` or hand it back as the result. */
static mt_status finish(mt_tensor *res, mt_tensor *out, mt_tensor **result, const char *op, int out_dtype) {
  if (res->_dtype != out_dtype) {
    mt_tensor *conv;
    mt_status s = mt_to_dtype(res, out_dtype, 0, &conv);
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

static mt_status unary_impl(int op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result) {
  if (op < 0 || op >= MT_UNARY_OP_COUNT) return mt_error(MT_EINVAL, "unary: unknown op %d", op);
  const char *name = unary_names[op];
  MT_TRY(mt_check_tensor(a, name, "input"));
  pthread_once(&tables_once, init_tables);
  ukind kind = unary_kind(op);
  int in = a->_dtype;
  int rdt; /* result dtype */
  int cdt; /* compute dtype */
  mt_loop_fn fn = NULL;
  if (op == MT_OP_NEG && in == MT_BOOL)
    return mt_error(MT_EDTYPE, "neg: negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.");
  if (op == MT_OP_POW_SCALAR && !mt_is_float(in) && p1 != floor(p1)) kind = U_FLOAT;
  if (kind == U_BITS) {
    if (mt_is_float(in)) return mt_error(MT_EDTYPE, "bitwise_not: not implemented for '%s'", mt_dtype_name(in));
    rdt = cdt = in;
    fn = unary_int[op][in];
  } else if (kind == U_PRED) {
    rdt = MT_BOOL;
    if (mt_is_float(in)) {
      cdt = in == MT_FLOAT64 ? MT_FLOAT64 : MT_FLOAT32;
      fn = cdt == MT_FLOAT64 ? unary_f64[op] : unary_f32[op];
    } else {
      cdt = in;
      if (op == MT_OP_LOGICAL_NOT) fn = lnot_int[in];
      else { /* integers are never nan/inf */
        mt_tensor *r;
        MT_TRY(mt_out_or_new(out, a->_sizes, a->_ndim, MT_BOOL, name, &r));
        mt_status s = mt_fill_(r, op == MT_OP_ISFINITE);
        if (s) { mt_tensor_release(r); return s; }
        return mt_give(r, result);
      }
    }
  } else if (kind == U_KEEP && !mt_is_float(in)) {
    rdt = cdt = in;
    if (in == MT_BOOL) {
      /* bool: abs/relu/sign/floor/... are identities, others go through uint8 */
      cdt = MT_UINT8;
    }
    fn = unary_int[op][cdt];
    if (!fn) return mt_error(MT_EDTYPE, "%s: not implemented for '%s'", name, mt_dtype_name(in));
  } else {
    rdt = mt_is_float(in) ? in : mt_get_default_dtype();
    cdt = rdt == MT_FLOAT64 ? MT_FLOAT64 : MT_FLOAT32;
    fn = cdt == MT_FLOAT64 ? unary_f64[op] : unary_f32[op];
    if (!fn) return mt_error(MT_EDTYPE, "%s: not implemented for '%s'", name, mt_dtype_name(in));
  }
  if (out) MT_TRY(mt_check_tensor(out, name, "out"));
  MT_TRY(check_cast(rdt, out, name));
  /* input in the compute dtype */
  mt_tensor *x;
  int in_cdt = kind == U_PRED ? cdt : cdt;
  MT_TRY(as_dtype(a, in_cdt == MT_UINT8 && in == MT_BOOL ? MT_BOOL : in_cdt, &x));
  /* the result buffer: straight into out when dtypes match and it does not overlap in a bad way */
  int res_cdt = kind == U_PRED ? MT_BOOL : cdt;
  mt_tensor *res;
  mt_status s;
  bool direct = out && out->_dtype == (res_cdt == MT_UINT8 && rdt == MT_BOOL ? MT_BOOL : res_cdt) &&
                out->_dtype == rdt;
  if (direct) {
    s = mt_prepare_out(out, a->_sizes, a->_ndim, rdt, name);
    if (s == MT_OK && out != x && mt_may_overlap(out, x)) {
      /* partial overlap: compute into a temporary */
      direct = false;
    }
    if (s) { mt_tensor_release(x); return s; }
  }
  if (direct) res = mt_tensor_retain(out);
  else {
    s = mt_new(a->_sizes, a->_ndim, res_cdt == MT_UINT8 && rdt == MT_BOOL ? MT_BOOL : res_cdt, name, &res);
    if (s) { mt_tensor_release(x); return s; }
  }
  ew_ctx ctx = {p1, p2, 0};
  mt_tensor *ops[2] = {res, x};
  run(fn, &ctx, ops, 2, res);
  mt_tensor_release(x);
  if (ctx.error) { mt_tensor_release(res); return int_error(&ctx, name); }
  if (direct) {
    mt_bump_version(out);
    mt_tensor_release(res);
    if (result) *result = mt_tensor_retain(out);
    return MT_OK;
  }
  if (rdt == MT_BOOL && res->_dtype == MT_UINT8) res->_dtype = MT_BOOL;
  return finish(res, out, result, name, out ? out->_dtype : rdt);
}

/* The core binary driver: a and b already tensors (b may be a wrapped scalar on the stack). */
static mt_status binary_impl(int op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  const char *name = binary_names[op];
  pthread_once(&tables_once, init_tables);
  int common = mt_result_type(a, b, -1);
  bkind kind = binary_kind(op);
  int rdt, cdt;
  if (kind == B_FLOAT) {
    rdt = mt_is_float(common) ? common : mt_get_default_dtype();
    cdt = rdt;
  } else if (kind == B_CMP) {
    rdt = MT_BOOL;
    cdt = common;
  } else if (kind == B_BITS) {
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
  mt_loop_fn fn = binary_table[op][cdt];
  if (!fn)
    return mt_error(MT_EDTYPE, "%s: not implemented for '%s'", name, mt_dtype_name(common));
  /* broadcast shape */
  int64_t shape[MT_MAX_DIMS];
  int nd;
  if (mt_broadcast_shapes(a->_sizes, a->_ndim, b->_sizes, b->_ndim, shape, &nd) != MT_OK)
    return mt_error(MT_ESHAPE, "%s: the size of tensor a %s must match the size of tensor b %s (they do not broadcast)",
                    name, MT_SHAPE(a), MT_SHAPE(b));
  if (out) {
    MT_TRY(mt_check_tensor(out, name, "out"));
    MT_TRY(check_cast(rdt, out, name));
  }
  mt_tensor *x = NULL, *y = NULL, *res = NULL;
  mt_status s;
  int kdt = cdt == MT_BOOL ? MT_BOOL : cdt; /* input dtype the kernel reads */
  if ((s = as_dtype(a, kdt, &x)) || (s = as_dtype(b, kdt, &y))) goto done;
  int res_dt = kind == B_CMP ? MT_BOOL : cdt;
  bool direct = out && out->_dtype == res_dt;
  if (direct) {
    if ((s = mt_prepare_out(out, shape, nd, out->_dtype, name))) goto done;
    /* out may alias an input exactly (in-place) but not partially */
    if ((out != x && mt_may_overlap(out, x) && !(out->_data == x->_data && x->_flags & out->_flags & MT_TENSOR_CONTIGUOUS)) ||
        (out != y && mt_may_overlap(out, y) && !(out->_data == y->_data && y->_flags & out->_flags & MT_TENSOR_CONTIGUOUS)))
      direct = false;
  }
  if (direct) res = mt_tensor_retain(out);
  else if ((s = mt_new(shape, nd, res_dt, name, &res))) goto done;
  ew_ctx ctx = {0, 0, 0};
  mt_tensor *ops[3] = {res, x, y};
  run(fn, &ctx, ops, 3, res);
  if (ctx.error) { s = int_error(&ctx, name); goto done; }
  if (common == MT_BOOL && rdt == MT_BOOL && kind == B_ARITH) {
    /* bool arithmetic ran in uint8: normalise to 0/1 */
    uint8_t *p = (uint8_t *)res->_data;
    if (res->_flags & MT_TENSOR_CONTIGUOUS)
      for (int64_t i = 0; i < res->_numel; i++) p[i] = p[i] != 0;
  }
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

static mt_status binary_pub(int op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (op < 0 || op >= MT_BINARY_OP_COUNT) return mt_error(MT_EINVAL, "binary: unknown op %d", op);
  const char *name = binary_names[op];
  MT_TRY(mt_check_tensor(a, name, "input"));
  MT_TRY(mt_check_tensor(b, name, "other"));
  /* the hot path: same dtype float32/float64/int64, same shape, contiguous, no out */
  if (!out && a->_dtype == b->_dtype && a->_ndim == b->_ndim && (a->_flags & b->_flags & MT_TENSOR_CONTIGUOUS) &&
      a->_numel < 2 * MT_GRAIN && (a->_dtype == MT_FLOAT32 || a->_dtype == MT_FLOAT64) &&
      binary_kind(op) != B_BITS && !((a->_flags | b->_flags) & MT_TENSOR_WRAPPED_NUMBER) &&
      !memcmp(a->_sizes, b->_sizes, sizeof(int64_t) * (size_t)a->_ndim)) {
    pthread_once(&tables_once, init_tables);
    mt_tensor *r;
    int rdt = binary_kind(op) == B_CMP ? MT_BOOL : a->_dtype;
    MT_TRY(mt_new(a->_sizes, a->_ndim, rdt, name, &r));
    char *p[3] = {r->_data, a->_data, b->_data};
    int64_t item = (int64_t)mt_itemsize(a->_dtype);
    int64_t st[3] = {(int64_t)mt_itemsize(rdt), item, item};
    ew_ctx ctx = {0, 0, 0};
    if (a->_numel) binary_table[op][a->_dtype](&ctx, p, st, a->_numel);
    return mt_give(r, result);
  }
  return binary_impl(op, a, b, out, result);
}

/* A wrapped number on the stack: a 0-dim tensor that never escapes this call. */
static mt_storage scalar_storage = {1, NULL, 0, MT_CPU, 0, 0, MT_STORAGE_EXTERNAL, 0, NULL, NULL};
static void make_scalar(mt_tensor *t, double *buf, double s, int kind) {
  memset(t, 0, offsetof(mt_tensor, _sizes));
  t->_refcount = 1 << 30; /* never freed */
  t->_storage = &scalar_storage;
  t->_numel = 1;
  t->_ndim = 0;
  t->_flags = MT_TENSOR_CONTIGUOUS | MT_TENSOR_WRAPPED_NUMBER;
  if (kind == 0) { t->_dtype = MT_BOOL; *(uint8_t *)buf = s != 0; }
  else if (kind == 1) { t->_dtype = MT_INT64; *(int64_t *)buf = (int64_t)s; }
  else { t->_dtype = MT_FLOAT64; *buf = s; }
  t->_data = (char *)buf;
}

static mt_status binary_scalar_pub(int op, mt_tensor *a, double s, int scalar_kind, int reverse, mt_tensor *out,
                                  mt_tensor **result) {
  if (op < 0 || op >= MT_BINARY_OP_COUNT) return mt_error(MT_EINVAL, "binary: unknown op %d", op);
  MT_TRY(mt_check_tensor(a, binary_names[op], "input"));
  if (scalar_kind == 1 && (s != floor(s) || fabs(s) > 9.2e18)) scalar_kind = 2;
  mt_tensor sc;
  double buf;
  make_scalar(&sc, &buf, s, scalar_kind);
  return reverse ? binary_impl(op, &sc, a, out, result) : binary_impl(op, a, &sc, out, result);
}

static mt_status add_scaled_pub(mt_tensor *a, mt_tensor *b, double alpha, mt_tensor *out, mt_tensor **result) {
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

/* ---------------------------------------------------------------- where */
typedef struct { size_t item; } where_ctx;
static void where_loop(void *ctx_, char **p, const int64_t *st, int64_t n) {
  size_t item = ((where_ctx *)ctx_)->item;
  char *o = p[0];
  const char *c = p[1], *a = p[2], *b = p[3];
  for (int64_t i = 0; i < n; i++, o += st[0], c += st[1], a += st[2], b += st[3])
    memcpy(o, *(const uint8_t *)c ? a : b, item);
}

static mt_status where_pub(mt_tensor *cond, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_check_tensor(cond, "where", "condition"));
  MT_TRY(mt_check_tensor(a, "where", "input"));
  MT_TRY(mt_check_tensor(b, "where", "other"));
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
  if ((s = as_dtype(a, dt, &x)) || (s = as_dtype(b, dt, &y))) goto done;
  if ((s = mt_new(s2, n2, dt, "where", &r))) goto done;
  where_ctx wc = {mt_itemsize(dt)};
  mt_tensor *ops[4] = {r, cond, x, y};
  run(where_loop, &wc, ops, 4, r);
  s = finish(r, out, result, "where", out ? out->_dtype : dt);
  r = NULL;
done:
  mt_tensor_release(x);
  mt_tensor_release(y);
  mt_tensor_release(r);
  return s;
}

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

/* ---------------------------------------------------------------- autograd entry points */
/* The public ops: without grad recording they go straight to the kernels above; with it they
 * refuse out= and leaves in place, keep what the backward needs and record a node
 * (core/grad/ops.c). `x` is the input's old value for an in-place op whose backward needs it. */

/* run `call` into a result we hold, then record and hand it out */
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

/* a copy of a's value (grad mode off) for an in-place op's backward */
static mt_status old_value(mt_tensor *a, bool needed, mt_tensor **x) {
  *x = NULL;
  if (!needed) return MT_OK;
  int mode = mt_grad_mode;
  mt_grad_mode = 0;
  mt_status s = mt_clone(a, x);
  mt_grad_mode = mode;
  return s;
}

/* Fast paths for small contiguous float32/float64 tensors: the kernel that unary_impl /
 * binary_impl would end up calling, called straight on the same inputs (so the same bits come
 * out), without the promotion, the conversion of a wrapped number, the iterator and the checks
 * that cannot fail here. `out` may be NULL or the input itself (in place). They return false,
 * having done nothing, when the call is not theirs. */
/* the kernel tables, made once (a load on every call after that, not a call) */
static inline void tables_ready(void) {
  static int ready;
  if (__builtin_expect(__atomic_load_n(&ready, __ATOMIC_ACQUIRE), 1)) return;
  pthread_once(&tables_once, init_tables);
  __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}
/* itemsize of the dtypes the fast paths make: float32, float64, bool */
static inline int64_t fast_item(int dt) { return dt == MT_FLOAT32 ? 4 : dt == MT_FLOAT64 ? 8 : 1; }

static inline bool small_float(const mt_tensor *a) {
  return (a->_dtype == MT_FLOAT32 || a->_dtype == MT_FLOAT64) && (a->_flags & MT_TENSOR_CONTIGUOUS) &&
         !(a->_flags & MT_TENSOR_WRAPPED_NUMBER) && a->_numel < 2 * MT_GRAIN && a->_device_type == MT_CPU;
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
static mt_status fast_done(mt_tensor *r, mt_tensor *out, mt_tensor **result) {
  if (out) {
    mt_bump_version(out);
    if (result) *result = mt_tensor_retain(out);
    return MT_OK;
  }
  return mt_give(r, result);
}

static bool unary_fast(int op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result, mt_status *st) {
  if (!a || (out && out != a) || op < 0 || op >= MT_UNARY_OP_COUNT || !small_float(a)) return false;
  ukind kind = unary_kind(op);
  if (kind != U_FLOAT && kind != U_KEEP) return false;
  tables_ready();
  mt_loop_fn fn = a->_dtype == MT_FLOAT64 ? unary_f64[op] : unary_f32[op];
  if (!fn) return false;
  mt_tensor *r;
  if ((*st = fast_result(a, a->_dtype, out, unary_names[op], &r))) return true;
  char *p[2] = {r->_data, a->_data};
  int64_t item = fast_item(a->_dtype), sts[2] = {item, item};
  ew_ctx ctx = {p1, p2, 0};
  if (a->_numel) fn(&ctx, p, sts, a->_numel);
  *st = fast_done(r, out, result);
  return true;
}

/* a (op) b of one shape and dtype; out NULL or a */
static bool binary_fast(int op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result, mt_status *st) {
  if (!a || !b || (out && out != a) || op < 0 || op >= MT_BINARY_OP_COUNT) return false;
  if (!small_float(a) || !small_float(b) || a->_dtype != b->_dtype || !same_sizes(a, b)) return false;
  bkind bk = binary_kind(op);
  if (bk == B_BITS || (bk == B_CMP && out)) return false;
  if (out && a->_data != b->_data && mt_may_overlap(a, b)) return false;
  tables_ready();
  mt_loop_fn fn = binary_table[op][a->_dtype];
  if (!fn) return false;
  int rdt = bk == B_CMP ? MT_BOOL : a->_dtype;
  mt_tensor *r;
  if ((*st = fast_result(a, rdt, out, binary_names[op], &r))) return true;
  char *p[3] = {r->_data, a->_data, b->_data};
  int64_t item = fast_item(a->_dtype), sts[3] = {fast_item(rdt), item, item};
  ew_ctx ctx = {0, 0, 0};
  if (a->_numel) fn(&ctx, p, sts, a->_numel);
  *st = fast_done(r, out, result);
  return true;
}

/* a (op) s, or s (op) a; the number converted to a's dtype, as the promotion of a wrapped number
 * with a float tensor does */
static bool scalar_fast(int op, mt_tensor *a, double sv, int kind, int reverse, mt_tensor *out, mt_tensor **result,
                        mt_status *st) {
  if (!a || (out && out != a) || op < 0 || op >= MT_BINARY_OP_COUNT || !small_float(a)) return false;
  bkind bk = binary_kind(op);
  if (bk == B_BITS || (bk == B_CMP && out)) return false;
  tables_ready();
  mt_loop_fn fn = binary_table[op][a->_dtype];
  if (!fn) return false;
  if (kind == 0) sv = sv != 0;
  union { float f; double d; } num;
  if (a->_dtype == MT_FLOAT32) num.f = (float)sv;
  else num.d = sv;
  int rdt = bk == B_CMP ? MT_BOOL : a->_dtype;
  mt_tensor *r;
  if ((*st = fast_result(a, rdt, out, binary_names[op], &r))) return true;
  int64_t item = fast_item(a->_dtype);
  char *p[3] = {r->_data, reverse ? (char *)&num : a->_data, reverse ? a->_data : (char *)&num};
  int64_t sts[3] = {fast_item(rdt), reverse ? 0 : item, reverse ? item : 0};
  ew_ctx ctx = {0, 0, 0};
  if (a->_numel) fn(&ctx, p, sts, a->_numel);
  *st = fast_done(r, out, result);
  return true;
}

/* the public ops without recording: a fast path, else the general driver */
static mt_status unary_go(int op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result) {
  mt_status s;
  if (unary_fast(op, a, p1, p2, out, result, &s)) return s;
  return unary_impl(op, a, p1, p2, out, result);
}
static mt_status binary_go(int op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  mt_status s;
  if (binary_fast(op, a, b, out, result, &s)) return s;
  return binary_pub(op, a, b, out, result);
}
static mt_status scalar_go(int op, mt_tensor *a, double sv, int kind, int reverse, mt_tensor *out,
                           mt_tensor **result) {
  mt_status s;
  if (scalar_fast(op, a, sv, kind, reverse, out, result, &s)) return s;
  return binary_scalar_pub(op, a, sv, kind, reverse, out, result);
}

static mt_status grad_checks(mt_tensor *a, mt_tensor *out, const char *op) {
  if (out == a) return mt_grad_check_inplace(a, op);
  return mt_grad_check_out(out, true, op);
}

mt_status mt_unary(int op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result) {
  if (!a || !mt_grad_on1(a) || op < 0 || op >= MT_UNARY_OP_COUNT) return unary_go(op, a, p1, p2, out, result);
  const char *name = unary_names[op];
  MT_TRY(grad_checks(a, out, name));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && mt_grad_unary_needs_input(op), &x));
  mt_status s = MT_NOGRAD(unary_go(op, a, p1, p2, out, &r));
  if (s == MT_OK) s = hand_out(r, mt_record_unary(op, a, x ? x : a, p1, p2, r), out, result);
  mt_tensor_release(x);
  return s;
}

mt_status mt_binary(int op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (!a || !b || !mt_grad_on2(a, b) || op < 0 || op >= MT_BINARY_OP_COUNT) return binary_go(op, a, b, out, result);
  const char *name = binary_names[op];
  MT_TRY(grad_checks(a, out, name));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && op != MT_OP_ADD && op != MT_OP_SUB, &x));
  mt_status s = MT_NOGRAD(binary_go(op, a, b, out, &r));
  if (s == MT_OK) s = hand_out(r, mt_record_binary(op, a, b, x ? x : a, r), out, result);
  mt_tensor_release(x);
  return s;
}

mt_status mt_binary_scalar(int op, mt_tensor *a, double sv, int scalar_kind, int reverse, mt_tensor *out,
                           mt_tensor **result) {
  if (!a || !mt_grad_on1(a) || op < 0 || op >= MT_BINARY_OP_COUNT)
    return scalar_go(op, a, sv, scalar_kind, reverse, out, result);
  const char *name = binary_names[op];
  MT_TRY(grad_checks(a, out, name));
  mt_tensor *x, *r;
  MT_TRY(old_value(a, out == a && op != MT_OP_ADD && op != MT_OP_SUB && op != MT_OP_MUL, &x));
  mt_status s = MT_NOGRAD(scalar_go(op, a, sv, scalar_kind, reverse, out, &r));
  if (s == MT_OK) s = hand_out(r, mt_record_binary_scalar(op, a, x ? x : a, sv, reverse, r), out, result);
  mt_tensor_release(x);
  return s;
}

mt_status mt_add_scaled(mt_tensor *a, mt_tensor *b, double alpha, mt_tensor *out, mt_tensor **result) {
  if (!a || !b || !mt_grad_on2(a, b) || alpha == 1) return add_scaled_pub(a, b, alpha, out, result);
  MT_TRY(grad_checks(a, out, "add"));
  mt_tensor *r = NULL;
  mt_status s = MT_NOGRAD(add_scaled_pub(a, b, alpha, out, &r)); /* one node for a + alpha * b */
  if (s == MT_OK) s = hand_out(r, mt_record_add_scaled(a, b, alpha, r), out, result);
  return s;
}

mt_status mt_where(mt_tensor *cond, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  if (!a || !b || !mt_grad_on2(a, b)) return where_pub(cond, a, b, out, result);
  MT_TRY(mt_grad_check_out(out, true, "where"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(where_pub(cond, a, b, NULL, &r)));
  return hand_out(r, mt_record_where(cond, a, b, r), NULL, result);
}
