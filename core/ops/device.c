/* device.c -- devices in the dispatch layer: the registry of backends (one per device type this
 * build has), device arguments checked against the devices a backend has, new tensors on a device,
 * out= results resized on their device, the device checks of the front doors, each device's memory
 * and the collections it asks for, the factories of empty and full tensors, and the public device
 * functions. Streams and events are stream.c. */
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- the registry */
/* the CPU's and meta's; CUDA's is core/gpu's choice (mt_cuda_backend_select), installed at load */
const mt_backend *mt_backends[MT_DEVICE_TYPES] = {
    [MT_CPU] = &mt_cpu_backend,
    [MT_META] = &mt_meta_backend,
};
static const mt_backend *built_cuda; /* what the CUDA slot holds when the fake device is not in it */

/* A tensor can only be made on a device with a backend, but its device fields are writable from
 * Lua: a device without one answers as a backend that holds no data and has no kernels. */
const mt_backend mt_absent_backend = {.name = "absent", .holds_data = false};

/* The kernel tables the front doors call through, one per device type: each backend's own, with a
 * slot it leaves NULL filled by one that reports MT_EDEVICE (a front door checks first that the
 * backend runs its op, naming the op and the device; this is what a helper reaches otherwise). */
static mt_status absent_kernel(const char *slot) {
  return mt_error(MT_EDEVICE, "%s: this tensor's device has no such kernel", slot);
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define MT_ABSENT_(slot, params) \
  static mt_status absent_##slot params { return absent_kernel(#slot); }
MT_KERNEL_LIST(MT_ABSENT_)
#undef MT_ABSENT_
#pragma GCC diagnostic pop

static mt_kernels complete[MT_DEVICE_TYPES];
const mt_kernels *const mt_device_kernels[MT_DEVICE_TYPES] = {&complete[0], &complete[1], &complete[2]};
_Static_assert(MT_DEVICE_TYPES == 3, "one complete kernel table per device type");

static void complete_table(int d) {
  const mt_kernels *k = mt_backends[d] ? mt_backends[d]->kernels : NULL;
#define MT_FILL_(slot, params) complete[d].slot = k && k->slot ? k->slot : absent_##slot;
  MT_KERNEL_LIST(MT_FILL_)
#undef MT_FILL_
}

/* MOONTORCH_FAKE_CUDA=N[:bytes]: the fake device in the CUDA slot from the start (specs, and scripts
 * run on it: the demo with --device cuda) */
static void fake_from_environment(void) {
  const char *env = getenv("MOONTORCH_FAKE_CUDA");
  if (!env || !*env) return;
  char *end;
  long n = strtol(env, &end, 10);
  long long bytes = *end == ':' ? strtoll(end + 1, NULL, 10) : 0;
  if (n > 0 && mt_fake_cuda_install((int)n, bytes) != MT_OK)
    fprintf(stderr, "moontorch: MOONTORCH_FAKE_CUDA=%s: %s\n", env, mt_last_error());
}

__attribute__((constructor)) static void complete_tables(void) {
#ifdef MT_HAVE_GPU
  mt_backends[MT_CUDA] = built_cuda = mt_cuda_backend_select();
#endif
  for (int d = 0; d < MT_DEVICE_TYPES; d++) complete_table(d);
  fake_from_environment();
}

/* the fake device in the CUDA slot, or out of it again (the built backend, if any, back) */
mt_status mt_fake_cuda_install(int ndevices, int64_t bytes) {
  if (ndevices < 0 || ndevices > MT_MAX_DEVICES)
    return mt_error(MT_EINVAL, "fake_cuda_install: between 0 and %d devices, got %d", MT_MAX_DEVICES, ndevices);
  if (mt_backends[MT_CUDA] == &mt_fake_backend) {
    for (int i = 0; i < MT_MAX_DEVICES; i++) {
      const mt_device_bytes *b = mt_device_bytes_of(MT_CUDA, i);
      if (b->allocs != b->frees)
        return mt_error(MT_ESTATE, "fake_cuda_install: tensors still live on the fake device cuda:%d", i);
    }
  }
  if (ndevices == 0) {
    mt_backends[MT_CUDA] = built_cuda;
  } else {
    MT_TRY(mt_fake_setup(ndevices, bytes));
    mt_backends[MT_CUDA] = &mt_fake_backend;
  }
  complete_table(MT_CUDA);
  return MT_OK;
}

static const char *const type_names[MT_DEVICE_TYPES] = {[MT_CPU] = "cpu", [MT_CUDA] = "cuda", [MT_META] = "meta"};
static const char *const type_titles[MT_DEVICE_TYPES] = {[MT_CPU] = "CPU", [MT_CUDA] = "CUDA", [MT_META] = "meta"};

const char *mt_device_name(int type) { return type >= 0 && type < MT_DEVICE_TYPES ? type_names[type] : "?"; }

const char *mt_device_backend(int type) {
  return type >= 0 && type < MT_DEVICE_TYPES && mt_backends[type] ? mt_backends[type]->name : NULL;
}

const char *mt_device_str(mt_device d) {
  static _Thread_local char ring[4][32];
  static _Thread_local int next;
  char *buf = ring[next++ & 3];
  if (d.type == MT_CUDA && d.index >= 0) snprintf(buf, sizeof ring[0], "cuda:%d", d.index);
  else snprintf(buf, sizeof ring[0], "%s", mt_device_name(d.type));
  return buf;
}

/* ---------------------------------------------------------------- devices of a type */
static int count_of(const mt_backend *b) {
  if (!b) return 0;
  int n = b->device_count ? b->device_count() : 1;
  return n < 0 ? 0 : n > MT_MAX_DEVICES ? MT_MAX_DEVICES : n;
}

int mt_device_count(int type) {
  return type >= 0 && type < MT_DEVICE_TYPES ? count_of(mt_backends[type]) : 0;
}

int mt_device_current(int type) {
  const mt_backend *b = type >= 0 && type < MT_DEVICE_TYPES ? mt_backends[type] : NULL;
  return b && b->current_device && count_of(b) > 0 ? b->current_device() : 0;
}

mt_status mt_device_arg(const mt_device *device, const char *op, mt_device *out) {
  if (!device) {
    *out = MT_DEVICE_CPU;
    return MT_OK;
  }
  if (device->type < 0 || device->type >= MT_DEVICE_TYPES || device->index < -1)
    return mt_error(MT_EDEVICE, "%s: unknown device (type %d, index %d)", op, device->type, device->index);
  const mt_backend *b = mt_backends[device->type];
  if (!b) {
    if (device->type == MT_CUDA)
      return mt_error(MT_EDEVICE, "%s: device %s is not available: moontorch was built without CUDA", op,
                      mt_device_str(*device));
    return mt_error(MT_EDEVICE, "%s: device %s is not available in this build", op, mt_device_str(*device));
  }
  int n = count_of(b);
  const char *title = type_titles[device->type];
  const char *why = n == 0 && b->unavailable ? b->unavailable() : NULL;
  if (device->index < 0) {
    if (n == 0) return mt_error(MT_EDEVICE, "%s: no %s device is available (0 devices%s%s)", op, title,
                                why ? ": " : "", why ? why : "");
    *out = (mt_device){device->type, b->current_device ? b->current_device() : 0};
    return MT_OK;
  }
  if (device->index >= n)
    return mt_error(MT_EDEVICE, "%s: %s device %d is not available (%d device%s%s%s)", op, title, device->index, n,
                    n == 1 ? "" : "s", why ? ": " : "", why ? why : "");
  *out = *device;
  return MT_OK;
}

int mt_device_available(const mt_device *device) {
  mt_device d = MT_DEVICE_CPU;
  mt_status s = mt_device_arg(device, "available", &d);
  if (s) mt_clear_error();
  return s == MT_OK;
}

mt_status mt_device_check(const mt_device *device) {
  mt_device d = MT_DEVICE_CPU;
  return mt_device_arg(device, "device", &d);
}

mt_status mt_device_set_current(const mt_device *device) {
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "set_device", &d));
  const mt_backend *b = mt_backends[d.type];
  return b->set_device ? b->set_device(d.index) : MT_OK;
}

const char *mt_device_describe(int type) {
  static _Thread_local char ring[2][512];
  static _Thread_local int next;
  const mt_backend *b = type >= 0 && type < MT_DEVICE_TYPES ? mt_backends[type] : NULL;
  if (!b) return NULL;
  char *buf = ring[next++ & 1];
  buf[0] = 0;
  if (b->describe) b->describe(buf, sizeof ring[0]);
  return buf;
}

/* ---------------------------------------------------------------- new tensors */
mt_status mt_new_device(mt_device dev, const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **out) {
  const mt_backend *b = dev.type >= 0 && dev.type < MT_DEVICE_TYPES ? mt_backends[dev.type] : NULL;
  if (!b || dev.index < 0 || dev.index >= MT_MAX_DEVICES) return mt_device_arg(&dev, op, &dev); /* the error */
  if (!b->memory) return mt_new_cpu(sizes, ndim, dtype, op, out);
  return mt_new_with(b->memory, dev.type, dev.index, sizes, ndim, dtype, op, out);
}

/* bytes [0, n) of storage `from` into storage `to`, both on one device: through its backend's
 * transfer (a memcpy on the CPU), as byte tensors */
static mt_status keep_bytes(mt_storage *to, mt_storage *from, size_t n, const char *op) {
  if (!n || !from->_data || !to->_data) return MT_OK;
  const mt_backend *b = mt_backends[from->_device_type];
  if (!b || !b->holds_data) return MT_OK;
  if (!b->transfer) {
    memcpy(to->_data, from->_data, n);
    return MT_OK;
  }
  int64_t len = (int64_t)n, one = 1;
  mt_tensor src = {0}, dst = {0};
  src._storage = from;
  src._dtype = MT_UINT8;
  src._device_type = from->_device_type;
  src._device_index = from->_device_index;
  dst = src;
  dst._storage = to;
  mt_tensor *vs = NULL, *vd = NULL;
  mt_status s = mt_new_view(&src, &len, &one, 1, 0, &vs);
  if (s == MT_OK) s = mt_new_view(&dst, &len, &one, 1, 0, &vd);
  if (s == MT_OK) s = b->transfer(vd, vs, 0);
  mt_tensor_release(vs);
  mt_tensor_release(vd);
  if (s) return mt_error(s, "%s: keeping out's values while resizing it: %s", op, mt_last_error());
  return MT_OK;
}

mt_status mt_prepare_out(mt_tensor *out, const int64_t *sizes, int ndim, int dtype, const char *op) {
  MT_TRY(mt_check_tensor(out, op, "out"));
  if (out->_dtype != dtype)
    return mt_error(MT_EDTYPE, "%s: result type %s can't be cast to the desired output type %s", op,
                    mt_type_title(dtype), mt_type_title(out->_dtype));
  bool same = out->_ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = out->_sizes[i] == sizes[i];
  if (same) return MT_OK;
  mt_storage *old = NULL;
  MT_TRY(mt_resize_out(out, sizes, ndim, op, &old));
  if (!old) return MT_OK;
  mt_status s = keep_bytes(out->_storage, old, old->_nbytes, op);
  mt_storage_release(old);
  return s;
}

mt_status mt_out_or_new(mt_tensor *out, mt_device dev, const int64_t *sizes, int ndim, int dtype, const char *op,
                        mt_tensor **dst) {
  if (!out) return mt_new(dev, sizes, ndim, dtype, op, dst);
  MT_TRY(mt_check_tensor(out, op, "out"));
  if (out->_device_type != dev.type || out->_device_index != dev.index)
    return mt_error(MT_EDEVICE, "%s: expected out on device %s, found it on %s", op, mt_device_str(dev),
                    mt_device_str(mt_device_of(out)));
  MT_TRY(mt_prepare_out(out, sizes, ndim, dtype, op));
  *dst = mt_tensor_retain(out);
  return MT_OK;
}

/* ---------------------------------------------------------------- checks */
mt_status mt_device_mismatch(const char *op, const mt_tensor *a, const mt_tensor *b) {
  return mt_error(MT_EDEVICE, "%s: expected all tensors on the same device, found %s and %s", op,
                  mt_device_str(mt_device_of(a)), mt_device_str(mt_device_of(b)));
}

/* where each kernel slot sits in a kernel table */
static const size_t slot_offsets[MT_SLOT_COUNT] = {
#define MT_SLOT_OFFSET_(slot, params) offsetof(mt_kernels, slot),
    MT_KERNEL_LIST(MT_SLOT_OFFSET_)
#undef MT_SLOT_OFFSET_
};
static bool has_slot(const mt_kernels *k, int slot) {
  void (*fn)(void);
  memcpy(&fn, (const char *)k + slot_offsets[slot], sizeof fn);
  return fn != NULL;
}

bool mt_backend_runs(const mt_backend *b, mt_op op, const int *dtypes, int n) {
  if (!b || !b->kernels || !mt_op_valid(op)) return false;
  int slot = mt_op_slots[op];
  if (slot >= 0 && !has_slot(b->kernels, slot)) return false;
  return b->supports ? b->supports(op, dtypes, n) : true;
}

bool mt_backend_has_slot(const mt_tensor *t, mt_kernel_slot slot) {
  const mt_backend *b = mt_backend_of(t);
  return b->kernels && slot >= 0 && slot < MT_SLOT_COUNT && has_slot(b->kernels, slot);
}

mt_status mt_kernel_missing(mt_op op, const mt_tensor *t) {
  return mt_error(MT_EDEVICE, "%s: not supported on device %s", MT_OP_NAME(op), mt_device_str(mt_device_of(t)));
}

mt_status mt_check_data(const mt_tensor *t, const char *op) {
  const mt_backend *b = mt_backend_of(t);
  if (b->holds_data) return MT_OK;
  return mt_error(MT_EDEVICE, "%s: a tensor on device %s holds no data", op, mt_device_str(mt_device_of(t)));
}

int mt_device_supports(const mt_device *device, int op, const int *dtypes, int n) {
  mt_device d = MT_DEVICE_CPU;
  if (mt_device_arg(device, "supports", &d) != MT_OK) {
    mt_clear_error();
    return 0;
  }
  return mt_op_valid(op) && mt_backend_runs(mt_backends[d.type], (mt_op)op, dtypes, n);
}

mt_status mt_synchronize(const mt_device *device) {
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "synchronize", &d));
  const mt_backend *b = mt_backends[d.type];
  return b->synchronize ? b->synchronize(d.index, NULL) : MT_OK;
}

/* ---------------------------------------------------------------- memory and collections */
mt_status mt_memory_stats_of(const mt_device *device, mt_memory_stats *out) {
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "memory_stats", &d));
  memset(out, 0, sizeof *out);
  out->reserved = out->peak_reserved = out->free_bytes = out->total_bytes = -1;
  if (d.type == MT_CPU) {
    out->allocated = mt_get_stats()->live_bytes;
    out->peak_allocated = -1;
    out->gc_limit = -1;
    return MT_OK;
  }
  const mt_device_bytes *c = mt_device_bytes_of(d.type, d.index);
  out->allocated = c->live;
  out->peak_allocated = c->peak;
  out->allocations = c->allocs;
  out->frees = c->frees;
  out->gc_limit = c->limit > 0 ? c->limit : MT_DEVICE_GC_MIN;
  const mt_backend *b = mt_backends[d.type];
  if (b->memory_info) {
    mt_device_memory m = {-1, -1, -1, -1};
    MT_TRY(b->memory_info(d.index, &m));
    out->reserved = m.reserved;
    out->peak_reserved = m.peak_reserved;
    out->free_bytes = m.free_bytes;
    out->total_bytes = m.total_bytes;
  }
  return MT_OK;
}

mt_status mt_memory_empty_cache(const mt_device *device) {
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "empty_cache", &d));
  const mt_backend *b = mt_backends[d.type];
  if (b->empty_cache) b->empty_cache(d.index);
  return MT_OK;
}

mt_status mt_memory_reset_peak(const mt_device *device) {
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "reset_peak_memory_stats", &d));
  mt_device_bytes *c = mt_device_bytes_of(d.type, d.index);
  if (c) __atomic_store_n(&c->peak, __atomic_load_n(&c->live, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  const mt_backend *b = mt_backends[d.type];
  if (b->reset_peak) b->reset_peak(d.index);
  return MT_OK;
}

/* each device's next limit: its live bytes plus half of them (at least MT_DEVICE_GC_MIN), but no
 * more than a quarter of what the device still has (its free memory and its backend's unused cache,
 * where the backend says), and no less than 1 MB (a device nearly full collects often, not at every
 * allocation) */
void mt_gc_done(void) {
  for (int t = MT_CPU + 1; t < MT_DEVICE_TYPES; t++) {
    const mt_backend *b = mt_backends[t];
    if (!b || !b->holds_data) continue;
    for (int i = 0; i < MT_MAX_DEVICES; i++) {
      mt_device_bytes *c = mt_device_bytes_of(t, i);
      if (c->allocs == 0) continue;
      int64_t live = __atomic_load_n(&c->live, __ATOMIC_RELAXED), growth = live / 2;
      if (growth < MT_DEVICE_GC_MIN) growth = MT_DEVICE_GC_MIN;
      mt_device_memory m = {-1, -1, -1, -1};
      if (b->memory_info && b->memory_info(i, &m) == MT_OK && m.free_bytes >= 0) {
        int64_t avail = m.free_bytes + (m.reserved > live ? m.reserved - live : 0);
        if (growth > avail / 4) growth = avail / 4;
      } else {
        mt_clear_error();
      }
      if (growth < ((int64_t)1 << 20)) growth = (int64_t)1 << 20;
      c->base = live;
      __atomic_store_n(&c->limit, live + growth, __ATOMIC_RELAXED);
    }
  }
  __atomic_store_n(&mt_get_stats()->device_pressure, 0, __ATOMIC_RELAXED);
}

int mt_gc_pressure(void) {
  for (int t = MT_CPU + 1; t < MT_DEVICE_TYPES; t++)
    for (int i = 0; i < MT_MAX_DEVICES; i++) {
      const mt_device_bytes *c = mt_device_bytes_of(t, i);
      int64_t limit = c->limit > 0 ? c->limit : MT_DEVICE_GC_MIN;
      if (c->live > c->base + (limit - c->base) / 2) return 1;
    }
  return 0;
}

/* ---------------------------------------------------------------- empty and full */
mt_status mt_tensor_empty(const int64_t *sizes, int ndim, int dtype, const mt_device *device, mt_tensor **out) {
  if (!out) return mt_error(MT_EINVAL, "empty: out is NULL");
  if (ndim > 0 && !sizes) return mt_error(MT_EINVAL, "empty: sizes is NULL");
  mt_device dev = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "empty", &dev));
  return mt_new(dev, sizes, ndim, dtype, "empty", out);
}

/* empty_like keeps its input's layout: it lives in layout.c */

mt_status mt_tensor_full(const int64_t *sizes, int ndim, int dtype, double value, const mt_device *device,
                         mt_tensor **out) {
  mt_device dev = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "full", &dev));
  mt_tensor *t = NULL;
  MT_TRY(mt_new(dev, sizes, ndim, dtype, "full", &t));
  mt_status s = mt_kernels_of(t)->fill(t, value);
  if (s != MT_OK) { mt_tensor_release(t); return s; }
  *out = t;
  return MT_OK;
}
