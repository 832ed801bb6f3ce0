/* checkpoint.c -- the bytes of torch.save / torch.load (lua/checkpoint.lua walks the objects).
 *
 * File format "MTCKPT", version 1. Every integer is little-endian; offsets count bytes from the
 * start of the file.
 *
 *   [0, 64)          header
 *       0  u8[8]  magic "MTCKPT\0\1"
 *       8  u32    format version (1)
 *      12  u32    flags (0; reserved)
 *      16  u64    number of storages N
 *      24  u64    table offset: where the storage table starts (a multiple of 64)
 *      32  u64    meta size: bytes of the value stream after the table
 *      40  u64    file size: table offset + 16 N + meta size, and the file's real size
 *      48  u64    reserved (0)
 *      56  u64    checksum (below)
 *   [64, table)      storage payloads: storage i's bytes start at offset(i), a multiple of 64;
 *                    offset(0) = 64, offset(i+1) = offset(i) + nbytes(i) rounded up to 64, and
 *                    the table offset is the end of the last one rounded up to 64 (64 if N = 0).
 *                    The padding bytes are zero.
 *   [table, +16 N)   storage table: per storage u64 offset, u64 nbytes
 *   [.., file size)  the value stream: one value, the saved object
 *
 * A value is a tag byte and its body:
 *   0 nil              (the root only)
 *   1 false, 2 true
 *   3 number           f64
 *   4 string           u64 length, bytes
 *   5 table            u32 id, u64 number of pairs, then key, value, key, value ...
 *   6 reference        u32 id of a table, tensor or object defined earlier in the stream
 *   7 tensor           u32 id, u32 storage index, u8 dtype (mt_dtype code), u8 ndim (<= 16),
 *                      u8 flags (1: nn.Parameter, 2: requires_grad), u8 0, i64 storage offset
 *                      (elements), ndim x i64 sizes, ndim x i64 strides (elements, >= 0)
 *   8 object           u32 id, u64 class name length, class name bytes, then one value: the
 *                      state (what the class's __serialize returned, or a table of its fields)
 * Ids number the tables, tensors and objects in stream order from 1: a defining record carries
 * the next id, a reference names one already defined (cycles and shared objects).
 *
 * Checksum: XXH3-64 (xxHash's 64-bit XXH3 with seed 0 and the default secret, implemented
 * below from the published specification; the same values as the reference library's
 * XXH3_64bits). Each storage payload is cut into 128 KiB pieces (the last one shorter; an empty
 * storage has none) and each piece hashed; the table and value stream, contiguous in the file,
 * are hashed as one more piece. body = XXH3-64 of those digests as u64 in file order; the
 * checksum field holds XXH3-64 of the 64-byte header with body in place of the checksum field.
 * (Pieces let a load read and hash in parallel.) Padding is not hashed: it must be zero.
 *
 * The loader checks every header field (magic, version, zero reserved fields, sizes that add up
 * to the file's real size), the table (offsets exactly the ones above), the padding, and the
 * checksum before it hands out any value; then every record as it is read (tags, ids, lengths
 * against the bytes left, dtypes, ranks, sizes and strides with overflow-checked arithmetic,
 * each view inside its storage; lua/checkpoint.lua bounds the nesting depth): a truncated,
 * damaged or hostile file is an error, never a crash or wrong numbers.
 *
 * Saving writes `<path>.tmp.<pid>` beside the destination (payloads straight from tensor
 * memory), then fsync, rename over the destination, fsync of the directory: a crash leaves the
 * old file or the new one, never a mix. Without sync the temporary file takes the destination's
 * name by an exchange of names instead (replace_by_exchange): still atomic for every process,
 * durable only once the kernel has written the page cache back. */
#define _GNU_SOURCE /* renameat2 */
#include "mt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define CK_MAGIC "MTCKPT\0\1"
#define CK_VERSION 1u
#define CK_HEADER 64
#define CK_ALIGN 64
#define CK_PIECE ((size_t)128 << 10) /* the checksum's piece of a payload */
/* Pieces from which the pool's threads share the work: waking them costs tens of microseconds,
 * worth it from 1 MB when the pieces are also read (copies into cold memory are slow), from 8 MB
 * when they are only hashed (saves, mapped loads). */
#define CK_PARALLEL_READ 8
#define CK_PARALLEL_HASH 64

/* ------------------------------------------------------------------ XXH3-64
 * XXH3's 64-bit hash with seed 0 and the default secret, written from the published
 * specification of xxHash (Yann Collet, doc/xxhash_spec.md, version 0.8): short inputs by the
 * 0-240 byte formulas, long ones by 64-byte stripes accumulated into eight 64-bit lanes (SSE2 or
 * AVX2 when the CPU has it), the lanes scrambled every 1 KB. Tens of GB/s on one core. */
#define P32_1 0x9E3779B1U
#define P32_2 0x85EBCA77U
#define P32_3 0xC2B2AE3DU
#define P64_1 0x9E3779B185EBCA87ULL
#define P64_2 0xC2B2AE3D27D4EB4FULL
#define P64_3 0x165667B19E3779F9ULL
#define P64_4 0x85EBCA77C2B2AE63ULL
#define P64_5 0x27D4EB2F165667C5ULL
#define PMX1 0x165667919E3779F9ULL
#define PMX2 0x9FB21C651E98DF25ULL

/* clang-format off */
static const unsigned char ksecret[192] = {
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
  0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
  0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
  0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
  0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
  0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
  0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
  0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
  0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
  0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
  0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
  0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};
/* clang-format on */

static inline uint64_t rotl64(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
/* little-endian reads (the hosts moontorch builds for are little-endian) */
static inline uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static inline uint32_t rd32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static inline uint64_t fold64(uint64_t a, uint64_t b) {
  unsigned __int128 m = (unsigned __int128)a * b;
  return (uint64_t)m ^ (uint64_t)(m >> 64);
}
static inline uint64_t avalanche64(uint64_t h) { /* XXH64's */
  h ^= h >> 33;
  h *= P64_2;
  h ^= h >> 29;
  h *= P64_3;
  return h ^ (h >> 32);
}
static inline uint64_t avalanche3(uint64_t h) {
  h ^= h >> 37;
  h *= PMX1;
  return h ^ (h >> 32);
}
static inline uint64_t mix16(const unsigned char *in, const unsigned char *sec) {
  return fold64(rd64(in) ^ rd64(sec), rd64(in + 8) ^ rd64(sec + 8));
}

static uint64_t xxh3_short(const unsigned char *in, size_t n) {
  const unsigned char *s = ksecret;
  if (n == 0)
    return avalanche64(rd64(s + 56) ^ rd64(s + 64));
  if (n <= 3) {
    uint32_t c = ((uint32_t)in[0] << 16) | ((uint32_t)in[n >> 1] << 24) | in[n - 1] | ((uint32_t)n << 8);
    return avalanche64((uint64_t)c ^ (uint64_t)(rd32(s) ^ rd32(s + 4)));
  }
  if (n <= 8) {
    uint64_t x = (rd32(in + n - 4) + ((uint64_t)rd32(in) << 32)) ^ (rd64(s + 8) ^ rd64(s + 16));
    x ^= rotl64(x, 49) ^ rotl64(x, 24);
    x *= PMX2;
    x ^= (x >> 35) + n;
    x *= PMX2;
    return x ^ (x >> 28);
  }
  if (n <= 16) {
    uint64_t lo = rd64(in) ^ (rd64(s + 24) ^ rd64(s + 32));
    uint64_t hi = rd64(in + n - 8) ^ (rd64(s + 40) ^ rd64(s + 48));
    return avalanche3(n + __builtin_bswap64(lo) + hi + fold64(lo, hi));
  }
  uint64_t acc = n * P64_1;
  if (n <= 128) {
    if (n > 32) {
      if (n > 64) {
        if (n > 96)
          acc += mix16(in + 48, s + 96) + mix16(in + n - 64, s + 112);
        acc += mix16(in + 32, s + 64) + mix16(in + n - 48, s + 80);
      }
      acc += mix16(in + 16, s + 32) + mix16(in + n - 32, s + 48);
    }
    acc += mix16(in, s) + mix16(in + n - 16, s + 16);
    return avalanche3(acc);
  }
  /* 129..240 */
  for (size_t i = 0; i < 8; i++)
    acc += mix16(in + 16 * i, s + 16 * i);
  acc = avalanche3(acc);
  for (size_t i = 8; i < n / 16; i++)
    acc += mix16(in + 16 * i, s + 16 * (i - 8) + 3);
  acc += mix16(in + n - 16, s + 136 - 17);
  return avalanche3(acc);
}

/* one 64-byte stripe into the lanes: acc[i^1] += data[i]; acc[i] += lo32(k) * hi32(k), k = data ^ key */
static inline void stripe_scalar(uint64_t *acc, const unsigned char *in, const unsigned char *sec) {
  for (int i = 0; i < 8; i++) {
    uint64_t d = rd64(in + 8 * i), k = d ^ rd64(sec + 8 * i);
    acc[i ^ 1] += d;
    acc[i] += (k & 0xFFFFFFFFu) * (k >> 32);
  }
}
static inline void scramble_scalar(uint64_t *acc, const unsigned char *sec) {
  for (int i = 0; i < 8; i++) {
    uint64_t a = acc[i];
    a ^= a >> 47;
    a ^= rd64(sec + 8 * i);
    acc[i] = a * P32_1;
  }
}

/* the long loop: whole 1 KB blocks (16 stripes, then a scramble), the remaining stripes, and
 * the last 64 bytes as one more stripe with its own key */
#define XXH3_LONG_BODY(STRIPE, SCRAMBLE)                                                                               \
  size_t nblocks = (n - 1) / 1024;                                                                                     \
  for (size_t b = 0; b < nblocks; b++) {                                                                               \
    for (size_t k = 0; k < 16; k++)                                                                                    \
      STRIPE(acc, in + b * 1024 + 64 * k, ksecret + 8 * k);                                                            \
    SCRAMBLE(acc, ksecret + 192 - 64);                                                                                 \
  }                                                                                                                    \
  size_t nstripes = ((n - 1) - 1024 * nblocks) / 64;                                                                   \
  for (size_t k = 0; k < nstripes; k++)                                                                                \
    STRIPE(acc, in + nblocks * 1024 + 64 * k, ksecret + 8 * k);                                                        \
  STRIPE(acc, in + n - 64, ksecret + 192 - 64 - 7);

static void long_scalar(uint64_t *acc, const unsigned char *in, size_t n) {
  XXH3_LONG_BODY(stripe_scalar, scramble_scalar)
}

#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx2"))) static inline void stripe_avx2(__m256i *acc, const unsigned char *in,
                                                               const unsigned char *sec) {
  for (int i = 0; i < 2; i++) {
    __m256i d = _mm256_loadu_si256((const __m256i *)(in + 32 * i));
    __m256i k = _mm256_xor_si256(d, _mm256_loadu_si256((const __m256i *)(sec + 32 * i)));
    __m256i prod = _mm256_mul_epu32(k, _mm256_shuffle_epi32(k, _MM_SHUFFLE(0, 3, 0, 1)));
    __m256i swapped = _mm256_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2));
    acc[i] = _mm256_add_epi64(prod, _mm256_add_epi64(acc[i], swapped));
  }
}
__attribute__((target("avx2"))) static inline void scramble_avx2(__m256i *acc, const unsigned char *sec) {
  const __m256i prime = _mm256_set1_epi32((int)P32_1);
  for (int i = 0; i < 2; i++) {
    __m256i a = _mm256_xor_si256(acc[i], _mm256_srli_epi64(acc[i], 47));
    a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *)(sec + 32 * i)));
    __m256i lo = _mm256_mul_epu32(a, prime);
    __m256i hi = _mm256_mul_epu32(_mm256_shuffle_epi32(a, _MM_SHUFFLE(0, 3, 0, 1)), prime);
    acc[i] = _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));
  }
}
__attribute__((target("avx2"))) static void long_avx2(uint64_t *acc64, const unsigned char *in, size_t n) {
  __m256i acc[2] = {_mm256_loadu_si256((const __m256i *)acc64), _mm256_loadu_si256((const __m256i *)(acc64 + 4))};
  XXH3_LONG_BODY(stripe_avx2, scramble_avx2)
  _mm256_storeu_si256((__m256i *)acc64, acc[0]);
  _mm256_storeu_si256((__m256i *)(acc64 + 4), acc[1]);
}
static inline void stripe_sse2(__m128i *acc, const unsigned char *in, const unsigned char *sec) {
  for (int i = 0; i < 4; i++) {
    __m128i d = _mm_loadu_si128((const __m128i *)(in + 16 * i));
    __m128i k = _mm_xor_si128(d, _mm_loadu_si128((const __m128i *)(sec + 16 * i)));
    __m128i prod = _mm_mul_epu32(k, _mm_shuffle_epi32(k, _MM_SHUFFLE(0, 3, 0, 1)));
    __m128i swapped = _mm_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2));
    acc[i] = _mm_add_epi64(prod, _mm_add_epi64(acc[i], swapped));
  }
}
static inline void scramble_sse2(__m128i *acc, const unsigned char *sec) {
  const __m128i prime = _mm_set1_epi32((int)P32_1);
  for (int i = 0; i < 4; i++) {
    __m128i a = _mm_xor_si128(acc[i], _mm_srli_epi64(acc[i], 47));
    a = _mm_xor_si128(a, _mm_loadu_si128((const __m128i *)(sec + 16 * i)));
    __m128i lo = _mm_mul_epu32(a, prime);
    __m128i hi = _mm_mul_epu32(_mm_shuffle_epi32(a, _MM_SHUFFLE(0, 3, 0, 1)), prime);
    acc[i] = _mm_add_epi64(lo, _mm_slli_epi64(hi, 32));
  }
}
static void long_sse2(uint64_t *acc64, const unsigned char *in, size_t n) {
  __m128i acc[4];
  for (int i = 0; i < 4; i++)
    acc[i] = _mm_loadu_si128((const __m128i *)(acc64 + 2 * i));
  XXH3_LONG_BODY(stripe_sse2, scramble_sse2)
  for (int i = 0; i < 4; i++)
    _mm_storeu_si128((__m128i *)(acc64 + 2 * i), acc[i]);
}
#endif

/* which long loop: chosen once (AVX2 when the CPU has it); the unit test compares all of them */
typedef void (*long_fn)(uint64_t *, const unsigned char *, size_t);
static long_fn pick_long(int force) {
#if defined(__x86_64__)
  if (force == 1)
    return long_scalar;
  if (force == 2)
    return long_sse2;
  if (force == 3 || mt_cpu_has(MT_CPU_AVX2))
    return long_avx2;
  return long_sse2;
#else
  (void)force;
  return long_scalar;
#endif
}
static long_fn long_impl;

static uint64_t xxh3_with(const void *data, size_t n, long_fn f) {
  const unsigned char *in = data;
  if (n <= 240)
    return xxh3_short(in, n);
  uint64_t acc[8] = {P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1};
  f(acc, in, n);
  uint64_t r = n * P64_1;
  for (int i = 0; i < 4; i++)
    r += fold64(acc[2 * i] ^ rd64(ksecret + 11 + 16 * i), acc[2 * i + 1] ^ rd64(ksecret + 11 + 16 * i + 8));
  return avalanche3(r);
}

uint64_t mt_xxh3_64(const void *data, size_t n) {
  long_fn f = __atomic_load_n(&long_impl, __ATOMIC_RELAXED);
  if (!f)
    __atomic_store_n(&long_impl, f = pick_long(0), __ATOMIC_RELAXED);
  return xxh3_with(data, n, f);
}

/* the same with a chosen long loop (1 scalar, 2 SSE2, 3 AVX2; others: the default), for tests */
uint64_t mt_xxh3_64_impl(const void *data, size_t n, int impl) {
  return xxh3_with(data, n, pick_long(impl));
}

/* ------------------------------------------------------------------ pieces
 * The checksum hashes 128 KiB pieces of the payloads separately (on the thread pool: a load
 * reads and hashes pieces in parallel) and then the list of their digests. */
typedef struct ck_piece {
  char *data;   /* where the piece's bytes are (or go, when fd >= 0) */
  uint64_t off; /* its offset in the file */
  size_t len;
  uint64_t digest;
  int err; /* after a read: 0, an errno, or -1 for a short file */
} ck_piece;

typedef struct ck_job {
  ck_piece *pieces;
  size_t n;
  size_t next; /* atomic: the next piece to take (pieces differ in size: taken one by one) */
  int fd;      /* read each piece from here first; -1: the bytes are in place */
} ck_job;

static void pieces_run(void *ctx, int64_t b, int64_t e) {
  (void)b, (void)e;
  ck_job *job = ctx;
  for (;;) {
    size_t i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
    if (i >= job->n)
      break;
    ck_piece *pc = &job->pieces[i];
    if (job->fd >= 0) {
      size_t done = 0;
      while (done < pc->len) {
        ssize_t k = pread(job->fd, pc->data + done, pc->len - done, (off_t)(pc->off + done));
        if (k < 0 && errno == EINTR)
          continue;
        if (k <= 0) {
          pc->err = k < 0 ? errno : -1;
          break;
        }
        done += (size_t)k;
      }
      if (pc->err)
        continue;
    }
    pc->digest = mt_xxh3_64(pc->data, pc->len);
  }
}

/* every piece's digest (read first when fd >= 0), the pool's threads taking pieces in turn */
static void pieces_hash(ck_piece *pieces, size_t n, int fd) {
  ck_job job = {pieces, n, 0, fd};
  int nt = mt_get_num_threads();
  if (n < (fd >= 0 ? CK_PARALLEL_READ : CK_PARALLEL_HASH) || nt <= 1)
    pieces_run(&job, 0, 1);
  else
    mt_parallel_for(n < (size_t)nt ? (int64_t)n : nt, 1, pieces_run, &job);
}

static size_t align_up(size_t n) {
  return (n + CK_ALIGN - 1) & ~(size_t)(CK_ALIGN - 1);
}
static void put64(unsigned char *p, uint64_t v) {
  memcpy(p, &v, 8);
}
static void put32(unsigned char *p, uint32_t v) {
  memcpy(p, &v, 4);
}
static const unsigned char zeros[CK_ALIGN];

/* the checksum's body value: XXH3-64 of the digests of the payload pieces, then of the digest of the
 * table and value stream (hashed as the one piece they are in the file); digests has room for
 * n + 1 */
static uint64_t body_hash(uint64_t *digests, size_t n, uint64_t tail_digest) {
  digests[n] = tail_digest;
  return mt_xxh3_64(digests, 8 * (n + 1));
}

/* ------------------------------------------------------------------ writer */
struct mt_ckpt_writer {
  char *path, *tmp;
  int fd;
  unsigned char *meta; /* the value stream, kept in memory until the commit */
  size_t meta_len, meta_cap;
  uint64_t *table; /* offset, nbytes per storage */
  size_t nst, table_cap;
  const mt_storage **keys; /* storage -> its index in the table (open addressing) */
  uint32_t *vals;
  size_t map_cap;
  uint64_t pos;      /* bytes written so far (the header's 64 included) */
  uint64_t *digests; /* of every payload piece so far (the checksum's list) */
  size_t ndig, dig_cap;
  ck_piece *pieces; /* scratch for one payload */
  size_t piece_cap;
};

static mt_status wfail_errno(mt_ckpt_writer *w, const char *what) {
  return mt_error(MT_EIO, "save: %s: %s (%s)", w->path, what, strerror(errno));
}

static mt_status write_all(mt_ckpt_writer *w, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t k = write(w->fd, p, n);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      return wfail_errno(w, "cannot write the temporary file");
    }
    p += k;
    n -= (size_t)k;
    w->pos += (uint64_t)k;
  }
  return MT_OK;
}

static mt_status meta_reserve(mt_ckpt_writer *w, size_t n) {
  if (w->meta_len + n <= w->meta_cap)
    return MT_OK;
  size_t cap = w->meta_cap ? w->meta_cap : 4096;
  while (cap < w->meta_len + n)
    cap *= 2;
  unsigned char *m = realloc(w->meta, cap);
  if (!m)
    return mt_error(MT_ENOMEM, "save: %s: out of memory", w->path);
  w->meta = m;
  w->meta_cap = cap;
  return MT_OK;
}

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

void mt_ckpt_writer_abort(mt_ckpt_writer *w) {
  if (!w)
    return;
  if (w->fd >= 0) {
    close(w->fd);
    unlink(w->tmp);
  }
  free(w->path);
  free(w->tmp);
  free(w->meta);
  free(w->table);
  free(w->keys);
  free(w->vals);
  free(w->digests);
  free(w->pieces);
  free(w);
}

mt_status mt_ckpt_writer_open(const char *path, mt_ckpt_writer **out) {
  if (!path || !out)
    return mt_error(MT_EINVAL, "save: path is NULL");
  *out = NULL;
  mt_ckpt_writer *w = calloc(1, sizeof *w);
  if (!w)
    return mt_error(MT_ENOMEM, "save: out of memory");
  w->fd = -1;
  w->path = dupstr(path);
  size_t n = strlen(path) + 32;
  w->tmp = malloc(n);
  if (!w->path || !w->tmp) {
    mt_ckpt_writer_abort(w);
    return mt_error(MT_ENOMEM, "save: out of memory");
  }
  snprintf(w->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (w->fd < 0) {
    mt_status s = mt_error(MT_EIO, "save: %s: cannot create %s (%s)", path, w->tmp, strerror(errno));
    mt_ckpt_writer_abort(w);
    return s;
  }
  /* the header is written last (pwrite at 0); start the payloads at 64 */
  if (lseek(w->fd, CK_HEADER, SEEK_SET) != CK_HEADER) {
    mt_status s = wfail_errno(w, "cannot seek in the temporary file");
    mt_ckpt_writer_abort(w);
    return s;
  }
  w->pos = CK_HEADER;
  *out = w;
  return MT_OK;
}

mt_status mt_ckpt_put_tag(mt_ckpt_writer *w, int tag) {
  MT_TRY(meta_reserve(w, 1));
  w->meta[w->meta_len++] = (unsigned char)tag;
  return MT_OK;
}

mt_status mt_ckpt_put_number(mt_ckpt_writer *w, double x) {
  MT_TRY(meta_reserve(w, 9));
  unsigned char *p = w->meta + w->meta_len;
  p[0] = MT_CKPT_NUMBER;
  memcpy(p + 1, &x, 8);
  w->meta_len += 9;
  return MT_OK;
}

/* tag, u32 id (when id != 0), u64 length, bytes */
static mt_status put_counted(mt_ckpt_writer *w, int tag, uint32_t id, const void *s, uint64_t len, int with_bytes) {
  size_t need = 13 + (with_bytes ? (size_t)len : 0);
  MT_TRY(meta_reserve(w, need));
  unsigned char *p = w->meta + w->meta_len;
  *p++ = (unsigned char)tag;
  if (id) {
    put32(p, id);
    p += 4;
  }
  put64(p, len);
  p += 8;
  if (with_bytes && len)
    memcpy(p, s, (size_t)len);
  p += with_bytes ? len : 0;
  w->meta_len = (size_t)(p - w->meta);
  return MT_OK;
}

mt_status mt_ckpt_put_string(mt_ckpt_writer *w, const char *s, size_t len) {
  return put_counted(w, MT_CKPT_STRING, 0, s, len, 1);
}

mt_status mt_ckpt_put_table(mt_ckpt_writer *w, uint32_t id, uint64_t npairs) {
  return put_counted(w, MT_CKPT_TABLE, id, NULL, npairs, 0);
}

mt_status mt_ckpt_put_ref(mt_ckpt_writer *w, uint32_t id) {
  MT_TRY(meta_reserve(w, 5));
  w->meta[w->meta_len] = MT_CKPT_REF;
  put32(w->meta + w->meta_len + 1, id);
  w->meta_len += 5;
  return MT_OK;
}

mt_status mt_ckpt_put_object(mt_ckpt_writer *w, uint32_t id, const char *name, size_t len) {
  return put_counted(w, MT_CKPT_OBJECT, id, name, len, 1);
}

/* the storage's payload, appended now: its pieces hashed (see pieces_hash), then written in one go */
static mt_status write_payload(mt_ckpt_writer *w, const mt_storage *s, uint32_t *index) {
  if (w->nst == w->table_cap) {
    size_t cap = w->table_cap ? w->table_cap * 2 : 16;
    uint64_t *t = realloc(w->table, cap * 2 * sizeof(uint64_t));
    if (!t)
      return mt_error(MT_ENOMEM, "save: %s: out of memory", w->path);
    w->table = t;
    w->table_cap = cap;
  }
  size_t pad = align_up(w->pos) - w->pos;
  if (pad)
    MT_TRY(write_all(w, zeros, pad));
  uint64_t off = w->pos;
  char *p = s->_data;
  size_t n = s->_nbytes;
  /* the pieces' digests (in parallel), then the payload in one write */
  size_t np = (n + CK_PIECE - 1) / CK_PIECE;
  if (np > w->piece_cap || w->ndig + np + 1 > w->dig_cap) {
    size_t pc = np > w->piece_cap ? np : w->piece_cap ? w->piece_cap : 1, dc = w->dig_cap ? w->dig_cap : 64;
    while (dc < w->ndig + np + 1)
      dc *= 2;
    ck_piece *pieces = realloc(w->pieces, pc * sizeof *pieces);
    if (pieces)
      w->pieces = pieces, w->piece_cap = pc;
    uint64_t *d = realloc(w->digests, dc * sizeof *d);
    if (d)
      w->digests = d, w->dig_cap = dc;
    if (!pieces || !d)
      return mt_error(MT_ENOMEM, "save: %s: out of memory", w->path);
  }
  for (size_t i = 0; i < np; i++) {
    ck_piece pc = {p + i * CK_PIECE, 0, n - i * CK_PIECE < CK_PIECE ? n - i * CK_PIECE : CK_PIECE, 0, 0};
    w->pieces[i] = pc;
  }
  pieces_hash(w->pieces, np, -1);
  for (size_t i = 0; i < np; i++)
    w->digests[w->ndig++] = w->pieces[i].digest;
  MT_TRY(write_all(w, p, n));
  w->table[2 * w->nst] = off;
  w->table[2 * w->nst + 1] = n;
  *index = (uint32_t)w->nst++;
  return MT_OK;
}

static size_t ptr_hash(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ULL;
  return (size_t)(x >> 20) & (cap - 1);
}

/* the storage's index, writing its payload the first time it is seen */
static mt_status storage_index(mt_ckpt_writer *w, const mt_storage *s, uint32_t *index) {
  if ((w->nst + 1) * 2 > w->map_cap) {
    size_t cap = w->map_cap ? w->map_cap * 2 : 64;
    const mt_storage **keys = calloc(cap, sizeof *keys);
    uint32_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
      free(keys);
      free(vals);
      return mt_error(MT_ENOMEM, "save: %s: out of memory", w->path);
    }
    for (size_t i = 0; i < w->map_cap; i++) {
      if (!w->keys[i])
        continue;
      size_t j = ptr_hash(w->keys[i], cap);
      while (keys[j])
        j = (j + 1) & (cap - 1);
      keys[j] = w->keys[i];
      vals[j] = w->vals[i];
    }
    free(w->keys);
    free(w->vals);
    w->keys = keys;
    w->vals = vals;
    w->map_cap = cap;
  }
  size_t j = ptr_hash(s, w->map_cap);
  while (w->keys[j]) {
    if (w->keys[j] == s) {
      *index = w->vals[j];
      return MT_OK;
    }
    j = (j + 1) & (w->map_cap - 1);
  }
  MT_TRY(write_payload(w, s, index));
  w->keys[j] = s;
  w->vals[j] = *index;
  return MT_OK;
}

mt_status mt_ckpt_put_tensor(mt_ckpt_writer *w, uint32_t id, const mt_tensor *t, int flags) {
  if (!t)
    return mt_error(MT_EINVAL, "save: %s: tensor is NULL", w->path);
  if (t->_device_type != MT_CPU)
    return mt_error(MT_EDEVICE, "save: %s: only CPU tensors can be saved", w->path);
  if (!t->_storage || t->_offset < 0 || t->_ndim < 0 || t->_ndim > MT_MAX_DIMS)
    return mt_error(MT_EINVAL, "save: %s: a tensor with an invalid geometry", w->path);
  uint32_t index = 0;
  MT_TRY(storage_index(w, t->_storage, &index));
  int nd = t->_ndim;
  MT_TRY(meta_reserve(w, 22 + 16 * (size_t)nd));
  unsigned char *p = w->meta + w->meta_len;
  *p++ = MT_CKPT_TENSOR;
  put32(p, id);
  put32(p + 4, index);
  p[8] = (unsigned char)t->_dtype;
  p[9] = (unsigned char)nd;
  p[10] = (unsigned char)(flags & 3);
  p[11] = 0;
  put64(p + 12, (uint64_t)t->_offset);
  p += 20;
  for (int d = 0; d < nd; d++, p += 8)
    put64(p, (uint64_t)t->_sizes[d]);
  for (int d = 0; d < nd; d++, p += 8)
    put64(p, (uint64_t)t->_strides[d]);
  w->meta_len = (size_t)(p - w->meta);
  return MT_OK;
}

/* fsync of the directory holding path, so that a rename in it is durable */
static int fsync_dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  char buf[4096];
  const char *dir = ".";
  if (slash) {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof buf)
      return 0; /* an absurd path: skip rather than fail the save */
    memcpy(buf, path, n);
    buf[n] = 0;
    dir = buf;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int r = fsync(fd);
  /* some file systems cannot fsync a directory: that is no reason to fail */
  if (r != 0 && (errno == EINVAL || errno == EBADF || errno == ENOTSUP))
    r = 0;
  close(fd);
  return r;
}

/* Without fsync, replace path by tmp with an atomic exchange of the two names, then remove tmp
 * (now the old file); 1 when done, 0 when the caller should rename instead (no old file, or a file
 * system or kernel without RENAME_EXCHANGE). A plain rename over an existing file makes ext4
 * (auto_da_alloc) write the new file's data out at once, which is most of the cost of an unsynced
 * save (3 ms against 0.7 ms for 2 MB on our CI's disk); an exchange does not. So nothing is
 * durable before the page cache is written back by the kernel, as {sync = false} says. */
static int replace_by_exchange(const char *tmp, const char *path) {
#ifdef RENAME_EXCHANGE
  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) != 0)
    return 0;
  unlink(tmp); /* a failure leaves the old file under the temporary name: harmless */
  return 1;
#else
  (void)tmp, (void)path;
  return 0;
#endif
}

/* Finish: table, value stream, header; fsync (when `sync`), rename over the destination, fsync of
 * the directory. Frees the writer, whatever happens (on failure the temporary file is removed). */
mt_status mt_ckpt_writer_commit(mt_ckpt_writer *w, int sync) {
  mt_status st = MT_OK;
  unsigned char h[CK_HEADER] = {0};
  size_t pad = align_up(w->pos) - w->pos;
  if (pad)
    st = write_all(w, zeros, pad);
  uint64_t table_off = w->pos;
  if (st == MT_OK) {
    size_t tb = w->nst * 16;
    struct iovec iov[2] = {{w->table, tb}, {w->meta, w->meta_len}};
    size_t want = tb + w->meta_len;
    ssize_t k = want ? writev(w->fd, iov, 2) : 0;
    if (k >= 0 && (size_t)k != want) {
      /* a short write: the rest one piece at a time */
      w->pos += (uint64_t)k;
      size_t done = (size_t)k;
      if (done < tb) {
        st = write_all(w, (char *)w->table + done, tb - done);
        done = tb;
      }
      if (st == MT_OK)
        st = write_all(w, w->meta + (done - tb), w->meta_len - (done - tb));
    } else if (k < 0) {
      st = wfail_errno(w, "cannot write the temporary file");
    } else {
      w->pos += (uint64_t)k;
    }
  }
  if (st == MT_OK) {
    memcpy(h, CK_MAGIC, 8);
    put32(h + 8, CK_VERSION);
    put64(h + 16, w->nst);
    put64(h + 24, table_off);
    put64(h + 32, w->meta_len);
    put64(h + 40, w->pos);
    /* the table and the stream, hashed as they lie in the file: one piece */
    size_t tb = 16 * w->nst;
    unsigned char *tail = malloc(tb + w->meta_len);
    uint64_t *d = w->ndig + 1 > w->dig_cap ? realloc(w->digests, (w->ndig + 1) * sizeof *d) : w->digests;
    if (d)
      w->digests = d, w->dig_cap = w->ndig + 1 > w->dig_cap ? w->ndig + 1 : w->dig_cap;
    if (!tail || !d) {
      free(tail);
      st = mt_error(MT_ENOMEM, "save: %s: out of memory", w->path);
    } else {
      memcpy(tail, w->table, tb);
      memcpy(tail + tb, w->meta, w->meta_len);
      put64(h + 56, body_hash(w->digests, w->ndig, mt_xxh3_64(tail, tb + w->meta_len)));
      put64(h + 56, mt_xxh3_64(h, CK_HEADER));
      free(tail);
    }
  }
  if (st == MT_OK) {
    ssize_t k;
    do
      k = pwrite(w->fd, h, CK_HEADER, 0);
    while (k < 0 && errno == EINTR);
    if (k != CK_HEADER)
      st = wfail_errno(w, "cannot write the header");
  }
  if (st == MT_OK && sync && fsync(w->fd) != 0)
    st = wfail_errno(w, "fsync failed");
  if (st == MT_OK) {
    int r = close(w->fd);
    w->fd = -1;
    if (r != 0) {
      st = mt_error(MT_EIO, "save: %s: cannot close the temporary file (%s)", w->path, strerror(errno));
      unlink(w->tmp);
    }
  }
  if (st == MT_OK && !sync && replace_by_exchange(w->tmp, w->path)) {
    /* done: path names the new file, and the old one is gone */
  } else if (st == MT_OK && rename(w->tmp, w->path) != 0) {
    st = mt_error(MT_EIO, "save: %s: cannot rename %s over it (%s)", w->path, w->tmp, strerror(errno));
    unlink(w->tmp);
  }

  if (st == MT_OK && sync && fsync_dir_of(w->path) != 0)
    st = mt_error(MT_EIO, "save: %s: fsync of its directory failed (%s)", w->path, strerror(errno));
  mt_ckpt_writer_abort(w); /* frees; the temporary file is gone by now unless a step failed before it */
  return st;
}

mt_status mt_fsync_file(void *stdio_file) {
  FILE *f = stdio_file;
  if (!f)
    return mt_error(MT_EINVAL, "save: file is NULL");
  if (fflush(f) != 0)
    return mt_error(MT_EIO, "save: write failed (%s)", strerror(errno));
  if (fdatasync(fileno(f)) != 0)
    return mt_error(MT_EIO, "save: fsync failed (%s)", strerror(errno));
  return MT_OK;
}

mt_status mt_fsync_dir(const char *path) {
  if (!path)
    return mt_error(MT_EINVAL, "save: path is NULL");
  if (fsync_dir_of(path) != 0)
    return mt_error(MT_EIO, "save: %s: fsync of its directory failed (%s)", path, strerror(errno));
  return MT_OK;
}

/* ------------------------------------------------------------------ reader */
typedef struct ck_mapping {
  void *base;
  size_t len;
  int64_t refs;
} ck_mapping;

static void mapping_release(void *ctx, void *data) {
  (void)data;
  ck_mapping *m = ctx;
  if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    munmap(m->base, m->len);
    free(m);
  }
}

struct mt_ckpt_reader {
  char *path;
  const unsigned char *meta, *end, *p; /* the value stream and the read position */
  unsigned char *tail;                 /* table + stream, read from the file (NULL when mapped) */
  ck_mapping *map;                     /* the whole file, with {mmap=true} */
  uint64_t nst;
  mt_tensor **storages; /* one uint8 tensor per storage: holds it */
  uint32_t next_id;     /* the id the next defining record must carry */
};

static mt_status bad(const mt_ckpt_reader *r, const char *what) {
  return mt_error(MT_EFORMAT, "load: %s: %s", r->path, what);
}

void mt_ckpt_reader_close(mt_ckpt_reader *r) {
  if (!r)
    return;
  if (r->storages) {
    for (uint64_t i = 0; i < r->nst; i++)
      mt_tensor_release(r->storages[i]);
    free(r->storages);
  }
  if (r->map)
    mapping_release(r->map, NULL);
  free(r->tail);
  free(r->path);
  free(r);
}

static mt_status pread_all(mt_ckpt_reader *r, int fd, void *buf, size_t n, uint64_t off) {
  char *p = buf;
  while (n > 0) {
    ssize_t k = pread(fd, p, n, (off_t)off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return mt_error(MT_EIO, "load: %s: read failed (%s)", r->path, strerror(errno));
    if (k == 0)
      return bad(r, "truncated (the file ended early)");
    p += k;
    n -= (size_t)k;
    off += (uint64_t)k;
  }
  return MT_OK;
}

static int all_zero(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return 0;
  return 1;
}

/* the reading part of mt_ckpt_reader_open, on an open file */
static mt_status reader_load(mt_ckpt_reader *r, int fd, int use_mmap) {
  struct stat sb;
  if (fstat(fd, &sb) != 0)
    return mt_error(MT_EIO, "load: %s: cannot stat the file (%s)", r->path, strerror(errno));
  if (!S_ISREG(sb.st_mode))
    return bad(r, "not a regular file");
  uint64_t fsize = (uint64_t)sb.st_size;
  if (fsize < CK_HEADER)
    return bad(r, "not a moontorch checkpoint (too short for its header)");
  unsigned char h[CK_HEADER];
  if (use_mmap) {
    ck_mapping *m = malloc(sizeof *m);
    if (!m)
      return mt_error(MT_ENOMEM, "load: %s: out of memory", r->path);
    void *base = mmap(NULL, (size_t)fsize, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      free(m);
      return mt_error(MT_EIO, "load: %s: cannot map the file (%s)", r->path, strerror(errno));
    }
    m->base = base;
    m->len = (size_t)fsize;
    m->refs = 1;
    r->map = m;
    memcpy(h, base, CK_HEADER);
  } else {
    MT_TRY(pread_all(r, fd, h, CK_HEADER, 0));
  }
  if (memcmp(h, CK_MAGIC, 8) != 0)
    return bad(r, "not a moontorch checkpoint (bad magic)");
  uint32_t version = rd32(h + 8);
  if (version != CK_VERSION) {
    return mt_error(MT_EFORMAT, "load: %s: unsupported format version %u (this build reads %u)", r->path, version,
                    CK_VERSION);
  }
  uint64_t nst = rd64(h + 16), table_off = rd64(h + 24), meta_size = rd64(h + 32), size_field = rd64(h + 40);
  if (rd32(h + 12) != 0 || rd64(h + 48) != 0)
    return bad(r, "corrupted header (reserved fields are not zero)");
  if (size_field != fsize)
    return bad(r, "truncated or corrupted (its size differs from the size in its header)");
  if (table_off < CK_HEADER || table_off % CK_ALIGN != 0 || table_off > fsize || nst > (fsize - table_off) / 16 ||
      meta_size != fsize - table_off - 16 * nst)
    return bad(r, "corrupted header (inconsistent sizes)");
  if (meta_size == 0)
    return bad(r, "corrupted header (no value stream)");
  size_t tail_len = (size_t)(fsize - table_off);
  const unsigned char *tail;
  if (r->map) {
    tail = (const unsigned char *)r->map->base + table_off;
  } else {
    r->tail = malloc(tail_len);
    if (!r->tail)
      return mt_error(MT_ENOMEM, "load: %s: out of memory", r->path);
    MT_TRY(pread_all(r, fd, r->tail, tail_len, table_off));
    tail = r->tail;
  }
  /* the table: offsets exactly where the writer puts them, inside the payload region */
  uint64_t expect = CK_HEADER;
  for (uint64_t i = 0; i < nst; i++) {
    uint64_t off = rd64(tail + 16 * i), n = rd64(tail + 16 * i + 8);
    if (off != expect || n > table_off - off)
      return bad(r, "corrupted storage table");
    expect = align_up(off + n);
  }
  if (expect != table_off)
    return bad(r, "corrupted storage table (it does not end where the payloads end)");
  r->storages = calloc(nst ? nst : 1, sizeof *r->storages);
  if (!r->storages)
    return mt_error(MT_ENOMEM, "load: %s: out of memory", r->path);
  r->nst = nst;
  /* payloads: into fresh storages (or in place in the mapping); the padding after each is zero */
  size_t npieces = 0;
  for (uint64_t i = 0; i < nst; i++) {
    uint64_t off = rd64(tail + 16 * i), n = rd64(tail + 16 * i + 8);
    int64_t sz = (int64_t)n;
    npieces += (size_t)((n + CK_PIECE - 1) / CK_PIECE);
    if (r->map) {
      unsigned char *data = (unsigned char *)r->map->base + off;
      __atomic_add_fetch(&r->map->refs, 1, __ATOMIC_RELAXED);
      mt_status s =
          mt_tensor_from_blob(n ? data : NULL, &sz, NULL, 1, MT_UINT8, mapping_release, r->map, &r->storages[i]);
      if (s != MT_OK) {
        mapping_release(r->map, NULL);
        return s;
      }
    } else {
      MT_TRY(mt_tensor_empty(&sz, 1, MT_UINT8, &r->storages[i]));
    }
    uint64_t end = off + n;
    size_t pad = (size_t)(align_up(end) - end);
    if (pad) {
      unsigned char zb[CK_ALIGN];
      const unsigned char *z = zb;
      if (r->map)
        z = (const unsigned char *)r->map->base + end;
      else
        MT_TRY(pread_all(r, fd, zb, pad, end));
      if (!all_zero(z, pad))
        return bad(r, "corrupted (padding bytes are not zero)");
    }
  }
  /* every piece read (unless mapped) and hashed, on the thread pool */
  ck_piece *pieces = malloc((npieces + 1) * sizeof *pieces);
  uint64_t *digests = malloc((npieces + 1) * sizeof *digests);
  if (!pieces || !digests) {
    free(pieces);
    free(digests);
    return mt_error(MT_ENOMEM, "load: %s: out of memory", r->path);
  }
  size_t k = 0;
  for (uint64_t i = 0; i < nst; i++) {
    uint64_t off = rd64(tail + 16 * i), n = rd64(tail + 16 * i + 8);
    char *data = r->storages[i]->_storage->_data;
    for (uint64_t done = 0; done < n; done += CK_PIECE, k++) {
      ck_piece pc = {data + done, off + done, n - done < CK_PIECE ? (size_t)(n - done) : CK_PIECE, 0, 0};
      pieces[k] = pc;
    }
  }
  pieces_hash(pieces, npieces, r->map ? -1 : fd);
  int err = 0;
  for (size_t i = 0; i < npieces; i++) {
    if (pieces[i].err && !err)
      err = pieces[i].err;
    digests[i] = pieces[i].digest;
  }
  free(pieces);
  unsigned char hs[CK_HEADER];
  memcpy(hs, h, CK_HEADER);
  put64(hs + 56, body_hash(digests, npieces, mt_xxh3_64(tail, tail_len)));
  uint64_t sum = mt_xxh3_64(hs, CK_HEADER);
  free(digests);
  if (err == -1)
    return bad(r, "truncated (the file ended early)");
  if (err)
    return mt_error(MT_EIO, "load: %s: read failed (%s)", r->path, strerror(err));
  if (sum != rd64(h + 56))
    return bad(r, "checksum mismatch (the file is corrupted)");
  r->meta = r->p = tail + 16 * nst;
  r->end = tail + tail_len;
  r->next_id = 1;
  return MT_OK;
}

mt_status mt_ckpt_reader_open(const char *path, int use_mmap, mt_ckpt_reader **out) {
  if (!path || !out)
    return mt_error(MT_EINVAL, "load: path is NULL");
  *out = NULL;
  mt_ckpt_reader *r = calloc(1, sizeof *r);
  if (!r || !(r->path = dupstr(path))) {
    free(r);
    return mt_error(MT_ENOMEM, "load: out of memory");
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    mt_status s = mt_error(MT_EIO, "load: %s: cannot open the file (%s)", path, strerror(errno));
    mt_ckpt_reader_close(r);
    return s;
  }
  mt_status s = reader_load(r, fd, use_mmap);
  close(fd);
  if (s != MT_OK) {
    mt_ckpt_reader_close(r);
    return s;
  }
  *out = r;
  return MT_OK;
}

/* bounds-checked takes from the value stream */
#define NEED(n, what)                                                                                                  \
  do {                                                                                                                 \
    if ((size_t)(r->end - r->p) < (size_t)(n))                                                                         \
      return bad(r, what);                                                                                             \
  } while (0)

static mt_status take_id(mt_ckpt_reader *r, mt_ckpt_value *v) {
  NEED(4, "truncated record (an id)");
  uint32_t id = rd32(r->p);
  r->p += 4;
  if (id != r->next_id)
    return bad(r, "corrupted (an object id out of sequence)");
  if (r->next_id == UINT32_MAX)
    return bad(r, "too many objects");
  r->next_id++;
  v->id = id;
  return MT_OK;
}

static mt_status take_u64(mt_ckpt_reader *r, uint64_t *out) {
  NEED(8, "truncated record (a count or length)");
  *out = rd64(r->p);
  r->p += 8;
  return MT_OK;
}

static mt_status take_tensor(mt_ckpt_reader *r, mt_ckpt_value *v) {
  MT_TRY(take_id(r, v));
  NEED(16, "truncated tensor record");
  uint32_t si = rd32(r->p);
  int dt = r->p[4], nd = r->p[5], flags = r->p[6], zero = r->p[7];
  int64_t offset = (int64_t)rd64(r->p + 8);
  r->p += 16;
  if (si >= r->nst)
    return bad(r, "a tensor names a storage that does not exist");
  if (!mt_dtype_valid(dt))
    return bad(r, "a tensor has an unknown dtype code");
  if (nd > MT_MAX_DIMS)
    return bad(r, "a tensor has too many dimensions");
  if (flags > 3 || zero != 0)
    return bad(r, "a tensor record has unknown flags");
  if ((flags & 2) && !mt_dtype_is_floating(dt))
    return bad(r, "a non-floating tensor marked as requiring grad");
  NEED(16 * (size_t)nd, "truncated tensor record (sizes and strides)");
  int64_t sizes[MT_MAX_DIMS], strides[MT_MAX_DIMS];
  for (int d = 0; d < nd; d++) {
    sizes[d] = (int64_t)rd64(r->p + 8 * d);
    strides[d] = (int64_t)rd64(r->p + 8 * (nd + d));
  }
  r->p += 16 * (size_t)nd;
  /* the view must lie inside its storage: offset + sum (size-1)*stride < nbytes / itemsize */
  mt_tensor *st = r->storages[si];
  int64_t item = (int64_t)mt_dtype_size(dt);
  int64_t cap = (int64_t)st->_storage->_nbytes / item; /* elements the storage holds */
  if (offset < 0)
    return bad(r, "a tensor has a negative storage offset");
  int64_t numel = 1, last = offset;
  for (int d = 0; d < nd; d++) {
    if (sizes[d] < 0 || strides[d] < 0)
      return bad(r, "a tensor has a negative size or stride");
    if (__builtin_mul_overflow(numel, sizes[d], &numel))
      return bad(r, "a tensor's size overflows");
    int64_t reach;
    if (sizes[d] > 0 &&
        (__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) || __builtin_add_overflow(last, reach, &last)))
      return bad(r, "a tensor's extent overflows");
  }
  if (numel > 0 ? last >= cap : offset > cap)
    return bad(r, "a tensor view lies outside its storage");
  mt_tensor base;
  memset(&base, 0, sizeof base);
  base._storage = st->_storage;
  base._dtype = dt;
  base._device_type = MT_CPU;
  MT_TRY(mt_new_view(&base, sizes, strides, nd, offset, &v->tensor));
  if (flags & 1)
    v->tensor->_flags |= MT_TENSOR_PARAMETER;
  v->flags = (uint32_t)flags;
  return MT_OK;
}

mt_status mt_ckpt_read_value(mt_ckpt_reader *r, mt_ckpt_value *v) {
  memset(v, 0, sizeof *v);
  NEED(1, "truncated (the value stream ends inside a value)");
  int tag = *r->p++;
  v->tag = tag;
  switch (tag) {
  case MT_CKPT_NIL:
    if (r->p - 1 != r->meta)
      return bad(r, "corrupted (nil inside a table)");
    return MT_OK;
  case MT_CKPT_FALSE:
  case MT_CKPT_TRUE:
    return MT_OK;
  case MT_CKPT_NUMBER:
    NEED(8, "truncated number");
    memcpy(&v->number, r->p, 8);
    r->p += 8;
    return MT_OK;
  case MT_CKPT_STRING:
    MT_TRY(take_u64(r, &v->count));
    NEED(v->count, "truncated string");
    v->str = (const char *)r->p;
    r->p += v->count;
    return MT_OK;
  case MT_CKPT_TABLE:
    MT_TRY(take_id(r, v));
    MT_TRY(take_u64(r, &v->count));
    /* each pair takes at least two bytes */
    if (v->count > (uint64_t)(r->end - r->p) / 2)
      return bad(r, "a table claims more entries than the file holds");
    return MT_OK;
  case MT_CKPT_REF: {
    NEED(4, "truncated reference");
    uint32_t id = rd32(r->p);
    r->p += 4;
    if (id == 0 || id >= r->next_id)
      return bad(r, "a reference to an object not defined before it");
    v->id = id;
    return MT_OK;
  }
  case MT_CKPT_TENSOR:
    return take_tensor(r, v);
  case MT_CKPT_OBJECT:
    MT_TRY(take_id(r, v));
    MT_TRY(take_u64(r, &v->count));
    if (v->count == 0 || v->count > 1024)
      return bad(r, "an object's class name has an invalid length");
    NEED(v->count, "truncated class name");
    v->str = (const char *)r->p;
    r->p += v->count;
    return MT_OK;
  default:
    return bad(r, "corrupted (an unknown value tag)");
  }
}

mt_status mt_ckpt_reader_end(mt_ckpt_reader *r) {
  if (r->p != r->end)
    return bad(r, "corrupted (bytes after the saved object)");
  return MT_OK;
}
