/* t7.c -- Torch7's serialisation (torch.save / File:writeObject of torch7's File.lua, and the
 * readers and writers of its DiskFile, Tensor and Storage in C; read for the facts):
 *
 * A value is an int type tag, then:
 *   0 nil; 1 number: a double; 5 boolean: an int (1 true); 2 string: an int length, the bytes;
 *   3 table: an int index, then (unless the index was seen: a reference) an int count and count
 *     key/value pairs; 4 torch object: an int index, then (unless seen) a version string "V <n>"
 *     (an int length and the bytes; files before versions have the class name there) and the class
 *     name, then the object: a Tensor is an int nDimension, nDimension longs of sizes, nDimension
 *     longs of strides, a long storage offset counted from 1, then its storage as a value (nil for
 *     an empty tensor); a Storage is a long element count and the elements; any other class (nn's
 *     modules) is one value, the table of its fields;
 *   6 function: an int length, the bytecode, then a value (its upvalues); 7, 8 the same after an
 *     int index (8: upvalues as {name=, id=, value=}).
 * Binary files: little-endian ints (4 bytes), doubles (8), elements in their C size; `long` is the
 * writing machine's (8 bytes on 64-bit Linux and macOS, 4 on Windows and 32-bit systems, and in
 * torch.load's 'b32' files): unless told, 8 is tried first and 4 when 8 fails. ASCII files: each
 * number as text ("%d", "%ld", "%.17g" for doubles, "%.9g" for floats), the numbers of one write
 * separated by spaces and ended by a newline; bytes (strings, char and byte storages) raw, then a
 * newline.
 *
 * The reader builds a graph of values (tables refer to nodes, so shared and cyclic tables cost
 * nothing here) with an explicit stack (no recursion in C, whatever the nesting); functions are
 * kept as bytecode and never loaded here (lua/interop/t7.lua refuses them unless trusted); every
 * count is checked against the bytes left before anything is allocated; tensors are made at the
 * end, each a view of its storage's elements checked to lie inside them. */
#include "formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define OP "load_t7"

enum { TAG_NIL = 0, TAG_NUMBER = 1, TAG_STRING = 2, TAG_TABLE = 3, TAG_TORCH = 4, TAG_BOOLEAN = 5,
       TAG_FUNCTION = 6, TAG_LEGACY_RECUR = 7, TAG_RECUR = 8 };

/* Torch7's element types: the class names' prefixes */
typedef struct t7_type {
  const char *name; /* "Float" */
  int dtype;
  int file_size;    /* bytes of an element in a binary file; 0: a long (the file's long size) */
} t7_type;
static const t7_type types[] = {
    {"Byte", MT_UINT8, 1},   {"Char", MT_INT8, 1},     {"Short", MT_INT16, 2}, {"Int", MT_INT32, 4},
    {"Long", MT_INT64, 0},   {"Float", MT_FLOAT32, 4}, {"Double", MT_FLOAT64, 8}, {"Half", MT_FLOAT16, 2},
};
#define NTYPES (sizeof types / sizeof types[0])

/* "torch.FloatTensor" -> 1 tensor / 2 storage, and its type; CUDA's classes too ("torch.CudaTensor" is
 * float, "torch.CudaDoubleTensor", ...): their files hold the elements the same way */
static int class_of(const char *name, const t7_type **type) {
  if (strncmp(name, "torch.", 6) != 0)
    return 0;
  const char *s = name + 6;
  if (strncmp(s, "Cuda", 4) == 0) {
    s += 4;
    if (strcmp(s, "Tensor") == 0 || strcmp(s, "Storage") == 0) {
      *type = &types[5]; /* float */
      return s[0] == 'T' ? 1 : 2;
    }
  }
  for (size_t k = 0; k < NTYPES; k++) {
    size_t n = strlen(types[k].name);
    if (strncmp(s, types[k].name, n) == 0) {
      *type = &types[k];
      if (strcmp(s + n, "Tensor") == 0)
        return 1;
      if (strcmp(s + n, "Storage") == 0)
        return 2;
    }
  }
  return 0;
}

struct mt_t7_file {
  char *path;
  int ascii, long_size;
  pk_graph g;
  uint32_t root;
};

typedef struct t7_slot {
  int32_t index;
  uint32_t node; /* 0: empty */
} t7_slot;

enum { ROLE_ROOT, ROLE_TABLE, ROLE_CHILD };
typedef struct t7_frame {
  uint32_t node;
  int role;
  uint64_t remaining;
} t7_frame;

typedef struct t7_reader {
  mt_t7_file *f;
  mt_in *in;
  int ascii, long_size;
  t7_slot *idx;
  size_t nidx, cidx;
  t7_frame *frames;
  size_t nframes, cframes;
} t7_reader;

#define BAD(...) mt_fmt_error(MT_EFORMAT, OP, r->f->path, __VA_ARGS__)
static mt_status oom(t7_reader *r) { return mt_error(MT_ENOMEM, OP ": %s: out of memory", r->f->path); }

static mt_status new_node(t7_reader *r, int kind, uint32_t *id) {
  int e = pk_graph_add(&r->f->g, kind, id); /* (pickle.c: the graph both readers build) */
  return e == 0 ? MT_OK : e == 1 ? BAD("too many values") : oom(r);
}
static pk_node *N(t7_reader *r, uint32_t id) { return &r->f->g.nodes[id]; }

static mt_status add_item(t7_reader *r, uint32_t id, uint32_t item) {
  pk_node *x = N(r, id);
  if (x->n == x->cap) {
    if (x->cap >= UINT32_MAX / 2)
      return BAD("a table too large");
    uint32_t cap = x->cap ? x->cap * 2 : 8;
    uint32_t *p = realloc(x->p, (size_t)cap * sizeof *p);
    if (!p)
      return oom(r);
    x->p = p;
    x->cap = cap;
  }
  ((uint32_t *)x->p)[x->n++] = item;
  return MT_OK;
}

/* ------------------------------------------------------------------ references */
static uint32_t idx_get(t7_reader *r, int32_t index) {
  if (!r->cidx)
    return 0;
  size_t h = ((uint32_t)index * 2654435761u) & (r->cidx - 1);
  while (r->idx[h].node) {
    if (r->idx[h].index == index)
      return r->idx[h].node;
    h = (h + 1) & (r->cidx - 1);
  }
  return 0;
}

static mt_status idx_put(t7_reader *r, int32_t index, uint32_t node) {
  if ((r->nidx + 1) * 2 > r->cidx) {
    size_t cap = r->cidx ? r->cidx * 2 : 64;
    t7_slot *s = calloc(cap, sizeof *s);
    if (!s)
      return oom(r);
    for (size_t i = 0; i < r->cidx; i++) {
      if (!r->idx[i].node)
        continue;
      size_t h = ((uint32_t)r->idx[i].index * 2654435761u) & (cap - 1);
      while (s[h].node)
        h = (h + 1) & (cap - 1);
      s[h] = r->idx[i];
    }
    free(r->idx);
    r->idx = s;
    r->cidx = cap;
  }
  size_t h = ((uint32_t)index * 2654435761u) & (r->cidx - 1);
  while (r->idx[h].node)
    h = (h + 1) & (r->cidx - 1);
  r->idx[h].index = index;
  r->idx[h].node = node;
  r->nidx++;
  return MT_OK;
}

/* ------------------------------------------------------------------ numbers, binary and ASCII */
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/* the next byte without taking it (-1 at the end) */
static int peek(t7_reader *r) {
  unsigned char c;
  if (mt_in_left(r->in) == 0)
    return -1;
  if (mt_in_read(r->in, &c, 1) != MT_OK)
    return -1;
  r->in->pos--;
  return c;
}

/* ASCII: one whitespace-separated token (what fscanf reads for a number), without NULs */
static mt_status token(t7_reader *r, char *buf, size_t cap, const char *what) {
  int c;
  while ((c = peek(r)) >= 0 && is_space(c))
    r->in->pos++;
  size_t k = 0;
  while ((c = peek(r)) >= 0 && !is_space(c)) {
    if (k + 1 >= cap)
      return BAD("a number too long where %s is expected (at byte %llu)", what, (unsigned long long)r->in->pos);
    if (c == 0)
      return BAD("a NUL byte where %s is expected (at byte %llu)", what, (unsigned long long)r->in->pos);
    buf[k++] = (char)c;
    r->in->pos++;
  }
  buf[k] = 0;
  if (k == 0)
    return BAD("the file ends where %s is expected", what);
  return MT_OK;
}

/* ASCII: the newline after a write of several values (DiskFile's auto-spacing) */
static void end_of_write(t7_reader *r) {
  if (r->ascii && peek(r) == '\n')
    r->in->pos++;
}

static mt_status ascii_int(t7_reader *r, int64_t lo, int64_t hi, const char *what, int64_t *v) {
  char buf[80], *end;
  MT_TRY(token(r, buf, sizeof buf, what));
  errno = 0;
  long long x = strtoll(buf, &end, 10);
  if (*end || errno || x < lo || x > hi)
    return BAD("'%.20s' where %s is expected", buf, what);
  *v = x;
  return MT_OK;
}

static mt_status ascii_double(t7_reader *r, const char *what, double *v) {
  char buf[80], *end;
  MT_TRY(token(r, buf, sizeof buf, what));
  *v = strtod(buf, &end);
  if (*end)
    return BAD("'%.20s' where %s is expected", buf, what);
  return MT_OK;
}

static mt_status bin(t7_reader *r, void *dst, size_t n) { return mt_in_read(r->in, dst, n); }

static mt_status rd_int(t7_reader *r, const char *what, int32_t *v) {
  if (r->ascii) {
    int64_t x = 0;
    MT_TRY(ascii_int(r, INT32_MIN, INT32_MAX, what, &x));
    end_of_write(r);
    *v = (int32_t)x;
    return MT_OK;
  }
  return bin(r, v, 4);
}

/* n longs (the file's long size) */
static mt_status rd_longs(t7_reader *r, int64_t *v, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    if (r->ascii) {
      MT_TRY(ascii_int(r, INT64_MIN, INT64_MAX, what, &v[i]));
    } else if (r->long_size == 8) {
      MT_TRY(bin(r, &v[i], 8));
    } else {
      int32_t x;
      MT_TRY(bin(r, &x, 4));
      v[i] = x;
    }
  }
  if (n)
    end_of_write(r);
  return MT_OK;
}

static mt_status rd_double(t7_reader *r, double *v) {
  if (r->ascii) {
    MT_TRY(ascii_double(r, "a number", v));
    end_of_write(r);
    return MT_OK;
  }
  return bin(r, v, 8);
}

/* n raw bytes (strings, bytecode): a string node's bytes */
static mt_status rd_chars(t7_reader *r, int32_t len, uint32_t node, const char *what) {
  if (len < 0 || (uint64_t)len > mt_in_left(r->in))
    return BAD("%s of %d bytes runs past the end of the file", what, len);
  char *s = malloc((size_t)len + 1);
  if (!s)
    return oom(r);
  N(r, node)->p = s;
  MT_TRY(bin(r, s, (size_t)len));
  s[len] = 0;
  N(r, node)->n = (uint32_t)len;
  if (len)
    end_of_write(r);
  return MT_OK;
}

/* ------------------------------------------------------------------ storages */
static mt_status read_storage(t7_reader *r, uint32_t node, const t7_type *ty) {
  int64_t n;
  MT_TRY(rd_longs(r, &n, 1, "a storage's size"));
  size_t fsize = ty->file_size ? (size_t)ty->file_size : (size_t)r->long_size;
  uint64_t left = mt_in_left(r->in);
  /* binary: fsize bytes an element; ASCII: at least one byte an element (raw) or two (text) */
  uint64_t most = r->ascii ? (fsize == 1 ? left : left / 2 + 1) : left / fsize;
  if (n < 0 || (uint64_t)n > most)
    return BAD("a storage of %lld elements, more than the file holds", (long long)n);
  mt_tensor *t = NULL;
  MT_TRY(mt_tensor_empty(&n, 1, ty->dtype, NULL, &t));
  N(r, node)->t = t;
  N(r, node)->dtype = (int16_t)ty->dtype;
  N(r, node)->j = n;
  char *d = t->_data;
  if (n == 0)
    return MT_OK;
  if (!r->ascii) {
    if (ty->dtype == MT_INT64 && r->long_size == 4) {
      for (int64_t i = 0; i < n; i++) {
        int32_t x;
        MT_TRY(bin(r, &x, 4));
        ((int64_t *)d)[i] = x;
      }
      return MT_OK;
    }
    return bin(r, d, (size_t)n * fsize);
  }
  if (fsize == 1 && ty->dtype != MT_INT64) { /* bytes and chars: raw */
    MT_TRY(bin(r, d, (size_t)n));
    end_of_write(r);
    return MT_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    if (mt_is_float(ty->dtype)) {
      double x;
      MT_TRY(ascii_double(r, "a storage element", &x));
      mt_store_double(ty->dtype, d + i * (int64_t)mt_itemsize(ty->dtype), x);
    } else {
      int64_t x = 0;
      int64_t lo = ty->dtype == MT_INT16 ? INT16_MIN : ty->dtype == MT_INT32 ? INT32_MIN : INT64_MIN;
      int64_t hi = ty->dtype == MT_INT16 ? INT16_MAX : ty->dtype == MT_INT32 ? INT32_MAX : INT64_MAX;
      MT_TRY(ascii_int(r, lo, hi, "a storage element", &x));
      if (ty->dtype == MT_INT16)
        ((int16_t *)d)[i] = (int16_t)x;
      else if (ty->dtype == MT_INT32)
        ((int32_t *)d)[i] = (int32_t)x;
      else
        ((int64_t *)d)[i] = x;
    }
  }
  end_of_write(r);
  return MT_OK;
}

/* ------------------------------------------------------------------ values */
/* One value's head: *out its node; *children the values still to read into it (0: complete) */
static mt_status read_value(t7_reader *r, uint32_t *out, uint64_t *children) {
  int32_t tag;
  *children = 0;
  MT_TRY(rd_int(r, "a type tag", &tag));
  switch (tag) {
  case TAG_NIL:
    return new_node(r, MT_T7_NIL, out);
  case TAG_NUMBER: {
    double d;
    MT_TRY(rd_double(r, &d));
    MT_TRY(new_node(r, MT_T7_NUMBER, out));
    N(r, *out)->f = d;
    return MT_OK;
  }
  case TAG_BOOLEAN: {
    int32_t b;
    MT_TRY(rd_int(r, "a boolean", &b));
    MT_TRY(new_node(r, MT_T7_BOOLEAN, out));
    N(r, *out)->i = b == 1; /* (File:readBool) */
    return MT_OK;
  }
  case TAG_STRING: {
    int32_t len;
    MT_TRY(rd_int(r, "a string's length", &len));
    MT_TRY(new_node(r, MT_T7_STRING, out));
    return rd_chars(r, len, *out, "a string");
  }
  case TAG_FUNCTION: {
    int32_t len;
    MT_TRY(rd_int(r, "a function's size", &len));
    MT_TRY(new_node(r, MT_T7_FUNCTION, out));
    N(r, *out)->flags = TAG_FUNCTION;
    MT_TRY(rd_chars(r, len, *out, "a function's bytecode"));
    *children = 1;
    return MT_OK;
  }
  case TAG_TABLE:
  case TAG_TORCH:
  case TAG_RECUR:
  case TAG_LEGACY_RECUR:
    break;
  default:
    return BAD("an unknown type tag %d (at byte %llu)", tag, (unsigned long long)r->in->pos);
  }
  int32_t index;
  MT_TRY(rd_int(r, "an object's index", &index));
  uint32_t seen = idx_get(r, index);
  if (seen) { /* a reference to a value read before */
    *out = seen;
    return MT_OK;
  }
  if (tag == TAG_TABLE) {
    int32_t n;
    MT_TRY(new_node(r, MT_T7_TABLE, out));
    MT_TRY(idx_put(r, index, *out));
    MT_TRY(rd_int(r, "a table's size", &n));
    /* each key and value takes 4 bytes at least (2 in ASCII) */
    if (n < 0 || (uint64_t)n > mt_in_left(r->in) / (r->ascii ? 4 : 8))
      return BAD("a table of %d entries, more than the file holds", n);
    *children = 2 * (uint64_t)n;
    return MT_OK;
  }
  if (tag == TAG_RECUR || tag == TAG_LEGACY_RECUR) {
    int32_t len;
    MT_TRY(new_node(r, MT_T7_FUNCTION, out));
    N(r, *out)->flags = (uint8_t)tag;
    MT_TRY(idx_put(r, index, *out));
    MT_TRY(rd_int(r, "a function's size", &len));
    MT_TRY(rd_chars(r, len, *out, "a function's bytecode"));
    *children = 1;
    return MT_OK;
  }
  /* a torch object: "V <version>", then its class name (files before versions: the name alone) */
  uint32_t name_node, obj;
  int32_t len;
  MT_TRY(new_node(r, MT_T7_OBJECT, &obj));
  MT_TRY(idx_put(r, index, obj));
  MT_TRY(new_node(r, MT_T7_STRING, &name_node));
  MT_TRY(rd_int(r, "a class's version", &len));
  if (len > 4096)
    return BAD("a class name of %d bytes", len);
  MT_TRY(rd_chars(r, len, name_node, "a class's version"));
  const char *v = N(r, name_node)->p;
  int64_t version = 0;
  if (strncmp(v, "V ", 2) == 0) {
    char *end;
    errno = 0;
    double d = strtod(v + 2, &end);
    if (*end || errno || !(d >= INT32_MIN && d <= INT32_MAX))
      return BAD("a class version '%.20s'", v);
    version = (int64_t)d;
    free(N(r, name_node)->p);
    N(r, name_node)->p = NULL;
    MT_TRY(rd_int(r, "a class name's length", &len));
    if (len > 4096)
      return BAD("a class name of %d bytes", len);
    MT_TRY(rd_chars(r, len, name_node, "a class name"));
  }
  pk_node *o = N(r, obj);
  o->aux = name_node; /* (then the child: the fields, or the storage) */
  o->i = version;
  const t7_type *ty = NULL;
  int cls = class_of(N(r, name_node)->p, &ty);
  *out = obj;
  if (cls == 2) {
    o->kind = MT_T7_STORAGE;
    return read_storage(r, obj, ty);
  }
  if (cls == 1) {
    int32_t nd;
    MT_TRY(rd_int(r, "a tensor's number of dimensions", &nd));
    if (nd < 0 || nd > MT_MAX_DIMS)
      return BAD("a tensor of %d dimensions (moontorch has at most %d)", nd, MT_MAX_DIMS);
    int64_t *geo = malloc((2 + 2 * (size_t)nd) * sizeof *geo);
    if (!geo)
      return oom(r);
    o = N(r, obj);
    o->kind = MT_T7_TENSOR;
    o->dtype = (int16_t)ty->dtype;
    o->p = geo;
    geo[1] = nd;
    MT_TRY(rd_longs(r, geo + 2, (size_t)nd, "a tensor's sizes"));
    MT_TRY(rd_longs(r, geo + 2 + nd, (size_t)nd, "a tensor's strides"));
    MT_TRY(rd_longs(r, geo, 1, "a tensor's storage offset"));
    if (geo[0] == INT64_MIN) /* (found by fuzz_t7: the subtraction below would overflow) */
      return BAD("a tensor's storage offset out of range");
    geo[0] -= 1; /* (counted from 1 in the file) */
    *children = 1; /* its storage */
    return MT_OK;
  }
  *children = 1; /* the table of its fields */
  return MT_OK;
}

static mt_status push_frame(t7_reader *r, uint32_t node, int role, uint64_t remaining) {
  if (r->nframes == r->cframes) {
    size_t cap = r->cframes ? r->cframes * 2 : 32;
    t7_frame *f = realloc(r->frames, cap * sizeof *f);
    if (!f)
      return oom(r);
    r->frames = f;
    r->cframes = cap;
  }
  r->frames[r->nframes++] = (t7_frame){node, role, remaining};
  return MT_OK;
}

static mt_status read_all(t7_reader *r) {
  MT_TRY(push_frame(r, 0, ROLE_ROOT, 1));
  while (r->nframes) {
    t7_frame *fr = &r->frames[r->nframes - 1];
    if (fr->remaining == 0) {
      r->nframes--;
      continue;
    }
    uint32_t v;
    uint64_t children;
    MT_TRY(read_value(r, &v, &children));
    fr = &r->frames[r->nframes - 1];
    fr->remaining--;
    if (fr->role == ROLE_ROOT)
      r->f->root = v;
    else if (fr->role == ROLE_TABLE)
      MT_TRY(add_item(r, fr->node, v));
    else
      N(r, fr->node)->j = v; /* object: fields; function: upvalues; tensor: storage */
    if (children)
      MT_TRY(push_frame(r, v, N(r, v)->kind == MT_T7_TABLE ? ROLE_TABLE : ROLE_CHILD, children));
  }
  if (mt_in_left(r->in) != 0) {
    /* (DiskFile leaves nothing after the object; trailing whitespace in ASCII files is harmless) */
    int c;
    while (r->ascii && (c = peek(r)) >= 0 && is_space(c))
      r->in->pos++;
    if (mt_in_left(r->in) != 0)
      return BAD("%llu bytes after the object", (unsigned long long)mt_in_left(r->in));
  }
  return MT_OK;
}

/* every tensor: a view of its storage's elements */
static mt_status make_tensors(t7_reader *r) {
  pk_graph *g = &r->f->g;
  for (uint32_t id = 1; id < g->n; id++) {
    pk_node *x = &g->nodes[id];
    if (x->kind != MT_T7_TENSOR)
      continue;
    int64_t *geo = x->p, off = geo[0], nd = geo[1], *sizes = geo + 2, *strides = geo + 2 + nd;
    const char *cls = g->nodes[x->aux].p;
    int64_t numel = 1, last = off;
    for (int d = 0; d < nd; d++) {
      int64_t reach;
      if (sizes[d] < 0 || strides[d] < 0)
        return BAD("a %s with a negative size or stride", cls);
      if (__builtin_mul_overflow(numel, sizes[d], &numel))
        return BAD("a %s whose size overflows", cls);
      if (sizes[d] > 0 &&
          (__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) || __builtin_add_overflow(last, reach, &last)))
        return BAD("a %s whose extent overflows", cls);
    }
    pk_node *s = x->j ? &g->nodes[x->j] : NULL;
    if (nd == 0 || numel == 0) { /* no elements: Torch7 keeps no storage for these (or any) */
      int64_t zero = 0;
      if (s && s->kind != MT_T7_STORAGE && s->kind != MT_T7_NIL)
        return BAD("a %s whose storage is not a storage", cls);
      MT_TRY(mt_tensor_empty(nd ? sizes : &zero, nd ? (int)nd : 1, x->dtype, NULL, &x->t));
      continue;
    }
    if (!s || s->kind != MT_T7_STORAGE)
      return BAD("a %s with elements but no storage", cls);
    if (s->dtype != x->dtype)
      return BAD("a %s over a storage of another type (%s)", cls, (const char *)g->nodes[s->aux].p);
    if (off < 0 || last >= s->j)
      return BAD("a %s lies outside its storage (%lld elements)", cls, (long long)s->j);
    MT_TRY(mt_new_view(s->t, sizes, strides, (int)nd, off, &x->t));
  }
  return MT_OK;
}

/* ------------------------------------------------------------------ the public face */
void mt_t7_close(mt_t7_file *f) {
  if (!f)
    return;
  pk_graph_free(&f->g);
  free(f->path);
  free(f);
}

static mt_status read_as(mt_t7_file *f, int fd, uint64_t fsize, int ascii, int long_size) {
  pk_graph_free(&f->g);
  f->root = 0;
  f->ascii = ascii;
  f->long_size = long_size;
  mt_in in;
  MT_TRY(mt_in_file(&in, fd, 0, fsize));
  in.op = OP;
  in.path = f->path;
  in.what = "the file";
  t7_reader r0 = {f, &in, ascii, long_size, NULL, 0, 0, NULL, 0, 0}, *r = &r0;
  mt_status st = read_all(r);
  if (st == MT_OK)
    st = make_tensors(r);
  free(r->idx);
  free(r->frames);
  mt_in_free(&in);
  return st;
}

mt_status mt_t7_open(const char *path, int format, int long_size, mt_t7_file **out) {
  if (!path || !out)
    return mt_error(MT_EINVAL, OP ": path is NULL");
  *out = NULL;
  if (format < MT_T7_AUTO || format > MT_T7_ASCII || (long_size != 0 && long_size != 4 && long_size != 8))
    return mt_error(MT_EINVAL, OP ": format must be auto, binary or ascii, and long_size 0, 4 or 8");
  mt_t7_file *f = calloc(1, sizeof *f);
  if (!f || !(f->path = strdup(path))) {
    free(f);
    return mt_error(MT_ENOMEM, OP ": out of memory");
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    mt_status s = mt_error(MT_EIO, OP ": %s: cannot open the file (%s)", path, strerror(errno));
    mt_t7_close(f);
    return s;
  }
  struct stat sb;
  mt_status st = MT_OK;
  if (fstat(fd, &sb) != 0)
    st = mt_error(MT_EIO, OP ": %s: cannot stat the file (%s)", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    st = mt_fmt_error(MT_EFORMAT, OP, path, "not a regular file");
  uint64_t fsize = (uint64_t)sb.st_size;
  unsigned char head[4] = {0};
  if (st == MT_OK && fsize < 2)
    st = mt_fmt_error(MT_EFORMAT, OP, path, "not a Torch7 file (too short)");
  if (st == MT_OK)
    st = mt_pread_all(fd, head, fsize < 4 ? (size_t)fsize : 4, 0, OP, path);
  if (st == MT_OK) {
    /* binary files start with a little-endian int (a type tag), ASCII ones with its digits */
    int c0 = head[0];
    int ascii = format == MT_T7_ASCII ||
                (format == MT_T7_AUTO && ((c0 >= '0' && c0 <= '9') || c0 == '-' || c0 == '+' || is_space(c0)));
    if (ascii) {
      st = read_as(f, fd, fsize, 1, 8);
    } else if (long_size) {
      st = read_as(f, fd, fsize, 0, long_size);
    } else {
      /* 8-byte longs (64-bit Linux, macOS), else 4 (Windows, 32-bit systems, 'b32' files) */
      st = read_as(f, fd, fsize, 0, 8);
      if (st != MT_OK) {
        char first[1100];
        snprintf(first, sizeof first, "%s", mt_last_error());
        st = read_as(f, fd, fsize, 0, 4);
        if (st != MT_OK) /* neither: the 8-byte reading's complaint */
          st = mt_error(st, "%s", first);
      }
    }
  }
  close(fd);
  if (st != MT_OK) {
    mt_t7_close(f);
    return st;
  }
  *out = f;
  return MT_OK;
}

uint32_t mt_t7_root(const mt_t7_file *f) { return f ? f->root : 0; }
uint32_t mt_t7_count(const mt_t7_file *f) { return f && f->g.n ? f->g.n - 1 : 0; }
const char *mt_t7_format(const mt_t7_file *f) {
  if (!f)
    return "";
  return f->ascii ? "ascii" : f->long_size == 8 ? "binary, 8-byte longs" : "binary, 4-byte longs";
}

mt_status mt_t7_get(mt_t7_file *f, uint32_t node, mt_t7_value *v) {
  if (!f || !v)
    return mt_error(MT_EINVAL, OP ": NULL argument");
  memset(v, 0, sizeof *v);
  if (node == 0 || node >= f->g.n)
    return mt_error(MT_ERANGE, OP ": %s: no value %u", f->path, node);
  pk_node *x = &f->g.nodes[node];
  v->kind = x->kind;
  v->dtype = x->dtype;
  switch (x->kind) {
  case MT_T7_NUMBER:
    v->number = mt_number_out(x->f);
    break;
  case MT_T7_BOOLEAN:
    v->number = (double)x->i;
    break;
  case MT_T7_STRING:
    v->count = x->n;
    v->str = x->p ? x->p : "";
    break;
  case MT_T7_TABLE:
    v->count = x->n / 2;
    v->items = x->p;
    break;
  case MT_T7_FUNCTION:
    v->count = x->n;
    v->str = x->p ? x->p : "";
    v->version = x->flags;
    v->child = (uint32_t)x->j;
    break;
  case MT_T7_OBJECT:
  case MT_T7_TENSOR:
  case MT_T7_STORAGE: {
    pk_node *name = &f->g.nodes[x->aux];
    v->str = name->p ? name->p : "";
    v->count = name->n;
    v->version = (int32_t)x->i;
    if (x->kind == MT_T7_OBJECT)
      v->child = (uint32_t)x->j;
    else
      v->tensor = mt_tensor_retain(x->t);
    break;
  }
  default:
    break;
  }
  return MT_OK;
}
