/* backend.h -- what a device brings to the core: one backend per device type, the CPU's in
 * core/tensor/ (cpu.c), the meta device's in core/meta/, CUDA's in core/gpu/ (when built), and a
 * CPU-run fake for specs in core/fake/. The dispatch layer (core/ops/) reaches a tensor's backend
 * through its device (core/ops/device.h) and never names a backend itself, so a new device is a new
 * backend and its line in the registry (core/ops/device.c).
 *
 * A backend gives
 *   - its kernel table (core/kernels.h): a NULL slot is a computation it cannot do, which the
 *     dispatch layer reports as MT_EDEVICE naming the op and the device;
 *   - its memory: an allocator for its tensors' data (given the device's index), or none for a device
 *     that holds no data (meta: a tensor there has a shape, a dtype and strides, its data pointer is
 *     NULL). The core counts each device's bytes (core/alloc.c) and has Lua collect dead tensors when
 *     they grow (mt_gc_done), so a backend need not;
 *   - its devices: how many there are now (none on a machine without the driver or the hardware:
 *     never a crash), which one is current;
 *   - the transfer of bytes between its memory and the CPU's, and between two of its devices; the
 *     core reads values on the host only through it (mt_readback, core/ops/copy.c);
 *   - streams and events (a device that queues work), and synchronisation;
 *   - what it knows of its memory beyond the core's counts (a cache's reserved bytes, free, total);
 *   - supports(op, dtypes): whether it runs an op on operands of those dtypes, beyond having the
 *     op's kernel slot (NULL: the slot decides);
 *   - its random engine (core/generator.h): the state a generator of this device holds, how it is
 *     seeded and read as bytes (NULL: the device draws no random numbers, as meta).
 * Every hook but the kernel table may be NULL: see each one for what NULL means.
 *
 * What the core promises a backend's kernels: operands on the backend's device (one index), but for
 * binary, where and the optimizer steps' scalars: an operand may be a 0-dim CPU tensor (a number,
 * MT_TENSOR_WRAPPED_NUMBER, or PyTorch's CPU scalar), which a kernel reads on the host and passes by
 * value. The random fills get a generator of the tensor's own device (core/ops/generator.c). Kernels
 * run on the device's current stream. Not installed. */
#ifndef MT_BACKEND_H
#define MT_BACKEND_H

#include "kernels.h"
#include "generator.h"

/* what a backend says of a device's memory beyond the core's counts (-1: not known) */
typedef struct mt_device_memory {
  int64_t reserved, peak_reserved; /* bytes it holds from the device (allocated + its cache) */
  int64_t free_bytes, total_bytes; /* the device's */
} mt_device_memory;

typedef struct mt_backend {
  const char *name; /* the backend's name: "cpu", "meta", "cuda", "fake" */
  mt_device_type type;
  const mt_kernels *kernels;
  /* where its tensors' data lives: NULL for the core's own CPU blocks (alloc.c); an allocator
   * whose alloc is NULL for a device that holds no data */
  const mt_allocator *memory;
  bool holds_data;

  /* ---- devices (NULL: one device, 0, always current). The registry checks an index against
   * device_count before any other hook sees it. */
  int (*device_count)(void);
  int (*current_device)(void);
  mt_status (*set_device)(int index);
  /* why there is no device when device_count() is 0 ("no NVIDIA driver"), for the error; NULL: nothing */
  const char *(*unavailable)(void);

  /* ---- bytes. dst <- src, both contiguous, of one shape and dtype, each on the CPU or on a device of
   * this backend's type (host to device, device to host, within a device, between two of its devices).
   * flags: MT_TO_NON_BLOCKING when the host end is pinned (memory from `pinned`) and the caller's own
   * tensor: the copy may return before it is done, ordered on the current stream of the device end.
   * Copies between devices of two types go through the host (core/ops/copy.c). NULL: the CPU itself
   * (memcpy). */
  mt_status (*transfer)(mt_tensor *dst, const mt_tensor *src, int flags);
  /* page-locked host memory, for CPU tensors that are transferred without blocking (pin_memory);
   * the allocator's device index is 0. NULL: none. */
  const mt_allocator *pinned;

  /* ---- streams and events: opaque handles of the backend, per device; a NULL stream is the device's
   * default stream. Kernels run on the device's current stream. NULL hooks: a device that queues
   * nothing (every stream is the default one, every event is done at once). */
  mt_status (*stream_new)(int index, int priority, void **out);
  void (*stream_free)(int index, void *stream);
  void *(*current_stream)(int index);
  mt_status (*set_stream)(int index, void *stream);
  /* wait for the work queued on the stream (NULL: on every stream of the device) */
  mt_status (*synchronize)(int index, void *stream);
  int (*stream_query)(int index, void *stream); /* 1: its work is done */
  /* the memory at `data` (a storage's block) is used by work on `stream`: a caching allocator waits
   * for that work before it hands the block out again (PyTorch's Tensor.record_stream) */
  void (*record_stream)(int index, void *data, void *stream);
  mt_status (*event_new)(int index, int flags, void **out); /* flags: MT_EVENT_TIMING */
  void (*event_free)(int index, void *event);
  mt_status (*event_record)(int index, void *event, void *stream);
  mt_status (*event_wait)(int index, void *event, void *stream); /* stream's later work waits for it */
  mt_status (*event_synchronize)(int index, void *event);
  int (*event_query)(int index, void *event);
  mt_status (*event_elapsed)(int index, void *start, void *end, double *ms);

  /* ---- memory beyond the core's counts (NULL: nothing more to say) */
  mt_status (*memory_info)(int index, mt_device_memory *out);
  void (*empty_cache)(int index);       /* give back cached, unused memory */
  void (*reset_peak)(int index);        /* its own peaks (peak_reserved) */
  /* torch.config()'s line for this device type ("built for sm_80, sm_90 (toolkit 13.0), 1 device:
   * NVIDIA H100 80GB HBM3"); returns the length written (snprintf's). NULL: nothing. */
  int (*describe)(char *buf, size_t n);

  bool (*supports)(mt_op op, const int *dtypes, int n);
  const struct mt_rng_engine *rng;
} mt_backend;

/* the backends this build has: the CPU's (core/tensor/cpu.c), the meta device's (core/meta/meta.c),
 * the fake device's (core/fake/fake.c: installed in the CUDA slot for specs only) */
extern const mt_backend mt_cpu_backend, mt_meta_backend, mt_fake_backend;
/* the CPU's random engine (core/tensor/random.c: PyTorch's CPU generator), which the fake device shares
 * with the CPU's kernels it runs */
extern const struct mt_rng_engine mt_cpu_rng;
/* the fake's devices and memory, set before the registry installs it (mt_fake_cuda_install) */
mt_status mt_fake_setup(int ndevices, int64_t bytes);
#ifdef MT_HAVE_GPU
/* core/gpu/ (compiled where its gpu.cmake is, which defines MT_HAVE_GPU): the CUDA backend the
 * registry installs at load, or NULL for none. It decides: the real one where nvcc built it (a
 * machine without a driver or a GPU then has 0 devices), its CPU emulator when asked for, or none
 * ("moontorch was built without CUDA"). Called once, from the registry's constructor. */
const mt_backend *mt_cuda_backend_select(void);
#endif

#endif
