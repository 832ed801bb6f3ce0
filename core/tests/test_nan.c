/* Every number the core hands out is a plain number for LuaJIT: NaNs canonical (mt_number_out).
 * Exhaustive over all float32 NaNs (2^23 - 1 payloads, both signs), sampled over every double NaN
 * range LuaJIT uses for its type tags, and through each C path that hands doubles out (item, get,
 * to_doubles, the float16/bfloat16 conversions) for every floating dtype. */
#include <math.h>
#include <moontorch.h>
#include <stdio.h>
#include <string.h>

static int failures;
#define EXPECT(cond, ...)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      if (failures++ < 20) {                                \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);     \
        fprintf(stderr, __VA_ARGS__);                       \
        fprintf(stderr, "\n");                              \
      }                                                     \
    }                                                       \
  } while (0)

static uint64_t bits64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double from64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static uint32_t bits32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float from32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

#define QNAN 0x7ff8000000000000ull
#define SIGN 0x8000000000000000ull

/* what LuaJIT (GC64: tag in bits 47..50 under 13 ones; 32-bit tags: the high word) reads as a
 * number: the canonical NaNs are the only NaNs allowed out */
static int is_plain_number(uint64_t u) {
  if ((u & ~SIGN) <= 0x7ff0000000000000ull) return 1; /* not a NaN */
  return u == QNAN || u == (QNAN | SIGN);
}

/* x out: NaN in, the canonical NaN of the same sign out; anything else unchanged */
static void check_double(uint64_t in) {
  double d = from64(in);
  uint64_t out = bits64(mt_number_out(d));
  if (isnan(d)) {
    EXPECT(out == (QNAN | (in & SIGN)), "mt_number_out(%016llx) = %016llx", (unsigned long long)in,
           (unsigned long long)out);
  } else {
    EXPECT(out == in, "mt_number_out changed %016llx to %016llx", (unsigned long long)in, (unsigned long long)out);
  }
  EXPECT(is_plain_number(out), "%016llx out is not a plain number", (unsigned long long)out);
}

static void test_all_float_nans(void) {
  long n = 0;
  for (uint32_t sign = 0; sign <= 1; sign++) {
    for (uint32_t m = 1; m < (1u << 23); m++) {
      uint32_t in = (sign << 31) | 0x7f800000u | m;
      float f = from32(in);
      uint32_t out = bits32(mt_float_out(f));
      if (out != ((sign << 31) | 0x7fc00000u)) {
        EXPECT(0, "mt_float_out(%08x) = %08x", in, out);
      }
      /* the float widened to double (what LuaJIT does with a float field) and then handed out */
      uint64_t w = bits64(mt_number_out((double)f));
      if (w != (QNAN | ((uint64_t)sign << 63))) EXPECT(0, "mt_number_out((double)%08x) = %016llx", in,
                                                       (unsigned long long)w);
      n++;
    }
  }
  EXPECT(n == 2 * ((1l << 23) - 1), "walked %ld float NaNs", n);
  /* non-NaN floats pass unchanged: infinities, zeros, denormals, the largest finite */
  uint32_t keep[] = {0x7f800000u, 0xff800000u, 0, 0x80000000u, 1, 0x807fffffu, 0x7f7fffffu, 0x3f800000u};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
    EXPECT(bits32(mt_float_out(from32(keep[i]))) == keep[i], "mt_float_out changed %08x", keep[i]);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return rng;
}

static void test_double_tag_ranges(void) {
  /* every 16-bit top (covers each LuaJIT tag: 0xfff8.. .. 0xffff..) with varied low bits */
  for (uint64_t top = 0x7ff0; top <= 0x7fff; top++) {
    for (int k = 0; k < 4096; k++) {
      uint64_t low = k == 0 ? 0 : k == 1 ? 1 : k == 2 ? 0xffffffffffffull : next() & 0xffffffffffffull;
      check_double((top << 48) | low);
      check_double(((top | 0x8000) << 48) | low);
    }
  }
  uint64_t keep[] = {0, SIGN, 0x7ff0000000000000ull, 0xfff0000000000000ull, 1, 0x000fffffffffffffull,
                     0x7fefffffffffffffull, 0x3ff0000000000000ull, bits64(-2.5)};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) check_double(keep[i]);
}

/* a tensor of `dtype` whose elements are the bit patterns `pat` (itemsize bytes each) */
static mt_tensor *tensor_of(int dtype, const void *pat, int64_t n) {
  mt_tensor *t = NULL;
  EXPECT(mt_tensor_empty(&n, 1, dtype, NULL, &t) == MT_OK, "empty: %s", mt_last_error());
  memcpy(t->_data, pat, (size_t)n * mt_dtype_size(dtype));
  return t;
}

static void check_paths(mt_tensor *t, const char *what) {
  int64_t n = t->_numel;
  double buf[64];
  EXPECT(n <= 64, "sample too large");
  EXPECT(mt_tensor_to_doubles(t, buf, n) == MT_OK, "to_doubles: %s", mt_last_error());
  for (int64_t i = 0; i < n; i++) {
    EXPECT(is_plain_number(bits64(buf[i])), "%s: to_doubles[%lld] = %016llx", what, (long long)i,
           (unsigned long long)bits64(buf[i]));
    double g = 0;
    EXPECT(mt_tensor_get(t, &i, &g) == MT_OK, "get");
    EXPECT(is_plain_number(bits64(g)), "%s: get[%lld] = %016llx", what, (long long)i, (unsigned long long)bits64(g));
    mt_tensor *e;
    EXPECT(mt_select(t, 0, i, &e) == MT_OK, "select: %s", mt_last_error());
    double it = 0;
    EXPECT(mt_tensor_item(e, &it) == MT_OK, "item");
    EXPECT(is_plain_number(bits64(it)), "%s: item[%lld] = %016llx", what, (long long)i, (unsigned long long)bits64(it));
    EXPECT(bits64(it) == bits64(g) && bits64(g) == bits64(buf[i]), "%s: the three paths agree at %lld", what,
           (long long)i);
    mt_tensor_release(e);
  }
}

static void test_tensor_paths(void) {
  enum { N = 48 };
  uint64_t d[N];
  uint32_t f[N];
  uint16_t h[N], b[N];
  for (int i = 0; i < N; i++) {
    /* the reported ones first: float32 0xffd00000 (a table), 0xffffffff (nil), 0xffc9cd65; float64
     * high words 0xfffa0000 and every tag; then random NaNs and ordinary numbers */
    uint64_t tops[] = {0xfffa, 0xffff, 0xfff9, 0xfffb, 0xfffc, 0xfffd, 0xfffe, 0x7ff1};
    d[i] = i < 8 ? (tops[i] << 48) | (next() & 0xffffffffffffull) : i % 5 == 0 ? bits64(i * 0.25) : next() | 0x7ff0000000000001ull;
    uint32_t fr[] = {0xffd00000u, 0xffffffffu, 0xffc9cd65u, 0x7fa00001u};
    f[i] = i < 4 ? fr[i] : i % 5 == 0 ? bits32((float)i) : (uint32_t)next() | 0x7f800001u;
    h[i] = i % 5 == 0 ? 0x3c00 : (uint16_t)((next() & 0x83ff) | 0x7c01);
    b[i] = i % 5 == 0 ? 0x3f80 : (uint16_t)((next() & 0x807f) | 0x7f81);
  }
  mt_tensor *t;
  t = tensor_of(MT_FLOAT64, d, N); check_paths(t, "float64"); mt_tensor_release(t);
  t = tensor_of(MT_FLOAT32, f, N); check_paths(t, "float32"); mt_tensor_release(t);
  t = tensor_of(MT_FLOAT16, h, N); check_paths(t, "float16"); mt_tensor_release(t);
  t = tensor_of(MT_BFLOAT16, b, N); check_paths(t, "bfloat16"); mt_tensor_release(t);
  /* a non-contiguous view goes through the same paths */
  t = tensor_of(MT_FLOAT32, f, N);
  mt_tensor *v;
  int64_t s2[2] = {N / 2, 2};
  EXPECT(mt_view(t, s2, 2, &v) == MT_OK, "view");
  mt_tensor *col;
  EXPECT(mt_select(v, 1, 1, &col) == MT_OK, "select");
  check_paths(col, "float32 strided");
  mt_tensor_release(col);
  mt_tensor_release(v);
  mt_tensor_release(t);
  for (int i = 0; i < N; i++) {
    EXPECT(is_plain_number(bits64((double)mt_half_to_float(h[i]))), "mt_half_to_float(%04x)", h[i]);
    EXPECT(is_plain_number(bits64((double)mt_bfloat16_to_float(b[i]))), "mt_bfloat16_to_float(%04x)", b[i]);
  }
}

int main(void) {
  test_all_float_nans();
  test_double_tag_ranges();
  test_tensor_paths();
  EXPECT(mt_get_stats()->live_tensors == 0, "live tensors at exit: %lld", (long long)mt_get_stats()->live_tensors);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("test_nan: all passed\n");
  return failures ? 1 : 0;
}
