/* alloc.h -- storages and tensor heads (alloc.c): allocation, views, out= results. It knows nothing
 * of kernels, backends or autograd: memory on a device other than the CPU comes from the allocator
 * its caller hands it. Internal to the core. */
#ifndef MT_ALLOC_H
#define MT_ALLOC_H

#include "dtype.h"

/* ---------------------------------------------------------------- allocation */
void *mt_aligned_alloc(size_t nbytes);
/* Tensor blocks of up to MT_SMALL_BLOCK bytes come from per-thread free lists (alloc.c); so do
 * graph nodes, blocks of MT_NODE_BLOCK bytes (mt_small_alloc). */
#define MT_SMALL_BLOCK 1024
#define MT_NODE_BLOCK 640
void *mt_small_alloc(void);
void mt_small_free(void *p);
/* An embedded tensor head's block also holds its autograd metadata (core/grad's mt_meta, at most
 * MT_META_BYTES), right after the storage. */
#define MT_META_BYTES 48
#define MT_EMBEDDED_META_OFFSET (sizeof(mt_tensor) + sizeof(mt_storage))
#define MT_TENSOR_EMBEDDED_HEAD 0x80000000u
void mt_aligned_free(void *p);
/* What releasing a tensor head does with its autograd metadata (t->_autograd): installed by the
 * autograd layer (core/grad), which alone knows what the metadata is. Its first word points at
 * what that release reaches next (a graph node, or NULL): mt_tensor_release_many fetches it ahead. */
extern void (*mt_autograd_release)(mt_tensor *t);
/* t takes src's storage and geometry (dtype, device, sizes, strides, offset), keeping its own
 * head, flags and autograd metadata (mt_tensor_set_data). */
void mt_tensor_take_data(mt_tensor *t, const mt_tensor *src);
/* A new contiguous tensor in the core's CPU memory (one block: head, storage, data); contents
 * uninitialised. `op` names the caller in error messages. The dispatch layer's mt_new
 * (core/ops/device.h) makes one on any device. */
mt_status mt_new_cpu(const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **out);
/* A new contiguous CPU tensor of t's sizes (checked when t was made) and `dtype`, whose itemsize
 * is at most t's (so that the size cannot overflow). */
mt_status mt_new_cpu_like(const mt_tensor *t, int dtype, const char *op, mt_tensor **out);
/* A new contiguous tensor on a device whose memory comes from `memory` (alloc NULL: a device that
 * holds no data; the tensor's data pointer is then NULL). */
mt_status mt_new_with(const mt_allocator *memory, int device_type, int device_index, const int64_t *sizes, int ndim,
                      int dtype, const char *op, mt_tensor **out);
/* A new head over `t`'s storage with the given geometry. */
mt_status mt_new_view(mt_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim, int64_t offset,
                      mt_tensor **out);
void mt_compute_strides(const int64_t *sizes, int ndim, int64_t *strides);
/* Make `out` (an out= argument) a contiguous tensor of the given shape, on a new storage of its device
 * when its own is too small: then *old is the old storage, whose bytes the caller keeps (it knows
 * the device's transfers: mt_prepare_out, core/ops/device.c) before it releases it. */
mt_status mt_resize_out(mt_tensor *out, const int64_t *sizes, int ndim, const char *op, mt_storage **old);
void mt_storage_release(mt_storage *s);

/* ---------------------------------------------------------------- devices' bytes */
/* The bytes of live storages on each device other than the CPU (whose bytes are mt_stats' live_bytes),
 * devices 0 .. MT_MAX_DEVICES - 1 of each type. `limit`: the bytes past which an allocation sets
 * mt_stats' device_pressure (0: MT_DEVICE_GC_MIN); `base`: the live bytes when the limit was set. */
#define MT_MAX_DEVICES 16
#define MT_DEVICE_GC_MIN ((int64_t)16 << 20)
typedef struct mt_device_bytes {
  int64_t live, peak, allocs, frees, limit, base;
} mt_device_bytes;
mt_device_bytes *mt_device_bytes_of(int type, int index); /* NULL: the CPU, or out of range */
/* Hand `r` (a new reference) to the caller: into *result if non-NULL, else release it. */
static inline mt_status mt_give(mt_tensor *r, mt_tensor **result) {
  if (result) *result = r; else mt_tensor_release(r);
  return MT_OK;
}
static inline void mt_bump_version(mt_tensor *t) { __atomic_add_fetch(&t->_storage->_version, 1, __ATOMIC_RELAXED); }
/* Do a and b's memory overlap? (conservative: same storage and overlapping byte ranges) */
bool mt_may_overlap(const mt_tensor *a, const mt_tensor *b);

#endif
