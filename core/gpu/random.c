/* random.c -- the CUDA backend's random fills: each device's Philox generator (PyTorch's CUDA generator: a
 * seed and an offset, 16 bytes of state), the offset advanced by what each launch draws, and randperm
 * (random keys sorted) and multinomial (without replacement: the probabilities over exponential draws,
 * the largest first, as PyTorch's CUDA multinomial; with it: an inverse CDF a sample) composed on the
 * device. */
#include "gpu.h"
#include "../generator.h"

#include <pthread.h>
#include <stdlib.h>

/* CUDA's engine (core/generator.h): PyTorch's CUDA generator, a seed and an offset (the Philox counter's
 * high half: how many 32-bit draws each thread has used); its state as bytes is PyTorch's: 16 bytes, the
 * seed then the offset, little-endian */
typedef struct philox_engine {
  uint64_t seed, offset;
} philox_engine;
static void philox_seed(void *e, uint64_t seed) {
  philox_engine *p = e;
  p->seed = seed;
  p->offset = 0;
}
static uint64_t philox_initial_seed(const void *e) { return ((const philox_engine *)e)->seed; }
static void put64(uint8_t *b, uint64_t v) {
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *b) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)b[i] << (8 * i);
  return v;
}
static void philox_get_state(const void *e, uint8_t *buf) {
  const philox_engine *p = e;
  put64(buf, p->seed);
  put64(buf + 8, p->offset);
}
static mt_status philox_set_state(void *e, const uint8_t *buf, size_t n) {
  if (n != 16) return mt_error(MT_EINVAL, "set_rng_state: RNG state is wrong size (expected 16 bytes, got %zu)", n);
  uint64_t off = get64(buf + 8);
  if (off % 4) return mt_error(MT_EINVAL, "set_rng_state: offset must be a multiple of 4");
  philox_engine *p = e;
  p->seed = get64(buf);
  p->offset = off;
  return MT_OK;
}
const mt_rng_engine mt_cuda_rng = {
    .name = "philox4x32-10",
    .size = sizeof(philox_engine),
    .state_size = 16,
    .seed = philox_seed,
    .initial_seed = philox_initial_seed,
    .get_state = philox_get_state,
    .set_state = philox_set_state,
};

enum { R_UNIFORM, R_NORMAL, R_BERNOULLI, R_EXPONENTIAL, R_RANDOM, R_RANDOM64, R_BERNOULLI_T, R_KEYS };

/* one fill of t (with p: bernoulli's probabilities) on the device's generator */
static mt_status fill(mt_tensor *t, const mt_tensor *p, mt_gpu_random *r, mt_generator *g, const char *op) {
  if (t->_numel == 0) return MT_OK;
  mt_gpu_iter it;
  if (p) mt_gpu_iter_make(&it, (const mt_tensor *[]){t, p}, 2);
  else mt_gpu_iter_make(&it, (const mt_tensor *[]){t}, 1);
  it.numel = t->_numel;
  philox_engine *pg = mt_generator_engine(g); /* the front door hands the device's generator */
  void *s = mt_gpu_stream_of(t);
  pthread_mutex_lock(&g->lock);
  r->seed = pg->seed;
  r->offset = pg->offset;
  uint64_t used = 0;
  int bad = mt_gpu_k->random(&it, r, &used, s);
  pg->offset += used;
  pthread_mutex_unlock(&g->lock);
  if (bad) return mt_error(MT_EDTYPE, "%s: not implemented for '%s' on device cuda", op, mt_dtype_name(t->_dtype));
  return MT_OK;
}

mt_status mt_gpu_uniform(mt_tensor *t, double from, double to, mt_generator *g) {
  mt_gpu_random r = {.kind = R_UNIFORM, .doubles = t->_dtype == MT_FLOAT64, .a = to - from, .b = from};
  return fill(t, NULL, &r, g, "uniform_");
}

mt_status mt_gpu_normal(mt_tensor *t, double mean, double std, mt_generator *g) {
  mt_gpu_random r = {.kind = R_NORMAL, .doubles = t->_dtype == MT_FLOAT64, .a = mean, .b = std};
  return fill(t, NULL, &r, g, "normal_");
}

mt_status mt_gpu_random_slot(mt_tensor *t, int64_t from, int64_t to, mt_generator *g) {
  uint64_t range = to == INT64_MIN ? (1ULL << 63) - (uint64_t)from : (uint64_t)to - (uint64_t)from;
  int wide = range >= (1ULL << 32);
  mt_gpu_random r = {.kind = wide ? R_RANDOM64 : R_RANDOM, .doubles = wide, .range = range, .from = from};
  return fill(t, NULL, &r, g, "random_");
}

mt_status mt_gpu_bernoulli(mt_tensor *t, double p, mt_generator *g) {
  mt_gpu_random r = {.kind = R_BERNOULLI, .doubles = t->_dtype == MT_FLOAT64, .a = p};
  return fill(t, NULL, &r, g, "bernoulli_");
}

mt_status mt_gpu_bernoulli_tensor(mt_tensor *t, const mt_tensor *p, mt_generator *g) {
  mt_gpu_random r = {.kind = R_BERNOULLI_T, .doubles = p->_dtype == MT_FLOAT64};
  return fill(t, p, &r, g, "bernoulli");
}

mt_status mt_gpu_exponential(mt_tensor *t, double lambd, mt_generator *g) {
  mt_gpu_random r = {.kind = R_EXPONENTIAL, .doubles = t->_dtype == MT_FLOAT64, .a = lambd};
  return fill(t, NULL, &r, g, "exponential_");
}

/* randperm: n random 64-bit keys, sorted; the positions are the permutation */
mt_status mt_gpu_randperm(mt_tensor *out, int64_t base, mt_generator *g) {
  int64_t n = out->_numel;
  if (n == 0) return MT_OK;
  const char *op = "randperm";
  mt_tensor *keys = NULL, *vals = NULL, *idx = NULL;
  mt_status s = mt_gpu_new(out->_device_index, &n, 1, MT_INT64, op, &keys);
  if (s == MT_OK) {
    mt_gpu_random r = {.kind = R_KEYS, .doubles = 1};
    s = fill(keys, NULL, &r, g, op);
  }
  if (s == MT_OK) s = mt_gpu_new(out->_device_index, &n, 1, MT_INT64, op, &vals);
  if (s == MT_OK) s = mt_gpu_new(out->_device_index, &n, 1, MT_INT64, op, &idx);
  if (s == MT_OK) s = mt_gpu_sort_slot(vals, idx, keys, 0, 0, base);
  if (s == MT_OK) s = mt_gpu_copy(out, idx);
  if (keys) mt_tensor_release(keys);
  if (vals) mt_tensor_release(vals);
  if (idx) mt_tensor_release(idx);
  return s;
}

mt_status mt_gpu_multinomial(mt_tensor *out, const mt_tensor *probs, int replacement, int64_t base,
                             mt_generator *g) {
  const char *op = "multinomial";
  int dev = probs->_device_index;
  int64_t rows = probs->_ndim == 2 ? probs->_sizes[0] : 1, k = probs->_sizes[probs->_ndim - 1];
  int64_t ns = out->_sizes[out->_ndim - 1];
  int64_t shape[2] = {rows, k};
  mt_tensor *p = NULL, *a = NULL, *b = NULL, *c = NULL;
  mt_status s = mt_gpu_new(dev, shape, 2, MT_FLOAT64, op, &p);
  if (s == MT_OK) s = mt_gpu_copy(p, probs); /* the probabilities as (rows, k) float64 */
  if (s == MT_OK && replacement) {
    int64_t us[2] = {rows, ns};
    s = mt_gpu_new(dev, shape, 2, MT_FLOAT64, op, &a);
    if (s == MT_OK) s = mt_gpu_cumulative(a, p, 1, 0);
    if (s == MT_OK) s = mt_gpu_new(dev, us, 2, MT_FLOAT64, op, &b);
    if (s == MT_OK) s = mt_gpu_uniform(b, 0, 1, g);
    if (s == MT_OK && mt_gpu_k->multinomial((const double *)a->_data, (const double *)b->_data,
                                            (int64_t *)out->_data, rows, k, ns, base, mt_gpu_stream_of(out)))
      s = mt_error(MT_EDTYPE, "multinomial: no kernel");
  } else if (s == MT_OK) {
    /* p / E, E ~ exponential(1): the ns largest, in order */
    s = mt_gpu_new(dev, shape, 2, MT_FLOAT64, op, &a);
    if (s == MT_OK) s = mt_gpu_exponential(a, 1, g);
    if (s == MT_OK) s = mt_gpu_binary(MT_OP_DIV, a, p, a);
    int64_t ks[2] = {rows, ns};
    if (s == MT_OK) s = mt_gpu_new(dev, ks, 2, MT_FLOAT64, op, &b);
    if (s == MT_OK) s = mt_gpu_new(dev, ks, 2, MT_INT64, op, &c);
    if (s == MT_OK) s = mt_gpu_sort_slot(b, c, a, 1, 1, base);
    if (s == MT_OK) {
      /* out is (ns) or (rows, ns), contiguous: the positions in its shape */
      mt_tensor *view = NULL;
      s = mt_new_view(c, out->_sizes, out->_strides, out->_ndim, 0, &view);
      if (s == MT_OK) s = mt_gpu_copy(out, view);
      if (view) mt_tensor_release(view);
    }
  }
  if (p) mt_tensor_release(p);
  if (a) mt_tensor_release(a);
  if (b) mt_tensor_release(b);
  if (c) mt_tensor_release(c);
  return s;
}

/* the Philox block function of the runtime in use (specs check it against Random123's known answers) */
void mt_gpu_emu_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
MT_API void mt_cuda_philox(const uint32_t *ctr, const uint32_t *key, uint32_t *out) { mt_gpu_emu_philox(ctr, key, out); }
