/* k_random.cu -- random numbers on the device, as PyTorch's CUDA generator draws them: Philox4x32-10 (the
 * counter-based generator of Random123 and cuRAND) keyed by the seed, thread i of the launch on counter
 * subsequence i starting at the generator's offset, each thread drawing four 32-bit words per round for
 * the elements i, i + stride, i + 2 stride, i + 3 stride of a grid-stride loop (two doubles per round for
 * float64), then PyTorch's transforms: uniform (cuRAND's (0, 1] turned into [0, 1)), normal (Box-Muller),
 * bernoulli, exponential, random integers. The host advances the offset by what a launch used. */
#include "math.cuh"

namespace MT_GPU_NS {

struct u4 {
  uint32_t x, y, z, w;
};

MT_HD uint32_t mulhi32(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }

/* Philox4x32-10: ten rounds over the counter with the key bumped between them */
MT_HD u4 philox(u4 c, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t lo0 = 0xD2511F53u * c.x, hi0 = mulhi32(0xD2511F53u, c.x);
    uint32_t lo1 = 0xCD9E8D57u * c.z, hi1 = mulhi32(0xCD9E8D57u, c.z);
    c = u4{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
  }
  return c;
}

/* cuRAND's state after curand_init(seed, subsequence, offset) (offsets here are multiples of 4): the
 * counter's high half the subsequence, its low half offset / 4 */
struct philox_state {
  u4 ctr;
  uint32_t k0, k1;
  MT_HD void init(uint64_t seed, uint64_t subsequence, uint64_t offset) {
    k0 = (uint32_t)seed;
    k1 = (uint32_t)(seed >> 32);
    uint64_t q = offset / 4;
    ctr = u4{(uint32_t)q, (uint32_t)(q >> 32), (uint32_t)subsequence, (uint32_t)(subsequence >> 32)};
  }
  MT_HD u4 next() {
    u4 r = philox(ctr, k0, k1);
    if (++ctr.x == 0 && ++ctr.y == 0 && ++ctr.z == 0) ++ctr.w;
    return r;
  }
};

const float TWO32_INV = 2.3283064e-10f;                    /* 2^-32 */
const double TWO53_INV = 1.1102230246251565404236316680908203125e-16; /* 2^-53 */
const float TWO32_INV_2PI = 2.3283064e-10f * 6.2831855f;

/* cuRAND's conversions: a float in (0, 1], a double in (0, 1] from two words */
MT_DEV float u01f(uint32_t x) { return x * TWO32_INV + TWO32_INV / 2.0f; }
MT_DEV double u01d(uint32_t x, uint32_t y) {
  unsigned long long z = (unsigned long long)x ^ ((unsigned long long)y << (53 - 32));
  return z * TWO53_INV + TWO53_INV / 2.0;
}

/* the draws of one round: 4 floats or 2 doubles (normal: Box-Muller pairs) */
enum { R_UNIFORM, R_NORMAL, R_BERNOULLI, R_EXPONENTIAL, R_RANDOM, R_RANDOM64, R_BERNOULLI_T, R_KEYS };

template <typename T> struct store_as {
  static MT_DEV void put(char *p, double v) { *(T *)p = convert_to<T>::from(v); }
};

MT_DEV void put_value(int dt, char *p, double v) {
  switch (dt) {
  case MT_UINT8: *(uint8_t *)p = convert_to<uint8_t>::from(v); break;
  case MT_INT8: *(int8_t *)p = convert_to<int8_t>::from(v); break;
  case MT_INT16: *(int16_t *)p = convert_to<int16_t>::from(v); break;
  case MT_INT32: *(int32_t *)p = convert_to<int32_t>::from(v); break;
  case MT_INT64: *(int64_t *)p = convert_to<int64_t>::from(v); break;
  case MT_FLOAT16: *(half_t *)p = convert_to<half_t>::from(v); break;
  case MT_FLOAT32: *(float *)p = (float)v; break;
  case MT_FLOAT64: *(double *)p = v; break;
  case MT_BOOL: *(bool_t *)p = convert_to<bool_t>::from(v); break;
  default: *(bf16_t *)p = convert_to<bf16_t>::from(v); break;
  }
}
MT_DEV void put_int(int dt, char *p, int64_t v) {
  switch (dt) {
  case MT_UINT8: *(uint8_t *)p = (uint8_t)v; break;
  case MT_INT8: *(int8_t *)p = (int8_t)v; break;
  case MT_INT16: *(int16_t *)p = (int16_t)v; break;
  case MT_INT32: *(int32_t *)p = (int32_t)v; break;
  case MT_INT64: *(int64_t *)p = v; break;
  case MT_FLOAT16: *(half_t *)p = convert_to<half_t>::from(v); break;
  case MT_FLOAT32: *(float *)p = (float)v; break;
  case MT_FLOAT64: *(double *)p = (double)v; break;
  case MT_BOOL: *(bool_t *)p = convert_to<bool_t>::from(v); break;
  default: *(bf16_t *)p = convert_to<bf16_t>::from(v); break;
  }
}
MT_DEV double get_value(int dt, const char *p) {
  switch (dt) {
  case MT_FLOAT32: return *(const float *)p;
  case MT_FLOAT64: return *(const double *)p;
  case MT_FLOAT16: return half_to_float(((const half_t *)p)->bits);
  case MT_BFLOAT16: return bf16_to_float(((const bf16_t *)p)->bits);
  default: return 0;
  }
}

/* one fill: `it` is the tensor's own geometry (data[0]) and, for bernoulli with a tensor, the
 * probabilities' (data[1]); keys (randperm) are written as uint64 into data[0] */
__global__ void random_kernel(mt_gpu_iter it, mt_gpu_random r) {
  const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int unroll = r.doubles ? 2 : 4;
  philox_state st;
  st.init(r.seed, (uint64_t)idx, r.offset);
  const int64_t n = it.numel;
  const int64_t rounded = ((n - 1) / (stride * unroll) + 1) * stride * unroll;
  const int item = mt_gpu_itemsize(it.dtype[0]);
  for (int64_t li = idx; li < rounded; li += stride * unroll) {
    u4 w = st.next();
    double v[4];
    uint64_t raw[4];
    if (r.kind == R_NORMAL) { /* cuRAND's Box-Muller: (s sin v, s cos v) of each pair */
      if (r.doubles) {
        double u = u01d(w.x, w.y), a = u01d(w.z, w.w) * 2.0 * 3.14159265358979323846;
        double s = sqrt(-2.0 * log(u));
        v[0] = s * sin(a);
        v[1] = s * cos(a);
      } else {
        float u = u01f(w.x), a = w.y * TWO32_INV_2PI + TWO32_INV_2PI / 2.0f;
        float s = sqrtf(-2.0f * logf(u));
        v[0] = s * sinf(a);
        v[1] = s * cosf(a);
        u = u01f(w.z), a = w.w * TWO32_INV_2PI + TWO32_INV_2PI / 2.0f;
        s = sqrtf(-2.0f * logf(u));
        v[2] = s * sinf(a);
        v[3] = s * cosf(a);
      }
    } else if (r.doubles) {
      v[0] = u01d(w.x, w.y);
      v[1] = u01d(w.z, w.w);
    } else {
      v[0] = u01f(w.x), v[1] = u01f(w.y), v[2] = u01f(w.z), v[3] = u01f(w.w);
    }
    raw[0] = w.x, raw[1] = w.y, raw[2] = w.z, raw[3] = w.w;
    for (int k = 0; k < unroll; k++) {
      int64_t i = li + stride * k;
      if (i >= n) continue;
      char *p = it.data[0] + (it.flat ? i : iter_offset(it, 0, i)) * item;
      double x = v[k];
      switch (r.kind) {
      case R_UNIFORM: {
        double u = r.doubles ? x : (double)(float)x;
        if (u == 1.0) u = 0.0; /* (0, 1] -> [0, 1) */
        if (r.doubles) put_value(it.dtype[0], p, u * r.a + r.b);
        else put_value(it.dtype[0], p, (double)((float)u * (float)r.a + (float)r.b));
        break;
      }
      case R_NORMAL:
        if (r.doubles) put_value(it.dtype[0], p, x * r.b + r.a);
        else put_value(it.dtype[0], p, (double)((float)x * (float)r.b + (float)r.a));
        break;
      case R_BERNOULLI: put_int(it.dtype[0], p, x < r.a ? 1 : 0); break;
      case R_BERNOULLI_T: {
        const char *q = it.data[1] + (it.flat ? i * it.inc[1] : iter_offset(it, 1, i)) * mt_gpu_itemsize(it.dtype[1]);
        put_int(it.dtype[0], p, x < get_value(it.dtype[1], q) ? 1 : 0);
        break;
      }
      case R_EXPONENTIAL: { /* -1/lambda log(u), u in (0, 1], as PyTorch: -eps/2 for log(u) near 1 */
        double e;
        if (r.doubles) {
          double l = x >= 1.0 - 2.220446049250313e-16 / 2 ? -2.220446049250313e-16 / 2 : log(x);
          e = -1.0 / r.a * l;
        } else {
          float xf = (float)x, l = xf >= 1.0f - 1.1920929e-07f / 2 ? -1.1920929e-07f / 2 : logf(xf);
          e = (double)(-1.0f / (float)r.a * l);
        }
        put_value(it.dtype[0], p, e);
        break;
      }
      case R_RANDOM: put_int(it.dtype[0], p, (int64_t)(raw[k] % (uint32_t)r.range) + r.from); break;
      case R_RANDOM64: { /* two words a value (the doubles' rounds) */
        uint64_t z = k == 0 ? ((uint64_t)w.y << 32 | w.x) : ((uint64_t)w.w << 32 | w.z);
        put_int(it.dtype[0], p, (int64_t)(z % r.range) + r.from);
        break;
      }
      default: { /* keys: 64 bits a value */
        uint64_t z = k == 0 ? ((uint64_t)w.y << 32 | w.x) : ((uint64_t)w.w << 32 | w.z);
        ((uint64_t *)it.data[0])[i] = z;
      }
      }
    }
  }
}

/* the launch's shape, and the offset it uses: ((n - 1) / (threads * blocks * unroll) + 1) * 4 */
static int random(const mt_gpu_iter *it, const mt_gpu_random *r, uint64_t *used, void *stream) {
  int64_t n = it->numel;
  *used = 0;
  if (n == 0) return 0;
  int unroll = r->doubles ? 2 : 4;
  unsigned blocks = blocks_for(n, unroll);
  *used = (uint64_t)(((n - 1) / ((int64_t)THREADS * blocks * unroll) + 1) * 4);
  mt_launch(random_kernel, dim3(blocks), dim3(THREADS), 0, stream, *it, *r);
  return 0;
}

/* multinomial with replacement: row r's samples by inverse CDF over its cumulative sums (cum, float64,
 * rows of k) with one uniform each (u, rows of s); out int64 positions from base */
__global__ void multinomial_kernel(const double *cum, const double *u, int64_t *out, int64_t rows, int64_t k,
                                   int64_t s, int64_t base) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < rows * s; e += step) {
    int64_t r = e / s;
    const double *c = cum + r * k;
    double x = u[e] * c[k - 1];
    int64_t lo = 0, hi = k - 1;
    while (lo < hi) { /* the first category whose cumulative sum exceeds x */
      int64_t m = lo + (hi - lo) / 2;
      if (c[m] > x) hi = m;
      else lo = m + 1;
    }
    while (lo > 0 && c[lo] == c[lo - 1]) lo--; /* never a category of probability 0 */
    out[e] = lo + base;
  }
}
static int multinomial(const double *cum, const double *u, int64_t *out, int64_t rows, int64_t k, int64_t s,
                       int64_t base, void *stream) {
  if (rows * s == 0) return 0;
  mt_launch(multinomial_kernel, dim3(blocks_for(rows * s)), dim3(THREADS), 0, stream, cum, u, out, rows, k, s, base);
  return 0;
}

int launch_random(const mt_gpu_iter *it, const mt_gpu_random *r, uint64_t *used, void *stream) {
  return random(it, r, used, stream);
}
int launch_multinomial(const double *cum, const double *u, int64_t *out, int64_t rows, int64_t k, int64_t s,
                       int64_t base, void *stream) {
  return multinomial(cum, u, out, rows, k, s, base, stream);
}

} // namespace MT_GPU_NS

/* the Philox block function, for a spec's known-answer check (random.c) */
#if defined(__CUDACC__)
#define MT_GPU_PHILOX_FN mt_gpu_real_philox
#else
#define MT_GPU_PHILOX_FN mt_gpu_emu_philox
#endif
extern "C" void MT_GPU_PHILOX_FN(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
extern "C" void MT_GPU_PHILOX_FN(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  MT_GPU_NS::u4 r = MT_GPU_NS::philox(MT_GPU_NS::u4{ctr[0], ctr[1], ctr[2], ctr[3]}, key[0], key[1]);
  out[0] = r.x, out[1] = r.y, out[2] = r.z, out[3] = r.w;
}
