/* backend.c -- the CUDA backend (core/backend.h): its kernel table (table.c), its memory (the caching
 * allocator), its transfers to and from the CPU and between its devices, and synchronisation. */
#include "gpu.h"


/* dst <- src, contiguous, of one shape and dtype, at least one of them on a CUDA device */
static mt_status cuda_transfer(mt_tensor *dst, const mt_tensor *src) {
  size_t n = (size_t)dst->_numel * mt_itemsize(dst->_dtype);
  if (n == 0) return MT_OK;
  if (src->_device_type == MT_CUDA && dst->_device_type == MT_CUDA) {
    void *s = mt_gpu_stream_of(dst);
    if (src->_device_index != dst->_device_index) {
      /* the source's work first: its device finishes what it queued */
      MT_TRY(mt_gpu_synchronize(src->_device_index));
      MT_TRY(mt_gpu_use(dst->_device_index, "to"));
    }
    MT_GPU_TRY(mt_gpu_rt->memcpy_async(dst->_data, src->_data, n, MT_GPU_D2D, s), "to");
    return MT_OK;
  }
  if (dst->_device_type == MT_CUDA) { /* from the host: its bytes are copied before this returns */
    void *s = mt_gpu_stream_of(dst);
    MT_GPU_TRY(mt_gpu_rt->memcpy_async(dst->_data, src->_data, n, MT_GPU_H2D, s), "to");
    return MT_OK;
  }
  /* to the host: done when this returns; a fault of the work before is this copy's error */
  void *s = mt_gpu_stream_of(src);
  MT_GPU_TRY(mt_gpu_rt->memcpy_async(dst->_data, src->_data, n, MT_GPU_D2H, s), "to");
  MT_GPU_TRY(mt_gpu_rt->stream_synchronize(s), "to");
  return mt_gpu_check_fault(src->_device_index, "to");
}

static mt_status cuda_synchronize(int index) { return mt_gpu_synchronize(index); }

static void *cuda_alloc(void *ctx, size_t nbytes) {
  (void)ctx;
  extern _Thread_local int mt_gpu_current_device;
  int index = mt_gpu_current_device < 0 ? 0 : mt_gpu_current_device;
  return mt_gpu_malloc(index, nbytes, mt_gpu_current_stream(index), "empty");
}
static void cuda_free(void *ctx, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)nbytes;
  mt_gpu_free(ptr);
}
/* until the seam passes the device index to the allocator: the thread's current device */
static const mt_allocator cuda_memory = {.alloc = cuda_alloc, .free = cuda_free, .ctx = NULL};

const mt_backend mt_cuda_backend = {
    .name = "cuda",
    .type = MT_CUDA,
    .kernels = &mt_cuda_kernels,
    .memory = &cuda_memory,
    .holds_data = true,
    .transfer = cuda_transfer,
    .synchronize = cuda_synchronize,
    .supports = NULL,
};
