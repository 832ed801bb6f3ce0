/* cpu.c -- the one place that asks the CPU what it can do, and how many CPUs this process may use.
 *
 * Features come from CPUID, counted only where the OS saves the registers they need (XGETBV):
 * AVX and its successors need the YMM state, AVX-512 the opmask and ZMM states, AMX the tile
 * states. Everything that picks a kernel by the CPU (vmath.c, linalg.c's small sgemm, checkpoint.c's
 * checksum loop, the BLAS kernel choice in blas.c) asks mt_cpu_has() (cpu.h) of what is detected here, so they agree.
 *
 * The CPUs this process may use are its affinity mask (taskset, cpusets) narrowed by a cgroup CPU
 * quota (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us / cpu.cfs_period_us, rounded up): a container
 * given 2 CPUs of a 64-CPU host gets 2 threads, not 64. */
#define _GNU_SOURCE
#include "cpu.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CPU_X86 1
#endif

static const char *const feature_names[] = {
#define X(NAME, name, bit) [bit] = #name,
    MT_CPU_FEATURE_LIST(X)
#undef X
};

const char *mt_cpu_feature_name(uint32_t feature) {
  for (unsigned b = 0; b < sizeof feature_names / sizeof *feature_names; b++)
    if (feature == (1u << b) && feature_names[b]) return feature_names[b];
  return NULL;
}

static struct {
  uint32_t features;
  int family;
  char vendor[13];
  char name[49];
} cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

#ifdef CPU_X86
static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}
#endif

static void detect(void) {
#ifdef CPU_X86
  unsigned a, b, c, d, max;
  if (!__get_cpuid(0, &max, &b, &c, &d)) return;
  memcpy(cpu.vendor, &b, 4);
  memcpy(cpu.vendor + 4, &d, 4);
  memcpy(cpu.vendor + 8, &c, 4);
  unsigned ext = __get_cpuid_max(0x80000000u, NULL);
  if (ext >= 0x80000004u) {
    unsigned r[12];
    for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
    memcpy(cpu.name, r, 48);
    /* trim the padding */
    char *s = cpu.name;
    while (*s == ' ') s++;
    memmove(cpu.name, s, strlen(s) + 1);
    for (size_t n = strlen(cpu.name); n && cpu.name[n - 1] == ' '; n--) cpu.name[n - 1] = 0;
  }
  uint32_t f = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  cpu.family = (int)((a >> 8) & 0xf);
  if (cpu.family == 0xf) cpu.family += (int)((a >> 20) & 0xff);
  if (c & (1u << 0)) f |= MT_CPU_SSE3;
  if (c & (1u << 9)) f |= MT_CPU_SSSE3;
  if (c & (1u << 19)) f |= MT_CPU_SSE4_1;
  if (c & (1u << 20)) f |= MT_CPU_SSE4_2;
  uint64_t xcr0 = (c & (1u << 27)) ? xgetbv0() : 0; /* OSXSAVE */
  int ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xE6) == 0xE6, tiles = (xcr0 & 0x60000) == 0x60000;
  if (ymm) {
    if (c & (1u << 28)) f |= MT_CPU_AVX;
    if (c & (1u << 12)) f |= MT_CPU_FMA;
    if (c & (1u << 29)) f |= MT_CPU_F16C;
  }
  if (max >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    unsigned sub = a;
    if (ymm && (b & (1u << 5))) f |= MT_CPU_AVX2;
    if (zmm) {
      if (b & (1u << 16)) f |= MT_CPU_AVX512F;
      if (b & (1u << 17)) f |= MT_CPU_AVX512DQ;
      if (b & (1u << 28)) f |= MT_CPU_AVX512CD;
      if (b & (1u << 30)) f |= MT_CPU_AVX512BW;
      if (b & (1u << 31)) f |= MT_CPU_AVX512VL;
      if (c & (1u << 11)) f |= MT_CPU_AVX512_VNNI;
      if (d & (1u << 23)) f |= MT_CPU_AVX512_FP16;
    }
    if (tiles) {
      if (d & (1u << 24)) f |= MT_CPU_AMX_TILE;
      if (d & (1u << 22)) f |= MT_CPU_AMX_BF16;
      if (d & (1u << 25)) f |= MT_CPU_AMX_INT8;
    }
    if (sub >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      if (zmm && (a & (1u << 5))) f |= MT_CPU_AVX512_BF16;
    }
  }
  cpu.features = f;
#endif
}

uint32_t mt_cpu_features(void) {
  pthread_once(&cpu_once, detect);
  return cpu.features;
}
const char *mt_cpu_vendor(void) {
  pthread_once(&cpu_once, detect);
  return cpu.vendor;
}
int mt_cpu_family(void) {
  pthread_once(&cpu_once, detect);
  return cpu.family;
}
const char *mt_cpu_name(void) {
  pthread_once(&cpu_once, detect);
  return cpu.name;
}

/* The vector level a set of features reaches, as the BLAS kernel sets are graded. */
int mt_cpu_level(uint32_t f) {
  const uint32_t avx512 = MT_CPU_AVX512F | MT_CPU_AVX512DQ | MT_CPU_AVX512CD | MT_CPU_AVX512BW | MT_CPU_AVX512VL;
  if ((f & avx512) == avx512 && (f & MT_CPU_AVX2) && (f & MT_CPU_FMA)) return MT_CPU_LEVEL_AVX512;
  if ((f & (MT_CPU_AVX2 | MT_CPU_FMA)) == (MT_CPU_AVX2 | MT_CPU_FMA)) return MT_CPU_LEVEL_AVX2;
  if (f & MT_CPU_AVX) return MT_CPU_LEVEL_AVX;
  if (f & (MT_CPU_SSE3 | MT_CPU_SSSE3 | MT_CPU_SSE4_1 | MT_CPU_SSE4_2)) return MT_CPU_LEVEL_SSE;
  return MT_CPU_LEVEL_NONE; /* nothing known (not x86) */
}

const char *mt_cpu_level_name(int level) {
  switch (level) {
  case MT_CPU_LEVEL_SSE: return "sse";
  case MT_CPU_LEVEL_AVX: return "avx";
  case MT_CPU_LEVEL_AVX2: return "avx2";
  case MT_CPU_LEVEL_AVX512: return "avx512";
  default: return "none";
  }
}

/* ---------------------------------------------------------------- how many CPUs we may use */
static int affinity_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static int read_text(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t got = fread(buf, 1, n - 1, f);
  fclose(f);
  buf[got] = 0;
  return got > 0;
}

/* CPUs a quota allows, rounded up; 0: no quota */
static int quota_cpus(double quota, double period) {
  if (quota <= 0 || period <= 0) return 0;
  double n = quota / period;
  int r = (int)n;
  if (r < n) r++;
  return r < 1 ? 1 : r;
}

/* cgroup v2: the smallest cpu.max quota on the way from the process's cgroup up to the root */
static int v2_limit(const char *root, const char *rel) {
  char dir[1024], path[1100], buf[128];
  snprintf(dir, sizeof dir, "%s/sys/fs/cgroup%s", root, rel);
  int best = 0;
  for (;;) {
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    if (read_text(path, buf, sizeof buf)) {
      double q, p;
      if (sscanf(buf, "%lf %lf", &q, &p) == 2) { /* "max 100000" does not scan: no quota */
        int n = quota_cpus(q, p);
        if (n && (!best || n < best)) best = n;
      }
    }
    char *slash = strrchr(dir, '/');
    size_t base = strlen(root) + strlen("/sys/fs/cgroup");
    if (!slash || (size_t)(slash - dir) < base) break;
    *slash = 0;
  }
  return best;
}

/* cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us of the cpu controller's group (or, inside a
 * container whose view starts at its own group, the mount's root) */
static int v1_limit(const char *root, const char *rel) {
  static const char *const mounts[] = {"cpu,cpuacct", "cpu", "cpuacct,cpu"};
  char path[1200], buf[64];
  for (unsigned m = 0; m < sizeof mounts / sizeof *mounts; m++)
    for (int at_root = 0; at_root < 2; at_root++) {
      const char *r = at_root ? "" : rel;
      snprintf(path, sizeof path, "%s/sys/fs/cgroup/%s%s/cpu.cfs_quota_us", root, mounts[m], r);
      if (!read_text(path, buf, sizeof buf)) continue;
      double q = strtod(buf, NULL);
      snprintf(path, sizeof path, "%s/sys/fs/cgroup/%s%s/cpu.cfs_period_us", root, mounts[m], r);
      if (!read_text(path, buf, sizeof buf)) continue;
      return quota_cpus(q, strtod(buf, NULL));
    }
  return 0;
}

int mt_cgroup_cpu_limit(const char *root) {
  if (!root) root = "";
  char path[1024], buf[4096];
  snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
  if (!read_text(path, buf, sizeof buf)) return 0;
  int limit = 0;
  /* lines "id:controllers:path"; v2 is "0::path", v1's cpu controller names "cpu" in its list */
  for (char *line = buf; line && *line;) {
    char *next = strchr(line, '\n');
    if (next) *next++ = 0;
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2) {
      *c2 = 0;
      const char *ctrls = c1 + 1, *rel = c2 + 1;
      if (strcmp(rel, "/") == 0) rel = "";
      int n = 0;
      if (!*ctrls) {
        n = v2_limit(root, rel);
      } else {
        char list[256];
        snprintf(list, sizeof list, ",%s,", ctrls);
        if (strstr(list, ",cpu,")) n = v1_limit(root, rel);
      }
      if (n && (!limit || n < limit)) limit = n;
    }
    line = next;
  }
  return limit;
}

int mt_cpu_count_allowed(void) {
  int n = affinity_cpus();
  int q = mt_cgroup_cpu_limit("");
  return q && q < n ? q : n;
}

int mt_cpu_kernel_level(void) {
  static int level = -1;
  int l = __atomic_load_n(&level, __ATOMIC_RELAXED);
  if (l >= 0) return l;
  const uint32_t avx2_fma = MT_CPU_AVX2 | MT_CPU_FMA;
  const uint32_t avx512 = MT_CPU_AVX512F | MT_CPU_AVX512DQ | MT_CPU_AVX512BW | MT_CPU_AVX512VL;
  uint32_t f = mt_cpu_features();
  int best = MT_CPU_LEVEL_NONE;
  if ((f & avx2_fma) == avx2_fma) best = (f & avx512) == avx512 ? MT_CPU_LEVEL_AVX512 : MT_CPU_LEVEL_AVX2;
  const char *env = getenv("MOONTORCH_VMATH");
  l = best;
  if (env && (strcmp(env, "0") == 0 || strcmp(env, "scalar") == 0)) l = MT_CPU_LEVEL_NONE;
  else if (env && strcmp(env, "avx2") == 0 && best > MT_CPU_LEVEL_AVX2) l = MT_CPU_LEVEL_AVX2;
  __atomic_store_n(&level, l, __ATOMIC_RELAXED);
  return l;
}

const char *mt_kernels_simd(void) {
  int l = mt_cpu_kernel_level();
  return l == MT_CPU_LEVEL_AVX512 ? "avx512" : l == MT_CPU_LEVEL_AVX2 ? "avx2" : "scalar";
}

const char *mt_kernels_bf16(void) {
  int l = mt_cpu_kernel_level();
  if (l >= MT_CPU_LEVEL_AVX512 && mt_cpu_has(MT_CPU_AVX512_BF16)) return "avx512_bf16";
  return l >= MT_CPU_LEVEL_AVX2 ? "avx2" : "scalar";
}

const char *mt_kernels_int8(void) {
  int l = mt_cpu_kernel_level();
  if (l >= MT_CPU_LEVEL_AVX512 && mt_cpu_has(MT_CPU_AVX512_VNNI)) return "avx512_vnni";
  return l >= MT_CPU_LEVEL_AVX2 ? "avx2" : "scalar";
}
