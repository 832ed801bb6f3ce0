/* iter.c -- the CPU kernels' one strided iterator: several operands walked together, each with its
 * own byte strides (broadcast operands have zeros). Two ways to set one up:
 *
 *   mt_iter_init: in element order, PyTorch's TensorIterator in miniature. Size-1 dims are
 *   dropped, the rest ordered by the operands' strides (the first operand whose strides differ
 *   decides, a zero stride decides nothing), and neighbouring dims merged where every operand
 *   allows. The elementwise, copy, reduction and optimizer kernels run on it in parallel; the
 *   random fills run on it serially, which visits the elements in the order PyTorch's CPU
 *   generator fills them.
 *
 *   mt_iter_init_rows: over the tensor's own dims, row-major, a row being the last dim; the row
 *   function gets each row's coordinates. The indexing kernels run on it (an operand may be plain
 *   data with strides of the caller's: a normalised index, an indexed tensor whose stride along
 *   the indexed dim is applied by the row function).
 *
 * Internally dim 0 is the fastest in both. */
#include "iter.h"

/* stride of operand t along result dim r (0 where t broadcasts or has size 1), in bytes */
static inline int64_t op_stride(const mt_tensor *t, int r, int ndim) {
  int j = r - (ndim - t->_ndim);
  return (j >= 0 && t->_sizes[j] != 1) ? t->_strides[j] * (int64_t)mt_itemsize(t->_dtype) : 0;
}

/* Does dim p go before (is it faster than) dim q? The first operand whose strides along them are
 * both non-zero and differ decides. */
static bool goes_before(const mt_tensor *const *ops, int nops, int ndim, int p, int q) {
  for (int k = 0; k < nops; k++) {
    int64_t sp = op_stride(ops[k], p, ndim), sq = op_stride(ops[k], q, ndim);
    if (sp != 0 && sq != 0 && sp != sq) return sp < sq;
  }
  return false;
}

void mt_iter_init(mt_iter *it, const mt_tensor *const *ops, int nops, const int64_t *sizes, int ndim) {
  it->nops = nops;
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) numel *= sizes[i];
  it->numel = numel;
  /* the dims of size other than 1, the last (the fastest of a row-major result) first */
  int perm[MT_MAX_DIMS], nd = 0;
  for (int r = ndim - 1; r >= 0; r--)
    if (sizes[r] != 1) perm[nd++] = r;
  /* ordered by the operands' strides (a stable insertion sort); a row-major first operand of
   * the full shape already is */
  const mt_tensor *o = ops[0];
  if (!(o->_flags & MT_TENSOR_CONTIGUOUS) || o->_ndim != ndim) {
    for (int a = 1; a < nd; a++) {
      int p = perm[a], b = a - 1;
      while (b >= 0 && goes_before(ops, nops, ndim, p, perm[b])) {
        perm[b + 1] = perm[b];
        b--;
      }
      perm[b + 1] = p;
    }
  }
  for (int d = 0; d < nd; d++) {
    int r = perm[d];
    it->sizes[d] = sizes[r];
    for (int k = 0; k < nops; k++) it->strides[k][d] = op_stride(ops[k], r, ndim);
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

typedef struct {
  const mt_iter *it;
  mt_loop_fn fn;
  void *ctx;
} range_job;

static void range_job_run(void *p, int64_t b, int64_t e) {
  range_job *j = p;
  mt_iter_range(j->it, j->fn, j->ctx, b, e);
}

void mt_iter_run(const mt_iter *it, mt_loop_fn fn, void *ctx, int64_t grain) {
  if (it->numel == 0) return;
  if (grain <= 0 || it->numel < 2 * grain) {
    mt_iter_range(it, fn, ctx, 0, it->numel);
    return;
  }
  range_job j = {it, fn, ctx};
  mt_parallel_for(it->numel, grain, range_job_run, &j);
}

/* ---------------------------------------------------------------- rows */
void mt_iter_init_rows(mt_iter *it, const int64_t *sizes, int ndim) {
  memset(it, 0, sizeof *it);
  if (ndim == 0) { /* a scalar: one row of one element */
    it->ndim = 1;
    it->sizes[0] = 1;
  } else {
    it->ndim = ndim;
    for (int d = 0; d < ndim; d++) it->sizes[d] = sizes[ndim - 1 - d];
  }
  it->numel = 1;
  for (int d = 0; d < it->ndim; d++) it->numel *= it->sizes[d];
}

int mt_iter_add(mt_iter *it, char *data, const int64_t *strides, size_t item) {
  int k = it->nops++;
  it->data[k] = data;
  for (int d = 0; d < it->ndim; d++) it->strides[k][d] = strides ? strides[it->ndim - 1 - d] * (int64_t)item : 0;
  return k;
}

int mt_iter_add_tensor(mt_iter *it, const mt_tensor *t) {
  return mt_iter_add(it, t->_data, t->_ndim ? t->_strides : NULL, mt_itemsize(t->_dtype));
}

int64_t mt_iter_nrows(const mt_iter *it) { return it->numel ? it->numel / it->sizes[0] : 0; }

typedef struct {
  const mt_iter *it;
  mt_row_fn fn;
  void *ctx;
  int64_t block;
} rows_job;

static void rows_job_run(void *p, int64_t b, int64_t e) {
  rows_job *j = p;
  mt_iter_rows(j->it, j->fn, j->ctx, b * j->block, e * j->block);
}

void mt_iter_run_rows_parallel(const mt_iter *it, mt_row_fn fn, void *ctx, int64_t block) {
  int64_t rowlen = it->sizes[0], nrows = it->numel / rowlen;
  rows_job j = {it, fn, ctx, block};
  int64_t grain = MT_GRAIN / (rowlen * block);
  if (grain < 1) grain = 1;
  mt_parallel_for(nrows / block, grain, rows_job_run, &j);
}
