/* zip.c -- the stored entries of a zip archive (PKWARE's APPNOTE: end of central directory record,
 * its zip64 locator and record, central directory headers, local headers, the zip64 extra field).
 *
 * Why our own reader and not a library's: torch.save writes every entry stored (method 0, no
 * compression, no encryption), so what is needed is the directory and a bounds-checked copy of
 * each entry's bytes straight into the storage it becomes (a library would copy through its own
 * buffers); compressed, encrypted or multi-disk archives are refused, with a message. The CRC-32 of
 * every entry read is checked with zlib's crc32 where zlib is built in (MT_HAVE_ZLIB).
 * Every offset and size is checked before it is used: the directory inside the file and before
 * its end record, each entry's data between its local header and the directory, names
 * without NULs and unique, sizes consistent between the central and the local header. */
#include "formats.h"

#include <stdlib.h>
#ifdef MT_HAVE_ZLIB
#include <zlib.h>
#endif

#define EOCD_SIG 0x06054b50u
#define EOCD64_LOC_SIG 0x07064b50u
#define EOCD64_SIG 0x06064b50u
#define CEN_SIG 0x02014b50u
#define LOC_SIG 0x04034b50u
#define EOCD_LEN 22
#define CEN_LEN 46
#define LOC_LEN 30
#define MAX_COMMENT 65535

static inline uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

#define BAD(...) mt_fmt_error(MT_EFORMAT, z->op, z->path, __VA_ARGS__)

int mt_zip_sniff(const unsigned char *head, size_t n) {
  return n >= 4 && (rd32(head) == LOC_SIG || rd32(head) == EOCD_SIG);
}

void mt_zip_close(mt_zip *z) {
  if (!z)
    return;
  for (size_t i = 0; i < z->n; i++)
    free(z->e[i].name);
  free(z->e);
  z->e = NULL;
  z->n = 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const mt_zip_entry *)a)->name, ((const mt_zip_entry *)b)->name);
}

/* the zip64 extra field (id 1) of a central header: the 64-bit values of the fields saturated at
 * 0xFFFFFFFF, in the order uncompressed size, compressed size, local header offset */
static mt_status zip64_extra(mt_zip *z, const unsigned char *x, size_t len, uint64_t *usize, uint64_t *csize,
                             uint64_t *local) {
  size_t i = 0;
  while (i + 4 <= len) {
    uint16_t id = rd16(x + i), sz = rd16(x + i + 2);
    if (sz > len - i - 4)
      return BAD("a zip directory entry has a damaged extra field");
    if (id == 1) {
      const unsigned char *p = x + i + 4, *e = p + sz;
      uint64_t *fields[3] = {usize, csize, local};
      for (int k = 0; k < 3; k++) {
        if (*fields[k] != 0xFFFFFFFFu)
          continue;
        if (e - p < 8)
          return BAD("a zip directory entry has a short zip64 extra field");
        *fields[k] = rd64(p);
        p += 8;
      }
      return MT_OK;
    }
    i += 4 + (size_t)sz;
  }
  return MT_OK;
}

mt_status mt_zip_open(mt_zip *z, int fd, uint64_t fsize, const char *op, const char *path) {
  memset(z, 0, sizeof *z);
  z->fd = fd;
  z->file_size = fsize;
  z->op = op;
  z->path = path;
  if (fsize < EOCD_LEN)
    return BAD("not a zip archive (too short)");
  /* the end record: the last one whose comment reaches exactly the end of the file */
  size_t tail_len = (size_t)(fsize < EOCD_LEN + MAX_COMMENT ? fsize : EOCD_LEN + MAX_COMMENT);
  unsigned char *tail = malloc(tail_len);
  if (!tail)
    return mt_error(MT_ENOMEM, "%s: out of memory", op);
  uint64_t tail_off = fsize - tail_len;
  mt_status st = mt_pread_all(fd, tail, tail_len, tail_off, op, path);
  if (st != MT_OK) {
    free(tail);
    return st;
  }
  int64_t at = -1;
  for (size_t i = tail_len - EOCD_LEN + 1; i-- > 0;) {
    if (rd32(tail + i) == EOCD_SIG && i + EOCD_LEN + rd16(tail + i + 20) == tail_len) {
      at = (int64_t)i;
      break;
    }
  }
  if (at < 0) {
    free(tail);
    return BAD("not a zip archive, or a damaged one (no end of central directory record)");
  }
  const unsigned char *e = tail + at;
  uint64_t eocd_off = tail_off + (uint64_t)at;
  uint32_t disk = rd16(e + 4), cd_disk = rd16(e + 6);
  uint64_t n_disk = rd16(e + 8), n_total = rd16(e + 10), cd_size = rd32(e + 12), cd_off = rd32(e + 16);
  uint64_t dir_end = eocd_off; /* where the directory must end */
  if (n_disk == 0xFFFF || n_total == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu || disk == 0xFFFF ||
      cd_disk == 0xFFFF) {
    /* zip64: the locator just before the end record names the zip64 end record */
    unsigned char loc[20], r[56];
    if (eocd_off < 20) {
      free(tail);
      return BAD("a damaged zip64 archive (no room for its locator)");
    }
    st = mt_pread_all(fd, loc, 20, eocd_off - 20, op, path);
    if (st == MT_OK && rd32(loc) != EOCD64_LOC_SIG)
      st = BAD("a damaged zip64 archive (no zip64 end of central directory locator)");
    uint64_t r_off = st == MT_OK ? rd64(loc + 8) : 0;
    if (st == MT_OK && (rd32(loc + 4) != 0 || rd32(loc + 16) > 1))
      st = BAD("a multi-disk zip archive (not supported)");
    if (st == MT_OK && (r_off > eocd_off - 20 || eocd_off - 20 - r_off < 56))
      st = BAD("a damaged zip64 archive (its end record lies outside the file)");
    if (st == MT_OK)
      st = mt_pread_all(fd, r, 56, r_off, op, path);
    if (st == MT_OK && rd32(r) != EOCD64_SIG)
      st = BAD("a damaged zip64 archive (bad zip64 end of central directory record)");
    if (st != MT_OK) {
      free(tail);
      return st;
    }
    disk = rd32(r + 16);
    cd_disk = rd32(r + 20);
    n_disk = rd64(r + 24);
    n_total = rd64(r + 32);
    cd_size = rd64(r + 40);
    cd_off = rd64(r + 48);
    dir_end = r_off;
  }
  free(tail);
  if (disk != 0 || cd_disk != 0 || n_disk != n_total)
    return BAD("a multi-disk zip archive (not supported)");
  if (cd_off > dir_end || cd_size > dir_end - cd_off)
    return BAD("a damaged zip archive (its central directory lies outside the file)");
  if (n_total > cd_size / CEN_LEN)
    return BAD("a damaged zip archive (more entries than its central directory holds)");
  z->cd_offset = cd_off;
  unsigned char *cd = malloc(cd_size ? (size_t)cd_size : 1);
  if (!cd)
    return mt_error(MT_ENOMEM, "%s: out of memory", op);
  st = mt_pread_all(fd, cd, (size_t)cd_size, cd_off, op, path);
  if (st != MT_OK) {
    free(cd);
    return st;
  }
  z->e = calloc(n_total ? (size_t)n_total : 1, sizeof *z->e);
  if (!z->e) {
    free(cd);
    return mt_error(MT_ENOMEM, "%s: out of memory", op);
  }
  size_t p = 0;
  for (uint64_t i = 0; i < n_total; i++) {
    if (cd_size - p < CEN_LEN || rd32(cd + p) != CEN_SIG) {
      st = BAD("a damaged zip archive (bad central directory entry %llu)", (unsigned long long)i);
      break;
    }
    const unsigned char *h = cd + p;
    uint16_t flags = rd16(h + 8), method = rd16(h + 10), nlen = rd16(h + 28), xlen = rd16(h + 30),
             clen = rd16(h + 32);
    uint64_t csize = rd32(h + 20), usize = rd32(h + 24), local = rd32(h + 42);
    if ((uint64_t)nlen + xlen + clen > cd_size - p - CEN_LEN) {
      st = BAD("a damaged zip archive (central directory entry %llu runs past the directory)",
               (unsigned long long)i);
      break;
    }
    const char *name = (const char *)h + CEN_LEN;
    if (nlen == 0 || memchr(name, 0, nlen)) {
      st = BAD("a damaged zip archive (an entry with an empty name or a NUL in its name)");
      break;
    }
    if ((st = zip64_extra(z, h + CEN_LEN + nlen, xlen, &usize, &csize, &local)) != MT_OK)
      break;
    mt_zip_entry *en = &z->e[z->n];
    if (!(en->name = malloc((size_t)nlen + 1))) {
      st = mt_error(MT_ENOMEM, "%s: out of memory", op);
      break;
    }
    z->n++;
    memcpy(en->name, name, nlen);
    en->name[nlen] = 0;
    char shown[96];
    mt_fmt_printable(shown, sizeof shown, name, nlen);
    if (flags & 1) {
      st = BAD("zip entry '%s' is encrypted (not supported)", shown);
      break;
    }
    if (method == 0 && csize != usize) {
      st = BAD("zip entry '%s' is stored but its sizes differ", shown);
      break;
    }
    if (local > cd_off || csize > cd_off - local || cd_off - local - csize < LOC_LEN + (uint64_t)nlen) {
      st = BAD("zip entry '%s' lies outside the archive's data", shown);
      break;
    }
    en->size = csize;
    en->local = local;
    en->crc = rd32(h + 16);
    en->method = method;
    en->flags = flags;
    p += CEN_LEN + (size_t)nlen + xlen + clen;
  }
  free(cd);
  if (st != MT_OK) {
    mt_zip_close(z);
    return st;
  }
  qsort(z->e, z->n, sizeof *z->e, by_name);
  for (size_t i = 1; i < z->n; i++) {
    if (strcmp(z->e[i - 1].name, z->e[i].name) == 0) {
      char shown[96];
      mt_fmt_printable(shown, sizeof shown, z->e[i].name, strlen(z->e[i].name));
      st = BAD("a damaged zip archive (the name '%s' appears twice)", shown);
      mt_zip_close(z);
      return st;
    }
  }
  return MT_OK;
}

const mt_zip_entry *mt_zip_find(const mt_zip *z, const char *name) {
  mt_zip_entry key = {(char *)name, 0, 0, 0, 0, 0};
  return bsearch(&key, z->e, z->n, sizeof *z->e, by_name);
}

mt_status mt_zip_read(const mt_zip *z, const mt_zip_entry *e, void *dst) {
  char shown[96];
  mt_fmt_printable(shown, sizeof shown, e->name, strlen(e->name));
  if (e->method != 0)
    return BAD("zip entry '%s' is compressed (method %u): torch.save writes its entries stored, and moontorch "
               "reads stored entries only",
               shown, e->method);
  unsigned char h[LOC_LEN];
  MT_TRY(mt_pread_all(z->fd, h, LOC_LEN, e->local, z->op, z->path));
  size_t nlen = strlen(e->name);
  if (rd32(h) != LOC_SIG || rd16(h + 26) != nlen)
    return BAD("zip entry '%s' has a damaged local header", shown);
  uint64_t data = e->local + LOC_LEN + nlen + rd16(h + 28);
  if (data > z->cd_offset || e->size > z->cd_offset - data)
    return BAD("zip entry '%s' runs past the archive's data", shown);
  /* the local header's sizes, unless a data descriptor (flag 8) or zip64 (0xFFFFFFFF) has them */
  if (!(rd16(h + 6) & 8) && rd32(h + 22) != 0xFFFFFFFFu && rd32(h + 22) != (e->size & 0xFFFFFFFFu))
    return BAD("zip entry '%s': its local and central headers disagree on its size", shown);
  MT_TRY(mt_pread_all(z->fd, dst, (size_t)e->size, data, z->op, z->path));
#ifdef MT_HAVE_ZLIB
  uLong crc = crc32(0L, Z_NULL, 0);
  const unsigned char *d = dst;
  for (uint64_t done = 0; done < e->size;) {
    uint64_t k = e->size - done;
    if (k > (1u << 30))
      k = 1u << 30;
    crc = crc32(crc, d + done, (uInt)k);
    done += k;
  }
  if ((uint32_t)crc != e->crc)
    return BAD("zip entry '%s' is corrupted (CRC-32 mismatch)", shown);
#endif
  return MT_OK;
}
