/* layout.c -- the memory layout of a new result (layout.h). PyTorch gives an elementwise result the
 * layout of its operands (TensorIterator: x.t() + 1 has x.t()'s strides, a permuted input gives a
 * permuted result) and empty_like / clone / to keep a tensor's layout (preserve_format). The rule,
 * from PyTorch 1.13's TensorIterator (reorder_dimensions, fast_set_up) and empty_like:
 * - every operand contiguous: a contiguous result;
 * - every operand of the result's shape, dense and with the same strides: those strides;
 * - else the dims sorted from fastest to slowest by the operands' strides (an insertion sort that
 *   starts from row-major order; for two dims, the first operand whose strides differ there decides,
 *   a broadcast dim (stride 0) tells nothing, equal strides put the smaller dim first), and the
 *   result contiguous in that order. */
#include "layout.h"

bool mt_is_dense(const mt_tensor *t) {
  int nd = t->_ndim;
  if (t->_flags & MT_TENSOR_CONTIGUOUS) return true;
  if (nd == 1) return t->_sizes[0] < 2 || t->_strides[0] == 1;
  int perm[MT_MAX_DIMS];
  for (int i = 0; i < nd; i++) perm[i] = i;
  /* dims of size >= 2 by stride, ascending (insertion sort: nd is small) */
  for (int i = 1; i < nd; i++) {
    int d = perm[i], j = i;
    while (j > 0) {
      int e = perm[j - 1];
      bool before = t->_sizes[e] < 2 ? t->_sizes[d] >= 2 : (t->_sizes[d] >= 2 && t->_strides[d] < t->_strides[e]);
      if (!before) break;
      perm[j] = e;
      j--;
    }
    perm[j] = d;
  }
  int64_t want = 1;
  for (int i = 0; i < nd; i++) {
    int d = perm[i];
    if (t->_sizes[d] < 2) return true;
    if (t->_strides[d] != want) return false;
    want *= t->_sizes[d];
  }
  return true;
}

/* op's stride along dim `d` of the result (aligned at the right; 0 where it is broadcast) */
static int64_t stride_in(const mt_tensor *op, const int64_t *shape, int nd, int d) {
  int k = d - (nd - op->_ndim);
  if (k < 0) return 0;
  if (op->_sizes[k] == 1 && shape[d] != 1) return 0;
  return op->_strides[k];
}

/* 1: dim a goes after (is slower than) dim b; -1: before; 0: the operands do not tell */
static int compare_dims(const mt_tensor *const *ops, int nops, const int64_t *shape, int nd, int a, int b) {
  for (int k = 0; k < nops; k++) {
    const mt_tensor *op = ops[k];
    if (!op || op->_ndim == 0) continue;
    int64_t sa = stride_in(op, shape, nd, a), sb = stride_in(op, shape, nd, b);
    if (sa == 0 || sb == 0) continue;
    if (sa < sb) return -1;
    if (sa > sb) return 1;
    if (shape[a] > shape[b]) return 1;
  }
  return 0;
}

bool mt_layout_strides(const mt_tensor *const *ops, int nops, const int64_t *shape, int nd, int64_t *strides) {
  if (nd < 2) return false;
  bool all_contig = true, same = true;
  const mt_tensor *first = NULL;
  for (int k = 0; k < nops; k++) {
    const mt_tensor *op = ops[k];
    if (!op) continue;
    if (op->_ndim > 0 && !(op->_flags & MT_TENSOR_CONTIGUOUS)) all_contig = false;
    if (op->_ndim != nd || memcmp(op->_sizes, shape, sizeof(int64_t) * (size_t)nd)) {
      same = false;
      continue;
    }
    if (!first) first = op;
    else if (memcmp(op->_strides, first->_strides, sizeof(int64_t) * (size_t)nd)) same = false;
    if (!mt_is_dense(op)) same = false;
  }
  if (all_contig) return false;
  if (same && first) {
    memcpy(strides, first->_strides, sizeof(int64_t) * (size_t)nd);
    return true;
  }
  /* perm[0] is the fastest dim; start from row-major order */
  int perm[MT_MAX_DIMS];
  for (int i = 0; i < nd; i++) perm[i] = nd - 1 - i;
  for (int i = 1; i < nd; i++) {
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; d0--) {
      int c = compare_dims(ops, nops, shape, nd, perm[d0], perm[d1]);
      if (c > 0) {
        int tmp = perm[d0];
        perm[d0] = perm[d1];
        perm[d1] = tmp;
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  bool row_major = true;
  for (int i = 0; i < nd; i++)
    if (perm[i] != nd - 1 - i) row_major = false;
  if (row_major) return false;
  int64_t s = 1;
  for (int i = 0; i < nd; i++) {
    strides[perm[i]] = s;
    s *= shape[perm[i]];
  }
  return true;
}

/* a new tensor of `shape` with `strides` (a dense layout), on dev */
static mt_status new_strided(mt_device dev, const int64_t *shape, const int64_t *strides, int nd, int dtype,
                             const char *op, mt_tensor **out) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++)
    if (__builtin_mul_overflow(n, shape[i], &n)) return mt_new(dev, shape, nd, dtype, op, out); /* its error */
  mt_tensor *r;
  MT_TRY(mt_new(dev, &n, 1, dtype, op, &r));
  r->_ndim = nd;
  memcpy(r->_sizes, shape, sizeof(int64_t) * (size_t)nd);
  memcpy(r->_strides, strides, sizeof(int64_t) * (size_t)nd);
  mt_tensor_refresh(r);
  *out = r;
  return MT_OK;
}

mt_status mt_new_laid_out(mt_device dev, const int64_t *shape, int nd, int dtype, const char *op,
                          const mt_tensor *const *ops, int nops, mt_tensor **out) {
  int64_t strides[MT_MAX_DIMS];
  if (!mt_layout_strides(ops, nops, shape, nd, strides)) return mt_new(dev, shape, nd, dtype, op, out);
  return new_strided(dev, shape, strides, nd, dtype, op, out);
}

mt_status mt_new_preserving(const mt_tensor *t, int dtype, const char *op, mt_tensor **out) {
  const mt_tensor *ops[1] = {t};
  return mt_new_laid_out(mt_device_of(t), t->_sizes, t->_ndim, dtype, op, ops, 1, out);
}

/* empty_like: PyTorch's preserve_format (t's strides when t is dense) */
mt_status mt_tensor_empty_like(const mt_tensor *t, int dtype, mt_tensor **out) {
  MT_TRY(mt_check_tensor(t, "empty_like", "input"));
  return mt_new_preserving(t, dtype < 0 ? t->_dtype : dtype, "empty_like", out);
}
