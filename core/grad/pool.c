/* pool.c -- autograd for pooling and resampling (core/ops/pool.c, issue 12): max pools (the
 * gradient added back at the saved positions of the maxima), max_unpool (read back at its
 * positions), and the linear resamplings (avg pools, adaptive avg pools, interpolation), whose
 * backward is their adjoint, mt_resample_backward, itself recorded with the resampling as its
 * backward. Backwards that are not recorded write and read positions in one pass
 * (mt_pool_index); recorded ones (create_graph) use scatter_add and gather, which record
 * themselves. */
#include "formula.h"

#include "../ops/pool.h"

#include <stdio.h>

/* ---------------------------------------------------------------- names */
/* PyTorch's grad_fn names: [kind][nsp - 1][backward] */
static const char *const rs_names[10][3][2] = {
    {{NULL, NULL}, {"AvgPool2DBackward0", "AvgPool2DBackwardBackward0"},
     {"AvgPool3DBackward0", "AvgPool3DBackwardBackward0"}},
    {{NULL, NULL}, {"AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool2DBackwardBackward0"},
     {"AdaptiveAvgPool3DBackward0", "AdaptiveAvgPool3DBackwardBackward0"}},
    {{"UpsampleNearest1DBackward1", "UpsampleNearest1DBackwardBackward1"},
     {"UpsampleNearest2DBackward1", "UpsampleNearest2DBackwardBackward1"},
     {"UpsampleNearest3DBackward1", "UpsampleNearest3DBackwardBackward1"}},
    {{"UpsampleLinear1DBackward1", "UpsampleLinear1DBackwardBackward1"},
     {"UpsampleBilinear2DBackward1", "UpsampleBilinear2DBackwardBackward1"},
     {"UpsampleTrilinear3DBackward1", "UpsampleTrilinear3DBackwardBackward1"}},
    {{NULL, NULL}, {"UpsampleBicubic2DBackward1", "UpsampleBicubic2DBackwardBackward1"}, {NULL, NULL}},
    {{"ReflectionPad1DBackward0", "ReflectionPad1DBackwardBackward0"},
     {"ReflectionPad2DBackward0", "ReflectionPad2DBackwardBackward0"},
     {"ReflectionPad3DBackward0", "ReflectionPad3DBackwardBackward0"}},
    {{"ReplicationPad1DBackward0", "ReplicationPad1DBackwardBackward0"},
     {"ReplicationPad2DBackward0", "ReplicationPad2DBackwardBackward0"},
     {"ReplicationPad3DBackward0", "ReplicationPad3DBackwardBackward0"}},
    /* parity: nearest-exact, antialiased bilinear and bicubic */
    {{"UpsampleNearestExact1DBackward1", "UpsampleNearestExact1DBackwardBackward1"},
     {"UpsampleNearestExact2DBackward1", "UpsampleNearestExact2DBackwardBackward1"},
     {"UpsampleNearestExact3DBackward1", "UpsampleNearestExact3DBackwardBackward1"}},
    {{NULL, NULL}, {"UpsampleBilinear2DAaBackward1", "UpsampleBilinear2DAaBackwardBackward1"}, {NULL, NULL}},
    {{NULL, NULL}, {"UpsampleBicubic2DAaBackward1", "UpsampleBicubic2DAaBackwardBackward1"}, {NULL, NULL}},
};
/* 1-d pools are 2-d ones over an unsqueezed input in the Lua layer (as in PyTorch); a 1-d pool
 * called from C gets the 2-d name */
static const char *rs_name(const mt_resample_spec *s, int backward) {
  int k = s->kind >= 0 && s->kind < 10 ? s->kind : 0;
  int d = s->nsp >= 1 && s->nsp <= 3 ? s->nsp - 1 : 1;
  const char *n = rs_names[k][d][backward];
  if (!n) n = rs_names[k][1][backward];
  return n;
}
static const char *max_names[2][2] = {{"MaxPool2DWithIndicesBackward0", "MaxPool3DWithIndicesBackward0"},
                                      {"AdaptiveMaxPool2DBackward0", "AdaptiveMaxPool3DBackward0"}};
static const char *unpool_names[2] = {"MaxUnpool2DBackward0", "MaxUnpool3DBackward0"};

/* ---------------------------------------------------------------- resamplings */
typedef struct resample_node {
  mt_resample_spec spec;
  int32_t backward; /* the node of mt_resample_backward */
} resample_node;
MT_NODE_DATA_FITS(resample_node);

static const char *resample_name_of(const mt_node *n) {
  const resample_node *d = NODE_DATA((mt_node *)n, resample_node);
  return rs_name(&d->spec, d->backward);
}
static const char *resample_names(int i) {
  int k = 0;
  for (int a = 0; a < 10; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 2; c++)
        if (rs_names[a][b][c] && k++ == i) return rs_names[a][b][c];
  return NULL;
}

static mt_status resample_node_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  resample_node *d = NODE_DATA(n, resample_node);
  return d->backward ? mt_resample(g, &d->spec, &gin[0]) : mt_resample_backward(g, &d->spec, &gin[0]);
}
static const mt_node_kind resample_kind = {
    .name_of = resample_name_of, .names = resample_names, .backward = resample_node_backward};

static mt_status record_resample(mt_tensor *x, const mt_resample_spec *spec, int backward, mt_tensor *r) {
  if (!mt_is_float(r->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(&resample_kind, &x, 1, 1, &n));
  resample_node *d = NODE_DATA(n, resample_node);
  d->spec = *spec;
  d->backward = backward;
  return mt_node_attach_new(n, r);
}

static mt_status grad_resample(mt_tensor *x, const mt_resample_spec *spec, mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_resample(x, spec, &r)));
  mt_status s = record_resample(x, spec, 0, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}
static mt_status grad_resample_backward(mt_tensor *g, const mt_resample_spec *spec, mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_resample_backward(g, spec, &r)));
  mt_status s = record_resample(g, spec, 1, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- positions */
/* (P, K) views of t's last dims from `lead` on, and (P, M) of a shape */
static mt_tensor *planes(scope *sc, mt_tensor *t, int lead) {
  if (!t) return NULL;
  int64_t P = 1, K = 1;
  for (int d = 0; d < t->_ndim; d++) *(d < lead ? &P : &K) *= t->_sizes[d];
  int64_t s[2] = {P, K};
  return f_reshape(sc, t, s, 2);
}

/* g (shaped like idx) added at idx into zeros of `in` (P planes: the dims before `lead`) */
static mt_tensor *scatter_back(scope *sc, mt_tensor *g, mt_tensor *idx, const mt_shape *in, int lead, int64_t base,
                               const char *op) {
  if (!g || !idx) return NULL;
  int64_t P = 1, M = 1;
  for (int d = 0; d < in->ndim; d++) *(d < lead ? &P : &M) *= in->sizes[d];
  int64_t pm[2] = {P, M};
  mt_tensor *gp = planes(sc, g, lead), *ip = planes(sc, idx, lead), *r;
  if (!LIVE(sc)) return NULL;
  if (mt_grad_mode) { /* recorded: scatter_add records itself */
    mt_tensor *z = f_zeros(sc, g, pm, 2, g->_dtype);
    r = z ? SCOPED(mt_scatter(z, 1, ip, gp, 0, 1, base, NULL, &r_)) : NULL;
  } else {
    r = SCOPED(mt_pool_index(op, gp, ip, MT_POOL_SCATTER_ADD, pm, 2, base, &r_));
  }
  return f_reshape_to(sc, r, in);
}

/* the values of g (shaped `outs`) at idx, shaped like idx */
static mt_tensor *gather_back(scope *sc, mt_tensor *g, mt_tensor *idx, int lead, int64_t base, const char *op) {
  if (!g || !idx) return NULL;
  mt_tensor *gp = planes(sc, g, lead), *ip = planes(sc, idx, lead), *r;
  if (!LIVE(sc)) return NULL;
  if (mt_grad_mode)
    r = SCOPED(mt_gather(gp, 1, ip, base, NULL, &r_));
  else
    r = SCOPED(mt_pool_index(op, gp, ip, MT_POOL_GATHER, NULL, 0, base, &r_));
  if (!r) return NULL;
  return f_reshape(sc, r, idx->_sizes, idx->_ndim);
}

/* ---------------------------------------------------------------- max pools */
typedef struct max_pool_node {
  mt_saved indices; /* as the op gave them, from base */
  int64_t base;
  int32_t nsp, adaptive;
  mt_shape in;
} max_pool_node;
MT_NODE_DATA_FITS(max_pool_node);

static const char *max_pool_name_of(const mt_node *n) {
  const max_pool_node *d = NODE_DATA((mt_node *)n, max_pool_node);
  return max_names[d->adaptive ? 1 : 0][d->nsp == 3 ? 1 : 0];
}
static const char *max_pool_names(int i) { return i >= 0 && i < 4 ? max_names[i / 2][i % 2] : NULL; }

static mt_status max_pool_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  max_pool_node *d = NODE_DATA(n, max_pool_node);
  mt_tensor *idx = saved(sc, n, &d->indices);
  mt_tensor *r = scatter_back(sc, g, idx, &d->in, d->in.ndim - d->nsp, d->base, "max_pool_backward");
  if (LIVE(sc)) give(gin, 0, r);
  return scope_close(sc);
}
static const mt_node_kind max_pool_kind = {
    .name_of = max_pool_name_of, .names = max_pool_names, .backward = max_pool_backward, .nsaved = 1};

static mt_status record_max_pool(mt_tensor *x, int nsp, int adaptive, int64_t base, mt_tensor *v, mt_tensor *i) {
  if (!mt_is_float(v->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(&max_pool_kind, &x, 1, 1, &n));
  max_pool_node *d = NODE_DATA(n, max_pool_node);
  d->base = base;
  d->nsp = nsp;
  d->adaptive = adaptive;
  mt_shape_of(&d->in, x);
  mt_node_save(n, &d->indices, i);
  return mt_node_attach_new(n, v);
}

/* the values and indices made (always: the backward needs them), the indices handed out if asked */
static mt_status give_pool(mt_status s, mt_tensor *v, mt_tensor *i, mt_tensor **values, mt_tensor **indices) {
  if (s) {
    mt_tensor_release(v);
    mt_tensor_release(i);
    return s;
  }
  mt_give(v, values);
  if (indices) return mt_give(i, indices);
  mt_tensor_release(i);
  return MT_OK;
}

static mt_status grad_max_pool(mt_tensor *x, const mt_pool_params *p, int64_t base, mt_tensor **values,
                               mt_tensor **indices) {
  mt_tensor *v = NULL, *i = NULL;
  MT_TRY(MT_NOGRAD(mt_max_pool(x, p, base, &v, &i)));
  return give_pool(record_max_pool(x, p->nsp, 0, base, v, i), v, i, values, indices);
}
static mt_status grad_adaptive_max_pool(mt_tensor *x, int nsp, const int64_t *sizes, int64_t base, mt_tensor **values,
                                        mt_tensor **indices) {
  mt_tensor *v = NULL, *i = NULL;
  MT_TRY(MT_NOGRAD(mt_adaptive_max_pool(x, nsp, sizes, base, &v, &i)));
  return give_pool(record_max_pool(x, nsp, 1, base, v, i), v, i, values, indices);
}

/* ---------------------------------------------------------------- max_unpool */
typedef struct unpool_node {
  mt_saved indices;
  int64_t base;
  int32_t nsp;
} unpool_node;
MT_NODE_DATA_FITS(unpool_node);

static const char *unpool_name_of(const mt_node *n) {
  return unpool_names[NODE_DATA((mt_node *)n, unpool_node)->nsp == 3 ? 1 : 0];
}
static const char *unpool_names_list(int i) { return i >= 0 && i < 2 ? unpool_names[i] : NULL; }

static mt_status unpool_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  unpool_node *d = NODE_DATA(n, unpool_node);
  mt_tensor *idx = saved(sc, n, &d->indices);
  mt_tensor *r = idx ? gather_back(sc, g, idx, idx->_ndim - d->nsp, d->base, "max_unpool_backward") : NULL;
  if (LIVE(sc)) give(gin, 0, r);
  return scope_close(sc);
}
static const mt_node_kind unpool_kind = {
    .name_of = unpool_name_of, .names = unpool_names_list, .backward = unpool_backward, .nsaved = 1};

static mt_status grad_max_unpool(mt_tensor *x, mt_tensor *indices, int nsp, const int64_t *sizes, int64_t base,
                                 mt_tensor **result) {
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_max_unpool(x, indices, nsp, sizes, base, &r)));
  mt_status s = MT_OK;
  if (mt_is_float(r->_dtype)) {
    mt_node *n;
    s = mt_node_make(&unpool_kind, &x, 1, 1, &n);
    if (!s) {
      unpool_node *d = NODE_DATA(n, unpool_node);
      d->base = base;
      d->nsp = nsp;
      mt_node_save(n, &d->indices, indices);
      s = mt_node_attach_new(n, r);
    }
  }
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_pool_kinds[] = {&resample_kind, &max_pool_kind, &unpool_kind, NULL};

void mt_grad_register_pool(mt_autograd_ops *t) {
  t->max_pool = grad_max_pool;
  t->adaptive_max_pool = grad_adaptive_max_pool;
  t->resample = grad_resample;
  t->resample_backward = grad_resample_backward;
  t->max_unpool = grad_max_unpool;
}
