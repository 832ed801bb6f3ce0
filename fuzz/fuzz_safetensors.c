/* fuzz_safetensors.c -- libFuzzer target: the safetensors header parser (core/safetensors.c).
 *
 * An input is a .safetensors file (seeds: real torch.save_safetensors files, fuzz/make_seeds.lua).
 * It goes the way torch.load_safetensors takes it: the header size from the first 8 bytes, the
 * header (copied into a block of exactly its size, so that ASan sees a read past its end), parsed
 * against the byte buffer that follows; then the entries and the metadata are read out, the
 * tensors built and filled from the buffer, their elements read. What a parse that succeeds
 * promises is checked (abort when broken): entries well-formed (dtype, rank, sizes, bytes =
 * elements x item size), names and metadata valid UTF-8 and NUL-terminated, distinct names, the
 * buffer covered exactly in offset order, the accessors' ranges. A failure must give a message
 * that names the op. */
#include "moontorch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOUCH_ALL (1 << 16)

static volatile double sink;

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_safetensors: invariant broken: %s (last error: %s)\n", what, mt_last_error());
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  mt_set_num_threads(1);
  return 0;
}

/* well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), written apart from
 * the parser's own check on purpose */
static int utf8_ok(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    uint32_t c = s[i], cp, len;
    if (c < 0x80) {
      i++;
      continue;
    }
    if ((c & 0xE0) == 0xC0)
      len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      len = 4, cp = c & 0x07;
    else
      return 0;
    if (n - i < len)
      return 0;
    for (uint32_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80)
        return 0;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    i += len;
  }
  return 1;
}

static int message_ok(void) {
  return strncmp(mt_last_error(), "load_safetensors: ", 18) == 0;
}

static void check_entry(const mt_st_entry *e, uint64_t buf_size) {
  check(e != NULL, "an entry in range");
  check(e->name != NULL && e->name[e->name_len] == 0, "a NUL-terminated name");
  check(utf8_ok((const unsigned char *)e->name, e->name_len), "a UTF-8 name");
  check(!(e->name_len == 12 && memcmp(e->name, "__metadata__", 12) == 0), "__metadata__ is no tensor");
  check(mt_dtype_valid(e->dtype), "a known dtype");
  check(e->ndim >= 0 && e->ndim <= MT_MAX_DIMS, "a rank of at most 16");
  check(e->data_begin <= e->data_end && e->data_end <= buf_size, "offsets inside the buffer");
  uint64_t numel = 1;
  int zero = 0;
  for (int d = 0; d < e->ndim; d++) {
    check(e->sizes[d] >= 0 && e->sizes[d] < 1000000000000000LL, "sizes of at most 15 digits");
    if (e->sizes[d] == 0)
      zero = 1;
  }
  if (!zero) {
    for (int d = 0; d < e->ndim; d++)
      check(!__builtin_mul_overflow(numel, (uint64_t)e->sizes[d], &numel), "bytes = elements x item size");
  } else {
    numel = 0;
  }
  uint64_t nbytes;
  check(!__builtin_mul_overflow(numel, (uint64_t)mt_dtype_size(e->dtype), &nbytes) &&
            nbytes == e->data_end - e->data_begin,
        "bytes = elements x item size");
}

static void build_tensor(const mt_st_entry *e, const uint8_t *buf) {
  mt_tensor *t = NULL;
  if (mt_tensor_empty(e->sizes, e->ndim, e->dtype, NULL, &t) != MT_OK) {
    check(t == NULL, "no tensor on failure"); /* a shape too large, say [1e14, 1e14, 0] */
    return;
  }
  size_t nb = (size_t)(e->data_end - e->data_begin);
  check((uint64_t)t->_numel * mt_dtype_size(e->dtype) == nb, "the tensor holds the entry's bytes");
  if (nb)
    memcpy(t->_data, buf + e->data_begin, nb);
  if (t->_numel > 0 && t->_numel <= TOUCH_ALL) {
    double *out = malloc((size_t)t->_numel * sizeof *out), acc = 0;
    check(out != NULL, "malloc");
    check(mt_tensor_to_doubles(t, out, t->_numel) == MT_OK, "to_doubles");
    for (int64_t i = 0; i < t->_numel; i++)
      acc += out[i];
    sink = acc;
    free(out);
  }
  mt_tensor_release(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t n = 0;
  if (mt_st_header_size(data, size, &n) != MT_OK) {
    check(message_ok(), "a message naming the op");
    return 0;
  }
  check(n <= MT_ST_MAX_HEADER && n <= size - 8, "the header fits the file");
  char *json = malloc(n ? n : 1);
  check(json != NULL, "malloc");
  memcpy(json, data + 8, n);
  uint64_t buf_size = size - 8 - n;
  const uint8_t *buf = data + 8 + n;
  mt_st_header *h = NULL;
  mt_status st = mt_st_header_parse(json, n, buf_size, &h);
  free(json); /* the header keeps no pointer into the text */
  if (st != MT_OK) {
    check(h == NULL && (st == MT_EFORMAT || st == MT_ENOMEM) && message_ok(), "a refusal with a message");
    return 0;
  }
  int64_t count = mt_st_header_count(h);
  check(count >= 0, "a count");
  check(!mt_st_header_entry(h, count, 0) && !mt_st_header_entry(h, -1, 1), "entries out of range are NULL");
  uint64_t at = 0;
  for (int64_t i = 0; i < count; i++) {
    const mt_st_entry *e = mt_st_header_entry(h, i, 0);
    check_entry(e, buf_size);
    for (int64_t j = 0; j < i && count <= 256; j++) {
      const mt_st_entry *o = mt_st_header_entry(h, j, 0);
      check(o->name_len != e->name_len || memcmp(o->name, e->name, e->name_len) != 0, "distinct names");
    }
    const mt_st_entry *s = mt_st_header_entry(h, i, 1);
    check_entry(s, buf_size);
    check(s->data_begin == at, "the buffer covered in offset order, no holes, no overlaps");
    at = s->data_end;
  }
  check(at == buf_size, "nothing after the last tensor");
  int64_t nmeta = mt_st_header_metadata_count(h);
  check(nmeta >= -1, "a metadata count");
  for (int64_t i = 0; i < nmeta; i++) {
    const char *k, *v;
    size_t kl, vl;
    check(mt_st_header_metadata(h, i, &k, &kl, &v, &vl) == MT_OK, "metadata in range");
    check(k[kl] == 0 && v[vl] == 0, "NUL-terminated metadata");
    check(utf8_ok((const unsigned char *)k, kl) && utf8_ok((const unsigned char *)v, vl), "UTF-8 metadata");
  }
  {
    const char *k, *v;
    size_t kl, vl;
    check(mt_st_header_metadata(h, nmeta < 0 ? 0 : nmeta, &k, &kl, &v, &vl) == MT_ERANGE, "metadata out of range");
  }
  for (int64_t i = 0; i < count; i++)
    build_tensor(mt_st_header_entry(h, i, 1), buf);
  mt_st_header_free(h);
  return 0;
}
