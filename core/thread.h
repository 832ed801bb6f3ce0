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
/* whether this thread is running a chunk of a parallel job (a pool worker, or the caller taking its share) */
extern _Thread_local int mt_in_parallel_flag;
static inline int mt_in_parallel(void) { return mt_in_parallel_flag; }
/* whether a parallel job is running now, in any thread (a plain global: a thread-local's address in
 * a shared library is a call to __tls_get_addr, too dear for every allocation's statistics) */
extern int mt_pool_job_running;
static inline int mt_pool_busy(void) { return __atomic_load_n(&mt_pool_job_running, __ATOMIC_RELAXED); }
/* Workers polling for the next job go to sleep now (called before a BLAS call, whose threads want the
 * cores); the next job wakes them. */
void mt_pool_rest(void);
/* Where the thread count came from: "MT_NUM_THREADS", "OMP_NUM_THREADS", "set_num_threads" or the CPUs. */
const char *mt_threads_source(void);
/* fn(n) is called with every count mt_set_num_threads sets (one listener: the BLAS's, from blas.c). */
void mt_threads_on_change(void (*fn)(int n));

#endif
