/* alloc.c -- storages and tensor heads: allocation, reference counting, statistics.
 *
 * A new tensor is one block: [tensor head][storage][pad][data, 64-byte aligned]. The head and the
 * storage are freed with the data, when the storage's last reference goes (a view keeps the
 * block alive after its base head died). Views get heads of their own. */
#include "alloc.h"
#include "thread.h"

#include <stdio.h>
#include <stdlib.h>

#define MT_STORAGE_SMALL 0x100u
#define MT_STORAGE_HALF 0x200u
#define MT_STORAGE_NO_DATA 0x400u /* on a device that holds no data (meta): its bytes are not counted */
#define ALIGN 64
/* bytes before the data in a block: the head and the storage, rounded to ALIGN */
#define EMBED_HEAD ((sizeof(mt_tensor) + sizeof(mt_storage) + MT_META_BYTES + ALIGN - 1) & ~(size_t)(ALIGN - 1))

static mt_stats stats;
mt_stats *mt_get_stats(void) { return &stats; }

/* Statistics are plain adds (an atomic add per field would cost more than a small op), and atomic
 * adds while a parallel job runs, where the pool's threads and the caller may all allocate at once
 * (a kernel that makes tensors per chunk). Outside a job only the caller allocates, so the counts
 * are exact; threads of a C program's own that allocate at once make them approximate. */
static inline void stat_add(int64_t *p, int64_t v) {
  if (mt_pool_busy()) __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  else *p += v;
}

/* Small tensors (head + data within SMALL_BLOCK bytes) take blocks from a per-thread free list
 * fed by slabs: a small op's allocation is a pop and its release a push. The blocks are kept
 * for reuse (as PyTorch's caching allocator keeps memory). Under AddressSanitizer every block
 * is a malloc of its own, so that use-after-free is caught. */
#define SMALL_BLOCK MT_SMALL_BLOCK
#define SLAB_BYTES (64 * 1024)
/* three classes: 512-byte blocks (a head with up to 64 bytes of data, view heads), 1024-byte
 * ones, and graph nodes (core/grad) */
enum { NODE_CLASS = 2, NCLASS = 3 };
static const size_t class_size[NCLASS] = {SMALL_BLOCK / 2, SMALL_BLOCK, MT_NODE_BLOCK};
/* Blocks come back a GC cycle after their last use (lua/tensor.lua), cold. Taking one from the
 * list fetches the next one's lines that its next user will touch (bit k: line k), so that the
 * next allocation does not stall on them: a tensor block's head, strides, storage, autograd
 * metadata and first data line (lines 0, 1, 3, 5, 6, 7: see mt_new); a node's first three lines
 * (struct mt_node). */
#ifndef MT_ASAN_BUILD
static const unsigned class_lines[NCLASS] = {0xEB, 0x1EB, 0x7};
/* The free lists: the first thread that allocates (the Lua thread, as a rule) owns one set,
 * reached without thread-local storage (whose address lookup in a shared library is a call);
 * other threads have their own. */
static void *owner_list[NCLASS];
static void *owner_tp;
static _Thread_local void *small_list[NCLASS];
static inline void **lists(void) {
  void *tp = __builtin_thread_pointer();
  void *owner = __atomic_load_n(&owner_tp, __ATOMIC_RELAXED);
  if (__builtin_expect(tp == owner, 1)) return owner_list;
  void *expect = NULL;
  if (!owner && __atomic_compare_exchange_n(&owner_tp, &expect, tp, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return owner_list;
  return small_list;
}
#endif

#ifndef MT_ASAN_BUILD
/* an empty free list: a new slab cut into blocks */
static __attribute__((noinline)) void *small_refill(int cls) {
  void **list = lists();
  char *slab = NULL;
  if (posix_memalign((void **)&slab, ALIGN, SLAB_BYTES) != 0) return NULL;
  size_t n = SLAB_BYTES / class_size[cls];
  for (size_t i = n - 1; i >= 1; i--) {
    void *blk = slab + i * class_size[cls];
    *(void **)blk = list[cls];
    list[cls] = blk;
  }
  return slab;
}
#endif

/* always inlined with a constant class: the prefetch loop unrolls into the few prefetches of that
 * class's lines */
static inline __attribute__((always_inline)) void *small_alloc(int cls) {
#ifdef MT_ASAN_BUILD
  void *q = NULL;
  return posix_memalign(&q, ALIGN, class_size[cls]) == 0 ? q : NULL;
#else
  void **list = lists();
  void *p = list[cls];
  if (__builtin_expect(p == NULL, 0)) return small_refill(cls);
  char *next = *(void **)p;
  list[cls] = next;
  if (next)
    for (unsigned m = class_lines[cls], k = 0; m; m >>= 1, k++)
      if (m & 1) __builtin_prefetch(next + 64 * k, 1, 3);
  return p;
#endif
}
static void small_free(void *p, int cls) {
#ifdef MT_ASAN_BUILD
  (void)cls;
  free(p);
#else
  void **list = lists();
  *(void **)p = list[cls];
  list[cls] = p;
#endif
}

void *mt_small_alloc(void) { return small_alloc(NODE_CLASS); }
void mt_small_free(void *p) { small_free(p, NODE_CLASS); }

/* Large blocks (a tensor's head and data together) are kept for reuse when freed, up to
 * BIG_CACHE_BYTES in all: a loop that makes tensors of the same sizes again and again then
 * touches no fresh pages (a page fault per 4 KB would cost more than the op). Looked up by exact
 * rounded size. Off under AddressSanitizer. */
#define BIG_ROUND 4096
#define BIG_CACHE_SLOTS 128
#define BIG_CACHE_BYTES ((size_t)512 << 20)
#include <pthread.h>
#ifndef MT_ASAN_BUILD
static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { void *p; size_t n; } big_cache[BIG_CACHE_SLOTS];
static int big_count;
static size_t big_bytes;
#endif

static size_t big_round(size_t n) { return (n + BIG_ROUND - 1) & ~(size_t)(BIG_ROUND - 1); }

static void *big_alloc(size_t n) {
  n = big_round(n);
#ifndef MT_ASAN_BUILD
  pthread_mutex_lock(&big_mu);
  for (int i = big_count - 1; i >= 0; i--) {
    if (big_cache[i].n == n) {
      void *p = big_cache[i].p;
      big_cache[i] = big_cache[--big_count];
      big_bytes -= n;
      pthread_mutex_unlock(&big_mu);
      return p;
    }
  }
  pthread_mutex_unlock(&big_mu);
#endif
  void *p = NULL;
  return posix_memalign(&p, ALIGN, n) == 0 ? p : NULL;
}

static void big_free(void *p, size_t n) {
  n = big_round(n);
#ifndef MT_ASAN_BUILD
  pthread_mutex_lock(&big_mu);
  if (n <= BIG_CACHE_BYTES / 4) {
    /* make room: the oldest blocks go first */
    while (big_count > 0 && (big_count == BIG_CACHE_SLOTS || big_bytes + n > BIG_CACHE_BYTES)) {
      free(big_cache[0].p);
      big_bytes -= big_cache[0].n;
      memmove(big_cache, big_cache + 1, sizeof big_cache[0] * (size_t)--big_count);
    }
    big_cache[big_count].p = p;
    big_cache[big_count].n = n;
    big_count++;
    big_bytes += n;
    pthread_mutex_unlock(&big_mu);
    return;
  }
  pthread_mutex_unlock(&big_mu);
#endif
  free(p);
}

void *mt_aligned_alloc(size_t nbytes) {
  void *p = NULL;
  if (posix_memalign(&p, ALIGN, nbytes ? nbytes : ALIGN) != 0) return NULL;
  return p;
}
void mt_aligned_free(void *p) { free(p); }

void mt_compute_strides(const int64_t *sizes, int ndim, int64_t *strides) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    s *= sizes[i] > 1 ? sizes[i] : 1;
  }
}

static bool compute_contiguous(const mt_tensor *t) {
  int64_t expected = 1;
  for (int i = t->_ndim - 1; i >= 0; i--) {
    if (t->_sizes[i] == 1) continue;
    if (t->_sizes[i] == 0) return true;
    if (t->_strides[i] != expected) return false;
    expected *= t->_sizes[i];
  }
  return true;
}

void mt_tensor_refresh(mt_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->_ndim; i++) n *= t->_sizes[i];
  t->_numel = n;
  char *base = t->_storage->_data; /* NULL for an empty storage (a mapped one, say): no arithmetic on it */
  t->_data = base ? base + t->_offset * (int64_t)mt_itemsize(t->_dtype) : NULL;
  if (compute_contiguous(t)) t->_flags |= MT_TENSOR_CONTIGUOUS;
  else t->_flags &= ~(uint32_t)MT_TENSOR_CONTIGUOUS;
}

int mt_tensor_is_contiguous(const mt_tensor *t) { return (t->_flags & MT_TENSOR_CONTIGUOUS) != 0; }

/* Drop one reference; true when it was the last. A count of 1 is the caller's own reference and
 * nobody else's: no other thread can add one (adding takes a reference to add from), so the last
 * one goes without an atomic read-modify-write, whose full barrier would wait for every store
 * before it (a release writes the cold blocks of dead tensors). The acquire load orders what
 * other threads did before they dropped theirs. */
static inline bool last_reference(int64_t *refcount) {
  if (__atomic_load_n(refcount, __ATOMIC_ACQUIRE) == 1) return true;
  return __atomic_sub_fetch(refcount, 1, __ATOMIC_ACQ_REL) == 0;
}

/* ---------------------------------------------------------------- devices' bytes */
static mt_device_bytes device_bytes[MT_DEVICE_TYPES][MT_MAX_DEVICES];

mt_device_bytes *mt_device_bytes_of(int type, int index) {
  if (type <= MT_CPU || type >= MT_DEVICE_TYPES || index < 0 || index >= MT_MAX_DEVICES) return NULL;
  return &device_bytes[type][index];
}

/* A device's allocations and frees, counted with atomic adds (a backend may free from its own
 * threads); an allocation past the device's limit asks Lua for a collection (mt_gc_done). */
static void device_alloc(int type, int index, size_t nbytes) {
  mt_device_bytes *b = mt_device_bytes_of(type, index);
  if (!b) return;
  int64_t live = __atomic_add_fetch(&b->live, (int64_t)nbytes, __ATOMIC_RELAXED);
  __atomic_add_fetch(&b->allocs, 1, __ATOMIC_RELAXED);
  int64_t peak = __atomic_load_n(&b->peak, __ATOMIC_RELAXED);
  while (live > peak && !__atomic_compare_exchange_n(&b->peak, &peak, live, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  int64_t limit = __atomic_load_n(&b->limit, __ATOMIC_RELAXED);
  if (live > (limit > 0 ? limit : MT_DEVICE_GC_MIN)) __atomic_store_n(&stats.device_pressure, 1, __ATOMIC_RELAXED);
}
static void device_free(int type, int index, size_t nbytes) {
  mt_device_bytes *b = mt_device_bytes_of(type, index);
  if (!b) return;
  __atomic_sub_fetch(&b->live, (int64_t)nbytes, __ATOMIC_RELAXED);
  __atomic_add_fetch(&b->frees, 1, __ATOMIC_RELAXED);
}

/* the bytes a storage holds, counted where they are: host bytes in live_bytes, a device's per device */
static void count_storage(const mt_storage *s, int sign) {
  if (s->_flags & MT_STORAGE_NO_DATA) return;
  if (s->_device_type == MT_CPU) stat_add(&stats.live_bytes, sign * (int64_t)s->_nbytes);
  else if (sign > 0) device_alloc(s->_device_type, s->_device_index, s->_nbytes);
  else device_free(s->_device_type, s->_device_index, s->_nbytes);
}

void mt_storage_release(mt_storage *s) {
  if (!last_reference(&s->_refcount)) return;
  stat_add(&stats.live_storages, -1);
  count_storage(s, -1);
  if (s->_flags & MT_STORAGE_EMBEDDED) {
    /* also frees the head that was allocated with it */
    if (s->_flags & MT_STORAGE_SMALL) small_free(s->_block, (s->_flags & MT_STORAGE_HALF) ? 0 : 1);
    else big_free(s->_block, EMBED_HEAD + s->_nbytes);
  } else if (s->_allocator) {
    s->_allocator->free(s->_allocator->ctx, s->_device_index, s->_block, s->_nbytes);
    free(s);
  } else if (s->_flags & MT_STORAGE_EXTERNAL) {
    free(s); /* memory the caller owns and frees itself */
  } else {
    free(s->_block);
    free(s);
  }
}
#define storage_release mt_storage_release

static mt_status new_block(const int64_t *sizes, int ndim, int64_t numel, int dtype, size_t item, const char *op,
                           mt_tensor **out);

/* the element count of a new tensor of these sizes and dtype, checked */
static mt_status new_size(const int64_t *sizes, int ndim, int dtype, const char *op, int64_t *numel) {
  MT_TRY(mt_check_sizes(sizes, ndim, op, numel));
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "%s: invalid dtype %d", op, dtype);
  if ((uint64_t)*numel > (UINT64_MAX >> 2) / mt_itemsize(dtype))
    return mt_error(MT_ENOMEM, "%s: size %s is too large to allocate", op, mt_shape_str(sizes, ndim));
  return MT_OK;
}

mt_status mt_new_cpu(const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **out) {
  int64_t numel;
  MT_TRY(new_size(sizes, ndim, dtype, op, &numel));
  return new_block(sizes, ndim, numel, dtype, mt_itemsize(dtype), op, out);
}

mt_status mt_new_cpu_like(const mt_tensor *t, int dtype, const char *op, mt_tensor **out) {
  size_t item = dtype == MT_FLOAT32 ? 4 : dtype == MT_FLOAT64 ? 8 : mt_itemsize(dtype);
  return new_block(t->_sizes, t->_ndim, t->_numel, dtype, item, op, out);
}

static mt_status new_block(const int64_t *sizes, int ndim, int64_t numel, int dtype, size_t item, const char *op,
                           mt_tensor **out) {
  size_t nbytes = (size_t)numel * item;
  size_t head = EMBED_HEAD;
  char *block = NULL;
  bool small = head + nbytes <= SMALL_BLOCK;
  bool half = head + nbytes <= SMALL_BLOCK / 2;
  if (small) block = half ? small_alloc(0) : small_alloc(1);
  else block = big_alloc(head + nbytes);
  if (!block)
    return mt_error(MT_ENOMEM, "%s: out of memory allocating %zu bytes for a tensor of size %s", op, nbytes,
                    mt_shape_str(sizes, ndim));
  mt_tensor *t = (mt_tensor *)block;
  mt_storage *s = (mt_storage *)(block + sizeof(mt_tensor));
  s->_refcount = 1;
  s->_data = block + head;
  s->_nbytes = nbytes;
  s->_device_type = MT_CPU;
  s->_device_index = 0;
  s->_version = 0;
  s->_flags = MT_STORAGE_EMBEDDED | (small ? MT_STORAGE_SMALL : 0) | (half ? MT_STORAGE_HALF : 0);
  s->_pad = 0;
  s->_allocator = NULL;
  s->_block = block;
  t->_refcount = 1;
  t->_storage = s;
  t->_data = s->_data;
  t->_offset = 0;
  t->_numel = numel;
  t->_dtype = dtype;
  t->_ndim = ndim;
  t->_device_type = MT_CPU;
  t->_device_index = 0;
  t->_flags = MT_TENSOR_CONTIGUOUS | MT_TENSOR_EMBEDDED_HEAD;
  t->_pad = 0;
  t->_autograd = NULL;
  int64_t st = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    t->_sizes[i] = sizes[i];
    t->_strides[i] = st;
    st *= sizes[i] > 1 ? sizes[i] : 1;
  }
  if (mt_pool_busy()) {
    stat_add(&stats.live_tensors, 1);
    stat_add(&stats.live_storages, 1);
    stat_add(&stats.live_bytes, (int64_t)nbytes);
    stat_add(&stats.bytes_since_gc, (int64_t)(nbytes + head));
  } else { /* the usual case, tested once for the four */
    stats.live_tensors++;
    stats.live_storages++;
    stats.live_bytes += (int64_t)nbytes;
    stats.bytes_since_gc += (int64_t)(nbytes + head);
  }
  *out = t;
  return MT_OK;
}

mt_status mt_new_view(mt_tensor *base, const int64_t *sizes, const int64_t *strides, int ndim, int64_t offset,
                      mt_tensor **out) {
  _Static_assert(sizeof(mt_tensor) <= SMALL_BLOCK / 2, "a view head fits a small block");
  mt_tensor *t = small_alloc(0);
  if (!t) return mt_error(MT_ENOMEM, "view: out of memory for a tensor head");
  t->_refcount = 1;
  t->_storage = base->_storage;
  __atomic_add_fetch(&base->_storage->_refcount, 1, __ATOMIC_RELAXED);
  t->_offset = offset;
  t->_dtype = base->_dtype;
  t->_ndim = ndim;
  t->_device_type = base->_device_type;
  t->_device_index = base->_device_index;
  t->_flags = 0;
  t->_pad = 0;
  t->_autograd = NULL;
  for (int i = 0; i < ndim; i++) {
    t->_sizes[i] = sizes[i];
    t->_strides[i] = strides[i];
  }
  mt_tensor_refresh(t);
  stat_add(&stats.live_tensors, 1);
  *out = t;
  return MT_OK;
}

/* an allocator that returns NULL may have said why (a device's allocator: "CUDA out of memory. Tried
 * to allocate ..."): its message, after the op's name; else ours */
static mt_status out_of_memory(const char *op, size_t nbytes, const int64_t *sizes, int ndim) {
  const char *why = mt_last_error();
  if (why && *why) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", why);
    return mt_error(MT_ENOMEM, "%s: %s", op, msg);
  }
  return mt_error(MT_ENOMEM, "%s: out of memory allocating %zu bytes for a tensor of size %s", op, nbytes,
                  mt_shape_str(sizes, ndim));
}

mt_status mt_new_with(const mt_allocator *memory, int device_type, int device_index, const int64_t *sizes, int ndim,
                      int dtype, const char *op, mt_tensor **out) {
  int64_t numel;
  MT_TRY(new_size(sizes, ndim, dtype, op, &numel));
  size_t nbytes = (size_t)numel * mt_itemsize(dtype);
  mt_storage *s = malloc(sizeof(mt_storage));
  if (!s) return mt_error(MT_ENOMEM, "%s: out of memory for a storage", op);
  memset(s, 0, sizeof *s);
  if (memory->alloc && nbytes) {
    mt_clear_error();
    s->_block = memory->alloc(memory->ctx, device_index, nbytes);
    if (!s->_block) {
      free(s);
      return out_of_memory(op, nbytes, sizes, ndim);
    }
  }
  s->_refcount = 1;
  s->_data = s->_block;
  s->_nbytes = nbytes;
  s->_device_type = device_type;
  s->_device_index = device_index;
  s->_allocator = memory;
  if (!memory->alloc) s->_flags |= MT_STORAGE_NO_DATA;
  stat_add(&stats.live_storages, 1);
  count_storage(s, 1);
  int64_t strides[MT_MAX_DIMS];
  mt_compute_strides(sizes, ndim, strides);
  mt_tensor base = {0};
  base._storage = s;
  base._dtype = dtype;
  base._device_type = device_type;
  base._device_index = device_index;
  mt_status st = mt_new_view(&base, sizes, strides, ndim, 0, out);
  storage_release(s); /* the new head holds its own reference */
  if (st == MT_OK) (*out)->_flags |= MT_TENSOR_CONTIGUOUS;
  return st;
}

typedef struct ext {
  mt_allocator a;
  void (*deleter)(void *, void *);
  void *ctx;
} ext;
static void ext_free(void *ctx, int device, void *ptr, size_t nbytes) {
  (void)device;
  (void)nbytes;
  ext *e = ctx;
  e->deleter(e->ctx, ptr);
  free(e);
}

mt_status mt_tensor_from_blob(void *data, const int64_t *sizes, const int64_t *strides, int ndim, int dtype,
                              void (*deleter)(void *ctx, void *data), void *ctx, mt_tensor **out) {
  int64_t numel;
  MT_TRY(mt_check_sizes(sizes, ndim, "from_blob", &numel));
  if (!mt_dtype_valid(dtype)) return mt_error(MT_EDTYPE, "from_blob: invalid dtype %d", dtype);
  if (!data && numel > 0) return mt_error(MT_EINVAL, "from_blob: data is NULL");
  int64_t st[MT_MAX_DIMS];
  if (!strides) { mt_compute_strides(sizes, ndim, st); strides = st; }
  int64_t span = 1;
  for (int i = 0; i < ndim; i++) {
    if (strides[i] < 0) return mt_error(MT_EINVAL, "from_blob: negative stride %lld", (long long)strides[i]);
    if (sizes[i] > 0) span += (sizes[i] - 1) * strides[i];
  }
  if (numel == 0) span = 0;
  mt_storage *s = malloc(sizeof(mt_storage));
  if (!s) return mt_error(MT_ENOMEM, "from_blob: out of memory");
  memset(s, 0, sizeof *s);
  s->_refcount = 1;
  s->_data = data;
  s->_nbytes = (size_t)span * mt_itemsize(dtype);
  s->_flags = MT_STORAGE_EXTERNAL;
  s->_block = NULL;
  if (deleter) {
    ext *e = malloc(sizeof(ext));
    if (!e) { free(s); return mt_error(MT_ENOMEM, "from_blob: out of memory"); }
    e->deleter = deleter;
    e->ctx = ctx;
    e->a.alloc = NULL;
    e->a.ctx = e;
    e->a.free = ext_free;
    s->_allocator = &e->a;
    s->_block = data;
  }
  stat_add(&stats.live_storages, 1);
  stat_add(&stats.live_bytes, (int64_t)s->_nbytes);
  mt_tensor base = {0};
  base._storage = s;
  base._dtype = dtype;
  mt_status st2 = mt_new_view(&base, sizes, strides, ndim, 0, out);
  storage_release(s); /* the view holds its own reference */
  return st2;
}

mt_tensor *mt_tensor_retain(mt_tensor *t) {
  if (t) __atomic_add_fetch(&t->_refcount, 1, __ATOMIC_RELAXED);
  return t;
}

void (*mt_autograd_release)(mt_tensor *t);

/* The storage whose block holds an embedded head (it may no longer be the tensor's storage
 * after an out= resize: the head keeps its home block alive). */
static inline mt_storage *home_storage(mt_tensor *t) { return (mt_storage *)((char *)t + sizeof(mt_tensor)); }

void mt_tensor_release(mt_tensor *t) {
  if (!t) return;
  if (!last_reference(&t->_refcount)) return;
  if (t->_autograd) mt_autograd_release(t);
  stat_add(&stats.live_tensors, -1);
  mt_storage *s = t->_storage;
  if (t->_flags & MT_TENSOR_EMBEDDED_HEAD) {
    mt_storage *home = home_storage(t);
    if (s != home) storage_release(s);
    storage_release(home); /* frees the block with the head in it */
  } else {
    small_free(t, 0); /* view heads come from the small-block list */
    storage_release(s);
  }
}

/* What releasing t reads: its head, and for a head embedded in its block the storage and the
 * autograd metadata beside it (harmless addresses inside a view head's block otherwise). */
static inline void release_prefetch_head(const mt_tensor *t) {
  const char *c = (const char *)t;
  __builtin_prefetch(c, 1, 3);
  __builtin_prefetch(c + 64, 0, 3);
  __builtin_prefetch(c + sizeof(mt_tensor), 1, 3);
  __builtin_prefetch(c + MT_EMBEDDED_META_OFFSET, 1, 3);
}
/* ... then (once the head is in cache) a view's storage and the node the tensor keeps alive */
static inline void release_prefetch_deps(const mt_tensor *t) {
  if (!(t->_flags & MT_TENSOR_EMBEDDED_HEAD)) __builtin_prefetch(t->_storage, 1, 3);
  void *const *m = t->_autograd; /* its first word: what releasing it reaches next (mt_internal.h) */
  if (m && *m) {
    __builtin_prefetch(*m, 1, 3);
    __builtin_prefetch((const char *)*m + 64, 0, 3);
  }
}

void mt_tensor_release_many(mt_tensor **ts, int64_t n) {
  /* a software pipeline: the memory of the tensors a few places ahead is fetched while this one
   * is released, so that their cache misses overlap instead of following one another */
  enum { AHEAD_HEAD = 8, AHEAD_DEPS = 4 };
  for (int64_t i = 0; i < n && i < AHEAD_HEAD; i++) release_prefetch_head(ts[i]);
  for (int64_t i = 0; i < n && i < AHEAD_DEPS; i++) release_prefetch_deps(ts[i]);
  for (int64_t i = 0; i < n; i++) {
    if (i + AHEAD_HEAD < n) release_prefetch_head(ts[i + AHEAD_HEAD]);
    if (i + AHEAD_DEPS < n) release_prefetch_deps(ts[i + AHEAD_DEPS]);
    mt_tensor_release(ts[i]);
  }
}

mt_status mt_tensor_alias(mt_tensor *t, mt_tensor **out) {
  MT_TRY(mt_check_tensor(t, "alias", "input"));
  return mt_new_view(t, t->_sizes, t->_strides, t->_ndim, t->_offset, out);
}

void mt_tensor_take_data(mt_tensor *t, const mt_tensor *src) {
  if (t == src) return;
  mt_storage *old = t->_storage, *s = src->_storage;
  __atomic_add_fetch(&s->_refcount, 1, __ATOMIC_RELAXED);
  t->_storage = s;
  t->_data = src->_data;
  t->_offset = src->_offset;
  t->_numel = src->_numel;
  t->_dtype = src->_dtype;
  t->_ndim = src->_ndim;
  t->_device_type = src->_device_type;
  t->_device_index = src->_device_index;
  memcpy(t->_sizes, src->_sizes, sizeof t->_sizes);
  memcpy(t->_strides, src->_strides, sizeof t->_strides);
  t->_flags = (t->_flags & ~(uint32_t)MT_TENSOR_CONTIGUOUS) | (src->_flags & MT_TENSOR_CONTIGUOUS);
  /* an embedded head lives in its home block: that reference goes when the head goes */
  if (!((t->_flags & MT_TENSOR_EMBEDDED_HEAD) && old == home_storage(t))) storage_release(old);
}

bool mt_may_overlap(const mt_tensor *a, const mt_tensor *b) {
  if (a->_storage != b->_storage) return false;
  if (a->_numel == 0 || b->_numel == 0) return false;
  size_t ia = mt_itemsize(a->_dtype), ib = mt_itemsize(b->_dtype);
  int64_t a0 = a->_offset * ia, a1 = a0, b0 = b->_offset * ib, b1 = b0;
  for (int i = 0; i < a->_ndim; i++) a1 += (a->_sizes[i] - 1) * a->_strides[i] * (int64_t)ia;
  for (int i = 0; i < b->_ndim; i++) b1 += (b->_sizes[i] - 1) * b->_strides[i] * (int64_t)ib;
  a1 += ia;
  b1 += ib;
  return a0 < b1 && b0 < a1;
}

mt_status mt_resize_out(mt_tensor *t, const int64_t *sizes, int ndim, const char *op, mt_storage **old_out) {
  *old_out = NULL;
  int64_t numel;
  MT_TRY(mt_check_sizes(sizes, ndim, op, &numel));
  size_t need = (size_t)numel * mt_itemsize(t->_dtype) + (size_t)t->_offset * mt_itemsize(t->_dtype);
  if (need > t->_storage->_nbytes) {
    /* a storage on the old one's device: the core's CPU memory, or its device's allocator */
    const mt_storage *o = t->_storage;
    const mt_allocator *memory = o->_device_type == MT_CPU ? NULL : o->_allocator;
    bool data = !memory || memory->alloc;
    mt_storage *s = malloc(sizeof(mt_storage));
    mt_clear_error();
    char *d = !data ? NULL : memory ? memory->alloc(memory->ctx, o->_device_index, need) : mt_aligned_alloc(need);
    if (!s || (data && !d)) {
      free(s);
      if (d) memory ? memory->free(memory->ctx, o->_device_index, d, need) : free(d);
      if (*mt_last_error()) return out_of_memory(op, need, sizes, ndim);
      return mt_error(MT_ENOMEM, "%s: out of memory resizing out to %s", op, mt_shape_str(sizes, ndim));
    }
    memset(s, 0, sizeof *s);
    s->_refcount = 1;
    s->_data = d;
    s->_block = d;
    s->_nbytes = need;
    s->_version = o->_version;
    s->_device_type = o->_device_type;
    s->_device_index = o->_device_index;
    s->_allocator = memory;
    if (!data) s->_flags |= MT_STORAGE_NO_DATA;
    stat_add(&stats.live_storages, 1);
    count_storage(s, 1);
    mt_storage *old = t->_storage;
    t->_storage = s;
    /* the caller keeps the old bytes and drops this reference; an embedded head lives in its home
     * block, which keeps its own */
    if ((t->_flags & MT_TENSOR_EMBEDDED_HEAD) && old == home_storage(t))
      __atomic_add_fetch(&old->_refcount, 1, __ATOMIC_RELAXED);
    *old_out = old;
  }
  t->_ndim = ndim;
  for (int i = 0; i < ndim; i++) t->_sizes[i] = sizes[i];
  mt_compute_strides(sizes, ndim, t->_strides);
  mt_tensor_refresh(t);
  return MT_OK;
}
