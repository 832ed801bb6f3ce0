/* random.c -- the random number generator and the random fills.
 *
 * The generator is a 32-bit Mersenne Twister (mt19937) whose streams equal PyTorch's CPU
 * generator (at::CPUGeneratorImpl, PyTorch 1.13) for the same seed, and every fill below draws
 * from it the way PyTorch's CPU kernels do, element by element in the same order, so that a
 * script seeded with torch.manual_seed(s) prints the same numbers in both. The facts this file
 * relies on (each was checked against PyTorch 1.13 itself; see spec/random_spec.lua):
 *
 *  - seeding: state[0] = seed mod 2^32, state[i] = 1812433253 * (s ^ (s >> 30)) + i (the
 *    classic init_genrand); the 64-bit seed itself is kept as the initial seed. A fresh generator
 *    owes one twist before its first output ("left" starts at 1).
 *  - 32-bit draws are mt19937 outputs; a 64-bit draw is two of them, the first the high half.
 *  - uniform reals: float takes the low 24 bits of a 32-bit draw times 2^-24, double the low
 *    53 bits of a 64-bit draw times 2^-53, float16 and bfloat16 the low 11 / 8 bits of a 32-bit
 *    draw; then x * (to - from) + from in the type's accumulation type (float for the 16-bit
 *    types), with from and to first rounded to the tensor's type.
 *  - normal_: a contiguous tensor of 16 elements or more is first filled with uniforms (in its
 *    own type), then each block of 16 is turned into normals by Box-Muller pairing element j
 *    with element j + 8 (u1 = 1 - x[j], u2 = x[j+8]; r = sqrt(-2 log u1), theta = 2 pi u2; x[j] =
 *    r cos theta, x[j+8] = r sin theta); when n is not a multiple of 16 the last 16 elements are
 *    drawn again and recomputed. Any other tensor draws one double normal per element (u1, u2
 *    from 53-bit draws, r = sqrt(-2 log(1 - u2)), theta = 2 pi u1, returns r cos theta and keeps
 *    r sin theta in the generator for the next call).
 *  - random_(from, to): (draw mod (to - from)) + from, the draw 64-bit when the range is 2^32 or
 *    more and the type is int64, float64, float32 or bfloat16, else 32-bit.
 *  - randperm(n): for n < (2^32 - 1) / 20, the identity then for i in [0, n-1): swap i with
 *    i + (32-bit draw mod (n - i)); beyond, the inside-out Fisher-Yates with 64-bit draws.
 *  - bernoulli_(p scalar) and exponential_: one double uniform per element (u < p;
 *    -1/lambda * log(1 - u)); bernoulli_(p tensor): a float uniform per element when p is not
 *    double, a double uniform when it is.
 *  - multinomial without replacement (or with one sample): q ~ Exp(1) in probs' type, then the
 *    top n_sample of probs / q; with replacement: per row a normalised cumulative sum and a
 *    binary search for each 53-bit uniform.
 *  - the state as bytes: PyTorch's CPUGeneratorImplState (5056 bytes, little-endian x86-64):
 *    u64 initial seed, i32 left, i32 seeded, u64 next, u64 state[624], f64 normal_x, f64
 *    normal_y (the cached double normal), f64 normal_rho, i32 normal_is_valid, 4 bytes padding,
 *    f32 cached float normal, u8 its validity, 3 bytes padding. The 5048-byte legacy layout is
 *    accepted too.
 *
 * This file is the CPU's engine (mt_cpu_rng: the state, seeding, the state as bytes) and its fills; the
 * generators that hold an engine's state, the default one of each device and the public API are
 * device-neutral (core/generator.h, core/ops/generator.c). Every draw holds the generator's lock.
 * Fills run on one thread, in the order PyTorch's TensorIterator visits the elements (the output's
 * dimensions by increasing stride). The dispatch layer (core/ops/random.c) checks the arguments and
 * hands each kernel a CPU generator (the default one when the caller gave none); these kernels draw. */
#include "cpu.h"
#include "../generator.h"

#include <pthread.h>
#include <stdlib.h>

#define MT_N 624
#define MT_M 397

/* the engine's state, in a generator (core/generator.h) */
typedef struct cpu_engine {
  uint64_t seed;
  int32_t left;
  int32_t seeded;
  uint32_t next;
  uint32_t state[MT_N];
  int has_double_normal;
  double double_normal;
  int has_float_normal;
  float float_normal;
} cpu_engine;

/* ---------------------------------------------------------------- the engine */
static void engine_seed(cpu_engine *g, uint64_t seed) {
  g->seed = seed;
  g->seeded = 1;
  g->state[0] = (uint32_t)(seed & 0xffffffffu);
  for (uint32_t i = 1; i < MT_N; i++) g->state[i] = 1812433253u * (g->state[i - 1] ^ (g->state[i - 1] >> 30)) + i;
  g->left = 1;
  g->next = 0;
  g->has_double_normal = 0;
  g->has_float_normal = 0;
}

static inline uint32_t twist(uint32_t u, uint32_t v) {
  uint32_t y = (u & 0x80000000u) | (v & 0x7fffffffu);
  return (y >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
}

static void engine_twist(cpu_engine *g) {
  uint32_t *s = g->state;
  int i = 0;
  for (; i < MT_N - MT_M; i++) s[i] = s[i + MT_M] ^ twist(s[i], s[i + 1]);
  for (; i < MT_N - 1; i++) s[i] = s[i + MT_M - MT_N] ^ twist(s[i], s[i + 1]);
  s[MT_N - 1] = s[MT_M - 1] ^ twist(s[MT_N - 1], s[0]);
  g->left = MT_N;
  g->next = 0;
}

/* One 32-bit output (the caller holds the lock). */
static inline uint32_t draw32(cpu_engine *g) {
  if (--g->left == 0) engine_twist(g);
  uint32_t y = g->state[g->next++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

static inline uint64_t draw64(cpu_engine *g) {
  uint64_t hi = draw32(g);
  uint64_t lo = draw32(g);
  return (hi << 32) | lo;
}

static inline float uniform_f(cpu_engine *g) { return (float)(draw32(g) & 0xffffffu) * (1.0f / 16777216.0f); }
static inline double uniform_d(cpu_engine *g) {
  return (double)(draw64(g) & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/* A standard normal as PyTorch's normal_distribution<double> makes it, with its cache. */
static double normal_d(cpu_engine *g) {
  if (g->has_double_normal) {
    g->has_double_normal = 0;
    return g->double_normal;
  }
  double u1 = uniform_d(g);
  double u2 = uniform_d(g);
  double r = sqrt(-2.0 * log(1.0 - u2));
  double theta = 2.0 * M_PI * u1;
  g->double_normal = r * sin(theta);
  g->has_double_normal = 1;
  return r * cos(theta);
}

/* ---------------------------------------------------------------- the engine, for generator.h */
static void cpu_seed(void *engine, uint64_t seed) { engine_seed(engine, seed); }
static uint64_t cpu_initial_seed(const void *engine) { return ((const cpu_engine *)engine)->seed; }

/* ---------------------------------------------------------------- the state as bytes */
#define ST_SEED 0
#define ST_LEFT 8
#define ST_SEEDED 12
#define ST_NEXT 16
#define ST_STATE 24
#define ST_NORMAL_X (ST_STATE + 8 * MT_N) /* 5016 */
#define ST_NORMAL_Y (ST_NORMAL_X + 8)
#define ST_NORMAL_RHO (ST_NORMAL_X + 16)
#define ST_NORMAL_VALID (ST_NORMAL_X + 24) /* 5040 */
#define ST_LEGACY_SIZE (ST_NORMAL_VALID + 8) /* 5048 */
#define ST_FLOAT_NORMAL ST_LEGACY_SIZE
#define ST_FLOAT_VALID (ST_LEGACY_SIZE + 4)
#define ST_SIZE (ST_LEGACY_SIZE + 8) /* 5056 */


static inline void put(uint8_t *buf, size_t at, const void *v, size_t n) { memcpy(buf + at, v, n); }
static inline void get(const uint8_t *buf, size_t at, void *v, size_t n) { memcpy(v, buf + at, n); }

static void cpu_get_state(const void *engine, uint8_t *buf) {
  const cpu_engine *g = engine;
  memset(buf, 0, ST_SIZE);
  put(buf, ST_SEED, &g->seed, 8);
  put(buf, ST_LEFT, &g->left, 4);
  put(buf, ST_SEEDED, &g->seeded, 4);
  uint64_t next = g->next;
  put(buf, ST_NEXT, &next, 8);
  for (int i = 0; i < MT_N; i++) {
    uint64_t v = g->state[i];
    put(buf, ST_STATE + 8 * (size_t)i, &v, 8);
  }
  if (g->has_double_normal) {
    int32_t one = 1;
    put(buf, ST_NORMAL_Y, &g->double_normal, 8);
    put(buf, ST_NORMAL_VALID, &one, 4);
  }
  if (g->has_float_normal) {
    put(buf, ST_FLOAT_NORMAL, &g->float_normal, 4);
    buf[ST_FLOAT_VALID] = 1;
  }
}

static mt_status cpu_set_state(void *engine, const uint8_t *buf, size_t n) {
  cpu_engine *g = engine;
  if (!buf || (n != ST_SIZE && n != ST_LEGACY_SIZE))
    return mt_error(MT_EINVAL,
                    "set_rng_state: Expected either a CPUGeneratorImplStateLegacy of size %d or a "
                    "CPUGeneratorImplState of size %d but found the input RNG state size to be %zu",
                    ST_LEGACY_SIZE, ST_SIZE, buf ? n : 0);
  uint64_t seed, next;
  int32_t left, seeded, valid;
  get(buf, ST_SEED, &seed, 8);
  get(buf, ST_LEFT, &left, 4);
  get(buf, ST_SEEDED, &seeded, 4);
  get(buf, ST_NEXT, &next, 8);
  get(buf, ST_NORMAL_VALID, &valid, 4);
  uint32_t next32 = (uint32_t)next;
  /* seeded is a bool in the engine: any non-zero value reads as true */
  if (!seeded || left <= 0 || left > MT_N || next32 > MT_N)
    return mt_error(MT_EINVAL, "set_rng_state: Invalid mt19937 state");
  int has_d = 0, has_f = 0;
  double dn = 0;
  float fn = 0;
  if (n == ST_SIZE) {
    if (valid) { has_d = 1; get(buf, ST_NORMAL_Y, &dn, 8); }
    if (buf[ST_FLOAT_VALID]) { has_f = 1; get(buf, ST_FLOAT_NORMAL, &fn, 4); }
  } else if (valid) { /* the legacy layout kept the uniform and the radius of the pending normal */
    double x, rho;
    get(buf, ST_NORMAL_X, &x, 8);
    get(buf, ST_NORMAL_RHO, &rho, 8);
    has_d = 1;
    dn = rho * sin(2.0 * M_PI * x);
  }
  g->seed = seed;
  g->left = left;
  g->seeded = 1;
  g->next = next32;
  for (int i = 0; i < MT_N; i++) {
    uint64_t v;
    get(buf, ST_STATE + 8 * (size_t)i, &v, 8);
    g->state[i] = (uint32_t)v;
  }
  g->has_double_normal = has_d;
  g->double_normal = dn;
  g->has_float_normal = has_f;
  g->float_normal = fn;
  return MT_OK;
}


const mt_rng_engine mt_cpu_rng = {
    .name = "mt19937",
    .size = sizeof(cpu_engine),
    .state_size = ST_SIZE,
    .seed = cpu_seed,
    .initial_seed = cpu_initial_seed,
    .get_state = cpu_get_state,
    .set_state = cpu_set_state,
};

/* ---------------------------------------------------------------- element order and stores */
/* A fill visits the elements of its tensor (and of a second operand: bernoulli's p) one by one,
 * serially, on the strided iterator in element order (iter.c): the order PyTorch's
 * TensorIterator gives them, in which its CPU generator fills them (size-1 dims dropped, the rest
 * by the first operand's stride, increasing; ties by the second's). */

/* the iterator over a (and b, of a's shape) */
static void elements_init(mt_iter *it, const mt_tensor *a, const mt_tensor *b) {
  const mt_tensor *ops[2] = {a, b};
  mt_iter_init(it, ops, b ? 2 : 1, a->_sizes, a->_ndim);
}
/* EACH(fn): fn_rows, the iterator's loop function calling fn(ctx, p0, p1) for every element of a
 * row (p1: the second operand, NULL without one); each_element(it, fn, ctx) runs it serially */
#define EACH(fn)                                                                      \
  static inline __attribute__((always_inline)) void fn##_rows(void *ctx, char **p, const int64_t *st, int64_t n) { \
    char *p0 = p[0];                                                                  \
    for (int64_t i = 0; i < n; i++, p0 += st[0]) fn(ctx, p0, NULL);                   \
  }
#define EACH2(fn)                                                                     \
  static inline __attribute__((always_inline)) void fn##_rows(void *ctx, char **p, const int64_t *st, int64_t n) { \
    char *p0 = p[0];                                                                  \
    const char *p1 = p[1];                                                            \
    for (int64_t i = 0; i < n; i++, p0 += st[0], p1 += st[1]) fn(ctx, p0, p1);        \
  }
#define each_element(it, fn, ctx) mt_iter_range((it), fn##_rows, (ctx), 0, (it)->numel)

static inline void store_double(int dt, char *p, double v) {
  switch (dt) {
#define X(DT, T, L, S) case DT: *(T *)p = S; break;
    MT_FOREACH_DTYPE(X)
#undef X
  }
}

static inline void store_int64(int dt, char *p, int64_t v) {
  switch (dt) {
#define X(DT, T, L, S) case DT: *(T *)p = S; break;
    MT_FOREACH_DTYPE(X)
#undef X
  }
}

static inline double load_double(int dt, const char *p) {
  switch (dt) {
#define X(DT, T, L, S) case DT: { T x = *(const T *)p; return (double)(L); }
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return 0;
}

static inline float round_to(int dt, float v) {
  if (dt == MT_FLOAT16) return mt_h2f(mt_f2h(v));
  if (dt == MT_BFLOAT16) return mt_b2f(mt_f2b(v));
  return v;
}


/* ---------------------------------------------------------------- uniform_ */
typedef struct fill_ctx {
  cpu_engine *g;
  int dt;
  double a, b;  /* parameters (from/to, mean/std, p, lambda) */
  float fa, fb;
  uint64_t range;
  int64_t base;
  int wide;
} fill_ctx;

static inline __attribute__((always_inline)) void uniform_el(void *ctx, char *p, const char *unused) {
  fill_ctx *c = ctx;
  switch (c->dt) {
    case MT_FLOAT64: *(double *)p = fma(uniform_d(c->g), c->b - c->a, c->a); break;
    case MT_FLOAT32: *(float *)p = fmaf(uniform_f(c->g), c->fb - c->fa, c->fa); break;
    case MT_FLOAT16: {
      float x = (float)(draw32(c->g) & 0x7ffu) * (1.0f / 2048.0f);
      *(mt_half *)p = mt_f2h(fmaf(x, c->fb - c->fa, c->fa));
    } break;
    case MT_BFLOAT16: {
      float x = (float)(draw32(c->g) & 0xffu) * (1.0f / 256.0f);
      *(mt_bf16 *)p = mt_f2b(fmaf(x, c->fb - c->fa, c->fa));
    } break;
  }
}
EACH(uniform_el)

mt_status mt_cpu_uniform(mt_tensor *t, double from, double to, mt_generator *gen) {
  cpu_engine *g = mt_generator_engine(gen);
  fill_ctx c = {.g = g, .dt = t->_dtype, .a = from, .b = to};
  c.fa = round_to(t->_dtype, (float)from);
  c.fb = round_to(t->_dtype, (float)to);
  if (t->_numel == 0) return MT_OK;
  mt_iter w;
  elements_init(&w, t, NULL);
  pthread_mutex_lock(&gen->lock);
  each_element(&w, uniform_el, &c);
  pthread_mutex_unlock(&gen->lock);
  return MT_OK;
}

/* ---------------------------------------------------------------- normal_ */
static inline __attribute__((always_inline)) void normal_el(void *ctx, char *p, const char *unused) {
  fill_ctx *c = ctx;
  store_double(c->dt, p, fma(normal_d(c->g), c->b, c->a));
}
EACH(normal_el)

/* ---- float32: PyTorch 1.13's vectorised Box-Muller, reproduced to the bit
 *
 * For a contiguous float32 tensor of 16 or more elements PyTorch 1.13 on x86-64 runs its AVX2 kernel
 * (normal_fill_16_AVX2) whenever its CPU capability is AVX2 or AVX512: 1.13 registers no AVX512
 * normal kernel, so AVX512 falls back to the AVX2 one, and AVX2 is what it picks on any CPU with
 * AVX2 (AVX512 is opt-in in 1.13). That kernel takes log, sin and cos from avx_mathfun.h (Cephes'
 * single-precision polynomials, eight lanes), not from libm, and the compiler fused many of its
 * multiply-adds into FMAs. Only a CPU without AVX2 (or ATEN_CPU_CAPABILITY=default) runs the scalar
 * normal_fill_16 with libm's logf/cosf/sinf instead: those numbers differ and are not reproduced.
 *
 * How this was established: Debian's libtorch_cpu.so.1.13 registers normal_stub for DEFAULT and AVX2
 * and leaves its AVX512 slot empty (`nm -D`: the AVX512 symbol is in .bss); the AVX2 function's
 * machine code (objdump of the function that slot points to) shows the operation order below,
 * including which products and sums became one FMA, and the constants it loads (read from the
 * library's .rodata). The code below follows that order; each step is either an exact operation
 * (masks, conversions, exponent arithmetic), one IEEE rounding (+, -, *, sqrt) or one fused
 * multiply-add, so any implementation of those steps gives the same bits. Checked against PyTorch
 * 1.13 itself (python3-torch 1.13.1+dfsg-4): torch.randn(10^6) after manual_seed(0), every size from
 * 16 to 59, 100, 1000 and 4097 (the recomputed tail), and normal_(mean, std) with four (mean, std)
 * pairs: 0 differing bits out of 1,010,859 values, for the scalar and the AVX2 paths alike
 * (spec/random_normal_spec.lua holds a hash of the 10^6 values and a sample of them).
 *
 * The domain is narrow: u1 = 1 - u lies in [2^-24, 1] and theta = 2 pi u2 in [0, 2 pi), so the
 * reduction never meets a denormal, a negative or a large argument. */
#define F32(bits) ((union { uint32_t u; float f; }){.u = (bits)}.f)
static inline uint32_t f32_bits(float f) { return (union { float f; uint32_t u; }){.f = f}.u; }
/* ln(x) = e ln 2 + log1p(f): Cephes logf's degree-8 polynomial in f, ln 2 as 0.693359375 - 2.12194440e-4 */
#define LOG_P0 F32(0x3d9021bbu) /* 7.0376836292e-2 */
static const uint32_t log_p[8] = {0xbdebd1b8u, 0x3def251au, 0xbdfe5d4fu, 0x3e11e9bfu,
                                  0xbe2aae50u, 0x3e4cceacu, 0xbe7ffffcu, 0x3eaaaaaau};
#define LN2_LO F32(0xb95e8083u) /* -2.12194440e-4 */
#define LN2_HI F32(0x3f318000u) /* 0.693359375 */
#define SQRT_HALF F32(0x3f3504f3u)
/* sin and cos: x reduced by multiples of pi/4 (pi/4 in three parts), then Cephes sinf/cosf polynomials */
#define FOUR_OVER_PI F32(0x3fa2f983u)
#define PIO4_A F32(0xbf490000u) /* -0.78515625 */
#define PIO4_B F32(0xb97da000u) /* -2.4187564849853515625e-4 */
#define PIO4_C F32(0xb3222169u) /* -3.77489497744594108e-8 */
#define COS_P0 F32(0x37ccf5ceu)
#define COS_P1 F32(0xbab6061au)
#define COS_P2 F32(0x3d2aaaa5u)
#define SIN_P0 F32(0xb94ca1f9u)
#define SIN_P1 F32(0x3c08839eu)
#define SIN_P2 F32(0xbe2aaaa3u)
#define TWO_PI_F F32(0x40c90fdbu) /* (float)(2 pi) */

/* one lane: a, b the uniforms x[j], x[j + 8]; writes the two normals */
static inline void box_muller_lane(float a, float b, float mean, float std, float *n1, float *n2) {
  /* radius = sqrt(-2 ln(1 - a)) */
  float u = 1.0f - a;
  uint32_t ub = f32_bits(u);
  float e = (float)((int32_t)(ub >> 23) - 127) + 1.0f;
  float m = F32((ub & 0x807fffffu) | 0x3f000000u); /* the mantissa in [0.5, 1) */
  bool low = m < SQRT_HALF;
  float f = m - 1.0f;
  if (low) e = e - 1.0f;
  float elo = e * LN2_LO;
  f = (low ? m : 0.0f) + f;
  float p = LOG_P0;
  for (int k = 0; k < 8; k++) p = fmaf(p, f, F32(log_p[k]));
  float f2 = f * f;
  p = f * p;
  p = fmaf(p, f2, elo);
  p = fmaf(-f2, 0.5f, p);
  float ln = fmaf(e, LN2_HI, f + p);
  float radius = sqrtf(ln * -2.0f);
  /* sin and cos of theta >= 0 */
  float theta = TWO_PI_F * b;
  int32_t q = (int32_t)(theta * FOUR_OVER_PI);
  q = (q + 1) & ~1;
  float qf = (float)q;
  float r = fmaf(qf, PIO4_A, theta);
  r = fmaf(qf, PIO4_B, r);
  r = fmaf(qf, PIO4_C, r);
  float r2 = r * r;
  float c = fmaf(COS_P0, r2, COS_P1);
  c = fmaf(c, r2, COS_P2);
  c = fmaf(r2 * c, r2, -(r2 * 0.5f)) + 1.0f;
  float s = fmaf(SIN_P0, r2, SIN_P1);
  s = fmaf(s, r2, SIN_P2);
  s = fmaf(r2 * s, r, r);
  bool swap = q & 2; /* the octant's cosine is the reduced sine, and its sine the reduced cosine */
  float sinv = swap ? c : s, cosv = swap ? s : c;
  sinv = F32(f32_bits(sinv) ^ ((uint32_t)(q & 4) << 29));
  cosv = F32(f32_bits(cosv) ^ ((uint32_t)(~(q - 2) & 4) << 29));
  *n1 = fmaf(radius * cosv, std, mean);
  *n2 = fmaf(radius * sinv, std, mean);
}

static void normal16_float_scalar(float *x, float mean, float std) {
  for (int j = 0; j < 8; j++) box_muller_lane(x[j], x[j + 8], mean, std, &x[j], &x[j + 8]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BM __attribute__((target("avx2,fma")))
/* the same steps, eight lanes at once (blocks of 16 from x, n of them) */
BM static void normal16_float_avx2(float *x, int64_t blocks, float mean, float std) {
  const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  const __m256 vmean = _mm256_set1_ps(mean), vstd = _mm256_set1_ps(std);
  const __m256i i127 = _mm256_set1_epi32(127), i1 = _mm256_set1_epi32(1), i2 = _mm256_set1_epi32(2),
                i4 = _mm256_set1_epi32(4);
  for (int64_t bl = 0; bl < blocks; bl++, x += 16) {
    __m256 u = _mm256_sub_ps(one, _mm256_loadu_ps(x));
    __m256i ub = _mm256_castps_si256(u);
    __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(ub, 23), i127)), one);
    __m256 m = _mm256_castsi256_ps(
        _mm256_or_si256(_mm256_and_si256(ub, _mm256_set1_epi32((int)0x807fffff)), _mm256_set1_epi32(0x3f000000)));
    __m256 low = _mm256_cmp_ps(m, _mm256_set1_ps(SQRT_HALF), _CMP_LT_OQ);
    __m256 f = _mm256_sub_ps(m, one);
    e = _mm256_sub_ps(e, _mm256_and_ps(low, one));
    __m256 elo = _mm256_mul_ps(e, _mm256_set1_ps(LN2_LO));
    f = _mm256_add_ps(_mm256_and_ps(low, m), f);
    __m256 p = _mm256_set1_ps(LOG_P0);
    for (int k = 0; k < 8; k++) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(F32(log_p[k])));
    __m256 f2 = _mm256_mul_ps(f, f);
    p = _mm256_fmadd_ps(_mm256_mul_ps(f, p), f2, elo);
    p = _mm256_fnmadd_ps(f2, half, p);
    __m256 ln = _mm256_fmadd_ps(e, _mm256_set1_ps(LN2_HI), _mm256_add_ps(f, p));
    __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(ln, _mm256_set1_ps(-2.0f)));

    __m256 theta = _mm256_mul_ps(_mm256_set1_ps(TWO_PI_F), _mm256_loadu_ps(x + 8));
    __m256i q = _mm256_cvttps_epi32(_mm256_mul_ps(theta, _mm256_set1_ps(FOUR_OVER_PI)));
    q = _mm256_andnot_si256(i1, _mm256_add_epi32(q, i1));
    __m256 qf = _mm256_cvtepi32_ps(q);
    __m256 r = _mm256_fmadd_ps(qf, _mm256_set1_ps(PIO4_A), theta);
    r = _mm256_fmadd_ps(qf, _mm256_set1_ps(PIO4_B), r);
    r = _mm256_fmadd_ps(qf, _mm256_set1_ps(PIO4_C), r);
    __m256 r2 = _mm256_mul_ps(r, r);
    __m256 c = _mm256_fmadd_ps(_mm256_set1_ps(COS_P0), r2, _mm256_set1_ps(COS_P1));
    c = _mm256_fmadd_ps(c, r2, _mm256_set1_ps(COS_P2));
    c = _mm256_add_ps(_mm256_fmsub_ps(_mm256_mul_ps(r2, c), r2, _mm256_mul_ps(r2, half)), one);
    __m256 s = _mm256_fmadd_ps(_mm256_set1_ps(SIN_P0), r2, _mm256_set1_ps(SIN_P1));
    s = _mm256_fmadd_ps(s, r2, _mm256_set1_ps(SIN_P2));
    s = _mm256_fmadd_ps(_mm256_mul_ps(r2, s), r, r);
    __m256 swap = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(q, i2), i2));
    __m256 sinv = _mm256_blendv_ps(s, c, swap), cosv = _mm256_blendv_ps(c, s, swap);
    sinv = _mm256_xor_ps(sinv, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(q, i4), 29)));
    cosv = _mm256_xor_ps(cosv, _mm256_castsi256_ps(_mm256_slli_epi32(
                                   _mm256_andnot_si256(_mm256_sub_epi32(q, i2), i4), 29)));
    _mm256_storeu_ps(x, _mm256_fmadd_ps(_mm256_mul_ps(radius, cosv), vstd, vmean));
    _mm256_storeu_ps(x + 8, _mm256_fmadd_ps(_mm256_mul_ps(radius, sinv), vstd, vmean));
  }
}
#endif

/* blocks of 16 uniforms at x turned into normals: the AVX2 path where the kernels' level has it (the
 * same bits as the scalar path, which any CPU runs) */
static void normal16_float(float *x, int64_t blocks, float mean, float std) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static int vec = -1;
  if (vec < 0) vec = mt_cpu_kernel_level() >= MT_CPU_LEVEL_AVX2;
  if (vec) {
    normal16_float_avx2(x, blocks, mean, std);
    return;
  }
#endif
  for (int64_t b = 0; b < blocks; b++) normal16_float_scalar(x + 16 * b, mean, std);
}
static void normal16_double(double *x, double mean, double std) {
  for (int j = 0; j < 8; j++) {
    double u1 = 1.0 - x[j];
    double u2 = x[j + 8];
    double r = sqrt(-2.0 * log(u1));
    double theta = 2.0 * M_PI * u2;
    x[j] = fma(r * cos(theta), std, mean);
    x[j + 8] = fma(r * sin(theta), std, mean);
  }
}
/* float16: the named intermediates are stored as float16, the math functions run in float and
 * (float16 * float) is float; bfloat16: log, sqrt, cos, sin and every operation round to
 * bfloat16 (its math overloads return bfloat16). */
static void normal16_reduced(int dt, float *x, float mean, float std) {
  for (int j = 0; j < 8; j++) {
    float u2 = x[j + 8];
    float theta = round_to(dt, (float)(2.0 * M_PI * (double)u2));
    if (dt == MT_FLOAT16) {
      float u1 = round_to(dt, 1.0f - x[j]);
      float r = round_to(dt, sqrtf(-2.0f * logf(u1)));
      x[j] = round_to(dt, fmaf(r * cosf(theta), std, mean));
      x[j + 8] = round_to(dt, fmaf(r * sinf(theta), std, mean));
    } else {
#define R(v) round_to(dt, (v))
      float u1 = R(1.0f - x[j]);
      float r = R(sqrtf(R(-2.0f * R(logf(u1)))));
      x[j] = R(R(R(r * R(cosf(theta))) * std) + mean);
      x[j + 8] = R(R(R(r * R(sinf(theta))) * std) + mean);
#undef R
    }
  }
}

static float uniform_reduced(cpu_engine *g, int dt) {
  if (dt == MT_FLOAT16) return (float)(draw32(g) & 0x7ffu) * (1.0f / 2048.0f);
  return (float)(draw32(g) & 0xffu) * (1.0f / 256.0f);
}

static mt_status normal_fill_contiguous(mt_tensor *t, double mean, double std, cpu_engine *g) {
  int64_t n = t->_numel;
  int dt = t->_dtype;
  if (dt == MT_FLOAT32) {
    float *x = (float *)t->_data;
    for (int64_t i = 0; i < n; i++) x[i] = uniform_f(g);
    normal16_float(x, n / 16, (float)mean, (float)std);
    if (n % 16) {
      x += n - 16;
      for (int i = 0; i < 16; i++) x[i] = uniform_f(g);
      normal16_float(x, 1, (float)mean, (float)std);
    }
  } else if (dt == MT_FLOAT64) {
    double *x = (double *)t->_data;
    for (int64_t i = 0; i < n; i++) x[i] = uniform_d(g);
    for (int64_t i = 0; i + 16 <= n; i += 16) normal16_double(x + i, mean, std);
    if (n % 16) {
      x += n - 16;
      for (int i = 0; i < 16; i++) x[i] = uniform_d(g);
      normal16_double(x, mean, std);
    }
  } else {
    /* 16-bit types: the uniforms are stored in the tensor's type, so draw them all first (in
     * float, exact for 11- or 8-bit values) and write the finished values back. */
    float *x = malloc((size_t)n * sizeof(float));
    if (!x) return mt_error(MT_ENOMEM, "normal_: out of memory");
    float fm = round_to(dt, (float)mean), fs = round_to(dt, (float)std);
    for (int64_t i = 0; i < n; i++) x[i] = uniform_reduced(g, dt);
    for (int64_t i = 0; i + 16 <= n; i += 16) normal16_reduced(dt, x + i, fm, fs);
    if (n % 16) {
      float *y = x + n - 16;
      for (int i = 0; i < 16; i++) y[i] = uniform_reduced(g, dt);
      normal16_reduced(dt, y, fm, fs);
    }
    for (int64_t i = 0; i < n; i++) store_double(dt, t->_data + i * (int64_t)mt_itemsize(dt), x[i]);
    free(x);
  }
  return MT_OK;
}

mt_status mt_cpu_normal(mt_tensor *t, double mean, double std, mt_generator *gen) {
  cpu_engine *g = mt_generator_engine(gen);
  if (t->_numel == 0) return MT_OK;
  mt_status s = MT_OK;
  pthread_mutex_lock(&gen->lock);
  if (t->_numel >= 16 && (t->_flags & MT_TENSOR_CONTIGUOUS)) {
    s = normal_fill_contiguous(t, mean, std, g);
  } else {
    fill_ctx c = {.g = g, .dt = t->_dtype, .a = mean, .b = std};
    mt_iter w;
    elements_init(&w, t, NULL);
    each_element(&w, normal_el, &c);
  }
  pthread_mutex_unlock(&gen->lock);
  return s;
}

/* ---------------------------------------------------------------- random_ */
static inline __attribute__((always_inline)) void random_el(void *ctx, char *p, const char *unused) {
  fill_ctx *c = ctx;
  uint64_t v = c->wide ? draw64(c->g) : (uint64_t)draw32(c->g);
  store_int64(c->dt, p, (int64_t)(v % c->range + (uint64_t)c->base));
}
EACH(random_el)

/* `to == INT64_MIN` stands for 2^63 (the end of int64's range, which int64_t cannot hold):
 * random_() on an int64 tensor is random_(0, 2^63). */
mt_status mt_cpu_random(mt_tensor *t, int64_t from, int64_t to, mt_generator *gen) {
  cpu_engine *g = mt_generator_engine(gen);
  int dt = t->_dtype;
  bool to_end = to == INT64_MIN;
  fill_ctx c = {.g = g, .dt = dt, .base = from};
  c.range = to_end ? (1ULL << 63) - (uint64_t)from : (uint64_t)to - (uint64_t)from;
  c.wide = c.range >= (1ULL << 32) && (dt == MT_INT64 || dt == MT_FLOAT64 || dt == MT_FLOAT32 || dt == MT_BFLOAT16);
  if (t->_numel == 0) return MT_OK;
  mt_iter w;
  elements_init(&w, t, NULL);
  pthread_mutex_lock(&gen->lock);
  each_element(&w, random_el, &c);
  pthread_mutex_unlock(&gen->lock);
  return MT_OK;
}

/* ---------------------------------------------------------------- bernoulli_ */
static inline __attribute__((always_inline)) void bernoulli_el(void *ctx, char *p, const char *unused) {
  fill_ctx *c = ctx;
  store_int64(c->dt, p, uniform_d(c->g) < c->a ? 1 : 0);
}
EACH(bernoulli_el)

mt_status mt_cpu_bernoulli(mt_tensor *t, double p, mt_generator *gen) {
  cpu_engine *g = mt_generator_engine(gen);
  fill_ctx c = {.g = g, .dt = t->_dtype, .a = p};
  if (t->_numel == 0) return MT_OK;
  mt_iter w;
  elements_init(&w, t, NULL);
  pthread_mutex_lock(&gen->lock);
  each_element(&w, bernoulli_el, &c);
  pthread_mutex_unlock(&gen->lock);
  return MT_OK;
}

typedef struct bern_ctx {
  cpu_engine *g;
  int dt, pdt;
  int bad;
} bern_ctx;

static inline __attribute__((always_inline)) void bernoulli_t_el(void *ctx, char *p, const char *pp) {
  bern_ctx *c = ctx;
  if (c->pdt == MT_FLOAT64) {
    double pv = *(const double *)pp;
    store_int64(c->dt, p, uniform_d(c->g) < pv ? 1 : 0);
  } else {
    float pv = (float)load_double(c->pdt, pp);
    store_int64(c->dt, p, uniform_f(c->g) < pv ? 1 : 0);
  }
}
EACH2(bernoulli_t_el)

static inline __attribute__((always_inline)) void check_p_el(void *ctx, char *pp, const char *unused) {
  bern_ctx *c = ctx;
  double v = load_double(c->pdt, pp);
  if (!(v >= 0 && v <= 1)) c->bad = 1;
}
EACH(check_p_el)

/* p: values in [0, 1] (checked here), expanded to t's shape, not sharing t's memory */
mt_status mt_cpu_bernoulli_tensor(mt_tensor *t, const mt_tensor *p, mt_generator *gen) {
  bern_ctx c = {.g = mt_generator_engine(gen), .dt = t->_dtype, .pdt = p->_dtype};
  if (p->_numel > 0) {
    mt_iter pw;
    elements_init(&pw, p, NULL);
    each_element(&pw, check_p_el, &c);
    if (c.bad) return mt_error(MT_EINVAL, "bernoulli_: Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
  }
  if (t->_numel > 0) {
    mt_iter w;
    elements_init(&w, t, p);
    pthread_mutex_lock(&gen->lock);
    each_element(&w, bernoulli_t_el, &c);
    pthread_mutex_unlock(&gen->lock);
  }
  return MT_OK;
}

/* ---------------------------------------------------------------- exponential_ */
static inline __attribute__((always_inline)) void exponential_el(void *ctx, char *p, const char *unused) {
  fill_ctx *c = ctx;
  double u = uniform_d(c->g);
  store_double(c->dt, p, -1.0 / c->a * log(1.0 - u));
}
EACH(exponential_el)

mt_status mt_cpu_exponential(mt_tensor *t, double lambd, mt_generator *gen) {
  cpu_engine *g = mt_generator_engine(gen);
  fill_ctx c = {.g = g, .dt = t->_dtype, .a = lambd};
  if (t->_numel == 0) return MT_OK;
  mt_iter w;
  elements_init(&w, t, NULL);
  pthread_mutex_lock(&gen->lock);
  each_element(&w, exponential_el, &c);
  pthread_mutex_unlock(&gen->lock);
  return MT_OK;
}

/* ---------------------------------------------------------------- randperm */
mt_status mt_cpu_randperm(mt_tensor *r, int64_t index_base, mt_generator *gen) {
  cpu_engine *g = mt_generator_engine(gen);
  int64_t n = r->_numel;
  int dtype = r->_dtype;
  if (n == 0) return MT_OK;
  int64_t *perm = dtype == MT_INT64 ? (int64_t *)r->_data : malloc((size_t)n * sizeof(int64_t));
  if (!perm) return mt_error(MT_ENOMEM, "randperm: out of memory");
  pthread_mutex_lock(&gen->lock);
  if (n < (int64_t)(UINT32_MAX / 20)) {
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = 0; i < n - 1; i++) {
      int64_t z = (int64_t)(draw32(g) % (uint64_t)(n - i));
      int64_t s = perm[i];
      perm[i] = perm[z + i];
      perm[z + i] = s;
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      int64_t z = (int64_t)(draw64(g) % (uint64_t)(i + 1));
      perm[i] = perm[z];
      perm[z] = i;
    }
  }
  pthread_mutex_unlock(&gen->lock);
  size_t item = mt_itemsize(dtype);
  for (int64_t i = 0; i < n; i++) {
    if (dtype == MT_INT64) perm[i] += index_base;
    else store_int64(dtype, r->_data + i * (int64_t)item, perm[i] + index_base);
  }
  if (dtype != MT_INT64) free(perm);
  return MT_OK;
}

/* ---------------------------------------------------------------- multinomial */
typedef struct keyed {
  double v;
  int64_t i;
} keyed;

/* descending by value, NaN first (as topk's "largest" order), ties by index */
static int keyed_cmp(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  bool xn = isnan(x->v), yn = isnan(y->v);
  if (xn != yn) return xn ? -1 : 1;
  if (!xn && x->v != y->v) return x->v > y->v ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* out: (num_samples) for a 1-D probs, (rows, num_samples) for a 2-D one */
mt_status mt_cpu_multinomial(mt_tensor *r, const mt_tensor *probs, int replacement, int64_t index_base,
                             mt_generator *gen) {
  cpu_engine *g = mt_generator_engine(gen);
  int dt = probs->_dtype;
  int64_t ncat = probs->_sizes[probs->_ndim - 1];
  int64_t ndist = probs->_ndim == 2 ? probs->_sizes[0] : 1;
  int64_t num_samples = r->_sizes[r->_ndim - 1];
  if (r->_numel == 0) return MT_OK;
  int64_t *out = (int64_t *)r->_data;
  int64_t ps0 = probs->_ndim == 2 ? probs->_strides[0] : 0, ps1 = probs->_strides[probs->_ndim - 1];
  size_t item = mt_itemsize(dt);
#define P(i, j) load_double(dt, probs->_data + ((i) * ps0 + (j) * ps1) * (int64_t)item)
  mt_status st = MT_OK;

  if (!replacement || num_samples == 1) {
    /* checks over the whole tensor first, as PyTorch makes them before drawing */
    bool bad = false, zero_row = false;
    for (int64_t i = 0; i < ndist; i++) {
      double sum = 0;
      for (int64_t j = 0; j < ncat; j++) {
        double v = P(i, j);
        if (!(v >= 0 && v < INFINITY)) bad = true;
        sum += v;
      }
      if (sum == 0) zero_row = true;
    }
    if (bad) {
      st = mt_error(MT_EINVAL, "multinomial: probability tensor contains either `inf`, `nan` or element < 0");
      goto fail;
    }
    if (zero_row) {
      st = mt_error(MT_EINVAL, "multinomial: invalid multinomial distribution (sum of probabilities <= 0)");
      goto fail;
    }
    /* q ~ Exp(1) in probs' type, in probs' order (row-major); then the keys probs / q */
    keyed *k = malloc((size_t)(ndist * ncat) * sizeof(keyed));
    if (!k) {
      st = mt_error(MT_ENOMEM, "multinomial: out of memory");
      goto fail;
    }
    pthread_mutex_lock(&gen->lock);
    for (int64_t i = 0; i < ndist * ncat; i++) {
      double q = -log(1.0 - uniform_d(g));
      k[i].v = q;
    }
    pthread_mutex_unlock(&gen->lock);
    for (int64_t i = 0; i < ndist; i++) {
      keyed *row = k + i * ncat;
      for (int64_t j = 0; j < ncat; j++) {
        double pv = P(i, j), q = row[j].v;
        if (dt == MT_FLOAT64) row[j].v = pv / q;
        else {
          float qf = round_to(dt, (float)q);
          row[j].v = round_to(dt, (float)pv / qf);
        }
        row[j].i = j;
      }
      if (num_samples == 1) {
        int64_t best = 0;
        for (int64_t j = 1; j < ncat; j++) {
          if (isnan(row[best].v)) break;
          if (isnan(row[j].v) || row[j].v > row[best].v) best = j;
        }
        out[i * num_samples] = best + index_base;
      } else {
        qsort(row, (size_t)ncat, sizeof(keyed), keyed_cmp);
        for (int64_t j = 0; j < num_samples; j++) out[i * num_samples + j] = row[j].i + index_base;
      }
    }
    free(k);
    return MT_OK;
  }

  /* with replacement: a cumulative distribution per row and a binary search per sample */
  double *cum = malloc((size_t)ncat * sizeof(double));
  if (!cum) {
    st = mt_error(MT_ENOMEM, "multinomial: out of memory");
    goto fail;
  }
  pthread_mutex_lock(&gen->lock);
  for (int64_t i = 0; i < ndist && st == MT_OK; i++) {
    double sum = 0;
    float fsum = 0;
    for (int64_t j = 0; j < ncat; j++) {
      double v = P(i, j);
      if (!(v >= 0)) {
        st = mt_error(MT_EINVAL,
                      "multinomial: invalid multinomial distribution (encountering probability entry < 0)");
        break;
      }
      if (!isfinite(v)) {
        st = mt_error(MT_EINVAL,
                      "multinomial: invalid multinomial distribution (encountering probability entry = infinity or NaN)");
        break;
      }
      if (dt == MT_FLOAT64) {
        sum += v;
        cum[j] = sum;
      } else {
        fsum += (float)v;
        cum[j] = fsum;
      }
    }
    if (st != MT_OK) break;
    if (dt != MT_FLOAT64) sum = fsum;
    if (!(sum > 0)) {
      st = mt_error(MT_EINVAL, "multinomial: invalid multinomial distribution (sum of probabilities <= 0)");
      break;
    }
    for (int64_t j = 0; j < ncat; j++) cum[j] = dt == MT_FLOAT64 ? cum[j] / sum : (double)((float)cum[j] / (float)sum);
    cum[ncat - 1] = 1;
    for (int64_t j = 0; j < num_samples; j++) {
      double u = uniform_d(g);
      int64_t lo = 0, hi = ncat;
      while (hi - lo > 0) {
        int64_t mid = lo + (hi - lo) / 2;
        if (cum[mid] < u) lo = mid + 1;
        else hi = mid;
      }
      out[i * num_samples + j] = lo + index_base;
    }
  }
  pthread_mutex_unlock(&gen->lock);
  free(cum);
#undef P
fail:
  return st;
}

/* ---------------------------------------------------------------- draws for the samplers */
/* One double uniform in [0, 1) and one double standard normal (with the generator's cached second
 * normal), as PyTorch's uniform_real_distribution<double> and normal_distribution<double> take them:
 * what the samplers of torch.distributions (samplers.c) draw. The caller holds the generator's lock. */
double mt_cpu_draw_uniform(mt_generator *gen) { return uniform_d(mt_generator_engine(gen)); }
double mt_cpu_draw_normal(mt_generator *gen) { return normal_d(mt_generator_engine(gen)); }
