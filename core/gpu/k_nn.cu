/* k_nn.cu -- the layers' kernels: layer norm and its backward (a warp per row, statistics in double; the
 * weight and bias gradients a thread per column over the rows), nll_loss and its backward, im2col and col2im
 * (a thread per column element; col2im gathers the taps that reach each image element, no atomics), max
 * pools (a thread per output, PyTorch's NaN rule), the linear resamplings and their adjoint, the pools'
 * index reads and writes, the LSTM's and GRU's gate steps and their backwards (a thread per gate element),
 * embedding_bag and its backward. Each computes what the CPU's kernel of the same slot computes. */
#include "math.cuh"

namespace MT_GPU_NS {

MT_DEV double warp_sum(double v) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  return __shfl_sync(0xffffffffu, v, 0);
}

/* ---------------------------------------------------------------- layer norm */
template <typename T> __global__ void ln_forward_kernel(mt_gpu_ln l) {
  const int64_t wpb = blockDim.x >> 5, lane = threadIdx.x & 31, step = (int64_t)gridDim.x * wpb;
  const T *w = (const T *)l.w, *b = (const T *)l.b;
  for (int64_t r = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); r < l.m; r += step) {
    const T *x = (const T *)l.x + r * l.n;
    T *y = (T *)l.out + r * l.n;
    double s = 0;
    for (int64_t i = lane; i < l.n; i += 32) s += (double)x[i];
    double mu = l.n ? warp_sum(s) / (double)l.n : 0;
    double q = 0;
    for (int64_t i = lane; i < l.n; i += 32) {
      double d = (double)x[i] - mu;
      q += d * d;
    }
    double v = l.n ? warp_sum(q) / (double)l.n : 0;
    double rs = 1.0 / sqrt(v + l.eps);
    const T tm = (T)mu, tr = (T)rs;
    for (int64_t i = lane; i < l.n; i += 32) {
      T o = (x[i] - tm) * tr;
      if (w) o = o * w[i];
      if (b) o = o + b[i];
      y[i] = o;
    }
    if (lane == 0) {
      if (l.mean) ((T *)l.mean)[r] = tm;
      if (l.rstd) ((T *)l.rstd)[r] = tr;
    }
  }
}
template <typename T> __global__ void ln_backward_kernel(mt_gpu_ln l) {
  const int64_t wpb = blockDim.x >> 5, lane = threadIdx.x & 31, step = (int64_t)gridDim.x * wpb;
  const T *w = (const T *)l.w;
  for (int64_t r = (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5); r < l.m; r += step) {
    const T *x = (const T *)l.x + r * l.n, *g = (const T *)l.g + r * l.n;
    const double mu = (double)((const T *)l.fmean)[r], rs = (double)((const T *)l.frstd)[r];
    const T trs = (T)rs, tm = (T)mu;
    double sg = 0, sgx = 0;
    for (int64_t i = lane; i < l.n; i += 32) {
      double gh = (double)g[i] * (w ? (double)w[i] : 1.0);
      sg += gh;
      sgx += gh * ((double)x[i] - mu);
    }
    sg = warp_sum(sg);
    sgx = warp_sum(sgx);
    const T a = (T)(sg / (double)l.n), k = (T)(sgx / (double)l.n * rs * rs);
    T *gx = (T *)l.gx + r * l.n;
    for (int64_t i = lane; i < l.n; i += 32) gx[i] = trs * ((w ? g[i] * w[i] : g[i]) - a - (x[i] - tm) * k);
  }
}
/* the weight and bias gradients: column i summed over the rows, in double */
template <typename T> __global__ void ln_params_kernel(mt_gpu_ln l) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < l.n; i += step) {
    double pw = 0, pb = 0;
    for (int64_t r = 0; r < l.m; r++) {
      const T g = ((const T *)l.g)[r * l.n + i], x = ((const T *)l.x)[r * l.n + i];
      const T tm = ((const T *)l.fmean)[r], trs = ((const T *)l.frstd)[r];
      pw += (double)(g * ((x - tm) * trs));
      pb += (double)g;
    }
    if (l.gw) ((T *)l.gw)[i] = (T)pw;
    if (l.gb) ((T *)l.gb)[i] = (T)pb;
  }
}
static int layer_norm(const mt_gpu_ln *l, int backward, void *stream) {
  if (l->m == 0) return 0;
  int64_t blocks = (l->m + 7) / 8;
  dim3 g((unsigned)(blocks < max_blocks ? blocks : max_blocks)), b(THREADS);
  bool d = l->dtype == MT_FLOAT64;
  if (l->dtype != MT_FLOAT32 && !d) return -1;
  if (!backward) {
    if (d) mt_launch(ln_forward_kernel<double>, g, b, 0, stream, *l);
    else mt_launch(ln_forward_kernel<float>, g, b, 0, stream, *l);
    return 0;
  }
  if (l->gx) {
    if (d) mt_launch(ln_backward_kernel<double>, g, b, 0, stream, *l);
    else mt_launch(ln_backward_kernel<float>, g, b, 0, stream, *l);
  }
  if ((l->gw || l->gb) && l->n) {
    dim3 gp(blocks_for(l->n));
    if (d) mt_launch(ln_params_kernel<double>, gp, b, 0, stream, *l);
    else mt_launch(ln_params_kernel<float>, gp, b, 0, stream, *l);
  }
  return 0;
}

/* ---------------------------------------------------------------- nll_loss */
enum { NLL_NONE = 0, NLL_MEAN = 1, NLL_SUM = 2 };
/* one block: per-row losses (reduction none), or the sums of the losses and of the weights */
template <typename T> __global__ void nll_forward_kernel(mt_gpu_nll l) {
  __shared__ double ss[32], st[32];
  const T *x = (const T *)l.x, *w = (const T *)l.w;
  T *out = (T *)l.out;
  double sum = 0, tw = 0;
  for (int64_t i = threadIdx.x; i < l.n; i += blockDim.x) {
    int64_t t = l.target[i];
    if (t == l.ignore) {
      if (l.reduction == NLL_NONE) out[i] = 0;
      continue;
    }
    if (t < l.base || t >= l.c + l.base) {
      raise_fault(l.fault, MT_GPU_FAULT_TARGET, MT_OP_NLL_LOSS, t, l.c, 0);
      continue;
    }
    double wt = w ? (double)w[t - l.base] : 1.0;
    double v = -wt * (double)x[i * l.c + (t - l.base)];
    if (l.reduction == NLL_NONE) out[i] = (T)v;
    sum += v;
    tw += wt;
  }
  sum = warp_sum(sum);
  tw = warp_sum(tw);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (lane == 0) {
    ss[warp] = sum;
    st[warp] = tw;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double S = 0, W = 0;
    for (int k = 0; k < nw; k++) {
      S += ss[k];
      W += st[k];
    }
    if (l.reduction == NLL_SUM) out[0] = (T)S;
    else if (l.reduction == NLL_MEAN) out[0] = (T)(S / W);
    *l.tw = W;
  }
}
/* gin (n x c) zeroed first; the target's entry of each row */
template <typename T> __global__ void nll_backward_kernel(mt_gpu_nll l) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const T *w = (const T *)l.w, *g = (const T *)l.g;
  T *gin = (T *)l.gin;
  double scale = l.reduction == NLL_MEAN ? 1.0 / l.total_weight : 1.0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < l.n; i += step) {
    int64_t t = l.target[i];
    if (t == l.ignore || t < l.base || t >= l.c + l.base) continue;
    double gi = l.reduction == NLL_NONE ? (double)g[i] : (double)g[0];
    double wt = w ? (double)w[t - l.base] : 1.0;
    gin[i * l.c + (t - l.base)] = (T)(-wt * gi * scale);
  }
}
static int nll(const mt_gpu_nll *l, int backward, void *stream) {
  bool d = l->dtype == MT_FLOAT64;
  if (l->dtype != MT_FLOAT32 && !d) return -1;
  if (!backward) {
    if (d) mt_launch(nll_forward_kernel<double>, dim3(1), dim3(THREADS), 0, stream, *l);
    else mt_launch(nll_forward_kernel<float>, dim3(1), dim3(THREADS), 0, stream, *l);
    return 0;
  }
  if (l->n == 0) return 0;
  dim3 g(blocks_for(l->n)), b(THREADS);
  if (d) mt_launch(nll_backward_kernel<double>, g, b, 0, stream, *l);
  else mt_launch(nll_backward_kernel<float>, g, b, 0, stream, *l);
  return 0;
}

/* ---------------------------------------------------------------- im2col, col2im */
template <typename T> __global__ void im2col_kernel(mt_gpu_conv c) {
  const int64_t K = c.k[0] * c.k[1] * c.k[2], L = c.out[0] * c.out[1] * c.out[2];
  const int64_t inplane = c.in[0] * c.in[1] * c.in[2], total = c.N * c.C * K * L;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t l = e % L, row = e / L, kidx = row % K, plane = row / K;
    int64_t kw = kidx % c.k[2], kh = (kidx / c.k[2]) % c.k[1], kd = kidx / (c.k[2] * c.k[1]);
    int64_t ow = l % c.out[2], oh = (l / c.out[2]) % c.out[1], od = l / (c.out[2] * c.out[1]);
    int64_t id = od * c.s[0] - c.p[0] + kd * c.d[0], ih = oh * c.s[1] - c.p[1] + kh * c.d[1],
            iw = ow * c.s[2] - c.p[2] + kw * c.d[2];
    T v = T();
    if (id >= 0 && id < c.in[0] && ih >= 0 && ih < c.in[1] && iw >= 0 && iw < c.in[2])
      v = ((const T *)c.image)[plane * inplane + (id * c.in[1] + ih) * c.in[2] + iw];
    ((T *)c.cols)[e] = v;
  }
}
/* image element (plane, id, ih, iw): the sum, in the CPU's order (kernel taps in order), of the columns'
 * entries of every block whose tap lands on it */
template <typename T> __global__ void col2im_kernel(mt_gpu_conv c) {
  const int64_t K = c.k[0] * c.k[1] * c.k[2], L = c.out[0] * c.out[1] * c.out[2];
  const int64_t inplane = c.in[0] * c.in[1] * c.in[2], total = c.N * c.C * inplane;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t plane = e / inplane, r = e % inplane;
    int64_t iw = r % c.in[2], ih = (r / c.in[2]) % c.in[1], id = r / (c.in[2] * c.in[1]);
    const T *col = (const T *)c.cols + plane * K * L;
    T acc = T();
    for (int64_t kd = 0; kd < c.k[0]; kd++) {
      int64_t td = id + c.p[0] - kd * c.d[0];
      if (td < 0 || td % c.s[0]) continue;
      int64_t od = td / c.s[0];
      if (od >= c.out[0]) continue;
      for (int64_t kh = 0; kh < c.k[1]; kh++) {
        int64_t th = ih + c.p[1] - kh * c.d[1];
        if (th < 0 || th % c.s[1]) continue;
        int64_t oh = th / c.s[1];
        if (oh >= c.out[1]) continue;
        for (int64_t kw = 0; kw < c.k[2]; kw++) {
          int64_t tw = iw + c.p[2] - kw * c.d[2];
          if (tw < 0 || tw % c.s[2]) continue;
          int64_t ow = tw / c.s[2];
          if (ow >= c.out[2]) continue;
          acc += col[((kd * c.k[1] + kh) * c.k[2] + kw) * L + (od * c.out[1] + oh) * c.out[2] + ow];
        }
      }
    }
    ((T *)c.image)[e] = acc;
  }
}
static int conv(const mt_gpu_conv *c, int col2im, void *stream) {
  int64_t K = c->k[0] * c->k[1] * c->k[2], L = c->out[0] * c->out[1] * c->out[2];
  int64_t total = col2im ? c->N * c->C * c->in[0] * c->in[1] * c->in[2] : c->N * c->C * K * L;
  if (total == 0) return 0;
  dim3 g(blocks_for(total)), b(THREADS);
  bool d = c->dtype == MT_FLOAT64;
  if (c->dtype != MT_FLOAT32 && !d) return -1;
  if (col2im) {
    if (d) mt_launch(col2im_kernel<double>, g, b, 0, stream, *c);
    else mt_launch(col2im_kernel<float>, g, b, 0, stream, *c);
  } else {
    if (d) mt_launch(im2col_kernel<double>, g, b, 0, stream, *c);
    else mt_launch(im2col_kernel<float>, g, b, 0, stream, *c);
  }
  return 0;
}

/* ---------------------------------------------------------------- max pools */
template <typename T> __global__ void pool_max_kernel(mt_gpu_pool p) {
  const int64_t O0 = p.out[0], O1 = p.out[1], O2 = p.out[2], oplane = O0 * O1 * O2;
  const int64_t S1 = p.in[1], S2 = p.in[2], plane = p.in[0] * S1 * S2, total = p.P * oplane;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t pl = e / oplane, r = e % oplane;
    int64_t c = r % O2, b = (r / O2) % O1, a = r / (O2 * O1);
    const T *x = (const T *)p.x + pl * plane;
    T m = T();
    int64_t mi = -1;
    for (int64_t k0 = 0; k0 < p.count[0][a]; k0++) {
      int64_t i0 = p.start[0][a] + k0 * p.step[0];
      for (int64_t k1 = 0; k1 < p.count[1][b]; k1++) {
        int64_t i1 = p.start[1][b] + k1 * p.step[1];
        for (int64_t k2 = 0; k2 < p.count[2][c]; k2++) {
          int64_t pos = (i0 * S1 + i1) * S2 + p.start[2][c] + k2 * p.step[2];
          T v = x[pos];
          if (mi < 0 || v > m || v != v) {
            m = v;
            mi = pos;
          }
        }
      }
    }
    ((T *)p.v)[e] = m;
    if (p.idx) p.idx[e] = mi + p.base;
  }
}
static int pool_max(const mt_gpu_pool *p, void *stream) {
  int64_t total = p->P * p->out[0] * p->out[1] * p->out[2];
  if (total == 0) return 0;
  dim3 g(blocks_for(total)), b(THREADS);
  if (p->dtype == MT_FLOAT64) mt_launch(pool_max_kernel<double>, g, b, 0, stream, *p);
  else if (p->dtype == MT_FLOAT32) mt_launch(pool_max_kernel<float>, g, b, 0, stream, *p);
  else return -1;
  return 0;
}

/* ---------------------------------------------------------------- linear resamplings */
/* out[a, b, c] = sum over taps of (w0 scale) w1 w2 x[...], in the CPU's grouping (zero weights skipped) */
template <typename T> __global__ void resample_kernel(mt_gpu_resample t) {
  const int64_t S1 = t.in[1], S2 = t.in[2], plane = t.in[0] * S1 * S2;
  const int64_t O0 = t.out[0], O1 = t.out[1], O2 = t.out[2], oplane = O0 * O1 * O2, total = t.P * oplane;
  const int n0 = t.ntaps[0], n1 = t.ntaps[1], n2 = t.ntaps[2];
  const T scale = (T)t.scale;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t p = e / oplane, r = e % oplane;
    int64_t c = r % O2, b = (r / O2) % O1, a = r / (O2 * O1);
    const T *x = (const T *)t.x + p * plane;
    T acc = 0;
    for (int k0 = 0; k0 < n0; k0++) {
      T c0 = (T)t.weight[0][a * n0 + k0] * scale;
      if (c0 == 0) continue;
      for (int k1 = 0; k1 < n1; k1++) {
        T c01 = c0 * (T)t.weight[1][b * n1 + k1];
        if (c01 == 0) continue;
        const T *xr = x + (t.index[0][a * n0 + k0] * S1 + t.index[1][b * n1 + k1]) * S2;
        if (n2 == 1) {
          acc += c01 * (T)t.weight[2][c] * xr[t.index[2][c]];
        } else if (t.box) {
          const T *xc = xr + t.index[2][c * n2];
          const double *wc = t.weight[2] + c * n2;
          T s = 0;
          for (int k2 = 0; k2 < n2 && wc[k2] != 0; k2++) s += xc[k2];
          acc += c01 * (T)wc[0] * s;
        } else {
          T s = 0;
          for (int k2 = 0; k2 < n2; k2++) s += (T)t.weight[2][c * n2 + k2] * xr[t.index[2][c * n2 + k2]];
          acc += c01 * s;
        }
      }
    }
    ((T *)t.out_)[e] = acc;
  }
}
/* the adjoint: out (x's shape, zeroed first) += each output gradient times its taps' weights (atomically:
 * taps of different outputs meet) */
template <typename T> __global__ void resample_adjoint_kernel(mt_gpu_resample t) {
  const int64_t S1 = t.in[1], S2 = t.in[2], plane = t.in[0] * S1 * S2;
  const int64_t O0 = t.out[0], O1 = t.out[1], O2 = t.out[2], oplane = O0 * O1 * O2, total = t.P * oplane;
  const int n0 = t.ntaps[0], n1 = t.ntaps[1], n2 = t.ntaps[2];
  const T scale = (T)t.scale;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t p = e / oplane, r = e % oplane;
    int64_t c = r % O2, b = (r / O2) % O1, a = r / (O2 * O1);
    T *gx = (T *)t.out_ + p * plane;
    const T g = ((const T *)t.x)[e];
    for (int k0 = 0; k0 < n0; k0++) {
      T c0 = (T)t.weight[0][a * n0 + k0] * scale;
      if (c0 == 0) continue;
      for (int k1 = 0; k1 < n1; k1++) {
        T c01 = c0 * (T)t.weight[1][b * n1 + k1];
        if (c01 == 0) continue;
        T *xr = gx + (t.index[0][a * n0 + k0] * S1 + t.index[1][b * n1 + k1]) * S2;
        if (t.box) {
          const double *wc = t.weight[2] + c * n2;
          T v = c01 * (T)wc[0] * g;
          for (int k2 = 0; k2 < n2 && wc[k2] != 0; k2++) atomicAdd(xr + t.index[2][c * n2] + k2, v);
        } else {
          for (int k2 = 0; k2 < n2; k2++)
            atomicAdd(xr + t.index[2][c * n2 + k2], c01 * (T)t.weight[2][c * n2 + k2] * g);
        }
      }
    }
  }
}
static int resample(const mt_gpu_resample *t, void *stream) {
  int64_t total = t->P * t->out[0] * t->out[1] * t->out[2];
  if (total == 0) return 0;
  dim3 g(blocks_for(total)), b(THREADS);
  bool d = t->dtype == MT_FLOAT64;
  if (t->dtype != MT_FLOAT32 && !d) return -1;
  if (t->adjoint) {
    if (d) mt_launch(resample_adjoint_kernel<double>, g, b, 0, stream, *t);
    else mt_launch(resample_adjoint_kernel<float>, g, b, 0, stream, *t);
  } else {
    if (d) mt_launch(resample_kernel<double>, g, b, 0, stream, *t);
    else mt_launch(resample_kernel<float>, g, b, 0, stream, *t);
  }
  return 0;
}

/* ---------------------------------------------------------------- pools' indices */
template <typename T> __global__ void pool_index_kernel(mt_gpu_pool_index p) {
  const int64_t total = p.P * p.K, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t pl = e / p.K, k = e % p.K;
    int64_t i = p.idx[e] - p.base;
    bool bad = i < 0 || i >= p.M;
    if (bad) raise_fault(p.fault, MT_GPU_FAULT_MAX_INDEX, -1, p.idx[e], p.M, 0);
    if (p.kind == MT_GPU_POOL_GATHER) {
      ((T *)p.out)[pl * p.K + k] = bad ? T() : ((const T *)p.src)[pl * p.M + i];
    } else if (!bad) {
      T *o = (T *)p.out + pl * p.M + i;
      T v = ((const T *)p.src)[pl * p.K + k];
      if (p.kind == MT_GPU_POOL_SCATTER_ADD) atomicAdd(o, v);
      else *o = v;
    }
  }
}
static int pool_index(const mt_gpu_pool_index *p, void *stream) {
  if (p->P * p->K == 0) return 0;
  dim3 g(blocks_for(p->P * p->K)), b(THREADS);
  if (p->dtype == MT_FLOAT64) mt_launch(pool_index_kernel<double>, g, b, 0, stream, *p);
  else if (p->dtype == MT_FLOAT32) mt_launch(pool_index_kernel<float>, g, b, 0, stream, *p);
  else return -1;
  return 0;
}

/* ---------------------------------------------------------------- recurrent gates */
template <typename T> MT_DEV T sig_(T x) { return (T)1 / ((T)1 + m_exp(-x)); }
template <typename T> MT_DEV const T *row_of(const mt_gpu_rnn &r, int k, int64_t b) {
  return (const T *)r.t[k] + b * r.rs[k];
}
template <typename T> MT_DEV T *wrow_of(const mt_gpu_rnn &r, int k, int64_t b) { return (T *)r.t[k] + b * r.rs[k]; }

/* a thread per (row, j < H) */
template <typename T> __global__ void rnn_kernel(mt_gpu_rnn r) {
  const int64_t H = r.H, total = r.B * H, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t b = e / H, j = e % H;
    switch (r.kind) {
    case MT_GPU_LSTM: { /* hy cy ws ig hg cx bi bh */
      const T *a = row_of<T>(r, 3, b), *h = row_of<T>(r, 4, b), *c0 = row_of<T>(r, 5, b);
      const T *b1 = (const T *)r.t[6], *b2 = (const T *)r.t[7];
      T *w = wrow_of<T>(r, 2, b);
      T g4[4];
      for (int q = 0; q < 4; q++) {
        int64_t k = q * H + j;
        if (b1 && b2) g4[q] = h[k] + b2[k] + (a[k] + b1[k]);
        else if (b1 || b2) g4[q] = a[k] + h[k] + (b1 ? b1[k] : b2[k]);
        else g4[q] = a[k] + h[k];
      }
      T i = sig_(g4[0]), f = sig_(g4[1]), g = m_tanh(g4[2]), o = sig_(g4[3]);
      w[j] = i, w[H + j] = f, w[2 * H + j] = g, w[3 * H + j] = o;
      T c = f * c0[j] + i * g;
      wrow_of<T>(r, 1, b)[j] = c;
      wrow_of<T>(r, 0, b)[j] = m_tanh(c) * o;
      break;
    }
    case MT_GPU_LSTM_BACKWARD: { /* dgates dcx dhy dcy cx cy ws */
      const T *w = row_of<T>(r, 6, b), *c = row_of<T>(r, 5, b), *c0 = row_of<T>(r, 4, b);
      const T *gh = r.t[2] ? row_of<T>(r, 2, b) : nullptr, *gc = r.t[3] ? row_of<T>(r, 3, b) : nullptr;
      T *dg = wrow_of<T>(r, 0, b);
      T tc = m_tanh(c[j]), i = w[j], f = w[H + j], g = w[2 * H + j], o = w[3 * H + j];
      T h_ = gh ? gh[j] : (T)0, c_ = gc ? gc[j] : (T)0;
      T dc = c_ + h_ * o * (1 - tc * tc);
      dg[j] = dc * g * i * (1 - i);
      dg[H + j] = dc * c0[j] * f * (1 - f);
      dg[2 * H + j] = dc * i * (1 - g * g);
      dg[3 * H + j] = h_ * tc * o * (1 - o);
      wrow_of<T>(r, 1, b)[j] = dc * f;
      break;
    }
    case MT_GPU_GRU: { /* hy ws ig hg hx bi bh */
      const T *a = row_of<T>(r, 2, b), *h = row_of<T>(r, 3, b), *h0 = row_of<T>(r, 4, b);
      const T *b1 = (const T *)r.t[5], *b2 = (const T *)r.t[6];
      T *w = wrow_of<T>(r, 1, b);
      T rr = sig_((h[j] + (b2 ? b2[j] : (T)0)) + (a[j] + (b1 ? b1[j] : (T)0)));
      T z = sig_((h[H + j] + (b2 ? b2[H + j] : (T)0)) + (a[H + j] + (b1 ? b1[H + j] : (T)0)));
      T hn = h[2 * H + j] + (b2 ? b2[2 * H + j] : (T)0);
      T n = m_tanh((a[2 * H + j] + (b1 ? b1[2 * H + j] : (T)0)) + hn * rr);
      w[j] = rr, w[H + j] = z, w[2 * H + j] = n, w[3 * H + j] = hn;
      wrow_of<T>(r, 0, b)[j] = (h0[j] - n) * z + n;
      break;
    }
    default: { /* gru backward: dig dhg dhx dhy hx ws */
      const T *w = row_of<T>(r, 5, b), *h0 = row_of<T>(r, 4, b), *g = row_of<T>(r, 3, b);
      T *di = wrow_of<T>(r, 0, b), *dh = wrow_of<T>(r, 1, b), *d0 = wrow_of<T>(r, 2, b);
      T rr = w[j], z = w[H + j], n = w[2 * H + j], hn = w[3 * H + j], gj = g[j];
      T dz = gj * (h0[j] - n) * z * (1 - z);
      T dn = gj * (1 - z) * (1 - n * n);
      T dr = dn * hn * rr * (1 - rr);
      di[j] = dr, di[H + j] = dz, di[2 * H + j] = dn;
      dh[j] = dr, dh[H + j] = dz, dh[2 * H + j] = dn * rr;
      d0[j] = gj * z;
    }
    }
  }
}
static int rnn(const mt_gpu_rnn *r, void *stream) {
  if (r->B * r->H == 0) return 0;
  dim3 g(blocks_for(r->B * r->H)), b(THREADS);
  if (r->dtype == MT_FLOAT64) mt_launch(rnn_kernel<double>, g, b, 0, stream, *r);
  else if (r->dtype == MT_FLOAT32) mt_launch(rnn_kernel<float>, g, b, 0, stream, *r);
  else return -1;
  return 0;
}

/* ---------------------------------------------------------------- embedding_bag */
enum { BAG_SUM = 0, BAG_MEAN = 1, BAG_MAX = 2 };
/* a thread per (bag, d) */
template <typename T> __global__ void bag_forward_kernel(mt_gpu_bag j) {
  const int64_t total = j.B * j.D, step = (int64_t)gridDim.x * blockDim.x;
  const T *w = (const T *)j.w, *psw = (const T *)j.psw;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t b = e / j.D, d = e % j.D;
    T o = 0;
    int64_t arg = -1, count = 0;
    for (int64_t i = j.starts[b]; i < j.starts[b + 1]; i++) {
      int64_t r = j.idx[i] - j.base;
      if (r < 0 || r >= j.V) {
        raise_fault(j.fault, MT_GPU_FAULT_BAG_INDEX, MT_OP_EMBEDDING_BAG, j.idx[i], j.V, 0);
        continue;
      }
      if (r == j.pad) continue;
      T v = w[r * j.D + d];
      if (j.mode == BAG_MAX) {
        if (count == 0 || v > o || v != v) {
          o = v;
          arg = r;
        }
      } else {
        o += psw ? psw[i] * v : v;
      }
      count++;
    }
    if (j.mode == BAG_MEAN && count > 0) o /= (T)count;
    ((T *)j.out)[e] = o;
    if (j.arg) j.arg[e] = arg;
  }
}
/* the weight gradient (zeroed first) gathers: a thread per (bag, d) adds its bag's gradient into the rows
 * of its entries; per-sample weights' gradients a thread per entry */
template <typename T> __global__ void bag_backward_kernel(mt_gpu_bag j) {
  const int64_t total = j.B * j.D, step = (int64_t)gridDim.x * blockDim.x;
  const T *g = (const T *)j.g, *psw = (const T *)j.psw;
  T *gw = (T *)j.gw;
  if (gw) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
      int64_t b = e / j.D, d = e % j.D;
      T gb = g[e];
      if (j.mode == BAG_MAX) {
        int64_t r = j.arg_in[e];
        if (r >= 0) atomicAdd(gw + r * j.D + d, j.freq ? gb / (T)j.freq[r] : gb);
        continue;
      }
      int64_t count = 0;
      for (int64_t i = j.starts[b]; i < j.starts[b + 1]; i++)
        if (j.idx[i] - j.base != j.pad) count++;
      T scale = j.mode == BAG_MEAN && count > 0 ? (T)1 / (T)count : (T)1;
      for (int64_t i = j.starts[b]; i < j.starts[b + 1]; i++) {
        int64_t r = j.idx[i] - j.base;
        if (r == j.pad) continue;
        T s = scale * (psw ? psw[i] : (T)1);
        if (j.freq) s /= (T)j.freq[r];
        atomicAdd(gw + r * j.D + d, s * gb);
      }
    }
  }
}
/* gpsw: entry i of bag b gets the dot of b's gradient with its row (0 at padding) */
template <typename T> __global__ void bag_psw_kernel(mt_gpu_bag j) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < j.B; b += step)
    for (int64_t i = j.starts[b]; i < j.starts[b + 1]; i++) {
      int64_t r = j.idx[i] - j.base;
      if (r == j.pad) {
        ((T *)j.gpsw)[i] = 0;
        continue;
      }
      double dot = 0;
      for (int64_t d = 0; d < j.D; d++) dot += (double)((const T *)j.g)[b * j.D + d] * (double)((const T *)j.w)[r * j.D + d];
      ((T *)j.gpsw)[i] = (T)dot;
    }
}
__global__ void bag_freq_kernel(mt_gpu_bag j) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < j.n; i += step)
    atomicAdd((unsigned long long *)j.freq + (j.idx[i] - j.base), 1ull);
}
static int bag(const mt_gpu_bag *j, int backward, void *stream) {
  bool d = j->dtype == MT_FLOAT64;
  if (j->dtype != MT_FLOAT32 && !d) return -1;
  dim3 b(THREADS);
  if (!backward) {
    if (j->B * j->D == 0) return 0;
    dim3 g(blocks_for(j->B * j->D));
    if (d) mt_launch(bag_forward_kernel<double>, g, b, 0, stream, *j);
    else mt_launch(bag_forward_kernel<float>, g, b, 0, stream, *j);
    return 0;
  }
  if (j->freq && j->n) mt_launch(bag_freq_kernel, dim3(blocks_for(j->n)), b, 0, stream, *j);
  if (j->gw && j->B * j->D != 0) {
    dim3 g(blocks_for(j->B * j->D));
    if (d) mt_launch(bag_backward_kernel<double>, g, b, 0, stream, *j);
    else mt_launch(bag_backward_kernel<float>, g, b, 0, stream, *j);
  }
  if (j->gpsw && j->B) {
    dim3 g(blocks_for(j->B));
    if (d) mt_launch(bag_psw_kernel<double>, g, b, 0, stream, *j);
    else mt_launch(bag_psw_kernel<float>, g, b, 0, stream, *j);
  }
  return 0;
}

/* ---------------------------------------------------------------- ctc_loss */
/* the CPU's recursion (core/tensor/ctc.c) with a block per sample, a thread per extended label position,
 * one time step after another (the block waits between steps); alpha and beta in double, in scratch */
MT_DEV double lse2(double a, double b) {
  if (a == -(double)INFINITY) return b;
  if (b == -(double)INFINITY) return a;
  double m = a > b ? a : b;
  return m + log(exp(a - m) + exp(b - m));
}
MT_DEV double lp_at(const mt_gpu_ctc &j, int64_t t, int64_t n, int64_t c) {
  int64_t k = (t * j.N + n) * j.C + c;
  return j.dtype == MT_FLOAT32 ? (double)((const float *)j.lp)[k] : ((const double *)j.lp)[k];
}
MT_DEV int64_t ext_label(const mt_gpu_ctc &j, int64_t n, int64_t s) {
  return s % 2 == 0 ? j.blank : j.tg[n * j.S + s / 2] - j.base;
}
__global__ void ctc_alpha_kernel(mt_gpu_ctc j, int backward) {
  const int64_t Lmax = 2 * j.S + 1;
  for (int64_t n = blockIdx.x; n < j.N; n += gridDim.x) {
    const int64_t tn = j.il[n], L = 2 * j.tl[n] + 1;
    double *a = j.alpha + n * j.T * Lmax;
    for (int64_t s = threadIdx.x; s < L; s += blockDim.x) {
      double v = -(double)INFINITY;
      if (tn > 0 && s == 0) v = lp_at(j, 0, n, j.blank);
      if (tn > 0 && s == 1) v = lp_at(j, 0, n, ext_label(j, n, 1));
      a[s] = v;
    }
    __syncthreads();
    for (int64_t t = 1; t < tn; t++) {
      const double *p = a + (t - 1) * Lmax;
      double *q = a + t * Lmax;
      for (int64_t s = threadIdx.x; s < L; s += blockDim.x) {
        int64_t l = ext_label(j, n, s);
        double v = p[s];
        if (s >= 1) v = lse2(v, p[s - 1]);
        if (s >= 2 && l != j.blank && l != ext_label(j, n, s - 2)) v = lse2(v, p[s - 2]);
        q[s] = v == -(double)INFINITY ? -(double)INFINITY : v + lp_at(j, t, n, l);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      double ll;
      if (tn == 0) ll = L == 1 ? 0 : -(double)INFINITY;
      else {
        const double *last = a + (tn - 1) * Lmax;
        ll = L > 1 ? lse2(last[L - 1], last[L - 2]) : last[L - 1];
      }
      j.ll[n] = ll;
      if (!backward) {
        double loss = -ll;
        if (m_isinf(loss) && j.zero_inf) loss = 0;
        if (j.dtype == MT_FLOAT32) ((float *)j.out)[n] = (float)loss;
        else ((double *)j.out)[n] = loss;
      }
    }
    __syncthreads();
  }
}
__global__ void ctc_beta_kernel(mt_gpu_ctc j) {
  const int64_t Lmax = 2 * j.S + 1;
  for (int64_t n = blockIdx.x; n < j.N; n += gridDim.x) {
    const int64_t tn = j.il[n], L = 2 * j.tl[n] + 1;
    double *b = j.beta + n * j.T * Lmax;
    for (int64_t i = threadIdx.x; i < j.T * Lmax; i += blockDim.x) b[i] = -(double)INFINITY;
    __syncthreads();
    if (tn > 0 && j.ll[n] > -(double)INFINITY) {
      if (threadIdx.x == 0) {
        double *q = b + (tn - 1) * Lmax;
        q[L - 1] = lp_at(j, tn - 1, n, ext_label(j, n, L - 1));
        if (L > 1) q[L - 2] = lp_at(j, tn - 1, n, ext_label(j, n, L - 2));
      }
      __syncthreads();
      for (int64_t t = tn - 2; t >= 0; t--) {
        const double *p = b + (t + 1) * Lmax;
        double *r = b + t * Lmax;
        for (int64_t s = threadIdx.x; s < L; s += blockDim.x) {
          int64_t l = ext_label(j, n, s);
          double v = p[s];
          if (s + 1 < L) v = lse2(v, p[s + 1]);
          if (s + 2 < L && l != j.blank && l != ext_label(j, n, s + 2)) v = lse2(v, p[s + 2]);
          r[s] = v == -(double)INFINITY ? -(double)INFINITY : v + lp_at(j, t, n, l);
        }
        __syncthreads();
      }
    }
    __syncthreads();
  }
}
/* the gradient (T, N, C): a thread per element, summing over the extended positions of its class */
__global__ void ctc_grad_kernel(mt_gpu_ctc j) {
  const int64_t Lmax = 2 * j.S + 1, total = j.T * j.N * j.C, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += step) {
    int64_t c = k % j.C, n = (k / j.C) % j.N, t = k / (j.C * j.N);
    const int64_t tn = j.il[n], L = 2 * j.tl[n] + 1;
    double ll = j.ll[n], gam = -(double)INFINITY;
    if (ll > -(double)INFINITY && t < tn) {
      const double *a = j.alpha + (n * j.T + t) * Lmax, *b = j.beta + (n * j.T + t) * Lmax;
      for (int64_t s = 0; s < L; s++)
        if (ext_label(j, n, s) == c) gam = lse2(gam, a[s] + b[s]);
    }
    double gn = j.dtype == MT_FLOAT32 ? (double)((const float *)j.g)[n] : ((const double *)j.g)[n];
    double v = gam > -(double)INFINITY ? -gn * exp(gam - lp_at(j, t, n, c) - ll) : 0;
    if (j.dtype == MT_FLOAT32) ((float *)j.out)[k] = (float)v;
    else ((double *)j.out)[k] = v;
  }
}
static int ctc(const mt_gpu_ctc *c, int backward, void *stream) {
  if (c->dtype != MT_FLOAT32 && c->dtype != MT_FLOAT64) return -1;
  if (c->N == 0) return 0;
  unsigned g = (unsigned)(c->N < max_blocks ? c->N : max_blocks);
  mt_launch(ctc_alpha_kernel, dim3(g), dim3(128), 0, stream, *c, backward);
  if (!backward) return 0;
  mt_launch(ctc_beta_kernel, dim3(g), dim3(128), 0, stream, *c);
  int64_t total = c->T * c->N * c->C;
  if (total) mt_launch(ctc_grad_kernel, dim3(blocks_for(total)), dim3(THREADS), 0, stream, *c);
  return 0;
}

int launch_ctc(const mt_gpu_ctc *c, int backward, void *stream) { return ctc(c, backward, stream); }
int launch_layer_norm(const mt_gpu_ln *l, int backward, void *stream) { return layer_norm(l, backward, stream); }
int launch_nll(const mt_gpu_nll *l, int backward, void *stream) { return nll(l, backward, stream); }
int launch_conv(const mt_gpu_conv *c, int col2im, void *stream) { return conv(c, col2im, stream); }
int launch_pool_max(const mt_gpu_pool *p, void *stream) { return pool_max(p, stream); }
int launch_resample(const mt_gpu_resample *r, void *stream) { return resample(r, stream); }
int launch_pool_index(const mt_gpu_pool_index *p, void *stream) { return pool_index(p, stream); }
int launch_rnn(const mt_gpu_rnn *r, void *stream) { return rnn(r, stream); }
int launch_bag(const mt_gpu_bag *b, int backward, void *stream) { return bag(b, backward, stream); }

} // namespace MT_GPU_NS
