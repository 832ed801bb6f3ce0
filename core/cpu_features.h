/* cpu_features.h -- what this CPU can do (cpu.c). Internal to the core. */
#ifndef MT_CPU_FEATURES_H
#define MT_CPU_FEATURES_H

#include "error.h"

/* Does this CPU (and OS) have all of `features` (MT_CPU_* bits)? Callers on hot paths keep the answer. */
static inline bool mt_cpu_has(uint32_t features) { return (mt_cpu_features() & features) == features; }

#endif
