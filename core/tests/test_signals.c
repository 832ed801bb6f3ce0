/* Products keep working while a profiling timer's signal keeps arriving: what LuaJIT's profiler
 * (`luajit -jp`) does to every thread of the process. oneDNN 2.6's sgemm corrupted the heap when a
 * handler ran during a product (core/blas.c holds asynchronous signals for its calls), so this walks
 * the shapes of a LeNet and an MLP training step, and larger ones that go to the BLAS, through
 * mt_matmul, forward and transposed, under a SIGPROF every 100 microseconds, and checks the results
 * against a plain loop. It runs with the provider the environment gives (MT_BLAS). */
#include <moontorch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t ticks;
static void on_prof(int sig) { (void)sig; ticks++; }

static int failures;

static mt_tensor *filled(int64_t r, int64_t c, int seed) {
  int64_t sz[2] = {r, c};
  mt_tensor *t = NULL;
  if (mt_tensor_empty(sz, 2, MT_FLOAT32, NULL, &t)) return NULL;
  float *d = (float *)t->_data;
  for (int64_t i = 0; i < r * c; i++) d[i] = (float)((i * 7 + seed * 13) % 31 - 15) / 16.0f;
  return t;
}

/* a (m x k) @ b (k x n), each possibly a transposed view, against a double-precision loop */
static void check(int64_t m, int64_t n, int64_t k, int ta, int tb) {
  mt_tensor *a0 = ta ? filled(k, m, 1) : filled(m, k, 1), *b0 = tb ? filled(n, k, 2) : filled(k, n, 2);
  mt_tensor *a = NULL, *b = NULL, *c = NULL;
  if (!a0 || !b0) { failures++; return; }
  if (ta) mt_transpose(a0, 0, 1, &a); else a = mt_tensor_retain(a0);
  if (tb) mt_transpose(b0, 0, 1, &b); else b = mt_tensor_retain(b0);
  if (!a || !b || mt_matmul(a, b, NULL, &c)) {
    fprintf(stderr, "matmul %lldx%lldx%lld failed: %s\n", (long long)m, (long long)n, (long long)k, mt_last_error());
    failures++;
  } else {
    const float *A = (const float *)a0->_data, *B = (const float *)b0->_data, *C = (const float *)c->_data;
    for (int64_t i = 0; i < m; i += 7)
      for (int64_t j = 0; j < n; j += 5) {
        double want = 0;
        for (int64_t p = 0; p < k; p++)
          want += (double)(ta ? A[p * m + i] : A[i * k + p]) * (tb ? B[j * k + p] : B[p * n + j]);
        double got = C[i * n + j], tol = 1e-4 * (1 + (want < 0 ? -want : want));
        if (got - want > tol || want - got > tol) {
          if (failures++ < 10)
            fprintf(stderr, "%lldx%lldx%lld (%d,%d) [%lld,%lld]: %g, want %g\n", (long long)m, (long long)n,
                    (long long)k, ta, tb, (long long)i, (long long)j, got, want);
          i = m;
          break;
        }
      }
  }
  mt_tensor_release(a0), mt_tensor_release(b0);
  if (a) mt_tensor_release(a);
  if (b) mt_tensor_release(b);
  if (c) mt_tensor_release(c);
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_prof;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval every = {{0, 100}, {0, 100}};
  setitimer(ITIMER_PROF, &every, NULL);
  /* the MLP's and LeNet's products (moontorch's own kernel takes those) and larger ones, which go to the
   * BLAS: oneDNN where it was found */
  static const int64_t shapes[][3] = {{64, 120, 256}, {512, 512, 512}, {64, 256, 120}, {1024, 256, 512},
                                      {128, 512, 784}, {784, 512, 1024}, {128, 784, 512}, {150, 16, 64}};
  int rounds = 0;
  for (; rounds < 200 && failures == 0; rounds++) {
    const int64_t *s = shapes[rounds % 8];
    check(s[0], s[1], s[2], rounds % 3 == 1, rounds % 3 == 2);
    void *p = malloc(1000 + rounds * 37 % 5000); /* the heap in use around the products */
    free(p);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  printf("test_signals: %d products under %ld timer signals (provider %s), %d failures\n", rounds, (long)ticks,
         mt_blas_provider(), failures);
  return failures ? 1 : 0;
}
