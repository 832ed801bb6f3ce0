/* generator.c -- the random generators' public API, for any device (issue 21: it was the CPU
 * backend's). A generator holds the state of its device's engine (core/generator.h; the backend names
 * the engine: the CPU's is PyTorch's CPU generator, core/tensor/random.c). Each device (type and index)
 * has a default generator, made on first use; mt_manual_seed_all seeds the CPU's and every device's,
 * as torch.manual_seed does (devices whose default is made later start from that seed, as
 * torch.cuda.manual_seed_all queues its seed until CUDA starts). torch.cuda.manual_seed,
 * get_rng_state and set_rng_state are the default generator of a CUDA device through these
 * functions. */
#include "dispatch.h"

#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SEED 67280421310721ULL /* PyTorch's default_rng_seed_val */
#define MAX_INDEX 64                   /* device indices with a default generator */

static const mt_rng_engine *engine_of(mt_device d) {
  const mt_backend *b = d.type >= 0 && d.type < MT_DEVICE_TYPES ? mt_backends[d.type] : NULL;
  return b ? b->rng : NULL;
}

static mt_generator *make(mt_device d, const mt_rng_engine *e, uint64_t seed, int is_default) {
  mt_generator *g = calloc(1, sizeof *g + e->size);
  if (!g) return NULL;
  pthread_mutex_init(&g->lock, NULL);
  g->device = d;
  g->engine = e;
  g->is_default = is_default;
  e->seed(g->state, seed);
  return g;
}

/* the device a generator may be made for: one with a backend that has an engine */
static mt_status engine_for(const mt_device *device, const char *op, mt_device *d, const mt_rng_engine **e) {
  MT_TRY(mt_device_arg(device, op, d));
  *e = engine_of(*d);
  if (!*e)
    return mt_error(MT_EDEVICE, "%s: Device type %s is not supported for torch.Generator() api.", op,
                    mt_device_name(d->type));
  return MT_OK;
}

mt_status mt_generator_new_on(const mt_device *device, uint64_t seed, mt_generator **out) {
  if (!out) return mt_error(MT_EINVAL, "Generator: out is NULL");
  mt_device d;
  const mt_rng_engine *e;
  MT_TRY(engine_for(device, "Generator", &d, &e));
  mt_generator *g = make(d, e, seed, 0);
  if (!g) return mt_error(MT_ENOMEM, "Generator: out of memory");
  *out = g;
  return MT_OK;
}

mt_status mt_generator_new(uint64_t seed, mt_generator **out) { return mt_generator_new_on(NULL, seed, out); }

void mt_generator_free(mt_generator *g) {
  if (!g || g->is_default) return;
  pthread_mutex_destroy(&g->lock);
  free(g);
}

/* ---------------------------------------------------------------- the default generators */
static pthread_mutex_t defaults_lock = PTHREAD_MUTEX_INITIALIZER;
static mt_generator *defaults[MT_DEVICE_TYPES][MAX_INDEX]; /* atomic once set */
static int seeded_all;                                    /* mt_manual_seed_all was called: ... */
static uint64_t seed_all;                                 /* ... with this seed */

static mt_generator *default_of(mt_device d, const mt_rng_engine *e) {
  mt_generator *g = __atomic_load_n(&defaults[d.type][d.index], __ATOMIC_ACQUIRE);
  if (g) return g;
  pthread_mutex_lock(&defaults_lock);
  g = defaults[d.type][d.index];
  if (!g) {
    g = make(d, e, seeded_all ? seed_all : DEFAULT_SEED, 1);
    if (g) __atomic_store_n(&defaults[d.type][d.index], g, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&defaults_lock);
  return g;
}

mt_status mt_default_generator_on(const mt_device *device, mt_generator **out) {
  if (!out) return mt_error(MT_EINVAL, "default_generator: out is NULL");
  mt_device d;
  const mt_rng_engine *e;
  MT_TRY(engine_for(device, "default_generator", &d, &e));
  if (d.index >= MAX_INDEX) return mt_error(MT_EDEVICE, "default_generator: device index %d is too large", d.index);
  mt_generator *g = default_of(d, e);
  if (!g) return mt_error(MT_ENOMEM, "default_generator: out of memory");
  *out = g;
  return MT_OK;
}

mt_generator *mt_default_generator(void) {
  mt_device cpu = MT_DEVICE_CPU;
  return default_of(cpu, engine_of(cpu)); /* NULL only when out of memory at the first call */
}

static inline mt_generator *gen_or_default(mt_generator *g) { return g ? g : mt_default_generator(); }

void mt_generator_manual_seed(mt_generator *g, uint64_t seed) {
  g = gen_or_default(g);
  if (!g) return;
  pthread_mutex_lock(&g->lock);
  g->engine->seed(g->state, seed);
  pthread_mutex_unlock(&g->lock);
}

void mt_manual_seed_all(uint64_t seed) {
  pthread_mutex_lock(&defaults_lock);
  seeded_all = 1;
  seed_all = seed;
  pthread_mutex_unlock(&defaults_lock);
  mt_generator_manual_seed(NULL, seed); /* the CPU's, made if need be */
  for (int t = 0; t < MT_DEVICE_TYPES; t++)
    for (int i = 0; i < MAX_INDEX; i++) {
      mt_generator *g = __atomic_load_n(&defaults[t][i], __ATOMIC_ACQUIRE);
      if (g) mt_generator_manual_seed(g, seed);
    }
}

/* A nondeterministic seed. Kept below 2^53 so that it survives a trip through a Lua number
 * (torch.seed() returns it and torch.manual_seed(s) must reproduce the stream). */
static uint64_t fresh_seed(void) {
  uint64_t s = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = false;
  if (fd >= 0) {
    ok = read(fd, &s, sizeof s) == (ssize_t)sizeof s;
    close(fd);
  }
  if (!ok) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    static uint64_t counter;
    s = ((uint64_t)ts.tv_sec * 1000000007ULL) ^ (uint64_t)ts.tv_nsec ^
        (__atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED)) ^ (uint64_t)(uintptr_t)&s;
    s ^= s >> 29;
    s *= 0xbf58476d1ce4e5b9ULL;
    s ^= s >> 32;
  }
  return s & ((1ULL << 53) - 1);
}

uint64_t mt_generator_seed(mt_generator *g) {
  uint64_t s = fresh_seed();
  mt_generator_manual_seed(g, s);
  return s;
}

uint64_t mt_generator_initial_seed(mt_generator *g) {
  g = gen_or_default(g);
  if (!g) return 0;
  pthread_mutex_lock(&g->lock);
  uint64_t s = g->engine->initial_seed(g->state);
  pthread_mutex_unlock(&g->lock);
  return s;
}

mt_status mt_generator_device(const mt_generator *g, mt_device *out) {
  if (!out) return mt_error(MT_EINVAL, "Generator: out is NULL");
  *out = g ? g->device : (mt_device)MT_DEVICE_CPU;
  return MT_OK;
}

/* ---------------------------------------------------------------- the state as bytes */
size_t mt_generator_state_size(void) { return mt_cpu_backend.rng->state_size; }

size_t mt_generator_state_bytes(mt_generator *g) {
  g = gen_or_default(g);
  return g ? g->engine->state_size : 0;
}

mt_status mt_generator_get_state(mt_generator *g, uint8_t *buf, size_t n) {
  g = gen_or_default(g);
  if (!g) return mt_error(MT_ENOMEM, "get_rng_state: out of memory");
  size_t need = g->engine->state_size;
  if (!buf || n < need)
    return mt_error(MT_EINVAL, "get_rng_state: the buffer must hold %zu bytes, got %zu", need, buf ? n : 0);
  pthread_mutex_lock(&g->lock);
  g->engine->get_state(g->state, buf);
  pthread_mutex_unlock(&g->lock);
  return MT_OK;
}

mt_status mt_generator_set_state(mt_generator *g, const uint8_t *buf, size_t n) {
  g = gen_or_default(g);
  if (!g) return mt_error(MT_ENOMEM, "set_rng_state: out of memory");
  pthread_mutex_lock(&g->lock);
  mt_status s = g->engine->set_state(g->state, buf, n);
  pthread_mutex_unlock(&g->lock);
  return s;
}

/* ---------------------------------------------------------------- for the random fills' front doors */
mt_status mt_generator_for(const mt_tensor *t, mt_generator *g, const char *op, mt_generator **out) {
  mt_device d = mt_device_of(t);
  const mt_rng_engine *e = engine_of(d);
  if (!e) { /* a device that draws nothing (meta): its kernels ignore the generator */
    *out = g;
    return MT_OK;
  }
  if (!g) {
    if (d.index < 0 || d.index >= MAX_INDEX) return mt_error(MT_EDEVICE, "%s: device index %d is too large", op, d.index);
    g = default_of(d, e);
    if (!g) return mt_error(MT_ENOMEM, "%s: out of memory", op);
  } else if (g->device.type != d.type || (d.type != MT_CPU && g->device.index != d.index)) {
    return mt_error(MT_EDEVICE, "%s: Expected a '%s' device type for generator but found '%s'", op,
                    d.type == g->device.type ? mt_device_str(d) : mt_device_name(d.type),
                    d.type == g->device.type ? mt_device_str(g->device) : mt_device_name(g->device.type));
  }
  *out = g;
  return MT_OK;
}
