/* cpu.c -- the CPU backend (core/backend.h): its kernel table, every slot of core/kernels.h filled
 * by the kernels of the files of core/tensor/; its memory is the core's own blocks (alloc.c). */
#include "cpu.h"

#include "../backend.h"

const mt_kernels mt_cpu_kernels = {
#define MT_CPU_SLOT_(slot, params) .slot = mt_cpu_##slot,
    MT_KERNEL_LIST(MT_CPU_SLOT_)
#undef MT_CPU_SLOT_
};

static mt_status cpu_synchronize(int index) {
  (void)index;
  return MT_OK; /* kernels return when they are done */
}

const mt_backend mt_cpu_backend = {
    .name = "cpu",
    .type = MT_CPU,
    .kernels = &mt_cpu_kernels,
    .memory = NULL,
    .holds_data = true,
    .transfer = NULL,
    .synchronize = cpu_synchronize,
    .supports = NULL,
    .rng = &mt_cpu_rng,
};
