/* cpu.h -- what this CPU can do (cpu.c). Internal to the core. */
#ifndef MT_CORE_CPU_H
#define MT_CORE_CPU_H

#include "moontorch.h" /* mt_cpu_features, the MT_CPU_* bits and levels */

#include <stdbool.h>
#include <stdint.h>

/* Does this CPU (and OS) have all of `features` (MT_CPU_* bits)? Callers on hot paths keep the answer. */
static inline bool mt_cpu_has(uint32_t features) { return (mt_cpu_features() & features) == features; }

/* speed: the level of moontorch's own vector kernels (vmath.c, vmath512.c; MT_CPU_LEVEL_AVX512, _AVX2 or
 * _NONE for scalar): the best the CPU runs, or below it where MOONTORCH_VMATH says "avx2" or "0" /
 * "scalar" (read once). mt_kernels_simd() names it. */
int mt_cpu_kernel_level(void);

#endif
