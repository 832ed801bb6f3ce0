/* thread.h -- the thread pool (thread.c). Internal to the core. */
#ifndef MT_THREAD_H
#define MT_THREAD_H

#include "error.h"

/* ---------------------------------------------------------------- threads */
typedef void (*mt_range_fn)(void *ctx, int64_t begin, int64_t end);
/* Run fn over [0, n) split across the pool; chunks no smaller than `grain`. */
void mt_parallel_for(int64_t n, int64_t grain, mt_range_fn fn, void *ctx);
/* Elements per thread below which kernels stay single-threaded. */
#define MT_GRAIN 32768
int mt_in_parallel(void);
/* Where the thread count came from: "MT_NUM_THREADS", "OMP_NUM_THREADS", "set_num_threads" or the CPUs. */
const char *mt_threads_source(void);

/* ---------------------------------------------------------------- the CPU (cpu.c) */
/* Does this CPU (and OS) have all of `features` (MT_CPU_* bits)? Callers on hot paths keep the answer. */
static inline bool mt_cpu_has(uint32_t features) { return (mt_cpu_features() & features) == features; }

#endif
