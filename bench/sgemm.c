/* OpenBLAS's own cblas_sgemm on n x n x n, best GFLOP/s over repeats: the yardstick for
 * moontorch's matmul. Usage: bench_sgemm N [repeats] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  float *a = aligned_alloc(64, sizeof(float) * n * n), *b = aligned_alloc(64, sizeof(float) * n * n),
        *c = aligned_alloc(64, sizeof(float) * n * n);
  for (long i = 0; i < (long)n * n; i++) { a[i] = (float)(i % 7) / 7; b[i] = (float)(i % 5) / 5; }
  double best = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double t = now() - t0;
    if (r > 0 && t < best) best = t; /* the first run warms up */
  }
  printf("%.3f\n", 2.0 * n * n * (double)n / best / 1e9);
  free(a); free(b); free(c);
  return 0;
}
