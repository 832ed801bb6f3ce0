/* onnx.c -- ONNX model files (issue 26): torch.onnx.load's reader. The protobuf is decoded by
 * protobuf-c (Debian's libprotobuf-c, with C code that protoc-c generates at build time from
 * python3-onnx's onnx.proto; CMake's MT_ONNX), then flattened into mt_onnx_model (core/moontorch.h):
 * the graph's nodes with their attributes, the initializers as CPU tensors, the graph's inputs and
 * outputs with their types. The Lua side (lua/interop/onnx.lua) builds a GraphModule from it.
 *
 * Every tensor is checked before it is made: its dtype one moontorch has, its dims non-negative and
 * their product in range, its data (raw_data or the typed fields) exactly as many elements as the
 * dims say. External data, segments and sparse initializers are refused with a message; attributes
 * holding graphs (If, Loop) are kept as their type alone (the Lua side refuses those ops). Messages:
 * "onnx.load: <path>: <problem>". */
#include "../mt_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPL "onnx.load"

#if MT_HAVE_ONNX
#include "onnx.pb-c.h"

#define MAX_FILE ((int64_t)1 << 31) /* protobuf's own limit for one message */
#define MAX_NUMEL ((int64_t)1 << 40)

typedef struct onnx_priv {
  Onnx__ModelProto *msg;
  mt_onnx_node *nodes;
  mt_onnx_attr *attrs;
  const char **strings; /* every node's inputs and outputs, pointing into msg */
  const char **init_names;
  mt_tensor **inits;
  mt_onnx_value *values; /* inputs, then outputs */
  int64_t *dims;
  mt_tensor **attr_tensors;
  int nattr_tensors;
  const char *path;
} onnx_priv;

#define BAD(...) mt_error(MT_EFORMAT, OPL ": %s: " __VA_ARGS__)

/* ONNX's TensorProto.DataType -> moontorch's dtype (-1: none) */
static int dtype_of(int32_t t) {
  switch (t) {
  case 1:
    return MT_FLOAT32;
  case 2:
    return MT_UINT8;
  case 3:
    return MT_INT8;
  case 5:
    return MT_INT16;
  case 6:
    return MT_INT32;
  case 7:
    return MT_INT64;
  case 9:
    return MT_BOOL;
  case 10:
    return MT_FLOAT16;
  case 11:
    return MT_FLOAT64;
  case 16:
    return MT_BFLOAT16;
  default:
    return -1;
  }
}

static const char *type_name(int32_t t) {
  static const char *names[] = {"undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
                                "int32",     "int64",  "string",    "bool",       "float16", "double",
                                "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  return t >= 0 && t <= 16 ? names[t] : "unknown";
}

/* a TensorProto as a new CPU tensor */
static mt_status make_tensor(const char *path, const Onnx__TensorProto *tp, const char *what, mt_tensor **out) {
  *out = NULL;
  const char *name = tp->name ? tp->name : "";
  if (tp->n_external_data || (tp->has_data_location && tp->data_location == 1))
    return BAD("%s '%s' keeps its data in another file (external data is not read)", path, what, name);
  if (tp->segment)
    return BAD("%s '%s' is a segment of a tensor (not read)", path, what, name);
  int dt = dtype_of(tp->data_type);
  if (dt < 0)
    return mt_error(MT_ENOTIMPL, OPL ": %s: %s '%s' is of ONNX type %s (%d), which moontorch has not", path, what, name,
                    type_name(tp->data_type), (int)tp->data_type);
  if (tp->n_dims > MT_MAX_DIMS)
    return BAD("%s '%s' has %zu dims (at most %d)", path, what, name, tp->n_dims, MT_MAX_DIMS);
  int64_t numel = 1, sizes[MT_MAX_DIMS];
  for (size_t d = 0; d < tp->n_dims; d++) {
    if (tp->dims[d] < 0 || __builtin_mul_overflow(numel, tp->dims[d], &numel) || numel > MAX_NUMEL)
      return BAD("%s '%s' has a size out of range", path, what, name);
    sizes[d] = tp->dims[d];
  }
  size_t item = mt_itemsize(dt);
  /* where the elements are, and how many there are */
  int64_t have;
  const char *field;
  if (tp->has_raw_data) {
    field = "raw_data";
    if (tp->raw_data.len % item)
      return BAD("%s '%s' has %zu bytes of raw_data, not a whole number of %s elements", path, what, name,
                 tp->raw_data.len, type_name(tp->data_type));
    have = (int64_t)(tp->raw_data.len / item);
  } else if (dt == MT_FLOAT32) {
    field = "float_data", have = (int64_t)tp->n_float_data;
  } else if (dt == MT_FLOAT64) {
    field = "double_data", have = (int64_t)tp->n_double_data;
  } else if (dt == MT_INT64) {
    field = "int64_data", have = (int64_t)tp->n_int64_data;
  } else {
    field = "int32_data", have = (int64_t)tp->n_int32_data;
  }
  if (have != numel)
    return BAD("%s '%s' holds %lld elements in %s; its dims say %lld", path, what, name, (long long)have, field,
               (long long)numel);
  int64_t zero = 0;
  MT_TRY(mt_tensor_empty(tp->n_dims ? sizes : &zero, (int)tp->n_dims, dt, NULL, out));
  char *d = (*out)->_data;
  if (numel == 0)
    return MT_OK;
  if (tp->has_raw_data) {
    memcpy(d, tp->raw_data.data, (size_t)numel * item); /* little-endian, as this machine */
  } else if (dt == MT_FLOAT32) {
    memcpy(d, tp->float_data, (size_t)numel * 4);
  } else if (dt == MT_FLOAT64) {
    memcpy(d, tp->double_data, (size_t)numel * 8);
  } else if (dt == MT_INT64) {
    memcpy(d, tp->int64_data, (size_t)numel * 8);
  } else {
    for (int64_t i = 0; i < numel; i++) {
      int32_t v = tp->int32_data[i];
      switch (item) {
      case 1:
        ((uint8_t *)d)[i] = (uint8_t)(dt == MT_BOOL ? v != 0 : v);
        break;
      case 2:
        ((uint16_t *)d)[i] = (uint16_t)v;
        break; /* int16, and float16/bfloat16 bits */
      default:
        ((int32_t *)d)[i] = v;
        break;
      }
    }
  }
  return MT_OK;
}

void mt_onnx_free(mt_onnx_model *m) {
  if (!m)
    return;
  onnx_priv *p = m->_priv;
  if (p) {
    for (int i = 0; i < m->ninits; i++)
      if (p->inits && p->inits[i])
        mt_tensor_release(p->inits[i]);
    for (int i = 0; i < p->nattr_tensors; i++)
      mt_tensor_release(p->attr_tensors[i]);
    if (p->msg)
      onnx__model_proto__free_unpacked(p->msg, NULL);
    free(p->nodes);
    free(p->attrs);
    free(p->strings);
    free(p->init_names);
    free(p->inits);
    free(p->values);
    free(p->dims);
    free(p->attr_tensors);
    free(p);
  }
  free(m);
}

static mt_status value_info(const char *path, const Onnx__ValueInfoProto *vi, mt_onnx_value *v, int64_t **dims) {
  v->name = vi->name ? vi->name : "";
  v->dtype = -1;
  v->ndim = -1;
  v->dims = *dims;
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return MT_OK; /* (a sequence or map: the Lua side refuses it if it is used) */
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  v->elem_type = tt->elem_type;
  v->dtype = dtype_of(tt->elem_type);
  if (tt->shape) {
    if (tt->shape->n_dim > MT_MAX_DIMS)
      return BAD("the graph's value '%s' has %zu dims (at most %d)", path, v->name, tt->shape->n_dim, MT_MAX_DIMS);
    v->ndim = (int32_t)tt->shape->n_dim;
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
      const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
      int64_t x = -1;
      if (dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0)
        x = dim->dim_value;
      (*dims)[d] = x;
    }
    *dims += tt->shape->n_dim;
  }
  return MT_OK;
}

static mt_status flatten(mt_onnx_model *m, onnx_priv *p) {
  const char *path = p->path;
  const Onnx__ModelProto *mp = p->msg;
  const Onnx__GraphProto *g = mp->graph;
  if (!g)
    return BAD("no graph: not an ONNX model", path);
  m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
  m->opset = 0;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
    if (o && (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")))
      m->opset = o->has_version ? o->version : 0;
  }
  m->producer = mp->producer_name ? mp->producer_name : "";
  if (g->n_node > (1u << 24) || g->n_initializer > (1u << 24) || g->n_input > (1u << 16) || g->n_output > (1u << 16))
    return BAD("a graph too large", path);
  if (g->n_sparse_initializer)
    return mt_error(MT_ENOTIMPL, OPL ": %s: sparse initializers are not read", path);
  /* nodes: count their strings and attributes first */
  size_t nstr = 0, nattr = 0;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    if (!n)
      return BAD("node %zu is empty", path, i + 1);
    if (n->n_input > (1u << 16) || n->n_output > (1u << 16) || n->n_attribute > (1u << 16))
      return BAD("node %zu has too many inputs, outputs or attributes", path, i + 1);
    nstr += n->n_input + n->n_output;
    nattr += n->n_attribute;
  }
  m->nnodes = (int32_t)g->n_node;
  p->nodes = calloc(g->n_node ? g->n_node : 1, sizeof *p->nodes);
  p->strings = calloc(nstr ? nstr : 1, sizeof *p->strings);
  p->attrs = calloc(nattr ? nattr : 1, sizeof *p->attrs);
  p->attr_tensors = calloc(nattr ? nattr : 1, sizeof *p->attr_tensors);
  if (!p->nodes || !p->strings || !p->attrs || !p->attr_tensors)
    return mt_error(MT_ENOMEM, OPL ": out of memory");
  m->nodes = p->nodes;
  const char **s = p->strings;
  mt_onnx_attr *a = p->attrs;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    mt_onnx_node *o = &p->nodes[i];
    o->op_type = n->op_type ? n->op_type : "";
    o->domain = n->domain ? n->domain : "";
    o->name = n->name ? n->name : "";
    o->ninputs = (int32_t)n->n_input;
    o->noutputs = (int32_t)n->n_output;
    o->inputs = s;
    for (size_t k = 0; k < n->n_input; k++)
      *s++ = n->input[k] ? n->input[k] : "";
    o->outputs = s;
    for (size_t k = 0; k < n->n_output; k++)
      *s++ = n->output[k] ? n->output[k] : "";
    o->nattrs = (int32_t)n->n_attribute;
    o->attrs = a;
    for (size_t k = 0; k < n->n_attribute; k++, a++) {
      const Onnx__AttributeProto *at = n->attribute[k];
      if (!at)
        return BAD("node %zu (%s): attribute %zu is empty", path, i + 1, o->op_type, k + 1);
      a->name = at->name ? at->name : "";
      a->type = at->has_type ? (int32_t)at->type : 0;
      a->f = at->f;
      a->i = at->i;
      a->s = (const char *)at->s.data;
      a->slen = (int64_t)at->s.len;
      a->n = 0;
      switch (a->type) {
      case 4: /* TENSOR */
        if (!at->t)
          return BAD("node %zu (%s): attribute %s holds no tensor", path, i + 1, o->op_type, a->name);
        MT_TRY(make_tensor(path, at->t, "an attribute's tensor", &a->t));
        p->attr_tensors[p->nattr_tensors++] = a->t;
        break;
      case 6:
        a->n = (int64_t)at->n_floats, a->floats = at->floats;
        break;
      case 7:
        a->n = (int64_t)at->n_ints, a->ints = at->ints;
        break;
      case 8:
        a->n = (int64_t)at->n_strings;
        break;
      default:
        break;
      }
    }
  }
  /* initializers */
  m->ninits = (int32_t)g->n_initializer;
  p->init_names = calloc(g->n_initializer ? g->n_initializer : 1, sizeof *p->init_names);
  p->inits = calloc(g->n_initializer ? g->n_initializer : 1, sizeof *p->inits);
  if (!p->init_names || !p->inits)
    return mt_error(MT_ENOMEM, OPL ": out of memory");
  m->init_names = p->init_names;
  m->inits = p->inits;
  for (size_t i = 0; i < g->n_initializer; i++) {
    if (!g->initializer[i])
      return BAD("initializer %zu is empty", path, i + 1);
    p->init_names[i] = g->initializer[i]->name ? g->initializer[i]->name : "";
    MT_TRY(make_tensor(path, g->initializer[i], "the initializer", &p->inits[i]));
  }
  /* the graph's inputs and outputs */
  size_t ndims = 0;
  for (size_t i = 0; i < g->n_input + g->n_output; i++) {
    const Onnx__ValueInfoProto *vi = i < g->n_input ? g->input[i] : g->output[i - g->n_input];
    if (!vi)
      return BAD("an empty graph input or output", path);
    if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && vi->type->tensor_type &&
        vi->type->tensor_type->shape)
      ndims += vi->type->tensor_type->shape->n_dim;
  }
  p->values = calloc(g->n_input + g->n_output + 1, sizeof *p->values);
  p->dims = calloc(ndims ? ndims : 1, sizeof *p->dims);
  if (!p->values || !p->dims)
    return mt_error(MT_ENOMEM, OPL ": out of memory");
  int64_t *dp = p->dims;
  m->ninputs = (int32_t)g->n_input;
  m->noutputs = (int32_t)g->n_output;
  m->inputs = p->values;
  m->outputs = p->values + g->n_input;
  for (size_t i = 0; i < g->n_input + g->n_output; i++)
    MT_TRY(value_info(path, i < g->n_input ? g->input[i] : g->output[i - g->n_input], &p->values[i], &dp));
  return MT_OK;
}

/* protobuf-c decodes nested messages by recursion without a limit, and ONNX's messages nest (a
 * graph in a node's attribute, a type in a type): before decoding, the wire format is walked with
 * the generated descriptors and a depth limit (as protobuf's own C++ and Java readers have). 0: fine;
 * 1: nested too deep; 2: malformed (protobuf-c would refuse it too). */
#define MAX_NESTING 100
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t x = 0;
  for (int s = 0; s < 64 && *p < end; s += 7) {
    uint8_t b = *(*p)++;
    x |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) {
      *v = x;
      return 1;
    }
  }
  return 0;
}
static int nesting(const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end, int depth) {
  if (depth > MAX_NESTING)
    return 1;
  while (p < end) {
    uint64_t tag, v;
    if (!varint(&p, end, &tag))
      return 2;
    switch (tag & 7) {
    case 0:
      if (!varint(&p, end, &v))
        return 2;
      break;
    case 1:
      if (end - p < 8)
        return 2;
      p += 8;
      break;
    case 5:
      if (end - p < 4)
        return 2;
      p += 4;
      break;
    case 2: {
      if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
        return 2;
      const ProtobufCFieldDescriptor *f =
          desc && (tag >> 3) <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3)) : NULL;
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
        int r = nesting((const ProtobufCMessageDescriptor *)f->descriptor, p, p + v, depth + 1);
        if (r)
          return r;
      }
      p += v;
      break;
    }
    default: /* groups (3, 4): not in ONNX's schema */
      return 2;
    }
  }
  return 0;
}

mt_status mt_onnx_read(const char *path, mt_onnx_model **out) {
  if (!path || !out)
    return mt_error(MT_EINVAL, OPL ": path is NULL");
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return mt_error(MT_EIO, OPL ": %s: cannot open the file (%s)", path, strerror(errno));
  unsigned char *buf = NULL;
  size_t n = 0, cap = 0;
  mt_status st = MT_OK;
  for (;;) {
    if (n == cap) {
      if (cap >= (size_t)MAX_FILE) {
        st = BAD("larger than 2 GiB (protobuf's limit; external data is not read)", path);
        break;
      }
      cap = cap ? 2 * cap : 1 << 16;
      unsigned char *b = realloc(buf, cap);
      if (!b) {
        st = mt_error(MT_ENOMEM, OPL ": out of memory");
        break;
      }
      buf = b;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f))
        st = mt_error(MT_EIO, OPL ": %s: read error", path);
      break;
    }
  }
  fclose(f);
  mt_onnx_model *m = NULL;
  onnx_priv *p = NULL;
  if (st == MT_OK) {
    m = calloc(1, sizeof *m);
    p = calloc(1, sizeof *p);
    if (!m || !p) {
      free(m);
      free(p);
      m = NULL;
      st = mt_error(MT_ENOMEM, OPL ": out of memory");
    } else {
      m->_priv = p;
      p->path = path;
    }
  }
  int nest = st == MT_OK ? nesting(&onnx__model_proto__descriptor, buf, buf + n, 0) : 0;
  if (nest == 1)
    st = BAD("its messages nest more than %d deep", path, MAX_NESTING);
  else if (nest == 2)
    st = BAD("not an ONNX model (its protobuf is malformed)", path);
  if (st == MT_OK) {
    p->msg = onnx__model_proto__unpack(NULL, n, buf);
    if (!p->msg)
      st = BAD("not an ONNX model (its protobuf does not decode as a ModelProto)", path);
  }
  free(buf);
  if (st == MT_OK)
    st = flatten(m, p);
  if (st != MT_OK) {
    mt_onnx_free(m);
    return st;
  }
  p->path = NULL;
  *out = m;
  return MT_OK;
}

/* ------------------------------------------------------------------ the writer (torch.onnx.export) */
/* The ModelProto is built from protobuf-c's generated structs, every piece from one arena freed at
 * the end, then packed by protobuf-c and written. */
#define OPW "onnx.export"
typedef struct arena_block {
  struct arena_block *next;
  max_align_t data[];
} arena_block;
typedef struct arena {
  arena_block *head;
  int failed;
} arena;
static void *arena_get(arena *a, size_t n) {
  if (a->failed)
    return NULL;
  arena_block *b = calloc(1, sizeof *b + (n ? n : 1));
  if (!b) {
    a->failed = 1;
    return NULL;
  }
  b->next = a->head;
  a->head = b;
  return b->data;
}
static void arena_free(arena *a) {
  for (arena_block *b = a->head, *n; b; b = n) {
    n = b->next;
    free(b);
  }
}
#define NEW(a, T, init) new_##T(a, (T)init)
#define DEFINE_NEW(T)                                                                                              \
  static T *new_##T(arena *a, T v) {                                                                               \
    T *p = arena_get(a, sizeof *p);                                                                                \
    if (p)                                                                                                         \
      *p = v;                                                                                                      \
    return p;                                                                                                      \
  }
DEFINE_NEW(Onnx__NodeProto)
DEFINE_NEW(Onnx__AttributeProto)
DEFINE_NEW(Onnx__TensorProto)
DEFINE_NEW(Onnx__ValueInfoProto)
DEFINE_NEW(Onnx__TypeProto)
DEFINE_NEW(Onnx__TypeProto__Tensor)
DEFINE_NEW(Onnx__TensorShapeProto)
DEFINE_NEW(Onnx__TensorShapeProto__Dimension)
DEFINE_NEW(Onnx__OperatorSetIdProto)

/* moontorch's dtype -> ONNX's TensorProto.DataType (0: none) */
static int32_t onnx_type_of(int dt) {
  for (int32_t t = 1; t <= 16; t++)
    if (dtype_of(t) == dt)
      return t;
  return 0;
}

static Onnx__TensorProto *tensor_proto(arena *a, const char *path, const char *name, const mt_tensor *t, mt_status *st) {
  if (!t) {
    *st = mt_error(MT_EINVAL, OPW ": %s: the tensor '%s' is NULL", path, name);
    return NULL;
  }
  int32_t ty = onnx_type_of(t->_dtype);
  if (!ty) {
    *st = mt_error(MT_ENOTIMPL, OPW ": %s: the tensor '%s' is of a dtype ONNX has not", path, name);
    return NULL;
  }
  if (t->_device_type != 0 || !mt_tensor_is_contiguous(t)) {
    *st = mt_error(MT_EINVAL, OPW ": %s: the tensor '%s' must be a contiguous CPU tensor", path, name);
    return NULL;
  }
  Onnx__TensorProto *tp = NEW(a, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
  int64_t *dims = arena_get(a, sizeof(int64_t) * (t->_ndim ? t->_ndim : 1));
  if (!tp || !dims)
    return NULL;
  for (int d = 0; d < t->_ndim; d++)
    dims[d] = t->_sizes[d];
  tp->n_dims = (size_t)t->_ndim;
  tp->dims = dims;
  tp->has_data_type = 1;
  tp->data_type = ty;
  tp->name = (char *)name;
  tp->has_raw_data = 1;
  tp->raw_data.len = (size_t)t->_numel * mt_itemsize(t->_dtype);
  tp->raw_data.data = (uint8_t *)t->_data; /* little-endian, as ONNX's raw_data */
  return tp;
}

static Onnx__ValueInfoProto *value_proto(arena *a, const char *path, const mt_onnx_value *v, mt_status *st) {
  Onnx__ValueInfoProto *vi = NEW(a, Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);
  Onnx__TypeProto *tp = NEW(a, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
  Onnx__TypeProto__Tensor *tt = NEW(a, Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
  if (!vi || !tp || !tt)
    return NULL;
  if (!v->name || !v->name[0]) {
    *st = mt_error(MT_EINVAL, OPW ": %s: a graph input or output without a name", path);
    return NULL;
  }
  vi->name = (char *)v->name;
  vi->type = tp;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  int32_t et = v->elem_type ? v->elem_type : onnx_type_of(v->dtype);
  if (et <= 0) {
    *st = mt_error(MT_EINVAL, OPW ": %s: '%s' has no element type", path, v->name);
    return NULL;
  }
  tt->has_elem_type = 1;
  tt->elem_type = et;
  if (v->ndim < 0)
    return vi;
  if (v->ndim > MT_MAX_DIMS) {
    *st = mt_error(MT_EINVAL, OPW ": %s: '%s' has %d dims (at most %d)", path, v->name, (int)v->ndim, MT_MAX_DIMS);
    return NULL;
  }
  Onnx__TensorShapeProto *sp = NEW(a, Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT);
  Onnx__TensorShapeProto__Dimension **dims = arena_get(a, sizeof *dims * (v->ndim ? v->ndim : 1));
  if (!sp || !dims)
    return NULL;
  for (int d = 0; d < v->ndim; d++) {
    Onnx__TensorShapeProto__Dimension *dim =
        NEW(a, Onnx__TensorShapeProto__Dimension, ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT);
    if (!dim)
      return NULL;
    const char *param = v->dim_params ? v->dim_params[d] : NULL;
    if (param && param[0]) {
      dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dim->dim_param = (char *)param;
    } else if (v->dims && v->dims[d] >= 0) {
      dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dim->dim_value = v->dims[d];
    } /* else: a dimension of unknown size */
    dims[d] = dim;
  }
  sp->n_dim = (size_t)v->ndim;
  sp->dim = dims;
  tt->shape = sp;
  return vi;
}

static Onnx__AttributeProto *attr_proto(arena *a, const char *path, const mt_onnx_node *n, const mt_onnx_attr *at,
                                        mt_status *st) {
  Onnx__AttributeProto *p = NEW(a, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
  if (!p)
    return NULL;
  if (!at->name || !at->name[0]) {
    *st = mt_error(MT_EINVAL, OPW ": %s: an attribute of %s without a name", path, n->op_type);
    return NULL;
  }
  p->name = (char *)at->name;
  p->has_type = 1;
  switch (at->type) {
  case 1:
    p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, p->has_f = 1, p->f = at->f;
    break;
  case 2:
    p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, p->has_i = 1, p->i = at->i;
    break;
  case 3:
    if (at->slen < 0 || (at->slen && !at->s))
      goto bad;
    p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, p->has_s = 1;
    p->s.len = (size_t)at->slen, p->s.data = (uint8_t *)at->s;
    break;
  case 4:
    p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (!(p->t = tensor_proto(a, path, "", at->t, st)))
      return NULL;
    break;
  case 6:
    if (at->n < 0 || (at->n && !at->floats))
      goto bad;
    p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, p->n_floats = (size_t)at->n, p->floats = (float *)at->floats;
    break;
  case 7:
    if (at->n < 0 || (at->n && !at->ints))
      goto bad;
    p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, p->n_ints = (size_t)at->n, p->ints = (int64_t *)at->ints;
    break;
  default:
  bad:
    *st = mt_error(MT_EINVAL, OPW ": %s: %s's attribute %s: a type not written (%d) or no data", path, n->op_type,
                   at->name, (int)at->type);
    return NULL;
  }
  return p;
}

static char **strings(arena *a, const char *const *s, int32_t n) {
  char **r = arena_get(a, sizeof *r * (n > 0 ? (size_t)n : 1));
  if (r)
    for (int32_t i = 0; i < n; i++)
      r[i] = (char *)(s[i] ? s[i] : "");
  return r;
}

#define WTRY(x)                                                                                                    \
  do {                                                                                                             \
    if (!(x)) {                                                                                                    \
      if (st == MT_OK)                                                                                             \
        st = mt_error(MT_ENOMEM, OPW ": out of memory");                                                           \
      goto done;                                                                                                   \
    }                                                                                                              \
  } while (0)

mt_status mt_onnx_write(const mt_onnx_model *m, const char *path) {
  if (!m || !path)
    return mt_error(MT_EINVAL, OPW ": the model or the path is NULL");
  if (m->nnodes < 0 || m->ninits < 0 || m->ninputs < 0 || m->noutputs < 0 || (m->nnodes && !m->nodes) ||
      (m->ninits && (!m->inits || !m->init_names)) || (m->ninputs && !m->inputs) || (m->noutputs && !m->outputs))
    return mt_error(MT_EINVAL, OPW ": %s: the model's counts and arrays do not agree", path);
  arena a = {0};
  mt_status st = MT_OK;
  uint8_t *buf = NULL;
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  Onnx__OperatorSetIdProto *opset = NEW(&a, Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
  Onnx__OperatorSetIdProto **opsets = arena_get(&a, sizeof *opsets);
  WTRY(opset && opsets);
  opset->domain = "";
  opset->has_version = 1;
  opset->version = m->opset > 0 ? m->opset : 17;
  opsets[0] = opset;
  model.has_ir_version = 1;
  model.ir_version = m->ir_version > 0 ? m->ir_version : 8;
  model.n_opset_import = 1;
  model.opset_import = opsets;
  model.producer_name = (char *)(m->producer ? m->producer : "moontorch");
  model.graph = &graph;
  graph.name = "moontorch";
  /* nodes */
  Onnx__NodeProto **nodes = arena_get(&a, sizeof *nodes * (m->nnodes ? (size_t)m->nnodes : 1));
  WTRY(nodes);
  for (int32_t i = 0; i < m->nnodes; i++) {
    const mt_onnx_node *n = &m->nodes[i];
    if (!n->op_type || !n->op_type[0] || n->ninputs < 0 || n->noutputs < 0 || n->nattrs < 0 ||
        (n->ninputs && !n->inputs) || (n->noutputs && !n->outputs) || (n->nattrs && !n->attrs)) {
      st = mt_error(MT_EINVAL, OPW ": %s: node %d is malformed (no op type, or counts without arrays)", path, i + 1);
      goto done;
    }
    Onnx__NodeProto *p = NEW(&a, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
    WTRY(p);
    p->op_type = (char *)n->op_type;
    p->name = (char *)(n->name ? n->name : "");
    p->domain = n->domain && n->domain[0] ? (char *)n->domain : NULL;
    p->n_input = (size_t)n->ninputs;
    WTRY(p->input = strings(&a, n->inputs, n->ninputs));
    p->n_output = (size_t)n->noutputs;
    WTRY(p->output = strings(&a, n->outputs, n->noutputs));
    p->n_attribute = (size_t)n->nattrs;
    WTRY(p->attribute = arena_get(&a, sizeof *p->attribute * (n->nattrs ? (size_t)n->nattrs : 1)));
    for (int32_t k = 0; k < n->nattrs; k++)
      WTRY(p->attribute[k] = attr_proto(&a, path, n, &n->attrs[k], &st));
    nodes[i] = p;
  }
  graph.n_node = (size_t)m->nnodes;
  graph.node = nodes;
  /* initializers */
  Onnx__TensorProto **inits = arena_get(&a, sizeof *inits * (m->ninits ? (size_t)m->ninits : 1));
  WTRY(inits);
  for (int32_t i = 0; i < m->ninits; i++)
    WTRY(inits[i] = tensor_proto(&a, path, m->init_names[i] ? m->init_names[i] : "", m->inits[i], &st));
  graph.n_initializer = (size_t)m->ninits;
  graph.initializer = inits;
  /* inputs, outputs */
  Onnx__ValueInfoProto **vals = arena_get(&a, sizeof *vals * ((size_t)m->ninputs + (size_t)m->noutputs + 1));
  WTRY(vals);
  for (int32_t i = 0; i < m->ninputs + m->noutputs; i++)
    WTRY(vals[i] = value_proto(&a, path, i < m->ninputs ? &m->inputs[i] : &m->outputs[i - m->ninputs], &st));
  graph.n_input = (size_t)m->ninputs;
  graph.input = vals;
  graph.n_output = (size_t)m->noutputs;
  graph.output = vals + m->ninputs;
  /* packed and written */
  size_t len = onnx__model_proto__get_packed_size(&model);
  if (len >= (size_t)MAX_FILE) {
    st = mt_error(MT_EINVAL, OPW ": %s: the model is larger than 2 GiB (protobuf's limit)", path);
    goto done;
  }
  WTRY(buf = malloc(len ? len : 1));
  onnx__model_proto__pack(&model, buf);
  FILE *f = fopen(path, "wb");
  if (!f) {
    st = mt_error(MT_EIO, OPW ": %s: cannot open the file for writing (%s)", path, strerror(errno));
    goto done;
  }
  size_t put = fwrite(buf, 1, len, f);
  if (fclose(f) != 0 || put != len)
    st = mt_error(MT_EIO, OPW ": %s: write error", path);
done:
  free(buf);
  arena_free(&a);
  return st;
}

int mt_onnx_built(void) {
  return 1;
}

#else /* built without protobuf-c or onnx.proto */

mt_status mt_onnx_read(const char *path, mt_onnx_model **out) {
  (void)path;
  if (out)
    *out = NULL;
  return mt_error(MT_ENOTIMPL, OPL ": this moontorch was built without ONNX (it needs libprotobuf-c-dev, "
                                   "protobuf-c-compiler and python3-onnx's onnx.proto when it is built)");
}
void mt_onnx_free(mt_onnx_model *m) {
  (void)m;
}
mt_status mt_onnx_write(const mt_onnx_model *m, const char *path) {
  (void)m, (void)path;
  return mt_error(MT_ENOTIMPL, "onnx.export: this moontorch was built without ONNX (it needs libprotobuf-c-dev, "
                               "protobuf-c-compiler and python3-onnx's onnx.proto when it is built)");
}
int mt_onnx_built(void) {
  return 0;
}

#endif
