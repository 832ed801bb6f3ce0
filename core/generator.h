/* generator.h -- random generators, device-neutral (issue 21: the generator API is no longer the CPU
 * backend's). A generator (`mt_generator`, opaque in the public header) belongs to one device and holds
 * the state of that device type's engine: the backend names its engine (core/backend.h, `rng`); the CPU's
 * is PyTorch's CPU generator (mt19937 and PyTorch's transforms, core/tensor/random.c), CUDA's will be
 * PyTorch's Philox4x32-10 (seed and offset, core/gpu/). core/ops/generator.c holds the public API (new,
 * free, the default generator of each device, seeding, the state as bytes); the random fills' front doors
 * (core/ops/random.c) hand the kernels a generator of the tensor's own device, never NULL, and each
 * kernel locks it while it draws. Internal to the core. */
#ifndef MT_GENERATOR_H
#define MT_GENERATOR_H

#include "mt_internal.h"

#include <pthread.h>

/* One device type's random engine. `size` bytes of engine state live in each generator (aligned for any
 * type); the state as bytes (torch's get_state / set_state) is `state_size` long. Called with the
 * generator's lock held. */
typedef struct mt_rng_engine {
  const char *name; /* "mt19937", "philox4x32-10" */
  size_t size;
  size_t state_size;
  void (*seed)(void *engine, uint64_t seed);
  uint64_t (*initial_seed)(const void *engine);
  void (*get_state)(const void *engine, uint8_t *buf);                 /* state_size bytes */
  mt_status (*set_state)(void *engine, const uint8_t *buf, size_t n); /* checked: a message on failure */
} mt_rng_engine;

struct mt_generator {
  pthread_mutex_t lock;
  mt_device device;
  const mt_rng_engine *engine;
  int is_default; /* the device's default generator: mt_generator_free leaves it */
  _Alignas(16) unsigned char state[];
};

/* the engine state of g, as its kernels see it */
static inline void *mt_generator_engine(mt_generator *g) { return g->state; }

#endif
