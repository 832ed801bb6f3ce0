/* A C program that uses libmoontorch through its public header alone:
 * builds two tensors, broadcasts an add, multiplies matrices and prints the results. */
#include <moontorch.h>
#include <stdio.h>

#define CHECK(call)                                                        \
  do {                                                                     \
    if ((call) != MT_OK) {                                                 \
      fprintf(stderr, "error: %s\n", mt_last_error());                     \
      return 1;                                                            \
    }                                                                      \
  } while (0)

static void print2d(const char *name, mt_tensor *t) {
  printf("%s =\n", name);
  for (int64_t i = 0; i < t->_sizes[0]; i++) {
    for (int64_t j = 0; j < t->_sizes[1]; j++) {
      int64_t ix[2] = {i, j};
      double v;
      mt_tensor_get(t, ix, &v);
      printf(" %8.4f", v);
    }
    printf("\n");
  }
}

int main(void) {
  int64_t s23[2] = {2, 3}, s3[1] = {3};
  mt_tensor *a, *b, *c, *bt, *m;
  CHECK(mt_arange(0, 6, 1, MT_FLOAT32, NULL, &a));
  mt_tensor *a2;
  CHECK(mt_view(a, s23, 2, &a2));
  CHECK(mt_tensor_full(s3, 1, MT_FLOAT32, 10.0, NULL, &b));
  CHECK(mt_binary(MT_OP_ADD, a2, b, NULL, &c)); /* [2,3] + [3] broadcasts */
  print2d("a + b", c);
  CHECK(mt_transpose(c, 0, 1, &bt));
  CHECK(mt_matmul(c, bt, NULL, &m)); /* [2,3] @ [3,2] */
  print2d("c @ c.T", m);
  /* errors are statuses with messages, never aborts */
  mt_tensor *bad;
  if (mt_mm(c, c, NULL, &bad) != MT_OK) printf("expected error: %s\n", mt_last_error());
  mt_tensor_release(a);
  mt_tensor_release(a2);
  mt_tensor_release(b);
  mt_tensor_release(c);
  mt_tensor_release(bt);
  mt_tensor_release(m);
  printf("live tensors: %lld\n", (long long)mt_get_stats()->live_tensors);
  return mt_get_stats()->live_tensors == 0 ? 0 : 1;
}
