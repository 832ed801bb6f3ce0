/* iter.h -- the CPU kernels' one strided iterator (iter.c says how it orders and walks): several
 * operands walked together, in element order (elementwise, copies, reductions, the optimizer,
 * the random fills) or in rows with their coordinates (the indexing kernels). The loops a kernel
 * calls with its own loop function are inline, so that function is inlined into them. Part of
 * the CPU backend (core/tensor/). */
#ifndef MT_ITER_H
#define MT_ITER_H

#include "../mt_internal.h"

/* The one strided iterator of the CPU kernels: several operands walked together (iter.c says
 * how). Dim 0 is the fastest; strides are in bytes. */
#define MT_ITER_MAX_OPS 8
typedef struct mt_iter {
  int ndim;
  int nops;
  int64_t numel;
  int64_t sizes[MT_MAX_DIMS];
  int64_t strides[MT_ITER_MAX_OPS][MT_MAX_DIMS];
  char *data[MT_ITER_MAX_OPS];
} mt_iter;

/* In element order: ops[0..nops) over `sizes` (operands are broadcast to it: their sizes must be 1
 * or equal, aligned at the right), dims ordered by the operands' strides and coalesced. */
void mt_iter_init(mt_iter *it, const mt_tensor *const *ops, int nops, const int64_t *sizes, int ndim);
/* The inner loop: n elements, ptrs[i] advancing by strides[i] bytes. */
typedef void (*mt_loop_fn)(void *ctx, char **ptrs, const int64_t *strides, int64_t n);
/* Run `fn` over every element: in parallel when numel >= grain * 2 and threads are available;
 * grain 0: serially, in the iterator's order. */
void mt_iter_run(const mt_iter *it, mt_loop_fn fn, void *ctx, int64_t grain);
/* Elements begin..end in the iterator's order (inline, so that a kernel calling it with its own
 * loop function gets that loop inlined: the random fills). */
static inline __attribute__((always_inline)) void mt_iter_range(const mt_iter *it, mt_loop_fn fn, void *ctx,
                                                                 int64_t begin, int64_t end) {
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


/* In rows: over `sizes` as they are (a scalar is one row of one element), row-major, a row being
 * the last dim. Operands are added in order: data with element strides over the dims (NULL: all
 * 0), or a tensor of those dims (or a scalar). */
void mt_iter_init_rows(mt_iter *it, const int64_t *sizes, int ndim);
int mt_iter_add(mt_iter *it, char *data, const int64_t *strides, size_t item);
int mt_iter_add_tensor(mt_iter *it, const mt_tensor *t);
/* The row function: p[k], operand k at the row's first element; st[k], its stride along the row;
 * coord, the row's coordinates (coord[ndim - 1] is 0). */
typedef void (*mt_row_fn)(void *ctx, char **p, const int64_t *st, int64_t n, const int64_t *coord);
int64_t mt_iter_nrows(const mt_iter *it);
/* rows r0..r1, in order (inline, so that a constant row function is inlined) */
static inline __attribute__((always_inline)) void mt_iter_rows(const mt_iter *it, mt_row_fn fn, void *ctx, int64_t r0,
                                                                int64_t r1) {
  if (r0 >= r1) return; /* nothing to walk (also: an empty tensor has a zero size to divide by) */
  int nd = it->ndim, nops = it->nops;
  int64_t rowlen = it->sizes[0];
  /* coord: row-major, the tensor's dims (coord[nd - 1], the position in the row, stays 0) */
  int64_t coord[MT_MAX_DIMS] = {0};
  int64_t rem = r0;
  for (int d = nd - 2; d >= 0; d--) {
    coord[d] = rem % it->sizes[nd - 1 - d];
    rem /= it->sizes[nd - 1 - d];
  }
  char *p[MT_ITER_MAX_OPS], *call[MT_ITER_MAX_OPS];
  int64_t last[MT_ITER_MAX_OPS];
  for (int k = 0; k < nops; k++) {
    p[k] = it->data[k];
    for (int d = 0; d < nd - 1; d++) p[k] += coord[d] * it->strides[k][nd - 1 - d];
    last[k] = it->strides[k][0];
  }
  for (int64_t r = r0; r < r1; r++) {
    for (int k = 0; k < nops; k++) call[k] = p[k];
    fn(ctx, call, last, rowlen, coord);
    for (int d = nd - 2; d >= 0; d--) {
      const int i = nd - 1 - d;
      coord[d]++;
      for (int k = 0; k < nops; k++) p[k] += it->strides[k][i];
      if (coord[d] < it->sizes[i]) break;
      for (int k = 0; k < nops; k++) p[k] -= it->strides[k][i] * it->sizes[i];
      coord[d] = 0;
    }
  }
}
/* every row; in parallel by blocks of `block` rows that stay on one thread (0: serially) */
void mt_iter_run_rows_parallel(const mt_iter *it, mt_row_fn fn, void *ctx, int64_t block);
static inline __attribute__((always_inline)) void mt_iter_run_rows(const mt_iter *it, mt_row_fn fn, void *ctx,
                                                                    int64_t block) {
  if (it->numel == 0) return;
  int64_t nrows = it->numel / it->sizes[0];
  if (block <= 0 || it->numel < 2 * MT_GRAIN || nrows % block != 0) mt_iter_rows(it, fn, ctx, 0, nrows);
  else mt_iter_run_rows_parallel(it, fn, ctx, block);
}

#endif
