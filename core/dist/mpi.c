/* libmoontorch_mpi: process groups over MPI (see dist.h for the contract).
 *
 * One communication thread owns MPI. It starts MPI (MPI_THREAD_FUNNELED: it is the only thread that
 * ever calls MPI), then serves a FIFO queue of works: collectives run as MPI's blocking calls (the
 * fastest path: OpenMPI's tuned allreduce of 2 MB between two processes took 0.21 ms here, its
 * non-blocking MPI_Iallreduce polled to completion 0.45 ms), point-to-point works are posted with
 * MPI_Isend/MPI_Irecv and tested whenever the queue is empty, so that a blocking recv never stops
 * the queue behind it. Callers wait on a condition variable with a deadline; MPI_ERRORS_RETURN turns
 * MPI's failures into a work's error. float16 and bfloat16 reduce through MPI_Op_create'd functions
 * (each step in float, rounded back, as the other backends do); AVG is SUM then a division. */
#define _GNU_SOURCE
#include "dist.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------ errors */
static __thread char err_buf[1024];

__attribute__((format(printf, 2, 3))) static mt_status fail(mt_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_buf, sizeof err_buf, fmt, ap);
  va_end(ap);
  return code;
}

const char *mt_dist_last_error(void) { return err_buf; }

#define MT_TRY(expr)                                                                                                   \
  do {                                                                                                                 \
    mt_status s_ = (expr);                                                                                             \
    if (s_ != MT_OK) return s_;                                                                                        \
  } while (0)

double mt_dist_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------------------ state */
typedef enum kind {
  K_FREE_COMM,
  K_SPLIT,
  K_FINALIZE,
  K_ALL_REDUCE,
  K_BROADCAST,
  K_REDUCE,
  K_ALL_GATHER,
  K_GATHER,
  K_SCATTER,
  K_REDUCE_SCATTER,
  K_ALL_TO_ALL,
  K_BARRIER,
  K_SEND,
  K_RECV,
  K_ARENA
} kind;

static const char *const kind_names[] = {"free_group", "new_group",  "finalize",       "all_reduce", "broadcast",
                                         "reduce",     "all_gather", "gather",         "scatter",    "reduce_scatter",
                                         "all_to_all", "barrier",    "send",           "recv",
                                         "shared_arena"};

struct mt_dist_group {
  int refs; /* atomic */
  MPI_Comm comm;
  int rank, size; /* rank -1: not a member (comm is MPI_COMM_NULL) */
  int world;
  /* arrival before each collective (arrive()): a duplicate of comm for its messages, the members'
   * ranks in the world (to name a rank that never arrived), the requests, and who has come */
  MPI_Comm acomm;
  int *world_ranks;
  MPI_Request *areq; /* size - 1 receives, then size - 1 sends */
  unsigned char *in; /* in[r]: member r has reached the current collective (atomic) */
  /* on-node all-reduce (shm_setup): when every member runs on this node, a shared segment of a
   * control slot per member and, per member, two halves of shm_cap bytes each; NULL otherwise */
  char *shm;
  size_t shm_len, shm_cap;
  uint64_t shm_seq; /* rounds run on it (the same on every member) */
  /* the arenas made over this group (mt_dist_arena_new; numbered from 1 in the order made, the same
   * on every member), up to GROUP_ARENAS alive at once; guarded by S.mu */
  mt_dist_arena *arenas[16];
  int arenas_made;
};
#define GROUP_ARENAS 16

struct mt_dist_arena {
  int refs; /* atomic: its owner's, and each all_reduce's in flight */
  mt_dist_group *g;
  int id;    /* its number in g (1..) */
  char *map; /* a segment (segment_make): SHM_CTL, then one region of cap bytes per member */
  size_t len, cap;
};

struct mt_dist_work {
  int refs; /* atomic: the caller's and the thread's */
  kind kind;
  mt_dist_group *g;
  void *buf;        /* written (in-place ops, recv, gathers' recv) */
  const void *sbuf; /* read */
  int64_t count;
  int dtype, op, root, peer, tag;
  int64_t *counts; /* all_to_all: send counts then recv counts (2 * size); all_reduce of several
                      tensors: each one's count */
  void **bufs;     /* all_reduce of several tensors (coalesced): their buffers, nbufs of them, which
                      make one vector of `count` elements in that order (buf is then NULL) */
  int nbufs;
  mt_dist_arena *arena; /* an all_reduce over a span of every member's arena (buf is then NULL), from
                           element `offset`; K_ARENA: the arena made (the caller takes it) */
  int64_t offset;
  double deadline, timeout; /* run in place by its caller (..._now): when to give up, and after how long */
  int state;       /* mt_dist_state; guarded by S.mu */
  int source;
  double t_started, t_finished;
  char msg[512];
  /* a new group's request (K_SPLIT) */
  int *ranks;
  int nranks;
  mt_dist_group *result;
  /* point to point in flight */
  MPI_Request req;
  int64_t done; /* elements already moved */
  mt_dist_work *next;
};

static struct {
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* the thread waits here for work */
  pthread_cond_t done_cv; /* callers wait here for their work */
  int started;            /* the thread runs */
  int init_state;         /* 0 starting, 1 up, 2 failed */
  int finalized;
  int busy;               /* the thread is inside MPI on a collective */
  int active;             /* a collective is being run: by the thread (popped from the queue) or by a
                             caller in place (mt_dist_all_reduce_coalesced_now) */
  mt_dist_group *arriving; /* the group whose ranks the thread waits for (arrive()), or NULL */
  int arriving_kind;       /* and the collective's kind */
  int arriving_phase;      /* 0: waiting for ranks to reach it, 1: for them to finish their part (shm) */
  pid_t pid;
  char init_error[512];
  char broken[640];
  mt_dist_work *head, *tail; /* queued */
  mt_dist_work *flight;      /* point-to-point works posted */
  mt_dist_group *world;
  int64_t max_count; /* elements per MPI call: INT_MAX */
  int64_t chunk;     /* elements per piece of the collectives cut in pieces (all_reduce, broadcast, reduce,
                        send, recv): max_count, or less with MOONTORCH_DIST_CHUNK (the specs cut in small pieces) */
  int tag_ub;
  int spin; /* MOONTORCH_DIST_SPIN=1: no sleeping arrival before collectives */
  int shm_off;      /* MOONTORCH_DIST_SHM=0: every all_reduce through MPI */
  double poll_s;     /* an on-node wait polls this long before it sleeps (MOONTORCH_DIST_POLL_US, 20) */
  size_t shm_bytes; /* bytes per member and round of the on-node all-reduce (MOONTORCH_DIST_SHM_BYTES) */
  unsigned shm_made; /* segments this process created (their names) */
  int die_rank;      /* the specs' MOONTORCH_DIST_TEST_DIE=rank:round: that world rank kills itself inside */
  uint64_t die_round; /* that round of an on-node all_reduce, after arriving (a rank dying inside it) */
  double exit_timeout;
  MPI_Datatype dt_half, dt_bf16;
  MPI_Op half_ops[4], bf16_ops[4]; /* sum, product, min, max */
  char version[256];
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void break_locked(mt_dist_work *w, double timeout_s);

int mt_dist_is_initialized(void) {
  pthread_mutex_lock(&S.mu);
  int r = S.init_state == 1 && !S.finalized;
  pthread_mutex_unlock(&S.mu);
  return r;
}

const char *mt_dist_broken(void) { return S.broken; }
const char *mt_dist_mpi_version(void) { return S.version; }

/* ------------------------------------------------------------------------------------ dtypes */
static size_t item_size(int dtype) {
  switch (dtype) {
  case MT_UINT8:
  case MT_INT8:
  case MT_BOOL:
    return 1;
  case MT_INT16:
  case MT_FLOAT16:
  case MT_BFLOAT16:
    return 2;
  case MT_INT32:
  case MT_FLOAT32:
    return 4;
  case MT_INT64:
  case MT_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

static const char *dtype_name(int dtype) {
  switch (dtype) {
  case MT_UINT8: return "uint8";
  case MT_INT8: return "int8";
  case MT_INT16: return "int16";
  case MT_INT32: return "int32";
  case MT_INT64: return "int64";
  case MT_FLOAT16: return "float16";
  case MT_FLOAT32: return "float32";
  case MT_FLOAT64: return "float64";
  case MT_BOOL: return "bool";
  case MT_BFLOAT16: return "bfloat16";
  default: return "?";
  }
}

static int is_floating(int dtype) {
  return dtype == MT_FLOAT16 || dtype == MT_FLOAT32 || dtype == MT_FLOAT64 || dtype == MT_BFLOAT16;
}

static MPI_Datatype mpi_type(int dtype) {
  switch (dtype) {
  case MT_UINT8:
  case MT_BOOL:
    return MPI_UINT8_T;
  case MT_INT8: return MPI_INT8_T;
  case MT_INT16: return MPI_INT16_T;
  case MT_INT32: return MPI_INT32_T;
  case MT_INT64: return MPI_INT64_T;
  case MT_FLOAT16: return S.dt_half;
  case MT_FLOAT32: return MPI_FLOAT;
  case MT_FLOAT64: return MPI_DOUBLE;
  case MT_BFLOAT16: return S.dt_bf16;
  default: return MPI_DATATYPE_NULL;
  }
}

static const char *const op_names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"};

/* Is op defined for dtype? (checked where the caller queues the work, for a message at its line) */
static mt_status check_op(const char *name, int op, int dtype) {
  if (op < 0 || op > MT_DIST_BXOR) return fail(MT_EINVAL, "distributed.%s: unknown ReduceOp %d", name, op);
  if (op == MT_DIST_AVG && !is_floating(dtype))
    return fail(MT_EDTYPE, "distributed.%s: ReduceOp.AVG needs a floating-point tensor, got %s", name,
                dtype_name(dtype));
  if (op >= MT_DIST_BAND && is_floating(dtype))
    return fail(MT_EDTYPE, "distributed.%s: ReduceOp.%s needs an integer or bool tensor, got %s", name, op_names[op],
                dtype_name(dtype));
  return MT_OK;
}

static MPI_Op mpi_op(int op, int dtype) {
  if (dtype == MT_FLOAT16 || dtype == MT_BFLOAT16) {
    MPI_Op *ops = dtype == MT_FLOAT16 ? S.half_ops : S.bf16_ops;
    switch (op) {
    case MT_DIST_SUM:
    case MT_DIST_AVG: return ops[0];
    case MT_DIST_PRODUCT: return ops[1];
    case MT_DIST_MIN: return ops[2];
    default: return ops[3];
    }
  }
  if (dtype == MT_BOOL) { /* as the other backends: sum and max are "or", product and min "and" */
    switch (op) {
    case MT_DIST_SUM:
    case MT_DIST_MAX: return MPI_LOR;
    case MT_DIST_PRODUCT:
    case MT_DIST_MIN: return MPI_LAND;
    case MT_DIST_BAND: return MPI_BAND;
    case MT_DIST_BOR: return MPI_BOR;
    default: return MPI_BXOR;
    }
  }
  switch (op) {
  case MT_DIST_SUM:
  case MT_DIST_AVG: return MPI_SUM;
  case MT_DIST_PRODUCT: return MPI_PROD;
  case MT_DIST_MIN: return MPI_MIN;
  case MT_DIST_MAX: return MPI_MAX;
  case MT_DIST_BAND: return MPI_BAND;
  case MT_DIST_BOR: return MPI_BOR;
  default: return MPI_BXOR;
  }
}

/* float16 through the compiler's _Float16 (rounded to nearest even), bfloat16 by hand */
static inline float h2f(uint16_t h) {
  _Float16 v;
  memcpy(&v, &h, 2);
  return (float)v;
}
static inline uint16_t f2h(float f) {
  _Float16 v = (_Float16)f;
  uint16_t h;
  memcpy(&h, &v, 2);
  return h;
}
static inline float b2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t f2b(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float fmin_nan(float a, float b) { return a != a ? a : b != b ? b : a < b ? a : b; }
static inline float fmax_nan(float a, float b) { return a != a ? a : b != b ? b : a > b ? a : b; }

/* MPI user functions: inout[i] = in[i] op inout[i] */
#define HALF_FN(name, TO, FROM, expr)                                                                                  \
  static void name(void *in, void *inout, int *len, MPI_Datatype *dt) {                                                \
    (void)dt;                                                                                                          \
    const uint16_t *a = in;                                                                                            \
    uint16_t *b = inout;                                                                                               \
    for (int i = 0; i < *len; i++) {                                                                                   \
      float x = TO(a[i]), y = TO(b[i]);                                                                                \
      b[i] = FROM(expr);                                                                                               \
    }                                                                                                                  \
  }
HALF_FN(half_sum, h2f, f2h, x + y)
HALF_FN(half_prod, h2f, f2h, x *y)
HALF_FN(half_min, h2f, f2h, fmin_nan(x, y))
HALF_FN(half_max, h2f, f2h, fmax_nan(x, y))
HALF_FN(bf16_sum, b2f, f2b, x + y)
HALF_FN(bf16_prod, b2f, f2b, x *y)
HALF_FN(bf16_min, b2f, f2b, fmin_nan(x, y))
HALF_FN(bf16_max, b2f, f2b, fmax_nan(x, y))

/* AVG: the sum divided by the group's size, in the tensor's dtype */
static void divide(void *buf, int64_t n, int dtype, int size) {
  switch (dtype) {
  case MT_FLOAT32: {
    float *p = buf;
    for (int64_t i = 0; i < n; i++) p[i] /= (float)size;
    break;
  }
  case MT_FLOAT64: {
    double *p = buf;
    for (int64_t i = 0; i < n; i++) p[i] /= (double)size;
    break;
  }
  case MT_FLOAT16: {
    uint16_t *p = buf;
    for (int64_t i = 0; i < n; i++) p[i] = f2h(h2f(p[i]) / (float)size);
    break;
  }
  case MT_BFLOAT16: {
    uint16_t *p = buf;
    for (int64_t i = 0; i < n; i++) p[i] = f2b(b2f(p[i]) / (float)size);
    break;
  }
  default:
    break;
  }
}

/* ------------------------------------------------------------------------------------ groups */
/* ------------------------------------------------------------------------------------ on-node segment */
/* The on-node all-reduce's memory (see shm_all_reduce): where every member of a group runs on this
 * node (MPI_Comm_split_type SHARED keeps them all), rank 0 creates a POSIX shared-memory segment,
 * reserves its pages (posix_fallocate: a full /dev/shm is a fallback now, not a SIGBUS later) and
 * sends its name; the others map it, and once all have it is unlinked (nothing is left behind, even
 * if a rank dies later). Plain shared memory rather than an MPI window: unmapping it is each rank's
 * own business, while MPI_Win_free is collective, and groups are let go by each rank's garbage
 * collector at its own time. Any member that cannot map it: the group keeps MPI_Allreduce. */
typedef struct shm_slot {
  uint64_t arrived; /* the last round this member reached (its data in place) */
  uint64_t done;    /* the last round whose slice this member has reduced */
  int64_t count;    /* the all_reduce's whole count, dtype and op, for the others to check */
  int32_t dtype, op;
  int64_t offset;   /* an arena's round: where this member's span starts in its region of arena */
  int32_t arena;    /* the arena's number (0: a round through the halves) */
  char fill[128 - 44];
} shm_slot;
/* the segment opens with a bell: a futex word that each post rings (bell += 1, then FUTEX_WAKE
 * where a member sleeps on it: `sleepers`), so that a waiting member sleeps in the kernel and wakes
 * the moment a post lands rather than napping and polling */
typedef struct shm_bell {
  uint32_t bell, sleepers;
  char fill[128 - 8];
} shm_bell;
#define SHM_CTL(n) ((sizeof(shm_bell) + ((size_t)(n) * sizeof(shm_slot)) + 4095) & ~(size_t)4095)

/* (ctl: the start of a segment: a group's, or an arena's) */
static shm_bell *shm_bell_of(char *ctl) { return (shm_bell *)ctl; }
static shm_slot *shm_slot_of(char *ctl, int r) {
  return (shm_slot *)(ctl + sizeof(shm_bell) + (size_t)r * sizeof(shm_slot));
}
static char *shm_half(mt_dist_group *g, int r, uint64_t seq) {
  return g->shm + SHM_CTL(g->size) + ((size_t)r * 2 + (size_t)(seq & 1)) * g->shm_cap;
}

/* A segment of SHM_CTL(n) + n * per * cap bytes shared by the members of g (collective: run by the
 * thread): rank 0 creates it (cap: rank 0's is every member's; 0 there: none), reserves its pages,
 * sends its name and length; the others map it; once all have it, it is unlinked. NULL on every
 * member where any could not map it. */
static char *segment_make(mt_dist_group *g, int64_t *cap, int per, int ready, size_t *len_out) {
  int n = g->size;
  struct {
    int64_t cap;
    char name[56];
  } m = {0, ""};
  char *map = NULL;
  size_t len = 0;
  if (g->rank == 0 && *cap > 0) {
    m.cap = (*cap + 63) & ~(int64_t)63;
    snprintf(m.name, sizeof m.name, "/moontorch-%d-%u", (int)getpid(), S.shm_made++);
    len = SHM_CTL(n) + (size_t)n * (size_t)per * (size_t)m.cap;
    int fd = shm_open(m.name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) {
      if (ftruncate(fd, (off_t)len) == 0 && posix_fallocate(fd, 0, (off_t)len) == 0) {
        map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) map = NULL;
      }
      close(fd);
      if (!map) shm_unlink(m.name);
    }
    if (!map) m.name[0] = 0;
  }
  MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, 0, g->comm);
  if (g->rank != 0 && m.name[0]) {
    len = SHM_CTL(n) + (size_t)n * (size_t)per * (size_t)m.cap;
    int fd = shm_open(m.name, O_RDWR, 0600);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && (size_t)st.st_size == len) {
        map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) map = NULL;
      }
      close(fd);
    }
  }
  int ok = map != NULL && ready;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g->comm);
  if (g->rank == 0 && m.name[0]) shm_unlink(m.name);
  if (!ok) {
    if (map) munmap(map, len);
    return NULL;
  }
  *cap = m.cap;
  *len_out = len;
  return map;
}

static void shm_setup(mt_dist_group *g) {
  int n = g->size, same = 0;
  MPI_Comm nc = MPI_COMM_NULL;
  if (n < 2) return;
  if (MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &nc) == MPI_SUCCESS && nc != MPI_COMM_NULL) {
    int ns = 0;
    MPI_Comm_size(nc, &ns);
    same = ns == n;
    MPI_Comm_free(&nc);
  }
  if (!same) return; /* the same answer on every member: each sees the whole group on its node or not */
  /* MOONTORCH_DIST_SHM_BYTES, else 16 MiB over the members, within 1..4 MiB (a DDP bucket of a few
   * MB in one round; at most 32 MiB of the node's memory per group) */
  int64_t cap = 0;
  if (g->rank == 0 && !S.shm_off) {
    size_t c = S.shm_bytes ? S.shm_bytes : (size_t)16 * 1024 * 1024 / (size_t)n;
    if (!S.shm_bytes) c = c < ((size_t)1 << 20) ? (size_t)1 << 20 : c > ((size_t)4 << 20) ? (size_t)4 << 20 : c;
    cap = (int64_t)c;
  }
  size_t len = 0;
  char *map = segment_make(g, &cap, 2, 1, &len);
  if (!map) return;
  g->shm = map;
  g->shm_len = len;
  g->shm_cap = (size_t)cap;
  g->shm_seq = 0;
}

/* A group's memory (the thread frees its communicators before, while MPI is up). */
static void group_free(mt_dist_group *g) {
  if (g->shm) munmap(g->shm, g->shm_len);
  free(g->world_ranks);
  free(g->areq);
  free(g->in);
  free(g);
}

static mt_dist_group *group_new(MPI_Comm comm, int world) {
  mt_dist_group *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->refs = 1;
  g->comm = comm;
  g->world = world;
  g->rank = -1;
  g->size = 0;
  g->acomm = MPI_COMM_NULL;
  if (comm != MPI_COMM_NULL) {
    MPI_Comm_rank(comm, &g->rank);
    MPI_Comm_size(comm, &g->size);
    int n = g->size;
    g->world_ranks = malloc(sizeof(int) * (size_t)n);
    g->areq = malloc(sizeof(MPI_Request) * (size_t)(2 * n));
    g->in = calloc((size_t)n, 1);
    int *mine = malloc(sizeof(int) * (size_t)n);
    if (!g->world_ranks || !g->areq || !g->in || !mine || MPI_Comm_dup(comm, &g->acomm) != MPI_SUCCESS) {
      free(mine);
      if (g->acomm != MPI_COMM_NULL) MPI_Comm_free(&g->acomm);
      group_free(g);
      return NULL;
    }
    MPI_Comm_set_errhandler(g->acomm, MPI_ERRORS_RETURN);
    MPI_Group a = MPI_GROUP_NULL, b = MPI_GROUP_NULL;
    for (int i = 0; i < n; i++) mine[i] = i;
    MPI_Comm_group(comm, &a);
    MPI_Comm_group(MPI_COMM_WORLD, &b);
    if (MPI_Group_translate_ranks(a, n, mine, b, g->world_ranks) != MPI_SUCCESS)
      for (int i = 0; i < n; i++) g->world_ranks[i] = i;
    MPI_Group_free(&a);
    MPI_Group_free(&b);
    free(mine);
    shm_setup(g);
  }
  return g;
}

int mt_dist_group_rank(const mt_dist_group *g) { return g ? g->rank : -1; }
int mt_dist_group_size(const mt_dist_group *g) { return g ? g->size : 0; }
int64_t mt_dist_group_shared_bytes(const mt_dist_group *g) { return g && g->shm ? (int64_t)g->shm_cap : 0; }

mt_dist_group *mt_dist_group_retain(mt_dist_group *g) {
  if (g) __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
  return g;
}

static void enqueue_locked(mt_dist_work *w, int wake);

void mt_dist_group_release(mt_dist_group *g) {
  if (!g || __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (g->world || g->comm == MPI_COMM_NULL) {
    if (!g->world) group_free(g);
    return; /* the world lives as long as the process */
  }
  /* the thread frees the communicator (it alone calls MPI); after MPI_Finalize there is nothing to free */
  pthread_mutex_lock(&S.mu);
  mt_dist_work *w = S.finalized ? NULL : calloc(1, sizeof *w);
  if (w) {
    w->kind = K_FREE_COMM;
    w->refs = 1; /* the thread's alone */
    w->g = g;    /* owned by the work now */
    enqueue_locked(w, 1);
  } else {
    group_free(g);
  }
  pthread_mutex_unlock(&S.mu);
}

/* ------------------------------------------------------------------------------------ works */
static void work_free(mt_dist_work *w) {
  mt_dist_arena_release(w->arena);
  if (w->kind == K_FREE_COMM) {
    group_free(w->g);
  } else {
    mt_dist_group_release(w->g);
  }
  free(w->counts);
  free(w->bufs);
  free(w->ranks);
  free(w);
}

void mt_dist_work_release(mt_dist_work *w) {
  if (w && __atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL) == 0) work_free(w);
}

static void enqueue_locked(mt_dist_work *w, int wake) {
  w->next = NULL;
  if (S.tail) S.tail->next = w;
  else S.head = w;
  S.tail = w;
  if (wake) pthread_cond_signal(&S.work_cv);
}

/* Finish a work (under S.mu): its waiters wake; the thread's reference is dropped by the caller. */
static void complete_locked(mt_dist_work *w, int ok) {
  w->t_finished = mt_dist_now();
  w->state = ok ? MT_DIST_DONE : MT_DIST_FAILED;
  pthread_cond_broadcast(&S.done_cv);
}

static void mpi_message(mt_dist_work *w, int rc) {
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", rc);
  snprintf(w->msg, sizeof w->msg, "distributed.%s: MPI failed on rank %d of %d: %s", kind_names[w->kind],
           w->g ? w->g->rank : -1, w->g ? w->g->size : 0, s);
}

/* ------------------------------------------------------------------------------------ the thread */
/* Wait until every rank of the group has reached this collective, sleeping rather than spinning:
 * each rank sends an empty message to every other on the group's arrival communicator and tests
 * for theirs in a loop that spins 20 us, yields to 200 us, then naps 50 us at a time. MPI's blocking
 * collectives spin while they wait for a late rank, which on a machine with no idle core takes the
 * CPU from the very ranks being waited for; after this they start together and their own waits are
 * short. The messages (rather than MPI_Ibarrier) tell who has come: a caller whose wait times out
 * names the ranks that never did (g->in). Groups of more than 64 ranks wait on MPI_Ibarrier (a
 * message to every peer would cost more than its log2(size) rounds) and name no one.
 * MOONTORCH_DIST_SPIN=1 leaves the wait out (MPI's own waits alone). */
static void nap_after(double t0) {
  double el = mt_dist_now() - t0;
  if (el < 20e-6) return;
  if (el < 200e-6) {
    sched_yield();
    return;
  }
  struct timespec nap = {0, 50000};
  nanosleep(&nap, NULL);
}

static int arrive(mt_dist_group *g, int kind) {
  int n = g->size, me = g->rank, rc = MPI_SUCCESS, flag = 0;
  if (n <= 1 || S.spin) return MPI_SUCCESS;
  double t0 = mt_dist_now();
  if (n > 64) {
    MPI_Request r;
    rc = MPI_Ibarrier(g->acomm, &r);
    while (rc == MPI_SUCCESS && !flag) {
      rc = MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS && !flag) nap_after(t0);
    }
    return rc;
  }
  int peers = n - 1, left = peers, idx[64];
  MPI_Request *recv = g->areq, *send = g->areq + peers;
  for (int i = 0; i < n; i++) __atomic_store_n(&g->in[i], (unsigned char)(i == me), __ATOMIC_RELAXED);
  pthread_mutex_lock(&S.mu);
  S.arriving = g;
  S.arriving_kind = kind;
  pthread_mutex_unlock(&S.mu);
  for (int k = 0, p = 0; p < n; p++) {
    if (p == me) continue;
    recv[k] = send[k] = MPI_REQUEST_NULL;
    if (rc == MPI_SUCCESS) rc = MPI_Irecv(NULL, 0, MPI_BYTE, p, 0, g->acomm, &recv[k]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(NULL, 0, MPI_BYTE, p, 0, g->acomm, &send[k]);
    k++;
  }
  while (rc == MPI_SUCCESS && left > 0) {
    int got = 0;
    rc = MPI_Testsome(peers, recv, &got, idx, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS || got == MPI_UNDEFINED) break;
    for (int j = 0; j < got; j++) {
      int p = idx[j] < me ? idx[j] : idx[j] + 1;
      __atomic_store_n(&g->in[p], (unsigned char)1, __ATOMIC_RELAXED);
    }
    left -= got;
    if (left > 0) nap_after(t0);
  }
  while (rc == MPI_SUCCESS && !flag) { /* the empty sends: done at once, or once received */
    rc = MPI_Testall(peers, send, &flag, MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS && !flag) nap_after(t0);
  }
  pthread_mutex_lock(&S.mu);
  S.arriving = NULL;
  pthread_mutex_unlock(&S.mu);
  return rc;
}


/* ------------------------------------------------------------------------------------ on-node all_reduce */
/* all_reduce through the group's shared segment (shm_setup), in rounds of at most shm_cap bytes per
 * member. Round s: each member copies into its half (s & 1) the part of its piece that the others
 * reduce (every slice but its own) and posts `arrived = s` with its count, dtype and op; once all
 * have arrived (and agree: else every member fails the round with the same message), member r
 * reduces slice r over every member's data, in rank order (its own read from its buffers), a block
 * at a time into its half (for the others) and its buffers, and posts `done = s`; once all are done,
 * each copies the other slices from their reducers' halves. The two halves alternate, so a member's
 * next round never writes what a slower member may still read: writing half s & 1 again in round
 * s + 2 comes after every member arrived at s + 1, that is, after each finished round s. Every
 * member gets the same bits (each slice is reduced once). A caller that times out names the
 * members that never arrived or never finished. */
static int shm_takes(int dtype, int op) {
  switch (dtype) {
  case MT_FLOAT32:
  case MT_FLOAT64: return op == MT_DIST_SUM || op == MT_DIST_AVG || op == MT_DIST_PRODUCT;
  case MT_INT32:
  case MT_INT64: return op == MT_DIST_SUM || op == MT_DIST_PRODUCT || op == MT_DIST_MIN || op == MT_DIST_MAX;
  default: return 0;
  }
}

/* out[0, m) = src[0][i] op src[1][i] op ... (in rank order; out is none of them: a block of the
 * caller's); integers wrap (through the unsigned type U), as MPI's */
#define SHM_BLOCK 1024
#define SHM_REDUCE(NAME, T, U, EXPR)                                                                                   \
  static void NAME(char *restrict out_, char *const *src, int n, int m, int avg) {                                     \
    T *restrict o = (T *)out_;                                                                                         \
    const T *restrict a = (const T *)src[0], *restrict c = (const T *)src[1];                                          \
    for (int i = 0; i < m; i++) {                                                                                      \
      T x = a[i], y = c[i];                                                                                            \
      o[i] = (EXPR);                                                                                                   \
    }                                                                                                                  \
    for (int k = 2; k < n; k++) {                                                                                      \
      const T *restrict d = (const T *)src[k];                                                                         \
      for (int i = 0; i < m; i++) {                                                                                    \
        T x = o[i], y = d[i];                                                                                          \
        o[i] = (EXPR);                                                                                                 \
      }                                                                                                                \
    }                                                                                                                  \
    if (avg)                                                                                                           \
      for (int i = 0; i < m; i++) o[i] = (T)(o[i] / (T)n);                                                             \
  }
SHM_REDUCE(shm_sum_f32, float, float, x + y)
SHM_REDUCE(shm_sum_f64, double, double, x + y)
SHM_REDUCE(shm_prod_f32, float, float, x *y)
SHM_REDUCE(shm_prod_f64, double, double, x *y)
SHM_REDUCE(shm_sum_i32, int32_t, uint32_t, (int32_t)((uint32_t)x + (uint32_t)y))
SHM_REDUCE(shm_sum_i64, int64_t, uint64_t, (int64_t)((uint64_t)x + (uint64_t)y))
SHM_REDUCE(shm_prod_i32, int32_t, uint32_t, (int32_t)((uint32_t)x * (uint32_t)y))
SHM_REDUCE(shm_prod_i64, int64_t, uint64_t, (int64_t)((uint64_t)x * (uint64_t)y))
SHM_REDUCE(shm_min_i32, int32_t, uint32_t, x < y ? x : y)
SHM_REDUCE(shm_min_i64, int64_t, uint64_t, x < y ? x : y)
SHM_REDUCE(shm_max_i32, int32_t, uint32_t, x > y ? x : y)
SHM_REDUCE(shm_max_i64, int64_t, uint64_t, x > y ? x : y)

typedef void (*shm_fn)(char *restrict, char *const *, int, int, int);
static shm_fn shm_fn_of(int dtype, int op) {
  int f = dtype == MT_FLOAT32, d = dtype == MT_FLOAT64, i = dtype == MT_INT32;
  switch (op) {
  case MT_DIST_SUM:
  case MT_DIST_AVG: return f ? shm_sum_f32 : d ? shm_sum_f64 : i ? shm_sum_i32 : shm_sum_i64;
  case MT_DIST_PRODUCT: return f ? shm_prod_f32 : d ? shm_prod_f64 : i ? shm_prod_i32 : shm_prod_i64;
  case MT_DIST_MIN: return i ? shm_min_i32 : shm_min_i64;
  default: return i ? shm_max_i32 : shm_max_i64;
  }
}

/* member k's slice of a piece of `count` elements: [lo(k), lo(k + 1)), starts on 16 elements */
static int64_t shm_lo(int64_t count, int n, int k) {
  if (k <= 0) return 0;
  if (k >= n) return count;
  return (int64_t)(((__int128)count * k / n) & ~(int64_t)15);
}

/* post `*field = seq` and ring the bell for whoever sleeps on it */
static void shm_post(char *ctl, uint64_t *field, uint64_t seq) {
  shm_bell *b = shm_bell_of(ctl);
  __atomic_store_n(field, seq, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&b->bell, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST))
    syscall(SYS_futex, &b->bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* every other member has posted round seq in `done` (1) or `arrived` (0)? (marks who has in g->in) */
static int shm_all_posted(mt_dist_group *g, char *ctl, int done, uint64_t seq) {
  int all = 1;
  for (int k = 0; k < g->size; k++) {
    if (k == g->rank) continue;
    shm_slot *sl = shm_slot_of(ctl, k);
    if (__atomic_load_n(done ? &sl->done : &sl->arrived, __ATOMIC_ACQUIRE) >= seq)
      __atomic_store_n(&g->in[k], (unsigned char)1, __ATOMIC_RELAXED);
    else all = 0;
  }
  return all;
}

/* wait until every other member has posted round seq: 20 us of polling, then asleep on the bell
 * (in slices of 10 ms, to see a caller that gave up: w->msg says so, 0) */
static int shm_wait(mt_dist_work *w, char *ctl, int done, uint64_t seq) {
  mt_dist_group *g = w->g;
  int n = g->size, me = g->rank;
  pthread_mutex_lock(&S.mu);
  for (int i = 0; i < n; i++) __atomic_store_n(&g->in[i], (unsigned char)(i == me), __ATOMIC_RELAXED);
  S.arriving = g;
  S.arriving_kind = w->kind;
  S.arriving_phase = done;
  pthread_mutex_unlock(&S.mu);
  shm_bell *b = shm_bell_of(ctl);
  double t0 = mt_dist_now();
  int ok = 1;
  while (!shm_all_posted(g, ctl, done, seq)) {
    if (w->deadline > 0 && mt_dist_now() > w->deadline) { /* run in place: the caller's own deadline */
      pthread_mutex_lock(&S.mu);
      break_locked(w, w->timeout);
      snprintf(w->msg, sizeof w->msg, "distributed.%s: %.480s", kind_names[w->kind], S.broken);
      pthread_mutex_unlock(&S.mu);
      ok = 0;
      break;
    }
    if (__atomic_load_n(&S.broken[0], __ATOMIC_RELAXED)) {
      snprintf(w->msg, sizeof w->msg, "distributed.%s: given up (the caller's wait timed out)", kind_names[w->kind]);
      ok = 0;
      break;
    }
    if (mt_dist_now() - t0 < S.poll_s) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    __atomic_add_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
    uint32_t v = __atomic_load_n(&b->bell, __ATOMIC_SEQ_CST);
    if (!shm_all_posted(g, ctl, done, seq)) {
      struct timespec ts = {0, 10000000L};
      syscall(SYS_futex, &b->bell, FUTEX_WAIT, v, &ts, NULL, 0);
    }
    __atomic_sub_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
  }
  pthread_mutex_lock(&S.mu);
  S.arriving = NULL;
  S.arriving_phase = 0;
  pthread_mutex_unlock(&S.mu);
  return ok;
}

/* elements [off, off + n) of the work's vector (buf, or its buffers one after another) to flat
 * (to_flat) or back from it */
static void span_copy(mt_dist_work *w, int64_t off, int64_t n, char *flat, int to_flat) {
  size_t isz = item_size(w->dtype);
  if (n <= 0) return;
  if (!w->bufs) {
    char *p = (char *)w->buf + (size_t)off * isz;
    if (to_flat) memcpy(flat, p, (size_t)n * isz);
    else memcpy(p, flat, (size_t)n * isz);
    return;
  }
  int64_t start = 0;
  for (int i = 0; i < w->nbufs && n > 0; i++) {
    int64_t c = w->counts[i];
    if (off < start + c) {
      int64_t in = off - start, m = c - in < n ? c - in : n;
      char *p = (char *)w->bufs[i] + (size_t)in * isz;
      if (to_flat) memcpy(flat, p, (size_t)m * isz);
      else memcpy(p, flat, (size_t)m * isz);
      flat += (size_t)m * isz;
      off += m;
      n -= m;
    }
    start += c;
  }
}

/* elements [off, off + n) of the work's vector where they lie in one buffer, else NULL */
static char *span_ptr(mt_dist_work *w, int64_t off, int64_t n) {
  size_t isz = item_size(w->dtype);
  if (!w->bufs) return (char *)w->buf + (size_t)off * isz;
  int64_t start = 0;
  for (int i = 0; i < w->nbufs; i++) {
    int64_t c = w->counts[i];
    if (off < start + c) return off + n <= start + c ? (char *)w->bufs[i] + (size_t)(off - start) * isz : NULL;
    start += c;
  }
  return NULL;
}

/* w's message when member `other` posted another all_reduce in the same round (arena: this one's
 * number, 0 for a round through the halves) */
static void differ_message(mt_dist_work *w, int other, int arena) {
  mt_dist_group *g = w->g;
  shm_slot *sl = shm_slot_of(g->shm, other);
  snprintf(w->msg, sizeof w->msg,
           "distributed.all_reduce: the ranks' tensors differ: rank %d has %lld elements of %s (ReduceOp.%s%s), "
           "rank %d has %lld elements of %s (ReduceOp.%s%s)",
           g->world_ranks[g->rank], (long long)w->count, dtype_name(w->dtype), op_names[w->op],
           arena ? ", in shared gradient memory" : "", g->world_ranks[other], (long long)sl->count,
           dtype_name(sl->dtype), sl->op >= 0 && sl->op <= MT_DIST_BXOR ? op_names[sl->op] : "?",
           sl->arena ? ", in shared gradient memory" : "");
}

static int shm_all_reduce(mt_dist_work *w) {
  mt_dist_group *g = w->g;
  int n = g->size, me = g->rank;
  size_t isz = item_size(w->dtype);
  int64_t per = (int64_t)(g->shm_cap / isz);
  if (per > S.chunk) per = S.chunk;
  shm_fn fn = shm_fn_of(w->dtype, w->op);
  char *src[64], **srcs = n <= 64 ? src : malloc(sizeof(char *) * (size_t)n);
  if (!srcs) {
    snprintf(w->msg, sizeof w->msg, "distributed.all_reduce: out of memory");
    return 0;
  }
  shm_slot *mine = shm_slot_of(g->shm, me);
  _Alignas(64) char own[SHM_BLOCK * 8], acc[SHM_BLOCK * 8]; /* a block of this rank's data, of the result */
  int ok = 1;
  int64_t off = 0;
  do {
    int64_t piece = w->count - off < per ? w->count - off : per;
    uint64_t seq = ++g->shm_seq;
    /* the others need this rank's data of their slices only: its own slice it reduces from its buffers */
    for (int k = 0; k < n; k++) {
      if (k == me) continue;
      int64_t lo = shm_lo(piece, n, k), hi = shm_lo(piece, n, k + 1);
      span_copy(w, off + lo, hi - lo, shm_half(g, me, seq) + (size_t)lo * isz, 1);
    }
    mine->count = w->count;
    mine->dtype = w->dtype;
    mine->op = w->op;
    mine->arena = 0;
    shm_post(g->shm, &mine->arrived, seq);
    if (S.die_round == seq && S.die_rank == g->world_ranks[me] && g->world) raise(SIGKILL);
    if (!shm_wait(w, g->shm, 0, seq)) {
      ok = 0;
      break;
    }
    int other = -1;
    for (int k = 0; k < n && other < 0; k++) {
      shm_slot *sl = shm_slot_of(g->shm, k);
      if (sl->count != w->count || sl->dtype != w->dtype || sl->op != w->op || sl->arena) other = k;
    }
    if (other < 0) { /* slice me, a block at a time: into this rank's half (for the others) and buffers */
      int64_t lo = shm_lo(piece, n, me), hi = shm_lo(piece, n, me + 1);
      for (int64_t b = lo; b < hi; b += SHM_BLOCK) {
        int m = (int)(hi - b < SHM_BLOCK ? hi - b : SHM_BLOCK);
        char *mydata = span_ptr(w, off + b, m);
        if (!mydata) span_copy(w, off + b, m, mydata = own, 1);
        for (int k = 0; k < n; k++) srcs[k] = k == me ? mydata : shm_half(g, k, seq) + (size_t)b * isz;
        fn(acc, srcs, n, m, w->op == MT_DIST_AVG);
        memcpy(shm_half(g, me, seq) + (size_t)b * isz, acc, (size_t)m * isz);
        span_copy(w, off + b, m, acc, 0);
      }
    }
    shm_post(g->shm, &mine->done, seq);
    if (!shm_wait(w, g->shm, 1, seq)) {
      ok = 0;
      break;
    }
    if (other >= 0) {
      differ_message(w, other, 0);
      ok = 0;
      break;
    }
    for (int k = 0; k < n; k++) {
      if (k == me) continue;
      int64_t lo = shm_lo(piece, n, k), hi = shm_lo(piece, n, k + 1);
      span_copy(w, off + lo, hi - lo, shm_half(g, k, seq) + (size_t)lo * isz, 0);
    }
    off += piece;
  } while (off < w->count);
  if (srcs != src) free(srcs);
  return ok;
}


/* ------------------------------------------------------------------------------------ arenas */
/* An arena (see dist.h): a segment of one region per member (segment_make), made collectively by
 * the thread (K_ARENA). Its all-reduce is a round of the group's segment (the same bell, slots and
 * round numbers as shm_all_reduce's, so that rounds of either kind meet in order and a mismatch is
 * seen): each member posts its span (arena number, offset, count, dtype, op); once all have arrived,
 * member r reduces slice r, a block at a time, from every member's span into every member's span;
 * once all are done, every span holds the result. Each member reads its peers' arenas through its
 * own mapping of them, found by number among the group's arenas (a peer's span in an arena this
 * member no longer has: the tensors differ). */
static char *arena_region(mt_dist_arena *a, int r) { return a->map + SHM_CTL(a->g->size) + (size_t)r * a->cap; }

static void arena_setup(mt_dist_work *w) {
  mt_dist_group *g = w->g;
  int64_t cap = (w->count + 4095) & ~(int64_t)4095; /* (regions on pages of their own) */
  if (cap <= 0) cap = 4096;
  mt_dist_arena *a = calloc(1, sizeof *a);
  pthread_mutex_lock(&S.mu);
  int slot = -1;
  for (int i = 0; i < GROUP_ARENAS && slot < 0; i++)
    if (!g->arenas[i]) slot = i;
  pthread_mutex_unlock(&S.mu);
  size_t len = 0;
  char *map = segment_make(g, &cap, 1, a != NULL && slot >= 0, &len);
  g->arenas_made++; /* (on every member, made or not: the numbers stay the same everywhere) */
  if (!map) {
    free(a);
    return;
  }
  a->refs = 1;
  a->g = mt_dist_group_retain(g);
  a->id = g->arenas_made;
  a->map = map;
  a->len = len;
  a->cap = (size_t)cap;
  pthread_mutex_lock(&S.mu);
  g->arenas[slot] = a;
  pthread_mutex_unlock(&S.mu);
  w->arena = a;
}

mt_dist_arena *mt_dist_arena_retain(mt_dist_arena *a) {
  if (a) __atomic_add_fetch(&a->refs, 1, __ATOMIC_ACQ_REL);
  return a;
}

void mt_dist_arena_release(mt_dist_arena *a) {
  if (!a || __atomic_sub_fetch(&a->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  pthread_mutex_lock(&S.mu);
  for (int i = 0; i < GROUP_ARENAS; i++)
    if (a->g->arenas[i] == a) a->g->arenas[i] = NULL;
  pthread_mutex_unlock(&S.mu);
  munmap(a->map, a->len);
  mt_dist_group_release(a->g);
  free(a);
}

void mt_dist_arena_unref(void *ctx, void *data) {
  (void)data;
  mt_dist_arena_release(ctx);
}

void *mt_dist_arena_data(mt_dist_arena *a) { return arena_region(a, a->g->rank); }
int64_t mt_dist_arena_bytes(const mt_dist_arena *a) { return (int64_t)a->cap; }

/* the group's arena number id, retained (NULL: none such here) */
static mt_dist_arena *arena_find(mt_dist_group *g, int id) {
  mt_dist_arena *a = NULL;
  pthread_mutex_lock(&S.mu);
  for (int i = 0; i < GROUP_ARENAS && !a; i++) {
    mt_dist_arena *c = g->arenas[i];
    if (!c || c->id != id) continue;
    /* a reference only while it has one: a release that took the last is freeing it (the list
     * forgets it under S.mu right after) */
    int r = __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE);
    while (r > 0 && !__atomic_compare_exchange_n(&c->refs, &r, r + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
    if (r > 0) a = c;
  }
  pthread_mutex_unlock(&S.mu);
  return a;
}

/* two members' float SUM/AVG in one pass: both spans get the result (the usual DDP pair; the
 * general case goes through a block and copies) */
#define ARENA_PAIR(NAME, T)                                                                                            \
  static void NAME(char *a_, char *b_, int64_t m, int avg) {                                                           \
    T *restrict a = (T *)a_, *restrict b = (T *)b_;                                                                    \
    T scale = avg ? (T)0.5 : (T)1; /* (exact: the same bits as dividing by 2) */                                        \
    for (int64_t i = 0; i < m; i++) {                                                                                  \
      T r = (a[i] + b[i]) * scale;                                                                                     \
      a[i] = r;                                                                                                        \
      b[i] = r;                                                                                                        \
    }                                                                                                                  \
  }
ARENA_PAIR(arena_pair_f32, float)
ARENA_PAIR(arena_pair_f64, double)

static int arena_all_reduce(mt_dist_work *w) {
  mt_dist_group *g = w->g;
  int n = g->size, me = g->rank, ok = 1;
  size_t isz = item_size(w->dtype);
  shm_fn fn = shm_fn_of(w->dtype, w->op);
  mt_dist_arena *peers[64] = {0};
  char **srcs = NULL;
  if (n > 64) {
    snprintf(w->msg, sizeof w->msg, "distributed.all_reduce: shared gradient memory serves groups of up to 64 ranks");
    return 0;
  }
  char *src[64], *dst[64];
  srcs = src;
  shm_slot *mine = shm_slot_of(g->shm, me);
  uint64_t seq = ++g->shm_seq;
  mine->count = w->count;
  mine->dtype = w->dtype;
  mine->op = w->op;
  mine->offset = w->offset;
  mine->arena = w->arena->id;
  shm_post(g->shm, &mine->arrived, seq);
  if (S.die_round == seq && S.die_rank == g->world_ranks[me] && g->world) raise(SIGKILL);
  if (!shm_wait(w, g->shm, 0, seq)) return 0;
  int other = -1, lost = -1;
  for (int k = 0; k < n && other < 0 && lost < 0; k++) {
    shm_slot *sl = shm_slot_of(g->shm, k);
    if (sl->count != w->count || sl->dtype != w->dtype || sl->op != w->op || !sl->arena) {
      other = k;
    } else {
      peers[k] = k == me ? mt_dist_arena_retain(w->arena) : arena_find(g, sl->arena);
      if (!peers[k] || (size_t)(sl->offset + sl->count) * isz > peers[k]->cap || sl->offset < 0) lost = k;
    }
  }
  if (other < 0 && lost < 0) {
    int64_t lo = shm_lo(w->count, n, me), hi = shm_lo(w->count, n, me + 1);
    _Alignas(64) char acc[SHM_BLOCK * 8];
    for (int k = 0; k < n; k++) dst[k] = arena_region(peers[k], k) + (size_t)shm_slot_of(g->shm, k)->offset * isz;
    int pair = n == 2 && (w->op == MT_DIST_SUM || w->op == MT_DIST_AVG) &&
               (w->dtype == MT_FLOAT32 || w->dtype == MT_FLOAT64) && dst[0] != dst[1];
    if (pair) {
      (w->dtype == MT_FLOAT32 ? arena_pair_f32 : arena_pair_f64)(dst[0] + (size_t)lo * isz, dst[1] + (size_t)lo * isz,
                                                                 hi - lo, w->op == MT_DIST_AVG);
      lo = hi;
    }
    for (int64_t b = lo; b < hi; b += SHM_BLOCK) {
      int m = (int)(hi - b < SHM_BLOCK ? hi - b : SHM_BLOCK);
      for (int k = 0; k < n; k++) srcs[k] = dst[k] + (size_t)b * isz;
      fn(acc, srcs, n, m, w->op == MT_DIST_AVG);
      for (int k = 0; k < n; k++) memcpy(dst[k] + (size_t)b * isz, acc, (size_t)m * isz);
    }
  }
  for (int k = 0; k < n; k++) mt_dist_arena_release(peers[k]);
  shm_post(g->shm, &mine->done, seq);
  if (!shm_wait(w, g->shm, 1, seq)) return 0;
  if (other >= 0) {
    differ_message(w, other, w->arena->id);
    ok = 0;
  } else if (lost >= 0) {
    snprintf(w->msg, sizeof w->msg,
             "distributed.all_reduce: rank %d's gradients lie in shared memory that rank %d does not have (a "
             "DistributedDataParallel made or dropped on some ranks only)",
             g->world_ranks[lost], g->world_ranks[me]);
    ok = 0;
  }
  return ok;
}

static int run_collective(mt_dist_work *w) {
  mt_dist_group *g = w->g;
  MPI_Comm c = g->comm;
  MPI_Datatype t = mpi_type(w->dtype);
  size_t isz = item_size(w->dtype);
  int64_t step = S.chunk;
  if (w->kind == K_ALL_REDUCE && g->size == 1) return 1; /* (every op of one rank's values is those values) */
  if (w->kind == K_ALL_REDUCE && w->arena) return arena_all_reduce(w);
  if (w->kind == K_ALL_REDUCE && g->shm && shm_takes(w->dtype, w->op)) return shm_all_reduce(w);
  if (w->kind == K_ALL_REDUCE && w->bufs) { /* several tensors through MPI: one contiguous copy */
    char *tmp = malloc(w->count ? (size_t)w->count * isz : 1);
    if (!tmp) {
      snprintf(w->msg, sizeof w->msg, "distributed.all_reduce_coalesced: out of memory");
      return 0;
    }
    span_copy(w, 0, w->count, tmp, 1);
    void **bufs = w->bufs;
    w->bufs = NULL;
    w->buf = tmp;
    int ok = run_collective(w);
    w->bufs = bufs;
    w->buf = NULL;
    if (ok) span_copy(w, 0, w->count, tmp, 0);
    free(tmp);
    return ok;
  }
  int rc = arrive(g, w->kind);
  if (rc != MPI_SUCCESS || w->kind == K_BARRIER) goto done;
  if (w->kind == K_ARENA) {
    arena_setup(w);
    goto done;
  }
  switch (w->kind) {
  case K_ALL_REDUCE:
  case K_BROADCAST:
  case K_REDUCE: {
    MPI_Op o = w->kind == K_BROADCAST ? MPI_OP_NULL : mpi_op(w->op, w->dtype);
    char *p = w->buf;
    for (int64_t off = 0; off < w->count && rc == MPI_SUCCESS; off += step) {
      int n = (int)(w->count - off < step ? w->count - off : step);
      char *q = p + (size_t)off * isz;
      if (w->kind == K_ALL_REDUCE) rc = MPI_Allreduce(MPI_IN_PLACE, q, n, t, o, c);
      else if (w->kind == K_BROADCAST) rc = MPI_Bcast(q, n, t, w->root, c);
      else if (g->rank == w->root) rc = MPI_Reduce(MPI_IN_PLACE, q, n, t, o, w->root, c);
      else rc = MPI_Reduce(q, NULL, n, t, o, w->root, c);
    }
    if (rc == MPI_SUCCESS && w->op == MT_DIST_AVG && w->kind != K_BROADCAST &&
        (w->kind == K_ALL_REDUCE || g->rank == w->root))
      divide(w->buf, w->count, w->dtype, g->size);
    break;
  }
  case K_ALL_GATHER:
    rc = MPI_Allgather(w->sbuf, (int)w->count, t, w->buf, (int)w->count, t, c);
    break;
  case K_GATHER:
    rc = MPI_Gather(w->sbuf, (int)w->count, t, w->buf, (int)w->count, t, w->root, c);
    break;
  case K_SCATTER:
    rc = MPI_Scatter(w->sbuf, (int)w->count, t, w->buf, (int)w->count, t, w->root, c);
    break;
  case K_REDUCE_SCATTER:
    rc = MPI_Reduce_scatter_block(w->sbuf, w->buf, (int)w->count, t, mpi_op(w->op, w->dtype), c);
    if (rc == MPI_SUCCESS && w->op == MT_DIST_AVG) divide(w->buf, w->count, w->dtype, g->size);
    break;
  case K_ALL_TO_ALL: {
    int n = g->size;
    int *a = malloc(sizeof(int) * 4 * (size_t)n);
    if (!a) {
      snprintf(w->msg, sizeof w->msg, "distributed.all_to_all: out of memory");
      return 0;
    }
    int *sc = a, *sd = a + n, *rcnt = a + 2 * n, *rd = a + 3 * n;
    int64_t so = 0, ro = 0;
    for (int r = 0; r < n; r++) {
      sc[r] = (int)w->counts[r];
      sd[r] = (int)so;
      so += w->counts[r];
      rcnt[r] = (int)w->counts[n + r];
      rd[r] = (int)ro;
      ro += w->counts[n + r];
    }
    rc = MPI_Alltoallv(w->sbuf, sc, sd, t, w->buf, rcnt, rd, t, c);
    free(a);
    break;
  }
  default:
    break;
  }
done:
  if (rc != MPI_SUCCESS) {
    mpi_message(w, rc);
    return 0;
  }
  return 1;
}

/* Post the next piece of a send or recv; 0 when MPI refused it (the message is in w->msg). */
static int post_p2p(mt_dist_work *w) {
  MPI_Datatype t = mpi_type(w->dtype);
  size_t isz = item_size(w->dtype);
  int64_t left = w->count - w->done;
  int n = (int)(left < S.chunk ? left : S.chunk);
  int rc;
  if (w->kind == K_SEND) {
    rc = MPI_Isend((const char *)w->sbuf + (size_t)w->done * isz, n, t, w->peer, w->tag, w->g->comm, &w->req);
  } else {
    int src = w->source >= 0 ? w->source : w->peer < 0 ? MPI_ANY_SOURCE : w->peer;
    rc = MPI_Irecv((char *)w->buf + (size_t)w->done * isz, n, t, src, w->tag, w->g->comm, &w->req);
  }
  if (rc != MPI_SUCCESS) {
    mpi_message(w, rc);
    return 0;
  }
  return 1;
}

/* Test the works in flight; returns how many finished (the thread's references are released). */
static int progress_p2p(void) {
  int finished = 0;
  mt_dist_work **pp = &S.flight;
  while (*pp) {
    mt_dist_work *w = *pp;
    int flag = 0, ok = 1;
    MPI_Status st;
    int rc = MPI_Test(&w->req, &flag, &st);
    if (rc != MPI_SUCCESS) {
      int cls = 0;
      MPI_Error_class(rc == MPI_ERR_IN_STATUS ? st.MPI_ERROR : rc, &cls);
      if (w->kind == K_RECV && cls == MPI_ERR_TRUNCATE)
        snprintf(w->msg, sizeof w->msg,
                 "distributed.recv: rank %d sent more than the %lld elements of %s of the receiving tensor (the "
                 "sender's tensor has another size or dtype)",
                 st.MPI_SOURCE, (long long)w->count, dtype_name(w->dtype));
      else mpi_message(w, rc);
      flag = 1;
      ok = 0;
    } else if (flag) {
      int64_t left = w->count - w->done;
      int want = (int)(left < S.chunk ? left : S.chunk);
      if (w->kind == K_RECV) {
        int got = 0;
        MPI_Get_count(&st, mpi_type(w->dtype), &got);
        if (w->source < 0) w->source = st.MPI_SOURCE;
        if (got != want) {
          snprintf(w->msg, sizeof w->msg,
                   "distributed.recv: expected %lld elements of %s from rank %d, got %d (the sender's tensor has "
                   "another size)",
                   (long long)w->count, dtype_name(w->dtype), w->source, got + (int)w->done);
          ok = 0;
        }
      }
      if (ok) {
        w->done += want;
        if (w->done < w->count) {
          if (post_p2p(w)) flag = 0; /* the next piece is in flight */
          else ok = 0;
        }
      }
    }
    if (!flag) {
      pp = &w->next;
      continue;
    }
    *pp = w->next;
    pthread_mutex_lock(&S.mu);
    complete_locked(w, ok);
    pthread_mutex_unlock(&S.mu);
    mt_dist_work_release(w);
    finished++;
  }
  return finished;
}

#ifdef MT_ASAN_BUILD
/* Under AddressSanitizer: the plugins of Open MPI (mca_*.so, which it dlopens, queries and dlcloses
 * from MPI_Init to MPI_Finalize), of PMIx and of hwloc (whose OpenCL and GL plugins bring libOpenCL
 * and libX11) are opened first here with RTLD_NODELETE, so that they stay mapped and LeakSanitizer's
 * report at exit can name what they keep (./run asan suppresses it by those names; unmapped, it
 * reads as "<unknown module>" and cannot be told from ours). */
#include <glob.h>
#include <libgen.h>
static void pin_libraries(void) {
  Dl_info info;
  if (!dladdr((void *)MPI_Init, &info) || !info.dli_fname) return;
  char lib[4096], pattern[4200];
  if (!realpath(info.dli_fname, lib)) return;
  const char *dir = dirname(lib);
  const char *forms[] = {"%s/openmpi/lib/openmpi*/mca_*.so", "%s/openmpi*/mca_*.so", "%s/pmix*/lib/pmix/*.so",
                         "%s/hwloc/*.so"};
  for (int f = 0; f < 4; f++) {
    glob_t g;
    snprintf(pattern, sizeof pattern, forms[f], dir);
    if (glob(pattern, 0, NULL, &g) != 0) continue;
    for (size_t i = 0; i < g.gl_pathc; i++) dlopen(g.gl_pathv[i], RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
    globfree(&g);
  }
}
#else
static void pin_libraries(void) {}
#endif

/* Open MPI's shared-memory transport copies large messages between processes with process_vm_readv
 * (CMA). A container whose seccomp filter refuses it (Docker's default profile without
 * CAP_SYS_PTRACE) gets "Read -1, expected N, errno = 1" on stderr for every such message: there,
 * the copies go through the shared segment instead, unless the user chose a mechanism. */
static void shun_refused_cma(void) {
  if (getenv("OMPI_MCA_btl_vader_single_copy_mechanism")) return;
  char src = 1, dst = 0;
  struct iovec l = {&dst, 1}, r = {&src, 1};
  if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1) setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
}

static void thread_init(void) {
  int flag = 0, provided = 0, rc;
  char msg[512] = "";
  MPI_Initialized(&flag);
  if (flag) {
    MPI_Query_thread(&provided);
    if (provided != MPI_THREAD_MULTIPLE)
      snprintf(msg, sizeof msg,
               "distributed.init_process_group: MPI was started by someone else in this process without "
               "MPI_THREAD_MULTIPLE; moontorch's communication thread cannot share it");
  } else {
    pin_libraries();
    /* a process started alone (no mpirun, no srun) is a world of one that never spawns: Open MPI
     * need not fork its helper daemon for it (0.2 s sooner, one process fewer) */
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    /* and while a collective waits inside MPI for a rank that is not running, its polling loop
     * yields the CPU between polls (mpirun sets this itself only when it sees more ranks than
     * slots; a machine shared with other work needs it too) */
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    shun_refused_cma();
    rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) snprintf(msg, sizeof msg, "distributed.init_process_group: MPI_Init_thread failed (%d)", rc);
  }
  if (!msg[0]) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_dup(MPI_UINT16_T, &S.dt_half);
    MPI_Type_commit(&S.dt_half);
    MPI_Type_dup(MPI_UINT16_T, &S.dt_bf16);
    MPI_Type_commit(&S.dt_bf16);
    MPI_User_function *hf[4] = {half_sum, half_prod, half_min, half_max};
    MPI_User_function *bf[4] = {bf16_sum, bf16_prod, bf16_min, bf16_max};
    for (int i = 0; i < 4; i++) {
      MPI_Op_create(hf[i], 1, &S.half_ops[i]);
      MPI_Op_create(bf[i], 1, &S.bf16_ops[i]);
    }
    int *ub = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    S.tag_ub = flag && ub ? *ub : 32767;
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int vn = 0;
    MPI_Get_library_version(v, &vn);
    v[strcspn(v, "\n,")] = 0;
    snprintf(S.version, sizeof S.version, "%s", v);
  }
  pthread_mutex_lock(&S.mu);
  if (msg[0]) {
    snprintf(S.init_error, sizeof S.init_error, "%s", msg);
    S.init_state = 2;
  } else {
    S.world = group_new(MPI_COMM_WORLD, 1);
    S.init_state = S.world ? 1 : 2;
    if (!S.world) snprintf(S.init_error, sizeof S.init_error, "distributed.init_process_group: out of memory");
  }
  pthread_cond_broadcast(&S.done_cv);
  pthread_mutex_unlock(&S.mu);
}

static void run_one(mt_dist_work *w) {
  w->t_started = mt_dist_now();
  int ok = 1, posted = 0;
  switch (w->kind) {
  case K_FREE_COMM:
    MPI_Comm_free(&w->g->comm);
    if (w->g->acomm != MPI_COMM_NULL) MPI_Comm_free(&w->g->acomm);
    break;
  case K_SPLIT: {
    mt_dist_group *p = w->g;
    int color = MPI_UNDEFINED, key = 0;
    for (int i = 0; i < w->nranks; i++)
      if (w->ranks[i] == p->rank) color = 0, key = i;
    MPI_Comm nc = MPI_COMM_NULL;
    int rc = MPI_Comm_split(p->comm, color, key, &nc);
    if (rc != MPI_SUCCESS) {
      mpi_message(w, rc);
      ok = 0;
      break;
    }
    if (nc != MPI_COMM_NULL) MPI_Comm_set_errhandler(nc, MPI_ERRORS_RETURN);
    w->result = group_new(nc, 0);
    if (!w->result) {
      if (nc != MPI_COMM_NULL) MPI_Comm_free(&nc);
      snprintf(w->msg, sizeof w->msg, "distributed.new_group: out of memory");
      ok = 0;
    }
    break;
  }
  case K_FINALIZE:
    if (S.world && S.world->acomm != MPI_COMM_NULL) MPI_Comm_free(&S.world->acomm);
    MPI_Finalize();
    break;
  case K_SEND:
  case K_RECV:
    if (w->count == 0) break;
    ok = post_p2p(w);
    posted = ok;
    break;
  default:
    pthread_mutex_lock(&S.mu);
    S.busy = 1;
    pthread_mutex_unlock(&S.mu);
    ok = run_collective(w);
    pthread_mutex_lock(&S.mu);
    S.busy = 0;
    pthread_mutex_unlock(&S.mu);
    break;
  }
  if (posted) {
    w->next = S.flight;
    S.flight = w;
    return;
  }
  pthread_mutex_lock(&S.mu);
  if (w->kind == K_FINALIZE) S.finalized = 1;
  complete_locked(w, ok);
  pthread_mutex_unlock(&S.mu);
  mt_dist_work_release(w);
}

static void *thread_main(void *arg) {
  (void)arg;
  prctl(PR_SET_TIMERSLACK, 1000UL); /* its naps of 50 us are 50 us, not 100 */
  thread_init();
  if (S.init_state != 1) return NULL;
  int idle = 0;
  for (;;) {
    pthread_mutex_lock(&S.mu);
    while ((!S.head || S.active) && !S.flight) pthread_cond_wait(&S.work_cv, &S.mu);
    mt_dist_work *w = S.active ? NULL : S.head; /* (a caller running a collective in place goes first) */
    if (w) {
      S.head = w->next;
      if (!S.head) S.tail = NULL;
      S.active = 1;
      pthread_mutex_unlock(&S.mu);
      int fin = w->kind == K_FINALIZE;
      run_one(w);
      pthread_mutex_lock(&S.mu);
      S.active = 0;
      pthread_mutex_unlock(&S.mu);
      idle = 0;
      if (fin) return NULL;
      continue;
    }
    pthread_mutex_unlock(&S.mu);
    /* only point-to-point works in flight: test them, spinning briefly, then napping up to 1 ms */
    if (progress_p2p() > 0) {
      idle = 0;
      continue;
    }
    idle++;
    if (idle < 64) {
      sched_yield();
      continue;
    }
    long ns = idle < 128 ? 50000L : idle < 256 ? 200000L : 1000000L;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += ns;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&S.mu);
    if (!S.head) pthread_cond_timedwait(&S.work_cv, &S.mu, &ts);
    pthread_mutex_unlock(&S.mu);
  }
}

/* At exit: a clean exit (status 0) finalizes MPI, as MPI requires; a failing one leaves MPI alone
 * (mpirun then ends the job; MPI_Finalize would wait for ranks that wait for this one). */
static void at_exit(int status, void *arg) {
  (void)arg;
  if (getpid() != S.pid) return; /* a forked child: the thread is not there */
  pthread_mutex_lock(&S.mu);
  int skip = S.init_state != 1 || S.finalized || S.broken[0] || status != 0;
  int busy = S.busy || S.head || S.flight;
  mt_dist_work *w = NULL;
  if (!skip) w = calloc(1, sizeof *w);
  if (w) {
    w->kind = K_FINALIZE;
    w->refs = 2;
    enqueue_locked(w, 1);
  }
  pthread_mutex_unlock(&S.mu);
  if (skip) {
    if (busy) {
      /* the thread is inside MPI: leave now rather than run the libraries' exit code beside it */
      fflush(NULL);
      _exit(status);
    }
    return;
  }
  if (!w) return;
  if (mt_dist_work_wait(w, S.exit_timeout) != MT_OK) {
    fprintf(stderr, "moontorch.distributed: MPI_Finalize did not finish within %g s at exit (%s); exiting without it\n",
            S.exit_timeout, mt_dist_last_error());
    fflush(NULL);
    _exit(status ? status : 1);
  }
  mt_dist_work_release(w);
}

/* ------------------------------------------------------------------------------------ API */
static int deadline_of(double timeout_s, struct timespec *ts) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  if (!(timeout_s < 1e9)) timeout_s = 1e9;
  if (timeout_s < 0) timeout_s = 0;
  time_t s = (time_t)timeout_s;
  ts->tv_sec += s;
  ts->tv_nsec += (long)((timeout_s - (double)s) * 1e9);
  if (ts->tv_nsec >= 1000000000L) ts->tv_sec++, ts->tv_nsec -= 1000000000L;
  return 0;
}

mt_status mt_dist_init(double timeout_s, mt_dist_group **world) {
  *world = NULL;
  pthread_mutex_lock(&S.mu);
  if (!S.started) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&S.work_cv, &ca);
    pthread_cond_init(&S.done_cv, &ca);
    pthread_condattr_destroy(&ca);
    S.pid = getpid();
    S.max_count = INT_MAX;
    S.chunk = INT_MAX;
    const char *mc = getenv("MOONTORCH_DIST_CHUNK");
    if (mc && atoll(mc) > 0 && atoll(mc) < INT_MAX) S.chunk = atoll(mc);
    S.exit_timeout = timeout_s;
    const char *sp = getenv("MOONTORCH_DIST_SPIN");
    S.spin = sp && sp[0] == '1';
    const char *so = getenv("MOONTORCH_DIST_SHM");
    S.shm_off = so && so[0] == '0';
    const char *sb = getenv("MOONTORCH_DIST_SHM_BYTES");
    S.shm_bytes = 0;
    if (sb && atoll(sb) >= 64 && atoll(sb) <= (1LL << 30)) S.shm_bytes = (size_t)atoll(sb);
    const char *pu = getenv("MOONTORCH_DIST_POLL_US");
    S.poll_s = 20e-6;
    if (pu && atof(pu) >= 0 && atof(pu) <= 1e6) S.poll_s = atof(pu) * 1e-6;
    const char *td = getenv("MOONTORCH_DIST_TEST_DIE");
    unsigned long long dr = 0;
    S.die_rank = -1;
    if (td && sscanf(td, "%d:%llu", &S.die_rank, &dr) == 2) S.die_round = dr;
    /* the thread takes no asynchronous signal (Ctrl-C stays the main thread's); MPI's own threads,
     * started from it, inherit that */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_t th;
    int e = pthread_create(&th, NULL, thread_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
      pthread_mutex_unlock(&S.mu);
      return fail(MT_ENOMEM, "distributed.init_process_group: cannot start the communication thread (%s)",
                  strerror(e));
    }
    pthread_detach(th);
    S.started = 1;
    on_exit(at_exit, NULL);
  }
  if (S.finalized) {
    pthread_mutex_unlock(&S.mu);
    return fail(MT_ESTATE, "distributed.init_process_group: MPI was finalized in this process; it cannot start again");
  }
  struct timespec ts;
  deadline_of(timeout_s, &ts);
  while (S.init_state == 0) {
    if (pthread_cond_timedwait(&S.done_cv, &S.mu, &ts) == ETIMEDOUT && S.init_state == 0) {
      pthread_mutex_unlock(&S.mu);
      return fail(MT_ESTATE, "distributed.init_process_group: MPI did not start within %g s", timeout_s);
    }
  }
  if (S.init_state == 2) {
    pthread_mutex_unlock(&S.mu);
    return fail(MT_ESTATE, "%s", S.init_error);
  }
  if (timeout_s > S.exit_timeout) S.exit_timeout = timeout_s;
  *world = mt_dist_group_retain(S.world);
  pthread_mutex_unlock(&S.mu);
  return MT_OK;
}

static mt_status check_group(const char *name, mt_dist_group *g) {
  if (!g) return fail(MT_EINVAL, "distributed.%s: no process group", name);
  if (g->rank < 0) return fail(MT_EINVAL, "distributed.%s: this process is not a member of the group", name);
  return MT_OK;
}

static mt_status check_buffer(const char *name, const void *p, int64_t count, int dtype, int per_call) {
  if (!item_size(dtype)) return fail(MT_EDTYPE, "distributed.%s: unsupported dtype %d", name, dtype);
  if (count < 0) return fail(MT_EINVAL, "distributed.%s: negative count %lld", name, (long long)count);
  if (count > 0 && !p) return fail(MT_EINVAL, "distributed.%s: no buffer", name);
  if (per_call && count > S.max_count)
    return fail(MT_ERANGE, "distributed.%s: %lld elements per rank; MPI takes at most %lld in one call", name,
                (long long)count, (long long)S.max_count);
  return MT_OK;
}

static mt_status check_rank(const char *name, const char *what, mt_dist_group *g, int r) {
  if (r < 0 || r >= g->size)
    return fail(MT_ERANGE, "distributed.%s: %s %d is not a rank of the group (its ranks are 0..%d)", name, what, r,
                g->size - 1);
  return MT_OK;
}

static mt_status submit_to(kind k, mt_dist_group *g, mt_dist_work *tmpl, mt_dist_work **out, int wake);
static mt_status submit(kind k, mt_dist_group *g, mt_dist_work *tmpl, mt_dist_work **out) {
  return submit_to(k, g, tmpl, out, 1);
}
/* queue a work (wake: and wake the thread for it) */
static mt_status submit_to(kind k, mt_dist_group *g, mt_dist_work *tmpl, mt_dist_work **out, int wake) {
  *out = NULL;
  mt_dist_work *w = calloc(1, sizeof *w);
  if (!w) {
    free(tmpl->counts);
    free(tmpl->bufs);
    free(tmpl->ranks);
    return fail(MT_ENOMEM, "distributed.%s: out of memory", kind_names[k]);
  }
  *w = *tmpl;
  w->kind = k;
  w->refs = 2;
  w->source = k == K_RECV && tmpl->peer >= 0 ? tmpl->peer : -1;
  w->state = MT_DIST_PENDING;
  pthread_mutex_lock(&S.mu);
  if (S.init_state != 1 || S.finalized) {
    pthread_mutex_unlock(&S.mu);
    free(w->counts);
    free(w->bufs);
    free(w->ranks);
    free(w);
    return fail(MT_ESTATE, "distributed.%s: MPI is not running (%s)", kind_names[k],
                S.finalized ? "finalized" : "init_process_group was not called");
  }
  if (S.broken[0]) {
    pthread_mutex_unlock(&S.mu);
    free(w->counts);
    free(w->bufs);
    free(w->ranks);
    free(w);
    return fail(MT_ESTATE, "distributed.%s: %s", kind_names[k], S.broken);
  }
  w->g = mt_dist_group_retain(g);
  enqueue_locked(w, wake);
  pthread_mutex_unlock(&S.mu);
  *out = w;
  return MT_OK;
}

mt_status mt_dist_new_group(mt_dist_group *parent, const int *ranks, int n, double timeout_s, mt_dist_group **out) {
  *out = NULL;
  if (check_group("new_group", parent)) return MT_EINVAL;
  if (n < 1 || n > parent->size)
    return fail(MT_EINVAL, "distributed.new_group: %d ranks for a group of %d", n, parent->size);
  mt_dist_work t = {0};
  t.ranks = malloc(sizeof(int) * (size_t)n);
  if (!t.ranks) return fail(MT_ENOMEM, "distributed.new_group: out of memory");
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0 || ranks[i] >= parent->size) {
      free(t.ranks);
      return fail(MT_ERANGE, "distributed.new_group: rank %d is not in the world of %d", ranks[i], parent->size);
    }
    for (int j = 0; j < i; j++)
      if (ranks[j] == ranks[i]) {
        free(t.ranks);
        return fail(MT_EINVAL, "distributed.new_group: rank %d is listed twice", ranks[i]);
      }
    t.ranks[i] = ranks[i];
  }
  t.nranks = n;
  mt_dist_work *w;
  MT_TRY(submit(K_SPLIT, parent, &t, &w));
  mt_status s = mt_dist_work_wait(w, timeout_s);
  if (s == MT_OK) {
    *out = w->result;
    w->result = NULL;
  }
  mt_dist_work_release(w);
  return s;
}

mt_status mt_dist_all_reduce(mt_dist_group *g, void *buf, int64_t count, int dtype, int op, mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("all_reduce", g));
  MT_TRY(check_buffer("all_reduce", buf, count, dtype, 0));
  MT_TRY(check_op("all_reduce", op, dtype));
  mt_dist_work t = {.buf = buf, .count = count, .dtype = dtype, .op = op};
  return submit(K_ALL_REDUCE, g, &t, out);
}

static mt_status coalesced(mt_dist_group *g, void *const *bufs, const int64_t *counts, int n, int dtype, int op,
                           mt_dist_work **out, int wake);
static mt_status run_here(mt_dist_work *w, double timeout_s, double *times);
mt_status mt_dist_all_reduce_coalesced(mt_dist_group *g, void *const *bufs, const int64_t *counts, int n, int dtype,
                                       int op, mt_dist_work **out) {
  return coalesced(g, bufs, counts, n, dtype, op, out, 1);
}
static mt_status coalesced(mt_dist_group *g, void *const *bufs, const int64_t *counts, int n, int dtype, int op,
                           mt_dist_work **out, int wake) {
  *out = NULL;
  MT_TRY(check_group("all_reduce_coalesced", g));
  if (n < 0) return fail(MT_EINVAL, "distributed.all_reduce_coalesced: %d tensors", n);
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    MT_TRY(check_buffer("all_reduce_coalesced", bufs[i], counts[i], dtype, 0));
    total += counts[i];
  }
  if (!item_size(dtype)) return fail(MT_EDTYPE, "distributed.all_reduce_coalesced: unsupported dtype %d", dtype);
  MT_TRY(check_op("all_reduce_coalesced", op, dtype));
  mt_dist_work t = {.count = total, .dtype = dtype, .op = op, .nbufs = n};
  t.bufs = malloc(sizeof(void *) * (size_t)(n ? n : 1));
  t.counts = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!t.bufs || !t.counts) {
    free(t.bufs);
    free(t.counts);
    return fail(MT_ENOMEM, "distributed.all_reduce_coalesced: out of memory");
  }
  for (int i = 0; i < n; i++) t.bufs[i] = bufs[i], t.counts[i] = counts[i];
  return submit_to(K_ALL_REDUCE, g, &t, out, wake); /* (which frees the arrays if it fails) */
}

mt_status mt_dist_all_reduce_coalesced_now(mt_dist_group *g, void *const *bufs, const int64_t *counts, int n,
                                           int dtype, int op, double timeout_s, double *times) {
  times[0] = times[1] = 0;
  mt_dist_work *w;
  MT_TRY(coalesced(g, bufs, counts, n, dtype, op, &w, 0));
  return run_here(w, timeout_s, times);
}

/* w, queued without waking the thread: taken back to run here when nothing else is queued or running
 * and it reduces on this node, else the thread is woken for it; waited for, released */
static mt_status run_here(mt_dist_work *w, double timeout_s, double *times) {
  mt_dist_group *g = w->g;
  int here = 0;
  pthread_mutex_lock(&S.mu);
  if (S.head == w && !S.active && (g->shm || g->size == 1) && shm_takes(w->dtype, w->op) && !S.broken[0]) {
    S.head = w->next;
    if (!S.head) S.tail = NULL;
    S.active = S.busy = 1;
    here = 1;
  } else {
    pthread_cond_signal(&S.work_cv);
  }
  pthread_mutex_unlock(&S.mu);
  mt_status st;
  if (here) {
    w->t_started = mt_dist_now();
    w->timeout = timeout_s;
    w->deadline = w->t_started + (timeout_s < 1e9 ? timeout_s : 1e9);
    int ok = g->size == 1 ? 1 : w->arena ? arena_all_reduce(w) : shm_all_reduce(w);
    pthread_mutex_lock(&S.mu);
    S.active = S.busy = 0;
    complete_locked(w, ok);
    if (S.head) pthread_cond_signal(&S.work_cv);
    pthread_mutex_unlock(&S.mu);
    mt_dist_work_release(w); /* the thread's reference, which it never took */
    st = ok ? MT_OK : fail(S.broken[0] ? MT_ESTATE : MT_EIO, "%s", w->msg);
  } else {
    st = mt_dist_work_wait(w, timeout_s);
  }
  times[0] = w->t_started;
  times[1] = w->t_finished;
  mt_dist_work_release(w);
  return st;
}

mt_status mt_dist_arena_new(mt_dist_group *g, int64_t bytes, double timeout_s, mt_dist_arena **out) {
  *out = NULL;
  MT_TRY(check_group("shared_arena", g));
  if (bytes < 0) return fail(MT_EINVAL, "distributed.shared_arena: %lld bytes", (long long)bytes);
  /* (the same answer on every member; arena_all_reduce names at most 64 members' spans) */
  if (g->size < 2 || g->size > 64 || !g->shm) return MT_OK;
  mt_dist_work t = {.count = bytes}, *w;
  MT_TRY(submit(K_ARENA, g, &t, &w));
  mt_status st = mt_dist_work_wait(w, timeout_s);
  if (st == MT_OK) {
    *out = w->arena; /* (the caller's reference now) */
    w->arena = NULL;
  }
  mt_dist_work_release(w);
  return st;
}

static mt_status arena_work(const char *name, mt_dist_arena *a, int64_t offset, int64_t count, int dtype, int op,
                            mt_dist_work **out, int wake) {
  *out = NULL;
  if (!a) return fail(MT_EINVAL, "distributed.%s: no shared memory", name);
  size_t isz = item_size(dtype);
  if (!isz) return fail(MT_EDTYPE, "distributed.%s: unsupported dtype %d", name, dtype);
  if (!shm_takes(dtype, op))
    return fail(MT_EINVAL, "distributed.%s: ReduceOp.%s on %s is not done in shared memory", name,
                op >= 0 && op <= MT_DIST_BXOR ? op_names[op] : "?", dtype_name(dtype));
  if (offset < 0 || count < 0 || (size_t)(offset + count) * isz > a->cap)
    return fail(MT_EINVAL, "distributed.%s: elements [%lld, %lld) lie outside the shared memory (%lld bytes)", name,
                (long long)offset, (long long)(offset + count), (long long)a->cap);
  mt_dist_work t = {.count = count, .dtype = dtype, .op = op, .offset = offset};
  t.arena = mt_dist_arena_retain(a);
  mt_status st = submit_to(K_ALL_REDUCE, a->g, &t, out, wake);
  if (st != MT_OK) mt_dist_arena_release(t.arena);
  return st;
}

mt_status mt_dist_arena_all_reduce(mt_dist_arena *a, int64_t offset, int64_t count, int dtype, int op,
                                   mt_dist_work **out) {
  return arena_work("all_reduce", a, offset, count, dtype, op, out, 1);
}

mt_status mt_dist_arena_all_reduce_now(mt_dist_arena *a, int64_t offset, int64_t count, int dtype, int op,
                                       double timeout_s, double *times) {
  times[0] = times[1] = 0;
  mt_dist_work *w;
  MT_TRY(arena_work("all_reduce", a, offset, count, dtype, op, &w, 0));
  return run_here(w, timeout_s, times);
}

mt_status mt_dist_broadcast(mt_dist_group *g, void *buf, int64_t count, int dtype, int root, mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("broadcast", g));
  MT_TRY(check_buffer("broadcast", buf, count, dtype, 0));
  MT_TRY(check_rank("broadcast", "src", g, root));
  mt_dist_work t = {.buf = buf, .count = count, .dtype = dtype, .root = root, .op = -1};
  return submit(K_BROADCAST, g, &t, out);
}

mt_status mt_dist_reduce(mt_dist_group *g, void *buf, int64_t count, int dtype, int op, int root,
                         mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("reduce", g));
  MT_TRY(check_buffer("reduce", buf, count, dtype, 0));
  MT_TRY(check_op("reduce", op, dtype));
  MT_TRY(check_rank("reduce", "dst", g, root));
  mt_dist_work t = {.buf = buf, .count = count, .dtype = dtype, .op = op, .root = root};
  return submit(K_REDUCE, g, &t, out);
}

mt_status mt_dist_all_gather(mt_dist_group *g, const void *send, void *recv, int64_t count, int dtype,
                             mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("all_gather", g));
  MT_TRY(check_buffer("all_gather", send, count, dtype, 1));
  MT_TRY(check_buffer("all_gather", recv, count, dtype, 1));
  mt_dist_work t = {.sbuf = send, .buf = recv, .count = count, .dtype = dtype, .op = -1};
  return submit(K_ALL_GATHER, g, &t, out);
}

mt_status mt_dist_gather(mt_dist_group *g, const void *send, void *recv, int64_t count, int dtype, int root,
                         mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("gather", g));
  MT_TRY(check_rank("gather", "dst", g, root));
  MT_TRY(check_buffer("gather", send, count, dtype, 1));
  if (g->rank == root) MT_TRY(check_buffer("gather", recv, count, dtype, 1));
  mt_dist_work t = {.sbuf = send, .buf = recv, .count = count, .dtype = dtype, .root = root, .op = -1};
  return submit(K_GATHER, g, &t, out);
}

mt_status mt_dist_scatter(mt_dist_group *g, const void *send, void *recv, int64_t count, int dtype, int root,
                          mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("scatter", g));
  MT_TRY(check_rank("scatter", "src", g, root));
  MT_TRY(check_buffer("scatter", recv, count, dtype, 1));
  if (g->rank == root) MT_TRY(check_buffer("scatter", send, count, dtype, 1));
  mt_dist_work t = {.sbuf = send, .buf = recv, .count = count, .dtype = dtype, .root = root, .op = -1};
  return submit(K_SCATTER, g, &t, out);
}

mt_status mt_dist_reduce_scatter(mt_dist_group *g, const void *send, void *recv, int64_t count, int dtype, int op,
                                 mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("reduce_scatter", g));
  MT_TRY(check_buffer("reduce_scatter", send, count, dtype, 1));
  MT_TRY(check_buffer("reduce_scatter", recv, count, dtype, 1));
  MT_TRY(check_op("reduce_scatter", op, dtype));
  mt_dist_work t = {.sbuf = send, .buf = recv, .count = count, .dtype = dtype, .op = op};
  return submit(K_REDUCE_SCATTER, g, &t, out);
}

mt_status mt_dist_all_to_all(mt_dist_group *g, const void *send, const int64_t *send_counts, void *recv,
                             const int64_t *recv_counts, int dtype, mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("all_to_all", g));
  if (!item_size(dtype)) return fail(MT_EDTYPE, "distributed.all_to_all: unsupported dtype %d", dtype);
  int n = g->size;
  int64_t st = 0, rt = 0;
  for (int r = 0; r < n; r++) {
    if (send_counts[r] < 0 || recv_counts[r] < 0)
      return fail(MT_EINVAL, "distributed.all_to_all: negative count for rank %d", r);
    st += send_counts[r];
    rt += recv_counts[r];
  }
  if (st > S.max_count || rt > S.max_count)
    return fail(MT_ERANGE, "distributed.all_to_all: %lld elements; MPI takes at most %lld in one call",
                (long long)(st > rt ? st : rt), (long long)S.max_count);
  if ((st > 0 && !send) || (rt > 0 && !recv)) return fail(MT_EINVAL, "distributed.all_to_all: no buffer");
  mt_dist_work t = {.sbuf = send, .buf = recv, .dtype = dtype, .op = -1};
  t.counts = malloc(sizeof(int64_t) * 2 * (size_t)n);
  if (!t.counts) return fail(MT_ENOMEM, "distributed.all_to_all: out of memory");
  memcpy(t.counts, send_counts, sizeof(int64_t) * (size_t)n);
  memcpy(t.counts + n, recv_counts, sizeof(int64_t) * (size_t)n);
  return submit(K_ALL_TO_ALL, g, &t, out);
}

mt_status mt_dist_barrier(mt_dist_group *g, mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("barrier", g));
  mt_dist_work t = {.op = -1};
  return submit(K_BARRIER, g, &t, out);
}

static mt_status check_tag(const char *name, int tag) {
  if (tag < 0 || tag > S.tag_ub)
    return fail(MT_ERANGE, "distributed.%s: tag %d is outside 0..%d (MPI_TAG_UB)", name, tag, S.tag_ub);
  return MT_OK;
}

mt_status mt_dist_send(mt_dist_group *g, const void *buf, int64_t count, int dtype, int dst, int tag,
                       mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("send", g));
  MT_TRY(check_buffer("send", buf, count, dtype, 0));
  MT_TRY(check_rank("send", "dst", g, dst));
  MT_TRY(check_tag("send", tag));
  mt_dist_work t = {.sbuf = buf, .count = count, .dtype = dtype, .peer = dst, .tag = tag, .op = -1};
  return submit(K_SEND, g, &t, out);
}

mt_status mt_dist_recv(mt_dist_group *g, void *buf, int64_t count, int dtype, int src, int tag,
                       mt_dist_work **out) {
  *out = NULL;
  MT_TRY(check_group("recv", g));
  MT_TRY(check_buffer("recv", buf, count, dtype, 0));
  if (src != -1) MT_TRY(check_rank("recv", "src", g, src));
  MT_TRY(check_tag("recv", tag));
  mt_dist_work t = {.buf = buf, .count = count, .dtype = dtype, .peer = src, .tag = tag, .op = -1};
  return submit(K_RECV, g, &t, out);
}

/* (under S.mu) the process's communication is broken: w timed out after timeout_s; the message
 * names the ranks that never reached the collective being waited for, or never finished theirs */
static void break_locked(mt_dist_work *w, double timeout_s) {
  if (S.broken[0]) return;
  const char *name = kind_names[w->kind];
  int rank = w->g ? w->g->rank : -1, size = w->g ? w->g->size : 0;
  char why[400] = "another rank died, hung or never called it";
  mt_dist_group *a = S.arriving;
  if (a) { /* the thread waits for ranks to reach a collective: name those that have not */
    char who[256] = "";
    int n = 0, len = 0;
    for (int i = 0; i < a->size && len < (int)sizeof who - 16; i++)
      if (!__atomic_load_n(&a->in[i], __ATOMIC_RELAXED))
        len += snprintf(who + len, sizeof who - (size_t)len, "%s%d", n++ ? ", " : "", a->world_ranks[i]);
    const char *what = a == w->g && S.arriving_kind == (int)w->kind ? "it" : kind_names[S.arriving_kind];
    if (n && S.arriving_phase)
      snprintf(why, sizeof why, "rank%s %s reached %s but never finished %s part (died or hung inside it)%s",
               n > 1 ? "s" : "", who, what, n > 1 ? "their" : "its", a->world ? "" : " (ranks of the world)");
    else if (n)
      snprintf(why, sizeof why, "rank%s %s never reached %s%s (died, hung or never called it)", n > 1 ? "s" : "",
               who, what, a->world ? "" : " (ranks of the world)");
  } else if (S.busy) {
    snprintf(why, sizeof why, "every rank reached the collective in progress, but it did not finish: a rank "
                              "died or hung inside it");
  }
  snprintf(S.broken, sizeof S.broken, "%s timed out after %g s on rank %d of %d: %s; this process can no longer communicate",
           name, timeout_s, rank, size, why);
}

mt_status mt_dist_work_wait(mt_dist_work *w, double timeout_s) {
  struct timespec ts;
  deadline_of(timeout_s, &ts);
  pthread_mutex_lock(&S.mu);
  while (w->state == MT_DIST_PENDING) {
    if (pthread_cond_timedwait(&S.done_cv, &S.mu, &ts) == ETIMEDOUT && w->state == MT_DIST_PENDING) {
      break_locked(w, timeout_s);
      pthread_mutex_unlock(&S.mu);
      return fail(MT_ESTATE, "distributed.%s: %s", kind_names[w->kind], S.broken);
    }
  }
  int failed = w->state == MT_DIST_FAILED;
  if (failed) snprintf(err_buf, sizeof err_buf, "%s", w->msg);
  pthread_mutex_unlock(&S.mu);
  return failed ? MT_EIO : MT_OK;
}

int mt_dist_work_state(const mt_dist_work *w) {
  pthread_mutex_lock(&S.mu);
  int s = w->state;
  pthread_mutex_unlock(&S.mu);
  return s;
}

const char *mt_dist_work_error(const mt_dist_work *w) { return w->state == MT_DIST_FAILED ? w->msg : ""; }
int mt_dist_work_source(const mt_dist_work *w) { return w->kind == K_RECV ? w->source : -1; }
double mt_dist_work_started(const mt_dist_work *w) { return w->t_started; }
double mt_dist_work_finished(const mt_dist_work *w) { return w->t_finished; }
