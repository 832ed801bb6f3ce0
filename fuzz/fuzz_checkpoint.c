/* fuzz_checkpoint.c -- libFuzzer target: the torch.save reader (core/checkpoint.c).
 *
 * An input is a checkpoint file (seeds: real torch.save files, fuzz/make_seeds.lua). It is read
 * twice through a memfd (the reader takes a path: /proc/self/fd/N):
 *  1. as it is: the header, table, padding and checksum checks meet the mutated bytes;
 *  2. repaired as a writer would have written it: the file-size field, the value-stream size and
 *     the XXH3 checksum recomputed (core/checkpoint.c's top comment: 128 KiB pieces of each
 *     payload, then the table and value stream as one piece, then the header), so that mutations
 *     of the payloads, the table and the value stream get past the checksum to the record parser.
 *     The header's flags word (reserved, must be 0) is the harness's switch here: bit 0 asks for
 *     the mmap reader; the repair sets the word back to 0.
 * Every value is read out as lua/checkpoint.lua reads it (tables' pairs, objects' states, to the
 * same depth limit), strings' bytes summed, and every tensor checked to lie inside its storage and
 * its elements read (all of them up to 64 Ki elements, else the first and the last). Any crash,
 * ASan or UBSan report, leak, or broken invariant (abort) is a finding. */
#define _GNU_SOURCE
#define FUZZ_NAME "fuzz_checkpoint"
#include "fuzz_common.h"

#define HEADER 64
#define PIECE ((size_t)128 << 10)
#define MAX_DEPTH 1000 /* lua/checkpoint.lua's */

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

/* one value and everything in it; 0 when the reader refused something */
static int walk(mt_ckpt_reader *r, int depth) {
  if (depth > MAX_DEPTH)
    return 0;
  mt_ckpt_value v;
  if (mt_ckpt_read_value(r, &v) != MT_OK) {
    check(mt_last_error()[0] != 0, "a failure has a message");
    return 0;
  }
  switch (v.tag) {
  case MT_CKPT_NUMBER:
    sink = v.number;
    return 1;
  case MT_CKPT_STRING:
  case MT_CKPT_OBJECT: {
    unsigned s = 0;
    for (uint64_t i = 0; i < v.count; i++)
      s += (unsigned char)v.str[i];
    sink = s;
    return v.tag == MT_CKPT_STRING ? 1 : walk(r, depth + 1); /* an object: its state follows */
  }
  case MT_CKPT_TABLE:
    for (uint64_t i = 0; i < v.count; i++)
      if (!walk(r, depth + 1) || !walk(r, depth + 1))
        return 0;
    return 1;
  case MT_CKPT_TENSOR:
    check(v.tensor != NULL, "a tensor value has a tensor");
    touch_tensor(v.tensor);
    if (v.flags & 2)
      check(mt_set_requires_grad(v.tensor, 1) == MT_OK, "requires_grad on a floating tensor");
    mt_tensor_release(v.tensor);
    return 1;
  default:
    return 1;
  }
}

static void load(const uint8_t *data, size_t size, int use_mmap) {
  fuzz_put(data, size);
  mt_ckpt_reader *r = NULL;
  if (mt_ckpt_reader_open(path, use_mmap, &r) != MT_OK) {
    check(r == NULL && mt_last_error()[0] != 0, "a refused file gives no reader and a message");
    return;
  }
  if (walk(r, 0))
    (void)mt_ckpt_reader_end(r);
  mt_ckpt_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int use_mmap = size >= HEADER && (data[12] & 1);
  load(data, size, 0);
  if (size < HEADER)
    return 0;
  uint8_t *f = malloc(size);
  check(f != NULL, "malloc");
  memcpy(f, data, size);
  if (repair(f, size) && memcmp(f, data, size) != 0)
    load(f, size, use_mmap);
  free(f);
  return 0;
}
