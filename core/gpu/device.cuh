/* device.cuh -- what every kernel file (core/gpu/k_*.cu) includes first: CUDA itself under nvcc, or
 * its CPU emulation (emu.h) under the host compiler; the namespace the file's code goes into (one
 * per compilation, so both live in one library); the launch; the dtypes as C++ types with their
 * conversions (float16 and bfloat16 by bits, rounding to nearest even as the CPU's dtype.c does);
 * the strided offsets of mt_gpu_iter; the fault record. Not installed. */
#ifndef MT_GPU_DEVICE_CUH
#define MT_GPU_DEVICE_CUH

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#include <utility>
#define MT_GPU_NS mt_gpu_real
#define MT_GPU_TABLE mt_gpu_real_kernels
#define MT_DYNAMIC_SHARED(T, name)                                                                                   \
  extern __shared__ __align__(16) unsigned char mt_dynamic_smem_[];                                                  \
  T *name = reinterpret_cast<T *>(mt_dynamic_smem_)
/* the launch: the same call in both compilations */
template <typename... P, typename... A>
static inline void mt_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, void *stream, A &&...args) {
  kernel<<<grid, block, smem, (cudaStream_t)stream>>>(std::forward<A>(args)...);
}
#else
#include "emu.h"
#define MT_GPU_NS mt_gpu_emu
#define MT_GPU_TABLE mt_gpu_emu_kernels
#define MT_DYNAMIC_SHARED(T, name) T *name = reinterpret_cast<T *>(::mt_emu::current->dynamic_smem)
#define mt_launch mt_emu_launch
#endif

#include "../moontorch.h"
#include "abi.h"

#include <stdint.h>

#if defined(__CUDACC__)
#define MT_UNROLL _Pragma("unroll")
#else
#define MT_UNROLL
#endif
#define MT_HD __host__ __device__ __forceinline__
#define MT_DEV __device__ __forceinline__

namespace MT_GPU_NS {

/* threads per block of the elementwise and simple kernels, and the grid for n items: enough blocks
 * to fill the device a few times, the kernels' grid-stride loops doing the rest */
const int THREADS = 256;
extern int max_blocks; /* set by the table from the device's multiprocessors (k_table.cu) */
static inline unsigned blocks_for(int64_t n, int per_thread = 1) {
  int64_t b = (n + (int64_t)THREADS * per_thread - 1) / ((int64_t)THREADS * per_thread);
  if (b < 1) b = 1;
  if (b > max_blocks) b = max_blocks;
  return (unsigned)b;
}

/* ---------------------------------------------------------------- dtypes */
struct half_t {
  uint16_t bits;
};
struct bf16_t {
  uint16_t bits;
};

MT_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}
MT_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}

/* the CPU's conversions (core/dtype.c), bit for bit */
MT_HD float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    float m = (float)mant * (1.0f / 16777216.0f);
    return sign ? -m : m;
  }
  if (exp == 31) return bits_to_float(sign | 0x7f800000u | (mant << 13));
  return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
}
MT_HD uint16_t float_to_half(float f) {
  uint32_t x = float_to_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (absx < 0x38800000u) {
    if (absx < 0x33000000u) return (uint16_t)sign;
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(absx >> 23);
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = (absx - 0x38000000u) >> 13;
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
  return (uint16_t)(sign | h);
}
MT_HD float bf16_to_float(uint16_t h) { return bits_to_float((uint32_t)h << 16); }
MT_HD uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  uint32_t lsb = (u >> 16) & 1u;
  return (uint16_t)((u + 0x7fffu + lsb) >> 16);
}

/* a dtype's storage type, the type its values are worked on in (as the CPU's MT_FOREACH_DTYPE:
 * float for the 16-bit floats), and the conversions between them */
template <typename S> struct dtype_of;
#define MT_GPU_DTYPE(S, N, LOAD, STORE)                                                                              \
  template <> struct dtype_of<S> {                                                                                   \
    typedef N native;                                                                                                \
    static MT_HD N load(S x) { return LOAD; }                                                                        \
    static MT_HD S store(N v) { return STORE; }                                                                      \
  };
MT_GPU_DTYPE(uint8_t, uint8_t, x, v)
MT_GPU_DTYPE(int8_t, int8_t, x, v)
MT_GPU_DTYPE(int16_t, int16_t, x, v)
MT_GPU_DTYPE(int32_t, int32_t, x, v)
MT_GPU_DTYPE(int64_t, int64_t, x, v)
MT_GPU_DTYPE(float, float, x, v)
MT_GPU_DTYPE(double, double, x, v)
MT_GPU_DTYPE(half_t, float, half_to_float(x.bits), half_t{float_to_half(v)})
MT_GPU_DTYPE(bf16_t, float, bf16_to_float(x.bits), bf16_t{float_to_bf16(v)})
#undef MT_GPU_DTYPE
struct bool_t {
  uint8_t v;
};
template <> struct dtype_of<bool_t> {
  typedef uint8_t native;
  static MT_HD uint8_t load(bool_t x) { return x.v; }
  static MT_HD bool_t store(uint8_t v) { return bool_t{(uint8_t)(v != 0)}; }
};

/* a value of native type N stored as dtype S, as the CPU's store expressions do it: integers
 * through int64 (so a float is truncated first), bool as != 0, 16-bit floats through float */
template <typename S> struct convert_to {
  template <typename N> static MT_HD S from(N v) { return (S)(int64_t)v; }
};
template <> struct convert_to<int64_t> {
  template <typename N> static MT_HD int64_t from(N v) { return (int64_t)v; }
};
template <> struct convert_to<float> {
  template <typename N> static MT_HD float from(N v) { return (float)v; }
};
template <> struct convert_to<double> {
  template <typename N> static MT_HD double from(N v) { return (double)v; }
};
template <> struct convert_to<half_t> {
  template <typename N> static MT_HD half_t from(N v) { return half_t{float_to_half((float)v)}; }
};
template <> struct convert_to<bf16_t> {
  template <typename N> static MT_HD bf16_t from(N v) { return bf16_t{float_to_bf16((float)v)}; }
};
template <> struct convert_to<bool_t> {
  template <typename N> static MT_HD bool_t from(N v) { return bool_t{(uint8_t)(v != 0)}; }
};

/* call F with the C++ storage type of a dtype (false: no such dtype) */
#define MT_GPU_DISPATCH_ALL(dt, T, ...)                                                                              \
  switch (dt) {                                                                                                      \
  case MT_UINT8: { typedef uint8_t T; __VA_ARGS__; } break;                                                          \
  case MT_INT8: { typedef int8_t T; __VA_ARGS__; } break;                                                            \
  case MT_INT16: { typedef int16_t T; __VA_ARGS__; } break;                                                          \
  case MT_INT32: { typedef int32_t T; __VA_ARGS__; } break;                                                          \
  case MT_INT64: { typedef int64_t T; __VA_ARGS__; } break;                                                          \
  case MT_FLOAT16: { typedef half_t T; __VA_ARGS__; } break;                                                         \
  case MT_FLOAT32: { typedef float T; __VA_ARGS__; } break;                                                          \
  case MT_FLOAT64: { typedef double T; __VA_ARGS__; } break;                                                         \
  case MT_BOOL: { typedef bool_t T; __VA_ARGS__; } break;                                                            \
  case MT_BFLOAT16: { typedef bf16_t T; __VA_ARGS__; } break;                                                        \
  default: return -1;                                                                                                \
  }

/* a dtype's size in bytes (on the device: no call into the library) */
MT_HD int mt_gpu_itemsize(int dt) {
  return dt == MT_INT64 || dt == MT_FLOAT64                        ? 8
         : dt == MT_INT32 || dt == MT_FLOAT32                      ? 4
         : dt == MT_INT16 || dt == MT_FLOAT16 || dt == MT_BFLOAT16 ? 2
                                                                   : 1;
}

/* ---------------------------------------------------------------- offsets */
/* the element offset of operand k for linear index i of an iteration's (coalesced) dims */
MT_DEV int64_t iter_offset(const mt_gpu_iter &it, int k, int64_t i) {
  int64_t off = 0;
  for (int d = it.ndim - 1; d > 0; d--) {
    int64_t s = it.sizes[d];
    int64_t q = i / s;
    off += (i - q * s) * it.strides[k][d];
    i = q;
  }
  if (it.ndim > 0) off += i * it.strides[k][0];
  return off;
}

/* the element offset of linear index i over nd dims of `sizes` (slowest first) with `strides` */
MT_DEV int64_t geo_offset(int nd, const int64_t *sizes, const int64_t *strides, int64_t i) {
  int64_t off = 0;
  for (int d = nd - 1; d > 0; d--) {
    int64_t s = sizes[d], q = i / s;
    off += (i - q * s) * strides[d];
    i = q;
  }
  if (nd > 0) off += i * strides[0];
  return off;
}

/* ---------------------------------------------------------------- faults */
MT_DEV void raise_fault(mt_gpu_fault *f, int code, int op, int64_t value, int64_t bound, int64_t dim) {
  if (atomicCAS(&f->code, 0, code) == 0) {
    f->op = op;
    f->value = value;
    f->bound = bound;
    f->dim = dim;
  }
}

} // namespace MT_GPU_NS

#endif
