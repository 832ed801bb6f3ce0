/* linalg.c -- autograd for the matrix products (core/ops/linalg.c): mm, bmm, mv, matmul, dot,
 * addmm, baddbmm; outer records as the product of views PyTorch records. */
#include "formula.h"

/* Gradients of a 2-D product's operands, each in its operand's own layout (as PyTorch's
 * mm_mat1_backward / mm_mat2_backward): for an operand that is a transposed view of a row-major
 * matrix (a weight used as W:t()), the same product is computed transposed, (g^T a)^T for b and
 * (b g^T)^T for a, so that it comes out in W's layout and accumulating it into W.grad reads memory
 * in order (a strided, transposed add of 512x784 was 18% of an MLP training step). */
enum { LAYOUT_A_COLS = 1, LAYOUT_B_COLS = 2 };
static bool col_major(const mt_tensor *t) {
  return t->_ndim == 2 && t->_strides[0] == 1 && t->_strides[1] == t->_sizes[0] && t->_sizes[0] > 1 &&
         t->_sizes[1] > 1;
}
static int32_t operand_layouts(const mt_tensor *a, const mt_tensor *b) {
  return (col_major(a) ? LAYOUT_A_COLS : 0) | (col_major(b) ? LAYOUT_B_COLS : 0);
}
static mt_tensor *grad_of_a(scope *sc, int32_t layouts, mt_tensor *g, mt_tensor *b) {
  if ((layouts & LAYOUT_A_COLS) && g && g->_ndim == 2 && b && b->_ndim == 2)
    return TRANSPOSE_LAST(MATMUL(b, TRANSPOSE_LAST(g)));
  return MATMUL(g, TRANSPOSE_LAST(b));
}
static mt_tensor *grad_of_b(scope *sc, int32_t layouts, mt_tensor *g, mt_tensor *a) {
  if ((layouts & LAYOUT_B_COLS) && g && g->_ndim == 2 && a && a->_ndim == 2)
    return TRANSPOSE_LAST(MATMUL(TRANSPOSE_LAST(g), a));
  return MATMUL(TRANSPOSE_LAST(a), g);
}

/* ---------------------------------------------------------------- a @ b */
/* How the gradients are computed, by the operands' dims: a dot product, a (batched) matrix times a
 * vector, a vector times a (batched) matrix, or (batched) matrices. */
enum { MM_DOT, MM_MV, MM_VM, MM_MATS };
/* The name PyTorch 1.13 prints, which depends on the op and the dims as well: torch.matmul folds
 * and views its operands as at::matmul does (1-D @ 2-D squeezes, 2-D @ batched transposes its
 * product back and copies it when that is not contiguous, the rest views a bmm's result). */
enum { NM_DOT, NM_MV, NM_SQUEEZE, NM_MM, NM_BMM, NM_VIEW, NM_CLONE, NM_TRANSPOSE, NM_COUNT };
typedef struct matmul_node {
  mt_saved a; /* kept when b needs a gradient */
  mt_saved b; /* kept when a needs a gradient */
  int32_t how; /* MM_* */
  int32_t name; /* NM_* */
  int32_t layouts; /* LAYOUT_* of the operands */
  mt_shape shape_a, shape_b;
} matmul_node;
MT_NODE_DATA_FITS(matmul_node);

static const char *const matmul_names_by_id[] = {
    [NM_DOT] = "DotBackward0",        [NM_MV] = "MvBackward0",       [NM_SQUEEZE] = "SqueezeBackward3",
    [NM_MM] = "MmBackward0",          [NM_BMM] = "BmmBackward0",     [NM_VIEW] = "UnsafeViewBackward0",
    [NM_CLONE] = "CloneBackward0",    [NM_TRANSPOSE] = "TransposeBackward0"};
static const char *matmul_name_of(const mt_node *n) { return matmul_names_by_id[NODE_DATA(n, matmul_node)->name]; }
static const char *matmul_names(int i) { return i >= 0 && i < NM_COUNT ? matmul_names_by_id[i] : NULL; }

static mt_status matmul_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  matmul_node *d = NODE_DATA(n, matmul_node);
  mt_tensor *g = gout[0], *ga = NULL, *gb = NULL;
  if (!g) return MT_OK;
  mt_tensor *a = saved(sc, n, &d->a), *b = saved(sc, n, &d->b);
  bool wa = mt_node_wants(n, 0), wb = mt_node_wants(n, 1);
  switch (d->how) {
    case MM_DOT:
      if (wa) ga = MUL(g, b);
      if (wb) gb = MUL(g, a);
      break;
    case MM_MV: /* a (..., m, k) @ b (k): g (..., m) */
      if (wa) ga = MUL(UNSQUEEZE(g, -1), b);
      if (wb) gb = SQUEEZE(MATMUL(TRANSPOSE_LAST(a), UNSQUEEZE(g, -1)), -1);
      break;
    case MM_VM: /* a (k) @ b (..., k, n): g (..., n) */
      if (wa) ga = SQUEEZE(MATMUL(UNSQUEEZE(g, -2), TRANSPOSE_LAST(b)), -2);
      if (wb && a && g) {
        if (g->_ndim == 1) gb = SCOPED(mt_outer(a, g, &r_)); /* a[:, None] * g */
        else gb = MUL(UNSQUEEZE(a, -1), UNSQUEEZE(g, -2)); /* a[:, None] * g[..., None, :] */
      }
      break;
    default:
      if (wa) ga = grad_of_a(sc, d->layouts, g, b);
      if (wb) gb = grad_of_b(sc, d->layouts, g, a);
  }
  if (wa) ga = SUM_TO(ga, &d->shape_a);
  if (wb) gb = SUM_TO(gb, &d->shape_b);
  if (LIVE(sc)) {
    if (wa && ga) give(gin, 0, ga);
    if (wb && gb) give(gin, 1, gb);
  }
  return scope_close(sc);
}
static const mt_node_kind matmul_kind = {
    .name_of = matmul_name_of, .names = matmul_names, .backward = matmul_backward, .nsaved = 2};

/* the name torch.matmul's result gets in PyTorch 1.13 (mm, bmm, mv and dot name themselves) */
static int32_t matmul_name(const mt_tensor *a, const mt_tensor *b, const mt_tensor *out) {
  int da = a->_ndim, db = b->_ndim;
  if (da == 1 && db == 1) return NM_DOT;
  if (da == 2 && db == 1) return NM_MV;
  if (da == 1 && db == 2) return NM_SQUEEZE;
  if (da == 2 && db == 2) return NM_MM;
  if (da == 2) { /* computed as (b^T @ a^T)^T, copied when that view is not contiguous */
    int64_t m = out->_sizes[out->_ndim - 2], k = out->_sizes[out->_ndim - 1];
    return m == 1 || k == 1 ? NM_TRANSPOSE : NM_CLONE;
  }
  return NM_VIEW;
}

static mt_status record_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out, int32_t name) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[2] = {a, b};
  mt_node *n;
  MT_TRY(mt_node_make(&matmul_kind, in, 2, 1, &n));
  matmul_node *d = NODE_DATA(n, matmul_node);
  if (a->_ndim == 1 && b->_ndim == 1) d->how = MM_DOT;
  else if (b->_ndim == 1) d->how = MM_MV;
  else if (a->_ndim == 1) d->how = MM_VM;
  else d->how = MM_MATS;
  d->name = name >= 0 ? name : matmul_name(a, b, out);
  d->layouts = operand_layouts(a, b);
  mt_shape_of(&d->shape_a, a);
  mt_shape_of(&d->shape_b, b);
  if (b->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, &d->a, a);
  if (a->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, &d->b, b);
  return mt_node_attach_new(n, out);
}

/* mm, bmm, mv, matmul, dot: run without recording, then record the product (nm: its NM_* name, -1 for
 * matmul's, which depends on the dims) */
#define PRODUCT_OP(name, nm, call)                              \
  do {                                                          \
    MT_TRY(mt_grad_check_out(out, true, name));                 \
    mt_tensor *r_;                                              \
    MT_TRY(MT_NOGRAD(call));                                    \
    mt_status s_ = record_matmul(a, b, r_, nm);                 \
    if (s_) { mt_tensor_release(r_); return s_; }               \
    return mt_give(r_, result);                                 \
  } while (0)

static mt_status grad_mm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("mm", NM_MM, mt_mm(a, b, NULL, &r_));
}
static mt_status grad_bmm(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("bmm", NM_BMM, mt_bmm(a, b, NULL, &r_));
}
static mt_status grad_mv(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("mv", NM_MV, mt_mv(a, b, NULL, &r_));
}
static mt_status grad_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out, mt_tensor **result) {
  PRODUCT_OP("matmul", -1, mt_matmul(a, b, NULL, &r_));
}
static mt_status grad_dot(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  mt_tensor *out = NULL;
  PRODUCT_OP("dot", NM_DOT, mt_dot(a, b, &r_));
}

/* outer with grad: a[:, None] * b, as PyTorch 1.13 records it (MulBackward0) */
static mt_status grad_outer(mt_tensor *a, mt_tensor *b, mt_tensor **result) {
  if (a->_ndim != 1 || b->_ndim != 1) return MT_NOGRAD(mt_outer(a, b, result)); /* its error message */
  mt_tensor *ua;
  MT_TRY(mt_unsqueeze(a, 1, &ua));
  mt_status s = mt_binary(MT_OP_MUL, ua, b, NULL, result);
  mt_tensor_release(ua);
  return s;
}

/* ---------------------------------------------------------------- beta * c + alpha * (a @ b) */
typedef struct addmm_node {
  mt_saved a; /* kept when b needs a gradient */
  mt_saved b; /* kept when a needs a gradient */
  double beta, alpha;
  int32_t layouts; /* LAYOUT_* of the operands */
  mt_shape c;
} addmm_node;
MT_NODE_DATA_FITS(addmm_node);

/* inputs c, a, b (addmm: matrices; baddbmm: batches of them) */
static mt_status addmm_backward(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  addmm_node *d = NODE_DATA(n, addmm_node);
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *a = saved(sc, n, &d->a), *b = saved(sc, n, &d->b);
  mt_tensor *gc = NULL, *ga = NULL, *gb = NULL;
  if (mt_node_wants(n, 0)) gc = SUM_TO(d->beta == 1 ? g : MULS(g, d->beta), &d->c);
  if (mt_node_wants(n, 1)) {
    ga = grad_of_a(sc, d->layouts, g, b);
    if (d->alpha != 1) ga = MULS(ga, d->alpha);
  }
  if (mt_node_wants(n, 2)) {
    gb = grad_of_b(sc, d->layouts, g, a);
    if (d->alpha != 1) gb = MULS(gb, d->alpha);
  }
  if (LIVE(sc)) {
    if (gc) give(gin, 0, gc);
    if (ga) give(gin, 1, ga);
    if (gb) give(gin, 2, gb);
  }
  return scope_close(sc);
}
static const mt_node_kind addmm_kind = {.name = "AddmmBackward0", .backward = addmm_backward, .nsaved = 2};
static const mt_node_kind baddbmm_kind = {.name = "BaddbmmBackward0", .backward = addmm_backward, .nsaved = 2};

static mt_status record_addmm(const mt_node_kind *kind, mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta,
                              double alpha, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[3] = {c, a, b};
  mt_node *n;
  MT_TRY(mt_node_make(kind, in, 3, 1, &n));
  addmm_node *d = NODE_DATA(n, addmm_node);
  d->beta = beta;
  d->alpha = alpha;
  d->layouts = operand_layouts(a, b);
  mt_shape_of(&d->c, c);
  if (b->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, &d->a, a);
  if (a->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, &d->b, b);
  return mt_node_attach_new(n, out);
}

static mt_status grad_addmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                            mt_tensor **result) {
  if (out == c) MT_TRY(mt_grad_check_inplace(c, "addmm_"));
  else MT_TRY(mt_grad_check_out(out, true, "addmm"));
  if (out == c) return mt_error(MT_ENOTIMPL, "addmm_: in-place addmm on a tensor that requires grad is not supported yet");
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(mt_addmm(c, a, b, beta, alpha, NULL, &r)));
  mt_status s = record_addmm(&addmm_kind, c, a, b, beta, alpha, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

static mt_status grad_baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out,
                              mt_tensor **result) {
  if (out == c) MT_TRY(mt_grad_check_inplace(c, "baddbmm_"));
  else MT_TRY(mt_grad_check_out(out, true, "baddbmm"));
  if (out == c)
    return mt_error(MT_ENOTIMPL, "baddbmm_: in-place baddbmm on a tensor that requires grad is not supported (use baddbmm)");
  mt_tensor *r;
  MT_TRY(MT_NOGRAD(mt_baddbmm(c, a, b, beta, alpha, NULL, &r)));
  mt_status s = record_addmm(&baddbmm_kind, c, a, b, beta, alpha, r);
  if (s) { mt_tensor_release(r); return s; }
  return mt_give(r, result);
}

/* ---------------------------------------------------------------- registration */
const mt_node_kind *const mt_linalg_kinds[] = {&matmul_kind, &addmm_kind, &baddbmm_kind, NULL};

void mt_grad_register_linalg(mt_autograd_ops *t) {
  t->mm = grad_mm;
  t->bmm = grad_bmm;
  t->mv = grad_mv;
  t->matmul = grad_matmul;
  t->dot = grad_dot;
  t->addmm = grad_addmm;
  t->baddbmm = grad_baddbmm;
  t->outer = grad_outer;
}
