/* The DataLoader workers' C side from C alone (core/shm.c, core/proc.c): a forked worker makes a
 * tensor in shared memory and packs two more into one block, sends the blocks' descriptors with a
 * payload larger than a socket's inline limit; the parent maps them, reads the worker's numbers
 * without a copy, and writes into one through the mapping; a worker that dies is seen as a closed
 * channel and reaped with its signal; a worker left running is killed and reaped by mt_proc_reap;
 * no block, tensor or descriptor is left. */
#include <moontorch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, #cond, mt_last_error()); \
      failures++;                                                                   \
    }                                                                               \
  } while (0)

#define BIG 100000 /* payload bytes: above the inline limit, so it travels in a memory file */

static void worker(int fd) {
  int64_t sz[2] = {3, 4};
  mt_tensor *a = NULL, *b = NULL, *c = NULL, *block = NULL;
  if (mt_shm_empty(sz, 2, MT_FLOAT32, &a)) mt_proc_exit(2);
  for (int i = 0; i < 12; i++) ((float *)a->_data)[i] = (float)i;
  int64_t s1 = 5;
  if (mt_tensor_full(&s1, 1, MT_INT64, 7, NULL, &b) || mt_tensor_full(&s1, 1, MT_FLOAT64, 0.5, NULL, &c)) mt_proc_exit(2);
  mt_tensor *ts[2] = {b, c};
  int64_t offs[2];
  if (mt_shm_pack(ts, 2, offs, &block)) mt_proc_exit(2);
  size_t na = 0, nb = 0;
  int64_t off = -1;
  int fds[2] = {mt_shm_fd_of(a, &na, &off), mt_shm_fd_of(block, &nb, NULL)};
  if (fds[0] < 0 || fds[1] < 0 || off != 0 || na != 48 || offs[1] != 64) mt_proc_exit(3);
  char *payload = malloc(BIG);
  memset(payload, 'x', BIG);
  memcpy(payload, &nb, sizeof nb);
  if (mt_proc_send(fd, payload, BIG, fds, 2)) mt_proc_exit(4);
  mt_shm_close_fds();
  if (mt_shm_fd_of(a, NULL, NULL) != -1) mt_proc_exit(5);
  /* wait for the parent's word, then end */
  mt_proc_msg m;
  memset(&m, 0, sizeof m);
  if (mt_proc_recv(fd, &m) || m.closed || m.nbytes != 2 || memcmp(m.data, "ok", 2) != 0) mt_proc_exit(6);
  mt_proc_msg_clear(&m);
  mt_proc_exit(0);
}

static void round_trip(void) {
  int pid = -1, fd = -1;
  CHECK(mt_proc_fork(&pid, &fd) == MT_OK);
  if (pid == 0) worker(fd);
  int ready = mt_proc_poll(&fd, 1, 10000);
  CHECK(ready == 0);
  mt_proc_msg m;
  memset(&m, 0, sizeof m);
  CHECK(mt_proc_recv(fd, &m) == MT_OK);
  CHECK(!m.closed && m.nbytes == BIG && m.nfds == 2);
  if (m.nfds != 2) return;
  size_t nb;
  memcpy(&nb, m.data, sizeof nb);
  CHECK(m.data[BIG - 1] == 'x');
  mt_shm_map *ma = NULL, *mb = NULL;
  CHECK(mt_shm_map_fd(m.fds[0], 48, &ma) == MT_OK);
  m.fds[0] = -1;
  CHECK(mt_shm_map_fd(m.fds[1], nb, &mb) == MT_OK);
  m.fds[1] = -1;
  mt_proc_msg_clear(&m);
  int64_t sz[2] = {3, 4}, st[2] = {4, 1}, s5 = 5, one = 1;
  mt_tensor *a = NULL, *b = NULL, *c = NULL, *bad = NULL;
  CHECK(mt_shm_map_tensor(ma, 0, MT_FLOAT32, sz, st, 2, &a) == MT_OK);
  CHECK(mt_shm_map_tensor(mb, 0, MT_INT64, &s5, &one, 1, &b) == MT_OK);
  CHECK(mt_shm_map_tensor(mb, 64, MT_FLOAT64, &s5, &one, 1, &c) == MT_OK);
  /* a tensor reaching past its block is refused */
  CHECK(mt_shm_map_tensor(ma, 8, MT_FLOAT32, sz, st, 2, &bad) == MT_ERANGE);
  mt_shm_map_release(ma);
  mt_shm_map_release(mb);
  CHECK(mt_shm_live() == 2);
  if (a && b && c) {
    CHECK(((float *)a->_data)[11] == 11.0f);
    CHECK(((int64_t *)b->_data)[4] == 7);
    CHECK(((double *)c->_data)[0] == 0.5);
    ((float *)a->_data)[0] = 42.0f; /* an ordinary, writable tensor */
    CHECK(((float *)a->_data)[0] == 42.0f);
  }
  mt_tensor_release(a);
  mt_tensor_release(b);
  CHECK(mt_shm_live() == 1); /* c holds the packed block */
  mt_tensor_release(c);
  CHECK(mt_shm_live() == 0);
  CHECK(mt_proc_send(fd, "ok", 2, NULL, 0) == MT_OK);
  int code = -1;
  CHECK(mt_proc_wait(pid, 1, &code) == 1 && code == 0);
  mt_proc_close(fd);
}

/* a worker killed by a signal: its channel reads as closed, waitpid names the signal */
static void killed(void) {
  int pid = -1, fd = -1;
  CHECK(mt_proc_fork(&pid, &fd) == MT_OK);
  if (pid == 0) {
    raise(SIGKILL);
    mt_proc_exit(0);
  }
  CHECK(mt_proc_poll(&fd, 1, 10000) == 0);
  mt_proc_msg m;
  memset(&m, 0, sizeof m);
  CHECK(mt_proc_recv(fd, &m) == MT_OK && m.closed == 1);
  int sig = 0;
  CHECK(mt_proc_wait(pid, 1, &sig) == 2 && sig == SIGKILL);
  CHECK(strcmp(mt_proc_signal_name(sig), "Killed") == 0);
  CHECK(mt_proc_send(fd, "x", 1, NULL, 0) == MT_EIO); /* no SIGPIPE: an error code */
  mt_proc_close(fd);
}

/* a worker that does not exit is killed and reaped after the grace period */
static void reaped(void) {
  int pid = -1, fd = -1;
  CHECK(mt_proc_fork(&pid, &fd) == MT_OK);
  if (pid == 0) {
    for (;;) pause();
  }
  CHECK(mt_proc_poll(&fd, 1, 50) == -1); /* nothing to read: the timeout */
  mt_proc_close(fd);
  double t0 = mt_proc_clock();
  mt_proc_reap(&pid, 1, 100);
  double dt = mt_proc_clock() - t0;
  CHECK(dt >= 0.09 && dt < 5);
  int code;
  CHECK(mt_proc_wait(pid, 0, &code) == -1); /* gone: not our child any more */
}

int main(void) {
  mt_shm_use_memfd(1);
  round_trip();
  mt_shm_use_memfd(0);
  round_trip();
  mt_shm_use_memfd(1);
  killed();
  reaped();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
