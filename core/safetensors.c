/* safetensors.c -- the header of a .safetensors file, parsed and checked (torch.load_safetensors;
 * lua/safetensors_io.lua reads the file, builds the tensors from what this hands out, and writes
 * files).
 *
 * The format (huggingface/safetensors, README "Format"):
 *   8 bytes    N, little-endian u64: the size of the header (at most 100,000,000)
 *   N bytes    a UTF-8 JSON object: name -> {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}
 *              (b, e relative to the byte buffer that follows), plus an optional
 *              "__metadata__": {string: string}
 *   the rest   the byte buffer: each tensor little-endian, row-major, contiguous; together the
 *              tensors cover the buffer exactly (no holes, no overlaps, nothing after them)
 *
 * The JSON is read strictly (RFC 8259: no trailing commas, no leading zeros, no raw control
 * characters in strings, paired surrogates in \u escapes), with duplicate keys refused at every
 * level, nesting bounded (64), the whole header valid UTF-8. Sizes and offsets must be plain
 * integer literals of at most 15 digits (exact in a double, as the Lua layer reads them). Fields
 * an entry does not need are parsed and ignored. The checks run in a fixed order, so the message
 * names the first problem: the JSON itself, then the root, then "__metadata__", then the entries
 * in the header's order, then the coverage of the buffer.
 *
 * The parser is one pass of recursive descent over the bytes, bounded by the depth limit; it keeps
 * what the entries and the metadata need (decoded strings in one arena the size of the header) and
 * a hash table of every object's keys for the duplicate check. Memory is linear in the header's
 * real size (never taken from a size field), every read is bounds-checked: any bytes give an error
 * message, never a crash. fuzz/fuzz_safetensors.c fuzzes it. */
#include "mt_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ST_OP "load_safetensors"
#define ST_MAX_DEPTH 64
#define ST_MAX_DIGITS 15 /* a size or offset: below 1e15, exact in a double */
#define ST_QUOTE_MAX 240 /* bytes of a quoted name in a message */
#define ST_QUOTE_BUF (ST_QUOTE_MAX + 8)

enum { V_OBJECT, V_ARRAY, V_STRING, V_NUMBER, V_TRUE, V_FALSE, V_NULL };

/* what a value was; for strings, where its decoded bytes are; for arrays, what the shape and
 * data_offsets checks need */
typedef struct st_val {
  int kind;
  int is_count;                /* number: a non-negative integer literal of at most 15 digits ("-0" included) */
  uint64_t count;              /* its value */
  size_t off, len;             /* string: decoded bytes at arena + off */
  uint64_t n;                  /* array: elements */
  int all_counts;              /* array: every element is a count */
  double numel;                /* array: the product of its elements, in doubles and in order */
  uint64_t first[MT_MAX_DIMS]; /* array: the first elements (when counts) */
} st_val;

typedef struct st_key { /* a key of an open object, for the duplicate check */
  uint32_t obj, hash;
  uint32_t off, len;
} st_key;

typedef struct st_pair {
  size_t koff, klen, voff, vlen;
} st_pair;

typedef struct st_item { /* an entry while parsing: its strings as arena offsets */
  size_t name_off, name_len;
  int32_t dtype, ndim;
  int64_t sizes[MT_MAX_DIMS];
  uint64_t begin, end;
} st_item;

struct mt_st_header {
  mt_st_entry *entries; /* header order */
  mt_st_entry **sorted; /* buffer order */
  int64_t n;
  int64_t nmeta; /* -1: no "__metadata__" */
  st_pair *meta;
  char *arena; /* decoded strings, NUL-terminated */
};

typedef struct st_parser {
  const unsigned char *s;
  size_t n, pos; /* pos: 0-based */
  int depth;
  uint32_t next_obj;
  uint64_t buf_size;
  char *arena; /* room for every decoded string: a string decodes to fewer bytes than its token */
  size_t alen;
  st_key *keys; /* open addressing, power-of-two capacity */
  size_t kcap, kused;
  st_item *items;
  size_t nitems, icap;
  st_pair *meta;
  size_t nmeta, mcap;
  int has_meta, root_not_object;
  char meta_err[768], entry_err[768]; /* the first problem of each kind, reported after the parse */
} st_parser;

/* ------------------------------------------------------------------ messages */
static mt_status nomem(void) {
  return mt_error(MT_ENOMEM, ST_OP ": out of memory reading the header");
}

static mt_status json_err(size_t at, const char *msg) {
  return mt_error(MT_EFORMAT, ST_OP ": invalid JSON header at byte %zu: %s", at, msg);
}

/* the one-letter JSON escapes: the byte and the letter after the backslash */
static const char esc_bytes[] = "\"\\/\b\f\n\r\t", esc_letters[] = "\"\\/bfnrt";

/* serde_json's short escape of c ("\\n", ...; it leaves '/' alone), or NULL */
static const char *short_escape(unsigned char c, char out[3]) {
  const char *k = c && c != '/' ? strchr(esc_bytes, c) : NULL;
  if (!k)
    return NULL;
  out[0] = '\\';
  out[1] = esc_letters[k - esc_bytes];
  out[2] = 0;
  return out;
}

/* s quoted as serde_json writes strings (as the Lua writer does: \" \\ \b \f \n \r \t, other bytes
 * below 0x20 as \u00xx, the rest raw), cut after ST_QUOTE_MAX bytes of output at a character
 * boundary ("..." after the closing quote says so): every message fits mt_error's buffer whole.
 * buf has ST_QUOTE_MAX + 8 bytes. */
static const char *quote(char *buf, const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  size_t o = 0, i = 0;
  buf[o++] = '"';
  while (i < len) {
    unsigned char c = s[i];
    char tmp[8];
    size_t k = 0, used = 1;
    char e2[3];
    const char *esc = short_escape(c, e2);
    if (esc) {
      k = 2;
      memcpy(tmp, esc, 2);
    } else if (c < 0x20) {
      k = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", c);
    } else {
      /* a whole UTF-8 sequence (the bytes were checked: at most 4, all there) */
      used = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      if (used > len - i)
        used = len - i;
      k = used;
      memcpy(tmp, s + i, k);
    }
    if (o + k > ST_QUOTE_MAX)
      break;
    memcpy(buf + o, tmp, k);
    o += k;
    i += used;
  }
  buf[o++] = '"';
  if (i < len) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o] = 0;
  return buf;
}

/* ------------------------------------------------------------------ UTF-8 */
/* 1 when s is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF) */
static int valid_utf8(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c == 0xE0)
      len = 3, lo = 0xA0;
    else if (c == 0xED)
      len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF)
      len = 3;
    else if (c == 0xF0)
      len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3)
      len = 4;
    else if (c == 0xF4)
      len = 4, hi = 0x8F;
    else
      return 0;
    if (len > n - i)
      return 0;
    if (s[i + 1] < lo || s[i + 1] > hi)
      return 0;
    for (size_t j = 2; j < len; j++)
      if (s[i + j] < 0x80 || s[i + j] > 0xBF)
        return 0;
    i += len;
  }
  return 1;
}

static size_t utf8_put(char *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* ------------------------------------------------------------------ lexing */
static void skip_ws(st_parser *p) {
  while (p->pos < p->n) {
    unsigned char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      break;
    p->pos++;
  }
}

/* the byte at pos, or -1 at the end */
static int peek(const st_parser *p) {
  return p->pos < p->n ? p->s[p->pos] : -1;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* four hex digits at s[at..at+4) as a code unit, or -1 */
static int32_t hex4(const st_parser *p, size_t at) {
  if (at > p->n || p->n - at < 4)
    return -1;
  int32_t v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval(p->s[at + k]);
    if (h < 0)
      return -1;
    v = v * 16 + h;
  }
  return v;
}

/* the string at pos (its opening quote), decoded into the arena (NUL-terminated) */
static mt_status parse_string(st_parser *p, size_t *off, size_t *len) {
  const unsigned char *s = p->s;
  size_t n = p->n, j = p->pos + 1;
  size_t start = p->alen;
  char *out = p->arena;
  for (;;) {
    size_t run = j;
    while (j < n && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\')
      j++;
    memcpy(out + p->alen, s + run, j - run);
    p->alen += j - run;
    if (j >= n)
      return json_err(n, "unterminated string");
    unsigned char c = s[j];
    if (c == '"') {
      p->pos = j + 1;
      break;
    }
    if (c < 0x20)
      return json_err(j, "control character in a string");
    /* a backslash */
    int e = j + 1 < n ? s[j + 1] : -1;
    if (e == 'u') {
      int32_t cp = hex4(p, j + 2);
      if (cp < 0)
        return json_err(j, "bad \\u escape");
      size_t next = j + 6;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        int32_t lo = next + 1 < n && s[next] == '\\' && s[next + 1] == 'u' ? hex4(p, next + 2) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF)
          return json_err(j, "unpaired surrogate in a \\u escape");
        cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00);
        next += 6;
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return json_err(j, "unpaired surrogate in a \\u escape");
      }
      p->alen += utf8_put(out + p->alen, (uint32_t)cp);
      j = next;
    } else {
      const char *k = e > 0 ? strchr(esc_letters, e) : NULL;
      if (!k)
        return json_err(j, "bad escape");
      char r = esc_bytes[k - esc_letters];
      out[p->alen++] = r;
      j += 2;
    }
  }
  out[p->alen++] = 0;
  *off = start;
  *len = p->alen - start - 1;
  return MT_OK;
}

static int is_digit(int c) {
  return c >= '0' && c <= '9';
}

static mt_status parse_number(st_parser *p, st_val *v) {
  const unsigned char *s = p->s;
  size_t n = p->n, start = p->pos, i = p->pos;
  int neg = i < n && s[i] == '-';
  if (neg)
    i++;
  size_t ds = i;
  while (i < n && is_digit(s[i]))
    i++;
  size_t ndig = i - ds;
  if (ndig == 0)
    return json_err(start, "unexpected character");
  if (ndig > 1 && s[ds] == '0')
    return json_err(start, "number with a leading zero");
  int plain = 1;
  if (i < n && s[i] == '.') {
    if (i + 1 >= n || !is_digit(s[i + 1]))
      return json_err(i, "bad number");
    i++;
    while (i < n && is_digit(s[i]))
      i++;
    plain = 0;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t k = i + 1;
    if (k < n && (s[k] == '+' || s[k] == '-'))
      k++;
    if (k >= n || !is_digit(s[k]))
      return json_err(i, "bad number");
    while (k < n && is_digit(s[k]))
      k++;
    i = k;
    plain = 0;
  }
  p->pos = i;
  v->kind = V_NUMBER;
  if (plain && ndig <= ST_MAX_DIGITS) {
    uint64_t x = 0;
    for (size_t k = ds; k < ds + ndig; k++)
      x = x * 10 + (uint64_t)(s[k] - '0');
    v->is_count = !neg || x == 0;
    v->count = x;
  }
  return MT_OK;
}

/* ------------------------------------------------------------------ duplicate keys */
static uint32_t key_hash(uint32_t obj, const char *k, size_t len) {
  return (uint32_t)(mt_xxh3_64(k, len) ^ (obj * 0x9E3779B97F4A7C15ULL));
}

static mt_status keys_grow(st_parser *p) {
  size_t cap = p->kcap ? p->kcap * 2 : 64;
  st_key *t = calloc(cap, sizeof *t);
  if (!t)
    return nomem();
  for (size_t i = 0; i < p->kcap; i++) {
    st_key k = p->keys[i];
    if (!k.obj)
      continue;
    size_t j = k.hash & (cap - 1);
    while (t[j].obj)
      j = (j + 1) & (cap - 1);
    t[j] = k;
  }
  free(p->keys);
  p->keys = t;
  p->kcap = cap;
  return MT_OK;
}

/* add key (arena bytes) to object obj's keys; *dup = 1 when it was there already */
static mt_status key_add(st_parser *p, uint32_t obj, size_t off, size_t len, int *dup) {
  *dup = 0;
  if ((p->kused + 1) * 2 > p->kcap)
    MT_TRY(keys_grow(p));
  const char *k = p->arena + off;
  uint32_t h = key_hash(obj, k, len);
  size_t j = h & (p->kcap - 1);
  while (p->keys[j].obj) {
    st_key *e = &p->keys[j];
    if (e->obj == obj && e->hash == h && e->len == len && memcmp(p->arena + e->off, k, len) == 0) {
      *dup = 1;
      return MT_OK;
    }
    j = (j + 1) & (p->kcap - 1);
  }
  st_key e = {obj, h, (uint32_t)off, (uint32_t)len};
  p->keys[j] = e;
  p->kused++;
  return MT_OK;
}

/* ------------------------------------------------------------------ values */
/* An object: the caller's `member` parses each value (pos after the colon); key_off/key_len name
 * the key in the arena. */
typedef mt_status (*member_fn)(st_parser *p, void *ctx, size_t key_off, size_t key_len);

static mt_status parse_value(st_parser *p, st_val *v);

static mt_status enter(st_parser *p) {
  if (++p->depth > ST_MAX_DEPTH)
    return json_err(p->pos, "nested too deeply");
  p->pos++;
  return MT_OK;
}

static mt_status parse_object(st_parser *p, member_fn member, void *ctx) {
  MT_TRY(enter(p));
  uint32_t obj = ++p->next_obj; /* ids from 1: 0 marks a free key slot */
  skip_ws(p);
  if (peek(p) == '}') {
    p->pos++;
    p->depth--;
    return MT_OK;
  }
  for (;;) {
    skip_ws(p);
    if (peek(p) != '"')
      return json_err(p->pos, "expected a string key");
    size_t kpos = p->pos, koff, klen;
    MT_TRY(parse_string(p, &koff, &klen));
    int dup;
    MT_TRY(key_add(p, obj, koff, klen, &dup));
    if (dup) {
      char q[ST_QUOTE_BUF], msg[ST_QUOTE_BUF + 32];
      snprintf(msg, sizeof msg, "duplicate key %s", quote(q, p->arena + koff, klen));
      return json_err(kpos, msg);
    }
    skip_ws(p);
    if (peek(p) != ':')
      return json_err(p->pos, "expected \":\"");
    p->pos++;
    MT_TRY(member(p, ctx, koff, klen));
    skip_ws(p);
    int d = peek(p);
    if (d == '}') {
      p->pos++;
      break;
    }
    if (d != ',')
      return json_err(p->pos, "expected \",\" or \"}\"");
    p->pos++;
  }
  p->depth--;
  return MT_OK;
}

/* a member whose value is parsed, checked and forgotten (its strings and keys too) */
static mt_status skip_member(st_parser *p, void *ctx, size_t key_off, size_t key_len) {
  (void)ctx, (void)key_off, (void)key_len;
  st_val v;
  size_t mark = p->alen;
  MT_TRY(parse_value(p, &v));
  p->alen = mark;
  return MT_OK;
}

static mt_status parse_array(st_parser *p, st_val *v) {
  MT_TRY(enter(p));
  v->kind = V_ARRAY;
  v->n = 0;
  v->all_counts = 1;
  v->numel = 1;
  skip_ws(p);
  if (peek(p) == ']') {
    p->pos++;
    p->depth--;
    return MT_OK;
  }
  for (;;) {
    st_val e;
    size_t mark = p->alen;
    MT_TRY(parse_value(p, &e));
    p->alen = mark;
    if (e.kind == V_NUMBER && e.is_count) {
      v->numel *= (double)e.count;
      if (v->n < MT_MAX_DIMS)
        v->first[v->n] = e.count;
    } else {
      v->all_counts = 0;
    }
    v->n++;
    skip_ws(p);
    int d = peek(p);
    if (d == ']') {
      p->pos++;
      break;
    }
    if (d != ',')
      return json_err(p->pos, "expected \",\" or \"]\"");
    p->pos++;
  }
  p->depth--;
  return MT_OK;
}

static int literal(const st_parser *p, const char *word, size_t len) {
  return p->n - p->pos >= len && memcmp(p->s + p->pos, word, len) == 0;
}

/* any value (the arena keeps a string value's bytes; objects are parsed and forgotten) */
static mt_status parse_value(st_parser *p, st_val *v) {
  memset(v, 0, offsetof(st_val, first));
  skip_ws(p);
  int c = peek(p);
  switch (c) {
  case '{': {
    size_t mark = p->alen;
    v->kind = V_OBJECT;
    MT_TRY(parse_object(p, skip_member, NULL));
    p->alen = mark;
    return MT_OK;
  }
  case '[':
    return parse_array(p, v);
  case '"':
    v->kind = V_STRING;
    return parse_string(p, &v->off, &v->len);
  case -1:
    return json_err(p->pos, "unexpected end");
  default:
    break;
  }
  if (c == 't' && literal(p, "true", 4)) {
    v->kind = V_TRUE;
    p->pos += 4;
    return MT_OK;
  }
  if (c == 'f' && literal(p, "false", 5)) {
    v->kind = V_FALSE;
    p->pos += 5;
    return MT_OK;
  }
  if (c == 'n' && literal(p, "null", 4)) {
    v->kind = V_NULL;
    p->pos += 4;
    return MT_OK;
  }
  return parse_number(p, v);
}

/* ------------------------------------------------------------------ the safetensors layer */
/* dtype codes: the reference's names for moontorch's dtypes, and those moontorch has no dtype for */
static const struct {
  const char *code;
  int dtype;
} st_dtypes[] = {
    {"I64", MT_INT64},   {"F64", MT_FLOAT64}, {"F32", MT_FLOAT32}, {"I32", MT_INT32}, {"BF16", MT_BFLOAT16},
    {"F16", MT_FLOAT16}, {"I16", MT_INT16},   {"I8", MT_INT8},     {"U8", MT_UINT8},  {"BOOL", MT_BOOL},
};
static const char *const st_unsupported[] = {
    "U16",     "U32",     "U64",     "C64",     "F4",          "F6_E2M3",
    "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
};

static int key_is(const st_parser *p, size_t off, size_t len, const char *word) {
  size_t wl = strlen(word);
  return len == wl && memcmp(p->arena + off, word, wl) == 0;
}

/* the fields of an entry that matter, as parse_object meets them */
typedef struct st_fields {
  int has_dtype, has_shape, has_offsets;
  st_val dtype, shape, offsets;
} st_fields;

static mt_status entry_member(st_parser *p, void *ctx, size_t key_off, size_t key_len) {
  st_fields *f = ctx;
  if (key_is(p, key_off, key_len, "dtype")) {
    f->has_dtype = 1;
    return parse_value(p, &f->dtype); /* its string stays in the arena until the entry is checked */
  }
  if (key_is(p, key_off, key_len, "shape")) {
    f->has_shape = 1;
    return parse_value(p, &f->shape);
  }
  if (key_is(p, key_off, key_len, "data_offsets")) {
    f->has_offsets = 1;
    return parse_value(p, &f->offsets);
  }
  return skip_member(p, NULL, key_off, key_len);
}

/* the first problem with entry `name` (NULL when it is good); fills *it */
static const char *check_entry(st_parser *p, const st_fields *f, char *buf, size_t cap, st_item *it) {
  if (!f->has_dtype || f->dtype.kind != V_STRING)
    return "\"dtype\" is missing or not a string";
  const char *code = p->arena + f->dtype.off;
  size_t clen = f->dtype.len;
  int dt = -1;
  for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
    if (strlen(st_dtypes[i].code) == clen && memcmp(st_dtypes[i].code, code, clen) == 0)
      dt = st_dtypes[i].dtype;
  if (dt < 0) {
    for (size_t i = 0; i < sizeof st_unsupported / sizeof st_unsupported[0]; i++) {
      if (strlen(st_unsupported[i]) == clen && memcmp(st_unsupported[i], code, clen) == 0) {
        snprintf(buf, cap, "dtype %s is not supported by moontorch", st_unsupported[i]);
        return buf;
      }
    }
    char q[ST_QUOTE_BUF];
    snprintf(buf, cap, "unknown dtype %s", quote(q, code, clen));
    return buf;
  }
  const st_val *sh = &f->shape;
  if (!f->has_shape || sh->kind != V_ARRAY)
    return "\"shape\" is missing or not an array";
  if (sh->n > MT_MAX_DIMS) {
    snprintf(buf, cap, "%" PRIu64 " dimensions (at most %d)", sh->n, MT_MAX_DIMS);
    return buf;
  }
  if (!sh->all_counts)
    return "\"shape\" entries must be non-negative integers";
  const st_val *of = &f->offsets;
  if (!f->has_offsets || of->kind != V_ARRAY || of->n != 2 || !of->all_counts)
    return "\"data_offsets\" must be [begin, end], two non-negative integers";
  uint64_t b = of->first[0], e = of->first[1];
  if (b > e) {
    snprintf(buf, cap, "\"data_offsets\" begin %" PRIu64 " is after end %" PRIu64, b, e);
    return buf;
  }
  if (e > p->buf_size) {
    snprintf(buf, cap, "\"data_offsets\" end %" PRIu64 " is beyond the %" PRIu64 "-byte buffer", e, p->buf_size);
    return buf;
  }
  size_t item = mt_dtype_size(dt);
  /* in doubles, as exact as integers here: e - b < 1e15, and a product that is not exact is
   * above 2^53, so above any byte count */
  if ((double)(e - b) != sh->numel * (double)item) {
    snprintf(buf, cap, "%" PRIu64 " bytes for %.0f elements of %s (%zu bytes each)", e - b, sh->numel, code, item);
    return buf;
  }
  it->dtype = dt;
  it->ndim = (int32_t)sh->n;
  for (uint64_t d = 0; d < sh->n; d++)
    it->sizes[d] = (int64_t)sh->first[d];
  it->begin = b;
  it->end = e;
  return NULL;
}

static mt_status add_item(st_parser *p, const st_item *it) {
  if (p->nitems == p->icap) {
    size_t cap = p->icap ? p->icap * 2 : 16;
    st_item *t = realloc(p->items, cap * sizeof *t);
    if (!t)
      return nomem();
    p->items = t;
    p->icap = cap;
  }
  p->items[p->nitems++] = *it;
  return MT_OK;
}

static mt_status meta_member(st_parser *p, void *ctx, size_t key_off, size_t key_len) {
  (void)ctx;
  st_val v;
  size_t mark = p->alen;
  MT_TRY(parse_value(p, &v));
  if (v.kind != V_STRING) {
    p->alen = mark;
    if (!p->meta_err[0]) {
      char q[ST_QUOTE_BUF];
      snprintf(p->meta_err, sizeof p->meta_err, "\"__metadata__\" value for %s is not a string",
               quote(q, p->arena + key_off, key_len));
    }
    return MT_OK;
  }
  if (p->meta_err[0])
    return MT_OK; /* an error will be reported: keep nothing */
  if (p->nmeta == p->mcap) {
    size_t cap = p->mcap ? p->mcap * 2 : 8;
    st_pair *t = realloc(p->meta, cap * sizeof *t);
    if (!t)
      return nomem();
    p->meta = t;
    p->mcap = cap;
  }
  st_pair pr = {key_off, key_len, v.off, v.len};
  p->meta[p->nmeta++] = pr;
  return MT_OK;
}

static mt_status root_member(st_parser *p, void *ctx, size_t key_off, size_t key_len) {
  (void)ctx;
  if (key_is(p, key_off, key_len, "__metadata__")) {
    p->has_meta = 1;
    skip_ws(p);
    if (peek(p) == '{')
      return parse_object(p, meta_member, NULL);
    MT_TRY(skip_member(p, NULL, key_off, key_len));
    if (!p->meta_err[0])
      snprintf(p->meta_err, sizeof p->meta_err, "\"__metadata__\" is not a JSON object");
    return MT_OK;
  }
  /* a tensor: the name stays in the arena, the rest goes once the entry is checked */
  size_t mark = p->alen;
  st_fields f;
  memset(&f, 0, sizeof f);
  const char *problem = NULL;
  skip_ws(p);
  if (peek(p) == '{') {
    MT_TRY(parse_object(p, entry_member, &f));
    if (p->entry_err[0])
      problem = ""; /* only the first problem is reported: no need to check this one */
  } else {
    MT_TRY(skip_member(p, NULL, key_off, key_len));
    problem = "the entry is not a JSON object";
  }
  char buf[ST_QUOTE_BUF + 128];
  st_item it;
  memset(&it, 0, sizeof it);
  if (!problem)
    problem = check_entry(p, &f, buf, sizeof buf, &it);
  p->alen = mark;
  if (problem) {
    if (!p->entry_err[0]) {
      char q[ST_QUOTE_BUF];
      snprintf(p->entry_err, sizeof p->entry_err, "tensor %s: %s", quote(q, p->arena + key_off, key_len), problem);
    }
    return MT_OK;
  }
  it.name_off = key_off;
  it.name_len = key_len;
  return add_item(p, &it);
}

/* buffer order: by begin, then end, then header order */
static int by_offset(const void *a, const void *b) {
  const mt_st_entry *x = *(mt_st_entry *const *)a, *y = *(mt_st_entry *const *)b;
  if (x->data_begin != y->data_begin)
    return x->data_begin < y->data_begin ? -1 : 1;
  if (x->data_end != y->data_end)
    return x->data_end < y->data_end ? -1 : 1;
  return x < y ? -1 : x > y;
}

void mt_st_header_free(mt_st_header *h) {
  if (!h)
    return;
  free(h->entries);
  free(h->sorted);
  free(h->meta);
  free(h->arena);
  free(h);
}

static void parser_free(st_parser *p) {
  free(p->arena);
  free(p->keys);
  free(p->items);
  free(p->meta);
}

mt_status mt_st_header_size(const void *head, uint64_t file_size, uint64_t *n) {
  if (!n || (!head && file_size > 0))
    return mt_error(MT_EINVAL, ST_OP ": NULL argument");
  if (file_size < 8)
    return mt_error(MT_EFORMAT, ST_OP ": file too short for a header size (%" PRIu64 " bytes)", file_size);
  uint64_t v;
  memcpy(&v, head, 8); /* little-endian hosts only (the Lua layer checks) */
  if (v > MT_ST_MAX_HEADER)
    return mt_error(MT_EFORMAT, ST_OP ": header size %" PRIu64 " exceeds the 100 MB limit", v);
  if (v > file_size - 8)
    return mt_error(MT_EFORMAT,
                    ST_OP ": header size %" PRIu64 " is larger than the rest of the file (%" PRIu64 " bytes)", v,
                    file_size - 8);
  *n = v;
  return MT_OK;
}

/* the parse proper; the parser's buffers are the caller's to free */
static mt_status header_parse(st_parser *p, mt_st_header **out) {
  if (!valid_utf8(p->s, p->n))
    return mt_error(MT_EFORMAT, ST_OP ": the header is not valid UTF-8");
  p->arena = malloc(p->n + 1);
  if (!p->arena)
    return nomem();
  skip_ws(p);
  if (peek(p) == '{') {
    MT_TRY(parse_object(p, root_member, NULL));
  } else {
    st_val v;
    MT_TRY(parse_value(p, &v));
    p->root_not_object = 1;
  }
  skip_ws(p);
  if (p->pos < p->n)
    return json_err(p->pos, "trailing characters after the JSON value");
  if (p->root_not_object)
    return mt_error(MT_EFORMAT, ST_OP ": the header is not a JSON object");
  if (p->meta_err[0])
    return mt_error(MT_EFORMAT, ST_OP ": %s", p->meta_err);
  if (p->entry_err[0])
    return mt_error(MT_EFORMAT, ST_OP ": %s", p->entry_err);

  mt_st_header *h = calloc(1, sizeof *h);
  if (!h)
    return nomem();
  size_t n = p->nitems;
  h->entries = malloc((n ? n : 1) * sizeof *h->entries);
  h->sorted = malloc((n ? n : 1) * sizeof *h->sorted);
  if (!h->entries || !h->sorted) {
    mt_st_header_free(h);
    return nomem();
  }
  for (size_t i = 0; i < n; i++) {
    const st_item *it = &p->items[i];
    mt_st_entry *e = &h->entries[i];
    memset(e, 0, sizeof *e);
    e->name = p->arena + it->name_off;
    e->name_len = it->name_len;
    e->dtype = it->dtype;
    e->ndim = it->ndim;
    memcpy(e->sizes, it->sizes, sizeof e->sizes);
    e->data_begin = it->begin;
    e->data_end = it->end;
    h->sorted[i] = e;
  }
  h->n = (int64_t)n;
  qsort(h->sorted, n, sizeof *h->sorted, by_offset);
  /* the tensors cover [0, buf_size) exactly */
  uint64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const mt_st_entry *e = h->sorted[i];
    mt_status st = MT_OK;
    if (e->data_begin > at) {
      st = mt_error(MT_EFORMAT, ST_OP ": bytes %" PRIu64 " to %" PRIu64 " of the buffer belong to no tensor (a hole)",
                    at, e->data_begin);
    } else if (e->data_begin < at) {
      char q[ST_QUOTE_BUF];
      st = mt_error(MT_EFORMAT, ST_OP ": tensor %s overlaps the one before it at byte %" PRIu64,
                    quote(q, e->name, e->name_len), e->data_begin);
    }
    if (st != MT_OK) {
      mt_st_header_free(h);
      return st;
    }
    at = e->data_end;
  }
  if (at != p->buf_size) {
    mt_st_header_free(h);
    return mt_error(MT_EFORMAT,
                    ST_OP ": the tensors cover %" PRIu64 " bytes of the %" PRIu64 "-byte buffer (trailing bytes)", at,
                    p->buf_size);
  }
  h->nmeta = p->has_meta ? (int64_t)p->nmeta : -1;
  h->meta = p->meta;
  p->meta = NULL;
  h->arena = p->arena; /* the names and metadata point into it */
  p->arena = NULL;
  *out = h;
  return MT_OK;
}

mt_status mt_st_header_parse(const char *json, size_t n, uint64_t buf_size, mt_st_header **out) {
  if (!out)
    return mt_error(MT_EINVAL, ST_OP ": NULL argument");
  *out = NULL;
  if (n > MT_ST_MAX_HEADER) /* before anything is read or allocated */
    return mt_error(MT_EFORMAT, ST_OP ": header size %zu exceeds the 100 MB limit", n);
  if (!json && n > 0)
    return mt_error(MT_EINVAL, ST_OP ": NULL argument");
  st_parser p;
  memset(&p, 0, sizeof p);
  p.s = (const unsigned char *)(json ? json : "");
  p.n = n;
  p.buf_size = buf_size;
  mt_status st = header_parse(&p, out);
  parser_free(&p);
  return st;
}

int64_t mt_st_header_count(const mt_st_header *h) {
  return h ? h->n : 0;
}

const mt_st_entry *mt_st_header_entry(const mt_st_header *h, int64_t i, int by_offset_order) {
  if (!h || i < 0 || i >= h->n)
    return NULL;
  return by_offset_order ? h->sorted[i] : &h->entries[i];
}

int64_t mt_st_header_metadata_count(const mt_st_header *h) {
  return h ? h->nmeta : -1;
}

mt_status mt_st_header_metadata(const mt_st_header *h, int64_t i, const char **key, size_t *key_len, const char **value,
                                size_t *value_len) {
  if (!h || !key || !key_len || !value || !value_len)
    return mt_error(MT_EINVAL, ST_OP ": NULL argument");
  if (i < 0 || i >= h->nmeta)
    return mt_error(MT_ERANGE, ST_OP ": metadata pair %lld out of range (the header has %lld)", (long long)i,
                    (long long)(h->nmeta < 0 ? 0 : h->nmeta));
  const st_pair *pr = &h->meta[i];
  *key = h->arena + pr->koff;
  *key_len = pr->klen;
  *value = h->arena + pr->voff;
  *value_len = pr->vlen;
  return MT_OK;
}
