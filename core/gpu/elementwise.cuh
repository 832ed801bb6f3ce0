/* elementwise.cuh -- the elementwise kernels' templates (the generic unary and binary kernels, every op's
 * functor), shared by the files that instantiate them: k_ew_float32.cu, k_ew_float64.cu, k_ew_int.cu (one
 * dtype family each, so that nvcc compiles them in parallel) and k_elementwise.cu (the dispatch). */
#ifndef MT_GPU_ELEMENTWISE_CUH
#define MT_GPU_ELEMENTWISE_CUH

#include "math.cuh"

namespace MT_GPU_NS {

/* ---------------------------------------------------------------- the generic kernels */
template <typename T, int N> struct alignas(sizeof(T) * N) vec {
  T v[N];
};
/* elements per vector access: 16 bytes of the widest operand */
template <typename A, typename B> struct vec_width {
  static const int value = 16 / (sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B));
};
MT_DEV bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

template <typename T> MT_DEV T host_scalar(const mt_gpu_iter &it, int k) {
  T v;
  memcpy(&v, &it.scalar[k], sizeof v);
  return v;
}

template <typename Out, typename In, typename F> __global__ void unary_kernel(mt_gpu_iter it, F f) {
  const int64_t n = it.numel, step = (int64_t)gridDim.x * blockDim.x;
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  Out *o = (Out *)it.data[0];
  const In *a = (const In *)it.data[1];
  if (it.flat) {
    if (it.inc[1] == 0) {
      In x = a[0];
      for (; i < n; i += step) o[i] = (Out)f(x);
      return;
    }
    const int V = vec_width<In, Out>::value;
    if (V > 1 && aligned16(o) && aligned16(a)) {
      int64_t nv = n / V;
      for (int64_t j = i; j < nv; j += step) {
        vec<In, V> x = reinterpret_cast<const vec<In, V> *>(a)[j];
        vec<Out, V> y;
MT_UNROLL
        for (int k = 0; k < V; k++) y.v[k] = (Out)f(x.v[k]);
        reinterpret_cast<vec<Out, V> *>(o)[j] = y;
      }
      for (int64_t j = nv * V + i; j < n; j += step) o[j] = (Out)f(a[j]);
      return;
    }
    for (; i < n; i += step) o[i] = (Out)f(a[i]);
    return;
  }
  for (; i < n; i += step) o[iter_offset(it, 0, i)] = (Out)f(a[iter_offset(it, 1, i)]);
}

template <typename Out, typename In, typename F> __global__ void binary_kernel(mt_gpu_iter it, F f) {
  const int64_t n = it.numel, step = (int64_t)gridDim.x * blockDim.x;
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  Out *o = (Out *)it.data[0];
  const In *a = (const In *)it.data[1], *b = (const In *)it.data[2];
  /* a number from the host, or a single element, is loaded once */
  const bool sa = !a || it.inc[1] == 0, sb = !b || it.inc[2] == 0;
  if (it.flat) {
    In xa = !a ? host_scalar<In>(it, 1) : (sa ? a[0] : In());
    In xb = !b ? host_scalar<In>(it, 2) : (sb ? b[0] : In());
    const int V = vec_width<In, Out>::value;
    if (V > 1 && aligned16(o) && (sa || aligned16(a)) && (sb || aligned16(b))) {
      int64_t nv = n / V;
      for (int64_t j = i; j < nv; j += step) {
        vec<In, V> x, y;
        if (sa) {
MT_UNROLL
          for (int k = 0; k < V; k++) x.v[k] = xa;
        } else {
          x = reinterpret_cast<const vec<In, V> *>(a)[j];
        }
        if (sb) {
MT_UNROLL
          for (int k = 0; k < V; k++) y.v[k] = xb;
        } else {
          y = reinterpret_cast<const vec<In, V> *>(b)[j];
        }
        vec<Out, V> r;
MT_UNROLL
        for (int k = 0; k < V; k++) r.v[k] = (Out)f(x.v[k], y.v[k]);
        reinterpret_cast<vec<Out, V> *>(o)[j] = r;
      }
      for (int64_t j = nv * V + i; j < n; j += step) o[j] = (Out)f(sa ? xa : a[j], sb ? xb : b[j]);
      return;
    }
    for (; i < n; i += step) o[i] = (Out)f(sa ? xa : a[i], sb ? xb : b[i]);
    return;
  }
  In xa = !a ? host_scalar<In>(it, 1) : In(), xb = !b ? host_scalar<In>(it, 2) : In();
  for (; i < n; i += step) {
    In x = a ? a[iter_offset(it, 1, i)] : xa;
    In y = b ? b[iter_offset(it, 2, i)] : xb;
    o[iter_offset(it, 0, i)] = (Out)f(x, y);
  }
}

template <typename Out, typename In, typename F> static int run_unary(const mt_gpu_iter *it, F f, void *stream) {
  if (it->numel == 0) return 0;
  mt_launch(unary_kernel<Out, In, F>, dim3(blocks_for(it->numel, 4)), dim3(THREADS), 0, stream, *it, f);
  return 0;
}
template <typename Out, typename In, typename F> static int run_binary(const mt_gpu_iter *it, F f, void *stream) {
  if (it->numel == 0) return 0;
  mt_launch(binary_kernel<Out, In, F>, dim3(blocks_for(it->numel, 4)), dim3(THREADS), 0, stream, *it, f);
  return 0;
}

/* ---------------------------------------------------------------- unary functors */
/* F(NAME, EXPR): a functor over float and double; x the input, p1 and p2 the op's parameters */
#define MT_FUNCTOR(NAME, EXPR)                                                                                       \
  struct NAME {                                                                                                      \
    double p1, p2;                                                                                                   \
    template <typename T> MT_DEV T operator()(T x) const { return (T)(EXPR); }                                       \
  };
#define FLT_SIGN(x) ((x) > 0 ? 1 : ((x) < 0 ? -1 : (x)))
#define FLOAT_UNARY(X)                                                                                               \
  X(NEG, -x) X(ABS, m_fabs(x)) X(SIGN, (T)FLT_SIGN(x)) X(EXP, m_exp(x)) X(EXP2, m_exp2(x)) X(LOG, m_log(x))       \
  X(LOG2, m_log2(x)) X(LOG10, m_log10(x)) X(LOG1P, m_log1p(x)) X(EXPM1, m_expm1(x)) X(SQRT, m_sqrt(x))              \
  X(RSQRT, (T)1 / m_sqrt(x)) X(SIN, m_sin(x)) X(COS, m_cos(x)) X(TAN, m_tan(x)) X(ASIN, m_asin(x))                 \
  X(ACOS, m_acos(x)) X(ATAN, m_atan(x)) X(SINH, m_sinh(x)) X(COSH, m_cosh(x)) X(TANH, m_tanh(x))                   \
  X(SIGMOID, sigmoid_(x)) X(LOGIT, logit_(x, p1)) X(RELU, x > 0 ? x : (x != x ? x : (T)0)) X(GELU, gelu_(x))       \
  X(GELU_TANH, gelu_tanh_(x)) X(SILU, x * sigmoid_(x)) X(ERF, m_erf(x)) X(ERFC, m_erfc(x)) X(FLOOR, m_floor(x))    \
  X(CEIL, m_ceil(x)) X(ROUND, m_nearbyint(x)) X(TRUNC, m_trunc(x)) X(FRAC, x - m_trunc(x))                          \
  X(RECIPROCAL, (T)1 / x) X(SQUARE, x * x) X(SINC, sinc_(x)) X(SOFTPLUS, softplus_(x)) X(LGAMMA, m_lgamma(x))      \
  X(DIGAMMA, (T)digamma_d(x)) X(POLYGAMMA, (T)polygamma_d(p1, x)) X(CLAMP, (T)clamp_d(x, p1, p2))                 \
  X(POW_SCALAR, m_pow(x, (T)p1)) X(RPOW_SCALAR, m_pow((T)p1, x)) X(LEAKY_RELU, x > 0 ? x : x * (T)p1)              \
  X(ELU, x > 0 ? x : (T)p1 * m_expm1(x)) X(HARDTANH, x < (T)p1 ? (T)p1 : (x > (T)p2 ? (T)p2 : x))                  \
  X(THRESHOLD, x <= (T)p1 ? (T)p2 : x) X(ROUND_DECIMALS, (T)round_dec(x, p1))                                      \
  X(NAN_TO_NUM, (T)nan_to_num_d(x, p1, p2))
#define DEF_F(OP, EXPR) MT_FUNCTOR(f_##OP, EXPR)
FLOAT_UNARY(DEF_F)
#undef DEF_F

/* the predicates: float in, bool out */
#define PRED_UNARY(X) X(ISNAN, x != x) X(ISINF, m_isinf(x)) X(ISFINITE, m_isfinite(x)) X(LOGICAL_NOT, !x)
#define DEF_P(OP, EXPR)                                                                                              \
  struct p_##OP {                                                                                                    \
    template <typename T> MT_DEV uint8_t operator()(T x) const { return (uint8_t)((EXPR) != 0); }                    \
  };
PRED_UNARY(DEF_P)
#undef DEF_P

/* integer unary ops: the faulting one (a negative power) reports through the fault record */
MT_DEV int64_t ipow(int64_t b, int64_t e, mt_gpu_fault *f, int op) {
  if (e < 0) {
    if (b == 1) return 1;
    if (b == -1) return (e & 1) ? -1 : 1;
    raise_fault(f, MT_GPU_FAULT_NEGATIVE_POWER, op, e, 0, 0);
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
#define INT_UNARY(X)                                                                                                 \
  X(NEG, -x) X(ABS, is_neg(x) ? -x : x) X(SIGN, (x > 0) - is_neg(x)) X(RELU, x > 0 ? x : 0) X(FLOOR, x) X(CEIL, x)       \
  X(ROUND, x) X(TRUNC, x) X(SQUARE, x * x) X(BITWISE_NOT, ~x) X(CLAMP, (T)clamp_d((double)x, p1, p2))              \
  X(POW_SCALAR, (T)ipow(x, (int64_t)p1, fault, MT_OP_POW_SCALAR))                                                  \
  X(RPOW_SCALAR, (T)ipow((int64_t)p1, x, fault, MT_OP_RPOW_SCALAR))                                                \
  X(HARDTANH, x < p1 ? (T)p1 : (x > p2 ? (T)p2 : x)) X(THRESHOLD, x <= p1 ? (T)p2 : x) X(NAN_TO_NUM, x)
#define DEF_I(OP, EXPR)                                                                                              \
  struct i_##OP {                                                                                                    \
    double p1, p2;                                                                                                   \
    mt_gpu_fault *fault;                                                                                             \
    template <typename T> MT_DEV T operator()(T x) const { return (T)(EXPR); }                                       \
  };
INT_UNARY(DEF_I)
#undef DEF_I
struct b_BITWISE_NOT { /* bool: ~ is logical not */
  MT_DEV uint8_t operator()(uint8_t x) const { return !x; }
};

template <typename T> static int unary_float(int op, const mt_gpu_iter *it, double p1, double p2, void *stream) {
  switch (op) {
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_unary<T, T>(it, f_##OP{p1, p2}, stream);
    FLOAT_UNARY(CASE)
#undef CASE
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_unary<uint8_t, T>(it, p_##OP{}, stream);
    PRED_UNARY(CASE)
#undef CASE
  default: return -1;
  }
}

template <typename T>
static int unary_int(int op, const mt_gpu_iter *it, double p1, double p2, mt_gpu_fault *f, void *stream) {
  switch (op) {
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_unary<T, T>(it, i_##OP{p1, p2, f}, stream);
    INT_UNARY(CASE)
#undef CASE
  case MT_OP_LOGICAL_NOT: return run_unary<uint8_t, T>(it, p_LOGICAL_NOT{}, stream);
  default: return -1;
  }
}

/* ---------------------------------------------------------------- binary functors */
#define FLOAT_BINARY(X)                                                                                              \
  X(ADD, x + y) X(SUB, x - y) X(MUL, x * y) X(DIV, x / y) X(DIV_TRUNC, m_trunc(x / y))                              \
  X(DIV_FLOOR, (T)div_floor_d(x, y)) X(POW, m_pow(x, y)) X(MAXIMUM, (T)maximum_d(x, y))                             \
  X(MINIMUM, (T)minimum_d(x, y)) X(FMOD, m_fmod(x, y)) X(REMAINDER, (T)remainder_d(x, y)) X(ATAN2, m_atan2(x, y))   \
  X(HYPOT, m_hypot(x, y)) X(FMAX, m_fmax(x, y)) X(FMIN, m_fmin(x, y)) X(XLOGY, (T)xlogy_d(x, y))                    \
  X(COPYSIGN, m_copysign(x, y))
#define CMP_BINARY(X)                                                                                                \
  X(EQ, x == y) X(NE, x != y) X(LT, x < y) X(LE, x <= y) X(GT, x > y) X(GE, x >= y)                                \
  X(LOGICAL_AND, (x != 0) && (y != 0)) X(LOGICAL_OR, (x != 0) || (y != 0)) X(LOGICAL_XOR, (x != 0) != (y != 0))
#define DEF_FB(OP, EXPR)                                                                                             \
  struct fb_##OP {                                                                                                   \
    template <typename T> MT_DEV T operator()(T x, T y) const { return (T)(EXPR); }                                  \
  };
FLOAT_BINARY(DEF_FB)
#undef DEF_FB
#define DEF_CB(OP, EXPR)                                                                                             \
  struct cb_##OP {                                                                                                   \
    template <typename T> MT_DEV uint8_t operator()(T x, T y) const { return (uint8_t)(EXPR); }                      \
  };
CMP_BINARY(DEF_CB)
#undef DEF_CB

/* integer arithmetic: a division by zero is a fault, never a trap */
#define IFAULT(op) (raise_fault(fault, MT_GPU_FAULT_ZERO_DIVISION, op, 0, 0, 0), (T)0)
#define INT_BINARY(X)                                                                                                \
  X(ADD, x + y) X(SUB, x - y) X(MUL, x * y)                                                                        \
  X(DIV_TRUNC, y == 0 ? IFAULT(MT_OP_DIV_TRUNC) : (T)(x / y))                                                     \
  X(DIV_FLOOR, y == 0 ? IFAULT(MT_OP_DIV_FLOOR) : (T)((x % y != 0 && (is_neg(x) != is_neg(y))) ? x / y - 1 : x / y))   \
  X(POW, (T)ipow(x, y, fault, MT_OP_POW)) X(MAXIMUM, x > y ? x : y) X(MINIMUM, x < y ? x : y)                      \
  X(FMOD, y == 0 ? IFAULT(MT_OP_FMOD) : (T)(x % y))                                                                \
  X(REMAINDER, y == 0 ? IFAULT(MT_OP_REMAINDER) : (T)((x % y != 0 && (is_neg((T)(x % y)) != is_neg(y))) ? x % y + y : x % y)) \
  X(FMAX, x > y ? x : y) X(FMIN, x < y ? x : y) X(BITWISE_AND, x & y) X(BITWISE_OR, x | y) X(BITWISE_XOR, x ^ y)
#define DEF_IB(OP, EXPR)                                                                                             \
  struct ib_##OP {                                                                                                   \
    mt_gpu_fault *fault;                                                                                             \
    template <typename T> MT_DEV T operator()(T x, T y) const { return (T)(EXPR); }                                  \
  };
INT_BINARY(DEF_IB)
#undef DEF_IB
#undef IFAULT

template <typename T> static int binary_float(int op, const mt_gpu_iter *it, void *stream) {
  switch (op) {
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_binary<T, T>(it, fb_##OP{}, stream);
    FLOAT_BINARY(CASE)
#undef CASE
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_binary<uint8_t, T>(it, cb_##OP{}, stream);
    CMP_BINARY(CASE)
#undef CASE
  default: return -1;
  }
}

template <typename T> static int binary_int(int op, const mt_gpu_iter *it, mt_gpu_fault *f, void *stream) {
  switch (op) {
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_binary<T, T>(it, ib_##OP{f}, stream);
    INT_BINARY(CASE)
#undef CASE
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_binary<uint8_t, T>(it, cb_##OP{}, stream);
    CMP_BINARY(CASE)
#undef CASE
  default: return -1;
  }
}

/* bool arithmetic runs in uint8 and is brought back to 0/1 (as the CPU does after its uint8 loop) */
template <typename F> struct as_bool {
  F f;
  MT_DEV uint8_t operator()(uint8_t x, uint8_t y) const { return (uint8_t)(f(x, y) != 0); }
};
inline int binary_bool(int op, const mt_gpu_iter *it, mt_gpu_fault *f, void *stream) {
  switch (op) {
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_binary<uint8_t, uint8_t>(it, as_bool<ib_##OP>{ib_##OP{f}}, stream);
    INT_BINARY(CASE)
#undef CASE
#define CASE(OP, EXPR)                                                                                               \
  case MT_OP_##OP: return run_binary<uint8_t, uint8_t>(it, cb_##OP{}, stream);
    CMP_BINARY(CASE)
#undef CASE
  default: return -1;
  }
}


/* the instantiations, one family a file */
int ew_unary_f32(int op, const mt_gpu_iter *it, double p1, double p2, void *stream);
int ew_unary_f64(int op, const mt_gpu_iter *it, double p1, double p2, void *stream);
int ew_binary_f32(int op, const mt_gpu_iter *it, void *stream);
int ew_binary_f64(int op, const mt_gpu_iter *it, void *stream);
int ew_unary_int(int op, const mt_gpu_iter *it, double p1, double p2, mt_gpu_fault *f, void *stream);
int ew_binary_int(int op, const mt_gpu_iter *it, mt_gpu_fault *f, void *stream);

} // namespace MT_GPU_NS

#endif
