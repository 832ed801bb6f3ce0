/* Forward convolutions from several threads at once, on a shape whose Winograd-transformed weights
 * core/tensor/onednn.c keeps (3x3, stride 1, padding 1, batch 1 of 32x6x6: fewer input elements than weights),
 * then on one that runs oneDNN's Winograd with the weights transformed each call (32x24x24: 36 tiles): two threads
 * share one weight tensor, two have their own and rewrite them now and then (as an optimizer would, through the
 * data pointer); each result is compared with the same convolution in float64 (moontorch's own kernels). The
 * kept weights' entries are shared between threads, made by one and read by others: a stale or torn entry shows
 * as a wrong result, a race as an AddressSanitizer report (./run asan runs this too). Before oneDNN's scratchpads
 * were made ours, two Winograd convolutions at once crashed in oneDNN. */
#include <math.h>
#include <moontorch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define C 32
static int HW; /* 6, then 24 */
#define ROUNDS 40

static int failures;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static void fail(const char *what, double e) {
  pthread_mutex_lock(&report_lock);
  fprintf(stderr, "test_conv_threads: %s (%g; %s)\n", what, e, mt_last_error());
  failures++;
  pthread_mutex_unlock(&report_lock);
}

static float draw(uint32_t *s) { /* uniform in [-0.5, 0.5) */
  *s = *s * 1664525u + 1013904223u;
  return (float)(*s >> 8) / 16777216.0f - 0.5f;
}

static mt_tensor *filled(const int64_t *sizes, int nd, uint32_t *seed, float scale) {
  mt_tensor *t = NULL;
  if (mt_tensor_empty(sizes, nd, MT_FLOAT32, NULL, &t) != MT_OK)
    return NULL;
  int64_t n = 1;
  for (int i = 0; i < nd; i++)
    n *= sizes[i];
  for (int64_t i = 0; i < n; i++)
    ((float *)t->_data)[i] = scale * draw(seed);
  return t;
}

/* the largest |y - float64 result| over the largest |float64 result|, or -1 */
static double error_of(mt_tensor *x, mt_tensor *w) {
  const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  mt_tensor *y = NULL, *x64 = NULL, *w64 = NULL, *r = NULL;
  double e = -1;
  if (mt_convolution(x, w, NULL, one, one, one, 0, NULL, 1, 2, &y) == MT_OK &&
      mt_to(x, MT_FLOAT64, NULL, 0, &x64) == MT_OK && mt_to(w, MT_FLOAT64, NULL, 0, &w64) == MT_OK &&
      mt_convolution(x64, w64, NULL, one, one, one, 0, zero, 1, 2, &r) == MT_OK) {
    double top = 0, d = 0;
    for (int i = 0; i < C * HW * HW; i++) {
      double ref = ((double *)r->_data)[i], got = ((float *)y->_data)[i];
      if (fabs(ref) > top)
        top = fabs(ref);
      if (fabs(got - ref) > d)
        d = fabs(got - ref);
    }
    e = d / top;
  }
  mt_tensor *all[4] = {y, x64, w64, r};
  for (int i = 0; i < 4; i++)
    if (all[i])
      mt_tensor_release(all[i]);
  return e;
}

typedef struct {
  mt_tensor *w; /* shared by threads 0 and 1 (never written), own for 2 and 3 */
  int rewrites;
  uint32_t seed;
} job;

static void *body(void *arg) {
  job *j = arg;
  const int64_t xs[4] = {1, C, HW, HW};
  mt_tensor *x = filled(xs, 4, &j->seed, 2.0f);
  if (!x) {
    fail("no input", 0);
    return NULL;
  }
  for (int r = 0; r < ROUNDS; r++) {
    if (j->rewrites && r % 5 == 4) /* new weights, as an optimizer step writes them */
      for (int i = 0; i < C * C * 9; i++)
        ((float *)j->w->_data)[i] = 0.1f * draw(&j->seed);
    double e = error_of(x, j->w);
    if (e < 0 || e > 1e-5)
      fail("a convolution is off its float64 result", e);
  }
  mt_tensor_release(x);
  return NULL;
}

int main(void) {
  const int64_t ws[4] = {C, C, 3, 3};
  uint32_t seed = 7;
  mt_tensor *shared = filled(ws, 4, &seed, 0.1f), *own[2] = {filled(ws, 4, &seed, 0.1f), filled(ws, 4, &seed, 0.1f)};
  if (!shared || !own[0] || !own[1]) {
    fprintf(stderr, "test_conv_threads: no weights (%s)\n", mt_last_error());
    return 1;
  }
  for (HW = 6; HW <= 24; HW += 18) {
    job jobs[4] = {{shared, 0, 1}, {shared, 0, 2}, {own[0], 1, 3}, {own[1], 1, 4}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
      if (pthread_create(&th[i], NULL, body, &jobs[i]) != 0)
        return 1;
    for (int i = 0; i < 4; i++)
      pthread_join(th[i], NULL);
  }
  mt_tensor_release(shared);
  mt_tensor_release(own[0]);
  mt_tensor_release(own[1]);
  if (failures)
    return 1;
  printf("test_conv_threads: 4 threads x %d convolutions at 6x6 and 24x24, all within 1e-5 of float64\n", ROUNDS);
  return 0;
}
