/* onednn.c -- float32 convolutions by oneDNN's convolution primitives (issue 27, part 3 "Speed").
 *
 * oneDNN is not linked: blas.c opens the library (dlopen, as for dnnl_sgemm; MT_ONEDNN_LIB, then where
 * CMake found it, libdnnl.so.3, .so.2), and this file takes the functions it calls with dlsym. The types
 * come from Debian's libdnnl-dev headers at build time (oneDNN 2.x's C API: operation descriptors, which
 * 3.x removed), so the path is built only where those headers are, and used only where the library that
 * loads is of major version 2; everywhere else every convolution runs on moontorch's own kernels
 * (conv.c: im2col and matrix products), which are also what float64, small channel counts and 1x1
 * convolutions use. MT_CONV chooses: `auto` (the default), `direct` (oneDNN, never Winograd: the
 * algorithm PyTorch's CPU convolutions use), `own` (moontorch's kernels only).
 *
 * What goes to oneDNN, from measurements on the project's 2-core AMD EPYC (Zen 4, AVX-512), 2 threads,
 * PyTorch 1.13 beside it (bench/run.lua, section conv): convolutions with at least 16 channels per group
 * on both sides, 1 to 3 spatial dims, that are not 1x1 of stride 1 without padding (those are one matrix
 * product with no columns, which our kernels already run at the GEMM's speed). For 3x3 kernels of stride 1
 * and no dilation or groups, in 2-d, oneDNN's Winograd F(4x4, 3x3) (jit_wino_4x3, on AVX-512 CPUs) takes
 * 0.4-0.6 of its direct convolution's time once there are at least 32 output tiles of 4x4 (N * ceil(OH/4)
 * * ceil(OW/4)); below that (256 channels at 14x14, batch 1: 16 tiles) its weight transform dominates and
 * the direct convolution is faster, so the choice is by tile count, unless the weights were seen unchanged
 * before on a small batch: then they are kept transformed ("Winograd weights, kept" below). Winograd's
 * rounding differs from a direct sum's: its results are within about 2e-6 relative to the output's magnitude
 * of the float64 result on N(0, 1) inputs and Kaiming weights, against about 3e-7 for the direct
 * convolution (spec/conv_paths_spec.lua measures both); MT_CONV=direct keeps the direct one.
 *
 * The tensors stay in PyTorch's layout (NCHW, contiguous); oneDNN's primitives want their own blocked
 * layouts, so each call reorders the inputs into scratch (moontorch's own allocations, whose size-keyed
 * cache makes the repeats cheap) and the result back, with oneDNN's reorder primitives. The primitive
 * descriptors, primitives and reorders of a shape are made once and kept (a small cache). Each call into
 * oneDNN is wrapped by mt_onednn_begin/end (blas.c): our pool's workers rest, its OpenMP threads get
 * moontorch's thread count, and asynchronous signals wait until it returns. */
#include "cpu.h"
#include "../blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define conv_mode mt_conv_mode

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#if DNNL_VERSION_MAJOR == 2
#define MT_HAVE_ONEDNN_CONV 1
#endif
#endif
#endif

#if MT_HAVE_ONEDNN_CONV
/* ---------------------------------------------------------------- the functions, by dlsym */
#define DN_FUNCS(X)                                                                                                 \
  X(dnnl_engine_create) X(dnnl_stream_create) X(dnnl_stream_wait) X(dnnl_memory_desc_init_by_tag)                 \
  X(dnnl_memory_desc_get_size) X(dnnl_memory_desc_equal) X(dnnl_memory_create) X(dnnl_memory_destroy)             \
  X(dnnl_memory_set_data_handle) X(dnnl_dilated_convolution_forward_desc_init)                                      \
  X(dnnl_dilated_convolution_backward_data_desc_init) X(dnnl_dilated_convolution_backward_weights_desc_init)        \
  X(dnnl_primitive_desc_create) X(dnnl_primitive_desc_query_md) X(dnnl_primitive_desc_query)                      \
  X(dnnl_primitive_desc_destroy) X(dnnl_primitive_create) X(dnnl_primitive_execute) X(dnnl_primitive_destroy)      \
  X(dnnl_reorder_primitive_desc_create) X(dnnl_primitive_desc_iterator_create) X(dnnl_primitive_desc_iterator_next)  \
  X(dnnl_primitive_desc_iterator_fetch) X(dnnl_primitive_desc_iterator_destroy) X(dnnl_primitive_attr_create)          \
  X(dnnl_primitive_attr_set_scratchpad_mode)
static struct {
#define DN_FIELD_(f) __typeof__(&f) f;
  DN_FUNCS(DN_FIELD_)
#undef DN_FIELD_
  dnnl_engine_t engine;
  /* every primitive's scratchpad is ours (scratchpad_mode user, a buffer passed to each execution): with the
   * library's (the default), two threads running Winograd convolutions at once crashed inside Debian's oneDNN
   * 2.6 (core/tests/test_conv_threads.c); with ours they do not */
  dnnl_primitive_attr_t attr;
  int ok;
} dn;
static pthread_once_t dn_once = PTHREAD_ONCE_INIT;
static void dn_load(void) {
  int major = 0;
  void *h = mt_onednn_library(&major);
  if (!h || major != 2) return;
#define DN_SYM_(f)                                 \
  *(void **)&dn.f = dlsym(h, #f);                  \
  if (!dn.f) return;
  DN_FUNCS(DN_SYM_)
#undef DN_SYM_
  if (dn.dnnl_engine_create(&dn.engine, dnnl_cpu, 0) != dnnl_success) return;
  if (dn.dnnl_primitive_attr_create(&dn.attr) != dnnl_success ||
      dn.dnnl_primitive_attr_set_scratchpad_mode(dn.attr, dnnl_scratchpad_mode_user) != dnnl_success)
    return;
  dn.ok = 1;
}
static bool dn_ready(void) {
  pthread_once(&dn_once, dn_load);
  return dn.ok;
}

/* one CPU stream per calling thread (made on its first convolution), each also kept on a process-wide
 * list: a thread's streams live as long as the process, reachable from it (not only from a
 * thread-local, which a leak checker would not count) */
typedef struct stream_node {
  dnnl_stream_t stream;
  struct stream_node *next;
} stream_node;
static stream_node *streams;
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local dnnl_stream_t stream;
static dnnl_stream_t my_stream(void) {
  if (stream) return stream;
  stream_node *n = malloc(sizeof *n);
  if (!n) return NULL;
  if (dn.dnnl_stream_create(&n->stream, dn.engine, dnnl_stream_default_flags) != dnnl_success) {
    free(n);
    return NULL;
  }
  pthread_mutex_lock(&streams_lock);
  n->next = streams;
  streams = n;
  pthread_mutex_unlock(&streams_lock);
  stream = n->stream;
  return stream;
}

/* ---------------------------------------------------------------- what oneDNN takes */
/* FWD_KEPT: a forward convolution by Winograd F(4x4, 3x3) that reads weights transformed beforehand (see
 * "Winograd weights, kept" below) */
enum { FWD, BWD_DATA, BWD_WEIGHTS, FWD_KEPT };

static bool is_pointwise(const mt_conv_args *a) {
  for (int i = 0; i < a->nsp; i++)
    if (a->k[i] != 1 || a->s[i] != 1 || a->p[i] != 0 || a->op[i] != 0) return false;
  return true;
}

/* the geometry of the forward convolution that this one is (transposed: the one whose input's gradient it
 * is): src (N, sc, *sin) -> dst (N, dc, *dout), weights (dc, sc) per group, and its right padding
 * (false when negative: a shape oneDNN's kernels do not all take) */
typedef struct {
  int nsp;
  int64_t N, sc, dc, g;
  int64_t sin[3], dout[3], k[3], s[3], d[3], pl[3], pr[3];
} fwd_geo;
static bool forward_geo(const mt_conv_args *a, fwd_geo *f) {
  f->nsp = a->nsp;
  f->N = a->N;
  f->g = a->groups;
  f->sc = a->transposed ? a->Cout : a->C;
  f->dc = a->transposed ? a->C : a->Cout;
  for (int i = 0; i < a->nsp; i++) {
    f->sin[i] = a->transposed ? a->out[i] : a->in[i];
    f->dout[i] = a->transposed ? a->in[i] : a->out[i];
    f->k[i] = a->k[i];
    f->s[i] = a->s[i];
    f->d[i] = a->d[i];
    f->pl[i] = a->p[i];
    f->pr[i] = (f->dout[i] - 1) * f->s[i] + (f->k[i] - 1) * f->d[i] + 1 - f->sin[i] - f->pl[i];
    if (f->pr[i] < 0) return false;
  }
  return true;
}

/* a 2-d 3x3 convolution of stride 1, no dilation or groups: what oneDNN's Winograd F(4x4, 3x3) takes */
static bool wino_shape(const fwd_geo *f) {
  return f->nsp == 2 && f->g == 1 && f->k[0] == 3 && f->k[1] == 3 && f->s[0] == 1 && f->s[1] == 1 && f->d[0] == 1 &&
         f->d[1] == 1;
}

/* 0: not oneDNN's; else the algorithm */
static dnnl_alg_kind_t choose(const mt_conv_args *a, int dt, fwd_geo *f) {
  int mode = conv_mode();
  if (mode == 2 || dt != MT_FLOAT32 || a->N == 0) return 0;
  int64_t g = a->groups;
  if (a->C / g < 16 || a->Cout / g < 16 || is_pointwise(a)) return 0;
  /* mt_onednn_library: NULL in a forked child, whose OpenMP threads are gone (its own kernels run there) */
  if (!forward_geo(a, f) || !dn_ready() || !mt_onednn_library(NULL)) return 0;
  bool wino = mode == 0 && wino_shape(f);
  if (wino) {
    int64_t tiles = f->N * ((f->dout[0] + 3) / 4) * ((f->dout[1] + 3) / 4);
    wino = tiles >= 32;
  }
  return wino ? dnnl_convolution_winograd : dnnl_convolution_direct;
}

/* ---------------------------------------------------------------- primitives, made once per shape */
typedef struct {
  int kind;
  dnnl_alg_kind_t alg;
  int bias;
  fwd_geo f;
} conv_key;

/* a primitive with its three tensor arguments: two read (a, b), one written (o), each in the user's
 * layout (u*) and the primitive's (p*), with the reorders between them (NULL: the same layout) */
typedef struct conv_prim {
  conv_key key;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  dnnl_memory_desc_t ua, ub, uo, pa, pb, po, bias_md;
  int arg_a, arg_b, arg_o;
  dnnl_primitive_t ra, rb, ro;
  dnnl_memory_desc_t sp[4]; /* the scratchpads of prim, ra, rb, ro (zero size: none) */
  size_t sp_bytes;          /* the largest: one buffer serves the four, which run one after another */
  int wino; /* the algorithm that oneDNN picked is Winograd */
  int none; /* FWD_KEPT only: oneDNN has no such primitive for this shape (kept, so as not to ask again) */
  int wait; /* FWD_KEPT only, under wcache_lock: sightings of the same weights before they are transformed, log2 */
  struct conv_prim *retired_next;
} conv_prim;

#define CACHE_SIZE 48
static conv_prim *cache[CACHE_SIZE];
static int cache_next;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void plain_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims) {
  static const dnnl_format_tag_t tags[] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde,
                                           dnnl_abcdef};
  dnnl_dims_t d = {0};
  for (int i = 0; i < ndims; i++) d[i] = dims[i];
  dn.dnnl_memory_desc_init_by_tag(md, ndims, d, dnnl_f32, tags[ndims]);
}
static void any_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims) {
  dnnl_dims_t d = {0};
  for (int i = 0; i < ndims; i++) d[i] = dims[i];
  dn.dnnl_memory_desc_init_by_tag(md, ndims, d, dnnl_f32, dnnl_format_tag_any);
}

/* the scratchpad that pd wants */
static void scratchpad_of(const_dnnl_primitive_desc_t pd, dnnl_memory_desc_t *sp) {
  const dnnl_memory_desc_t *md = dn.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (md) *sp = *md;
  else memset(sp, 0, sizeof *sp);
}

static dnnl_primitive_t reorder_of(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, dnnl_memory_desc_t *sp,
                                   bool *ok) {
  if (dn.dnnl_memory_desc_equal(from, to)) return NULL;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t p = NULL;
  if (dn.dnnl_reorder_primitive_desc_create(&pd, from, dn.engine, to, dn.engine, dn.attr) != dnnl_success) {
    *ok = false;
    return NULL;
  }
  scratchpad_of(pd, sp);
  if (dn.dnnl_primitive_create(&p, pd) != dnnl_success) *ok = false;
  dn.dnnl_primitive_desc_destroy(pd);
  return p;
}

static void prim_free(conv_prim *c) {
  if (!c) return;
  if (c->ra) dn.dnnl_primitive_destroy(c->ra);
  if (c->rb) dn.dnnl_primitive_destroy(c->rb);
  if (c->ro) dn.dnnl_primitive_destroy(c->ro);
  if (c->prim) dn.dnnl_primitive_destroy(c->prim);
  if (c->pd) dn.dnnl_primitive_desc_destroy(c->pd);
  free(c);
}

/* the mark that k has no primitive (NULL: out of memory) */
static conv_prim *prim_none(const conv_key *k) {
  conv_prim *c = calloc(1, sizeof *c);
  if (c) c->key = *k, c->none = 1;
  return c;
}

/* oneDNN's Winograd F(4x4, 3x3) for inference (jit_wino_4x3, AVX-512) of a forward descriptor, whose weights are
 * in its own Winograd format (format_kind wino: the reorder into it is the weight transform), or NULL. It is
 * not oneDNN's first choice for inference (its F(2x2, 3x3), jit_fp32_wino_2x3, is): the implementations are
 * walked. */
static dnnl_primitive_desc_t wino_4x3_kept(const dnnl_convolution_desc_t *d) {
  dnnl_primitive_desc_iterator_t it;
  if (dn.dnnl_primitive_desc_iterator_create(&it, d, dn.attr, dn.engine, NULL) != dnnl_success) return NULL;
  dnnl_primitive_desc_t pd = NULL;
  do {
    dnnl_primitive_desc_t q = dn.dnnl_primitive_desc_iterator_fetch(it);
    if (!q) break;
    const char *impl = NULL;
    const dnnl_memory_desc_t *wmd = dn.dnnl_primitive_desc_query_md(q, dnnl_query_weights_md, 0);
    if (dn.dnnl_primitive_desc_query(q, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
        strstr(impl, "wino_4x3") && wmd && wmd->format_kind == dnnl_format_kind_wino)
      pd = q;
    else
      dn.dnnl_primitive_desc_destroy(q);
  } while (!pd && dn.dnnl_primitive_desc_iterator_next(it) == dnnl_success);
  dn.dnnl_primitive_desc_iterator_destroy(it);
  return pd;
}

/* NULL: oneDNN has no implementation of it (or ran out of memory making one); FWD_KEPT: a mark (none) */
static conv_prim *prim_make(const conv_key *k) {
  const fwd_geo *f = &k->f;
  int nd = f->nsp + 2;
  int64_t sd[5] = {f->N, f->sc}, dd[5] = {f->N, f->dc}, wd[6], bd[1] = {f->dc};
  int wnd = f->g > 1 ? nd + 1 : nd;
  if (f->g > 1) {
    wd[0] = f->g, wd[1] = f->dc / f->g, wd[2] = f->sc / f->g;
  } else {
    wd[0] = f->dc, wd[1] = f->sc;
  }
  dnnl_dims_t strides = {0}, dilates = {0}, pl = {0}, pr = {0};
  for (int i = 0; i < f->nsp; i++) {
    sd[2 + i] = f->sin[i];
    dd[2 + i] = f->dout[i];
    wd[wnd - f->nsp + i] = f->k[i];
    strides[i] = f->s[i];
    dilates[i] = f->d[i] - 1;
    pl[i] = f->pl[i];
    pr[i] = f->pr[i];
  }
  dnnl_memory_desc_t s_any, w_any, d_any, s_u, w_u, d_u, b_md;
  any_md(&s_any, nd, sd);
  any_md(&w_any, wnd, wd);
  any_md(&d_any, nd, dd);
  plain_md(&s_u, nd, sd);
  plain_md(&w_u, wnd, wd);
  plain_md(&d_u, nd, dd);
  plain_md(&b_md, 1, bd);
  conv_prim *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->key = *k;
  c->bias_md = b_md;
  dnnl_convolution_desc_t fdesc, bdesc;
  dnnl_primitive_desc_t fpd = NULL;
  bool kept = k->kind == FWD_KEPT;
  bool ok = dn.dnnl_dilated_convolution_forward_desc_init(&fdesc, kept ? dnnl_forward_inference : dnnl_forward_training,
                                                          k->alg, &s_any, &w_any, k->bias ? &b_md : NULL, &d_any,
                                                          strides, dilates, pl, pr) == dnnl_success;
  if (ok && kept)
    ok = (fpd = wino_4x3_kept(&fdesc)) != NULL;
  else if (ok)
    ok = dn.dnnl_primitive_desc_create(&fpd, &fdesc, dn.attr, dn.engine, NULL) == dnnl_success;
  if (ok && (k->kind == FWD || kept)) {
    c->pd = fpd;
    fpd = NULL;
    c->ua = s_u, c->ub = w_u, c->uo = d_u;
    c->arg_a = DNNL_ARG_SRC, c->arg_b = DNNL_ARG_WEIGHTS, c->arg_o = DNNL_ARG_DST;
  } else if (ok && k->kind == BWD_DATA) {
    ok = dn.dnnl_dilated_convolution_backward_data_desc_init(&bdesc, k->alg, &s_any, &w_any, &d_any, strides, dilates,
                                                             pl, pr) == dnnl_success &&
         dn.dnnl_primitive_desc_create(&c->pd, &bdesc, dn.attr, dn.engine, fpd) == dnnl_success;
    c->ua = d_u, c->ub = w_u, c->uo = s_u;
    c->arg_a = DNNL_ARG_DIFF_DST, c->arg_b = DNNL_ARG_WEIGHTS, c->arg_o = DNNL_ARG_DIFF_SRC;
  } else if (ok) {
    ok = dn.dnnl_dilated_convolution_backward_weights_desc_init(&bdesc, k->alg, &s_any, &w_any, NULL, &d_any, strides,
                                                                dilates, pl, pr) == dnnl_success &&
         dn.dnnl_primitive_desc_create(&c->pd, &bdesc, dn.attr, dn.engine, fpd) == dnnl_success;
    c->ua = s_u, c->ub = d_u, c->uo = w_u;
    c->arg_a = DNNL_ARG_SRC, c->arg_b = DNNL_ARG_DIFF_DST, c->arg_o = DNNL_ARG_DIFF_WEIGHTS;
  }
  if (fpd) dn.dnnl_primitive_desc_destroy(fpd);
  if (!ok || !c->pd) {
    prim_free(c);
    return kept ? prim_none(k) : NULL;
  }
  static const dnnl_query_t q[4][3] = {
      {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
      {dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md},
      {dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
      {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
  };
  c->pa = *dn.dnnl_primitive_desc_query_md(c->pd, q[k->kind][0], 0);
  c->pb = *dn.dnnl_primitive_desc_query_md(c->pd, q[k->kind][1], 0);
  c->po = *dn.dnnl_primitive_desc_query_md(c->pd, q[k->kind][2], 0);
  const char *impl = NULL;
  if (dn.dnnl_primitive_desc_query(c->pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
    c->wino = strstr(impl, "wino") != NULL;
  ok = dn.dnnl_primitive_create(&c->prim, c->pd) == dnnl_success;
  scratchpad_of(c->pd, &c->sp[0]);
  c->ra = reorder_of(&c->ua, &c->pa, &c->sp[1], &ok);
  c->rb = reorder_of(&c->ub, &c->pb, &c->sp[2], &ok);
  c->ro = reorder_of(&c->po, &c->uo, &c->sp[3], &ok);
  for (int i = 0; i < 4; i++) {
    size_t n = dn.dnnl_memory_desc_get_size(&c->sp[i]);
    if (n > c->sp_bytes) c->sp_bytes = n;
  }
  if (!ok) {
    prim_free(c);
    return kept ? prim_none(k) : NULL;
  }
  return c;
}

/* the cached primitive of k, made on first use (NULL: none); the cache keeps the last CACHE_SIZE shapes,
 * and an entry is never freed while in use: evicted ones are kept on a list until the process ends */
static conv_prim *retired;
static conv_prim *prim_of(const conv_key *k) {
  pthread_mutex_lock(&cache_lock);
  for (int i = 0; i < CACHE_SIZE; i++)
    if (cache[i] && memcmp(&cache[i]->key, k, sizeof *k) == 0) {
      conv_prim *c = cache[i];
      pthread_mutex_unlock(&cache_lock);
      return c;
    }
  conv_prim *c = prim_make(k);
  if (c) {
    conv_prim *old = cache[cache_next];
    if (old) { /* kept, not freed: another thread may be running it */
      old->retired_next = retired;
      retired = old;
    }
    cache[cache_next] = c;
    cache_next = (cache_next + 1) % CACHE_SIZE;
  }
  pthread_mutex_unlock(&cache_lock);
  return c;
}

/* ---------------------------------------------------------------- running one */
static dnnl_memory_t memory(const dnnl_memory_desc_t *md, void *data, bool *ok) {
  dnnl_memory_t m = NULL;
  if (*ok && dn.dnnl_memory_create(&m, md, dn.engine, data) != dnnl_success) *ok = false;
  return m;
}

/* scratch for a reordered argument: a CPU tensor of bytes (the allocator's cache keeps the repeats cheap) */
static void *scratch(const dnnl_memory_desc_t *md, mt_tensor **keep, bool *ok) {
  int64_t n = (int64_t)dn.dnnl_memory_desc_get_size(md);
  if (!*ok || mt_new_cpu(&n, 1, MT_UINT8, "convolution", keep) != MT_OK) {
    *ok = false;
    return NULL;
  }
  return (*keep)->_data;
}

/* sp: its scratchpad (NULL: none) */
static void reorder(dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to, dnnl_memory_t sp, dnnl_stream_t st,
                    bool *ok) {
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, sp}};
  if (*ok && dn.dnnl_primitive_execute(r, st, sp ? 3 : 2, args) != dnnl_success) *ok = false;
}

/* ---------------------------------------------------------------- Winograd weights, kept
 * A forward 3x3 convolution on a small batch (fewer input elements than weights: ResNet's 256-channel 14x14
 * layers at batch 1 to 8, 128 channels at 28x28 batch 1) spends most of a Winograd call transforming the
 * weights, so `auto` ran those on the direct algorithm (at about PyTorch's speed, whose kernel it is).
 * oneDNN's Winograd F(4x4, 3x3) for inference takes the weights already transformed (its own `wino` format;
 * the reorder into it is the transform), and then runs in about 0.6 of the direct convolution's time. The
 * transform is slow (oneDNN's reorder: 10-40 ms for 256 channels, 4x the plain weights' bytes), so it is done
 * only for weights that come back unchanged, and kept:
 * - Which weights: identified by their content, an XXH3-64 hash of the bytes (mt_xxh3_64, 30-36 GB/s on one
 *   Zen 4 core: about 0.07 ms for 256x256x3x3), with the primitive (shape) they are for. Not a version
 *   counter: the kernel sees data pointers, not storages, and writes through t:data_ptr() from the FFI (as
 *   nn.init's do), or a freed storage whose address comes back with other weights, bump no counter; a hash
 *   sees every write path, needs no copy (a memcmp against a copy, tried first, read twice the bytes and
 *   cost more than the direct convolution's own weight reorder), and two different weights of one shape
 *   agreeing on 64 bits is a 2^-64 chance.
 * - When: the same content seen twice (2 << wait calls: each kept transform that served fewer than
 *   WCACHE_PAYBACK calls before it was dropped doubles that shape's wait, each that paid halves it), so a
 *   training loop, whose weights change every step, only pays the hash.
 * - How many: WCACHE_N entries (a content seen once is a record without buffer), WCACHE_MB megabytes of
 *   transformed weights in all (MT_CONV_WCACHE_MB=n sets it); an entry used in the last WCACHE_HOT lookups
 *   is never evicted for another (no thrashing when a model has more such layers than fit: the rest stay
 *   direct), one in use by a running convolution never; the least recently used cold one goes first.
 *   Thread-safe (one lock; the hash and the transform run outside it); the buffers are freed at exit.
 * MT_CONV_WCACHE_OFF=1 turns it off (bench/ compares), MT_CONV=direct too. */
#define WCACHE_N 64
#define WCACHE_MB 128 /* MT_CONV_WCACHE_MB=n sets it */
#define WCACHE_HOT 64
#define WCACHE_PAYBACK 32
typedef struct {
  conv_prim *c; /* the FWD_KEPT primitive (never freed); NULL: a free slot */
  uint64_t hash;
  int seen;      /* lookups that found these weights before they were transformed */
  uint64_t hits; /* calls that read the transformed weights */
  void *buf;     /* the transformed weights (bytes), NULL: a record only */
  size_t bytes;
  bool ready; /* buf is filled (else a convolution is filling it) */
  int users;  /* convolutions reading or filling buf */
  uint64_t used;
} wentry;
static wentry wcache[WCACHE_N];
static size_t wcache_total;
static uint64_t wcache_clock;
static pthread_mutex_t wcache_lock = PTHREAD_MUTEX_INITIALIZER;

/* whether the forward convolution of geometry f may use kept weights */
static bool wcache_wanted(const fwd_geo *f) {
  if (conv_mode() != 0 || !wino_shape(f)) return false;
  const char *off = getenv("MT_CONV_WCACHE_OFF");
  if (off && *off && strcmp(off, "0") != 0) return false;
  int64_t in = f->N * f->sc * f->sin[0] * f->sin[1], w = f->dc * f->sc * 9;
  return in <= w;
}

/* under the lock: drop entry i (its buffer freed; the shape's wait adjusted by what it served) */
static void wcache_drop(int i) {
  wentry *e = &wcache[i];
  if (e->buf) {
    if (e->ready && e->hits < WCACHE_PAYBACK && e->c->wait < 9) e->c->wait++;
    else if (e->ready && e->hits >= WCACHE_PAYBACK && e->c->wait > 0) e->c->wait--;
    free(e->buf);
    wcache_total -= e->bytes;
  }
  memset(e, 0, sizeof *e);
}

/* under the lock: a slot for a new record (free, a record's, else a cold entry's), or -1 */
static int wcache_slot(uint64_t now) {
  int best = -1;
  for (int i = 0; i < WCACHE_N; i++) {
    wentry *e = &wcache[i];
    if (!e->c) return i;
    if (e->users || (e->buf && now - e->used <= WCACHE_HOT)) continue;
    /* records before buffers, then the least recently used */
    if (best < 0 || (!e->buf && wcache[best].buf) || (!e->buf == !wcache[best].buf && e->used < wcache[best].used))
      best = i;
  }
  if (best >= 0) wcache_drop(best);
  return best;
}

static size_t wcache_cap(void) {
  static size_t cap = 0;
  if (!cap) {
    const char *e = getenv("MT_CONV_WCACHE_MB");
    long mb = e && *e ? strtol(e, NULL, 10) : WCACHE_MB;
    cap = (size_t)(mb > 0 ? mb : 0) << 20 | 1; /* | 1: read */
  }
  return cap & ~(size_t)1;
}

/* under the lock: room for bytes more (cold entries other than keep evicted), or false */
static bool wcache_room(size_t bytes, uint64_t now, int keep) {
  size_t cap = wcache_cap();
  if (bytes > cap) return false;
  while (wcache_total + bytes > cap) {
    int lru = -1;
    for (int i = 0; i < WCACHE_N; i++) {
      wentry *e = &wcache[i];
      if (i != keep && e->buf && !e->users && now - e->used > WCACHE_HOT && (lru < 0 || e->used < wcache[lru].used))
        lru = i;
    }
    if (lru < 0) return false;
    wcache_drop(lru);
  }
  return true;
}

/* the entry of c's transform of the weights hashed h that this convolution reads (users counted up; *fill:
 * this call transforms them into it first), or -1: run without */
static int wcache_get(conv_prim *c, uint64_t h, bool *fill) {
  *fill = false;
  pthread_mutex_lock(&wcache_lock);
  uint64_t now = ++wcache_clock;
  int i = 0;
  while (i < WCACHE_N && !(wcache[i].c == c && wcache[i].hash == h)) i++;
  if (i == WCACHE_N) { /* first sighting: a record */
    if ((i = wcache_slot(now)) >= 0) wcache[i] = (wentry){.c = c, .hash = h, .seen = 1, .used = now};
    pthread_mutex_unlock(&wcache_lock);
    return -1;
  }
  wentry *e = &wcache[i];
  e->used = now;
  if (e->ready) {
    e->users++, e->hits++;
  } else if (e->buf || ++e->seen < 2 << c->wait) { /* being filled by another call, or not yet */
    i = -1;
  } else {
    size_t bytes = dn.dnnl_memory_desc_get_size(&c->pb);
    if (wcache_room(bytes, now, i) && (e->buf = aligned_alloc(64, (bytes + 63) / 64 * 64))) {
      e->bytes = bytes, wcache_total += bytes;
      e->users = 1;
      *fill = true;
    } else {
      i = -1;
    }
  }
  pthread_mutex_unlock(&wcache_lock);
  return i;
}

/* done reading (or filling: ok says whether the transform ran) entry i */
static void wcache_put(int i, bool fill, bool ok) {
  pthread_mutex_lock(&wcache_lock);
  wentry *e = &wcache[i];
  e->users--;
  if (fill && ok) e->ready = true;
  else if (fill) wcache_drop(i);
  pthread_mutex_unlock(&wcache_lock);
}

/* at exit; trylock: a forked child that exits may hold a copy of the lock taken by a thread it does not have */
__attribute__((destructor)) static void wcache_free(void) {
  if (pthread_mutex_trylock(&wcache_lock) != 0) return;
  for (int i = 0; i < WCACHE_N; i++)
    if (!wcache[i].users) wcache_drop(i);
  pthread_mutex_unlock(&wcache_lock);
}

/* out (the written argument) from a and b (the read ones), bias (NULL or float[dc]); kept: b in the primitive's
 * layout already (fill: reorder b into it first) */
static mt_status run(const conv_prim *c, const void *a, const void *b, void *out, const void *bias, void *kept,
                     bool fill) {
  bool ok = true;
  mt_tensor *sa = NULL, *sb = NULL, *so = NULL, *ss = NULL;
  sigset_t old;
  int held;
  mt_onednn_begin(&old, &held);
  dnnl_stream_t st = my_stream();
  if (!st) ok = false;
  dnnl_memory_t ua = memory(&c->ua, (void *)a, &ok), ub = memory(&c->ub, (void *)b, &ok), uo = memory(&c->uo, out, &ok);
  dnnl_memory_t pa = c->ra ? memory(&c->pa, scratch(&c->pa, &sa, &ok), &ok) : ua;
  dnnl_memory_t pb = !c->rb ? ub
                     : kept ? memory(&c->pb, kept, &ok)
                            : memory(&c->pb, scratch(&c->pb, &sb, &ok), &ok);
  dnnl_memory_t po = c->ro ? memory(&c->po, scratch(&c->po, &so, &ok), &ok) : uo;
  dnnl_memory_t mb = bias ? memory(&c->bias_md, (void *)bias, &ok) : NULL;
  dnnl_memory_t sp[4] = {NULL};
  if (c->sp_bytes) {
    int64_t n = (int64_t)c->sp_bytes;
    if (ok && mt_new_cpu(&n, 1, MT_UINT8, "convolution", &ss) != MT_OK) ok = false;
    for (int i = 0; i < 4 && ok; i++)
      if (dn.dnnl_memory_desc_get_size(&c->sp[i])) sp[i] = memory(&c->sp[i], ss->_data, &ok);
  }
  if (c->ra) reorder(c->ra, ua, pa, sp[1], st, &ok);
  if (c->rb && (!kept || fill)) reorder(c->rb, ub, pb, sp[2], st, &ok);
  dnnl_exec_arg_t args[5] = {{c->arg_a, pa}, {c->arg_b, pb}, {c->arg_o, po}};
  int nargs = 3;
  if (mb) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mb};
  if (sp[0]) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sp[0]};
  if (ok && dn.dnnl_primitive_execute(c->prim, st, nargs, args) != dnnl_success) ok = false;
  if (c->ro) reorder(c->ro, po, uo, sp[3], st, &ok);
  if (ok && dn.dnnl_stream_wait(st) != dnnl_success) ok = false;
  mt_onednn_end(&old, held);
  dnnl_memory_t all[7] = {ua, ub, uo, c->ra ? pa : NULL, c->rb ? pb : NULL, c->ro ? po : NULL, mb};
  for (int i = 0; i < 7; i++)
    if (all[i]) dn.dnnl_memory_destroy(all[i]);
  for (int i = 0; i < 4; i++)
    if (sp[i]) dn.dnnl_memory_destroy(sp[i]);
  if (ss) mt_tensor_release(ss);
  if (sa) mt_tensor_release(sa);
  if (sb) mt_tensor_release(sb);
  if (so) mt_tensor_release(so);
  return ok ? MT_OK : mt_error(MT_ENOMEM, "convolution: oneDNN could not run it (out of memory?)");
}

mt_status mt_onednn_convolution(mt_tensor *out, const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias,
                                const mt_conv_args *a) {
  conv_key k;
  memset(&k, 0, sizeof k);
  k.alg = choose(a, x->_dtype, &k.f);
  if (!k.alg) return MT_ENOTIMPL;
  k.kind = a->transposed ? BWD_DATA : FWD;
  k.bias = bias && !a->transposed; /* the backward-data primitive has no bias: added after */
  conv_prim *c = NULL;
  int kept = -1;
  bool fill = false;
  if (!a->transposed && wcache_wanted(&k.f)) {
    conv_key kk = k;
    kk.kind = FWD_KEPT, kk.alg = dnnl_convolution_winograd;
    conv_prim *ck = prim_of(&kk);
    if (ck && !ck->none) {
      uint64_t h = mt_xxh3_64(w->_data, dn.dnnl_memory_desc_get_size(&ck->ub));
      if ((kept = wcache_get(ck, h, &fill)) >= 0) c = ck;
    }
  }
  if (!c) c = prim_of(&k);
  if (!c && k.alg == dnnl_convolution_winograd) {
    k.alg = dnnl_convolution_direct;
    c = prim_of(&k);
  }
  if (!c) return MT_ENOTIMPL;
  mt_status s = run(c, x->_data, w->_data, out->_data, k.bias ? bias->_data : NULL, kept >= 0 ? wcache[kept].buf : NULL,
                    fill);
  if (kept >= 0) wcache_put(kept, fill, s == MT_OK);
  MT_TRY(s);
  if (bias && a->transposed) {
    int64_t L = 1;
    for (int i = 0; i < a->nsp; i++) L *= a->out[i];
    float *r = (float *)out->_data;
    const float *b = (const float *)bias->_data;
    for (int64_t n = 0; n < a->N; n++)
      for (int64_t ch = 0; ch < a->Cout; ch++, r += L)
        for (int64_t l = 0; l < L; l++) r[l] += b[ch];
  }
  return MT_OK;
}

mt_status mt_onednn_conv_weight_grad(mt_tensor *gw, const mt_tensor *gout, const mt_tensor *x, const mt_conv_args *a) {
  conv_key k;
  memset(&k, 0, sizeof k);
  k.alg = choose(a, x->_dtype, &k.f);
  if (!k.alg) return MT_ENOTIMPL;
  k.kind = BWD_WEIGHTS;
  conv_prim *c = prim_of(&k);
  if (!c && k.alg == dnnl_convolution_winograd) {
    k.alg = dnnl_convolution_direct;
    c = prim_of(&k);
  }
  if (!c) return MT_ENOTIMPL;
  /* the forward view's src is the input (transposed: the output's gradient), its diff_dst the other */
  const mt_tensor *src = a->transposed ? gout : x, *ddst = a->transposed ? x : gout;
  return run(c, src->_data, ddst->_data, gw->_data, NULL, NULL, false);
}

#else /* no oneDNN 2.x headers at build time */
mt_status mt_onednn_convolution(mt_tensor *out, const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias,
                                const mt_conv_args *a) {
  (void)out, (void)x, (void)w, (void)bias, (void)a;
  return MT_ENOTIMPL;
}
mt_status mt_onednn_conv_weight_grad(mt_tensor *gw, const mt_tensor *gout, const mt_tensor *x, const mt_conv_args *a) {
  (void)gw, (void)gout, (void)x, (void)a;
  return MT_ENOTIMPL;
}
#endif
