/* device.h -- the dispatch layer's view of devices (device.c): which backend a tensor's device has,
 * device arguments, new tensors on a device, out= results, the checks that an op's tensors share
 * one device and that its backend can run it, and reading values on the host (copy.c). Included by
 * dispatch.h. Internal to the core. */
#ifndef MT_DEVICE_H
#define MT_DEVICE_H

#include "../backend.h"
#include "../optable.h"

/* the backend of each device type (NULL: none in this build) and, for the hot path, its kernels.
 * The CUDA slot changes only when a spec puts the fake device in or out (mt_fake_cuda_install). */
extern const mt_backend *mt_backends[MT_DEVICE_TYPES];
extern const mt_kernels *const mt_device_kernels[MT_DEVICE_TYPES];

#define MT_DEVICE_CPU ((mt_device){MT_CPU, 0})
static inline mt_device mt_device_of(const mt_tensor *t) { return (mt_device){t->_device_type, t->_device_index}; }
static inline bool mt_same_device(const mt_tensor *a, const mt_tensor *b) {
  return a->_device_type == b->_device_type && a->_device_index == b->_device_index;
}
extern const mt_backend mt_absent_backend;
/* the kernel table (complete: a kernel the backend lacks reports MT_EDEVICE) and the backend of t's
 * device (mt_check_tensor has checked that its device type is one) */
static inline const mt_kernels *mt_kernels_of(const mt_tensor *t) { return mt_device_kernels[t->_device_type]; }
static inline const mt_backend *mt_backend_of(const mt_tensor *t) {
  const mt_backend *b = mt_backends[t->_device_type];
  return b ? b : &mt_absent_backend;
}

/* "cpu", "meta", "cuda:1" (from a small ring of buffers, as mt_shape_str) */
const char *mt_device_str(mt_device d);
/* A device argument checked (NULL: the CPU): one this build has a backend for, and a device of it
 * that is there (index -1: the current one, which *out names). */
mt_status mt_device_arg(const mt_device *device, const char *op, mt_device *out);

/* ---------------------------------------------------------------- new tensors */
mt_status mt_new_device(mt_device dev, const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **out);
/* A new contiguous tensor on `dev`; contents uninitialised. */
static inline mt_status mt_new(mt_device dev, const int64_t *sizes, int ndim, int dtype, const char *op,
                               mt_tensor **out) {
  if (__builtin_expect(dev.type == MT_CPU, 1)) return mt_new_cpu(sizes, ndim, dtype, op, out);
  return mt_new_device(dev, sizes, ndim, dtype, op, out);
}
/* A new contiguous tensor of t's sizes and device in `dtype` (whose itemsize is at most t's). */
static inline mt_status mt_new_like(const mt_tensor *t, int dtype, const char *op, mt_tensor **out) {
  if (__builtin_expect(t->_device_type == MT_CPU, 1)) return mt_new_cpu_like(t, dtype, op, out);
  return mt_new_device(mt_device_of(t), t->_sizes, t->_ndim, dtype, op, out);
}
/* Make `out` (an out= argument) have the given shape and dtype, resizing its storage on its device
 * (keeping its bytes, through the device's transfer) if needed. */
mt_status mt_prepare_out(mt_tensor *out, const int64_t *sizes, int ndim, int dtype, const char *op);
/* Either use `out` (on `dev`, resized to the shape, of that dtype) or allocate on `dev`; *dst is a
 * new reference in both cases. */
mt_status mt_out_or_new(mt_tensor *out, mt_device dev, const int64_t *sizes, int ndim, int dtype, const char *op,
                        mt_tensor **dst);

/* ---------------------------------------------------------------- checks */
mt_status mt_device_mismatch(const char *op, const mt_tensor *a, const mt_tensor *b);
/* a and b (b may be NULL) on one device, or "<op>: expected all tensors on the same device,
 * found meta and cpu" */
static inline mt_status mt_check_same_device(const char *op, const mt_tensor *a, const mt_tensor *b) {
  if (__builtin_expect(!b || mt_same_device(a, b), 1)) return MT_OK;
  return mt_device_mismatch(op, a, b);
}
/* The same for an elementwise op, which also takes a number (a wrapped number) or a 0-dim CPU
 * tensor beside tensors of another device, as PyTorch does. */
static inline bool mt_is_cpu_scalar(const mt_tensor *t) {
  return t->_device_type == MT_CPU && (t->_ndim == 0 || (t->_flags & MT_TENSOR_WRAPPED_NUMBER));
}
static inline mt_status mt_check_same_device_or_scalar(const char *op, const mt_tensor *a, const mt_tensor *b) {
  if (__builtin_expect(!b || mt_same_device(a, b), 1) || mt_is_cpu_scalar(a) || mt_is_cpu_scalar(b)) return MT_OK;
  return mt_device_mismatch(op, a, b);
}
/* the device an elementwise op's result goes to: its operands', a CPU scalar's only when all are */
static inline mt_device mt_result_device(const mt_tensor *a, const mt_tensor *b) {
  return (b && mt_is_cpu_scalar(a) && !mt_is_cpu_scalar(b)) ? mt_device_of(b) : mt_device_of(a);
}

mt_status mt_kernel_missing(mt_op op, const mt_tensor *t);
bool mt_backend_runs(const mt_backend *b, mt_op op, const int *dtypes, int n);
/* Has t's backend this kernel slot (for the fused paths a backend may or may not have)? */
bool mt_backend_has_slot(const mt_tensor *t, mt_kernel_slot slot);
/* Can t's backend run op (has it the op's kernel)? MT_EDEVICE naming the op and the device if not.
 * The CPU's backend runs every op. */
static inline mt_status mt_check_kernel(mt_op op, const mt_tensor *t) {
  if (__builtin_expect(t->_device_type == MT_CPU, 1)) return MT_OK;
  return mt_backend_runs(mt_backend_of(t), op, NULL, 0) ? MT_OK : mt_kernel_missing(op, t);
}
/* Can t's values be read on the CPU (its device holds data)? MT_EDEVICE for a meta tensor. */
mt_status mt_check_data(const mt_tensor *t, const char *op);

/* ---------------------------------------------------------------- values on the host (copy.c) */
/* The one way the core reads a tensor's values on the host: *h is t itself (a new reference) on the
 * CPU (when it is contiguous, if `contiguous` asks for that; else a contiguous copy), else a new
 * contiguous CPU tensor of its values brought over by its backend's transfer. MT_EDEVICE naming `op`
 * for a device that holds no data. (mt_tensor_to_host is the public face.) */
mt_status mt_readback(const mt_tensor *t, const char *op, bool contiguous, mt_tensor **h);

#endif
