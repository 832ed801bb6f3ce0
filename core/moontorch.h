/*
 * moontorch.h -- the public C API of libmoontorch.
 *
 * A C program can create tensors, run every op and read results through this header alone
 * (see examples/c_example.c). The LuaJIT FFI declarations are generated from this file
 * (`cc -E -P -DMT_FFI core/moontorch.h`), so everything below stays inside the C subset that
 * ffi.cdef parses: no _Atomic, no varargs, no structs passed by value, no macros inside
 * declarations (X-macro lists are expanded by the preprocessor before ffi sees them).
 *
 * Conventions
 *  - Every fallible function returns mt_status (MT_OK == 0) and hands results out through
 *    out-parameters. On failure mt_last_error() holds a specific message naming the op.
 *  - Functions that hand out a tensor hand out a new reference: release it with
 *    mt_tensor_release(). Arguments are borrowed.
 *  - Dimensions are 0-based and may be negative (-1 is the last), as in PyTorch's C++ API.
 *  - Ops that read or write positions (gather, index_select, argmax, sort, nonzero, ...) take
 *    an `index_base`: 0 for C-style indices, 1 for Lua's (the Lua layer passes 1).
 *  - `out` arguments: NULL means "allocate a result and return it through *result";
 *    a tensor means "write into it" (in-place when it is also an input), and then *result
 *    may be NULL. The out tensor must have the result's dtype; it is resized if its shape differs.
 */
#ifndef MOONTORCH_H
#define MOONTORCH_H

#ifndef MT_FFI
#include <stddef.h>
#include <stdint.h>
#endif

#if defined(MT_FFI)
#define MT_API
#elif defined(MT_BUILDING)
#define MT_API __attribute__((visibility("default")))
#else
#define MT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status codes */
#define MT_STATUS_LIST(X)                                   \
  X(OK, "ok")                                               \
  X(EINVAL, "invalid argument")                             \
  X(ESHAPE, "shape mismatch")                               \
  X(EDTYPE, "dtype mismatch")                               \
  X(ERANGE, "index out of range")                           \
  X(ENOMEM, "out of memory")                                \
  X(EDEVICE, "device error")                                \
  X(EIO, "input/output error")                              \
  X(EFORMAT, "bad file format")                             \
  X(ESTATE, "invalid state")                                \
  X(ENOTIMPL, "not implemented")

#define MT_STATUS_ENUM_(name, text) MT_##name,
typedef enum mt_status { MT_STATUS_LIST(MT_STATUS_ENUM_) MT_STATUS_COUNT } mt_status;
#undef MT_STATUS_ENUM_

/* The message of the last failure on this thread ("" if none). */
MT_API const char *mt_last_error(void);
/* The generic text of a status code. */
MT_API const char *mt_status_string(mt_status s);
MT_API void mt_clear_error(void);
/* Dimensions and positions in messages are counted from `base` (0 by default; the Lua layer sets
 * 1 so that its users read their own numbering). */
MT_API void mt_set_message_base(int base);

/* ---------------------------------------------------------------- dtypes and devices */
/* Numbered as PyTorch's ScalarType where PyTorch has the type. */
#define MT_DTYPE_LIST(X)                 \
  X(UINT8, uint8, uint8_t, 1)            \
  X(INT8, int8, int8_t, 1)               \
  X(INT16, int16, int16_t, 2)            \
  X(INT32, int32, int32_t, 4)            \
  X(INT64, int64, int64_t, 8)            \
  X(FLOAT16, float16, uint16_t, 2)       \
  X(FLOAT32, float32, float, 4)          \
  X(FLOAT64, float64, double, 8)         \
  X(BOOL, bool, uint8_t, 1)              \
  X(BFLOAT16, bfloat16, uint16_t, 2)

typedef enum mt_dtype {
  MT_UINT8 = 0,
  MT_INT8 = 1,
  MT_INT16 = 2,
  MT_INT32 = 3,
  MT_INT64 = 4,
  MT_FLOAT16 = 5,
  MT_FLOAT32 = 6,
  MT_FLOAT64 = 7,
  MT_BOOL = 11,
  MT_BFLOAT16 = 15,
  MT_DTYPE_MAX = 16
} mt_dtype;

/* Devices: where a tensor's data lives and which backend's kernels compute on it. The meta device
 * holds shapes, dtypes and strides but no data: every op gives its result's shape, dtype and
 * strides there without computing (PyTorch's meta device). */
typedef enum mt_device_type { MT_CPU = 0, MT_CUDA = 1, MT_META = 2, MT_DEVICE_TYPES } mt_device_type;
typedef struct mt_device {
  int32_t type;  /* mt_device_type */
  int32_t index; /* 0 but for CUDA's devices */
} mt_device;

MT_API int mt_dtype_valid(int dtype);
MT_API size_t mt_dtype_size(int dtype);
MT_API const char *mt_dtype_name(int dtype); /* "float32", ... */
MT_API int mt_dtype_is_floating(int dtype);
MT_API int mt_dtype_is_integral(int dtype);  /* integers and bool */
MT_API int mt_promote_types(int a, int b);
MT_API int mt_get_default_dtype(void);
MT_API mt_status mt_set_default_dtype(int dtype); /* float32 or float64 */

/* Numbers handed out. LuaJIT keeps its other types' tags inside the NaN space of a double: a
 * double whose bits are such a NaN, read by Lua, is taken for nil, a boolean, a table, ... (and
 * the process crashes). Every double (or float) the core hands out, through a return value, an
 * out-parameter or a struct field, is passed through mt_number_out first: a NaN becomes the quiet
 * NaN with the same sign and no payload (bits 0x7ff8000000000000 or 0xfff8000000000000), every
 * other value passes unchanged. mt_float_out does the same for a float (0x7fc00000 / 0xffc00000). */
MT_API double mt_number_out(double x);
MT_API float mt_float_out(float x);

/* float16 / bfloat16 bit conversions (round to nearest even; NaNs out through mt_float_out) */
MT_API uint16_t mt_float_to_half(float f);
MT_API float mt_half_to_float(uint16_t h);
MT_API uint16_t mt_float_to_bfloat16(float f);
MT_API float mt_bfloat16_to_float(uint16_t h);

/* ---------------------------------------------------------------- storage and tensor */
#define MT_MAX_DIMS 16

/* Memory of a device: `device` is the index of the device (of the allocator's device type) the bytes
 * are on. alloc returns NULL when there is no memory left (no error message). */
typedef struct mt_allocator {
  void *(*alloc)(void *ctx, int device, size_t nbytes);
  void (*free)(void *ctx, int device, void *ptr, size_t nbytes);
  void *ctx;
} mt_allocator;

typedef struct mt_storage {
  int64_t _refcount;        /* atomic (__atomic builtins) */
  char *_data;              /* 64-byte aligned */
  size_t _nbytes;
  int32_t _device_type;     /* mt_device_type */
  int32_t _device_index;
  int64_t _version;         /* bumped by every in-place write (autograd checks it) */
  uint32_t _flags;          /* MT_STORAGE_* */
  uint32_t _pad;
  const mt_allocator *_allocator; /* NULL: the built-in CPU allocator */
  void *_block;             /* what to hand back to the allocator */
} mt_storage;

enum { MT_STORAGE_EMBEDDED = 1, MT_STORAGE_EXTERNAL = 2, MT_STORAGE_MMAP = 4, MT_STORAGE_LEAF_GRAD = 8 /* holds a leaf that requires grad */ };

/* The tensor head: Lua reads these fields directly. Names start with '_' so that they never
 * shadow the Lua API's properties (t.dtype, t.device, t.data are Lua objects, not fields). */
typedef struct mt_tensor {
  int64_t _refcount;        /* atomic (__atomic builtins) */
  mt_storage *_storage;
  char *_data;              /* _storage->_data + _offset * itemsize: the first element */
  int64_t _offset;          /* in elements */
  int64_t _numel;
  int32_t _dtype;           /* mt_dtype */
  int32_t _ndim;
  int32_t _device_type;
  int32_t _device_index;
  uint32_t _flags;          /* MT_TENSOR_* */
  uint32_t _pad;
  void *_autograd;          /* autograd metadata (core/grad), NULL for plain tensors */
  int64_t _sizes[MT_MAX_DIMS];
  int64_t _strides[MT_MAX_DIMS]; /* in elements */
} mt_tensor;

enum {
  MT_TENSOR_CONTIGUOUS = 1,     /* row-major dense, kept up to date by every shape change */
  MT_TENSOR_PARAMETER = 2,      /* nn.Parameter */
  MT_TENSOR_REQUIRES_GRAD = 4,
  MT_TENSOR_WRAPPED_NUMBER = 8  /* a 0-dim tensor made from a Lua/C number (type promotion) */
};

/* Creation. `sizes` may be NULL when ndim == 0 (a scalar). Contents uninitialised. Every factory
 * takes the device to make its result on: NULL is the CPU; a device this build has no backend for
 * (CUDA) is MT_EDEVICE. */
MT_API mt_status mt_tensor_empty(const int64_t *sizes, int ndim, int dtype, const mt_device *device, mt_tensor **out);
MT_API mt_status mt_tensor_empty_like(const mt_tensor *t, int dtype /* -1: same */, mt_tensor **out); /* t's device */
MT_API mt_status mt_tensor_full(const int64_t *sizes, int ndim, int dtype, double value, const mt_device *device,
                                mt_tensor **out);
/* A tensor over memory the caller owns; `deleter(ctx, data)` is called when the last view dies
 * (deleter may be NULL). */
MT_API mt_status mt_tensor_from_blob(void *data, const int64_t *sizes, const int64_t *strides, int ndim,
                                     int dtype, void (*deleter)(void *ctx, void *data), void *ctx,
                                     mt_tensor **out);
MT_API mt_tensor *mt_tensor_retain(mt_tensor *t);
MT_API void mt_tensor_release(mt_tensor *t);
/* A new head over the same storage (same sizes/strides/offset), as PyTorch's alias / .data. */
MT_API mt_status mt_tensor_alias(mt_tensor *t, mt_tensor **out);
/* t.data = src: t takes src's storage, geometry, dtype and device, keeping its own identity and
 * autograd state (nn.Module.to() converts parameters this way). src must not require grad. */
MT_API mt_status mt_tensor_set_data(mt_tensor *t, mt_tensor *src);

/* Number of live tensor heads and storages (a leak check), and bytes held by storages in host
 * memory (the CPU's; a device's bytes are counted per device: mt_memory_stats_of). */
typedef struct mt_stats {
  int64_t live_tensors;
  int64_t live_storages;
  int64_t live_bytes;
  int64_t bytes_since_gc;   /* host bytes allocated since the Lua layer's last collection */
  /* nonzero: an allocation took some device's bytes past the limit mt_gc_done set; the Lua layer
   * then collects dead tensors and calls mt_gc_done */
  int64_t device_pressure;
} mt_stats;
MT_API mt_stats *mt_get_stats(void);
/* After a collection: the next limit of each device's bytes (their growth allowed before the next
 * collection: half the live bytes, at least 16 MB, but at most a quarter of the device's free memory
 * where its backend tells it, and at least 1 MB), and device_pressure cleared. mt_gc_pressure: is some device still above the
 * middle of its growth (the collection freed less than half of what grew: collect once more)? */
MT_API void mt_gc_done(void);
MT_API int mt_gc_pressure(void);

/* Element access (any dtype; values pass through double, NaNs through mt_number_out; int64 also
 * exactly through int64). */
MT_API mt_status mt_tensor_item(const mt_tensor *t, double *out);
MT_API mt_status mt_tensor_item_int64(const mt_tensor *t, int64_t *out);
MT_API mt_status mt_tensor_get(const mt_tensor *t, const int64_t *index, double *out);
MT_API mt_status mt_tensor_set(mt_tensor *t, const int64_t *index, double value);
/* Copy all elements, in row-major order, converted to double / to int64 (n must equal numel). */
MT_API mt_status mt_tensor_to_doubles(const mt_tensor *t, double *out, int64_t n);
MT_API mt_status mt_tensor_to_int64s(const mt_tensor *t, int64_t *out, int64_t n);
MT_API mt_status mt_tensor_from_doubles(mt_tensor *t, const double *src, int64_t n);
MT_API int mt_tensor_is_contiguous(const mt_tensor *t);
/* Recompute _numel and the CONTIGUOUS flag after _sizes/_strides were changed in place. */
MT_API void mt_tensor_refresh(mt_tensor *t);

/* ---------------------------------------------------------------- views (no copy) */
MT_API mt_status mt_view(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out); /* one size may be -1 */
MT_API mt_status mt_reshape(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out); /* copies only if it must */
MT_API mt_status mt_as_strided(mt_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim,
                               int64_t offset /* -1: keep */, mt_tensor **out);
MT_API mt_status mt_transpose(mt_tensor *t, int d0, int d1, mt_tensor **out);
MT_API mt_status mt_permute(mt_tensor *t, const int64_t *dims, int ndim, mt_tensor **out);
MT_API mt_status mt_narrow(mt_tensor *t, int dim, int64_t start, int64_t length, mt_tensor **out);
MT_API mt_status mt_slice(mt_tensor *t, int dim, int64_t start, int64_t stop, int64_t step, mt_tensor **out);
MT_API mt_status mt_select(mt_tensor *t, int dim, int64_t index, mt_tensor **out); /* index 0-based, may be negative */
MT_API mt_status mt_unsqueeze(mt_tensor *t, int dim, mt_tensor **out);
MT_API mt_status mt_squeeze(mt_tensor *t, int dim, int all, mt_tensor **out);
MT_API mt_status mt_expand(mt_tensor *t, const int64_t *sizes, int ndim, mt_tensor **out); /* -1 keeps a size */
MT_API mt_status mt_flatten(mt_tensor *t, int start_dim, int end_dim, mt_tensor **out);
MT_API mt_status mt_unfold(mt_tensor *t, int dim, int64_t size, int64_t step, mt_tensor **out);
MT_API mt_status mt_contiguous(mt_tensor *t, mt_tensor **out); /* a new reference to t itself if already contiguous */
MT_API mt_status mt_diagonal(mt_tensor *t, int64_t offset, int d0, int d1, mt_tensor **out);
/* The broadcast shape of two shapes. */
MT_API mt_status mt_broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, int *nout);

/* ---------------------------------------------------------------- the op list */
/* Every op of the core, named once. X(ID, name, kind, arity, grad, kernel, binding, params, aliases):
 *   ID       its constant: MT_OP_<ID>, the `op` argument of mt_unary, mt_binary, mt_reduce, ...
 *   name     the name PyTorch and the Lua bindings give it (torch.<name>, t:<name>)
 *   kind     UNARY_FLOAT: float result (integers turn into the default float dtype); UNARY_KEEP: keeps
 *            an integer dtype; UNARY_TEST: bool result, no in-place form; UNARY_LOGICAL: bool result;
 *            UNARY_BITS: integers and bool only; BINARY_ARITH: PyTorch's promotion; BINARY_FLOAT: float
 *            result; BINARY_CMP: bool result; BINARY_BITS: integers and bool only; REDUCE: mt_reduce;
 *            VIEW: shares its input's storage when it can; OP: any other computation; COMPOSITE: made of
 *            other ops, no kernel of its own
 *   arity    how many tensors it takes (-1: a list of them)
 *   grad     DIFF: recorded for autograd (when a floating result and an input requires grad); NODIFF
 *   kernel   its slot in a backend's kernel table (core/kernels.h); none: it runs no kernel of its own
 *   binding  how the Lua bindings reach it: PLAIN: torch.<name>(a, [params,] [{out=t}]), t:<name>(),
 *            t:<name>_() are made from this line; CUSTOM: written by hand under <name>; INTERNAL: a
 *            variant reached through another op's binding (pow_scalar through pow, ...)
 *   params   what p1, p2 of mt_unary mean (NaN: not given)
 *   aliases  other public names of the op, separated by spaces */
#define MT_OP_LIST(X)                                                                                                  \
  /* unary elementwise: mt_unary, kernel slot `unary` */                                                               \
  X(NEG, neg, UNARY_KEEP, 1, DIFF, unary, PLAIN, "", "negative")                                                       \
  X(ABS, abs, UNARY_KEEP, 1, DIFF, unary, PLAIN, "", "absolute")                                                       \
  X(SIGN, sign, UNARY_KEEP, 1, DIFF, unary, PLAIN, "", "")                                                             \
  X(EXP, exp, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                              \
  X(EXP2, exp2, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(LOG, log, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                              \
  X(LOG2, log2, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(LOG10, log10, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                          \
  X(LOG1P, log1p, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                          \
  X(EXPM1, expm1, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                          \
  X(SQRT, sqrt, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(RSQRT, rsqrt, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                          \
  X(SIN, sin, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                              \
  X(COS, cos, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                              \
  X(TAN, tan, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                              \
  X(ASIN, asin, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "arcsin")                                                      \
  X(ACOS, acos, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "arccos")                                                      \
  X(ATAN, atan, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "arctan")                                                      \
  X(SINH, sinh, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(COSH, cosh, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(TANH, tanh, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(SIGMOID, sigmoid, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                      \
  X(LOGIT, logit, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "eps", "special.logit")                                          \
  X(RELU, relu, UNARY_KEEP, 1, DIFF, unary, PLAIN, "", "")                                                             \
  X(GELU, gelu, UNARY_FLOAT, 1, DIFF, unary, CUSTOM, "", "")                                                           \
  X(GELU_TANH, gelu_tanh, UNARY_FLOAT, 1, DIFF, unary, INTERNAL, "", "")                                               \
  X(SILU, silu, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(ERF, erf, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                              \
  X(ERFC, erfc, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(FLOOR, floor, UNARY_KEEP, 1, DIFF, unary, PLAIN, "", "")                                                           \
  X(CEIL, ceil, UNARY_KEEP, 1, DIFF, unary, PLAIN, "", "")                                                             \
  X(ROUND, round, UNARY_KEEP, 1, DIFF, unary, CUSTOM, "", "")                                                          \
  X(TRUNC, trunc, UNARY_KEEP, 1, DIFF, unary, PLAIN, "", "fix")                                                        \
  X(FRAC, frac, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                            \
  X(RECIPROCAL, reciprocal, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                \
  X(SQUARE, square, UNARY_KEEP, 1, DIFF, unary, PLAIN, "", "")                                                         \
  X(SINC, sinc, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "special.sinc")                                                \
  X(LOGICAL_NOT, logical_not, UNARY_LOGICAL, 1, NODIFF, unary, PLAIN, "", "")                                          \
  X(BITWISE_NOT, bitwise_not, UNARY_BITS, 1, NODIFF, unary, PLAIN, "", "")                                             \
  X(ISNAN, isnan, UNARY_TEST, 1, NODIFF, unary, PLAIN, "", "")                                                         \
  X(ISINF, isinf, UNARY_TEST, 1, NODIFF, unary, PLAIN, "", "")                                                         \
  X(ISFINITE, isfinite, UNARY_TEST, 1, NODIFF, unary, PLAIN, "", "")                                                   \
  X(SOFTPLUS, softplus, UNARY_FLOAT, 1, DIFF, unary, INTERNAL, "", "")                                                 \
  X(LGAMMA, lgamma, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "")                                                        \
  X(DIGAMMA, digamma, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "", "psi special.digamma special.psi")                        \
  X(POLYGAMMA, polygamma, UNARY_FLOAT, 1, DIFF, unary, PLAIN, "n", "special.polygamma")                                \
  X(CLAMP, clamp, UNARY_KEEP, 1, DIFF, unary, CUSTOM, "min max", "clip")                                               \
  X(POW_SCALAR, pow_scalar, UNARY_KEEP, 1, DIFF, unary, INTERNAL, "exponent", "")                                      \
  X(RPOW_SCALAR, rpow_scalar, UNARY_FLOAT, 1, DIFF, unary, INTERNAL, "base", "")                                       \
  X(LEAKY_RELU, leaky_relu, UNARY_FLOAT, 1, DIFF, unary, INTERNAL, "negative_slope", "")                               \
  X(ELU, elu, UNARY_FLOAT, 1, DIFF, unary, INTERNAL, "alpha", "")                                                      \
  X(HARDTANH, hardtanh, UNARY_KEEP, 1, DIFF, unary, INTERNAL, "min_val max_val", "")                                   \
  X(THRESHOLD, threshold, UNARY_KEEP, 1, DIFF, unary, INTERNAL, "threshold value", "")                                 \
  X(ROUND_DECIMALS, round_decimals, UNARY_FLOAT, 1, DIFF, unary, INTERNAL, "decimals", "")                             \
  X(NAN_TO_NUM, nan_to_num, UNARY_KEEP, 1, DIFF, unary, CUSTOM, "posinf neginf", "")                                   \
  /* binary elementwise: mt_binary, mt_binary_scalar, kernel slot `binary` */                                          \
  X(ADD, add, BINARY_ARITH, 2, DIFF, binary, CUSTOM, "", "")                                                           \
  X(SUB, sub, BINARY_ARITH, 2, DIFF, binary, CUSTOM, "", "subtract")                                                   \
  X(MUL, mul, BINARY_ARITH, 2, DIFF, binary, PLAIN, "", "multiply")                                                    \
  X(DIV, div, BINARY_FLOAT, 2, DIFF, binary, CUSTOM, "", "divide true_divide")                                         \
  X(DIV_TRUNC, div_trunc, BINARY_ARITH, 2, DIFF, binary, INTERNAL, "", "")                                             \
  X(DIV_FLOOR, floor_divide, BINARY_ARITH, 2, DIFF, binary, PLAIN, "", "")                                             \
  X(POW, pow, BINARY_ARITH, 2, DIFF, binary, CUSTOM, "", "")                                                           \
  X(MAXIMUM, maximum, BINARY_ARITH, 2, DIFF, binary, PLAIN, "", "")                                                    \
  X(MINIMUM, minimum, BINARY_ARITH, 2, DIFF, binary, PLAIN, "", "")                                                    \
  X(FMOD, fmod, BINARY_ARITH, 2, DIFF, binary, PLAIN, "", "")                                                          \
  X(REMAINDER, remainder, BINARY_ARITH, 2, DIFF, binary, PLAIN, "", "")                                                \
  X(ATAN2, atan2, BINARY_FLOAT, 2, DIFF, binary, PLAIN, "", "arctan2")                                                 \
  X(EQ, eq, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "")                                                              \
  X(NE, ne, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "not_equal")                                                     \
  X(LT, lt, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "less")                                                          \
  X(LE, le, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "less_equal")                                                    \
  X(GT, gt, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "greater")                                                       \
  X(GE, ge, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "greater_equal")                                                 \
  X(LOGICAL_AND, logical_and, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "")                                            \
  X(LOGICAL_OR, logical_or, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "")                                              \
  X(LOGICAL_XOR, logical_xor, BINARY_CMP, 2, NODIFF, binary, PLAIN, "", "")                                            \
  X(BITWISE_AND, bitwise_and, BINARY_BITS, 2, NODIFF, binary, PLAIN, "", "")                                           \
  X(BITWISE_OR, bitwise_or, BINARY_BITS, 2, NODIFF, binary, PLAIN, "", "")                                             \
  X(BITWISE_XOR, bitwise_xor, BINARY_BITS, 2, NODIFF, binary, PLAIN, "", "")                                           \
  X(HYPOT, hypot, BINARY_FLOAT, 2, DIFF, binary, PLAIN, "", "")                                                        \
  X(FMAX, fmax, BINARY_ARITH, 2, DIFF, binary, PLAIN, "", "")                                                          \
  X(FMIN, fmin, BINARY_ARITH, 2, DIFF, binary, PLAIN, "", "")                                                          \
  X(XLOGY, xlogy, BINARY_FLOAT, 2, DIFF, binary, PLAIN, "", "special.xlogy")                                           \
  X(COPYSIGN, copysign, BINARY_FLOAT, 2, DIFF, binary, PLAIN, "", "")                                                  \
  /* other elementwise ops */                                                                                          \
  X(ADD_SCALED, add_scaled, COMPOSITE, 2, DIFF, none, INTERNAL, "", "")                                                \
  X(ADDCMUL, addcmul, COMPOSITE, 3, DIFF, none, CUSTOM, "", "")                                                        \
  X(ADDCDIV, addcdiv, COMPOSITE, 3, DIFF, none, CUSTOM, "", "")                                                        \
  X(LERP, lerp, COMPOSITE, 3, DIFF, none, CUSTOM, "", "")                                                              \
  X(WHERE, where, OP, 3, DIFF, where, CUSTOM, "", "")                                                                  \
  X(ISCLOSE, isclose, OP, 2, NODIFF, isclose, CUSTOM, "", "")                                                          \
  X(ALLCLOSE, allclose, COMPOSITE, 2, NODIFF, none, CUSTOM, "", "")                                                    \
  X(EQUAL, equal, COMPOSITE, 2, NODIFF, none, CUSTOM, "", "")                                                          \
  /* reductions: mt_reduce, kernel slot `reduce` */                                                                    \
  X(SUM, sum, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                                 \
  X(MEAN, mean, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                               \
  X(PROD, prod, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                               \
  X(AMAX, amax, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                               \
  X(AMIN, amin, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                               \
  X(ALL, all, REDUCE, 1, NODIFF, reduce, CUSTOM, "", "")                                                               \
  X(ANY, any, REDUCE, 1, NODIFF, reduce, CUSTOM, "", "")                                                               \
  X(VAR, var, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                                 \
  X(STD, std, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                                 \
  X(NORM, norm, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                               \
  X(LOGSUMEXP, logsumexp, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                     \
  X(NANSUM, nansum, REDUCE, 1, DIFF, reduce, CUSTOM, "", "")                                                           \
  X(COUNT_NONZERO, count_nonzero, REDUCE, 1, NODIFF, reduce, CUSTOM, "", "")                                           \
  /* other reductions and scans */                                                                                     \
  X(MAX, max, OP, 1, DIFF, reduce_index, CUSTOM, "", "")                                                               \
  X(MIN, min, OP, 1, DIFF, reduce_index, CUSTOM, "", "")                                                               \
  X(ARGMAX, argmax, OP, 1, NODIFF, reduce_index, CUSTOM, "", "")                                                       \
  X(ARGMIN, argmin, OP, 1, NODIFF, reduce_index, CUSTOM, "", "")                                                       \
  X(VAR_MEAN, var_mean, COMPOSITE, 1, DIFF, none, CUSTOM, "", "")                                                      \
  X(STD_MEAN, std_mean, COMPOSITE, 1, DIFF, none, CUSTOM, "", "")                                                      \
  X(CUMSUM, cumsum, OP, 1, DIFF, cumulative, CUSTOM, "", "")                                                           \
  X(CUMPROD, cumprod, OP, 1, DIFF, cumulative, CUSTOM, "", "")                                                         \
  X(SOFTMAX, softmax, OP, 1, DIFF, softmax, CUSTOM, "", "")                                                            \
  X(LOG_SOFTMAX, log_softmax, OP, 1, DIFF, softmax, CUSTOM, "", "")                                                    \
  /* copies and fills */                                                                                               \
  X(COPY_, copy_, OP, 2, DIFF, copy, CUSTOM, "", "")                                                                   \
  X(TO, to, OP, 1, DIFF, copy, CUSTOM, "", "")                                                                         \
  X(CLONE, clone, OP, 1, DIFF, copy, CUSTOM, "", "")                                                                   \
  X(CONTIGUOUS, contiguous, OP, 1, DIFF, copy, CUSTOM, "", "")                                                         \
  X(FILL_, fill_, OP, 1, DIFF, fill, CUSTOM, "", "")                                                                   \
  X(ZERO_, zero_, OP, 1, DIFF, fill, CUSTOM, "", "")                                                                   \
  /* views (and reshape, flatten: a copy when no view can do) */                                                       \
  X(VIEW, view, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                                   \
  X(RESHAPE, reshape, VIEW, 1, DIFF, copy, CUSTOM, "", "")                                                             \
  X(FLATTEN, flatten, VIEW, 1, DIFF, copy, CUSTOM, "", "")                                                             \
  X(AS_STRIDED, as_strided, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                       \
  X(TRANSPOSE, transpose, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                         \
  X(PERMUTE, permute, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                             \
  X(NARROW, narrow, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                               \
  X(SLICE, slice, VIEW, 1, DIFF, none, INTERNAL, "", "")                                                               \
  X(SELECT, select, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                               \
  X(UNSQUEEZE, unsqueeze, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                         \
  X(SQUEEZE, squeeze, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                             \
  X(EXPAND, expand, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                               \
  X(UNFOLD, unfold, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                               \
  X(DIAGONAL, diagonal, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                           \
  /* joining, indexing, rearranging */                                                                                 \
  X(CAT, cat, OP, -1, DIFF, copy, CUSTOM, "", "")                                                                      \
  X(STACK, stack, COMPOSITE, -1, DIFF, none, CUSTOM, "", "")                                                           \
  X(INDEX_SELECT, index_select, OP, 2, DIFF, index_select, CUSTOM, "", "")                                             \
  X(GATHER, gather, OP, 2, DIFF, gather, CUSTOM, "", "")                                                               \
  X(SCATTER, scatter, OP, 3, DIFF, scatter, CUSTOM, "", "")                                                            \
  X(SCATTER_ADD, scatter_add, OP, 3, DIFF, scatter, CUSTOM, "", "")                                                    \
  X(INDEX_ADD, index_add, OP, 3, DIFF, index_write, CUSTOM, "", "")                                                    \
  X(INDEX_COPY, index_copy, OP, 3, DIFF, index_write, CUSTOM, "", "")                                                  \
  X(INDEX_FILL, index_fill, OP, 2, DIFF, index_fill, CUSTOM, "", "")                                                   \
  X(MASKED_FILL, masked_fill, OP, 2, DIFF, masked_fill, CUSTOM, "", "")                                                \
  X(MASKED_SELECT, masked_select, OP, 2, DIFF, masked_select, CUSTOM, "", "")                                          \
  X(MASKED_SCATTER, masked_scatter, OP, 3, DIFF, masked_scatter, CUSTOM, "", "")                                       \
  X(INDEX, index, OP, -1, DIFF, index, INTERNAL, "", "")                                                               \
  X(INDEX_PUT, index_put, OP, -1, DIFF, index_put, CUSTOM, "", "")                                                     \
  X(NONZERO, nonzero, OP, 1, NODIFF, nonzero, CUSTOM, "", "")                                                          \
  X(REPEAT, repeat, OP, 1, DIFF, rearrange, CUSTOM, "", "")                                                            \
  X(REPEAT_INTERLEAVE, repeat_interleave, OP, 1, DIFF, rearrange, CUSTOM, "", "")                                      \
  X(FLIP, flip, OP, 1, DIFF, rearrange, CUSTOM, "", "")                                                                \
  X(ROLL, roll, OP, 1, DIFF, rearrange, CUSTOM, "", "")                                                                \
  X(TRIU, triu, OP, 1, DIFF, triangle, CUSTOM, "", "")                                                                 \
  X(TRIL, tril, OP, 1, DIFF, triangle, CUSTOM, "", "")                                                                 \
  X(DIAG, diag, OP, 1, DIFF, copy, CUSTOM, "", "")                                                                     \
  X(ONE_HOT, one_hot, OP, 1, NODIFF, one_hot, CUSTOM, "", "")                                                          \
  X(SORT, sort, OP, 1, DIFF, sort, CUSTOM, "", "")                                                                     \
  X(TOPK, topk, OP, 1, DIFF, sort, CUSTOM, "", "")                                                                     \
  X(UNIQUE, unique, OP, 1, NODIFF, unique, CUSTOM, "", "")                                                             \
  X(SEARCHSORTED, searchsorted, OP, 2, NODIFF, searchsorted, CUSTOM, "", "")                                           \
  X(BINCOUNT, bincount, OP, 2, NODIFF, bincount, CUSTOM, "", "")                                                       \
  /* factories */                                                                                                      \
  X(EMPTY, empty, OP, 0, NODIFF, none, CUSTOM, "", "")                                                                 \
  X(FULL, full, OP, 0, NODIFF, fill, CUSTOM, "", "")                                                                   \
  X(ARANGE, arange, OP, 0, NODIFF, arange, CUSTOM, "", "")                                                             \
  X(LINSPACE, linspace, OP, 0, NODIFF, linspace, CUSTOM, "", "")                                                       \
  X(LOGSPACE, logspace, OP, 0, NODIFF, linspace, CUSTOM, "", "")                                                       \
  X(EYE, eye, OP, 0, NODIFF, fill, CUSTOM, "", "")                                                                     \
  /* linear algebra: kernel slot `gemm` (outer: `outer`) */                                                            \
  X(MM, mm, OP, 2, DIFF, gemm, CUSTOM, "", "")                                                                         \
  X(BMM, bmm, OP, 2, DIFF, gemm, CUSTOM, "", "")                                                                       \
  X(MATMUL, matmul, OP, 2, DIFF, gemm, CUSTOM, "", "")                                                                 \
  X(MV, mv, OP, 2, DIFF, gemm, CUSTOM, "", "")                                                                         \
  X(DOT, dot, OP, 2, DIFF, gemm, CUSTOM, "", "")                                                                       \
  X(OUTER, outer, OP, 2, DIFF, outer, CUSTOM, "", "")                                                                  \
  X(ADDMM, addmm, OP, 3, DIFF, gemm, CUSTOM, "", "")                                                                   \
  X(BADDBMM, baddbmm, OP, 3, DIFF, gemm, CUSTOM, "", "")                                                               \
  /* random numbers (in the order PyTorch's CPU generator draws them) */                                               \
  X(UNIFORM_, uniform_, OP, 1, NODIFF, uniform, CUSTOM, "", "")                                                        \
  X(NORMAL_, normal_, OP, 1, NODIFF, normal, CUSTOM, "", "")                                                           \
  X(RANDOM_, random_, OP, 1, NODIFF, random, CUSTOM, "", "")                                                           \
  X(BERNOULLI_, bernoulli_, OP, 1, NODIFF, bernoulli, CUSTOM, "", "")                                                  \
  X(BERNOULLI, bernoulli, OP, 1, NODIFF, bernoulli_tensor, CUSTOM, "", "")                                             \
  X(EXPONENTIAL_, exponential_, OP, 1, NODIFF, exponential, CUSTOM, "", "")                                            \
  X(RANDPERM, randperm, OP, 0, NODIFF, randperm, CUSTOM, "", "")                                                       \
  X(MULTINOMIAL, multinomial, OP, 1, NODIFF, multinomial, CUSTOM, "", "")                                              \
  /* torch.distributions' samplers and the gradients of the reparameterized ones (core/ops/samplers.c) */            \
  X(STANDARD_GAMMA, _standard_gamma, OP, 1, DIFF, standard_gamma, CUSTOM, "", "")                                      \
  X(SAMPLE_DIRICHLET, _sample_dirichlet, OP, 1, NODIFF, sample_dirichlet, CUSTOM, "", "")                              \
  X(POISSON, poisson, OP, 1, DIFF, poisson, CUSTOM, "", "")                                                            \
  X(BINOMIAL, binomial, OP, 2, NODIFF, binomial, CUSTOM, "", "")                                                       \
  X(STANDARD_GAMMA_GRAD, _standard_gamma_grad, OP, 2, NODIFF, standard_gamma_grad, CUSTOM, "", "")                     \
  X(DIRICHLET_GRAD, _dirichlet_grad, OP, 3, NODIFF, dirichlet_grad, CUSTOM, "", "")                                    \
  /* optimizers */                                                                                                     \
  X(SGD_STEP, sgd_step, OP, 3, NODIFF, sgd_step, INTERNAL, "", "")                                               \
  /* issue 12, pooling: pools and resampling over the last 1-3 dims (core/ops/pool.c) */                               \
  X(MAX_POOL, max_pool, OP, 1, DIFF, pool_max, INTERNAL, "", "")                                                       \
  X(AVG_POOL, avg_pool, OP, 1, DIFF, resample, INTERNAL, "", "")                                                       \
  X(INTERPOLATE, interpolate, OP, 1, DIFF, resample, INTERNAL, "", "")                                                 \
  X(RESAMPLE_BACKWARD, resample_backward, OP, 1, DIFF, resample, INTERNAL, "", "")                                     \
  X(MAX_UNPOOL, max_unpool, OP, 2, DIFF, pool_index, INTERNAL, "", "")                                                \
  X(PAD, pad, OP, 1, DIFF, resample, INTERNAL, "", "")                                                                 \
  /* convolution (issue 12, conv part): mt_convolution, mt_im2col, mt_col2im (core/ops/conv.c) */                     \
  X(CONVOLUTION, convolution, OP, 3, DIFF, im2col, CUSTOM, "", "")                                                    \
  X(IM2COL, im2col, OP, 1, DIFF, im2col, INTERNAL, "", "")                                                            \
  X(COL2IM, col2im, OP, 1, DIFF, col2im, INTERNAL, "", "")                                                             \
  /* recurrent layers (issue 12, rnn part): one time step's gate arithmetic after its two products (core/ops/rnn.c; \
   * three tensors and two optional biases), and unbind, whose one node takes the gradients of every time step */   \
  X(LSTM_CELL_POINTWISE, lstm_cell_pointwise, OP, 3, DIFF, lstm_cell, CUSTOM, "", "")                                 \
  X(GRU_CELL_POINTWISE, gru_cell_pointwise, OP, 3, DIFF, gru_cell, CUSTOM, "", "")                                    \
  X(UNBIND, unbind, VIEW, 1, DIFF, none, CUSTOM, "", "")                                                               \
  /* optimizers (issue 13: Adam and AdamW) */                                                                          \
  X(ADAM_STEP, adam_step, OP, 6, NODIFF, adam_step, INTERNAL, "", "")                                                 \
  X(RMSPROP_STEP, rmsprop_step, OP, 5, NODIFF, rmsprop_step, INTERNAL, "", "")                                        \
  X(ADAGRAD_STEP, adagrad_step, OP, 4, NODIFF, adagrad_step, INTERNAL, "", "")                                        \
  X(ADADELTA_STEP, adadelta_step, OP, 4, NODIFF, adadelta_step, INTERNAL, "", "")                                     \
  X(ADAMAX_STEP, adamax_step, OP, 5, NODIFF, adamax_step, INTERNAL, "", "")                                            \
  /* issue 12, the modules part: the fused layer norm (core/ops/norm.c) */                                          \
  X(LAYER_NORM, layer_norm, OP, 3, DIFF, layer_norm, CUSTOM, "", "")                                                 \
  X(NLL_LOSS, nll_loss, OP, 3, DIFF, nll_loss, CUSTOM, "", "")                                                     \
  X(CTC_LOSS, ctc_loss, OP, 4, DIFF, ctc_loss, CUSTOM, "", "")                                                     \
  X(EMBEDDING_BAG, embedding_bag, OP, 4, DIFF, embedding_bag, CUSTOM, "", "")                                     \
  /* issue 12, the LSTM's speed: its hidden recurrence over a whole sequence as one op (core/ops/rnn.c) */           \
  X(LSTM_LAYER, lstm_layer, OP, 4, DIFF, none, CUSTOM, "", "")                                                    \
  /* issue 24: a CSR matrix times a dense one (core/ops/sparse.c), what a pruned Linear's forward runs */          \
  X(CSR_MM, csr_mm, OP, 4, DIFF, csr_mm, INTERNAL, "", "")

#ifndef MT_FFI
#define MT_OP_ENUM_(ID, ...) MT_OP_##ID,
typedef enum mt_op { MT_OP_LIST(MT_OP_ENUM_) MT_OP_COUNT } mt_op;
#undef MT_OP_ENUM_
#else
/* Lua reads the ops through mt_op_count / mt_op_info_of: the constants stay out of the FFI's
 * declarations (a smaller Lua heap, so shorter garbage collections) */
typedef enum mt_op { MT_OP_FIRST_ } mt_op;
#endif

/* What the list says of one op (NULL for a number that is no op). */
typedef struct mt_op_info {
  const char *name;    /* torch.<name> */
  const char *kind;    /* "UNARY_FLOAT", ..., "OP", "COMPOSITE" */
  int arity;           /* tensors taken; -1: a list */
  int differentiable;  /* 1: recorded for autograd */
  const char *kernel;  /* its kernel-table slot, "none" for none */
  const char *binding; /* "PLAIN", "CUSTOM", "INTERNAL" */
  const char *params;  /* p1, p2 of a unary op, separated by spaces */
  const char *aliases; /* other public names, separated by spaces */
} mt_op_info;
MT_API int mt_op_count(void);
MT_API const mt_op_info *mt_op_info_of(int op);
MT_API const char *mt_op_name(int op); /* "?" for a number that is no op */

/* ---------------------------------------------------------------- devices and their backends */
/* Every device type has one backend at most (core/backend.h); each has devices 0 .. count - 1. A
 * device's index -1 is the current device of its type (torch.device('cuda') without an index). */
/* A device type's name ("cpu", "cuda", "meta"; "?" for none). */
MT_API const char *mt_device_name(int type);
/* The name of the backend that serves a device type ("cpu", "meta", "cuda", "fake"; NULL: none). */
MT_API const char *mt_device_backend(int type);
/* Can this build make tensors on the device (has it a backend for it, and is that device there)? */
MT_API int mt_device_available(const mt_device *device);
/* MT_OK for a device tensors can be made on; else MT_EDEVICE with the reason: "device cuda:1 is not
 * available: moontorch was built without CUDA", "CUDA device 1 is not available (1 device)", ... */
MT_API mt_status mt_device_check(const mt_device *device);
/* How many devices of this type are there now (0 for a type without a backend, or a CUDA build on a
 * machine without a driver or a GPU; 1 for the CPU and meta)? */
MT_API int mt_device_count(int type);
/* The current device of a type (its index: 0 for the CPU and meta), and setting it. */
MT_API int mt_device_current(int type);
MT_API mt_status mt_device_set_current(const mt_device *device);
/* Does the device's backend run `op` (an MT_OP_*) on operands of these n dtypes (NULL, 0: of some
 * dtype)? 0 for an op it lacks a kernel for, or a device this build has no backend for. */
MT_API int mt_device_supports(const mt_device *device, int op, const int *dtypes, int n);
/* Wait until every computation queued on the device has finished (NULL: the CPU). */
MT_API mt_status mt_synchronize(const mt_device *device);
/* torch.config()'s line of a device type's backend ("built for sm_80, sm_90 (toolkit 13.0), no device";
 * "" for a backend that says nothing; NULL: no backend). From a small ring of buffers. */
MT_API const char *mt_device_describe(int type);

/* Streams: a device's queue of work (CUDA streams). A handle names a stream of one device; the
 * device's kernels run on its current stream, at first its default stream. On a device that queues
 * nothing (the CPU, meta) every stream is the default one and everything is done at once. */
typedef struct mt_stream {
  int32_t _device_type, _device_index;
  void *_handle; /* the backend's; NULL: the default stream */
  int32_t _owned; /* made by mt_stream_new: mt_stream_free destroys it */
  int32_t _priority;
} mt_stream;
MT_API mt_status mt_stream_new(const mt_device *device, int priority, mt_stream **out);
/* the device's current / default stream, as a new handle (freeing it destroys nothing) */
MT_API mt_status mt_stream_current(const mt_device *device, mt_stream **out);
MT_API mt_status mt_stream_default(const mt_device *device, mt_stream **out);
MT_API void mt_stream_free(mt_stream *s);
MT_API mt_status mt_stream_set_current(const mt_stream *s);
MT_API mt_status mt_stream_synchronize(const mt_stream *s);
MT_API int mt_stream_query(const mt_stream *s); /* 1: all work queued on it is done */
/* t's memory is used by work queued on s (a stream other than the one that made it): it is not reused
 * before that work is done (PyTorch's Tensor.record_stream) */
MT_API mt_status mt_tensor_record_stream(const mt_tensor *t, const mt_stream *s);
/* Events: a point in a stream's work, to wait for or to time. */
typedef struct mt_event {
  int32_t _device_type, _device_index;
  void *_handle;
  int32_t _flags; /* MT_EVENT_TIMING */
  int32_t _recorded;
} mt_event;
enum { MT_EVENT_TIMING = 1 };
MT_API mt_status mt_event_new(const mt_device *device, int flags, mt_event **out);
MT_API void mt_event_free(mt_event *e);
MT_API mt_status mt_event_record(mt_event *e, const mt_stream *s /* NULL: the current stream */);
MT_API mt_status mt_event_wait(mt_event *e, const mt_stream *s /* NULL: the current stream */);
MT_API mt_status mt_event_synchronize(mt_event *e);
MT_API int mt_event_query(mt_event *e);
MT_API mt_status mt_event_elapsed_ms(const mt_event *start, const mt_event *end, double *ms);

/* A device's memory: bytes of live tensors' storages (allocated, counted by the core), what the
 * backend holds from the device (reserved: its cache included; -1 where it does not say), the
 * device's free and total bytes (-1: unknown), and the peaks since the last reset. */
typedef struct mt_memory_stats {
  int64_t allocated, peak_allocated;
  int64_t reserved, peak_reserved;
  int64_t allocations, frees; /* counts of storages made and freed */
  int64_t free_bytes, total_bytes;
  int64_t gc_limit; /* allocated above this: the next collection (mt_gc_done) */
} mt_memory_stats;
MT_API mt_status mt_memory_stats_of(const mt_device *device, mt_memory_stats *out);
MT_API mt_status mt_memory_empty_cache(const mt_device *device);
MT_API mt_status mt_memory_reset_peak(const mt_device *device);

/* A fake device for specs: a CPU-run backend put in the CUDA slot, with `ndevices` devices of
 * `bytes` memory each (0: 256 MB), its memory host pages the host cannot read outside its kernels
 * and transfers (a direct read faults, naming the fake device), counting what it does. ndevices 0
 * takes it out again (MT_ESTATE while a tensor lives on it). Also installed at load by the
 * environment variable MOONTORCH_FAKE_CUDA=N[:bytes]. */
typedef struct mt_fake_counts {
  int64_t kernels;        /* kernel calls */
  int64_t transfers;      /* transfers (host<->device, device<->device) */
  int64_t to_host, to_device, peer;
  int64_t allocs, frees;
  int64_t synchronizes;
} mt_fake_counts;
MT_API mt_status mt_fake_cuda_install(int ndevices, int64_t bytes);
MT_API mt_fake_counts *mt_fake_cuda_counts(void);
/* how many times the fake device ran a kernel slot of core/kernels.h ("softmax_backward"; -1: no such slot) */
MT_API int64_t mt_fake_cuda_calls(const char *slot);

/* ---------------------------------------------------------------- the CUDA backend (core/gpu/) */
/* torch.backends.cuda.matmul.allow_tf32: float32 products on a GPU may use TF32 (off by default, as
 * PyTorch's); set 0 or 1, or -1 to ask. Returns the setting. */
MT_API int mt_cuda_allow_tf32(int set);
/* A CUDA device's properties (torch.cuda.get_device_properties): MT_EDEVICE for a device that is not there. */
typedef struct mt_cuda_properties {
  char name[256];
  int32_t major, minor;          /* compute capability */
  int32_t multi_processor_count;
  int32_t pad_;
  int64_t total_memory;          /* bytes */
} mt_cuda_properties;
MT_API mt_status mt_cuda_device_properties(int device, mt_cuda_properties *out);
/* The name of the runtime running the CUDA backend: "cuda" (NVIDIA's), "emulator" (the CPU emulator of a
 * CUDA device, MOONTORCH_CUDA_EMULATE=1), or "" when there is no device. */
MT_API const char *mt_cuda_runtime(void);
/* Philox4x32-10's block function (for checks against Random123's known answers). */
MT_API void mt_cuda_philox(const uint32_t *ctr, const uint32_t *key, uint32_t *out);

/* ---------------------------------------------------------------- copy and conversion */
/* dst <- src, broadcasting src to dst's shape, converting dtype; any strides on both sides;
 * overlapping memory is handled. */
MT_API mt_status mt_copy_(mt_tensor *dst, const mt_tensor *src);
/* t in `dtype` (-1: t's) on `device` (NULL: t's), copied across backends when the device differs;
 * flags: MT_TO_COPY (else a new reference to t itself when it already is both), MT_TO_NON_BLOCKING
 * (a copy between a pinned host tensor and a device may return before it is done). */
enum { MT_TO_COPY = 1, MT_TO_NON_BLOCKING = 2 };
MT_API mt_status mt_to(mt_tensor *t, int dtype, const mt_device *device, int flags, mt_tensor **out);
/* Reading values on the host. t's values where the host can read them: a new reference to t itself
 * when it is a CPU tensor, else a new contiguous CPU tensor holding them, brought over by its device's
 * backend (MT_EDEVICE for a device that holds no data, meta). The one sanctioned way: item, tolist,
 * printing and every check of values in the core go through it. */
MT_API mt_status mt_tensor_to_host(const mt_tensor *t, mt_tensor **out);
/* A copy of a CPU tensor in page-locked memory of `device`'s backend (NULL: the first backend that has
 * such memory), which transfers can copy from and to without blocking (PyTorch's pin_memory); t itself
 * when it already is pinned. MT_EDEVICE when no backend has pinned memory. */
MT_API mt_status mt_tensor_pin_memory(mt_tensor *t, const mt_device *device, mt_tensor **out);
MT_API int mt_tensor_is_pinned(const mt_tensor *t);
MT_API mt_status mt_clone(mt_tensor *t, mt_tensor **out);
MT_API mt_status mt_fill_(mt_tensor *t, double value);
MT_API mt_status mt_zero_(mt_tensor *t);

/* ---------------------------------------------------------------- elementwise ops */

/* Unary op (a UNARY_* op of the list). p1/p2: the parameters of the parameterised ops, as the
 * list's `params` name them (NaN: not given; nan_to_num replaces nan by 0). */
MT_API mt_status mt_unary(mt_op op, mt_tensor *a, double p1, double p2, mt_tensor *out, mt_tensor **result);
/* a (op) b with broadcasting and PyTorch's type promotion. */
MT_API mt_status mt_binary(mt_op op, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result);
/* a (op) scalar, or scalar (op) a when `reverse`. scalar_kind: 0 bool, 1 integer, 2 floating
 * (a number takes part in type promotion as PyTorch's wrapped numbers do). */
MT_API mt_status mt_binary_scalar(mt_op op, mt_tensor *a, double s, int scalar_kind, int reverse, mt_tensor *out,
                                  mt_tensor **result);
/* a + alpha * b (torch.add/sub with alpha), and addcmul/addcdiv: a + value * b * c, a + value * b / c. */
MT_API mt_status mt_add_scaled(mt_tensor *a, mt_tensor *b, double alpha, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_addcmul(mt_tensor *a, mt_tensor *b, mt_tensor *c, double value, int divide, mt_tensor *out,
                            mt_tensor **result);
/* cond ? a : b with broadcasting (cond is bool or uint8). */
MT_API mt_status mt_where(mt_tensor *cond, mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result);
/* lerp: a + w * (b - a) */
MT_API mt_status mt_lerp(mt_tensor *a, mt_tensor *b, mt_tensor *w, mt_tensor *out, mt_tensor **result);
/* The dtype PyTorch's result_type gives for (a op b); b may be NULL with scalar_kind >= 0 for a number. */
MT_API int mt_result_type(const mt_tensor *a, const mt_tensor *b, int scalar_kind);

/* ---------------------------------------------------------------- reductions */
/* Reduce over `dims` (ndims == 0: over all dims). dtype: the accumulation/result dtype, -1 for
 * PyTorch's default (sum/prod of integers and bool -> int64, mean needs floating input, all/any ->
 * bool). p: var/std correction, norm order (inf allowed). */
MT_API mt_status mt_reduce(mt_op op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, int dtype, double p,
                           mt_tensor *out, mt_tensor **result);
/* max/min/argmax/argmin along one dim: values and indices (index_base added to indices).
 * is_min: 0 max, 1 min. dim < -ndim... : over the flattened tensor when `flat`. */
MT_API mt_status mt_reduce_with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                                      mt_tensor **values, mt_tensor **indices);
MT_API mt_status mt_argmax(mt_tensor *a, int dim, int flat, int keepdim, int is_min, int64_t index_base,
                           mt_tensor **result);
/* cumsum / cumprod (is_prod) along dim, dtype -1 for default. */
MT_API mt_status mt_cumulative(mt_tensor *a, int dim, int is_prod, int dtype, mt_tensor *out, mt_tensor **result);
/* softmax / log_softmax along dim (numerically stable). dtype -1: a's dtype. */
MT_API mt_status mt_softmax(mt_tensor *a, int dim, int log, int dtype, mt_tensor **result);
/* var/std over dims together with the mean (var_mean, std_mean). */
MT_API mt_status mt_var_mean(mt_tensor *a, const int64_t *dims, int ndims, double correction, int keepdim, int take_sqrt,
                             mt_tensor **var, mt_tensor **mean);
/* torch.equal: same shape and same values. */
MT_API mt_status mt_equal(mt_tensor *a, mt_tensor *b, int *result);
/* torch.allclose / isclose */
MT_API mt_status mt_isclose(mt_tensor *a, mt_tensor *b, double rtol, double atol, int equal_nan, mt_tensor **result);
MT_API mt_status mt_allclose(mt_tensor *a, mt_tensor *b, double rtol, double atol, int equal_nan, int *result);

/* ---------------------------------------------------------------- indexing and shape */
MT_API mt_status mt_cat(mt_tensor **tensors, int n, int dim, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_stack(mt_tensor **tensors, int n, int dim, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_index_select(mt_tensor *a, int dim, mt_tensor *index, int64_t index_base, mt_tensor *out,
                                 mt_tensor **result);
MT_API mt_status mt_gather(mt_tensor *a, int dim, mt_tensor *index, int64_t index_base, mt_tensor *out,
                           mt_tensor **result);
/* scatter: reduce 0 = replace, 1 = add, 2 = multiply. src NULL: use `value`. In place on a when
 * out == a; otherwise out-of-place on a copy. */
MT_API mt_status mt_scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double value, int reduce,
                            int64_t index_base, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_index_add(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha,
                              int64_t index_base, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_index_fill_(mt_tensor *a, int dim, mt_tensor *index, double value, int64_t index_base);
MT_API mt_status mt_index_copy_(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int64_t index_base);
MT_API mt_status mt_masked_fill(mt_tensor *a, mt_tensor *mask, double value, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out,
                                       mt_tensor **result);
MT_API mt_status mt_masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor **result);
/* a[mask] = src (src has as many elements as mask has true values, or one) */
MT_API mt_status mt_masked_scatter_(mt_tensor *a, mt_tensor *mask, mt_tensor *src);
/* nonzero: an (n, ndim) int64 tensor of positions (plus index_base). */
MT_API mt_status mt_nonzero(mt_tensor *a, int64_t index_base, mt_tensor **result);
MT_API mt_status mt_repeat(mt_tensor *a, const int64_t *repeats, int n, mt_tensor **result);
MT_API mt_status mt_repeat_interleave(mt_tensor *a, int64_t repeats, int dim /* flat if < -ndim */, mt_tensor **result);
MT_API mt_status mt_flip(mt_tensor *a, const int64_t *dims, int n, mt_tensor **result);
MT_API mt_status mt_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int n, mt_tensor **result); /* n dims; dims NULL: flattened */
/* sort along dim (stable), values and indices (plus index_base). */
MT_API mt_status mt_sort(mt_tensor *a, int dim, int descending, int stable, int64_t index_base, mt_tensor **values,
                         mt_tensor **indices);
MT_API mt_status mt_topk(mt_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base,
                         mt_tensor **values, mt_tensor **indices);
MT_API mt_status mt_triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out, mt_tensor **result); /* tril/triu */
MT_API mt_status mt_one_hot(mt_tensor *index, int64_t num_classes /* -1: max+1 */, int64_t index_base, mt_tensor **result);
/* a[indices...] = values for a list of index tensors (advanced indexing), accumulate: +=. */
MT_API mt_status mt_index_put_(mt_tensor *a, mt_tensor **indices, int n, mt_tensor *values, int accumulate,
                               int64_t index_base);
/* a[indices...] (advanced indexing with index tensors over the first n dims) */
MT_API mt_status mt_index(mt_tensor *a, mt_tensor **indices, int n, int64_t index_base, mt_tensor **result);
MT_API mt_status mt_arange(double start, double end, double step, int dtype, const mt_device *device,
                           mt_tensor **result);
MT_API mt_status mt_linspace(double start, double end, int64_t steps, int dtype, const mt_device *device,
                             mt_tensor **result);
MT_API mt_status mt_logspace(double start, double end, int64_t steps, double base, int dtype, const mt_device *device,
                             mt_tensor **result);
MT_API mt_status mt_eye(int64_t n, int64_t m, int dtype, const mt_device *device, mt_tensor **result);
MT_API mt_status mt_diag(mt_tensor *a, int64_t diagonal, mt_tensor **result);
MT_API mt_status mt_unique(mt_tensor *a, int sorted, int return_inverse, int return_counts, int64_t index_base,
                           mt_tensor **values, mt_tensor **inverse, mt_tensor **counts);
MT_API mt_status mt_bincount(mt_tensor *a, mt_tensor *weights, int64_t minlength, mt_tensor **result);
MT_API mt_status mt_searchsorted(mt_tensor *sorted, mt_tensor *values, int right, int64_t index_base, mt_tensor **result);

/* ---------------------------------------------------------------- linear algebra */
MT_API mt_status mt_mm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_bmm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_mv(mt_tensor *a, mt_tensor *v, mt_tensor *out, mt_tensor **result);
MT_API mt_status mt_dot(mt_tensor *a, mt_tensor *b, mt_tensor **result);
MT_API mt_status mt_outer(mt_tensor *a, mt_tensor *b, mt_tensor **result);
/* beta * c + alpha * (a @ b) */
MT_API mt_status mt_addmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                          mt_tensor **result);
MT_API mt_status mt_baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                            mt_tensor **result);

/* ---------------------------------------------------------------- randomness */
/* A generator belongs to one device and draws as PyTorch's generator of that device type does: on the
 * CPU, PyTorch's CPU generator (mt19937) for the same seed. g NULL below: the CPU's default generator. */
typedef struct mt_generator mt_generator;
MT_API mt_status mt_generator_new(uint64_t seed, mt_generator **out); /* a CPU generator */
/* A generator of `device` (NULL: the CPU); MT_EDEVICE for a device that draws no random numbers (meta) or
 * is not there. */
MT_API mt_status mt_generator_new_on(const mt_device *device, uint64_t seed, mt_generator **out);
MT_API void mt_generator_free(mt_generator *g); /* a default generator is left alone */
MT_API mt_generator *mt_default_generator(void); /* the CPU's */
/* The default generator of a device (made on first use; torch.cuda's manual_seed and rng state use it). */
MT_API mt_status mt_default_generator_on(const mt_device *device, mt_generator **out);
MT_API mt_status mt_generator_device(const mt_generator *g, mt_device *out);
MT_API void mt_generator_manual_seed(mt_generator *g, uint64_t seed);
/* torch.manual_seed: the CPU's default generator and every device's, those made later included */
MT_API void mt_manual_seed_all(uint64_t seed);
MT_API uint64_t mt_generator_seed(mt_generator *g); /* reseed nondeterministically, return the seed */
MT_API uint64_t mt_generator_initial_seed(mt_generator *g);
/* The state as bytes: g's engine's layout (the CPU's: PyTorch's CPU generator state, 5056 bytes, which
 * mt_generator_state_size gives). */
MT_API size_t mt_generator_state_size(void);
MT_API size_t mt_generator_state_bytes(mt_generator *g);
MT_API mt_status mt_generator_get_state(mt_generator *g, uint8_t *buf, size_t n);
MT_API mt_status mt_generator_set_state(mt_generator *g, const uint8_t *buf, size_t n);
/* In-place fills (g NULL: the default generator). */
MT_API mt_status mt_uniform_(mt_tensor *t, double from, double to, mt_generator *g);
MT_API mt_status mt_normal_(mt_tensor *t, double mean, double std, mt_generator *g);
MT_API mt_status mt_random_(mt_tensor *t, int64_t from, int64_t to, mt_generator *g); /* integers in [from, to) */
MT_API mt_status mt_bernoulli_(mt_tensor *t, double p, mt_generator *g);
MT_API mt_status mt_bernoulli_tensor_(mt_tensor *t, mt_tensor *p, mt_generator *g);
MT_API mt_status mt_exponential_(mt_tensor *t, double lambd, mt_generator *g);
MT_API mt_status mt_randperm(int64_t n, int dtype, int64_t index_base, mt_generator *g, const mt_device *device,
                             mt_tensor **result);
MT_API mt_status mt_multinomial(mt_tensor *probs, int64_t num_samples, int replacement, int64_t index_base,
                                mt_generator *g, mt_tensor **result);
/* torch.distributions' samplers, float32 and float64, drawing PyTorch 1.13's numbers after the same seed (g NULL:
 * the default generator): Gamma(alpha, 1) draws (recorded: d draw / d alpha is _standard_gamma_grad), Dirichlet
 * draws along the last dimension, Poisson counts (recorded with a zero gradient), Binomial counts (count and prob
 * broadcast, of one dtype). The reparameterized gradients: d x / d alpha of x ~ Gamma(alpha, 1), and PyTorch's
 * _dirichlet_grad (x ~ Beta(alpha, total - alpha)); operands broadcast. */
MT_API mt_status mt_standard_gamma(mt_tensor *alpha, mt_generator *g, mt_tensor **result);
MT_API mt_status mt_sample_dirichlet(mt_tensor *alpha, mt_generator *g, mt_tensor **result);
MT_API mt_status mt_poisson(mt_tensor *rates, mt_generator *g, mt_tensor **result);
MT_API mt_status mt_binomial(mt_tensor *count, mt_tensor *prob, mt_generator *g, mt_tensor **result);
MT_API mt_status mt_standard_gamma_grad(mt_tensor *alpha, mt_tensor *x, mt_tensor **result);
MT_API mt_status mt_dirichlet_grad(mt_tensor *x, mt_tensor *alpha, mt_tensor *total, mt_tensor **result);

/* ---------------------------------------------------------------- autograd (core/grad) */
/* A node of the backward graph (PyTorch's grad_fn): refcounted, opaque. */
typedef struct mt_node mt_node;

/* Grad mode: when off, no op records a node (torch.no_grad). Inference mode also skips version
 * bookkeeping for saved tensors. Both are process-wide. */
MT_API void mt_set_grad_enabled(int on);
MT_API int mt_is_grad_enabled(void);
MT_API void mt_set_inference_mode(int on);
MT_API int mt_is_inference_mode(void);

MT_API int mt_requires_grad(const mt_tensor *t);
/* Make a leaf require grad (or not). A non-leaf can only be set to require grad. */
MT_API mt_status mt_set_requires_grad(mt_tensor *t, int on);
MT_API int mt_is_leaf(const mt_tensor *t);
/* The gradient accumulated into t (a new reference), or NULL. */
MT_API mt_tensor *mt_get_grad(mt_tensor *t);
/* Set (g a tensor) or clear (g NULL) t's gradient; g must match t's shape. */
MT_API mt_status mt_set_grad(mt_tensor *t, mt_tensor *g);
/* Keep the gradient of a non-leaf in its .grad after backward. */
MT_API mt_status mt_retain_grad(mt_tensor *t);
MT_API int mt_retains_grad(const mt_tensor *t);
/* A new tensor sharing t's data, out of the graph (detach), or t itself taken out (detach_). */
MT_API mt_status mt_detach(mt_tensor *t, mt_tensor **out);
MT_API mt_status mt_detach_(mt_tensor *t);
/* The version of t's data (bumped by every in-place write). */
MT_API int64_t mt_tensor_version(const mt_tensor *t);

/* grad_fn: borrowed; NULL for leaves and tensors outside the graph. */
MT_API mt_node *mt_grad_fn(const mt_tensor *t);
MT_API int mt_output_nr(const mt_tensor *t);
MT_API mt_node *mt_node_retain(mt_node *n);
MT_API void mt_node_release(mt_node *n);
MT_API const char *mt_node_name(const mt_node *n);   /* "AddBackward0", "AccumulateGrad", ... */
/* Name a node as PyTorch names the node of the call that made it, where one of our nodes does
 * the same work under another op's name (x:t() records a transpose: TBackward0). name is copied. */
MT_API mt_status mt_node_rename(mt_node *n, const char *name);
MT_API int mt_node_num_next(const mt_node *n);
/* next_functions[i]: the node (borrowed, may be NULL) and which of its inputs the edge feeds. */
MT_API mt_node *mt_node_next(const mt_node *n, int i, int *input_nr);
/* The leaf an AccumulateGrad node accumulates into (borrowed), else NULL. */
MT_API mt_tensor *mt_node_variable(const mt_node *n);
/* A number identifying the node for the Lua layer (hooks, Lua functions); 0 if none. */
MT_API int64_t mt_node_lua_id(const mt_node *n);
MT_API void mt_node_set_lua_id(mt_node *n, int64_t id);
/* Node hooks are run by the Lua layer: flags say which a node has (see mt_engine_event). */
MT_API void mt_node_set_hook_flags(mt_node *n, int pre, int post);

/* A node whose backward is done by the Lua layer (torch.autograd.Function): `nin` inputs (edges
 * made from the given tensors, NULL for non-tensor or non-differentiable inputs), `nout` outputs
 * attached to the given tensors. name is copied. */
MT_API mt_status mt_node_new_lua(const char *name, mt_tensor **inputs, int nin, mt_tensor **outputs, int nout,
                                 int64_t lua_id, mt_node **out);
/* A new head over t's data that is output `nr` of node n (grad_fn n): how a Lua node's saved
 * output, kept detached (keeping the output itself would keep the node alive), is unpacked for a
 * backward that records (create_graph). */
MT_API mt_status mt_node_output_alias(mt_node *n, mt_tensor *t, int nr, mt_tensor **out);

/* The backward engine. It runs every C node by itself and stops when the Lua layer must act:
 * a node with Lua hooks or a Lua backward. mt_engine_run returns one event at a time. */
typedef struct mt_engine mt_engine;
typedef enum mt_engine_event_kind {
  MT_EV_DONE = 0,        /* finished */
  MT_EV_PRE_HOOK = 1,    /* node's grads (its outputs' grads) are ready: Lua may replace them */
  MT_EV_LUA_BACKWARD = 2,/* a Lua node: compute its input grads from its output grads */
  MT_EV_POST_HOOK = 3,   /* node ran: Lua may replace the grads it produced */
  MT_EV_TENSOR_HOOK = 4  /* a leaf's gradient is about to be accumulated: Lua may replace it */
} mt_engine_event_kind;
typedef struct mt_engine_event {
  int32_t kind;
  int32_t count;        /* number of tensors in `grads` (NULL entries mean zero/none) */
  mt_node *node;        /* borrowed */
  mt_tensor **grads;    /* borrowed array; the Lua layer may replace entries with mt_engine_set_grad */
  mt_tensor **grads_in; /* POST_HOOK: the grads the node received (count_in of them) */
  int32_t count_in;
  int32_t _pad;
} mt_engine_event;
/* Start a backward from roots with their gradients (grads[i] NULL: ones, for a scalar root).
 * inputs != NULL: autograd.grad mode, gradients for those tensors are captured instead of
 * accumulated into .grad (read them with mt_engine_captured). */
MT_API mt_status mt_engine_new(mt_tensor **roots, mt_tensor **grads, int n, int retain_graph, int create_graph,
                               mt_tensor **inputs, int ninputs, int allow_unused, mt_engine **out);
MT_API mt_status mt_engine_run(mt_engine *e, mt_engine_event *ev);
/* Replace grads[i] of the current event (g may be NULL for none); takes a new reference. */
MT_API mt_status mt_engine_set_grad(mt_engine *e, int i, mt_tensor *g);
/* For MT_EV_LUA_BACKWARD: the Lua node's input grads (count = the node's nin). */
MT_API mt_status mt_engine_set_input_grads(mt_engine *e, mt_tensor **grads, int n);
/* autograd.grad: the captured gradient of inputs[i] (new reference or NULL). */
MT_API mt_tensor *mt_engine_captured(mt_engine *e, int i);
MT_API void mt_engine_free(mt_engine *e);
/* One call for a whole backward without Lua events (C users; fails if a Lua hook is met). */
MT_API mt_status mt_backward(mt_tensor *root, mt_tensor *grad, int retain_graph, int create_graph);

/* Anomaly mode: every node remembers a number the Lua layer gives it (a traceback id), and the
 * engine checks each gradient for NaN, naming the node that produced it. */
MT_API void mt_set_detect_anomaly(int on);
MT_API int mt_is_anomaly_enabled(void);
MT_API void mt_set_anomaly_trace(int64_t id); /* the id stored into nodes made from now on */
MT_API int64_t mt_node_anomaly_trace(const mt_node *n);
/* Set a node's traceback id afterwards (the Lua layer tags each new grad_fn as its tensor reaches Lua). */
MT_API void mt_node_set_anomaly_trace(mt_node *n, int64_t id);

/* Tensor hooks (Lua): a tensor carries the Lua layer's id for its hooks; a leaf with one makes the
 * engine stop with MT_EV_TENSOR_HOOK before accumulating. */
MT_API mt_status mt_tensor_set_hooks_id(mt_tensor *t, int64_t id);
MT_API int64_t mt_tensor_hooks_id(const mt_tensor *t);
/* Ids (of nodes and tensor hooks) whose owner died, one per call, 0 when none: the Lua layer
 * drops its state for them. */
MT_API int64_t mt_grad_pop_dead_id(void);

/* Live nodes (a leak check). */
MT_API int64_t mt_live_nodes(void);
/* Every backward name the core can give a node ("AddBackward0", ...): a walkable list for tests. */
MT_API int mt_grad_op_count(void);
MT_API const char *mt_grad_op_list_name(int i); /* 0 <= i < mt_grad_op_count(), else NULL */

/* ---------------------------------------------------------------- optimizers */
/* The settings of an SGD step (PyTorch 1.13's SGD: lr, momentum, dampening, weight_decay,
 * nesterov, maximize). */
typedef struct mt_sgd_settings {
  double lr, momentum, dampening, weight_decay;
  int32_t nesterov, maximize;
} mt_sgd_settings;
/* One SGD step for one parameter, in place, as PyTorch 1.13's SGD does it (same order of float
 * operations, in the parameter's dtype: float32 or float64). `grad` NULL: the parameter's own
 * .grad, and nothing happens when it has none. `momentum_buf` (param's shape and dtype) is
 * required when momentum != 0 and ignored otherwise; `first_step` != 0 sets it to the update
 * direction instead of decaying it. Records no autograd; bumps the version counters. */
MT_API mt_status mt_sgd_step(mt_tensor *param, mt_tensor *grad, mt_tensor *momentum_buf, const mt_sgd_settings *s,
                             int first_step);
/* optimizers (issue 13): Adam and AdamW. The settings of a step: PyTorch 1.13's Adam/AdamW
 * hyperparameters; `decoupled` != 0 is AdamW (the parameter decays by 1 - lr * weight_decay before
 * the update), 0 is Adam (weight_decay * param joins the gradient). */
typedef struct mt_adam_settings {
  double lr, beta1, beta2, eps, weight_decay;
  int32_t amsgrad, maximize, decoupled;
} mt_adam_settings;
/* One Adam/AdamW step for one parameter, in place, as PyTorch 1.13's _single_tensor_adam(w) (same
 * order of float operations, in the parameter's dtype: float32 or float64). `grad` NULL: the
 * parameter's own .grad, and nothing happens (the step counter included) when it has none.
 * exp_avg, exp_avg_sq and (amsgrad) max_exp_avg_sq have the parameter's shape and dtype; `step` is
 * the one-element float counter of the state (PyTorch's state['step']): it is incremented and its
 * new value gives the bias corrections. Records no autograd; bumps the version counters. */
MT_API mt_status mt_adam_step(mt_tensor *param, mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_avg_sq,
                              mt_tensor *max_exp_avg_sq, mt_tensor *step, const mt_adam_settings *s);
/* RMSprop (PyTorch 1.13's hyperparameters): square_avg always, grad_avg when centered, the
 * momentum buffer when momentum > 0 (NULL otherwise). One step, in place, in PyTorch's order of
 * float operations; `grad` NULL: the parameter's .grad (none: nothing happens). */
typedef struct mt_rmsprop_settings {
  double lr, alpha, eps, weight_decay, momentum;
  int32_t centered, maximize;
} mt_rmsprop_settings;
MT_API mt_status mt_rmsprop_step(mt_tensor *param, mt_tensor *grad, mt_tensor *square_avg, mt_tensor *grad_avg,
                                 mt_tensor *momentum_buffer, const mt_rmsprop_settings *s);
/* Adagrad: `sum` the accumulator, `step` the one-element float counter (incremented; its new
 * value gives lr / (1 + (step - 1) * lr_decay)). */
typedef struct mt_adagrad_settings {
  double lr, lr_decay, weight_decay, eps;
  int32_t maximize;
} mt_adagrad_settings;
MT_API mt_status mt_adagrad_step(mt_tensor *param, mt_tensor *grad, mt_tensor *sum, mt_tensor *step,
                                 const mt_adagrad_settings *s);
/* Adadelta: square_avg and acc_delta, the parameter's shape and dtype. */
typedef struct mt_adadelta_settings {
  double lr, rho, eps, weight_decay;
  int32_t maximize;
} mt_adadelta_settings;
MT_API mt_status mt_adadelta_step(mt_tensor *param, mt_tensor *grad, mt_tensor *square_avg, mt_tensor *acc_delta,
                                  const mt_adadelta_settings *s);
/* Adamax: exp_avg and exp_inf, `step` the one-element float counter (incremented; its new value
 * gives the bias correction 1 - beta1^step). */
typedef struct mt_adamax_settings {
  double lr, beta1, beta2, eps, weight_decay;
  int32_t maximize;
} mt_adamax_settings;
MT_API mt_status mt_adamax_step(mt_tensor *param, mt_tensor *grad, mt_tensor *exp_avg, mt_tensor *exp_inf,
                                mt_tensor *step, const mt_adamax_settings *s);

/* ---------------------------------------------------------------- checkpoints (core/checkpoint.c) */
/* The bytes of torch.save / torch.load; the format is described at the top of core/checkpoint.c.
 * Value tags of the stream: */
enum {
  MT_CKPT_NIL = 0, MT_CKPT_FALSE = 1, MT_CKPT_TRUE = 2, MT_CKPT_NUMBER = 3, MT_CKPT_STRING = 4,
  MT_CKPT_TABLE = 5, MT_CKPT_REF = 6, MT_CKPT_TENSOR = 7, MT_CKPT_OBJECT = 8
};
/* XXH3-64 (seed 0) of n bytes: the checksum's hash (libxxhash's XXH3_64bits). _impl picks the
 * vector loop (1 scalar, 2 SSE2, 3 AVX2, 4 AVX-512, 0 the best this CPU has), for tests. */
MT_API uint64_t mt_xxh3_64(const void *data, size_t n);
MT_API uint64_t mt_xxh3_64_impl(const void *data, size_t n, int impl);
/* Writer: opens `<path>.tmp.<pid>`; values are appended in stream order (ids from 1, given by the
 * caller); a tensor's storage payload is written the first time the storage is seen. commit
 * (fsync when `sync`, rename over path, fsync of the directory) and abort (removes the temporary
 * file) both free the writer. */
typedef struct mt_ckpt_writer mt_ckpt_writer;
MT_API mt_status mt_ckpt_writer_open(const char *path, mt_ckpt_writer **out);
MT_API mt_status mt_ckpt_put_tag(mt_ckpt_writer *w, int tag); /* nil, false, true */
MT_API mt_status mt_ckpt_put_number(mt_ckpt_writer *w, double x);
MT_API mt_status mt_ckpt_put_string(mt_ckpt_writer *w, const char *s, size_t len);
MT_API mt_status mt_ckpt_put_table(mt_ckpt_writer *w, uint32_t id, uint64_t npairs);
MT_API mt_status mt_ckpt_put_ref(mt_ckpt_writer *w, uint32_t id);
MT_API mt_status mt_ckpt_put_tensor(mt_ckpt_writer *w, uint32_t id, const mt_tensor *t, int flags); /* 1 param, 2 requires_grad */
MT_API mt_status mt_ckpt_put_object(mt_ckpt_writer *w, uint32_t id, const char *name, size_t len); /* then its state */
MT_API mt_status mt_ckpt_writer_commit(mt_ckpt_writer *w, int sync);
MT_API void mt_ckpt_writer_abort(mt_ckpt_writer *w);
/* Reader: open validates the header, the storage table, the payloads and the checksum and holds
 * the storages (copies, or views of a copy-on-write mapping of the file when use_mmap); then
 * read_value hands out the stream's values one by one, each record checked. A tensor value is
 * a new reference (with its nn.Parameter flag set; `flags & 2` asks for requires_grad). */
typedef struct mt_ckpt_reader mt_ckpt_reader;
typedef struct mt_ckpt_value {
  int32_t tag;
  uint32_t id;        /* table, tensor, object: the id it defines; reference: the id it names */
  uint64_t count;     /* table: pairs; string and object: bytes of str */
  double number;
  const char *str;    /* string bytes, or an object's class name (valid while the reader lives) */
  mt_tensor *tensor;  /* tensor: a new reference */
  uint32_t flags;     /* tensor: 1 nn.Parameter, 2 requires_grad */
  uint32_t _pad;
} mt_ckpt_value;
MT_API mt_status mt_ckpt_reader_open(const char *path, int use_mmap, mt_ckpt_reader **out);
MT_API mt_status mt_ckpt_read_value(mt_ckpt_reader *r, mt_ckpt_value *v);
MT_API mt_status mt_ckpt_reader_end(mt_ckpt_reader *r); /* the stream was read to its end */
MT_API void mt_ckpt_reader_close(mt_ckpt_reader *r);
/* For other writers of files (torch.save_safetensors): flush a stdio stream to the disk (fflush +
 * fdatasync; the stream stays open), and make path's directory entry durable (fsync of the
 * directory, after a rename; a file system that cannot fsync directories is not an error). */
MT_API mt_status mt_fsync_file(void *stdio_file);
MT_API mt_status mt_fsync_dir(const char *path);

/* ---------------------------------------------------------------- safetensors headers (core/safetensors.c) */
/* torch.load_safetensors's checks: the header size field, then the JSON header (strict JSON, no
 * duplicate keys, UTF-8, nesting <= 64; dtypes, shapes, offsets, the buffer covered exactly). The
 * tensors are built by the caller from the entries. Messages: "load_safetensors: <problem>". */
enum { MT_ST_MAX_HEADER = 100000000 }; /* bytes (the reference's MAX_HEADER_SIZE) */
typedef struct mt_st_header mt_st_header;
typedef struct mt_st_entry {
  const char *name;     /* decoded UTF-8, NUL-terminated; name_len bytes (it may hold NULs) */
  size_t name_len;
  int32_t dtype;        /* mt_dtype */
  int32_t ndim;
  int64_t sizes[MT_MAX_DIMS];
  uint64_t data_begin;  /* "data_offsets": the tensor is bytes [data_begin, data_end) of the buffer */
  uint64_t data_end;
} mt_st_entry;
/* The header size N from the file's first min(8, file_size) bytes, checked against the limit and
 * against the bytes that follow. */
MT_API mt_status mt_st_header_size(const void *head, uint64_t file_size, uint64_t *n);
/* Parse and check the n-byte JSON header of a file whose byte buffer (what follows the header)
 * has buf_size bytes. *out: free with mt_st_header_free. */
MT_API mt_status mt_st_header_parse(const char *json, size_t n, uint64_t buf_size, mt_st_header **out);
MT_API int64_t mt_st_header_count(const mt_st_header *h); /* tensors */
/* Entry i (0-based) in the header's order, or in the buffer's order when by_offset (ascending
 * offsets: read the file front to back); NULL when i is out of range. Valid while h lives. */
MT_API const mt_st_entry *mt_st_header_entry(const mt_st_header *h, int64_t i, int by_offset);
/* Pairs of "__metadata__" in the header's order; -1 when the header has none. */
MT_API int64_t mt_st_header_metadata_count(const mt_st_header *h);
MT_API mt_status mt_st_header_metadata(const mt_st_header *h, int64_t i, const char **key, size_t *key_len,
                                       const char **value, size_t *value_len);
MT_API void mt_st_header_free(mt_st_header *h);

/* ---------------------------------------------------------------- PyTorch's files (core/formats/pytorch.c) */
/* torch.load_pytorch: PyTorch's torch.save files, the zip archive (data.pkl, data/<key>, version) and
 * the legacy format (magic number, protocol, system info, the pickle, the storage keys and their
 * bytes), read with a restricted unpickler (core/formats/pickle.c: what PyTorch's weights_only=True
 * accepts; any other Python global is refused, with its name). Nothing in the file is ever run.
 * open reads the whole file: the pickle into a graph of values (nodes numbered from 1), every
 * storage's bytes, every tensor checked to lie inside its storage; then get hands out node by node.
 * Messages: "load_pytorch: <path>: <problem>". */
enum {
  MT_PT_NONE = 0, MT_PT_BOOL = 1, MT_PT_INT = 2, MT_PT_FLOAT = 3, MT_PT_STRING = 4, MT_PT_BYTES = 5,
  MT_PT_LIST = 6, MT_PT_TUPLE = 7, MT_PT_DICT = 8, MT_PT_ORDERED_DICT = 9, MT_PT_SET = 10, MT_PT_TENSOR = 11,
  MT_PT_META_TENSOR = 12, MT_PT_STORAGE = 13, MT_PT_DTYPE = 14, MT_PT_GLOBAL = 15
};
enum { MT_PT_PARAMETER = 1, MT_PT_REQUIRES_GRAD = 2 }; /* mt_pt_value.flags of a tensor */
typedef struct mt_pt_file mt_pt_file;
typedef struct mt_pt_value {
  int32_t kind;          /* MT_PT_* */
  int32_t flags;         /* tensor, meta tensor: MT_PT_PARAMETER, MT_PT_REQUIRES_GRAD; int: 1 when `integer` is exact */
  int64_t count;         /* list, tuple, set: items; dicts: key/value pairs; string, bytes: bytes; meta tensor: ndim */
  int64_t integer;       /* int (exact when flags & 1; else `number` is the nearest double), bool (0 or 1) */
  double number;         /* int, float */
  const char *str;       /* string, bytes: the bytes (NUL-terminated too); global, dtype: the Python name */
  const uint32_t *items; /* list, tuple, set: the items' nodes; dicts: key, value, key, value, ... */
  const int64_t *sizes;  /* meta tensor: count sizes, then count strides */
  uint32_t metadata;     /* ordered dict: the node of its _metadata attribute (0: none) */
  int32_t dtype;         /* tensor, meta tensor, storage, dtype: the mt_dtype (-1: a type moontorch lacks) */
  mt_tensor *tensor;     /* tensor, storage (1-D over its elements): a new reference */
} mt_pt_value;
MT_API mt_status mt_pt_open(const char *path, mt_pt_file **out);
MT_API uint32_t mt_pt_root(const mt_pt_file *f);  /* the unpickled object's node */
MT_API uint32_t mt_pt_count(const mt_pt_file *f); /* nodes: ids are 1 .. count */
MT_API mt_status mt_pt_get(mt_pt_file *f, uint32_t node, mt_pt_value *out);
MT_API const char *mt_pt_format(const mt_pt_file *f); /* "zip" or "legacy" */
MT_API void mt_pt_close(mt_pt_file *f);

/* ---------------------------------------------------------------- Torch7's files (core/formats/t7.c) */
/* torch.load_t7: what Torch7's torch.save wrote (File:writeObject), binary (4- or 8-byte longs) or
 * ASCII. open reads the whole file into a graph of values (nodes numbered from 1): tables refer to
 * nodes; a torch object is its class name, version and the node of its fields; tensors and storages
 * of every Torch7 type (CUDA's too) are made as moontorch tensors; a function is its bytecode and
 * the node of its upvalues, never loaded here. Messages: "load_t7: <path>: <problem>". */
enum {
  MT_T7_NIL = 0, MT_T7_NUMBER = 1, MT_T7_STRING = 2, MT_T7_TABLE = 3, MT_T7_OBJECT = 4, MT_T7_BOOLEAN = 5,
  MT_T7_FUNCTION = 6, MT_T7_TENSOR = 7, MT_T7_STORAGE = 8
};
enum { MT_T7_AUTO = 0, MT_T7_BINARY = 1, MT_T7_ASCII = 2 }; /* mt_t7_open's format */
typedef struct mt_t7_file mt_t7_file;
typedef struct mt_t7_value {
  int32_t kind;          /* MT_T7_* */
  int32_t version;       /* object, tensor, storage: the class's version ("V n"; 0 before versions);
                            function: its tag (6, 7 or 8: upvalues as {name=, id=, value=}) */
  int64_t count;         /* table: key/value pairs; string, object/tensor/storage (class name), function
                            (bytecode): bytes of str */
  double number;         /* number; boolean: 0 or 1 */
  const char *str;       /* string: its bytes; object, tensor, storage: the class name; function: bytecode */
  const uint32_t *items; /* table: key, value, key, value, ... nodes */
  uint32_t child;        /* object: the node of its fields; function: of its upvalues */
  int32_t dtype;         /* tensor, storage: the mt_dtype */
  mt_tensor *tensor;     /* tensor, storage (1-D over its elements): a new reference */
} mt_t7_value;
/* format: MT_T7_AUTO (told by the first bytes), _BINARY or _ASCII; long_size: 0 (8 tried, then 4), 4 or 8 */
MT_API mt_status mt_t7_open(const char *path, int format, int long_size, mt_t7_file **out);
MT_API uint32_t mt_t7_root(const mt_t7_file *f);
MT_API uint32_t mt_t7_count(const mt_t7_file *f);
MT_API mt_status mt_t7_get(mt_t7_file *f, uint32_t node, mt_t7_value *out);
MT_API const char *mt_t7_format(const mt_t7_file *f); /* "binary, 8-byte longs", "binary, 4-byte longs", "ascii" */
MT_API void mt_t7_close(mt_t7_file *f);

/* ---------------------------------------------------------------- programs (core/program/program.c) */
/* A model exported by torch.export (a .mtp file: the graph of op-table ops with their attributes, and
 * the weights, in torch.save's checksummed format), run without Lua. load checks the whole program and
 * plans its memory once; run takes the inputs (CPU tensors of the declared dtypes and shapes, in
 * order) and gives new references to the outputs. One run at a time per program. Messages:
 * "program_load: <path>: ..." and "program_run: ...". */
typedef struct mt_program mt_program;
typedef struct mt_program_io {
  const char *name;     /* inputs: the exported module's argument name; outputs: "" */
  int32_t dtype, ndim;
  const int64_t *sizes; /* ndim sizes (valid while the program lives) */
} mt_program_io;
MT_API mt_status mt_program_load(const char *path, mt_program **out);
MT_API int mt_program_num_inputs(const mt_program *p);
MT_API int mt_program_num_outputs(const mt_program *p);
MT_API mt_status mt_program_input(const mt_program *p, int i, mt_program_io *out);  /* i from 0 */
MT_API mt_status mt_program_output(const mt_program *p, int i, mt_program_io *out);
MT_API int mt_program_num_buffers(const mt_program *p); /* the planned buffers results are written into */
MT_API mt_status mt_program_run(mt_program *p, mt_tensor *const *inputs, int ninputs, mt_tensor **outputs,
                                int noutputs);
MT_API void mt_program_free(mt_program *p);

/* ---------------------------------------------------------------- ONNX files (core/formats/onnx.c) */
/* torch.onnx.load's reader: an ONNX ModelProto decoded by protobuf-c and flattened; every string and
 * array lives as long as the model. Initializers and tensor attributes are checked CPU tensors
 * (borrowed: retain one to keep it). Without protobuf-c at build time mt_onnx_read says so.
 * Messages: "onnx.load: <path>: <problem>". */
typedef struct mt_onnx_attr {
  const char *name;
  int32_t type;           /* ONNX's AttributeType: 1 float, 2 int, 3 string, 4 tensor, 5 graph, 6 floats, 7 ints, 8 strings */
  float f;
  int64_t i;
  const char *s;          /* string: slen bytes */
  int64_t slen;
  mt_tensor *t;           /* tensor */
  int64_t n;              /* floats, ints, strings: how many */
  const float *floats;
  const int64_t *ints;
} mt_onnx_attr;
typedef struct mt_onnx_node {
  const char *op_type, *domain, *name;
  int32_t ninputs, noutputs, nattrs;
  const char *const *inputs;  /* "" for an optional input left out */
  const char *const *outputs;
  const mt_onnx_attr *attrs;
} mt_onnx_node;
typedef struct mt_onnx_value {
  const char *name;
  int32_t elem_type;      /* ONNX's element type (0: not a tensor or not given) */
  int32_t dtype;          /* moontorch's (-1: none) */
  int32_t ndim;           /* -1: no shape given */
  const int64_t *dims;    /* ndim sizes, -1 for a symbolic one */
  const char *const *dim_params; /* NULL, or ndim names (NULL where the size is dims[d]): symbolic sizes */
} mt_onnx_value;
typedef struct mt_onnx_model {
  int64_t ir_version, opset; /* opset: the default domain's */
  const char *producer;
  int32_t nnodes, ninits, ninputs, noutputs;
  const mt_onnx_node *nodes;
  const char *const *init_names;
  mt_tensor *const *inits;
  const mt_onnx_value *inputs, *outputs;
  void *_priv;
} mt_onnx_model;
MT_API mt_status mt_onnx_read(const char *path, mt_onnx_model **out);
MT_API void mt_onnx_free(mt_onnx_model *m);
/* torch.onnx.export's writer: the model described as mt_onnx_read gives one (nodes with their
 * attributes, initializers: contiguous CPU tensors, inputs and outputs with their element types and
 * shapes, dim_params naming symbolic sizes) encoded as an ONNX ModelProto by protobuf-c and written to
 * path. ir_version 0: 8. The graph itself is not checked here (onnx.checker's work). Messages:
 * "onnx.export: <path>: <problem>". */
MT_API mt_status mt_onnx_write(const mt_onnx_model *m, const char *path);
/* 1 when this build reads and writes ONNX files (protobuf-c found when it was built), else 0 */
MT_API int mt_onnx_built(void);

/* ---------------------------------------------------------------- FFI support */
/* The Lua layer's handle registry keeps the tensor references its handles own in this array
 * (kept in C so that leak checkers see the references). Grows it to `cap` slots (new slots
 * NULL) and returns it; NULL when out of memory. */
MT_API mt_tensor **mt_handles_resize(int64_t cap);
/* Release every reference in the array and free it (the Lua state is closing). */
MT_API void mt_handles_release_all(void);
/* mt_tensor_release of ts[0..n), fetching ahead (the registry's references die in batches, cold). */
MT_API void mt_tensor_release_many(mt_tensor **ts, int64_t n);
/* (the small ops' speed, issue 11) After a GC cycle: releases the reference of every slot i that
 * holds one with live[i] == 0 (the Lua layer marked the slots of the handles the GC kept), writes
 * those slots' numbers to freed[0..n) (room for every slot), clears live, and returns n. */
MT_API int64_t mt_handles_reclaim(uint8_t *live, int32_t *freed);

/* ---------------------------------------------------------------- threads */
/* One count for moontorch's own pool and the BLAS's threads together (the two never run at once).
 * The default: $MT_NUM_THREADS, else $OMP_NUM_THREADS, else the CPUs this process may use
 * (mt_cpu_count_allowed). */
MT_API void mt_set_num_threads(int n);
MT_API int mt_get_num_threads(void);

/* ---------------------------------------------------------------- the CPU (core/cpu.c) */
/* Features of this CPU that the OS also enables: X(NAME, name, bit) makes MT_CPU_NAME = 1 << bit. */
#define MT_CPU_FEATURE_LIST(X)                                                                                  \
  X(SSE3, sse3, 0) X(SSSE3, ssse3, 1) X(SSE4_1, sse4_1, 2) X(SSE4_2, sse4_2, 3) X(AVX, avx, 4) X(FMA, fma, 5)    \
  X(AVX2, avx2, 6) X(F16C, f16c, 7) X(AVX512F, avx512f, 8) X(AVX512DQ, avx512dq, 9) X(AVX512CD, avx512cd, 10)     \
  X(AVX512BW, avx512bw, 11) X(AVX512VL, avx512vl, 12) X(AVX512_VNNI, avx512_vnni, 13)                            \
  X(AVX512_BF16, avx512_bf16, 14) X(AVX512_FP16, avx512_fp16, 15) X(AMX_TILE, amx_tile, 16)                      \
  X(AMX_BF16, amx_bf16, 17) X(AMX_INT8, amx_int8, 18)
#define MT_CPU_FEATURE_ENUM_(NAME, name, bit) MT_CPU_##NAME = 1 << bit,
typedef enum mt_cpu_feature { MT_CPU_FEATURE_LIST(MT_CPU_FEATURE_ENUM_) MT_CPU_FEATURE_NONE = 0 } mt_cpu_feature;
#undef MT_CPU_FEATURE_ENUM_
/* Vector levels, as kernels are graded: AVX-512 means F, DQ, CD, BW and VL with AVX2 and FMA. */
typedef enum mt_cpu_vector_level {
  MT_CPU_LEVEL_NONE = 0, /* not x86, nothing known */
  MT_CPU_LEVEL_SSE = 1,
  MT_CPU_LEVEL_AVX = 2,
  MT_CPU_LEVEL_AVX2 = 3,
  MT_CPU_LEVEL_AVX512 = 4
} mt_cpu_vector_level;
MT_API uint32_t mt_cpu_features(void);            /* MT_CPU_* bits; 0 off x86 */
MT_API const char *mt_cpu_vendor(void);           /* "GenuineIntel", "AuthenticAMD", ...; "" off x86 */
MT_API const char *mt_cpu_name(void);             /* the CPU's brand string ("AMD EPYC", ...) */
MT_API int mt_cpu_family(void);                   /* CPUID's family, extended family included (0x19: Zen 3/4) */
MT_API const char *mt_cpu_feature_name(uint32_t feature); /* "avx2" for MT_CPU_AVX2; NULL if not one bit */
MT_API int mt_cpu_level(uint32_t features);       /* the MT_CPU_LEVEL_* those features reach */
MT_API const char *mt_cpu_level_name(int level);  /* "none", "sse", "avx", "avx2", "avx512" */
/* The CPUs this process may use: its affinity mask, narrowed by a cgroup CPU quota. */
MT_API int mt_cpu_count_allowed(void);
/* The cgroup CPU quota (v2 cpu.max, v1 cfs_quota_us/cfs_period_us) as whole CPUs, rounded up; 0 when
 * there is none. `root` prefixes /proc/self/cgroup and /sys/fs/cgroup ("" for the real ones). */
MT_API int mt_cgroup_cpu_limit(const char *root);
/* The vector level moontorch's own kernels run at here: "avx2" or "scalar". */
MT_API const char *mt_kernels_simd(void);
/* The path of the bfloat16 products (issue 25, core/tensor/bf16.c) here: "avx512_bf16" (vdpbf16ps, at the
 * avx512 level on a CPU with AVX512-BF16), "avx2" (FMAs under flush-to-zero) or "scalar"; every path gives
 * the same bits. The int8 products' (core/tensor/qgemm.c): "avx512_vnni" (vpdpbusd), "avx2" or "scalar". */
MT_API const char *mt_kernels_bf16(void);
MT_API const char *mt_kernels_int8(void);

/* ---------------------------------------------------------------- the BLAS (core/blas.c) */
/* The BLAS is loaded at first use (a product, mt_blas_load, mt_config_string) with dlopen, after
 * moontorch chose OpenBLAS's kernel set from the CPU's features; MT_BLAS_CORETYPE, else the user's
 * OPENBLAS_CORETYPE, wins over the choice, silently (mt_config_string says it). MT_BLAS=openblas|onednn picks who does float32 products;
 * MT_OPENBLAS_LIB / MT_ONEDNN_LIB name the library files to load instead of the usual ones. */
typedef struct mt_blas_plan {
  char core[32];     /* the kernel set to ask OpenBLAS for ("": leave OpenBLAS to choose) */
  char how[160];     /* who chose it and why, for mt_config_string */
  char note[480];    /* "" or what mt_config_string adds, never printed on its own: a choice (MT_BLAS_CORETYPE,
                        OPENBLAS_CORETYPE) below the CPU's best, or one the CPU cannot run and what runs instead */
  char warning[480]; /* "" or the one warning for stderr: nobody chose, and OpenBLAS still runs kernels below the
                        CPU's best */
} mt_blas_plan;
/* The decision, a pure function: the CPU's features, vendor and family, MT_BLAS_CORETYPE and
 * OPENBLAS_CORETYPE (NULL or "" when unset), and the kernel set OpenBLAS reports once loaded (NULL
 * before loading). */
MT_API void mt_blas_plan_core(uint32_t features, const char *vendor, int family, const char *setting,
                              const char *user_env, const char *reported, mt_blas_plan *out);
MT_API int mt_blas_core_level(const char *core); /* the MT_CPU_LEVEL_* an OpenBLAS kernel set needs; 0 if unknown */
MT_API mt_status mt_blas_load(void);             /* load now (a product does it first) */
MT_API const char *mt_blas_provider(void);       /* "openblas" or "onednn": who does float32 products */
MT_API const char *mt_blas_core(void);           /* the kernel set the loaded OpenBLAS reports */
MT_API const char *mt_blas_library(void);        /* the file OpenBLAS was loaded from ("" if it was not) */
MT_API int mt_blas_available(const char *provider); /* can "openblas" / "onednn" be loaded here? */
MT_API int mt_blas_threads(void);                /* the threads the BLAS says it uses (0: no BLAS) */

/* ---------------------------------------------------------------- convolution (issue 12, conv part) */
/* nsp spatial dims (1 to 3); every array holds nsp numbers. input (N, C, *spatial), batched.
 * Not transposed: weight (C_out, C / groups, *kernel), result (N, C_out, *out) with
 * out = (in + 2 padding - dilation (kernel - 1) - 1) / stride + 1. Transposed: weight
 * (C, C_out / groups, *kernel), out = (in - 1) stride - 2 padding + dilation (kernel - 1) +
 * output_padding + 1. bias: NULL or (C_out). output_padding: NULL for zeros. */
MT_API mt_status mt_convolution(mt_tensor *input, mt_tensor *weight, mt_tensor *bias, const int64_t *stride,
                                const int64_t *padding, const int64_t *dilation, int transposed,
                                const int64_t *output_padding, int64_t groups, int nsp, mt_tensor **result);
/* im2col (F.unfold): input (N, C, *spatial) -> (N, C * prod(kernel), L), L the number of blocks;
 * its rows in the order (channel, kernel offsets), as PyTorch's. */
MT_API mt_status mt_im2col(mt_tensor *input, const int64_t *kernel, const int64_t *dilation, const int64_t *padding,
                           const int64_t *stride, int nsp, mt_tensor **result);
/* col2im (F.fold): cols (N, C * prod(kernel), L) -> (N, C, *output_size), overlapping blocks summed. */
MT_API mt_status mt_col2im(mt_tensor *cols, const int64_t *output_size, const int64_t *kernel, const int64_t *dilation,
                           const int64_t *padding, const int64_t *stride, int nsp, mt_tensor **result);

/* ---------------------------------------------------------------- configuration */
MT_API const char *mt_version(void); /* "0.1.0" */
/* What this build runs with, as PyTorch's torch.__config__.show(): version, compiler, CPU, the SIMD
 * level of moontorch's kernels, the BLAS and its kernel set and who chose it, threads, CUDA. Loads
 * the BLAS. The text stays valid until the next call. */
MT_API const char *mt_config_string(void);

/* ---------------------------------------------------------------- pooling and resampling (issue 12: pooling) */
/* Over the last nsp (1..3) dims of an (N, C, *) or (C, *) input, float32 or float64 (core/ops/pool.c).
 * Indices are flat positions in each (N, C) plane of the input, from index_base (Lua passes 1). */
typedef struct mt_pool_params {
  int32_t nsp, ceil_mode, count_include_pad, _pad;
  int64_t kernel[3], stride[3], padding[3], dilation[3];
  int64_t divisor_override; /* avg: 0 for none */
} mt_pool_params;
/* indices may be NULL (not wanted) */
MT_API mt_status mt_max_pool(mt_tensor *x, const mt_pool_params *p, int64_t index_base, mt_tensor **values,
                             mt_tensor **indices);
MT_API mt_status mt_adaptive_max_pool(mt_tensor *x, int nsp, const int64_t *sizes, int64_t index_base,
                                      mt_tensor **values, mt_tensor **indices);
MT_API mt_status mt_avg_pool(mt_tensor *x, const mt_pool_params *p, mt_tensor **result);
MT_API mt_status mt_adaptive_avg_pool(mt_tensor *x, int nsp, const int64_t *sizes, mt_tensor **result);
/* The input's values at `indices` (shaped like x) written into zeros of spatial size `sizes`. */
MT_API mt_status mt_max_unpool(mt_tensor *x, mt_tensor *indices, int nsp, const int64_t *sizes, int64_t index_base,
                               mt_tensor **result);
/* A linear resampling of the last nsp dims (what avg pools and interpolation compute): kind and
 * geometry, filled by the front doors above and by mt_interpolate. */
enum { MT_RS_AVG_POOL, MT_RS_ADAPTIVE_AVG, MT_RS_NEAREST, MT_RS_LINEAR, MT_RS_CUBIC, MT_RS_REFLECT, MT_RS_REPLICATE };
/* parity: interpolate's 'nearest-exact' mode, and bilinear / bicubic with antialias=True (PyTorch's
 * separable antialiasing filters: a triangle, and Keys' cubic with a = -0.5, stretched by the scale
 * when downsampling) */
enum { MT_RS_NEAREST_EXACT = MT_RS_REPLICATE + 1, MT_RS_LINEAR_AA, MT_RS_CUBIC_AA };
typedef struct mt_resample_spec {
  int32_t kind, nsp, align_corners, ceil_mode, count_include_pad, _pad;
  int64_t in[3], out[3];                   /* spatial sizes */
  int64_t kernel[3], stride[3], padding[3]; /* avg pools; pads: padding is what comes before each dim */
  double scales[3];                        /* interpolation: the scale factors given (0: none) */
  int64_t divisor_override;
} mt_resample_spec;
/* interpolate: mode MT_RS_NEAREST, MT_RS_LINEAR (linear, bilinear, trilinear) or MT_RS_CUBIC (2 dims);
 * sizes: the output's spatial sizes; scales: NULL, or per dim the scale factor to use (<= 0: none) */
MT_API mt_status mt_interpolate(mt_tensor *x, int nsp, int mode, const int64_t *sizes, const double *scales,
                                int align_corners, mt_tensor **result);
/* F.pad's reflect and replicate modes over the last nsp dims (mode MT_RS_REFLECT or MT_RS_REPLICATE):
 * before[d], after[d] added to dim d of them (negative: cropped) */
MT_API mt_status mt_pad(mt_tensor *x, int nsp, int mode, const int64_t *before, const int64_t *after,
                        mt_tensor **result);
/* The resampling and its adjoint (the gradient of x from that of the result). */
MT_API mt_status mt_resample(mt_tensor *x, const mt_resample_spec *spec, mt_tensor **result);
MT_API mt_status mt_resample_backward(mt_tensor *g, const mt_resample_spec *spec, mt_tensor **result);
/* ---------------------------------------------------------------- recurrent layers (issue 12, rnn part) */
/* One LSTM time step after its two products (PyTorch's _thnn_fused_lstm_cell): gates = igates + hgates
 * (+ b_ih) (+ b_hh), [batch, 4 * hidden] in PyTorch's order (input, forget, cell, output); cx
 * [batch, hidden]; the biases NULL or [4 * hidden]. cy = sigmoid(f) * cx + sigmoid(i) * tanh(g),
 * hy = sigmoid(o) * tanh(cy). One kernel pass forward, one backward (LstmCellPointwiseBackward0). */
MT_API mt_status mt_lstm_cell_pointwise(mt_tensor *igates, mt_tensor *hgates, mt_tensor *cx, mt_tensor *b_ih,
                                        mt_tensor *b_hh, mt_tensor **hy, mt_tensor **cy);
/* One GRU time step after its two products: igates, hgates [batch, 3 * hidden] (reset, update, new),
 * hx [batch, hidden], the biases NULL or [3 * hidden]: r = sigmoid(i_r + h_r), z = sigmoid(i_z + h_z),
 * n = tanh(i_n + r * h_n), hy = (hx - n) * z + n (GruCellPointwiseBackward0). */
MT_API mt_status mt_gru_cell_pointwise(mt_tensor *igates, mt_tensor *hgates, mt_tensor *hx, mt_tensor *b_ih,
                                       mt_tensor *b_hh, mt_tensor **hy);
/* The t.size(dim) views t.select(dim, i) into out[0 ..] (new references; out has room for them); one
 * node (UnbindBackward0) takes all their gradients when recorded. */
MT_API mt_status mt_unbind(mt_tensor *t, int dim, mt_tensor **out);
/* The LSTM's hidden recurrence over a sequence (issue 12, the LSTM's speed): igates [T, B, 4 * hidden] (the
 * input projection of every step, biases included; rows with unit stride, as a transposed batch_first
 * projection has), h0, c0 [B, hidden], w_hh [4 * hidden, hidden]. Step t (from the last when reverse) is
 * hgates = h @ w_hh^T, then lstm_cell_pointwise(igates[t], hgates, c). hs, cs [T, B, hidden]: the hidden and
 * cell states after each step, in time order. One node (LstmLayerBackward0), whose backward runs the steps
 * back with the fused cell backward and gives w_hh's gradient as one product over every step. */
MT_API mt_status mt_lstm_layer(mt_tensor *igates, mt_tensor *h0, mt_tensor *c0, mt_tensor *w_hh, int reverse,
                               mt_tensor **hs, mt_tensor **cs);
/* ---------------------------------------------------------------- issue 12, the modules part */
/* PyTorch's native_layer_norm: x normalised over its last nnorm dims by each row's mean and biased
 * variance (rstd = 1 / sqrt(var + eps)), times weight, plus bias (each NULL or of the normalised
 * dims' element count, x's dtype). float32 and float64. mean and rstd (NULL: not wanted) come back
 * with x's leading sizes and 1s for the normalised dims. */
MT_API mt_status mt_layer_norm(mt_tensor *x, mt_tensor *weight, mt_tensor *bias, int nnorm, double eps,
                               mt_tensor **result, mt_tensor **mean, mt_tensor **rstd);
/* PyTorch's nll_loss: input (C) or (N, C) of log-probabilities (float32, float64), target () or (N) of
 * int64 classes counted from index_base, weight NULL or (C); targets equal to ignore_index count
 * for nothing; reduction 0 none ((N) or ()), 1 mean (divided by the sum of the counted targets'
 * weights, which comes back in total_weight when not NULL), 2 sum. */
MT_API mt_status mt_nll_loss(mt_tensor *input, mt_tensor *target, mt_tensor *weight, int64_t ignore_index,
                             int reduction, int64_t index_base, mt_tensor **result, double *total_weight);
/* PyTorch's ctc_loss with reduction 'none': each sample's negative log-likelihood of its target
 * under CTC. log_probs (T, N, C) float32 or float64; targets (N, S) int64 classes counted from
 * index_base (padded past each target length); input_lengths, target_lengths (N) int64; blank a
 * class counted from index_base; zero_infinity: an infeasible sample's inf loss becomes 0. */
MT_API mt_status mt_ctc_loss(mt_tensor *log_probs, mt_tensor *targets, mt_tensor *input_lengths,
                             mt_tensor *target_lengths, int64_t blank, int zero_infinity, int64_t index_base,
                             mt_tensor **result);
/* PyTorch's embedding_bag: weight (V, D) float32 or float64, indices (n) int64 rows counted from
 * index_base, starts (B + 1) int64: bag b holds entries starts[b] .. starts[b + 1] - 1 (0-based
 * positions, starts[0] = 0); mode 0 sum (times per_sample_weights (n) when not NULL), 1 mean, 2 max;
 * entries at padding_idx (when has_padding) are left out; an empty bag gives zeros; the result is
 * (B, D). scale_grad_by_freq divides each row's gradient by its count among the indices. */
MT_API mt_status mt_embedding_bag(mt_tensor *weight, mt_tensor *indices, mt_tensor *starts,
                                  mt_tensor *per_sample_weights, int mode, int has_padding, int64_t padding_idx,
                                  int scale_grad_by_freq, int64_t index_base, mt_tensor **result);

/* ---------------------------------------------------------------- IDX files (issue 13, data part) */
/* Read an IDX file (the MNIST format: 0, 0, a type byte, the number of dims, big-endian uint32
 * sizes, then the big-endian data) into a new CPU tensor of its dtype: 0x08 uint8, 0x09 int8,
 * 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64. A gzip file (magic 1f 8b) is inflated through
 * zlib where this build has it (mt_idx_has_zlib). A file that is not exactly what its header says
 * (wrong magic, unknown type, sizes overflowing, truncated, trailing data) is MT_EFORMAT naming the
 * file; an unreadable one MT_EIO. */
MT_API mt_status mt_idx_read(const char *path, mt_tensor **out);
/* 1 when this build reads gzip (zlib was found); a test can pass 0 to act as a build without
 * zlib, 1 to restore, -1 to ask. */
MT_API int mt_idx_has_zlib(int set);

/* ---------------------------------------------------------------- DataLoader workers (issue 27) */
/* Tensors in shared memory (core/shm.c): a worker process makes a batch in blocks of shared memory
 * (anonymous memory files) and sends their descriptors; the main process maps them and makes tensors
 * over them, without copying. A tensor over a block is an ordinary CPU tensor; the block goes when
 * the last tensor over it (and the last descriptor) is gone. Linux only. */
typedef struct mt_shm_map mt_shm_map;
/* A new contiguous CPU tensor in a block of its own (a tensor of 0 bytes is an ordinary one). */
MT_API mt_status mt_shm_empty(const int64_t *sizes, int ndim, int dtype, mt_tensor **out);
/* One block holding a copy of each of the n tensors (CPU; contiguous, row-major) at offsets[i] bytes
 * (64-byte aligned): a 1-D uint8 tensor over the whole block. */
MT_API mt_status mt_shm_pack(mt_tensor *const *ts, int n, int64_t *offsets, mt_tensor **out);
/* The descriptor of the block holding t's storage when this process made it and still holds the
 * descriptor, with the block's length and t's first element's byte offset in it; else -1. */
MT_API int mt_shm_fd_of(const mt_tensor *t, size_t *nbytes, int64_t *byte_offset);
/* Close the descriptors of every block this process made (once a message handed them on); the
 * blocks stay mapped, and mt_shm_fd_of gives -1 for them from then on. */
MT_API void mt_shm_close_fds(void);
/* Map a block received as fd (closed here, mapped or not), nbytes long: the caller holds the map. */
MT_API mt_status mt_shm_map_fd(int fd, size_t nbytes, mt_shm_map **out);
/* A tensor over the map at byte_offset with the given geometry (checked to lie inside the block). */
MT_API mt_status mt_shm_map_tensor(mt_shm_map *m, int64_t byte_offset, int dtype, const int64_t *sizes,
                                   const int64_t *strides, int ndim, mt_tensor **out);
MT_API void mt_shm_map_release(mt_shm_map *m);
/* Blocks mapped in this process now (a leak check). */
MT_API int64_t mt_shm_live(void);
/* 1: blocks are memfd_create files; 0: files in /dev/shm, unlinked at once (the fallback for a
 * kernel without memfd, which a test can choose); -1 asks. */
MT_API int mt_shm_use_memfd(int set);

/* Worker processes and their channels (core/proc.c): one thread calls these. mt_proc_fork forks:
 * in the parent *pid is the worker's and *fd the parent's end of their channel (a Unix socket); in
 * the worker *pid is 0 and *fd its end. The worker dies with its parent, ignores SIGINT and holds no
 * other worker's channel. A message carries bytes and up to MT_PROC_MAX_FDS descriptors (sent as
 * they are: the sender keeps and closes its own). */
#define MT_PROC_MAX_FDS 250
typedef struct mt_proc_msg {
  char *data;      /* the payload (freed by mt_proc_msg_clear) */
  uint64_t nbytes;
  int32_t nfds;    /* descriptors received: each owned by the message until taken (set to -1) */
  int32_t closed;  /* 1: the other end closed the channel; nothing was received */
  int32_t fds[MT_PROC_MAX_FDS + 1];
} mt_proc_msg;
MT_API mt_status mt_proc_fork(int *pid, int *fd);
MT_API mt_status mt_proc_send(int fd, const void *data, size_t nbytes, const int *fds, int nfds);
/* The next message (blocking; clears m first). */
MT_API mt_status mt_proc_recv(int fd, mt_proc_msg *m);
/* Free the payload and close the descriptors nobody took. */
MT_API void mt_proc_msg_clear(mt_proc_msg *m);
/* Which of the n channels (at most 256) has a message or was closed: its index; -1 when timeout_ms
 * (-1: none) passed first, -2 when a signal interrupted the wait, -3 on another failure. */
MT_API int mt_proc_poll(const int *fds, int n, int timeout_ms);
MT_API void mt_proc_close(int fd);
/* waitpid: 0 still running, 1 exited (*code: its status), 2 killed (*code: the signal), -1 not a
 * child of this process (any more). */
MT_API int mt_proc_wait(int pid, int block, int *code);
/* Reap the n workers: those that exit within grace_ms are reaped as they do, the others are killed
 * (SIGKILL) and reaped; grace_ms 0 kills at once those still running. */
MT_API void mt_proc_reap(const int *pids, int n, int grace_ms);
/* SIGTERM, or SIGKILL when hard. */
MT_API int mt_proc_kill(int pid, int hard);
MT_API int mt_proc_self(void);
/* Seconds on the monotonic clock (timeouts). */
MT_API double mt_proc_clock(void);
/* Flush stdio and end this process at once (_exit: no atexit handlers, no Lua state to close). */
MT_API void mt_proc_exit(int code);
MT_API const char *mt_proc_signal_name(int sig);

/* ---------------------------------------------------------------- issue 24: sparse CSR products */
/* W @ dense for W an (m, ncols) CSR matrix: crow_indices (m + 1) and col_indices (nnz) int64
 * counted from index_base (row i's entries are values[crow[i] - base .. crow[i + 1] - base), their
 * columns col[...] - base), values (nnz) float32 or float64; dense (ncols, n) of values' dtype; the
 * result (m, n). transposed: dense is given as (n, ncols) and the result is (n, m), dense @ W^T (a
 * Linear's forward). Differentiable in values and dense (PyTorch's SparseAddmmBackward0 name); the
 * indices must be valid (checked: MT_ERANGE). */
MT_API mt_status mt_csr_mm(mt_tensor *crow_indices, mt_tensor *col_indices, mt_tensor *values, mt_tensor *dense,
                           int64_t ncols, int transposed, int64_t index_base, mt_tensor **result);

/* ---------------------------------------------------------------- quantization (issue 25) */
/* A quantized tensor lives in Lua (lua/quantization/): its integer values are an int8 / uint8 / int32 tensor
 * (the storage of qint8 / quint8 / qint32) and its quantizer numbers or tensors; these compute with them, on
 * the CPU. Per tensor when axis < 0 (scales and zero_points of one element), else per channel along axis
 * (0-based; float64 scales and int64 zero points of that dim's size).
 * mt_quantize: q = clamp(zero_point + round_half_even(x * (1 / scale as float32)), [qmin, qmax]), as
 * PyTorch's quantize_val, in a new contiguous tensor of `dtype` (MT_INT8, MT_UINT8 or MT_INT32); x any
 * floating dtype. mt_dequantize: float32 (q - zero_point) * scale (the scale rounded to float32). */
MT_API mt_status mt_quantize(const mt_tensor *x, const mt_tensor *scales, const mt_tensor *zero_points, int axis,
                             int dtype, int64_t qmin, int64_t qmax, mt_tensor **out);
MT_API mt_status mt_dequantize(const mt_tensor *q, const mt_tensor *scales, const mt_tensor *zero_points, int axis,
                               mt_tensor **out);
/* The quantized linear layer: x (..., K) uint8 (scale x_scale, zero point x_zp) times w^T, w (N, K) int8 with
 * w_scales / w_zps of 1 or N (per output channel), plus bias (N, float) or NULL: float32 (..., N) when !out_u8
 * (dynamic quantization), else uint8 requantized with out_scale / out_zp; relu clamps at 0. The int8 product is
 * exact (vpdpbusd where the CPU has AVX512-VNNI; core/tensor/qgemm.c). */
MT_API mt_status mt_qlinear(const mt_tensor *x, double x_scale, int64_t x_zp, const mt_tensor *w,
                            const mt_tensor *w_scales, const mt_tensor *w_zps, const mt_tensor *bias,
                            const mt_tensor *packed, double out_scale, int64_t out_zp, int out_u8, int relu,
                            mt_tensor **out);
/* The weight packed once as the int8 product reads it (an int32 tensor), for the `packed` argument of
 * mt_qlinear / mt_qlinear_dynamic (NULL there: packed at each call). */
MT_API mt_status mt_qpack(const mt_tensor *w, mt_tensor **out);
/* Dynamic quantization's linear layer: x (..., K) float quantized to uint8 with its own range (PyTorch's
 * ChooseQuantizationParams; [0, 127] with reduce_range), then mt_qlinear's product, float out (x's dtype). */
MT_API mt_status mt_qlinear_dynamic(const mt_tensor *x, const mt_tensor *w, const mt_tensor *w_scales,
                                    const mt_tensor *w_zps, const mt_tensor *bias, const mt_tensor *packed,
                                    int reduce_range, mt_tensor **out);
/* The quantized 2-D convolution: x (N, C, H, W) uint8, w (Co, C, KH, KW) int8; stride, padding, dilation of 2;
 * groups 1; the result (N, Co, OH, OW) uint8 requantized with out_scale / out_zp (relu: clamped at 0). The
 * product runs channels by pixels straight from the image (core/tensor/qgemm.c), the same integers as mt_qlinear's. */
MT_API mt_status mt_qconv2d(const mt_tensor *x, double x_scale, int64_t x_zp, const mt_tensor *w,
                            const mt_tensor *w_scales, const mt_tensor *w_zps, const mt_tensor *bias,
                            const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                            double out_scale, int64_t out_zp, int relu, mt_tensor **out);

/* The max pool of a quantized tensor's integers x (uint8 / int8 / int32, the CPU; the max of the values is the
 * max of the integers): mt_max_pool's windows, no indices (core/ops/pool.c). */
MT_API mt_status mt_qmax_pool(mt_tensor *x, const mt_pool_params *p, mt_tensor **values);

/* ---------------------------------------------------------------- parity session */
/* The in-place view ops (t_, transpose_, unsqueeze_, squeeze_, as_strided_): t takes the sizes,
 * strides and offset of `view`, a view of t's own storage, keeping its identity (the Lua handle).
 * Refused (MT_ENOTIMPL) when t requires grad: autograd does not follow a tensor whose shape changes
 * under it. */
MT_API mt_status mt_set_view_(mt_tensor *t, const mt_tensor *view, const char *op);

/* ---------------------------------------------------------------- torch.linalg's decompositions (LAPACK) */
/* Batched over A's leading dims, float32 or float64 on the CPU (by LAPACK's s-routines for float32, d-routines
 * for float64, as PyTorch: core/tensor/lapack.c; two operands of different dtypes in float64); A (..., m, n). LAPACK is the loaded BLAS's (OpenBLAS carries
 * it) or liblapack.so.3's; without either, MT_ENOTIMPL "<op>: needs LAPACK: ...". Not recorded by autograd
 * (lua/ops/decomp.lua records them, with PyTorch's derivatives). A failure of the factorization itself is
 * no error: `info` (int32, A's batch shape) holds LAPACK's code per matrix, the caller words it.
 * cholesky: L (..., n, n) lower with A = L L^T (upper: U with A = U^T U), from A's lower (upper) triangle.
 * solve_triangular: X with A X = B (left) or X A = B (!left), A (..., n, n) triangular (its other triangle
 * not read; unitriangular: its diagonal taken as ones), B (..., n, k) or (..., k, n) with A's batch shape.
 * qr: mode 0 reduced (Q (..., m, min), R (..., min, n)), 1 complete (Q (..., m, m), R (..., m, n)), 2 R
 * alone (*Q NULL), 3 LAPACK's geqrf (Q: the (..., m, n) matrix of R and the Householder vectors, R: tau
 * (..., min)). eigh: ascending eigenvalues w (..., n) and orthonormal eigenvectors V (..., n, n) as
 * columns (vectors 0: *V NULL) of the symmetric matrix in A's lower (upper) triangle. svd: U, S descending
 * (..., min), Vh as PyTorch's (full_matrices: U (..., m, m), Vh (..., n, n)); compute_uv 0: *U, *Vh NULL;
 * info -4 for a matrix with a non-finite value. lstsq: X (..., n, k) minimising |A X - B| (B (..., m, k),
 * A's batch shape; the minimum-norm one) by gelsd (svd) or gelsy (QR with column pivoting), singular values /
 * R's diagonal below rcond times the largest taken as zero (rcond < 0: machine precision); rank int64 (...);
 * S (..., min) A's singular values (gelsd; (..., 0) for gelsy); info -4: a non-finite value in A or B. lu_factor: LU (..., m, n) (L's unit
 * diagonal not stored), pivots int32 (..., min) 1-based as LAPACK's getrf (row i swapped with pivots[i]),
 * info > 0: U's diagonal element info is zero. */
MT_API mt_status mt_linalg_cholesky(mt_tensor *A, int upper, mt_tensor **L, mt_tensor **info);
MT_API mt_status mt_linalg_solve_triangular(mt_tensor *A, mt_tensor *B, int upper, int left, int unitriangular,
                                            mt_tensor **X);
MT_API mt_status mt_linalg_qr(mt_tensor *A, int mode, mt_tensor **Q, mt_tensor **R);
MT_API mt_status mt_linalg_eigh(mt_tensor *A, int upper, int vectors, mt_tensor **w, mt_tensor **V, mt_tensor **info);
MT_API mt_status mt_linalg_svd(mt_tensor *A, int full_matrices, int compute_uv, mt_tensor **U, mt_tensor **S,
                               mt_tensor **Vh, mt_tensor **info);
MT_API mt_status mt_linalg_lstsq(mt_tensor *A, mt_tensor *B, double rcond, int svd, mt_tensor **X, mt_tensor **rank,
                                 mt_tensor **S, mt_tensor **info);
MT_API mt_status mt_linalg_lu_factor(mt_tensor *A, mt_tensor **LU, mt_tensor **pivots, mt_tensor **info);
/* lu_solve: X (..., n, k) with A X = B (adjoint: A^T X = B), A = P L U given by lu_factor's LU (..., n, n) and
 * pivots (int32 (..., n), each in 1..n: else MT_EINVAL), B (..., n, k) with LU's batch shape (LAPACK's getrs). */
MT_API mt_status mt_linalg_lu_solve(mt_tensor *LU, mt_tensor *pivots, mt_tensor *B, int adjoint, mt_tensor **X);
/* ldl_factor: A = L D L^T of the symmetric matrices in A's lower triangle (LAPACK's sytrf, Bunch-Kaufman): LD
 * (..., n, n) (L's unit diagonal not stored; D's 1x1 / 2x2 blocks on and below the diagonal; upper triangle zero),
 * pivots int32 (..., n) as LAPACK's (> 0: row swapped; < 0, twice: a 2x2 block), info > 0: D(info, info) is zero.
 * ldl_solve: X (..., n, k) with A X = B from them (sytrs; pivots not a factorization's: MT_EINVAL), B with LD's batch
 * shape. */
MT_API mt_status mt_linalg_ldl_factor(mt_tensor *A, mt_tensor **LD, mt_tensor **pivots, mt_tensor **info);
MT_API mt_status mt_linalg_ldl_solve(mt_tensor *LD, mt_tensor *pivots, mt_tensor *B, mt_tensor **X);

#ifdef __cplusplus
}
#endif
#endif /* MOONTORCH_H */
