/* input.c -- what the readers of other frameworks' files share: messages naming the file, and a
 * checked byte input over a file descriptor or memory. */
#include "formats.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

mt_status mt_fmt_error(mt_status code, const char *op, const char *path, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mt_error(code, "%s: %s: %s", op, path ? path : "(memory)", msg);
}

void mt_fmt_printable(char *out, size_t outsize, const char *s, size_t n) {
  size_t k = 0; /* outsize >= 8: room for "..." and the NUL is kept until the end */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int plain = c >= 0x20 && c < 0x7f && c != '\\';
    size_t need = plain ? 1 : 4;
    if (k + need + 4 > outsize) {
      memcpy(out + k, "...", 3);
      k += 3;
      break;
    }
    if (plain)
      out[k++] = (char)c;
    else {
      snprintf(out + k, 5, "\\x%02x", c);
      k += 4;
    }
  }
  out[k] = 0;
}

mt_status mt_pread_all(int fd, void *dst, size_t n, uint64_t off, const char *op, const char *path) {
  char *p = dst;
  while (n > 0) {
    ssize_t k = pread(fd, p, n, (off_t)off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return mt_fmt_error(MT_EIO, op, path, "read failed (%s)", strerror(errno));
    if (k == 0)
      return mt_fmt_error(MT_EFORMAT, op, path, "truncated (the file ended early)");
    p += k;
    n -= (size_t)k;
    off += (uint64_t)k;
  }
  return MT_OK;
}

void mt_in_memory(mt_in *in, const void *data, uint64_t n) {
  memset(in, 0, sizeof *in);
  in->fd = -1;
  in->mem = data;
  in->end = n;
}

mt_status mt_in_file(mt_in *in, int fd, uint64_t pos, uint64_t end) {
  memset(in, 0, sizeof *in);
  in->fd = fd;
  in->pos = pos;
  in->end = end;
  in->bcap = (size_t)1 << 16;
  in->buf = malloc(in->bcap);
  if (!in->buf)
    return mt_error(MT_ENOMEM, "out of memory");
  return MT_OK;
}

void mt_in_free(mt_in *in) {
  free(in->buf);
  in->buf = NULL;
}

mt_status mt_in_read(mt_in *in, void *dst, size_t n) {
  if (n > in->end - in->pos)
    return mt_fmt_error(MT_EFORMAT, in->op, in->path, "%s is truncated (at byte %llu, %zu more bytes wanted)",
                        in->what ? in->what : "the file", (unsigned long long)in->pos, n);
  if (in->fd < 0) {
    memcpy(dst, in->mem + in->pos, n);
    in->pos += n;
    return MT_OK;
  }
  unsigned char *d = dst;
  while (n > 0) {
    if (in->pos >= in->bstart && in->pos < in->bstart + in->blen) {
      size_t at = (size_t)(in->pos - in->bstart), k = in->blen - at;
      if (k > n)
        k = n;
      memcpy(d, in->buf + at, k);
      d += k;
      n -= k;
      in->pos += k;
      continue;
    }
    if (n >= in->bcap) { /* large: straight into dst */
      MT_TRY(mt_pread_all(in->fd, d, n, in->pos, in->op, in->path));
      in->pos += n;
      return MT_OK;
    }
    uint64_t left = in->end - in->pos;
    size_t want = left < in->bcap ? (size_t)left : in->bcap;
    MT_TRY(mt_pread_all(in->fd, in->buf, want, in->pos, in->op, in->path));
    in->bstart = in->pos;
    in->blen = want;
  }
  return MT_OK;
}
