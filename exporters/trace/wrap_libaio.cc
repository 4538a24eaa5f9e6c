// Linux native AIO through libaio (libaio.so.1: io_submit, io_getevents,
// io_pgetevents, io_cancel, io_destroy): fio's usual engine, databases'
// asynchronous I/O. libaio makes the system calls itself, so no POSIX
// wrapper sees the bytes: the op is taken from the control block (struct
// iocb) at io_submit and recorded when the program reaps its completion
// (io_getevents, io_pgetevents, a successful io_cancel), with the bytes the
// event's res reports (a negative res: the op failed with -res), the offset
// and size of the iocb, and the time from the submission to the reaping.
//
// A bounded table of the ops in flight (open addressing keyed by the iocb's
// address, deletion by backward shift so it never degrades): ops on
// descriptors that are not traced files are not entered; a submission that
// finds it full is counted in tracer.dropped, as are the ops still in flight
// when the program destroys their context. The system calls made without
// libaio (syscall(SYS_io_submit, ...)) are not seen.
//
// The ABI is the kernel's (linux/aio_abi.h, which libaio's struct iocb
// mirrors): no libaio header is needed to build the tracer.
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include <atomic>

#include "exporters/trace/tracer_internal.h"

using namespace iosonar::trace;  // NOLINT

namespace {

// libaio's struct iocb on LP64 (= the kernel's struct iocb).
struct LaIocb {
  uint64_t data;
  uint32_t key, rw_flags;
  int16_t opcode, reqprio;
  int32_t fd;
  uint64_t buf;  // or const struct iovec* (PREADV, PWRITEV)
  uint64_t nbytes;  // or the iovec count
  int64_t offset;
  int64_t pad;
  uint32_t flags, resfd;
};
static_assert(sizeof(LaIocb) == 64, "struct iocb");
struct LaEvent {
  uint64_t data;
  uint64_t obj;  // struct iocb*
  int64_t res, res2;
};
static_assert(sizeof(LaEvent) == 32, "struct io_event");
enum : int16_t { kCmdPread = 0, kCmdPwrite = 1, kCmdFsync = 2, kCmdFdsync = 3, kCmdPreadv = 7, kCmdPwritev = 8 };

using Ctx = void*;  // io_context_t
using SubmitFn = int (*)(Ctx, long, LaIocb**);
using GeteventsFn = int (*)(Ctx, long, long, LaEvent*, struct timespec*);
using PgeteventsFn = int (*)(Ctx, long, long, LaEvent*, struct timespec*, void*);
using CancelFn = int (*)(Ctx, LaIocb*, LaEvent*);
using DestroyFn = int (*)(Ctx);
SubmitFn real_io_submit = nullptr;
GeteventsFn real_io_getevents = nullptr;
PgeteventsFn real_io_pgetevents = nullptr;
CancelFn real_io_cancel = nullptr;
DestroyFn real_io_destroy = nullptr;

struct InFlight {
  uintptr_t cb;  // 0: empty
  uintptr_t ctx;
  uint64_t t0, file_id;
  int64_t offset, size;
  int32_t fd;
  Op op;
};
constexpr uint32_t kSlots = 8192;  // a power of two
InFlight g_table[kSlots];          // BSS: touched only by programs that use libaio
uint32_t g_used = 0;
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
// A signal handler that reaps or submits while its thread holds the table:
// its call passes through unrecorded rather than wait for itself.
__thread int t_in __attribute__((tls_model("initial-exec"))) = 0;

// The child of a fork has none of the parent's contexts; the lock may have
// been held by a thread that did not come along.
void AfterForkChild() {
  if (g_used) memset(static_cast<void*>(g_table), 0, sizeof g_table);  // untouched pages stay untouched
  g_used = 0;
  g_lock.clear(std::memory_order_relaxed);
}

struct Lock {
  Lock() {
    ++t_in;
    while (g_lock.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~Lock() {
    g_lock.clear(std::memory_order_release);
    --t_in;
  }
};

inline uint32_t Home(uintptr_t k) { return static_cast<uint32_t>((k >> 6) * 0x9E3779B97F4A7C15ull >> 40) & (kSlots - 1); }

// Under the lock.
bool Insert(const InFlight& e) {
  if (g_used >= kSlots - kSlots / 8) return false;  // keep probes short
  for (uint32_t i = Home(e.cb);; i = (i + 1) & (kSlots - 1)) {
    InFlight& s = g_table[i];
    if (s.cb == 0 || s.cb == e.cb) {  // the same block again: it was never reaped, the new op replaces it
      g_used += s.cb == 0;
      s = e;
      return true;
    }
  }
}
void EraseAt(uint32_t i) {  // backward-shift deletion: no tombstones
  --g_used;
  for (uint32_t j = (i + 1) & (kSlots - 1);; j = (j + 1) & (kSlots - 1)) {
    if (g_table[j].cb == 0) break;
    const uint32_t h = Home(g_table[j].cb);
    // Move j back to i unless its home lies cyclically in (i, j].
    if (((j - h) & (kSlots - 1)) >= ((j - i) & (kSlots - 1))) {
      g_table[i] = g_table[j];
      i = j;
    }
  }
  g_table[i].cb = 0;
}
bool Take(uintptr_t cb, InFlight* out) {
  for (uint32_t i = Home(cb);; i = (i + 1) & (kSlots - 1)) {
    if (g_table[i].cb == 0) return false;
    if (g_table[i].cb == cb) {
      *out = g_table[i];
      EraseAt(i);
      return true;
    }
  }
}

int64_t IovBytes(uint64_t iov, uint64_t n) {
  const auto* v = reinterpret_cast<const struct iovec*>(iov);
  int64_t t = 0;
  for (uint64_t i = 0; v && i < n && i < 1024; ++i) t += static_cast<int64_t>(v[i].iov_len);
  return t;
}

// Before the real io_submit (the kernel may complete an op, and another
// thread reap it, before io_submit returns). Returns the blocks entered.
long Enter(Ctx ctx, long nr, LaIocb** ios, uint64_t t0) {
  if (nr <= 0 || !ios || t_in) return 0;
  InFlight e[64];
  long n = 0, entered = 0, dropped = 0;
  auto flush = [&] {
    Lock lock;
    for (long i = 0; i < n; ++i) (Insert(e[i]) ? entered : dropped) += 1;
    n = 0;
  };
  for (long i = 0; i < nr; ++i) {
    const LaIocb* cb = ios[i];
    if (!cb) continue;
    Op op;
    int64_t size = 0;
    switch (cb->opcode) {
      case kCmdPread: op = kOpRead, size = static_cast<int64_t>(cb->nbytes); break;
      case kCmdPwrite: op = kOpWrite, size = static_cast<int64_t>(cb->nbytes); break;
      case kCmdPreadv: op = kOpRead, size = IovBytes(cb->buf, cb->nbytes); break;
      case kCmdPwritev: op = kOpWrite, size = IovBytes(cb->buf, cb->nbytes); break;
      case kCmdFsync: case kCmdFdsync: op = kOpSync; break;
      default: continue;  // poll, noop: no file I/O
    }
    ext::Fd f;
    if (!ext::TracedFd(cb->fd, &f)) continue;
    e[n++] = InFlight{reinterpret_cast<uintptr_t>(cb), reinterpret_cast<uintptr_t>(ctx), t0, f.file_id,
                      op == kOpSync ? -1 : cb->offset, size, cb->fd, op};
    if (n == 64) flush();
  }
  if (n) flush();
  if (dropped) ext::CountDropped(static_cast<uint64_t>(dropped));
  return entered;
}

// The blocks [from, nr) were not queued (io_submit took fewer, or failed).
void Unenter(LaIocb** ios, long from, long nr) {
  Lock lock;
  InFlight gone;
  for (long i = from < 0 ? 0 : from; i < nr; ++i)
    if (ios[i]) Take(reinterpret_cast<uintptr_t>(ios[i]), &gone);
}

void Reaped(const LaEvent* ev, long n) {
  if (n <= 0 || !ev || t_in) return;
  const bool on = ext::Enter();  // off: the events' ops are taken and counted dropped
  const uint64_t t1 = ext::Ticks();
  Slot* s = nullptr;
  bool no_slot = false;
  for (long i = 0; i < n;) {
    InFlight got[64];
    long k = 0, at = i;
    {
      Lock lock;
      for (; i < n && k < 64; ++i)
        if (Take(ev[i].obj, &got[k])) ++k;
    }
    if (k && on && !s && !no_slot) {  // only events of traced files' ops take the thread's slot
      s = ext::Slotted();
      if (!s) {  // (Slotted counted one of them)
        no_slot = true;
        --k;
      }
    }
    if (!s) {
      if (k) ext::CountDropped(static_cast<uint64_t>(k));
      continue;
    }
    for (long j = 0, q = 0; q < k; ++j) {  // match each taken op with its event, in order
      const LaEvent& x = ev[at + j];
      if (x.obj != got[q].cb) continue;
      const InFlight& p = got[q++];
      const int64_t res = x.res;
      RawOp o{p.op, kPosix, p.fd, p.offset, p.size, res < 0 ? -1 : res, res < 0 ? static_cast<int32_t>(-res) : 0, p.file_id,
              p.t0, t1 > p.t0 ? t1 : p.t0};
      if (p.op == kOpSync) o.result = 0;
      ext::Record(s, o);
    }
  }
}

template <typename Call>
int SubmitOp(Ctx ctx, long nr, LaIocb** ios, Call&& call) {
  if (!ext::Enter()) return call();  // inside the tracer, or tracing is off
  const int e0 = errno;
  const long entered = Enter(ctx, nr, ios, ext::Ticks());
  errno = e0;
  const int r = call();
  if (entered && r < nr) {
    const int e = errno;
    Unenter(ios, r, nr);
    errno = e;
  }
  return r;
}

}  // namespace

// Resolved, and the fork handler registered, from the tracer's constructor.
void iosonar::trace::ext::ResolveLibaio() {
  Resolve("io_submit", &real_io_submit);
  Resolve("io_getevents", &real_io_getevents);
  Resolve("io_pgetevents", &real_io_pgetevents);
  Resolve("io_cancel", &real_io_cancel);
  Resolve("io_destroy", &real_io_destroy);
  pthread_atfork(nullptr, nullptr, AfterForkChild);
}

IOSONAR_EXPORT int io_submit(Ctx ctx, long nr, LaIocb** ios) {
  return SubmitOp(ctx, nr, ios, [&] { return ext::Real("io_submit", &real_io_submit)(ctx, nr, ios); });
}
IOSONAR_EXPORT int io_getevents(Ctx ctx, long min_nr, long nr, LaEvent* ev, struct timespec* timeout) {
  const int r = ext::Real("io_getevents", &real_io_getevents)(ctx, min_nr, nr, ev, timeout);
  if (r > 0) {
    const int e = errno;
    Reaped(ev, r);
    errno = e;
  }
  return r;
}
IOSONAR_EXPORT int io_pgetevents(Ctx ctx, long min_nr, long nr, LaEvent* ev, struct timespec* timeout, void* sigmask) {
  const int r = ext::Real("io_pgetevents", &real_io_pgetevents)(ctx, min_nr, nr, ev, timeout, sigmask);
  if (r > 0) {
    const int e = errno;
    Reaped(ev, r);
    errno = e;
  }
  return r;
}
// A cancelled op's event comes back here, not from io_getevents.
IOSONAR_EXPORT int io_cancel(Ctx ctx, LaIocb* cb, LaEvent* ev) {
  const int r = ext::Real("io_cancel", &real_io_cancel)(ctx, cb, ev);
  if (r == 0 && ev) {
    const int e = errno;
    LaEvent x = *ev;
    x.obj = reinterpret_cast<uintptr_t>(cb);
    Reaped(&x, 1);
    errno = e;
  }
  return r;
}
// Ops still in flight on a destroyed context are never reaped: counted.
IOSONAR_EXPORT int io_destroy(Ctx ctx) {
  if (!t_in) {
    const int e = errno;
    uint64_t gone = 0;
    {
      Lock lock;
      for (uint32_t i = 0; i < kSlots;) {
        if (g_table[i].cb && g_table[i].ctx == reinterpret_cast<uintptr_t>(ctx)) {
          EraseAt(i);  // another entry may have moved into i
          ++gone;
        } else {
          ++i;
        }
      }
    }
    if (gone) ext::CountDropped(gone);
    errno = e;
  }
  return ext::Real("io_destroy", &real_io_destroy)(ctx);
}
