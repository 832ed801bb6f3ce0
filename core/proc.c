/* proc.c -- worker processes and their channels: the DataLoader's workers (lua/utils/data_workers.lua).
 *
 * mt_proc_fork forks the calling process. The child is a worker that goes on from the same point in its
 * own copy of the Lua state (so it sees the dataset as the parent had it), joined to the parent by a
 * Unix stream socket. The child
 * - dies with its parent (PR_SET_PDEATHSIG: SIGKILL, checked once after setting it, for a parent that
 *   died first), so that no worker outlives a parent that was killed;
 * - ignores SIGINT: Ctrl-C at a terminal reaches the whole process group, and the parent alone decides
 *   what follows (it shuts its workers down);
 * - closes the parent's ends of every other worker's channel, so that each side sees the other's end
 *   (its exit, its death) as end of file.
 * The thread pool and the BLAS prepare themselves for a fork (thread.c, blas.c). Calls come from one
 * thread (the Lua state's).
 *
 * A message is a frame: a header (magic, payload length, number of descriptors, flags) sent together
 * with the descriptors (SCM_RIGHTS), then the payload. A payload above MT_PROC_INLINE bytes travels
 * in a memory file of its own (its descriptor the frame's last), so that the bytes queued in a
 * socket stay small and neither side can block the other by writing while the other writes. Nothing
 * here raises SIGPIPE (MSG_NOSIGNAL): a closed channel is an error code. */
#define _GNU_SOURCE
#include "mt_internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OP "utils.data.DataLoader"
#define MAGIC 0x6d74776bu /* "mtwk" */
#define F_PAYLOAD_FD 1u
#define INLINE_MAX 4096

typedef struct {
  uint32_t magic;
  uint32_t nfds;
  uint32_t flags;
  uint32_t pad;
  uint64_t nbytes;
} frame;

/* the parent's ends of the channels this process opened (closed in a new child) */
static int *ends;
static int nends, cap_ends;

static void forget_end(int fd) {
  for (int i = 0; i < nends; i++)
    if (ends[i] == fd) {
      ends[i] = ends[--nends];
      return;
    }
}

mt_status mt_proc_fork(int *pid, int *fd) {
  if (nends == cap_ends) {
    int nc = cap_ends ? 2 * cap_ends : 16;
    int *ne = realloc(ends, (size_t)nc * sizeof *ne);
    if (!ne) return mt_error(MT_ENOMEM, OP ": out of memory");
    ends = ne;
    cap_ends = nc;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return mt_error(MT_EIO, OP ": cannot open a channel to a worker: %s", strerror(errno));
  pid_t parent = getpid();
  fflush(NULL); /* or what the parent has buffered is written twice */
  pid_t p = fork();
  if (p < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    return mt_error(MT_EIO, OP ": cannot start a worker process: %s", strerror(e));
  }
  if (p == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    signal(SIGINT, SIG_IGN);
    close(sv[0]);
    for (int i = 0; i < nends; i++) close(ends[i]);
    nends = 0;
    *pid = 0;
    *fd = sv[1];
    return MT_OK;
  }
  close(sv[1]);
  ends[nends++] = sv[0];
  *pid = p;
  *fd = sv[0];
  return MT_OK;
}

void mt_proc_close(int fd) {
  if (fd < 0) return;
  forget_end(fd);
  close(fd);
}

int mt_proc_self(void) { return (int)getpid(); }

double mt_proc_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return mt_number_out((double)ts.tv_sec + ts.tv_nsec * 1e-9);
}


void mt_proc_exit(int code) {
  fflush(NULL);
  _exit(code);
}

int mt_proc_kill(int pid, int hard) {
  if (pid <= 0) return -1;
  return kill(pid, hard ? SIGKILL : SIGTERM);
}

int mt_proc_wait(int pid, int block, int *code) {
  int st;
  pid_t r;
  do r = waitpid(pid, &st, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == 0) return 0;
  if (r < 0) return -1;
  if (WIFEXITED(st)) {
    *code = WEXITSTATUS(st);
    return 1;
  }
  if (WIFSIGNALED(st)) {
    *code = WTERMSIG(st);
    return 2;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void mt_proc_reap(const int *pids, int n, int grace_ms) {
  int left = 0;
  char *done = calloc((size_t)(n > 0 ? n : 1), 1);
  if (!done) grace_ms = 0;
  double until = now_s() + grace_ms * 1e-3;
  long pause_ns = 20000; /* an idle worker exits within microseconds of its channel closing: look often
                          * at first, then every millisecond */
  for (;;) {
    left = 0;
    for (int i = 0; i < n; i++) {
      if (done && done[i]) continue;
      pid_t r;
      do r = waitpid(pids[i], NULL, WNOHANG);
      while (r < 0 && errno == EINTR);
      if (r != 0) { /* reaped, or not ours (any more) */
        if (done) done[i] = 1;
      } else left++;
    }
    if (left == 0 || now_s() >= until) break;
    struct timespec ts = {0, pause_ns};
    nanosleep(&ts, NULL);
    if (pause_ns < 1000000) pause_ns *= 2;
  }
  for (int i = 0; i < n && left > 0; i++) {
    if (done && done[i]) continue;
    kill(pids[i], SIGKILL);
    while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {
    }
  }
  free(done);
}

const char *mt_proc_signal_name(int sig) {
  const char *s = strsignal(sig);
  return s ? s : "unknown signal";
}

int mt_proc_poll(const int *fds, int n, int timeout_ms) {
  struct pollfd pf[256];
  if (n < 0 || n > 256) return -3;
  for (int i = 0; i < n; i++) {
    pf[i].fd = fds[i];
    pf[i].events = POLLIN;
    pf[i].revents = 0;
  }
  int r = poll(n ? pf : NULL, (nfds_t)n, timeout_ms);
  if (r < 0) return errno == EINTR ? -2 : -3;
  if (r == 0) return -1;
  for (int i = 0; i < n; i++)
    if (pf[i].revents) return i;
  return -1;
}

static mt_status closed_error(void) { return mt_error(MT_EIO, OP ": the channel to the other process is closed"); }

static mt_status send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET) return closed_error();
      return mt_error(MT_EIO, OP ": cannot write to the channel: %s", strerror(errno));
    }
    p += w;
    n -= (size_t)w;
  }
  return MT_OK;
}

mt_status mt_proc_send(int fd, const void *data, size_t nbytes, const int *fds, int nfds) {
  if (nfds < 0 || nfds > MT_PROC_MAX_FDS) return mt_error(MT_EINVAL, OP ": %d descriptors in one message", nfds);
  int all[MT_PROC_MAX_FDS + 1];
  for (int i = 0; i < nfds; i++) all[i] = fds[i];
  frame h = {MAGIC, (uint32_t)nfds, 0, 0, nbytes};
  int payload_fd = -1;
  if (nbytes > INLINE_MAX) {
    payload_fd = memfd_create("moontorch-msg", MFD_CLOEXEC);
    if (payload_fd < 0) return mt_error(MT_EIO, OP ": cannot make a message file: %s", strerror(errno));
    const char *p = data;
    size_t left = nbytes;
    while (left > 0) {
      ssize_t w = write(payload_fd, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        int e = errno;
        close(payload_fd);
        return mt_error(e == ENOSPC || e == ENOMEM ? MT_ENOMEM : MT_EIO, OP ": cannot write a message file: %s",
                        strerror(e));
      }
      p += w;
      left -= (size_t)w;
    }
    all[nfds] = payload_fd;
    h.nfds = (uint32_t)nfds + 1;
    h.flags = F_PAYLOAD_FD;
  }
  struct iovec iov = {&h, sizeof h};
  union {
    char buf[CMSG_SPACE(sizeof(int) * (MT_PROC_MAX_FDS + 1))];
    struct cmsghdr align;
  } u;
  struct msghdr mh = {0};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (h.nfds > 0) {
    memset(&u, 0, sizeof u);
    mh.msg_control = u.buf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * h.nfds);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * h.nfds);
    memcpy(CMSG_DATA(c), all, sizeof(int) * h.nfds);
  }
  ssize_t w;
  do w = sendmsg(fd, &mh, MSG_NOSIGNAL);
  while (w < 0 && errno == EINTR);
  if (payload_fd >= 0) close(payload_fd);
  if (w < 0) {
    if (errno == EPIPE || errno == ECONNRESET) return closed_error();
    return mt_error(MT_EIO, OP ": cannot write to the channel: %s", strerror(errno));
  }
  /* a stream socket may take part of the header: the rest goes without descriptors */
  MT_TRY(send_all(fd, (const char *)&h + w, sizeof h - (size_t)w));
  if (payload_fd >= 0) return MT_OK;
  return send_all(fd, data, nbytes);
}

void mt_proc_msg_clear(mt_proc_msg *m) {
  free(m->data);
  m->data = NULL;
  m->nbytes = 0;
  for (int i = 0; i < m->nfds; i++)
    if (m->fds[i] >= 0) close(m->fds[i]);
  m->nfds = 0;
  m->closed = 0;
}

/* read exactly n bytes; *eof when the channel closed before the first one */
static mt_status recv_all(int fd, char *p, size_t n, int *eof) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, p + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == ECONNRESET) r = 0;
    if (r < 0) return mt_error(MT_EIO, OP ": cannot read from the channel: %s", strerror(errno));
    if (r == 0) {
      if (got == 0 && eof) {
        *eof = 1;
        return MT_OK;
      }
      return mt_error(MT_EIO, OP ": the channel closed in the middle of a message");
    }
    got += (size_t)r;
  }
  return MT_OK;
}

mt_status mt_proc_recv(int fd, mt_proc_msg *m) {
  mt_proc_msg_clear(m);
  frame h;
  struct iovec iov = {&h, sizeof h};
  union {
    char buf[CMSG_SPACE(sizeof(int) * (MT_PROC_MAX_FDS + 1))];
    struct cmsghdr align;
  } u;
  struct msghdr mh = {0};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = u.buf;
  mh.msg_controllen = sizeof u.buf;
  ssize_t r;
  do r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
  while (r < 0 && errno == EINTR);
  if (r < 0 && errno == ECONNRESET) r = 0;
  if (r < 0) return mt_error(MT_EIO, OP ": cannot read from the channel: %s", strerror(errno));
  if (r == 0) {
    m->closed = 1;
    return MT_OK;
  }
  int got[MT_PROC_MAX_FDS + 1];
  int ngot = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < k; i++) {
      int d;
      memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
      if (ngot < MT_PROC_MAX_FDS + 1) got[ngot++] = d;
      else close(d);
    }
  }
  /* from here on the descriptors belong to m (closed by mt_proc_msg_clear) */
  int payload_fd = -1;
  for (int i = 0; i < ngot; i++) m->fds[i] = got[i];
  m->nfds = ngot;
  if (mh.msg_flags & MSG_CTRUNC) return mt_error(MT_EIO, OP ": a message's descriptors were cut off");
  mt_status s = recv_all(fd, (char *)&h + r, sizeof h - (size_t)r, NULL);
  if (s != MT_OK) return s;
  if (h.magic != MAGIC || h.nfds != (uint32_t)ngot) return mt_error(MT_EIO, OP ": a damaged message on the channel");
  if (h.flags & F_PAYLOAD_FD) {
    if (ngot == 0) return mt_error(MT_EIO, OP ": a damaged message on the channel");
    payload_fd = m->fds[--m->nfds];
    m->fds[m->nfds] = -1;
  }
  if (h.nbytes > (uint64_t)SIZE_MAX - 1) {
    if (payload_fd >= 0) close(payload_fd);
    return mt_error(MT_ENOMEM, OP ": a message of %llu bytes", (unsigned long long)h.nbytes);
  }
  m->data = malloc(h.nbytes + 1);
  if (!m->data) {
    if (payload_fd >= 0) close(payload_fd);
    return mt_error(MT_ENOMEM, OP ": out of memory for a message of %llu bytes", (unsigned long long)h.nbytes);
  }
  m->nbytes = h.nbytes;
  if (payload_fd < 0) return recv_all(fd, m->data, h.nbytes, NULL);
  size_t off = 0;
  while (off < h.nbytes) {
    ssize_t k = pread(payload_fd, m->data + off, h.nbytes - off, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      close(payload_fd);
      return mt_error(MT_EIO, OP ": a message file is shorter than announced");
    }
    off += (size_t)k;
  }
  close(payload_fd);
  return MT_OK;
}
