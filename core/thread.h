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

#endif
