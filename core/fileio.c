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

typedef uint64_t mt_u64x2 __attribute__((vector_size(16)));

uint64_t mt_hash64(const void *data, size_t n, uint64_t h) {
  /* Fletcher-style sums over 64-bit words in 8 independent lanes (4 two-word vectors, so the
   * loop runs near memory speed): any single changed bit changes the first sums, and the second
   * sums make the order of the words count. The lanes are mixed at the end. */
  const unsigned char *p = data;
  mt_u64x2 a0 = {h, h + 1}, a1 = {h + 2, h + 3}, a2 = {h + 4, h + 5}, a3 = {h + 6, h + 7};
  mt_u64x2 b0 = {~h, ~h}, b1 = b0, b2 = b0, b3 = b0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    mt_u64x2 w0, w1, w2, w3;
    memcpy(&w0, p + i, 16);
    memcpy(&w1, p + i + 16, 16);
    memcpy(&w2, p + i + 32, 16);
    memcpy(&w3, p + i + 48, 16);
    a0 += w0;
    a1 += w1;
    a2 += w2;
    a3 += w3;
    b0 += a0;
    b1 += a1;
    b2 += a2;
    b3 += a3;
  }
  uint64_t lanes[16];
  memcpy(lanes, &a0, 16);
  memcpy(lanes + 2, &a1, 16);
  memcpy(lanes + 4, &a2, 16);
  memcpy(lanes + 6, &a3, 16);
  memcpy(lanes + 8, &b0, 16);
  memcpy(lanes + 10, &b1, 16);
  memcpy(lanes + 12, &b2, 16);
  memcpy(lanes + 14, &b3, 16);
  uint64_t r = h ^ 0x85ebca77c2b2ae63ULL;
  for (int k = 0; k < 16; k++) r = mix(r ^ lanes[k]) + (uint64_t)k;
  for (; i < n; i++) r = (r ^ p[i]) * 0x100000001b3ULL;
  return mix(r ^ (uint64_t)n);
}

/* A storage's checksum: 128 KB pieces hashed independently (one pass each), their hashes then
 * chained into h in order. Copying while hashing (mt_copy_hashed) gives the same value. */
#define MT_HASH_PIECE ((size_t)128 * 1024)

typedef struct hash_job {
  const char *src;
  char *dst; /* NULL: hash only */
  size_t n;
  uint64_t *out;
} hash_job;

static void hash_pieces(void *ctx, int64_t begin, int64_t end) {
  hash_job *j = ctx;
  for (int64_t k = begin; k < end; k++) {
    size_t off = (size_t)k * MT_HASH_PIECE;
    size_t len = j->n - off < MT_HASH_PIECE ? j->n - off : MT_HASH_PIECE;
    const char *p = j->src + off;
    if (j->dst) {
      memcpy(j->dst + off, p, len);
      p = j->dst + off; /* hash what was written, while it is in the cache */
    }
    j->out[k] = mt_hash64(p, len, (uint64_t)k);
  }
}

static uint64_t hash_storage(const void *src, void *dst, size_t n, uint64_t h) {
  size_t pieces = (n + MT_HASH_PIECE - 1) / MT_HASH_PIECE;
  uint64_t local[64];
  uint64_t *out = pieces <= 64 ? local : malloc(pieces * sizeof(uint64_t));
  if (!out) { /* out of memory: the same value, one piece at a time */
    for (size_t k = 0; k < pieces; k++) {
      size_t off = k * MT_HASH_PIECE;
      size_t len = n - off < MT_HASH_PIECE ? n - off : MT_HASH_PIECE;
      const char *p = (const char *)src + off;
      if (dst) {
        memcpy((char *)dst + off, p, len);
        p = (const char *)dst + off;
      }
      uint64_t one = mt_hash64(p, len, (uint64_t)k);
      h = mt_hash64(&one, 8, h);
    }
    return mt_hash64(&n, sizeof n, h);
  }
  hash_job j = {src, dst, n, out};
  hash_pieces(&j, 0, (int64_t)pieces);
  for (size_t k = 0; k < pieces; k++) h = mt_hash64(&out[k], 8, h);
  if (out != local) free(out);
  return mt_hash64(&n, sizeof n, h);
}

uint64_t mt_hash_storage(const void *data, size_t n, uint64_t h) { return hash_storage(data, NULL, n, h); }
uint64_t mt_copy_hashed(void *dst, const void *src, size_t n, uint64_t h) { return hash_storage(src, dst, n, h); }

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
  if (fdatasync(fileno(f)) != 0) return mt_error(MT_EIO, "save: fsync failed: %s", strerror(errno));
  return MT_OK;
}
