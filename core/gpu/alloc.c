/* alloc.c -- the CUDA backend's caching allocator (PyTorch's design, our code): device memory taken from
 * the runtime in segments and handed out in blocks that are kept for reuse when freed.
 *
 * - Sizes are rounded up to 512 bytes. Requests up to 1 MiB come from the small pool, whose segments
 *   are 2 MiB; larger ones from the large pool: a 20 MiB segment for requests under 10 MiB, else a
 *   segment of the request rounded up to 2 MiB.
 * - Free blocks sit in size-class bins (one per power of two) of their pool; an allocation takes the
 *   smallest free block of its stream that fits, splitting it when the rest is worth keeping (512
 *   bytes in the small pool, over 1 MiB in the large one). A freed block merges with free neighbours
 *   of its segment.
 * - Streams: a block belongs to the stream it was allocated on; work queued on that stream runs in
 *   order, so the block can be reused at once on it. A block another stream used (record_stream)
 *   waits, when freed, for events recorded on each of those streams before it is reused.
 * - When the runtime has no memory left, the segments no block uses are returned to it (after the
 *   pending events are waited for) and the allocation is tried once more; then it is an out-of-memory
 *   error saying what is allocated and reserved.
 * - Statistics per device: bytes allocated and reserved with their peaks, blocks, segments, retries
 *   and out-of-memory errors. */
#include "gpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUND 512
#define SMALL_SIZE ((size_t)1 << 20)
#define SMALL_SEGMENT ((size_t)2 << 20)
#define LARGE_SEGMENT ((size_t)20 << 20)
#define MIN_LARGE_ALLOC ((size_t)10 << 20)
#define ROUND_LARGE ((size_t)2 << 20)
#define NBINS 64

typedef struct block block;
struct block {
  char *ptr;
  size_t size;
  void *stream;
  int device;
  bool allocated, small;
  block *prev, *next;         /* address-order neighbours in the segment */
  block *bin_prev, *bin_next; /* the free list of its bin */
  block *hash_next;           /* the allocated blocks' table */
  void **uses;                /* other streams that used it (record_stream) */
  int nuses, cap_uses;
  void **events;              /* pending events after a free with uses */
  int nevents;
  block *pending_next;
};

typedef struct pool {
  block *bins[NBINS];
} pool;

typedef struct segment_span {
  uintptr_t lo, hi;
} segment_span;

typedef struct device_alloc {
  pthread_mutex_t mu;
  pool small, large;
  segment_span *spans; /* the segments' address ranges (mt_gpu_device_of) */
  int nspans, cap_spans;
  block *pending; /* freed blocks waiting for their events */
  mt_gpu_memory stats;
} device_alloc;

static device_alloc devices[MT_GPU_MAX_DEVICES];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_devices(void) {
  for (int i = 0; i < MT_GPU_MAX_DEVICES; i++) pthread_mutex_init(&devices[i].mu, NULL);
}

/* the allocated blocks, by pointer */
#define HASH_BITS 12
static block *table[1 << HASH_BITS];
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned hash_ptr(const void *p) { return (unsigned)(((uintptr_t)p >> 9) * 0x9E3779B1u) >> (32 - HASH_BITS); }
static void table_put(block *b) {
  pthread_mutex_lock(&table_mu);
  unsigned h = hash_ptr(b->ptr);
  b->hash_next = table[h];
  table[h] = b;
  pthread_mutex_unlock(&table_mu);
}
static block *table_take(const void *p, bool remove) {
  pthread_mutex_lock(&table_mu);
  unsigned h = hash_ptr(p);
  block **link = &table[h], *b;
  while ((b = *link) && b->ptr != p) link = &b->hash_next;
  if (b && remove) *link = b->hash_next;
  pthread_mutex_unlock(&table_mu);
  return b;
}

static size_t round_size(size_t n) { return n < ROUND ? ROUND : (n + ROUND - 1) / ROUND * ROUND; }
static int bin_of(size_t n) { return 63 - __builtin_clzll((unsigned long long)n); }
static pool *pool_of(device_alloc *d, bool small) { return small ? &d->small : &d->large; }

static void bin_insert(pool *p, block *b) {
  int i = bin_of(b->size);
  b->bin_prev = NULL;
  b->bin_next = p->bins[i];
  if (p->bins[i]) p->bins[i]->bin_prev = b;
  p->bins[i] = b;
}
static void bin_remove(pool *p, block *b) {
  int i = bin_of(b->size);
  if (b->bin_prev) b->bin_prev->bin_next = b->bin_next;
  else p->bins[i] = b->bin_next;
  if (b->bin_next) b->bin_next->bin_prev = b->bin_prev;
  b->bin_prev = b->bin_next = NULL;
}

/* the smallest free block of `stream` with at least `size` bytes */
static block *find_free(pool *p, size_t size, void *stream) {
  for (int i = bin_of(size); i < NBINS; i++) {
    block *best = NULL;
    for (block *b = p->bins[i]; b; b = b->bin_next)
      if (b->stream == stream && b->size >= size && (!best || b->size < best->size)) best = b;
    if (best) return best;
  }
  return NULL;
}

/* a block back into its pool's bins, merged with its free neighbours */
static void release_block(device_alloc *d, block *b) {
  pool *p = pool_of(d, b->small);
  b->allocated = false;
  block *n = b->next;
  if (n && !n->allocated && !n->nevents) {
    bin_remove(p, n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    free(n->uses);
    free(n);
  }
  block *q = b->prev;
  if (q && !q->allocated && !q->nevents) {
    bin_remove(p, q);
    q->size += b->size;
    q->next = b->next;
    if (b->next) b->next->prev = q;
    free(b->uses);
    free(b);
    b = q;
  }
  bin_insert(p, b);
}

/* blocks whose events have all passed go back to their bins; `wait`: wait for them first */
static void process_events(device_alloc *d, bool wait) {
  block **link = &d->pending, *b;
  while ((b = *link)) {
    bool done = true;
    for (int i = 0; i < b->nevents && done; i++) {
      if (wait) mt_gpu_rt->event_synchronize(b->events[i]);
      else if (mt_gpu_rt->event_query(b->events[i]) != 0) done = false;
    }
    if (!done) {
      link = &b->pending_next;
      continue;
    }
    *link = b->pending_next;
    for (int i = 0; i < b->nevents; i++) mt_gpu_rt->event_destroy(b->events[i]);
    free(b->events);
    b->events = NULL;
    b->nevents = 0;
    b->nuses = 0;
    release_block(d, b);
  }
}

/* the free segments (one block, unused) go back to the runtime */
static void free_cached(device_alloc *d) {
  process_events(d, true);
  for (int small = 0; small < 2; small++) {
    pool *p = pool_of(d, small);
    for (int i = 0; i < NBINS; i++) {
      block *b = p->bins[i];
      while (b) {
        block *next = b->bin_next;
        if (!b->prev && !b->next) {
          bin_remove(p, b);
          for (int k = 0; k < d->nspans; k++)
            if (d->spans[k].lo == (uintptr_t)b->ptr) {
              d->spans[k] = d->spans[--d->nspans];
              break;
            }
          mt_gpu_rt->free(b->ptr);
          d->stats.reserved -= (int64_t)b->size;
          d->stats.segments--;
          free(b->uses);
          free(b);
        }
        b = next;
      }
    }
  }
}

static void fmt_bytes(char *buf, size_t n, double v) {
  if (v >= 1 << 30) snprintf(buf, n, "%.2f GiB", v / (1 << 30));
  else if (v >= 1 << 20) snprintf(buf, n, "%.2f MiB", v / (1 << 20));
  else snprintf(buf, n, "%.2f KiB", v / (1 << 10));
}

void *mt_gpu_malloc(int index, size_t nbytes, void *stream, const char *op) {
  pthread_once(&init_once, init_devices);
  if (mt_gpu_use(index, op) != MT_OK) return NULL;
  device_alloc *d = &devices[index];
  size_t size = round_size(nbytes);
  bool small = size <= SMALL_SIZE;
  pthread_mutex_lock(&d->mu);
  if (d->pending) process_events(d, false);
  pool *p = pool_of(d, small);
  block *b = find_free(p, size, stream);
  if (b) {
    bin_remove(p, b);
    d->stats.cache_hits++;
  } else {
    size_t seg = small ? SMALL_SEGMENT : size < MIN_LARGE_ALLOC ? LARGE_SEGMENT : (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
    void *mem = NULL;
    int code = mt_gpu_rt->malloc(&mem, seg);
    if (code != 0) {
      mt_gpu_rt->last_error(); /* the failed allocation is no error of later work */
      d->stats.retries++;
      free_cached(d);
      code = mt_gpu_rt->malloc(&mem, seg);
    }
    b = code == 0 ? calloc(1, sizeof(block)) : NULL;
    if (!b) {
      if (code == 0) mt_gpu_rt->free(mem);
      else mt_gpu_rt->last_error();
      d->stats.ooms++;
      size_t freeb = 0, total = 0;
      mt_gpu_rt->mem_info(&freeb, &total);
      char want[32], tot[32], fr[32], al[32], rs[32];
      fmt_bytes(want, sizeof want, (double)nbytes);
      fmt_bytes(tot, sizeof tot, (double)total);
      fmt_bytes(fr, sizeof fr, (double)freeb);
      fmt_bytes(al, sizeof al, (double)d->stats.allocated);
      fmt_bytes(rs, sizeof rs, (double)d->stats.reserved);
      pthread_mutex_unlock(&d->mu);
      mt_error(MT_ENOMEM,
               "%s: CUDA out of memory. Tried to allocate %s (GPU %d; %s total capacity; %s already allocated; %s "
               "free; %s reserved in total by moontorch)",
               op, want, index, tot, al, fr, rs);
      return NULL;
    }
    b->ptr = mem;
    b->size = seg;
    b->stream = stream;
    b->device = index;
    b->small = small;
    if (d->nspans == d->cap_spans) {
      int cap = d->cap_spans ? 2 * d->cap_spans : 16;
      segment_span *sp = realloc(d->spans, sizeof *sp * (size_t)cap);
      if (sp) {
        d->spans = sp;
        d->cap_spans = cap;
      }
    }
    if (d->nspans < d->cap_spans) d->spans[d->nspans++] = (segment_span){(uintptr_t)mem, (uintptr_t)mem + seg};
    d->stats.reserved += (int64_t)seg;
    if (d->stats.reserved > d->stats.reserved_peak) d->stats.reserved_peak = d->stats.reserved;
    d->stats.segments++;
  }
  /* split off what is worth keeping */
  size_t rest = b->size - size;
  if ((small && rest >= ROUND) || (!small && rest > SMALL_SIZE)) {
    block *r = calloc(1, sizeof(block));
    if (r) {
      r->ptr = b->ptr + size;
      r->size = rest;
      r->stream = b->stream;
      r->device = index;
      r->small = small;
      r->prev = b;
      r->next = b->next;
      if (b->next) b->next->prev = r;
      b->next = r;
      b->size = size;
      bin_insert(p, r);
    }
  }
  b->allocated = true;
  d->stats.allocated += (int64_t)b->size;
  if (d->stats.allocated > d->stats.allocated_peak) d->stats.allocated_peak = d->stats.allocated;
  d->stats.active_blocks++;
  d->stats.allocations++;
  pthread_mutex_unlock(&d->mu);
  table_put(b);
  return b->ptr;
}

void mt_gpu_free(void *ptr) {
  if (!ptr) return;
  block *b = table_take(ptr, true);
  if (!b) return;
  device_alloc *d = &devices[b->device];
  pthread_mutex_lock(&d->mu);
  d->stats.allocated -= (int64_t)b->size;
  d->stats.active_blocks--;
  d->stats.frees++;
  if (b->nuses) {
    /* other streams used it: reusable once their work so far is done */
    b->events = calloc((size_t)b->nuses, sizeof(void *));
    int ok = b->events != NULL;
    for (int i = 0; i < b->nuses && ok; i++) {
      void *ev = NULL;
      if (mt_gpu_rt->event_create(&ev, 0) != 0 || mt_gpu_rt->event_record(ev, b->uses[i]) != 0) {
        if (ev) mt_gpu_rt->event_destroy(ev);
        ok = 0;
        break;
      }
      b->events[b->nevents++] = ev;
    }
    if (!ok) { /* no events: wait for the device instead */
      mt_gpu_rt->device_synchronize();
      for (int i = 0; i < b->nevents; i++) mt_gpu_rt->event_destroy(b->events[i]);
      free(b->events);
      b->events = NULL;
      b->nevents = 0;
      b->nuses = 0;
      release_block(d, b);
    } else {
      b->allocated = false;
      b->pending_next = d->pending;
      d->pending = b;
    }
  } else {
    release_block(d, b);
  }
  pthread_mutex_unlock(&d->mu);
}

mt_status mt_gpu_record_stream(void *ptr, void *stream) {
  block *b = table_take(ptr, false);
  if (!b) return mt_error(MT_EINVAL, "record_stream: the tensor's memory is not from the CUDA allocator");
  device_alloc *d = &devices[b->device];
  pthread_mutex_lock(&d->mu);
  mt_status s = MT_OK;
  bool known = stream == b->stream;
  for (int i = 0; i < b->nuses && !known; i++) known = b->uses[i] == stream;
  if (!known) {
    if (b->nuses == b->cap_uses) {
      int cap = b->cap_uses ? 2 * b->cap_uses : 4;
      void **u = realloc(b->uses, sizeof(void *) * (size_t)cap);
      if (!u) s = mt_error(MT_ENOMEM, "record_stream: out of memory");
      else {
        b->uses = u;
        b->cap_uses = cap;
      }
    }
    if (s == MT_OK) b->uses[b->nuses++] = stream;
  }
  pthread_mutex_unlock(&d->mu);
  return s;
}

int mt_gpu_device_of(const void *p) {
  pthread_once(&init_once, init_devices);
  uintptr_t a = (uintptr_t)p;
  for (int i = 0; i < MT_GPU_MAX_DEVICES; i++) {
    device_alloc *d = &devices[i];
    pthread_mutex_lock(&d->mu);
    for (int k = 0; k < d->nspans; k++)
      if (a >= d->spans[k].lo && a < d->spans[k].hi) {
        pthread_mutex_unlock(&d->mu);
        return i;
      }
    pthread_mutex_unlock(&d->mu);
  }
  return -1;
}

void mt_gpu_empty_cache(int index) {
  pthread_once(&init_once, init_devices);
  if (index < 0 || index >= MT_GPU_MAX_DEVICES || !mt_gpu_rt) return;
  if (mt_gpu_use(index, "empty_cache") != MT_OK) return;
  device_alloc *d = &devices[index];
  pthread_mutex_lock(&d->mu);
  free_cached(d);
  pthread_mutex_unlock(&d->mu);
}

void mt_gpu_memory_stats(int index, mt_gpu_memory *out) {
  pthread_once(&init_once, init_devices);
  memset(out, 0, sizeof *out);
  if (index < 0 || index >= MT_GPU_MAX_DEVICES) return;
  device_alloc *d = &devices[index];
  pthread_mutex_lock(&d->mu);
  *out = d->stats;
  pthread_mutex_unlock(&d->mu);
}

void mt_gpu_reset_peak(int index) {
  pthread_once(&init_once, init_devices);
  if (index < 0 || index >= MT_GPU_MAX_DEVICES) return;
  device_alloc *d = &devices[index];
  pthread_mutex_lock(&d->mu);
  d->stats.allocated_peak = d->stats.allocated;
  d->stats.reserved_peak = d->stats.reserved;
  pthread_mutex_unlock(&d->mu);
}
