/* dtype.h -- dtypes (dtype.c): names for messages, float16/bfloat16 conversions, element loads and stores, and the X-macro lists for generic code. Internal to the core. */
#ifndef MT_DTYPE_H
#define MT_DTYPE_H

#include "error.h"

/* ---------------------------------------------------------------- dtypes */
/* PyTorch's ScalarType names ("Float", "Long", ...) for messages. */
const char *mt_type_title(int dtype);

typedef uint16_t mt_half;
typedef uint16_t mt_bf16;

float mt_half_to_float_raw(uint16_t h); /* keeps NaN payloads: for kernels, not for Lua */
static inline float mt_h2f(mt_half h) { return mt_half_to_float_raw(h); }

/* mt_number_out / mt_float_out, inline for the core's own loops */
static inline double mt_canonical_double(double x) {
  union { double d; uint64_t u; } v = {x};
  if ((v.u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) v.u = (v.u & 0x8000000000000000ull) | 0x7ff8000000000000ull;
  return v.d;
}
static inline float mt_canonical_float(float x) {
  union { float f; uint32_t u; } v = {x};
  if ((v.u & 0x7fffffffu) > 0x7f800000u) v.u = (v.u & 0x80000000u) | 0x7fc00000u;
  return v.f;
}
static inline float mt_b2f(mt_bf16 h) {
  union { uint32_t u; float f; } v;
  v.u = (uint32_t)h << 16;
  return v.f;
}
static inline mt_bf16 mt_f2b(float f) { return mt_float_to_bfloat16(f); }
static inline mt_half mt_f2h(float f) { return mt_float_to_half(f); }

static inline bool mt_is_float(int dt) {
  return dt == MT_FLOAT32 || dt == MT_FLOAT64 || dt == MT_FLOAT16 || dt == MT_BFLOAT16;
}
static inline bool mt_is_reduced_float(int dt) { return dt == MT_FLOAT16 || dt == MT_BFLOAT16; }
/* mt_dtype_size for the core's own loops: inline, a table lookup (0 for an invalid dtype) */
static inline size_t mt_itemsize(int dt) {
  static const uint8_t sizes[MT_DTYPE_MAX] = {[MT_UINT8] = 1, [MT_INT8] = 1, [MT_INT16] = 2, [MT_INT32] = 4,
                                              [MT_INT64] = 8, [MT_FLOAT16] = 2, [MT_FLOAT32] = 4, [MT_FLOAT64] = 8,
                                              [MT_BOOL] = 1, [MT_BFLOAT16] = 2};
  return (unsigned)dt < MT_DTYPE_MAX ? sizes[dt] : 0;
}

/* One element of `dtype` in host memory, as a double (NaN payloads kept: for kernels), and a double
 * stored as `dtype` (rounded or truncated as a conversion to that type does). */
double mt_load_double(int dtype, const void *p);
void mt_store_double(int dtype, void *p, double v);

/* X(DT, ctype, load-to-native-expr, store-from-native-expr): native is the type arithmetic is
 * done in (float for half/bfloat16). `x` is the stored value, `v` the native value. */
#define MT_FOREACH_DTYPE(X)                                        \
  X(MT_UINT8, uint8_t, (x), (uint8_t)(int64_t)(v))                 \
  X(MT_INT8, int8_t, (x), (int8_t)(int64_t)(v))                    \
  X(MT_INT16, int16_t, (x), (int16_t)(int64_t)(v))                 \
  X(MT_INT32, int32_t, (x), (int32_t)(int64_t)(v))                 \
  X(MT_INT64, int64_t, (x), (int64_t)(v))                          \
  X(MT_FLOAT16, mt_half, mt_h2f(x), mt_f2h((float)(v)))            \
  X(MT_FLOAT32, float, (x), (float)(v))                            \
  X(MT_FLOAT64, double, (x), (double)(v))                          \
  X(MT_BOOL, uint8_t, (x), (uint8_t)((v) != 0))                    \
  X(MT_BFLOAT16, mt_bf16, mt_b2f(x), mt_f2b((float)(v)))
/* The same list for nested loops over two dtypes (a macro cannot expand inside itself): X is
 * called with the extra leading arguments first, X(args..., DT, ctype, load, store). */
#define MT_FOREACH_DTYPE_B(X, ...)                                             \
  X(__VA_ARGS__, MT_UINT8, uint8_t, (x), (uint8_t)(int64_t)(v))                \
  X(__VA_ARGS__, MT_INT8, int8_t, (x), (int8_t)(int64_t)(v))                   \
  X(__VA_ARGS__, MT_INT16, int16_t, (x), (int16_t)(int64_t)(v))                \
  X(__VA_ARGS__, MT_INT32, int32_t, (x), (int32_t)(int64_t)(v))                \
  X(__VA_ARGS__, MT_INT64, int64_t, (x), (int64_t)(v))                         \
  X(__VA_ARGS__, MT_FLOAT16, mt_half, mt_h2f(x), mt_f2h((float)(v)))           \
  X(__VA_ARGS__, MT_FLOAT32, float, (x), (float)(v))                           \
  X(__VA_ARGS__, MT_FLOAT64, double, (x), (double)(v))                         \
  X(__VA_ARGS__, MT_BOOL, uint8_t, (x), (uint8_t)((v) != 0))                   \
  X(__VA_ARGS__, MT_BFLOAT16, mt_bf16, mt_b2f(x), mt_f2b((float)(v)))

#endif
