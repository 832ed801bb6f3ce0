/* k_index.cu -- the CUDA backend's indexing kernels: one indexed walk (a plain operand, an indexed one read
 * or written at an index along one dim, and the index; every index checked on the device, a bad one a
 * fault) carrying index_select, gather, scatter, scatter_add, index_add, index_copy and index_fill; masked
 * fill; the mask scans (a chunked count, scan and write in row-major order) carrying masked_select,
 * masked_scatter, nonzero and unique; advanced indexing (index, index_put with accumulation); the
 * rearranging gather of flip, roll, repeat and repeat_interleave; one_hot; sorting (a block per line,
 * stable merge passes), searchsorted and bincount. Writes that may meet at one element (scatter_add,
 * index_add, accumulate) add atomically. */
#include "math.cuh"

namespace MT_GPU_NS {

/* ---------------------------------------------------------------- atomics on any dtype */
/* new = f(old) on the element at p, atomically: a compare-and-swap on the 4- or 8-byte word holding it */
template <typename T, typename F> MT_DEV void atomic_apply(T *p, F f) {
  if (sizeof(T) == 8) {
    unsigned long long *w = (unsigned long long *)p, old = *(volatile unsigned long long *)w, assumed;
    do {
      assumed = old;
      T cur;
      memcpy(&cur, &assumed, 8);
      T nv = f(cur);
      unsigned long long want;
      memcpy(&want, &nv, 8);
      old = atomicCAS(w, assumed, want);
    } while (old != assumed);
  } else {
    uintptr_t a = (uintptr_t)p;
    unsigned *w = (unsigned *)(a & ~(uintptr_t)3);
    const unsigned bits = 8 * (unsigned)sizeof(T); /* 8, 16 or 32 here */
    unsigned shift = (unsigned)(a & 3) * 8, mask = bits >= 32 ? 0xffffffffu : ((1u << (bits & 31)) - 1) << shift;
    unsigned old = *(volatile unsigned *)w, assumed;
    do {
      assumed = old;
      unsigned bits = (assumed & mask) >> shift;
      T cur;
      memcpy(&cur, &bits, sizeof(T));
      T nv = f(cur);
      unsigned nb = 0;
      memcpy(&nb, &nv, sizeof(T));
      unsigned want = (assumed & ~mask) | ((nb << shift) & mask);
      old = atomicCAS(w, assumed, want);
    } while (old != assumed);
  }
}

/* ---------------------------------------------------------------- the indexed walk */
enum { K_GET, K_PUT, K_FILL, K_ADD, K_MUL, K_ADDV, K_MULV };

/* the arithmetic kinds in the dtype's working type (the CPU's acc_row: alpha scales in the working type,
 * a value goes through the dtype first) */
template <typename T> struct acc_op {
  int kind;
  typename dtype_of<T>::native b, alpha, value;
  MT_DEV T operator()(T x) const {
    typedef typename dtype_of<T>::native N;
    N a = dtype_of<T>::load(x), v;
    switch (kind) {
    case K_ADD: v = a + alpha * b; break;
    case K_MUL: v = a * b; break;
    case K_ADDV: v = a + value; break;
    default: v = a * value; break;
    }
    return dtype_of<T>::store(v);
  }
};

MT_DEV int64_t load_index(const void *p, int dt, int64_t off) {
  return dt == MT_INT32 ? (int64_t)((const int32_t *)p)[off] : ((const int64_t *)p)[off];
}

/* the position an index value names along a dim of `size`, or -1 after raising the fault */
MT_DEV int64_t index_pos(int64_t v, int64_t size, int64_t base, int allow_neg, mt_gpu_fault *f, int op, int64_t dim) {
  int64_t pos = allow_neg && v < 0 ? v + size : v - base;
  if (pos < 0 || pos >= size || (allow_neg && v >= 0 && v < base)) {
    raise_fault(f, MT_GPU_FAULT_INDEX, op, v, size, dim + base);
    return -1;
  }
  return pos;
}

template <typename T> __global__ void indexed_kernel(mt_gpu_indexed x) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  typedef typename dtype_of<T>::native N;
  T fill;
  memcpy(&fill, &x.fill, sizeof fill);
  N value = dtype_of<T>::load(fill);
  N alpha = (N)x.alpha;
  if (x.dtype == MT_BOOL) alpha = (N)(x.alpha != 0);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < x.numel; i += step) {
    int64_t po = 0, io = 0, xo = 0, r = i;
    for (int d = x.ndim - 1; d >= 0; d--) {
      int64_t s = x.sizes[d], c = r % s;
      r /= s;
      po += c * x.plain_strides[d];
      io += c * x.ind_strides[d];
      xo += c * x.idx_strides[d];
    }
    int64_t pos = index_pos(load_index(x.idx, x.idx_dtype, xo), x.dimsize, x.base, x.allow_neg, x.fault, x.op, x.dim);
    if (pos < 0) continue;
    T *e = (T *)x.ind + io + pos * x.dimstride;
    T *p = (T *)x.plain + po;
    switch (x.kind) {
    case K_GET: *p = *e; break;
    case K_PUT: *e = *p; break;
    case K_FILL: *e = fill; break;
    default: {
      acc_op<T> f{x.kind, x.kind == K_ADD || x.kind == K_MUL ? dtype_of<T>::load(*p) : N(), alpha, value};
      atomic_apply(e, f);
    }
    }
  }
}
static int indexed(const mt_gpu_indexed *x, void *stream) {
  if (x->numel == 0) return 0;
  dim3 g(blocks_for(x->numel)), b(THREADS);
  MT_GPU_DISPATCH_ALL(x->dtype, T, mt_launch(indexed_kernel<T>, g, b, 0, stream, *x))
  return 0;
}

/* ---------------------------------------------------------------- masked fill */
template <typename W> __global__ void masked_fill_kernel(mt_gpu_iter it, W v) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const uint8_t *m = (const uint8_t *)it.data[1];
  W *o = (W *)it.data[0];
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.numel; i += step)
    if (m[iter_offset(it, 1, i)]) o[iter_offset(it, 0, i)] = v;
}
static int masked_fill(const mt_gpu_iter *it, void *stream) {
  if (it->numel == 0) return 0;
  dim3 g(blocks_for(it->numel)), b(THREADS);
  switch (mt_gpu_itemsize(it->dtype[0])) {
  case 1: mt_launch(masked_fill_kernel<uint8_t>, g, b, 0, stream, *it, (uint8_t)it->scalar[0]); return 0;
  case 2: mt_launch(masked_fill_kernel<uint16_t>, g, b, 0, stream, *it, (uint16_t)it->scalar[0]); return 0;
  case 4: mt_launch(masked_fill_kernel<uint32_t>, g, b, 0, stream, *it, (uint32_t)it->scalar[0]); return 0;
  default: mt_launch(masked_fill_kernel<uint64_t>, g, b, 0, stream, *it, (uint64_t)it->scalar[0]); return 0;
  }
}

/* ---------------------------------------------------------------- scans in row-major order */
/* The predicate of element i: s.mask's value (any dtype, nonzero) at its offset in s's geometry, or
 * (unique) whether sorted key i differs from key i - 1. */
MT_DEV bool nonzero_at(const mt_gpu_scan &s, int64_t off) {
  switch (mt_gpu_itemsize(s.mask_dtype)) {
  case 1: return ((const uint8_t *)s.mask)[off] != 0;
  case 2:
    if (s.mask_dtype == MT_INT16) return ((const int16_t *)s.mask)[off] != 0;
    return (((const uint16_t *)s.mask)[off] & 0x7fff) != 0; /* -0.0 is zero */
  case 4:
    if (s.mask_dtype == MT_FLOAT32) return ((const float *)s.mask)[off] != 0;
    return ((const int32_t *)s.mask)[off] != 0;
  default:
    if (s.mask_dtype == MT_FLOAT64) return ((const double *)s.mask)[off] != 0;
    return ((const int64_t *)s.mask)[off] != 0;
  }
}
MT_DEV int64_t scan_offset(const mt_gpu_scan &s, int k, int64_t i) {
  return geo_offset(s.ndim, s.sizes, s.strides[k], i);
}
MT_DEV bool scan_pred(const mt_gpu_scan &s, int64_t i) {
  if (s.kind == MT_GPU_SCAN_UNIQUE) {
    if (i == 0) return true;
    if (s.keys_float) return ((const double *)s.keys)[i] != ((const double *)s.keys)[i - 1];
    return ((const int64_t *)s.keys)[i] != ((const int64_t *)s.keys)[i - 1];
  }
  return nonzero_at(s, scan_offset(s, 0, i));
}

__global__ void scan_count_kernel(mt_gpu_scan s, int64_t *chunks) {
  int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= s.nchunks) return;
  int64_t lo = c * s.chunk, hi = lo + s.chunk < s.numel ? lo + s.chunk : s.numel, n = 0;
  for (int64_t i = lo; i < hi; i++) n += scan_pred(s, i);
  chunks[c] = n;
}
/* one thread: the chunks' counts into their first positions, the total into chunks[nchunks] */
__global__ void scan_chunks_kernel(int64_t *chunks, int64_t nchunks) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int64_t acc = 0;
  for (int64_t c = 0; c < nchunks; c++) {
    int64_t n = chunks[c];
    chunks[c] = acc;
    acc += n;
  }
  chunks[nchunks] = acc;
}
template <typename W> __global__ void scan_write_kernel(mt_gpu_scan s, const int64_t *chunks) {
  int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= s.nchunks) return;
  int64_t lo = c * s.chunk, hi = lo + s.chunk < s.numel ? lo + s.chunk : s.numel, pos = chunks[c];
  for (int64_t i = lo; i < hi; i++) {
    bool t = scan_pred(s, i);
    switch (s.kind) {
    case MT_GPU_SCAN_SELECT:
      if (t) ((W *)s.out)[pos] = ((const W *)s.src)[scan_offset(s, 1, i)];
      break;
    case MT_GPU_SCAN_SCATTER:
      if (t) ((W *)s.out)[scan_offset(s, 1, i)] = ((const W *)s.src)[pos];
      break;
    case MT_GPU_SCAN_NONZERO:
      if (t) {
        int64_t *row = (int64_t *)s.out + pos * s.ncols, r = i;
        for (int d = s.ncols - 1; d >= 0; d--) {
          row[d] = r % s.sizes[d] + s.base;
          r /= s.sizes[d];
        }
      }
      break;
    default: { /* unique: the run of sorted element i is value pos + t - 1 */
      int64_t u = pos + (t ? 1 : 0) - 1, orig = s.perm[i];
      if (t) ((W *)s.out)[u] = ((const W *)s.src)[orig];
      if (s.inverse) s.inverse[orig] = u + s.base;
      if (s.counts) atomicAdd((unsigned long long *)&s.counts[u], 1ull);
    }
    }
    pos += t;
  }
}
static int scan(const mt_gpu_scan *s, int64_t *chunks, int phase, void *stream) {
  dim3 g((unsigned)((s->nchunks + THREADS - 1) / THREADS)), b(THREADS);
  if (phase == 0) {
    if (s->nchunks) mt_launch(scan_count_kernel, g, b, 0, stream, *s, chunks);
    mt_launch(scan_chunks_kernel, dim3(1), dim3(32), 0, stream, chunks, s->nchunks);
    return 0;
  }
  if (!s->nchunks) return 0;
  switch (mt_gpu_itemsize(s->dtype)) {
  case 1: mt_launch(scan_write_kernel<uint8_t>, g, b, 0, stream, *s, (const int64_t *)chunks); return 0;
  case 2: mt_launch(scan_write_kernel<uint16_t>, g, b, 0, stream, *s, (const int64_t *)chunks); return 0;
  case 4: mt_launch(scan_write_kernel<uint32_t>, g, b, 0, stream, *s, (const int64_t *)chunks); return 0;
  default: mt_launch(scan_write_kernel<uint64_t>, g, b, 0, stream, *s, (const int64_t *)chunks); return 0;
  }
}

/* ---------------------------------------------------------------- advanced indexing */
/* position p of the P index positions, element e of the B trailing elements: w's element at the sum of the
 * k index values times w's strides plus e's offset in w's trailing dims; `contig` is the result (get) or
 * the values (put), P x B, contiguous */
template <typename T> __global__ void advanced_kernel(mt_gpu_advanced a) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x, total = a.P * a.B;
  typedef typename dtype_of<T>::native N;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    int64_t p = i / a.B, e = i - p * a.B, off = 0;
    bool bad = false;
    for (int k = 0; k < a.k; k++) {
      int64_t v = load_index(a.idx[k], MT_INT64, p);
      int64_t pos = index_pos(v, a.wsizes[k], a.raw[k] ? a.base : 0, a.raw[k], a.fault, a.op, k);
      if (pos < 0) {
        bad = true;
        break;
      }
      off += pos * a.wstrides[k];
    }
    if (bad) continue;
    for (int d = a.tnd - 1; d >= 0; d--) {
      int64_t s = a.tsizes[d], c = e % s;
      e /= s;
      off += c * a.tstrides[d];
    }
    T *w = (T *)a.w + off;
    T *c = (T *)a.contig + i;
    if (a.kind == K_GET) *c = *w;
    else if (a.kind == K_PUT) *w = *c;
    else atomic_apply(w, acc_op<T>{K_ADD, dtype_of<T>::load(*c), (N)1, N()});
  }
}
static int advanced(const mt_gpu_advanced *a, void *stream) {
  if (a->P * a->B == 0) return 0;
  dim3 g(blocks_for(a->P * a->B)), b(THREADS);
  MT_GPU_DISPATCH_ALL(a->dtype, T, mt_launch(advanced_kernel<T>, g, b, 0, stream, *a))
  return 0;
}

/* ---------------------------------------------------------------- rearranging gathers */
/* out (contiguous) [i0, i1, ...] = src[maps[0][i0] + maps[1][i1] + ...]; maps concatenated, dim d's at
 * map_at[d] */
template <typename W> __global__ void rearrange_kernel(mt_gpu_rearrange r) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < r.numel; i += step) {
    int64_t off = 0, q = i;
    for (int d = r.ndim - 1; d >= 0; d--) {
      int64_t s = r.sizes[d], c = q % s;
      q /= s;
      off += r.maps[r.map_at[d] + c];
    }
    ((W *)r.out)[i] = ((const W *)r.src)[off];
  }
}
static int rearrange(const mt_gpu_rearrange *r, void *stream) {
  if (r->numel == 0) return 0;
  dim3 g(blocks_for(r->numel)), b(THREADS);
  switch (mt_gpu_itemsize(r->dtype)) {
  case 1: mt_launch(rearrange_kernel<uint8_t>, g, b, 0, stream, *r); return 0;
  case 2: mt_launch(rearrange_kernel<uint16_t>, g, b, 0, stream, *r); return 0;
  case 4: mt_launch(rearrange_kernel<uint32_t>, g, b, 0, stream, *r); return 0;
  default: mt_launch(rearrange_kernel<uint64_t>, g, b, 0, stream, *r); return 0;
  }
}

/* ---------------------------------------------------------------- one_hot */
/* out (n x classes, int64, zeroed) gets 1 at each index's class */
__global__ void one_hot_kernel(int64_t *out, const int64_t *index, int64_t n, int64_t classes, int64_t base) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t c = index[i] - base;
    if (c >= 0 && c < classes) out[i * classes + c] = 1;
  }
}
static int one_hot(int64_t *out, const int64_t *index, int64_t n, int64_t classes, int64_t base, void *stream) {
  if (n == 0) return 0;
  mt_launch(one_hot_kernel, dim3(blocks_for(n)), dim3(THREADS), 0, stream, out, index, n, classes, base);
  return 0;
}

/* ---------------------------------------------------------------- sorting */
/* keys: a dtype's values as double (floats; NaN the largest) or int64 (integers and bool) */
template <typename K> MT_DEV bool before(K x, K y, int desc);
template <> MT_DEV bool before<int64_t>(int64_t x, int64_t y, int desc) { return desc ? x > y : x < y; }
template <> MT_DEV bool before<double>(double x, double y, int desc) {
  return desc ? (x > y || (x != x && y == y)) : (x < y || (y != y && x == x));
}
template <typename T, typename K> MT_DEV K key_of(const T *p);
template <> MT_DEV double key_of<float, double>(const float *p) { return *p; }
template <> MT_DEV double key_of<double, double>(const double *p) { return *p; }
template <> MT_DEV double key_of<half_t, double>(const half_t *p) { return half_to_float(p->bits); }
template <> MT_DEV double key_of<bf16_t, double>(const bf16_t *p) { return bf16_to_float(p->bits); }
template <> MT_DEV int64_t key_of<uint8_t, int64_t>(const uint8_t *p) { return *p; }
template <> MT_DEV int64_t key_of<int8_t, int64_t>(const int8_t *p) { return *p; }
template <> MT_DEV int64_t key_of<int16_t, int64_t>(const int16_t *p) { return *p; }
template <> MT_DEV int64_t key_of<int32_t, int64_t>(const int32_t *p) { return *p; }
template <> MT_DEV int64_t key_of<int64_t, int64_t>(const int64_t *p) { return *p; }
template <> MT_DEV int64_t key_of<bool_t, int64_t>(const bool_t *p) { return p->v; }

/* A block per line: the keys and positions into the scratch, then merge passes of widths 1, 2, 4, ...
 * (each element finds its place in the merged run by a binary search in the other run: stable), then
 * the first k values and positions out. Line l of the input: element j at in_off(l) + j * stride. */
template <typename T, typename K> __global__ void sort_kernel(mt_gpu_sort s) {
  for (int64_t line = blockIdx.x; line < s.lines; line += gridDim.x) {
    int64_t outer = line / s.inner, inner = line - outer * s.inner;
    const T *in = (const T *)s.in + outer * s.in_outer + inner * s.in_inner;
    K *ka = (K *)s.keys + line * 2 * s.n, *kb = ka + s.n;
    int64_t *pa = s.perm + line * 2 * s.n, *pb = pa + s.n;
    for (int64_t j = threadIdx.x; j < s.n; j += blockDim.x) {
      ka[j] = key_of<T, K>(in + j * s.stride);
      pa[j] = j;
    }
    __syncthreads();
    for (int64_t w = 1; w < s.n; w *= 2) {
      for (int64_t j = threadIdx.x; j < s.n; j += blockDim.x) {
        int64_t lo = j / (2 * w) * (2 * w), mid = lo + w < s.n ? lo + w : s.n, hi = lo + 2 * w < s.n ? lo + 2 * w : s.n;
        K x = ka[j];
        int64_t at;
        if (j < mid) { /* from the left run: after the right run's elements strictly before it */
          int64_t a = mid, b = hi;
          while (a < b) {
            int64_t m = a + (b - a) / 2;
            if (before(ka[m], x, s.desc)) a = m + 1;
            else b = m;
          }
          at = lo + (j - lo) + (a - mid);
        } else { /* from the right run: after the left run's elements not after it */
          int64_t a = lo, b = mid;
          while (a < b) {
            int64_t m = a + (b - a) / 2;
            if (!before(x, ka[m], s.desc)) a = m + 1;
            else b = m;
          }
          at = lo + (j - mid) + (a - lo);
        }
        kb[at] = x;
        pb[at] = pa[j];
      }
      __syncthreads();
      K *tk = ka;
      ka = kb;
      kb = tk;
      int64_t *tp = pa;
      pa = pb;
      pb = tp;
    }
    /* the sorted line is in ka/pa: the first k out (values and indices contiguous: outer x k x inner) */
    for (int64_t j = threadIdx.x; j < s.k; j += blockDim.x) {
      int64_t o = (outer * s.k + j) * s.inner + inner;
      if (s.values) ((T *)s.values)[o] = in[pa[j] * s.stride];
      if (s.indices) s.indices[o] = pa[j] + s.base;
    }
    if (s.sorted_perm) { /* unique: the whole sorted line's positions and keys */
      for (int64_t j = threadIdx.x; j < s.n; j += blockDim.x) {
        s.sorted_perm[j] = pa[j];
        ((K *)s.sorted_keys)[j] = ka[j];
      }
    }
    __syncthreads();
  }
}
template <typename T, typename K> static void launch_sort(const mt_gpu_sort *s, void *stream) {
  unsigned g = (unsigned)(s->lines < max_blocks ? s->lines : max_blocks);
  mt_launch(sort_kernel<T, K>, dim3(g), dim3(THREADS), 0, stream, *s);
}
static int sort(const mt_gpu_sort *s, void *stream) {
  if (s->lines == 0 || s->n == 0) return 0;
  switch (s->dtype) {
  case MT_FLOAT32: launch_sort<float, double>(s, stream); return 0;
  case MT_FLOAT64: launch_sort<double, double>(s, stream); return 0;
  case MT_FLOAT16: launch_sort<half_t, double>(s, stream); return 0;
  case MT_BFLOAT16: launch_sort<bf16_t, double>(s, stream); return 0;
  case MT_UINT8: launch_sort<uint8_t, int64_t>(s, stream); return 0;
  case MT_INT8: launch_sort<int8_t, int64_t>(s, stream); return 0;
  case MT_INT16: launch_sort<int16_t, int64_t>(s, stream); return 0;
  case MT_INT32: launch_sort<int32_t, int64_t>(s, stream); return 0;
  case MT_INT64: launch_sort<int64_t, int64_t>(s, stream); return 0;
  case MT_BOOL: launch_sort<bool_t, int64_t>(s, stream); return 0;
  default: return -1;
  }
}

/* searchsorted: lines of m sorted boundaries (contiguous), `per` values a line (contiguous), out int64 */
template <typename B, typename V, typename K>
__global__ void searchsorted_kernel(const B *bnd, const V *val, int64_t *out, int64_t lines, int64_t m, int64_t per,
                                    int right, int64_t base) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < lines * per; i += step) {
    int64_t L = i / per;
    const B *b = bnd + L * m;
    K x = (K)dtype_of<V>::load(val[i]);
    int64_t lo = 0, hi = m;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      K k = (K)dtype_of<B>::load(b[mid]);
      if (right ? !(k > x) : !(k >= x)) lo = mid + 1;
      else hi = mid;
    }
    out[i] = lo + base;
  }
}
template <typename B, typename K>
static int searchsorted_v(const mt_gpu_search *s, void *stream) {
  dim3 g(blocks_for(s->lines * s->per)), b(THREADS);
  MT_GPU_DISPATCH_ALL(s->values_dtype, V,
                      mt_launch(searchsorted_kernel<B, V, K>, g, b, 0, stream, (const B *)s->sorted, (const V *)s->values,
                                s->out, s->lines, s->m, s->per, s->right, s->base))
  return 0;
}
static int searchsorted(const mt_gpu_search *s, void *stream) {
  if (s->lines * s->per == 0) return 0;
  if (s->ints) {
    MT_GPU_DISPATCH_ALL(s->sorted_dtype, B, return searchsorted_v<B, int64_t>(s, stream))
  } else {
    MT_GPU_DISPATCH_ALL(s->sorted_dtype, B, return searchsorted_v<B, double>(s, stream))
  }
  return 0;
}

/* bincount: out (zeroed, int64 / float32 / float64) += 1 or the weight at each value (checked >= 0) */
template <typename T, typename W>
__global__ void bincount_kernel(const T *x, int64_t xs, const W *w, int64_t ws, char *out, int odt, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t v = (int64_t)dtype_of<T>::load(x[i * xs]);
    if (odt == MT_INT64) atomicAdd((unsigned long long *)out + v, 1ull);
    else if (odt == MT_FLOAT32) atomicAdd((float *)out + v, (float)(double)dtype_of<W>::load(w[i * ws]));
    else atomicAdd((double *)out + v, (double)dtype_of<W>::load(w[i * ws]));
  }
}
template <typename T> static int bincount_w(const mt_gpu_bincount *c, void *stream) {
  dim3 g(blocks_for(c->n)), b(THREADS);
  if (!c->weights) {
    mt_launch(bincount_kernel<T, float>, g, b, 0, stream, (const T *)c->x, c->xs, (const float *)nullptr, (int64_t)0,
              c->out, c->out_dtype, c->n);
    return 0;
  }
  MT_GPU_DISPATCH_ALL(c->weights_dtype, W,
                      mt_launch(bincount_kernel<T, W>, g, b, 0, stream, (const T *)c->x, c->xs, (const W *)c->weights,
                                c->ws, c->out, c->out_dtype, c->n))
  return 0;
}
static int bincount(const mt_gpu_bincount *c, void *stream) {
  if (c->n == 0) return 0;
  MT_GPU_DISPATCH_ALL(c->x_dtype, T, return bincount_w<T>(c, stream))
  return 0;
}

int launch_indexed(const mt_gpu_indexed *x, void *stream) { return indexed(x, stream); }
int launch_masked_fill(const mt_gpu_iter *it, void *stream) { return masked_fill(it, stream); }
int launch_scan(const mt_gpu_scan *s, int64_t *chunks, int phase, void *stream) { return scan(s, chunks, phase, stream); }
int launch_advanced(const mt_gpu_advanced *a, void *stream) { return advanced(a, stream); }
int launch_rearrange(const mt_gpu_rearrange *r, void *stream) { return rearrange(r, stream); }
int launch_one_hot(int64_t *out, const int64_t *index, int64_t n, int64_t classes, int64_t base, void *stream) {
  return one_hot(out, index, n, classes, base, stream);
}
int launch_sort(const mt_gpu_sort *s, void *stream) { return sort(s, stream); }
int launch_searchsorted(const mt_gpu_search *s, void *stream) { return searchsorted(s, stream); }
int launch_bincount(const mt_gpu_bincount *c, void *stream) { return bincount(c, stream); }

} // namespace MT_GPU_NS
