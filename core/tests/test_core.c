/* C-level tests of the core through the public header: creation, views, copies, elementwise ops,
 * errors as statuses with messages, and reference counting (no tensor outlives its release). */
#include <math.h>
#include <moontorch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define EXPECT(cond, ...)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      failures++;                                           \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);       \
      fprintf(stderr, __VA_ARGS__);                         \
      fprintf(stderr, "\n");                                \
    }                                                       \
  } while (0)

static double at(mt_tensor *t, int64_t i, int64_t j) {
  int64_t ix[2] = {i, j};
  double v = NAN;
  mt_tensor_get(t, ix, &v);
  return v;
}

static void test_views_and_ops(void) {
  int64_t s23[2] = {2, 3};
  mt_tensor *a, *a2, *t, *c, *b;
  EXPECT(mt_arange(0, 6, 1, MT_FLOAT32, NULL, &a) == MT_OK, "arange: %s", mt_last_error());
  EXPECT(mt_view(a, s23, 2, &a2) == MT_OK, "view: %s", mt_last_error());
  EXPECT(mt_transpose(a2, 0, 1, &t) == MT_OK, "transpose");
  EXPECT(!mt_tensor_is_contiguous(t), "a transpose is not contiguous");
  EXPECT(at(t, 2, 1) == 5, "t[2][1] = %g", at(t, 2, 1));
  EXPECT(mt_binary_scalar(MT_OP_MUL, t, 2, 1, 0, NULL, &c) == MT_OK, "mul");
  EXPECT(at(c, 1, 0) == 2 && at(c, 2, 1) == 10, "mul values");
  EXPECT(c->_dtype == MT_FLOAT32, "float32 * int stays float32");
  /* writes through a view reach the base */
  EXPECT(mt_fill_(t, 7) == MT_OK, "fill");
  EXPECT(at(a2, 1, 2) == 7, "view shares storage");
  /* broadcasting add with a row */
  int64_t s3[1] = {3};
  EXPECT(mt_tensor_full(s3, 1, MT_FLOAT64, 1.5, NULL, &b) == MT_OK, "full");
  mt_tensor *sum;
  EXPECT(mt_binary(MT_OP_ADD, a2, b, NULL, &sum) == MT_OK, "add");
  EXPECT(sum->_dtype == MT_FLOAT64 && sum->_ndim == 2 && at(sum, 1, 2) == 8.5, "broadcast add");
  mt_tensor_release(sum);
  mt_tensor_release(a);
  mt_tensor_release(a2);
  mt_tensor_release(t);
  mt_tensor_release(c);
  mt_tensor_release(b);
}

static void test_errors(void) {
  int64_t s2[1] = {2}, s3[1] = {3}, neg[1] = {-4};
  mt_tensor *a, *b, *r = NULL;
  mt_tensor_full(s2, 1, MT_FLOAT32, 1, NULL, &a);
  mt_tensor_full(s3, 1, MT_FLOAT32, 1, NULL, &b);
  EXPECT(mt_binary(MT_OP_ADD, a, b, NULL, &r) == MT_ESHAPE, "shape mismatch is MT_ESHAPE");
  EXPECT(strstr(mt_last_error(), "add:") != NULL, "message names the op: %s", mt_last_error());
  EXPECT(mt_tensor_empty(neg, 1, MT_FLOAT32, NULL, &r) == MT_EINVAL, "negative size");
  EXPECT(strstr(mt_last_error(), "negative dimension") != NULL, "%s", mt_last_error());
  EXPECT(mt_tensor_empty(s2, 1, 99, NULL, &r) == MT_EDTYPE, "bad dtype");
  EXPECT(mt_select(a, 0, 5, &r) == MT_ERANGE, "select out of range");
  EXPECT(mt_binary(MT_OP_ADD, NULL, b, NULL, &r) == MT_EINVAL, "NULL tensor");
  int64_t huge[1] = {(int64_t)1 << 60};
  EXPECT(mt_tensor_empty(huge, 1, MT_FLOAT64, NULL, &r) == MT_ENOMEM, "allocation failure is a status");
  EXPECT(mt_binary(MT_OP_ADD, a, a, NULL, &r) == MT_OK, "still usable");
  mt_tensor_release(r);
  mt_tensor_release(a);
  mt_tensor_release(b);
}

static void test_refcounts(void) {
  int64_t s[2] = {4, 4};
  mt_tensor *a, *v;
  mt_tensor_full(s, 2, MT_FLOAT32, 2, NULL, &a);
  mt_narrow(a, 1, 1, 2, &v);
  mt_tensor_release(a); /* the view keeps the storage alive */
  double x;
  int64_t ix[2] = {3, 1};
  EXPECT(mt_tensor_get(v, ix, &x) == MT_OK && x == 2, "view outlives its base");
  mt_tensor_release(v);
}

/* The BLAS from C alone: loaded at first use with the kernels this CPU supports, products through it,
 * threads governed together, and the configuration text. */
static void test_blas(void) {
  int64_t s[2] = {300, 300};
  mt_tensor *a, *p;
  EXPECT(mt_tensor_full(s, 2, MT_FLOAT32, 1.0, NULL, &a) == MT_OK, "full");
  EXPECT(mt_matmul(a, a, NULL, &p) == MT_OK, "matmul: %s", mt_last_error());
  EXPECT(at(p, 299, 7) == 300, "300x300 of ones squared: %g", at(p, 299, 7));
  mt_tensor_release(p);
  mt_tensor_release(a);
  EXPECT(mt_blas_load() == MT_OK, "blas: %s", mt_last_error());
  int level = mt_cpu_level(mt_cpu_features());
  mt_blas_plan plan;
  mt_blas_plan_core(mt_cpu_features(), mt_cpu_vendor(), mt_cpu_family(), getenv("MT_BLAS_CORETYPE"),
                    getenv("OPENBLAS_CORETYPE"), NULL, &plan);
  if (level > MT_CPU_LEVEL_NONE && !getenv("MT_BLAS_CORETYPE") && !getenv("OPENBLAS_CORETYPE")) {
    EXPECT(strcmp(mt_blas_core(), plan.core) == 0, "OpenBLAS runs %s, moontorch chose %s", mt_blas_core(), plan.core);
    EXPECT(mt_blas_core_level(mt_blas_core()) >= mt_blas_core_level(plan.core), "%s is below this CPU's %s",
           mt_blas_core(), plan.core);
  }
  mt_set_num_threads(1);
  EXPECT(mt_blas_threads() == 1, "the BLAS follows set_num_threads: %d", mt_blas_threads());
  mt_set_num_threads(2);
  EXPECT(mt_blas_threads() == 2, "the BLAS follows set_num_threads: %d", mt_blas_threads());
  const char *cfg = mt_config_string();
  EXPECT(strstr(cfg, "BLAS kernels: ") && (strstr(cfg, "CUDA: not built") || strstr(cfg, "CUDA: built for") ||
                                         strstr(cfg, "CUDA: the CPU emulator")),
         "config:\n%s", cfg);
}

int main(void) {
  test_blas();
  test_views_and_ops();
  test_errors();
  test_refcounts();
  EXPECT(mt_get_stats()->live_tensors == 0, "live tensors at exit: %lld", (long long)mt_get_stats()->live_tensors);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("test_core: all passed\n");
  return failures ? 1 : 0;
}
