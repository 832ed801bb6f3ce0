/* What torch.save / torch.load need from C (lua/torchfile.lua does the rest): a fast hash for the
 * file's checksum, copy-on-write file mappings shared by tensors, and fsync helpers for atomic
 * replacement of a file. */
#include "mt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static inline uint64_t mix(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  return x;
}

uint64_t mt_hash64(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = data;
  /* four independent lanes so the multiplies overlap */
  uint64_t a = h ^ 0x9e3779b97f4a7c15ULL, b = h + 0x632be59bd9b4e019ULL, c = ~h, d = h ^ 0x85ebca77c2b2ae63ULL;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w0, w1, w2, w3;
    memcpy(&w0, p + i, 8);
    memcpy(&w1, p + i + 8, 8);
    memcpy(&w2, p + i + 16, 8);
    memcpy(&w3, p + i + 24, 8);
    a = (a ^ w0) * 0xff51afd7ed558ccdULL;
    b = (b ^ w1) * 0xc4ceb9fe1a85ec53ULL;
    c = (c ^ w2) * 0xff51afd7ed558ccdULL;
    d = (d ^ w3) * 0xc4ceb9fe1a85ec53ULL;
    a ^= a >> 29;
    b ^= b >> 29;
    c ^= c >> 29;
    d ^= d >> 29;
  }
  uint64_t r = mix(a) ^ (mix(b) * 3) ^ (mix(c) * 5) ^ (mix(d) * 7);
  for (; i < n; i++) r = (r ^ p[i]) * 0x100000001b3ULL;
  return mix(r ^ (uint64_t)n);
}

mt_status mt_mapping_open(const char *path, mt_mapping **out) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return mt_error(MT_EIO, "load: %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return mt_error(MT_EIO, "load: %s: %s", path, strerror(e));
  }
  mt_mapping *m = malloc(sizeof *m);
  if (!m) {
    close(fd);
    return mt_error(MT_ENOMEM, "load: out of memory");
  }
  m->size = (size_t)st.st_size;
  m->refs = 1;
  m->data = NULL;
  if (m->size > 0) {
    void *p = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      close(fd);
      free(m);
      return mt_error(MT_EIO, "load: %s: mmap failed: %s", path, strerror(e));
    }
    m->data = p;
  }
  close(fd);
  *out = m;
  return MT_OK;
}

void mt_mapping_retain(mt_mapping *m) {
  if (m) __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
}

void mt_mapping_release(void *ctx, void *data) {
  (void)data;
  mt_mapping *m = ctx;
  if (!m) return;
  if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (m->data) munmap(m->data, m->size);
  free(m);
}

mt_status mt_fsync_dir(const char *path) {
  char dir[4096];
  size_t n = strlen(path);
  if (n >= sizeof dir) return mt_error(MT_EINVAL, "save: path too long");
  memcpy(dir, path, n + 1);
  char *slash = strrchr(dir, '/');
  if (!slash) strcpy(dir, ".");
  else if (slash == dir) dir[1] = 0;
  else *slash = 0;
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return mt_error(MT_EIO, "save: %s: %s", dir, strerror(errno));
  int r = fsync(fd);
  int e = errno;
  close(fd);
  /* some file systems cannot fsync a directory: that is not a failure of the save */
  if (r != 0 && e != EINVAL && e != EROFS) return mt_error(MT_EIO, "save: fsync %s: %s", dir, strerror(e));
  return MT_OK;
}

mt_status mt_fsync_file(void *stdio_file) {
  FILE *f = stdio_file;
  if (fflush(f) != 0) return mt_error(MT_EIO, "save: write failed: %s", strerror(errno));
  if (fsync(fileno(f)) != 0) return mt_error(MT_EIO, "save: fsync failed: %s", strerror(errno));
  return MT_OK;
}
