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

#endif
