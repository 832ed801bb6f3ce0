/* fuzz_t7.c -- libFuzzer target: Torch7's serialisation (core/formats/t7.c).
 *
 * An input is a .t7 file (seeds: written by spec/support/t7_writer.lua through fuzz/make_seeds.lua:
 * nn modules, tensors and storages of every Torch7 type, references and cycles, functions, in the
 * binary format with 8- and 4-byte longs and in ASCII). It is read through a memfd (the reader takes
 * a path: /proc/self/fd/N) with the format told by its first bytes and the long size detected, then
 * every value of what loads is read out as lua/interop/t7.lua reads it: each node's fields, items
 * and children naming existing nodes, strings' bytes summed, and every tensor checked to lie inside
 * its storage and its elements read (all up to 64 Ki elements, else the first and the last). Any
 * crash, ASan or UBSan report, leak, or broken invariant (abort) is a finding. */
#define _GNU_SOURCE
#include "moontorch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TOUCH_ALL (1 << 16)

static int memfd = -1;
static char path[64];
static volatile double sink;

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_t7: invariant broken: %s (last error: %s)\n", what, mt_last_error());
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  mt_set_num_threads(1);
  memfd = memfd_create("fuzz_t7", MFD_CLOEXEC);
  if (memfd < 0) {
    perror("memfd_create");
    abort();
  }
  snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
  return 0;
}

static void touch_tensor(mt_tensor *t) {
  check(t->_ndim >= 0 && t->_ndim <= MT_MAX_DIMS, "rank");
  check(mt_dtype_valid(t->_dtype), "dtype");
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
  sink = acc;
}

static void walk(mt_t7_file *f) {
  uint32_t n = mt_t7_count(f), root = mt_t7_root(f);
  check(root >= 1 && root <= n, "the root is a node");
  for (uint32_t id = 1; id <= n; id++) {
    mt_t7_value v;
    check(mt_t7_get(f, id, &v) == MT_OK, "every node can be read");
    switch (v.kind) {
    case MT_T7_STRING:
    case MT_T7_FUNCTION:
    case MT_T7_OBJECT: {
      unsigned s = 0;
      for (int64_t i = 0; i < v.count; i++)
        s += (unsigned char)v.str[i];
      check(v.str[v.count] == 0, "strings are NUL-terminated");
      check(v.child <= n, "a child is a node");
      sink = s;
      break;
    }
    case MT_T7_TABLE:
      for (int64_t i = 0; i < 2 * v.count; i++)
        check(v.items[i] >= 1 && v.items[i] <= n, "items are nodes");
      break;
    case MT_T7_TENSOR:
    case MT_T7_STORAGE:
      check(v.tensor != NULL, "a tensor value has a tensor");
      check(v.tensor->_dtype == v.dtype, "a tensor's dtype");
      touch_tensor(v.tensor);
      mt_tensor_release(v.tensor);
      break;
    case MT_T7_NUMBER:
    case MT_T7_BOOLEAN:
      sink = v.number;
      break;
    default:
      check(v.kind == MT_T7_NIL, "a known kind");
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(ftruncate(memfd, 0) == 0, "ftruncate");
  check(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite");
  mt_t7_file *f = NULL;
  if (mt_t7_open(path, MT_T7_AUTO, 0, &f) != MT_OK) {
    check(f == NULL && mt_last_error()[0] != 0, "a refused file gives no reader and a message");
    return 0;
  }
  walk(f);
  mt_t7_close(f);
  return 0;
}
