/* iter.c -- walking several broadcast, strided operands together (PyTorch's TensorIterator in
 * miniature): dims are ordered by the first operand's strides, size-1 dims dropped and
 * neighbouring dims merged where every operand allows, then an inner loop runs per row. */
#include "cpu.h"

void mt_iter_init(mt_iter *it, const mt_tensor *const *ops, int nops, const int64_t *sizes, int ndim) {
  it->nops = nops;
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) numel *= sizes[i];
  it->numel = numel;
  /* dim d of the iterator is result dim (ndim-1-d): the last dim is the fastest */
  int perm[MT_MAX_DIMS];
  for (int d = 0; d < ndim; d++) perm[d] = ndim - 1 - d;
  /* order by the first operand's strides when it is not already row-major (stable insertion) */
  const mt_tensor *o = ops[0];
  int off0 = ndim - o->_ndim;
  if (!(o->_flags & MT_TENSOR_CONTIGUOUS) || o->_ndim != ndim) {
    for (int a = 1; a < ndim; a++) {
      int p = perm[a];
      int64_t sp = p >= off0 && o->_sizes[p - off0] != 1 ? o->_strides[p - off0] : 0;
      int b = a - 1;
      while (b >= 0) {
        int q = perm[b];
        int64_t sq = q >= off0 && o->_sizes[q - off0] != 1 ? o->_strides[q - off0] : 0;
        if (sp == 0 || sq == 0 || sq <= sp) break;
        perm[b + 1] = perm[b];
        b--;
      }
      perm[b + 1] = p;
    }
  }
  int nd = 0;
  for (int d = 0; d < ndim; d++) {
    int r = perm[d];
    if (sizes[r] == 1) continue;
    it->sizes[nd] = sizes[r];
    for (int k = 0; k < nops; k++) {
      const mt_tensor *t = ops[k];
      int j = r - (ndim - t->_ndim);
      int64_t st = (j >= 0 && t->_sizes[j] != 1) ? t->_strides[j] : 0;
      it->strides[k][nd] = st * (int64_t)mt_itemsize(t->_dtype);
    }
    nd++;
  }
  /* merge dim d+1 into d where every operand is contiguous across them */
  int w = 0;
  for (int d = 1; d < nd; d++) {
    bool ok = true;
    for (int k = 0; k < nops && ok; k++) ok = it->strides[k][d] == it->strides[k][w] * it->sizes[w];
    if (ok) {
      it->sizes[w] *= it->sizes[d];
    } else {
      w++;
      it->sizes[w] = it->sizes[d];
      for (int k = 0; k < nops; k++) it->strides[k][w] = it->strides[k][d];
    }
  }
  it->ndim = nd == 0 ? 0 : w + 1;
  for (int k = 0; k < nops; k++) it->data[k] = ops[k]->_data;
}

static void run_range(const mt_iter *it, mt_loop_fn fn, void *ctx, int64_t begin, int64_t end) {
  int nd = it->ndim, nops = it->nops;
  char *ptrs[MT_ITER_MAX_OPS], *call[MT_ITER_MAX_OPS];
  int64_t inner[MT_ITER_MAX_OPS];
  if (nd == 0) {
    for (int k = 0; k < nops; k++) { call[k] = it->data[k]; inner[k] = 0; }
    if (end > begin) fn(ctx, call, inner, 1);
    return;
  }
  int64_t idx[MT_MAX_DIMS];
  int64_t rem = begin;
  for (int d = 0; d < nd; d++) {
    idx[d] = rem % it->sizes[d];
    rem /= it->sizes[d];
  }
  for (int k = 0; k < nops; k++) {
    ptrs[k] = it->data[k];
    for (int d = 0; d < nd; d++) ptrs[k] += idx[d] * it->strides[k][d];
    inner[k] = it->strides[k][0];
  }
  while (begin < end) {
    int64_t n = it->sizes[0] - idx[0];
    if (n > end - begin) n = end - begin;
    for (int k = 0; k < nops; k++) call[k] = ptrs[k];
    fn(ctx, call, inner, n);
    begin += n;
    idx[0] += n;
    for (int k = 0; k < nops; k++) ptrs[k] += n * it->strides[k][0];
    for (int d = 0; d + 1 < nd && idx[d] == it->sizes[d]; d++) {
      for (int k = 0; k < nops; k++) ptrs[k] += it->strides[k][d + 1] - it->sizes[d] * it->strides[k][d];
      idx[d] = 0;
      idx[d + 1]++;
    }
  }
}

typedef struct {
  const mt_iter *it;
  mt_loop_fn fn;
  void *ctx;
} range_job;

static void range_job_run(void *p, int64_t b, int64_t e) {
  range_job *j = p;
  run_range(j->it, j->fn, j->ctx, b, e);
}

void mt_iter_run(const mt_iter *it, mt_loop_fn fn, void *ctx, int64_t grain) {
  if (it->numel == 0) return;
  if (it->numel < 2 * grain) {
    run_range(it, fn, ctx, 0, it->numel);
    return;
  }
  range_job j = {it, fn, ctx};
  mt_parallel_for(it->numel, grain, range_job_run, &j);
}
