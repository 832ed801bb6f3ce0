/* context.c -- the CUDA backend's runtime and devices: which runtime runs (NVIDIA's where there is a
 * device, the CPU emulator when MOONTORCH_CUDA_EMULATE=1 asks for it, none otherwise), each device's
 * fault record and properties, the calling thread's current device and streams, synchronisation and
 * the errors of the runtime. */
#include "gpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

const mt_gpu_runtime *mt_gpu_rt;
const mt_gpu_kernels *mt_gpu_k;
static int ndevices;
static char why_none[256];
static mt_gpu_fault *faults[MT_GPU_MAX_DEVICES];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;

_Thread_local int mt_gpu_current_device = -1;
static _Thread_local void *current_streams[MT_GPU_MAX_DEVICES];

static bool emulation_asked(void) {
  const char *s = getenv("MOONTORCH_CUDA_EMULATE");
  return s && *s && strcmp(s, "0") != 0;
}

static void choose(void) {
  const mt_gpu_runtime *rt = NULL;
  const mt_gpu_kernels *k = NULL;
  int n = 0;
  if (emulation_asked()) {
    rt = &mt_gpu_emu_runtime;
    k = &mt_gpu_emu_kernels;
    const char *why = NULL;
    if (rt->device_count(&n, &why) != 0) n = 0;
  } else {
#ifdef MT_HAVE_CUDA
    const char *why = NULL;
    int code = mt_gpu_cuda_runtime.device_count(&n, &why);
    if (code == 0 && n > 0) {
      rt = &mt_gpu_cuda_runtime;
      k = &mt_gpu_real_kernels;
    } else {
      n = 0;
      snprintf(why_none, sizeof why_none, "no CUDA device found (%s)",
               why ? why : code ? mt_gpu_cuda_runtime.error_string(code) : "no device");
    }
#else
    snprintf(why_none, sizeof why_none,
             "moontorch was built without CUDA (MOONTORCH_CUDA_EMULATE=1 runs the CPU emulator of a CUDA device)");
#endif
  }
  if (n > MT_GPU_MAX_DEVICES) n = MT_GPU_MAX_DEVICES;
  if (rt && n > 0) {
    mt_gpu_props p;
    if (rt->properties(0, &p) == 0) k->configure(p.multiprocessors);
    mt_gpu_rt = rt;
    mt_gpu_k = k;
    ndevices = n;
  } else if (!why_none[0]) {
    snprintf(why_none, sizeof why_none, "no CUDA device found");
  }
}

int mt_gpu_device_count(void) {
  pthread_once(&once, choose);
  return ndevices;
}

const char *mt_gpu_unavailable_reason(void) {
  pthread_once(&once, choose);
  return ndevices ? "" : why_none;
}

mt_status mt_gpu_error(int code, const char *op) {
  const char *text = mt_gpu_rt ? mt_gpu_rt->error_string(code) : "no runtime";
  if (code == 2) /* cudaErrorMemoryAllocation, and the emulator's out of memory */
    return mt_error(MT_ENOMEM, "%s: CUDA error: %s", op, text);
  return mt_error(MT_EDEVICE, "%s: CUDA error: %s", op, text);
}

mt_status mt_gpu_use(int index, const char *op) {
  if (index < 0 || index >= mt_gpu_device_count())
    return mt_error(MT_EDEVICE, "%s: device cuda:%d is not available (%s)", op, index,
                    ndevices ? "no such device" : mt_gpu_unavailable_reason());
  if (mt_gpu_current_device == index) return MT_OK;
  MT_GPU_TRY(mt_gpu_rt->set_device(index), op);
  mt_gpu_current_device = index;
  return MT_OK;
}

void *mt_gpu_current_stream(int index) {
  return index >= 0 && index < MT_GPU_MAX_DEVICES ? current_streams[index] : NULL;
}
void mt_gpu_set_current_stream(int index, void *stream) {
  if (index >= 0 && index < MT_GPU_MAX_DEVICES) current_streams[index] = stream;
}

mt_gpu_fault *mt_gpu_fault_of(int index) {
  if (index < 0 || index >= MT_GPU_MAX_DEVICES || !mt_gpu_rt) return NULL;
  mt_gpu_fault *f = __atomic_load_n(&faults[index], __ATOMIC_ACQUIRE);
  if (f) return f;
  pthread_mutex_lock(&fault_mu);
  if (!faults[index]) {
    void *p = NULL;
    if (mt_gpu_rt->host_alloc(&p, sizeof(mt_gpu_fault)) == 0) {
      memset(p, 0, sizeof(mt_gpu_fault));
      __atomic_store_n(&faults[index], (mt_gpu_fault *)p, __ATOMIC_RELEASE);
    }
  }
  f = faults[index];
  pthread_mutex_unlock(&fault_mu);
  return f;
}

mt_status mt_gpu_check_fault(int index, const char *op) {
  mt_gpu_fault *f = index >= 0 && index < MT_GPU_MAX_DEVICES ? faults[index] : NULL;
  if (!f || __atomic_load_n(&f->code, __ATOMIC_ACQUIRE) == 0) return MT_OK;
  mt_gpu_fault v = *f;
  memset(f, 0, sizeof *f);
  const char *name = v.op >= 0 ? mt_op_name(v.op) : op;
  switch (v.code) {
  case MT_GPU_FAULT_ZERO_DIVISION:
    return mt_error(MT_EINVAL, "%s: ZeroDivisionError (integer division by zero on device cuda:%d)", name, index);
  case MT_GPU_FAULT_NEGATIVE_POWER:
    return mt_error(MT_EINVAL, "%s: integers to negative integer powers are not allowed (on device cuda:%d)", name,
                    index);
  case MT_GPU_FAULT_INDEX:
    return mt_error(MT_ERANGE, "%s: index %lld is out of bounds for dimension %lld with size %lld (on device cuda:%d)",
                    name, (long long)v.value, (long long)v.dim, (long long)v.bound, index);
  case MT_GPU_FAULT_TARGET:
    return mt_error(MT_ERANGE, "nll_loss: Target %lld is out of bounds (on device cuda:%d).", (long long)v.value, index);
  case MT_GPU_FAULT_MAX_INDEX:
    return mt_error(MT_ERANGE, "Found an invalid max index: %lld (output volumes are of size %lld, on device cuda:%d)",
                    (long long)v.value, (long long)v.bound, index);
  case MT_GPU_FAULT_BAG_INDEX:
    return mt_error(MT_ERANGE, "embedding_bag: index out of range in self (index %lld, %lld rows, on device cuda:%d)",
                    (long long)v.value, (long long)v.bound, index);
  case MT_GPU_FAULT_CSR_CROW:
    return mt_error(MT_ERANGE,
                    "csr_mm: crow_indices must run from %lld to %lld (the number of values) without decreasing; "
                    "not so at crow_indices[%lld] (on device cuda:%d)",
                    (long long)v.bound, (long long)(v.bound + v.dim), (long long)(v.value + v.bound), index);
  case MT_GPU_FAULT_CSR_COL:
    return mt_error(MT_ERANGE, "csr_mm: col_indices[%lld] = %lld is out of range for %lld columns (on device cuda:%d)",
                    (long long)v.dim, (long long)v.value, (long long)v.bound, index);
  default:
    return mt_error(MT_EINVAL, "%s: a value is out of range (%lld, on device cuda:%d)", name, (long long)v.value,
                    index);
  }
}

mt_status mt_gpu_synchronize(int index) {
  MT_TRY(mt_gpu_use(index, "synchronize"));
  MT_GPU_TRY(mt_gpu_rt->device_synchronize(), "synchronize");
  return mt_gpu_check_fault(index, "synchronize");
}

/* ---------------------------------------------------------------- the public CUDA functions */
MT_API mt_status mt_cuda_device_properties(int device, mt_cuda_properties *out) {
  if (!out) return mt_error(MT_EINVAL, "get_device_properties: out is NULL");
  MT_TRY(mt_gpu_use(device, "get_device_properties"));
  mt_gpu_props p;
  MT_GPU_TRY(mt_gpu_rt->properties(device, &p), "get_device_properties");
  memset(out, 0, sizeof *out);
  memcpy(out->name, p.name, sizeof out->name);
  out->name[sizeof out->name - 1] = 0;
  out->major = p.major;
  out->minor = p.minor;
  out->multi_processor_count = p.multiprocessors;
  out->total_memory = (int64_t)p.total_memory;
  return MT_OK;
}

MT_API const char *mt_cuda_runtime(void) { return mt_gpu_device_count() ? mt_gpu_rt->name : ""; }
