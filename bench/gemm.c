/* The providers' own float32 products, called directly: the yardstick for moontorch's matmul.
 *   bench_gemm cores                      the OpenBLAS kernel sets this CPU can run, best first
 *   bench_gemm openblas|onednn M N K [TT] C (M x N) = A (M x K) @ B (K x N), row-major; TT: NN, NT, TN
 *                                         or TT (transposed operands); prints `gflops X` and what ran
 * Threads: $BENCH_THREADS (default 2). The library is loaded as moontorch loads it (dlopen), but at
 * its own settings: OpenBLAS's kernels are whatever OPENBLAS_CORETYPE says (else its own choice), its
 * threads spin between calls as it likes, and oneDNN's OpenMP threads wait as libgomp likes. The
 * output is allocated once and reused. Best of 15 rounds of back-to-back calls after a warm-up. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <moontorch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *open_any(const char *a, const char *b) {
  void *h = dlopen(a, RTLD_NOW | RTLD_LOCAL);
  if (!h && b && *b) h = dlopen(b, RTLD_NOW | RTLD_LOCAL);
  return h;
}

typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                               float *, int);
typedef int (*dnnl_sgemm_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *,
                             int64_t, float, float *, int64_t);

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "cores") == 0) {
    static const char *const candidates[] = {"Cooperlake", "SkylakeX", "Haswell", "Zen", "Sandybridge", "Nehalem",
                                             "Prescott"};
    int level = mt_cpu_level(mt_cpu_features());
    for (unsigned i = 0; i < sizeof candidates / sizeof *candidates; i++)
      if (mt_blas_core_level(candidates[i]) <= level) printf("%s\n", candidates[i]);
    return 0;
  }
  if (argc < 5) {
    fprintf(stderr, "usage: bench_gemm cores | bench_gemm openblas|onednn M N K [NN|NT|TN|TT]\n");
    return 2;
  }
  const char *prov = argv[1];
  int M = atoi(argv[2]), N = atoi(argv[3]), K = atoi(argv[4]);
  const char *tt = argc > 5 ? argv[5] : "NN";
  int ta = tt[0] == 'T', tb = tt[1] == 'T';
  const char *env = getenv("BENCH_THREADS");
  int threads = env ? atoi(env) : 2;
  float *a = aligned_alloc(64, ((size_t)M * K * 4 + 63) / 64 * 64), *b = aligned_alloc(64, ((size_t)K * N * 4 + 63) / 64 * 64),
        *c = aligned_alloc(64, ((size_t)M * N * 4 + 63) / 64 * 64);
  for (long i = 0; i < (long)M * K; i++) a[i] = (float)(i % 7) / 7;
  for (long i = 0; i < (long)K * N; i++) b[i] = (float)(i % 5) / 5;
  memset(c, 0, (size_t)M * N * 4);
  cblas_sgemm_fn sg = NULL;
  dnnl_sgemm_fn dg = NULL;
  if (strcmp(prov, "openblas") == 0) {
    void *h = open_any("libopenblas.so.0", MT_OPENBLAS_PATH);
    if (!h) { fprintf(stderr, "bench_gemm: %s\n", dlerror()); return 1; }
    sg = (cblas_sgemm_fn)dlsym(h, "cblas_sgemm");
    void (*set)(int) = (void (*)(int))dlsym(h, "openblas_set_num_threads");
    char *(*core)(void) = (char *(*)(void))dlsym(h, "openblas_get_corename");
    if (set) set(threads);
    printf("what OpenBLAS/%s\n", core ? core() : "?");
  } else if (strcmp(prov, "onednn") == 0) {
    void *h = open_any("libdnnl.so.2", MT_ONEDNN_PATH);
    if (!h) h = dlopen("libdnnl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "bench_gemm: no oneDNN: %s\n", dlerror()); return 1; }
    dg = (dnnl_sgemm_fn)dlsym(h, "dnnl_sgemm");
    void (*set)(int) = (void (*)(int))dlsym(h, "omp_set_num_threads");
    if (set) set(threads);
    printf("what oneDNN\n");
  } else {
    fprintf(stderr, "bench_gemm: unknown provider %s\n", prov);
    return 2;
  }
  int lda = ta ? M : K, ldb = tb ? K : N;
  double flop = 2.0 * M * N * (double)K;
  int reps = (int)(4e8 / flop) + 1; /* about 2 ms of work per round */
  double best = 1e30;
  for (int r = 0; r < 16; r++) {
    double t0 = now();
    for (int i = 0; i < reps; i++) {
      if (sg) sg(101, ta ? 112 : 111, tb ? 112 : 111, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, N);
      else dg(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, N);
    }
    double t = (now() - t0) / reps;
    if (r > 0 && t < best) best = t; /* the first round warms up */
  }
  printf("gflops %.3f\nus %.3f\n", flop / best / 1e9, best * 1e6);
  free(a);
  free(b);
  free(c);
  return 0;
}
