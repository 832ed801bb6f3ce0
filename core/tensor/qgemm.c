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
/* the epilogue below, 16 columns at a time (the VNNI path): the same operations, the products and sums rounded
 * one at a time (no fused multiply-add) */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void epilogue_512(const qjob *q, int64_t i,
                                                                                      int64_t j0, int64_t w,
                                                                                      const int32_t *acc) {
  const mt_qgemm *g = q->g;
  const __m512i rs = _mm512_set1_epi32(q->rowsum[i]);
  const __m512 vos = _mm512_set1_ps((float)g->out_scale), vzp = _mm512_set1_ps((float)g->out_zp);
  const __m512 vlo = _mm512_set1_ps(g->relu ? (float)g->out_zp : 0.0f), vhi = _mm512_set1_ps(255.0f);
  for (int64_t j = 0; j < w; j += 16) {
    __mmask16 m = w - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (w - j)) - 1);
    __m512i t = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, acc + j), _mm512_maskz_loadu_epi32(m, q->colterm + j0 + j));
    if (q->wzp) t = _mm512_sub_epi32(t, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(m, q->wzp + j0 + j), rs));
    __m512 v = _mm512_mul_round_ps(_mm512_cvtepi32_ps(t), _mm512_maskz_loadu_ps(m, q->mult + j0 + j),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (g->bias)
      v = _mm512_add_round_ps(v, _mm512_maskz_loadu_ps(m, g->bias + j0 + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (g->out_u8) {
      v = _mm512_div_ps(v, vos);
      v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzp);
      v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi); /* NaN: lo */
      _mm_mask_storeu_epi8(g->out_u8 + i * g->ldo + j0 + j, m, _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
    } else {
      if (g->relu) /* v > 0 ? v : NaN stays, else +0 */
        v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LE_OQ), v, _mm512_setzero_ps());
      _mm512_mask_storeu_ps(g->out_f32 + i * g->ldo + j0 + j, m, v);
    }
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
      if (q->path == QPATH_VNNI) {
        tiles_vnni(q->KQ, a, q->lda, wp, rows, acc, NR);
        for (int64_t r = 0; r < rows; r++) epilogue_512(q, i0 + r, j0, w, acc + r * NR);
        continue;
      }
      if (q->path == QPATH_AVX2) tiles_avx2(q->KQ, a, q->lda, wp, rows, acc, NR);
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

/* ---------------------------------------------------------------- the convolution, channels by pixels */
/* out[n, co, pixel] = W[co, :] . column(pixel) + the epilogue: the product taken the other way round from the
 * linear layer's, so that a convolution of few output channels (LeNet's 6 and 16) fills the vector lanes with
 * pixels, and the result is written in (N, Co, OH, OW) order at once. A job is a chunk of QC_P pixels of one
 * image: T (4 KQ rows of QC_P bytes) = the chunk's columns transposed (row k = (c, kh, kw): runs of the image,
 * copied for stride 1; outside the image the zero point; rows from K on zero), then per panel of 32 pixels
 * Bq[kq][32] = the quads of T's rows 4kq..4kq+3 (SSE2 byte/word interleaves); a tile takes up to QC_R channels x
 * 32 pixels: acc += Bq's quads (uint8) . the channel's weight quad (int8, broadcast), exact in int32 as the
 * linear layer's tiles, and the epilogue is the same float operations as theirs (every path the same bits). */
#define QC_P 256
#define QC_R 8

typedef struct {
  const mt_qgemm *g;
  const uint8_t *X;
  int64_t C, H, W;
  const int64_t *k, *s, *p, *d, *o;
  int64_t K, KQ, P, chunks; /* P = OH * OW pixels an image, in chunks of QC_P */
  const uint32_t *Wq;        /* Co x KQ weight quads */
  const int32_t *colterm, *wzp; /* per channel (wzp NULL: every weight zero point 0) */
  const float *mult;
  int path;
  int failed;
} qcjob;

/* T's rows for pixels [p0, p0 + pw) of image n */
static void qc_cols(const qcjob *j, int64_t n, int64_t p0, int64_t pw, uint8_t *T) {
  const int64_t *k = j->k, *s = j->s, *pad = j->p, *d = j->d;
  int64_t OW = j->o[1], H = j->H, W = j->W;
  uint8_t fill = (uint8_t)j->g->a_zp;
  for (int64_t kk = 0; kk < j->K; kk++) {
    int64_t c = kk / (k[0] * k[1]), kh = kk / k[1] % k[0], kw = kk % k[1];
    const uint8_t *img = j->X + (n * j->C + c) * H * W;
    int64_t off = kw * d[1] - pad[1]; /* iw = ow * s[1] + off */
    int64_t lo = off >= 0 ? 0 : (-off + s[1] - 1) / s[1];
    int64_t hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / s[1] + 1;
    if (hi > OW) hi = OW;
    if (lo > hi) lo = hi;
    for (int64_t pix = p0; pix < p0 + pw;) {
      int64_t oh = pix / OW, ow0 = pix % OW, ow1 = OW - ow0 < p0 + pw - pix ? OW : ow0 + (p0 + pw - pix);
      uint8_t *dd = T + kk * QC_P + (pix - p0); /* dd[ow - ow0] */
      int64_t ih = oh * s[0] - pad[0] + kh * d[0];
      /* (short runs, LeNet's 8 to 24 bytes: loops, not calls) */
      if (ih < 0 || ih >= H) {
        for (int64_t ow = ow0; ow < ow1; ow++) dd[ow - ow0] = fill;
      } else {
        const uint8_t *src = img + ih * W;
        int64_t a = lo < ow0 ? ow0 : lo > ow1 ? ow1 : lo, b = hi < a ? a : hi > ow1 ? ow1 : hi;
        for (int64_t ow = ow0; ow < a; ow++) dd[ow - ow0] = fill;
        if (s[1] == 1) {
          const uint8_t *sp = src + off;
          for (int64_t ow = a; ow < b; ow++) dd[ow - ow0] = sp[ow];
        } else {
          for (int64_t ow = a; ow < b; ow++) dd[ow - ow0] = src[ow * s[1] + off];
        }
        for (int64_t ow = b; ow < ow1; ow++) dd[ow - ow0] = fill;
      }
      pix += ow1 - ow0;
    }
  }
}

/* Bq (panels of KQ x 32 quads) <- T's first pw pixels (pw a multiple of 32: T's bytes past the chunk's pixels
 * are zeros or a former chunk's, which only lanes that are never stored read) */
static void qc_quads(const uint8_t *T, int64_t KQ, int64_t pw, uint32_t *Bq) {
  for (int64_t kq = 0; kq < KQ; kq++) {
    const uint8_t *r0 = T + 4 * kq * QC_P, *r1 = r0 + QC_P, *r2 = r1 + QC_P, *r3 = r2 + QC_P;
    for (int64_t pp = 0; pp < pw; pp += 16) {
      uint32_t *dst = Bq + (pp / 32) * KQ * 32 + kq * 32 + pp % 32;
#ifdef MT_Q_X86
      __m128i a0 = _mm_loadu_si128((const __m128i *)(r0 + pp)), a1 = _mm_loadu_si128((const __m128i *)(r1 + pp));
      __m128i a2 = _mm_loadu_si128((const __m128i *)(r2 + pp)), a3 = _mm_loadu_si128((const __m128i *)(r3 + pp));
      __m128i l01 = _mm_unpacklo_epi8(a0, a1), h01 = _mm_unpackhi_epi8(a0, a1);
      __m128i l23 = _mm_unpacklo_epi8(a2, a3), h23 = _mm_unpackhi_epi8(a2, a3);
      _mm_storeu_si128((__m128i *)dst, _mm_unpacklo_epi16(l01, l23));
      _mm_storeu_si128((__m128i *)(dst + 4), _mm_unpackhi_epi16(l01, l23));
      _mm_storeu_si128((__m128i *)(dst + 8), _mm_unpacklo_epi16(h01, h23));
      _mm_storeu_si128((__m128i *)(dst + 12), _mm_unpackhi_epi16(h01, h23));
#else
      for (int t = 0; t < 16; t++)
        dst[t] = (uint32_t)r0[pp + t] | (uint32_t)r1[pp + t] << 8 | (uint32_t)r2[pp + t] << 16 | (uint32_t)r3[pp + t] << 24;
#endif
    }
  }
}

/* acc (R x 32) = the R channels' weight quads (rows of wq, KQ each) . one panel's quads */
static void qc_tile_scalar(int R, int64_t KQ, const uint32_t *bq, const uint32_t *wq, int32_t *acc) {
  for (int i = 0; i < R; i++) {
    int32_t a[32] = {0};
    for (int64_t kq = 0; kq < KQ; kq++) {
      uint32_t w = wq[i * KQ + kq];
      int32_t w0 = (int8_t)(w & 0xff), w1 = (int8_t)((w >> 8) & 0xff), w2 = (int8_t)((w >> 16) & 0xff), w3 = (int8_t)(w >> 24);
      const uint32_t *b = bq + kq * 32;
      for (int t = 0; t < 32; t++)
        a[t] += (int32_t)(b[t] & 0xff) * w0 + (int32_t)((b[t] >> 8) & 0xff) * w1 + (int32_t)((b[t] >> 16) & 0xff) * w2 +
                (int32_t)(b[t] >> 24) * w3;
    }
    memcpy(acc + i * 32, a, sizeof a);
  }
}

/* the epilogue of one channel's row of acc (w pixels), the linear layer's operations */
static void qc_epilogue(const qcjob *j, int64_t co, const int32_t *acc, const int32_t *psum, int64_t w, uint8_t *o) {
  const mt_qgemm *g = j->g;
  float v[32];
  int32_t ct = j->colterm[co], wz = j->wzp ? j->wzp[co] : 0;
  float mu = j->mult[co];
  for (int64_t t = 0; t < w; t++) {
    int32_t a = acc[t] - ct;
    if (wz) a -= wz * psum[t];
    v[t] = (float)a * mu;
  }
  if (g->bias)
    for (int64_t t = 0; t < w; t++) v[t] += g->bias[co];
  float os = (float)g->out_scale, zp = (float)g->out_zp, lo = g->relu ? (float)g->out_zp : 0.0f;
  for (int64_t t = 0; t < w; t++) {
    float r = nearbyintf(v[t] / os) + zp;
    r = r >= lo ? r : lo; /* NaN too */
    r = r <= 255.0f ? r : 255.0f;
    o[t] = (uint8_t)r;
  }
}

#ifdef MT_Q_X86
static inline __attribute__((always_inline)) TGT2 void qc_tile_avx2_(const int R, int64_t KQ, const uint32_t *bq,
                                                                       const uint32_t *wq, int32_t *acc) {
  __m256i a[QC_R][4];
  for (int i = 0; i < R; i++)
    for (int v = 0; v < 4; v++) a[i][v] = _mm256_setzero_si256();
  const __m256i lo8 = _mm256_set1_epi16(0x00ff);
  for (int64_t kq = 0; kq < KQ; kq++) {
    __m256i be[4], bo[4]; /* the pixels' quads: bytes 0, 2 and 1, 3 as 16-bit lanes (values 0..255) */
    for (int v = 0; v < 4; v++) {
      __m256i b = _mm256_loadu_si256((const __m256i *)(bq + kq * 32 + 8 * v));
      be[v] = _mm256_and_si256(b, lo8);
      bo[v] = _mm256_srli_epi16(b, 8);
    }
    for (int i = 0; i < R; i++) {
      __m256i w = _mm256_set1_epi32((int32_t)wq[i * KQ + kq]);
      __m256i we = _mm256_srai_epi16(_mm256_slli_epi16(w, 8), 8), wo = _mm256_srai_epi16(w, 8); /* sign-extended */
      for (int v = 0; v < 4; v++) {
        a[i][v] = _mm256_add_epi32(a[i][v], _mm256_madd_epi16(be[v], we));
        a[i][v] = _mm256_add_epi32(a[i][v], _mm256_madd_epi16(bo[v], wo));
      }
    }
  }
  for (int i = 0; i < R; i++)
    for (int v = 0; v < 4; v++) _mm256_storeu_si256((__m256i *)(acc + i * 32 + 8 * v), a[i][v]);
}
static TGT2 void qc_tile_avx2(int R, int64_t KQ, const uint32_t *bq, const uint32_t *wq, int32_t *acc) {
  int i = 0;
  for (; i + 2 <= R; i += 2) qc_tile_avx2_(2, KQ, bq, wq + i * KQ, acc + i * 32);
  if (i < R) qc_tile_avx2_(1, KQ, bq, wq + i * KQ, acc + i * 32);
}

static inline __attribute__((always_inline)) TGTV void qc_tile_vnni_(const int R, int64_t KQ, const uint32_t *bq,
                                                                       const uint32_t *wq, int32_t *acc) {
  __m512i a0[QC_R], a1[QC_R];
  for (int i = 0; i < R; i++) a0[i] = a1[i] = _mm512_setzero_si512();
  for (int64_t kq = 0; kq < KQ; kq++) {
    __m512i b0 = _mm512_loadu_si512(bq + kq * 32), b1 = _mm512_loadu_si512(bq + kq * 32 + 16);
    for (int i = 0; i < R; i++) {
      __m512i w = _mm512_set1_epi32((int32_t)wq[i * KQ + kq]);
      a0[i] = _mm512_dpbusd_epi32(a0[i], b0, w);
      a1[i] = _mm512_dpbusd_epi32(a1[i], b1, w);
    }
  }
  for (int i = 0; i < R; i++) {
    _mm512_storeu_si512(acc + i * 32, a0[i]);
    _mm512_storeu_si512(acc + i * 32 + 16, a1[i]);
  }
}
static TGTV void qc_tile_vnni(int R, int64_t KQ, const uint32_t *bq, const uint32_t *wq, int32_t *acc) {
  switch (R) {
  case 8: qc_tile_vnni_(8, KQ, bq, wq, acc); break;
  case 7: qc_tile_vnni_(7, KQ, bq, wq, acc); break;
  case 6: qc_tile_vnni_(6, KQ, bq, wq, acc); break;
  case 5: qc_tile_vnni_(5, KQ, bq, wq, acc); break;
  case 4: qc_tile_vnni_(4, KQ, bq, wq, acc); break;
  case 3: qc_tile_vnni_(3, KQ, bq, wq, acc); break;
  case 2: qc_tile_vnni_(2, KQ, bq, wq, acc); break;
  default: qc_tile_vnni_(1, KQ, bq, wq, acc); break;
  }
}

/* qc_epilogue's operations 16 pixels at a time (the products and sums rounded as the scalar ones: no fused
 * multiply-add) */
static TGTV void qc_epilogue_512(const qcjob *j, int64_t co, const int32_t *acc, const int32_t *psum, int64_t w,
                                 uint8_t *o) {
  const mt_qgemm *g = j->g;
  const __m512i ct = _mm512_set1_epi32(j->colterm[co]), wz = _mm512_set1_epi32(j->wzp ? j->wzp[co] : 0);
  const __m512 mu = _mm512_set1_ps(j->mult[co]), b = _mm512_set1_ps(g->bias ? g->bias[co] : 0.0f);
  const __m512 vos = _mm512_set1_ps((float)g->out_scale), vzp = _mm512_set1_ps((float)g->out_zp);
  const __m512 vlo = _mm512_set1_ps(g->relu ? (float)g->out_zp : 0.0f), vhi = _mm512_set1_ps(255.0f);
  int has_wz = j->wzp && j->wzp[co];
  for (int64_t t = 0; t < w; t += 16) {
    __mmask16 m = w - t >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (w - t)) - 1);
    __m512i a = _mm512_sub_epi32(_mm512_loadu_si512(acc + t), ct);
    if (has_wz) a = _mm512_sub_epi32(a, _mm512_mullo_epi32(wz, _mm512_loadu_si512(psum + t)));
    __m512 v = _mm512_mul_round_ps(_mm512_cvtepi32_ps(a), mu, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (g->bias) v = _mm512_add_round_ps(v, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_div_ps(v, vos);
    v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzp);
    v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi); /* NaN: lo */
    _mm_mask_storeu_epi8(o + t, m, _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
  }
}
#endif

#ifdef MT_Q_X86
/* qc_cols + qc_quads in one pass, 16 pixels of an output row at a time (AVX-512BW masked loads and stores: no
 * byte read or written outside the run): the rows of the 4 (c, kh, kw) of a quad read as they are where the run
 * lies inside the image (stride 1), else gathered with the zero point outside; then interleaved into quads */
/* 16 pixels' bytes of 4 rows -> their 16 quads at dst (the lanes of m) */
static inline __attribute__((always_inline)) TGTV void qc_quads16(__m128i v0, __m128i v1, __m128i v2, __m128i v3,
                                                                    __mmask16 m, uint32_t *dst) {
  __m128i l01 = _mm_unpacklo_epi8(v0, v1), h01 = _mm_unpackhi_epi8(v0, v1);
  __m128i l23 = _mm_unpacklo_epi8(v2, v3), h23 = _mm_unpackhi_epi8(v2, v3);
  __m512i z = _mm512_castsi128_si512(_mm_unpacklo_epi16(l01, l23));
  z = _mm512_inserti32x4(z, _mm_unpackhi_epi16(l01, l23), 1);
  z = _mm512_inserti32x4(z, _mm_unpacklo_epi16(h01, h23), 2);
  z = _mm512_inserti32x4(z, _mm_unpackhi_epi16(h01, h23), 3);
  _mm512_mask_storeu_epi32(dst, m, z);
}

static TGTV void qc_pack_512(const qcjob *j, int64_t n, int64_t p0, int64_t pw, uint32_t *Bq) {
  const int64_t *k = j->k, *s = j->s, *pad = j->p, *d = j->d;
  int64_t OW = j->o[1], H = j->H, W = j->W, K = j->K, KQ = j->KQ;
  uint8_t fill = (uint8_t)j->g->a_zp;
  const __m128i vfill = _mm_set1_epi8((char)fill);
  struct {
    const uint8_t *img;
    int64_t kh, off, lo, hi;
  } r[4];
  const int64_t oh_first = p0 / OW, ow_first = p0 % OW;
  /* no padding, stride 1 along rows: every run lies inside the image; a quad's 4 rows advance together */
  int64_t kq_all = pad[0] == 0 && pad[1] == 0 && s[1] == 1 ? KQ : 0;
  for (int64_t kq = 0; kq < kq_all; kq++) {
    const uint8_t *rp[4];
    int nt = K - 4 * kq < 4 ? (int)(K - 4 * kq) : 4; /* the quad's rows below K; the others are zeros */
    for (int t = 0; t < nt; t++) {
      int64_t kk = 4 * kq + t, c = kk / (k[0] * k[1]), kh = kk / k[1] % k[0], kw = kk % k[1];
      rp[t] = j->X + (n * j->C + c) * H * W + (oh_first * s[0] + kh * d[0]) * W + kw * d[1];
    }
    int64_t ow0 = ow_first;
    for (int64_t q = 0; q < pw;) {
      int64_t ow1 = OW - ow0 < pw - q ? OW : ow0 + (pw - q);
      for (int64_t ow = ow0; ow < ow1;) {
        int64_t qq = q + (ow - ow0), g = ow1 - ow;
        if (g > 16) g = 16;
        if (g > 32 - qq % 32) g = 32 - qq % 32;
        __mmask16 m = g == 16 ? (__mmask16)0xffff : (__mmask16)((1u << g) - 1);
        uint32_t *dst = Bq + (qq / 32) * KQ * 32 + kq * 32 + qq % 32;
        if (nt == 4)
          qc_quads16(_mm_maskz_loadu_epi8(m, rp[0] + ow), _mm_maskz_loadu_epi8(m, rp[1] + ow),
                     _mm_maskz_loadu_epi8(m, rp[2] + ow), _mm_maskz_loadu_epi8(m, rp[3] + ow), m, dst);
        else /* K's last quad */
          qc_quads16(_mm_maskz_loadu_epi8(m, rp[0] + ow), nt > 1 ? _mm_maskz_loadu_epi8(m, rp[1] + ow) : _mm_setzero_si128(),
                     nt > 2 ? _mm_maskz_loadu_epi8(m, rp[2] + ow) : _mm_setzero_si128(), _mm_setzero_si128(), m, dst);
        ow += g;
      }
      q += ow1 - ow0;
      ow0 = 0;
      for (int t = 0; t < nt; t++) rp[t] += s[0] * W;
    }
  }
  for (int64_t kq = kq_all; kq < KQ; kq++) {
    int nt = K - 4 * kq < 4 ? (int)(K - 4 * kq) : 4; /* the quad's rows below K; the others are zeros */
    for (int t = 0; t < nt; t++) {
      int64_t kk = 4 * kq + t;
      int64_t c = kk / (k[0] * k[1]), kw = kk % k[1];
      r[t].kh = kk / k[1] % k[0];
      r[t].img = j->X + (n * j->C + c) * H * W;
      r[t].off = kw * d[1] - pad[1];
      r[t].lo = r[t].off >= 0 ? 0 : (-r[t].off + s[1] - 1) / s[1];
      r[t].hi = W - 1 - r[t].off < 0 ? 0 : (W - 1 - r[t].off) / s[1] + 1;
      if (r[t].hi > OW) r[t].hi = OW;
      if (r[t].lo > r[t].hi) r[t].lo = r[t].hi;
    }
    int64_t oh = oh_first, ow0 = ow_first;
    for (int64_t q = 0; q < pw;) {
      int64_t ow1 = OW - ow0 < pw - q ? OW : ow0 + (pw - q);
      /* this row's segment [ow0, ow1): read straight when every row of the quad has it inside the image */
      const uint8_t *rp[4] = {NULL, NULL, NULL, NULL};
      int fast = s[1] == 1;
      for (int t = 0; t < nt; t++) {
        int64_t ih = oh * s[0] - pad[0] + r[t].kh * d[0];
        if (ih >= 0 && ih < H) rp[t] = r[t].img + ih * W + r[t].off; /* rp[t][ow * s[1]] */
        if (!rp[t] || ow0 < r[t].lo || ow1 > r[t].hi) fast = 0;
      }
      for (int64_t ow = ow0; ow < ow1;) {
        int64_t qq = q + (ow - ow0), g = ow1 - ow;
        if (g > 16) g = 16;
        if (g > 32 - qq % 32) g = 32 - qq % 32;
        __mmask16 m = g == 16 ? (__mmask16)0xffff : (__mmask16)((1u << g) - 1);
        uint32_t *dst = Bq + (qq / 32) * KQ * 32 + kq * 32 + qq % 32;
        if (fast && nt == 4) { /* the common case, straight */
          qc_quads16(_mm_maskz_loadu_epi8(m, rp[0] + ow), _mm_maskz_loadu_epi8(m, rp[1] + ow),
                     _mm_maskz_loadu_epi8(m, rp[2] + ow), _mm_maskz_loadu_epi8(m, rp[3] + ow), m, dst);
          ow += g;
          continue;
        }
        __m128i v[4];
        if (fast) {
          for (int t = 0; t < nt; t++) v[t] = _mm_maskz_loadu_epi8(m, rp[t] + ow);
        } else {
          for (int t = 0; t < nt; t++) {
            if (!rp[t]) {
              v[t] = vfill;
            } else if (s[1] == 1 && ow >= r[t].lo && ow + g <= r[t].hi) {
              v[t] = _mm_maskz_loadu_epi8(m, rp[t] + ow);
            } else {
              uint8_t b[16];
              for (int64_t i = 0; i < 16; i++) {
                int64_t o_ = ow + i;
                b[i] = i < g && o_ >= r[t].lo && o_ < r[t].hi ? rp[t][o_ * s[1]] : fill;
              }
              v[t] = _mm_loadu_si128((const __m128i *)b);
            }
          }
        }
        for (int t = nt; t < 4; t++) v[t] = _mm_setzero_si128();
        qc_quads16(v[0], v[1], v[2], v[3], m, dst);
        ow += g;
      }
      q += ow1 - ow0;
      oh++;
      ow0 = 0;
    }
  }
}

/* the pixels' sums of one panel (K bytes each; the quads past K are zeros): vpdpbusd with ones, exact */
static TGTV void qc_psum_512(int64_t KQ, const uint32_t *bq, int32_t *psum) {
  __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t kq = 0; kq < KQ; kq++) {
    s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512(bq + kq * 32), ones);
    s1 = _mm512_dpbusd_epi32(s1, _mm512_loadu_si512(bq + kq * 32 + 16), ones);
  }
  _mm512_storeu_si512(psum, s0);
  _mm512_storeu_si512(psum + 16, s1);
}
#endif

static void qc_chunks(void *ctx, int64_t c0, int64_t c1) {
  qcjob *j = ctx;
  const mt_qgemm *g = j->g;
  int64_t KQ = j->KQ, Co = g->N;
  uint8_t *T = calloc((size_t)4 * KQ * QC_P + 64, 1);
  uint32_t *Bq = mt_aligned_alloc((size_t)KQ * QC_P * sizeof(uint32_t));
  int32_t *acc = mt_aligned_alloc((size_t)(QC_R * 32 + QC_P) * sizeof(int32_t)), *psum = acc + QC_R * 32;
  if (Bq) memset(Bq, 0, (size_t)KQ * QC_P * sizeof(uint32_t));
  if (!T || !Bq || !acc) {
    free(T);
    mt_aligned_free(Bq);
    mt_aligned_free(acc);
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t c = c0; c < c1; c++) {
    int64_t n = c / j->chunks, p0 = c % j->chunks * QC_P, pw = j->P - p0 < QC_P ? j->P - p0 : QC_P;
#ifdef MT_Q_X86
    if (j->path == QPATH_VNNI) {
      qc_pack_512(j, n, p0, pw, Bq);
      if (j->wzp) /* the pixels' sums, for the weight zero points' term */
        for (int64_t pp = 0; pp < pw; pp += 32) qc_psum_512(KQ, Bq + (pp / 32) * KQ * 32, psum + pp);
    } else
#endif
    {
      qc_cols(j, n, p0, pw, T);
      qc_quads(T, KQ, (pw + 31) / 32 * 32, Bq);
      if (j->wzp)
        for (int64_t t = 0; t < pw; t++) {
          int32_t sum = 0;
          for (int64_t kk = 0; kk < j->K; kk++) sum += T[kk * QC_P + t];
          psum[t] = sum;
        }
    }
    uint8_t *out = g->out_u8 + n * Co * j->P + p0;
    for (int64_t pp = 0; pp < pw; pp += 32) {
      const uint32_t *bq = Bq + (pp / 32) * KQ * 32;
      int64_t w = pw - pp < 32 ? pw - pp : 32;
      for (int64_t co = 0; co < Co; co += QC_R) {
        int R = Co - co < QC_R ? (int)(Co - co) : QC_R;
        const uint32_t *wq = j->Wq + co * KQ;
#ifdef MT_Q_X86
        if (j->path == QPATH_VNNI) {
          qc_tile_vnni(R, KQ, bq, wq, acc);
          for (int i = 0; i < R; i++) qc_epilogue_512(j, co + i, acc + i * 32, psum + pp, w, out + (co + i) * j->P + pp);
          continue;
        }
        if (j->path == QPATH_AVX2) qc_tile_avx2(R, KQ, bq, wq, acc);
        else qc_tile_scalar(R, KQ, bq, wq, acc);
#else
        qc_tile_scalar(R, KQ, bq, wq, acc);
#endif
        for (int i = 0; i < R; i++) qc_epilogue(j, co + i, acc + i * 32, psum + pp, w, out + (co + i) * j->P + pp);
      }
    }
  }
  free(T);
  mt_aligned_free(Bq);
  mt_aligned_free(acc);
}

mt_status mt_cpu_qconv2d(const mt_qgemm *g, const mt_tensor *x, const int64_t *k, const int64_t *s, const int64_t *p,
                         const int64_t *d, const int64_t *o) {
  int64_t N = x->_sizes[0], Co = g->N, K = g->K, KQ = (K + 3) / 4, P = o[0] * o[1];
  if (N == 0 || Co == 0 || P == 0) return MT_OK;
  if (q_path < 0) q_path = choose_qpath();
  char *mem = malloc((size_t)Co * (KQ * 4 + 16) + 64);
  if (!mem) return mt_error(MT_ENOMEM, "quantized conv2d: out of memory");
  uint32_t *Wq = (uint32_t *)mem;
  int32_t *colterm = (int32_t *)(Wq + Co * KQ), *wzp = colterm + Co;
  float *mult = (float *)(wzp + Co);
  int any_wzp = 0;
  int32_t azp = (int32_t)g->a_zp;
  for (int64_t co = 0; co < Co; co++) {
    const int8_t *row = g->W + co * g->ldw;
    uint8_t *q = (uint8_t *)(Wq + co * KQ);
    int32_t sum = 0;
    for (int64_t kk = 0; kk < KQ * 4; kk++) {
      q[kk] = kk < K ? (uint8_t)row[kk] : 0;
      sum += kk < K ? row[kk] : 0;
    }
    int64_t c = g->per_channel ? co : 0;
    wzp[co] = g->w_zp ? (int32_t)g->w_zp[c] : 0;
    if (wzp[co]) any_wzp = 1;
    colterm[co] = azp * sum - (int32_t)K * azp * wzp[co];
    mult[co] = (float)(g->a_scale * g->w_scale[c]);
  }
  int64_t chunks = (P + QC_P - 1) / QC_P;
  qcjob j = {g, (const uint8_t *)x->_data, x->_sizes[1], x->_sizes[2], x->_sizes[3], k, s, p, d, o, K, KQ, P, chunks,
             Wq, colterm, any_wzp ? wzp : NULL, mult, q_path, 0};
  if (mt_get_num_threads() > 1 && !mt_in_parallel() && N * chunks > 1 && N * P * Co * K >= 64LL * 1024)
    mt_parallel_for(N * chunks, 1, qc_chunks, &j);
  else
    qc_chunks(&j, 0, N * chunks);
  free(mem);
  if (j.failed) return mt_error(MT_ENOMEM, "quantized conv2d: out of memory");
  return MT_OK;
}
