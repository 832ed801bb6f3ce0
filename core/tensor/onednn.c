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
 * the direct convolution is faster, so the choice is by tile count. Winograd's rounding differs from a
 * direct sum's: its results are within about 2e-6 relative to the output's magnitude of the float64
 * result on N(0, 1) inputs and Kaiming weights, against about 3e-7 for the direct convolution
 * (spec/conv_onednn_spec.lua measures both); MT_CONV=direct keeps the direct one.
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
  X(dnnl_reorder_primitive_desc_create)
static struct {
#define DN_FIELD_(f) __typeof__(&f) f;
  DN_FUNCS(DN_FIELD_)
#undef DN_FIELD_
  dnnl_engine_t engine;
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
enum { FWD, BWD_DATA, BWD_WEIGHTS };

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

/* 0: not oneDNN's; else the algorithm */
static dnnl_alg_kind_t choose(const mt_conv_args *a, int dt, fwd_geo *f) {
  int mode = conv_mode();
  if (mode == 2 || dt != MT_FLOAT32 || a->N == 0) return 0;
  int64_t g = a->groups;
  if (a->C / g < 16 || a->Cout / g < 16 || is_pointwise(a)) return 0;
  /* mt_onednn_library: NULL in a forked child, whose OpenMP threads are gone (its own kernels run there) */
  if (!forward_geo(a, f) || !dn_ready() || !mt_onednn_library(NULL)) return 0;
  bool wino = mode == 0 && a->nsp == 2 && g == 1 && f->k[0] == 3 && f->k[1] == 3 && f->s[0] == 1 && f->s[1] == 1 &&
              f->d[0] == 1 && f->d[1] == 1;
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
  int wino; /* the algorithm that oneDNN picked is Winograd */
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

static dnnl_primitive_t reorder_of(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, bool *ok) {
  if (dn.dnnl_memory_desc_equal(from, to)) return NULL;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t p = NULL;
  if (dn.dnnl_reorder_primitive_desc_create(&pd, from, dn.engine, to, dn.engine, NULL) != dnnl_success) {
    *ok = false;
    return NULL;
  }
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

/* NULL: oneDNN has no implementation of it (or ran out of memory making one) */
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
  bool ok = dn.dnnl_dilated_convolution_forward_desc_init(&fdesc, dnnl_forward_training, k->alg, &s_any, &w_any,
                                                          k->bias ? &b_md : NULL, &d_any, strides, dilates, pl,
                                                          pr) == dnnl_success &&
            dn.dnnl_primitive_desc_create(&fpd, &fdesc, NULL, dn.engine, NULL) == dnnl_success;
  if (ok && k->kind == FWD) {
    c->pd = fpd;
    fpd = NULL;
    c->ua = s_u, c->ub = w_u, c->uo = d_u;
    c->arg_a = DNNL_ARG_SRC, c->arg_b = DNNL_ARG_WEIGHTS, c->arg_o = DNNL_ARG_DST;
  } else if (ok && k->kind == BWD_DATA) {
    ok = dn.dnnl_dilated_convolution_backward_data_desc_init(&bdesc, k->alg, &s_any, &w_any, &d_any, strides, dilates,
                                                             pl, pr) == dnnl_success &&
         dn.dnnl_primitive_desc_create(&c->pd, &bdesc, NULL, dn.engine, fpd) == dnnl_success;
    c->ua = d_u, c->ub = w_u, c->uo = s_u;
    c->arg_a = DNNL_ARG_DIFF_DST, c->arg_b = DNNL_ARG_WEIGHTS, c->arg_o = DNNL_ARG_DIFF_SRC;
  } else if (ok) {
    ok = dn.dnnl_dilated_convolution_backward_weights_desc_init(&bdesc, k->alg, &s_any, &w_any, NULL, &d_any, strides,
                                                                dilates, pl, pr) == dnnl_success &&
         dn.dnnl_primitive_desc_create(&c->pd, &bdesc, NULL, dn.engine, fpd) == dnnl_success;
    c->ua = s_u, c->ub = d_u, c->uo = w_u;
    c->arg_a = DNNL_ARG_SRC, c->arg_b = DNNL_ARG_DIFF_DST, c->arg_o = DNNL_ARG_DIFF_WEIGHTS;
  }
  if (fpd) dn.dnnl_primitive_desc_destroy(fpd);
  if (!ok || !c->pd) {
    prim_free(c);
    return NULL;
  }
  static const dnnl_query_t q[3][3] = {
      {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
      {dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md},
      {dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
  };
  c->pa = *dn.dnnl_primitive_desc_query_md(c->pd, q[k->kind][0], 0);
  c->pb = *dn.dnnl_primitive_desc_query_md(c->pd, q[k->kind][1], 0);
  c->po = *dn.dnnl_primitive_desc_query_md(c->pd, q[k->kind][2], 0);
  const char *impl = NULL;
  if (dn.dnnl_primitive_desc_query(c->pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
    c->wino = strstr(impl, "wino") != NULL;
  ok = dn.dnnl_primitive_create(&c->prim, c->pd) == dnnl_success;
  c->ra = reorder_of(&c->ua, &c->pa, &ok);
  c->rb = reorder_of(&c->ub, &c->pb, &ok);
  c->ro = reorder_of(&c->po, &c->uo, &ok);
  if (!ok) {
    prim_free(c);
    return NULL;
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

static void reorder(dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to, dnnl_stream_t st, bool *ok) {
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  if (*ok && dn.dnnl_primitive_execute(r, st, 2, args) != dnnl_success) *ok = false;
}

/* ---------------------------------------------------------------- reordered weights, kept
 * A forward convolution on a small batch (fewer input elements than weights: ResNet's 256-channel 14x14
 * layers at batch 1 to 8) spends a large share of its time reordering the weights into the primitive's
 * layout. The last few reorders are kept, each with a copy of the weights they came from, and reused only
 * when the weights given now are byte for byte that copy (memcmp, a few tens of microseconds for 2.4 MB):
 * whatever wrote to the weights (an optimizer, copy_, a write through the data pointer, a load) is seen,
 * since what is compared is the content, not a version counter. WCACHE_N entries at most, least recently
 * used replaced, WCACHE_BYTES in all; an entry in use by a running convolution is never freed.
 * MT_CONV_WCACHE_OFF=1 turns it off (for comparing in bench/). */
#define WCACHE_N 4
#define WCACHE_BYTES ((size_t)64 << 20)
typedef struct {
  const conv_prim *c; /* the primitive whose weight layout it holds (cache entries are never freed) */
  size_t plain_bytes, blocked_bytes;
  void *plain, *blocked;
  int users;
  uint64_t used;
} wentry;
static wentry wcache[WCACHE_N];
static uint64_t wcache_clock;
static pthread_mutex_t wcache_lock = PTHREAD_MUTEX_INITIALIZER;

static bool wcache_wanted(const conv_prim *c) {
  if (c->key.kind != FWD || !c->rb || getenv("MT_CONV_WCACHE_OFF")) return false;
  const fwd_geo *f = &c->key.f;
  int64_t in = f->N * f->sc, w = f->dc * (f->sc / f->g);
  for (int i = 0; i < f->nsp; i++) in *= f->sin[i], w *= f->k[i];
  return in <= w;
}

/* the entry holding c's reorder of the weights at b (users counted up), or -1 */
static int wcache_find(const conv_prim *c, const void *b, size_t bytes) {
  pthread_mutex_lock(&wcache_lock);
  int hit = -1;
  for (int i = 0; i < WCACHE_N && hit < 0; i++)
    if (wcache[i].c == c && wcache[i].plain_bytes == bytes && memcmp(wcache[i].plain, b, bytes) == 0) hit = i;
  if (hit >= 0) {
    wcache[hit].users++;
    wcache[hit].used = ++wcache_clock;
  }
  pthread_mutex_unlock(&wcache_lock);
  return hit;
}

/* a free slot for a new entry (its old buffers freed, users counted up), or -1 (all in use, or too big) */
static int wcache_claim(size_t plain, size_t blocked) {
  if (plain + blocked > WCACHE_BYTES / WCACHE_N) return -1;
  pthread_mutex_lock(&wcache_lock);
  int slot = -1;
  for (int i = 0; i < WCACHE_N; i++)
    if (!wcache[i].users && (slot < 0 || wcache[i].used < wcache[slot].used)) slot = i;
  if (slot >= 0) {
    wentry *e = &wcache[slot];
    free(e->plain);
    free(e->blocked);
    memset(e, 0, sizeof *e);
    e->users = 1;
    e->used = ++wcache_clock;
  }
  pthread_mutex_unlock(&wcache_lock);
  if (slot < 0) return -1;
  wentry *e = &wcache[slot];
  e->plain = malloc(plain);
  e->blocked = aligned_alloc(64, (blocked + 63) / 64 * 64);
  if (!e->plain || !e->blocked) {
    pthread_mutex_lock(&wcache_lock);
    free(e->plain);
    free(e->blocked);
    memset(e, 0, sizeof *e);
    pthread_mutex_unlock(&wcache_lock);
    return -1;
  }
  return slot;
}

/* done with an entry; filled: c and the copy are now valid (false: leave it empty) */
static void wcache_release(int i, const conv_prim *c, size_t bytes, size_t blocked, bool fill, bool ok) {
  pthread_mutex_lock(&wcache_lock);
  wentry *e = &wcache[i];
  if (fill) {
    if (ok) {
      e->plain_bytes = bytes, e->blocked_bytes = blocked, e->c = c;
    } else {
      free(e->plain);
      free(e->blocked);
      e->plain = e->blocked = NULL;
      e->c = NULL;
    }
  }
  e->users--;
  pthread_mutex_unlock(&wcache_lock);
}

/* out (the written argument) from a and b (the read ones), bias (NULL or float[dc]) */
static mt_status run(const conv_prim *c, const void *a, const void *b, void *out, const void *bias) {
  bool ok = true;
  mt_tensor *sa = NULL, *sb = NULL, *so = NULL;
  sigset_t old;
  int held;
  mt_onednn_begin(&old, &held);
  dnnl_stream_t st = my_stream();
  if (!st) ok = false;
  dnnl_memory_t ua = memory(&c->ua, (void *)a, &ok), ub = memory(&c->ub, (void *)b, &ok), uo = memory(&c->uo, out, &ok);
  dnnl_memory_t pa = c->ra ? memory(&c->pa, scratch(&c->pa, &sa, &ok), &ok) : ua;
  int we = -1;
  bool wfill = false;
  size_t wbytes = 0, wblocked = 0;
  if (ok && wcache_wanted(c)) {
    wbytes = dn.dnnl_memory_desc_get_size(&c->ub), wblocked = dn.dnnl_memory_desc_get_size(&c->pb);
    we = wcache_find(c, b, wbytes);
    if (we < 0 && (we = wcache_claim(wbytes, wblocked)) >= 0) {
      wfill = true;
      memcpy(wcache[we].plain, b, wbytes); /* before the reorder reads b */
    }
  }
  dnnl_memory_t pb = !c->rb ? ub
                     : we >= 0 ? memory(&c->pb, wcache[we].blocked, &ok)
                               : memory(&c->pb, scratch(&c->pb, &sb, &ok), &ok);
  dnnl_memory_t po = c->ro ? memory(&c->po, scratch(&c->po, &so, &ok), &ok) : uo;
  dnnl_memory_t mb = bias ? memory(&c->bias_md, (void *)bias, &ok) : NULL;
  if (c->ra) reorder(c->ra, ua, pa, st, &ok);
  if (c->rb && (we < 0 || wfill)) reorder(c->rb, ub, pb, st, &ok);
  dnnl_exec_arg_t args[4] = {{c->arg_a, pa}, {c->arg_b, pb}, {c->arg_o, po}, {DNNL_ARG_BIAS, mb}};
  if (ok && dn.dnnl_primitive_execute(c->prim, st, bias ? 4 : 3, args) != dnnl_success) ok = false;
  if (c->ro) reorder(c->ro, po, uo, st, &ok);
  if (ok && dn.dnnl_stream_wait(st) != dnnl_success) ok = false;
  mt_onednn_end(&old, held);
  if (we >= 0) wcache_release(we, c, wbytes, wblocked, wfill, ok);
  dnnl_memory_t all[7] = {ua, ub, uo, c->ra ? pa : NULL, c->rb ? pb : NULL, c->ro ? po : NULL, mb};
  for (int i = 0; i < 7; i++)
    if (all[i]) dn.dnnl_memory_destroy(all[i]);
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
  conv_prim *c = prim_of(&k);
  if (!c && k.alg == dnnl_convolution_winograd) {
    k.alg = dnnl_convolution_direct;
    c = prim_of(&k);
  }
  if (!c) return MT_ENOTIMPL;
  MT_TRY(run(c, x->_data, w->_data, out->_data, k.bias ? bias->_data : NULL));
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
  return run(c, src->_data, ddst->_data, gw->_data, NULL);
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
