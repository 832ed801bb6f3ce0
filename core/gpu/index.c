/* index.c -- the CUDA backend's indexing slots: the geometry of the indexed walks (index_select, gather,
 * scatter, index_add/copy/fill), masks, advanced indexing, the rearranging gathers, one_hot and the sort
 * family, and the launch of k_index.cu's kernels. Results whose size the values decide (masked_select,
 * nonzero, unique, bincount, one_hot without its number of classes) wait for the device to count first,
 * as PyTorch's do. Indices are checked on the device: a bad one is an error at the next synchronisation
 * (gpu.md). */
#include "gpu.h"

#include <stdlib.h>

static mt_status no_kernel(const char *op, int dtype) {
  return mt_error(MT_EDTYPE, "%s: not implemented for '%s' on device cuda", op, mt_dtype_name(dtype));
}

mt_status mt_gpu_new(int index, const int64_t *sizes, int ndim, int dtype, const char *op, mt_tensor **out) {
  return mt_new_with(mt_cuda_backend.memory, MT_CUDA, index, sizes, ndim, dtype, op, out);
}

/* n bytes of device memory for a kernel's scratch, freed after the launch (the allocator reuses it in
 * stream order) */
static void *scratch(const mt_tensor *t, size_t n, const char *op) {
  return mt_gpu_malloc(t->_device_index, n ? n : 8, mt_gpu_current_stream(t->_device_index), op);
}

/* n int64 values of device memory into host memory (waits for the device) */
mt_status mt_gpu_read(int index, void *host, const void *dev, size_t n, const char *op) {
  void *s = mt_gpu_current_stream(index);
  MT_TRY(mt_gpu_use(index, op));
  MT_GPU_TRY(mt_gpu_rt->memcpy_async(host, dev, n, MT_GPU_D2H, s), op);
  MT_GPU_TRY(mt_gpu_rt->stream_synchronize(s), op);
  return mt_gpu_check_fault(index, op);
}

/* t's sizes and strides as a walk of nd >= 1 dims (a 0-dim tensor: one dim of size 1) */
static int dims_of(const mt_tensor *t, int64_t *sizes, int64_t *strides) {
  if (t->_ndim == 0) {
    sizes[0] = 1;
    strides[0] = 1;
    return 1;
  }
  for (int d = 0; d < t->_ndim; d++) {
    sizes[d] = t->_sizes[d];
    strides[d] = t->_strides[d];
  }
  return t->_ndim;
}
/* t's strides over a walk of `sizes` (t broadcast to it, aligned at the right) */
static void strides_over(const mt_tensor *t, const int64_t *sizes, int nd, int64_t *out) {
  int64_t ts[MT_MAX_DIMS], tst[MT_MAX_DIMS];
  int tn = dims_of(t, ts, tst);
  if (t->_ndim == 0) tn = 0;
  for (int d = 0; d < nd; d++) {
    int td = d - (nd - tn);
    out[d] = td < 0 || ts[td] != sizes[d] ? 0 : tst[td];
  }
}

/* ---------------------------------------------------------------- the indexed walks */
enum { K_GET, K_PUT, K_FILL, K_ADD, K_MUL, K_ADDV, K_MULV };

static mt_status run_indexed(mt_gpu_indexed *x, const mt_tensor *ind, const char *op, int opnum) {
  x->dtype = ind->_dtype;
  x->fault = mt_gpu_fault_of(ind->_device_index);
  x->op = opnum;
  x->numel = 1;
  for (int d = 0; d < x->ndim; d++) x->numel *= x->sizes[d];
  if (x->numel == 0) return MT_OK;
  void *s = mt_gpu_stream_of(ind);
  if (mt_gpu_k->indexed(x, s)) return no_kernel(op, ind->_dtype);
  return MT_OK;
}
/* ind (the indexed tensor) along `dim`: its strides but at dim, its stride and size there */
static void indexed_side(mt_gpu_indexed *x, const mt_tensor *ind, int dim) {
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  dims_of(ind, sz, st);
  x->ind = ind->_data;
  x->dim = dim;
  x->dimstride = st[dim];
  x->dimsize = sz[dim];
  for (int d = 0; d < x->ndim; d++) x->ind_strides[d] = d == dim ? 0 : st[d];
}
static void index_side(mt_gpu_indexed *x, const mt_tensor *index, int along_dim) {
  x->idx = index->_data;
  x->idx_dtype = index->_dtype;
  if (along_dim) { /* a 1-D index along dim */
    for (int d = 0; d < x->ndim; d++) x->idx_strides[d] = 0;
    x->idx_strides[x->dim] = index->_ndim ? index->_strides[0] : 0;
  } else {
    int64_t sz[MT_MAX_DIMS];
    dims_of(index, sz, x->idx_strides);
  }
}

mt_status mt_gpu_index_select(mt_tensor *out, const mt_tensor *a, int dim, const mt_tensor *index, int64_t base) {
  mt_gpu_indexed x;
  memset(&x, 0, sizeof x);
  x.ndim = dims_of(out, x.sizes, x.plain_strides);
  x.plain = out->_data;
  x.kind = K_GET;
  x.base = base;
  indexed_side(&x, a, dim);
  index_side(&x, index, 1);
  return run_indexed(&x, a, "index_select", MT_OP_INDEX_SELECT);
}

mt_status mt_gpu_gather(mt_tensor *out, const mt_tensor *a, int dim, const mt_tensor *index, int64_t base) {
  mt_gpu_indexed x;
  memset(&x, 0, sizeof x);
  x.ndim = dims_of(index, x.sizes, x.idx_strides);
  int64_t sz[MT_MAX_DIMS];
  dims_of(out, sz, x.plain_strides);
  x.plain = out->_data;
  x.kind = K_GET;
  x.base = base;
  indexed_side(&x, a, dim);
  index_side(&x, index, 0);
  return run_indexed(&x, a, "gather", MT_OP_GATHER);
}

mt_status mt_gpu_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double value,
                         int reduce, int64_t base) {
  mt_gpu_indexed x;
  memset(&x, 0, sizeof x);
  x.ndim = dims_of(index, x.sizes, x.idx_strides);
  if (src) {
    int64_t sz[MT_MAX_DIMS];
    dims_of(src, sz, x.plain_strides);
    x.plain = src->_data;
    x.kind = reduce == 0 ? K_PUT : reduce == 1 ? K_ADD : K_MUL;
    x.alpha = 1.0;
  } else {
    x.kind = reduce == 0 ? K_FILL : reduce == 1 ? K_ADDV : K_MULV;
    x.alpha = value;
  }
  mt_store_double(t->_dtype, &x.fill, value);
  x.base = base;
  indexed_side(&x, t, dim);
  index_side(&x, index, 0);
  return run_indexed(&x, t, reduce == 1 && src ? "scatter_add" : "scatter",
                     reduce == 1 && src ? MT_OP_SCATTER_ADD : MT_OP_SCATTER);
}

mt_status mt_gpu_index_write(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, int kind,
                             double alpha, int64_t base) {
  mt_gpu_indexed x;
  memset(&x, 0, sizeof x);
  x.ndim = dims_of(src, x.sizes, x.plain_strides);
  x.plain = src->_data;
  x.kind = kind == MT_INDEX_ADD ? K_ADD : K_PUT;
  x.alpha = alpha;
  x.base = base;
  indexed_side(&x, t, dim);
  index_side(&x, index, 1);
  return run_indexed(&x, t, kind == MT_INDEX_ADD ? "index_add" : "index_copy_",
                     kind == MT_INDEX_ADD ? MT_OP_INDEX_ADD : MT_OP_INDEX_COPY);
}

mt_status mt_gpu_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double value, int64_t base) {
  mt_gpu_indexed x;
  memset(&x, 0, sizeof x);
  int64_t st[MT_MAX_DIMS];
  x.ndim = dims_of(t, x.sizes, st);
  x.sizes[dim] = index->_numel;
  x.kind = K_FILL;
  mt_store_double(t->_dtype, &x.fill, value);
  x.base = base;
  x.allow_neg = 1;
  indexed_side(&x, t, dim);
  index_side(&x, index, 1);
  return run_indexed(&x, t, "index_fill_", MT_OP_INDEX_FILL);
}

/* ---------------------------------------------------------------- masks */
mt_status mt_gpu_masked_fill(mt_tensor *t, const mt_tensor *mask, double value) {
  if (t->_numel == 0) return MT_OK;
  mt_gpu_iter it;
  mt_gpu_iter_make(&it, (const mt_tensor *[]){t, mask}, 2);
  mt_store_double(t->_dtype, &it.scalar[0], value);
  void *s = mt_gpu_stream_of(t);
  if (mt_gpu_k->masked_fill(&it, s)) return no_kernel("masked_fill", t->_dtype);
  return MT_OK;
}

/* a scan over the walk of `shape`: phase 0 (the count, read back: a synchronisation), then phase 1 */
static mt_status run_scan(mt_gpu_scan *sc, const mt_tensor *dev, int64_t *count, mt_tensor *(*make)(void *, int64_t),
                          void *ctx, const char *op, int write) {
  sc->numel = 1;
  for (int d = 0; d < sc->ndim; d++) sc->numel *= sc->sizes[d];
  sc->nchunks = sc->numel ? (sc->numel + 255) / 256 : 0;
  if (sc->nchunks > 65536) sc->nchunks = 65536;
  sc->chunk = sc->nchunks ? (sc->numel + sc->nchunks - 1) / sc->nchunks : 1;
  if (sc->nchunks) sc->nchunks = (sc->numel + sc->chunk - 1) / sc->chunk;
  void *s = mt_gpu_stream_of(dev);
  int64_t *chunks = scratch(dev, (size_t)(sc->nchunks + 1) * 8, op);
  if (!chunks) return MT_ENOMEM;
  mt_status st = MT_OK;
  if (mt_gpu_k->scan(sc, chunks, 0, s)) st = no_kernel(op, sc->mask_dtype);
  if (st == MT_OK) st = mt_gpu_read(dev->_device_index, count, chunks + sc->nchunks, 8, op);
  if (st == MT_OK && make) {
    mt_tensor *r = make(ctx, *count);
    if (!r) st = MT_ENOMEM;
    else sc->out = r->_data;
  }
  if (st == MT_OK && write && *count > 0 && mt_gpu_k->scan(sc, chunks, 1, s)) st = no_kernel(op, sc->dtype);
  mt_gpu_free(chunks);
  return st;
}

typedef struct {
  int index, dtype, ncols;
  const char *op;
  mt_tensor *r;
  mt_status status;
} make_ctx;
static mt_tensor *make_result(void *ctx_, int64_t n) {
  make_ctx *c = ctx_;
  int64_t sizes[2] = {n, c->ncols};
  c->status = mt_gpu_new(c->index, sizes, c->ncols >= 0 ? 2 : 1, c->dtype, c->op, &c->r);
  return c->status == MT_OK ? c->r : NULL;
}

mt_status mt_gpu_masked_select(const mt_tensor *a, const mt_tensor *mask, mt_tensor **result) {
  mt_gpu_scan sc;
  memset(&sc, 0, sizeof sc);
  sc.kind = MT_GPU_SCAN_SELECT;
  sc.ndim = dims_of(a, sc.sizes, sc.strides[1]);
  strides_over(mask, sc.sizes, sc.ndim, sc.strides[0]);
  sc.mask = mask->_data;
  sc.mask_dtype = mask->_dtype;
  sc.src = a->_data;
  sc.dtype = a->_dtype;
  make_ctx c = {a->_device_index, a->_dtype, -1, "masked_select", NULL, MT_OK};
  int64_t n = 0;
  mt_status s = run_scan(&sc, a, &n, make_result, &c, "masked_select", 1);
  if (s) {
    if (c.r) mt_tensor_release(c.r);
    return c.status ? c.status : s;
  }
  *result = c.r;
  return MT_OK;
}

mt_status mt_gpu_masked_scatter(mt_tensor *t, const mt_tensor *mask, const mt_tensor *src) {
  mt_gpu_scan sc;
  memset(&sc, 0, sizeof sc);
  sc.kind = MT_GPU_SCAN_SCATTER;
  sc.ndim = dims_of(t, sc.sizes, sc.strides[1]);
  strides_over(mask, sc.sizes, sc.ndim, sc.strides[0]);
  sc.mask = mask->_data;
  sc.mask_dtype = mask->_dtype;
  sc.out = t->_data;
  sc.dtype = t->_dtype;
  /* the source is read in order: contiguous */
  mt_tensor *sc_src = NULL;
  mt_status s = MT_OK;
  if (!(src->_flags & MT_TENSOR_CONTIGUOUS)) {
    s = mt_gpu_new(src->_device_index, src->_sizes, src->_ndim, src->_dtype, "masked_scatter_", &sc_src);
    if (s == MT_OK) s = mt_gpu_copy(sc_src, src);
    if (s) {
      if (sc_src) mt_tensor_release(sc_src);
      return s;
    }
    src = sc_src;
  }
  sc.src = src->_data;
  /* count first: the source must have enough elements */
  int64_t n = 0;
  mt_gpu_scan count = sc;
  count.kind = MT_GPU_SCAN_SELECT;
  s = run_scan(&count, t, &n, NULL, NULL, "masked_scatter_", 0);
  if (s == MT_OK && src->_numel < n)
    s = mt_error(MT_ESHAPE, "masked_scatter_: number of elements of source (%lld) < number of ones in mask (%lld)",
                 (long long)src->_numel, (long long)n);
  if (s == MT_OK && n > 0) s = run_scan(&sc, t, &n, NULL, NULL, "masked_scatter_", 1);
  if (sc_src) mt_tensor_release(sc_src);
  return s;
}

mt_status mt_gpu_nonzero(const mt_tensor *a, int64_t base, mt_tensor **result) {
  mt_gpu_scan sc;
  memset(&sc, 0, sizeof sc);
  sc.kind = MT_GPU_SCAN_NONZERO;
  int64_t st[MT_MAX_DIMS];
  sc.ndim = dims_of(a, sc.sizes, st);
  memcpy(sc.strides[0], st, sizeof st);
  sc.mask = a->_data;
  sc.mask_dtype = a->_dtype;
  sc.dtype = MT_INT64;
  sc.base = base;
  sc.ncols = a->_ndim;
  make_ctx c = {a->_device_index, MT_INT64, a->_ndim, "nonzero", NULL, MT_OK};
  if (a->_ndim == 0) sc.ndim = 1; /* a scalar walks as one element; its rows have no columns */
  int64_t n = 0;
  mt_status s = run_scan(&sc, a, &n, make_result, &c, "nonzero", 1);
  if (s) {
    if (c.r) mt_tensor_release(c.r);
    return c.status ? c.status : s;
  }
  *result = c.r;
  return MT_OK;
}

/* ---------------------------------------------------------------- advanced indexing */
static mt_status advanced(mt_tensor *w, int n, mt_tensor *const *indices, const int *raw, mt_tensor *contig, int kind,
                          int64_t base, const char *op, int opnum) {
  mt_gpu_advanced a;
  memset(&a, 0, sizeof a);
  mt_tensor *conv[MT_MAX_DIMS] = {0};
  mt_status s = MT_OK;
  a.k = n;
  a.P = n ? indices[0]->_numel : 1;
  for (int i = 0; i < n && s == MT_OK; i++) { /* each index as contiguous int64 */
    const mt_tensor *ix = indices[i];
    s = mt_gpu_new(w->_device_index, ix->_sizes, ix->_ndim, MT_INT64, op, &conv[i]);
    if (s == MT_OK) s = mt_gpu_copy(conv[i], ix);
    if (s == MT_OK) {
      a.idx[i] = (const int64_t *)conv[i]->_data;
      a.raw[i] = raw[i];
      a.wsizes[i] = w->_sizes[i];
      a.wstrides[i] = w->_strides[i];
    }
  }
  if (s == MT_OK) {
    a.tnd = w->_ndim - n;
    a.B = 1;
    for (int i = 0; i < a.tnd; i++) {
      a.tsizes[i] = w->_sizes[n + i];
      a.tstrides[i] = w->_strides[n + i];
      a.B *= a.tsizes[i];
    }
    a.w = w->_data;
    a.contig = contig->_data;
    a.dtype = w->_dtype;
    a.kind = kind;
    a.base = base;
    a.op = opnum;
    a.fault = mt_gpu_fault_of(w->_device_index);
    void *st = mt_gpu_stream_of(w);
    if (mt_gpu_k->advanced(&a, st)) s = no_kernel(op, w->_dtype);
  }
  for (int i = 0; i < n; i++)
    if (conv[i]) mt_tensor_release(conv[i]);
  return s;
}

mt_status mt_gpu_index(mt_tensor *out, const mt_tensor *w, int n, mt_tensor *const *indices, const int *raw,
                       int64_t base) {
  return advanced((mt_tensor *)w, n, indices, raw, out, K_GET, base, "index", MT_OP_INDEX);
}

mt_status mt_gpu_index_put(mt_tensor *w, int n, mt_tensor *const *indices, const int *raw, const mt_tensor *values,
                           int accumulate, int64_t base) {
  mt_tensor *v = (mt_tensor *)values, *vc = NULL;
  if (!(values->_flags & MT_TENSOR_CONTIGUOUS)) {
    MT_TRY(mt_gpu_new(w->_device_index, values->_sizes, values->_ndim, values->_dtype, "index_put_", &vc));
    mt_status s = mt_gpu_copy(vc, values);
    if (s) {
      mt_tensor_release(vc);
      return s;
    }
    v = vc;
  }
  mt_status s = advanced(w, n, indices, raw, v, accumulate ? K_ADD : K_PUT, base, "index_put_", MT_OP_INDEX_PUT);
  if (vc) mt_tensor_release(vc);
  return s;
}

/* ---------------------------------------------------------------- rearranging gathers */
mt_status mt_gpu_rearrange_slot(mt_tensor *out, const mt_tensor *src, int64_t *const *maps) {
  mt_gpu_rearrange r;
  memset(&r, 0, sizeof r);
  r.numel = out->_numel;
  r.ndim = out->_ndim;
  r.dtype = out->_dtype;
  int64_t total = 0;
  for (int d = 0; d < out->_ndim; d++) {
    r.sizes[d] = out->_sizes[d];
    r.map_at[d] = total;
    total += out->_sizes[d];
  }
  if (r.numel == 0) return MT_OK;
  /* the maps to the device: one block of int64 */
  int64_t *host = malloc((size_t)(total ? total : 1) * 8);
  if (!host) return mt_error(MT_ENOMEM, "rearrange: out of memory");
  for (int d = 0; d < out->_ndim; d++) memcpy(host + r.map_at[d], maps[d], (size_t)out->_sizes[d] * 8);
  int64_t *dev = scratch(out, (size_t)total * 8, "rearrange");
  if (!dev) {
    free(host);
    return MT_ENOMEM;
  }
  void *s = mt_gpu_stream_of(out);
  mt_status st = MT_OK;
  int code = mt_gpu_rt->memcpy_async(dev, host, (size_t)total * 8, MT_GPU_H2D, s);
  if (code) st = mt_gpu_error(code, "rearrange");
  r.maps = dev;
  r.out = out->_data;
  r.src = src->_data;
  if (st == MT_OK && mt_gpu_k->rearrange(&r, s)) st = no_kernel("rearrange", out->_dtype);
  mt_gpu_free(dev);
  free(host);
  return st;
}

/* ---------------------------------------------------------------- one_hot, bincount: values read first */
/* the smallest and largest value of a 1-D or any tensor (as int64), read back */
static mt_status min_max(const mt_tensor *a, int64_t *lo, int64_t *hi, const char *op) {
  int64_t one = 1;
  mt_tensor *r[2] = {NULL, NULL};
  bool mask[MT_MAX_DIMS];
  for (int d = 0; d < MT_MAX_DIMS; d++) mask[d] = true;
  mt_status s = MT_OK;
  for (int k = 0; k < 2 && s == MT_OK; k++) {
    s = mt_gpu_new(a->_device_index, &one, 0, MT_INT64, op, &r[k]);
    if (s == MT_OK) s = mt_gpu_reduce_slot(k ? MT_OP_AMAX : MT_OP_AMIN, r[k], a, mask, 0, 0);
  }
  if (s == MT_OK) s = mt_gpu_read(a->_device_index, lo, r[0]->_data, 8, op);
  if (s == MT_OK) s = mt_gpu_read(a->_device_index, hi, r[1]->_data, 8, op);
  for (int k = 0; k < 2; k++)
    if (r[k]) mt_tensor_release(r[k]);
  return s;
}

mt_status mt_gpu_one_hot(const mt_tensor *index, int64_t num_classes, int64_t base, mt_tensor **result) {
  const char *op = "one_hot";
  int64_t n = index->_numel, lo = INT64_MAX, hi = INT64_MIN;
  if (n > 0) MT_TRY(min_max(index, &lo, &hi, op));
  if (num_classes == -1) {
    if (n == 0) return mt_error(MT_EINVAL, "%s: can not infer the total number of classes from an empty tensor", op);
    num_classes = hi - base + 1;
  }
  if (n > 0 && (lo < base || hi - base >= num_classes))
    return mt_error(MT_ERANGE, "%s: class value %lld is out of range for num_classes %lld (class values are %lld to %lld)",
                    op, (long long)(lo < base ? lo : hi), (long long)num_classes, (long long)base,
                    (long long)(num_classes - 1 + base));
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, index->_sizes, sizeof(int64_t) * (size_t)index->_ndim);
  sizes[index->_ndim] = num_classes;
  mt_tensor *r = NULL, *ic = NULL;
  MT_TRY(mt_gpu_new(index->_device_index, sizes, index->_ndim + 1, MT_INT64, op, &r));
  mt_status s = mt_gpu_fill(r, 0);
  if (s == MT_OK) s = mt_gpu_new(index->_device_index, index->_sizes, index->_ndim, MT_INT64, op, &ic);
  if (s == MT_OK) s = mt_gpu_copy(ic, index);
  if (s == MT_OK && mt_gpu_k->one_hot((int64_t *)r->_data, (const int64_t *)ic->_data, n, num_classes, base,
                                      mt_gpu_stream_of(r)))
    s = no_kernel(op, index->_dtype);
  if (ic) mt_tensor_release(ic);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  *result = r;
  return MT_OK;
}

mt_status mt_gpu_bincount_slot(const mt_tensor *a, const mt_tensor *weights, int64_t minlength, mt_tensor **result) {
  const char *op = "bincount";
  int64_t n = a->_sizes[0], lo = 0, hi = -1;
  if (n > 0) MT_TRY(min_max(a, &lo, &hi, op));
  if (n > 0 && lo < 0)
    return mt_error(MT_EINVAL, "bincount: only 1-d non-negative integral inputs are supported, got the value %lld",
                    (long long)lo);
  int64_t len = hi + 1 > minlength ? hi + 1 : minlength;
  int odt = !weights ? MT_INT64 : weights->_dtype == MT_FLOAT32 ? MT_FLOAT32 : MT_FLOAT64;
  mt_tensor *r = NULL;
  MT_TRY(mt_gpu_new(a->_device_index, &len, 1, odt, op, &r));
  mt_status s = mt_gpu_fill(r, 0);
  mt_gpu_bincount c = {a->_data,    weights ? weights->_data : NULL, a->_strides[0], weights ? weights->_strides[0] : 0,
                       n,           a->_dtype,                        weights ? weights->_dtype : MT_FLOAT32,
                       odt,         0,                                r->_data};
  if (s == MT_OK && mt_gpu_k->bincount(&c, mt_gpu_stream_of(r))) s = no_kernel(op, a->_dtype);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  *result = r;
  return MT_OK;
}

/* ---------------------------------------------------------------- sort, unique, searchsorted */
mt_status mt_gpu_sort_slot(mt_tensor *values, mt_tensor *indices, const mt_tensor *a, int dim, int descending,
                      int64_t base) {
  int nd = a->_ndim;
  mt_gpu_sort s;
  memset(&s, 0, sizeof s);
  s.n = nd ? a->_sizes[dim] : 1;
  s.k = nd ? values->_sizes[dim] : 1;
  s.inner = 1;
  int64_t outer = 1;
  for (int i = 0; i < nd; i++) {
    if (i < dim) outer *= a->_sizes[i];
    if (i > dim) s.inner *= a->_sizes[i];
  }
  s.lines = outer * s.inner;
  if (s.lines == 0 || s.n == 0 || s.k == 0) return MT_OK;
  const char *op = s.k == s.n ? "sort" : "topk";
  /* the input contiguous: line (o, i) at (o * n) * inner + i, element j at j * inner */
  mt_tensor *src = (mt_tensor *)a, *tmp = NULL;
  if (!(a->_flags & MT_TENSOR_CONTIGUOUS)) {
    MT_TRY(mt_gpu_new(a->_device_index, a->_sizes, a->_ndim, a->_dtype, op, &tmp));
    mt_status st = mt_gpu_copy(tmp, a);
    if (st) {
      mt_tensor_release(tmp);
      return st;
    }
    src = tmp;
  }
  s.in = src->_data;
  s.in_outer = s.n * s.inner;
  s.in_inner = 1;
  s.stride = s.inner;
  s.dtype = a->_dtype;
  s.desc = descending;
  s.values = values ? values->_data : NULL;
  s.indices = indices ? (int64_t *)indices->_data : NULL;
  s.base = base;
  size_t per = (size_t)(2 * s.n) * 8;
  s.keys = scratch(a, per * (size_t)s.lines, op);
  s.perm = s.keys ? scratch(a, per * (size_t)s.lines, op) : NULL;
  mt_status st = MT_OK;
  if (!s.keys || !s.perm) st = MT_ENOMEM;
  else if (mt_gpu_k->sort(&s, mt_gpu_stream_of(a))) st = no_kernel(op, a->_dtype);
  mt_gpu_free(s.keys);
  mt_gpu_free(s.perm);
  if (tmp) mt_tensor_release(tmp);
  return st;
}

mt_status mt_gpu_unique(const mt_tensor *a, int64_t base, mt_tensor **values, mt_tensor **inverse,
                        mt_tensor **counts) {
  const char *op = "unique";
  int64_t n = a->_numel;
  mt_tensor *src = NULL, *v = NULL, *inv = NULL, *cnt = NULL;
  mt_status st = mt_gpu_new(a->_device_index, &n, 1, a->_dtype, op, &src);
  if (st == MT_OK) st = mt_gpu_copy(src, a); /* a's values, flat and contiguous */
  mt_gpu_sort s;
  memset(&s, 0, sizeof s);
  s.lines = 1;
  s.n = n;
  s.k = 0;
  s.inner = 1;
  s.in_outer = n;
  s.in_inner = 1;
  s.stride = 1;
  s.dtype = a->_dtype;
  void *keys = NULL, *perm = NULL, *skeys = NULL, *sperm = NULL;
  if (st == MT_OK && n > 0) {
    keys = scratch(a, (size_t)(2 * n) * 8, op);
    perm = scratch(a, (size_t)(2 * n) * 8, op);
    skeys = scratch(a, (size_t)n * 8, op);
    sperm = scratch(a, (size_t)n * 8, op);
    if (!keys || !perm || !skeys || !sperm) st = MT_ENOMEM;
  }
  mt_gpu_scan sc;
  memset(&sc, 0, sizeof sc);
  int64_t nu = 0;
  if (st == MT_OK && n > 0) {
    s.in = src->_data;
    s.keys = keys;
    s.perm = perm;
    s.sorted_keys = skeys;
    s.sorted_perm = sperm;
    if (mt_gpu_k->sort(&s, mt_gpu_stream_of(a))) st = no_kernel(op, a->_dtype);
    sc.kind = MT_GPU_SCAN_UNIQUE;
    sc.ndim = 1;
    sc.sizes[0] = n;
    sc.keys = skeys;
    sc.keys_float = mt_is_float(a->_dtype);
    sc.perm = sperm;
    sc.src = src->_data;
    sc.dtype = a->_dtype;
    sc.base = base;
  }
  /* the count of unique values first (read back), then the results */
  if (st == MT_OK && n > 0) {
    mt_gpu_scan count = sc;
    st = run_scan(&count, a, &nu, NULL, NULL, op, 0);
  }
  if (st == MT_OK) st = mt_gpu_new(a->_device_index, &nu, 1, a->_dtype, op, &v);
  if (st == MT_OK && inverse) st = mt_gpu_new(a->_device_index, a->_sizes, a->_ndim, MT_INT64, op, &inv);
  if (st == MT_OK && counts) st = mt_gpu_new(a->_device_index, &nu, 1, MT_INT64, op, &cnt);
  if (st == MT_OK && cnt) st = mt_gpu_fill(cnt, 0);
  if (st == MT_OK && n > 0) {
    sc.out = v->_data;
    sc.inverse = inv ? (int64_t *)inv->_data : NULL;
    sc.counts = cnt ? (int64_t *)cnt->_data : NULL;
    int64_t again = 0;
    st = run_scan(&sc, a, &again, NULL, NULL, op, 1);
  }
  mt_gpu_free(keys);
  mt_gpu_free(perm);
  mt_gpu_free(skeys);
  mt_gpu_free(sperm);
  if (src) mt_tensor_release(src);
  if (st) {
    if (v) mt_tensor_release(v);
    if (inv) mt_tensor_release(inv);
    if (cnt) mt_tensor_release(cnt);
    return st;
  }
  mt_give(v, values);
  if (inverse) *inverse = inv;
  if (counts) *counts = cnt;
  return MT_OK;
}

mt_status mt_gpu_searchsorted(mt_tensor *out, const mt_tensor *sorted, const mt_tensor *values, int right,
                              int64_t base) {
  const char *op = "searchsorted";
  mt_tensor *bs = NULL, *vs = NULL;
  mt_status st = MT_OK;
  const mt_tensor *b = sorted, *v = values;
  if (!(sorted->_flags & MT_TENSOR_CONTIGUOUS)) {
    st = mt_gpu_new(sorted->_device_index, sorted->_sizes, sorted->_ndim, sorted->_dtype, op, &bs);
    if (st == MT_OK) st = mt_gpu_copy(bs, sorted);
    b = bs;
  }
  if (st == MT_OK && !(values->_flags & MT_TENSOR_CONTIGUOUS)) {
    st = mt_gpu_new(values->_device_index, values->_sizes, values->_ndim, values->_dtype, op, &vs);
    if (st == MT_OK) st = mt_gpu_copy(vs, values);
    v = vs;
  }
  if (st == MT_OK) {
    int nb = sorted->_ndim;
    mt_gpu_search s;
    memset(&s, 0, sizeof s);
    s.sorted = b->_data;
    s.values = v->_data;
    s.sorted_dtype = sorted->_dtype;
    s.values_dtype = values->_dtype;
    s.right = right;
    s.ints = !mt_is_float(sorted->_dtype) && !mt_is_float(values->_dtype);
    s.m = sorted->_sizes[nb - 1];
    s.lines = 1;
    for (int i = 0; i < nb - 1; i++) s.lines *= sorted->_sizes[i];
    s.per = nb == 1 ? values->_numel : s.lines ? values->_numel / s.lines : 0;
    if (nb == 1) s.lines = 1;
    s.base = base;
    s.out = (int64_t *)out->_data;
    if (mt_gpu_k->searchsorted(&s, mt_gpu_stream_of(out))) st = no_kernel(op, sorted->_dtype);
  }
  if (bs) mt_tensor_release(bs);
  if (vs) mt_tensor_release(vs);
  return st;
}
