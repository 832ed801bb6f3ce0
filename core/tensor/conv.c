/* conv.c -- the CPU's im2col and col2im kernels (issue 12, conv part), what convolution, its
 * gradients, F.unfold and F.fold are made of (core/ops/conv.c runs the matrix products around them
 * through the gemm kernel).
 *
 * An image is (n, c, *in), contiguous; its columns are (n, c * K, L), contiguous, K = prod(kernel),
 * L = prod(out) the number of blocks, row (ch * K + kernel offset) holding that kernel tap of every
 * block, as PyTorch lays them out. One (sample, channel) plane is one task of the thread pool:
 * its K rows of columns (im2col) or its image plane (col2im) belong to it alone. The spatial dims
 * are handled as three, with leading ones of size 1; the innermost dim copies (stride 1) or
 * gathers a row at a time, padding written as zeros. float32 and float64. */
#include "cpu.h"
#include "../thread.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
  int64_t K, L, inplane, c;
  char *cols;
  char *image;
  int dt;
} conv_job;

static void job_of(conv_job *j, const mt_conv_geo *g, int64_t c) {
  int off = 3 - g->nsp;
  for (int i = 0; i < 3; i++) {
    int src = i - off;
    bool real = src >= 0;
    j->in[i] = real ? g->in[src] : 1;
    j->out[i] = real ? g->out[src] : 1;
    j->k[i] = real ? g->k[src] : 1;
    j->s[i] = real ? g->s[src] : 1;
    j->p[i] = real ? g->p[src] : 0;
    j->d[i] = real ? g->d[src] : 1;
  }
  j->K = j->k[0] * j->k[1] * j->k[2];
  j->L = j->out[0] * j->out[1] * j->out[2];
  j->inplane = j->in[0] * j->in[1] * j->in[2];
  j->c = c;
}

/* the range [lo, hi) of output positions ow whose input position ow * s - p + off lies in [0, n) */
static inline void valid_range(int64_t n, int64_t nout, int64_t s, int64_t start, int64_t *lo, int64_t *hi) {
  /* start + ow * s >= 0  and  start + ow * s < n */
  if (s == 1) {
    int64_t a = start >= 0 ? 0 : -start, b = n - start;
    if (b > nout) b = nout;
    if (b < 0) b = 0;
    if (a > b) a = b;
    *lo = a;
    *hi = b;
    return;
  }
  int64_t a = start >= 0 ? 0 : (-start + s - 1) / s;
  int64_t b = start >= n ? 0 : (n - start + s - 1) / s;
  if (b > nout) b = nout;
  if (a > b) a = b;
  *lo = a;
  *hi = b;
}

/* short rows copied inline (a call to memcpy for 8 floats costs more than the copy): the loops of
 * im2col are kept from becoming memcpy calls (NO_MEMCPY) */
#if defined(__clang__) /* clang has no per-function optimize attribute and does not turn these loops into calls */
#define NO_MEMCPY
#else
#define NO_MEMCPY __attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
#define COPY_ROW(T, SUFFIX)                                                                                      \
  NO_MEMCPY static inline void copy_##SUFFIX(T *restrict dst, const T *restrict src, int64_t n) {             \
    if (n > 64) {                                                                                               \
      memcpy(dst, src, sizeof(T) * (size_t)n);                                                                  \
      return;                                                                                                   \
    }                                                                                                           \
    /* 32 bytes at a time: a fixed-size copy the compiler makes one vector move */                            \
    const int64_t v = 32 / (int64_t)sizeof(T);                                                                  \
    for (; n >= v; n -= v, dst += v, src += v) __builtin_memcpy(dst, src, 32);                                  \
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];                                                            \
  }
COPY_ROW(float, f32)
COPY_ROW(double, f64)

#define CONV_KERNELS(T, SUFFIX)                                                                                  \
  NO_MEMCPY static void im2col_planes_##SUFFIX(void *ctx, int64_t begin, int64_t end) {                                  \
    const conv_job *j = ctx;                                                                                    \
    for (int64_t plane = begin; plane < end; plane++) {                                                         \
      const T *img = (const T *)j->image + plane * j->inplane;                                                  \
      T *col = (T *)j->cols + plane * j->K * j->L;                                                              \
      if (j->in[0] == 1 && j->k[0] == 1 && j->s[2] == 1) {                                                      \
        /* 1-d and 2-d, stride 1 along the width: each output row a run of an image row, the rows of */     \
        /* the image a kernel row never reaches zeroed in one go */                                         \
        int64_t OH = j->out[1], OW = j->out[2], W = j->in[2];                                                   \
        for (int64_t kh = 0; kh < j->k[1]; kh++)                                                                \
          for (int64_t kw = 0; kw < j->k[2]; kw++) {                                                            \
            T *row = col + (kh * j->k[2] + kw) * j->L;                                                          \
            int64_t w0 = kw * j->d[2] - j->p[2], h0 = kh * j->d[1] - j->p[1], lo, hi, hlo, hhi;                 \
            valid_range(W, OW, 1, w0, &lo, &hi);                                                                \
            valid_range(j->in[1], OH, j->s[1], h0, &hlo, &hhi);                                                 \
            memset(row, 0, sizeof(T) * (size_t)(hlo * OW));                                                     \
            const T *src = img + (hlo * j->s[1] + h0) * W + w0;                                                 \
            T *dst = row + hlo * OW;                                                                            \
            if (lo == 0 && hi == OW)                                                                            \
              for (int64_t oh = hlo; oh < hhi; oh++, dst += OW, src += j->s[1] * W) copy_##SUFFIX(dst, src, OW); \
            else                                                                                                \
              for (int64_t oh = hlo; oh < hhi; oh++, dst += OW, src += j->s[1] * W) {                           \
                for (int64_t ow = 0; ow < lo; ow++) dst[ow] = 0;                                                \
                copy_##SUFFIX(dst + lo, src + lo, hi - lo);                                                     \
                for (int64_t ow = hi; ow < OW; ow++) dst[ow] = 0;                                               \
              }                                                                                                 \
            memset(row + hhi * OW, 0, sizeof(T) * (size_t)((OH - hhi) * OW));                                   \
          }                                                                                                     \
        continue;                                                                                               \
      }                                                                                                         \
      for (int64_t kd = 0; kd < j->k[0]; kd++)                                                                  \
        for (int64_t kh = 0; kh < j->k[1]; kh++)                                                                \
          for (int64_t kw = 0; kw < j->k[2]; kw++) {                                                            \
            T *row = col + ((kd * j->k[1] + kh) * j->k[2] + kw) * j->L;                                        \
            int64_t w0 = kw * j->d[2] - j->p[2], lo, hi;                                                        \
            valid_range(j->in[2], j->out[2], j->s[2], w0, &lo, &hi);                                            \
            for (int64_t od = 0; od < j->out[0]; od++) {                                                        \
              int64_t id = od * j->s[0] - j->p[0] + kd * j->d[0];                                               \
              for (int64_t oh = 0; oh < j->out[1]; oh++, row += j->out[2]) {                                    \
                int64_t ih = oh * j->s[1] - j->p[1] + kh * j->d[1];                                             \
                if (id < 0 || id >= j->in[0] || ih < 0 || ih >= j->in[1]) {                                     \
                  memset(row, 0, sizeof(T) * (size_t)j->out[2]);                                                \
                  continue;                                                                                     \
                }                                                                                               \
                const T *src = img + (id * j->in[1] + ih) * j->in[2] + w0;                                      \
                for (int64_t ow = 0; ow < lo; ow++) row[ow] = 0;                                                \
                if (j->s[2] == 1) copy_##SUFFIX(row + lo, src + lo, hi - lo);                                   \
                else                                                                                            \
                  for (int64_t ow = lo; ow < hi; ow++) row[ow] = src[ow * j->s[2]];                             \
                for (int64_t ow = hi; ow < j->out[2]; ow++) row[ow] = 0;                                        \
              }                                                                                                 \
            }                                                                                                   \
          }                                                                                                     \
    }                                                                                                           \
  }                                                                                                             \
  static void col2im_planes_##SUFFIX(void *ctx, int64_t begin, int64_t end) {                                  \
    const conv_job *j = ctx;                                                                                    \
    for (int64_t plane = begin; plane < end; plane++) {                                                         \
      T *img = (T *)j->image + plane * j->inplane;                                                              \
      const T *col = (const T *)j->cols + plane * j->K * j->L;                                                  \
      memset(img, 0, sizeof(T) * (size_t)j->inplane);                                                           \
      if (j->in[0] == 1 && j->k[0] == 1 && j->s[2] == 1) { /* as im2col's: runs of rows */                    \
        int64_t OH = j->out[1], OW = j->out[2], W = j->in[2];                                                   \
        for (int64_t kh = 0; kh < j->k[1]; kh++)                                                                \
          for (int64_t kw = 0; kw < j->k[2]; kw++) {                                                            \
            const T *row = col + (kh * j->k[2] + kw) * j->L;                                                    \
            int64_t w0 = kw * j->d[2] - j->p[2], h0 = kh * j->d[1] - j->p[1], lo, hi, hlo, hhi;                 \
            valid_range(W, OW, 1, w0, &lo, &hi);                                                                \
            valid_range(j->in[1], OH, j->s[1], h0, &hlo, &hhi);                                                 \
            T *dst = img + (hlo * j->s[1] + h0) * W + w0;                                                       \
            const T *src = row + hlo * OW;                                                                      \
            for (int64_t oh = hlo; oh < hhi; oh++, src += OW, dst += j->s[1] * W)                               \
              for (int64_t ow = lo; ow < hi; ow++) dst[ow] += src[ow];                                          \
          }                                                                                                     \
        continue;                                                                                               \
      }                                                                                                         \
      for (int64_t kd = 0; kd < j->k[0]; kd++)                                                                  \
        for (int64_t kh = 0; kh < j->k[1]; kh++)                                                                \
          for (int64_t kw = 0; kw < j->k[2]; kw++) {                                                            \
            const T *row = col + ((kd * j->k[1] + kh) * j->k[2] + kw) * j->L;                                  \
            int64_t w0 = kw * j->d[2] - j->p[2], lo, hi;                                                        \
            valid_range(j->in[2], j->out[2], j->s[2], w0, &lo, &hi);                                            \
            for (int64_t od = 0; od < j->out[0]; od++) {                                                        \
              int64_t id = od * j->s[0] - j->p[0] + kd * j->d[0];                                               \
              for (int64_t oh = 0; oh < j->out[1]; oh++, row += j->out[2]) {                                    \
                int64_t ih = oh * j->s[1] - j->p[1] + kh * j->d[1];                                             \
                if (id < 0 || id >= j->in[0] || ih < 0 || ih >= j->in[1]) continue;                             \
                T *dst = img + (id * j->in[1] + ih) * j->in[2] + w0;                                            \
                if (j->s[2] == 1)                                                                               \
                  for (int64_t ow = lo; ow < hi; ow++) dst[ow] += row[ow];                                      \
                else                                                                                            \
                  for (int64_t ow = lo; ow < hi; ow++) dst[ow * j->s[2]] += row[ow];                            \
              }                                                                                                 \
            }                                                                                                   \
          }                                                                                                     \
    }                                                                                                           \
  }

CONV_KERNELS(float, f32)
CONV_KERNELS(double, f64)

static mt_status run(mt_range_fn f32, mt_range_fn f64, conv_job *j, int64_t planes, const char *op) {
  if (planes == 0) return MT_OK;
  mt_range_fn fn = j->dt == MT_FLOAT32 ? f32 : j->dt == MT_FLOAT64 ? f64 : NULL;
  if (!fn) return mt_error(MT_ENOTIMPL, "%s: \"%s_out_cpu\" not implemented for '%s'", op, op, mt_type_title(j->dt));
  int64_t work = j->K * j->L + j->inplane; /* elements touched per plane */
  int64_t grain = MT_GRAIN / (work + 1) + 1;
  mt_parallel_for(planes, grain, fn, j);
  return MT_OK;
}

static mt_status im2col_raw(char *cols, const char *image, int64_t n, int64_t c, int dt, const mt_conv_geo *g) {
  conv_job j;
  job_of(&j, g, c);
  j.cols = cols;
  j.image = (char *)image;
  j.dt = dt;
  return run(im2col_planes_f32, im2col_planes_f64, &j, n * c, "im2col");
}

static mt_status col2im_raw(char *image, const char *cols, int64_t n, int64_t c, int dt, const mt_conv_geo *g) {
  conv_job j;
  job_of(&j, g, c);
  j.cols = (char *)cols;
  j.image = image;
  j.dt = dt;
  return run(col2im_planes_f32, col2im_planes_f64, &j, n * c, "col2im");
}

mt_status mt_cpu_im2col(mt_tensor *cols, const mt_tensor *image, const mt_conv_geo *g) {
  return im2col_raw(cols->_data, image->_data, image->_sizes[0], image->_sizes[1], image->_dtype, g);
}

mt_status mt_cpu_col2im(mt_tensor *image, const mt_tensor *cols, const mt_conv_geo *g) {
  return col2im_raw(image->_data, cols->_data, image->_sizes[0], image->_sizes[1], image->_dtype, g);
}

/* ================================================================ convolution (issue 21: behind the slots)
 * A convolution of float32 is first offered to oneDNN (onednn.c: its convolution primitives, where the
 * library is present and takes the shape); otherwise, and for float64, it is im2col and matrix products:
 * the columns of a batch of samples, then one batched product per (sample, group),
 * W_g (C_out/g x C/g K) @ cols (C/g K x L), written straight into the result (the gemm kernel: our pool
 * over small products, the BLAS's threads over large ones, never both), the bias preloaded into the
 * result so the products add onto it. A 1x1 convolution of stride 1 without padding multiplies the
 * input itself: no columns. Transposed: cols = W_g^T @ x, then col2im sums the blocks into the result.
 * Samples go in chunks whose columns stay under COLS_BYTES. */
#define COLS_BYTES (48LL << 20)

typedef struct {
  int64_t *a, *b, *c;
} offsets;
static mt_status offsets_open(offsets *o, int64_t nb) {
  o->a = malloc(sizeof(int64_t) * 3 * (size_t)(nb ? nb : 1));
  o->b = o->c = NULL;
  if (!o->a) return mt_error(MT_ENOMEM, "convolution: out of memory");
  o->b = o->a + nb;
  o->c = o->b + nb;
  return MT_OK;
}

static mt_status gemm_batch(int dt, int64_t nb, int64_t M, int64_t N, int64_t K, const char *A, mt_matrix_geo ga,
                            const char *B, mt_matrix_geo gb, char *Cm, mt_matrix_geo gc, double beta,
                            const offsets *o) {
  mt_gemm j = {.dt = dt, .nb = nb, .M = M, .N = N, .K = K, .alpha = 1, .beta = beta, .A = A, .B = B, .C = Cm,
               .ga = ga, .gb = gb, .gc = gc, .aoff = o->a, .boff = o->b, .coff = o->c};
  return mt_cpu_gemm(&j);
}

static int64_t prod_of(const int64_t *v, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= v[i];
  return p;
}

static mt_conv_geo geo_of(const mt_conv_args *a, const int64_t *image, const int64_t *blocks) {
  mt_conv_geo g;
  memset(&g, 0, sizeof g);
  g.nsp = a->nsp;
  for (int i = 0; i < a->nsp; i++) {
    g.in[i] = image[i];
    g.out[i] = blocks[i];
    g.k[i] = a->k[i];
    g.s[i] = a->s[i];
    g.p[i] = a->p[i];
    g.d[i] = a->d[i];
  }
  return g;
}

static bool pointwise(const mt_conv_args *a) {
  for (int i = 0; i < a->nsp; i++)
    if (a->k[i] != 1 || a->s[i] != 1 || a->p[i] != 0 || a->op[i] != 0) return false;
  return true;
}

/* samples per chunk so that the columns stay under COLS_BYTES */
static int64_t chunk_of(int64_t N, int64_t per_sample) {
  int64_t n = per_sample > 0 ? COLS_BYTES / per_sample : N;
  if (n < 1) n = 1;
  return n < N ? n : N;
}

/* out (N, Cout, L): every channel's plane set to its bias, or added to it (plain loops: the result is ours) */
static void bias_planes(mt_tensor *out, const mt_tensor *bias, int64_t L, bool add) {
  int64_t N = out->_sizes[0], Cout = out->_sizes[1];
  if (out->_dtype == MT_FLOAT32) {
    float *r = (float *)out->_data;
    const float *b = (const float *)bias->_data;
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < Cout; c++, r += L)
        if (add) for (int64_t l = 0; l < L; l++) r[l] += b[c];
        else for (int64_t l = 0; l < L; l++) r[l] = b[c];
  } else {
    double *r = (double *)out->_data;
    const double *b = (const double *)bias->_data;
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < Cout; c++, r += L)
        if (add) for (int64_t l = 0; l < L; l++) r[l] += b[c];
        else for (int64_t l = 0; l < L; l++) r[l] = b[c];
  }
}

/* ---------------------------------------------------------------- one sample at a time
 * When each sample's product is small (float32, at most 64^3 multiply-adds: what the gemm kernel runs on
 * one thread with its own kernel), the samples are split over the thread pool and each thread makes one
 * sample's columns at a time into its own scratch, which stays in cache, and multiplies them at once:
 * the columns of the whole batch never go out to memory (for the LeNet convs they are 20 times the
 * input). Larger products take the batched path below, whose products run on the BLAS's threads. */
#define FUSED_MACS (64LL * 64 * 64)
static bool fused(const mt_conv_args *a, int dt, int64_t M, int64_t N, int64_t K) {
  return dt == MT_FLOAT32 && a->N > 1 && mt_get_num_threads() > 1 && M * N * K <= FUSED_MACS &&
         K * N * 4 <= 256 * 1024 && M * K * 4 <= 256 * 1024;
}

typedef struct {
  const mt_conv_args *a;
  const mt_tensor *x, *w;
  mt_tensor *r;
  const float *bias; /* not transposed: each sample's rows start as the bias (then beta is 1) */
  double beta;
  mt_conv_geo geo;
  int failed;
} fused_job;

static void fused_range(void *ctx, int64_t begin, int64_t end) {
  fused_job *j = ctx;
  const mt_conv_args *a = j->a;
  int dt = j->x->_dtype;
  size_t it = mt_itemsize(dt);
  int64_t g = a->groups, Cg = a->C / g, Coutg = a->Cout / g, K = prod_of(a->k, a->nsp);
  int64_t Lin = prod_of(a->in, a->nsp), Lout = prod_of(a->out, a->nsp);
  bool tr = a->transposed;
  int64_t Ck = tr ? Coutg * K : Cg * K, L = tr ? Lin : Lout;
  int64_t sz[3] = {1, tr ? a->Cout * K : a->C * K, L};
  mt_tensor *cols = NULL;
  offsets o = {0};
  mt_status s = mt_new_cpu(sz, 3, dt, "convolution", &cols);
  if (!s) s = offsets_open(&o, g);
  for (int64_t n = begin; n < end && !s; n++) {
    if (!tr) {
      s = im2col_raw(cols->_data, j->x->_data + n * a->C * Lin * (int64_t)it, 1, a->C, dt, &j->geo);
      if (j->bias) {
        float *rn = (float *)j->r->_data + n * a->Cout * L;
        for (int64_t co = 0; co < a->Cout; co++)
          for (int64_t l = 0; l < L; l++) rn[co * L + l] = j->bias[co];
      }
      for (int64_t gi = 0; gi < g; gi++) {
        o.a[gi] = gi * Coutg * Ck;
        o.b[gi] = gi * Ck * L;
        o.c[gi] = (n * a->Cout + gi * Coutg) * L;
      }
      if (!s)
        s = gemm_batch(dt, g, Coutg, L, Ck, j->w->_data, (mt_matrix_geo){Coutg, Ck, Ck, 1}, cols->_data,
                       (mt_matrix_geo){Ck, L, L, 1}, j->r->_data, (mt_matrix_geo){Coutg, L, L, 1}, j->beta, &o);
    } else {
      for (int64_t gi = 0; gi < g; gi++) {
        o.a[gi] = gi * Cg * Ck;
        o.b[gi] = (n * a->C + gi * Cg) * L;
        o.c[gi] = gi * Ck * L;
      }
      s = gemm_batch(dt, g, Ck, L, Cg, j->w->_data, (mt_matrix_geo){Ck, Cg, 1, Ck}, j->x->_data,
                     (mt_matrix_geo){Cg, L, L, 1}, cols->_data, (mt_matrix_geo){Ck, L, L, 1}, 0, &o);
      if (!s) s = col2im_raw(j->r->_data + n * a->Cout * Lout * (int64_t)it, cols->_data, 1, a->Cout, dt, &j->geo);
    }
  }
  free(o.a);
  if (cols) mt_tensor_release(cols);
  if (s) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

static mt_status run_fused(const mt_conv_args *a, const mt_tensor *x, const mt_tensor *w, mt_tensor *r,
                           const float *bias, double beta) {
  fused_job j = {a, x, w, r, bias, bias ? 1 : beta,
                 a->transposed ? geo_of(a, a->out, a->in) : geo_of(a, a->in, a->out), 0};
  mt_parallel_for(a->N, 1, fused_range, &j);
  if (j.failed) return mt_error(MT_ENOMEM, "convolution: out of memory for the columns of a sample");
  return MT_OK;
}

/* r = conv(x, w) (+ the bias preloaded in r when beta == 1; bias: the fused path adds it per sample) */
static mt_status conv_forward(const mt_conv_args *a, const mt_tensor *x, const mt_tensor *w, mt_tensor *r,
                              const mt_tensor *bias) {
  int dt = x->_dtype;
  size_t it = mt_itemsize(dt);
  int64_t N = a->N, g = a->groups, Cg = a->C / g, Coutg = a->Cout / g, K = prod_of(a->k, a->nsp);
  int64_t Ck = Cg * K, L = prod_of(a->out, a->nsp);
  bool pw = pointwise(a);
  if (!pw && fused(a, dt, Coutg, L, Ck)) return run_fused(a, x, w, r, bias ? (const float *)bias->_data : NULL, 0);
  double beta = 0;
  if (bias) {
    bias_planes(r, bias, L, false);
    beta = 1;
  }
  int64_t chunk = pw ? N : chunk_of(N, a->C * K * L * (int64_t)it);
  mt_tensor *cols = NULL;
  mt_status s = MT_OK;
  offsets o;
  MT_TRY(offsets_open(&o, chunk * g));
  if (!pw) {
    int64_t sz[3] = {chunk, a->C * K, L};
    s = mt_new_cpu(sz, 3, dt, "convolution", &cols);
    if (s) {
      free(o.a);
      return s;
    }
  }
  mt_conv_geo geo = geo_of(a, a->in, a->out);
  int64_t Lin = prod_of(a->in, a->nsp);
  for (int64_t n0 = 0; n0 < N && s == MT_OK; n0 += chunk) {
    int64_t nc = N - n0 < chunk ? N - n0 : chunk;
    const char *B;
    if (pw) {
      B = x->_data;
    } else {
      s = im2col_raw(cols->_data, x->_data + n0 * a->C * Lin * (int64_t)it, nc, a->C, dt, &geo);
      B = cols->_data;
    }
    for (int64_t p = 0; p < nc * g; p++) {
      int64_t n = p / g, gi = p % g;
      o.a[p] = gi * Coutg * Ck;
      o.b[p] = pw ? ((n0 + n) * a->C + gi * Cg) * L : (n * a->C * K + gi * Ck) * L;
      o.c[p] = ((n0 + n) * a->Cout + gi * Coutg) * L;
    }
    if (!s)
      s = gemm_batch(dt, nc * g, Coutg, L, Ck, w->_data, (mt_matrix_geo){Coutg, Ck, Ck, 1}, B,
                     (mt_matrix_geo){Ck, L, L, 1}, r->_data, (mt_matrix_geo){Coutg, L, L, 1}, beta, &o);
  }
  if (cols) mt_tensor_release(cols);
  free(o.a);
  return s;
}

/* transposed: r = col2im(W^T @ x) (+ bias), or, pointwise, the products straight into r */
static mt_status conv_transposed_forward(const mt_conv_args *a, const mt_tensor *x, const mt_tensor *w, mt_tensor *r,
                                         const mt_tensor *bias) {
  int dt = x->_dtype;
  size_t it = mt_itemsize(dt);
  int64_t N = a->N, g = a->groups, Cg = a->C / g, Coutg = a->Cout / g, K = prod_of(a->k, a->nsp);
  int64_t Ck = Coutg * K, L = prod_of(a->in, a->nsp), Lout = prod_of(a->out, a->nsp);
  bool pw = pointwise(a);
  double beta = 0;
  if (pw && bias) {
    bias_planes(r, bias, Lout, false);
    beta = 1;
  }
  mt_status s = MT_OK;
  if (!pw && fused(a, dt, Ck, L, Cg)) {
    s = run_fused(a, x, w, r, NULL, 0);
    if (!s && bias) bias_planes(r, bias, Lout, true);
    return s;
  }
  int64_t chunk = pw ? N : chunk_of(N, a->Cout * K * L * (int64_t)it);
  mt_tensor *cols = NULL;
  offsets o;
  MT_TRY(offsets_open(&o, chunk * g));
  if (!pw) {
    int64_t sz[3] = {chunk, a->Cout * K, L};
    s = mt_new_cpu(sz, 3, dt, "convolution", &cols);
    if (s) {
      free(o.a);
      return s;
    }
  }
  /* col2im of the output image from blocks laid on the input's grid */
  mt_conv_geo geo = geo_of(a, a->out, a->in);
  for (int64_t n0 = 0; n0 < N && s == MT_OK; n0 += chunk) {
    int64_t nc = N - n0 < chunk ? N - n0 : chunk;
    for (int64_t p = 0; p < nc * g; p++) {
      int64_t n = p / g, gi = p % g;
      o.a[p] = gi * Cg * Ck;
      o.b[p] = ((n0 + n) * a->C + gi * Cg) * L;
      o.c[p] = pw ? ((n0 + n) * a->Cout + gi * Coutg) * L : (n * a->Cout * K + gi * Ck) * L;
    }
    /* W_g stored (Cg x Ck) row-major, read transposed */
    s = gemm_batch(dt, nc * g, Ck, L, Cg, w->_data, (mt_matrix_geo){Ck, Cg, 1, Ck}, x->_data,
                   (mt_matrix_geo){Cg, L, L, 1}, pw ? r->_data : cols->_data, (mt_matrix_geo){Ck, L, L, 1},
                   beta, &o);
    if (!s && !pw) s = col2im_raw(r->_data + n0 * a->Cout * Lout * (int64_t)it, cols->_data, nc, a->Cout, dt, &geo);
  }
  if (cols) mt_tensor_release(cols);
  free(o.a);
  if (!s && !pw && bias) bias_planes(r, bias, Lout, true);
  return s;
}

mt_status mt_cpu_convolution(mt_tensor *out, const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias,
                             const mt_conv_args *a) {
  if (out->_numel == 0) return MT_OK;
  if (a->C == 0 || prod_of(a->k, a->nsp) == 0) { /* nothing to sum: the bias, or zeros */
    if (bias) bias_planes(out, bias, prod_of(a->out, a->nsp), false);
    else memset(out->_data, 0, (size_t)out->_numel * mt_itemsize(out->_dtype));
    return MT_OK;
  }
  mt_status s = mt_onednn_convolution(out, x, w, bias, a);
  if (s != MT_ENOTIMPL) return s;
  return a->transposed ? conv_transposed_forward(a, x, w, out, bias) : conv_forward(a, x, w, out, bias);
}

/* ---------------------------------------------------------------- the weight's gradient
 * gw (Qc, Pc/g K) per group g: sum over samples of Q[n]_g (Qc/g x L) @ cols(P[n])_g^T (L x Pc/g K), where
 * P is the side whose columns are taken (the input; transposed: the output's gradient) and Q the other.
 * Small products (as fused() says): each pool thread takes samples one at a time, makes P[n]'s columns
 * and Q[n]^T (L x Qc) in its own scratch and adds cols @ Q^T (both read along rows, which the small
 * kernel wants) into its own gw^T; the threads' sums are added and transposed at the end. Larger ones:
 * the columns of a chunk of samples, then per sample one product into gw with the BLAS's threads
 * (the transposed operand passed as such), the first writing, the others adding. */
typedef struct {
  const mt_tensor *P, *Q;
  mt_conv_geo geo;
  int64_t N, g, Pc, Qc, K, L, Lp;
  float *sums; /* one gw^T (g, Ck, Qc/g) per range, nranges of them */
  int nranges, next;
  int failed;
} wgrad_job;

static void wgrad_range(void *ctx, int64_t begin, int64_t end) {
  wgrad_job *j = ctx;
  int64_t g = j->g, Ck = j->Pc / g * j->K, Qg = j->Qc / g, L = j->L;
  int slot = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
  if (slot >= j->nranges) { /* never: mt_parallel_for runs at most nranges ranges */
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  float *acc = j->sums + (int64_t)slot * g * Ck * Qg;
  memset(acc, 0, sizeof(float) * (size_t)(g * Ck * Qg));
  int64_t csz[3] = {1, j->Pc * j->K, L};
  mt_tensor *cols = NULL;
  float *qt = malloc(sizeof(float) * (size_t)(L * j->Qc + 1));
  offsets o = {0};
  mt_status s = qt ? MT_OK : MT_ENOMEM;
  if (!s) s = mt_new_cpu(csz, 3, MT_FLOAT32, "convolution_backward", &cols);
  if (!s) s = offsets_open(&o, g);
  for (int64_t n = begin; n < end && !s; n++) {
    s = im2col_raw(cols->_data, j->P->_data + n * j->Pc * j->Lp * 4, 1, j->Pc, MT_FLOAT32, &j->geo);
    const float *q = (const float *)j->Q->_data + n * j->Qc * L;
    for (int64_t c = 0; c < j->Qc; c++)
      for (int64_t l = 0; l < L; l++) qt[l * j->Qc + c] = q[c * L + l];
    for (int64_t gi = 0; gi < g; gi++) {
      o.a[gi] = gi * Ck * L;
      o.b[gi] = gi * Qg;
      o.c[gi] = gi * Ck * Qg;
    }
    /* acc_g (Ck x Qg) += cols_g (Ck x L) @ qt_g (L x Qg) */
    if (!s)
      s = gemm_batch(MT_FLOAT32, g, Ck, Qg, L, cols->_data, (mt_matrix_geo){Ck, L, L, 1}, (const char *)qt,
                     (mt_matrix_geo){L, Qg, j->Qc, 1}, (char *)acc, (mt_matrix_geo){Ck, Qg, Qg, 1}, 1, &o);
  }
  free(o.a);
  free(qt);
  if (cols) mt_tensor_release(cols);
  if (s) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

mt_status mt_cpu_conv_weight_grad(mt_tensor *gw, const mt_tensor *gout, const mt_tensor *x, const mt_conv_args *a) {
  if (gw->_numel == 0) return MT_OK;
  int dt = x->_dtype;
  size_t it = mt_itemsize(dt);
  const mt_tensor *P = a->transposed ? gout : x, *Q = a->transposed ? x : gout;
  int nsp = a->nsp;
  int64_t K = prod_of(a->k, nsp), N = a->N, Pc = P->_sizes[1], Qc = Q->_sizes[1], g = a->groups;
  mt_conv_geo geo;
  memset(&geo, 0, sizeof geo);
  geo.nsp = nsp;
  int64_t L = 1, Lp = 1;
  for (int i = 0; i < nsp; i++) {
    geo.in[i] = P->_sizes[2 + i];
    geo.out[i] = Q->_sizes[2 + i]; /* the blocks: one per position of the other side */
    geo.k[i] = a->k[i];
    geo.s[i] = a->s[i];
    geo.p[i] = a->p[i];
    geo.d[i] = a->d[i];
    L *= geo.out[i];
    Lp *= geo.in[i];
  }
  if (N == 0 || L == 0) {
    memset(gw->_data, 0, (size_t)gw->_numel * it);
    return MT_OK;
  }
  mt_status s = mt_onednn_conv_weight_grad(gw, gout, x, a);
  if (s != MT_ENOTIMPL) return s;
  s = MT_OK;
  int64_t Ck = Pc / g * K, Qg = Qc / g;
  if (fused(a, dt, Ck, Qg, L)) {
    int nt = mt_get_num_threads();
    wgrad_job j = {P, Q, geo, N, g, Pc, Qc, K, L, Lp, NULL, nt, 0, 0};
    j.sums = malloc(sizeof(float) * (size_t)(nt * g * Ck * Qg));
    if (!j.sums) return mt_error(MT_ENOMEM, "convolution_backward: out of memory");
    mt_parallel_for(N, 1, wgrad_range, &j);
    if (j.failed) s = mt_error(MT_ENOMEM, "convolution_backward: out of memory for the columns of a sample");
    if (!s) { /* gw[gi Qg + q, c] = sum over the ranges of sums[r][gi][c][q] */
      float *w = (float *)gw->_data;
      int used = j.next < nt ? j.next : nt;
      for (int64_t gi = 0; gi < g; gi++)
        for (int64_t q = 0; q < Qg; q++)
          for (int64_t c = 0; c < Ck; c++) {
            float v = 0;
            for (int r = 0; r < used; r++) v += j.sums[((int64_t)r * g + gi) * Ck * Qg + c * Qg + q];
            w[(gi * Qg + q) * Ck + c] = v;
          }
    }
    free(j.sums);
    return s;
  }
  /* a 1x1 kernel of stride 1 without padding: the columns are P itself */
  bool pw = K == 1;
  for (int i = 0; i < nsp; i++) pw = pw && a->s[i] == 1 && a->p[i] == 0 && geo.in[i] == geo.out[i];
  int64_t chunk = pw ? N : chunk_of(N, Pc * K * L * (int64_t)it);
  int64_t csz[3] = {chunk, Pc * K, L};
  mt_tensor *cols = NULL;
  offsets o = {0};
  if (!pw) s = mt_new_cpu(csz, 3, dt, "convolution_backward", &cols);
  if (!s) s = offsets_open(&o, g);
  for (int64_t n0 = 0; n0 < N && !s; n0 += chunk) {
    int64_t nc = N - n0 < chunk ? N - n0 : chunk;
    if (!pw) s = im2col_raw(cols->_data, P->_data + n0 * Pc * Lp * (int64_t)it, nc, Pc, dt, &geo);
    const char *B = pw ? P->_data : cols ? cols->_data : NULL;
    for (int64_t n = 0; n < nc && !s; n++) {
      for (int64_t gi = 0; gi < g; gi++) {
        o.a[gi] = ((n0 + n) * Qc + gi * Qg) * L;
        o.b[gi] = ((pw ? n0 + n : n) * Pc * K + gi * Ck) * L;
        o.c[gi] = gi * Qg * Ck;
      }
      /* gw_g (Qg x Ck) (+)= Q[n]_g (Qg x L) @ cols_g^T (L x Ck) */
      s = gemm_batch(dt, g, Qg, Ck, L, Q->_data, (mt_matrix_geo){Qg, L, L, 1}, B, (mt_matrix_geo){L, Ck, 1, L},
                     gw->_data, (mt_matrix_geo){Qg, Ck, Ck, 1}, n0 + n == 0 ? 0 : 1, &o);
    }
  }
  free(o.a);
  if (cols) mt_tensor_release(cols);
  return s;
}
