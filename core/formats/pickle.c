/* pickle.c -- a restricted unpickler: Python's pickle format (protocols 2 to 5, the binary opcodes)
 * read into a graph of plain values, never running anything.
 *
 * What it accepts is what PyTorch's `torch.load(..., weights_only=True)` accepts
 * (torch/_weights_only_unpickler.py, PyTorch 1.13), read for the facts:
 *  - data opcodes: None, booleans, ints (BININT*, LONG1/LONG4), floats (BINFLOAT), strings and bytes
 *    (BINUNICODE*, BINSTRING, BINBYTES*), lists, tuples, dicts, sets, MARK, the memo (PUT/GET,
 *    MEMOIZE), POP, DUP, FRAME, PROTO, STOP;
 *  - GLOBAL / STACK_GLOBAL only for the globals of that allowlist: collections.OrderedDict,
 *    torch.nn.parameter.Parameter, torch.Size, torch.Tensor, torch.serialization._get_layout,
 *    the dtypes, the storage and tensor classes, torch._utils._rebuild_tensor(_v2),
 *    _rebuild_parameter, _rebuild_meta_tensor_no_storage, _rebuild_sparse(_csr)_tensor; plus the
 *    plain-data constructors protocol 2 needs for values it has no opcode for: bytes as
 *    _codecs.encode(str, 'latin1') and bytes(), sets as set(list) / frozenset(list) (PyTorch
 *    2.x's allowlist has the first too). Any other global is refused at once, with its name;
 *  - REDUCE / NEWOBJ only on those callables, each with the arguments it takes: the result is
 *    a value built here (an ordered dict, a tensor's description, a tuple), not a call;
 *    sparse tensors, torch.Tensor's legacy state and tensor classes called are refused as
 *    unsupported; BUILD only on an ordered dict (its `_metadata` attribute is kept);
 *  - BINPERSID: the id is handed to the caller (pytorch.c: PyTorch's storages).
 * Everything else (INST, OBJ, EXT*, PERSID, text opcodes, NEWOBJ_EX, ...) is refused.
 *
 * Safety: every length is checked against the bytes left before anything is allocated; the
 * memo is a hash table (any 32-bit index); the graph holds node ids, so shared and cyclic
 * structures (a list that holds itself) cost nothing here (the Lua reader walks them with a
 * memo and a depth limit); memory is linear in the pickle's size. */
#include "formats.h"

#include <stdlib.h>

/* ------------------------------------------------------------------ the allowed globals */
enum {
  G_NONE = 0,
  G_ODICT,
  G_PARAMETER,
  G_GET_LAYOUT,
  G_SIZE,
  G_TENSOR,
  G_REBUILD_PARAMETER,
  G_REBUILD_PARAMETER_STATE,
  G_REBUILD_TENSOR,
  G_REBUILD_TENSOR_V2,
  G_REBUILD_SPARSE,
  G_REBUILD_META,
  G_REBUILD_SPARSE_CSR,
  G_CODECS_ENCODE,
  G_SET,   /* set(items) / frozenset(items): protocol 2 has no set opcodes */
  G_BYTES, /* bytes(): protocol 2's empty bytes */
  G_DTYPE,        /* torch.float32, ... */
  G_STORAGE_TYPE, /* torch.FloatStorage, ... */
  G_TENSOR_TYPE,  /* torch.FloatTensor, ... */
};

typedef struct pk_global {
  const char *name;
  uint8_t kind;
  int8_t dtype; /* -1: a type moontorch has no dtype for */
} pk_global;

static const pk_global globals[] = {
    {"collections.OrderedDict", G_ODICT, -1},
    {"torch.nn.parameter.Parameter", G_PARAMETER, -1},
    {"torch.serialization._get_layout", G_GET_LAYOUT, -1},
    {"torch.Size", G_SIZE, -1},
    {"torch.Tensor", G_TENSOR, -1},
    {"torch._utils._rebuild_parameter", G_REBUILD_PARAMETER, -1},
    {"torch._utils._rebuild_parameter_with_state", G_REBUILD_PARAMETER_STATE, -1}, /* (PyTorch 2.x) */
    {"torch._utils._rebuild_tensor", G_REBUILD_TENSOR, -1},
    {"torch._utils._rebuild_tensor_v2", G_REBUILD_TENSOR_V2, -1},
    {"torch._utils._rebuild_sparse_tensor", G_REBUILD_SPARSE, -1},
    {"torch._utils._rebuild_meta_tensor_no_storage", G_REBUILD_META, -1},
    {"torch._utils._rebuild_sparse_csr_tensor", G_REBUILD_SPARSE_CSR, -1},
    {"_codecs.encode", G_CODECS_ENCODE, -1},
    {"__builtin__.set", G_SET, -1},
    {"builtins.set", G_SET, -1},
    {"__builtin__.frozenset", G_SET, -1},
    {"builtins.frozenset", G_SET, -1},
    {"__builtin__.bytes", G_BYTES, -1},
    {"builtins.bytes", G_BYTES, -1},
    {"torch.float16", G_DTYPE, MT_FLOAT16},
    {"torch.float32", G_DTYPE, MT_FLOAT32},
    {"torch.float64", G_DTYPE, MT_FLOAT64},
    {"torch.bfloat16", G_DTYPE, MT_BFLOAT16},
    {"torch.int8", G_DTYPE, MT_INT8},
    {"torch.int16", G_DTYPE, MT_INT16},
    {"torch.int32", G_DTYPE, MT_INT32},
    {"torch.int64", G_DTYPE, MT_INT64},
    {"torch.uint8", G_DTYPE, MT_UINT8},
    {"torch.bool", G_DTYPE, MT_BOOL},
    {"torch.complex32", G_DTYPE, -1},
    {"torch.complex64", G_DTYPE, -1},
    {"torch.complex128", G_DTYPE, -1},
#define STORAGE(mod, prefix, dt)                                                                                     \
  {mod "." prefix "Storage", G_STORAGE_TYPE, dt}, { mod "." prefix "Tensor", G_TENSOR_TYPE, dt }
    STORAGE("torch", "Float", MT_FLOAT32),
    STORAGE("torch", "Double", MT_FLOAT64),
    STORAGE("torch", "Half", MT_FLOAT16),
    STORAGE("torch", "BFloat16", MT_BFLOAT16),
    STORAGE("torch", "Long", MT_INT64),
    STORAGE("torch", "Int", MT_INT32),
    STORAGE("torch", "Short", MT_INT16),
    STORAGE("torch", "Char", MT_INT8),
    STORAGE("torch", "Byte", MT_UINT8),
    STORAGE("torch", "Bool", MT_BOOL),
    STORAGE("torch", "ComplexFloat", -1),
    STORAGE("torch", "ComplexDouble", -1),
    STORAGE("torch", "QInt8", -1),
    STORAGE("torch", "QUInt8", -1),
    STORAGE("torch", "QInt32", -1),
    STORAGE("torch", "QUInt4x2", -1),
    STORAGE("torch", "QUInt2x4", -1),
    STORAGE("torch.cuda", "Float", MT_FLOAT32),
    STORAGE("torch.cuda", "Double", MT_FLOAT64),
    STORAGE("torch.cuda", "Half", MT_FLOAT16),
    STORAGE("torch.cuda", "BFloat16", MT_BFLOAT16),
    STORAGE("torch.cuda", "Long", MT_INT64),
    STORAGE("torch.cuda", "Int", MT_INT32),
    STORAGE("torch.cuda", "Short", MT_INT16),
    STORAGE("torch.cuda", "Char", MT_INT8),
    STORAGE("torch.cuda", "Byte", MT_UINT8),
    STORAGE("torch.cuda", "Bool", MT_BOOL),
#undef STORAGE
    {"torch.UntypedStorage", G_STORAGE_TYPE, MT_UINT8},
    {"torch.storage.UntypedStorage", G_STORAGE_TYPE, MT_UINT8},
    {"torch.storage._UntypedStorage", G_STORAGE_TYPE, MT_UINT8},
};
#define NGLOBALS (sizeof globals / sizeof globals[0])

const char *pk_global_name(uint32_t g) { return g < NGLOBALS ? globals[g].name : "?"; }

int pk_is_storage_type(const pk_node *x) {
  return x->kind == MT_PT_GLOBAL && x->aux < NGLOBALS && globals[x->aux].kind == G_STORAGE_TYPE;
}

/* ------------------------------------------------------------------ the graph */
void pk_graph_free(pk_graph *g) {
  for (uint32_t i = 1; i < g->n; i++) {
    free(g->nodes[i].p);
    if (g->nodes[i].t)
      mt_tensor_release(g->nodes[i].t);
  }
  free(g->nodes);
  memset(g, 0, sizeof *g);
}

/* ------------------------------------------------------------------ the machine */
typedef struct pk_memo_slot {
  uint32_t key, node; /* node 0: empty */
} pk_memo_slot;

typedef struct pk_vm {
  pk_graph *g;
  mt_in *in;
  uint32_t *stack;
  size_t sp, scap;
  size_t *marks;
  size_t nmarks, mcap;
  pk_memo_slot *memo;
  size_t memo_n, memo_cap; /* entries, slots (a power of two) */
  pk_persistent_fn persistent;
  void *ctx;
  uint64_t op_at; /* position of the opcode being run, for messages */
} pk_vm;

#define BAD(...) pk_bad(vm, __VA_ARGS__)
static mt_status pk_bad(pk_vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static mt_status pk_bad(pk_vm *vm, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mt_fmt_error(MT_EFORMAT, vm->in->op, vm->in->path, "%s (%s, at byte %llu)", msg,
                      vm->in->what ? vm->in->what : "pickle", (unsigned long long)vm->op_at);
}

static mt_status oom(pk_vm *vm) { return mt_error(MT_ENOMEM, "%s: %s: out of memory", vm->in->op, vm->in->path); }

int pk_graph_add(pk_graph *g, int kind, uint32_t *id) {
  if (g->n == 0)
    g->n = 1; /* node 0 stands for none */
  if (g->n >= g->cap) {
    if (g->cap >= (1u << 30))
      return 1;
    uint32_t cap = g->cap ? g->cap * 2 : 64;
    pk_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes)
      return 2;
    if (!g->nodes)
      memset(&nodes[0], 0, sizeof nodes[0]);
    g->nodes = nodes;
    g->cap = cap;
  }
  *id = g->n++;
  pk_node *x = &g->nodes[*id];
  memset(x, 0, sizeof *x);
  x->kind = (uint8_t)kind;
  x->dtype = -1;
  return 0;
}

static mt_status new_node(pk_vm *vm, int kind, uint32_t *id) {
  int r = pk_graph_add(vm->g, kind, id);
  return r == 0 ? MT_OK : r == 1 ? BAD("too many values") : oom(vm);
}

static mt_status push(pk_vm *vm, uint32_t id) {
  if (vm->sp == vm->scap) {
    size_t cap = vm->scap ? vm->scap * 2 : 64;
    uint32_t *s = realloc(vm->stack, cap * sizeof *s);
    if (!s)
      return oom(vm);
    vm->stack = s;
    vm->scap = cap;
  }
  vm->stack[vm->sp++] = id;
  return MT_OK;
}

static mt_status push_new(pk_vm *vm, int kind, uint32_t *id) {
  uint32_t tmp = 0;
  if (!id)
    id = &tmp;
  MT_TRY(new_node(vm, kind, id));
  return push(vm, *id);
}

/* the bottom of the current frame: the stack above the last MARK (Python swaps stacks at MARK) */
static size_t frame(const pk_vm *vm) { return vm->nmarks ? vm->marks[vm->nmarks - 1] : 0; }

static mt_status pop(pk_vm *vm, uint32_t *id) {
  if (vm->sp <= frame(vm))
    return BAD("the pickle's stack is empty where a value is needed");
  *id = vm->stack[--vm->sp];
  return MT_OK;
}

static mt_status top(pk_vm *vm, uint32_t *id) {
  if (vm->sp <= frame(vm))
    return BAD("the pickle's stack is empty where a value is needed");
  *id = vm->stack[vm->sp - 1];
  return MT_OK;
}

/* the value just below stack position `first` (the container APPENDS/SETITEMS/ADDITEMS fill) */
static mt_status below(pk_vm *vm, size_t first, uint32_t *id) {
  if (first <= frame(vm))
    return BAD("the pickle's stack is empty where a value is needed");
  *id = vm->stack[first - 1];
  return MT_OK;
}

/* the items pushed since the last MARK: [*first, vm->sp), and the mark dropped */
static mt_status pop_mark(pk_vm *vm, size_t *first) {
  if (vm->nmarks == 0)
    return BAD("no MARK to pop to");
  *first = vm->marks[--vm->nmarks];
  return MT_OK;
}

static pk_node *N(pk_vm *vm, uint32_t id) { return &vm->g->nodes[id]; }

static mt_status add_items(pk_vm *vm, uint32_t id, const uint32_t *items, size_t k) {
  pk_node *x = N(vm, id);
  if (k == 0)
    return MT_OK;
  if (k > (size_t)UINT32_MAX - x->n)
    return BAD("a container with too many items");
  if (x->n + k > x->cap) {
    size_t cap = x->cap ? x->cap : 4;
    while (cap < x->n + k)
      cap *= 2;
    if (cap > UINT32_MAX)
      cap = UINT32_MAX;
    uint32_t *p = realloc(x->p, cap * sizeof *p);
    if (!p)
      return oom(vm);
    x->p = p;
    x->cap = (uint32_t)cap;
  }
  memcpy((uint32_t *)x->p + x->n, items, k * sizeof *items);
  x->n += (uint32_t)k;
  return MT_OK;
}

/* a container node of `kind` holding stack[first, sp), which are popped */
static mt_status collect(pk_vm *vm, int kind, size_t first) {
  uint32_t id = 0;
  MT_TRY(new_node(vm, kind, &id));
  if (vm->sp > first) /* (the stack may not exist yet: no arithmetic on NULL) */
    MT_TRY(add_items(vm, id, vm->stack + first, vm->sp - first));
  vm->sp = first;
  return push(vm, id);
}

/* memo: open addressing over 32-bit keys */
static mt_status memo_put(pk_vm *vm, uint32_t key, uint32_t node) {
  if ((vm->memo_n + 1) * 2 > vm->memo_cap) {
    size_t cap = vm->memo_cap ? vm->memo_cap * 2 : 64;
    pk_memo_slot *m = calloc(cap, sizeof *m);
    if (!m)
      return oom(vm);
    for (size_t i = 0; i < vm->memo_cap; i++) {
      if (!vm->memo[i].node)
        continue;
      size_t h = (vm->memo[i].key * 2654435761u) & (cap - 1);
      while (m[h].node)
        h = (h + 1) & (cap - 1);
      m[h] = vm->memo[i];
    }
    free(vm->memo);
    vm->memo = m;
    vm->memo_cap = cap;
  }
  size_t h = (key * 2654435761u) & (vm->memo_cap - 1);
  while (vm->memo[h].node && vm->memo[h].key != key)
    h = (h + 1) & (vm->memo_cap - 1);
  if (!vm->memo[h].node)
    vm->memo_n++;
  vm->memo[h].key = key;
  vm->memo[h].node = node;
  return MT_OK;
}

static mt_status memo_get(pk_vm *vm, uint32_t key, uint32_t *node) {
  if (vm->memo_cap) {
    size_t h = (key * 2654435761u) & (vm->memo_cap - 1);
    while (vm->memo[h].node) {
      if (vm->memo[h].key == key) {
        *node = vm->memo[h].node;
        return MT_OK;
      }
      h = (h + 1) & (vm->memo_cap - 1);
    }
  }
  return BAD("the memo has no entry %u", key);
}

/* ------------------------------------------------------------------ reading */
static mt_status rd(pk_vm *vm, void *dst, size_t n) { return mt_in_read(vm->in, dst, n); }
static mt_status rd_u8(pk_vm *vm, uint32_t *v) {
  unsigned char b;
  MT_TRY(rd(vm, &b, 1));
  *v = b;
  return MT_OK;
}
static mt_status rd_le(pk_vm *vm, int bytes, uint64_t *v) {
  unsigned char b[8];
  MT_TRY(rd(vm, b, (size_t)bytes));
  uint64_t x = 0;
  for (int i = bytes; i-- > 0;)
    x = x << 8 | b[i];
  *v = x;
  return MT_OK;
}

/* a string or bytes node of n bytes read from the input */
static mt_status push_bytes(pk_vm *vm, int kind, uint64_t n) {
  if (n > mt_in_left(vm->in))
    return BAD("a string of %llu bytes runs past the end of the pickle", (unsigned long long)n);
  if (n >= UINT32_MAX)
    return BAD("a string too long");
  uint32_t id = 0;
  MT_TRY(new_node(vm, kind, &id));
  char *s = malloc((size_t)n + 1);
  if (!s)
    return oom(vm);
  N(vm, id)->p = s;
  MT_TRY(rd(vm, s, (size_t)n));
  s[n] = 0;
  N(vm, id)->n = (uint32_t)n;
  return push(vm, id);
}

/* an int node from n little-endian two's complement bytes (LONG1/LONG4) */
static mt_status push_long(pk_vm *vm, uint64_t n) {
  if (n > mt_in_left(vm->in))
    return BAD("an integer of %llu bytes runs past the end of the pickle", (unsigned long long)n);
  if (n > 1u << 20)
    return BAD("an integer of %llu bytes", (unsigned long long)n);
  uint32_t id = 0;
  MT_TRY(new_node(vm, MT_PT_INT, &id));
  unsigned char *b = malloc(n ? (size_t)n : 1);
  if (!b)
    return oom(vm);
  pk_node *x = N(vm, id);
  x->p = b;
  x->n = (uint32_t)n;
  MT_TRY(rd(vm, b, (size_t)n));
  /* exact when the value fits int64: every byte past the 8th is the sign extension */
  int neg = n && (b[n - 1] & 0x80);
  int exact = 1;
  for (uint64_t i = 8; i < n; i++)
    if (b[i] != (neg ? 0xFF : 0))
      exact = 0;
  if (n > 8 && exact && ((b[7] & 0x80) != 0) != neg)
    exact = 0;
  if (exact) {
    uint64_t v = neg ? ~(uint64_t)0 : 0;
    for (uint64_t i = 0; i < (n < 8 ? n : 8); i++) {
      v &= ~((uint64_t)0xFF << (8 * i));
      v |= (uint64_t)b[i] << (8 * i);
    }
    x->i = (int64_t)v;
    x->f = (double)x->i;
    x->flags = 1;
  } else {
    double f = 0; /* magnitude as a double, sign applied */
    for (uint64_t i = n; i-- > 0;)
      f = f * 256.0 + (neg ? (double)(uint8_t)~b[i] : (double)b[i]);
    x->f = neg ? -(f + 1.0) : f;
  }
  return push(vm, id);
}

static mt_status push_int(pk_vm *vm, int64_t v) {
  uint32_t id = 0;
  MT_TRY(push_new(vm, MT_PT_INT, &id));
  N(vm, id)->i = v;
  N(vm, id)->f = (double)v;
  N(vm, id)->flags = 1;
  return MT_OK;
}

/* "module\nname\n" of GLOBAL */
static mt_status rd_line(pk_vm *vm, char *out, size_t cap, size_t *len) {
  for (size_t k = 0;; k++) {
    unsigned char c;
    MT_TRY(rd(vm, &c, 1));
    if (c == '\n') {
      *len = k;
      out[k] = 0;
      return MT_OK;
    }
    if (k + 1 >= cap)
      return BAD("a GLOBAL name longer than %zu bytes", cap - 1);
    out[k] = (char)c;
  }
}

static mt_status push_global(pk_vm *vm, const char *module, size_t mlen, const char *name, size_t nlen) {
  char full[600];
  if (mlen + nlen + 2 > sizeof full)
    return BAD("a global name too long");
  memcpy(full, module, mlen);
  full[mlen] = '.';
  memcpy(full + mlen + 1, name, nlen);
  full[mlen + 1 + nlen] = 0;
  size_t flen = mlen + 1 + nlen;
  if (memchr(full, 0, flen) == NULL) {
    for (uint32_t g = 0; g < NGLOBALS; g++) {
      if (strcmp(full, globals[g].name) == 0) {
        uint32_t id = 0;
        MT_TRY(push_new(vm, globals[g].kind == G_DTYPE ? MT_PT_DTYPE : MT_PT_GLOBAL, &id));
        N(vm, id)->aux = g;
        N(vm, id)->dtype = globals[g].dtype;
        return MT_OK;
      }
    }
  }
  char shown[160];
  mt_fmt_printable(shown, sizeof shown, full, flen);
  /* a class of a whole module (torch.save(model)): say what to save instead */
  int whole = strncmp(full, "torch.nn.modules.", 17) == 0 || strncmp(full, "__main__.", 9) == 0;
  return BAD("the pickle asks for the Python global '%s', which is not allowed: only tensors, storages, "
             "collections.OrderedDict, torch.Size, dtypes and plain data are read (PyTorch's weights_only=True "
             "set), and nothing in a file is ever run%s",
             shown,
             whole ? ". A whole module was saved: save its weights in Python with "
                      "torch.save(model.state_dict(), path) and load them with model:load_state_dict(torch.load(path))"
                    : "");
}

/* ------------------------------------------------------------------ calls of the allowed callables */
static int is_kind(pk_vm *vm, uint32_t id, int kind) { return N(vm, id)->kind == kind; }
static int is_seq(pk_vm *vm, uint32_t id) { return is_kind(vm, id, MT_PT_TUPLE) || is_kind(vm, id, MT_PT_LIST); }
static uint32_t item(pk_vm *vm, uint32_t id, uint32_t k) { return ((uint32_t *)N(vm, id)->p)[k]; }

static mt_status int_arg(pk_vm *vm, uint32_t id, const char *fn, const char *what, int64_t *v) {
  pk_node *x = N(vm, id);
  if (x->kind == MT_PT_INT && (x->flags & 1)) {
    *v = x->i;
    return MT_OK;
  }
  if (x->kind == MT_PT_BOOL) {
    *v = x->i;
    return MT_OK;
  }
  return BAD("%s: %s is not an integer", fn, what);
}

/* a tensor's sizes or strides: a tuple or list of ints, or torch.Size (a tuple here) */
static mt_status dims_arg(pk_vm *vm, uint32_t id, const char *fn, const char *what, int64_t *out, int *nd) {
  if (!is_seq(vm, id))
    return BAD("%s: %s is not a tuple", fn, what);
  uint32_t n = N(vm, id)->n;
  if (n > MT_MAX_DIMS)
    return BAD("%s: %u dimensions (moontorch has at most %d)", fn, n, MT_MAX_DIMS);
  for (uint32_t k = 0; k < n; k++) {
    MT_TRY(int_arg(vm, item(vm, id, k), fn, what, &out[k]));
    if (out[k] < 0)
      return BAD("%s: a negative value in %s", fn, what);
  }
  *nd = (int)n;
  return MT_OK;
}

static mt_status bool_arg(pk_vm *vm, uint32_t id, const char *fn, const char *what, int *v) {
  int64_t x = 0;
  MT_TRY(int_arg(vm, id, fn, what, &x));
  *v = x != 0;
  return MT_OK;
}

/* a tensor node over a storage node, with its geometry */
static mt_status make_tensor(pk_vm *vm, const char *fn, uint32_t storage, uint32_t offset, uint32_t size,
                             uint32_t stride, int requires_grad, uint32_t *out) {
  if (!is_kind(vm, storage, MT_PT_STORAGE))
    return BAD("%s: its first argument is not a storage", fn);
  int64_t off = 0, sizes[MT_MAX_DIMS], strides[MT_MAX_DIMS];
  int nd = 0, nd2 = 0;
  MT_TRY(int_arg(vm, offset, fn, "the storage offset", &off));
  if (off < 0)
    return BAD("%s: a negative storage offset", fn);
  MT_TRY(dims_arg(vm, size, fn, "the size", sizes, &nd));
  MT_TRY(dims_arg(vm, stride, fn, "the stride", strides, &nd2));
  if (nd != nd2)
    return BAD("%s: %d sizes but %d strides", fn, nd, nd2);
  int dt = N(vm, storage)->dtype;
  if (requires_grad && !mt_is_float(dt))
    return BAD("%s: a %s tensor that requires grad (only floating tensors can)", fn, mt_dtype_name(dt));
  uint32_t id = 0;
  MT_TRY(new_node(vm, MT_PT_TENSOR, &id));
  int64_t *geo = malloc((2 + 2 * (size_t)nd) * sizeof *geo);
  if (!geo)
    return oom(vm);
  pk_node *x = N(vm, id);
  x->p = geo;
  geo[0] = off;
  geo[1] = nd;
  memcpy(geo + 2, sizes, (size_t)nd * sizeof *sizes);
  memcpy(geo + 2 + nd, strides, (size_t)nd * sizeof *strides);
  x->aux = storage;
  x->dtype = (int16_t)dt;
  x->flags = requires_grad ? MT_PT_REQUIRES_GRAD : 0;
  *out = id;
  return MT_OK;
}

/* Parameter(data, requires_grad=True): a new tensor node of data's, marked */
static mt_status make_parameter(pk_vm *vm, const char *fn, uint32_t data, int requires_grad, uint32_t *out) {
  if (!is_kind(vm, data, MT_PT_TENSOR))
    return BAD("%s: its data is not a tensor", fn);
  pk_node *d = N(vm, data);
  if (requires_grad && !mt_is_float(d->dtype))
    return BAD("%s: a %s parameter that requires grad (only floating tensors can)", fn, mt_dtype_name(d->dtype));
  int64_t *src = d->p;
  size_t len = (2 + 2 * (size_t)src[1]) * sizeof(int64_t);
  int64_t *geo = malloc(len);
  if (!geo)
    return oom(vm);
  memcpy(geo, src, len);
  uint32_t id = 0;
  mt_status st = new_node(vm, MT_PT_TENSOR, &id);
  if (st != MT_OK) {
    free(geo);
    return st;
  }
  pk_node *x = N(vm, id);
  d = N(vm, data); /* (the nodes may have moved) */
  x->p = geo;
  x->aux = d->aux;
  x->dtype = d->dtype;
  x->flags = (uint8_t)(MT_PT_PARAMETER | (requires_grad ? MT_PT_REQUIRES_GRAD : 0));
  *out = id;
  return MT_OK;
}

/* callable(*args): the value it stands for */
static mt_status call(pk_vm *vm, uint32_t fn_id, uint32_t args, uint32_t *out) {
  pk_node *f = N(vm, fn_id);
  if (f->kind != MT_PT_GLOBAL)
    return BAD("REDUCE on a value that is not an allowed callable");
  if (!is_kind(vm, args, MT_PT_TUPLE))
    return BAD("REDUCE with arguments that are not a tuple");
  uint32_t g = f->aux, na = N(vm, args)->n;
  const char *fn = globals[g].name;
#define ARG(k) item(vm, args, k)
  switch (globals[g].kind) {
  case G_ODICT: {
    if (na > 1)
      return BAD("%s takes at most one argument", fn);
    MT_TRY(new_node(vm, MT_PT_ORDERED_DICT, out));
    if (na == 1) { /* OrderedDict([(k, v), ...]) */
      uint32_t pairs = ARG(0);
      if (!is_seq(vm, pairs))
        return BAD("%s: its argument is not a list of pairs", fn);
      for (uint32_t k = 0; k < N(vm, pairs)->n; k++) {
        uint32_t pr = item(vm, pairs, k);
        if (!is_seq(vm, pr) || N(vm, pr)->n != 2)
          return BAD("%s: an item of its argument is not a pair", fn);
        uint32_t kv[2] = {item(vm, pr, 0), item(vm, pr, 1)};
        MT_TRY(add_items(vm, *out, kv, 2));
      }
    }
    return MT_OK;
  }
  case G_SIZE: {
    if (na > 1 || (na == 1 && !is_seq(vm, ARG(0))))
      return BAD("%s takes one tuple", fn);
    MT_TRY(new_node(vm, MT_PT_TUPLE, out));
    if (na == 1) {
      uint32_t src = ARG(0);
      for (uint32_t k = 0; k < N(vm, src)->n; k++) {
        int64_t v;
        uint32_t it = item(vm, src, k);
        MT_TRY(int_arg(vm, it, fn, "a size", &v));
        MT_TRY(add_items(vm, *out, &it, 1));
      }
    }
    return MT_OK;
  }
  case G_REBUILD_TENSOR_V2:
  case G_REBUILD_TENSOR: {
    int v2 = globals[g].kind == G_REBUILD_TENSOR_V2, rg = 0;
    if (v2 ? (na != 6 && na != 7) : na != 4)
      return BAD("%s: %u arguments", fn, na);
    if (v2)
      MT_TRY(bool_arg(vm, ARG(4), fn, "requires_grad", &rg));
    return make_tensor(vm, fn, ARG(0), ARG(1), ARG(2), ARG(3), rg, out);
  }
  case G_PARAMETER:
  case G_REBUILD_PARAMETER:
  case G_REBUILD_PARAMETER_STATE: { /* (data, requires_grad, hooks[, state]): Python attributes left out */
    int rg = 1, k = globals[g].kind;
    if (na < 1 || (k == G_PARAMETER && na > 2) || (k == G_REBUILD_PARAMETER && na > 3) ||
        (k == G_REBUILD_PARAMETER_STATE && na != 4))
      return BAD("%s: %u arguments", fn, na);
    if (na >= 2)
      MT_TRY(bool_arg(vm, ARG(1), fn, "requires_grad", &rg));
    return make_parameter(vm, fn, ARG(0), rg, out);
  }
  case G_REBUILD_META: {
    if (na != 4)
      return BAD("%s: %u arguments", fn, na);
    if (!is_kind(vm, ARG(0), MT_PT_DTYPE))
      return BAD("%s: its first argument is not a dtype", fn);
    int dt = N(vm, ARG(0))->dtype, nd = 0, nd2 = 0, rg = 0;
    if (dt < 0)
      return BAD("a meta tensor of dtype %s, which moontorch does not have", globals[N(vm, ARG(0))->aux].name);
    int64_t sizes[MT_MAX_DIMS], strides[MT_MAX_DIMS];
    MT_TRY(dims_arg(vm, ARG(1), fn, "the size", sizes, &nd));
    MT_TRY(dims_arg(vm, ARG(2), fn, "the stride", strides, &nd2));
    MT_TRY(bool_arg(vm, ARG(3), fn, "requires_grad", &rg));
    if (nd != nd2)
      return BAD("%s: %d sizes but %d strides", fn, nd, nd2);
    if (rg && !mt_is_float(dt))
      return BAD("%s: a %s tensor that requires grad", fn, mt_dtype_name(dt));
    MT_TRY(new_node(vm, MT_PT_META_TENSOR, out));
    int64_t *geo = malloc((2 + 2 * (size_t)nd) * sizeof *geo);
    if (!geo)
      return oom(vm);
    pk_node *x = N(vm, *out);
    x->p = geo;
    geo[0] = 0;
    geo[1] = nd;
    memcpy(geo + 2, sizes, (size_t)nd * sizeof *sizes);
    memcpy(geo + 2 + nd, strides, (size_t)nd * sizeof *strides);
    x->dtype = (int16_t)dt;
    x->flags = rg ? MT_PT_REQUIRES_GRAD : 0;
    return MT_OK;
  }
  case G_CODECS_ENCODE: {
    /* protocol 2's bytes: _codecs.encode(text, 'latin1'), each code point below 256 one byte */
    if (na != 2 || !is_kind(vm, ARG(0), MT_PT_STRING) || !is_kind(vm, ARG(1), MT_PT_STRING))
      return BAD("%s: takes a string and an encoding", fn);
    const char *enc = N(vm, ARG(1))->p;
    if (strcmp(enc, "latin1") != 0 && strcmp(enc, "latin-1") != 0)
      return BAD("%s: only the latin1 encoding is read (bytes values)", fn);
    const unsigned char *s = N(vm, ARG(0))->p;
    uint32_t n = N(vm, ARG(0))->n;
    unsigned char *b = malloc((size_t)n + 1);
    if (!b)
      return oom(vm);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (s[i] < 0x80) {
        b[k++] = s[i];
      } else if ((s[i] == 0xC2 || s[i] == 0xC3) && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
        b[k++] = (unsigned char)((s[i] & 0x03) << 6 | (s[i + 1] & 0x3F));
        i++;
      } else {
        free(b);
        return BAD("%s: a character above U+00FF in a latin1 string", fn);
      }
    }
    b[k] = 0;
    mt_status st = new_node(vm, MT_PT_BYTES, out);
    if (st != MT_OK) {
      free(b);
      return st;
    }
    N(vm, *out)->p = b;
    N(vm, *out)->n = k;
    return MT_OK;
  }
  case G_SET: /* set() or set(list) */
    if (na > 1 || (na == 1 && !is_seq(vm, ARG(0)) && !is_kind(vm, ARG(0), MT_PT_SET)))
      return BAD("%s takes one list", fn);
    MT_TRY(new_node(vm, MT_PT_SET, out));
    if (na == 1) {
      uint32_t src = ARG(0);
      for (uint32_t k = 0; k < N(vm, src)->n; k++) {
        uint32_t it = item(vm, src, k);
        MT_TRY(add_items(vm, *out, &it, 1));
      }
    }
    return MT_OK;
  case G_BYTES: /* bytes() */
    if (na != 0)
      return BAD("%s is read with no arguments only (an empty bytes value)", fn);
    return new_node(vm, MT_PT_BYTES, out);
  case G_REBUILD_SPARSE:
  case G_REBUILD_SPARSE_CSR:
  case G_GET_LAYOUT:
    return BAD("a sparse tensor (%s): moontorch reads dense tensors only", fn);
  case G_TENSOR:
    return BAD("a tensor in PyTorch's legacy form (%s with BUILD): not supported", fn);
  default:
    return BAD("%s cannot be called (it is allowed only as a value)", fn);
  }
#undef ARG
}

/* ------------------------------------------------------------------ opcodes */
enum {
  OP_MARK = '(', OP_STOP = '.', OP_POP = '0', OP_POP_MARK = '1', OP_DUP = '2', OP_BINFLOAT = 'G', OP_BININT = 'J',
  OP_BININT1 = 'K', OP_BININT2 = 'M', OP_NONE = 'N', OP_BINPERSID = 'Q', OP_REDUCE = 'R', OP_BINSTRING = 'T',
  OP_SHORT_BINSTRING = 'U', OP_BINUNICODE = 'X', OP_APPEND = 'a', OP_BUILD = 'b', OP_GLOBAL = 'c', OP_DICT = 'd',
  OP_EMPTY_DICT = '}', OP_APPENDS = 'e', OP_BINGET = 'h', OP_LONG_BINGET = 'j', OP_LIST = 'l', OP_EMPTY_LIST = ']',
  OP_BINPUT = 'q', OP_LONG_BINPUT = 'r', OP_SETITEM = 's', OP_TUPLE = 't', OP_EMPTY_TUPLE = ')', OP_SETITEMS = 'u',
  OP_BINBYTES = 'B', OP_SHORT_BINBYTES = 'C', OP_PROTO = 0x80, OP_NEWOBJ = 0x81, OP_TUPLE1 = 0x85,
  OP_TUPLE2 = 0x86, OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88, OP_NEWFALSE = 0x89, OP_LONG1 = 0x8a, OP_LONG4 = 0x8b,
  OP_SHORT_BINUNICODE = 0x8c, OP_BINUNICODE8 = 0x8d, OP_BINBYTES8 = 0x8e, OP_EMPTY_SET = 0x8f,
  OP_ADDITEMS = 0x90, OP_FROZENSET = 0x91, OP_STACK_GLOBAL = 0x93, OP_MEMOIZE = 0x94, OP_FRAME = 0x95,
};

static mt_status step(pk_vm *vm, int op, int *stop, uint32_t *root) {
  uint64_t u = 0;
  uint32_t a = 0, b = 0, c = 0;
  size_t first = 0;
  switch (op) {
  case OP_PROTO:
    MT_TRY(rd_u8(vm, &a));
    if (a > 5)
      return BAD("pickle protocol %u (at most 5 exists)", a);
    return MT_OK;
  case OP_FRAME: /* a length hint */
    MT_TRY(rd_le(vm, 8, &u));
    if (u > mt_in_left(vm->in))
      return BAD("a frame runs past the end of the pickle");
    return MT_OK;
  case OP_STOP:
    MT_TRY(pop(vm, root));
    *stop = 1;
    return MT_OK;
  case OP_MARK:
    if (vm->nmarks == vm->mcap) {
      size_t cap = vm->mcap ? vm->mcap * 2 : 16;
      size_t *m = realloc(vm->marks, cap * sizeof *m);
      if (!m)
        return oom(vm);
      vm->marks = m;
      vm->mcap = cap;
    }
    vm->marks[vm->nmarks++] = vm->sp;
    return MT_OK;
  case OP_POP:
    if (vm->sp > frame(vm)) {
      vm->sp--;
      return MT_OK;
    }
    MT_TRY(pop_mark(vm, &first));
    vm->sp = first;
    return MT_OK;
  case OP_POP_MARK:
    MT_TRY(pop_mark(vm, &first));
    vm->sp = first;
    return MT_OK;
  case OP_DUP:
    MT_TRY(top(vm, &a));
    return push(vm, a);
  case OP_NONE:
    return push_new(vm, MT_PT_NONE, NULL);
  case OP_NEWTRUE:
  case OP_NEWFALSE:
    MT_TRY(push_new(vm, MT_PT_BOOL, &a));
    N(vm, a)->i = op == OP_NEWTRUE;
    return MT_OK;
  case OP_BININT:
    MT_TRY(rd_le(vm, 4, &u));
    return push_int(vm, (int32_t)(uint32_t)u);
  case OP_BININT1:
    MT_TRY(rd_le(vm, 1, &u));
    return push_int(vm, (int64_t)u);
  case OP_BININT2:
    MT_TRY(rd_le(vm, 2, &u));
    return push_int(vm, (int64_t)u);
  case OP_LONG1:
    MT_TRY(rd_le(vm, 1, &u));
    return push_long(vm, u);
  case OP_LONG4:
    MT_TRY(rd_le(vm, 4, &u));
    if ((int32_t)(uint32_t)u < 0)
      return BAD("LONG4 with a negative length");
    return push_long(vm, u);
  case OP_BINFLOAT: {
    unsigned char be[8];
    MT_TRY(rd(vm, be, 8));
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
      bits = bits << 8 | be[i];
    double d;
    memcpy(&d, &bits, 8);
    MT_TRY(push_new(vm, MT_PT_FLOAT, &a));
    N(vm, a)->f = d;
    return MT_OK;
  }
  case OP_SHORT_BINUNICODE:
  case OP_SHORT_BINSTRING:
  case OP_SHORT_BINBYTES:
    MT_TRY(rd_le(vm, 1, &u));
    return push_bytes(vm, op == OP_SHORT_BINBYTES ? MT_PT_BYTES : MT_PT_STRING, u);
  case OP_BINUNICODE:
  case OP_BINBYTES:
    MT_TRY(rd_le(vm, 4, &u));
    return push_bytes(vm, op == OP_BINBYTES ? MT_PT_BYTES : MT_PT_STRING, u);
  case OP_BINSTRING:
    MT_TRY(rd_le(vm, 4, &u));
    if ((int32_t)(uint32_t)u < 0)
      return BAD("BINSTRING with a negative length");
    return push_bytes(vm, MT_PT_STRING, u);
  case OP_BINUNICODE8:
  case OP_BINBYTES8:
    MT_TRY(rd_le(vm, 8, &u));
    return push_bytes(vm, op == OP_BINBYTES8 ? MT_PT_BYTES : MT_PT_STRING, u);
  case OP_EMPTY_LIST:
    return push_new(vm, MT_PT_LIST, NULL);
  case OP_EMPTY_TUPLE:
    return push_new(vm, MT_PT_TUPLE, NULL);
  case OP_EMPTY_DICT:
    return push_new(vm, MT_PT_DICT, NULL);
  case OP_EMPTY_SET:
    return push_new(vm, MT_PT_SET, NULL);
  case OP_LIST:
  case OP_TUPLE:
  case OP_FROZENSET:
    MT_TRY(pop_mark(vm, &first));
    return collect(vm, op == OP_LIST ? MT_PT_LIST : op == OP_TUPLE ? MT_PT_TUPLE : MT_PT_SET, first);
  case OP_DICT:
    MT_TRY(pop_mark(vm, &first));
    if ((vm->sp - first) % 2)
      return BAD("DICT with an odd number of items");
    return collect(vm, MT_PT_DICT, first);
  case OP_TUPLE1:
  case OP_TUPLE2:
  case OP_TUPLE3: {
    size_t k = (size_t)(op - OP_TUPLE1 + 1);
    if (vm->sp - frame(vm) < k)
      return BAD("TUPLE%zu with fewer than %zu values on the stack", k, k);
    return collect(vm, MT_PT_TUPLE, vm->sp - k);
  }
  case OP_APPEND:
    MT_TRY(pop(vm, &a));
    MT_TRY(top(vm, &b));
    if (!is_kind(vm, b, MT_PT_LIST))
      return BAD("APPEND to a value that is not a list");
    return add_items(vm, b, &a, 1);
  case OP_APPENDS:
  case OP_ADDITEMS:
    MT_TRY(pop_mark(vm, &first));
    MT_TRY(below(vm, first, &b));
    if (!is_kind(vm, b, op == OP_APPENDS ? MT_PT_LIST : MT_PT_SET))
      return BAD(op == OP_APPENDS ? "APPENDS to a value that is not a list" : "ADDITEMS to a value that is not a set");
    MT_TRY(add_items(vm, b, vm->stack + first, vm->sp - first));
    vm->sp = first;
    return MT_OK;
  case OP_SETITEM:
    MT_TRY(pop(vm, &c));
    MT_TRY(pop(vm, &a));
    MT_TRY(top(vm, &b));
    if (!is_kind(vm, b, MT_PT_DICT) && !is_kind(vm, b, MT_PT_ORDERED_DICT))
      return BAD("SETITEM on a value that is not a dict");
    {
      uint32_t kv[2] = {a, c};
      return add_items(vm, b, kv, 2);
    }
  case OP_SETITEMS:
    MT_TRY(pop_mark(vm, &first));
    MT_TRY(below(vm, first, &b));
    if (!is_kind(vm, b, MT_PT_DICT) && !is_kind(vm, b, MT_PT_ORDERED_DICT))
      return BAD("SETITEMS on a value that is not a dict");
    if ((vm->sp - first) % 2)
      return BAD("SETITEMS with an odd number of items");
    MT_TRY(add_items(vm, b, vm->stack + first, vm->sp - first));
    vm->sp = first;
    return MT_OK;
  case OP_BINPUT:
  case OP_LONG_BINPUT:
    MT_TRY(rd_le(vm, op == OP_BINPUT ? 1 : 4, &u));
    MT_TRY(top(vm, &a));
    return memo_put(vm, (uint32_t)u, a);
  case OP_MEMOIZE:
    MT_TRY(top(vm, &a));
    if (vm->memo_n >= UINT32_MAX)
      return BAD("memo full");
    return memo_put(vm, (uint32_t)vm->memo_n, a);
  case OP_BINGET:
  case OP_LONG_BINGET:
    MT_TRY(rd_le(vm, op == OP_BINGET ? 1 : 4, &u));
    MT_TRY(memo_get(vm, (uint32_t)u, &a));
    return push(vm, a);
  case OP_GLOBAL: {
    char module[256], name[256];
    size_t ml = 0, nl = 0;
    MT_TRY(rd_line(vm, module, sizeof module, &ml));
    MT_TRY(rd_line(vm, name, sizeof name, &nl));
    return push_global(vm, module, ml, name, nl);
  }
  case OP_STACK_GLOBAL:
    MT_TRY(pop(vm, &b));
    MT_TRY(pop(vm, &a));
    if (!is_kind(vm, a, MT_PT_STRING) || !is_kind(vm, b, MT_PT_STRING))
      return BAD("STACK_GLOBAL with a module or name that is not a string");
    return push_global(vm, N(vm, a)->p, N(vm, a)->n, N(vm, b)->p, N(vm, b)->n);
  case OP_REDUCE:
    MT_TRY(pop(vm, &a));
    MT_TRY(pop(vm, &b));
    MT_TRY(call(vm, b, a, &c));
    return push(vm, c);
  case OP_NEWOBJ:
    MT_TRY(pop(vm, &a));
    MT_TRY(pop(vm, &b));
    if (!is_kind(vm, b, MT_PT_GLOBAL) || globals[N(vm, b)->aux].kind != G_PARAMETER)
      return BAD("NEWOBJ of a class other than torch.nn.Parameter");
    MT_TRY(call(vm, b, a, &c));
    return push(vm, c);
  case OP_BUILD:
    MT_TRY(pop(vm, &a)); /* state */
    MT_TRY(top(vm, &b)); /* instance */
    if (!is_kind(vm, b, MT_PT_ORDERED_DICT))
      return BAD("BUILD on a value that is not an OrderedDict (only an OrderedDict's attributes are set)");
    if (is_kind(vm, a, MT_PT_DICT)) { /* {'_metadata': ...}: keep _metadata */
      for (uint32_t k = 0; k + 1 < N(vm, a)->n; k += 2) {
        pk_node *key = N(vm, item(vm, a, k));
        if (key->kind == MT_PT_STRING && key->n == 9 && memcmp(key->p, "_metadata", 9) == 0)
          N(vm, b)->aux = item(vm, a, k + 1);
      }
      return MT_OK;
    }
    if (is_kind(vm, a, MT_PT_NONE))
      return MT_OK;
    return BAD("BUILD of an OrderedDict with a state that is not a dict");
  case OP_BINPERSID:
    MT_TRY(pop(vm, &a));
    if (!vm->persistent)
      return BAD("a persistent id where none is expected");
    MT_TRY(vm->persistent(vm->ctx, vm->g, a, &c));
    return push(vm, c);
  default: {
    char c0 = (op >= 0x20 && op < 0x7f) ? (char)op : '?';
    return BAD("unsupported pickle opcode 0x%02x ('%c')", op, c0);
  }
  }
}

mt_status pk_load(pk_graph *g, mt_in *in, pk_persistent_fn persistent, void *ctx, uint32_t *root) {
  pk_vm vm0, *vm = &vm0;
  memset(vm, 0, sizeof *vm);
  vm->g = g;
  vm->in = in;
  vm->persistent = persistent;
  vm->ctx = ctx;
  mt_status st = MT_OK;
  int stop = 0;
  *root = 0;
  while (!stop) {
    vm->op_at = in->pos;
    unsigned char op;
    if (mt_in_left(in) == 0) {
      st = BAD("the pickle ends without STOP");
      break;
    }
    if ((st = mt_in_read(in, &op, 1)) != MT_OK)
      break;
    if ((st = step(vm, op, &stop, root)) != MT_OK)
      break;
  }
  free(vm->stack);
  free(vm->marks);
  free(vm->memo);
  return st;
}
