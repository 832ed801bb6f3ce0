/* index.c -- the CPU's indexing and creation kernels: index_select, gather, scatter, index_add,
 * index_copy_, index_fill_, masked_fill/select/scatter, nonzero, advanced indexing (index,
 * index_put_), tril/triu, one_hot, arange, linspace/logspace.
 *
 * Index tensors are first "normalised": copied into a contiguous int64 tensor of 0-based
 * positions, every value checked against the size it indexes (errors name the value in the
 * caller's base). The loops then never check and never fail, so in-place ops never leave a
 * half-written tensor behind.
 *
 * Most kernels run on the strided iterator in rows (iter.c: a row-major walk over an iteration
 * shape, a row function per last dimension, with the row's coordinates). The indexed ops use
 * three operands: the plain one (walked with its strides), the indexed one (walked with its
 * strides except along `dim`, where the normalised index value times its stride is added) and
 * the index itself. */
#include "cpu.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- small helpers */
static bool is_nonzero(int dtype, const char *p) { return mt_load_double(dtype, p) != 0; }

/* A head over t with a 0-dim tensor seen as 1-D of size 1 (the indexed ops treat a scalar so). */
static mt_status as_1d_if_scalar(const mt_tensor *t, mt_tensor **out) {
  if (t->_ndim > 0) { *out = mt_tensor_retain((mt_tensor *)t); return MT_OK; }
  int64_t one = 1, st = 1;
  return mt_new_view((mt_tensor *)t, &one, &st, 1, t->_offset, out);
}

/* Copy `index` (int64 or int32, any strides) into a contiguous int64 tensor of 0-based positions
 * along a dimension of `size`, checking every value. allow_neg: -1 is the last (advanced
 * indexing, index_fill_). `dim` is 0-based; messages show it, and the values, in base `base`. */
static mt_status normalize_index(const mt_tensor *index, int64_t size, int64_t base, int allow_neg, int dim,
                                 const char *op, mt_tensor **out) {
  mt_tensor *r;
  MT_TRY(mt_cpu_convert(index, MT_INT64, op, &r));
  int64_t *p = (int64_t *)r->_data;
  for (int64_t i = 0, n = r->_numel; i < n; i++) {
    int64_t v = p[i], pos;
    if (allow_neg && v < 0) pos = v + size;
    else pos = v - base;
    if (pos < 0 || pos >= size || (allow_neg && v >= 0 && v < base)) {
      mt_tensor_release(r);
      return mt_error(MT_ERANGE, "%s: index %lld is out of bounds for dimension %lld with size %lld%s", op,
                      (long long)v, (long long)(dim + base), (long long)size, MT_BASE_HINT(v, base));
    }
    p[i] = pos;
  }
  *out = r;
  return MT_OK;
}

/* Rows that share writes when a walk writes through an index along `dim`: positions differing
 * only in dim may hit the same element, so all rows of one value of the dims before `dim` stay
 * together (the iterator's dim 0 is the tensor's last). */
static int64_t write_block(const mt_iter *it, int dim) {
  int nd = it->ndim;
  if (dim == nd - 1) return 1;
  int64_t b = 1;
  for (int d = dim; d < nd - 1; d++) b *= it->sizes[nd - 1 - d];
  return b;
}

/* ---------------------------------------------------------------- indexed row kernels */
enum { K_GET, K_PUT, K_FILL, K_ADD, K_MUL, K_ADDV, K_MULV };

typedef struct {
  int kind;
  int dtype;
  size_t item;
  int64_t dimstride; /* bytes: the indexed operand's stride along dim */
  double alpha;      /* K_ADD: scale of the source; K_ADDV/K_MULV: the value */
  char fill[8];      /* K_FILL: the value's bytes */
} ix_ctx;

/* Copy kinds move bytes; arithmetic kinds compute in the dtype's native type. */
#define DEF_ACC(DT, T, L, S)                                                                        \
  static void acc_row_##DT(const ix_ctx *c, char *pp, int64_t sp, char *pi, int64_t si, const char *px,  \
                           int64_t sx, int64_t n) {                                                  \
    T x;                                                                                            \
    typedef __typeof__(L) nat;                                                                      \
    /* the value goes through the dtype (as PyTorch converts a scalar to self's type); alpha     */ \
    /* scales in the native type                                                                */ \
    nat value, alpha = DT == MT_BOOL ? (nat)(c->alpha != 0) : (nat)c->alpha;                         \
    {                                                                                               \
      double v = c->alpha;                                                                          \
      x = S;                                                                                        \
      value = L;                                                                                    \
    }                                                                                               \
    for (int64_t k = 0; k < n; k++) {                                                               \
      T *d = (T *)(pi + k * si + *(const int64_t *)(px + k * sx) * c->dimstride);                  \
      x = *d;                                                                                       \
      nat a = L, b, v;                                                                              \
      switch (c->kind) {                                                                            \
        case K_ADD: x = *(const T *)(pp + k * sp); b = L; v = a + alpha * b; break;                 \
        case K_MUL: x = *(const T *)(pp + k * sp); b = L; v = a * b; break;                         \
        case K_ADDV: v = a + value; break;                                                          \
        default: v = a * value; break;                                                              \
      }                                                                                             \
      *d = S;                                                                                       \
    }                                                                                               \
  }
MT_FOREACH_DTYPE(DEF_ACC)
#undef DEF_ACC

typedef void (*acc_row_fn)(const ix_ctx *, char *, int64_t, char *, int64_t, const char *, int64_t, int64_t);
static acc_row_fn acc_row_for(int dt) {
  switch (dt) {
#define X(DT, T, L, S) case DT: return acc_row_##DT;
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return NULL;
}

#define COPY_ROWS(T)                                                                                \
  {                                                                                                 \
    const int64_t ds = c->dimstride;                                                                \
    switch (c->kind) {                                                                              \
      case K_GET:                                                                                   \
        for (int64_t k = 0; k < n; k++)                                                             \
          *(T *)(pp + k * sp) = *(const T *)(pi + k * si + *(const int64_t *)(px + k * sx) * ds);   \
        break;                                                                                      \
      case K_PUT:                                                                                   \
        for (int64_t k = 0; k < n; k++)                                                             \
          *(T *)(pi + k * si + *(const int64_t *)(px + k * sx) * ds) = *(const T *)(pp + k * sp);   \
        break;                                                                                      \
      default: {                                                                                    \
        T v;                                                                                        \
        memcpy(&v, c->fill, sizeof v);                                                              \
        for (int64_t k = 0; k < n; k++) *(T *)(pi + k * si + *(const int64_t *)(px + k * sx) * ds) = v; \
      }                                                                                             \
    }                                                                                               \
  }                                                                                                 \
  break;

static void ix_row(const ix_ctx *c, char *pp, int64_t sp, char *pi, int64_t si, const char *px, int64_t sx,
                   int64_t n) {
  if (c->kind >= K_ADD) {
    acc_row_for(c->dtype)(c, pp, sp, pi, si, px, sx, n);
    return;
  }
  switch (c->item) {
    case 1: COPY_ROWS(uint8_t)
    case 2: COPY_ROWS(uint16_t)
    case 4: COPY_ROWS(uint32_t)
    case 8: COPY_ROWS(uint64_t)
  }
}

/* walker adapter: p[0] plain, p[1] indexed, p[2] index */
static void ix_walk_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  (void)coord;
  ix_row(ctx, p[0], st[0], p[1], st[1], p[2], st[2], n);
}

/* Set up and run an indexed walk over `shape` (nd dims, >= 1).
 * plain: data + element strides over the walk (NULL data: none, for fills);
 * ind: the indexed tensor (its strides used for every dim but `dim`);
 * idx: normalised index data + element strides over the walk. */
static void ix_run(ix_ctx *c, const int64_t *shape, int nd, char *plain, const int64_t *plain_st, const mt_tensor *ind,
                   int dim, const int64_t *idx, const int64_t *idx_st, int writes) {
  mt_iter it;
  mt_iter_init_rows(&it, shape, nd);
  int64_t ist[MT_MAX_DIMS] = {0};
  size_t item = mt_itemsize(ind->_dtype);
  static char dummy[8];
  mt_iter_add(&it, plain ? plain : dummy, plain ? plain_st : NULL, item);
  for (int i = 0; i < it.ndim; i++) ist[i] = ind->_ndim ? ind->_strides[i] : 0;
  c->dimstride = ist[dim] * (int64_t)item;
  ist[dim] = 0;
  mt_iter_add(&it, ind->_data, ist, item);
  mt_iter_add(&it, (char *)idx, idx_st, sizeof(int64_t));
  c->item = item;
  c->dtype = ind->_dtype;
  mt_iter_run_rows(&it, ix_walk_row, c, writes ? write_block(&it, dim) : 1);
}

typedef struct { size_t item; char fill[8]; } mfill_ctx;
static void mfill_loop(void *ctx, char **p, const int64_t *st, int64_t n) {
  const mfill_ctx *c = ctx;
  char *d = p[0];
  const char *m = p[1];
  switch (c->item) {
#define MF(T)                                                                 \
  {                                                                           \
    T v;                                                                      \
    memcpy(&v, c->fill, sizeof v);                                            \
    for (int64_t i = 0; i < n; i++, d += st[0], m += st[1]) if (*m) *(T *)d = v; \
  } break;
    case 1: MF(uint8_t)
    case 2: MF(uint16_t)
    case 4: MF(uint32_t)
    case 8: MF(uint64_t)
#undef MF
  }
}

/* Row-major walks over (a, mask) for masked_select / masked_scatter_ / nonzero. */
typedef struct {
  size_t item;
  int mdtype;
  char *seq;       /* the packed side: result (select) or source (scatter) */
  int64_t pos;     /* next element of seq */
  int scatter;
} mseq_ctx;

static void mcount_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  (void)coord;
  int64_t *cnt = ctx;
  const char *m = p[0];
  int64_t c = 0;
  for (int64_t i = 0; i < n; i++, m += st[0]) c += *m != 0;
  *cnt += c;
}

static void mseq_row(void *ctx_, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  (void)coord;
  mseq_ctx *c = ctx_;
  char *a = p[0];
  const char *m = p[1];
  size_t item = c->item;
  for (int64_t i = 0; i < n; i++, a += st[0], m += st[1]) {
    if (!*m) continue;
    if (c->scatter) memcpy(a, c->seq + c->pos * item, item);
    else memcpy(c->seq + c->pos * item, a, item);
    c->pos++;
  }
}

static int64_t count_true(const mt_tensor *m) {
  mt_iter it;
  mt_iter_init_rows(&it, m->_sizes, m->_ndim);
  mt_iter_add_tensor(&it, m);
  int64_t cnt = 0;
  mt_iter_rows(&it, mcount_row, &cnt, 0, mt_iter_nrows(&it));
  return cnt;
}

/* ---------------------------------------------------------------- nonzero */
typedef struct {
  int dtype;
  size_t item;
  int nd; /* the tensor's real ndim (0 for a scalar) */
  int64_t base;
  int64_t *out;
  int64_t count;
} nz_ctx;

static void nz_count_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  (void)coord;
  nz_ctx *c = ctx;
  const char *a = p[0];
  for (int64_t i = 0; i < n; i++, a += st[0]) c->count += is_nonzero(c->dtype, a);
}

static void nz_fill_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  nz_ctx *c = ctx;
  const char *a = p[0];
  int nd = c->nd;
  for (int64_t i = 0; i < n; i++, a += st[0]) {
    if (!is_nonzero(c->dtype, a)) continue;
    int64_t *row = c->out + c->count * nd;
    for (int d = 0; d + 1 < nd; d++) row[d] = coord[d] + c->base;
    if (nd > 0) row[nd - 1] = i + c->base;
    c->count++;
  }
}


/* ---------------------------------------------------------------- index_select, gather */
mt_status mt_cpu_index_select(mt_tensor *out, const mt_tensor *a, int dim, const mt_tensor *index, int64_t base) {
  mt_tensor *a1 = NULL, *o1 = NULL, *idx = NULL;
  mt_status s = as_1d_if_scalar(a, &a1);
  if (s == MT_OK) s = as_1d_if_scalar(out, &o1);
  if (s == MT_OK) s = normalize_index(index, a1->_sizes[dim], base, 0, dim, "index_select", &idx);
  if (s == MT_OK && o1->_numel > 0 && mt_tensor_is_contiguous(a1) && mt_tensor_is_contiguous(o1)) {
    /* both contiguous: each selected slice is one block of bytes (the rows a DataLoader gathers
     * from a data set, an embedding's rows), copied whole */
    const int64_t *ix = (const int64_t *)idx->_data;
    int64_t outer = 1, inner = (int64_t)mt_itemsize(a1->_dtype), n = a1->_sizes[dim], k = o1->_sizes[dim];
    for (int d = 0; d < dim; d++) outer *= a1->_sizes[d];
    for (int d = dim + 1; d < a1->_ndim; d++) inner *= a1->_sizes[d];
    const char *src = a1->_data;
    char *dst = o1->_data;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < k; j++, dst += inner) memcpy(dst, src + (o * n + ix[j]) * inner, (size_t)inner);
  } else if (s == MT_OK && o1->_numel > 0) {
    int64_t ist[MT_MAX_DIMS] = {0};
    ist[dim] = 1;
    ix_ctx c = {.kind = K_GET};
    ix_run(&c, o1->_sizes, o1->_ndim, o1->_data, o1->_strides, a1, dim, (const int64_t *)idx->_data, ist, 0);
  }
  mt_tensor_release(idx);
  mt_tensor_release(o1);
  mt_tensor_release(a1);
  return s;
}

mt_status mt_cpu_gather(mt_tensor *out, const mt_tensor *a, int dim, const mt_tensor *index, int64_t base) {
  mt_tensor *a1 = NULL, *i1 = NULL, *o1 = NULL, *idx = NULL;
  mt_status s = as_1d_if_scalar(a, &a1);
  if (s == MT_OK) s = as_1d_if_scalar(index, &i1);
  if (s == MT_OK) s = as_1d_if_scalar(out, &o1);
  if (s == MT_OK) s = normalize_index(i1, a1->_sizes[dim], base, 0, dim, "gather", &idx);
  if (s == MT_OK && o1->_numel > 0) {
    ix_ctx c = {.kind = K_GET};
    int64_t ist[MT_MAX_DIMS];
    mt_compute_strides(i1->_sizes, i1->_ndim, ist);
    ix_run(&c, i1->_sizes, i1->_ndim, o1->_data, o1->_strides, a1, dim, (const int64_t *)idx->_data, ist, 0);
  }
  mt_tensor_release(idx);
  mt_tensor_release(o1);
  mt_tensor_release(i1);
  mt_tensor_release(a1);
  return s;
}

/* ---------------------------------------------------------------- writes at indices */
mt_status mt_cpu_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double value, int reduce,
                         int64_t base) {
  const char *op = reduce == 1 && src ? "scatter_add" : "scatter";
  mt_tensor *i1 = NULL, *t1 = NULL, *src1 = NULL, *idx = NULL;
  mt_status s = as_1d_if_scalar(index, &i1);
  if (s == MT_OK) s = as_1d_if_scalar(t, &t1);
  if (s == MT_OK && src) s = as_1d_if_scalar(src, &src1);
  if (s == MT_OK) s = normalize_index(i1, t1->_sizes[dim], base, 0, dim, op, &idx);
  if (s == MT_OK && i1->_numel > 0) {
    ix_ctx c;
    memset(&c, 0, sizeof c);
    if (src1) c.kind = reduce == 0 ? K_PUT : (reduce == 1 ? K_ADD : K_MUL);
    else c.kind = reduce == 0 ? K_FILL : (reduce == 1 ? K_ADDV : K_MULV);
    c.alpha = src1 ? 1.0 : value;
    mt_cpu_encode(t->_dtype, value, c.fill);
    int64_t ist[MT_MAX_DIMS];
    mt_compute_strides(i1->_sizes, i1->_ndim, ist);
    ix_run(&c, i1->_sizes, i1->_ndim, src1 ? src1->_data : NULL, src1 ? src1->_strides : NULL, t1, dim,
           (const int64_t *)idx->_data, ist, 1);
  }
  mt_tensor_release(idx);
  mt_tensor_release(i1);
  mt_tensor_release(t1);
  mt_tensor_release(src1);
  return s;
}

/* self[..., idx[j], ...] (op)= src[..., j, ...] over src's shape. */
mt_status mt_cpu_index_write(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, int kind,
                             double alpha, int64_t base) {
  mt_tensor *t1 = NULL, *s1 = NULL, *idx = NULL;
  mt_status s = as_1d_if_scalar(t, &t1);
  if (s == MT_OK) s = as_1d_if_scalar(src, &s1);
  if (s == MT_OK)
    s = normalize_index(index, t1->_sizes[dim], base, 0, dim, kind == MT_INDEX_ADD ? "index_add" : "index_copy_", &idx);
  if (s == MT_OK && s1->_numel > 0) {
    ix_ctx c;
    memset(&c, 0, sizeof c);
    c.kind = kind == MT_INDEX_ADD ? K_ADD : K_PUT;
    c.alpha = alpha;
    int64_t ist[MT_MAX_DIMS] = {0};
    ist[dim] = 1;
    ix_run(&c, s1->_sizes, s1->_ndim, s1->_data, s1->_strides, t1, dim, (const int64_t *)idx->_data, ist, 1);
  }
  mt_tensor_release(idx);
  mt_tensor_release(s1);
  mt_tensor_release(t1);
  return s;
}

mt_status mt_cpu_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double value, int64_t base) {
  mt_tensor *t1 = NULL, *idx = NULL;
  mt_status s = as_1d_if_scalar(t, &t1);
  if (s == MT_OK) s = normalize_index(index, t1->_sizes[dim], base, 1, dim, "index_fill_", &idx);
  if (s == MT_OK) {
    int64_t sizes[MT_MAX_DIMS];
    memcpy(sizes, t1->_sizes, sizeof sizes);
    sizes[dim] = index->_numel;
    int64_t n = 1;
    for (int d = 0; d < t1->_ndim; d++) n *= sizes[d];
    if (n > 0) {
      ix_ctx c;
      memset(&c, 0, sizeof c);
      c.kind = K_FILL;
      mt_cpu_encode(t->_dtype, value, c.fill);
      int64_t ist[MT_MAX_DIMS] = {0};
      ist[dim] = 1;
      ix_run(&c, sizes, t1->_ndim, NULL, NULL, t1, dim, (const int64_t *)idx->_data, ist, 1);
    }
  }
  mt_tensor_release(idx);
  mt_tensor_release(t1);
  return s;
}

/* ---------------------------------------------------------------- masks */
mt_status mt_cpu_masked_fill(mt_tensor *t, const mt_tensor *mask, double value) {
  if (t->_numel == 0) return MT_OK;
  mfill_ctx c;
  c.item = mt_itemsize(t->_dtype);
  mt_cpu_encode(t->_dtype, value, c.fill);
  const mt_tensor *ops[2] = {t, mask};
  mt_iter it;
  mt_iter_init(&it, ops, 2, t->_sizes, t->_ndim);
  mt_iter_run(&it, mfill_loop, &c, MT_GRAIN);
  return MT_OK;
}

mt_status mt_cpu_masked_select(const mt_tensor *a, const mt_tensor *mask, mt_tensor **result) {
  int64_t cnt = count_true(mask);
  mt_tensor *r;
  MT_TRY(mt_new_cpu(&cnt, 1, a->_dtype, "masked_select", &r));
  if (cnt > 0) {
    mt_iter it;
    mt_iter_init_rows(&it, a->_sizes, a->_ndim);
    mt_iter_add_tensor(&it, a);
    mt_iter_add_tensor(&it, mask);
    mseq_ctx c = {mt_itemsize(a->_dtype), mask->_dtype, r->_data, 0, 0};
    mt_iter_rows(&it, mseq_row, &c, 0, mt_iter_nrows(&it));
  }
  *result = r;
  return MT_OK;
}

mt_status mt_cpu_masked_scatter(mt_tensor *t, const mt_tensor *mask, const mt_tensor *src) {
  int64_t cnt = count_true(mask);
  if (src->_numel < cnt)
    return mt_error(MT_ESHAPE, "masked_scatter_: number of elements of source (%lld) < number of ones in mask (%lld)",
                    (long long)src->_numel, (long long)cnt);
  if (cnt > 0) {
    mt_iter it;
    mt_iter_init_rows(&it, t->_sizes, t->_ndim);
    mt_iter_add_tensor(&it, t);
    mt_iter_add_tensor(&it, mask);
    mseq_ctx c = {mt_itemsize(t->_dtype), mask->_dtype, src->_data, 0, 1};
    mt_iter_rows(&it, mseq_row, &c, 0, mt_iter_nrows(&it));
  }
  return MT_OK;
}

mt_status mt_cpu_nonzero(const mt_tensor *a, int64_t base, mt_tensor **result) {
  mt_iter it;
  mt_iter_init_rows(&it, a->_sizes, a->_ndim);
  mt_iter_add_tensor(&it, a);
  int64_t nrows = mt_iter_nrows(&it);
  nz_ctx c = {a->_dtype, mt_itemsize(a->_dtype), a->_ndim, base, NULL, 0};
  mt_iter_rows(&it, nz_count_row, &c, 0, nrows);
  int64_t sizes[2] = {c.count, a->_ndim};
  mt_tensor *r;
  MT_TRY(mt_new_cpu(sizes, 2, MT_INT64, "nonzero", &r));
  c.out = (int64_t *)r->_data;
  c.count = 0;
  if (sizes[0] > 0) mt_iter_rows(&it, nz_fill_row, &c, 0, nrows);
  *result = r;
  return MT_OK;
}

/* ---------------------------------------------------------------- advanced indexing */
/* The indexed tensor w, whose first k dims the index tensors (each of the broadcast shape, P
 * elements) consume: the element offset in w of each of the P positions. */
typedef struct {
  const mt_tensor *w;
  int k;
  int64_t P;
  int64_t *off;
} adv_index;

static mt_status adv_offsets(adv_index *ai, const mt_tensor *w, int n, mt_tensor *const *indices, const int *raw,
                             int64_t base, const char *op) {
  ai->w = w;
  ai->k = n;
  ai->P = n ? indices[0]->_numel : 1;
  ai->off = calloc((size_t)(ai->P > 0 ? ai->P : 1), sizeof *ai->off);
  if (!ai->off) return mt_error(MT_ENOMEM, "%s: out of memory", op);
  for (int i = 0; i < n; i++) {
    mt_tensor *norm;
    mt_status s = normalize_index(indices[i], w->_sizes[i], raw[i] ? base : 0, raw[i], i, op, &norm);
    if (s) {
      free(ai->off);
      return s;
    }
    const int64_t *p = (const int64_t *)norm->_data;
    int64_t st = w->_strides[i];
    for (int64_t q = 0; q < ai->P; q++) ai->off[q] += p[q] * st;
    mt_tensor_release(norm);
  }
  return MT_OK;
}

typedef struct {
  const adv_index *ai;
  ix_ctx c;
  char *contig;       /* the contiguous side: result (get) or values (put) */
  int64_t B;          /* elements per block */
  int tnd;
  int64_t tsz[MT_MAX_DIMS], tst[MT_MAX_DIMS]; /* trailing sizes and byte strides in w */
} adv_job;

static void adv_blocks(void *ctx, int64_t p0, int64_t p1) {
  adv_job *j = ctx;
  const int64_t zero = 0;
  size_t item = j->c.item;
  int nd = j->tnd;
  int64_t inner = nd ? j->tsz[nd - 1] : 1, ist = nd ? j->tst[nd - 1] : 0;
  for (int64_t p = p0; p < p1; p++) {
    char *s = j->ai->w->_data + j->ai->off[p] * (int64_t)item;
    char *c = j->contig + p * j->B * (int64_t)item;
    if (j->B == 0) continue;
    int64_t idx[MT_MAX_DIMS] = {0};
    int64_t rows = j->B / inner;
    for (int64_t r = 0; r < rows; r++) {
      ix_row(&j->c, c, (int64_t)item, s, ist, (const char *)&zero, 0, inner);
      c += inner * (int64_t)item;
      for (int d = nd - 2; d >= 0; d--) {
        idx[d]++;
        s += j->tst[d];
        if (idx[d] < j->tsz[d]) break;
        s -= j->tst[d] * j->tsz[d];
        idx[d] = 0;
      }
    }
  }
}

static void adv_job_init(adv_job *j, const adv_index *ai, int kind, char *contig) {
  memset(j, 0, sizeof *j);
  j->ai = ai;
  j->c.kind = kind;
  j->c.dtype = ai->w->_dtype;
  j->c.item = mt_itemsize(ai->w->_dtype);
  j->c.alpha = 1.0;
  j->contig = contig;
  j->tnd = ai->w->_ndim - ai->k;
  j->B = 1;
  for (int i = 0; i < j->tnd; i++) {
    j->tsz[i] = ai->w->_sizes[ai->k + i];
    j->tst[i] = ai->w->_strides[ai->k + i] * (int64_t)j->c.item;
    j->B *= j->tsz[i];
  }
}


mt_status mt_cpu_index(mt_tensor *out, const mt_tensor *w, int n, mt_tensor *const *indices, const int *raw,
                       int64_t base) {
  adv_index ai;
  MT_TRY(adv_offsets(&ai, w, n, indices, raw, base, "index"));
  if (out->_numel > 0) {
    adv_job j;
    adv_job_init(&j, &ai, K_GET, out->_data);
    int64_t grain = MT_GRAIN / (j.B > 0 ? j.B : 1);
    mt_parallel_for(ai.P, grain < 1 ? 1 : grain, adv_blocks, &j);
  }
  free(ai.off);
  return MT_OK;
}

mt_status mt_cpu_index_put(mt_tensor *w, int n, mt_tensor *const *indices, const int *raw, const mt_tensor *values,
                           int accumulate, int64_t base) {
  adv_index ai;
  MT_TRY(adv_offsets(&ai, w, n, indices, raw, base, "index_put_"));
  if (ai.P > 0) {
    adv_job j;
    adv_job_init(&j, &ai, accumulate ? K_ADD : K_PUT, values->_data);
    /* one thread: repeated positions add up (accumulate) or the last write wins */
    if (j.B > 0) adv_blocks(&j, 0, ai.P);
  }
  free(ai.off);
  return MT_OK;
}

/* ---------------------------------------------------------------- tril / triu */
typedef struct { int64_t k; int upper; size_t item; int nd; } tri_ctx;
static void tri_row(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord) {
  const tri_ctx *c = ctx;
  int64_t i = coord[c->nd - 2];
  /* tril keeps j <= i + k, triu keeps j >= i + k: zero the rest */
  int64_t lo, hi; /* the zeroed column range [lo, hi) */
  if (c->upper) {
    lo = 0;
    hi = i + c->k;
  } else {
    lo = i + c->k + 1;
    hi = n;
  }
  if (lo < 0) lo = 0;
  if (hi > n) hi = n;
  char *d = p[0];
  for (int64_t j = lo; j < hi; j++) memset(d + j * st[0], 0, c->item);
}

mt_status mt_cpu_triangle(mt_tensor *t, int64_t diagonal, int upper) {
  if (t->_numel == 0) return MT_OK;
  mt_iter it;
  mt_iter_init_rows(&it, t->_sizes, t->_ndim);
  mt_iter_add_tensor(&it, t);
  tri_ctx c = {diagonal, upper, mt_itemsize(t->_dtype), t->_ndim};
  mt_iter_run_rows(&it, tri_row, &c, 1);
  return MT_OK;
}

/* ---------------------------------------------------------------- one_hot */
mt_status mt_cpu_one_hot(const mt_tensor *index, int64_t num_classes, int64_t base, mt_tensor **result) {
  const char *op = "one_hot";
  mt_tensor *ic;
  MT_TRY(mt_cpu_contiguous(index, op, &ic));
  const int64_t *p = (const int64_t *)ic->_data;
  int64_t n = ic->_numel;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t i = 0; i < n; i++) {
    if (p[i] < lo) lo = p[i];
    if (p[i] > hi) hi = p[i];
  }
  mt_status s = MT_OK;
  if (num_classes == -1) {
    if (n == 0) s = mt_error(MT_EINVAL, "%s: can not infer the total number of classes from an empty tensor", op);
    else num_classes = hi - base + 1;
  }
  if (s == MT_OK && n > 0 && lo < base)
    s = mt_error(MT_ERANGE, "%s: class value %lld is out of range for num_classes %lld (class values are %lld to %lld)%s",
                 op, (long long)lo, (long long)num_classes, (long long)base, (long long)(num_classes - 1 + base),
                 MT_BASE_HINT(lo, base));
  if (s == MT_OK && n > 0 && hi - base >= num_classes)
    s = mt_error(MT_ERANGE, "%s: class value %lld is out of range for num_classes %lld (class values are %lld to %lld)",
                 op, (long long)hi, (long long)num_classes, (long long)base, (long long)(num_classes - 1 + base));
  mt_tensor *r = NULL;
  if (s == MT_OK) {
    int64_t sizes[MT_MAX_DIMS];
    memcpy(sizes, index->_sizes, sizeof(int64_t) * (size_t)index->_ndim);
    sizes[index->_ndim] = num_classes;
    s = mt_new_cpu(sizes, index->_ndim + 1, MT_INT64, op, &r);
    if (s == MT_OK) {
      int64_t *q = (int64_t *)r->_data;
      memset(q, 0, (size_t)r->_numel * sizeof *q);
      for (int64_t i = 0; i < n; i++) q[i * num_classes + (p[i] - base)] = 1;
    }
  }
  mt_tensor_release(ic);
  if (s) return s;
  *result = r;
  return MT_OK;
}

/* ---------------------------------------------------------------- creation */
mt_status mt_cpu_arange(mt_tensor *out, double start, double step) {
  int dtype = out->_dtype;
  bool integral = !mt_is_float(dtype);
  int64_t n = out->_numel, is = integral ? (int64_t)start : 0, ist = integral ? (int64_t)step : 0;
  switch (dtype) {
#define X(DT, T, L, S)                                                                \
  case DT: {                                                                          \
    T *p = (T *)out->_data;                                                           \
    if (integral) {                                                                   \
      for (int64_t i = 0; i < n; i++) { int64_t v = is + i * ist; p[i] = S; }         \
    } else if (mt_is_reduced_float(DT)) {                                             \
      for (int64_t i = 0; i < n; i++) { float v = (float)start + (float)i * (float)step; p[i] = S; } \
    } else {                                                                          \
      for (int64_t i = 0; i < n; i++) { double v = start + (double)i * step; p[i] = S; } \
    }                                                                                 \
  } break;
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return MT_OK;
}

/* linspace/logspace share the point rule: the first half counts up from start, the second
 * half down from end, so both endpoints are exact. */
mt_status mt_cpu_linspace(mt_tensor *out, double start, double end, double base, int log) {
  int dtype = out->_dtype;
  int64_t steps = out->_numel, half = steps / 2;
  switch (dtype) {
#define X(DT, T, L, S)                                                                          \
  case DT: {                                                                                    \
    T *p = (T *)out->_data;                                                                     \
    if (DT == MT_FLOAT32 || mt_is_reduced_float(DT)) {                                          \
      float s0 = (float)start, s1 = (float)end;                                                 \
      float stp = steps > 1 ? (s1 - s0) / (float)(steps - 1) : 0.f;                             \
      for (int64_t i = 0; i < steps; i++) {                                                     \
        float e = i < half ? s0 + stp * (float)i : s1 - stp * (float)(steps - i - 1);          \
        double v = log ? pow(base, (double)e) : (double)e;                                      \
        if (steps == 1) v = log ? pow(base, (double)s0) : (double)s0;                           \
        p[i] = S;                                                                               \
      }                                                                                         \
    } else {                                                                                    \
      double s0 = start, s1 = end;                                                              \
      if (!mt_is_float(DT)) { T t0 = (T)(int64_t)start, t1 = (T)(int64_t)end; s0 = (double)t0; s1 = (double)t1; } \
      double stp = steps > 1 ? (s1 - s0) / (double)(steps - 1) : 0.;                            \
      for (int64_t i = 0; i < steps; i++) {                                                     \
        double e = i < half ? s0 + stp * (double)i : s1 - stp * (double)(steps - i - 1);        \
        if (steps == 1) e = s0;                                                                 \
        double v = log ? pow(base, e) : e;                                                      \
        p[i] = S;                                                                               \
      }                                                                                         \
    }                                                                                           \
  } break;
    MT_FOREACH_DTYPE(X)
#undef X
  }
  return MT_OK;
}
