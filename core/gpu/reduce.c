/* reduce.c -- the CUDA backend's reduction slots: the geometry of a reduction (the kept dims and the
 * reduced ones, the latter ordered by stride and merged) and of the line ops along one dim (max/min with
 * indices, cumsum/cumprod, softmax and its backward), and the launch of k_reduce.cu's kernels. */
#include "gpu.h"

static mt_status no_kernel(const char *op, int dtype) {
  return mt_error(MT_EDTYPE, "%s: not implemented for '%s' on device cuda", op, mt_dtype_name(dtype));
}

/* does the op accumulate in int64 (as the CPU's reduce.c)? */
static int in_int64(mt_op op, int in_dt, int out_dt) {
  switch (op) {
  case MT_OP_SUM: case MT_OP_PROD: case MT_OP_NANSUM: return !mt_is_float(out_dt);
  case MT_OP_AMAX: case MT_OP_AMIN: case MT_OP_ALL: case MT_OP_ANY: case MT_OP_COUNT_NONZERO:
    return !mt_is_float(in_dt);
  default: return 0;
  }
}

mt_status mt_gpu_reduce_slot(mt_op op, mt_tensor *out, const mt_tensor *a, const bool *mask, int keepdim, double p) {
  mt_gpu_reduce r;
  memset(&r, 0, sizeof r);
  r.op = op;
  r.p = p;
  r.in = a->_data;
  r.out = out->_data;
  r.in_dtype = a->_dtype;
  r.out_dtype = out->_dtype;
  r.is_int = in_int64(op, a->_dtype, out->_dtype);
  int64_t rs[MT_MAX_DIMS], rst[MT_MAX_DIMS];
  int ri = 0, od = 0;
  r.outer = 1;
  for (int d = 0; d < a->_ndim; d++) {
    if (mask[d]) {
      if (keepdim) od++;
      if (a->_sizes[d] != 1) {
        rs[ri] = a->_sizes[d];
        rst[ri] = a->_strides[d];
        ri++;
      }
    } else {
      r.osizes[r.ondim] = a->_sizes[d];
      r.ostrides_in[r.ondim] = a->_strides[d];
      r.ostrides_out[r.ondim] = out->_strides[od];
      r.outer *= a->_sizes[d];
      r.ondim++;
      od++;
    }
  }
  /* reduced dims: slowest first (by stride, descending), merged where they can be */
  for (int x = 1; x < ri; x++) {
    int64_t s = rs[x], t = rst[x];
    int y = x - 1;
    while (y >= 0 && rst[y] < t) {
      rs[y + 1] = rs[y];
      rst[y + 1] = rst[y];
      y--;
    }
    rs[y + 1] = s;
    rst[y + 1] = t;
  }
  r.inner = 1;
  for (int x = 0; x < ri; x++) {
    r.inner *= rs[x];
    if (r.indim > 0 && r.istrides[r.indim - 1] == rst[x] * rs[x]) {
      r.isizes[r.indim - 1] *= rs[x];
      r.istrides[r.indim - 1] = rst[x];
    } else {
      r.isizes[r.indim] = rs[x];
      r.istrides[r.indim] = rst[x];
      r.indim++;
    }
  }
  if (out->_numel == 0) return MT_OK;
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->reduce(&r, s)) return no_kernel(MT_OP_NAME(op), a->_dtype);
  return MT_OK;
}

/* the lines of t along dim w (w -1: a 0-dim tensor, one line of one element), for up to 3 operands of
 * t's shape (or keepdim-less results: `kept` says whether operand k keeps dim w) */
static void lines_of(mt_gpu_lines *l, const mt_tensor *const *ops, const bool *kept, int nops, int w) {
  memset(l, 0, sizeof *l);
  const mt_tensor *ref = ops[nops - 1]; /* the input: of the full shape */
  int nd = ref->_ndim;
  l->n = nd ? ref->_sizes[w] : 1;
  l->lines = 1;
  for (int k = 0; k < nops; k++) {
    if (!ops[k]) continue;
    l->data[k] = ops[k]->_data;
    l->dtype[k] = ops[k]->_dtype;
    l->stride[k] = nd && kept[k] ? ops[k]->_strides[w] : 0;
  }
  for (int d = 0; d < nd; d++) {
    if (d == w) continue;
    l->sizes[l->ndim] = ref->_sizes[d];
    l->lines *= ref->_sizes[d];
    for (int k = 0; k < nops; k++) {
      if (!ops[k]) continue;
      int od = !kept[k] && d > w ? d - 1 : d; /* the operand's own dim */
      l->strides[k][l->ndim] = ops[k]->_strides[od];
    }
    l->ndim++;
  }
}

mt_status mt_gpu_reduce_index(mt_tensor *values, mt_tensor *indices, const mt_tensor *a, int dim, int keepdim,
                              int is_min, int64_t base) {
  mt_gpu_lines l;
  bool keep = keepdim != 0 && a->_ndim > 0;
  lines_of(&l, (const mt_tensor *[]){values, indices, a}, (const bool[]){keep, keep, true}, 3, a->_ndim ? dim : -1);
  if (!values) l.data[0] = NULL;
  void *s = mt_gpu_stream_of(indices);
  if (mt_gpu_k->reduce_index(&l, is_min, base, s)) return no_kernel(is_min ? "min" : "max", a->_dtype);
  return MT_OK;
}

mt_status mt_gpu_cumulative(mt_tensor *out, const mt_tensor *a, int dim, int is_prod) {
  mt_gpu_lines l;
  lines_of(&l, (const mt_tensor *[]){out, a}, (const bool[]){true, true}, 2, a->_ndim ? dim : -1);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->cumulative(&l, is_prod, s)) return no_kernel(is_prod ? "cumprod" : "cumsum", a->_dtype);
  return MT_OK;
}

mt_status mt_gpu_softmax(mt_tensor *out, const mt_tensor *a, int dim, int log) {
  mt_gpu_lines l;
  lines_of(&l, (const mt_tensor *[]){out, a}, (const bool[]){true, true}, 2, a->_ndim ? dim : -1);
  void *s = mt_gpu_stream_of(out);
  if (mt_gpu_k->softmax(&l, log, s)) return no_kernel(log ? "log_softmax" : "softmax", a->_dtype);
  return MT_OK;
}

mt_status mt_gpu_softmax_backward(mt_tensor *gin, const mt_tensor *g, const mt_tensor *y, int dim, int log) {
  mt_gpu_lines l;
  lines_of(&l, (const mt_tensor *[]){gin, g, y}, (const bool[]){true, true, true}, 3, y->_ndim ? dim : -1);
  void *s = mt_gpu_stream_of(gin);
  if (mt_gpu_k->softmax_backward(&l, log, s)) return no_kernel("softmax_backward", y->_dtype);
  return MT_OK;
}
