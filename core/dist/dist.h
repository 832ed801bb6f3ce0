/*
 * dist.h -- moontorch's process groups over MPI: the C API of libmoontorch_mpi.so.
 *
 * A library of its own beside libmoontorch (which never links MPI): it is built only where CMake
 * finds MPI, and the Lua module moontorch.distributed loads it when a script asks for the 'mpi'
 * backend. It moves bytes, not tensors: the Lua layer hands it contiguous buffers and keeps the
 * tensors that own them alive until each operation is done.
 *
 * One communication thread per process owns MPI (it calls MPI_Init_thread, every MPI call, and
 * MPI_Finalize at a clean exit). Every operation is queued to it and answered by a work handle;
 * collectives run in the order they were queued (one queue for every group, as NCCL's one stream),
 * point-to-point operations are posted at once and progressed while the thread is otherwise idle.
 * The caller waits with a deadline: an operation that a dead or hung peer keeps from finishing is
 * an error after the group's timeout, never a hang. After such a timeout the process's MPI state
 * is unknown (the thread may still be inside the collective), so every later operation fails at
 * once, naming the one that timed out ("broken").
 *
 * Ranks here are the group's own (0..size-1); dtypes are moontorch's (mt_dtype); counts are in
 * elements. The FFI declarations are generated from this file (`cc -E -P -DMT_FFI`), read after
 * moontorch.h's (mt_status comes from there).
 */
#ifndef MOONTORCH_DIST_H
#define MOONTORCH_DIST_H

#ifndef MT_FFI
#include "moontorch.h"
#include <stdint.h>
#endif

#if defined(MT_FFI)
#define MT_DIST_API
#else
#define MT_DIST_API __attribute__((visibility("default")))
#endif

/* ReduceOp, numbered as PyTorch's c10d ReduceOp. */
typedef enum mt_dist_op {
  MT_DIST_SUM = 0,
  MT_DIST_AVG = 1,
  MT_DIST_PRODUCT = 2,
  MT_DIST_MIN = 3,
  MT_DIST_MAX = 4,
  MT_DIST_BAND = 5,
  MT_DIST_BOR = 6,
  MT_DIST_BXOR = 7
} mt_dist_op;

/* The state of a work handle. */
typedef enum mt_dist_state { MT_DIST_PENDING = 0, MT_DIST_DONE = 1, MT_DIST_FAILED = 2 } mt_dist_state;

typedef struct mt_dist_group mt_dist_group;
typedef struct mt_dist_work mt_dist_work;
typedef struct mt_dist_arena mt_dist_arena;

/* The message of the last failure on this thread ("" if none). */
MT_DIST_API const char *mt_dist_last_error(void);
/* The MPI library's own name and version (the first line of MPI_Get_library_version). */
MT_DIST_API const char *mt_dist_mpi_version(void);

/* Starts the communication thread and MPI (once per process; later calls hand out the same world)
 * and gives the world group, a new reference. Waits at most timeout_s for MPI_Init_thread. */
MT_DIST_API mt_status mt_dist_init(double timeout_s, mt_dist_group **world);
/* 1 once MPI is up and not finalized. */
MT_DIST_API int mt_dist_is_initialized(void);
/* Why every operation now fails ("" while the process's communication is sound). */
MT_DIST_API const char *mt_dist_broken(void);

/* A group of the parent's ranks `ranks` (n of them, in that order: the new group's rank i is
 * ranks[i]). Collective over the whole parent, as MPI_Comm_split: every member of the parent calls
 * it with the same list; a process outside the list gets a group whose rank is -1. */
MT_DIST_API mt_status mt_dist_new_group(mt_dist_group *parent, const int *ranks, int n, double timeout_s,
                                        mt_dist_group **out);
MT_DIST_API int mt_dist_group_rank(const mt_dist_group *g); /* -1: not a member */
MT_DIST_API int mt_dist_group_size(const mt_dist_group *g);
/* Bytes per member and round of the group's on-node all_reduce (a shared segment: every member on
 * this node; float32/float64 SUM, AVG, PRODUCT and int32/int64 SUM, PRODUCT, MIN, MAX), 0 where its
 * all_reduce goes through MPI_Allreduce (ranks on several nodes, MOONTORCH_DIST_SHM=0, no segment). */
MT_DIST_API int64_t mt_dist_group_shared_bytes(const mt_dist_group *g);
MT_DIST_API mt_dist_group *mt_dist_group_retain(mt_dist_group *g);
MT_DIST_API void mt_dist_group_release(mt_dist_group *g);

/* Operations. Each queues its work and hands out a new reference to its handle; the buffers must
 * stay valid (and unread where written) until the work is no longer pending. In-place forms write
 * `buf`; `send`/`recv` pairs may not overlap. */
MT_DIST_API mt_status mt_dist_all_reduce(mt_dist_group *g, void *buf, int64_t count, int dtype, int op,
                                         mt_dist_work **out);
/* One all_reduce over n buffers of one dtype, as if they were one vector in that order (counts[i]
 * elements each; the arrays are copied): PyTorch's all_reduce_coalesced. */
MT_DIST_API mt_status mt_dist_all_reduce_coalesced(mt_dist_group *g, void *const *bufs, const int64_t *counts, int n,
                                                   int dtype, int op, mt_dist_work **out);
/* The same, waited for (at most timeout_s, as mt_dist_work_wait): run by the caller itself when
 * nothing else is queued and the group reduces on this node (no hand-over to the communication
 * thread and back). times[0], times[1]: when it started and finished (mt_dist_now's clock). */
MT_DIST_API mt_status mt_dist_all_reduce_coalesced_now(mt_dist_group *g, void *const *bufs, const int64_t *counts,
                                                       int n, int dtype, int op, double timeout_s, double *times);
/* Arenas: memory shared by the members of a group that runs on one node, `bytes` per member, that
 * each keeps tensors in (DistributedDataParallel's gradients). Making one is collective; *out is
 * NULL (and MT_OK) where the group cannot have one (members on several nodes, a group of one,
 * MOONTORCH_DIST_SHM=0, no room in /dev/shm): the caller keeps its own memory then. An all-reduce
 * over the same span [offset, offset + count) elements of every member's arena moves nothing in or
 * out: each member reduces its slice from every member's arena and writes the result into each.
 * The float32/64 SUM/AVG/PRODUCT and int32/64 SUM/PRODUCT/MIN/MAX of the on-node all_reduce. */
MT_DIST_API mt_status mt_dist_arena_new(mt_dist_group *g, int64_t bytes, double timeout_s, mt_dist_arena **out);
MT_DIST_API void *mt_dist_arena_data(mt_dist_arena *a); /* this member's bytes */
MT_DIST_API int64_t mt_dist_arena_bytes(const mt_dist_arena *a);
MT_DIST_API mt_dist_arena *mt_dist_arena_retain(mt_dist_arena *a);
MT_DIST_API void mt_dist_arena_release(mt_dist_arena *a);
/* mt_tensor_from_blob's deleter for a tensor over an arena that holds a reference to it (ctx) */
MT_DIST_API void mt_dist_arena_unref(void *ctx, void *data);
MT_DIST_API mt_status mt_dist_arena_all_reduce(mt_dist_arena *a, int64_t offset, int64_t count, int dtype, int op,
                                               mt_dist_work **out);
/* the same, run by the calling thread when nothing else is queued (else queued and waited for) */
MT_DIST_API mt_status mt_dist_arena_all_reduce_now(mt_dist_arena *a, int64_t offset, int64_t count, int dtype,
                                                   int op, double timeout_s, double *times);
MT_DIST_API mt_status mt_dist_broadcast(mt_dist_group *g, void *buf, int64_t count, int dtype, int root,
                                        mt_dist_work **out);
/* The reduction lands in root's buf; the others' buf is left as it was. */
MT_DIST_API mt_status mt_dist_reduce(mt_dist_group *g, void *buf, int64_t count, int dtype, int op, int root,
                                     mt_dist_work **out);
/* recv holds size * count elements, rank r's `send` at r * count. */
MT_DIST_API mt_status mt_dist_all_gather(mt_dist_group *g, const void *send, void *recv, int64_t count, int dtype,
                                         mt_dist_work **out);
/* recv (size * count elements) is read at root only (NULL elsewhere). */
MT_DIST_API mt_status mt_dist_gather(mt_dist_group *g, const void *send, void *recv, int64_t count, int dtype,
                                     int root, mt_dist_work **out);
/* send (size * count elements) is read at root only (NULL elsewhere). */
MT_DIST_API mt_status mt_dist_scatter(mt_dist_group *g, const void *send, void *recv, int64_t count, int dtype,
                                      int root, mt_dist_work **out);
/* send holds size * count elements; rank r receives the reduction of every rank's block r. */
MT_DIST_API mt_status mt_dist_reduce_scatter(mt_dist_group *g, const void *send, void *recv, int64_t count,
                                             int dtype, int op, mt_dist_work **out);
/* send_counts[r] elements go to rank r, recv_counts[r] come from it; both buffers are packed in
 * rank order. The counts are copied. */
MT_DIST_API mt_status mt_dist_all_to_all(mt_dist_group *g, const void *send, const int64_t *send_counts, void *recv,
                                         const int64_t *recv_counts, int dtype, mt_dist_work **out);
MT_DIST_API mt_status mt_dist_barrier(mt_dist_group *g, mt_dist_work **out);
MT_DIST_API mt_status mt_dist_send(mt_dist_group *g, const void *buf, int64_t count, int dtype, int dst, int tag,
                                   mt_dist_work **out);
/* src -1: from any rank (mt_dist_work_source tells which, once done). */
MT_DIST_API mt_status mt_dist_recv(mt_dist_group *g, void *buf, int64_t count, int dtype, int src, int tag,
                                   mt_dist_work **out);

/* Waits until the work is done (MT_OK), failed (MT_EIO, with its message) or timeout_s passed
 * (MT_ESTATE: the process's communication is then broken, see above). */
MT_DIST_API mt_status mt_dist_work_wait(mt_dist_work *w, double timeout_s);
MT_DIST_API int mt_dist_work_state(const mt_dist_work *w); /* mt_dist_state */
/* The failure's message ("" unless failed). */
MT_DIST_API const char *mt_dist_work_error(const mt_dist_work *w);
MT_DIST_API int mt_dist_work_source(const mt_dist_work *w); /* a recv's sender (group rank), else -1 */
/* When the thread started and finished the work (seconds of CLOCK_MONOTONIC; 0 while not yet). */
MT_DIST_API double mt_dist_work_started(const mt_dist_work *w);
MT_DIST_API double mt_dist_work_finished(const mt_dist_work *w);
MT_DIST_API void mt_dist_work_release(mt_dist_work *w);
/* Seconds of CLOCK_MONOTONIC, the clock of the work's times. */
MT_DIST_API double mt_dist_now(void);

#endif
