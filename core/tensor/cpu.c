/* cpu.c -- the CPU backend (core/backend.h): its kernel table, every slot of core/kernels.h filled
 * by the kernels of the files of core/tensor/; its memory is the core's own blocks (alloc.c). */
#include "cpu.h"

#include "../backend.h"

const mt_kernels mt_cpu_kernels = {
#define MT_CPU_SLOT_(slot, params) .slot = mt_cpu_##slot,
    MT_KERNEL_LIST(MT_CPU_SLOT_)
#undef MT_CPU_SLOT_
};

/* One device, whose kernels return when they are done: no device count, streams, events or
 * synchronisation to give (NULL hooks: core/backend.h); bytes move by memcpy (transfer NULL). */
const mt_backend mt_cpu_backend = {
    .name = "cpu",
    .type = MT_CPU,
    .kernels = &mt_cpu_kernels,
    .memory = NULL,
    .holds_data = true,
    .transfer = NULL,
    .supports = NULL,
    .rng = &mt_cpu_rng,
};
