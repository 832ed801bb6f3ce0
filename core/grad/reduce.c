/* reduce.c -- autograd for the reductions (core/ops/reduce.c): sum, mean, prod, amax, amin, var,
 * std, norm, logsumexp, nansum; max/min along a dim; softmax and log_softmax; cumsum and cumprod;
 * var_mean and std_mean. */
#include "formula.h"

#include "../ops/softmax.h"

/* ---------------------------------------------------------------- reduced dims */
/* Which dims of the input a reduction reduced, whether it kept them, and the input's shape. */
typedef struct reduced_dims {
  int32_t keepdim;
  int32_t mask; /* bit d: dim d was reduced */
  mt_shape in;
} reduced_dims;

static void reduced_dims_of(reduced_dims *r, const mt_tensor *a, const int64_t *dims, int ndims, int keepdim) {
  int mask = 0;
  if (ndims == 0) mask = (1 << a->_ndim) - 1;
  for (int i = 0; i < ndims; i++) mask |= 1 << (dims[i] < 0 ? dims[i] + a->_ndim : dims[i]);
  r->keepdim = keepdim;
  r->mask = mask;
  mt_shape_of(&r->in, a);
}

/* a gradient of the reduction's result (its shape) back at the input's shape */
static mt_tensor *unreduce(scope *sc, mt_tensor *g, const reduced_dims *r) {
  if (!r->keepdim)
    for (int d = 0; g && d < r->in.ndim; d++)
      if (r->mask & (1 << d)) g = UNSQUEEZE(g, d);
  return EXPAND_TO(g, &r->in);
}

/* the number of input elements each result element reduced */
static int64_t reduced_count(const reduced_dims *r) {
  int64_t c = 1;
  for (int d = 0; d < r->in.ndim; d++)
    if (r->mask & (1 << d)) c *= r->in.sizes[d];
  return c;
}

/* x reduced by op over the same dims, keeping them */
static mt_tensor *reduce_keep(scope *sc, mt_op op, mt_tensor *x, const reduced_dims *r) {
  int64_t dims[MT_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < r->in.ndim; d++)
    if (r->mask & (1 << d)) dims[nd++] = d;
  return x ? SCOPED(mt_reduce(op, x, dims, nd, 1, -1, 0, NULL, &r_)) : NULL;
}

/* d/dx_j of the product of a line: (prod_{i<j} x_i) * (prod_{i>j} x_i), exact with zeros. Lines
 * along the last dim of x (size len >= 1). */
static mt_tensor *prod_grad_lines(scope *sc, mt_tensor *x) {
  if (!LIVE(sc) || !x) return NULL;
  int nd = x->_ndim;
  int64_t len = x->_sizes[nd - 1];
  int64_t os[MT_MAX_DIMS];
  memcpy(os, x->_sizes, sizeof os);
  os[nd - 1] = 1;
  mt_tensor *one = FULL(x, os, nd, x->_dtype, 1);
  mt_tensor *head = NARROW(x, nd - 1, 0, len - 1);
  mt_tensor *before = CUMULATIVE(CAT2(one, head, nd - 1), nd - 1, 1);
  mt_tensor *headf = NARROW(FLIP_DIM(x, nd - 1), nd - 1, 0, len - 1);
  mt_tensor *after = FLIP_DIM(CUMULATIVE(CAT2(one, headf, nd - 1), nd - 1, 1), nd - 1);
  return MUL(before, after);
}

/* ---------------------------------------------------------------- reductions */
typedef struct reduce_node {
  mt_saved x; /* the input: all but sum and mean */
  mt_saved y; /* the result: prod, amax, amin, std, norm, logsumexp */
  int32_t op, all;
  double p; /* var/std's correction, norm's order */
  reduced_dims r;
} reduce_node;
MT_NODE_DATA_FITS(reduce_node);

static const char *reduce_grad_name(mt_op op, int all) {
  switch (op) {
    case MT_OP_SUM: return all ? "SumBackward0" : "SumBackward1";
    case MT_OP_MEAN: return all ? "MeanBackward0" : "MeanBackward1";
    case MT_OP_PROD: return all ? "ProdBackward0" : "ProdBackward1";
    case MT_OP_AMAX: return "AmaxBackward0";
    case MT_OP_AMIN: return "AminBackward0";
    case MT_OP_VAR: return "VarBackward0";
    case MT_OP_STD: return "StdBackward0";
    case MT_OP_NORM: return "NormBackward1"; /* PyTorch 1.13's Tensor.norm, with or without dims */
    case MT_OP_LOGSUMEXP: return "LogsumexpBackward0";
    case MT_OP_NANSUM: return "NansumBackward0";
    default: return NULL;
  }
}
static const char *reduce_name_of(const mt_node *n) {
  const reduce_node *d = NODE_DATA(n, reduce_node);
  return reduce_grad_name(d->op, d->all);
}
static const char *reduce_names(int i) {
  if (i >= 2 * MT_OP_COUNT) return NULL;
  const char *s = reduce_grad_name(i / 2, i % 2);
  return s ? s : "";
}

static mt_status reduce_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  reduce_node *d = NODE_DATA(n, reduce_node);
  const reduced_dims *rd = &d->r;
  mt_tensor *g = gout[0], *r = NULL;
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *x = saved(sc, n, &d->x), *y = saved(sc, n, &d->y);
  mt_tensor *ge = unreduce(sc, g, rd);
  double p = d->p;
  switch (d->op) {
    case MT_OP_SUM: r = ge; break;
    case MT_OP_NANSUM:
      r = MUL(ge, MASK_AS(UNARY(MT_OP_LOGICAL_NOT, UNARY(MT_OP_ISNAN, x, 0, 0), 0, 0), ge));
      break;
    case MT_OP_MEAN: r = MULS(ge, 1.0 / (double)reduced_count(rd)); break;
    case MT_OP_PROD: {
      /* kept dims first, reduced dims flattened last: the product of each line, zeros allowed */
      const mt_shape *in = &rd->in;
      if (in->ndim == 0) { r = ge; break; }
      int64_t perm[MT_MAX_DIMS], inv[MT_MAX_DIMS], ls[MT_MAX_DIMS], ps[MT_MAX_DIMS];
      int k = 0, nk = 0;
      int64_t len = 1;
      for (int i = 0; i < in->ndim; i++)
        if (!(rd->mask & (1 << i))) { perm[k] = i; ls[nk++] = in->sizes[i]; ps[k++] = in->sizes[i]; }
      for (int i = 0; i < in->ndim; i++)
        if (rd->mask & (1 << i)) { perm[k] = i; len *= in->sizes[i]; ps[k++] = in->sizes[i]; }
      for (int i = 0; i < in->ndim; i++) inv[perm[i]] = i;
      if (len == 0) { r = MULS(ge, 0); break; }
      ls[nk] = len;
      mt_tensor *xl = RESHAPE(PERMUTE(x, perm, in->ndim), ls, nk + 1);
      ls[nk] = 1;
      mt_tensor *gl = RESHAPE(g, ls, nk + 1);
      mt_tensor *rl = MUL(prod_grad_lines(sc, xl), gl);
      r = PERMUTE(RESHAPE(rl, ps, in->ndim), inv, in->ndim);
      break;
    }
    case MT_OP_AMAX: case MT_OP_AMIN: {
      /* the gradient shared evenly among the elements equal to the result */
      mt_tensor *m = MASK_AS(CMP(MT_OP_EQ, x, unreduce(sc, y, rd)), ge);
      r = MUL(ge, DIV(m, EXPAND_TO(reduce_keep(sc, MT_OP_SUM, m, rd), &rd->in)));
      break;
    }
    case MT_OP_VAR: case MT_OP_STD: {
      mt_tensor *mean = reduce_keep(sc, MT_OP_MEAN, x, rd);
      double dof = (double)reduced_count(rd) - p;
      mt_tensor *dev = SUB(x, mean);
      if (d->op == MT_OP_VAR) r = MUL(ge, MULS(dev, 2.0 / dof));
      else r = MUL(ge, DIV(MULS(dev, 1.0 / dof), unreduce(sc, y, rd)));
      break;
    }
    case MT_OP_NORM: {
      mt_tensor *ny = unreduce(sc, y, rd);
      if (p == 2) r = MUL(ge, DIV(x, ny));
      else if (p == 1) r = MUL(ge, UNARY(MT_OP_SIGN, x, 0, 0));
      else if (isinf(p)) {
        mt_tensor *ax = UNARY(MT_OP_ABS, x, 0, 0);
        mt_tensor *m = MASK_AS(CMP(MT_OP_EQ, ax, ny), ge);
        r = MUL(MUL(ge, UNARY(MT_OP_SIGN, x, 0, 0)),
                DIV(m, EXPAND_TO(reduce_keep(sc, MT_OP_SUM, m, rd), &rd->in)));
      } else {
        mt_tensor *ax = UNARY(MT_OP_ABS, x, 0, 0);
        r = MUL(ge, DIV(MUL(x, UNARY(MT_OP_POW_SCALAR, ax, p - 2, 0)), UNARY(MT_OP_POW_SCALAR, ny, p - 1, 0)));
      }
      break;
    }
    case MT_OP_LOGSUMEXP: r = MUL(ge, UNARY(MT_OP_EXP, SUB(x, unreduce(sc, y, rd)), 0, 0)); break;
    default: S.s = mt_error(MT_ENOTIMPL, "backward: %s is not differentiable", MT_OP_NAME(d->op));
  }
  /* a reduction given a dtype (x:sum({dtype=torch.float64})) hands back the input's dtype */
  if (LIVE(sc) && r && r->_dtype != rd->in.dtype) r = TO_DTYPE(r, rd->in.dtype);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

static const mt_node_kind reduce_kind = {
    .name_of = reduce_name_of, .names = reduce_names, .backward = reduce_backward, .nsaved = 2};

static mt_status grad_reduce(mt_op op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, int dtype, double p,
                             mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, MT_OP_NAME(op)));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_reduce(op, a, dims, ndims, keepdim, dtype, p, NULL, &r)));
  mt_status s = MT_OK;
  if (mt_is_float(r->_dtype) && reduce_grad_name(op, 1) != NULL) {
    mt_node *n;
    s = mt_node_make(&reduce_kind, &a, 1, 1, &n);
    if (s == MT_OK) {
      reduce_node *d = NODE_DATA(n, reduce_node);
      d->op = op;
      d->all = ndims == 0;
      d->p = p;
      reduced_dims_of(&d->r, a, dims, ndims, keepdim);
      if (op != MT_OP_SUM && op != MT_OP_MEAN) mt_node_save(n, &d->x, a);
      if (op == MT_OP_PROD || op == MT_OP_AMAX || op == MT_OP_AMIN || op == MT_OP_STD ||
          op == MT_OP_NORM || op == MT_OP_LOGSUMEXP)
        mt_node_save_output(n, &d->y, r, 0);
      s = mt_node_attach_new(n, r);
    }
  }
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- max/min along a dim */
typedef struct reduce_index_node {
  mt_saved index; /* where each value came from along dim (0-based int64) */
  int32_t dim, keepdim, is_min;
  mt_shape in;
} reduce_index_node;
MT_NODE_DATA_FITS(reduce_index_node);

static const char *reduce_index_name_of(const mt_node *n) {
  return NODE_DATA(n, reduce_index_node)->is_min ? "MinBackward0" : "MaxBackward0";
}
static const char *reduce_index_names(int i) { return i == 0 ? "MaxBackward0" : i == 1 ? "MinBackward0" : NULL; }

/* the gradient goes to the chosen index */
static mt_status reduce_index_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  reduce_index_node *d = NODE_DATA(n, reduce_index_node);
  mt_tensor *g = gout[0];
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *idx = saved(sc, n, &d->index);
  if (!d->keepdim) {
    g = UNSQUEEZE(g, d->dim);
    idx = UNSQUEEZE(idx, d->dim);
  }
  mt_tensor *z = ZEROS_OF(g, &d->in, g ? g->_dtype : MT_FLOAT32);
  mt_tensor *r = z && idx && g ? SCOPED(mt_scatter(z, d->dim, idx, g, 0, 1, 0, NULL, &r_)) : NULL;
  if (LIVE(sc)) give(gin, 0, r);
  return scope_close(sc);
}

static const mt_node_kind reduce_index_kind = {.name_of = reduce_index_name_of,
                                               .names = reduce_index_names,
                                               .backward = reduce_index_backward,
                                               .nsaved = 1};

static mt_status grad_reduce_with_index(mt_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                                        mt_tensor **values, mt_tensor **indices) {
  mt_tensor *v, *i;
  MT_TRY(MT_NOGRAD(mt_reduce_with_index(a, dim, keepdim, is_min, index_base, &v, &i)));
  mt_status s = MT_OK;
  if (mt_is_float(v->_dtype)) {
    mt_tensor *i0 = NULL; /* the indices 0-based for the backward */
    s = index_base ? MT_NOGRAD(mt_binary_scalar(MT_OP_SUB, i, (double)index_base, 1, 0, NULL, &i0))
                   : (i0 = mt_tensor_retain(i), MT_OK);
    mt_node *n;
    if (s == MT_OK) s = mt_node_make(&reduce_index_kind, &a, 1, 1, &n);
    if (s == MT_OK) {
      reduce_index_node *d = NODE_DATA(n, reduce_index_node);
      d->dim = dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim;
      d->keepdim = keepdim;
      d->is_min = is_min;
      mt_shape_of(&d->in, a);
      mt_node_save(n, &d->index, i0);
      s = mt_node_attach_new(n, v);
    }
    mt_tensor_release(i0);
  }
  if (s) { mt_tensor_release(v); mt_tensor_release(i); return s; }
  mt_give(v, values);
  return mt_give(i, indices);
}

/* ---------------------------------------------------------------- softmax, log_softmax */
typedef struct softmax_node {
  mt_saved y; /* the result */
  int32_t dim, log;
} softmax_node;
MT_NODE_DATA_FITS(softmax_node);

static const char *softmax_name_of(const mt_node *n) {
  return NODE_DATA(n, softmax_node)->log ? "LogSoftmaxBackward0" : "SoftmaxBackward0";
}
static const char *softmax_names(int i) {
  return i == 0 ? "SoftmaxBackward0" : i == 1 ? "LogSoftmaxBackward0" : NULL;
}

static mt_status softmax_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  softmax_node *d = NODE_DATA(n, softmax_node);
  mt_tensor *g = gout[0], *r = NULL;
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *y = saved(sc, n, &d->y);
  /* s6-vec: one fused kernel when the backward is not recorded (core/ops/softmax.c) */
  if (LIVE(sc) && !mt_grad_mode && y && mt_softmax_backward_data(g, y, d->dim, d->log, &r) == MT_OK)
    r = keep(sc, MT_OK, &r);
  else if (d->log) r = SUB(g, MUL(UNARY(MT_OP_EXP, y, 0, 0), SUM_DIM(g, d->dim, 1)));
  else r = MUL(y, SUB(g, SUM_DIM(MUL(g, y), d->dim, 1)));
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

static const mt_node_kind softmax_kind = {
    .name_of = softmax_name_of, .names = softmax_names, .backward = softmax_backward, .nsaved = 1};

static mt_status grad_softmax(mt_tensor *a, int dim, int log, int dtype, mt_tensor **result) {
  if (dtype >= 0 && dtype != a->_dtype) {
    /* as PyTorch: the input converted first (ToCopyBackward0, which hands the gradient back in the
     * input's dtype), then the softmax of the converted tensor */
    mt_tensor *c = NULL;
    MT_TRY(mt_to(a, dtype, NULL, 0, &c));
    mt_status s = grad_softmax(c, dim, log, -1, result);
    mt_tensor_release(c);
    return s;
  }
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_softmax(a, dim, log, dtype, &r)));
  mt_status s = MT_OK;
  if (mt_is_float(r->_dtype)) {
    mt_node *n;
    s = mt_node_make(&softmax_kind, &a, 1, 1, &n);
    if (s == MT_OK) {
      softmax_node *d = NODE_DATA(n, softmax_node);
      d->dim = dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim;
      d->log = log;
      mt_node_save_output(n, &d->y, r, 0);
      s = mt_node_attach_new(n, r);
    }
  }
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- cumsum, cumprod */
typedef struct cumulative_node {
  mt_saved x; /* the input: cumprod */
  int32_t dim;
  mt_shape in;
} cumulative_node;
MT_NODE_DATA_FITS(cumulative_node);

/* cumsum: each input gets the sum of the output gradients from its position on */
static mt_status cumsum_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  cumulative_node *d = NODE_DATA(n, cumulative_node);
  mt_tensor *g = gout[0], *r;
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  if (d->in.ndim == 0) r = g;
  else r = ADD(SUB(g, CUMULATIVE(g, d->dim, 0)), SUM_DIM(g, d->dim, 1));
  r = TO_DTYPE(r, d->in.dtype);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

/* cumprod: dy_k/dx_j = prod_{i<=k, i!=j} x_i for k >= j, built as an (n, n) matrix per line (row
 * j: the line with x_j replaced by 1, cumulated), so that zeros in the input are exact. */
static mt_status cumprod_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  cumulative_node *d = NODE_DATA(n, cumulative_node);
  mt_tensor *g = gout[0], *r = NULL;
  if (!g || !mt_node_wants(n, 0)) return MT_OK;
  mt_tensor *x = saved(sc, n, &d->x);
  int dim = d->dim, nd = d->in.ndim;
  if (nd == 0) {
    r = g;
  } else if (d->in.sizes[dim] == 0) {
    r = MULS(g, 0);
  } else {
    x = TO_DTYPE(x, g->_dtype);
    int64_t len = d->in.sizes[dim];
    mt_tensor *xt = TRANSPOSE(x, dim, -1);
    mt_tensor *gt = TRANSPOSE(g, dim, -1);
    mt_shape es; /* (..., j, i) */
    es.ndim = nd + 1;
    for (int i = 0; i < nd; i++) es.sizes[i] = xt ? xt->_sizes[i] : 0;
    es.sizes[nd] = len;
    es.sizes[nd - 1] = len;
    mt_tensor *e = EXPAND_TO(UNSQUEEZE(xt, -2), &es);
    mt_device dev = mt_device_of(g);
    mt_tensor *eye = SCOPED(mt_eye(len, len, g->_dtype, &dev, &r_));
    mt_tensor *m = ADD(MUL(e, NEG(ADDS(eye, -1))), eye);
    mt_tensor *p = CUMULATIVE(m, nd, 1); /* p[j, k] = prod_{i<=k, i!=j} x_i */
    mt_tensor *ones = FULL(g, es.sizes + nd - 1, 2, g->_dtype, 1);
    mt_tensor *upper = ones ? SCOPED(mt_triangle(ones, 0, 1, NULL, &r_)) : NULL; /* k >= j */
    mt_tensor *t = MUL(MUL(p, UNSQUEEZE(gt, -2)), upper);
    r = TRANSPOSE(SUM_DIM(t, -1, 0), dim, -1);
  }
  r = TO_DTYPE(r, d->in.dtype);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

static const mt_node_kind cumsum_kind = {.name = "CumsumBackward0", .backward = cumsum_backward, .nsaved = 1};
static const mt_node_kind cumprod_kind = {.name = "CumprodBackward0", .backward = cumprod_backward, .nsaved = 1};

static mt_status grad_cumulative(mt_tensor *a, int dim, int is_prod, int dtype, mt_tensor *out, mt_tensor **result) {
  MT_TRY(mt_grad_check_out(out, true, is_prod ? "cumprod" : "cumsum"));
  mt_tensor *r = NULL;
  MT_TRY(MT_NOGRAD(mt_cumulative(a, dim, is_prod, dtype, NULL, &r)));
  mt_status s = MT_OK;
  if (mt_is_float(r->_dtype)) {
    mt_node *n;
    s = mt_node_make(is_prod ? &cumprod_kind : &cumsum_kind, &a, 1, 1, &n);
    if (s == MT_OK) {
      cumulative_node *d = NODE_DATA(n, cumulative_node);
      d->dim = a->_ndim ? (dim < 0 ? dim + a->_ndim : dim) : 0;
      mt_shape_of(&d->in, a);
      if (is_prod) mt_node_save(n, &d->x, a);
      s = mt_node_attach_new(n, r);
    }
  }
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- var_mean, std_mean */
/* two outputs: (var or std, mean) */
typedef struct var_mean_node {
  mt_saved x;   /* the input */
  mt_saved std; /* std_mean: the std */
  int32_t take_sqrt;
  double correction;
  reduced_dims r;
} var_mean_node;
MT_NODE_DATA_FITS(var_mean_node);

static const char *var_mean_name_of(const mt_node *n) {
  return NODE_DATA(n, var_mean_node)->take_sqrt ? "StdMeanBackward0" : "VarMeanBackward0";
}
static const char *var_mean_names(int i) {
  return i == 0 ? "VarMeanBackward0" : i == 1 ? "StdMeanBackward0" : NULL;
}

static mt_status var_mean_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  var_mean_node *d = NODE_DATA(n, var_mean_node);
  mt_tensor *gv = gout[0], *gm = gout[1], *r = NULL;
  if (!mt_node_wants(n, 0) || (!gv && !gm)) return MT_OK;
  double count = (double)reduced_count(&d->r);
  if (gv) {
    mt_tensor *x = saved(sc, n, &d->x);
    mt_tensor *dev = SUB(x, reduce_keep(sc, MT_OP_MEAN, x, &d->r));
    double dof = count - d->correction;
    mt_tensor *ge = unreduce(sc, gv, &d->r);
    if (d->take_sqrt) r = MUL(ge, DIV(MULS(dev, 1.0 / dof), unreduce(sc, saved(sc, n, &d->std), &d->r)));
    else r = MUL(ge, MULS(dev, 2.0 / dof));
  }
  if (gm) {
    mt_tensor *m = MULS(unreduce(sc, gm, &d->r), 1.0 / count);
    r = r ? ADD(r, m) : m;
  }
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

static const mt_node_kind var_mean_kind = {
    .name_of = var_mean_name_of, .names = var_mean_names, .backward = var_mean_backward, .nsaved = 2};

static mt_status grad_var_mean(mt_tensor *a, const int64_t *dims, int ndims, double correction, int keepdim,
                               int take_sqrt, mt_tensor **var, mt_tensor **mean) {
  mt_tensor *v = NULL, *m = NULL;
  MT_TRY(MT_NOGRAD(mt_var_mean(a, dims, ndims, correction, keepdim, take_sqrt, &v, &m)));
  mt_status s = MT_OK;
  if (mt_is_float(v->_dtype)) {
    mt_node *n;
    s = mt_node_make(&var_mean_kind, &a, 1, 2, &n);
    if (s == MT_OK) {
      var_mean_node *d = NODE_DATA(n, var_mean_node);
      d->take_sqrt = take_sqrt;
      d->correction = correction;
      reduced_dims_of(&d->r, a, dims, ndims, keepdim);
      mt_node_save(n, &d->x, a);
      if (take_sqrt) mt_node_save_output(n, &d->std, v, 0);
      s = mt_node_attach(n, v, 0);
      if (s == MT_OK) s = mt_node_attach(n, m, 1);
      mt_node_release(n);
    }
  }
  if (s) { mt_tensor_release(v); mt_tensor_release(m); return s; }
  mt_give(v, var);
  return mt_give(m, mean);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_reduce_kinds[] = {&reduce_kind, &reduce_index_kind, &softmax_kind, &cumsum_kind,
                                                &cumprod_kind, &var_mean_kind, NULL};

void mt_grad_register_reduce(mt_autograd_ops *t) {
  t->reduce = grad_reduce;
  t->reduce_with_index = grad_reduce_with_index;
  t->softmax = grad_softmax;
  t->cumulative = grad_cumulative;
  t->var_mean = grad_var_mean;
}
