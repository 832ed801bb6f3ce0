/* meta.c -- the meta device's backend (core/backend.h), PyTorch's meta device: a tensor there has
 * a shape, a dtype and strides but no data. The dispatch layer works out every result's shape,
 * dtype and strides and allocates it before it calls a kernel, so the meta device's kernels have
 * nothing left to do and return at once; its memory is none (a tensor's data pointer is NULL).
 * What depends on the values themselves cannot run here, as in PyTorch: the kernels whose
 * result's shape comes from the data (nonzero, masked_select, unique, bincount) are absent, which
 * the front doors report as MT_EDEVICE naming the op, and one_hot needs its number of classes.
 * Nothing here is CPU code: the backend plugs in beside core/tensor/ through the registry of
 * core/ops/device.c. */
#include "../backend.h"

/* every kernel: nothing to compute */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define MT_META_KERNEL_(slot, params) \
  static __attribute__((unused)) mt_status meta_##slot params { return MT_OK; }
MT_KERNEL_LIST(MT_META_KERNEL_)
#undef MT_META_KERNEL_
#pragma GCC diagnostic pop

/* no memory: the allocator has no alloc, and freeing is nothing */
static void meta_free(void *ctx, int device, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)device;
  (void)ptr;
  (void)nbytes;
}
static const mt_allocator meta_memory = {.alloc = NULL, .free = meta_free, .ctx = NULL};

/* one_hot makes its own result: of the index's shape plus the number of classes, which a meta
 * tensor cannot tell when it is not given */
static mt_status meta_one_hot_kernel(const mt_tensor *index, int64_t num_classes, int64_t base, mt_tensor **result) {
  (void)base;
  if (num_classes < 0)
    return mt_error(MT_EDEVICE, "one_hot: the number of classes of a tensor on device meta cannot be inferred "
                                "from its values: give num_classes");
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, index->_sizes, sizeof(int64_t) * (size_t)index->_ndim);
  sizes[index->_ndim] = num_classes;
  return mt_new_with(&meta_memory, MT_META, 0, sizes, index->_ndim + 1, MT_INT64, "one_hot", result);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
const mt_kernels mt_meta_kernels = {
#define MT_META_SLOT_(slot, params) .slot = meta_##slot,
    MT_KERNEL_LIST(MT_META_SLOT_)
#undef MT_META_SLOT_
    /* results whose shape is the data's */
    .nonzero = NULL,
    .masked_select = NULL,
    .unique = NULL,
    .bincount = NULL,
    .one_hot = meta_one_hot_kernel,
};
#pragma GCC diagnostic pop

const mt_backend mt_meta_backend = {
    .name = "meta",
    .type = MT_META,
    .kernels = &mt_meta_kernels,
    .memory = &meta_memory,
    .holds_data = false,
    .transfer = NULL, /* nothing to carry either way */
    .supports = NULL, /* one device, nothing queued: no device, stream or event hooks */
};
