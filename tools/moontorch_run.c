/* moontorch-run: run a program that torch.export wrote, from C (libmoontorch's mt_program_* API),
 * on the tensors of a .safetensors file.
 *
 *   moontorch-run model.mtp input.safetensors [-o output.safetensors] [--repeat N] [--quiet]
 *
 * The inputs are taken by the program's input names (a file with one tensor feeds a program with
 * one input whatever its name). Each output is printed (its dtype, shape and first values) and,
 * with -o, written as output1, output2, ... With --repeat N the program runs N more times and the
 * mean time of a run is printed (the first run, which allocates the planned buffers, not counted). */
#define _POSIX_C_SOURCE 200809L
#include <moontorch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "st_io.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_tensor(const char *name, mt_tensor *t) {
  printf("%s: %s [", name, mt_dtype_name(t->_dtype));
  for (int d = 0; d < t->_ndim; d++)
    printf("%s%lld", d ? ", " : "", (long long)t->_sizes[d]);
  printf("]");
  int64_t n = t->_numel < 8 ? t->_numel : 8;
  double *v = malloc((size_t)(t->_numel ? t->_numel : 1) * sizeof *v);
  if (v && mt_tensor_to_doubles(t, v, t->_numel) == MT_OK) {
    printf(" =");
    for (int64_t i = 0; i < n; i++)
      printf(" %.6g", v[i]);
    if (t->_numel > n)
      printf(" ...");
  }
  free(v);
  printf("\n");
}

int main(int argc, char **argv) {
  const char *model = NULL, *input = NULL, *output = NULL;
  long repeat = 0;
  int quiet = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc)
      output = argv[++i];
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--quiet"))
      quiet = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: moontorch-run model.mtp input.safetensors [-o output.safetensors] [--repeat N] [--quiet]\n");
      return 0;
    } else if (!model)
      model = argv[i];
    else if (!input)
      input = argv[i];
    else {
      fprintf(stderr, "moontorch-run: unexpected argument %s\n", argv[i]);
      return 2;
    }
  }
  if (!model || !input) {
    fprintf(stderr, "usage: moontorch-run model.mtp input.safetensors [-o output.safetensors] [--repeat N]\n");
    return 2;
  }
  mt_program *p = NULL;
  if (mt_program_load(model, &p) != MT_OK) {
    fprintf(stderr, "moontorch-run: %s\n", mt_last_error());
    return 1;
  }
  st_file in;
  char err[1200];
  if (st_read(input, &in, err, sizeof err)) {
    fprintf(stderr, "moontorch-run: %s\n", err);
    mt_program_free(p);
    return 1;
  }
  int ni = mt_program_num_inputs(p), no = mt_program_num_outputs(p), rc = 0;
  mt_tensor **ins = calloc((size_t)ni + 1, sizeof *ins), **outs = calloc((size_t)no, sizeof *outs);
  for (int i = 0; i < ni; i++) {
    mt_program_io io;
    mt_program_input(p, i, &io);
    ins[i] = st_find(&in, io.name);
    if (!ins[i] && ni == 1 && in.n == 1)
      ins[i] = in.tensors[0];
    if (!ins[i]) {
      fprintf(stderr, "moontorch-run: %s has no tensor named '%s' (the program's input %d)\n", input, io.name, i + 1);
      rc = 1;
    }
  }
  if (!rc && mt_program_run(p, ins, ni, outs, no) != MT_OK) {
    fprintf(stderr, "moontorch-run: %s\n", mt_last_error());
    rc = 1;
  }
  if (!rc && repeat > 0) {
    double t0 = now();
    for (long r = 0; r < repeat && !rc; r++) {
      mt_tensor **o2 = calloc((size_t)no, sizeof *o2);
      if (mt_program_run(p, ins, ni, o2, no) != MT_OK) {
        fprintf(stderr, "moontorch-run: %s\n", mt_last_error());
        rc = 1;
      }
      for (int k = 0; k < no; k++)
        if (o2[k])
          mt_tensor_release(o2[k]);
      free(o2);
    }
    if (!rc)
      printf("%ld runs: %.1f us a run\n", repeat, 1e6 * (now() - t0) / (double)repeat);
  }
  if (!rc) {
    char **names = calloc((size_t)no, sizeof *names);
    for (int k = 0; k < no; k++) {
      names[k] = malloc(32);
      snprintf(names[k], 32, "output%d", k + 1);
      if (!quiet)
        print_tensor(names[k], outs[k]);
    }
    if (output && st_write(output, no, names, outs, err, sizeof err)) {
      fprintf(stderr, "moontorch-run: %s\n", err);
      rc = 1;
    }
    for (int k = 0; k < no; k++)
      free(names[k]);
    free(names);
  }
  for (int k = 0; k < no; k++)
    if (outs[k])
      mt_tensor_release(outs[k]);
  free(ins);
  free(outs);
  st_free(&in);
  mt_program_free(p);
  return rc;
}
