/* backend.h -- what a device brings to the core: one backend per device type, the CPU's in
 * core/tensor/ (cpu.c) and the meta device's in core/meta/. The dispatch layer (core/ops/) reaches
 * a tensor's backend through its device (core/ops/device.h) and never names a backend itself, so
 * a new device is a new backend and its line in the registry (core/ops/device.c).
 *
 * A backend gives
 *   - its kernel table (core/kernels.h): a NULL slot is a computation it cannot do, which the
 *     dispatch layer reports as MT_EDEVICE naming the op and the device;
 *   - its memory: an allocator for its tensors' data, or none for a device that holds no data
 *     (meta: a tensor there has a shape, a dtype and strides, its data pointer is NULL);
 *   - the transfer of bytes between its memory and the CPU's;
 *   - synchronisation (a device that queues work waits for it);
 *   - supports(op, dtypes): whether it runs an op on operands of those dtypes, beyond having the
 *     op's kernel slot (NULL: the slot decides);
 *   - its random engine (core/generator.h): the state a generator of this device holds, how it is
 *     seeded and read as bytes (NULL: the device draws no random numbers, as meta).
 * Not installed. */
#ifndef MT_BACKEND_H
#define MT_BACKEND_H

#include "kernels.h"
#include "generator.h"

typedef struct mt_backend {
  const char *name;        /* the device's name: "cpu", "meta" */
  mt_device_type type;
  const mt_kernels *kernels;
  /* where its tensors' data lives: NULL for the core's own CPU blocks (alloc.c); an allocator
   * whose alloc is NULL for a device that holds no data */
  const mt_allocator *memory;
  bool holds_data;
  /* dst <- src, one on this device and the other on the CPU, of one shape and dtype, both
   * contiguous (NULL: the CPU itself) */
  mt_status (*transfer)(mt_tensor *dst, const mt_tensor *src);
  mt_status (*synchronize)(int index);
  bool (*supports)(mt_op op, const int *dtypes, int n);
  const struct mt_rng_engine *rng;
} mt_backend;

/* the backends this build has: the CPU's (core/tensor/cpu.c), the meta device's (core/meta/meta.c) */
extern const mt_backend mt_cpu_backend, mt_meta_backend;

#endif
