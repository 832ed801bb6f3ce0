/* ops.c -- the table of differentiable ops: for each, its recording (what a forward op keeps for
 * the backward) and its backward, side by side, and its name as PyTorch prints it. Backward
 * formulas are written with the public ops, so they record themselves when create_graph is on:
 * double backward comes for free. */
#include "grad.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- temporaries */
/* A scope of temporaries: every helper below returns a borrowed tensor owned by the scope (or
 * NULL once an op failed, the first failure kept in sc->s). */
typedef struct {
  mt_tensor *t[48];
  int n;
  mt_status s;
} scope;

/* keep(sc, op(..., &r), &r): `r` is read through its address after the op ran (C leaves the
 * order of argument evaluation open, so passing `r` itself could read it before the call). */
static mt_tensor *keep(scope *sc, mt_status s, mt_tensor **rp) {
  mt_tensor *r = *rp;
  if (s) { if (!sc->s) sc->s = s; return NULL; }
  if (sc->n == 48) { mt_tensor_release(r); sc->s = mt_error(MT_ENOMEM, "backward: too many temporaries"); return NULL; }
  sc->t[sc->n++] = r;
  return r;
}
static void scope_end(scope *sc) {
  for (int i = 0; i < sc->n; i++) mt_tensor_release(sc->t[i]);
  sc->n = 0;
}
/* the end of a backward: release the temporaries, report the first failure */
static mt_status scope_close(scope *sc) {
  mt_status s = sc->s;
  scope_end(sc);
  return s;
}
#define LIVE(sc) ((sc)->s == MT_OK)
static mt_tensor *bin(scope *sc, int op, mt_tensor *a, mt_tensor *b) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !a || !b) return NULL;
  return keep(sc, mt_binary(op, a, b, NULL, &r), &r);
}
static mt_tensor *bins(scope *sc, int op, mt_tensor *a, double s) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !a) return NULL;
  return keep(sc, mt_binary_scalar(op, a, s, 2, 0, NULL, &r), &r);
}
static mt_tensor *un(scope *sc, int op, mt_tensor *a, double p1, double p2) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !a) return NULL;
  return keep(sc, mt_unary(op, a, p1, p2, NULL, &r), &r);
}
#define MUL(a, b) bin(sc, MT_OP_MUL, a, b)
#define DIV(a, b) bin(sc, MT_OP_DIV, a, b)
#define ADD(a, b) bin(sc, MT_OP_ADD, a, b)
#define SUB(a, b) bin(sc, MT_OP_SUB, a, b)
#define MULS(a, s) bins(sc, MT_OP_MUL, a, s)
#define ADDS(a, s) bins(sc, MT_OP_ADD, a, s)
#define NEG(a) un(sc, MT_OP_NEG, a, 0, 0)
/* a bool mask as a's dtype: 1 where cond holds */
static mt_tensor *mask_as(scope *sc, mt_tensor *cond, mt_tensor *like) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !cond) return NULL;
  return keep(sc, mt_to_dtype(cond, like->_dtype, 0, &r), &r);
}
#define CMP(op, a, b) bin(sc, op, a, b)
#define CMPS(op, a, s) bins(sc, op, a, s)

/* hand a scope tensor out as gin[k] (a new reference) */
static void give(mt_tensor **gin, int k, mt_tensor *t) { gin[k] = mt_tensor_retain(t); }

static mt_tensor *saved(scope *sc, mt_node *n, int slot) {
  mt_tensor *t = NULL;
  if (!LIVE(sc)) return NULL;
  mt_status s = mt_node_get_saved(n, slot, &t);
  if (s) { sc->s = s; return NULL; }
  return t ? keep(sc, MT_OK, &t) : NULL;
}

static mt_tensor *sum_to_shape(scope *sc, mt_tensor *g, const mt_shape *shp) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !g) return NULL;
  return keep(sc, mt_sum_to_shape(g, shp, &r), &r);
}

/* g summed down to input k's shape (mt_node_keep_shape) */
static mt_tensor *to_input(scope *sc, mt_node *n, int k, mt_tensor *g) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !g) return NULL;
  return keep(sc, mt_node_to_input_shape(n, k, g, &r), &r);
}

mt_status mt_sum_to(mt_tensor *g, const int64_t *sizes, int ndim, mt_tensor **out) {
  int lead = g->_ndim - ndim;
  int64_t dims[MT_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < g->_ndim; i++) {
    if (i < lead) dims[nd++] = i;
    else if (sizes[i - lead] == 1 && g->_sizes[i] != 1) dims[nd++] = i;
  }
  if (nd == 0) {
    if (lead == 0) { *out = mt_tensor_retain(g); return MT_OK; }
    return mt_reshape(g, sizes, ndim, out);
  }
  mt_tensor *s;
  MT_TRY(mt_reduce(MT_REDUCE_SUM, g, dims, nd, 1, -1, 0, NULL, &s));
  mt_status st = mt_reshape(s, sizes, ndim, out);
  mt_tensor_release(s);
  return st;
}
mt_status mt_sum_to_shape(mt_tensor *g, const mt_shape *s, mt_tensor **out) {
  return mt_sum_to(g, s->sizes, s->ndim, out);
}


/* T_(call): run a public op writing its result through &r_, kept by the scope. */
#define T_(call)                                   \
  ({                                               \
    mt_tensor *r_ = NULL;                          \
    LIVE(sc) ? keep(sc, (call), &r_) : NULL;       \
  })
static mt_tensor *zeros_(scope *sc, const int64_t *sizes, int ndim, int dtype) {
  return T_(mt_tensor_full(sizes, ndim, dtype, 0, &r_));
}
static mt_tensor *reshape_(scope *sc, mt_tensor *t, const int64_t *sizes, int ndim) {
  if (!t) return NULL;
  return T_(mt_reshape(t, sizes, ndim, &r_));
}
static mt_tensor *flat_(scope *sc, mt_tensor *t) {
  if (!t) return NULL;
  int64_t n = t->_numel;
  return reshape_(sc, t, &n, 1);
}
static mt_tensor *to_dtype_(scope *sc, mt_tensor *t, int dtype) {
  if (!t || t->_dtype == dtype) return t;
  return T_(mt_to_dtype(t, dtype, 0, &r_));
}
static mt_tensor *cum_(scope *sc, mt_tensor *t, int dim, int is_prod) {
  if (!t) return NULL;
  return T_(mt_cumulative(t, dim, is_prod, -1, NULL, &r_));
}
static mt_tensor *sum_dim_(scope *sc, mt_tensor *t, int64_t dim, int keepdim) {
  if (!t) return NULL;
  return T_(mt_reduce(MT_REDUCE_SUM, t, &dim, 1, keepdim, -1, 0, NULL, &r_));
}
static mt_tensor *cat2_(scope *sc, mt_tensor *a, mt_tensor *b, int dim) {
  if (!a || !b) return NULL;
  mt_tensor *ts[2] = {a, b};
  return T_(mt_cat(ts, 2, dim, NULL, &r_));
}
static mt_tensor *flip1_(scope *sc, mt_tensor *t, int64_t dim) {
  if (!t) return NULL;
  return T_(mt_flip(t, &dim, 1, &r_));
}
/* t padded with zeros at the end of every dim up to `shp` (t no larger than shp anywhere) */
static mt_tensor *pad_to_(scope *sc, mt_tensor *t, const mt_shape *shp) {
  for (int d = 0; t && d < shp->ndim && d < t->_ndim; d++) {
    if (t->_sizes[d] >= shp->sizes[d]) continue;
    int64_t zs[MT_MAX_DIMS];
    memcpy(zs, t->_sizes, sizeof zs);
    zs[d] = shp->sizes[d] - t->_sizes[d];
    t = cat2_(sc, t, zeros_(sc, zs, t->_ndim, t->_dtype), d);
  }
  return t;
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
  mt_tensor *one = T_(mt_tensor_full(os, nd, x->_dtype, 1, &r_));
  mt_tensor *head = T_(mt_narrow(x, nd - 1, 0, len - 1, &r_));
  mt_tensor *before = cum_(sc, cat2_(sc, one, head, nd - 1), nd - 1, 1);
  mt_tensor *xf = flip1_(sc, x, nd - 1);
  mt_tensor *headf = xf ? T_(mt_narrow(xf, nd - 1, 0, len - 1, &r_)) : NULL;
  mt_tensor *after = flip1_(sc, cum_(sc, cat2_(sc, one, headf, nd - 1), nd - 1, 1), nd - 1);
  return MUL(before, after);
}

/* ---------------------------------------------------------------- fused kernels */
/* When a backward is not recorded (no create_graph), some formulas run as one pass over small
 * contiguous float operands instead of a chain of public ops and their temporaries. Each does the
 * same float operations as the chain it replaces, so the same bits come out. They return NULL,
 * having done nothing, when the operands are not theirs (the formula then runs as written). */
static bool fusable(const mt_tensor *t, int dtype) {
  return t && t->_dtype == dtype && (dtype == MT_FLOAT32 || dtype == MT_FLOAT64) &&
         (t->_flags & MT_TENSOR_CONTIGUOUS) && t->_numel < 2 * MT_GRAIN && t->_device_type == MT_CPU;
}
static bool same_shape(const mt_tensor *a, const mt_tensor *b) {
  if (a->_ndim != b->_ndim) return false;
  for (int i = 0; i < a->_ndim; i++)
    if (a->_sizes[i] != b->_sizes[i]) return false;
  return true;
}

enum { FUSE_ABS, FUSE_RELU };
/* g * sign(x) (abs), g * (x > 0) (relu): g and x of one shape */
static mt_tensor *fused_unary_grad(scope *sc, int kind, mt_tensor *g, mt_tensor *x) {
  if (!LIVE(sc) || mt_grad_mode || !g || !fusable(g, g->_dtype) || !fusable(x, g->_dtype) || !same_shape(g, x))
    return NULL;
  mt_tensor *r = NULL;
  if (!keep(sc, mt_new_like(g, g->_dtype, "backward", &r), &r)) return NULL;
  int64_t n = g->_numel;
#define FUSED_LOOP(T)                                                               \
  {                                                                                 \
    const T *G = (const T *)g->_data, *X = (const T *)x->_data;                     \
    T *R = (T *)r->_data;                                                           \
    if (kind == FUSE_ABS)                                                           \
      for (int64_t i = 0; i < n; i++) {                                             \
        T v = X[i];                                                                 \
        R[i] = G[i] * (T)(v > 0 ? 1 : (v < 0 ? -1 : v));                            \
      }                                                                             \
    else                                                                            \
      for (int64_t i = 0; i < n; i++) R[i] = G[i] * (T)(X[i] > 0);                  \
  }
  if (g->_dtype == MT_FLOAT32) FUSED_LOOP(float) else FUSED_LOOP(double)
#undef FUSED_LOOP
  return r;
}

/* the outer product a (k) x g (n) -> (k, n): what unsqueeze(a, -1) * unsqueeze(g, -2) gives */
static mt_tensor *fused_outer(scope *sc, mt_tensor *a, mt_tensor *g) {
  if (!LIVE(sc) || mt_grad_mode || !a || !g || a->_ndim != 1 || g->_ndim != 1 || !fusable(a, g->_dtype) ||
      !fusable(g, g->_dtype) || a->_numel * g->_numel >= 2 * MT_GRAIN)
    return NULL;
  int64_t k = a->_numel, n = g->_numel, sizes[2] = {k, n};
  mt_tensor *r = NULL;
  if (!keep(sc, mt_new(sizes, 2, g->_dtype, "backward", &r), &r)) return NULL;
#define OUTER_LOOP(T)                                                               \
  {                                                                                 \
    const T *A = (const T *)a->_data, *G = (const T *)g->_data;                     \
    T *R = (T *)r->_data;                                                           \
    for (int64_t i = 0; i < k; i++)                                                 \
      for (int64_t j = 0; j < n; j++) R[i * n + j] = A[i] * G[j];                   \
  }
  if (g->_dtype == MT_FLOAT32) OUTER_LOOP(float) else OUTER_LOOP(double)
#undef OUTER_LOOP
  return r;
}

/* ---------------------------------------------------------------- the op list */
#define GRAD_OP_LIST(X)                                                              \
  X(ACCUMULATE, "AccumulateGrad") X(LUA, "LuaFunctionBackward") X(UNARY, "")       \
  X(BINARY, "") X(BINARY_SCALAR, "") X(ADD_SCALED, "") X(REDUCE, "")               \
  X(REDUCE_INDEX, "") X(RESHAPE, "") X(TRANSPOSE, "") X(PERMUTE, "PermuteBackward0") \
  X(EXPAND, "ExpandBackward0") X(SELECT, "SelectBackward0") X(SLICE, "SliceBackward0") \
  X(MATMUL, "") X(ADDMM, "AddmmBackward0") X(SOFTMAX, "") X(WHERE, "WhereBackward0") \
  X(CLONE, "") X(CAT, "CatBackward0") X(INDEX_SELECT, "IndexSelectBackward0")       \
  X(GATHER, "GatherBackward0") X(MASKED_FILL, "MaskedFillBackward0")                \
  X(CUMSUM, "CumsumBackward0") X(CUMPROD, "CumprodBackward0") X(VAR_MEAN, "")        \
  X(BADDBMM, "BaddbmmBackward0") X(SCATTER, "") X(INDEX_ADD, "IndexAddBackward0")     \
  X(INDEX_COPY, "IndexCopyBackward0") X(INDEX_FILL, "IndexFillBackward0")             \
  X(MASKED_FILL_T, "MaskedFillBackward1") X(MASKED_SELECT, "MaskedSelectBackward0")   \
  X(MASKED_SCATTER, "MaskedScatterBackward0") X(INDEX, "IndexBackward0")              \
  X(INDEX_PUT, "IndexPutBackward0") X(DIAG, "DiagBackward0") X(TRIANGLE, "")          \
  X(AS_STRIDED, "AsStridedBackward0") X(UNFOLD, "UnfoldBackward0")                    \
  X(DIAGONAL, "DiagonalBackward0") X(SORT, "SortBackward0") X(TOPK, "TopkBackward0")  \
  X(FLIP, "FlipBackward0") X(ROLL, "RollBackward0") X(REPEAT, "RepeatBackward0")      \
  X(STACK, "StackBackward0") X(COPY, "CopyBackwards") X(FILL, "FillBackward2")

enum {
#define X(NAME, str) GOP_##NAME,
  GRAD_OP_LIST(X)
#undef X
  GOP_COUNT
};

/* Names: fixed ones from the list, the rest by the op's parameters. */
static const char *const fixed_names[] = {
#define X(NAME, str) str,
    GRAD_OP_LIST(X)
#undef X
};

static const char *unary_grad_name(int op) {
  switch (op) {
#define N(OP, S) case MT_OP_##OP: return S;
    N(NEG, "NegBackward0") N(ABS, "AbsBackward0") N(SIGN, "SignBackward0") N(EXP, "ExpBackward0")
    N(EXP2, "Exp2Backward0") N(LOG, "LogBackward0") N(LOG2, "Log2Backward0") N(LOG10, "Log10Backward0")
    N(LOG1P, "Log1PBackward0") N(EXPM1, "Expm1Backward0") N(SQRT, "SqrtBackward0") N(RSQRT, "RsqrtBackward0")
    N(SIN, "SinBackward0") N(COS, "CosBackward0") N(TAN, "TanBackward0") N(ASIN, "AsinBackward0")
    N(ACOS, "AcosBackward0") N(ATAN, "AtanBackward0") N(SINH, "SinhBackward0") N(COSH, "CoshBackward0")
    N(TANH, "TanhBackward0") N(SIGMOID, "SigmoidBackward0") N(RELU, "ReluBackward0") N(GELU, "GeluBackward0")
    N(GELU_TANH, "GeluBackward0") N(SILU, "SiluBackward0") N(ERF, "ErfBackward0") N(ERFC, "ErfcBackward0")
    N(FLOOR, "FloorBackward0") N(CEIL, "CeilBackward0") N(ROUND, "RoundBackward0") N(TRUNC, "TruncBackward0")
    N(FRAC, "FracBackward0") N(RECIPROCAL, "ReciprocalBackward0") N(SQUARE, "PowBackward0")
    N(SOFTPLUS, "SoftplusBackward0") N(LGAMMA, "LgammaBackward0") N(CLAMP, "ClampBackward1")
    N(POW_SCALAR, "PowBackward0") N(RPOW_SCALAR, "PowBackward2") N(LEAKY_RELU, "LeakyReluBackward0")
    N(ELU, "EluBackward0") N(HARDTANH, "HardtanhBackward0") N(THRESHOLD, "ThresholdBackward0")
    N(ROUND_DECIMALS, "RoundBackward1") N(NAN_TO_NUM, "NanToNumBackward0")
#undef N
    default: return NULL;
  }
}

static const char *binary_grad_name(int op, int scalar, int reverse) {
  switch (op) {
    case MT_OP_ADD: return scalar ? "AddBackward1" : "AddBackward0";
    case MT_OP_SUB: return scalar ? (reverse ? "RsubBackward1" : "SubBackward1") : "SubBackward0";
    case MT_OP_MUL: return scalar ? "MulBackward1" : "MulBackward0";
    case MT_OP_DIV: return scalar ? (reverse ? "DivBackward0" : "DivBackward1") : "DivBackward0";
    case MT_OP_POW: return scalar ? (reverse ? "PowBackward2" : "PowBackward0") : "PowBackward1";
    case MT_OP_MAXIMUM: return scalar ? "ClampMinBackward0" : "MaximumBackward0";
    case MT_OP_MINIMUM: return scalar ? "ClampMaxBackward0" : "MinimumBackward0";
    case MT_OP_FMAX: return "FmaxBackward0";
    case MT_OP_FMIN: return "FminBackward0";
    case MT_OP_FMOD: return scalar ? "FmodBackward0" : "FmodBackward1";
    case MT_OP_REMAINDER: return scalar ? "RemainderBackward0" : "RemainderBackward1";
    case MT_OP_ATAN2: return "Atan2Backward0";
    case MT_OP_HYPOT: return "HypotBackward0";
    case MT_OP_XLOGY: return scalar ? (reverse ? "XlogyBackward1" : "XlogyBackward2") : "XlogyBackward0";
    case MT_OP_DIV_TRUNC: case MT_OP_DIV_FLOOR: return "DivBackward2";
    default: return NULL;
  }
}

static const char *reduce_grad_name(int op, int all) {
  switch (op) {
    case MT_REDUCE_SUM: return all ? "SumBackward0" : "SumBackward1";
    case MT_REDUCE_MEAN: return all ? "MeanBackward0" : "MeanBackward1";
    case MT_REDUCE_PROD: return all ? "ProdBackward0" : "ProdBackward1";
    case MT_REDUCE_AMAX: return "AmaxBackward0";
    case MT_REDUCE_AMIN: return "AminBackward0";
    case MT_REDUCE_VAR: return "VarBackward0";
    case MT_REDUCE_STD: return "StdBackward0";
    case MT_REDUCE_NORM: return all ? "NormBackward0" : "NormBackward1";
    case MT_REDUCE_LOGSUMEXP: return "LogsumexpBackward0";
    case MT_REDUCE_NANSUM: return "NansumBackward0";
    default: return NULL;
  }
}

enum { MM_DOT, MM_MV, MM_VM, MM_MM, MM_BMM, MM_ND };
static const char *const matmul_names[] = {"DotBackward0", "MvBackward0", "SqueezeBackward4", "MmBackward0",
                                           "BmmBackward0", "UnsafeViewBackward0"};
/* indexed by MT_RS_* (grad.h) */
static const char *const reshape_names[] = {"ViewBackward0", "UnsafeViewBackward0", "UnsqueezeBackward0",
                                            "SqueezeBackward0", "SqueezeBackward1", "ViewBackward0"};

const char *mt_grad_op_name(const mt_node *n) {
  switch (n->op) {
    case GOP_UNARY: { const char *s = unary_grad_name(n->ip[0]); return s ? s : "?"; }
    case GOP_BINARY: { const char *s = binary_grad_name(n->ip[0], 0, 0); return s ? s : "?"; }
    case GOP_BINARY_SCALAR: { const char *s = binary_grad_name(n->ip[0], 1, n->ip[1]); return s ? s : "?"; }
    case GOP_ADD_SCALED: return n->dp[0] >= 0 ? "AddBackward0" : "SubBackward0";
    case GOP_REDUCE: { const char *s = reduce_grad_name(n->ip[0], n->ip[3]); return s ? s : "?"; }
    case GOP_REDUCE_INDEX: return n->ip[2] ? "MinBackward0" : "MaxBackward0";
    case GOP_RESHAPE: return reshape_names[n->ip[0]];
    case GOP_TRANSPOSE: return n->ip[2] ? "TBackward0" : "TransposeBackward0";
    case GOP_MATMUL: return matmul_names[n->ip[0]];
    case GOP_SOFTMAX: return n->ip[1] ? "LogSoftmaxBackward0" : "SoftmaxBackward0";
    case GOP_CLONE: return n->ip[0] ? "ToCopyBackward0" : "CloneBackward0";
    case GOP_VAR_MEAN: return n->ip[3] ? "StdMeanBackward0" : "VarMeanBackward0";
    case GOP_SCATTER: return n->ip[1] == MT_SC_ADD_SRC ? "ScatterAddBackward0"
                             : n->ip[1] == MT_SC_VALUE ? "ScatterBackward1" : "ScatterBackward0";
    case GOP_TRIANGLE: return n->ip[1] ? "TriuBackward0" : "TrilBackward0";
    default: return n->op >= 0 && n->op < GOP_COUNT ? fixed_names[n->op] : "?";
  }
}

/* ---------------------------------------------------------------- backward formulas */
/* Each takes the node, its outputs' gradients gout[nout] (NULL: none arrived) and fills
 * gin[nin] with new references (NULL where the input needs no gradient). */

static bool wants(const mt_node *n, int k) { return n->next[k].node != NULL; }

static mt_status bw_unary(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *x = saved(sc, n, 0), *y = saved(sc, n, 1), *r = NULL;
  double p1 = n->dp[0], p2 = n->dp[1];
  if (!g || !wants(n, 0)) goto done;
  switch (n->ip[0]) {
    case MT_OP_NEG: r = NEG(g); break;
    case MT_OP_ABS:
      r = fused_unary_grad(sc, FUSE_ABS, g, x);
      if (!r) r = MUL(g, un(sc, MT_OP_SIGN, x, 0, 0));
      break;
    case MT_OP_SIGN: case MT_OP_FLOOR: case MT_OP_CEIL: case MT_OP_ROUND: case MT_OP_TRUNC:
    case MT_OP_ROUND_DECIMALS:
      r = MULS(g, 0); break;
    case MT_OP_EXP: r = MUL(g, y); break;
    case MT_OP_EXP2: r = MULS(MUL(g, y), M_LN2); break;
    case MT_OP_LOG: r = DIV(g, x); break;
    case MT_OP_LOG2: r = DIV(g, MULS(x, M_LN2)); break;
    case MT_OP_LOG10: r = DIV(g, MULS(x, M_LN10)); break;
    case MT_OP_LOG1P: r = DIV(g, ADDS(x, 1)); break;
    case MT_OP_EXPM1: r = MUL(g, ADDS(y, 1)); break;
    case MT_OP_SQRT: r = DIV(g, MULS(y, 2)); break;
    case MT_OP_RSQRT: r = MUL(g, MULS(un(sc, MT_OP_POW_SCALAR, y, 3, 0), -0.5)); break;
    case MT_OP_SIN: r = MUL(g, un(sc, MT_OP_COS, x, 0, 0)); break;
    case MT_OP_COS: r = MUL(g, NEG(un(sc, MT_OP_SIN, x, 0, 0))); break;
    case MT_OP_TAN: r = MUL(g, ADDS(MUL(y, y), 1)); break;
    case MT_OP_ASIN: r = DIV(g, un(sc, MT_OP_SQRT, NEG(ADDS(MUL(x, x), -1)), 0, 0)); break;
    case MT_OP_ACOS: r = NEG(DIV(g, un(sc, MT_OP_SQRT, NEG(ADDS(MUL(x, x), -1)), 0, 0))); break;
    case MT_OP_ATAN: r = DIV(g, ADDS(MUL(x, x), 1)); break;
    case MT_OP_SINH: r = MUL(g, un(sc, MT_OP_COSH, x, 0, 0)); break;
    case MT_OP_COSH: r = MUL(g, un(sc, MT_OP_SINH, x, 0, 0)); break;
    case MT_OP_TANH: r = MUL(g, NEG(ADDS(MUL(y, y), -1))); break;
    case MT_OP_SIGMOID: r = MUL(g, MUL(y, NEG(ADDS(y, -1)))); break;
    case MT_OP_RELU: /* x > 0 iff relu(x) > 0 */
      r = fused_unary_grad(sc, FUSE_RELU, g, x);
      if (!r) r = MUL(g, mask_as(sc, CMPS(MT_OP_GT, x, 0), g));
      break;
    case MT_OP_GELU: {
      mt_tensor *cdf = MULS(ADDS(un(sc, MT_OP_ERF, MULS(x, M_SQRT1_2), 0, 0), 1), 0.5);
      mt_tensor *pdf = MULS(un(sc, MT_OP_EXP, MULS(MUL(x, x), -0.5), 0, 0), 0.3989422804014327);
      r = MUL(g, ADD(cdf, MUL(x, pdf)));
      break;
    }
    case MT_OP_GELU_TANH: {
      const double k = 0.7978845608028654, c = 0.044715;
      mt_tensor *x2 = MUL(x, x);
      mt_tensor *inner = MULS(MUL(x, ADDS(MULS(x2, c), 1)), k);
      mt_tensor *t = un(sc, MT_OP_TANH, inner, 0, 0);
      mt_tensor *dinner = MULS(ADDS(MULS(x2, 3 * c), 1), k);
      mt_tensor *left = MULS(ADDS(t, 1), 0.5);
      mt_tensor *right = MUL(MULS(x, 0.5), MUL(NEG(ADDS(MUL(t, t), -1)), dinner));
      r = MUL(g, ADD(left, right));
      break;
    }
    case MT_OP_SILU: {
      mt_tensor *s = un(sc, MT_OP_SIGMOID, x, 0, 0);
      r = MUL(g, MUL(s, ADDS(MUL(x, NEG(ADDS(s, -1))), 1)));
      break;
    }
    case MT_OP_ERF: r = MUL(g, MULS(un(sc, MT_OP_EXP, NEG(MUL(x, x)), 0, 0), 1.1283791670955126)); break;
    case MT_OP_ERFC: r = MUL(g, MULS(un(sc, MT_OP_EXP, NEG(MUL(x, x)), 0, 0), -1.1283791670955126)); break;
    case MT_OP_FRAC: r = g; break;
    case MT_OP_RECIPROCAL: r = MUL(g, NEG(MUL(y, y))); break;
    case MT_OP_SQUARE: r = MUL(g, MULS(x, 2)); break;
    case MT_OP_SOFTPLUS: r = MUL(g, un(sc, MT_OP_SIGMOID, x, 0, 0)); break;
    case MT_OP_LGAMMA: r = MUL(g, un(sc, MT_OP_DIGAMMA, x, 0, 0)); break;
    case MT_OP_CLAMP: {
      mt_tensor *m = NULL;
      if (!isnan(p1)) m = CMPS(MT_OP_GE, x, p1);
      if (!isnan(p2)) { mt_tensor *m2 = CMPS(MT_OP_LE, x, p2); m = m ? bin(sc, MT_OP_LOGICAL_AND, m, m2) : m2; }
      r = m ? MUL(g, mask_as(sc, m, g)) : g;
      break;
    }
    case MT_OP_POW_SCALAR:
      if (p1 == 0) r = MULS(g, 0);
      else r = MUL(g, MULS(un(sc, MT_OP_POW_SCALAR, x, p1 - 1, 0), p1));
      break;
    case MT_OP_RPOW_SCALAR: r = MULS(MUL(g, y), log(p1)); break;
    case MT_OP_LEAKY_RELU: {
      mt_tensor *pos = mask_as(sc, CMPS(MT_OP_GT, x, 0), g);
      r = MUL(g, ADDS(MULS(pos, 1 - p1), p1));
      break;
    }
    case MT_OP_ELU: {
      mt_tensor *pos = mask_as(sc, CMPS(MT_OP_GT, x, 0), g);
      mt_tensor *neg = ADDS(y, p1); /* alpha * exp(x) where x <= 0 */
      r = MUL(g, ADD(pos, MUL(NEG(ADDS(pos, -1)), neg)));
      break;
    }
    case MT_OP_HARDTANH:
      r = MUL(g, mask_as(sc, bin(sc, MT_OP_LOGICAL_AND, CMPS(MT_OP_GT, x, p1), CMPS(MT_OP_LT, x, p2)), g));
      break;
    case MT_OP_THRESHOLD: r = MUL(g, mask_as(sc, CMPS(MT_OP_GT, x, p1), g)); break;
    case MT_OP_NAN_TO_NUM: r = MUL(g, mask_as(sc, un(sc, MT_OP_ISFINITE, x, 0, 0), g)); break;
    default:
      S.s = mt_error(MT_ENOTIMPL, "backward: the derivative of %s is not implemented", mt_unary_op_name(n->ip[0]));
  }
  if (LIVE(sc) && r) give(gin, 0, r);
done:;
  return scope_close(sc);
}

/* The end of a two-input backward: each gradient summed down to its input's shape (undoing
 * broadcasting), handed out, and the scope closed. */
static mt_status finish_two(scope *sc, mt_node *n, mt_tensor **gin, mt_tensor *ga, mt_tensor *gb) {
  if (ga) ga = to_input(sc, n, 0, ga);
  if (gb) gb = to_input(sc, n, 1, gb);
  if (LIVE(sc)) {
    if (ga) give(gin, 0, ga);
    if (gb) give(gin, 1, gb);
  }
  return scope_close(sc);
}

static mt_status bw_binary(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *a = saved(sc, n, 0), *b = saved(sc, n, 1), *y = saved(sc, n, 2);
  mt_tensor *ga = NULL, *gb = NULL;
  bool wa = wants(n, 0), wb = wants(n, 1);
  switch (n->ip[0]) {
    case MT_OP_ADD: ga = g; gb = g; break;
    case MT_OP_SUB: ga = g; if (wb) gb = NEG(g); break;
    case MT_OP_MUL: if (wa) ga = MUL(g, b); if (wb) gb = MUL(g, a); break;
    case MT_OP_DIV:
      if (wa) ga = DIV(g, b);
      if (wb) gb = NEG(DIV(MUL(g, a), MUL(b, b)));
      break;
    case MT_OP_POW:
      if (wa) ga = MUL(g, MUL(b, bin(sc, MT_OP_POW, a, ADDS(b, -1))));
      if (wb) {
        /* where a == 0 and b >= 0 the derivative is 0 (log(0) would give nan) */
        mt_tensor *safe = bin(sc, MT_OP_MUL, MUL(g, y), un(sc, MT_OP_LOG, a, 0, 0));
        mt_tensor *zero_base = bin(sc, MT_OP_LOGICAL_AND, CMPS(MT_OP_EQ, a, 0), CMPS(MT_OP_GE, b, 0));
        mt_tensor *z = NULL;
        if (LIVE(sc)) keep(sc, mt_tensor_full(NULL, 0, g->_dtype, 0, &z), &z);
        mt_tensor *r = NULL;
        if (LIVE(sc)) keep(sc, mt_where(zero_base, z, safe, NULL, &r), &r);
        gb = r;
      }
      break;
    case MT_OP_MAXIMUM: case MT_OP_MINIMUM: case MT_OP_FMAX: case MT_OP_FMIN: {
      bool mx = n->ip[0] == MT_OP_MAXIMUM || n->ip[0] == MT_OP_FMAX;
      mt_tensor *eq = mask_as(sc, CMP(MT_OP_EQ, a, b), g);
      mt_tensor *win = mask_as(sc, CMP(mx ? MT_OP_GT : MT_OP_LT, a, b), g);
      mt_tensor *share = ADD(win, MULS(eq, 0.5)); /* a's share; ties split evenly */
      if (wa) ga = MUL(g, share);
      if (wb) gb = MUL(g, NEG(ADDS(share, -1)));
      break;
    }
    case MT_OP_ATAN2: {
      mt_tensor *den = ADD(MUL(a, a), MUL(b, b));
      if (wa) ga = MUL(g, DIV(b, den));
      if (wb) gb = MUL(g, NEG(DIV(a, den)));
      break;
    }
    case MT_OP_HYPOT:
      if (wa) ga = MUL(g, DIV(a, y));
      if (wb) gb = MUL(g, DIV(b, y));
      break;
    case MT_OP_FMOD: case MT_OP_REMAINDER:
      ga = g;
      if (wb) gb = NEG(MUL(g, bin(sc, n->ip[0] == MT_OP_FMOD ? MT_OP_DIV_TRUNC : MT_OP_DIV_FLOOR, a, b)));
      break;
    case MT_OP_XLOGY:
      if (wa) ga = MUL(g, un(sc, MT_OP_LOG, b, 0, 0));
      if (wb) gb = MUL(g, DIV(a, b));
      break;
    case MT_OP_DIV_TRUNC: case MT_OP_DIV_FLOOR:
      if (wa) ga = MULS(g, 0);
      if (wb) gb = MULS(g, 0);
      break;
    default:
      S.s = mt_error(MT_ENOTIMPL, "backward: the derivative of %s is not implemented", mt_binary_op_name(n->ip[0]));
  }
  return finish_two(sc, n, gin, wa ? ga : NULL, wb ? gb : NULL);
}

/* x (op) s, or s (op) x when ip[1] (reverse); s = dp[0] */
static mt_status bw_binary_scalar(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *r = NULL;
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *x = saved(sc, n, 0), *y = saved(sc, n, 2);
  double s = n->dp[0];
  bool rev = n->ip[1] != 0;
  switch (n->ip[0]) {
    case MT_OP_ADD: r = g; break;
    case MT_OP_SUB: r = rev ? NEG(g) : g; break;
    case MT_OP_MUL: r = MULS(g, s); break;
    case MT_OP_DIV: r = rev ? NEG(DIV(MUL(g, y), x)) : MULS(g, 1 / s); break;
    case MT_OP_POW:
      if (rev) r = MULS(MUL(g, y), log(s));
      else r = s == 0 ? MULS(g, 0) : MUL(g, MULS(un(sc, MT_OP_POW_SCALAR, x, s - 1, 0), s));
      break;
    case MT_OP_MAXIMUM: case MT_OP_FMAX: r = MUL(g, mask_as(sc, CMPS(MT_OP_GE, x, s), g)); break;
    case MT_OP_MINIMUM: case MT_OP_FMIN: r = MUL(g, mask_as(sc, CMPS(MT_OP_LE, x, s), g)); break;
    case MT_OP_FMOD: case MT_OP_REMAINDER:
      if (!rev) r = g;
      else S.s = mt_error(MT_ENOTIMPL, "backward: the derivative of a number modulo a tensor is not implemented");
      break;
    case MT_OP_DIV_TRUNC: case MT_OP_DIV_FLOOR: r = MULS(g, 0); break;
    case MT_OP_ATAN2: /* atan2(x, s): s / (x^2 + s^2); atan2(s, x): -s / (x^2 + s^2) */
      r = MULS(DIV(g, ADDS(MUL(x, x), s * s)), rev ? -s : s);
      break;
    case MT_OP_HYPOT: r = MUL(g, DIV(x, un(sc, MT_OP_SQRT, ADDS(MUL(x, x), s * s), 0, 0))); break;
    case MT_OP_XLOGY: r = rev ? MULS(DIV(g, x), s) : MULS(g, log(s)); break; /* s*log(x) : x*log(s) */
    default:
      S.s = mt_error(MT_ENOTIMPL, "backward: the derivative of %s with a number is not implemented",
                     mt_binary_op_name(n->ip[0]));
  }
  if (LIVE(sc) && r) give(gin, 0, to_input(sc, n, 0, r));
  return scope_close(sc);
}

/* a + alpha * b */
static mt_status bw_add_scaled(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  if (wants(n, 0)) give(gin, 0, to_input(sc, n, 0, g));
  if (wants(n, 1)) give(gin, 1, to_input(sc, n, 1, MULS(g, n->dp[1])));
  return scope_close(sc);
}

/* ---------------------------------------------------------------- views */
static mt_tensor *view_op(scope *sc, mt_status s, mt_tensor **r) { return keep(sc, s, r); }

/* a reduction's gradient (shape of the output) back at the input's shape */
static mt_tensor *unreduce(scope *sc, mt_tensor *g, const mt_node *n) {
  if (!LIVE(sc) || !g) return NULL;
  const mt_shape *in = &n->shape[0];
  int mask = n->ip[2];
  mt_tensor *r = g, *t = NULL;
  if (!n->ip[1]) {
    for (int d = 0; d < in->ndim; d++)
      if (mask & (1 << d)) {
        r = view_op(sc, mt_unsqueeze(r, d, &t), &t);
        if (!r) return NULL;
      }
  }
  return view_op(sc, mt_expand(r, in->sizes, in->ndim, &t), &t);
}

/* a keepdim result (reduce_keep) expanded back to the input's shape */
static mt_tensor *expand_kept(scope *sc, mt_tensor *k, const mt_node *n) {
  mt_tensor *t = NULL;
  if (!LIVE(sc) || !k) return NULL;
  return view_op(sc, mt_expand(k, n->shape[0].sizes, n->shape[0].ndim, &t), &t);
}

static int64_t reduced_count(const mt_node *n) {
  int64_t c = 1;
  for (int d = 0; d < n->shape[0].ndim; d++)
    if (n->ip[2] & (1 << d)) c *= n->shape[0].sizes[d];
  return c;
}

static mt_tensor *reduce_keep(scope *sc, int op, mt_tensor *x, const mt_node *n) {
  int64_t dims[MT_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < n->shape[0].ndim; d++)
    if (n->ip[2] & (1 << d)) dims[nd++] = d;
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !x) return NULL;
  return keep(sc, mt_reduce(op, x, dims, nd, 1, -1, 0, NULL, &r), &r);
}

static mt_status bw_reduce(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *r = NULL;
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *x = saved(sc, n, 0), *y = saved(sc, n, 1);
  mt_tensor *ge = unreduce(sc, g, n);
  double p = n->dp[0];
  switch (n->ip[0]) {
    case MT_REDUCE_SUM: r = ge; break;
    case MT_REDUCE_NANSUM: r = MUL(ge, mask_as(sc, un(sc, MT_OP_LOGICAL_NOT, un(sc, MT_OP_ISNAN, x, 0, 0), 0, 0), ge)); break;
    case MT_REDUCE_MEAN: r = MULS(ge, 1.0 / (double)reduced_count(n)); break;
    case MT_REDUCE_PROD: {
      /* kept dims first, reduced dims flattened last: the product of each line, zeros allowed */
      const mt_shape *in = &n->shape[0];
      if (in->ndim == 0) { r = ge; break; }
      int64_t perm[MT_MAX_DIMS], inv[MT_MAX_DIMS], ls[MT_MAX_DIMS], ps[MT_MAX_DIMS];
      int k = 0, nk = 0;
      int64_t len = 1;
      for (int d = 0; d < in->ndim; d++)
        if (!(n->ip[2] & (1 << d))) { perm[k] = d; ls[nk++] = in->sizes[d]; ps[k++] = in->sizes[d]; }
      for (int d = 0; d < in->ndim; d++)
        if (n->ip[2] & (1 << d)) { perm[k] = d; len *= in->sizes[d]; ps[k++] = in->sizes[d]; }
      for (int d = 0; d < in->ndim; d++) inv[perm[d]] = d;
      if (len == 0) { r = MULS(ge, 0); break; }
      ls[nk] = len;
      mt_tensor *xl = reshape_(sc, T_(mt_permute(x, perm, in->ndim, &r_)), ls, nk + 1);
      ls[nk] = 1;
      mt_tensor *gl = reshape_(sc, g, ls, nk + 1);
      mt_tensor *rl = MUL(prod_grad_lines(sc, xl), gl);
      mt_tensor *rp = reshape_(sc, rl, ps, in->ndim);
      r = rp ? T_(mt_permute(rp, inv, in->ndim, &r_)) : NULL;
      (void)y;
      break;
    }
    case MT_REDUCE_AMAX: case MT_REDUCE_AMIN: {
      mt_tensor *m = mask_as(sc, CMP(MT_OP_EQ, x, unreduce(sc, y, n)), ge);
      r = MUL(ge, DIV(m, expand_kept(sc, reduce_keep(sc, MT_REDUCE_SUM, m, n), n)));
      break;
    }
    case MT_REDUCE_VAR: case MT_REDUCE_STD: {
      mt_tensor *mean = reduce_keep(sc, MT_REDUCE_MEAN, x, n);
      double dof = (double)reduced_count(n) - p;
      mt_tensor *dev = SUB(x, mean);
      if (n->ip[0] == MT_REDUCE_VAR) r = MUL(ge, MULS(dev, 2.0 / dof));
      else r = MUL(ge, DIV(MULS(dev, 1.0 / dof), unreduce(sc, y, n)));
      break;
    }
    case MT_REDUCE_NORM: {
      mt_tensor *ny = unreduce(sc, y, n);
      if (p == 2) r = MUL(ge, DIV(x, ny));
      else if (p == 1) r = MUL(ge, un(sc, MT_OP_SIGN, x, 0, 0));
      else if (isinf(p)) {
        mt_tensor *ax = un(sc, MT_OP_ABS, x, 0, 0);
        mt_tensor *m = mask_as(sc, CMP(MT_OP_EQ, ax, ny), ge);
        r = MUL(MUL(ge, un(sc, MT_OP_SIGN, x, 0, 0)), DIV(m, expand_kept(sc, reduce_keep(sc, MT_REDUCE_SUM, m, n), n)));
      } else {
        mt_tensor *ax = un(sc, MT_OP_ABS, x, 0, 0);
        r = MUL(ge, DIV(MUL(x, un(sc, MT_OP_POW_SCALAR, ax, p - 2, 0)), un(sc, MT_OP_POW_SCALAR, ny, p - 1, 0)));
      }
      break;
    }
    case MT_REDUCE_LOGSUMEXP: r = MUL(ge, un(sc, MT_OP_EXP, SUB(x, unreduce(sc, y, n)), 0, 0)); break;
    default: S.s = mt_error(MT_ENOTIMPL, "backward: %s is not differentiable", mt_reduce_op_name(n->ip[0]));
  }
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

/* max/min along a dim: the gradient goes to the chosen index (saved[0], 0-based int64) */
static mt_status bw_reduce_index(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *idx = saved(sc, n, 0), *t = NULL, *z = NULL, *r = NULL;
  int dim = n->ip[0];
  if (!n->ip[1]) {
    g = view_op(sc, mt_unsqueeze(g, dim, &t), &t);
    idx = view_op(sc, mt_unsqueeze(idx, dim, &t), &t);
  }
  if (LIVE(sc)) keep(sc, mt_tensor_full(n->shape[0].sizes, n->shape[0].ndim, g->_dtype, 0, &z), &z);
  if (LIVE(sc)) keep(sc, mt_scatter(z, dim, idx, g, 0, 1, 0, NULL, &r), &r);
  if (LIVE(sc)) give(gin, 0, r);
  return scope_close(sc);
}

static mt_status bw_reshape(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *t = NULL;
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *r = keep(sc, mt_reshape(g, n->shape[0].sizes, n->shape[0].ndim, &t), &t);
  if (LIVE(sc)) give(gin, 0, r);
  return scope_close(sc);
}

static mt_status bw_transpose(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  return mt_transpose(g, n->ip[0], n->ip[1], &gin[0]);
}

static mt_status bw_permute(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  int64_t inv[MT_MAX_DIMS];
  for (int i = 0; i < n->shape[1].ndim; i++) inv[n->shape[1].sizes[i]] = i;
  return mt_permute(g, inv, n->shape[1].ndim, &gin[0]);
}

static mt_status bw_expand(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  return mt_sum_to_shape(g, &n->shape[0], &gin[0]);
}

/* select / slice: the gradient lands in a zero tensor of the input's shape */
static mt_status bw_select_slice(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *z, *v;
  MT_TRY(mt_tensor_full(n->shape[0].sizes, n->shape[0].ndim, g->_dtype, 0, &z));
  mt_status s = n->op == GOP_SELECT ? mt_select(z, n->ip[0], n->ip[1], &v)
                                     : mt_slice(z, n->ip[0], n->ip[1], n->ip[2], n->ip[3], &v);
  if (s == MT_OK) {
    int mode = mt_grad_mode;
    mt_grad_mode = 0;
    s = mt_copy_(v, g);
    mt_grad_mode = mode;
    mt_tensor_release(v);
  }
  if (s) { mt_tensor_release(z); return s; }
  gin[0] = z;
  return MT_OK;
}

/* ---------------------------------------------------------------- linear algebra */
static mt_tensor *mm_(scope *sc, mt_tensor *a, mt_tensor *b) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !a || !b) return NULL;
  return keep(sc, mt_matmul(a, b, NULL, &r), &r);
}
static mt_tensor *tr(scope *sc, mt_tensor *a) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !a) return NULL;
  return keep(sc, mt_transpose(a, -1, -2, &r), &r);
}
static mt_tensor *unsq(scope *sc, mt_tensor *a, int d) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !a) return NULL;
  return keep(sc, mt_unsqueeze(a, d, &r), &r);
}
static mt_tensor *sq(scope *sc, mt_tensor *a, int d) {
  mt_tensor *r = NULL;
  if (!LIVE(sc) || !a) return NULL;
  return keep(sc, mt_squeeze(a, d, 0, &r), &r);
}

/* Gradients of a matrix product's operands, each in its operand's own layout (as PyTorch's
 * mm_mat1_backward / mm_mat2_backward): for an operand that is a transposed view of a row-major
 * matrix (a weight used as W.t()), the same product is computed transposed, (g^T a)^T for b and
 * (b g^T)^T for a, so that it comes out in W's layout and accumulating it into W.grad reads memory in
 * order (a strided, transposed add of 512x784 was 18% of an MLP training step). 2-D operands only. */
static bool col_major(const mt_tensor *t) {
  return t && t->_ndim == 2 && t->_strides[0] == 1 && t->_strides[1] == t->_sizes[0] && t->_sizes[0] > 1 &&
         t->_sizes[1] > 1;
}
/* the operands' layouts, noted as the product is recorded (an operand is saved only when the other
 * one's gradient needs it): bit 0, a was column-major; bit 1, b was */
static int32_t mm_layouts(const mt_tensor *a, const mt_tensor *b) { return (col_major(a) ? 1 : 0) | (col_major(b) ? 2 : 0); }
static mt_tensor *grad_a(scope *sc, const mt_node *n, mt_tensor *g, mt_tensor *b) {
  if ((n->ip[5] & 1) && g && g->_ndim == 2 && b && b->_ndim == 2) return tr(sc, mm_(sc, b, tr(sc, g)));
  return mm_(sc, g, tr(sc, b));
}
static mt_tensor *grad_b(scope *sc, const mt_node *n, mt_tensor *g, mt_tensor *a) {
  if ((n->ip[5] & 2) && g && g->_ndim == 2 && a && a->_ndim == 2) return tr(sc, mm_(sc, tr(sc, g), a));
  return mm_(sc, tr(sc, a), g);
}

static mt_status bw_matmul(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *ga = NULL, *gb = NULL;
  if (!g) return MT_OK;
  mt_tensor *a = saved(sc, n, 0), *b = saved(sc, n, 1);
  bool wa = wants(n, 0), wb = wants(n, 1);
  switch (n->ip[0]) {
    case MM_DOT:
      if (wa) ga = MUL(g, b);
      if (wb) gb = MUL(g, a);
      break;
    case MM_MV:
      if (wa) ga = MUL(unsq(sc, g, -1), b);
      if (wb) gb = sq(sc, mm_(sc, tr(sc, a), unsq(sc, g, -1)), -1);
      break;
    case MM_VM:
      if (wa) ga = sq(sc, mm_(sc, unsq(sc, g, -2), tr(sc, b)), -2);
      if (wb && !(gb = fused_outer(sc, a, g))) gb = MUL(unsq(sc, a, -1), unsq(sc, g, -2));
      break;
    default:
      if (wa) ga = grad_a(sc, n, g, b);
      if (wb) gb = grad_b(sc, n, g, a);
  }
  return finish_two(sc, n, gin, wa ? ga : NULL, wb ? gb : NULL);
}

/* beta * c + alpha * (a @ b): inputs c, a, b; dp = beta, alpha; ip[0]: batched */
static mt_status bw_addmm(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *a = saved(sc, n, 0), *b = saved(sc, n, 1);
  double beta = n->dp[0], alpha = n->dp[1];
  mt_tensor *gc = NULL, *ga = NULL, *gb = NULL;
  if (wants(n, 0)) gc = sum_to_shape(sc, beta == 1 ? g : MULS(g, beta), &n->shape[0]);
  if (wants(n, 1)) { ga = grad_a(sc, n, g, b); if (alpha != 1) ga = MULS(ga, alpha); }
  if (wants(n, 2)) { gb = grad_b(sc, n, g, a); if (alpha != 1) gb = MULS(gb, alpha); }
  if (LIVE(sc)) {
    if (gc) give(gin, 0, gc);
    if (ga) give(gin, 1, ga);
    if (gb) give(gin, 2, gb);
  }
  return scope_close(sc);
}

/* ---------------------------------------------------------------- others */
/* softmax / log_softmax along ip[0] (ip[1]: log); saved[1] the output */
static mt_status bw_softmax(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *r = NULL, *t = NULL;
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *y = saved(sc, n, 1);
  int64_t dim = n->ip[0];
  if (n->ip[1]) {
    mt_tensor *gs = LIVE(sc) ? keep(sc, mt_reduce(MT_REDUCE_SUM, g, &dim, 1, 1, -1, 0, NULL, &t), &t) : NULL;
    r = SUB(g, MUL(un(sc, MT_OP_EXP, y, 0, 0), gs));
  } else {
    mt_tensor *gy = MUL(g, y);
    mt_tensor *gs = LIVE(sc) ? keep(sc, mt_reduce(MT_REDUCE_SUM, gy, &dim, 1, 1, -1, 0, NULL, &t), &t) : NULL;
    r = MUL(y, SUB(g, gs));
  }
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

/* where(cond, a, b): inputs a, b; saved[0] cond */
static mt_status bw_where(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *z = NULL, *r = NULL;
  if (!g) return MT_OK;
  mt_tensor *c = saved(sc, n, 0);
  if (LIVE(sc)) keep(sc, mt_tensor_full(NULL, 0, g->_dtype, 0, &z), &z);
  if (wants(n, 0) && LIVE(sc)) {
    keep(sc, mt_where(c, g, z, NULL, &r), &r);
    give(gin, 0, sum_to_shape(sc, r, &n->shape[0]));
  }
  if (wants(n, 1) && LIVE(sc)) {
    keep(sc, mt_where(c, z, g, NULL, &r), &r);
    give(gin, 1, sum_to_shape(sc, r, &n->shape[1]));
  }
  return scope_close(sc);
}

/* clone / contiguous (ip[0] 0) and dtype conversions (ip[0] 1: back to shape[0].dtype) */
static mt_status bw_clone(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  if (n->ip[0]) return mt_to_dtype(g, n->shape[0].dtype, 0, &gin[0]);
  gin[0] = mt_tensor_retain(g);
  return MT_OK;
}

/* cat along ip[0]: each input's size along it in saved[0] (an int64 tensor) */
static mt_status bw_cat(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *sizes;
  MT_TRY(mt_node_get_saved(n, 0, &sizes));
  const int64_t *sz = (const int64_t *)sizes->_data;
  int64_t start = 0;
  mt_status s = MT_OK;
  for (int k = 0; k < n->nin && s == MT_OK; k++) {
    if (wants(n, k)) s = mt_narrow(g, n->ip[0], start, sz[k], &gin[k]);
    start += sz[k];
  }
  mt_tensor_release(sizes);
  return s;
}

/* index_select / gather: the gradient is added back at the indices (saved[0], 0-based int64) */
static mt_status bw_index(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *idx, *z;
  MT_TRY(mt_node_get_saved(n, 0, &idx));
  mt_status s = mt_tensor_full(n->shape[0].sizes, n->shape[0].ndim, g->_dtype, 0, &z);
  if (s == MT_OK) {
    s = n->op == GOP_INDEX_SELECT ? mt_index_add(z, n->ip[0], idx, g, 1, 0, NULL, &gin[0])
                                  : mt_scatter(z, n->ip[0], idx, g, 0, 1, 0, NULL, &gin[0]);
    mt_tensor_release(z);
  }
  mt_tensor_release(idx);
  return s;
}

/* masked_fill with a number: no gradient where the mask is set (saved[0] the mask) */
static mt_status bw_masked_fill(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *m, *r;
  MT_TRY(mt_node_get_saved(n, 0, &m));
  mt_status s = mt_masked_fill(g, m, 0, NULL, &r);
  mt_tensor_release(m);
  if (s) return s;
  s = mt_sum_to_shape(r, &n->shape[0], &gin[0]);
  mt_tensor_release(r);
  return s;
}

/* ---------------------------------------------------------------- cumulative, var_mean */
/* cumsum along ip[0]: each input gets the sum of the output gradients from its position on */
static mt_status bw_cumsum(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *r;
  if (!g || !wants(n, 0)) return MT_OK;
  int d = n->ip[0];
  if (n->shape[0].ndim == 0) r = g;
  else r = ADD(SUB(g, cum_(sc, g, d, 0)), sum_dim_(sc, g, d, 1));
  r = to_dtype_(sc, r, n->shape[0].dtype);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

/* cumprod along ip[0]; saved[0] the input. dy_k/dx_j = prod_{i<=k, i!=j} x_i for k >= j, built as
 * an (n, n) matrix per line (row j: the line with x_j replaced by 1, cumulated), so that zeros in
 * the input are exact. */
static mt_status bw_cumprod(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *r = NULL;
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *x = saved(sc, n, 0);
  int d = n->ip[0], nd = n->shape[0].ndim;
  if (nd == 0) {
    r = g;
  } else if (n->shape[0].sizes[d] == 0) {
    r = MULS(g, 0);
  } else {
    if (LIVE(sc) && x->_dtype != g->_dtype) x = to_dtype_(sc, x, g->_dtype);
    int64_t len = n->shape[0].sizes[d];
    mt_tensor *xt = T_(mt_transpose(x, d, -1, &r_));
    mt_tensor *gt = T_(mt_transpose(g, d, -1, &r_));
    int64_t es[MT_MAX_DIMS + 1];
    for (int i = 0; i < nd; i++) es[i] = xt ? xt->_sizes[i] : 0;
    es[nd] = len;
    es[nd - 1] = len; /* (..., j, i) */
    mt_tensor *e = xt ? T_(mt_expand(unsq(sc, xt, -2), es, nd + 1, &r_)) : NULL;
    mt_tensor *eye = T_(mt_eye(len, len, g->_dtype, &r_));
    mt_tensor *m = ADD(MUL(e, NEG(ADDS(eye, -1))), eye);
    mt_tensor *p = cum_(sc, m, nd, 1); /* p[j, k] = prod_{i<=k, i!=j} x_i */
    mt_tensor *ones = T_(mt_tensor_full(es + nd - 1, 2, g->_dtype, 1, &r_));
    mt_tensor *upper = ones ? T_(mt_triangle(ones, 0, 1, NULL, &r_)) : NULL; /* k >= j */
    mt_tensor *t = MUL(MUL(p, unsq(sc, gt, -2)), upper);
    mt_tensor *rt = sum_dim_(sc, t, -1, 0);
    r = rt ? T_(mt_transpose(rt, d, -1, &r_)) : NULL;
  }
  r = to_dtype_(sc, r, n->shape[0].dtype);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

/* var_mean / std_mean (ip[3]: std): outputs (var or std, mean); saved[0] the input, saved[1] the
 * std; ip[1] keepdim, ip[2] the reduced dims' mask, dp[0] the correction */
static mt_status bw_var_mean(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *gv = gout[0], *gm = gout[1], *r = NULL;
  if (!wants(n, 0) || (!gv && !gm)) return MT_OK;
  double count = (double)reduced_count(n);
  if (gv) {
    mt_tensor *x = saved(sc, n, 0);
    mt_tensor *dev = SUB(x, reduce_keep(sc, MT_REDUCE_MEAN, x, n));
    double dof = count - n->dp[0];
    mt_tensor *ge = unreduce(sc, gv, n);
    if (n->ip[3]) r = MUL(ge, DIV(MULS(dev, 1.0 / dof), unreduce(sc, saved(sc, n, 1), n)));
    else r = MUL(ge, MULS(dev, 2.0 / dof));
  }
  if (gm) {
    mt_tensor *m = MULS(unreduce(sc, gm, n), 1.0 / count);
    r = r ? ADD(r, m) : m;
  }
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

/* ---------------------------------------------------------------- writes at indices */
/* scatter (ip[1]: MT_SC_*) along ip[0]: inputs self, src; saved[0] the index (0-based int64) */
static mt_status bw_scatter(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *idx = saved(sc, n, 0);
  int dim = n->ip[0], kind = n->ip[1];
  if (wants(n, 0)) {
    mt_tensor *ga = kind == MT_SC_ADD_SRC ? g : T_(mt_scatter(g, dim, idx, NULL, 0, 0, 0, NULL, &r_));
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (n->nin > 1 && wants(n, 1)) {
    mt_tensor *gs = pad_to_(sc, T_(mt_gather(g, dim, idx, 0, NULL, &r_)), &n->shape[1]);
    if (LIVE(sc)) give(gin, 1, gs);
  }
  return scope_close(sc);
}

/* index_add (alpha dp[0]) / index_copy_ / index_fill_ along ip[0]; inputs self, src; saved[0] the
 * index (0-based int64) */
static mt_status bw_index_write(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *idx = saved(sc, n, 0);
  int dim = n->ip[0];
  if (wants(n, 0)) {
    mt_tensor *ga = g;
    if (n->op != GOP_INDEX_ADD) {
      ga = T_(mt_clone(g, &r_));
      if (LIVE(sc)) { mt_status s = mt_index_fill_(ga, dim, idx, 0, 0); if (s) S.s = s; }
    }
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (n->nin > 1 && wants(n, 1)) {
    mt_tensor *gs = T_(mt_index_select(g, dim, idx, 0, NULL, &r_));
    if (n->op == GOP_INDEX_ADD && n->dp[0] != 1) gs = MULS(gs, n->dp[0]);
    gs = reshape_(sc, gs, n->shape[1].sizes, n->shape[1].ndim);
    if (LIVE(sc)) give(gin, 1, gs);
  }
  return scope_close(sc);
}

/* masked_fill with a 0-dim tensor value: inputs self, value; saved[0] the mask */
static mt_status bw_masked_fill_t(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *m = saved(sc, n, 0);
  mt_tensor *kept = T_(mt_masked_fill(g, m, 0, NULL, &r_));
  if (wants(n, 0)) {
    mt_tensor *ga = sum_to_shape(sc, kept, &n->shape[0]);
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (wants(n, 1)) {
    mt_tensor *gv = SUB(g, kept);
    gv = gv ? T_(mt_reduce(MT_REDUCE_SUM, gv, NULL, 0, 0, -1, 0, NULL, &r_)) : NULL;
    gv = to_dtype_(sc, reshape_(sc, gv, n->shape[1].sizes, n->shape[1].ndim), n->shape[1].dtype);
    if (LIVE(sc)) give(gin, 1, gv);
  }
  return scope_close(sc);
}

/* masked_select: saved[0] the mask; shape[0] the input, shape[1] the broadcast shape */
static mt_status bw_masked_select(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  mt_tensor *m = saved(sc, n, 0);
  mt_tensor *z = zeros_(sc, n->shape[1].sizes, n->shape[1].ndim, g->_dtype);
  if (LIVE(sc)) { mt_status s = mt_masked_scatter_(z, m, g); if (s) S.s = s; }
  mt_tensor *r = sum_to_shape(sc, z, &n->shape[0]);
  if (LIVE(sc)) give(gin, 0, r);
  return scope_close(sc);
}

/* masked_scatter_: inputs self, src; saved[0] the mask */
static mt_status bw_masked_scatter(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *m = saved(sc, n, 0);
  if (wants(n, 0)) {
    mt_tensor *ga = T_(mt_masked_fill(g, m, 0, NULL, &r_));
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (wants(n, 1)) {
    mt_tensor *sel = T_(mt_masked_select(g, m, &r_));
    int64_t total = 1;
    for (int d = 0; d < n->shape[1].ndim; d++) total *= n->shape[1].sizes[d];
    if (sel && sel->_numel < total) {
      int64_t rest = total - sel->_numel;
      sel = cat2_(sc, sel, zeros_(sc, &rest, 1, g->_dtype), 0);
    }
    mt_tensor *gs = reshape_(sc, sel, n->shape[1].sizes, n->shape[1].ndim);
    if (LIVE(sc)) give(gin, 1, gs);
  }
  return scope_close(sc);
}

/* index_put_ (ip[0]: accumulate): inputs self (its old value), values; saved[0] the flat
 * positions in self of the indexed elements (the shape of the indexing result) */
static mt_status bw_index_put(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_tensor *pos = flat_(sc, saved(sc, n, 0));
  if (wants(n, 0)) {
    mt_tensor *ga = g;
    if (!n->ip[0]) {
      mt_tensor *gv = flat_(sc, g);
      mt_tensor *gf = gv ? T_(mt_clone(gv, &r_)) : NULL; /* a whole tensor of its own (not a view) */
      if (LIVE(sc)) { mt_status s = mt_index_fill_(gf, 0, pos, 0, 0); if (s) S.s = s; }
      ga = reshape_(sc, gf, n->shape[0].sizes, n->shape[0].ndim);
    }
    if (LIVE(sc)) give(gin, 0, ga);
  }
  if (wants(n, 1)) {
    mt_tensor *p0 = saved(sc, n, 0);
    mt_tensor *gv = T_(mt_index_select(flat_(sc, g), 0, pos, 0, NULL, &r_));
    gv = p0 ? reshape_(sc, gv, p0->_sizes, p0->_ndim) : NULL;
    gv = sum_to_shape(sc, gv, &n->shape[1]);
    if (LIVE(sc)) give(gin, 1, gv);
  }
  return scope_close(sc);
}

/* ---------------------------------------------------------------- gathers of elements */
/* Ops whose output elements are input elements (advanced indexing, as_strided, unfold,
 * diagonal, diag of a matrix): saved[0] holds, for each output element, its flat position in the
 * input; the gradient is added back there (repeated positions add up). diag of a vector
 * (ip[1] == 1): the diagonal ip[0] of the gradient. */
static mt_status bw_gather_flat(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0], *r;
  if (!g || !wants(n, 0)) return MT_OK;
  if (n->op == GOP_DIAG && n->ip[1] == 1) {
    r = T_(mt_diagonal(g, n->ip[0], 0, 1, &r_));
  } else {
    mt_tensor *pos = flat_(sc, saved(sc, n, 0));
    int64_t numel = 1;
    for (int d = 0; d < n->shape[0].ndim; d++) numel *= n->shape[0].sizes[d];
    mt_tensor *z = zeros_(sc, &numel, 1, g->_dtype);
    r = T_(mt_index_add(z, 0, pos, flat_(sc, g), 1, 0, NULL, &r_));
    r = reshape_(sc, r, n->shape[0].sizes, n->shape[0].ndim);
  }
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

/* tril / triu (ip[1]) with diagonal ip[0] */
static mt_status bw_triangle(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  return mt_triangle(g, n->ip[0], n->ip[1], NULL, &gin[0]);
}

/* flip over the ip[0] dims in shape[1].sizes */
static mt_status bw_flip(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  return mt_flip(g, n->shape[1].sizes, n->ip[0], &gin[0]);
}

/* roll by the ip[0] shifts in shape[1].sizes over the dims in shape[0].sizes (ip[1] == 0: flat) */
static mt_status bw_roll(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  int64_t back[MT_MAX_DIMS];
  for (int i = 0; i < n->ip[0]; i++) back[i] = -n->shape[1].sizes[i];
  return mt_roll(g, back, n->ip[1] ? n->shape[0].sizes : NULL, n->ip[0], &gin[0]);
}

/* repeat by shape[1].sizes (shape[1].ndim of them) of an input of shape[0]: the gradient seen as
 * (r0, s0, r1, s1, ...) summed over the r's */
static mt_status bw_repeat(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g || !wants(n, 0)) return MT_OK;
  int k = n->shape[1].ndim, lead = k - n->shape[0].ndim;
  if (2 * k > MT_MAX_DIMS)
    return mt_error(MT_ENOTIMPL, "backward: repeat over more than %d dims is not differentiable", MT_MAX_DIMS / 2);
  int64_t is[2 * MT_MAX_DIMS] = {0}, dims[MT_MAX_DIMS];
  for (int i = 0; i < k; i++) {
    is[2 * i] = n->shape[1].sizes[i];
    is[2 * i + 1] = i < lead ? 1 : n->shape[0].sizes[i - lead];
    dims[i] = 2 * i;
  }
  mt_tensor *gi = reshape_(sc, g, is, 2 * k);
  mt_tensor *r = k ? (gi ? T_(mt_reduce(MT_REDUCE_SUM, gi, dims, k, 0, -1, 0, NULL, &r_)) : NULL) : gi;
  r = reshape_(sc, r, n->shape[0].sizes, n->shape[0].ndim);
  if (LIVE(sc) && r) give(gin, 0, r);
  return scope_close(sc);
}

/* stack along ip[0]: input k gets the slice k */
static mt_status bw_stack(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  mt_status s = MT_OK;
  for (int k = 0; k < n->nin && s == MT_OK; k++)
    if (wants(n, k)) s = mt_select(g, n->ip[0], k, &gin[k]);
  return s;
}

/* copy_ of a whole tensor (inputs: its old value, src) and fill_ (input: its old value): the old
 * value gets zeros, src the gradient summed to its shape, in its dtype */
static mt_status bw_copy(mt_node *n, mt_tensor **gout, mt_tensor **gin) {
  scope S = {0}, *sc = &S;
  mt_tensor *g = gout[0];
  if (!g) return MT_OK;
  if (wants(n, 0)) {
    mt_tensor *z = zeros_(sc, n->shape[0].sizes, n->shape[0].ndim, n->shape[0].dtype);
    if (LIVE(sc)) give(gin, 0, z);
  }
  if (n->nin > 1 && wants(n, 1)) {
    mt_tensor *gs = to_dtype_(sc, sum_to_shape(sc, g, &n->shape[1]), n->shape[1].dtype);
    if (LIVE(sc)) give(gin, 1, gs);
  }
  return scope_close(sc);
}

static const mt_backward_fn backward_table[GOP_COUNT] = {
    [GOP_UNARY] = bw_unary, [GOP_BINARY] = bw_binary, [GOP_BINARY_SCALAR] = bw_binary_scalar,
    [GOP_ADD_SCALED] = bw_add_scaled, [GOP_REDUCE] = bw_reduce, [GOP_REDUCE_INDEX] = bw_reduce_index,
    [GOP_RESHAPE] = bw_reshape, [GOP_TRANSPOSE] = bw_transpose, [GOP_PERMUTE] = bw_permute,
    [GOP_EXPAND] = bw_expand, [GOP_SELECT] = bw_select_slice, [GOP_SLICE] = bw_select_slice,
    [GOP_MATMUL] = bw_matmul, [GOP_ADDMM] = bw_addmm, [GOP_SOFTMAX] = bw_softmax, [GOP_WHERE] = bw_where,
    [GOP_CLONE] = bw_clone, [GOP_CAT] = bw_cat, [GOP_INDEX_SELECT] = bw_index, [GOP_GATHER] = bw_index,
    [GOP_MASKED_FILL] = bw_masked_fill, [GOP_CUMSUM] = bw_cumsum, [GOP_CUMPROD] = bw_cumprod,
    [GOP_VAR_MEAN] = bw_var_mean, [GOP_BADDBMM] = bw_addmm, [GOP_SCATTER] = bw_scatter,
    [GOP_INDEX_ADD] = bw_index_write, [GOP_INDEX_COPY] = bw_index_write, [GOP_INDEX_FILL] = bw_index_write,
    [GOP_MASKED_FILL_T] = bw_masked_fill_t, [GOP_MASKED_SELECT] = bw_masked_select,
    [GOP_MASKED_SCATTER] = bw_masked_scatter, [GOP_INDEX] = bw_gather_flat, [GOP_INDEX_PUT] = bw_index_put,
    [GOP_DIAG] = bw_gather_flat, [GOP_TRIANGLE] = bw_triangle, [GOP_AS_STRIDED] = bw_gather_flat,
    [GOP_UNFOLD] = bw_gather_flat, [GOP_DIAGONAL] = bw_gather_flat, [GOP_SORT] = bw_index, [GOP_TOPK] = bw_index,
    [GOP_FLIP] = bw_flip, [GOP_ROLL] = bw_roll, [GOP_REPEAT] = bw_repeat, [GOP_STACK] = bw_stack,
    [GOP_COPY] = bw_copy, [GOP_FILL] = bw_copy,
};

mt_backward_fn mt_grad_op_backward(int op) { return op >= 0 && op < GOP_COUNT ? backward_table[op] : NULL; }

/* ---------------------------------------------------------------- recording */
/* Each mt_record_* is called by a forward op after it ran, when grad mode is on and an input
 * requires grad; `out` is the result (for an in-place op: the input itself, `x` then holds a copy
 * of its old value when the backward needs it). */

static mt_status finish_node(mt_node *n, mt_tensor *out) {
  return mt_node_attach_new(n, out);
}

static bool unary_needs_input(int op) {
  switch (op) {
    case MT_OP_NEG: case MT_OP_EXP: case MT_OP_EXP2: case MT_OP_EXPM1: case MT_OP_SQRT: case MT_OP_RSQRT:
    case MT_OP_TAN: case MT_OP_TANH: case MT_OP_SIGMOID: case MT_OP_RECIPROCAL:
    case MT_OP_RPOW_SCALAR: case MT_OP_SIGN: case MT_OP_FLOOR: case MT_OP_CEIL: case MT_OP_ROUND:
    case MT_OP_TRUNC: case MT_OP_FRAC: case MT_OP_ROUND_DECIMALS:
      return false;
    default:
      return true;
  }
}
bool mt_grad_unary_needs_input(int op) { return unary_needs_input(op); }

/* the ops whose derivative is written with their output */
static bool unary_needs_output(int op) {
  switch (op) {
    case MT_OP_EXP: case MT_OP_EXP2: case MT_OP_EXPM1: case MT_OP_SQRT: case MT_OP_RSQRT: case MT_OP_TAN:
    case MT_OP_TANH: case MT_OP_SIGMOID: case MT_OP_RECIPROCAL: case MT_OP_RPOW_SCALAR: case MT_OP_ELU:
      return true;
    default:
      return false;
  }
}

mt_status mt_record_unary(int op, mt_tensor *a, mt_tensor *x, double p1, double p2, mt_tensor *out) {
  if (!mt_is_float(out->_dtype) || unary_grad_name(op) == NULL) return MT_OK; /* not differentiable */
  mt_node *n;
  MT_TRY(mt_node_make(GOP_UNARY, &a, 1, 1, &n));
  n->ip[0] = op;
  n->dp[0] = p1;
  n->dp[1] = p2;
  if (unary_needs_input(op)) mt_node_save(n, 0, x);
  if (unary_needs_output(op)) mt_node_save_output(n, 1, out, 0);
  return finish_node(n, out);
}

mt_status mt_record_binary(int op, mt_tensor *a, mt_tensor *b, mt_tensor *xa, mt_tensor *out) {
  if (!mt_is_float(out->_dtype) || binary_grad_name(op, 0, 0) == NULL) return MT_OK;
  mt_tensor *in[2] = {a, b};
  mt_node *n;
  MT_TRY(mt_node_make(GOP_BINARY, in, 2, 1, &n));
  n->ip[0] = op;
  mt_node_keep_shape(n, 0, a, out);
  mt_node_keep_shape(n, 1, b, out);
  if (op != MT_OP_ADD && op != MT_OP_SUB) {
    mt_node_save(n, 0, xa);
    mt_node_save(n, 1, b);
  }
  if (op == MT_OP_POW || op == MT_OP_HYPOT) mt_node_save_output(n, 2, out, 0);
  return finish_node(n, out);
}

mt_status mt_record_binary_scalar(int op, mt_tensor *a, mt_tensor *x, double s, int reverse, mt_tensor *out) {
  if (!mt_is_float(out->_dtype) || binary_grad_name(op, 1, reverse) == NULL) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_BINARY_SCALAR, &a, 1, 1, &n));
  n->ip[0] = op;
  n->ip[1] = reverse;
  n->dp[0] = s;
  mt_node_keep_shape(n, 0, a, out);
  if (op != MT_OP_ADD && op != MT_OP_SUB && op != MT_OP_MUL) mt_node_save(n, 0, x);
  if (op == MT_OP_DIV || op == MT_OP_POW) mt_node_save_output(n, 2, out, 0);
  return finish_node(n, out);
}

mt_status mt_record_add_scaled(mt_tensor *a, mt_tensor *b, double alpha, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[2] = {a, b};
  mt_node *n;
  MT_TRY(mt_node_make(GOP_ADD_SCALED, in, 2, 1, &n));
  n->dp[0] = alpha >= 0 ? 1 : -1; /* the name: Add or Sub */
  n->dp[1] = alpha;
  mt_node_keep_shape(n, 0, a, out);
  mt_node_keep_shape(n, 1, b, out);
  return finish_node(n, out);
}

mt_status mt_record_reduce(int op, mt_tensor *a, const int64_t *dims, int ndims, int keepdim, double p,
                           mt_tensor *out) {
  if (!mt_is_float(out->_dtype) || reduce_grad_name(op, 1) == NULL) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_REDUCE, &a, 1, 1, &n));
  int mask = 0;
  if (ndims == 0) mask = (1 << a->_ndim) - 1;
  for (int i = 0; i < ndims; i++) mask |= 1 << (dims[i] < 0 ? dims[i] + a->_ndim : dims[i]);
  n->ip[0] = op;
  n->ip[1] = keepdim;
  n->ip[2] = mask;
  n->ip[3] = ndims == 0;
  n->dp[0] = p;
  mt_node_set_shape(n, 0, a);
  if (op != MT_REDUCE_SUM && op != MT_REDUCE_MEAN) mt_node_save(n, 0, a);
  if (op == MT_REDUCE_PROD || op == MT_REDUCE_AMAX || op == MT_REDUCE_AMIN || op == MT_REDUCE_STD ||
      op == MT_REDUCE_NORM || op == MT_REDUCE_LOGSUMEXP)
    mt_node_save_output(n, 1, out, 0);
  return finish_node(n, out);
}

/* values of max/min along dim; `indices` are 0-based (the caller converts its copy) */
mt_status mt_record_reduce_index(mt_tensor *a, int dim, int keepdim, int is_min, mt_tensor *indices,
                                 mt_tensor *values) {
  if (!mt_is_float(values->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_REDUCE_INDEX, &a, 1, 1, &n));
  n->ip[0] = dim;
  n->ip[1] = keepdim;
  n->ip[2] = is_min;
  mt_node_set_shape(n, 0, a);
  mt_node_save(n, 0, indices);
  return finish_node(n, values);
}

/* kind: RS_* (view, reshape that copied, unsqueeze, squeeze, ...) */
mt_status mt_record_reshape(int kind, mt_tensor *a, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(GOP_RESHAPE, &a, 1, 1, &n));
  n->ip[0] = kind;
  mt_node_set_shape(n, 0, a);
  return finish_node(n, out);
}

mt_status mt_record_transpose(mt_tensor *a, int d0, int d1, int is_t, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(GOP_TRANSPOSE, &a, 1, 1, &n));
  n->ip[0] = d0;
  n->ip[1] = d1;
  n->ip[2] = is_t;
  return finish_node(n, out);
}

mt_status mt_record_permute(mt_tensor *a, const int64_t *dims, int ndim, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(GOP_PERMUTE, &a, 1, 1, &n));
  n->shape[1].ndim = ndim;
  for (int i = 0; i < ndim; i++) n->shape[1].sizes[i] = dims[i] < 0 ? dims[i] + ndim : dims[i];
  return finish_node(n, out);
}

mt_status mt_record_expand(mt_tensor *a, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(GOP_EXPAND, &a, 1, 1, &n));
  mt_node_set_shape(n, 0, a);
  return finish_node(n, out);
}

mt_status mt_record_select(mt_tensor *a, int dim, int64_t index, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(GOP_SELECT, &a, 1, 1, &n));
  n->ip[0] = dim;
  n->ip[1] = (int32_t)index;
  mt_node_set_shape(n, 0, a);
  return finish_node(n, out);
}

mt_status mt_record_slice(mt_tensor *a, int dim, int64_t start, int64_t stop, int64_t step, mt_tensor *out) {
  mt_node *n;
  MT_TRY(mt_node_make(GOP_SLICE, &a, 1, 1, &n));
  n->ip[0] = dim;
  n->ip[1] = (int32_t)start;
  n->ip[2] = (int32_t)stop;
  n->ip[3] = (int32_t)step;
  mt_node_set_shape(n, 0, a);
  return finish_node(n, out);
}

mt_status mt_record_matmul(mt_tensor *a, mt_tensor *b, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[2] = {a, b};
  mt_node *n;
  MT_TRY(mt_node_make(GOP_MATMUL, in, 2, 1, &n));
  int kind;
  if (a->_ndim == 1 && b->_ndim == 1) kind = MM_DOT;
  else if (b->_ndim == 1) kind = MM_MV;
  else if (a->_ndim == 1) kind = MM_VM;
  else if (a->_ndim == 2 && b->_ndim == 2) kind = MM_MM;
  else if (a->_ndim == 3 && b->_ndim == 3) kind = MM_BMM;
  else kind = MM_ND;
  n->ip[0] = kind;
  n->ip[5] = mm_layouts(a, b);
  mt_node_set_shape(n, 0, a);
  mt_node_set_shape(n, 1, b);
  if (b->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, 0, a);
  if (a->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, 1, b);
  return finish_node(n, out);
}

mt_status mt_record_addmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[3] = {c, a, b};
  mt_node *n;
  MT_TRY(mt_node_make(GOP_ADDMM, in, 3, 1, &n));
  n->dp[0] = beta;
  n->dp[1] = alpha;
  n->ip[5] = mm_layouts(a, b);
  mt_node_set_shape(n, 0, c);
  if (b->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, 0, a);
  if (a->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, 1, b);
  return finish_node(n, out);
}

mt_status mt_record_softmax(mt_tensor *a, int dim, int log, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_SOFTMAX, &a, 1, 1, &n));
  n->ip[0] = dim < 0 ? dim + (a->_ndim ? a->_ndim : 1) : dim;
  n->ip[1] = log;
  mt_node_save_output(n, 1, out, 0);
  return finish_node(n, out);
}

mt_status mt_record_where(mt_tensor *cond, mt_tensor *a, mt_tensor *b, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[2] = {a, b};
  mt_node *n;
  MT_TRY(mt_node_make(GOP_WHERE, in, 2, 1, &n));
  mt_node_set_shape(n, 0, a);
  mt_node_set_shape(n, 1, b);
  mt_node_save(n, 0, cond);
  return finish_node(n, out);
}

mt_status mt_record_clone(mt_tensor *a, int to_dtype, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_CLONE, &a, 1, 1, &n));
  n->ip[0] = to_dtype;
  mt_node_set_shape(n, 0, a);
  return finish_node(n, out);
}

mt_status mt_record_cat(mt_tensor **ts, int count, int dim, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_CAT, ts, count, 1, &n));
  int64_t len = count;
  mt_tensor *sizes;
  mt_status s = mt_tensor_empty(&len, 1, MT_INT64, &sizes);
  if (s) { mt_node_release(n); return s; }
  for (int i = 0; i < count; i++) ((int64_t *)sizes->_data)[i] = ts[i]->_ndim ? ts[i]->_sizes[dim] : 0;
  n->ip[0] = dim;
  mt_node_save(n, 0, sizes);
  mt_tensor_release(sizes);
  return finish_node(n, out);
}

/* index_select (gather == 0) or gather: `index` 0-based int64 of the op's index shape */
mt_status mt_record_index(mt_tensor *a, int dim, mt_tensor *index, int gather, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(gather ? GOP_GATHER : GOP_INDEX_SELECT, &a, 1, 1, &n));
  n->ip[0] = dim;
  mt_node_set_shape(n, 0, a);
  mt_node_save(n, 0, index);
  return finish_node(n, out);
}

mt_status mt_record_masked_fill(mt_tensor *a, mt_tensor *mask, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_MASKED_FILL, &a, 1, 1, &n));
  mt_node_set_shape(n, 0, a);
  mt_node_save(n, 0, mask);
  return finish_node(n, out);
}

/* ---------------------------------------------------------------- recording: the rest */
/* a node over `nin` inputs with shapes of the first two kept, attached to out as output 0 */
static mt_status make_node(int op, mt_tensor **in, int nin, mt_node **n) {
  MT_TRY(mt_node_make(op, in, nin, 1, n));
  for (int k = 0; k < nin && k < 2; k++)
    if (in[k]) mt_node_set_shape(*n, k, in[k]);
  return MT_OK;
}

mt_status mt_record_cumulative(mt_tensor *a, int dim, int is_prod, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(make_node(is_prod ? GOP_CUMPROD : GOP_CUMSUM, &a, 1, &n));
  n->ip[0] = a->_ndim ? (dim < 0 ? dim + a->_ndim : dim) : 0;
  if (is_prod) mt_node_save(n, 0, a);
  return finish_node(n, out);
}

mt_status mt_record_var_mean(mt_tensor *a, const int64_t *dims, int ndims, int keepdim, double correction,
                             int take_sqrt, mt_tensor *var, mt_tensor *mean) {
  if (!mt_is_float(var->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_VAR_MEAN, &a, 1, 2, &n));
  int mask = 0;
  if (ndims == 0) mask = (1 << a->_ndim) - 1;
  for (int i = 0; i < ndims; i++) mask |= 1 << (dims[i] < 0 ? dims[i] + a->_ndim : dims[i]);
  n->ip[1] = keepdim;
  n->ip[2] = mask;
  n->ip[3] = take_sqrt;
  n->dp[0] = correction;
  mt_node_set_shape(n, 0, a);
  mt_node_save(n, 0, a);
  if (take_sqrt) mt_node_save_output(n, 1, var, 0);
  mt_status s = mt_node_attach(n, var, 0);
  if (s == MT_OK) s = mt_node_attach(n, mean, 1);
  mt_node_release(n);
  return s;
}

mt_status mt_record_baddbmm(mt_tensor *c, mt_tensor *a, mt_tensor *b, double beta, double alpha, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[3] = {c, a, b};
  mt_node *n;
  MT_TRY(mt_node_make(GOP_BADDBMM, in, 3, 1, &n));
  n->dp[0] = beta;
  n->dp[1] = alpha;
  mt_node_set_shape(n, 0, c);
  if (b->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, 0, a);
  if (a->_flags & MT_TENSOR_REQUIRES_GRAD) mt_node_save(n, 1, b);
  return finish_node(n, out);
}

mt_status mt_record_scatter(mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, int kind, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[2] = {a, src};
  mt_node *n;
  MT_TRY(make_node(GOP_SCATTER, in, src ? 2 : 1, &n));
  n->ip[0] = dim;
  n->ip[1] = kind;
  mt_node_save(n, 0, index);
  return finish_node(n, out);
}

/* index_add (op 0, alpha), index_copy_ (op 1), index_fill_ (op 2, src NULL) */
mt_status mt_record_index_write(int which, mt_tensor *a, int dim, mt_tensor *index, mt_tensor *src, double alpha,
                                mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  static const int ops[3] = {GOP_INDEX_ADD, GOP_INDEX_COPY, GOP_INDEX_FILL};
  mt_tensor *in[2] = {a, src};
  mt_node *n;
  MT_TRY(make_node(ops[which], in, src ? 2 : 1, &n));
  n->ip[0] = dim;
  n->dp[0] = alpha;
  mt_node_save(n, 0, index);
  return finish_node(n, out);
}

mt_status mt_record_masked_fill_tensor(mt_tensor *a, mt_tensor *mask, mt_tensor *value, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[2] = {a, value};
  mt_node *n;
  MT_TRY(make_node(GOP_MASKED_FILL_T, in, 2, &n));
  mt_node_save(n, 0, mask);
  return finish_node(n, out);
}

mt_status mt_record_masked_select(mt_tensor *a, mt_tensor *mask, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  int64_t bs[MT_MAX_DIMS];
  int bn;
  MT_TRY(mt_broadcast_shapes(a->_sizes, a->_ndim, mask->_sizes, mask->_ndim, bs, &bn));
  mt_node *n;
  MT_TRY(make_node(GOP_MASKED_SELECT, &a, 1, &n));
  n->shape[1].ndim = bn;
  n->shape[1].dtype = a->_dtype;
  memcpy(n->shape[1].sizes, bs, sizeof(int64_t) * (size_t)bn);
  mt_node_save(n, 0, mask);
  return finish_node(n, out);
}

mt_status mt_record_masked_scatter(mt_tensor *a, mt_tensor *mask, mt_tensor *src, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[2] = {a, src};
  mt_node *n;
  MT_TRY(make_node(GOP_MASKED_SCATTER, in, 2, &n));
  mt_node_save(n, 0, mask);
  return finish_node(n, out);
}

mt_status mt_record_gather_flat(int kind, mt_tensor *a, mt_tensor *pos, int64_t param, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  static const int ops[] = {[MT_GF_INDEX] = GOP_INDEX, [MT_GF_AS_STRIDED] = GOP_AS_STRIDED,
                            [MT_GF_UNFOLD] = GOP_UNFOLD, [MT_GF_DIAGONAL] = GOP_DIAGONAL, [MT_GF_DIAG] = GOP_DIAG};
  mt_node *n;
  MT_TRY(make_node(ops[kind], &a, 1, &n));
  n->ip[0] = (int32_t)param;
  n->ip[1] = a->_ndim;
  if (pos) mt_node_save(n, 0, pos);
  return finish_node(n, out);
}

mt_status mt_record_index_put(mt_tensor *a, mt_tensor *values, mt_tensor *pos, int accumulate, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_tensor *in[2] = {a, values};
  mt_node *n;
  MT_TRY(make_node(GOP_INDEX_PUT, in, 2, &n));
  n->ip[0] = accumulate;
  mt_node_save(n, 0, pos);
  return finish_node(n, out);
}

mt_status mt_record_triangle(mt_tensor *a, int64_t diagonal, int upper, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(make_node(GOP_TRIANGLE, &a, 1, &n));
  n->ip[0] = (int32_t)diagonal;
  n->ip[1] = upper;
  return finish_node(n, out);
}

mt_status mt_record_sort(mt_tensor *a, int dim, mt_tensor *index, int topk, mt_tensor *values) {
  if (!mt_is_float(values->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(make_node(topk ? GOP_TOPK : GOP_SORT, &a, 1, &n));
  n->ip[0] = dim;
  mt_node_save(n, 0, index);
  return finish_node(n, values);
}

mt_status mt_record_flip(mt_tensor *a, const int64_t *dims, int count, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(make_node(GOP_FLIP, &a, 1, &n));
  n->ip[0] = count;
  for (int i = 0; i < count; i++) n->shape[1].sizes[i] = dims[i];
  return finish_node(n, out);
}

mt_status mt_record_roll(mt_tensor *a, const int64_t *shifts, const int64_t *dims, int count, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_ROLL, &a, 1, 1, &n));
  n->ip[0] = count;
  n->ip[1] = dims != NULL;
  for (int i = 0; i < count; i++) {
    n->shape[1].sizes[i] = shifts[i];
    n->shape[0].sizes[i] = dims ? dims[i] : 0;
  }
  return finish_node(n, out);
}

mt_status mt_record_repeat(mt_tensor *a, const int64_t *repeats, int count, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(make_node(GOP_REPEAT, &a, 1, &n));
  n->shape[1].ndim = count;
  for (int i = 0; i < count; i++) n->shape[1].sizes[i] = repeats[i];
  return finish_node(n, out);
}

mt_status mt_record_stack(mt_tensor **ts, int count, int dim, mt_tensor *out) {
  if (!mt_is_float(out->_dtype)) return MT_OK;
  mt_node *n;
  MT_TRY(mt_node_make(GOP_STACK, ts, count, 1, &n));
  n->ip[0] = dim;
  return finish_node(n, out);
}

/* copy_ (src given) or fill_ (src NULL) of the whole of dst, after the write */
mt_status mt_record_copy(mt_tensor *dst, mt_tensor *src) {
  if (!mt_is_float(dst->_dtype)) return MT_OK;
  mt_tensor *in[2] = {dst, src};
  mt_node *n;
  MT_TRY(make_node(src ? GOP_COPY : GOP_FILL, in, src ? 2 : 1, &n));
  return finish_node(n, dst);
}

/* ---------------------------------------------------------------- helpers for the entry points */
/* An int64 tensor of t's shape holding 0, 1, 2, ...: run an op that moves elements on it to learn
 * where each output element comes from. */
mt_status mt_grad_positions(const mt_tensor *t, mt_tensor **out) {
  mt_tensor *r, *v;
  MT_TRY(MT_NOGRAD(mt_arange(0, (double)t->_numel, 1, MT_INT64, &r)));
  mt_status s = MT_NOGRAD(mt_reshape(r, t->_sizes, t->_ndim, &v));
  mt_tensor_release(r);
  if (s) return s;
  *out = v;
  return MT_OK;
}

/* ---------------------------------------------------------------- the list of names */
static const char *all_names[512];
static int n_all_names = -1;

static void add_name(const char *s) {
  if (!s || !*s || !strcmp(s, "?")) return;
  for (int i = 0; i < n_all_names; i++)
    if (!strcmp(all_names[i], s)) return;
  if (n_all_names < (int)(sizeof all_names / sizeof all_names[0])) all_names[n_all_names++] = s;
}

static void build_names(void) {
  mt_node *n = calloc(1, sizeof(mt_node));
  n_all_names = 0;
  if (!n) return;
  for (int op = 0; op < GOP_COUNT; op++) {
    int r0 = 1, r1 = 1, r2 = 1, r3 = 1;
    switch (op) {
      case GOP_UNARY: r0 = MT_UNARY_OP_COUNT; break;
      case GOP_BINARY: r0 = MT_BINARY_OP_COUNT; break;
      case GOP_BINARY_SCALAR: r0 = MT_BINARY_OP_COUNT; r1 = 2; break;
      case GOP_REDUCE: r0 = MT_REDUCE_OP_COUNT; r3 = 2; break;
      case GOP_REDUCE_INDEX: r2 = 2; break;
      case GOP_RESHAPE: r0 = (int)(sizeof reshape_names / sizeof *reshape_names); break;
      case GOP_MATMUL: r0 = (int)(sizeof matmul_names / sizeof *matmul_names); break;
      case GOP_TRANSPOSE: break; /* TBackward0 (ip[2]) has no caller yet: t() records TransposeBackward0 */
      case GOP_SOFTMAX: r1 = 2; break;
      case GOP_CLONE: r0 = 2; break;
      case GOP_VAR_MEAN: r3 = 2; break;
      case GOP_SCATTER: r1 = 3; break;
      case GOP_TRIANGLE: r1 = 2; break;
    }
    n->op = op;
    for (int a = 0; a < r0; a++)
      for (int b = 0; b < r1; b++)
        for (int c = 0; c < r2; c++)
          for (int d = 0; d < r3; d++)
            for (int e = 0; e < 2; e++) {
              n->ip[0] = a; n->ip[1] = b; n->ip[2] = c; n->ip[3] = d;
              n->dp[0] = e ? -1 : 1;
              add_name(mt_grad_op_name(n));
            }
  }
  free(n);
}

int mt_grad_op_count(void) {
  if (n_all_names < 0) build_names();
  return n_all_names;
}

const char *mt_grad_op_list_name(int i) {
  if (n_all_names < 0) build_names();
  return i >= 0 && i < n_all_names ? all_names[i] : NULL;
}

/* In-place writes recorded over a whole tensor: a view (or part of a storage) cannot be written
 * into with autograd, since the tensor it views would not learn of it (PyTorch's CopySlices). */
mt_status mt_grad_check_whole_write(mt_tensor *t, const char *op) {
  const mt_meta *m = t->_autograd;
  bool view = false;
  if (m && m->grad_fn) {
    switch (m->grad_fn->op) {
      case GOP_RESHAPE: view = m->grad_fn->ip[0] != MT_RS_RESHAPE_COPY && m->grad_fn->ip[0] != MT_RS_FLATTEN; break;
      case GOP_TRANSPOSE: case GOP_PERMUTE: case GOP_EXPAND: case GOP_SELECT: case GOP_SLICE:
      case GOP_AS_STRIDED: case GOP_UNFOLD: case GOP_DIAGONAL:
        view = true;
        break;
    }
  }
  bool whole = t->_offset == 0 && (t->_flags & MT_TENSOR_CONTIGUOUS) &&
               (size_t)t->_numel * mt_itemsize(t->_dtype) == t->_storage->_nbytes;
  if (view || !whole)
    return mt_error(MT_ENOTIMPL,
                    "%s: an in-place write into a view (or part) of a tensor is not supported when autograd records it "
                    "(write into the whole tensor, or build the result with cat, where, index_put_ or masked_scatter_)",
                    op);
  return MT_OK;
}
