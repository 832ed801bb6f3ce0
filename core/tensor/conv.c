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
#define NO_MEMCPY __attribute__((optimize("no-tree-loop-distribute-patterns")))
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

mt_status mt_cpu_im2col(mt_tensor *cols, const mt_tensor *image, const mt_conv_geo *g) {
  conv_job j;
  job_of(&j, g, image->_sizes[1]);
  j.cols = cols->_data;
  j.image = image->_data;
  j.dt = image->_dtype;
  return run(im2col_planes_f32, im2col_planes_f64, &j, image->_sizes[0] * image->_sizes[1], "im2col");
}

mt_status mt_cpu_col2im(mt_tensor *image, const mt_tensor *cols, const mt_conv_geo *g) {
  conv_job j;
  job_of(&j, g, image->_sizes[1]);
  j.cols = cols->_data;
  j.image = image->_data;
  j.dt = image->_dtype;
  return run(col2im_planes_f32, col2im_planes_f64, &j, image->_sizes[0] * image->_sizes[1], "col2im");
}
