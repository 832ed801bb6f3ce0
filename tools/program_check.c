/* program_check: the C test of exported programs (spec/program_spec.lua runs it): no Lua in the
 * process, libmoontorch's public header alone.
 *
 *   program_check DIR NAME...
 * For each NAME: DIR/NAME.mtp is loaded with mt_program_load, run with mt_program_run on the inputs
 * of DIR/NAME.safetensors (the tensors named as the program's inputs), twice (the second run reuses
 * the buffers the first allocated), and each output compared with the tensor outputK of the same
 * file (the Lua module's output, written by the spec): |got - want| <= 1e-6 + 1e-5 |want|, the same
 * dtype and shape. One line per model; exit status 0 when every model matches. */
#include <math.h>
#include <moontorch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_io.h"

static int compare(const char *what, mt_tensor *got, mt_tensor *want, double *worst) {
  if (got->_dtype != want->_dtype || got->_ndim != want->_ndim) {
    printf("  %s: dtype or rank differs\n", what);
    return 1;
  }
  for (int d = 0; d < got->_ndim; d++)
    if (got->_sizes[d] != want->_sizes[d]) {
      printf("  %s: shape differs\n", what);
      return 1;
    }
  int64_t n = got->_numel;
  double *a = malloc((size_t)(n ? n : 1) * sizeof *a), *b = malloc((size_t)(n ? n : 1) * sizeof *b);
  int bad = !a || !b || mt_tensor_to_doubles(got, a, n) != MT_OK || mt_tensor_to_doubles(want, b, n) != MT_OK;
  for (int64_t i = 0; i < n && !bad; i++) {
    double e = fabs(a[i] - b[i]);
    if (e > *worst)
      *worst = e;
    if (!(e <= 1e-6 + 1e-5 * fabs(b[i]))) {
      printf("  %s: element %lld is %.9g, expected %.9g\n", what, (long long)i, a[i], b[i]);
      bad = 1;
    }
  }
  free(a);
  free(b);
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: program_check DIR NAME...\n");
    return 2;
  }
  int failed = 0;
  char path[2048], err[2400];
  for (int m = 2; m < argc; m++) {
    const char *name = argv[m];
    mt_program *p = NULL;
    st_file f;
    snprintf(path, sizeof path, "%s/%s.mtp", argv[1], name);
    if (mt_program_load(path, &p) != MT_OK) {
      printf("%s: FAILED to load: %s\n", name, mt_last_error());
      failed++;
      continue;
    }
    snprintf(path, sizeof path, "%s/%s.safetensors", argv[1], name);
    if (st_read(path, &f, err, sizeof err)) {
      printf("%s: FAILED: %s\n", name, err);
      mt_program_free(p);
      failed++;
      continue;
    }
    int ni = mt_program_num_inputs(p), no = mt_program_num_outputs(p), bad = 0;
    mt_tensor **ins = calloc((size_t)ni + 1, sizeof *ins);
    for (int i = 0; i < ni && !bad; i++) {
      mt_program_io io;
      mt_program_input(p, i, &io);
      if (!(ins[i] = st_find(&f, io.name))) {
        printf("%s: FAILED: no input '%s'\n", name, io.name);
        bad = 1;
      }
    }
    double worst = 0;
    for (int run = 0; run < 2 && !bad; run++) {
      mt_tensor **outs = calloc((size_t)no, sizeof *outs);
      if (mt_program_run(p, ins, ni, outs, no) != MT_OK) {
        printf("%s: FAILED to run: %s\n", name, mt_last_error());
        bad = 1;
      }
      for (int k = 0; k < no && !bad; k++) {
        char key[32];
        snprintf(key, sizeof key, "output%d", k + 1);
        mt_tensor *want = st_find(&f, key);
        if (!want) {
          printf("%s: FAILED: no %s in the file\n", name, key);
          bad = 1;
        } else
          bad |= compare(key, outs[k], want, &worst);
      }
      for (int k = 0; k < no; k++)
        if (outs[k])
          mt_tensor_release(outs[k]);
      free(outs);
    }
    printf("%s: %s (%d inputs, %d outputs, %d planned buffers, largest difference %.3g)\n", name, bad ? "FAILED" : "ok",
           ni, no, mt_program_num_buffers(p), worst);
    failed += bad;
    free(ins);
    st_free(&f);
    mt_program_free(p);
  }
  return failed ? 1 : 0;
}
