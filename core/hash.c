/* hash.c -- XXH3-64 (seed 0, default secret), the checksum of torch.save files: XXH3_64bits of
 * Debian's libxxhash-dev. Its header is used inline, once per vector loop: this file holds the
 * SSE2 one (the x86-64 baseline), hash_variants.c is compiled once per other instruction set
 * (scalar, AVX2, AVX-512; see CMakeLists.txt), and the loop is chosen once from the CPU
 * (mt_xxh3_64_impl picks one, for tests). */
#include "mt_internal.h"

#define XXH_INLINE_ALL
#if defined(__x86_64__)
#define XXH_VECTOR 1 /* XXH_SSE2 */
#else
#define XXH_VECTOR 0 /* XXH_SCALAR */
#endif
#include <xxhash.h>

uint64_t mt_xxh3_64_scalar(const void *data, size_t n);
uint64_t mt_xxh3_64_avx2(const void *data, size_t n);
uint64_t mt_xxh3_64_avx512(const void *data, size_t n);

static uint64_t xxh3_baseline(const void *data, size_t n) { return XXH3_64bits(data, n); }

typedef uint64_t (*hash_fn)(const void *, size_t);

/* impl: 1 scalar, 2 baseline (SSE2 on x86-64), 3 AVX2, 4 AVX-512, anything else the best this CPU runs */
static hash_fn pick(int impl) {
  if (impl == 1) return mt_xxh3_64_scalar;
  if (impl == 2) return xxh3_baseline;
#if defined(__x86_64__)
  bool avx512 = mt_cpu_has(MT_CPU_AVX512F), avx2 = mt_cpu_has(MT_CPU_AVX2);
  if (impl == 4 && avx512) return mt_xxh3_64_avx512;
  if (impl == 3 && avx2) return mt_xxh3_64_avx2;
  /* the best: AVX2 (on Zen 4 the AVX-512 loop ran at 25-30 GB/s against AVX2's 30-36, one core) */
  if (impl == 0 || impl > 4) {
    if (avx2) return mt_xxh3_64_avx2;
    if (avx512) return mt_xxh3_64_avx512;
  }
#endif
  return xxh3_baseline;
}

static hash_fn chosen;

uint64_t mt_xxh3_64(const void *data, size_t n) {
  hash_fn f = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
  if (!f) __atomic_store_n(&chosen, f = pick(0), __ATOMIC_RELAXED);
  return f(data, n);
}

uint64_t mt_xxh3_64_impl(const void *data, size_t n, int impl) { return pick(impl)(data, n); }
