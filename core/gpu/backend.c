/* backend.c -- the CUDA backend (core/backend.h): its kernel table (table.c), its memory (the caching
 * allocator), its devices, transfers, streams, events and synchronisation. */
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>


/* dst <- src, contiguous, of one shape and dtype, at least one of them on a CUDA device. flags:
 * MT_TO_NON_BLOCKING (the host end is pinned): queued on the device end's current stream, not waited
 * for. Otherwise a copy to the host is done when this returns, and a fault of the work before it is
 * this copy's error. */
static mt_status cuda_transfer(mt_tensor *dst, const mt_tensor *src, int flags) {
  size_t n = (size_t)dst->_numel * mt_itemsize(dst->_dtype);
  if (n == 0) return MT_OK;
  if (src->_device_type == MT_CUDA && dst->_device_type == MT_CUDA) {
    if (src->_device_index != dst->_device_index) /* the source's work first */
      MT_TRY(mt_gpu_synchronize(src->_device_index));
    void *s = mt_gpu_stream_of(dst);
    MT_GPU_TRY(mt_gpu_rt->memcpy_async(dst->_data, src->_data, n, MT_GPU_D2D, s), "to");
    return MT_OK;
  }
  if (dst->_device_type == MT_CUDA) { /* from pageable host memory: its bytes are taken before this returns */
    void *s = mt_gpu_stream_of(dst);
    MT_GPU_TRY(mt_gpu_rt->memcpy_async(dst->_data, src->_data, n, MT_GPU_H2D, s), "to");
    return MT_OK;
  }
  void *s = mt_gpu_stream_of(src);
  MT_GPU_TRY(mt_gpu_rt->memcpy_async(dst->_data, src->_data, n, MT_GPU_D2H, s), "to");
  if (flags & MT_TO_NON_BLOCKING) return MT_OK;
  MT_GPU_TRY(mt_gpu_rt->stream_synchronize(s), "to");
  return mt_gpu_check_fault(src->_device_index, "to");
}

/* ---------------------------------------------------------------- devices */
static int cuda_device_count(void) { return mt_gpu_device_count(); }
static int cuda_current_device(void) {
  extern _Thread_local int mt_gpu_current_device;
  return mt_gpu_current_device < 0 ? 0 : mt_gpu_current_device;
}
static mt_status cuda_set_device(int index) { return mt_gpu_use(index, "set_device"); }
static const char *cuda_unavailable(void) { return mt_gpu_unavailable_reason(); }

/* ---------------------------------------------------------------- memory */
static void *cuda_alloc(void *ctx, int device, size_t nbytes) {
  (void)ctx;
  return mt_gpu_malloc(device, nbytes, mt_gpu_current_stream(device), "empty");
}
static void cuda_free(void *ctx, int device, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)device;
  (void)nbytes;
  mt_gpu_free(ptr);
}
static const mt_allocator cuda_memory = {.alloc = cuda_alloc, .free = cuda_free, .ctx = NULL};

static void *pinned_alloc(void *ctx, int device, size_t nbytes) {
  (void)ctx;
  (void)device;
  void *p = NULL;
  if (!mt_gpu_device_count() || mt_gpu_rt->host_alloc(&p, nbytes ? nbytes : 1) != 0) return NULL;
  return p;
}
static void pinned_free(void *ctx, int device, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)device;
  (void)nbytes;
  if (mt_gpu_rt) mt_gpu_rt->host_free(ptr);
}
static const mt_allocator cuda_pinned = {.alloc = pinned_alloc, .free = pinned_free, .ctx = NULL};

static mt_status cuda_memory_info(int index, mt_device_memory *out) {
  mt_gpu_memory m;
  mt_gpu_memory_stats(index, &m);
  out->reserved = m.reserved;
  out->peak_reserved = m.reserved_peak;
  out->free_bytes = out->total_bytes = -1;
  size_t fr = 0, tot = 0;
  if (mt_gpu_use(index, "memory_info") == MT_OK && mt_gpu_rt->mem_info(&fr, &tot) == 0) {
    out->free_bytes = (int64_t)fr;
    out->total_bytes = (int64_t)tot;
  } else {
    mt_clear_error();
  }
  return MT_OK;
}

static int cuda_describe(char *buf, size_t n) {
  int count = mt_gpu_device_count();
#ifdef MT_HAVE_CUDA
  const char *built = "built for " MT_CUDA_ARCHS " (toolkit " MT_CUDA_VERSION "), and its CPU emulator";
#else
  const char *built = "the CPU emulator of a CUDA device (built without the CUDA toolkit)";
#endif
  if (!count) return snprintf(buf, n, "%s; no device: %s", built, mt_gpu_unavailable_reason());
  mt_gpu_props p;
  if (mt_gpu_rt->properties(0, &p) != 0) snprintf(p.name, sizeof p.name, "?");
  return snprintf(buf, n, "%s; %s runtime, %d device%s: %s (sm_%d%d, %d SMs, %.1f GiB)", built, mt_gpu_rt->name, count,
                  count == 1 ? "" : "s", p.name, p.major, p.minor, p.multiprocessors,
                  (double)p.total_memory / (1 << 30));
}

/* ---------------------------------------------------------------- streams and events */
static mt_status cuda_stream_new(int index, int priority, void **out) {
  MT_TRY(mt_gpu_use(index, "Stream"));
  MT_GPU_TRY(mt_gpu_rt->stream_create(out, priority), "Stream");
  return MT_OK;
}
static void cuda_stream_free(int index, void *stream) {
  if (mt_gpu_current_stream(index) == stream) mt_gpu_set_current_stream(index, NULL);
  if (mt_gpu_use(index, "Stream") == MT_OK) mt_gpu_rt->stream_destroy(stream);
  else mt_clear_error();
}
static void *cuda_current_stream(int index) { return mt_gpu_current_stream(index); }
static mt_status cuda_set_stream(int index, void *stream) {
  mt_gpu_set_current_stream(index, stream);
  return MT_OK;
}
static mt_status cuda_synchronize(int index, void *stream) {
  if (!stream) return mt_gpu_synchronize(index);
  MT_TRY(mt_gpu_use(index, "synchronize"));
  MT_GPU_TRY(mt_gpu_rt->stream_synchronize(stream), "synchronize");
  return mt_gpu_check_fault(index, "synchronize");
}
static int cuda_stream_query(int index, void *stream) {
  if (mt_gpu_use(index, "query") != MT_OK) {
    mt_clear_error();
    return 1;
  }
  return mt_gpu_rt->stream_query(stream) == 0;
}
static void cuda_record_stream(int index, void *data, void *stream) {
  (void)index;
  if (mt_gpu_record_stream(data, stream) != MT_OK) mt_clear_error();
}
static mt_status cuda_event_new(int index, int flags, void **out) {
  MT_TRY(mt_gpu_use(index, "Event"));
  MT_GPU_TRY(mt_gpu_rt->event_create(out, (flags & MT_EVENT_TIMING) != 0), "Event");
  return MT_OK;
}
static void cuda_event_free(int index, void *event) {
  (void)index;
  if (mt_gpu_rt) mt_gpu_rt->event_destroy(event);
}
static mt_status cuda_event_record(int index, void *event, void *stream) {
  MT_TRY(mt_gpu_use(index, "Event.record"));
  MT_GPU_TRY(mt_gpu_rt->event_record(event, stream), "Event.record");
  return MT_OK;
}
static mt_status cuda_event_wait(int index, void *event, void *stream) {
  MT_TRY(mt_gpu_use(index, "Event.wait"));
  MT_GPU_TRY(mt_gpu_rt->stream_wait_event(stream, event), "Event.wait");
  return MT_OK;
}
static mt_status cuda_event_synchronize(int index, void *event) {
  MT_TRY(mt_gpu_use(index, "Event.synchronize"));
  MT_GPU_TRY(mt_gpu_rt->event_synchronize(event), "Event.synchronize");
  return mt_gpu_check_fault(index, "Event.synchronize");
}
static int cuda_event_query(int index, void *event) {
  (void)index;
  return mt_gpu_rt->event_query(event) == 0;
}
static mt_status cuda_event_elapsed(int index, void *start, void *end, double *ms) {
  (void)index;
  float f = 0;
  int code = mt_gpu_rt->event_elapsed_ms(&f, start, end);
  if (code == mt_gpu_rt->not_ready)
    return mt_error(MT_ESTATE, "Event.elapsed_time: an event has not been reached yet (synchronize first)");
  if (code) return mt_error(MT_EINVAL, "Event.elapsed_time: both events must be recorded, with enable_timing=true");
  *ms = f;
  return MT_OK;
}

const mt_backend mt_cuda_backend = {
    .name = "cuda",
    .type = MT_CUDA,
    .kernels = &mt_cuda_kernels,
    .memory = &cuda_memory,
    .holds_data = true,
    .device_count = cuda_device_count,
    .current_device = cuda_current_device,
    .set_device = cuda_set_device,
    .unavailable = cuda_unavailable,
    .transfer = cuda_transfer,
    .pinned = &cuda_pinned,
    .stream_new = cuda_stream_new,
    .stream_free = cuda_stream_free,
    .current_stream = cuda_current_stream,
    .set_stream = cuda_set_stream,
    .synchronize = cuda_synchronize,
    .stream_query = cuda_stream_query,
    .record_stream = cuda_record_stream,
    .event_new = cuda_event_new,
    .event_free = cuda_event_free,
    .event_record = cuda_event_record,
    .event_wait = cuda_event_wait,
    .event_synchronize = cuda_event_synchronize,
    .event_query = cuda_event_query,
    .event_elapsed = cuda_event_elapsed,
    .rng = &mt_cuda_rng, /* PyTorch's CUDA generator, Philox4x32-10 (random.c) */
    .memory_info = cuda_memory_info,
    .empty_cache = mt_gpu_empty_cache,
    .reset_peak = mt_gpu_reset_peak,
    .describe = cuda_describe,
    .supports = NULL,
};

/* The backend the registry installs (core/backend.h): this one where nvcc built it (a machine without a
 * driver or a GPU then has 0 devices, and says why), or on the CPU emulator when MOONTORCH_CUDA_EMULATE
 * asks for it (in any build); none otherwise ("moontorch was built without CUDA"). */
const mt_backend *mt_cuda_backend_select(void) {
  const char *e = getenv("MOONTORCH_CUDA_EMULATE");
  if (e && *e && strcmp(e, "0") != 0) return &mt_cuda_backend;
#ifdef MT_HAVE_CUDA
  return &mt_cuda_backend;
#else
  return NULL;
#endif
}
