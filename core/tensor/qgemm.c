/* qgemm.c -- the CPU's quantized kernels (issue 25): quantize / dequantize (per tensor or per channel),
 * the uint8 im2col of quantized convolutions, and the int8 product of quantized linear layers:
 *
 *   acc[i, j] = sum_k A[i, k] * W[j, k]     A uint8 (M x K, rows of the quantized activation), W int8
 *                                           (N x K, the weight as nn.Linear holds it), exact in int32
 *   v = float(acc - a_zp * colsum(W)[j] - w_zp[j] * rowsum(A)[i] + K * a_zp * w_zp[j])
 *         * (float)(a_scale * w_scale[j]) + bias[j]                     (float32)
 *   out = v (float32: dynamic quantization), or uint8 clamp(out_zp + round_half_even(v / out_scale))
 *   (static quantization; relu: clamped below at out_zp)
 *
 * The integer products take VNNI's vpdpbusd (4 uint8 x int8 products a lane, 64 an instruction) where the
 * CPU has AVX512-VNNI at the AVX-512 kernel level, AVX2's vpmaddwd on the bytes widened to 16 bits
 * otherwise, or a plain loop (MOONTORCH_VMATH=avx2 / 0): integer arithmetic, so every path gives the same
 * bits, and the float epilogue is one loop shared by all. Layout: W is packed per panel of 32 columns as
 * 32-bit quads, wp[kq * 32 + j] = W[j, 4kq..4kq+3]; A's rows are read as they are when K is a multiple of 4,
 * else copied with zeros past K (zeros add nothing to acc and the sums are taken from A itself). */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MT_Q_X86 1
#endif

#define NR 32
#define MR 8

enum { QPATH_SCALAR, QPATH_AVX2, QPATH_VNNI };
static int q_path = -1;
static int choose_qpath(void) {
  const char *p = mt_kernels_int8(); /* cpu.c */
  return !strcmp(p, "avx512_vnni") ? QPATH_VNNI : !strcmp(p, "avx2") ? QPATH_AVX2 : QPATH_SCALAR;
}

typedef int32_t i32_any __attribute__((aligned(1), may_alias));

/* ---------------------------------------------------------------- packing W (N x K, row stride ldw) */
static void pack_w_panel(uint32_t *dst, const int8_t *W, int64_t ldw, int64_t K, int64_t j0, int64_t w) {
  int64_t KQ = (K + 3) / 4;
  memset(dst, 0, (size_t)KQ * NR * sizeof *dst);
  for (int64_t j = 0; j < w; j++) {
    const int8_t *row = W + (j0 + j) * ldw;
    int64_t kq = 0;
    for (; kq < K / 4; kq++) {
      uint32_t v;
      memcpy(&v, row + 4 * kq, 4);
      dst[kq * NR + j] = v;
    }
    if (K % 4) {
      uint8_t q[4] = {0, 0, 0, 0};
      for (int64_t k = 4 * kq; k < K; k++) q[k - 4 * kq] = (uint8_t)row[k];
      uint32_t v;
      memcpy(&v, q, 4);
      dst[kq * NR + j] = v;
    }
  }
}

/* ---------------------------------------------------------------- the integer tiles: acc (rows x NR) */
static void tile_scalar(int64_t KQ, const uint8_t *A, int64_t lda, const uint32_t *wp, int64_t rows, int32_t *C,
                        int64_t ldc) {
  for (int64_t i = 0; i < rows; i++) {
    int32_t acc[NR] = {0};
    const uint8_t *a = A + i * lda;
    for (int64_t kq = 0; kq < KQ; kq++) {
      const uint8_t *aq = a + 4 * kq;
      for (int j = 0; j < NR; j++) {
        uint32_t b = wp[kq * NR + j];
        acc[j] += aq[0] * (int8_t)(b & 0xff) + aq[1] * (int8_t)((b >> 8) & 0xff) + aq[2] * (int8_t)((b >> 16) & 0xff) +
                  aq[3] * (int8_t)(b >> 24);
      }
    }
    memcpy(C + i * ldc, acc, sizeof acc);
  }
}

#ifdef MT_Q_X86
#define TGT2 __attribute__((target("avx2,fma")))
/* AVX2: a quad's bytes 0, 2 and 1, 3 as 16-bit lanes; vpmaddwd adds their products in pairs, exactly */
static inline __attribute__((always_inline)) TGT2 void tile_avx2(const int R, int64_t KQ, const uint8_t *A, int64_t lda,
                                                                   const uint32_t *wp, int32_t *C, int64_t ldc) {
  __m256i acc[2][4];
  for (int i = 0; i < R; i++)
    for (int v = 0; v < 4; v++) acc[i][v] = _mm256_setzero_si256();
  const __m256i lo8 = _mm256_set1_epi16(0x00ff);
  for (int64_t kq = 0; kq < KQ; kq++) {
    __m256i be[4], bo[4];
    for (int v = 0; v < 4; v++) {
      __m256i b = _mm256_loadu_si256((const __m256i *)(wp + kq * NR + 8 * v));
      be[v] = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8); /* bytes 0, 2: sign-extended */
      bo[v] = _mm256_srai_epi16(b, 8);                        /* bytes 1, 3 */
    }
    for (int i = 0; i < R; i++) {
      __m256i a = _mm256_set1_epi32(*(const i32_any *)(A + i * lda + 4 * kq));
      __m256i ae = _mm256_and_si256(a, lo8), ao = _mm256_srli_epi16(a, 8);
      for (int v = 0; v < 4; v++) {
        acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(ae, be[v]));
        acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(ao, bo[v]));
      }
    }
  }
  for (int i = 0; i < R; i++)
    for (int v = 0; v < 4; v++) _mm256_storeu_si256((__m256i *)(C + i * ldc + 8 * v), acc[i][v]);
}
static TGT2 void tiles_avx2(int64_t KQ, const uint8_t *A, int64_t lda, const uint32_t *wp, int64_t rows, int32_t *C,
                            int64_t ldc) {
  int64_t i = 0;
  for (; i + 2 <= rows; i += 2) tile_avx2(2, KQ, A + i * lda, lda, wp, C + i * ldc, ldc);
  if (i < rows) tile_avx2(1, KQ, A + i * lda, lda, wp, C + i * ldc, ldc);
}

#define TGTV __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")))
static inline __attribute__((always_inline)) TGTV void tile_vnni(const int R, int64_t KQ, const uint8_t *A, int64_t lda,
                                                                   const uint32_t *wp, int32_t *C, int64_t ldc) {
  __m512i acc0[MR], acc1[MR];
  for (int i = 0; i < R; i++) acc0[i] = acc1[i] = _mm512_setzero_si512();
  for (int64_t kq = 0; kq < KQ; kq++) {
    __m512i b0 = _mm512_loadu_si512(wp + kq * NR), b1 = _mm512_loadu_si512(wp + kq * NR + 16);
    for (int i = 0; i < R; i++) {
      __m512i a = _mm512_set1_epi32(*(const i32_any *)(A + i * lda + 4 * kq));
      acc0[i] = _mm512_dpbusd_epi32(acc0[i], a, b0);
      acc1[i] = _mm512_dpbusd_epi32(acc1[i], a, b1);
    }
  }
  for (int i = 0; i < R; i++) {
    _mm512_storeu_si512(C + i * ldc, acc0[i]);
    _mm512_storeu_si512(C + i * ldc + 16, acc1[i]);
  }
}
static TGTV void tiles_vnni(int64_t KQ, const uint8_t *A, int64_t lda, const uint32_t *wp, int64_t rows, int32_t *C,
                            int64_t ldc) {
  switch (rows) {
  case 8: tile_vnni(8, KQ, A, lda, wp, C, ldc); break;
  case 7: tile_vnni(7, KQ, A, lda, wp, C, ldc); break;
  case 6: tile_vnni(6, KQ, A, lda, wp, C, ldc); break;
  case 5: tile_vnni(5, KQ, A, lda, wp, C, ldc); break;
  case 4: tile_vnni(4, KQ, A, lda, wp, C, ldc); break;
  case 3: tile_vnni(3, KQ, A, lda, wp, C, ldc); break;
  case 2: tile_vnni(2, KQ, A, lda, wp, C, ldc); break;
  default: tile_vnni(1, KQ, A, lda, wp, C, ldc); break;
  }
}
#endif

/* ---------------------------------------------------------------- the product and its epilogue */
typedef struct {
  const mt_qgemm *g;
  const uint8_t *A; /* rows of lda bytes, each a whole number of quads */
  int64_t lda, KQ;
  const int32_t *rowsum; /* per row of A */
  const int32_t *colsum; /* per row of W */
  int path;
  int failed;
} qjob;

/* the float epilogue of one row of acc (columns [j0, j0 + w)) */
static void epilogue(const qjob *q, int64_t i, int64_t j0, int64_t w, const int32_t *acc) {
  const mt_qgemm *g = q->g;
  int64_t K = g->K;
  int32_t azp = (int32_t)g->a_zp;
  for (int64_t j = 0; j < w; j++) {
    int64_t c = j0 + j;
    int32_t wzp = g->w_zp ? (int32_t)g->w_zp[g->per_channel ? c : 0] : 0;
    double ws = g->w_scale[g->per_channel ? c : 0];
    int32_t v = acc[j] - azp * q->colsum[c] - wzp * q->rowsum[i] + (int32_t)K * azp * wzp;
    float r = (float)v * (float)(g->a_scale * ws);
    if (g->bias) r += g->bias[c];
    if (g->out_u8) {
      float t = nearbyintf(r / (float)g->out_scale) + (float)g->out_zp;
      float lo = g->relu ? (float)g->out_zp : 0.0f;
      if (!(t >= lo)) t = lo; /* NaN too */
      if (t > 255.0f) t = 255.0f;
      g->out_u8[i * g->ldo + c] = (uint8_t)t;
    } else {
      if (g->relu && !(r > 0)) r = r != r ? r : 0.0f;
      g->out_f32[i * g->ldo + c] = r;
    }
  }
}

static void q_panels(void *ctx, int64_t p0, int64_t p1) {
  qjob *q = ctx;
  const mt_qgemm *g = q->g;
  uint32_t *wp = mt_aligned_alloc((size_t)q->KQ * NR * sizeof(uint32_t));
  int32_t *acc = mt_aligned_alloc((size_t)MR * NR * sizeof(int32_t));
  if (!wp || !acc) {
    mt_aligned_free(wp);
    mt_aligned_free(acc);
    __atomic_store_n(&q->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t p = p0; p < p1; p++) {
    int64_t j0 = p * NR, w = g->N - j0 < NR ? g->N - j0 : NR;
    pack_w_panel(wp, g->W, g->ldw, g->K, j0, w);
    for (int64_t i0 = 0; i0 < g->M; i0 += MR) {
      int64_t rows = g->M - i0 < MR ? g->M - i0 : MR;
      const uint8_t *a = q->A + i0 * q->lda;
#ifdef MT_Q_X86
      if (q->path == QPATH_VNNI) tiles_vnni(q->KQ, a, q->lda, wp, rows, acc, NR);
      else if (q->path == QPATH_AVX2) tiles_avx2(q->KQ, a, q->lda, wp, rows, acc, NR);
      else tile_scalar(q->KQ, a, q->lda, wp, rows, acc, NR);
#else
      tile_scalar(q->KQ, a, q->lda, wp, rows, acc, NR);
#endif
      for (int64_t r = 0; r < rows; r++) epilogue(q, i0 + r, j0, w, acc + r * NR);
    }
  }
  mt_aligned_free(wp);
  mt_aligned_free(acc);
}

mt_status mt_cpu_qgemm(const mt_qgemm *g) {
  if (g->M <= 0 || g->N <= 0) return MT_OK;
  if (q_path < 0) q_path = choose_qpath();
  int64_t M = g->M, N = g->N, K = g->K, KQ = (K + 3) / 4;
  int32_t *sums = malloc((size_t)(M + N) * sizeof(int32_t));
  if (!sums) return mt_error(MT_ENOMEM, "quantized linear: out of memory");
  for (int64_t i = 0; i < M; i++) {
    int32_t s = 0;
    const uint8_t *a = g->A + i * g->lda;
    for (int64_t k = 0; k < K; k++) s += a[k];
    sums[i] = s;
  }
  for (int64_t j = 0; j < N; j++) {
    int32_t s = 0;
    const int8_t *w = g->W + j * g->ldw;
    for (int64_t k = 0; k < K; k++) s += w[k];
    sums[M + j] = s;
  }
  const uint8_t *A = g->A;
  int64_t lda = g->lda;
  uint8_t *pad = NULL;
  if (K % 4) { /* rows padded with zeros to whole quads */
    lda = KQ * 4;
    pad = calloc((size_t)(M * lda + 4), 1);
    if (!pad) {
      free(sums);
      return mt_error(MT_ENOMEM, "quantized linear: out of memory");
    }
    for (int64_t i = 0; i < M; i++) memcpy(pad + i * lda, g->A + i * g->lda, (size_t)K);
    A = pad;
  }
  qjob q = {g, A, lda, KQ, sums, sums + M, q_path, 0};
  int64_t panels = (N + NR - 1) / NR;
  if (mt_get_num_threads() > 1 && !mt_in_parallel() && M * N * K >= 64LL * 1024 && panels > 1)
    mt_parallel_for(panels, 1, q_panels, &q);
  else
    q_panels(&q, 0, panels);
  free(sums);
  free(pad);
  if (q.failed) return mt_error(MT_ENOMEM, "quantized linear: out of memory");
  return MT_OK;
}

/* ---------------------------------------------------------------- quantize / dequantize */
/* x float32 contiguous -> q (int8 / uint8 / int32) contiguous: q = clamp(zp + nearbyint(x * (1 / scale))),
 * as PyTorch's quantize_val (the reciprocal in float32); per channel: scale[c], zp[c] for the index c of
 * dim `axis` (outer x C x inner elements) */
mt_status mt_cpu_quantize(mt_tensor *q, const mt_tensor *x, const double *scales, const int64_t *zps, int64_t outer,
                          int64_t channels, int64_t inner, int64_t qmin, int64_t qmax) {
  const float *X = (const float *)x->_data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < channels; c++) {
      float inv = 1.0f / (float)scales[c];
      int64_t zp = zps[c];
      int64_t base = (o * channels + c) * inner;
      for (int64_t e = 0; e < inner; e++) {
        float r = nearbyintf(X[base + e] * inv);
        int64_t v;
        if (r != r) v = zp; /* NaN: the zero point */
        else if (r > 4e18f) v = qmax;
        else if (r < -4e18f) v = qmin;
        else v = (int64_t)r + zp;
        if (v < qmin) v = qmin;
        if (v > qmax) v = qmax;
        switch (q->_dtype) {
        case MT_INT8: ((int8_t *)q->_data)[base + e] = (int8_t)v; break;
        case MT_UINT8: ((uint8_t *)q->_data)[base + e] = (uint8_t)v; break;
        default: ((int32_t *)q->_data)[base + e] = (int32_t)v; break;
        }
      }
    }
  return MT_OK;
}

/* q -> x float32: (q - zp) * scale; per tensor (channels == 1) in float32 with the scale rounded to float32
 * first (PyTorch's vectorised dequantize), per channel in float64 rounded once (its per-channel loop) */
mt_status mt_cpu_dequantize(mt_tensor *x, const mt_tensor *q, const double *scales, const int64_t *zps, int64_t outer,
                            int64_t channels, int64_t inner) {
  float *X = (float *)x->_data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < channels; c++) {
      float s = (float)scales[c];
      double sd = scales[c];
      int64_t zp = zps[c];
      int64_t base = (o * channels + c) * inner;
      for (int64_t e = 0; e < inner; e++) {
        int64_t v;
        switch (q->_dtype) {
        case MT_INT8: v = ((const int8_t *)q->_data)[base + e]; break;
        case MT_UINT8: v = ((const uint8_t *)q->_data)[base + e]; break;
        default: v = ((const int32_t *)q->_data)[base + e]; break;
        }
        X[base + e] = channels == 1 ? (float)(v - zp) * s : (float)((double)(v - zp) * sd);
      }
    }
  return MT_OK;
}

/* ---------------------------------------------------------------- im2col of a uint8 image */
/* x (N, C, H, W) uint8 contiguous -> cols (N * OH * OW, C * KH * KW) uint8, outside the image the zero
 * point (the quantized 0) */
mt_status mt_cpu_qim2col(mt_tensor *cols, const mt_tensor *x, const int64_t *k, const int64_t *s, const int64_t *p,
                         const int64_t *d, const int64_t *o, uint8_t fill) {
  int64_t N = x->_sizes[0], C = x->_sizes[1], H = x->_sizes[2], W = x->_sizes[3];
  const uint8_t *X = (const uint8_t *)x->_data;
  uint8_t *out = (uint8_t *)cols->_data;
  int64_t row = C * k[0] * k[1];
  for (int64_t n = 0; n < N; n++)
    for (int64_t oh = 0; oh < o[0]; oh++)
      for (int64_t ow = 0; ow < o[1]; ow++) {
        uint8_t *r = out + ((n * o[0] + oh) * o[1] + ow) * row;
        for (int64_t c = 0; c < C; c++)
          for (int64_t kh = 0; kh < k[0]; kh++) {
            int64_t ih = oh * s[0] - p[0] + kh * d[0];
            for (int64_t kw = 0; kw < k[1]; kw++) {
              int64_t iw = ow * s[1] - p[1] + kw * d[1];
              *r++ = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? X[((n * C + c) * H + ih) * W + iw] : fill;
            }
          }
      }
  return MT_OK;
}
