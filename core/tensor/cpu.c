/* cpu.c -- the CPU backend's kernel table: every slot of core/kernels.h, filled by the kernels of
 * the files of core/tensor/. */
#include "cpu.h"

const mt_kernels mt_cpu_kernels = {
#define MT_CPU_SLOT_(slot, params) .slot = mt_cpu_##slot,
    MT_KERNEL_LIST(MT_CPU_SLOT_)
#undef MT_CPU_SLOT_
};
