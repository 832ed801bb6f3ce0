/* blas.c -- which BLAS runs moontorch's matrix products, and with which kernels.
 *
 * The BLAS is not linked: it is loaded with dlopen at first use (the first product, mt_blas_load or
 * mt_config_string), because OpenBLAS picks its kernel set ("core") once, as it loads, from its own
 * reading of the CPU model, and that reading fails on machines that hide the model (virtual
 * machines often do: Debian's OpenBLAS 0.3.21 ran its SSE3 "Prescott" kernels on an AVX-512 Xeon,
 * 4x below its speed). So before loading it moontorch decides the core from the CPU's features
 * (cpu.c) and hands it to OpenBLAS in OPENBLAS_CORETYPE:
 *   MT_BLAS_CORETYPE (moontorch's setting) if set, else the user's own OPENBLAS_CORETYPE if set,
 *   else the best core for the CPU: Cooperlake (AVX-512 with BF16), SkylakeX (AVX-512), Zen
 *   (AMD, AVX2) or Haswell (AVX2, and AMD's Zen 4, whose AVX-512 is two AVX2 halves), Sandybridge
 *   (AVX), Nehalem (SSE4.2), Prescott.
 * A choice is honoured silently (a platform may set OPENBLAS_CORETYPE for all its programs; a library
 * must not talk on every start because of it): torch.config() and `moontorch --version` say which
 * kernels run, who chose them and what the CPU could run. A core the CPU cannot run (it would die on an
 * illegal instruction) is replaced by the best one, also silently, and said there too. After loading,
 * the core OpenBLAS reports is checked against the CPU's best; only where nobody chose and it is still
 * below (OpenBLAS was loaded earlier by someone else, or built for one CPU only) is one warning
 * printed, naming the setting that fixes it. The decision is mt_blas_plan_core(), a pure function of
 * its arguments, table-tested in spec/blas_spec.lua. The environment is restored after loading, so
 * child processes decide for themselves.
 *
 * Providers: OpenBLAS always (float64, matrix-vector, dot), and for float32 matrix products either
 * OpenBLAS or oneDNN's dnnl_sgemm (when CMake found oneDNN, or libdnnl.so.2/3 loads), chosen by
 * MT_BLAS=openblas|onednn; the default is MT_BLAS_DEFAULT (CMake: the one measured faster). Unless
 * MT_BLAS is set, float32 products of up to MT_OWN_GEMM_MACS multiply-adds stay on moontorch's own
 * kernel and threads (linalg.c; table.own_macs); MT_BLAS=<provider> hands them to that provider too.
 *
 * Threads: the BLAS gets moontorch's thread count (mt_set_num_threads governs both). Its threads
 * never compete with our pool: BLAS calls are made from the calling thread while our workers sleep,
 * never from inside our pool, and the BLAS's own threads go to sleep when a call ends: OpenBLAS's at
 * once (OPENBLAS_THREAD_TIMEOUT=4), oneDNN's OpenMP threads after at most ~25 us (GOMP_SPINCOUNT=1000),
 * each set for the load unless the user set them. */
#define _GNU_SOURCE
#include "blas.h"
#include "thread.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#ifndef MT_OPENBLAS_PATH
#define MT_OPENBLAS_PATH ""
#endif
#ifndef MT_ONEDNN_PATH
#define MT_ONEDNN_PATH ""
#endif
#ifndef MT_BLAS_DEFAULT
#define MT_BLAS_DEFAULT "openblas"
#endif

/* ---------------------------------------------------------------- the decision (pure) */
/* OpenBLAS's x86-64 kernel sets (its corename strings) and the vector level each one needs. */
static const struct {
  const char *name;
  int level;
} cores[] = {
    {"Katmai", MT_CPU_LEVEL_SSE},       {"Coppermine", MT_CPU_LEVEL_SSE},   {"Northwood", MT_CPU_LEVEL_SSE},
    {"Prescott", MT_CPU_LEVEL_SSE},     {"Banias", MT_CPU_LEVEL_SSE},       {"Atom", MT_CPU_LEVEL_SSE},
    {"Core2", MT_CPU_LEVEL_SSE},        {"Penryn", MT_CPU_LEVEL_SSE},       {"Dunnington", MT_CPU_LEVEL_SSE},
    {"Nehalem", MT_CPU_LEVEL_SSE},      {"Athlon", MT_CPU_LEVEL_SSE},       {"Opteron_SSE3", MT_CPU_LEVEL_SSE},
    {"Opteron", MT_CPU_LEVEL_SSE},      {"Barcelona", MT_CPU_LEVEL_SSE},    {"Nano", MT_CPU_LEVEL_SSE},
    {"Bobcat", MT_CPU_LEVEL_SSE},       {"Sandybridge", MT_CPU_LEVEL_AVX},  {"Bulldozer", MT_CPU_LEVEL_AVX},
    {"Piledriver", MT_CPU_LEVEL_AVX},   {"Steamroller", MT_CPU_LEVEL_AVX},  {"Haswell", MT_CPU_LEVEL_AVX2},
    {"Excavator", MT_CPU_LEVEL_AVX2},   {"Zen", MT_CPU_LEVEL_AVX2},         {"SkylakeX", MT_CPU_LEVEL_AVX512},
    {"Cooperlake", MT_CPU_LEVEL_AVX512}, {"SapphireRapids", MT_CPU_LEVEL_AVX512},
};

int mt_blas_core_level(const char *core) {
  if (!core) return MT_CPU_LEVEL_NONE;
  for (unsigned i = 0; i < sizeof cores / sizeof *cores; i++)
    if (strcasecmp(core, cores[i].name) == 0) return cores[i].level;
  return MT_CPU_LEVEL_NONE;
}

static const char *level_title(int level) {
  switch (level) {
  case MT_CPU_LEVEL_SSE: return "SSE";
  case MT_CPU_LEVEL_AVX: return "AVX";
  case MT_CPU_LEVEL_AVX2: return "AVX2";
  case MT_CPU_LEVEL_AVX512: return "AVX-512";
  default: return "?";
  }
}

/* The best kernel set for a CPU; "" when there is nothing to choose (not x86). AMD's family 19h
 * (Zen 4) runs AVX-512 as two 256-bit halves: there OpenBLAS's AVX2 (Haswell) kernels measured 2-6%
 * faster than its AVX-512 ones on every shape of the MLP training step (README), so they are its best. */
static const char *best_core(uint32_t f, const char *vendor, int family, const char **why) {
  int amd = vendor && (strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0);
  *why = "";
  switch (mt_cpu_level(f)) {
  case MT_CPU_LEVEL_AVX512:
    if (amd && family <= 0x19) {
      *why = ", run as two 256-bit halves by AMD family 19h, where the AVX2 kernels are faster";
      return "Haswell";
    }
    return (f & MT_CPU_AVX512_BF16) ? "Cooperlake" : "SkylakeX";
  case MT_CPU_LEVEL_AVX2: return amd ? "Zen" : "Haswell";
  case MT_CPU_LEVEL_AVX: return "Sandybridge";
  case MT_CPU_LEVEL_SSE: return (f & MT_CPU_SSE4_2) ? "Nehalem" : "Prescott";
  default: return "";
  }
}

static int is_set(const char *s) { return s && *s; }

void mt_blas_plan_core(uint32_t features, const char *vendor, int family, const char *setting, const char *user_env,
                       const char *reported, mt_blas_plan *out) {
  memset(out, 0, sizeof *out);
  int level = mt_cpu_level(features); /* what the CPU can run */
  const char *why;
  const char *best = best_core(features, vendor, family, &why);
  int best_level = mt_blas_core_level(best); /* what it runs best */
  const char *asked = NULL, *by = NULL;
  if (is_set(setting)) asked = setting, by = "MT_BLAS_CORETYPE";
  else if (is_set(user_env)) asked = user_env, by = "OPENBLAS_CORETYPE";
  int honoured = 0; /* the core asked for is the one a user or platform chose */
  if (asked) {
    int need = mt_blas_core_level(asked);
    if (*best && need > level) {
      /* the CPU cannot run it: OpenBLAS would die on its first illegal instruction */
      snprintf(out->core, sizeof out->core, "%s", best);
      snprintf(out->how, sizeof out->how, "moontorch, for this CPU (%s=%s needs %s, which this CPU lacks)", by, asked,
               level_title(need));
      snprintf(out->note, sizeof out->note,
               "%s=%s asks for OpenBLAS kernels that need %s, which this CPU lacks: moontorch runs %s instead "
               "(set %s=%s, or unset it)",
               by, asked, level_title(need), best, by, best);
    } else {
      snprintf(out->core, sizeof out->core, "%s", asked);
      snprintf(out->how, sizeof out->how, "%s=%s", by, asked);
      honoured = 1;
    }
  } else if (*best) {
    snprintf(out->core, sizeof out->core, "%s", best);
    snprintf(out->how, sizeof out->how, "moontorch, from the CPU's features (%s%s)", level_title(level), why);
  } else {
    snprintf(out->how, sizeof out->how, "OpenBLAS itself (no CPU features known here)");
  }
  if (!reported) return;
  int have = mt_blas_core_level(reported);
  if (!*best || have == MT_CPU_LEVEL_NONE || have >= best_level) return;
  /* below the CPU: a choice honoured is said in torch.config(); kernels nobody chose are warned about */
  if (honoured) {
    snprintf(out->note, sizeof out->note,
             "OpenBLAS's %s kernels (%s) run, below the %s kernels (%s) this CPU runs best: %s=%s asked for them; "
             "set MT_BLAS_CORETYPE=%s, or unset %s",
             reported, level_title(have), best, level_title(best_level), by, asked, best, by);
    return;
  }
  snprintf(out->warning, sizeof out->warning,
           "moontorch: warning: the BLAS runs OpenBLAS's %s kernels (%s), below the %s kernels (%s) this CPU runs "
           "best: OpenBLAS did not take the kernel set asked for (it was loaded before moontorch, or built for one CPU "
           "only); set MT_BLAS=onednn, or load Debian's libopenblas0-pthread (DYNAMIC_ARCH) through moontorch",
           reported, level_title(have), best, level_title(best_level));
}

/* ---------------------------------------------------------------- loading */
/* CBLAS as OpenBLAS declares it: enums are ints, blasint is int (Debian's build is LP64) */
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
typedef void (*cblas_gemm_s)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                             float *, int);
typedef void (*cblas_gemm_d)(int, int, int, int, int, int, double, const double *, int, const double *, int, double,
                             double *, int);
typedef void (*cblas_gemv_s)(int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*cblas_gemv_d)(int, int, int, int, double, const double *, int, const double *, int, double, double *,
                             int);
typedef float (*cblas_dot_s)(int, const float *, int, const float *, int);
typedef double (*cblas_dot_d)(int, const double *, int, const double *, int);
typedef int (*dnnl_sgemm_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *,
                             int64_t, float, float *, int64_t);
typedef struct {
  int major, minor, patch;
  const char *hash;
  unsigned cpu_runtime, gpu_runtime;
} dnnl_version_t;

static struct {
  cblas_gemm_s sgemm;
  cblas_gemm_d dgemm;
  cblas_gemv_s sgemv;
  cblas_gemv_d dgemv;
  cblas_dot_s sdot;
  cblas_dot_d ddot;
  void (*set_threads)(int);
  int (*get_threads)(void);
  char *(*corename)(void);
  char *(*config)(void);
  char path[512];
  void *handle; /* the dlopen handle (LAPACK symbols: mt_lapack_symbol) */
} ob;

static struct {
  dnnl_sgemm_fn sgemm;
  void (*omp_set_num_threads)(int);
  char version[32];
  int major;
  char path[512];
  char error[600]; /* why it could not be loaded */
} dn;

/* Where moontorch's single-thread kernel stops winning, 2 threads, n^3 products (us, on the 2-core
 * EPYC): against OpenBLAS 192: 128 vs 148, 224: 204 vs 172; against oneDNN 48: 2.7 vs 3.0,
 * 64: 5.1 vs 4.8, 96: 16.0 vs 11.2. (On one thread both BLAS only win from about 224^3: linalg.c.) */
#define OB_SMALL_MACS (192LL * 192 * 192)
#define DN_SMALL_MACS (64LL * 64 * 64)

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const mt_blas *loaded; /* atomic: the table, once loaded */
static mt_blas table;
static char load_error[600];
static mt_blas_plan plan;       /* the decision, with the reported core's check */
static char requested[32];      /* MT_BLAS as given, "" if unset */
static char reported_core[32];
static char provider_note[800]; /* why the float32 provider is what it is, when that needs saying */
static int blas_threads;        /* atomic: what the BLAS should use; 0 until thread.c says */

/* ---- OpenBLAS */
static void ob_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                     const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  ob.sgemm(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
           (int)ldb, beta, c, (int)ldc);
}
static void ob_dgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                     const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
  ob.dgemm(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
           (int)ldb, beta, c, (int)ldc);
}
static void ob_sgemv(int ta, int64_t m, int64_t n, float alpha, const float *a, int64_t lda, const float *x,
                     int64_t incx, float beta, float *y, int64_t incy) {
  ob.sgemv(ROW_MAJOR, ta ? TRANS : NO_TRANS, (int)m, (int)n, alpha, a, (int)lda, x, (int)incx, beta, y, (int)incy);
}
static void ob_dgemv(int ta, int64_t m, int64_t n, double alpha, const double *a, int64_t lda, const double *x,
                     int64_t incx, double beta, double *y, int64_t incy) {
  ob.dgemv(ROW_MAJOR, ta ? TRANS : NO_TRANS, (int)m, (int)n, alpha, a, (int)lda, x, (int)incx, beta, y, (int)incy);
}
static float ob_sdot(int64_t n, const float *x, int64_t incx, const float *y, int64_t incy) {
  return ob.sdot((int)n, x, (int)incx, y, (int)incy);
}
static double ob_ddot(int64_t n, const double *x, int64_t incx, const double *y, int64_t incy) {
  return ob.ddot((int)n, x, (int)incx, y, (int)incy);
}

/* ---- oneDNN: float32 products whose B is not transposed (A B and A^T B). With B transposed (A B^T:
 * every nn.Linear's forward) oneDNN 2.6 measured slower than OpenBLAS on 9 of 10 shapes here (by up
 * to 46%: 128x1024x1024), and faster by 1-22% on the others: the seam sends each to the faster one.
 * Its OpenMP threads are told the count per calling thread (omp_set_num_threads sets the caller's own
 * setting), again whenever it changed. */
static _Thread_local int dn_threads_told;
/* GNU OpenMP's threads do not survive fork(): a child's first parallel region waits for them for
 * ever. A forked child leaves oneDNN alone and uses OpenBLAS (which prepares itself for forks). */
static int dn_forked;
static void dn_after_fork_child(void) { dn_forked = 1; }
/* oneDNN 2.6's sgemm (Debian 12's libdnnl2) corrupts the heap when a signal handler runs during a
 * product: a C program calling dnnl_sgemm under setitimer(ITIMER_PROF) with a no-op SIGPROF handler
 * aborts in malloc ("corrupted size vs. prev_size") within milliseconds, and LuaJIT's profiler
 * (`luajit -jp`) is exactly such a timer. So asynchronous signals are held for the call: they are
 * delivered when it returns, and the OpenMP threads its first call starts inherit the mask, so a
 * process-directed signal never lands on them. Synchronous signals (a fault) stay open. Two
 * sigprocmask calls cost well under a microsecond; oneDNN gets only products of 64^3 multiply-adds
 * and more. */
static sigset_t dn_held;
static pthread_once_t dn_held_once = PTHREAD_ONCE_INIT;
static void dn_held_init(void) {
  sigfillset(&dn_held);
  const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
  for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(&dn_held, faults[i]);
}
static void dn_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                     const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (tb || dn_forked) {
    ob_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  int want = __atomic_load_n(&blas_threads, __ATOMIC_RELAXED);
  if (want > 0 && dn_threads_told != want && dn.omp_set_num_threads) {
    dn.omp_set_num_threads(want);
    dn_threads_told = want;
  }
  pthread_once(&dn_held_once, dn_held_init);
  sigset_t old;
  int held = pthread_sigmask(SIG_BLOCK, &dn_held, &old) == 0;
  int refused = dn.sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) != 0;
  if (held) pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (refused) ob_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); /* OpenBLAS takes every argument */
}

/* setenv for the load only: the old value comes back afterwards */
typedef struct {
  const char *name;
  char *old;
  int had, changed;
} env_save;
static void env_push(env_save *s, const char *name, const char *value, int overwrite) {
  s->name = name;
  const char *o = getenv(name);
  s->had = o != NULL;
  s->old = o ? strdup(o) : NULL;
  s->changed = 0;
  if (!value || (o && !overwrite) || (o && strcmp(o, value) == 0)) return;
  setenv(name, value, 1);
  s->changed = 1;
}
static void env_pop(env_save *s) {
  if (s->changed) {
    if (s->had && s->old) setenv(s->name, s->old, 1);
    else unsetenv(s->name);
  }
  free(s->old);
}

static void loaded_path(void *h, char *buf, size_t n) {
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) snprintf(buf, n, "%s", lm->l_name);
}

static void *open_first(const char *const *names, int count, char *why, size_t whyn) {
  why[0] = 0;
  for (int i = 0; i < count; i++) {
    if (!names[i] || !*names[i]) continue;
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    if (!why[0]) snprintf(why, whyn, "%s", dlerror());
  }
  return NULL;
}

static int load_openblas(void) {
  /* $MT_OPENBLAS_LIB alone when set (a user's own build); else the soname, as a linked library would
   * find it (alternatives, LD_LIBRARY_PATH), then where CMake found it */
  const char *lib = getenv("MT_OPENBLAS_LIB");
  const char *names[] = {"libopenblas.so.0", MT_OPENBLAS_PATH, "libopenblas.so"};
  if (is_set(lib)) names[0] = lib, names[1] = names[2] = NULL;
  char why[300];
  char threads[16];
  snprintf(threads, sizeof threads, "%d", mt_get_num_threads());
  mt_blas_plan_core(mt_cpu_features(), mt_cpu_vendor(), mt_cpu_family(), getenv("MT_BLAS_CORETYPE"),
                    getenv("OPENBLAS_CORETYPE"), NULL, &plan);
  env_save e_core, e_timeout, e_threads;
  env_push(&e_core, "OPENBLAS_CORETYPE", plan.core[0] ? plan.core : NULL, 1);
  env_push(&e_timeout, "OPENBLAS_THREAD_TIMEOUT", "4", 0);
  env_push(&e_threads, "OPENBLAS_NUM_THREADS", threads, 0);
  void *h = open_first(names, 3, why, sizeof why);
  env_pop(&e_threads);
  env_pop(&e_timeout);
  env_pop(&e_core);
  if (!h) {
    snprintf(load_error, sizeof load_error, "cannot load OpenBLAS (%s): %s",
             is_set(lib) ? "MT_OPENBLAS_LIB" : "libopenblas.so.0", why);
    return 0;
  }
  ob.sgemm = (cblas_gemm_s)dlsym(h, "cblas_sgemm");
  ob.dgemm = (cblas_gemm_d)dlsym(h, "cblas_dgemm");
  ob.sgemv = (cblas_gemv_s)dlsym(h, "cblas_sgemv");
  ob.dgemv = (cblas_gemv_d)dlsym(h, "cblas_dgemv");
  ob.sdot = (cblas_dot_s)dlsym(h, "cblas_sdot");
  ob.ddot = (cblas_dot_d)dlsym(h, "cblas_ddot");
  ob.set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
  ob.get_threads = (int (*)(void))dlsym(h, "openblas_get_num_threads");
  ob.corename = (char *(*)(void))dlsym(h, "openblas_get_corename");
  ob.config = (char *(*)(void))dlsym(h, "openblas_get_config");
  ob.handle = h;
  loaded_path(h, ob.path, sizeof ob.path);
  if (!ob.sgemm || !ob.dgemm || !ob.sgemv || !ob.dgemv || !ob.sdot || !ob.ddot) {
    snprintf(load_error, sizeof load_error, "%s lacks the CBLAS functions moontorch calls (cblas_sgemm, ...)",
             ob.path[0] ? ob.path : "libopenblas.so.0");
    return 0;
  }
  if (ob.corename) {
    snprintf(reported_core, sizeof reported_core, "%s", ob.corename());
    mt_blas_plan_core(mt_cpu_features(), mt_cpu_vendor(), mt_cpu_family(), getenv("MT_BLAS_CORETYPE"),
                      getenv("OPENBLAS_CORETYPE"), reported_core, &plan);
  }
  return 1;
}

/* the library itself, opened once for dnnl_sgemm and the convolution kernels alike (dn_open_lock held) */
static pthread_mutex_t dn_open_lock = PTHREAD_MUTEX_INITIALIZER;
static void *dn_handle; /* atomic once set */
static int dn_open_tried;
static int dn_open(void) {
  if (dn_open_tried) return dn_handle != NULL;
  dn_open_tried = 1;
  const char *lib = getenv("MT_ONEDNN_LIB");
  const char *names[] = {MT_ONEDNN_PATH, "libdnnl.so.3", "libdnnl.so.2"};
  if (is_set(lib)) names[0] = lib, names[1] = names[2] = NULL;
  char why[300];
  /* its OpenMP threads wait for the next call spinning at most GOMP_SPINCOUNT=1000 rounds (about 25 us
   * here), then sleep, unless the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT): libgomp's own 300000
   * would keep a core busy for ~8 ms after every product, away from our pool, and sleeping at once
   * (PASSIVE) puts a thread wake-up at both ends of every product (5-7% at the MLP's shapes). libgomp
   * reads these as it loads. */
  env_save e_spin;
  env_push(&e_spin, "GOMP_SPINCOUNT", getenv("OMP_WAIT_POLICY") ? NULL : "1000", 0);
  void *h = open_first(names, 3, why, sizeof why);
  env_pop(&e_spin);
  if (!h) {
    snprintf(dn.error, sizeof dn.error, "cannot load oneDNN (libdnnl.so): %s", why);
    return 0;
  }
  dn.omp_set_num_threads = (void (*)(int))dlsym(h, "omp_set_num_threads");
  const dnnl_version_t *(*version)(void) = (const dnnl_version_t *(*)(void))dlsym(h, "dnnl_version");
  if (version && version()) {
    snprintf(dn.version, sizeof dn.version, "%d.%d.%d", version()->major, version()->minor, version()->patch);
    dn.major = version()->major;
  }
  loaded_path(h, dn.path, sizeof dn.path);
  pthread_atfork(NULL, NULL, dn_after_fork_child);
  __atomic_store_n(&dn_handle, h, __ATOMIC_RELEASE);
  return 1;
}

static int load_onednn(void) {
  pthread_mutex_lock(&dn_open_lock);
  int ok = dn_open();
  pthread_mutex_unlock(&dn_open_lock);
  if (!ok) return 0;
  dn.sgemm = (dnnl_sgemm_fn)dlsym(dn_handle, "dnnl_sgemm");
  if (!dn.sgemm) {
    snprintf(dn.error, sizeof dn.error, "%s has no dnnl_sgemm", dn.path);
    return 0;
  }
  return 1;
}

void *mt_onednn_library(int *major) {
  if (dn_forked) return NULL;
  void *h = __atomic_load_n(&dn_handle, __ATOMIC_ACQUIRE);
  if (!h) {
    pthread_mutex_lock(&dn_open_lock);
    dn_open();
    pthread_mutex_unlock(&dn_open_lock);
    h = __atomic_load_n(&dn_handle, __ATOMIC_ACQUIRE);
  }
  if (major) *major = dn.major;
  return h;
}

const char *mt_onednn_describe(void) {
  static char buf[600];
  if (!mt_onednn_library(NULL)) {
    snprintf(buf, sizeof buf, "%s", dn_forked ? "not in a forked child" : dn.error);
    return buf;
  }
  snprintf(buf, sizeof buf, "oneDNN %s (%s)", dn.version, dn.path);
  return buf;
}

void mt_onednn_begin(sigset_t *old, int *held) {
  mt_pool_rest(); /* oneDNN's threads take the cores from here: our polling workers sleep */
  int want = __atomic_load_n(&blas_threads, __ATOMIC_RELAXED);
  if (want <= 0) want = mt_get_num_threads();
  if (dn_threads_told != want && dn.omp_set_num_threads) {
    dn.omp_set_num_threads(want);
    dn_threads_told = want;
  }
  pthread_once(&dn_held_once, dn_held_init);
  *held = pthread_sigmask(SIG_BLOCK, &dn_held, old) == 0;
}

void mt_onednn_end(const sigset_t *old, int held) {
  if (held) pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void load(void) {
  if (!load_openblas()) return;
  const char *want = getenv("MT_BLAS");
  snprintf(requested, sizeof requested, "%s", want ? want : "");
  int explicit = is_set(want);
  table = (mt_blas){"openblas", OB_SMALL_MACS, explicit ? 0 : MT_OWN_GEMM_MACS, ob_sgemm, ob_dgemm, ob_sgemv,
                    ob_dgemv, ob_sdot, ob_ddot};
  if (!explicit) want = MT_BLAS_DEFAULT;
  if (strcasecmp(want, "onednn") == 0 || strcasecmp(want, "dnnl") == 0) {
    if (load_onednn()) {
      table.name = "onednn";
      table.small_macs = DN_SMALL_MACS;
      table.sgemm = dn_sgemm;
    } else if (explicit) {
      snprintf(provider_note, sizeof provider_note, "moontorch: warning: MT_BLAS=%s: %s; float32 products use OpenBLAS",
               want, dn.error);
    }
  } else if (strcasecmp(want, "openblas") != 0) {
    snprintf(provider_note, sizeof provider_note,
             "moontorch: warning: MT_BLAS=%s is not a BLAS moontorch knows (openblas, onednn); using OpenBLAS", want);
  }
  mt_threads_on_change(mt_blas_set_threads); /* later counts from mt_set_num_threads */
  int n = __atomic_load_n(&blas_threads, __ATOMIC_RELAXED);
  if (n <= 0) n = mt_get_num_threads();
  __atomic_store_n(&blas_threads, n, __ATOMIC_RELAXED);
  if (ob.set_threads) ob.set_threads(n);
  if (plan.warning[0]) fprintf(stderr, "%s\n", plan.warning);
  if (provider_note[0]) fprintf(stderr, "%s\n", provider_note);
  __atomic_store_n(&loaded, &table, __ATOMIC_RELEASE);
}

const mt_blas *mt_blas_get(const char *op) {
  const mt_blas *b = __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
  if (__builtin_expect(b != NULL, 1)) return b;
  pthread_once(&load_once, load);
  b = __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
  if (!b) mt_error(MT_EDEVICE, "%s: %s", op, load_error);
  return b;
}

mt_status mt_blas_load(void) { return mt_blas_get("blas") ? MT_OK : MT_EDEVICE; }

/* LAPACK: the loaded BLAS's own exports first (OpenBLAS carries LAPACK), else $MT_LAPACK_LIB or liblapack.so.3
 * (Debian's liblapack3), opened once; a symbol neither has is an error naming the op */
static pthread_once_t lapack_once = PTHREAD_ONCE_INIT;
static void *lapack_handle;
static char lapack_why[300];
static const char *lapack_name(void) {
  const char *lib = getenv("MT_LAPACK_LIB"); /* a user's own LAPACK */
  return is_set(lib) ? lib : "liblapack.so.3";
}
static void open_lapack(void) {
  lapack_handle = dlopen(lapack_name(), RTLD_NOW | RTLD_LOCAL);
  if (!lapack_handle) snprintf(lapack_why, sizeof lapack_why, "%s", dlerror());
}
void *mt_lapack_symbol(const char *op, const char *name) {
  if (!mt_blas_get(op)) return NULL;
  void *f = ob.handle ? dlsym(ob.handle, name) : NULL;
  if (f) return f;
  pthread_once(&lapack_once, open_lapack);
  if (lapack_handle && (f = dlsym(lapack_handle, name))) return f;
  mt_error(MT_ENOTIMPL, "%s: needs LAPACK: %s has no %s and %s %s%s", op, ob.path[0] ? ob.path : "the BLAS", name,
           lapack_name(), lapack_handle ? "has none either" : "cannot be loaded: ", lapack_handle ? "" : lapack_why);
  return NULL;
}

void mt_blas_set_threads(int n) {
  __atomic_store_n(&blas_threads, n, __ATOMIC_RELAXED);
  if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE) && ob.set_threads) ob.set_threads(n);
}

int mt_blas_threads(void) {
  if (!mt_blas_get("blas")) return 0;
  return ob.get_threads ? ob.get_threads() : __atomic_load_n(&blas_threads, __ATOMIC_RELAXED);
}

const char *mt_blas_provider(void) {
  const mt_blas *b = mt_blas_get("blas");
  return b ? b->name : "";
}

const char *mt_blas_library(void) {
  mt_blas_get("blas");
  return ob.path;
}

const char *mt_blas_core(void) {
  mt_blas_get("blas");
  return reported_core;
}

const mt_blas_plan *mt_blas_current_plan(void) {
  mt_blas_get("blas");
  return &plan;
}

int mt_blas_available(const char *provider) {
  if (!provider) return 0;
  if (strcasecmp(provider, "openblas") == 0) return mt_blas_get("blas") != NULL;
  if (strcasecmp(provider, "onednn") == 0) {
    if (!mt_blas_get("blas")) return 0;
    if (dn.sgemm) return 1;
    return load_onednn();
  }
  return 0;
}

int mt_conv_mode(void) {
  static int mode = -1;
  int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
  if (m >= 0) return m;
  const char *e = getenv("MT_CONV");
  m = 0;
  if (e && strcasecmp(e, "direct") == 0) m = 1;
  else if (e && (strcasecmp(e, "own") == 0 || strcmp(e, "0") == 0)) m = 2;
  __atomic_store_n(&mode, m, __ATOMIC_RELAXED);
  return m;
}

/* whether core/tensor/onednn.c was built (it needs oneDNN 2.x's headers) */
#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl_version.h>)
#include <oneapi/dnnl/dnnl_version.h>
#if DNNL_VERSION_MAJOR == 2
#define MT_ONEDNN_CONV_BUILT 1
#endif
#endif
#endif

int mt_conv_describe(char *buf, size_t n) {
  int mode = mt_conv_mode(), major = 0;
  if (mode == 2)
    return snprintf(buf, n, "  - float32 convolutions: moontorch's own (im2col and matrix products), MT_CONV=own\n");
#ifndef MT_ONEDNN_CONV_BUILT
  return snprintf(buf, n, "  - float32 convolutions: moontorch's own (im2col and matrix products); built without "
                          "oneDNN 2.x's headers (libdnnl-dev)\n");
#else
  if (!mt_onednn_library(&major) || major != 2)
    return snprintf(buf, n, "  - float32 convolutions: moontorch's own (im2col and matrix products); oneDNN's not used: "
                            "%s\n", major && major != 2 ? "the library loaded is not oneDNN 2.x" : mt_onednn_describe());
  return snprintf(buf, n,
                  "  - float32 convolutions: %s for 16 or more channels per group (%s), moontorch's own (im2col and "
                  "matrix products) for the rest, 1x1 and float64; MT_CONV=direct|own chooses\n",
                  mt_onednn_describe(),
                  mode == 1 ? "direct only: MT_CONV=direct"
                            : "Winograd for 3x3 of stride 1 from 32 output tiles, or with its weights kept on small "
                              "batches, else direct");
#endif
}

/* The BLAS part of mt_config_string. */
int mt_blas_describe(char *buf, size_t n) {
  const mt_blas *b = mt_blas_get("blas");
  if (!b) return snprintf(buf, n, "  - BLAS: none (%s)\n", load_error);
  const char *config = ob.config ? ob.config() : "OpenBLAS";
  int k = snprintf(buf, n, "  - BLAS: %s (%s)\n", config, ob.path[0] ? ob.path : "libopenblas.so.0");
  if (reported_core[0])
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "  - BLAS kernels: %s, chosen by %s\n", reported_core, plan.how);
  if (plan.note[0]) k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "    note: %s\n", plan.note);
  /* the warnings without their "moontorch: " (they were printed once with it) */
  if (plan.warning[0]) k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "    %s\n", plan.warning + 11);
  if (strcmp(b->name, "onednn") == 0)
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0,
                  "  - float32 matrix products: oneDNN %s dnnl_sgemm (%s) for A@B and A^T@B, %s; OpenBLAS for "
                  "A@B^T (faster there) and the rest\n",
                  dn.version,
                  dn.path, is_set(requested) ? "MT_BLAS=onednn" : "the default where it is present (MT_BLAS=openblas for OpenBLAS)");
  else
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "  - float32 matrix products: OpenBLAS%s\n",
                  is_set(requested) ? " (MT_BLAS)" : "");
  if (b->own_macs > 0 && mt_cpu_kernel_level() >= MT_CPU_LEVEL_AVX2) /* linalg.c's condition */
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0,
                  "    except those of up to %lld multiply-adds (K up to %d): moontorch's own kernel on its threads "
                  "(MT_BLAS=<provider> sends them to the BLAS)\n",
                  (long long)b->own_macs, MT_OWN_GEMM_MAX_K);
  if (provider_note[0]) k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "    %s\n", provider_note + 11);
  return k;
}
