/* sort.c -- ordering and rearranging: sort, topk, unique, searchsorted, bincount, and the copies
 * that move elements around (flip, roll, repeat, repeat_interleave).
 *
 * Comparisons run on keys: integers and bool as int64 (exact), floating types as double (exact
 * for every float type we hold). NaN sorts as the largest value, as PyTorch does. Sorting is a
 * stable merge sort of (key, position) pairs, so `stable` is always honoured.
 *
 * The rearranging ops share one kernel: the result is contiguous and, per result dimension d,
 * a table maps each result index along d to an element offset in the source; an element's
 * source is the sum of its dims' table entries. */
#include "../grad/grad.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- helpers */

/* A contiguous version of `a`: a new reference to `a` itself when already contiguous. */
static mt_status contig(mt_tensor *a, const char *op, mt_tensor **out) {
  if (a->_flags & MT_TENSOR_CONTIGUOUS) {
    *out = mt_tensor_retain(a);
    return MT_OK;
  }
  mt_tensor *r;
  MT_TRY(mt_new(a->_sizes, a->_ndim, a->_dtype, op, &r));
  mt_status s = mt_copy_(r, a);
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  *out = r;
  return MT_OK;
}

static void release2(mt_tensor *a, mt_tensor *b) {
  if (a) mt_tensor_release(a);
  if (b) mt_tensor_release(b);
}

/* Load n elements (stride `st` bytes apart) of dtype dt as int64 / double keys. */
static void load_int(const char *p, int64_t st, int64_t n, int dt, int64_t *out) {
  switch (dt) {
#define LOAD_I(DT, T, L, S)                                                  \
  case DT:                                                                   \
    for (int64_t i = 0; i < n; i++) {                                        \
      T x = *(const T *)(p + i * st);                                        \
      out[i] = (int64_t)(L);                                                 \
    }                                                                        \
    break;
    MT_FOREACH_DTYPE(LOAD_I)
#undef LOAD_I
    default: break;
  }
}
static void load_dbl(const char *p, int64_t st, int64_t n, int dt, double *out) {
  switch (dt) {
#define LOAD_D(DT, T, L, S)                                                  \
  case DT:                                                                   \
    for (int64_t i = 0; i < n; i++) {                                        \
      T x = *(const T *)(p + i * st);                                        \
      out[i] = (double)(L);                                                  \
    }                                                                        \
    break;
    MT_FOREACH_DTYPE(LOAD_D)
#undef LOAD_D
    default: break;
  }
}

/* Copy one element of `item` bytes. */
static inline void copy_elem(char *d, const char *s, size_t item) {
  switch (item) {
    case 1: *(uint8_t *)d = *(const uint8_t *)s; break;
    case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
    case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
    case 8: *(uint64_t *)d = *(const uint64_t *)s; break;
    default: memcpy(d, s, item);
  }
}

/* ---------------------------------------------------------------- stable merge sort of pairs */
typedef struct { int64_t k; int64_t i; } pair_i;
typedef struct { double k; int64_t i; } pair_d;

/* BEFORE(x, y): x goes strictly before y. Ties keep their order (stable). */
#define I_ASC(x, y) ((x) < (y))
#define I_DESC(x, y) ((x) > (y))
#define D_ASC(x, y) ((x) < (y) || ((y) != (y) && (x) == (x)))
#define D_DESC(x, y) ((x) > (y) || ((x) != (x) && (y) == (y)))

#define SORT_RUN 16
#define DEF_MSORT(NAME, P, BEFORE)                                                   \
  static void NAME(P *a, P *tmp, int64_t n) {                                        \
    for (int64_t lo = 0; lo < n; lo += SORT_RUN) {                                   \
      int64_t hi = lo + SORT_RUN < n ? lo + SORT_RUN : n;                            \
      for (int64_t i = lo + 1; i < hi; i++) {                                        \
        P x = a[i];                                                                  \
        int64_t j = i;                                                               \
        while (j > lo && BEFORE(x.k, a[j - 1].k)) {                                  \
          a[j] = a[j - 1];                                                           \
          j--;                                                                       \
        }                                                                            \
        a[j] = x;                                                                    \
      }                                                                              \
    }                                                                                \
    P *src = a, *dst = tmp;                                                          \
    for (int64_t w = SORT_RUN; w < n; w *= 2) {                                      \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                                    \
        int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n; \
        int64_t l = lo, r = mid, o = lo;                                             \
        while (l < mid && r < hi) {                                                  \
          if (BEFORE(src[r].k, src[l].k)) dst[o++] = src[r++];                       \
          else dst[o++] = src[l++];                                                  \
        }                                                                            \
        while (l < mid) dst[o++] = src[l++];                                         \
        while (r < hi) dst[o++] = src[r++];                                          \
      }                                                                              \
      P *t = src;                                                                    \
      src = dst;                                                                     \
      dst = t;                                                                       \
    }                                                                                \
    if (src != a) memcpy(a, src, (size_t)n * sizeof(P));                             \
  }
DEF_MSORT(msort_i_asc, pair_i, I_ASC)
DEF_MSORT(msort_i_desc, pair_i, I_DESC)
DEF_MSORT(msort_d_asc, pair_d, D_ASC)
DEF_MSORT(msort_d_desc, pair_d, D_DESC)

/* Sort the n elements at p (stride st bytes, dtype dt) into positions perm[0..n) (0-based).
 * `work` holds 2 * n pairs. */
static void sort_line(const char *p, int64_t st, int64_t n, int dt, int desc, void *work, int64_t *perm) {
  if (mt_is_float(dt)) {
    pair_d *a = work, *tmp = a + n;
    double *keys = (double *)tmp; /* tmp is free until the sort runs */
    load_dbl(p, st, n, dt, keys);
    for (int64_t i = 0; i < n; i++) a[i].k = keys[i], a[i].i = i;
    if (desc) msort_d_desc(a, tmp, n);
    else msort_d_asc(a, tmp, n);
    for (int64_t i = 0; i < n; i++) perm[i] = a[i].i;
  } else {
    pair_i *a = work, *tmp = a + n;
    int64_t *keys = (int64_t *)tmp;
    load_int(p, st, n, dt, keys);
    for (int64_t i = 0; i < n; i++) a[i].k = keys[i], a[i].i = i;
    if (desc) msort_i_desc(a, tmp, n);
    else msort_i_asc(a, tmp, n);
    for (int64_t i = 0; i < n; i++) perm[i] = a[i].i;
  }
}

/* ---------------------------------------------------------------- sort / topk */
typedef struct {
  const char *src;    /* contiguous input */
  char *vals;         /* contiguous values result */
  int64_t *idx;       /* contiguous indices result */
  int64_t n, inner;   /* line length, distance between line elements */
  int64_t k;          /* elements kept per line */
  int dtype, desc;
  int64_t base;
  int failed;
} sort_ctx;

static void sort_range(void *vctx, int64_t b, int64_t e) {
  sort_ctx *c = vctx;
  int64_t n = c->n, inner = c->inner, k = c->k;
  size_t item = mt_itemsize(c->dtype);
  void *work = malloc((size_t)(2 * n) * sizeof(pair_d) + (size_t)n * sizeof(int64_t) + 1);
  if (!work) {
    __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  int64_t *perm = (int64_t *)((char *)work + (size_t)(2 * n) * sizeof(pair_d));
  for (int64_t line = b; line < e; line++) {
    int64_t o = line / inner, in = line % inner;
    const char *s = c->src + (size_t)(o * n * inner + in) * item;
    sort_line(s, (int64_t)item * inner, n, c->dtype, c->desc, work, perm);
    int64_t ob = o * k * inner + in;
    for (int64_t j = 0; j < k; j++) {
      int64_t at = ob + j * inner;
      copy_elem(c->vals + (size_t)at * item, s + (size_t)(perm[j] * inner) * item, item);
      c->idx[at] = perm[j] + c->base;
    }
  }
  free(work);
}

/* Sort (or keep the first k of the sorted) lines of `a` along `dim`. */
static mt_status sort_impl(mt_tensor *a, int d, int desc, int64_t k, int64_t base, const char *op,
                           mt_tensor **values, mt_tensor **indices) {
  int64_t sizes[MT_MAX_DIMS];
  int nd = a->_ndim;
  int64_t n = nd ? a->_sizes[d] : 1, inner = 1, outer = 1;
  for (int i = 0; i < nd; i++) {
    sizes[i] = a->_sizes[i];
    if (i < d) outer *= a->_sizes[i];
    if (i > d) inner *= a->_sizes[i];
  }
  if (nd) sizes[d] = k;
  mt_tensor *src = NULL, *v = NULL, *ix = NULL;
  mt_status s;
  if ((s = contig(a, op, &src)) != MT_OK) return s;
  if ((s = mt_new(sizes, nd, a->_dtype, op, &v)) != MT_OK) goto fail;
  if ((s = mt_new(sizes, nd, MT_INT64, op, &ix)) != MT_OK) goto fail;
  int64_t lines = outer * inner;
  if (nd == 0) k = n = 1; /* a scalar is one line of one element, whatever k (0 or 1) asked */
  if (lines > 0 && n > 0 && k > 0) {
    sort_ctx c = {src->_data, v->_data, (int64_t *)ix->_data, n, inner, k, a->_dtype, desc, base, 0};
    int64_t grain = MT_GRAIN / (n * 4 + 1);
    mt_parallel_for(lines, grain < 1 ? 1 : grain, sort_range, &c);
    if (c.failed) {
      s = mt_error(MT_ENOMEM, "%s: out of memory for the sort buffers (%lld elements per line)", op, (long long)n);
      goto fail;
    }
  }
  mt_tensor_release(src);
  mt_give(v, values);
  mt_give(ix, indices);
  return MT_OK;
fail:
  release2(src, v);
  if (ix) mt_tensor_release(ix);
  return s;
}

static mt_status pub_sort(mt_tensor *a, int dim, int descending, int stable, int64_t index_base, mt_tensor **values,
                  mt_tensor **indices) {
  (void)stable; /* always stable */
  MT_TRY(mt_check_tensor(a, "sort", "input"));
  int d;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, "sort", &d));
  int64_t n = a->_ndim ? a->_sizes[d] : 1;
  return sort_impl(a, d, descending, n, index_base, "sort", values, indices);
}

static mt_status pub_topk(mt_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base, mt_tensor **values,
                  mt_tensor **indices) {
  (void)sorted; /* the kept elements always come out in sorted order, which `sorted=false` allows */
  MT_TRY(mt_check_tensor(a, "topk", "input"));
  int d;
  MT_TRY(mt_wrap_dim(dim, a->_ndim, "topk", &d));
  if (a->_dtype == MT_BOOL) return mt_error(MT_EDTYPE, "topk: not implemented for bool tensors");
  int64_t n = a->_ndim ? a->_sizes[d] : 1;
  if (k < 0 || k > n)
    return mt_error(MT_ERANGE, "topk: selected index k out of range (k = %lld, dimension %lld has size %lld)",
                    (long long)k, MT_D(d), (long long)n);
  return sort_impl(a, d, largest, k, index_base, "topk", values, indices);
}

/* ---------------------------------------------------------------- unique */
mt_status mt_unique(mt_tensor *a, int sorted, int return_inverse, int return_counts, int64_t index_base,
                    mt_tensor **values, mt_tensor **inverse, mt_tensor **counts) {
  (void)sorted; /* results always come out sorted, which `sorted=false` allows */
  MT_TRY(mt_check_tensor(a, "unique", "input"));
  mt_tensor *src = NULL, *v = NULL, *inv = NULL, *cnt = NULL;
  int64_t n = a->_numel;
  size_t item = mt_itemsize(a->_dtype);
  void *work = NULL;
  mt_status s;
  if ((s = contig(a, "unique", &src)) != MT_OK) return s;
  work = malloc((size_t)(2 * n) * sizeof(pair_d) + (size_t)n * sizeof(int64_t) + 1);
  if (!work) {
    s = mt_error(MT_ENOMEM, "unique: out of memory for %lld elements", (long long)n);
    goto fail;
  }
  int64_t *perm = (int64_t *)((char *)work + (size_t)(2 * n) * sizeof(pair_d));
  sort_line(src->_data, (int64_t)item, n, a->_dtype, 0, work, perm);
  /* the sorted keys are still in work's pairs: runs of equal keys are the unique values
   * (NaN != NaN, so every NaN is its own value) */
  bool fl = mt_is_float(a->_dtype);
  int64_t nu = 0;
  for (int64_t i = 0; i < n; i++) {
    bool same = i > 0 && (fl ? ((pair_d *)work)[i].k == ((pair_d *)work)[i - 1].k
                             : ((pair_i *)work)[i].k == ((pair_i *)work)[i - 1].k);
    if (!same) nu++;
  }
  if ((s = mt_new(&nu, 1, a->_dtype, "unique", &v)) != MT_OK) goto fail;
  if (return_inverse && (s = mt_new(a->_sizes, a->_ndim, MT_INT64, "unique", &inv)) != MT_OK) goto fail;
  if (return_counts && (s = mt_new(&nu, 1, MT_INT64, "unique", &cnt)) != MT_OK) goto fail;
  int64_t u = -1;
  for (int64_t i = 0; i < n; i++) {
    bool same = i > 0 && (fl ? ((pair_d *)work)[i].k == ((pair_d *)work)[i - 1].k
                             : ((pair_i *)work)[i].k == ((pair_i *)work)[i - 1].k);
    if (!same) {
      u++;
      copy_elem(v->_data + (size_t)u * item, src->_data + (size_t)perm[i] * item, item);
      if (cnt) ((int64_t *)cnt->_data)[u] = 0;
    }
    if (cnt) ((int64_t *)cnt->_data)[u]++;
    if (inv) ((int64_t *)inv->_data)[perm[i]] = u + index_base;
  }
  free(work);
  mt_tensor_release(src);
  mt_give(v, values);
  if (inverse) *inverse = NULL;
  if (counts) *counts = NULL;
  if (inv) mt_give(inv, inverse);
  if (cnt) mt_give(cnt, counts);
  return MT_OK;
fail:
  free(work);
  release2(src, v);
  release2(inv, cnt);
  return s;
}

/* ---------------------------------------------------------------- searchsorted */
mt_status mt_searchsorted(mt_tensor *sorted, mt_tensor *values, int right, int64_t index_base, mt_tensor **result) {
  MT_TRY(mt_check_tensor(sorted, "searchsorted", "sorted_sequence"));
  MT_TRY(mt_check_tensor(values, "searchsorted", "input"));
  int nb = sorted->_ndim, nv = values->_ndim;
  if (nb == 0)
    return mt_error(MT_EINVAL, "searchsorted: boundaries tensor should have positive dimension, but got 0 dimension");
  if (nb > 1) {
    bool ok = nb == nv;
    for (int i = 0; ok && i < nb - 1; i++) ok = sorted->_sizes[i] == values->_sizes[i];
    if (!ok)
      return mt_error(MT_ESHAPE,
                      "searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
                      "tensor and input value tensor must match, but we got boundaries tensor %s and input value "
                      "tensor %s",
                      MT_SHAPE(sorted), MT_SHAPE(values));
  }
  mt_tensor *bs = NULL, *vs = NULL, *r = NULL;
  void *keys = NULL, *vkeys = NULL;
  mt_status s;
  if ((s = contig(sorted, "searchsorted", &bs)) != MT_OK) return s;
  if ((s = contig(values, "searchsorted", &vs)) != MT_OK) goto fail;
  if ((s = mt_new(values->_sizes, nv, MT_INT64, "searchsorted", &r)) != MT_OK) goto fail;
  int64_t m = sorted->_sizes[nb - 1];                          /* boundaries per line */
  int64_t lines = 1; /* lines of boundaries: the product of the leading dims */
  for (int i = 0; i < nb - 1; i++) lines *= sorted->_sizes[i];
  int64_t per = nb == 1 ? values->_numel : lines ? values->_numel / lines : 0; /* values per line */
  bool ints = !mt_is_float(sorted->_dtype) && !mt_is_float(values->_dtype);
  keys = malloc((size_t)m * 8 + 8);
  vkeys = malloc((size_t)per * 8 + 8);
  if (!keys || !vkeys) {
    s = mt_error(MT_ENOMEM, "searchsorted: out of memory");
    goto fail;
  }
  size_t bi = mt_itemsize(sorted->_dtype), vi = mt_itemsize(values->_dtype);
  int64_t *out = (int64_t *)r->_data;
  for (int64_t L = 0; L < lines; L++) {
    const char *bp = bs->_data + (size_t)(L * m) * bi, *vp = vs->_data + (size_t)(L * per) * vi;
    if (ints) {
      int64_t *bk = keys, *vk = vkeys;
      load_int(bp, (int64_t)bi, m, sorted->_dtype, bk);
      load_int(vp, (int64_t)vi, per, values->_dtype, vk);
      for (int64_t j = 0; j < per; j++) {
        int64_t lo = 0, hi = m, x = vk[j];
        while (lo < hi) {
          int64_t mid = lo + (hi - lo) / 2;
          if (right ? !(bk[mid] > x) : !(bk[mid] >= x)) lo = mid + 1;
          else hi = mid;
        }
        out[L * per + j] = lo + index_base;
      }
    } else {
      double *bk = keys, *vk = vkeys;
      load_dbl(bp, (int64_t)bi, m, sorted->_dtype, bk);
      load_dbl(vp, (int64_t)vi, per, values->_dtype, vk);
      for (int64_t j = 0; j < per; j++) {
        int64_t lo = 0, hi = m;
        double x = vk[j];
        while (lo < hi) {
          int64_t mid = lo + (hi - lo) / 2;
          if (right ? !(bk[mid] > x) : !(bk[mid] >= x)) lo = mid + 1;
          else hi = mid;
        }
        out[L * per + j] = lo + index_base;
      }
    }
  }
  free(keys);
  free(vkeys);
  release2(bs, vs);
  return mt_give(r, result);
fail:
  free(keys);
  free(vkeys);
  release2(bs, vs);
  if (r) mt_tensor_release(r);
  return s;
}

/* ---------------------------------------------------------------- bincount */
mt_status mt_bincount(mt_tensor *a, mt_tensor *weights, int64_t minlength, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "bincount", "input"));
  if (weights) MT_TRY(mt_check_tensor(weights, "bincount", "weights"));
  if (a->_ndim != 1 || mt_is_float(a->_dtype) || a->_dtype == MT_BOOL)
    return mt_error(MT_EINVAL, "bincount: only 1-d non-negative integral inputs are supported, got a %dD %s tensor",
                    a->_ndim, mt_dtype_name(a->_dtype));
  if (weights && (weights->_ndim != 1 || weights->_sizes[0] != a->_sizes[0]))
    return mt_error(MT_ESHAPE, "bincount: weights should be 1-d and have the same length as input (input %s, weights %s)",
                    MT_SHAPE(a), MT_SHAPE(weights));
  if (minlength < 0) return mt_error(MT_EINVAL, "bincount: minlength should be >= 0, got %lld", (long long)minlength);
  int64_t n = a->_sizes[0];
  int64_t *x = malloc((size_t)n * 8 + 8);
  double *w = NULL;
  if (!x) return mt_error(MT_ENOMEM, "bincount: out of memory");
  load_int(a->_data, a->_strides[0] * (int64_t)mt_itemsize(a->_dtype), n, a->_dtype, x);
  int64_t mx = -1;
  for (int64_t i = 0; i < n; i++) {
    if (x[i] < 0) {
      long long bad = (long long)x[i];
      free(x);
      return mt_error(MT_EINVAL, "bincount: only 1-d non-negative integral inputs are supported, got the value %lld",
                      bad);
    }
    if (x[i] > mx) mx = x[i];
  }
  int64_t len = mx + 1 > minlength ? mx + 1 : minlength;
  int odt = !weights ? MT_INT64 : weights->_dtype == MT_FLOAT32 ? MT_FLOAT32 : MT_FLOAT64;
  mt_tensor *r = NULL;
  mt_status s = mt_new(&len, 1, odt, "bincount", &r);
  if (s != MT_OK) {
    free(x);
    return s;
  }
  if (weights) {
    w = malloc((size_t)n * 8 + 8);
    if (!w) {
      free(x);
      mt_tensor_release(r);
      return mt_error(MT_ENOMEM, "bincount: out of memory");
    }
    load_dbl(weights->_data, weights->_strides[0] * (int64_t)mt_itemsize(weights->_dtype), n, weights->_dtype, w);
  }
  if (odt == MT_INT64) {
    int64_t *o = (int64_t *)r->_data;
    memset(o, 0, (size_t)len * 8);
    for (int64_t i = 0; i < n; i++) o[x[i]]++;
  } else if (odt == MT_FLOAT32) {
    float *o = (float *)r->_data;
    for (int64_t i = 0; i < len; i++) o[i] = 0.0f;
    for (int64_t i = 0; i < n; i++) o[x[i]] += (float)w[i];
  } else {
    double *o = (double *)r->_data;
    for (int64_t i = 0; i < len; i++) o[i] = 0.0;
    for (int64_t i = 0; i < n; i++) o[x[i]] += w[i];
  }
  free(x);
  free(w);
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- rearranging copies */
typedef struct {
  const char *src;
  char *dst;
  size_t item;
  int ndim;
  const int64_t *sizes;
  int64_t *const *maps; /* maps[d][i]: element offset in src for index i along result dim d */
} gather_ctx;

static void gather_range(void *vctx, int64_t b, int64_t e) {
  const gather_ctx *c = vctx;
  int nd = c->ndim;
  size_t item = c->item;
  int64_t last = c->sizes[nd - 1];
  const int64_t *lm = c->maps[nd - 1];
  for (int64_t row = b; row < e; row++) {
    int64_t off = 0, r = row;
    for (int d = nd - 2; d >= 0; d--) {
      off += c->maps[d][r % c->sizes[d]];
      r /= c->sizes[d];
    }
    const char *s = c->src + off * (int64_t)item;
    char *d = c->dst + (size_t)(row * last) * item;
    switch (item) {
#define G(T) for (int64_t j = 0; j < last; j++) ((T *)d)[j] = *(const T *)(s + lm[j] * (int64_t)sizeof(T)); break;
      case 1: G(uint8_t)
      case 2: G(uint16_t)
      case 4: G(uint32_t)
      case 8: G(uint64_t)
#undef G
      default:
        for (int64_t j = 0; j < last; j++) memcpy(d + j * item, s + lm[j] * (int64_t)item, item);
    }
  }
}

/* Fill `out` (contiguous, numel = prod(sizes)) from src_data through per-dim tables. */
static void gather_run(const char *src_data, mt_tensor *out, const int64_t *sizes, int nd, int64_t *const *maps) {
  size_t item = mt_itemsize(out->_dtype);
  if (out->_numel == 0) return;
  if (nd == 0) {
    copy_elem(out->_data, src_data, item);
    return;
  }
  gather_ctx c = {src_data, out->_data, item, nd, sizes, maps};
  int64_t rows = out->_numel / sizes[nd - 1];
  int64_t grain = MT_GRAIN / sizes[nd - 1];
  mt_parallel_for(rows, grain < 1 ? 1 : grain, gather_range, &c);
}

/* Tables for `nd` result dims of the given sizes, in one block (free maps[0]'s block). */
static mt_status alloc_maps(const int64_t *sizes, int nd, const char *op, int64_t **maps, void **block) {
  int64_t total = 0;
  for (int d = 0; d < nd; d++) total += sizes[d];
  int64_t *p = malloc((size_t)total * sizeof(int64_t) + 8);
  if (!p) return mt_error(MT_ENOMEM, "%s: out of memory for index tables", op);
  *block = p;
  for (int d = 0; d < nd; d++) {
    maps[d] = p;
    p += sizes[d];
  }
  return MT_OK;
}

static int64_t pos_mod(int64_t a, int64_t n) {
  int64_t r = a % n;
  return r < 0 ? r + n : r;
}

static mt_status pub_flip(mt_tensor *a, const int64_t *dims, int n, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "flip", "input"));
  int nd = a->_ndim;
  bool flip[MT_MAX_DIMS + 1] = {false};
  for (int i = 0; i < n; i++) {
    if (dims[i] < INT32_MIN || dims[i] > INT32_MAX)
      return mt_error(MT_ERANGE, "flip: dimension %lld out of range", (long long)dims[i]);
    int d;
    MT_TRY(mt_wrap_dim((int)dims[i], nd, "flip", &d));
    if (flip[d]) return mt_error(MT_EINVAL, "flip: dim %lld appears multiple times in the list of dims", MT_D(d));
    flip[d] = true;
  }
  mt_tensor *r;
  MT_TRY(mt_new(a->_sizes, nd, a->_dtype, "flip", &r));
  int64_t *maps[MT_MAX_DIMS];
  void *block = NULL;
  mt_status s = alloc_maps(a->_sizes, nd, "flip", maps, &block);
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  for (int d = 0; d < nd; d++) {
    int64_t m = a->_sizes[d];
    for (int64_t i = 0; i < m; i++) maps[d][i] = (flip[d] ? m - 1 - i : i) * a->_strides[d];
  }
  gather_run(a->_data, r, a->_sizes, nd, maps);
  free(block);
  return mt_give(r, result);
}

static mt_status pub_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int n, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "roll", "input"));
  int nd = a->_ndim;
  if (n < 1) return mt_error(MT_EINVAL, "roll: `shifts` required");
  if (!dims && n != 1)
    return mt_error(MT_EINVAL, "roll: shifts and dimensions must align. shifts: %d, dims:0", n);
  int64_t shift[MT_MAX_DIMS] = {0};
  if (dims) {
    for (int i = 0; i < n; i++) {
      if (dims[i] < INT32_MIN || dims[i] > INT32_MAX)
        return mt_error(MT_ERANGE, "roll: dimension %lld out of range", (long long)dims[i]);
      int d;
      if (nd == 0)
        return mt_error(MT_ERANGE, "roll: dimension specified as %lld but tensor has no dimensions",
                        MT_D(dims[i]));
      MT_TRY(mt_wrap_dim((int)dims[i], nd, "roll", &d));
      int64_t m = a->_sizes[d];
      if (m) shift[d] = pos_mod(shift[d] + pos_mod(shifts[i], m), m);
    }
  }
  mt_tensor *r = NULL, *src = NULL;
  MT_TRY(mt_new(a->_sizes, nd, a->_dtype, "roll", &r));
  int64_t *maps[MT_MAX_DIMS];
  void *block = NULL;
  mt_status s;
  if (!dims) {
    /* flattened: roll the row-major sequence of elements */
    if ((s = contig(a, "roll", &src)) != MT_OK) goto fail;
    int64_t m = a->_numel;
    if ((s = alloc_maps(&m, 1, "roll", maps, &block)) != MT_OK) goto fail;
    int64_t sh = m ? pos_mod(shifts[0], m) : 0;
    for (int64_t i = 0; i < m; i++) maps[0][i] = pos_mod(i - sh, m);
    gather_run(src->_data, r, &m, 1, maps);
    mt_tensor_release(src);
  } else {
    if ((s = alloc_maps(a->_sizes, nd, "roll", maps, &block)) != MT_OK) goto fail;
    for (int d = 0; d < nd; d++) {
      int64_t m = a->_sizes[d];
      for (int64_t i = 0; i < m; i++) maps[d][i] = pos_mod(i - shift[d], m) * a->_strides[d];
    }
    gather_run(a->_data, r, a->_sizes, nd, maps);
  }
  free(block);
  return mt_give(r, result);
fail:
  free(block);
  release2(r, src);
  return s;
}

static mt_status pub_repeat(mt_tensor *a, const int64_t *repeats, int n, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "repeat", "input"));
  int nd = a->_ndim;
  if (n < nd)
    return mt_error(MT_EINVAL,
                    "repeat: number of dimensions of repeat dims (%d) can not be smaller than number of dimensions "
                    "of tensor (%d)",
                    n, nd);
  if (n > MT_MAX_DIMS)
    return mt_error(MT_EINVAL, "repeat: %d dimensions requested, at most %d are supported", n, MT_MAX_DIMS);
  int64_t ss[MT_MAX_DIMS], st[MT_MAX_DIMS], os[MT_MAX_DIMS];
  int lead = n - nd;
  for (int d = 0; d < n; d++) {
    ss[d] = d < lead ? 1 : a->_sizes[d - lead];
    st[d] = d < lead ? 0 : a->_strides[d - lead];
    if (repeats[d] < 0)
      return mt_error(MT_EINVAL, "repeat: repeats must be non-negative, got %lld for dimension %lld",
                      (long long)repeats[d], MT_D(d));
    if (ss[d] && repeats[d] > INT64_MAX / ss[d]) return mt_error(MT_EINVAL, "repeat: result size overflows");
    os[d] = ss[d] * repeats[d];
  }
  mt_tensor *r;
  MT_TRY(mt_new(os, n, a->_dtype, "repeat", &r));
  if (r->_numel == 0) return mt_give(r, result);
  int64_t *maps[MT_MAX_DIMS];
  void *block = NULL;
  mt_status s = alloc_maps(os, n, "repeat", maps, &block);
  if (s != MT_OK) {
    mt_tensor_release(r);
    return s;
  }
  for (int d = 0; d < n; d++)
    for (int64_t i = 0; i < os[d]; i++) maps[d][i] = (i % ss[d]) * st[d];
  gather_run(a->_data, r, os, n, maps);
  free(block);
  return mt_give(r, result);
}

static mt_status pub_repeat_interleave(mt_tensor *a, int64_t repeats, int dim, mt_tensor **result) {
  MT_TRY(mt_check_tensor(a, "repeat_interleave", "input"));
  if (repeats < 0) return mt_error(MT_EINVAL, "repeat_interleave: repeats can not be negative, got %lld",
                                   (long long)repeats);
  int nd = a->_ndim;
  int lim = nd > 0 ? nd : 1;
  mt_tensor *r = NULL, *src = NULL;
  int64_t *maps[MT_MAX_DIMS];
  void *block = NULL;
  mt_status s;
  if (dim < -lim) {
    /* flattened */
    int64_t m = a->_numel;
    if (repeats && m > INT64_MAX / repeats) return mt_error(MT_EINVAL, "repeat_interleave: result size overflows");
    int64_t om = m * repeats;
    MT_TRY(contig(a, "repeat_interleave", &src));
    if ((s = mt_new(&om, 1, a->_dtype, "repeat_interleave", &r)) != MT_OK) goto fail;
    if ((s = alloc_maps(&om, 1, "repeat_interleave", maps, &block)) != MT_OK) goto fail;
    for (int64_t i = 0; i < om; i++) maps[0][i] = i / repeats;
    gather_run(src->_data, r, &om, 1, maps);
    mt_tensor_release(src);
    free(block);
    return mt_give(r, result);
  }
  if (nd == 0)
    return mt_error(MT_ERANGE, "repeat_interleave: dimension specified as %lld but tensor has no dimensions",
                    MT_D(dim));
  int d;
  MT_TRY(mt_wrap_dim(dim, nd, "repeat_interleave", &d));
  int64_t os[MT_MAX_DIMS];
  for (int i = 0; i < nd; i++) os[i] = a->_sizes[i];
  if (repeats && os[d] > INT64_MAX / repeats) return mt_error(MT_EINVAL, "repeat_interleave: result size overflows");
  os[d] *= repeats;
  MT_TRY(mt_new(os, nd, a->_dtype, "repeat_interleave", &r));
  if ((s = alloc_maps(os, nd, "repeat_interleave", maps, &block)) != MT_OK) goto fail;
  for (int j = 0; j < nd; j++)
    for (int64_t i = 0; i < os[j]; i++) maps[j][i] = (j == d ? i / repeats : i) * a->_strides[j];
  gather_run(a->_data, r, os, nd, maps);
  free(block);
  return mt_give(r, result);
fail:
  free(block);
  release2(r, src);
  return s;
}

/* ---------------------------------------------------------------- autograd entry points */
/* sort / topk: the values record where they came from (the indices, 0-based) */
static mt_status record_sorted(mt_tensor *a, int dim, int64_t base, int topk, mt_tensor *v, mt_tensor *i) {
  mt_tensor *i0 = NULL;
  int d = dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim;
  mt_status s = base ? MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i, (double)base, 1, 0, NULL, &i0))
                     : (i0 = mt_tensor_retain(i), MT_OK);
  if (s == MT_OK) s = mt_record_sort(a, d, i0, topk, v);
  mt_tensor_release(i0);
  return s;
}

mt_status mt_sort(mt_tensor *a, int dim, int descending, int stable, int64_t index_base, mt_tensor **values,
                  mt_tensor **indices) {
  if (!a || !mt_grad_on1(a)) return pub_sort(a, dim, descending, stable, index_base, values, indices);
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(pub_sort(a, dim, descending, stable, index_base, &v, &i)));
  mt_status s = record_sorted(a, dim, index_base, 0, v, i);
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}
mt_status mt_topk(mt_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base, mt_tensor **values,
                  mt_tensor **indices) {
  if (!a || !mt_grad_on1(a)) return pub_topk(a, k, dim, largest, sorted, index_base, values, indices);
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(pub_topk(a, k, dim, largest, sorted, index_base, &v, &i)));
  mt_status s = record_sorted(a, dim, index_base, 1, v, i);
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}

#define RECORDED(call, record)                       \
  do {                                               \
    if (!a || !mt_grad_on1(a)) return call(result);  \
    mt_tensor *r_ = NULL;                            \
    MT_TRY(MT_NOGRAD(call(&r_)));                    \
    mt_status s_ = record;                           \
    if (s_) { mt_tensor_release(r_); return s_; }    \
    return mt_give(r_, result);                      \
  } while (0)

mt_status mt_flip(mt_tensor *a, const int64_t *dims, int n, mt_tensor **result) {
#define CALL(r) pub_flip(a, dims, n, r)
  RECORDED(CALL, mt_record_flip(a, dims, n, r_));
#undef CALL
}
mt_status mt_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int n, mt_tensor **result) {
#define CALL(r) pub_roll(a, shifts, dims, n, r)
  RECORDED(CALL, mt_record_roll(a, shifts, dims, n, r_));
#undef CALL
}
mt_status mt_repeat(mt_tensor *a, const int64_t *repeats, int n, mt_tensor **result) {
#define CALL(r) pub_repeat(a, repeats, n, r)
  RECORDED(CALL, mt_record_repeat(a, repeats, n, r_));
#undef CALL
}
/* repeat_interleave records as PyTorch does: an index_select (IndexSelectBackward0), over the
 * flattened input when dim says so */
mt_status mt_repeat_interleave(mt_tensor *a, int64_t repeats, int dim, mt_tensor **result) {
  if (!a || !mt_grad_on1(a) || repeats < 0) return pub_repeat_interleave(a, repeats, dim, result);
  int lim = a->_ndim ? a->_ndim : 1;
  mt_tensor *src = NULL, *idx = NULL, *r = NULL;
  mt_status s;
  int d = dim;
  if (dim < -lim) {
    int64_t m = a->_numel;
    s = mt_reshape(a, &m, 1, &src);
    d = 0;
  } else {
    if (a->_ndim == 0) return pub_repeat_interleave(a, repeats, dim, result); /* its error */
    s = mt_wrap_dim(dim, a->_ndim, "repeat_interleave", &d);
    if (s == MT_OK) src = mt_tensor_retain(a);
  }
  if (s == MT_OK) {
    int64_t len = src->_sizes[d];
    if (repeats && len > INT64_MAX / repeats) s = mt_error(MT_EINVAL, "repeat_interleave: result size overflows");
    else {
      int64_t om = len * repeats;
      s = mt_tensor_empty(&om, 1, MT_INT64, &idx);
      if (s == MT_OK)
        for (int64_t i = 0; i < om; i++) ((int64_t *)idx->_data)[i] = i / repeats;
    }
  }
  if (s == MT_OK) s = mt_index_select(src, d, idx, 0, NULL, &r);
  mt_tensor_release(src);
  mt_tensor_release(idx);
  if (s) return s;
  return mt_give(r, result);
}
