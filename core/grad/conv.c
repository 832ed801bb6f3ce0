/* conv.c -- autograd for convolution, im2col and col2im (core/ops/conv.c; issue 12, conv part).
 *
 * Convolution's backward is written with the front doors, so that it records itself under
 * create_graph (double backward): the input's gradient is the transposed convolution of the
 * output's gradient with the same weight (and a transposed convolution's, the plain one); the
 * weight's is, per group, the output's gradient times the columns of the input (im2col), one
 * batched product over (sample, group) summed over the samples; the bias's, the output's gradient
 * summed over everything but channels. im2col and col2im are each other's backward. A backward
 * that is not recorded computes the weight's gradient in one pass instead (mt_conv_weight_grad). */
#include "formula.h"
#include "../ops/conv.h"

/* ---------------------------------------------------------------- helpers */
static mt_tensor *f_conv(scope *sc, mt_tensor *x, mt_tensor *w, const int64_t *s, const int64_t *p,
                         const int64_t *d, int transposed, const int64_t *op, int64_t groups, int nsp) {
  return x && w ? SCOPED(mt_convolution(x, w, NULL, s, p, d, transposed, op, groups, nsp, &r_)) : NULL;
}
static mt_tensor *f_im2col(scope *sc, mt_tensor *x, const int64_t *k, const int64_t *d, const int64_t *p,
                           const int64_t *s, int nsp) {
  return x ? SCOPED(mt_im2col(x, k, d, p, s, nsp, &r_)) : NULL;
}
static mt_tensor *f_col2im(scope *sc, mt_tensor *c, const int64_t *size, const int64_t *k, const int64_t *d,
                           const int64_t *p, const int64_t *s, int nsp) {
  return c ? SCOPED(mt_col2im(c, size, k, d, p, s, nsp, &r_)) : NULL;
}
#define CONV(x, w, s, p, d, tr, op, g, nsp) f_conv(sc, x, w, s, p, d, tr, op, g, nsp)
#define IM2COL(x, k, d, p, s, nsp) f_im2col(sc, x, k, d, p, s, nsp)
#define COL2IM(c, size, k, d, p, s, nsp) f_col2im(sc, c, size, k, d, p, s, nsp)

/* t's spatial dims (from 2) narrowed to `to` where longer */
static mt_tensor *narrow_spatial(scope *sc, mt_tensor *t, const int64_t *to, int nsp) {
  for (int i = 0; t && i < nsp; i++)
    if (t->_sizes[2 + i] > to[i]) t = NARROW(t, 2 + i, 0, to[i]);
  return t;
}

/* ---------------------------------------------------------------- convolution */
typedef struct conv_node {
  mt_saved input;  /* kept when the weight needs a gradient */
  mt_saved weight; /* kept when the input needs a gradient */
  int32_t nsp, transposed;
  int64_t groups;
  int64_t s[3], p[3], d[3], op[3];
  int64_t k[3];       /* kernel */
  int64_t in[3];      /* the input's spatial sizes */
  int64_t N, C, Cout; /* batch, input channels, output channels */
  int64_t wsizes[5];  /* the weight's shape */
} conv_node;
MT_NODE_DATA_FITS(conv_node);

static mt_status conv_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  conv_node *d = NODE_DATA(n, conv_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  int nsp = d->nsp;
  int64_t G = d->groups;
  mt_tensor *x = saved(sc, n, &d->input), *w = saved(sc, n, &d->weight);
  mt_tensor *gx = NULL, *gw = NULL, *gb = NULL;
  if (mt_node_wants(n, 0)) {
    if (!d->transposed) {
      /* the transposed convolution, its output_padding making up what the stride left over */
      int64_t op[3];
      for (int i = 0; i < nsp; i++)
        op[i] = d->in[i] - ((g->_sizes[2 + i] - 1) * d->s[i] - 2 * d->p[i] + d->d[i] * (d->k[i] - 1) + 1);
      gx = CONV(g, w, d->s, d->p, d->d, 1, op, G, nsp);
    } else {
      gx = narrow_spatial(sc, CONV(g, w, d->s, d->p, d->d, 0, NULL, G, nsp), d->in, nsp);
    }
  }
  if (mt_node_wants(n, 1) && !mt_grad_mode) {
    /* not recorded: the products straight into the weight's shape (core/ops/conv.c) */
    gw = SCOPED(mt_conv_weight_grad(g, x, d->wsizes, d->s, d->p, d->d, d->transposed, G, nsp, &r_));
  } else if (mt_node_wants(n, 1)) {
    int64_t K = d->k[0] * (nsp > 1 ? d->k[1] : 1) * (nsp > 2 ? d->k[2] : 1);
    int64_t Lin = d->in[0] * (nsp > 1 ? d->in[1] : 1) * (nsp > 2 ? d->in[2] : 1);
    mt_tensor *a = NULL, *cols = NULL;
    if (!d->transposed) {
      /* per (sample, group): g (Cout/G x L) @ cols(x)^T (L x C/G K) */
      int64_t L = 1;
      for (int i = 0; i < nsp; i++) L *= g->_sizes[2 + i];
      int64_t ga[4] = {d->N, G, d->Cout / G, L}, gc[4] = {d->N, G, d->C / G * K, L};
      a = RESHAPE(g, ga, 4);
      cols = RESHAPE(IM2COL(x, d->k, d->d, d->p, d->s, nsp), gc, 4);
    } else {
      /* per (sample, group): x (C/G x Lin) @ cols(g)^T (Lin x Cout/G K); the blocks that lie past
       * the input (output_padding beyond the stride) dropped */
      int64_t xa[4] = {d->N, G, d->C / G, Lin}, gc[4] = {d->N, G, d->Cout / G * K, Lin};
      int64_t full[5] = {d->N, d->Cout * K};
      mt_tensor *c = IM2COL(g, d->k, d->d, d->p, d->s, nsp);
      if (c) {
        int64_t blocks[3];
        for (int i = 0; i < nsp; i++) {
          int64_t span = g->_sizes[2 + i] + 2 * d->p[i] - (d->d[i] * (d->k[i] - 1) + 1);
          blocks[i] = span / d->s[i] + 1;
          full[2 + i] = blocks[i];
        }
        c = narrow_spatial(sc, RESHAPE(c, full, nsp + 2), d->in, nsp);
      }
      a = RESHAPE(x, xa, 4);
      cols = RESHAPE(c, gc, 4);
    }
    gw = RESHAPE(SUM_DIM(MATMUL(a, TRANSPOSE_LAST(cols)), 0, 0), d->wsizes, nsp + 2);
  }
  if (mt_node_wants(n, 2)) {
    int64_t dims[4] = {0, 2, 3, 4};
    gb = SUM_DIMS(g, dims, nsp + 1, 0);
  }
  if (LIVE(sc)) {
    if (gx) give(gin, 0, gx);
    if (gw) give(gin, 1, gw);
    if (gb) give(gin, 2, gb);
  }
  return scope_close(sc);
}
static const mt_node_kind conv_kind = {.name = "ConvolutionBackward0", .backward = conv_backward, .nsaved = 2};

static mt_status grad_convolution(mt_tensor *input, mt_tensor *weight, mt_tensor *bias, const int64_t *stride,
                                  const int64_t *padding, const int64_t *dilation, int transposed,
                                  const int64_t *output_padding, int64_t groups, int nsp, mt_tensor **result) {
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(
      mt_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, nsp, &r)));
  mt_tensor *in[3] = {input, weight, bias};
  mt_node *n;
  mt_status s = mt_node_make(&conv_kind, in, 3, 1, &n);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  conv_node *d = NODE_DATA(n, conv_node);
  d->nsp = nsp;
  d->transposed = transposed;
  d->groups = groups;
  for (int i = 0; i < 3; i++) {
    bool real = i < nsp;
    d->s[i] = real ? stride[i] : 1;
    d->p[i] = real ? padding[i] : 0;
    d->d[i] = real ? dilation[i] : 1;
    d->op[i] = real && output_padding ? output_padding[i] : 0;
    d->k[i] = real ? weight->_sizes[2 + i] : 1;
    d->in[i] = real ? input->_sizes[2 + i] : 1;
  }
  d->N = input->_sizes[0];
  d->C = input->_sizes[1];
  d->Cout = r->_sizes[1];
  for (int i = 0; i < nsp + 2; i++) d->wsizes[i] = weight->_sizes[i];
  if (weight->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, &d->input, input);
  if (input->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, &d->weight, weight);
  s = mt_node_attach_new(n, r);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- im2col, col2im */
typedef struct fold_node {
  int32_t nsp;
  int64_t size[3]; /* im2col: the input's spatial sizes; col2im: output_size */
  int64_t k[3], d[3], p[3], s[3];
} fold_node;
MT_NODE_DATA_FITS(fold_node);

static mt_status im2col_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  fold_node *d = NODE_DATA(n, fold_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *gx = COL2IM(g, d->size, d->k, d->d, d->p, d->s, d->nsp);
  if (LIVE(sc)) give(gin, 0, gx);
  return scope_close(sc);
}
static mt_status col2im_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  fold_node *d = NODE_DATA(n, fold_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *gx = IM2COL(g, d->k, d->d, d->p, d->s, d->nsp);
  if (LIVE(sc)) give(gin, 0, gx);
  return scope_close(sc);
}
static const mt_node_kind im2col_kind = {.name = "Im2ColBackward0", .backward = im2col_backward, .nsaved = 0};
static const mt_node_kind col2im_kind = {.name = "Col2ImBackward0", .backward = col2im_backward, .nsaved = 0};

static mt_status record_fold(const mt_node_kind *kind, mt_tensor *input, const int64_t *size, const int64_t *kernel,
                             const int64_t *dilation, const int64_t *padding, const int64_t *stride, int nsp,
                             mt_tensor *r, mt_tensor **result) {
  mt_node *n;
  mt_status s = mt_node_make(kind, &input, 1, 1, &n);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  fold_node *d = NODE_DATA(n, fold_node);
  d->nsp = nsp;
  for (int i = 0; i < nsp; i++) {
    d->size[i] = size[i];
    d->k[i] = kernel[i];
    d->d[i] = dilation[i];
    d->p[i] = padding[i];
    d->s[i] = stride[i];
  }
  s = mt_node_attach_new(n, r);
  if (s) {
    mt_tensor_release(r);
    return s;
  }
  return mt_give(r, result);
}

static mt_status grad_im2col(mt_tensor *input, const int64_t *kernel, const int64_t *dilation, const int64_t *padding,
                             const int64_t *stride, int nsp, mt_tensor **result) {
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(mt_im2col(input, kernel, dilation, padding, stride, nsp, &r)));
  return record_fold(&im2col_kind, input, input->_sizes + 2, kernel, dilation, padding, stride, nsp, r, result);
}
static mt_status grad_col2im(mt_tensor *cols, const int64_t *output_size, const int64_t *kernel,
                             const int64_t *dilation, const int64_t *padding, const int64_t *stride, int nsp,
                             mt_tensor **result) {
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(mt_col2im(cols, output_size, kernel, dilation, padding, stride, nsp, &r)));
  return record_fold(&col2im_kind, cols, output_size, kernel, dilation, padding, stride, nsp, r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_conv_kinds[] = {&conv_kind, &im2col_kind, &col2im_kind, NULL};

void mt_grad_register_conv(mt_autograd_ops *t) {
  t->convolution = grad_convolution;
  t->im2col = grad_im2col;
  t->col2im = grad_col2im;
}
