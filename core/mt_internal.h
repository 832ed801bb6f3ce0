/* mt_internal.h -- what every part of the core shares: errors, dtype dispatch, allocation,
 * the strided iterator and the thread pool. Not installed. */
#ifndef MT_INTERNAL_H
#define MT_INTERNAL_H

#define MT_BUILDING 1
#include "moontorch.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------- errors */
/* Record a specific message for the current thread and return `code`. */
mt_status mt_error(mt_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define MT_TRY(expr)                    \
  do {                                  \
    mt_status mt_s_ = (expr);           \
    if (mt_s_ != MT_OK) return mt_s_;   \
  } while (0)

/* The numbering of dims/positions in messages (see mt_set_message_base): MT_D(d) shows dim d. */
extern int mt_msg_base;
#define MT_D(d) ((d) >= 0 ? (long long)(d) + mt_msg_base : (long long)(d))

/* "[2, 3]" into a thread-local ring of buffers (valid for a few calls). */
const char *mt_shape_str(const int64_t *sizes, int ndim);
#define MT_SHAPE(t) mt_shape_str((t)->_sizes, (t)->_ndim)

/* Argument checks shared by ops: each records "<op>: ..." and returns the status. */
mt_status mt_check_tensor(const mt_tensor *t, const char *op, const char *arg);
mt_status mt_wrap_dim(int dim, int ndim, const char *op, int *out);
mt_status mt_check_sizes(const int64_t *sizes, int ndim, const char *op, int64_t *numel);

/* ---------------------------------------------------------------- dtypes */
/* PyTorch's ScalarType names ("Float", "Long", ...) for messages. */
const char *mt_type_title(int dtype);

typedef uint16_t mt_half;
typedef uint16_t mt_bf16;

static inline float mt_h2f(mt_half h) { return mt_half_to_float(h); }
static inline float mt_b2f(mt_bf16 h) {
  union { uint32_t u; float f; } v;
  v.u = (uint32_t)h << 16;
  return v.f;
}
static inline mt_bf16 mt_f2b(float f) { return mt_float_to_bfloat16(f); }
static inline mt_half mt_f2h(float f) { return mt_float_to_half(f); }

static inline bool mt_is_float(int dt) {
  return dt == MT_FLOAT32 || dt == MT_FLOAT64 || dt == MT_FLOAT16 || dt == MT_BFLOAT16;
}
static inline bool mt_is_reduced_float(int dt) { return dt == MT_FLOAT16 || dt == MT_BFLOAT16; }
static inline size_t mt_itemsize(int dt) { return mt_dtype_size(dt); }

/* X(DT, ctype, load-to-native-expr, store-from-native-expr): native is the type arithmetic is
 * done in (float for half/bfloat16). `x` is the stored value, `v` the native value. */
#define MT_FOREACH_DTYPE(X)                                        \
  X(MT_UINT8, uint8_t, (x), (uint8_t)(int64_t)(v))                 \
  X(MT_INT8, int8_t, (x), (int8_t)(int64_t)(v))                    \
  X(MT_INT16, int16_t, (x), (int16_t)(int64_t)(v))                 \
  X(MT_INT32, int32_t, (x), (int32_t)(int64_t)(v))                 \
  X(MT_INT64, int64_t, (x), (int64_t)(v))                          \
  X(MT_FLOAT16, mt_half, mt_h2f(x), mt_f2h((float)(v)))            \
  X(MT_FLOAT32, float, (x), (float)(v))                            \
  X(MT_FLOAT64, double, (x), (double)(v))                          \
  X(MT_BOOL, uint8_t, (x), (uint8_t)((v) != 0))                    \
  X(MT_BFLOAT16, mt_bf16, mt_b2f(x), mt_f2b((float)(v)))
/* The same list for nested loops over two dtypes (a macro cannot expand inside itself): X is
 * called with the extra leading arguments first, X(args..., DT, ctype, load, store). */
#define MT_FOREACH_DTYPE_B(X, ...)                                             \
  X(__VA_ARGS__, MT_UINT8, uint8_t, (x), (uint8_t)(int64_t)(v))                \
  X(__VA_ARGS__, MT_INT8, int8_t, (x), (int8_t)(int64_t)(v))                   \
  X(__VA_ARGS__, MT_INT16, int16_t, (x), (int16_t)(int64_t)(v))                \
  X(__VA_ARGS__, MT_INT32, int32_t, (x), (int32_t)(int64_t)(v))                \
  X(__VA_ARGS__, MT_INT64, int64_t, (x), (int64_t)(v))                         \
  X(__VA_ARGS__, MT_FLOAT16, mt_half, mt_h2f(x), mt_f2h((float)(v)))           \
  X(__VA_ARGS__, MT_FLOAT32, float, (x), (float)(v))                           \
  X(__VA_ARGS__, MT_FLOAT64, double, (x), (double)(v))                         \
  X(__VA_ARGS__, MT_BOOL, uint8_t, (x), (uint8_t)((v) != 0))                   \
  X(__VA_ARGS__, MT_BFLOAT16, mt_bf16, mt_b2f(x), mt_f2b((float)(v)))

/* ---------------------------------------------------------------- allocation */
void *mt_aligned_alloc(size_t nbytes);
/* Tensor blocks of up to MT_SMALL_BLOCK bytes come from per-thread free lists (alloc.c); so do
 * graph nodes, blocks of MT_NODE_BLOCK bytes (mt_small_alloc). */
#define MT_SMALL_BLOCK 1024
#define MT_NODE_BLOCK 640
void *mt_small_alloc(void);
void mt_small_free(void *p);
/* An embedded tensor head's block also holds its autograd metadata (core/grad's mt_meta, at most
 * MT_META_BYTES), right after the storage. */
#define MT_META_BYTES 48
#define MT_EMBEDDED_META_OFFSET (sizeof(mt_tensor) + sizeof(mt_storage))
#define MT_TENSOR_EMBEDDED_HEAD 0x80000000u
void mt_aligned_free(void *p);
/* A new contiguous tensor; contents uninitialised. `op` names the caller in error messages. */
mt_status mt_new(const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **out);
/* A new contiguous tensor of t's sizes (checked when t was made) and `dtype`, whose itemsize is
 * at most t's (so that the size cannot overflow). */
mt_status mt_new_like(const mt_tensor *t, int dtype, const char *op, mt_tensor **out);
/* A new head over `t`'s storage with the given geometry. */
mt_status mt_new_view(mt_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim, int64_t offset,
                      mt_tensor **out);
void mt_compute_strides(const int64_t *sizes, int ndim, int64_t *strides);
/* Make `out` (an out= argument) have the given shape and dtype, resizing its storage if needed. */
mt_status mt_prepare_out(mt_tensor *out, const int64_t *sizes, int ndim, int dtype, const char *op);
/* Either use `out` (checked and resized) or allocate; *dst is a new reference in both cases. */
mt_status mt_out_or_new(mt_tensor *out, const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **dst);
/* Hand `r` (a new reference) to the caller: into *result if non-NULL, else release it. */
static inline mt_status mt_give(mt_tensor *r, mt_tensor **result) {
  if (result) *result = r; else mt_tensor_release(r);
  return MT_OK;
}
static inline void mt_bump_version(mt_tensor *t) { __atomic_add_fetch(&t->_storage->_version, 1, __ATOMIC_RELAXED); }
/* Do a and b's memory overlap? (conservative: same storage and overlapping byte ranges) */
bool mt_may_overlap(const mt_tensor *a, const mt_tensor *b);

/* ---------------------------------------------------------------- strided iteration */
#define MT_ITER_MAX_OPS 8
typedef struct mt_iter {
  int ndim;                                   /* after coalescing; dim 0 is the fastest */
  int nops;
  int64_t numel;
  int64_t sizes[MT_MAX_DIMS];
  int64_t strides[MT_ITER_MAX_OPS][MT_MAX_DIMS]; /* bytes */
  char *data[MT_ITER_MAX_OPS];
} mt_iter;
/* The inner loop: n elements, ptrs[i] advancing by strides[i] bytes. */
typedef void (*mt_loop_fn)(void *ctx, char **ptrs, const int64_t *strides, int64_t n);
/* Set up iteration of ops[0..nops) over `sizes` (operands are broadcast to it: their sizes must
 * be 1 or equal, aligned at the right). Dims are ordered by ops[0]'s strides and coalesced. */
void mt_iter_init(mt_iter *it, mt_tensor **ops, int nops, const int64_t *sizes, int ndim);
/* Run `fn` over every element, in parallel when numel >= grain * 2 and threads are available. */
void mt_iter_run(const mt_iter *it, mt_loop_fn fn, void *ctx, int64_t grain);
/* Elements per thread below which kernels stay single-threaded. */
#define MT_GRAIN 32768

/* ---------------------------------------------------------------- the CPU (cpu.c) */
/* Does this CPU (and OS) have all of `features` (MT_CPU_* bits)? Callers on hot paths keep the answer. */
static inline bool mt_cpu_has(uint32_t features) { return (mt_cpu_features() & features) == features; }

/* ---------------------------------------------------------------- threads */
typedef void (*mt_range_fn)(void *ctx, int64_t begin, int64_t end);
/* Run fn over [0, n) split across the pool; chunks no smaller than `grain`. */
void mt_parallel_for(int64_t n, int64_t grain, mt_range_fn fn, void *ctx);
int mt_in_parallel(void);
/* Where the thread count came from: "MT_NUM_THREADS", "OMP_NUM_THREADS", "set_num_threads" or the CPUs. */
const char *mt_threads_source(void);

/* ---------------------------------------------------------------- vectorised float32 math (tensor/vmath.c) */
/* The unary ops with a vectorised float32 loop for contiguous data: X(OP, name), MT_OP_##OP. */
#define MT_VMATH_OPS(X)                                                                                              \
  X(EXP, exp) X(LOG, log) X(TANH, tanh) X(SIGMOID, sigmoid) X(EXPM1, expm1) X(LOG1P, log1p) X(SILU, silu)           \
  X(GELU_TANH, gelu_tanh) X(SOFTPLUS, softplus)
typedef void (*mt_vmath_fn)(float *out, const float *in, int64_t n);
/* out[i] = op(in[i]) for n contiguous floats (out may be in); NULL when the op has no such loop or the CPU
 * lacks AVX2+FMA (or MOONTORCH_VMATH=0 is set). */
mt_vmath_fn mt_vmath_f32(int op);

#endif
