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

static void release_list(mt_tensor **ts, int64_t n) {
  for (int64_t i = 0; i < n; i++) mt_tensor_release(ts[i]);
}

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

/* One step's gates' gradient and its old cell state's (new references), composed of recorded ops:
 * gates = ig + hg (+ bi) (+ bh) of hidden size H, cx the old cell state, gh and gc the gradients of
 * hy and cy (one of them may be NULL); the tensors are borrowed. */
static mt_status lstm_step_composed(mt_tensor *ig, mt_tensor *hg, mt_tensor *cx, mt_tensor *bi, mt_tensor *bh,
                                    int64_t H, mt_tensor *gh, mt_tensor *gc, mt_tensor **dgates, mt_tensor **dcx) {
  scope A = {0}, S = {0}, *sc = &A;
  mt_tensor *gates = ADD(ig, hg);
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

/* the gates' gradient and cx's (new references), composed of recorded ops */
static mt_status lstm_composed(mt_node *n, mt_tensor *gh, mt_tensor *gc, mt_tensor **dgates, mt_tensor **dcx) {
  lstm_node *d = NODE_DATA(n, lstm_node);
  scope S = {0}, *sc = &S;
  mt_tensor *cx = saved(sc, n, &d->cx), *bi = saved(sc, n, &d->bi), *bh = saved(sc, n, &d->bh);
  mt_tensor *ig = saved(sc, n, &d->ig), *hg = saved(sc, n, &d->hg);
  mt_status s = LIVE(sc) ? lstm_step_composed(ig, hg, cx, bi, bh, d->hidden, gh, gc, dgates, dcx) : MT_OK;
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

/* ---------------------------------------------------------------- the LSTM's recurrence over a sequence */
typedef struct lstm_layer_node {
  mt_saved ig, h0, c0, w; /* the inputs */
  mt_saved hs, cs;        /* the outputs: every step's states */
  mt_saved ws;            /* every step's activated gates, for the fused backward */
  int32_t reverse;
} lstm_layer_node;
MT_NODE_DATA_FITS(lstm_layer_node);

/* the step run k-th (0-based) by the forward */
static inline int64_t layer_step(int64_t k, int64_t T, int reverse) { return reverse ? T - 1 - k : k; }

/* *acc += t (t borrowed; *acc a reference of the caller's, made from t on the first call) */
static mt_status add_into(mt_tensor **acc, mt_tensor *t) {
  if (!t) return MT_OK;
  if (!*acc) return *acc = mt_tensor_retain(t), MT_OK;
  mt_tensor *sum = NULL;
  MT_TRY(mt_binary(MT_OP_ADD, *acc, t, NULL, &sum));
  mt_tensor_release(*acc);
  *acc = sum;
  return MT_OK;
}

/* a view of step t of a [T, ...] tensor (NULL for NULL), kept by the scope */
static mt_tensor *step_of(scope *sc, mt_tensor *x, int64_t t) {
  return x ? SCOPED(mt_select(x, 0, t, &r_)) : NULL;
}

/* Not recorded: the steps back with the fused cell kernel, every step's gates' gradient written into
 * one [T, B, 4H] tensor, which is igates' gradient; w_hh's is that tensor's transpose times every
 * step's old hidden state, as one product (the states after steps 0 .. T-2 are rows of hs) plus
 * one for h0's step. */
static mt_status lstm_layer_fused(mt_node *n, mt_tensor *dhs, mt_tensor *dcs, mt_tensor **gin) {
  lstm_layer_node *d = NODE_DATA(n, lstm_layer_node);
  scope S = {0}, *sc = &S;
  mt_tensor *h0 = saved(sc, n, &d->h0), *c0 = saved(sc, n, &d->c0), *w = saved(sc, n, &d->w);
  mt_tensor *hs = saved(sc, n, &d->hs), *cs = saved(sc, n, &d->cs), *ws = saved(sc, n, &d->ws);
  if (LIVE(sc) && c0->_strides[1] != 1 && c0->_sizes[1] > 1) c0 = SCOPED(mt_contiguous(c0, &r_)); /* rows for the kernel */
  if (!LIVE(sc)) return scope_close(sc);
  int reverse = d->reverse;
  int64_t T = hs->_sizes[0], B = hs->_sizes[1], H = hs->_sizes[2], gsz[3] = {T, B, 4 * H};
  mt_device dev = mt_device_of(hs);
  mt_tensor *dg = NULL, *dh = NULL, *dc = NULL; /* owned: the gates' gradients, the carried dh and dc */
  mt_status s = mt_tensor_empty(gsz, 3, hs->_dtype, &dev, &dg);
  const mt_kernels *K = mt_kernels_of(hs);
  for (int64_t k = T - 1; k >= 0 && s == MT_OK; k--) {
    int64_t t = layer_step(k, T, reverse);
    mt_tensor *v[6] = {0}; /* dhy, dcy, cx, cy, ws, dgates of step t */
    mt_tensor *dhy = NULL, *dcy = NULL, *dcx = NULL;
    if (dhs) s = mt_select(dhs, 0, t, &v[0]);
    if (s == MT_OK && dcs) s = mt_select(dcs, 0, t, &v[1]);
    if (s == MT_OK) s = k > 0 ? mt_select(cs, 0, layer_step(k - 1, T, reverse), &v[2]) : (v[2] = mt_tensor_retain(c0), MT_OK);
    if (s == MT_OK) s = mt_select(cs, 0, t, &v[3]);
    if (s == MT_OK) s = mt_select(ws, 0, t, &v[4]);
    if (s == MT_OK) s = mt_select(dg, 0, t, &v[5]);
    if (s == MT_OK) s = add_into(&dhy, v[0]);
    if (s == MT_OK) s = add_into(&dhy, dh);
    if (s == MT_OK) s = add_into(&dcy, v[1]);
    if (s == MT_OK) s = add_into(&dcy, dc);
    /* the cell kernel reads rows with unit stride: a gradient that came in otherwise is copied */
    for (int i = 0; i < 2 && s == MT_OK; i++) {
      mt_tensor **p = i == 0 ? &dhy : &dcy, *c = NULL;
      if (!*p || (*p)->_strides[1] == 1 || H <= 1) continue;
      s = mt_contiguous(*p, &c);
      mt_tensor_release(*p);
      *p = c;
    }
    if (s == MT_OK) s = mt_tensor_empty(v[2]->_sizes, 2, hs->_dtype, &dev, &dcx);
    if (s == MT_OK && (dhy || dcy)) s = K->lstm_cell_backward(v[5], dcx, dhy, dcy, v[2], v[3], v[4]);
    else if (s == MT_OK) { /* no gradient reached this step or any after it */
      s = mt_fill_(v[5], 0);
      if (s == MT_OK) s = mt_fill_(dcx, 0);
    }
    mt_tensor_release(dh), dh = NULL;
    mt_tensor_release(dc), dc = dcx;
    if (s == MT_OK && (k > 0 || mt_node_wants(n, 1))) s = mt_mm(v[5], w, NULL, &dh);
    mt_tensor_release(dhy);
    mt_tensor_release(dcy);
    release_list(v, 6);
  }
  mt_tensor *dw = NULL;
  if (s == MT_OK && mt_node_wants(n, 3)) {
    /* the step run first took h0; the others the state after the step before */
    mt_tensor *first = NULL, *dgt = NULL, *a = NULL, *b = NULL, *at = NULL;
    s = mt_select(dg, 0, layer_step(0, T, reverse), &first);
    if (s == MT_OK) s = mt_transpose(first, 0, 1, &dgt);
    if (s == MT_OK) s = mt_mm(dgt, h0, NULL, &dw);
    if (s == MT_OK && T > 1) {
      int64_t fs[2] = {(T - 1) * B, 4 * H}, hsz[2] = {(T - 1) * B, H};
      /* forward: the gates of steps 1 .. T-1 against hs[0 .. T-2]; reverse: of 0 .. T-2 against hs[1 .. T-1] */
      mt_tensor *na = NULL, *nb = NULL;
      s = mt_narrow(dg, 0, reverse ? 0 : 1, T - 1, &na);
      if (s == MT_OK) s = mt_narrow(hs, 0, reverse ? 1 : 0, T - 1, &nb);
      if (s == MT_OK) s = mt_reshape(na, fs, 2, &a);
      if (s == MT_OK) s = mt_reshape(nb, hsz, 2, &b);
      if (s == MT_OK) s = mt_transpose(a, 0, 1, &at);
      if (s == MT_OK) s = mt_addmm(dw, at, b, 1.0, 1.0, dw, NULL);
      mt_tensor_release(na);
      mt_tensor_release(nb);
    }
    mt_tensor *rel[5] = {first, dgt, a, b, at};
    release_list(rel, 5);
  }
  if (s == MT_OK) {
    if (mt_node_wants(n, 0)) gin[0] = mt_tensor_retain(dg);
    if (mt_node_wants(n, 1)) gin[1] = mt_tensor_retain(dh);
    if (mt_node_wants(n, 2)) gin[2] = mt_tensor_retain(dc);
    if (mt_node_wants(n, 3)) gin[3] = mt_tensor_retain(dw);
  }
  mt_tensor *rel[4] = {dg, dh, dc, dw};
  release_list(rel, 4);
  mt_status s2 = scope_close(sc);
  return s ? s : s2;
}

/* Recorded (create_graph): each step's derivative composed of recorded ops, the gates recomputed
 * from the saved inputs and states (hs and cs unpack with this node as their grad_fn, so second
 * derivatives flow through them). */
static mt_status lstm_layer_composed(mt_node *n, mt_tensor *dhs, mt_tensor *dcs, mt_tensor **gin) {
  lstm_layer_node *d = NODE_DATA(n, lstm_layer_node);
  scope S = {0}, *sc = &S;
  mt_tensor *ig = saved(sc, n, &d->ig), *h0 = saved(sc, n, &d->h0), *c0 = saved(sc, n, &d->c0);
  mt_tensor *w = saved(sc, n, &d->w), *hs = saved(sc, n, &d->hs), *cs = saved(sc, n, &d->cs);
  mt_tensor *wt = TRANSPOSE(w, 0, 1);
  if (!LIVE(sc)) return scope_close(sc);
  int reverse = d->reverse;
  int64_t T = hs->_sizes[0], H = hs->_sizes[2];
  mt_tensor **dgs = calloc((size_t)(T > 0 ? T : 1), sizeof *dgs); /* owned, in time order */
  mt_tensor *dh = NULL, *dc = NULL, *dw = NULL;                     /* owned */
  mt_status s = dgs ? MT_OK : mt_error(MT_ENOMEM, "LstmLayerBackward0: out of memory");
  for (int64_t k = T - 1; k >= 0 && s == MT_OK; k--) {
    int64_t t = layer_step(k, T, reverse);
    scope P = {0}, *sc = &P;
    mt_tensor *hprev = k > 0 ? step_of(sc, hs, layer_step(k - 1, T, reverse)) : h0;
    mt_tensor *cprev = k > 0 ? step_of(sc, cs, layer_step(k - 1, T, reverse)) : c0;
    mt_tensor *gh = step_of(sc, dhs, t), *gc = step_of(sc, dcs, t);
    if (dh) gh = gh ? ADD(gh, dh) : dh;
    if (dc) gc = gc ? ADD(gc, dc) : dc;
    mt_tensor *dgates = NULL, *dcx = NULL;
    if (LIVE(sc) && (gh || gc)) {
      mt_tensor *hg = MATMUL(hprev, wt), *igt = step_of(sc, ig, t);
      if (LIVE(sc)) sc->s = lstm_step_composed(igt, hg, cprev, NULL, NULL, H, gh, gc, &dgates, &dcx);
    } else if (LIVE(sc)) {
      int64_t gsz[2] = {hs->_sizes[1], 4 * H};
      mt_tensor *z = ZEROS(hs, gsz, 2, hs->_dtype), *zc = ZEROS(hs, hs->_sizes + 1, 2, hs->_dtype);
      if (LIVE(sc)) dgates = mt_tensor_retain(z), dcx = mt_tensor_retain(zc);
    }
    if (dgates) {
      mt_tensor *kd = keep(sc, MT_OK, &dgates), *kc = keep(sc, MT_OK, &dcx);
      mt_tensor *ndh = k > 0 || mt_node_wants(n, 1) ? MATMUL(kd, w) : NULL;
      mt_tensor *ndw = mt_node_wants(n, 3) ? MATMUL(TRANSPOSE(kd, 0, 1), hprev) : NULL;
      if (LIVE(sc)) {
        dgs[t] = mt_tensor_retain(kd);
        mt_tensor_release(dh), dh = ndh ? mt_tensor_retain(ndh) : NULL;
        mt_tensor_release(dc), dc = mt_tensor_retain(kc);
        if (ndw) sc->s = add_into(&dw, ndw);
      }
    } else {
      mt_tensor_release(dcx);
    }
    s = scope_close(sc);
  }
  if (s == MT_OK) {
    if (mt_node_wants(n, 0)) s = mt_stack(dgs, (int)T, 0, NULL, &gin[0]);
    if (mt_node_wants(n, 1)) gin[1] = mt_tensor_retain(dh);
    if (mt_node_wants(n, 2)) gin[2] = mt_tensor_retain(dc);
    if (mt_node_wants(n, 3)) gin[3] = mt_tensor_retain(dw);
  }
  if (dgs) release_list(dgs, T);
  free(dgs);
  mt_tensor *rel[3] = {dh, dc, dw};
  release_list(rel, 3);
  mt_status s2 = scope_close(sc);
  return s ? s : s2;
}

static mt_status lstm_layer_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  if (!gout[0] && !gout[1]) return MT_OK;
  return mt_grad_mode ? lstm_layer_composed(n, gout[0], gout[1], gin) : lstm_layer_fused(n, gout[0], gout[1], gin);
}
static const mt_node_kind lstm_layer_kind = {.name = "LstmLayerBackward0", .backward = lstm_layer_backward,
                                             .nsaved = 7};

static mt_status grad_lstm_layer(mt_tensor *igates, mt_tensor *h0, mt_tensor *c0, mt_tensor *w_hh, int reverse,
                                 mt_tensor **hs, mt_tensor **cs) {
  mt_tensor *h, *c, *ws;
  MT_TRY(MT_NOGRAD(mt_lstm_layer_forward(igates, h0, c0, w_hh, reverse, &h, &c, &ws)));
  mt_tensor *in[4] = {igates, h0, c0, w_hh};
  mt_node *n;
  mt_status s = mt_node_make(&lstm_layer_kind, in, 4, 2, &n);
  if (s == MT_OK) {
    lstm_layer_node *d = NODE_DATA(n, lstm_layer_node);
    d->reverse = reverse != 0;
    mt_node_save(n, &d->ig, igates);
    mt_node_save(n, &d->h0, h0);
    mt_node_save(n, &d->c0, c0);
    mt_node_save(n, &d->w, w_hh);
    mt_node_save(n, &d->ws, ws);
    s = mt_node_save_output(n, &d->hs, h, 0);
    if (s == MT_OK) s = mt_node_save_output(n, &d->cs, c, 1);
    if (s == MT_OK) s = mt_node_attach(n, h, 0);
    if (s == MT_OK) s = mt_node_attach(n, c, 1);
    mt_node_release(n);
  }
  mt_tensor_release(ws);
  if (s) { mt_tensor_release(h); mt_tensor_release(c); return s; }
  mt_give(h, hs);
  return mt_give(c, cs);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_rnn_kinds[] = {&lstm_kind, &gru_kind, &unbind_kind, &lstm_layer_kind, NULL};

void mt_grad_register_rnn(mt_autograd_ops *t) {
  t->lstm_cell_pointwise = grad_lstm_cell_pointwise;
  t->gru_cell_pointwise = grad_gru_cell_pointwise;
  t->unbind = grad_unbind;
  t->lstm_layer = grad_lstm_layer;
}
