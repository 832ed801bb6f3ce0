/* copy.c -- the CPU's copy between any dtypes and any strides, and fill. */
#include "cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One conversion loop per (dst, src) dtype pair: 100 small functions. */
#define DEF_CONV(DD, TD, SD, DS, TS, LS, SS)                                                  \
  static void conv_##DD##_##DS(void *ctx, char **p, const int64_t *st, int64_t n) {           \
    (void)ctx;                                                                                \
    char *d = p[0];                                                                           \
    const char *s = p[1];                                                                     \
    if (st[0] == (int64_t)sizeof(TD) && st[1] == (int64_t)sizeof(TS)) {                       \
      TD *dd = (TD *)d;                                                                       \
      const TS *ss = (const TS *)s;                                                           \
      for (int64_t i = 0; i < n; i++) {                                                       \
        TS x = ss[i];                                                                         \
        __typeof__(LS) v = LS;                                                                \
        dd[i] = SD;                                                                           \
      }                                                                                       \
    } else {                                                                                  \
      for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) {                               \
        TS x = *(const TS *)s;                                                                \
        __typeof__(LS) v = LS;                                                                \
        *(TD *)d = SD;                                                                        \
      }                                                                                       \
    }                                                                                         \
  }
#define CONV_FOR_DST(DD, TD, LD, SD) MT_FOREACH_DTYPE_B(DEF_CONV, DD, TD, SD)
MT_FOREACH_DTYPE(CONV_FOR_DST)

static mt_loop_fn conv_table[MT_DTYPE_MAX][MT_DTYPE_MAX];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static void init_table(void) {
#define SET_CONV(DD, TD, SD, DS, TS, LS, SS) conv_table[DD][DS] = conv_##DD##_##DS;
#define SET_FOR_DST(DD, TD, LD, SD) MT_FOREACH_DTYPE_B(SET_CONV, DD, TD, SD)
  MT_FOREACH_DTYPE(SET_FOR_DST)
  /* speed: float32 <-> bfloat16 / float16 vectorised (lowp.c), the same bits */
  conv_table[MT_BFLOAT16][MT_FLOAT32] = mt_cpu_loop_f32_to_bf16;
  conv_table[MT_FLOAT32][MT_BFLOAT16] = mt_cpu_loop_bf16_to_f32;
  conv_table[MT_FLOAT16][MT_FLOAT32] = mt_cpu_loop_f32_to_f16;
  conv_table[MT_FLOAT32][MT_FLOAT16] = mt_cpu_loop_f16_to_f32;
  conv_table[MT_BFLOAT16][MT_BOOL] = mt_cpu_loop_bool_to_bf16;
  conv_table[MT_FLOAT16][MT_BOOL] = mt_cpu_loop_bool_to_f16;
}

static void memcpy_loop(void *ctx, char **p, const int64_t *st, int64_t n) {
  size_t item = *(size_t *)ctx;
  if (st[0] == (int64_t)item && st[1] == (int64_t)item) {
    memcpy(p[0], p[1], (size_t)n * item);
    return;
  }
  char *d = p[0];
  const char *s = p[1];
  switch (item) {
#define STRIDED(T) for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) *(T *)d = *(const T *)s; break;
    case 1: STRIDED(uint8_t)
    case 2: STRIDED(uint16_t)
    case 4: STRIDED(uint32_t)
    case 8: STRIDED(uint64_t)
#undef STRIDED
    default:
      for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) memcpy(d, s, item);
  }
}

typedef struct { char *d; const char *s; } flat_copy;
static void flat_copy_range(void *ctx, int64_t b, int64_t e) {
  flat_copy *f = ctx;
  memcpy(f->d + b, f->s + b, (size_t)(e - b));
}

/* dst <- src where src has dst's shape (or broadcasts to it) and they do not overlap. */
mt_status mt_cpu_copy(mt_tensor *dst, const mt_tensor *src) {
  if (dst->_dtype == src->_dtype && (dst->_flags & src->_flags & MT_TENSOR_CONTIGUOUS) &&
      dst->_numel == src->_numel) {
    size_t bytes = (size_t)dst->_numel * mt_itemsize(dst->_dtype);
    flat_copy f = {dst->_data, src->_data};
    mt_parallel_for((int64_t)bytes, (int64_t)MT_GRAIN * 8, flat_copy_range, &f);
    return MT_OK;
  }
  pthread_once(&table_once, init_table);
  const mt_tensor *ops[2] = {dst, src};
  mt_iter it;
  mt_iter_init(&it, ops, 2, dst->_sizes, dst->_ndim);
  if (dst->_dtype == src->_dtype) {
    size_t item = mt_itemsize(dst->_dtype);
    mt_iter_run(&it, memcpy_loop, &item, MT_GRAIN);
  } else {
    mt_iter_run(&it, conv_table[dst->_dtype][src->_dtype], NULL, MT_GRAIN);
  }
  return MT_OK;
}

mt_status mt_cpu_contiguous(const mt_tensor *a, const char *op, mt_tensor **out) {
  if (a->_flags & MT_TENSOR_CONTIGUOUS) {
    *out = mt_tensor_retain((mt_tensor *)a);
    return MT_OK;
  }
  return mt_cpu_convert(a, a->_dtype, op, out);
}

mt_status mt_cpu_convert(const mt_tensor *a, int dtype, const char *op, mt_tensor **out) {
  mt_tensor *r;
  MT_TRY(mt_new_cpu(a->_sizes, a->_ndim, dtype, op, &r));
  mt_cpu_copy(r, a);
  *out = r;
  return MT_OK;
}

/* ---------------------------------------------------------------- fill */
typedef struct { char bytes[8]; size_t item; } fill_ctx;

static void fill_loop(void *ctx, char **p, const int64_t *st, int64_t n) {
  fill_ctx *f = ctx;
  char *d = p[0];
  switch (f->item) {
#define FILL(T)                                                  \
  {                                                              \
    T v;                                                         \
    memcpy(&v, f->bytes, sizeof v);                              \
    if (st[0] == sizeof(T)) for (int64_t i = 0; i < n; i++) ((T *)d)[i] = v; \
    else for (int64_t i = 0; i < n; i++, d += st[0]) *(T *)d = v; \
  } break;
    case 1: FILL(uint8_t)
    case 2: FILL(uint16_t)
    case 4: FILL(uint32_t)
    case 8: FILL(uint64_t)
#undef FILL
  }
}

mt_status mt_cpu_fill(mt_tensor *t, double value) {
  fill_ctx f;
  f.item = mt_itemsize(t->_dtype);
  mt_cpu_encode(t->_dtype, value, f.bytes);
  if (value == 0 && !signbit(value) && (t->_flags & MT_TENSOR_CONTIGUOUS)) {
    memset(t->_data, 0, (size_t)t->_numel * f.item);
    return MT_OK;
  }
  const mt_tensor *ops[1] = {t};
  mt_iter it;
  mt_iter_init(&it, ops, 1, t->_sizes, t->_ndim);
  mt_iter_run(&it, fill_loop, &f, MT_GRAIN);
  return MT_OK;
}
