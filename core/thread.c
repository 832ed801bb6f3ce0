/* thread.c -- a small pool for the CPU kernels.
 *
 * Workers poll briefly for the next job (SPIN_POLLS pauses, some tens of microseconds) and then sleep
 * on a condition variable, so they neither miss the next op of a loop nor compete for long with the
 * BLAS's threads; the calling thread takes a share of every job and waits only for chunks that others
 * claimed, never for a worker still waking up. The pool is made on
 * first use, regrown by mt_set_num_threads, and forgotten in a forked child. One thread count
 * governs the pool and the BLAS (blas.c); by default the CPUs this process may use (cpu.c). */
#include "thread.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_work = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t submit_mu = PTHREAD_MUTEX_INITIALIZER;

static int num_threads; /* wanted, including the caller */
static int num_workers; /* started */
/* The job: its fields, then `state` published with release ordering. state packs the job's generation
 * (high 32 bits), its chunk count (16 bits) and the next chunk to claim (low 16 bits); a chunk is
 * claimed by a compare-and-swap of the whole word, so a worker that wakes late, holding an older
 * generation, can claim nothing, and one that claims a chunk reads fields that stay put until the
 * chunk is done (the caller waits for `done`, the chunks finished, not for every worker to check in). */
static struct {
  mt_range_fn fn;
  void *ctx;
  int64_t n, chunk;
  int64_t done; /* atomic: chunks finished */
} job;
static uint64_t state; /* atomic */
#define ST_GEN(v) ((uint32_t)((v) >> 32))
#define ST_NCH(v) ((int64_t)(((v) >> 16) & 0xffff))
#define ST_NEXT(v) ((int64_t)((v) & 0xffff))
/* a worker polls this many times (each a pause, ~20-40 ns) for the next job before it sleeps: the
 * elementwise ops of a training step come microseconds apart, and a wake-up through the condition
 * variable costs tens of microseconds on a busy or virtual machine */
#define SPIN_POLLS 2000

/* set by mt_pool_rest (before a BLAS call, whose own threads want the cores): polling workers go to sleep
 * at once; the next job clears it */
static int pool_rest; /* atomic */
void mt_pool_rest(void) {
  if (!__atomic_load_n(&pool_rest, __ATOMIC_RELAXED)) __atomic_store_n(&pool_rest, 1, __ATOMIC_RELAXED);
}

_Thread_local int mt_in_parallel_flag;
int mt_pool_job_running; /* atomic; set from before a job is posted until its last chunk is done */
#define in_parallel mt_in_parallel_flag

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* claim and run chunks of generation `gen` until none is left */
static void run_chunks(uint32_t gen) {
  uint64_t v = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  for (;;) {
    if (ST_GEN(v) != gen || ST_NEXT(v) >= ST_NCH(v)) return;
    if (!__atomic_compare_exchange_n(&state, &v, v + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    int64_t c = ST_NEXT(v);
    int64_t b = c * job.chunk, e = b + job.chunk < job.n ? b + job.chunk : job.n;
    job.fn(job.ctx, b, e);
    __atomic_fetch_add(&job.done, 1, __ATOMIC_RELEASE);
    v = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  }
}

static void *worker_main(void *arg) {
  in_parallel = 1;
  /* the generation current when this worker was made: a job posted right after is not missed */
  uint32_t seen = (uint32_t)(uintptr_t)arg;
  for (;;) {
    uint32_t g = ST_GEN(__atomic_load_n(&state, __ATOMIC_ACQUIRE));
    for (int i = 0; g == seen && i < SPIN_POLLS && !__atomic_load_n(&pool_rest, __ATOMIC_RELAXED); i++) {
      cpu_relax();
      if ((i & 255) == 255) sched_yield(); /* a machine with more threads than cores: let the others run */
      g = ST_GEN(__atomic_load_n(&state, __ATOMIC_ACQUIRE));
    }
    if (g == seen) {
      pthread_mutex_lock(&mu);
      while ((g = ST_GEN(__atomic_load_n(&state, __ATOMIC_ACQUIRE))) == seen) pthread_cond_wait(&cv_work, &mu);
      pthread_mutex_unlock(&mu);
    }
    seen = g;
    run_chunks(g);
  }
  return NULL;
}

static void after_fork_child(void) {
  /* the workers do not exist in the child: start over */
  pthread_mutex_init(&mu, NULL);
  pthread_mutex_init(&submit_mu, NULL);
  pthread_cond_init(&cv_work, NULL);
  num_workers = 0;
}

static const char *threads_source = "the CPUs this process may use";
static int default_threads(void) {
  static const char *const vars[] = {"MT_NUM_THREADS", "OMP_NUM_THREADS"};
  long n = 0;
  for (int i = 0; i < 2 && n <= 0; i++) {
    const char *env = getenv(vars[i]);
    n = env ? strtol(env, NULL, 10) : 0;
    if (n > 0) threads_source = vars[i];
  }
  if (n <= 0) n = mt_cpu_count_allowed();
  if (n <= 0) n = 1;
  return n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init_once(void) {
  if (!num_threads) num_threads = default_threads();
  pthread_atfork(NULL, NULL, after_fork_child);
}

/* who hears of a new thread count (the BLAS, once loaded: blas.c), so that this file, below the
 * BLAS, never calls up into it */
static void (*on_change)(int n);

void mt_set_num_threads(int n) {
  pthread_once(&once, init_once);
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  num_threads = n;
  threads_source = "set_num_threads";
  void (*listener)(int) = __atomic_load_n(&on_change, __ATOMIC_ACQUIRE);
  if (listener) listener(n);
}

void mt_threads_on_change(void (*fn)(int n)) { __atomic_store_n(&on_change, fn, __ATOMIC_RELEASE); }

const char *mt_threads_source(void) {
  pthread_once(&once, init_once);
  return threads_source;
}

int mt_get_num_threads(void) {
  pthread_once(&once, init_once);
  return num_threads;
}

static void ensure_workers(int want) {
  while (num_workers < want) {
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &attr, worker_main, (void *)(uintptr_t)ST_GEN(__atomic_load_n(&state, __ATOMIC_ACQUIRE)));
    pthread_attr_destroy(&attr);
    if (rc != 0) break; /* run with the workers we have */
    num_workers++;
  }
}

void mt_parallel_for(int64_t n, int64_t grain, mt_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int nt = mt_get_num_threads();
  if (nt <= 1 || in_parallel || n < 2 * grain) {
    fn(ctx, 0, n);
    return;
  }
  int64_t chunks = n / grain;
  if (chunks > nt) chunks = nt;
  pthread_mutex_lock(&submit_mu); /* one job at a time from concurrent callers */
  pthread_mutex_lock(&mu);
  ensure_workers(nt - 1);
  int helpers = num_workers < (int)chunks - 1 ? num_workers : (int)chunks - 1;
  if (helpers <= 0) {
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&submit_mu);
    fn(ctx, 0, n);
    return;
  }
  job.fn = fn;
  job.ctx = ctx;
  job.n = n;
  job.chunk = (n + chunks - 1) / chunks;
  chunks = (n + job.chunk - 1) / job.chunk;
  __atomic_store_n(&job.done, 0, __ATOMIC_RELAXED);
  if (__atomic_load_n(&pool_rest, __ATOMIC_RELAXED)) __atomic_store_n(&pool_rest, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&mt_pool_job_running, 1, __ATOMIC_RELAXED); /* published with `state` below */
  uint32_t gen = ST_GEN(__atomic_load_n(&state, __ATOMIC_RELAXED)) + 1;
  __atomic_store_n(&state, ((uint64_t)gen << 32) | ((uint64_t)chunks << 16), __ATOMIC_RELEASE);
  pthread_cond_broadcast(&cv_work); /* for the workers asleep; spinning ones see `state` */
  pthread_mutex_unlock(&mu);
  in_parallel = 1;
  run_chunks(gen);
  in_parallel = 0;
  /* the chunks others claimed: they are running now, so spin (yielding now and then, for a preempted worker) */
  for (int i = 0; __atomic_load_n(&job.done, __ATOMIC_ACQUIRE) < chunks; i++) {
    cpu_relax();
    if ((i & 1023) == 1023) sched_yield();
  }
  __atomic_store_n(&mt_pool_job_running, 0, __ATOMIC_RELAXED); /* the chunks' allocations happened before */
  pthread_mutex_unlock(&submit_mu);
}
