/* device.c -- devices in the dispatch layer: the registry of backends (one per device type this
 * build has), new tensors on a device, the device checks of the front doors, the factories of
 * empty and full tensors, and the public device functions. */
#include "dispatch.h"

#include <stdio.h>

/* ---------------------------------------------------------------- the registry */
const mt_backend *const mt_backends[MT_DEVICE_TYPES] = {
    [MT_CPU] = &mt_cpu_backend,
    [MT_META] = &mt_meta_backend,
};

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

__attribute__((constructor)) static void complete_tables(void) {
  for (int d = 0; d < MT_DEVICE_TYPES; d++) {
    const mt_kernels *k = mt_backends[d] ? mt_backends[d]->kernels : NULL;
#define MT_FILL_(slot, params) complete[d].slot = k && k->slot ? k->slot : absent_##slot;
    MT_KERNEL_LIST(MT_FILL_)
#undef MT_FILL_
  }
}

static const char *const type_names[MT_DEVICE_TYPES] = {[MT_CPU] = "cpu", [MT_CUDA] = "cuda", [MT_META] = "meta"};

const char *mt_device_name(int type) { return type >= 0 && type < MT_DEVICE_TYPES ? type_names[type] : "?"; }

const char *mt_device_str(mt_device d) {
  static _Thread_local char ring[4][32];
  static _Thread_local int next;
  char *buf = ring[next++ & 3];
  if (d.type == MT_CUDA) snprintf(buf, sizeof ring[0], "cuda:%d", d.index);
  else snprintf(buf, sizeof ring[0], "%s", mt_device_name(d.type));
  return buf;
}

static const mt_backend *backend_for(const mt_device *d) {
  if (!d) return mt_backends[MT_CPU];
  return d->type >= 0 && d->type < MT_DEVICE_TYPES && d->index >= 0 ? mt_backends[d->type] : NULL;
}

mt_status mt_device_arg(const mt_device *device, const char *op, mt_device *out) {
  if (!device) {
    *out = MT_DEVICE_CPU;
    return MT_OK;
  }
  if (device->type < 0 || device->type >= MT_DEVICE_TYPES || device->index < 0)
    return mt_error(MT_EDEVICE, "%s: unknown device (type %d, index %d)", op, device->type, device->index);
  if (!mt_backends[device->type]) {
    if (device->type == MT_CUDA)
      return mt_error(MT_EDEVICE, "%s: device %s is not available (moontorch was built without CUDA)", op,
                      mt_device_str(*device));
    return mt_error(MT_EDEVICE, "%s: device %s is not available in this build", op, mt_device_str(*device));
  }
  if (device->type != MT_CUDA && device->index != 0)
    return mt_error(MT_EDEVICE, "%s: device %s has no index %d", op, mt_device_name(device->type), device->index);
  *out = *device;
  return MT_OK;
}

/* ---------------------------------------------------------------- new tensors */
mt_status mt_new_device(mt_device dev, const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **out) {
  const mt_backend *b = backend_for(&dev);
  if (!b) return mt_device_arg(&dev, op, &dev); /* the error */
  if (!b->memory) return mt_new_cpu(sizes, ndim, dtype, op, out);
  return mt_new_with(b->memory, dev.type, dev.index, sizes, ndim, dtype, op, out);
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

mt_status mt_kernel_missing(mt_op op, const mt_tensor *t) {
  return mt_error(MT_EDEVICE, "%s: not supported on device %s", MT_OP_NAME(op), mt_device_str(mt_device_of(t)));
}

mt_status mt_check_data(const mt_tensor *t, const char *op) {
  const mt_backend *b = mt_backend_of(t);
  if (b->holds_data) return MT_OK;
  return mt_error(MT_EDEVICE, "%s: a tensor on device %s holds no data", op, mt_device_str(mt_device_of(t)));
}

/* ---------------------------------------------------------------- the public device functions */
int mt_device_available(const mt_device *device) { return backend_for(device) != NULL; }

int mt_device_supports(const mt_device *device, int op, const int *dtypes, int n) {
  return mt_op_valid(op) && mt_backend_runs(backend_for(device), (mt_op)op, dtypes, n);
}

mt_status mt_synchronize(const mt_device *device) {
  mt_device d = MT_DEVICE_CPU;
  MT_TRY(mt_device_arg(device, "synchronize", &d));
  const mt_backend *b = mt_backends[d.type];
  return b->synchronize ? b->synchronize(d.index) : MT_OK;
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
