/* st_io.h -- .safetensors files for the C tools (moontorch-run, program_check), through the public
 * header alone: the header is parsed and checked by libmoontorch (mt_st_header_*), the tensors read
 * into CPU tensors; and a writer of the same format. Included by one .c file each. */
#ifndef MT_TOOLS_ST_IO_H
#define MT_TOOLS_ST_IO_H

#include <moontorch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_file {
  int n;
  char **names;
  mt_tensor **tensors;
} st_file;

__attribute__((unused)) static void st_free(st_file *f) {
  for (int i = 0; i < f->n; i++) {
    free(f->names[i]);
    mt_tensor_release(f->tensors[i]);
  }
  free(f->names);
  free(f->tensors);
  memset(f, 0, sizeof *f);
}

/* 0 on success; on failure a message in err */
__attribute__((unused)) static int st_read(const char *path, st_file *out, char *err, size_t errn) {
  memset(out, 0, sizeof *out);
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    snprintf(err, errn, "%s: cannot open the file", path);
    return 1;
  }
  fseek(fp, 0, SEEK_END);
  long size = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char head[8] = {0};
  uint64_t hn = 0;
  if (size < 0 || fread(head, 1, size < 8 ? (size_t)size : 8, fp) != (size_t)(size < 8 ? size : 8) ||
      mt_st_header_size(head, (uint64_t)size, &hn) != MT_OK) {
    snprintf(err, errn, "%s", mt_last_error());
    fclose(fp);
    return 1;
  }
  char *json = malloc(hn ? hn : 1);
  mt_st_header *h = NULL;
  if (!json || fread(json, 1, hn, fp) != hn || mt_st_header_parse(json, hn, (uint64_t)size - 8 - hn, &h) != MT_OK) {
    snprintf(err, errn, "%s: %s", path, json ? mt_last_error() : "out of memory");
    free(json);
    fclose(fp);
    return 1;
  }
  free(json);
  int64_t n = mt_st_header_count(h);
  out->names = calloc(n ? n : 1, sizeof *out->names);
  out->tensors = calloc(n ? n : 1, sizeof *out->tensors);
  int rc = 0;
  for (int64_t i = 0; i < n && !rc; i++) {
    const mt_st_entry *e = mt_st_header_entry(h, i, 0);
    mt_tensor *t = NULL;
    if (mt_tensor_empty(e->sizes, e->ndim, e->dtype, NULL, &t) != MT_OK) {
      snprintf(err, errn, "%s", mt_last_error());
      rc = 1;
      break;
    }
    out->names[i] = strdup(e->name);
    out->tensors[i] = t;
    out->n++;
    size_t bytes = (size_t)(e->data_end - e->data_begin);
    if (fseek(fp, (long)(8 + hn + e->data_begin), SEEK_SET) != 0 || fread(t->_data, 1, bytes, fp) != bytes) {
      snprintf(err, errn, "%s: cannot read tensor %s", path, e->name);
      rc = 1;
    }
  }
  mt_st_header_free(h);
  fclose(fp);
  if (rc)
    st_free(out);
  return rc;
}

__attribute__((unused)) static mt_tensor *st_find(const st_file *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (strcmp(f->names[i], name) == 0)
      return f->tensors[i];
  return NULL;
}

__attribute__((unused)) static const char *st_code(int dtype) {
  switch (dtype) {
  case MT_FLOAT32:
    return "F32";
  case MT_FLOAT64:
    return "F64";
  case MT_FLOAT16:
    return "F16";
  case MT_BFLOAT16:
    return "BF16";
  case MT_INT64:
    return "I64";
  case MT_INT32:
    return "I32";
  case MT_INT16:
    return "I16";
  case MT_INT8:
    return "I8";
  case MT_UINT8:
    return "U8";
  default:
    return "BOOL";
  }
}

/* tensors (contiguous copies are made as needed) under names[i]; 0 on success */
__attribute__((unused)) static int st_write(const char *path, int n, char *const *names, mt_tensor **ts, char *err,
                                            size_t errn) {
  mt_tensor **c = calloc(n ? n : 1, sizeof *c);
  size_t cap = 256, len = 0;
  for (int i = 0; i < n; i++)
    cap += strlen(names[i]) + 64 + 22 * MT_MAX_DIMS; /* (names are written as given: plain ones) */
  char *json = malloc(cap);
  uint64_t off = 0;
  len += (size_t)snprintf(json + len, cap - len, "{");
  for (int i = 0; i < n; i++) {
    if (mt_contiguous(ts[i], &c[i]) != MT_OK) {
      snprintf(err, errn, "%s", mt_last_error());
      return 1;
    }
    uint64_t bytes = (uint64_t)c[i]->_numel * mt_dtype_size(c[i]->_dtype);
    len += (size_t)snprintf(json + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", names[i],
                            st_code(c[i]->_dtype));
    for (int d = 0; d < c[i]->_ndim; d++)
      len += (size_t)snprintf(json + len, cap - len, "%s%lld", d ? "," : "", (long long)c[i]->_sizes[d]);
    len += (size_t)snprintf(json + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                            (unsigned long long)(off + bytes));
    off += bytes;
  }
  len += (size_t)snprintf(json + len, cap - len, "}");
  while (len % 8)
    json[len++] = ' ';
  FILE *fp = fopen(path, "wb");
  int rc = !fp;
  if (fp) {
    unsigned char h8[8];
    for (int b = 0; b < 8; b++)
      h8[b] = (unsigned char)((uint64_t)len >> (8 * b));
    rc |= fwrite(h8, 1, 8, fp) != 8 || fwrite(json, 1, len, fp) != len;
    for (int i = 0; i < n && !rc; i++) {
      size_t bytes = (size_t)c[i]->_numel * mt_dtype_size(c[i]->_dtype);
      rc |= bytes && fwrite(c[i]->_data, 1, bytes, fp) != bytes;
    }
    rc |= fclose(fp) != 0;
  }
  if (rc)
    snprintf(err, errn, "%s: cannot write the file", path);
  for (int i = 0; i < n; i++)
    if (c[i])
      mt_tensor_release(c[i]);
  free(c);
  free(json);
  return rc;
}

#endif
