/* sort.c -- the CPU's ordering and rearranging kernels: sort (and topk), unique, searchsorted,
 * bincount, and the copies that move elements around (flip, roll, repeat, repeat_interleave).
 *
 * Comparisons run on keys: integers and bool as int64 (exact), floating types as double (exact
 * for every float type we hold). NaN sorts as the largest value, as PyTorch does. Sorting is a
 * stable merge sort of (key, position) pairs, so `stable` is always honoured.
 *
 * The rearranging ops share one kernel: the result is contiguous and, per result dimension d,
 * a table maps each result index along d to an element offset in the source; an element's
 * source is the sum of its dims' table entries. */
#include "cpu.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- helpers */
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

/* Sort (or keep the first k, the size of `v` along d, of the sorted) lines of `a` along `d`. */
mt_status mt_cpu_sort(mt_tensor *v, mt_tensor *ix, const mt_tensor *a, int d, int desc, int64_t base) {
  int nd = a->_ndim;
  int64_t n = nd ? a->_sizes[d] : 1, k = nd ? v->_sizes[d] : 1, inner = 1, outer = 1;
  for (int i = 0; i < nd; i++) {
    if (i < d) outer *= a->_sizes[i];
    if (i > d) inner *= a->_sizes[i];
  }
  int64_t lines = outer * inner;
  if (lines == 0 || n == 0 || k == 0) return MT_OK;
  const char *op = k == n ? "sort" : "topk";
  mt_tensor *src;
  MT_TRY(mt_cpu_contiguous(a, op, &src));
  sort_ctx c = {src->_data, v->_data, (int64_t *)ix->_data, n, inner, k, a->_dtype, desc, base, 0};
  int64_t grain = MT_GRAIN / (n * 4 + 1);
  mt_parallel_for(lines, grain < 1 ? 1 : grain, sort_range, &c);
  mt_tensor_release(src);
  if (c.failed)
    return mt_error(MT_ENOMEM, "%s: out of memory for the sort buffers (%lld elements per line)", op, (long long)n);
  return MT_OK;
}

/* ---------------------------------------------------------------- unique */
mt_status mt_cpu_unique(const mt_tensor *a, int64_t index_base, mt_tensor **values, mt_tensor **inverse,
                        mt_tensor **counts) {
  int return_inverse = inverse != NULL, return_counts = counts != NULL;
  mt_tensor *src = NULL, *v = NULL, *inv = NULL, *cnt = NULL;
  int64_t n = a->_numel;
  size_t item = mt_itemsize(a->_dtype);
  void *work = NULL;
  mt_status s;
  if ((s = mt_cpu_contiguous(a, "unique", &src)) != MT_OK) return s;
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
  if ((s = mt_new_cpu(&nu, 1, a->_dtype, "unique", &v)) != MT_OK) goto fail;
  if (return_inverse && (s = mt_new_cpu(a->_sizes, a->_ndim, MT_INT64, "unique", &inv)) != MT_OK) goto fail;
  if (return_counts && (s = mt_new_cpu(&nu, 1, MT_INT64, "unique", &cnt)) != MT_OK) goto fail;
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
mt_status mt_cpu_searchsorted(mt_tensor *r, const mt_tensor *sorted, const mt_tensor *values, int right,
                              int64_t index_base) {
  int nb = sorted->_ndim;
  mt_tensor *bs = NULL, *vs = NULL;
  void *keys = NULL, *vkeys = NULL;
  mt_status s;
  if ((s = mt_cpu_contiguous(sorted, "searchsorted", &bs)) != MT_OK) return s;
  if ((s = mt_cpu_contiguous(values, "searchsorted", &vs)) != MT_OK) goto fail;
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
  return MT_OK;
fail:
  free(keys);
  free(vkeys);
  release2(bs, vs);
  return s;
}

/* ---------------------------------------------------------------- bincount */
mt_status mt_cpu_bincount(const mt_tensor *a, const mt_tensor *weights, int64_t minlength, mt_tensor **result) {
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
  mt_status s = mt_new_cpu(&len, 1, odt, "bincount", &r);
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

mt_status mt_cpu_rearrange(mt_tensor *out, const mt_tensor *src, int64_t *const *maps) {
  gather_run(src->_data, out, out->_sizes, out->_ndim, maps);
  return MT_OK;
}
