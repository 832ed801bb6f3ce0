/* runtime_cuda.cu -- the runtime shim of runtime.h over NVIDIA's CUDA runtime (cudart, linked
 * statically: it finds the driver, libcuda, when first asked, so a machine without a driver or
 * without a GPU answers "no device" here and loads libmoontorch all the same). Built only where
 * nvcc is. */
#include "runtime.h"

#include <cuda_runtime.h>
#include <cstring>

namespace {

int rt_device_count(int *count, const char **why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *count = 0;
    if (why) *why = cudaGetErrorString(e);
    return (int)e;
  }
  *count = n;
  if (why) *why = nullptr;
  return 0;
}

int rt_set_device(int index) { return (int)cudaSetDevice(index); }

int rt_properties(int index, mt_gpu_props *out) {
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess) return (int)e;
  memset(out, 0, sizeof *out);
  memcpy(out->name, p.name, sizeof out->name < sizeof p.name ? sizeof out->name : sizeof p.name);
  out->name[sizeof out->name - 1] = 0;
  out->major = p.major;
  out->minor = p.minor;
  out->multiprocessors = p.multiProcessorCount;
  out->max_threads_per_block = p.maxThreadsPerBlock;
  out->warp_size = p.warpSize;
  out->shared_per_block = p.sharedMemPerBlock;
  out->total_memory = p.totalGlobalMem;
  return 0;
}

int rt_mem_info(size_t *free_bytes, size_t *total) { return (int)cudaMemGetInfo(free_bytes, total); }
int rt_malloc(void **p, size_t n) { return (int)cudaMalloc(p, n); }
int rt_free(void *p) { return (int)cudaFree(p); }
int rt_host_alloc(void **p, size_t n) { return (int)cudaHostAlloc(p, n, cudaHostAllocPortable | cudaHostAllocMapped); }
int rt_host_free(void *p) { return (int)cudaFreeHost(p); }

int rt_memcpy_async(void *dst, const void *src, size_t n, int kind, void *stream) {
  return (int)cudaMemcpyAsync(dst, src, n, (cudaMemcpyKind)kind, (cudaStream_t)stream);
}
int rt_memset_async(void *p, int value, size_t n, void *stream) {
  return (int)cudaMemsetAsync(p, value, n, (cudaStream_t)stream);
}

int rt_stream_create(void **stream, int priority) {
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority);
  *stream = s;
  return (int)e;
}
int rt_stream_destroy(void *stream) { return (int)cudaStreamDestroy((cudaStream_t)stream); }
int rt_stream_synchronize(void *stream) { return (int)cudaStreamSynchronize((cudaStream_t)stream); }
int rt_stream_query(void *stream) { return (int)cudaStreamQuery((cudaStream_t)stream); }
int rt_stream_wait_event(void *stream, void *event) {
  return (int)cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
}

int rt_event_create(void **event, int timing) {
  cudaEvent_t e = nullptr;
  cudaError_t r = cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming);
  *event = e;
  return (int)r;
}
int rt_event_destroy(void *event) { return (int)cudaEventDestroy((cudaEvent_t)event); }
int rt_event_record(void *event, void *stream) { return (int)cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream); }
int rt_event_synchronize(void *event) { return (int)cudaEventSynchronize((cudaEvent_t)event); }
int rt_event_query(void *event) { return (int)cudaEventQuery((cudaEvent_t)event); }
int rt_event_elapsed_ms(float *ms, void *a, void *b) {
  return (int)cudaEventElapsedTime(ms, (cudaEvent_t)a, (cudaEvent_t)b);
}
int rt_device_synchronize(void) { return (int)cudaDeviceSynchronize(); }
int rt_last_error(void) { return (int)cudaGetLastError(); }
const char *rt_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }

} // namespace

extern "C" {
extern const mt_gpu_runtime mt_gpu_cuda_runtime;
const mt_gpu_runtime mt_gpu_cuda_runtime = {
    "cuda",
    rt_device_count,
    rt_set_device,
    rt_properties,
    rt_mem_info,
    rt_malloc,
    rt_free,
    rt_host_alloc,
    rt_host_free,
    rt_memcpy_async,
    rt_memset_async,
    rt_stream_create,
    rt_stream_destroy,
    rt_stream_synchronize,
    rt_stream_query,
    rt_stream_wait_event,
    rt_event_create,
    rt_event_destroy,
    rt_event_record,
    rt_event_synchronize,
    rt_event_query,
    rt_event_elapsed_ms,
    rt_device_synchronize,
    rt_last_error,
    rt_error_string,
    (int)cudaErrorNotReady,
};
}
