/* runtime_emu.cc -- the CPU emulator of a CUDA device: the runtime shim of runtime.h (memory,
 * copies, streams, events) and the execution of kernels compiled with emu.h. It exists so that
 * every kernel of the CUDA backend runs in CI, where there is no GPU, from the same source as on
 * the GPU.
 *
 * What it keeps of a GPU, so that the bugs a GPU would show show here too:
 * - Device memory is host memory that the host cannot touch: each allocation is its own mapping,
 *   inaccessible (PROT_NONE) except while the emulated device itself works (a kernel, a copy, a
 *   fill). A host read of a device pointer faults, as it does with a GPU. (Off with
 *   MOONTORCH_CUDA_EMULATE_STRICT=0.)
 * - Streams are queues. Work runs when something waits for it (a stream, event or device
 *   synchronisation, a copy to pageable host memory, freeing memory) or when a queue grows long,
 *   so work that is not ordered by a stream or an event really runs out of order: a missing
 *   synchronisation, or memory reused across streams without an event, gives wrong values here.
 * - A kernel runs block by block; each thread of a block is a fiber (its own small stack, our own
 *   context switch on x86-64, ucontext elsewhere), so __syncthreads and the warp intrinsics suspend
 *   a thread until the others arrive. A block whose threads wait at different barriers is a
 *   failed launch (reported at the next synchronisation), not a hang.
 * - Devices: MOONTORCH_CUDA_EMULATE_DEVICES of them (2 by default, so cuda:1 and copies between
 *   devices are exercised), each with MOONTORCH_CUDA_EMULATE_MEMORY bytes (8 GiB by default; the
 *   allocator's out-of-memory path is tested with a small one, mt_gpu_emu_configure).
 * One OS thread runs the emulated device's work at a time (the caller's, at a synchronisation). */
#include "emu.h"
#include "runtime.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old);
extern "C" void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define MT_EMU_ASAN 1
#endif

/* the emulator's error codes (error_string) */
enum {
  E_OK = 0,
  E_INVALID = 1,
  E_NOMEM = 2,
  E_NOT_READY = 3,
  E_LAUNCH = 4,
  E_DEVICE = 5,
  E_CONFIG = 6,
};

namespace mt_emu {
thread_local thread_view *current;

namespace {

/* ---------------------------------------------------------------- fibers */
#if defined(__x86_64__)
/* mt_emu_switch(save, next): saves the callee-saved registers, the SSE and x87 control words and
 * the stack pointer into *save, and resumes the context whose stack pointer is next. A new fiber's
 * stack is laid out so that the switch "returns" into mt_emu_trampoline with the fiber in r12. */
extern "C" void mt_emu_switch(void **save, void *next) __attribute__((visibility("hidden")));
extern "C" void mt_emu_fiber_main(void *fiber) __attribute__((visibility("hidden"), noreturn, used));
asm(R"(
    .text
    .globl mt_emu_switch
    .hidden mt_emu_switch
    .type mt_emu_switch,@function
mt_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size mt_emu_switch,.-mt_emu_switch
    .globl mt_emu_trampoline
    .hidden mt_emu_trampoline
    .type mt_emu_trampoline,@function
mt_emu_trampoline:
    movq %r12, %rdi
    call mt_emu_fiber_main
    ud2
    .size mt_emu_trampoline,.-mt_emu_trampoline
    .section .note.GNU-stack,"",@progbits
    .text
)");
extern "C" void mt_emu_trampoline(void) __attribute__((visibility("hidden")));
#endif

enum fiber_state { F_NEW, F_READY, F_WAIT_BLOCK, F_WAIT_WARP, F_DONE };

struct fiber {
  thread_view view;
  fiber_state state;
  unsigned linear; /* the thread's linear index in its block */
  char *stack;     /* its stack's lowest usable byte (NULL: none yet) */
#if defined(__x86_64__)
  void *sp;
#else
  ucontext_t uc;
#endif
#ifdef MT_EMU_ASAN
  void *fake_stack;
#endif
};

const size_t STACK_BYTES =
#ifdef MT_EMU_ASAN
    (size_t)1 << 20;
#else
    (size_t)256 << 10;
#endif
const size_t GUARD_BYTES = 4096;

/* what runs the blocks of one launch on this OS thread */
struct block_runner {
  void (*run)(void *);
  void *task;
  std::vector<fiber> fibers;
  std::vector<char *> free_stacks;
  std::vector<uint64_t> slots; /* 32 per warp: the warp exchange */
  unsigned nthreads = 0;
  fiber *running = nullptr;
#if defined(__x86_64__)
  void *sched_sp = nullptr;
#else
  ucontext_t sched_uc;
#endif
#ifdef MT_EMU_ASAN
  void *sched_fake = nullptr;
  const void *sched_bottom = nullptr;
  size_t sched_size = 0;
#endif
  uint32_t mxcsr_fpucw[2] = {0, 0};
  ~block_runner() {
    for (char *s : free_stacks) munmap(s - GUARD_BYTES, STACK_BYTES + GUARD_BYTES);
  }
};
/* the block runner (its stacks and fibers, kept for the next launch): one, as the emulated device's work
 * runs under the emulator's lock, one thread at a time; global, so that it stays reachable (LeakSanitizer) */
block_runner *runner;

char *new_stack(block_runner *r) {
  if (!r->free_stacks.empty()) {
    char *s = r->free_stacks.back();
    r->free_stacks.pop_back();
#ifdef MT_EMU_ASAN
    __asan_unpoison_memory_region(s, STACK_BYTES);
#endif
    return s;
  }
  void *m = mmap(nullptr, STACK_BYTES + GUARD_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return nullptr;
  mprotect(m, GUARD_BYTES, PROT_NONE); /* an overflow faults instead of writing over a neighbour */
  return (char *)m + GUARD_BYTES;
}

/* the fiber side of a switch back to the scheduler */
void yield_to_scheduler(fiber *f) {
  block_runner *r = runner;
#ifdef MT_EMU_ASAN
  __sanitizer_start_switch_fiber(f->state == F_DONE ? nullptr : &f->fake_stack, r->sched_bottom, r->sched_size);
#endif
#if defined(__x86_64__)
  mt_emu_switch(&f->sp, r->sched_sp);
#else
  swapcontext(&f->uc, &r->sched_uc);
#endif
#ifdef MT_EMU_ASAN
  __sanitizer_finish_switch_fiber(f->fake_stack, &r->sched_bottom, &r->sched_size);
#endif
}

} // namespace

extern "C" void mt_emu_fiber_main(void *p) {
  fiber *f = static_cast<fiber *>(p);
  block_runner *r = runner;
#ifdef MT_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &r->sched_bottom, &r->sched_size);
#endif
  r->run(r->task);
  f->state = F_DONE;
  yield_to_scheduler(f);
  __builtin_unreachable();
}

namespace {
#if !defined(__x86_64__)
void uc_entry(unsigned hi, unsigned lo) {
  mt_emu_fiber_main((void *)(((uintptr_t)hi << 32) | (uintptr_t)lo));
}
#endif

/* resume (or start) fiber f from the scheduler; false when no stack could be had */
bool resume(block_runner *r, fiber *f) {
  if (f->state == F_NEW) {
    f->stack = new_stack(r);
    if (!f->stack) return false;
#if defined(__x86_64__)
    uintptr_t top = ((uintptr_t)f->stack + STACK_BYTES) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 80);
    uint32_t *cw = (uint32_t *)sp;
    cw[0] = r->mxcsr_fpucw[0];
    cw[1] = r->mxcsr_fpucw[1];
    sp[1] = 0;                           /* r15 */
    sp[2] = 0;                           /* r14 */
    sp[3] = 0;                           /* r13 */
    sp[4] = (uint64_t)(uintptr_t)f;      /* r12: the fiber */
    sp[5] = 0;                           /* rbx */
    sp[6] = 0;                           /* rbp */
    sp[7] = (uint64_t)(uintptr_t)&mt_emu_trampoline;
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = STACK_BYTES;
    f->uc.uc_link = nullptr;
    uintptr_t p = (uintptr_t)f;
    makecontext(&f->uc, (void (*)())uc_entry, 2, (unsigned)(p >> 32), (unsigned)p);
#endif
#ifdef MT_EMU_ASAN
    f->fake_stack = nullptr;
#endif
  }
  f->state = F_READY;
  r->running = f;
  current = &f->view;
#ifdef MT_EMU_ASAN
  __sanitizer_start_switch_fiber(&r->sched_fake, f->stack, STACK_BYTES);
#endif
#if defined(__x86_64__)
  mt_emu_switch(&r->sched_sp, f->sp);
#else
  swapcontext(&r->sched_uc, &f->uc);
#endif
#ifdef MT_EMU_ASAN
  __sanitizer_finish_switch_fiber(r->sched_fake, nullptr, nullptr);
#endif
  r->running = nullptr;
  current = nullptr;
  if (f->state == F_DONE) {
    r->free_stacks.push_back(f->stack);
    f->stack = nullptr;
  }
  return true;
}

/* One block: every thread a fiber, run in passes; between passes the barriers every live thread
 * (of the block; of a warp) has reached open. false: the threads wait at barriers that cannot
 * open (or no stack could be had). */
bool run_block(block_runner *r, dim3 grid, dim3 block, uint3 bidx, unsigned char *smem) {
  unsigned n = r->nthreads;
  for (unsigned t = 0; t < n; t++) {
    fiber &f = r->fibers[t];
    f.state = F_NEW;
    f.linear = t;
    f.stack = nullptr;
    f.view.thread_idx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    f.view.block_idx = bidx;
    f.view.block_dim = block;
    f.view.grid_dim = grid;
    f.view.dynamic_smem = smem;
  }
  unsigned nwarps = (n + 31) / 32;
  for (;;) {
    bool ran = false;
    for (unsigned t = 0; t < n; t++) {
      fiber &f = r->fibers[t];
      if (f.state == F_NEW || f.state == F_READY) {
        if (!resume(r, &f)) return false;
        ran = true;
      }
    }
    unsigned live = 0, at_block = 0;
    for (unsigned t = 0; t < n; t++) {
      fiber_state s = r->fibers[t].state;
      if (s != F_DONE) live++;
      if (s == F_WAIT_BLOCK) at_block++;
    }
    if (live == 0) return true;
    bool opened = false;
    if (at_block == live) {
      for (unsigned t = 0; t < n; t++)
        if (r->fibers[t].state == F_WAIT_BLOCK) r->fibers[t].state = F_READY;
      opened = true;
    } else {
      for (unsigned w = 0; w < nwarps; w++) {
        unsigned lo = w * 32, hi = std::min(n, lo + 32), wl = 0, ww = 0;
        for (unsigned t = lo; t < hi; t++) {
          fiber_state s = r->fibers[t].state;
          if (s != F_DONE) wl++;
          if (s == F_WAIT_WARP) ww++;
        }
        if (wl && ww == wl) {
          for (unsigned t = lo; t < hi; t++)
            if (r->fibers[t].state == F_WAIT_WARP) r->fibers[t].state = F_READY;
          opened = true;
        }
      }
    }
    if (!opened && !ran) {
      /* deadlock: leave the fibers where they are; their stacks are abandoned to the pool */
      for (unsigned t = 0; t < n; t++) {
        fiber &f = r->fibers[t];
        if (f.stack) r->free_stacks.push_back(f.stack);
        f.stack = nullptr;
        f.state = F_DONE;
      }
      return false;
    }
  }
}

fiber *self() { return runner->running; }

void wait_at(fiber_state s) {
  fiber *f = self();
  f->state = s;
  yield_to_scheduler(f);
}

} // namespace

void syncthreads() { wait_at(F_WAIT_BLOCK); }
void syncwarp() { wait_at(F_WAIT_WARP); }
unsigned lane_id() { return self()->linear & 31; }

uint64_t warp_exchange(uint64_t bits, int src_lane) {
  fiber *f = self();
  unsigned warp = f->linear / 32, lane = f->linear & 31;
  uint64_t *slots = &runner->slots[warp * 32];
  slots[lane] = bits;
  wait_at(F_WAIT_WARP);
  unsigned src = (unsigned)src_lane;
  /* a lane past the block's last thread reads its own value */
  uint64_t v = (src < 32 && warp * 32 + src < runner->nthreads) ? slots[src] : bits;
  wait_at(F_WAIT_WARP);
  return v;
}

unsigned warp_ballot(int predicate) {
  fiber *f = self();
  unsigned warp = f->linear / 32, lane = f->linear & 31;
  uint64_t *slots = &runner->slots[warp * 32];
  slots[lane] = predicate != 0;
  wait_at(F_WAIT_WARP);
  unsigned mask = 0;
  for (unsigned l = 0; l < 32 && warp * 32 + l < runner->nthreads; l++)
    if (runner->fibers[warp * 32 + l].state != F_DONE && slots[l]) mask |= 1u << l;
  wait_at(F_WAIT_WARP);
  return mask;
}

/* ---------------------------------------------------------------- the device: memory, queues */
namespace {

struct stream;
struct task {
  std::function<void()> fn;
};

struct stream {
  int device;
  std::deque<task> queue;
  uint64_t enqueued = 0, executed = 0;
};

struct event {
  stream *s = nullptr;
  uint64_t seq = 0;
  bool timing = false;
  double time_ms = 0;
  bool time_set = false;
};

struct segment {
  size_t bytes;
  int device;
  bool pinned; /* page-locked host memory: never protected */
};

struct emu_device {
  stream def;
  size_t used = 0;
};

struct emulator {
  std::recursive_mutex mu;
  bool configured = false;
  int ndevices = 2;
  size_t memory = (size_t)8 << 30;
  bool strict = true;
  std::vector<emu_device *> devices;
  std::vector<stream *> streams; /* created streams */
  std::map<uintptr_t, segment> segments; /* device memory and pinned host memory, by start */
  int open_depth = 0;
  int pending_error = E_OK;
  uint32_t mxcsr_fpucw[2];
};

emulator &emu() {
  static emulator *e = new emulator; /* never destroyed: work may still reference it at exit */
  return *e;
}
thread_local int current_device = 0;

void configure_locked(emulator &e) {
  if (e.configured) return;
  e.configured = true;
  const char *s = getenv("MOONTORCH_CUDA_EMULATE_DEVICES");
  if (s && *s) {
    long v = strtol(s, nullptr, 10);
    if (v >= 1 && v <= 16) e.ndevices = (int)v;
  }
  s = getenv("MOONTORCH_CUDA_EMULATE_MEMORY");
  if (s && *s) {
    unsigned long long v = strtoull(s, nullptr, 10);
    if (v >= 4096) e.memory = (size_t)v;
  }
  s = getenv("MOONTORCH_CUDA_EMULATE_STRICT");
  if (s && *s == '0') e.strict = false;
  for (int i = 0; i < e.ndevices; i++) {
    emu_device *d = new emu_device;
    d->def.device = i;
    e.devices.push_back(d);
  }
}

emulator &ready() {
  emulator &e = emu();
  if (!e.configured) {
    std::lock_guard<std::recursive_mutex> g(e.mu);
    configure_locked(e);
  }
  return e;
}

/* device memory is reachable while the emulated device works */
void protect_all(emulator &e, int prot) {
  if (!e.strict) return;
  for (auto &kv : e.segments)
    if (!kv.second.pinned) mprotect((void *)kv.first, kv.second.bytes, prot);
}
struct device_open {
  emulator &e;
  explicit device_open(emulator &e_) : e(e_) {
    if (e.open_depth++ == 0) protect_all(e, PROT_READ | PROT_WRITE);
  }
  ~device_open() {
    if (--e.open_depth == 0) protect_all(e, PROT_NONE);
  }
};

stream *stream_of(emulator &e, void *s) {
  if (s) return static_cast<stream *>(s);
  int d = current_device;
  if (d < 0 || d >= (int)e.devices.size()) d = 0;
  return &e.devices[d]->def;
}

/* run stream s's work up to its upto-th enqueued item */
void flush(emulator &e, stream *s, uint64_t upto) {
  if (s->executed >= upto) return;
  device_open open(e);
  while (s->executed < upto && !s->queue.empty()) {
    task t = std::move(s->queue.front());
    s->queue.pop_front();
    t.fn();
    s->executed++;
  }
}
void flush_all(emulator &e) {
  for (emu_device *d : e.devices) flush(e, &d->def, d->def.enqueued);
  for (stream *s : e.streams) flush(e, s, s->enqueued);
}

const size_t QUEUE_LIMIT = 1024;
void enqueue(emulator &e, stream *s, std::function<void()> fn) {
  if (s->queue.size() >= QUEUE_LIMIT) flush(e, s, s->executed + QUEUE_LIMIT / 2); /* a full launch queue */
  s->queue.push_back(task{std::move(fn)});
  s->enqueued++;
}

/* the segment holding [p, p + n), or NULL */
const segment *find(emulator &e, const void *p, size_t n, uintptr_t *start) {
  uintptr_t a = (uintptr_t)p;
  auto it = e.segments.upper_bound(a);
  if (it == e.segments.begin()) return nullptr;
  --it;
  if (a < it->first || a + n > it->first + it->second.bytes) return nullptr;
  if (start) *start = it->first;
  return &it->second;
}

double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* one launch, run when its stream reaches it */
struct launch {
  dim3 grid, block;
  size_t smem;
  void (*run)(void *);
  void (*destroy)(void *);
  void *task;
};

void run_launch(emulator &e, const launch &l) {
  block_runner *r = runner;
  if (!r) r = runner = new block_runner;
  r->run = l.run;
  r->task = l.task;
  r->nthreads = l.block.x * l.block.y * l.block.z;
  if (r->fibers.size() < r->nthreads) r->fibers.resize(r->nthreads);
  r->slots.assign(((r->nthreads + 31) / 32) * 32, 0);
  r->mxcsr_fpucw[0] = e.mxcsr_fpucw[0];
  r->mxcsr_fpucw[1] = e.mxcsr_fpucw[1];
  std::vector<unsigned char> smem(l.smem ? l.smem : 1);
  for (unsigned z = 0; z < l.grid.z; z++)
    for (unsigned y = 0; y < l.grid.y; y++)
      for (unsigned x = 0; x < l.grid.x; x++)
        if (!run_block(r, l.grid, l.block, uint3{x, y, z}, smem.data())) {
          if (e.pending_error == E_OK) e.pending_error = E_LAUNCH;
          return;
        }
}

} // namespace

void submit(dim3 grid, dim3 block, size_t smem, void *stream_, void (*run)(void *), void (*destroy)(void *),
            void *task) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
      grid.z > 65535 || smem > ((size_t)227 << 10)) {
    destroy(task);
    if (e.pending_error == E_OK) e.pending_error = E_CONFIG;
    return;
  }
  launch l{grid, block, smem, run, destroy, task};
  emulator *ep = &e;
  enqueue(e, stream_of(e, stream_), [ep, l]() {
    run_launch(*ep, l);
    l.destroy(l.task);
  });
}

} // namespace mt_emu

/* ---------------------------------------------------------------- the runtime table */
using namespace mt_emu;

namespace {

int emu_device_count(int *count, const char **why) {
  emulator &e = ready();
  *count = e.ndevices;
  if (why) *why = nullptr;
  return E_OK;
}

int emu_set_device(int index) {
  emulator &e = ready();
  if (index < 0 || index >= e.ndevices) return E_DEVICE;
  current_device = index;
  return E_OK;
}

int emu_properties(int index, mt_gpu_props *p) {
  emulator &e = ready();
  if (index < 0 || index >= e.ndevices) return E_DEVICE;
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "moontorch CPU emulator");
  p->major = 9;
  p->minor = 0;
  p->multiprocessors = 2; /* few: the grid-stride loops go round more than once */
  p->max_threads_per_block = 1024;
  p->warp_size = 32;
  p->shared_per_block = (size_t)48 << 10;
  p->total_memory = e.memory;
  return E_OK;
}

int emu_mem_info(size_t *free_bytes, size_t *total) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  size_t used = e.devices[current_device]->used;
  *free_bytes = e.memory - std::min(used, e.memory);
  *total = e.memory;
  return E_OK;
}

int emu_malloc(void **p, size_t n) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  *p = nullptr;
  if (n == 0) return E_OK;
  size_t bytes = (n + 4095) & ~(size_t)4095;
  emu_device *d = e.devices[current_device];
  if (d->used + bytes > e.memory) return E_NOMEM;
  int prot = (e.strict && e.open_depth == 0) ? PROT_NONE : PROT_READ | PROT_WRITE;
  void *m = mmap(nullptr, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return E_NOMEM;
  e.segments[(uintptr_t)m] = segment{bytes, current_device, false};
  d->used += bytes;
  *p = m;
  return E_OK;
}

int emu_free(void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  if (!p) return E_OK;
  auto it = e.segments.find((uintptr_t)p);
  if (it == e.segments.end() || it->second.pinned) return E_INVALID;
  flush_all(e); /* as cudaFree, wait for the device's work first */
  e.devices[it->second.device]->used -= it->second.bytes;
  munmap(p, it->second.bytes);
  e.segments.erase(it);
  return E_OK;
}

int emu_host_alloc(void **p, size_t n) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  size_t bytes = ((n ? n : 1) + 4095) & ~(size_t)4095;
  void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return E_NOMEM;
  e.segments[(uintptr_t)m] = segment{bytes, -1, true};
  *p = m;
  return E_OK;
}

int emu_host_free(void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  if (!p) return E_OK;
  auto it = e.segments.find((uintptr_t)p);
  if (it == e.segments.end() || !it->second.pinned) return E_INVALID;
  flush_all(e);
  munmap(p, it->second.bytes);
  e.segments.erase(it);
  return E_OK;
}

int emu_memcpy_async(void *dst, const void *src, size_t n, int kind, void *stream_) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  if (n == 0) return E_OK;
  const segment *sd = find(e, dst, n, nullptr), *ss = find(e, src, n, nullptr);
  bool dst_dev = sd && !sd->pinned, src_dev = ss && !ss->pinned;
  bool dst_pinned = sd && sd->pinned, src_pinned = ss && ss->pinned;
  /* the direction must match where the pointers are */
  if ((kind == MT_GPU_H2D && (!dst_dev || src_dev)) || (kind == MT_GPU_D2H && (!src_dev || dst_dev)) ||
      (kind == MT_GPU_D2D && (!src_dev || !dst_dev)) || (kind == MT_GPU_H2H && (src_dev || dst_dev)))
    return E_INVALID;
  stream *s = stream_of(e, stream_);
  bool async = kind == MT_GPU_D2D || (kind == MT_GPU_H2D && src_pinned) || (kind == MT_GPU_D2H && dst_pinned) ||
               (kind == MT_GPU_H2H && src_pinned && dst_pinned);
  if (async) {
    enqueue(e, s, [dst, src, n]() { memcpy(dst, src, n); });
    return E_OK;
  }
  flush(e, s, s->enqueued); /* pageable host memory: the copy is done when the call returns */
  device_open open(e);
  memcpy(dst, src, n);
  return E_OK;
}

int emu_memset_async(void *p, int value, size_t n, void *stream_) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  if (n == 0) return E_OK;
  const segment *sp = find(e, p, n, nullptr);
  if (!sp || sp->pinned) return E_INVALID;
  enqueue(e, stream_of(e, stream_), [p, value, n]() { memset(p, value, n); });
  return E_OK;
}

int emu_stream_create(void **out, int priority) {
  (void)priority;
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  stream *s = new stream;
  s->device = current_device;
  e.streams.push_back(s);
  *out = s;
  return E_OK;
}

int emu_stream_destroy(void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  if (!p) return E_INVALID;
  stream *s = static_cast<stream *>(p);
  auto it = std::find(e.streams.begin(), e.streams.end(), s);
  if (it == e.streams.end()) return E_INVALID;
  flush(e, s, s->enqueued); /* its work still runs, as with cudaStreamDestroy */
  e.streams.erase(it);
  delete s;
  return E_OK;
}

int take_error(emulator &e) {
  int err = e.pending_error;
  e.pending_error = E_OK;
  return err;
}

int emu_stream_synchronize(void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  stream *s = stream_of(e, p);
  flush(e, s, s->enqueued);
  return take_error(e);
}

int emu_stream_query(void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  stream *s = stream_of(e, p);
  return s->executed >= s->enqueued ? E_OK : E_NOT_READY;
}

int emu_event_create(void **out, int timing) {
  event *ev = new event;
  ev->timing = timing != 0;
  *out = ev;
  return E_OK;
}

int emu_event_destroy(void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  event *ev = static_cast<event *>(p);
  if (!ev) return E_INVALID;
  if (ev->s) flush(e, ev->s, ev->seq); /* its time marker holds a pointer to it */
  delete ev;
  return E_OK;
}

int emu_event_record(void *p, void *stream_) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  event *ev = static_cast<event *>(p);
  if (!ev) return E_INVALID;
  stream *s = stream_of(e, stream_);
  if (ev->s && ev->s != s) flush(e, ev->s, ev->seq); /* a pending marker of the earlier record */
  ev->s = s;
  ev->time_set = false;
  if (ev->timing) {
    enqueue(e, s, [ev]() {
      ev->time_ms = now_ms();
      ev->time_set = true;
    });
  }
  ev->seq = s->enqueued;
  return E_OK;
}

int emu_event_synchronize(void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  event *ev = static_cast<event *>(p);
  if (!ev) return E_INVALID;
  if (ev->s) flush(e, ev->s, ev->seq);
  return take_error(e);
}

int emu_event_query(void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  event *ev = static_cast<event *>(p);
  if (!ev) return E_INVALID;
  return !ev->s || ev->s->executed >= ev->seq ? E_OK : E_NOT_READY;
}

int emu_event_elapsed_ms(float *ms, void *a, void *b) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  event *x = static_cast<event *>(a), *y = static_cast<event *>(b);
  if (!x || !y || !x->timing || !y->timing || !x->s || !y->s) return E_INVALID;
  if (x->s->executed < x->seq || y->s->executed < y->seq) return E_NOT_READY;
  *ms = (float)(y->time_ms - x->time_ms);
  return E_OK;
}

int emu_stream_wait_event(void *stream_, void *p) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  event *ev = static_cast<event *>(p);
  if (!ev) return E_INVALID;
  if (!ev->s) return E_OK; /* never recorded: nothing to wait for */
  stream *other = ev->s;
  uint64_t seq = ev->seq;
  emulator *ep = &e;
  enqueue(e, stream_of(e, stream_), [ep, other, seq]() { flush(*ep, other, seq); });
  return E_OK;
}

int emu_device_synchronize(void) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  flush_all(e);
  return take_error(e);
}

int emu_last_error(void) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  return take_error(e);
}

const char *emu_error_string(int code) {
  switch (code) {
  case E_OK: return "no error";
  case E_INVALID: return "invalid argument";
  case E_NOMEM: return "out of memory";
  case E_NOT_READY: return "device not ready";
  case E_LAUNCH: return "unspecified launch failure (the emulated block's threads waited at different barriers)";
  case E_DEVICE: return "invalid device ordinal";
  case E_CONFIG: return "invalid configuration argument";
  default: return "unknown error";
  }
}

__attribute__((constructor)) void capture_control_words() {
  emulator &e = emu();
#if defined(__x86_64__)
  uint32_t m = 0;
  uint16_t c = 0;
  __asm__ volatile("stmxcsr %0" : "=m"(m));
  __asm__ volatile("fnstcw %0" : "=m"(c));
  e.mxcsr_fpucw[0] = m;
  e.mxcsr_fpucw[1] = c;
#else
  (void)e;
#endif
}

} // namespace

extern "C" {
const mt_gpu_runtime mt_gpu_emu_runtime = {
    "emulator",
    emu_device_count,
    emu_set_device,
    emu_properties,
    emu_mem_info,
    emu_malloc,
    emu_free,
    emu_host_alloc,
    emu_host_free,
    emu_memcpy_async,
    emu_memset_async,
    emu_stream_create,
    emu_stream_destroy,
    emu_stream_synchronize,
    emu_stream_query,
    emu_stream_wait_event,
    emu_event_create,
    emu_event_destroy,
    emu_event_record,
    emu_event_synchronize,
    emu_event_query,
    emu_event_elapsed_ms,
    emu_device_synchronize,
    emu_last_error,
    emu_error_string,
    E_NOT_READY,
};

/* Tests only: the emulator's memory per device (0: keep) and whether device memory is protected
 * from the host (-1: keep); before the first allocation. */
__attribute__((visibility("hidden"))) void mt_gpu_emu_configure(size_t memory, int strict) {
  emulator &e = ready();
  std::lock_guard<std::recursive_mutex> g(e.mu);
  if (memory) e.memory = memory;
  if (strict >= 0) e.strict = strict != 0;
}
}
