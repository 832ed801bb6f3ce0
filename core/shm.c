/* shm.c -- tensors in shared memory: how the DataLoader's worker processes (lua/utils/data_workers.lua)
 * hand batches to the main process without copying them.
 *
 * A block is an anonymous memory file (memfd_create; where the kernel lacks it, a file in /dev/shm
 * unlinked at once) mapped MAP_SHARED. A worker makes its batch's tensors in such blocks
 * (mt_shm_empty: the default collate stacks samples straight into one; mt_shm_pack copies tensors
 * made elsewhere into one block) and sends the blocks' descriptors over its channel (proc.c). The
 * main process maps each descriptor (mt_shm_map_fd, which closes it) and makes tensors over the
 * mapping (mt_shm_map_tensor); the mapping goes when the last of them dies. The kernel frees the pages
 * when the last mapping and descriptor are gone, in whichever process that is.
 *
 * A tensor over a block is an ordinary CPU tensor whose storage is external memory (mt_tensor_from_blob
 * with a deleter that drops its reference to the block), so every op reads and writes it as any other.
 * Blocks this process made keep their descriptor until the message that hands them on went
 * (mt_shm_close_fds closes them all: a worker's collate may make blocks it then drops, whose
 * descriptors must not pile up until the GC frees the tensors), and are found by their address
 * (mt_shm_fd_of) in a list of those. */
#define _GNU_SOURCE /* memfd_create, mkostemp */
#include "mt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define OP "utils.data.shared_memory"

struct mt_shm_map {
  int64_t refcount; /* atomic: the tensors over it, and the holder of a mt_shm_map_fd result */
  char *base;
  size_t nbytes; /* the file's size and the mapping's length */
  int fd;        /* the file, while this process holds it; -1 after */
  struct mt_shm_map *prev, *next; /* in `made` while fd >= 0 */
};

/* the blocks with an open descriptor, for mt_shm_fd_of */
static pthread_mutex_t made_mu = PTHREAD_MUTEX_INITIALIZER;
static mt_shm_map *made;
static int64_t live_maps; /* atomic */

static void unlist(mt_shm_map *m) {
  if (m->prev) m->prev->next = m->next;
  else made = m->next;
  if (m->next) m->next->prev = m->prev;
  m->prev = m->next = NULL;
}

void mt_shm_map_release(mt_shm_map *m) {
  if (!m || __atomic_sub_fetch(&m->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (m->fd >= 0) {
    pthread_mutex_lock(&made_mu);
    unlist(m);
    pthread_mutex_unlock(&made_mu);
    close(m->fd);
  }
  if (m->base) munmap(m->base, m->nbytes);
  __atomic_sub_fetch(&live_maps, 1, __ATOMIC_RELAXED);
  free(m);
}

int64_t mt_shm_live(void) { return __atomic_load_n(&live_maps, __ATOMIC_RELAXED); }

static void tensor_gone(void *ctx, void *data) {
  (void)data;
  mt_shm_map_release(ctx);
}

/* memfd_create, or (set to 0 by a test, or where the kernel has no memfd) an unlinked /dev/shm file */
static int use_memfd = 1;
int mt_shm_use_memfd(int set) {
  if (set == 0 || set == 1) use_memfd = set;
  return use_memfd;
}

static int new_file(size_t nbytes) {
  int fd = -1;
  if (use_memfd) {
    fd = memfd_create("moontorch-shm", MFD_CLOEXEC);
    if (fd < 0 && errno != ENOSYS) return -1;
  }
  if (fd < 0) {
    char path[] = "/dev/shm/moontorch-XXXXXX";
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) return -1;
    unlink(path);
  }
  if (ftruncate(fd, (off_t)nbytes) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* a map over fd (nbytes > 0), refcount 1 */
static mt_status map_fd(int fd, size_t nbytes, int keep_fd, mt_shm_map **out) {
  mt_shm_map *m = calloc(1, sizeof *m);
  if (!m) return mt_error(MT_ENOMEM, OP ": out of memory");
  void *p = mmap(NULL, nbytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    free(m);
    return mt_error(e == ENOMEM ? MT_ENOMEM : MT_EIO, OP ": cannot map %zu bytes of shared memory: %s", nbytes,
                    strerror(e));
  }
  m->refcount = 1;
  m->base = p;
  m->nbytes = nbytes;
  m->fd = keep_fd ? fd : -1;
  __atomic_add_fetch(&live_maps, 1, __ATOMIC_RELAXED);
  if (keep_fd) {
    pthread_mutex_lock(&made_mu);
    m->next = made;
    if (made) made->prev = m;
    made = m;
    pthread_mutex_unlock(&made_mu);
  }
  *out = m;
  return MT_OK;
}

mt_status mt_shm_map_fd(int fd, size_t nbytes, mt_shm_map **out) {
  struct stat st;
  if (nbytes == 0) {
    close(fd);
    return mt_error(MT_EINVAL, OP ": a shared block of 0 bytes");
  }
  if (fstat(fd, &st) != 0 || st.st_size < 0 || (size_t)st.st_size < nbytes) {
    close(fd);
    return mt_error(MT_EIO, OP ": the shared block is smaller than announced (%zu bytes)", nbytes);
  }
  mt_status s = map_fd(fd, nbytes, 0, out);
  close(fd); /* the mapping keeps the file */
  return s;
}

mt_status mt_shm_map_tensor(mt_shm_map *m, int64_t byte_offset, int dtype, const int64_t *sizes,
                            const int64_t *strides, int ndim, mt_tensor **out) {
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, OP ": invalid dtype %d", dtype);
  if (ndim < 0 || ndim > MT_MAX_DIMS) return mt_error(MT_EINVAL, OP ": %d dimensions", ndim);
  int64_t numel = 1, span = 1, item = (int64_t)mt_dtype_size(dtype);
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] < 0 || strides[i] < 0) return mt_error(MT_EINVAL, OP ": negative size or stride");
    numel *= sizes[i];
    if (sizes[i] > 0) span += (sizes[i] - 1) * strides[i];
  }
  if (numel > 0 && (byte_offset < 0 || byte_offset % item != 0 ||
                    (uint64_t)byte_offset + (uint64_t)span * (uint64_t)item > m->nbytes))
    return mt_error(MT_ERANGE, OP ": a tensor outside its shared block");
  __atomic_add_fetch(&m->refcount, 1, __ATOMIC_RELAXED);
  mt_status s = mt_tensor_from_blob(numel > 0 ? m->base + byte_offset : m->base, sizes, strides, ndim, dtype,
                                    tensor_gone, m, out);
  if (s != MT_OK) mt_shm_map_release(m);
  return s;
}

/* a new block of nbytes (> 0) with its descriptor kept */
static mt_status new_block(size_t nbytes, mt_shm_map **out) {
  int fd = new_file(nbytes);
  if (fd < 0) {
    int e = errno;
    return mt_error(e == ENOSPC || e == ENOMEM ? MT_ENOMEM : MT_EIO,
                    OP ": cannot make a shared block of %zu bytes: %s", nbytes, strerror(e));
  }
  mt_status s = map_fd(fd, nbytes, 1, out);
  if (s != MT_OK) close(fd);
  return s;
}

mt_status mt_shm_empty(const int64_t *sizes, int ndim, int dtype, mt_tensor **out) {
  int64_t numel;
  MT_TRY(mt_check_sizes(sizes, ndim, "shm_empty", &numel));
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, OP ": invalid dtype %d", dtype);
  size_t nbytes = (size_t)numel * mt_dtype_size(dtype);
  if (nbytes == 0) return mt_tensor_empty(sizes, ndim, dtype, NULL, out);
  mt_shm_map *m;
  MT_TRY(new_block(nbytes, &m));
  int64_t strides[MT_MAX_DIMS];
  mt_compute_strides(sizes, ndim, strides);
  mt_status s = mt_shm_map_tensor(m, 0, dtype, sizes, strides, ndim, out);
  mt_shm_map_release(m); /* the tensor holds it */
  return s;
}

/* the listed block holding t's storage, or NULL (caller holds made_mu) */
static mt_shm_map *block_of(const mt_tensor *t) {
  const char *d = t->_storage ? t->_storage->_data : NULL;
  if (!d) return NULL;
  for (mt_shm_map *m = made; m; m = m->next)
    if (d >= m->base && d < m->base + m->nbytes) return m;
  return NULL;
}

int mt_shm_fd_of(const mt_tensor *t, size_t *nbytes, int64_t *byte_offset) {
  pthread_mutex_lock(&made_mu);
  mt_shm_map *m = block_of(t);
  int fd = m ? m->fd : -1;
  if (m) {
    if (nbytes) *nbytes = m->nbytes;
    if (byte_offset) *byte_offset = t->_data - m->base;
  }
  pthread_mutex_unlock(&made_mu);
  return fd;
}

void mt_shm_close_fds(void) {
  pthread_mutex_lock(&made_mu);
  while (made) {
    mt_shm_map *m = made;
    unlist(m);
    close(m->fd);
    m->fd = -1;
  }
  pthread_mutex_unlock(&made_mu);
}

#define PACK_ALIGN 64
mt_status mt_shm_pack(mt_tensor *const *ts, int n, int64_t *offsets, mt_tensor **out) {
  if (n < 0) return mt_error(MT_EINVAL, OP ": %d tensors to pack", n);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    if (!ts[i] || ts[i]->_device_type != MT_CPU) return mt_error(MT_EDEVICE, OP ": only CPU tensors can be shared");
    offsets[i] = (int64_t)total;
    uint64_t nb = (uint64_t)ts[i]->_numel * mt_dtype_size(ts[i]->_dtype);
    total += (nb + PACK_ALIGN - 1) & ~(uint64_t)(PACK_ALIGN - 1);
  }
  int64_t sz = (int64_t)(total > 0 ? total : 0);
  mt_tensor *block;
  MT_TRY(mt_shm_empty(&sz, 1, MT_UINT8, &block));
  if (total == 0) return mt_give(block, out);
  mt_shm_map *m;
  pthread_mutex_lock(&made_mu);
  m = block_of(block);
  pthread_mutex_unlock(&made_mu);
  for (int i = 0; i < n; i++) {
    if (ts[i]->_numel == 0) continue;
    int64_t strides[MT_MAX_DIMS];
    mt_compute_strides(ts[i]->_sizes, ts[i]->_ndim, strides);
    mt_tensor *dst;
    mt_status s = mt_shm_map_tensor(m, offsets[i], ts[i]->_dtype, ts[i]->_sizes, strides, ts[i]->_ndim, &dst);
    if (s == MT_OK) {
      s = mt_copy_(dst, ts[i]);
      mt_tensor_release(dst);
    }
    if (s != MT_OK) {
      mt_tensor_release(block);
      return s;
    }
  }
  return mt_give(block, out);
}
