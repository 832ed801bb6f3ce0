/* emu.h -- CUDA, as much of it as our kernels use, for the host C++ compiler: with this header a
 * kernel file (core/gpu/k_*.cu) compiles for the CPU emulator (runtime_emu.cc), which runs every
 * block's threads as fibers, so the same source that nvcc compiles for the GPU runs in CI.
 *
 * - threadIdx, blockIdx, blockDim, gridDim: the running fiber's (the emulator sets them as it
 *   switches);
 * - __shared__: one object per OS thread (`static thread_local`): the emulator runs one block at a
 *   time on a thread, so the block's threads share it, as on a GPU; dynamic shared memory through
 *   MT_DYNAMIC_SHARED (core/gpu/device.cuh);
 * - __syncthreads and the warp intrinsics the kernels use (__shfl_*_sync, __ballot_sync,
 *   __syncwarp): barriers that suspend the fiber until every live thread of the block (of the
 *   warp) reaches one; a warp exchange goes through 32 slots between two warp barriers;
 * - atomics on the host's atomic builtins;
 * - the device math functions that the C library lacks (rsqrtf, __fdividef, ...).
 * Never included by the C core nor by nvcc. Not installed. */
#ifndef MT_GPU_EMU_H
#define MT_GPU_EMU_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) alignas(n)
#define __restrict__ __restrict

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x, y, z;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

namespace mt_emu {
/* what a running emulated thread sees */
struct thread_view {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  unsigned char *dynamic_smem;
};
extern thread_local thread_view *current;
void syncthreads();
void syncwarp();
/* every lane of the warp deposits `bits`, then reads lane src's (a lane outside the warp's live
 * lanes reads its own) */
uint64_t warp_exchange(uint64_t bits, int src_lane);
/* the live lanes' predicates as a mask */
unsigned warp_ballot(int predicate);
unsigned lane_id();

/* a launch: `run` calls the kernel with the task's arguments, `destroy` frees the task */
void submit(dim3 grid, dim3 block, size_t smem, void *stream, void (*run)(void *), void (*destroy)(void *),
            void *task);

template <typename T> static inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8, "a warp exchange carries at most 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}
template <typename T> static inline T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
} // namespace mt_emu

#define threadIdx (::mt_emu::current->thread_idx)
#define blockIdx (::mt_emu::current->block_idx)
#define blockDim (::mt_emu::current->block_dim)
#define gridDim (::mt_emu::current->grid_dim)
#define warpSize 32

static inline void __syncthreads() { mt_emu::syncthreads(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)mask;
  mt_emu::syncwarp();
}
/* a lane's source within its segment of `width` lanes, as CUDA's shuffles pick it */
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  (void)mask;
  int lane = (int)mt_emu::lane_id();
  int base = lane & ~(width - 1);
  return mt_emu::from_bits<T>(mt_emu::warp_exchange(mt_emu::to_bits(v), base + (src & (width - 1))));
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  (void)mask;
  int lane = (int)mt_emu::lane_id();
  int in_seg = lane & (width - 1);
  int src = in_seg + (int)delta < width ? lane + (int)delta : lane;
  return mt_emu::from_bits<T>(mt_emu::warp_exchange(mt_emu::to_bits(v), src));
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  (void)mask;
  int lane = (int)mt_emu::lane_id();
  int in_seg = lane & (width - 1);
  int src = in_seg >= (int)delta ? lane - (int)delta : lane;
  return mt_emu::from_bits<T>(mt_emu::warp_exchange(mt_emu::to_bits(v), src));
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  (void)mask;
  int lane = (int)mt_emu::lane_id();
  int src = lane ^ lane_mask;
  if ((src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;
  return mt_emu::from_bits<T>(mt_emu::warp_exchange(mt_emu::to_bits(v), src));
}
static inline unsigned __ballot_sync(unsigned mask, int predicate) { return mt_emu::warp_ballot(predicate) & mask; }
static inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
static inline int __all_sync(unsigned mask, int predicate) {
  return (mt_emu::warp_ballot(!predicate) & mask) == 0;
}

/* ---------------------------------------------------------------- atomics */
template <typename T> static inline T mt_emu_atomic_cas_loop(T *p, T v, T (*f)(T, T)) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics on 4 or 8 bytes");
  using U = typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type;
  U *q = reinterpret_cast<U *>(p);
  U old = __atomic_load_n(q, __ATOMIC_RELAXED), want;
  do {
    T cur;
    std::memcpy(&cur, &old, sizeof cur);
    T next = f(cur, v);
    std::memcpy(&want, &next, sizeof want);
  } while (!__atomic_compare_exchange_n(q, &old, want, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  T prev;
  std::memcpy(&prev, &old, sizeof prev);
  return prev;
}
static inline float atomicAdd(float *p, float v) {
  return mt_emu_atomic_cas_loop<float>(p, v, [](float a, float b) { return a + b; });
}
static inline double atomicAdd(double *p, double v) {
  return mt_emu_atomic_cas_loop<double>(p, v, [](double a, double b) { return a + b; });
}
static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline int atomicMax(int *p, int v) {
  return mt_emu_atomic_cas_loop<int>(p, v, [](int a, int b) { return a > b ? a : b; });
}
static inline int atomicMin(int *p, int v) {
  return mt_emu_atomic_cas_loop<int>(p, v, [](int a, int b) { return a < b ? a : b; });
}
static inline long long atomicMax(long long *p, long long v) {
  return mt_emu_atomic_cas_loop<long long>(p, v, [](long long a, long long b) { return a > b ? a : b; });
}
static inline long long atomicMin(long long *p, long long v) {
  return mt_emu_atomic_cas_loop<long long>(p, v, [](long long a, long long b) { return a < b ? a : b; });
}
static inline int atomicOr(int *p, int v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
static inline unsigned atomicOr(unsigned *p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
static inline int atomicExch(int *p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
static inline int atomicCAS(int *p, int expect, int want) {
  __atomic_compare_exchange_n(p, &expect, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expect;
}
static inline unsigned atomicCAS(unsigned *p, unsigned expect, unsigned want) {
  __atomic_compare_exchange_n(p, &expect, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expect;
}
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long expect,
                                           unsigned long long want) {
  __atomic_compare_exchange_n(p, &expect, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expect;
}
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* ---------------------------------------------------------------- device math the C library lacks */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline int __float_as_int(float f) {
  int i;
  std::memcpy(&i, &f, 4);
  return i;
}
static inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
static inline unsigned __float_as_uint(float f) {
  unsigned i;
  std::memcpy(&i, &f, 4);
  return i;
}
static inline float __uint_as_float(unsigned i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
static inline long long __double_as_longlong(double d) {
  long long i;
  std::memcpy(&i, &d, 8);
  return i;
}
static inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, 8);
  return d;
}
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
template <typename T> static inline T __ldg(const T *p) { return *p; }

/* the launch: the arguments are copied into a task (as a launch copies them into the kernel's
 * parameter space) that the emulator runs when the stream reaches it */
template <typename... P, typename... A>
static inline void mt_emu_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, void *stream, A &&...args) {
  using args_t = std::tuple<typename std::decay<P>::type...>;
  struct task {
    void (*kernel)(P...);
    args_t args;
  };
  task *t = new task{kernel, args_t(std::forward<A>(args)...)};
  mt_emu::submit(
      grid, block, smem, stream, [](void *p) { std::apply(static_cast<task *>(p)->kernel, static_cast<task *>(p)->args); },
      [](void *p) { delete static_cast<task *>(p); }, t);
}

#endif
