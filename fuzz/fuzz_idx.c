/* fuzz_idx.c -- libFuzzer target: the IDX reader (core/idx.c, mt_idx_read).
 *
 * An input is an IDX file, read from a memfd through its /proc path as torch.datasets.read_idx
 * reads a file. An input whose first byte is 0xFF is the file after that byte, gzip-compressed
 * here first, so that the fuzzer explores the header and body behind a valid gzip stream too (a
 * gzip input as such reaches the zlib path with its damage). What a read that succeeds promises
 * is checked (abort when broken): a CPU tensor of an IDX dtype, 1 to 16 dims, sizes and element
 * count as the header says, and for a plain input exactly header + data bytes; every element is
 * read. A failure must give a message naming datasets.read_idx. */
#define _GNU_SOURCE
#include "moontorch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef MT_HAVE_ZLIB
#include <zlib.h>
#endif

static volatile unsigned sink;

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_idx: invariant broken: %s (last error: %s)\n", what, mt_last_error());
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  mt_set_num_threads(1);
  return 0;
}

static void write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    check(w > 0, "writing the memfd");
    p += w, n -= (size_t)w;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz_idx", 0);
  check(fd >= 0, "memfd_create");
  int gz = size > 0 && data[0] == 0xFF;
  if (gz) {
#ifdef MT_HAVE_ZLIB
    z_stream z = {0};
    check(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
    uLong cap = deflateBound(&z, (uLong)(size - 1)) + 64;
    uint8_t *out = malloc(cap);
    check(out != NULL, "malloc");
    z.next_in = (Bytef *)(data + 1);
    z.avail_in = (uInt)(size - 1);
    z.next_out = out;
    z.avail_out = (uInt)cap;
    check(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
    write_all(fd, out, cap - z.avail_out);
    deflateEnd(&z);
    free(out);
#else
    write_all(fd, data + 1, size - 1);
    gz = 0;
#endif
  } else {
    write_all(fd, data, size);
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  mt_tensor *t = NULL;
  mt_status st = mt_idx_read(path, &t);
  if (st == MT_OK) {
    const uint8_t *f = gz ? data + 1 : data;
    size_t n = gz ? size - 1 : size;
    check(t != NULL, "a tensor on success");
    check(t->_device_type == MT_CPU, "a CPU tensor");
    check(t->_ndim >= 1 && t->_ndim <= 16, "1 to 16 dims");
    if (!gz && size >= 2 && data[0] == 0x1f && data[1] == 0x8b) { /* a gzip file as such: its header is inside */
      size_t item = mt_dtype_size(t->_dtype);
      unsigned acc = 0;
      const unsigned char *p = (const unsigned char *)t->_data;
      for (int64_t i = 0; i < t->_numel * (int64_t)item; i++) acc += p[i];
      sink = acc;
      mt_tensor_release(t);
      close(fd);
      return 0;
    }
    check(n >= 4 && f[0] == 0 && f[1] == 0 && f[3] == t->_ndim, "magic and rank as the file says");
    check(t->_ndim >= 1 && t->_ndim <= 16, "1 to 16 dims");
    int64_t numel = 1;
    for (int d = 0; d < t->_ndim; d++) {
      const uint8_t *b = f + 4 + 4 * d;
      int64_t s = ((int64_t)b[0] << 24) | ((int64_t)b[1] << 16) | ((int64_t)b[2] << 8) | b[3];
      check(t->_sizes[d] == s, "sizes as the header says");
      numel *= s;
    }
    check(t->_numel == numel, "the element count");
    size_t item = mt_dtype_size(t->_dtype);
    int want = f[2] == 0x08 ? MT_UINT8 : f[2] == 0x09 ? MT_INT8 : f[2] == 0x0B ? MT_INT16 : f[2] == 0x0C ? MT_INT32
             : f[2] == 0x0D ? MT_FLOAT32 : f[2] == 0x0E ? MT_FLOAT64 : -1;
    check(t->_dtype == want, "the dtype of the type byte");
    check(n == 4 + 4 * (size_t)t->_ndim + (size_t)numel * item, "header + data bytes, nothing more");
    unsigned acc = 0;
    const unsigned char *p = (const unsigned char *)t->_data;
    for (int64_t i = 0; i < numel * (int64_t)item; i++) acc += p[i];
    sink = acc;
    mt_tensor_release(t);
  } else {
    check(t == NULL, "no tensor on failure");
    check(strncmp(mt_last_error(), "datasets.read_idx: ", 19) == 0, "the message names datasets.read_idx");
  }
  close(fd);
  return 0;
}
