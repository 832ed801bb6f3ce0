/* idx.c -- IDX files (the MNIST format) into tensors: mt_idx_read. The header is read first, the
 * tensor made from it, then exactly the bytes it announces are read straight into the tensor
 * (inflated on the way when the file is gzip), and one more byte is asked for to refuse trailing
 * data. Multi-byte values are big-endian in the file and swapped in place. Nothing here trusts
 * the file: every size is checked before it is used. */
#include "mt_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef MT_HAVE_ZLIB
#include <zlib.h>
#endif

#define OP "datasets.read_idx"

#ifdef MT_HAVE_ZLIB
static int zlib_on = 1;
#else
static int zlib_on = 0;
#endif

MT_API int mt_idx_has_zlib(int set) {
#ifdef MT_HAVE_ZLIB
  if (set == 0 || set == 1) zlib_on = set;
#endif
  return zlib_on;
}

/* one source of bytes: a plain FILE or a gzip stream */
typedef struct {
  FILE *f;
#ifdef MT_HAVE_ZLIB
  gzFile gz;
#endif
  const char *path;
} src;

/* read up to n bytes; returns the count read, or -1 after recording an error */
static int64_t src_read(src *s, void *buf, int64_t n) {
  int64_t got = 0;
  char *p = buf;
  while (got < n) {
    int64_t want = n - got;
    if (want > (1 << 30)) want = 1 << 30;
#ifdef MT_HAVE_ZLIB
    if (s->gz) {
      int r = gzread(s->gz, p + got, (unsigned)want);
      if (r < 0) {
        int code;
        const char *msg = gzerror(s->gz, &code);
        mt_error(MT_EFORMAT, OP ": %s: the gzip stream is corrupt (%s)", s->path, msg ? msg : "zlib error");
        return -1;
      }
      if (r == 0) {
        int code = Z_OK;
        gzerror(s->gz, &code);
        if (code != Z_OK) { /* zlib reports a stream cut short (Z_BUF_ERROR) as a read of 0 */
          mt_error(MT_EFORMAT, OP ": %s is truncated: its gzip stream ends early", s->path);
          return -1;
        }
        break;
      }
      got += r;
      continue;
    }
#endif
    size_t r = fread(p + got, 1, (size_t)want, s->f);
    if (r == 0) {
      if (ferror(s->f)) {
        mt_error(MT_EIO, OP ": %s: read failed (%s)", s->path, strerror(errno));
        return -1;
      }
      break;
    }
    got += (int64_t)r;
  }
  return got;
}

static void src_close(src *s) {
#ifdef MT_HAVE_ZLIB
  if (s->gz) gzclose(s->gz);
#endif
  if (s->f) fclose(s->f);
}

static int type_dtype(unsigned code, int *size) {
  switch (code) {
  case 0x08: *size = 1; return MT_UINT8;
  case 0x09: *size = 1; return MT_INT8;
  case 0x0B: *size = 2; return MT_INT16;
  case 0x0C: *size = 4; return MT_INT32;
  case 0x0D: *size = 4; return MT_FLOAT32;
  case 0x0E: *size = 8; return MT_FLOAT64;
  default: return -1;
  }
}

static void swap_bytes(char *p, int64_t n, int size) {
  if (size == 1) return;
  for (int64_t i = 0; i < n; i++, p += size) {
    for (int a = 0, b = size - 1; a < b; a++, b--) {
      char c = p[a];
      p[a] = p[b];
      p[b] = c;
    }
  }
}

/* the largest file body accepted: 2^40 bytes (a sanity bound; the allocation may fail sooner) */
#define IDX_MAX_BYTES ((int64_t)1 << 40)

MT_API mt_status mt_idx_read(const char *path, mt_tensor **out) {
  if (!path || !out) return mt_error(MT_EINVAL, OP ": path and out are required");
  *out = NULL;
  src s = {0};
  s.path = path;
  s.f = fopen(path, "rb");
  if (!s.f) return mt_error(MT_EIO, OP ": cannot open %s (%s)", path, strerror(errno));
  unsigned char magic[4];
  size_t m = fread(magic, 1, 2, s.f);
  if (m == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    if (!zlib_on) {
      fclose(s.f);
      return mt_error(MT_ENOTIMPL, OP ": %s is gzip-compressed and this build has no zlib: gunzip the file first", path);
    }
#ifdef MT_HAVE_ZLIB
    fclose(s.f);
    s.f = NULL;
    s.gz = gzopen(path, "rb");
    if (!s.gz) return mt_error(MT_EIO, OP ": cannot open %s (%s)", path, strerror(errno));
    gzbuffer(s.gz, 1 << 17);
    m = 0;
#endif
  }
  mt_status st = MT_OK;
  mt_tensor *t = NULL;
  /* the 4-byte magic (2 bytes may be in hand already) */
  int64_t r = src_read(&s, magic + m, 4 - (int64_t)m);
  if (r < 0) { st = MT_EFORMAT; goto done; }
  if ((int64_t)m + r < 4) {
    st = mt_error(MT_EFORMAT, OP ": %s is truncated: it ends inside the 4-byte IDX magic", path);
    goto done;
  }
  if (magic[0] != 0 || magic[1] != 0) {
    st = mt_error(MT_EFORMAT, OP ": %s is not an IDX file (its magic starts %02x %02x, expected 00 00)", path,
                  magic[0], magic[1]);
    goto done;
  }
  int size = 0;
  int dtype = type_dtype(magic[2], &size);
  if (dtype < 0) {
    st = mt_error(MT_EFORMAT,
                  OP ": %s: unknown IDX data type 0x%02x (expected 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, "
                  "0x0D float32 or 0x0E float64)", path, magic[2]);
    goto done;
  }
  int ndim = magic[3];
  if (ndim < 1 || ndim > MT_MAX_DIMS) {
    st = mt_error(MT_EFORMAT, OP ": %s: an IDX file of %d dimensions (this reader takes 1 to %d)", path, ndim,
                  MT_MAX_DIMS);
    goto done;
  }
  unsigned char hdr[4 * MT_MAX_DIMS];
  r = src_read(&s, hdr, 4 * (int64_t)ndim);
  if (r < 0) { st = MT_EFORMAT; goto done; }
  if (r < 4 * ndim) {
    st = mt_error(MT_EFORMAT, OP ": %s is truncated: its header announces %d sizes and ends after %" PRId64 " bytes",
                  path, ndim, 4 + r);
    goto done;
  }
  int64_t sizes[MT_MAX_DIMS];
  int64_t bytes = size;
  int64_t span = size; /* the product of the sizes taken as at least 1: the strides must fit too,
                          even when a size of 0 leaves no data */
  for (int d = 0; d < ndim; d++) {
    const unsigned char *b = hdr + 4 * d;
    sizes[d] = ((int64_t)b[0] << 24) | ((int64_t)b[1] << 16) | ((int64_t)b[2] << 8) | (int64_t)b[3];
    int64_t s1 = sizes[d] > 1 ? sizes[d] : 1;
    if (span > IDX_MAX_BYTES / s1) {
      st = mt_error(MT_EFORMAT, OP ": %s: the sizes in its header overflow (more than 2^40 bytes of data)", path);
      goto done;
    }
    span *= s1;
    bytes *= sizes[d];
  }
  int64_t hlen = 4 + 4 * (int64_t)ndim;
  char *gzbuf = NULL; /* a gzip body, read before the tensor is made */
  if (s.f) {
    /* a plain file: its size says at once whether the body is what the header announces */
    struct stat sb;
    if (fstat(fileno(s.f), &sb) == 0 && S_ISREG(sb.st_mode)) {
      int64_t have = (int64_t)sb.st_size - hlen;
      if (have < bytes) {
        st = mt_error(MT_EFORMAT, OP ": %s is truncated: its header announces %" PRId64 " bytes of data, it has %" PRId64,
                      path, bytes, have < 0 ? 0 : have);
        goto done;
      }
      if (have > bytes) {
        st = mt_error(MT_EFORMAT, OP ": %s has more data than its header says (%" PRId64 " bytes of data announced)",
                      path, bytes);
        goto done;
      }
    }
  } else {
    /* a gzip stream's length is known only by inflating it: read the body into a buffer that grows
     * as data comes, so that a short file announcing a huge body fails as truncated, not as a
     * huge allocation */
    int64_t cap = 0;
    r = 0;
    while (r < bytes) {
      int64_t want = bytes - r;
      int64_t grow = cap < ((int64_t)1 << 20) ? ((int64_t)1 << 20) : cap;
      if (want > grow) want = grow;
      if (r + want > cap) {
        char *nb = realloc(gzbuf, (size_t)(r + want));
        if (!nb) {
          st = mt_error(MT_ENOMEM, OP ": %s: out of memory reading %" PRId64 " bytes of data", path, bytes);
          goto free_gz;
        }
        gzbuf = nb;
        cap = r + want;
      }
      int64_t got = src_read(&s, gzbuf + r, want);
      if (got < 0) { st = MT_EFORMAT; goto free_gz; }
      r += got;
      if (got < want) break;
    }
    if (r < bytes) {
      st = mt_error(MT_EFORMAT, OP ": %s is truncated: its header announces %" PRId64 " bytes of data, it has %" PRId64,
                    path, bytes, r);
      goto free_gz;
    }
  }
  st = mt_tensor_empty(sizes, ndim, dtype, NULL, &t);
  if (st != MT_OK) {
    char why[256];
    snprintf(why, sizeof why, "%s", mt_last_error());
    st = mt_error(st, OP ": %s: cannot make a tensor of %s for its data (%s)", path, mt_shape_str(sizes, ndim), why);
    goto free_gz;
  }
  if (gzbuf) {
    if (bytes) memcpy(t->_data, gzbuf, (size_t)bytes);
    r = bytes;
  } else if (s.f) {
    r = src_read(&s, t->_data, bytes);
  } else {
    r = bytes; /* an empty gzip body */
  }
free_gz:
  free(gzbuf);
  if (st != MT_OK) goto done;
  if (r < 0) { st = MT_EFORMAT; goto done; }
  if (r < bytes) {
    st = mt_error(MT_EFORMAT, OP ": %s is truncated: its header announces %" PRId64 " bytes of data, it has %" PRId64,
                  path, bytes, r);
    goto done;
  }
  unsigned char extra;
  r = src_read(&s, &extra, 1);
  if (r < 0) { st = MT_EFORMAT; goto done; }
  if (r > 0) {
    st = mt_error(MT_EFORMAT, OP ": %s has more data than its header says (%" PRId64 " bytes of data announced)",
                  path, bytes);
    goto done;
  }
  swap_bytes(t->_data, t->_numel, size);
done:
  src_close(&s);
  if (st != MT_OK) {
    if (t) mt_tensor_release(t);
    return st;
  }
  *out = t;
  return MT_OK;
}
