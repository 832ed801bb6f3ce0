/* rnn.c -- autograd for the recurrent layers' ops (core/ops/rnn.c): the LSTM and GRU time steps'
 * gate arithmetic and unbind. A backward that is not recorded (no create_graph) runs the fused
 * backward kernel, one pass over the step's rows; a recorded one composes the same derivative
 * from the front doors, recomputing the gates from the saved inputs, so that double backward
 * works. */
#include "formula.h"
#include "../ops/rnn.h"

#include <stdlib.h>

static inline mt_tensor *one_minus(scope *sc, mt_tensor *x) { return ADDS(NEG(x), 1.0); }
#define ONE_MINUS(x) one_minus(sc, x)
#define SIGMOID(x) UNARY(MT_OP_SIGMOID, x, 0, 0)
#define TANH(x) UNARY(MT_OP_TANH, x, 0, 0)

static mt_tensor *cat_n(scope *sc, mt_tensor **ts, int n, int dim) {
  if (!LIVE(sc)) return NULL;
  for (int i = 0; i < n; i++)
    if (!ts[i]) return NULL;
  return SCOPED(mt_cat(ts, n, dim, NULL, &r_));
}

/* ---------------------------------------------------------------- LSTM */
typedef struct lstm_node {
  mt_saved ig, hg, cx, bi, bh; /* the inputs, for a recorded backward */
  mt_saved ws, cy;             /* the activated gates and the new cell state, for the fused one */
  int64_t hidden;
} lstm_node;
MT_NODE_DATA_FITS(lstm_node);

/* t kept by scope `to` as well (formulas longer than one scope's room carry their values over) */
static mt_tensor *carry(scope *to, mt_tensor *t) {
  if (!t) {
    if (to->s == MT_OK) to->s = MT_ENOMEM; /* a failure is already recorded by the scope t came from */
    return NULL;
  }
  mt_tensor *r = mt_tensor_retain(t);
  return keep(to, MT_OK, &r);
}

/* the gates' gradient and cx's (new references), composed of recorded ops */
static mt_status lstm_composed(mt_node *n, mt_tensor *gh, mt_tensor *gc, mt_tensor **dgates, mt_tensor **dcx) {
  lstm_node *d = NODE_DATA(n, lstm_node);
  int64_t H = d->hidden;
  scope A = {0}, S = {0}, *sc = &A;
  mt_tensor *cx = saved(sc, n, &d->cx), *bi = saved(sc, n, &d->bi), *bh = saved(sc, n, &d->bh);
  mt_tensor *gates = ADD(saved(sc, n, &d->ig), saved(sc, n, &d->hg));
  if (bi) gates = ADD(gates, bi);
  if (bh) gates = ADD(gates, bh);
  mt_tensor *i = SIGMOID(NARROW(gates, 1, 0, H)), *f = SIGMOID(NARROW(gates, 1, H, H));
  mt_tensor *g = TANH(NARROW(gates, 1, 2 * H, H)), *o = SIGMOID(NARROW(gates, 1, 3 * H, H));
  mt_tensor *tc = TANH(ADD(MUL(f, cx), MUL(i, g)));
  if (!LIVE(sc)) return scope_close(sc);
  sc = &S;
  cx = carry(sc, cx), i = carry(sc, i), f = carry(sc, f), g = carry(sc, g), o = carry(sc, o), tc = carry(sc, tc);
  mt_status s = scope_close(&A);
  mt_tensor *dc = gc, *dout;
  if (gh) {
    mt_tensor *t = MUL(MUL(gh, o), ONE_MINUS(MUL(tc, tc)));
    dc = dc ? ADD(dc, t) : t;
    dout = MUL(MUL(gh, tc), MUL(o, ONE_MINUS(o)));
  } else {
    dout = LIVE(sc) ? ZEROS(o, o->_sizes, o->_ndim, o->_dtype) : NULL;
  }
  mt_tensor *parts[4] = {MUL(MUL(dc, g), MUL(i, ONE_MINUS(i))), MUL(MUL(dc, cx), MUL(f, ONE_MINUS(f))),
                         MUL(MUL(dc, i), ONE_MINUS(MUL(g, g))), dout};
  mt_tensor *dg = cat_n(sc, parts, 4, 1), *d0 = MUL(dc, f);
  if (LIVE(sc) && s == MT_OK) {
    *dgates = mt_tensor_retain(dg);
    *dcx = mt_tensor_retain(d0);
  }
  mt_status s2 = scope_close(sc);
  return s ? s : s2;
}

static mt_status lstm_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *gh = gout[0], *gc = gout[1];
  if (!gh && !gc) return MT_OK;
  scope S = {0}, *sc = &S;
  lstm_node *d = NODE_DATA(n, lstm_node);
  mt_tensor *dgates = NULL, *dcx = NULL;
  if (!mt_grad_mode) {
    mt_tensor *cx = saved(sc, n, &d->cx), *cy = saved(sc, n, &d->cy), *ws = saved(sc, n, &d->ws);
    if (LIVE(sc)) {
      mt_tensor *a = NULL, *b = NULL;
      mt_status s = mt_lstm_cell_backward(gh, gc, cx, cy, ws, &a, &b);
      dgates = keep(sc, s, &a);
      dcx = LIVE(sc) ? keep(sc, MT_OK, &b) : NULL;
    }
  } else {
    mt_tensor *a = NULL, *b = NULL;
    mt_status s = lstm_composed(n, gh, gc, &a, &b);
    dgates = keep(sc, s, &a);
    dcx = LIVE(sc) ? keep(sc, MT_OK, &b) : NULL;
  }
  if (LIVE(sc)) {
    if (mt_node_wants(n, 0)) give(gin, 0, dgates);
    if (mt_node_wants(n, 1)) give(gin, 1, dgates);
    if (mt_node_wants(n, 2)) give(gin, 2, dcx);
    if (mt_node_wants(n, 3) || mt_node_wants(n, 4)) {
      mt_tensor *db = SUM_DIM(dgates, 0, 0);
      if (LIVE(sc) && mt_node_wants(n, 3)) give(gin, 3, db);
      if (LIVE(sc) && mt_node_wants(n, 4)) give(gin, 4, db);
    }
  }
  return scope_close(sc);
}
static const mt_node_kind lstm_kind = {.name = "LstmCellPointwiseBackward0", .backward = lstm_backward, .nsaved = 7};

static mt_status grad_lstm_cell_pointwise(mt_tensor *igates, mt_tensor *hgates, mt_tensor *cx, mt_tensor *b_ih,
                                          mt_tensor *b_hh, mt_tensor **hy, mt_tensor **cy) {
  mt_tensor *h, *c, *ws;
  MT_TRY(MT_NOGRAD(mt_lstm_cell_forward(igates, hgates, cx, b_ih, b_hh, &h, &c, &ws)));
  mt_tensor *in[5] = {igates, hgates, cx, b_ih, b_hh};
  mt_node *n;
  mt_status s = mt_node_make(&lstm_kind, in, 5, 2, &n);
  if (s == MT_OK) {
    lstm_node *d = NODE_DATA(n, lstm_node);
    d->hidden = cx->_sizes[1];
    mt_node_save(n, &d->ig, igates);
    mt_node_save(n, &d->hg, hgates);
    mt_node_save(n, &d->cx, cx);
    mt_node_save(n, &d->bi, b_ih);
    mt_node_save(n, &d->bh, b_hh);
    mt_node_save(n, &d->ws, ws);
    s = mt_node_save_output(n, &d->cy, c, 1);
    if (s == MT_OK) s = mt_node_attach(n, h, 0);
    if (s == MT_OK) s = mt_node_attach(n, c, 1);
    mt_node_release(n);
  }
  mt_tensor_release(ws);
  if (s) { mt_tensor_release(h); mt_tensor_release(c); return s; }
  mt_give(h, hy);
  return mt_give(c, cy);
}

/* ---------------------------------------------------------------- GRU */
typedef struct gru_node {
  mt_saved ig, hg, hx, bi, bh, ws;
  int64_t hidden;
} gru_node;
MT_NODE_DATA_FITS(gru_node);

static mt_status gru_composed(mt_node *n, mt_tensor *g, mt_tensor **dig, mt_tensor **dhg, mt_tensor **dhx) {
  gru_node *d = NODE_DATA(n, gru_node);
  int64_t H = d->hidden;
  scope A = {0}, S = {0}, *sc = &A;
  mt_tensor *hx = saved(sc, n, &d->hx), *bi = saved(sc, n, &d->bi), *bh = saved(sc, n, &d->bh);
  mt_tensor *gi = saved(sc, n, &d->ig), *gg = saved(sc, n, &d->hg);
  if (bi) gi = ADD(gi, bi);
  if (bh) gg = ADD(gg, bh);
  mt_tensor *r = SIGMOID(ADD(NARROW(gi, 1, 0, H), NARROW(gg, 1, 0, H)));
  mt_tensor *z = SIGMOID(ADD(NARROW(gi, 1, H, H), NARROW(gg, 1, H, H)));
  mt_tensor *hn = NARROW(gg, 1, 2 * H, H);
  mt_tensor *nn = TANH(ADD(NARROW(gi, 1, 2 * H, H), MUL(r, hn)));
  if (!LIVE(sc)) return scope_close(sc);
  sc = &S;
  hx = carry(sc, hx), r = carry(sc, r), z = carry(sc, z), hn = carry(sc, hn), nn = carry(sc, nn);
  mt_status s = scope_close(&A);
  mt_tensor *dz = MUL(MUL(g, SUB(hx, nn)), MUL(z, ONE_MINUS(z)));
  mt_tensor *dn = MUL(MUL(g, ONE_MINUS(z)), ONE_MINUS(MUL(nn, nn)));
  mt_tensor *dr = MUL(MUL(dn, hn), MUL(r, ONE_MINUS(r)));
  mt_tensor *pi[3] = {dr, dz, dn}, *ph[3] = {dr, dz, MUL(dn, r)};
  mt_tensor *a = cat_n(sc, pi, 3, 1), *b = cat_n(sc, ph, 3, 1), *c = MUL(g, z);
  if (LIVE(sc) && s == MT_OK) {
    *dig = mt_tensor_retain(a);
    *dhg = mt_tensor_retain(b);
    *dhx = mt_tensor_retain(c);
  }
  mt_status s2 = scope_close(sc);
  return s ? s : s2;
}

static mt_status gru_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  scope S = {0}, *sc = &S;
  gru_node *d = NODE_DATA(n, gru_node);
  mt_tensor *dig = NULL, *dhg = NULL, *dhx = NULL;
  if (!mt_grad_mode) {
    mt_tensor *hx = saved(sc, n, &d->hx), *ws = saved(sc, n, &d->ws);
    if (LIVE(sc)) {
      mt_tensor *a = NULL, *b = NULL, *c = NULL;
      mt_status s = mt_gru_cell_backward(g, hx, ws, &a, &b, &c);
      dig = keep(sc, s, &a);
      dhg = LIVE(sc) ? keep(sc, MT_OK, &b) : NULL;
      dhx = LIVE(sc) ? keep(sc, MT_OK, &c) : NULL;
    }
  } else {
    mt_tensor *a = NULL, *b = NULL, *c = NULL;
    mt_status s = gru_composed(n, g, &a, &b, &c);
    dig = keep(sc, s, &a);
    dhg = LIVE(sc) ? keep(sc, MT_OK, &b) : NULL;
    dhx = LIVE(sc) ? keep(sc, MT_OK, &c) : NULL;
  }
  if (LIVE(sc)) {
    if (mt_node_wants(n, 0)) give(gin, 0, dig);
    if (mt_node_wants(n, 1)) give(gin, 1, dhg);
    if (mt_node_wants(n, 2)) give(gin, 2, dhx);
    mt_tensor *b3 = mt_node_wants(n, 3) ? SUM_DIM(dig, 0, 0) : NULL;
    mt_tensor *b4 = mt_node_wants(n, 4) ? SUM_DIM(dhg, 0, 0) : NULL;
    if (LIVE(sc) && b3) give(gin, 3, b3);
    if (LIVE(sc) && b4) give(gin, 4, b4);
  }
  return scope_close(sc);
}
static const mt_node_kind gru_kind = {.name = "GruCellPointwiseBackward0", .backward = gru_backward, .nsaved = 6};

static mt_status grad_gru_cell_pointwise(mt_tensor *igates, mt_tensor *hgates, mt_tensor *hx, mt_tensor *b_ih,
                                         mt_tensor *b_hh, mt_tensor **hy) {
  mt_tensor *h, *ws;
  MT_TRY(MT_NOGRAD(mt_gru_cell_forward(igates, hgates, hx, b_ih, b_hh, &h, &ws)));
  mt_tensor *in[5] = {igates, hgates, hx, b_ih, b_hh};
  mt_node *n;
  mt_status s = mt_node_make(&gru_kind, in, 5, 1, &n);
  if (s == MT_OK) {
    gru_node *d = NODE_DATA(n, gru_node);
    d->hidden = hx->_sizes[1];
    mt_node_save(n, &d->ig, igates);
    mt_node_save(n, &d->hg, hgates);
    mt_node_save(n, &d->hx, hx);
    mt_node_save(n, &d->bi, b_ih);
    mt_node_save(n, &d->bh, b_hh);
    mt_node_save(n, &d->ws, ws);
    s = mt_node_attach_new(n, h);
  }
  mt_tensor_release(ws);
  if (s) { mt_tensor_release(h); return s; }
  return mt_give(h, hy);
}

/* ---------------------------------------------------------------- unbind */
/* the views' gradients stacked back along dim (zeros for a view that got none) */
typedef struct unbind_node {
  int32_t dim;
  mt_shape in;
} unbind_node;
MT_NODE_DATA_FITS(unbind_node);

static mt_status unbind_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  if (!mt_node_wants(n, 0)) return MT_OK;
  unbind_node *d = NODE_DATA(n, unbind_node);
  int count = n->nout;
  mt_tensor *some = NULL;
  for (int i = 0; i < count && !some; i++) some = gout[i];
  if (!some) return MT_OK;
  mt_tensor **parts = malloc(sizeof(mt_tensor *) * (size_t)count);
  if (!parts) return mt_error(MT_ENOMEM, "UnbindBackward0: out of memory");
  mt_tensor *zeros = NULL;
  mt_status s = MT_OK;
  for (int i = 0; i < count && s == MT_OK; i++) {
    parts[i] = gout[i];
    if (!parts[i]) {
      if (!zeros) {
        mt_device dev = mt_device_of(some);
        s = mt_tensor_full(some->_sizes, some->_ndim, some->_dtype, 0, &dev, &zeros);
      }
      parts[i] = zeros;
    }
  }
  if (s == MT_OK) s = mt_stack(parts, count, d->dim, NULL, &gin[0]);
  mt_tensor_release(zeros);
  free(parts);
  return s;
}
static const mt_node_kind unbind_kind = {.name = "UnbindBackward0", .backward = unbind_backward, .view = 1};

static mt_status grad_unbind(mt_tensor *t, int dim, mt_tensor **out) {
  MT_TRY(MT_NOGRAD(mt_unbind(t, dim, out)));
  int d = dim < 0 ? dim + t->_ndim : dim;
  int64_t count = t->_sizes[d];
  if (!mt_is_float(t->_dtype) || count == 0) return MT_OK;
  mt_status s = MT_OK;
  if (count > INT16_MAX)
    s = mt_error(MT_ENOTIMPL, "unbind: at most %d views are recorded for autograd, got %lld", INT16_MAX,
                 (long long)count);
  mt_node *n = NULL;
  if (s == MT_OK) s = mt_node_make(&unbind_kind, &t, 1, (int)count, &n);
  if (s == MT_OK) {
    unbind_node *nd = NODE_DATA(n, unbind_node);
    nd->dim = d;
    mt_shape_of(&nd->in, t);
    for (int64_t i = 0; i < count && s == MT_OK; i++) s = mt_node_attach(n, out[i], (int)i);
    mt_node_release(n);
  }
  if (s)
    for (int64_t i = 0; i < count; i++) mt_tensor_release(out[i]), out[i] = NULL;
  return s;
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_rnn_kinds[] = {&lstm_kind, &gru_kind, &unbind_kind, NULL};

void mt_grad_register_rnn(mt_autograd_ops *t) {
  t->lstm_cell_pointwise = grad_lstm_cell_pointwise;
  t->gru_cell_pointwise = grad_gru_cell_pointwise;
  t->unbind = grad_unbind;
}
