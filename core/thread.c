/* thread.c -- a small pool for the CPU kernels.
 *
 * Workers sleep on a condition variable between jobs (they never spin), so they do not compete
 * with the BLAS's threads; the calling thread takes a share of every job. The pool is made on
 * first use, regrown by mt_set_num_threads, and forgotten in a forked child. One thread count
 * governs the pool and the BLAS (blas.c); by default the CPUs this process may use (cpu.c). */
#include "thread.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv_done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t submit_mu = PTHREAD_MUTEX_INITIALIZER;

static int num_threads;     /* wanted, including the caller */
static int num_workers;     /* started */
static uint64_t generation; /* bumped per job */
static int active;          /* workers still on the current job */
static struct {
  mt_range_fn fn;
  void *ctx;
  int64_t n, chunk;
  int64_t next; /* atomic: next chunk index */
  int64_t nchunks;
} job;

static _Thread_local int in_parallel;
int mt_in_parallel(void) { return in_parallel; }

static void run_chunks(void) {
  for (;;) {
    int64_t c = __atomic_fetch_add(&job.next, 1, __ATOMIC_RELAXED);
    if (c >= job.nchunks) break;
    int64_t b = c * job.chunk, e = b + job.chunk < job.n ? b + job.chunk : job.n;
    job.fn(job.ctx, b, e);
  }
}

static void *worker_main(void *arg) {
  in_parallel = 1;
  /* the generation current when this worker was made (under mu): a job posted right after is
   * not missed */
  uint64_t seen = (uint64_t)(uintptr_t)arg;
  pthread_mutex_lock(&mu);
  for (;;) {
    while (generation == seen) pthread_cond_wait(&cv_work, &mu);
    seen = generation;
    pthread_mutex_unlock(&mu);
    run_chunks();
    pthread_mutex_lock(&mu);
    if (--active == 0) pthread_cond_signal(&cv_done);
  }
  return NULL;
}

static void after_fork_child(void) {
  /* the workers do not exist in the child: start over */
  pthread_mutex_init(&mu, NULL);
  pthread_mutex_init(&submit_mu, NULL);
  pthread_cond_init(&cv_work, NULL);
  pthread_cond_init(&cv_done, NULL);
  num_workers = 0;
  active = 0;
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
    int rc = pthread_create(&th, &attr, worker_main, (void *)(uintptr_t)generation);
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
  job.nchunks = chunks;
  job.chunk = (n + chunks - 1) / chunks;
  job.next = 0;
  active = num_workers; /* every worker wakes and checks in, some find no chunk left */
  generation++;
  pthread_cond_broadcast(&cv_work);
  pthread_mutex_unlock(&mu);
  in_parallel = 1;
  run_chunks();
  in_parallel = 0;
  pthread_mutex_lock(&mu);
  while (active > 0) pthread_cond_wait(&cv_done, &mu);
  pthread_mutex_unlock(&mu);
  pthread_mutex_unlock(&submit_mu);
}
