/* program.c -- moontorch programs (.mtp, issue 26): a model exported by torch.export, run from C
 * without Lua (mt_program_load / mt_program_run; tools/moontorch_run.c is the command).
 *
 * The file is a torch.save checkpoint (core/checkpoint.c: versioned, checksummed, made only of
 * plain values and tensors, so loading it runs nothing) holding one table:
 *   format = 'moontorch.program', version = 1
 *   values    = { {dtype = 'float32', shape = {1, 1, 28, 28}}, ... }   every value's type, by id 1..V
 *   inputs    = { {name = 'x', value = 1}, ... }
 *   constants = { {value = 2, tensor = <tensor>}, ... }               weights (contiguous, CPU)
 *   nodes     = { {op = 'convolution', inputs = {1, 2, 3}, outputs = {4}, attrs = {...}}, ... }
 *   outputs   = { 9, ... }                                             value ids
 * Each value is defined once (an input, a constant or a node's output), nodes come in an order in
 * which every input is defined before it is read, and every dim in an attribute counts from 0.
 * The ops are the op table's (core/moontorch.h's MT_OP_LIST, by name: their front doors run them)
 * and a few more front doors (adaptive_avg_pool); their attributes, per op, are in load_node.
 *
 * Loading checks all of that (and every value's declared dtype and shape) and plans the run once:
 * each value's last reader, and, for the ops that write into a given result (elementwise ops,
 * products, cat), a buffer of its own among a few reused ones (greedy first fit over the values'
 * lifetimes, views of a value keeping its buffer alive); the buffers are allocated at the first
 * run and kept. Other results are released after their last reader. A run checks its inputs
 * against the declared types, and every result against its value's declared dtype and shape. */
#include "../mt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define OPL "program_load"
#define OPR "program_run"
#define MAX_DEPTH 32
#define MAX_VALUES (1 << 24)

/* ------------------------------------------------------------------ the file's value tree */
enum { TV_NONE, TV_BOOL, TV_NUMBER, TV_STRING, TV_TABLE, TV_TENSOR };
typedef struct tv {
  int kind;
  double num;
  const char *str; /* valid while the reader lives */
  uint64_t len;
  uint32_t *kv; /* table: key, value, key, value ... (tree indices) */
  uint32_t n;   /* pairs */
  mt_tensor *t;
} tv;

typedef struct tree {
  tv *v;
  uint32_t n, cap;
  uint32_t *by_id; /* checkpoint id -> tree index (tables and tensors) */
  uint32_t nid, cid;
  const char *path;
} tree;

#define TBAD(...) mt_error(MT_EFORMAT, OPL ": %s: " __VA_ARGS__)

static void tree_free(tree *t) {
  for (uint32_t i = 0; i < t->n; i++) {
    free(t->v[i].kv);
    if (t->v[i].t)
      mt_tensor_release(t->v[i].t);
  }
  free(t->v);
  free(t->by_id);
  memset(t, 0, sizeof *t);
}

static mt_status tree_new(tree *t, uint32_t *idx) {
  if (t->n == t->cap) {
    if (t->cap >= MAX_VALUES)
      return TBAD("too many values in the file", t->path);
    uint32_t cap = t->cap ? t->cap * 2 : 256;
    tv *v = realloc(t->v, (size_t)cap * sizeof *v);
    if (!v)
      return mt_error(MT_ENOMEM, OPL ": out of memory");
    t->v = v;
    t->cap = cap;
  }
  *idx = t->n++;
  memset(&t->v[*idx], 0, sizeof(tv));
  return MT_OK;
}

static mt_status tree_id(tree *t, uint32_t id, uint32_t idx) {
  if (id >= t->cid) {
    uint32_t cap = t->cid ? t->cid : 64;
    while (cap <= id)
      cap *= 2;
    uint32_t *b = realloc(t->by_id, (size_t)cap * sizeof *b);
    if (!b)
      return mt_error(MT_ENOMEM, OPL ": out of memory");
    memset(b + t->cid, 0xff, (size_t)(cap - t->cid) * sizeof *b);
    t->by_id = b;
    t->cid = cap;
  }
  t->by_id[id] = idx;
  return MT_OK;
}

static mt_status tree_read(tree *t, mt_ckpt_reader *r, int depth, uint32_t *out) {
  if (depth > MAX_DEPTH)
    return TBAD("nested deeper than a program is", t->path);
  mt_ckpt_value v;
  MT_TRY(mt_ckpt_read_value(r, &v));
  if (v.tag == MT_CKPT_REF) {
    if (v.id >= t->cid || t->by_id[v.id] == UINT32_MAX)
      return TBAD("a reference to a value that is not a table or tensor", t->path);
    *out = t->by_id[v.id];
    return MT_OK;
  }
  uint32_t i;
  if (v.tag == MT_CKPT_TENSOR) {
    mt_status s = tree_new(t, &i);
    if (s != MT_OK) {
      mt_tensor_release(v.tensor);
      return s;
    }
    t->v[i].kind = TV_TENSOR;
    t->v[i].t = v.tensor;
    *out = i;
    return tree_id(t, v.id, i);
  }
  MT_TRY(tree_new(t, &i));
  *out = i;
  switch (v.tag) {
  case MT_CKPT_NIL:
    return MT_OK;
  case MT_CKPT_TRUE:
  case MT_CKPT_FALSE:
    t->v[i].kind = TV_BOOL;
    t->v[i].num = v.tag == MT_CKPT_TRUE;
    return MT_OK;
  case MT_CKPT_NUMBER:
    t->v[i].kind = TV_NUMBER;
    t->v[i].num = v.number;
    return MT_OK;
  case MT_CKPT_STRING:
    t->v[i].kind = TV_STRING;
    t->v[i].str = v.str;
    t->v[i].len = v.count;
    return MT_OK;
  case MT_CKPT_TABLE: {
    t->v[i].kind = TV_TABLE;
    MT_TRY(tree_id(t, v.id, i));
    uint64_t n = v.count;
    if (n > UINT32_MAX / 2)
      return TBAD("a table too large", t->path);
    uint32_t *kv = malloc((size_t)(2 * n + 1) * sizeof *kv);
    if (!kv)
      return mt_error(MT_ENOMEM, OPL ": out of memory");
    t->v[i].kv = kv;
    for (uint64_t k = 0; k < 2 * n; k++) {
      uint32_t x;
      MT_TRY(tree_read(t, r, depth + 1, &x));
      t->v[i].kv[k] = x;
      t->v[i].n = (uint32_t)((k + 1) / 2);
    }
    return MT_OK;
  }
  default:
    return TBAD("a program holds only plain values and tensors (found a class instance)", t->path);
  }
}

/* t[key] (a string key), or 0 when absent (tree index 0 is the root table itself: never a field) */
static uint32_t field(const tree *t, uint32_t tab, const char *key) {
  const tv *x = &t->v[tab];
  if (x->kind != TV_TABLE)
    return 0;
  size_t kl = strlen(key);
  for (uint32_t k = 0; k < x->n; k++) {
    const tv *kk = &t->v[x->kv[2 * k]];
    if (kk->kind == TV_STRING && kk->len == kl && memcmp(kk->str, key, kl) == 0)
      return x->kv[2 * k + 1];
  }
  return 0;
}

/* t[i] for i = 1..: an array's length (its integer keys must be exactly 1..n) */
static mt_status array(const tree *t, uint32_t tab, const char *what, uint32_t **items, uint32_t *n) {
  const tv *x = &t->v[tab];
  *n = 0;
  *items = NULL;
  if (tab == 0 || x->kind != TV_TABLE)
    return mt_error(MT_EFORMAT, OPL ": %s: %s is not a list", t->path, what);
  uint32_t *out = calloc(x->n ? x->n : 1, sizeof *out);
  if (!out)
    return mt_error(MT_ENOMEM, OPL ": out of memory");
  for (uint32_t k = 0; k < x->n; k++) {
    const tv *kk = &t->v[x->kv[2 * k]];
    double d = kk->num;
    if (kk->kind != TV_NUMBER || !(d >= 1 && d <= x->n) || d != floor(d) || out[(uint32_t)d - 1]) {
      free(out);
      return mt_error(MT_EFORMAT, OPL ": %s: %s is not a list", t->path, what);
    }
    out[(uint32_t)d - 1] = x->kv[2 * k + 1] ? x->kv[2 * k + 1] : UINT32_MAX;
  }
  for (uint32_t k = 0; k < x->n; k++)
    if (out[k] == UINT32_MAX)
      out[k] = 0;
  *items = out;
  *n = x->n;
  return MT_OK;
}

static int is_int(const tv *x, int64_t lo, int64_t hi) {
  return x->kind == TV_NUMBER && x->num == floor(x->num) && x->num >= (double)lo && x->num <= (double)hi;
}

/* ------------------------------------------------------------------ the program */
enum {
  PG_UNARY,
  PG_BINARY,
  PG_BINARY_SCALAR,
  PG_MATMUL,
  PG_BMM,
  PG_ADDMM,
  PG_BADDBMM,
  PG_CONV,
  PG_MAX_POOL,
  PG_AVG_POOL,
  PG_ADAPTIVE_AVG_POOL,
  PG_LAYER_NORM,
  PG_SOFTMAX,
  PG_CAT,
  PG_VIEW,
  PG_RESHAPE,
  PG_FLATTEN,
  PG_PERMUTE,
  PG_TRANSPOSE,
  PG_NARROW,
  PG_SELECT,
  PG_UNSQUEEZE,
  PG_CONTIGUOUS,
  PG_EXPAND
};

typedef struct pg_node {
  int kind;
  mt_op op; /* unary, binary: which */
  int nin;
  int32_t in[8]; /* value ids (0: absent) */
  int32_t out;
  int out_planned;        /* writes into its buffer */
  double p1, p2;          /* unary parameters; binary_scalar: the scalar; addmm: beta, alpha */
  int64_t i[MT_MAX_DIMS]; /* sizes, dims, stride / padding / dilation (conv: 3 x 3) ... */
  int ni;
  int64_t a, b, c; /* dims, groups, counts, flags */
  mt_pool_params pool;
  const char *name; /* the op's name, for messages */
} pg_node;

typedef struct pg_value {
  int32_t dtype, ndim;
  int64_t sizes[MT_MAX_DIMS];
  int64_t nbytes;
  int source;     /* 0 undefined, 1 input, 2 constant, 3 node */
  int32_t last;   /* the index of the last node that reads it (-1: none; INT32_MAX: an output) */
  int32_t root;   /* the value whose storage it views (itself when it owns one) */
  int32_t buffer; /* planned buffer (-1: none) */
  int32_t def;    /* the node that makes it (source 3) */
  mt_tensor *constant;
} pg_value;

struct mt_program {
  char *path;
  int nvalues, ninputs, noutputs, nnodes, nbuffers;
  pg_value *values; /* 1..nvalues */
  int32_t *inputs, *outputs;
  char **input_names;
  pg_node *nodes;
  int64_t *buffer_bytes;
  mt_tensor **buffers; /* allocated at the first run */
  mt_tensor **slots;   /* a run's values */
  int32_t *deaths;     /* per node: values released after it, -1 terminated lists packed */
  int32_t *death_at;   /* per node: offset into deaths */
};

#define PBAD(...) mt_error(MT_EFORMAT, OPL ": %s: " __VA_ARGS__)

void mt_program_free(mt_program *p) {
  if (!p)
    return;
  if (p->values)
    for (int v = 1; v <= p->nvalues; v++)
      if (p->values[v].constant)
        mt_tensor_release(p->values[v].constant);
  if (p->buffers)
    for (int b = 0; b < p->nbuffers; b++)
      if (p->buffers[b])
        mt_tensor_release(p->buffers[b]);
  if (p->input_names)
    for (int i = 0; i < p->ninputs; i++)
      free(p->input_names[i]);
  free(p->input_names);
  free(p->values);
  free(p->inputs);
  free(p->outputs);
  free(p->nodes);
  free(p->buffer_bytes);
  free(p->buffers);
  free(p->slots);
  free(p->deaths);
  free(p->death_at);
  free(p->path);
  free(p);
}

static int dtype_of_name(const char *s, uint64_t n) {
  for (int d = 0; d < MT_DTYPE_MAX; d++) {
    const char *nm = mt_dtype_name(d);
    if (mt_dtype_valid(d) && strlen(nm) == n && memcmp(nm, s, n) == 0)
      return d;
  }
  return -1;
}

/* ints of an attribute: a number or a list of numbers, at most max of them, each in [lo, hi] */
static mt_status ints(const mt_program *p, const tree *t, uint32_t attrs, const char *key, int need, int max,
                      int64_t lo, int64_t hi, int64_t *out, int *n, const char *opname) {
  uint32_t x = field(t, attrs, key);
  *n = 0;
  if (!x) {
    if (need)
      return PBAD("%s: its attribute %s is missing", p->path, opname, key);
    return MT_OK;
  }
  if (t->v[x].kind == TV_NUMBER) {
    if (!is_int(&t->v[x], lo, hi))
      return PBAD("%s: its attribute %s is out of range", p->path, opname, key);
    out[0] = (int64_t)t->v[x].num;
    *n = 1;
    return MT_OK;
  }
  uint32_t *items, m;
  MT_TRY(array(t, x, key, &items, &m));
  if ((int)m > max) {
    free(items);
    return PBAD("%s: its attribute %s has %u items (at most %d)", p->path, opname, key, m, max);
  }
  for (uint32_t k = 0; k < m; k++) {
    if (!items[k] || !is_int(&t->v[items[k]], lo, hi)) {
      free(items);
      return PBAD("%s: its attribute %s holds a value out of range", p->path, opname, key);
    }
    out[k] = (int64_t)t->v[items[k]].num;
  }
  *n = (int)m;
  free(items);
  return MT_OK;
}

static mt_status num(const mt_program *p, const tree *t, uint32_t attrs, const char *key, double dflt, double *out,
                     const char *opname) {
  uint32_t x = field(t, attrs, key);
  if (!x) {
    *out = dflt;
    return MT_OK;
  }
  if (t->v[x].kind == TV_BOOL || t->v[x].kind == TV_NUMBER) {
    *out = t->v[x].num;
    return MT_OK;
  }
  return PBAD("%s: its attribute %s is not a number", p->path, opname, key);
}

#define SZ_HI ((int64_t)1 << 40)
/* an integer attribute (dflt when absent; INT64_MIN, which every caller refuses, when out of range) */
static int64_t one_int(const tree *t, uint32_t attrs, const char *key, int64_t dflt) {
  uint32_t x = field(t, attrs, key);
  if (!x)
    return dflt;
  if (t->v[x].kind == TV_BOOL)
    return (int64_t)t->v[x].num;
  if (!is_int(&t->v[x], -SZ_HI, SZ_HI))
    return INT64_MIN;
  return (int64_t)t->v[x].num;
}

#define DIM_LO (-MT_MAX_DIMS)
#define DIM_HI (MT_MAX_DIMS - 1)

/* one node of the file: its op, inputs, output and attributes */
static mt_status load_node(mt_program *p, const tree *t, uint32_t nd, pg_node *n, int index) {
  uint32_t opv = field(t, nd, "op"), attrs = field(t, nd, "attrs");
  if (!opv || t->v[opv].kind != TV_STRING || t->v[opv].len > 40)
    return PBAD("node %d has no op name", p->path, index + 1);
  char name[48];
  memcpy(name, t->v[opv].str, t->v[opv].len);
  name[t->v[opv].len] = 0;
  n->name = NULL;
  if (attrs && t->v[attrs].kind != TV_TABLE)
    return PBAD("node %d (%s): its attrs are not a table", p->path, index + 1, name);
  uint32_t *ins, nin, *outs, nout;
  MT_TRY(array(t, field(t, nd, "inputs"), "a node's inputs", &ins, &nin));
  mt_status st = array(t, field(t, nd, "outputs"), "a node's outputs", &outs, &nout);
  if (st != MT_OK) {
    free(ins);
    return st;
  }
  st = MT_OK;
  if (nin > 8 || nout != 1)
    st = PBAD("node %d (%s): %u inputs and %u outputs (at most 8 and exactly 1)", p->path, index + 1, name, nin, nout);
  for (uint32_t k = 0; st == MT_OK && k < nin; k++) {
    if (!ins[k] || !is_int(&t->v[ins[k]], 0, p->nvalues))
      st = PBAD("node %d (%s): input %u is not a value", p->path, index + 1, name, k + 1);
    else
      n->in[k] = (int32_t)t->v[ins[k]].num;
  }
  if (st == MT_OK && (!outs[0] || !is_int(&t->v[outs[0]], 1, p->nvalues)))
    st = PBAD("node %d (%s): its output is not a value", p->path, index + 1, name);
  if (st == MT_OK)
    n->out = (int32_t)t->v[outs[0]].num;
  free(ins);
  free(outs);
  MT_TRY(st);
  n->nin = (int)nin;
  /* the op */
  int op = -1;
  for (int k = 0; k < mt_op_count(); k++)
    if (strcmp(mt_op_name(k), name) == 0)
      op = k;
  const mt_op_info *info = op >= 0 ? mt_op_info_of(op) : NULL;
  int want = -1; /* inputs the op takes (-1: checked below) */
  int nn;
  if (info && strncmp(info->kind, "UNARY", 5) == 0) {
    n->kind = PG_UNARY;
    n->op = (mt_op)op;
    MT_TRY(num(p, t, attrs, "p1", NAN, &n->p1, name));
    MT_TRY(num(p, t, attrs, "p2", NAN, &n->p2, name));
    want = 1;
  } else if (info && strncmp(info->kind, "BINARY", 6) == 0) {
    n->op = (mt_op)op;
    if (field(t, attrs, "scalar")) {
      n->kind = PG_BINARY_SCALAR;
      MT_TRY(num(p, t, attrs, "scalar", 0, &n->p1, name));
      n->a = one_int(t, attrs, "scalar_kind", 2);
      n->b = one_int(t, attrs, "reverse", 0);
      if (n->a < 0 || n->a > 2 || n->b == INT64_MIN)
        return PBAD("node %d (%s): scalar_kind must be 0, 1 or 2, reverse 0 or 1", p->path, index + 1, name);
      n->b = n->b != 0;
      want = 1;
    } else {
      n->kind = PG_BINARY;
      want = 2;
    }
  } else if (!strcmp(name, "matmul") || !strcmp(name, "mm")) {
    n->kind = PG_MATMUL, want = 2;
  } else if (!strcmp(name, "bmm")) {
    n->kind = PG_BMM, want = 2;
  } else if (!strcmp(name, "addmm") || !strcmp(name, "baddbmm")) {
    n->kind = name[0] == 'a' ? PG_ADDMM : PG_BADDBMM, want = 3;
    MT_TRY(num(p, t, attrs, "beta", 1, &n->p1, name));
    MT_TRY(num(p, t, attrs, "alpha", 1, &n->p2, name));
  } else if (!strcmp(name, "convolution")) {
    n->kind = PG_CONV;
    int64_t v[3] = {0, 0, 0};
    int k1, k2, k3;
    MT_TRY(ints(p, t, attrs, "stride", 1, 3, 1, SZ_HI, v, &k1, name));
    memcpy(n->i, v, sizeof v);
    MT_TRY(ints(p, t, attrs, "padding", 1, 3, 0, SZ_HI, v, &k2, name));
    memcpy(n->i + 3, v, sizeof v);
    MT_TRY(ints(p, t, attrs, "dilation", 1, 3, 1, SZ_HI, v, &k3, name));
    memcpy(n->i + 6, v, sizeof v);
    if (k1 < 1 || k1 != k2 || k1 != k3)
      return PBAD("node %d (%s): stride, padding and dilation must give 1 to 3 spatial dims alike", p->path, index + 1,
                  name);
    n->ni = k1;
    n->a = one_int(t, attrs, "groups", 1);
    if (n->a < 1 || n->a > SZ_HI)
      return PBAD("node %d (%s): groups out of range", p->path, index + 1, name);
    if (nin != 2 && nin != 3)
      return PBAD("node %d (%s): 2 or 3 inputs (input, weight[, bias])", p->path, index + 1, name);
  } else if (!strcmp(name, "max_pool") || !strcmp(name, "avg_pool")) {
    int max = name[0] == 'm';
    n->kind = max ? PG_MAX_POOL : PG_AVG_POOL;
    want = 1;
    mt_pool_params *pp = &n->pool;
    memset(pp, 0, sizeof *pp);
    int64_t v[3] = {0, 0, 0};
    int k1, k2, k3, k4 = 0;
    MT_TRY(ints(p, t, attrs, "kernel", 1, 3, 1, SZ_HI, v, &k1, name));
    memcpy(pp->kernel, v, sizeof v);
    MT_TRY(ints(p, t, attrs, "stride", 1, 3, 1, SZ_HI, v, &k2, name));
    memcpy(pp->stride, v, sizeof v);
    MT_TRY(ints(p, t, attrs, "padding", 1, 3, 0, SZ_HI, v, &k3, name));
    memcpy(pp->padding, v, sizeof v);
    if (max) {
      MT_TRY(ints(p, t, attrs, "dilation", 1, 3, 1, SZ_HI, v, &k4, name));
      memcpy(pp->dilation, v, sizeof v);
    }
    if (k1 < 1 || k1 != k2 || k1 != k3 || (max && k1 != k4))
      return PBAD("node %d (%s): kernel, stride, padding (and dilation) must give 1 to 3 spatial dims alike", p->path,
                  index + 1, name);
    if (!max)
      for (int d = 0; d < 3; d++)
        pp->dilation[d] = 1;
    pp->nsp = k1;
    int64_t cm = one_int(t, attrs, "ceil_mode", 0), cip = one_int(t, attrs, "count_include_pad", 1);
    if (cm == INT64_MIN || cip == INT64_MIN)
      return PBAD("node %d (%s): ceil_mode or count_include_pad out of range", p->path, index + 1, name);
    pp->ceil_mode = cm != 0;
    pp->count_include_pad = cip != 0;
    pp->divisor_override = one_int(t, attrs, "divisor_override", 0);
    if (pp->divisor_override < 0 || pp->divisor_override > SZ_HI)
      return PBAD("node %d (%s): divisor_override out of range", p->path, index + 1, name);
  } else if (!strcmp(name, "adaptive_avg_pool")) {
    n->kind = PG_ADAPTIVE_AVG_POOL, want = 1;
    MT_TRY(ints(p, t, attrs, "sizes", 1, 3, 0, SZ_HI, n->i, &n->ni, name));
    if (n->ni < 1)
      return PBAD("node %d (%s): sizes must give 1 to 3 spatial dims", p->path, index + 1, name);
  } else if (!strcmp(name, "layer_norm")) {
    n->kind = PG_LAYER_NORM;
    MT_TRY(ints(p, t, attrs, "nnorm", 1, 1, 1, MT_MAX_DIMS, &n->a, &nn, name));
    MT_TRY(num(p, t, attrs, "eps", 1e-5, &n->p1, name));
    if (nin != 1 && nin != 3)
      return PBAD("node %d (%s): 1 or 3 inputs (input[, weight, bias])", p->path, index + 1, name);
  } else if (!strcmp(name, "softmax") || !strcmp(name, "log_softmax")) {
    n->kind = PG_SOFTMAX, want = 1;
    n->b = name[0] == 'l';
    MT_TRY(ints(p, t, attrs, "dim", 1, 1, DIM_LO, DIM_HI, &n->a, &nn, name));
  } else if (!strcmp(name, "cat")) {
    n->kind = PG_CAT;
    MT_TRY(ints(p, t, attrs, "dim", 1, 1, DIM_LO, DIM_HI, &n->a, &nn, name));
    if (nin < 1)
      return PBAD("node %d (%s): no inputs", p->path, index + 1, name);
  } else if (!strcmp(name, "view") || !strcmp(name, "reshape") || !strcmp(name, "expand")) {
    n->kind = name[0] == 'v' ? PG_VIEW : name[0] == 'r' ? PG_RESHAPE : PG_EXPAND;
    want = 1;
    MT_TRY(ints(p, t, attrs, "sizes", 1, MT_MAX_DIMS, -1, SZ_HI, n->i, &n->ni, name));
  } else if (!strcmp(name, "flatten")) {
    n->kind = PG_FLATTEN, want = 1;
    MT_TRY(ints(p, t, attrs, "start", 1, 1, DIM_LO, DIM_HI, &n->a, &nn, name));
    MT_TRY(ints(p, t, attrs, "end", 1, 1, DIM_LO, DIM_HI, &n->b, &nn, name));
  } else if (!strcmp(name, "permute")) {
    n->kind = PG_PERMUTE, want = 1;
    MT_TRY(ints(p, t, attrs, "dims", 1, MT_MAX_DIMS, DIM_LO, DIM_HI, n->i, &n->ni, name));
  } else if (!strcmp(name, "transpose")) {
    n->kind = PG_TRANSPOSE, want = 1;
    MT_TRY(ints(p, t, attrs, "dim0", 1, 1, DIM_LO, DIM_HI, &n->a, &nn, name));
    MT_TRY(ints(p, t, attrs, "dim1", 1, 1, DIM_LO, DIM_HI, &n->b, &nn, name));
  } else if (!strcmp(name, "narrow")) {
    n->kind = PG_NARROW, want = 1;
    MT_TRY(ints(p, t, attrs, "dim", 1, 1, DIM_LO, DIM_HI, &n->a, &nn, name));
    MT_TRY(ints(p, t, attrs, "start", 1, 1, -SZ_HI, SZ_HI, &n->b, &nn, name));
    MT_TRY(ints(p, t, attrs, "length", 1, 1, 0, SZ_HI, &n->c, &nn, name));
  } else if (!strcmp(name, "select")) {
    n->kind = PG_SELECT, want = 1;
    MT_TRY(ints(p, t, attrs, "dim", 1, 1, DIM_LO, DIM_HI, &n->a, &nn, name));
    MT_TRY(ints(p, t, attrs, "index", 1, 1, -SZ_HI, SZ_HI, &n->b, &nn, name));
  } else if (!strcmp(name, "unsqueeze")) {
    n->kind = PG_UNSQUEEZE, want = 1;
    MT_TRY(ints(p, t, attrs, "dim", 1, 1, -MT_MAX_DIMS - 1, MT_MAX_DIMS, &n->a, &nn, name));
  } else if (!strcmp(name, "contiguous")) {
    n->kind = PG_CONTIGUOUS, want = 1;
  } else {
    char shown[64];
    snprintf(shown, sizeof shown, "%s", name);
    for (char *c = shown; *c; c++)
      if (*c < 0x20 || *c > 0x7e)
        *c = '?';
    return mt_error(MT_ENOTIMPL, OPL ": %s: node %d: the op '%s' is not one a program can hold", p->path, index + 1,
                    shown);
  }
  if (want >= 0 && n->nin != want)
    return PBAD("node %d (%s): %d inputs, %d expected", p->path, index + 1, name, n->nin, want);
  for (int k = 0; k < n->nin; k++)
    if (n->in[k] < 1)
      return PBAD("node %d (%s): input %d is not a value", p->path, index + 1, name, k + 1);
  /* the name kept for messages: the op table's own string when it is one, else the kind's */
  n->name = info ? info->name
                 : (const char *[]){"matmul",      "bmm",      "addmm",     "baddbmm",
                                    "convolution", "max_pool", "avg_pool",  "adaptive_avg_pool",
                                    "layer_norm",  "softmax",  "cat",       "view",
                                    "reshape",     "flatten",  "permute",   "transpose",
                                    "narrow",      "select",   "unsqueeze", "contiguous",
                                    "expand"}[n->kind == PG_MATMUL              ? 0
                                              : n->kind == PG_BMM               ? 1
                                              : n->kind == PG_ADDMM             ? 2
                                              : n->kind == PG_BADDBMM           ? 3
                                              : n->kind == PG_CONV              ? 4
                                              : n->kind == PG_MAX_POOL          ? 5
                                              : n->kind == PG_AVG_POOL          ? 6
                                              : n->kind == PG_ADAPTIVE_AVG_POOL ? 7
                                              : n->kind == PG_LAYER_NORM        ? 8
                                              : n->kind == PG_SOFTMAX           ? 9
                                              : n->kind == PG_CAT               ? 10
                                              : n->kind == PG_VIEW              ? 11
                                              : n->kind == PG_RESHAPE           ? 12
                                              : n->kind == PG_FLATTEN           ? 13
                                              : n->kind == PG_PERMUTE           ? 14
                                              : n->kind == PG_TRANSPOSE         ? 15
                                              : n->kind == PG_NARROW            ? 16
                                              : n->kind == PG_SELECT            ? 17
                                              : n->kind == PG_UNSQUEEZE         ? 18
                                              : n->kind == PG_CONTIGUOUS        ? 19
                                                                                : 20];
  return MT_OK;
}

/* a value's declared dtype and shape */
static mt_status load_value(mt_program *p, const tree *t, uint32_t x, pg_value *v, int id) {
  uint32_t d = field(t, x, "dtype"), s = field(t, x, "shape");
  if (!d || t->v[d].kind != TV_STRING || (v->dtype = dtype_of_name(t->v[d].str, t->v[d].len)) < 0)
    return PBAD("value %d has no dtype moontorch knows", p->path, id);
  uint32_t *items, n;
  MT_TRY(array(t, s, "a value's shape", &items, &n));
  if (n > MT_MAX_DIMS) {
    free(items);
    return PBAD("value %d has %u dims (at most %d)", p->path, id, n, MT_MAX_DIMS);
  }
  int64_t numel = 1;
  for (uint32_t k = 0; k < n; k++) {
    if (!items[k] || !is_int(&t->v[items[k]], 0, SZ_HI) ||
        __builtin_mul_overflow(numel, (int64_t)t->v[items[k]].num, &numel) || numel > SZ_HI) {
      free(items);
      return PBAD("value %d has a size out of range", p->path, id);
    }
    v->sizes[k] = (int64_t)t->v[items[k]].num;
  }
  free(items);
  v->ndim = (int32_t)n;
  v->nbytes = numel * (int64_t)mt_itemsize(v->dtype);
  v->last = -1;
  v->root = id;
  v->buffer = -1;
  return MT_OK;
}

static int is_view_kind(int k) {
  return k == PG_VIEW || k == PG_RESHAPE || k == PG_FLATTEN || k == PG_PERMUTE || k == PG_TRANSPOSE || k == PG_NARROW ||
         k == PG_SELECT || k == PG_UNSQUEEZE || k == PG_CONTIGUOUS || k == PG_EXPAND;
}
static int writes_out(int k) {
  return k == PG_UNARY || k == PG_BINARY || k == PG_BINARY_SCALAR || k == PG_MATMUL || k == PG_BMM || k == PG_ADDMM ||
         k == PG_BADDBMM || k == PG_CAT;
}

/* lifetimes, buffers, and the values each node releases */
static mt_status plan(mt_program *p) {
  pg_value *V = p->values;
  for (int i = 0; i < p->nnodes; i++) {
    pg_node *n = &p->nodes[i];
    for (int k = 0; k < n->nin; k++)
      V[n->in[k]].last = i;
    if (is_view_kind(n->kind))
      V[n->out].root = V[n->in[0]].root;
  }
  for (int o = 0; o < p->noutputs; o++)
    V[p->outputs[o]].last = INT32_MAX;
  /* a storage lives while any value viewing it does: its root's life is the longest of theirs */
  int32_t *life = malloc((size_t)(p->nvalues + 1) * sizeof *life);
  if (!life)
    return mt_error(MT_ENOMEM, OPL ": out of memory");
  for (int v = 1; v <= p->nvalues; v++)
    life[v] = -1;
  for (int v = 1; v <= p->nvalues; v++) {
    int r = V[v].root;
    int32_t end = V[v].last < 0 ? (V[v].source == 3 ? 0 : -1) : V[v].last;
    if (end > life[r])
      life[r] = end;
  }
  /* buffers: first fit, by bytes, over the nodes in order; results handed to the caller (outputs, and
   * storages outputs view) never take one */
  typedef struct {
    int64_t bytes;
    int32_t free_after;
  } buf;
  buf *bufs = NULL;
  int nb = 0, cb = 0;
  mt_status st = MT_OK;
  for (int i = 0; i < p->nnodes && st == MT_OK; i++) {
    pg_node *n = &p->nodes[i];
    pg_value *v = &V[n->out];
    if (!writes_out(n->kind) || life[n->out] == INT32_MAX || v->nbytes == 0)
      continue;
    if (nb >= 4096) { /* (a program this large: the rest allocate as they go) */
      int any_free = 0;
      for (int b = 0; b < nb && !any_free; b++)
        any_free = bufs[b].free_after < i && bufs[b].bytes >= v->nbytes;
      if (!any_free)
        continue;
    }
    int pick = -1;
    for (int b = 0; b < nb; b++)
      if (bufs[b].free_after < i && bufs[b].bytes >= v->nbytes && (pick < 0 || bufs[b].bytes < bufs[pick].bytes))
        pick = b;
    if (pick < 0) {
      if (nb == cb) {
        cb = cb ? 2 * cb : 16;
        buf *nbufs = realloc(bufs, (size_t)cb * sizeof *bufs);
        if (!nbufs) {
          st = mt_error(MT_ENOMEM, OPL ": out of memory");
          break;
        }
        bufs = nbufs;
      }
      pick = nb++;
      bufs[pick].bytes = v->nbytes;
    }
    /* it lives until the last reader of anything viewing it, and never past the node after its own
     * (a value nobody reads is dropped at once) */
    bufs[pick].free_after = life[n->out] < i ? i : life[n->out];
    v->buffer = pick;
    n->out_planned = 1;
  }
  free(life);
  if (st == MT_OK) {
    p->nbuffers = nb;
    p->buffer_bytes = malloc((size_t)(nb ? nb : 1) * sizeof(int64_t));
    p->buffers = calloc((size_t)(nb ? nb : 1), sizeof(mt_tensor *));
    if (!p->buffer_bytes || !p->buffers)
      st = mt_error(MT_ENOMEM, OPL ": out of memory");
    for (int b = 0; st == MT_OK && b < nb; b++)
      p->buffer_bytes[b] = bufs[b].bytes;
  }
  free(bufs);
  MT_TRY(st);
  /* what each node releases: the values (not outputs, not constants) whose last reader it is, and
   * those no node reads, after the node that made them (lists packed, each ended by 0) */
  p->death_at = calloc((size_t)p->nnodes + 1, sizeof *p->death_at);
  p->deaths = malloc((size_t)(p->nvalues + p->nnodes + 1) * sizeof *p->deaths);
  int32_t *when = malloc((size_t)(p->nvalues + 1) * sizeof *when);
  if (!p->death_at || !p->deaths || !when) {
    free(when);
    return mt_error(MT_ENOMEM, OPL ": out of memory");
  }
  for (int v = 1; v <= p->nvalues; v++) {
    when[v] = -1;
    if (V[v].source == 2 || V[v].last == INT32_MAX)
      continue;
    if (V[v].last >= 0)
      when[v] = V[v].last;
    else if (V[v].source == 3)
      when[v] = V[v].def;
    if (when[v] >= 0)
      p->death_at[when[v] + 1]++;
  }
  for (int i = 0; i < p->nnodes; i++) /* offsets: each list has its values and a 0 */
    p->death_at[i + 1] += p->death_at[i] + 1;
  int32_t *fill = calloc((size_t)p->nnodes + 1, sizeof *fill);
  if (!fill) {
    free(when);
    return mt_error(MT_ENOMEM, OPL ": out of memory");
  }
  for (int v = 1; v <= p->nvalues; v++)
    if (when[v] >= 0)
      p->deaths[p->death_at[when[v]] + fill[when[v]]++] = v;
  for (int i = 0; i < p->nnodes; i++)
    p->deaths[p->death_at[i] + fill[i]] = 0;
  free(fill);
  free(when);
  return MT_OK;
}

static mt_status build(mt_program *p, const tree *t) {
  uint32_t root = 0;
  uint32_t f = field(t, root, "format"), ver = field(t, root, "version");
  if (t->v[root].kind != TV_TABLE || !f || t->v[f].kind != TV_STRING || t->v[f].len != 17 ||
      memcmp(t->v[f].str, "moontorch.program", 17) != 0)
    return PBAD("not a moontorch program (a torch.save file, but not of torch.export)", p->path);
  if (!ver || !is_int(&t->v[ver], 1, 1))
    return mt_error(MT_EFORMAT, OPL ": %s: program version %g, this build reads version 1", p->path,
                    ver && t->v[ver].kind == TV_NUMBER ? t->v[ver].num : -1.0);
  uint32_t *vals, nv, *ins = NULL, nin, *consts = NULL, nc, *nodes = NULL, nn, *outs = NULL, no;
  MT_TRY(array(t, field(t, root, "values"), "values", &vals, &nv));
  mt_status st = MT_OK;
  if (nv < 1 || nv > MAX_VALUES)
    st = PBAD("%u values", p->path, nv);
  if (st == MT_OK)
    st = array(t, field(t, root, "inputs"), "inputs", &ins, &nin);
  if (st == MT_OK)
    st = array(t, field(t, root, "constants"), "constants", &consts, &nc);
  if (st == MT_OK)
    st = array(t, field(t, root, "nodes"), "nodes", &nodes, &nn);
  if (st == MT_OK)
    st = array(t, field(t, root, "outputs"), "outputs", &outs, &no);
  if (st == MT_OK && (no < 1 || nin > 64 || no > 64))
    st = PBAD("%u inputs and %u outputs (1 to 64 outputs, at most 64 inputs)", p->path, nin, no);
  if (st == MT_OK) {
    p->nvalues = (int)nv;
    p->ninputs = (int)nin;
    p->noutputs = (int)no;
    p->nnodes = (int)nn;
    p->values = calloc((size_t)nv + 1, sizeof *p->values);
    p->inputs = calloc(nin ? nin : 1, sizeof *p->inputs);
    p->input_names = calloc(nin ? nin : 1, sizeof *p->input_names);
    p->outputs = calloc(no, sizeof *p->outputs);
    p->nodes = calloc(nn ? nn : 1, sizeof *p->nodes);
    p->slots = calloc((size_t)nv + 1, sizeof *p->slots);
    if (!p->values || !p->inputs || !p->input_names || !p->outputs || !p->nodes || !p->slots)
      st = mt_error(MT_ENOMEM, OPL ": out of memory");
  }
  for (uint32_t v = 0; st == MT_OK && v < nv; v++)
    st = vals[v] ? load_value(p, t, vals[v], &p->values[v + 1], (int)v + 1) : PBAD("value %u is nil", p->path, v + 1);
    /* define: inputs, constants, then the nodes' outputs in order */
#define DEFINE(id, src, what)                                                                                          \
  do {                                                                                                                 \
    if ((id) < 1 || (id) > p->nvalues)                                                                                 \
      st = PBAD("%s names value %d, which does not exist", p->path, what, (int)(id));                                  \
    else if (p->values[id].source)                                                                                     \
      st = PBAD("value %d is defined twice", p->path, (int)(id));                                                      \
    else                                                                                                               \
      p->values[id].source = (src);                                                                                    \
  } while (0)
  for (uint32_t i = 0; st == MT_OK && i < nin; i++) {
    uint32_t name = field(t, ins[i], "name"), val = field(t, ins[i], "value");
    if (!val || !is_int(&t->v[val], 1, nv) || !name || t->v[name].kind != TV_STRING || t->v[name].len > 256) {
      st = PBAD("input %u is not {name =, value =}", p->path, i + 1);
      break;
    }
    p->inputs[i] = (int32_t)t->v[val].num;
    DEFINE(p->inputs[i], 1, "an input");
    if (st == MT_OK && !(p->input_names[i] = strndup(t->v[name].str, t->v[name].len)))
      st = mt_error(MT_ENOMEM, OPL ": out of memory");
  }
  for (uint32_t i = 0; st == MT_OK && i < nc; i++) {
    uint32_t val = field(t, consts[i], "value"), ten = field(t, consts[i], "tensor");
    if (!val || !is_int(&t->v[val], 1, nv) || !ten || t->v[ten].kind != TV_TENSOR) {
      st = PBAD("constant %u is not {value =, tensor =}", p->path, i + 1);
      break;
    }
    int id = (int)t->v[val].num;
    DEFINE(id, 2, "a constant");
    if (st != MT_OK)
      break;
    pg_value *v = &p->values[id];
    mt_tensor *x = t->v[ten].t;
    int same = x->_dtype == v->dtype && x->_ndim == v->ndim;
    for (int d = 0; same && d < v->ndim; d++)
      same = x->_sizes[d] == v->sizes[d];
    if (!same)
      st = PBAD("constant %u's tensor differs from value %d's declared dtype or shape", p->path, i + 1, id);
    else
      v->constant = mt_tensor_retain(x);
  }
  for (uint32_t i = 0; st == MT_OK && i < nn; i++) {
    pg_node *n = &p->nodes[i];
    if (!nodes[i]) {
      st = PBAD("node %u is nil", p->path, i + 1);
      break;
    }
    if ((st = load_node(p, t, nodes[i], n, (int)i)) != MT_OK)
      break;
    for (int k = 0; st == MT_OK && k < n->nin; k++)
      if (!p->values[n->in[k]].source)
        st = PBAD("node %u (%s) reads value %d before it is defined", p->path, i + 1, n->name, n->in[k]);
    if (st == MT_OK)
      DEFINE(n->out, 3, "a node's output");
    if (st == MT_OK)
      p->values[n->out].def = (int32_t)i;
  }
  for (uint32_t i = 0; st == MT_OK && i < no; i++) {
    if (!outs[i] || !is_int(&t->v[outs[i]], 1, nv) || !p->values[(int)t->v[outs[i]].num].source)
      st = PBAD("output %u is not a defined value", p->path, i + 1);
    else
      p->outputs[i] = (int32_t)t->v[outs[i]].num;
  }
#undef DEFINE
  free(vals);
  free(ins);
  free(consts);
  free(nodes);
  free(outs);
  MT_TRY(st);
  return plan(p);
}

mt_status mt_program_load(const char *path, mt_program **out) {
  if (!path || !out)
    return mt_error(MT_EINVAL, OPL ": path is NULL");
  *out = NULL;
  mt_ckpt_reader *r = NULL;
  char msg[1100];
  mt_status st = mt_ckpt_reader_open(path, 0, &r);
  if (st != MT_OK) { /* "load: <path>: ..." -> "program_load: <path>: ..." */
    snprintf(msg, sizeof msg, "%s", strncmp(mt_last_error(), "load", 4) == 0 ? mt_last_error() + 4 : mt_last_error());
    return mt_error(st, OPL "%s", msg);
  }
  mt_program *p = calloc(1, sizeof *p);
  tree t = {0};
  t.path = path;
  if (!p || !(p->path = strdup(path)))
    st = mt_error(MT_ENOMEM, OPL ": out of memory");
  uint32_t root;
  if (st == MT_OK)
    st = tree_read(&t, r, 0, &root);
  if (st == MT_OK && mt_ckpt_reader_end(r) != MT_OK)
    st = PBAD("bytes after the program", path);
  if (st != MT_OK && strncmp(mt_last_error(), "load:", 5) == 0) {
    snprintf(msg, sizeof msg, "%s", mt_last_error() + 4);
    st = mt_error(st, OPL "%s", msg);
  }
  if (st == MT_OK)
    st = build(p, &t);
  tree_free(&t);
  mt_ckpt_reader_close(r);
  if (st != MT_OK) {
    mt_program_free(p);
    return st;
  }
  *out = p;
  return MT_OK;
}

/* ------------------------------------------------------------------ queries */
int mt_program_num_inputs(const mt_program *p) {
  return p ? p->ninputs : 0;
}
int mt_program_num_outputs(const mt_program *p) {
  return p ? p->noutputs : 0;
}

static void io_of(const mt_program *p, int v, const char *name, mt_program_io *io) {
  io->name = name;
  io->dtype = p->values[v].dtype;
  io->ndim = p->values[v].ndim;
  io->sizes = p->values[v].sizes;
}
mt_status mt_program_input(const mt_program *p, int i, mt_program_io *io) {
  if (!p || !io || i < 0 || i >= p->ninputs)
    return mt_error(MT_ERANGE, "program_input: no input %d", i);
  io_of(p, p->inputs[i], p->input_names[i], io);
  return MT_OK;
}
mt_status mt_program_output(const mt_program *p, int i, mt_program_io *io) {
  if (!p || !io || i < 0 || i >= p->noutputs)
    return mt_error(MT_ERANGE, "program_output: no output %d", i);
  io_of(p, p->outputs[i], "", io);
  return MT_OK;
}
int mt_program_num_buffers(const mt_program *p) {
  return p ? p->nbuffers : 0;
}

/* ------------------------------------------------------------------ running */
static int same_type(const mt_tensor *x, const pg_value *v) {
  if (x->_dtype != v->dtype || x->_ndim != v->ndim)
    return 0;
  for (int d = 0; d < v->ndim; d++)
    if (x->_sizes[d] != v->sizes[d])
      return 0;
  return 1;
}

/* a node's planned result: a contiguous view of its buffer with the value's type */
static mt_status planned_out(mt_program *p, const pg_value *v, mt_tensor **out) {
  mt_tensor *b = p->buffers[v->buffer];
  if (!b) {
    int64_t n = p->buffer_bytes[v->buffer];
    MT_TRY(mt_tensor_empty(&n, 1, MT_UINT8, NULL, &p->buffers[v->buffer]));
    b = p->buffers[v->buffer];
  }
  mt_tensor base;
  memset(&base, 0, sizeof base);
  base._storage = b->_storage;
  base._dtype = v->dtype;
  base._device_type = MT_CPU;
  int64_t strides[MT_MAX_DIMS];
  mt_compute_strides(v->sizes, v->ndim, strides);
  return mt_new_view(&base, v->sizes, strides, v->ndim, 0, out);
}

static mt_status run_node(mt_program *p, pg_node *n, mt_tensor **res) {
  mt_tensor **S = p->slots;
  mt_tensor *a = S[n->in[0]], *out = NULL;
  mt_status st = MT_OK;
  if (n->out_planned)
    MT_TRY(planned_out(p, &p->values[n->out], &out));
  switch (n->kind) {
  case PG_UNARY:
    st = mt_unary(n->op, a, n->p1, n->p2, out, res);
    break;
  case PG_BINARY:
    st = mt_binary(n->op, a, S[n->in[1]], out, res);
    break;
  case PG_BINARY_SCALAR:
    st = mt_binary_scalar(n->op, a, n->p1, (int)n->a, (int)n->b, out, res);
    break;
  case PG_MATMUL:
    st = mt_matmul(a, S[n->in[1]], out, res);
    break;
  case PG_BMM:
    st = mt_bmm(a, S[n->in[1]], out, res);
    break;
  case PG_ADDMM:
    st = mt_addmm(a, S[n->in[1]], S[n->in[2]], n->p1, n->p2, out, res);
    break;
  case PG_BADDBMM:
    st = mt_baddbmm(a, S[n->in[1]], S[n->in[2]], n->p1, n->p2, out, res);
    break;
  case PG_CAT: {
    mt_tensor *list[8];
    for (int k = 0; k < n->nin; k++)
      list[k] = S[n->in[k]];
    st = mt_cat(list, n->nin, (int)n->a, out, res);
    break;
  }
  case PG_CONV: {
    int64_t zero[3] = {0, 0, 0};
    st = mt_convolution(a, S[n->in[1]], n->nin > 2 ? S[n->in[2]] : NULL, n->i, n->i + 3, n->i + 6, 0, zero, n->a, n->ni,
                        res);
    break;
  }
  case PG_MAX_POOL:
    st = mt_max_pool(a, &n->pool, 0, res, NULL);
    break;
  case PG_AVG_POOL:
    st = mt_avg_pool(a, &n->pool, res);
    break;
  case PG_ADAPTIVE_AVG_POOL:
    st = mt_adaptive_avg_pool(a, n->ni, n->i, res);
    break;
  case PG_LAYER_NORM:
    st = mt_layer_norm(a, n->nin > 1 ? S[n->in[1]] : NULL, n->nin > 2 ? S[n->in[2]] : NULL, (int)n->a, n->p1, res, NULL,
                       NULL);
    break;
  case PG_SOFTMAX:
    st = mt_softmax(a, (int)n->a, (int)n->b, -1, res);
    break;
  case PG_VIEW:
    st = mt_view(a, n->i, n->ni, res);
    break;
  case PG_RESHAPE:
    st = mt_reshape(a, n->i, n->ni, res);
    break;
  case PG_EXPAND:
    st = mt_expand(a, n->i, n->ni, res);
    break;
  case PG_FLATTEN:
    st = mt_flatten(a, (int)n->a, (int)n->b, res);
    break;
  case PG_PERMUTE:
    st = mt_permute(a, n->i, n->ni, res);
    break;
  case PG_TRANSPOSE:
    st = mt_transpose(a, (int)n->a, (int)n->b, res);
    break;
  case PG_NARROW:
    st = mt_narrow(a, (int)n->a, n->b, n->c, res);
    break;
  case PG_SELECT:
    st = mt_select(a, (int)n->a, n->b, res);
    break;
  case PG_UNSQUEEZE:
    st = mt_unsqueeze(a, (int)n->a, res);
    break;
  case PG_CONTIGUOUS:
    st = mt_contiguous(a, res);
    break;
  }
  if (out)
    mt_tensor_release(out);
  return st;
}

mt_status mt_program_run(mt_program *p, mt_tensor *const *inputs, int ninputs, mt_tensor **outputs, int noutputs) {
  if (!p || (ninputs && !inputs) || !outputs)
    return mt_error(MT_EINVAL, OPR ": NULL argument");
  if (ninputs != p->ninputs || noutputs != p->noutputs)
    return mt_error(MT_EINVAL, OPR ": %s takes %d inputs and gives %d outputs (called with %d and %d)", p->path,
                    p->ninputs, p->noutputs, ninputs, noutputs);
  for (int i = 0; i < ninputs; i++) {
    const pg_value *v = &p->values[p->inputs[i]];
    mt_tensor *x = inputs[i];
    MT_TRY(mt_check_tensor(x, OPR, "input"));
    if (x->_device_type != MT_CPU)
      return mt_error(MT_EDEVICE, OPR ": input %d ('%s') is not on the CPU", i + 1, p->input_names[i]);
    if (!same_type(x, v)) {
      char want[200];
      snprintf(want, sizeof want, "%s", mt_shape_str(v->sizes, v->ndim));
      return mt_error(MT_ESHAPE, OPR ": input %d ('%s') is %s %s; the program takes %s %s", i + 1, p->input_names[i],
                      mt_dtype_name(x->_dtype), MT_SHAPE(x), mt_dtype_name(v->dtype), want);
    }
  }
  mt_tensor **S = p->slots;
  for (int i = 0; i < ninputs; i++)
    S[p->inputs[i]] = mt_tensor_retain(inputs[i]);
  for (int v = 1; v <= p->nvalues; v++)
    if (p->values[v].constant)
      S[v] = p->values[v].constant; /* borrowed */
  mt_status st = MT_OK;
  int i;
  for (i = 0; i < p->nnodes; i++) {
    pg_node *n = &p->nodes[i];
    mt_tensor *res = NULL;
    if ((st = run_node(p, n, &res)) != MT_OK) {
      char msg[1100];
      snprintf(msg, sizeof msg, "%s", mt_last_error());
      st = mt_error(st, OPR ": %s: node %d (%s): %s", p->path, i + 1, n->name, msg);
      break;
    }
    S[n->out] = res;
    if (!same_type(res, &p->values[n->out])) {
      char want[200];
      snprintf(want, sizeof want, "%s", mt_shape_str(p->values[n->out].sizes, p->values[n->out].ndim));
      st = mt_error(MT_ESHAPE, OPR ": %s: node %d (%s) gave %s %s where the program declares %s %s", p->path, i + 1,
                    n->name, mt_dtype_name(res->_dtype), MT_SHAPE(res), mt_dtype_name(p->values[n->out].dtype), want);
      break;
    }
    for (int k = p->death_at[i]; p->deaths[k]; k++) {
      int v = p->deaths[k];
      if (S[v] && !p->values[v].constant) {
        mt_tensor_release(S[v]);
        S[v] = NULL;
      }
    }
  }
  if (st == MT_OK)
    for (int o = 0; o < noutputs; o++) {
      int v = p->outputs[o];
      outputs[o] = mt_tensor_retain(S[v]);
    }
  /* everything still held goes (outputs were retained for the caller) */
  for (int v = 1; v <= p->nvalues; v++) {
    if (S[v] && !p->values[v].constant)
      mt_tensor_release(S[v]);
    S[v] = NULL;
  }
  return st;
}
