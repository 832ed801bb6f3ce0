/* runtime.h -- the CUDA backend's runtime shim: the few things the backend asks of a CUDA runtime
 * (devices, memory, copies, streams, events), as one table of functions with two implementations:
 * runtime_cuda.cu (NVIDIA's runtime, cudart, where nvcc built it) and runtime_emu.cc (the CPU
 * emulator, always built). Everything above this table (core/gpu/ C files) is the same for both.
 *
 * Plain C, includable from C and C++ (the .cu kernels and the emulator include it): no core
 * header. Streams and events are opaque handles; the NULL stream is the current device's default
 * stream. Functions return 0 for success or the runtime's own error code, which error_string
 * describes. Not installed. */
#ifndef MT_GPU_RUNTIME_H
#define MT_GPU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_gpu_props {
  char name[256];
  int major, minor;          /* compute capability */
  int multiprocessors;       /* SMs */
  int max_threads_per_block;
  int warp_size;
  size_t shared_per_block;   /* bytes of static + dynamic shared memory a block may use */
  size_t total_memory;
} mt_gpu_props;

/* copy directions (cudaMemcpyKind's numbers) */
enum { MT_GPU_H2H = 0, MT_GPU_H2D = 1, MT_GPU_D2H = 2, MT_GPU_D2D = 3 };

typedef struct mt_gpu_runtime {
  const char *name; /* "cuda", "emulator" */
  /* the number of devices (0: no driver, no device, or a driver too old: *why says which) */
  int (*device_count)(int *count, const char **why);
  int (*set_device)(int index); /* the calling thread's current device */
  int (*properties)(int index, mt_gpu_props *out);
  int (*mem_info)(size_t *free_bytes, size_t *total_bytes); /* of the current device */
  /* device memory of the current device; free waits for the device's queued work first */
  int (*malloc)(void **p, size_t n);
  int (*free)(void *p);
  /* page-locked host memory (copies from and to it can be asynchronous) */
  int (*host_alloc)(void **p, size_t n);
  int (*host_free)(void *p);
  /* Copies and fills, queued on a stream. A copy between device memory and pageable host memory
   * returns when the host side is done with (as cudaMemcpyAsync does for pageable memory: the
   * host buffer may be reused at once); with page-locked host memory it is asynchronous. */
  int (*memcpy_async)(void *dst, const void *src, size_t n, int kind, void *stream);
  int (*memset_async)(void *p, int value, size_t n, void *stream);
  /* streams: created non-blocking (no implicit ordering with the default stream, as PyTorch's) */
  int (*stream_create)(void **stream, int priority);
  int (*stream_destroy)(void *stream);
  int (*stream_synchronize)(void *stream);
  int (*stream_query)(void *stream); /* 0: all its work done; not_ready: work pending */
  int (*stream_wait_event)(void *stream, void *event);
  /* events: `timing` != 0 records times (elapsed_ms) */
  int (*event_create)(void **event, int timing);
  int (*event_destroy)(void *event);
  int (*event_record)(void *event, void *stream);
  int (*event_synchronize)(void *event);
  int (*event_query)(void *event); /* 0: reached; not_ready: not yet */
  int (*event_elapsed_ms)(float *ms, void *start, void *end);
  int (*device_synchronize)(void);
  /* the error of the last launch (or of the work behind it), and clear it */
  int (*last_error)(void);
  const char *(*error_string)(int code);
  int not_ready; /* the code stream_query / event_query return for pending work */
} mt_gpu_runtime;

extern const mt_gpu_runtime mt_gpu_emu_runtime;
#ifdef MT_HAVE_CUDA
extern const mt_gpu_runtime mt_gpu_cuda_runtime;
#endif

#ifdef __cplusplus
}
#endif

#endif
