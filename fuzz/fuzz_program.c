/* fuzz_program.c -- libFuzzer target: programs (.mtp, core/program/program.c: mt_program_load and
 * mt_program_run).
 *
 * An input is a program file (seeds: torch.export of small models, written by fuzz/make_seeds.lua:
 * an MLP, a convolution with batch norm and pooling, a transformer encoder layer). A program is a
 * torch.save checkpoint, so each input is loaded as it is, then with the file size, the value
 * stream's size and the XXH3 checksum recomputed as the writer computes them (as fuzz_checkpoint.c
 * does), so that mutations reach the program's checks: its schema, values, ops, attributes, the
 * order of definitions, the memory plan. A program that loads is run twice on inputs of its
 * declared types (zeros, then ones; skipped above 2^20 elements), and every output read. Any crash,
 * ASan or UBSan report, leak, or broken invariant (abort) is a finding. */
#define _GNU_SOURCE
#define FUZZ_NAME "fuzz_program"
#include "fuzz_common.h"

#define HEADER 64
#define PIECE ((size_t)128 << 10)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  return 0;
}

/* the file-size field, the stream size and the checksum, as the writer computes them; returns 0 when
 * the table cannot be read (the reader refuses the file before the checksum anyway) */
static int repair(uint8_t *f, size_t n) {
  if (n < HEADER)
    return 0;
  memset(f + 12, 0, 4); /* flags */
  wr64(f + 40, n);
  uint64_t nst = rd64(f + 16), table_off = rd64(f + 24);
  if (table_off < HEADER || table_off > n || nst > (n - table_off) / 16)
    return 0;
  wr64(f + 32, n - table_off - 16 * nst);
  size_t npieces = 0;
  for (uint64_t i = 0; i < nst; i++) {
    uint64_t off = rd64(f + table_off + 16 * i), nb = rd64(f + table_off + 16 * i + 8);
    if (off > n || nb > n - off)
      return 0;
    npieces += (size_t)((nb + PIECE - 1) / PIECE);
  }
  uint64_t *dig = malloc((npieces + 1) * sizeof *dig);
  check(dig != NULL, "malloc");
  size_t k = 0;
  for (uint64_t i = 0; i < nst; i++) {
    uint64_t off = rd64(f + table_off + 16 * i), nb = rd64(f + table_off + 16 * i + 8);
    for (uint64_t done = 0; done < nb; done += PIECE)
      dig[k++] = mt_xxh3_64(f + off + done, nb - done < PIECE ? (size_t)(nb - done) : PIECE);
  }
  dig[k] = mt_xxh3_64(f + table_off, n - table_off);
  uint8_t h[HEADER];
  memcpy(h, f, HEADER);
  wr64(h + 56, mt_xxh3_64(dig, 8 * (k + 1)));
  wr64(f + 56, mt_xxh3_64(h, HEADER));
  free(dig);
  return 1;
}

static void run(mt_program *p, double fill) {
  int ni = mt_program_num_inputs(p), no = mt_program_num_outputs(p);
  check(ni >= 0 && ni <= 64 && no >= 1 && no <= 64, "input and output counts");
  mt_tensor *ins[64] = {0}, *outs[64] = {0};
  int ok = 1;
  for (int i = 0; i < ni; i++) {
    mt_program_io io;
    check(mt_program_input(p, i, &io) == MT_OK, "an input's type");
    int64_t numel = 1;
    for (int d = 0; d < io.ndim; d++)
      numel = io.sizes[d] > 0 && numel > (1 << 20) / io.sizes[d] ? (1 << 21) : numel * io.sizes[d];
    if (numel > (1 << 20) || mt_tensor_full(io.sizes, io.ndim, io.dtype, fill, NULL, &ins[i]) != MT_OK)
      ok = 0;
  }
  if (ok && mt_program_run(p, ins, ni, outs, no) == MT_OK) {
    for (int k = 0; k < no; k++) {
      check(outs[k] != NULL, "an output");
      mt_program_io io;
      check(mt_program_output(p, k, &io) == MT_OK && io.ndim == outs[k]->_ndim && io.dtype == outs[k]->_dtype,
            "an output has its declared type");
      if (outs[k]->_numel > 0 && outs[k]->_numel <= (1 << 16)) {
        double *v = malloc((size_t)outs[k]->_numel * sizeof *v);
        check(v && mt_tensor_to_doubles(outs[k], v, outs[k]->_numel) == MT_OK, "an output's values");
        sink = v[0];
        free(v);
      }
      mt_tensor_release(outs[k]);
    }
  } else if (ok) {
    check(mt_last_error()[0] != 0, "a failed run has a message");
  }
  for (int i = 0; i < ni; i++)
    if (ins[i])
      mt_tensor_release(ins[i]);
}

static void load(const uint8_t *data, size_t size) {
  fuzz_put(data, size);
  mt_program *p = NULL;
  if (mt_program_load(path, &p) != MT_OK) {
    check(p == NULL && mt_last_error()[0] != 0, "a refused file gives no program and a message");
    return;
  }
  run(p, 0.0);
  run(p, 1.0);
  mt_program_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load(data, size);
  if (size < HEADER)
    return 0;
  uint8_t *f = malloc(size);
  check(f != NULL, "malloc");
  memcpy(f, data, size);
  if (repair(f, size) && memcmp(f, data, size) != 0)
    load(f, size);
  free(f);
  return 0;
}
