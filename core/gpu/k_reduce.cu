/* k_reduce.cu -- the CUDA backend's reductions: one generic reduction kernel (a pass is a transform and a
 * combiner, as in the CPU's reduce.c: sum, product, max, min, and, or over x, |x|, x^2, |x|^p, (x - c)^2,
 * exp(x - c)) that sums in double (float inputs) or int64 (integer results) as the CPU does, run with a
 * block, a warp or a thread per output as the sizes ask; the line kernels along one dim (max/min with
 * their index, cumsum/cumprod, softmax and log_softmax, their fused backward), a warp per line. */
#include "math.cuh"

namespace MT_GPU_NS {

enum { F_ID, F_NONZERO, F_NAN0, F_ABS, F_SQ, F_POWP, F_SQDEV, F_EXPDEV };
enum { C_ADD, C_MUL, C_MAX, C_MIN, C_AND, C_OR };

MT_DEV double ident_d(int c, int f) {
  switch (c) {
  case C_MUL: return 1;
  case C_MAX: return f == F_ABS ? 0 : -(double)INFINITY;
  case C_MIN: return (double)INFINITY;
  case C_AND: return 1;
  default: return 0;
  }
}
MT_DEV int64_t ident_i(int c) {
  switch (c) {
  case C_MUL: return 1;
  case C_MAX: return INT64_MIN;
  case C_MIN: return INT64_MAX;
  case C_AND: return 1;
  default: return 0;
  }
}
/* the CPU's combiners: a NaN wins max and min */
MT_DEV double comb_d(int c, double a, double b) {
  switch (c) {
  case C_ADD: return a + b;
  case C_MUL: return a * b;
  case C_MAX: return (a != a) ? a : ((b != b || b > a) ? b : a);
  case C_MIN: return (a != a) ? a : ((b != b || b < a) ? b : a);
  case C_AND: return (double)(a != 0 && b != 0);
  default: return (double)(a != 0 || b != 0);
  }
}
MT_DEV int64_t comb_i(int c, int64_t a, int64_t b) {
  switch (c) {
  case C_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
  case C_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
  case C_MAX: return b > a ? b : a;
  case C_MIN: return b < a ? b : a;
  case C_AND: return a != 0 && b != 0;
  default: return a != 0 || b != 0;
  }
}
MT_DEV double xform_d(int f, double x, double p, double c) {
  switch (f) {
  case F_NONZERO: return x != 0;
  case F_NAN0: return x != x ? 0 : x;
  case F_ABS: return fabs(x);
  case F_SQ: return x * x;
  case F_POWP: return pow(fabs(x), p);
  case F_SQDEV: {
    double d = x - c;
    return d * d;
  }
  case F_EXPDEV: return exp(x - c);
  default: return x;
  }
}

/* a value of any dtype as double / int64 (the CPU's load_d, load_i) and a double / int64 stored as a dtype */
template <typename T> MT_DEV double ld(const T *p) { return (double)dtype_of<T>::load(*p); }
template <typename T> MT_DEV int64_t ldi(const T *p) { return (int64_t)dtype_of<T>::load(*p); }
MT_DEV void store_double(int dt, char *p, double v) {
  switch (dt) {
  case MT_UINT8: *(uint8_t *)p = convert_to<uint8_t>::from(v); break;
  case MT_INT8: *(int8_t *)p = convert_to<int8_t>::from(v); break;
  case MT_INT16: *(int16_t *)p = convert_to<int16_t>::from(v); break;
  case MT_INT32: *(int32_t *)p = convert_to<int32_t>::from(v); break;
  case MT_INT64: *(int64_t *)p = convert_to<int64_t>::from(v); break;
  case MT_FLOAT16: *(half_t *)p = convert_to<half_t>::from(v); break;
  case MT_FLOAT32: *(float *)p = (float)v; break;
  case MT_FLOAT64: *(double *)p = v; break;
  case MT_BOOL: *(bool_t *)p = convert_to<bool_t>::from(v); break;
  case MT_BFLOAT16: *(bf16_t *)p = convert_to<bf16_t>::from(v); break;
  default: break;
  }
}
MT_DEV void store_int(int dt, char *p, int64_t v) {
  switch (dt) {
  case MT_UINT8: *(uint8_t *)p = (uint8_t)v; break;
  case MT_INT8: *(int8_t *)p = (int8_t)v; break;
  case MT_INT16: *(int16_t *)p = (int16_t)v; break;
  case MT_INT32: *(int32_t *)p = (int32_t)v; break;
  case MT_INT64: *(int64_t *)p = v; break;
  case MT_FLOAT16: *(half_t *)p = convert_to<half_t>::from(v); break;
  case MT_FLOAT32: *(float *)p = (float)v; break;
  case MT_FLOAT64: *(double *)p = (double)v; break;
  case MT_BOOL: *(bool_t *)p = convert_to<bool_t>::from(v); break;
  case MT_BFLOAT16: *(bf16_t *)p = convert_to<bf16_t>::from(v); break;
  default: break;
  }
}

/* ---------------------------------------------------------------- combining across threads */
template <typename A> struct combiner;
template <> struct combiner<double> {
  static MT_DEV double comb(int c, double a, double b) { return comb_d(c, a, b); }
};
template <> struct combiner<int64_t> {
  static MT_DEV int64_t comb(int c, int64_t a, int64_t b) { return comb_i(c, a, b); }
};
template <typename A> MT_DEV A warp_reduce(int c, A v) {
  for (int d = 16; d > 0; d >>= 1) v = combiner<A>::comb(c, v, __shfl_down_sync(0xffffffffu, v, d));
  return v;
}
/* every thread of the block gets the block's result (blockDim.x a multiple of 32) */
template <typename A> MT_DEV A block_reduce(int c, A v, A *scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_reduce(c, v);
  if (nw == 1) return __shfl_sync(0xffffffffu, v, 0);
  __syncthreads(); /* scratch may hold a previous reduction's values */
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < nw; w++) v = combiner<A>::comb(c, v, scratch[w]);
  return v;
}

/* ---------------------------------------------------------------- the reduction */
/* one pass over output o's inner elements by the threads [t0, t0 + nt) of a group */
template <typename T>
MT_DEV double pass_d(const mt_gpu_reduce &r, const T *in, int f, int c, double p, double center, int64_t t0,
                     int64_t nt) {
  double acc = ident_d(c, f);
  for (int64_t i = t0; i < r.inner; i += nt)
    acc = comb_d(c, acc, xform_d(f, ld(in + geo_offset(r.indim, r.isizes, r.istrides, i)), p, center));
  return acc;
}
template <typename T>
MT_DEV int64_t pass_i(const mt_gpu_reduce &r, const T *in, int f, int c, int64_t t0, int64_t nt) {
  int64_t acc = ident_i(c);
  for (int64_t i = t0; i < r.inner; i += nt) {
    int64_t x = ldi(in + geo_offset(r.indim, r.isizes, r.istrides, i));
    if (f == F_NONZERO) x = x != 0;
    acc = comb_i(c, acc, x);
  }
  return acc;
}

MT_DEV void first_pass(const mt_gpu_reduce &r, int *f, int *c) {
  *f = F_ID;
  *c = C_ADD;
  switch (r.op) {
  case MT_OP_PROD: *c = C_MUL; break;
  case MT_OP_AMAX: *c = C_MAX; break;
  case MT_OP_AMIN: *c = C_MIN; break;
  case MT_OP_ALL: *f = F_NONZERO; *c = C_AND; break;
  case MT_OP_ANY: *f = F_NONZERO; *c = C_OR; break;
  case MT_OP_COUNT_NONZERO: *f = F_NONZERO; break;
  case MT_OP_NANSUM: if (!r.is_int) *f = F_NAN0; break;
  case MT_OP_LOGSUMEXP: *c = C_MAX; break;
  case MT_OP_NORM: {
    double p = r.p;
    if (p == 0) *f = F_NONZERO;
    else if (p == 1) *f = F_ABS;
    else if (p == 2) *f = F_SQ;
    else if (p == (double)INFINITY) { *f = F_ABS; *c = C_MAX; }
    else if (p == -(double)INFINITY) { *f = F_ABS; *c = C_MIN; }
    else *f = F_POWP;
    break;
  }
  default: break;
  }
}

/* Group g of the launch (a block, a warp of a block, or one thread) reduces output o: `lead` is its
 * thread 0, t0/nt its threads; REDUCE combines a value across the group. */
template <typename T, typename GroupReduceD, typename GroupReduceI>
MT_DEV void reduce_output(const mt_gpu_reduce &r, int64_t o, int64_t t0, int64_t nt, bool lead, GroupReduceD red_d,
                          GroupReduceI red_i) {
  const T *in = (const T *)r.in + geo_offset(r.ondim, r.osizes, r.ostrides_in, o);
  char *out = r.out + geo_offset(r.ondim, r.osizes, r.ostrides_out, o) * (int64_t)mt_gpu_itemsize(r.out_dtype);
  int f, c;
  first_pass(r, &f, &c);
  if (r.is_int) {
    int64_t v = red_i(c, pass_i(r, in, f, c, t0, nt));
    if (lead) store_int(r.out_dtype, out, v);
    return;
  }
  double n = (double)r.inner;
  double v = red_d(c, pass_d(r, in, f, c, r.p, 0, t0, nt));
  switch (r.op) {
  case MT_OP_MEAN: v = v / n; break;
  case MT_OP_VAR:
  case MT_OP_STD: {
    double mean = v / n;
    double m2 = red_d(C_ADD, pass_d(r, in, F_SQDEV, C_ADD, 0, mean, t0, nt));
    double dof = n - r.p;
    if (dof < 0) dof = 0;
    v = m2 / dof;
    if (r.op == MT_OP_STD) v = sqrt(v);
    break;
  }
  case MT_OP_NORM: {
    double p = r.p;
    if (r.inner == 0) v = 0;
    else if (p == 2) v = sqrt(v);
    else if (p != 0 && p != 1 && !m_isinf(p)) v = pow(v, 1.0 / p);
    break;
  }
  case MT_OP_LOGSUMEXP: {
    double cc = m_isinf(v) ? 0 : v;
    v = log(red_d(C_ADD, pass_d(r, in, F_EXPDEV, C_ADD, 0, cc, t0, nt))) + cc;
    break;
  }
  default: break;
  }
  if (lead) store_double(r.out_dtype, out, v);
}

struct thread_red_d {
  MT_DEV double operator()(int, double v) const { return v; }
};
struct thread_red_i {
  MT_DEV int64_t operator()(int, int64_t v) const { return v; }
};
struct warp_red_d {
  MT_DEV double operator()(int c, double v) const { return __shfl_sync(0xffffffffu, warp_reduce(c, v), 0); }
};
struct warp_red_i {
  MT_DEV int64_t operator()(int c, int64_t v) const { return __shfl_sync(0xffffffffu, warp_reduce(c, v), 0); }
};
struct block_red_d {
  double *scratch;
  MT_DEV double operator()(int c, double v) const { return block_reduce(c, v, scratch); }
};
struct block_red_i {
  int64_t *scratch;
  MT_DEV int64_t operator()(int c, int64_t v) const { return block_reduce(c, v, scratch); }
};

/* a thread per output */
template <typename T> __global__ void reduce_thread_kernel(mt_gpu_reduce r) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < r.outer; o += step)
    reduce_output<T>(r, o, 0, 1, true, thread_red_d{}, thread_red_i{});
}
/* a warp per output (every lane of a warp stays in the loop together: the shuffles need them all) */
template <typename T> __global__ void reduce_warp_kernel(mt_gpu_reduce r) {
  const int64_t wpb = blockDim.x >> 5, lane = threadIdx.x & 31;
  const int64_t step = (int64_t)gridDim.x * wpb;
  for (int64_t o = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); o < r.outer; o += step)
    reduce_output<T>(r, o, lane, 32, lane == 0, warp_red_d{}, warp_red_i{});
}
/* a block per output */
template <typename T> __global__ void reduce_block_kernel(mt_gpu_reduce r) {
  __shared__ double sd[32];
  __shared__ int64_t si[32];
  for (int64_t o = blockIdx.x; o < r.outer; o += gridDim.x)
    reduce_output<T>(r, o, threadIdx.x, blockDim.x, threadIdx.x == 0, block_red_d{sd}, block_red_i{si});
}

template <typename T> static void launch_reduce(const mt_gpu_reduce *r, void *stream) {
  if (r->inner >= 2048 && r->outer < 4 * max_blocks) {
    mt_launch(reduce_block_kernel<T>, dim3((unsigned)(r->outer < max_blocks ? r->outer : max_blocks)), dim3(THREADS), 0,
              stream, *r);
  } else if (r->inner >= 32) {
    int64_t blocks = (r->outer + 7) / 8;
    mt_launch(reduce_warp_kernel<T>, dim3((unsigned)(blocks < max_blocks ? blocks : max_blocks)), dim3(THREADS), 0,
              stream, *r);
  } else {
    mt_launch(reduce_thread_kernel<T>, dim3(blocks_for(r->outer)), dim3(THREADS), 0, stream, *r);
  }
}

static int reduce(const mt_gpu_reduce *r, void *stream) {
  if (r->outer == 0) return 0;
  MT_GPU_DISPATCH_ALL(r->in_dtype, T, launch_reduce<T>(r, stream))
  return 0;
}

/* ---------------------------------------------------------------- lines: a warp per line */
MT_DEV int64_t line_offset(const mt_gpu_lines &l, int k, int64_t line) {
  return geo_offset(l.ndim, l.sizes, l.strides[k], line);
}

/* max/min with the index of the first extreme (the first NaN, if any): operands values (NULL: none),
 * indices (int64), input */
template <typename T> __global__ void reduce_index_kernel(mt_gpu_lines l, int is_min, int64_t base) {
  const int64_t wpb = blockDim.x >> 5, lane = threadIdx.x & 31;
  const int64_t step = (int64_t)gridDim.x * wpb;
  for (int64_t line = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); line < l.lines; line += step) {
    const T *in = (const T *)l.data[2] + line_offset(l, 2, line);
    /* each lane: its own extreme (first NaN, else first best) over its elements, then across lanes */
    double best = 0;
    int64_t bi = -1;
    bool nan = false;
    for (int64_t j = lane; j < l.n; j += 32) {
      double v = ld(in + j * l.stride[2]);
      if (v != v) {
        if (!nan) {
          nan = true;
          bi = j;
        }
        continue;
      }
      if (nan) continue;
      if (bi < 0 || (is_min ? v < best : v > best)) {
        best = v;
        bi = j;
      }
    }
    for (int d = 16; d > 0; d >>= 1) {
      double ob = __shfl_down_sync(0xffffffffu, best, d);
      int64_t oi = __shfl_down_sync(0xffffffffu, bi, d);
      int onan = __shfl_down_sync(0xffffffffu, (int)nan, d);
      bool take = false;
      if (oi >= 0) {
        if (onan) take = !nan || oi < bi;
        else if (!nan) take = bi < 0 || (is_min ? ob < best : ob > best) || (ob == best && oi < bi);
      }
      if (take) {
        best = ob;
        bi = oi;
        nan = onan != 0;
      }
    }
    if (lane == 0) {
      if (bi < 0) bi = 0;
      if (l.data[0]) *((T *)l.data[0] + line_offset(l, 0, line)) = in[bi * l.stride[2]];
      *((int64_t *)l.data[1] + line_offset(l, 1, line)) = bi + base;
    }
  }
}
static int reduce_index(const mt_gpu_lines *l, int is_min, int64_t base, void *stream) {
  if (l->lines == 0 || l->n == 0) return 0;
  int64_t blocks = (l->lines + 7) / 8;
  dim3 g((unsigned)(blocks < max_blocks ? blocks : max_blocks)), b(THREADS);
  MT_GPU_DISPATCH_ALL(l->dtype[2], T, mt_launch(reduce_index_kernel<T>, g, b, 0, stream, *l, is_min, base))
  return 0;
}

/* cumsum / cumprod: a thread per line, in order (the CPU's sums: double for floats, int64 wrapping) */
template <typename T> __global__ void cumulative_kernel(mt_gpu_lines l, int is_prod, int is_int) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t line = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; line < l.lines; line += step) {
    const T *in = (const T *)l.data[1] + line_offset(l, 1, line);
    char *out = l.data[0] + line_offset(l, 0, line) * mt_gpu_itemsize(l.dtype[0]);
    const int64_t so = l.stride[0] * mt_gpu_itemsize(l.dtype[0]);
    if (is_int) {
      uint64_t acc = is_prod ? 1 : 0;
      for (int64_t j = 0; j < l.n; j++) {
        uint64_t x = (uint64_t)ldi(in + j * l.stride[1]);
        acc = is_prod ? acc * x : acc + x;
        store_int(l.dtype[0], out + j * so, (int64_t)acc);
      }
    } else {
      double acc = is_prod ? 1 : 0;
      for (int64_t j = 0; j < l.n; j++) {
        double x = ld(in + j * l.stride[1]);
        acc = is_prod ? acc * x : acc + x;
        store_double(l.dtype[0], out + j * so, acc);
      }
    }
  }
}
static int cumulative(const mt_gpu_lines *l, int is_prod, void *stream) {
  if (l->lines == 0 || l->n == 0) return 0;
  int out_float = l->dtype[0] == MT_FLOAT32 || l->dtype[0] == MT_FLOAT64 || l->dtype[0] == MT_FLOAT16 ||
                  l->dtype[0] == MT_BFLOAT16;
  dim3 g(blocks_for(l->lines)), b(THREADS);
  MT_GPU_DISPATCH_ALL(l->dtype[1], T, mt_launch(cumulative_kernel<T>, g, b, 0, stream, *l, is_prod, !out_float))
  return 0;
}

/* softmax / log_softmax along a line, as the CPU's line kernel: the max (a NaN wins), the sum of
 * exponentials in double (expf for results other than float64), then the results */
template <typename T> __global__ void softmax_kernel(mt_gpu_lines l, int log_) {
  const int64_t wpb = blockDim.x >> 5, lane = threadIdx.x & 31;
  const int64_t step = (int64_t)gridDim.x * wpb;
  const bool f32 = l.dtype[0] != MT_FLOAT64;
  const int64_t so = l.stride[0] * mt_gpu_itemsize(l.dtype[0]);
  for (int64_t line = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); line < l.lines; line += step) {
    const T *in = (const T *)l.data[1] + line_offset(l, 1, line);
    char *out = l.data[0] + line_offset(l, 0, line) * mt_gpu_itemsize(l.dtype[0]);
    double m = -(double)INFINITY;
    for (int64_t j = lane; j < l.n; j += 32) m = comb_d(C_MAX, m, ld(in + j * l.stride[1]));
    m = __shfl_sync(0xffffffffu, warp_reduce(C_MAX, m), 0);
    double s = 0;
    for (int64_t j = lane; j < l.n; j += 32) {
      double x = ld(in + j * l.stride[1]);
      s += f32 ? (double)expf((float)(x - m)) : exp(x - m);
    }
    s = __shfl_sync(0xffffffffu, warp_reduce(C_ADD, s), 0);
    if (log_) {
      double ls = log(s);
      for (int64_t j = lane; j < l.n; j += 32) store_double(l.dtype[0], out + j * so, (ld(in + j * l.stride[1]) - m) - ls);
    } else {
      double inv = 1.0 / s;
      for (int64_t j = lane; j < l.n; j += 32) {
        double x = ld(in + j * l.stride[1]);
        double e = f32 ? (double)expf((float)(x - m)) : exp(x - m);
        store_double(l.dtype[0], out + j * so, e * inv);
      }
    }
  }
}
static int softmax(const mt_gpu_lines *l, int log_, void *stream) {
  if (l->lines == 0 || l->n == 0) return 0;
  int64_t blocks = (l->lines + 7) / 8;
  dim3 g((unsigned)(blocks < max_blocks ? blocks : max_blocks)), b(THREADS);
  MT_GPU_DISPATCH_ALL(l->dtype[1], T, mt_launch(softmax_kernel<T>, g, b, 0, stream, *l, log_))
  return 0;
}

/* the fused backward: gin, g, y of one float dtype (the CPU's: the sum in double, float32 results
 * with expf and the sum rounded to float) */
template <typename T> __global__ void softmax_backward_kernel(mt_gpu_lines l, int log_) {
  const int64_t wpb = blockDim.x >> 5, lane = threadIdx.x & 31;
  const int64_t step = (int64_t)gridDim.x * wpb;
  for (int64_t line = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); line < l.lines; line += step) {
    T *gi = (T *)l.data[0] + line_offset(l, 0, line);
    const T *g = (const T *)l.data[1] + line_offset(l, 1, line);
    const T *y = (const T *)l.data[2] + line_offset(l, 2, line);
    double s = 0;
    for (int64_t j = lane; j < l.n; j += 32)
      s += log_ ? (double)g[j * l.stride[1]] : (double)g[j * l.stride[1]] * (double)y[j * l.stride[2]];
    s = __shfl_sync(0xffffffffu, warp_reduce(C_ADD, s), 0);
    T sf = (T)s;
    for (int64_t j = lane; j < l.n; j += 32) {
      T gv = g[j * l.stride[1]], yv = y[j * l.stride[2]];
      gi[j * l.stride[0]] = log_ ? gv - m_exp(yv) * sf : yv * (gv - sf);
    }
  }
}
static int softmax_backward(const mt_gpu_lines *l, int log_, void *stream) {
  if (l->lines == 0 || l->n == 0) return 0;
  int64_t blocks = (l->lines + 7) / 8;
  dim3 g((unsigned)(blocks < max_blocks ? blocks : max_blocks)), b(THREADS);
  if (l->dtype[0] == MT_FLOAT32) mt_launch(softmax_backward_kernel<float>, g, b, 0, stream, *l, log_);
  else if (l->dtype[0] == MT_FLOAT64) mt_launch(softmax_backward_kernel<double>, g, b, 0, stream, *l, log_);
  else return -1;
  return 0;
}

int launch_reduce(const mt_gpu_reduce *r, void *stream) { return reduce(r, stream); }
int launch_reduce_index(const mt_gpu_lines *l, int is_min, int64_t base, void *stream) {
  return reduce_index(l, is_min, base, stream);
}
int launch_cumulative(const mt_gpu_lines *l, int is_prod, void *stream) { return cumulative(l, is_prod, stream); }
int launch_softmax(const mt_gpu_lines *l, int log_, void *stream) { return softmax(l, log_, stream); }
int launch_softmax_backward(const mt_gpu_lines *l, int log_, void *stream) {
  return softmax_backward(l, log_, stream);
}

} // namespace MT_GPU_NS
