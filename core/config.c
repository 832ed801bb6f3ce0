/* config.c -- mt_config_string: what this build of moontorch runs with, in the spirit of PyTorch's
 * torch.__config__.show(). torch.config() and `moontorch --version` print it. */
#include "blas.h"

#include <pthread.h>
#include <stdio.h>

#define MT_VERSION_STRING "0.1.0"

const char *mt_version(void) { return MT_VERSION_STRING; }

static char text[4096];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

#define ADD(...)                                                                                                       \
  do {                                                                                                                 \
    if (k < sizeof text) k += (size_t)snprintf(text + k, sizeof text - k, __VA_ARGS__);                              \
  } while (0)

const char *mt_config_string(void) {
  pthread_mutex_lock(&mu);
  size_t k = 0;
  ADD("moontorch %s built with:\n", MT_VERSION_STRING);
#if defined(__clang__)
  ADD("  - C compiler: clang %d.%d.%d\n", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  ADD("  - C compiler: GCC %d.%d.%d\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#endif
  uint32_t f = mt_cpu_features();
  const char *name = mt_cpu_name(), *vendor = mt_cpu_vendor();
  ADD("  - CPU: %s%s%s%s, vector level %s", *name ? name : "unknown", *vendor ? " (" : "", vendor, *vendor ? ")" : "",
      mt_cpu_level_name(mt_cpu_level(f)));
  if (f) {
    ADD(":");
    for (unsigned b = 0; b < 32; b++)
      if (f & (1u << b) && mt_cpu_feature_name(1u << b)) ADD(" %s", mt_cpu_feature_name(1u << b));
  }
  ADD("\n");
  const char *simd = mt_kernels_simd();
  ADD("  - CPU capability of moontorch's own kernels: %s%s\n", simd,
      strcmp(simd, "avx512") == 0 ? " (AVX-512 exp, log, tanh, sigmoid; AVX2 expm1, log1p, silu, ...; AVX-512 float32 "
                                    "products of up to 2^26 multiply-adds; MOONTORCH_VMATH=avx2 or 0 (every kernel scalar, "
                                    "those products left to the BLAS) chooses a lower level)"
      : strcmp(simd, "avx2") == 0 ? " (vectorised exp, log, tanh, sigmoid, ...; float32 products of up to 2^26 multiply-adds; "
                                    "MOONTORCH_VMATH=0 turns them all off, the 2x2 max pool's too)"
                                  : "");
  const char *bf = mt_kernels_bf16();
  ADD("  - low precision: bfloat16 products %s, float32 accumulation; float16 through float32\n",
      !strcmp(bf, "avx512_bf16") ? "on vdpbf16ps (AVX512-BF16)"
      : !strcmp(bf, "avx2")      ? "on AVX2 FMAs under flush-to-zero (vdpbf16ps's numbers)"
                                 : "scalar (vdpbf16ps's numbers)");
  if (k < sizeof text) {
    int n = mt_blas_describe(text + k, sizeof text - k);
    if (n > 0) k += (size_t)n;
  }
  if (k < sizeof text) {
    int n = mt_conv_describe(text + k, sizeof text - k);
    if (n > 0) k += (size_t)n;
  }
  int q = mt_cgroup_cpu_limit("");
  char quota[64] = "";
  if (q) snprintf(quota, sizeof quota, ", within a cgroup CPU quota of %d", q);
  ADD("  - threads: %d (from %s; this process may use %d CPUs%s), for moontorch's kernels and the BLAS (which "
      "reports %d) together\n",
      mt_get_num_threads(), mt_threads_source(), mt_cpu_count_allowed(), quota, mt_blas_threads());
  /* CUDA: what its backend says of itself (the fake device's too, when a spec put it in), or why this
   * build has none (CMakeLists.txt's reason) */
  const char *cuda = mt_device_describe(MT_CUDA);
#ifndef MT_CUDA_NOT_BUILT
#define MT_CUDA_NOT_BUILT "no CUDA toolkit"
#endif
  if (cuda && *cuda) ADD("  - CUDA: %s\n", cuda);
  else if (cuda) ADD("  - CUDA: %s backend, %d device%s\n", mt_device_backend(MT_CUDA), mt_device_count(MT_CUDA),
                     mt_device_count(MT_CUDA) == 1 ? "" : "s");
  else ADD("  - CUDA: not built (%s)\n", MT_CUDA_NOT_BUILT);
  pthread_mutex_unlock(&mu);
  return text;
}
