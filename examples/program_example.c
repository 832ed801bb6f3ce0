/* Runs a model that torch.export wrote, from C alone: libmoontorch's mt_program_* API (README,
 * "Deploy"). program_example model.mtp: fills the program's first input with 0.01 * i, runs it, and
 * prints each output's first values. Built by CMake; spec/program_spec.lua runs it. */
#include <moontorch.h>
#include <stdio.h>

int main(int argc, char **argv) {
  mt_program *p;
  mt_program_io in;
  mt_tensor *x, *y[8];
  if (argc != 2 || mt_program_load(argv[1], &p) != MT_OK || mt_program_input(p, 0, &in) != MT_OK ||
      mt_program_num_inputs(p) != 1 || mt_program_num_outputs(p) > 8)
    return fprintf(stderr, "program_example: %s\n", argc == 2 ? mt_last_error() : "usage: program_example model.mtp"),
           1;
  if (mt_tensor_empty(in.sizes, in.ndim, in.dtype, NULL, &x) != MT_OK)
    return 1;
  double v[4096];
  for (int64_t i = 0; i < x->_numel && i < 4096; i++)
    v[i] = 0.01 * (double)i;
  if (x->_numel > 4096 || mt_tensor_from_doubles(x, v, x->_numel) != MT_OK)
    return 1;
  int n = mt_program_num_outputs(p);
  if (mt_program_run(p, &x, 1, y, n) != MT_OK)
    return fprintf(stderr, "program_example: %s\n", mt_last_error()), 1;
  for (int o = 0; o < n; o++) {
    mt_tensor_to_doubles(y[o], v, y[o]->_numel < 4096 ? y[o]->_numel : 4096);
    printf("output %d: %lld values:", o + 1, (long long)y[o]->_numel);
    for (int64_t i = 0; i < y[o]->_numel && i < 4; i++)
      printf(" %.6f", v[i]);
    printf("\n");
    mt_tensor_release(y[o]);
  }
  mt_tensor_release(x);
  mt_program_free(p);
  return 0;
}
