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
  const uint32_t *Wp;    /* W's panels, packed (NULL: each thread packs the panels it computes) */
  const int32_t *colterm; /* per column: a_zp * colsum(W) - K * a_zp * w_zp */
  const int32_t *wzp;     /* per column, or NULL when every weight zero point is 0 */
  const float *mult;      /* per column: (float)(a_scale * w_scale) */
  int path;
  int failed;
} qjob;

#ifdef MT_Q_X86
/* speed: uint8 out = clamp(nearbyint(v / os) + zp, lo, 255), 16 at a time, the scalar loop's operations */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void requant_512(uint8_t *o, const float *v,
                                                                                     int64_t w, float os, float zp,
                                                                                     float lo) {
  const __m512 vos = _mm512_set1_ps(os), vzp = _mm512_set1_ps(zp), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(255.0f);
  for (int64_t j = 0; j < w; j += 16) {
    __mmask16 m = w - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (w - j)) - 1);
    __m512 t = _mm512_div_ps(_mm512_maskz_loadu_ps(m, v + j), vos);
    t = _mm512_add_ps(_mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzp);
    t = _mm512_min_ps(_mm512_max_ps(t, vlo), vhi); /* NaN: lo */
    _mm_mask_storeu_epi8(o + j, m, _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(t)));
  }
}
#endif

/* the float epilogue of one row of acc (columns [j0, j0 + w)): one loop for every path */
static void epilogue(const qjob *q, int64_t i, int64_t j0, int64_t w, const int32_t *acc) {
  const mt_qgemm *g = q->g;
  const int32_t *ct = q->colterm + j0;
  const float *mu = q->mult + j0;
  const float *bias = g->bias ? g->bias + j0 : NULL;
  int32_t rs = q->rowsum[i];
  float vbuf[NR];
  /* float32 out without relu: computed in place */
  float *v = g->out_u8 || g->relu ? vbuf : g->out_f32 + i * g->ldo + j0;
  for (int64_t j = 0; j < w; j++) {
    int32_t t = acc[j] - ct[j];
    if (q->wzp) t -= q->wzp[j0 + j] * rs;
    v[j] = (float)t * mu[j];
  }
  if (bias)
    for (int64_t j = 0; j < w; j++) v[j] += bias[j];
  if (g->out_u8) {
    uint8_t *o = g->out_u8 + i * g->ldo + j0;
    float os = (float)g->out_scale, zp = (float)g->out_zp, lo = g->relu ? (float)g->out_zp : 0.0f;
#ifdef MT_Q_X86
    if (q->path == QPATH_VNNI) { /* the same operations, 16 at a time */
      requant_512(o, v, w, os, zp, lo);
      return;
    }
#endif
    for (int64_t j = 0; j < w; j++) {
      float t = nearbyintf(v[j] / os) + zp;
      t = t >= lo ? t : lo; /* NaN too */
      t = t <= 255.0f ? t : 255.0f;
      o[j] = (uint8_t)t;
    }
  } else {
    float *o = g->out_f32 + i * g->ldo + j0;
    if (g->relu)
      for (int64_t j = 0; j < w; j++) o[j] = v[j] > 0 ? v[j] : (v[j] != v[j] ? v[j] : 0.0f);
  }
}

static void q_panels(void *ctx, int64_t p0, int64_t p1) {
  qjob *q = ctx;
  const mt_qgemm *g = q->g;
  uint32_t *own = q->Wp ? NULL : mt_aligned_alloc((size_t)q->KQ * NR * sizeof(uint32_t));
  int32_t *acc = mt_aligned_alloc((size_t)MR * NR * sizeof(int32_t));
  if ((!q->Wp && !own) || !acc) {
    mt_aligned_free(own);
    mt_aligned_free(acc);
    __atomic_store_n(&q->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t p = p0; p < p1; p++) {
    int64_t j0 = p * NR, w = g->N - j0 < NR ? g->N - j0 : NR;
    const uint32_t *wp = q->Wp ? q->Wp + p * q->KQ * NR : own;
    if (!q->Wp) pack_w_panel(own, g->W, g->ldw, g->K, j0, w);
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
  mt_aligned_free(own);
  mt_aligned_free(acc);
}

/* the column sums of W (N x K) */
static void colsums(const int8_t *W, int64_t ldw, int64_t N, int64_t K, int32_t *out) {
  for (int64_t j = 0; j < N; j++) {
    int32_t s = 0;
    const int8_t *w = W + j * ldw;
    for (int64_t k = 0; k < K; k++) s += w[k];
    out[j] = s;
  }
}

mt_status mt_cpu_qpack(mt_tensor *packed, const mt_tensor *w) {
  int64_t N = w->_sizes[0], K = w->_sizes[1], KQ = (K + 3) / 4, panels = (N + NR - 1) / NR;
  uint32_t *d = (uint32_t *)packed->_data;
  const int8_t *W = (const int8_t *)w->_data;
  for (int64_t p = 0; p < panels; p++) {
    int64_t j0 = p * NR;
    pack_w_panel(d + p * KQ * NR, W, K, K, j0, N - j0 < NR ? N - j0 : NR);
  }
  colsums(W, K, N, K, (int32_t *)(d + panels * KQ * NR));
  return MT_OK;
}

mt_status mt_cpu_qgemm(const mt_qgemm *g) {
  if (g->M <= 0 || g->N <= 0) return MT_OK;
  if (q_path < 0) q_path = choose_qpath();
  int64_t M = g->M, N = g->N, K = g->K, KQ = (K + 3) / 4, panels = (N + NR - 1) / NR;
  /* per row: rowsum; per column: colsum -> colterm, the multiplier, the weight zero point */
  char *mem = malloc((size_t)M * 4 + (size_t)N * 16 + 64);
  if (!mem) return mt_error(MT_ENOMEM, "quantized linear: out of memory");
  int32_t *rowsum = (int32_t *)mem, *colterm = rowsum + M, *wzp = colterm + N;
  float *mult = (float *)(wzp + N);
  int32_t *colsum = (int32_t *)(mult + N);
  for (int64_t i = 0; i < M; i++) {
    int32_t s = 0;
    const uint8_t *a = g->A + i * g->lda;
    for (int64_t k = 0; k < K; k++) s += a[k];
    rowsum[i] = s;
  }
  if (g->Wp) memcpy(colsum, g->Wp + panels * KQ * NR, (size_t)N * sizeof(int32_t));
  else colsums(g->W, g->ldw, N, K, colsum);
  int any_wzp = 0;
  int32_t azp = (int32_t)g->a_zp;
  for (int64_t j = 0; j < N; j++) {
    int64_t c = g->per_channel ? j : 0;
    wzp[j] = g->w_zp ? (int32_t)g->w_zp[c] : 0;
    if (wzp[j]) any_wzp = 1;
    colterm[j] = azp * colsum[j] - (int32_t)K * azp * wzp[j];
    mult[j] = (float)(g->a_scale * g->w_scale[c]);
  }
  const uint8_t *A = g->A;
  int64_t lda = g->lda;
  uint8_t *pad = NULL;
  if (K % 4) { /* rows padded with zeros to whole quads */
    lda = KQ * 4;
    pad = calloc((size_t)(M * lda + 4), 1);
    if (!pad) {
      free(mem);
      return mt_error(MT_ENOMEM, "quantized linear: out of memory");
    }
    for (int64_t i = 0; i < M; i++) memcpy(pad + i * lda, g->A + i * g->lda, (size_t)K);
    A = pad;
  }
  qjob q = {g, A, lda, KQ, rowsum, g->Wp, colterm, any_wzp ? wzp : NULL, mult, q_path, 0};
  if (mt_get_num_threads() > 1 && !mt_in_parallel() && M * N * K >= 64LL * 1024 && panels > 1)
    mt_parallel_for(panels, 1, q_panels, &q);
  else
    q_panels(&q, 0, panels);
  free(mem);
  free(pad);
  if (q.failed) return mt_error(MT_ENOMEM, "quantized linear: out of memory");
  return MT_OK;
}

/* ---------------------------------------------------------------- quantize / dequantize */
/* x float32 contiguous -> q (int8 / uint8 / int32) contiguous: q = clamp(zp + nearbyint(x * (1 / scale))),
 * as PyTorch's quantize_val (the reciprocal in float32; a NaN gives qmin, as its conversion of NaN does); per
 * channel: scale[c], zp[c] for the index c of dim `axis` (outer x C x inner elements). The clamp is made on the
 * rounded float (so every path agrees at infinities), then the integer stored. */
#ifdef MT_Q_X86
#define TGT5Q __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
static TGT5Q void quantize_u8s8_512(void *dst, int is_u8, const float *x, int64_t n, float inv, float lo, float hi,
                                     int32_t zp) {
  const __m512 vinv = _mm512_set1_ps(inv), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const __m512i vzp = _mm512_set1_epi32(zp);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
    __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vinv),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_min_ps(_mm512_max_ps(r, vlo), vhi); /* a NaN becomes lo (max's second operand) */
    __m128i v = _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvttps_epi32(r), vzp));
    _mm_mask_storeu_epi8((char *)dst + i, m, v);
  }
  (void)is_u8;
}
#endif
static inline float clampf_q(float r, float lo, float hi) {
  if (!(r >= lo)) r = lo; /* NaN too */
  if (r > hi) r = hi;
  return r;
}
mt_status mt_cpu_quantize(mt_tensor *q, const mt_tensor *x, const double *scales, const int64_t *zps, int64_t outer,
                          int64_t channels, int64_t inner, int64_t qmin, int64_t qmax) {
  const float *X = (const float *)x->_data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < channels; c++) {
      float inv = 1.0f / (float)scales[c];
      int64_t zp = zps[c];
      int64_t base = (o * channels + c) * inner;
      float lo = (float)(qmin - zp), hi = (float)(qmax - zp);
#ifdef MT_Q_X86
      if (q->_dtype != MT_INT32 && mt_cpu_kernel_level() >= MT_CPU_LEVEL_AVX512 && lo >= -512 && hi <= 512) {
        quantize_u8s8_512((char *)q->_data + base, q->_dtype == MT_UINT8, X + base, inner, inv, lo, hi, (int32_t)zp);
        continue;
      }
#endif
      for (int64_t e = 0; e < inner; e++) {
        float r = clampf_q(nearbyintf(X[base + e] * inv), lo, hi);
        int64_t v = (int64_t)r + zp;
        switch (q->_dtype) {
        case MT_INT8: ((int8_t *)q->_data)[base + e] = (int8_t)v; break;
        case MT_UINT8: ((uint8_t *)q->_data)[base + e] = (uint8_t)v; break;
        default: ((int32_t *)q->_data)[base + e] = (int32_t)v; break;
        }
      }
    }
  return MT_OK;
}

#ifdef MT_Q_X86
/* speed: the min and max of the first n - n % 16 floats (NaNs left out, as the scalar loop's comparisons) */
__attribute__((target("avx512f"))) static void minmax_512(const float *x, int64_t n, float *mn, float *mx) {
  __m512 lo = _mm512_set1_ps(INFINITY), hi = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    lo = _mm512_min_ps(v, lo); /* a NaN in v gives lo (the second operand) */
    hi = _mm512_max_ps(v, hi);
  }
  float a = _mm512_reduce_min_ps(lo), b = _mm512_reduce_max_ps(hi);
  *mn = a < *mn ? a : *mn;
  *mx = b > *mx ? b : *mx;
}
#endif

/* PyTorch's quant_utils::ChooseQuantizationParams for an activation's range (uint8, qmin 0) */
static void choose_qparams(float min, float max, int64_t qmin, int64_t qmax, double *scale, int64_t *zp) {
  if (min > 0) min = 0;
  if (max < 0) max = 0;
  double s = ((double)max - min) / (double)(qmax - qmin);
  if ((float)s == 0.0f || isinf(1.0f / (float)s)) s = 0.1;
  double zmin = qmin - min / s, zmax = qmax - max / s;
  double emin = fabs((double)qmin) - fabs(min / s), emax = fabs((double)qmax) - fabs(max / s);
  double z = emin < emax ? zmin : zmax;
  int64_t nz = z < qmin ? qmin : z > qmax ? qmax : (int64_t)nearbyint(z);
  *scale = (float)s;
  *zp = nz;
}

mt_status mt_cpu_quantize_dynamic(mt_tensor *q, const mt_tensor *x, int reduce_range, double *scale,
                                  int64_t *zero_point) {
  const float *X = (const float *)x->_data;
  int64_t n = x->_numel;
  float mn = INFINITY, mx = -INFINITY;
  int64_t i = 0;
#ifdef MT_Q_X86
  if (mt_cpu_kernel_level() >= MT_CPU_LEVEL_AVX512 && n >= 16) minmax_512(X, n, &mn, &mx), i = n - n % 16;
#endif
  for (; i < n; i++) {
    float v = X[i];
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  if (n == 0) mn = mx = 0;
  int64_t qmax = reduce_range ? 127 : 255;
  choose_qparams(mn, mx, 0, qmax, scale, zero_point);
  return mt_cpu_quantize(q, x, scale, zero_point, 1, 1, n, 0, qmax);
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
  /* one output row (n, oh) at a time, column by column of the kernel: for each (c, kh, kw) the image row
   * ih is read along ow (stride s[1]), written down the columns of cols (stride `row`); the positions
   * outside the image (ow below lo or from hi on) get the zero point */
  for (int64_t n = 0; n < N; n++)
    for (int64_t oh = 0; oh < o[0]; oh++) {
      uint8_t *base = out + (n * o[0] + oh) * o[1] * row;
      int64_t col = 0;
      for (int64_t c = 0; c < C; c++)
        for (int64_t kh = 0; kh < k[0]; kh++) {
          int64_t ih = oh * s[0] - p[0] + kh * d[0];
          const uint8_t *src = X + ((n * C + c) * H + (ih < 0 ? 0 : ih)) * W;
          for (int64_t kw = 0; kw < k[1]; kw++, col++) {
            uint8_t *dst = base + col;
            if (ih < 0 || ih >= H) {
              for (int64_t ow = 0; ow < o[1]; ow++) dst[ow * row] = fill;
              continue;
            }
            int64_t off = kw * d[1] - p[1]; /* iw = ow * s[1] + off */
            int64_t lo = off >= 0 ? 0 : (-off + s[1] - 1) / s[1];
            int64_t hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / s[1] + 1;
            if (hi > o[1]) hi = o[1];
            if (lo > hi) lo = hi;
            int64_t ow = 0;
            for (; ow < lo; ow++) dst[ow * row] = fill;
            if (s[1] == 1) {
              const uint8_t *sp = src + off;
              for (; ow < hi; ow++) dst[ow * row] = sp[ow];
            } else {
              for (; ow < hi; ow++) dst[ow * row] = src[ow * s[1] + off];
            }
            for (; ow < o[1]; ow++) dst[ow * row] = fill;
          }
        }
    }
  return MT_OK;
}
