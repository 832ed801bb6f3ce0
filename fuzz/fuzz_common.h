/* fuzz_common.h -- what the file readers' libFuzzer targets share (fuzz_checkpoint, fuzz_pytorch,
 * fuzz_t7, fuzz_program, fuzz_onnx): each input is written to a memfd that the reader opens by path
 * (/proc/self/fd/N); a broken invariant aborts with the target's name and the last error; a tensor
 * that loaded is checked to lie inside its storage and its elements read. Each target defines
 * FUZZ_NAME before including this (after _GNU_SOURCE and moontorch.h). */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include "moontorch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TOUCH_ALL (1 << 16) /* tensors up to this many elements are read whole; larger: first and last */

static int memfd = -1;
static char path[64];
static volatile double sink;

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, FUZZ_NAME ": invariant broken: %s (last error: %s)\n", what, mt_last_error());
    abort();
  }
}

/* one thread, and the memfd the inputs go through */
static void fuzz_init(void) {
  mt_set_num_threads(1);
  memfd = memfd_create(FUZZ_NAME, MFD_CLOEXEC);
  if (memfd < 0) {
    perror("memfd_create");
    abort();
  }
  snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
}

/* the input as the memfd's whole content (read back through `path`) */
static void fuzz_put(const uint8_t *data, size_t size) {
  check(ftruncate(memfd, 0) == 0, "ftruncate");
  check(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite");
}

static inline uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static inline void wr64(uint8_t *p, uint64_t v) {
  memcpy(p, &v, 8);
}

/* a tensor a reader made: its geometry inside its storage, its elements read (and, small ones, made
 * contiguous; a one-element one read by item) */
static inline void touch_tensor(mt_tensor *t) {
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

#endif
