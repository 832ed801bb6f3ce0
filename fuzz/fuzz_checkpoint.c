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
#include "moontorch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HEADER 64
#define PIECE ((size_t)128 << 10)
#define MAX_DEPTH 1000 /* lua/checkpoint.lua's */
#define TOUCH_ALL (1 << 16)

static int memfd = -1;
static char path[64];
static volatile double sink;

static uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static void wr64(uint8_t *p, uint64_t v) {
  memcpy(p, &v, 8);
}

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_checkpoint: invariant broken: %s (last error: %s)\n", what, mt_last_error());
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  mt_set_num_threads(1);
  memfd = memfd_create("fuzz_checkpoint", MFD_CLOEXEC);
  if (memfd < 0) {
    perror("memfd_create");
    abort();
  }
  snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
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

static void touch_tensor(mt_tensor *t) {
  check(t->_ndim >= 0 && t->_ndim <= MT_MAX_DIMS, "rank");
  check(mt_dtype_valid(t->_dtype), "dtype");
  /* the view lies inside its storage */
  int64_t item = (int64_t)mt_dtype_size(t->_dtype), numel = 1, last = t->_offset;
  for (int d = 0; d < t->_ndim; d++) {
    check(t->_sizes[d] >= 0 && t->_strides[d] >= 0, "sizes and strides are not negative");
    numel *= t->_sizes[d]; /* the reader checked for overflow; UBSan would say otherwise */
    if (t->_sizes[d] > 0)
      last += (t->_sizes[d] - 1) * t->_strides[d];
  }
  check(numel == t->_numel, "numel");
  if (numel > 0)
    check((uint64_t)((last + 1) * item) <= t->_storage->_nbytes, "the view lies inside its storage");
  if (numel == 0)
    return;
  double acc = 0;
  if (numel <= TOUCH_ALL) {
    double *buf = malloc((size_t)numel * sizeof *buf);
    check(buf != NULL, "malloc");
    check(mt_tensor_to_doubles(t, buf, numel) == MT_OK, "to_doubles");
    for (int64_t i = 0; i < numel; i++)
      acc += buf[i];
    free(buf);
    mt_tensor *c = NULL;
    check(mt_contiguous(t, &c) == MT_OK, "contiguous");
    mt_tensor_release(c);
  } else {
    int64_t idx[MT_MAX_DIMS] = {0};
    double x;
    check(mt_tensor_get(t, idx, &x) == MT_OK, "the first element");
    acc += x;
    for (int d = 0; d < t->_ndim; d++)
      idx[d] = t->_sizes[d] - 1;
    check(mt_tensor_get(t, idx, &x) == MT_OK, "the last element");
    acc += x;
  }
  if (numel == 1) {
    double x;
    check(mt_tensor_item(t, &x) == MT_OK, "item");
    acc += x;
  }
  sink = acc;
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
  check(ftruncate(memfd, 0) == 0, "ftruncate");
  check(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite");
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
