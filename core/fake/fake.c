/* fake.c -- a fake device for specs (core/backend.h): a backend that runs on the CPU and behaves as a
 * device whose memory the host cannot read, put in the CUDA slot of the registry by a spec
 * (mt_fake_cuda_install) or by MOONTORCH_FAKE_CUDA=N[:bytes] at load. It shows that everything
 * outside a backend reaches a second device through the seam alone:
 *   - its memory is host pages of its own (one mapping per device), which are PROT_NONE except while
 *     one of its kernels or transfers runs: a direct read of a device tensor's data anywhere else (C or Lua) faults, and
 *     the fault handler names the fake device and the address before the process dies;
 *   - it has N devices of a fixed size (an allocation past it fails, as cudaMalloc does), a current
 *     device, streams and events (done at once), pinned host memory, and counts what it does
 *     (mt_fake_cuda_counts: kernel calls, transfers by direction, allocations, synchronisations);
 *   - its kernels are the CPU backend's, called through its kernel table with its memory opened: the
 *     results are the CPU's bit for bit. The kernels that make their own results (nonzero, unique,
 *     ...) get them from the CPU and carry them to the device.
 * A slot is forwarded when its argument names are listed below (FAKE_A_<slot>); a slot added to
 * core/kernels.h without a line here is absent on the fake device (the fake column of
 * spec/op_table_spec.lua then names it). */
#include "../backend.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- state */
static int ndev = 0;         /* devices */
static int64_t capacity = 0; /* bytes per device */
static int current = 0;
static int64_t used[MT_MAX_DEVICES], peak_used[MT_MAX_DEVICES];
static mt_fake_counts counts;
mt_fake_counts *mt_fake_cuda_counts(void) { return &counts; }
#define COUNT(field) __atomic_add_fetch(&counts.field, 1, __ATOMIC_RELAXED)
/* calls of each kernel slot */
static int64_t slot_calls[MT_SLOT_COUNT];
#define COUNT_SLOT(slot) __atomic_add_fetch(&slot_calls[MT_SLOT_##slot], 1, __ATOMIC_RELAXED)
static const char *const slot_names[MT_SLOT_COUNT] = {
#define MT_SLOT_NAME_(slot, params) #slot,
    MT_KERNEL_LIST(MT_SLOT_NAME_)
#undef MT_SLOT_NAME_
};
int64_t mt_fake_cuda_calls(const char *slot) {
  for (int i = 0; slot && i < MT_SLOT_COUNT; i++)
    if (!strcmp(slot_names[i], slot)) return __atomic_load_n(&slot_calls[i], __ATOMIC_RELAXED);
  return -1;
}

/* Each device's memory is one mapping of `capacity` bytes (an arena), PROT_NONE but while a kernel
 * or a transfer runs (one mprotect per device either way), handed out in whole pages, first fit,
 * from a list of free extents kept in address order. */
typedef struct extent {
  size_t off, len;
} extent;
static char *arena[MT_MAX_DEVICES];
static extent *free_list[MT_MAX_DEVICES];
static size_t nfree[MT_MAX_DEVICES], cap_free[MT_MAX_DEVICES];
static size_t arena_len; /* of each arena: capacity, rounded to pages */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int open_depth; /* > 0: a kernel or transfer runs, the arenas are readable */

static size_t page_round(size_t n) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return (n + pg - 1) / pg * pg;
}

static void protect_all(int prot) {
  for (int d = 0; d < ndev; d++)
    if (arena[d]) mprotect(arena[d], arena_len, prot);
}
static void enter(void) {
  pthread_mutex_lock(&mu);
  if (open_depth++ == 0) protect_all(PROT_READ | PROT_WRITE);
  pthread_mutex_unlock(&mu);
}
static void leave(void) {
  pthread_mutex_lock(&mu);
  if (--open_depth == 0) protect_all(PROT_NONE);
  pthread_mutex_unlock(&mu);
}

/* the arenas of `n` devices of `bytes` each (any old ones unmapped: nothing lives there) */
static mt_status map_arenas(int n, size_t bytes) {
  for (int d = 0; d < MT_MAX_DEVICES; d++) {
    if (arena[d]) munmap(arena[d], arena_len);
    arena[d] = NULL;
    free(free_list[d]);
    free_list[d] = NULL;
    nfree[d] = cap_free[d] = 0;
    used[d] = peak_used[d] = 0;
  }
  arena_len = page_round(bytes);
  for (int d = 0; d < n; d++) {
    void *p = mmap(NULL, arena_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    free_list[d] = malloc(64 * sizeof(extent));
    if (p == MAP_FAILED || !free_list[d]) {
      if (p != MAP_FAILED) munmap(p, arena_len);
      return mt_error(MT_ENOMEM, "fake_cuda_install: cannot map %zu bytes for device %d", arena_len, d);
    }
    arena[d] = p;
    free_list[d][0] = (extent){0, arena_len};
    nfree[d] = 1;
    cap_free[d] = 64;
  }
  return MT_OK;
}

/* ---------------------------------------------------------------- the fault handler */
static struct sigaction previous;
static bool handler_installed;

static void on_fault(int sig, siginfo_t *info, void *uc) {
  char *a = info->si_addr;
  for (int d = 0; d < ndev; d++) {
    if (arena[d] && a >= arena[d] && a < arena[d] + arena_len) {
      char msg[320];
      int n = snprintf(msg, sizeof msg,
                       "moontorch: the host touched memory of the fake device cuda:%d outside its backend (address "
                       "%p): a device tensor's values are read through mt_readback / mt_tensor_to_host\n",
                       d, (void *)a);
      if (n > 0) {
        ssize_t w = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        (void)w;
      }
      break;
    }
  }
  /* the previous handler, or the default action when the access is retried */
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) {
      previous.sa_sigaction(sig, info, uc);
      return;
    }
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
}

static void install_handler(void) {
  if (handler_installed) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &previous) == 0) handler_installed = true;
}

/* ---------------------------------------------------------------- memory */
static void *fake_alloc(void *ctx, int device, size_t nbytes) {
  (void)ctx;
  if (device < 0 || device >= ndev || !arena[device]) return NULL;
  size_t len = page_round(nbytes);
  void *p = NULL;
  pthread_mutex_lock(&mu);
  extent *f = free_list[device];
  for (size_t i = 0; i < nfree[device]; i++) {
    if (f[i].len < len) continue;
    p = arena[device] + f[i].off;
    f[i].off += len;
    f[i].len -= len;
    if (f[i].len == 0) {
      memmove(f + i, f + i + 1, (nfree[device] - i - 1) * sizeof *f);
      nfree[device]--;
    }
    used[device] += (int64_t)len;
    if (used[device] > peak_used[device]) peak_used[device] = used[device];
    COUNT(allocs);
    break;
  }
  pthread_mutex_unlock(&mu);
  return p;
}

/* the pages back to the free list (merged with their neighbours) and to the kernel (they read as
 * zeros when handed out again) */
static void fake_free(void *ctx, int device, void *ptr, size_t nbytes) {
  (void)ctx;
  size_t len = page_round(nbytes), off = (size_t)((char *)ptr - arena[device]);
  pthread_mutex_lock(&mu);
  madvise(ptr, len, MADV_DONTNEED);
  extent *f = free_list[device];
  size_t n = nfree[device], i = 0;
  while (i < n && f[i].off < off) i++;
  bool left = i > 0 && f[i - 1].off + f[i - 1].len == off, right = i < n && off + len == f[i].off;
  if (left && right) {
    f[i - 1].len += len + f[i].len;
    memmove(f + i, f + i + 1, (n - i - 1) * sizeof *f);
    nfree[device]--;
  } else if (left) {
    f[i - 1].len += len;
  } else if (right) {
    f[i].off = off;
    f[i].len += len;
  } else {
    if (n == cap_free[device]) {
      extent *g = realloc(f, 2 * n * sizeof *f);
      if (!g) { /* the pages stay lost to this fake device: it only serves specs */
        pthread_mutex_unlock(&mu);
        return;
      }
      free_list[device] = f = g;
      cap_free[device] = 2 * n;
    }
    memmove(f + i + 1, f + i, (n - i) * sizeof *f);
    f[i] = (extent){off, len};
    nfree[device]++;
  }
  used[device] -= (int64_t)len;
  COUNT(frees);
  pthread_mutex_unlock(&mu);
}

static const mt_allocator fake_memory = {.alloc = fake_alloc, .free = fake_free, .ctx = NULL};

/* pinned host memory: plain host memory here, told apart by its allocator */
static void *pinned_alloc(void *ctx, int device, size_t nbytes) {
  (void)ctx;
  (void)device;
  void *p = NULL;
  return posix_memalign(&p, 64, nbytes ? nbytes : 64) == 0 ? p : NULL;
}
static void pinned_free(void *ctx, int device, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)device;
  (void)nbytes;
  free(ptr);
}
static const mt_allocator fake_pinned = {.alloc = pinned_alloc, .free = pinned_free, .ctx = NULL};

/* ---------------------------------------------------------------- kernels */
/* the argument names of each slot of core/kernels.h (but the five below that make their results) */
#define FAKE_A_copy (dst, src)
#define FAKE_A_fill (t, value)
#define FAKE_A_unary (op, out, a, p1, p2)
#define FAKE_A_binary (op, out, a, b)
#define FAKE_A_where (out, cond, a, b)
#define FAKE_A_unary_grad (op, out, g, x)
#define FAKE_A_reduce (op, out, a, mask, keepdim, p)
#define FAKE_A_reduce_index (values, indices, a, dim, keepdim, is_min, base)
#define FAKE_A_cumulative (out, a, dim, is_prod)
#define FAKE_A_softmax (out, a, dim, log)
#define FAKE_A_isclose (out, a, b, rtol, atol, equal_nan)
#define FAKE_A_index_select (out, a, dim, index, base)
#define FAKE_A_gather (out, a, dim, index, base)
#define FAKE_A_scatter (t, dim, index, src, value, reduce, base)
#define FAKE_A_index_write (t, dim, index, src, kind, alpha, base)
#define FAKE_A_index_fill (t, dim, index, value, base)
#define FAKE_A_masked_fill (t, mask, value)
#define FAKE_A_masked_scatter (t, mask, src)
#define FAKE_A_index (out, w, n, indices, raw, base)
#define FAKE_A_index_put (w, n, indices, raw, values, accumulate, base)
#define FAKE_A_triangle (t, diagonal, upper)
#define FAKE_A_arange (out, start, step)
#define FAKE_A_linspace (out, start, end, base, log)
#define FAKE_A_sort (values, indices, a, dim, descending, base)
#define FAKE_A_searchsorted (out, sorted, values, right, base)
#define FAKE_A_rearrange (out, src, maps)
#define FAKE_A_outer (out, a, b)
#define FAKE_A_gemm (g)
#define FAKE_A_uniform (t, from, to, g)
#define FAKE_A_normal (t, mean, std, g)
#define FAKE_A_random (t, from, to, g)
#define FAKE_A_bernoulli (t, p, g)
#define FAKE_A_bernoulli_tensor (t, p, g)
#define FAKE_A_exponential (t, lambd, g)
#define FAKE_A_randperm (out, base, g)
#define FAKE_A_multinomial (out, probs, replacement, base, g)
#define FAKE_A_standard_gamma (out, alpha, g)
#define FAKE_A_sample_dirichlet (out, alpha, g)
#define FAKE_A_poisson (out, rates, g)
#define FAKE_A_binomial (out, count, prob, g)
#define FAKE_A_standard_gamma_grad (out, alpha, x)
#define FAKE_A_dirichlet_grad (out, x, alpha, total)
#define FAKE_A_sgd_step (param, grad, buf, s, first_step)
#define FAKE_A_pool_max (values, indices, x, w, base)
#define FAKE_A_resample (out, x, t, adjoint)
#define FAKE_A_pool_index (out, src, indices, kind, base)
#define FAKE_A_im2col (cols, image, g)
#define FAKE_A_col2im (image, cols, g)
#define FAKE_A_lstm_cell (hy, cy, ws, ig, hg, cx, bi, bh)
#define FAKE_A_lstm_cell_backward (dgates, dcx, dhy, dcy, cx, cy, ws)
#define FAKE_A_gru_cell (hy, ws, ig, hg, hx, bi, bh)
#define FAKE_A_gru_cell_backward (dig, dhg, dhx, dhy, hx, ws)
#define FAKE_A_adam_step (param, grad, exp_avg, exp_avg_sq, max_sq, s, step)
#define FAKE_A_rmsprop_step (param, grad, square_avg, grad_avg, buf, s)
#define FAKE_A_adagrad_step (param, grad, sum, s, clr)
#define FAKE_A_adadelta_step (param, grad, square_avg, acc_delta, s)
#define FAKE_A_adamax_step (param, grad, exp_avg, exp_inf, s, clr)
#define FAKE_A_layer_norm (out, mean, rstd, x, w, b, m, n, eps)
#define FAKE_A_layer_norm_backward (gx, gw, gb, g, x, mean, rstd, w, m, n)
#define FAKE_A_nll_loss (out, total_weight, input, target, weight, ignore_index, reduction, base)
#define FAKE_A_nll_loss_backward (gin, g, target, weight, ignore_index, reduction, total_weight, base)
#define FAKE_A_ctc_loss (out, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, base)
#define FAKE_A_ctc_loss_backward (gin, g, log_probs, targets, input_lengths, target_lengths, blank, base)
#define FAKE_A_embedding_bag (out, max_arg, weight, indices, starts, psw, mode, pad, base)
#define FAKE_A_embedding_bag_backward (gw, gpsw, g, weight, indices, starts, psw, max_arg, mode, pad, base, scale_grad_by_freq)
/* (numconv's slots, s7-numconv: harmless until core/kernels.h has them) */
#define FAKE_A_convolution (out, x, w, bias, a)
#define FAKE_A_conv_weight_grad (gw, gout, x, a)
#define FAKE_A_softmax_backward (gin, g, y, dim, log)
/* (inspect's CSR products, s7-inspect, issue 24) */
#define FAKE_A_csr_mm (out, transposed, crow, col, vals, d, base)
#define FAKE_A_csr_mm_t (out, crow, col, vals, g, base)
#define FAKE_A_csr_sddmm (gv, crow, col, g, d, base)

/* FAKE_KNOWN(slot): 1 when FAKE_A_<slot> is listed (a parenthesised list), else 0 */
#define FAKE_CAT_(a, b) a##b
#define FAKE_CAT(a, b) FAKE_CAT_(a, b)
#define FAKE_SECOND(a, b, ...) b
#define FAKE_CHECK(...) FAKE_SECOND(__VA_ARGS__, 0, ~)
#define FAKE_PROBE(...) ~, 1
#define FAKE_IS_PAREN(x) FAKE_CHECK(FAKE_PROBE x)
#define FAKE_KNOWN(slot) FAKE_IS_PAREN(FAKE_A_##slot)

/* a listed slot: the CPU's kernel with the device's memory open */
#define FAKE_DEF_1(slot, params)                                  \
  static mt_status fake_##slot params {                           \
    COUNT(kernels);                                               \
    COUNT_SLOT(slot);                                             \
    enter();                                                      \
    mt_status st_ = mt_cpu_backend.kernels->slot FAKE_A_##slot;   \
    leave();                                                      \
    return st_;                                                   \
  }
#define FAKE_DEF_0(slot, params)
#define FAKE_DEF(slot, params) FAKE_CAT(FAKE_DEF_, FAKE_KNOWN(slot))(slot, params)
MT_KERNEL_LIST(FAKE_DEF)

/* the kernels that make their own results: the CPU's make them on the CPU; they go to the device of
 * the input (`like`) */
static mt_status to_device(mt_tensor **r, const mt_tensor *like) {
  if (!r || !*r) return MT_OK;
  mt_tensor *h = *r, *d = NULL;
  mt_status s = mt_new_with(&fake_memory, MT_CUDA, like->_device_index, h->_sizes, h->_ndim, h->_dtype, "fake", &d);
  if (s == MT_OK) {
    memcpy(d->_data, h->_data, (size_t)h->_numel * mt_itemsize(h->_dtype)); /* inside enter(): open */
    mt_tensor_release(h);
    *r = d;
  } else {
    mt_tensor_release(h);
    *r = NULL;
  }
  return s;
}
#define FAKE_MADE(call, ...)                                       \
  do {                                                             \
    COUNT(kernels);                                                \
    enter();                                                       \
    mt_status s = call;                                            \
    mt_tensor **rs[] = {__VA_ARGS__};                              \
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {        \
      if (s == MT_OK) s = to_device(rs[i], like);                  \
      else if (rs[i] && *rs[i]) {                                  \
        mt_tensor_release(*rs[i]);                                 \
        *rs[i] = NULL;                                             \
      }                                                            \
    }                                                              \
    leave();                                                       \
    return s;                                                      \
  } while (0)

static mt_status fake_masked_select(const mt_tensor *a, const mt_tensor *mask, mt_tensor **result) {
  const mt_tensor *like = a;
  COUNT_SLOT(masked_select);
  FAKE_MADE(mt_cpu_backend.kernels->masked_select(a, mask, result), result);
}
static mt_status fake_nonzero(const mt_tensor *a, int64_t base, mt_tensor **result) {
  const mt_tensor *like = a;
  COUNT_SLOT(nonzero);
  FAKE_MADE(mt_cpu_backend.kernels->nonzero(a, base, result), result);
}
static mt_status fake_unique(const mt_tensor *a, int64_t base, mt_tensor **values, mt_tensor **inverse,
                             mt_tensor **counts_) {
  const mt_tensor *like = a;
  COUNT_SLOT(unique);
  FAKE_MADE(mt_cpu_backend.kernels->unique(a, base, values, inverse, counts_), values, inverse, counts_);
}
static mt_status fake_bincount(const mt_tensor *a, const mt_tensor *weights, int64_t minlength, mt_tensor **result) {
  const mt_tensor *like = a;
  COUNT_SLOT(bincount);
  FAKE_MADE(mt_cpu_backend.kernels->bincount(a, weights, minlength, result), result);
}
static mt_status fake_one_hot(const mt_tensor *index, int64_t num_classes, int64_t base, mt_tensor **result) {
  const mt_tensor *like = index;
  COUNT_SLOT(one_hot);
  FAKE_MADE(mt_cpu_backend.kernels->one_hot(index, num_classes, base, result), result);
}

#define FAKE_PTR_1(slot) fake_##slot
#define FAKE_PTR_0(slot) NULL
#define FAKE_SLOT(slot, params) .slot = FAKE_CAT(FAKE_PTR_, FAKE_KNOWN(slot))(slot),
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
static const mt_kernels fake_kernels = {
    MT_KERNEL_LIST(FAKE_SLOT)
    .masked_select = fake_masked_select,
    .nonzero = fake_nonzero,
    .unique = fake_unique,
    .bincount = fake_bincount,
    .one_hot = fake_one_hot,
};
#pragma GCC diagnostic pop

/* ---------------------------------------------------------------- bytes */
static mt_status fake_transfer(mt_tensor *dst, const mt_tensor *src, int flags) {
  (void)flags; /* every copy is done when it returns */
  bool to_host = dst->_device_type == MT_CPU, from_host = src->_device_type == MT_CPU;
  COUNT(transfers);
  if (to_host) COUNT(to_host);
  else if (from_host) COUNT(to_device);
  else if (dst->_device_index != src->_device_index) COUNT(peer);
  size_t n = (size_t)src->_numel * mt_itemsize(src->_dtype);
  if ((size_t)dst->_numel * mt_itemsize(dst->_dtype) != n)
    return mt_error(MT_EINVAL, "fake transfer: %zu bytes into a tensor of %zu", n,
                    (size_t)dst->_numel * mt_itemsize(dst->_dtype));
  if (!n) return MT_OK;
  enter();
  memcpy(dst->_data, src->_data, n);
  leave();
  return MT_OK;
}

/* ---------------------------------------------------------------- devices, streams, events */
static int fake_count(void) { return ndev; }
static int fake_current(void) { return current; }
static mt_status fake_set_device(int index) {
  current = index;
  return MT_OK;
}

typedef struct fake_stream {
  int device, priority;
} fake_stream;
static void *current_streams[MT_MAX_DEVICES];

static mt_status fake_stream_new(int index, int priority, void **out) {
  fake_stream *s = malloc(sizeof *s);
  if (!s) return mt_error(MT_ENOMEM, "Stream: out of memory");
  s->device = index;
  s->priority = priority;
  *out = s;
  return MT_OK;
}
static void fake_stream_free(int index, void *stream) {
  if (current_streams[index] == stream) current_streams[index] = NULL; /* the default stream again */
  free(stream);
}
static void *fake_current_stream(int index) { return current_streams[index]; }
static mt_status fake_set_stream(int index, void *stream) {
  current_streams[index] = stream;
  return MT_OK;
}
static mt_status fake_synchronize(int index, void *stream) {
  (void)index;
  (void)stream;
  COUNT(synchronizes);
  return MT_OK;
}
static int fake_stream_query(int index, void *stream) {
  (void)index;
  (void)stream;
  return 1;
}

typedef struct fake_event {
  double ms; /* when it was recorded, on CLOCK_MONOTONIC */
} fake_event;
static mt_status fake_event_new(int index, int flags, void **out) {
  (void)index;
  (void)flags;
  fake_event *e = calloc(1, sizeof *e);
  if (!e) return mt_error(MT_ENOMEM, "Event: out of memory");
  *out = e;
  return MT_OK;
}
static void fake_event_free(int index, void *event) {
  (void)index;
  free(event);
}
static mt_status fake_event_record(int index, void *event, void *stream) {
  (void)index;
  (void)stream;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ((fake_event *)event)->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
  return MT_OK;
}
static mt_status fake_event_elapsed(int index, void *start, void *end, double *ms) {
  (void)index;
  *ms = ((fake_event *)end)->ms - ((fake_event *)start)->ms;
  return MT_OK;
}

/* ---------------------------------------------------------------- memory, description */
static mt_status fake_memory_info(int index, mt_device_memory *out) {
  pthread_mutex_lock(&mu);
  out->reserved = used[index];
  out->peak_reserved = peak_used[index];
  out->free_bytes = capacity - used[index];
  out->total_bytes = capacity;
  pthread_mutex_unlock(&mu);
  return MT_OK;
}
static void fake_reset_peak(int index) {
  pthread_mutex_lock(&mu);
  peak_used[index] = used[index];
  pthread_mutex_unlock(&mu);
}
static int fake_describe(char *buf, size_t n) {
  return snprintf(buf, n, "a fake device for specs (MOONTORCH_FAKE_CUDA), %d device%s of %lld MB, run on the CPU",
                  ndev, ndev == 1 ? "" : "s", (long long)(capacity >> 20));
}

mt_status mt_fake_setup(int ndevices, int64_t bytes) {
  if (bytes < 0) return mt_error(MT_EINVAL, "fake_cuda_install: bytes must be >= 0, got %lld", (long long)bytes);
  int64_t want = bytes ? bytes : (int64_t)256 << 20;
  if (ndevices != ndev || want != capacity) {
    ndev = 0;
    MT_TRY(map_arenas(ndevices, (size_t)want));
    ndev = ndevices;
    capacity = want;
  }
  if (current >= ndev) current = 0;
  install_handler();
  return MT_OK;
}

const mt_backend mt_fake_backend = {
    .name = "fake",
    .type = MT_CUDA,
    .kernels = &fake_kernels,
    .memory = &fake_memory,
    .holds_data = true,
    .device_count = fake_count,
    .current_device = fake_current,
    .set_device = fake_set_device,
    .transfer = fake_transfer,
    .pinned = &fake_pinned,
    .stream_new = fake_stream_new,
    .stream_free = fake_stream_free,
    .current_stream = fake_current_stream,
    .set_stream = fake_set_stream,
    .synchronize = fake_synchronize,
    .stream_query = fake_stream_query,
    .event_new = fake_event_new,
    .event_free = fake_event_free,
    .event_record = fake_event_record,
    .event_elapsed = fake_event_elapsed,
    .memory_info = fake_memory_info,
    .reset_peak = fake_reset_peak,
    .describe = fake_describe,
    .supports = NULL,
    .rng = &mt_cpu_rng, /* the CPU's kernels draw with the CPU's engine (s7-numconv) */
};
