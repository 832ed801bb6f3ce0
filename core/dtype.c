/* dtype.c -- dtype facts, promotion and float16/bfloat16 conversion. */
#include "dtype.h"

static int default_dtype = MT_FLOAT32;

int mt_dtype_valid(int dt) {
  switch (dt) {
#define X(DT, T, L, S) case DT:
    MT_FOREACH_DTYPE(X)
#undef X
    return 1;
    default: return 0;
  }
}

size_t mt_dtype_size(int dt) {
  switch (dt) {
#define X(DT, T, L, S) case DT: return sizeof(T);
    MT_FOREACH_DTYPE(X)
#undef X
    default: return 0;
  }
}

const char *mt_dtype_name(int dt) {
  switch (dt) {
#define X(NAME, name, T, SZ) case MT_##NAME: return #name;
    MT_DTYPE_LIST(X)
#undef X
    default: return "invalid";
  }
}

/* PyTorch's names in messages: Float, Double, Half, BFloat16, Long, Int, Short, Char, Byte, Bool */
const char *mt_type_title(int dt) {
  switch (dt) {
    case MT_FLOAT32: return "Float";
    case MT_FLOAT64: return "Double";
    case MT_FLOAT16: return "Half";
    case MT_BFLOAT16: return "BFloat16";
    case MT_INT64: return "Long";
    case MT_INT32: return "Int";
    case MT_INT16: return "Short";
    case MT_INT8: return "Char";
    case MT_UINT8: return "Byte";
    case MT_BOOL: return "Bool";
    default: return "Invalid";
  }
}

int mt_dtype_is_floating(int dt) { return mt_is_float(dt); }
int mt_dtype_is_integral(int dt) { return mt_dtype_valid(dt) && !mt_is_float(dt); }
int mt_get_default_dtype(void) { return default_dtype; }
mt_status mt_set_default_dtype(int dt) {
  if (dt != MT_FLOAT32 && dt != MT_FLOAT64 && dt != MT_FLOAT16 && dt != MT_BFLOAT16)
    return mt_error(MT_EDTYPE, "set_default_dtype: only floating dtypes can be the default, got %s", mt_dtype_name(dt));
  default_dtype = dt;
  return MT_OK;
}

/* PyTorch's promotion lattice for the types we have. */
int mt_promote_types(int a, int b) {
  if (a == b) return a;
  if (a == MT_BOOL) return b;
  if (b == MT_BOOL) return a;
  bool fa = mt_is_float(a), fb = mt_is_float(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if (a == MT_FLOAT64 || b == MT_FLOAT64) return MT_FLOAT64;
    if (a == MT_FLOAT32 || b == MT_FLOAT32) return MT_FLOAT32;
    return MT_FLOAT32; /* float16 with bfloat16 */
  }
  /* both integers */
  if (a == MT_UINT8 || b == MT_UINT8) {
    int o = a == MT_UINT8 ? b : a;
    return o == MT_INT8 ? MT_INT16 : o;
  }
  static const int rank[MT_DTYPE_MAX] = {[MT_INT8] = 1, [MT_INT16] = 2, [MT_INT32] = 3, [MT_INT64] = 4};
  return rank[a] > rank[b] ? a : b;
}

/* IEEE half: round to nearest even, with subnormals, inf and nan. */
uint16_t mt_float_to_half(float f) {
  union { float f; uint32_t u; } v = {f};
  uint32_t x = v.u;
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) /* inf or nan */
    return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (absx < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
    if (absx < 0x33000000u) return (uint16_t)sign; /* < 2^-25: rounds to 0 */
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(absx >> 23); /* 14..24 */
    uint32_t half = mant >> (shift);
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t h = ((absx - 0x38000000u) >> 13);
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

float mt_half_to_float_raw(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  union { uint32_t u; float f; } v;
  if (exp == 0) {
    if (mant == 0) { v.u = sign; return v.f; }
    float m = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24 */
    return sign ? -m : m;
  }
  if (exp == 31) v.u = sign | 0x7f800000u | (mant << 13);
  else v.u = sign | ((exp + 112) << 23) | (mant << 13);
  return v.f;
}

uint16_t mt_float_to_bfloat16(float f) {
  union { float f; uint32_t u; } v = {f};
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40); /* quiet nan */
  uint32_t lsb = (v.u >> 16) & 1u;
  return (uint16_t)((v.u + 0x7fffu + lsb) >> 16);
}
float mt_half_to_float(uint16_t h) { return mt_canonical_float(mt_half_to_float_raw(h)); }
float mt_bfloat16_to_float(uint16_t h) { return mt_canonical_float(mt_b2f(h)); }

double mt_number_out(double x) { return mt_canonical_double(x); }
float mt_float_out(float x) { return mt_canonical_float(x); }

double mt_load_double(int dt, const void *p) {
  switch (dt) {
#define X(DT, T, L, S) case DT: { T x = *(const T *)p; return (double)(L); }
    MT_FOREACH_DTYPE(X)
#undef X
    default: return 0;
  }
}

void mt_store_double(int dt, void *p, double v) {
  switch (dt) {
#define X(DT, T, L, S) case DT: *(T *)p = S; break;
    MT_FOREACH_DTYPE(X)
#undef X
    default: break;
  }
}
